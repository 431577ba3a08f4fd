/* fabric-scan's schedule and verdicts, without MPI: who meets whom in
 * which round, what the tests of a scan say about each node, and which
 * Kubernetes node each host's verdict lands on. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "scan/layout.h"
#include "scan/pairing.h"
#include "scan/verdict.h"

#define NMAX 1024

/* Every node pair once over the all-pairs rounds, no node twice in a round;
 * returns the number of failures seen (0 when the schedule is right). */
static int all_pairs_errors(int n)
{
    unsigned char *met = calloc((size_t)n * (size_t)n, 1);
    unsigned char *busy = malloc((size_t)n);
    struct scan_pair *round = malloc((size_t)(n / 2 + 1) * sizeof *round);
    int errors = 0, total = 0;
    for (int r = 0; r < scan_all_pairs_rounds(n); r++) {
        memset(busy, 0, (size_t)n);
        int np = scan_all_pairs_round(n, r, round);
        errors += np != n / 2; /* as many pairs as the round can hold */
        for (int i = 0; i < np; i++) {
            int a = round[i].a, b = round[i].b;
            errors += !(0 <= a && a < b && b < n);
            if (!(0 <= a && a < b && b < n))
                continue;
            errors += busy[a] || busy[b];
            busy[a] = busy[b] = 1;
            errors += met[a * n + b]++ != 0;
            total++;
        }
    }
    errors += total != n * (n - 1) / 2;
    free(met);
    free(busy);
    free(round);
    return errors;
}

static void all_pairs_meet_once_in_disjoint_rounds(void)
{
    for (int n = 2; n <= 64; n++) {
        CHECK_INT(all_pairs_errors(n), 0);
        CHECK_INT(scan_all_pairs_rounds(n), n % 2 == 0 ? n - 1 : n);
    }
    CHECK_INT(all_pairs_errors(NMAX), 0);
    CHECK_INT(scan_all_pairs_rounds(1), 0);
}

/* A perfect matching (one node idle when n is odd), every node once. */
static int first_pass_errors(int n, const int *rack, uint64_t seed)
{
    struct scan_pair p[NMAX / 2];
    int seen[NMAX] = {0}, idle, errors = 0;
    int np = scan_first_pass(n, rack, seed, p, &idle);
    errors += np != n / 2;
    for (int i = 0; i < np; i++) {
        errors += !(0 <= p[i].a && p[i].a < p[i].b && p[i].b < n);
        seen[p[i].a]++;
        seen[p[i].b]++;
    }
    errors += (n % 2 == 1) != (idle >= 0);
    if (idle >= 0)
        seen[idle]++;
    for (int i = 0; i < n; i++)
        errors += seen[i] != 1;
    return errors;
}

static void first_pass_is_a_perfect_matching(void)
{
    for (int n = 2; n <= 64; n++)
        for (uint64_t seed = 1; seed <= 5; seed++)
            CHECK_INT(first_pass_errors(n, NULL, seed), 0);
    CHECK_INT(first_pass_errors(NMAX, NULL, 42), 0);
}

static void first_pass_follows_its_seed(void)
{
    struct scan_pair a[8], b[8], c[8];
    int ia, ib, ic, same_as_other = 1;
    scan_first_pass(16, NULL, 7, a, &ia);
    scan_first_pass(16, NULL, 7, b, &ib);
    CHECK(memcmp(a, b, sizeof a) == 0);
    /* Another seed gives another matching (for some of these seeds at least). */
    for (uint64_t s = 8; s < 12; s++) {
        scan_first_pass(16, NULL, s, c, &ic);
        same_as_other &= memcmp(a, c, sizeof a) == 0;
    }
    CHECK(!same_as_other);
}

/* Racks of 4, 4, 3 and 5 nodes, interleaved: every pair inside a rack
 * except one pair made of the leftovers of the two odd racks. */
