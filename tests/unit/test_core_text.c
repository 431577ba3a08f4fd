/* The shared helpers of core that every module uses instead of its own copy:
 * text building, name order, JSON parsing and look-ups, time and labels,
 * results paths. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/clock.h"
#include "core/envelope.h"
#include "core/jsonio.h"
#include "core/text.h"

static void test_strbuf_truncates_visibly(void)
{
    char buf[12];
    size_t used = 0;
    fb_strbuf_append(buf, sizeof buf, &used, "%s", "abc");
    fb_strbuf_append(buf, sizeof buf, &used, ", %s", "def");
    CHECK_STR(buf, "abc, def");
    fb_strbuf_append(buf, sizeof buf, &used, ", %s", "ghijkl");
    CHECK_STR(buf, "abc, def...");
    CHECK_INT(used, sizeof buf - 1);
    fb_strbuf_append(buf, sizeof buf, &used, "%s", "more");
    CHECK_STR(buf, "abc, def...");
}

static void test_join_names(void)
{
    const char *names[] = {"mlx5_0", "mlx5_1", "mlx5_2"};
    char buf[64];
    fb_join_names(names, 3, "none", buf, sizeof buf);
    CHECK_STR(buf, "mlx5_0, mlx5_1, mlx5_2");
    fb_join_names(names, 0, "none", buf, sizeof buf);
    CHECK_STR(buf, "none");
    char small[10];
    fb_join_names(names, 3, "none", small, sizeof small);
    CHECK_STR(small, "mlx5_0...");
}

static void test_names_sort_in_version_order(void)
{
    const char *names[] = {"mlx5_10", "mlx5_2", "mlx5_1", "eth10", "eth2"};
    qsort(names, 5, sizeof *names, fb_name_order);
    CHECK_STR(names[0], "eth2");
    CHECK_STR(names[1], "eth10");
    CHECK_STR(names[2], "mlx5_1");
    CHECK_STR(names[3], "mlx5_2");
    CHECK_STR(names[4], "mlx5_10");
}

static void test_json_parse_refuses_what_is_not_one_document(void)
{
    struct fb_err err = {0};
    struct fb_json_syntax why;
    json_object *doc = NULL;
    const char good[] = " {\"a\": 1}\n";
    CHECK_INT(fb_json_parse_text("good", good, sizeof good - 1, &doc, &why, &err), FB_OK);
    CHECK(doc != NULL);
    json_object_put(doc);

    const char cut[] = "{\"a\": [1, 2";
    err = (struct fb_err){0};
    CHECK_INT(fb_json_parse_text("cut.json", cut, sizeof cut - 1, &doc, &why, &err), FB_ERR_INPUT);
    CHECK(doc == NULL);
    CHECK(why.truncated);
    CHECK_CONTAINS(err.msg, "cut.json is truncated");

    const char bad[] = "{\"a\": nope}";
    err = (struct fb_err){0};
    CHECK_INT(fb_json_parse_text("bad.json", bad, sizeof bad - 1, &doc, &why, &err), FB_ERR_INPUT);
    CHECK(doc == NULL);
    CHECK(!why.truncated);
    CHECK_CONTAINS(err.msg, "bad.json is not valid JSON");

    const char two[] = "{\"a\": 1} {\"b\": 2}";
    err = (struct fb_err){0};
    CHECK_INT(fb_json_parse_text("two.json", two, sizeof two - 1, &doc, &why, &err), FB_ERR_INPUT);
    CHECK(doc == NULL);
    CHECK_INT(why.offset, 9);
    CHECK_CONTAINS(err.msg, "at byte 9");
}

static void test_json_member_is_safe_on_anything(void)
{
    json_object *doc = json_tokener_parse("{\"s\": \"x\", \"n\": 2.5, \"o\": {\"k\": true}, \"z\": null}");
    CHECK(fb_json_member(NULL, "s") == NULL);
    CHECK(fb_json_member(fb_json_member(doc, "s"), "k") == NULL); /* a string, not an object */
    CHECK(fb_json_member(doc, "z") == NULL);
    CHECK(fb_json_member(doc, "o") != NULL);
    CHECK_STR(fb_json_get_string(doc, "s"), "x");
    CHECK(fb_json_get_string(doc, "n") == NULL);
    CHECK(fb_json_get_string(NULL, "s") == NULL);
    double d = 0;
    CHECK(fb_json_get_double(doc, "n", &d));
    CHECK_NEAR(d, 2.5, 0);
    bool b = false;
    CHECK(fb_json_get_bool(fb_json_member(doc, "o"), "k", &b) && b);
    json_object_put(doc);
}

