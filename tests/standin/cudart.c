/* CUDA runtime stand-in, devices and memory: FB_STANDIN_GPUS devices of
 * FB_STANDIN_MEM bytes each, "device memory" being host memory counted
 * against that size. Built against the real cuda_runtime.h, so
 * cudaDeviceProp and the error codes are the real ones. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudart_internal.h"
#include "common.h"

#define MAX_DEVICES 16
#define DEFAULT_GPUS 8
#define DEFAULT_MEM (80ULL << 30)
#define ALIGN 256
#define LARGE_PAGE ((size_t)2 << 20)

struct alloc {
    char *base;
    size_t size;
    int device;
};

/* The library's own state: one process's view of its devices. */
static struct {
    pthread_once_t once;
    int ndev;                  /* visible devices */
    int physical[MAX_DEVICES]; /* CUDA_VISIBLE_DEVICES: visible -> stand-in index */
    uint64_t total;
    pthread_mutex_t lock; /* guards the allocations */
    uint64_t used[MAX_DEVICES];
    struct alloc *allocs;
    size_t nallocs, cap;
    struct alloc *pinned; /* cudaMallocHost's */
    size_t npinned, pinned_cap;
} g = {.once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local int current_device;
static _Thread_local cudaError_t last_error;

cudaError_t fbsi_cuda_ret(cudaError_t e)
{
    if (e != cudaSuccess)
        last_error = e;
    return e;
}

int fbsi_current_device(void)
{
    return current_device;
}

/* CUDA_VISIBLE_DEVICES as the real runtime reads it: indices up to the
 * first one that is not a device. */
static void parse_visible(int present)
{
    const char *v = getenv("CUDA_VISIBLE_DEVICES");
    g.ndev = 0;
    if (v == NULL) {
        for (int i = 0; i < present; i++)
            g.physical[g.ndev++] = i;
        return;
    }
    while (*v != '\0' && g.ndev < MAX_DEVICES) {
        char *end = NULL;
        long i = strtol(v, &end, 10);
        if (end == v || i < 0 || i >= present)
            return;
        g.physical[g.ndev++] = (int)i;
        v = *end == ',' ? end + 1 : end;
        if (*end != ',' && *end != '\0')
            return;
    }
}

static void init_devices(void)
{
    long n = fbsi_env_long("FB_STANDIN_GPUS", DEFAULT_GPUS);
    if (n < 0)
        n = 0;
    if (n > MAX_DEVICES)
        n = MAX_DEVICES;
    parse_visible((int)n);
    g.total = fbsi_env_bytes("FB_STANDIN_MEM", DEFAULT_MEM);
}

static int ndev(void)
{
    pthread_once(&g.once, init_devices);
    return g.ndev;
}

static int valid_device(int d)
{
    return d >= 0 && d < ndev();
}

cudaError_t cudaGetDeviceCount(int *count)
{
    *count = ndev();
    return fbsi_cuda_ret(*count > 0 ? cudaSuccess : cudaErrorNoDevice);
}

cudaError_t cudaSetDevice(int device)
{
    if (ndev() == 0)
        return fbsi_cuda_ret(cudaErrorNoDevice);
    if (!valid_device(device))
        return fbsi_cuda_ret(cudaErrorInvalidDevice);
    current_device = device;
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device)
{
    if (ndev() == 0)
        return fbsi_cuda_ret(cudaErrorNoDevice);
    *device = current_device;
    return cudaSuccess;
}

/* Bus 0x08, 0x18, ...: one PCI bus per GPU, as on an 8-GPU server. */
static int bus_of(int device)
{
    return 0x08 + 0x10 * g.physical[device];
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
    if (!valid_device(device))
        return fbsi_cuda_ret(ndev() == 0 ? cudaErrorNoDevice : cudaErrorInvalidDevice);
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "fabric-bench stand-in GPU");
    memcpy(prop->uuid.bytes, "fbstandin-gpu-", 14);
    prop->uuid.bytes[15] = (char)g.physical[device];
    prop->totalGlobalMem = g.total;
    prop->pciDomainID = 0;
    prop->pciBusID = bus_of(device);
    prop->pciDeviceID = 0;
    prop->major = 9;
    prop->minor = 0;
    prop->multiProcessorCount = 132;
    prop->warpSize = 32;
    prop->maxThreadsPerBlock = 1024;
    prop->unifiedAddressing = 1;
    return cudaSuccess;
}

