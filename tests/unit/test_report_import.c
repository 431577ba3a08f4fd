/* Importers: nccl-tests text (2.19 with and without the root column and
 * the "Collective test" lines), nccl-tests -J JSON, perftest text and
 * --out_json, each from hand-made files written from the format facts;
 * the tables of every released nccl-tests layout and rule, generated from
 * those rules; figures no measurement gives, refused. */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "report_fixture.h"
#include "report/html_svg.h"
#include "report/import.h"
#include "core/files.h"
#include "core/text.h"
#include "nccl/collective.h"

#define NCCLT "tests/fixtures/report/ncclt/"
#define PERF "tests/fixtures/report/perftest/"

static enum fb_status import_file(const char *path, const struct fb_import_opts *o, struct fb_import_out *out,
                                  struct fb_err *err)
{
    char *text = NULL;
    size_t len = 0;
    enum fb_status st = fb_read_text_file(path, &text, &len, err);
    if (st != FB_OK)
        return st;
    struct fb_import_opts dflt = {.mtime = 1700000000};
    st = fb_import_text(path, text, len, FB_IMPORT_AUTO, o ? o : &dflt, out, err);
    free(text);
    return st;
}

/* The document must load as a result: imports are only useful if every
 * other command reads them. */
static bool loads(json_object *doc, struct fb_result *r)
{
    struct fb_err err = {0};
    if (fb_result_from_json(json_object_get(doc), "imported.json", r, &err) != FB_OK) {
        printf("# imported document does not load: %s\n", err.msg);
        return false;
    }
    return true;
}

static json_object *at(json_object *o, const char *path)
{
    /* "a.b.c" with numeric parts as array indexes */
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    char *save = NULL;
    for (char *k = strtok_r(buf, ".", &save); k != NULL && o != NULL; k = strtok_r(NULL, ".", &save)) {
        if (k[0] >= '0' && k[0] <= '9')
            o = json_object_is_type(o, json_type_array) ? json_object_array_get_idx(o, (size_t)atoi(k)) : NULL;
        else
            o = json_object_object_get(o, k);
    }
    return o;
}

static const char *s_at(json_object *o, const char *path)
{
    json_object *v = at(o, path);
    return v ? json_object_get_string(v) : "(null)";
}

static double d_at(json_object *o, const char *path)
{
    json_object *v = at(o, path);
    return v ? json_object_get_double(v) : NAN;
}

static void test_nccl_tests_2_19_with_nccl_info(void)
{
    struct fb_import_out out = {0};
    struct fb_err err = {0};
    CHECK_INT(import_file(NCCLT "nccl-tests-2.19-socket-16rank.txt", NULL, &out, &err), FB_OK);
    CHECK_INT(out.n, 1);
    json_object *d = out.docs[0];
    CHECK_STR(s_at(d, "collective"), "all_reduce");
    CHECK_STR(s_at(d, "tool.name"), "nccl-tests");
    CHECK_STR(s_at(d, "tool.version"), "2.13.11");
    CHECK_STR(s_at(d, "versions.nccl"), "2.21.5");
    CHECK_STR(s_at(d, "topology.ranks"), "16");
    CHECK_STR(s_at(d, "topology.nodes"), "2");
    CHECK_STR(s_at(d, "topology.ranks_per_node"), "8");
    CHECK_STR(s_at(d, "devices.9.host"), "a3-node-1");
    CHECK_STR(s_at(d, "devices.9.local_rank"), "1");
    CHECK_STR(s_at(d, "devices.9.pci_bus_id"), "0000:15:00");
    CHECK_STR(s_at(d, "devices.9.name"), "NVIDIA H100 80GB HBM3");
    CHECK_STR(s_at(d, "dtype"), "float");
    CHECK_STR(s_at(d, "op"), "sum");
    CHECK_STR(s_at(d, "root"), "-1");
    CHECK_STR(s_at(d, "complete"), "true");
    CHECK_STR(s_at(d, "config.iters"), "20");
    CHECK_STR(s_at(d, "rows.0.bytes"), "1024");
    CHECK_STR(s_at(d, "rows.0.count"), "256");
    CHECK_STR(s_at(d, "rows.0.iterations"), "20");
    CHECK_NEAR(d_at(d, "rows.0.out_of_place.time_us"), 180.49, 1e-12);
    CHECK_STR(s_at(d, "rows.0.in_place.wrong"), "0");
    CHECK_STR(s_at(d, "rows.20.bytes"), "1073741824");
    CHECK_NEAR(d_at(d, "rows.20.out_of_place.busbw_GBps"), 3.9, 1e-12);
    CHECK_NEAR(d_at(d, "import.avg_bus_bandwidth_GBps"), 2.21429, 1e-12);
    CHECK_STR(s_at(d, "summary.sizes_done"), "21");
    /* The INFO lines in the output say the run used sockets. */
    CHECK_STR(s_at(d, "transport.net"), "Socket");
    CHECK_STR(s_at(d, "transport.per_rank.1.host"), "a3-node-1");
    struct fb_result r;
    CHECK(loads(d, &r));
    struct fb_summary s;
    fb_summary_compute(r.rows, r.nrows, &s);
    /* Our average over every row equals the footer's (to its print precision). */
    CHECK_NEAR(s.avg_busbw, 2.21429, 1e-4);
    fb_result_free(&r);
    fb_import_out_free(&out);
}

static void test_old_format_without_root_and_markers(void)
{
    struct fb_import_out out = {0};
    struct fb_err err = {0};
    CHECK_INT(import_file(NCCLT "old-format-8rank-all_gather.txt", NULL, &out, &err), FB_OK);
    CHECK_INT(out.n, 1);
    json_object *d = out.docs[0];
    CHECK_STR(s_at(d, "collective"), "all_gather");
    CHECK_STR(s_at(d, "topology.ranks"), "8");
    CHECK_STR(s_at(d, "topology.nodes"), "1");
    CHECK_STR(s_at(d, "devices.3.pci_bus_id"), "0x37");
    CHECK_STR(s_at(d, "devices.3.name"), "A100-SXM4-80GB");
    CHECK_STR(s_at(d, "op"), "none");
    CHECK_STR(s_at(d, "rows.0.bytes"), "32");
    /* The old "error" column is a deviation, not a count of wrong elements. */
    CHECK_STR(s_at(d, "rows.0.out_of_place.wrong"), "(null)");
    CHECK_STR(s_at(d, "rows.22.out_of_place.busbw_GBps"), "176.75");
    CHECK_STR(s_at(d, "complete"), "true");
    CHECK_STR(s_at(d, "transport"), "(null)");
    struct fb_result r;
    CHECK(loads(d, &r));
    fb_result_free(&r);
    fb_import_out_free(&out);
}

static void test_one_file_several_collectives(void)
{
    struct fb_import_out out = {0};
    struct fb_err err = {0};
    CHECK_INT(import_file(NCCLT "nccl-tests-two-collectives.txt", NULL, &out, &err), FB_OK);
    CHECK_INT(out.n, 2);
    CHECK_STR(s_at(out.docs[0], "collective"), "all_reduce");
    CHECK_STR(s_at(out.docs[1], "collective"), "all_gather");
    CHECK_STR(s_at(out.docs[0], "rows.0.out_of_place.wrong"), "0");
    /* -c 0: "N/A" means not checked, which is null, not zero. */
    CHECK_STR(s_at(out.docs[1], "rows.0.out_of_place.wrong"), "(null)");
    CHECK_STR(s_at(out.docs[1], "config.stepfactor"), "4");
    CHECK_STR(s_at(out.docs[1], "summary.sizes_planned"), "4");
    CHECK_STR(s_at(out.docs[1], "devices.7.name"), "NVIDIA H200");
    fb_import_out_free(&out);
}

static void test_killed_run_is_kept_incomplete(void)
{
    struct fb_import_out out = {0};
    struct fb_err err = {0};
    CHECK_INT(import_file(NCCLT "nccl-tests-killed.txt", NULL, &out, &err), FB_OK);
    json_object *d = out.docs[0];
    CHECK_STR(s_at(d, "complete"), "false");
    CHECK_CONTAINS(s_at(d, "fault.message"), "Test NCCL failure");
    CHECK_STR(s_at(d, "summary.sizes_done"), "6");
    CHECK_STR(s_at(d, "summary.sizes_planned"), "11");
    CHECK_STR(s_at(d, "end_time"), "(null)");
    fb_import_out_free(&out);
}

