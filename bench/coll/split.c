#include "coll/split.h"
#include "core/coord.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/jsonio.h"

/* ---- parsing ---- */

static const struct {
    const char *word;
    enum coll_split_op op;
} split_ops[] = {
    {"AND", COLL_SPLIT_AND}, {"&", COLL_SPLIT_AND}, {"OR", COLL_SPLIT_OR},   {"|", COLL_SPLIT_OR},
    {"MOD", COLL_SPLIT_MOD}, {"%", COLL_SPLIT_MOD}, {"DIV", COLL_SPLIT_DIV}, {"/", COLL_SPLIT_DIV},
};

static const struct {
    const char *word;
    enum coll_split_kind kind;
} split_words[] = {
    {"intra-node", COLL_SPLIT_INTRA},
    {"inter-node", COLL_SPLIT_INTER},
    {"intra-inter", COLL_SPLIT_LOOP},
};

const char *coll_split_kind_name(enum coll_split_kind k)
{
    switch (k) {
    case COLL_SPLIT_EXPR: return "expression";
    case COLL_SPLIT_MASK: return "mask";
    case COLL_SPLIT_INTRA: return "intra-node";
    case COLL_SPLIT_INTER: return "inter-node";
    case COLL_SPLIT_LOOP: return "intra-inter";
    default: return "none";
    }
}

static const char *skip_space(const char *s)
{
    while (*s && isspace((unsigned char)*s))
        s++;
    return s;
}

static int is_only_space(const char *s)
{
    return *skip_space(s) == '\0';
}

/* The three words of our own, whole (any case, trailing spaces allowed). */
static int match_word(const char *text, enum coll_split_kind *kind)
{
    for (size_t i = 0; i < sizeof split_words / sizeof *split_words; i++) {
        size_t n = strlen(split_words[i].word);
        if (strncasecmp(text, split_words[i].word, n) == 0 && is_only_space(text + n)) {
            *kind = split_words[i].kind;
            return 1;
        }
    }
    return 0;
}

static const char *usage_hint(void)
{
    return "use AND, OR, MOD or DIV (or & | % /) and a number, e.g. 'MOD 8', or intra-node, inter-node, "
           "intra-inter";
}

/* The number after the operator, read as nccl-tests' parseInt reads it
 * (spaces skipped, 0b binary, else strtoul base 0), refusing every
 * spelling that reading would take for something else. */
static enum fb_status parse_value(const char *s, const char *source, const char *text, unsigned long *out,
                                  struct fb_err *err)
{
    s = skip_space(s);
    if (*s == '\0')
        return fb_fail(err, FB_ERR_USAGE, "%s='%s' has no number after the operator; %s", source, text,
                       usage_hint());
    if (*s == '-')
        return fb_fail(err, FB_ERR_USAGE, "%s='%s': a negative value gives negative or meaningless colors; "
                       "give a number of 0 or more", source, text);
    int binary = strncasecmp(s, "0b", 2) == 0;
    const char *digits = binary ? s + 2 : s;
    if (binary && *digits != '0' && *digits != '1')
        return fb_fail(err, FB_ERR_USAGE, "%s='%s': 0b needs binary digits after it (nccl-tests would read 0); "
                       "e.g. 0b11", source, text);
    const char *unsigned_part = *digits == '+' ? digits + 1 : digits;
    /* strtoul's base 0 reads 010 as 8: refused where that is not what
     * the digits say in decimal (07 reads the same either way). */
    if (!binary && unsigned_part[0] == '0' && isdigit((unsigned char)unsigned_part[1]) &&
        strtoul(digits, NULL, 10) != strtoul(digits, NULL, 0))
        return fb_fail(err, FB_ERR_USAGE, "%s='%s': a leading 0 makes nccl-tests read the number as octal "
                       "(%lu); drop the 0 for decimal, or write 0x for hex", source, text,
                       strtoul(digits, NULL, 0));
    errno = 0;
    char *end = NULL;
    unsigned long v = strtoul(digits, &end, binary ? 2 : 0);
    if (end == digits)
        return fb_fail(err, FB_ERR_USAGE, "%s='%s': '%s' is not a number (nccl-tests would run without groups); %s",
                       source, text, s, usage_hint());
    if (errno == ERANGE || v > (unsigned long)INT_MAX)
        return fb_fail(err, FB_ERR_USAGE, "%s='%s': the value is over %d (nccl-tests keeps only an int); give a "
                       "smaller one", source, text, INT_MAX);
    if (!is_only_space(end))
        return fb_fail(err, FB_ERR_USAGE, "%s='%s': '%s' after the number (nccl-tests would read %lu and drop "
                       "it); write the number alone", source, text, skip_space(end), v);
    *out = v;
    return FB_OK;
}

