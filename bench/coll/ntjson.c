#include "coll/ntjson.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "coll/record.h"
#include "core/jsonio.h"
#include "core/outfile.h"

extern char **environ;

bool fb_ntjson_env_keep(const char *name)
{
    static const char *const prefixes[] = {"NCCL_", "FI_", "UCX_", "OMPI_", "PMIX_", "SLURM_",
                                           "PMI_", "HYDRA_", "I_MPI_", "MV2_", NULL};
    static const char *const exact[] = {"MPI_LOCALRANKID", "MPI_LOCALNRANKS", "CUDA_VISIBLE_DEVICES", NULL};
    /* Open MPI's per-job transport key is a credential of sorts: never. */
    if (strcmp(name, "OMPI_MCA_orte_precondition_transports") == 0)
        return false;
    for (int i = 0; exact[i]; i++)
        if (strcmp(name, exact[i]) == 0)
            return true;
    for (int i = 0; prefixes[i]; i++)
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    return false;
}

/* nccl-tests prints doubles with "%lf" and NaN as the string "nan"; our
 * record stores a figure it could not compute as null. */
static json_object *nt_double(json_object *v)
{
    double d = v != NULL ? json_object_get_double(v) : NAN;
    if (v == NULL || !isfinite(d))
        return json_object_new_string("nan");
    char text[64];
    snprintf(text, sizeof text, "%lf", d);
    return json_object_new_double_s(d, text);
}

static json_object *nt_double_of(double d)
{
    json_object *v = json_object_new_double(d);
    json_object *out = nt_double(v);
    json_object_put(v);
    return out;
}

/* Booleans are the strings "true" and "false" in nccl-tests' JSON. */
static json_object *nt_bool(bool b)
{
    return json_object_new_string(b ? "true" : "false");
}

static int64_t int_or(json_object *obj, const char *key, int64_t dflt)
{
    int64_t v = dflt;
    fb_json_get_int64(obj, key, &v);
    return v;
}

static const char *string_or(json_object *obj, const char *key, const char *dflt)
{
    const char *s = fb_json_get_string(obj, key);
    return s ? s : dflt;
}

/* "2026-12-02T01:03:19Z" (our UTC stamps) as nccl-tests' local
 * "2026-12-02 02:03:19"; now when the record has no stamp. */
static json_object *local_time(const char *utc)
{
    struct tm tm = {0};
    time_t t = time(NULL);
    if (utc != NULL && sscanf(utc, "%d-%d-%dT%d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                              &tm.tm_min, &tm.tm_sec) == 6) {
        tm.tm_year -= 1900;
        tm.tm_mon -= 1;
        t = timegm(&tm);
    }
    struct tm local;
    char text[64];
    localtime_r(&t, &local);
    strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &local);
    return json_object_new_string(text);
}

static json_object *args_of(json_object *rec)
{
    json_object *args = fb_json_member(rec, "args"), *out = json_object_new_array();
    for (size_t i = 0; args != NULL && i < json_object_array_length(args); i++)
        json_object_array_add(out, json_object_new_string(json_object_get_string(json_object_array_get_idx(args, i))));
    if (json_object_array_length(out) == 0)
        json_object_array_add(out, json_object_new_string(string_or(fb_json_member(rec, "tool"), "invoked_as", "fabric-coll")));
    return out;
}

static bool listed(json_object *list, const char *name, size_t n)
{
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        const char *e = json_object_get_string(json_object_array_get_idx(list, i));
        if (strncmp(e, name, n) == 0 && e[n] == '=')
            return true;
    }
    return false;
}

/* "NAME=value" strings as nccl-tests lists them: the record's, then this
 * process's launcher variables the record does not keep. */
static json_object *env_of(json_object *rec, bool live)
{
    json_object *out = json_object_new_array(), *env = fb_json_member(rec, "env");
    if (env != NULL && json_object_is_type(env, json_type_object)) {
        json_object_object_foreach(env, k, v) {
            if (!fb_ntjson_env_keep(k))
                continue;
            char *kv = NULL;
            if (asprintf(&kv, "%s=%s", k, json_object_get_string(v)) >= 0)
                json_object_array_add(out, json_object_new_string(kv));
            free(kv);
        }
    }
    for (char **e = environ; live && e && *e; e++) {
        const char *eq = strchr(*e, '=');
        char name[256];
        size_t n = eq ? (size_t)(eq - *e) : 0;
        if (n == 0 || n >= sizeof name)
            continue;
        memcpy(name, *e, n);
        name[n] = '\0';
        if (fb_ntjson_env_keep(name) && !listed(out, name, n))
            json_object_array_add(out, json_object_new_string(*e));
    }
    return out;
}

