/* The NCCL engine of core/coord.h and the env launch's world
 * (core/world_env.h): one communicator of one rank per process on this
 * process's first GPU, made from the launcher's bootstrap address; every
 * coordination call stages its host bytes through a device buffer. The
 * communicator is non-blocking (config.blocking = 0) so that set-up, and
 * the point-to-point calls that carry a deadline, can be given up. */
#include <cuda_runtime.h>
#include <errno.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/world_env.h"

struct fb_world_nccl {
    ncclComm_t comm;
    cudaStream_t stream;
    int device, rank, size;
    char *dev;      /* staging buffer on the device */
    size_t dev_cap;
    void (*on_fatal)(void *ctx); /* fb_wn_on_fatal */
    void *on_fatal_ctx;
    /* A rank group's (fb_wn_split) world: its failures go to that world's
     * hook, as it stands when they happen. */
    const struct fb_world_nccl *parent;
};

static const char *prog(void) { return program_invocation_short_name; }

static void pause_briefly(void)
{
    struct timespec t = {0, 100 * 1000};
    nanosleep(&t, NULL);
}

/* A failed coordination call ends the process, as MPI's default handler
 * ends an MPI job: the ranks can no longer agree on anything. */
_Noreturn static void fatal(const struct fb_world_nccl *n, const char *call, const char *why)
{
    const struct fb_world_nccl *root = n;
    while (root->parent != NULL)
        root = root->parent;
    if (root->on_fatal != NULL)
        root->on_fatal(root->on_fatal_ctx);
    fprintf(stderr, "%s: rank %d: the job's NCCL communicator failed in %s: %s; a rank ended or the network "
            "between ranks broke (rank 0's output says why)\n", prog(), n->rank, call, why);
    fflush(NULL);
    _exit(FB_ERR_RUNTIME);
}

/* Until the communicator has taken the call (non-blocking: ncclInProgress
 * first), then until the stream has run it. 1 done, 0 the deadline passed,
 * -1 failed (why in `why`). */
static int wait_done(const struct fb_world_nccl *n, ncclResult_t rc, double deadline, const char **why)
{
    while (rc == ncclInProgress && fb_now() < deadline) {
        pause_briefly();
        if (ncclCommGetAsyncError(n->comm, &rc) != ncclSuccess)
            rc = ncclInternalError;
    }
    if (rc == ncclInProgress)
        return 0;
    if (rc != ncclSuccess) {
        *why = ncclGetErrorString(rc);
        return -1;
    }
    for (;;) {
        cudaError_t q = cudaStreamQuery(n->stream);
        ncclResult_t async = ncclSuccess;
        if (q == cudaSuccess)
            return 1;
        ncclCommGetAsyncError(n->comm, &async);
        if (q != cudaErrorNotReady || (async != ncclSuccess && async != ncclInProgress)) {
            *why = q != cudaErrorNotReady ? cudaGetErrorString(q) : ncclGetErrorString(async);
            return -1;
        }
        if (fb_now() > deadline)
            return 0;
        pause_briefly();
    }
}

static void must(const struct fb_world_nccl *n, ncclResult_t rc, const char *call)
{
    const char *why = "";
    if (wait_done(n, rc, 1e300, &why) != 1)
        fatal(n, call, why);
}

static char *staging(struct fb_world_nccl *n, size_t bytes)
{
    if (bytes <= n->dev_cap)
        return n->dev;
    cudaFree(n->dev);
    n->dev = NULL;
    n->dev_cap = 0;
    if (cudaMalloc((void **)&n->dev, bytes) != cudaSuccess)
        fatal(n, "cudaMalloc", "no device memory for the coordination buffer");
    n->dev_cap = bytes;
    return n->dev;
}

static void copy(const struct fb_world_nccl *n, void *to, const void *from, size_t bytes, enum cudaMemcpyKind kind)
{
    if (bytes > 0 && (cudaMemcpyAsync(to, from, bytes, kind, n->stream) != cudaSuccess ||
                      cudaStreamSynchronize(n->stream) != cudaSuccess))
        fatal(n, "cudaMemcpyAsync", "the copy to or from the device failed");
}

static ncclDataType_t nccl_type(enum fb_cdt dt)
{
    switch (dt) {
    case FB_CDT_INT: return ncclInt32;
    case FB_CDT_LONG:
    case FB_CDT_I64: return ncclInt64;
    case FB_CDT_UNSIGNED: return ncclUint32;
    case FB_CDT_U64: return ncclUint64;
    case FB_CDT_DOUBLE: break;
    }
    return ncclFloat64;
}