static void keep_text(struct coll_split_spec *s, const char *text, const char *source)
{
    snprintf(s->text, sizeof s->text, "%s", text);
    s->source = source;
}

enum fb_status coll_split_parse(const char *text, const char *source, struct coll_split_spec *s,
                                struct fb_err *err)
{
    memset(s, 0, sizeof *s);
    if (text == NULL || text[0] == '\0')
        return FB_OK;
    keep_text(s, text, source);
    if (strlen(text) >= sizeof s->text)
        return fb_fail(err, FB_ERR_USAGE, "%s is %zu characters long; a split is an operator and a number, "
                       "e.g. 'MOD 8'", source, strlen(text));
    if (isspace((unsigned char)text[0]))
        return fb_fail(err, FB_ERR_USAGE, "%s='%s' starts with a space, so nccl-tests would run without groups; "
                       "remove the space", source, text);
    if (match_word(text, &s->kind))
        return FB_OK;
    for (size_t i = 0; i < sizeof split_ops / sizeof *split_ops; i++) {
        size_t n = strlen(split_ops[i].word);
        if (strncasecmp(text, split_ops[i].word, n) != 0)
            continue;
        s->kind = COLL_SPLIT_EXPR;
        s->op = split_ops[i].op;
        enum fb_status st = parse_value(text + n, source, text, &s->value, err);
        if (st == FB_OK && s->value == 0 && (s->op == COLL_SPLIT_MOD || s->op == COLL_SPLIT_DIV))
            st = fb_fail(err, FB_ERR_USAGE, "%s='%s' divides by zero (nccl-tests crashes on it); give a "
                         "value of 1 or more", source, text);
        return st;
    }
    return fb_fail(err, FB_ERR_USAGE, "%s='%s': unknown operator, so nccl-tests would run without groups; %s",
                   source, text, usage_hint());
}

enum fb_status coll_split_parse_mask(const char *text, struct coll_split_spec *s, struct fb_err *err)
{
    static const char *const source = "NCCL_TESTS_SPLIT_MASK";
    memset(s, 0, sizeof *s);
    if (text == NULL || text[0] == '\0')
        return FB_OK;
    keep_text(s, text, source);
    s->kind = COLL_SPLIT_MASK;
    s->op = COLL_SPLIT_AND;
    const char *p = skip_space(text);
    if (*p == '-')
        return fb_fail(err, FB_ERR_USAGE, "%s='%s': a negative mask is every bit set; give a hex mask such as 0x7",
                       source, text);
    if (strncasecmp(p, "0b", 2) == 0)
        return fb_fail(err, FB_ERR_USAGE, "%s='%s': the mask is hex, so nccl-tests reads 0b... as the hex digits "
                       "b...; write it in hex (0b11 is 0x3)", source, text);
    errno = 0;
    char *end = NULL;
    s->value = strtoul(p, &end, 16);
    if (end == p)
        return fb_fail(err, FB_ERR_USAGE, "%s='%s' is not a hex number (nccl-tests would read 0: no groups); "
                       "e.g. 0x7", source, text);
    if (errno == ERANGE)
        return fb_fail(err, FB_ERR_USAGE, "%s='%s' is out of range; give a mask of at most 16 hex digits", source,
                       text);
    if (!is_only_space(end))
        return fb_fail(err, FB_ERR_USAGE, "%s='%s': '%s' after the hex number (nccl-tests would read 0x%lx and "
                       "drop it); write the mask alone", source, text, skip_space(end), s->value);
    return FB_OK;
}

