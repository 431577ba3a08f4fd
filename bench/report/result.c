#include "report/result.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/array.h"
#include "core/files.h"
#include "core/jsonio.h"
#include "core/text.h"
#include "nccl/collective.h"
#include "report/import_figures.h"

static bool is_number(json_object *v)
{
    return json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int);
}

/* A number, null or absent: NAN for the last two. */
static enum fb_status opt_number(json_object *obj, const char *key, double *out, const char *name,
                                 const char *where, struct fb_err *err)
{
    json_object *v = fb_json_member(obj, key);
    *out = NAN;
    if (v == NULL)
        return FB_OK;
    if (!is_number(v))
        return fb_fail(err, FB_ERR_INPUT, "%s: %s.%s must be a number or null", name, where, key);
    double d = json_object_get_double(v);
    if (!isfinite(d) || d < 0)
        return fb_fail(err, FB_ERR_INPUT, "%s: %s.%s is %g; expected a finite number >= 0", name, where, key, d);
    *out = d;
    return FB_OK;
}

static enum fb_status read_place(json_object *row, const char *key, struct fb_place *p,
                                 const char *name, size_t i, struct fb_err *err)
{
    char where[64];
    snprintf(where, sizeof where, "rows[%zu].%s", i, key);
    json_object *o = fb_json_member(row, key);
    memset(p, 0, sizeof *p);
    p->time_us = p->algbw_GBps = p->busbw_GBps = NAN;
    p->wrong = -1;
    if (o == NULL)
        return FB_OK;
    if (!json_object_is_type(o, json_type_object))
        return fb_fail(err, FB_ERR_INPUT, "%s: %s must be an object or null", name, where);
    p->present = true;
    enum fb_status st = opt_number(o, "time_us", &p->time_us, name, where, err);
    if (st == FB_OK)
        st = opt_number(o, "algbw_GBps", &p->algbw_GBps, name, where, err);
    if (st == FB_OK)
        st = opt_number(o, "busbw_GBps", &p->busbw_GBps, name, where, err);
    if (st != FB_OK)
        return st;
    /* No fabric moves this much; a few such figures summed make every average inf. */
    if (p->algbw_GBps > FB_FIGURE_ABSURD_GBPS || p->busbw_GBps > FB_FIGURE_ABSURD_GBPS)
        return fb_fail(err, FB_ERR_INPUT, "%s: %s has a bandwidth of %g GB/s, beyond any fabric (at most %g); the file is damaged",
                       name, where, fmax(p->algbw_GBps, p->busbw_GBps), FB_FIGURE_ABSURD_GBPS);
    json_object *w = fb_json_member(o, "wrong");
    if (w != NULL) {
        if (!json_object_is_type(w, json_type_int) || json_object_get_int64(w) < 0)
            return fb_fail(err, FB_ERR_INPUT, "%s: %s.wrong must be a count >= 0 or null", name, where);
        p->wrong = json_object_get_int64(w);
    }
    return FB_OK;
}

