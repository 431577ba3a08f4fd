/* Data set-up and result checking through a backend, in chunks, so a 16 GiB
 * GPU buffer is checked with a few MiB of host memory. */
#ifndef FB_COLL_VALIDATE_H
#define FB_COLL_VALIDATE_H

#include <stdint.h>

#include "coll/backend.h"

struct fb_checker {
    void *stage;       /* host staging buffer */
    size_t stage_bytes;
    double *expect;    /* one period of the expected reduction */
    enum fb_dtype expect_dtype;
    enum fb_redop expect_op;
    int expect_ranks;  /* 0 when the table is not built */
    /* alltoallv: the sender's share being checked, elements [start, end)
     * of the receive buffer, starting at `from_off` in its send buffer */
    struct {
        int from;
        size_t start, end, from_off;
    } share;
};

/* Where the first wrong element was, for a message a person can act on. */
struct fb_mismatch {
    uint64_t wrong;
    int rank; /* the global rank whose output it is */
    size_t first_index;
    double got, want;
};

enum fb_status fb_checker_init(struct fb_checker *ck, size_t stage_bytes, struct fb_err *err);
void fb_checker_free(struct fb_checker *ck);

/* Writes the input of rank `rank` (local rank `local` of this process) for
 * the call (into the receive buffer for an in-place call) and poisons the
 * output region so a call that writes nothing cannot pass. */
enum fb_status fb_prepare_call(struct fb_checker *ck, struct fb_backend *be, int local,
                               const struct fb_call *call, int rank, int nranks,
                               struct fb_err *err);

/* Counts the wrong output elements of rank `rank` (local rank `local`). */
enum fb_status fb_check_call(struct fb_checker *ck, struct fb_backend *be, int local,
                             const struct fb_call *call, int rank, int nranks,
                             struct fb_mismatch *out, struct fb_err *err);

#endif