/* NCCL's version code: major*10000 + minor*100 + patch since 2.9,
 * major*1000 + minor*100 + patch before; 0 without NCCL (the MPI backend). */
static int nccl_code(json_object *rec)
{
    const char *v = fb_json_get_string(fb_json_member(rec, "versions"), "nccl");
    int major = 0, minor = 0, patch = 0;
    if (v == NULL || sscanf(v, "%d.%d.%d", &major, &minor, &patch) < 2)
        return 0;
    return major > 2 || (major == 2 && minor >= 9) ? major * 10000 + minor * 100 + patch
                                                    : major * 1000 + minor * 100 + patch;
}

/* "0000:1b:00.0" as nccl-tests' "%04x:%02x:%02x" (no function). */
static json_object *device_hex(json_object *dev)
{
    const char *bus = fb_json_get_string(dev, "pci_bus_id");
    char hex[64];
    snprintf(hex, sizeof hex, "%s", bus ? bus : "host");
    char *dot = strrchr(hex, '.');
    if (dot != NULL && strchr(hex, ':') != NULL)
        *dot = '\0';
    return json_object_new_string(hex);
}

static json_object *devices_of(json_object *rec)
{
    json_object *devs = fb_json_member(rec, "devices"), *out = json_object_new_array();
    for (size_t i = 0; devs != NULL && i < json_object_array_length(devs); i++) {
        json_object *d = json_object_array_get_idx(devs, i), *o = json_object_new_object();
        json_object_object_add(o, "rank", json_object_new_int((int)int_or(d, "rank", (int64_t)i)));
        json_object_object_add(o, "group", json_object_new_int((int)int_or(d, "group", 0)));
        json_object_object_add(o, "pid", json_object_new_int((int)int_or(d, "pid", 0)));
        json_object_object_add(o, "hostname", json_object_new_string(string_or(d, "host", "")));
        json_object_object_add(o, "device", json_object_new_int((int)int_or(d, "cuda_device", -1)));
        json_object_object_add(o, "device_hex", device_hex(d));
        json_object_object_add(o, "device_info", json_object_new_string(string_or(d, "name", "")));
        json_object_array_add(out, o);
    }
    return out;
}

static json_object *config_of(json_object *rec)
{
    json_object *c = fb_json_member(rec, "config"), *o = json_object_new_object();
    int64_t factor = int_or(c, "stepfactor", 1);
    json_object_object_add(o, "nthreads", json_object_new_int((int)int_or(c, "nthreads", 1)));
    json_object_object_add(o, "ngpus", json_object_new_int((int)int_or(c, "ngpus", 1)));
    json_object_object_add(o, "minimum_bytes", json_object_new_int64(int_or(c, "minbytes", 0)));
    json_object_object_add(o, "maximum_bytes", json_object_new_int64(int_or(c, "maxbytes", 0)));
    if (factor > 1)
        json_object_object_add(o, "step_factor", json_object_new_int64(factor));
    else
        json_object_object_add(o, "step_bytes", json_object_new_int64(int_or(c, "stepbytes", 0)));
    json_object_object_add(o, "warmup_iters", json_object_new_int((int)int_or(c, "warmup_iters", 0)));
    json_object_object_add(o, "iterations", json_object_new_int((int)int_or(c, "iters", 0)));
    json_object_object_add(o, "aggregated_iterations", json_object_new_int((int)int_or(c, "agg_iters", 1)));
    json_object_object_add(o, "validation", json_object_new_int((int)int_or(c, "check", 0)));
    json_object_object_add(o, "graph", json_object_new_int((int)int_or(c, "cudagraph", 0)));
    json_object_object_add(o, "blocking_collectives", nt_bool(int_or(c, "blocking", 0) != 0));
    json_object_object_add(o, "per_iter_timing", nt_bool(int_or(c, "per_iter_timing", 0) != 0));
    json_object_object_add(o, "per_iter_skip", json_object_new_int((int)int_or(c, "per_iter_skip", 0)));
    json_object_object_add(o, "parallel_init", nt_bool(int_or(c, "parallel_init", 0) != 0));
    json_object_object_add(o, "devices", devices_of(rec));
    return o;
}

/* Whether the table's time column (and so "cpu_time" for "time") is the
 * host's time: the record says which (time_column), else -C's echo. */
static bool reports_cputime(json_object *rec)
{
    const char *col = fb_json_get_string(rec, "time_column");
    if (col != NULL)
        return strcmp(col, "cpu_time") == 0;
    return int_or(fb_json_member(rec, "config"), "report_cputime", 0) != 0;
}