static enum fb_status read_rows(json_object *rows, const char *name, struct fb_result *r,
                                struct fb_err *err)
{
    if (rows == NULL || !json_object_is_type(rows, json_type_array))
        return fb_fail(err, FB_ERR_INPUT, "%s: \"rows\" is missing or not an array; not a complete collective result", name);
    size_t n = json_object_array_length(rows);
    r->rows = calloc(n ? n : 1, sizeof *r->rows);
    if (r->rows == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory reading %s", name);
    for (size_t i = 0; i < n; i++) {
        json_object *row = json_object_array_get_idx(rows, i);
        struct fb_row *out = &r->rows[i];
        if (!json_object_is_type(row, json_type_object))
            return fb_fail(err, FB_ERR_INPUT, "%s: rows[%zu] is not an object", name, i);
        int64_t v = 0;
        if (!fb_json_get_int64(row, "bytes", &v) || v < 0)
            return fb_fail(err, FB_ERR_INPUT, "%s: rows[%zu].bytes must be an integer >= 0", name, i);
        out->bytes = (unsigned long long)v;
        if (fb_json_member(row, "count") != NULL) {
            if (!fb_json_get_int64(row, "count", &v) || v < 0)
                return fb_fail(err, FB_ERR_INPUT, "%s: rows[%zu].count must be an integer >= 0", name, i);
            out->count = (unsigned long long)v;
        }
        if (fb_json_member(row, "run") != NULL) {
            if (!fb_json_get_int64(row, "run", &v) || v < 0 || v > INT_MAX)
                return fb_fail(err, FB_ERR_INPUT, "%s: rows[%zu].run must be an integer >= 0", name, i);
            out->run = (long)v;
        }
        enum fb_status st = read_place(row, "out_of_place", &out->oop, name, i, err);
        if (st == FB_OK)
            st = read_place(row, "in_place", &out->ip, name, i, err);
        if (st != FB_OK)
            return st;
        if (!out->oop.present && !out->ip.present)
            return fb_fail(err, FB_ERR_INPUT, "%s: rows[%zu] has neither out_of_place nor in_place", name, i);
        r->nrows++;
    }
    return FB_OK;
}

static enum fb_status opt_count(json_object *obj, const char *key, long *out, const char *name,
                                const char *where, struct fb_err *err)
{
    if (fb_json_get_ranged(obj, key, 0, 100000000, out) == FB_JSON_WRONG)
        return fb_fail(err, FB_ERR_INPUT, "%s: %s%s must be a count >= 0", name, where, key);
    return FB_OK;
}

static const char *opt_string(json_object *obj, const char *key)
{
    json_object *v = fb_json_member(obj, key);
    return v != NULL && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static enum fb_status read_transport(json_object *doc, const char *name, struct fb_result *r,
                                     struct fb_err *err)
{
    json_object *t = fb_json_member(doc, "transport");
    r->gdr = -1;
    if (t == NULL)
        return FB_OK;
    if (!json_object_is_type(t, json_type_object))
        return fb_fail(err, FB_ERR_INPUT, "%s: \"transport\" must be an object or null", name);
    r->transport = t;
    json_object *net = fb_json_member(t, "net");
    if (net != NULL && !json_object_is_type(net, json_type_string))
        return fb_fail(err, FB_ERR_INPUT, "%s: transport.net must be a string or null", name);
    r->net = net ? json_object_get_string(net) : NULL;
    json_object *gdr = fb_json_member(t, "gdr");
    if (gdr != NULL && !json_object_is_type(gdr, json_type_boolean))
        return fb_fail(err, FB_ERR_INPUT, "%s: transport.gdr must be true, false or null", name);
    if (gdr != NULL)
        r->gdr = json_object_get_boolean(gdr) ? 1 : 0;
    json_object *pr = fb_json_member(t, "per_rank");
    if (pr != NULL && !json_object_is_type(pr, json_type_array))
        return fb_fail(err, FB_ERR_INPUT, "%s: transport.per_rank must be an array", name);
    for (size_t i = 0; pr != NULL && i < json_object_array_length(pr); i++) {
        json_object *e = json_object_array_get_idx(pr, i);
        json_object *en = fb_json_member(e, "net");
        if (!json_object_is_type(e, json_type_object) ||
            (en != NULL && !json_object_is_type(en, json_type_string)))
            return fb_fail(err, FB_ERR_INPUT, "%s: transport.per_rank[%zu] must be an object with a string or null net", name, i);
    }
    return FB_OK;
}

static enum fb_status read_placement_facts(json_object *doc, const char *name, struct fb_result *r,
                                           struct fb_err *err)
{
    json_object *topo = fb_json_member(doc, "topology");
    if (topo != NULL && !json_object_is_type(topo, json_type_object))
        return fb_fail(err, FB_ERR_INPUT, "%s: \"topology\" must be an object", name);
    enum fb_status st = opt_count(topo, "ranks", &r->ranks, name, "topology.", err);
    if (st == FB_OK)
        st = opt_count(topo, "nodes", &r->nodes, name, "topology.", err);
    if (st == FB_OK)
        st = opt_count(topo, "ranks_per_node", &r->ranks_per_node, name, "topology.", err);
    if (st != FB_OK)
        return st;
    json_object *hosts = fb_json_member(doc, "hosts");
    if (hosts != NULL && !json_object_is_type(hosts, json_type_array))
        return fb_fail(err, FB_ERR_INPUT, "%s: \"hosts\" must be an array of host names", name);
    /* nodes null: the output did not show every rank's host. */
    bool nodes_given = topo != NULL && json_object_object_get_ex(topo, "nodes", NULL);
    if (r->nodes == 0 && !nodes_given && hosts != NULL)
        r->nodes = (long)json_object_array_length(hosts);
    json_object *devs = fb_json_member(doc, "devices");
    if (devs != NULL && !json_object_is_type(devs, json_type_array))
        return fb_fail(err, FB_ERR_INPUT, "%s: \"devices\" must be an array", name);
    if (devs != NULL && json_object_array_length(devs) > 0) {
        json_object *d0 = json_object_array_get_idx(devs, 0);
        r->device_kind = opt_string(d0, "kind");
        r->device_name = opt_string(d0, "name");
    }
    if (r->cluster == NULL && hosts != NULL && json_object_array_length(hosts) > 0) {
        json_object *h0 = json_object_array_get_idx(hosts, 0);
        if (json_object_is_type(h0, json_type_string))
            r->cluster = json_object_get_string(h0);
    }
    return FB_OK;
}

/* nccl-tests -J output: {"version", "config", "results": [...]} */
static bool looks_like_ncclt_json(json_object *doc)
{
    return fb_json_member(doc, "results") != NULL && fb_json_member(doc, "config") != NULL && fb_json_member(doc, "schema") == NULL;
}

static enum fb_status fail_collective(const char *name, struct fb_err *err)
{
    char names[FB_COLL_NAMES_MAX];
    fb_collective_names(names, sizeof names, ", ");
    return fb_fail(err, FB_ERR_INPUT, "%s: \"collective\" is missing or not one of %s", name, names);
}

static enum fb_status read_envelope(json_object *doc, const char *name, struct fb_result *r,
                                    struct fb_err *err)
{
    if (!json_object_is_type(doc, json_type_object))
        return fb_fail(err, FB_ERR_INPUT, "%s: the top level is %s, not a JSON object; expected a fabric-bench result (fabric-coll -J)",
                       name, fb_json_doc_kind(doc));
    const char *schema = opt_string(doc, "schema");
    if (schema == NULL || strcmp(schema, "fabric-bench.result") != 0) {
        if (looks_like_ncclt_json(doc))
            return fb_fail(err, FB_ERR_INPUT, "%s is nccl-tests JSON output; convert it first: fabric-report import %s -o OUT.json", name, name);
        return fb_fail(err, FB_ERR_INPUT, "%s is %s, not a fabric-bench result (\"schema\" is not \"fabric-bench.result\"); give a fabric-coll -J file",
                       name, fb_json_doc_kind(doc));
    }
    int64_t version = 0;
    if (!fb_json_get_int64(doc, "schema_version", &version))
        return fb_fail(err, FB_ERR_INPUT, "%s: \"schema_version\" is missing or not an integer", name);
    if (version != 1)
        return fb_fail(err, FB_ERR_INPUT, "%s has schema_version %lld; this fabric-report reads version 1%s", name,
                       (long long)version, version > 1 ? " (upgrade fabric-report)" : "");
    const char *kind = opt_string(doc, "kind");
    if (kind == NULL)
        return fb_fail(err, FB_ERR_INPUT, "%s: \"kind\" is missing", name);
    if (strcmp(kind, "collective") != 0)
        return fb_fail(err, FB_ERR_INPUT, "%s is a \"%s\" result; this command reads collective results (fabric-coll)", name, kind);
    if (!fb_json_get_bool(doc, "complete", &r->complete))
        return fb_fail(err, FB_ERR_INPUT, "%s: \"complete\" is missing or not true/false", name);
    /* null: a run that failed before its first row and never named it;
     * absent: an unfinished run of an older fabric-coll that was stopped
     * before it described itself. */
    json_object *coll = fb_json_member(doc, "collective"), *rows = fb_json_member(doc, "rows");
    bool rowless = rows != NULL && json_object_is_type(rows, json_type_array) && json_object_array_length(rows) == 0;
    bool unnamed = json_object_object_get_ex(doc, "collective", NULL) || !r->complete;
    r->collective = opt_string(doc, "collective");
    if (r->collective == NULL && unnamed && coll == NULL && rowless)
        r->collective = FB_COLLECTIVE_UNKNOWN;
    else if (r->collective == NULL || !fb_collective_known(r->collective))
        return fail_collective(name, err);
    json_object *fault = fb_json_member(doc, "fault");
    if (fault != NULL && !json_object_is_type(fault, json_type_object))
        return fb_fail(err, FB_ERR_INPUT, "%s: \"fault\" must be an object or null", name);
    r->fault = fault;
    json_object *stop = fb_json_member(doc, "early_stop");
    if (stop != NULL && (!json_object_is_type(stop, json_type_object) ||
                         (fb_json_member(stop, "reason") != NULL && !json_object_is_type(fb_json_member(stop, "reason"), json_type_string))))
        return fb_fail(err, FB_ERR_INPUT, "%s: \"early_stop\" must be null or an object with a string reason", name);
    r->early_stop = stop;
    json_object *env = fb_json_member(doc, "env");
    r->env = env != NULL && json_object_is_type(env, json_type_object) ? env : NULL;
    json_object *source = fb_json_member(doc, "runtime_source");
    r->runtime_source = source != NULL && json_object_is_type(source, json_type_object) ? source : NULL;
    r->cluster = opt_string(doc, "cluster");
    r->backend = opt_string(doc, "backend");
    r->dtype = opt_string(doc, "dtype");
    r->op = opt_string(doc, "op");
    r->start_time = opt_string(doc, "start_time");
    return FB_OK;
}

enum fb_status fb_result_from_json(json_object *doc, const char *name, struct fb_result *r,
                                   struct fb_err *err)
{
    memset(r, 0, sizeof *r);
    r->doc = doc;
    r->sizes_planned = r->sizes_done = -1;
    r->gdr = -1;
    r->path = strdup(name);
    if (r->path == NULL) {
        fb_result_free(r);
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory reading %s", name);
    }
    enum fb_status st = read_envelope(doc, name, r, err);
    if (st == FB_OK)
        st = read_placement_facts(doc, name, r, err);
    if (st == FB_OK)
        st = read_transport(doc, name, r, err);
    if (st == FB_OK)
        st = read_rows(fb_json_member(doc, "rows"), name, r, err);
    json_object *summary = fb_json_member(doc, "summary");
    if (st == FB_OK && summary != NULL && !json_object_is_type(summary, json_type_object))
        st = fb_fail(err, FB_ERR_INPUT, "%s: \"summary\" must be an object", name);
    if (st == FB_OK)
        st = opt_count(summary, "sizes_planned", &r->sizes_planned, name, "summary.", err);
    if (st == FB_OK)
        st = opt_count(summary, "sizes_done", &r->sizes_done, name, "summary.", err);
    if (st != FB_OK) {
        fb_result_free(r);
        return st;
    }
    if (r->cluster == NULL)
        r->cluster = "unnamed";
    return FB_OK;
}

/* A file that is not JSON but holds an nccl-tests table or a perftest
 * report is a common mistake: say how to convert it. */
static void hint_import(const char *path, struct fb_err *err)
{
    char *head = NULL;
    size_t len = 0;
    struct fb_err ignored = {0};
    if (fb_read_file(path, &head, &len, &ignored) != FB_OK)
        return;
    if (len > 8191)
        head[8191] = '\0'; /* the table's header is near the top */
    if (strstr(head, "# nThread") != NULL || strstr(head, "Avg bus bandwidth") != NULL ||
        strstr(head, "#bytes") != NULL || strstr(head, "#       size") != NULL)
        snprintf(err->msg, sizeof err->msg,
                 "%s is nccl-tests or perftest text, not a results JSON; convert it first: fabric-report import %s -o OUT.json",
                 path, path);
    free(head);
}

enum fb_status fb_result_load(const char *path, struct fb_result *r, struct fb_err *err)
{
    json_object *doc = NULL;
    struct fb_err local = {0};
    enum fb_status st = fb_json_read_file(path, &doc, &local);
    if (st != FB_OK) {
        if (st == FB_ERR_INPUT && strstr(local.msg, "not valid JSON") != NULL)
            hint_import(path, &local);
        memset(r, 0, sizeof *r);
        return fb_fail(err, st, "%s", local.msg);
    }
    return fb_result_from_json(doc, path, r, err);
}

void fb_result_free(struct fb_result *r)
{
    if (r == NULL)
        return;
    if (r->doc != NULL)
        json_object_put(r->doc);
    free(r->rows);
    free(r->path);
    memset(r, 0, sizeof *r);
}

static double place_busbw(const struct fb_place *p)
{
    return p->present ? p->busbw_GBps : NAN;
}

double fb_row_best_busbw(const struct fb_row *row)
{
    double a = place_busbw(&row->oop), b = place_busbw(&row->ip);
    if (isnan(a))
        return b;
    if (isnan(b))
        return a;
    return a > b ? a : b;
}

void fb_summary_compute(const struct fb_row *rows, size_t n, struct fb_summary *s)
{
    memset(s, 0, sizeof *s);
    s->peak_busbw = s->busbw_at_largest = s->avg_busbw = s->avg_busbw_ge_1MiB = NAN;
    double sum = 0, sum_big = 0;
    size_t count = 0, count_big = 0;
    for (size_t i = 0; i < n; i++) {
        const struct fb_row *row = &rows[i];
        const struct fb_place *places[2] = {&row->oop, &row->ip};
        for (int k = 0; k < 2; k++) {
            const struct fb_place *p = places[k];
            if (!p->present)
                continue;
            if (p->wrong >= 0) {
                /* Saturate: a count this large already says everything. */
                if (__builtin_add_overflow(s->wrong_total, p->wrong, &s->wrong_total))
                    s->wrong_total = LLONG_MAX;
                s->validated = true;
            }
            if (isnan(p->busbw_GBps))
                continue;
            sum += p->busbw_GBps;
            count++;
            if (row->bytes >= FB_MIB) {
                sum_big += p->busbw_GBps;
                count_big++;
            }
            if (isnan(s->peak_busbw) || p->busbw_GBps > s->peak_busbw) {
                s->peak_busbw = p->busbw_GBps;
                s->peak_bytes = row->bytes;
            }
        }
        if (row->bytes >= s->largest_bytes) {
            double best = fb_row_best_busbw(row);
            if (row->bytes > s->largest_bytes)
                s->busbw_at_largest = NAN;
            s->largest_bytes = row->bytes;
            if (!isnan(best) && (isnan(s->busbw_at_largest) || best > s->busbw_at_largest))
                s->busbw_at_largest = best;
        }
    }
    if (count > 0)
        s->avg_busbw = sum / (double)count;
    if (count_big > 0)
        s->avg_busbw_ge_1MiB = sum_big / (double)count_big;
}

json_object *fb_summary_json(const struct fb_summary *s, long sizes_planned, long sizes_done)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "sizes_planned", sizes_planned >= 0 ? json_object_new_int64(sizes_planned) : NULL);
    json_object_object_add(o, "sizes_done", sizes_done >= 0 ? json_object_new_int64(sizes_done) : NULL);
    json_object_object_add(o, "wrong_total", json_object_new_int64(s->wrong_total));
    json_object_object_add(o, "peak_busbw_GBps", fb_json_number(s->peak_busbw));
    json_object_object_add(o, "peak_busbw_bytes", isnan(s->peak_busbw) ? NULL : json_object_new_int64((int64_t)s->peak_bytes));
    json_object_object_add(o, "largest_bytes", json_object_new_int64((int64_t)s->largest_bytes));
    json_object_object_add(o, "busbw_at_largest_GBps", fb_json_number(s->busbw_at_largest));
    json_object_object_add(o, "avg_busbw_GBps", fb_json_number(s->avg_busbw));
    json_object_object_add(o, "avg_busbw_ge_1MiB_GBps", fb_json_number(s->avg_busbw_ge_1MiB));
    return o;
}

