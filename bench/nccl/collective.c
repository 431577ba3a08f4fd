#include "nccl/collective.h"

#include <stdio.h>
#include <string.h>

/* NCCL rounds per-rank blocks of block collectives down to 16 bytes. */
static size_t aligned_block(size_t count, size_t eltsize, int nranks)
{
    size_t per = eltsize >= 16 ? 1 : 16 / eltsize;
    return (count / (size_t)nranks) & ~(per - 1);
}

static struct fb_counts counts_same(size_t bytes, size_t eltsize, int nranks)
{
    (void)nranks;
    size_t n = bytes / eltsize;
    return (struct fb_counts){n, n, n, n * eltsize};
}

static struct fb_counts counts_gather(size_t bytes, size_t eltsize, int nranks)
{
    size_t base = aligned_block(bytes / eltsize, eltsize, nranks);
    return (struct fb_counts){base, base * (size_t)nranks, base, base * (size_t)nranks * eltsize};
}

static struct fb_counts counts_scatter(size_t bytes, size_t eltsize, int nranks)
{
    size_t base = aligned_block(bytes / eltsize, eltsize, nranks);
    return (struct fb_counts){base * (size_t)nranks, base, base, base * (size_t)nranks * eltsize};
}

static struct fb_counts counts_alltoall(size_t bytes, size_t eltsize, int nranks)
{
    size_t base = aligned_block(bytes / eltsize, eltsize, nranks);
    size_t all = base * (size_t)nranks;
    return (struct fb_counts){all, all, base, all * eltsize};
}

static double factor_allreduce(int n) { return 2.0 * (n - 1) / n; }
static double factor_block(int n) { return (double)(n - 1) / n; }
static double factor_one(int n) { (void)n; return 1.0; }

static void inplace_same(const struct fb_counts *c, int rank, enum fb_inplace_style s,
                         size_t *send_off, size_t *recv_off)
{
    (void)c, (void)rank, (void)s;
    *send_off = *recv_off = 0;
}

static void inplace_gather(const struct fb_counts *c, int rank, enum fb_inplace_style s,
                           size_t *send_off, size_t *recv_off)
{
    (void)s;
    *recv_off = 0;
    *send_off = (size_t)rank * c->send;
}

static void inplace_scatter(const struct fb_counts *c, int rank, enum fb_inplace_style s,
                            size_t *send_off, size_t *recv_off)
{
    *send_off = 0;
    *recv_off = s == FB_INPLACE_NCCL ? (size_t)rank * c->recv : 0;
}

static double input_reduce(enum fb_dtype t, enum fb_redop op, int n, int rank, size_t i)
{
    return fb_input_value(t, op, n, rank, i);
}

static double input_move(enum fb_dtype t, enum fb_redop op, int n, int rank, size_t i)
{
    (void)t, (void)op, (void)n;
    return fb_move_value(rank, i);
}

static int expect_allreduce(const struct fb_counts *c, enum fb_dtype t, enum fb_redop op, int n,
                            int rank, int root, size_t i, double *want)
{
    (void)c, (void)rank, (void)root;
    *want = fb_expected_reduce(t, op, n, i);
    return 1;
}

static int expect_reduce(const struct fb_counts *c, enum fb_dtype t, enum fb_redop op, int n,
                         int rank, int root, size_t i, double *want)
{
    if (rank != root)
        return 0;
    return expect_allreduce(c, t, op, n, rank, root, i, want);
}

static int expect_allgather(const struct fb_counts *c, enum fb_dtype t, enum fb_redop op, int n,
                            int rank, int root, size_t i, double *want)
{
    (void)t, (void)op, (void)n, (void)rank, (void)root;
    *want = fb_move_value((int)(i / c->send), i % c->send);
    return 1;
}

static int expect_reducescatter(const struct fb_counts *c, enum fb_dtype t, enum fb_redop op,
                                int n, int rank, int root, size_t i, double *want)
{
    (void)root;
    *want = fb_expected_reduce(t, op, n, (size_t)rank * c->recv + i);
    return 1;
}