static ncclRedOp_t nccl_op(enum fb_cop op) { return op == FB_COP_MIN ? ncclMin : op == FB_COP_MAX ? ncclMax : ncclSum; }

/* Each call runs on the communicator's device, the caller's restored. */
static int enter(const struct fb_world_nccl *n)
{
    int prev = 0;
    cudaGetDevice(&prev);
    cudaSetDevice(n->device);
    return prev;
}

void fb_wn_allgather(struct fb_world_nccl *n, const void *mine, void *all, size_t bytes)
{
    int prev = enter(n);
    char *d = staging(n, bytes * (size_t)n->size);
    copy(n, d + bytes * (size_t)n->rank, mine, bytes, cudaMemcpyHostToDevice);
    must(n, ncclAllGather(d + bytes * (size_t)n->rank, d, bytes, ncclUint8, n->comm, n->stream), "ncclAllGather");
    copy(n, all, d, bytes * (size_t)n->size, cudaMemcpyDeviceToHost);
    cudaSetDevice(prev);
}

/* NCCL has no bitwise and: every rank folds everyone's words. */
static void allreduce_band(struct fb_world_nccl *n, unsigned *buf, int count)
{
    size_t bytes = (size_t)count * sizeof *buf;
    unsigned *all = malloc(bytes * (size_t)n->size);
    if (all == NULL)
        fatal(n, "a bitwise and", "out of host memory");
    fb_wn_allgather(n, buf, all, bytes);
    for (int r = 0; r < n->size; r++)
        for (int i = 0; i < count; i++)
            buf[i] &= all[(size_t)r * (size_t)count + (size_t)i];
    free(all);
}

void fb_wn_allreduce(struct fb_world_nccl *n, void *buf, int count, enum fb_cdt dt, enum fb_cop op)
{
    if (op == FB_COP_BAND) {
        allreduce_band(n, buf, count);
        return;
    }
    size_t bytes = (size_t)count * fb_cdt_size(dt);
    int prev = enter(n);
    char *d = staging(n, bytes);
    copy(n, d, buf, bytes, cudaMemcpyHostToDevice);
    must(n, ncclAllReduce(d, d, (size_t)count, nccl_type(dt), nccl_op(op), n->comm, n->stream), "ncclAllReduce");
    copy(n, buf, d, bytes, cudaMemcpyDeviceToHost);
    cudaSetDevice(prev);
}

void fb_wn_reduce(struct fb_world_nccl *n, const void *in, void *out, int count, enum fb_cdt dt, enum fb_cop op,
                  int root)
{
    size_t bytes = (size_t)count * fb_cdt_size(dt);
    void *tmp = malloc(bytes ? bytes : 1);
    if (tmp == NULL)
        fatal(n, "a reduction", "out of host memory");
    memcpy(tmp, in, bytes);
    fb_wn_allreduce(n, tmp, count, dt, op);
    if (n->rank == root)
        memcpy(out, tmp, bytes);
    free(tmp);
}

void fb_wn_bcast(struct fb_world_nccl *n, void *buf, size_t bytes, int root)
{
    int prev = enter(n);
    char *d = staging(n, bytes);
    if (n->rank == root)
        copy(n, d, buf, bytes, cudaMemcpyHostToDevice);
    must(n, ncclBroadcast(d, d, bytes, ncclUint8, root, n->comm, n->stream), "ncclBroadcast");
    copy(n, buf, d, bytes, cudaMemcpyDeviceToHost);
    cudaSetDevice(prev);
}

void fb_wn_barrier(struct fb_world_nccl *n)
{
    int one = 1;
    fb_wn_allreduce(n, &one, 1, FB_CDT_INT, FB_COP_SUM);
}

void fb_wn_gather(struct fb_world_nccl *n, const void *mine, void *all, size_t bytes, int root)
{
    char *tmp = malloc(bytes * (size_t)n->size + 1);
    if (tmp == NULL)
        fatal(n, "a gather", "out of host memory");
    fb_wn_allgather(n, mine, tmp, bytes);
    if (n->rank == root)
        memcpy(all, tmp, bytes * (size_t)n->size);
    free(tmp);
}

