/* The records two ends exchange: layout, version, and agreement. */
#include <string.h>

#include "check.h"
#include "probe/gid.h"
#include "probe/wire.h"

static struct probe_qpinfo sample(void)
{
    struct probe_qpinfo q = {
        .link = 7, .rank = 3, .lid = 0x1234, .link_layer = PROBE_LL_ETH,
        .gid_type = PROBE_GID_ROCE_V2, .gid_index = 3, .mtu = 4096, .rkey = 0xdeadbeef,
        .addr = 0x7f0012345678ULL, .len = 16ULL << 20, .nqp = 3,
    };
    for (int i = 0; i < 16; i++)
        q.gid[i] = (uint8_t)(0xa0 + i);
    for (int i = 0; i < 3; i++) {
        q.qpn[i] = 0x100 + (uint32_t)i;
        q.psn[i] = 0xabc000 + (uint32_t)i;
    }
    return q;
}

static void test_qpinfo_round_trip(void)
{
    struct probe_qpinfo in = sample(), out;
    uint8_t buf[PROBE_QPINFO_WIRE_MAX];
    size_t len = probe_qpinfo_encode(&in, buf);
    CHECK_INT(len, 60 + 8 * 3);
    struct fb_err err = {0};
    CHECK_INT(probe_qpinfo_decode(buf, len, &out, &err), FB_OK);
    CHECK_INT(out.link, 7);
    CHECK_INT(out.rank, 3);
    CHECK_INT(out.lid, 0x1234);
    CHECK_INT(out.gid_type, PROBE_GID_ROCE_V2);
    CHECK_INT(out.gid_index, 3);
    CHECK_INT(out.mtu, 4096);
    CHECK_INT(out.rkey, 0xdeadbeef);
    CHECK(out.addr == 0x7f0012345678ULL);
    CHECK(out.len == 16ULL << 20);
    CHECK(memcmp(out.gid, in.gid, 16) == 0);
    CHECK_INT(out.nqp, 3);
    CHECK_INT(out.qpn[2], 0x102);
    CHECK_INT(out.psn[1], 0xabc001);
}

/* The layout is fixed little-endian, whatever the host: spot-check bytes. */
static void test_qpinfo_layout_is_little_endian(void)
{
    struct probe_qpinfo in = sample();
    uint8_t buf[PROBE_QPINFO_WIRE_MAX];
    probe_qpinfo_encode(&in, buf);
    CHECK(memcmp(buf, "FBQP", 4) == 0);
    CHECK_INT(buf[4], PROBE_WIRE_VERSION);
    CHECK_INT(buf[5], 0);
    CHECK_INT(buf[6], 7);  /* link */
    CHECK_INT(buf[14], 0x34); /* lid low byte */
    CHECK_INT(buf[15], 0x12);
    CHECK_INT(buf[22], 0xef); /* rkey low byte */
}

static void test_qpinfo_rejects_other_versions_and_garbage(void)
{
    struct probe_qpinfo in = sample(), out;
    uint8_t buf[PROBE_QPINFO_WIRE_MAX];
    size_t len = probe_qpinfo_encode(&in, buf);
    struct fb_err err = {0};
    buf[4] = 2;
    CHECK_INT(probe_qpinfo_decode(buf, len, &out, &err), FB_ERR_LAUNCH);
    CHECK_CONTAINS(err.msg, "version 2");
    CHECK_CONTAINS(err.msg, "same fabric-rdma build");
    fb_err_clear(&err);
    CHECK_INT(probe_qpinfo_decode((const uint8_t *)"lid 1 qpn 2", 11, &out, &err), FB_ERR_LAUNCH);
    CHECK_CONTAINS(err.msg, "not a queue-pair record");
    fb_err_clear(&err);
    buf[4] = PROBE_WIRE_VERSION;
    CHECK_INT(probe_qpinfo_decode(buf, len - 1, &out, &err), FB_ERR_LAUNCH);
    CHECK_CONTAINS(err.msg, "malformed");
    fb_err_clear(&err);
    CHECK_INT(probe_qpinfo_decode(buf, 30, &out, &err), FB_ERR_LAUNCH);
    CHECK_CONTAINS(err.msg, "truncated");
}

