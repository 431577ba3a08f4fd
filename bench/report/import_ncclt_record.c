#include "report/import_ncclt_record.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/array.h"
#include "core/clock.h"
#include "core/jsonio.h"
#include "core/version.h"
#include "core/text.h"
#include "nccl/collective.h"
#include "report/import_figures.h"

void ncclt_record_init(struct ncclt_record *r, const char *format)
{
    memset(r, 0, sizeof *r);
    r->format = format;
    r->root = -1;
    r->oob = -1;
    r->avg_footer = NAN;
    r->nthreads = r->ngpus = 1;
    snprintf(r->time_reduction, sizeof r->time_reduction, "mean");
    r->warnings = json_object_new_array();
}

void ncclt_record_free(struct ncclt_record *r)
{
    free(r->devs);
    free(r->rows);
    free(r->row_iters);
    free(r->row_halves);
    if (r->env != NULL)
        json_object_put(r->env);
    if (r->warnings != NULL)
        json_object_put(r->warnings);
    if (r->transport != NULL)
        json_object_put(r->transport);
    memset(r, 0, sizeof *r);
}

enum fb_status ncclt_add_row(struct ncclt_record *r, const struct fb_row *row, long iterations,
                             const struct ncclt_row_halves *halves, struct fb_err *err)
{
    if (r->nrows == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 64;
        struct fb_row *rows = realloc(r->rows, cap * sizeof *rows);
        if (rows == NULL)
            return fb_fail(err, FB_ERR_INTERNAL, "out of memory importing rows");
        r->rows = rows;
        long *iters = realloc(r->row_iters, cap * sizeof *iters);
        if (iters == NULL)
            return fb_fail(err, FB_ERR_INTERNAL, "out of memory importing rows");
        r->row_iters = iters;
        struct ncclt_row_halves *h = realloc(r->row_halves, cap * sizeof *h);
        if (h == NULL)
            return fb_fail(err, FB_ERR_INTERNAL, "out of memory importing rows");
        r->row_halves = h;
        r->cap = cap;
    }
    r->rows[r->nrows] = *row;
    r->row_iters[r->nrows] = iterations;
    r->row_halves[r->nrows] = halves ? *halves : (struct ncclt_row_halves){{0, 0, 0}, {0, 0, 0}};
    r->nrows++;
    return FB_OK;
}

enum fb_status ncclt_add_device(struct ncclt_record *r, const struct ncclt_device *d, struct fb_err *err)
{
    return fb_array_append(&r->devs, &r->ndevs, sizeof *d, d, "importing devices", err);
}

void ncclt_warn(struct ncclt_record *r, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    json_object_array_add(r->warnings, json_object_new_string(buf));
}

static long bounded(long v)
{
    return v >= 0 && v <= 1000000000L ? v : 0;
}

void ncclt_bound_counts(struct ncclt_record *r)
{
    r->nthreads = bounded(r->nthreads);
    r->ngpus = bounded(r->ngpus);
    r->warmup = bounded(r->warmup);
    r->iters = bounded(r->iters);
    r->agg = bounded(r->agg);
    r->validation = bounded(r->validation);
    r->graph = bounded(r->graph);
}

bool ncclt_collective_in(const char *s, char *out, size_t len)
{
    const char *base = strrchr(s, '/');
    const struct fb_collective *c = fb_collective_in_text(base ? base + 1 : s);
    if (c != NULL)
        snprintf(out, len, "%s", c->name);
    return c != NULL;
}

char *ncclt_line_start(char *line)
{
    static const char fnuz[] = "using FNUZ FP8 types";
    char *s = fb_strip_launcher_prefixes(line);
    char *glued = fb_starts_with(s, "On gfx") ? strstr(s, fnuz) : NULL;
    return glued != NULL ? fb_strip_launcher_prefixes(glued + strlen(fnuz)) : s;
}

void ncclt_version_from_code(long code, char *out, size_t len)
{
    if (code >= 20900)
        snprintf(out, len, "%ld.%ld.%ld", code / 10000, code / 100 % 100, code % 100);
    else if (code > 0)
        snprintf(out, len, "%ld.%ld.%ld", code / 1000, code / 100 % 10, code % 100);
    else
        out[0] = '\0';
}

/* The row whose numbers carry the most digits: the largest size with both
 * bandwidths printed. NULL when there is none. */
static const struct fb_row *telling_row(const struct ncclt_record *r, const struct fb_place **place)
{
    const struct fb_row *best = NULL;
    for (size_t i = 0; i < r->nrows; i++) {
        const struct fb_place *p = r->rows[i].oop.present ? &r->rows[i].oop : &r->rows[i].ip;
        if (p->algbw_GBps > 0 && p->busbw_GBps > 0 && r->rows[i].count > 0 &&
            (best == NULL || r->rows[i].bytes > best->bytes)) {
            best = &r->rows[i];
            *place = p;
        }
    }
    return best;
}

/* Ranks as the device lines say: the highest rank listed plus one (an
 * excerpt may keep only the last line), 0 when none are listed. */
static long listed_ranks(const struct ncclt_record *r)
{
    long n = 0;
    for (size_t i = 0; i < r->ndevs; i++)
        if (r->devs[i].rank + 1 > n)
            n = r->devs[i].rank + 1;
    return n;
}

