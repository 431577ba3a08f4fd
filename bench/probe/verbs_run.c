/* The measurements: ib_write_bw-style streaming of RDMA WRITEs with CQ
 * moderation and post lists, and ib_write_lat-style ping-pong. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "probe/verbs_internal.h"

#define POST_LIST_MAX 64
#define POLL_BATCH 16
/* Latency sequence values cycle through 1..254 in the buffer's last byte;
 * 255 tells the responder a duration-mode run is over. */
#define LAT_SEQ_MAX 254
#define LAT_STOP 255

static enum fb_status completion_error(const struct probe_verbs_link *l, const struct ibv_wc *wc,
                                       struct fb_err *err)
{
    return fb_fail(err, FB_ERR_RUNTIME,
                   "RDMA WRITE from %s to %s failed: %s (status %d, vendor error 0x%x) on QP 0x%x",
                   l->dev->name, l->peer_name, ibv_wc_status_str(wc->status), (int)wc->status,
                   wc->vendor_err, wc->qp_num);
}

static enum fb_status silence(const struct probe_verbs_link *l, double timeout, const char *what,
                              struct fb_err *err)
{
    return fb_fail(err, FB_ERR_TIMEOUT,
                   "no %s from %s for %.0f s on %s; the peer or the path stopped answering "
                   "(check that host and the link), or raise --timeout",
                   what, l->peer_name, timeout, l->dev->name);
}

/* ---- bandwidth ---------------------------------------------------------- */

struct qp_state {
    uint64_t posted, completed;
    int unsignaled;
};

struct sender {
    struct probe_verbs_link *l;
    struct qp_state q[PROBE_QPS_MAX];
    uint64_t target;   /* writes per QP; 0 = until the phase's time is up */
    int flushing;      /* time is up: tails signaled, draining */
    int started;
    double t_first, t_last, last_progress;
    uint64_t messages;
    struct probe_samples *samples; /* NULL while warming up */
};

/* Posts `chain` writes on QP q, signaling every cq_mod-th and the last one
 * the QP will post, so every write is eventually accounted for. */
static enum fb_status post_chain(struct sender *s, int q, int chain, int force_last_signal,
                                 const struct probe_size_spec *r, struct fb_err *err)
{
    struct probe_verbs_link *l = s->l;
    struct qp_state *st = &s->q[q];
    struct ibv_sge sge[POST_LIST_MAX];
    struct ibv_send_wr wr[POST_LIST_MAX], *bad = NULL;
    for (int j = 0; j < chain; j++) {
        int last = force_last_signal ? j == chain - 1
                                     : (s->target && st->posted + (uint64_t)j + 1 == s->target);
        st->unsignaled++;
        int signal = st->unsignaled == r->cq_mod || last;
        sge[j] = (struct ibv_sge){.addr = (uintptr_t)(l->local + (uint64_t)q * r->stride),
                                  .length = (uint32_t)r->size, .lkey = l->mr->lkey};
        wr[j] = (struct ibv_send_wr){
            .wr_id = ((uint64_t)st->unsignaled << 16) | (uint64_t)q,
            .sg_list = &sge[j],
            .num_sge = 1,
            .opcode = IBV_WR_RDMA_WRITE,
            .send_flags = signal ? IBV_SEND_SIGNALED : 0,
            .wr.rdma = {.remote_addr = l->remote_addr + (uint64_t)q * r->stride, .rkey = l->rkey},
            .next = j + 1 < chain ? &wr[j + 1] : NULL,
        };
        if (signal)
            st->unsignaled = 0;
    }
    if (!s->started) {
        s->started = 1;
        s->t_first = fb_now();
        if (s->samples != NULL)
            probe_samples_init(s->samples, s->t_first, r->interval);
    }
    int rc = ibv_post_send(l->qp[q], wr, &bad);
    if (rc != 0)
        return fb_fail(err, FB_ERR_RUNTIME, "ibv_post_send on QP 0x%x (%s) towards %s failed: %s",
                       l->qp[q]->qp_num, l->dev->name, l->peer_name, strerror(rc));
    st->posted += (uint64_t)chain;
    return FB_OK;
}

static enum fb_status post_more(struct sender *s, const struct probe_size_spec *r,
                                struct fb_err *err)
{
    for (int q = 0; q < s->l->nqp; q++) {
        struct qp_state *st = &s->q[q];
        for (;;) {
            uint64_t left = s->target ? s->target - st->posted : (uint64_t)r->post_list;
            uint64_t chain = left < (uint64_t)r->post_list ? left : (uint64_t)r->post_list;
            uint64_t room = (uint64_t)s->l->tx_depth - (st->posted - st->completed);
            if (chain == 0 || room < chain)
                break;
            if (post_chain(s, q, (int)chain, 0, r, err) != FB_OK)
                return err->code;
        }
    }
    return FB_OK;
}

/* Duration over: one more signaled write on every QP whose last writes
 * went unsignaled, so draining sees them complete. A full queue gets its
 * tail once a completion makes room (-t >= -Q + -l - 1 guarantees one is
 * pending). */
