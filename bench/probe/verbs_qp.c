/* RC queue pairs of one link end: creation, the record the peer needs, and
 * the INIT -> RTR -> RTS transitions. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/verbs_internal.h"

static struct ibv_qp *create_qp(struct probe_verbs_link *l, uint32_t max_inline)
{
    struct ibv_qp_init_attr a = {
        .send_cq = l->cq,
        .recv_cq = l->cq,
        .cap = {.max_send_wr = (uint32_t)l->tx_depth, .max_recv_wr = 1,
                .max_send_sge = 1, .max_recv_sge = 1, .max_inline_data = max_inline},
        .qp_type = IBV_QPT_RC,
        .sq_sig_all = 0,
    };
    struct ibv_qp *qp = ibv_create_qp(l->dev->pd, &a);
    if (qp != NULL)
        l->max_inline = a.cap.max_inline_data;
    return qp;
}

static enum fb_status to_init(struct probe_verbs_link *l, int q, struct fb_err *err)
{
    struct ibv_qp_attr a = {
        .qp_state = IBV_QPS_INIT,
        .pkey_index = 0,
        .port_num = (uint8_t)l->dev->port,
        .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_LOCAL_WRITE,
    };
    if (ibv_modify_qp(l->qp[q], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
        return fb_fail(err, FB_ERR_RUNTIME, "QP 0x%x on %s to INIT failed: %s", l->qp[q]->qp_num,
                       l->dev->name, strerror(errno));
    return FB_OK;
}

enum fb_status probe_verbs_link_create(struct probe_verbs_dev *d, int link_id, int my_rank,
                                       int nqp, int tx_depth, uint32_t max_inline, char *local,
                                       uint64_t slot_len, struct ibv_mr *mr,
                                       const char *peer_name, struct probe_verbs_link **out,
                                       struct fb_err *err)
{
    *out = NULL;
    if (nqp < 1 || nqp > PROBE_QPS_MAX)
        return fb_fail(err, FB_ERR_USAGE, "-q %d: use 1 to %d queue pairs", nqp, PROBE_QPS_MAX);
    struct probe_verbs_link *l = calloc(1, sizeof *l);
    if (l == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    *l = (struct probe_verbs_link){.dev = d, .link_id = link_id, .my_rank = my_rank, .nqp = nqp,
                                   .tx_depth = tx_depth, .local = local, .slot_len = slot_len,
                                   .mr = mr};
    snprintf(l->peer_name, sizeof l->peer_name, "%s", peer_name);
    enum fb_status st = FB_OK;
    l->cq = ibv_create_cq(d->ctx, nqp * tx_depth + 1, NULL, NULL, 0);
    if (l->cq == NULL)
        st = fb_fail(err, FB_ERR_RUNTIME, "ibv_create_cq on %s (%d entries) failed: %s", d->name,
                     nqp * tx_depth + 1, strerror(errno));
    for (int q = 0; st == FB_OK && q < nqp; q++) {
        l->qp[q] = create_qp(l, max_inline);
        if (l->qp[q] == NULL && max_inline > 0)
            l->qp[q] = create_qp(l, 0); /* inline is an optimisation only */
        if (l->qp[q] == NULL) {
            st = fb_fail(err, FB_ERR_RUNTIME, "ibv_create_qp on %s (depth %d) failed: %s; lower -t",
                         d->name, tx_depth, strerror(errno));
            break;
        }
        l->psn[q] = (uint32_t)lrand48() & 0xffffff;
        st = to_init(l, q, err);
    }
    if (st != FB_OK) {
        probe_verbs_link_destroy(l);
        return st;
    }
    *out = l;
    return FB_OK;
}