/* One message between this rank and `peer`, by the deadline. */
static int p2p(struct fb_world_nccl *n, void *buf, size_t bytes, int peer, int sending, double deadline)
{
    int prev = enter(n);
    char *d = staging(n, bytes);
    const char *why = "";
    if (sending)
        copy(n, d, buf, bytes, cudaMemcpyHostToDevice);
    ncclResult_t rc = sending ? ncclSend(d, bytes, ncclUint8, peer, n->comm, n->stream)
                              : ncclRecv(d, bytes, ncclUint8, peer, n->comm, n->stream);
    int done = wait_done(n, rc, deadline, &why);
    if (done == 1 && !sending)
        copy(n, buf, d, bytes, cudaMemcpyDeviceToHost);
    cudaSetDevice(prev);
    return done;
}

int fb_wn_send(struct fb_world_nccl *n, const void *buf, size_t bytes, int peer, double deadline)
{
    return p2p(n, (void *)buf, bytes, peer, 1, deadline);
}

int fb_wn_recv(struct fb_world_nccl *n, void *buf, size_t bytes, int peer, double deadline)
{
    return p2p(n, buf, bytes, peer, 0, deadline);
}

/* Rank 0 takes each rank's bytes in turn (its own copied); buf NULL on
 * rank 0 (out of memory) still takes part, discarding. */
void fb_wn_gatherv(struct fb_world_nccl *n, const void *mine, int len, void *buf, const int *lens,
                   const int *displs)
{
    if (n->rank != 0) {
        if (fb_wn_send(n, mine, (size_t)len, 0, 1e300) != 1)
            fatal(n, "ncclSend", "a gather to rank 0 did not pass");
        return;
    }
    if (buf != NULL)
        memcpy((char *)buf + displs[0], mine, (size_t)len);
    for (int r = 1; r < n->size; r++) {
        char *tmp = malloc((size_t)lens[r] + 1);
        if (tmp == NULL || fb_wn_recv(n, tmp, (size_t)lens[r], r, 1e300) != 1)
            fatal(n, "ncclRecv", "a gather to rank 0 did not pass");
        if (buf != NULL)
            memcpy((char *)buf + displs[r], tmp, (size_t)lens[r]);
        free(tmp);
    }
}

void fb_wn_to_rank0(struct fb_world_nccl *n, void *buf, size_t bytes, int teller)
{
    int done = 1;
    if (n->rank == teller)
        done = fb_wn_send(n, buf, bytes, 0, 1e300);
    else if (n->rank == 0)
        done = fb_wn_recv(n, buf, bytes, teller, 1e300);
    if (done != 1)
        fatal(n, teller == n->rank ? "ncclSend" : "ncclRecv", "the message did not pass");
}

void *fb_wn_comm(struct fb_world_nccl *n) { return n->comm; }

void fb_wn_on_fatal(struct fb_world_nccl *n, void (*hook)(void *ctx), void *ctx)
{
    n->on_fatal = hook;
    n->on_fatal_ctx = ctx;
}

static struct fb_world_nccl *wn_new(int device)
{
    struct fb_world_nccl *n = calloc(1, sizeof *n);
    if (n == NULL)
        return NULL;
    n->device = device;
    cudaSetDevice(device);
    if (cudaStreamCreateWithFlags(&n->stream, cudaStreamNonBlocking) != cudaSuccess) {
        free(n);
        return NULL;
    }
    return n;
}

enum fb_status fb_wn_split(struct fb_world_nccl *parent, int color, int key, struct fb_world_nccl **group, int *rank,
                           int *size, struct fb_err *err)
{
    int prev = enter(parent);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    struct fb_world_nccl *g = wn_new(parent->device);
    const char *why = "";
    if (g == NULL) {
        cudaSetDevice(prev);
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory for a rank group");
    }
    ncclResult_t rc = ncclCommSplit(parent->comm, color, key, &g->comm, &config);
    g->rank = parent->rank;
    g->parent = parent;
    int done = wait_done(parent, rc, 1e300, &why);
    if (done == 1 && g->comm != NULL) {
        struct fb_world_nccl probe = *g;
        done = wait_done(&probe, ncclInProgress, 1e300, &why);
    }
    cudaSetDevice(prev);
    if (done != 1 || g->comm == NULL) {
        fb_wn_free(g);
        return fb_fail(err, FB_ERR_RUNTIME, "ncclCommSplit into rank groups failed: %s", why);
    }
    ncclCommUserRank(g->comm, &g->rank);
    ncclCommCount(g->comm, &g->size);
    *rank = g->rank;
    *size = g->size;
    *group = g;
    return FB_OK;
}

