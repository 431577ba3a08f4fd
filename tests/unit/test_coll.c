/* fabric-coll's pure parts: option parsing, sweep plans, collective sizes
 * and bandwidth formulas, exact data, table formatting, summaries. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "nccl/collective.h"
#include "coll/config.h"
#include "nccl/dtype.h"
#include "coll/pacing.h"
#include "coll/plan.h"
#include "coll/record.h"
#include "coll/table.h"
#include "core/jsonio.h"

static enum fb_status parse(struct coll_config *cfg, struct fb_err *err, const char *line)
{
    char buf[512];
    char *argv[64];
    int argc = 0;
    snprintf(buf, sizeof buf, "%s", line);
    for (char *tok = strtok(buf, " "); tok && argc < 63; tok = strtok(NULL, " "))
        argv[argc++] = tok;
    argv[argc] = NULL;
    coll_config_defaults(cfg);
    fb_err_clear(err);
    static char keep[8][512];
    static int slot;
    /* Strings in cfg point into argv: keep this call's words alive. */
    memcpy(keep[slot], buf, sizeof buf);
    for (int i = 0; i < argc; i++)
        argv[i] = keep[slot] + (argv[i] - buf);
    slot = (slot + 1) % 8;
    return coll_config_parse(cfg, argc, argv, err);
}

static void test_defaults_match_nccl_tests(void)
{
    struct coll_config c;
    struct fb_err err;
    CHECK_INT(parse(&c, &err, "all_reduce_perf --backend mpi"), FB_OK);
    CHECK_INT(c.minbytes, 32 << 20);
    CHECK_INT(c.maxbytes, 32 << 20);
    CHECK_INT(c.stepbytes, 1 << 20);
    CHECK_INT(c.iters, 20);
    CHECK_INT(c.warmup, 1);
    CHECK_INT(c.check, 1);
    CHECK_INT(c.average, 1);
    CHECK_STR(c.coll->name, "all_reduce");
    CHECK_INT(c.dtype, FB_FLOAT);
    CHECK_INT(c.op, FB_SUM);
}

static void test_nccl_tests_flags_parse(void)
{
    struct coll_config c;
    struct fb_err err;
    CHECK_INT(parse(&c, &err, "/x/all_gather_perf -b 1K -e16G -f 2 -g 1 -t 1 -c 0 -n 5 -w 2 -m 3 "
                              "-d bf16 -o max -a 3 -z 1 -N 2 --backend mpi"), FB_OK);
    CHECK_STR(c.coll->name, "all_gather");
    CHECK_INT(c.minbytes, 1024);
    CHECK_INT(c.maxbytes, 16ULL << 30);
    CHECK_INT(c.stepfactor, 2);
    CHECK(c.stepfactor_given);
    CHECK_INT(c.check, 0);
    CHECK_INT(c.iters, 5);
    CHECK_INT(c.warmup, 2);
    CHECK_INT(c.agg, 3);
    CHECK_INT(c.dtype, FB_BFLOAT16);
    CHECK_INT(c.op, FB_MAX);
    CHECK_INT(c.average, 3);
    CHECK_INT(c.blocking, 1);
    CHECK_INT(c.run_cycles, 2);
    CHECK_STR(c.backend->name, "mpi");
}

static void test_subcommand_and_long_options(void)
{
    struct coll_config c;
    struct fb_err err;
    CHECK_INT(parse(&c, &err, "fabric-coll reduce-scatter --minbytes=4K --maxbytes 8K --stepfactor=4 "
                              "--cluster lab --backend=mpi -J out.json"), FB_OK);
    CHECK_STR(c.coll->name, "reduce_scatter");
    CHECK_INT(c.minbytes, 4096);
    CHECK_INT(c.maxbytes, 8192);
    CHECK_INT(c.stepfactor, 4);
    CHECK_STR(c.cluster, "lab");
    CHECK_STR(c.json_path, "out.json");
}

