/* fabric-doctor cluster checks. Each case starts from a healthy saved
 * cluster (tests/fixtures/doctor/cluster) and breaks one thing, then asserts
 * the exact verdict and that the message and culprits name the broken
 * object. Also the kubectl lists: reading, saving, and running kubectl. */
#include "core/jsonio.h"
#include "doctor/cluster.h"
#include "doctor/kube.h"

#include "check.h"
#include "test_doctor_tree.h"

#include "cluster_fixture.h"

static void load(const char *name)
{
    load_lists(name, FB_KUBE_NETWORKS | FB_KUBE_NODES | FB_KUBE_PODS);
}

static json_object *item(json_object *list, size_t i)
{
    return json_object_array_get_idx(fb_kube_items(list), i);
}

static void remove_named(json_object *list, const char *name)
{
    json_object *items = fb_kube_items(list);
    for (size_t i = 0; i < json_object_array_length(items); i++)
        if (strcmp(fb_kube_name(json_object_array_get_idx(items, i)), name) == 0) {
            json_object_array_del_idx(items, i, 1);
            return;
        }
}

static json_object *path(json_object *obj, const char *a, const char *b, const char *d)
{
    const char *const keys[] = {a, b, d, NULL};
    return fb_kube_path(obj, keys);
}

static void set_annotation(json_object *obj, const char *key, const char *value)
{
    json_object *ann = path(obj, "metadata", "annotations", NULL);
    if (value)
        json_object_object_add(ann, key, json_object_new_string(value));
    else
        json_object_object_del(ann, key);
}

static void set_condition(json_object *net, const char *type, const char *status)
{
    json_object *conds = path(net, "status", "conditions", NULL);
    for (size_t i = 0; i < json_object_array_length(conds); i++) {
        json_object *cond = json_object_array_get_idx(conds, i);
        if (strcmp(fb_json_get_string(cond, "type"), type) == 0)
            json_object_object_add(cond, "status", json_object_new_string(status));
    }
}

static void set_name(json_object *obj, const char *name)
{
    json_object_object_add(path(obj, "metadata", NULL, NULL), "name", json_object_new_string(name));
}

/* ---- gpu-nic-networks ---- */

static void networks_healthy(void)
{
    load("tcpxo-healthy");
    run_check(fb_cluster_check_gpu_nic_networks, "gpu-nic-networks");
    EXPECT("ok", "8 gpu-nic Networks Ready and ParamsReady");
    CHECK_INT(c.nculprits, 0);
}

static void networks_params_not_ready(void)
{
    load("tcpxo-healthy");
    set_condition(named(data.networks, "gpu-nic-3"), "ParamsReady", "False");
    run_check(fb_cluster_check_gpu_nic_networks, "gpu-nic-networks");
    EXPECT("fail", "7 of the 8 gpu-nic Networks");
    CHECK_CONTAINS(c.evidence, "gpu-nic-3 ParamsReady=False");
    CHECK(fb_check_has_culprit(&c, "gpu-nic-3"));
    CHECK(!fb_check_has_culprit(&c, "gpu-nic-2"));
    CHECK_CONTAINS(c.fix, "GKENetworkParamSet");
}

static void networks_not_ready(void)
{
    load("tcpxo-healthy");
    set_condition(named(data.networks, "gpu-nic-0"), "Ready", "False");
    run_check(fb_cluster_check_gpu_nic_networks, "gpu-nic-networks");
    EXPECT("fail", "gpu-nic-0 Ready=False");
}

static void networks_leftover_not_ready_is_fine(void)
{
    load("tcpxo-healthy");
    json_object *extra = NULL;
    json_object_deep_copy(named(data.networks, "gpu-nic-7"), &extra, NULL);
    set_name(extra, "old-pool-gpu-nic-8");
    set_condition(extra, "Ready", "False");
    json_object_array_add(fb_kube_items(data.networks), extra);
    run_check(fb_cluster_check_gpu_nic_networks, "gpu-nic-networks");
    EXPECT("ok", "not ready, beyond the eight needed: old-pool-gpu-nic-8");
}

static void networks_named_without_gpu_nic(void)
{
    load("tcpxo-healthy");
    for (int i = 0; i < 8; i++) {
        char old[32], fresh_name[32];
        snprintf(old, sizeof old, "gpu-nic-%d", i);
        snprintf(fresh_name, sizeof fresh_name, "vpc%d", i + 1);
        set_name(named(data.networks, old), fresh_name);
    }
    run_check(fb_cluster_check_gpu_nic_networks, "gpu-nic-networks");
    EXPECT("fail", "0 of the 8");
    CHECK_CONTAINS(c.evidence, "without gpu-nic in the name: vpc1, vpc2");
    CHECK(fb_check_has_culprit(&c, "vpc8"));
    CHECK_CONTAINS(c.fix, "must contain gpu-nic");
}

