/* TCP bandwidth. The streams of this rank's flows run on worker threads,
 * by default one per stream as iperf3 (3.16+) and NCCL's socket transport
 * run them: a single core cannot copy for several streams at line rate.
 * The calling thread alone talks MPI: it announces a source's totals once
 * that flow's workers are done, acknowledges a destination's once its
 * workers read them all, samples what arrived and watches for silence.
 *
 * A worker owns a contiguous share of one flow's streams and drives them
 * with a poll loop of its own; it leaves when its flow's `stop` is set
 * (or, at a source, when each of its streams sent its share). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "core/clock.h"
#include "probe/tcp.h"

/* Calls per stream before looking at the others: keeps streams fair
 * without a poll() per message. */
#define BURST 16
/* A worker with nothing to do looks at its flow's stop flag this often. */
#define WAIT_MS 5
/* The control thread's period: a quarter of the shortest sample interval
 * being filled, within these bounds. Each wake takes a core from a worker
 * on a small machine (one stream between namespace hosts on 2 cores: 0.92x
 * iperf3 at a 2 ms bound, 0.97-0.98x at 10 ms), and intervals double as a
 * run goes on; a phase's end waits a tick at most, outside the timing. */
#define TICK_MIN_S 0.0002
#define TICK_MAX_S 0.010
/* A destination worker's own part of the landing buffer when the buffer
 * is large enough; else workers share it (the bytes are not looked at). */
#define RECV_SLICE_MIN (64u << 10)

struct phase_msg {
    uint32_t link;
    uint32_t phase;
    uint64_t bytes;
};

struct worker {
    pthread_t tid;
    int started;
    struct probe_tcp_flow *f;
    const struct probe_size_spec *r;
    const atomic_int *stop; /* its flow's */
    uint64_t quota;         /* source: bytes per stream; 0 = until stop_at */
    double stop_at;
    int first, count;       /* its streams: f->fds[first .. first+count) */
    char *rbuf;             /* destination: where its reads land */
    size_t rlen;
    /* source, per stream index */
    uint64_t sent[PROBE_STREAMS_MAX], offset[PROBE_STREAMS_MAX];
    int sdone[PROBE_STREAMS_MAX];
    /* destination; t_first and first_bytes are written before got_first */
    atomic_uint_fast64_t received;
    uint64_t first_bytes;
    double t_first, t_last;
    atomic_int got_first;
    _Atomic double last_progress;
    atomic_int finished;
    enum fb_status st;
    struct fb_err err;
};

struct flow_ctl {
    struct probe_tcp_flow *f;
    struct worker *w;
    int nw;
    atomic_int stop;
    int phase;
    struct phase_msg totals, ack;
    MPI_Request totals_req, ack_req;
    int totals_sent, totals_known, ack_sent, done;
    struct probe_samples *samples; /* destination of a timed phase, else NULL */
    int sampling;
    uint64_t sampled;              /* bytes handed to the samples so far */
    double last_progress;
    double progress_told; /* the flow's progress the spec's hook last heard of */
};

/* ---- workers ------------------------------------------------------------- */

static enum fb_status sock_error(const struct worker *w, const char *op, struct fb_err *err)
{
    if (errno == 0)
        return fb_fail(err, FB_ERR_RUNTIME, "%s closed the connection of link %d",
                       w->f->peer_name, w->f->link);
    return fb_fail(err, FB_ERR_RUNTIME, "%s on link %d with %s failed: %s", op, w->f->link,
                   w->f->peer_name, strerror(errno));
}

/* Sends whole messages of r->size bytes; once time is up a stream finishes
 * the message it started and stops. */
