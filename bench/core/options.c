#include "core/options.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/units.h"
#include "core/world.h"

static int is_end(const struct fb_opt *o)
{
    return o->long_name == NULL && o->short_name == 0;
}

static int table_len(const struct fb_opt *t)
{
    int n = 0;
    while (!is_end(&t[n]))
        n++;
    return n;
}

/* The row whose long name is the first len bytes of name, or -1. */
static int find_long(const struct fb_opt *table, const char *name, size_t len)
{
    for (int i = 0; !is_end(&table[i]); i++) {
        const char *ln = table[i].long_name;
        if (ln != NULL && strncmp(ln, name, len) == 0 && ln[len] == '\0')
            return i;
    }
    return -1;
}

int fb_opts_find(const struct fb_opt *table, const char *long_name)
{
    return find_long(table, long_name, strlen(long_name));
}

static int find_short(const struct fb_opt *table, char c)
{
    for (int i = 0; !is_end(&table[i]); i++)
        if (table[i].short_name == c)
            return i;
    return -1;
}

/* Bytes of one stored value (one array element of a repeatable option). */
static size_t value_size(enum fb_opt_type type)
{
    switch (type) {
    case FB_OPT_SIZE: return sizeof(uint64_t);
    case FB_OPT_INT: return sizeof(long);
    case FB_OPT_DOUBLE: return sizeof(double);
    case FB_OPT_STRING: return sizeof(const char *);
    case FB_OPT_FLAG:
    case FB_OPT_CHOICE: return sizeof(int);
    }
    return 0;
}

static int stored_count(const struct fb_opt *o, const void *cfg)
{
    int n = 0;
    memcpy(&n, (const char *)cfg + o->count_offset, sizeof n);
    return n;
}

/* "a, b or c" (sep ", ", last " or ") or "a|b|c" (both "|"). */
static void join_choices(const char *const *words, const char *sep, const char *last, char *buf,
                         size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int k = 0; words[k] != NULL && used < len; k++) {
        const char *before = k == 0 ? "" : words[k + 1] == NULL ? last : sep;
        int n = snprintf(buf + used, len - used, "%s%s", before, words[k]);
        used += n > 0 ? (size_t)n : 0;
    }
}

static int choice_count(const struct fb_opt *o)
{
    int n = 0;
    while (o->choices[n] != NULL)
        n++;
    return n;
}

/* Every usage error ends by pointing at the help of the program that
 * refused the command line. */