/* What every stand-in GPU says of itself (an H100's figures). */
static const struct {
    enum cudaDeviceAttr attr;
    int value;
} attrs[] = {
    {cudaDevAttrComputeCapabilityMajor, 9}, {cudaDevAttrComputeCapabilityMinor, 0},
    {cudaDevAttrMultiProcessorCount, 132},  {cudaDevAttrWarpSize, 32},
    {cudaDevAttrUnifiedAddressing, 1},      {cudaDevAttrMaxThreadsPerBlock, 1024},
};

cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device)
{
    if (!valid_device(device))
        return fbsi_cuda_ret(ndev() == 0 ? cudaErrorNoDevice : cudaErrorInvalidDevice);
    *value = attr == cudaDevAttrPciBusId ? bus_of(device) : 0;
    for (size_t i = 0; i < sizeof attrs / sizeof *attrs; i++)
        if (attrs[i].attr == attr)
            *value = attrs[i].value;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char *pciBusId, int len, int device)
{
    if (!valid_device(device))
        return fbsi_cuda_ret(ndev() == 0 ? cudaErrorNoDevice : cudaErrorInvalidDevice);
    if (len <= 0)
        return fbsi_cuda_ret(cudaErrorInvalidValue);
    snprintf(pciBusId, (size_t)len, "0000:%02x:00.0", bus_of(device));
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *version)
{
    *version = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *version)
{
    *version = ndev() > 0 ? CUDART_VERSION : 0;
    return cudaSuccess;
}

/* --- memory --------------------------------------------------------- */

static struct alloc *find_in(struct alloc *v, size_t n, const void *p)
{
    for (size_t i = 0; i < n; i++)
        if ((const char *)p >= v[i].base && (const char *)p < v[i].base + v[i].size)
            return &v[i];
    return NULL;
}

static struct alloc *find_alloc(const void *p)
{
    return find_in(g.allocs, g.nallocs, p);
}

int fbsi_is_pinned(const void *p)
{
    pthread_mutex_lock(&g.lock);
    int pinned = find_in(g.pinned, g.npinned, p) != NULL;
    pthread_mutex_unlock(&g.lock);
    return pinned;
}


int fbsi_device_of_span(const void *p, size_t n)
{
    pthread_mutex_lock(&g.lock);
    const struct alloc *a = find_alloc(p);
    int device = a != NULL && n <= a->size - (size_t)((const char *)p - a->base) ? a->device : -1;
    pthread_mutex_unlock(&g.lock);
    return device;
}

int fbsi_is_device_span(const void *p, size_t n)
{
    return fbsi_device_of_span(p, n) >= 0;
}

/* --- bytes copied between host and device ---------------------------- */

static _Atomic unsigned long long copied_h2d, copied_d2h;

void fbsi_count_copy(const void *dst, const void *src, size_t n, enum cudaMemcpyKind kind)
{
    if (kind == cudaMemcpyDefault) {
        int to_dev = fbsi_is_device_span(dst, n), from_dev = fbsi_is_device_span(src, n);
        kind = to_dev && !from_dev   ? cudaMemcpyHostToDevice
               : !to_dev && from_dev ? cudaMemcpyDeviceToHost
                                     : cudaMemcpyDeviceToDevice;
    }
    if (kind == cudaMemcpyHostToDevice)
        atomic_fetch_add(&copied_h2d, n);
    else if (kind == cudaMemcpyDeviceToHost)
        atomic_fetch_add(&copied_d2h, n);
}

/* FB_STANDIN_COPY_STATS=1: one line per process at exit, so a test can
 * hold what crosses "PCIe" against what a run validates. */
__attribute__((destructor)) static void print_copy_stats(void)
{
    if (fbsi_env_long("FB_STANDIN_COPY_STATS", 0) == 1)
        fprintf(stderr, "standin: copied H2D %llu bytes, D2H %llu bytes\n", atomic_load(&copied_h2d),
                atomic_load(&copied_d2h));
}

static int remember(char *base, size_t size, int device)
{
    struct alloc *a = fbsi_grow(g.allocs, &g.cap, g.nallocs, sizeof *a);
    if (a == NULL)
        return 0;
    g.allocs = a;
    g.allocs[g.nallocs++] = (struct alloc){base, size, device};
    return 1;
}