enum fb_status coll_split_from_env(const char *option, struct coll_split_spec *s, struct fb_err *err)
{
    const char *mask = getenv("NCCL_TESTS_SPLIT_MASK"), *split = getenv("NCCL_TESTS_SPLIT");
    int mask_set = mask != NULL && mask[0] != '\0', split_set = split != NULL && split[0] != '\0';
    if (option != NULL) {
        enum fb_status st = coll_split_parse(option, "--split", s, err);
        if (st == FB_OK && (mask_set || split_set))
            snprintf(s->note, sizeof s->note, "--split %s replaces %s=%s", option,
                     mask_set ? "NCCL_TESTS_SPLIT_MASK" : "NCCL_TESTS_SPLIT", mask_set ? mask : split);
        return st;
    }
    if (mask != NULL && !mask_set && split_set) {
        memset(s, 0, sizeof *s);
        return fb_fail(err, FB_ERR_USAGE, "NCCL_TESTS_SPLIT_MASK is set but empty, so nccl-tests would run without "
                       "groups and ignore NCCL_TESTS_SPLIT='%s'; unset NCCL_TESTS_SPLIT_MASK", split);
    }
    if (mask_set) {
        enum fb_status st = coll_split_parse_mask(mask, s, err);
        if (st == FB_OK && split_set)
            snprintf(s->note, sizeof s->note, "NCCL_TESTS_SPLIT=%s is ignored: NCCL_TESTS_SPLIT_MASK=%s comes "
                     "first, as in nccl-tests", split, mask);
        return st;
    }
    return coll_split_parse(split, "NCCL_TESTS_SPLIT", s, err);
}

int coll_split_color(const struct coll_split_spec *s, int rank, int node, int local_rank)
{
    switch (s->kind) {
    case COLL_SPLIT_MASK: return (int)((unsigned long)rank & s->value);
    case COLL_SPLIT_INTRA: return node;
    case COLL_SPLIT_INTER:
    case COLL_SPLIT_LOOP: return local_rank;
    case COLL_SPLIT_EXPR: break;
    default: return 0;
    }
    int v = (int)s->value;
    switch (s->op) {
    case COLL_SPLIT_AND: return rank & v;
    case COLL_SPLIT_OR: return rank | v;
    case COLL_SPLIT_MOD: return rank % v;
    default: return rank / v;
    }
}

int coll_split_phases(const struct coll_split_spec *s)
{
    return s->kind == COLL_SPLIT_LOOP ? 2 : 1;
}

/* The loop measures across nodes first: NCCL opens its debug log once per
 * process, so only the first phase's transport can be captured, and the
 * inter-node phase is the one whose network matters. */
struct coll_split_spec coll_split_phase(const struct coll_split_spec *s, int phase)
{
    struct coll_split_spec p = *s;
    if (s->kind == COLL_SPLIT_LOOP)
        p.kind = phase == 0 ? COLL_SPLIT_INTER : COLL_SPLIT_INTRA;
    return p;
}

