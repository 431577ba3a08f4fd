/* Everything before the first measurement: options, launch checks,
 * backend, memory, results path, buffers. Every step is agreed on by all
 * ranks, so a bad argument on one rank ends the job with one message. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll/sweep.h"
#include "core/coord.h"
#include "coll/table.h"
#include "nccl/profiles.h"
#include "core/clock.h"
#include "core/envelope.h"
#include "core/jsonio.h"
#include "core/outfile.h"
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

/* -J FILE.json of a launch with phases: FILE-inter-node.json and
 * FILE-intra-node.json (the phase's name before the extension). */
static enum fb_status phase_json_path(const struct sweep *r, char *path, size_t len, struct fb_err *err)
{
    const char *given = r->cfg.record_path, *phase = coll_split_kind_name(r->split.spec.kind);
    const char *dot = strrchr(given, '.'), *slash = strrchr(given, '/');
    size_t stem = dot != NULL && (slash == NULL || dot > slash) ? (size_t)(dot - given) : strlen(given);
    if (snprintf(path, len, "%.*s-%s%s", (int)stem, given, phase, given + stem) >= (int)len)
        return fb_fail(err, FB_ERR_IO, "results path too long: %s", given);
    return FB_OK;
}

static enum fb_status results_path(struct sweep *r, char *path, size_t len, struct fb_err *err)
{
    char what[128];
    snprintf(what, sizeof what, "%s", r->cfg.coll->name);
    if (r->phases > 1 && r->cfg.record_path != NULL)
        return phase_json_path(r, path, len, err);
    if (r->phases > 1)
        snprintf(what, sizeof what, "%s-%s", r->cfg.coll->name, coll_split_kind_name(r->split.spec.kind));
    struct fb_results_name n = {r->cfg.record_path, r->cfg.results_dir, r->cluster, what};
    return fb_results_path(&n, path, len, err);
}

static enum fb_status check_run_shape(struct sweep *r, struct fb_err *err)
{
    int n = fb_total_ranks(&r->be, &r->group);
    if (r->split.active && r->be.local_ranks > 1)
        return fb_fail(err, FB_ERR_USAGE, "%s=%s with several GPUs per process (-t/-g) is not supported: "
                       "launch one process per GPU (drop -t/-g)", r->split.spec.source, r->split.spec.text);
    if (r->cfg.coll->rooted && r->split.active && !r->cfg.root_all && r->cfg.root >= r->split.smallest)
        return fb_fail(err, FB_ERR_USAGE, "-r %ld is not a rank of every group (the smallest of %s=%s has %d); "
                       "use -r 0 to %d", r->cfg.root, r->split.spec.source, r->split.spec.text, r->split.smallest,
                       r->split.smallest - 1);
    if (r->cfg.coll->rooted && !r->cfg.root_all && r->cfg.root >= n)
        return fb_fail(err, FB_ERR_USAGE, "-r %ld is not a rank of this %d-rank job; use -r 0 to %d",
                       r->cfg.root, n, n - 1);
    if (!fb_collective_runs_on(r->cfg.coll, n)) {
        int below = 1;
        while (below * 2 < n)
            below *= 2;
        return fb_fail(err, FB_ERR_USAGE,
                       "%s exchanges between ranks r and r^2^k and needs a power-of-two rank count, not %d; "
                       "start %d or %d ranks", r->cfg.coll->name, n, below, below * 2);
    }
    return FB_OK;
}

/* The split in force (first phase: from --split and the environment) and
 * whether this job can run it. Local. */
static enum fb_status pick_split(struct sweep *r, struct fb_err *err)
{
    if (r->phase == 0) {
        enum fb_status st = coll_split_from_env(r->cfg.split, &r->split_spec, err);
        if (st != FB_OK)
            return st;
        r->phases = coll_split_phases(&r->split_spec);
    }
    if (r->phases > 1 && r->cfg.record_path != NULL && fb_out_is_stream(r->cfg.record_path))
        return fb_fail(err, FB_ERR_USAGE, "%s %s writes one results file per phase; give -J a file name, not %s",
                       r->split_spec.source, r->split_spec.text, r->cfg.record_path);
    return coll_split_check_loop(&r->split_spec, &r->world, err);
}

