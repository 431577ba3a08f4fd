/* GID table entries and the choice of the one a RoCE or InfiniBand link
 * should use. Pure functions over a list of entries, so the rules are tested
 * without an HCA. */
#ifndef FB_PROBE_GID_H
#define FB_PROBE_GID_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

enum probe_gid_type { PROBE_GID_IB, PROBE_GID_ROCE_V1, PROBE_GID_ROCE_V2 };
enum probe_link_layer { PROBE_LL_IB, PROBE_LL_ETH };

struct probe_gid_entry {
    uint32_t index;
    enum probe_gid_type type;
    uint8_t raw[16];
};

struct probe_gid_choice {
    uint32_t index;
    enum probe_gid_type type;
    uint8_t raw[16];
    int automatic;   /* 1 when chosen by the rules, 0 for an explicit -x */
    const char *why; /* the rule that picked it, for the header and JSON */
};

/* Picks the GID for `where` ("mlx5_0 port 1"). requested < 0 means
 * automatic: InfiniBand takes the port GID (index 0); Ethernet takes the
 * lowest RoCE v2 entry holding a routable IPv4-mapped address, then a global
 * IPv6 one. An explicit index must lie inside the table (table_len entries),
 * be populated and not be RoCE v1 (not routed, not what NCCL uses); the
 * error lists the entries with their types. */
enum fb_status probe_gid_select(const struct probe_gid_entry *entries, size_t n,
                                uint32_t table_len, enum probe_link_layer ll,
                                long requested, const char *where,
                                struct probe_gid_choice *out, struct fb_err *err);

/* "::ffff:10.0.0.1", "fe80::1" */
void probe_gid_format(const uint8_t raw[16], char *buf, size_t len);

const char *probe_gid_type_name(enum probe_gid_type t);
const char *probe_link_layer_name(enum probe_link_layer ll);

int probe_gid_is_zero(const uint8_t raw[16]);
int probe_gid_is_ipv4_mapped(const uint8_t raw[16]);
/* fe80::/10, or an IPv4-mapped 169.254.0.0/16: neither routes. */
int probe_gid_is_link_local(const uint8_t raw[16]);

#endif
