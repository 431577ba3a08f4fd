/* The gpu memory back-end of a build without CUDA: --use-cuda says so and
 * the run exits as "unavailable". A CUDA build compiles mem_gpu_cuda.c
 * instead. */
#ifndef HAVE_CUDA
#include "probe/mem.h"

static enum fb_status no_gpu_alloc(struct probe_mem *m, const struct probe_mem_request *rq,
                                   struct fb_err *err)
{
    (void)m, (void)rq;
    return fb_fail(err, FB_ERR_UNAVAIL,
                   "--use-cuda: this fabric-rdma was built without CUDA; rebuild on a machine "
                   "with the CUDA toolkit (make CUDA_HOME=...) or drop --use-cuda");
}

static enum fb_status no_gpu_register(struct probe_mem *m, struct ibv_pd *pd, int access,
                                      struct ibv_mr **mr, struct fb_err *err)
{
    (void)m, (void)pd, (void)access;
    *mr = NULL;
    return fb_fail(err, FB_ERR_UNAVAIL, "GPU memory registration needs a CUDA build");
}

static void no_gpu_release(struct probe_mem *m) { (void)m; }

const struct probe_mem_backend probe_mem_gpu = {
    .kind = "gpu",
    .cpu_visible = 0,
    .before_device = 1,
    .alloc = no_gpu_alloc,
    .register_mr = no_gpu_register,
    .release = no_gpu_release,
};
#endif
