/* fabric-coll: a collective over a size sweep on every rank of an MPI job.
 * Also installed as all_reduce_perf, all_gather_perf, ... (nccl-tests
 * drop-in). Every check that can fail runs on all ranks and is agreed on
 * before anyone proceeds, so a bad argument on one rank ends the job with
 * one message instead of a hang. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll/backend.h"
#include "coll/config.h"
#include "coll/measure.h"
#include "coll/plan.h"
#include "coll/record.h"
#include "coll/table.h"
#include "coll/transport.h"
#include "coll/validate.h"
#include "core/clock.h"
#include "core/gather.h"
#include "core/jsonio.h"
#include "core/units.h"
#include "core/version.h"
#include "core/world.h"

#define STAGE_BYTES (16u << 20)
#define HOST_RESERVE_BYTES (256ULL << 20)
#define GPU_RESERVE_BYTES (1ULL << 30)

struct run {
    struct coll_config cfg;
    struct fb_world world;
    struct fb_backend be;
    struct fb_plan plan;
    struct fb_checker checker;
    struct fb_record rec;
    struct fb_timing timing;
    char cluster[128];
    uint64_t wrong_total;
    double busbw_sum;
    long busbw_n;
    int mismatch_lines;
    char cap_note[160]; /* set when --cap-memory lowered -e */
    struct fb_nccl_capture nccl_log;
    char log_note[PATH_MAX + 128]; /* why NCCL's log is not captured */
};

/* Rank 0 prints the agreed error; every rank returns the agreed code. */
static int fail_agreed(struct run *r, struct fb_err *err)
{
    enum fb_status st = fb_world_agree(&r->world, err);
    if (r->world.rank == 0 && st != FB_OK)
        fprintf(stderr, "fabric-coll: %s\n", err->msg);
    return (int)st;
}

/* A failure on this rank alone, mid-sweep: peers may be waiting inside a
 * collective, so the only clean end is to say where and abort the job. */
static void abort_job(struct run *r, struct fb_err *err)
{
    fprintf(stderr, "fabric-coll: rank %d on %s: %s\n", r->world.rank, r->world.host, err->msg);
    if (r->world.rank == 0 && r->rec.doc != NULL) {
        struct fb_err ignored = {0};
        fb_record_fault(&r->rec, err->code, err->msg, r->world.rank, r->world.host);
        fb_record_save(&r->rec, 0, &ignored);
    }
    if (r->be.state != NULL)
        r->be.ops->fini(&r->be, 1);
    MPI_Abort(r->world.comm, (int)err->code);
}

static void pick_cluster(struct run *r)
{
    const char *name = r->cfg.cluster ? r->cfg.cluster : getenv("FABRIC_CLUSTER");
    char host0[FB_HOST_MAX];
    snprintf(host0, sizeof host0, "%s", r->world.hosts[0]);
    if (name == NULL || *name == '\0')
        name = host0;
    /* The label becomes a directory name: keep it to a safe alphabet. */
    size_t i = 0;
    for (; name[i] && i + 1 < sizeof r->cluster; i++) {
        char c = name[i];
        int safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                   c == '-' || c == '_' || c == '.';
        r->cluster[i] = safe ? c : '_';
    }
    r->cluster[i] = '\0';
}

static enum fb_status results_path(struct run *r, char *path, size_t len, struct fb_err *err)
{
    if (r->cfg.json_path != NULL) {
        if (snprintf(path, len, "%s", r->cfg.json_path) >= (int)len)
            return fb_fail(err, FB_ERR_USAGE, "-J path too long");
        return FB_OK;
    }
    char stamp[32];
    fb_utc_stamp(stamp, sizeof stamp);
    if (snprintf(path, len, "%s/%s/%s-%s.json", r->cfg.results_dir, r->cluster, stamp,
                 r->cfg.coll->name) >= (int)len)
        return fb_fail(err, FB_ERR_USAGE, "results path too long; use a shorter --results-dir");
    return FB_OK;
}

