/* Records the two ends of a link exchange over MPI before they connect,
 * and the greeting on each TCP stream: fixed little-endian binary layouts
 * with a magic and a version, so a peer running another build is told so
 * instead of misreading a field. */
#ifndef FB_PROBE_WIRE_H
#define FB_PROBE_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

#define PROBE_WIRE_VERSION 1
#define PROBE_QPS_MAX 64

/* What the remote side needs to reach my queue pairs and buffer, and what
 * both sides must agree on. */
struct probe_qpinfo {
    uint32_t link;       /* schedule link id */
    int32_t rank;        /* sender of the record */
    uint16_t lid;
    uint8_t link_layer;  /* enum probe_link_layer */
    uint8_t gid_type;    /* enum probe_gid_type */
    uint16_t gid_index;
    uint16_t mtu;        /* path MTU in bytes this side will use */
    uint32_t rkey;
    uint64_t addr;       /* remote-writable region */
    uint64_t len;
    uint8_t gid[16];
    uint16_t nqp;
    uint32_t qpn[PROBE_QPS_MAX];
    uint32_t psn[PROBE_QPS_MAX];
};

#define PROBE_QPINFO_WIRE_MAX (60 + 8 * PROBE_QPS_MAX)

/* Returns the encoded length (at most PROBE_QPINFO_WIRE_MAX). */
size_t probe_qpinfo_encode(const struct probe_qpinfo *in, uint8_t *buf);
enum fb_status probe_qpinfo_decode(const uint8_t *buf, size_t len, struct probe_qpinfo *out,
                                   struct fb_err *err);

/* The two ends must use the same link layer, GID type, path MTU and QP
 * count; `me` and `peer` name the ends ("rank 0 (hostA mlx5_0)") in the
 * one-line error (FB_ERR_LAUNCH). */
enum fb_status probe_qpinfo_agree(const struct probe_qpinfo *mine,
                                  const struct probe_qpinfo *theirs, const char *me,
                                  const char *peer, struct fb_err *err);

/* Where a TCP destination listens. */
struct probe_tcpinfo {
    uint32_t link;
    int32_t rank;
    uint8_t ipv4[4];
    uint16_t port;
    uint16_t streams;
};

#define PROBE_TCPINFO_WIRE_LEN 24

size_t probe_tcpinfo_encode(const struct probe_tcpinfo *in, uint8_t *buf);
enum fb_status probe_tcpinfo_decode(const uint8_t *buf, size_t len, struct probe_tcpinfo *out,
                                    struct fb_err *err);

/* The greeting every TCP stream opens with, so that the listener knows
 * which link and stream a connection carries. */
struct probe_hello {
    uint32_t link;
    uint16_t stream;
};

#define PROBE_HELLO_LEN 16

void probe_hello_encode(const struct probe_hello *in, uint8_t *buf);
/* Fills `out` from whatever arrived (for the error); 1 when it is a
 * greeting of this wire version. */
int probe_hello_decode(const uint8_t *buf, struct probe_hello *out);

#endif