static void test_bad_input_is_one_line_usage_error(void)
{
    struct {
        const char *line, *expect;
        enum fb_status code;
    } cases[] = {
        {"fabric-coll all_reduce -b 64M -e 1M", "-b 64M is above -e 1M", FB_ERR_USAGE},
        {"fabric-coll all_reduce -b 0", "at least 1 byte", FB_ERR_USAGE},
        {"fabric-coll all_reduce -b -4K", "negative", FB_ERR_USAGE},
        {"fabric-coll all_reduce -d float128", "unknown datatype 'float128'", FB_ERR_USAGE},
        {"fabric-coll all_reduce -o mul", "unknown op 'mul'", FB_ERR_USAGE},
        {"fabric-coll allreduse", "unknown collective 'allreduse'", FB_ERR_USAGE},
        {"fabric-coll", "no collective given", FB_ERR_USAGE},
        {"fabric-coll all_reduce -g 65", "out of range", FB_ERR_USAGE},
        {"fabric-coll all_reduce --backend mpi -g 8", "the mpi backend runs one rank per process", FB_ERR_USAGE},
        {"fabric-coll all_reduce -t 8 -g 16", "128 ranks in one process, at most 64", FB_ERR_USAGE},
        {"fabric-coll all_reduce -x 3", "out of range", FB_ERR_USAGE},
        {"fabric-coll all_reduce --frobnicate", "unknown option '--frobnicate'", FB_ERR_USAGE},
        {"fabric-coll all_reduce -n", "needs a value", FB_ERR_USAGE},
        {"fabric-coll all_reduce --backend tpu", "unknown backend 'tpu'", FB_ERR_USAGE},
        {"fabric-coll all_reduce --backend mpi -G 10", "-G (CUDA graphs) needs the nccl backend", FB_ERR_USAGE},
        {"all_reduce_perf all_gather", "unexpected argument", FB_ERR_USAGE},
        {"fabric-coll all_reduce -i 0", "never advance", FB_ERR_USAGE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct coll_config c;
        struct fb_err err;
        CHECK_INT(parse(&c, &err, cases[i].line), cases[i].code);
        CHECK_CONTAINS(err.msg, cases[i].expect);
        CHECK(strchr(err.msg, '\n') == NULL);
    }
}

static void test_compat_flags_are_noted_not_silent(void)
{
    struct coll_config c;
    struct fb_err err;
    CHECK_INT(parse(&c, &err, "all_reduce_perf -p 1 -R 1 --backend mpi"), FB_OK);
    CHECK_INT(coll_config_notes(&c, NULL), 2);
    CHECK_INT(parse(&c, &err, "all_reduce_perf --backend mpi"), FB_OK);
    CHECK_INT(coll_config_notes(&c, NULL), 0);
}

static void test_options_echo_and_hash(void)
{
    struct coll_config a, b;
    struct fb_err err;
    CHECK_INT(parse(&a, &err, "fabric-coll all_reduce -b 1K -e 1M -f 2"), FB_OK);
    CHECK_INT(parse(&b, &err, "fabric-coll all_reduce --minbytes=1024 -e1M -f2"), FB_OK);
    CHECK(fb_opts_hash(coll_options, &a) == fb_opts_hash(coll_options, &b));
    CHECK_INT(parse(&b, &err, "fabric-coll all_reduce -b 1K -e 1M -f 2 -n 21"), FB_OK);
    CHECK(fb_opts_hash(coll_options, &a) != fb_opts_hash(coll_options, &b));
    json_object *j = fb_opts_to_json(coll_options, &a);
    int64_t v = 0;
    CHECK(fb_json_get_int64(j, "maxbytes", &v));
    CHECK_INT(v, 1 << 20);
    CHECK_STR(fb_json_get_string(j, "datatype"), "float");
    json_object_put(j);
}

static void test_plan_doubling_and_linear(void)
{
    struct fb_plan p;
    struct fb_err err = {0};
    CHECK_INT(fb_plan_sizes(1024, 16ULL << 30, 2, 1 << 20, &p, &err), FB_OK);
    CHECK_INT(p.count, 25);
    CHECK_INT(p.sizes[0], 1024);
    CHECK_INT(p.sizes[24], 16ULL << 30);
    CHECK(!p.linear_warning);
    fb_plan_free(&p);
    CHECK_INT(fb_plan_sizes(1 << 20, 4 << 20, 1, 1 << 20, &p, &err), FB_OK);
    CHECK_INT(p.count, 4);
    CHECK_INT(p.sizes[3], 4 << 20);
    fb_plan_free(&p);
    /* The classic trap: -b 1K -e 16G without -f is 16384 linear sizes. */
    CHECK_INT(fb_plan_sizes(1024, 16ULL << 30, 1, 1 << 20, &p, &err), FB_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "-f 2");
    fb_err_clear(&err);
    CHECK_INT(fb_plan_sizes(3, 100, 3, 1, &p, &err), FB_OK);
    CHECK_INT(p.count, 4); /* 3 9 27 81 */
    fb_plan_free(&p);
}

/* Sizes that align to the same bytes are one size: no duplicate rows. */
static void test_plan_drops_sizes_that_align_alike(void)
{
    struct fb_plan p;
    struct fb_err err = {0};
    const struct fb_collective *ar = fb_collective_find("all_reduce");
    CHECK_INT(fb_plan_sizes(1000, 1010, 1, 1, &p, &err), FB_OK);
    CHECK_INT(p.count, 11);
    fb_plan_dedupe(&p, ar, 4, 2); /* whole floats: 1000, 1004, 1008 */
    CHECK_INT(p.count, 3);
    CHECK_INT(p.merged, 8);
    CHECK_INT(p.sizes[0], 1000);
    CHECK_INT(p.sizes[1], 1004);
    CHECK_INT(p.sizes[2], 1008);
    fb_plan_free(&p);
    /* all_gather on 3 ranks: 16-byte blocks per rank, 48-byte steps. */
    const struct fb_collective *ag = fb_collective_find("all_gather");
    CHECK_INT(fb_plan_sizes(960, 1100, 1, 16, &p, &err), FB_OK);
    fb_plan_dedupe(&p, ag, 4, 3);
    for (int i = 1; i < p.count; i++)
        CHECK(ag->counts(p.sizes[i], 4, 3).bytes > ag->counts(p.sizes[i - 1], 4, 3).bytes);
    CHECK(p.merged > 0);
    fb_plan_free(&p);
    /* A doubling sweep has nothing to drop. */
    CHECK_INT(fb_plan_sizes(1024, 1 << 20, 2, 1, &p, &err), FB_OK);
    fb_plan_dedupe(&p, ar, 4, 8);
    CHECK_INT(p.count, 11);
    CHECK_INT(p.merged, 0);
    fb_plan_free(&p);
}

static void test_sizes_follow_nccl_tests_conventions(void)
{
    const struct fb_collective *ag = fb_collective_find("all_gather");
    struct fb_counts k = ag->counts(1 << 20, 4, 8);
    CHECK_INT(k.send, 32768);
    CHECK_INT(k.recv, 262144);
    CHECK_INT(k.param, 32768);
    CHECK_INT(k.bytes, 1 << 20); /* size = the gathered total */
    /* Blocks round down to 16 bytes per rank. */
    k = ag->counts(1000, 4, 3); /* 250 floats / 3 = 83, down to 80 */
    CHECK_INT(k.send, 80);
    CHECK_INT(k.bytes, 80 * 3 * 4);
    const struct fb_collective *rs = fb_collective_find("reduce_scatter");
    k = rs->counts(1 << 20, 2, 4);
    CHECK_INT(k.send, 524288);
    CHECK_INT(k.recv, 131072);
    CHECK_INT(k.bytes, 1 << 20);
    const struct fb_collective *ar = fb_collective_find("all_reduce_perf");
    k = ar->counts(1 << 20, 8, 16);
    CHECK_INT(k.param, 131072);
    CHECK_INT(k.bytes, 1 << 20);
    const struct fb_collective *a2a = fb_collective_find("alltoall");
    k = a2a->counts(1 << 20, 4, 4);
    CHECK_INT(k.param, 65536);
    CHECK_INT(k.send, 262144);
}

static void test_bus_bandwidth_factors(void)
{
    double t = 1e-3, bytes = 1e9; /* 1 GB in 1 ms = 1000 GB/s algBW */
    CHECK_NEAR(fb_algbw_GBps((size_t)bytes, t), 1000, 1e-12);
    CHECK_NEAR(fb_busbw_GBps(fb_collective_find("all_reduce"), (size_t)bytes, t, 16), 1875, 1e-12);
    CHECK_NEAR(fb_busbw_GBps(fb_collective_find("all_gather"), (size_t)bytes, t, 16), 937.5, 1e-12);
    CHECK_NEAR(fb_busbw_GBps(fb_collective_find("reduce_scatter"), (size_t)bytes, t, 4), 750, 1e-12);
    CHECK_NEAR(fb_busbw_GBps(fb_collective_find("alltoall"), (size_t)bytes, t, 2), 500, 1e-12);
    CHECK_NEAR(fb_busbw_GBps(fb_collective_find("broadcast"), (size_t)bytes, t, 8), 1000, 1e-12);
    CHECK_NEAR(fb_busbw_GBps(fb_collective_find("reduce"), (size_t)bytes, t, 8), 1000, 1e-12);
    CHECK_NEAR(fb_busbw_GBps(fb_collective_find("sendrecv"), (size_t)bytes, t, 8), 1000, 1e-12);
    /* One rank moves nothing across a bus. */
    CHECK_NEAR(fb_busbw_GBps(fb_collective_find("all_reduce"), (size_t)bytes, t, 1), 0, 0);
}

static void test_low_precision_conversions_are_exact(void)
{
    uint16_t buf[4];
    for (int v = -2048; v <= 2048; v += 7) {
        fb_store(FB_HALF, buf, 0, v);
        CHECK_INT((int)fb_load(FB_HALF, buf, 0), v);
    }
    for (int v = -256; v <= 256; v++) {
        fb_store(FB_BFLOAT16, buf, 1, v);
        CHECK_INT((int)fb_load(FB_BFLOAT16, buf, 1), v);
    }
    fb_store(FB_HALF, buf, 2, 0.5);
    CHECK_NEAR(fb_load(FB_HALF, buf, 2), 0.5, 0);
    fb_store(FB_HALF, buf, 2, 1e9); /* overflows to infinity, not garbage */
    CHECK(isinf(fb_load(FB_HALF, buf, 2)));
}

static void test_expected_sums_are_exact_and_wrap(void)
{
    /* Sums stay exactly representable: bfloat16 caps the per-rank value. */
    for (size_t i = 0; i < 5000; i++) {
        double want = fb_expected_reduce(FB_BFLOAT16, FB_SUM, 8, i);
        CHECK(want <= 256 && want == floor(want));
    }
    /* int8 sums wrap like the hardware, so saturation is caught. */
    double s = 0;
    for (int r = 0; r < 4; r++)
        s += fb_input_value(FB_INT8, FB_SUM, 4, r, 3);
    CHECK_NEAR(fb_expected_reduce(FB_INT8, FB_SUM, 4, 3), (double)(int8_t)(uint8_t)(int)s, 0);
    CHECK(s > 127); /* the test data does overflow int8 here */
    /* Products are 1, 2 or 3 regardless of rank count. */
    for (size_t i = 0; i < 30; i++)
        CHECK_NEAR(fb_expected_reduce(FB_HALF, FB_PROD, 13, i), 1 + (double)(i % 3), 0);
    CHECK_NEAR(fb_expected_reduce(FB_FLOAT, FB_AVG, 7, 6), 2, 0);
}

static void test_expected_reduction_is_periodic(void)
{
    enum fb_redop ops[] = {FB_SUM, FB_PROD, FB_MAX, FB_MIN, FB_AVG};
    for (size_t o = 0; o < 5; o++)
        for (size_t i = 0; i < 300; i += 7)
            CHECK_NEAR(fb_expected_reduce(FB_FLOAT, ops[o], 5, i),
                       fb_expected_reduce(FB_FLOAT, ops[o], 5, i + 3 * FB_EXPECT_PERIOD), 0);
}

static void test_validation_catches_saturation(void)
{
    /* What Open MPI's op/avx returns for an int8 sum that overflows. */
    double want = fb_expected_reduce(FB_INT8, FB_SUM, 4, 3);
    CHECK(!fb_value_matches(FB_INT8, FB_SUM, 127, want));
    CHECK(fb_value_matches(FB_INT8, FB_SUM, want, want));
    CHECK(fb_value_matches(FB_HALF, FB_AVG, 2.001, 2));
    CHECK(!fb_value_matches(FB_HALF, FB_AVG, 2.1, 2));
}

/* Element i of rank r's input in the collectives that move data. */
static double moved(int r, size_t i)
{
    return fb_coll_input(fb_collective(FB_BROADCAST), FB_FLOAT, FB_SUM, 4, r, i);
}

static void test_gather_expectations_place_blocks(void)
{
    const struct fb_collective *ag = fb_collective_find("all_gather");
    struct fb_counts k = ag->counts(4 * 64 * 4, 4, 4);
    double want;
    CHECK(fb_coll_expected(ag, &k, FB_FLOAT, FB_SUM, 4, 0, 0, 64 * 2 + 5, &want));
    CHECK_NEAR(want, moved(2, 5), 0);
    const struct fb_collective *a2a = fb_collective_find("alltoall");
    k = a2a->counts(4 * 64 * 4, 4, 4);
    CHECK(fb_coll_expected(a2a, &k, FB_FLOAT, FB_SUM, 4, 1, 0, 64 * 3 + 2, &want));
    CHECK_NEAR(want, moved(3, 64 * 1 + 2), 0);
    const struct fb_collective *red = fb_collective_find("reduce");
    CHECK(!fb_coll_expected(red, &k, FB_FLOAT, FB_SUM, 4, 1, 0, 0, &want));
    const struct fb_collective *sr = fb_collective_find("sendrecv");
    CHECK(fb_coll_expected(sr, &k, FB_FLOAT, FB_SUM, 4, 0, 0, 9, &want));
    CHECK_NEAR(want, moved(3, 9), 0);
}

static void test_inplace_layouts(void)
{
    const struct fb_collective *rs = fb_collective_find("reduce_scatter");
    struct fb_counts k = rs->counts(4096, 4, 4);
    size_t s = 1, r = 1;
    rs->inplace_offsets(&k, 2, FB_INPLACE_NCCL, &s, &r);
    CHECK_INT(s, 0);
    CHECK_INT(r, 2 * k.recv);
    rs->inplace_offsets(&k, 2, FB_INPLACE_MPI, &s, &r);
    CHECK_INT(r, 0);
    const struct fb_collective *ag = fb_collective_find("all_gather");
    k = ag->counts(4096, 4, 4);
    ag->inplace_offsets(&k, 3, FB_INPLACE_MPI, &s, &r);
    CHECK_INT(s, 3 * k.send);
    CHECK_INT(r, 0);
}

static void test_memory_fit_names_largest_size(void)
{
    struct fb_plan p;
    struct fb_err err = {0};
    CHECK_INT(fb_plan_sizes(1 << 20, 1ULL << 30, 2, 1, &p, &err), FB_OK);
    const struct fb_collective *ar = fb_collective_find("all_reduce");
    /* 4 ranks sharing 1 GiB: 2 buffers x 4 ranks x size <= 1 GiB -> 128M. */
    int fit = fb_plan_largest_fit(&p, ar, 4, 4, 4, 1ULL << 30, 0);
    CHECK(fit >= 0);
    CHECK_INT(p.sizes[fit], 128 << 20);
    CHECK_INT(fb_plan_largest_fit(&p, ar, 4, 4, 4, 1 << 20, 0), -1);
    CHECK_INT(fb_plan_largest_fit(&p, ar, 4, 4, 1, 1ULL << 40, 0), p.count - 1);
    fb_plan_free(&p);
}

static void test_table_number_cells(void)
{
    char b[16];
    fb_table_number(12.3456, 7, b);
    CHECK_STR(b, "  12.35");
    fb_table_number(1234.56, 7, b);
    CHECK_STR(b, "1234.56");
    fb_table_number(12345.6, 7, b);
    CHECK_STR(b, "12345.6");
    fb_table_number(1234567.0, 7, b);
    CHECK_STR(b, "1234567");
    fb_table_number(123456789.0, 7, b);
    CHECK_STR(b, "1.2e+08");
    fb_table_number(338.82, 6, b);
    CHECK_STR(b, "338.82");
}

/* The table row of a float sum all_reduce of `bytes` on `nranks`, with the
 * defaults' columns; the caller frees it. */
static char *all_reduce_row(uint64_t bytes, int nranks, const struct fb_measurement *oop,
                            const struct fb_measurement *ip)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    struct fb_call call = {0};
    call.coll = fb_collective_find("all_reduce");
    call.dtype = FB_FLOAT;
    call.op = FB_SUM;
    call.counts = call.coll->counts(bytes, 4, nranks);
    struct coll_config cfg;
    coll_config_defaults(&cfg);
    fb_table_row(f, &cfg, &call, oop, ip);
    fclose(f);
    return text;
}