static enum fb_status check_run_shape(struct run *r, struct fb_err *err)
{
    if (r->cfg.coll->rooted && r->cfg.root >= r->world.size)
        return fb_fail(err, FB_ERR_USAGE, "-r %ld is not a rank of this %d-rank job; use -r 0 to %d",
                       r->cfg.root, r->world.size, r->world.size - 1);
    return FB_OK;
}

/* How far the sweep may go in memory; ranks with the least memory decide
 * and the lowest of them explains. */
static enum fb_status fit_memory(struct run *r, struct fb_err *err)
{
    const struct fb_backend_ops *ops = r->be.ops;
    int gpu = strcmp(ops->name, "nccl") == 0;
    int sharers = gpu ? 1 : r->world.local_size;
    uint64_t avail = 0;
    size_t esz = fb_dtype_info(r->cfg.dtype)->size;
    enum fb_status st = ops->free_memory(&r->be, &avail, err);
    int fit = -1;
    if (st == FB_OK) {
        uint64_t reserve = (gpu ? GPU_RESERVE_BYTES : HOST_RESERVE_BYTES + avail / 10) +
                           (uint64_t)STAGE_BYTES * (uint64_t)sharers;
        fit = fb_plan_largest_fit(&r->plan, r->cfg.coll, esz, r->world.size, sharers, avail, reserve);
    }
    int fit_all = fit;
    MPI_Allreduce(&fit, &fit_all, 1, MPI_INT, MPI_MIN, r->world.comm);
    if (st != FB_OK || fit_all == r->plan.count - 1)
        return st;
    if (fit_all >= 0 && r->cfg.cap_memory) {
        char cap[32], want[32];
        fb_format_size(r->plan.sizes[fit_all], cap, sizeof cap);
        fb_format_size(r->plan.sizes[r->plan.count - 1], want, sizeof want);
        snprintf(r->cap_note, sizeof r->cap_note,
                 "memory: sweep capped at %s instead of %s (--cap-memory)", cap, want);
        r->plan.count = fit_all + 1;
        return FB_OK;
    }
    if (fit != fit_all)
        return FB_OK; /* another rank has less memory and will explain */
    size_t send = 0, recv = 0;
    fb_plan_buffers(r->cfg.coll, esz, r->world.size, r->plan.sizes[r->plan.count - 1], &send, &recv);
    char want[32], have[32], need[32], fits[96] = "no size of this sweep fits";
    fb_format_size(r->plan.sizes[r->plan.count - 1], want, sizeof want);
    fb_format_gib(avail, have, sizeof have);
    fb_format_gib((uint64_t)(send + recv) * (uint64_t)sharers, need, sizeof need);
    if (fit >= 0) {
        char s[32];
        fb_format_size(r->plan.sizes[fit], s, sizeof s);
        snprintf(fits, sizeof fits, "the largest size that fits is -e %s", s);
    }
    return fb_fail(err, FB_ERR_MEMORY,
                   "-e %s needs %s of %s memory on %s (%d rank%s) but %s is free; %s, or add "
                   "--cap-memory to cap the sweep with a warning",
                   want, need, gpu ? "GPU" : "host", r->world.host, sharers, sharers > 1 ? "s" : "",
                   have, fits);
}

static enum fb_status allocate(struct run *r, struct fb_err *err)
{
    size_t esz = fb_dtype_info(r->cfg.dtype)->size;
    size_t send = 0, recv = 0;
    fb_plan_buffers(r->cfg.coll, esz, r->world.size, r->plan.sizes[r->plan.count - 1], &send, &recv);
    enum fb_status st = r->be.ops->alloc(&r->be, send, recv, err);
    if (st == FB_OK)
        st = fb_checker_init(&r->checker, STAGE_BYTES, err);
    return st;
}

static json_object *device_json(struct run *r)
{
    json_object *d = json_object_new_object();
    json_object_object_add(d, "rank", json_object_new_int(r->world.rank));
    json_object_object_add(d, "host", json_object_new_string(r->world.host));
    json_object_object_add(d, "local_rank", json_object_new_int(r->world.local_rank));
    r->be.ops->describe(&r->be, d);
    return d;
}

