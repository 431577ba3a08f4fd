/* The results reader: what it accepts, every way a file can be wrong, and
 * the summary recomputed from the rows. */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "report_fixture.h"
#include "report/result.h"

static void test_reads_a_real_fabric_coll_run(void)
{
    struct fb_result r;
    struct fb_err err = {0};
    CHECK_INT(fb_result_load(RESULTS "vm-mpi-allreduce-4.json", &r, &err), FB_OK);
    CHECK_STR(r.collective, "all_reduce");
    CHECK_STR(r.backend, "mpi");
    CHECK_STR(r.cluster, "vm-4rank");
    CHECK_STR(r.device_kind, "cpu");
    CHECK_INT(r.ranks, 4);
    CHECK_INT(r.nodes, 1);
    CHECK(r.complete);
    CHECK_INT(r.nrows, 15);
    CHECK_INT(r.rows[0].bytes, 1024);
    CHECK(r.rows[0].oop.present && r.rows[0].ip.present);
    CHECK_INT(r.rows[0].oop.wrong, 0);
    CHECK(r.transport == NULL);
    CHECK_INT(r.gdr, -1);
    fb_result_free(&r);
}

static void test_summary_matches_what_the_run_wrote(void)
{
    /* fabric-coll computes its own summary; ours, from the rows, must agree. */
    const char *files[] = {RESULTS "vm-mpi-allreduce-4.json", RESULTS "vm-mpi-allgather-4.json",
                           RESULTS "gke-tcpxo-allreduce.json", RESULTS "gke-tcpxo-incomplete.json"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        struct fb_result r;
        struct fb_err err = {0};
        CHECK_INT(fb_result_load(files[i], &r, &err), FB_OK);
        struct fb_summary s;
        fb_summary_compute(r.rows, r.nrows, &s);
        json_object *sum = json_object_object_get(r.doc, "summary");
        double v = 0;
        CHECK(fb_json_get_double(sum, "avg_busbw_GBps", &v));
        CHECK_NEAR(s.avg_busbw, v, 1e-6);
        CHECK(fb_json_get_double(sum, "avg_busbw_ge_1MiB_GBps", &v));
        CHECK_NEAR(s.avg_busbw_ge_1MiB, v, 1e-6);
        CHECK(fb_json_get_double(sum, "peak_busbw_GBps", &v));
        CHECK_NEAR(s.peak_busbw, v, 1e-9);
        CHECK(fb_json_get_double(sum, "busbw_at_largest_GBps", &v));
        CHECK_NEAR(s.busbw_at_largest, v, 1e-9);
        int64_t largest = 0;
        CHECK(fb_json_get_int64(sum, "largest_bytes", &largest));
        CHECK_INT(s.largest_bytes, largest);
        fb_result_free(&r);
    }
}

static void test_summary_arithmetic(void)
{
    /* Three sizes, one below 1 MiB; the ip placement of the middle one absent. */
    struct fb_row rows[3];
    memset(rows, 0, sizeof rows);
    unsigned long long sizes[3] = {4096, FB_MIB, 4 * FB_MIB};
    double oop[3] = {1, 10, 20}, ip[3] = {3, NAN, 30};
    for (int i = 0; i < 3; i++) {
        rows[i].bytes = sizes[i];
        rows[i].oop = (struct fb_place){true, 1, 1, oop[i], 0};
        rows[i].ip = (struct fb_place){!isnan(ip[i]), 1, 1, ip[i], i == 2 ? 5 : -1};
    }
    struct fb_summary s;
    fb_summary_compute(rows, 3, &s);
    CHECK_NEAR(s.avg_busbw, (1 + 3 + 10 + 20 + 30) / 5.0, 1e-12);
    CHECK_NEAR(s.avg_busbw_ge_1MiB, (10 + 20 + 30) / 3.0, 1e-12);
    CHECK_NEAR(s.peak_busbw, 30, 0);
    CHECK_INT(s.peak_bytes, 4 * FB_MIB);
    CHECK_NEAR(s.busbw_at_largest, 30, 0);
    CHECK_INT(s.wrong_total, 5);
    CHECK(s.validated);
    /* Nothing at or above 1 MiB: that average does not exist. */
    fb_summary_compute(rows, 1, &s);
    CHECK(isnan(s.avg_busbw_ge_1MiB));
    CHECK_NEAR(s.avg_busbw, 2, 1e-12);
}

static void test_points_take_the_best_and_the_run_spread(void)
{
    json_object *doc = fixture_doc("vm-mpi-allreduce-2.json");
    /* Make a second repetition of the first size, slower. */
    json_object *rows = json_object_object_get(doc, "rows");
    json_object *copy = NULL;
    json_object_deep_copy(json_object_array_get_idx(rows, 0), &copy, NULL);
    json_object_object_add(copy, "run", json_object_new_int(1));
    json_object_object_add(json_object_object_get(copy, "out_of_place"), "busbw_GBps", json_object_new_double(0.01));
    json_object_object_add(json_object_object_get(copy, "in_place"), "busbw_GBps", json_object_new_double(0.02));
    json_object_array_add(rows, copy);
    struct fb_result r;
    struct fb_err err = {0};
    CHECK_INT(result_of(doc, &r, &err), FB_OK);
    struct fb_point *pts = NULL;
    size_t n = 0;
    CHECK_INT(fb_result_points(&r, &pts, &n, &err), FB_OK);
    CHECK_INT(n, 15);
    CHECK_INT(pts[0].bytes, 1024);
    CHECK_INT(pts[0].nruns, 2);
    CHECK_NEAR(pts[0].run_min, 0.02, 1e-12);
    CHECK_NEAR(pts[0].best, fb_row_best_busbw(&r.rows[0]), 1e-12);
    CHECK(pts[1].bytes > pts[0].bytes);
    free(pts);
    fb_result_free(&r);
}

