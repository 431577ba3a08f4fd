/* Protection domains and memory regions. A region is published in the
 * registry (mr-<key>) so that a peer's RDMA can find the process and the
 * address behind a remote key and check its range and access, as an HCA
 * checks its memory translation table. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ibv_internal.h"

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
    struct sib_pd *p = calloc(1, sizeof *p);
    if (p == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    if (sib_registry_dir()[0] == '\0') {
        free(p);
        errno = EIO;
        return NULL;
    }
    p->pd.context = context;
    p->id = sib_unique(SIB_ID_PD);
    p->pd.handle = p->id;
    return &p->pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
    free(SIB_CONTAINER(pd, struct sib_pd, pd));
    return 0;
}

static const int known_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                                IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED |
                                IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB | IBV_ACCESS_RELAXED_ORDERING;

/* Registers [addr, addr+length) of this process, addressed remotely as
 * [iova, iova+length). */
static struct ibv_mr *register_region(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
                                      unsigned access)
{
    /* Remote write or atomics need local write, as the verbs spec says. */
    int needs_local = access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
    if ((access & ~(unsigned)known_access & ~(unsigned)IBV_ACCESS_OPTIONAL_RANGE) ||
        (needs_local && !(access & IBV_ACCESS_LOCAL_WRITE)) || (addr == NULL && length > 0)) {
        errno = EINVAL;
        return NULL;
    }
    struct sib_mr *m = calloc(1, sizeof *m);
    if (m == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    struct sib_ctx *c = sib_ctx_of(pd->context);
    uint32_t key = sib_unique(SIB_ID_KEY);
    char name[32];
    size_t mapped = 0;
    snprintf(name, sizeof name, "mr-%08x", key);
    m->sh = sib_map(name, sizeof *m->sh, 1, &mapped);
    if (m->sh == NULL) {
        free(m);
        errno = EIO;
        return NULL;
    }
    *m->sh = (struct sib_shmr){.magic = SIB_MAGIC_MR, .pid = (int32_t)getpid(),
                               .pd_id = SIB_CONTAINER(pd, struct sib_pd, pd)->id,
                               .access = access & (unsigned)known_access, .iova = iova, .len = length,
                               .addr = (uint64_t)(uintptr_t)addr};
    atomic_store(&m->sh->valid, 1u);
    m->mr = (struct ibv_mr){.context = pd->context, .pd = pd, .addr = addr, .length = length,
                            .handle = key, .lkey = key, .rkey = key};
    m->iova = iova;
    m->local_base = (uint64_t)(uintptr_t)addr;
    m->access = (int)access;
    pthread_mutex_lock(&c->lock);
    m->next = c->mrs;
    c->mrs = m;
    pthread_mutex_unlock(&c->lock);
    return &m->mr;
}

struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
    return register_region(pd, addr, length, (uint64_t)(uintptr_t)addr, (unsigned)access);
}

struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, int access)
{
    return register_region(pd, addr, length, iova, (unsigned)access);
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
                                unsigned int access)
{
    return register_region(pd, addr, length, iova, access);
}

/* dma-buf: the GPU stand-in's device memory is host memory of this
 * process, so the region is the range [iova, iova+length) itself; the fd
 * must be open (the exporter's reference). FB_STANDIN_IB_DMABUF=0 answers
 * as an HCA driver without dma-buf support. */
struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova,
                                 int fd, int access)
{
    (void)offset;
    if (!sib_dmabuf_enabled()) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    if (fd < 0 || fcntl(fd, F_GETFD) < 0) {
        errno = EBADF;
        return NULL;
    }
    struct ibv_mr *mr = register_region(pd, (void *)(uintptr_t)iova, length, iova, (unsigned)access);
    if (mr != NULL)
        mr->addr = (void *)(uintptr_t)offset; /* what rdma-core leaves there */
    return mr;
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
    struct sib_mr *m = SIB_CONTAINER(mr, struct sib_mr, mr);
    struct sib_ctx *c = sib_ctx_of(mr->context);
    pthread_mutex_lock(&c->lock);
    for (struct sib_mr **p = &c->mrs; *p; p = &(*p)->next)
        if (*p == m) {
            *p = m->next;
            break;
        }
    pthread_mutex_unlock(&c->lock);
    atomic_store(&m->sh->valid, 0u);
    char path[1024];
    snprintf(path, sizeof path, "%s/mr-%08x", sib_registry_dir(), mr->rkey);
    unlink(path);
    munmap(m->sh, sizeof *m->sh);
    free(m);
    return 0;
}

const struct sib_mr *sib_local_mr(struct sib_ctx *c, uint32_t lkey, uint64_t addr, uint64_t len)
{
    for (const struct sib_mr *m = c->mrs; m; m = m->next) {
        if (m->mr.lkey != lkey)
            continue;
        uint64_t base = m->local_base;
        return addr >= base && len <= m->mr.length && addr - base <= m->mr.length - len ? m : NULL;
    }
    return NULL;
}

/* Remote keys seen by this process: the records stay mapped, their valid
 * flag says whether the region still exists. */
#define RKEY_CACHE 1024
static struct {
    pthread_mutex_t lock;
    uint32_t key[RKEY_CACHE];
    struct sib_shmr *rec[RKEY_CACHE];
} rk = {.lock = PTHREAD_MUTEX_INITIALIZER};

const struct sib_shmr *sib_remote_mr(uint32_t rkey)
{
    unsigned slot = (rkey * 2654435761u) % RKEY_CACHE;
    pthread_mutex_lock(&rk.lock);
    struct sib_shmr *r = rk.key[slot] == rkey ? rk.rec[slot] : NULL;
    if (r == NULL) {
        char name[32];
        size_t mapped = 0;
        snprintf(name, sizeof name, "mr-%08x", rkey);
        r = sib_map(name, sizeof *r, 0, &mapped);
        if (r != NULL && r->magic != SIB_MAGIC_MR) {
            munmap(r, mapped);
            r = NULL;
        }
        if (r != NULL) {
            if (rk.rec[slot] != NULL)
                munmap(rk.rec[slot], sizeof *r);
            rk.key[slot] = rkey;
            rk.rec[slot] = r;
        }
    }
    pthread_mutex_unlock(&rk.lock);
    return r != NULL && atomic_load(&r->valid) ? r : NULL;
}
