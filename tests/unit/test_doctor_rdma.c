/* fabric-doctor cluster's RDMA checks and gpu-capacity. Each case starts
 * from the healthy SR-IOV cluster (tests/fixtures/doctor/cluster/
 * sriov-healthy, make-rdma-lists.py), breaks one thing in memory, and
 * asserts the verdict, the evidence and the culprits; then the exit rule
 * of a check that blocks the run. */
#include "core/jsonio.h"
#include "doctor/cluster.h"
#include "doctor/kube.h"

#include "check.h"

#define ALL_LISTS (FB_KUBE_NODES | FB_KUBE_PODS | FB_KUBE_SRIOV_STATES | FB_KUBE_NIC_POLICIES | \
                   FB_KUBE_NADS)

#include "cluster_fixture.h"

static void load(const char *name)
{
    load_lists(name, ALL_LISTS);
}

static void put_str(json_object *obj, const char *key, const char *value)
{
    if (value)
        json_object_object_add(obj, key, json_object_new_string(value));
    else
        json_object_object_del(obj, key);
}

static void clear_items(json_object *list)
{
    json_object *items = fb_kube_items(list);
    json_object_array_del_idx(items, 0, json_object_array_length(items));
}

static json_object *element(json_object *arr, size_t i) { return json_object_array_get_idx(arr, i); }

#define NODE_A "oci-h100-a"
#define NODE_B "oci-h100-b"
#define WORKER0 "fabric-bench-0"
#define WORKER1 "fabric-bench-1"
#define DRIVER_B "nvidia-driver-daemonset-5.15.0-208-w"
#define MOFED_B "mofed-ol8.10-7f9c6d8b5-ds-z"

/* ---- sriov-node-states ---- */

static void sriov_healthy(void)
{
    load("sriov-healthy");
    run_check(fb_cluster_check_sriov_node_states, "sriov-node-states");
    EXPECT("ok", NODE_B ": Succeeded, 16 VFs on 2 PFs");
    CHECK_INT(c.nculprits, 0);
}

static void sriov_in_progress_with_all_vfs(void)
{
    load("sriov-healthy");
    put_str(at(named(data.sriov_states, NODE_A), "status", NULL, NULL), "syncStatus", "InProgress");
    run_check(fb_cluster_check_sriov_node_states, "sriov-node-states");
    EXPECT("warn", NODE_A ": still applying (InProgress), 16 of 16 VFs present");
    CHECK_CONTAINS(c.fix, "kubectl drain " NODE_A " --ignore-daemonsets");
}

static void sriov_without_sync_status(void)
{
    load("sriov-healthy");
    put_str(at(named(data.sriov_states, NODE_A), "status", NULL, NULL), "syncStatus", NULL);
    run_check(fb_cluster_check_sriov_node_states, "sriov-node-states");
    EXPECT("warn", "syncStatus absent: sync unverified (16 of 16 VFs on 2 PFs present)");
    CHECK(fb_check_has_culprit(&c, NODE_A));
}

static void sriov_stuck(void)
{
    load("sriov-healthy");
    json_object *vfs = at(element(at(named(data.sriov_states, NODE_B), "status", "interfaces", NULL), 0),
                          "Vfs", NULL, NULL);
    json_object_array_del_idx(vfs, 3, 5);
    run_check(fb_cluster_check_sriov_node_states, "sriov-node-states");
    EXPECT("fail", NODE_B ": syncStatus Succeeded but ens800f0np0 0000:0c:00.0 3 of 8 VFs: VF "
                   "allocation stuck");
    CHECK(fb_check_has_culprit(&c, NODE_B));
    CHECK(!fb_check_has_culprit(&c, NODE_A));
    CHECK_CONTAINS(c.fix, "kubectl drain " NODE_B " --ignore-daemonsets");
}

static void sriov_pf_missing_from_status(void)
{
    load("sriov-healthy");
    json_object_array_del_idx(at(named(data.sriov_states, NODE_B), "status", "interfaces", NULL), 1, 1);
    run_check(fb_cluster_check_sriov_node_states, "sriov-node-states");
    EXPECT("fail", "ens800f1np1 0000:0c:00.1 0 of 8 VFs");
}

