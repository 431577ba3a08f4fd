#include "core/envelope.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/host.h"
#include "core/jsonio.h"
#include "core/version.h"

void fb_cluster_label(const char *given, const char *fallback, char *out, size_t len)
{
    const char *name = given;
    if (name == NULL || name[0] == '\0')
        name = getenv("FABRIC_CLUSTER");
    if (name == NULL || name[0] == '\0')
        name = fallback;
    fb_label_safe(name, out, len);
}

void fb_label_safe(const char *name, char *out, size_t len)
{
    size_t i = 0;
    for (; name[i] && i + 1 < len; i++) {
        char c = name[i];
        int safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                   c == '-' || c == '_' || c == '.';
        out[i] = safe ? c : '_';
    }
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
    const char *text = json_object_to_json_string_ext(
        doc, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);
    if (fputs(text, stdout) == EOF || fputc('\n', stdout) == EOF || fflush(stdout) != 0)
        return fb_fail(err, FB_ERR_IO, "cannot write JSON to standard output");
    return FB_OK;
}
