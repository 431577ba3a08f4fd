/* fabric-doctor cluster's GKE checks: the machine families, pod interface
 * mapping, the RxDM sidecar's NRI device list, the GPU nodes' DaemonSets,
 * the sidecars' logs and --gpu-nics. Each case starts from a saved healthy
 * cluster (tests/fixtures/doctor/cluster) and breaks one thing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonio.h"
#include "doctor/cluster.h"
#include "doctor/kube.h"

#include "check.h"

#define ALL_LISTS (FB_KUBE_NETWORKS | FB_KUBE_NODES | FB_KUBE_PODS | FB_KUBE_DAEMONSETS | FB_KUBE_LOGS)

#include "cluster_fixture.h"

static void load(const char *name)
{
    load_lists(name, ALL_LISTS);
}

static void set_string(json_object *obj, const char *key, const char *value)
{
    json_object_object_add(obj, key, json_object_new_string(value));
}

static void set_name(json_object *obj, const char *name)
{
    set_string(at(obj, "metadata", NULL, NULL), "name", name);
}

/* The worker's main container asks for `gpus`. */
static void set_gpus(json_object *pod, const char *gpus)
{
    json_object *ctr = json_object_array_get_idx(at(pod, "spec", "containers", NULL), 0);
    set_string(at(ctr, "resources", "limits", NULL), "nvidia.com/gpu", gpus);
    set_string(at(ctr, "resources", "requests", NULL), "nvidia.com/gpu", gpus);
}

/* ---- families ---- */

static void families_table(void)
{
    const struct fb_gke_family *high = fb_gke_family_of_machine("a3-highgpu-8g");
    const struct fb_gke_family *mega = fb_gke_family_of_machine("a3-megagpu-8g");
    const struct fb_gke_family *ultra = fb_gke_family_of_machine("a3-ultragpu-8g");
    const struct fb_gke_family *a4 = fb_gke_family_of_machine("a4-highgpu-8g");
    CHECK(high && mega && ultra && a4);
    CHECK(fb_gke_family_of_machine("a2-highgpu-8g") == NULL);
    CHECK_INT(high->nics, 4);
    CHECK_STR(high->daemon, "tcpx-daemon");
    CHECK(!high->dmabuf);
    CHECK_INT(mega->nics, FB_GKE_GPU_NICS);
    CHECK(mega->dmabuf);
    CHECK_INT(ultra->first_if, 2);
    CHECK(ultra->daemon == NULL && !ultra->nri);
    CHECK_STR(a4->installer, "nccl-rdma-installer");
    load("tcpxo-healthy");
    CHECK(fb_cluster_is_tcpxo_node(named(data.nodes, "gke-a3-pool-a")));
    CHECK(!fb_cluster_is_tcpxo_node(named(data.nodes, "gke-cpu-pool-0")));
}

/* ---- pod-interfaces ---- */

static void interfaces_conditions_absent_warn(void)
{
    load("tcpxo-healthy");
    json_object_object_del(named(data.networks, "gpu-nic-3"), "status");
    run_check(fb_cluster_check_pod_interfaces, "pod-interfaces");
    EXPECT("warn", "eth4 -> Network 'gpu-nic-3' reports no conditions");
    CHECK(fb_check_has_culprit(&c, "default/nccl-test-0"));
}

static void interfaces_pattern_warn(void)
{
    load("a3ultra-healthy");
    set_name(named(data.networks, "rdma-3"), "roce-3");
    static const char *const pods[] = {"nccl-gib-0", "nccl-gib-1"};
    for (int i = 0; i < 2; i++) {
        json_object *pod = named(data.pods, pods[i]);
        char fresh[2048];
        snprintf(fresh, sizeof fresh, "%s", fb_kube_annotation(pod, "networking.gke.io/interfaces"));
        char *hit = strstr(fresh, "\"rdma-3\"");
        CHECK(hit != NULL);
        if (hit)
            memcpy(hit + 1, "roce", 4);
        set_string(at(pod, "metadata", "annotations", NULL), "networking.gke.io/interfaces",
                   fresh);
    }
    run_check(fb_cluster_check_pod_interfaces, "pod-interfaces");
    EXPECT("warn", "eth5 -> Network 'roce-3' lacks 'rdma-' in its name");
}

static void interfaces_annotation_absent_fail(void)
{
    load("a3high-healthy");
    json_object_object_del(at(named(data.pods, "nccl-tcpx-1"), "metadata", "annotations", NULL),
                           "networking.gke.io/interfaces");
    run_check(fb_cluster_check_pod_interfaces, "pod-interfaces");
    EXPECT("fail", "default/nccl-tcpx-1: no networking.gke.io/interfaces annotation");
}