static void test_table_row_columns(void)
{
    struct fb_measurement oop = {.time_us = 47535, .algbw_GBps = 180.71, .busbw_GBps = 338.82, .wrong = 0};
    struct fb_measurement ip = {.time_us = 47743, .algbw_GBps = 179.92, .busbw_GBps = 337.35, .wrong = -1};
    char *text = all_reduce_row(8589934592ULL, 16, &oop, &ip);
    /* v2.19 cells: as many decimals as fit in 7 characters. */
    CHECK_STR(text, "  8589934592    2147483648     float     sum      -1  47535.0  180.71  338.82       0"
                    "  47743.0  179.92  337.35    N/A\n");
    free(text);
}

/* #wrong is the exact count: %g would print a million as 1e+06 (a reader
 * of the digits sees 1) and 1234567 as 1.23457e+06. */
static void test_table_wrong_count_is_exact(void)
{
    struct fb_measurement oop = {.time_us = 100, .algbw_GBps = 1, .busbw_GBps = 1, .wrong = 1000000};
    struct fb_measurement ip = {.time_us = 100, .algbw_GBps = 1, .busbw_GBps = 1, .wrong = 1234567};
    char *text = all_reduce_row(1ULL << 30, 2, &oop, &ip);
    CHECK(strstr(text, " 1000000  ") != NULL);
    CHECK(strstr(text, " 1234567\n") != NULL);
    CHECK(strstr(text, "e+06") == NULL);
    free(text);
}

