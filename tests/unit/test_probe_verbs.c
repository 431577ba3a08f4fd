/* The RDMA measurement loops against a simulated HCA. ibv_post_send and
 * ibv_poll_cq dispatch through the context's ops table, so a test can stand
 * in for the provider: it checks every work request the loops post (queue
 * depth, moderation, addresses, keys), completes them in order, and can fail
 * or stall on demand. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/clock.h"
#include "probe/verbs_internal.h"

#define QPS 4
#define CQE_MAX (1 << 16)

struct cqe {
    uint64_t wr_id;
    uint32_t qp_num;
    int q, covers;
};

/* One simulated CQ with its QPs. */
struct sim {
    struct ibv_context ctx;
    struct ibv_cq cq;
    struct ibv_qp qp[QPS];
    int depth;
    int outstanding[QPS], since_signal[QPS];
    struct cqe *queue;
    int head, tail;
    long completions, fail_at; /* fail the completion with this index; -1 never */
    int stall;                 /* poll returns nothing */
    int copy;                  /* carry out the writes (latency loopback) */
    /* what the loops posted */
    long writes, posts, max_chain, overflow, wrong_count, wrong_target, inline_writes;
    uint64_t size, remote_lo, remote_hi;
    uint32_t rkey, lkey;
};

static struct sim *sim_of(struct ibv_context *ctx) { return (struct sim *)ctx; }

static int sim_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
    struct sim *s = sim_of(qp->context);
    int q = (int)(qp - s->qp), chain = 0;
    for (; wr != NULL; wr = wr->next) {
        chain++;
        if (s->outstanding[q] >= s->depth) {
            s->overflow++;
            *bad = wr;
            return ENOMEM;
        }
        uint64_t at = wr->wr.rdma.remote_addr;
        if (wr->opcode != IBV_WR_RDMA_WRITE || wr->num_sge != 1 || wr->sg_list->length != s->size ||
            wr->sg_list->lkey != s->lkey || wr->wr.rdma.rkey != s->rkey || at < s->remote_lo ||
            at + s->size > s->remote_hi)
            s->wrong_target++;
        s->inline_writes += (wr->send_flags & IBV_SEND_INLINE) != 0;
        if (s->copy)
            memcpy((void *)(uintptr_t)at, (void *)(uintptr_t)wr->sg_list->addr, wr->sg_list->length);
        s->outstanding[q]++;
        s->since_signal[q]++;
        s->writes++;
        if (wr->send_flags & IBV_SEND_SIGNALED) {
            /* The loops encode how many writes a completion covers. */
            if ((int)(wr->wr_id >> 16) != s->since_signal[q])
                s->wrong_count++;
            s->queue[s->tail++ % CQE_MAX] = (struct cqe){wr->wr_id, qp->qp_num, q, s->since_signal[q]};
            s->since_signal[q] = 0;
        }
    }
    s->posts++;
    if (chain > s->max_chain)
        s->max_chain = chain;
    return 0;
}

static int sim_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
    struct sim *s = sim_of(cq->context);
    int k = 0;
    while (!s->stall && k < n && s->head != s->tail) {
        struct cqe e = s->queue[s->head++ % CQE_MAX];
        int fail = s->completions++ == s->fail_at;
        wc[k++] = (struct ibv_wc){.wr_id = e.wr_id,
                                  .status = fail ? IBV_WC_RETRY_EXC_ERR : IBV_WC_SUCCESS,
                                  .qp_num = e.qp_num,
                                  .vendor_err = fail ? 0x81 : 0};
        s->outstanding[e.q] -= e.covers;
    }
    return k;
}

struct bench {
    struct sim sim;
    struct probe_verbs_dev dev;
    struct ibv_mr mr;
    struct probe_verbs_link link;
    char *local, *remote;
};

static void setup(struct bench *b, int nqp, int depth, uint64_t stride, uint64_t size)
{
    memset(b, 0, sizeof *b);
    struct sim *s = &b->sim;
    s->queue = calloc(CQE_MAX, sizeof *s->queue);
    s->ctx.ops.post_send = sim_post_send;
    s->ctx.ops.poll_cq = sim_poll_cq;
    s->cq.context = &s->ctx;
    s->depth = depth;
    s->fail_at = -1;
    s->size = size;
    s->rkey = 0x5151;
    s->lkey = 0x4242;
    for (int q = 0; q < QPS; q++) {
        s->qp[q].context = &s->ctx;
        s->qp[q].qp_num = 0x1a0 + (uint32_t)q;
    }
    b->local = calloc(2, (size_t)(stride * (uint64_t)nqp));
    b->remote = calloc(1, (size_t)(stride * (uint64_t)nqp));
    snprintf(b->dev.name, sizeof b->dev.name, "mlx5_7");
    b->mr.lkey = s->lkey;
    b->mr.rkey = 0x7777;
    struct probe_verbs_link *l = &b->link;
    l->dev = &b->dev;
    l->link_id = 3;
    l->nqp = nqp;
    l->tx_depth = depth;
    l->cq = &s->cq;
    for (int q = 0; q < nqp; q++)
        l->qp[q] = &s->qp[q];
    l->local = b->local;
    l->slot_len = stride * (uint64_t)nqp;
    l->mr = &b->mr;
    l->remote_addr = (uintptr_t)b->remote;
    l->rkey = s->rkey;
    snprintf(l->peer_name, sizeof l->peer_name, "rank 5 (node-b)");
    s->remote_lo = (uintptr_t)b->remote;
    s->remote_hi = s->remote_lo + stride * (uint64_t)nqp;
}

