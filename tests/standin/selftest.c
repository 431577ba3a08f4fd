/* The stand-in's own checks, for the calls fabric-bench makes little or no
 * use of: events, stream queries, graph capture rules, memory accounting,
 * the last error, the legacy stream's held copies and sets, the devices of
 * events and streams, the capture modes' refusals, ncclCommSplit, ranks
 * that disagree about a call, ncclCommInitAll and the rules of symmetric
 * windows, kernels launched by name with the rules a GPU applies. An
 * MPI program (MPI carries the unique id), built and run by
 * tests/coll/test_gpu_standin.sh against the stand-in; prints "ok - " and
 * "not ok - " lines in the test protocol (rank 0 the first, any rank the
 * second). */
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "coll/validate_kernels.h"

/* What nvcc's host code calls, declared in its C++ headers only. */
void **__cudaRegisterFatBinary(void *fatCubin);
void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun, const char *deviceName,
                            int thread_limit, uint3 *tid, uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize);
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem, struct CUstream_st *stream);
cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem, void *stream);

static int rank, nranks, failures;

static void check(int cond, const char *name, const char *why)
{
    if (!cond) {
        printf("not ok - rank %d: %s: %s\n", rank, name, why);
        failures++;
    } else if (rank == 0) {
        printf("ok - %s\n", name);
    }
    fflush(stdout);
}

static void nap(void *arg)
{
    struct timespec t = {0, *(const long *)arg};
    nanosleep(&t, NULL);
}

static void count(void *arg)
{
    (*(int *)arg)++;
}

static void events_and_queries(cudaStream_t s)
{
    static const long ms20 = 20000000L;
    cudaEvent_t a, b;
    float ms = 0;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    cudaEventRecord(a, s);
    cudaLaunchHostFunc(s, nap, (void *)&ms20);
    cudaEventRecord(b, s);
    check(cudaStreamQuery(s) == cudaErrorNotReady && cudaEventQuery(b) == cudaErrorNotReady,
          "work completes asynchronously: the stream and a later event are not ready", "ready at once");
    check(cudaEventSynchronize(b) == cudaSuccess && cudaEventElapsedTime(&ms, a, b) == cudaSuccess && ms >= 15,
          "cudaEventElapsedTime spans the work between two events", "wrong elapsed time");
    check(cudaStreamQuery(s) == cudaSuccess, "the stream is idle once its last event completed", "still busy");
    cudaEventDestroy(a);
    cudaEventDestroy(b);
}

static void graphs(cudaStream_t s)
{
    int n = 0;
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
    cudaLaunchHostFunc(s, count, &n);
    cudaLaunchHostFunc(s, count, &n);
    cudaStreamEndCapture(s, &g);
    check(n == 0, "captured work does not run", "it ran");
    cudaGraphInstantiate(&x, g, 0);
    for (int i = 0; i < 3; i++)
        cudaGraphLaunch(x, s);
    cudaStreamSynchronize(s);
    check(n == 6, "a graph launched 3 times replays its 2 nodes each time", "wrong count");
    cudaGraphExecDestroy(x);
    cudaGraphDestroy(g);
    cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
    cudaError_t sync = cudaStreamSynchronize(s);
    cudaError_t end = cudaStreamEndCapture(s, &g);
    check(sync == cudaErrorStreamCaptureUnsupported && end == cudaErrorStreamCaptureInvalidated && g == NULL,
          "synchronising a capturing stream fails and spoils the capture", cudaGetErrorName(sync));
}

/* --- the legacy stream: held copies and sets ---------------------------- */

/* What a stream reads of *a now: its copy into *b, then back to the host. */
static int peek(cudaStream_t s, const int *a, int *b)
{
    int h = -1;
    cudaMemcpyAsync(b, a, sizeof h, cudaMemcpyDeviceToDevice, s);
    cudaMemcpyAsync(&h, b, sizeof h, cudaMemcpyDeviceToHost, s);
    cudaStreamSynchronize(s);
    return h;
}

/* *a = v through a non-blocking stream, landed. */
static void put(cudaStream_t s, int *a, int v)
{
    cudaMemcpyAsync(a, &v, sizeof v, cudaMemcpyHostToDevice, s);
    cudaStreamSynchronize(s);
}

/* *a = 1 landed, then *a = v by a pageable cudaMemcpy of `kind`, which is
 * held: returns what a non-blocking stream reads next (1 when held). */