/* The ranks the table's figures are of: with NCCL_TESTS_SPLIT groups
 * ("Group N" on the device lines), rank 0's group; else every rank listed. */
static long table_ranks(const struct ncclt_record *r)
{
    long group = -1, n = 0;
    bool split = false;
    for (size_t i = 0; i < r->ndevs; i++) {
        if (r->devs[i].rank == 0)
            group = r->devs[i].group;
        split = split || r->devs[i].group != 0;
    }
    if (!split || group < 0 || (long)r->ndevs != listed_ranks(r))
        return listed_ranks(r);
    for (size_t i = 0; i < r->ndevs; i++)
        n += r->devs[i].group == group;
    return n;
}

static size_t element_size(const struct ncclt_record *r);
static size_t size_per_count(const struct fb_collective *c, size_t esz, long n);

/* A count per rank shows the ranks as size / (count x type size), where
 * the bus factor says nothing (hypercube's is 1); 0 when it does not. */
static long ranks_from_count(const struct ncclt_record *r, const struct fb_collective *c)
{
    const struct fb_place *p = NULL;
    const struct fb_row *row = telling_row(r, &p);
    size_t esz = element_size(r);
    if (row == NULL || esz == 0 || row->bytes % (row->count * esz) != 0)
        return 0;
    long n = (long)(row->bytes / (row->count * esz));
    return n > 1 && size_per_count(c, esz, n) == (size_t)n ? n : 0;
}

/* Without device lines the rank count still shows in busBW / algBW: the
 * collective's bus factor, inverted. */
static long ranks_from_factor(const struct ncclt_record *r)
{
    const struct fb_collective *c = fb_collective_named(r->collective);
    const struct fb_place *p = NULL;
    if (c == NULL || telling_row(r, &p) == NULL)
        return 0;
    long n = c->ranks_for_factor(p->busbw_GBps / p->algbw_GBps);
    if (n == 0)
        n = ranks_from_count(r, c);
    return n >= 1 && n < 1000000 ? n : 0;
}

/* busBW 0 at every size while algBW is not: the bus factor is 0, which
 * only one rank gives. */
static bool busbw_all_zero(const struct ncclt_record *r)
{
    bool moved = false;
    for (size_t i = 0; i < r->nrows; i++) {
        const struct fb_place *p = &r->rows[i].oop;
        if (p->present && p->busbw_GBps != 0)
            return false;
        moved = moved || (p->present && p->algbw_GBps > 0);
    }
    return moved;
}

/* Sizes the header's sweep plans; -1 when it cannot say (no header, or a
 * header whose numbers describe no sane sweep). */
static long planned_sizes(const struct ncclt_record *r)
{
    const unsigned long long limit = 1000000;
    if (!r->have_config || r->minbytes == 0 || r->maxbytes < r->minbytes || r->step == 0)
        return -1;
    unsigned long long n = 0;
    if (r->step_is_factor) {
        if (r->step < 2)
            return -1;
        for (unsigned long long s = r->minbytes; s <= r->maxbytes && n < limit; n++) {
            if (s > r->maxbytes / r->step)
                return (long)n + 1; /* the next step would pass maxBytes (or overflow) */
            s *= r->step;
        }
    } else {
        n = (r->maxbytes - r->minbytes) / r->step + 1;
    }
    return n < limit ? (long)n : -1;
}

static json_object *place_json(const struct fb_place *p)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "time_us", fb_json_number(p->present ? p->time_us : NAN));
    json_object_object_add(o, "time_us_mean", fb_json_number(p->present ? p->time_us : NAN));
    json_object_object_add(o, "time_us_min", NULL);
    json_object_object_add(o, "time_us_max", NULL);
    json_object_object_add(o, "algbw_GBps", fb_json_number(p->present ? p->algbw_GBps : NAN));
    json_object_object_add(o, "busbw_GBps", fb_json_number(p->present ? p->busbw_GBps : NAN));
    json_object_object_add(o, "wrong", p->present && p->wrong >= 0 ? json_object_new_int64(p->wrong) : NULL);
    return o;
}

static json_object *rows_json(const struct ncclt_record *r)
{
    json_object *rows = json_object_new_array();
    for (size_t i = 0; i < r->nrows; i++) {
        const struct fb_row *row = &r->rows[i];
        json_object *o = json_object_new_object();
        json_object_object_add(o, "bytes", json_object_new_int64((int64_t)row->bytes));
        json_object_object_add(o, "count", json_object_new_int64((int64_t)row->count));
        json_object_object_add(o, "run", json_object_new_int64(row->run));
        json_object_object_add(o, "iterations", json_object_new_int64(r->row_iters[i] > 0 ? r->row_iters[i] : 1));
        json_object_object_add(o, "out_of_place", place_json(&row->oop));
        json_object_object_add(o, "in_place", place_json(&row->ip));
        json_object_array_add(rows, o);
    }
    return rows;
}

/* The GPU's maker from its name ("AMD Instinct MI300X", "AMD Radeon AI PRO
 * R9700", "NVIDIA H100 80GB HBM3", "Tesla V100-SXM2-32GB"), else from the
 * tool that listed it: rccl-tests runs on HIP devices, nccl-tests on CUDA
 * devices. NULL for host memory. */
