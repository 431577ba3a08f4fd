#include "coll/config.h"

#include <stddef.h>
#include <string.h>

#include "core/files.h"
#include "core/units.h"

#define OFF(f) offsetof(struct coll_config, f)
#define BIG 2147483647.0

const struct fb_opt coll_options[] = {
    {'b', "minbytes", FB_OPT_SIZE, OFF(minbytes), "BYTES", "smallest size (default 32M)", 0, 0, 0},
    {'e', "maxbytes", FB_OPT_SIZE, OFF(maxbytes), "BYTES", "largest size (default 32M)", 0, 0, 0},
    {'i', "stepbytes", FB_OPT_SIZE, OFF(stepbytes), "BYTES", "linear step when -f is not given (default 1M)", 0, 0, 0},
    {'f', "stepfactor", FB_OPT_INT, OFF(stepfactor), "N", "multiply the size by N each step (e.g. 2)", 1, 1024, 0},
    {'n', "iters", FB_OPT_INT, OFF(iters), "N", "timed iterations per size (default 20)", 1, BIG, 0},
    {'w', "warmup_iters", FB_OPT_INT, OFF(warmup), "N", "warm-up iterations per size (default 1)", 0, BIG, 0},
    {'m', "agg_iters", FB_OPT_INT, OFF(agg), "N", "operations aggregated per iteration (default 1)", 1, 1 << 20, 0},
    {'c', "check", FB_OPT_INT, OFF(check), "N", "validation iterations, 0 = off (default 1)", 0, 1000, 0},
    {'o', "op", FB_OPT_STRING, OFF(op_name), "OP", "sum, prod, max, min, avg, mulsum, or all of them (default sum)", 0, 0, 0},
    {'d', "datatype", FB_OPT_STRING, OFF(dtype_name), "TYPE", "int8 ... double, half, bfloat16, f8e4m3, f8e5m2, or all of them (default float)", 0, 0, 0},
    {'r', "root", FB_OPT_STRING, OFF(root_name), "RANK", "root rank of broadcast, reduce, gather and scatter, all (or -1) for every rank in turn (default 0)", 0, 0, 0},
    {'z', "blocking", FB_OPT_INT, OFF(blocking), "0-3", "wait after each operation: 1 with a barrier, 2 without, 3 after each iteration", 0, 3, 0},
    {'a', "average", FB_OPT_INT, OFF(average), "0-3", "time across ranks: 0 rank 0, 1 mean, 2 min, 3 max (default 1)", 0, 3, 0},
    {'N', "run_cycles", FB_OPT_INT, OFF(run_cycles), "N", "repeat the whole sweep N times, 0 = until SIGINT/SIGTERM (default 1)", 0, 1000000, 0},
    {'T', "timeout", FB_OPT_INT, OFF(timeout), "SECONDS", "bound on each step (a size and placement: warm-up, timed loop, check), 0 = from the measured bandwidth", 0, 86400 * 7, 0},
    {'G', "cudagraph", FB_OPT_INT, OFF(graph), "N", "CUDA graph replays per timed loop (nccl backend)", 0, 1000000, 0},
    {'t', "nthreads", FB_OPT_INT, OFF(nthreads), "N", "threads per process, each with -g GPUs (nccl backend; ranks per process = -t x -g)", 1, FB_LOCAL_RANKS_MAX, 0},
    {'g', "ngpus", FB_OPT_INT, OFF(ngpus), "N", "GPUs per thread, one rank each (nccl backend)", 1, FB_LOCAL_RANKS_MAX, 0},
    {'p', "parallel_init", FB_OPT_INT, OFF(parallel_init), "0/1", "1: with -t > 1, each thread's communicators are set up by a thread of their own", 0, 1, 0},
    {'y', "stream_null", FB_OPT_INT, OFF(stream_null), "0/1", "1: calls on the NULL stream (nccl backend)", 0, 1, 0},
    {'J', "output_file", FB_OPT_STRING, OFF(json_path), "FILE", "as a *_perf name: nccl-tests' JSON to FILE (.json, numbered when taken); as fabric-coll: the results record (default results/<cluster>/<time>-<collective>.json)", 0, 0, 0},
    {'C', "report_cputime", FB_OPT_INT, OFF(cputime), "0/1", "time column: host (CPU) time of issuing the calls instead of their completion", 0, 1, 0},
    {'S', "report_timestamps", FB_OPT_INT, OFF(timestamps), "0/1", "a timestamp column at the end of each row (local time)", 0, 1, 0},
    {'I', "per_iter_timing", FB_OPT_INT, OFF(per_iter), "0/1", "1: time every iteration, print i_min i_max i_p99 i_cv% per placement and record them", -BIG, BIG, 0},
    {'K', "per_iter_skip", FB_OPT_INT, OFF(per_iter_skip), "N", "with -I 1: leave the first N iterations out of the summary (default 0)", -BIG, BIG, 0},
    {'M', "memory", FB_OPT_INT, OFF(memory_report), "0/1", "memory use line in the footer (initialisation, buffers, collectives)", 0, 1, 0},
    {'u', "unalign", FB_OPT_INT, OFF(unalign), "N", "start the send and receive buffers N elements in (misaligned), 0 = aligned", 0, 1 << 20, 0},
    {'R', "local_register", FB_OPT_INT, OFF(local_register), "0-2", "buffer registration: 1 local (ncclCommRegister, NCCL >= 2.19), 2 symmetric windows (NCCL >= 2.27)", 0, 2, 0},
    {'x', "cta_policy", FB_OPT_INT, OFF(cta_policy), "0-2", "NCCL CTA policy: 0 default, 1 efficiency, 2 zero (NCCL >= 2.27, 2 needs 2.28; default: not set)", 0, 2, 0},
    {'D', "device_implementation", FB_OPT_INT, OFF(device_impl), "N", "device implementation, 0 = NCCL's own (> 0 needs -R 2 and NCCL >= 2.28; fabric-coll has none: exit 5)", 0, BIG, 0},
    {'V', "device_cta_count", FB_OPT_INT, OFF(device_ctas), "N", "CTAs of a device implementation, 1-128 (default 16)", -BIG, BIG, 0},
    {0, "backend", FB_OPT_STRING, OFF(backend_name), "NAME", "nccl (GPU) or mpi (host memory); default nccl when a GPU is visible (as a *_perf name: nccl, exit 5 without a GPU)", 0, 0, 0},
    {0, "launcher", FB_OPT_STRING, OFF(launcher), "env|mpi", "how the ranks meet: env (RANK, WORLD_SIZE, MASTER_ADDR from torchrun, a Job, srun; NCCL alone) or mpi; default env when WORLD_SIZE is set and no MPI launcher's variables are", 0, 0, 0},
    {0, "cluster", FB_OPT_STRING, OFF(cluster), "NAME", "cluster label for results (default $FABRIC_CLUSTER, else rank 0's host)", 0, 0, 0},
    {0, "record", FB_OPT_STRING, OFF(record_opt), "FILE", "the results record's path when -J writes nccl-tests' JSON (a *_perf name); as fabric-coll the same as -J", 0, 0, 0},
    {0, "nccl-tests-json", FB_OPT_STRING, OFF(ntjson_opt), "FILE", "also write nccl-tests' -J JSON to FILE (a new file: FILE.0, FILE.1 ... when taken)", 0, 0, 0},
    {0, "results-dir", FB_OPT_STRING, OFF(results_dir), "DIR", "results directory (default results)", 0, 0, 0},
    {0, "nccl-log", FB_OPT_FLAG, OFF(nccl_log), NULL, "capture NCCL's INFO log per rank and record the transport", 0, 0, 0},
    {0, "time-budget", FB_OPT_DOUBLE, OFF(time_budget), "SECONDS", "fit the whole sweep in this time: iterations per size from a calibration (-n caps them)", 0, 86400 * 30, 0},
    {0, "full", FB_OPT_FLAG, OFF(full), NULL, "measure every size even when the TCP fallback is already plain", 0, 0, 0},
    {0, "fallback-band", FB_OPT_DOUBLE, OFF(fallback_band), "GBPS", "busBW at or under this on >= 64M across nodes stops the sweep (default: twice the tcp-fallback reference)", 0, 1e6, 0},
    {0, "cv-threshold", FB_OPT_DOUBLE, OFF(cv_threshold), "PERCENT", "with -N: sizes whose time varies more than this are flagged unstable (default 5)", 0, 1000, 0},
    {0, "split", FB_OPT_STRING, OFF(split), "SPLIT", "rank groups measured side by side: an NCCL_TESTS_SPLIT expression ('MOD 8'), intra-node, inter-node, or intra-inter (both, one results file each)", 0, 0, 0},
    {0, "runtime-source", FB_OPT_STRING, OFF(runtime_source_opt), "SPEC", "where the pods' wiring came from, recorded as runtime_source: delivered:KIND/NAMESPACE/NAME@GENERATION (namespace empty when cluster-scoped, generation - when none) or fabric-bench:FABRIC", 0, 0, 0},
    {0, "no-watchdog", FB_OPT_FLAG, OFF(no_watchdog), NULL, "no bound on waits: no watchdog thread and no watchdog channel (FB_WATCHDOG_ADDR)", 0, 0, 0},
    {0, "cap-memory", FB_OPT_FLAG, OFF(cap_memory), NULL, "lower -e to what fits in memory (with a warning) instead of refusing", 0, 0, 0},
    {'h', "help", FB_OPT_FLAG, OFF(help), NULL, "this help", 0, 0, 0},
    {0, "version", FB_OPT_FLAG, OFF(version), NULL, "print the version", 0, 0, 0},
    {0, "list", FB_OPT_FLAG, OFF(list), NULL, "print the collectives, one per line", 0, 0, 0},
    FB_OPT_END,
};

