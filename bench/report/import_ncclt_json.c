/* nccl-tests -J output (JSON file version 2 and 3; 3 is 2.19's, which
 * fabric-coll also writes under a *_perf name). Facts the reader relies on:
 *   {"version": 3, "start_time": "2025-01-31 10:00:00" (local time),
 *    "args": [argv...], "env": ["NAME=value", ...], "nccl_version": 22105,
 *    "config": {"nthreads", "ngpus", "minimum_bytes", "maximum_bytes",
 *               "step_factor" | "step_bytes", "warmup_iters", "iterations",
 *               "aggregated_iterations", "validation", "graph",
 *               "blocking_collectives": "true"|"false", ...,
 *               "devices": [{"rank", "group", "pid", "hostname", "device",
 *                            "device_hex", "device_info"}]},
 *    "results": [{"size", "count", "type", "redop", "root": "    -1",
 *                 "out_of_place": {"time"|"cpu_time" (-C 1), "alg_bw",
 *                                  "bus_bw", "nwrong": number|null} | null,
 *                 "out_of_place_per_iter": {...} (-I 1, not read),
 *                 "in_place": {...}, "actual_iterations" (-n, not x -m), ...}],
 *    "out_of_bounds": {"count", "okay"},
 *    "average_bus_bandwidth": {"bandwidth", "okay"},
 *    "errors": ["NCCL's last error, \"\" for none"], "end_time": ...}
 * Booleans are strings, "root" is a padded string, NaN is the string "nan",
 * and the whole environment is there (only the relevant part is kept). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/host.h"
#include "nccl/collective.h"
#include "core/jsonio.h"
#include "nccl/dtype.h"
#include "report/import.h"
#include "report/import_figures.h"
#include "report/import_ncclt_record.h"
#include "core/text.h"

/* A number that may come as a number, a numeric string or "nan". */
static bool loose_number(json_object *v, double *out)
{
    if (v == NULL)
        return false;
    if (json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)) {
        *out = json_object_get_double(v);
        return isfinite(*out);
    }
    if (json_object_is_type(v, json_type_string)) {
        const char *s = json_object_get_string(v);
        while (*s == ' ')
            s++;
        return fb_parse_double_token(s, out);
    }
    return false;
}

/* A byte count: a loose number in [0, 1e19), which every size fits and
 * which converts to unsigned long long without overflow. */
static unsigned long long loose_bytes(json_object *v)
{
    double d = 0;
    return loose_number(v, &d) && d >= 0 && d < 1e19 ? (unsigned long long)d : 0;
}

static long loose_long(json_object *obj, const char *key, long dflt)
{
    double d = 0;
    if (!loose_number(fb_json_member(obj, key), &d) || d < -1e12 || d > 1e12)
        return dflt;
    return (long)d;
}