static void first_pass_pairs_within_racks(void)
{
    enum { N = 16 };
    int rack[N];
    int sizes[4] = {4, 4, 3, 5}, left[4];
    memcpy(left, sizes, sizeof left);
    for (int i = 0, r = 0; i < N; i++, r = (r + 1) % 4) {
        while (left[r] == 0)
            r = (r + 1) % 4;
        rack[i] = r;
        left[r]--;
    }
    for (uint64_t seed = 1; seed <= 20; seed++) {
        struct scan_pair p[N / 2];
        int idle, across = 0;
        int np = scan_first_pass(N, rack, seed, p, &idle);
        CHECK_INT(np, N / 2);
        CHECK_INT(idle, -1);
        for (int i = 0; i < np; i++)
            across += rack[p[i].a] != rack[p[i].b];
        CHECK_INT(across, 1);
        CHECK_INT(first_pass_errors(N, rack, seed), 0);
    }
}

/* Suspects 1 and 6 of 8 nodes, racks {0..3} and {4..7}: each meets a
 * distinct good node of its own rack in one round. */
static void second_pass_pairs_suspects_with_good_nodes_of_their_rack(void)
{
    int rack[8] = {0, 0, 0, 0, 1, 1, 1, 1};
    unsigned char suspect[8] = {0, 1, 0, 0, 0, 0, 1, 0}, good[8], done[8] = {0};
    for (int i = 0; i < 8; i++)
        good[i] = !suspect[i];
    struct scan_pair p[4];
    int np = scan_second_pass_round(8, rack, suspect, good, done, p);
    CHECK_INT(np, 2);
    for (int i = 0; i < np; i++) {
        int s = suspect[p[i].a] ? p[i].a : p[i].b, g = s == p[i].a ? p[i].b : p[i].a;
        CHECK(suspect[s] && good[g]);
        CHECK_INT(rack[s], rack[g]);
    }
    CHECK(done[1] && done[6]);
    CHECK_INT(scan_second_pass_round(8, rack, suspect, good, done, p), 0);
}

/* Five suspects, two good nodes: three rounds, each good node at most once
 * per round, every suspect retested once, never against another suspect. */
static void second_pass_spreads_suspects_over_few_good_nodes(void)
{
    unsigned char suspect[7] = {1, 1, 0, 1, 1, 0, 1}, good[7], done[7] = {0};
    int retested[7] = {0}, rounds = 0;
    for (int i = 0; i < 7; i++)
        good[i] = !suspect[i];
    struct scan_pair p[3];
    int np;
    while ((np = scan_second_pass_round(7, NULL, suspect, good, done, p)) > 0) {
        int used[7] = {0};
        rounds++;
        CHECK(np <= 2);
        for (int i = 0; i < np; i++) {
            int s = suspect[p[i].a] ? p[i].a : p[i].b, g = s == p[i].a ? p[i].b : p[i].a;
            CHECK(good[g] && !suspect[g]);
            CHECK_INT(used[g]++, 0);
            retested[s]++;
        }
    }
    CHECK_INT(rounds, 3);
    for (int i = 0; i < 7; i++)
        CHECK_INT(retested[i], suspect[i] ? 1 : 0);
    struct scan_estimate e = scan_estimate_fast(7, 4); /* 4 + the odd one out */
    CHECK_INT(e.rounds, 1 + 3);
    CHECK_INT(e.tests, 3 + 5);
}

static void second_pass_without_good_nodes_pairs_nothing(void)
{
    unsigned char suspect[4] = {1, 1, 1, 1}, good[4] = {0}, done[4] = {0};
    struct scan_pair p[2];
    CHECK_INT(scan_second_pass_round(4, NULL, suspect, good, done, p), 0);
}

/* The schedule of 1,024 nodes at 1 s per test, as the estimate reports. */
static void estimates_for_a_thousand_nodes(void)
{
    struct scan_estimate x = scan_estimate_exhaustive(NMAX);
    CHECK_INT(x.rounds, NMAX - 1);
    CHECK_INT(x.tests, NMAX * (NMAX - 1) / 2);
    CHECK_INT(x.max_pairs, NMAX / 2);
    struct scan_estimate f = scan_estimate_fast(NMAX, 2);
    CHECK_INT(f.rounds, 2);
    CHECK_INT(f.tests, NMAX / 2 + 2);
    CHECK_INT(f.max_pairs, NMAX / 2);
    CHECK_INT(scan_estimate_fast(1, 0).rounds, 0);
}

/* ---- verdicts ---- */

static const char *const names[] = {"n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7"};

