/* The data path: posting, executing and completing work requests. A send
 * WQE is executed as soon as it can be (at post, then at every poll): the
 * initiator checks what the responder's HCA would check (its QP state, that
 * it is connected back to us, the address, the remote key's range and
 * access, a posted receive), paces the bytes to the port's rate and moves
 * them with process_vm_writev/readv; a receive completion goes into the
 * responder's inbound ring, which its own polls drain. Failures complete
 * as an HCA completes them: at once (access, length) or after the retry
 * timeout (nothing answers), then the QP is in error and the rest is
 * flushed. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "ibv_internal.h"

/* X_DONE: the bytes moved, the WQE completes at its done_at; X_WAIT: the
 * link is still busy with the messages before it. */
enum outcome { X_DONE, X_WAIT, X_RNR, X_FAIL_NOW, X_FAIL_LATER };

/* ---- completion queue ------------------------------------------------------- */

int sib_cq_push(struct sib_cq *cq, const struct ibv_wc *wc, struct sib_qp *qp, uint64_t sq_seq)
{
    if (cq->head - cq->tail >= cq->cap)
        return 0;
    cq->ring[cq->head % cq->cap] = (struct sib_cqe){*wc, qp, sq_seq};
    cq->head++;
    if (cq->armed && cq->cq.channel != NULL)
        sib_notify(cq);
    return 1;
}

static int cq_has_room(const struct sib_cq *cq) { return cq->head - cq->tail < cq->cap; }

static struct sib_cq *send_cq(struct sib_qp *q) { return sib_cq_of(q->qpx.qp_base.send_cq); }
static struct sib_cq *recv_cq(struct sib_qp *q) { return sib_cq_of(q->qpx.qp_base.recv_cq); }

static enum ibv_wc_opcode wc_opcode(enum ibv_wr_opcode op)
{
    switch (op) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM: return IBV_WC_RDMA_WRITE;
    case IBV_WR_RDMA_READ: return IBV_WC_RDMA_READ;
    default: return IBV_WC_SEND;
    }
}

static uint32_t wqe_length(const struct sib_wqe *w)
{
    if (w->flags & IBV_SEND_INLINE)
        return w->inline_len;
    uint64_t n = 0;
    for (uint32_t i = 0; i < w->nsge; i++)
        n += w->sge[i].length;
    return (uint32_t)n;
}

static int push_send(struct sib_qp *q, const struct sib_wqe *w, uint64_t seq, enum ibv_wc_status st)
{
    struct ibv_wc wc = {.wr_id = w->wr_id, .status = st, .opcode = wc_opcode(w->opcode),
                        .qp_num = q->qpx.qp_base.qp_num};
    if (st == IBV_WC_SUCCESS)
        wc.byte_len = wqe_length(w);
    else
        wc.vendor_err = st == IBV_WC_WR_FLUSH_ERR ? 0xf9 : 0x81;
    return sib_cq_push(send_cq(q), &wc, q, seq);
}

/* ---- timing -------------------------------------------------------------------- */

/* When the wire can start w: after the messages before it, and not before
 * it was posted (now, once it waited for its receiver). */
static double wire_start(const struct sib_port *p, const struct sib_wqe *w, double now)
{
    return fmax(p->next_free, w->rnr_deadline > 0 ? now : w->posted_at);
}

/* The lowest of the caps given (0: none), 0 when none is. */
static double lowest_cap(const double *caps, int n)
{
    double rate = 0;
    for (int i = 0; i < n; i++)
        if (caps[i] > 0 && (rate <= 0 || caps[i] < rate))
            rate = caps[i];
    return rate;
}

/* The wire: bytes leave this process's port no faster than the lower cap
 * of the two ends (and this port's send cap, the peer's receive cap). A message occupies the link for bytes/rate from its
 * start: when the one before it has left, or when it was posted if the link
 * was idle then. The times are the wire's, not the process's: an HCA works
 * through its send queue while the process that posted sleeps, so a process
 * that wakes late (a core taken by another process) finds what it had
 * posted already sent and the average holds the rate. A message that
 * waited for its receiver starts no earlier than now. 0 while the link is
 * busy at `now`; else 1 with the message's end (now without a cap). */
