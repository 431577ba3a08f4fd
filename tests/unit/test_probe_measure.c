/* Result arithmetic: units, samples, peaks, latency percentiles, slow links
 * and suspects. */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "probe/measure.h"
#include "probe/outliers.h"
#include "probe/size_spec.h"

static void test_units_are_decimal_bits_and_bytes(void)
{
    /* 50 GB in one second: 400 Gb/s, 50 GB/s (1e9, not 2^30). */
    CHECK_NEAR(probe_gbps(50e9, 1.0), 400.0, 1e-12);
    CHECK_NEAR(probe_gBps(50e9, 1.0), 50.0, 1e-12);
    /* ib_write_bw -s 65536 -n 5000 -q 2 in 6.5 ms */
    double bytes = 65536.0 * 5000 * 2;
    CHECK_NEAR(probe_gbps(bytes, 6.5e-3), bytes * 8 / 6.5e-3 / 1e9, 1e-12);
    CHECK_NEAR(probe_mpps(10000, 6.5e-3), 10000 / 6.5e-3 / 1e6, 1e-12);
    CHECK(isnan(probe_gbps(1, 0)));
    CHECK(isnan(probe_mpps(1, -1)));
}

static void test_samples_partition_the_run(void)
{
    struct probe_samples s;
    probe_samples_init(&s, 100.0, 0.010);
    /* 1 MB every ms for 95 ms. */
    for (int i = 1; i <= 95; i++)
        probe_samples_add(&s, 100.0 + i * 1e-3, 1e6);
    probe_samples_finish(&s, 100.095);
    double bytes = 0, dur = 0;
    for (int i = 0; i < s.n; i++) {
        bytes += s.bytes[i];
        dur += s.dur_s[i];
        if (i > 0)
            CHECK_NEAR(s.start_s[i], s.start_s[i - 1] + s.dur_s[i - 1], 1e-9);
    }
    CHECK_NEAR(bytes, 95e6, 1e-12);
    CHECK_NEAR(dur, 0.095, 1e-9);
    CHECK_INT(s.n, 10); /* nine full 10 ms intervals and a 5 ms tail */
    CHECK_NEAR(s.start_s[0], 0.0, 1e-12);
    /* Steady 8 Gb/s everywhere: peak equals average. */
    CHECK_NEAR(probe_samples_peak_gbps(&s, -1), 8.0, 1e-6);
}

static void test_samples_merge_when_full(void)
{
    struct probe_samples s;
    probe_samples_init(&s, 0.0, 0.001);
    for (int i = 1; i <= 1000; i++)
        probe_samples_add(&s, i * 1e-3, 1000.0);
    probe_samples_finish(&s, 1.0);
    CHECK(s.n <= PROBE_SAMPLES_MAX);
    CHECK(s.n > PROBE_SAMPLES_MAX / 2);
    CHECK(s.interval >= 1000.0 * 1e-3 / PROBE_SAMPLES_MAX);
    double bytes = 0;
    for (int i = 0; i < s.n; i++)
        bytes += s.bytes[i];
    CHECK_NEAR(bytes, 1e6, 1e-12);
}

static void test_measure_open_empties_and_close_times_the_window(void)
{
    struct probe_measure m;
    m.bytes = 7, m.messages = 9, m.lat.valid = 1; /* left over from an earlier size */
    probe_measure_open(&m, 3, 65536);
    CHECK_INT(m.link, 3);
    CHECK_INT(m.size, 65536);
    CHECK(m.bytes == 0 && m.messages == 0 && !m.lat.valid && m.samples.n == 0);
    probe_samples_init(&m.samples, 10.0, 0.5);
    probe_samples_add(&m.samples, 10.2, 65536.0 * 100);
    /* The last interval closes at the last completion, not the first. */
    probe_measure_close(&m, 65536.0 * 100, 100, 10.0, 10.25);
    CHECK_NEAR(m.seconds, 0.25, 1e-12);
    CHECK_INT(m.messages, 100);
    CHECK_INT(m.samples.n, 1);
    CHECK_NEAR(m.samples.dur_s[0], 0.25, 1e-12);
    CHECK_NEAR(probe_gBps(m.bytes, m.seconds), 65536.0 * 100 / 0.25 / 1e9, 1e-12);
}