static const char *string_member(json_object *obj, const char *key)
{
    json_object *v = fb_json_member(obj, key);
    return v != NULL && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static void copy_string(char *dst, size_t len, const char *src)
{
    if (src != NULL)
        fb_copy(dst, len, src, strlen(src));
}

static void read_config(struct ncclt_record *r, json_object *c)
{
    if (c == NULL || !json_object_is_type(c, json_type_object))
        return;
    r->have_config = true;
    r->nthreads = loose_long(c, "nthreads", 1);
    r->ngpus = loose_long(c, "ngpus", 1);
    r->minbytes = loose_bytes(fb_json_member(c, "minimum_bytes"));
    r->maxbytes = loose_bytes(fb_json_member(c, "maximum_bytes"));
    r->step_is_factor = fb_json_member(c, "step_factor") != NULL;
    double step = 0;
    loose_number(fb_json_member(c, r->step_is_factor ? "step_factor" : "step_bytes"), &step);
    r->step = step > 0 && step < 1e18 ? (unsigned long long)step : 0;
    r->warmup = loose_long(c, "warmup_iters", 0);
    r->iters = loose_long(c, "iterations", 0);
    r->agg = loose_long(c, "aggregated_iterations", 1);
    r->validation = loose_long(c, "validation", 0);
    r->graph = loose_long(c, "graph", 0);
    ncclt_bound_counts(r);
}

static enum fb_status read_devices(struct ncclt_record *r, json_object *devs, struct fb_err *err)
{
    if (devs == NULL || !json_object_is_type(devs, json_type_array))
        return FB_OK;
    for (size_t i = 0; i < json_object_array_length(devs); i++) {
        json_object *e = json_object_array_get_idx(devs, i);
        struct ncclt_device d = {0};
        d.rank = loose_long(e, "rank", (long)i);
        copy_string(d.host, sizeof d.host, string_member(e, "hostname"));
        copy_string(d.bus, sizeof d.bus, string_member(e, "device_hex"));
        copy_string(d.name, sizeof d.name, string_member(e, "device_info"));
        if (d.host[0] == '\0')
            snprintf(d.host, sizeof d.host, "unknown");
        enum fb_status st = ncclt_add_device(r, &d, err);
        if (st != FB_OK)
            return st;
    }
    return FB_OK;
}

static void read_args(struct ncclt_record *r, json_object *args)
{
    if (args == NULL || !json_object_is_type(args, json_type_array))
        return;
    struct fb_str joined = {0};
    for (size_t i = 0; i < json_object_array_length(args); i++) {
        json_object *a = json_object_array_get_idx(args, i);
        if (!json_object_is_type(a, json_type_string))
            continue;
        const char *s = json_object_get_string(a);
        fb_str_addf(&joined, "%s%s", i ? " " : "", s);
        if (i == 0)
            ncclt_collective_in(s, r->collective, sizeof r->collective);
        /* -a: how the time is reduced across ranks (default mean). */
        if (strcmp(s, "-a") == 0 && i + 1 < json_object_array_length(args)) {
            const char *v = json_object_get_string(json_object_array_get_idx(args, i + 1));
            static const char *const names[] = {"rank0", "mean", "min", "max"};
            long a_val = v ? strtol(v, NULL, 10) : 1;
            if (a_val >= 0 && a_val <= 3)
                snprintf(r->time_reduction, sizeof r->time_reduction, "%s", names[a_val]);
        }
    }
    copy_string(r->invoked_as, sizeof r->invoked_as, fb_str_get(&joined));
    fb_str_free(&joined);
}

/* Only the variables that explain a fabric result, never secrets. */
static void read_env(struct ncclt_record *r, json_object *env)
{
    r->env = json_object_new_object();
    if (env == NULL || !json_object_is_type(env, json_type_array))
        return;
    for (size_t i = 0; i < json_object_array_length(env); i++) {
        json_object *e = json_object_array_get_idx(env, i);
        if (!json_object_is_type(e, json_type_string))
            continue;
        const char *kv = json_object_get_string(e);
        const char *eq = strchr(kv, '=');
        if (eq == NULL || eq == kv || (size_t)(eq - kv) >= 256)
            continue;
        char key[256];
        fb_copy(key, sizeof key, kv, (size_t)(eq - kv));
        if (fb_env_is_relevant(key))
            json_object_object_add(r->env, key, json_object_new_string(eq + 1));
    }
}

/* A measured figure: a finite number >= 0 or a numeric string, with the
 * precision its text shows (import_figures.h); or null / "nan" / "N/A"
 * for one nccl-tests did not measure (NAN). */
static bool strict_figure(json_object *v, struct fb_printed *out)
{
    *out = (struct fb_printed){NAN, 0};
    if (v == NULL)
        return true;
    if (json_object_is_type(v, json_type_string)) {
        const char *s = json_object_get_string(v);
        while (*s == ' ')
            s++;
        if (strcmp(s, "nan") == 0 || strcmp(s, "-nan") == 0 || strcmp(s, "N/A") == 0)
            return true;
    }
    return fb_printed_json(v, out);
}

/* A member's JSON text made safe to quote in a message. */
static const char *quoted_member(json_object *o, const char *key, char *buf, size_t len)
{
    return fb_import_printable(buf, len, json_object_to_json_string(fb_json_member(o, key)), 80);
}

/* #wrong: a count, or null / "N/A" when nccl-tests did not check (-1). */
static bool strict_wrong(json_object *v, long long *out)
{
    *out = -1;
    if (v == NULL || (json_object_is_type(v, json_type_string) && strcmp(json_object_get_string(v), "N/A") == 0))
        return true;
    double d = 0;
    if (json_object_is_type(v, json_type_boolean) || !loose_number(v, &d) || d < 0 || d != floor(d) || d > 9e18)
        return false;
    *out = (long long)d;
    return true;
}

static enum fb_status read_place(struct ncclt_record *r, json_object *o, const char *where, struct fb_place *p,
                                 struct ncclt_halves *h, const char *name, struct fb_err *err)
{
    memset(p, 0, sizeof *p);
    p->wrong = -1;
    p->time_us = p->algbw_GBps = p->busbw_GBps = NAN;
    if (o == NULL || json_object_is_type(o, json_type_null))
        return FB_OK;
    if (!json_object_is_type(o, json_type_object))
        return fb_fail(err, FB_ERR_INPUT, "%s: %s is not an object; the file is damaged", name, where);
    p->present = true;
    /* -C: the time is CPU time; the bandwidths came from the other one. */
    const char *time_key = fb_json_member(o, "time") ? "time" : "cpu_time";
    r->time_is_cpu = r->time_is_cpu || strcmp(time_key, "cpu_time") == 0;
    const char *const keys[] = {time_key, "alg_bw", "bus_bw"};
    struct fb_printed f[3];
    char quoted[256];
    for (size_t i = 0; i < 3; i++)
        if (!strict_figure(fb_json_member(o, keys[i]), &f[i]))
            return fb_fail(err, FB_ERR_INPUT, "%s: %s.%s is %s, not a finite number >= 0; the file is damaged", name, where,
                           keys[i], quoted_member(o, keys[i], quoted, sizeof quoted));
    p->time_us = f[0].v, p->algbw_GBps = f[1].v, p->busbw_GBps = f[2].v;
    *h = (struct ncclt_halves){f[0].half, f[1].half, f[2].half};
    if (!strict_wrong(fb_json_member(o, "nwrong"), &p->wrong))
        return fb_fail(err, FB_ERR_INPUT, "%s: %s.nwrong is %s, not a count or null; the file is damaged", name, where,
                       quoted_member(o, "nwrong", quoted, sizeof quoted));
    return FB_OK;
}

/* The type and reduction every row names must be ones nccl-tests has. */
static enum fb_status check_type_op(json_object *e, size_t i, const char *name, struct fb_err *err)
{
    static const char *const ops[] = {"sum", "prod", "max", "min", "avg", "mulsum", "none"};
    const char *type = string_member(e, "type"), *op = string_member(e, "redop");
    char quoted[128];
    /* The type table (nccl/dtype.h) has fp8's f8e4m3 and f8e5m2 too. */
    if (type == NULL || fb_dtype_parse(type) < 0)
        return fb_fail(err, FB_ERR_INPUT, "%s: results[%zu].type %s is not an nccl-tests data type (%s); the file is damaged",
                       name, i, type ? fb_import_printable(quoted, sizeof quoted, type, 40) : "is missing and", fb_dtype_choices());
    bool known = op == NULL; /* older versions print no reduction */
    for (size_t k = 0; op != NULL && k < sizeof ops / sizeof *ops; k++)
        known = known || strcmp(op, ops[k]) == 0;
    if (!known)
        return fb_fail(err, FB_ERR_INPUT, "%s: results[%zu].redop \"%s\" is not an nccl-tests operation (sum, prod, max, min, avg, mulsum, none)",
                       name, i, fb_import_printable(quoted, sizeof quoted, op, 40));
    return FB_OK;
}

static enum fb_status read_results(struct ncclt_record *r, json_object *results, const char *name,
                                   struct fb_err *err)
{
    if (results == NULL || !json_object_is_type(results, json_type_array))
        return fb_fail(err, FB_ERR_INPUT, "%s: nccl-tests JSON without a \"results\" list", name);
    for (size_t i = 0; i < json_object_array_length(results); i++) {
        json_object *e = json_object_array_get_idx(results, i);
        struct fb_row row = {0};
        double d = 0;
        if (!json_object_is_type(e, json_type_object) || !loose_number(fb_json_member(e, "size"), &d) || d < 0 || d > 1e19 || d != floor(d))
            return fb_fail(err, FB_ERR_INPUT, "%s: results[%zu] has no size that is a whole number of bytes", name, i);
        row.bytes = (unsigned long long)d;
        if (!loose_number(fb_json_member(e, "count"), &d) || d < 0 || d >= 1e19 || d != floor(d))
            return fb_fail(err, FB_ERR_INPUT, "%s: results[%zu].count is not a whole number of elements", name, i);
        row.count = (unsigned long long)d;
        enum fb_status pst = check_type_op(e, i, name, err);
        char where[64];
        struct ncclt_row_halves halves = {{0, 0, 0}, {0, 0, 0}};
        snprintf(where, sizeof where, "results[%zu].out_of_place", i);
        if (pst == FB_OK)
            pst = read_place(r, fb_json_member(e, "out_of_place"), where, &row.oop, &halves.oop, name, err);
        snprintf(where, sizeof where, "results[%zu].in_place", i);
        if (pst == FB_OK)
            pst = read_place(r, fb_json_member(e, "in_place"), where, &row.ip, &halves.ip, name, err);
        if (pst != FB_OK)
            return pst;
        if (!row.oop.present && !row.ip.present)
            return fb_fail(err, FB_ERR_INPUT, "%s: results[%zu] has neither out_of_place nor in_place", name, i);
        if (r->nrows > 0) {
            const struct fb_row *prev = &r->rows[r->nrows - 1];
            row.run = prev->run + (row.bytes <= prev->bytes ? 1 : 0);
        } else {
            copy_string(r->dtype, sizeof r->dtype, string_member(e, "type"));
            copy_string(r->op, sizeof r->op, string_member(e, "redop"));
            r->root = loose_long(e, "root", -1);
            r->root_printed = fb_json_member(e, "root") != NULL;
        }
        /* actual_iterations counts -n iterations; a row counts operations
         * (-n x -m), as fabric-coll's record does. */
        long agg = r->agg > 0 ? r->agg : 1;
        long iters = loose_long(e, "actual_iterations", r->iters) * agg;
        enum fb_status st = ncclt_add_row(r, &row, iters, &halves, err);
        if (st != FB_OK)
            return st;
    }
    return FB_OK;
}

static enum fb_status convert(struct ncclt_record *r, json_object *doc, const char *name,
                              const struct fb_import_opts *o, struct fb_import_out *out,
                              struct fb_err *err)
{
    copy_string(r->started, sizeof r->started, string_member(doc, "start_time"));
    read_args(r, fb_json_member(doc, "args"));
    read_env(r, fb_json_member(doc, "env"));
    long code = loose_long(doc, "nccl_version", 0);
    ncclt_version_from_code(code, r->nccl_version, sizeof r->nccl_version);
    json_object *config = fb_json_member(doc, "config");
    read_config(r, config);
    enum fb_status st = read_devices(r, fb_json_member(config, "devices"), err);
    if (st == FB_OK)
        st = read_results(r, fb_json_member(doc, "results"), name, err);
    if (st != FB_OK)
        return st;
    json_object *avg = fb_json_member(doc, "average_bus_bandwidth");
    if (avg != NULL) {
        r->finished = true;
        if (!loose_number(fb_json_member(avg, "bandwidth"), &r->avg_footer))
            r->avg_footer = NAN;
    }
    json_object *oob = fb_json_member(doc, "out_of_bounds");
    r->oob = oob ? loose_long(oob, "count", -1) : -1;
    json_object *errors = fb_json_member(doc, "errors");
    if (errors != NULL && json_object_is_type(errors, json_type_array) && json_object_array_length(errors) > 0) {
        json_object *e0 = json_object_array_get_idx(errors, 0);
        if (json_object_is_type(e0, json_type_string) && json_object_get_string(e0)[0] != '\0')
            fb_import_printable(r->fault, sizeof r->fault, json_object_get_string(e0), sizeof r->fault - 1);
    }
    json_object *result = NULL;
    st = ncclt_build_doc(r, name, o, &result, err);
    if (st == FB_OK)
        st = fb_import_out_add(out, result, err);
    return st;
}

enum fb_status fb_import_ncclt_json(const char *name, const char *text, size_t len,
                                    const struct fb_import_opts *o, struct fb_import_out *out,
                                    struct fb_err *err)
{
    json_object *doc = NULL;
    struct fb_json_syntax why;
    enum fb_status st = fb_json_parse_text(name, text, len, &doc, &why, err);
    if (st == FB_ERR_INPUT && why.truncated)
        return fb_fail(err, FB_ERR_INPUT, "%s: nccl-tests JSON ends early (the run was killed before it finished?); import its text output instead", name);
    if (st == FB_ERR_INPUT)
        return fb_fail(err, FB_ERR_INPUT, "%s: not valid JSON (%s)", name, json_tokener_error_desc(why.error));
    if (st != FB_OK)
        return st;
    if (!json_object_is_type(doc, json_type_object) || fb_json_member(doc, "results") == NULL) {
        json_object_put(doc);
        return fb_fail(err, FB_ERR_INPUT, "%s: not nccl-tests JSON (no \"results\" list)", name);
    }
    struct ncclt_record r;
    ncclt_record_init(&r, "nccl-tests-json");
    r.layout = NCCLT_LAYOUT_JSON;
    st = convert(&r, doc, name, o, out, err);
    ncclt_record_free(&r);
    json_object_put(doc);
    return st;
}

bool fb_detect_ncclt_json(const char *text, size_t len)
{
    return fb_import_looks_json(text, len) && !fb_import_contains(text, len, "\"test_info\"") &&
           !fb_detect_rcclt_json(text, len) &&
           (fb_import_contains(text, len, "\"results\"") || fb_import_contains(text, len, "\"nccl_version\"") ||
            (fb_import_contains(text, len, "\"args\"") && fb_import_contains(text, len, "\"config\"")));
}

/* rccl-tests' own results file (-X FILE -Z json; before 2025 -x FILE -Z
 * json), one object per placement of each size:
 *   {"numCycle": 0, "name": "AllReduce", "nodes": 2, "ranks": 16,
 *    "ranksPerNode": 8, "gpusPerRank": 1 (MPI builds; "gpus" without MPI),
 *    "size": 1048576, "type": "float", "redop": "sum", "inPlace": 0,
 *    "time": 12.345678, "algBw": 84.93, "busBw": 148.63, "wrong": "0"}
 * in a JSON array (2025), or one object a line (2024). Numbers have six
 * decimals (std::to_string); "wrong" is a string, "N/A" without -c.
 * "size" is the receive buffer's bytes, which for reduce_scatter and
 * scatter is one rank's share of the size nccl-tests' table prints. */
struct rccl_run {
    long ranks, nodes, per_node;
};

static enum fb_status rccl_place(struct ncclt_record *r, json_object *e, size_t i, struct fb_place *p,
                                 struct ncclt_halves *h, const char *name, struct fb_err *err)
{
    static const char *const keys[] = {"time", "algBw", "busBw"};
    struct fb_printed f[3];
    char quoted[256];
    for (size_t k = 0; k < 3; k++)
        if (!strict_figure(fb_json_member(e, keys[k]), &f[k]))
            return fb_fail(err, FB_ERR_INPUT, "%s: [%zu].%s is %s, not a finite number >= 0; the file is damaged", name, i,
                           keys[k], quoted_member(e, keys[k], quoted, sizeof quoted));
    memset(p, 0, sizeof *p);
    p->present = true;
    p->time_us = f[0].v, p->algbw_GBps = f[1].v, p->busbw_GBps = f[2].v;
    *h = (struct ncclt_halves){f[0].half, f[1].half, f[2].half};
    if (!strict_wrong(fb_json_member(e, "wrong"), &p->wrong))
        return fb_fail(err, FB_ERR_INPUT, "%s: [%zu].wrong is %s, not a count or \"N/A\"; the file is damaged", name, i,
                       quoted_member(e, "wrong", quoted, sizeof quoted));
    (void)r;
    return FB_OK;
}

/* The table's size and count of a result: "size" is what the receive
 * buffer holds. */
static bool rccl_row_size(const struct ncclt_record *r, const struct fb_collective *c, double recv, long n,
                          struct fb_row *row)
{
    int t = fb_dtype_parse(r->dtype);
    size_t esz = t >= 0 ? fb_dtype_info((enum fb_dtype)t)->size : 0;
    if (c == NULL || esz == 0 || n < 1 || recv < 0 || recv > 1e18 || recv != floor(recv))
        return false;
    bool share = c == fb_collective_named("reduce_scatter") || c == fb_collective_named("scatter");
    row->bytes = (unsigned long long)recv * (share ? (unsigned long long)n : 1);
    row->count = c->counts((size_t)row->bytes, esz, (int)n).param;
    return true;
}

static enum fb_status rccl_results(struct ncclt_record *r, json_object *list, const char *name,
                                   struct rccl_run *run, struct fb_err *err)
{
    struct fb_row row = {0};
    struct ncclt_row_halves halves = {{0, 0, 0}, {0, 0, 0}};
    bool open = false;
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        json_object *e = json_object_array_get_idx(list, i);
        if (!json_object_is_type(e, json_type_object))
            return fb_fail(err, FB_ERR_INPUT, "%s: [%zu] is not an object; the file is damaged", name, i);
        if (i == 0) {
            ncclt_collective_in(string_member(e, "name") ? string_member(e, "name") : "", r->collective,
                                sizeof r->collective);
            copy_string(r->dtype, sizeof r->dtype, string_member(e, "type"));
            copy_string(r->op, sizeof r->op, string_member(e, "redop"));
            run->ranks = loose_long(e, "ranks", loose_long(e, "gpus", 0));
            run->nodes = loose_long(e, "nodes", fb_json_member(e, "gpus") ? 1 : 0);
            run->per_node = loose_long(e, "ranksPerNode", fb_json_member(e, "gpus") ? run->ranks : 0);
        }
        double size = 0;
        struct fb_row next = {0};
        if (!loose_number(fb_json_member(e, "size"), &size) ||
            !rccl_row_size(r, fb_collective_named(r->collective), size, run->ranks, &next))
            return fb_fail(err, FB_ERR_INPUT, "%s: [%zu] has no size that is a whole number of bytes of a known type and collective on a known rank count", name, i);
        bool in_place = loose_long(e, "inPlace", 0) != 0;
        if (open && (!in_place || row.ip.present || next.bytes != row.bytes)) {
            enum fb_status st = ncclt_add_row(r, &row, r->iters, &halves, err);
            if (st != FB_OK)
                return st;
            open = false;
        }
        if (!open) {
            row = next;
            row.run = loose_long(e, "numCycle", 0);
            row.oop = row.ip = (struct fb_place){.wrong = -1, .time_us = NAN, .algbw_GBps = NAN, .busbw_GBps = NAN};
            halves = (struct ncclt_row_halves){{0, 0, 0}, {0, 0, 0}};
            open = true;
        }
        enum fb_status st = in_place ? rccl_place(r, e, i, &row.ip, &halves.ip, name, err)
                                     : rccl_place(r, e, i, &row.oop, &halves.oop, name, err);
        if (st != FB_OK)
            return st;
    }
    return open ? ncclt_add_row(r, &row, r->iters, &halves, err) : FB_OK;
}

