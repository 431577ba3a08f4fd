/* fabric-scan: finds the bad nodes and links of a fleet in one MPI launch
 * (docs/scan.md). Setup is collective while every rank is known alive;
 * from the first round on, only point-to-point with deadlines (run.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/envelope.h"
#include "core/version.h"
#include "core/world_env.h"
#include "scan/run.h"

static struct scan_estimate estimate(const struct scan_opts *o, int nodes)
{
    struct scan_estimate e = o->mode == SCAN_MODE_EXHAUSTIVE ? scan_estimate_exhaustive(nodes)
                                                             : scan_estimate_fast(nodes, (int)o->estimate_suspects);
    if (!o->no_alone) {
        e.rounds += 1;
        e.tests += nodes;
    }
    return e;
}

static void print_estimate_only(const struct scan_opts *o)
{
    int n = (int)o->estimate_nodes;
    struct scan_estimate e = estimate(o, n);
    printf("fabric-scan estimate: %d nodes, %s mode%s\n", n, o->mode == SCAN_MODE_EXHAUSTIVE ? "exhaustive" : "fast",
           o->mode == SCAN_MODE_FAST ? "" : "");
    if (o->mode == SCAN_MODE_FAST)
        printf("suspects assumed after the first pass: %ld\n", o->estimate_suspects);
    printf("rounds: %d\n", e.rounds);
    printf("tests: %d\n", e.tests);
    printf("max pairs per round: %d\n", e.max_pairs);
    printf("seconds: %.0f at %g s per test\n", e.rounds * o->test_seconds, o->test_seconds);
}

static enum fb_status choose_engine(struct scan_run *r, struct fb_err *err)
{
    int compiled = 1;
    const char *name = r->o.backend;
    if (name == NULL) {
        const struct scan_engine_ops *nccl = scan_engine_find("nccl", &compiled);
        struct fb_err quiet = {0};
        name = nccl != NULL && nccl->available(&quiet) == FB_OK ? "nccl" : "mpi";
    }
    if (r->w.nccl != NULL && strcmp(name, "mpi") == 0)
        return fb_fail(err, FB_ERR_USAGE, "--backend mpi measures MPI in host memory and needs an MPI launch; this "
                       "process was started by the env launch (no MPI): use --backend nccl, or launch with mpirun");
    r->e.ops = scan_engine_find(name, &compiled);
    if (r->e.ops == NULL)
        return fb_fail(err, FB_ERR_UNAVAIL, "--backend %s is not built in (no CUDA/NCCL at build time); use "
                       "--backend mpi", name);
    return r->e.ops->available(err);
}

/* Everything that can fail before the first round, on every rank. */
static enum fb_status prepare(struct scan_run *r, struct fb_err *err)
{
    /* Each step that one rank alone can refuse (rank 0 judges the node
     * names) is agreed before the next collective step, so no rank waits
     * in a collective that another has left. */
    if (fb_world_check_launcher(&r->w, err) == FB_OK)
        choose_engine(r, err);
    if (fb_world_agree(&r->w, err) != FB_OK)
        return err->code;
    scan_layout_build(&r->w, &r->l, err);
    if (fb_world_agree(&r->w, err) != FB_OK)
        return err->code;
    r->p = (struct scan_params){(size_t)r->o.bytes, (int)r->o.iters, (int)r->o.warmup};
    if (r->e.ops->init(&r->e, &r->w, r->p.bytes, err) != FB_OK)
        return err->code;
    if (r->w.rank != 0)
        return FB_OK;
    if (r->o.topology != NULL && scan_layout_racks(&r->l, r->o.topology, r->o.rack_label, err) != FB_OK)
        return err->code;
    r->seed = r->o.seed >= 0 ? (uint64_t)r->o.seed : (uint64_t)time(NULL);
    r->est = estimate(&r->o, r->l.nnodes);
    char cluster[FB_LABEL_MAX];
    if (fb_cluster_label_checked(r->o.cluster, r->w.host, cluster, sizeof cluster, err) != FB_OK)
        return err->code;
    struct fb_results_name name = {r->o.json_path, r->o.results_dir, cluster, "scan"};
    return fb_results_path(&name, r->path, sizeof r->path, err);
}

static void report_error(const struct scan_run *r, const struct fb_err *err)
{
    if (err->code != FB_OK && err->code != FB_SCAN_SUSPECTS && (r->w.rank == 0 || err->code == FB_ERR_TIMEOUT))
        fprintf(stderr, "fabric-scan: %s\n", err->msg);
}

/* The world: MPI's, or under the env launch NCCL's, set up within four
 * test bounds. Returns 0 or the exit code, said on every process that
 * could not join. */
static int make_world(struct scan_run *r, enum fb_launcher mode, int argc, char **argv)
{
    struct fb_err err = {0};
    if (mode == FB_LAUNCH_MPI) {
        MPI_Init(&argc, &argv);
        if (fb_world_init(&r->w, MPI_COMM_WORLD, &err) != FB_OK) {
            fprintf(stderr, "fabric-scan: %s\n", err.msg);
            MPI_Abort(MPI_COMM_WORLD, err.code);
        }
        return 0;
    }
    const char *bound = fb_argv_value(argc, argv, "--test-timeout");
    struct fb_env_launch l;
    if (fb_env_launch_read(&l, 4 * (bound ? strtod(bound, NULL) : 30), &err) == FB_OK)
        fb_world_init_env(&r->w, &l, &err);
    if (err.code != FB_OK)
        fprintf(stderr, "fabric-scan: %s\n", err.msg);
    return (int)err.code;
}

int main(int argc, char **argv)
{
    static struct scan_run r;
    struct fb_err err = {0};
    enum fb_launcher mode = FB_LAUNCH_MPI;
    r.invoked_as = argv[0];
    if (fb_launcher_pick(argc, argv, &mode, &err) != FB_OK) {
        fprintf(stderr, "fabric-scan: %s\n", err.msg);
        return (int)err.code;
    }
    int code = make_world(&r, mode, argc, argv);
    if (code != 0)
        return code;
    enum fb_status st = scan_opts_parse(&r.o, argc, argv, &err);
    if (st == FB_OK && (r.o.help || r.o.version || r.o.estimate_nodes > 0)) {
        if (r.w.rank == 0 && r.o.help)
            scan_opts_help("fabric-scan");
        else if (r.w.rank == 0 && r.o.version)
            printf("fabric-scan %s\n", FB_VERSION);
        else if (r.w.rank == 0)
            print_estimate_only(&r.o);
        if (mode == FB_LAUNCH_MPI)
            MPI_Finalize();
        return 0;
    }
    if (st == FB_OK)
        st = prepare(&r, &err);
    st = fb_world_agree(&r.w, &err);
    if (st == FB_OK)
        st = scan_run(&r, &err);
    report_error(&r, &err);
    if (r.e.ops != NULL && r.e.state != NULL && !r.abandoned)
        r.e.ops->fini(&r.e);
    scan_run_end(&r, st);
    scan_layout_free(&r.l);
    fb_world_free(&r.w);
    return st;
}
