/* The collective table, the one list of collectives: names, look-ups, bus
 * factors and their inverses. */
#include <string.h>

#include "check.h"
#include "nccl/collective.h"

static void test_every_row_is_whole(void)
{
    for (int i = 0; i < FB_NCOLLS; i++) {
        const struct fb_collective *c = fb_collective((enum fb_coll_id)i);
        CHECK_INT(c->id, i);
        CHECK(c->name != NULL && c->perf_name != NULL);
        CHECK(strncmp(c->perf_name, c->name, strlen(c->name)) == 0);
        CHECK(c->counts && c->bus_factor && c->ranks_for_factor && c->inplace_offsets);
        CHECK(fb_collective_named(c->name) == c);
        CHECK(fb_collective_find(c->perf_name) == c);
    }
}

static void test_names_list_the_table(void)
{
    char names[FB_COLL_NAMES_MAX];
    fb_collective_names(names, sizeof names, " or ");
    CHECK(strncmp(names, "all_reduce, all_gather, ", 24) == 0);
    CHECK_CONTAINS(names, fb_collective((enum fb_coll_id)(FB_NCOLLS - 1))->name);
    CHECK_CONTAINS(names, " or ");
    CHECK(fb_collective_known("alltoall"));
    CHECK(!fb_collective_known("allreduce")); /* exact names only */
    CHECK(fb_collective_find("allreduce") != NULL);
}

static void test_collective_in_file_names(void)
{
    CHECK_STR(fb_collective_in_text("logs/AllReduce_8n.log")->name, "all_reduce");
    CHECK_STR(fb_collective_in_text("reduce_scatter_perf.txt")->name, "reduce_scatter");
    CHECK_STR(fb_collective_in_text("all-to-all-16.txt")->name, "alltoall");
    CHECK_STR(fb_collective_in_text("reduce.log")->name, "reduce");
    CHECK(fb_collective_in_text("nccl.log") == NULL);
}

static void test_rank_count_from_bus_factor(void)
{
    for (int n = 2; n <= 512; n *= 2) {
        const struct fb_collective *ar = fb_collective(FB_ALL_REDUCE);
        const struct fb_collective *ag = fb_collective(FB_ALL_GATHER);
        if (n < 200)
            CHECK_INT(ar->ranks_for_factor(ar->bus_factor(n)), n);
        CHECK_INT(ag->ranks_for_factor(ag->bus_factor(n)), n);
    }
    const struct fb_collective *bc = fb_collective(FB_BROADCAST);
    CHECK_INT(bc->ranks_for_factor(bc->bus_factor(8)), 0);
    CHECK_NEAR(fb_busbw_GBps(fb_collective(FB_ALL_REDUCE), 1000000000, 1.0, 16), 1.875, 1e-12);
}

/* Element i of rank r's input in the collectives that move data. */
static double moved(int r, size_t i)
{
    return fb_coll_input(fb_collective(FB_BROADCAST), FB_FLOAT, FB_SUM, 4, r, i);
}

static void check_counts(enum fb_coll_id id, size_t bytes, size_t esz, int n, size_t send, size_t recv,
                         size_t param, size_t size)
{
    struct fb_counts k = fb_collective(id)->counts(bytes, esz, n);
    CHECK_INT(k.send, send);
    CHECK_INT(k.recv, recv);
    CHECK_INT(k.param, param);
    CHECK_INT(k.bytes, size);
}

/* nccl-tests' GatherGetCollByteCount, ScatterGetCollByteCount and
 * HyperCubeGetCollByteCount (gather.cu, scatter.cu, hypercube.cu): the
 * per-rank block is count / nranks rounded down to 16 bytes; gather and
 * hypercube send one block and receive nranks, scatter the reverse; the
 * count column is the block; the size column the larger buffer. */
static void test_gather_scatter_hypercube_counts(void)
{
    check_counts(FB_GATHER, 1000, 4, 4, 60, 240, 60, 960);
    check_counts(FB_SCATTER, 1000, 4, 4, 240, 60, 60, 960);
    check_counts(FB_HYPERCUBE, 1000, 4, 4, 60, 240, 60, 960);
    check_counts(FB_GATHER, 1 << 20, 8, 3, 43690, 131070, 43690, 1048560);
    check_counts(FB_SCATTER, 65536, 1, 3, 65520, 21840, 21840, 65520);
    check_counts(FB_HYPERCUBE, 4096, 4, 1, 1024, 1024, 1024, 4096);
    CHECK(fb_collective(FB_GATHER)->rooted && fb_collective(FB_SCATTER)->rooted);
    CHECK(!fb_collective(FB_HYPERCUBE)->rooted && !fb_collective(FB_ALLTOALLV)->rooted);
}

/* nccl-tests' alltoallv.cu, AlltoAllvGetPeerBytesDistanceWeighted with its
 * default spread 1: rank i sends rank j floor16(d x total / (n(n-1)/2))
 * bytes, d = (j - i) mod n, total = the per-peer count (count / nranks
 * rounded down to 16 bytes) x nranks; one rank sends itself total rounded
 * down to 16. The size column is one rank's sum (AlltoAllvComputeMaxCounts). */
