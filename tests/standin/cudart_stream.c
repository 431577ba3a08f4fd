/* CUDA runtime stand-in, streams: each stream is a queue worked off by a
 * thread of its own, so work completes asynchronously to the host, as on a
 * GPU (cudaStreamQuery says cudaErrorNotReady until it has). Events are
 * markers in a queue; graph capture records what is enqueued instead of
 * running it, and a launch replays the recording on the stream. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"
#include "cudart_internal.h"

enum op_kind { OP_HOST, OP_COPY, OP_SET, OP_EVENT, OP_WAIT_EVENT, OP_GRAPH };

struct op {
    enum op_kind kind;
    cudaHostFn_t fn;
    void *arg;
    void *dst;
    const void *src;
    size_t n;
    int value;
    struct CUevent_st *ev;
    uint64_t gen;
    struct CUgraphExec_st *exec;
    void *staged; /* a host source copied at the call, freed once run */
    struct op *next;
};

struct CUevent_st {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    unsigned flags;
    uint64_t recorded, done; /* generations: done == recorded when complete */
    double when;
};

struct CUgraph_st {
    struct op *nodes;
    size_t n, cap;
};

struct CUgraphExec_st {
    struct op *nodes;
    size_t n;
    atomic_int refs; /* the handle, plus one per launch not yet run */
};

struct CUstream_st {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct op *head, *tail;
    uint64_t enqueued, completed;
    pthread_t worker;
    int destroyed;
    unsigned flags;
    struct CUgraph_st *capture; /* non-NULL while capturing */
    int capture_invalid;
    struct CUstream_st *next; /* the registry */
};

/* Every live stream, for cudaDeviceSynchronize; and the legacy default
 * stream, made on first use. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct CUstream_st *registry;
/* The NULL stream, one per device as in CUDA (a call on it goes to the
 * calling thread's current device's): made when first used. */
#define DEFAULT_STREAMS 16
static struct CUstream_st *default_streams[DEFAULT_STREAMS];

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* --- events --------------------------------------------------------- */

static void event_complete(struct CUevent_st *ev, uint64_t gen)
{
    pthread_mutex_lock(&ev->lock);
    if (gen > ev->done) {
        ev->done = gen;
        ev->when = now_s();
    }
    pthread_cond_broadcast(&ev->cond);
    pthread_mutex_unlock(&ev->lock);
}

static void event_wait(struct CUevent_st *ev, uint64_t gen)
{
    pthread_mutex_lock(&ev->lock);
    while (ev->done < gen)
        pthread_cond_wait(&ev->cond, &ev->lock);
    pthread_mutex_unlock(&ev->lock);
}

/* --- running work ----------------------------------------------------- */

static void exec_release(struct CUgraphExec_st *x)
{
    if (atomic_fetch_sub(&x->refs, 1) != 1)
        return;
    free(x->nodes);
    free(x);
}

static void run_op(const struct op *op)
{
    switch (op->kind) {
    case OP_HOST: op->fn(op->arg); break;
    case OP_COPY: memmove(op->dst, op->src, op->n); break;
    case OP_SET: memset(op->dst, op->value, op->n); break;
    case OP_EVENT:
        /* In a graph the generation is the one current at replay. */
        event_complete(op->ev, op->gen ? op->gen : op->ev->recorded);
        break;
    case OP_WAIT_EVENT: event_wait(op->ev, op->gen); break;
    case OP_GRAPH:
        for (size_t i = 0; i < op->exec->n; i++)
            run_op(&op->exec->nodes[i]);
        exec_release(op->exec);
        break;
    }
}

