/* The memory back-end choice and the calls every back-end shares. */
#include "probe/mem.h"

#include <string.h>

#define PROBE_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

const struct probe_mem_backend *probe_mem_backend_for(int use_cuda)
{
    return use_cuda ? &probe_mem_gpu : &probe_mem_host;
}

enum fb_status probe_mem_alloc(const struct probe_mem_backend *b, struct probe_mem *m,
                               const struct probe_mem_request *rq, struct fb_err *err)
{
    memset(m, 0, sizeof *m);
    m->backend = b;
    m->numa_node = -1;
    m->gpu = -1;
    return b->alloc(m, rq, err);
}

enum fb_status probe_mem_register(struct probe_mem *m, struct ibv_pd *pd, struct ibv_mr **mr,
                                  struct fb_err *err)
{
    return m->backend->register_mr(m, pd, PROBE_ACCESS, mr, err);
}

void probe_mem_free(struct probe_mem *m)
{
    if (m->backend != NULL)
        m->backend->release(m);
    memset(m, 0, sizeof *m);
}
