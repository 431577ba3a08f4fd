/* plot: the gnuplot script (log2 x axis, one curve per result, reference
 * lines, title, quoting) and the error paths around running gnuplot. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "report_fixture.h"
#include "report/plot.h"

static enum fb_status two_results(struct fb_result_set *set)
{
    const char *args[] = {RESULTS "gke-tcpxo-allreduce.json", RESULTS "gke-socket-allreduce.json"};
    struct fb_err err = {0};
    return fb_result_set_load(args, 2, set, &err);
}

static void test_script(void)
{
    struct fb_result_set set;
    CHECK_INT(two_results(&set), FB_OK);
    const char *data[] = {"/tmp/d0.dat", "/tmp/it's.dat"};
    struct fb_plot_line lines[] = {{"gke-a3-mega-tcpxo: typical 340 GB/s at 16G", 340, false},
                                   {"gke-a3-mega-tcpxo: floor 300 GB/s", 300, true}};
    struct fb_plot_opts o = {.out = "out.png", .width = 1000, .height = 600};
    struct fb_str s = {0};
    fb_plot_script(&set, data, lines, 2, &o, "/tmp/out.png.tmp", &s);
    const char *t = fb_str_get(&s);
    CHECK_CONTAINS(t, "set terminal pngcairo size 1000,600");
    CHECK_CONTAINS(t, "set output '/tmp/out.png.tmp'");
    CHECK_CONTAINS(t, "set logscale x 2");
    CHECK_CONTAINS(t, "set xrange [1024:17179869184]");
    CHECK_CONTAINS(t, "\"1K\" 1024");
    CHECK_CONTAINS(t, "\"16G\" 17179869184");
    CHECK_CONTAINS(t, "set title 'all_reduce busBW vs message size: gke-a3-demo, gke-a3-broken'");
    CHECK_CONTAINS(t, "'/tmp/d0.dat' using 1:2 with linespoints");
    /* A quote in a name is doubled inside gnuplot's single quotes. */
    CHECK_CONTAINS(t, "'/tmp/it''s.dat'");
    CHECK_CONTAINS(t, "title 'gke-a3-broken (16 ranks, 2 nodes, Socket)'");
    CHECK_CONTAINS(t, "340 with lines lw 1.5 dt 2");
    CHECK_CONTAINS(t, "300 with lines lw 1.5 dt 3");
    CHECK_CONTAINS(t, "set yrange [0:*]");
    fb_str_free(&s);
    o.out = "out.svg";
    o.logy = true;
    o.title = "mine";
    fb_plot_script(&set, data, lines, 0, &o, "/tmp/x.svg", &s);
    CHECK_CONTAINS(fb_str_get(&s), "set terminal svg size 1000,600");
    CHECK_CONTAINS(fb_str_get(&s), "set logscale y 10");
    CHECK_CONTAINS(fb_str_get(&s), "set title 'mine'");
    CHECK(strstr(fb_str_get(&s), "with lines lw 1.5") == NULL);
    fb_str_free(&s);
    fb_result_set_free(&set);
}

static void test_errors(void)
{
    struct fb_result_set set;
    CHECK_INT(two_results(&set), FB_OK);
    struct fb_err err = {0};
    struct fb_plot_opts o = {.out = "/tmp/fbplot-test.jpg", .width = 1000, .height = 600};
    CHECK_INT(fb_plot(&set, NULL, 0, &o, &err), FB_ERR_USAGE);
    CHECK_CONTAINS(err.msg, ".png or .svg");
    fb_err_clear(&err);
    o.out = "/tmp/fbplot-test.png";
    o.width = 10;
    CHECK_INT(fb_plot(&set, NULL, 0, &o, &err), FB_ERR_USAGE);
    fb_err_clear(&err);
    o.width = 1000;
    /* No gnuplot: "unavailable", nothing written, no temporary left. */
    setenv("FABRIC_GNUPLOT", "/nonexistent/gnuplot", 1);
    unlink(o.out);
    CHECK_INT(fb_plot(&set, NULL, 0, &o, &err), FB_ERR_UNAVAIL);
    CHECK_CONTAINS(err.msg, "gnuplot");
    struct stat sb;
    CHECK(stat(o.out, &sb) != 0);
    /* A gnuplot that complains: its first line is the error. */
    fb_err_clear(&err);
    setenv("FABRIC_GNUPLOT", "tests/report/fake-gnuplot-warns.sh", 1);
    CHECK_INT(fb_plot(&set, NULL, 0, &o, &err), FB_ERR_RUNTIME);
    CHECK_CONTAINS(err.msg, "gnuplot reported: warning: fake");
    CHECK(stat(o.out, &sb) != 0);
    unsetenv("FABRIC_GNUPLOT");
    fb_result_set_free(&set);
    struct fb_result_set empty = {0};
    fb_err_clear(&err);
    CHECK_INT(fb_plot(&empty, NULL, 0, &o, &err), FB_ERR_INPUT);
}

int main(void)
{
    RUN(test_script);
    RUN(test_errors);
    return fbt_done();
}
