/* The flags that change what fabric-coll loops over and how it times:
 * -d/-o/-r all, -N 0, -I/-K, -u, integer spellings; the per-iteration
 * statistics; 8-bit floats and mulsum data; the rows' run keys. Expected
 * values come from nccl-tests 2.19.6, named per test. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "coll/config.h"
#include "coll/measure.h"
#include "coll/record.h"
#include "nccl/collective.h"
#include "nccl/dtype.h"
#include "core/jsonio.h"

static enum fb_status parse(struct coll_config *cfg, struct fb_err *err, const char *line)
{
    static char keep[8][512];
    static int slot;
    char *buf = keep[slot];
    char *argv[64];
    int argc = 0;
    slot = (slot + 1) % 8;
    snprintf(buf, sizeof keep[0], "%s", line);
    for (char *tok = strtok(buf, " "); tok && argc < 63; tok = strtok(NULL, " "))
        argv[argc++] = tok;
    argv[argc] = NULL;
    coll_config_defaults(cfg);
    fb_err_clear(err);
    return coll_config_parse(cfg, argc, argv, err);
}

/* util.cu percentileIndex: min(n - 1, ceil(n * p / 100) - 1). */
static void test_percentile_is_nearest_rank(void)
{
    CHECK_INT(fb_percentile_index(1, 99), 0);
    CHECK_INT(fb_percentile_index(20, 99), 19); /* under 100 samples p99 is the largest */
    CHECK_INT(fb_percentile_index(99, 99), 98);
    CHECK_INT(fb_percentile_index(100, 99), 98);
    CHECK_INT(fb_percentile_index(200, 99), 197);
    CHECK_INT(fb_percentile_index(20, 95), 18);
    CHECK_INT(fb_percentile_index(10, 95), 9);
}

/* util.cu computeIterStats: p50 at n/2 of the sorted sample, population
 * stdev, CV = stdev / avg in %. */
static void test_iteration_statistics(void)
{
    double t[] = {4, 1, 3, 2, 10};
    struct fb_iter_stats s;
    fb_iter_stats_of(t, 5, &s);
    CHECK_NEAR(s.min, 1, 0);
    CHECK_NEAR(s.max, 10, 0);
    CHECK_NEAR(s.avg, 4, 1e-12);
    CHECK_NEAR(s.p50, 3, 0);
    CHECK_NEAR(s.p95, 10, 0);
    CHECK_NEAR(s.p99, 10, 0); /* fewer than 100 samples: the maximum */
    CHECK_NEAR(s.stdev, sqrt(50.0 / 5), 1e-12);
    CHECK_NEAR(s.cv_pct, sqrt(10.0) / 4 * 100, 1e-9);
    double even[] = {1, 2, 3, 4};
    fb_iter_stats_of(even, 4, &s);
    CHECK_NEAR(s.p50, 3, 0); /* the upper middle, not the mean of the two */
    double same[] = {7, 7, 7};
    fb_iter_stats_of(same, 3, &s);
    CHECK_NEAR(s.stdev, 0, 0);
    CHECK_NEAR(s.cv_pct, 0, 0);
    double zero[] = {0, 0};
    fb_iter_stats_of(zero, 2, &s);
    CHECK_NEAR(s.cv_pct, 0, 0); /* no division by a zero average */
}

/* common.h ncclstringtotype/ncclstringtoop: "all" selects the list;
 * common.cu: -r -1 is every root, -N 0 repeats for ever. */
