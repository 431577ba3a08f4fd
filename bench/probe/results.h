/* The record of a probe run on rank 0: every measured (link, size), the
 * JSON document (docs/results-schema.md, kind "probe") rewritten atomically
 * after each size, and the text the operator reads: endpoint header,
 * per-link rows, host matrix, slow links and suspects. */
#ifndef FB_PROBE_RESULTS_H
#define FB_PROBE_RESULTS_H

#include <json-c/json.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>

#include "core/world.h"
#include "probe/endpoint.h"
#include "probe/measure.h"
#include "probe/opts.h"
#include "probe/outliers.h"
#include "probe/schedule.h"

struct probe_row {
    int round;
    int src, dst; /* ranks */
    struct probe_measure m;
};

struct probe_results {
    const struct probe_opts *o;
    int nranks, nnodes;
    const char (*hosts)[FB_HOST_MAX]; /* per rank */
    const struct probe_schedule *sched;
    const struct probe_endpoint *ep;  /* per rank */
    char path[PATH_MAX];
    char cluster[128];
    char start_time[32];
    char mpi_version[256];
    struct probe_row *rows;
    int nrows, cap;
    json_object *warnings;
    bool stream; /* path is a device or FIFO: written once, at the end */
    int fault_code, fault_rank;
    char fault_msg[FB_ERR_MSG_MAX];
};

/* Slow links and suspects among the rows at the largest size measured
 * (bandwidth runs only: the size where line rate is within reach). */
struct probe_analysis {
    uint64_t size;
    int n;
    struct probe_link_score *scores;
    int *row;                 /* scores[i] comes from rows[row[i]] */
    int nflags, nsuspects;
    struct probe_flag *flags;
    struct probe_suspect *suspects;
    double median_gbps;
};

void probe_results_init(struct probe_results *r, const struct probe_opts *o,
                        const struct fb_world *w, const struct probe_schedule *s,
                        const struct probe_endpoint *ep, const char *path, const char *cluster);
enum fb_status probe_results_add(struct probe_results *r, const struct probe_row *row,
                                 struct fb_err *err);
void probe_results_warn(struct probe_results *r, const char *text);
void probe_results_fault(struct probe_results *r, enum fb_status code, const char *msg, int rank);
json_object *probe_results_json(const struct probe_results *r, int complete);
/* The first version on disk. `exclusive` (a name made up, not -J)
 * creates a new file, numbered when the name is taken (r->path becomes the
 * name); a device or FIFO is only checked and gets the document at the end. */
enum fb_status probe_results_start(struct probe_results *r, bool exclusive, struct fb_err *err);
enum fb_status probe_results_save(struct probe_results *r, int complete, struct fb_err *err);
void probe_results_free(struct probe_results *r);

int probe_analyze(const struct probe_results *r, struct probe_analysis *a);
void probe_analysis_free(struct probe_analysis *a);

void probe_print_header(FILE *out, const struct probe_results *r);
void probe_print_row(FILE *out, const struct probe_results *r, const struct probe_row *row);
void probe_print_summary(FILE *out, const struct probe_results *r);

/* "hostA:mlx5_0" for rank k. */
void probe_endpoint_label(const struct probe_results *r, int rank, char *buf, size_t len);

#endif