static void test_peak_finds_the_fast_interval_and_ignores_a_short_tail(void)
{
    struct probe_samples s;
    probe_samples_init(&s, 0.0, 0.1);
    probe_samples_add(&s, 0.1, 1e9);   /* 80 Gb/s */
    probe_samples_add(&s, 0.2, 2e9);   /* 160 Gb/s */
    probe_samples_add(&s, 0.3, 1e9);   /* 80 Gb/s */
    probe_samples_add(&s, 0.31, 1e9);  /* a 10 ms tail at 800 Gb/s: too short to count */
    probe_samples_finish(&s, 0.31);
    CHECK_INT(s.n, 4);
    CHECK_NEAR(probe_samples_peak_gbps(&s, -1), 160.0, 1e-9);
    /* A run shorter than half an interval has no peak of its own. */
    probe_samples_init(&s, 0.0, 0.1);
    probe_samples_add(&s, 0.01, 1e6);
    probe_samples_finish(&s, 0.01);
    CHECK_NEAR(probe_samples_peak_gbps(&s, 42.0), 42.0, 0);
}

static void test_latency_is_half_the_round_trip(void)
{
    double rtt[100];
    for (int i = 0; i < 100; i++)
        rtt[i] = (100 - i) * 1e-6; /* 100 .. 1 us, reversed */
    struct probe_latency l;
    probe_latency_from_rtts(rtt, 100, &l);
    CHECK(l.valid);
    CHECK_NEAR(l.min_us, 0.5, 1e-9);
    CHECK_NEAR(l.max_us, 50.0, 1e-9);
    CHECK_NEAR(l.p50_us, 25.0, 1e-9);
    CHECK_NEAR(l.p99_us, 49.5, 1e-9);
    CHECK_NEAR(l.avg_us, 25.25, 1e-9);
    probe_latency_from_rtts(rtt, 0, &l);
    CHECK(!l.valid);
}

static void test_rtt_log_grows_past_its_room_and_finishes_a_measure(void)
{
    struct probe_rtt_log log = {0};
    CHECK_INT(probe_rtt_reserve(&log, 2), 0);
    CHECK_INT(log.cap, 2);
    for (int i = 0; i < 5; i++)
        CHECK_INT(probe_rtt_push(&log, (5 - i) * 2e-6), 0); /* 10 .. 2 us */
    CHECK_INT(log.n, 5);
    CHECK(log.cap >= 5);
    struct probe_measure m = {0};
    probe_latency_finish(&m, &log, 64, 1.0, 1.5, 0.001);
    CHECK_INT(m.messages, 5);
    CHECK_NEAR(m.bytes, 320, 0);
    CHECK_NEAR(m.seconds, 0.5, 1e-12);
    CHECK(m.lat.valid);
    CHECK_NEAR(m.lat.min_us, 1.0, 1e-9); /* one way: half the round trip */
    CHECK_NEAR(m.lat.max_us, 5.0, 1e-9);
    probe_rtt_free(&log);
    CHECK(log.v == NULL && log.n == 0 && log.cap == 0);
}

static void test_median(void)
{
    double v[] = {5, 1, 4, 2, 3};
    CHECK_NEAR(probe_median(v, 5), 3, 0);
    CHECK_NEAR(probe_median(v, 4), 3, 0); /* 5 1 4 2 -> (2 + 4) / 2 */
    CHECK(isnan(probe_median(v, 0)));
    CHECK_NEAR(v[0], 5, 0); /* input untouched */
}