static json_object *placement_of(json_object *p, bool cputime)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, cputime ? "cpu_time" : "time", nt_double(fb_json_member(p, cputime ? "cpu_time_us" : "time_us")));
    json_object_object_add(o, "alg_bw", nt_double(fb_json_member(p, "algbw_GBps")));
    json_object_object_add(o, "bus_bw", nt_double(fb_json_member(p, "busbw_GBps")));
    json_object *wrong = fb_json_member(p, "wrong");
    json_object_object_add(o, "nwrong", wrong ? nt_double(wrong) : NULL);
    return o;
}

static json_object *double_list(json_object *list)
{
    json_object *out = json_object_new_array();
    for (size_t i = 0; list != NULL && i < json_object_array_length(list); i++) {
        json_object *e = json_object_array_get_idx(list, i);
        json_object_array_add(out, json_object_is_type(e, json_type_array) ? double_list(e) : nt_double(e));
    }
    return out;
}

/* -I 1: a placement's "per_iter" summary as nccl-tests' *_per_iter object. */
static json_object *per_iter_of(json_object *pi)
{
    static const char *const figures[] = {"min_us", "max_us", "avg_us", "p50_us", "p95_us",
                                          "p99_us", "stdev_us", "cv_pct", NULL};
    json_object *o = json_object_new_object();
    json_object_object_add(o, "skipped_iterations", json_object_new_int((int)int_or(pi, "skipped_iterations", 0)));
    for (int i = 0; figures[i]; i++)
        json_object_object_add(o, figures[i], nt_double(fb_json_member(pi, figures[i])));
    json_object_object_add(o, "times_us", double_list(fb_json_member(pi, "times_us")));
    json_object *per_process = fb_json_member(pi, "per_process_max_times_us");
    if (per_process != NULL && json_object_array_length(per_process) > 1)
        json_object_object_add(o, "per_process_max_times_us", double_list(per_process));
    return o;
}

static void add_placement(json_object *out, json_object *row, const char *key, bool cputime)
{
    json_object *p = fb_json_member(row, key);
    json_object_object_add(out, key, p ? placement_of(p, cputime) : NULL);
    json_object *pi = fb_json_member(p, "per_iter");
    if (pi != NULL) {
        char name[32];
        snprintf(name, sizeof name, "%s_per_iter", key);
        json_object_object_add(out, name, per_iter_of(pi));
    }
}

/* A row's type, reduction and root: its own when it names them (-d all,
 * -o all, -r all), else the run's. */
static const char *row_string(json_object *row, json_object *rec, const char *key, const char *doc_key)
{
    const char *s = fb_json_get_string(row, key);
    return s ? s : string_or(rec, doc_key, "");
}

static json_object *result_of(json_object *rec, json_object *row, bool cputime)
{
    json_object *o = json_object_new_object();
    int64_t agg = int_or(fb_json_member(rec, "config"), "agg_iters", 1);
    int64_t root = int_or(row, "root", int_or(rec, "root", -1));
    char root_text[16];
    snprintf(root_text, sizeof root_text, "%6d", (int)root);
    json_object_object_add(o, "size", json_object_new_int64(int_or(row, "bytes", 0)));
    json_object_object_add(o, "count", json_object_new_int64(int_or(row, "count", 0)));
    json_object_object_add(o, "type", json_object_new_string(row_string(row, rec, "type", "dtype")));
    json_object_object_add(o, "redop", json_object_new_string(row_string(row, rec, "redop", "op")));
    json_object_object_add(o, "root", json_object_new_string(root_text));
    add_placement(o, row, "out_of_place", cputime);
    add_placement(o, row, "in_place", cputime);
    /* nccl-tests counts -n iterations; our rows count operations (-n x -m). */
    int64_t iters = int_or(row, "iterations", 0) / (agg > 0 ? agg : 1);
    json_object_object_add(o, "actual_iterations", json_object_new_int((int)iters));
    json_object_object_add(o, "experiment_name", json_object_new_string(""));
    return o;
}

static json_object *results_of(json_object *rec)
{
    json_object *rows = fb_json_member(rec, "rows"), *out = json_object_new_array();
    bool cputime = reports_cputime(rec);
    for (size_t i = 0; rows != NULL && i < json_object_array_length(rows); i++)
        json_object_array_add(out, result_of(rec, json_object_array_get_idx(rows, i), cputime));
    return out;
}

/* Placements with wrong elements, when the record has no footer of its
 * own (an older file): nccl-tests counts such checks per rank. */
static int64_t wrong_placements(json_object *rows)
{
    int64_t n = 0;
    for (size_t i = 0; rows != NULL && i < json_object_array_length(rows); i++) {
        json_object *row = json_object_array_get_idx(rows, i);
        n += int_or(fb_json_member(row, "out_of_place"), "wrong", 0) > 0;
        n += int_or(fb_json_member(row, "in_place"), "wrong", 0) > 0;
    }
    return n;
}

