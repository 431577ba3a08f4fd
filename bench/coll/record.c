#include "coll/record.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/envelope.h"
#include "core/jsonio.h"

#define MIB (1ULL << 20)

enum fb_status fb_record_new(struct fb_record *rec, const char *path, const char *tool,
                             const char *invoked_as, const char *cluster, struct fb_err *err)
{
    memset(rec, 0, sizeof *rec);
    if (snprintf(rec->path, sizeof rec->path, "%s", path) >= (int)sizeof rec->path)
        return fb_fail(err, FB_ERR_IO, "results path too long: %s", path);
    struct fb_envelope_info info = {.kind = "collective", .tool = tool, .invoked_as = invoked_as,
                                    .cluster = cluster, .running = 1};
    rec->doc = fb_envelope_new(&info);
    rec->rows = json_object_new_array();
    json_object_object_add(rec->doc, "rows", rec->rows);
    return FB_OK;
}

/* -I 1: the summary and every iteration's time (nccl-tests' key names,
 * writePerIterReport in src/util.cu). */
static json_object *per_iter_json(const struct fb_per_iter *it)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "skipped_iterations", json_object_new_int64(it->skipped));
    json_object_object_add(o, "min_us", fb_json_number(it->stats.min));
    json_object_object_add(o, "max_us", fb_json_number(it->stats.max));
    json_object_object_add(o, "avg_us", fb_json_number(it->stats.avg));
    json_object_object_add(o, "p50_us", fb_json_number(it->stats.p50));
    json_object_object_add(o, "p95_us", fb_json_number(it->stats.p95));
    json_object_object_add(o, "p99_us", fb_json_number(it->stats.p99));
    json_object_object_add(o, "stdev_us", fb_json_number(it->stats.stdev));
    json_object_object_add(o, "cv_pct", fb_json_number(it->stats.cv_pct));
    json_object *times = json_object_new_array_ext((int)it->n);
    for (long i = 0; i < it->n; i++)
        json_object_array_add(times, fb_json_number(it->times_us[i]));
    json_object_object_add(o, "times_us", times);
    return o;
}

static json_object *placement_json(const struct fb_measurement *r)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "time_us", fb_json_number(r->time_us));
    json_object_object_add(o, "time_us_mean", fb_json_number(r->time_us_mean));
    json_object_object_add(o, "time_us_min", fb_json_number(r->time_us_min));
    json_object_object_add(o, "time_us_max", fb_json_number(r->time_us_max));
    json_object_object_add(o, "algbw_GBps", fb_json_number(r->algbw_GBps));
    json_object_object_add(o, "busbw_GBps", fb_json_number(r->busbw_GBps));
    json_object_object_add(o, "wrong", r->wrong >= 0 ? json_object_new_int64(r->wrong) : NULL);
    json_object_object_add(o, "cpu_time_us", fb_json_number(r->cpu_time_us));
    if (r->iter.times_us != NULL)
        json_object_object_add(o, "per_iter", per_iter_json(&r->iter));
    return o;
}

static json_object *row_json(const struct fb_call *call, int run, long iterations,
                             const struct fb_measurement *oop, const struct fb_measurement *ip)
{
    json_object *row = json_object_new_object();
    json_object_object_add(row, "bytes", json_object_new_uint64(call->counts.bytes));
    json_object_object_add(row, "count", json_object_new_uint64(call->counts.param));
    /* What the table's type, redop and root columns say, so rows of a
     * -d all / -o all / -r all run tell apart. */
    json_object_object_add(row, "type", json_object_new_string(fb_dtype_info(call->dtype)->name));
    json_object_object_add(row, "redop", json_object_new_string(call->coll->reduces ? fb_redop_name(call->op) : "none"));
    json_object_object_add(row, "root", json_object_new_int(call->coll->rooted ? call->root : -1));
    json_object_object_add(row, "run", json_object_new_int(run));
    json_object_object_add(row, "iterations", json_object_new_int64(iterations));
    json_object_object_add(row, "out_of_place", placement_json(oop));
    json_object_object_add(row, "in_place", placement_json(ip));
    return row;
}

void fb_record_add_row(struct fb_record *rec, const struct fb_call *call, int run, long iterations,
                       const struct fb_measurement *oop, const struct fb_measurement *ip)
{
    json_object_array_add(rec->rows, row_json(call, run, iterations, oop, ip));
}

/* split.groups[], or NULL when the run has no rank groups. */
static json_object *split_groups(const struct fb_record *rec)
{
    json_object *split = NULL, *groups = NULL;
    if (!json_object_object_get_ex(rec->doc, "split", &split) || split == NULL ||
        !json_object_object_get_ex(split, "groups", &groups))
        return NULL;
    return groups;
}

void fb_record_add_group_row(struct fb_record *rec, int group, const struct fb_call *call, int run,
                             long iterations, const struct fb_measurement *oop, const struct fb_measurement *ip)
{
    json_object *groups = split_groups(rec), *rows = NULL;
    json_object *g = groups ? json_object_array_get_idx(groups, (size_t)group) : NULL;
    if (g != NULL && json_object_object_get_ex(g, "rows", &rows))
        json_object_array_add(rows, row_json(call, run, iterations, oop, ip));
}

