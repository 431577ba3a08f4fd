/* Device choice per rank, sysfs facts from a recorded tree, and options. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "probe/devsel.h"
#include "probe/ofi_env.h"
#include "probe/opts.h"
#include "probe/rounds.h"
#include "probe/sysfs.h"
#include "probe/tcp.h"

static const char *const hcas[] = {"mlx5_3", "mlx5_0", "mlx5_2", "mlx5_1"};

static void test_local_rank_takes_the_nth_hca_in_name_order(void)
{
    char out[64];
    struct fb_err err = {0};
    CHECK_INT(probe_pick_device(hcas, 4, NULL, 0, 4, "HCA", "-d", "n1", out, sizeof out, &err), FB_OK);
    CHECK_STR(out, "mlx5_0");
    CHECK_INT(probe_pick_device(hcas, 4, NULL, 3, 4, "HCA", "-d", "n1", out, sizeof out, &err), FB_OK);
    CHECK_STR(out, "mlx5_3");
}

static void test_named_hcas_by_local_rank_or_shared(void)
{
    char out[64];
    struct fb_err err = {0};
    CHECK_INT(probe_pick_device(hcas, 4, "mlx5_2,mlx5_1", 1, 2, "HCA", "-d", "n1", out, sizeof out, &err), FB_OK);
    CHECK_STR(out, "mlx5_1");
    CHECK_INT(probe_pick_device(hcas, 4, "mlx5_2", 5, 8, "HCA", "-d", "n1", out, sizeof out, &err), FB_OK);
    CHECK_STR(out, "mlx5_2");
}

static void test_missing_hca_lists_the_present_ones(void)
{
    char out[64];
    struct fb_err err = {0};
    CHECK_INT(probe_pick_device(hcas, 4, "mlx5_9", 0, 1, "HCA", "-d", "node7", out, sizeof out, &err),
              FB_ERR_USAGE);
    CHECK_STR(err.msg, "HCA mlx5_9 does not exist on node7; it has: mlx5_0, mlx5_1, mlx5_2, mlx5_3");
}

static void test_more_ranks_than_hcas(void)
{
    char out[64];
    struct fb_err err = {0};
    CHECK_INT(probe_pick_device(hcas, 4, NULL, 0, 8, "HCA", "-d", "node7", out, sizeof out, &err),
              FB_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "node7 runs 8 ranks but has 4 HCAs (mlx5_0, mlx5_1, mlx5_2, mlx5_3)");
    fb_err_clear(&err);
    CHECK_INT(probe_pick_device(hcas, 4, "mlx5_0,mlx5_1", 0, 3, "HCA", "-d", "node7", out, sizeof out, &err),
              FB_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "names 2 HCAs");
}

static void test_sysfs_facts_from_a_recorded_tree(void)
{
    const char *root = "tests/fixtures/probe";
    char pci[32];
    CHECK_INT(probe_sysfs_numa_node(root, "infiniband", "mlx5_0"), 1);
    CHECK_INT(probe_sysfs_numa_node(root, "infiniband", "mlx5_3"), -1);
    CHECK_INT(probe_sysfs_numa_node(root, "infiniband", "mlx5_9"), -1);
    CHECK_INT(probe_sysfs_pci_address(root, "infiniband", "mlx5_0", pci, sizeof pci), 0);
    CHECK_STR(pci, "0000:c1:00.0");
    CHECK_INT(probe_sysfs_pci_address(root, "infiniband", "mlx5_3", pci, sizeof pci), -1);
    CHECK_STR(pci, "");
    CHECK_INT(probe_sysfs_net_speed_mbps(root, "ens1f0np0"), 100000);
    CHECK_INT(probe_sysfs_net_mtu(root, "ens1f0np0"), 9000);
    CHECK_INT(probe_sysfs_numa_node(root, "net", "ens1f0np0"), 0);
    /* veth reports 10000 Mb/s, but it is not a line rate. */
    CHECK_INT(probe_sysfs_net_speed_mbps(root, "veth7"), -1);
    CHECK_INT(probe_sysfs_net_mtu(root, "veth7"), 1500);
}

static void test_default_route_interface(void)
{
    char name[32];
    CHECK_INT(probe_tcp_default_route_iface("tests/fixtures/probe", name, sizeof name), 0);
    CHECK_STR(name, "eth0");
    CHECK_INT(probe_tcp_default_route_iface("tests/fixtures/none", name, sizeof name), -1);
}

static enum fb_status parse(struct probe_opts *o, const char *line, struct fb_err *err)
{
    char copy[512], *argv[64];
    int argc = 0;
    snprintf(copy, sizeof copy, "fabric-rdma %s", line);
    for (char *t = strtok(copy, " "); t && argc < 63; t = strtok(NULL, " "))
        argv[argc++] = t;
    argv[argc] = NULL;
    fb_err_clear(err);
    return probe_opts_parse(o, argc, argv, err);
}