static enum fb_status usage_error(const struct fb_opts_ctx *ctx, struct fb_err *err,
                                  const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static enum fb_status usage_error(const struct fb_opts_ctx *ctx, struct fb_err *err,
                                  const char *fmt, ...)
{
    char what[FB_ERR_MSG_MAX / 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return fb_fail(err, FB_ERR_USAGE, "%s; see %s --help", what, ctx->prog);
}

union fb_opt_value {
    uint64_t size;
    long i;
    double d;
    const char *str;
    int flag; /* FLAG and CHOICE */
};

static enum fb_status pick_choice(const struct fb_opt *o, const char *typed, const char *value,
                                  int *index, struct fb_err *err)
{
    for (int k = 0; o->choices[k] != NULL; k++) {
        if (strcmp(o->choices[k], value) == 0) {
            *index = k;
            return FB_OK;
        }
    }
    char words[512];
    join_choices(o->choices, ", ", " or ", words, sizeof words);
    return fb_fail(err, FB_ERR_USAGE, "option '%s' does not accept '%s'; use %s", typed, value,
                   words);
}

/* Converts the text of a value (NULL for a flag) as its row's type says. */
static enum fb_status convert(const struct fb_opt *o, const char *typed, const char *value,
                              union fb_opt_value *v, struct fb_err *err)
{
    const char *what = typed; /* the spelling the user typed, -b or --minbytes */
    switch (o->type) {
    case FB_OPT_SIZE: return fb_parse_size(value, what, &v->size, err);
    case FB_OPT_INT: return fb_parse_int(value, what, (long)o->min, (long)o->max, &v->i, err);
    case FB_OPT_DOUBLE: return fb_parse_double(value, what, o->min, o->max, &v->d, err);
    case FB_OPT_STRING: v->str = value; return FB_OK;
    case FB_OPT_FLAG: v->flag = 1; return FB_OK;
    case FB_OPT_CHOICE: return pick_choice(o, typed, value, &v->flag, err);
    }
    return fb_fail(err, FB_ERR_INTERNAL, "option %s has an unknown type", what);
}

/* The words of one command line and where the parse is in them. */
struct parse {
    const struct fb_opts_ctx *ctx;
    int argc;
    char **argv;
    int i;      /* the word being read */
    void *cfg;
    struct fb_opts_result *res;
    int stop;   /* an ends_parse option was seen */
};

/* Stores the value into the field, or appends it to a repeatable option's
 * array. */
static enum fb_status store(struct parse *p, const struct fb_opt *o, const char *typed,
                            const union fb_opt_value *v, struct fb_err *err)
{
    char *field = (char *)p->cfg + o->offset;
    if (o->max_count <= 0) {
        memcpy(field, v, value_size(o->type));
        return FB_OK;
    }
    int n = stored_count(o, p->cfg);
    if (n >= o->max_count)
        return usage_error(p->ctx, err, "option '%s' given more than %d times", typed,
                           o->max_count);
    memcpy(field + (size_t)n * value_size(o->type), v, value_size(o->type));
    n++;
    memcpy((char *)p->cfg + o->count_offset, &n, sizeof n);
    return FB_OK;
}

static enum fb_status take(struct parse *p, int row, const char *typed, const char *value,
                           struct fb_err *err)
{
    const struct fb_opt *o = &p->ctx->table[row];
    p->res->given[row] = 1;
    p->stop |= o->ends_parse;
    union fb_opt_value v;
    memset(&v, 0, sizeof v);
    enum fb_status st = convert(o, typed, value, &v, err);
    return st == FB_OK ? store(p, o, typed, &v, err) : st;
}

/* "--" or a word that spells one of this table's options (-j, --json,
 * --profile=x): never a value, the value before it was left out. */
static int is_option_word(const struct fb_opt *table, const char *word)
{
    if (word[0] != '-' || word[1] == '\0')
        return 0;
    if (word[1] != '-')
        return find_short(table, word[1]) >= 0;
    const char *name = word + 2;
    return name[0] == '\0' || find_long(table, name, strcspn(name, "=")) >= 0;
}

/* A value given in the same word (-b1K, --minbytes=1K), else the next word
 * unless it is one of this command's options: "--title -x" is a title, as
 * POSIX utilities read it, but "-b --backend mpi" lacks -b's value. */
static enum fb_status value_word(struct parse *p, const struct fb_opt *o, const char *typed,
                                 const char **value, struct fb_err *err)
{
    if (*value != NULL)
        return FB_OK;
    if (p->i + 1 >= p->argc || is_option_word(p->ctx->table, p->argv[p->i + 1]))
        return usage_error(p->ctx, err, "option '%s' needs a value (%s)", typed,
                           o->arg_name ? o->arg_name : "VALUE");
    *value = p->argv[++p->i];
    return FB_OK;
}

static enum fb_status unknown_option(const struct parse *p, const char *typed, struct fb_err *err)
{
    return usage_error(p->ctx, err, "unknown option '%s' for %s", typed, p->ctx->prog);
}

static enum fb_status parse_long(struct parse *p, const char *word, struct fb_err *err)
{
    const char *name = word + 2;
    const char *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    char typed[72];
    snprintf(typed, sizeof typed, "--%.*s", (int)(len < 64 ? len : 64), name);
    int row = find_long(p->ctx->table, name, len);
    if (row < 0)
        return unknown_option(p, typed, err);
    const struct fb_opt *o = &p->ctx->table[row];
    const char *value = eq ? eq + 1 : NULL;
    if (o->type == FB_OPT_FLAG && value != NULL)
        return usage_error(p->ctx, err, "option '%s' takes no value", typed);
    enum fb_status st = o->type == FB_OPT_FLAG ? FB_OK : value_word(p, o, typed, &value, err);
    return st == FB_OK ? take(p, row, typed, value, err) : st;
}

/* -b1K, -b 1K, and flags sharing a word (-jh) up to one that takes a value,
 * which takes the rest of the word. */
static enum fb_status parse_short(struct parse *p, const char *word, struct fb_err *err)
{
    enum fb_status st = FB_OK;
    for (const char *c = word + 1; st == FB_OK && *c != '\0' && !p->stop; c++) {
        char typed[3] = {'-', *c, '\0'};
        int row = find_short(p->ctx->table, *c);
        if (row < 0)
            return unknown_option(p, typed, err);
        const struct fb_opt *o = &p->ctx->table[row];
        if (o->type == FB_OPT_FLAG) {
            st = take(p, row, typed, NULL, err);
            continue;
        }
        const char *value = c[1] != '\0' ? c + 1 : NULL;
        st = value_word(p, o, typed, &value, err);
        return st == FB_OK ? take(p, row, typed, value, err) : st;
    }
    return st;
}

enum fb_status fb_opts_parse_ctx(const struct fb_opts_ctx *ctx, int argc, char **argv, void *cfg,
                                 struct fb_opts_result *res, struct fb_err *err)
{
    memset(res, 0, sizeof *res);
    res->positional = calloc((size_t)(argc > 0 ? argc : 0) + 1, sizeof *res->positional);
    res->given = calloc((size_t)table_len(ctx->table) + 1, 1);
    if (res->positional == NULL || res->given == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory parsing options");
    struct parse p = {ctx, argc, argv, 1, cfg, res, 0};
    int only_positional = 0;
    enum fb_status st = FB_OK;
    for (; st == FB_OK && !p.stop && p.i < argc; p.i++) {
        const char *arg = argv[p.i];
        if (!only_positional && strcmp(arg, "--") == 0)
            only_positional = 1;
        else if (only_positional || arg[0] != '-' || arg[1] == '\0')
            res->positional[res->npositional++] = argv[p.i];
        else if (arg[1] == '-')
            st = parse_long(&p, arg, err);
        else
            st = parse_short(&p, arg, err);
    }
    return st;
}

static const char *last_component(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

enum fb_status fb_opts_parse(const struct fb_opt *table, int argc, char **argv, void *cfg,
                             struct fb_opts_result *res, struct fb_err *err)
{
    struct fb_opts_ctx ctx = {argc > 0 ? last_component(argv[0]) : "fabric-bench", table, NULL};
    return fb_opts_parse_ctx(&ctx, argc, argv, cfg, res, err);
}

void fb_opts_result_free(struct fb_opts_result *res)
{
    free(res->positional);
    free(res->given);
    memset(res, 0, sizeof *res);
}

/* "-b, --minbytes BYTES", "    --fabric auto|rdma|tcpxo", "-J FILE". */
static void help_spelling(const struct fb_opt *o, char *buf, size_t len)
{
    char words[128];
    const char *arg = "";
    if (o->type == FB_OPT_CHOICE && o->arg_name == NULL) {
        join_choices(o->choices, "|", "|", words, sizeof words);
        arg = words;
    } else if (o->type != FB_OPT_FLAG) {
        arg = o->arg_name ? o->arg_name : "VALUE";
    }
    if (o->short_name && o->long_name)
        snprintf(buf, len, "-%c, --%s %s", o->short_name, o->long_name, arg);
    else if (o->long_name)
        snprintf(buf, len, "    --%s %s", o->long_name, arg);
    else
        snprintf(buf, len, "-%c %s", o->short_name, arg);
}

void fb_opts_help(FILE *out, const struct fb_opt *table)
{
    for (int i = 0; !is_end(&table[i]); i++) {
        const struct fb_opt *o = &table[i];
        char left[160];
        help_spelling(o, left, sizeof left);
        fprintf(out, "  %-30s %s", left, o->help ? o->help : "");
        if (o->max_count > 0)
            fprintf(out, " (repeatable, at most %d)", o->max_count);
        fputc('\n', out);
    }
}

void fb_opts_usage(FILE *out, const struct fb_opts_ctx *ctx)
{
    if (ctx->usage != NULL)
        fputs(ctx->usage, out);
    fputs("options:\n", out);
    fb_opts_help(out, ctx->table);
}

/* The JSON key and hash name of a row: its long name, else "-J". */
static const char *row_key(const struct fb_opt *o, char *buf, size_t len)
{
    if (o->long_name != NULL)
        return o->long_name;
    snprintf(buf, len, "-%c", o->short_name);
    return buf;
}

static json_object *value_json(const struct fb_opt *o, const char *slot)
{
    union fb_opt_value v;
    memcpy(&v, slot, value_size(o->type));
    switch (o->type) {
    case FB_OPT_SIZE: return json_object_new_uint64(v.size);
    case FB_OPT_INT: return json_object_new_int64(v.i);
    case FB_OPT_DOUBLE: return json_object_new_double(v.d);
    case FB_OPT_STRING: return v.str ? json_object_new_string(v.str) : NULL;
    case FB_OPT_FLAG: return json_object_new_boolean(v.flag);
    case FB_OPT_CHOICE:
        return v.flag >= 0 && v.flag < choice_count(o) ? json_object_new_string(o->choices[v.flag])
                                                       : NULL;
    }
    return NULL;
}

json_object *fb_opts_to_json(const struct fb_opt *table, const void *cfg)
{
    json_object *obj = json_object_new_object();
    for (int i = 0; !is_end(&table[i]); i++) {
        const struct fb_opt *o = &table[i];
        const char *field = (const char *)cfg + o->offset;
        json_object *v = NULL;
        if (o->max_count > 0) {
            v = json_object_new_array();
            for (int k = 0; k < stored_count(o, cfg); k++)
                json_object_array_add(v, value_json(o, field + (size_t)k * value_size(o->type)));
        } else {
            v = value_json(o, field);
        }
        char key[4];
        json_object_object_add(obj, row_key(o, key, sizeof key), v);
    }
    return obj;
}

static uint64_t hash_value(uint64_t h, const struct fb_opt *o, const char *slot)
{
    if (o->type != FB_OPT_STRING)
        return fb_hash_bytes(h, slot, value_size(o->type));
    const char *str;
    memcpy(&str, slot, sizeof str);
    return fb_hash_bytes(h, str ? str : "", str ? strlen(str) + 1 : 0);
}

uint64_t fb_opts_hash(const struct fb_opt *table, const void *cfg)
{
    uint64_t h = FB_HASH_SEED;
    for (int i = 0; !is_end(&table[i]); i++) {
        const struct fb_opt *o = &table[i];
        const char *field = (const char *)cfg + o->offset;
        char key[4];
        const char *name = row_key(o, key, sizeof key);
        h = fb_hash_bytes(h, name, strlen(name));
        if (o->max_count <= 0) {
            h = hash_value(h, o, field);
            continue;
        }
        int n = stored_count(o, cfg);
        h = fb_hash_bytes(h, &n, sizeof n);
        for (int k = 0; k < n; k++)
            h = hash_value(h, o, field + (size_t)k * value_size(o->type));
    }
    return h;
}

const struct fb_subcmd *fb_subcmd_find(const struct fb_subcmd *cmds, const char *name)
{
    for (; cmds->name != NULL; cmds++)
        if (strcmp(cmds->name, name) == 0)
            return cmds;
    return NULL;
}

enum fb_status fb_subcmd_run(const char *prog, const struct fb_subcmd *cmd, int argc,
                             char **argv, struct fb_err *err)
{
    char full[128];
    snprintf(full, sizeof full, "%s %s", prog, cmd->name);
    struct fb_opts_ctx ctx = {full, cmd->opts, cmd->help, argv[0]};
    return cmd->run(&ctx, argc - 1, argv + 1, err);
}