static void add_nonempty(json_object *o, const char *key, const char *value)
{
    if (value[0] != '\0')
        json_object_object_add(o, key, json_object_new_string(value));
}

void fb_record_runtime_source(struct fb_record *rec, const struct fb_runtime_source *src)
{
    if (!src->given) {
        json_object_object_add(rec->doc, "runtime_source", NULL);
        return;
    }
    json_object *o = json_object_new_object();
    json_object_object_add(o, "origin", json_object_new_string(src->delivered ? "delivered" : "fabric-bench"));
    add_nonempty(o, "kind", src->kind);
    add_nonempty(o, "namespace", src->ns);
    add_nonempty(o, "name", src->name);
    if (src->generation[0] != '\0')
        json_object_object_add(o, "generation", json_object_new_int64(strtoll(src->generation, NULL, 10)));
    json_object_object_add(rec->doc, "runtime_source", o);
}

void fb_record_warn(struct fb_record *rec, const char *text)
{
    fb_envelope_warn(rec->doc, text);
}

void fb_record_fault(struct fb_record *rec, enum fb_status code, const char *message, int rank,
                     const char *host)
{
    fb_envelope_fault(rec->doc, code, message, rank, host);
    rec->faulted = true;
}

struct summary_acc {
    double peak, at_largest, sum_all, sum_1m;
    uint64_t peak_bytes, largest, wrong;
    int n_all, n_1m, rows;
};

static void accumulate(struct summary_acc *a, uint64_t bytes, json_object *placement)
{
    double bw = 0;
    int64_t wrong = 0;
    if (fb_json_get_int64(placement, "wrong", &wrong) && wrong > 0)
        a->wrong += (uint64_t)wrong;
    if (!fb_json_get_double(placement, "busbw_GBps", &bw))
        return;
    if (bw > a->peak || a->n_all == 0) {
        a->peak = bw;
        a->peak_bytes = bytes;
    }
    if (bytes > a->largest) {
        a->largest = bytes;
        a->at_largest = bw;
    } else if (bytes == a->largest && bw > a->at_largest) {
        a->at_largest = bw;
    }
    a->sum_all += bw;
    a->n_all++;
    if (bytes >= MIB) {
        a->sum_1m += bw;
        a->n_1m++;
    }
}

json_object *fb_summary_of_rows(json_object *rows, int sizes_planned)
{
    struct summary_acc a = {0};
    size_t n = json_object_array_length(rows);
    for (size_t i = 0; i < n; i++) {
        json_object *row = json_object_array_get_idx(rows, i), *p = NULL;
        int64_t bytes = 0;
        fb_json_get_int64(row, "bytes", &bytes);
        if (json_object_object_get_ex(row, "out_of_place", &p))
            accumulate(&a, (uint64_t)bytes, p);
        if (json_object_object_get_ex(row, "in_place", &p))
            accumulate(&a, (uint64_t)bytes, p);
    }
    json_object *s = json_object_new_object();
    /* -1: open-ended (-N 0 runs until a signal). */
    json_object_object_add(s, "sizes_planned", sizes_planned >= 0 ? json_object_new_int(sizes_planned) : NULL);
    json_object_object_add(s, "sizes_done", json_object_new_int((int)n));
    json_object_object_add(s, "wrong_total", json_object_new_uint64(a.wrong));
    json_object_object_add(s, "peak_busbw_GBps", a.n_all ? fb_json_number(a.peak) : NULL);
    json_object_object_add(s, "peak_busbw_bytes", a.n_all ? json_object_new_uint64(a.peak_bytes) : NULL);
    json_object_object_add(s, "largest_bytes", a.n_all ? json_object_new_uint64(a.largest) : NULL);
    json_object_object_add(s, "busbw_at_largest_GBps", a.n_all ? fb_json_number(a.at_largest) : NULL);
    json_object_object_add(s, "avg_busbw_GBps", a.n_all ? fb_json_number(a.sum_all / a.n_all) : NULL);
    json_object_object_add(s, "avg_busbw_ge_1MiB_GBps", a.n_1m ? fb_json_number(a.sum_1m / a.n_1m) : NULL);
    return s;
}

static void update_summary(struct fb_record *rec, int complete)
{
    json_object_object_add(rec->doc, "summary", fb_summary_of_rows(rec->rows, rec->sizes_planned));
    json_object *groups = split_groups(rec);
    for (size_t i = 0; groups != NULL && i < json_object_array_length(groups); i++) {
        json_object *g = json_object_array_get_idx(groups, i), *rows = NULL;
        if (json_object_object_get_ex(g, "rows", &rows))
            json_object_object_add(g, "summary", fb_summary_of_rows(rows, rec->sizes_planned));
    }
    fb_envelope_finish(rec->doc, complete);
}

enum fb_status fb_record_start(struct fb_record *rec, bool exclusive, struct fb_err *err)
{
    rec->stream = fb_out_is_stream(rec->path);
    if (rec->stream)
        return fb_probe_writable(rec->path, err);
    update_summary(rec, 0);
    if (exclusive)
        return fb_json_create(rec->path, sizeof rec->path, rec->doc, err);
    return fb_json_write_atomic(rec->path, rec->doc, err);
}