static const char *gpu_vendor(const struct ncclt_record *r, const struct ncclt_device *d)
{
    static const char *const amd[] = {"AMD", "Instinct", "Radeon"};
    if (d->host_memory)
        return NULL;
    for (size_t k = 0; k < sizeof amd / sizeof *amd; k++)
        if (strstr(d->name, amd[k]) != NULL)
            return "AMD";
    if (strstr(d->name, "NVIDIA") != NULL)
        return "NVIDIA";
    return r->rccl ? "AMD" : "NVIDIA";
}

/* The tool that printed the output: rccl-tests when it says so or lists
 * AMD GPUs (RCCL is the library nccl-tests' tables come from there),
 * fabric-coll on host memory, else nccl-tests. */
static const char *tool_name(const struct ncclt_record *r)
{
    if (r->ndevs > 0 && r->devs[0].host_memory)
        return "fabric-coll";
    for (size_t i = 0; i < r->ndevs; i++) {
        const char *v = gpu_vendor(r, &r->devs[i]);
        if (v != NULL && strcmp(v, "AMD") == 0)
            return "rccl-tests";
    }
    return r->rccl ? "rccl-tests" : "nccl-tests";
}

static json_object *devices_json(const struct ncclt_record *r, json_object *hosts, long *ranks_per_node)
{
    json_object *devs = json_object_new_array();
    *ranks_per_node = 0;
    for (size_t i = 0; i < r->ndevs; i++) {
        const struct ncclt_device *d = &r->devs[i];
        long local = 0;
        for (size_t k = 0; k < i; k++)
            local += strcmp(r->devs[k].host, d->host) == 0;
        if (local + 1 > *ranks_per_node)
            *ranks_per_node = local + 1;
        bool seen = false;
        for (size_t k = 0; k < json_object_array_length(hosts); k++)
            seen = seen || strcmp(json_object_get_string(json_object_array_get_idx(hosts, k)), d->host) == 0;
        if (!seen)
            json_object_array_add(hosts, json_object_new_string(d->host));
        json_object *o = json_object_new_object();
        json_object_object_add(o, "rank", json_object_new_int64(d->rank));
        json_object_object_add(o, "host", json_object_new_string(d->host));
        json_object_object_add(o, "local_rank", json_object_new_int64(local));
        json_object_object_add(o, "group", json_object_new_int64(d->group));
        json_object_object_add(o, "kind", json_object_new_string(d->host_memory ? "cpu" : "gpu"));
        json_object_object_add(o, "name", d->name[0] ? json_object_new_string(d->name) : NULL);
        const char *vendor = gpu_vendor(r, d);
        json_object_object_add(o, "vendor", vendor ? json_object_new_string(vendor) : NULL);
        json_object_object_add(o, "pci_bus_id", d->bus[0] && !d->host_memory ? json_object_new_string(d->bus) : NULL);
        json_object_object_add(o, "memory_bytes", NULL);
        json_object_array_add(devs, o);
    }
    return devs;
}

static json_object *config_json(const struct ncclt_record *r)
{
    json_object *c = json_object_new_object();
    if (!r->have_config)
        return c;
    json_object_object_add(c, "minbytes", json_object_new_int64((int64_t)r->minbytes));
    json_object_object_add(c, "maxbytes", json_object_new_int64((int64_t)r->maxbytes));
    json_object_object_add(c, r->step_is_factor ? "stepfactor" : "stepbytes", json_object_new_int64((int64_t)r->step));
    json_object_object_add(c, "iters", json_object_new_int64(r->iters));
    json_object_object_add(c, "warmup_iters", json_object_new_int64(r->warmup));
    json_object_object_add(c, "agg_iters", json_object_new_int64(r->agg));
    json_object_object_add(c, "check", json_object_new_int64(r->validation));
    json_object_object_add(c, "cudagraph", json_object_new_int64(r->graph));
    json_object_object_add(c, "nthreads", json_object_new_int64(r->nthreads));
    json_object_object_add(c, "ngpus", json_object_new_int64(r->ngpus));
    return c;
}

static const char *file_base(const char *name)
{
    const char *slash = strrchr(name, '/');
    return slash ? slash + 1 : name;
}

/* The size in bytes of the record's element type, 0 when unknown. */
static size_t element_size(const struct ncclt_record *r)
{
    int t = fb_dtype_parse(r->dtype);
    return t >= 0 ? fb_dtype_info((enum fb_dtype)t)->size : 0;
}

/* Elements of the requested size per element of count for c on n ranks:
 * 1, or n for the gathers, scatters and alltoalls (their count is per
 * rank). Asked of the table at a size every version's alignment leaves
 * alone, and checked as size = count x type size x that, which holds for
 * every nccl-tests version (the 16-byte alignment of newer ones included)
 * but alltoallv, whose size is its per-peer shares rounded down: that one
 * the table decides. 0 when unknown. */
static size_t size_per_count(const struct fb_collective *c, size_t esz, long n)
{
    if (esz == 0 || n < 1)
        return 0;
    struct fb_counts k = c->counts(esz * (size_t)n * 4096, esz, (int)n);
    return k.param > 0 ? (size_t)n * 4096 / k.param : 0;
}

