/* fabric-doctor's AWS EFA rules (efa.h) and the efa and efa-provider node
 * checks over fake trees: which devices are EFA, instance families, the
 * NCCL and libfabric settings, where the OFI plugin is found, and each
 * finding's verdict, culprit and fix. */
#include "doctor/efa.h"
#include "doctor/node.h"

#include "check.h"
#include "test_doctor_tree.h"

static struct fb_node_ctx ctx;
static struct fb_check c;

#define EXPECT(want, text)                                       \
    do {                                                         \
        CHECK_STR(fb_verdict_name(c.verdict), want);             \
        CHECK_CONTAINS(c.evidence, text);                        \
    } while (0)

/* ---- the rules ---- */

static void instance_family_from_product_name(void)
{
    char f[32];
    CHECK(fb_efa_instance_family("p5.48xlarge", f, sizeof f));
    CHECK_STR(f, "p5");
    CHECK(fb_efa_instance_family("p4de.24xlarge", f, sizeof f));
    CHECK_STR(f, "p4de");
    CHECK(fb_efa_instance_family("trn1n.32xlarge", f, sizeof f));
    CHECK_STR(f, "trn1n");
    CHECK(fb_efa_instance_family("p6-b200.48xlarge", f, sizeof f));
    CHECK_STR(f, "p6-b200");
    CHECK(!fb_efa_instance_family("Standard PC (Q35 + ICH9, 2009)", f, sizeof f));
    CHECK_STR(f, "");
    CHECK(!fb_efa_instance_family("p5", f, sizeof f));
    CHECK(!fb_efa_instance_family("p5.", f, sizeof f));
    CHECK(!fb_efa_instance_family(".48xlarge", f, sizeof f));
    CHECK(!fb_efa_instance_family("P5.48XLARGE", f, sizeof f));
    CHECK(!fb_efa_instance_family(NULL, f, sizeof f));
    char tiny[3];
    CHECK(!fb_efa_instance_family("p4de.24xlarge", tiny, sizeof tiny));
}

static void rdma_families_are_a_short_table(void)
{
    CHECK(fb_efa_family_has_rdma("p5"));
    CHECK(fb_efa_family_has_rdma("p5en"));
    CHECK(fb_efa_family_has_rdma("p4d"));
    CHECK(fb_efa_family_has_rdma("trn2"));
    CHECK(!fb_efa_family_has_rdma("p3dn")); /* EFA, but no RDMA read/write */
    CHECK(!fb_efa_family_has_rdma("g5"));
    CHECK(!fb_efa_family_has_rdma("p5e.48xlarge"));
    char list[256];
    fb_efa_rdma_families(list, sizeof list);
    CHECK_STR(list, "p4d, p4de, p5, p5e, p5en, trn1, trn1n, trn2");
}

static void provider_and_flags(void)
{
    CHECK(fb_efa_fi_provider_ok(NULL));
    CHECK(fb_efa_fi_provider_ok(""));
    CHECK(fb_efa_fi_provider_ok("efa"));
    CHECK(fb_efa_fi_provider_ok("EFA"));
    CHECK(!fb_efa_fi_provider_ok("tcp"));
    CHECK(!fb_efa_fi_provider_ok("efa,tcp"));
    CHECK(!fb_efa_fi_provider_ok("^efa"));
    CHECK(fb_efa_flag_on("1"));
    CHECK(fb_efa_flag_on("yes"));
    CHECK(fb_efa_flag_on("TRUE"));
    CHECK(!fb_efa_flag_on("0"));
    CHECK(!fb_efa_flag_on(""));
    CHECK(!fb_efa_flag_on(NULL));
    CHECK(!fb_efa_flag_on("2"));
}

static void nccl_net_names(void)
{
    CHECK_INT(fb_efa_nccl_net_kind(NULL), FB_EFA_NET_UNSET);
    CHECK_INT(fb_efa_nccl_net_kind(""), FB_EFA_NET_UNSET);
    CHECK_INT(fb_efa_nccl_net_kind("AWS Libfabric"), FB_EFA_NET_OFI);
    CHECK_INT(fb_efa_nccl_net_kind("aws libfabric"), FB_EFA_NET_OFI);
    CHECK_INT(fb_efa_nccl_net_kind("Libfabric"), FB_EFA_NET_OFI);
    CHECK_INT(fb_efa_nccl_net_kind("OFI"), FB_EFA_NET_OFI);
    CHECK_INT(fb_efa_nccl_net_kind("Socket"), FB_EFA_NET_OTHER);
    CHECK_INT(fb_efa_nccl_net_kind("IB"), FB_EFA_NET_OTHER);
    CHECK_INT(fb_efa_nccl_net_kind("AWS"), FB_EFA_NET_OTHER);
}

