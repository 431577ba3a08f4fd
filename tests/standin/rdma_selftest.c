/* Checks of the libibverbs stand-in between two processes (a forked
 * responder and the initiator), each with its own context and memory, as
 * an HCA would be held to them: bytes and completion fields of WRITE,
 * WRITE_WITH_IMM, READ, SEND/RECV (with immediate, inline, unsignaled,
 * through the ibv_wr_* interface), a completion channel, and the failures:
 * bad rkey, wrong destination QPN, receiver not ready, a full send queue,
 * transitions with missing or invalid attributes, dma-buf registration.
 * Prints "ok - ..." / "not ok - ..." lines; exits 1 on any failure.
 * Built by tests/standin/test_rdma_standin.sh against build/standin-rdma:
 *   rdma_selftest            every case
 *   rdma_selftest nodmabuf   ibv_reg_dmabuf_mr must refuse (EOPNOTSUPP) */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BUF 65536

static int failures;
static int to_peer = -1, from_peer = -1;

static void check(int ok, const char *name, const char *why)
{
    if (ok)
        printf("ok - %s\n", name);
    else
        printf("not ok - %s: %s\n", name, why);
    failures += !ok;
    fflush(stdout);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void xchg(const void *mine, void *theirs, size_t n)
{
    if (write(to_peer, mine, n) != (ssize_t)n || read(from_peer, theirs, n) != (ssize_t)n) {
        perror("rdma_selftest: pipe");
        exit(2);
    }
}

static void sync_peer(void)
{
    char a = 0, b;
    xchg(&a, &b, 1);
}

struct end {
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_cq *cq;
    struct ibv_comp_channel *ch;
    struct ibv_qp *qp;
    struct ibv_mr *mr;
    char *buf;
    struct ibv_port_attr port;
};

struct info {
    uint32_t qpn, rkey;
    uint64_t addr;
    uint16_t lid;
};

static void open_end(struct end *e)
{
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    if (list == NULL || n < 1) {
        printf("not ok - a device: none\n");
        exit(1);
    }
    e->ctx = ibv_open_device(list[0]);
    ibv_free_device_list(list);
    ibv_query_port(e->ctx, 1, &e->port);
    e->pd = ibv_alloc_pd(e->ctx);
    e->buf = aligned_alloc(4096, BUF);
    memset(e->buf, 0, BUF);
    e->mr = ibv_reg_mr(e->pd, e->buf, BUF,
                       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    e->ch = ibv_create_comp_channel(e->ctx);
    e->cq = ibv_create_cq(e->ctx, 64, NULL, e->ch, 0);
    if (e->pd == NULL || e->mr == NULL || e->cq == NULL) {
        printf("not ok - resources: %s\n", strerror(errno));
        exit(1);
    }
}

static struct ibv_qp *new_qp(struct end *e, uint32_t depth)
{
    struct ibv_qp_init_attr a = {.send_cq = e->cq, .recv_cq = e->cq, .qp_type = IBV_QPT_RC,
                                 .cap = {.max_send_wr = depth, .max_recv_wr = 16, .max_send_sge = 2,
                                         .max_recv_sge = 2, .max_inline_data = 64}};
    struct ibv_qp *qp = ibv_create_qp(e->pd, &a);
    struct ibv_qp_attr s = {.qp_state = IBV_QPS_INIT, .port_num = 1,
                            .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                                               IBV_ACCESS_LOCAL_WRITE};
    if (qp == NULL || ibv_modify_qp(qp, &s, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
        printf("not ok - QP to INIT: %s\n", strerror(errno));
        exit(1);
    }
    return qp;
}

static int to_rtr(struct end *e, struct ibv_qp *qp, uint32_t dest, uint16_t dlid, enum ibv_mtu mtu, int mask_drop)
{
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR, .path_mtu = mtu, .dest_qp_num = dest, .rq_psn = 0,
                            .max_dest_rd_atomic = 1, .min_rnr_timer = 1,
                            .ah_attr = {.dlid = dlid, .port_num = 1}};
    if (e->port.link_layer == IBV_LINK_LAYER_ETHERNET) {
        union ibv_gid g;
        ibv_query_gid(e->ctx, 1, 3, &g);
        a.ah_attr.is_global = 1;
        a.ah_attr.grh.dgid = g; /* both ends on one host: the same address */
        a.ah_attr.grh.sgid_index = 3;
        a.ah_attr.grh.hop_limit = 64;
    }
    int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
               IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    return ibv_modify_qp(qp, &a, mask & ~mask_drop);
}

static int to_rts(struct ibv_qp *qp, uint8_t timeout, uint8_t rnr_retry)
{
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTS, .timeout = timeout, .retry_cnt = 7,
                            .rnr_retry = rnr_retry, .sq_psn = 0, .max_rd_atomic = 1};
    return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* A fresh connected pair of QPs; the peer's record in *peer. */
static void connect_pair(struct end *e, struct info *peer, uint8_t rnr_retry)
{
    if (e->qp != NULL)
        ibv_destroy_qp(e->qp);
    e->qp = new_qp(e, 8);
    struct info mine = {e->qp->qp_num, e->mr->rkey, (uint64_t)(uintptr_t)e->buf, e->port.lid};
    xchg(&mine, peer, sizeof mine);
    if (to_rtr(e, e->qp, peer->qpn, peer->lid, IBV_MTU_1024, 0) || to_rts(e->qp, 14, rnr_retry)) {
        printf("not ok - connect: %s\n", strerror(errno));
        exit(1);
    }
    sync_peer();
}

static int wait_wc(struct end *e, struct ibv_wc *wc, double limit)
{
    double t0 = now();
    while (now() - t0 < limit) {
        int n = ibv_poll_cq(e->cq, 1, wc);
        if (n != 0)
            return n;
    }
    return 0;
}

static int post(struct end *e, enum ibv_wr_opcode op, uint64_t wr_id, void *local, uint32_t len,
                uint64_t raddr, uint32_t rkey, unsigned flags, uint32_t imm)
{
    struct ibv_sge sge = {(uintptr_t)local, len, e->mr->lkey};
    struct ibv_send_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
                             .send_flags = flags, .imm_data = htobe32(imm),
                             .wr.rdma = {.remote_addr = raddr, .rkey = rkey}}, *bad;
    return ibv_post_send(e->qp, &wr, &bad);
}

static void post_recv(struct end *e, uint64_t wr_id, void *at, uint32_t len)
{
    struct ibv_sge sge = {(uintptr_t)at, len, e->mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1}, *bad;
    if (ibv_post_recv(e->qp, &wr, &bad))
        printf("not ok - post_recv: %s\n", strerror(errno));
}

static void fill(char *p, size_t n, int seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (char)(seed + i * 7);
}

static int same(const char *p, size_t n, int seed)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != (char)(seed + i * 7))
            return 0;
    return 1;
}