/* Whether a row's count and size fit c on n ranks (true when unknown). */
static bool count_fits(const struct fb_collective *c, const struct fb_row *row, size_t esz, long n)
{
    size_t per = size_per_count(c, esz, n);
    if (per == 0 || row->count * esz * per == row->bytes)
        return true;
    struct fb_counts k = c->counts(row->count * esz * per, esz, (int)n);
    return k.param == row->count && k.bytes == row->bytes;
}

/* The rules released nccl-tests versions computed bandwidths by, with the
 * layouts each printed (docs/report.md, "How nccl-tests computed its
 * bandwidths"), today's first: a run is read by the first its layout
 * admits whose rule every row follows. */
#define LAYOUT(l) (1u << (l))
static const struct convention {
    enum fb_bw_rule rule;
    double time_scale; /* printed time x this = microseconds */
    unsigned layouts;  /* LAYOUT(enum ncclt_layout) of each it printed */
} conventions[] = {
    {FB_BW_RULE_TODAY, 1,
     LAYOUT(NCCLT_LAYOUT_NONE) | LAYOUT(NCCLT_LAYOUT_ERROR) | LAYOUT(NCCLT_LAYOUT_WRONG) | LAYOUT(NCCLT_LAYOUT_JSON)},
    /* 2019-03 to 2020-06: the gathers' algBW carried (n-1)/n. */
    {FB_BW_RULE_GATHER_2020, 1, LAYOUT(NCCLT_LAYOUT_NONE) | LAYOUT(NCCLT_LAYOUT_ERROR)},
    /* Before 2019-03: the same rule, times printed in ms. */
    {FB_BW_RULE_GATHER_2020, 1000, LAYOUT(NCCLT_LAYOUT_NONE) | LAYOUT(NCCLT_LAYOUT_2017)},
};
#define NCONVENTIONS (sizeof conventions / sizeof *conventions)

/* The rule a convention applies to c: its own, or today's where it only
 * changed other collectives. */
static enum fb_bw_rule rule_for(const struct fb_collective *c, const struct convention *v)
{
    return fb_coll_rule_differs(c, v->rule) ? v->rule : FB_BW_RULE_TODAY;
}

/* Whether convention k could have printed r's rows of c: its layout, and
 * no earlier convention that reads c the same way. */
static bool convention_applies(const struct ncclt_record *r, const struct fb_collective *c, size_t k)
{
    const struct convention *v = &conventions[k];
    if (!(v->layouts & LAYOUT(r->layout)))
        return false;
    for (size_t j = 0; j < k; j++)
        if ((conventions[j].layouts & LAYOUT(r->layout)) && conventions[j].time_scale == v->time_scale &&
            rule_for(c, &conventions[j]) == rule_for(c, v))
            return false;
    return true;
}

/* Whether busBW/algBW = f is c's bus share under a convention r's layout
 * admits, at n ranks (n 0: anywhere in the share's range). Printed numbers
 * have two decimals. */
static bool factor_fits(const struct ncclt_record *r, const struct fb_collective *c, double f, long n)
{
    const double tol = 0.02;
    for (size_t k = 0; k < NCONVENTIONS; k++) {
        if (!convention_applies(r, c, k))
            continue;
        enum fb_bw_rule rule = rule_for(c, &conventions[k]);
        double lo = fb_coll_bus_share(c, rule, 2), hi = fb_coll_bus_share(c, rule, 1 << 20);
        if (n > 1 ? fabs(fb_coll_bus_share(c, rule, (int)n) - f) <= tol * f + 0.005
                  : f >= lo * (1 - tol) - 0.005 && f <= hi * (1 + tol) + 0.005)
            return true;
    }
    return false;
}

/* Whether collective c could have printed this row: the count its size
 * gives and its bus factor at the rank count (with no device lines, the
 * rank count the count column implies, or anywhere in the factor's range),
 * its taking a reduction (the redop column: "none" or an operator) and a
 * root (the root column: -1 or a rank). Printed numbers have two decimals. */
static bool rows_fit(const struct fb_collective *c, const struct ncclt_record *r, const struct fb_row *row,
                     double f, long n)
{
    if (r->op[0] != '\0' && c->reduces != (strcmp(r->op, "none") != 0))
        return false;
    if (r->root_printed && c->rooted != (r->root >= 0))
        return false;
    size_t esz = element_size(r);
    if (n == 0 && esz > 0 && row->count * esz < row->bytes && row->bytes % (row->count * esz) == 0)
        n = (long)(row->bytes / (row->count * esz)); /* the gathers' count is per rank */
    if (n > 1 && !count_fits(c, row, esz, n))
        return false;
    return factor_fits(r, c, f, n);
}

/* The collective the rows prove when the output names none; NULL unless
 * exactly one fits. `what` says what decided, or which remain. */