static void test_all_spellings(void)
{
    struct coll_config c;
    struct fb_err err;
    CHECK_INT(parse(&c, &err, "all_reduce_perf -d all -o all --backend mpi"), FB_OK);
    CHECK(c.dtype_all && c.op_all && !c.root_all);
    CHECK_INT(parse(&c, &err, "broadcast_perf -r all --backend mpi"), FB_OK);
    CHECK(c.root_all);
    CHECK_INT(parse(&c, &err, "broadcast_perf -r -1 --backend mpi"), FB_OK);
    CHECK(c.root_all);
    CHECK_INT(parse(&c, &err, "broadcast_perf -r 0x1 --backend mpi"), FB_OK);
    CHECK(!c.root_all && c.root == 1);
    CHECK_INT(parse(&c, &err, "broadcast_perf -r -2"), FB_ERR_USAGE);
    CHECK(strstr(err.msg, "all (-1)") != NULL);
    CHECK_INT(parse(&c, &err, "all_reduce_perf -o mulsum -d f8e4m3 --backend mpi"), FB_OK);
    CHECK_INT(c.op, FB_MULSUM);
    CHECK_INT(c.dtype, FB_F8E4M3);
    CHECK_INT(parse(&c, &err, "all_reduce_perf -d f8e5m2 --backend mpi"), FB_OK);
    CHECK_INT(c.dtype, FB_F8E5M2);
    CHECK_INT(parse(&c, &err, "all_reduce_perf -d fp4"), FB_ERR_USAGE);
    CHECK(strstr(err.msg, "f8e4m3") != NULL && strstr(err.msg, "all") != NULL);
    CHECK_INT(parse(&c, &err, "all_reduce_perf -N 0 --backend mpi"), FB_OK);
    CHECK_INT(c.run_cycles, COLL_CYCLES_ENDLESS);
    CHECK_INT(parse(&c, &err, "all_reduce_perf -N 0 --time-budget 10"), FB_ERR_USAGE);
}

/* common.cu main: strtol(optarg, NULL, 0) reads 0x10 as 16 and 010 as 8. */
static void test_integers_in_hex_and_octal(void)
{
    struct coll_config c;
    struct fb_err err;
    CHECK_INT(parse(&c, &err, "all_reduce_perf -n 0x10 -w 010 -m 0X2 -c 0 --backend mpi"), FB_OK);
    CHECK_INT(c.iters, 16);
    CHECK_INT(c.warmup, 8);
    CHECK_INT(c.agg, 2);
    CHECK_INT(parse(&c, &err, "all_reduce_perf -n 08"), FB_ERR_USAGE); /* not octal: refused, not read as 0 */
    CHECK_INT(parse(&c, &err, "all_reduce_perf -n 5x"), FB_ERR_USAGE);
    CHECK_INT(parse(&c, &err, "all_reduce_perf -b 0x400 -e 1 K"), FB_ERR_USAGE); /* "K" is a stray word */
    CHECK_INT(parse(&c, &err, "all_reduce_perf -b 0x400 --backend mpi"), FB_OK);
    CHECK_INT(c.minbytes, 1024);
}

/* common.cu main: -I other than 0/1, -I with -G, -K out of [0, n) and -K
 * without -I are each turned off with a message, and the run goes on. */
static void test_per_iter_flags_turn_off_as_nccl_tests(void)
{
    struct coll_config c;
    struct fb_err err;
    CHECK_INT(parse(&c, &err, "all_reduce_perf -I 1 -K 3 -n 5 --backend mpi"), FB_OK);
    CHECK(c.per_iter == 1 && c.per_iter_skip == 3);
    CHECK_INT(coll_config_notes(&c, NULL), 0);
    CHECK_INT(parse(&c, &err, "all_reduce_perf -I 2 --backend mpi"), FB_OK);
    CHECK_INT(c.per_iter, 0);
    CHECK(strstr(c.timing_note[0], "-I 2") != NULL);
    CHECK_INT(parse(&c, &err, "all_reduce_perf -K 2 --backend mpi"), FB_OK);
    CHECK_INT(c.per_iter_skip, 0);
    CHECK(strstr(c.timing_note[1], "needs per-iteration timing") != NULL);
    CHECK_INT(parse(&c, &err, "all_reduce_perf -I 1 -K 5 -n 5 --backend mpi"), FB_OK);
    CHECK_INT(c.per_iter_skip, 0);
    CHECK(strstr(c.timing_note[1], "0 to 4") != NULL);
    CHECK_INT(parse(&c, &err, "all_reduce_perf -I 1 -K -1 --backend mpi"), FB_OK);
    CHECK_INT(c.per_iter_skip, 0);
    CHECK_INT(coll_config_notes(&c, NULL), 1);
    CHECK_INT(parse(&c, &err, "all_reduce_perf -I 1 -G 2 --backend mpi"), FB_ERR_USAGE); /* -G itself needs nccl */
    CHECK_INT(c.per_iter, 0);
    CHECK(strstr(c.timing_note[0], "CUDA graphs") != NULL);
    CHECK_INT(parse(&c, &err, "all_reduce_perf -I x"), FB_ERR_USAGE); /* garbage stays an error */
}

