/* GID choice from recorded GID tables, and line rate from port codes. */
#include <arpa/inet.h>
#include <string.h>

#include "check.h"
#include "probe/gid.h"
#include "probe/linerate.h"

static struct probe_gid_entry entry(uint32_t index, enum probe_gid_type type, const char *addr)
{
    struct probe_gid_entry e = {index, type, {0}};
    inet_pton(AF_INET6, addr, e.raw);
    return e;
}

/* A ConnectX RoCE port as the kernel fills it: v1 and v2 for the link-local
 * address, then v1 and v2 for the IPv4 address. */
static void roce_table(struct probe_gid_entry *t)
{
    t[0] = entry(0, PROBE_GID_ROCE_V1, "fe80::bace:f6ff:fe12:3456");
    t[1] = entry(1, PROBE_GID_ROCE_V2, "fe80::bace:f6ff:fe12:3456");
    t[2] = entry(2, PROBE_GID_ROCE_V1, "::ffff:10.1.2.3");
    t[3] = entry(3, PROBE_GID_ROCE_V2, "::ffff:10.1.2.3");
}

static void test_roce_picks_v2_ipv4_index_3(void)
{
    struct probe_gid_entry t[4];
    roce_table(t);
    struct probe_gid_choice c;
    struct fb_err err = {0};
    CHECK_INT(probe_gid_select(t, 4, 256, PROBE_LL_ETH, -1, "mlx5_0 port 1", &c, &err), FB_OK);
    CHECK_INT(c.index, 3);
    CHECK_INT(c.type, PROBE_GID_ROCE_V2);
    CHECK(c.automatic);
    CHECK_STR(c.why, "RoCE v2, IPv4-mapped");
}

static void test_roce_lowest_matching_index_wins_in_any_order(void)
{
    struct probe_gid_entry t[6];
    t[0] = entry(7, PROBE_GID_ROCE_V2, "::ffff:192.168.0.9");
    t[1] = entry(5, PROBE_GID_ROCE_V2, "::ffff:10.0.0.5");
    t[2] = entry(1, PROBE_GID_ROCE_V2, "fe80::1");
    t[3] = entry(0, PROBE_GID_ROCE_V1, "::ffff:10.0.0.5");
    t[4] = entry(2, PROBE_GID_ROCE_V2, "::ffff:169.254.3.4"); /* IPv4 link-local */
    t[5] = entry(4, PROBE_GID_ROCE_V2, "2001:db8::5");
    struct probe_gid_choice c;
    struct fb_err err = {0};
    CHECK_INT(probe_gid_select(t, 6, 16, PROBE_LL_ETH, -1, "mlx5_1 port 1", &c, &err), FB_OK);
    CHECK_INT(c.index, 5);
}

static void test_roce_falls_back_to_global_ipv6(void)
{
    struct probe_gid_entry t[3];
    t[0] = entry(0, PROBE_GID_ROCE_V1, "fe80::1");
    t[1] = entry(1, PROBE_GID_ROCE_V2, "fe80::1");
    t[2] = entry(2, PROBE_GID_ROCE_V2, "2001:db8::7");
    struct probe_gid_choice c;
    struct fb_err err = {0};
    CHECK_INT(probe_gid_select(t, 3, 16, PROBE_LL_ETH, -1, "mlx5_0 port 1", &c, &err), FB_OK);
    CHECK_INT(c.index, 2);
    CHECK_STR(c.why, "RoCE v2, global IPv6");
}

static void test_roce_without_routable_v2_is_an_error_listing_entries(void)
{
    struct probe_gid_entry t[2];
    t[0] = entry(0, PROBE_GID_ROCE_V1, "fe80::1");
    t[1] = entry(1, PROBE_GID_ROCE_V2, "fe80::1");
    struct probe_gid_choice c;
    struct fb_err err = {0};
    CHECK_INT(probe_gid_select(t, 2, 16, PROBE_LL_ETH, -1, "mlx5_0 port 1", &c, &err), FB_ERR_RUNTIME);
    CHECK_CONTAINS(err.msg, "mlx5_0 port 1");
    CHECK_CONTAINS(err.msg, "1 RoCE v2 fe80::1");
    CHECK_CONTAINS(err.msg, "-x");
    CHECK(strchr(err.msg, '\n') == NULL);
}

static void test_infiniband_takes_port_gid(void)
{
    struct probe_gid_entry t[2];
    t[0] = entry(0, PROBE_GID_IB, "fe80::248a:703:49:d4f0");
    t[1] = entry(1, PROBE_GID_IB, "fe80::1:2");
    struct probe_gid_choice c;
    struct fb_err err = {0};
    CHECK_INT(probe_gid_select(t, 2, 128, PROBE_LL_IB, -1, "mlx5_2 port 1", &c, &err), FB_OK);
    CHECK_INT(c.index, 0);
    CHECK_INT(c.type, PROBE_GID_IB);
}