static int held_copy(cudaStream_t nb, int *a, int *b, int v, enum cudaMemcpyKind kind)
{
    put(nb, a, 1);
    cudaMemcpy(a, &v, sizeof v, kind);
    return peek(nb, a, b);
}

/* A pageable cudaMemcpy to the device (or a cudaMemset) lands in the
 * legacy stream's order, at the latest legal moment: a non-blocking stream
 * reads the old bytes until something orders work after the legacy stream. */
static void held_copies(cudaStream_t nb)
{
    int *a = NULL, *b = NULL, *tmp = NULL, *pin = NULL, v, old, now;
    cudaStream_t bs;
    cudaEvent_t ev;
    cudaMalloc((void **)&a, sizeof *a);
    cudaMalloc((void **)&b, sizeof *b);
    cudaStreamCreate(&bs);
    cudaEventCreate(&ev);

    put(nb, a, 1);
    v = 2;
    cudaMemcpy(a, &v, sizeof v, cudaMemcpyHostToDevice);
    v = 99; /* the source was staged at the call */
    old = peek(nb, a, b);
    cudaStreamSynchronize(0);
    now = peek(nb, a, b);
    check(old == 1 && now == 2,
          "a pageable cudaMemcpy H2D: a non-blocking stream reads the old bytes; cudaStreamSynchronize(0) lands it, "
          "as staged at the call",
          old != 1 ? "the non-blocking stream saw the copy" : "not landed, or not as staged");

    old = held_copy(nb, a, b, 3, cudaMemcpyHostToDevice);
    now = peek(bs, a, b);
    check(old == 1 && now == 3, "a held cudaMemcpy H2D: a blocking stream's later copy sees the new bytes",
          old != 1 ? "the non-blocking stream saw the copy" : "the blocking stream did not");

    old = held_copy(nb, a, b, 4, cudaMemcpyDefault);
    cudaDeviceSynchronize();
    now = peek(nb, a, b);
    check(old == 1 && now == 4, "a pageable cudaMemcpyDefault host to device is held; cudaDeviceSynchronize lands it",
          old != 1 ? "the non-blocking stream saw the copy" : "not landed");

    put(nb, a, 1);
    cudaMemset(a, 0x7f, sizeof *a);
    old = peek(nb, a, b);
    now = peek(bs, a, b);
    cudaStreamSynchronize(0);
    put(nb, a, 1);
    cudaMemset(a, 0x11, sizeof *a);
    int old2 = peek(nb, a, b);
    cudaStreamSynchronize(0);
    int now2 = peek(nb, a, b);
    check(old == 1 && now == 0x7f7f7f7f && old2 == 1 && now2 == 0x11111111,
          "cudaMemset is held likewise: old bytes on a non-blocking stream, new on a blocking one and after "
          "cudaStreamSynchronize(0)",
          old != 1 || old2 != 1 ? "the non-blocking stream saw the set" : "the set did not land");

    old = held_copy(nb, a, b, 5, cudaMemcpyHostToDevice);
    now = -1;
    cudaMemcpy(&now, a, sizeof now, cudaMemcpyDeviceToHost);
    check(old == 1 && now == 5, "a D2H cudaMemcpy after a held H2D one sees its value (legacy stream order)",
          old != 1 ? "the non-blocking stream saw the copy" : "the D2H copy read the old bytes");

    old = held_copy(nb, a, b, 6, cudaMemcpyHostToDevice);
    cudaEventRecord(ev, 0);
    cudaEventSynchronize(ev);
    now = peek(nb, a, b);
    check(old == 1 && now == 6, "an event recorded on the NULL stream after a held copy, synchronised: landed",
          old != 1 ? "the non-blocking stream saw the copy" : "not landed");

    old = held_copy(nb, a, b, 7, cudaMemcpyHostToDevice);
    cudaMalloc((void **)&tmp, sizeof *tmp);
    cudaFree(tmp);
    now = peek(nb, a, b);
    check(old == 1 && now == 7, "cudaFree syncs the device: a held copy lands",
          old != 1 ? "the non-blocking stream saw the copy" : "not landed");

    old = held_copy(nb, a, b, 8, cudaMemcpyHostToDevice);
    cudaMallocHost((void **)&pin, sizeof *pin);
    *pin = 9;
    cudaMemcpy(a, pin, sizeof *pin, cudaMemcpyHostToDevice);
    now = peek(nb, a, b);
    check(old == 1 && now == 9, "from cudaMallocHost memory cudaMemcpy is synchronous, after the held copy before it",
          old != 1 ? "the non-blocking stream saw the pageable copy" : "not landed in order");
    cudaFreeHost(pin);

    cudaStreamSynchronize(0);
    cudaEventDestroy(ev);
    cudaStreamDestroy(bs);
    cudaFree(a);
    cudaFree(b);
}

