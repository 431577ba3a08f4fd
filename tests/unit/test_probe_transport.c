/* The transport table: --transport by name, the names its messages list,
 * and what each row says about the options and the endpoint table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "probe/endpoint.h"
#include "probe/opts.h"
#include "probe/tcp_layout.h"
#include "probe/transport.h"

static void test_transports_are_found_by_their_exact_name(void)
{
    enum probe_transport row = PROBE_TCP;
    CHECK(probe_transport_find("rdma", &row) == &probe_transport_verbs);
    CHECK_INT(row, PROBE_RDMA);
    CHECK(probe_transport_find("tcp", &row) == &probe_transport_tcp);
    CHECK_INT(row, PROBE_TCP);
    CHECK(probe_transport_find("udp", &row) == NULL);
    CHECK(probe_transport_find("RDMA", &row) == NULL);
    CHECK(probe_transport_find("", &row) == NULL);
}

static void test_names_for_messages_come_from_the_table(void)
{
    char buf[64];
    probe_transport_names(0, buf, sizeof buf);
    CHECK_STR(buf, "rdma, tcp or ofi");
    probe_transport_names(1, buf, sizeof buf);
    CHECK_STR(buf, "rdma or ofi");
}

static void check_complete(const struct probe_transport_ops *t)
{
    CHECK(t->name != NULL && t->lane != NULL && t->lanes != NULL);
    CHECK(t->open != NULL && t->close != NULL);
    CHECK(t->connect_round != NULL && t->bandwidth != NULL && t->latency != NULL);
    CHECK(t->disconnect_end != NULL && t->describe_endpoint != NULL);
    CHECK(t->port_column != NULL && t->address_column != NULL);
}

static void test_every_row_has_the_calls_the_driver_makes(void)
{
    check_complete(&probe_transport_verbs);
    check_complete(&probe_transport_tcp);
    check_complete(&probe_transport_ofi);
    enum probe_transport row = PROBE_RDMA;
    CHECK(probe_transport_find("ofi", &row) == &probe_transport_ofi);
    CHECK_INT(row, PROBE_OFI);
}

static void test_options_mean_lanes_and_defaults_per_transport(void)
{
    static struct probe_opts o;
    o.qps = 4;
    o.streams = 3;
    CHECK_INT(probe_transport_verbs.lanes(&o), 4);
    CHECK_INT(probe_transport_tcp.lanes(&o), 3);
    /* TCP bandwidth runs for a time (like iperf3); RDMA counts. */
    CHECK_NEAR(probe_transport_tcp.default_duration_s, 2.0, 0);
    CHECK_NEAR(probe_transport_verbs.default_duration_s, 0.0, 0);
    CHECK(probe_transport_verbs.gpu_memory && !probe_transport_tcp.gpu_memory);
    CHECK(probe_transport_verbs.register_memory != NULL);
    CHECK(probe_transport_tcp.register_memory == NULL);
    CHECK_INT(probe_transport_tcp.slot_min, 256 << 10);
}

static void test_endpoints_are_described_in_the_transports_terms(void)
{
    struct probe_endpoint e = {.port = 1, .gid_index = 3, .gid_auto = 1};
    snprintf(e.port_state, sizeof e.port_state, "ACTIVE");
    snprintf(e.gid_type, sizeof e.gid_type, "RoCE v2");
    snprintf(e.gid, sizeof e.gid, "::ffff:10.0.0.1");
    snprintf(e.link_layer, sizeof e.link_layer, "Ethernet");
    snprintf(e.address, sizeof e.address, "10.0.0.1");
    char port[32], addr[160];
    probe_transport_verbs.describe_endpoint(&e, port, sizeof port, addr, sizeof addr);
    CHECK_STR(port, "1 ACTIVE");
    CHECK_STR(addr, "3 RoCE v2 ::ffff:10.0.0.1 auto");
    probe_transport_tcp.describe_endpoint(&e, port, sizeof port, addr, sizeof addr);
    CHECK_STR(port, "Ethernet");
    CHECK_STR(addr, "10.0.0.1");
    CHECK_STR(probe_transport_verbs.port_column, "port");
    CHECK_STR(probe_transport_tcp.address_column, "address");
    snprintf(e.provider, sizeof e.provider, "efa");
    snprintf(e.provider_version, sizeof e.provider_version, "122.0");
    snprintf(e.fabric, sizeof e.fabric, "efa");
    e.address[0] = '\0';
    probe_transport_ofi.describe_endpoint(&e, port, sizeof port, addr, sizeof addr);
#ifdef HAVE_OFI
    CHECK_STR(port, "efa 122.0");
    CHECK_STR(addr, "efa");
#endif
}

/* Whether a build has libfabric is said, not hidden: --version lists the
 * transport either way. */
