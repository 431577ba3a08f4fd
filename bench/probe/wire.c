#include "probe/wire.h"

#include <string.h>

#include "probe/gid.h"

static const uint8_t qp_magic[4] = {'F', 'B', 'Q', 'P'};
static const uint8_t tcp_magic[4] = {'F', 'B', 'T', 'A'};
static const uint8_t hello_magic[4] = {'F', 'B', 'T', 'S'};
static const uint8_t ofi_magic[4] = {'F', 'B', 'O', 'F'};

static uint8_t *put_le(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (uint8_t)(v >> (8 * i));
    return p + bytes;
}

static uint8_t *put16(uint8_t *p, uint16_t v) { return put_le(p, v, 2); }
static uint8_t *put32(uint8_t *p, uint32_t v) { return put_le(p, v, 4); }
static uint8_t *put64(uint8_t *p, uint64_t v) { return put_le(p, v, 8); }

static uint64_t get_le(const uint8_t **p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v |= (uint64_t)(*p)[i] << (8 * i);
    *p += bytes;
    return v;
}

static uint16_t get16(const uint8_t **p) { return (uint16_t)get_le(p, 2); }
static uint32_t get32(const uint8_t **p) { return (uint32_t)get_le(p, 4); }
static uint64_t get64(const uint8_t **p) { return get_le(p, 8); }

/* Magic and version open every record and greeting. */
static uint8_t *put_header(uint8_t *buf, const uint8_t magic[4])
{
    memcpy(buf, magic, 4);
    return put16(buf + 4, PROBE_WIRE_VERSION);
}

/* Magic and version come first in every record: check them before
 * trusting any length. */
static enum fb_status check_header(const uint8_t *buf, size_t len, const uint8_t magic[4],
                                   const char *what, struct fb_err *err)
{
    if (len < 6 || memcmp(buf, magic, 4) != 0)
        return fb_fail(err, FB_ERR_LAUNCH,
                       "the peer sent a %zu-byte message that is not a %s record; is every rank "
                       "running the same fabric-rdma?", len, what);
    const uint8_t *p = buf + 4;
    uint16_t version = get16(&p);
    if (version != PROBE_WIRE_VERSION)
        return fb_fail(err, FB_ERR_LAUNCH,
                       "the peer's %s record is version %u, this build speaks version %d; run "
                       "the same fabric-rdma build on every node", what, version, PROBE_WIRE_VERSION);
    return FB_OK;
}

size_t probe_qpinfo_encode(const struct probe_qpinfo *in, uint8_t *buf)
{
    uint8_t *p = put_header(buf, qp_magic);
    p = put32(p, in->link);
    p = put32(p, (uint32_t)in->rank);
    p = put16(p, in->lid);
    *p++ = in->link_layer;
    *p++ = in->gid_type;
    p = put16(p, in->gid_index);
    p = put16(p, in->mtu);
    p = put32(p, in->rkey);
    p = put64(p, in->addr);
    p = put64(p, in->len);
    memcpy(p, in->gid, 16);
    p += 16;
    uint16_t nqp = in->nqp > PROBE_QPS_MAX ? PROBE_QPS_MAX : in->nqp;
    p = put16(p, nqp);
    for (int i = 0; i < nqp; i++) {
        p = put32(p, in->qpn[i]);
        p = put32(p, in->psn[i]);
    }
    return (size_t)(p - buf);
}

enum fb_status probe_qpinfo_decode(const uint8_t *buf, size_t len, struct probe_qpinfo *out,
                                   struct fb_err *err)
{
    if (check_header(buf, len, qp_magic, "queue-pair", err) != FB_OK)
        return err->code;
    const size_t fixed = 60; /* header through nqp */
    if (len < fixed)
        return fb_fail(err, FB_ERR_LAUNCH, "queue-pair record truncated: %zu of %zu bytes", len, fixed);
    const uint8_t *p = buf + 6;
    memset(out, 0, sizeof *out);
    out->link = get32(&p);
    out->rank = (int32_t)get32(&p);
    out->lid = get16(&p);
    out->link_layer = *p++;
    out->gid_type = *p++;
    out->gid_index = get16(&p);
    out->mtu = get16(&p);
    out->rkey = get32(&p);
    out->addr = get64(&p);
    out->len = get64(&p);
    memcpy(out->gid, p, 16);
    p += 16;
    out->nqp = get16(&p);
    if (out->nqp == 0 || out->nqp > PROBE_QPS_MAX || len < fixed + 8u * out->nqp)
        return fb_fail(err, FB_ERR_LAUNCH,
                       "queue-pair record from rank %d is malformed (%u QPs in %zu bytes)",
                       out->rank, out->nqp, len);
    for (int i = 0; i < out->nqp; i++) {
        out->qpn[i] = get32(&p);
        out->psn[i] = get32(&p);
    }
    return FB_OK;
}

enum fb_status probe_qpinfo_agree(const struct probe_qpinfo *mine,
                                  const struct probe_qpinfo *theirs, const char *me,
                                  const char *peer, struct fb_err *err)
{
    if (mine->link_layer != theirs->link_layer)
        return fb_fail(err, FB_ERR_LAUNCH,
                       "link layers differ: %s is %s, %s is %s; pair ports of the same fabric "
                       "(-d per node)", me, probe_link_layer_name(mine->link_layer), peer,
                       probe_link_layer_name(theirs->link_layer));
    if (mine->gid_type != theirs->gid_type)
        return fb_fail(err, FB_ERR_LAUNCH,
                       "GID types differ: %s uses %s (GID index %u), %s uses %s (GID index %u); "
                       "pass -x with a RoCE v2 index valid on both or let auto-selection choose",
                       me, probe_gid_type_name(mine->gid_type), mine->gid_index, peer,
                       probe_gid_type_name(theirs->gid_type), theirs->gid_index);
    if (mine->mtu != theirs->mtu)
        return fb_fail(err, FB_ERR_LAUNCH,
                       "path MTUs differ: %s uses %u, %s uses %u; set the same MTU on both ports "
                       "(and the switches between) or force one with --mtu",
                       me, mine->mtu, peer, theirs->mtu);
    if (mine->nqp != theirs->nqp)
        return fb_fail(err, FB_ERR_LAUNCH,
                       "QP counts differ: %s has %u, %s has %u; run every rank with the same -q",
                       me, mine->nqp, peer, theirs->nqp);
    return FB_OK;
}

