/* Endpoints of a link end and the RMA over them: fi_rma_bw-style
 * bandwidth with a window of operations in flight per endpoint, completed
 * through the CQ (streaming, one entry per operation) or a counter (a
 * window at a time), and write ping-pong latency. Providers with manual
 * progress move bytes only while someone reads their queues, so every wait
 * here polls the CQ, and passive ends are driven by probe_ofi_progress. */
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "probe/ofi_internal.h"

#define POLL_BATCH 16
/* Latency sequence values, as the verbs ping-pong: 1..254 in the last
 * byte, 255 ends a duration run. */
#define LAT_SEQ_MAX 254
#define LAT_STOP 255

static enum fb_status fi_failed(const struct probe_ofi_link *l, const char *call, int rc,
                                struct fb_err *err)
{
    return fb_fail(err, FB_ERR_RUNTIME, "%s on %s domain %s (towards %s) failed: %s (%d)", call,
                   l->dev->provider, l->dev->name, l->peer_name, fi_strerror(rc < 0 ? -rc : rc),
                   rc);
}

static const char *op_word(const struct probe_ofi_dev *d) { return d->op_read ? "read" : "write"; }

/* The CQ holds an error entry: name the operation, the peer and what the
 * provider says. */
static enum fb_status completion_error(const struct probe_ofi_link *l,
                                       const struct probe_ofi_lane *ln, struct fb_err *err)
{
    struct fi_cq_err_entry e;
    memset(&e, 0, sizeof e);
    char prov[160] = "";
    if (fi_cq_readerr(ln->cq, &e, 0) > 0 && e.prov_errno != 0)
        fi_cq_strerror(ln->cq, e.prov_errno, e.err_data, prov, sizeof prov);
    return fb_fail(err, FB_ERR_RUNTIME,
                   "RMA %s between %s (%s) and %s failed: %s (provider error %d%s%s); check the "
                   "peer and the path", op_word(l->dev), l->dev->name, l->dev->provider,
                   l->peer_name, fi_strerror(e.err), e.prov_errno, prov[0] ? ": " : "", prov);
}

static enum fb_status silence(const struct probe_ofi_link *l, double timeout, const char *what,
                              struct fb_err *err)
{
    return fb_fail(err, FB_ERR_TIMEOUT,
                   "no %s from %s for %.0f s on %s domain %s; the peer or the path stopped "
                   "answering (check that host and the link), or raise --timeout",
                   what, l->peer_name, timeout, l->dev->provider, l->dev->name);
}

/* ---- endpoints ---------------------------------------------------------- */

static uint64_t access_flags(const struct probe_ofi_dev *d)
{
    return d->op_read ? FI_READ | FI_REMOTE_READ : FI_WRITE | FI_REMOTE_WRITE;
}

static enum fb_status open_queues(struct probe_ofi_link *l, struct probe_ofi_lane *ln,
                                  struct fb_err *err)
{
    struct probe_ofi_dev *d = l->dev;
    struct fi_av_attr av = {.type = d->info->domain_attr->av_type, .count = 1};
    struct fi_cq_attr cq = {.format = FI_CQ_FORMAT_CONTEXT, .size = d->window,
                            .wait_obj = FI_WAIT_NONE};
    int rc;
    if ((rc = fi_endpoint(d->domain, d->info, &ln->ep, NULL)) != 0)
        return fi_failed(l, "fi_endpoint", rc, err);
    if ((rc = fi_av_open(d->domain, &av, &ln->av, NULL)) != 0)
        return fi_failed(l, "fi_av_open", rc, err);
    if ((rc = fi_cq_open(d->domain, &cq, &ln->cq, NULL)) != 0)
        return fi_failed(l, "fi_cq_open", rc, err);
    if ((rc = fi_ep_bind(ln->ep, &ln->av->fid, 0)) != 0)
        return fi_failed(l, "fi_ep_bind(av)", rc, err);
    /* With a counter only errors reach the CQ: operations are posted
     * without FI_COMPLETION. */
    uint64_t cq_flags = FI_TRANSMIT | FI_RECV | (d->counter ? FI_SELECTIVE_COMPLETION : 0);
    if ((rc = fi_ep_bind(ln->ep, &ln->cq->fid, cq_flags)) != 0)
        return fi_failed(l, "fi_ep_bind(cq)", rc, err);
    if (d->counter) {
        struct fi_cntr_attr ca = {.events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_NONE};
        if ((rc = fi_cntr_open(d->domain, &ca, &ln->cntr, NULL)) != 0)
            return fi_failed(l, "fi_cntr_open", rc, err);
        if ((rc = fi_ep_bind(ln->ep, &ln->cntr->fid, FI_WRITE | FI_READ)) != 0)
            return fi_failed(l, "fi_ep_bind(cntr)", rc, err);
    }
    if ((rc = fi_enable(ln->ep)) != 0)
        return fi_failed(l, "fi_enable", rc, err);
    return FB_OK;
}

