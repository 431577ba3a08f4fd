/* fabric-report export: escaping per format, number spelling, one series
 * per label set, the family layout of both metrics formats, and the JUnit
 * and CTRF shapes of a failed, a skipped and a passed case. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/jsonio.h"
#include "report/export.h"

static char *escaped_label(const char *v)
{
    struct fb_str s = {0};
    fb_export_label_escape(&s, v);
    return s.s != NULL ? s.s : strdup("");
}

static char *escaped_xml(const char *v)
{
    struct fb_str s = {0};
    fb_export_xml_escape(&s, v);
    return s.s != NULL ? s.s : strdup("");
}

static char *number(double v)
{
    struct fb_str s = {0};
    fb_export_number(&s, v);
    return s.s;
}

static void test_label_values_escape_backslash_quote_newline(void)
{
    char *e = escaped_label("a\\b\"c\nd");
    CHECK_STR(e, "a\\\\b\\\"c\\nd");
    free(e);
    e = escaped_label("plain host-1:mlx5_0[3]");
    CHECK_STR(e, "plain host-1:mlx5_0[3]");
    free(e);
}

static void test_xml_escapes_markup_and_controls(void)
{
    char *e = escaped_xml("<a & 'b'> \"c\"\n\x01");
    CHECK_STR(e, "&lt;a &amp; &apos;b&apos;&gt; &quot;c&quot;&#10;?");
    free(e);
}

static void test_numbers_as_the_text_formats_spell_them(void)
{
    char *n = number(NAN);
    CHECK_STR(n, "NaN");
    free(n);
    n = number(INFINITY);
    CHECK_STR(n, "+Inf");
    free(n);
    n = number(-INFINITY);
    CHECK_STR(n, "-Inf");
    free(n);
    n = number(22);
    CHECK_STR(n, "22");
    free(n);
    n = number(0.1);
    CHECK(strtod(n, NULL) == 0.1);
    free(n);
}

static void test_a_series_is_given_once(void)
{
    struct fb_export x = {0};
    struct fb_err err = {0};
    CHECK_INT(fb_export_add_sample(&x, FB_FAM_BUSBW, 1, &err, "cluster", "a", "size", "8", (const char *)NULL), FB_OK);
    CHECK_INT(fb_export_add_sample(&x, FB_FAM_BUSBW, 2, &err, "cluster", "a", "size", "8", (const char *)NULL), FB_OK);
    CHECK_INT(fb_export_add_sample(&x, FB_FAM_ALGBW, 3, &err, "cluster", "a", "size", "8", (const char *)NULL), FB_OK);
    /* A NULL value leaves the label out. */
    CHECK_INT(fb_export_add_sample(&x, FB_FAM_BUSBW, 4, &err, "cluster", "a", "backend", (const char *)NULL,
                                   (const char *)NULL), FB_OK);
    CHECK_INT(x.nsamples, 3);
    CHECK_INT(x.duplicates, 1);
    CHECK(x.samples[0].value == 2); /* the later document wins */
    CHECK_STR(x.samples[2].labels, "cluster=\"a\"");
    fb_export_free(&x);
}

static void add_cases(struct fb_export *x)
{
    struct fb_err err = {0};
    fb_export_add_sample(x, FB_FAM_VERDICT, 22, &err, "cluster", "c\"1", "verdict", "FAIL", (const char *)NULL);
    fb_export_add_sample(x, FB_FAM_BUSBW, 1.5e9, &err, "cluster", "c\"1", "size", "1024", (const char *)NULL);
    struct fb_export_case fail = {"doctor cluster c (f.json)", "mtu", FB_CASE_FAILED, "fail", 0, "eth1 <1500>", "set mtu & retry"};
    struct fb_export_case skip = {"doctor cluster c (f.json)", "ib-hca", FB_CASE_SKIPPED, "skip", 0, "no IB here", NULL};
    struct fb_export_case pass = {"verdicts c (r.json)", "all_reduce c", FB_CASE_PASSED, "PASS", 1.25, "PASS", "fine"};
    fb_export_add_case(x, &fail, &err);
    fb_export_add_case(x, &skip, &err);
    fb_export_add_case(x, &pass, &err);
}

static void test_metrics_families_in_table_order_with_unit_and_eof(void)
{
    struct fb_export x = {0};
    add_cases(&x);
    struct fb_str om = {0}, prom = {0};
    fb_export_write_metrics(&x, true, &om);
    fb_export_write_metrics(&x, false, &prom);
    const char *t = fb_str_get(&om);
    const char *busbw = strstr(t, "# TYPE fabric_bench_busbw_bytes_per_second gauge");
    const char *verdict = strstr(t, "# TYPE fabric_bench_verdict gauge");
    CHECK(busbw != NULL && verdict != NULL && busbw < verdict);
    CHECK_CONTAINS(t, "# UNIT fabric_bench_busbw_bytes_per_second bytes_per_second\n");
    CHECK_CONTAINS(t, "fabric_bench_busbw_bytes_per_second{cluster=\"c\\\"1\",size=\"1024\"} 1500000000\n");
    CHECK_CONTAINS(t, "fabric_bench_verdict{cluster=\"c\\\"1\",verdict=\"FAIL\"} 22\n");
    CHECK(om.len > 6 && strcmp(t + om.len - 6, "# EOF\n") == 0);
    CHECK(strstr(fb_str_get(&prom), "# UNIT") == NULL && strstr(fb_str_get(&prom), "# EOF") == NULL);
    CHECK(strstr(t, "fabric_bench_doctor_check") == NULL); /* no samples, no family */
    fb_str_free(&om);
    fb_str_free(&prom);
    fb_export_free(&x);
}

