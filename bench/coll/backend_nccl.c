/* GPU backend: one GPU per rank, NCCL collectives on a private stream,
 * communicator bootstrapped over MPI. Compiled whenever CUDA and NCCL are
 * present (also on machines without a GPU, where available() says so). */
#include <cuda_runtime.h>
#include <nccl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coll/backend.h"
#include "core/clock.h"

/* A wait spins this long (short calls end within it), then sleeps a
 * little per round so that long ones leave the CPU to NCCL's threads. */
#define SPIN_S 0.01
#define NAP_NS 50000L

struct nccl_state {
    int device;
    /* Taken by whoever ends it: fini, or cancel from the watchdog thread. */
    _Atomic(ncclComm_t) comm;
    cudaStream_t stream;
    struct fb_buffers buf;
    int rank, size;
    char host[FB_HOST_MAX];
    uint64_t peak_bytes; /* most GPU memory in use seen (peak_memory) */
    cudaEvent_t *marks;  /* -I 1: per-iteration events (nccl_marks) */
    long nmarks;
};

static enum fb_status cuda_check(cudaError_t rc, const char *what, struct fb_err *err)
{
    if (rc == cudaSuccess)
        return FB_OK;
    return fb_fail(err, FB_ERR_RUNTIME, "%s failed: %s (%s)", what, cudaGetErrorString(rc),
                   cudaGetErrorName(rc));
}

static enum fb_status nccl_check(ncclResult_t rc, ncclComm_t comm, const char *what,
                                 struct fb_err *err)
{
    if (rc == ncclSuccess)
        return FB_OK;
    const char *last = comm ? ncclGetLastError(comm) : ncclGetLastError(NULL);
    return fb_fail(err, FB_ERR_RUNTIME, "%s failed: %s%s%s", what, ncclGetErrorString(rc),
                   last && *last ? ": " : "", last ? last : "");
}

static enum fb_status nccl_available(struct fb_err *err)
{
    int n = 0;
    cudaError_t rc = cudaGetDeviceCount(&n);
    if (rc != cudaSuccess)
        return fb_fail(err, FB_ERR_UNAVAIL,
                       "no usable CUDA device here (cudaGetDeviceCount: %s); use --backend mpi for host memory",
                       cudaGetErrorString(rc));
    if (n == 0)
        return fb_fail(err, FB_ERR_UNAVAIL, "no CUDA device visible (check CUDA_VISIBLE_DEVICES); use --backend mpi");
    return FB_OK;
}

static int ncclt(enum fb_dtype t, ncclDataType_t *out)
{
    switch (t) {
    case FB_INT8: *out = ncclInt8; return 1;
    case FB_UINT8: *out = ncclUint8; return 1;
    case FB_INT32: *out = ncclInt32; return 1;
    case FB_UINT32: *out = ncclUint32; return 1;
    case FB_INT64: *out = ncclInt64; return 1;
    case FB_UINT64: *out = ncclUint64; return 1;
    case FB_HALF: *out = ncclFloat16; return 1;
    case FB_FLOAT: *out = ncclFloat32; return 1;
    case FB_DOUBLE: *out = ncclFloat64; return 1;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0)
    case FB_BFLOAT16: *out = ncclBfloat16; return 1;
#endif
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 24, 0)
    case FB_F8E4M3: *out = ncclFloat8e4m3; return 1;
    case FB_F8E5M2: *out = ncclFloat8e5m2; return 1;
#endif
    default: return 0;
    }
}

static int ncclo(enum fb_redop op, ncclRedOp_t *out)
{
    switch (op) {
    case FB_SUM: *out = ncclSum; return 1;
    case FB_PROD: *out = ncclProd; return 1;
    case FB_MAX: *out = ncclMax; return 1;
    case FB_MIN: *out = ncclMin; return 1;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0)
    case FB_AVG: *out = ncclAvg; return 1;
#endif
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 11, 0)
    case FB_MULSUM: *out = ncclNumOps; return 1; /* created per call: premulsum_op */