static void sriov_num_vfs_without_list(void)
{
    load("sriov-healthy");
    json_object *pf = element(at(named(data.sriov_states, NODE_B), "status", "interfaces", NULL), 0);
    json_object_object_del(pf, "Vfs");
    run_check(fb_cluster_check_sriov_node_states, "sriov-node-states");
    EXPECT("ok", NODE_B ": Succeeded, 16 VFs");
}

static void sriov_failed(void)
{
    load("sriov-failed");
    run_check(fb_cluster_check_sriov_node_states, "sriov-node-states");
    EXPECT("fail", NODE_A ": sync Failed: failed to configure sriov interfaces");
    CHECK_CONTAINS(c.fix, "lastSyncError");
    put_str(at(named(data.sriov_states, NODE_A), "status", NULL, NULL), "lastSyncError", NULL);
    run_check(fb_cluster_check_sriov_node_states, "sriov-node-states");
    EXPECT("fail", "sync Failed: no lastSyncError");
}

static void sriov_skip_without_operator(void)
{
    load("sriov-healthy");
    clear_items(data.sriov_states);
    run_check(fb_cluster_check_sriov_node_states, "sriov-node-states");
    EXPECT("skip", "no SriovNetworkNodeState");
    load("rdma-healthy");
    run_check(fb_cluster_check_sriov_node_states, "sriov-node-states");
    EXPECT("skip", "not saved in --from DIR");
}

/* ---- nic-cluster-policy ---- */

static json_object *component(const char *name)
{
    json_object *states = at(element(fb_kube_items(data.nic_policies), 0), "status",
                             "appliedStates", NULL);
    for (size_t i = 0; i < json_object_array_length(states); i++)
        if (strcmp(fb_json_get_string(element(states, i), "name"), name) == 0)
            return element(states, i);
    printf("# no component %s\n", name);
    exit(1);
}

static void policy_ready(void)
{
    load("sriov-healthy");
    run_check(fb_cluster_check_nic_cluster_policy, "nic-cluster-policy");
    EXPECT("ok", "nic-cluster-policy ready: 4 components ready");
    CHECK_CONTAINS(c.evidence, "3 ignored");
}

static void policy_ignore_is_not_failure(void)
{
    load("sriov-healthy");
    put_str(component("state-nv-ipam-cni"), "state", "ignore");
    run_check(fb_cluster_check_nic_cluster_policy, "nic-cluster-policy");
    EXPECT("ok", "3 components ready");
    CHECK_CONTAINS(c.evidence, "4 ignored");
}

static void policy_component_error(void)
{
    load("sriov-healthy");
    put_str(component("state-multus-cni"), "state", "error");
    put_str(component("state-multus-cni"), "message", "DaemonSet kube-multus-ds: 1 of 2 ready");
    put_str(component("state-OFED"), "state", "notReady");
    run_check(fb_cluster_check_nic_cluster_policy, "nic-cluster-policy");
    EXPECT("fail", "state-multus-cni error: Multus down: no secondary networks in pods: "
                   "DaemonSet kube-multus-ds: 1 of 2 ready");
    CHECK_CONTAINS(c.evidence, "state-OFED notReady: MOFED driver not loaded on some nodes");
    CHECK(fb_check_has_culprit(&c, "state-OFED"));
    CHECK(!fb_check_has_culprit(&c, "state-nv-ipam-cni"));
}

static void policy_not_ready_without_component(void)
{
    load("sriov-healthy");
    json_object *policy = element(fb_kube_items(data.nic_policies), 0);
    put_str(at(policy, "status", NULL, NULL), "state", "notReady");
    run_check(fb_cluster_check_nic_cluster_policy, "nic-cluster-policy");
    EXPECT("warn", "state notReady with no component failing");
    json_object_object_del(policy, "status");
    run_check(fb_cluster_check_nic_cluster_policy, "nic-cluster-policy");
    EXPECT("warn", "state absent");
}

static void policy_skip(void)
{
    load("sriov-healthy");
    clear_items(data.nic_policies);
    run_check(fb_cluster_check_nic_cluster_policy, "nic-cluster-policy");
    EXPECT("skip", "no NicClusterPolicy");
}

/* ---- multus-attachments ---- */

#define NETWORKS "k8s.v1.cni.cncf.io/networks"
#define STATUS "k8s.v1.cni.cncf.io/network-status"