static enum fb_status pump_send(struct worker *w, int k, int time_up, double now)
{
    const struct probe_size_spec *r = w->r;
    for (int i = 0; i < BURST && !w->sdone[k]; i++) {
        if ((w->quota && w->sent[k] == w->quota) || (time_up && w->offset[k] == 0)) {
            w->sdone[k] = 1;
            break;
        }
        ssize_t n = send(w->f->fds[k], w->f->buf + (size_t)k * r->stride + w->offset[k],
                         r->size - w->offset[k], MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            break;
        if (n <= 0)
            return sock_error(w, "send", &w->err);
        w->sent[k] += (uint64_t)n;
        w->offset[k] = (w->offset[k] + (uint64_t)n) % r->size;
        atomic_store_explicit(&w->last_progress, now, memory_order_relaxed);
    }
    return FB_OK;
}

/* Each read is stamped when it returned: a blocking read may have waited. */
static enum fb_status pump_recv(struct worker *w, int k)
{
    for (int i = 0; i < BURST; i++) {
        ssize_t n = recv(w->f->fds[k], w->rbuf, w->rlen, 0);
        double now = fb_now();
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            break;
        if (n <= 0) {
            if (n == 0)
                errno = 0;
            return sock_error(w, "recv", &w->err);
        }
        if (!atomic_load_explicit(&w->got_first, memory_order_relaxed)) {
            /* Bytes of the first read arrived before the clock started. */
            w->t_first = now;
            w->first_bytes = (uint64_t)n;
            atomic_store_explicit(&w->got_first, 1, memory_order_release);
        }
        w->t_last = now;
        atomic_fetch_add_explicit(&w->received, (uint64_t)n, memory_order_relaxed);
        atomic_store_explicit(&w->last_progress, now, memory_order_relaxed);
    }
    return FB_OK;
}

/* The streams that still have work; 0 once a source's are all done. */
static int worker_pollset(const struct worker *w, struct pollfd *p, int *stream)
{
    int m = 0;
    for (int k = w->first; k < w->first + w->count; k++) {
        if (w->f->sending && w->sdone[k])
            continue;
        p[m] = (struct pollfd){.fd = w->f->fds[k], .events = w->f->sending ? POLLOUT : POLLIN};
        stream[m++] = k;
    }
    return m;
}

/* Sets a socket blocking with WAIT_MS timeouts, or back to non-blocking. */
static void set_blocking(int fd, int on)
{
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, on ? fl & ~O_NONBLOCK : fl | O_NONBLOCK);
    struct timeval tv = {0, on ? WAIT_MS * 1000 : 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

/* A worker with one stream waits inside send() and recv() instead of in
 * poll(): no poll() and no EAGAIN call per wait. The timeouts bring it
 * back to look at the stop flag. */
static void run_single(struct worker *w)
{
    int k = w->first, fd = w->f->fds[k];
    set_blocking(fd, 1);
    while (w->st == FB_OK && !atomic_load_explicit(w->stop, memory_order_acquire)) {
        double now = fb_now();
        if (w->f->sending) {
            w->st = pump_send(w, k, now >= w->stop_at, now);
            if (w->sdone[k])
                break;
        } else {
            w->st = pump_recv(w, k);
        }
    }
    set_blocking(fd, 0);
}

static void run_polled(struct worker *w)
{
    struct pollfd p[PROBE_STREAMS_MAX];
    int stream[PROBE_STREAMS_MAX];
    while (w->st == FB_OK && !atomic_load_explicit(w->stop, memory_order_acquire)) {
        int m = worker_pollset(w, p, stream);
        if (m == 0)
            break;
        int rc = poll(p, (nfds_t)m, WAIT_MS);
        if (rc < 0 && errno != EINTR) {
            w->st = fb_fail(&w->err, FB_ERR_RUNTIME, "poll() failed: %s", strerror(errno));
            break;
        }
        double now = fb_now();
        int time_up = now >= w->stop_at;
        for (int j = 0; j < m && w->st == FB_OK; j++) {
            if (w->f->sending && (p[j].revents || time_up))
                w->st = pump_send(w, stream[j], time_up, now);
            else if (!w->f->sending && p[j].revents)
                w->st = pump_recv(w, stream[j]);
        }
    }
}

static void *run_worker(void *arg)
{
    struct worker *w = arg;
    if (w->count == 1)
        run_single(w);
    else
        run_polled(w);
    atomic_store_explicit(&w->finished, 1, memory_order_release);
    return NULL;
}

/* ---- the control thread -------------------------------------------------- */

static int workers_finished(const struct flow_ctl *x)
{
    for (int i = 0; i < x->nw; i++)
        if (!atomic_load_explicit(&x->w[i].finished, memory_order_acquire))
            return 0;
    return 1;
}

static uint64_t flow_received(const struct flow_ctl *x)
{
    uint64_t sum = 0;
    for (int i = 0; i < x->nw; i++)
        sum += atomic_load_explicit(&x->w[i].received, memory_order_relaxed);
    return sum;
}

/* The worker whose first read came first: its bytes are not timed. */
static const struct worker *earliest(const struct flow_ctl *x)
{
    const struct worker *best = NULL;
    for (int i = 0; i < x->nw; i++) {
        const struct worker *w = &x->w[i];
        if (atomic_load_explicit(&w->got_first, memory_order_acquire) &&
            (best == NULL || w->t_first < best->t_first))
            best = w;
    }
    return best;
}

static double flow_last_progress(const struct flow_ctl *x)
{
    double last = x->last_progress;
    for (int i = 0; i < x->nw; i++) {
        double t = atomic_load_explicit(&x->w[i].last_progress, memory_order_relaxed);
        if (t > last)
            last = t;
    }
    return last;
}

/* Hands the bytes read since the last tick to the samples. */
static void sample(struct flow_ctl *x, double now)
{
    if (x->samples == NULL)
        return;
    if (!x->sampling) {
        const struct worker *w = earliest(x);
        if (w == NULL)
            return;
        probe_samples_init(x->samples, w->t_first, x->samples->interval);
        x->sampled = w->first_bytes;
        x->sampling = 1;
    }
    uint64_t got = flow_received(x);
    if (got > x->sampled)
        probe_samples_add(x->samples, now, (double)(got - x->sampled));
    x->sampled = got;
}

static enum fb_status flow_failed(const struct flow_ctl *x, struct fb_err *err)
{
    for (int i = 0; i < x->nw; i++)
        if (atomic_load_explicit(&x->w[i].finished, memory_order_acquire) && x->w[i].st != FB_OK) {
            *err = x->w[i].err;
            return err->code;
        }
    return FB_OK;
}

/* Stops a flow's workers and waits until they left their loops. */
static void stop_workers(struct flow_ctl *x)
{
    atomic_store_explicit(&x->stop, 1, memory_order_release);
    for (int i = 0; i < x->nw; i++)
        if (x->w[i].started) {
            pthread_join(x->w[i].tid, NULL);
            x->w[i].started = 0;
        }
}

static void send_totals(const struct probe_ctx *c, struct flow_ctl *x, double now)
{
    uint64_t total = 0;
    for (int i = 0; i < x->nw; i++)
        for (int k = x->w[i].first; k < x->w[i].first + x->w[i].count; k++)
            total += x->w[i].sent[k];
    x->totals = (struct phase_msg){(uint32_t)x->f->link, (uint32_t)x->phase, total};
    MPI_Isend(&x->totals, sizeof x->totals, MPI_BYTE, x->f->peer, PROBE_TAG_TOTALS, c->comm,
              &x->totals_req);
    x->totals_sent = 1;
    x->last_progress = now;
}

/* MPI side of a phase: the source announces its total once its workers are
 * done and finishes on the ack; the destination stops its workers once they
 * read the announced total, then acknowledges it (so no worker reads bytes
 * of the next phase). */
static enum fb_status advance_control(const struct probe_ctx *c, struct flow_ctl *x, double now,
                                      struct fb_err *err)
{
    int flag = 0;
    if (x->f->sending) {
        if (!x->totals_sent && workers_finished(x)) {
            stop_workers(x);
            send_totals(c, x, now);
        }
        if (x->totals_sent) {
            MPI_Test(&x->totals_req, &flag, MPI_STATUS_IGNORE);
            int acked = 0;
            MPI_Test(&x->ack_req, &acked, MPI_STATUS_IGNORE);
            if (acked) {
                MPI_Wait(&x->totals_req, MPI_STATUS_IGNORE); /* the ack proves it arrived */
                x->done = 1;
            }
        }
        return FB_OK;
    }
    if (!x->totals_known) {
        MPI_Test(&x->totals_req, &flag, MPI_STATUS_IGNORE);
        x->totals_known = flag;
        if (flag)
            x->last_progress = now;
    }
    uint64_t got = flow_received(x);
    if (x->totals_known && got > x->totals.bytes)
        return fb_fail(err, FB_ERR_INTERNAL, "link %d: read %llu bytes but %s sent %llu",
                       x->f->link, (unsigned long long)got, x->f->peer_name,
                       (unsigned long long)x->totals.bytes);
    if (x->totals_known && !x->ack_sent && got == x->totals.bytes) {
        stop_workers(x);
        sample(x, now);
        x->ack = (struct phase_msg){(uint32_t)x->f->link, (uint32_t)x->phase, got};
        MPI_Isend(&x->ack, sizeof x->ack, MPI_BYTE, x->f->peer, PROBE_TAG_ACK, c->comm, &x->ack_req);
        x->ack_sent = 1;
    }
    if (x->ack_sent) {
        MPI_Test(&x->ack_req, &flag, MPI_STATUS_IGNORE);
        x->done = flag;
    }
    return FB_OK;
}

/* Splits the flow's streams over `threads` workers, the first ones taking
 * one more when they do not divide. */
static void plan_workers(struct flow_ctl *x, int threads, const struct probe_size_spec *r,
                         uint64_t quota, double stop_at)
{
    struct probe_tcp_flow *f = x->f;
    int nw = threads < f->nfd ? threads : f->nfd;
    size_t slice = f->buf_len / (size_t)nw;
    for (int i = 0, k = 0; i < nw; i++) {
        struct worker *w = &x->w[i];
        memset(w, 0, sizeof *w);
        w->f = f;
        w->r = r;
        w->stop = &x->stop;
        w->quota = quota;
        w->stop_at = stop_at;
        w->first = k;
        w->count = f->nfd / nw + (i < f->nfd % nw);
        k += w->count;
        w->rbuf = slice >= RECV_SLICE_MIN ? f->buf + (size_t)i * slice : f->buf;
        w->rlen = slice >= RECV_SLICE_MIN ? slice : f->buf_len;
        if (w->rlen > r->size) /* a message per read keeps the landing area in cache */
            w->rlen = r->size;
        w->st = FB_OK;
    }
    x->nw = nw;
}

static enum fb_status begin_phase(const struct probe_ctx *c, struct flow_ctl *x, int phase,
                                  int threads, const struct probe_size_spec *r, uint64_t quota,
                                  double stop_at, struct probe_samples *samples, double now,
                                  struct fb_err *err)
{
    x->phase = phase;
    x->samples = samples;
    x->last_progress = now;
    atomic_store(&x->stop, 0);
    if (x->f->sending)
        MPI_Irecv(&x->ack, sizeof x->ack, MPI_BYTE, x->f->peer, PROBE_TAG_ACK, c->comm, &x->ack_req);
    else
        MPI_Irecv(&x->totals, sizeof x->totals, MPI_BYTE, x->f->peer, PROBE_TAG_TOTALS, c->comm,
                  &x->totals_req);
    plan_workers(x, threads, r, quota, stop_at);
    for (int i = 0; i < x->nw; i++) {
        atomic_store(&x->w[i].last_progress, now);
        int rc = pthread_create(&x->w[i].tid, NULL, run_worker, &x->w[i]);
        if (rc != 0)
            return fb_fail(err, FB_ERR_RUNTIME, "cannot start a thread for link %d: %s; use fewer "
                           "--threads or streams", x->f->link, strerror(rc));
        x->w[i].started = 1;
    }
    return FB_OK;
}

/* One control step for every flow: 1 once all are done. */
static int control_step(const struct probe_ctx *c, struct flow_ctl *x, int n,
                        const struct probe_size_spec *r, enum fb_status *st, struct fb_err *err)
{
    double now = fb_now();
    int all_done = 1;
    for (int i = 0; i < n && *st == FB_OK; i++) {
        if (x[i].done)
            continue;
        *st = flow_failed(&x[i], err);
        if (*st == FB_OK)
            sample(&x[i], now);
        if (*st == FB_OK)
            *st = advance_control(c, &x[i], now, err);
        if (*st == FB_OK && flow_last_progress(&x[i]) > x[i].progress_told) {
            x[i].progress_told = flow_last_progress(&x[i]);
            probe_size_spec_progress(r);
        }
        if (*st == FB_OK && !x[i].done) {
            all_done = 0;
            if (now - flow_last_progress(&x[i]) > r->timeout)
                *st = fb_fail(err, FB_ERR_TIMEOUT,
                              "%s stopped %s for %.0f s on link %d; check that host and the path "
                              "between, or raise --timeout", x[i].f->peer_name,
                              x[i].f->sending ? "accepting data" : "sending data", r->timeout,
                              x[i].f->link);
        }
    }
    if (*st == FB_OK && !all_done)
        *st = probe_stopped(r->stop, err);
    return all_done;
}

static double control_tick(const struct flow_ctl *x, int n)
{
    double tick = TICK_MAX_S;
    for (int i = 0; i < n; i++)
        if (x[i].samples != NULL && !x[i].done && x[i].samples->interval / 4 < tick)
            tick = x[i].samples->interval / 4;
    return tick < TICK_MIN_S ? TICK_MIN_S : tick;
}

static enum fb_status run_phase(const struct probe_ctx *c, struct flow_ctl *x, int n, int threads,
                                const struct probe_size_spec *r, int phase, uint64_t quota,
                                double seconds, struct probe_measure *out, struct fb_err *err)
{
    double start = fb_now();
    double stop_at = quota ? INFINITY : start + seconds;
    enum fb_status st = FB_OK;
    for (int i = 0; i < n; i++) {
        struct probe_samples *smp = NULL;
        x[i].done = x[i].totals_sent = x[i].totals_known = x[i].ack_sent = x[i].sampling = 0;
        x[i].sampled = 0;
        if (out != NULL && !x[i].f->sending) {
            smp = &out[i].samples;
            probe_samples_init(smp, start, r->interval);
        }
        if (st == FB_OK)
            st = begin_phase(c, &x[i], phase, threads, r, quota, stop_at, smp, start, err);
        else
            x[i].nw = 0, x[i].done = 1;
    }
    while (st == FB_OK && !control_step(c, x, n, r, &st, err))
        nanosleep(&(struct timespec){0, (long)(control_tick(x, n) * 1e9)}, NULL);
    for (int i = 0; i < n; i++)
        stop_workers(&x[i]);
    return st;
}

static void finish_measure(const struct flow_ctl *x, struct probe_measure *m, uint64_t size)
{
    const struct worker *first = earliest(x);
    uint64_t got = flow_received(x), skipped = first != NULL ? first->first_bytes : 0;
    double t_first = first != NULL ? first->t_first : 0, t_last = t_first;
    for (int i = 0; i < x->nw; i++)
        if (atomic_load(&x->w[i].got_first) && x->w[i].t_last > t_last)
            t_last = x->w[i].t_last;
    probe_measure_close(m, (double)(got - skipped), (got - skipped) / size, t_first, t_last);
}

enum fb_status probe_tcp_bw(const struct probe_ctx *c, struct probe_tcp_flow *flows, int n,
                            int threads, const struct probe_size_spec *r,
                            struct probe_measure *out, struct fb_err *err)
{
    struct flow_ctl *x = calloc((size_t)n, sizeof *x);
    struct worker *pool = calloc((size_t)n * PROBE_STREAMS_MAX, sizeof *pool);
    if (x == NULL || pool == NULL) {
        free(x), free(pool);
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    }
    if (threads <= 0)
        threads = PROBE_STREAMS_MAX;
    for (int i = 0; i < n; i++) {
        x[i].f = &flows[i];
        x[i].w = &pool[(size_t)i * PROBE_STREAMS_MAX];
        probe_measure_open(&out[i], flows[i].link, r->size);
    }
    enum fb_status st = FB_OK;
    if (r->iters ? r->warmup > 0 : r->margin > 0)
        st = run_phase(c, x, n, threads, r, 0, (uint64_t)r->warmup * r->size, r->margin, NULL, err);
    if (st == FB_OK)
        st = run_phase(c, x, n, threads, r, 1, (uint64_t)r->iters * r->size, r->duration, out, err);
    for (int i = 0; i < n && st == FB_OK; i++)
        if (!flows[i].sending)
            finish_measure(&x[i], &out[i], r->size);
    free(pool);
    free(x);
    return st;
}
