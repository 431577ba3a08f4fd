/* Importers: nccl-tests text (2.19 with and without the root column and
 * the "Collective test" lines), nccl-tests -J JSON, perftest text and
 * --out_json, each from hand-made files written from the format facts. */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "report_fixture.h"
#include "report/import.h"
#include "core/files.h"
#include "core/text.h"

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
    CHECK_INT(import_file(NCCLT "nccl-tests-interleaved.txt", NULL, &out, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "second nccl-tests header");
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
    const char ambiguous[] = "{\"test_info\": {\"test\": \"RDMA_Write_BW_Test\"}, \"results\": "
                             "{\"MsgSize\": 65536, \"n_iterations\": 5000, \"BW_peak\": 100, \"BW_average\": 99, \"MsgRate\": 0}}";
    struct fb_import_opts o = {.mtime = 0};
    CHECK_INT(fb_import_text("p.json", ambiguous, sizeof ambiguous - 1, FB_IMPORT_AUTO, &o, &out, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "--units");
    o.units = "MBps";
    fb_err_clear(&err);
    CHECK_INT(fb_import_text("p.json", ambiguous, sizeof ambiguous - 1, FB_IMPORT_AUTO, &o, &out, &err), FB_OK);
    CHECK_NEAR(json_object_get_double(at(out.docs[0], "links.0.avg_Gbps")), 99 * 1048576.0 * 8 / 1e9, 1e-12);
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

int main(void)
{
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
    RUN(test_format_detection);
    return fbt_done();
}
