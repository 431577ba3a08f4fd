/* GPU memory for GPUDirect RDMA: allocated with the CUDA runtime,
 * registered through dma-buf when the driver and kernel can export it
 * (cuMemGetHandleForAddressRange + ibv_reg_dmabuf_mr), else with plain
 * ibv_reg_mr, which only works with nvidia-peermem loaded. The driver API
 * comes from dlopen("libcuda.so.1"): linking libcuda would break the binary
 * on machines without the NVIDIA driver. */
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "probe/mem.h"

typedef CUresult (*get_handle_fn)(void *handle, CUdeviceptr dptr, size_t size,
                                  CUmemRangeHandleType type, unsigned long long flags);
typedef CUresult (*error_name_fn)(CUresult error, const char **str);

/* "cudaErrorInsufficientDriver (CUDA driver version is insufficient ...)" */
static void cuda_text(cudaError_t e, char *buf, size_t len)
{
    snprintf(buf, len, "%s (%s)", cudaGetErrorName(e), cudaGetErrorString(e));
}

/* The errors that mean "no usable GPU here" rather than "a GPU failed". */
static int means_no_gpu(cudaError_t e)
{
    return e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice ||
           e == cudaErrorStubLibrary || e == cudaErrorInitializationError ||
           e == cudaErrorSystemDriverMismatch;
}

static enum fb_status pick_device(int device, int local_rank, int *out, struct fb_err *err)
{
    int count = 0;
    char text[256];
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        cuda_text(e, text, sizeof text);
        return fb_fail(err, means_no_gpu(e) ? FB_ERR_UNAVAIL : FB_ERR_RUNTIME,
                       "--use-cuda: no usable GPU: cudaGetDeviceCount failed with %s; run on a GPU "
                       "node with the NVIDIA driver loaded or drop --use-cuda", text);
    }
    if (count == 0)
        return fb_fail(err, FB_ERR_UNAVAIL, "--use-cuda: this node has no GPU; drop --use-cuda");
    if (device >= count)
        return fb_fail(err, FB_ERR_USAGE,
                       "--use-cuda=%d: no such GPU; this node has %d (0-%d)", device, count,
                       count - 1);
    *out = device >= 0 ? device : local_rank % count;
    return FB_OK;
}

static enum fb_status gpu_alloc(struct probe_mem *m, const struct probe_mem_request *rq,
                                struct fb_err *err)
{
    int dev = 0;
    if (pick_device(rq->gpu, rq->local_rank, &dev, err) != FB_OK)
        return err->code;
    char text[256];
    cudaError_t e = cudaSetDevice(dev);
    /* dma-buf export works on whole pages; 2 MiB covers every GPU page size. */
    size_t rounded = (rq->len + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
    void *p = NULL;
    if (e == cudaSuccess)
        e = cudaMalloc(&p, rounded);
    if (e == cudaSuccess)
        e = cudaMemset(p, 0, rounded);
    if (e == cudaSuccess)
        e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        cuda_text(e, text, sizeof text);
        if (p != NULL)
            cudaFree(p);
        return fb_fail(err, e == cudaErrorMemoryAllocation ? FB_ERR_MEMORY : FB_ERR_RUNTIME,
                       "cannot allocate %zu bytes on GPU %d: %s", rounded, dev, text);
    }
    m->addr = p;
    m->len = rounded;
    m->gpu = dev;
    struct cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, dev) == cudaSuccess)
        snprintf(m->gpu_name, sizeof m->gpu_name, "%.95s", prop.name);
    if (cudaDeviceGetPCIBusId(m->gpu_bus_id, (int)sizeof m->gpu_bus_id, dev) != cudaSuccess)
        m->gpu_bus_id[0] = '\0';
    return FB_OK;
}

static void driver_text(void *lib, CUresult r, char *buf, size_t len)
{
    error_name_fn name = lib ? (error_name_fn)dlsym(lib, "cuGetErrorName") : NULL;
    error_name_fn desc = lib ? (error_name_fn)dlsym(lib, "cuGetErrorString") : NULL;
    const char *n = NULL, *d = NULL;
    if (name == NULL || name(r, &n) != CUDA_SUCCESS)
        n = "CUDA driver error";
    if (desc == NULL || desc(r, &d) != CUDA_SUCCESS)
        d = "no description";
    snprintf(buf, len, "%s (%s)", n, d);
}

/* dma-buf: export the range as a file descriptor and register that. On
 * failure `why` says which step refused, for the error if the fallback
 * fails too. */
static struct ibv_mr *register_dmabuf(struct probe_mem *m, struct ibv_pd *pd, int access,
                                      char *why, size_t why_len)
{
    void *lib = m->impl;
    if (lib == NULL)
        m->impl = lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        snprintf(why, why_len, "cannot load libcuda.so.1 (%s)", dlerror());
        return NULL;
    }
    get_handle_fn get_handle = (get_handle_fn)dlsym(lib, "cuMemGetHandleForAddressRange");
    if (get_handle == NULL) {
        snprintf(why, why_len, "the CUDA driver predates cuMemGetHandleForAddressRange");
        return NULL;
    }
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t addr = (uintptr_t)m->addr;
    uintptr_t base = addr & ~(page - 1);
    size_t span = (addr + m->len - base + page - 1) & ~(page - 1);
    int fd = -1;
    CUresult r = get_handle(&fd, (CUdeviceptr)base, span, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
    if (r != CUDA_SUCCESS) {
        char text[256];
        driver_text(lib, r, text, sizeof text);
        snprintf(why, why_len, "cuMemGetHandleForAddressRange: %s", text);
        return NULL;
    }
    struct ibv_mr *mr = ibv_reg_dmabuf_mr(pd, addr - base, m->len, addr, fd, access);
    if (mr == NULL)
        snprintf(why, why_len, "ibv_reg_dmabuf_mr: %s (kernel or HCA driver without dma-buf)",
                 strerror(errno));
    close(fd); /* the registration holds its own reference */
    return mr;
}

static enum fb_status gpu_register(struct probe_mem *m, struct ibv_pd *pd, int access,
                                   struct ibv_mr **mr, struct fb_err *err)
{
    char why[512];
    *mr = register_dmabuf(m, pd, access, why, sizeof why);
    if (*mr != NULL) {
        snprintf(m->reg_path, sizeof m->reg_path, "dmabuf");
        return FB_OK;
    }
    *mr = ibv_reg_mr(pd, m->addr, m->len, access);
    if (*mr != NULL) {
        snprintf(m->reg_path, sizeof m->reg_path, "peermem");
        return FB_OK;
    }
    int e = errno;
    return fb_fail(err, FB_ERR_RUNTIME,
                   "cannot register GPU %d memory with the HCA: dma-buf failed (%s) and "
                   "ibv_reg_mr failed (%s)%s", m->gpu, why, strerror(e),
                   e == EFAULT ? "; load nvidia-peermem (modprobe nvidia-peermem) or use a "
                                 "dma-buf capable kernel and driver"
                               : "");
}

static void gpu_release(struct probe_mem *m)
{
    if (m->addr != NULL)
        cudaFree(m->addr);
    if (m->impl != NULL)
        dlclose(m->impl);
}

const struct probe_mem_backend probe_mem_gpu = {
    .kind = "gpu",
    .cpu_visible = 0,
    .before_device = 1,
    .alloc = gpu_alloc,
    .register_mr = gpu_register,
    .release = gpu_release,
};