/* The groups of this phase, on every rank; their figures' space. */
static enum fb_status split_world(struct sweep *r, struct fb_err *err)
{
    struct coll_split_spec spec = coll_split_phase(&r->split_spec, r->phase);
    enum fb_status st = coll_split_setup(&r->split, &spec, &r->world, &r->group, err);
    if (st == FB_OK) {
        r->group_res = calloc(2 * (size_t)r->split.ngroups, sizeof *r->group_res);
        if (r->group_res == NULL)
            st = fb_fail(err, FB_ERR_INTERNAL, "out of memory for %d groups", r->split.ngroups);
    }
    return st;
}

/* Every phase's record names the launch it came from, so that a reader
 * pairs the files of one launch: rank 0's host, pid and start time. */
static void name_launch(struct sweep *r)
{
    if (r->launch[0] != '\0')
        return;
    char stamp[64];
    fb_utc_stamp(stamp, sizeof stamp);
    snprintf(r->launch, sizeof r->launch, "%s-%ld-%s", r->world.hosts[0], (long)getpid(), stamp);
    fb_coord_bcast(&r->world, r->launch, sizeof r->launch, 0);
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
        fit = fb_plan_largest_fit(&r->plan, r->cfg.coll, esz, fb_total_ranks(&r->be, &r->group), sharers, avail, reserve);
    }
    int fit_all = fit;
    fb_coord_allreduce(&r->world, &fit_all, 1, FB_CDT_INT, FB_COP_MIN);
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
    fb_plan_buffers(r->cfg.coll, esz, fb_total_ranks(&r->be, &r->group), r->plan.sizes[r->plan.count - 1], &send,
                    &recv);
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
    fb_plan_buffers(r->cfg.coll, esz, fb_total_ranks(&r->be, &r->group), r->plan.sizes[r->plan.count - 1], &send,
                    &recv);
    sweep_sample_memory(r);
    r->mem_before_alloc = sweep_peak_memory(r);
    size_t unalign = (size_t)r->cfg.unalign * FB_UNALIGN_ELT_MAX; /* -u: room for the offset */
    enum fb_status st = r->be.ops->alloc(&r->be, send + unalign, recv + unalign, err);
    if (st == FB_OK) {
        r->be.send_cap = send + unalign;
        r->be.recv_cap = recv + unalign;
        sweep_sample_memory(r);
    }
    r->mem_after_alloc = sweep_peak_memory(r);
    if (st == FB_OK)
        st = fb_checker_init(&r->checker, &r->be, STAGE_BYTES, err);
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
    if (r->phase > 0) {
        /* NCCL opened its debug file in the first phase and keeps it. */
        snprintf(r->log_note, sizeof r->log_note, "transport recorded in the first phase's results only (%s)",
                 r->phase_paths[0]);
        return;
    }
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
        /* One plan for every group, or their loops would differ: the sizes
         * as the table's group (rank 0's) sees them. */
        fb_plan_dedupe(&r->plan, r->cfg.coll, fb_dtype_info(r->cfg.dtype)->size,
                       r->split.group_size[r->split.rank0_group] * r->be.local_ranks);
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
        st = fb_record_start(&r->rec, r->cfg.record_path == NULL, err);
    }
    if (st == FB_OK)
        snprintf(r->phase_paths[r->phase], sizeof r->phase_paths[r->phase], "%s", r->rec.path);
    if (st != FB_OK && r->cfg.record_path != NULL && r->cfg.record_path == r->cfg.record_opt)
        fb_out_name_option(err, "--record FILE");
    if (st != FB_OK)
        fb_record_free(&r->rec); /* nothing on disk is ours to update */
    else
        sweep_start_ntjson(r);
    pthread_mutex_unlock(&r->rec_lock);
    return st;
}

/* nccl-tests' NCCL-only flags, for the backend to apply. */
static void hand_flags(struct sweep *r)
{
    const struct coll_config *c = &r->cfg;
    r->be.flags = (struct fb_backend_flags){
        .threads = (int)c->nthreads, .gpus = (int)c->ngpus, .parallel_init = (int)c->parallel_init,
        .null_stream = (int)c->stream_null, .register_mode = (int)c->local_register,
        .cta_policy = (int)c->cta_policy, .device_impl = (int)c->device_impl,
        .device_impl_given = c->device_impl_given, .device_ctas = (int)c->device_ctas,
        .device_ctas_given = c->device_ctas_given};
    r->be.local_ranks = (int)(c->nthreads * c->ngpus);
}

