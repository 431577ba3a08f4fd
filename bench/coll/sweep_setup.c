/* Everything before the first measurement: options, launch checks,
 * backend, memory, results path, buffers. Every step is agreed on by all
 * ranks, so a bad argument on one rank ends the job with one message. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/sweep.h"
#include "coll/table.h"
#include "nccl/profiles.h"
#include "core/clock.h"
#include "core/envelope.h"
#include "core/jsonio.h"
#include "core/units.h"

/* Rank 0 prints the agreed error; every rank returns the agreed code. */
static int fail_agreed(struct sweep *r, struct fb_err *err)
{
    enum fb_status st = fb_world_agree(&r->world, err);
    if (r->world.rank == 0 && st != FB_OK)
        fprintf(stderr, "fabric-coll: %s\n", err->msg);
    return (int)st;
}

/* The label names the results directory: a bad one is a usage error on
 * every rank before anything starts. */
static enum fb_status pick_cluster(struct sweep *r, struct fb_err *err)
{
    return fb_cluster_label_checked(r->cfg.cluster, r->world.hosts[0], r->cluster, sizeof r->cluster, err);
}

static enum fb_status results_path(struct sweep *r, char *path, size_t len, struct fb_err *err)
{
    struct fb_results_name n = {r->cfg.json_path, r->cfg.results_dir, r->cluster, r->cfg.coll->name};
    return fb_results_path(&n, path, len, err);
}

static enum fb_status check_run_shape(struct sweep *r, struct fb_err *err)
{
    if (r->cfg.coll->rooted && !r->cfg.root_all && r->cfg.root >= r->world.size)
        return fb_fail(err, FB_ERR_USAGE, "-r %ld is not a rank of this %d-rank job; use -r 0 to %d",
                       r->cfg.root, r->world.size, r->world.size - 1);
    return FB_OK;
}

/* How far the sweep may go in memory; ranks with the least memory decide
 * and the lowest of them explains. */
static enum fb_status fit_memory(struct sweep *r, struct fb_err *err)
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

static enum fb_status allocate(struct sweep *r, struct fb_err *err)
{
    size_t esz = fb_dtype_info(r->cfg.dtype)->size;
    size_t send = 0, recv = 0;
    fb_plan_buffers(r->cfg.coll, esz, r->world.size, r->plan.sizes[r->plan.count - 1], &send, &recv);
    size_t unalign = (size_t)r->cfg.unalign * FB_UNALIGN_ELT_MAX; /* -u: room for the offset */
    enum fb_status st = r->be.ops->alloc(&r->be, send + unalign, recv + unalign, err);
    if (st == FB_OK)
        sweep_sample_memory(r);
    if (st == FB_OK)
        st = fb_checker_init(&r->checker, STAGE_BYTES, err);
    return st;
}

/* NCCL names the network it chose only in its INFO log: capture it when
 * asked, and always on multi-node NCCL runs, where a silent TCP fallback is
 * the failure this suite exists to catch. */
static void start_log_capture(struct sweep *r)
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

/* The sizes as planned, each measured once: sizes that align to the same
 * bytes collapse into one. */
static enum fb_status plan_sizes(struct sweep *r, struct fb_err *err)
{
    enum fb_status st = fb_plan_sizes(r->cfg.minbytes, r->cfg.maxbytes, r->cfg.stepfactor, r->cfg.stepbytes,
                                      &r->plan, err);
    if (st == FB_OK)
        fb_plan_dedupe(&r->plan, r->cfg.coll, fb_dtype_info(r->cfg.dtype)->size, r->world.size);
    return st;
}

/* Rank 0: the results file, complete but for its rows, on disk before
 * buffers are allocated, so an interrupted set-up still leaves a document
 * that says what ran and how far it got. A -J that cannot be written
 * fails here, before the sweep. */