void fb_wn_free(struct fb_world_nccl *n)
{
    if (n == NULL)
        return;
    int prev = enter(n);
    if (n->comm != NULL) {
        ncclResult_t rc = ncclCommFinalize(n->comm);
        const char *why = "";
        if (wait_done(n, rc, fb_now() + 10.0, &why) == 1)
            ncclCommDestroy(n->comm);
        else
            ncclCommAbort(n->comm);
    }
    cudaFree(n->dev);
    cudaStreamDestroy(n->stream);
    cudaSetDevice(prev);
    free(n);
}

_Noreturn void fb_wn_abort(struct fb_world_nccl *n, int code)
{
    fflush(NULL);
    ncclCommAbort(n->comm);
    _exit(code);
}

/* ---- the env launch's world ------------------------------------------------ */

static enum fb_status setup_failed(const struct fb_env_launch *l, int counted, const char *what, struct fb_err *err)
{
    if (counted)
        return fb_fail(err, FB_ERR_LAUNCH,
                       "set-up %s: all %d ranks joined at %s, then NCCL's set-up did not complete; rank %d of %d "
                       "(%s=%d, %s=%d): a rank ended, or NCCL's own connections between the hosts are blocked",
                       what, l->size, l->bootstrap, l->rank, l->size, l->rank_var, l->rank, l->size_var, l->size);
    return fb_fail(err, FB_ERR_LAUNCH,
                   "set-up %s: rank %d of %d (%s=%d, %s=%d) waited on NCCL's bootstrap at %s, which rank 0 serves; "
                   "ranks joined: not known without the job's secret (all %d must start); check that every rank "
                   "was started, that %s reaches rank 0's host, and that its port is free there",
                   what, l->rank, l->size, l->rank_var, l->rank, l->size_var, l->size, l->bootstrap, l->size,
                   l->bootstrap);
}

/* ncclCommInitRankConfig without blocking, polled until it is done, fails
 * or the set-up deadline passes. The process keeps a communicator it gave
 * up on (ncclCommAbort could wait on the bootstrap it is stuck in): it is
 * about to exit. */
static enum fb_status join(struct fb_world_nccl *n, const struct fb_env_launch *l, double deadline, int counted,
                           struct fb_err *err)
{
    ncclUniqueId id;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    const char *why = "";
    ncclResult_t rc = ncclGetUniqueId(&id);
    if (rc == ncclSuccess)
        rc = ncclCommInitRankConfig(&n->comm, l->size, id, l->rank, &config);
    if (rc != ncclSuccess && rc != ncclInProgress) {
        const char *last = ncclGetLastError(n->comm);
        char what[FB_ERR_MSG_MAX / 2];
        snprintf(what, sizeof what, "failed (%s%s%.200s)", ncclGetErrorString(rc), last && *last ? ": " : "",
                 last ? last : "");
        n->comm = NULL;
        return setup_failed(l, counted, what, err);
    }
    int done = wait_done(n, rc, deadline, &why);
    if (done == 1)
        return FB_OK;
    char what[FB_ERR_MSG_MAX / 2];
    if (done == 0)
        snprintf(what, sizeof what, "did not complete within %.0f s", l->setup_s);
    else
        snprintf(what, sizeof what, "failed (%s: %.200s)", why, ncclGetLastError(n->comm));
    n->comm = NULL;
    return setup_failed(l, counted, what, err);
}

enum fb_status fb_world_init_env(struct fb_world *w, const struct fb_env_launch *l, struct fb_err *err)
{
    int ndev = 0;
    memset(w, 0, sizeof *w);
    w->comm = MPI_COMM_NULL;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1)
        return fb_fail(err, FB_ERR_UNAVAIL, "the env launch coordinates its ranks through NCCL and needs a GPU; "
                       "none is visible here (CUDA_VISIBLE_DEVICES?); launch with mpirun for host memory");
    double deadline = fb_now() + l->setup_s;
    int counted = 0;
    if (fb_env_roll_call(l, deadline, &counted, err) != FB_OK)
        return err->code;
    struct fb_world_nccl *n = wn_new(l->local_rank % ndev);
    if (n == NULL)
        return fb_fail(err, FB_ERR_RUNTIME, "cannot create a CUDA stream on device %d", l->local_rank % ndev);
    n->rank = l->rank;
    n->size = l->size;
    if (join(n, l, deadline, counted, err) != FB_OK) {
        free(n); /* its stream and communicator go with the process */
        return err->code;
    }
    /* Later communicators (the benchmark's) take ids of their own, handed
     * out through this one: NCCL_COMM_ID would give them all this root. */
    unsetenv("NCCL_COMM_ID");
    w->nccl = n;
    w->rank = l->rank;
    w->size = l->size;
    return fb_world_init_hosts(w, err);
}
