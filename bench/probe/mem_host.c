/* Host memory: hwloc allocation bound to the device's NUMA node. */
#include "probe/mem.h"

#include <errno.h>
#include <hwloc.h>
#include <stdio.h>
#include <string.h>

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

static enum fb_status host_alloc(struct probe_mem *m, const struct probe_mem_request *rq,
                                 struct fb_err *err)
{
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0 || hwloc_topology_load(topo) != 0)
        return fb_fail(err, FB_ERR_RUNTIME, "hwloc cannot read this machine's topology: %s",
                       strerror(errno));
    int bound = 0;
    m->addr = alloc_on_node(topo, rq->len, rq->numa_node, &bound);
    if (m->addr == NULL) {
        hwloc_topology_destroy(topo);
        return fb_fail(err, FB_ERR_MEMORY, "cannot allocate %zu bytes of host memory: %s; lower "
                       "the largest size or the QP count", rq->len, strerror(errno));
    }
    m->len = rq->len;
    m->impl = topo;
    m->numa_node = bound ? rq->numa_node : -1;
    memset(m->addr, 0, rq->len);
    return FB_OK;
}

static enum fb_status host_register(struct probe_mem *m, struct ibv_pd *pd, int access,
                                    struct ibv_mr **mr, struct fb_err *err)
{
    *mr = ibv_reg_mr(pd, m->addr, m->len, access);
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

static void host_release(struct probe_mem *m)
{
    hwloc_topology_t topo = m->impl;
    if (topo == NULL)
        return;
    if (m->addr != NULL)
        hwloc_free(topo, m->addr, m->len);
    hwloc_topology_destroy(topo);
}

const struct probe_mem_backend probe_mem_host = {
    .kind = "host",
    .cpu_visible = 1,
    .before_device = 0,
    .alloc = host_alloc,
    .register_mr = host_register,
    .release = host_release,
};