static void test_alltoallv_shares(void)
{
    /* 1M of float on 4 ranks: total 1048576, shares 174752, 349520, 524288 bytes. */
    CHECK_INT(fb_alltoallv_count(65536, 4, 4, 0, 0), 0);
    CHECK_INT(fb_alltoallv_count(65536, 4, 4, 0, 1), 174752 / 4);
    CHECK_INT(fb_alltoallv_count(65536, 4, 4, 0, 2), 349520 / 4);
    CHECK_INT(fb_alltoallv_count(65536, 4, 4, 0, 3), 524288 / 4);
    CHECK_INT(fb_alltoallv_count(65536, 4, 4, 3, 0), 174752 / 4); /* distance 1 again */
    CHECK_INT(fb_alltoallv_count(65536, 4, 4, 1, 0), 524288 / 4);
    CHECK_INT(fb_alltoallv_send_offset(65536, 4, 4, 0, 3), (174752 + 349520) / 4);
    check_counts(FB_ALLTOALLV, 1 << 20, 4, 4, 1048560 / 4, 1048560 / 4, 65536, 1048560);
    check_counts(FB_ALLTOALLV, 65536, 4, 3, 16380, 16380, 5460, 65520);
    check_counts(FB_ALLTOALLV, 4096, 4, 1, 1024, 1024, 1024, 4096);
    /* Every rank sends and receives the same total, in 16-byte shares. */
    for (int n = 2; n <= 7; n++) {
        size_t param = fb_collective(FB_ALLTOALLV)->counts(1 << 20, 8, n).param;
        size_t first_out = fb_alltoallv_send_offset(param, 8, n, 0, n);
        for (int r = 0; r < n; r++) {
            size_t out = 0, in = 0;
            for (int q = 0; q < n; q++) {
                out += fb_alltoallv_count(param, 8, n, r, q);
                in += fb_alltoallv_count(param, 8, n, q, r);
                CHECK_INT(fb_alltoallv_count(param, 8, n, r, q) * 8 % 16, 0);
            }
            CHECK_INT(out, first_out);
            CHECK_INT(in, first_out);
        }
    }
    CHECK(fb_collective(FB_ALLTOALLV)->inplace_unchecked);
    CHECK(!fb_collective(FB_ALLTOALL)->inplace_unchecked);
}

/* GetBw of the four: gather, scatter and alltoallv (n-1)/n of algBW = size
 * / time; hypercube's algBW is count x type size x (n-1) / time, i.e. the
 * size x (n-1)/n, and busBW = algBW. */
static void test_new_bandwidths(void)
{
    CHECK_NEAR(fb_busbw_GBps(fb_collective(FB_GATHER), 1000000000, 1.0, 4), 0.75, 1e-12);
    CHECK_NEAR(fb_busbw_GBps(fb_collective(FB_SCATTER), 1000000000, 1.0, 8), 0.875, 1e-12);
    CHECK_NEAR(fb_busbw_GBps(fb_collective(FB_ALLTOALLV), 1000000000, 1.0, 2), 0.5, 1e-12);
    const struct fb_collective *hc = fb_collective(FB_HYPERCUBE);
    CHECK_NEAR(fb_coll_algbw_GBps(hc, 1000000000, 1.0, 4), 0.75, 1e-12);
    CHECK_NEAR(fb_busbw_GBps(hc, 1000000000, 1.0, 4), 0.75, 1e-12);
    CHECK_NEAR(fb_coll_algbw_GBps(hc, 1000000000, 1.0, 1), 0, 0);
    CHECK_NEAR(fb_coll_algbw_GBps(fb_collective(FB_GATHER), 1000000000, 1.0, 4), 1.0, 1e-12);
    for (int n = 2; n <= 256; n *= 2) {
        CHECK_INT(fb_collective(FB_GATHER)->ranks_for_factor(fb_collective(FB_GATHER)->bus_factor(n)), n);
        CHECK_INT(fb_collective(FB_ALLTOALLV)->ranks_for_factor(fb_collective(FB_ALLTOALLV)->bus_factor(n)), n);
    }
    CHECK_INT(hc->ranks_for_factor(hc->bus_factor(8)), 0);
}

/* hypercube.cu runs only when nRanks is a power of two. */
static void test_hypercube_rank_counts(void)
{
    const struct fb_collective *hc = fb_collective(FB_HYPERCUBE);
    CHECK(fb_collective_runs_on(hc, 1) && fb_collective_runs_on(hc, 2) && fb_collective_runs_on(hc, 64));
    CHECK(!fb_collective_runs_on(hc, 3) && !fb_collective_runs_on(hc, 6) && !fb_collective_runs_on(hc, 0));
    CHECK(fb_collective_runs_on(fb_collective(FB_GATHER), 3));
}

/* The moved data tells blocks apart: a 64-element block shifted by a
 * multiple of 64 (a scatter's block for another rank) differs somewhere. */