static void test_junit_failure_skipped_and_escaping(void)
{
    struct fb_export x = {0};
    add_cases(&x);
    struct fb_str j = {0};
    fb_export_write_junit(&x, &j);
    const char *t = fb_str_get(&j);
    CHECK_CONTAINS(t, "<testsuites name=\"fabric-bench\" tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\"");
    CHECK_CONTAINS(t, "<testsuite name=\"doctor cluster c (f.json)\" tests=\"2\" failures=\"1\" errors=\"0\" skipped=\"1\"");
    CHECK_CONTAINS(t, "<failure message=\"eth1 &lt;1500&gt;\" type=\"fail\">set mtu &amp; retry</failure>");
    CHECK_CONTAINS(t, "<skipped message=\"no IB here\"/>");
    CHECK_CONTAINS(t, "<testcase name=\"all_reduce c\" classname=\"verdicts c (r.json)\" time=\"1.250000\"/>");
    fb_str_free(&j);
    fb_export_free(&x);
}

static void test_ctrf_statuses_and_summary(void)
{
    struct fb_export x = {0};
    add_cases(&x);
    struct fb_str c = {0};
    fb_export_write_ctrf(&x, "9.9", &c);
    json_object *doc = NULL;
    struct fb_err err = {0};
    struct fb_json_syntax why;
    CHECK_INT(fb_json_parse_text("ctrf", fb_str_get(&c), c.len, &doc, &why, &err), FB_OK);
    json_object *results = fb_json_member(doc, "results"), *summary = fb_json_member(results, "summary");
    json_object *tests = fb_json_member(results, "tests");
    CHECK_STR(fb_json_get_string(doc, "reportFormat"), "CTRF");
    CHECK_STR(fb_json_get_string(fb_json_member(results, "tool"), "name"), "fabric-bench");
    int64_t n = -1;
    CHECK(fb_json_get_int64(summary, "failed", &n) && n == 1);
    CHECK(fb_json_get_int64(summary, "skipped", &n) && n == 1);
    CHECK(fb_json_get_int64(summary, "passed", &n) && n == 1);
    CHECK_INT(json_object_array_length(tests), 3);
    json_object *first = json_object_array_get_idx(tests, 0);
    CHECK_STR(fb_json_get_string(first, "status"), "failed");
    CHECK_STR(fb_json_get_string(first, "message"), "eth1 <1500>");
    CHECK_STR(fb_json_get_string(first, "trace"), "set mtu & retry");
    CHECK(fb_json_get_int64(json_object_array_get_idx(tests, 2), "duration", &n) && n == 1250);
    json_object_put(doc);
    fb_str_free(&c);
    fb_export_free(&x);
}

/* OpenMetrics: a family with a unit ends in _UNIT; every family is the
 * project's and snake_case. */
static void test_family_names_end_in_their_unit(void)
{
    for (int f = 0; f < FB_FAM_COUNT; f++) {
        const struct fb_export_family_desc *d = fb_export_family((enum fb_export_family)f);
        CHECK(strncmp(d->name, "fabric_bench_", 13) == 0);
        CHECK(strspn(d->name, "abcdefghijklmnopqrstuvwxyz_") == strlen(d->name));
        CHECK(d->help != NULL && strchr(d->help, '\n') == NULL && strchr(d->help, '\\') == NULL);
        if (d->unit != NULL) {
            size_t n = strlen(d->name), u = strlen(d->unit);
            CHECK(n > u + 1 && d->name[n - u - 1] == '_' && strcmp(d->name + n - u, d->unit) == 0);
        }
    }
}

static void test_format_names(void)
{
    enum fb_export_format f;
    CHECK(fb_export_format_parse("openmetrics", &f) && f == FB_EXPORT_OPENMETRICS);
    CHECK(fb_export_format_parse("prometheus", &f) && f == FB_EXPORT_PROMETHEUS);
    CHECK(fb_export_format_parse("junit", &f) && f == FB_EXPORT_JUNIT);
    CHECK(fb_export_format_parse("ctrf", &f) && f == FB_EXPORT_CTRF);
    CHECK(!fb_export_format_parse("xml", &f));
}

int main(void)
{
    RUN(test_label_values_escape_backslash_quote_newline);
    RUN(test_xml_escapes_markup_and_controls);
    RUN(test_numbers_as_the_text_formats_spell_them);
    RUN(test_a_series_is_given_once);
    RUN(test_metrics_families_in_table_order_with_unit_and_eof);
    RUN(test_junit_failure_skipped_and_escaping);
    RUN(test_ctrf_statuses_and_summary);
    RUN(test_family_names_end_in_their_unit);
    RUN(test_format_names);
    return fbt_done();
}