/* The whole slot, registered as the domain's mr_mode asks: our key when
 * the provider takes requested keys (unique per domain: link and lane),
 * bound to the endpoint under FI_MR_ENDPOINT, GPU memory through FI_HMEM. */
static enum fb_status register_slot(struct probe_ofi_link *l, int q, struct probe_ofi_lane *ln,
                                    struct probe_ofi_lane_info *info, struct fb_err *err)
{
    struct probe_ofi_dev *d = l->dev;
    struct iovec iov = {.iov_base = l->local, .iov_len = l->len};
    struct fi_mr_attr attr = {
        .mr_iov = &iov,
        .iov_count = 1,
        .access = access_flags(d),
        .requested_key = (uint64_t)l->link_id * PROBE_QPS_MAX + (uint64_t)q + 1,
        .iface = (enum fi_hmem_iface)d->hmem_iface,
    };
    if (d->hmem_iface == FI_HMEM_CUDA)
        attr.device.cuda = d->gpu;
    int rc = fi_mr_regattr(d->domain, &attr, 0, &ln->mr);
    if (rc != 0 && d->hmem_iface == FI_HMEM_CUDA)
        return fb_fail(err, FB_ERR_UNAVAIL, "%s could not register GPU %d memory (FI_HMEM_CUDA): "
                       "%s (%d); this libfabric needs CUDA support and the GPU its driver",
                       d->provider, d->gpu, fi_strerror(-rc), rc);
    if (rc != 0)
        return fi_failed(l, "fi_mr_regattr", rc, err);
    if (d->mr_mode & FI_MR_ENDPOINT) {
        if ((rc = fi_mr_bind(ln->mr, &ln->ep->fid, 0)) != 0)
            return fi_failed(l, "fi_mr_bind", rc, err);
        if ((rc = fi_mr_enable(ln->mr)) != 0)
            return fi_failed(l, "fi_mr_enable", rc, err);
    }
    ln->desc = fi_mr_desc(ln->mr);
    info->key = fi_mr_key(ln->mr);
    if (info->key == FI_KEY_NOTAVAIL)
        return fb_fail(err, FB_ERR_UNAVAIL, "provider %s gives no plain memory key (FI_MR_RAW); "
                       "the probe cannot send it", d->provider);
    /* Without FI_MR_VIRT_ADDR the peer addresses the region from 0. */
    info->base = (d->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)l->local : 0;
    return FB_OK;
}

static enum fb_status name_lane(struct probe_ofi_link *l, struct probe_ofi_lane *ln,
                                struct probe_ofi_lane_info *info, struct fb_err *err)
{
    size_t len = sizeof info->name;
    int rc = fi_getname(&ln->ep->fid, info->name, &len);
    if (rc == -FI_ETOOSMALL)
        return fb_fail(err, FB_ERR_UNAVAIL, "provider %s's endpoint names take %zu bytes, more "
                       "than the %d the probe sends", l->dev->provider, len, PROBE_OFI_NAME_MAX);
    if (rc != 0)
        return fi_failed(l, "fi_getname", rc, err);
    info->name_len = (uint16_t)len;
    return FB_OK;
}

