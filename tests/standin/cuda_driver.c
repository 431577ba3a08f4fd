/* The part of the CUDA driver API (libcuda.so.1) fabric-rdma --use-cuda
 * reaches through dlopen: the dma-buf export of device memory for
 * GPUDirect RDMA (cuMemGetHandleForAddressRange) and the error texts.
 * Device memory is the runtime stand-in's (host memory), so the exported
 * file only has to be an open descriptor: the RDMA stand-in's
 * ibv_reg_dmabuf_mr registers the process's own [iova, iova + length).
 * FB_STANDIN_CUDA_DMABUF=0 makes the export refuse, as a driver or kernel
 * without dma-buf does, so the peermem fallback runs. */
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common.h"

#define DRIVER_VERSION 13000

CUresult cuInit(unsigned int flags)
{
    return flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuDriverGetVersion(int *version)
{
    if (version == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *version = DRIVER_VERSION;
    return CUDA_SUCCESS;
}

/* The device of the allocation holding p, -1 for memory that is not the
 * runtime's device memory. */
static int device_of(uintptr_t p)
{
    struct cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, (const void *)p) != cudaSuccess || a.type != cudaMemoryTypeDevice)
        return -1;
    return a.device;
}

/* As the driver checks: a DMA_BUF_FD request with no flag but the PCIe
 * mapping one, a page-aligned range inside device memory of one GPU. */
static CUresult check_range(CUdeviceptr dptr, size_t size, CUmemRangeHandleType type,
                            unsigned long long flags)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    if (type != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD ||
        (flags & ~(unsigned long long)CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (size == 0 || (dptr & (page - 1)) != 0 || (size & (page - 1)) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    int first = device_of((uintptr_t)dptr), last = device_of((uintptr_t)dptr + size - 1);
    return first >= 0 && first == last ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr dptr, size_t size,
                                       CUmemRangeHandleType handleType, unsigned long long flags)
{
    if (handle == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (fbsi_env_long("FB_STANDIN_CUDA_DMABUF", 1) == 0)
        return CUDA_ERROR_NOT_SUPPORTED;
    CUresult r = check_range(dptr, size, handleType, flags);
    if (r != CUDA_SUCCESS)
        return r;
    int fd = memfd_create("fb-standin-dmabuf", MFD_CLOEXEC);
    if (fd < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *(int *)handle = fd;
    return CUDA_SUCCESS;
}

struct error_text {
    CUresult code;
    const char *name, *text;
};

/* The codes this stand-in returns, with the driver's own words. */
static const struct error_text errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
};

static const struct error_text *find_error(CUresult code)
{
    for (size_t i = 0; i < sizeof errors / sizeof *errors; i++)
        if (errors[i].code == code)
            return &errors[i];
    return NULL;
}

CUresult cuGetErrorName(CUresult error, const char **str)
{
    const struct error_text *e = find_error(error);
    if (str == NULL || e == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *str = e->name;
    return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult error, const char **str)
{
    const struct error_text *e = find_error(error);
    if (str == NULL || e == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *str = e->text;
    return CUDA_SUCCESS;
}