static void print_rank_lines(char **devices, int n)
{
    printf("# Using devices\n");
    for (int i = 0; i < n; i++) {
        json_object *d = json_tokener_parse(devices[i]);
        const char *host = fb_json_get_string(d, "host"), *name = fb_json_get_string(d, "name");
        const char *bus = fb_json_get_string(d, "pci_bus_id");
        int64_t dev = -1, pid = 0;
        fb_json_get_int64(d, "cuda_device", &dev);
        fb_json_get_int64(d, "pid", &pid);
        char devstr[24] = " -";
        if (dev >= 0)
            snprintf(devstr, sizeof devstr, "%2lld", (long long)dev);
        printf("#  Rank %2d Group  0 Pid %6lld on %10s device %s [%.12s] %s\n", i, (long long)pid,
               host ? host : "?", devstr, bus ? bus : "host", name ? name : "?");
        json_object_put(d);
    }
}

/* Per-rank device records into the results file and the table preamble. */
static enum fb_status describe_devices(struct run *r, struct fb_err *err)
{
    json_object *mine = device_json(r);
    json_object_object_add(mine, "pid", json_object_new_int((int)getpid()));
    char **all = NULL;
    enum fb_status st = fb_gather_strings(&r->world, json_object_to_json_string(mine), &all, err);
    json_object_put(mine);
    if (st != FB_OK || r->world.rank != 0)
        return st;
    json_object *devices = json_object_new_array();
    for (int i = 0; i < r->world.size; i++)
        json_object_array_add(devices, json_tokener_parse(all[i]));
    json_object_object_add(r->rec.doc, "devices", devices);
    print_rank_lines(all, r->world.size);
    fb_gather_free(&r->world, all);
    return FB_OK;
}

static void describe_run(struct run *r)
{
    json_object *d = r->rec.doc;
    const struct coll_config *c = &r->cfg;
    json_object_object_add(d, "collective", json_object_new_string(c->coll->name));
    json_object_object_add(d, "backend", json_object_new_string(r->be.ops->name));
    json_object_object_add(d, "dtype", json_object_new_string(fb_dtype_info(c->dtype)->name));
    json_object_object_add(d, "op", json_object_new_string(c->coll->reduces ? fb_redop_name(c->op) : "none"));
    json_object_object_add(d, "root", json_object_new_int(c->coll->rooted ? (int)c->root : -1));
    json_object_object_add(d, "time_reduction", json_object_new_string(fb_time_reduction_name(r->timing.reduction)));
    json_object_object_add(d, "config", fb_opts_to_json(coll_options, c));
    json_object *hosts = json_object_new_array();
    int per_node_max = 0;
    for (int i = 0; i < r->world.size; i++) {
        int first = 1, on_host = 0;
        for (int j = 0; j < r->world.size; j++) {
            int same = strcmp(r->world.hosts[j], r->world.hosts[i]) == 0;
            on_host += same;
            if (same && j < i)
                first = 0;
        }
        if (first)
            json_object_array_add(hosts, json_object_new_string(r->world.hosts[i]));
        per_node_max = on_host > per_node_max ? on_host : per_node_max;
    }
    json_object_object_add(d, "hosts", hosts);
    json_object *topo = json_object_new_object();
    json_object_object_add(topo, "ranks", json_object_new_int(r->world.size));
    json_object_object_add(topo, "nodes", json_object_new_int(r->world.nodes));
    json_object_object_add(topo, "ranks_per_node", json_object_new_int(per_node_max));
    json_object_object_add(d, "topology", topo);
    json_object *versions = json_object_new_object();
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, ",\n")] = '\0';
    json_object_object_add(versions, "mpi", json_object_new_string(lib));
    json_object_object_add(versions, "nccl", NULL);
    json_object_object_add(versions, "cuda_runtime", NULL);
    json_object_object_add(versions, "cuda_driver", NULL);
    r->be.ops->versions(&r->be, versions);
    json_object_object_add(d, "versions", versions);
    json_object_object_add(d, "transport", NULL);
}

