/* NCCL stand-in, memory: ncclMemAlloc/ncclMemFree (device memory, kept in
 * a list so that symmetric windows can insist on it, as NCCL does),
 * buffer registration and windows (counted per communicator and said at
 * destroy, so tests see what reached NCCL), and the version it claims
 * (FB_STANDIN_NCCL_VERSION), under which newer entry points refuse. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "nccl_internal.h"

/* "2.26.0", "2.26" or a code (22600); the header's version otherwise. */
int fbsi_version(void)
{
    const char *v = fbsi_env_str("FB_STANDIN_NCCL_VERSION", "");
    int major = 0, minor = 0, patch = 0;
    if (sscanf(v, "%d.%d.%d", &major, &minor, &patch) >= 2)
        return NCCL_VERSION(major, minor, patch);
    if (major >= 10000)
        return major; /* a code */
    return NCCL_VERSION_CODE;
}

ncclResult_t fbsi_needs_version(struct ncclComm *c, const char *api, int major, int minor)
{
    int v = fbsi_version();
    if (v >= NCCL_VERSION(major, minor, 0))
        return ncclSuccess;
    fbsi_set_error(c, "%s is not in NCCL %d.%d.%d (FB_STANDIN_NCCL_VERSION); it came with %d.%d", api, v / 10000,
                   v / 100 % 100, v % 100, major, minor);
    return ncclInvalidUsage;
}

struct span {
    char *base;
    size_t size;
};

static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static struct span *spans;
static size_t nspans, spans_cap;

int fbsi_from_mem_alloc(const void *p, size_t n)
{
    int inside = 0;
    pthread_mutex_lock(&mem_lock);
    for (size_t i = 0; i < nspans && !inside; i++)
        inside = (const char *)p >= spans[i].base && n <= spans[i].size &&
                 (size_t)((const char *)p - spans[i].base) <= spans[i].size - n;
    pthread_mutex_unlock(&mem_lock);
    return inside;
}

ncclResult_t ncclMemAlloc(void **ptr, size_t size)
{
    if (ptr == NULL)
        return ncclInvalidArgument;
    ncclResult_t r = fbsi_needs_version(NULL, "ncclMemAlloc", 2, 19);
    if (r != ncclSuccess)
        return r;
    cudaError_t e = cudaMalloc(ptr, size);
    if (e != cudaSuccess) {
        fbsi_set_error(NULL, "ncclMemAlloc: %zu bytes: %s", size, cudaGetErrorString(e));
        return ncclUnhandledCudaError;
    }
    pthread_mutex_lock(&mem_lock);
    struct span *s = fbsi_grow(spans, &spans_cap, nspans, sizeof *s);
    if (s != NULL) {
        spans = s;
        spans[nspans++] = (struct span){*ptr, size};
    }
    pthread_mutex_unlock(&mem_lock);
    if (s == NULL) {
        cudaFree(*ptr);
        return ncclSystemError;
    }
    return ncclSuccess;
}

ncclResult_t ncclMemFree(void *ptr)
{
    if (ptr == NULL)
        return ncclSuccess;
    int found = 0;
    pthread_mutex_lock(&mem_lock);
    for (size_t i = 0; i < nspans && !found; i++) {
        if (spans[i].base == ptr) {
            spans[i] = spans[--nspans];
            found = 1;
        }
    }
    pthread_mutex_unlock(&mem_lock);
    if (!found) {
        fbsi_set_error(NULL, "ncclMemFree: %p did not come from ncclMemAlloc", ptr);
        return ncclInvalidArgument;
    }
    return cudaFree(ptr) == cudaSuccess ? ncclSuccess : ncclUnhandledCudaError;
}

/* A handle: what was registered, for the deregistration to check. */
struct registration {
    struct ncclComm *comm;
    void *buff;
    size_t size;
    int window;
};

static int device_span(const void *p, size_t n)
{
    struct cudaPointerAttributes a;
    return cudaPointerGetAttributes(&a, p) == cudaSuccess && a.type == cudaMemoryTypeDevice &&
           (n == 0 || (cudaPointerGetAttributes(&a, (const char *)p + n - 1) == cudaSuccess &&
                       a.type == cudaMemoryTypeDevice));
}

static ncclResult_t check_registration(struct ncclComm *c, const char *api, void *buff, size_t size, int window)
{
    if (c == NULL || buff == NULL) {
        fbsi_set_error(c, "%s: comm or buffer is NULL", api);
        return ncclInvalidArgument;
    }
    if (!device_span(buff, size)) {
        fbsi_set_error(c, "%s: %zu bytes at %p are not device memory", api, size, buff);
        return ncclInvalidArgument;
    }
    if (window && !fbsi_from_mem_alloc(buff, size)) {
        fbsi_set_error(c, "%s: symmetric windows need memory from ncclMemAlloc (%zu bytes at %p are not)", api, size,
                       buff);
        return ncclInvalidArgument;
    }
    return ncclSuccess;
}

static ncclResult_t new_registration(struct ncclComm *c, void *buff, size_t size, int window, void **out)
{
    struct registration *g = malloc(sizeof *g);
    if (g == NULL)
        return ncclSystemError;
    *g = (struct registration){c, buff, size, window};
    *out = g;
    return ncclSuccess;
}

static ncclResult_t drop_registration(struct ncclComm *c, void *handle, int window, const char *api)
{
    struct registration *g = handle;
    if (c == NULL || g == NULL || g->comm != c || g->window != window) {
        fbsi_set_error(c, "%s: not a handle of this communicator", api);
        return ncclInvalidArgument;
    }
    if (atomic_load(&c->stats.finalized))
        atomic_fetch_add(&c->stats.late_dereg, 1);
    free(g);
    return ncclSuccess;
}

ncclResult_t ncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle)
{
    ncclResult_t r = fbsi_needs_version(comm, "ncclCommRegister", 2, 19);
    if (r == ncclSuccess && handle == NULL)
        r = ncclInvalidArgument;
    if (r == ncclSuccess)
        r = check_registration(comm, "ncclCommRegister", buff, size, 0);
    if (r == ncclSuccess)
        r = new_registration(comm, buff, size, 0, handle);
    if (r == ncclSuccess)
        atomic_fetch_add(&comm->registered, 1);
    return r;
}

ncclResult_t ncclCommDeregister(const ncclComm_t comm, void *handle)
{
    return drop_registration(comm, handle, 0, "ncclCommDeregister");
}

ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, int winFlags)
{
    ncclResult_t r = fbsi_needs_version(comm, "ncclCommWindowRegister", 2, 27);
    if (r == ncclSuccess && win == NULL)
        r = ncclInvalidArgument;
    if (r == ncclSuccess)
        r = check_registration(comm, "ncclCommWindowRegister", buff, size, 1);
    void *handle = NULL;
    if (r == ncclSuccess)
        r = new_registration(comm, buff, size, 1, &handle);
    if (r == ncclSuccess) {
        *win = (ncclWindow_t)handle;
        if (winFlags & NCCL_WIN_COLL_SYMMETRIC)
            atomic_fetch_add(&comm->windows, 1);
    }
    return r;
}

ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win)
{
    return drop_registration(comm, (void *)win, 1, "ncclCommWindowDeregister");
}