static const struct fb_collective *infer_collective(const struct ncclt_record *r, char *what, size_t len)
{
    const struct fb_place *p = NULL;
    const struct fb_row *row = telling_row(r, &p);
    what[0] = '\0';
    if (row == NULL)
        return NULL;
    double f = p->busbw_GBps / p->algbw_GBps;
    long n = listed_ranks(r);
    const struct fb_collective *found = NULL;
    const struct fb_collective *fits[FB_NCOLLS];
    size_t nfit = 0;
    for (int i = 0; i < FB_NCOLLS; i++) {
        const struct fb_collective *c = fb_collective((enum fb_coll_id)i);
        if (rows_fit(c, r, row, f, n))
            fits[nfit++] = found = c;
    }
    if (nfit == 1) {
        snprintf(what, len, "busBW/algBW %.3f%s%s, redop %s%s", f, r->ndevs ? " on " : "",
                 r->ndevs ? "the listed ranks" : "", r->op[0] ? r->op : "not printed",
                 r->root_printed ? (r->root >= 0 ? ", a root" : ", no root") : "");
        return found;
    }
    size_t used = 0;
    for (size_t i = 0; i < nfit; i++)
        fb_strbuf_append(what, len, &used, "%s%s", i ? " or " : "", fits[i]->name);
    return NULL;
}

/* The collective from the output, --collective, the command line echoed
 * before the run, its file name, or what its rows prove, in that order. */
static enum fb_status settle_collective(struct ncclt_record *r, const char *name, const struct fb_import_opts *o,
                                        struct fb_err *err)
{
    if (r->collective[0] == '\0' && o->collective != NULL)
        snprintf(r->collective, sizeof r->collective, "%s", o->collective);
    if (r->collective[0] == '\0' && r->command_collective[0] != '\0')
        snprintf(r->collective, sizeof r->collective, "%s", r->command_collective);
    if (r->collective[0] != '\0' || ncclt_collective_in(name, r->collective, sizeof r->collective))
        return FB_OK;
    /* A run that failed or hung before its first row proves no collective;
     * it is still kept (its verdict needs none), the name left unknown. */
    if (r->nrows == 0) {
        ncclt_warn(r, "the output names no collective and has no rows: collective unknown");
        return FB_OK;
    }
    char what[256];
    const struct fb_collective *c = infer_collective(r, what, sizeof what);
    if (c != NULL) {
        snprintf(r->collective, sizeof r->collective, "%s", c->name);
        ncclt_warn(r, "collective inferred from the rows: %s (%s); give --collective NAME if that is wrong", c->name, what);
        return FB_OK;
    }
    return fb_fail(err, FB_ERR_INPUT, "%s does not say which collective it ran (no \"# Collective test starting\" line, no name in the file name%s%s%s); add --collective NAME",
                   name, what[0] ? ", and its rows fit " : "", what, what[0] ? " alike" : "");
}

static void printed_place(const struct fb_place *p, const struct ncclt_halves *h, struct fb_printed_place *out)
{
    out->present = p->present;
    out->time_us = (struct fb_printed){p->time_us, h->time};
    out->algbw = (struct fb_printed){p->algbw_GBps, h->algbw};
    out->busbw = (struct fb_printed){p->busbw_GBps, h->busbw};
}

/* The refusal of a row whose figures do not follow from each other. */
static enum fb_status figures_fault(const char *name, const char *where, const char *placement,
                                    const struct fb_collective *c, long n, const struct fb_row *row,
                                    const struct fb_place *p, const struct convention *v,
                                    const struct fb_figures_why *why, struct fb_err *err)
{
    char ranks[48] = "an unknown rank count";
    if (n > 0)
        snprintf(ranks, sizeof ranks, "%ld rank%s", n, n == 1 ? "" : "s");
    if (why->fault == FB_FIGURES_ABSURD)
        return fb_fail(err, FB_ERR_INPUT, "%s, %s: a bandwidth of %g GB/s %s is beyond any fabric (at most %g); the row is damaged",
                       name, where, fmax(p->algbw_GBps, p->busbw_GBps), placement, FB_FIGURE_ABSURD_GBPS);
    if (why->fault == FB_FIGURES_ALGBW)
        return fb_fail(err, FB_ERR_INPUT, "%s, %s: algBW %g %s does not follow from %llu bytes in %g us (%s on %s gives %.4g to %.4g GB/s); the row is damaged",
                       name, where, p->algbw_GBps, placement, row->bytes, p->time_us * v->time_scale, c->name, ranks,
                       why->lo, why->hi);
    return fb_fail(err, FB_ERR_INPUT, "%s, %s: busBW %.2f is not algBW %.2f x %.4f (the %s bus factor on %s) %s; the row is damaged",
                   name, where, p->busbw_GBps, p->algbw_GBps, why->share, c->name, ranks, placement);
}

/* Rows must be what the collective prints under convention v: the count
 * its size and type give on these ranks, and figures that follow from
 * each other (import_figures.h). A row that is not was cut, merged with
 * another line or edited, and a verdict on it would mislead; it is refused
 * with where it stands. */
