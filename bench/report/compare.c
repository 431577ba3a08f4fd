#include "report/compare.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonio.h"
#include "core/units.h"

#define CELL 64

struct column {
    const struct fb_result *r;
    char label[96];
    struct fb_point *pts;
    size_t npts;
    struct fb_summary s;
};

struct table {
    struct column *col;
    size_t ncol, base;
    unsigned long long *sizes;
    size_t nsizes;
    double noise;
    bool mixed;
};

enum fb_status fb_result_set_filter(struct fb_result_set *set, const char *collective, struct fb_err *err)
{
    size_t kept = 0;
    for (size_t i = 0; i < set->n; i++) {
        if (strcmp(set->r[i].collective, collective) == 0)
            set->r[kept++] = set->r[i];
        else
            fb_result_free(&set->r[i]);
    }
    set->n = kept;
    if (kept == 0)
        return fb_fail(err, FB_ERR_INPUT, "no %s results among the inputs", collective);
    return FB_OK;
}

void fb_result_set_drop_unmeasured(struct fb_result_set *set, struct fb_str *notes)
{
    size_t kept = 0;
    for (size_t i = 0; i < set->n; i++) {
        if (set->r[i].nrows > 0) {
            set->r[kept++] = set->r[i];
            continue;
        }
        fb_str_addf(notes, "%s: no size measured (%s); passed over\n", set->r[i].path,
                    set->r[i].complete ? "no rows" : "the run stopped before its first size");
        fb_result_free(&set->r[i]);
    }
    set->n = kept;
}

static bool same_series(const struct fb_result *a, const struct fb_result *b)
{
    return strcmp(a->cluster, b->cluster) == 0 && strcmp(a->collective, b->collective) == 0;
}

/* A result and its place in the set, for sorting. */
struct ranked {
    const struct fb_result *r;
    size_t at;
};

/* Each series together, its newest first: cluster, collective, then the
 * later start (ISO 8601 UTC stamps sort as text; a missing one counts as
 * oldest), then the later in the set. */
static int newest_first(const void *a, const void *b)
{
    const struct ranked *x = a, *y = b;
    int c = strcmp(x->r->cluster, y->r->cluster);
    if (c == 0)
        c = strcmp(x->r->collective, y->r->collective);
    if (c == 0)
        c = strcmp(y->r->start_time ? y->r->start_time : "", x->r->start_time ? x->r->start_time : "");
    if (c == 0)
        c = (x->at < y->at) - (x->at > y->at);
    return c;
}

/* By sorting, not by holding every result against every other: a tree of
 * 20,000 runs is judged in milliseconds, not minutes. */
bool fb_result_set_mark_latest(const struct fb_result_set *set, bool *keep)
{
    struct ranked *order = malloc((set->n ? set->n : 1) * sizeof *order);
    if (order == NULL)
        return false;
    for (size_t i = 0; i < set->n; i++)
        order[i] = (struct ranked){&set->r[i], i};
    qsort(order, set->n, sizeof *order, newest_first);
    for (size_t k = 0; k < set->n; k++)
        keep[order[k].at] = k == 0 || !same_series(order[k - 1].r, order[k].r);
    free(order);
    return true;
}

void fb_result_set_latest(struct fb_result_set *set)
{
    /* Decide for every result first, then drop: a freed result can no
     * longer be compared with. */
    bool *keep = calloc(set->n ? set->n : 1, sizeof *keep);
    if (keep == NULL || !fb_result_set_mark_latest(set, keep)) {
        free(keep);
        return; /* keeping everything is a correct, if longer, answer */
    }
    size_t kept = 0;
    for (size_t i = 0; i < set->n; i++) {
        if (keep[i])
            set->r[kept++] = set->r[i];
        else
            fb_result_free(&set->r[i]);
    }
    set->n = kept;
    free(keep);
}

enum fb_status fb_result_set_same_collective(const struct fb_result_set *set, struct fb_err *err)
{
    for (size_t i = 1; i < set->n; i++) {
        if (strcmp(set->r[i].collective, set->r[0].collective) != 0)
            return fb_fail(err, FB_ERR_INPUT,
                           "results of different collectives: %s is %s, %s is %s; pick one with --collective NAME (or --allow-mixed to compare anyway)",
                           set->r[0].path, set->r[0].collective, set->r[i].path, set->r[i].collective);
    }
    return FB_OK;
}