static void set_ann(const char *pod, const char *key, const char *value)
{
    put_str(at(named(data.pods, pod), "metadata", "annotations", NULL), key, value);
}

static void multus_healthy(void)
{
    load("sriov-healthy");
    run_check(fb_cluster_check_multus_attachments, "multus-attachments");
    EXPECT("ok", "2 GPU pods: 2 requested networks attached as asked");
}

static void multus_json_request(void)
{
    load("sriov-healthy");
    set_ann(WORKER0, NETWORKS, "[{\"name\": \"sriov-rdma\", \"namespace\": \"bench\", "
                               "\"interface\": \"net1\"}]");
    set_ann(WORKER1, NETWORKS, "bench/sriov-rdma");
    run_check(fb_cluster_check_multus_attachments, "multus-attachments");
    EXPECT("ok", "2 requested networks attached");
}

static void multus_interface_renamed(void)
{
    load("sriov-healthy");
    set_ann(WORKER1, NETWORKS, "sriov-rdma@net2");
    run_check(fb_cluster_check_multus_attachments, "multus-attachments");
    EXPECT("fail", "bench/" WORKER1 ": sriov-rdma on net1, asked @net2");
    CHECK(fb_check_has_culprit(&c, "bench/" WORKER1));
    CHECK(!fb_check_has_culprit(&c, "bench/" WORKER0));
}

static void multus_without_status(void)
{
    load("sriov-healthy");
    set_ann(WORKER0, STATUS, NULL);
    run_check(fb_cluster_check_multus_attachments, "multus-attachments");
    EXPECT("fail", "sriov-rdma requested but not attached (no network-status annotation)");
}

static void multus_pending_pod(void)
{
    load("sriov-healthy");
    put_str(at(named(data.pods, WORKER0), "status", NULL, NULL), "phase", "Pending");
    set_ann(WORKER0, STATUS, NULL);
    run_check(fb_cluster_check_multus_attachments, "multus-attachments");
    EXPECT("ok", "2 GPU pods: 1 requested networks attached");
    set_ann(WORKER0, NETWORKS, "other/sriov-rdma");
    run_check(fb_cluster_check_multus_attachments, "multus-attachments");
    EXPECT("fail", "asks other/sriov-rdma, no such NetworkAttachmentDefinition");
}

static void multus_device_and_ip(void)
{
    load("sriov-healthy");
    json_object *status = json_tokener_parse(fb_kube_annotation(named(data.pods, WORKER1), STATUS));
    json_object *net1 = element(status, 1);
    json_object_object_del(net1, "device-info");
    json_object_object_add(net1, "ips", json_object_new_array());
    set_ann(WORKER1, STATUS, json_object_to_json_string(status));
    json_object_put(status);
    run_check(fb_cluster_check_multus_attachments, "multus-attachments");
    EXPECT("warn", "sriov-rdma on net1 has no IP");
    CHECK_CONTAINS(c.evidence, "sriov-rdma attached but no RDMA device (device-info) although the "
                               "NAD binds nvidia.com/rdma-vf");
}

static void multus_malformed_request(void)
{
    load("sriov-healthy");
    set_ann(WORKER0, NETWORKS, "[{\"name\": ");
    run_check(fb_cluster_check_multus_attachments, "multus-attachments");
    EXPECT("fail", "not a network list or JSON array");
}

static void multus_skip(void)
{
    load("sriov-healthy");
    set_ann(WORKER0, NETWORKS, NULL);
    set_ann(WORKER1, NETWORKS, NULL);
    run_check(fb_cluster_check_multus_attachments, "multus-attachments");
    EXPECT("skip", "no GPU pod asks for Multus networks");
}

/* ---- devices-per-gpu ---- */

static void set_alloc(const char *node, const char *res, const char *value)
{
    put_str(at(named(data.nodes, node), "status", "allocatable", NULL), res, value);
}

static void set_pod_qty(const char *pod, const char *res, const char *value)
{
    json_object *ctr = element(at(named(data.pods, pod), "spec", "containers", NULL), 0);
    put_str(at(ctr, "resources", "limits", NULL), res, value);
    put_str(at(ctr, "resources", "requests", NULL), res, value);
}