/* Warnings go to the table (as # lines) and into the results file. */
static void warn(struct run *r, const char *text)
{
    printf("# Warning: %s\n", text);
    fb_record_warn(&r->rec, text);
}

/* NCCL names the network it chose only in its INFO log: capture it when
 * asked, and always on multi-node NCCL runs, where a silent TCP fallback is
 * the failure this suite exists to catch. */
static void start_log_capture(struct run *r)
{
    int nccl = strcmp(r->be.ops->name, "nccl") == 0;
    if (r->cfg.nccl_log && !nccl) {
        snprintf(r->log_note, sizeof r->log_note, "--nccl-log has no effect on the %s backend", r->be.ops->name);
        return;
    }
    if (!nccl || (!r->cfg.nccl_log && r->world.nodes < 2))
        return;
    const char *tmp = getenv("TMPDIR");
    fb_nccl_capture_start(&r->nccl_log, tmp && *tmp ? tmp : "/tmp", r->log_note, sizeof r->log_note);
}

/* After the sweep (NCCL connects lazily, so the log is complete only now):
 * the transport into the results, a copy of the logs beside them. */
static void finish_log_capture(struct run *r)
{
    if (!r->nccl_log.active && r->log_note[0] == '\0')
        return;
    char saved[PATH_MAX];
    snprintf(saved, sizeof saved, "%s", r->rec.path);
    char *dot = strrchr(saved, '.');
    if (dot != NULL && strcmp(dot, ".json") == 0)
        *dot = '\0';
    strncat(saved, ".nccl.log", sizeof saved - strlen(saved) - 1);
    json_object *transport = NULL;
    struct fb_err err = {0};
    if (r->nccl_log.active &&
        fb_nccl_capture_finish(&r->nccl_log, &r->world, saved, &transport, &err) != FB_OK &&
        r->world.rank == 0) {
        char text[FB_ERR_MSG_MAX + 32];
        snprintf(text, sizeof text, "transport not recorded: %s", err.msg);
        warn(r, text);
    }
    if (r->world.rank != 0)
        return;
    if (r->log_note[0])
        warn(r, r->log_note);
    if (transport != NULL) {
        char text[256];
        fb_transport_describe(transport, text, sizeof text);
        printf("# Transport: %s (NCCL INFO logs: %s)\n", text, saved);
        json_object_object_add(r->rec.doc, "transport", transport);
    }
}

/* Everything before the first measurement; every step agreed on. */
static int prepare(struct run *r, int argc, char **argv)
{
    struct fb_err err = {0};
    coll_config_parse(&r->cfg, argc, argv, &err);
    if (err.code == FB_OK && (r->cfg.help || r->cfg.version))
        return -1;
    if (err.code == FB_OK)
        fb_world_check_launcher(&r->world, &err);
    if (fb_world_agree(&r->world, &err) != FB_OK)
        return fail_agreed(r, &err);
    r->be.ops = r->cfg.backend;
    uint64_t hash = fb_opts_hash(coll_options, &r->cfg);
    hash = fb_hash_bytes(hash, r->cfg.coll->name, strlen(r->cfg.coll->name));
    fb_world_check_same(&r->world, hash, "arguments", &err);
    if (err.code == FB_OK)
        check_run_shape(r, &err);
    if (err.code == FB_OK)
        r->be.ops->supports(r->cfg.coll, r->cfg.dtype, r->cfg.op, &err);
    if (err.code == FB_OK)
        r->be.ops->available(&err);
    if (err.code == FB_OK)
        fb_plan_sizes(r->cfg.minbytes, r->cfg.maxbytes, r->cfg.stepfactor, r->cfg.stepbytes, &r->plan, &err);
    if (fb_world_agree(&r->world, &err) != FB_OK)
        return fail_agreed(r, &err);
    start_log_capture(r);
    r->be.ops->init(&r->be, &r->world, &err);
    if (fb_world_agree(&r->world, &err) != FB_OK)
        return fail_agreed(r, &err);
    fit_memory(r, &err);
    if (fb_world_agree(&r->world, &err) != FB_OK)
        return fail_agreed(r, &err);
    pick_cluster(r);
    char path[PATH_MAX];
    if (r->world.rank == 0 && results_path(r, path, sizeof path, &err) == FB_OK &&
        fb_probe_writable(path, &err) == FB_OK)
        fb_record_new(&r->rec, path, "fabric-coll", r->cfg.invoked_as, r->cluster, &err);
    if (err.code == FB_OK)
        allocate(r, &err);
    if (fb_world_agree(&r->world, &err) != FB_OK)
        return fail_agreed(r, &err);
    return 0;
}