static void networks_too_few(void)
{
    load("tcpxo-healthy");
    remove_named(data.networks, "gpu-nic-6");
    remove_named(data.networks, "gpu-nic-7");
    run_check(fb_cluster_check_gpu_nic_networks, "gpu-nic-networks");
    EXPECT("fail", "6 of the 8");
    json_object_array_del_idx(fb_kube_items(data.networks), 0,
                              json_object_array_length(fb_kube_items(data.networks)));
    run_check(fb_cluster_check_gpu_nic_networks, "gpu-nic-networks");
    EXPECT("fail", "0 of the 8"); /* a3 nodes exist: not skipped */
}

static void networks_skip_elsewhere(void)
{
    load("rdma-healthy");
    run_check(fb_cluster_check_gpu_nic_networks, "gpu-nic-networks");
    EXPECT("skip", "not a GKE TCPXO cluster");
}

/* ---- nic-info ---- */

#define NODE_B "gke-a3-pool-b"
#define NIC_INFO "networking.gke.io/nic-info"
#define NORTH "networking.gke.io/north-interfaces"

static void nic_info_set(const char *node, const char *text)
{
    set_annotation(named(data.nodes, node), NIC_INFO, text);
}

/* eth0..eth8 as GKE writes them, with `last` as the final name. */
static void nic_info_names(const char *node, int n, const char *last)
{
    char text[2048];
    size_t used = 0;
    used += (size_t)snprintf(text, sizeof text, "[");
    for (int k = 0; k < n; k++)
        used += (size_t)snprintf(text + used, sizeof text - used,
                                 "%s{\"birthIP\":\"192.168.%d.11\",\"birthName\":\"%s%d\","
                                 "\"pciAddress\":\"0000:0%d:00.0\"}", k ? "," : "", k,
                                 k == n - 1 && last ? last : "eth", k == n - 1 && last ? 0 : k, k);
    snprintf(text + used, sizeof text - used, "]");
    if (last) {
        /* "eth90" would read oddly: the last entry's name is `last` exactly. */
        char *p = strstr(text, last);
        if (p && p[strlen(last)] == '0')
            memmove(p + strlen(last), p + strlen(last) + 1, strlen(p + strlen(last)));
    }
    nic_info_set(node, text);
}

static void nic_info_healthy(void)
{
    load("tcpxo-healthy");
    run_check(fb_cluster_check_nic_info, "nic-info");
    EXPECT("ok", "2 of 2 a3-megagpu-8g nodes map eth1..eth8");
}

static void nic_info_beyond_eth8(void)
{
    load("tcpxo-healthy");
    nic_info_names(NODE_B, 10, "eth9");
    run_check(fb_cluster_check_nic_info, "nic-info");
    EXPECT("fail", NODE_B ": eth9 is beyond eth0..eth8");
    CHECK(fb_check_has_culprit(&c, NODE_B));
    CHECK(!fb_check_has_culprit(&c, "gke-a3-pool-a"));
}

static void nic_info_missing_eth8(void)
{
    load("tcpxo-healthy");
    nic_info_names(NODE_B, 8, NULL);
    run_check(fb_cluster_check_nic_info, "nic-info");
    EXPECT("fail", "7 of eth1..eth8 mapped, missing eth8");
}

static void nic_info_uniform_gvnic(void)
{
    load("tcpxo-broken"); /* eth8 of node b joins to the gVNIC Network */
    run_check(fb_cluster_check_nic_info, "nic-info");
    EXPECT("fail", "eth8 (192.168.8.11) is on Network 'gvnic-1'");
    CHECK(fb_check_has_culprit(&c, NODE_B));
}

static void nic_info_unparseable(void)
{
    load("tcpxo-healthy");
    nic_info_set(NODE_B, "[{\"birthName\": \"eth0\",");
    run_check(fb_cluster_check_nic_info, "nic-info");
    EXPECT("fail", NODE_B ": networking.gke.io/nic-info annotation unparseable");
    CHECK(fb_check_has_culprit(&c, NODE_B));
    nic_info_set(NODE_B, "{\"eth1\": \"0000:06:00.0\"}");
    run_check(fb_cluster_check_nic_info, "nic-info");
    EXPECT("fail", "not a JSON array");
    nic_info_set(NODE_B, "[{\"birthIP\": \"10.0.0.1\"}]");
    run_check(fb_cluster_check_nic_info, "nic-info");
    EXPECT("fail", "entry 0 has no birthName");
}