static void add_footer(json_object *o, json_object *rec)
{
    json_object *footer = fb_json_member(rec, "footer");
    json_object *summary = fb_summary_of_rows(fb_json_member(rec, "rows"), 0);
    double avg = 0, min_bw = -1;
    fb_json_get_double(summary, "avg_busbw_GBps", &avg);
    fb_json_get_double(footer, "avg_busbw_GBps", &avg);
    int64_t oob = int_or(footer, "out_of_bounds", wrong_placements(fb_json_member(rec, "rows")));
    bool checked = fb_json_get_double(footer, "min_bw_GBps", &min_bw);
    json_object_put(summary);

    json_object *b = json_object_new_object();
    json_object_object_add(b, "count", json_object_new_int((int)oob));
    json_object_object_add(b, "okay", nt_bool(oob == 0));
    json_object_object_add(o, "out_of_bounds", b);
    json_object *a = json_object_new_object();
    json_object_object_add(a, "bandwidth", nt_double_of(avg));
    json_object_object_add(a, "okay", checked ? nt_bool(avg >= min_bw * 0.9) : json_object_new_string("unchecked"));
    json_object_object_add(o, "average_bus_bandwidth", a);
}

/* nccl-tests lists NCCL's last error, "" when there is none. */
static json_object *errors_of(json_object *rec)
{
    json_object *e = json_object_new_array();
    const char *msg = fb_json_get_string(fb_json_member(rec, "fault"), "message");
    json_object_array_add(e, json_object_new_string(msg ? msg : ""));
    return e;
}

json_object *fb_ntjson_from_record(json_object *rec, bool live_env)
{
    json_object *o = json_object_new_object();
    bool complete = false;
    fb_json_get_bool(rec, "complete", &complete);
    json_object_object_add(o, "version", json_object_new_int(FB_NTJSON_VERSION));
    json_object_object_add(o, "start_time", local_time(fb_json_get_string(rec, "start_time")));
    json_object_object_add(o, "args", args_of(rec));
    json_object_object_add(o, "env", env_of(rec, live_env));
    json_object_object_add(o, "nccl_version", json_object_new_int(nccl_code(rec)));
    json_object_object_add(o, "config", config_of(rec));
    json_object_object_add(o, "results", results_of(rec));
    if (complete)
        add_footer(o, rec);
    if (complete || fb_json_member(rec, "fault") != NULL)
        json_object_object_add(o, "errors", errors_of(rec));
    if (complete)
        json_object_object_add(o, "end_time", local_time(fb_json_get_string(rec, "end_time")));
    return o;
}

char *fb_ntjson_text(json_object *record, bool live_env)
{
    json_object *view = fb_ntjson_from_record(record, live_env);
    char *text = fb_json_text(view, JSON_C_TO_STRING_PLAIN);
    json_object_put(view);
    return text;
}

bool fb_ntjson_name_is_json(const char *path)
{
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    return dot != NULL && (slash == NULL || dot > slash) && dot[1] != '\0' && strcasecmp(dot + 1, "json") == 0;
}

/* open(O_EXCL) on each candidate name until one is new. */
static int create_numbered(const char *requested, char *taken, size_t cap)
{
    snprintf(taken, cap, "%s", requested);
    for (int n = 0;; n++) {
        int fd = open(taken, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST || n == INT_MAX)
            return fd;
        if (snprintf(taken, cap, "%s.%d", requested, n) >= (int)cap) {
            errno = ENAMETOOLONG;
            return -1;
        }
    }
}

void fb_ntjson_open(struct fb_ntjson_file *f, const char *requested, json_object *record, char *line, size_t len)
{
    memset(f, 0, sizeof *f);
    int fd = create_numbered(requested, f->path, sizeof f->path);
    if (fd < 0) {
        snprintf(line, len, "# skipping json output; %s not accessible", f->path);
        return;
    }
    char *text = fb_ntjson_text(record, true);
    size_t n = text ? strlen(text) : 0, done = 0;
    while (done < n) {
        ssize_t w = write(fd, text + done, n - done);
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    free(text);
    close(fd);
    f->active = true;
    snprintf(line, len, "# Writing JSON output to %s", f->path);
}

enum fb_status fb_ntjson_save(const struct fb_ntjson_file *f, json_object *record, struct fb_err *err)
{
    if (!f->active)
        return FB_OK;
    char *text = fb_ntjson_text(record, true);
    if (text == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "cannot serialise the nccl-tests JSON for %s (out of memory)", f->path);
    enum fb_status st = fb_out_write(f->path, text, strlen(text), err);
    free(text);
    return st;
}