static enum fb_status check_rows(const struct ncclt_record *r, const struct fb_collective *c, long n,
                                 const struct convention *v, const char *name, struct fb_err *err)
{
    size_t esz = element_size(r), per_count = size_per_count(c, esz, n);
    const struct fb_figures_rule rule = {c, rule_for(c, v), n, v->time_scale, r->time_is_cpu};
    for (size_t i = 0; i < r->nrows; i++) {
        const struct fb_row *row = &r->rows[i];
        char where[64];
        if (row->line > 0)
            snprintf(where, sizeof where, "line %ld", row->line);
        else if (r->layout == NCCLT_LAYOUT_JSON) /* one row per member of "results" */
            snprintf(where, sizeof where, "results[%zu] (%llu bytes)", i, row->bytes);
        else
            snprintf(where, sizeof where, "the row of %llu bytes", row->bytes);
        if (n > 0 && !count_fits(c, row, esz, n))
            return fb_fail(err, FB_ERR_INPUT, "%s, %s: count %llu does not fit %llu bytes of %s for %s on %ld ranks (%zu expected); the row is damaged",
                           name, where, row->count, row->bytes, r->dtype, c->name, n, (size_t)(row->bytes / esz / per_count));
        for (int k = 0; k < 2; k++) {
            const struct fb_place *p = k ? &row->ip : &row->oop;
            struct fb_printed_place pp;
            struct fb_figures_why why;
            printed_place(p, k ? &r->row_halves[i].ip : &r->row_halves[i].oop, &pp);
            if (fb_figures_check(&rule, row->bytes, &pp, &why) != FB_FIGURES_OK)
                return figures_fault(name, where, k ? "in place" : "out of place", c, n, row, p, v, &why, err);
        }
    }
    return FB_OK;
}

/* The convention the rows follow: the first the layout admits under which
 * every row checks. When none does, the first one's reason is the error. */
static enum fb_status settle_convention(const struct ncclt_record *r, const struct fb_collective *c, long n,
                                        const char *name, const struct convention **chosen, struct fb_err *err)
{
    struct fb_err first = {0};
    for (size_t k = 0; k < NCONVENTIONS; k++) {
        struct fb_err why = {0};
        if (!convention_applies(r, c, k))
            continue;
        if (check_rows(r, c, n, &conventions[k], name, &why) == FB_OK) {
            *chosen = &conventions[k];
            return FB_OK;
        }
        if (first.code == FB_OK)
            first = why;
    }
    if (first.code == FB_OK) /* no convention prints this layout: a bug */
        return fb_fail(err, FB_ERR_INTERNAL, "%s: no nccl-tests convention for its layout", name);
    return fb_fail(err, first.code, "%s", first.msg);
}

/* The rank count the rows are of, when the device lines list `listed`
 * and the rows do not follow from that many: busBW 0 at every size beside
 * a moving algBW is one rank; else busBW/algBW inverted. 0 when the rows
 * say nothing of it (a factor of 1, or no telling row). */
static long ranks_the_rows_show(const struct ncclt_record *r, const struct fb_collective *c)
{
    if (busbw_all_zero(r))
        return 1;
    const struct fb_place *p = NULL;
    return telling_row(r, &p) != NULL ? c->ranks_for_factor(p->busbw_GBps / p->algbw_GBps) : 0;
}

/* The convention of the rows on `ranks` ranks. When the device lines
 * listed them (`listed`) and the rows are of another count instead, the
 * table and the device list are not of one run: INVALID, not a damaged
 * row. So is a device list that is no whole number of processes of the
 * header's threads x GPUs. */
static enum fb_status settle_ranks(const struct ncclt_record *r, const struct fb_collective *c, long ranks,
                                   bool listed, const char *name, const struct convention **conv,
                                   struct fb_err *err)
{
    long per_process = r->nthreads * r->ngpus, all = listed_ranks(r);
    if (listed && r->have_config && per_process > 0 && (long)r->ndevs == all && all % per_process != 0)
        return fb_fail(err, FB_INVALID, "INVALID: %s: the header runs %ld GPU%s per process (nThread %ld x nGpus %ld), but the device lines list %ld rank%s: the header and the device list are not of one run (outputs mixed or edited); import the run's own complete output",
                       name, per_process, per_process == 1 ? "" : "s", r->nthreads, r->ngpus, all, all == 1 ? "" : "s");
    struct fb_err first = {0};
    enum fb_status st = settle_convention(r, c, ranks, name, conv, &first);
    if (st == FB_OK || !listed)
        return st == FB_OK ? FB_OK : fb_fail(err, first.code, "%s", first.msg);
    long shown = ranks_the_rows_show(r, c);
    struct fb_err other = {0};
    if (shown <= 0 || shown == ranks || settle_convention(r, c, shown, name, conv, &other) != FB_OK)
        return fb_fail(err, first.code, "%s", first.msg);
    return fb_fail(err, FB_INVALID, "INVALID: %s: the device lines list %ld rank%s, but the rows are what %ld rank%s give%s for %s: the table and the device list are not of one run (outputs of several runs mixed, several 1-rank processes, or an edited file); import the run's own complete output",
                   name, ranks, ranks == 1 ? "" : "s", shown, shown == 1 ? "" : "s",
                   shown == 1 ? " (busBW 0 at every size)" : " (busBW/algBW at the largest size)", c->name);
}

/* Rows printed under an older convention restated as today's, said in
 * warnings: times in us, and the gathers' algBW as size / time. busBW is
 * the same figure under every rule and stays as printed. */
