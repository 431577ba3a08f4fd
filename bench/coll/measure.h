/* Timing one size: warm-up, barrier, wall clock around the timed
 * iterations, then the time reduced across ranks; and the check
 * iterations that count wrong elements over all ranks. */
#ifndef FB_COLL_MEASURE_H
#define FB_COLL_MEASURE_H

#include <stdint.h>

#include "coll/backend.h"
#include "coll/validate.h"
#include "core/watchdog.h"
#include "core/world.h"

enum fb_time_reduction { FB_TIME_RANK0, FB_TIME_MEAN, FB_TIME_MIN, FB_TIME_MAX };

struct fb_timing {
    long iters, warmup, agg, check;
    int blocking;
    int per_iter;       /* -I 1: every timed iteration's time is kept */
    long per_iter_skip; /* -K: leading iterations left out of the summary */
    enum fb_time_reduction reduction;
    struct fb_watchdog *wd; /* ticked every iteration; may be NULL */
};

/* A sample of per-iteration times summarised as nccl-tests does
 * (computeIterStats, src/util.cu): p50 is the element at n/2 of the sorted
 * sample, p95 and p99 are nearest-rank, stdev is the population's, cv_pct
 * is stdev over avg in % (0 when avg is 0). Same unit as the sample. */
struct fb_iter_stats {
    double min, max, avg, p50, p95, p99, stdev, cv_pct;
};

/* Nearest-rank index of percentile `pct` in a sorted sample of n:
 * ceil(n * pct / 100) - 1, at most n - 1. */
long fb_percentile_index(long n, int pct);

/* Summary of times[0..n); n >= 1. */
void fb_iter_stats_of(const double *times, long n, struct fb_iter_stats *out);

/* -I 1: per operation, each timed iteration's time in us, the slowest
 * rank's for that iteration; the summary leaves out the first `skipped`. */
struct fb_per_iter {
    double *times_us; /* n of them; NULL when per-iteration timing is off */
    long n, skipped;
    struct fb_iter_stats stats;
};

/* One placement (out-of-place or in-place) of one size. */
struct fb_measurement {
    double time_us;                      /* per operation, as `reduction` says */
    double time_us_mean, time_us_min, time_us_max;
    double algbw_GBps, busbw_GBps;
    int64_t wrong;                       /* over all ranks; -1 when not checked */
    double cpu_time_us;                  /* this rank's host time issuing the calls, per operation (-C) */
    struct fb_per_iter iter;
};

void fb_measurement_free(struct fb_measurement *m);

/* Fills the call for `size` bytes and the placement; offsets per backend. */
struct fb_call fb_make_call(const struct fb_collective *coll, enum fb_dtype t, enum fb_redop op,
                            int root, uint64_t size, int in_place, int rank, int nranks,
                            enum fb_inplace_style style);

/* The collective's rank count: every process holds be->local_ranks. */
int fb_total_ranks(const struct fb_backend *be, const struct fb_world *w);

/* -u N: both buffers start N elements in, as nccl-tests misaligns them
 * (TimeTest, src/common.cu); the buffers need N elements of slack. */
void fb_call_unalign(struct fb_call *c, size_t elements);
#define FB_UNALIGN_ELT_MAX 8 /* the largest element: -u N needs N of them */

/* Collective over `calls`, one per local rank of this process (the first
 * says what is measured). On a local failure the error is returned on
 * this process only: the caller must abort the job, since peers may be
 * inside a collective. */
enum fb_status fb_measure(struct fb_backend *be, const struct fb_world *w,
                          const struct fb_timing *tm, struct fb_checker *ck,
                          const struct fb_call *calls, struct fb_measurement *res,
                          struct fb_mismatch *local_mismatch, struct fb_err *err);

/* Collective: the time of one call (the slowest rank's; the quickest of up
 * to three when a call is short), to size the iteration count under a time
 * budget. */
enum fb_status fb_calibrate(struct fb_backend *be, const struct fb_world *w,
                            const struct fb_call *calls, double *seconds, struct fb_err *err);

const char *fb_time_reduction_name(enum fb_time_reduction r);

#endif
