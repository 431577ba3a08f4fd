/* busBW over time per series, each run against the runs before it
 * (history.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonio.h"
#include "core/units.h"
#include "report/history.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of_sorted(const double *v, size_t n)
{
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double fb_hist_median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return median_of_sorted(v, n);
}

double fb_hist_mad(const double *v, size_t n, double median)
{
    double *dev = malloc(n * sizeof *dev);
    if (dev == NULL)
        return NAN;
    for (size_t i = 0; i < n; i++)
        dev[i] = fabs(v[i] - median);
    double mad = fb_hist_median(dev, n);
    free(dev);
    return mad;
}

const char *fb_hist_state_name(enum fb_hist_state s)
{
    switch (s) {
    case FB_HIST_OK: return "ok";
    case FB_HIST_OUTLIER: return "outlier";
    case FB_HIST_FEW: return "not enough history";
    case FB_HIST_INCOMPLETE: return "incomplete";
    case FB_HIST_NO_SIZE: return "no figure at size";
    }
    return "ok";
}

/* The deviations from a median of sorted values grow outward from it on
 * both sides, so their median is the (n/2)th step of a walk that takes the
 * nearer side each time: O(n), with no copy and no sort. */
double fb_hist_mad_sorted(const double *v, size_t n, double median)
{
    size_t right = 0;
    while (right < n && v[right] < median)
        right++;
    size_t left = right; /* v[left - 1] is the next below */
    double prev = NAN, dev = NAN;
    for (size_t step = 0; step <= n / 2; step++) {
        prev = dev;
        bool take_left = left > 0 && (right == n || median - v[left - 1] <= v[right] - median);
        dev = take_left ? median - v[--left] : v[right++] - median;
    }
    return n % 2 ? dev : (prev + dev) / 2;
}

void fb_hist_judge_sorted(double value, const double *v, size_t n, double k, double floor,
                          struct fb_hist_judgement *j)
{
    j->median = j->mad = j->ratio = NAN;
    if (isnan(value)) {
        j->state = FB_HIST_NO_SIZE;
        return;
    }
    if (n < FB_HIST_MIN_EARLIER) {
        j->state = FB_HIST_FEW;
        return;
    }
    j->median = median_of_sorted(v, n);
    j->mad = fb_hist_mad_sorted(v, n, j->median);
    j->ratio = j->median > 0 ? value / j->median : NAN;
    bool below_spread = value < j->median - k * j->mad;
    bool below_floor = j->median > 0 && value < floor * j->median;
    j->state = below_spread && below_floor ? FB_HIST_OUTLIER : FB_HIST_OK;
}

void fb_hist_judge(double value, double *earlier, size_t n, double k, double floor,
                   struct fb_hist_judgement *j)
{
    qsort(earlier, n, sizeof *earlier, cmp_double);
    fb_hist_judge_sorted(value, earlier, n, k, floor, j);
}

/* ---- grouping ---- */

static bool same_series(const struct fb_hist_series *s, const struct fb_result *r, const char *hosts)
{
    return strcmp(s->cluster, fb_result_label(r)) == 0 && strcmp(s->collective, r->collective) == 0 &&
           strcmp(s->backend, r->backend ? r->backend : "") == 0 && s->ranks == r->ranks &&
           (s->hosts == NULL || strcmp(s->hosts, hosts) == 0);
}

static int cmp_run_time(const void *a, const void *b)
{
    const struct fb_hist_run *x = a, *y = b;
    const char *tx = x->r->start_time ? x->r->start_time : "", *ty = y->r->start_time ? y->r->start_time : "";
    int c = strcmp(tx, ty);
    return c != 0 ? c : strcmp(x->r->path, y->r->path);
}

/* The hosts a document names, joined with ','; kept alive in h->hosts. */
static const char *run_hosts(struct fb_history *h, const struct fb_result *r)
{
    json_object *arr = NULL;
    if (!json_object_object_get_ex(r->doc, "hosts", &arr) || !json_object_is_type(arr, json_type_array))
        return "";
    struct fb_str b = {0};
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        const char *one = json_object_get_string(json_object_array_get_idx(arr, i));
        fb_str_addf(&b, "%s%s", i ? "," : "", one ? one : "");
    }
    json_object *kept = json_object_new_string(fb_str_get(&b));
    fb_str_free(&b);
    json_object_array_add(h->hosts, kept);
    return json_object_get_string(kept);
}

