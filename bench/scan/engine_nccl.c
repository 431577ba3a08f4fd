/* The NCCL scan engine (scan/engine.h): one communicator per test, built
 * without blocking so that a peer that never joins costs the deadline and
 * an ncclCommAbort, not the scan. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/world_env.h"
#include "nccl/collective.h"
#include "scan/engine.h"

struct nccl_state {
    int device;
    float *send, *recv;
    size_t count;
    cudaStream_t stream;
};

static enum fb_status nccl_available(struct fb_err *err)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0)
        return fb_fail(err, FB_ERR_UNAVAIL, "no GPU visible: --backend nccl needs one; use --backend mpi");
    return FB_OK;
}

static enum fb_status cuda_ok(cudaError_t rc, const char *call, struct fb_err *err)
{
    if (rc == cudaSuccess)
        return FB_OK;
    return fb_fail(err, rc == cudaErrorMemoryAllocation ? FB_ERR_MEMORY : FB_ERR_RUNTIME, "%s: %s", call,
                   cudaGetErrorString(rc));
}

static enum fb_status fill_ones(struct nccl_state *s, struct fb_err *err)
{
    float *host = malloc(s->count * sizeof *host);
    if (host == NULL)
        return fb_fail(err, FB_ERR_MEMORY, "out of host memory for %zu floats", s->count);
    for (size_t i = 0; i < s->count; i++)
        host[i] = 1.0f;
    /* On the test stream and waited for: a plain cudaMemcpy lands through
     * the legacy stream, which the non-blocking test stream never waits for. */
    enum fb_status st = cuda_ok(
        cudaMemcpyAsync(s->send, host, s->count * sizeof *host, cudaMemcpyHostToDevice, s->stream), "cudaMemcpyAsync",
        err);
    if (st == FB_OK)
        st = cuda_ok(cudaStreamSynchronize(s->stream), "cudaStreamSynchronize", err);
    free(host);
    return st;
}

static enum fb_status nccl_init(struct scan_engine *e, const struct fb_world *w, size_t bytes,
                                struct fb_err *err)
{
    struct nccl_state *s = calloc(1, sizeof *s);
    int ndev = 0;
    if (s == NULL)
        return fb_fail(err, FB_ERR_MEMORY, "out of memory");
    e->state = s;
    e->w = w;
    if (w->nccl == NULL)
        MPI_Comm_set_errhandler(w->comm, MPI_ERRORS_RETURN);
    s->count = bytes / sizeof(float) < 1 ? 1 : bytes / sizeof(float);
    if (cuda_ok(cudaGetDeviceCount(&ndev), "cudaGetDeviceCount", err) != FB_OK)
        return err->code;
    s->device = w->local_rank % ndev;
    if (cuda_ok(cudaSetDevice(s->device), "cudaSetDevice", err) != FB_OK ||
        cuda_ok(cudaMalloc((void **)&s->send, s->count * sizeof(float)), "cudaMalloc", err) != FB_OK ||
        cuda_ok(cudaMalloc((void **)&s->recv, s->count * sizeof(float)), "cudaMalloc", err) != FB_OK ||
        cuda_ok(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking), "cudaStreamCreate", err) != FB_OK)
        return err->code;
    return fill_ones(s, err);
}

/* The lowest rank of the test makes the id and sends it to the others. */
static int share_id(const struct fb_world *w, const int *ranks, int nranks, int tag, ncclUniqueId *id,
                    double deadline, char *error, size_t len)
{
    if (ranks[0] != w->rank) {
        MPI_Request req;
        MPI_Irecv(id, sizeof *id, MPI_BYTE, ranks[0], tag, w->comm, &req);
        return scan_wait_requests(1, &req, deadline, error, len);
    }
    if (ncclGetUniqueId(id) != ncclSuccess) {
        snprintf(error, len, "ncclGetUniqueId failed");
        return -1;
    }
    MPI_Request req[64];
    int n = 0;
    for (int i = 1; i < nranks && n < 64; i++)
        MPI_Isend(id, sizeof *id, MPI_BYTE, ranks[i], tag, w->comm, &req[n++]);
    return scan_wait_requests(n, req, deadline, error, len);
}

/* Polls until the communicator's pending work is done (ncclSuccess), it
 * failed, or the deadline passed (ncclInProgress). A non-blocking
 * communicator takes no call before the previous one has got this far
 * (NCCL refuses it: ncclInvalidArgument), and until then the call may not
 * even be on the stream yet. */
static ncclResult_t wait_comm(ncclComm_t comm, double deadline)
{
    struct timespec pause = {0, 50 * 1000};
    ncclResult_t state = ncclInProgress;
    while (ncclCommGetAsyncError(comm, &state) == ncclSuccess && state == ncclInProgress && fb_now() < deadline)
        nanosleep(&pause, NULL);
    return state;
}

/* Polls the stream as wait_comm polls the communicator: 1 done, 0 timed
 * out, -1 failed. */
static int wait_stream(const struct nccl_state *s, ncclComm_t comm, double deadline, char *error, size_t len)
{
    struct timespec pause = {0, 50 * 1000};
    for (;;) {
        ncclResult_t async = ncclSuccess;
        cudaError_t q = cudaStreamQuery(s->stream);
        if (q == cudaSuccess)
            return 1;
        ncclCommGetAsyncError(comm, &async);
        if ((q != cudaErrorNotReady) || (async != ncclSuccess && async != ncclInProgress)) {
            snprintf(error, len, "%s", q != cudaErrorNotReady ? cudaGetErrorString(q) : ncclGetErrorString(async));
            return -1;
        }
        if (fb_now() > deadline)
            return 0;
        nanosleep(&pause, NULL);
    }
}