enum fb_status coll_split_check_loop(const struct coll_split_spec *spec, const struct fb_world *w,
                                     struct fb_err *err)
{
    if (spec->kind != COLL_SPLIT_LOOP && spec->kind != COLL_SPLIT_INTRA && spec->kind != COLL_SPLIT_INTER)
        return FB_OK;
    int *per_node = calloc((size_t)w->size, sizeof *per_node);
    if (per_node == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    /* Node index of each rank: order of first appearance of its host. */
    int nodes = 0;
    for (int r = 0; r < w->size; r++) {
        int n = 0;
        while (n < r && strcmp(w->hosts[n], w->hosts[r]) != 0)
            n++;
        if (n == r)
            nodes++;
        per_node[n]++;
    }
    int least = w->size, most = 0;
    for (int r = 0; r < w->size; r++) {
        if (per_node[r] == 0)
            continue;
        least = per_node[r] < least ? per_node[r] : least;
        most = per_node[r] > most ? per_node[r] : most;
    }
    free(per_node);
    const char *what = spec->source ? spec->source : "--split";
    if (spec->kind != COLL_SPLIT_INTRA && nodes < 2)
        return fb_fail(err, FB_ERR_USAGE, "%s %s needs ranks on 2 nodes or more (this job has 1: every inter-node "
                       "group would be one rank); launch across nodes, or use intra-node", what, spec->text);
    if (spec->kind != COLL_SPLIT_INTER && least < 2)
        return fb_fail(err, FB_ERR_USAGE, "%s %s needs 2 ranks or more on every node (a node has %d: its group "
                       "would measure nothing); start one rank per GPU", what, spec->text, least);
    if (spec->kind == COLL_SPLIT_LOOP && least != most)
        return fb_fail(err, FB_ERR_USAGE, "%s %s needs the same number of ranks on every node (%d to %d here), so "
                       "every rail spans every node; start as many ranks on each", what, spec->text, least, most);
    return FB_OK;
}

/* ---- groups ---- */

void coll_split_free(struct coll_split *sp)
{
    free(sp->colors);
    free(sp->group_color);
    free(sp->group_size);
    free(sp->group_nodes);
    memset(sp, 0, sizeof *sp);
}

static int distinct_hosts(const struct fb_world *w, const int *colors, int color)
{
    int n = 0;
    for (int r = 0; r < w->size; r++) {
        if (colors[r] != color)
            continue;
        int seen = 0;
        for (int q = 0; q < r && !seen; q++)
            seen = colors[q] == color && strcmp(w->hosts[q], w->hosts[r]) == 0;
        n += !seen;
    }
    return n;
}

/* Groups in order of their first rank: group 0 is rank 0's. */
static enum fb_status index_groups(struct coll_split *sp, const struct fb_world *w, struct fb_err *err)
{
    size_t n = (size_t)w->size;
    sp->group_color = calloc(n, sizeof *sp->group_color);
    sp->group_size = calloc(n, sizeof *sp->group_size);
    sp->group_nodes = calloc(n, sizeof *sp->group_nodes);
    if (sp->group_color == NULL || sp->group_size == NULL || sp->group_nodes == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory for %d groups", w->size);
    for (int r = 0; r < w->size; r++) {
        int g = 0;
        while (g < sp->ngroups && sp->group_color[g] != sp->colors[r])
            g++;
        if (g == sp->ngroups)
            sp->group_color[sp->ngroups++] = sp->colors[r];
        sp->group_size[g]++;
        if (r == w->rank)
            sp->mine = g;
    }
    sp->smallest = w->size;
    for (int g = 0; g < sp->ngroups; g++) {
        sp->group_nodes[g] = distinct_hosts(w, sp->colors, sp->group_color[g]);
        sp->smallest = sp->group_size[g] < sp->smallest ? sp->group_size[g] : sp->smallest;
    }
    sp->rank0_group = 0;
    return FB_OK;
}

enum fb_status coll_split_setup(struct coll_split *sp, const struct coll_split_spec *spec,
                                const struct fb_world *w, struct fb_world *group, struct fb_err *err)
{
    memset(sp, 0, sizeof *sp);
    sp->spec = *spec;
    sp->active = spec->kind != COLL_SPLIT_NONE;
    sp->nranks = w->size;
    sp->colors = calloc((size_t)w->size, sizeof *sp->colors);
    if (sp->colors == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory for %d colors", w->size);
    int mine = coll_split_color(spec, w->rank, w->node, w->local_rank);
    /* Gathered rather than recomputed: each rank read its own environment. */
    fb_coord_allgather(w, &mine, sp->colors, sizeof mine);
    enum fb_status st = index_groups(sp, w, err);
    if (st == FB_OK)
        st = fb_world_split(w, mine, w->rank, group, err);
    return st;
}

/* ---- figures ---- */

/* What one rank knows of its group's measurement. */
struct share {
    double time_us, mean, min, max;
    long long wrong;
};

static void group_figures(const struct fb_call *call, uint64_t size, int nranks, const struct share *s,
                          struct fb_measurement *m)
{
    size_t esz = fb_dtype_info(call->dtype)->size;
    size_t bytes = call->coll->counts((size_t)size, esz, nranks).bytes;
    *m = (struct fb_measurement){.time_us = s->time_us, .time_us_mean = s->mean, .time_us_min = s->min,
                                 .time_us_max = s->max, .wrong = s->wrong};
    m->algbw_GBps = fb_algbw_GBps(bytes, s->time_us * 1e-6);
    m->busbw_GBps = fb_busbw_GBps(call->coll, bytes, s->time_us * 1e-6, nranks);
}

/* nccl-tests reduces each rank's time over MPI_COMM_WORLD (common.cu,
 * Allreduce in BenchTime), whatever the groups, and computes the bus
 * factor with the printing rank's group size. */
static void table_figure(const struct coll_split *sp, const struct fb_call *call, uint64_t size,
                         enum fb_time_reduction how, const struct fb_measurement *g, struct fb_measurement *t)
{
    double sum = 0, mn = g[0].time_us_min, mx = g[0].time_us_max;
    long long wrong = 0;
    for (int i = 0; i < sp->ngroups; i++) {
        sum += g[i].time_us_mean * sp->group_size[i];
        mn = g[i].time_us_min < mn ? g[i].time_us_min : mn;
        mx = g[i].time_us_max > mx ? g[i].time_us_max : mx;
        wrong = g[i].wrong < 0 || wrong < 0 ? -1 : wrong + g[i].wrong;
    }
    struct share s = {.mean = sum / sp->nranks, .min = mn, .max = mx, .wrong = wrong};
    switch (how) {
    case FB_TIME_RANK0: s.time_us = g[sp->rank0_group].time_us; break;
    case FB_TIME_MEAN: s.time_us = s.mean; break;
    case FB_TIME_MIN: s.time_us = s.min; break;
    case FB_TIME_MAX: s.time_us = s.max; break;
    }
    group_figures(call, size, sp->group_size[sp->rank0_group], &s, t);
}

void coll_split_combine(const struct coll_split *sp, const struct fb_world *w, uint64_t size,
                        const struct fb_call *call, enum fb_time_reduction how,
                        const struct fb_measurement *mine, struct fb_measurement *table,
                        struct fb_measurement *per_group)
{
    struct share me = {mine->time_us, mine->time_us_mean, mine->time_us_min, mine->time_us_max, mine->wrong};
    struct share *all = calloc((size_t)w->size, sizeof *all);
    if (all == NULL) {
        *table = *mine;
        return;
    }
    fb_coord_allgather(w, &me, all, sizeof me);
    for (int g = 0; g < sp->ngroups; g++) {
        int first = 0;
        while (sp->colors[first] != sp->group_color[g])
            first++;
        group_figures(call, size, sp->group_size[g], &all[first], &per_group[g]);
    }
    free(all);
    table_figure(sp, call, size, how, per_group, table);
}

/* ---- description ---- */

static json_object *group_json(const struct coll_split *sp, const struct fb_world *w, int g)
{
    json_object *o = json_object_new_object(), *ranks = json_object_new_array(), *hosts = json_object_new_array();
    for (int r = 0; r < w->size; r++) {
        if (sp->colors[r] != sp->group_color[g])
            continue;
        json_object_array_add(ranks, json_object_new_int(r));
        int seen = 0;
        for (int q = 0; q < r && !seen; q++)
            seen = sp->colors[q] == sp->group_color[g] && strcmp(w->hosts[q], w->hosts[r]) == 0;
        if (!seen)
            json_object_array_add(hosts, json_object_new_string(w->hosts[r]));
    }
    json_object_object_add(o, "color", json_object_new_int(sp->group_color[g]));
    json_object_object_add(o, "size", json_object_new_int(sp->group_size[g]));
    json_object_object_add(o, "nodes", json_object_new_int(sp->group_nodes[g]));
    json_object_object_add(o, "ranks", ranks);
    json_object_object_add(o, "hosts", hosts);
    json_object_object_add(o, "rows", json_object_new_array());
    json_object_object_add(o, "summary", NULL);
    return o;
}

json_object *coll_split_json(const struct coll_split *sp, const struct fb_world *w, int phase,
                             int phases, const char *launch)
{
    if (!sp->active)
        return NULL;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "kind", json_object_new_string(coll_split_kind_name(sp->spec.kind)));
    json_object_object_add(o, "expression", json_object_new_string(sp->spec.text));
    json_object_object_add(o, "source", json_object_new_string(sp->spec.source ? sp->spec.source : "--split"));
    json_object_object_add(o, "phase", json_object_new_int(phase));
    json_object_object_add(o, "phases", json_object_new_int(phases));
    json_object_object_add(o, "launch", json_object_new_string(launch));
    json_object_object_add(o, "table_group", json_object_new_int(sp->rank0_group));
    json_object *groups = json_object_new_array();
    for (int g = 0; g < sp->ngroups; g++)
        json_object_array_add(groups, group_json(sp, w, g));
    json_object_object_add(o, "groups", groups);
    return o;
}

void coll_split_describe(const struct coll_split *sp, char *buf, size_t len)
{
    int same = 1;
    for (int g = 1; g < sp->ngroups; g++)
        same &= sp->group_size[g] == sp->group_size[0];
    size_t used = (size_t)snprintf(buf, len, "%d group%s", sp->ngroups, sp->ngroups == 1 ? "" : "s");
    if (same && used < len)
        used += (size_t)snprintf(buf + used, len - used, " of %d rank%s", sp->group_size[0],
                                 sp->group_size[0] == 1 ? "" : "s");
    if (used < len)
        used += (size_t)snprintf(buf + used, len - used, " (color%s", sp->ngroups == 1 ? "" : "s");
    for (int g = 0; g < sp->ngroups && used < len; g++)
        used += (size_t)snprintf(buf + used, len - used, "%s %d", g ? "," : "", sp->group_color[g]);
    if (used < len)
        snprintf(buf + used, len - used, ")");
}
