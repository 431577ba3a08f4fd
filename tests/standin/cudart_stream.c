/* CUDA runtime stand-in, streams: each stream is a queue worked off by a
 * thread of its own, so work completes asynchronously to the host, as on a
 * GPU (cudaStreamQuery says cudaErrorNotReady until it has). Events are
 * markers in a queue; graph capture records what is enqueued instead of
 * running it, and a launch replays the recording on the stream.
 *
 * The legacy NULL stream's schedule is the latest CUDA allows: a pageable
 * cudaMemcpy to the device and a cudaMemset are HELD there (cudart.c)
 * until something orders work after that stream: a later op on it, its
 * query or sync, a device sync, an op on a blocking stream of its device
 * (which first waits for the legacy stream's work, as CUDA's implicit
 * sync), a synchronous cudaMemcpy, cudaFree/cudaFreeHost. A non-blocking
 * stream never waits for it, so it reads the bytes from before. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"
#include "cudart_internal.h"

enum op_kind { OP_HOST, OP_COPY, OP_SET, OP_EVENT, OP_WAIT_EVENT, OP_WAIT_STREAM, OP_GRAPH };

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
    struct CUstream_st *stream; /* OP_WAIT_STREAM: the legacy stream, until it completed gen ops */
    uint64_t seq;               /* its number in its stream's queue, from 1 */
    int held;                   /* runs only once seq <= the stream's released */
    struct op *next;
};

struct CUevent_st {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    unsigned flags;
    uint64_t recorded, done; /* generations: done == recorded when complete */
    double when;
    int device;          /* current at its creation */
    uint64_t capture_id; /* last recorded inside that capture (0: outside one) */
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
    int device; /* current at its creation */
    int legacy; /* the device's legacy NULL stream */
    uint64_t released; /* held ops up to this seq may run */
    struct CUgraph_st *capture; /* non-NULL while capturing */
    uint64_t capture_id;
    atomic_int capture_invalid;
    struct CUstream_st *next; /* the registry */
    int refs;                 /* device syncs waiting for it, under registry_lock */
};

/* Every live stream, for cudaDeviceSynchronize (which waits for them
 * outside the lock, holding a reference each). */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t registry_cond = PTHREAD_COND_INITIALIZER;
static struct CUstream_st *registry;
/* The legacy NULL stream (0, cudaStreamLegacy), one per device as in CUDA
 * (a call on it goes to the calling thread's current device's): made when
 * first used, read without a lock. cudaStreamPerThread is one blocking
 * stream per thread and device, destroyed when the thread exits. */
#define DEFAULT_STREAMS 16
static _Atomic(struct CUstream_st *) legacy_streams[DEFAULT_STREAMS];
static pthread_mutex_t legacy_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t per_thread_once = PTHREAD_ONCE_INIT;
static pthread_key_t per_thread_key;

/* The active captures, for the modes' rules on unsafe calls and on events
 * recorded inside one. */
struct capture {
    uint64_t id;
    struct CUstream_st *s;
    enum cudaStreamCaptureMode mode;
    pthread_t owner;
    struct capture *next;
};
static pthread_mutex_t capture_lock = PTHREAD_MUTEX_INITIALIZER;
static struct capture *captures;
static uint64_t capture_serial;

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
    case OP_WAIT_STREAM:
        pthread_mutex_lock(&op->stream->lock);
        while (op->stream->completed < op->gen)
            pthread_cond_wait(&op->stream->cond, &op->stream->lock);
        pthread_mutex_unlock(&op->stream->lock);
        break;
    case OP_GRAPH:
        for (size_t i = 0; i < op->exec->n; i++)
            run_op(&op->exec->nodes[i]);
        exec_release(op->exec);
        break;
    }
}

/* The head of the queue is a held op not yet released. */
static int held(const struct CUstream_st *s)
{
    return s->head != NULL && s->head->held && s->head->seq > s->released && !s->destroyed;
}

/* Every held op queued so far may run. Under the stream's lock. */
static void release_locked(struct CUstream_st *s)
{
    if (s->released < s->enqueued) {
        s->released = s->enqueued;
        pthread_cond_broadcast(&s->cond);
    }
}

