/* compare: ratios against the baseline, the noise band and its widening by
 * repetitions, the four output forms, and its refusals. */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "report_fixture.h"
#include "report/compare.h"

static enum fb_status load_set(const char *const *names, int n, struct fb_result_set *set)
{
    char paths[8][256];
    const char *args[8];
    for (int i = 0; i < n; i++) {
        snprintf(paths[i], sizeof paths[i], RESULTS "%s", names[i]);
        args[i] = paths[i];
    }
    struct fb_err err = {0};
    return fb_result_set_load(args, n, set, &err);
}

/* The line of the text table for `size` ("16G"), or NULL. */
static const char *line_for(const char *text, const char *size, char *buf, size_t len)
{
    size_t n = strlen(size);
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        const char *s = p;
        while (*s == ' ')
            s++;
        if (strncmp(s, size, n) == 0 && s[n] == ' ') {
            size_t l = strcspn(p, "\n");
            fb_copy(buf, len, p, l);
            return buf;
        }
    }
    return NULL;
}

static void test_ratios_and_flags(void)
{
    const char *names[] = {"gke-tcpxo-allreduce.json", "gke-socket-allreduce.json", "ib-nogdr-allreduce.json"};
    struct fb_result_set set;
    CHECK_INT(load_set(names, 3, &set), FB_OK);
    struct fb_compare_opts o = {.format = FB_CMP_TEXT, .noise = 0.05};
    struct fb_str out = {0};
    struct fb_err err = {0};
    CHECK_INT(fb_compare(&set, &o, &out, &err), FB_OK);
    const char *text = fb_str_get(&out);
    CHECK_CONTAINS(text, "ratios against [1] gke-a3-demo");
    CHECK_CONTAINS(text, "[2] gke-a3-broken");
    char line[512];
    /* 16G: 340.04 vs 3.95 (ratio 0.01, slower) vs 248.55 (0.73, slower) */
    CHECK(line_for(text, "16G", line, sizeof line) != NULL);
    CHECK_CONTAINS(line, "340.04");
    CHECK_CONTAINS(line, "3.95");
    CHECK_CONTAINS(line, "0.01 -");
    CHECK_CONTAINS(line, "0.73 -");
    /* 128M: ib-lab is 4 % above, inside the 5 % band: no flag. */
    CHECK(line_for(text, "128M", line, sizeof line) != NULL);
    CHECK_CONTAINS(line, "1.04");
    CHECK(strstr(line, "1.04 +") == NULL);
    CHECK(line_for(text, "64M", line, sizeof line) != NULL);
    CHECK_CONTAINS(line, "1.16 +");
    /* The summary keeps both averages. */
    CHECK_CONTAINS(text, "avg >= 1 MiB");
    CHECK_CONTAINS(text, "avg (nccl-tests)");
    fb_str_free(&out);
    /* Against the third one instead. */
    o.baseline = "ib-lab";
    CHECK_INT(fb_compare(&set, &o, &out, &err), FB_OK);
    CHECK_CONTAINS(fb_str_get(&out), "ratios against [3] ib-lab");
    CHECK(line_for(fb_str_get(&out), "16G", line, sizeof line) != NULL);
    CHECK_CONTAINS(line, "1.37 +");
    fb_str_free(&out);
    o.baseline = "7";
    CHECK_INT(fb_compare(&set, &o, &out, &err), FB_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "--baseline 7");
    fb_str_free(&out);
    fb_result_set_free(&set);
}