static void nic_info_absent_is_unverified(void)
{
    load("tcpxo-unverified");
    run_check(fb_cluster_check_nic_info, "nic-info");
    EXPECT("warn", "1 of 2 a3-megagpu-8g nodes verified; unverified: " NODE_B);
    CHECK(fb_check_has_culprit(&c, NODE_B));
    nic_info_set("gke-a3-pool-a", NULL);
    run_check(fb_cluster_check_nic_info, "nic-info");
    EXPECT("warn", "0 of 2"); /* never a pass */
}

static void nic_info_without_north(void)
{
    load("tcpxo-healthy");
    set_annotation(named(data.nodes, NODE_B), NORTH, NULL);
    run_check(fb_cluster_check_nic_info, "nic-info");
    EXPECT("warn", "no networking.gke.io/north-interfaces annotation");
    set_annotation(named(data.nodes, NODE_B), NORTH, "not json");
    run_check(fb_cluster_check_nic_info, "nic-info");
    EXPECT("fail", "north-interfaces annotation unparseable");
}

static void nic_info_skip_elsewhere(void)
{
    load("rdma-healthy");
    run_check(fb_cluster_check_nic_info, "nic-info");
    EXPECT("skip", "no a3-megagpu-8g node");
}

/* ---- pod-fabric ---- */

static json_object *first_container(json_object *pod, const char *which)
{
    return json_object_array_get_idx(path(pod, "spec", which, NULL), 0);
}

static void pods_tcpxo_healthy(void)
{
    load("tcpxo-healthy");
    run_check(fb_cluster_check_pod_fabric, "pod-fabric");
    EXPECT("ok", "2 GPU pods request their nodes' fabric");
}

static void pods_tcpxo_without_interfaces(void)
{
    load("tcpxo-healthy");
    set_annotation(named(data.pods, "nccl-test-1"), "networking.gke.io/interfaces", NULL);
    run_check(fb_cluster_check_pod_fabric, "pod-fabric");
    EXPECT("fail", "default/nccl-test-1: no networking.gke.io/interfaces annotation");
    CHECK(fb_check_has_culprit(&c, "default/nccl-test-1"));
    CHECK(!fb_check_has_culprit(&c, "default/nccl-test-0"));
}

static void pods_tcpxo_seven_nics(void)
{
    load("tcpxo-healthy");
    set_annotation(named(data.pods, "nccl-test-0"), "networking.gke.io/interfaces",
                   "[{\"interfaceName\":\"eth0\",\"network\":\"default\"},"
                   "{\"interfaceName\":\"eth1\",\"network\":\"gpu-nic-0\"},"
                   "{\"interfaceName\":\"eth2\",\"network\":\"gpu-nic-1\"},"
                   "{\"interfaceName\":\"eth3\",\"network\":\"gpu-nic-2\"},"
                   "{\"interfaceName\":\"eth4\",\"network\":\"gpu-nic-3\"},"
                   "{\"interfaceName\":\"eth5\",\"network\":\"gpu-nic-4\"},"
                   "{\"interfaceName\":\"eth6\",\"network\":\"gpu-nic-5\"},"
                   "{\"interfaceName\":\"eth7\",\"network\":\"gpu-nic-6\"},"
                   "{\"interfaceName\":\"eth8\",\"network\":\"gvnic-1\"}]");
    run_check(fb_cluster_check_pod_fabric, "pod-fabric");
    EXPECT("fail", "maps 7 of eth1..eth8 to gpu-nic Networks (missing eth8)");
}

static void pods_tcpxo_without_sidecar(void)
{
    load("tcpxo-healthy");
    json_object_object_del(path(named(data.pods, "nccl-test-0"), "spec", NULL, NULL),
                           "initContainers");
    run_check(fb_cluster_check_pod_fabric, "pod-fabric");
    EXPECT("fail", "default/nccl-test-0: no tcpxo-daemon sidecar");
}

static void pods_rdma_healthy(void)
{
    load("rdma-healthy");
    run_check(fb_cluster_check_pod_fabric, "pod-fabric");
    EXPECT("ok", "2 GPU pods");
}

