/* Axis ticks of the HTML report's plots: round values (1, 2 or 5 times a
 * power of ten on linear axes, decades with 2 and 5 on log10 axes, powers
 * of two on byte axes), never more than asked, always covering the data. */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "report/html_svg.h"

/* v is k x step for a whole k, within rounding. */
static bool multiple_of(double v, double step)
{
    double k = v / step;
    return fabs(k - round(k)) < 1e-6;
}

/* 1, 2 or 5 times a power of ten. */
static bool round_step(double step)
{
    double mant = step / pow(10, floor(log10(step) + 1e-9));
    return fabs(mant - 1) < 1e-6 || fabs(mant - 2) < 1e-6 || fabs(mant - 5) < 1e-6;
}

static void expect_ticks(const struct fb_ticks *t, const double *want, size_t n)
{
    CHECK_INT(t->n, n);
    for (size_t i = 0; i < n && i < t->n; i++)
        CHECK_NEAR(t->v[i], want[i], 1e-9 * fabs(want[i]));
}

/* The figures a busy 2-core host plots: 0 to 4.98 GB/s reads 0, 1, ... 5,
 * not 0, 1.37, 2.74 (a quarter of 1.1 x the peak). */
static void test_linear_ticks_are_round(void)
{
    struct fb_ticks t;
    fb_axis_ticks(FB_AXIS_LINEAR, 0, 4.98, 6, &t);
    expect_ticks(&t, (const double[]){0, 1, 2, 3, 4, 5}, 6);
    CHECK_NEAR(t.hi, 5, 1e-12);
    fb_axis_ticks(FB_AXIS_LINEAR, 0, 1.64, 6, &t);
    expect_ticks(&t, (const double[]){0, 0.5, 1, 1.5, 2}, 5);
    fb_axis_ticks(FB_AXIS_LINEAR, 0, 340, 6, &t);
    expect_ticks(&t, (const double[]){0, 100, 200, 300, 400}, 5);
    fb_axis_ticks(FB_AXIS_LINEAR, 0, 0.0373, 6, &t);
    expect_ticks(&t, (const double[]){0, 0.01, 0.02, 0.03, 0.04}, 5);
    /* Exactly on a tick: no tick added past it. */
    fb_axis_ticks(FB_AXIS_LINEAR, 0, 5, 6, &t);
    CHECK_NEAR(t.hi, 5, 1e-12);
    /* Nothing measured (every busBW 0): a unit axis, not a division by 0. */
    fb_axis_ticks(FB_AXIS_LINEAR, 0, 0, 6, &t);
    CHECK_NEAR(t.lo, 0, 0);
    CHECK_NEAR(t.hi, 1, 1e-12);
    CHECK(t.n >= 2);
}

/* Any range: at most `most` ticks, at least two, a round step, every tick
 * a multiple of it, the data inside the axis. */
static void test_linear_ticks_hold_for_any_range(void)
{
    srand(7);
    int bad = 0;
    for (int i = 0; i < 20000; i++) {
        double hi = pow(10, (double)(rand() % 1400) / 100 - 7) * (1 + (double)(rand() % 1000) / 1000);
        double lo = rand() % 3 == 0 ? hi * (double)(rand() % 900) / 1000 : 0;
        size_t most = 3 + (size_t)(rand() % 10);
        struct fb_ticks t;
        fb_axis_ticks(FB_AXIS_LINEAR, lo, hi, most, &t);
        double step = t.n >= 2 ? t.v[1] - t.v[0] : 0;
        bool ok = t.n >= 2 && t.n <= most && round_step(step) && t.lo <= lo && t.hi >= hi * (1 - 1e-12) &&
                  t.v[0] == t.lo && fabs(t.v[t.n - 1] - t.hi) <= 1e-9 * t.hi;
        for (size_t k = 0; ok && k < t.n; k++)
            ok = multiple_of(t.v[k], step);
        if (!ok && bad++ < 3)
            printf("# linear [%g, %g] most %zu: %zu ticks, step %g, axis [%g, %g]\n", lo, hi, most, t.n, step, t.lo, t.hi);
    }
    CHECK_INT(bad, 0);
}

