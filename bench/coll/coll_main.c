/* fabric-coll: a collective over a size sweep on every rank of an MPI job.
 * Also installed as all_reduce_perf, all_gather_perf, ... (nccl-tests
 * drop-in). The stages are in sweep_setup.c, sweep_measure.c and sweep_report.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/sweep.h"
#include "nccl/collective.h"
#include "core/version.h"
#include "core/world_env.h"

static void set_timing(struct sweep *r)
{
    r->timing = (struct fb_timing){
        .wd = r->wd,
        .iters = r->cfg.iters,
        .warmup = r->cfg.warmup,
        .agg = r->cfg.agg,
        .check = r->cfg.check,
        .blocking = (int)r->cfg.blocking,
        .per_iter = (int)r->cfg.per_iter,
        .per_iter_skip = r->cfg.per_iter_skip,
        .reduction = (enum fb_time_reduction)r->cfg.average,
    };
    r->be.graph_launches = (int)r->cfg.graph;
}

static void finish(struct sweep *r)
{
    sweep_end_phase(r);
    fb_world_free(&r->world);
}

/* The phases of one launch (--split intra-inter: two), each a whole
 * sweep with its own results; the first failure ends the launch, wrong
 * results (exit 3) only after every phase ran. */
static int run_phases(struct sweep *r, int argc, char **argv)
{
    int worst = 0;
    for (;;) {
        int code = sweep_prepare(r, argc, argv);
        if (code != 0)
            return code;
        set_timing(r);
        code = sweep_execute(r);
        if (code != 0 && code != FB_ERR_WRONG)
            return code;
        worst = worst ? worst : code;
        if (r->phase + 1 >= r->phases)
            break;
        sweep_end_phase(r);
        sweep_next_phase(r);
    }
    sweep_print_phase_pair(r);
    return worst;
}

/* Flags decided before MPI_Init (the threading level, an answer without
 * MPI) are read straight from argv; the option table parses them again. */
static int argv_has(int argc, char **argv, const char *flag)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], flag) == 0)
            return 1;
    return 0;
}

/* A watchdog that cannot start (its channel unreachable, a malformed
 * FB_WATCHDOG_ADDR) ends the run before it measures: every rank agrees on
 * the code, rank 0 says why. */
static int start_watchdog(struct sweep *r, int wanted)
{
    struct fb_err err = {0};
    if (!wanted) {
        snprintf(r->wd_note, sizeof r->wd_note, "--no-watchdog: waits are not bounded (-T has no effect)");
        return 0;
    }
    if (fb_watchdog_start(&r->wd, &r->world, sweep_record_fault, r, &err) == FB_OK)
        return 0;
    fb_signals_unblock();
    if (r->world.rank == 0)
        fprintf(stderr, "fabric-coll: %s\n", err.msg);
    return (int)err.code;
}

/* `fabric-coll --list`: the collectives, one per line, for scripts that offer
 * them (the launchers). Answered without MPI so it works on any machine. */
static int print_collectives(void)
{
    for (int i = 0; i < FB_NCOLLS; i++)
        printf("%s\n", fb_collective((enum fb_coll_id)i)->name);
    return 0;
}

/* The world: MPI's, or under the env launch NCCL's, set up within -T
 * (else FB_SETUP_DEFAULT_S). Returns 0 or the exit code, said on every
 * process that could not join. */
static int make_world(struct sweep *r, enum fb_launcher mode, int argc, char **argv)
{
    struct fb_err err = {0};
    if (mode == FB_LAUNCH_MPI) {
        /* The watchdog thread never calls MPI (its heartbeats go over its
         * own channel), so MPI runs single-threaded: Open MPI's FUNNELED
         * and MULTIPLE levels put locks on the path of every operation. */
        int provided = 0;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
        if (fb_world_init(&r->world, MPI_COMM_WORLD, &err) != FB_OK) {
            fprintf(stderr, "fabric-coll: %s\n", err.msg);
            MPI_Abort(MPI_COMM_WORLD, (int)err.code);
        }
        return 0;
    }
    const char *bound = fb_argv_value(argc, argv, "-T");
    struct fb_env_launch l;
    if (fb_env_launch_read(&l, bound ? strtod(bound, NULL) : 0, &err) == FB_OK)
        fb_world_init_env(&r->world, &l, &err);
    if (err.code != FB_OK)
        fprintf(stderr, "fabric-coll: %s\n", err.msg);
    return (int)err.code;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argv_has(argc, argv, "--list"))
        return print_collectives();
    int watchdog = !argv_has(argc, argv, "--no-watchdog");
    enum fb_launcher mode = FB_LAUNCH_MPI;
    struct fb_err err = {0};
    if (fb_launcher_pick(argc, argv, &mode, &err) != FB_OK) {
        fprintf(stderr, "fabric-coll: %s\n", err.msg);
        return (int)err.code;
    }
    if (watchdog)
        fb_signals_block();
    static struct sweep r;
    pthread_mutex_init(&r.rec_lock, NULL);
    coll_config_defaults(&r.cfg);
    int code = make_world(&r, mode, argc, argv);
    if (code != 0)
        return code;
    code = start_watchdog(&r, watchdog);
    if (code == 0)
        code = run_phases(&r, argc, argv);
    if (code < 0) {
        if (r.world.rank == 0 && r.cfg.help)
            coll_config_usage(stdout, argv[0]);
        else if (r.world.rank == 0)
            printf("fabric-coll %s\n", FB_VERSION);
        code = 0;
    }
    fb_watchdog_stop(r.wd);
    finish(&r);
    if (mode == FB_LAUNCH_MPI)
        MPI_Finalize();
    return code;
}