static struct scan_test pair_test(int round, enum scan_pass pass, int a, int b, double busbw)
{
    return (struct scan_test){.round = round, .pass = pass, .a = a, .b = b, .status = SCAN_OK,
                              .busbw = busbw, .seconds = 1};
}

static struct scan_test failed_test(int round, enum scan_pass pass, int a, int b, enum scan_status st)
{
    struct scan_test t = pair_test(round, pass, a, b, -1);
    t.status = st;
    snprintf(t.error, sizeof t.error, "no answer in 30 s");
    return t;
}

static void fresh_nodes(struct scan_node *nodes, int n)
{
    for (int i = 0; i < n; i++)
        nodes[i] = (struct scan_node){.lost_round = -1};
}

static void median_is_the_upper_one(void)
{
    struct scan_test t[3] = {pair_test(0, SCAN_PASS_FIRST, 0, 1, 1), pair_test(0, SCAN_PASS_FIRST, 2, 3, 9),
                             pair_test(0, SCAN_PASS_ALONE, 0, -1, 5)};
    CHECK_NEAR(scan_median(t, 2, 0), 9, 1e-12);
    CHECK_NEAR(scan_median(t, 3, 1), 5, 1e-12);
    t[1].status = SCAN_TIMEOUT; /* a timed-out test measured nothing */
    CHECK_NEAR(scan_median(t, 2, 0), 1, 1e-12);
}

/* Fast mode, 8 nodes: node 5 slow in the first pass with node 4 and again
 * with known-good node 0; node 4, its first partner, is cleared by its
 * second test with node 1. Only node 5 is named, no link. */
static void fast_mode_names_the_node_its_second_test_confirms(void)
{
    struct scan_test t[] = {
        pair_test(0, SCAN_PASS_FIRST, 0, 2, 10), pair_test(0, SCAN_PASS_FIRST, 1, 3, 11),
        pair_test(0, SCAN_PASS_FIRST, 4, 5, 2),  pair_test(0, SCAN_PASS_FIRST, 6, 7, 10),
        pair_test(1, SCAN_PASS_SECOND, 0, 5, 2.1), pair_test(1, SCAN_PASS_SECOND, 1, 4, 10.5),
    };
    struct scan_node nodes[8];
    struct scan_judgement j;
    fresh_nodes(nodes, 8);
    CHECK_INT(scan_judge(t, 6, 0, 0.8, 0, names, nodes, 8, &j), 0);
    for (int i = 0; i < 8; i++)
        CHECK_STR(scan_verdict_name(nodes[i].verdict), i == 5 ? "slow" : "pass");
    CHECK_INT(j.slow, 1);
    CHECK_INT(j.passed, 7);
    CHECK_INT(j.nlinks, 0);
    CHECK_CONTAINS(nodes[5].reason, "slow with known-good n0: 2.1 GB/s, 0.21x the fleet median 10 GB/s");
    CHECK_CONTAINS(nodes[5].reason, "first pass with n4: 2 GB/s");
    CHECK_CONTAINS(nodes[4].reason, "cleared with known-good n1");
    CHECK_NEAR(nodes[5].ratio, 0.21, 1e-9);
    CHECK_NEAR(nodes[5].best_pair, 2.1, 1e-12);
    scan_judgement_free(&j);
}

/* A node lost in round 1 is failed whatever its first test said; a suspect
 * whose known-good partner was lost is untested, not blamed. */
static void fast_mode_lost_nodes_fail_and_their_partners_stay_untested(void)
{
    struct scan_test t[] = {
        pair_test(0, SCAN_PASS_FIRST, 0, 1, 10), pair_test(0, SCAN_PASS_FIRST, 2, 3, 1),
        failed_test(1, SCAN_PASS_SECOND, 0, 3, SCAN_TIMEOUT), pair_test(1, SCAN_PASS_SECOND, 1, 2, 10),
    };
    struct scan_node nodes[4];
    struct scan_judgement j;
    fresh_nodes(nodes, 4);
    nodes[0].lost_round = 1;
    CHECK_INT(scan_judge(t, 4, 0, 0.8, 0, names, nodes, 4, &j), 0);
    CHECK_STR(scan_verdict_name(nodes[0].verdict), "failed");
    CHECK_CONTAINS(nodes[0].reason, "stopped answering the coordinator in round 1");
    CHECK_STR(scan_verdict_name(nodes[1].verdict), "pass");
    CHECK_STR(scan_verdict_name(nodes[2].verdict), "pass");
    CHECK_STR(scan_verdict_name(nodes[3].verdict), "untested");
    CHECK_CONTAINS(nodes[3].reason, "its known-good partner was lost");
    CHECK_INT(j.failed + j.untested + j.passed, 4);
    scan_judgement_free(&j);
}