static void set_type(const char *node, const char *type)
{
    put_str(at(named(data.nodes, node), "metadata", "labels", NULL),
            "node.kubernetes.io/instance-type", type);
}

static void ratio_healthy(void)
{
    load("sriov-healthy");
    run_check(fb_cluster_check_devices_per_gpu, "devices-per-gpu");
    EXPECT("ok", "BM.GPU.H100.8 16 nvidia.com/rdma-vf / 8 GPUs = 2 per GPU as the instance has");
    CHECK_CONTAINS(c.evidence, "2 GPU pods in proportion");
}

static void ratio_node_short_of_its_hardware(void)
{
    load("sriov-healthy");
    set_alloc(NODE_B, "nvidia.com/rdma-vf", "8");
    set_pod_qty(WORKER1, "nvidia.com/rdma-vf", "8");
    run_check(fb_cluster_check_devices_per_gpu, "devices-per-gpu");
    EXPECT("fail", NODE_B " (BM.GPU.H100.8): 8 nvidia.com/rdma-vf for 8 GPUs (1 per GPU), the "
                   "instance has 16 (2 per GPU)");
    CHECK(fb_check_has_culprit(&c, NODE_B));
    CHECK_CONTAINS(c.fix, "numVfs");
}

static void ratio_efa_p5(void)
{
    load("sriov-healthy");
    for (int i = 0; i < 2; i++) {
        const char *node = i ? NODE_B : NODE_A, *pod = i ? WORKER1 : WORKER0;
        set_type(node, "p5.48xlarge");
        set_alloc(node, "nvidia.com/rdma-vf", NULL);
        set_alloc(node, "vpc.amazonaws.com/efa", i ? "16" : "32");
        set_pod_qty(pod, "nvidia.com/rdma-vf", NULL);
        set_pod_qty(pod, "vpc.amazonaws.com/efa", i ? "16" : "32");
    }
    run_check(fb_cluster_check_devices_per_gpu, "devices-per-gpu");
    EXPECT("fail", NODE_B " (p5.48xlarge): 16 vpc.amazonaws.com/efa for 8 GPUs (2 per GPU), the "
                   "instance has 32 (4 per GPU)");
    CHECK(!fb_check_has_culprit(&c, NODE_A));
}

static void ratio_unknown_type_uneven(void)
{
    load("sriov-healthy");
    set_type(NODE_A, "custom-h100");
    set_type(NODE_B, "custom-h100");
    run_check(fb_cluster_check_devices_per_gpu, "devices-per-gpu");
    EXPECT("ok", "custom-h100 16 nvidia.com/rdma-vf / 8 GPUs = 2 per GPU;");
    set_alloc(NODE_B, "nvidia.com/rdma-vf", "12");
    set_pod_qty(WORKER1, "nvidia.com/rdma-vf", "12");
    run_check(fb_cluster_check_devices_per_gpu, "devices-per-gpu");
    EXPECT("warn", NODE_B " (custom-h100): 12 nvidia.com/rdma-vf / 8 GPUs = 1.5 per GPU, but "
                   NODE_A " has 2");
}

static void ratio_pod_short(void)
{
    load("sriov-healthy");
    set_pod_qty(WORKER1, "nvidia.com/rdma-vf", "12");
    run_check(fb_cluster_check_devices_per_gpu, "devices-per-gpu");
    EXPECT("warn", "bench/" WORKER1 ": 8 GPUs but 12 of " NODE_B "'s 16 nvidia.com/rdma-vf");
    set_pod_qty(WORKER1, "nvidia.com/rdma-vf", "1");
    run_check(fb_cluster_check_devices_per_gpu, "devices-per-gpu");
    EXPECT("fail", "8 GPUs but 1 of " NODE_B "'s 16 nvidia.com/rdma-vf (0.125 per GPU; in "
                   "proportion 16)");
    CHECK(fb_check_has_culprit(&c, "bench/" WORKER1));
}

static void ratio_half_node_pod(void)
{
    load("sriov-healthy");
    set_pod_qty(WORKER1, "nvidia.com/gpu", "4");
    set_pod_qty(WORKER1, "nvidia.com/rdma-vf", "8");
    run_check(fb_cluster_check_devices_per_gpu, "devices-per-gpu");
    EXPECT("ok", "2 GPU pods in proportion");
}

