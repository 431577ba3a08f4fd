/* Schedules for N ranks and nodes: who meets whom, and when. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "probe/schedule.h"

/* n nodes with r ranks each, ranks numbered node-major (--map-by node
 * would interleave; both must work, see the interleaved test). */
struct layout_buf {
    int node_of[512], local_of[512];
    struct probe_layout lay;
};

static void blocked(struct layout_buf *b, int nodes, int rails)
{
    for (int r = 0; r < nodes * rails; r++) {
        b->node_of[r] = r / rails;
        b->local_of[r] = r % rails;
    }
    b->lay = (struct probe_layout){nodes * rails, nodes, b->node_of, b->local_of};
}

/* The orientation of a node pair: a writes to c when the lower node's
 * distance to the higher is odd and a is the lower, or even and a is the
 * higher. */
static int writes_first(int a, int c)
{
    int lo = a < c ? a : c, hi = a < c ? c : a;
    return ((hi - lo) % 2 == 1) == (a == lo);
}

/* Every node pair exactly once, no node twice in a round, one link per
 * rail between the same local ranks. Returns 0 when all hold. */
static int check_all_pairs(const struct probe_schedule *s, const struct layout_buf *b, int nodes,
                           int rails, int bidirectional)
{
    int *met = calloc((size_t)nodes * (size_t)nodes, sizeof *met);
    int *busy = calloc((size_t)nodes, sizeof *busy);
    int bad = 0;
    for (int r = 0; r < s->nrounds; r++) {
        memset(busy, 0, (size_t)nodes * sizeof *busy);
        for (int i = s->first[r]; i < s->first[r + 1]; i++) {
            const struct probe_link *l = &s->links[i];
            int a = b->node_of[l->src], c = b->node_of[l->dst];
            bad |= a == c;
            bad |= b->local_of[l->src] != b->local_of[l->dst];
            bad |= l->round != r;
            if (b->local_of[l->src] == 0 && (bidirectional ? writes_first(a, c) : 1)) {
                bad |= busy[a]++ != 0;
                bad |= busy[c]++ != 0;
            }
            met[a * nodes + c]++;
        }
    }
    for (int a = 0; a < nodes; a++)
        for (int c = 0; c < nodes; c++) {
            int want = a == c ? 0 : bidirectional ? rails : (writes_first(a, c) ? rails : 0);
            bad |= met[a * nodes + c] != want;
        }
    int rounds_expected = nodes % 2 ? nodes : nodes - 1;
    bad |= s->nrounds != rounds_expected;
    free(met);
    free(busy);
    return bad;
}

static void test_all_pairs_for_2_to_33_nodes(void)
{
    struct layout_buf b;
    for (int nodes = 2; nodes <= 33; nodes++) {
        for (int rails = 1; rails <= 3; rails += 2) {
            for (int bidir = 0; bidir <= 1; bidir++) {
                blocked(&b, nodes, rails);
                struct probe_schedule s;
                struct fb_err err = {0};
                CHECK_INT(probe_schedule_build(PROBE_PATTERN_ALL_PAIRS, bidir, &b.lay, &s, &err), FB_OK);
                int links = nodes * (nodes - 1) / 2 * rails * (bidir ? 2 : 1);
                CHECK_INT(s.nlinks, links);
                if (check_all_pairs(&s, &b, nodes, rails, bidir) != 0) {
                    char m[96];
                    snprintf(m, sizeof m, "all-pairs broken for %d nodes x %d rails, bidir %d", nodes,
                             rails, bidir);
                    fbt_report(__FILE__, __LINE__, m);
                }
                probe_schedule_free(&s);
            }
        }
    }
}

static void test_all_pairs_with_interleaved_ranks(void)
{
    /* --map-by node: rank r on node r % 3, rails 0 and 1. */
    struct layout_buf b;
    for (int r = 0; r < 6; r++) {
        b.node_of[r] = r % 3;
        b.local_of[r] = r / 3;
    }
    b.lay = (struct probe_layout){6, 3, b.node_of, b.local_of};
    struct probe_schedule s;
    struct fb_err err = {0};
    CHECK_INT(probe_schedule_build(PROBE_PATTERN_ALL_PAIRS, 0, &b.lay, &s, &err), FB_OK);
    CHECK_INT(s.nrounds, 3);
    CHECK_INT(s.nlinks, 6);
    CHECK_INT(check_all_pairs(&s, &b, 3, 2, 0), 0);
    for (int i = 0; i < s.nlinks; i++)
        CHECK(writes_first(b.node_of[s.links[i].src], b.node_of[s.links[i].dst]));
    probe_schedule_free(&s);
}

