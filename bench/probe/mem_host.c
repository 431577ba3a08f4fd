#include "probe/mem.h"

#include <errno.h>
#include <hwloc.h>
#include <stdio.h>
#include <string.h>

#define PROBE_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

/* Binds to the node when it exists and the kernel lets us; memory on the
 * wrong node still works, it is only slower, so failure to bind is not an
 * error (m->numa_node stays -1 and the record shows it). */
static void *alloc_on_node(hwloc_topology_t topo, size_t len, int numa_node, int *bound)
{
    *bound = 0;
    if (numa_node >= 0) {
        hwloc_obj_t node = hwloc_get_numanode_obj_by_os_index(topo, (unsigned)numa_node);
        if (node != NULL) {
            void *p = hwloc_alloc_membind(topo, len, node->nodeset, HWLOC_MEMBIND_BIND,
                                          HWLOC_MEMBIND_BYNODESET);
            if (p != NULL) {
                *bound = 1;
                return p;
            }
        }
    }
    return hwloc_alloc(topo, len);
}

enum fb_status probe_mem_host_alloc(struct probe_mem *m, size_t len, int numa_node,
                                    struct fb_err *err)
{
    memset(m, 0, sizeof *m);
    m->kind = PROBE_MEM_HOST;
    m->gpu = -1;
    m->numa_node = -1;
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0 || hwloc_topology_load(topo) != 0)
        return fb_fail(err, FB_ERR_RUNTIME, "hwloc cannot read this machine's topology: %s",
                       strerror(errno));
    int bound = 0;
    m->addr = alloc_on_node(topo, len, numa_node, &bound);
    if (m->addr == NULL) {
        hwloc_topology_destroy(topo);
        return fb_fail(err, FB_ERR_MEMORY, "cannot allocate %zu bytes of host memory: %s; lower "
                       "the largest size or the QP count", len, strerror(errno));
    }
    m->len = len;
    m->impl = topo;
    m->numa_node = bound ? numa_node : -1;
    memset(m->addr, 0, len);
    return FB_OK;
}

enum fb_status probe_mem_register(struct probe_mem *m, struct ibv_pd *pd, struct ibv_mr **mr,
                                  struct fb_err *err)
{
    if (m->kind == PROBE_MEM_GPU)
        return probe_gpu_register(m, pd, PROBE_ACCESS, mr, err);
    *mr = ibv_reg_mr(pd, m->addr, m->len, PROBE_ACCESS);
    if (*mr == NULL)
        return fb_fail(err, errno == ENOMEM ? FB_ERR_MEMORY : FB_ERR_RUNTIME,
                       "ibv_reg_mr of %zu bytes of host memory failed: %s%s", m->len,
                       strerror(errno),
                       errno == ENOMEM || errno == EPERM
                           ? "; raise the locked-memory limit (ulimit -l unlimited, or IPC_LOCK "
                             "in a container)"
                           : "");
    snprintf(m->reg_path, sizeof m->reg_path, "host");
    return FB_OK;
}

void probe_mem_free(struct probe_mem *m)
{
    if (m->kind == PROBE_MEM_GPU) {
        probe_gpu_free(m);
    } else if (m->impl != NULL) {
        hwloc_topology_t topo = m->impl;
        if (m->addr != NULL)
            hwloc_free(topo, m->addr, m->len);
        hwloc_topology_destroy(topo);
    }
    memset(m, 0, sizeof *m);
}