static enum fb_status make_contexts(struct probe_ofi_link *l, struct probe_ofi_lane *ln,
                                    struct fb_err *err)
{
    size_t n = l->dev->window;
    ln->ctx = calloc(n, sizeof *ln->ctx);
    ln->free_ctx = calloc(n, sizeof *ln->free_ctx);
    if (ln->ctx == NULL || ln->free_ctx == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory for %zu operation contexts", n);
    for (size_t i = 0; i < n; i++)
        ln->free_ctx[i] = &ln->ctx[i];
    ln->nfree = n;
    return FB_OK;
}

/* The lane uses the lender's endpoint and queues; its region is its own. */
static void borrow_queues(struct probe_ofi_lane *ln, const struct probe_ofi_lane *from)
{
    ln->ep = from->ep;
    ln->av = from->av;
    ln->cq = from->cq;
    ln->cntr = from->cntr;
}

enum fb_status probe_ofi_link_create(struct probe_ofi_dev *d, int link_id, int rank, int nlanes,
                                     char *local, uint64_t len, const char *peer_name,
                                     struct probe_ofi_link *share, struct probe_ofi_link **out,
                                     struct probe_ofiinfo *info, struct fb_err *err)
{
    struct probe_ofi_link *l = calloc(1, sizeof *l);
    *out = l;
    if (l == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    l->dev = d;
    l->link_id = link_id;
    l->nlanes = nlanes;
    l->local = local;
    l->len = len;
    l->users = 1;
    if (share != NULL) {
        l->lender = share;
        share->users++;
    }
    snprintf(l->peer_name, sizeof l->peer_name, "%s", peer_name);
    memset(info, 0, sizeof *info);
    info->link = (uint32_t)link_id;
    info->rank = rank;
    snprintf(info->provider, sizeof info->provider, "%s", d->provider);
    info->addr_format = d->info->addr_format;
    info->nlanes = (uint16_t)nlanes;
    for (int q = 0; q < nlanes; q++) {
        struct probe_ofi_lane *ln = &l->lane[q];
        ln->peer = FI_ADDR_UNSPEC;
        if (share != NULL)
            borrow_queues(ln, &share->lane[q]);
        else if (open_queues(l, ln, err) != FB_OK)
            return err->code;
        if (register_slot(l, q, ln, &info->lane[q], err) != FB_OK ||
            name_lane(l, ln, &info->lane[q], err) != FB_OK || make_contexts(l, ln, err) != FB_OK)
            return err->code;
    }
    return FB_OK;
}

int probe_ofi_link_borrows(const struct probe_ofi_link *l)
{
    return l != NULL && l->lender != NULL;
}

enum fb_status probe_ofi_link_connect(struct probe_ofi_link *l, const struct probe_ofiinfo *peer,
                                      const char *me, struct fb_err *err)
{
    if (strcmp(peer->provider, l->dev->provider) != 0 || peer->addr_format != l->dev->info->addr_format)
        return fb_fail(err, FB_ERR_LAUNCH, "providers differ: %s runs %s, %s runs %s; give every "
                       "rank the same --provider (or FI_PROVIDER)", me, l->dev->provider,
                       l->peer_name, peer->provider);
    if (peer->nlanes != l->nlanes)
        return fb_fail(err, FB_ERR_LAUNCH, "endpoint counts differ: %s has %d, %s has %u; run "
                       "every rank with the same -q", me, l->nlanes, l->peer_name, peer->nlanes);
    for (int q = 0; q < l->nlanes; q++) {
        struct probe_ofi_lane *ln = &l->lane[q];
        /* A borrowing end never posts: the peer reaches it through the
         * lender's endpoint, which knows the peer already. */
        int rc = l->lender != NULL ? 1 : fi_av_insert(ln->av, peer->lane[q].name, 1, &ln->peer, 0, NULL);
        if (rc != 1)
            return fi_failed(l, "fi_av_insert of the peer's address", rc, err);
        ln->remote_base = peer->lane[q].base;
        ln->rkey = peer->lane[q].key;
    }
    return FB_OK;
}

static void close_fid(struct fid *f)
{
    if (f != NULL)
        fi_close(f);
}

static void close_regions(struct probe_ofi_link *l)
{
    for (int q = 0; q < l->nlanes; q++) {
        close_fid(l->lane[q].mr ? &l->lane[q].mr->fid : NULL);
        l->lane[q].mr = NULL;
        free(l->lane[q].ctx);
        free(l->lane[q].free_ctx);
        l->lane[q].ctx = NULL;
        l->lane[q].free_ctx = NULL;
    }
}

/* Drops one user of an end that owns its endpoints; the last one closes
 * them, endpoint first: it holds references on the rest. */
static void release(struct probe_ofi_link *l)
{
    if (--l->users > 0)
        return;
    for (int q = 0; q < l->nlanes; q++) {
        struct probe_ofi_lane *ln = &l->lane[q];
        close_fid(ln->ep ? &ln->ep->fid : NULL);
        close_fid(ln->cntr ? &ln->cntr->fid : NULL);
        close_fid(ln->cq ? &ln->cq->fid : NULL);
        close_fid(ln->av ? &ln->av->fid : NULL);
    }
    free(l);
}

/* Regions go first (under FI_MR_ENDPOINT each is bound to an endpoint),
 * endpoints when no end uses them any more. */
void probe_ofi_link_destroy(struct probe_ofi_link *l)
{
    if (l == NULL)
        return;
    close_regions(l);
    struct probe_ofi_link *lender = l->lender;
    if (lender == NULL) {
        release(l);
        return;
    }
    free(l);
    release(lender);
}

/* ---- completions -------------------------------------------------------- */

/* Reads what the lane's CQ holds (driving the provider); successful
 * entries hand their contexts back and count in *done. */
static enum fb_status read_cq(const struct probe_ofi_link *l, struct probe_ofi_lane *ln,
                              uint64_t *done, struct fb_err *err)
{
    struct fi_cq_entry e[POLL_BATCH];
    ssize_t n = fi_cq_read(ln->cq, e, POLL_BATCH);
    if (n == -FI_EAGAIN)
        return FB_OK;
    if (n == -FI_EAVAIL)
        return completion_error(l, ln, err);
    if (n < 0)
        return fi_failed(l, "fi_cq_read", (int)n, err);
    for (ssize_t i = 0; i < n; i++)
        if (e[i].op_context != NULL && ln->nfree < l->dev->window)
            ln->free_ctx[ln->nfree++] = e[i].op_context;
    *done += (uint64_t)n;
    return FB_OK;
}

enum fb_status probe_ofi_progress(struct probe_ofi_link *l, struct fb_err *err)
{
    uint64_t ignored = 0;
    for (int q = 0; q < l->nlanes; q++)
        if (read_cq(l, &l->lane[q], &ignored, err) != FB_OK)
            return err->code;
    return FB_OK;
}

/* One write or read of `size` bytes between lane q's regions; *busy when
 * the provider's queue is full (try again after reading completions). */
static enum fb_status post_op(struct probe_ofi_link *l, int q, const struct probe_size_spec *r,
                              void *ctx, int *busy, struct fb_err *err)
{
    struct probe_ofi_lane *ln = &l->lane[q];
    char *local = l->local + (uint64_t)q * r->stride;
    uint64_t remote = ln->remote_base + (uint64_t)q * r->stride;
    ssize_t rc = l->dev->op_read
                     ? fi_read(ln->ep, local, r->size, ln->desc, ln->peer, remote, ln->rkey, ctx)
                     : fi_write(ln->ep, local, r->size, ln->desc, ln->peer, remote, ln->rkey, ctx);
    *busy = rc == -FI_EAGAIN;
    if (rc == 0 || *busy)
        return FB_OK;
    return fi_failed(l, l->dev->op_read ? "fi_read" : "fi_write", (int)rc, err);
}

/* ---- bandwidth ---------------------------------------------------------- */

struct lane_state {
    uint64_t posted, completed;
    uint64_t base; /* counter mode: the counter's value when the phase began */
    int filling;   /* counter mode: a window is being posted */
};

struct sender {
    struct probe_ofi_link *l;
    struct lane_state q[PROBE_QPS_MAX];
    uint64_t target; /* operations per endpoint; 0 = until the phase's time is up */
    int stopping;    /* time is up: no more posts, draining */
    int started;
    double t_first, t_last, last_progress;
    uint64_t messages;
    uint64_t reaped; /* completions the last poll found */
    struct probe_samples *samples; /* NULL while warming up */
};

/* A poll that found nothing gives the core away if anyone else wants it:
 * on a link slower than the CPU, spinning ends would starve the ranks of
 * other links (and the kernel's network work) sharing the cores. Polls
 * that find work never yield. */
#define IDLE_SPINS_BEFORE_YIELD 64

static void note_first_post(struct sender *s, const struct probe_size_spec *r)
{
    if (s->started)
        return;
    s->started = 1;
    s->t_first = fb_now();
    if (s->samples != NULL)
        probe_samples_init(s->samples, s->t_first, r->interval);
}

/* Posts on lane q while the window has room: CQ mode refills as entries
 * return; counter mode posts a whole window once the last one drained,
 * as fi_rma_bw does. */
static enum fb_status post_lane(struct sender *s, int q, const struct probe_size_spec *r,
                                struct fb_err *err)
{
    struct probe_ofi_link *l = s->l;
    struct probe_ofi_lane *ln = &l->lane[q];
    struct lane_state *st = &s->q[q];
    size_t window = l->dev->window;
    if (l->dev->counter && st->posted == st->completed)
        st->filling = 1;
    for (;;) {
        uint64_t inflight = st->posted - st->completed;
        if (s->stopping || (s->target && st->posted == s->target) || inflight >= window ||
            (l->dev->counter ? !st->filling : ln->nfree == 0))
            break;
        void *ctx = l->dev->counter ? &ln->ctx[st->posted % window] : ln->free_ctx[ln->nfree - 1];
        note_first_post(s, r);
        int busy = 0;
        if (post_op(l, q, r, ctx, &busy, err) != FB_OK)
            return err->code;
        if (busy)
            break;
        if (!l->dev->counter)
            ln->nfree--;
        st->posted++;
        if (st->posted - st->completed == window || (s->target && st->posted == s->target))
            st->filling = 0;
    }
    return FB_OK;
}

static enum fb_status reap_lane(struct sender *s, int q, uint64_t *done, struct fb_err *err)
{
    struct probe_ofi_link *l = s->l;
    struct probe_ofi_lane *ln = &l->lane[q];
    struct lane_state *st = &s->q[q];
    uint64_t got = 0;
    if (ln->cntr == NULL) {
        if (read_cq(l, ln, &got, err) != FB_OK)
            return err->code;
    } else {
        /* Reading the counter drives the provider; the CQ holds only
         * errors here, read once the counter says there is one. */
        got = fi_cntr_read(ln->cntr) - st->base - st->completed;
        if (fi_cntr_readerr(ln->cntr) > 0)
            return completion_error(l, ln, err);
    }
    st->completed += got;
    *done += got;
    return FB_OK;
}

static enum fb_status reap(struct sender *s, const struct probe_size_spec *r, struct fb_err *err)
{
    uint64_t done = 0;
    for (int q = 0; q < s->l->nlanes; q++)
        if (reap_lane(s, q, &done, err) != FB_OK)
            return err->code;
    s->reaped = done;
    if (done == 0)
        return FB_OK;
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
    for (int q = 0; q < s->l->nlanes; q++) {
        const struct lane_state *st = &s->q[q];
        if (s->target ? st->completed < s->target : (!s->stopping || st->completed < st->posted))
            return 0;
    }
    return 1;
}

static int sender_waiting(const struct sender *s)
{
    for (int q = 0; q < s->l->nlanes; q++)
        if (s->q[q].completed < s->q[q].posted)
            return 1;
    return 0;
}

static void reset_senders(struct sender *s, int n, uint64_t target, double start)
{
    for (int i = 0; i < n; i++) {
        memset(s[i].q, 0, sizeof s[i].q);
        s[i].target = target;
        s[i].stopping = s[i].started = 0;
        s[i].messages = 0;
        s[i].t_first = s[i].t_last = s[i].last_progress = start;
        /* Counters count on from the last phase. */
        for (int q = 0; q < s[i].l->nlanes; q++)
            if (s[i].l->lane[q].cntr != NULL)
                s[i].q[q].base = fi_cntr_read(s[i].l->lane[q].cntr);
    }
}

static enum fb_status step_sender(struct sender *x, const struct probe_size_spec *r,
                                  double now, double stop_at, struct fb_err *err)
{
    if (!x->target && now >= stop_at)
        x->stopping = 1;
    for (int q = 0; q < x->l->nlanes; q++)
        if (post_lane(x, q, r, err) != FB_OK)
            return err->code;
    if (reap(x, r, err) != FB_OK)
        return err->code;
    if (sender_waiting(x) && now - x->last_progress > r->timeout)
        return silence(x->l, r->timeout, "RMA completion", err);
    return FB_OK;
}

static enum fb_status run_phase(struct sender *s, int n, const struct probe_size_spec *r,
                                const struct probe_ofi_idle *idle, uint64_t target,
                                double seconds, struct fb_err *err)
{
    reset_senders(s, n, target, fb_now());
    double stop_at = INFINITY;
    unsigned idle_spins = 0;
    for (unsigned long spin = 0;; spin++) {
        int all_done = 1, found = 0;
        double now = fb_now();
        for (int i = 0; i < n; i++) {
            if (step_sender(&s[i], r, now, stop_at, err) != FB_OK)
                return err->code;
            found |= s[i].reaped > 0;
            /* The measured window runs from the first post. */
            if (!target && stop_at == INFINITY && s[i].started)
                stop_at = s[i].t_first + seconds;
            all_done &= sender_done(&s[i]);
        }
        if (idle != NULL && idle->fn(idle->arg, err) != FB_OK)
            return err->code;
        if (all_done)
            return FB_OK;
        idle_spins = found ? 0 : idle_spins + 1;
        if (idle_spins > IDLE_SPINS_BEFORE_YIELD)
            sched_yield();
        if ((spin & 1023) == 0 && probe_stopped(r->stop, err) != FB_OK)
            return err->code;
    }
}

enum fb_status probe_ofi_bw(struct probe_ofi_link **links, int n, const struct probe_size_spec *r,
                            const struct probe_ofi_idle *idle, struct probe_measure *out,
                            struct fb_err *err)
{
    struct sender *s = calloc((size_t)(n > 0 ? n : 1), sizeof *s);
    if (s == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    for (int i = 0; i < n; i++)
        s[i].l = links[i];
    uint64_t warm = r->iters ? (uint64_t)r->warmup : 0;
    enum fb_status st = FB_OK;
    if (warm > 0 || (!r->iters && r->margin > 0))
        st = run_phase(s, n, r, idle, warm, r->margin, err);
    for (int i = 0; i < n; i++) {
        probe_measure_open(&out[i], links[i]->link_id, r->size);
        s[i].samples = &out[i].samples; /* initialised at the first timed post */
    }
    if (st == FB_OK)
        st = run_phase(s, n, r, idle, (uint64_t)r->iters, r->duration, err);
    for (int i = 0; i < n && st == FB_OK; i++)
        probe_measure_close(&out[i], (double)s[i].messages * (double)r->size, s[i].messages, s[i].t_first,
                            s[i].t_last);
    free(s);
    return st;
}

/* ---- latency ------------------------------------------------------------ */

/* Posts one operation on lane 0 and waits for its CQ entry. Local and
 * remote offsets as the ping-pong lays them out: receive area first, send
 * area one stride on. */
static enum fb_status op_and_wait(struct probe_ofi_link *l, const struct probe_size_spec *r,
                                  uint64_t local_off, uint64_t remote_off, struct fb_err *err)
{
    struct probe_ofi_lane *ln = &l->lane[0];
    char *local = l->local + local_off;
    uint64_t remote = ln->remote_base + remote_off;
    double since = fb_now();
    for (;;) {
        ssize_t rc = l->dev->op_read
                         ? fi_read(ln->ep, local, r->size, ln->desc, ln->peer, remote, ln->rkey, &ln->ctx[0])
                         : fi_write(ln->ep, local, r->size, ln->desc, ln->peer, remote, ln->rkey, &ln->ctx[0]);
        if (rc == 0)
            break;
        if (rc != -FI_EAGAIN)
            return fi_failed(l, l->dev->op_read ? "fi_read" : "fi_write", (int)rc, err);
        uint64_t ignored = 0;
        if (read_cq(l, ln, &ignored, err) != FB_OK)
            return err->code;
        if (fb_now() - since > r->timeout)
            return silence(l, r->timeout, "room in the RMA queue", err);
    }
    for (uint64_t done = 0; done == 0;) {
        if (read_cq(l, ln, &done, err) != FB_OK)
            return err->code;
        if (done == 0 && fb_now() - since > r->timeout)
            return silence(l, r->timeout, "RMA completion", err);
    }
    return FB_OK;
}

/* Waits for the peer's write to land: the last byte turns to v (or to the
 * stop marker when *stop_seen may be set). Reading the CQ meanwhile is
 * what lets a manual-progress provider place the bytes. */
static enum fb_status await_byte(struct probe_ofi_link *l, const struct probe_size_spec *r,
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
        uint64_t ignored = 0;
        if (read_cq(l, &l->lane[0], &ignored, err) != FB_OK)
            return err->code;
        if ((spin & 1023) == 0) {
            if (fb_now() - since > r->timeout)
                return silence(l, r->timeout, "RMA write", err);
            if (probe_stopped(r->stop, err) != FB_OK)
                return err->code;
        }
    }
}

static enum fb_status send_seq(struct probe_ofi_link *l, const struct probe_size_spec *r,
                               uint8_t v, struct fb_err *err)
{
    l->local[r->stride + r->size - 1] = (char)v;
    return op_and_wait(l, r, r->stride, 0, err);
}

static uint8_t next_seq(uint8_t v) { return v >= LAT_SEQ_MAX ? 1 : (uint8_t)(v + 1); }

/* The timed loop of an initiator: `one` is a round trip. */
struct lat_loop {
    struct probe_rtt_log log;
    double t_first, t_last, stop_at;
};

static int lat_next(struct lat_loop *lp, const struct probe_size_spec *r, long i, double *t0)
{
    if (i == r->warmup) {
        lp->t_first = fb_now();
        if (r->iters == 0)
            lp->stop_at = lp->t_first + r->duration;
    }
    *t0 = fb_now();
    return (r->iters == 0 || i < r->warmup + r->iters) && *t0 < lp->stop_at;
}

static enum fb_status lat_record(struct lat_loop *lp, const struct probe_size_spec *r, long i,
                                 double t0, struct fb_err *err)
{
    lp->t_last = fb_now();
    if (i >= r->warmup && probe_rtt_push(&lp->log, lp->t_last - t0) != 0)
        return fb_fail(err, FB_ERR_MEMORY, "out of memory for latency samples; use -n");
    return FB_OK;
}

static void lat_begin(struct probe_ofi_link *l, const struct probe_size_spec *r,
                      struct probe_measure *out, struct lat_loop *lp)
{
    memset(out, 0, sizeof *out);
    out->link = l->link_id;
    out->size = r->size;
    memset(lp, 0, sizeof *lp);
    lp->t_first = lp->t_last = fb_now();
    lp->stop_at = INFINITY;
}

static enum fb_status lat_end(struct lat_loop *lp, const struct probe_size_spec *r,
                              struct probe_measure *out, enum fb_status st)
{
    if (st == FB_OK)
        probe_latency_finish(out, &lp->log, r->size, lp->t_first, lp->t_last, r->interval);
    probe_rtt_free(&lp->log);
    return st;
}

static enum fb_status write_responder(struct probe_ofi_link *l, const struct probe_size_spec *r,
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
        if (send_seq(l, r, v, err) != FB_OK)
            return err->code;
    }
    return FB_OK;
}

enum fb_status probe_ofi_write_lat(struct probe_ofi_link *l, const struct probe_size_spec *r,
                                   int initiator, struct probe_measure *out, struct fb_err *err)
{
    struct lat_loop lp;
    lat_begin(l, r, out, &lp);
    if (!initiator)
        return write_responder(l, r, err);
    enum fb_status st = FB_OK;
    uint8_t v = 0;
    double t0 = 0;
    long i = 0;
    for (; st == FB_OK && lat_next(&lp, r, i, &t0); i++) {
        v = next_seq(v);
        st = send_seq(l, r, v, err);
        if (st == FB_OK)
            st = await_byte(l, r, v, NULL, err);
        if (st == FB_OK)
            st = lat_record(&lp, r, i, t0, err);
    }
    if (st == FB_OK && r->iters == 0)
        st = send_seq(l, r, LAT_STOP, err);
    return lat_end(&lp, r, out, st);
}

enum fb_status probe_ofi_read_lat(struct probe_ofi_link *l, const struct probe_size_spec *r,
                                  struct probe_measure *out, struct fb_err *err)
{
    struct lat_loop lp;
    lat_begin(l, r, out, &lp);
    enum fb_status st = FB_OK;
    double t0 = 0;
    for (long i = 0; st == FB_OK && lat_next(&lp, r, i, &t0); i++) {
        st = op_and_wait(l, r, 0, r->stride, err);
        if (st == FB_OK)
            st = lat_record(&lp, r, i, t0, err);
        if (st == FB_OK && (i & 1023) == 0)
            st = probe_stopped(r->stop, err);
    }
    return lat_end(&lp, r, out, st);
}