/* The 2024 form, one object a line, as the array of the 2025 form. */
static json_object *rccl_lines_as_array(const char *name, const char *text, size_t len, struct fb_err *err)
{
    struct fb_str joined = {0};
    fb_str_addn(&joined, "[", 1);
    size_t pos = 0, n = 0;
    const char *line = NULL;
    bool first = true;
    while (fb_next_line(text, len, &pos, &line, &n)) {
        size_t lead = 0;
        while (lead < n && (line[lead] == ' ' || line[lead] == '\t' || line[lead] == '\r'))
            lead++;
        if (lead == n)
            continue;
        if (!first)
            fb_str_addn(&joined, ",", 1);
        fb_str_addn(&joined, line, n);
        first = false;
    }
    fb_str_addn(&joined, "]", 1);
    json_object *doc = NULL;
    struct fb_json_syntax why;
    enum fb_status st = joined.oom ? fb_fail(err, FB_ERR_INTERNAL, "out of memory importing %s", name)
                                   : fb_json_parse_text(name, fb_str_get(&joined), joined.len, &doc, &why, err);
    fb_str_free(&joined);
    if (st == FB_ERR_INPUT)
        fb_fail(err, FB_ERR_INPUT, "%s: not rccl-tests JSON lines (%s)", name, json_tokener_error_desc(why.error));
    return st == FB_OK ? doc : NULL;
}

