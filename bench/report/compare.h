/* Results side by side: busBW per size for each result, ratios against a
 * baseline result, and the sizes where a result leaves the noise band. */
#ifndef FB_REPORT_COMPARE_H
#define FB_REPORT_COMPARE_H

#include <stdbool.h>

#include "core/status.h"
#include "report/result.h"
#include "core/text.h"

enum fb_compare_format { FB_CMP_TEXT, FB_CMP_MARKDOWN, FB_CMP_CSV, FB_CMP_JSON };

struct fb_compare_opts {
    enum fb_compare_format format;
    const char *baseline;   /* index (1-based), cluster label or file; NULL = first */
    double noise;           /* relative half-width of the noise band, e.g. 0.05 */
    bool allow_mixed;       /* compare different collectives anyway, flagged */
};

/* Renders the comparison of every result in `set` into `out`. Refuses
 * (FB_ERR_INPUT) results of different collectives unless allow_mixed, and
 * an unknown baseline (FB_ERR_USAGE). */
enum fb_status fb_compare(const struct fb_result_set *set, const struct fb_compare_opts *o,
                          struct fb_str *out, struct fb_err *err);

/* Keeps only the results of one collective (compare/plot --collective).
 * FB_ERR_INPUT when none is left. */
enum fb_status fb_result_set_filter(struct fb_result_set *set, const char *collective, struct fb_err *err);

/* Passes over results without a single row (a run stopped during set-up):
 * nothing in them compares, and as the newest of their cluster they would
 * hide the last run that measured. One line per result in `notes`. */
void fb_result_set_drop_unmeasured(struct fb_result_set *set, struct fb_str *notes);

/* Keeps, per cluster and collective, only the result that started last
 * (results/<cluster>/ accumulates runs; --latest compares the newest). */
void fb_result_set_latest(struct fb_result_set *set);

/* The same choice without dropping anything: keep[i] (set->n of them) is
 * true for the result of each cluster and collective that started last
 * (of equal starts, the later in the set). False when out of memory. */
bool fb_result_set_mark_latest(const struct fb_result_set *set, bool *keep);

/* FB_ERR_INPUT naming the collectives found when the set mixes them. */
enum fb_status fb_result_set_same_collective(const struct fb_result_set *set, struct fb_err *err);

#endif