cudaError_t cudaMalloc(void **devPtr, size_t size)
{
    int d = current_device;
    if (ndev() == 0)
        return fbsi_cuda_ret(cudaErrorNoDevice);
    *devPtr = NULL;
    cudaError_t unsafe = fbsi_capture_unsafe();
    if (unsafe != cudaSuccess)
        return fbsi_cuda_ret(unsafe);
    if (size == 0)
        return cudaSuccess;
    pthread_mutex_lock(&g.lock);
    cudaError_t e = cudaErrorMemoryAllocation;
    void *p = NULL;
    /* CUDA hands out 2 MiB pages for allocations that large: their start
     * is page-aligned, as the dma-buf export (libcuda stand-in) demands. */
    size_t align = size >= LARGE_PAGE ? LARGE_PAGE : ALIGN;
    if (size <= g.total - g.used[d] && posix_memalign(&p, align, size) == 0) {
        if (remember(p, size, d)) {
            g.used[d] += size;
            *devPtr = p;
            e = cudaSuccess;
        } else {
            free(p);
        }
    }
    pthread_mutex_unlock(&g.lock);
    return fbsi_cuda_ret(e);
}

/* cudaFree synchronises the device first, as CUDA does: no work still
 * queued there uses the memory once it is gone. */
cudaError_t cudaFree(void *devPtr)
{
    if (devPtr == NULL)
        return cudaSuccess;
    cudaError_t e = fbsi_capture_unsafe();
    if (e != cudaSuccess)
        return fbsi_cuda_ret(e);
    pthread_mutex_lock(&g.lock);
    struct alloc *a = find_alloc(devPtr);
    int device = a != NULL && a->base == devPtr ? a->device : -2;
    pthread_mutex_unlock(&g.lock);
    if (device == -2)
        return fbsi_cuda_ret(cudaErrorInvalidValue);
    fbsi_device_sync(device);
    pthread_mutex_lock(&g.lock);
    a = find_alloc(devPtr);
    e = cudaErrorInvalidValue;
    if (a != NULL && a->base == devPtr) {
        g.used[a->device] -= a->size;
        free(a->base);
        *a = g.allocs[--g.nallocs];
        e = cudaSuccess;
    }
    pthread_mutex_unlock(&g.lock);
    return fbsi_cuda_ret(e);
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total)
{
    if (ndev() == 0)
        return fbsi_cuda_ret(cudaErrorNoDevice);
    pthread_mutex_lock(&g.lock);
    *total = g.total;
    *free_bytes = g.total - g.used[current_device];
    pthread_mutex_unlock(&g.lock);
    return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes, const void *ptr)
{
    memset(attributes, 0, sizeof *attributes);
    pthread_mutex_lock(&g.lock);
    const struct alloc *a = find_alloc(ptr);
    attributes->type = a ? cudaMemoryTypeDevice : cudaMemoryTypeUnregistered;
    attributes->device = a ? a->device : -2;
    attributes->devicePointer = a ? (void *)ptr : NULL;
    attributes->hostPointer = a ? NULL : (void *)ptr;
    pthread_mutex_unlock(&g.lock);
    return cudaSuccess;
}

/* The direction must agree with where the pointers are: a host pointer
 * passed as device memory is the bug the real runtime refuses too. */
static cudaError_t check_copy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind)
{
    int dev_dst = fbsi_is_device_span(dst, n), dev_src = fbsi_is_device_span(src, n);
    switch (kind) {
    case cudaMemcpyHostToHost: return cudaSuccess;
    case cudaMemcpyHostToDevice: return dev_dst ? cudaSuccess : cudaErrorInvalidValue;
    case cudaMemcpyDeviceToHost: return dev_src ? cudaSuccess : cudaErrorInvalidValue;
    case cudaMemcpyDeviceToDevice: return dev_dst && dev_src ? cudaSuccess : cudaErrorInvalidValue;
    case cudaMemcpyDefault: return cudaSuccess;
    }
    return cudaErrorInvalidMemcpyDirection;
}

/* From pageable memory to the device, CUDA returns once the source is
 * staged and the copy lands later, in the legacy stream's order; the
 * stand-in takes the latest legal moment: the copy is held on the current
 * device's legacy stream until something orders work after it (see
 * cudart_stream.c). Every other direction, and a source from
 * cudaMallocHost, is synchronous: the legacy stream's work first, then the
 * copy. */
cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    cudaError_t e = fbsi_capture_unsafe();
    if (e != cudaSuccess || count == 0)
        return fbsi_cuda_ret(e);
    e = check_copy(dst, src, count, kind);
    if (e != cudaSuccess)
        return fbsi_cuda_ret(e);
    fbsi_count_copy(dst, src, count, kind);
    int to_device = kind == cudaMemcpyHostToDevice ||
                    (kind == cudaMemcpyDefault && fbsi_is_device_span(dst, count) && !fbsi_is_device_span(src, count));
    if (to_device && !fbsi_is_pinned(src)) {
        void *staged = malloc(count);
        if (staged == NULL)
            return fbsi_cuda_ret(cudaErrorMemoryAllocation);
        memcpy(staged, src, count);
        return fbsi_legacy_copy_held(dst, staged, count);
    }
    fbsi_legacy_sync(current_device);
    memmove(dst, src, count);
    return cudaSuccess;
}

/* Asynchronous to the host, on the legacy stream: held there as a pageable
 * cudaMemcpy is. */
cudaError_t cudaMemset(void *devPtr, int value, size_t count)
{
    cudaError_t e = fbsi_capture_unsafe();
    if (e != cudaSuccess || count == 0)
        return fbsi_cuda_ret(e);
    if (!fbsi_is_device_span(devPtr, count))
        return fbsi_cuda_ret(cudaErrorInvalidValue);
    return fbsi_legacy_set_held(devPtr, value, count);
}

cudaError_t cudaMallocHost(void **ptr, size_t size)
{
    *ptr = NULL;
    if (size == 0)
        return cudaSuccess;
    void *p = NULL;
    if (posix_memalign(&p, ALIGN, size) != 0)
        return fbsi_cuda_ret(cudaErrorMemoryAllocation);
    pthread_mutex_lock(&g.lock);
    struct alloc *v = fbsi_grow(g.pinned, &g.pinned_cap, g.npinned, sizeof *v);
    if (v != NULL) {
        g.pinned = v;
        g.pinned[g.npinned++] = (struct alloc){p, size, -1};
    }
    pthread_mutex_unlock(&g.lock);
    if (v == NULL) {
        free(p);
        return fbsi_cuda_ret(cudaErrorMemoryAllocation);
    }
    *ptr = p;
    return cudaSuccess;
}

/* An implicit sync of every device first (an async copy of any of them may
 * still write there); a pointer that is not from cudaMallocHost is
 * refused, as CUDA does. */
cudaError_t cudaFreeHost(void *ptr)
{
    if (ptr == NULL)
        return cudaSuccess;
    fbsi_device_sync(-1);
    pthread_mutex_lock(&g.lock);
    struct alloc *a = find_in(g.pinned, g.npinned, ptr);
    int mine = a != NULL && a->base == ptr;
    if (mine)
        *a = g.pinned[--g.npinned];
    pthread_mutex_unlock(&g.lock);
    if (!mine)
        return fbsi_cuda_ret(cudaErrorInvalidValue);
    free(ptr);
    return cudaSuccess;
}

/* --- errors --------------------------------------------------------- */

static const struct {
    cudaError_t code;
    const char *name, *text;
} errors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver", "CUDA driver version is insufficient for CUDA runtime version"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorIllegalState, "cudaErrorIllegalState", "the operation cannot be performed in the present state"},
    {cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported", "operation not permitted when stream is capturing"},
    {cudaErrorStreamCaptureInvalidated, "cudaErrorStreamCaptureInvalidated", "operation failed due to a previous error during capture"},
    {cudaErrorStreamCaptureUnmatched, "cudaErrorStreamCaptureUnmatched", "capture was not initiated in this stream"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
};

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void)
{
    return last_error;
}

const char *cudaGetErrorName(cudaError_t error)
{
    for (size_t i = 0; i < sizeof errors / sizeof *errors; i++)
        if (errors[i].code == error)
            return errors[i].name;
    return "cudaErrorUnknown";
}

const char *cudaGetErrorString(cudaError_t error)
{
    for (size_t i = 0; i < sizeof errors / sizeof *errors; i++)
        if (errors[i].code == error)
            return errors[i].text;
    return "unrecognized error code";
}