static enum fb_status add_run(struct fb_history *h, const struct fb_result *r, struct fb_err *err)
{
    const char *hosts = run_hosts(h, r);
    struct fb_hist_series *s = NULL;
    for (size_t i = 0; i < h->n && s == NULL; i++)
        if (same_series(&h->s[i], r, hosts))
            s = &h->s[i];
    if (s == NULL) {
        struct fb_hist_series *grown = realloc(h->s, (h->n + 1) * sizeof *grown);
        if (grown == NULL)
            return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
        h->s = grown;
        s = &h->s[h->n++];
        *s = (struct fb_hist_series){.cluster = fb_result_label(r), .collective = r->collective,
                                     .backend = r->backend ? r->backend : "", .ranks = r->ranks,
                                     .hosts = h->opts.per_host ? hosts : NULL};
    }
    struct fb_hist_run *runs = realloc(s->runs, (s->n + 1) * sizeof *runs);
    if (runs == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    s->runs = runs;
    s->runs[s->n++] = (struct fb_hist_run){.r = r, .hosts = hosts, .busbw = NAN};
    return FB_OK;
}

/* Best busBW of `r` at `bytes`; NAN when the run did not measure it. */
static double busbw_at(const struct fb_result *r, unsigned long long bytes)
{
    double best = NAN;
    for (size_t i = 0; i < r->nrows; i++) {
        double v = fb_row_best_busbw(&r->rows[i]);
        if (r->rows[i].bytes == bytes && !isnan(v) && (isnan(best) || v > best))
            best = v;
    }
    return best;
}

static bool has_size(const struct fb_result *r, unsigned long long bytes)
{
    return !isnan(busbw_at(r, bytes));
}

/* The largest size every complete run of the series measured (all runs
 * when none is complete); 0 when there is none. */
static unsigned long long largest_common_size(const struct fb_hist_series *s)
{
    size_t complete = 0;
    for (size_t i = 0; i < s->n; i++)
        complete += s->runs[i].r->complete;
    unsigned long long best = 0;
    for (size_t i = 0; i < s->n; i++) {
        const struct fb_result *r = s->runs[i].r;
        for (size_t k = 0; k < r->nrows; k++) {
            unsigned long long b = r->rows[k].bytes;
            bool everywhere = b > best;
            for (size_t o = 0; o < s->n && everywhere; o++)
                if (s->runs[o].r->complete || complete == 0)
                    everywhere = has_size(s->runs[o].r, b);
            if (everywhere)
                best = b;
        }
    }
    return best;
}

/* v[0..*n) stays sorted with x added (room for it is the caller's). */
static void insert_sorted(double *v, size_t *n, double x)
{
    size_t lo = 0, hi = *n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    memmove(v + lo + 1, v + lo, (*n - lo) * sizeof *v);
    v[lo] = x;
    (*n)++;
}

static enum fb_status judge_series(struct fb_hist_series *s, const struct fb_hist_opts *o, struct fb_err *err)
{
    qsort(s->runs, s->n, sizeof *s->runs, cmp_run_time);
    s->bytes = o->size ? o->size : largest_common_size(s);
    /* The earlier figures, kept sorted as each run joins them. */
    double *earlier = malloc((s->n + 1) * sizeof *earlier);
    if (earlier == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++) {
        struct fb_hist_run *run = &s->runs[i];
        run->busbw = s->bytes ? busbw_at(run->r, s->bytes) : NAN;
        fb_hist_judge_sorted(run->busbw, earlier, n, o->k, o->floor, &run->j);
        run->nearlier = n;
        if (!run->r->complete) {
            run->j.state = FB_HIST_INCOMPLETE;
            continue;
        }
        if (!isnan(run->busbw))
            insert_sorted(earlier, &n, run->busbw);
    }
    free(earlier);
    return FB_OK;
}

static bool any_figure(const struct fb_history *h)
{
    for (size_t i = 0; i < h->n; i++)
        for (size_t k = 0; k < h->s[i].n; k++)
            if (!isnan(h->s[i].runs[k].busbw))
                return true;
    return false;
}

enum fb_status fb_history_build(const struct fb_result_set *set, const struct fb_hist_opts *o,
                                struct fb_history *h, struct fb_err *err)
{
    *h = (struct fb_history){.opts = *o, .hosts = json_object_new_array()};
    enum fb_status st = FB_OK;
    for (size_t i = 0; i < set->n && st == FB_OK; i++)
        st = add_run(h, &set->r[i], err);
    for (size_t i = 0; i < h->n && st == FB_OK; i++)
        st = judge_series(&h->s[i], o, err);
    if (st == FB_OK && o->size != 0 && !any_figure(h)) {
        char size[32];
        fb_format_size(o->size, size, sizeof size);
        st = fb_fail(err, FB_ERR_USAGE, "--size %s: no run measured that size; leave --size out for the largest size the runs share", size);
    }
    if (st != FB_OK)
        fb_history_free(h);
    return st;
}

void fb_history_free(struct fb_history *h)
{
    for (size_t i = 0; i < h->n; i++)
        free(h->s[i].runs);
    free(h->s);
    json_object_put(h->hosts);
    *h = (struct fb_history){0};
}

bool fb_history_latest_outlier(const struct fb_history *h)
{
    for (size_t i = 0; i < h->n; i++)
        if (h->s[i].n > 0 && h->s[i].runs[h->s[i].n - 1].j.state == FB_HIST_OUTLIER)
            return true;
    return false;
}

/* ---- output ---- */

static void text_run(const struct fb_hist_run *run, struct fb_str *out)
{
    const char *t = run->r->start_time ? run->r->start_time : "?";
    if (isnan(run->busbw))
        fb_str_addf(out, "  %-20s %10s", t, "-");
    else
        fb_str_addf(out, "  %-20s %10.3f", t, run->busbw);
    if (isnan(run->j.median))
        fb_str_addf(out, " %10s %8s %7s", "-", "-", "-");
    else
        fb_str_addf(out, " %10.3f %8.3f %6.0f%%", run->j.median, run->j.mad, 100 * run->j.ratio);
    fb_str_addf(out, "  %-18s %s%s%s\n", run->j.state == FB_HIST_OUTLIER ? "OUTLIER" : fb_hist_state_name(run->j.state),
                run->hosts, *run->hosts ? "  " : "", run->r->path);
}

void fb_history_text(const struct fb_history *h, struct fb_str *out)
{
    for (size_t i = 0; i < h->n; i++) {
        const struct fb_hist_series *s = &h->s[i];
        char size[32];
        fb_format_size(s->bytes, size, sizeof size);
        fb_str_addf(out, "%s%s %s (%s, %ld ranks%s%s) busBW at %s, GB/s; outlier below median - %g*MAD and below %g %% of the median\n",
                    i ? "\n" : "", s->cluster, s->collective, s->backend, s->ranks, s->hosts ? ", on " : "",
                    s->hosts ? (*s->hosts ? s->hosts : "hosts not named") : "", s->bytes ? size : "(none)",
                    h->opts.k, 100 * h->opts.floor);
        fb_str_addf(out, "  %-20s %10s %10s %8s %7s  %-18s %s\n", "start", "busBW", "median", "MAD", "ratio", "state", "hosts  file");
        for (size_t k = 0; k < s->n; k++)
            text_run(&s->runs[k], out);
    }
}

static json_object *num_or_null(double v)
{
    return isnan(v) ? NULL : json_object_new_double(v);
}

static json_object *run_json(const struct fb_hist_run *run)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "file", json_object_new_string(run->r->path));
    json_object_object_add(o, "start_time", run->r->start_time ? json_object_new_string(run->r->start_time) : NULL);
    json_object_object_add(o, "hosts", json_object_new_string(run->hosts));
    json_object_object_add(o, "complete", json_object_new_boolean(run->r->complete));
    json_object_object_add(o, "busbw_GBps", num_or_null(run->busbw));
    json_object_object_add(o, "earlier_runs", json_object_new_int64((int64_t)run->nearlier));
    json_object_object_add(o, "median_GBps", num_or_null(run->j.median));
    json_object_object_add(o, "mad_GBps", num_or_null(run->j.mad));
    json_object_object_add(o, "ratio", num_or_null(run->j.ratio));
    json_object_object_add(o, "state", json_object_new_string(fb_hist_state_name(run->j.state)));
    json_object_object_add(o, "outlier", json_object_new_boolean(run->j.state == FB_HIST_OUTLIER));
    return o;
}

