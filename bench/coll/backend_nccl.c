/* GPU backend: one GPU per rank, NCCL collectives on a private stream,
 * communicators bootstrapped over MPI. A process holds -t x -g ranks (one
 * communicator, stream and pair of buffers per GPU), driven from one thread
 * with group calls. Compiled whenever CUDA and NCCL are present (also on
 * machines without a GPU, where available() says so). */
#include <cuda_runtime.h>
#include <nccl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coll/backend.h"
#include "core/coord.h"
#if HAVE_KERNELS
#include "coll/validate_kernels.h"
#endif
#include "core/clock.h"
#include "core/host.h"

/* Newer than the oldest NCCL this runs with: looked up at load time, NULL
 * where the library has not got them (the flags that need them are then
 * lowered by check_flags, as nccl-tests does). */
#pragma weak ncclMemAlloc
#pragma weak ncclMemFree
#pragma weak ncclCommRegister
#pragma weak ncclCommDeregister
#pragma weak ncclCommWindowRegister
#pragma weak ncclCommWindowDeregister
#pragma weak ncclAlltoAll
#pragma weak ncclGather
#pragma weak ncclScatter

/* A wait spins this long (short calls end within it), then sleeps a
 * little per round so that long ones leave the CPU to NCCL's threads. */
#define SPIN_S 0.01
#define NAP_NS 50000L

#define V2_19 NCCL_VERSION(2, 19, 0)
#define V2_27 NCCL_VERSION(2, 27, 0)
#define V2_28 NCCL_VERSION(2, 28, 0)

/* One rank of this process: its GPU, communicator, stream and buffers. */
struct nccl_state {
    int device;
    /* Taken by whoever ends it: fini, or cancel from the watchdog thread. */
    _Atomic(ncclComm_t) comm;
    cudaStream_t stream; /* NULL with -y 1 */
    struct fb_buffers buf;
    int rank, size;      /* global rank, ranks in all */
    char host[FB_HOST_MAX];
    uint64_t peak_bytes; /* most GPU memory in use seen (peak_memory) */
    int nccl_mem;        /* buffers from ncclMemAlloc */
    void *send_reg, *recv_reg; /* -R handles (ncclWindow_t with -R 2) */
    cudaEvent_t *marks;  /* -I 1: per-iteration events (nccl_marks) */
    long nmarks;
#if HAVE_KERNELS
    struct fb_devcheck *check; /* validation's tables and result, made on first use */
#endif
};