static void restate_rows(struct ncclt_record *r, const struct fb_collective *c, long n, const struct convention *v)
{
    enum fb_bw_rule rule = rule_for(c, v);
    double was = n > 0 ? fb_coll_alg_share(c, rule, (int)n) : NAN, now = fb_coll_alg_share(c, FB_BW_RULE_TODAY, n > 0 ? (int)n : 2);
    for (size_t i = 0; i < r->nrows; i++) {
        struct fb_row *row = &r->rows[i];
        struct fb_place *places[2] = {&row->oop, &row->ip};
        for (int k = 0; k < 2; k++) {
            struct fb_place *p = places[k];
            p->time_us *= v->time_scale;
            if (rule == FB_BW_RULE_TODAY || isnan(p->algbw_GBps))
                continue;
            if (was > 0)
                p->algbw_GBps *= now / was;
            else if (p->time_us > 0)
                p->algbw_GBps = (double)row->bytes * now / (p->time_us * 1e3);
        }
    }
    if (v->time_scale != 1)
        ncclt_warn(r, "times printed in ms (the layout of nccl-tests before 2019-03): restated in us");
    if (rule != FB_BW_RULE_TODAY)
        ncclt_warn(r, "%s rows follow nccl-tests' rule before 2020-06 (algBW = size x (n-1)/n / time, busBW = algBW): "
                      "busBW kept as printed (today's rule gives the same figure), algBW restated as today's size / time",
                   c->name);
}

/* Finished: the footer was printed; or, with no footer, the sweep reached
 * the header's maxBytes (an excerpt with rows elided), or there is no
 * header either (an excerpt that never showed the plan to fall short of).
 * A failure line or no rows at all is never finished. */
static bool run_finished(const struct ncclt_record *r)
{
    if (r->finished)
        return true;
    if (r->nrows == 0 || r->fault[0] != '\0')
        return false;
    if (!r->have_config)
        return true;
    return r->maxbytes > 0 && r->rows[r->nrows - 1].bytes == r->maxbytes;
}