static void pods_rdma_without_request(void)
{
    load("rdma-healthy");
    json_object *ctr = first_container(named(data.pods, "nccl-ib-1"), "containers");
    json_object_object_del(path(ctr, "resources", "limits", NULL), "rdma/hca_shared_devices_a");
    json_object_object_del(path(ctr, "resources", "requests", NULL), "rdma/hca_shared_devices_a");
    run_check(fb_cluster_check_pod_fabric, "pod-fabric");
    EXPECT("fail", "bench/nccl-ib-1: requests nvidia.com/gpu but none of "
                   "rdma/hca_shared_devices_a offered by ndh100-1");
    CHECK(fb_check_has_culprit(&c, "bench/nccl-ib-1"));
}

static void pods_rdma_without_ipc_lock(void)
{
    load("rdma-healthy");
    json_object_object_del(first_container(named(data.pods, "nccl-ib-0"), "containers"),
                           "securityContext");
    run_check(fb_cluster_check_pod_fabric, "pod-fabric");
    EXPECT("warn", "container nccl uses RDMA without IPC_LOCK");
}

static void pods_efa_partial(void)
{
    load("rdma-healthy");
    json_object *node = named(data.nodes, "ndh100-0");
    json_object *alloc = path(node, "status", "allocatable", NULL);
    json_object_object_del(alloc, "rdma/hca_shared_devices_a");
    json_object_object_add(alloc, "vpc.amazonaws.com/efa", json_object_new_string("32"));
    json_object *ctr = first_container(named(data.pods, "nccl-ib-0"), "containers");
    json_object_object_add(path(ctr, "resources", "limits", NULL), "vpc.amazonaws.com/efa",
                           json_object_new_string("4"));
    run_check(fb_cluster_check_pod_fabric, "pod-fabric");
    EXPECT("warn", "takes all 8 GPUs of ndh100-0 but only 4 of its 32 vpc.amazonaws.com/efa");
}

static void pods_without_any_fabric(void)
{
    load("no-fabric");
    run_check(fb_cluster_check_pod_fabric, "pod-fabric");
    EXPECT("warn", "no node offers a fabric resource");
    CHECK_CONTAINS(c.evidence, "TCP sockets");
}

static void pods_none_or_finished(void)
{
    load("rdma-healthy");
    for (int i = 0; i < 2; i++)
        json_object_object_add(path(item(data.pods, (size_t)i), "status", NULL, NULL), "phase",
                               json_object_new_string("Succeeded"));
    run_check(fb_cluster_check_pod_fabric, "pod-fabric");
    EXPECT("skip", "no running pod requests nvidia.com/gpu");
}

static void pods_pending_judged_against_any_node(void)
{
    load("rdma-healthy");
    json_object *pod = named(data.pods, "nccl-ib-0");
    json_object_object_del(path(pod, "spec", NULL, NULL), "nodeName");
    json_object *ctr = first_container(pod, "containers");
    json_object_object_del(path(ctr, "resources", "limits", NULL), "rdma/hca_shared_devices_a");
    json_object_object_del(path(ctr, "resources", "requests", NULL), "rdma/hca_shared_devices_a");
    run_check(fb_cluster_check_pod_fabric, "pod-fabric");
    EXPECT("fail", "offered by the GPU nodes");
}

/* ---- tcpxo-versions ---- */

static void set_image(const char *pod, const char *which, const char *image)
{
    json_object_object_add(first_container(named(data.pods, pod), which), "image",
                           json_object_new_string(image));
}

#define IMG "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/"

static void versions_healthy(void)
{
    load("tcpxo-healthy");
    run_check(fb_cluster_check_tcpxo_versions, "tcpxo-versions");
    EXPECT("ok", "a released pair");
    CHECK_CONTAINS(c.evidence, "v1.0.15");
    CHECK_CONTAINS(c.evidence, "v1.0.21");
}

static void versions_daemon_mismatch(void)
{
    load("tcpxo-broken");
    run_check(fb_cluster_check_tcpxo_versions, "tcpxo-versions");
    EXPECT("fail", "tcpxo-daemon v1.0.20 (1 pod: default/nccl-test-1) with plugin v1.0.15, which "
                   "pairs with daemon v1.0.21");
    CHECK(fb_check_has_culprit(&c, "default/nccl-test-1"));
    CHECK(!fb_check_has_culprit(&c, "default/nccl-test-0"));
}