enum fb_status fb_import_rcclt_json(const char *name, const char *text, size_t len, const struct fb_import_opts *o,
                                    struct fb_import_out *out, struct fb_err *err)
{
    json_object *doc = NULL;
    if (!fb_import_looks_json(text, len)) {
        struct fb_json_syntax why;
        enum fb_status st = fb_json_parse_text(name, text, len, &doc, &why, err);
        if (st == FB_ERR_INPUT)
            return fb_fail(err, FB_ERR_INPUT, "%s: not valid JSON (%s)", name, json_tokener_error_desc(why.error));
        if (st != FB_OK)
            return st;
    } else if ((doc = rccl_lines_as_array(name, text, len, err)) == NULL) {
        return err->code;
    }
    if (!json_object_is_type(doc, json_type_array) || json_object_array_length(doc) == 0) {
        json_object_put(doc);
        return fb_fail(err, FB_ERR_INPUT, "%s: not rccl-tests JSON (a list of results with \"busBw\" and \"inPlace\")", name);
    }
    struct ncclt_record r;
    ncclt_record_init(&r, "rccl-tests-json");
    r.layout = NCCLT_LAYOUT_JSON;
    r.rccl = true;
    r.finished = true; /* the file is written once the sweep ended */
    struct rccl_run run = {0};
    enum fb_status st = rccl_results(&r, doc, name, &run, err);
    r.ranks_known = run.ranks, r.nodes_known = run.nodes, r.ranks_per_node_known = run.per_node;
    json_object *result = NULL;
    if (st == FB_OK)
        st = ncclt_build_doc(&r, name, o, &result, err);
    if (st == FB_OK)
        st = fb_import_out_add(out, result, err);
    ncclt_record_free(&r);
    json_object_put(doc);
    return st;
}

bool fb_detect_rcclt_json(const char *text, size_t len)
{
    size_t i = 0;
    while (i < len && (text[i] == ' ' || text[i] == '\n' || text[i] == '\r' || text[i] == '\t'))
        i++;
    return i < len && (text[i] == '[' || text[i] == '{') && fb_import_contains(text, len, "\"busBw\"") &&
           fb_import_contains(text, len, "\"inPlace\"");
}
