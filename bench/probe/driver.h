/* One fabric-rdma run: the state every stage shares, and the stages.
 * rdma_main.c strings them together; driver_setup.c does everything before
 * the first round (options, devices and memory, schedule, results file) and
 * undoes it at the end, driver_step.c the lockstep step after which every
 * rank knows rank 0's verdict, driver_rounds.c the rounds and their sizes.
 *
 * Every rank runs the same schedule in lockstep. After each set-up and each
 * size, all ranks report to rank 0, which records the rows, rewrites the
 * results file and broadcasts the verdict; a failure anywhere therefore ends
 * the job everywhere with one message. Every wait is bounded: a rank that
 * stops answering is named, and the job ends with exit 8. */
#ifndef FB_PROBE_DRIVER_H
#define FB_PROBE_DRIVER_H

#include <signal.h>
#include <stdint.h>

#include "core/status.h"
#include "core/world.h"
#include "probe/comm.h"
#include "probe/endpoint.h"
#include "probe/mem.h"
#include "probe/opts.h"
#include "probe/results.h"
#include "probe/rounds.h"
#include "probe/schedule.h"

/* What every rank sends rank 0 after a step: its status, and the
 * measurements it owns. Same binary on every rank (checked by the option
 * hash and the wire records), so the struct travels as bytes. */
struct probe_report {
    int32_t code, rank;
    char msg[FB_ERR_MSG_MAX];
    int32_t n;
    struct probe_measure m[PROBE_ENDS_MAX];
};

/* Rank 0's decision after a step. `abort_job` is set when some rank timed
 * out: a rank may be unresponsive, so MPI_Finalize could hang. */
struct probe_verdict {
    int32_t code, rank, abort_job;
    char msg[FB_ERR_MSG_MAX];
};

struct probe_driver {
    struct probe_opts o;
    struct fb_world w;
    struct probe_ctx c;
    struct probe_alive alive;
    struct probe_schedule sched;
    struct probe_endpoint me, *all_eps;
    struct probe_rank_env env;
    struct probe_mem mem;
    struct probe_round round;
    struct probe_results res; /* rank 0 */
    int have_results;
    int *node_of, *local_of;
};

/* Everything before the first round, agreed by all ranks; `stop` is the
 * flag the signal handler sets. Returns FB_OK to go on, -1 for --help or
 * --version (nothing else done), else the exit code (rank 0 has said why). */
int probe_driver_prepare(struct probe_driver *d, int argc, char **argv,
                         const volatile sig_atomic_t *stop);

/* Every round and size of the schedule; returns the exit code. */
int probe_driver_rounds(struct probe_driver *d);

/* Rank 0 after the last round: the summary and the complete record;
 * returns the exit code. */
int probe_driver_finish(struct probe_driver *d);

/* Releases what prepare and the rounds hold but the world (the job's end
 * needs it); safe at any point. */
void probe_driver_release(struct probe_driver *d);

/* Everyone reports, rank 0 records (the rows of `round` when >= 0) and
 * decides, everyone learns the verdict. `limit_s` bounds the wait for the
 * slowest rank. Returns 1 when the verdict is shared by all ranks, 0 when
 * it cannot be (this rank could not reach rank 0, or rank 0 did not hear
 * from everyone). */
int probe_driver_step(struct probe_driver *d, struct probe_report *mine, int round,
                      double limit_s, struct probe_verdict *v);

/* Ends the job after a failed step: rank 0 keeps what was measured and
 * says why, and the exit code is returned. A verdict not every rank could
 * learn, or one naming a silent rank, ends in MPI_Abort instead, since
 * MPI_Finalize could wait forever. */
int probe_driver_end(struct probe_driver *d, const struct probe_verdict *v, int shared);

/* A verdict from this rank's own error. */
struct probe_verdict probe_verdict_of(const struct fb_err *err, int rank, int abort_job);

#endif
