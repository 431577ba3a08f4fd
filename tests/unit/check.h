/* A minimal unit-test harness. Each test program includes this once, calls
 * RUN(fn) for each test and returns fbt_done(). Output follows the project's
 * test protocol read by tests/run:
 *   ok - NAME | not ok - NAME: file:line: failed expression */
#ifndef FB_TEST_CHECK_H
#define FB_TEST_CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int fbt_failed_in_test;
static int fbt_passed, fbt_failed;
static const char *fbt_current;

static void fbt_report(const char *file, int line, const char *what)
{
    if (fbt_failed_in_test++ == 0)
        printf("not ok - %s: %s:%d: %s\n", fbt_current, file, line, what);
    else
        printf("#   also %s:%d: %s\n", file, line, what);
}

#define CHECK(cond) \
    do { if (!(cond)) fbt_report(__FILE__, __LINE__, #cond); } while (0)

#define CHECK_INT(a, b) \
    do { long long fbt_a = (long long)(a), fbt_b = (long long)(b); \
         if (fbt_a != fbt_b) { char fbt_m[512]; \
             snprintf(fbt_m, sizeof fbt_m, "%s == %s (%lld vs %lld)", #a, #b, fbt_a, fbt_b); \
             fbt_report(__FILE__, __LINE__, fbt_m); } } while (0)

#define CHECK_STR(a, b) \
    do { const char *fbt_a = (a), *fbt_b = (b); \
         if (fbt_a == NULL || fbt_b == NULL || strcmp(fbt_a, fbt_b) != 0) { char fbt_m[4096]; \
             snprintf(fbt_m, sizeof fbt_m, "%s == %s (\"%.1500s\" vs \"%.1500s\")", #a, #b, \
                      fbt_a ? fbt_a : "(null)", fbt_b ? fbt_b : "(null)"); \
             fbt_report(__FILE__, __LINE__, fbt_m); } } while (0)

#define CHECK_CONTAINS(hay, needle) \
    do { const char *fbt_h = (hay), *fbt_n = (needle); \
         if (fbt_h == NULL || strstr(fbt_h, fbt_n) == NULL) { char fbt_m[4096]; \
             snprintf(fbt_m, sizeof fbt_m, "\"%.600s\" contains \"%s\"", fbt_h ? fbt_h : "(null)", fbt_n); \
             fbt_report(__FILE__, __LINE__, fbt_m); } } while (0)

#define CHECK_NEAR(a, b, rel) \
    do { double fbt_a = (a), fbt_b = (b); \
         if (!(fabs(fbt_a - fbt_b) <= (rel) * fmax(fabs(fbt_a), fabs(fbt_b)) + 1e-300)) { \
             char fbt_m[512]; \
             snprintf(fbt_m, sizeof fbt_m, "%s ~ %s (%.17g vs %.17g)", #a, #b, fbt_a, fbt_b); \
             fbt_report(__FILE__, __LINE__, fbt_m); } } while (0)

#define RUN(fn) fbt_run(#fn, fn)

static void fbt_run(const char *name, void (*fn)(void))
{
    fbt_current = name;
    fbt_failed_in_test = 0;
    fn();
    if (fbt_failed_in_test) {
        fbt_failed++;
    } else {
        fbt_passed++;
        printf("ok - %s\n", name);
    }
    fflush(stdout);
}

static int fbt_done(void)
{
    return fbt_failed ? 1 : 0;
}

#endif
