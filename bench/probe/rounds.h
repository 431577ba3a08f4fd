/* One round of the schedule on this rank: connect the link ends it takes
 * part in (queue pairs or sockets), measure them at each size, tear them
 * down. The transport's ops do the connecting and measuring. */
#ifndef FB_PROBE_ROUNDS_H
#define FB_PROBE_ROUNDS_H

#include <netinet/in.h>

#include "probe/comm.h"
#include "probe/measure.h"
#include "probe/opts.h"
#include "probe/schedule.h"
#include "probe/tcp.h"
#include "probe/transport.h"
#include "probe/verbs.h"

/* A rank takes part in at most this many link ends per round (a
 * bidirectional ring: two out, two in). */
#define PROBE_ENDS_MAX 4

/* The largest record an end sends its peer, whatever the transport. */
#define PROBE_RECORD_MAX \
    (PROBE_OFIINFO_WIRE_MAX > PROBE_QPINFO_WIRE_MAX ? PROBE_OFIINFO_WIRE_MAX : PROBE_QPINFO_WIRE_MAX)

struct probe_ofi_dev;
struct probe_ofi_link;

/* What this rank brings to every round. */
struct probe_rank_env {
    const struct probe_opts *o;
    const struct probe_ctx *c;
    struct probe_verbs_dev *dev; /* rdma */
    struct probe_ofi_dev *ofi;   /* ofi */
    struct ibv_mr *mr;           /* rdma: registers buf */
    char *buf;                   /* nslots slots of slot_len bytes */
    uint64_t slot_len;
    int nslots;
    int host_memory;             /* buf is host memory (may be cleared by the CPU) */
    struct in_addr addr;         /* tcp */
    struct probe_tcp_cfg tcfg;   /* tcp */
    char me[FB_HOST_MAX + 96];   /* "rank 0 (host mlx5_0)" */
};

struct probe_end {
    const struct probe_link *link;
    int is_src, peer;
    char *slot;
    char peer_name[FB_HOST_MAX + 96];
    struct probe_verbs_link *vl;           /* rdma */
    struct probe_ofi_link *ol;             /* ofi */
    struct probe_tcp_flow flow;            /* tcp */
    int listen_fd;                         /* tcp: the destination's listener until it accepts */
    uint8_t record[PROBE_RECORD_MAX];      /* this end's record for the peer */
    MPI_Request record_req;                /* tcp: its send */
};

struct probe_round {
    const struct probe_transport_ops *tp;
    int index, nends;
    struct probe_end ends[PROBE_ENDS_MAX];
};

/* Bytes each slot needs for the options' largest size. */
uint64_t probe_slot_len(const struct probe_opts *o);

/* Connects this rank's ends of `round` through the options' transport. On
 * error the round is torn down. */
enum fb_status probe_round_setup(const struct probe_rank_env *env, const struct probe_schedule *s,
                                 int round, struct probe_round *rd, struct fb_err *err);

/* Measures one size on every end this rank drives; out[] receives the
 * measurements this rank owns (rdma: sources; tcp bandwidth: destinations;
 * latency: initiators), *nout how many. */
enum fb_status probe_round_measure(const struct probe_rank_env *env, struct probe_round *rd,
                                   uint64_t size, struct probe_measure *out, int *nout,
                                   struct fb_err *err);

void probe_round_teardown(struct probe_round *rd);

#endif