static enum fb_status check_backend_flags(struct sweep *r, struct fb_err *err)
{
    if (r->be.ops->check_flags == NULL)
        return FB_OK;
    return r->be.ops->check_flags(&r->be, r->flag_notes, sizeof r->flag_notes, err);
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
    if (err.code == FB_OK && r->world.nccl != NULL && strcmp(r->cfg.backend->name, "mpi") == 0)
        fb_fail(&err, FB_ERR_USAGE, "--backend mpi measures MPI in host memory and needs an MPI launch; this "
                "process was started by the env launch (no MPI): use --backend nccl, or launch with mpirun");
    if (err.code == FB_OK)
        pick_split(r, &err);
    if (fb_world_agree(&r->world, &err) != FB_OK)
        return fail_agreed(r, &err);
    r->be.ops = r->cfg.backend;
    hand_flags(r);
    double setup_bound = r->cfg.timeout > 0 ? (double)r->cfg.timeout : SETUP_BOUND_S;
    sweep_arm(r, setup_bound, "argument checks");
    uint64_t hash = fb_opts_hash(coll_options, &r->cfg);
    hash = fb_hash_bytes(hash, r->cfg.coll->name, strlen(r->cfg.coll->name));
    fb_world_check_same(&r->world, hash, "arguments", &err);
    if (fb_world_agree(&r->world, &err) != FB_OK)
        return fail_agreed(r, &err);
    name_launch(r);
    split_world(r, &err);
    if (err.code == FB_OK)
        check_run_shape(r, &err);
    sweep_plan_combos(r, &err);
    if (err.code == FB_OK)
        r->be.ops->available(&err);
    if (err.code == FB_OK)
        check_backend_flags(r, &err);
    if (err.code == FB_OK)
        plan_sizes(r, &err);
    if (err.code == FB_OK)
        pick_cluster(r, &err);
    if (fb_world_agree(&r->world, &err) != FB_OK)
        return fail_agreed(r, &err);
    start_log_capture(r);
    sweep_arm(r, setup_bound, "communicator set-up");
    r->be.ops->init(&r->be, &r->group, &err); /* a communicator per group */
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
    fb_coord_bcast(&r->world, &band, sizeof band, 0);
    r->fallback.band_GBps = band;
    /* The band judges traffic across nodes: groups inside one node have none. */
    r->fallback.nodes = 0;
    for (int g = 0; g < r->split.ngroups; g++)
        if (r->split.group_nodes[g] > r->fallback.nodes)
            r->fallback.nodes = r->split.group_nodes[g];
}

void sweep_end_phase(struct sweep *r)
{
    if (r->be.state != NULL)
        r->be.ops->fini(&r->be, 0);
    r->be.state = NULL;
    fb_checker_free(&r->checker);
    pthread_mutex_lock(&r->rec_lock);
    fb_record_free(&r->rec);
    pthread_mutex_unlock(&r->rec_lock);
    fb_plan_free(&r->plan);
    free(r->combos);
    r->combos = NULL;
    r->ncombos = 0;
    free(r->group_res);
    r->group_res = NULL;
    coll_split_free(&r->split);
    fb_world_free(&r->group);
}

/* What the next phase starts from: the job, its watchdog and what the
 * phases share; everything measured is the phase's own. */
void sweep_next_phase(struct sweep *r)
{
    pthread_mutex_lock(&r->rec_lock);
    coll_config_defaults(&r->cfg);
    r->be = (struct fb_backend){0};
    r->timing = (struct fb_timing){0};
    r->wrong_total = 0;
    r->busbw_sum = 0;
    r->busbw_n = 0;
    r->mismatch_lines = 0;
    r->cap_note[0] = r->log_note[0] = r->fallback_note[0] = '\0';
    r->nccl_log = (struct fb_nccl_capture){0};
    r->slowest_Bps = 0;
    r->save_err = (struct fb_err){0};
    r->sweep_start = 0;
    r->sizes_done = 0;
    r->fallback = (struct fb_fallback_rule){0};
    r->fallback_said = 0;
    memset(r->peak_memory, 0, sizeof r->peak_memory);
    r->flag_notes[0] = '\0';
    r->mem_before_alloc = r->mem_after_alloc = 0;
    r->oob_checks = 0;
    r->combo_note[0][0] = r->combo_note[1][0] = '\0';
    r->cycles_done = 0;
    r->nt = (struct fb_ntjson_file){0}; /* the next phase opens its own */
    r->nt_failed = 0;
    r->phase++;
    pthread_mutex_unlock(&r->rec_lock);
}

void sweep_print_phase_pair(struct sweep *r)
{
    if (r->world.rank != 0 || r->phases < 2)
        return;
    printf("# Split %s: judge the pair with: fabric-report check %s %s\n", r->split_spec.text, r->phase_paths[0],
           r->phase_paths[1]);
}