/* E4M3: 3 mantissa bits, bias 7, saturating at 448; E5M2: 2 bits, bias 15. */
static void test_fp8_conversions(void)
{
    uint8_t b[4];
    for (int v = -16; v <= 16; v++) {
        fb_store(FB_F8E4M3, b, 0, v);
        CHECK_NEAR(fb_load(FB_F8E4M3, b, 0), v, 0);
    }
    for (int v = 0; v <= 8; v++) {
        fb_store(FB_F8E5M2, b, 1, v);
        CHECK_NEAR(fb_load(FB_F8E5M2, b, 1), v, 0);
    }
    fb_store(FB_F8E4M3, b, 0, 17); /* between 16 and 18: ties to even, 16 */
    CHECK_NEAR(fb_load(FB_F8E4M3, b, 0), 16, 0);
    fb_store(FB_F8E4M3, b, 0, 1e6);
    CHECK_NEAR(fb_load(FB_F8E4M3, b, 0), 448, 0);
    CHECK_INT(b[0], 0x7e);
    fb_store(FB_F8E5M2, b, 0, 1e6);
    CHECK_NEAR(fb_load(FB_F8E5M2, b, 0), 57344, 0);
    fb_store(FB_F8E4M3, b, 0, ldexp(1, -9)); /* the smallest subnormal */
    CHECK_INT(b[0], 1);
    CHECK_NEAR(fb_load(FB_F8E4M3, b, 0), ldexp(1, -9), 0);
    fb_store(FB_F8E4M3, b, 0, 1.0);
    CHECK_INT(b[0], 0x38);
    fb_store(FB_F8E5M2, b, 0, 1.0);
    CHECK_INT(b[0], 0x3c);
    /* Values that do not fit compare as stored: max and data movement hand
     * them on unchanged. */
    fb_store(FB_F8E4M3, b, 0, 63);
    CHECK(fb_value_matches(FB_F8E4M3, FB_MAX, fb_load(FB_F8E4M3, b, 0), 63));
    CHECK(!fb_value_matches(FB_F8E4M3, FB_MAX, 56, 63) || fb_load(FB_F8E4M3, b, 0) == 56);
}

/* verifiable.h ncclVerifiablePremulScalar: 1 on even ranks, 2 on odd. */
static void test_mulsum_expectation(void)
{
    CHECK_NEAR(fb_mulsum_scalar(0), 1, 0);
    CHECK_NEAR(fb_mulsum_scalar(3), 2, 0);
    int n = 5;
    for (size_t i = 0; i < 50; i++) {
        double want = 0;
        for (int r = 0; r < n; r++)
            want += fb_mulsum_scalar(r) * fb_input_value(FB_FLOAT, FB_MULSUM, n, r, i);
        CHECK_NEAR(fb_expected_reduce(FB_FLOAT, FB_MULSUM, n, i), want, 0);
    }
    /* The weighted sum stays exact: 2 ranks weigh 3 in e4m3 (exact to 16). */
    for (size_t i = 0; i < 4096; i++)
        CHECK(fb_expected_reduce(FB_F8E4M3, FB_MULSUM, 2, i) <= 16);
    for (size_t i = 0; i < 4096; i++)
        CHECK(fb_expected_reduce(FB_F8E5M2, FB_SUM, 2, i) <= 8);
    CHECK_STR(fb_redop_name(FB_MULSUM), "mulsum");
    CHECK_INT(fb_redop_parse("mulsum"), FB_MULSUM);
}

static void test_unalign_offsets_both_buffers(void)
{
    const struct fb_collective *ag = fb_collective(FB_ALL_GATHER);
    struct fb_call c = fb_make_call(ag, FB_FLOAT, FB_SUM, 0, 4096, 1, 1, 4, FB_INPLACE_NCCL);
    size_t send = c.send_off, recv = c.recv_off;
    fb_call_unalign(&c, 3);
    CHECK_INT(c.send_off, send + 3);
    CHECK_INT(c.recv_off, recv + 3);
}

