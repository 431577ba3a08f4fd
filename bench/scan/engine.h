/* How one scan test moves bytes: a backend runs a short all_reduce among
 * the ranks of one or two nodes, every wait bounded by a deadline and
 * nothing collective over the whole job, so a peer that is dead, stopped
 * or cut off costs one test and never the scan.
 *
 *   mpi   host memory. Two ranks (one rail of a node pair): a two-rank
 *         all_reduce from nonblocking point-to-point (reduce-scatter, then
 *         all-gather: the bytes MPI's ring moves for two ranks), so no
 *         communicator has to be built with a peer that may be gone. One
 *         rank alone: a copy through MPI to itself (the node's own figure).
 *   nccl  GPU memory. ncclAllReduce over a communicator of the test's ranks
 *         (every GPU of both nodes, or of one node alone), created without
 *         blocking and aborted (ncclCommAbort) when the deadline passes.
 *         Under the env launch the communicator is split from the job's
 *         (ncclCommSplit: every rank takes part each round, idle ones with
 *         no colour), since no MPI carries ids between the test's ranks. */
#ifndef FB_SCAN_ENGINE_H
#define FB_SCAN_ENGINE_H

#include <stddef.h>

#include "core/status.h"
#include "core/world.h"
#include "scan/verdict.h"

struct scan_params {
    size_t bytes;
    int iters, warmup;
};

/* What one rank measured in one test. */
struct scan_report {
    int status;       /* enum scan_status: OK, FAILED or TIMEOUT */
    double busbw;     /* GB/s, < 0 when not measured */
    double seconds;
    char error[SCAN_TEXT_MAX];
};

struct scan_engine;

struct scan_engine_ops {
    const char *name;
    /* FB_OK when it can run here, else FB_ERR_UNAVAIL with the reason. */
    enum fb_status (*available)(struct fb_err *err);
    /* Local: buffers for `bytes`, devices. */
    enum fb_status (*init)(struct scan_engine *e, const struct fb_world *w, size_t bytes,
                           struct fb_err *err);
    /* One test among `ranks` (world ranks, ascending, this rank among
     * them), distinct `tag` per test; returns by `deadline` (fb_now). */
    void (*test)(struct scan_engine *e, const int *ranks, int nranks, int tag,
                 const struct scan_params *p, double deadline, struct scan_report *out);
    void (*fini)(struct scan_engine *e);
    /* A rank with no test this round, when the engine makes its tests'
     * communicators over the whole job (the env launch: ncclCommSplit, where
     * every rank takes part); NULL when nothing is due. */
    void (*idle)(struct scan_engine *e, double deadline);
};

struct scan_engine {
    const struct scan_engine_ops *ops;
    const struct fb_world *w;
    void *state;
};

extern const struct scan_engine_ops scan_engine_mpi;

/* NULL for an unknown name; *compiled tells apart "nccl, not built". */
const struct scan_engine_ops *scan_engine_find(const char *name, int *compiled);

/* Polls `n` requests until all complete or the deadline passes: 1 done,
 * 0 timed out, -1 an MPI error (text in `error`). */
int scan_wait_requests(int n, MPI_Request *req, double deadline, char *error, size_t len);

#endif
