/* fabric-coll's options: nccl-tests' flags and defaults (2.19.6), plus the
 * suite's own long options, described once in a table. */
#ifndef FB_COLL_CONFIG_H
#define FB_COLL_CONFIG_H

#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>

#include "coll/backend.h"
#include "coll/record.h"
#include "nccl/collective.h"
#include "nccl/dtype.h"
#include "core/options.h"
#include "core/status.h"

struct coll_config {
    /* nccl-tests flags */
    uint64_t minbytes, maxbytes, stepbytes;
    long stepfactor, iters, warmup, agg, check, root, blocking, average, run_cycles;
    long timeout, graph, nthreads, ngpus, parallel_init, stream_null, cputime, timestamps;
    long per_iter, per_iter_skip, memory_report, unalign, local_register;
    long cta_policy, device_impl, device_ctas; /* -x (-1: not given), -D, -V */
    const char *dtype_name, *op_name, *root_name;
    const char *json_path;
    /* fabric-bench options */
    const char *record_opt, *ntjson_opt;
    const char *backend_name, *cluster, *results_dir;
    const char *launcher; /* --launcher env|mpi: read before the world is made (core/world_env.h) */
    const char *split; /* --split: rank groups (coll/split.h) */
    const char *runtime_source_opt; /* --runtime-source SPEC */
    int nccl_log, cap_memory, help, version, list, full, no_watchdog;
    double time_budget, fallback_band, cv_threshold;

    /* Derived by coll_config_finish. */
    const struct fb_collective *coll;
    enum fb_dtype dtype;
    enum fb_redop op;
    const struct fb_backend_ops *backend;
    char backend_why[320]; /* why the automatic choice is mpi; "" otherwise */
    const char *invoked_as;
    int stepfactor_given, iters_given, device_impl_given, device_ctas_given;
    struct fb_runtime_source runtime_source; /* --runtime-source, parsed */
    int argc;
    char **argv;
    int perf_name;          /* invoked as all_reduce_perf ...: -J is nccl-tests' JSON */
    const char *record_path; /* the results record: -J or --record, NULL = default path */
    const char *ntjson_path; /* nccl-tests' JSON, or NULL */
    int ntjson_any_name;     /* from --nccl-tests-json: written whatever the extension */
    /* -d all, -o all, -r all (or -r -1): the sweep loops over every type,
     * operator or root, nccl-tests' order; dtype/op/root hold the first. */
    int dtype_all, op_all, root_all;
    /* -I or -K given a value nccl-tests turns off, and why: printed as a
     * note, the run goes on without it. */
    char timing_note[2][160];
};

extern const struct fb_opt coll_options[];

void coll_config_defaults(struct coll_config *cfg);

/* Parses argv and checks every value; the collective comes from the program
 * name (all_reduce_perf) or the first positional argument. Local, no MPI. */
enum fb_status coll_config_parse(struct coll_config *cfg, int argc, char **argv,
                                 struct fb_err *err);

/* Notes for flags accepted for compatibility without effect; one "#" line
 * each into `out` (may be NULL to just count). Returns how many. */
int coll_config_notes(const struct coll_config *cfg, FILE *out);

void coll_config_usage(FILE *out, const char *prog);

/* The -N value that repeats the sweep until a signal ends the run. */
#define COLL_CYCLES_ENDLESS 0

#endif