/* ---- the responder: posts receives, checks what landed ---------------------------- */

static void responder(struct end *e)
{
    struct info peer;
    struct ibv_wc wc;
    char why[160];
    connect_pair(e, &peer, 7);
    fill(e->buf + 8192, 4096, 9); /* for the initiator's READ */
    post_recv(e, 0x51, e->buf + 16384, 4096);
    post_recv(e, 0x52, e->buf + 20480, 4096);
    post_recv(e, 0x53, e->buf + 24576, 4096);
    post_recv(e, 0x54, e->buf + 28672, 4096);
    ibv_req_notify_cq(e->cq, 0);
    sync_peer(); /* receives are posted */
    sync_peer(); /* the initiator is done writing */
    check(same(e->buf, 4096, 3), "RDMA WRITE lands in the peer's memory", "bytes differ");
    int n = wait_wc(e, &wc, 2);
    snprintf(why, sizeof why, "n %d status %d opcode %d len %u wr_id 0x%lx src_qp 0x%x", n, wc.status, wc.opcode,
             wc.byte_len, (unsigned long)wc.wr_id, wc.src_qp);
    check(n == 1 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && wc.byte_len == 100 &&
              wc.wr_id == 0x51 && wc.src_qp == peer.qpn && same(e->buf + 16384, 100, 5),
          "SEND lands in the posted receive: opcode, byte_len, wr_id, src_qp, bytes", why);
    struct ibv_cq *evcq;
    void *evctx;
    check(ibv_get_cq_event(e->ch, &evcq, &evctx) == 0 && evcq == e->cq,
          "completion channel: the armed CQ's event arrives", strerror(errno));
    ibv_ack_cq_events(e->cq, 1);
    n = wait_wc(e, &wc, 2);
    snprintf(why, sizeof why, "n %d status %d opcode %d flags %u imm 0x%x", n, wc.status, wc.opcode,
             wc.wc_flags, be32toh(wc.imm_data));
    check(n == 1 && wc.opcode == IBV_WC_RECV && (wc.wc_flags & IBV_WC_WITH_IMM) &&
              be32toh(wc.imm_data) == 0xabcd && wc.wr_id == 0x52,
          "SEND_WITH_IMM: the immediate and IBV_WC_WITH_IMM", why);
    n = wait_wc(e, &wc, 2);
    snprintf(why, sizeof why, "n %d status %d opcode %d len %u imm 0x%x", n, wc.status, wc.opcode,
             wc.byte_len, be32toh(wc.imm_data));
    check(n == 1 && wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM && wc.byte_len == 512 &&
              be32toh(wc.imm_data) == 0x1234 && wc.wr_id == 0x53 && same(e->buf + 4096, 512, 11),
          "WRITE_WITH_IMM: data in place, receive completion with the immediate", why);
    n = wait_wc(e, &wc, 2);
    check(n == 1 && wc.byte_len == 40 && same(e->buf + 28672, 40, 13),
          "inline SEND carries the bytes as they were at post time", "wrong bytes or length");
    sync_peer(); /* RNR case next: no receive posted */
    connect_pair(e, &peer, 7);
    sync_peer(); /* the initiator saw its RNR failure */
    connect_pair(e, &peer, 7);
    sync_peer(); /* bad rkey case done */
    sync_peer(); /* wrong QPN case done */
    exit(failures != 0);
}

