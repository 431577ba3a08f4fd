/* State shared by the verbs files of this module (device, queue pairs,
 * measurement loops); not part of the module's interface. */
#ifndef FB_PROBE_VERBS_INTERNAL_H
#define FB_PROBE_VERBS_INTERNAL_H

#include <infiniband/verbs.h>

#include "probe/gid.h"
#include "probe/verbs.h"
#include "probe/wire.h"

struct probe_verbs_dev {
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    char name[64];
    int port;
    enum probe_link_layer ll;
    struct probe_gid_choice gid;
    uint16_t lid;
    int mtu_bytes;
    int sl, tclass;
};

struct probe_verbs_link {
    struct probe_verbs_dev *dev;
    int link_id, my_rank;
    int nqp, tx_depth;
    struct ibv_cq *cq;
    struct ibv_qp *qp[PROBE_QPS_MAX];
    uint32_t psn[PROBE_QPS_MAX];
    uint32_t max_inline;
    char *local;
    uint64_t slot_len;
    struct ibv_mr *mr;
    uint64_t remote_addr; /* the peer's slot, from its record */
    uint32_t rkey;
    char peer_name[FB_HOST_MAX + 96];
};

/* enum ibv_mtu <-> bytes; 0 for an invalid value. */
int probe_mtu_bytes(int ibv_mtu);
int probe_mtu_enum(int bytes);

#endif