/* 1 when the call (a collective's enqueueing, an init) has completed, 0
 * when the deadline passed first, -1 when it failed. */
static int call_done(ncclResult_t rc, ncclComm_t comm, double deadline, const char *call, char *error, size_t len)
{
    if (rc == ncclInProgress)
        rc = wait_comm(comm, deadline);
    if (rc == ncclSuccess)
        return 1;
    if (rc == ncclInProgress) {
        snprintf(error, len, "%s: not done within the test's bound", call);
        return 0;
    }
    const char *last = ncclGetLastError(comm);
    snprintf(error, len, "%s: %s%s%s", call, ncclGetErrorString(rc), last && *last ? ": " : "", last ? last : "");
    return -1;
}

static int run_iterations(struct nccl_state *s, ncclComm_t comm, int iters, double deadline, char *error,
                          size_t len)
{
    for (int i = 0; i < iters; i++) {
        ncclResult_t rc = ncclAllReduce(s->send, s->recv, s->count, ncclFloat, ncclSum, comm, s->stream);
        int done = call_done(rc, comm, deadline, "ncclAllReduce", error, len);
        if (done != 1)
            return done;
    }
    return wait_stream(s, comm, deadline, error, len);
}

/* A non-blocking communicator finalizes asynchronously too: wait for it
 * (bounded), then free it; aborted when it does not finish in time. */
static void end_comm(ncclComm_t comm, double deadline)
{
    ncclResult_t rc = ncclCommFinalize(comm);
    if (rc == ncclInProgress)
        rc = wait_comm(comm, deadline);
    if (rc == ncclSuccess)
        ncclCommDestroy(comm);
    else
        ncclCommAbort(comm);
}

static int join(ncclComm_t *comm, const struct fb_world *w, const int *ranks, int nranks,
                const ncclUniqueId *id, double deadline, char *error, size_t len)
{
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    int me = 0;
    while (ranks[me] != w->rank)
        me++;
    ncclResult_t rc = ncclCommInitRankConfig(comm, nranks, *id, me, &config);
    return call_done(rc, *comm, deadline, "ncclCommInitRankConfig", error, len);
}

/* The env launch: the test's communicator split from the job's, its
 * colour the test's lowest rank (one per test in a round). */
static int split(ncclComm_t *comm, const struct fb_world *w, int color, double deadline, char *error, size_t len)
{
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclComm_t parent = fb_wn_comm(w->nccl);
    ncclResult_t rc = ncclCommSplit(parent, color, w->rank, comm, &config);
    if (rc == ncclInProgress)
        rc = wait_comm(parent, deadline);
    if (rc == ncclSuccess && *comm != NULL)
        return call_done(ncclInProgress, *comm, deadline, "ncclCommSplit", error, len);
    if (rc == ncclSuccess)
        return color == NCCL_SPLIT_NOCOLOR ? 1 : -1;
    return call_done(rc, parent, deadline, "ncclCommSplit", error, len);
}

static void nccl_idle(struct scan_engine *e, double deadline)
{
    ncclComm_t none = NULL;
    char ignored[64];
    if (e->w->nccl != NULL)
        split(&none, e->w, NCCL_SPLIT_NOCOLOR, deadline, ignored, sizeof ignored);
}

static void nccl_test(struct scan_engine *e, const int *ranks, int nranks, int tag,
                      const struct scan_params *p, double deadline, struct scan_report *out)
{
    struct nccl_state *s = e->state;
    const struct fb_world *w = e->w;
    ncclUniqueId id;
    ncclComm_t comm = NULL;
    double start = fb_now(), t0 = start;
    memset(out, 0, sizeof *out);
    out->busbw = -1;
    cudaSetDevice(s->device);
    int rc = 1;
    if (w->nccl != NULL)
        rc = split(&comm, w, ranks[0], deadline, out->error, sizeof out->error);
    else if ((rc = share_id(w, ranks, nranks, tag, &id, deadline, out->error, sizeof out->error)) == 1)
        rc = join(&comm, w, ranks, nranks, &id, deadline, out->error, sizeof out->error);
    if (rc == 1 && p->warmup > 0)
        rc = run_iterations(s, comm, p->warmup, deadline, out->error, sizeof out->error);
    if (rc == 1) {
        t0 = fb_now();
        rc = run_iterations(s, comm, p->iters, deadline, out->error, sizeof out->error);
    }
    double timed = fb_now() - t0;
    out->seconds = fb_now() - start;
    out->status = rc == 1 ? SCAN_OK : rc == 0 ? SCAN_TIMEOUT : SCAN_FAILED;
    if (rc == 1 && p->iters > 0 && timed > 0)
        out->busbw = fb_busbw_GBps(fb_collective_find("all_reduce"), s->count * sizeof(float),
                                   timed / p->iters, nranks);
    if (rc == 0 && out->error[0] == '\0')
        snprintf(out->error, sizeof out->error, "no progress within the test's bound");
    if (comm != NULL && rc == 1)
        end_comm(comm, fb_now() + 10.0);
    else if (comm != NULL) { /* a stream stuck on an aborted communicator is left behind */
        ncclCommAbort(comm);
        cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking);
    }
}

static void nccl_fini(struct scan_engine *e)
{
    struct nccl_state *s = e->state;
    if (s != NULL) {
        cudaFree(s->send);
        cudaFree(s->recv);
    }
    free(s);
    e->state = NULL;
}

const struct scan_engine_ops scan_engine_nccl = {
    .name = "nccl",
    .available = nccl_available,
    .init = nccl_init,
    .test = nccl_test,
    .fini = nccl_fini,
    .idle = nccl_idle,
};