/* --- devices of events and streams ------------------------------------- */

static void devices(cudaStream_t nb, int ndev)
{
    int d0 = 0, d1;
    cudaGetDevice(&d0);
    d1 = (d0 + 1) % ndev;
    cudaEvent_t e0, e1;
    cudaStream_t s1;
    int *x1 = NULL, *y1 = NULL;
    cudaEventCreate(&e0);
    cudaSetDevice(d1);
    cudaEventCreate(&e1);
    cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
    cudaMalloc((void **)&x1, sizeof *x1);
    cudaMalloc((void **)&y1, sizeof *y1);
    cudaSetDevice(d0);
    cudaError_t on_other = cudaEventRecord(e1, nb), on_null = cudaEventRecord(e1, NULL);
    cudaGetLastError();
    /* Allowed across devices: record on its own device's stream, then wait,
     * query and sync from the other; copies to and syncs of another
     * device's stream. */
    cudaSetDevice(d1);
    cudaError_t own = cudaEventRecord(e1, s1);
    cudaSetDevice(d0);
    cudaError_t wait = cudaStreamWaitEvent(nb, e1, 0), sync = cudaEventSynchronize(e1), query = cudaEventQuery(e1),
                copy = cudaMemcpyAsync(y1, x1, sizeof *x1, cudaMemcpyDeviceToDevice, s1),
                ssync = cudaStreamSynchronize(s1), nsync = cudaStreamSynchronize(nb);
    check(on_other == cudaErrorInvalidResourceHandle && on_null == cudaErrorInvalidResourceHandle,
          "cudaEventRecord of another device's event, on a stream or the NULL stream: cudaErrorInvalidResourceHandle",
          cudaGetErrorName(on_other != cudaErrorInvalidResourceHandle ? on_other : on_null));
    check(on_other == cudaErrorInvalidResourceHandle && own == cudaSuccess && wait == cudaSuccess &&
              sync == cudaSuccess && query == cudaSuccess && copy == cudaSuccess && ssync == cudaSuccess &&
              nsync == cudaSuccess,
          "across devices: cudaStreamWaitEvent, cudaEventSynchronize/Query, cudaMemcpyAsync to and "
          "cudaStreamSynchronize of another device's stream are allowed (cudaEventRecord there is not)",
          "a cross-device call refused, or the record allowed");
    cudaEventRecord(e0, nb);
    cudaEventSynchronize(e0);
    float ms = 0;
    cudaError_t el = cudaEventElapsedTime(&ms, e0, e1);
    cudaGetLastError();
    check(el == cudaErrorInvalidResourceHandle,
          "cudaEventElapsedTime of events of two devices: cudaErrorInvalidResourceHandle", cudaGetErrorName(el));
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaStreamDestroy(s1);
    cudaFree(x1);
    cudaFree(y1);
}

/* --- capture refusals ---------------------------------------------------- */

static void *malloc_elsewhere(void *arg)
{
    void *p = NULL;
    cudaError_t *e = arg;
    *e = cudaMalloc(&p, 64);
    cudaFree(p);
    return NULL;
}

/* cudaMalloc's answer from another thread. */
static cudaError_t other_thread_malloc(void)
{
    cudaError_t e = cudaErrorUnknown;
    pthread_t t;
    if (pthread_create(&t, NULL, malloc_elsewhere, &e) == 0)
        pthread_join(t, NULL);
    return e;
}

enum unsafe { U_MALLOC, U_FREE, U_MEMCPY, U_MEMSET, U_DEVSYNC, U_SYNC0, U_QUERY0, U_N };
static const char *const unsafe_names[U_N] = {"cudaMalloc", "cudaFree", "cudaMemcpy", "cudaMemset",
                                              "cudaDeviceSynchronize", "cudaStreamSynchronize(0)",
                                              "cudaStreamQuery(0)"};

static cudaError_t unsafe_call(enum unsafe u, int *dev, void **fresh)
{
    int h = 0;
    switch (u) {
    case U_MALLOC: return cudaMalloc(fresh, 64);
    case U_FREE: return cudaFree(dev);
    case U_MEMCPY: return cudaMemcpy(&h, dev, sizeof h, cudaMemcpyDeviceToHost);
    case U_MEMSET: return cudaMemset(dev, 0, sizeof h);
    case U_DEVSYNC: return cudaDeviceSynchronize();
    case U_SYNC0: return cudaStreamSynchronize(0);
    case U_QUERY0: return cudaStreamQuery(0);
    case U_N: break;
    }
    return cudaErrorInvalidValue;
}