static void bad_case(const char *what, void (*edit)(json_object *), const char *needle)
{
    json_object *doc = fixture_doc("gke-tcpxo-allreduce.json");
    edit(doc);
    struct fb_result r;
    struct fb_err err = {0};
    enum fb_status st = result_of(doc, &r, &err);
    if (st != FB_ERR_INPUT || strstr(err.msg, needle) == NULL || strchr(err.msg, '\n') != NULL)
        printf("# case %s: status %d, message \"%s\"\n", what, st, err.msg);
    CHECK_INT(st, FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, needle);
    CHECK_CONTAINS(err.msg, "test.json");
    CHECK(strchr(err.msg, '\n') == NULL);
}

static void wrong_schema(json_object *d) { set_key(d, "schema", json_object_new_string("other")); }
static void newer_version(json_object *d) { set_key(d, "schema_version", json_object_new_int(2)); }
static void probe_kind(json_object *d) { set_key(d, "kind", json_object_new_string("probe")); }
static void no_complete(json_object *d) { json_object_object_del(d, "complete"); }
static void bad_collective(json_object *d) { set_key(d, "collective", json_object_new_string("allreduce")); }
static void rows_not_array(json_object *d) { set_key(d, "rows", json_object_new_string("[]")); }
static void busbw_string(json_object *d)
{
    json_object *row = json_object_array_get_idx(json_object_object_get(d, "rows"), 3);
    json_object_object_add(json_object_object_get(row, "out_of_place"), "busbw_GBps", json_object_new_string("12.5"));
}
static void busbw_negative(json_object *d)
{
    json_object *row = json_object_array_get_idx(json_object_object_get(d, "rows"), 2);
    json_object_object_add(json_object_object_get(row, "in_place"), "busbw_GBps", json_object_new_double(-1));
}
static void wrong_is_float(json_object *d)
{
    json_object *row = json_object_array_get_idx(json_object_object_get(d, "rows"), 1);
    json_object_object_add(json_object_object_get(row, "in_place"), "wrong", json_object_new_double(0.5));
}
static void no_placements(json_object *d)
{
    json_object *row = json_object_array_get_idx(json_object_object_get(d, "rows"), 0);
    json_object_object_del(row, "out_of_place");
    json_object_object_del(row, "in_place");
}
static void gdr_string(json_object *d) { set_key(json_object_object_get(d, "transport"), "gdr", json_object_new_string("true")); }
static void topology_negative(json_object *d) { set_key(json_object_object_get(d, "topology"), "nodes", json_object_new_int(-2)); }
static void bytes_missing(json_object *d)
{
    json_object_object_del(json_object_array_get_idx(json_object_object_get(d, "rows"), 4), "bytes");
}

static void test_every_malformed_field_is_named(void)
{
    bad_case("schema", wrong_schema, "not a fabric-bench result");
    bad_case("version", newer_version, "schema_version 2");
    bad_case("kind", probe_kind, "\"probe\" result");
    bad_case("complete", no_complete, "complete");
    bad_case("collective", bad_collective, "collective");
    bad_case("rows", rows_not_array, "rows");
    bad_case("busbw string", busbw_string, "rows[3].out_of_place.busbw_GBps");
    bad_case("busbw negative", busbw_negative, "rows[2].in_place.busbw_GBps");
    bad_case("wrong float", wrong_is_float, "rows[1].in_place.wrong");
    bad_case("no placements", no_placements, "rows[0] has neither");
    bad_case("gdr string", gdr_string, "transport.gdr");
    bad_case("topology", topology_negative, "topology.nodes");
    bad_case("bytes", bytes_missing, "rows[4].bytes");
}

static void test_files_that_are_not_results(void)
{
    struct fb_result r;
    struct fb_err err = {0};
    CHECK_INT(fb_result_load("tests/fixtures/report/does-not-exist.json", &r, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "does-not-exist.json");
    fb_err_clear(&err);
    CHECK_INT(fb_result_load("tests/fixtures/report/ncclt/nccl-tests-2.19-socket-16rank.txt", &r, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "fabric-report import");
    fb_err_clear(&err);
    CHECK_INT(fb_result_load("tests/fixtures/report/ncclt/all_reduce_perf-J.json", &r, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "nccl-tests JSON");
    CHECK_CONTAINS(err.msg, "fabric-report import");
    fb_err_clear(&err);
    CHECK_INT(fb_result_load(REFERENCE "/tcp-fallback.json", &r, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "not a fabric-bench result");
}

static void test_directory_sets_skip_other_json(void)
{
    /* results/ holds reference profiles next to runs: they are passed over. */
    const char *args[] = {RESULTS, REFERENCE};
    struct fb_result_set set;
    struct fb_err err = {0};
    CHECK_INT(fb_result_set_load(args, 1, &set, &err), FB_OK);
    CHECK_INT(set.n, 11);
    CHECK_INT(set.skipped, 0);
    for (size_t i = 1; i < set.n; i++)
        CHECK(strcmp(set.r[i - 1].path, set.r[i].path) < 0);
    fb_result_set_free(&set);
    CHECK_INT(fb_result_set_load(args + 1, 1, &set, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "holds no collective results");
}

int main(void)
{
    RUN(test_reads_a_real_fabric_coll_run);
    RUN(test_summary_matches_what_the_run_wrote);
    RUN(test_summary_arithmetic);
    RUN(test_points_take_the_best_and_the_run_spread);
    RUN(test_every_malformed_field_is_named);
    RUN(test_files_that_are_not_results);
    RUN(test_directory_sets_skip_other_json);
    return fbt_done();
}