static void test_moved_blocks_differ(void)
{
    for (size_t shift = 64; shift <= 64 * 1024; shift *= 4) {
        int differs = 0;
        for (size_t i = 0; i < 64 && !differs; i++)
            differs = moved(0, i) != moved(0, i + shift);
        CHECK(differs);
    }
    for (size_t i = 0; i < 100000; i += 97)
        CHECK(moved(3, i) >= 0 && moved(3, i) < 64);
}

static void test_new_expectations(void)
{
    double want = -1;
    struct fb_counts k = fb_collective(FB_ALLTOALLV)->counts(65536, 4, 3);
    const struct fb_collective *v = fb_collective(FB_ALLTOALLV);
    /* Rank 0 on 3 ranks: 10920 elements from rank 1 (distance 2), then
     * 5460 from rank 2 (distance 1), each the first share they send. */
    CHECK(fb_coll_expected(v, &k, FB_FLOAT, FB_SUM, 3, 0, 0, 0, &want));
    CHECK_NEAR(want, moved(1, 0), 0);
    CHECK(fb_coll_expected(v, &k, FB_FLOAT, FB_SUM, 3, 0, 0, 10920, &want));
    CHECK_NEAR(want, moved(2, 0), 0);
    /* Rank 1: 5460 from rank 0, then rank 2's share after its 5460 for rank 0. */
    CHECK(fb_coll_expected(v, &k, FB_FLOAT, FB_SUM, 3, 1, 0, 5460 + 7, &want));
    CHECK_NEAR(want, moved(2, 5460 + 7), 0);
    CHECK(!fb_coll_expected(v, &k, FB_FLOAT, FB_SUM, 3, 1, 0, 16380, &want));
    const struct fb_collective *g = fb_collective(FB_GATHER);
    k = g->counts(1000, 4, 4);
    CHECK(fb_coll_expected(g, &k, FB_FLOAT, FB_SUM, 4, 2, 2, 60 * 3 + 1, &want));
    CHECK_NEAR(want, moved(3, 1), 0);
    CHECK(!fb_coll_expected(g, &k, FB_FLOAT, FB_SUM, 4, 1, 2, 0, &want)); /* not the root */
    const struct fb_collective *sc = fb_collective(FB_SCATTER);
    k = sc->counts(1000, 4, 4);
    CHECK(fb_coll_expected(sc, &k, FB_FLOAT, FB_SUM, 4, 3, 1, 5, &want));
    CHECK_NEAR(want, moved(1, 3 * 60 + 5), 0);
    size_t s = 9, r = 9;
    sc->inplace_offsets(&k, 3, FB_INPLACE_MPI, &s, &r); /* the root's block stays in place on MPI too */
    CHECK_INT(s, 0);
    CHECK_INT(r, 3 * 60);
    const struct fb_collective *hc = fb_collective(FB_HYPERCUBE);
    k = hc->counts(1000, 4, 4);
    hc->inplace_offsets(&k, 2, FB_INPLACE_NCCL, &s, &r);
    CHECK_INT(s, 2 * 60);
    CHECK_INT(r, 0);
    CHECK(fb_coll_expected(hc, &k, FB_FLOAT, FB_SUM, 4, 0, 0, 60 * 2 + 4, &want));
    CHECK_NEAR(want, moved(2, 4), 0);
}

static void test_new_names_in_text(void)
{
    CHECK_STR(fb_collective_in_text("alltoallv_perf.txt")->name, "alltoallv");
    CHECK_STR(fb_collective_in_text("alltoall_perf.txt")->name, "alltoall");
    CHECK_STR(fb_collective_in_text("gather_perf-8.log")->name, "gather");
    CHECK_STR(fb_collective_in_text("all_gather_perf-8.log")->name, "all_gather");
    CHECK_STR(fb_collective_in_text("scatter.log")->name, "scatter");
    CHECK_STR(fb_collective_in_text("ReduceScatter.log")->name, "reduce_scatter");
    CHECK_STR(fb_collective_in_text(" hypercube_perf")->name, "hypercube");
    CHECK_STR(fb_collective_find("alltoallv_perf")->name, "alltoallv");
    CHECK_STR(fb_collective_find("alltoall_perf")->name, "alltoall");
    CHECK_STR(fb_collective_find("gather")->name, "gather");
    CHECK(fb_collective_find("gathe") == NULL);
    char perf[FB_COLL_NAMES_MAX];
    fb_collective_perf_names(perf, sizeof perf, " or ");
    CHECK_CONTAINS(perf, "sendrecv_perf, alltoallv_perf, gather_perf, scatter_perf or hypercube_perf");
}

int main(void)
{
    RUN(test_gather_scatter_hypercube_counts);
    RUN(test_alltoallv_shares);
    RUN(test_new_bandwidths);
    RUN(test_hypercube_rank_counts);
    RUN(test_moved_blocks_differ);
    RUN(test_new_expectations);
    RUN(test_new_names_in_text);
    RUN(test_every_row_is_whole);
    RUN(test_names_list_the_table);
    RUN(test_collective_in_file_names);
    RUN(test_rank_count_from_bus_factor);
    return fbt_done();
}
