/* TCP measurements: one poll loop drives every stream of every flow of this
 * rank (a ring rank sends and receives at once), like iperf3's single
 * thread; end-of-phase totals and acknowledgements go over MPI. */
#include <errno.h>
#include <math.h>
#include <poll.h>
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

struct phase_msg {
    uint32_t link;
    uint32_t phase;
    uint64_t bytes;
};

struct stream {
    uint64_t sent;   /* sender: bytes this phase */
    uint64_t offset; /* sender: position in the current message */
    int done;
};

struct flow_state {
    struct probe_tcp_flow *f;
    struct stream s[PROBE_STREAMS_MAX];
    uint64_t quota;          /* sender: bytes per stream; 0 = until time is up */
    int phase;
    /* sender: totals out, ack in */
    struct phase_msg totals, ack;
    MPI_Request totals_req, ack_req;
    int totals_sent;
    /* receiver: totals in, ack out */
    uint64_t received, first_bytes;
    int got_first, totals_known, ack_sent;
    double t_first, t_last;
    struct probe_samples *samples;
    double last_progress;
    int done;
};

static enum fb_status silent(const struct flow_state *x, double timeout, struct fb_err *err)
{
    return fb_fail(err, FB_ERR_TIMEOUT,
                   "%s stopped %s for %.0f s on link %d; check that host and the path between, "
                   "or raise --timeout",
                   x->f->peer_name, x->f->sending ? "accepting data" : "sending data", timeout,
                   x->f->link);
}

static enum fb_status sock_error(const struct flow_state *x, const char *op, struct fb_err *err)
{
    if (errno == 0)
        return fb_fail(err, FB_ERR_RUNTIME, "%s closed the connection of link %d", x->f->peer_name,
                       x->f->link);
    return fb_fail(err, FB_ERR_RUNTIME, "%s on link %d with %s failed: %s", op, x->f->link,
                   x->f->peer_name, strerror(errno));
}

/* Sends whole messages of r->size bytes; once time is up a stream finishes
 * the message it started and stops. */