static void test_noise_band_widens_with_repetitions(void)
{
    /* Two repetitions of vm-2rank, the second 20 % slower at 1M: a 15 %
     * difference there is noise, one at 2M is not. */
    json_object *a = fixture_doc("vm-mpi-allreduce-2.json");
    json_object *rows = json_object_object_get(a, "rows");
    size_t n = json_object_array_length(rows);
    for (size_t i = 0; i < n; i++) {
        json_object *copy = NULL;
        json_object_deep_copy(json_object_array_get_idx(rows, i), &copy, NULL);
        json_object_object_add(copy, "run", json_object_new_int(1));
        unsigned long long bytes = (unsigned long long)json_object_get_int64(json_object_object_get(copy, "bytes"));
        if (bytes == FB_MIB) {
            double best = 0;
            for (const char *k = "out_of_place"; k; k = strcmp(k, "out_of_place") == 0 ? "in_place" : NULL)
                best = fmax(best, json_object_get_double(json_object_object_get(json_object_object_get(copy, k), "busbw_GBps")));
            json_object_object_add(json_object_object_get(copy, "out_of_place"), "busbw_GBps", json_object_new_double(best * 0.8));
            json_object_object_add(json_object_object_get(copy, "in_place"), "busbw_GBps", json_object_new_double(best * 0.8));
        }
        json_object_array_add(rows, copy);
    }
    json_object *b = fixture_doc("vm-mpi-allreduce-2.json");
    json_object_object_add(b, "cluster", json_object_new_string("other"));
    json_object *brows = json_object_object_get(b, "rows");
    for (size_t i = 0; i < json_object_array_length(brows); i++) {
        json_object *row = json_object_array_get_idx(brows, i);
        unsigned long long bytes = (unsigned long long)json_object_get_int64(json_object_object_get(row, "bytes"));
        if (bytes != FB_MIB && bytes != 2 * FB_MIB)
            continue;
        for (const char *k = "out_of_place"; k; k = strcmp(k, "out_of_place") == 0 ? "in_place" : NULL) {
            json_object *p = json_object_object_get(row, k);
            double v = json_object_get_double(json_object_object_get(p, "busbw_GBps"));
            json_object_object_add(p, "busbw_GBps", json_object_new_double(v * 0.85));
        }
    }
    struct fb_result_set set = {0};
    set.r = calloc(2, sizeof *set.r);
    struct fb_err err = {0};
    CHECK_INT(fb_result_from_json(a, "a.json", &set.r[0], &err), FB_OK);
    CHECK_INT(fb_result_from_json(b, "b.json", &set.r[1], &err), FB_OK);
    set.n = 2;
    struct fb_compare_opts o = {.format = FB_CMP_CSV, .noise = 0.05};
    struct fb_str out = {0};
    CHECK_INT(fb_compare(&set, &o, &out, &err), FB_OK);
    const char *csv = fb_str_get(&out);
    CHECK(fb_starts_with(csv, "bytes,vm-2rank busbw_GBps,other busbw_GBps,other ratio,other flag\n"));
    /* 1M: the baseline's repetitions spread 20 %, so 0.85 is inside the
     * band; at 2M they agree, so the same 0.85 is flagged. */
    char l1[256] = "", l2[256] = "";
    const char *p1 = strstr(csv, "\n1048576,"), *p2 = strstr(csv, "\n2097152,");
    CHECK(p1 != NULL && p2 != NULL);
    if (p1 && p2) {
        fb_copy(l1, sizeof l1, p1 + 1, strcspn(p1 + 1, "\n"));
        fb_copy(l2, sizeof l2, p2 + 1, strcspn(p2 + 1, "\n"));
    }
    size_t n1 = strlen(l1), n2 = strlen(l2);
    CHECK(n1 > 8 && strcmp(l1 + n1 - 8, ",0.8500,") == 0);
    CHECK(n2 > 9 && strcmp(l2 + n2 - 9, ",0.8500,-") == 0);
    fb_str_free(&out);
    fb_result_set_free(&set);
}

static void test_markdown_and_json(void)
{
    const char *names[] = {"vm-mpi-allreduce-4.json", "vm-mpi-allreduce-2.json"};
    struct fb_result_set set;
    CHECK_INT(load_set(names, 2, &set), FB_OK);
    struct fb_compare_opts o = {.format = FB_CMP_MARKDOWN, .noise = 0.05};
    struct fb_str out = {0};
    struct fb_err err = {0};
    CHECK_INT(fb_compare(&set, &o, &out, &err), FB_OK);
    CHECK_CONTAINS(fb_str_get(&out), "| size | [1] vm-4rank | [2] vm-2rank | ratio 2/1 |");
    CHECK_CONTAINS(fb_str_get(&out), "| ---: |");
    CHECK_CONTAINS(fb_str_get(&out), "\n- [1] vm-4rank:");
    fb_str_free(&out);
    o.format = FB_CMP_JSON;
    CHECK_INT(fb_compare(&set, &o, &out, &err), FB_OK);
    json_object *j = json_tokener_parse(fb_str_get(&out));
    CHECK(j != NULL);
    CHECK_STR(fb_json_get_string(j, "schema"), "fabric-bench.report-compare");
    json_object *sizes = json_object_object_get(j, "sizes");
    CHECK_INT(json_object_array_length(sizes), 15);
    json_object *first = json_object_array_get_idx(sizes, 0);
    CHECK_INT(json_object_get_int64(json_object_object_get(first, "bytes")), 1024);
    json_object *ratio = json_object_object_get(first, "ratio");
    CHECK_NEAR(json_object_get_double(json_object_array_get_idx(ratio, 0)), 1.0, 1e-12);
    double a = json_object_get_double(json_object_array_get_idx(json_object_object_get(first, "busbw_GBps"), 0));
    double b = json_object_get_double(json_object_array_get_idx(json_object_object_get(first, "busbw_GBps"), 1));
    CHECK_NEAR(json_object_get_double(json_object_array_get_idx(ratio, 1)), b / a, 1e-9);
    json_object *res = json_object_array_get_idx(json_object_object_get(j, "results"), 1);
    CHECK_STR(fb_json_get_string(res, "label"), "vm-2rank");
    CHECK(json_object_object_get(json_object_object_get(res, "summary"), "avg_busbw_ge_1MiB_GBps") != NULL);
    json_object_put(j);
    fb_str_free(&out);
    fb_result_set_free(&set);
}