#endif
    default: return 0;
    }
}

/* One GPU per rank: the launcher's local rank picks it. */
static enum fb_status pick_device(struct nccl_state *s, const struct fb_world *w, struct fb_err *err)
{
    int ndev = 0;
    enum fb_status st = cuda_check(cudaGetDeviceCount(&ndev), "cudaGetDeviceCount", err);
    if (st != FB_OK)
        return fb_fail(err, FB_ERR_UNAVAIL, "no usable CUDA device on %s", w->host);
    const char *source = NULL;
    int local = fb_launcher_local_rank(&source);
    if (local < 0)
        local = w->local_rank; /* from the host-name census */
    if (local >= ndev)
        return fb_fail(err, FB_ERR_USAGE,
                       "rank %d is local rank %d on %s but only %d GPU%s visible; start at most %d ranks per node",
                       w->rank, local, w->host, ndev, ndev == 1 ? " is" : "s are", ndev);
    s->device = local;
    return cuda_check(cudaSetDevice(local), "cudaSetDevice", err);
}

static enum fb_status nccl_init(struct fb_backend *be, const struct fb_world *w, struct fb_err *err)
{
    struct nccl_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    be->state = s;
    s->rank = w->rank;
    s->size = w->size;
    snprintf(s->host, sizeof s->host, "%s", w->host);
    pick_device(s, w, err);
    /* ncclCommInitRank blocks until every rank joins: a rank that could not
     * pick its GPU must stop the others here, not leave them waiting. */
    enum fb_status st = fb_world_agree(w, err);
    if (st != FB_OK)
        return st;
    ncclUniqueId id;
    if (w->rank == 0 && (st = nccl_check(ncclGetUniqueId(&id), NULL, "ncclGetUniqueId", err)) != FB_OK)
        return st;
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, w->comm);
    if ((st = cuda_check(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking),
                         "cudaStreamCreate", err)) != FB_OK)
        return st;
    ncclComm_t comm = NULL;
    st = nccl_check(ncclCommInitRank(&comm, w->size, id, w->rank), NULL, "ncclCommInitRank", err);
    atomic_store(&s->comm, comm);
    return st;
}

static enum fb_status nccl_free_memory(struct fb_backend *be, uint64_t *bytes, struct fb_err *err)
{
    (void)be;
    size_t free_b = 0, total = 0;
    enum fb_status st = cuda_check(cudaMemGetInfo(&free_b, &total), "cudaMemGetInfo", err);
    if (st == FB_OK)
        *bytes = free_b;
    return st;
}

static enum fb_status nccl_alloc(struct fb_backend *be, size_t send_bytes, size_t recv_bytes,
                                 struct fb_err *err)
{
    struct nccl_state *s = be->state;
    enum fb_status st = cuda_check(cudaMalloc((void **)&s->buf.send, send_bytes ? send_bytes : 1), "cudaMalloc (send)", err);
    if (st == FB_OK)
        st = cuda_check(cudaMalloc((void **)&s->buf.recv, recv_bytes ? recv_bytes : 1), "cudaMalloc (recv)", err);
    if (st != FB_OK)
        return fb_fail(err, FB_ERR_MEMORY, "cannot allocate %zu + %zu bytes on GPU %d", send_bytes,
                       recv_bytes, s->device);
    s->buf.send_bytes = send_bytes;
    s->buf.recv_bytes = recv_bytes;
    st = cuda_check(cudaMemset(s->buf.send, 0, send_bytes), "cudaMemset", err);
    if (st == FB_OK)
        st = cuda_check(cudaMemset(s->buf.recv, 0, recv_bytes), "cudaMemset", err);
    if (st == FB_OK)
        st = cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize", err);
    return st;
}