static int wire_slot(struct sib_qp *q, const struct sib_wqe *w, uint64_t bytes, const struct sib_shqp *peer,
                     double now, double *end)
{
    const struct sib_port *port = &q->ctx->dev->port;
    double caps[4] = {port->cap_gbps, port->tx_gbps, peer->cap_gbps, peer->rx_gbps};
    double rate = lowest_cap(caps, 4);
    *end = now;
    if (rate <= 0 || bytes == 0)
        return 1;
    struct sib_port *p = &q->ctx->dev->port;
    double start = wire_start(p, w, now);
    if (start > now)
        return 0;
    p->next_free = *end = start + (double)bytes * 8.0 / (rate * 1e9);
    return 1;
}

/* Local ACK timeout: 4.096 us * 2^timeout, retry_cnt + 1 tries (0: none,
 * which the cap bounds). */
static double retry_time(const struct sib_qp *q)
{
    double t = q->timeout ? 4.096e-6 * ldexp(1.0, q->timeout) * (q->retry_cnt + 1) : INFINITY;
    return fmin(t, sib_retry_cap_s());
}

/* The RNR NAK timer values of the IB spec, in ms. */
static double rnr_time(const struct sib_qp *q, const struct sib_shqp *peer)
{
    static const double ms[32] = {655.36, 0.01, 0.02, 0.03, 0.04, 0.06, 0.08, 0.12,
                                  0.16, 0.24, 0.32, 0.48, 0.64, 0.96, 1.28, 1.92,
                                  2.56, 3.84, 5.12, 7.68, 10.24, 15.36, 20.48, 30.72,
                                  40.96, 61.44, 81.92, 122.88, 163.84, 245.76, 327.68, 491.52};
    if (q->rnr_retry == 7)
        return INFINITY; /* 7 retries forever */
    return ms[peer->min_rnr_timer & 31] * 1e-3 * (q->rnr_retry + 1);
}

/* ---- the peer ----------------------------------------------------------------- */

static struct sib_shqp *peer_of(struct sib_qp *q)
{
    if (q->peer != NULL && q->peer->qpn == q->dest_qpn && q->peer->magic == SIB_MAGIC_QP)
        return q->peer;
    if (q->peer != NULL) {
        munmap(q->peer, q->peer_len);
        q->peer = NULL;
    }
    char name[32];
    snprintf(name, sizeof name, "qp-%06x", q->dest_qpn);
    struct sib_shqp *p = sib_map(name, sizeof *p, 0, &q->peer_len);
    if (p == NULL)
        return NULL;
    if (p->magic != SIB_MAGIC_QP || p->qpn != q->dest_qpn ||
        q->peer_len < sizeof *p + p->rq_size * (sizeof(struct sib_shrecv) + sizeof(struct sib_shcqe))) {
        munmap(p, q->peer_len);
        return NULL;
    }
    atomic_thread_fence(memory_order_acquire);
    q->peer = p;
    return p;
}

/* Would a packet from this QP reach the peer and be accepted? */
static int reachable(const struct sib_qp *q, const struct sib_shqp *p)
{
    const struct sib_port *mine = &q->ctx->dev->port;
    uint32_t st = atomic_load(&p->state);
    if (!mine->active || !p->port_active || p->pid == 0 || p->link_layer != mine->link_layer)
        return 0;
    if ((st != IBV_QPS_RTR && st != IBV_QPS_RTS) || atomic_load(&p->dest_qpn) != q->qpx.qp_base.qp_num)
        return 0;
    if (!q->av.is_global)
        return p->link_layer == IBV_LINK_LAYER_INFINIBAND && q->av.dlid == p->lid;
    for (int i = 0; i < p->ngid && i < SIB_GIDS_MAX; i++)
        if (memcmp(p->gid[i], q->av.grh.dgid.raw, 16) == 0)
            return 1;
    return 0;
}

static int remote_ok(const struct sib_shmr *m, const struct sib_shqp *p, uint64_t addr, uint64_t len,
                     unsigned need)
{
    return m != NULL && m->pid == p->pid && m->pd_id == p->pd_id && (m->access & need) &&
           (p->access & need) && addr >= m->iova && len <= m->len && addr - m->iova <= m->len - len;
}

/* ---- moving bytes --------------------------------------------------------------- */

static void advance(struct iovec *v, int *n, size_t by)
{
    int i = 0;
    while (i < *n && by >= v[i].iov_len)
        by -= v[i++].iov_len;
    if (i < *n) {
        v[i].iov_base = (char *)v[i].iov_base + by;
        v[i].iov_len -= by;
    }
    memmove(v, v + i, (size_t)(*n - i) * sizeof *v);
    *n -= i;
}