static json_object *row(uint64_t bytes, double oop_bw, double ip_bw, int wrong)
{
    json_object *r = json_object_new_object(), *o = json_object_new_object(), *i = json_object_new_object();
    json_object_object_add(r, "bytes", json_object_new_uint64(bytes));
    json_object_object_add(o, "busbw_GBps", json_object_new_double(oop_bw));
    json_object_object_add(o, "wrong", json_object_new_int(wrong));
    json_object_object_add(i, "busbw_GBps", json_object_new_double(ip_bw));
    json_object_object_add(i, "wrong", json_object_new_int(0));
    json_object_object_add(r, "out_of_place", o);
    json_object_object_add(r, "in_place", i);
    return r;
}

static void test_summary_separates_small_sizes(void)
{
    json_object *rows = json_object_new_array();
    json_object_array_add(rows, row(1024, 0.1, 0.3, 0));
    json_object_array_add(rows, row(1 << 20, 10, 12, 2));
    json_object_array_add(rows, row(16 << 20, 40, 38, 0));
    json_object *s = fb_summary_of_rows(rows, 4);
    double v = 0;
    int64_t n = 0;
    CHECK(fb_json_get_double(s, "avg_busbw_GBps", &v));
    CHECK_NEAR(v, (0.1 + 0.3 + 10 + 12 + 40 + 38) / 6, 1e-12);
    CHECK(fb_json_get_double(s, "avg_busbw_ge_1MiB_GBps", &v));
    CHECK_NEAR(v, 25, 1e-12);
    CHECK(fb_json_get_double(s, "peak_busbw_GBps", &v));
    CHECK_NEAR(v, 40, 0);
    CHECK(fb_json_get_double(s, "busbw_at_largest_GBps", &v));
    CHECK_NEAR(v, 40, 0);
    CHECK(fb_json_get_int64(s, "wrong_total", &n));
    CHECK_INT(n, 2);
    CHECK(fb_json_get_int64(s, "sizes_done", &n));
    CHECK_INT(n, 3);
    json_object_put(s);
    json_object_put(rows);
}