static int point_order(const void *a, const void *b)
{
    const struct fb_point *x = a, *y = b;
    return x->bytes < y->bytes ? -1 : x->bytes > y->bytes;
}

enum fb_status fb_result_points(const struct fb_result *r, struct fb_point **out, size_t *n,
                                struct fb_err *err)
{
    struct fb_point *pts = calloc(r->nrows ? r->nrows : 1, sizeof *pts);
    if (pts == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory summarising %s", r->path);
    size_t np = 0;
    for (size_t i = 0; i < r->nrows; i++) {
        double best = fb_row_best_busbw(&r->rows[i]);
        if (isnan(best))
            continue;
        size_t k = 0;
        while (k < np && pts[k].bytes != r->rows[i].bytes)
            k++;
        if (k == np) {
            pts[np].bytes = r->rows[i].bytes;
            pts[np].best = pts[np].run_min = pts[np].run_max = best;
            pts[np].nruns = 1;
            np++;
            continue;
        }
        struct fb_point *p = &pts[k];
        p->best = fmax(p->best, best);
        p->run_min = fmin(p->run_min, best);
        p->run_max = fmax(p->run_max, best);
        p->nruns++;
    }
    qsort(pts, np, sizeof *pts, point_order);
    *out = pts;
    *n = np;
    return FB_OK;
}

const char *fb_result_label(const struct fb_result *r)
{
    return r->cluster;
}

/* A result kept in a set needs its rows as r->rows only: their parsed JSON
 * is most of a document's memory (a tree of 20,000 runs: docs/report.md,
 * Reading results trees), so it goes once the rows are read. */
static void drop_parsed_rows(struct fb_result *r)
{
    json_object_object_del(r->doc, "rows");
}

static enum fb_status set_add(struct fb_result_set *set, struct fb_result *r, struct fb_err *err)
{
    drop_parsed_rows(r);
    enum fb_status st = fb_array_append(&set->r, &set->n, sizeof *r, r, "collecting results", err);
    if (st != FB_OK)
        fb_result_free(r);
    return st;
}

/* In a directory only collective results count; anything else that is
 * valid JSON (profiles, probe results, nccl-tests output) is passed over. */
static enum fb_status add_from_dir_file(const char *path, void *ctx, struct fb_err *err)
{
    struct fb_result_set *set = ctx;
    json_object *doc = NULL;
    enum fb_status st = fb_json_read_file(path, &doc, err);
    if (st != FB_OK)
        return st;
    json_object *schema = fb_json_member(doc, "schema"), *kind = fb_json_member(doc, "kind");
    if (!json_object_is_type(doc, json_type_object) || schema == NULL ||
        strcmp(json_object_get_string(schema), "fabric-bench.result") != 0 || kind == NULL ||
        strcmp(json_object_get_string(kind), "collective") != 0) {
        json_object_put(doc);
        set->skipped++;
        return FB_OK;
    }
    struct fb_result r;
    st = fb_result_from_json(doc, path, &r, err);
    return st == FB_OK ? set_add(set, &r, err) : st;
}

/* Results directories nest (results/<cluster>/...); eight levels is more
 * than any layout this suite writes. One walk covers every directory
 * given, so a run is counted once however many of them hold it. */
static enum fb_status add_dir(struct fb_result_set *set, struct fb_walk *w, const char *dir, bool empty_ok,
                              struct fb_err *err)
{
    size_t before = set->n, repeats = w->repeats;
    enum fb_status st = fb_walk_tree(w, dir, 8, false, add_from_dir_file, set, err);
    /* Empty only when it holds nothing, not when all of it was read
     * already through another directory given. */
    if (st == FB_OK && set->n == before && w->repeats == repeats && !empty_ok)
        st = fb_fail(err, FB_ERR_INPUT, "%s holds no collective results (*.json of kind \"collective\"); run fabric-coll with -J or give files", dir);
    return st;
}

static enum fb_status set_load(const char *const *args, int nargs, bool empty_dirs_ok, struct fb_result_set *set,
                               struct fb_err *err)
{
    memset(set, 0, sizeof *set);
    struct fb_walk w = {0};
    enum fb_status st = FB_OK;
    for (int i = 0; i < nargs && st == FB_OK; i++) {
        struct stat sb;
        if (stat(args[i], &sb) == 0 && S_ISDIR(sb.st_mode)) {
            st = add_dir(set, &w, args[i], empty_dirs_ok, err);
            continue;
        }
        struct fb_result r;
        st = fb_result_load(args[i], &r, err);
        if (st == FB_OK)
            st = set_add(set, &r, err);
    }
    fb_walk_free(&w);
    if (st != FB_OK)
        fb_result_set_free(set);
    return st;
}

enum fb_status fb_result_set_load(const char *const *args, int nargs, struct fb_result_set *set,
                                  struct fb_err *err)
{
    return set_load(args, nargs, false, set, err);
}

enum fb_status fb_result_set_load_any(const char *const *args, int nargs, struct fb_result_set *set,
                                      struct fb_err *err)
{
    return set_load(args, nargs, true, set, err);
}

void fb_result_set_free(struct fb_result_set *set)
{
    for (size_t i = 0; i < set->n; i++)
        fb_result_free(&set->r[i]);
    free(set->r);
    memset(set, 0, sizeof *set);
}