static void *worker(void *arg)
{
    struct CUstream_st *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (s->head == NULL && !s->destroyed)
            pthread_cond_wait(&s->cond, &s->lock);
        if (s->head == NULL)
            break;
        struct op *op = s->head;
        if (op->kind != OP_EVENT) {
            pthread_mutex_unlock(&s->lock);
            run_op(op);
            pthread_mutex_lock(&s->lock);
        } else {
            /* Under the stream's lock: whoever sees the event complete sees
             * the stream past it, and the other way round. */
            run_op(op);
        }
        s->head = op->next;
        if (s->head == NULL)
            s->tail = NULL;
        free(op->staged);
        free(op);
        s->completed++;
        pthread_cond_broadcast(&s->cond);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static cudaError_t stream_new(struct CUstream_st **out, unsigned flags)
{
    struct CUstream_st *s = calloc(1, sizeof *s);
    if (s == NULL)
        return cudaErrorMemoryAllocation;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    s->flags = flags;
    if (pthread_create(&s->worker, NULL, worker, s) != 0) {
        free(s);
        return cudaErrorMemoryAllocation;
    }
    pthread_mutex_lock(&registry_lock);
    s->next = registry;
    registry = s;
    pthread_mutex_unlock(&registry_lock);
    *out = s;
    return cudaSuccess;
}

/* NULL, cudaStreamLegacy and cudaStreamPerThread are the current
 * device's default stream. */
static struct CUstream_st *resolve(cudaStream_t s)
{
    if (s != NULL && s != cudaStreamLegacy && s != cudaStreamPerThread)
        return s;
    int dev = fbsi_current_device();
    if (dev < 0 || dev >= DEFAULT_STREAMS)
        dev = 0;
    pthread_mutex_lock(&registry_lock);
    struct CUstream_st *d = default_streams[dev];
    pthread_mutex_unlock(&registry_lock);
    if (d != NULL)
        return d;
    if (stream_new(&d, cudaStreamDefault) != cudaSuccess)
        return NULL;
    pthread_mutex_lock(&registry_lock);
    if (default_streams[dev] == NULL)
        default_streams[dev] = d;
    d = default_streams[dev];
    pthread_mutex_unlock(&registry_lock);
    return d;
}

static int is_default(cudaStream_t s)
{
    return s == NULL || s == cudaStreamLegacy || s == cudaStreamPerThread;
}

static cudaError_t graph_add(struct CUgraph_st *g, const struct op *op)
{
    struct op *nodes = fbsi_grow(g->nodes, &g->cap, g->n, sizeof *nodes);
    if (nodes == NULL)
        return cudaErrorMemoryAllocation;
    g->nodes = nodes;
    g->nodes[g->n++] = *op;
    return cudaSuccess;
}

/* Queues `op` on the stream, or records it when the stream is capturing. */
static cudaError_t enqueue(cudaStream_t stream, const struct op *op)
{
    struct CUstream_st *s = resolve(stream);
    if (s == NULL)
        return fbsi_cuda_ret(cudaErrorMemoryAllocation);
    pthread_mutex_lock(&s->lock);
    cudaError_t e = cudaSuccess;
    if (s->capture != NULL) {
        e = graph_add(s->capture, op);
    } else {
        struct op *q = malloc(sizeof *q);
        if (q == NULL) {
            e = cudaErrorMemoryAllocation;
        } else {
            *q = *op;
            q->next = NULL;
            if (s->tail)
                s->tail->next = q;
            else
                s->head = q;
            s->tail = q;
            s->enqueued++;
            pthread_cond_broadcast(&s->cond);
        }
    }
    pthread_mutex_unlock(&s->lock);
    return fbsi_cuda_ret(e);
}

/* --- streams -------------------------------------------------------- */

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
    return fbsi_cuda_ret(stream_new(pStream, flags));
}

cudaError_t cudaStreamCreate(cudaStream_t *pStream)
{
    return fbsi_cuda_ret(stream_new(pStream, cudaStreamDefault));
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags, int priority)
{
    (void)priority;
    return fbsi_cuda_ret(stream_new(pStream, flags));
}

static void unregister(struct CUstream_st *s)
{
    pthread_mutex_lock(&registry_lock);
    for (struct CUstream_st **p = &registry; *p; p = &(*p)->next) {
        if (*p == s) {
            *p = s->next;
            break;
        }
    }
    pthread_mutex_unlock(&registry_lock);
}

/* As in CUDA, destroying a stream with work queued returns at once and the
 * work still runs: the worker is then left to finish on its own. */
cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    if (is_default(stream))
        return fbsi_cuda_ret(cudaErrorInvalidResourceHandle);
    struct CUstream_st *s = stream;
    unregister(s);
    pthread_mutex_lock(&s->lock);
    s->destroyed = 1;
    int idle = s->head == NULL;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    if (!idle) {
        pthread_detach(s->worker);
        return cudaSuccess; /* the stream is leaked to its still-running worker */
    }
    pthread_join(s->worker, NULL);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    free(s);
    return cudaSuccess;
}

/* A synchronising call on a capturing stream is an error that also
 * spoils the capture, as on a GPU. */
static int refuse_while_capturing(struct CUstream_st *s)
{
    if (s->capture == NULL)
        return 0;
    s->capture_invalid = 1;
    return 1;
}