/* Exhaustive, 4 nodes: node 2 slow with everyone, plus the 0-1 link bad
 * once: node 2 is slow (3 of 3), nodes 0 and 1 pass (1 of 3 bad) and the
 * 0-1 test is the one suspect link. */
static void exhaustive_blames_the_common_factor_and_names_the_odd_link(void)
{
    struct scan_test t[] = {
        pair_test(0, SCAN_PASS_ALL_PAIRS, 0, 3, 10), pair_test(0, SCAN_PASS_ALL_PAIRS, 1, 2, 3),
        pair_test(1, SCAN_PASS_ALL_PAIRS, 0, 2, 3),  pair_test(1, SCAN_PASS_ALL_PAIRS, 1, 3, 10),
        pair_test(2, SCAN_PASS_ALL_PAIRS, 0, 1, 4),  pair_test(2, SCAN_PASS_ALL_PAIRS, 2, 3, 2.5),
        pair_test(3, SCAN_PASS_ALL_PAIRS, 0, 1, 10), pair_test(3, SCAN_PASS_ALL_PAIRS, 2, 3, 10),
    };
    /* The last round retests 0-1 and 2-3 healthy; the median is then 10. */
    struct scan_node nodes[4];
    struct scan_judgement j;
    fresh_nodes(nodes, 4);
    CHECK_INT(scan_judge(t, 8, 1, 0.8, 0, names, nodes, 4, &j), 0);
    CHECK_STR(scan_verdict_name(nodes[2].verdict), "slow");
    CHECK_CONTAINS(nodes[2].reason, "3 of 4 pair tests bad (3 slow, 0 failed)");
    for (int i = 0; i < 4; i++)
        if (i != 2)
            CHECK_STR(scan_verdict_name(nodes[i].verdict), "pass");
    CHECK_INT(j.nlinks, 1);
    if (j.nlinks == 1) {
        CHECK_INT(j.links[0].a, 0);
        CHECK_INT(j.links[0].b, 1);
        CHECK_NEAR(j.links[0].busbw, 4, 1e-12);
    }
    scan_judgement_free(&j);
}

/* Exhaustive, tests with a node after it was lost do not count against
 * its partners. */
static void exhaustive_ignores_tests_with_lost_nodes(void)
{
    struct scan_test t[] = {
        pair_test(0, SCAN_PASS_ALL_PAIRS, 0, 1, 10), pair_test(0, SCAN_PASS_ALL_PAIRS, 2, 3, 10),
        failed_test(1, SCAN_PASS_ALL_PAIRS, 0, 2, SCAN_TIMEOUT), pair_test(1, SCAN_PASS_ALL_PAIRS, 1, 3, 10),
        failed_test(2, SCAN_PASS_ALL_PAIRS, 0, 3, SCAN_FAILED), failed_test(2, SCAN_PASS_ALL_PAIRS, 1, 2, SCAN_FAILED),
    };
    struct scan_node nodes[4];
    struct scan_judgement j;
    fresh_nodes(nodes, 4);
    nodes[2].lost_round = 1;
    CHECK_INT(scan_judge(t, 6, 1, 0.8, 0, names, nodes, 4, &j), 0);
    CHECK_STR(scan_verdict_name(nodes[2].verdict), "failed");
    CHECK_STR(scan_verdict_name(nodes[1].verdict), "pass");
    CHECK_STR(scan_verdict_name(nodes[3].verdict), "pass");
    /* Node 0 failed with node 3 (alive) once of two counted tests: a tie
     * is not a majority, so it passes and 0-3 is a suspect link. */
    CHECK_STR(scan_verdict_name(nodes[0].verdict), "pass");
    CHECK_INT(j.nlinks, 1);
    scan_judgement_free(&j);
}