static void test_ends_must_agree_on_gid_type_and_mtu(void)
{
    struct probe_qpinfo a = sample(), b = sample();
    struct fb_err err = {0};
    CHECK_INT(probe_qpinfo_agree(&a, &b, "rank 0 (n1 mlx5_0)", "rank 2 (n2 mlx5_0)", &err), FB_OK);
    b.gid_type = PROBE_GID_ROCE_V1;
    b.gid_index = 1;
    CHECK_INT(probe_qpinfo_agree(&a, &b, "rank 0 (n1 mlx5_0)", "rank 2 (n2 mlx5_0)", &err), FB_ERR_LAUNCH);
    CHECK_CONTAINS(err.msg, "GID types differ: rank 0 (n1 mlx5_0) uses RoCE v2 (GID index 3), "
                            "rank 2 (n2 mlx5_0) uses RoCE v1 (GID index 1)");
    fb_err_clear(&err);
    b = sample();
    b.mtu = 1024;
    CHECK_INT(probe_qpinfo_agree(&a, &b, "A", "B", &err), FB_ERR_LAUNCH);
    CHECK_CONTAINS(err.msg, "path MTUs differ: A uses 4096, B uses 1024");
    fb_err_clear(&err);
    b = sample();
    b.link_layer = PROBE_LL_IB;
    CHECK_INT(probe_qpinfo_agree(&a, &b, "A", "B", &err), FB_ERR_LAUNCH);
    CHECK_CONTAINS(err.msg, "A is Ethernet, B is InfiniBand");
    fb_err_clear(&err);
    b = sample();
    b.nqp = 2;
    CHECK_INT(probe_qpinfo_agree(&a, &b, "A", "B", &err), FB_ERR_LAUNCH);
    CHECK_CONTAINS(err.msg, "-q");
}

static void test_tcpinfo_round_trip(void)
{
    struct probe_tcpinfo in = {.link = 4, .rank = 1, .ipv4 = {10, 77, 0, 2}, .port = 40123, .streams = 8};
    uint8_t buf[PROBE_TCPINFO_WIRE_LEN];
    CHECK_INT(probe_tcpinfo_encode(&in, buf), PROBE_TCPINFO_WIRE_LEN);
    struct probe_tcpinfo out;
    struct fb_err err = {0};
    CHECK_INT(probe_tcpinfo_decode(buf, sizeof buf, &out, &err), FB_OK);
    CHECK_INT(out.link, 4);
    CHECK_INT(out.rank, 1);
    CHECK(memcmp(out.ipv4, in.ipv4, 4) == 0);
    CHECK_INT(out.port, 40123);
    CHECK_INT(out.streams, 8);
    /* A queue-pair record is not a TCP address. */
    struct probe_qpinfo q = sample();
    uint8_t qbuf[PROBE_QPINFO_WIRE_MAX];
    size_t qlen = probe_qpinfo_encode(&q, qbuf);
    CHECK_INT(probe_tcpinfo_decode(qbuf, qlen, &out, &err), FB_ERR_LAUNCH);
}

static void test_stream_greeting_layout_and_checks(void)
{
    uint8_t b[PROBE_HELLO_LEN];
    probe_hello_encode(&(struct probe_hello){0x01020304, 0x0506}, b);
    const uint8_t want[PROBE_HELLO_LEN] = {'F', 'B', 'T', 'S', PROBE_WIRE_VERSION, 0, 6, 5,
                                           4, 3, 2, 1, 0, 0, 0, 0};
    CHECK(memcmp(b, want, sizeof want) == 0);
    struct probe_hello h;
    CHECK_INT(probe_hello_decode(b, &h), 1);
    CHECK_INT(h.link, 0x01020304);
    CHECK_INT(h.stream, 0x0506);
    b[4] = PROBE_WIRE_VERSION + 1;
    CHECK_INT(probe_hello_decode(b, &h), 0);
    CHECK_INT(h.link, 0x01020304); /* still read, for the error */
    b[4] = PROBE_WIRE_VERSION;
    b[0] = 'X';
    CHECK_INT(probe_hello_decode(b, &h), 0);
}

