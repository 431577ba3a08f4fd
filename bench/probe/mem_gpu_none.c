/* GPU back-end for builds without CUDA: --use-cuda says so and the run
 * exits as "unavailable". The CUDA build compiles mem_gpu_nccl.c instead. */
#ifndef HAVE_NCCL
#include <string.h>

#include "probe/mem.h"

int probe_gpu_compiled(void) { return 0; }

enum fb_status probe_gpu_alloc(struct probe_mem *m, size_t len, int device, int local_rank,
                               struct fb_err *err)
{
    (void)len, (void)device, (void)local_rank;
    memset(m, 0, sizeof *m);
    return fb_fail(err, FB_ERR_UNAVAIL,
                   "--use-cuda: this fabric-rdma was built without CUDA; rebuild on a machine "
                   "with the CUDA toolkit (make CUDA_HOME=...) or drop --use-cuda");
}

enum fb_status probe_gpu_register(struct probe_mem *m, struct ibv_pd *pd, int access,
                                  struct ibv_mr **mr, struct fb_err *err)
{
    (void)m, (void)pd, (void)access;
    *mr = NULL;
    return fb_fail(err, FB_ERR_UNAVAIL, "GPU memory registration needs a CUDA build");
}

void probe_gpu_free(struct probe_mem *m) { (void)m; }
#endif