/* One direction per pair, yet from 3 nodes on every node sends on some
 * links and receives on others; odd counts split each node's links evenly. */
static void test_all_pairs_measures_every_send_and_receive_path(void)
{
    struct layout_buf b;
    for (int nodes = 2; nodes <= 17; nodes++) {
        blocked(&b, nodes, 2);
        struct probe_schedule s;
        struct fb_err err = {0};
        CHECK_INT(probe_schedule_build(PROBE_PATTERN_ALL_PAIRS, 0, &b.lay, &s, &err), FB_OK);
        int sends[34], recvs[34];
        probe_schedule_paths(&s, nodes * 2, sends, recvs);
        for (int r = 0; r < nodes * 2; r++) {
            if (nodes == 2) {
                CHECK_INT(sends[r] + recvs[r], 1); /* one link: one direction */
                continue;
            }
            CHECK(sends[r] > 0 && recvs[r] > 0);
            CHECK_INT(sends[r] + recvs[r], nodes - 1);
            if (nodes % 2)
                CHECK_INT(sends[r], recvs[r]);
            else
                CHECK(abs(sends[r] - recvs[r]) == 1);
        }
        probe_schedule_free(&s);
    }
    /* pairs: the first half sends, the second receives; -b both. */
    blocked(&b, 4, 1);
    struct probe_schedule s;
    struct fb_err err = {0};
    int sends[4], recvs[4];
    CHECK_INT(probe_schedule_build(PROBE_PATTERN_PAIRS, 0, &b.lay, &s, &err), FB_OK);
    probe_schedule_paths(&s, 4, sends, recvs);
    CHECK(sends[0] == 1 && recvs[0] == 0 && sends[3] == 0 && recvs[3] == 1);
    probe_schedule_free(&s);
    CHECK_INT(probe_schedule_build(PROBE_PATTERN_RING, 0, &b.lay, &s, &err), FB_OK);
    probe_schedule_paths(&s, 4, sends, recvs);
    for (int r = 0; r < 4; r++)
        CHECK(sends[r] == 1 && recvs[r] == 1);
    probe_schedule_free(&s);
}

static void test_pairs_halves(void)
{
    struct layout_buf b;
    blocked(&b, 2, 4);
    struct probe_schedule s;
    struct fb_err err = {0};
    CHECK_INT(probe_schedule_build(PROBE_PATTERN_PAIRS, 0, &b.lay, &s, &err), FB_OK);
    CHECK_INT(s.nrounds, 1);
    CHECK_INT(s.nlinks, 4);
    for (int i = 0; i < 4; i++) {
        CHECK_INT(s.links[i].src, i);
        CHECK_INT(s.links[i].dst, i + 4);
        CHECK_INT(s.links[i].id, i);
    }
    CHECK_INT(probe_schedule_max_ends(&s, 8), 1);
    probe_schedule_free(&s);
    CHECK_INT(probe_schedule_build(PROBE_PATTERN_PAIRS, 1, &b.lay, &s, &err), FB_OK);
    CHECK_INT(s.nlinks, 8);
    CHECK_INT(s.links[1].src, 4);
    CHECK_INT(s.links[1].dst, 0);
    CHECK_INT(probe_schedule_max_ends(&s, 8), 2);
    probe_schedule_free(&s);
}