/* One capture in `mode` around one unsafe call: the call's answer and
 * cudaStreamEndCapture's. */
static void around(cudaStream_t cs, enum cudaStreamCaptureMode mode, enum unsafe u, cudaError_t *call,
                   cudaError_t *end)
{
    int *dev = NULL;
    void *fresh = NULL;
    cudaGraph_t g = NULL;
    cudaMalloc((void **)&dev, sizeof *dev);
    cudaStreamBeginCapture(cs, mode);
    *call = unsafe_call(u, dev, &fresh);
    *end = cudaStreamEndCapture(cs, &g);
    if (g != NULL)
        cudaGraphDestroy(g);
    if (*end == cudaSuccess && g == NULL)
        *end = cudaErrorUnknown;
    if (u != U_FREE || *call != cudaSuccess)
        cudaFree(dev);
    cudaFree(fresh);
    cudaStreamSynchronize(0);
    cudaGetLastError();
}

static void count_up(void *arg)
{
    (*(int *)arg)++;
}

static void capture_rules(void)
{
    cudaStream_t cs;
    cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking);
    cudaError_t leg0 = cudaStreamBeginCapture(0, cudaStreamCaptureModeThreadLocal),
                leg = cudaStreamBeginCapture(cudaStreamLegacy, cudaStreamCaptureModeThreadLocal);
    int n = 0;
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    cudaError_t pt = cudaStreamBeginCapture(cudaStreamPerThread, cudaStreamCaptureModeThreadLocal);
    cudaLaunchHostFunc(cudaStreamPerThread, count_up, &n);
    cudaError_t pt_end = cudaStreamEndCapture(cudaStreamPerThread, &g);
    int ran_in_capture = n;
    if (g != NULL && cudaGraphInstantiate(&x, g, 0) == cudaSuccess) {
        cudaGraphLaunch(x, cudaStreamPerThread);
        cudaGraphLaunch(x, cudaStreamPerThread);
        cudaStreamSynchronize(cudaStreamPerThread);
        cudaGraphExecDestroy(x);
    }
    if (g != NULL)
        cudaGraphDestroy(g);
    cudaGetLastError();
    check(leg0 == cudaErrorStreamCaptureUnsupported && leg == cudaErrorStreamCaptureUnsupported && pt == cudaSuccess &&
              pt_end == cudaSuccess && ran_in_capture == 0 && n == 2,
          "capture of the legacy stream (0, cudaStreamLegacy) is cudaErrorStreamCaptureUnsupported; "
          "cudaStreamPerThread is captured and replayed",
          pt != cudaSuccess ? cudaGetErrorName(pt) : "legacy capture allowed or per-thread replay wrong");

    static const enum cudaStreamCaptureMode strict_modes[] = {cudaStreamCaptureModeGlobal,
                                                              cudaStreamCaptureModeThreadLocal};
    for (int m = 0; m < 2; m++) {
        const char *bad = NULL;
        for (int u = 0; u < U_N && bad == NULL; u++) {
            cudaError_t call, end;
            around(cs, strict_modes[m], (enum unsafe)u, &call, &end);
            if (call != cudaErrorStreamCaptureUnsupported || end != cudaErrorStreamCaptureInvalidated)
                bad = unsafe_names[u];
        }
        check(bad == NULL,
              m == 0 ? "under a global capture cudaMalloc, cudaFree, cudaMemcpy, cudaMemset, cudaDeviceSynchronize "
                       "and the legacy stream's sync and query are refused and invalidate it"
                     : "under a thread-local capture the same calls of its thread are refused and invalidate it",
              bad ? bad : "");
    }
    const char *bad = NULL;
    for (int u = 0; u < U_N && bad == NULL; u++) {
        cudaError_t call, end;
        around(cs, cudaStreamCaptureModeRelaxed, (enum unsafe)u, &call, &end);
        if (call != cudaSuccess || end != cudaSuccess)
            bad = unsafe_names[u];
    }
    check(bad == NULL, "under a relaxed capture the same calls are allowed and the capture stays valid",
          bad ? bad : "");

    cudaStreamBeginCapture(cs, cudaStreamCaptureModeGlobal);
    cudaError_t other_global = other_thread_malloc();
    cudaError_t end_global = cudaStreamEndCapture(cs, &g);
    if (g != NULL)
        cudaGraphDestroy(g);
    cudaStreamBeginCapture(cs, cudaStreamCaptureModeThreadLocal);
    cudaError_t other_local = other_thread_malloc();
    cudaError_t end_local = cudaStreamEndCapture(cs, &g);
    if (g != NULL)
        cudaGraphDestroy(g);
    cudaGetLastError();
    check(other_global == cudaErrorStreamCaptureUnsupported && end_global == cudaErrorStreamCaptureInvalidated &&
              other_local == cudaSuccess && end_local == cudaSuccess,
          "another thread's cudaMalloc: refused under a global capture (which it invalidates), allowed under a "
          "thread-local one",
          other_global != cudaErrorStreamCaptureUnsupported ? "allowed under a global capture"
                                                            : "wrong under the thread-local capture");

    cudaEvent_t ev;
    cudaEventCreate(&ev);
    cudaStreamBeginCapture(cs, cudaStreamCaptureModeRelaxed);
    cudaEventRecord(ev, cs);
    cudaError_t q = cudaEventQuery(ev), sy = cudaEventSynchronize(ev);
    cudaError_t end = cudaStreamEndCapture(cs, &g);
    if (g != NULL)
        cudaGraphDestroy(g);
    cudaError_t after = cudaEventQuery(ev);
    cudaGetLastError();
    check(q == cudaErrorStreamCaptureUnsupported && sy == cudaErrorStreamCaptureUnsupported &&
              end == cudaErrorStreamCaptureInvalidated && after == cudaSuccess,
          "an event recorded inside an active capture: its query and sync are refused and invalidate the capture",
          cudaGetErrorName(q));
    cudaEventDestroy(ev);
    cudaStreamDestroy(cs);
}