static void teardown(struct bench *b)
{
    free(b->sim.queue);
    free(b->local);
    free(b->remote);
}

static struct probe_size_spec run_of(uint64_t size, uint64_t stride, long iters, int cq_mod,
                                     int post_list, int depth)
{
    return (struct probe_size_spec){.size = size, .stride = stride, .iters = iters, .warmup = 50,
                              .cq_mod = cq_mod, .post_list = post_list, .tx_depth = depth,
                              .interval = 1e-4, .timeout = 2.0};
}

static int drained(const struct bench *b, int nqp)
{
    for (int q = 0; q < nqp; q++)
        if (b->sim.outstanding[q] != 0 || b->sim.since_signal[q] != 0)
            return 0;
    return b->sim.head == b->sim.tail;
}

static void test_iterations_are_counted_exactly(void)
{
    static struct bench b;
    setup(&b, 3, 16, 4096, 4096);
    struct probe_size_spec r = run_of(4096, 4096, 1000, 8, 4, 16);
    struct probe_verbs_link *links[1] = {&b.link};
    struct probe_measure m;
    struct fb_err err = {0};
    CHECK_INT(probe_verbs_write_bw(links, 1, &r, &m, &err), FB_OK);
    CHECK_INT(m.messages, 3 * 1000);
    CHECK_NEAR(m.bytes, 3000.0 * 4096, 0);
    CHECK(m.seconds > 0);
    CHECK_INT(b.sim.writes, 3 * (1000 + 50));
    CHECK_INT(b.sim.overflow, 0);
    CHECK_INT(b.sim.wrong_count, 0);
    CHECK_INT(b.sim.wrong_target, 0);
    CHECK(b.sim.max_chain <= 4);
    CHECK(drained(&b, 3));
    double sampled = 0;
    for (int i = 0; i < m.samples.n; i++)
        sampled += m.samples.bytes[i];
    CHECK_NEAR(sampled, m.bytes, 0);
    CHECK_INT(m.link, 3);
    teardown(&b);
}

/* -t exactly -Q + -l - 1, and counts that do not divide evenly: the tail
 * must still be signaled and nothing may stall. */
static void test_shallowest_allowed_queue_never_stalls(void)
{
    static struct bench b;
    setup(&b, 2, 100 + 7 - 1, 64, 64);
    struct probe_size_spec r = run_of(64, 64, 997, 100, 7, 106);
    r.warmup = 13;
    struct probe_verbs_link *links[1] = {&b.link};
    struct probe_measure m;
    struct fb_err err = {0};
    CHECK_INT(probe_verbs_write_bw(links, 1, &r, &m, &err), FB_OK);
    CHECK_STR(err.msg, "");
    CHECK_INT(m.messages, 2 * 997);
    CHECK_INT(b.sim.overflow, 0);
    CHECK_INT(b.sim.wrong_count, 0);
    CHECK(drained(&b, 2));
    teardown(&b);
}

static void test_duration_mode_drains_every_write(void)
{
    static struct bench b;
    setup(&b, 2, 32, 1024, 1024);
    struct probe_size_spec r = run_of(1024, 1024, 0, 5, 1, 32);
    r.duration = 0.05;
    r.margin = 0.01;
    struct probe_verbs_link *links[1] = {&b.link};
    struct probe_measure m;
    struct fb_err err = {0};
    double t0 = fb_now();
    CHECK_INT(probe_verbs_write_bw(links, 1, &r, &m, &err), FB_OK);
    CHECK(fb_now() - t0 < 1.0);
    CHECK(m.messages > 0);
    CHECK(m.seconds >= 0.05);
    CHECK_INT(b.sim.overflow, 0);
    CHECK_INT(b.sim.wrong_count, 0);
    CHECK(drained(&b, 2));
    teardown(&b);
}