json_object *fb_history_json(const struct fb_history *h)
{
    json_object *doc = json_object_new_object();
    json_object_object_add(doc, "schema", json_object_new_string("fabric-bench.report-history"));
    json_object_object_add(doc, "schema_version", json_object_new_int(1));
    json_object_object_add(doc, "kind", json_object_new_string("history"));
    json_object_object_add(doc, "k", json_object_new_double(h->opts.k));
    json_object_object_add(doc, "floor", json_object_new_double(h->opts.floor));
    json_object_object_add(doc, "min_earlier_runs", json_object_new_int(FB_HIST_MIN_EARLIER));
    json_object_object_add(doc, "latest_outlier", json_object_new_boolean(fb_history_latest_outlier(h)));
    json_object *arr = json_object_new_array();
    for (size_t i = 0; i < h->n; i++) {
        const struct fb_hist_series *s = &h->s[i];
        json_object *o = json_object_new_object();
        json_object_object_add(o, "cluster", json_object_new_string(s->cluster));
        json_object_object_add(o, "collective", json_object_new_string(s->collective));
        json_object_object_add(o, "backend", json_object_new_string(s->backend));
        json_object_object_add(o, "ranks", json_object_new_int64(s->ranks));
        json_object_object_add(o, "hosts", s->hosts ? json_object_new_string(s->hosts) : NULL);
        json_object_object_add(o, "size_bytes", s->bytes ? json_object_new_int64((int64_t)s->bytes) : NULL);
        json_object *runs = json_object_new_array();
        for (size_t k = 0; k < s->n; k++)
            json_object_array_add(runs, run_json(&s->runs[k]));
        json_object_object_add(o, "runs", runs);
        json_object_array_add(arr, o);
    }
    json_object_object_add(doc, "series", arr);
    return doc;
}