static void memory(void)
{
    size_t free0 = 0, free1 = 0, total = 0;
    void *p = NULL, *big = NULL;
    char host[16];
    cudaMemGetInfo(&free0, &total);
    cudaMalloc(&p, 1u << 20);
    cudaMemGetInfo(&free1, &total);
    check(free0 - free1 == 1u << 20, "cudaMalloc counts against the device's memory", "free did not drop by 1M");
    check(cudaMalloc(&big, total) == cudaErrorMemoryAllocation && big == NULL,
          "past the device's memory: cudaErrorMemoryAllocation", "allocated");
    check(cudaGetLastError() == cudaErrorMemoryAllocation && cudaGetLastError() == cudaSuccess,
          "cudaGetLastError returns the last error once", "wrong last error");
    check(cudaMemcpy(host, host + 8, 8, cudaMemcpyHostToDevice) == cudaErrorInvalidValue,
          "a host pointer as the device side of a copy: cudaErrorInvalidValue", "copied");
    cudaFree(p);
}

static void split(ncclComm_t world)
{
    int color = rank == nranks - 1 && nranks > 2 ? NCCL_SPLIT_NOCOLOR : rank % 2;
    ncclComm_t sub = NULL;
    ncclResult_t r = ncclCommSplit(world, color, -rank, &sub, NULL);
    if (color == NCCL_SPLIT_NOCOLOR) {
        check(r == ncclSuccess && sub == NULL, "NCCL_SPLIT_NOCOLOR: no communicator", ncclGetErrorString(r));
        return;
    }
    int n = 0, me = -1, want_n = 0, want_me = 0, *v = NULL;
    for (int q = 0; q < nranks; q++) {
        int c = q == nranks - 1 && nranks > 2 ? -1 : q % 2;
        want_n += c == color;
        want_me += c == color && q > rank; /* key -rank: the highest first */
    }
    ncclCommCount(sub, &n);
    ncclCommUserRank(sub, &me);
    check(r == ncclSuccess && n == want_n && me == want_me, "ncclCommSplit: ranks by colour, ordered by key",
          ncclGetErrorString(r));
    cudaMalloc((void **)&v, sizeof *v);
    cudaMemcpy(v, &rank, sizeof rank, cudaMemcpyHostToDevice);
    ncclAllReduce(v, v, 1, ncclInt32, ncclSum, sub, NULL);
    cudaStreamSynchronize(NULL);
    int sum = 0, want = 0;
    cudaMemcpy(&sum, v, sizeof sum, cudaMemcpyDeviceToHost);
    for (int q = color; q < nranks - (nranks > 2); q += 2)
        want += q;
    check(sum == want, "an all_reduce on the split communicator sums its ranks alone", "wrong sum");
    cudaFree(v);
    ncclCommDestroy(sub);
}