static void test_the_build_says_which_transports_it_has(void)
{
    char buf[128];
    probe_transport_build(buf, sizeof buf);
#ifdef HAVE_OFI
    CHECK_STR(buf, "rdma, tcp, ofi");
    CHECK(probe_transport_ofi.unavailable == NULL);
#else
    CHECK_STR(buf, "rdma, tcp, ofi (not in this build)");
    CHECK_CONTAINS(probe_transport_ofi.unavailable, "LIBFABRIC_HOME");
#endif
    CHECK(probe_transport_verbs.unavailable == NULL && probe_transport_tcp.unavailable == NULL);
}

static void check_layout(const char *nt, const char *ns, long vendor, int threads, int streams,
                         const char *why_has)
{
    struct probe_tcp_layout l = {0};
    struct fb_err err = {0};
    CHECK_INT(probe_tcp_nccl_layout(nt, ns, vendor, &l, &err), FB_OK);
    CHECK_INT(l.threads, threads);
    CHECK_INT(l.streams, streams);
    CHECK_CONTAINS(l.why, why_has);
}

/* NCCL's choice: by NIC vendor when unset, the variables when set, its
 * caps (16 threads, 64 sockets) applied in its order. */
static void test_nccl_layout_follows_ncclnetsocketgetnsocknthread(void)
{
    check_layout(NULL, NULL, 0x1d0f, 2, 16, "NCCL_SOCKET_NTHREADS=2 x NCCL_NSOCKS_PERTHREAD=8, AWS");
    check_layout(NULL, NULL, 0x1ae0, 4, 4, "Google NIC default");
    check_layout(NULL, NULL, 0x8086, 1, 1, "one socket, one thread");
    check_layout(NULL, NULL, -1, 1, 1, "NCCL_SOCKET_NTHREADS=0");
    check_layout("", "", 0x1d0f, 2, 16, "AWS");
    check_layout("3", NULL, 0x1d0f, 3, 24, "NCCL_SOCKET_NTHREADS=3 x NCCL_NSOCKS_PERTHREAD=8, the unset");
    check_layout("4", "2", -1, 4, 8, "both set");
    check_layout("0", "8", 0x1d0f, 1, 1, "one socket");
    check_layout("2", "0", -1, 1, 1, "one socket");
    check_layout("40", "1", -1, 16, 16, "NCCL_SOCKET_NTHREADS=16");
    check_layout("16", "8", -1, 16, 64, "NCCL_NSOCKS_PERTHREAD=4");
    check_layout("3", "30", -1, 3, 63, "NCCL_NSOCKS_PERTHREAD=21");
    const char *bad[] = {"two", "-1", "2x", " ", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct probe_tcp_layout l;
        struct fb_err err = {0};
        CHECK_INT(probe_tcp_nccl_layout(bad[i], NULL, -1, &l, &err), FB_ERR_USAGE);
        CHECK_CONTAINS(err.msg, "NCCL_SOCKET_NTHREADS=");
        struct fb_err err2 = {0};
        CHECK_INT(probe_tcp_nccl_layout("1", bad[i], -1, &l, &err2), FB_ERR_USAGE);
        CHECK_CONTAINS(err2.msg, "NCCL_NSOCKS_PERTHREAD=");
    }
}

static void put(const char *root, const char *rel, const char *text)
{
    char path[512], dir[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *p = strchr(path + strlen(root) + 1, '/'); p != NULL; p = strchr(p + 1, '/')) {
        snprintf(dir, sizeof dir, "%.*s", (int)(p - path), path);
        mkdir(dir, 0755);
    }
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f != NULL)
        fputs(text, f), fclose(f);
}

/* The vendor comes from --iface's first entry, else the default route's. */
static void test_nccl_layout_reads_the_vendor_of_the_interface_in_use(void)
{
    char root[] = "/tmp/fbt-vendor.XXXXXX";
    CHECK(mkdtemp(root) != NULL);
    put(root, "sys/class/net/ens5/device/vendor", "0x1d0f\n");
    put(root, "sys/class/net/eth0/device/vendor", "0x1ae0\n");
    put(root, "proc/net/route", "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\n"
                                "eth0\t00000000\t0100000A\t0003\t0\t0\t0\t00000000\n");
    CHECK_INT(probe_tcp_iface_vendor(root, "ens5,eth0"), 0x1d0f);
    CHECK_INT(probe_tcp_iface_vendor(root, NULL), 0x1ae0);
    CHECK_INT(probe_tcp_iface_vendor(root, ""), 0x1ae0);
    CHECK_INT(probe_tcp_iface_vendor(root, "veth0"), -1);
    CHECK_INT(probe_tcp_iface_vendor(root, "../../etc"), -1);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    CHECK_INT(system(cmd), 0);
}

int main(void)
{
    RUN(test_transports_are_found_by_their_exact_name);
    RUN(test_names_for_messages_come_from_the_table);
    RUN(test_every_row_has_the_calls_the_driver_makes);
    RUN(test_options_mean_lanes_and_defaults_per_transport);
    RUN(test_endpoints_are_described_in_the_transports_terms);
    RUN(test_the_build_says_which_transports_it_has);
    RUN(test_nccl_layout_follows_ncclnetsocketgetnsocknthread);
    RUN(test_nccl_layout_reads_the_vendor_of_the_interface_in_use);
    return fbt_done();
}
