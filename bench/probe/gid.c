#include "probe/gid.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

const char *probe_gid_type_name(enum probe_gid_type t)
{
    switch (t) {
    case PROBE_GID_IB: return "IB";
    case PROBE_GID_ROCE_V1: return "RoCE v1";
    case PROBE_GID_ROCE_V2: return "RoCE v2";
    }
    return "unknown";
}

const char *probe_link_layer_name(enum probe_link_layer ll)
{
    return ll == PROBE_LL_ETH ? "Ethernet" : "InfiniBand";
}

int probe_gid_is_zero(const uint8_t raw[16])
{
    for (int i = 0; i < 16; i++)
        if (raw[i] != 0)
            return 0;
    return 1;
}

int probe_gid_is_ipv4_mapped(const uint8_t raw[16])
{
    static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return memcmp(raw, prefix, sizeof prefix) == 0;
}

int probe_gid_is_link_local(const uint8_t raw[16])
{
    if (probe_gid_is_ipv4_mapped(raw))
        return raw[12] == 169 && raw[13] == 254;
    return raw[0] == 0xfe && (raw[1] & 0xc0) == 0x80;
}

void probe_gid_format(const uint8_t raw[16], char *buf, size_t len)
{
    if (inet_ntop(AF_INET6, raw, buf, (socklen_t)len) == NULL && len > 0)
        snprintf(buf, len, "?");
}

/* What kind of address a RoCE entry holds, so an error tells the entry
 * NCCL_IB_GID_INDEX should name at a glance; "" for InfiniBand. */
static const char *address_kind(const struct probe_gid_entry *e)
{
    if (e->type == PROBE_GID_IB)
        return "";
    if (probe_gid_is_link_local(e->raw))
        return " (link-local)";
    return probe_gid_is_ipv4_mapped(e->raw) ? " (IPv4)" : " (IPv6)";
}

/* "0 RoCE v1 fe80::1 (link-local), 3 RoCE v2 ::ffff:10.0.0.1 (IPv4), ..."
 * for error messages. */
static void list_entries(const struct probe_gid_entry *e, size_t n, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && used < len; i++) {
        char addr[64];
        probe_gid_format(e[i].raw, addr, sizeof addr);
        used += (size_t)snprintf(buf + used, len - used, "%s%u %s %s%s", i ? ", " : "",
                                 e[i].index, probe_gid_type_name(e[i].type), addr,
                                 address_kind(&e[i]));
    }
    if (n == 0)
        snprintf(buf, len, "none");
}

static void take(struct probe_gid_choice *out, const struct probe_gid_entry *e, int automatic,
                 const char *why)
{
    out->index = e->index;
    out->type = e->type;
    memcpy(out->raw, e->raw, sizeof out->raw);
    out->automatic = automatic;
    out->why = why;
}

static const struct probe_gid_entry *lowest_matching(const struct probe_gid_entry *e, size_t n,
                                                     int want_ipv4)
{
    const struct probe_gid_entry *best = NULL;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *g = e[i].raw;
        if (e[i].type != PROBE_GID_ROCE_V2 || probe_gid_is_zero(g) || probe_gid_is_link_local(g))
            continue;
        if (probe_gid_is_ipv4_mapped(g) != want_ipv4)
            continue;
        if (best == NULL || e[i].index < best->index)
            best = &e[i];
    }
    return best;
}

/* RoCE v1 frames are not IP packets: routers drop them and NCCL, which
 * uses RoCE v2 unless told otherwise, would not take that path. An
 * explicit v1 index is almost always the InfiniBand habit of index 0
 * carried over to RoCE, so it is refused with the v2 index to use. */
static enum fb_status refuse_roce_v1(const struct probe_gid_entry *e, size_t n, long requested,
                                     const char *where, const char *valid, struct fb_err *err)
{
    const struct probe_gid_entry *v2 = lowest_matching(e, n, 1);
    if (v2 == NULL)
        v2 = lowest_matching(e, n, 0);
    char hint[32] = "";
    if (v2 != NULL)
        snprintf(hint, sizeof hint, ", e.g. -x %u", v2->index);
    return fb_fail(err, FB_ERR_USAGE,
                   "GID index %ld of %s is RoCE v1, which IP routers drop and NCCL never picks "
                   "by itself (it takes RoCE v2); table: %s; pass a routable RoCE v2 index with -x, the "
                   "one NCCL_IB_GID_INDEX should name%s",
                   requested, where, valid, hint);
}

static enum fb_status select_explicit(const struct probe_gid_entry *e, size_t n, uint32_t table_len,
                                      long requested, const char *where,
                                      struct probe_gid_choice *out, struct fb_err *err)
{
    char valid[768];
    list_entries(e, n, valid, sizeof valid);
    if (requested >= (long)table_len)
        return fb_fail(err, FB_ERR_USAGE,
                       "GID index %ld is out of range for %s: its table has %u entries (0-%u); "
                       "populated: %s; pass one of those with -x (as NCCL_IB_GID_INDEX)",
                       requested, where, table_len, table_len ? table_len - 1 : 0, valid);
    for (size_t i = 0; i < n; i++) {
        if (e[i].index != (uint32_t)requested || probe_gid_is_zero(e[i].raw))
            continue;
        if (e[i].type == PROBE_GID_ROCE_V1)
            return refuse_roce_v1(e, n, requested, where, valid, err);
        take(out, &e[i], 0, "explicit -x");
        return FB_OK;
    }
    return fb_fail(err, FB_ERR_USAGE,
                   "GID index %ld of %s is empty; populated: %s; pass one of those with -x (as "
                   "NCCL_IB_GID_INDEX)",
                   requested, where, valid);
}

enum fb_status probe_gid_select(const struct probe_gid_entry *entries, size_t n,
                                uint32_t table_len, enum probe_link_layer ll,
                                long requested, const char *where,
                                struct probe_gid_choice *out, struct fb_err *err)
{
    if (requested >= 0)
        return select_explicit(entries, n, table_len, requested, where, out, err);
    if (ll == PROBE_LL_IB) {
        /* Index 0 holds the port GID (subnet prefix + port GUID); within a
         * subnet the LID routes and the GID only travels in the record. */
        for (size_t i = 0; i < n; i++) {
            if (entries[i].index == 0 && !probe_gid_is_zero(entries[i].raw)) {
                take(out, &entries[i], 1, "InfiniBand port GID");
                return FB_OK;
            }
        }
        return fb_fail(err, FB_ERR_RUNTIME,
                       "%s has no port GID at index 0; is the subnet manager running? "
                       "(check with ibstat)", where);
    }
    const struct probe_gid_entry *pick = lowest_matching(entries, n, 1);
    if (pick != NULL) {
        take(out, pick, 1, "RoCE v2, IPv4-mapped");
        return FB_OK;
    }
    pick = lowest_matching(entries, n, 0);
    if (pick != NULL) {
        take(out, pick, 1, "RoCE v2, global IPv6");
        return FB_OK;
    }
    char valid[768];
    list_entries(entries, n, valid, sizeof valid);
    return fb_fail(err, FB_ERR_RUNTIME,
                   "%s has no routable RoCE v2 GID (entries: %s); give the port's network "
                   "interface an IP address or choose a GID with -x",
                   where, valid);
}