/* Copies total bytes between our iovecs and pid's; 0 or an errno. */
static int copy_vm(pid_t pid, int write, struct iovec *local, int nl, struct iovec *remote, int nr,
                   size_t total)
{
    while (total > 0) {
        ssize_t got = write ? process_vm_writev(pid, local, (unsigned long)nl, remote, (unsigned long)nr, 0)
                            : process_vm_readv(pid, local, (unsigned long)nl, remote, (unsigned long)nr, 0);
        if (got < 0)
            return errno == EINTR ? 0 : errno;
        if (got == 0)
            return EFAULT;
        total -= (size_t)got;
        advance(local, &nl, (size_t)got);
        advance(remote, &nr, (size_t)got);
    }
    return 0;
}

/* The local side of a WQE as iovecs; 0 when an SGE is not registered
 * (need: the access the local memory must allow). */
static int local_iov(struct sib_qp *q, struct sib_wqe *w, uint64_t seq, struct iovec *v, int *n, int need_write)
{
    *n = 0;
    if (w->flags & IBV_SEND_INLINE && w->opcode != IBV_WR_RDMA_READ) {
        v[0].iov_base = q->inline_buf + (seq % q->sq_size) * q->cap.max_inline_data;
        v[0].iov_len = w->inline_len;
        *n = w->inline_len ? 1 : 0;
        return 1;
    }
    for (uint32_t i = 0; i < w->nsge; i++) {
        const struct ibv_sge *s = &w->sge[i];
        if (s->length == 0)
            continue;
        const struct sib_mr *m = sib_local_mr(q->ctx, s->lkey, s->addr, s->length);
        if (m == NULL || (need_write && !(m->access & IBV_ACCESS_LOCAL_WRITE)))
            return 0;
        v[*n].iov_base = (void *)(uintptr_t)s->addr;
        v[*n].iov_len = s->length;
        (*n)++;
    }
    return 1;
}

static int claim_recv(struct sib_shqp *p, struct sib_shrecv *out)
{
    for (;;) {
        uint32_t t = atomic_load(&p->rq_tail);
        if (t == atomic_load_explicit(&p->rq_head, memory_order_acquire))
            return 0;
        *out = sib_rq(p)[t & (p->rq_size - 1)];
        if (atomic_compare_exchange_weak(&p->rq_tail, &t, t + 1))
            return 1;
    }
}

static int recv_posted(struct sib_shqp *p)
{
    return atomic_load(&p->rq_tail) != atomic_load_explicit(&p->rq_head, memory_order_acquire);
}

static void deliver(struct sib_shqp *p, uint64_t wr_id, enum ibv_wc_opcode op, uint32_t len, uint32_t imm,
                    unsigned flags, enum ibv_wc_status st, uint32_t src_qp)
{
    uint32_t h = atomic_load(&p->in_head);
    sib_inq(p)[h & (p->rq_size - 1)] = (struct sib_shcqe){.wr_id = wr_id, .byte_len = len, .imm = imm,
                                                          .opcode = (uint16_t)op, .status = (uint16_t)st,
                                                          .wc_flags = flags, .src_qp = src_qp};
    atomic_store_explicit(&p->in_head, h + 1, memory_order_release);
}

static enum outcome vm_failure(int e, enum ibv_wc_status *st)
{
    /* The peer is gone: nothing acknowledges. A bad address on either side
     * is a protection fault the responder reports. */
    *st = e == ESRCH ? IBV_WC_RETRY_EXC_ERR : IBV_WC_REM_ACCESS_ERR;
    return e == ESRCH ? X_FAIL_LATER : X_FAIL_NOW;
}

static enum outcome do_rdma(struct sib_qp *q, struct sib_wqe *w, uint64_t seq, struct sib_shqp *p,
                           double now, enum ibv_wc_status *st)
{
    int is_read = w->opcode == IBV_WR_RDMA_READ;
    uint32_t len = wqe_length(w);
    const struct sib_shmr *m = sib_remote_mr(w->rkey);
    struct iovec lv[SIB_SGE_MAX];
    int nl = 0;
    if (!local_iov(q, w, seq, lv, &nl, is_read)) {
        *st = IBV_WC_LOC_PROT_ERR;
        return X_FAIL_NOW;
    }
    if (!remote_ok(m, p, w->remote_addr, len, is_read ? IBV_ACCESS_REMOTE_READ : IBV_ACCESS_REMOTE_WRITE)) {
        *st = IBV_WC_REM_ACCESS_ERR;
        return X_FAIL_NOW;
    }
    int imm = w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
    if (imm && !recv_posted(p))
        return X_RNR;
    if (!wire_slot(q, w, len, p, now, &w->done_at))
        return X_WAIT;
    struct iovec rv = {(void *)(uintptr_t)(m->addr + (w->remote_addr - m->iova)), len};
    int e = len ? copy_vm(p->pid, !is_read, lv, nl, &rv, 1, len) : 0;
    if (e)
        return vm_failure(e, st);
    w->has_recv = imm && claim_recv(p, &w->recv);
    return X_DONE;
}