/* Every rank of this process, local rank i at rank[i]. */
struct nccl_ranks {
    int n;
    int version; /* ncclGetVersion: the library this process runs with */
    struct fb_backend_flags flags;
    ncclUniqueId id;
    /* Held while a communicator is read for ncclCommGetAsyncError and
     * while cancel takes it away to abort it: the watchdog's abort never
     * frees a communicator that a wait is asking. Never held across a call
     * that may block. */
    pthread_mutex_t comm_lock;
    int batch_open; /* batch_begin opened a group */
    /* -G: one graph per stream, between graph_begin and graph_free. */
    int capturing;  /* streams whose capture began */
    cudaGraph_t graphs[FB_LOCAL_RANKS_MAX];
    cudaGraphExec_t execs[FB_LOCAL_RANKS_MAX];
    struct nccl_state rank[FB_LOCAL_RANKS_MAX];
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

/* The first error of a group's calls, else ncclGroupEnd's. */
static ncclResult_t group_end(ncclResult_t rc)
{
    ncclResult_t end = ncclGroupEnd();
    return rc != ncclSuccess ? rc : end;
}

/* nccl-tests allocates with ncclMemAlloc whenever NCCL has it (2.19),
 * registration or not: NCCL's own paths (NVLS, graph registration) then
 * see the same memory, so the figures are the same. */
static int use_nccl_mem(const struct nccl_ranks *s)
{
    return s->version >= V2_19 && ncclMemAlloc != NULL && ncclMemFree != NULL;
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

static int runtime_version(void)
{
    int v = 0;
    return ncclGetVersion(&v) == ncclSuccess ? v : 0;
}

/* Since 2.9 the code is major*10000 + minor*100 + patch. */
static void version_text(int v, char *buf, size_t len)
{
    snprintf(buf, len, "%d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
}

static void add_note(char *notes, size_t len, const char *text)
{
    size_t used = strlen(notes);
    if (used < len)
        snprintf(notes + used, len - used, "%s\n", text);
}

/* -R and -x as far as this NCCL has them, with nccl-tests' words
 * (src/common.cu, main) for what is lowered. */
static void lower_to_version(struct fb_backend_flags *f, int v, char *notes, size_t len)
{
    char text[160];
    if (f->register_mode == 2 && v < V2_27) {
        add_note(notes, len, "Option -R 2 (symmetric) is not supported before NCCL 2.27. Defaulting to local registration");
        f->register_mode = 1;
    }
    if (f->register_mode > 0 && v < V2_19) {
        add_note(notes, len, "Option -R (register) is not supported before NCCL 2.19. Ignoring");
        f->register_mode = 0;
    }
    if (f->cta_policy >= 0 && v < V2_27) {
        add_note(notes, len, "Option -x (cta_policy) is not supported before NCCL 2.27. Ignoring");
        f->cta_policy = -1;
    } else if (f->cta_policy > 1 && v < V2_28) {
        snprintf(text, sizeof text, "Option -x (cta_policy) %d is not supported before NCCL 2.28. Ignoring",
                 f->cta_policy);
        add_note(notes, len, text);
        f->cta_policy = -1;
    }
}

/* nccl-tests' checks of -D and -V (src/common.cu, main). A device
 * implementation is CUDA kernels over NCCL's device API, compiled per
 * collective; fabric-coll is C and builds none, so -D > 0 is unavailable
 * here rather than silently NCCL's own implementation. */
static enum fb_status nccl_check_flags(struct fb_backend *be, char *notes, size_t len, struct fb_err *err)
{
    struct fb_backend_flags *f = &be->flags;
    int v = runtime_version();
    char have[32], text[160];
    version_text(v, have, sizeof have);
    if (f->device_impl_given && v < V2_28)
        return fb_fail(err, FB_ERR_USAGE,
                       "Option -D (device implementation) requires NCCL >= 2.28.0 (this process runs NCCL %s); drop -D",
                       have);
    if (f->device_ctas_given && v < V2_28)
        return fb_fail(err, FB_ERR_USAGE,
                       "Option -V (device CTA count) requires NCCL >= 2.28.0 (this process runs NCCL %s); drop -V",
                       have);
    if (f->device_ctas_given && (f->device_ctas <= 0 || f->device_ctas > 128)) {
        snprintf(text, sizeof text,
                 "device_cta_count (-V) must be positive and less than 128, got %d. Using default value 16.",
                 f->device_ctas);
        add_note(notes, len, text);
        f->device_ctas = 16;
    }
    lower_to_version(f, v, notes, len);
    if (f->device_impl > 0 && f->register_mode != 2)
        return fb_fail(err, FB_ERR_USAGE,
                       "device implementation (-D > 0) requires enabling symmetric memory registration (-R 2); "
                       "add -R 2 or drop -D");
    if (f->device_impl > 0)
        return fb_fail(err, FB_ERR_UNAVAIL,
                       "-D %d: a device implementation is CUDA kernels over NCCL %s's device API, which fabric-coll "
                       "does not build; drop -D to measure NCCL's own implementation",
                       f->device_impl, have);
    return FB_OK;
}

/* NCCL_TESTS_DEVICE, as nccl-tests reads it: the first GPU of every
 * process; -1 when unset. */
static enum fb_status first_device_from_env(int *first, struct fb_err *err)
{
    const char *env = getenv("NCCL_TESTS_DEVICE");
    *first = -1;
    if (env == NULL || *env == '\0')
        return FB_OK;
    char *end = NULL;
    long v = strtol(env, &end, 10);
    if (*end != '\0' || v < 0 || v > 4096)
        return fb_fail(err, FB_ERR_USAGE, "NCCL_TESTS_DEVICE='%s' is not a device number; set 0, 1, ... or unset it",
                       env);
    *first = (int)v;
    return FB_OK;
}

/* The process's GPUs: local rank i drives GPU first + i, first being
 * NCCL_TESTS_DEVICE or the launcher's local rank x ranks per process. */
static enum fb_status pick_devices(struct nccl_ranks *s, const struct fb_world *w, struct fb_err *err)
{
    int ndev = 0;
    enum fb_status st = cuda_check(cudaGetDeviceCount(&ndev), "cudaGetDeviceCount", err);
    if (st != FB_OK)
        return fb_fail(err, FB_ERR_UNAVAIL, "no usable CUDA device on %s", w->host);
    const char *source = NULL;
    int local = fb_launcher_local_rank(&source), first = -1;
    if (local < 0)
        local = w->local_rank; /* from the host-name census */
    if ((st = first_device_from_env(&first, err)) != FB_OK)
        return st;
    int from_env = first >= 0;
    if (!from_env)
        first = local * s->n;
    if (from_env && first + s->n > ndev)
        return fb_fail(err, FB_ERR_USAGE,
                       "NCCL_TESTS_DEVICE=%d with %d GPU%s per process needs GPUs %d to %d but %s has %d (0 to %d); "
                       "lower NCCL_TESTS_DEVICE",
                       first, s->n, s->n == 1 ? "" : "s", first, first + s->n - 1, w->host, ndev, ndev - 1);
    if (s->n == 1 && first >= ndev)
        return fb_fail(err, FB_ERR_USAGE,
                       "rank %d is local rank %d on %s but only %d GPU%s visible; start at most %d ranks per node",
                       w->rank, local, w->host, ndev, ndev == 1 ? " is" : "s are", ndev);
    if (first + s->n > ndev)
        return fb_fail(err, FB_ERR_USAGE,
                       "process %d is local process %d on %s with -t %d -g %d: GPUs %d to %d, but only %d %s visible; "
                       "start at most %d processes per node or lower -g",
                       w->rank, local, w->host, s->flags.threads, s->flags.gpus, first, first + s->n - 1, ndev,
                       ndev == 1 ? "is" : "are", ndev / s->n);
    for (int i = 0; i < s->n; i++)
        s->rank[i].device = first + i;
    return cuda_check(cudaSetDevice(first), "cudaSetDevice", err);
}

static enum fb_status make_streams(struct nccl_ranks *s, struct fb_err *err)
{
    enum fb_status st = FB_OK;
    for (int i = 0; i < s->n && st == FB_OK; i++) {
        st = cuda_check(cudaSetDevice(s->rank[i].device), "cudaSetDevice", err);
        if (st == FB_OK && !s->flags.null_stream)
            st = cuda_check(cudaStreamCreateWithFlags(&s->rank[i].stream, cudaStreamNonBlocking),
                            "cudaStreamCreate", err);
    }
    return st;
}

/* Local ranks [first, first + count) join their communicators in one
 * group, each on its GPU, with the config nccl-tests gives (initComms). */
static ncclResult_t init_comms(struct nccl_ranks *s, int first, int count)
{
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
    if (s->flags.cta_policy >= 0)
        config.CTAPolicy = s->flags.cta_policy;
#endif
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
    if (s->version >= V2_28)
        config.nvlinkCentricSched = 1;
#endif
    ncclComm_t comms[FB_LOCAL_RANKS_MAX] = {0};
    ncclResult_t rc = ncclGroupStart();
    for (int i = first; i < first + count && rc == ncclSuccess; i++) {
        struct nccl_state *d = &s->rank[i];
        rc = cudaSetDevice(d->device) == cudaSuccess ? ncclSuccess : ncclUnhandledCudaError;
        if (rc == ncclSuccess)
            rc = ncclCommInitRankConfig(&comms[i], d->size, s->id, d->rank, &config);
    }
    rc = group_end(rc);
    for (int i = first; i < first + count; i++)
        atomic_store(&s->rank[i].comm, comms[i]);
    return rc;
}

struct init_thread {
    pthread_t tid;
    struct nccl_ranks *s;
    int first, count;
    ncclResult_t rc;
};

static void *init_thread_main(void *arg)
{
    struct init_thread *t = arg;
    t->rc = init_comms(t->s, t->first, t->count);
    return NULL;
}

/* -p 1: each of the -t threads sets up its -g communicators itself, in
 * parallel, as nccl-tests' threads do; else one group for all. */
static ncclResult_t init_all_comms(struct nccl_ranks *s)
{
    int threads = s->flags.threads, per = s->flags.gpus;
    if (!s->flags.parallel_init || threads == 1)
        return init_comms(s, 0, s->n);
    struct init_thread t[FB_LOCAL_RANKS_MAX];
    for (int i = 1; i < threads; i++) {
        t[i] = (struct init_thread){.s = s, .first = i * per, .count = per, .rc = ncclSuccess};
        if (pthread_create(&t[i].tid, NULL, init_thread_main, &t[i]) != 0)
            t[i].rc = init_comms(s, i * per, per); /* no thread: in turn; the set-up bound ends a wait that cannot */
    }
    ncclResult_t rc = init_comms(s, 0, per);
    for (int i = 1; i < threads; i++) {
        if (t[i].tid)
            pthread_join(t[i].tid, NULL);
        if (rc == ncclSuccess)
            rc = t[i].rc;
    }
    return rc;
}

static enum fb_status nccl_init(struct fb_backend *be, const struct fb_world *w, struct fb_err *err)
{
    struct nccl_ranks *s = calloc(1, sizeof *s);
    if (s == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    be->state = s;
    s->flags = be->flags;
    pthread_mutex_init(&s->comm_lock, NULL);
    s->n = be->local_ranks > 0 ? be->local_ranks : 1;
    s->version = runtime_version();
    for (int i = 0; i < s->n; i++) {
        s->rank[i].nccl_mem = use_nccl_mem(s);
        s->rank[i].rank = w->rank * s->n + i;
        s->rank[i].size = w->size * s->n;
        snprintf(s->rank[i].host, sizeof s->rank[i].host, "%s", w->host);
    }
    pick_devices(s, w, err);
    /* ncclCommInitRank blocks until every rank joins: a rank that could not
     * pick its GPU must stop the others here, not leave them waiting. */
    enum fb_status st = fb_world_agree(w, err);
    if (st != FB_OK)
        return st;
    /* Rank 0 alone makes the id; a failure there must reach the others
     * before they wait for the id in a collective rank 0 never enters. */
    if (w->rank == 0)
        nccl_check(ncclGetUniqueId(&s->id), NULL, "ncclGetUniqueId", err);
    if ((st = fb_world_agree(w, err)) != FB_OK)
        return st;
    fb_coord_bcast(w, &s->id, sizeof s->id, 0);
    if ((st = make_streams(s, err)) != FB_OK)
        return st;
    return nccl_check(init_all_comms(s), NULL, "ncclCommInitRank", err);
}

static enum fb_status stream_wait(struct nccl_ranks *all, struct nccl_state *s, struct fb_err *err);
static enum fb_status alloc_buffer(struct nccl_state *d, char **p, size_t bytes, const char *what,
                                   struct fb_err *err);
static void free_buffer(struct nccl_state *d, char *p);

/* One small all_reduce on every communicator of this process, waited for. */
static enum fb_status warm_up_calls(struct nccl_ranks *s, char **tmp, size_t count, struct fb_err *err)
{
    ncclResult_t rc = ncclGroupStart();
    for (int i = 0; i < s->n && rc == ncclSuccess; i++)
        rc = ncclAllReduce(tmp[i], tmp[i], count, ncclFloat32, ncclSum, atomic_load(&s->rank[i].comm),
                           s->rank[i].stream);
    enum fb_status st = nccl_check(group_end(rc), atomic_load(&s->rank[0].comm), "warm-up ncclAllReduce", err);
    for (int i = 0; i < s->n && st == FB_OK; i++)
        st = stream_wait(s, &s->rank[i], err);
    return st;
}

/* NCCL connects its peers, and allocates the connections' buffers on the
 * GPU, at a communicator's first collective, not at init (runtime connect,
 * the default since 2.22): one small all_reduce first, so that the free
 * memory the sweep is sized against has them taken out. Connections of
 * other algorithms that larger sizes open later come out of the reserve
 * (GPU_RESERVE_BYTES). Collective over the communicators. */
static enum fb_status warm_up_comms(struct nccl_ranks *s, struct fb_err *err)
{
    enum { WARM_COUNT = 1024 };
    char *tmp[FB_LOCAL_RANKS_MAX] = {0};
    enum fb_status st = FB_OK;
    for (int i = 0; i < s->n && st == FB_OK; i++) {
        st = cuda_check(cudaSetDevice(s->rank[i].device), "cudaSetDevice", err);
        if (st == FB_OK)
            st = alloc_buffer(&s->rank[i], &tmp[i], WARM_COUNT * sizeof(float), "warm-up buffer", err);
        if (st == FB_OK)
            st = cuda_check(cudaMemsetAsync(tmp[i], 0, WARM_COUNT * sizeof(float), s->rank[i].stream),
                            "cudaMemsetAsync", err);
    }
    if (st == FB_OK)
        st = warm_up_calls(s, tmp, WARM_COUNT, err);
    for (int i = 0; i < s->n; i++)
        if (tmp[i] != NULL && cudaSetDevice(s->rank[i].device) == cudaSuccess)
            free_buffer(&s->rank[i], tmp[i]);
    return st;
}

static enum fb_status nccl_free_memory(struct fb_backend *be, uint64_t *bytes, struct fb_err *err)
{
    struct nccl_ranks *s = be->state;
    enum fb_status st = warm_up_comms(s, err);
    *bytes = UINT64_MAX;
    if (st != FB_OK)
        return st;
    for (int i = 0; i < s->n && st == FB_OK; i++) {
        size_t free_b = 0, total = 0;
        st = cuda_check(cudaSetDevice(s->rank[i].device), "cudaSetDevice", err);
        if (st == FB_OK)
            st = cuda_check(cudaMemGetInfo(&free_b, &total), "cudaMemGetInfo", err);
        if (st == FB_OK && free_b < *bytes)
            *bytes = free_b;
    }
    return st;
}

/* From ncclMemAlloc (cuMem memory NCCL can map and register) where NCCL
 * has it, as in nccl-tests; else from cudaMalloc. */
static enum fb_status alloc_buffer(struct nccl_state *d, char **p, size_t bytes, const char *what,
                                   struct fb_err *err)
{
    size_t n = bytes ? bytes : 1;
    if (d->nccl_mem)
        return nccl_check(ncclMemAlloc((void **)p, n), NULL, what, err);
    return cuda_check(cudaMalloc((void **)p, n), what, err);
}

static void free_buffer(struct nccl_state *d, char *p)
{
    if (p == NULL)
        return;
    if (d->nccl_mem)
        ncclMemFree(p);
    else
        cudaFree(p);
}

static enum fb_status alloc_rank(struct nccl_state *d, size_t send_bytes, size_t recv_bytes,
                                 struct fb_err *err)
{
    int nccl_mem = d->nccl_mem;
    enum fb_status st = cuda_check(cudaSetDevice(d->device), "cudaSetDevice", err);
    if (st == FB_OK)
        st = alloc_buffer(d, &d->buf.send, send_bytes, nccl_mem ? "ncclMemAlloc (send)" : "cudaMalloc (send)", err);
    if (st == FB_OK)
        st = alloc_buffer(d, &d->buf.recv, recv_bytes, nccl_mem ? "ncclMemAlloc (recv)" : "cudaMalloc (recv)", err);
    if (st != FB_OK)
        return fb_fail(err, FB_ERR_MEMORY, "cannot allocate %zu + %zu bytes on GPU %d", send_bytes,
                       recv_bytes, d->device);
    d->buf.send_bytes = send_bytes;
    d->buf.recv_bytes = recv_bytes;
    st = cuda_check(cudaMemset(d->buf.send, 0, send_bytes), "cudaMemset", err);
    if (st == FB_OK)
        st = cuda_check(cudaMemset(d->buf.recv, 0, recv_bytes), "cudaMemset", err);
    if (st == FB_OK)
        st = cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize", err);
    return st;
}

/* -R 1: ncclCommRegister; -R 2: symmetric windows (collective over each
 * communicator, hence one group for the process's ranks). */
static ncclResult_t register_one(struct nccl_state *d, int mode)
{
    ncclComm_t comm = atomic_load(&d->comm);
    ncclResult_t rc;
    if (mode == 2) {
        rc = ncclCommWindowRegister(comm, d->buf.send, d->buf.send_bytes ? d->buf.send_bytes : 1,
                                    (ncclWindow_t *)&d->send_reg, NCCL_WIN_COLL_SYMMETRIC);
        if (rc == ncclSuccess)
            rc = ncclCommWindowRegister(comm, d->buf.recv, d->buf.recv_bytes ? d->buf.recv_bytes : 1,
                                        (ncclWindow_t *)&d->recv_reg, NCCL_WIN_COLL_SYMMETRIC);
        return rc;
    }
    rc = ncclCommRegister(comm, d->buf.send, d->buf.send_bytes ? d->buf.send_bytes : 1, &d->send_reg);
    if (rc == ncclSuccess)
        rc = ncclCommRegister(comm, d->buf.recv, d->buf.recv_bytes ? d->buf.recv_bytes : 1, &d->recv_reg);
    return rc;
}

static enum fb_status register_buffers(struct nccl_ranks *s, struct fb_err *err)
{
    int mode = s->flags.register_mode;
    if (mode == 0)
        return FB_OK;
    if ((mode == 2 && ncclCommWindowRegister == NULL) || (mode == 1 && ncclCommRegister == NULL))
        return fb_fail(err, FB_ERR_UNAVAIL, "-R %d: this NCCL library has no %s; drop -R", mode,
                       mode == 2 ? "ncclCommWindowRegister" : "ncclCommRegister");
    ncclResult_t rc = ncclGroupStart();
    for (int i = 0; i < s->n && rc == ncclSuccess; i++)
        rc = register_one(&s->rank[i], mode);
    return nccl_check(group_end(rc), atomic_load(&s->rank[0].comm),
                      mode == 2 ? "ncclCommWindowRegister" : "ncclCommRegister", err);
}

static enum fb_status nccl_alloc(struct fb_backend *be, size_t send_bytes, size_t recv_bytes,
                                 struct fb_err *err)
{
    struct nccl_ranks *s = be->state;
    enum fb_status st = FB_OK;
    for (int i = 0; i < s->n && st == FB_OK; i++)
        st = alloc_rank(&s->rank[i], send_bytes, recv_bytes, err);
    if (st == FB_OK)
        st = register_buffers(s, err);
    return st;
}

/* As nccl-tests: one group, each peer's uneven share (fb_alltoallv_count)
 * sent and received in rank order, empty shares left out. */
static ncclResult_t issue_alltoallv(struct nccl_state *s, ncclComm_t comm, const struct fb_call *c,
                                    const char *send, char *recv, ncclDataType_t dt)
{
    size_t esz = fb_dtype_info(c->dtype)->size, p = c->counts.param;
    ncclResult_t rc = ncclGroupStart();
    for (int r = 0; r < s->size && rc == ncclSuccess; r++) {
        size_t out = fb_alltoallv_count(p, esz, s->size, s->rank, r);
        size_t in = fb_alltoallv_count(p, esz, s->size, r, s->rank);
        if (out > 0)
            rc = ncclSend(send, out, dt, r, comm, s->stream);
        if (in > 0 && rc == ncclSuccess)
            rc = ncclRecv(recv, in, dt, r, comm, s->stream);
        send += out * esz;
        recv += in * esz;
    }
    return group_end(rc);
}

/* NCCL 2.28 has alltoall, gather and scatter as calls of their own, and
 * nccl-tests uses them there: so do we, where the library this process
 * runs with has them; before, the send/recv groups nccl-tests issued. */
static int has_v2_28_calls(int version)
{
    return version >= V2_28 && ncclAlltoAll != NULL && ncclGather != NULL && ncclScatter != NULL;
}

/* alltoall before 2.28: every block to its rank in one group. */
static ncclResult_t issue_alltoall_p2p(struct nccl_state *s, ncclComm_t comm, size_t n, size_t esz,
                                       const char *send, char *recv, ncclDataType_t dt)
{
    ncclResult_t rc = ncclGroupStart();
    for (int r = 0; r < s->size && rc == ncclSuccess; r++) {
        rc = ncclSend(send + (size_t)r * n * esz, n, dt, r, comm, s->stream);
        if (rc == ncclSuccess)
            rc = ncclRecv(recv + (size_t)r * n * esz, n, dt, r, comm, s->stream);
    }
    return group_end(rc);
}

/* gather and scatter before 2.28, as nccl-tests issued them: one group in
 * which every rank sends its block to the root and the root receives the
 * n blocks in rank order (gather), or the root sends block r to rank r and
 * every rank receives its own (scatter). */
static ncclResult_t issue_rooted(struct nccl_state *s, ncclComm_t comm, const struct fb_call *c,
                                 const char *send, char *recv, ncclDataType_t dt, int to_root, int version)
{
    size_t n = c->counts.param, block = n * fb_dtype_info(c->dtype)->size;
    if (n == 0)
        return ncclSuccess;
    if (has_v2_28_calls(version))
        return to_root ? ncclGather(send, recv, n, dt, c->root, comm, s->stream)
                       : ncclScatter(send, recv, n, dt, c->root, comm, s->stream);
    ncclResult_t rc = ncclGroupStart();
    if (to_root && rc == ncclSuccess)
        rc = ncclSend(send, n, dt, c->root, comm, s->stream);
    for (int r = 0; s->rank == c->root && r < s->size && rc == ncclSuccess; r++)
        rc = to_root ? ncclRecv(recv + (size_t)r * block, n, dt, r, comm, s->stream)
                     : ncclSend(send + (size_t)r * block, n, dt, r, comm, s->stream);
    if (!to_root && rc == ncclSuccess)
        rc = ncclRecv(recv, n, dt, c->root, comm, s->stream);
    return group_end(rc);
}

/* The send and receive addresses of a rank's call. */
static void call_buffers(const struct nccl_state *s, const struct fb_call *c, const char **send, char **recv)
{
    size_t esz = fb_dtype_info(c->dtype)->size;
    *send = (c->in_place ? s->buf.recv : s->buf.send) + c->send_off * esz;
    *recv = s->buf.recv + c->recv_off * esz;
}

/* nccl-tests' hypercube all-gather: this rank's block copied into place,
 * then one group per step k, exchanging with rank ^ 2^k the 2^k blocks
 * each side holds so far. The copy is ordered before the steps on the
 * rank's stream. */
static ncclResult_t hypercube_own_block(struct nccl_state *s, const struct fb_call *c)
{
    const char *send;
    char *recv;
    call_buffers(s, c, &send, &recv);
    size_t block = c->counts.param * fb_dtype_info(c->dtype)->size;
    char *mine = recv + (size_t)s->rank * block;
    if (mine != send && cudaMemcpyAsync(mine, send, block, cudaMemcpyDeviceToDevice, s->stream) != cudaSuccess)
        return ncclUnhandledCudaError;
    return ncclSuccess;
}

/* Step `mask` of one rank, to be issued inside a group. */
static ncclResult_t hypercube_step(struct nccl_state *s, const struct fb_call *c, ncclDataType_t dt, int mask)
{
    ncclComm_t comm = atomic_load(&s->comm);
    if (comm == NULL)
        return ncclInvalidUsage; /* aborted by the watchdog: the job is ending */
    const char *send;
    char *recv;
    call_buffers(s, c, &send, &recv);
    size_t n = c->counts.param, block = n * fb_dtype_info(c->dtype)->size;
    int held = s->rank & ~(mask - 1), peer = s->rank ^ mask;
    ncclResult_t rc = ncclSend(recv + (size_t)held * block, n * (size_t)mask, dt, peer, comm, s->stream);
    if (rc == ncclSuccess)
        rc = ncclRecv(recv + (size_t)(held ^ mask) * block, n * (size_t)mask, dt, peer, comm, s->stream);
    return rc;
}

/* Every local rank's hypercube, step by step: each step is one group over
 * the ranks of this process. Nested in one group over the ranks instead,
 * all the steps would be one fused launch, in which step k+1 sends blocks
 * that step k has not received yet (with one rank a process, the group
 * per step is that rank's alone). */
static ncclResult_t issue_hypercube(struct nccl_ranks *s, const struct fb_call *calls, ncclDataType_t dt)
{
    ncclResult_t rc = ncclSuccess;
    for (int i = 0; i < s->n && rc == ncclSuccess; i++) {
        rc = cudaSetDevice(s->rank[i].device) == cudaSuccess ? ncclSuccess : ncclUnhandledCudaError;
        if (rc == ncclSuccess)
            rc = hypercube_own_block(&s->rank[i], &calls[i]);
    }
    int size = s->rank[0].size;
    for (int mask = 1; mask < size && rc == ncclSuccess; mask <<= 1) {
        rc = ncclGroupStart();
        for (int i = 0; i < s->n && rc == ncclSuccess; i++)
            rc = hypercube_step(&s->rank[i], &calls[i], dt, mask);
        rc = group_end(rc);
    }
    return rc;
}

static ncclResult_t issue(struct nccl_state *s, const struct fb_call *c, ncclDataType_t dt,
                          ncclRedOp_t op, int version)
{
    ncclComm_t comm = atomic_load(&s->comm);
    if (comm == NULL)
        return ncclInvalidUsage; /* aborted by the watchdog: the job is ending */
    size_t esz = fb_dtype_info(c->dtype)->size;
    const char *send;
    char *recv;
    call_buffers(s, c, &send, &recv);
    size_t n = c->counts.param;
    switch (c->coll->id) {
    case FB_ALL_REDUCE: return ncclAllReduce(send, recv, n, dt, op, comm, s->stream);
    case FB_ALL_GATHER: return ncclAllGather(send, recv, n, dt, comm, s->stream);
    case FB_REDUCE_SCATTER: return ncclReduceScatter(send, recv, n, dt, op, comm, s->stream);
    case FB_BROADCAST: return ncclBroadcast(send, recv, n, dt, c->root, comm, s->stream);
    case FB_REDUCE: return ncclReduce(send, recv, n, dt, op, c->root, comm, s->stream);
    case FB_ALLTOALL:
        if (has_v2_28_calls(version))
            return ncclAlltoAll(send, recv, n, dt, comm, s->stream);
        return issue_alltoall_p2p(s, comm, n, esz, send, recv, dt);
    case FB_SENDRECV: {
        int next = (s->rank + 1) % s->size, prev = (s->rank - 1 + s->size) % s->size;
        ncclResult_t rc = ncclGroupStart();
        if (rc == ncclSuccess)
            rc = ncclSend(send, n, dt, next, comm, s->stream);
        if (rc == ncclSuccess)
            rc = ncclRecv(recv, n, dt, prev, comm, s->stream);
        return group_end(rc);
    }
    case FB_ALLTOALLV: return issue_alltoallv(s, comm, c, send, recv, dt);
    case FB_GATHER: return issue_rooted(s, comm, c, send, recv, dt, 1, version);
    case FB_SCATTER: return issue_rooted(s, comm, c, send, recv, dt, 0, version);
    case FB_HYPERCUBE: /* issued step by step over the ranks: nccl_run */
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

/* One rank's call. mulsum: a PreMulSum operator with the rank's scalar
 * (fb_mulsum_scalar, in the call's type) for this one call, as nccl-tests
 * creates one per call and destroys it once the call is enqueued (inside
 * the group too). */
static ncclResult_t issue_with_op(struct nccl_state *s, const struct fb_call *c, ncclDataType_t dt,
                                  ncclRedOp_t op, int version)
{
    if (!(c->coll->reduces && c->op == FB_MULSUM))
        return issue(s, c, dt, op, version);
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 11, 0)
    ncclComm_t comm = atomic_load(&s->comm);
    uint64_t scalar = 0; /* room for the widest type */
    fb_store(c->dtype, &scalar, 0, fb_mulsum_scalar(s->rank));
    ncclRedOp_t pre;
    ncclResult_t rc = ncclRedOpCreatePreMulSum(&pre, &scalar, dt, ncclScalarHostImmediate, comm);
    if (rc != ncclSuccess)
        return rc;
    rc = issue(s, c, dt, pre, version);
    ncclRedOpDestroy(pre, comm);
    return rc;
#else
    return ncclInvalidArgument; /* nccl_supports refused it before the sweep */
#endif
}

/* Every local rank's call, in one group when there are several (each on
 * its GPU), so that NCCL runs them together as nccl-tests' group does. */
static enum fb_status nccl_run(struct fb_backend *be, const struct fb_call *calls, struct fb_err *err)
{
    struct nccl_ranks *s = be->state;
    const struct fb_call *c = &calls[0];
    ncclDataType_t dt = ncclFloat32;
    ncclRedOp_t op = ncclSum;
    /* The mapping is the check: its message comes only on the rare path
     * (the run's type and operator were checked before the sweep). */
    if (!ncclt(c->dtype, &dt) || (c->coll->reduces && !ncclo(c->op, &op)))
        return nccl_supports(c->coll, c->dtype, c->op, err);
    if (c->coll->id == FB_HYPERCUBE)
        return nccl_check(issue_hypercube(s, calls, dt), atomic_load(&s->rank[0].comm), c->coll->name, err);
    if (s->n == 1)
        return nccl_check(issue_with_op(&s->rank[0], c, dt, op, s->version), atomic_load(&s->rank[0].comm),
                          c->coll->name, err);
    ncclResult_t rc = ncclGroupStart();
    int at = 0;
    for (; at < s->n && rc == ncclSuccess; at++) {
        rc = cudaSetDevice(s->rank[at].device) == cudaSuccess ? ncclSuccess : ncclUnhandledCudaError;
        if (rc == ncclSuccess)
            rc = issue_with_op(&s->rank[at], &calls[at], dt, op, s->version);
    }
    return nccl_check(group_end(rc), atomic_load(&s->rank[at > 0 ? at - 1 : 0].comm), c->coll->name, err);
}

/* NCCL's asynchronous error on any communicator of this process, as
 * nccl-tests polls every local one: a peer lost on one GPU's ring leaves
 * the other GPUs' streams waiting too. The lock keeps cancel from aborting
 * (freeing) a communicator while it is asked. */
static enum fb_status async_errors(struct nccl_ranks *all, struct fb_err *err)
{
    enum fb_status st = FB_OK;
    pthread_mutex_lock(&all->comm_lock);
    for (int i = 0; i < all->n && st == FB_OK; i++) {
        ncclComm_t comm = atomic_load(&all->rank[i].comm);
        ncclResult_t async = ncclSuccess;
        if (comm == NULL || ncclCommGetAsyncError(comm, &async) != ncclSuccess || async == ncclSuccess ||
            async == ncclInProgress)
            continue;
        const char *last = ncclGetLastError(comm);
        st = fb_fail(err, FB_ERR_RUNTIME, "NCCL failed during the call on rank %d (ncclCommGetAsyncError: %s)%s%s",
                     all->rank[i].rank, ncclGetErrorString(async), last && *last ? ": " : "", last ? last : "");
    }
    pthread_mutex_unlock(&all->comm_lock);
    return st;
}

/* The stream's work done, or NCCL's asynchronous error: a lost peer or a
 * broken network leaves the stream busy for ever (its kernels wait for data
 * that never comes), so the wait asks NCCL as it goes, as nccl-tests does. */
static enum fb_status stream_wait(struct nccl_ranks *all, struct nccl_state *s, struct fb_err *err)
{
    const struct timespec nap = {0, NAP_NS};
    double start = fb_now();
    /* The NULL stream is the current GPU's. */
    if (s->stream == NULL && cudaSetDevice(s->device) != cudaSuccess)
        return cuda_check(cudaGetLastError(), "cudaSetDevice", err);
    for (;;) {
        cudaError_t rc = cudaStreamQuery(s->stream);
        if (rc == cudaSuccess)
            return FB_OK;
        if (rc != cudaErrorNotReady)
            return cuda_check(rc, "cudaStreamQuery", err);
        enum fb_status st = async_errors(all, err);
        if (st != FB_OK)
            return st;
        if (fb_now() - start < SPIN_S)
            sched_yield();
        else
            nanosleep(&nap, NULL);
    }
}

/* -G: every stream's capture begun, in thread-local mode as nccl-tests
 * does (other threads, NCCL's own among them, may still allocate). */
static enum fb_status nccl_graph_begin(struct fb_backend *be, struct fb_err *err)
{
    struct nccl_ranks *s = be->state;
    enum fb_status st = FB_OK;
    s->capturing = 0;
    while (s->capturing < s->n && st == FB_OK) {
        st = cuda_check(cudaStreamBeginCapture(s->rank[s->capturing].stream, cudaStreamCaptureModeThreadLocal),
                        "cudaStreamBeginCapture", err);
        if (st == FB_OK)
            s->capturing++;
    }
    return st;
}

/* Every capture that began is ended, whatever happened before, so that no
 * stream stays capturing; then one executable graph per stream. */
static enum fb_status nccl_graph_end(struct fb_backend *be, struct fb_err *err)
{
    struct nccl_ranks *s = be->state;
    enum fb_status st = FB_OK;
    if (s->capturing < s->n)
        st = fb_fail(err, FB_ERR_RUNTIME, "graph capture began on %d of %d GPUs", s->capturing, s->n);
    for (int i = 0; i < s->capturing; i++) {
        cudaError_t end = cudaStreamEndCapture(s->rank[i].stream, &s->graphs[i]);
        if (st == FB_OK)
            st = cuda_check(end, "cudaStreamEndCapture", err);
    }
    s->capturing = 0;
    for (int i = 0; st == FB_OK && i < s->n; i++)
        st = cuda_check(cudaGraphInstantiate(&s->execs[i], s->graphs[i], 0), "cudaGraphInstantiate", err);
    return st;
}

static enum fb_status nccl_graph_launch(struct fb_backend *be, int launches, struct fb_err *err)
{
    struct nccl_ranks *s = be->state;
    enum fb_status st = FB_OK;
    for (int l = 0; st == FB_OK && l < launches; l++)
        for (int i = 0; st == FB_OK && i < s->n; i++)
            st = cuda_check(cudaGraphLaunch(s->execs[i], s->rank[i].stream), "cudaGraphLaunch", err);
    return st;
}

static void nccl_graph_free(struct fb_backend *be)
{
    struct nccl_ranks *s = be->state;
    for (int i = 0; i < s->n; i++) {
        if (s->execs[i])
            cudaGraphExecDestroy(s->execs[i]);
        if (s->graphs[i])
            cudaGraphDestroy(s->graphs[i]);
        s->execs[i] = NULL;
        s->graphs[i] = NULL;
    }
}

/* -m: an iteration's calls in one group, as nccl-tests aggregates them,
 * except the hypercube's: its steps depend on each other and must stay
 * launches of their own. */
static enum fb_status nccl_batch_begin(struct fb_backend *be, const struct fb_call *calls, struct fb_err *err)
{
    struct nccl_ranks *s = be->state;
    s->batch_open = calls[0].coll->id != FB_HYPERCUBE;
    return s->batch_open ? nccl_check(ncclGroupStart(), NULL, "ncclGroupStart", err) : FB_OK;
}

static enum fb_status nccl_batch_end(struct fb_backend *be, struct fb_err *err)
{
    struct nccl_ranks *s = be->state;
    if (!s->batch_open)
        return FB_OK;
    s->batch_open = 0;
    return nccl_check(ncclGroupEnd(), atomic_load(&s->rank[0].comm), "ncclGroupEnd", err);
}

static enum fb_status nccl_wait(struct fb_backend *be, struct fb_err *err)
{
    struct nccl_ranks *s = be->state;
    enum fb_status st = FB_OK;
    for (int i = 0; i < s->n && st == FB_OK; i++)
        st = stream_wait(s, &s->rank[i], err);
    return st;
}

static enum fb_status nccl_write(struct fb_backend *be, int local, enum fb_buf which, size_t off,
                                 const void *src, size_t bytes, struct fb_err *err)
{
    struct nccl_state *s = &((struct nccl_ranks *)be->state)->rank[local];
    char *at = fb_buffer_span(&s->buf, which, off, bytes, "write", err);
    if (at == NULL)
        return err->code;
    /* On the rank's own stream, so the calls that follow see the bytes: a
     * plain cudaMemcpy goes to the legacy stream, which a non-blocking
     * stream does not wait for, and from pageable memory it may return
     * before its DMA lands. From pageable memory the source is staged
     * before this returns, so the caller may reuse it at once. */
    if (s->stream == NULL && cudaSetDevice(s->device) != cudaSuccess)
        return cuda_check(cudaGetLastError(), "cudaSetDevice", err);
    return cuda_check(cudaMemcpyAsync(at, src, bytes, cudaMemcpyHostToDevice, s->stream), "cudaMemcpyAsync H2D", err);
}

static enum fb_status nccl_read(struct fb_backend *be, int local, enum fb_buf which, size_t off, void *dst,
                                size_t bytes, struct fb_err *err)
{
    struct nccl_state *s = &((struct nccl_ranks *)be->state)->rank[local];
    const char *at = fb_buffer_span(&s->buf, which, off, bytes, "read", err);
    if (at == NULL)
        return err->code;
    /* Ordered after every call on the rank's stream, as the write is. */
    if (s->stream == NULL && cudaSetDevice(s->device) != cudaSuccess)
        return cuda_check(cudaGetLastError(), "cudaSetDevice", err);
    enum fb_status st =
        cuda_check(cudaMemcpyAsync(dst, at, bytes, cudaMemcpyDeviceToHost, s->stream), "cudaMemcpyAsync D2H", err);
    return st == FB_OK ? cuda_check(cudaStreamSynchronize(s->stream), "cudaStreamSynchronize", err) : st;
}

#if HAVE_KERNELS
/* Validation by kernels on the rank's stream, in order with its calls. */
static enum fb_status rank_checker(struct nccl_state *s, struct fb_err *err)
{
    enum fb_status st = cuda_check(cudaSetDevice(s->device), "cudaSetDevice", err);
    if (st == FB_OK && s->check == NULL)
        st = cuda_check(fb_devcheck_new(&s->check), "validation set-up (cudaMalloc)", err);
    return st;
}

static enum fb_status nccl_fill(struct fb_backend *be, int local, enum fb_buf which, size_t elem_off, uint64_t n,
                                const struct fb_pattern *p, int poison, struct fb_err *err)
{
    struct nccl_state *s = &((struct nccl_ranks *)be->state)->rank[local];
    size_t esz = (size_t)fb_pat_size(p->dtype);
    char *at = fb_buffer_span(&s->buf, which, elem_off * esz, n * esz, "fill", err);
    if (at == NULL)
        return err->code;
    enum fb_status st = rank_checker(s, err);
    return st == FB_OK ? cuda_check(fb_devcheck_fill(s->check, at, n, p, poison, s->stream), "fill kernel", err) : st;
}

static enum fb_status nccl_check_result(struct fb_backend *be, int local, size_t elem_off, uint64_t n,
                                 const struct fb_pattern *p, const struct fb_pat_tables *t, uint64_t t_key,
                                 uint64_t *wrong, uint64_t *first, struct fb_err *err)
{
    struct nccl_state *s = &((struct nccl_ranks *)be->state)->rank[local];
    size_t esz = (size_t)fb_pat_size(p->dtype);
    const char *at = fb_buffer_span(&s->buf, FB_BUF_RECV, elem_off * esz, n * esz, "check", err);
    if (at == NULL)
        return err->code;
    enum fb_status st = rank_checker(s, err);
    if (st == FB_OK)
        st = cuda_check(fb_devcheck_count(s->check, at, n, p, t, t_key, s->stream, wrong, first), "check kernel", err);
    return st;
}
#endif

static void nccl_describe(struct fb_backend *be, int local, json_object *device)
{
    struct nccl_ranks *all = be->state;
    struct nccl_state *s = all ? &all->rank[local] : NULL;
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
        version_text(v, buf, sizeof buf);
        json_object_object_add(versions, "nccl", json_object_new_string(buf));
    }
    if (cudaRuntimeGetVersion(&v) == cudaSuccess)
        json_object_object_add(versions, "cuda_runtime", version_string(v, 1000, 10, 100));
    if (cudaDriverGetVersion(&v) == cudaSuccess && v > 0)
        json_object_object_add(versions, "cuda_driver", version_string(v, 1000, 10, 100));
}

static enum fb_status nccl_peak_memory(struct fb_backend *be, int local, uint64_t *bytes, struct fb_err *err)
{
    struct nccl_state *s = &((struct nccl_ranks *)be->state)->rank[local];
    size_t free_b = 0, total = 0;
    enum fb_status st = cuda_check(cudaSetDevice(s->device), "cudaSetDevice", err);
    if (st == FB_OK)
        st = cuda_check(cudaMemGetInfo(&free_b, &total), "cudaMemGetInfo", err);
    if (st == FB_OK && total - free_b > s->peak_bytes)
        s->peak_bytes = total - free_b;
    *bytes = s->peak_bytes;
    return st;
}

/* The watchdog's way out of a hang: kernels stuck on a lost peer end only
 * when the communicator is aborted. */
static void nccl_cancel(struct fb_backend *be)
{
    struct nccl_ranks *s = be->state;
    ncclComm_t comms[FB_LOCAL_RANKS_MAX] = {0};
    if (s == NULL)
        return;
    /* Taken away under the lock, aborted after it: a wait asking for
     * errors then finds no communicator instead of a freed one, and the
     * abort, which may take long, holds nothing. */
    pthread_mutex_lock(&s->comm_lock);
    for (int i = 0; i < s->n; i++)
        comms[i] = atomic_exchange(&s->rank[i].comm, NULL);
    pthread_mutex_unlock(&s->comm_lock);
    for (int i = 0; i < s->n; i++)
        if (comms[i] != NULL)
            ncclCommAbort(comms[i]);
}

static void deregister(struct nccl_state *d, ncclComm_t comm, int mode)
{
    if (mode == 2) {
        if (d->send_reg)
            ncclCommWindowDeregister(comm, (ncclWindow_t)d->send_reg);
        if (d->recv_reg)
            ncclCommWindowDeregister(comm, (ncclWindow_t)d->recv_reg);
    } else if (mode == 1) {
        if (d->send_reg)
            ncclCommDeregister(comm, d->send_reg);
        if (d->recv_reg)
            ncclCommDeregister(comm, d->recv_reg);
    }
}

/* Buffers deregistered first (NCCL's order: deregister, then finalize and
 * destroy); several communicators of one process end together: finalized
 * in one group (NCCL's rule for them), then destroyed. */
static void end_comms(struct nccl_ranks *s, ncclComm_t *comms)
{
    for (int i = 0; i < s->n; i++)
        if (comms[i] != NULL)
            deregister(&s->rank[i], comms[i], s->flags.register_mode);
    if (s->n > 1) {
        ncclGroupStart();
        for (int i = 0; i < s->n; i++)
            if (comms[i] != NULL)
                ncclCommFinalize(comms[i]);
        ncclGroupEnd();
    }
    for (int i = 0; i < s->n; i++) {
        if (comms[i] != NULL)
            ncclCommDestroy(comms[i]);
    }
}

static void nccl_fini(struct fb_backend *be, int abort)
{
    struct nccl_ranks *s = be->state;
    if (s == NULL)
        return;
    ncclComm_t comms[FB_LOCAL_RANKS_MAX];
    for (int i = 0; i < s->n; i++)
        comms[i] = atomic_exchange(&s->rank[i].comm, NULL);
    if (abort) {
        /* The process ends next; the watchdog thread may be reading s. */
        for (int i = 0; i < s->n; i++)
            if (comms[i] != NULL)
                ncclCommAbort(comms[i]);
        return;
    }
    end_comms(s, comms);
    for (int i = 0; i < s->n; i++) {
        struct nccl_state *d = &s->rank[i];
        cudaSetDevice(d->device);
        free_buffer(d, d->buf.send);
        free_buffer(d, d->buf.recv);
#if HAVE_KERNELS
        fb_devcheck_free(d->check);
#endif
        if (d->stream)
            cudaStreamDestroy(d->stream);
    }
    pthread_mutex_destroy(&s->comm_lock);
    free(s);
    be->state = NULL;
}

/* -I 1 as nccl-tests times it: an event between iterations on each GPU's
 * stream (recordEvents, src/common.cu), read once the streams are done. */
static enum fb_status rank_marks(struct nccl_state *s, long n, struct fb_err *err)
{
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
    if (cudaSetDevice(s->device) != cudaSuccess)
        return cuda_check(cudaGetLastError(), "cudaSetDevice", err);
    for (; s->nmarks <= n; s->nmarks++) {
        enum fb_status st = cuda_check(cudaEventCreate(&s->marks[s->nmarks]), "cudaEventCreate", err);
        if (st != FB_OK)
            return st;
    }
    return FB_OK;
}

static enum fb_status nccl_marks(struct fb_backend *be, long n, struct fb_err *err)
{
    struct nccl_ranks *s = be->state;
    enum fb_status st = FB_OK;
    for (int r = 0; r < s->n && st == FB_OK; r++)
        st = rank_marks(&s->rank[r], n, err);
    return st;
}

static enum fb_status nccl_mark(struct fb_backend *be, long i, struct fb_err *err)
{
    struct nccl_ranks *s = be->state;
    enum fb_status st = FB_OK;
    for (int r = 0; r < s->n && st == FB_OK; r++) {
        struct nccl_state *d = &s->rank[r];
        if (i < 0 || i >= d->nmarks)
            return fb_fail(err, FB_ERR_INTERNAL, "iteration mark %ld of %ld", i, d->nmarks);
        if (d->stream == NULL && cudaSetDevice(d->device) != cudaSuccess)
            return cuda_check(cudaGetLastError(), "cudaSetDevice", err);
        st = cuda_check(cudaEventRecord(d->marks[i], d->stream), "cudaEventRecord", err);
    }
    return st;
}

/* An iteration lasts until its slowest GPU of this process is done. */
static enum fb_status nccl_spans(struct fb_backend *be, double *seconds, long n, struct fb_err *err)
{
    struct nccl_ranks *s = be->state;
    enum fb_status st = FB_OK;
    for (long i = 0; i < n; i++)
        seconds[i] = 0;
    for (int r = 0; r < s->n && st == FB_OK; r++) {
        struct nccl_state *d = &s->rank[r];
        if (n >= d->nmarks)
            return fb_fail(err, FB_ERR_INTERNAL, "%ld spans of %ld marks", n, d->nmarks);
        for (long i = 0; st == FB_OK && i < n; i++) {
            float ms = 0;
            st = cuda_check(cudaEventElapsedTime(&ms, d->marks[i], d->marks[i + 1]), "cudaEventElapsedTime", err);
            if ((double)ms * 1e-3 > seconds[i])
                seconds[i] = (double)ms * 1e-3;
        }
    }
    return st;
}

const struct fb_backend_ops fb_backend_nccl = {
    .name = "nccl",
    .inplace_style = FB_INPLACE_NCCL,
    .available = nccl_available,
    .supports = nccl_supports,
    .init = nccl_init,
    .check_flags = nccl_check_flags,
    .free_memory = nccl_free_memory,
    .alloc = nccl_alloc,
    .run = nccl_run,
    .graph_begin = nccl_graph_begin,
    .graph_end = nccl_graph_end,
    .graph_launch = nccl_graph_launch,
    .graph_free = nccl_graph_free,
    .batch_begin = nccl_batch_begin,
    .batch_end = nccl_batch_end,
    .marks = nccl_marks,
    .mark = nccl_mark,
    .spans = nccl_spans,
    .wait = nccl_wait,
    .write = nccl_write,
    .read = nccl_read,
#if HAVE_KERNELS
    .fill = nccl_fill,
    .check = nccl_check_result,
#endif
    .describe = nccl_describe,
    .versions = nccl_versions,
    .peak_memory = nccl_peak_memory,
    .cancel = nccl_cancel,
    .fini = nccl_fini,
};