static json_object *placement(json_object *row, const char *name)
{
    json_object *p = NULL;
    json_object_object_get_ex(row, name, &p);
    return p;
}

/* Rows say their type, redop and root (util.cu writeBenchmarkLinePreamble
 * writes them per row); -I rows carry per_iter with nccl-tests' keys. */
static void test_rows_carry_run_keys_and_per_iter(void)
{
    struct fb_record rec;
    struct fb_err err = {0};
    CHECK_INT(fb_record_new(&rec, "/dev/null", "fabric-coll", "broadcast_perf", "t", &err), FB_OK);
    struct fb_call c = fb_make_call(fb_collective(FB_BROADCAST), FB_INT32, FB_SUM, 1, 1024, 0, 0, 2, FB_INPLACE_NCCL);
    struct fb_measurement m = {.time_us = 2, .wrong = 0};
    m.iter.times_us = malloc(3 * sizeof(double));
    m.iter.times_us[0] = 5, m.iter.times_us[1] = 1, m.iter.times_us[2] = 3;
    m.iter.n = 3;
    m.iter.skipped = 1;
    fb_iter_stats_of(m.iter.times_us + 1, 2, &m.iter.stats);
    struct fb_measurement plain = {.time_us = 2, .wrong = -1};
    fb_record_add_row(&rec, &c, 0, 3, &m, &plain);
    json_object *row = json_object_array_get_idx(rec.rows, 0);
    CHECK_STR(fb_json_get_string(row, "type"), "int32");
    CHECK_STR(fb_json_get_string(row, "redop"), "none");
    int64_t root = -5;
    CHECK(fb_json_get_int64(row, "root", &root) && root == 1);
    json_object *it = NULL;
    CHECK(json_object_object_get_ex(placement(row, "out_of_place"), "per_iter", &it));
    static const char *const keys[] = {"skipped_iterations", "min_us", "max_us", "avg_us", "p50_us",
                                       "p95_us", "p99_us", "stdev_us", "cv_pct", "times_us"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        CHECK(json_object_object_get_ex(it, keys[k], NULL));
    double v = 0;
    CHECK(fb_json_get_double(it, "max_us", &v) && v == 3); /* the skipped 5 is left out */
    json_object *times = NULL;
    CHECK(json_object_object_get_ex(it, "times_us", &times) && json_object_array_length(times) == 3);
    CHECK(!json_object_object_get_ex(placement(row, "in_place"), "per_iter", NULL));
    fb_measurement_free(&m);
    CHECK(m.iter.times_us == NULL);
    /* Stability tells the same size of different types apart. */
    struct fb_call f = fb_make_call(fb_collective(FB_BROADCAST), FB_FLOAT, FB_SUM, 1, 1024, 0, 0, 2, FB_INPLACE_NCCL);
    fb_record_add_row(&rec, &c, 1, 3, &plain, &plain);
    fb_record_add_row(&rec, &f, 0, 3, &plain, &plain);
    fb_record_add_row(&rec, &f, 1, 3, &plain, &plain);
    json_object *st = fb_stability_of_rows(rec.rows, 5), *sizes = NULL;
    CHECK(st != NULL && json_object_object_get_ex(st, "sizes", &sizes));
    CHECK_INT(json_object_array_length(sizes), 2);
    CHECK_STR(fb_json_get_string(json_object_array_get_idx(sizes, 1), "type"), "float");
    json_object_put(st);
    json_object *sum = fb_summary_of_rows(rec.rows, -1);
    CHECK(json_object_object_get_ex(sum, "sizes_planned", &it) && it == NULL); /* -N 0: open-ended */
    json_object_put(sum);
    fb_record_free(&rec);
}

int main(void)
{
    RUN(test_percentile_is_nearest_rank);
    RUN(test_iteration_statistics);
    RUN(test_all_spellings);
    RUN(test_integers_in_hex_and_octal);
    RUN(test_per_iter_flags_turn_off_as_nccl_tests);
    RUN(test_fp8_conversions);
    RUN(test_mulsum_expectation);
    RUN(test_unalign_offsets_both_buffers);
    RUN(test_rows_carry_run_keys_and_per_iter);
    return fbt_done();
}