static enum outcome do_send(struct sib_qp *q, struct sib_wqe *w, uint64_t seq, struct sib_shqp *p,
                           double now, enum ibv_wc_status *st)
{
    uint32_t len = wqe_length(w);
    struct iovec lv[SIB_SGE_MAX], rv[SIB_RECV_SGE_MAX];
    int nl = 0, nr = 0;
    if (!local_iov(q, w, seq, lv, &nl, 0)) {
        *st = IBV_WC_LOC_PROT_ERR;
        return X_FAIL_NOW;
    }
    struct sib_shrecv r;
    if (!recv_posted(p))
        return X_RNR;
    r = sib_rq(p)[atomic_load(&p->rq_tail) & (p->rq_size - 1)];
    uint64_t room = 0;
    for (uint32_t i = 0; i < r.nsge && i < SIB_RECV_SGE_MAX; i++) {
        rv[nr].iov_base = (void *)(uintptr_t)r.sge[i].addr;
        rv[nr].iov_len = r.sge[i].len;
        room += r.sge[i].len;
        nr += r.sge[i].len > 0;
    }
    uint32_t qpn = q->qpx.qp_base.qp_num;
    if (len > room) {
        if (claim_recv(p, &r))
            deliver(p, r.wr_id, IBV_WC_RECV, 0, 0, 0, IBV_WC_LOC_LEN_ERR, qpn);
        *st = IBV_WC_REM_INV_REQ_ERR;
        return X_FAIL_NOW;
    }
    if (!wire_slot(q, w, len, p, now, &w->done_at))
        return X_WAIT;
    int e = len ? copy_vm(p->pid, 1, lv, nl, rv, nr, len) : 0;
    if (e)
        return vm_failure(e, st);
    w->has_recv = claim_recv(p, &w->recv);
    return X_DONE;
}

static enum outcome execute(struct sib_qp *q, struct sib_wqe *w, uint64_t seq, double now, enum ibv_wc_status *st)
{
    struct sib_shqp *p = peer_of(q);
    if (p == NULL || !reachable(q, p)) {
        *st = IBV_WC_RETRY_EXC_ERR;
        return X_FAIL_LATER;
    }
    if (w->opcode == IBV_WR_SEND || w->opcode == IBV_WR_SEND_WITH_IMM)
        return do_send(q, w, seq, p, now, st);
    return do_rdma(q, w, seq, p, now, st);
}

/* ---- progress ------------------------------------------------------------------- */

static void enter_error(struct sib_qp *q)
{
    q->qpx.qp_base.state = IBV_QPS_ERR;
    atomic_store(&q->sh->state, (uint32_t)IBV_QPS_ERR);
}

static void drain_inbound(struct sib_qp *q)
{
    struct sib_shqp *s = q->sh;
    struct sib_cq *cq = recv_cq(q);
    for (;;) {
        uint32_t t = atomic_load(&s->in_tail);
        if (t == atomic_load_explicit(&s->in_head, memory_order_acquire) || !cq_has_room(cq))
            return;
        const struct sib_shcqe *e = &sib_inq(s)[t & (s->rq_size - 1)];
        struct ibv_wc wc = {.wr_id = e->wr_id, .status = e->status, .opcode = e->opcode,
                            .byte_len = e->byte_len, .imm_data = e->imm, .qp_num = s->qpn,
                            .src_qp = e->src_qp, .wc_flags = e->wc_flags,
                            .slid = q->av.is_global ? 0 : q->av.dlid};
        sib_cq_push(cq, &wc, NULL, 0);
        atomic_store_explicit(&s->in_tail, t + 1, memory_order_release);
        q->rq_retired++;
    }
}

/* In error: every receive not taken by the peer completes flushed. */
static void flush_rq(struct sib_qp *q)
{
    struct sib_cq *cq = recv_cq(q);
    struct sib_shrecv r;
    while (cq_has_room(cq) && claim_recv(q->sh, &r)) {
        struct ibv_wc wc = {.wr_id = r.wr_id, .status = IBV_WC_WR_FLUSH_ERR, .opcode = IBV_WC_RECV,
                            .qp_num = q->qpx.qp_base.qp_num, .vendor_err = 0xf9};
        sib_cq_push(cq, &wc, NULL, 0);
        q->rq_retired++;
    }
}

