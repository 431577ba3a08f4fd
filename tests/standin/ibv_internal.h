/* The libibverbs stand-in (docs/standin.md, "The RDMA stand-in"): devices
 * described by FB_STANDIN_IB_* knobs, RC queue pairs that move bytes between
 * processes of one machine (process_vm_writev/readv into the peer's
 * registered memory), a registry directory shared by every process
 * (FB_STANDIN_IB_DIR) where queue pairs and memory regions are published.
 * Compiled against the real <infiniband/verbs.h>: every struct handed out
 * is the real ABI. Internal to tests/standin/ibv_*.c. */
#ifndef FB_STANDIN_IBV_INTERNAL_H
#define FB_STANDIN_IBV_INTERNAL_H

#include <infiniband/verbs.h>
#include <net/if.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define SIB_DEVS_MAX 16
#define SIB_GIDS_MAX 4
#define SIB_SGE_MAX 16
#define SIB_RECV_SGE_MAX 8
#define SIB_INLINE_MAX 512
#define SIB_QP_WR_MAX 32768
#define SIB_CQE_MAX 4194303
#define SIB_MAGIC_QP 0x46425150u /* "FBQP" */
#define SIB_MAGIC_MR 0x46424d52u /* "FBMR" */

#define SIB_CONTAINER(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/* ---- devices and ports (ibv_dev.c) ------------------------------------- */

struct sib_port {
    uint8_t link_layer;   /* IBV_LINK_LAYER_INFINIBAND or _ETHERNET */
    int active;           /* IBV_PORT_ACTIVE, else DOWN */
    enum ibv_mtu mtu;     /* active MTU */
    uint8_t speed, width; /* active_speed / active_width codes */
    double cap_gbps;      /* 0: no cap */
    double tx_gbps, rx_gbps; /* caps of one direction only (0: none): a slow send or receive path */
    uint16_t lid, sm_lid;
    int gid_tbl_len, ngid;
    uint8_t gid[SIB_GIDS_MAX][16];
    enum ibv_gid_type gid_type[SIB_GIDS_MAX];
    char ndev[IF_NAMESIZE];
    unsigned ndev_ifindex;
    double next_free; /* pacing: when this process's link is free again (s) */
};

struct sib_dev {
    struct ibv_device dev; /* first: handed out as struct ibv_device * */
    int index;
    uint64_t node_guid;
    struct sib_port port; /* port 1, the only one */
};

/* The devices of this process (described once from the knobs); n out. */
struct sib_dev *sib_devices(int *n);
/* Registry directory (created on first use), "" when unusable. */
const char *sib_registry_dir(void);
/* A fresh number unique across every process sharing the registry. */
uint32_t sib_unique(int which);
enum { SIB_ID_QPN, SIB_ID_KEY, SIB_ID_PD };
/* The retry cap (FB_STANDIN_IB_RETRY_MAX_MS), seconds. */
double sib_retry_cap_s(void);
/* FB_STANDIN_IB_DMABUF: 0 makes ibv_reg_dmabuf_mr refuse (EOPNOTSUPP). */
int sib_dmabuf_enabled(void);
double sib_now(void);
const char *sib_host(void);
/* "400 Gb/sec (4X NDR)", as sysfs writes a port's rate. */
void sib_rate_text(const struct sib_port *p, char *buf, size_t len);

/* ---- context, protection domains, memory (ibv_dev.c, ibv_mem.c) --------- */

struct sib_qp;

struct sib_ctx {
    struct verbs_context vctx; /* vctx.context is what the user holds */
    struct sib_dev *dev;
    pthread_mutex_t lock;      /* posts, polls, QP list */
    struct sib_qp *qps;        /* every QP of the context, for progress */
    struct sib_mr *mrs;        /* lkey lookups */
};

static inline struct sib_ctx *sib_ctx_of(struct ibv_context *c)
{
    return SIB_CONTAINER(SIB_CONTAINER(c, struct verbs_context, context), struct sib_ctx, vctx);
}

struct sib_pd {
    struct ibv_pd pd;
    uint32_t id; /* unique across processes: a remote key names its PD */
};

/* What a memory region publishes in the registry (mr-<key>). */
struct sib_shmr {
    uint32_t magic;
    _Atomic uint32_t valid; /* cleared at deregistration */
    int32_t pid;
    uint32_t pd_id;
    uint32_t access;
    uint32_t pad;
    uint64_t iova, len, addr; /* addr: where the bytes live in pid */
};

struct sib_mr {
    struct ibv_mr mr;
    uint64_t iova;
    uint64_t local_base; /* where local SGEs address it (a dma-buf's: its iova) */
    int access;
    struct sib_shmr *sh; /* mapped record */
    struct sib_mr *next;
};

/* Registered memory of this context covering [addr, addr+len) for lkey. */
const struct sib_mr *sib_local_mr(struct sib_ctx *c, uint32_t lkey, uint64_t addr, uint64_t len);
/* The published record of a remote key, NULL when there is none. */
const struct sib_shmr *sib_remote_mr(uint32_t rkey);

/* ---- queue pairs and completion queues (ibv_qp.c, ibv_xfer.c) ------------ */

/* A receive WQE as the owner posts it in its shared segment. */
struct sib_shrecv {
    uint64_t wr_id;
    uint32_t nsge, pad;
    struct { uint64_t addr; uint32_t len, lkey; } sge[SIB_RECV_SGE_MAX];
};