static void test_ofiinfo_round_trip_and_bounds(void)
{
    static struct probe_ofiinfo in, out;
    memset(&in, 0, sizeof in);
    in.link = 9;
    in.rank = 5;
    strcpy(in.provider, "tcp;ofi_rxm");
    in.addr_format = 2;
    in.nlanes = 2;
    for (int i = 0; i < 2; i++) {
        in.lane[i].name_len = (uint16_t)(16 + 12 * i); /* sockaddr_in, then a longer name */
        for (int k = 0; k < in.lane[i].name_len; k++)
            in.lane[i].name[k] = (uint8_t)(k * 7 + i);
        in.lane[i].base = 0x7f00aa000000ULL + (uint64_t)i;
        in.lane[i].key = 0x1122334455667788ULL ^ (uint64_t)i;
    }
    static uint8_t buf[PROBE_OFIINFO_WIRE_MAX];
    size_t len = probe_ofiinfo_encode(&in, buf);
    CHECK_INT(len, PROBE_OFIINFO_FIXED + 2 * 18 + 16 + 28);
    struct fb_err err = {0};
    CHECK_INT(probe_ofiinfo_decode(buf, len, &out, &err), FB_OK);
    CHECK_INT(out.link, 9);
    CHECK_INT(out.rank, 5);
    CHECK_STR(out.provider, "tcp;ofi_rxm");
    CHECK_INT(out.addr_format, 2);
    CHECK_INT(out.nlanes, 2);
    for (int i = 0; i < 2; i++) {
        CHECK_INT(out.lane[i].name_len, in.lane[i].name_len);
        CHECK(memcmp(out.lane[i].name, in.lane[i].name, in.lane[i].name_len) == 0);
        CHECK(out.lane[i].base == in.lane[i].base && out.lane[i].key == in.lane[i].key);
    }
    /* Cut anywhere inside the lanes: malformed, never read past the end. */
    for (size_t cut = PROBE_OFIINFO_FIXED; cut < len; cut += 5) {
        err = (struct fb_err){0};
        CHECK_INT(probe_ofiinfo_decode(buf, cut, &out, &err), FB_ERR_LAUNCH);
        CHECK_CONTAINS(err.msg, "rank 5");
    }
    err = (struct fb_err){0};
    CHECK_INT(probe_ofiinfo_decode(buf, PROBE_OFIINFO_FIXED - 1, &out, &err), FB_ERR_LAUNCH);
    CHECK_CONTAINS(err.msg, "truncated");
    /* A provider name that fills its field still ends in NUL. */
    memset(in.provider, 'p', sizeof in.provider);
    len = probe_ofiinfo_encode(&in, buf);
    CHECK_INT(probe_ofiinfo_decode(buf, len, &out, &err), FB_OK);
    CHECK_INT((int)strlen(out.provider), PROBE_OFI_PROV_MAX - 1);
    /* A queue-pair record is not a libfabric record. */
    struct probe_qpinfo q = sample();
    uint8_t qbuf[PROBE_QPINFO_WIRE_MAX];
    err = (struct fb_err){0};
    CHECK_INT(probe_ofiinfo_decode(qbuf, probe_qpinfo_encode(&q, qbuf), &out, &err), FB_ERR_LAUNCH);
    CHECK_CONTAINS(err.msg, "not a libfabric endpoint record");
}

int main(void)
{
    RUN(test_qpinfo_round_trip);
    RUN(test_qpinfo_layout_is_little_endian);
    RUN(test_qpinfo_rejects_other_versions_and_garbage);
    RUN(test_ends_must_agree_on_gid_type_and_mtu);
    RUN(test_tcpinfo_round_trip);
    RUN(test_stream_greeting_layout_and_checks);
    RUN(test_ofiinfo_round_trip_and_bounds);
    return fbt_done();
}