static void interfaces_given_mapping(void)
{
    load("tcpxo-healthy");
    struct fb_gke_nic_map map;
    struct fb_err err = {FB_OK, ""};
    CHECK_INT(fb_gke_parse_nic_map("data:\n  eth3: gpu-nic-3\n", "t", &map, &err), FB_OK);
    ctx.given_nics = &map;
    run_check(fb_cluster_check_pod_interfaces, "pod-interfaces");
    EXPECT("fail", "eth3 deployed on 'gpu-nic-2', fabric-bench was given 'gpu-nic-3'");
    CHECK_CONTAINS(c.fix, "--gpu-nics");
}

static void interfaces_skip_elsewhere(void)
{
    load("rdma-healthy");
    run_check(fb_cluster_check_pod_interfaces, "pod-interfaces");
    EXPECT("skip", "no GPU pod on a GKE GPU machine (a3-highgpu-8g, a3-megagpu-8g");
}

/* ---- nri-devices ---- */

static void nri_part_of_node_warn(void)
{
    load("tcpxo-healthy");
    set_gpus(named(data.pods, "nccl-test-0"), "4");
    run_check(fb_cluster_check_nri_devices, "nri-devices");
    EXPECT("warn", "lists 8 GPUs for a pod that requests 4");
}

static void nri_beyond_node_fail(void)
{
    load("tcpxo-healthy");
    json_object *node = named(data.nodes, "gke-a3-pool-a");
    set_string(at(node, "status", "allocatable", NULL), "nvidia.com/gpu", "6");
    run_check(fb_cluster_check_nri_devices, "nri-devices");
    EXPECT("fail", "requests 8 GPUs, gke-a3-pool-a has 6 allocatable");
    load("tcpxo-healthy");
    json_object *ann = at(named(data.pods, "nccl-test-0"), "metadata", "annotations", NULL);
    char devs[1024];
    snprintf(devs, sizeof devs, "%s\n- path: /dev/nvidia8",
             fb_kube_annotation(named(data.pods, "nccl-test-0"),
                                "devices.gke.io/container.tcpxo-daemon"));
    set_string(ann, "devices.gke.io/container.tcpxo-daemon", devs);
    run_check(fb_cluster_check_nri_devices, "nri-devices");
    EXPECT("fail", "lists /dev/nvidia8, beyond the 8 GPUs of gke-a3-pool-a");
}

static void nri_annotation_absent_or_short(void)
{
    load("tcpxo-healthy");
    json_object *ann = at(named(data.pods, "nccl-test-1"), "metadata", "annotations", NULL);
    json_object_object_del(ann, "devices.gke.io/container.tcpxo-daemon");
    run_check(fb_cluster_check_nri_devices, "nri-devices");
    EXPECT("fail", "default/nccl-test-1: no devices.gke.io/container.tcpxo-daemon annotation");
    set_string(ann, "devices.gke.io/container.tcpxo-daemon",
               "- path: /dev/nvidia0\n- path: /dev/nvidia1\n- path: /dev/nvidia2\n"
               "- path: /dev/nvidia3\n- path: /dev/nvidia4\n- path: /dev/nvidia5\n"
               "- path: /dev/nvidia6\n- path: /dev/nvidia7\n- path: /dev/nvidiactl\n"
               "- path: /dev/nvidia-uvm\n");
    run_check(fb_cluster_check_nri_devices, "nri-devices");
    EXPECT("fail", "missing /dev/dmabuf_import_helper");
}

static void nri_tcpx_needs_no_dmabuf(void)
{
    load("a3high-healthy");
    run_check(fb_cluster_check_nri_devices, "nri-devices");
    EXPECT("ok", "2 pods");
}

/* ---- gke-daemonsets ---- */

static void daemonsets_short_elsewhere_warn(void)
{
    load("tcpxo-healthy");
    json_object *ds = named(data.daemonsets, "nri-device-injector");
    json_object_object_add(at(ds, "status", NULL, NULL), "numberReady", json_object_new_int(1));
    run_check(fb_cluster_check_gke_daemonsets, "gke-daemonsets");
    EXPECT("warn", "kube-system/nri-device-injector has 1 of 2 Ready");
}

