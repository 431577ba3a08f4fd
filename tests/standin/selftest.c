/* The stand-in's own checks, for the calls fabric-bench makes little or no
 * use of: events, stream queries, graph capture rules, memory accounting,
 * the last error, ncclCommSplit, ranks that disagree about a call,
 * ncclCommInitAll and the rules of symmetric windows. An
 * MPI program (MPI carries the unique id), built and run by
 * tests/coll/test_gpu_standin.sh against the stand-in; prints "ok - " and
 * "not ok - " lines in the test protocol (rank 0 the first, any rank the
 * second). */
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

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
    const char *last = ncclGetLastError(world);
    check(async != ncclSuccess && (strstr(last, "different collectives or counts") || strstr(last, "closed")),
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
    memory();
    ncclUniqueId id;
    ncclComm_t world = NULL;
    if (rank == 0)
        ncclGetUniqueId(&id);
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    check(ncclCommInitRank(&world, nranks, id, rank) == ncclSuccess, "ncclCommInitRank", ncclGetLastError(NULL));
    split(world);
    MPI_Barrier(MPI_COMM_WORLD);
    mismatch(world, s);
    if (ndev >= 2)
        init_all();
    cudaStreamDestroy(s);
    MPI_Finalize();
    return failures != 0;
}