cudaError_t cudaStreamQuery(cudaStream_t stream)
{
    struct CUstream_st *s = resolve(stream);
    if (s == NULL)
        return fbsi_cuda_ret(cudaErrorInvalidResourceHandle);
    pthread_mutex_lock(&s->lock);
    cudaError_t e = refuse_while_capturing(s) ? cudaErrorStreamCaptureUnsupported
                    : s->completed == s->enqueued ? cudaSuccess : cudaErrorNotReady;
    pthread_mutex_unlock(&s->lock);
    /* The stand-in's device is this machine's CPUs: a caller polling a busy
     * stream gives them up a moment, or it starves the work it waits for. */
    if (e == cudaErrorNotReady) {
        struct timespec nap = {0, 20000};
        nanosleep(&nap, NULL);
        return e; /* an answer, not an error: it does not stick */
    }
    return fbsi_cuda_ret(e);
}

static cudaError_t drain(struct CUstream_st *s)
{
    pthread_mutex_lock(&s->lock);
    if (refuse_while_capturing(s)) {
        pthread_mutex_unlock(&s->lock);
        return cudaErrorStreamCaptureUnsupported;
    }
    uint64_t target = s->enqueued;
    while (s->completed < target)
        pthread_cond_wait(&s->cond, &s->lock);
    pthread_mutex_unlock(&s->lock);
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    struct CUstream_st *s = resolve(stream);
    return fbsi_cuda_ret(s ? drain(s) : cudaErrorInvalidResourceHandle);
}

cudaError_t cudaDeviceSynchronize(void)
{
    cudaError_t e = cudaSuccess;
    pthread_mutex_lock(&registry_lock);
    for (struct CUstream_st *s = registry; s && e == cudaSuccess; s = s->next)
        e = drain(s);
    pthread_mutex_unlock(&registry_lock);
    return fbsi_cuda_ret(e);
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
    struct op op = {.kind = OP_HOST, .fn = fn, .arg = userData};
    return enqueue(stream, &op);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream)
{
    int dev_dst = fbsi_is_device_span(dst, count), dev_src = fbsi_is_device_span(src, count);
    if ((kind == cudaMemcpyHostToDevice && !dev_dst) || (kind == cudaMemcpyDeviceToHost && !dev_src) ||
        (kind == cudaMemcpyDeviceToDevice && !(dev_dst && dev_src)))
        return fbsi_cuda_ret(cudaErrorInvalidValue);
    struct op op = {.kind = OP_COPY, .dst = dst, .src = src, .n = count};
    /* From host memory CUDA stages the source before the call returns: the
     * caller may reuse it at once, and the copy lands in stream order. */
    if (kind == cudaMemcpyHostToDevice && count > 0) {
        op.staged = malloc(count);
        if (op.staged == NULL)
            return fbsi_cuda_ret(cudaErrorMemoryAllocation);
        memcpy(op.staged, src, count);
        op.src = op.staged;
    }
    cudaError_t e = enqueue(stream, &op);
    if (e != cudaSuccess)
        free(op.staged);
    return e;
}

cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    if (count > 0 && !fbsi_is_device_span(devPtr, count))
        return fbsi_cuda_ret(cudaErrorInvalidValue);
    struct op op = {.kind = OP_SET, .dst = devPtr, .value = value, .n = count};
    return enqueue(stream, &op);
}

/* --- events --------------------------------------------------------- */

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
    struct CUevent_st *ev = calloc(1, sizeof *ev);
    if (ev == NULL)
        return fbsi_cuda_ret(cudaErrorMemoryAllocation);
    pthread_mutex_init(&ev->lock, NULL);
    pthread_cond_init(&ev->cond, NULL);
    ev->flags = flags;
    *event = ev;
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *event)
{
    return cudaEventCreateWithFlags(event, cudaEventDefault);
}

cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    if (event == NULL)
        return fbsi_cuda_ret(cudaErrorInvalidResourceHandle);
    pthread_mutex_destroy(&event->lock);
    pthread_cond_destroy(&event->cond);
    free(event);
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    if (event == NULL)
        return fbsi_cuda_ret(cudaErrorInvalidResourceHandle);
    struct CUstream_st *s = resolve(stream);
    if (s == NULL)
        return fbsi_cuda_ret(cudaErrorInvalidResourceHandle);
    struct op op = {.kind = OP_EVENT, .ev = event};
    pthread_mutex_lock(&s->lock);
    int capturing = s->capture != NULL;
    pthread_mutex_unlock(&s->lock);
    if (!capturing) {
        pthread_mutex_lock(&event->lock);
        op.gen = ++event->recorded;
        pthread_mutex_unlock(&event->lock);
    }
    return enqueue(stream, &op);
}

