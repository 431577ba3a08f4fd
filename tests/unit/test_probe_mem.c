/* Memory back-ends: which one the options choose, host memory, and the gpu
 * entry where CUDA or a GPU is missing. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "probe/mem.h"

static void test_use_cuda_chooses_the_gpu_backend(void)
{
    CHECK(probe_mem_backend_for(0) == &probe_mem_host);
    CHECK(probe_mem_backend_for(1) == &probe_mem_gpu);
    CHECK_STR(probe_mem_host.kind, "host");
    CHECK_STR(probe_mem_gpu.kind, "gpu");
    /* Only host memory may be cleared by the CPU; GPU memory is asked for
     * before the device so a node without one says so first. */
    CHECK(probe_mem_host.cpu_visible && !probe_mem_host.before_device);
    CHECK(!probe_mem_gpu.cpu_visible && probe_mem_gpu.before_device);
}

static void test_host_memory_is_zeroed_and_unbound_without_a_node(void)
{
    struct probe_mem m;
    struct fb_err err = {0};
    struct probe_mem_request rq = {64 << 10, -1, -1, 0};
    CHECK_INT(probe_mem_alloc(&probe_mem_host, &m, &rq, &err), FB_OK);
    CHECK(m.addr != NULL);
    CHECK_INT(m.len, 64 << 10);
    CHECK_INT(m.numa_node, -1);
    CHECK_INT(m.gpu, -1);
    const unsigned char *p = m.addr;
    int zero = 1;
    for (size_t i = 0; m.addr != NULL && i < m.len; i++)
        zero &= p[i] == 0;
    CHECK(zero);
    probe_mem_free(&m);
    CHECK(m.backend == NULL && m.addr == NULL);
}

static void test_gpu_memory_without_cuda_or_gpu_is_unavailable(void)
{
    struct probe_mem m;
    struct fb_err err = {0};
    struct probe_mem_request rq = {4096, -1, -1, 0};
    enum fb_status st = probe_mem_alloc(probe_mem_backend_for(1), &m, &rq, &err);
#ifndef HAVE_CUDA
    CHECK_INT(st, FB_ERR_UNAVAIL);
    CHECK_STR(err.msg, "--use-cuda: this fabric-rdma was built without CUDA; rebuild on a machine "
                       "with the CUDA toolkit (make CUDA_HOME=...) or drop --use-cuda");
#else
    /* A CUDA build allocates on a GPU node and says what is missing
     * elsewhere. */
    if (st == FB_OK) {
        CHECK(m.addr != NULL);
        CHECK(m.gpu >= 0);
    } else {
        CHECK_INT(st, FB_ERR_UNAVAIL);
        CHECK(strncmp(err.msg, "--use-cuda: ", 12) == 0);
    }
#endif
    probe_mem_free(&m); /* after a failed allocation too */
    CHECK(m.backend == NULL && m.addr == NULL);
}

int main(void)
{
    RUN(test_use_cuda_chooses_the_gpu_backend);
    RUN(test_host_memory_is_zeroed_and_unbound_without_a_node);
    RUN(test_gpu_memory_without_cuda_or_gpu_is_unavailable);
    return fbt_done();
}
