#include "core/envelope.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/host.h"
#include "core/jsonio.h"
#include "core/text.h"
#include "core/version.h"

static bool label_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
}

bool fb_label_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n >= FB_LABEL_MAX || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!label_char(name[i]))
            return false;
    return true;
}

void fb_label_escape(const char *name, char *out, size_t len)
{
    /* "." and ".." would name the results directory or its parent. */
    bool dots = strcmp(name, ".") == 0 || strcmp(name, "..") == 0;
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)name; *p && len > 0; p++) {
        bool plain = label_char((char)*p) && !(dots && *p == '.');
        size_t need = plain ? 1 : 3;
        if (o + need >= len)
            break; /* whole sequences only: a cut escape would read as another name */
        if (plain)
            out[o++] = (char)*p;
        else
            o += (size_t)snprintf(out + o, len - o, "%%%02X", *p);
    }
    if (len > 0)
        out[o] = '\0';
    if (o == 0 && len > 0)
        snprintf(out, len, "%s", "unnamed");
}

void fb_cluster_label(const char *given, const char *fallback, char *out, size_t len)
{
    const char *name = given;
    if (name == NULL || name[0] == '\0')
        name = getenv("FABRIC_CLUSTER");
    if (name == NULL || name[0] == '\0')
        name = fallback;
    fb_label_escape(name, out, len);
}

enum fb_status fb_cluster_label_checked(const char *given, const char *fallback, char *out, size_t len,
                                        struct fb_err *err)
{
    const char *env = getenv("FABRIC_CLUSTER");
    if (env != NULL && env[0] == '\0')
        env = NULL; /* exported empty: as if unset */
    const char *name = given != NULL ? given : env;
    const char *source = given != NULL ? "--cluster" : "FABRIC_CLUSTER=";
    if (name == NULL) {
        fb_cluster_label(NULL, fallback, out, len);
        return FB_OK;
    }
    if (!fb_label_ok(name)) {
        char shown[96];
        fb_ascii_printable(name, shown, sizeof shown);
        return fb_fail(err, FB_ERR_USAGE,
                       "%s%s'%s': a cluster label names a results directory: use 1 to %d of the letters, digits, "
                       "'.', '_' and '-', not '.' or '..'",
                       source, given != NULL ? " " : "", shown, FB_LABEL_MAX - 1);
    }
    snprintf(out, len, "%s", name);
    return FB_OK;
}

void fb_label_safe(const char *name, char *out, size_t len)
{
    size_t i = 0;
    for (; name[i] && i + 1 < len; i++)
        out[i] = label_char(name[i]) ? name[i] : '_';
    out[i] = '\0';
}

enum fb_status fb_results_path(const struct fb_results_name *n, char *path, size_t len,
                               struct fb_err *err)
{
    if (n->json_path != NULL) {
        if (snprintf(path, len, "%s", n->json_path) >= (int)len)
            return fb_fail(err, FB_ERR_USAGE, "-J path too long");
        return FB_OK;
    }
    char stamp[32];
    fb_utc_stamp(stamp, sizeof stamp);
    if (snprintf(path, len, "%s/%s/%s-%s.json", n->dir, n->cluster, stamp, n->what) >= (int)len)
        return fb_fail(err, FB_ERR_USAGE, "results path too long; use a shorter --results-dir");
    return FB_OK;
}

json_object *fb_envelope_new(const struct fb_envelope_info *info)
{
    char now[32], host[FB_HOST_MAX], cluster[128];
    fb_utc_iso(now, sizeof now);
    fb_hostname(host, sizeof host);
    const char *described = info->host && info->host[0] ? info->host : host;
    fb_cluster_label(info->cluster, described, cluster, sizeof cluster);

    json_object *d = json_object_new_object();
    json_object_object_add(d, "schema", json_object_new_string(FB_SCHEMA_NAME));
    json_object_object_add(d, "schema_version", json_object_new_int(FB_SCHEMA_VERSION));
    json_object_object_add(d, "kind", json_object_new_string(info->kind));
    json_object_object_add(d, "complete", json_object_new_boolean(!info->running));
    json_object_object_add(d, "fault", NULL);
    json_object *t = json_object_new_object();
    json_object_object_add(t, "name", json_object_new_string(info->tool));
    json_object_object_add(t, "version", json_object_new_string(FB_VERSION));
    json_object_object_add(t, "invoked_as", json_object_new_string(info->invoked_as));
    json_object_object_add(d, "tool", t);
    json_object_object_add(d, "cluster", json_object_new_string(cluster));
    json_object_object_add(d, "start_time", json_object_new_string(now));
    json_object_object_add(d, "end_time", info->running ? NULL : json_object_new_string(now));
    json_object *hosts = json_object_new_array();
    json_object_array_add(hosts, json_object_new_string(described));
    json_object_object_add(d, "hosts", hosts);
    json_object_object_add(d, "env", fb_env_capture());
    json_object_object_add(d, "warnings", json_object_new_array());
    return d;
}

void fb_envelope_warn(json_object *doc, const char *message)
{
    json_object *w = NULL;
    if (json_object_object_get_ex(doc, "warnings", &w))
        json_object_array_add(w, json_object_new_string(message));
}

void fb_envelope_fault(json_object *doc, enum fb_status code, const char *message, int rank,
                       const char *host)
{
    json_object *f = json_object_new_object();
    json_object_object_add(f, "status", json_object_new_string(fb_status_name(code)));
    json_object_object_add(f, "exit_code", json_object_new_int((int)code));
    json_object_object_add(f, "message", json_object_new_string(message));
    json_object_object_add(f, "rank", rank >= 0 ? json_object_new_int(rank) : NULL);
    json_object_object_add(f, "host", host ? json_object_new_string(host) : NULL);
    json_object_object_add(doc, "fault", f);
}

void fb_envelope_finish(json_object *doc, int complete)
{
    json_object_object_add(doc, "complete", json_object_new_boolean(complete));
    if (complete) {
        char now[32];
        fb_utc_iso(now, sizeof now);
        json_object_object_add(doc, "end_time", json_object_new_string(now));
    }
}

enum fb_status fb_envelope_write(json_object *doc, const char *path, struct fb_err *err)
{
    char now[32];
    fb_utc_iso(now, sizeof now);
    json_object_object_add(doc, "end_time", json_object_new_string(now));
    if (strcmp(path, "-") != 0)
        return fb_json_write_atomic(path, doc, err);
    return fb_json_print(stdout, doc, FB_JSON_FILE_FLAGS, err);
}