static void test_completion_error_names_status_qp_and_peer(void)
{
    static struct bench b;
    setup(&b, 1, 16, 256, 256);
    b.sim.fail_at = 5;
    struct probe_size_spec r = run_of(256, 256, 500, 4, 1, 16);
    struct probe_verbs_link *links[1] = {&b.link};
    struct probe_measure m;
    struct fb_err err = {0};
    CHECK_INT(probe_verbs_write_bw(links, 1, &r, &m, &err), FB_ERR_RUNTIME);
    CHECK_CONTAINS(err.msg, "RDMA WRITE from mlx5_7 to rank 5 (node-b) failed");
    CHECK_CONTAINS(err.msg, ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR));
    CHECK_CONTAINS(err.msg, "vendor error 0x81");
    CHECK_CONTAINS(err.msg, "QP 0x1a0");
    teardown(&b);
}

static void test_silent_peer_times_out(void)
{
    static struct bench b;
    setup(&b, 1, 16, 256, 256);
    b.sim.stall = 1;
    struct probe_size_spec r = run_of(256, 256, 500, 4, 1, 16);
    r.timeout = 0.2;
    struct probe_verbs_link *links[1] = {&b.link};
    struct probe_measure m;
    struct fb_err err = {0};
    CHECK_INT(probe_verbs_write_bw(links, 1, &r, &m, &err), FB_ERR_TIMEOUT);
    CHECK_CONTAINS(err.msg, "no RDMA completion from rank 5 (node-b)");
    CHECK_CONTAINS(err.msg, "--timeout");
    teardown(&b);
}

static void test_two_links_at_once(void)
{
    static struct bench a, c;
    setup(&a, 2, 16, 512, 512);
    setup(&c, 1, 16, 512, 512);
    c.link.link_id = 4;
    struct probe_size_spec r = run_of(512, 512, 300, 4, 2, 16);
    struct probe_verbs_link *links[2] = {&a.link, &c.link};
    struct probe_measure m[2];
    struct fb_err err = {0};
    CHECK_INT(probe_verbs_write_bw(links, 2, &r, m, &err), FB_OK);
    CHECK_INT(m[0].link, 3);
    CHECK_INT(m[1].link, 4);
    CHECK_INT(m[0].messages, 600);
    CHECK_INT(m[1].messages, 300);
    CHECK(drained(&a, 2) && drained(&c, 1));
    teardown(&a);
    teardown(&c);
}

/* The write lands in this side's own receive area: a peer that answers at
 * once. Sequence bytes, inline sends and the round-trip statistics. */
static void test_latency_loopback(void)
{
    static struct bench b;
    setup(&b, 1, 16, 64, 2);
    b.sim.copy = 1;
    b.link.remote_addr = (uintptr_t)b.local; /* receive area = the first stride */
    b.sim.remote_lo = (uintptr_t)b.local;
    b.sim.remote_hi = b.sim.remote_lo + 64;
    b.link.max_inline = 64;
    struct probe_size_spec r = run_of(2, 64, 300, 1, 1, 16);
    r.warmup = 20;
    struct probe_measure m;
    struct fb_err err = {0};
    CHECK_INT(probe_verbs_write_lat(&b.link, &r, 1, &m, &err), FB_OK);
    CHECK_INT(m.messages, 300);
    CHECK(m.lat.valid);
    CHECK(m.lat.min_us > 0 && m.lat.min_us <= m.lat.p50_us && m.lat.p50_us <= m.lat.max_us);
    CHECK_INT(b.sim.writes, 320);
    CHECK_INT(b.sim.inline_writes, 320);
    CHECK_INT(b.sim.wrong_target, 0);
    CHECK_INT((unsigned char)b.local[1], (320 - 1) % 254 + 1); /* the last sequence number */
    teardown(&b);
}

static void test_latency_duration_ends_with_the_stop_mark(void)
{
    static struct bench b;
    setup(&b, 1, 16, 64, 8);
    b.sim.copy = 1;
    b.link.remote_addr = (uintptr_t)b.local;
    b.sim.remote_lo = (uintptr_t)b.local;
    b.sim.remote_hi = b.sim.remote_lo + 64;
    struct probe_size_spec r = run_of(8, 64, 0, 1, 1, 16);
    r.duration = 0.02;
    struct probe_measure m;
    struct fb_err err = {0};
    CHECK_INT(probe_verbs_write_lat(&b.link, &r, 1, &m, &err), FB_OK);
    CHECK(m.messages > 0);
    CHECK_INT((unsigned char)b.local[7], 255);
    teardown(&b);
}

int main(void)
{
    RUN(test_iterations_are_counted_exactly);
    RUN(test_shallowest_allowed_queue_never_stalls);
    RUN(test_duration_mode_drains_every_write);
    RUN(test_completion_error_names_status_qp_and_peer);
    RUN(test_silent_peer_times_out);
    RUN(test_two_links_at_once);
    RUN(test_latency_loopback);
    RUN(test_latency_duration_ends_with_the_stop_mark);
    return fbt_done();
}