static enum fb_status flush_tails(struct sender *s, const struct probe_size_spec *r,
                                  struct fb_err *err)
{
    s->flushing = 1;
    for (int q = 0; q < s->l->nqp; q++) {
        const struct qp_state *st = &s->q[q];
        int room = st->posted - st->completed < (uint64_t)s->l->tx_depth;
        if (st->unsignaled > 0 && room && post_chain(s, q, 1, 1, r, err) != FB_OK)
            return err->code;
    }
    return FB_OK;
}

static enum fb_status reap(struct sender *s, const struct probe_size_spec *r, struct fb_err *err)
{
    struct ibv_wc wc[POLL_BATCH];
    int n = ibv_poll_cq(s->l->cq, POLL_BATCH, wc);
    if (n < 0)
        return fb_fail(err, FB_ERR_RUNTIME, "ibv_poll_cq on %s failed", s->l->dev->name);
    if (n == 0)
        return FB_OK;
    uint64_t done = 0;
    for (int i = 0; i < n; i++) {
        if (wc[i].status != IBV_WC_SUCCESS)
            return completion_error(s->l, &wc[i], err);
        uint64_t count = wc[i].wr_id >> 16;
        s->q[wc[i].wr_id & 0xffff].completed += count;
        done += count;
    }
    double now = fb_now();
    s->messages += done;
    s->t_last = s->last_progress = now;
    probe_size_spec_progress(r);
    if (s->samples != NULL)
        probe_samples_add(s->samples, now, (double)(done * r->size));
    return FB_OK;
}

static int sender_done(const struct sender *s)
{
    for (int q = 0; q < s->l->nqp; q++) {
        const struct qp_state *st = &s->q[q];
        if (s->target ? st->completed < s->target
                      : (!s->flushing || st->unsignaled > 0 || st->completed < st->posted))
            return 0;
    }
    return 1;
}

static enum fb_status run_phase(struct sender *s, int n, const struct probe_size_spec *r,
                                uint64_t target, double seconds, struct fb_err *err)
{
    double start = fb_now();
    for (int i = 0; i < n; i++) {
        memset(s[i].q, 0, sizeof s[i].q);
        s[i].target = target;
        s[i].flushing = s[i].started = 0;
        s[i].messages = 0;
        s[i].t_first = s[i].t_last = s[i].last_progress = start;
    }
    double stop_at = INFINITY;
    for (unsigned long spin = 0;; spin++) {
        int all_done = 1;
        double now = fb_now();
        for (int i = 0; i < n; i++) {
            struct sender *x = &s[i];
            if (!target && now >= stop_at && flush_tails(x, r, err) != FB_OK)
                return err->code;
            if (!x->flushing && post_more(x, r, err) != FB_OK)
                return err->code;
            /* The measured window runs from the first post: time it from
             * there, so a duration run measures at least its duration. */
            if (!target && stop_at == INFINITY && x->started)
                stop_at = x->t_first + seconds;
            if (reap(x, r, err) != FB_OK)
                return err->code;
            if (sender_done(x))
                continue;
            all_done = 0;
            double allowed = probe_silence_allowed(
                r, (double)x->messages * (double)r->size, x->last_progress - x->t_first,
                (double)r->cq_mod * (double)r->size * x->l->nqp);
            if (now - x->last_progress > allowed)
                return silence(x->l, allowed, "RDMA completion", err);
        }
        if (all_done)
            return FB_OK;
        if ((spin & 1023) == 0 && probe_stopped(r->stop, err) != FB_OK)
            return err->code;
    }
}

