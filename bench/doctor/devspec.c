#include "doctor/devspec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static enum fb_status parse_port(const char *text, size_t len, const char *var,
                                 const char *whole, int *port, struct fb_err *err)
{
    char buf[16];
    if (len == 0 || len >= sizeof buf)
        return fb_fail(err, FB_ERR_USAGE, "%s='%s': port after ':' must be a number such as 1",
                       var, whole);
    memcpy(buf, text, len);
    buf[len] = '\0';
    char *end = NULL;
    errno = 0;
    long v = strtol(buf, &end, 10);
    if (*end != '\0' || errno != 0 || v < 1 || v > 255)
        return fb_fail(err, FB_ERR_USAGE,
                       "%s='%s': port '%s' is not a port number (1..255)", var, whole, buf);
    *port = (int)v;
    return FB_OK;
}

/* '^' and '=' only lead the list and no device name holds a blank: such an
 * entry is a mistyped list NCCL would read as a name matching nothing. */
static enum fb_status fail_name(const char *var, const char *whole, const char *name, size_t len,
                                char bad, struct fb_err *err)
{
    if (bad == '^' || bad == '=')
        return fb_fail(err, FB_ERR_USAGE, "%s='%s': '%.*s' is not a device name ('%c' may only lead the list: [^][=]name[:port],...)",
                       var, whole, (int)len, name, bad);
    return fb_fail(err, FB_ERR_USAGE, "%s='%s': '%.*s' is not a device name (names hold no blanks; separate them with ',')",
                   var, whole, (int)len, name);
}

enum fb_status fb_devspec_parse(const char *text, const char *var, struct fb_devspec *out,
                                struct fb_err *err)
{
    memset(out, 0, sizeof *out);
    const char *p = text ? text : "";
    if (*p == '^') {
        out->exclude = true;
        p++;
    }
    if (*p == '=') {
        out->exact = true;
        p++;
    }
    while (*p != '\0') {
        size_t len = strcspn(p, ",");
        if (len > 0) {
            if (out->n == FB_DEVSPEC_MAX)
                return fb_fail(err, FB_ERR_USAGE,
                               "%s='%s' names more than %d devices; NCCL ignores the rest",
                               var, text, FB_DEVSPEC_MAX);
            struct fb_devspec_entry *e = &out->entry[out->n];
            const char *colon = memchr(p, ':', len);
            size_t name_len = colon ? (size_t)(colon - p) : len;
            e->port = -1;
            if (colon != NULL) {
                enum fb_status st = parse_port(colon + 1, len - name_len - 1, var, text,
                                               &e->port, err);
                if (st != FB_OK)
                    return st;
            }
            if (name_len == 0)
                return fb_fail(err, FB_ERR_USAGE, "%s='%s': an entry has a port but no name",
                               var, text);
            size_t bad = strcspn(p, "^= \t\n");
            if (bad < name_len)
                return fail_name(var, text, p, name_len, p[bad], err);
            if (name_len >= sizeof e->name)
                return fb_fail(err, FB_ERR_USAGE, "%s='%s': name '%.*s' is too long", var,
                               text, (int)name_len, p);
            memcpy(e->name, p, name_len);
            e->name[name_len] = '\0';
            out->n++;
        }
        p += len;
        if (*p == ',')
            p++;
    }
    if (out->n == 0)
        return fb_fail(err, FB_ERR_USAGE,
                       "%s='%s' names no device; unset it or list names such as mlx5_0,mlx5_1",
                       var, text ? text : "");
    return FB_OK;
}

bool fb_devspec_entry_matches(const struct fb_devspec *spec, size_t i, const char *name,
                              int port)
{
    const struct fb_devspec_entry *e = &spec->entry[i];
    bool name_ok = spec->exact ? strcmp(name, e->name) == 0
                               : strncmp(name, e->name, strlen(e->name)) == 0;
    bool port_ok = e->port == -1 || port == -1 || e->port == port;
    return name_ok && port_ok;
}

bool fb_devspec_selects(const struct fb_devspec *spec, const char *name, int port)
{
    bool listed = false;
    for (size_t i = 0; i < spec->n && !listed; i++)
        listed = fb_devspec_entry_matches(spec, i, name, port);
    return spec->exclude ? !listed : listed;
}

void fb_devspec_format(const struct fb_devspec *spec, char *buf, size_t len)
{
    size_t used = 0;
    int n = snprintf(buf, len, "%s%s", spec->exclude ? "^" : "", spec->exact ? "=" : "");
    used = n > 0 ? (size_t)n : 0;
    for (size_t i = 0; i < spec->n && used < len; i++) {
        const struct fb_devspec_entry *e = &spec->entry[i];
        if (e->port >= 0)
            n = snprintf(buf + used, len - used, "%s%s:%d", i ? "," : "", e->name, e->port);
        else
            n = snprintf(buf + used, len - used, "%s%s", i ? "," : "", e->name);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}
