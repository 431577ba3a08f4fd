/* Completion queues, completion channels and RC queue pairs: creation,
 * the state machine an HCA enforces (required attributes per transition,
 * path MTU, GID index, addressing), queries and destruction. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "ibv_internal.h"

/* ---- completion channels and CQs ------------------------------------------ */

struct sib_channel {
    struct ibv_comp_channel ch;
    struct sib_cq *events, **events_tail; /* CQs whose notification fired */
};

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
    struct sib_channel *c = calloc(1, sizeof *c);
    if (c == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    c->ch.context = context;
    c->ch.fd = eventfd(0, EFD_CLOEXEC);
    if (c->ch.fd < 0) {
        free(c);
        return NULL;
    }
    c->events_tail = &c->events;
    return &c->ch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
    if (channel->refcnt > 0)
        return EBUSY;
    close(channel->fd);
    free(SIB_CONTAINER(channel, struct sib_channel, ch));
    return 0;
}

/* Called with the context lock held when a completion reaches an armed CQ. */
void sib_notify(struct sib_cq *cq)
{
    struct sib_channel *c = SIB_CONTAINER(cq->cq.channel, struct sib_channel, ch);
    cq->armed = 0;
    cq->next_event = NULL;
    *c->events_tail = cq;
    c->events_tail = &cq->next_event;
    uint64_t one = 1;
    if (write(c->ch.fd, &one, sizeof one) != sizeof one)
        return; /* the counter is full: readers are woken already */
}

/* No interrupt ever comes from another process: waiting for an event is
 * progress (the peer's deliveries are drained) until one fired. A channel
 * fd the caller made non-blocking gets one pass, then EAGAIN. */
int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
    struct sib_channel *c = SIB_CONTAINER(channel, struct sib_channel, ch);
    struct sib_ctx *x = sib_ctx_of(channel->context);
    int nonblock = fcntl(channel->fd, F_GETFL) & O_NONBLOCK;
    for (;;) {
        pthread_mutex_lock(&x->lock);
        sib_progress(x);
        struct sib_cq *got = c->events;
        if (got != NULL) {
            c->events = got->next_event;
            if (c->events == NULL)
                c->events_tail = &c->events;
        }
        pthread_mutex_unlock(&x->lock);
        if (got != NULL) {
            uint64_t n;
            struct pollfd p = {.fd = channel->fd, .events = POLLIN};
            if (poll(&p, 1, 0) == 1 && read(channel->fd, &n, sizeof n) < 0)
                n = 0;
            *cq = &got->cq;
            *cq_context = got->cq.cq_context;
            return 0;
        }
        if (nonblock) {
            errno = EAGAIN;
            return -1;
        }
        struct timespec t = {0, 20000};
        nanosleep(&t, NULL);
    }
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
    pthread_mutex_lock(&cq->mutex);
    cq->comp_events_completed += nevents;
    pthread_cond_signal(&cq->cond);
    pthread_mutex_unlock(&cq->mutex);
}

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
                             struct ibv_comp_channel *channel, int comp_vector)
{
    if (cqe < 1 || cqe > SIB_CQE_MAX || comp_vector < 0 || comp_vector >= context->num_comp_vectors) {
        errno = EINVAL;
        return NULL;
    }
    struct sib_cq *c = calloc(1, sizeof *c);
    if (c != NULL)
        c->ring = calloc((size_t)cqe, sizeof *c->ring);
    if (c == NULL || c->ring == NULL) {
        free(c);
        errno = ENOMEM;
        return NULL;
    }
    c->cap = (uint32_t)cqe;
    c->cq.context = context;
    c->cq.channel = channel;
    c->cq.cq_context = cq_context;
    c->cq.cqe = cqe;
    pthread_mutex_init(&c->cq.mutex, NULL);
    pthread_cond_init(&c->cq.cond, NULL);
    if (channel != NULL)
        channel->refcnt++;
    return &c->cq;
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
    struct sib_ctx *x = sib_ctx_of(cq->context);
    pthread_mutex_lock(&x->lock);
    for (struct sib_qp *q = x->qps; q; q = q->next)
        if (q->qpx.qp_base.send_cq == cq || q->qpx.qp_base.recv_cq == cq) {
            pthread_mutex_unlock(&x->lock);
            return EBUSY;
        }
    if (cq->channel != NULL) {
        struct sib_channel *ch = SIB_CONTAINER(cq->channel, struct sib_channel, ch);
        struct sib_cq *c = sib_cq_of(cq);
        for (struct sib_cq **p = &ch->events; *p; p = &(*p)->next_event)
            if (*p == c) {
                *p = c->next_event;
                if (*p == NULL)
                    ch->events_tail = p;
                break;
            }
        cq->channel->refcnt--;
    }
    pthread_mutex_unlock(&x->lock);
    struct sib_cq *c = sib_cq_of(cq);
    free(c->ring);
    free(c);
    return 0;
}