static ncclResult_t poll_comm(ncclComm_t c)
{
    ncclResult_t st = ncclInProgress;
    for (int i = 0; i < 100000 && st == ncclInProgress; i++) {
        struct timespec t = {0, 50000};
        ncclCommGetAsyncError(c, &st);
        nanosleep(&t, NULL);
    }
    return st;
}

/* config.blocking = 0, as NCCL: each operation returns ncclInProgress and
 * completes in the background; a call before it has is refused, and the
 * stream may not have the work yet. */
static void nonblocking(cudaStream_t s)
{
    ncclUniqueId id;
    ncclComm_t c = NULL;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    int *v = NULL, sum = 0;
    if (rank == 0)
        ncclGetUniqueId(&id);
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    cudaMalloc((void **)&v, sizeof *v);
    cudaMemcpy(v, &rank, sizeof rank, cudaMemcpyHostToDevice);
    cudaDeviceSynchronize();
    check(ncclCommInitRankConfig(&c, nranks, id, rank, &config) == ncclInProgress,
          "non-blocking init returns ncclInProgress", "another result");
    ncclResult_t r = ncclAllReduce(v, v, 1, ncclInt32, ncclSum, c, s);
    check(r == ncclInvalidArgument && strstr(ncclGetLastError(c), "before the previous operation returned ncclSuccess"),
          "a call before the init completed is refused, in NCCL's words", ncclGetLastError(c));
    check(poll_comm(c) == ncclSuccess, "ncclCommGetAsyncError reaches ncclSuccess once the init is done", "not");
    r = ncclAllReduce(v, v, 1, ncclInt32, ncclSum, c, s);
    check(r == ncclInProgress && cudaStreamQuery(s) == cudaSuccess,
          "a non-blocking call returns ncclInProgress before its work is on the stream", "on the stream at once");
    check(poll_comm(c) == ncclSuccess && cudaStreamSynchronize(s) == cudaSuccess, "... then it is enqueued", "not");
    cudaMemcpy(&sum, v, sizeof sum, cudaMemcpyDeviceToHost);
    check(sum == nranks * (nranks - 1) / 2, "... and carried out", "wrong sum");
    check(ncclCommFinalize(c) == ncclInProgress && poll_comm(c) == ncclSuccess,
          "non-blocking finalize: ncclInProgress, then ncclSuccess", "another result");
    ncclCommDestroy(c);
    cudaFree(v);
}

/* A group is one fused launch: a send of bytes the same group receives
 * into reads them as they were before the group. */
static void fused_group(ncclComm_t world, cudaStream_t s)
{
    int peer = rank ^ 1, *a = NULL, *b = NULL, *c = NULL, got = 0, init[3] = {10 + rank, -1, -2};
    if (peer >= nranks)
        return;
    cudaMalloc((void **)&a, 3 * sizeof *a);
    b = a + 1, c = a + 2;
    cudaMemcpy(a, init, sizeof init, cudaMemcpyHostToDevice);
    cudaDeviceSynchronize();
    ncclGroupStart();
    ncclGroupStart(); /* nested: still one group */
    ncclSend(a, 1, ncclInt32, peer, world, s);
    ncclRecv(b, 1, ncclInt32, peer, world, s);
    ncclGroupEnd();
    ncclSend(b, 1, ncclInt32, peer, world, s);
    ncclRecv(c, 1, ncclInt32, peer, world, s);
    ncclGroupEnd();
    cudaStreamSynchronize(s);
    cudaMemcpy(&got, c, sizeof got, cudaMemcpyDeviceToHost);
    check(got == -1, "dependent steps in one group: the second send reads the bytes from before the group",
          "it read what the group received");
    cudaFree(a);
}

/* Ranks that call one collective with different counts: an error naming
 * both sides, through ncclCommGetAsyncError, not wrong data or a hang. */