static const struct fb_point *point_at(const struct column *c, unsigned long long bytes)
{
    for (size_t i = 0; i < c->npts; i++)
        if (c->pts[i].bytes == bytes)
            return &c->pts[i];
    return NULL;
}

static double spread(const struct fb_point *p)
{
    return p != NULL && p->best > 0 ? (p->run_max - p->run_min) / p->best : 0;
}

/* The band a ratio must leave to be flagged: the requested noise, widened
 * to the spread the repetitions of either run showed at that size. */
static double band_at(const struct table *t, size_t k, unsigned long long bytes)
{
    double b = t->noise;
    b = fmax(b, spread(point_at(&t->col[t->base], bytes)));
    b = fmax(b, spread(point_at(&t->col[k], bytes)));
    return b;
}

static const char *flag_for(double ratio, double band)
{
    if (isnan(ratio))
        return "";
    if (ratio < 1 - band)
        return "-";
    if (ratio > 1 + band)
        return "+";
    return "";
}

static double ratio_of(double v, double base)
{
    return !isnan(v) && !isnan(base) && base > 0 ? v / base : NAN;
}

static int cmp_u64(const void *a, const void *b)
{
    unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
    return x < y ? -1 : x > y;
}

static size_t pick_baseline(const struct table *t, const char *want, struct fb_err *err)
{
    if (want == NULL)
        return 0;
    char *end = NULL;
    long idx = strtol(want, &end, 10);
    if (end != want && *end == '\0') {
        if (idx < 1 || (size_t)idx > t->ncol)
            return fb_fail(err, FB_ERR_USAGE, "--baseline %s: there are %zu results, give 1..%zu or a cluster name", want, t->ncol, t->ncol), (size_t)-1;
        return (size_t)idx - 1;
    }
    for (size_t i = 0; i < t->ncol; i++) {
        const char *path = t->col[i].r->path, *slash = strrchr(path, '/');
        if (strcmp(t->col[i].label, want) == 0 || strcmp(t->col[i].r->cluster, want) == 0 ||
            strcmp(path, want) == 0 || (slash != NULL && strcmp(slash + 1, want) == 0))
            return i;
    }
    fb_fail(err, FB_ERR_USAGE, "--baseline %s matches no result (give its position 1..%zu, cluster name or file)", want, t->ncol);
    return (size_t)-1;
}

static void table_free(struct table *t)
{
    for (size_t i = 0; i < t->ncol; i++)
        free(t->col[i].pts);
    free(t->col);
    free(t->sizes);
}