void sib_flush(struct sib_qp *q)
{
    drain_inbound(q);
    flush_rq(q);
}

/* A WQE whose bytes moved completes once the wire is done with it: the
 * responder's receive (a send, a write with immediate), then the sender's
 * completion. 1 when it completed. */
static int complete(struct sib_qp *q, struct sib_wqe *w, uint64_t seq, int signaled, double now)
{
    if (now < w->done_at || (signaled && !cq_has_room(send_cq(q))))
        return 0;
    struct sib_shqp *p = w->has_recv ? peer_of(q) : NULL;
    if (p != NULL) {
        int write_imm = w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
        int imm = write_imm || w->opcode == IBV_WR_SEND_WITH_IMM;
        deliver(p, w->recv.wr_id, write_imm ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV, wqe_length(w),
                imm ? w->imm : 0, imm ? IBV_WC_WITH_IMM : 0, IBV_WC_SUCCESS, q->qpx.qp_base.qp_num);
    }
    if (signaled)
        push_send(q, w, seq, IBV_WC_SUCCESS);
    return 1;
}

/* Returns 1 when the WQE at the head is done with (completed or failed). */
static int step(struct sib_qp *q, struct sib_wqe *w, uint64_t seq, double now)
{
    int signaled = q->sq_sig_all || (w->flags & IBV_SEND_SIGNALED);
    if (q->qpx.qp_base.state == IBV_QPS_ERR)
        return push_send(q, w, seq, IBV_WC_WR_FLUSH_ERR);
    if (w->fail_at > 0) {
        if (now < w->fail_at || !push_send(q, w, seq, w->fail_status))
            return 0;
        enter_error(q);
        sib_flush(q);
        return 1;
    }
    if (w->on_wire)
        return complete(q, w, seq, signaled, now);
    if (!cq_has_room(send_cq(q)))
        return 0;
    enum ibv_wc_status st = IBV_WC_SUCCESS;
    switch (execute(q, w, seq, now, &st)) {
    case X_DONE:
        w->on_wire = 1;
        return complete(q, w, seq, signaled, now);
    case X_WAIT:
        return 0;
    case X_RNR:
        if (w->rnr_deadline == 0)
            w->rnr_deadline = now + rnr_time(q, q->peer);
        if (now < w->rnr_deadline)
            return 0;
        st = IBV_WC_RNR_RETRY_EXC_ERR;
        /* fall through */
    case X_FAIL_NOW:
        w->fail_at = now;
        break;
    case X_FAIL_LATER:
        w->fail_at = now + retry_time(q);
        break;
    }
    w->fail_status = st;
    return step(q, w, seq, now);
}

static void progress_sq(struct sib_qp *q)
{
    if (q->executed == q->posted)
        return;
    double now = sib_now();
    while (q->executed < q->posted) {
        uint64_t seq = q->executed;
        if (!step(q, &q->sq[seq % q->sq_size], seq, now))
            return;
        q->executed++;
    }
}

void sib_progress(struct sib_ctx *c)
{
    for (struct sib_qp *q = c->qps; q; q = q->next) {
        progress_sq(q);
        drain_inbound(q);
        if (q->qpx.qp_base.state == IBV_QPS_ERR)
            flush_rq(q);
    }
}

/* How long until a send queue of this context can move on its own (the
 * wire finishing a message or free for the next); 0 when one may move now
 * or none waits on the wire. */
static double wire_wait(const struct sib_ctx *c)
{
    double now = sib_now(), due = INFINITY;
    for (const struct sib_qp *q = c->qps; q; q = q->next) {
        if (q->executed == q->posted)
            continue;
        const struct sib_wqe *w = &q->sq[q->executed % q->sq_size];
        if (w->fail_at > 0 || w->rnr_deadline > 0)
            return 0;
        due = fmin(due, w->on_wire ? w->done_at : wire_start(&c->dev->port, w, now));
    }
    return due > now && due < INFINITY ? due - now : 0;
}

/* Nothing to return while the wire is busy: sleep part of the wait, as a
 * poller spinning on an HCA would have seen nothing either, and leave the
 * cores to the processes that share them. At most WIRE_NAP_S, so that a
 * peer's delivery is seen soon too. */
