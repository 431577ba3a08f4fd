/* The sweep plan: which sizes, and whether they fit in memory. Decided
 * before any buffer is allocated so a too-large -e fails in a second with the
 * size that would fit, not after minutes with an out-of-memory kill. */
#ifndef FB_COLL_PLAN_H
#define FB_COLL_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "nccl/collective.h"
#include "core/status.h"

/* Beyond this many sizes a linear sweep is a mistake, not a plan. */
#define FB_PLAN_MAX_SIZES 4096

struct fb_plan {
    uint64_t *sizes;
    int count;
    int linear_warning; /* a long linear sweep: say so in the output */
    int merged;         /* sizes dropped by fb_plan_dedupe */
};

/* nccl-tests stepping: multiply by `factor` when > 1, else add `step`. */
enum fb_status fb_plan_sizes(uint64_t min, uint64_t max, long factor, uint64_t step,
                             struct fb_plan *plan, struct fb_err *err);
void fb_plan_free(struct fb_plan *plan);

/* Drops each size whose call moves the same bytes as the size kept before
 * it (counts are whole elements, per-rank blocks round down to 16 bytes:
 * -b 1000 -e 1010 -i 1 is three sizes, not eleven), so no size gives two
 * rows of one run. Counted in plan->merged. */
void fb_plan_dedupe(struct fb_plan *plan, const struct fb_collective *c, size_t eltsize, int nranks);

/* Bytes of the send and receive buffers one rank needs for `size`. */
void fb_plan_buffers(const struct fb_collective *c, size_t eltsize, int nranks, uint64_t size,
                     size_t *send_bytes, size_t *recv_bytes);

/* Index of the largest planned size whose buffers, times `sharers` ranks
 * drawing on the same memory, fit in `avail` bytes after `reserve`; -1 if
 * none fits. */
int fb_plan_largest_fit(const struct fb_plan *plan, const struct fb_collective *c, size_t eltsize,
                        int nranks, int sharers, uint64_t avail, uint64_t reserve);

#endif