enum fb_status ncclt_build_doc(struct ncclt_record *r, const char *name, const struct fb_import_opts *o,
                               json_object **doc, struct fb_err *err)
{
    enum fb_status st = settle_collective(r, name, o, err);
    if (st != FB_OK)
        return st;
    const struct fb_collective *coll = fb_collective_named(r->collective);
    if (coll == NULL && r->collective[0] != '\0') {
        char names[FB_COLL_NAMES_MAX];
        fb_collective_names(names, sizeof names, ", ");
        return fb_fail(err, FB_ERR_USAGE, "collective '%s' is not one of %s", r->collective, names);
    }
    /* The device lines' count, else what busBW/algBW implies, else 1. */
    long listed = listed_ranks(r);
    long ranks = listed > 0 ? table_ranks(r) : r->ranks_known > 0 ? r->ranks_known : ranks_from_factor(r);
    bool lone = listed == 0 && ranks == 0 && busbw_all_zero(r);
    if (lone)
        ranks = 1;
    const struct convention *conv = &conventions[0];
    st = coll != NULL ? settle_ranks(r, coll, ranks, listed > 0, name, &conv, err) : FB_OK;
    if (st != FB_OK)
        return st;
    if (coll != NULL)
        restate_rows(r, coll, ranks, conv);
    bool finished = run_finished(r);

    json_object *d = json_object_new_object();
    json_object *hosts = json_object_new_array();
    long rpn = 0;
    json_object *devices = devices_json(r, hosts, &rpn);
    if (listed == 0 && r->ranks_known > 0) {
        ncclt_warn(r, "no device lines: ranks and nodes as the results file gives them");
    } else if (listed == 0) {
        ncclt_warn(r, "no device lines: rank count %s; nodes unknown",
                   lone ? "1, inferred from busBW 0 beside a non-zero algBW" : ranks > 0 ? "inferred from the rows (busBW/algBW, or size per count)" : "unknown, set to 1");
        if (ranks == 0)
            ranks = 1;
    }
    /* Hosts count nodes only when every rank is listed: an excerpt that
     * keeps the last device line shows one host of many. */
    bool all_listed = listed > 0 && (long)r->ndevs == listed;
    long nodes = all_listed ? (long)json_object_array_length(hosts) : r->nodes_known;
    if (!all_listed)
        rpn = r->ranks_per_node_known;
    const char *cluster = o->cluster;
    if (cluster == NULL)
        cluster = r->ndevs > 0 ? r->devs[0].host : file_base(name);
    if (json_object_array_length(hosts) == 0)
        json_object_array_add(hosts, json_object_new_string(cluster));
    char when[32];
    fb_utc_iso_at(o->mtime, when, sizeof when);
    ncclt_warn(r, "start_time is the imported file's modification time%s%s%s", r->started[0] ? " (the input says " : "",
               r->started, r->started[0] ? ", local time)" : "");
    if (!finished)
        ncclt_warn(r, "the output ends before the nccl-tests footer: the run did not finish");
    else if (!r->finished)
        ncclt_warn(r, "%s", r->have_config ? "no footer, but the rows reach the header's maxBytes: the sweep ran to its end (rows may be elided)"
                                           : "an excerpt without header or footer: judged on the rows it holds");

    json_object_object_add(d, "schema", json_object_new_string(FB_SCHEMA_NAME));
    json_object_object_add(d, "schema_version", json_object_new_int(FB_SCHEMA_VERSION));
    json_object_object_add(d, "kind", json_object_new_string("collective"));
    json_object_object_add(d, "complete", json_object_new_boolean(finished));
    json_object *fault = NULL;
    if (r->fault[0] != '\0') {
        fault = json_object_new_object();
        json_object_object_add(fault, "status", json_object_new_string("runtime"));
        json_object_object_add(fault, "message", json_object_new_string(r->fault));
        json_object_object_add(fault, "rank", NULL);
        json_object_object_add(fault, "host", NULL);
    }
    json_object_object_add(d, "fault", fault);
    json_object *tool = json_object_new_object();
    const char *tool_is = tool_name(r);
    json_object_object_add(tool, "name", json_object_new_string(tool_is));
    json_object_object_add(tool, "version", json_object_new_string(r->tool_version[0] ? r->tool_version : "unknown"));
    json_object_object_add(tool, "invoked_as", json_object_new_string(r->invoked_as));
    json_object_object_add(d, "tool", tool);
    json_object_object_add(d, "cluster", json_object_new_string(cluster));
    json_object_object_add(d, "start_time", json_object_new_string(when));
    json_object_object_add(d, "end_time", finished ? json_object_new_string(when) : NULL);
    json_object_object_add(d, "hosts", hosts);
    json_object_object_add(d, "env", r->env ? json_object_get(r->env) : json_object_new_object());
    json_object_object_add(d, "warnings", json_object_get(r->warnings));
    json_object_object_add(d, "collective", coll != NULL ? json_object_new_string(r->collective) : NULL);
    bool host_memory = r->ndevs > 0 && r->devs[0].host_memory;
    json_object_object_add(d, "backend", json_object_new_string(host_memory ? "mpi" : "nccl"));
    json_object_object_add(d, "dtype", json_object_new_string(r->dtype[0] ? r->dtype : "float"));
    json_object_object_add(d, "op", json_object_new_string(r->op[0] ? r->op : "none"));
    json_object_object_add(d, "root", json_object_new_int64(r->root));
    json_object_object_add(d, "time_reduction", json_object_new_string(r->time_reduction));
    json_object_object_add(d, "config", config_json(r));
    json_object *topo = json_object_new_object();
    json_object_object_add(topo, "ranks", json_object_new_int64(ranks));
    json_object_object_add(topo, "nodes", nodes > 0 ? json_object_new_int64(nodes) : NULL);
    json_object_object_add(topo, "ranks_per_node", rpn > 0 ? json_object_new_int64(rpn) : NULL);
    json_object_object_add(d, "topology", topo);
    json_object_object_add(d, "devices", devices);
    json_object *versions = json_object_new_object();
    json_object_object_add(versions, "mpi", NULL);
    bool rccl = strcmp(tool_is, "rccl-tests") == 0;
    json_object_object_add(versions, "nccl", r->nccl_version[0] && !rccl ? json_object_new_string(r->nccl_version) : NULL);
    if (rccl) {
        /* RCCL numbers its releases as NCCL's; -J's nccl_version is RCCL's then. */
        const char *lib = r->rccl_version[0] ? r->rccl_version : r->nccl_version;
        json_object_object_add(versions, "rccl", lib[0] ? json_object_new_string(lib) : NULL);
        json_object_object_add(versions, "hip", r->hip_version[0] ? json_object_new_string(r->hip_version) : NULL);
        json_object_object_add(versions, "rocm", r->rocm_version[0] ? json_object_new_string(r->rocm_version) : NULL);
    }
    json_object_object_add(versions, "cuda_runtime", NULL);
    json_object_object_add(versions, "cuda_driver", NULL);
    json_object_object_add(d, "versions", versions);
    json_object_object_add(d, "transport", r->transport ? json_object_get(r->transport) : NULL);
    json_object_object_add(d, "rows", rows_json(r));
    struct fb_summary s;
    fb_summary_compute(r->rows, r->nrows, &s);
    /* Unfinished: what the header planned for every repetition seen. */
    long planned = planned_sizes(r);
    long runs = r->nrows > 0 ? r->rows[r->nrows - 1].run + 1 : 1;
    if (finished || planned < 0 || runs > 1000 || planned * runs < (long)r->nrows)
        planned = (long)r->nrows;
    else
        planned *= runs;
    json_object_object_add(d, "summary", fb_summary_json(&s, planned, (long)r->nrows));
    /* Features of fabric-coll runs that an imported log does not have. */
    json_object_object_add(d, "time_budget_s", NULL);
    json_object_object_add(d, "early_stop", NULL);
    json_object_object_add(d, "stability", NULL);
    json_object *imp = json_object_new_object();
    json_object_object_add(imp, "format", json_object_new_string(r->format));
    json_object_object_add(imp, "file", json_object_new_string(name));
    json_object_object_add(imp, "avg_bus_bandwidth_GBps", fb_json_number(r->avg_footer));
    json_object_object_add(imp, "out_of_bounds", r->oob >= 0 ? json_object_new_int64(r->oob) : NULL);
    json_object_object_add(imp, "importer", json_object_new_string("fabric-report " FB_VERSION));
    json_object_object_add(d, "import", imp);
    *doc = d;
    return FB_OK;
}