static void test_flags_use_line_rate_when_known(void)
{
    struct probe_link_score v[3] = {
        {0, 1, 390.0, 400.0}, {2, 3, 350.0, 400.0}, {4, 5, 380.0, 400.0},
    };
    struct probe_flag f[3];
    int n = probe_flag_links(v, 3, 0.9, NULL, 0, f);
    CHECK_INT(n, 1);
    CHECK_INT(f[0].index, 1);
    CHECK(f[0].by_line_rate);
    CHECK_NEAR(f[0].threshold_gbps, 360.0, 1e-12);
}

static void test_flags_fall_back_to_median(void)
{
    struct probe_link_score v[4] = {
        {0, 1, 10.0, 0}, {1, 2, 11.0, 0}, {2, 3, 12.0, 0}, {3, 0, 7.0, 0},
    };
    struct probe_flag f[4];
    int n = probe_flag_links(v, 4, 0.9, NULL, 0, f);
    CHECK_INT(n, 1);
    CHECK_INT(f[0].index, 3);
    CHECK(!f[0].by_line_rate);
    CHECK_NEAR(f[0].reference_gbps, 10.5, 1e-12);
    /* One link alone is its own median: never slow. */
    CHECK_INT(probe_flag_links(v, 1, 0.9, NULL, 0, f), 0);
}

/* Every ordered pair of `nodes` nodes, one link each: those touching node
 * `bad` at `slow`, the rest at `fast`, all with line rate `line`. */
static int both_ways_fleet(struct probe_link_score *v, int nodes, int bad, double slow, double fast,
                           double line)
{
    int n = 0;
    for (int a = 0; a < nodes; a++)
        for (int c = 0; c < nodes; c++)
            if (a != c)
                v[n++] = (struct probe_link_score){a, c, (a == bad || c == bad) ? slow : fast, line};
    return n;
}

/* All-pairs over 5 nodes, one rail, both directions: node 2's NIC is bad,
 * so its 8 links are slow; every other node is in two slow links of 8. */
static void test_suspect_is_the_common_endpoint(void)
{
    struct probe_link_score v[20];
    int n = both_ways_fleet(v, 5, 2, 150.0, 392.0, 400.0);
    struct probe_suspect s[5];
    int ns = probe_suspects(v, n, 0.9, 5, s);
    CHECK_INT(ns, 1);
    CHECK_INT(s[0].endpoint, 2);
    CHECK_INT(s[0].flagged, 8);
    CHECK_INT(s[0].links, 8);
    CHECK(s[0].send.suspect && s[0].recv.suspect && s[0].by_line_rate);
    CHECK_NEAR(s[0].send.ratio, 150.0 / 400, 1e-12);
    struct probe_flag f[20];
    CHECK_INT(probe_flag_links(v, n, 0.9, s, ns, f), 8);
}

/* One link per pair, oriented as all-pairs orients them (odd distance:
 * lower to higher), no line rate: `slow_send` or `slow_recv` makes the
 * links from (or to) that node 40x slower than the rest. */
static int oriented_fleet(struct probe_link_score *v, int nodes, int slow_send, int slow_recv)
{
    int n = 0;
    for (int a = 0; a < nodes; a++)
        for (int c = a + 1; c < nodes; c++) {
            int src = (c - a) % 2 ? a : c, dst = src == a ? c : a;
            double gbps = 10.0 + 0.1 * n; /* a little spread, as measured */
            if (src == slow_send || dst == slow_recv)
                gbps = 0.25;
            v[n++] = (struct probe_link_score){src, dst, gbps, 0};
        }
    return n;
}