/* ---- the initiator ------------------------------------------------------------------- */

static void transitions(struct end *e)
{
    struct ibv_qp *qp = new_qp(e, 4);
    enum ibv_mtu too_big = e->port.active_mtu + 1;
    check(too_big > IBV_MTU_4096 || to_rtr(e, qp, 0x100, 1, too_big, 0) == EINVAL,
          "path_mtu above the port's active MTU: EINVAL", "accepted");
    check(to_rtr(e, qp, 0x100, 1, IBV_MTU_1024, IBV_QP_MIN_RNR_TIMER) == EINVAL,
          "INIT->RTR without IBV_QP_MIN_RNR_TIMER: EINVAL", "accepted");
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = 0x100,
                            .max_dest_rd_atomic = 1, .min_rnr_timer = 1,
                            .ah_attr = {.is_global = 1, .port_num = 1, .grh = {.sgid_index = 200}}};
    int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
               IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    check(ibv_modify_qp(qp, &a, mask) == EINVAL, "sgid_index beyond the GID table: EINVAL", "accepted");
    if (e->port.link_layer == IBV_LINK_LAYER_ETHERNET) {
        a.ah_attr.is_global = 0;
        a.ah_attr.dlid = 1;
        check(ibv_modify_qp(qp, &a, mask) == EINVAL, "RoCE without a GRH (is_global 0): EINVAL", "accepted");
    }
    check(to_rts(qp, 14, 7) == EINVAL, "INIT->RTS skipping RTR: EINVAL", "accepted");
    e->qp = qp;
    check(post(e, IBV_WR_RDMA_WRITE, 1, e->buf, 8, 0, 0, IBV_SEND_SIGNALED, 0) == EINVAL,
          "posting on a QP not in RTS: EINVAL", "accepted");
    ibv_destroy_qp(qp);
    e->qp = NULL;
}

static void dmabuf(struct end *e, int want_refusal)
{
    int fd = memfd_create("fb-dmabuf", MFD_CLOEXEC);
    char *gpu = aligned_alloc(4096, 8192);
    errno = 0;
    struct ibv_mr *mr = ibv_reg_dmabuf_mr(e->pd, 0, 8192, (uintptr_t)gpu, fd, IBV_ACCESS_LOCAL_WRITE |
                                          IBV_ACCESS_REMOTE_WRITE);
    if (want_refusal)
        check(mr == NULL && errno == EOPNOTSUPP, "FB_STANDIN_IB_DMABUF=0: ibv_reg_dmabuf_mr refuses with EOPNOTSUPP",
              mr ? "registered" : strerror(errno));
    else
        check(mr != NULL && mr->lkey != 0, "ibv_reg_dmabuf_mr registers a dma-buf range", strerror(errno));
    if (mr != NULL)
        ibv_dereg_mr(mr);
    close(fd);
    free(gpu);
}

