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

/* What one end of a libfabric link tells the other: the provider it runs
 * (both ends must run the same one), and per endpoint its address as
 * fi_getname gave it and the memory region the peer writes or reads. */
#define PROBE_OFI_NAME_MAX 64
#define PROBE_OFI_PROV_MAX 32

struct probe_ofi_lane_info {
    uint16_t name_len;
    uint8_t name[PROBE_OFI_NAME_MAX];
    uint64_t base; /* the region's address as the peer names it: its VA or 0 */
    uint64_t key;  /* the region's remote key */
};

struct probe_ofiinfo {
    uint32_t link;
    int32_t rank;
    char provider[PROBE_OFI_PROV_MAX]; /* "tcp;ofi_rxm", NUL-terminated */
    uint32_t addr_format;              /* fi_info's addr_format */
    uint16_t nlanes;
    struct probe_ofi_lane_info lane[PROBE_QPS_MAX];
};

#define PROBE_OFIINFO_FIXED (6 + 4 + 4 + PROBE_OFI_PROV_MAX + 4 + 2)
#define PROBE_OFIINFO_WIRE_MAX (PROBE_OFIINFO_FIXED + (2 + 16 + PROBE_OFI_NAME_MAX) * PROBE_QPS_MAX)

size_t probe_ofiinfo_encode(const struct probe_ofiinfo *in, uint8_t *buf);
enum fb_status probe_ofiinfo_decode(const uint8_t *buf, size_t len, struct probe_ofiinfo *out,
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
