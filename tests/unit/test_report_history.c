/* history's arithmetic (median, MAD, the outlier rule with its floor), its
 * grouping into series in start_time order, and the HTML report's escaping
 * and SVG lines. */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "report_fixture.h"
#include "report/history.h"
#include "report/html_svg.h"

static void test_median_odd_even_unsorted(void)
{
    double odd[] = {5, 1, 3};
    CHECK(fb_hist_median(odd, 3) == 3);
    double even[] = {10, 2, 8, 4};
    CHECK(fb_hist_median(even, 4) == 6);
    double one[] = {7};
    CHECK(fb_hist_median(one, 1) == 7);
}

static void test_mad(void)
{
    double v[] = {1, 2, 3, 4, 100};
    /* deviations from 3: 2 1 0 1 97 -> median 1; the 100 does not pull it */
    CHECK(fb_hist_mad(v, 5, 3) == 1);
    CHECK(v[4] == 100); /* kept as given */
    double flat[] = {4, 4, 4};
    CHECK(fb_hist_mad(flat, 3, 4) == 0);
}

/* The walk outward from the median gives what sorting the deviations
 * gives, for odd and even counts, ties, and values on one side. */
static void test_mad_of_sorted_values_walks_from_the_median(void)
{
    unsigned seed = 12345;
    for (size_t n = 1; n <= 60; n++) {
        for (int round = 0; round < 20; round++) {
            double v[60];
            for (size_t i = 0; i < n; i++) {
                seed = seed * 1103515245u + 12345u;
                v[i] = (double)((seed >> 16) % (round % 2 ? 7 : 1000)); /* many ties every other round */
            }
            double m = fb_hist_median(v, n); /* sorts v */
            double want = fb_hist_mad(v, n, m), got = fb_hist_mad_sorted(v, n, m);
            if (want != got)
                printf("#   n %zu round %d: %g vs %g\n", n, round, got, want);
            CHECK(want == got);
        }
    }
}

static void test_too_few_earlier_runs(void)
{
    struct fb_hist_judgement j;
    double two[] = {10, 10};
    fb_hist_judge(1, two, 2, 3, 0.8, &j);
    CHECK_INT(j.state, FB_HIST_FEW);
    CHECK(isnan(j.median) && isnan(j.ratio));
    fb_hist_judge(NAN, two, 2, 3, 0.8, &j);
    CHECK_INT(j.state, FB_HIST_NO_SIZE);
}

static void test_outlier_needs_spread_and_floor(void)
{
    struct fb_hist_judgement j;
    /* No spread: every drop is below median - k*MAD; the floor decides. */
    double flat[] = {10, 10, 10};
    fb_hist_judge(9, flat, 3, 3, 0.8, &j);
    CHECK_INT(j.state, FB_HIST_OK);
    CHECK(fabs(j.ratio - 0.9) < 1e-12);
    double flat2[] = {10, 10, 10};
    fb_hist_judge(7, flat2, 3, 3, 0.8, &j);
    CHECK_INT(j.state, FB_HIST_OUTLIER);
    CHECK(fabs(j.ratio - 0.7) < 1e-12 && j.mad == 0 && j.median == 10);
    /* A wide spread (MAD 4 around 10): 5 is above 10 - 3*4, not flagged
     * although it is half the median; with k = 1 it is. */
    double wide[] = {6, 10, 14, 2, 18};
    fb_hist_judge(5, wide, 5, 3, 0.8, &j);
    CHECK_INT(j.state, FB_HIST_OK);
    CHECK(j.mad == 4);
    double wide2[] = {6, 10, 14, 2, 18};
    fb_hist_judge(5, wide2, 5, 1, 0.8, &j);
    CHECK_INT(j.state, FB_HIST_OUTLIER);
    /* Faster than the history is never an outlier. */
    double flat3[] = {10, 10, 10};
    fb_hist_judge(30, flat3, 3, 3, 0.8, &j);
    CHECK_INT(j.state, FB_HIST_OK);
}

/* A result of the 2-rank fixture started on `day`, its 16M figure `gbps`. */
static void fixture_run(struct fb_result *r, const char *cluster, int day, double gbps, bool complete)
{
    json_object *doc = fixture_doc("vm-mpi-allreduce-2.json");
    char t[32];
    snprintf(t, sizeof t, "2026-01-%02dT00:00:00Z", day);
    set_key(doc, "start_time", json_object_new_string(t));
    set_key(doc, "cluster", json_object_new_string(cluster));
    set_busbw(doc, 16777216, gbps, gbps);
    struct fb_err err = {0};
    CHECK(result_of(doc, r, &err) == FB_OK);
    r->complete = complete;
}