static void ratio_skip(void)
{
    load("rdma-healthy");
    run_check(fb_cluster_check_devices_per_gpu, "devices-per-gpu");
    EXPECT("skip", "rdma/* shared resources count shares");
}

/* ---- gpudirect-rdma ---- */

static void set_condition_time(json_object *pod, const char *status, const char *when)
{
    json_object *cond = element(at(pod, "status", "conditions", NULL), 0);
    put_str(cond, "status", status);
    put_str(cond, "lastTransitionTime", when);
}

static void add_env(json_object *pod, const char *name, const char *value)
{
    json_object *env = at(element(at(pod, "spec", "containers", NULL), 0), "env", NULL, NULL);
    json_object *e = json_object_new_object();
    put_str(e, "name", name);
    put_str(e, "value", value);
    json_object_array_add(env, e);
}

static void drop_peermem(json_object *pod)
{
    json_object_array_del_idx(at(pod, "spec", "containers", NULL), 1, 1);
}

static void gdr_healthy(void)
{
    load("sriov-healthy");
    run_check(fb_cluster_check_gpudirect_rdma, "gpudirect-rdma");
    EXPECT("ok", "2 RDMA GPU nodes: " NODE_A ": nvidia-peermem-ctr ready, after MOFED");
}

static void gdr_peermem_waiting(void)
{
    load("sriov-healthy");
    json_object *st = element(at(named(data.pods, DRIVER_B), "status", "containerStatuses", NULL), 1);
    json_object_object_add(st, "ready", json_object_new_boolean(0));
    json_object *state = json_tokener_parse("{\"waiting\": {\"reason\": \"CrashLoopBackOff\"}}");
    json_object_object_add(st, "state", state);
    run_check(fb_cluster_check_gpudirect_rdma, "gpudirect-rdma");
    EXPECT("fail", NODE_B ": nvidia-peermem-ctr in " DRIVER_B " not ready (CrashLoopBackOff)");
    CHECK(fb_check_has_culprit(&c, NODE_B));
    CHECK_CONTAINS(c.fix, "waits for MOFED");
}

static void gdr_mofed_not_ready(void)
{
    load("sriov-healthy");
    set_condition_time(named(data.pods, MOFED_B), "False", "2026-11-02T09:30:00Z");
    run_check(fb_cluster_check_gpudirect_rdma, "gpudirect-rdma");
    EXPECT("fail", NODE_B ": MOFED pod " MOFED_B " not Ready");
}

static void gdr_driver_before_mofed(void)
{
    load("peermem-order");
    run_check(fb_cluster_check_gpudirect_rdma, "gpudirect-rdma");
    EXPECT("warn", "Ready 2026-11-02T09:17:55Z before MOFED pod " MOFED_B " (2026-11-02T09:21:40Z)");
    CHECK_CONTAINS(c.fix, "built against MOFED");
    /* Without a Ready condition, the containers' start time counts. */
    load("sriov-healthy");
    json_object_object_del(at(named(data.pods, DRIVER_B), "status", NULL, NULL), "conditions");
    run_check(fb_cluster_check_gpudirect_rdma, "gpudirect-rdma");
    EXPECT("warn", "Ready 2026-11-02T09:14:03Z before MOFED pod");
}

static void gdr_dmabuf(void)
{
    load("sriov-healthy");
    for (int i = 0; i < 2; i++) {
        json_object *pod = named(data.pods, i ? DRIVER_B : "nvidia-driver-daemonset-5.15.0-208-q");
        drop_peermem(pod);
        add_env(pod, "KERNEL_MODULE_TYPE", "open");
    }
    run_check(fb_cluster_check_gpudirect_rdma, "gpudirect-rdma");
    EXPECT("ok", NODE_B ": dma-buf (open kernel modules, kernel 5.15.0-208");
    json_object *info = at(named(data.nodes, NODE_B), "status", "nodeInfo", NULL);
    put_str(info, "kernelVersion", "5.4.17-2136.el8uek.x86_64");
    run_check(fb_cluster_check_gpudirect_rdma, "gpudirect-rdma");
    EXPECT("fail", NODE_B ": no nvidia-peermem-ctr and kernel below 5.12");
    CHECK(!fb_check_has_culprit(&c, NODE_A));
}