static void test_ring_wraps_and_bidirectional_adds_reverse(void)
{
    struct layout_buf b;
    blocked(&b, 5, 1);
    struct probe_schedule s;
    struct fb_err err = {0};
    CHECK_INT(probe_schedule_build(PROBE_PATTERN_RING, 0, &b.lay, &s, &err), FB_OK);
    CHECK_INT(s.nlinks, 5);
    CHECK_INT(s.links[4].src, 4);
    CHECK_INT(s.links[4].dst, 0);
    CHECK_INT(probe_schedule_max_ends(&s, 5), 2);
    probe_schedule_free(&s);
    CHECK_INT(probe_schedule_build(PROBE_PATTERN_RING, 1, &b.lay, &s, &err), FB_OK);
    CHECK_INT(s.nlinks, 10);
    CHECK_INT(probe_schedule_max_ends(&s, 5), 4);
    probe_schedule_free(&s);
    /* Two ranks: the ring is both directions already. */
    blocked(&b, 1, 2);
    CHECK_INT(probe_schedule_build(PROBE_PATTERN_RING, 1, &b.lay, &s, &err), FB_OK);
    CHECK_INT(s.nlinks, 2);
    probe_schedule_free(&s);
}

static void test_launch_shapes_that_cannot_work(void)
{
    struct layout_buf b;
    struct probe_schedule s;
    struct fb_err err = {0};
    blocked(&b, 3, 1);
    CHECK_INT(probe_schedule_build(PROBE_PATTERN_PAIRS, 0, &b.lay, &s, &err), FB_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "pairs needs an even number of ranks");
    CHECK_CONTAINS(err.msg, "has 3");
    fb_err_clear(&err);
    blocked(&b, 1, 1);
    CHECK_INT(probe_schedule_build(PROBE_PATTERN_RING, 0, &b.lay, &s, &err), FB_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "at least 2 ranks");
    fb_err_clear(&err);
    blocked(&b, 1, 4);
    CHECK_INT(probe_schedule_build(PROBE_PATTERN_ALL_PAIRS, 0, &b.lay, &s, &err), FB_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "one node");
    fb_err_clear(&err);
    /* Node 1 with one rank fewer. */
    int node_of[5] = {0, 0, 1, 2, 2}, local_of[5] = {0, 1, 0, 0, 1};
    struct probe_layout lay = {5, 3, node_of, local_of};
    CHECK_INT(probe_schedule_build(PROBE_PATTERN_ALL_PAIRS, 0, &lay, &s, &err), FB_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "node 0 has 2 and node 1 has 1");
}

static void test_pattern_bound_covers_every_layout(void)
{
    struct layout_buf b;
    for (int p = PROBE_PATTERN_PAIRS; p <= PROBE_PATTERN_ALL_PAIRS; p++)
        for (int bidir = 0; bidir <= 1; bidir++)
            for (int nodes = 1; nodes <= 9; nodes++)
                for (int rails = 1; rails <= 4; rails++) {
                    struct probe_schedule s;
                    struct fb_err err = {0};
                    blocked(&b, nodes, rails);
                    if (probe_schedule_build((enum probe_pattern)p, bidir, &b.lay, &s, &err) != FB_OK)
                        continue;
                    CHECK(probe_schedule_max_ends(&s, nodes * rails) <=
                          probe_pattern_max_ends((enum probe_pattern)p, bidir));
                    probe_schedule_free(&s);
                }
    CHECK_INT(probe_pattern_max_ends(PROBE_PATTERN_RING, 1), 4);
    CHECK_INT(probe_pattern_max_ends(PROBE_PATTERN_PAIRS, 0), 1);
}

static void test_pattern_names_round_trip(void)
{
    enum probe_pattern p;
    CHECK_INT(probe_pattern_parse("all-pairs", &p), 0);
    CHECK_INT(p, PROBE_PATTERN_ALL_PAIRS);
    CHECK_STR(probe_pattern_name(PROBE_PATTERN_RING), "ring");
    CHECK_INT(probe_pattern_parse("mesh", &p), -1);
}

int main(void)
{
    RUN(test_all_pairs_for_2_to_33_nodes);
    RUN(test_all_pairs_with_interleaved_ranks);
    RUN(test_all_pairs_measures_every_send_and_receive_path);
    RUN(test_pairs_halves);
    RUN(test_ring_wraps_and_bidirectional_adds_reverse);
    RUN(test_launch_shapes_that_cannot_work);
    RUN(test_pattern_bound_covers_every_layout);
    RUN(test_pattern_names_round_trip);
    return fbt_done();
}
