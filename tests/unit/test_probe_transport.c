/* The transport table: --transport by name, the names its messages list,
 * and what each row says about the options and the endpoint table. */
#include <string.h>

#include "check.h"
#include "probe/endpoint.h"
#include "probe/opts.h"
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

int main(void)
{
    RUN(test_transports_are_found_by_their_exact_name);
    RUN(test_names_for_messages_come_from_the_table);
    RUN(test_every_row_has_the_calls_the_driver_makes);
    RUN(test_options_mean_lanes_and_defaults_per_transport);
    RUN(test_endpoints_are_described_in_the_transports_terms);
    RUN(test_the_build_says_which_transports_it_has);
    return fbt_done();
}