static void gdr_open_flag_and_auto(void)
{
    load("peermem-missing");
    add_env(named(data.pods, "nvidia-driver-daemonset-5.15.0-208-q"), "OPEN_KERNEL_MODULES_ENABLED",
            "true");
    add_env(named(data.pods, DRIVER_B), "KERNEL_MODULE_TYPE", "auto");
    run_check(fb_cluster_check_gpudirect_rdma, "gpudirect-rdma");
    EXPECT("warn", NODE_B ": no nvidia-peermem-ctr and KERNEL_MODULE_TYPE=auto: dma-buf unverified");
    CHECK(!fb_check_has_culprit(&c, NODE_A));
    CHECK_CONTAINS(c.fix, "driver.rdma.enabled=true");
}

static void gdr_host_driver(void)
{
    load("sriov-healthy");
    json_object *items = fb_kube_items(data.pods);
    json_object_array_del_idx(items, 5, 1); /* node b's driver pod */
    run_check(fb_cluster_check_gpudirect_rdma, "gpudirect-rdma");
    EXPECT("ok", "1 RDMA GPU nodes: " NODE_A);
    CHECK_CONTAINS(c.evidence, "1 nodes with the hosts' driver not judged");
    json_object_array_del_idx(items, 4, 1);
    run_check(fb_cluster_check_gpudirect_rdma, "gpudirect-rdma");
    EXPECT("skip", "2 RDMA GPU nodes, no GPU Operator driver pod");
}

static void gdr_skip_without_rdma(void)
{
    load("tcpxo-healthy");
    run_check(fb_cluster_check_gpudirect_rdma, "gpudirect-rdma");
    EXPECT("skip", "no GPU node with an RDMA fabric");
}

/* ---- gpu-capacity ---- */

static void capacity_check(bool gates)
{
    ctx.capacity_gates = gates;
    run_check(fb_cluster_check_gpu_capacity, "gpu-capacity");
}

static void capacity_two_free(void)
{
    load("sriov-healthy");
    capacity_check(true);
    EXPECT("ok", "2 free GPU nodes (at least 1 free GPU each): " NODE_A " (8 free), " NODE_B " (8 free)");
    CHECK(!c.blocks_run);
}

static void capacity_cordoned(void)
{
    load("capacity-one-node");
    capacity_check(true);
    EXPECT("skip", "skipped: needs two free GPU nodes (at least 1 free GPU each), 1 of 2 GPU nodes free ("
                   NODE_B ": cordoned; free: " NODE_A " (8 free))");
    CHECK(c.blocks_run);
    CHECK(fb_check_has_culprit(&c, NODE_B));
    capacity_check(false);
    CHECK(!c.blocks_run);
    CHECK_CONTAINS(c.evidence, "not gating the exit");
}

static void capacity_not_ready(void)
{
    load("sriov-healthy");
    json_object *cond = element(at(named(data.nodes, NODE_B), "status", "conditions", NULL), 0);
    put_str(cond, "status", "Unknown");
    capacity_check(true);
    EXPECT("skip", NODE_B ": Ready=Unknown");
}

static void capacity_taints(void)
{
    load("sriov-healthy");
    json_object *spec = at(named(data.nodes, NODE_B), "spec", NULL, NULL);
    json_object_object_add(spec, "taints", json_tokener_parse(
        "[{\"key\": \"nvidia.com/gpu\", \"value\": \"present\", \"effect\": \"NoSchedule\"},"
        " {\"key\": \"maintenance\", \"effect\": \"PreferNoSchedule\"}]"));
    capacity_check(true);
    EXPECT("ok", "2 free GPU nodes");
    json_object_array_add(json_object_object_get(spec, "taints"), json_tokener_parse(
        "{\"key\": \"node.kubernetes.io/unreachable\", \"effect\": \"NoExecute\"}"));
    capacity_check(true);
    EXPECT("skip", NODE_B ": taint node.kubernetes.io/unreachable:NoExecute");
}

