/* The collectives as data: one table row each, with nccl-tests' size
 * conventions, bus-bandwidth factor and in-place layout (the data and the
 * expected results are nccl/pattern.h's). Adding a collective is adding a
 * row, a case in fb_pat_expected and one call in each backend. */
#ifndef FB_NCCL_COLLECTIVE_H
#define FB_NCCL_COLLECTIVE_H

#include <stdbool.h>
#include <stddef.h>

#include "nccl/dtype.h"

enum fb_coll_id {
    FB_ALL_REDUCE, FB_ALL_GATHER, FB_REDUCE_SCATTER, FB_BROADCAST,
    FB_REDUCE, FB_ALLTOALL, FB_SENDRECV, FB_ALLTOALLV, FB_GATHER, FB_SCATTER,
    FB_HYPERCUBE, FB_NCOLLS
};

/* Element counts of one call, derived from the requested size. */
struct fb_counts {
    size_t send, recv; /* elements in the send and receive buffers */
    size_t param;      /* the count argument of the call (nccl-tests "count") */
    size_t bytes;      /* nccl-tests "size" column: max(send, recv) in bytes */
};

/* Where the data lives for an in-place call, as element offsets into the one
 * buffer used for both roles. MPI and NCCL agree except for reduce_scatter,
 * whose MPI_IN_PLACE result lands at the start of the buffer. */
enum fb_inplace_style { FB_INPLACE_NCCL, FB_INPLACE_MPI };

struct fb_collective {
    enum fb_coll_id id;
    const char *name;      /* "all_reduce" */
    const char *perf_name; /* "all_reduce_perf" */
    int reduces;           /* takes a reduction operator */
    int rooted;            /* takes a root rank */
    /* Runs only on a power-of-two rank count (hypercube: rank ^ 2^k is a
     * peer at every step). */
    int pow2_ranks;
    /* In place, sends and receives share one buffer at different offsets
     * (alltoallv): no result is defined, so the call is timed and never
     * checked, as nccl-tests does. */
    int inplace_unchecked;
    struct fb_counts (*counts)(size_t bytes, size_t eltsize, int nranks);
    double (*bus_factor)(int nranks);
    /* algBW = size / time x this; NULL for 1 (hypercube: (n-1)/n, the part
     * of the gathered size that crosses the network). */
    double (*alg_factor)(int nranks);
    /* The rank count a busBW/algBW ratio implies; 0 when it implies none. */
    long (*ranks_for_factor)(double factor);
    void (*inplace_offsets)(const struct fb_counts *c, int rank, enum fb_inplace_style style,
                            size_t *send_off, size_t *recv_off);
};

const struct fb_collective *fb_collective(enum fb_coll_id id);

/* Value of send element i on `rank` (nccl/pattern.h's fb_pat_input). */
double fb_coll_input(const struct fb_collective *c, enum fb_dtype t, enum fb_redop op, int nranks, int rank,
                     size_t i);
/* Expected receive element i on `rank`; returns 0 when this rank's
 * receive buffer holds nothing defined (reduce on a non-root). */
int fb_coll_expected(const struct fb_collective *c, const struct fb_counts *k, enum fb_dtype t, enum fb_redop op,
                     int nranks, int rank, int root, size_t i, double *want);
/* By name ("all_reduce", "allreduce", "all_reduce_perf"); NULL if unknown. */
const struct fb_collective *fb_collective_find(const char *name);
/* The collective a file name or title speaks of ("AllReduce_8n.log",
 * "all-to-all"): separators and case ignored, longest name first. */
const struct fb_collective *fb_collective_in_text(const char *s);

/* By its exact table name only, as results files and profiles spell it. */
const struct fb_collective *fb_collective_named(const char *name);
bool fb_collective_known(const char *name);

/* Every name in table order, "a, b, c" with `last_sep` (", " or " or ")
 * before the last: the one list messages, --help and --list print. */
#define FB_COLL_NAMES_MAX 512
void fb_collective_names(char *buf, size_t len, const char *last_sep);
/* The same for the program names fabric-coll answers to (all_reduce_perf, ...). */
void fb_collective_perf_names(char *buf, size_t len, const char *last_sep);

/* alltoallv's uneven exchange, nccl-tests' generated pattern: of the
 * `param` elements per peer a call's size gives (param x nranks in all),
 * rank `from` sends rank `to` a share growing with their distance
 * (to - from) mod nranks, nothing to itself; each share is rounded down to
 * 16 bytes. Every rank sends and receives the same total. */
size_t fb_alltoallv_count(size_t param, size_t eltsize, int nranks, int from, int to);
/* Where rank `to`'s share starts in rank `from`'s send buffer (elements). */
size_t fb_alltoallv_send_offset(size_t param, size_t eltsize, int nranks, int from, int to);

/* Whether the collective runs on this many ranks (hypercube: a power of two). */
bool fb_collective_runs_on(const struct fb_collective *c, int nranks);

/* How nccl-tests turned a row's size S (its "size" column: the whole
 * buffer for the gathers and scatters) and time t into its two bandwidths,
 * by released version (docs/report.md, "How nccl-tests computed its
 * bandwidths"): algBW = S / t x an algorithm share, busBW = algBW x a bus
 * share. Only all_gather and reduce_scatter changed (2020-06): before,
 * algBW already carried (n-1)/n and busBW was algBW, so busBW is the same
 * figure under both rules and only algBW differs. */
enum fb_bw_rule {
    FB_BW_RULE_TODAY,       /* 2020-06 and later; every other collective always */
    FB_BW_RULE_GATHER_2020, /* before 2020-06: all_gather and reduce_scatter as hypercube */
};

/* algBW = S / t x this. NAN where S and t do not give algBW (alltoallv:
 * its algBW is the busiest rank's bytes, set by a pattern or matrix the
 * output does not print). */
double fb_coll_alg_share(const struct fb_collective *c, enum fb_bw_rule rule, int nranks);
/* busBW = algBW x this. */
double fb_coll_bus_share(const struct fb_collective *c, enum fb_bw_rule rule, int nranks);
/* Whether the rule computes c's bandwidths otherwise than today's. */
bool fb_coll_rule_differs(const struct fb_collective *c, enum fb_bw_rule rule);

/* Bandwidths of one measurement, GB = 1e9 as nccl-tests. fb_algbw_GBps is
 * size / time; fb_coll_algbw_GBps applies the collective's alg_factor. */
double fb_algbw_GBps(size_t bytes, double seconds);
double fb_coll_algbw_GBps(const struct fb_collective *c, size_t bytes, double seconds, int nranks);
double fb_busbw_GBps(const struct fb_collective *c, size_t bytes, double seconds, int nranks);

#endif