/* A few lines per rank say where; more would bury the table. */
#define MISMATCH_LINES_PER_RANK 2

static void print_mismatch(struct run *r, const struct fb_call *c, const struct fb_mismatch *mm)
{
    if (mm->wrong == 0 || r->mismatch_lines > MISMATCH_LINES_PER_RANK)
        return;
    if (r->mismatch_lines++ == MISMATCH_LINES_PER_RANK) {
        fprintf(stderr, "fabric-coll: rank %d on %s: more wrong results; not shown\n", r->world.rank,
                r->world.host);
        return;
    }
    char size[32];
    fb_format_size(c->counts.bytes, size, sizeof size);
    fprintf(stderr,
            "fabric-coll: rank %d on %s: %s %s %s %s: %llu wrong element%s, first at [%zu]: got %g, want %g\n",
            r->world.rank, r->world.host, r->cfg.coll->name, size, fb_dtype_info(c->dtype)->name,
            c->in_place ? "in-place" : "out-of-place", (unsigned long long)mm->wrong,
            mm->wrong == 1 ? "" : "s", mm->first_index, mm->got, mm->want);
}

static void measure_size(struct run *r, uint64_t size, int cycle)
{
    struct fb_result res[2];
    struct fb_call calls[2];
    for (int in_place = 0; in_place < 2; in_place++) {
        struct fb_err err = {0};
        struct fb_mismatch mm;
        calls[in_place] = fb_make_call(r->cfg.coll, r->cfg.dtype, r->cfg.op, (int)r->cfg.root, size,
                                       in_place, r->world.rank, r->world.size, r->be.ops->inplace_style);
        if (fb_measure(&r->be, &r->world, &r->timing, &r->checker, &calls[in_place], &res[in_place],
                       &mm, &err) != FB_OK)
            abort_job(r, &err);
        print_mismatch(r, &calls[in_place], &mm);
        if (res[in_place].wrong > 0)
            r->wrong_total += (uint64_t)res[in_place].wrong;
        r->busbw_sum += res[in_place].busbw_GBps;
        r->busbw_n++;
    }
    if (r->world.rank != 0)
        return;
    fb_table_row(stdout, &calls[0], &res[0], &res[1]);
    fb_record_add_row(&r->rec, &calls[0], cycle, r->timing.iters * r->timing.agg, &res[0], &res[1]);
    struct fb_err err = {0};
    if (fb_record_save(&r->rec, 0, &err) != FB_OK)
        abort_job(r, &err);
}

static void print_summary(struct run *r)
{
    json_object *s = fb_summary_of_rows(r->rec.rows, r->rec.sizes_planned);
    double peak = 0, at_largest = 0, avg1m = -1;
    int64_t peak_bytes = 0, largest = 0;
    fb_json_get_double(s, "peak_busbw_GBps", &peak);
    fb_json_get_int64(s, "peak_busbw_bytes", &peak_bytes);
    fb_json_get_double(s, "busbw_at_largest_GBps", &at_largest);
    fb_json_get_int64(s, "largest_bytes", &largest);
    fb_json_get_double(s, "avg_busbw_ge_1MiB_GBps", &avg1m);
    char a[32], b[32];
    fb_format_size((uint64_t)peak_bytes, a, sizeof a);
    fb_format_size((uint64_t)largest, b, sizeof b);
    printf("# busBW peak %.2f GB/s at %s, %.2f GB/s at the largest size %s", peak, a, at_largest, b);
    if (avg1m >= 0)
        printf(", average over sizes >= 1M %.2f GB/s", avg1m);
    printf("\n");
    json_object_put(s);
}

