#include "core/options.h"

#include <stdlib.h>
#include <string.h>

#include "core/units.h"
#include "core/world.h"

static int table_len(const struct fb_opt *t)
{
    int n = 0;
    while (t[n].long_name != NULL)
        n++;
    return n;
}

int fb_opts_find(const struct fb_opt *table, const char *long_name)
{
    for (int i = 0; table[i].long_name != NULL; i++)
        if (strcmp(table[i].long_name, long_name) == 0)
            return i;
    return -1;
}

static int find_short(const struct fb_opt *table, char c)
{
    for (int i = 0; table[i].long_name != NULL; i++)
        if (table[i].short_name == c)
            return i;
    return -1;
}

static enum fb_status store_value(const struct fb_opt *o, const char *value, void *cfg,
                                  struct fb_err *err)
{
    char what[96];
    if (o->short_name)
        snprintf(what, sizeof what, "-%c/--%s", o->short_name, o->long_name);
    else
        snprintf(what, sizeof what, "--%s", o->long_name);
    char *field = (char *)cfg + o->offset;
    long lv = 0;
    double dv = 0;
    uint64_t sv = 0;
    enum fb_status st = FB_OK;
    switch (o->type) {
    case FB_OPT_SIZE:
        st = fb_parse_size(value, what, &sv, err);
        if (st == FB_OK)
            memcpy(field, &sv, sizeof sv);
        return st;
    case FB_OPT_INT:
        st = fb_parse_int(value, what, (long)o->min, (long)o->max, &lv, err);
        if (st == FB_OK)
            memcpy(field, &lv, sizeof lv);
        return st;
    case FB_OPT_DOUBLE:
        st = fb_parse_double(value, what, o->min, o->max, &dv, err);
        if (st == FB_OK)
            memcpy(field, &dv, sizeof dv);
        return st;
    case FB_OPT_STRING:
        memcpy(field, &value, sizeof value);
        return FB_OK;
    case FB_OPT_FLAG: {
        int one = 1;
        memcpy(field, &one, sizeof one);
        return FB_OK;
    }
    }
    return fb_fail(err, FB_ERR_INTERNAL, "option %s has an unknown type", what);
}

/* One option word; its value is inline (-b1K, --minbytes=1K) or the next
 * word, in which case *i advances past it. */
static enum fb_status parse_one(const struct fb_opt *table, int argc, char **argv, int *i,
                                void *cfg, unsigned char *given, struct fb_err *err)
{
    const char *arg = argv[*i];
    const char *inline_value = NULL;
    int row = -1;
    if (arg[1] == '-') {
        char name[64];
        const char *eq = strchr(arg + 2, '=');
        size_t len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
        if (len >= sizeof name)
            len = sizeof name - 1;
        memcpy(name, arg + 2, len);
        name[len] = '\0';
        row = fb_opts_find(table, name);
        if (row < 0)
            return fb_fail(err, FB_ERR_USAGE, "unknown option '--%s'; see --help", name);
        if (eq)
            inline_value = eq + 1;
    } else {
        row = find_short(table, arg[1]);
        if (row < 0)
            return fb_fail(err, FB_ERR_USAGE, "unknown option '-%c'; see --help", arg[1]);
        if (arg[2] != '\0')
            inline_value = arg + 2;
    }
    const struct fb_opt *o = &table[row];
    given[row] = 1;
    if (o->type == FB_OPT_FLAG) {
        if (inline_value != NULL)
            return fb_fail(err, FB_ERR_USAGE, "option '--%s' takes no value", o->long_name);
        return store_value(o, NULL, cfg, err);
    }
    if (inline_value == NULL) {
        if (*i + 1 >= argc)
            return fb_fail(err, FB_ERR_USAGE, "option '%s' needs a value (%s)", arg,
                           o->arg_name ? o->arg_name : "VALUE");
        inline_value = argv[++*i];
    }
    return store_value(o, inline_value, cfg, err);
}

enum fb_status fb_opts_parse(const struct fb_opt *table, int argc, char **argv, void *cfg,
                             struct fb_opts_result *res, struct fb_err *err)
{
    memset(res, 0, sizeof *res);
    res->positional = calloc((size_t)argc + 1, sizeof *res->positional);
    res->given = calloc((size_t)table_len(table) + 1, 1);
    if (res->positional == NULL || res->given == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory parsing options");
    int only_positional = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!only_positional && strcmp(arg, "--") == 0) {
            only_positional = 1;
            continue;
        }
        if (only_positional || arg[0] != '-' || arg[1] == '\0') {
            res->positional[res->npositional++] = argv[i];
            continue;
        }
        enum fb_status st = parse_one(table, argc, argv, &i, cfg, res->given, err);
        if (st != FB_OK)
            return st;
    }
    return FB_OK;
}

void fb_opts_result_free(struct fb_opts_result *res)
{
    free(res->positional);
    free(res->given);
    memset(res, 0, sizeof *res);
}

void fb_opts_help(FILE *out, const struct fb_opt *table)
{
    for (int i = 0; table[i].long_name != NULL; i++) {
        const struct fb_opt *o = &table[i];
        char left[64];
        const char *arg = o->type == FB_OPT_FLAG ? "" : (o->arg_name ? o->arg_name : "VALUE");
        if (o->short_name)
            snprintf(left, sizeof left, "-%c, --%s %s", o->short_name, o->long_name, arg);
        else
            snprintf(left, sizeof left, "    --%s %s", o->long_name, arg);
        fprintf(out, "  %-30s %s\n", left, o->help ? o->help : "");
    }
}

json_object *fb_opts_to_json(const struct fb_opt *table, const void *cfg)
{
    json_object *obj = json_object_new_object();
    for (int i = 0; table[i].long_name != NULL; i++) {
        const struct fb_opt *o = &table[i];
        const char *field = (const char *)cfg + o->offset;
        json_object *v = NULL;
        uint64_t sv;
        long lv;
        double dv;
        const char *str;
        int flag;
        switch (o->type) {
        case FB_OPT_SIZE: memcpy(&sv, field, sizeof sv); v = json_object_new_uint64(sv); break;
        case FB_OPT_INT: memcpy(&lv, field, sizeof lv); v = json_object_new_int64(lv); break;
        case FB_OPT_DOUBLE: memcpy(&dv, field, sizeof dv); v = json_object_new_double(dv); break;
        case FB_OPT_STRING: memcpy(&str, field, sizeof str); v = str ? json_object_new_string(str) : NULL; break;
        case FB_OPT_FLAG: memcpy(&flag, field, sizeof flag); v = json_object_new_boolean(flag); break;
        }
        json_object_object_add(obj, o->long_name, v);
    }
    return obj;
}

uint64_t fb_opts_hash(const struct fb_opt *table, const void *cfg)
{
    uint64_t h = FB_HASH_SEED;
    for (int i = 0; table[i].long_name != NULL; i++) {
        const struct fb_opt *o = &table[i];
        const char *field = (const char *)cfg + o->offset;
        h = fb_hash_bytes(h, o->long_name, strlen(o->long_name));
        if (o->type == FB_OPT_STRING) {
            const char *str;
            memcpy(&str, field, sizeof str);
            h = fb_hash_bytes(h, str ? str : "", str ? strlen(str) + 1 : 0);
            continue;
        }
        size_t n = o->type == FB_OPT_SIZE ? sizeof(uint64_t) : o->type == FB_OPT_INT ? sizeof(long)
                   : o->type == FB_OPT_DOUBLE ? sizeof(double) : sizeof(int);
        h = fb_hash_bytes(h, field, n);
    }
    return h;
}