static ncclResult_t issue(struct nccl_state *s, const struct fb_call *c, ncclDataType_t dt,
                          ncclRedOp_t op)
{
    ncclComm_t comm = atomic_load(&s->comm);
    if (comm == NULL)
        return ncclInvalidUsage; /* aborted by the watchdog: the job is ending */
    size_t esz = fb_dtype_info(c->dtype)->size;
    const char *send = (c->in_place ? s->buf.recv : s->buf.send) + c->send_off * esz;
    char *recv = s->buf.recv + c->recv_off * esz;
    size_t n = c->counts.param;
    switch (c->coll->id) {
    case FB_ALL_REDUCE: return ncclAllReduce(send, recv, n, dt, op, comm, s->stream);
    case FB_ALL_GATHER: return ncclAllGather(send, recv, n, dt, comm, s->stream);
    case FB_REDUCE_SCATTER: return ncclReduceScatter(send, recv, n, dt, op, comm, s->stream);
    case FB_BROADCAST: return ncclBroadcast(send, recv, n, dt, c->root, comm, s->stream);
    case FB_REDUCE: return ncclReduce(send, recv, n, dt, op, c->root, comm, s->stream);
    case FB_ALLTOALL: {
        ncclResult_t rc = ncclGroupStart();
        for (int r = 0; r < s->size && rc == ncclSuccess; r++) {
            rc = ncclSend(send + (size_t)r * n * esz, n, dt, r, comm, s->stream);
            if (rc == ncclSuccess)
                rc = ncclRecv(recv + (size_t)r * n * esz, n, dt, r, comm, s->stream);
        }
        ncclResult_t end = ncclGroupEnd();
        return rc != ncclSuccess ? rc : end;
    }
    case FB_SENDRECV: {
        int next = (s->rank + 1) % s->size, prev = (s->rank - 1 + s->size) % s->size;
        ncclResult_t rc = ncclGroupStart();
        if (rc == ncclSuccess)
            rc = ncclSend(send, n, dt, next, comm, s->stream);
        if (rc == ncclSuccess)
            rc = ncclRecv(recv, n, dt, prev, comm, s->stream);
        ncclResult_t end = ncclGroupEnd();
        return rc != ncclSuccess ? rc : end;
    }
    case FB_NCOLLS: break;
    }
    return ncclInvalidArgument;
}

/* 8-bit floats need NCCL 2.24 at run time too, and every visible GPU at
 * sm_90 or later, as nccl-tests requires before it lists them. */
static int fp8_runs_here(char *why, size_t len)
{
    int version = 0, ndev = 0;
    if (ncclGetVersion(&version) != ncclSuccess || version < NCCL_VERSION(2, 24, 0)) {
        snprintf(why, len, "NCCL %d.%d at run time; 8-bit floats need 2.24", version / 10000, version / 100 % 100);
        return 0;
    }
    if (cudaGetDeviceCount(&ndev) != cudaSuccess)
        ndev = 0;
    for (int d = 0; d < ndev; d++) {
        int major = 0;
        if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d) != cudaSuccess || major < 9) {
            snprintf(why, len, "GPU %d is below sm_90; 8-bit floats need Hopper or later", d);
            return 0;
        }
    }
    return 1;
}

static enum fb_status nccl_supports(const struct fb_collective *c, enum fb_dtype t,
                                    enum fb_redop op, struct fb_err *err)
{
    ncclDataType_t dt;
    ncclRedOp_t nop;
    char why[96];
    if (!ncclt(t, &dt))
        return fb_fail(err, FB_ERR_USAGE, "this NCCL has no %s type; choose another -d", fb_dtype_info(t)->name);
    if (fb_dtype_info(t)->is_fp8 && !fp8_runs_here(why, sizeof why))
        return fb_fail(err, FB_ERR_USAGE, "-d %s cannot run here: %s; choose another -d", fb_dtype_info(t)->name, why);
    if (c->reduces && !ncclo(op, &nop))
        return fb_fail(err, FB_ERR_USAGE, "this NCCL has no '%s' reduction; choose another -o", fb_redop_name(op));
    return FB_OK;
}