static void nccl_proto_and_simple(void)
{
    CHECK(!fb_efa_proto_excludes_simple(NULL));
    CHECK(!fb_efa_proto_excludes_simple(""));
    CHECK(!fb_efa_proto_excludes_simple("simple"));
    CHECK(!fb_efa_proto_excludes_simple("Simple"));
    CHECK(!fb_efa_proto_excludes_simple("LL, Simple"));
    CHECK(!fb_efa_proto_excludes_simple("^LL128"));
    CHECK(!fb_efa_proto_excludes_simple("^LL,LL128"));
    CHECK(fb_efa_proto_excludes_simple("LL128"));
    CHECK(fb_efa_proto_excludes_simple("LL,LL128"));
    CHECK(fb_efa_proto_excludes_simple("^Simple"));
    CHECK(fb_efa_proto_excludes_simple(" ^ll,simple"));
    /* A word that only starts like Simple is not Simple. */
    CHECK(fb_efa_proto_excludes_simple("Simpler"));
}

static void plugin_names_from_nccl_net_plugin(void)
{
    char f[256];
    CHECK_INT(fb_efa_plugin_wanted(NULL, f, sizeof f), FB_EFA_PLUGIN_DEFAULT);
    CHECK_STR(f, "libnccl-net.so");
    CHECK_INT(fb_efa_plugin_wanted("", f, sizeof f), FB_EFA_PLUGIN_DEFAULT);
    CHECK_INT(fb_efa_plugin_wanted("ofi", f, sizeof f), FB_EFA_PLUGIN_FILE);
    CHECK_STR(f, "libnccl-net-ofi.so");
    CHECK_INT(fb_efa_plugin_wanted("aws-ofi", f, sizeof f), FB_EFA_PLUGIN_FILE);
    CHECK_STR(f, "libnccl-net-aws-ofi.so");
    CHECK_INT(fb_efa_plugin_wanted("libnccl-net-ofi.so", f, sizeof f), FB_EFA_PLUGIN_FILE);
    CHECK_STR(f, "libnccl-net-ofi.so");
    CHECK_INT(fb_efa_plugin_wanted("/opt/x/libnccl-net.so", f, sizeof f), FB_EFA_PLUGIN_PATH);
    CHECK_STR(f, "/opt/x/libnccl-net.so");
    CHECK_INT(fb_efa_plugin_wanted("none", f, sizeof f), FB_EFA_PLUGIN_NONE);
    CHECK_INT(fb_efa_plugin_wanted("spcx", f, sizeof f), FB_EFA_PLUGIN_FILE);
    CHECK_STR(f, "libnccl-net-spcx.so");
    CHECK(!fb_efa_plugin_is_ofi(f));
    CHECK(fb_efa_plugin_is_ofi("/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so"));
    CHECK(fb_efa_plugin_is_ofi("libnccl-net.so"));
    CHECK(!fb_efa_plugin_is_ofi("libnccl-net.so.1"));
    CHECK_STR(fb_efa_plugin_name(0), "libnccl-net.so");
    CHECK(fb_efa_plugin_name(3) == NULL);
}

/* ---- devices ---- */

/* An EFA device as sysfs shows it: its driver link and node type. */
static void efa_dev(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "/sys/class/infiniband/%s/device/driver", name);
    put_link(path, "../../../../bus/pci/drivers/efa");
    snprintf(path, sizeof path, "/sys/class/infiniband/%s/node_type", name);
    put(path, "7: unspecified\n");
    snprintf(path, sizeof path, "/sys/class/infiniband/%s/ports/1/state", name);
    put(path, "4: ACTIVE\n");
}