/* Byte axes: powers of two, the exponent stepping 1, 2, 5 or 10 so that
 * 1K, 1M and 1G are ticks; the axis stays the data's range. */
static void test_log2_ticks_are_powers_of_two(void)
{
    struct fb_ticks t;
    fb_axis_ticks(FB_AXIS_LOG2, 1024, 64 << 20, 9, &t);
    expect_ticks(&t, (const double[]){1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 24, 1 << 26}, 9);
    CHECK_NEAR(t.lo, 1024, 0);
    CHECK_NEAR(t.hi, 64 << 20, 0);
    fb_axis_ticks(FB_AXIS_LOG2, 1024, 16.0 * (1 << 30), 9, &t);
    expect_ticks(&t, (const double[]){1 << 10, 1 << 15, 1 << 20, 1 << 25, 1 << 30}, 5);
    fb_axis_ticks(FB_AXIS_LOG2, 64 << 10, 1 << 20, 9, &t);
    expect_ticks(&t, (const double[]){64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20}, 5);
    /* Sizes that are not powers of two (a linear -i sweep, decimal sizes):
     * the powers of two between them, never 1.5K or 3000. */
    fb_axis_ticks(FB_AXIS_LOG2, 1536, 96 << 20, 9, &t);
    CHECK(t.n >= 2 && t.n <= 9);
    for (size_t i = 0; i < t.n; i++) {
        double e = log2(t.v[i]);
        CHECK(fabs(e - round(e)) < 1e-12);
        CHECK(t.v[i] >= 1536 && t.v[i] <= 96 << 20);
    }
    fb_axis_ticks(FB_AXIS_LOG2, 1000, 3000, 9, &t);
    expect_ticks(&t, (const double[]){1024, 2048}, 2);
    /* One size: one tick at it. */
    fb_axis_ticks(FB_AXIS_LOG2, 3000, 3000, 9, &t);
    expect_ticks(&t, (const double[]){3000}, 1);
    /* No logarithm of 0: drawn linear, no NaN tick. */
    fb_axis_ticks(FB_AXIS_LOG2, 0, 4096, 9, &t);
    CHECK(t.n >= 2);
    for (size_t i = 0; i < t.n; i++)
        CHECK(isfinite(t.v[i]));
}

/* Log10 axes: decades, with 2 and 5 inside them when there is room; many
 * decades step by 2, 5, 10. */
static void test_log10_ticks_are_one_two_five(void)
{
    struct fb_ticks t;
    fb_axis_ticks(FB_AXIS_LOG10, 1, 100, 12, &t);
    expect_ticks(&t, (const double[]){1, 2, 5, 10, 20, 50, 100}, 7);
    fb_axis_ticks(FB_AXIS_LOG10, 0.3, 40, 12, &t);
    expect_ticks(&t, (const double[]){0.5, 1, 2, 5, 10, 20}, 6);
    fb_axis_ticks(FB_AXIS_LOG10, 1, 1000, 12, &t);
    expect_ticks(&t, (const double[]){1, 10, 100, 1000}, 4);
    fb_axis_ticks(FB_AXIS_LOG10, 0.01, 1e6, 6, &t);
    expect_ticks(&t, (const double[]){0.01, 1, 100, 1e4, 1e6}, 5);
    fb_axis_ticks(FB_AXIS_LOG10, 1e-3, 1e12, 5, &t);
    CHECK(t.n >= 2 && t.n <= 5);
    for (size_t i = 0; i < t.n; i++)
        CHECK(multiple_of(log10(t.v[i]), 5));
}

int main(void)
{
    RUN(test_linear_ticks_are_round);
    RUN(test_linear_ticks_hold_for_any_range);
    RUN(test_log2_ticks_are_powers_of_two);
    RUN(test_log10_ticks_are_one_two_five);
    return fbt_done();
}