static void daemonsets_absent_named(void)
{
    load("tcpxo-healthy");
    json_object *items = fb_kube_items(data.daemonsets);
    json_object_array_del_idx(items, 1, 1); /* nri-device-injector */
    json_object *pods = fb_kube_items(data.pods);
    for (size_t i = json_object_array_length(pods); i-- > 0;)
        if (strncmp(fb_kube_name(json_object_array_get_idx(pods, i)), "nri-", 4) == 0)
            json_object_array_del_idx(pods, i, 1);
    run_check(fb_cluster_check_gke_daemonsets, "gke-daemonsets");
    EXPECT("fail", "gke-a3-pool-a: nri-device-injector DaemonSet absent");
    CHECK(fb_check_has_culprit(&c, "gke-a3-pool-b"));
}

/* Keeps the pods of namespace ns (NULL: none). */
static void keep_namespace(const char *ns)
{
    json_object *pods = fb_kube_items(data.pods);
    for (size_t i = json_object_array_length(pods); i-- > 0;)
        if (ns == NULL || strcmp(fb_kube_namespace(json_object_array_get_idx(pods, i)), ns) != 0)
            json_object_array_del_idx(pods, i, 1);
}

/* A pods list without kube-system (saved from one namespace, or from one
 * holding nothing) cannot show the DaemonSets' pods: nothing is failed. */
static void daemonsets_without_kube_system_skip(void)
{
    const char *const keep[] = {NULL, "default"};
    const char *const why[] = {"pods.json holds no pod at all",
                               "pods.json holds pods of namespace default only"};
    for (size_t k = 0; k < 2; k++) {
        load("tcpxo-healthy");
        keep_namespace(keep[k]);
        run_check(fb_cluster_check_gke_daemonsets, "gke-daemonsets");
        EXPECT("skip", why[k]);
        CHECK_CONTAINS(c.evidence, "2 GKE GPU nodes");
        CHECK_CONTAINS(c.fix, "kubectl get pods -A -o json > ");
        CHECK_CONTAINS(c.fix, "/tcpxo-healthy/pods.json");
        CHECK_INT(c.nculprits, 0);
    }
    /* kube-system alone (kubectl -n kube-system) shows them: judged. */
    load("tcpxo-healthy");
    keep_namespace("kube-system");
    run_check(fb_cluster_check_gke_daemonsets, "gke-daemonsets");
    EXPECT("ok", "Ready on all 2 GKE GPU nodes");
}

/* ---- rxdm-logs ---- */

static void logs_read_from_dir(void)
{
    load("tcpxo-logs-7gpus");
    CHECK_CONTAINS(fb_kube_log(&data, "default", "nccl-test-1", "tcpxo-daemon"), "PCI tree 7");
    CHECK(fb_kube_log(&data, "default", "nccl-test-1", "other") == NULL);
    CHECK_STR(fb_kube_rxdm_container(named(data.pods, "nccl-test-1")), "tcpxo-daemon");
    CHECK(fb_kube_rxdm_container(named(data.pods, "kube-dns-5b8b7f9f6d-q2x7m")) == NULL);
    run_check(fb_cluster_check_rxdm_logs, "rxdm-logs");
    EXPECT("fail", "found 7 GPUs");
    CHECK(fb_check_has_culprit(&c, "default/nccl-test-1"));
}

static void logs_wording_variants(void)
{
    load("tcpxo-healthy");
    /* The count may follow the phrase directly or after "in the PCI tree". */
    json_object_object_add(data.logs, "default/nccl-test-0/tcpxo-daemon",
                           json_object_new_string("x\nE1 Number of GPUs detected 7 is not equal "
                                                  "to 8\n"));
    json_object_object_add(data.logs, "default/nccl-test-1/tcpxo-daemon",
                           json_object_new_string("E1 Number of GPUs detected in the PCI tree 0\n"));
    run_check(fb_cluster_check_rxdm_logs, "rxdm-logs");
    EXPECT("fail", "2 of 2 RxDM sidecars");
    CHECK_CONTAINS(c.evidence, "nccl-test-0 tcpxo-daemon found 7 GPUs");
    CHECK_CONTAINS(c.evidence, "nccl-test-1 tcpxo-daemon found 0 GPUs");
    CHECK_CONTAINS(c.fix, "/sys -> /hostsysfs");
    CHECK_CONTAINS(c.fix, "recreate the nodes");
}

static void logs_skip_without_sidecar(void)
{
    load("a3ultra-healthy");
    run_check(fb_cluster_check_rxdm_logs, "rxdm-logs");
    EXPECT("skip", "no running pod with an RxDM sidecar");
}

