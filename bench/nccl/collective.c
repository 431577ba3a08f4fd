#include "nccl/collective.h"

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "nccl/pattern.h"

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

/* nccl-tests' alltoallv (generated pattern, its default spread of 1):
 * fb_pat_alltoallv_count (nccl/pattern.h). */
size_t fb_alltoallv_count(size_t param, size_t eltsize, int nranks, int from, int to)
{
    return (size_t)fb_pat_alltoallv_count(param, (int)eltsize, nranks, from, to);
}

size_t fb_alltoallv_send_offset(size_t param, size_t eltsize, int nranks, int from, int to)
{
    size_t off = 0;
    for (int k = 0; k < to; k++)
        off += fb_alltoallv_count(param, eltsize, nranks, from, k);
    return off;
}

/* Every rank sends (and receives) the same total: rank 0's row of shares. */
static struct fb_counts counts_alltoallv(size_t bytes, size_t eltsize, int nranks)
{
    size_t param = aligned_block(bytes / eltsize, eltsize, nranks);
    size_t all = fb_alltoallv_send_offset(param, eltsize, nranks, 0, nranks);
    return (struct fb_counts){all, all, param, all * eltsize};
}

static double factor_allreduce(int n) { return 2.0 * (n - 1) / n; }
static double factor_block(int n) { return (double)(n - 1) / n; }
static double factor_one(int n) { (void)n; return 1.0; }
/* Hypercube's algBW counts the n-1 blocks a rank receives, not its own (as
 * all_gather's and reduce_scatter's did before 2020-06). */
static double alg_received(int n) { return (double)(n - 1) / n; }

/* The inverses, for logs that print bandwidths but not the rank count; 0
 * where the factor says nothing (1 for every n) or n would pass the
 * plausible (factor this close to its limit is rounding noise). */
static long ranks_allreduce(double f) { return f > 0 && f < 1.99 ? lround(2 / (2 - f)) : 0; }
static long ranks_block(double f) { return f > 0 && f < 0.999 ? lround(1 / (1 - f)) : 0; }
static long ranks_unknown(double f) { (void)f; return 0; }

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

/* Scatter's layout in place is NCCL's on every backend: MPI_Scatter's
 * MPI_IN_PLACE leaves the root's block where it is, and a non-root may
 * receive anywhere. */
static void inplace_scatter_rooted(const struct fb_counts *c, int rank, enum fb_inplace_style s,
                                   size_t *send_off, size_t *recv_off)
{
    inplace_scatter(c, rank, FB_INPLACE_NCCL, send_off, recv_off);
    (void)s;
}

/* One row per collective. The *_perf program names (Makefile), the
 * launchers' choices (fabric-coll --list), the results schema's enum and
 * every message listing collectives are derived from these names. */
static const struct fb_collective table[FB_NCOLLS] = {
    [FB_ALL_REDUCE] = {FB_ALL_REDUCE, "all_reduce", "all_reduce_perf", .reduces = 1, .rooted = 0, .counts = counts_same,
        .bus_factor = factor_allreduce, .ranks_for_factor = ranks_allreduce, .inplace_offsets = inplace_same},
    [FB_ALL_GATHER] = {FB_ALL_GATHER, "all_gather", "all_gather_perf", .reduces = 0, .rooted = 0, .counts = counts_gather,
        .bus_factor = factor_block, .ranks_for_factor = ranks_block, .inplace_offsets = inplace_gather},
    [FB_REDUCE_SCATTER] = {FB_REDUCE_SCATTER, "reduce_scatter", "reduce_scatter_perf", .reduces = 1, .rooted = 0, .counts = counts_scatter,
        .bus_factor = factor_block, .ranks_for_factor = ranks_block, .inplace_offsets = inplace_scatter},
    [FB_BROADCAST] = {FB_BROADCAST, "broadcast", "broadcast_perf", .reduces = 0, .rooted = 1, .counts = counts_same,
        .bus_factor = factor_one, .ranks_for_factor = ranks_unknown, .inplace_offsets = inplace_same},
    [FB_REDUCE] = {FB_REDUCE, "reduce", "reduce_perf", .reduces = 1, .rooted = 1, .counts = counts_same,
        .bus_factor = factor_one, .ranks_for_factor = ranks_unknown, .inplace_offsets = inplace_same},
    [FB_ALLTOALL] = {FB_ALLTOALL, "alltoall", "alltoall_perf", .reduces = 0, .rooted = 0, .counts = counts_alltoall,
        .bus_factor = factor_block, .ranks_for_factor = ranks_block, .inplace_offsets = inplace_same},
    [FB_SENDRECV] = {FB_SENDRECV, "sendrecv", "sendrecv_perf", .reduces = 0, .rooted = 0, .counts = counts_same,
        .bus_factor = factor_one, .ranks_for_factor = ranks_unknown, .inplace_offsets = inplace_same},
    [FB_ALLTOALLV] = {FB_ALLTOALLV, "alltoallv", "alltoallv_perf", .reduces = 0, .rooted = 0, .counts = counts_alltoallv,
        .inplace_unchecked = 1, .bus_factor = factor_block, .ranks_for_factor = ranks_block,
        .inplace_offsets = inplace_same},
    [FB_GATHER] = {FB_GATHER, "gather", "gather_perf", .reduces = 0, .rooted = 1, .counts = counts_gather,
        .bus_factor = factor_block, .ranks_for_factor = ranks_block, .inplace_offsets = inplace_gather},
    [FB_SCATTER] = {FB_SCATTER, "scatter", "scatter_perf", .reduces = 0, .rooted = 1, .counts = counts_scatter,
        .bus_factor = factor_block, .ranks_for_factor = ranks_block, .inplace_offsets = inplace_scatter_rooted},
    [FB_HYPERCUBE] = {FB_HYPERCUBE, "hypercube", "hypercube_perf", .reduces = 0, .rooted = 0, .counts = counts_gather,
        .pow2_ranks = 1, .bus_factor = factor_one, .alg_factor = alg_received, .ranks_for_factor = ranks_unknown,
        .inplace_offsets = inplace_gather},
};