/* A completion the peer delivers into the owner's inbound ring. */
struct sib_shcqe {
    uint64_t wr_id;
    uint32_t byte_len, imm; /* imm in network order, as wc.imm_data */
    uint16_t opcode, status;
    uint32_t wc_flags, src_qp;
};

/* Shared segment of one QP (qp-<qpn> in the registry): what a peer needs
 * to check that its packets would reach this QP, and the receive rings. */
struct sib_shqp {
    uint32_t magic, qpn;
    int32_t pid;
    _Atomic uint32_t state;    /* enum ibv_qp_state */
    _Atomic uint32_t dest_qpn; /* set at RTR */
    uint32_t access;           /* qp_access_flags */
    uint32_t pd_id;
    uint32_t min_rnr_timer;
    uint8_t link_layer, port_active, ngid, pad;
    uint16_t lid, pad2;
    uint8_t gid[SIB_GIDS_MAX][16];
    double cap_gbps;
    double rx_gbps; /* the port's receive cap */
    char dev[64], host[64];
    uint32_t rq_size; /* power of two */
    _Atomic uint32_t rq_head;  /* owner: posted */
    _Atomic uint32_t rq_tail;  /* claimed (peer consumed, or owner flushed) */
    _Atomic uint32_t in_head;  /* peer: completions delivered */
    _Atomic uint32_t in_tail;  /* owner: completions drained */
    /* then rq_size struct sib_shrecv, rq_size struct sib_shcqe */
};

static inline struct sib_shrecv *sib_rq(struct sib_shqp *s)
{
    return (struct sib_shrecv *)(void *)(s + 1);
}
static inline struct sib_shcqe *sib_inq(struct sib_shqp *s)
{
    return (struct sib_shcqe *)(void *)(sib_rq(s) + s->rq_size);
}

/* A send WQE, kept in the QP until its completion is polled. */
struct sib_wqe {
    uint64_t wr_id;
    enum ibv_wr_opcode opcode;
    unsigned flags;
    uint32_t imm, rkey;
    uint64_t remote_addr;
    uint32_t nsge, inline_len;
    struct ibv_sge sge[SIB_SGE_MAX];
    double posted_at;    /* when the process posted it: the wire may start it then */
    int on_wire;         /* its bytes moved; it completes at done_at */
    double done_at;
    int has_recv;        /* it consumed the responder's receive `recv` */
    struct sib_shrecv recv;
    double fail_at;      /* > 0: fails with fail_status then */
    double rnr_deadline; /* > 0: receiver not ready since, give up then */
    enum ibv_wc_status fail_status;
};

struct sib_cqe {
    struct ibv_wc wc;
    struct sib_qp *qp; /* send completions: retire the SQ up to sq_seq */
    uint64_t sq_seq;
};

struct sib_cq {
    struct ibv_cq cq;
    struct sib_cqe *ring;
    uint32_t cap;
    uint64_t head, tail; /* produced, consumed */
    int armed;
    struct sib_cq *next_event; /* channel queue */
};

struct sib_qp {
    struct ibv_qp_ex qpx; /* first: qpx.qp_base is the user's ibv_qp */
    struct sib_ctx *ctx;
    struct sib_qp *next;
    /* attributes */
    struct ibv_qp_cap cap;
    int sq_sig_all;
    uint8_t port;
    uint32_t access;
    struct ibv_ah_attr av;
    enum ibv_mtu path_mtu;
    uint32_t dest_qpn, rq_psn, sq_psn;
    uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer, max_rd_atomic, max_dest_rd_atomic;
    uint16_t pkey_index;
    /* send queue: [retired, posted) occupied, [executed, posted) pending */
    struct sib_wqe *sq;
    uint8_t *inline_buf; /* cap.max_inline_data bytes per slot */
    uint32_t sq_size;
    uint64_t posted, executed, retired;
    /* ibv_wr_* batch */
    uint64_t batch_n;
    int batch_err;
    /* shared segment and the peer's */
    uint32_t rq_retired; /* receives drained or flushed: their slots are free */
    struct sib_shqp *sh;
    size_t sh_len;
    struct sib_shqp *peer;
    size_t peer_len;
};

static inline struct sib_qp *sib_qp_of(struct ibv_qp *q)
{
    return SIB_CONTAINER(SIB_CONTAINER(q, struct ibv_qp_ex, qp_base), struct sib_qp, qpx);
}
static inline struct sib_cq *sib_cq_of(struct ibv_cq *c) { return SIB_CONTAINER(c, struct sib_cq, cq); }

/* Maps a registry file of at least len bytes (create: made and sized). */
void *sib_map(const char *name, size_t len, int create, size_t *mapped);

/* ibv_qp.c */
/* A completion reached an armed CQ with a channel (lock held). */
void sib_notify(struct sib_cq *cq);
struct ibv_qp *sib_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr);

/* ibv_xfer.c */
int sib_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int sib_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int sib_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int sib_req_notify_cq(struct ibv_cq *cq, int solicited_only);
/* Works off what can be done now on every QP of the context (lock held). */
void sib_progress(struct sib_ctx *c);
/* Flushes the QP's queues after it entered the error state (lock held). */
void sib_flush(struct sib_qp *q);
/* Appends a completion; 0 when the CQ is full. */
int sib_cq_push(struct sib_cq *cq, const struct ibv_wc *wc, struct sib_qp *qp, uint64_t sq_seq);
void sib_install_wr_ops(struct sib_qp *q);

#endif