/* ---- queue pairs ------------------------------------------------------------ */

static uint32_t pow2_at_least(uint32_t n)
{
    uint32_t p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

static int check_caps(const struct ibv_qp_cap *c)
{
    return c->max_send_wr > SIB_QP_WR_MAX || c->max_recv_wr > SIB_QP_WR_MAX ||
                   c->max_send_sge > SIB_SGE_MAX || c->max_recv_sge > SIB_RECV_SGE_MAX ||
                   c->max_inline_data > SIB_INLINE_MAX
               ? EINVAL
               : 0;
}

/* The shared segment peers read: identity, port, receive rings. */
static int publish(struct sib_qp *q)
{
    const struct sib_dev *d = q->ctx->dev;
    uint32_t rq = pow2_at_least(q->cap.max_recv_wr ? q->cap.max_recv_wr : 1);
    size_t len = sizeof *q->sh + rq * (sizeof(struct sib_shrecv) + sizeof(struct sib_shcqe));
    char name[32];
    snprintf(name, sizeof name, "qp-%06x", q->qpx.qp_base.qp_num);
    q->sh = sib_map(name, len, 1, &q->sh_len);
    if (q->sh == NULL)
        return EIO;
    struct sib_shqp *s = q->sh;
    s->qpn = q->qpx.qp_base.qp_num;
    s->pid = (int32_t)getpid();
    s->pd_id = SIB_CONTAINER(q->qpx.qp_base.pd, struct sib_pd, pd)->id;
    s->link_layer = d->port.link_layer;
    s->port_active = (uint8_t)d->port.active;
    s->lid = d->port.lid;
    s->ngid = (uint8_t)d->port.ngid;
    memcpy(s->gid, d->port.gid, sizeof s->gid);
    s->cap_gbps = d->port.cap_gbps;
    s->rx_gbps = d->port.rx_gbps;
    snprintf(s->dev, sizeof s->dev, "%s", d->dev.name);
    snprintf(s->host, sizeof s->host, "%s", sib_host());
    s->rq_size = rq;
    atomic_store(&s->state, (uint32_t)IBV_QPS_RESET);
    atomic_thread_fence(memory_order_release);
    s->magic = SIB_MAGIC_QP; /* last: a peer that sees it sees the rest */
    return 0;
}

struct ibv_qp *sib_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *a)
{
    const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
                           IBV_QP_INIT_ATTR_CREATE_FLAGS;
    int err = 0;
    if (!(a->comp_mask & IBV_QP_INIT_ATTR_PD) || a->pd == NULL || (a->comp_mask & ~known))
        err = EINVAL;
    else if ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && a->create_flags)
        err = EOPNOTSUPP;
    else if (a->qp_type != IBV_QPT_RC || a->srq != NULL || a->xrcd != NULL)
        err = EOPNOTSUPP; /* RC only, no shared receive queues */
    else if (a->send_cq == NULL || a->recv_cq == NULL || a->send_cq->context != context ||
             a->recv_cq->context != context)
        err = EINVAL;
    else
        err = check_caps(&a->cap);
    struct sib_qp *q = err ? NULL : calloc(1, sizeof *q);
    if (q == NULL) {
        errno = err ? err : ENOMEM;
        return NULL;
    }
    q->ctx = sib_ctx_of(context);
    q->cap = a->cap;
    q->sq_size = a->cap.max_send_wr ? a->cap.max_send_wr : 1;
    q->sq = calloc(q->sq_size, sizeof *q->sq);
    q->inline_buf = calloc(q->sq_size, a->cap.max_inline_data ? a->cap.max_inline_data : 1);
    struct ibv_qp *b = &q->qpx.qp_base;
    *b = (struct ibv_qp){.context = context, .qp_context = a->qp_context, .pd = a->pd,
                         .send_cq = a->send_cq, .recv_cq = a->recv_cq, .qp_type = a->qp_type,
                         .state = IBV_QPS_RESET, .qp_num = sib_unique(SIB_ID_QPN)};
    b->handle = b->qp_num;
    pthread_mutex_init(&b->mutex, NULL);
    pthread_cond_init(&b->cond, NULL);
    q->sq_sig_all = a->sq_sig_all;
    q->port = 1;
    err = q->sq == NULL || q->inline_buf == NULL ? ENOMEM : publish(q);
    if (err) {
        free(q->sq);
        free(q->inline_buf);
        free(q);
        errno = err;
        return NULL;
    }
    sib_install_wr_ops(q);
    q->qpx.comp_mask = 0;
    struct sib_ctx *x = q->ctx;
    pthread_mutex_lock(&x->lock);
    q->next = x->qps;
    x->qps = q;
    pthread_mutex_unlock(&x->lock);
    return b;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a)
{
    struct ibv_qp_init_attr_ex ex = {
        .qp_context = a->qp_context, .send_cq = a->send_cq, .recv_cq = a->recv_cq, .srq = a->srq,
        .cap = a->cap, .qp_type = a->qp_type, .sq_sig_all = a->sq_sig_all,
        .comp_mask = IBV_QP_INIT_ATTR_PD, .pd = pd,
    };
    struct ibv_qp *qp = sib_create_qp_ex(pd->context, &ex);
    if (qp != NULL)
        a->cap = ex.cap;
    return qp;
}

struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp) { return &sib_qp_of(qp)->qpx; }

int ibv_destroy_qp(struct ibv_qp *qp)
{
    struct sib_qp *q = sib_qp_of(qp);
    struct sib_ctx *x = q->ctx;
    pthread_mutex_lock(&x->lock);
    for (struct sib_qp **p = &x->qps; *p; p = &(*p)->next)
        if (*p == q) {
            *p = q->next;
            break;
        }
    /* Completions still queued for it must not retire a freed queue. */
    struct ibv_cq *cqs[2] = {qp->send_cq, qp->recv_cq};
    for (int i = 0; i < 2; i++) {
        struct sib_cq *c = sib_cq_of(cqs[i]);
        for (uint64_t k = c->tail; k < c->head; k++)
            if (c->ring[k % c->cap].qp == q)
                c->ring[k % c->cap].qp = NULL;
    }
    pthread_mutex_unlock(&x->lock);
    atomic_store(&q->sh->state, (uint32_t)IBV_QPS_RESET);
    q->sh->pid = 0;
    char path[1024];
    snprintf(path, sizeof path, "%s/qp-%06x", sib_registry_dir(), qp->qp_num);
    unlink(path);
    munmap(q->sh, q->sh_len);
    if (q->peer != NULL)
        munmap(q->peer, q->peer_len);
    free(q->sq);
    free(q->inline_buf);
    free(q);
    return 0;
}

/* ---- the state machine ------------------------------------------------------ */

static int mask_has(int mask, int required) { return (mask & required) == required; }

static int check_init(struct sib_qp *q, const struct ibv_qp_attr *a, int mask)
{
    if (mask & IBV_QP_PORT && a->port_num != 1)
        return EINVAL;
    if (mask & IBV_QP_PKEY_INDEX && a->pkey_index >= 128)
        return EINVAL;
    if (mask & IBV_QP_ACCESS_FLAGS &&
        (a->qp_access_flags & ~(unsigned)(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                          IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)))
        return EINVAL;
    (void)q;
    return 0;
}