static void test_budget_shares_what_is_left(void)
{
    /* 10 s left over 5 sizes: 2 s each; a call costs 1 ms on each of two
     * placements: 1000 iterations fit. */
    CHECK_INT(fb_budget_iterations(10, 5, 1e-3, 2, 5000), 1000);
    CHECK_INT(fb_budget_iterations(10, 5, 1e-3, 2, 20), 20);            /* -n caps */
    CHECK_INT(fb_budget_iterations(0.001, 5, 1.0, 2, 20), FB_BUDGET_MIN_ITERS); /* floor */
    CHECK_INT(fb_budget_iterations(-3, 2, 1e-3, 2, 20), FB_BUDGET_MIN_ITERS);   /* overrun */
    CHECK_INT(fb_budget_iterations(10, 0, 1e-3, 2, 50), 50);
}

static void test_fallback_band_and_socket(void)
{
    struct fb_fallback_rule multi = {.band_GBps = 8, .nodes = 2}, single = {.band_GBps = 8, .nodes = 1};
    char why[256] = "";
    CHECK(fb_fallback_suspected(&multi, 64ULL << 20, 3.8, 0, "NCCL's network", why, sizeof why));
    CHECK_STR(why, "TCP fallback suspected at 64M: 3.8 GB/s busBW on NCCL's network, within the fallback band (<= 8.0 GB/s)");
    CHECK(fb_fallback_suspected(&multi, 1ULL << 30, 300, 1, "NCCL's network", why, sizeof why));
    CHECK_STR(why, "TCP fallback suspected at 1G: 300.0 GB/s busBW on NET/Socket");
    CHECK(!fb_fallback_suspected(&multi, 32ULL << 20, 0.5, 1, "x", why, sizeof why)); /* < 64M */
    CHECK(!fb_fallback_suspected(&multi, 64ULL << 20, 8.01, 0, "x", why, sizeof why));
    CHECK(fb_fallback_suspected(&multi, 64ULL << 20, 8.0, 0, "x", why, sizeof why)); /* at the band */
    CHECK(!fb_fallback_suspected(&single, 1ULL << 30, 0.1, 1, "x", why, sizeof why)); /* one node */
}

