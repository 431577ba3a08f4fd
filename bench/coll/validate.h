/* Data set-up and result checking, where the buffers are: on the device by
 * the backend's kernels, in place in host memory, or (a GPU build without
 * kernels) through a host staging buffer, in chunks, so that a 16 GiB GPU
 * buffer is checked with a few MiB of host memory. */
#ifndef FB_COLL_VALIDATE_H
#define FB_COLL_VALIDATE_H

#include <stdint.h>

#include "coll/backend.h"
#include "coll/pattern_host.h"

enum fb_check_place {
    FB_CHECK_DEVICE, /* the backend's fill and check: only counts come back */
    FB_CHECK_HOST,   /* host memory, in place */
    FB_CHECK_STAGED, /* copied through `stage` */
};

struct fb_checker {
    enum fb_check_place place;
    void *stage; /* FB_CHECK_STAGED: host staging buffer */
    size_t stage_bytes;
    struct fb_host_tables tables;
};

/* Where the first wrong element was, for a message a person can act on. */
struct fb_mismatch {
    uint64_t wrong;
    int rank; /* the global rank whose output it is */
    size_t first_index;
    double got, want;
};

/* The place the backend's ops allow, its stage (`stage_bytes`) allocated
 * only when it is needed. */
enum fb_status fb_checker_init(struct fb_checker *ck, const struct fb_backend *be, size_t stage_bytes,
                               struct fb_err *err);
void fb_checker_free(struct fb_checker *ck);

/* The place in words, for the output's first line: "on the GPU", ... */
const char *fb_check_place_text(enum fb_check_place place);
/* The place as the results file names it: "device", "host", "staged". */
const char *fb_check_place_name(enum fb_check_place place);
/* The place this backend's ops allow (what fb_checker_init chooses). */
enum fb_check_place fb_check_place_of(const struct fb_backend *be);

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