void probe_verbs_link_info(const struct probe_verbs_link *l, struct probe_qpinfo *out)
{
    const struct probe_verbs_dev *d = l->dev;
    memset(out, 0, sizeof *out);
    out->link = (uint32_t)l->link_id;
    out->rank = l->my_rank;
    out->lid = d->lid;
    out->link_layer = (uint8_t)d->ll;
    out->gid_type = (uint8_t)d->gid.type;
    out->gid_index = (uint16_t)d->gid.index;
    out->mtu = (uint16_t)d->mtu_bytes;
    out->rkey = l->mr->rkey;
    out->addr = (uint64_t)(uintptr_t)l->local;
    out->len = l->slot_len;
    memcpy(out->gid, d->gid.raw, 16);
    out->nqp = (uint16_t)l->nqp;
    for (int q = 0; q < l->nqp; q++) {
        out->qpn[q] = l->qp[q]->qp_num;
        out->psn[q] = l->psn[q];
    }
}

static enum fb_status to_rtr_rts(struct probe_verbs_link *l, int q, const struct probe_qpinfo *peer,
                                 struct fb_err *err)
{
    const struct probe_verbs_dev *d = l->dev;
    struct ibv_qp_attr a = {
        .qp_state = IBV_QPS_RTR,
        .path_mtu = (enum ibv_mtu)probe_mtu_enum(d->mtu_bytes),
        .dest_qp_num = peer->qpn[q],
        .rq_psn = peer->psn[q],
        .max_dest_rd_atomic = 1,
        .min_rnr_timer = 12,
        .ah_attr = {.dlid = peer->lid, .sl = (uint8_t)d->sl, .port_num = (uint8_t)d->port},
    };
    /* RoCE always routes by GID; InfiniBand within a subnet by LID. */
    if (d->ll == PROBE_LL_ETH || peer->lid == 0) {
        a.ah_attr.is_global = 1;
        memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
        a.ah_attr.grh.sgid_index = (uint8_t)d->gid.index;
        a.ah_attr.grh.hop_limit = 64;
        a.ah_attr.grh.traffic_class = (uint8_t)d->tclass;
    }
    if (ibv_modify_qp(l->qp[q], &a,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                          IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
        return fb_fail(err, FB_ERR_RUNTIME,
                       "QP 0x%x on %s to RTR towards %s (QP 0x%x) failed: %s; check the GID "
                       "(-x) and that both ports are on the same fabric",
                       l->qp[q]->qp_num, d->name, l->peer_name, peer->qpn[q], strerror(errno));
    struct ibv_qp_attr s = {
        .qp_state = IBV_QPS_RTS,
        .timeout = 14, /* 4.096 us * 2^14 = 67 ms per retry */
        .retry_cnt = 7,
        .rnr_retry = 7,
        .sq_psn = l->psn[q],
        .max_rd_atomic = 1,
    };
    if (ibv_modify_qp(l->qp[q], &s,
                      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                          IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
        return fb_fail(err, FB_ERR_RUNTIME, "QP 0x%x on %s to RTS failed: %s", l->qp[q]->qp_num,
                       d->name, strerror(errno));
    return FB_OK;
}

enum fb_status probe_verbs_link_connect(struct probe_verbs_link *l, const struct probe_qpinfo *peer,
                                        const char *me, struct fb_err *err)
{
    struct probe_qpinfo mine;
    probe_verbs_link_info(l, &mine);
    if (probe_qpinfo_agree(&mine, peer, me, l->peer_name, err) != FB_OK)
        return err->code;
    l->remote_addr = peer->addr;
    l->rkey = peer->rkey;
    for (int q = 0; q < l->nqp; q++)
        if (to_rtr_rts(l, q, peer, err) != FB_OK)
            return err->code;
    return FB_OK;
}

void probe_verbs_link_destroy(struct probe_verbs_link *l)
{
    if (l == NULL)
        return;
    for (int q = 0; q < l->nqp; q++)
        if (l->qp[q] != NULL)
            ibv_destroy_qp(l->qp[q]);
    if (l->cq != NULL)
        ibv_destroy_cq(l->cq);
    free(l);
}