static void versions_plugin_mismatch(void)
{
    load("tcpxo-healthy");
    set_image("nccl-tcpxo-installer-x", "initContainers", IMG "nccl-plugin-gpudirecttcpx-dev:v1.0.14");
    set_image("nccl-tcpxo-installer-y", "initContainers", IMG "nccl-plugin-gpudirecttcpx-dev:v1.0.14");
    run_check(fb_cluster_check_tcpxo_versions, "tcpxo-versions");
    EXPECT("fail", "pairs with plugin v1.0.15, but the installer runs v1.0.14");
}

static void versions_unknown_pair(void)
{
    load("tcpxo-healthy");
    set_image("nccl-tcpxo-installer-x", "initContainers", IMG "nccl-plugin-gpudirecttcpx-dev:v1.0.16");
    set_image("nccl-tcpxo-installer-y", "initContainers", IMG "nccl-plugin-gpudirecttcpx-dev:v1.0.16");
    set_image("nccl-test-0", "initContainers", IMG "tcpgpudmarxd-dev:v1.0.22");
    set_image("nccl-test-1", "initContainers", IMG "tcpgpudmarxd-dev:v1.0.22");
    run_check(fb_cluster_check_tcpxo_versions, "tcpxo-versions");
    EXPECT("warn", "plugin v1.0.16 with tcpxo-daemon v1.0.22: a pair this tool does not know");
    CHECK_CONTAINS(c.fix, "--pair v1.0.16=v1.0.22");
    struct fb_err err = {FB_OK, ""};
    CHECK_INT(fb_cluster_add_pair(&ctx, "v1.0.16=v1.0.22", &err), FB_OK);
    run_check(fb_cluster_check_tcpxo_versions, "tcpxo-versions");
    EXPECT("ok", "a released pair");
}

static void versions_without_installer(void)
{
    load("tcpxo-healthy");
    remove_named(data.pods, "nccl-tcpxo-installer-x");
    remove_named(data.pods, "nccl-tcpxo-installer-y");
    run_check(fb_cluster_check_tcpxo_versions, "tcpxo-versions");
    EXPECT("warn", "pairing unverified");
    CHECK_CONTAINS(c.fix, "-A");
}

static void versions_digest_and_rollout(void)
{
    load("tcpxo-healthy");
    set_image("nccl-test-0", "initContainers", IMG "tcpgpudmarxd-dev@sha256:0123abcd");
    set_image("nccl-test-1", "initContainers", IMG "tcpgpudmarxd-dev@sha256:0123abcd");
    run_check(fb_cluster_check_tcpxo_versions, "tcpxo-versions");
    EXPECT("warn", "without a version tag");
    load("tcpxo-healthy");
    set_image("nccl-tcpxo-installer-y", "initContainers", IMG "nccl-plugin-gpudirecttcpx-dev:v1.0.14");
    run_check(fb_cluster_check_tcpxo_versions, "tcpxo-versions");
    EXPECT("fail", "the installer runs v1.0.14"); /* the old one still pairs badly */
}

static void versions_skip_elsewhere(void)
{
    load("rdma-healthy");
    run_check(fb_cluster_check_tcpxo_versions, "tcpxo-versions");
    EXPECT("skip", "no nccl-plugin-gpudirecttcpx or tcpgpudmarxd image");
}

static void pair_option_syntax(void)
{
    struct fb_cluster_ctx x;
    fb_cluster_ctx_init(&x, &data);
    struct fb_err err = {FB_OK, ""};
    CHECK_INT(fb_cluster_add_pair(&x, "v1.0.15", &err), FB_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "PLUGIN=DAEMON");
    fb_err_clear(&err);
    CHECK_INT(fb_cluster_add_pair(&x, "=v1", &err), FB_ERR_USAGE);
    fb_err_clear(&err);
    CHECK_INT(fb_cluster_add_pair(&x, "a=b=c", &err), FB_ERR_USAGE);
}

/* ---- kubectl lists ---- */

