/* Buffers the probe moves data between: host memory bound to the NIC's
 * NUMA node, or GPU memory (--use-cuda) for GPUDirect RDMA. Registration
 * with the HCA picks the path the platform supports and records it. */
#ifndef FB_PROBE_MEM_H
#define FB_PROBE_MEM_H

#include <infiniband/verbs.h>
#include <stddef.h>

#include "core/status.h"

enum probe_mem_kind { PROBE_MEM_HOST, PROBE_MEM_GPU };

struct probe_mem {
    enum probe_mem_kind kind;
    void *addr;
    size_t len;
    int numa_node;   /* host: node the pages are bound to, -1 when not bound */
    int gpu;         /* GPU ordinal, -1 for host memory */
    char gpu_bus_id[32];
    char gpu_name[96];
    char reg_path[16]; /* "host", "dmabuf" or "peermem" once registered */
    void *impl;        /* back-end state */
};

/* Page-aligned host memory of `len` bytes, bound to `numa_node` when >= 0
 * and the kernel allows it (m->numa_node says whether it did), touched once
 * so first-touch faults stay out of the timing. */
enum fb_status probe_mem_host_alloc(struct probe_mem *m, size_t len, int numa_node,
                                    struct fb_err *err);

/* Registers for local write and remote read/write. GPU memory tries dma-buf
 * first and falls back to plain registration (nvidia-peermem). */
enum fb_status probe_mem_register(struct probe_mem *m, struct ibv_pd *pd, struct ibv_mr **mr,
                                  struct fb_err *err);

void probe_mem_free(struct probe_mem *m);

/* GPU back-end (mem_gpu_nccl.c with CUDA, mem_gpu_none.c without).
 * `device` < 0 picks local_rank modulo the GPU count. Missing CUDA, driver
 * or GPU is FB_ERR_UNAVAIL; CUDA errors are named, never bare numbers. */
int probe_gpu_compiled(void);
enum fb_status probe_gpu_alloc(struct probe_mem *m, size_t len, int device, int local_rank,
                               struct fb_err *err);
enum fb_status probe_gpu_register(struct probe_mem *m, struct ibv_pd *pd, int access,
                                  struct ibv_mr **mr, struct fb_err *err);
void probe_gpu_free(struct probe_mem *m);

#endif