/* The address vector and path of RTR, checked against this port. */
static int check_rtr(struct sib_qp *q, const struct ibv_qp_attr *a, int mask)
{
    const struct sib_port *p = &q->ctx->dev->port;
    if (mask & IBV_QP_PATH_MTU && (a->path_mtu < IBV_MTU_256 || a->path_mtu > p->mtu))
        return EINVAL; /* above the port's active MTU */
    if (mask & IBV_QP_DEST_QPN && a->dest_qp_num > 0xffffff)
        return EINVAL;
    if (mask & IBV_QP_MAX_DEST_RD_ATOMIC && a->max_dest_rd_atomic > 16)
        return EINVAL;
    if (mask & IBV_QP_MIN_RNR_TIMER && a->min_rnr_timer > 31)
        return EINVAL;
    if (mask & IBV_QP_AV) {
        const struct ibv_ah_attr *av = &a->ah_attr;
        if (av->port_num != 0 && av->port_num != 1)
            return EINVAL;
        if (p->link_layer == IBV_LINK_LAYER_ETHERNET && !av->is_global)
            return EINVAL; /* RoCE has no LIDs: the GRH routes */
        if (av->is_global && av->grh.sgid_index >= p->ngid)
            return EINVAL; /* beyond the table, or an empty entry */
        if (!av->is_global && av->dlid == 0)
            return EINVAL;
    }
    return 0;
}

static int check_rts(const struct ibv_qp_attr *a, int mask)
{
    if (mask & IBV_QP_TIMEOUT && a->timeout > 31)
        return EINVAL;
    if (mask & IBV_QP_RETRY_CNT && a->retry_cnt > 7)
        return EINVAL;
    if (mask & IBV_QP_RNR_RETRY && a->rnr_retry > 7)
        return EINVAL;
    if (mask & IBV_QP_MAX_QP_RD_ATOMIC && a->max_rd_atomic > 16)
        return EINVAL;
    if (mask & IBV_QP_SQ_PSN && a->sq_psn > 0xffffff)
        return EINVAL;
    return 0;
}

/* Required attributes of each transition (IB spec, table of QP state
 * transitions, RC); 0 when the transition is not allowed at all. */
static int required_mask(enum ibv_qp_state from, enum ibv_qp_state to, int *required)
{
    *required = 0;
    if (to == IBV_QPS_RESET || to == IBV_QPS_ERR)
        return 1;
    if (from == IBV_QPS_RESET && to == IBV_QPS_INIT)
        *required = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
    else if (from == IBV_QPS_INIT && to == IBV_QPS_RTR)
        *required = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    else if (from == IBV_QPS_RTR && to == IBV_QPS_RTS)
        *required = IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                    IBV_QP_MAX_QP_RD_ATOMIC;
    else if (!((from == IBV_QPS_INIT && to == IBV_QPS_INIT) || (from == IBV_QPS_RTS && to == IBV_QPS_RTS)))
        return 0;
    return 1;
}

static void apply(struct sib_qp *q, const struct ibv_qp_attr *a, int mask)
{
    if (mask & IBV_QP_PKEY_INDEX)
        q->pkey_index = a->pkey_index;
    if (mask & IBV_QP_PORT)
        q->port = a->port_num;
    if (mask & IBV_QP_ACCESS_FLAGS) {
        q->access = a->qp_access_flags;
        q->sh->access = a->qp_access_flags;
    }
    if (mask & IBV_QP_AV)
        q->av = a->ah_attr;
    if (mask & IBV_QP_PATH_MTU)
        q->path_mtu = a->path_mtu;
    if (mask & IBV_QP_DEST_QPN) {
        q->dest_qpn = a->dest_qp_num;
        atomic_store(&q->sh->dest_qpn, a->dest_qp_num);
    }
    if (mask & IBV_QP_RQ_PSN)
        q->rq_psn = a->rq_psn;
    if (mask & IBV_QP_SQ_PSN)
        q->sq_psn = a->sq_psn;
    if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
        q->max_dest_rd_atomic = a->max_dest_rd_atomic;
    if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
        q->max_rd_atomic = a->max_rd_atomic;
    if (mask & IBV_QP_MIN_RNR_TIMER) {
        q->min_rnr_timer = a->min_rnr_timer;
        q->sh->min_rnr_timer = a->min_rnr_timer;
    }
    if (mask & IBV_QP_TIMEOUT)
        q->timeout = a->timeout;
    if (mask & IBV_QP_RETRY_CNT)
        q->retry_cnt = a->retry_cnt;
    if (mask & IBV_QP_RNR_RETRY)
        q->rnr_retry = a->rnr_retry;
}