static void scan_tells_efa_from_other_rdma(void)
{
    tree_new();
    struct fb_efa_devices d;
    struct fb_err err = {FB_OK, ""};
    CHECK_INT(fb_efa_scan(tree_root, &d, &err), FB_OK);
    CHECK_INT(d.n, 0);
    efa_dev("rdmap32s27");
    efa_dev("rdmap16s27");
    put_link("/sys/class/infiniband/mlx5_0/device/driver", "../../../../bus/pci/drivers/mlx5_core");
    put("/sys/class/infiniband/mlx5_0/node_type", "1: CA\n");
    /* A copied tree without links: the node type tells, so does efa_N. */
    put("/sys/class/infiniband/rdmap48s27/node_type", "7: unspecified\n");
    put_dir("/sys/class/infiniband/efa_3");
    put("/sys/class/infiniband/mlx5_1/node_type", "1: CA\n");
    /* A driver link naming another driver settles it, whatever the type. */
    put_link("/sys/class/infiniband/other_0/device/driver", "../../../../bus/pci/drivers/other");
    put("/sys/class/infiniband/other_0/node_type", "7: unspecified\n");
    CHECK_INT(fb_efa_scan(tree_root, &d, &err), FB_OK);
    CHECK_INT(d.n, 4);
    if (d.n == 4) {
        CHECK_STR(d.name[0], "efa_3");
        CHECK_STR(d.name[1], "rdmap16s27");
        CHECK_STR(d.name[2], "rdmap32s27");
        CHECK_STR(d.name[3], "rdmap48s27");
    }
}

/* ---- the efa check ---- */

/* A p5 pod with two EFA devices, the plugin in LD_LIBRARY_PATH and the
 * settings the OFI plugin wants. */
static void efa_node(void)
{
    tree_new();
    fb_node_ctx_init(&ctx, tree_root);
    efa_dev("rdmap16s27");
    efa_dev("rdmap32s27");
    put("/sys/devices/virtual/dmi/id/product_name", "p5.48xlarge\n");
    put("/opt/amazon/ofi-nccl/lib/libnccl-net.so", "");
    ctx.env.ld_library_path = "/usr/local/cuda/lib64:/opt/amazon/ofi-nccl/lib";
    ctx.env.fi_provider = "efa";
    ctx.env.efa_device_rdma = "1";
}

static void run_efa(void)
{
    fb_check_init(&c, "efa");
    fb_node_check_efa(&ctx, &c);
}

static void efa_healthy(void)
{
    efa_node();
    run_efa();
    EXPECT("ok", "2 EFA devices (rdmap16s27, rdmap32s27)");
    CHECK_CONTAINS(c.evidence, "plugin /opt/amazon/ofi-nccl/lib/libnccl-net.so");
    CHECK_CONTAINS(c.evidence, "instance p5.48xlarge (EFA with RDMA), FI_EFA_USE_DEVICE_RDMA=1");
    CHECK_STR(c.fix, "");
    CHECK_INT(c.nculprits, 0);
    /* The settings the plugin accepts as they are. */
    ctx.env.fi_provider = NULL;
    ctx.env.nccl_net = "AWS Libfabric";
    ctx.env.nccl_proto = "simple";
    run_efa();
    EXPECT("ok", "FI_PROVIDER unset");
}

static void efa_skips_without_devices(void)
{
    tree_new();
    fb_node_ctx_init(&ctx, tree_root);
    put("/sys/class/infiniband/mlx5_0/node_type", "1: CA\n");
    run_efa();
    EXPECT("skip", "no EFA devices: not an EFA node");
    CHECK(strstr(c.evidence, "vpc.amazonaws.com/efa") == NULL);
    /* A p5 that shows none: the pod did not ask for them. */
    put("/sys/devices/virtual/dmi/id/product_name", "p5.48xlarge\n");
    run_efa();
    EXPECT("skip", "but p5.48xlarge has EFA: in a pod, request vpc.amazonaws.com/efa");
}

static void efa_fi_provider_fails(void)
{
    efa_node();
    ctx.env.fi_provider = "tcp";
    run_efa();
    EXPECT("fail", "FI_PROVIDER=tcp keeps libfabric off EFA");
    CHECK(fb_check_has_culprit(&c, "FI_PROVIDER"));
    CHECK_CONTAINS(c.fix, "FI_PROVIDER=efa");
}

static void efa_nccl_net_fails(void)
{
    efa_node();
    ctx.env.nccl_net = "Socket";
    run_efa();
    EXPECT("fail", "NCCL_NET=Socket is not the OFI plugin's network");
    CHECK(fb_check_has_culprit(&c, "NCCL_NET"));
    CHECK_CONTAINS(c.fix, "unset NCCL_NET");
    ctx.env.nccl_net = "IB";
    run_efa();
    EXPECT("fail", "NCCL_NET=IB");
}