/* ---- pod-fabric on the families ---- */

static void pod_fabric_tcpx_without_sidecar(void)
{
    load("a3high-healthy");
    json_object *spec = at(named(data.pods, "nccl-tcpx-0"), "spec", NULL, NULL);
    json_object_object_del(spec, "initContainers");
    run_check(fb_cluster_check_pod_fabric, "pod-fabric");
    EXPECT("fail", "default/nccl-tcpx-0: no tcpx-daemon sidecar");
}

static void pod_fabric_ultra_unmapped(void)
{
    load("a3ultra-healthy");
    set_string(at(named(data.pods, "nccl-gib-1"), "metadata", "annotations", NULL),
               "networking.gke.io/interfaces",
               "[{\"interfaceName\":\"eth0\",\"network\":\"default\"},"
               "{\"interfaceName\":\"eth2\",\"network\":\"rdma-0\"}]");
    run_check(fb_cluster_check_pod_fabric, "pod-fabric");
    EXPECT("fail", "maps 1 of eth2..eth9 (GPUDirect RDMA)");
}

/* ---- --gpu-nics ---- */

static void nic_map_shapes(void)
{
    struct fb_gke_nic_map map;
    struct fb_err err = {FB_OK, ""};
    CHECK_INT(fb_gke_parse_nic_map("# c\napiVersion: v1\nmetadata:\n  name: x\ndata:\n"
                                   "  eth1: \"gpu-nic-0\"  # first\n  eth2: 'gpu-nic-1'\r\n"
                                   "kind: ConfigMap\n",
                                   "t", &map, &err), FB_OK);
    CHECK_INT(map.n, 2);
    CHECK_STR(fb_gke_given_network(&map, "eth1"), "gpu-nic-0");
    CHECK_STR(fb_gke_given_network(&map, "eth2"), "gpu-nic-1");
    CHECK(fb_gke_given_network(&map, "eth3") == NULL);
    CHECK_INT(fb_gke_parse_nic_map(" [{\"interfaceName\":\"eth0\",\"network\":\"default\"},"
                                   "{\"interfaceName\":\"eth2\",\"network\":\"rdma-0\"}]",
                                   "t", &map, &err), FB_OK);
    CHECK_INT(map.n, 1);
    CHECK_STR(fb_gke_given_network(&map, "eth2"), "rdma-0");
}

/* Each malformed text: FB_ERR_INPUT with one line naming the problem. */
static void expect_bad_map(const char *text, const char *msg)
{
    struct fb_gke_nic_map map;
    struct fb_err err = {FB_OK, ""};
    CHECK_INT(fb_gke_parse_nic_map(text, "F", &map, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, msg);
    CHECK(strchr(err.msg, '\n') == NULL);
}

static void nic_map_malformed(void)
{
    expect_bad_map("data:\n  eth1: a\n  eth1: b\n", "F: eth1 given twice");
    expect_bad_map("data:\n  nic1: a\n", "'nic1: a' is not ethN: NETWORK");
    expect_bad_map("data:\n  eth1:\n", "is not ethN: NETWORK");
    expect_bad_map("data:\n  eth1 a\n", "F line 2: 'eth1 a'");
    expect_bad_map("kind: ConfigMap\n", "no data: block");
    expect_bad_map("[{\"interfaceName\":\"eth1\"}]", "entry 0 lacks interfaceName or network");
    expect_bad_map("[{", "F: not a JSON array");
}

int main(void)
{
    RUN(families_table);
    RUN(interfaces_conditions_absent_warn);
    RUN(interfaces_pattern_warn);
    RUN(interfaces_annotation_absent_fail);
    RUN(interfaces_given_mapping);
    RUN(interfaces_skip_elsewhere);
    RUN(nri_part_of_node_warn);
    RUN(nri_beyond_node_fail);
    RUN(nri_annotation_absent_or_short);
    RUN(nri_tcpx_needs_no_dmabuf);
    RUN(daemonsets_short_elsewhere_warn);
    RUN(daemonsets_absent_named);
    RUN(daemonsets_without_kube_system_skip);
    RUN(logs_read_from_dir);
    RUN(logs_wording_variants);
    RUN(logs_skip_without_sidecar);
    RUN(pod_fabric_tcpx_without_sidecar);
    RUN(pod_fabric_ultra_unmapped);
    RUN(nic_map_shapes);
    RUN(nic_map_malformed);
    fb_kube_free(&data);
    return fbt_done();
}
