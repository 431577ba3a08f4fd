/* RDMA over rdma-core verbs: device and port selection, RC queue pairs, and
 * the ib_write_bw / ib_write_lat measurements. Timing is CLOCK_MONOTONIC;
 * every wait gives up after the run's timeout of silence. */
#ifndef FB_PROBE_VERBS_H
#define FB_PROBE_VERBS_H

#include <infiniband/verbs.h>

#include "core/status.h"
#include "probe/endpoint.h"
#include "probe/measure.h"
#include "probe/size_spec.h"
#include "probe/wire.h"

struct probe_verbs_cfg {
    const char *devices; /* -d: comma list by local rank, NULL for all in name order */
    int port;            /* -i */
    long gid_index;      /* -x, -1 automatic */
    int mtu;             /* --mtu bytes, 0 for the port's active MTU */
    int sl;              /* --sl (InfiniBand service level) */
    int tclass;          /* --tclass (RoCE traffic class) */
};

struct probe_verbs_dev;
struct probe_verbs_link;

/* Lists the devices (FB_ERR_UNAVAIL when the kernel has no RDMA, errno
 * ENOSYS, or there are none), picks this rank's, checks the port exists and
 * is ACTIVE, chooses the GID and MTU, and fills `ep`. */
enum fb_status probe_verbs_open(const struct probe_verbs_cfg *cfg, int local_rank,
                                int local_size, const char *host, struct probe_verbs_dev **out,
                                struct probe_endpoint *ep, struct fb_err *err);
struct ibv_pd *probe_verbs_pd(struct probe_verbs_dev *d);
void probe_verbs_close(struct probe_verbs_dev *d);

/* One end of a link: `nqp` RC queue pairs and their CQ, owning the slot
 * [local, local + slot_len) of a registered buffer. `max_inline` > 0 asks
 * for inline sends (latency). `peer_name` is used in messages. */
enum fb_status probe_verbs_link_create(struct probe_verbs_dev *d, int link_id, int my_rank,
                                       int nqp, int tx_depth, uint32_t max_inline, char *local,
                                       uint64_t slot_len, struct ibv_mr *mr,
                                       const char *peer_name, struct probe_verbs_link **out,
                                       struct fb_err *err);
void probe_verbs_link_info(const struct probe_verbs_link *l, struct probe_qpinfo *out);
/* Checks agreement (probe_qpinfo_agree) and moves the QPs to RTS. */
enum fb_status probe_verbs_link_connect(struct probe_verbs_link *l, const struct probe_qpinfo *peer,
                                        const char *me, struct fb_err *err);
void probe_verbs_link_destroy(struct probe_verbs_link *l);

/* RDMA WRITE bandwidth on n source links at once (a rank may send on two
 * in a bidirectional ring): warm-up, then the timed part; out[i] for
 * links[i]. Average = bytes / (last completion - first post). */
enum fb_status probe_verbs_write_bw(struct probe_verbs_link **links, int n,
                                    const struct probe_size_spec *r, struct probe_measure *out,
                                    struct fb_err *err);

/* Ping-pong of RDMA WRITEs, each side polling its buffer's last byte (host
 * memory only); the initiator times round trips. */
enum fb_status probe_verbs_write_lat(struct probe_verbs_link *l, const struct probe_size_spec *r,
                                     int initiator, struct probe_measure *out, struct fb_err *err);

#endif