static void efa_device_rdma_warns_on_rdma_families(void)
{
    efa_node();
    ctx.env.efa_device_rdma = NULL;
    run_efa();
    EXPECT("warn", "FI_EFA_USE_DEVICE_RDMA unset on p5.48xlarge, whose EFA does RDMA");
    CHECK(fb_check_has_culprit(&c, "FI_EFA_USE_DEVICE_RDMA"));
    CHECK_CONTAINS(c.fix, "FI_EFA_USE_DEVICE_RDMA=1");
    ctx.env.efa_device_rdma = "";
    run_efa();
    EXPECT("warn", "FI_EFA_USE_DEVICE_RDMA unset on p5.48xlarge");
    ctx.env.efa_device_rdma = "0";
    run_efa();
    EXPECT("warn", "FI_EFA_USE_DEVICE_RDMA is 0 on p5.48xlarge");
    /* A family outside the table is not judged; an unknown machine neither. */
    put("/sys/devices/virtual/dmi/id/product_name", "g5.48xlarge\n");
    run_efa();
    EXPECT("ok", "instance g5.48xlarge: FI_EFA_USE_DEVICE_RDMA not judged");
    put("/sys/devices/virtual/dmi/id/product_name", "Standard PC (Q35 + ICH9, 2009)\n");
    run_efa();
    EXPECT("ok", "instance unknown: FI_EFA_USE_DEVICE_RDMA not judged");
}

static void efa_proto_warns_only_without_simple(void)
{
    efa_node();
    ctx.env.nccl_proto = "LL,LL128";
    run_efa();
    EXPECT("warn", "NCCL_PROTO=LL,LL128 leaves out Simple");
    CHECK(fb_check_has_culprit(&c, "NCCL_PROTO"));
    ctx.env.nccl_proto = "^LL128";
    run_efa();
    EXPECT("ok", "2 EFA devices");
}

static void efa_plugin_missing_fails(void)
{
    efa_node();
    char path[1024];
    snprintf(path, sizeof path, "%s/opt/amazon/ofi-nccl/lib/libnccl-net.so", tree_root);
    CHECK_INT(unlink(path), 0);
    run_efa();
    EXPECT("fail", "no NCCL OFI plugin: libnccl-net.so is in no LD_LIBRARY_PATH");
    CHECK(fb_check_has_culprit(&c, "libnccl-net.so"));
    CHECK_CONTAINS(c.fix, "install aws-ofi-nccl");
}

static void efa_plugin_outside_the_loader_path_warns(void)
{
    efa_node();
    ctx.env.ld_library_path = "/usr/local/cuda/lib64";
    run_efa();
    EXPECT("warn", "/opt/amazon/ofi-nccl/lib/libnccl-net.so is in /opt/amazon/ofi-nccl/lib, "
                   "which neither LD_LIBRARY_PATH nor ld.so.conf lists");
    CHECK(fb_check_has_culprit(&c, "/opt/amazon/ofi-nccl/lib/libnccl-net.so"));
    CHECK_CONTAINS(c.fix, "export LD_LIBRARY_PATH=/opt/amazon/ofi-nccl/lib:$LD_LIBRARY_PATH");
    /* The loader's cache lists it: found. */
    put("/etc/ld.so.conf.d/aws-ofi-nccl.conf", "# aws-ofi-nccl\n/opt/amazon/ofi-nccl/lib/\n");
    run_efa();
    EXPECT("ok", "plugin /opt/amazon/ofi-nccl/lib/libnccl-net.so");
    /* A conf file of another name is not read by ldconfig's include. */
    char path[1024];
    snprintf(path, sizeof path, "%s/etc/ld.so.conf.d/aws-ofi-nccl.conf", tree_root);
    CHECK_INT(unlink(path), 0);
    put("/etc/ld.so.conf.d/aws-ofi-nccl.conf.bak", "/opt/amazon/ofi-nccl/lib\n");
    run_efa();
    EXPECT("warn", "which neither LD_LIBRARY_PATH nor ld.so.conf lists");
}