const struct fb_collective *fb_collective(enum fb_coll_id id) { return &table[id]; }

double fb_coll_input(const struct fb_collective *c, enum fb_dtype t, enum fb_redop op, int nranks, int rank,
                     size_t i)
{
    struct fb_counts none = {0, 0, 0, 0};
    struct fb_pattern p = fb_pattern_make(c, &none, t, op, nranks, rank, 0);
    return fb_pat_input(&p, i);
}

int fb_coll_expected(const struct fb_collective *c, const struct fb_counts *k, enum fb_dtype t, enum fb_redop op,
                     int nranks, int rank, int root, size_t i, double *want)
{
    struct fb_pattern p = fb_pattern_make(c, k, t, op, nranks, rank, root);
    return fb_pat_expected(&p, NULL, i, want);
}

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

/* `s` without '_' and '-', lower case, into buf. */
static void squeeze(const char *s, char *buf, size_t len)
{
    size_t j = 0;
    for (; *s && j + 1 < len; s++)
        if (*s != '_' && *s != '-')
            buf[j++] = (char)tolower((unsigned char)*s);
    buf[j] = '\0';
}

const struct fb_collective *fb_collective_in_text(const char *s)
{
    char text[512], name[64];
    squeeze(s, text, sizeof text);
    const struct fb_collective *best = NULL;
    size_t best_len = 0;
    /* Longest match wins: "reduce" is inside three other names, "gather"
     * inside all_gather, "scatter" inside reduce_scatter, "alltoall"
     * inside alltoallv. */
    for (int i = 0; i < FB_NCOLLS; i++) {
        squeeze(table[i].name, name, sizeof name);
        if (strlen(name) > best_len && strstr(text, name) != NULL) {
            best = &table[i];
            best_len = strlen(name);
        }
    }
    return best;
}

const struct fb_collective *fb_collective_named(const char *name)
{
    for (int i = 0; i < FB_NCOLLS; i++)
        if (strcmp(name, table[i].name) == 0)
            return &table[i];
    return NULL;
}

bool fb_collective_known(const char *name) { return fb_collective_named(name) != NULL; }

static void join_names(char *buf, size_t len, const char *last_sep, bool perf)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < FB_NCOLLS && used < len; i++) {
        const char *sep = i == 0 ? "" : i == FB_NCOLLS - 1 ? last_sep : ", ";
        int n = snprintf(buf + used, len - used, "%s%s", sep, perf ? table[i].perf_name : table[i].name);
        used += n > 0 ? (size_t)n : 0;
    }
}

void fb_collective_names(char *buf, size_t len, const char *last_sep)
{
    join_names(buf, len, last_sep, false);
}

void fb_collective_perf_names(char *buf, size_t len, const char *last_sep)
{
    join_names(buf, len, last_sep, true);
}

double fb_algbw_GBps(size_t bytes, double seconds)
{
    return seconds > 0 ? (double)bytes / 1e9 / seconds : 0;
}

double fb_coll_algbw_GBps(const struct fb_collective *c, size_t bytes, double seconds, int nranks)
{
    return fb_algbw_GBps(bytes, seconds) * (c->alg_factor ? c->alg_factor(nranks) : 1.0);
}

double fb_busbw_GBps(const struct fb_collective *c, size_t bytes, double seconds, int nranks)
{
    return fb_coll_algbw_GBps(c, bytes, seconds, nranks) * c->bus_factor(nranks);
}

bool fb_collective_runs_on(const struct fb_collective *c, int nranks)
{
    return nranks >= 1 && (!c->pow2_ranks || (nranks & (nranks - 1)) == 0);
}

bool fb_coll_rule_differs(const struct fb_collective *c, enum fb_bw_rule rule)
{
    return rule == FB_BW_RULE_GATHER_2020 && (c->id == FB_ALL_GATHER || c->id == FB_REDUCE_SCATTER);
}

double fb_coll_alg_share(const struct fb_collective *c, enum fb_bw_rule rule, int nranks)
{
    if (c->id == FB_ALLTOALLV)
        return NAN;
    if (fb_coll_rule_differs(c, rule))
        return alg_received(nranks);
    return c->alg_factor ? c->alg_factor(nranks) : 1.0;
}

double fb_coll_bus_share(const struct fb_collective *c, enum fb_bw_rule rule, int nranks)
{
    return fb_coll_rule_differs(c, rule) ? 1.0 : c->bus_factor(nranks);
}