static void test_option_defaults_follow_the_mode(void)
{
    static struct probe_opts o;
    struct fb_err err = {0};
    CHECK_INT(parse(&o, "", &err), FB_OK);
    CHECK_INT(o.transport, PROBE_RDMA);
    CHECK_INT(o.pattern, PROBE_PATTERN_PAIRS);
    CHECK_INT(o.iters, 5000);
    CHECK_INT(o.nsizes, 1);
    CHECK_INT(o.sizes[0], 1 << 20);
    CHECK_INT(parse(&o, "--transport tcp", &err), FB_OK);
    CHECK_INT(o.iters, 0);
    CHECK_NEAR(o.duration, 2.0, 0);
    CHECK_INT(parse(&o, "--latency", &err), FB_OK);
    CHECK_INT(o.iters, 1000);
    CHECK_INT(o.sizes[0], 2);
    CHECK_INT(parse(&o, "-a --max-size 16M", &err), FB_OK);
    CHECK_INT(o.nsizes, 24);
    CHECK_INT(o.sizes[0], 2);
    CHECK_INT(o.sizes[23], 16 << 20);
    CHECK_INT(parse(&o, "-D 3 --transport tcp -P 4", &err), FB_OK);
    CHECK_INT(o.iters, 0);
    CHECK_INT(o.streams, 4);
}

static void test_option_conflicts_are_usage_errors(void)
{
    static struct probe_opts o;
    struct fb_err err = {0};
    const char *bad[][2] = {
        {"--transport udp", "--transport udp: use rdma, tcp or ofi"},
        {"--provider efa", "--provider applies to --transport ofi"},
        {"--transport tcp --op read", "--op applies to --transport ofi"},
        {"--completion counter", "--completion applies to --transport ofi"},
        {"--transport ofi --op send", "use write or read"},
        {"--transport ofi --latency --completion counter", "drop --completion counter"},
        {"--pattern mesh", "--pattern mesh"},
        {"-n 10 -D 1", "count messages or time"},
        {"--latency --pattern ring", "--latency"},
        {"--latency -b", "drop -b"},
        {"--use-cuda --transport tcp", "--use-cuda applies to --transport rdma or ofi"},
        {"--cuda-device 1", "--cuda-device needs --use-cuda"},
        {"-Q 100 -t 64", "-t 64 is too shallow"},
        {"--mtu 1500", "--mtu 1500"},
        {"-a -s 4K", "drop -s or -a"},
        {"-q 65", "-q"},
        {"-s 2G", "limited to 1G"},
        {"node2", "unexpected argument 'node2'"},
        {"--threshold 1.5", "threshold"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK_INT(parse(&o, bad[i][0], &err), FB_ERR_USAGE);
        CHECK_CONTAINS(err.msg, bad[i][1]);
        CHECK(strchr(err.msg, '\n') == NULL);
    }
}

static void test_provider_must_be_one_fi_provider_lets_load(void)
{
    struct fb_err err = {0};
    const char *agree[][2] = {
        {"efa", "efa"},          {"tcp", NULL},           {NULL, "efa"},
        {"tcp", ""},             {"verbs;ofi_rxm", "verbs"}, {"tcp", "shm,tcp"},
        {"efa", "^shm,tcp"},     {"tcp;ofi_rxm", "tcp,ofi_rxm"},
    };
    for (size_t i = 0; i < sizeof agree / sizeof agree[0]; i++)
        CHECK_INT(probe_ofi_provider_agrees(agree[i][0], agree[i][1], &err), FB_OK);
    const char *clash[][2] = {
        {"tcp", "efa"}, {"efa", "^efa"}, {"verbs;ofi_rxm", "ofi_rxm"}, {"tc", "tcp"},
        {"tcp", "tcpx"}, {"shm", "^tcp,shm"},
    };
    for (size_t i = 0; i < sizeof clash / sizeof clash[0]; i++) {
        err = (struct fb_err){0};
        CHECK_INT(probe_ofi_provider_agrees(clash[i][0], clash[i][1], &err), FB_ERR_USAGE);
        CHECK_CONTAINS(err.msg, "unset FI_PROVIDER");
    }
    err = (struct fb_err){0};
    probe_ofi_provider_agrees("verbs;ofi_rxm", "efa", &err);
    CHECK_STR(err.msg, "--provider verbs;ofi_rxm disagrees with FI_PROVIDER=efa, which keeps "
              "libfabric from loading verbs; unset FI_PROVIDER or make the two name the same "
              "provider");
}

static void test_option_hash_sees_values_not_spelling(void)
{
    static struct probe_opts a, b;
    struct fb_err err = {0};
    parse(&a, "-s 64K -q 4", &err);
    parse(&b, "--size=65536 --qps 4", &err);
    CHECK(probe_opts_hash(&a) == probe_opts_hash(&b));
    parse(&b, "--size=65536 --qps 2", &err);
    CHECK(probe_opts_hash(&a) != probe_opts_hash(&b));
}

static void test_slots_fit_the_largest_message(void)
{
    static struct probe_opts o;
    struct fb_err err = {0};
    parse(&o, "-a -q 4", &err);
    CHECK_INT(probe_slot_len(&o), 4ULL * (8 << 20));
    parse(&o, "--latency", &err);
    CHECK_INT(probe_slot_len(&o), 4);
    parse(&o, "--transport tcp -s 4K -P 2", &err);
    CHECK_INT(probe_slot_len(&o), 256 << 10);
}

int main(void)
{
    RUN(test_local_rank_takes_the_nth_hca_in_name_order);
    RUN(test_named_hcas_by_local_rank_or_shared);
    RUN(test_missing_hca_lists_the_present_ones);
    RUN(test_more_ranks_than_hcas);
    RUN(test_sysfs_facts_from_a_recorded_tree);
    RUN(test_default_route_interface);
    RUN(test_option_defaults_follow_the_mode);
    RUN(test_option_conflicts_are_usage_errors);
    RUN(test_provider_must_be_one_fi_provider_lets_load);
    RUN(test_option_hash_sees_values_not_spelling);
    RUN(test_slots_fit_the_largest_message);
    return fbt_done();
}