static int expect_broadcast(const struct fb_counts *c, enum fb_dtype t, enum fb_redop op, int n,
                            int rank, int root, size_t i, double *want)
{
    (void)c, (void)t, (void)op, (void)n, (void)rank;
    *want = fb_move_value(root, i);
    return 1;
}

static int expect_alltoall(const struct fb_counts *c, enum fb_dtype t, enum fb_redop op, int n,
                           int rank, int root, size_t i, double *want)
{
    (void)t, (void)op, (void)n, (void)root;
    /* Block b of my receive buffer is block `rank` of rank b's send buffer. */
    size_t from = i / c->param, j = i % c->param;
    *want = fb_move_value((int)from, (size_t)rank * c->param + j);
    return 1;
}

static int expect_sendrecv(const struct fb_counts *c, enum fb_dtype t, enum fb_redop op, int n,
                           int rank, int root, size_t i, double *want)
{
    (void)c, (void)t, (void)op, (void)root;
    /* Ring: every rank sends to rank+1 and receives from rank-1. */
    *want = fb_move_value((rank - 1 + n) % n, i);
    return 1;
}

static const struct fb_collective table[FB_NCOLLS] = {
    {FB_ALL_REDUCE, "all_reduce", "all_reduce_perf", 1, 0, counts_same, factor_allreduce,
     inplace_same, input_reduce, expect_allreduce},
    {FB_ALL_GATHER, "all_gather", "all_gather_perf", 0, 0, counts_gather, factor_block,
     inplace_gather, input_move, expect_allgather},
    {FB_REDUCE_SCATTER, "reduce_scatter", "reduce_scatter_perf", 1, 0, counts_scatter,
     factor_block, inplace_scatter, input_reduce, expect_reducescatter},
    {FB_BROADCAST, "broadcast", "broadcast_perf", 0, 1, counts_same, factor_one, inplace_same,
     input_move, expect_broadcast},
    {FB_REDUCE, "reduce", "reduce_perf", 1, 1, counts_same, factor_one, inplace_same,
     input_reduce, expect_reduce},
    {FB_ALLTOALL, "alltoall", "alltoall_perf", 0, 0, counts_alltoall, factor_block,
     inplace_same, input_move, expect_alltoall},
    {FB_SENDRECV, "sendrecv", "sendrecv_perf", 0, 0, counts_same, factor_one, inplace_same,
     input_move, expect_sendrecv},
};

const struct fb_collective *fb_collective(enum fb_coll_id id) { return &table[id]; }

/* "all_reduce", "allreduce", "all-reduce" and "all_reduce_perf" all match. */
static int same_name(const char *given, const char *name)
{
    while (*given && *name) {
        if (*given == '-' || *given == '_') {
            given++;
            continue;
        }
        if (*name == '_') {
            name++;
            continue;
        }
        if (*given != *name)
            return 0;
        given++, name++;
    }
    while (*name == '_')
        name++;
    return *name == '\0' && (*given == '\0' || strcmp(given, "_perf") == 0 ||
                             strcmp(given, "perf") == 0);
}

const struct fb_collective *fb_collective_find(const char *name)
{
    for (int i = 0; i < FB_NCOLLS; i++)
        if (same_name(name, table[i].name))
            return &table[i];
    return NULL;
}

const struct fb_collective *fb_collective_named(const char *name)
{
    for (int i = 0; i < FB_NCOLLS; i++)
        if (strcmp(name, table[i].name) == 0)
            return &table[i];
    return NULL;
}

bool fb_collective_known(const char *name) { return fb_collective_named(name) != NULL; }

void fb_collective_names(char *buf, size_t len, const char *last_sep)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < FB_NCOLLS && used < len; i++) {
        const char *sep = i == 0 ? "" : i == FB_NCOLLS - 1 ? last_sep : ", ";
        int n = snprintf(buf + used, len - used, "%s%s", sep, table[i].name);
        used += n > 0 ? (size_t)n : 0;
    }
}

double fb_algbw_GBps(size_t bytes, double seconds)
{
    return seconds > 0 ? (double)bytes / 1e9 / seconds : 0;
}

double fb_busbw_GBps(const struct fb_collective *c, size_t bytes, double seconds, int nranks)
{
    return fb_algbw_GBps(bytes, seconds) * c->bus_factor(nranks);
}