enum fb_status fb_record_save(struct fb_record *rec, int complete, struct fb_err *err)
{
    /* A stream would receive one document per size, unreadable as a whole. */
    if (rec->stream && !complete && !rec->faulted)
        return FB_OK;
    update_summary(rec, complete);
    return fb_json_write_atomic(rec->path, rec->doc, err);
}

void fb_record_free(struct fb_record *rec)
{
    if (rec->doc)
        json_object_put(rec->doc);
    rec->doc = rec->rows = NULL;
}

struct spread {
    uint64_t bytes;
    json_object *row; /* the first row of this size: its type, redop, root */
    int n;
    double sum[2], sumsq[2]; /* per placement */
};

static void spread_add(struct spread *sp, json_object *row)
{
    static const char *const placements[2] = {"out_of_place", "in_place"};
    for (int p = 0; p < 2; p++) {
        json_object *pl = NULL;
        double t = 0;
        if (json_object_object_get_ex(row, placements[p], &pl) && fb_json_get_double(pl, "time_us", &t)) {
            sp->sum[p] += t;
            sp->sumsq[p] += t * t;
        }
    }
    sp->n++;
}

/* The worse of the two placements' coefficients of variation, in %. */
static double spread_cv_pct(const struct spread *sp, double *mean_out)
{
    double worst = 0;
    for (int p = 0; p < 2; p++) {
        double mean = sp->sum[p] / sp->n;
        double var = sp->sumsq[p] / sp->n - mean * mean;
        double cv = mean > 0 && var > 0 ? sqrt(var * sp->n / (sp->n - 1)) / mean * 100 : 0;
        if (p == 0)
            *mean_out = mean;
        worst = cv > worst ? cv : worst;
    }
    return worst;
}

/* Rows of one type, operator and root (-d all ... repeat sizes); rows of
 * files older than those keys all match. */
static int same_run_kind(json_object *a, json_object *b)
{
    static const char *const keys[] = {"type", "redop", "root"};
    for (int i = 0; i < 3; i++) {
        json_object *x = NULL, *y = NULL;
        json_object_object_get_ex(a, keys[i], &x);
        json_object_object_get_ex(b, keys[i], &y);
        if (strcmp(x ? json_object_to_json_string(x) : "", y ? json_object_to_json_string(y) : "") != 0)
            return 0;
    }
    return 1;
}

static void copy_run_kind(json_object *to, json_object *row)
{
    static const char *const keys[] = {"type", "redop", "root"};
    for (int i = 0; i < 3; i++) {
        json_object *v = NULL;
        if (json_object_object_get_ex(row, keys[i], &v))
            json_object_object_add(to, keys[i], json_object_get(v));
    }
}

json_object *fb_stability_of_rows(json_object *rows, double threshold_pct)
{
    size_t n = json_object_array_length(rows);
    struct spread *sp = calloc(n ? n : 1, sizeof *sp);
    size_t nsizes = 0;
    int max_runs = 0;
    for (size_t i = 0; sp != NULL && i < n; i++) {
        json_object *row = json_object_array_get_idx(rows, i);
        int64_t bytes = 0;
        fb_json_get_int64(row, "bytes", &bytes);
        size_t k = 0;
        while (k < nsizes && (sp[k].bytes != (uint64_t)bytes || !same_run_kind(sp[k].row, row)))
            k++;
        if (k == nsizes) {
            sp[nsizes].row = row;
            sp[nsizes++].bytes = (uint64_t)bytes;
        }
        spread_add(&sp[k], row);
        max_runs = sp[k].n > max_runs ? sp[k].n : max_runs;
    }
    if (sp == NULL || max_runs < 2) {
        free(sp);
        return NULL;
    }
    json_object *st = json_object_new_object(), *sizes = json_object_new_array();
    int unstable = 0;
    for (size_t k = 0; k < nsizes; k++) {
        if (sp[k].n < 2)
            continue;
        double mean = 0, cv = spread_cv_pct(&sp[k], &mean);
        json_object *e = json_object_new_object();
        json_object_object_add(e, "bytes", json_object_new_uint64(sp[k].bytes));
        copy_run_kind(e, sp[k].row);
        json_object_object_add(e, "runs", json_object_new_int(sp[k].n));
        json_object_object_add(e, "time_us_mean", fb_json_number(mean));
        json_object_object_add(e, "time_cv_pct", fb_json_number(cv));
        json_object_object_add(e, "unstable", json_object_new_boolean(cv > threshold_pct));
        json_object_array_add(sizes, e);
        unstable += cv > threshold_pct;
    }
    free(sp);
    json_object_object_add(st, "runs", json_object_new_int(max_runs));
    json_object_object_add(st, "threshold_pct", fb_json_number(threshold_pct));
    json_object_object_add(st, "unstable_sizes", json_object_new_int(unstable));
    json_object_object_add(st, "sizes", sizes);
    return st;
}
