#include "scan/opts.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define OFF(f) offsetof(struct scan_opts, f)
#define BIG 2147483647.0

static const char *const mode_names[] = {"fast", "exhaustive", NULL};

const struct fb_opt scan_options[] = {
    {0, "mode", FB_OPT_CHOICE, OFF(mode), NULL, "fast: random pairs, then each suspect against known-good nodes; exhaustive: every pair, in N-1 rounds",
     .choices = mode_names},
    {0, "backend", FB_OPT_STRING, OFF(backend), "mpi|nccl", "nccl (GPU memory) when a GPU is visible, else mpi (host memory)", 0, 0, 0},
    {0, "launcher", FB_OPT_STRING, OFF(launcher), "env|mpi", "how the ranks meet: env (RANK, WORLD_SIZE, MASTER_ADDR; NCCL alone; set-up bounded by 4 x --test-timeout) or mpi; default env when WORLD_SIZE is set and no MPI launcher's variables are", 0, 0, 0},
    {'b', "bytes", FB_OPT_SIZE, OFF(bytes), "BYTES", "all_reduce size of each test (default 64M)", 0, 0, 0},
    {'n', "iters", FB_OPT_INT, OFF(iters), "N", "timed iterations per test (default 20)", 1, BIG, 0},
    {'w', "warmup", FB_OPT_INT, OFF(warmup), "N", "untimed iterations before them (default 5)", 0, BIG, 0},
    {0, "threshold", FB_OPT_DOUBLE, OFF(threshold), "FRACTION", "a test below this share of the fleet's median is slow (default 0.8)", 0.01, 0.99, 0},
    {0, "test-timeout", FB_OPT_DOUBLE, OFF(test_timeout), "SECONDS", "bound on one test; past it the test fails and the scan goes on (default 30)", 0.1, 86400, 0},
    {0, "test-seconds", FB_OPT_DOUBLE, OFF(test_seconds), "SECONDS", "time one test is assumed to take, for the estimate (default 1)", 0.001, 86400, 0},
    {0, "seed", FB_OPT_INT, OFF(seed), "N", "the fast mode's random pairing (default: from the clock; recorded)", 0, BIG, 0},
    {0, "no-alone", FB_OPT_FLAG, OFF(no_alone), NULL, "skip the round in which each node runs alone (its intra-node figure)", 0, 0, 0},
    {0, "topology", FB_OPT_STRING, OFF(topology), "FILE", "racks: lines 'HOST RACK', or `kubectl get nodes -o json` with --rack-label", 0, 0, 0},
    {0, "rack-label", FB_OPT_STRING, OFF(rack_label), "KEY", "the node label that names the rack (with a node list)", 0, 0, 0},
    {0, "estimate", FB_OPT_INT, OFF(estimate_nodes), "NODES", "print the schedule for NODES nodes and its time, run nothing", 2, 1000000, 0},
    {0, "suspects", FB_OPT_INT, OFF(estimate_suspects), "N", "suspects the fast mode's estimate assumes after its first pass (default 2)", 0, 1000000, 0},
    {'J', "json", FB_OPT_STRING, OFF(json_path), "FILE", "results path (default results/<cluster>/<UTC time>-scan.json)", 0, 0, 0},
    {0, "results-dir", FB_OPT_STRING, OFF(results_dir), "DIR", "results directory (default results)", 0, 0, 0},
    {0, "cluster", FB_OPT_STRING, OFF(cluster), "NAME", "cluster label (default $FABRIC_CLUSTER, else rank 0's host)", 0, 0, 0},
    {'h', "help", FB_OPT_FLAG, OFF(help), NULL, "this help", 0, 0, 0},
    {0, "version", FB_OPT_FLAG, OFF(version), NULL, "print the version", 0, 0, 0},
    FB_OPT_END,
};

static void defaults(struct scan_opts *o)
{
    memset(o, 0, sizeof *o);
    o->mode = SCAN_MODE_FAST;
    o->bytes = 64ull << 20;
    o->iters = 20;
    o->warmup = 5;
    o->threshold = 0.8;
    o->test_timeout = 30;
    o->test_seconds = 1;
    o->seed = -1;
    o->estimate_suspects = 2;
    o->results_dir = "results";
}

static int given(const struct fb_opts_result *res, const char *name)
{
    int i = fb_opts_find(scan_options, name);
    return i >= 0 && res->given[i];
}

static enum fb_status check(const struct scan_opts *o, const struct fb_opts_result *res, struct fb_err *err)
{
    if (res->npositional > 0)
        return fb_fail(err, FB_ERR_USAGE, "unexpected argument '%s': fabric-scan takes its nodes from the "
                       "MPI job; see fabric-scan --help", res->positional[0]);
    if (o->bytes < 8)
        return fb_fail(err, FB_ERR_USAGE, "-b %llu: a test needs at least 8 bytes (two floats)",
                       (unsigned long long)o->bytes);
    if (o->rack_label != NULL && o->topology == NULL)
        return fb_fail(err, FB_ERR_USAGE, "--rack-label names a label of --topology's node list; give --topology");
    if (given(res, "suspects") && !given(res, "estimate"))
        return fb_fail(err, FB_ERR_USAGE, "--suspects shapes --estimate; give --estimate NODES");
    if (o->backend != NULL && strcmp(o->backend, "mpi") != 0 && strcmp(o->backend, "nccl") != 0)
        return fb_fail(err, FB_ERR_USAGE, "--backend %s: use mpi or nccl", o->backend);
    return FB_OK;
}

enum fb_status scan_opts_parse(struct scan_opts *o, int argc, char **argv, struct fb_err *err)
{
    defaults(o);
    struct fb_opts_result res;
    enum fb_status st = fb_opts_parse(scan_options, argc, argv, o, &res, err);
    if (st == FB_OK && !o->help && !o->version)
        st = check(o, &res, err);
    fb_opts_result_free(&res);
    return st;
}

void scan_opts_help(const char *prog)
{
    printf("usage: mpirun --mca orte_abort_on_non_zero_status 0 --map-by ppr:R:node %s [options]\n"
           "       %s --estimate NODES [--mode M] [--test-seconds S]\n"
           "Finds the slow or failing nodes and links of a fleet: a short all_reduce between\n"
           "disjoint node pairs in rounds (fast: random pairs, then each suspect against\n"
           "known-good nodes; exhaustive: every pair), plus each node alone. One rank per\n"
           "node on host memory (mpi), one per GPU with nccl. A dead, stopped or cut-off\n"
           "node fails its tests and the scan goes on (docs/scan.md).\n\n", prog, prog);
    fb_opts_help(stdout, scan_options);
    printf("\nexit codes: 0 no suspects, 24 suspects named (results hold the evidence), 2 usage,\n"
           "4 memory, 5 unavailable, 6 launch (uneven ranks per node), 7 io, 8 the coordinator\n"
           "(rank 0) lost, 9 runtime, 10 input (--topology) (docs/exit-codes.md). Under\n"
           "mpirun a lost node ends the job with MPI_Abort: read the verdict from the results.\n");
}