#define WIRE_NAP_S 500e-6
static void nap_on_wire(double wait)
{
    if (wait <= 0)
        return;
    wait = fmin(wait, WIRE_NAP_S);
    nanosleep(&(struct timespec){0, (long)(wait * 1e9)}, NULL);
}

int sib_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
    struct sib_cq *cq = sib_cq_of(ibcq);
    struct sib_ctx *c = sib_ctx_of(ibcq->context);
    pthread_mutex_lock(&c->lock);
    sib_progress(c);
    int got = 0;
    while (got < n && cq->tail < cq->head) {
        struct sib_cqe *e = &cq->ring[cq->tail % cq->cap];
        if (e->qp != NULL && e->sq_seq + 1 > e->qp->retired)
            e->qp->retired = e->sq_seq + 1; /* this WQE and the unsignaled ones before it */
        wc[got++] = e->wc;
        cq->tail++;
    }
    double wait = got == 0 ? wire_wait(c) : 0;
    pthread_mutex_unlock(&c->lock);
    nap_on_wire(wait);
    return got;
}

int sib_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
    (void)solicited_only;
    struct sib_ctx *c = sib_ctx_of(ibcq->context);
    pthread_mutex_lock(&c->lock);
    sib_cq_of(ibcq)->armed = 1;
    pthread_mutex_unlock(&c->lock);
    return 0;
}

/* ---- posting -------------------------------------------------------------------- */

static int opcode_supported(enum ibv_wr_opcode op)
{
    return op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM || op == IBV_WR_SEND ||
           op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_READ;
}

static int sq_full(const struct sib_qp *q, uint64_t extra)
{
    return q->posted + extra - q->retired >= q->sq_size;
}

static int can_post(const struct sib_qp *q)
{
    enum ibv_qp_state s = q->qpx.qp_base.state;
    return s == IBV_QPS_RTS || s == IBV_QPS_ERR || s == IBV_QPS_SQD;
}

/* Fills the WQE of seq from wr; 0 or the errno an HCA driver returns. */
static int build(struct sib_qp *q, const struct ibv_send_wr *wr, uint64_t seq)
{
    if (!opcode_supported(wr->opcode) || wr->num_sge < 0 || (uint32_t)wr->num_sge > q->cap.max_send_sge)
        return EINVAL;
    struct sib_wqe *w = &q->sq[seq % q->sq_size];
    memset(w, 0, sizeof *w);
    w->wr_id = wr->wr_id;
    w->posted_at = sib_now();
    w->opcode = wr->opcode;
    w->flags = wr->send_flags;
    w->imm = wr->imm_data;
    w->remote_addr = wr->wr.rdma.remote_addr;
    w->rkey = wr->wr.rdma.rkey;
    w->nsge = (uint32_t)wr->num_sge;
    memcpy(w->sge, wr->sg_list, (size_t)wr->num_sge * sizeof *w->sge);
    if (!(w->flags & IBV_SEND_INLINE) || w->opcode == IBV_WR_RDMA_READ)
        return 0;
    /* Inline data is copied now: the caller may reuse its buffer at once. */
    uint8_t *dst = q->inline_buf + (seq % q->sq_size) * q->cap.max_inline_data;
    uint32_t len = 0;
    for (int i = 0; i < wr->num_sge; i++) {
        if (len + wr->sg_list[i].length > q->cap.max_inline_data)
            return EINVAL;
        memcpy(dst + len, (void *)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
        len += wr->sg_list[i].length;
    }
    w->inline_len = len;
    return 0;
}

int sib_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
    struct sib_qp *q = sib_qp_of(qp);
    pthread_mutex_lock(&q->ctx->lock);
    int err = can_post(q) ? 0 : EINVAL;
    for (; wr != NULL && !err; wr = wr->next) {
        err = sq_full(q, 0) ? ENOMEM : build(q, wr, q->posted);
        if (!err)
            q->posted++;
    }
    if (err && bad != NULL)
        *bad = wr;
    progress_sq(q);
    pthread_mutex_unlock(&q->ctx->lock);
    return err;
}

