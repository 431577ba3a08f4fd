/* Validation on the GPU: what the fill and check kernels
 * (coll/validate_kernels.cu) are given, what one thread does for element
 * i, and the calls that launch them. The per-element functions are the
 * kernels' whole body but for the loop over the grid: the CUDA stand-in's
 * host twins (tests/standin/cudart_kernel.c) run these same functions, so
 * CI runs the kernels' own code. */
#ifndef FB_COLL_VALIDATE_KERNELS_H
#define FB_COLL_VALIDATE_KERNELS_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "nccl/pattern.h"

/* The kernels' names, as the stand-in finds its twins. */
#define FB_FILL_KERNEL "fb_fill_kernel"
#define FB_CHECK_KERNEL "fb_check_kernel"

struct fb_fill_args {
    struct fb_pattern p;
    void *buf;  /* element 0 of the region, the pattern's index 0 */
    uint64_t n; /* elements */
    int poison; /* the poison instead of the input */
};

/* In device memory; only this crosses to the host. */
struct fb_check_result {
    unsigned long long wrong;
    unsigned long long first; /* the least wrong index; all ones when none */
};

struct fb_check_args {
    struct fb_pattern p;
    const void *buf; /* element 0 of the receive region */
    uint64_t n;
    struct fb_pat_tables t; /* in device memory */
    struct fb_check_result *result;
};

FB_HD static inline void fb_fill_one(const struct fb_fill_args *a, uint64_t i)
{
    fb_pat_store(a->p.dtype, a->buf, i, a->poison ? fb_pat_poison(a->p.dtype) : fb_pat_input(&a->p, i));
}

FB_HD static inline int fb_wrong_at(const struct fb_check_args *a, uint64_t i)
{
    double want = 0;
    if (!fb_pat_expected(&a->p, &a->t, i, &want))
        return 0;
    return !fb_pat_matches(a->p.dtype, a->p.op, fb_pat_load(a->p.dtype, a->buf, i), want);
}

#ifdef __cplusplus
extern "C" {
#endif

/* One device's lookup tables and result, made on the current device. */
struct fb_devcheck;
cudaError_t fb_devcheck_new(struct fb_devcheck **out);
void fb_devcheck_free(struct fb_devcheck *dc);

/* n elements of buf (device memory) get the pattern's input or poison,
 * in order on `stream`. */
cudaError_t fb_devcheck_fill(struct fb_devcheck *dc, void *buf, uint64_t n, const struct fb_pattern *p, int poison,
                             cudaStream_t stream);

/* Counts the wrong elements among n of buf on `stream` and waits for the
 * count: the tables `t` (host memory) are copied to the device only when
 * `key` differs from the last one's. *first gets the least wrong index
 * when there is one. */
cudaError_t fb_devcheck_count(struct fb_devcheck *dc, const void *buf, uint64_t n, const struct fb_pattern *p,
                              const struct fb_pat_tables *t, uint64_t key, cudaStream_t stream, uint64_t *wrong,
                              uint64_t *first);

#ifdef __cplusplus
}
#endif

#endif