static void initiator(struct end *e)
{
    struct info peer;
    struct ibv_wc wc;
    char why[160];
    transitions(e);
    dmabuf(e, 0);
    connect_pair(e, &peer, 7);
    sync_peer(); /* receives are posted */
    fill(e->buf, 4096, 3);
    int rc = post(e, IBV_WR_RDMA_WRITE, 0x11, e->buf, 4096, peer.addr, peer.rkey, IBV_SEND_SIGNALED, 0);
    int n = wait_wc(e, &wc, 2);
    snprintf(why, sizeof why, "post %d n %d status %d opcode %d wr_id 0x%lx", rc, n, wc.status, wc.opcode,
             (unsigned long)wc.wr_id);
    check(n == 1 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_WRITE && wc.wr_id == 0x11 &&
              wc.qp_num == e->qp->qp_num, "RDMA WRITE completes: status, opcode, wr_id, qp_num", why);
    rc = post(e, IBV_WR_RDMA_READ, 0x12, e->buf + 32768, 4096, peer.addr + 8192, peer.rkey, IBV_SEND_SIGNALED, 0);
    n = wait_wc(e, &wc, 2);
    check(n == 1 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_READ && wc.byte_len == 4096 &&
              same(e->buf + 32768, 4096, 9), "RDMA READ brings the peer's bytes, opcode RDMA_READ", "wrong");
    /* three unsignaled writes and a signaled one: one completion */
    for (int i = 0; i < 3; i++)
        post(e, IBV_WR_RDMA_WRITE, 0x20 + (uint64_t)i, e->buf, 64, peer.addr + 40960, peer.rkey, 0, 0);
    post(e, IBV_WR_RDMA_WRITE, 0x23, e->buf, 64, peer.addr + 40960, peer.rkey, IBV_SEND_SIGNALED, 0);
    n = wait_wc(e, &wc, 1);
    int more = ibv_poll_cq(e->cq, 1, &wc);
    check(n == 1 && wc.wr_id == 0x23 && more == 0, "unsignaled WRs give no completion, the signaled one does",
          "wrong completions");
    fill(e->buf + 12288, 100, 5);
    post(e, IBV_WR_SEND, 0x13, e->buf + 12288, 100, 0, 0, IBV_SEND_SIGNALED, 0);
    n = wait_wc(e, &wc, 2);
    check(n == 1 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND, "SEND completes with opcode SEND",
          "wrong");
    post(e, IBV_WR_SEND_WITH_IMM, 0x14, e->buf + 12288, 8, 0, 0, IBV_SEND_SIGNALED, 0xabcd);
    wait_wc(e, &wc, 2);
    /* WRITE_WITH_IMM through the ibv_wr_* interface */
    fill(e->buf + 4096, 512, 11);
    struct ibv_qp_ex *x = ibv_qp_to_qp_ex(e->qp);
    ibv_wr_start(x);
    x->wr_id = 0x15;
    x->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_rdma_write_imm(x, peer.rkey, peer.addr + 4096, htobe32(0x1234));
    ibv_wr_set_sge(x, e->mr->lkey, (uintptr_t)(e->buf + 4096), 512);
    rc = ibv_wr_complete(x);
    n = wait_wc(e, &wc, 2);
    check(rc == 0 && n == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 0x15,
          "ibv_wr_rdma_write_imm through wr_start/wr_set_sge/wr_complete", "failed");
    char inl[40];
    fill(inl, sizeof inl, 13);
    struct ibv_sge sge = {(uintptr_t)inl, sizeof inl, 0};
    struct ibv_send_wr wr = {.wr_id = 0x16, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                             .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE}, *bad;
    ibv_post_send(e->qp, &wr, &bad);
    memset(inl, 0, sizeof inl); /* the data went at post time */
    wait_wc(e, &wc, 2);
    char big[128];
    sge = (struct ibv_sge){(uintptr_t)big, sizeof big, 0};
    check(ibv_post_send(e->qp, &wr, &bad) == EINVAL, "inline data beyond max_inline_data: EINVAL", "accepted");
    sync_peer();
    /* RNR: no receive posted, rnr_retry 1 (min_rnr_timer 0.01 ms) */
    sync_peer();
    connect_pair(e, &peer, 1);
    double t0 = now();
    post(e, IBV_WR_SEND, 0x17, e->buf, 8, 0, 0, IBV_SEND_SIGNALED, 0);
    n = wait_wc(e, &wc, 3);
    snprintf(why, sizeof why, "n %d status %s after %.3f s", n, ibv_wc_status_str(wc.status), now() - t0);
    check(n == 1 && wc.status == IBV_WC_RNR_RETRY_EXC_ERR, "SEND without a posted receive: RNR_RETRY_EXC_ERR", why);
    sync_peer();
    /* bad rkey: REM_ACCESS_ERR at once, the QP in error, what follows flushed */
    connect_pair(e, &peer, 7);
    post(e, IBV_WR_RDMA_WRITE, 0x18, e->buf, 64, peer.addr, peer.rkey ^ 0x5a5a00, IBV_SEND_SIGNALED, 0);
    post(e, IBV_WR_RDMA_WRITE, 0x19, e->buf, 64, peer.addr, peer.rkey, 0, 0);
    n = wait_wc(e, &wc, 2);
    snprintf(why, sizeof why, "n %d status %s", n, ibv_wc_status_str(wc.status));
    check(n == 1 && wc.status == IBV_WC_REM_ACCESS_ERR && wc.wr_id == 0x18, "bad rkey: IBV_WC_REM_ACCESS_ERR", why);
    n = wait_wc(e, &wc, 2);
    struct ibv_qp_attr qa;
    struct ibv_qp_init_attr qi;
    ibv_query_qp(e->qp, &qa, IBV_QP_STATE, &qi);
    check(n == 1 && wc.status == IBV_WC_WR_FLUSH_ERR && wc.wr_id == 0x19 && qa.qp_state == IBV_QPS_ERR,
          "after the error the QP is in ERR and the next WR (unsignaled) is flushed", ibv_wc_status_str(wc.status));
    check(post(e, IBV_WR_RDMA_WRITE, 0x1a, e->buf, 64, peer.addr + BUF, peer.rkey, IBV_SEND_SIGNALED, 0) == 0 &&
              wait_wc(e, &wc, 2) == 1 && wc.status == IBV_WC_WR_FLUSH_ERR,
          "posting on a QP in ERR is accepted and flushed", "not flushed");
    sync_peer();
    /* wrong destination QPN: RETRY_EXC_ERR after 4.096 us * 2^10 * 8 = 34 ms */
    ibv_destroy_qp(e->qp);
    e->qp = new_qp(e, 2);
    to_rtr(e, e->qp, peer.qpn ^ 0x7ff, peer.lid, IBV_MTU_1024, 0);
    to_rts(e->qp, 10, 7);
    t0 = now();
    post(e, IBV_WR_RDMA_WRITE, 0x1b, e->buf, 64, peer.addr, peer.rkey, IBV_SEND_SIGNALED, 0);
    n = wait_wc(e, &wc, 3);
    double took = now() - t0;
    snprintf(why, sizeof why, "n %d status %s after %.3f s", n, ibv_wc_status_str(wc.status), took);
    check(n == 1 && wc.status == IBV_WC_RETRY_EXC_ERR && took > 0.025 && took < 1.0,
          "wrong destination QPN: IBV_WC_RETRY_EXC_ERR after the retry timeout (34 ms)", why);
    /* a full send queue: ENOMEM (depth 2, nothing polled) */
    ibv_destroy_qp(e->qp);
    e->qp = new_qp(e, 2);
    to_rtr(e, e->qp, peer.qpn ^ 0x7ff, peer.lid, IBV_MTU_1024, 0);
    to_rts(e->qp, 20, 7);
    int r1 = post(e, IBV_WR_RDMA_WRITE, 1, e->buf, 8, peer.addr, peer.rkey, 0, 0);
    int r2 = post(e, IBV_WR_RDMA_WRITE, 2, e->buf, 8, peer.addr, peer.rkey, 0, 0);
    int r3 = post(e, IBV_WR_RDMA_WRITE, 3, e->buf, 8, peer.addr, peer.rkey, 0, 0);
    check(r1 == 0 && r2 == 0 && r3 == ENOMEM, "a full send queue: ENOMEM", "accepted");
    sync_peer();
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "nodmabuf") == 0) {
        struct end e = {0};
        open_end(&e);
        dmabuf(&e, 1);
        return failures != 0;
    }
    int a[2], b[2];
    if (pipe(a) || pipe(b))
        return 2;
    pid_t pid = fork();
    struct end e = {0};
    if (pid == 0) {
        to_peer = b[1];
        from_peer = a[0];
        open_end(&e);
        responder(&e);
    }
    to_peer = a[1];
    from_peer = b[0];
    open_end(&e);
    initiator(&e);
    int st = 0;
    waitpid(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the responder finished", "it failed");
    return failures != 0;
}
