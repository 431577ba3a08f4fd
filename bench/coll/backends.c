#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/backend.h"

#ifdef HAVE_NCCL
#include <cuda_runtime.h>

extern const struct fb_backend_ops fb_backend_nccl;

/* CUDA's own word on why it sees no GPU ("" when it sees one), with the
 * CUDA_VISIBLE_DEVICES that may hide them. */
static void cuda_sees_no_gpu(char *why, size_t len)
{
    int n = 0;
    cudaError_t rc = cudaGetDeviceCount(&n);
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    char hidden[96] = "";
    if (visible != NULL)
        snprintf(hidden, sizeof hidden, ", CUDA_VISIBLE_DEVICES='%.60s'", visible);
    if (rc != cudaSuccess)
        snprintf(why, len, "cudaGetDeviceCount: %s%s", cudaGetErrorString(rc), hidden);
    else if (n == 0)
        snprintf(why, len, "cudaGetDeviceCount: 0 devices%s", hidden);
    else if (len > 0)
        why[0] = '\0';
}
#endif

const struct fb_backend_ops *fb_backend_find(const char *name, int *compiled)
{
    *compiled = 1;
    if (strcmp(name, "mpi") == 0)
        return &fb_backend_mpi;
    if (strcmp(name, "nccl") == 0) {
#ifdef HAVE_NCCL
        return &fb_backend_nccl;
#else
        *compiled = 0;
        return NULL;
#endif
    }
    *compiled = 0;
    return NULL;
}

const struct fb_backend_ops *fb_backend_default(char *why, size_t len)
{
#ifdef HAVE_NCCL
    char cuda[256];
    cuda_sees_no_gpu(cuda, sizeof cuda);
    if (cuda[0] == '\0') {
        snprintf(why, len, "%s", "");
        return &fb_backend_nccl;
    }
    snprintf(why, len, "CUDA sees no GPU (%s)", cuda);
#else
    snprintf(why, len, "built without NCCL");
#endif
    return &fb_backend_mpi;
}

/* nccl-tests measures GPUs and fails where there is none: its drop-in
 * must not quietly measure host memory there and write results that look
 * like a GPU run's. */
const struct fb_backend_ops *fb_backend_for_perf_name(const char *prog, char *why, size_t len,
                                                      struct fb_err *err)
{
#ifdef HAVE_NCCL
    char cuda[256];
    cuda_sees_no_gpu(cuda, sizeof cuda);
    snprintf(why, len, "%s", "");
    if (cuda[0] == '\0')
        return &fb_backend_nccl;
    fb_fail(err, FB_ERR_UNAVAIL, "%s measures GPUs, as nccl-tests does, and CUDA sees none here "
            "(%s): request GPUs (nvidia.com/gpu in the pod, --gpus for the job), check the "
            "driver (nvidia-smi), or add --backend mpi to measure host memory", prog, cuda);
    return NULL;
#else
    (void)prog;
    (void)err;
    snprintf(why, len, "built without NCCL");
    return &fb_backend_mpi;
#endif
}

char *fb_buffer_span(const struct fb_buffers *b, enum fb_buf which, size_t off, size_t n,
                     const char *verb, struct fb_err *err)
{
    size_t len = which == FB_BUF_SEND ? b->send_bytes : b->recv_bytes;
    if (off > len || n > len - off) {
        fb_fail(err, FB_ERR_INTERNAL, "%s past buffer end (%zu + %zu > %zu)", verb, off, n, len);
        return NULL;
    }
    return (which == FB_BUF_SEND ? b->send : b->recv) + off;
}