static void mismatch(ncclComm_t world, cudaStream_t s)
{
    float *buf = NULL;
    cudaMalloc((void **)&buf, 4096 * sizeof *buf);
    ncclAllReduce(buf, buf, 1000 + (size_t)rank, ncclFloat32, ncclSum, world, s);
    ncclResult_t async = ncclSuccess;
    for (int i = 0; i < 10000 && async == ncclSuccess; i++) {
        struct timespec t = {0, 1000000L};
        ncclCommGetAsyncError(world, &async);
        nanosleep(&t, NULL);
    }
    /* A rank that saw the mismatch first may abort and go before this one
     * compares: then this one's error is the peer's connection closed or
     * broken, still an error and no hang. */
    const char *last = ncclGetLastError(world);
    check(async != ncclSuccess && (strstr(last, "different collectives or counts") || strstr(last, "closed") ||
                                   strstr(last, "broke")),
          "different counts on different ranks: an asynchronous error that says so", last);
    check(cudaStreamQuery(s) == cudaErrorNotReady, "the failed call keeps its stream busy until the abort",
          "stream idle");
    ncclCommAbort(world);
    cudaStreamSynchronize(s);
    check(cudaStreamQuery(s) == cudaSuccess, "ncclCommAbort frees the stream", "still busy");
    cudaFree(buf);
}

/* Two ranks in this process, one group of calls over both; windows only
 * on ncclMemAlloc memory. */
static void init_all(void)
{
    ncclComm_t comms[2] = {NULL, NULL};
    int devs[2] = {0, 1};
    check(ncclCommInitAll(comms, 2, devs) == ncclSuccess, "ncclCommInitAll over GPUs 0 and 1", ncclGetLastError(NULL));
    int dev1 = -1, n = 0;
    ncclCommCuDevice(comms[1], &dev1);
    ncclCommCount(comms[1], &n);
    check(dev1 == 1 && n == 2, "ncclCommInitAll: rank 1 of 2 on GPU 1", "wrong device or count");
    float *buf[2] = {NULL, NULL}, host[2] = {0, 0};
    for (int i = 0; i < 2; i++) {
        cudaSetDevice(i);
        ncclMemAlloc((void **)&buf[i], sizeof(float));
        float one = (float)(i + 1);
        cudaMemcpy(buf[i], &one, sizeof one, cudaMemcpyHostToDevice);
    }
    ncclGroupStart();
    for (int i = 0; i < 2; i++)
        ncclAllReduce(buf[i], buf[i], 1, ncclFloat32, ncclSum, comms[i], NULL);
    check(ncclGroupEnd() == ncclSuccess, "a group of calls over two communicators of one process", ncclGetLastError(NULL));
    for (int i = 0; i < 2; i++) {
        cudaSetDevice(i);
        cudaStreamSynchronize(NULL);
        cudaMemcpy(&host[i], buf[i], sizeof(float), cudaMemcpyDeviceToHost);
    }
    check(host[0] == 3 && host[1] == 3, "the group's calls on each GPU's NULL stream complete together", "not 3");
    ncclWindow_t win = NULL;
    float *plain = NULL;
    cudaMalloc((void **)&plain, sizeof(float));
    check(ncclCommWindowRegister(comms[0], plain, sizeof(float), &win, NCCL_WIN_COLL_SYMMETRIC) == ncclInvalidArgument,
          "a window on cudaMalloc memory is refused", "accepted");
    check(ncclCommWindowRegister(comms[0], buf[0], sizeof(float), &win, NCCL_WIN_COLL_SYMMETRIC) == ncclSuccess &&
              ncclCommWindowDeregister(comms[0], win) == ncclSuccess,
          "a window on ncclMemAlloc memory", ncclGetLastError(comms[0]));
    cudaFree(plain);
    for (int i = 0; i < 2; i++) {
        ncclMemFree(buf[i]);
        ncclCommDestroy(comms[i]);
    }
    cudaSetDevice(rank % 2);
}

/* Stand-ins for the kernels' host stubs: only their addresses matter. */
static char fill_stub, check_stub, unknown_stub;

/* The validation kernels registered as nvcc's module constructor does,
 * then launched as its stubs do: a fill lands in stream order, a check
 * counts exactly; what a GPU refuses is refused. */