/* NCCL: a node whose pair tests pass but whose own intra-node figure is
 * low is slow; on host memory (judge_alone 0) the same figure is not. */
static void low_intra_node_figure_counts_only_when_asked(void)
{
    struct scan_test t[] = {
        pair_test(0, SCAN_PASS_ALONE, 0, -1, 300), pair_test(0, SCAN_PASS_ALONE, 1, -1, 100),
        pair_test(0, SCAN_PASS_ALONE, 2, -1, 310), pair_test(0, SCAN_PASS_ALONE, 3, -1, 305),
        pair_test(1, SCAN_PASS_FIRST, 0, 1, 40),   pair_test(1, SCAN_PASS_FIRST, 2, 3, 41),
    };
    struct scan_node nodes[4];
    struct scan_judgement j;
    fresh_nodes(nodes, 4);
    CHECK_INT(scan_judge(t, 6, 0, 0.8, 1, names, nodes, 4, &j), 0);
    CHECK_STR(scan_verdict_name(nodes[1].verdict), "slow");
    CHECK_CONTAINS(nodes[1].reason, "its own intra-node figure 100 GB/s is 0.33x the fleet's 305 GB/s");
    CHECK_NEAR(nodes[1].alone, 100, 1e-12);
    scan_judgement_free(&j);
    for (int i = 0; i < 6; i++)
        t[i].status = SCAN_OK;
    fresh_nodes(nodes, 4);
    CHECK_INT(scan_judge(t, 6, 0, 0.8, 0, names, nodes, 4, &j), 0);
    CHECK_STR(scan_verdict_name(nodes[1].verdict), "pass");
    scan_judgement_free(&j);
}

/* Fast mode, the first-pass pair 0-1 slow, both cleared by known-good
 * partners: a link candidate, named only when its confirmation test is
 * bad too. */
static void a_link_is_named_only_when_its_retest_is_bad(void)
{
    struct scan_test t[] = {
        pair_test(1, SCAN_PASS_FIRST, 0, 1, 2),   pair_test(1, SCAN_PASS_FIRST, 2, 3, 10),
        pair_test(2, SCAN_PASS_SECOND, 0, 2, 10), pair_test(2, SCAN_PASS_SECOND, 1, 3, 10),
        pair_test(3, SCAN_PASS_CONFIRM, 0, 1, 9.5),
    };
    struct scan_node nodes[4];
    struct scan_judgement j;
    fresh_nodes(nodes, 4);
    CHECK_INT(scan_judge(t, 5, 0, 0.8, 0, names, nodes, 4, &j), 0);
    CHECK_INT(j.passed, 4);
    CHECK_INT(j.nlinks, 0); /* good the second time */
    scan_judgement_free(&j);
    t[4].busbw = 2.1;
    fresh_nodes(nodes, 4);
    CHECK_INT(scan_judge(t, 5, 0, 0.8, 0, names, nodes, 4, &j), 0);
    CHECK_INT(j.passed, 4);
    CHECK_INT(j.nlinks, 1);
    if (j.nlinks == 1) {
        CHECK_INT(j.links[0].a, 0);
        CHECK_INT(j.links[0].b, 1);
        CHECK_NEAR(j.links[0].busbw, 2, 1e-12); /* the first figure, not the retest's */
    }
    scan_judgement_free(&j);
    /* Without a confirmation round (the candidate's node was lost, say),
     * the bad test alone names the link. */
    fresh_nodes(nodes, 4);
    CHECK_INT(scan_judge(t, 4, 0, 0.8, 0, names, nodes, 4, &j), 0);
    CHECK_INT(j.nlinks, 1);
    scan_judgement_free(&j);
}

/* Confirmation tests decide no node: exhaustively, two bad retests do not
 * make a majority against a node whose scheduled tests were good. */