static void *worker(void *arg)
{
    struct CUstream_st *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while ((s->head == NULL && !s->destroyed) || held(s))
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

static cudaError_t stream_new(struct CUstream_st **out, unsigned flags, int device, int legacy)
{
    struct CUstream_st *s = calloc(1, sizeof *s);
    if (s == NULL)
        return cudaErrorMemoryAllocation;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    s->flags = flags;
    s->device = device;
    s->legacy = legacy;
    atomic_init(&s->capture_invalid, 0);
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

static int device_index(int dev)
{
    return dev >= 0 && dev < DEFAULT_STREAMS ? dev : 0;
}

/* The legacy stream of `dev`; made if `create`, else NULL until used. */
static struct CUstream_st *legacy_of(int dev, int create)
{
    dev = device_index(dev);
    struct CUstream_st *d = atomic_load(&legacy_streams[dev]);
    if (d != NULL || !create)
        return d;
    pthread_mutex_lock(&legacy_lock);
    d = atomic_load(&legacy_streams[dev]);
    if (d == NULL && stream_new(&d, cudaStreamDefault, dev, 1) == cudaSuccess)
        atomic_store(&legacy_streams[dev], d);
    pthread_mutex_unlock(&legacy_lock);
    return d;
}

struct per_thread {
    struct CUstream_st *s[DEFAULT_STREAMS];
};

static void stream_destroy(struct CUstream_st *s);

static void per_thread_exit(void *arg)
{
    struct per_thread *pt = arg;
    for (int i = 0; i < DEFAULT_STREAMS; i++)
        if (pt->s[i] != NULL)
            stream_destroy(pt->s[i]);
    free(pt);
}

static void per_thread_init(void)
{
    pthread_key_create(&per_thread_key, per_thread_exit);
}

/* cudaStreamPerThread: the calling thread's own blocking stream of `dev`. */
static struct CUstream_st *per_thread_of(int dev)
{
    dev = device_index(dev);
    pthread_once(&per_thread_once, per_thread_init);
    struct per_thread *pt = pthread_getspecific(per_thread_key);
    if (pt == NULL) {
        if ((pt = calloc(1, sizeof *pt)) == NULL)
            return NULL;
        pthread_setspecific(per_thread_key, pt);
    }
    if (pt->s[dev] == NULL && stream_new(&pt->s[dev], cudaStreamDefault, dev, 0) != cudaSuccess)
        pt->s[dev] = NULL;
    return pt->s[dev];
}

/* NULL and cudaStreamLegacy are the current device's legacy stream,
 * cudaStreamPerThread the calling thread's stream of it. */
static struct CUstream_st *resolve(cudaStream_t s)
{
    if (s == NULL || s == cudaStreamLegacy)
        return legacy_of(fbsi_current_device(), 1);
    if (s == cudaStreamPerThread)
        return per_thread_of(fbsi_current_device());
    return s;
}

static int is_legacy(cudaStream_t s)
{
    return s == NULL || s == cudaStreamLegacy;
}

static int is_default(cudaStream_t s)
{
    return is_legacy(s) || s == cudaStreamPerThread;
}

/* --- capture modes ---------------------------------------------------- */

cudaError_t fbsi_capture_unsafe(void)
{
    int hit = 0;
    pthread_t self = pthread_self();
    pthread_mutex_lock(&capture_lock);
    for (struct capture *c = captures; c; c = c->next) {
        if (c->mode == cudaStreamCaptureModeGlobal ||
            (c->mode == cudaStreamCaptureModeThreadLocal && pthread_equal(c->owner, self))) {
            atomic_store(&c->s->capture_invalid, 1);
            hit = 1;
        }
    }
    pthread_mutex_unlock(&capture_lock);
    return hit ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

/* Whether capture `id` is active; if so, it is invalidated (a query or
 * sync of an event recorded inside it). */
static int spoil_capture(uint64_t id)
{
    int found = 0;
    if (id == 0)
        return 0;
    pthread_mutex_lock(&capture_lock);
    for (struct capture *c = captures; c && !found; c = c->next) {
        if (c->id == id) {
            atomic_store(&c->s->capture_invalid, 1);
            found = 1;
        }
    }
    pthread_mutex_unlock(&capture_lock);
    return found;
}

static void capture_forget(struct CUstream_st *s)
{
    pthread_mutex_lock(&capture_lock);
    for (struct capture **p = &captures; *p; p = &(*p)->next) {
        if ((*p)->s == s) {
            struct capture *c = *p;
            *p = c->next;
            free(c);
            break;
        }
    }
    pthread_mutex_unlock(&capture_lock);
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

static int push_locked(struct CUstream_st *s, const struct op *op)
{
    struct op *q = malloc(sizeof *q);
    if (q == NULL)
        return 0;
    *q = *op;
    q->next = NULL;
    q->seq = ++s->enqueued;
    if (s->tail)
        s->tail->next = q;
    else
        s->head = q;
    s->tail = q;
    pthread_cond_broadcast(&s->cond);
    return 1;
}

/* Queues `op` on the stream, or records it when the stream is capturing.
 * An op on the legacy stream releases the held ops before it; one on a
 * blocking stream releases its device's legacy stream and waits for what
 * that stream has queued (CUDA's implicit sync). */
static cudaError_t enqueue(cudaStream_t stream, const struct op *op)
{
    struct CUstream_st *s = resolve(stream);
    if (s == NULL)
        return fbsi_cuda_ret(cudaErrorMemoryAllocation);
    pthread_mutex_lock(&s->lock);
    int capturing = s->capture != NULL;
    pthread_mutex_unlock(&s->lock);
    struct op wait = {.kind = OP_WAIT_STREAM};
    if (!capturing && !s->legacy && !(s->flags & cudaStreamNonBlocking) &&
        (wait.stream = legacy_of(s->device, 0)) != NULL) {
        pthread_mutex_lock(&wait.stream->lock);
        release_locked(wait.stream);
        wait.gen = wait.stream->completed < wait.stream->enqueued ? wait.stream->enqueued : 0;
        pthread_mutex_unlock(&wait.stream->lock);
    }
    pthread_mutex_lock(&s->lock);
    cudaError_t e = cudaSuccess;
    if (s->capture != NULL) {
        e = graph_add(s->capture, op);
    } else {
        if (s->legacy)
            release_locked(s);
        if ((wait.gen > 0 && !push_locked(s, &wait)) || !push_locked(s, op))
            e = cudaErrorMemoryAllocation;
    }
    pthread_mutex_unlock(&s->lock);
    return fbsi_cuda_ret(e);
}

static cudaError_t legacy_held(const struct op *op)
{
    cudaError_t e = enqueue(NULL, op);
    if (e != cudaSuccess)
        free(op->staged);
    return e;
}

cudaError_t fbsi_legacy_copy_held(void *dst, void *staged, size_t n)
{
    struct op op = {.kind = OP_COPY, .dst = dst, .src = staged, .n = n, .staged = staged, .held = 1};
    return legacy_held(&op);
}

cudaError_t fbsi_legacy_set_held(void *dst, int value, size_t n)
{
    struct op op = {.kind = OP_SET, .dst = dst, .value = value, .n = n, .held = 1};
    return legacy_held(&op);
}

/* --- streams -------------------------------------------------------- */

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
    return fbsi_cuda_ret(stream_new(pStream, flags, fbsi_current_device(), 0));
}

cudaError_t cudaStreamCreate(cudaStream_t *pStream)
{
    return fbsi_cuda_ret(stream_new(pStream, cudaStreamDefault, fbsi_current_device(), 0));
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags, int priority)
{
    (void)priority;
    return fbsi_cuda_ret(stream_new(pStream, flags, fbsi_current_device(), 0));
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
    stream_destroy(stream);
    return cudaSuccess;
}

static void stream_destroy(struct CUstream_st *s)
{
    capture_forget(s);
    unregister(s);
    pthread_mutex_lock(&s->lock);
    s->destroyed = 1;
    int idle = s->head == NULL;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    if (!idle) {
        pthread_detach(s->worker);
        return; /* the stream is leaked to its still-running worker */
    }
    /* A device sync that took it before it left the registry is done with
     * it at once: nothing is queued. */
    pthread_mutex_lock(&registry_lock);
    while (s->refs > 0)
        pthread_cond_wait(&registry_cond, &registry_lock);
    pthread_mutex_unlock(&registry_lock);
    pthread_join(s->worker, NULL);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    if (s->capture != NULL)
        cudaGraphDestroy(s->capture);
    free(s);
}

/* A synchronising call on a capturing stream is an error that also
 * spoils the capture, as on a GPU. */
static int refuse_while_capturing(struct CUstream_st *s)
{
    if (s->capture == NULL)
        return 0;
    atomic_store(&s->capture_invalid, 1);
    return 1;
}

/* A query, as a sync, releases the stream's held work: the caller orders
 * itself after it. */
cudaError_t cudaStreamQuery(cudaStream_t stream)
{
    cudaError_t e = is_legacy(stream) ? fbsi_capture_unsafe() : cudaSuccess;
    if (e != cudaSuccess)
        return fbsi_cuda_ret(e);
    struct CUstream_st *s = resolve(stream);
    if (s == NULL)
        return fbsi_cuda_ret(cudaErrorInvalidResourceHandle);
    pthread_mutex_lock(&s->lock);
    if (refuse_while_capturing(s)) {
        e = cudaErrorStreamCaptureUnsupported;
    } else {
        release_locked(s);
        e = s->completed == s->enqueued ? cudaSuccess : cudaErrorNotReady;
    }
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

/* Releases the stream's held work and waits for what it has queued;
 * `strict`: a capturing stream is refused (and its capture spoilt). */
static cudaError_t drain(struct CUstream_st *s, int strict)
{
    pthread_mutex_lock(&s->lock);
    if (strict && refuse_while_capturing(s)) {
        pthread_mutex_unlock(&s->lock);
        return cudaErrorStreamCaptureUnsupported;
    }
    release_locked(s);
    uint64_t target = s->enqueued;
    while (s->completed < target)
        pthread_cond_wait(&s->cond, &s->lock);
    pthread_mutex_unlock(&s->lock);
    return cudaSuccess;
}

void fbsi_legacy_sync(int device)
{
    struct CUstream_st *s = legacy_of(device, 0);
    if (s != NULL)
        drain(s, 0);
}

/* The streams are waited for outside registry_lock, so that other threads
 * can make streams (and so get on with work these may wait for) meanwhile. */
void fbsi_device_sync(int device)
{
    size_t n = 0, cap = 0;
    struct CUstream_st **v = NULL;
    pthread_mutex_lock(&registry_lock);
    for (struct CUstream_st *s = registry; s; s = s->next) {
        if (device >= 0 && s->device != device)
            continue;
        struct CUstream_st **grown = fbsi_grow(v, &cap, n, sizeof *v);
        if (grown == NULL) {
            drain(s, 0); /* out of memory: under the lock, as a last resort */
            continue;
        }
        v = grown;
        v[n++] = s;
        s->refs++;
    }
    pthread_mutex_unlock(&registry_lock);
    for (size_t i = 0; i < n; i++)
        drain(v[i], 0);
    pthread_mutex_lock(&registry_lock);
    for (size_t i = 0; i < n; i++)
        v[i]->refs--;
    pthread_cond_broadcast(&registry_cond);
    pthread_mutex_unlock(&registry_lock);
    free(v);
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    cudaError_t e = is_legacy(stream) ? fbsi_capture_unsafe() : cudaSuccess;
    if (e != cudaSuccess)
        return fbsi_cuda_ret(e);
    struct CUstream_st *s = resolve(stream);
    return fbsi_cuda_ret(s ? drain(s, 1) : cudaErrorInvalidResourceHandle);
}

/* The current device's streams, as in CUDA. */
cudaError_t cudaDeviceSynchronize(void)
{
    cudaError_t e = fbsi_capture_unsafe();
    if (e == cudaSuccess)
        fbsi_device_sync(fbsi_current_device());
    return fbsi_cuda_ret(e);
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
    struct op op = {.kind = OP_HOST, .fn = fn, .arg = userData};
    return enqueue(stream, &op);
}

int fbsi_stream_device(cudaStream_t stream)
{
    struct CUstream_st *s = resolve(stream);
    return s != NULL ? s->device : -1;
}

cudaError_t fbsi_launch_twin(cudaStream_t stream, void (*run)(void *), void *args)
{
    struct CUstream_st *s = resolve(stream);
    cudaError_t e = cudaSuccess;
    if (s == NULL)
        e = cudaErrorMemoryAllocation;
    else if (s->device != fbsi_current_device())
        e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess) {
        pthread_mutex_lock(&s->lock);
        e = s->capture != NULL ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
        pthread_mutex_unlock(&s->lock);
    }
    if (e != cudaSuccess) {
        free(args);
        return fbsi_cuda_ret(e);
    }
    struct op op = {.kind = OP_HOST, .fn = run, .arg = args, .staged = args};
    e = enqueue(stream, &op);
    if (e != cudaSuccess)
        free(args);
    return e;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream)
{
    int dev_dst = fbsi_is_device_span(dst, count), dev_src = fbsi_is_device_span(src, count);
    if ((kind == cudaMemcpyHostToDevice && !dev_dst) || (kind == cudaMemcpyDeviceToHost && !dev_src) ||
        (kind == cudaMemcpyDeviceToDevice && !(dev_dst && dev_src)))
        return fbsi_cuda_ret(cudaErrorInvalidValue);
    fbsi_count_copy(dst, src, count, kind);
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
    ev->device = fbsi_current_device();
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
    /* The NULL stream is the current device's: an event of another device
     * cannot be recorded there either. */
    if (s->device != event->device)
        return fbsi_cuda_ret(cudaErrorInvalidResourceHandle);
    struct op op = {.kind = OP_EVENT, .ev = event};
    pthread_mutex_lock(&s->lock);
    int capturing = s->capture != NULL;
    uint64_t capture_id = s->capture_id;
    pthread_mutex_unlock(&s->lock);
    pthread_mutex_lock(&event->lock);
    if (!capturing)
        op.gen = ++event->recorded;
    event->capture_id = capturing ? capture_id : 0;
    pthread_mutex_unlock(&event->lock);
    return enqueue(stream, &op);
}

/* An event recorded inside a capture that is still active stands for no
 * work: querying or synchronising it is refused and spoils the capture. */
static int captured(cudaEvent_t event)
{
    pthread_mutex_lock(&event->lock);
    uint64_t id = event->capture_id;
    pthread_mutex_unlock(&event->lock);
    return spoil_capture(id);
}

cudaError_t cudaEventQuery(cudaEvent_t event)
{
    if (event == NULL)
        return fbsi_cuda_ret(cudaErrorInvalidResourceHandle);
    if (captured(event))
        return fbsi_cuda_ret(cudaErrorStreamCaptureUnsupported);
    pthread_mutex_lock(&event->lock);
    int done = event->done >= event->recorded;
    pthread_mutex_unlock(&event->lock);
    return done ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    if (event == NULL)
        return fbsi_cuda_ret(cudaErrorInvalidResourceHandle);
    if (captured(event))
        return fbsi_cuda_ret(cudaErrorStreamCaptureUnsupported);
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
    if ((start->flags | end->flags) & cudaEventDisableTiming || start->device != end->device)
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

/* The legacy stream cannot be captured (cudaStreamPerThread can). */
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
    if (is_legacy(stream))
        return fbsi_cuda_ret(cudaErrorStreamCaptureUnsupported);
    if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
        mode != cudaStreamCaptureModeRelaxed)
        return fbsi_cuda_ret(cudaErrorInvalidValue);
    struct CUstream_st *s = resolve(stream);
    struct CUgraph_st *g = calloc(1, sizeof *g);
    struct capture *c = calloc(1, sizeof *c);
    if (s == NULL || g == NULL || c == NULL) {
        free(g), free(c);
        return fbsi_cuda_ret(cudaErrorMemoryAllocation);
    }
    pthread_mutex_lock(&capture_lock);
    *c = (struct capture){.id = ++capture_serial, .s = s, .mode = mode, .owner = pthread_self()};
    pthread_mutex_unlock(&capture_lock);
    pthread_mutex_lock(&s->lock);
    cudaError_t e = cudaSuccess;
    if (s->capture != NULL) {
        e = cudaErrorIllegalState;
    } else {
        s->capture = g;
        s->capture_id = c->id;
        atomic_store(&s->capture_invalid, 0);
    }
    pthread_mutex_unlock(&s->lock);
    if (e != cudaSuccess) {
        free(g), free(c);
        return fbsi_cuda_ret(e);
    }
    pthread_mutex_lock(&capture_lock);
    c->next = captures;
    captures = c;
    pthread_mutex_unlock(&capture_lock);
    return cudaSuccess;
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
    if (is_legacy(stream))
        return fbsi_cuda_ret(cudaErrorIllegalState);
    struct CUstream_st *s = resolve(stream);
    if (s == NULL)
        return fbsi_cuda_ret(cudaErrorInvalidResourceHandle);
    capture_forget(s);
    pthread_mutex_lock(&s->lock);
    struct CUgraph_st *g = s->capture;
    int invalid = atomic_load(&s->capture_invalid);
    s->capture = NULL;
    s->capture_id = 0;
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
    if (is_legacy(stream))
        return cudaSuccess;
    struct CUstream_st *s = resolve(stream);
    if (s == NULL)
        return fbsi_cuda_ret(cudaErrorInvalidResourceHandle);
    pthread_mutex_lock(&s->lock);
    if (s->capture != NULL)
        *pCaptureStatus = atomic_load(&s->capture_invalid) ? cudaStreamCaptureStatusInvalidated
                                                           : cudaStreamCaptureStatusActive;
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