size_t probe_tcpinfo_encode(const struct probe_tcpinfo *in, uint8_t *buf)
{
    uint8_t *p = put_header(buf, tcp_magic);
    p = put32(p, in->link);
    p = put32(p, (uint32_t)in->rank);
    memcpy(p, in->ipv4, 4);
    p = put16(p + 4, in->port);
    p = put16(p, in->streams);
    p = put16(p, 0); /* reserved */
    return (size_t)(p - buf);
}

enum fb_status probe_tcpinfo_decode(const uint8_t *buf, size_t len, struct probe_tcpinfo *out,
                                    struct fb_err *err)
{
    if (check_header(buf, len, tcp_magic, "TCP address", err) != FB_OK)
        return err->code;
    if (len < PROBE_TCPINFO_WIRE_LEN)
        return fb_fail(err, FB_ERR_LAUNCH, "TCP address record truncated: %zu of %d bytes", len,
                       PROBE_TCPINFO_WIRE_LEN);
    const uint8_t *p = buf + 6;
    memset(out, 0, sizeof *out);
    out->link = get32(&p);
    out->rank = (int32_t)get32(&p);
    memcpy(out->ipv4, p, 4);
    p += 4;
    out->port = get16(&p);
    out->streams = get16(&p);
    return FB_OK;
}

size_t probe_ofiinfo_encode(const struct probe_ofiinfo *in, uint8_t *buf)
{
    uint8_t *p = put_header(buf, ofi_magic);
    p = put32(p, in->link);
    p = put32(p, (uint32_t)in->rank);
    memset(p, 0, PROBE_OFI_PROV_MAX);
    memcpy(p, in->provider, strnlen(in->provider, PROBE_OFI_PROV_MAX - 1));
    p += PROBE_OFI_PROV_MAX;
    p = put32(p, in->addr_format);
    uint16_t n = in->nlanes > PROBE_QPS_MAX ? PROBE_QPS_MAX : in->nlanes;
    p = put16(p, n);
    for (int i = 0; i < n; i++) {
        const struct probe_ofi_lane_info *l = &in->lane[i];
        uint16_t len = l->name_len > PROBE_OFI_NAME_MAX ? PROBE_OFI_NAME_MAX : l->name_len;
        p = put16(p, len);
        memcpy(p, l->name, len);
        p = put64(p + len, l->base);
        p = put64(p, l->key);
    }
    return (size_t)(p - buf);
}

enum fb_status probe_ofiinfo_decode(const uint8_t *buf, size_t len, struct probe_ofiinfo *out,
                                    struct fb_err *err)
{
    if (check_header(buf, len, ofi_magic, "libfabric endpoint", err) != FB_OK)
        return err->code;
    if (len < PROBE_OFIINFO_FIXED)
        return fb_fail(err, FB_ERR_LAUNCH, "libfabric endpoint record truncated: %zu of %d bytes",
                       len, PROBE_OFIINFO_FIXED);
    const uint8_t *p = buf + 6, *end = buf + len;
    memset(out, 0, sizeof *out);
    out->link = get32(&p);
    out->rank = (int32_t)get32(&p);
    memcpy(out->provider, p, PROBE_OFI_PROV_MAX - 1);
    p += PROBE_OFI_PROV_MAX;
    out->addr_format = get32(&p);
    out->nlanes = get16(&p);
    if (out->nlanes == 0 || out->nlanes > PROBE_QPS_MAX)
        return fb_fail(err, FB_ERR_LAUNCH, "libfabric endpoint record from rank %d names %u "
                       "endpoints (1 to %d expected)", out->rank, out->nlanes, PROBE_QPS_MAX);
    for (int i = 0; i < out->nlanes; i++) {
        struct probe_ofi_lane_info *l = &out->lane[i];
        if (end - p < 2 || (l->name_len = get16(&p)) > PROBE_OFI_NAME_MAX || l->name_len == 0 ||
            end - p < l->name_len + 16)
            return fb_fail(err, FB_ERR_LAUNCH, "libfabric endpoint record from rank %d is "
                           "malformed at endpoint %d (%zu bytes)", out->rank, i, len);
        memcpy(l->name, p, l->name_len);
        p += l->name_len;
        l->base = get64(&p);
        l->key = get64(&p);
    }
    return FB_OK;
}

void probe_hello_encode(const struct probe_hello *in, uint8_t *buf)
{
    memset(buf, 0, PROBE_HELLO_LEN);
    uint8_t *p = put_header(buf, hello_magic);
    p = put16(p, in->stream);
    put32(p, in->link);
}

int probe_hello_decode(const uint8_t *buf, struct probe_hello *out)
{
    const uint8_t *p = buf + 4;
    uint16_t version = get16(&p);
    out->stream = get16(&p);
    out->link = get32(&p);
    return memcmp(buf, hello_magic, 4) == 0 && version == PROBE_WIRE_VERSION;
}