static void efa_plugin_named_by_nccl_net_plugin(void)
{
    efa_node();
    char path[1024];
    snprintf(path, sizeof path, "%s/opt/amazon/ofi-nccl/lib/libnccl-net.so", tree_root);
    CHECK_INT(unlink(path), 0);
    put("/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so", "");
    /* Unset: NCCL looks for libnccl-net.so only. */
    run_efa();
    EXPECT("warn", "no libnccl-net.so, only /opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so");
    CHECK_CONTAINS(c.fix, "NCCL_NET_PLUGIN=ofi");
    ctx.env.nccl_net_plugin = "ofi";
    run_efa();
    EXPECT("ok", "plugin /opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so (NCCL_NET_PLUGIN)");
    ctx.env.nccl_net_plugin = "/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so";
    run_efa();
    EXPECT("ok", "plugin /opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so (NCCL_NET_PLUGIN)");
    ctx.env.nccl_net_plugin = "/opt/nope/libnccl-net-ofi.so";
    run_efa();
    EXPECT("fail", "NCCL_NET_PLUGIN=/opt/nope/libnccl-net-ofi.so: no such file");
    ctx.env.nccl_net_plugin = "spcx";
    run_efa();
    EXPECT("fail", "NCCL_NET_PLUGIN=spcx loads libnccl-net-spcx.so, not the OFI plugin");
    CHECK(fb_check_has_culprit(&c, "NCCL_NET_PLUGIN"));
    ctx.env.nccl_net_plugin = "none";
    run_efa();
    EXPECT("fail", "NCCL_NET_PLUGIN=none: NCCL loads no network plugin");
}

static void efa_keeps_every_finding_worst_first(void)
{
    efa_node();
    ctx.env.nccl_proto = "LL128";
    ctx.env.fi_provider = "tcp";
    ctx.env.nccl_net = "Socket";
    run_efa();
    CHECK_STR(fb_verdict_name(c.verdict), "fail");
    CHECK(fb_starts_with(c.evidence, "FI_PROVIDER=tcp"));
    const char *net = strstr(c.evidence, "NCCL_NET=Socket");
    const char *proto = strstr(c.evidence, "NCCL_PROTO=LL128");
    CHECK(net != NULL && proto != NULL && net < proto);
    CHECK_INT(c.nculprits, 3);
    CHECK_CONTAINS(c.fix, "FI_PROVIDER=efa");
    CHECK_CONTAINS(c.fix, "keep Simple");
    CHECK(strchr(c.evidence, '\n') == NULL);
}

static void efa_environment_from_block(void)
{
    static const char block[] = "FI_PROVIDER=efa\0FI_EFA_USE_DEVICE_RDMA=1\0NCCL_NET=OFI\0"
                                "NCCL_NET_PLUGIN=ofi\0NCCL_PROTO=simple\0LD_LIBRARY_PATH=/a:/b\0"
                                "NCCL_NET_GDR_LEVEL=SYS\0";
    struct fb_node_env env;
    fb_node_env_from_block(block, sizeof block - 1, &env);
    CHECK_STR(env.fi_provider, "efa");
    CHECK_STR(env.efa_device_rdma, "1");
    CHECK_STR(env.nccl_net, "OFI");
    CHECK_STR(env.nccl_net_plugin, "ofi");
    CHECK_STR(env.nccl_proto, "simple");
    CHECK_STR(env.ld_library_path, "/a:/b");
}

/* ---- efa-provider ---- */

static void provider_skips_on_a_tree(void)
{
    efa_node();
    fb_check_init(&c, "efa-provider");
    fb_node_check_efa_provider(&ctx, &c);
#ifdef HAVE_OFI
    EXPECT("skip", "asks this host's libfabric, not a --root tree");
#else
    EXPECT("skip", "built without libfabric");
#endif
    CHECK(fb_node_root_is_live(&ctx) == false);
    struct fb_node_ctx live;
    fb_node_ctx_init(&live, "/");
    CHECK(fb_node_root_is_live(&live));
    fb_node_ctx_init(&live, NULL);
    CHECK(fb_node_root_is_live(&live));
}

int main(void)
{
    RUN(instance_family_from_product_name);
    RUN(rdma_families_are_a_short_table);
    RUN(provider_and_flags);
    RUN(nccl_net_names);
    RUN(nccl_proto_and_simple);
    RUN(plugin_names_from_nccl_net_plugin);
    RUN(scan_tells_efa_from_other_rdma);
    RUN(efa_healthy);
    RUN(efa_skips_without_devices);
    RUN(efa_fi_provider_fails);
    RUN(efa_nccl_net_fails);
    RUN(efa_device_rdma_warns_on_rdma_families);
    RUN(efa_proto_warns_only_without_simple);
    RUN(efa_plugin_missing_fails);
    RUN(efa_plugin_outside_the_loader_path_warns);
    RUN(efa_plugin_named_by_nccl_net_plugin);
    RUN(efa_keeps_every_finding_worst_first);
    RUN(efa_environment_from_block);
    RUN(provider_skips_on_a_tree);
    tree_done();
    return fbt_done();
}