static void test_mixed_collectives_refused_or_flagged(void)
{
    const char *names[] = {"vm-mpi-allreduce-4.json", "vm-mpi-allgather-4.json"};
    struct fb_result_set set;
    CHECK_INT(load_set(names, 2, &set), FB_OK);
    struct fb_compare_opts o = {.format = FB_CMP_TEXT, .noise = 0.05};
    struct fb_str out = {0};
    struct fb_err err = {0};
    CHECK_INT(fb_compare(&set, &o, &out, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "different collectives");
    CHECK_CONTAINS(err.msg, "--collective");
    CHECK_INT(out.len, 0);
    o.allow_mixed = true;
    fb_err_clear(&err);
    CHECK_INT(fb_compare(&set, &o, &out, &err), FB_OK);
    CHECK_CONTAINS(fb_str_get(&out), "MIXED COLLECTIVES");
    fb_str_free(&out);
    /* Same cluster twice: labels stay distinct. */
    CHECK_INT(fb_result_set_filter(&set, "all_gather", &err), FB_OK);
    CHECK_INT(set.n, 1);
    CHECK_INT(fb_result_set_filter(&set, "broadcast", &err), FB_ERR_INPUT);
    fb_result_set_free(&set);
    const char *same[] = {"gke-tcpxo-allreduce.json", "gke-tcpxo-incomplete.json"};
    CHECK_INT(load_set(same, 2, &set), FB_OK);
    o.format = FB_CMP_TEXT;
    CHECK_INT(fb_compare(&set, &o, &out, &err), FB_OK);
    CHECK_CONTAINS(fb_str_get(&out), "[1] gke-a3-demo#1");
    CHECK_CONTAINS(fb_str_get(&out), "[2] gke-a3-demo#2");
    char line[512];
    /* The unfinished run has no 16G: shown as missing, no ratio. */
    CHECK(line_for(fb_str_get(&out), "16G", line, sizeof line) != NULL);
    CHECK_CONTAINS(line, "340.04");
    fb_str_free(&out);
    fb_result_set_free(&set);
}

static void test_latest_per_cluster(void)
{
    /* Three runs of one cluster and one of another: --latest keeps two. */
    const char *starts[] = {"2026-11-01T10:00:00Z", "2026-11-03T10:00:00Z", "2026-11-02T10:00:00Z"};
    struct fb_result_set set = {0};
    set.r = calloc(4, sizeof *set.r);
    struct fb_err err = {0};
    for (int i = 0; i < 3; i++) {
        json_object *d = fixture_doc("vm-mpi-allreduce-4.json");
        json_object_object_add(d, "start_time", json_object_new_string(starts[i]));
        CHECK_INT(fb_result_from_json(d, starts[i], &set.r[set.n++], &err), FB_OK);
    }
    CHECK_INT(fb_result_from_json(fixture_doc("vm-mpi-allreduce-2.json"), "other", &set.r[set.n++], &err), FB_OK);
    fb_result_set_latest(&set);
    CHECK_INT(set.n, 2);
    CHECK_STR(set.r[0].start_time, "2026-11-03T10:00:00Z");
    CHECK_STR(set.r[1].cluster, "vm-2rank");
    fb_result_set_free(&set);
}

int main(void)
{
    RUN(test_ratios_and_flags);
    RUN(test_noise_band_widens_with_repetitions);
    RUN(test_markdown_and_json);
    RUN(test_mixed_collectives_refused_or_flagged);
    RUN(test_latest_per_cluster);
    return fbt_done();
}