static void test_socket_seen_in_log(void)
{
    char path[] = "/tmp/fbsockXXXXXX";
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");
    fputs("h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA\n", f);
    fclose(f);
    CHECK(!fb_log_shows_socket(path));
    f = fopen(path, "a");
    fputs("h:1:2 [0] NCCL INFO Channel 01/0 : 1[0] -> 0[0] [receive] via NET/Socket/0\n", f);
    fclose(f);
    CHECK(fb_log_shows_socket(path));
    unlink(path);
    CHECK(!fb_log_shows_socket("/nonexistent"));
}

static json_object *timed_row(uint64_t bytes, double t_oop, double t_ip)
{
    json_object *r = json_object_new_object(), *o = json_object_new_object(), *i = json_object_new_object();
    json_object_object_add(r, "bytes", json_object_new_uint64(bytes));
    json_object_object_add(o, "time_us", json_object_new_double(t_oop));
    json_object_object_add(i, "time_us", json_object_new_double(t_ip));
    json_object_object_add(r, "out_of_place", o);
    json_object_object_add(r, "in_place", i);
    return r;
}

static void test_stability_flags_noisy_sizes(void)
{
    json_object *rows = json_object_new_array();
    /* 1K steady, 1M noisy in-place (10 vs 20 us: CV ~ 40 %). */
    for (int run = 0; run < 3; run++) {
        json_object_array_add(rows, timed_row(1024, 10, 10));
        json_object_array_add(rows, timed_row(1 << 20, 100, run == 1 ? 20 : 10));
    }
    json_object *st = fb_stability_of_rows(rows, 5);
    CHECK(st != NULL);
    int64_t n = 0;
    CHECK(fb_json_get_int64(st, "unstable_sizes", &n));
    CHECK_INT(n, 1);
    json_object *sizes = NULL;
    CHECK(json_object_object_get_ex(st, "sizes", &sizes));
    json_object *big = json_object_array_get_idx(sizes, 1);
    double cv = 0;
    CHECK(fb_json_get_double(big, "time_cv_pct", &cv));
    CHECK_NEAR(cv, 43.30127018922193, 1e-9); /* sample sd of 10,20,10 over mean 13.33 */
    bool flag = false;
    CHECK(fb_json_get_bool(json_object_array_get_idx(sizes, 0), "unstable", &flag));
    CHECK(!flag);
    json_object_put(st);
    json_object_put(rows);
    /* One run: nothing to say. */
    rows = json_object_new_array();
    json_object_array_add(rows, timed_row(1024, 10, 10));
    CHECK(fb_stability_of_rows(rows, 5) == NULL);
    json_object_put(rows);
}