static void test_repeated_sweeps_number_their_runs(void)
{
    const char text[] =
        "# nThread 1 nGpus 1 minBytes 1024 maxBytes 2048 step: 2(factor) warmup iters: 1 iters: 5 agg iters: 2 validation: 0 graph: 0\n"
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
        "        1024           256     float     sum      -1    10.00    0.10    0.15    N/A    10.00    0.10    0.15    N/A\n"
        "        2048           512     float     sum      -1    11.00    0.19    0.28    N/A    11.00    0.19    0.28    N/A\n"
        "        1024           256     float     sum      -1    12.00    0.09    0.13    N/A    12.00    0.09    0.13    N/A\n"
        "        2048           512     float     sum      -1    13.00    0.16    0.24    N/A    13.00    0.16    0.24    N/A\n"
        "# Out of bounds values : 0 OK\n"
        "# Avg bus bandwidth    : 0.2 \n";
    struct fb_import_opts o = {.collective = "all_reduce", .mtime = 0};
    struct fb_import_out out = {0};
    struct fb_err err = {0};
    CHECK_INT(fb_import_text("repeat.txt", text, sizeof text - 1, FB_IMPORT_AUTO, &o, &out, &err), FB_OK);
    json_object *d = out.docs[0];
    CHECK_STR(s_at(d, "rows.1.run"), "0");
    CHECK_STR(s_at(d, "rows.2.run"), "1");
    CHECK_STR(s_at(d, "rows.3.run"), "1");
    CHECK_STR(s_at(d, "rows.3.iterations"), "10");
    CHECK_STR(s_at(d, "config.warmup_iters"), "1");
    CHECK_STR(s_at(d, "config.agg_iters"), "2");
    CHECK_STR(s_at(d, "start_time"), "1970-01-01T00:00:00Z");
    /* No device lines: busBW/algBW = 2(n-1)/n = 1.5 says four ranks. */
    CHECK_STR(s_at(d, "topology.ranks"), "4");
    fb_import_out_free(&out);
}

static void test_header_without_warmup_or_agg(void)
{
    const char text[] = "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) iters: 50 validation: 1\n"
                        "           8             2     float     sum      -1     5.10    0.00    0.00      0     5.02    0.00    0.00      0\n"
                        "# Avg bus bandwidth    : 0 \n";
    struct fb_import_opts o = {.collective = "all_reduce", .mtime = 0};
    struct fb_import_out out = {0};
    struct fb_err err = {0};
    CHECK_INT(fb_import_text("h.txt", text, sizeof text - 1, FB_IMPORT_NCCLT_TEXT, &o, &out, &err), FB_OK);
    CHECK_STR(s_at(out.docs[0], "config.iters"), "50");
    CHECK_STR(s_at(out.docs[0], "config.agg_iters"), "1");
    CHECK_STR(s_at(out.docs[0], "rows.0.iterations"), "50");
    fb_import_out_free(&out);
}