static void from_dir_errors(void)
{
    struct fb_kube_data d;
    struct fb_err err = {FB_OK, ""};
    tree_new();
    CHECK_INT(fb_kube_from_dir(tree_root, FB_KUBE_NODES, &d, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "nodes.json");
    CHECK_CONTAINS(err.msg, "kubectl get nodes -o json");
    fb_err_clear(&err);
    put("/nodes.json", "{\"items\": [");
    CHECK_INT(fb_kube_from_dir(tree_root, FB_KUBE_NODES, &d, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "nodes.json");
    fb_err_clear(&err);
    put("/nodes.json", "[1, 2]");
    CHECK_INT(fb_kube_from_dir(tree_root, FB_KUBE_NODES, &d, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "expected a kubectl list");
    fb_err_clear(&err);
    /* A single object (kubectl get node X -o json) is a list of one. */
    put("/nodes.json", "{\"kind\": \"Node\", \"metadata\": {\"name\": \"n1\"}}");
    enum fb_status st = fb_kube_from_dir(tree_root, FB_KUBE_NODES, &d, &err);
    CHECK_INT(st, FB_OK);
    if (st == FB_OK) {
        CHECK_INT(json_object_array_length(fb_kube_items(d.nodes)), 1);
        CHECK(d.pods == NULL); /* not asked for, not read */
        fb_kube_free(&d);
    }
}

/* What a saved pods list may lack: pods of other namespaces when it holds
 * one namespace or none; kube-system's when it holds none of them. Lists
 * from kubectl (read with -A) lack nothing. */
static void pods_partial_saves(void)
{
    struct fb_kube_data d;
    struct fb_err err = {FB_OK, ""};
    char why[256];
    const struct {
        const char *pods;
        const char *ns;
        const char *why; /* NULL: not partial */
    } cases[] = {
        {"{\"items\": []}", NULL, "pods.json holds no pod at all"},
        {"{\"items\": []}", "kube-system", "pods.json holds no pod at all"},
        {"{\"items\": [{\"metadata\": {\"name\": \"a\", \"namespace\": \"bench\"}}]}", NULL,
         "pods.json holds pods of namespace bench only"},
        {"{\"items\": [{\"metadata\": {\"name\": \"a\", \"namespace\": \"bench\"}},"
         "{\"metadata\": {\"name\": \"b\", \"namespace\": \"gpu-operator\"}}]}", "kube-system",
         "pods.json holds no kube-system pod"},
        {"{\"items\": [{\"metadata\": {\"name\": \"a\", \"namespace\": \"bench\"}},"
         "{\"metadata\": {\"name\": \"b\", \"namespace\": \"gpu-operator\"}}]}", NULL, NULL},
        {"{\"items\": [{\"metadata\": {\"name\": \"a\", \"namespace\": \"kube-system\"}}]}",
         "kube-system", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tree_new();
        put("/pods.json", cases[i].pods);
        CHECK_INT(fb_kube_from_dir(tree_root, FB_KUBE_PODS, &d, &err), FB_OK);
        why[0] = '\0';
        bool partial = fb_kube_pods_partial(&d, cases[i].ns, why, sizeof why);
        CHECK_INT(partial, cases[i].why != NULL);
        if (cases[i].why)
            CHECK_STR(why, cases[i].why);
        /* The same list from kubectl: read with -A, it lacks nothing. */
        d.dir = NULL;
        CHECK(!fb_kube_pods_partial(&d, cases[i].ns, why, sizeof why));
        fb_kube_free(&d);
    }
}

/* A list a saved directory lacks reads as empty, is "unsaved", names the
 * command that saves it, and is not written back by --save; a directory
 * holding none of the lists a run needs is still an error. */
static void unsaved_lists(void)
{
    struct fb_kube_data d;
    struct fb_err err = {FB_OK, ""};
    tree_new();
    put("/pods.json", "{\"items\": []}");
    unsigned need = FB_KUBE_NETWORKS | FB_KUBE_NODES | FB_KUBE_PODS | FB_KUBE_DAEMONSETS;
    CHECK_INT(fb_kube_from_dir(tree_root, need, &d, &err), FB_OK);
    CHECK_INT(d.unsaved, FB_KUBE_NETWORKS | FB_KUBE_NODES | FB_KUBE_DAEMONSETS);
    CHECK_INT(json_object_array_length(fb_kube_items(d.nodes)), 0);
    char cmd[600], want[600];
    fb_kube_save_command(&d, FB_KUBE_NODES, cmd, sizeof cmd);
    snprintf(want, sizeof want, "kubectl get nodes -o json > %s/nodes.json", tree_root);
    CHECK_STR(cmd, want);
    struct fb_cluster_ctx x;
    fb_cluster_ctx_init(&x, &d);
    struct fb_check k;
    fb_check_init(&k, "nic-info");
    CHECK(fb_cluster_skip_unsaved(&x, fb_cluster_check_find("nic-info"), &k));
    CHECK_STR(fb_verdict_name(k.verdict), "skip");
    CHECK_CONTAINS(k.evidence, "not judged: nodes.json is not saved in");
    CHECK_CONTAINS(k.fix, want);
    fb_check_init(&k, "tcpxo-versions");
    CHECK(!fb_cluster_skip_unsaved(&x, fb_cluster_check_find("tcpxo-versions"), &k));
    char saved[1100];
    snprintf(saved, sizeof saved, "%s/saved", tree_root);
    CHECK(mkdir(saved, 0755) == 0);
    CHECK_INT(fb_kube_save(saved, &d, &err), FB_OK);
    char path[1200];
    snprintf(path, sizeof path, "%s/pods.json", saved);
    CHECK(access(path, F_OK) == 0);
    snprintf(path, sizeof path, "%s/nodes.json", saved);
    CHECK(access(path, F_OK) != 0);
    snprintf(path, sizeof path, "%s/daemonsets.json", saved);
    CHECK(access(path, F_OK) != 0);
    fb_kube_free(&d);
    tree_new();
    CHECK_INT(fb_kube_from_dir(tree_root, need, &d, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "networks.json");
}

static void save_round_trip(void)
{
    load("tcpxo-healthy");
    struct fb_err err = {FB_OK, ""};
    tree_new();
    char dir[300];
    snprintf(dir, sizeof dir, "%s/saved", tree_root);
    CHECK_INT(fb_kube_save(dir, &data, &err), FB_OK);
    struct fb_kube_data back;
    enum fb_status st = fb_kube_from_dir(dir, FB_KUBE_NETWORKS | FB_KUBE_NODES | FB_KUBE_PODS,
                                         &back, &err);
    CHECK_INT(st, FB_OK);
    if (st == FB_OK) {
        CHECK_INT(json_object_array_length(fb_kube_items(back.pods)),
                  json_object_array_length(fb_kube_items(data.pods)));
        fb_kube_free(&back);
    }
}

/* A stand-in kubectl: answers from a fixture directory and logs its
 * arguments, or misbehaves as told. */
static const char *fake_kubectl(const char *behaviour)
{
    static char script[400];
    char lists[1024];
    snprintf(lists, sizeof lists, "%s", fixture_dir("tcpxo-healthy"));
    tree_new();
    snprintf(script, sizeof script, "%s/kubectl", tree_root);
    char text[8192];
    snprintf(text, sizeof text,
             "#!/bin/sh\n"
             "echo \"$*\" >> '%s/args'\n"
             "res=; prev=; for a; do [ \"$prev\" = get ] && res=$a; prev=$a; done\n"
             "case \"%s:$res\" in\n"
             "  nocrd:networks.networking.gke.io)\n"
             "    echo 'error: the server doesn'\"'\"'t have a resource type \"networks\"' >&2; exit 1;;\n"
             "  fail:*) echo 'E1130 memcache.go:265 couldn'\"'\"'t get current server API group list' >&2;"
             " echo 'Unable to connect to the server: dial tcp 10.0.0.1:443: i/o timeout' >&2;"
             " exit 1;;\n"
             "  hang:*) sleep 30;;\n"
             "  garbage:*) echo 'not json';;\n"
             "esac\n"
             "case \"$res\" in\n"
             "  networks.networking.gke.io) cat '%s/networks.json';;\n"
             "  nodes) cat '%s/nodes.json';;\n"
             "  pods) cat '%s/pods.json';;\n"
             "esac\n",
             tree_root, behaviour, lists, lists, lists);
    put("/kubectl", text);
    chmod(script, 0755);
    return script;
}

static void kubectl_fetches_lists(void)
{
    struct fb_kubectl k = {fake_kubectl("ok"), NULL, 5};
    struct fb_kube_data d;
    struct fb_err err = {FB_OK, ""};
    enum fb_status st = fb_kube_from_kubectl(&k, FB_KUBE_NETWORKS | FB_KUBE_NODES | FB_KUBE_PODS,
                                             &d, &err);
    CHECK_INT(st, FB_OK);
    if (st == FB_OK) {
        CHECK_INT(json_object_array_length(fb_kube_items(d.nodes)), 3);
        CHECK_INT(json_object_array_length(fb_kube_items(d.networks)), 9);
        fb_kube_free(&d);
    }
    char argpath[400];
    snprintf(argpath, sizeof argpath, "%s/args", tree_root);
    FILE *f = fopen(argpath, "r");
    char args[1024] = "";
    size_t n = f ? fread(args, 1, sizeof args - 1, f) : 0;
    args[n] = '\0';
    if (f)
        fclose(f);
    CHECK_CONTAINS(args, "get pods -A -o json --request-timeout=5s");
    CHECK_CONTAINS(args, "get nodes -o json");
}

static void kubectl_without_network_crd(void)
{
    struct fb_kubectl k = {fake_kubectl("nocrd"), "lab", 5};
    struct fb_kube_data d;
    struct fb_err err = {FB_OK, ""};
    enum fb_status st = fb_kube_from_kubectl(&k, FB_KUBE_NETWORKS | FB_KUBE_NODES, &d, &err);
    CHECK_INT(st, FB_OK);
    if (st == FB_OK) {
        CHECK_INT(json_object_array_length(fb_kube_items(d.networks)), 0);
        CHECK_CONTAINS(fb_kube_note(&d, FB_KUBE_NETWORKS), "not served by this cluster");
        fb_kube_free(&d);
    }
}

static void kubectl_failures(void)
{
    struct fb_kubectl k = {fake_kubectl("fail"), NULL, 5};
    struct fb_kube_data d;
    struct fb_err err = {FB_OK, ""};
    CHECK_INT(fb_kube_from_kubectl(&k, FB_KUBE_NODES, &d, &err), FB_ERR_RUNTIME);
    CHECK_CONTAINS(err.msg, "kubectl get nodes -o json failed (exit 1): Unable to connect");
    fb_err_clear(&err);
    k.path = fake_kubectl("garbage");
    CHECK_INT(fb_kube_from_kubectl(&k, FB_KUBE_NODES, &d, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "is not JSON");
    fb_err_clear(&err);
    k.path = "/nonexistent/kubectl";
    CHECK_INT(fb_kube_from_kubectl(&k, FB_KUBE_NODES, &d, &err), FB_ERR_UNAVAIL);
    CHECK_CONTAINS(err.msg, "--from DIR");
    fb_err_clear(&err);
    k.path = "kubectl-not-installed-anywhere";
    CHECK_INT(fb_kube_from_kubectl(&k, FB_KUBE_NODES, &d, &err), FB_ERR_UNAVAIL);
    CHECK_CONTAINS(err.msg, "not found on PATH");
}

static void kubectl_hang_times_out(void)
{
    struct fb_kubectl k = {fake_kubectl("hang"), NULL, 1};
    struct fb_kube_data d;
    struct fb_err err = {FB_OK, ""};
    CHECK_INT(fb_kube_from_kubectl(&k, FB_KUBE_NODES, &d, &err), FB_ERR_TIMEOUT);
    CHECK_CONTAINS(err.msg, "did not answer within 6 s");
}

int main(void)
{
    RUN(networks_healthy);
    RUN(networks_params_not_ready);
    RUN(networks_not_ready);
    RUN(networks_leftover_not_ready_is_fine);
    RUN(networks_named_without_gpu_nic);
    RUN(networks_too_few);
    RUN(networks_skip_elsewhere);
    RUN(nic_info_healthy);
    RUN(nic_info_beyond_eth8);
    RUN(nic_info_missing_eth8);
    RUN(nic_info_uniform_gvnic);
    RUN(nic_info_unparseable);
    RUN(nic_info_absent_is_unverified);
    RUN(nic_info_without_north);
    RUN(nic_info_skip_elsewhere);
    RUN(pods_tcpxo_healthy);
    RUN(pods_tcpxo_without_interfaces);
    RUN(pods_tcpxo_seven_nics);
    RUN(pods_tcpxo_without_sidecar);
    RUN(pods_rdma_healthy);
    RUN(pods_rdma_without_request);
    RUN(pods_rdma_without_ipc_lock);
    RUN(pods_efa_partial);
    RUN(pods_without_any_fabric);
    RUN(pods_none_or_finished);
    RUN(pods_pending_judged_against_any_node);
    RUN(versions_healthy);
    RUN(versions_daemon_mismatch);
    RUN(versions_plugin_mismatch);
    RUN(versions_unknown_pair);
    RUN(versions_without_installer);
    RUN(versions_digest_and_rollout);
    RUN(versions_skip_elsewhere);
    RUN(pair_option_syntax);
    RUN(from_dir_errors);
    RUN(pods_partial_saves);
    RUN(unsaved_lists);
    RUN(save_round_trip);
    RUN(kubectl_fetches_lists);
    RUN(kubectl_without_network_crd);
    RUN(kubectl_failures);
    RUN(kubectl_hang_times_out);
    fb_kube_free(&data);
    tree_done();
    return fbt_done();
}