static void test_utc_at_a_given_time(void)
{
    char buf[32];
    fb_utc_iso_at(0, buf, sizeof buf);
    CHECK_STR(buf, "1970-01-01T00:00:00Z");
    fb_utc_iso_at(1796083200LL, buf, sizeof buf);
    CHECK_STR(buf, "2026-12-01T00:00:00Z");
    fb_utc_iso_at(-5, buf, sizeof buf);
    CHECK_STR(buf, "1970-01-01T00:00:00Z");
}

static void test_labels_and_results_paths(void)
{
    char label[16];
    fb_label_safe("lab a/b", label, sizeof label);
    CHECK_STR(label, "lab_a_b");
    unsetenv("FABRIC_CLUSTER");
    fb_cluster_label(NULL, "node-1", label, sizeof label);
    CHECK_STR(label, "node-1");
    setenv("FABRIC_CLUSTER", "from-env", 1);
    fb_cluster_label("", "node-1", label, sizeof label);
    CHECK_STR(label, "from-env");
    unsetenv("FABRIC_CLUSTER");

    struct fb_err err = {0};
    char path[128];
    struct fb_results_name given = {"out.json", "results", "lab", "all_reduce"};
    CHECK_INT(fb_results_path(&given, path, sizeof path, &err), FB_OK);
    CHECK_STR(path, "out.json");
    struct fb_results_name made = {NULL, "results", "lab", "probe-tcp"};
    CHECK_INT(fb_results_path(&made, path, sizeof path, &err), FB_OK);
    CHECK(strncmp(path, "results/lab/20", 14) == 0);
    CHECK_CONTAINS(path, "Z-probe-tcp.json");
    char tiny[8];
    CHECK_INT(fb_results_path(&made, tiny, sizeof tiny, &err), FB_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "--results-dir");
}

static void test_launcher_prefixes_are_removed(void)
{
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"[1,0]<stdout>:# nThread 1 nGpus 1", "# nThread 1 nGpus 1"},
        {"[1,12]<stderr>:  1024  256  float", "1024  256  float"},
        {"0: #  Rank  0 Group  0", "#  Rank  0 Group  0"},
        {"  13:   8388608   2097152", "8388608   2097152"},
        {"2026-12-01T19:21:43.123456789Z # Avg bus bandwidth : 1.5", "# Avg bus bandwidth : 1.5"},
        {"2026-12-01T19:21:43+01:00 1: [1,1]<stdout>:x", "x"},
        /* Interleaved ranks: a tag inside a row goes too. */
        {"  1048576  262144  float  sum  -1[1,1]<stdout>:   93.64", "1048576  262144  float  sum  -1   93.64"},
        /* Not prefixes: a host:pid:tid NCCL line, a number ending a line. */
        {"node-1:21:21 [0] NCCL INFO Using network IB", "node-1:21:21 [0] NCCL INFO Using network IB"},
        {"12:34 is a time", "12:34 is a time"},
        {"[0x07] NVIDIA A100", "[0x07] NVIDIA A100"},
        {"\033[32m# Avg bus bandwidth\033[0m : 1.5", "# Avg bus bandwidth : 1.5"},
        {"\033[1;33m[1,0]<stdout>:\033[0m     8388608", "8388608"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", cases[i].in);
        CHECK_STR(fb_strip_launcher_prefixes(buf), cases[i].want);
    }
}

int main(void)
{
    RUN(test_launcher_prefixes_are_removed);
    RUN(test_strbuf_truncates_visibly);
    RUN(test_join_names);
    RUN(test_names_sort_in_version_order);
    RUN(test_json_parse_refuses_what_is_not_one_document);
    RUN(test_json_member_is_safe_on_anything);
    RUN(test_utc_at_a_given_time);
    RUN(test_labels_and_results_paths);
    return fbt_done();
}
