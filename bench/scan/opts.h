/* fabric-scan's options (one table: parsing, --help, the config echo). */
#ifndef FB_SCAN_OPTS_H
#define FB_SCAN_OPTS_H

#include <stdint.h>

#include "core/options.h"
#include "core/status.h"

enum scan_mode { SCAN_MODE_FAST, SCAN_MODE_EXHAUSTIVE };

struct scan_opts {
    int mode;              /* enum scan_mode, a CHOICE */
    const char *backend;   /* mpi, nccl; NULL: nccl with a GPU, else mpi */
    const char *launcher;  /* --launcher env|mpi, read before the world is made (core/world_env.h) */
    uint64_t bytes;
    long iters, warmup;
    double threshold;
    double test_timeout;   /* seconds per test */
    double test_seconds;   /* assumed per test, for the estimate */
    long seed;
    long estimate_nodes;   /* --estimate N: print the schedule, run nothing */
    long estimate_suspects;
    int no_alone;
    const char *topology, *rack_label;
    const char *json_path, *results_dir, *cluster;
    int help, version;
};

extern const struct fb_opt scan_options[];

/* Parses and checks; FB_ERR_USAGE with one line naming the fix. */
enum fb_status scan_opts_parse(struct scan_opts *o, int argc, char **argv, struct fb_err *err);
void scan_opts_help(const char *prog);

#endif
