/* One diagnosis: a check's verdict, one line of evidence, the fix, and the
 * names of what is at fault (nodes, interfaces, pods) for scripts.
 *
 * A check never prints; it fills a struct fb_check, and a list of them maps
 * to the exit code: 0 when nothing warned or failed, 30 on warnings, 31 on
 * any failure (docs/exit-codes.md). SKIP is "does not apply here" and never
 * changes the exit code. */
#ifndef FB_DOCTOR_CHECK_H
#define FB_DOCTOR_CHECK_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"
#include "core/text.h"

/* A node or cluster check's outcome, worst last (a report's verdict on a
 * measurement is report/verdict.h's struct fb_verdict). */
enum fb_check_outcome {
    FB_CHECK_SKIP = 0, /* lowest: a skipped check adds nothing */
    FB_CHECK_OK,
    FB_CHECK_WARN,
    FB_CHECK_FAIL,
};

#define FB_CHECK_NAME_MAX 32
#define FB_CHECK_TEXT_MAX 1024
#define FB_CHECK_CULPRITS_MAX 64
#define FB_CHECK_CULPRIT_LEN 160

struct fb_check {
    char name[FB_CHECK_NAME_MAX];
    enum fb_check_outcome verdict;
    char evidence[FB_CHECK_TEXT_MAX];
    char fix[FB_CHECK_TEXT_MAX]; /* empty when there is nothing to do */
    size_t nculprits;
    char culprits[FB_CHECK_CULPRITS_MAX][FB_CHECK_CULPRIT_LEN];
    /* A SKIP that means the run cannot start (gpu-capacity: fewer than two
     * free GPU nodes): the exit is 11 unless a check failed. */
    bool blocks_run;
};

void fb_check_init(struct fb_check *c, const char *name);

/* Sets the verdict and evidence; a later call with a worse verdict replaces
 * them, a milder one is ignored, so a check can test its conditions in any
 * order and report the worst. */
void fb_check_set(struct fb_check *c, enum fb_check_outcome v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* fb_check_set's rule for a verdict and its one-line reason kept elsewhere
 * (a pod's, inside the pod-fabric check). */
void fb_outcome_keep_worst(enum fb_check_outcome *kept, char *why, size_t len,
                           enum fb_check_outcome v, const char *fmt, va_list ap)
    __attribute__((format(printf, 5, 0)));

/* Every finding kept, not only the worst: appends one (formatted into a
 * line of at most `one_max` bytes) to buf after `sep`, and raises *worst
 * to v when v is worse (a pod's or a node's findings, within a check). */
void fb_outcome_append(enum fb_check_outcome *worst, char *buf, size_t len, size_t *used,
                       const char *sep, size_t one_max, enum fb_check_outcome v,
                       const char *fmt, va_list ap) __attribute__((format(printf, 8, 0)));

void fb_check_fix(struct fb_check *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Appends to the evidence ("; " separated) without changing the verdict. */
void fb_check_note(struct fb_check *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A check that cannot read or parse what it judges fails with the one-line
 * message of the call that could not: true when `st` is not FB_OK, so a
 * check writes `if (fb_check_fails_on(c, read(..., &err), &err)) return;`. */
bool fb_check_fails_on(struct fb_check *c, enum fb_status st, const struct fb_err *err);

/* Records a culprit once (duplicates ignored, silently capped). */
void fb_check_culprit(struct fb_check *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
bool fb_check_has_culprit(const struct fb_check *c, const char *name);

/* The node and cluster check tables are arrays of rows of their own types,
 * each row starting with the check's name (a const char *). Returns the row
 * named `name` among table_size / row_size rows, or NULL. */
const void *fb_check_table_find(const void *table, size_t table_size, size_t row_size,
                                const char *name);

const char *fb_verdict_name(enum fb_check_outcome v);  /* "ok", "warn", "fail", "skip" */
const char *fb_verdict_label(enum fb_check_outcome v); /* "OK", "WARN", "FAIL", "SKIP" */

struct fb_check_counts {
    size_t ok, warn, fail, skip;
};

struct fb_check_counts fb_check_count(const struct fb_check *checks, size_t n);

/* FB_DOCTOR_FAIL on any failure; else FB_ERR_SKIPPED when a check that
 * blocks the run skipped; else FB_DOCTOR_WARN on warnings; else FB_OK. */
enum fb_status fb_check_exit_status(const struct fb_check *checks, size_t n);

#endif