enum fb_status probe_verbs_write_bw(struct probe_verbs_link **links, int n,
                                    const struct probe_size_spec *r, struct probe_measure *out,
                                    struct fb_err *err)
{
    struct sender *s = calloc((size_t)n, sizeof *s);
    if (s == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    for (int i = 0; i < n; i++)
        s[i].l = links[i];
    uint64_t warm = r->iters ? (uint64_t)r->warmup : 0;
    enum fb_status st = FB_OK;
    if (warm > 0 || (!r->iters && r->margin > 0))
        st = run_phase(s, n, r, warm, r->margin, err);
    for (int i = 0; i < n; i++) {
        probe_measure_open(&out[i], links[i]->link_id, r->size);
        s[i].samples = &out[i].samples; /* initialised at the first timed post */
    }
    if (st == FB_OK)
        st = run_phase(s, n, r, (uint64_t)r->iters, r->duration, err);
    for (int i = 0; i < n && st == FB_OK; i++)
        probe_measure_close(&out[i], (double)s[i].messages * (double)r->size, s[i].messages, s[i].t_first,
                            s[i].t_last);
    free(s);
    return st;
}

/* ---- latency ------------------------------------------------------------ */

static enum fb_status post_one(struct probe_verbs_link *l, const struct probe_size_spec *r,
                               uint8_t v, struct fb_err *err)
{
    char *send = l->local + r->stride;
    send[r->size - 1] = (char)v;
    struct ibv_sge sge = {.addr = (uintptr_t)send, .length = (uint32_t)r->size, .lkey = l->mr->lkey};
    struct ibv_send_wr wr = {
        .sg_list = &sge,
        .num_sge = 1,
        .opcode = IBV_WR_RDMA_WRITE,
        .send_flags = IBV_SEND_SIGNALED | (r->size <= l->max_inline ? IBV_SEND_INLINE : 0),
        .wr.rdma = {.remote_addr = l->remote_addr, .rkey = l->rkey},
    }, *bad = NULL;
    int rc = ibv_post_send(l->qp[0], &wr, &bad);
    if (rc != 0)
        return fb_fail(err, FB_ERR_RUNTIME, "ibv_post_send on QP 0x%x (%s) towards %s failed: %s",
                       l->qp[0]->qp_num, l->dev->name, l->peer_name, strerror(rc));
    return FB_OK;
}

static enum fb_status reap_one(struct probe_verbs_link *l, const struct probe_size_spec *r,
                               struct fb_err *err)
{
    struct ibv_wc wc;
    double since = fb_now();
    for (;;) {
        int n = ibv_poll_cq(l->cq, 1, &wc);
        if (n < 0)
            return fb_fail(err, FB_ERR_RUNTIME, "ibv_poll_cq on %s failed", l->dev->name);
        if (n == 1)
            return wc.status == IBV_WC_SUCCESS ? FB_OK : completion_error(l, &wc, err);
        if (fb_now() - since > r->timeout)
            return silence(l, r->timeout, "RDMA completion", err);
    }
}

/* Waits for the peer's write to land: the last byte turns to v (or to the
 * stop marker when *stop_seen may be set). */
static enum fb_status await_byte(struct probe_verbs_link *l, const struct probe_size_spec *r,
                                 uint8_t v, int *stop_seen, struct fb_err *err)
{
    volatile uint8_t *flag = (volatile uint8_t *)(l->local + r->size - 1);
    double since = fb_now();
    for (unsigned long spin = 0;; spin++) {
        uint8_t now_v = *flag;
        if (now_v == v)
            return FB_OK;
        if (stop_seen != NULL && now_v == LAT_STOP) {
            *stop_seen = 1;
            return FB_OK;
        }
        if ((spin & 4095) == 0) {
            if (fb_now() - since > r->timeout)
                return silence(l, r->timeout, "RDMA write", err);
            if (probe_stopped(r->stop, err) != FB_OK)
                return err->code;
        }
    }
}

static uint8_t next_seq(uint8_t v) { return v >= LAT_SEQ_MAX ? 1 : (uint8_t)(v + 1); }

static enum fb_status lat_initiator(struct probe_verbs_link *l, const struct probe_size_spec *r,
                                    struct probe_rtt_log *log, double *t_first, double *t_last,
                                    struct fb_err *err)
{
    uint8_t v = 0;
    double stop_at = INFINITY;
    for (long i = 0; r->iters == 0 || i < r->warmup + r->iters; i++) {
        if (i == r->warmup) {
            *t_first = fb_now();
            if (r->iters == 0)
                stop_at = *t_first + r->duration;
        }
        v = next_seq(v);
        double t0 = fb_now();
        if (t0 >= stop_at)
            break;
        if (post_one(l, r, v, err) != FB_OK || await_byte(l, r, v, NULL, err) != FB_OK ||
            reap_one(l, r, err) != FB_OK)
            return err->code;
        *t_last = fb_now();
        if (i >= r->warmup && probe_rtt_push(log, *t_last - t0) != 0)
            return fb_fail(err, FB_ERR_MEMORY, "out of memory for latency samples; use -n");
    }
    if (r->iters == 0 && (post_one(l, r, LAT_STOP, err) != FB_OK || reap_one(l, r, err) != FB_OK))
        return err->code;
    return FB_OK;
}

static enum fb_status lat_responder(struct probe_verbs_link *l, const struct probe_size_spec *r,
                                    struct fb_err *err)
{
    uint8_t v = 0;
    for (long i = 0; r->iters == 0 || i < r->warmup + r->iters; i++) {
        int stop_seen = 0;
        v = next_seq(v);
        if (await_byte(l, r, v, r->iters == 0 ? &stop_seen : NULL, err) != FB_OK)
            return err->code;
        if (stop_seen)
            break;
        if (post_one(l, r, v, err) != FB_OK || reap_one(l, r, err) != FB_OK)
            return err->code;
    }
    return FB_OK;
}

enum fb_status probe_verbs_write_lat(struct probe_verbs_link *l, const struct probe_size_spec *r,
                                     int initiator, struct probe_measure *out, struct fb_err *err)
{
    memset(out, 0, sizeof *out);
    out->link = l->link_id;
    out->size = r->size;
    if (!initiator)
        return lat_responder(l, r, err);
    struct probe_rtt_log log = {0};
    double t_first = fb_now(), t_last = t_first;
    enum fb_status st = lat_initiator(l, r, &log, &t_first, &t_last, err);
    if (st == FB_OK)
        probe_latency_finish(out, &log, r->size, t_first, t_last, r->interval);
    probe_rtt_free(&log);
    return st;
}