/* mulsum: a PreMulSum operator with this rank's scalar (fb_mulsum_scalar,
 * in the call's type) for this one call, as nccl-tests creates one per
 * call and destroys it once the call is enqueued. */
static enum fb_status premulsum_run(struct nccl_state *s, const struct fb_call *c, ncclDataType_t dt,
                                    struct fb_err *err)
{
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 11, 0)
    ncclComm_t comm = atomic_load(&s->comm);
    uint64_t scalar = 0; /* room for the widest type */
    fb_store(c->dtype, &scalar, 0, fb_mulsum_scalar(s->rank));
    ncclRedOp_t op;
    enum fb_status st = nccl_check(ncclRedOpCreatePreMulSum(&op, &scalar, dt, ncclScalarHostImmediate, comm), comm,
                                   "ncclRedOpCreatePreMulSum", err);
    if (st != FB_OK)
        return st;
    st = nccl_check(issue(s, c, dt, op), comm, c->coll->name, err);
    ncclRedOpDestroy(op, comm);
    return st;
#else
    (void)s, (void)dt;
    return fb_fail(err, FB_ERR_USAGE, "this NCCL has no '%s' reduction; choose another -o", fb_redop_name(c->op));
#endif
}

static enum fb_status nccl_run(struct fb_backend *be, const struct fb_call *c, struct fb_err *err)
{
    struct nccl_state *s = be->state;
    ncclDataType_t dt = ncclFloat32;
    ncclRedOp_t op = ncclSum;
    /* The mapping is the check: its message comes only on the rare path
     * (the run's type and operator were checked before the sweep). */
    if (!ncclt(c->dtype, &dt) || (c->coll->reduces && !ncclo(c->op, &op)))
        return nccl_supports(c->coll, c->dtype, c->op, err);
    if (c->coll->reduces && c->op == FB_MULSUM)
        return premulsum_run(s, c, dt, err);
    return nccl_check(issue(s, c, dt, op), atomic_load(&s->comm), c->coll->name, err);
}

/* The stream's work done, or NCCL's asynchronous error: a lost peer or a
 * broken network leaves the stream busy for ever (its kernels wait for data
 * that never comes), so the wait asks NCCL as it goes, as nccl-tests does. */
static enum fb_status stream_wait(struct nccl_state *s, struct fb_err *err)
{
    const struct timespec nap = {0, NAP_NS};
    double start = fb_now();
    for (;;) {
        cudaError_t rc = cudaStreamQuery(s->stream);
        if (rc == cudaSuccess)
            return FB_OK;
        if (rc != cudaErrorNotReady)
            return cuda_check(rc, "cudaStreamQuery", err);
        ncclComm_t comm = atomic_load(&s->comm);
        ncclResult_t async = ncclSuccess;
        if (comm != NULL && ncclCommGetAsyncError(comm, &async) == ncclSuccess && async != ncclSuccess) {
            const char *last = ncclGetLastError(comm);
            return fb_fail(err, FB_ERR_RUNTIME, "NCCL failed during the call (ncclCommGetAsyncError: %s)%s%s",
                           ncclGetErrorString(async), last && *last ? ": " : "", last ? last : "");
        }
        if (fb_now() - start < SPIN_S)
            sched_yield();
        else
            nanosleep(&nap, NULL);
    }
}

/* Launch overhead out of the measurement: the timed calls are captured
 * once and replayed, as nccl-tests -G does. */
