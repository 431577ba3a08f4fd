/* One scan: rank 0 plans each round, sends every live rank its order,
 * runs its own share and collects the reports; the other ranks follow
 * orders. All of it is point-to-point with polled deadlines, so a rank
 * that stops answering is named lost in the round it went quiet and left
 * out of the rounds after.
 *
 * Rounds: 0 each node alone (unless --no-alone); then the fast mode's
 * first pass and its second-pass rounds, or the exhaustive schedule; then,
 * when a bad test lies between two good nodes, that pair once more (the
 * confirmation), before a link is named.
 * After every round rank 0 rewrites the results, so a scan cut short
 * keeps what it measured. */
#ifndef FB_SCAN_RUN_H
#define FB_SCAN_RUN_H

#include <limits.h>
#include <stdint.h>

#include "core/world.h"
#include "scan/engine.h"
#include "scan/layout.h"
#include "scan/opts.h"
#include "scan/pairing.h"
#include "scan/verdict.h"

struct order;

struct scan_run {
    struct fb_world w;
    struct scan_opts o;
    struct scan_layout l;
    struct scan_engine e;
    struct scan_params p;
    uint64_t seed;
    const char *invoked_as;
    /* rank 0 */
    struct scan_test *tests;
    int ntests, tests_cap;
    struct scan_node *nodes;
    struct order *orders;
    struct scan_judgement j;
    struct scan_estimate est;
    int rounds_run;
    int next_round;    /* the number the next round takes */
    int abandoned; /* a test timed out or a node was lost: end with MPI_Abort
                      (a follower: rank 0 said it ends the job so) */
    int alone_skipped;
    int stop_code; /* a follower: the code rank 0 ends with (its stop order) */
    char path[PATH_MAX];
    int path_taken;
};

/* Rank 0 runs the scan and writes the results; the others follow. Returns
 * the exit status: FB_OK, FB_SCAN_SUSPECTS or an error (err). */
enum fb_status scan_run(struct scan_run *r, struct fb_err *err);

/* How the job ends once scan_run returned: MPI_Finalize when every rank
 * is known to be healthy and idle, else MPI_Abort, which also ends a rank
 * that is stopped. */
void scan_run_end(struct scan_run *r, enum fb_status st);

/* Rank 0: writes the results document (first call: creates it). */
enum fb_status scan_results_write(struct scan_run *r, int complete, const struct fb_err *fault,
                                  struct fb_err *err);

/* Rank 0: the estimate line and the summary on stderr. */
void scan_print_estimate(const struct scan_run *r);
void scan_print_summary(const struct scan_run *r);

#endif