static void confirmation_tests_decide_no_node(void)
{
    struct scan_test t[] = {
        pair_test(1, SCAN_PASS_ALL_PAIRS, 0, 1, 2), pair_test(1, SCAN_PASS_ALL_PAIRS, 2, 3, 10),
        pair_test(2, SCAN_PASS_ALL_PAIRS, 0, 2, 10), pair_test(2, SCAN_PASS_ALL_PAIRS, 1, 3, 10),
        pair_test(3, SCAN_PASS_ALL_PAIRS, 0, 3, 10), pair_test(3, SCAN_PASS_ALL_PAIRS, 1, 2, 10),
        pair_test(4, SCAN_PASS_CONFIRM, 0, 1, 2), pair_test(5, SCAN_PASS_CONFIRM, 0, 1, 2),
    };
    struct scan_node nodes[4];
    struct scan_judgement j;
    fresh_nodes(nodes, 4);
    CHECK_INT(scan_judge(t, 8, 1, 0.8, 0, names, nodes, 4, &j), 0);
    CHECK_STR(scan_verdict_name(nodes[0].verdict), "pass");
    CHECK_STR(scan_verdict_name(nodes[1].verdict), "pass");
    CHECK_INT(j.nlinks, 1);
    CHECK_STR(scan_pass_name(SCAN_PASS_CONFIRM), "confirm");
    scan_judgement_free(&j);
}

/* Two nodes lost in the round they tested each other: both failed, each
 * reason naming the other. */
static void partners_lost_together_say_so(void)
{
    struct scan_test t[] = {
        pair_test(1, SCAN_PASS_ALL_PAIRS, 0, 1, 10), failed_test(1, SCAN_PASS_ALL_PAIRS, 2, 3, SCAN_FAILED),
    };
    struct scan_node nodes[4];
    struct scan_judgement j;
    fresh_nodes(nodes, 4);
    nodes[2].lost_round = nodes[3].lost_round = 1;
    CHECK_INT(scan_judge(t, 2, 1, 0.8, 0, names, nodes, 4, &j), 0);
    CHECK_CONTAINS(nodes[2].reason, "in round 1 together with n3, its partner in that round");
    CHECK_CONTAINS(nodes[3].reason, "together with n2");
    CHECK_INT(j.failed, 2);
    scan_judgement_free(&j);
    fresh_nodes(nodes, 4);
    nodes[2].lost_round = 1;
    CHECK_INT(scan_judge(t, 2, 1, 0.8, 0, names, nodes, 4, &j), 0);
    CHECK(strstr(nodes[2].reason, "together") == NULL);
    scan_judgement_free(&j);
}

/* ---- node names ------------------------------------------------------------ */

/* A layout of `nnodes` hosts h0, h1, ... of `per` ranks each, rank r on
 * host r / per, as group_ranks leaves it. */
struct fake_layout {
    struct scan_layout l;
    const char *host[8];
    int ranks[16], node_of[16];
};

static void fake_layout(struct fake_layout *f, int nnodes, int per)
{
    static const char *const hosts[] = {"h0", "h1", "h2", "h3", "h4", "h5", "h6", "h7"};
    memset(f, 0, sizeof *f);
    for (int x = 0; x < nnodes; x++)
        f->host[x] = hosts[x];
    for (int r = 0; r < nnodes * per; r++) {
        f->ranks[r] = r;
        f->node_of[r] = r / per;
    }
    f->l = (struct scan_layout){.nnodes = nnodes, .per_node = per, .host = f->host, .ranks = f->ranks,
                                .node_of = f->node_of};
}

static void free_node_names(struct scan_layout *l)
{
    for (int x = 0; l->node_name != NULL && x < l->nnodes; x++)
        free(l->node_name[x]);
    free(l->node_name);
    l->node_name = NULL;
}

static void node_names_are_rfc1123_subdomains(void)
{
    char longest[256];
    memset(longest, 'a', 253);
    longest[253] = '\0';
    const char *good[] = {"gpu-a", "a", "0", "a-b-c", "gke-a3-pool-1a2b.us-central1-a.c.proj.internal", longest};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        CHECK(scan_node_name_ok(good[i]));
    longest[253] = 'a';
    longest[254] = '\0';
    const char *bad[] = {"", "Gpu-a", "gpu_a", "-a", "a-", ".a", "a.", "a..b", "a.-b", "a b", "a;rm -rf /",
                         "--all", "$(touch x)", "gpu-\xc3\xa9", "a\nb", longest};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK(!scan_node_name_ok(bad[i]));
}