static void test_explicit_index_is_checked(void)
{
    struct probe_gid_entry t[4];
    roce_table(t);
    struct probe_gid_choice c;
    struct fb_err err = {0};
    CHECK_INT(probe_gid_select(t, 4, 256, PROBE_LL_ETH, 1, "mlx5_0 port 1", &c, &err), FB_OK);
    CHECK_INT(c.index, 1);
    CHECK_INT(c.type, PROBE_GID_ROCE_V2);
    CHECK(!c.automatic);

    /* RoCE v1 is refused, naming the table's types and the v2 IPv4 index. */
    fb_err_clear(&err);
    CHECK_INT(probe_gid_select(t, 4, 256, PROBE_LL_ETH, 2, "mlx5_0 port 1", &c, &err), FB_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "GID index 2 of mlx5_0 port 1 is RoCE v1");
    CHECK_CONTAINS(err.msg, "0 RoCE v1 fe80::bace:f6ff:fe12:3456 (link-local)");
    CHECK_CONTAINS(err.msg, "3 RoCE v2 ::ffff:10.1.2.3 (IPv4)");
    CHECK_CONTAINS(err.msg, "NCCL_IB_GID_INDEX");
    CHECK_CONTAINS(err.msg, "e.g. -x 3");
    CHECK(strchr(err.msg, '\n') == NULL);

    fb_err_clear(&err);
    CHECK_INT(probe_gid_select(t, 4, 4, PROBE_LL_ETH, 9, "mlx5_0 port 1", &c, &err), FB_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "GID index 9 is out of range for mlx5_0 port 1");
    CHECK_CONTAINS(err.msg, "4 entries (0-3)");
    CHECK_CONTAINS(err.msg, "3 RoCE v2 ::ffff:10.1.2.3");

    fb_err_clear(&err);
    CHECK_INT(probe_gid_select(t, 4, 256, PROBE_LL_ETH, 17, "mlx5_0 port 1", &c, &err), FB_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "GID index 17 of mlx5_0 port 1 is empty");
}

static void test_gid_classification(void)
{
    struct probe_gid_entry e = entry(0, PROBE_GID_ROCE_V2, "::ffff:10.0.0.1");
    CHECK(probe_gid_is_ipv4_mapped(e.raw));
    CHECK(!probe_gid_is_link_local(e.raw));
    e = entry(0, PROBE_GID_ROCE_V2, "fe80::1");
    CHECK(probe_gid_is_link_local(e.raw));
    CHECK(!probe_gid_is_ipv4_mapped(e.raw));
    e = entry(0, PROBE_GID_ROCE_V2, "::");
    CHECK(probe_gid_is_zero(e.raw));
    char buf[64];
    e = entry(0, PROBE_GID_ROCE_V2, "::ffff:10.1.2.3");
    probe_gid_format(e.raw, buf, sizeof buf);
    CHECK_STR(buf, "::ffff:10.1.2.3");
}

static void test_line_rate_from_codes(void)
{
    CHECK_NEAR(probe_line_rate_gbps(128, 2), 400.0, 1e-12); /* 4X NDR */
    CHECK_NEAR(probe_line_rate_gbps(64, 2), 200.0, 1e-12);  /* 4X HDR */
    CHECK_NEAR(probe_line_rate_gbps(32, 2), 100.0, 1e-12);  /* 4X EDR */
    CHECK_NEAR(probe_line_rate_gbps(32, 1), 25.0, 1e-12);   /* 1X EDR: 25GbE RoCE */
    CHECK_NEAR(probe_line_rate_gbps(64, 16), 100.0, 1e-12); /* 2X HDR */
    CHECK_NEAR(probe_line_rate_gbps(4, 2), 32.0, 1e-12);    /* 4X QDR: 8b/10b */
    CHECK_NEAR(probe_line_rate_gbps(16, 2), 4 * 14.0625 * 64 / 66, 1e-9); /* 4X FDR: 64b/66b */
    CHECK_NEAR(probe_line_rate_gbps(128, 8), 1200.0, 1e-12); /* 12X NDR */
    CHECK_NEAR(probe_line_rate_gbps(256, 2), 800.0, 1e-12);  /* 4X XDR */
    CHECK_NEAR(probe_line_rate_gbps(3, 2), 0.0, 0);
    CHECK_NEAR(probe_line_rate_gbps(128, 3), 0.0, 0);
    char buf[64];
    probe_rate_describe(128, 2, buf, sizeof buf);
    CHECK_STR(buf, "4X NDR (400 Gb/s)");
    probe_rate_describe(16, 2, buf, sizeof buf);
    CHECK_STR(buf, "4X FDR (56 Gb/s)");
    probe_rate_describe(5, 2, buf, sizeof buf);
    CHECK_CONTAINS(buf, "unknown");
}

int main(void)
{
    RUN(test_roce_picks_v2_ipv4_index_3);
    RUN(test_roce_lowest_matching_index_wins_in_any_order);
    RUN(test_roce_falls_back_to_global_ipv6);
    RUN(test_roce_without_routable_v2_is_an_error_listing_entries);
    RUN(test_infiniband_takes_port_gid);
    RUN(test_explicit_index_is_checked);
    RUN(test_gid_classification);
    RUN(test_line_rate_from_codes);
    return fbt_done();
}