/* Back to RESET: every queue emptied without completions. */
static void reset(struct sib_qp *q)
{
    q->posted = q->executed = q->retired = 0;
    q->batch_n = 0;
    struct sib_shqp *s = q->sh;
    atomic_store(&s->rq_head, 0u);
    atomic_store(&s->rq_tail, 0u);
    atomic_store(&s->in_head, 0u);
    atomic_store(&s->in_tail, 0u);
    atomic_store(&s->dest_qpn, 0u);
    if (q->peer != NULL) {
        munmap(q->peer, q->peer_len);
        q->peer = NULL;
    }
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
    struct sib_qp *q = sib_qp_of(qp);
    struct sib_ctx *x = q->ctx;
    pthread_mutex_lock(&x->lock);
    enum ibv_qp_state from = qp->state;
    if (attr_mask & IBV_QP_CUR_STATE && attr->cur_qp_state != from) {
        pthread_mutex_unlock(&x->lock);
        return EINVAL;
    }
    enum ibv_qp_state to = attr_mask & IBV_QP_STATE ? attr->qp_state : from;
    int required = 0, err = 0;
    if (!required_mask(from, to, &required) || !mask_has(attr_mask, required))
        err = EINVAL;
    if (!err && to != IBV_QPS_RESET && to != IBV_QPS_ERR)
        err = check_init(q, attr, attr_mask) ? EINVAL
              : check_rtr(q, attr, attr_mask)  ? EINVAL
              : check_rts(attr, attr_mask);
    if (!err) {
        if (to == IBV_QPS_RESET)
            reset(q);
        else
            apply(q, attr, attr_mask);
        qp->state = to;
        atomic_store(&q->sh->state, (uint32_t)to);
        if (to == IBV_QPS_ERR)
            sib_flush(q);
    }
    pthread_mutex_unlock(&x->lock);
    return err;
}

int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask, struct ibv_qp_init_attr *init_attr)
{
    (void)attr_mask;
    struct sib_qp *q = sib_qp_of(qp);
    memset(attr, 0, sizeof *attr);
    attr->qp_state = attr->cur_qp_state = qp->state;
    attr->path_mtu = q->path_mtu;
    attr->qp_access_flags = q->access;
    attr->pkey_index = q->pkey_index;
    attr->port_num = q->port;
    attr->dest_qp_num = q->dest_qpn;
    attr->rq_psn = q->rq_psn;
    attr->sq_psn = q->sq_psn;
    attr->ah_attr = q->av;
    attr->timeout = q->timeout;
    attr->retry_cnt = q->retry_cnt;
    attr->rnr_retry = q->rnr_retry;
    attr->min_rnr_timer = q->min_rnr_timer;
    attr->max_rd_atomic = q->max_rd_atomic;
    attr->max_dest_rd_atomic = q->max_dest_rd_atomic;
    attr->cap = q->cap;
    if (init_attr != NULL) {
        memset(init_attr, 0, sizeof *init_attr);
        init_attr->qp_context = qp->qp_context;
        init_attr->send_cq = qp->send_cq;
        init_attr->recv_cq = qp->recv_cq;
        init_attr->cap = q->cap;
        init_attr->qp_type = qp->qp_type;
        init_attr->sq_sig_all = q->sq_sig_all;
    }
    return 0;
}
