/* busBW over time: each run of a results tree against the runs of the same
 * cluster, collective, backend and rank count (and hosts, per_host) that
 * started before it. A run
 * is an outlier when it falls below median - k*MAD of those earlier runs AND
 * below a share of their median (the floor): the spread keeps a noisy
 * history quiet, the floor keeps a tight history (MAD near 0) from
 * flagging noise. docs/report.md, docs/schema/history.schema.json. */
#ifndef FB_REPORT_HISTORY_H
#define FB_REPORT_HISTORY_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"
#include "core/text.h"
#include "report/result.h"

/* Fewer earlier complete runs than this: "not enough history". */
#define FB_HIST_MIN_EARLIER 3

/* Median of n values (n > 0); `v` is reordered. */
double fb_hist_median(double *v, size_t n);

/* Median absolute deviation of n values about `median`; `v` is kept. */
double fb_hist_mad(const double *v, size_t n, double median);

enum fb_hist_state {
    FB_HIST_OK,         /* within the history */
    FB_HIST_OUTLIER,    /* below both thresholds */
    FB_HIST_FEW,        /* fewer than FB_HIST_MIN_EARLIER earlier runs */
    FB_HIST_INCOMPLETE, /* the run did not finish: listed, never a baseline */
    FB_HIST_NO_SIZE,    /* the run has no figure at the reference size */
};

/* "ok", "outlier", "not enough history", "incomplete", "no figure at size". */
const char *fb_hist_state_name(enum fb_hist_state s);

/* One run judged against earlier figures. */
struct fb_hist_judgement {
    enum fb_hist_state state;
    double median, mad, ratio; /* NAN when there is no history */
};

/* Median absolute deviation of n sorted values about their median. */
double fb_hist_mad_sorted(const double *v, size_t n, double median);

/* Judges `value` against the `n` earlier figures (reordered): k is the MAD
 * multiplier, floor the share of the median below which a drop is real. */
void fb_hist_judge(double value, double *earlier, size_t n, double k, double floor,
                   struct fb_hist_judgement *j);

/* As fb_hist_judge, with the earlier figures already in ascending order. */
void fb_hist_judge_sorted(double value, const double *v, size_t n, double k, double floor,
                          struct fb_hist_judgement *j);

struct fb_hist_opts {
    unsigned long long size; /* the reference size; 0 = largest common */
    double k;                /* default 3 */
    double floor;            /* default 0.8 */
    bool per_host;           /* the hosts a run names are part of its series */
};

struct fb_hist_run {
    const struct fb_result *r;
    const char *hosts;  /* "h1,h2" from the document, "" when not named */
    double busbw;       /* best at the series' size; NAN when none */
    struct fb_hist_judgement j;
    size_t nearlier;    /* complete earlier runs the judgement used */
};

struct fb_hist_series {
    const char *cluster, *collective, *backend;
    long ranks;
    const char *hosts;        /* with per_host: the hosts ("" when not named); else NULL */
    unsigned long long bytes; /* the reference size; 0 when no run measured */
    struct fb_hist_run *runs; /* in start_time order */
    size_t n;
};

struct fb_history {
    struct fb_hist_series *s;
    size_t n;
    struct fb_hist_opts opts;
    json_object *hosts; /* owns the hosts strings */
};

/* Groups and judges every result of `set` (which must outlive `h`). */
enum fb_status fb_history_build(const struct fb_result_set *set, const struct fb_hist_opts *o,
                                struct fb_history *h, struct fb_err *err);
void fb_history_free(struct fb_history *h);

/* True when the newest run of some series is an outlier. */
bool fb_history_latest_outlier(const struct fb_history *h);

/* A table per series, for people. */
void fb_history_text(const struct fb_history *h, struct fb_str *out);

/* The document of kind "history" (docs/schema/history.schema.json). */
json_object *fb_history_json(const struct fb_history *h);

#endif