int main(void)
{
    RUN(test_defaults_match_nccl_tests);
    RUN(test_nccl_tests_flags_parse);
    RUN(test_subcommand_and_long_options);
    RUN(test_bad_input_is_one_line_usage_error);
    RUN(test_compat_flags_are_noted_not_silent);
    RUN(test_options_echo_and_hash);
    RUN(test_plan_doubling_and_linear);
    RUN(test_plan_drops_sizes_that_align_alike);
    RUN(test_sizes_follow_nccl_tests_conventions);
    RUN(test_bus_bandwidth_factors);
    RUN(test_low_precision_conversions_are_exact);
    RUN(test_expected_sums_are_exact_and_wrap);
    RUN(test_expected_reduction_is_periodic);
    RUN(test_validation_catches_saturation);
    RUN(test_gather_expectations_place_blocks);
    RUN(test_inplace_layouts);
    RUN(test_memory_fit_names_largest_size);
    RUN(test_table_number_cells);
    RUN(test_table_row_columns);
    RUN(test_table_wrong_count_is_exact);
    RUN(test_summary_separates_small_sizes);
    RUN(test_budget_shares_what_is_left);
    RUN(test_fallback_band_and_socket);
    RUN(test_socket_seen_in_log);
    RUN(test_stability_flags_noisy_sizes);
    return fbt_done();
}