static enum fb_status start_record(struct sweep *r, struct fb_err *err)
{
    char path[PATH_MAX];
    /* Held throughout: a signal now must find no record, or the whole first
     * version under its final name. */
    pthread_mutex_lock(&r->rec_lock);
    enum fb_status st = results_path(r, path, sizeof path, err);
    if (st == FB_OK)
        st = fb_record_new(&r->rec, path, "fabric-coll", r->cfg.invoked_as, r->cluster, err);
    if (st == FB_OK) {
        sweep_describe(r);
        r->rec.sizes_planned = sweep_sizes_planned(r);
        st = fb_record_start(&r->rec, r->cfg.json_path == NULL, err);
    }
    if (st != FB_OK)
        fb_record_free(&r->rec); /* nothing on disk is ours to update */
    pthread_mutex_unlock(&r->rec_lock);
    return st;
}

/* Everything before the first measurement; every step agreed on. */
int sweep_prepare(struct sweep *r, int argc, char **argv)
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
    double setup_bound = r->cfg.timeout > 0 ? (double)r->cfg.timeout : SETUP_BOUND_S;
    sweep_arm(r, setup_bound, "argument checks");
    uint64_t hash = fb_opts_hash(coll_options, &r->cfg);
    hash = fb_hash_bytes(hash, r->cfg.coll->name, strlen(r->cfg.coll->name));
    fb_world_check_same(&r->world, hash, "arguments", &err);
    if (err.code == FB_OK)
        check_run_shape(r, &err);
    sweep_plan_combos(r, &err);
    if (err.code == FB_OK)
        r->be.ops->available(&err);
    if (err.code == FB_OK)
        plan_sizes(r, &err);
    if (err.code == FB_OK)
        pick_cluster(r, &err);
    if (fb_world_agree(&r->world, &err) != FB_OK)
        return fail_agreed(r, &err);
    start_log_capture(r);
    sweep_arm(r, setup_bound, "communicator set-up");
    r->be.ops->init(&r->be, &r->world, &err);
    if (fb_world_agree(&r->world, &err) != FB_OK)
        return fail_agreed(r, &err);
    fit_memory(r, &err);
    if (fb_world_agree(&r->world, &err) != FB_OK)
        return fail_agreed(r, &err);
    sweep_setup_fallback(r);
    if (r->world.rank == 0)
        start_record(r, &err);
    if (fb_world_agree(&r->world, &err) != FB_OK)
        return fail_agreed(r, &err);
    /* Touching fresh pages runs at ~400 MB/s on slow machines: allow for
     * it whatever -T says, since no peer is being waited for. */
    sweep_arm(r, SETUP_BOUND_S + 2.0 * (double)r->plan.sizes[r->plan.count - 1] / 1e8, "buffer allocation");
    if (err.code == FB_OK)
        allocate(r, &err);
    if (fb_world_agree(&r->world, &err) != FB_OK)
        return fail_agreed(r, &err);
    fb_watchdog_disarm(r->wd);
    return 0;
}

/* Twice the TCP-fallback reference: a fabric that good is still a fabric
 * that fell back. */
#define FALLBACK_BAND_FACTOR 2.0

static double band_from_profile(char *note, size_t len)
{
    struct fb_profiles ps = {0};
    struct fb_err err = {0};
    double band = 0;
    if (fb_profiles_load_default(NULL, 0, &ps, &err) != FB_OK) {
        snprintf(note, len, "early stop off: reference profiles unreadable (%s); give --fallback-band", err.msg);
        return 0;
    }
    const struct fb_profile *p = fb_profile_find(&ps, "tcp-fallback");
    const struct fb_expect *e = p ? fb_profile_expect(p, "all_reduce") : NULL;
    if (e != NULL && e->busbw > 0)
        band = FALLBACK_BAND_FACTOR * e->busbw;
    else
        snprintf(note, len, "early stop off: no tcp-fallback reference profile found; give --fallback-band");
    fb_profiles_free(&ps);
    return band;
}

void sweep_setup_fallback(struct sweep *r)
{
    double band = r->cfg.fallback_band;
    if (band <= 0 && r->world.rank == 0 && r->world.nodes > 1)
        band = band_from_profile(r->fallback_note, sizeof r->fallback_note);
    MPI_Bcast(&band, 1, MPI_DOUBLE, 0, r->world.comm);
    r->fallback.band_GBps = band;
    r->fallback.nodes = r->world.nodes;
}