static void test_series_in_time_order(void)
{
    struct fb_result r[6];
    /* given out of order: A days 3 1 4 2 (day 4 slow), B day 1, A day 5 incomplete */
    fixture_run(&r[0], "A", 3, 10.2, true);
    fixture_run(&r[1], "A", 1, 10.0, true);
    fixture_run(&r[2], "A", 4, 4.0, true);
    fixture_run(&r[3], "A", 2, 9.8, true);
    fixture_run(&r[4], "B", 1, 1.0, true);
    fixture_run(&r[5], "A", 5, 0.5, false);
    struct fb_result_set set = {.r = r, .n = 6};
    struct fb_hist_opts o = {.k = 3, .floor = 0.8};
    struct fb_history h;
    struct fb_err err = {0};
    CHECK(fb_history_build(&set, &o, &h, &err) == FB_OK);
    CHECK_INT(h.n, 2);
    const struct fb_hist_series *a = &h.s[0];
    CHECK_STR(a->cluster, "A");
    CHECK_INT(a->n, 5);
    CHECK_INT(a->bytes, 16777216);
    for (size_t k = 1; k < a->n; k++)
        CHECK(strcmp(a->runs[k - 1].r->start_time, a->runs[k].r->start_time) < 0);
    CHECK_INT(a->runs[2].j.state, FB_HIST_FEW);
    CHECK_INT(a->runs[3].j.state, FB_HIST_OUTLIER);
    CHECK(fabs(a->runs[3].j.ratio - 0.4) < 1e-9);
    CHECK_INT(a->runs[4].j.state, FB_HIST_INCOMPLETE);
    CHECK_INT(a->runs[4].nearlier, 4);
    CHECK(!fb_history_latest_outlier(&h)); /* the newest of A is incomplete, B has one run */
    fb_history_free(&h);
    /* Without the incomplete run, A ends in the outlier. */
    set.n = 5;
    CHECK(fb_history_build(&set, &o, &h, &err) == FB_OK);
    CHECK(fb_history_latest_outlier(&h));
    json_object *doc = fb_history_json(&h);
    CHECK_STR(fb_json_get_string(doc, "kind"), "history");
    fb_history_free(&h);
    json_object_put(doc);
    for (int i = 0; i < 6; i++)
        fb_result_free(&r[i]);
}

static void test_html_escape(void)
{
    struct fb_str s = {0};
    fb_html_escape(&s, "<script>alert(\"x\" & 'y')</script> caf\xc3\xa9");
    CHECK_STR(fb_str_get(&s), "&lt;script&gt;alert(&quot;x&quot; &amp; &#39;y&#39;)&lt;/script&gt; caf\xc3\xa9");
    fb_str_free(&s);
    fb_html_escape(&s, NULL);
    CHECK_STR(fb_str_get(&s), "");
    fb_str_free(&s);
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void test_svg_lines(void)
{
    double x[] = {65536, 131072, 262144, 524288}, y[] = {1, NAN, 3, 4};
    bool marked[] = {false, false, false, true};
    struct fb_svg_series s = {.label = "<b>&", .x = x, .y = y, .marked = marked, .n = 4};
    struct fb_svg_plot p = {.title = "t<1>", .xlabel = "size", .ylabel = "GB/s", .log2x = true};
    struct fb_str out = {0};
    fb_svg_line_plot(&out, &p, &s, 1);
    const char *svg = fb_str_get(&out);
    CHECK_INT(count(svg, "<svg "), 1);
    CHECK_INT(count(svg, "<polyline"), 1);
    const char *pts = strstr(svg, "points=\"");
    CHECK(pts != NULL);
    size_t commas = 0;
    for (const char *c = pts ? pts + 8 : ""; *c && *c != '"'; c++)
        commas += *c == ',';
    CHECK_INT(commas, 3); /* the NAN point is left out */
    CHECK_INT(count(svg, "class=\"outlier\""), 1);
    CHECK(strstr(svg, "t&lt;1&gt;") != NULL && strstr(svg, "&lt;b&gt;&amp;") != NULL);
    CHECK(strstr(svg, "<b>") == NULL);
    fb_str_free(&out);
}

int main(void)
{
    RUN(test_median_odd_even_unsorted);
    RUN(test_mad);
    RUN(test_mad_of_sorted_values_walks_from_the_median);
    RUN(test_too_few_earlier_runs);
    RUN(test_outlier_needs_spread_and_floor);
    RUN(test_series_in_time_order);
    RUN(test_html_escape);
    RUN(test_svg_lines);
    return fbt_done();
}