int sib_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
    struct sib_qp *q = sib_qp_of(qp);
    struct sib_shqp *s = q->sh;
    pthread_mutex_lock(&q->ctx->lock);
    int err = qp->state == IBV_QPS_RESET ? EINVAL : 0;
    for (; wr != NULL && !err; wr = wr->next) {
        uint32_t h = atomic_load(&s->rq_head);
        if (wr->num_sge < 0 || (uint32_t)wr->num_sge > q->cap.max_recv_sge)
            err = EINVAL;
        else if (h - q->rq_retired >= (q->cap.max_recv_wr ? q->cap.max_recv_wr : 1))
            err = ENOMEM;
        if (err)
            break;
        struct sib_shrecv *r = &sib_rq(s)[h & (s->rq_size - 1)];
        r->wr_id = wr->wr_id;
        r->nsge = (uint32_t)wr->num_sge;
        for (int i = 0; i < wr->num_sge; i++)
        {
            r->sge[i].addr = wr->sg_list[i].addr;
            r->sge[i].len = wr->sg_list[i].length;
            r->sge[i].lkey = wr->sg_list[i].lkey;
        }
        atomic_store_explicit(&s->rq_head, h + 1, memory_order_release);
    }
    if (err && bad != NULL)
        *bad = wr;
    if (qp->state == IBV_QPS_ERR)
        flush_rq(q);
    pthread_mutex_unlock(&q->ctx->lock);
    return err;
}

/* ---- the ibv_wr_* interface ----------------------------------------------------- */

static struct sib_qp *qx(struct ibv_qp_ex *x) { return SIB_CONTAINER(x, struct sib_qp, qpx); }

static struct sib_wqe *last_wqe(struct sib_qp *q)
{
    return q->batch_err || q->batch_n == 0 ? NULL : &q->sq[(q->posted + q->batch_n - 1) % q->sq_size];
}

static struct sib_wqe *new_wqe(struct ibv_qp_ex *x, enum ibv_wr_opcode op)
{
    struct sib_qp *q = qx(x);
    if (q->batch_err)
        return NULL;
    if (sq_full(q, q->batch_n)) {
        q->batch_err = ENOMEM;
        return NULL;
    }
    struct sib_wqe *w = &q->sq[(q->posted + q->batch_n) % q->sq_size];
    memset(w, 0, sizeof *w);
    w->wr_id = x->wr_id;
    w->posted_at = sib_now();
    w->flags = x->wr_flags & ~(unsigned)IBV_SEND_INLINE;
    w->opcode = op;
    q->batch_n++;
    return w;
}

static void wr_start(struct ibv_qp_ex *x)
{
    struct sib_qp *q = qx(x);
    pthread_mutex_lock(&q->ctx->lock);
    q->batch_n = 0;
    q->batch_err = 0;
}

static int wr_complete(struct ibv_qp_ex *x)
{
    struct sib_qp *q = qx(x);
    int err = q->batch_err ? q->batch_err : can_post(q) ? 0 : EINVAL;
    if (!err)
        q->posted += q->batch_n;
    q->batch_n = 0;
    q->batch_err = 0;
    progress_sq(q);
    pthread_mutex_unlock(&q->ctx->lock);
    return err;
}

static void wr_abort(struct ibv_qp_ex *x)
{
    struct sib_qp *q = qx(x);
    q->batch_n = 0;
    q->batch_err = 0;
    pthread_mutex_unlock(&q->ctx->lock);
}

static void wr_rdma_write(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr)
{
    struct sib_wqe *w = new_wqe(x, IBV_WR_RDMA_WRITE);
    if (w != NULL) {
        w->rkey = rkey;
        w->remote_addr = addr;
    }
}

static void wr_rdma_write_imm(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr, __be32 imm)
{
    struct sib_wqe *w = new_wqe(x, IBV_WR_RDMA_WRITE_WITH_IMM);
    if (w != NULL) {
        w->rkey = rkey;
        w->remote_addr = addr;
        w->imm = imm;
    }
}

static void wr_rdma_read(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr)
{
    struct sib_wqe *w = new_wqe(x, IBV_WR_RDMA_READ);
    if (w != NULL) {
        w->rkey = rkey;
        w->remote_addr = addr;
    }
}

static void wr_send(struct ibv_qp_ex *x) { new_wqe(x, IBV_WR_SEND); }

static void wr_send_imm(struct ibv_qp_ex *x, __be32 imm)
{
    struct sib_wqe *w = new_wqe(x, IBV_WR_SEND_WITH_IMM);
    if (w != NULL)
        w->imm = imm;
}

static void wr_set_sge_list(struct ibv_qp_ex *x, size_t n, const struct ibv_sge *list)
{
    struct sib_qp *q = qx(x);
    struct sib_wqe *w = last_wqe(q);
    if (w == NULL)
        return;
    if (n > q->cap.max_send_sge) {
        q->batch_err = EINVAL;
        return;
    }
    memcpy(w->sge, list, n * sizeof *list);
    w->nsge = (uint32_t)n;
}