static void test_slow_path_is_named_with_its_direction(void)
{
    struct probe_link_score v[10];
    struct probe_suspect s[5];
    struct probe_flag f[10];
    /* Each of first and last node, send and receive path, over 5 nodes. */
    int cases[4][2] = {{0, -1}, {4, -1}, {-1, 0}, {-1, 4}};
    for (int k = 0; k < 4; k++) {
        int n = oriented_fleet(v, 5, cases[k][0], cases[k][1]);
        int ns = probe_suspects(v, n, 0.9, 5, s);
        CHECK_INT(ns, 1);
        int who = cases[k][0] >= 0 ? cases[k][0] : cases[k][1];
        CHECK_INT(s[0].endpoint, who);
        CHECK_INT(s[0].send.suspect, cases[k][0] >= 0);
        CHECK_INT(s[0].recv.suspect, cases[k][1] >= 0);
        const struct probe_path *p = cases[k][0] >= 0 ? &s[0].send : &s[0].recv;
        CHECK_INT(p->links, 2);
        CHECK_INT(p->slow, 2);
        CHECK(p->ratio < 0.05);
        CHECK_INT(probe_flag_links(v, n, 0.9, s, ns, f), 2);
    }
}

/* Three nodes both ways: the slow node's send and receive paths touch 4 of
 * the 6 links, so the median of all links is its own; the link that does
 * not touch it is the reference. */
static void test_slow_node_in_most_links_of_a_small_fleet(void)
{
    struct probe_link_score v[6];
    int n = both_ways_fleet(v, 3, 1, 0.3, 10.0, 0);
    struct probe_suspect s[3];
    int ns = probe_suspects(v, n, 0.9, 3, s);
    CHECK_INT(ns, 1);
    CHECK_INT(s[0].endpoint, 1);
    CHECK_NEAR(s[0].reference_gbps, 10.0, 1e-12);
    struct probe_flag f[6];
    CHECK_INT(probe_flag_links(v, n, 0.9, s, ns, f), 4);
    CHECK_NEAR(f[0].reference_gbps, 10.0, 1e-12);
}

/* One slow link between two nodes that have no other link that way: it
 * cannot say which end is to blame, so neither is a suspect. */
static void test_single_slow_pair_names_no_suspect(void)
{
    struct probe_link_score v[2] = {{0, 2, 390.0, 400.0}, {1, 3, 100.0, 400.0}};
    struct probe_suspect s[4];
    CHECK_INT(probe_suspects(v, 2, 0.9, 4, s), 0);
    struct probe_flag f[2];
    CHECK_INT(probe_flag_links(v, 2, 0.9, s, 0, f), 1);
}

static void test_wait_bound_covers_the_slowest_acceptable_run(void)
{
    struct probe_size_spec r = {.size = 1 << 20, .iters = 5000, .warmup = 100};
    /* 5100 x 1 MiB x 2 QPs at 1 Gb/s, plus 1 ms per message, plus 1 s. */
    double want = 5100.0 * 2 * ((double)(1 << 20) * 8 / 1e9 + 1e-3) + 1;
    CHECK_NEAR(probe_size_spec_bound_s(&r, 2), want, 1e-9);
    r.iters = 0;
    r.duration = 10;
    r.margin = 0.5;
    CHECK_NEAR(probe_size_spec_bound_s(&r, 2), 11.5, 1e-12);
}

int main(void)
{
    RUN(test_units_are_decimal_bits_and_bytes);
    RUN(test_samples_partition_the_run);
    RUN(test_samples_merge_when_full);
    RUN(test_measure_open_empties_and_close_times_the_window);
    RUN(test_peak_finds_the_fast_interval_and_ignores_a_short_tail);
    RUN(test_latency_is_half_the_round_trip);
    RUN(test_rtt_log_grows_past_its_room_and_finishes_a_measure);
    RUN(test_median);
    RUN(test_flags_use_line_rate_when_known);
    RUN(test_flags_fall_back_to_median);
    RUN(test_suspect_is_the_common_endpoint);
    RUN(test_slow_path_is_named_with_its_direction);
    RUN(test_slow_node_in_most_links_of_a_small_fleet);
    RUN(test_single_slow_pair_names_no_suspect);
    RUN(test_wait_bound_covers_the_slowest_acceptable_run);
    return fbt_done();
}