static void print_preamble(struct run *r)
{
    printf("# fabric-coll %s: %s on %d rank%s, %d node%s, backend %s (%s); results %s\n",
           FB_VERSION, r->cfg.coll->name, r->world.size, r->world.size == 1 ? "" : "s",
           r->world.nodes, r->world.nodes == 1 ? "" : "s", r->be.ops->name,
           strcmp(r->be.ops->name, "nccl") == 0 ? "GPU memory" : "host memory", r->rec.path);
    fb_table_preamble(stdout, &r->cfg, r->plan.sizes[0], r->plan.sizes[r->plan.count - 1]);
    coll_config_notes(&r->cfg, stdout);
    if (r->cap_note[0])
        warn(r, r->cap_note);
    if (r->plan.linear_warning) {
        char text[160];
        snprintf(text, sizeof text, "no -f given: %d sizes stepping linearly by %llu bytes (add -f 2 for a doubling sweep)",
                 r->plan.count, (unsigned long long)r->cfg.stepbytes);
        warn(r, text);
    }
}

static int sweep(struct run *r)
{
    if (r->world.rank == 0) {
        print_preamble(r);
        describe_run(r);
        r->rec.sizes_planned = r->plan.count * (int)r->cfg.run_cycles;
    }
    struct fb_err err = {0};
    if (describe_devices(r, &err) != FB_OK)
        abort_job(r, &err);
    if (r->world.rank == 0)
        fb_table_header(stdout);
    for (int cycle = 0; cycle < r->cfg.run_cycles; cycle++)
        for (int i = 0; i < r->plan.count; i++)
            measure_size(r, r->plan.sizes[i], cycle);
    finish_log_capture(r);
    if (r->world.rank == 0) {
        fb_table_footer(stdout, r->wrong_total, r->busbw_n ? r->busbw_sum / (double)r->busbw_n : 0);
        print_summary(r);
        printf("# Collective test concluded: %s\n", r->cfg.coll->perf_name);
        if (fb_record_save(&r->rec, 1, &err) != FB_OK)
            abort_job(r, &err);
        printf("# Results: %s\n", r->rec.path);
    }
    if (r->wrong_total > 0) {
        if (r->world.rank == 0)
            fprintf(stderr,
                    "fabric-coll: %llu wrong elements: this %s path computes wrong results; see the rank "
                    "lines above (with Open MPI, try --mca op ^avx)\n",
                    (unsigned long long)r->wrong_total, r->be.ops->name);
        return FB_ERR_WRONG;
    }
    return 0;
}

static void set_timing(struct run *r)
{
    r->timing = (struct fb_timing){
        .iters = r->cfg.iters,
        .warmup = r->cfg.warmup,
        .agg = r->cfg.agg,
        .check = r->cfg.check,
        .blocking = (int)r->cfg.blocking,
        .reduction = (enum fb_time_reduction)r->cfg.average,
    };
    r->be.graph_launches = (int)r->cfg.graph;
}

static void finish(struct run *r)
{
    if (r->be.state != NULL)
        r->be.ops->fini(&r->be, 0);
    fb_checker_free(&r->checker);
    fb_record_free(&r->rec);
    fb_plan_free(&r->plan);
    fb_world_free(&r->world);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    MPI_Init(&argc, &argv);
    static struct run r;
    coll_config_defaults(&r.cfg);
    struct fb_err err = {0};
    int code = 0;
    if (fb_world_init(&r.world, MPI_COMM_WORLD, &err) != FB_OK) {
        fprintf(stderr, "fabric-coll: %s\n", err.msg);
        MPI_Abort(MPI_COMM_WORLD, (int)err.code);
    }
    code = prepare(&r, argc, argv);
    if (code < 0) {
        if (r.world.rank == 0 && r.cfg.help)
            coll_config_usage(stdout, argv[0]);
        else if (r.world.rank == 0)
            printf("fabric-coll %s\n", FB_VERSION);
        code = 0;
    } else if (code == 0) {
        set_timing(&r);
        code = sweep(&r);
    }
    finish(&r);
    MPI_Finalize();
    return code;
}