static void capacity_other_pods_hold_gpus(void)
{
    load("sriov-healthy");
    put_str(at(named(data.pods, WORKER1), "metadata", "labels", NULL), "app.kubernetes.io/name",
            "training");
    capacity_check(true);
    EXPECT("skip", NODE_B ": 0 of 8 GPUs free, needs 1");
    put_str(at(named(data.pods, WORKER1), "status", NULL, NULL), "phase", "Succeeded");
    capacity_check(true);
    EXPECT("ok", NODE_B " (8 free)");
    put_str(at(named(data.pods, WORKER1), "status", NULL, NULL), "phase", "Running");
    set_pod_qty(WORKER1, "nvidia.com/gpu", "3");
    ctx.gpus_per_node = 5;
    capacity_check(true);
    EXPECT("ok", "(at least 5 free GPUs each)");
    CHECK_CONTAINS(c.evidence, NODE_B " (5 free)");
    ctx.gpus_per_node = 6;
    capacity_check(true);
    EXPECT("skip", NODE_B ": 5 of 8 GPUs free, needs 6");
}

static void capacity_no_gpu_nodes(void)
{
    load("sriov-healthy");
    set_alloc(NODE_A, "nvidia.com/gpu", NULL);
    set_alloc(NODE_B, "nvidia.com/gpu", NULL);
    capacity_check(true);
    EXPECT("skip", "0 of 0 GPU nodes free (no node offers nvidia.com/gpu)");
}

/* ---- the exit rule ---- */

static void exit_rule(void)
{
    struct fb_check list[3];
    fb_check_init(&list[0], "a");
    fb_check_set(&list[0], FB_CHECK_OK, "fine");
    fb_check_init(&list[1], "gpu-capacity");
    fb_check_set(&list[1], FB_CHECK_SKIP, "skipped: needs two free GPU nodes");
    fb_check_init(&list[2], "b");
    fb_check_set(&list[2], FB_CHECK_WARN, "meh");
    CHECK_INT(fb_check_exit_status(list, 3), FB_DOCTOR_WARN);
    list[1].blocks_run = true;
    CHECK_INT(fb_check_exit_status(list, 3), FB_ERR_SKIPPED);
    CHECK_INT(fb_check_exit_status(list, 2), 11);
    fb_check_set(&list[2], FB_CHECK_FAIL, "broken");
    CHECK_INT(fb_check_exit_status(list, 3), FB_DOCTOR_FAIL);
    fb_check_set(&list[1], FB_CHECK_OK, "two free");
    CHECK_INT(fb_check_exit_status(list, 2), FB_OK);
}

int main(void)
{
    RUN(sriov_healthy);
    RUN(sriov_in_progress_with_all_vfs);
    RUN(sriov_without_sync_status);
    RUN(sriov_stuck);
    RUN(sriov_pf_missing_from_status);
    RUN(sriov_num_vfs_without_list);
    RUN(sriov_failed);
    RUN(sriov_skip_without_operator);
    RUN(policy_ready);
    RUN(policy_ignore_is_not_failure);
    RUN(policy_component_error);
    RUN(policy_not_ready_without_component);
    RUN(policy_skip);
    RUN(multus_healthy);
    RUN(multus_json_request);
    RUN(multus_interface_renamed);
    RUN(multus_without_status);
    RUN(multus_pending_pod);
    RUN(multus_device_and_ip);
    RUN(multus_malformed_request);
    RUN(multus_skip);
    RUN(ratio_healthy);
    RUN(ratio_node_short_of_its_hardware);
    RUN(ratio_efa_p5);
    RUN(ratio_unknown_type_uneven);
    RUN(ratio_pod_short);
    RUN(ratio_half_node_pod);
    RUN(ratio_skip);
    RUN(gdr_healthy);
    RUN(gdr_peermem_waiting);
    RUN(gdr_mofed_not_ready);
    RUN(gdr_driver_before_mofed);
    RUN(gdr_dmabuf);
    RUN(gdr_open_flag_and_auto);
    RUN(gdr_host_driver);
    RUN(gdr_skip_without_rdma);
    RUN(capacity_two_free);
    RUN(capacity_cordoned);
    RUN(capacity_not_ready);
    RUN(capacity_taints);
    RUN(capacity_other_pods_hold_gpus);
    RUN(capacity_no_gpu_nodes);
    RUN(exit_rule);
    fb_kube_free(&data);
    return fbt_done();
}