static void each_host_gets_its_ranks_name(void)
{
    struct fake_layout f;
    struct fb_err err = {0};
    char *given[] = {"gpu-a", "gpu-a", "", "", "gpu-c", "gpu-c"};
    fake_layout(&f, 3, 2);
    CHECK_INT(scan_layout_name_nodes(&f.l, given, &err), FB_OK);
    CHECK_STR(f.l.node_name[0], "gpu-a");
    CHECK(f.l.node_name[1] == NULL); /* outside Kubernetes: no name, never a duplicate */
    CHECK_STR(f.l.node_name[2], "gpu-c");
    free_node_names(&f.l);
    char *unnamed[] = {"", "", ""};
    fake_layout(&f, 3, 1);
    CHECK_INT(scan_layout_name_nodes(&f.l, unnamed, &err), FB_OK);
    free_node_names(&f.l);
}

static void a_name_that_is_no_node_name_is_refused_naming_it(void)
{
    struct fake_layout f;
    struct fb_err err = {0};
    char *given[] = {"gpu-a", "Bad_Node\n"};
    fake_layout(&f, 2, 1);
    CHECK_INT(scan_layout_name_nodes(&f.l, given, &err), FB_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "FABRIC_NODE_NAME 'Bad_Node?' (rank 1 on h1) is not a Kubernetes node name");
    CHECK_CONTAINS(err.msg, "spec.nodeName");
    CHECK(strchr(err.msg, '\n') == NULL);
    CHECK(f.l.node_name == NULL);
}

static void two_hosts_under_one_node_name_are_refused(void)
{
    struct fake_layout f;
    struct fb_err err = {0};
    char *given[] = {"gpu-a", "gpu-b", "gpu-a"};
    fake_layout(&f, 3, 1);
    CHECK_INT(scan_layout_name_nodes(&f.l, given, &err), FB_ERR_LAUNCH);
    CHECK_CONTAINS(err.msg, "hosts h0 and h2 both give FABRIC_NODE_NAME 'gpu-a'");
    CHECK(f.l.node_name == NULL);
}

static void ranks_of_one_host_must_agree_on_its_node(void)
{
    struct fake_layout f;
    struct fb_err err = {0};
    char *given[] = {"gpu-a", "gpu-a", "gpu-b", "gpu-c"};
    fake_layout(&f, 2, 2);
    CHECK_INT(scan_layout_name_nodes(&f.l, given, &err), FB_ERR_LAUNCH);
    CHECK_CONTAINS(err.msg, "the ranks of host h1 give different FABRIC_NODE_NAMEs ('gpu-b' for rank 2, 'gpu-c' for rank 3)");
    char *half[] = {"gpu-a", "", "gpu-b", "gpu-b"};
    CHECK_INT(scan_layout_name_nodes(&f.l, half, &err), FB_ERR_LAUNCH);
}

int main(void)
{
    RUN(all_pairs_meet_once_in_disjoint_rounds);
    RUN(first_pass_is_a_perfect_matching);
    RUN(first_pass_follows_its_seed);
    RUN(first_pass_pairs_within_racks);
    RUN(second_pass_pairs_suspects_with_good_nodes_of_their_rack);
    RUN(second_pass_spreads_suspects_over_few_good_nodes);
    RUN(second_pass_without_good_nodes_pairs_nothing);
    RUN(estimates_for_a_thousand_nodes);
    RUN(median_is_the_upper_one);
    RUN(fast_mode_names_the_node_its_second_test_confirms);
    RUN(fast_mode_lost_nodes_fail_and_their_partners_stay_untested);
    RUN(exhaustive_blames_the_common_factor_and_names_the_odd_link);
    RUN(exhaustive_ignores_tests_with_lost_nodes);
    RUN(low_intra_node_figure_counts_only_when_asked);
    RUN(a_link_is_named_only_when_its_retest_is_bad);
    RUN(confirmation_tests_decide_no_node);
    RUN(partners_lost_together_say_so);
    RUN(node_names_are_rfc1123_subdomains);
    RUN(each_host_gets_its_ranks_name);
    RUN(a_name_that_is_no_node_name_is_refused_naming_it);
    RUN(two_hosts_under_one_node_name_are_refused);
    RUN(ranks_of_one_host_must_agree_on_its_node);
    return fbt_done();
}
