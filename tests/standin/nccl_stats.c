/* NCCL stand-in, what each communicator was asked: the entry points
 * called, the launches and how many fused several calls, the distinct
 * buffer addresses, the calls on ncclMemAlloc memory, deregistrations
 * after finalize. Said in one line before `Destroy COMPLETE`, so tests see
 * how fabric-coll drives NCCL where the results alone cannot tell
 * (nccl-tests' buffer shifts, -m groups, 2.28's own calls, the order of
 * teardown). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "nccl_internal.h"

static const char *const entry_names[E_COUNT] = {
    [E_ALLREDUCE] = "ncclAllReduce", [E_ALLGATHER] = "ncclAllGather", [E_REDUCESCATTER] = "ncclReduceScatter",
    [E_BROADCAST] = "ncclBroadcast", [E_REDUCE] = "ncclReduce",       [E_ALLTOALL] = "ncclAlltoAll",
    [E_GATHER] = "ncclGather",       [E_SCATTER] = "ncclScatter",     [E_SEND] = "ncclSend",
    [E_RECV] = "ncclRecv",
};

void fbsi_stats_init(struct stats *s)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->lock, NULL);
    atomic_init(&s->finalized, 0);
    atomic_init(&s->late_dereg, 0);
}

void fbsi_stats_free(struct stats *s)
{
    pthread_mutex_destroy(&s->lock);
}

void fbsi_stats_entry(struct ncclComm *c, enum entry_point e)
{
    if (c == NULL)
        return;
    pthread_mutex_lock(&c->stats.lock);
    c->stats.entry[e]++;
    pthread_mutex_unlock(&c->stats.lock);
}

/* Once the table is full, further addresses are not counted: the line
 * then says "at least". */
static void remember_addr(struct stats *s, const void *p)
{
    if (p == NULL || s->naddr >= FBSI_ADDR_SLOTS / 2)
        return;
    size_t h = (size_t)(((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ULL) % FBSI_ADDR_SLOTS;
    while (s->addr[h] != NULL && s->addr[h] != p)
        h = (h + 1) % FBSI_ADDR_SLOTS;
    if (s->addr[h] == NULL) {
        s->addr[h] = p;
        s->naddr++;
    }
}

void fbsi_stats_call(struct ncclComm *c, const struct call *k, size_t send_bytes, size_t recv_bytes)
{
    int mem_alloc = (k->send == NULL || send_bytes == 0 || fbsi_from_mem_alloc(k->send, send_bytes)) &&
                    (k->recv == NULL || recv_bytes == 0 || fbsi_from_mem_alloc(k->recv, recv_bytes));
    pthread_mutex_lock(&c->stats.lock);
    c->stats.calls++;
    c->stats.on_mem_alloc += mem_alloc;
    remember_addr(&c->stats, k->send);
    remember_addr(&c->stats, k->recv);
    pthread_mutex_unlock(&c->stats.lock);
}

void fbsi_stats_log(struct ncclComm *c)
{
    struct stats *s = &c->stats;
    char entries[512] = "";
    size_t at = 0;
    pthread_mutex_lock(&s->lock);
    for (int e = 0; e < E_COUNT; e++)
        if (s->entry[e] > 0 && at < sizeof entries)
            at += (size_t)snprintf(entries + at, sizeof entries - at, " %s=%ld", entry_names[e], s->entry[e]);
    fbsi_info(c->cuda_dev,
              "standin: rank %d: entry points%s; launches %ld (fused groups %ld); distinct buffer addresses %s%d; "
              "calls on ncclMemAlloc memory %ld of %ld; deregistered after finalize %ld",
              c->rank, at > 0 ? entries : " none", c->tasks_run, s->fused,
              s->naddr >= FBSI_ADDR_SLOTS / 2 ? "at least " : "", s->naddr, s->on_mem_alloc, s->calls,
              atomic_load(&s->late_dereg));
    pthread_mutex_unlock(&s->lock);
}
