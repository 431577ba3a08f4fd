/* A collective results file (docs/results-schema.md, kind "collective"),
 * read and checked once so that verdicts, comparisons and plots work on
 * plain structs and never meet a missing key or a string where a number
 * belongs. */
#ifndef FB_REPORT_RESULT_H
#define FB_REPORT_RESULT_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

#define FB_MIB (1024ULL * 1024ULL)

/* One placement (out-of-place or in-place) of one row. Absent numbers are
 * NAN; `wrong` is -1 when validation was off. */
struct fb_place {
    bool present;
    double time_us, algbw_GBps, busbw_GBps;
    long long wrong;
};

struct fb_row {
    unsigned long long bytes, count;
    long run;
    long line; /* where an imported text printed it; 0 when unknown */
    struct fb_place oop, ip;
};

/* The summary of docs/results-schema.md, always recomputed from the rows so
 * that a hand-edited or imported file cannot disagree with its own table. */
struct fb_summary {
    double peak_busbw;              /* NAN when no row has a number */
    unsigned long long peak_bytes;
    unsigned long long largest_bytes;
    double busbw_at_largest;
    double avg_busbw;               /* nccl-tests: every row and placement */
    double avg_busbw_ge_1MiB;       /* the same over sizes >= 1 MiB */
    long long wrong_total;
    bool validated;                 /* at least one #wrong was counted */
};

/* Best busBW at one size over placements and repetitions, with the spread
 * of the per-repetition best (equal to best when there is one run). */
struct fb_point {
    unsigned long long bytes;
    double best, run_min, run_max;
    int nruns;
};

/* The collective of a run that failed before its first row without
 * naming it (results "collective": null). */
#define FB_COLLECTIVE_UNKNOWN "unknown"

struct fb_result {
    json_object *doc; /* owns every string below */
    char *path;
    const char *cluster, *collective, *backend, *dtype, *op, *start_time;
    const char *device_kind; /* "gpu", "cpu" or NULL */
    const char *device_name; /* rank 0's device, NULL when unknown */
    long ranks, nodes, ranks_per_node; /* 0 when unknown */
    bool complete;
    long sizes_planned, sizes_done; /* -1 when unknown */
    json_object *fault;     /* NULL when none */
    json_object *early_stop; /* NULL unless fabric-coll stopped the sweep on purpose */
    json_object *transport; /* NULL when NCCL's log was not captured */
    const char *net;        /* transport.net */
    int gdr;                /* transport.gdr: 1, 0, or -1 unknown */
    json_object *env;       /* NULL when absent */
    json_object *runtime_source; /* where the pods' wiring came from; NULL when not said */
    struct fb_row *rows;
    size_t nrows;
};

/* Reads and checks a results file. FB_ERR_INPUT with one line naming the
 * file and the field for anything wrong; a file in a foreign format
 * (nccl-tests text or JSON) gets a pointer to `fabric-report import`. */
enum fb_status fb_result_load(const char *path, struct fb_result *r, struct fb_err *err);

/* The same from a parsed document; takes ownership of `doc` in all cases. */
enum fb_status fb_result_from_json(json_object *doc, const char *name, struct fb_result *r,
                                   struct fb_err *err);

void fb_result_free(struct fb_result *r);

/* Best of the two placements of a row; NAN when neither has a number. */
double fb_row_best_busbw(const struct fb_row *row);

void fb_summary_compute(const struct fb_row *rows, size_t n, struct fb_summary *s);

/* The schema's "summary" object for these rows. */
json_object *fb_summary_json(const struct fb_summary *s, long sizes_planned, long sizes_done);

/* Distinct sizes in ascending order; *out is allocated (free it). */
enum fb_status fb_result_points(const struct fb_result *r, struct fb_point **out, size_t *n,
                                struct fb_err *err);

/* The label a result goes by in tables and plots: its cluster name. */
const char *fb_result_label(const struct fb_result *r);

/* Results named on a command line: files as given, directories searched
 * (recursively, in name order) for *.json results of kind "collective";
 * other JSON there (profiles, probe results) is skipped and counted. */
struct fb_result_set {
    struct fb_result *r;
    size_t n;
    size_t skipped;
};

enum fb_status fb_result_set_load(const char *const *args, int nargs, struct fb_result_set *set,
                                  struct fb_err *err);
/* The same, except that a directory without collective results adds none
 * instead of failing: for readers that show other documents too (html). */
enum fb_status fb_result_set_load_any(const char *const *args, int nargs, struct fb_result_set *set,
                                      struct fb_err *err);
void fb_result_set_free(struct fb_result_set *set);

#endif