static enum fb_status nccl_run_graph(struct fb_backend *be, const struct fb_call *c, long ops,
                                     int launches, double *seconds, struct fb_err *err)
{
    struct nccl_state *s = be->state;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    enum fb_status st = cuda_check(cudaStreamBeginCapture(s->stream, cudaStreamCaptureModeThreadLocal),
                                   "cudaStreamBeginCapture", err);
    for (long i = 0; st == FB_OK && i < ops; i++)
        st = nccl_run(be, c, err);
    cudaError_t end = cudaStreamEndCapture(s->stream, &graph);
    if (st == FB_OK)
        st = cuda_check(end, "cudaStreamEndCapture", err);
    if (st == FB_OK)
        st = cuda_check(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate", err);
    double t0 = fb_now();
    for (int l = 0; st == FB_OK && l < launches; l++)
        st = cuda_check(cudaGraphLaunch(exec, s->stream), "cudaGraphLaunch", err);
    if (st == FB_OK)
        st = stream_wait(s, err);
    *seconds = fb_now() - t0;
    if (exec)
        cudaGraphExecDestroy(exec);
    if (graph)
        cudaGraphDestroy(graph);
    return st;
}

static enum fb_status nccl_wait(struct fb_backend *be, struct fb_err *err)
{
    return stream_wait(be->state, err);
}

static enum fb_status nccl_write(struct fb_backend *be, enum fb_buf which, size_t off,
                                 const void *src, size_t bytes, struct fb_err *err)
{
    struct nccl_state *s = be->state;
    char *at = fb_buffer_span(&s->buf, which, off, bytes, "write", err);
    if (at == NULL)
        return err->code;
    return cuda_check(cudaMemcpy(at, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy H2D", err);
}

static enum fb_status nccl_read(struct fb_backend *be, enum fb_buf which, size_t off, void *dst,
                                size_t bytes, struct fb_err *err)
{
    struct nccl_state *s = be->state;
    const char *at = fb_buffer_span(&s->buf, which, off, bytes, "read", err);
    if (at == NULL)
        return err->code;
    return cuda_check(cudaMemcpy(dst, at, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy D2H", err);
}

static void nccl_describe(struct fb_backend *be, json_object *device)
{
    struct nccl_state *s = be->state;
    struct cudaDeviceProp prop;
    json_object_object_add(device, "kind", json_object_new_string("gpu"));
    if (s == NULL || cudaGetDeviceProperties(&prop, s->device) != cudaSuccess) {
        json_object_object_add(device, "name", NULL);
        json_object_object_add(device, "pci_bus_id", NULL);
        json_object_object_add(device, "memory_bytes", NULL);
        return;
    }
    char bus[32];
    snprintf(bus, sizeof bus, "%04x:%02x:%02x.0", prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
    json_object_object_add(device, "name", json_object_new_string(prop.name));
    json_object_object_add(device, "pci_bus_id", json_object_new_string(bus));
    json_object_object_add(device, "memory_bytes", json_object_new_uint64(prop.totalGlobalMem));
    json_object_object_add(device, "cuda_device", json_object_new_int(s->device));
}

static json_object *version_string(int code, int major_div, int minor_div, int minor_mod)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%d.%d", code / major_div, (code / minor_div) % minor_mod);
    return json_object_new_string(buf);
}

static void nccl_versions(struct fb_backend *be, json_object *versions)
{
    (void)be;
    int v = 0;
    if (ncclGetVersion(&v) == ncclSuccess) {
        char buf[32];
        /* Since 2.9 the code is major*10000 + minor*100 + patch. */
        snprintf(buf, sizeof buf, "%d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
        json_object_object_add(versions, "nccl", json_object_new_string(buf));
    }
    if (cudaRuntimeGetVersion(&v) == cudaSuccess)
        json_object_object_add(versions, "cuda_runtime", version_string(v, 1000, 10, 100));
    if (cudaDriverGetVersion(&v) == cudaSuccess && v > 0)
        json_object_object_add(versions, "cuda_driver", version_string(v, 1000, 10, 100));
}

static enum fb_status nccl_peak_memory(struct fb_backend *be, uint64_t *bytes, struct fb_err *err)
{
    struct nccl_state *s = be->state;
    size_t free_b = 0, total = 0;
    enum fb_status st = cuda_check(cudaMemGetInfo(&free_b, &total), "cudaMemGetInfo", err);
    if (st == FB_OK && total - free_b > s->peak_bytes)
        s->peak_bytes = total - free_b;
    *bytes = s->peak_bytes;
    return st;
}

/* The watchdog's way out of a hang: kernels stuck on a lost peer end only
 * when the communicator is aborted. */
static void nccl_cancel(struct fb_backend *be)
{
    struct nccl_state *s = be->state;
    ncclComm_t comm = s ? atomic_exchange(&s->comm, NULL) : NULL;
    if (comm != NULL)
        ncclCommAbort(comm);
}

static void nccl_fini(struct fb_backend *be, int abort)
{
    struct nccl_state *s = be->state;
    if (s == NULL)
        return;
    ncclComm_t comm = atomic_exchange(&s->comm, NULL);
    if (abort) {
        /* The process ends next; the watchdog thread may be reading s. */
        if (comm != NULL)
            ncclCommAbort(comm);
        return;
    }
    if (comm != NULL)
        ncclCommDestroy(comm);
    if (s->buf.send)
        cudaFree(s->buf.send);
    if (s->buf.recv)
        cudaFree(s->buf.recv);
    if (s->stream)
        cudaStreamDestroy(s->stream);
    free(s);
    be->state = NULL;
}

/* -I 1 as nccl-tests times it: an event between iterations on the stream
 * (recordEvents, src/common.cu), read once the stream is done. */
static enum fb_status nccl_marks(struct fb_backend *be, long n, struct fb_err *err)
{
    struct nccl_state *s = be->state;
    for (long i = 0; i < s->nmarks; i++)
        cudaEventDestroy(s->marks[i]);
    free(s->marks);
    s->marks = NULL;
    s->nmarks = 0;
    if (n <= 0)
        return FB_OK;
    s->marks = calloc((size_t)n + 1, sizeof *s->marks);
    if (s->marks == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory for %ld CUDA events", n + 1);
    for (; s->nmarks <= n; s->nmarks++) {
        enum fb_status st = cuda_check(cudaEventCreate(&s->marks[s->nmarks]), "cudaEventCreate", err);
        if (st != FB_OK)
            return st;
    }
    return FB_OK;
}

static enum fb_status nccl_mark(struct fb_backend *be, long i, struct fb_err *err)
{
    struct nccl_state *s = be->state;
    if (i < 0 || i >= s->nmarks)
        return fb_fail(err, FB_ERR_INTERNAL, "iteration mark %ld of %ld", i, s->nmarks);
    return cuda_check(cudaEventRecord(s->marks[i], s->stream), "cudaEventRecord", err);
}

static enum fb_status nccl_spans(struct fb_backend *be, double *seconds, long n, struct fb_err *err)
{
    struct nccl_state *s = be->state;
    enum fb_status st = n < s->nmarks ? FB_OK : fb_fail(err, FB_ERR_INTERNAL, "%ld spans of %ld marks", n, s->nmarks);
    for (long i = 0; st == FB_OK && i < n; i++) {
        float ms = 0;
        st = cuda_check(cudaEventElapsedTime(&ms, s->marks[i], s->marks[i + 1]), "cudaEventElapsedTime", err);
        seconds[i] = (double)ms * 1e-3;
    }
    return st;
}

const struct fb_backend_ops fb_backend_nccl = {
    .name = "nccl",
    .inplace_style = FB_INPLACE_NCCL,
    .available = nccl_available,
    .supports = nccl_supports,
    .init = nccl_init,
    .free_memory = nccl_free_memory,
    .alloc = nccl_alloc,
    .run = nccl_run,
    .run_graph = nccl_run_graph,
    .marks = nccl_marks,
    .mark = nccl_mark,
    .spans = nccl_spans,
    .wait = nccl_wait,
    .write = nccl_write,
    .read = nccl_read,
    .describe = nccl_describe,
    .versions = nccl_versions,
    .peak_memory = nccl_peak_memory,
    .cancel = nccl_cancel,
    .fini = nccl_fini,
};