void coll_config_defaults(struct coll_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->minbytes = cfg->maxbytes = 32ULL << 20;
    cfg->stepbytes = 1ULL << 20;
    cfg->stepfactor = 1;
    cfg->iters = 20;
    cfg->warmup = 1;
    cfg->agg = 1;
    cfg->check = 1;
    cfg->average = 1;
    cfg->run_cycles = 1;
    cfg->nthreads = cfg->ngpus = 1;
    cfg->cta_policy = -1;
    cfg->device_ctas = 16;
    cfg->dtype_name = "float";
    cfg->op_name = "sum";
    cfg->root_name = "0";
    cfg->results_dir = "results";
    cfg->cv_threshold = 5;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static enum fb_status pick_collective(struct coll_config *cfg, const struct fb_opts_result *res,
                                      struct fb_err *err)
{
    const char *prog = base_name(cfg->invoked_as);
    int from_name = strcmp(prog, "fabric-coll") != 0 && fb_collective_find(prog) != NULL;
    if (from_name) {
        cfg->perf_name = 1;
        cfg->coll = fb_collective_find(prog);
        if (res->npositional > 0)
            return fb_fail(err, FB_ERR_USAGE, "unexpected argument '%s'; %s takes only options",
                           res->positional[0], prog);
        return FB_OK;
    }
    char names[FB_COLL_NAMES_MAX];
    fb_collective_names(names, sizeof names, ", ");
    /* A *_perf name promises the collective in the name: foo_perf must not
     * quietly read its first argument as fabric-coll does. */
    if (fb_has_suffix(prog, "_perf")) {
        char perf[FB_COLL_NAMES_MAX + 64];
        fb_collective_perf_names(perf, sizeof perf, " or ");
        return fb_fail(err, FB_ERR_USAGE, "%s names no collective; run fabric-coll COLLECTIVE or link it as one of %s", prog, perf);
    }
    if (res->npositional == 0)
        return fb_fail(err, FB_ERR_USAGE, "no collective given; use: fabric-coll COLLECTIVE [options] with one of %s",
                       names);
    if (res->npositional > 1)
        return fb_fail(err, FB_ERR_USAGE, "unexpected argument '%s' after the collective", res->positional[1]);
    cfg->coll = fb_collective_find(res->positional[0]);
    if (cfg->coll == NULL)
        return fb_fail(err, FB_ERR_USAGE, "unknown collective '%s'; choose one of %s", res->positional[0],
                       names);
    return FB_OK;
}

/* Without --backend: as fabric-coll the automatic choice, said in the
 * first output line; under an nccl-tests name the GPU, or exit 5. */
static enum fb_status pick_backend(struct coll_config *cfg, struct fb_err *err)
{
    if (cfg->backend_name == NULL && cfg->perf_name) {
        cfg->backend = fb_backend_for_perf_name(base_name(cfg->invoked_as), cfg->backend_why,
                                                sizeof cfg->backend_why, err);
        return cfg->backend != NULL ? FB_OK : err->code;
    }
    if (cfg->backend_name == NULL) {
        cfg->backend = fb_backend_default(cfg->backend_why, sizeof cfg->backend_why);
        return FB_OK;
    }
    int compiled = 0;
    cfg->backend = fb_backend_find(cfg->backend_name, &compiled);
    if (cfg->backend != NULL)
        return FB_OK;
    if (strcmp(cfg->backend_name, "nccl") == 0)
        return fb_fail(err, FB_ERR_UNAVAIL,
                       "this build has no NCCL backend (CUDA/NCCL were not found at build time); "
                       "rebuild with CUDA_HOME=/path/to/cuda make, or use --backend mpi");
    return fb_fail(err, FB_ERR_USAGE, "unknown backend '%s'; use nccl or mpi", cfg->backend_name);
}

static enum fb_status check_values(struct coll_config *cfg, struct fb_err *err)
{
    char a[32], b[32];
    if (cfg->minbytes == 0 || cfg->maxbytes == 0)
        return fb_fail(err, FB_ERR_USAGE, "sizes must be at least 1 byte (-b %llu -e %llu); e.g. -b 1K -e 1G",
                       (unsigned long long)cfg->minbytes, (unsigned long long)cfg->maxbytes);
    if (cfg->minbytes > cfg->maxbytes) {
        fb_format_size(cfg->minbytes, a, sizeof a);
        fb_format_size(cfg->maxbytes, b, sizeof b);
        return fb_fail(err, FB_ERR_USAGE, "-b %s is above -e %s; the smallest size must not exceed the largest (swap them?)", a, b);
    }
    if (cfg->stepbytes == 0)
        return fb_fail(err, FB_ERR_USAGE, "-i 0 would never advance; give a positive step or use -f 2");
    return FB_OK;
}

/* -d and -o: one name, or "all" for the whole list (the first stands in
 * for the run's dtype and op until the loop sets each). */
static enum fb_status pick_type_and_op(struct coll_config *cfg, struct fb_err *err)
{
    cfg->dtype_all = strcmp(cfg->dtype_name, FB_ALL_NAME) == 0;
    int t = cfg->dtype_all ? 0 : fb_dtype_parse(cfg->dtype_name);
    if (t < 0)
        return fb_fail(err, FB_ERR_USAGE, "unknown datatype '%s'; choose one of %s", cfg->dtype_name, fb_dtype_choices());
    cfg->dtype = (enum fb_dtype)t;
    cfg->op_all = strcmp(cfg->op_name, FB_ALL_NAME) == 0;
    int op = cfg->op_all ? 0 : fb_redop_parse(cfg->op_name);
    if (op < 0)
        return fb_fail(err, FB_ERR_USAGE, "unknown op '%s'; choose one of %s", cfg->op_name, fb_redop_choices());
    cfg->op = (enum fb_redop)op;
    return FB_OK;
}

/* -t x -g ranks in one process need GPUs: MPI ranks are processes. */
static enum fb_status check_ranks_per_process(const struct coll_config *cfg, struct fb_err *err)
{
    long per = cfg->nthreads * cfg->ngpus;
    if (per > FB_LOCAL_RANKS_MAX)
        return fb_fail(err, FB_ERR_USAGE, "-t %ld -g %ld: %ld ranks in one process, at most %d; launch more processes",
                       cfg->nthreads, cfg->ngpus, per, FB_LOCAL_RANKS_MAX);
    if (per > 1 && strcmp(cfg->backend->name, "nccl") != 0)
        return fb_fail(err, FB_ERR_USAGE,
                       "-t %ld -g %ld: the %s backend runs one rank per process; drop -t/-g and launch %ld times "
                       "as many processes (mpirun -np)",
                       cfg->nthreads, cfg->ngpus, cfg->backend->name, per);
    return FB_OK;
}

/* Under a *_perf name -J is nccl-tests' own JSON, so scripts written for
 * nccl-tests read what they expect, and the record goes to --record or the
 * default path; as fabric-coll, -J is the record. */
static enum fb_status pick_outputs(struct coll_config *cfg, struct fb_err *err)
{
    if (cfg->perf_name) {
        cfg->record_path = cfg->record_opt;
        cfg->ntjson_path = cfg->ntjson_opt ? cfg->ntjson_opt : cfg->json_path;
        cfg->ntjson_any_name = cfg->ntjson_opt != NULL;
        return FB_OK;
    }
    if (cfg->json_path != NULL && cfg->record_opt != NULL)
        return fb_fail(err, FB_ERR_USAGE, "-J and --record both name the results record as fabric-coll; give one of them");
    cfg->record_path = cfg->json_path ? cfg->json_path : cfg->record_opt;
    cfg->ntjson_path = cfg->ntjson_opt;
    cfg->ntjson_any_name = 1;
    return FB_OK;
}

/* -r RANK, or every rank in turn: "all" or nccl-tests' own -1. */
static enum fb_status pick_root(struct coll_config *cfg, struct fb_err *err)
{
    cfg->root_all = strcmp(cfg->root_name, FB_ALL_NAME) == 0;
    if (cfg->root_all)
        return FB_OK;
    struct fb_err why = {0};
    if (fb_parse_int(cfg->root_name, "-r", -1, (long)BIG, &cfg->root, &why) != FB_OK)
        return fb_fail(err, FB_ERR_USAGE, "%s; give a rank, or all (-1) for every rank in turn", why.msg);
    cfg->root_all = cfg->root == -1;
    if (cfg->root_all)
        cfg->root = 0;
    return FB_OK;
}

/* -G captures the timed loop into CUDA graphs: only the nccl backend has
 * them, CUDA cannot capture the legacy NULL stream, and a captured call
 * cannot be waited for inside the capture. Refused here, before any GPU
 * work, instead of a CUDA error in the middle of the sweep. */
static enum fb_status check_graph_flags(const struct coll_config *cfg, struct fb_err *err)
{
    if (strcmp(cfg->backend->name, "nccl") != 0)
        return fb_fail(err, FB_ERR_USAGE, "-G (CUDA graphs) needs the nccl backend; drop -G for --backend mpi");
    if (cfg->stream_null)
        return fb_fail(err, FB_ERR_USAGE,
                       "-G %ld with -y 1: CUDA cannot capture the NULL stream into a graph; drop -y 1 or -G",
                       cfg->graph);
    if (cfg->blocking != 0)
        return fb_fail(err, FB_ERR_USAGE,
                       "-G %ld with -z %ld: calls captured into a graph cannot be waited for one by one; drop -z or -G",
                       cfg->graph, cfg->blocking);
    return FB_OK;
}

/* nccl-tests turns -I and -K off, with a message, when their values make
 * no sense (src/common.cu, main): the same here, as a note. */
static void settle_per_iter(struct coll_config *cfg)
{
    char *note = cfg->timing_note[0];
    size_t len = sizeof cfg->timing_note[0];
    if (cfg->per_iter != 0 && cfg->per_iter != 1) {
        snprintf(note, len, "-I %ld: per-iteration timing takes 0 (off) or 1 (on); turned off", cfg->per_iter);
        cfg->per_iter = 0;
    } else if (cfg->per_iter && cfg->graph > 0) {
        snprintf(note, len, "-I 1 does not go with CUDA graphs (-G %ld); per-iteration timing turned off", cfg->graph);
        cfg->per_iter = 0;
    }
    note = cfg->timing_note[1];
    if (cfg->per_iter_skip < 0 || cfg->per_iter_skip >= cfg->iters) {
        snprintf(note, len, "-K %ld: the iterations to skip must be 0 to %ld (-n %ld); -K turned off",
                 cfg->per_iter_skip, cfg->iters - 1, cfg->iters);
        cfg->per_iter_skip = 0;
    } else if (cfg->per_iter_skip > 0 && !cfg->per_iter) {
        snprintf(note, len, "-K %ld needs per-iteration timing (-I 1); -K turned off", cfg->per_iter_skip);
        cfg->per_iter_skip = 0;
    }
}

/* Copies [from, from + len) into `out` when it is 1 to size-1 bytes of
 * the characters `allowed` (a strspn set); returns 0 otherwise. */
static int take_part(char *out, size_t size, const char *from, size_t len, const char *allowed, int may_be_empty)
{
    if ((len == 0 && !may_be_empty) || len >= size)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (strchr(allowed, from[i]) == NULL || from[i] == '\0')
            return 0;
    memcpy(out, from, len);
    out[len] = '\0';
    return 1;
}

#define RS_LOWER "abcdefghijklmnopqrstuvwxyz0123456789"
#define RS_NAME RS_LOWER "-."
#define RS_KIND "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
#define RS_LABEL RS_KIND "._-"

/* delivered:KIND/NAMESPACE/NAME@GENERATION */
static int parse_delivered(struct fb_runtime_source *rs, const char *spec)
{
    const char *s1 = strchr(spec, '/'), *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
    const char *at = s2 ? strrchr(s2 + 1, '@') : NULL;
    if (at == NULL || !take_part(rs->kind, sizeof rs->kind, spec, (size_t)(s1 - spec), RS_KIND, 0) ||
        !take_part(rs->ns, sizeof rs->ns, s1 + 1, (size_t)(s2 - s1 - 1), RS_LOWER "-", 1) ||
        !take_part(rs->name, sizeof rs->name, s2 + 1, (size_t)(at - s2 - 1), RS_NAME, 0))
        return 0;
    if (strcmp(at + 1, "-") == 0)
        return 1;
    return take_part(rs->generation, 20, at + 1, strlen(at + 1), "0123456789", 0);
}

static enum fb_status pick_runtime_source(struct coll_config *cfg, struct fb_err *err)
{
    struct fb_runtime_source *rs = &cfg->runtime_source;
    const char *spec = cfg->runtime_source_opt;
    memset(rs, 0, sizeof *rs);
    if (spec == NULL)
        return FB_OK;
    rs->given = 1;
    int ok = 0;
    if (strncmp(spec, "delivered:", 10) == 0) {
        rs->delivered = 1;
        ok = parse_delivered(rs, spec + 10);
    } else if (strncmp(spec, "fabric-bench:", 13) == 0) {
        snprintf(rs->kind, sizeof rs->kind, "overlay");
        ok = take_part(rs->name, sizeof rs->name, spec + 13, strlen(spec + 13), RS_LABEL, 0);
    }
    if (!ok)
        return fb_fail(err, FB_ERR_USAGE,
                       "--runtime-source '%.200s' is not delivered:KIND/NAMESPACE/NAME@GENERATION or fabric-bench:FABRIC; "
                       "e.g. delivered:ClusterTrainingRuntime//torch-distributed@3",
                       spec);
    return FB_OK;
}

static enum fb_status check_cycles(const struct coll_config *cfg, struct fb_err *err)
{
    if (cfg->run_cycles == COLL_CYCLES_ENDLESS && cfg->time_budget > 0)
        return fb_fail(err, FB_ERR_USAGE, "--time-budget shares a finite sweep; give -N 1 or more with it, or drop it for -N 0");
    return FB_OK;
}

enum fb_status coll_config_parse(struct coll_config *cfg, int argc, char **argv, struct fb_err *err)
{
    cfg->invoked_as = argc > 0 ? argv[0] : "fabric-coll";
    cfg->argc = argc;
    cfg->argv = argv;
    struct fb_opts_result res;
    enum fb_status st = fb_opts_parse(coll_options, argc, argv, cfg, &res, err);
    if (st == FB_OK && !cfg->help && !cfg->version) {
        cfg->stepfactor_given = res.given[fb_opts_find(coll_options, "stepfactor")];
        cfg->iters_given = res.given[fb_opts_find(coll_options, "iters")];
        cfg->device_impl_given = res.given[fb_opts_find(coll_options, "device_implementation")];
        cfg->device_ctas_given = res.given[fb_opts_find(coll_options, "device_cta_count")];
        st = pick_collective(cfg, &res, err);
        if (st == FB_OK)
            st = pick_outputs(cfg, err);
        if (st == FB_OK)
            st = check_values(cfg, err);
        if (st == FB_OK)
            st = pick_type_and_op(cfg, err);
        if (st == FB_OK)
            st = pick_root(cfg, err);
        if (st == FB_OK)
            st = check_cycles(cfg, err);
        if (st == FB_OK)
            st = pick_runtime_source(cfg, err);
        if (st == FB_OK)
            settle_per_iter(cfg);
        if (st == FB_OK)
            st = pick_backend(cfg, err);
        if (st == FB_OK && cfg->graph > 0)
            st = check_graph_flags(cfg, err);
        if (st == FB_OK)
            st = check_ranks_per_process(cfg, err);
    }
    fb_opts_result_free(&res);
    return st;
}

/* NCCL's flags on another backend, and -p where there is one thread. */
static int nccl_only_notes(const struct coll_config *cfg, FILE *out)
{
    static const char *const names[] = {"stream_null", "local_register", "cta_policy", "device_implementation"};
    int n = 0, nccl = strcmp(cfg->backend->name, "nccl") == 0;
    for (size_t i = 0; !nccl && i < sizeof names / sizeof *names; i++) {
        const struct fb_opt *o = &coll_options[fb_opts_find(coll_options, names[i])];
        long v;
        memcpy(&v, (const char *)cfg + o->offset, sizeof v);
        if (v <= 0)
            continue;
        if (out)
            fprintf(out, "# Note: -%c %ld has effect only on the nccl backend\n", o->short_name, v);
        n++;
    }
    if (cfg->parallel_init && cfg->nthreads == 1) {
        if (out)
            fprintf(out, "# Note: -p 1 has no effect with -t 1 (one thread sets up every communicator)\n");
        n++;
    }
    return n;
}

int coll_config_notes(const struct coll_config *cfg, FILE *out)
{
    int n = 0;
    for (int i = 0; coll_options[i].long_name != NULL; i++) {
        const struct fb_opt *o = &coll_options[i];
        if (!o->no_effect)
            continue;
        long v;
        memcpy(&v, (const char *)cfg + o->offset, sizeof v);
        if (v == 0)
            continue;
        if (out)
            fprintf(out, "# Note: -%c %ld is accepted for nccl-tests compatibility and has no effect here\n",
                    o->short_name, v);
        n++;
    }
    /* MPI's calls return when they are done: issuing is completing. */
    if (cfg->cputime && cfg->backend != NULL && strcmp(cfg->backend->name, "mpi") == 0) {
        if (out)
            fprintf(out, "# Note: -C 1 on the mpi backend: MPI calls return when complete, so CPU time is the wall time\n");
        n++;
    }
    for (int i = 0; i < 2; i++) {
        if (cfg->timing_note[i][0] == '\0')
            continue;
        if (out)
            fprintf(out, "# Note: %s\n", cfg->timing_note[i]);
        n++;
    }
    return n + nccl_only_notes(cfg, out);
}

void coll_config_usage(FILE *out, const char *prog)
{
    char names[FB_COLL_NAMES_MAX];
    fb_collective_names(names, sizeof names, ", ");
    fprintf(out,
            "usage: %s COLLECTIVE [options]   (or as all_reduce_perf, all_gather_perf, ... [options])\n"
            "Measures a collective over a size sweep on every rank of an MPI job, prints the\n"
            "nccl-tests table and writes a results JSON file.\n"
            "collectives: %s\n\noptions:\n",
            base_name(prog), names);
    fb_opts_help(out, coll_options);
    fprintf(out, "\nexit codes: 0 ok, 1 internal error, 2 usage, 3 wrong results, 4 memory,\n"
                 "5 backend unavailable, 6 launch mismatch, 7 results not writable, 8 timeout,\n"
                 "9 runtime, 130 SIGINT, 143 SIGTERM (finished sizes kept; docs/exit-codes.md)\n");
}
