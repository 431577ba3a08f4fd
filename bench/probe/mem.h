/* Buffers the probe moves data between: host memory bound to the NIC's
 * NUMA node, or GPU memory (--use-cuda) for GPUDirect RDMA. The back-end is
 * chosen at run time from two entries, host and gpu; a build without CUDA
 * keeps the gpu entry, which says so when asked for memory. Registration
 * with the HCA picks the path the platform supports and records it. */
#ifndef FB_PROBE_MEM_H
#define FB_PROBE_MEM_H

#include <infiniband/verbs.h>
#include <stddef.h>

#include "core/status.h"

struct probe_mem_backend;

struct probe_mem {
    const struct probe_mem_backend *backend; /* NULL until probe_mem_alloc */
    void *addr;
    size_t len;
    int numa_node;   /* host: node the pages are bound to, -1 when not bound */
    int gpu;         /* GPU ordinal, -1 for host memory */
    char gpu_bus_id[32];
    char gpu_name[96];
    char reg_path[16]; /* "host", "dmabuf" or "peermem" once registered */
    void *impl;        /* back-end state */
};

/* What a rank asks for; each back-end reads the fields that concern it. */
struct probe_mem_request {
    size_t len;
    int numa_node;  /* host: bind to this node when >= 0 */
    int gpu;        /* gpu: --cuda-device, < 0 picks local_rank modulo the GPU count */
    int local_rank;
};

struct probe_mem_backend {
    const char *kind;  /* "host", "gpu": the endpoint's memory in the record */
    int cpu_visible;   /* the CPU may clear the bytes */
    /* Allocated before the transport opens its device: a node without CUDA
     * or GPU says so before the HCA is looked at. Host memory waits for the
     * device, whose NUMA node it is bound to. */
    int before_device;
    /* Errors: missing CUDA, driver or GPU is FB_ERR_UNAVAIL; CUDA errors
     * are named, never bare numbers. */
    enum fb_status (*alloc)(struct probe_mem *m, const struct probe_mem_request *rq,
                            struct fb_err *err);
    enum fb_status (*register_mr)(struct probe_mem *m, struct ibv_pd *pd, int access,
                                  struct ibv_mr **mr, struct fb_err *err);
    /* Safe after a failed alloc. */
    void (*release)(struct probe_mem *m);
};

/* Page-aligned host memory, bound to the request's NUMA node when the
 * kernel allows it (m->numa_node says whether it did), touched once so
 * first-touch faults stay out of the timing (mem_host.c). */
extern const struct probe_mem_backend probe_mem_host;
/* GPU memory, registered through dma-buf, else nvidia-peermem
 * (mem_gpu_cuda.c; mem_gpu_none.c in a build without CUDA). */
extern const struct probe_mem_backend probe_mem_gpu;

/* gpu for --use-cuda, else host. */
const struct probe_mem_backend *probe_mem_backend_for(int use_cuda);

enum fb_status probe_mem_alloc(const struct probe_mem_backend *b, struct probe_mem *m,
                               const struct probe_mem_request *rq, struct fb_err *err);

/* Registers for local write and remote read/write. */
enum fb_status probe_mem_register(struct probe_mem *m, struct ibv_pd *pd, struct ibv_mr **mr,
                                  struct fb_err *err);

void probe_mem_free(struct probe_mem *m);

#endif