static enum fb_status table_build(const struct fb_result_set *set, const struct fb_compare_opts *o,
                                  struct table *t, struct fb_err *err)
{
    memset(t, 0, sizeof *t);
    t->noise = o->noise;
    t->col = calloc(set->n, sizeof *t->col);
    if (t->col == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory comparing results");
    t->ncol = set->n;
    size_t total = 0;
    for (size_t i = 0; i < set->n; i++) {
        struct column *c = &t->col[i];
        c->r = &set->r[i];
        enum fb_status st = fb_result_points(c->r, &c->pts, &c->npts, err);
        if (st != FB_OK)
            return st;
        fb_summary_compute(c->r->rows, c->r->nrows, &c->s);
        total += c->npts;
        bool dup = false;
        for (size_t k = 0; k < set->n; k++)
            dup = dup || (k != i && strcmp(set->r[k].cluster, c->r->cluster) == 0);
        if (dup)
            snprintf(c->label, sizeof c->label, "%.60s#%zu", c->r->cluster, i + 1);
        else
            snprintf(c->label, sizeof c->label, "%.90s", c->r->cluster);
        if (strcmp(c->r->collective, set->r[0].collective) != 0)
            t->mixed = true;
    }
    t->sizes = calloc(total ? total : 1, sizeof *t->sizes);
    if (t->sizes == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory comparing results");
    for (size_t i = 0; i < t->ncol; i++)
        for (size_t k = 0; k < t->col[i].npts; k++)
            t->sizes[t->nsizes++] = t->col[i].pts[k].bytes;
    qsort(t->sizes, t->nsizes, sizeof *t->sizes, cmp_u64);
    size_t u = 0;
    for (size_t i = 0; i < t->nsizes; i++)
        if (u == 0 || t->sizes[u - 1] != t->sizes[i])
            t->sizes[u++] = t->sizes[i];
    t->nsizes = u;
    t->base = pick_baseline(t, o->baseline, err);
    return t->base == (size_t)-1 ? err->code : FB_OK;
}

/* Summary lines of the table: label, value per column. */
enum summary_kind { SUM_PEAK, SUM_LARGEST, SUM_AVG_1M, SUM_AVG_ALL, SUM_COUNT };

static const char *summary_label(enum summary_kind k)
{
    static const char *const labels[] = {"peak", "at largest", "avg >= 1 MiB", "avg (nccl-tests)"};
    return labels[k];
}

static double summary_value(const struct column *c, enum summary_kind k)
{
    switch (k) {
    case SUM_PEAK: return c->s.peak_busbw;
    case SUM_LARGEST: return c->s.busbw_at_largest;
    case SUM_AVG_1M: return c->s.avg_busbw_ge_1MiB;
    default: return c->s.avg_busbw;
    }
}

/* Two decimals as nccl-tests prints, but small values keep three
 * significant digits: 0.0043 GB/s is not 0.00. */
static void fmt_value(double v, char *buf, size_t len)
{
    if (isnan(v))
        snprintf(buf, len, "-");
    else if (v >= 1 || v == 0)
        snprintf(buf, len, "%.2f", v);
    else
        snprintf(buf, len, "%.3g", v);
}

static void fmt_ratio(double ratio, const char *flag, char *buf, size_t len)
{
    if (isnan(ratio))
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.2f%s%s", ratio, flag[0] ? " " : "", flag);
}

/* Text: every line a "# " comment; Markdown: a sentence, then a list. */
static void heading(const struct table *t, struct fb_str *out, bool markdown)
{
    const struct column *b = &t->col[t->base];
    const char *prefix = markdown ? "" : "# ";
    fb_str_addf(out, "%s%s busBW in GB/s (best of out-of-place and in-place); ratios against [%zu] %s; flagged: - slower, + faster beyond the noise band (+-%.0f%%, wider where repetitions spread more)\n",
                prefix, t->mixed ? "MIXED COLLECTIVES: ratios compare different operations;" : b->r->collective,
                t->base + 1, b->label, t->noise * 100);
    if (markdown)
        fb_str_addf(out, "\n");
    prefix = markdown ? "- " : "# ";
    for (size_t i = 0; i < t->ncol; i++) {
        const struct fb_result *r = t->col[i].r;
        fb_str_addf(out, "%s[%zu] %s: %s, %s, %ld rank%s on %ld node%s, %s%s%s\n", prefix, i + 1, t->col[i].label, r->path,
                    r->collective, r->ranks, r->ranks == 1 ? "" : "s", r->nodes, r->nodes == 1 ? "" : "s",
                    r->backend ? r->backend : "?", r->net ? ", net " : "", r->net ? r->net : "");
    }
}

/* One line of cells per size and summary entry, shared by text and Markdown. */
static void cells_for_size(const struct table *t, unsigned long long bytes, char cells[][CELL])
{
    const struct fb_point *bp = point_at(&t->col[t->base], bytes);
    size_t c = 0;
    fb_format_size(bytes, cells[c++], CELL);
    for (size_t i = 0; i < t->ncol; i++) {
        const struct fb_point *p = point_at(&t->col[i], bytes);
        fmt_value(p ? p->best : NAN, cells[c++], CELL);
        if (i == t->base)
            continue;
        double ratio = ratio_of(p ? p->best : NAN, bp ? bp->best : NAN);
        fmt_ratio(ratio, flag_for(ratio, band_at(t, i, bytes)), cells[c++], CELL);
    }
}

static void cells_for_summary(const struct table *t, enum summary_kind k, char cells[][CELL])
{
    size_t c = 0;
    snprintf(cells[c++], CELL, "%s", summary_label(k));
    double base = summary_value(&t->col[t->base], k);
    for (size_t i = 0; i < t->ncol; i++) {
        double v = summary_value(&t->col[i], k);
        fmt_value(v, cells[c++], CELL);
        if (i == t->base)
            continue;
        double ratio = ratio_of(v, base);
        fmt_ratio(ratio, flag_for(ratio, t->noise), cells[c++], CELL);
    }
}

static size_t ncells(const struct table *t)
{
    return 1 + t->ncol + (t->ncol - 1);
}

static void header_cells(const struct table *t, char cells[][CELL])
{
    size_t c = 0;
    snprintf(cells[c++], CELL, "size");
    for (size_t i = 0; i < t->ncol; i++) {
        snprintf(cells[c++], CELL, "[%zu] %.40s", i + 1, t->col[i].label);
        if (i != t->base)
            snprintf(cells[c++], CELL, "ratio %zu/%zu", i + 1, t->base + 1);
    }
}

static void emit_row(struct fb_str *out, char cells[][CELL], size_t n, const size_t *width, bool markdown)
{
    for (size_t i = 0; i < n; i++) {
        if (markdown)
            fb_str_addf(out, "| %s ", cells[i]);
        else
            fb_str_addf(out, "%s%*s", i ? "  " : "", (int)width[i], cells[i]);
    }
    fb_str_addf(out, markdown ? "|\n" : "\n");
}

static void render_table(const struct table *t, struct fb_str *out, bool markdown)
{
    size_t n = ncells(t);
    char (*cells)[CELL] = calloc(n, CELL);
    size_t *width = calloc(n, sizeof *width);
    if (cells == NULL || width == NULL) {
        out->oom = true;
        free(cells);
        free(width);
        return;
    }
    /* Widths from every line first, so columns line up. */
    header_cells(t, cells);
    for (size_t i = 0; i < n; i++)
        width[i] = strlen(cells[i]);
    for (size_t s = 0; s < t->nsizes; s++) {
        cells_for_size(t, t->sizes[s], cells);
        for (size_t i = 0; i < n; i++)
            width[i] = width[i] > strlen(cells[i]) ? width[i] : strlen(cells[i]);
    }
    for (int k = 0; k < SUM_COUNT; k++) {
        cells_for_summary(t, (enum summary_kind)k, cells);
        for (size_t i = 0; i < n; i++)
            width[i] = width[i] > strlen(cells[i]) ? width[i] : strlen(cells[i]);
    }
    heading(t, out, markdown);
    if (markdown)
        fb_str_addf(out, "\n");
    header_cells(t, cells);
    emit_row(out, cells, n, width, markdown);
    if (markdown) {
        for (size_t i = 0; i < n; i++)
            fb_str_addf(out, "| %s ", i == 0 ? "---:" : "---:");
        fb_str_addf(out, "|\n");
    }
    for (size_t s = 0; s < t->nsizes; s++) {
        cells_for_size(t, t->sizes[s], cells);
        emit_row(out, cells, n, width, markdown);
    }
    if (!markdown)
        fb_str_addf(out, "\n");
    for (int k = 0; k < SUM_COUNT; k++) {
        cells_for_summary(t, (enum summary_kind)k, cells);
        emit_row(out, cells, n, width, markdown);
    }
    free(cells);
    free(width);
}

static void csv_field(struct fb_str *out, const char *s)
{
    if (strpbrk(s, ",\"\n") == NULL) {
        fb_str_addf(out, "%s", s);
        return;
    }
    fb_str_addf(out, "\"");
    for (const char *c = s; *c; c++)
        fb_str_addf(out, *c == '"' ? "\"\"" : "%c", *c);
    fb_str_addf(out, "\"");
}

static void render_csv(const struct table *t, struct fb_str *out)
{
    fb_str_addf(out, "bytes");
    for (size_t i = 0; i < t->ncol; i++) {
        char name[160];
        snprintf(name, sizeof name, "%s busbw_GBps", t->col[i].label);
        fb_str_addf(out, ",");
        csv_field(out, name);
        if (i == t->base)
            continue;
        snprintf(name, sizeof name, "%s ratio", t->col[i].label);
        fb_str_addf(out, ",");
        csv_field(out, name);
        snprintf(name, sizeof name, "%s flag", t->col[i].label);
        fb_str_addf(out, ",");
        csv_field(out, name);
    }
    fb_str_addf(out, "\n");
    for (size_t s = 0; s < t->nsizes; s++) {
        unsigned long long bytes = t->sizes[s];
        const struct fb_point *bp = point_at(&t->col[t->base], bytes);
        fb_str_addf(out, "%llu", bytes);
        for (size_t i = 0; i < t->ncol; i++) {
            const struct fb_point *p = point_at(&t->col[i], bytes);
            if (p != NULL)
                fb_str_addf(out, ",%.6g", p->best);
            else
                fb_str_addf(out, ",");
            if (i == t->base)
                continue;
            double ratio = ratio_of(p ? p->best : NAN, bp ? bp->best : NAN);
            if (isnan(ratio))
                fb_str_addf(out, ",,");
            else
                fb_str_addf(out, ",%.4f,%s", ratio, flag_for(ratio, band_at(t, i, bytes)));
        }
        fb_str_addf(out, "\n");
    }
}

static json_object *flag_json(double ratio, double band)
{
    return isnan(ratio) ? NULL : json_object_new_string(flag_for(ratio, band));
}

static void render_json(const struct table *t, struct fb_str *out)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "schema", json_object_new_string("fabric-bench.report-compare"));
    json_object_object_add(o, "schema_version", json_object_new_int(1));
    json_object_object_add(o, "collective", t->mixed ? NULL : json_object_new_string(t->col[0].r->collective));
    json_object_object_add(o, "mixed_collectives", json_object_new_boolean(t->mixed));
    json_object_object_add(o, "baseline_index", json_object_new_int64((int64_t)t->base));
    json_object_object_add(o, "noise_band", fb_json_number(t->noise));
    json_object *results = json_object_new_array();
    for (size_t i = 0; i < t->ncol; i++) {
        const struct fb_result *r = t->col[i].r;
        json_object *e = json_object_new_object();
        json_object_object_add(e, "label", json_object_new_string(t->col[i].label));
        json_object_object_add(e, "file", json_object_new_string(r->path));
        json_object_object_add(e, "cluster", json_object_new_string(r->cluster));
        json_object_object_add(e, "collective", json_object_new_string(r->collective));
        json_object_object_add(e, "backend", r->backend ? json_object_new_string(r->backend) : NULL);
        json_object_object_add(e, "ranks", json_object_new_int64(r->ranks));
        json_object_object_add(e, "nodes", json_object_new_int64(r->nodes));
        json_object_object_add(e, "net", r->net ? json_object_new_string(r->net) : NULL);
        json_object_object_add(e, "complete", json_object_new_boolean(r->complete));
        json_object_object_add(e, "summary", fb_summary_json(&t->col[i].s, r->sizes_planned, r->sizes_done));
        json_object_array_add(results, e);
    }
    json_object_object_add(o, "results", results);
    json_object *sizes = json_object_new_array();
    for (size_t s = 0; s < t->nsizes; s++) {
        unsigned long long bytes = t->sizes[s];
        const struct fb_point *bp = point_at(&t->col[t->base], bytes);
        json_object *row = json_object_new_object(), *bw = json_object_new_array();
        json_object *ratio = json_object_new_array(), *flag = json_object_new_array();
        for (size_t i = 0; i < t->ncol; i++) {
            const struct fb_point *p = point_at(&t->col[i], bytes);
            double r = ratio_of(p ? p->best : NAN, bp ? bp->best : NAN);
            json_object_array_add(bw, p ? fb_json_number(p->best) : NULL);
            json_object_array_add(ratio, fb_json_number(r));
            json_object_array_add(flag, flag_json(r, band_at(t, i, bytes)));
        }
        json_object_object_add(row, "bytes", json_object_new_int64((int64_t)bytes));
        json_object_object_add(row, "busbw_GBps", bw);
        json_object_object_add(row, "ratio", ratio);
        json_object_object_add(row, "flag", flag);
        json_object_array_add(sizes, row);
    }
    json_object_object_add(o, "sizes", sizes);
    char *text = fb_json_text(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
    if (text != NULL)
        fb_str_addf(out, "%s", text);
    else
        out->oom = true;
    free(text);
    json_object_put(o);
}

enum fb_status fb_compare(const struct fb_result_set *set, const struct fb_compare_opts *o,
                          struct fb_str *out, struct fb_err *err)
{
    if (set->n == 0)
        return fb_fail(err, FB_ERR_INPUT, "nothing to compare: no results given");
    if (!o->allow_mixed) {
        enum fb_status st = fb_result_set_same_collective(set, err);
        if (st != FB_OK)
            return st;
    }
    struct table t;
    enum fb_status st = table_build(set, o, &t, err);
    if (st == FB_OK) {
        switch (o->format) {
        case FB_CMP_CSV: render_csv(&t, out); break;
        case FB_CMP_JSON: render_json(&t, out); break;
        case FB_CMP_MARKDOWN: render_table(&t, out, true); break;
        default: render_table(&t, out, false); break;
        }
        if (out->oom)
            st = fb_fail(err, FB_ERR_INTERNAL, "out of memory writing the comparison");
    }
    table_free(&t);
    return st;
}