cudaError_t cudaEventQuery(cudaEvent_t event)
{
    if (event == NULL)
        return fbsi_cuda_ret(cudaErrorInvalidResourceHandle);
    pthread_mutex_lock(&event->lock);
    int done = event->done >= event->recorded;
    pthread_mutex_unlock(&event->lock);
    return done ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    if (event == NULL)
        return fbsi_cuda_ret(cudaErrorInvalidResourceHandle);
    pthread_mutex_lock(&event->lock);
    uint64_t gen = event->recorded;
    pthread_mutex_unlock(&event->lock);
    event_wait(event, gen);
    return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    if (start == NULL || end == NULL)
        return fbsi_cuda_ret(cudaErrorInvalidResourceHandle);
    if ((start->flags | end->flags) & cudaEventDisableTiming)
        return fbsi_cuda_ret(cudaErrorInvalidResourceHandle);
    if (cudaEventQuery(start) != cudaSuccess || cudaEventQuery(end) != cudaSuccess)
        return fbsi_cuda_ret(cudaErrorNotReady);
    if (start->done == 0 || end->done == 0)
        return fbsi_cuda_ret(cudaErrorInvalidResourceHandle); /* never recorded */
    *ms = (float)((end->when - start->when) * 1e3);
    return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
    (void)flags;
    if (event == NULL)
        return fbsi_cuda_ret(cudaErrorInvalidResourceHandle);
    pthread_mutex_lock(&event->lock);
    struct op op = {.kind = OP_WAIT_EVENT, .ev = event, .gen = event->recorded};
    pthread_mutex_unlock(&event->lock);
    return enqueue(stream, &op);
}

/* --- graphs --------------------------------------------------------- */

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
    (void)mode;
    if (is_default(stream))
        return fbsi_cuda_ret(cudaErrorStreamCaptureUnsupported);
    struct CUstream_st *s = stream;
    struct CUgraph_st *g = calloc(1, sizeof *g);
    if (g == NULL)
        return fbsi_cuda_ret(cudaErrorMemoryAllocation);
    pthread_mutex_lock(&s->lock);
    cudaError_t e = cudaSuccess;
    if (s->capture != NULL) {
        e = cudaErrorIllegalState;
        free(g);
    } else {
        s->capture = g;
        s->capture_invalid = 0;
    }
    pthread_mutex_unlock(&s->lock);
    return fbsi_cuda_ret(e);
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
    if (graph == NULL)
        return fbsi_cuda_ret(cudaErrorInvalidValue);
    free(graph->nodes);
    free(graph);
    return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph)
{
    *pGraph = NULL;
    if (is_default(stream))
        return fbsi_cuda_ret(cudaErrorIllegalState);
    struct CUstream_st *s = stream;
    pthread_mutex_lock(&s->lock);
    struct CUgraph_st *g = s->capture;
    int invalid = s->capture_invalid;
    s->capture = NULL;
    pthread_mutex_unlock(&s->lock);
    if (g == NULL)
        return fbsi_cuda_ret(cudaErrorIllegalState);
    if (invalid) {
        cudaGraphDestroy(g);
        return fbsi_cuda_ret(cudaErrorStreamCaptureInvalidated);
    }
    *pGraph = g;
    return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus)
{
    *pCaptureStatus = cudaStreamCaptureStatusNone;
    if (is_default(stream))
        return cudaSuccess;
    struct CUstream_st *s = stream;
    pthread_mutex_lock(&s->lock);
    if (s->capture != NULL)
        *pCaptureStatus = s->capture_invalid ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
    pthread_mutex_unlock(&s->lock);
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags)
{
    (void)flags;
    *pGraphExec = NULL;
    if (graph == NULL)
        return fbsi_cuda_ret(cudaErrorInvalidValue);
    struct CUgraphExec_st *x = calloc(1, sizeof *x);
    if (x == NULL || (graph->n > 0 && (x->nodes = malloc(graph->n * sizeof *x->nodes)) == NULL)) {
        free(x);
        return fbsi_cuda_ret(cudaErrorMemoryAllocation);
    }
    if (graph->n > 0)
        memcpy(x->nodes, graph->nodes, graph->n * sizeof *x->nodes);
    x->n = graph->n;
    atomic_init(&x->refs, 1);
    *pGraphExec = x;
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                          unsigned long long flags)
{
    return cudaGraphInstantiate(pGraphExec, graph, flags);
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    if (graphExec == NULL)
        return fbsi_cuda_ret(cudaErrorInvalidValue);
    atomic_fetch_add(&graphExec->refs, 1);
    struct op op = {.kind = OP_GRAPH, .exec = graphExec};
    cudaError_t e = enqueue(stream, &op);
    if (e != cudaSuccess)
        exec_release(graphExec);
    return e;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec)
{
    if (graphExec == NULL)
        return fbsi_cuda_ret(cudaErrorInvalidValue);
    exec_release(graphExec);
    return cudaSuccess;
}
