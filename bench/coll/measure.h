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
    enum fb_time_reduction reduction;
    struct fb_watchdog *wd; /* ticked every iteration; may be NULL */
};

/* One placement (out-of-place or in-place) of one size. */
struct fb_measurement {
    double time_us;                      /* per operation, as `reduction` says */
    double time_us_mean, time_us_min, time_us_max;
    double algbw_GBps, busbw_GBps;
    int64_t wrong;                       /* over all ranks; -1 when not checked */
    double cpu_time_us;                  /* this rank's host time issuing the calls, per operation (-C) */
};

/* Fills the call for `size` bytes and the placement; offsets per backend. */
struct fb_call fb_make_call(const struct fb_collective *coll, enum fb_dtype t, enum fb_redop op,
                            int root, uint64_t size, int in_place, int rank, int nranks,
                            enum fb_inplace_style style);

/* The collective's rank count: every process holds be->local_ranks. */
int fb_total_ranks(const struct fb_backend *be, const struct fb_world *w);

/* Collective over `calls`, one per local rank of this process (the first
 * says what is measured). On a local failure the error is returned on
 * this process only: the caller must abort the job, since peers may be
 * inside a collective. */
enum fb_status fb_measure(struct fb_backend *be, const struct fb_world *w,
                          const struct fb_timing *tm, struct fb_checker *ck,
                          const struct fb_call *calls, struct fb_measurement *res,
                          struct fb_mismatch *local_mismatch, struct fb_err *err);

/* Collective: one timed call after a barrier, the slowest rank's time, to
 * size the iteration count under a time budget. */
enum fb_status fb_calibrate(struct fb_backend *be, const struct fb_world *w,
                            const struct fb_call *calls, double *seconds, struct fb_err *err);

const char *fb_time_reduction_name(enum fb_time_reduction r);

#endif
