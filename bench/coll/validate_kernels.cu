/* The fill and check kernels and the host calls that run them. Each thread
 * walks the grid's stride over the elements (any grid covers any size);
 * a check counts per thread, sums per warp and adds once per warp to the
 * one result, which alone comes back to the host. */
#include "coll/validate_kernels.h"

#include <stdlib.h>

#define THREADS 256
#define BLOCKS_PER_SM 8

struct fb_devcheck {
    int blocks_max;                /* resident blocks of the device */
    double *reduce;                /* FB_EXPECT_PERIOD */
    uint64_t *share_start, *share_from;
    size_t share_cap;              /* entries of each */
    struct fb_check_result *result;
    struct fb_check_result host;   /* the count as read back */
    uint64_t key;                  /* of the tables on the device; 0: none */
};

extern "C" __global__ void fb_fill_kernel(struct fb_fill_args a)
{
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += stride)
        fb_fill_one(&a, i);
}

extern "C" __global__ void fb_check_kernel(struct fb_check_args a)
{
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    unsigned long long wrong = 0, first = ~0ull;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += stride)
        if (fb_wrong_at(&a, i) && wrong++ == 0)
            first = i;
    for (int o = 16; o > 0; o /= 2) {
        wrong += __shfl_down_sync(0xffffffffu, wrong, o);
        unsigned long long other = __shfl_down_sync(0xffffffffu, first, o);
        first = other < first ? other : first;
    }
    if ((threadIdx.x & 31) == 0 && wrong > 0) {
        atomicAdd(&a.result->wrong, wrong);
        atomicMin(&a.result->first, first);
    }
}

static unsigned blocks_for(const struct fb_devcheck *dc, uint64_t n)
{
    uint64_t b = (n + THREADS - 1) / THREADS;
    return (unsigned)(b == 0 ? 1 : b < (uint64_t)dc->blocks_max ? b : (uint64_t)dc->blocks_max);
}

extern "C" cudaError_t fb_devcheck_new(struct fb_devcheck **out)
{
    struct fb_devcheck *dc = (struct fb_devcheck *)calloc(1, sizeof *dc);
    int dev = 0, sms = 0;
    if (dc == NULL)
        return cudaErrorMemoryAllocation;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (e == cudaSuccess)
        e = cudaMalloc((void **)&dc->result, sizeof *dc->result);
    dc->blocks_max = (sms > 0 ? sms : 1) * BLOCKS_PER_SM;
    if (e != cudaSuccess) {
        fb_devcheck_free(dc);
        return e;
    }
    *out = dc;
    return cudaSuccess;
}

extern "C" void fb_devcheck_free(struct fb_devcheck *dc)
{
    if (dc == NULL)
        return;
    cudaFree(dc->reduce);
    cudaFree(dc->share_start);
    cudaFree(dc->share_from);
    cudaFree(dc->result);
    free(dc);
}

extern "C" cudaError_t fb_devcheck_fill(struct fb_devcheck *dc, void *buf, uint64_t n, const struct fb_pattern *p,
                                        int poison, cudaStream_t stream)
{
    struct fb_fill_args a = {*p, buf, n, poison};
    if (n == 0)
        return cudaSuccess;
    fb_fill_kernel<<<blocks_for(dc, n), THREADS, 0, stream>>>(a);
    return cudaGetLastError();
}

/* Share tables with room for n + 1 entries; the old ones are freed after
 * the stream's work (cudaFree waits for the device). */
static cudaError_t share_room(struct fb_devcheck *dc, size_t n)
{
    if (dc->share_cap >= n)
        return cudaSuccess;
    cudaFree(dc->share_start);
    cudaFree(dc->share_from);
    dc->share_start = dc->share_from = NULL;
    dc->share_cap = 0;
    dc->key = 0; /* nothing on the device any more */
    cudaError_t e = cudaMalloc((void **)&dc->share_start, n * sizeof *dc->share_start);
    if (e == cudaSuccess)
        e = cudaMalloc((void **)&dc->share_from, n * sizeof *dc->share_from);
    if (e == cudaSuccess)
        dc->share_cap = n;
    return e;
}

/* The host's tables on the device, copied when they changed. */
static cudaError_t upload_tables(struct fb_devcheck *dc, const struct fb_pattern *p, const struct fb_pat_tables *t,
                                 uint64_t key, cudaStream_t stream, struct fb_pat_tables *dev)
{
    size_t shares = (size_t)p->nranks + 1;
    cudaError_t e = t->share_start != NULL ? share_room(dc, shares) : cudaSuccess;
    /* A reduction's table (96 KiB) only once a reduction is checked. */
    if (e == cudaSuccess && t->reduce != NULL && dc->reduce == NULL) {
        e = cudaMalloc((void **)&dc->reduce, FB_EXPECT_PERIOD * sizeof *dc->reduce);
        dc->key = 0;
    }
    dev->reduce = t->reduce != NULL ? dc->reduce : NULL;
    dev->share_start = t->share_start != NULL ? dc->share_start : NULL;
    dev->share_from = t->share_start != NULL ? dc->share_from : NULL;
    if (e != cudaSuccess || key == dc->key)
        return e;
    if (t->reduce != NULL)
        e = cudaMemcpyAsync(dc->reduce, t->reduce, FB_EXPECT_PERIOD * sizeof *t->reduce, cudaMemcpyHostToDevice,
                            stream);
    if (e == cudaSuccess && t->share_start != NULL)
        e = cudaMemcpyAsync(dc->share_start, t->share_start, shares * sizeof *t->share_start,
                            cudaMemcpyHostToDevice, stream);
    if (e == cudaSuccess && t->share_start != NULL)
        e = cudaMemcpyAsync(dc->share_from, t->share_from, shares * sizeof *t->share_from, cudaMemcpyHostToDevice,
                            stream);
    dc->key = e == cudaSuccess ? key : 0;
    return e;
}

extern "C" cudaError_t fb_devcheck_count(struct fb_devcheck *dc, const void *buf, uint64_t n,
                                         const struct fb_pattern *p, const struct fb_pat_tables *t, uint64_t key,
                                         cudaStream_t stream, uint64_t *wrong, uint64_t *first)
{
    struct fb_check_args a = {*p, buf, n, {NULL, NULL, NULL}, dc->result};
    *wrong = 0;
    if (n == 0)
        return cudaSuccess;
    cudaError_t e = upload_tables(dc, p, t, key, stream, &a.t);
    if (e == cudaSuccess)
        e = cudaMemsetAsync(&dc->result->wrong, 0, sizeof dc->result->wrong, stream);
    if (e == cudaSuccess)
        e = cudaMemsetAsync(&dc->result->first, 0xff, sizeof dc->result->first, stream);
    if (e != cudaSuccess)
        return e;
    fb_check_kernel<<<blocks_for(dc, n), THREADS, 0, stream>>>(a);
    e = cudaGetLastError();
    if (e == cudaSuccess)
        e = cudaMemcpyAsync(&dc->host, dc->result, sizeof dc->host, cudaMemcpyDeviceToHost, stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(stream);
    if (e != cudaSuccess)
        return e;
    *wrong = dc->host.wrong;
    if (dc->host.wrong > 0)
        *first = dc->host.first;
    return cudaSuccess;
}
