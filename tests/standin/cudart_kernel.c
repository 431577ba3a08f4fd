/* CUDA runtime stand-in, kernels: the entry points nvcc's generated host
 * code calls (the fat binary's registration, the launch configuration
 * `<<<...>>>` pushes and the stub pops, the launch itself), with each
 * kernel run by a host twin found by the kernel's name, in stream order.
 *
 * The twins are fabric-coll's validation kernels (coll/validate_kernels.h):
 * they run the kernels' own per-element functions over every element, as
 * the grid's threads do together. What a GPU refuses is refused here too:
 * a launch configuration out of CUDA's limits, a stream of another device,
 * a buffer that is not device memory of the current device (on a GPU an
 * illegal address), a kernel with no twin (named on stderr). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/validate_kernels.h"
#include "common.h"
#include "cudart_internal.h"

/* A kernel's twin: the size of its one (struct) parameter, what it
 * requires of the memory it is given, and its body. */
struct twin {
    const char *name;
    size_t args_size;
    int (*memory_ok)(const void *args, int device);
    void (*run)(void *args);
};

/* --- the twins -------------------------------------------------------- */

static int on_device(const void *p, size_t n, int device)
{
    return n == 0 || fbsi_device_of_span(p, n) == device;
}

static int fill_memory_ok(const void *args, int device)
{
    const struct fb_fill_args *a = args;
    return on_device(a->buf, a->n * (uint64_t)fb_pat_size(a->p.dtype), device);
}

static void fill_run(void *args)
{
    const struct fb_fill_args *a = args;
    for (uint64_t i = 0; i < a->n; i++)
        fb_fill_one(a, i);
}

static int check_memory_ok(const void *args, int device)
{
    const struct fb_check_args *a = args;
    size_t shares = ((size_t)a->p.nranks + 1) * sizeof(uint64_t);
    return on_device(a->buf, a->n * (uint64_t)fb_pat_size(a->p.dtype), device) &&
           on_device(a->result, sizeof *a->result, device) &&
           (a->t.reduce == NULL || on_device(a->t.reduce, FB_EXPECT_PERIOD * sizeof(double), device)) &&
           (a->t.share_start == NULL || on_device(a->t.share_start, shares, device)) &&
           (a->t.share_from == NULL || on_device(a->t.share_from, shares, device));
}

/* The grid's threads add to the one result atomically; so does the twin,
 * as kernels on other streams may share it. */
static void check_run(void *args)
{
    const struct fb_check_args *a = args;
    unsigned long long wrong = 0, first = ~0ull;
    for (uint64_t i = 0; i < a->n; i++)
        if (fb_wrong_at(a, i) && wrong++ == 0)
            first = i;
    if (wrong == 0)
        return;
    __atomic_fetch_add(&a->result->wrong, wrong, __ATOMIC_SEQ_CST);
    unsigned long long seen = __atomic_load_n(&a->result->first, __ATOMIC_SEQ_CST);
    while (first < seen &&
           !__atomic_compare_exchange_n(&a->result->first, &seen, first, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    }
}

static const struct twin twins[] = {
    {FB_FILL_KERNEL, sizeof(struct fb_fill_args), fill_memory_ok, fill_run},
    {FB_CHECK_KERNEL, sizeof(struct fb_check_args), check_memory_ok, check_run},
};

/* --- registration ------------------------------------------------------ */

/* One registered kernel; its address is the cudaKernel_t handle. */
struct CUkern_st {
    const void *host_fun; /* the stub's address: what a launch names */
    char name[128];       /* the device function's (C) name */
    const struct twin *twin;
};

static struct {
    pthread_mutex_t lock;
    struct CUkern_st **k;
    size_t n, cap;
} reg = {.lock = PTHREAD_MUTEX_INITIALIZER};

static const struct twin *twin_named(const char *name)
{
    for (size_t i = 0; i < sizeof twins / sizeof twins[0]; i++)
        if (strcmp(twins[i].name, name) == 0)
            return &twins[i];
    return NULL;
}

static struct CUkern_st *kernel_of(const void *host_fun)
{
    struct CUkern_st *found = NULL;
    pthread_mutex_lock(&reg.lock);
    for (size_t i = 0; i < reg.n && found == NULL; i++)
        if (reg.k[i]->host_fun == host_fun)
            found = reg.k[i];
    pthread_mutex_unlock(&reg.lock);
    return found;
}

/* The handle is the address of the module's own slot: nothing in it is
 * read (the stand-in has no device code to load). */
void **__cudaRegisterFatBinary(void *fatCubin)
{
    void **handle = malloc(sizeof *handle);
    if (handle != NULL)
        *handle = fatCubin;
    return handle;
}

void __cudaRegisterFatBinaryEnd(void **fatCubinHandle) { (void)fatCubinHandle; }

void __cudaUnregisterFatBinary(void **fatCubinHandle) { free(fatCubinHandle); }

char __cudaInitModule(void **fatCubinHandle)
{
    (void)fatCubinHandle;
    return 1;
}

void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun, const char *deviceName,
                            int thread_limit, uint3 *tid, uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize)
{
    (void)fatCubinHandle, (void)deviceFun, (void)thread_limit, (void)tid, (void)bid, (void)bDim, (void)gDim,
        (void)wSize;
    struct CUkern_st *k = calloc(1, sizeof *k);
    if (k == NULL)
        return;
    k->host_fun = hostFun;
    snprintf(k->name, sizeof k->name, "%s", deviceName ? deviceName : "?");
    k->twin = twin_named(k->name);
    pthread_mutex_lock(&reg.lock);
    struct CUkern_st **grown = fbsi_grow(reg.k, &reg.cap, reg.n, sizeof *grown);
    if (grown != NULL) {
        reg.k = grown;
        reg.k[reg.n++] = k;
    } else {
        free(k);
    }
    pthread_mutex_unlock(&reg.lock);
}

cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun)
{
    struct CUkern_st *k = kernel_of(hostFun);
    if (k == NULL)
        return fbsi_cuda_ret(cudaErrorInvalidDeviceFunction);
    *kernel = k;
    return cudaSuccess;
}

/* --- launch configuration ---------------------------------------------- */

/* What `<<<grid, block, shared, stream>>>` pushed, for the stub to pop. */
struct config {
    dim3 grid, block;
    size_t shared;
    cudaStream_t stream;
};
#define CONFIG_DEPTH 8
static _Thread_local struct config configs[CONFIG_DEPTH];
static _Thread_local int nconfigs;

unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem, struct CUstream_st *stream)
{
    if (nconfigs == CONFIG_DEPTH)
        return 1;
    configs[nconfigs++] = (struct config){gridDim, blockDim, sharedMem, stream};
    return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem, void *stream)
{
    if (nconfigs == 0)
        return fbsi_cuda_ret(cudaErrorMissingConfiguration);
    struct config c = configs[--nconfigs];
    *gridDim = c.grid;
    *blockDim = c.block;
    *sharedMem = c.shared;
    *(cudaStream_t *)stream = c.stream;
    return cudaSuccess;
}

/* --- launches ------------------------------------------------------------ */

/* CUDA's limits on every current GPU. */
static int config_ok(dim3 grid, dim3 block, size_t shared)
{
    uint64_t threads = (uint64_t)block.x * block.y * block.z;
    return grid.x >= 1 && grid.x <= 0x7fffffffu && grid.y >= 1 && grid.y <= 65535 && grid.z >= 1 &&
           grid.z <= 65535 && threads >= 1 && threads <= 1024 && block.z <= 64 && shared <= 48 * 1024;
}

static cudaError_t launch(const struct CUkern_st *k, dim3 grid, dim3 block, void **args, size_t shared,
                          cudaStream_t stream)
{
    if (k == NULL)
        return fbsi_cuda_ret(cudaErrorInvalidDeviceFunction);
    if (k->twin == NULL) {
        fprintf(stderr, "standin: kernel %s has no host twin (tests/standin/cudart_kernel.c)\n", k->name);
        return fbsi_cuda_ret(cudaErrorInvalidDeviceFunction);
    }
    if (!config_ok(grid, block, shared))
        return fbsi_cuda_ret(cudaErrorInvalidConfiguration);
    if (fbsi_stream_device(stream) != fbsi_current_device())
        return fbsi_cuda_ret(cudaErrorInvalidResourceHandle);
    /* The parameter is copied at the launch, as CUDA copies it. */
    void *copy = malloc(k->twin->args_size);
    if (copy == NULL)
        return fbsi_cuda_ret(cudaErrorMemoryAllocation);
    memcpy(copy, args[0], k->twin->args_size);
    if (!k->twin->memory_ok(copy, fbsi_current_device())) {
        fprintf(stderr, "standin: kernel %s given memory that is not on device %d\n", k->name,
                fbsi_current_device());
        free(copy);
        return fbsi_cuda_ret(cudaErrorIllegalAddress);
    }
    return fbsi_launch_twin(stream, k->twin->run, copy);
}

cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                               cudaStream_t stream)
{
    return launch(kernel, gridDim, blockDim, args, sharedMem, stream);
}

cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                                    size_t sharedMem, cudaStream_t stream)
{
    return launch(kernel, gridDim, blockDim, args, sharedMem, stream == NULL ? cudaStreamPerThread : stream);
}

/* What older nvcc's stubs call, and programs that launch by address. */
cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                             cudaStream_t stream)
{
    return launch(kernel_of(func), gridDim, blockDim, args, sharedMem, stream);
}