static void test_bad_nccl_tests_text(void)
{
    struct fb_import_out out = {0};
    struct fb_err err = {0};
    CHECK_INT(import_file(NCCLT "nccl-tests-interleaved.txt", NULL, &out, &err), FB_INVALID);
    CHECK_CONTAINS(err.msg, "INVALID: ");
    CHECK_CONTAINS(err.msg, "2 independent 1-rank runs");
    CHECK_INT(out.n, 0);
    fb_err_clear(&err);
    /* Rows alone can prove the collective: sum, no root, busBW/algBW 1.5. */
    CHECK_INT(import_file(NCCLT "table-only.txt", NULL, &out, &err), FB_OK);
    CHECK_INT(out.n, 1);
    CHECK_STR(fb_json_get_string(out.docs[0], "collective"), "all_reduce");
    CHECK_CONTAINS(json_object_to_json_string(fb_json_member(out.docs[0], "warnings")),
                   "collective inferred from the rows: all_reduce");
    fb_import_out_free(&out);
    /* ... or leave two: all_gather and alltoall print the same rows. */
    CHECK_INT(import_file(NCCLT "table-rows-fit-two.txt", NULL, &out, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "its rows fit all_gather or alltoall");
    CHECK_CONTAINS(err.msg, "--collective");
    fb_err_clear(&err);
    struct fb_import_opts o = {.collective = "all_reduce", .mtime = 0};
    CHECK_INT(import_file(NCCLT "table-only.txt", &o, &out, &err), FB_OK);
    CHECK_STR(s_at(out.docs[0], "topology.ranks"), "4");
    CHECK_CONTAINS(json_object_to_json_string(at(out.docs[0], "warnings")), "no column header");
    fb_import_out_free(&out);
    const char cut[] = "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 1 iters: 1 agg iters: 1 validation: 1 graph: 0\n"
                       "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
                       "           8             2     float     sum      -1     5.1\n";
    fb_err_clear(&err);
    CHECK_INT(fb_import_text("cut_all_reduce.txt", cut, sizeof cut - 1, FB_IMPORT_NCCLT_TEXT, &o, &out, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "cut short");
    const char junk[] = "# nThread 1 nGpus 1\n           8             2     float     sum      -1     5.1  fast   0.00      0     5.0    0.00    0.00      0\n";
    fb_err_clear(&err);
    CHECK_INT(fb_import_text("junk_all_reduce.txt", junk, sizeof junk - 1, FB_IMPORT_NCCLT_TEXT, &o, &out, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "not a number");
    const char nothing[] = "hello\nworld\n";
    fb_err_clear(&err);
    CHECK_INT(fb_import_text("x.txt", nothing, sizeof nothing - 1, FB_IMPORT_NCCLT_TEXT, &o, &out, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "no nccl-tests table");
    fb_err_clear(&err);
    CHECK_INT(fb_import_text("x.txt", nothing, sizeof nothing - 1, FB_IMPORT_AUTO, &o, &out, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "--format");
    CHECK_INT(out.n, 0);
}

static void test_nccl_tests_json(void)
{
    struct fb_import_out out = {0};
    struct fb_err err = {0};
    CHECK_INT(import_file(NCCLT "all_reduce_perf-J.json", NULL, &out, &err), FB_OK);
    CHECK_INT(out.n, 1);
    json_object *d = out.docs[0];
    CHECK_STR(s_at(d, "collective"), "all_reduce");
    CHECK_STR(s_at(d, "versions.nccl"), "2.23.4");
    CHECK_STR(s_at(d, "topology.ranks"), "4");
    CHECK_STR(s_at(d, "topology.nodes"), "2");
    CHECK_STR(s_at(d, "time_reduction"), "min");
    CHECK_STR(s_at(d, "root"), "-1");
    CHECK_STR(s_at(d, "config.stepfactor"), "4");
    CHECK_CONTAINS(s_at(d, "tool.invoked_as"), "all_reduce_perf -b 1M");
    /* Only the variables that explain a result, never the rest of the environment. */
    CHECK_STR(s_at(d, "env.NCCL_IB_HCA"), "=mlx5_0,mlx5_1");
    CHECK_STR(s_at(d, "env.OMPI_MCA_btl"), "tcp,self");
    CHECK(at(d, "env.AWS_SECRET_ACCESS_KEY") == NULL);
    CHECK(at(d, "env.HOME") == NULL);
    /* "nan" strings become nulls. */
    CHECK_STR(s_at(d, "rows.2.in_place.busbw_GBps"), "(null)");
    CHECK_NEAR(d_at(d, "rows.2.out_of_place.busbw_GBps"), 55.797593, 1e-12);
    CHECK_NEAR(d_at(d, "import.avg_bus_bandwidth_GBps"), 47.864884, 1e-12);
    CHECK_STR(s_at(d, "complete"), "true");
    struct fb_result r;
    CHECK(loads(d, &r));
    fb_result_free(&r);
    fb_import_out_free(&out);
    fb_err_clear(&err);
    CHECK_INT(import_file(NCCLT "all_gather_perf-J-killed.json", NULL, &out, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "ends early");
}

static void test_perftest_text(void)
{
    struct fb_import_out out = {0};
    struct fb_err err = {0};
    CHECK_INT(import_file(PERF "ib_write_bw-report_gbits.txt", NULL, &out, &err), FB_OK);
    json_object *d = out.docs[0];
    CHECK_STR(s_at(d, "kind"), "probe");
    CHECK_STR(s_at(d, "tool.name"), "perftest");
    CHECK_STR(s_at(d, "import.test"), "rdma_write_bw");
    CHECK_STR(s_at(d, "endpoints.0.device"), "mlx5_3");
    CHECK_STR(s_at(d, "endpoints.0.lid"), "42");
    CHECK_STR(s_at(d, "endpoints.1.lid"), "49");
    CHECK_STR(s_at(d, "config.qps"), "4");
    CHECK_STR(s_at(d, "config.cq_moderation"), "100");
    CHECK_NEAR(d_at(d, "links.0.avg_Gbps"), 391.42, 1e-12);
    CHECK_NEAR(d_at(d, "links.0.peak_Gbps"), 393.71, 1e-12);
    CHECK_STR(s_at(d, "links.0.messages"), "80000");
    /* The server prints "Waiting for client": data flowed remote -> local. */
    CHECK_STR(s_at(d, "links.0.src.host"), "remote");
    fb_import_out_free(&out);
    CHECK_INT(import_file(PERF "ib_write_bw-all-sizes-roce.txt", NULL, &out, &err), FB_OK);
    d = out.docs[0];
    CHECK_INT(json_object_array_length(at(d, "links")), 4);
    CHECK_STR(s_at(d, "endpoints.0.link_layer"), "Ethernet");
    CHECK_STR(s_at(d, "config.gid_index"), "3");
    CHECK_STR(s_at(d, "links.0.src.host"), "local");
    /* MB/sec is 2^20 bytes per second: 23419.87 of them are 196.46 Gb/s. */
    double gbps = json_object_get_double(at(d, "links.3.avg_Gbps"));
    CHECK_NEAR(gbps, 23419.87 * 1048576 * 8 / 1e9, 1e-9);
    CHECK_STR(s_at(d, "import.units_in_input"), "MiB/sec");
    fb_import_out_free(&out);
    CHECK_INT(import_file(PERF "ib_write_lat.txt", NULL, &out, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "latency");
}

static void test_perftest_json_units(void)
{
    struct fb_import_out out = {0};
    struct fb_err err = {0};
    /* No unit in the file: BW / (size x rate) tells Gb/s from MiB/s. */
    CHECK_INT(import_file(PERF "perftest_out.json", NULL, &out, &err), FB_OK);
    CHECK_NEAR(d_at(out.docs[0], "links.0.avg_Gbps"), 392.15, 1e-12);
    CHECK_STR(s_at(out.docs[0], "endpoints.0.memory.kind"), "gpu");
    CHECK_STR(s_at(out.docs[0], "import.units_in_input"), "Gb/sec");
    fb_import_out_free(&out);
    /* 1 GiB messages: a rate below the six printed digits, either unit. */
    const char ambiguous[] = "{\"test_info\": {\"test\": \"RDMA_Write_BW_Test\"}, \"results\": "
                             "{\"MsgSize\": 1073741824, \"n_iterations\": 5, \"BW_peak\": 100, \"BW_average\": 99, \"MsgRate\": 0}}";
    struct fb_import_opts o = {.mtime = 0};
    CHECK_INT(fb_import_text("p.json", ambiguous, sizeof ambiguous - 1, FB_IMPORT_AUTO, &o, &out, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "--units");
    o.units = "MBps";
    fb_err_clear(&err);
    CHECK_INT(fb_import_text("p.json", ambiguous, sizeof ambiguous - 1, FB_IMPORT_AUTO, &o, &out, &err), FB_OK);
    CHECK_NEAR(json_object_get_double(at(out.n ? out.docs[0] : NULL, "links.0.avg_Gbps")), 99 * 1048576.0 * 8 / 1e9, 1e-12);
    fb_import_out_free(&out);
    o.units = "furlongs";
    fb_err_clear(&err);
    CHECK_INT(fb_import_text("p.json", ambiguous, sizeof ambiguous - 1, FB_IMPORT_AUTO, &o, &out, &err), FB_ERR_USAGE);
}

static void test_format_detection(void)
{
    struct {
        const char *path;
        enum fb_import_format f;
    } cases[] = {
        {NCCLT "nccl-tests-2.19-socket-16rank.txt", FB_IMPORT_NCCLT_TEXT},
        {NCCLT "old-format-8rank-all_gather.txt", FB_IMPORT_NCCLT_TEXT},
        {NCCLT "table-only.txt", FB_IMPORT_NCCLT_TEXT},
        {NCCLT "all_reduce_perf-J.json", FB_IMPORT_NCCLT_JSON},
        {NCCLT "all_gather_perf-J-killed.json", FB_IMPORT_NCCLT_JSON},
        {PERF "ib_write_bw-report_gbits.txt", FB_IMPORT_PERFTEST_TEXT},
        {PERF "ib_write_lat.txt", FB_IMPORT_PERFTEST_TEXT},
        {PERF "perftest_out.json", FB_IMPORT_PERFTEST_JSON},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *text = NULL;
        size_t len = 0;
        struct fb_err err = {0};
        CHECK_INT(fb_read_text_file(cases[i].path, &text, &len, &err), FB_OK);
        enum fb_import_format f = FB_IMPORT_AUTO;
        CHECK_INT(fb_import_detect(cases[i].path, text, len, &f, &err), FB_OK);
        if (f != cases[i].f)
            printf("#   %s detected as %s\n", cases[i].path, fb_import_format_name(f));
        CHECK_INT(f, cases[i].f);
        free(text);
    }
    struct fb_err err = {0};
    enum fb_import_format f;
    CHECK_INT(fb_import_detect("r.json", "{\"schema\": \"fabric-bench.result\"}", 33, &f, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "already a fabric-bench result");
    CHECK_INT(fb_import_format_parse("nccl-tests-json", &f, &err), FB_OK);
    CHECK_INT(f, FB_IMPORT_NCCLT_JSON);
    CHECK_INT(fb_import_format_parse("csv", &f, &err), FB_ERR_USAGE);
}

/* Rows that cannot be what the collective printed are refused with their
 * line: a count that does not fit the size, a busBW that is not algBW x
 * the bus factor. The same rows, whole, import. */
static void test_damaged_rows_are_refused_with_their_line(void)
{
    const char *head = "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n"
                       "#  Rank  0 Group  0 Pid 1 on a device  0 [0x1b] NVIDIA H100 80GB HBM3\n"
                       "#  Rank  1 Group  0 Pid 1 on b device  0 [0x1b] NVIDIA H100 80GB HBM3\n"
                       "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n";
    static const struct {
        const char *rows, *want;
    } cases[] = {
        {"     1048576        262144     float     sum      -1    93.64   11.20   11.20      0    94.59   11.09   11.09      0\n"
         "     2097152        524288     float     sum      -1   172.29   12.17   12.17      0   174.03   12.05   12.05      0\n",
         NULL},
        {"     1048576        262144     float     sum      -1    93.64   11.20   11.20      0    94.59   11.09   11.09      0\n"
         "     2097152        524289     float     sum      -1   172.29   12.17   12.17      0   174.03   12.05   12.05      0\n",
         "all_reduce.txt, line 6: count 524289 does not fit 2097152 bytes of float"},
        {"     1048576        262144     float     sum      -1    93.64   11.20   11.20      0    94.59   11.09   11.09      0\n"
         "     2097152        524288     float     sum      -1   172.29   12.17   12.17      0   174.03   12.05   18.08      0\n",
         "all_reduce.txt, line 6: busBW 18.08 is not algBW 12.05 x 1.0000"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[2048];
        snprintf(text, sizeof text, "%s%s", head, cases[i].rows);
        struct fb_import_opts o = {.mtime = 0};
        struct fb_import_out out = {0};
        struct fb_err err = {0};
        enum fb_status st = fb_import_text("all_reduce.txt", text, strlen(text), FB_IMPORT_AUTO, &o, &out, &err);
        if (cases[i].want == NULL) {
            CHECK_INT(st, FB_OK);
            CHECK_INT(out.n, 1);
        } else {
            CHECK_INT(st, FB_ERR_INPUT);
            CHECK_CONTAINS(err.msg, cases[i].want);
            CHECK_INT(out.n, 0);
        }
        fb_import_out_free(&out);
    }
}

/* One table wearing everything launchers and terminals add: kubectl
 * --timestamps, srun -l, mpirun --tag-output, ANSI colour, tabs, CRLF. */
static void test_decorated_lines_read_as_plain(void)
{
    struct fb_import_out out = {0};
    struct fb_err err = {0};
    CHECK_INT(import_file(NCCLT "all_reduce-decorated.txt", NULL, &out, &err), FB_OK);
    CHECK_INT(out.n, 1);
    if (out.n == 1) {
        CHECK_STR(s_at(out.docs[0], "topology.ranks"), "2");
        json_object *rows = fb_json_member(out.docs[0], "rows");
        CHECK_INT(json_object_array_length(rows), 3);
        json_object *last = json_object_array_get_idx(rows, 2);
        double bw = 0;
        CHECK(fb_json_get_double(fb_json_member(last, "out_of_place"), "busbw_GBps", &bw));
        CHECK_NEAR(bw, 34.04, 1e-9);
        CHECK(strstr(json_object_to_json_string(fb_json_member(out.docs[0], "warnings")), "layout assumed") == NULL);
    }
    fb_import_out_free(&out);
}

/* --- How released nccl-tests versions printed their tables -------------
 * Tables written from the rules of docs/report.md ("How nccl-tests computed
 * its bandwidths"), never copied from an output: the layout of an era, a
 * row's time 10 us plus its bytes at 40 GB/s (in place 1% slower), the
 * bandwidths from the size and that time by the version's rule. */
enum era { ERA_2017, ERA_2019, ERA_2022, ERA_NONE };
static const char *const era_names[] = {"2017", "2019", "2022", "no header"};

struct table_spec {
    enum era era;
    const struct fb_collective *c;
    int n;
    enum fb_bw_rule rule;
    double skew; /* both bandwidths x this: 1 as the rule gives them */
};

static size_t spec_bytes(const struct table_spec *t, int k, size_t *count)
{
    struct fb_counts cn = t->c->counts((size_t)1048576 << k, 4, t->n);
    *count = cn.param;
    return cn.bytes;
}

static void spec_figures(const struct table_spec *t, size_t bytes, int place, double *us, double *alg, double *bus)
{
    *us = (10 + (double)bytes / 40e3) * (place ? 1.01 : 1);
    double share = fb_coll_alg_share(t->c, t->rule, t->n);
    /* alltoallv: the busiest rank's bytes, which its size is here */
    *alg = (double)bytes * (isnan(share) ? 1 : share) / (*us * 1e3) * t->skew;
    *bus = *alg * fb_coll_bus_share(t->c, t->rule, t->n);
}

/* The figure as the era's printf wrote it, read back. */
static double printed_as(const char *fmt, double v)
{
    char s[64];
    snprintf(s, sizeof s, fmt, v);
    return strtod(s, NULL);
}

static const char *time_format(enum era era, double us)
{
    if (era == ERA_2019) /* fewer decimals as the time grows */
        return us > 10000 ? "  %7.0f" : us > 100 ? "  %7.1f" : "  %7.2f";
    return era == ERA_2017 ? "  %7.3f" : "  %7.2f";
}

static void print_header_lines(struct fb_str *out, const struct table_spec *t)
{
    bool old = t->era == ERA_2017, one = old && t->c->id == FB_BROADCAST;
    fb_str_addf(out, "%snThread 1 nGpus %d minBytes 1048576 maxBytes 8388608 step: 2(factor) warmup iters: 5 iters: 20 validation: 1 \n",
                old ? "" : "# ", t->n);
    for (int r = 0; r < t->n; r++) {
        if (old)
            fb_str_addf(out, "#   Rank %2d on %10s device %2d [0x%02x] Tesla V100-SXM2-32GB\n", r, "dgx-1", r, 0x10 + r);
        else
            fb_str_addf(out, "#  Rank %2d Group  0 Pid %6d on %10s device %2d [0x%02x] NVIDIA A100-SXM4-80GB\n", r, 100 + r,
                        "dgx-a", r, 0x10 + r);
    }
    if (t->era == ERA_NONE)
        return;
    const char *wrong = t->era == ERA_2017 ? "res" : t->era == ERA_2019 ? "error" : "#wrong";
    fb_str_addf(out, "#  %s  %s  type", old ? "bytes" : "size", old ? "N" : "count");
    if (t->era == ERA_2022)
        fb_str_addf(out, "  redop  root");
    else
        fb_str_addf(out, "%s%s", t->c->reduces ? (old ? "  op" : "  redop") : "", t->c->rooted ? "  root" : "");
    for (int place = 0; place < (one ? 1 : 2); place++)
        fb_str_addf(out, "  time  algbw  busbw  %s", wrong);
    fb_str_addf(out, "\n");
}

/* One placement's four columns. */
static void print_place(struct fb_str *out, const struct table_spec *t, double us, double alg, double bus)
{
    if (t->era == ERA_2017)
        fb_str_addf(out, "  %7.3f  %5.2f  %5.2f  %7.0e", us / 1000, alg, bus, 0.0);
    else if (t->era == ERA_2019)
        fb_str_addf(out, time_format(t->era, us), us), fb_str_addf(out, "  %6.2f  %6.2f  %5.0e", alg, bus, 0.0);
    else
        fb_str_addf(out, "  %7.2f  %6.2f  %6.2f  %6g", us, alg, bus, 0.0);
}

static void print_table(struct fb_str *out, const struct table_spec *t)
{
    bool old = t->era == ERA_2017, one = old && t->c->id == FB_BROADCAST;
    print_header_lines(out, t);
    for (int k = 0; k < 4; k++) {
        size_t count, bytes = spec_bytes(t, k, &count);
        fb_str_addf(out, "%12zu  %12zu  %8s", bytes, count, "float");
        if (t->era == ERA_2022 || t->era == ERA_NONE)
            fb_str_addf(out, "  %6s  %6s", t->c->reduces ? "sum" : "none", t->c->rooted ? "0" : "-1");
        else
            fb_str_addf(out, "%s%s", t->c->reduces ? "     sum" : "", t->c->rooted ? "       0" : "");
        for (int place = 0; place < (one ? 1 : 2); place++) {
            double us, alg, bus;
            spec_figures(t, bytes, place, &us, &alg, &bus);
            print_place(out, t, us, alg, bus);
        }
        fb_str_addf(out, "\n");
    }
    fb_str_addf(out, "%s Out of bounds values : 0 OK\n%s Avg bus bandwidth    : 1.5\n", old ? "" : "#", old ? "" : "#");
}

static enum fb_status import_spec(const struct table_spec *t, struct fb_import_out *out, struct fb_err *err)
{
    struct fb_str text = {0};
    char name[64];
    snprintf(name, sizeof name, "old/%s_perf.log", t->c->name);
    print_table(&text, t);
    struct fb_import_opts o = {.mtime = 0};
    enum fb_status st = fb_import_text(name, fb_str_get(&text), strlen(fb_str_get(&text)), FB_IMPORT_NCCLT_TEXT, &o, out, err);
    fb_str_free(&text);
    return st;
}

static bool warned(json_object *doc, const char *what)
{
    return strstr(json_object_to_json_string(fb_json_member(doc, "warnings")), what) != NULL;
}

/* The document says what the version printed, in today's terms: times in
 * us, busBW as printed, algBW as today's rule gives it (size / time). */
static void check_restated(const struct table_spec *t, json_object *d)
{
    bool old = t->era == ERA_2017, one = old && t->c->id == FB_BROADCAST;
    CHECK_STR(s_at(d, "collective"), t->c->name);
    CHECK_INT(json_object_get_int(at(d, "topology.ranks")), t->n);
    CHECK(warned(d, "rule before 2020-06") == fb_coll_rule_differs(t->c, t->rule));
    CHECK(warned(d, "times printed in ms") == old);
    for (int k = 0; k < 4; k++) {
        char path[64];
        size_t count, bytes = spec_bytes(t, k, &count);
        for (int place = 0; place < 2; place++) {
            const char *key = place ? "in_place" : "out_of_place";
            double us, alg, bus;
            spec_figures(t, bytes, place, &us, &alg, &bus);
            snprintf(path, sizeof path, "rows.%d.%s.busbw_GBps", k, key);
            if (one && place) {
                CHECK(at(d, path) == NULL); /* 2017's broadcast timed out-of-place only */
                continue;
            }
            CHECK_NEAR(d_at(d, path), printed_as(old ? "%5.2f" : "%6.2f", bus), 1e-12);
            snprintf(path, sizeof path, "rows.%d.%s.time_us", k, key);
            CHECK(fabs(d_at(d, path) - us) <= (old ? 0.5 : 0.05) + 1e-9);
            snprintf(path, sizeof path, "rows.%d.%s.algbw_GBps", k, key);
            double today = fb_coll_alg_share(t->c, FB_BW_RULE_TODAY, t->n);
            if (!isnan(today))
                CHECK_NEAR(d_at(d, path), (double)bytes * today / (us * 1e3), 2e-3);
        }
    }
}

/* Every collective, in every layout and under every rule a released
 * version printed it with, imports: nothing a version printed is damage. */
static void test_every_release_convention_reads(void)
{
    static const int ranks[] = {2, 3, 8};
    for (int e = ERA_2017; e <= ERA_NONE; e++)
        for (int i = 0; i < FB_NCOLLS; i++)
            for (size_t r = 0; r < sizeof ranks / sizeof *ranks; r++)
                for (int rule = FB_BW_RULE_TODAY; rule <= FB_BW_RULE_GATHER_2020; rule++) {
                    struct table_spec t = {(enum era)e, fb_collective((enum fb_coll_id)i), ranks[r], (enum fb_bw_rule)rule, 1};
                    /* 2017 printed the old rule, 2022 onwards today's only. */
                    bool printed = fb_coll_rule_differs(t.c, t.rule) ? e != ERA_2022 : e != ERA_2017 || !fb_coll_rule_differs(t.c, FB_BW_RULE_GATHER_2020);
                    if (!fb_collective_runs_on(t.c, t.n) || (rule != FB_BW_RULE_TODAY && !fb_coll_rule_differs(t.c, t.rule)) || !printed)
                        continue;
                    struct fb_import_out out = {0};
                    struct fb_err err = {0};
                    enum fb_status st = import_spec(&t, &out, &err);
                    if (st != FB_OK || out.n != 1)
                        printf("#   %s, %s on %d ranks, rule %d: %s\n", era_names[e], t.c->name, t.n, rule, err.msg);
                    CHECK_INT(st, FB_OK);
                    if (out.n == 1)
                        check_restated(&t, out.docs[0]);
                    fb_import_out_free(&out);
                }
}

/* What no released version printed is refused with its line: the
 * gathers' old rule in a layout of 2022 or later, today's in 2017's,
 * and figures no time gives in any layout. */
static void test_no_release_convention_is_damage(void)
{
    const struct fb_collective *ag = fb_collective(FB_ALL_GATHER), *rs = fb_collective(FB_REDUCE_SCATTER);
    const struct table_spec bad[] = {
        {ERA_2022, ag, 8, FB_BW_RULE_GATHER_2020, 1},
        {ERA_2022, rs, 2, FB_BW_RULE_GATHER_2020, 1},
        {ERA_2017, ag, 8, FB_BW_RULE_TODAY, 1},
        {ERA_2019, fb_collective(FB_ALL_REDUCE), 4, FB_BW_RULE_TODAY, 1.5},
        {ERA_NONE, ag, 8, FB_BW_RULE_GATHER_2020, 1.2},
        {ERA_2017, fb_collective(FB_BROADCAST), 4, FB_BW_RULE_TODAY, 0.5},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct fb_import_out out = {0};
        struct fb_err err = {0};
        CHECK_INT(import_spec(&bad[i], &out, &err), FB_ERR_INPUT);
        CHECK_CONTAINS(err.msg, "does not follow from");
        CHECK_CONTAINS(err.msg, "; the row is damaged");
        CHECK_INT(out.n, 0);
    }
}

/* --- Impossible figures ------------------------------------------------ */

static enum fb_status import_string(const char *name, const char *text, struct fb_import_out *out, struct fb_err *err)
{
    struct fb_import_opts o = {.mtime = 0};
    fb_err_clear(err);
    return fb_import_text(name, text, strlen(text), FB_IMPORT_AUTO, &o, out, err);
}

/* Rows whose bandwidths cannot follow from their size and time, or are
 * beyond any fabric, are refused naming the line, whatever the ratio of
 * the two; the same rows with honest figures import, the in-place one of a
 * single rank included (a 0.10 us no-op printed as "1e+06"). */
static void test_impossible_figures_are_refused(void)
{
    const char *head = "# Collective test starting: all_reduce_perf\n"
                       "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n"
                       "#  Rank  0 Group  0 Pid 1 on a device  0 [0x1b] NVIDIA H100 80GB HBM3\n"
                       "#  Rank  1 Group  0 Pid 1 on b device  0 [0x1b] NVIDIA H100 80GB HBM3\n"
                       "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
                       "     1048576        262144     float     sum      -1    93.64   11.20   11.20      0    94.59   11.09   11.09      0\n";
    char huge[400];
    snprintf(huge, sizeof huge, "%.2f", 1e308); /* the 309 digits "%6.2f" prints for it */
    char rows[5][1000];
    snprintf(rows[0], sizeof rows[0], "     2097152        524288     float     sum      -1   172.29   12.17   12.17      0   174.03   12.05   12.05      0\n");
    /* Both bandwidths x3: their ratio still the bus factor. */
    snprintf(rows[1], sizeof rows[1], "     2097152        524288     float     sum      -1   172.29   36.51   36.51      0   174.03   12.05   12.05      0\n");
    snprintf(rows[2], sizeof rows[2], "     2097152        524288     float     sum      -1   172.29   12.17   12.17      0   174.03   %s   %s      0\n", huge, huge);
    snprintf(rows[3], sizeof rows[3], "     2097152        524288     float     sum      -1     0.00   2e+12   2e+12      0   174.03   12.05   12.05      0\n");
    snprintf(rows[4], sizeof rows[4], "     2097152        524288     float     sum      -1   0x10   12.17   12.17      0   174.03   12.05   12.05      0\n");
    /* The 309-digit busBW is refused as beyond any fabric, never averaged. */
    const char *want[] = {NULL, "line 7: algBW 36.51 out of place does not follow from 2097152 bytes in 172.29 us",
                          "line 7: a bandwidth of 1e+308 GB/s in place is beyond any fabric",
                          "line 7: a bandwidth of 2e+12 GB/s out of place is beyond any fabric",
                          "line 7: a value that is not a number >= 0 as printf prints one"};
    for (int i = 0; i < 5; i++) {
        char text[8192];
        snprintf(text, sizeof text, "%s%s", head, rows[i]);
        struct fb_import_out out = {0};
        struct fb_err err = {0};
        enum fb_status st = import_string("log.txt", text, &out, &err);
        CHECK_INT(st, want[i] ? FB_ERR_INPUT : FB_OK);
        if (want[i] != NULL)
            CHECK_CONTAINS(err.msg, want[i]);
        fb_import_out_free(&out);
    }
    struct fb_import_out out = {0};
    struct fb_err err = {0};
    const char lone[] = "# Collective test starting: all_reduce_perf\n"
                        "#  Rank  0 Group  0 Pid 1 on a device  0 [0x1b] NVIDIA GeForce RTX 5090\n"
                        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
                        "   134217728      33554432     float     sum      -1   176.33  761.18    0.00       0     0.10   1e+06    0.00       0\n";
    CHECK_INT(import_string("tail.txt", lone, &out, &err), FB_OK);
    fb_import_out_free(&out);
}

/* nccl-tests -J figures are checked alike, at the six decimals "%lf"
 * printed; a number past a double's range never reaches a reader. */
static void test_impossible_json_figures_are_refused(void)
{
    char *text = NULL;
    size_t len = 0;
    struct fb_err err = {0};
    CHECK_INT(fb_read_text_file(NCCLT "all_reduce_perf-J.json", &text, &len, &err), FB_OK);
    static const struct {
        const char *from, *to, *want;
    } cases[] = {
        /* Both bandwidths x10: their ratio still the bus factor. */
        {"\"alg_bw\":17.119608,\"bus_bw\":25.679412", "\"alg_bw\":171.196080,\"bus_bw\":256.794120",
         "results[0] (1048576 bytes): algBW 171.196 out of place does not follow"},
        {"\"alg_bw\":17.119608,\"bus_bw\":25.679412", "\"alg_bw\":1e300,\"bus_bw\":1.5e300",
         "a bandwidth of 1.5e+300 GB/s out of place is beyond any fabric"},
        {"\"bus_bw\":25.679412", "\"bus_bw\":25.779412", "busBW 25.78 is not algBW 17.12 x 1.5000"},
        {"\"bus_bw\":25.679412", "\"bus_bw\":1e309", "a number beyond the range of a double: \"1e309\""},
        {"\"hostname\":\"ib-node-a\"", "\"hostname\":\"ib-node-a\\u0000\"", "\\u0000 (NUL) would cut the string short"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct fb_str edited = {0};
        const char *at_from = strstr(text, cases[i].from);
        CHECK(at_from != NULL);
        if (at_from == NULL)
            continue;
        fb_str_addf(&edited, "%.*s%s%s", (int)(at_from - text), text, cases[i].to, at_from + strlen(cases[i].from));
        struct fb_import_out out = {0};
        CHECK_INT(import_string("all_reduce_perf-J.json", fb_str_get(&edited), &out, &err), FB_ERR_INPUT);
        CHECK_CONTAINS(err.msg, cases[i].want);
        CHECK_INT(out.n, 0);
        fb_str_free(&edited);
    }
    free(text);
}

/* perftest computes the average and the message rate from the same
 * messages and cycles: average = rate x size (in Gb/s, rate x bytes x
 * 8e-3; in MiB/s, rate x bytes x 1e6 / 2^20). A line that breaks it by more
 * than twice what printing rounds is damaged; a rate too small for its six
 * digits (0.000000 for huge messages) is within the slack. */
static void test_perftest_average_follows_the_rate(void)
{
    static const struct {
        const char *unit, *row;
        enum fb_status want;
    } cases[] = {
        {"Gb/sec", " 65536      5000             392.15             391.42               0.746582\n", FB_OK},
        {"Gb/sec", " 65536      5000             392.15             391.52               0.746582\n", FB_ERR_INPUT},
        {"Gb/sec", " 65536      5000             392.15             39.42                0.746582\n", FB_ERR_INPUT},
        {"Gb/sec", " 65536      5000             392.15             391.42               0.000000\n", FB_ERR_INPUT},
        {"MB/sec", " 65536      5000             46746.86           46660.04             0.746561\n", FB_OK},
        {"MB/sec", " 65536      5000             46746.86           46760.04             0.746561\n", FB_ERR_INPUT},
        {"Gb/sec", " 1073741824 10               0.85               0.84                 0.000000\n", FB_OK},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[1024];
        snprintf(text, sizeof text,
                 "                    RDMA_Write BW Test\n"
                 " #bytes     #iterations    BW peak[%s]    BW average[%s]   MsgRate[Mpps]\n%s",
                 cases[i].unit, cases[i].unit, cases[i].row);
        struct fb_import_out out = {0};
        struct fb_err err = {0};
        CHECK_INT(import_string("ib_write_bw.txt", text, &out, &err), cases[i].want);
        if (cases[i].want != FB_OK)
            CHECK_CONTAINS(err.msg, "perftest computes both from the same messages");
        fb_import_out_free(&out);
    }
    const char json[] = "{\"test_info\": {\"test\": \"RDMA_Write_BW_Test\"}, \"results\": "
                        "{\"MsgSize\": 65536, \"n_iterations\": 5000, \"BW_peak\": 392.15, \"BW_average\": 361.42, \"MsgRate\": 0.746582}}";
    struct fb_import_out out = {0};
    struct fb_err err = {0};
    CHECK_INT(import_string("p.json", json, &out, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "cannot come with 0.746582 Mpps");
    fb_import_out_free(&out);
}

/* perftest prints no time its bandwidth could be checked against; what no
 * link measures is still refused. */
static void test_perftest_absurd_figures_are_refused(void)
{
    const char *head = "                    RDMA_Write BW Test\n"
                       " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n";
    const char *rows[] = {" 65536      5000             392.15             391.42               0.746582\n",
                          " 65536      5000             1e308              391.42               0.746582\n",
                          " 65536      5000             392.15             391.42               1e+12\n"};
    for (int i = 0; i < 3; i++) {
        char text[1024];
        snprintf(text, sizeof text, "%s%s", head, rows[i]);
        struct fb_import_out out = {0};
        struct fb_err err = {0};
        CHECK_INT(import_string("ib_write_bw.txt", text, &out, &err), i == 0 ? FB_OK : FB_ERR_INPUT);
        if (i > 0)
            CHECK_CONTAINS(err.msg, "beyond any link");
        fb_import_out_free(&out);
    }
}

/* fabric-bench's own results: a bandwidth beyond any fabric (the 1e308 an
 * overflowed average printed) is refused before any average sums it. */
static void test_own_results_refuse_absurd_figures(void)
{
    json_object *doc = fixture_doc("vm-mpi-allreduce-4.json");
    json_object *row = json_object_array_get_idx(json_object_object_get(doc, "rows"), 1);
    json_object_object_add(json_object_object_get(row, "in_place"), "busbw_GBps", json_object_new_double(1e308));
    struct fb_result r;
    struct fb_err err = {0};
    CHECK_INT(result_of(doc, &r, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "rows[1].in_place has a bandwidth of 1e+308 GB/s, beyond any fabric");
}

/* --- Types and strings ---------------------------------------------------- */

/* nccl-tests 2.15 and later name the 8-bit floats f8e4m3 and f8e5m2: one
 * byte each, so a table cut from its header still reads as nccl-tests and
 * its counts are checked with that size. */
static void test_fp8_tables_read(void)
{
    const char rows[] = "     1048576        524288    f8e4m3    none      -1    93.64   11.20    5.60      0    94.59   11.09    5.54      0\n"
                        "     2097152       1048576    f8e4m3    none      -1   172.29   12.17    6.09      0   174.03   12.05    6.03      0\n";
    enum fb_import_format f = FB_IMPORT_AUTO;
    struct fb_err err = {0};
    CHECK_INT(fb_import_detect("rows.txt", rows, sizeof rows - 1, &f, &err), FB_OK);
    CHECK_INT(f, FB_IMPORT_NCCLT_TEXT);
    struct fb_import_out out = {0};
    struct fb_import_opts o = {.collective = "all_gather", .mtime = 0};
    CHECK_INT(fb_import_text("rows.txt", rows, sizeof rows - 1, FB_IMPORT_AUTO, &o, &out, &err), FB_OK);
    if (out.n == 1) {
        CHECK_STR(s_at(out.docs[0], "dtype"), "f8e4m3");
        CHECK_STR(s_at(out.docs[0], "topology.ranks"), "2");
    }
    fb_import_out_free(&out);
    char e5m2[sizeof rows];
    memcpy(e5m2, rows, sizeof rows);
    for (char *p = strstr(e5m2, "f8e4m3"); p != NULL; p = strstr(p, "f8e4m3"))
        memcpy(p, "f8e5m2", 6);
    memcpy(strstr(e5m2, " 524288 "), " 524289 ", 8); /* a count no 1-byte type gives */
    fb_err_clear(&err);
    CHECK_INT(fb_import_text("rows.txt", e5m2, sizeof e5m2 - 1, FB_IMPORT_AUTO, &o, &out, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "count 524289 does not fit 1048576 bytes of f8e5m2");
}

/* Control characters in the input reach neither the terminal (messages
 * and warnings quote them escaped) nor HTML (U+FFFD). */
static void test_control_characters_never_reach_a_terminal_or_html(void)
{
    const char text[] = "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 1 iters: 1 agg iters: 1 validation: 1 graph: 0\n"
                        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
                        "           8             2     float     sum      -1     5.1  \x1b]0;owned\x07   0.00      0     5.0    0.00    0.00      0\n";
    struct fb_import_out out = {0};
    struct fb_err err = {0};
    CHECK_INT(import_string("all_reduce.txt", text, &out, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "\\x1b]0;owned\\x07");
    for (const char *p = err.msg; *p; p++)
        CHECK((unsigned char)*p >= 0x20 && *p != 0x7f);
    const char fault[] = "# Collective test starting: all_reduce_perf\n# nThread 1 nGpus 1\n"
                         "node-1: Test NCCL failure common.cu:1012 'unhandled \x1b]2;pwn\x07\xc2\x9b system error'\n";
    CHECK_INT(import_string("hang.txt", fault, &out, &err), FB_OK);
    if (out.n == 1)
        CHECK_STR(s_at(out.docs[0], "fault.message"), "node-1: Test NCCL failure common.cu:1012 'unhandled \\x1b]2;pwn\\x07\\u009b system error'");
    fb_import_out_free(&out);
    struct fb_str html = {0};
    fb_html_escape(&html, "a\x1b[31m<b>\x7f\xc2\x9b\tz\xc3\xa9");
    CHECK_STR(fb_str_get(&html), "a&#xFFFD;[31m&lt;b&gt;&#xFFFD;&#xFFFD;\tz\xc3\xa9");
    fb_str_free(&html);
}

/* A perftest run as its text output, for the shapes below: the test's
 * name line, a server's "Waiting for client" or not, the header block
 * padded with `pad` (tabs or spaces: perftest prints both), and one row. */
static enum fb_status perftest_shape(const char *test, bool server, const char *pad, const char *device,
                                     const char *before, const char *row, struct fb_import_out *out,
                                     struct fb_err *err)
{
    char text[2048];
    snprintf(text, sizeof text,
             "%s%s"
             "---------------------------------------------------------------------------------------\n"
             "                    %s BW Test\n"
             " Dual-port       : OFF%sDevice         : %s\n"
             " Number of qps   : 1%sTransport type : IB\n"
             " Connection type : RC%sUsing SRQ      : OFF\n"
             " PCIe relax order: ON\n"
             " Link type       : Ethernet\n"
             " GID index       : 2\n"
             "---------------------------------------------------------------------------------------\n"
             " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
             " %s\n",
             before, server ? "* Waiting for client to connect... *\n" : "", test, pad, device, pad, pad, row);
    struct fb_import_opts o = {.mtime = 0};
    fb_err_clear(err);
    return fb_import_text("p.txt", text, strlen(text), FB_IMPORT_AUTO, &o, out, err);
}

/* perftest's header padded with spaces reads as with tabs; a placeholder
 * is no device. Data flows into a write or send server and into a read
 * client (it pulls its peer's memory). A peak perftest did not measure
 * (its warning, or 0.00 beside a non-zero average) is null, not 0. */
static void test_perftest_shapes(void)
{
    struct fb_import_out out = {0};
    struct fb_err err = {0};
    const char *row = "65536      1000             0.00               6.19               0.011814";
    CHECK_INT(perftest_shape("Send", true, "            ", "rxe2", "WARNING: BW peak won't be measured in this run.\n", row,
                             &out, &err), FB_OK);
    json_object *d = out.n ? out.docs[0] : NULL;
    CHECK_STR(s_at(d, "endpoints.0.device"), "rxe2");
    CHECK_STR(s_at(d, "config.qps"), "1");
    CHECK_STR(s_at(d, "config.connection"), "RC");
    CHECK_STR(s_at(d, "config.gid_index"), "2");
    CHECK_STR(s_at(d, "links.0.src.host"), "remote");
    CHECK_STR(s_at(d, "links.0.peak_Gbps"), "(null)");
    CHECK_NEAR(d_at(d, "links.0.avg_Gbps"), 6.19, 1e-12);
    fb_import_out_free(&out);
    static const struct {
        const char *test;
        bool server;
        const char *src;
    } dirs[] = {{"RDMA_Read", false, "remote"}, {"RDMA_Read", true, "local"}, {"RDMA_Write", false, "local"},
                {"Send", false, "local"}};
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        CHECK_INT(perftest_shape(dirs[i].test, dirs[i].server, "\t\t", "mlx5_0", "",
                                 "65536      1000             328.64             328.61      0.626777", &out, &err), FB_OK);
        if (out.n == 1) {
            if (strcmp(s_at(out.docs[0], "links.0.src.host"), dirs[i].src) != 0)
                printf("#   %s %s: data from %s\n", dirs[i].test, dirs[i].server ? "server" : "client", s_at(out.docs[0], "links.0.src.host"));
            CHECK_STR(s_at(out.docs[0], "links.0.src.host"), dirs[i].src);
            CHECK_NEAR(d_at(out.docs[0], "links.0.peak_Gbps"), 328.64, 1e-12);
        }
        fb_import_out_free(&out);
    }
    CHECK_INT(perftest_shape("RDMA_Write", false, "          ", "<RDMA-NIC-2>", "", row, &out, &err), FB_OK);
    d = out.n ? out.docs[0] : NULL;
    CHECK_STR(s_at(d, "endpoints.0.device"), "(null)");
    CHECK_STR(s_at(d, "links.0.peak_Gbps"), "(null)");
    CHECK(warned(d, "is not a device name"));
    fb_import_out_free(&out);
    const char json[] = "{\"test_info\": {\"test\": \"Send_BW_Test\", \"Device\": \"rxe0\"}, \"results\": "
                        "{\"MsgSize\": 65536, \"n_iterations\": 1000, \"BW_peak\": 0, \"BW_average\": 6.19, \"MsgRate\": 0.011814}}";
    CHECK_INT(import_string("p.json", json, &out, &err), FB_OK);
    CHECK_STR(s_at(out.n ? out.docs[0] : NULL, "links.0.peak_Gbps"), "(null)");
    CHECK_STR(s_at(out.n ? out.docs[0] : NULL, "endpoints.0.device"), "rxe0");
    fb_import_out_free(&out);
}

/* perftest prints zeros for a size whose clock calibration failed (a busy
 * CPU, with -F): that size is unknown, the rest of the table stands, and
 * the link's summary reads the largest size measured. A table of zeros
 * only is refused with the fix. */
static void test_perftest_calibration_zeros_are_unknown(void)
{
    struct fb_import_out out = {0};
    struct fb_err err = {0};
    const char *rows = "64         100              1.50               1.40               2.734375\n"
                       " 128        100              0.00               0.00               0.000000\n"
                       " 256        100              5.10               5.00               2.441406\n"
                       " 512        100              0.00               0.00               0.000000";
    CHECK_INT(perftest_shape("RDMA_Write", false, "\t\t", "mlx5_0", "", rows, &out, &err), FB_OK);
    json_object *d = out.n ? out.docs[0] : NULL;
    CHECK_STR(s_at(d, "links.1.size_bytes"), "128");
    CHECK_STR(s_at(d, "links.1.avg_Gbps"), "(null)");
    CHECK_STR(s_at(d, "links.1.peak_Gbps"), "(null)");
    CHECK_STR(s_at(d, "links.1.msg_rate_Mpps"), "(null)");
    CHECK_NEAR(d_at(d, "links.2.avg_Gbps"), 5.00, 1e-12);
    CHECK_STR(s_at(d, "summary.reference_size_bytes"), "256");
    CHECK_NEAR(d_at(d, "summary.max_avg_Gbps"), 5.00, 1e-12);
    CHECK(warned(d, "only zeros for 2 sizes (128, 512 bytes)"));
    fb_import_out_free(&out);
    CHECK_INT(perftest_shape("RDMA_Write", false, "\t\t", "mlx5_0", "",
                             "128        100              0.00               0.00               0.000000", &out, &err),
              FB_ERR_INPUT);
    CHECK(strstr(err.msg, "could not calibrate its clock") != NULL && strstr(err.msg, "taskset") != NULL);
    const char json[] = "{\"test_info\": {\"test\": \"RDMA_Write_BW_Test\"}, \"results\": "
                        "{\"MsgSize\": 65536, \"n_iterations\": 1000, \"BW_peak\": 0, \"BW_average\": 0, \"MsgRate\": 0}}";
    CHECK_INT(import_string("p.json", json, &out, &err), FB_ERR_INPUT);
    CHECK(strstr(err.msg, "could not calibrate its clock") != NULL);
    fb_import_out_free(&out);
}

/* Captured with 2>&1, perftest's stderr lines about its clock come between
 * the size lines, or inside one where block-buffered stdout was flushed in
 * the middle of it: at every place in a line, the table reads as printed. */
static void test_perftest_stderr_inside_the_table(void)
{
    static const char *const notes[] = {"Correlation coefficient r^2: 0.843 < 0.9\n",
                                        "Conflicting CPU frequency values detected: 2000.000000 != 3000.000000. CPU Frequency is not max.\n"};
    const char *row = " 256        100              5.10               5.00               2.441406\n";
    for (size_t k = 0; k < sizeof notes / sizeof *notes; k++) {
        for (size_t cut = 0; cut <= strlen(row); cut++) {
            char rows[512];
            snprintf(rows, sizeof rows, "64         100              1.50               1.40               2.734375\n%.*s%s%s"
                     " 1024       100              9.90               9.80               1.196289",
                     (int)cut, row, notes[k], row + cut);
            struct fb_import_out out = {0};
            struct fb_err err = {0};
            CHECK_INT(perftest_shape("RDMA_Write", false, "\t\t", "mlx5_0", "", rows, &out, &err), FB_OK);
            json_object *d = out.n ? out.docs[0] : NULL;
            CHECK_STR(s_at(d, "links.1.size_bytes"), "256");
            CHECK_NEAR(d_at(d, "links.1.avg_Gbps"), 5.00, 1e-12);
            CHECK_NEAR(d_at(d, "links.1.peak_Gbps"), 5.10, 1e-12);
            CHECK_STR(s_at(d, "links.2.size_bytes"), "1024");
            CHECK(warned(d, k == 0 ? "could not calibrate its clock" : "cores at different clock rates"));
            CHECK(warned(d, "(said 1 time on its stderr, read with its table)"));
            if (out.n != 1 || json_object_array_length(at(d, "links")) != 3)
                printf("#   note %zu at %zu: %s\n", k, cut, err.msg);
            fb_import_out_free(&out);
        }
    }
}

/* --- Outputs as they were copied and published ------------------------
 * The first release's table (times in ms, no root column) of all_reduce on
 * two ranks, whose rows fit reduce as well, with the shell's echo of its
 * command before it and two rows of 0 bytes (-b 1 and 2 print 0). */
static void first_release_table(struct fb_str *out, const char *before, const char *row_prefix)
{
    fb_str_addf(out, "%s", before);
    fb_str_addf(out, "nThread 1 nGpus 2 minBytes 1 maxBytes 2097152 step: 2(factor) warmup iters: 5 iters: 20 validation: 0\n"
                     "#   Rank  0 on        box device  0 [0x05] GeForce RTX 2080 Ti\n"
                     "#   Rank  1 on        box device  1 [0x06] GeForce RTX 2080 Ti\n"
                     "#      bytes             N    type      op     time  algbw  busbw      res     time  algbw  busbw      res\n");
    static const char *const rows[] = {
        "           0             0   float     sum    0.009   0.00   0.00      N/A    0.010   0.00   0.00      N/A\n",
        "           0             0   float     sum    0.009   0.00   0.00      N/A    0.009   0.00   0.00      N/A\n",
        "     1048576        262144   float     sum    0.293   3.58   3.58      N/A    0.294   3.57   3.57      N/A\n",
        "     2097152        524288   float     sum    0.560   3.74   3.74      N/A    0.561   3.74   3.74      N/A\n",
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        fb_str_addf(out, "%s%s", row_prefix, rows[i]);
    fb_str_addf(out, " Out of bounds values : 0 OK\n Avg bus bandwidth    : 1.8\n");
}

static enum fb_status import_first_release(const char *before, const char *row_prefix, struct fb_import_out *out,
                                           struct fb_err *err)
{
    struct fb_str text = {0};
    first_release_table(&text, before, row_prefix);
    enum fb_status st = import_string("notes.txt", fb_str_get(&text), out, err);
    fb_str_free(&text);
    return st;
}

/* The command echoed before a table names its collective where the rows
 * cannot (all_reduce and reduce alike on two ranks); prose naming a binary
 * is no command. Sizes printed 0 twice are one sweep, not two. */
static void test_command_line_names_the_collective(void)
{
    struct fb_import_out out = {0};
    struct fb_err err = {0};
    CHECK_INT(import_first_release("user@box:~/nccl-tests$ mpirun -np 1 ./build/all_reduce_perf -b 1 -e 2M -f 2 -g 2 -c 0\n", "",
                                   &out, &err), FB_OK);
    json_object *d = out.n ? out.docs[0] : NULL;
    CHECK_STR(s_at(d, "collective"), "all_reduce");
    CHECK_STR(s_at(d, "tool.invoked_as"), "./build/all_reduce_perf -b 1 -e 2M -f 2 -g 2 -c 0");
    CHECK_STR(s_at(d, "rows.1.run"), "0");
    CHECK_STR(s_at(d, "rows.3.run"), "0");
    CHECK_NEAR(d_at(d, "rows.3.out_of_place.time_us"), 560, 1e-9);
    fb_import_out_free(&out);
    CHECK_INT(import_first_release("", "", &out, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "fit all_reduce or reduce alike");
    CHECK_INT(import_first_release("all_gather_perf is slower than this\n", "", &out, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "fit all_reduce or reduce alike");
}

/* Rows a publisher put behind "#" are read, and said to be; a table that
 * seemed empty is not a finished run of no rows. */
static void test_commented_rows_are_read(void)
{
    struct fb_import_out out = {0};
    struct fb_err err = {0};
    CHECK_INT(import_first_release("$ ./build/all_reduce_perf -b 1 -e 2M -g 2\n", "#", &out, &err), FB_OK);
    json_object *d = out.n ? out.docs[0] : NULL;
    CHECK_INT(json_object_array_length(at(d, "rows")), 4);
    CHECK_STR(s_at(d, "collective"), "all_reduce");
    CHECK(warned(d, "4 table rows printed behind"));
    CHECK_NEAR(d_at(d, "rows.2.out_of_place.busbw_GBps"), 3.58, 1e-12);
    fb_import_out_free(&out);
}

/* An alltoall of nccl-tests 2.0: the header names redop, its rows leave it
 * blank. Read as no reduction; a row short of two columns is still damage.
 * Its old "error" deviation is said once, not once per row. */
static void test_blank_redop_column(void)
{
    const char *head = "# nThread 1 nGpus 8 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n"
                       "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
                       "#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n";
    const char *rows = "     1048576         32768   float             100.0   10.49    9.18  2e-07    101.0   10.38    9.08  2e-07\n"
                       "     2097152         65536   float             150.0   13.98   12.23  2e-07    151.0   13.89   12.15  2e-07\n"
                       "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 10.66\n";
    char text[2048];
    snprintf(text, sizeof text, "%s%s", head, rows);
    struct fb_import_out out = {0};
    struct fb_err err = {0};
    CHECK_INT(import_string("alltoall.log", text, &out, &err), FB_OK);
    json_object *d = out.n ? out.docs[0] : NULL;
    CHECK_STR(s_at(d, "collective"), "alltoall");
    CHECK_STR(s_at(d, "op"), "none");
    CHECK_STR(s_at(d, "topology.ranks"), "8");
    CHECK_NEAR(d_at(d, "rows.1.in_place.busbw_GBps"), 12.15, 1e-12);
    size_t deviations = 0;
    json_object *w = at(d, "warnings");
    for (size_t i = 0; w != NULL && i < json_object_array_length(w); i++)
        deviations += strstr(json_object_get_string(json_object_array_get_idx(w, i)), "deviation") != NULL;
    CHECK_INT(deviations, 1);
    CHECK(warned(d, "deviation of up to 2e-07 (4 placements)"));
    fb_import_out_free(&out);
    snprintf(text, sizeof text, "%s%s", head,
             "     1048576         32768   float             100.0   10.49    9.18  2e-07    101.0   10.38    9.08\n");
    CHECK_INT(import_string("alltoall.log", text, &out, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "10 columns where the table has 12");
}

/* The oldest layout's 11 columns, cut from header and footer, are still
 * recognised as nccl-tests without --format. */
static void test_headerless_oldest_layout_is_detected(void)
{
    const char text[] = "     1048576        262144   float    100.0   10.49   10.49  0e+00    101.0   10.38   10.38  0e+00\n"
                        "     2097152        524288   float    150.0   13.98   13.98  0e+00    151.0   13.89   13.89  0e+00\n";
    enum fb_import_format f = FB_IMPORT_AUTO;
    struct fb_err err = {0};
    CHECK_INT(fb_import_detect("all_reduce.txt", text, sizeof text - 1, &f, &err), FB_OK);
    CHECK_INT(f, FB_IMPORT_NCCLT_TEXT);
    struct fb_import_out out = {0};
    CHECK_INT(import_string("all_reduce.txt", text, &out, &err), FB_OK);
    CHECK_STR(s_at(out.n ? out.docs[0] : NULL, "topology.ranks"), "2");
    fb_import_out_free(&out);
    const char prose[] = "1 2 float is what the table says, then 3 4 5 6\n";
    CHECK_INT(fb_import_detect("notes.txt", prose, sizeof prose - 1, &f, &err), FB_ERR_INPUT);
}

/* Device lines whose "#" a markdown copy removed still give ranks and hosts. */
static void test_device_lines_without_hash(void)
{
    const char text[] = "nThread 1 nGpus 1 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n"
                        "Using devices\n"
                        "  Rank  0 Group  0 Pid 1 on a device  0 [0x1b] NVIDIA H100 80GB HBM3\n"
                        "#  Rank  1 Group  0 Pid 1 on b device  0 [0x1b] NVIDIA H100 80GB HBM3\n"
                        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
                        "     1048576        262144     float     sum      -1    93.64   11.20   11.20      0    94.59   11.09   11.09      0\n"
                        "     2097152        524288     float     sum      -1   172.29   12.17   12.17      0   174.03   12.05   12.05      0\n";
    struct fb_import_out out = {0};
    struct fb_err err = {0};
    CHECK_INT(import_string("all_reduce.txt", text, &out, &err), FB_OK);
    json_object *d = out.n ? out.docs[0] : NULL;
    CHECK_STR(s_at(d, "topology.nodes"), "2");
    CHECK_STR(s_at(d, "topology.ranks_per_node"), "1");
    CHECK_STR(s_at(d, "devices.0.host"), "a");
    fb_import_out_free(&out);
}

int main(void)
{
    RUN(test_every_release_convention_reads);
    RUN(test_no_release_convention_is_damage);
    RUN(test_impossible_figures_are_refused);
    RUN(test_impossible_json_figures_are_refused);
    RUN(test_perftest_absurd_figures_are_refused);
    RUN(test_perftest_average_follows_the_rate);
    RUN(test_own_results_refuse_absurd_figures);
    RUN(test_fp8_tables_read);
    RUN(test_control_characters_never_reach_a_terminal_or_html);
    RUN(test_decorated_lines_read_as_plain);
    RUN(test_damaged_rows_are_refused_with_their_line);
    RUN(test_nccl_tests_2_19_with_nccl_info);
    RUN(test_old_format_without_root_and_markers);
    RUN(test_one_file_several_collectives);
    RUN(test_killed_run_is_kept_incomplete);
    RUN(test_repeated_sweeps_number_their_runs);
    RUN(test_header_without_warmup_or_agg);
    RUN(test_bad_nccl_tests_text);
    RUN(test_nccl_tests_json);
    RUN(test_perftest_text);
    RUN(test_perftest_json_units);
    RUN(test_perftest_shapes);
    RUN(test_perftest_calibration_zeros_are_unknown);
    RUN(test_perftest_stderr_inside_the_table);
    RUN(test_command_line_names_the_collective);
    RUN(test_commented_rows_are_read);
    RUN(test_blank_redop_column);
    RUN(test_headerless_oldest_layout_is_detected);
    RUN(test_device_lines_without_hash);
    RUN(test_format_detection);
    return fbt_done();
}