static void kernels(cudaStream_t s, int ndev)
{
    void **mod = __cudaRegisterFatBinary(NULL);
    __cudaRegisterFunction(mod, &fill_stub, NULL, FB_FILL_KERNEL, -1, NULL, NULL, NULL, NULL, NULL);
    __cudaRegisterFunction(mod, &check_stub, NULL, FB_CHECK_KERNEL, -1, NULL, NULL, NULL, NULL, NULL);
    __cudaRegisterFunction(mod, &unknown_stub, NULL, "some_other_kernel", -1, NULL, NULL, NULL, NULL, NULL);
    dim3 grid = {4, 1, 1}, block = {256, 1, 1}, g = {0, 0, 0}, b = {0, 0, 0};
    size_t shared = 1;
    cudaStream_t popped = NULL;
    check(__cudaPushCallConfiguration(grid, block, 0, s) == 0 &&
              __cudaPopCallConfiguration(&g, &b, &shared, &popped) == cudaSuccess && g.x == 4 && b.x == 256 &&
              shared == 0 && popped == s,
          "<<<grid, block, 0, stream>>> pushed is what the stub pops", "another configuration");
    check(__cudaPopCallConfiguration(&g, &b, &shared, &popped) == cudaErrorMissingConfiguration,
          "a pop without a push: cudaErrorMissingConfiguration", "popped");
    enum { N = 5000 };
    float *buf = NULL, host[N];
    struct fb_check_result *res = NULL, got = {0, 0};
    cudaMalloc((void **)&buf, N * sizeof(float));
    cudaMalloc((void **)&res, sizeof *res);
    struct fb_pattern p = {FB_ALL_GATHER, FB_FLOAT, FB_SUM, 1, 0, 0, N, N, N, 63};
    struct fb_fill_args fa = {p, buf, N, 0};
    void *fargs[] = {&fa};
    check(cudaLaunchKernel(&fill_stub, grid, block, fargs, 0, s) == cudaSuccess &&
              cudaMemcpyAsync(host, buf, sizeof host, cudaMemcpyDeviceToHost, s) == cudaSuccess &&
              cudaStreamSynchronize(s) == cudaSuccess && host[0] == fb_pat_move(0, 0) &&
              host[N - 1] == (float)fb_pat_move(0, N - 1),
          "the fill kernel's twin writes the pattern in stream order", "wrong values");
    host[77] = -1;
    cudaMemcpy(buf, host, sizeof host, cudaMemcpyHostToDevice);
    cudaMemset(res, 0, sizeof *res);
    cudaMemset(&res->first, 0xff, sizeof res->first);
    struct fb_check_args ca = {p, buf, N, {NULL, NULL, NULL}, res};
    void *cargs[] = {&ca};
    check(cudaLaunchKernel(&check_stub, grid, block, cargs, 0, NULL) == cudaSuccess &&
              cudaMemcpy(&got, res, sizeof got, cudaMemcpyDeviceToHost) == cudaSuccess && got.wrong == 1 &&
              got.first == 77,
          "the check kernel's twin counts the one wrong element, at 77", "another count");
    struct fb_fill_args onhost = {p, host, N, 0};
    void *hargs[] = {&onhost};
    check(cudaLaunchKernel(&fill_stub, grid, block, hargs, 0, s) == cudaErrorIllegalAddress,
          "a kernel given host memory: cudaErrorIllegalAddress", "ran");
    dim3 big = {2048, 1, 1};
    check(cudaLaunchKernel(&fill_stub, grid, big, fargs, 0, s) == cudaErrorInvalidConfiguration,
          "2048 threads per block: cudaErrorInvalidConfiguration", "launched");
    check(cudaLaunchKernel(&unknown_stub, grid, block, fargs, 0, s) == cudaErrorInvalidDeviceFunction,
          "a kernel with no host twin: cudaErrorInvalidDeviceFunction", "launched");
    if (ndev >= 2) {
        int here = 0;
        cudaGetDevice(&here);
        cudaSetDevice((here + 1) % ndev);
        check(cudaLaunchKernel(&fill_stub, grid, block, fargs, 0, s) == cudaErrorInvalidResourceHandle,
              "a launch on a stream of another device: cudaErrorInvalidResourceHandle", "launched");
        cudaSetDevice(here);
    }
    cudaGetLastError();
    cudaFree(buf);
    cudaFree(res);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    int ndev = 0;
    cudaGetDeviceCount(&ndev);
    cudaSetDevice(rank % (ndev > 0 ? ndev : 1));
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    events_and_queries(s);
    graphs(s);
    held_copies(s);
    if (ndev >= 2)
        devices(s, ndev);
    capture_rules();
    memory();
    kernels(s, ndev);
    ncclUniqueId id;
    ncclComm_t world = NULL;
    if (rank == 0)
        ncclGetUniqueId(&id);
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    check(ncclCommInitRank(&world, nranks, id, rank) == ncclSuccess, "ncclCommInitRank", ncclGetLastError(NULL));
    split(world);
    MPI_Barrier(MPI_COMM_WORLD);
    fused_group(world, s);
    nonblocking(s);
    MPI_Barrier(MPI_COMM_WORLD);
    mismatch(world, s);
    if (ndev >= 2)
        init_all();
    cudaStreamDestroy(s);
    MPI_Finalize();
    return failures != 0;
}