static enum fb_status pump_send(struct flow_state *x, int k, const struct probe_size_spec *r,
                                int time_up, double now, struct fb_err *err)
{
    struct stream *st = &x->s[k];
    for (int i = 0; i < BURST && !st->done; i++) {
        if ((x->quota && st->sent == x->quota) || (time_up && st->offset == 0)) {
            st->done = 1;
            break;
        }
        ssize_t n = send(x->f->fds[k], x->f->buf + (size_t)k * r->stride + st->offset,
                         r->size - st->offset, MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            break;
        if (n <= 0)
            return sock_error(x, "send", err);
        st->sent += (uint64_t)n;
        st->offset = (st->offset + (uint64_t)n) % r->size;
        x->last_progress = now;
    }
    return FB_OK;
}

static enum fb_status pump_recv(struct flow_state *x, int k, double now, struct fb_err *err)
{
    for (int i = 0; i < BURST; i++) {
        ssize_t n = recv(x->f->fds[k], x->f->buf, x->f->buf_len, 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            break;
        if (n <= 0) {
            if (n == 0)
                errno = 0;
            return sock_error(x, "recv", err);
        }
        if (!x->got_first) {
            /* Bytes of the first read arrived before the clock started. */
            x->got_first = 1;
            x->t_first = now;
            x->first_bytes = (uint64_t)n;
            if (x->samples != NULL)
                probe_samples_init(x->samples, now, x->samples->interval);
        } else if (x->samples != NULL) {
            probe_samples_add(x->samples, now, (double)n);
        }
        x->received += (uint64_t)n;
        x->t_last = x->last_progress = now;
    }
    return FB_OK;
}

static int senders_done(const struct flow_state *x)
{
    for (int k = 0; k < x->f->nfd; k++)
        if (!x->s[k].done)
            return 0;
    return 1;
}

/* MPI side of a phase: the sender announces its total once its streams are
 * done and finishes on the ack; the receiver finishes once it read the
 * announced total and acknowledged it. */
static enum fb_status advance_control(const struct probe_ctx *c, struct flow_state *x, double now,
                                      struct fb_err *err)
{
    int flag = 0;
    if (x->f->sending) {
        if (!x->totals_sent && senders_done(x)) {
            uint64_t total = 0;
            for (int k = 0; k < x->f->nfd; k++)
                total += x->s[k].sent;
            x->totals = (struct phase_msg){(uint32_t)x->f->link, (uint32_t)x->phase, total};
            MPI_Isend(&x->totals, sizeof x->totals, MPI_BYTE, x->f->peer, PROBE_TAG_TOTALS, c->comm,
                      &x->totals_req);
            x->totals_sent = 1;
            x->last_progress = now;
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
    if (x->totals_known && x->received > x->totals.bytes)
        return fb_fail(err, FB_ERR_INTERNAL, "link %d: read %llu bytes but %s sent %llu",
                       x->f->link, (unsigned long long)x->received, x->f->peer_name,
                       (unsigned long long)x->totals.bytes);
    if (x->totals_known && !x->ack_sent && x->received == x->totals.bytes) {
        x->ack = (struct phase_msg){(uint32_t)x->f->link, (uint32_t)x->phase, x->received};
        MPI_Isend(&x->ack, sizeof x->ack, MPI_BYTE, x->f->peer, PROBE_TAG_ACK, c->comm, &x->ack_req);
        x->ack_sent = 1;
    }
    if (x->ack_sent) {
        MPI_Test(&x->ack_req, &flag, MPI_STATUS_IGNORE);
        x->done = flag;
    }
    return FB_OK;
}

static void begin_phase(const struct probe_ctx *c, struct flow_state *x, int phase, uint64_t quota,
                        struct probe_samples *samples, double now)
{
    struct probe_tcp_flow *f = x->f;
    memset(x, 0, sizeof *x);
    x->f = f;
    x->phase = phase;
    x->quota = quota;
    x->samples = samples;
    x->last_progress = now;
    if (f->sending)
        MPI_Irecv(&x->ack, sizeof x->ack, MPI_BYTE, f->peer, PROBE_TAG_ACK, c->comm, &x->ack_req);
    else
        MPI_Irecv(&x->totals, sizeof x->totals, MPI_BYTE, f->peer, PROBE_TAG_TOTALS, c->comm,
                  &x->totals_req);
}

/* Poll set: streams that still have work. */
static int build_pollset(struct flow_state *x, int n, struct pollfd *p, int *owner, int *stream)
{
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (x[i].done)
            continue;
        for (int k = 0; k < x[i].f->nfd; k++) {
            if (x[i].f->sending && x[i].s[k].done)
                continue;
            p[m] = (struct pollfd){.fd = x[i].f->fds[k], .events = x[i].f->sending ? POLLOUT : POLLIN};
            owner[m] = i;
            stream[m] = k;
            m++;
        }
    }
    return m;
}

static enum fb_status run_phase(const struct probe_ctx *c, struct flow_state *x, int n,
                                const struct probe_size_spec *r, int phase, uint64_t quota,
                                double seconds, struct probe_measure *out, struct fb_err *err)
{
    int cap = n * PROBE_STREAMS_MAX;
    struct pollfd *p = malloc((size_t)cap * sizeof *p);
    int *owner = malloc((size_t)cap * sizeof *owner), *stream = malloc((size_t)cap * sizeof *stream);
    if (p == NULL || owner == NULL || stream == NULL) {
        free(p), free(owner), free(stream);
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    }
    double start = fb_now();
    for (int i = 0; i < n; i++) {
        struct probe_samples *smp = NULL;
        if (out != NULL && !x[i].f->sending) {
            smp = &out[i].samples;
            probe_samples_init(smp, start, r->interval);
        }
        begin_phase(c, &x[i], phase, quota, smp, start);
    }
    double stop_at = quota ? INFINITY : start + seconds;
    enum fb_status st = FB_OK;
    for (;;) {
        int m = build_pollset(x, n, p, owner, stream);
        int rc = m ? poll(p, (nfds_t)m, 1) : 0;
        if (m == 0) {
            /* Only MPI messages awaited: do not spin a core away from a peer. */
            struct timespec ts = {0, 50000};
            nanosleep(&ts, NULL);
        }
        if (rc < 0 && errno != EINTR) {
            st = fb_fail(err, FB_ERR_RUNTIME, "poll() failed: %s", strerror(errno));
            break;
        }
        double now = fb_now();
        int time_up = now >= stop_at;
        for (int j = 0; j < m && st == FB_OK; j++) {
            struct flow_state *y = &x[owner[j]];
            if (y->f->sending && (p[j].revents || time_up))
                st = pump_send(y, stream[j], r, time_up, now, err);
            else if (!y->f->sending && p[j].revents)
                st = pump_recv(y, stream[j], now, err);
        }
        int all_done = 1;
        for (int i = 0; i < n && st == FB_OK; i++) {
            st = advance_control(c, &x[i], now, err);
            if (st == FB_OK && !x[i].done) {
                all_done = 0;
                if (now - x[i].last_progress > r->timeout)
                    st = silent(&x[i], r->timeout, err);
            }
        }
        if (st == FB_OK && !all_done)
            st = probe_stopped(r->stop, err);
        if (st != FB_OK || all_done)
            break;
    }
    free(p), free(owner), free(stream);
    return st;
}

enum fb_status probe_tcp_bw(const struct probe_ctx *c, struct probe_tcp_flow *flows, int n,
                            const struct probe_size_spec *r, struct probe_measure *out,
                            struct fb_err *err)
{
    struct flow_state *x = calloc((size_t)n, sizeof *x);
    if (x == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    for (int i = 0; i < n; i++) {
        x[i].f = &flows[i];
        memset(&out[i], 0, sizeof out[i]);
        out[i].link = flows[i].link;
        out[i].size = r->size;
    }
    enum fb_status st = FB_OK;
    if (r->iters ? r->warmup > 0 : r->margin > 0)
        st = run_phase(c, x, n, r, 0, (uint64_t)r->warmup * r->size, r->margin, NULL, err);
    if (st == FB_OK)
        st = run_phase(c, x, n, r, 1, (uint64_t)r->iters * r->size, r->duration, out, err);
    for (int i = 0; i < n && st == FB_OK; i++) {
        if (flows[i].sending)
            continue;
        struct probe_measure *m = &out[i];
        m->bytes = (double)(x[i].received - x[i].first_bytes);
        m->messages = (x[i].received - x[i].first_bytes) / r->size;
        m->seconds = x[i].t_last - x[i].t_first;
        probe_samples_finish(&m->samples, x[i].t_last);
    }
    free(x);
    return st;
}

/* ---- latency ------------------------------------------------------------ */

/* First byte of a ping: 0 for a measured one, 1 ends a duration run. */
enum { PING = 0, STOP = 1 };

static enum fb_status move_all(struct probe_tcp_flow *f, int writing, size_t len, double timeout,
                               const volatile sig_atomic_t *stop, struct fb_err *err)
{
    size_t done = 0;
    double last = fb_now();
    while (done < len) {
        ssize_t n = writing ? send(f->fds[0], f->buf + done, len - done, MSG_NOSIGNAL)
                            : recv(f->fds[0], f->buf + done, len - done, 0);
        if (n > 0) {
            done += (size_t)n;
            last = fb_now();
            continue;
        }
        if (n == 0)
            return fb_fail(err, FB_ERR_RUNTIME, "%s closed the connection of link %d",
                           f->peer_name, f->link);
        if (errno != EAGAIN && errno != EINTR)
            return fb_fail(err, FB_ERR_RUNTIME, "%s on link %d with %s failed: %s",
                           writing ? "send" : "recv", f->link, f->peer_name, strerror(errno));
        /* Busy polling like ib_write_lat; time checked now and then. */
        double now = fb_now();
        if (now - last > timeout)
            return fb_fail(err, FB_ERR_TIMEOUT,
                           "%s stopped answering for %.0f s on link %d; check that host or raise "
                           "--timeout", f->peer_name, timeout, f->link);
        enum fb_status st = probe_stopped(stop, err);
        if (st != FB_OK)
            return st;
    }
    return FB_OK;
}

enum fb_status probe_tcp_lat(struct probe_tcp_flow *f, const struct probe_size_spec *r,
                             int initiator, struct probe_measure *out, struct fb_err *err)
{
    memset(out, 0, sizeof *out);
    out->link = f->link;
    out->size = r->size;
    long total = r->iters ? r->warmup + r->iters : -1;
    struct probe_rtt_log log = {0};
    if (initiator && probe_rtt_reserve(&log, r->iters ? r->iters : 1 << 16) != 0)
        return fb_fail(err, FB_ERR_MEMORY, "out of memory for latency samples");
    double t_first = fb_now(), t_last = t_first, stop_at = INFINITY;
    enum fb_status st = FB_OK;
    for (long i = 0; st == FB_OK && (total < 0 || i < total); i++) {
        if (!initiator) {
            st = move_all(f, 0, r->size, r->timeout, r->stop, err);
            if (st == FB_OK && f->buf[0] == STOP)
                break;
            if (st == FB_OK)
                st = move_all(f, 1, r->size, r->timeout, r->stop, err);
            continue;
        }
        if (i == r->warmup) {
            t_first = fb_now();
            if (!r->iters)
                stop_at = t_first + r->duration;
        }
        double t0 = fb_now();
        if (t0 >= stop_at) {
            f->buf[0] = STOP;
            st = move_all(f, 1, r->size, r->timeout, r->stop, err);
            break;
        }
        f->buf[0] = PING;
        st = move_all(f, 1, r->size, r->timeout, r->stop, err);
        if (st == FB_OK)
            st = move_all(f, 0, r->size, r->timeout, r->stop, err);
        t_last = fb_now();
        if (st == FB_OK && i >= r->warmup && probe_rtt_push(&log, t_last - t0) != 0) {
            st = fb_fail(err, FB_ERR_MEMORY, "out of memory for latency samples; use -n");
            break;
        }
    }
    if (st == FB_OK && initiator)
        probe_latency_finish(out, &log, r->size, t_first, t_last, r->interval);
    probe_rtt_free(&log);
    return st;
}