static void wr_set_sge(struct ibv_qp_ex *x, uint32_t lkey, uint64_t addr, uint32_t length)
{
    struct ibv_sge s = {addr, length, lkey};
    wr_set_sge_list(x, 1, &s);
}

static void wr_set_inline_data_list(struct ibv_qp_ex *x, size_t n, const struct ibv_data_buf *bufs)
{
    struct sib_qp *q = qx(x);
    struct sib_wqe *w = last_wqe(q);
    if (w == NULL)
        return;
    uint64_t seq = q->posted + q->batch_n - 1;
    uint8_t *dst = q->inline_buf + (seq % q->sq_size) * q->cap.max_inline_data;
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        if (len + bufs[i].length > q->cap.max_inline_data) {
            q->batch_err = EINVAL;
            return;
        }
        memcpy(dst + len, bufs[i].addr, bufs[i].length);
        len += bufs[i].length;
    }
    w->inline_len = (uint32_t)len;
    w->flags |= IBV_SEND_INLINE;
}

static void wr_set_inline_data(struct ibv_qp_ex *x, void *addr, size_t length)
{
    struct ibv_data_buf b = {addr, length};
    wr_set_inline_data_list(x, 1, &b);
}

/* What this device has not: the batch fails at wr_complete. */
static void refuse(struct ibv_qp_ex *x) { qx(x)->batch_err = EOPNOTSUPP; }
static void wr_atomic_cmp_swp(struct ibv_qp_ex *x, uint32_t k, uint64_t a, uint64_t c, uint64_t s)
{
    (void)k, (void)a, (void)c, (void)s;
    refuse(x);
}
static void wr_atomic_fetch_add(struct ibv_qp_ex *x, uint32_t k, uint64_t a, uint64_t v)
{
    (void)k, (void)a, (void)v;
    refuse(x);
}
static void wr_bind_mw(struct ibv_qp_ex *x, struct ibv_mw *mw, uint32_t k, const struct ibv_mw_bind_info *b)
{
    (void)mw, (void)k, (void)b;
    refuse(x);
}
static void wr_local_inv(struct ibv_qp_ex *x, uint32_t k)
{
    (void)k;
    refuse(x);
}
static void wr_send_inv(struct ibv_qp_ex *x, uint32_t k)
{
    (void)k;
    refuse(x);
}
static void wr_send_tso(struct ibv_qp_ex *x, void *h, uint16_t hs, uint16_t mss)
{
    (void)h, (void)hs, (void)mss;
    refuse(x);
}
static void wr_set_ud_addr(struct ibv_qp_ex *x, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey)
{
    (void)ah, (void)qpn, (void)qkey;
    qx(x)->batch_err = EINVAL; /* not a UD QP */
}
static void wr_set_xrc_srqn(struct ibv_qp_ex *x, uint32_t srqn)
{
    (void)srqn;
    qx(x)->batch_err = EINVAL; /* not an XRC QP */
}
static void wr_atomic_write(struct ibv_qp_ex *x, uint32_t k, uint64_t a, const void *v)
{
    (void)k, (void)a, (void)v;
    refuse(x);
}

void sib_install_wr_ops(struct sib_qp *q)
{
    struct ibv_qp_ex *x = &q->qpx;
    x->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
    x->wr_atomic_fetch_add = wr_atomic_fetch_add;
    x->wr_bind_mw = wr_bind_mw;
    x->wr_local_inv = wr_local_inv;
    x->wr_rdma_read = wr_rdma_read;
    x->wr_rdma_write = wr_rdma_write;
    x->wr_rdma_write_imm = wr_rdma_write_imm;
    x->wr_send = wr_send;
    x->wr_send_imm = wr_send_imm;
    x->wr_send_inv = wr_send_inv;
    x->wr_send_tso = wr_send_tso;
    x->wr_set_ud_addr = wr_set_ud_addr;
    x->wr_set_xrc_srqn = wr_set_xrc_srqn;
    x->wr_set_inline_data = wr_set_inline_data;
    x->wr_set_inline_data_list = wr_set_inline_data_list;
    x->wr_set_sge = wr_set_sge;
    x->wr_set_sge_list = wr_set_sge_list;
    x->wr_start = wr_start;
    x->wr_complete = wr_complete;
    x->wr_abort = wr_abort;
    x->wr_atomic_write = wr_atomic_write;
}
