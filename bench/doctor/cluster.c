#include "doctor/cluster.h"

#include <stdio.h>
#include <string.h>

#include "core/jsonio.h"

static const struct fb_cluster_check_def checks[] = {
    {"gpu-nic-networks", FB_KUBE_NETWORKS | FB_KUBE_NODES, fb_cluster_check_gpu_nic_networks,
     "GKE: at least eight gpu-nic Networks with Ready=True and ParamsReady=True"},
    {"nic-info", FB_KUBE_NODES, fb_cluster_check_nic_info,
     "GKE a3-mega: nic-info maps eth1..eth8 onto gpu-nic Networks (no gVNIC displacement)"},
    {"pod-fabric", FB_KUBE_NODES | FB_KUBE_PODS, fb_cluster_check_pod_fabric,
     "GPU pods request the fabric their nodes offer (efa, rdma_vf, hca_shared_devices, TCPXO)"},
    {"tcpxo-versions", FB_KUBE_PODS, fb_cluster_check_tcpxo_versions,
     "GKE TCPXO: nccl-plugin installer and tcpxo-daemon are a released pair"},
    {"pod-interfaces", FB_KUBE_NETWORKS | FB_KUBE_NODES | FB_KUBE_PODS,
     fb_cluster_check_pod_interfaces,
     "GKE GPU pods: each GPU NIC on its own existing, Ready Network (as --gpu-nics gives)"},
    {"nri-devices", FB_KUBE_NODES | FB_KUBE_PODS, fb_cluster_check_nri_devices,
     "GKE TCPX/TCPXO: the sidecar's NRI device list holds exactly the pod's GPUs"},
    {"gke-daemonsets", FB_KUBE_NODES | FB_KUBE_PODS | FB_KUBE_DAEMONSETS,
     fb_cluster_check_gke_daemonsets,
     "GKE GPU nodes: NCCL plugin installer and nri-device-injector pods Ready on each"},
    {"rxdm-logs", FB_KUBE_PODS | FB_KUBE_LOGS, fb_cluster_check_rxdm_logs,
     "GKE TCPX/TCPXO: the RxDM sidecars' logs report no GPU count mismatch"},
    {"sriov-node-states", FB_KUBE_SRIOV_STATES, fb_cluster_check_sriov_node_states,
     "SR-IOV: every SriovNetworkNodeState synced, with the VFs its spec asks for"},
    {"nic-cluster-policy", FB_KUBE_NIC_POLICIES, fb_cluster_check_nic_cluster_policy,
     "Network Operator: NicClusterPolicy ready, every component ready or ignored"},
    {"multus-attachments", FB_KUBE_PODS | FB_KUBE_NADS, fb_cluster_check_multus_attachments,
     "GPU pods: every requested Multus network attached, as named, with one MTU"},
    {"devices-per-gpu", FB_KUBE_NODES | FB_KUBE_PODS, fb_cluster_check_devices_per_gpu,
     "RDMA/EFA devices per GPU: nodes as their instance type has, pods in proportion"},
    {"gpudirect-rdma", FB_KUBE_NODES | FB_KUBE_PODS, fb_cluster_check_gpudirect_rdma,
     "GPUDirect RDMA: nvidia-peermem ready (started after MOFED) or dma-buf"},
    {"gpu-capacity", FB_KUBE_NODES | FB_KUBE_PODS, fb_cluster_check_gpu_capacity,
     "two schedulable GPU nodes with --gpus-per-node GPUs free (else exit 11)"},
};

/* Google releases the plugin installer and the daemon as coupled pairs. */
static const struct fb_version_pair builtin_pairs[] = {
    {"v1.0.15", "v1.0.21"},
};

const struct fb_cluster_check_def *fb_cluster_checks(size_t *n)
{
    *n = sizeof checks / sizeof checks[0];
    return checks;
}

const struct fb_cluster_check_def *fb_cluster_check_find(const char *name)
{
    return fb_check_table_find(checks, sizeof checks, sizeof checks[0], name);
}

/* The lists every save holds; a check that needs one --from DIR lacks
 * judges nothing (the others say so themselves: they read an unsaved one
 * as empty, with a note). */
#define MAIN_LISTS (FB_KUBE_NETWORKS | FB_KUBE_NODES | FB_KUBE_PODS)

bool fb_cluster_skip_unsaved(const struct fb_cluster_ctx *ctx,
                             const struct fb_cluster_check_def *def, struct fb_check *c)
{
    unsigned lacking = def->needs & MAIN_LISTS & ctx->data->unsaved;
    if (lacking == 0)
        return false;
    static const enum fb_kube_list order[] = {FB_KUBE_NETWORKS, FB_KUBE_NODES, FB_KUBE_PODS};
    char names[128] = "", fix[FB_CHECK_TEXT_MAX] = "";
    size_t nu = 0, fu = 0;
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        if (!(lacking & order[i]))
            continue;
        char cmd[600];
        fb_kube_save_command(ctx->data, order[i], cmd, sizeof cmd);
        fb_strbuf_append(names, sizeof names, &nu, "%s%s", nu ? " and " : "",
                         fb_kube_file(order[i]));
        fb_strbuf_append(fix, sizeof fix, &fu, "%s%s", fu ? "; " : "", cmd);
    }
    bool several = strstr(names, " and ") != NULL;
    fb_check_set(c, FB_CHECK_SKIP, "not judged: %s %s not saved in %s", names,
                 several ? "are" : "is", ctx->data->dir ? ctx->data->dir : "--from DIR");
    fb_check_fix(c, "save %s: %s", several ? "them" : "it", fix);
    return true;
}

void fb_cluster_ctx_init(struct fb_cluster_ctx *ctx, const struct fb_kube_data *data)
{
    memset(ctx, 0, sizeof *ctx);
    ctx->data = data;
    for (size_t i = 0; i < sizeof builtin_pairs / sizeof builtin_pairs[0]; i++)
        ctx->pairs[ctx->npairs++] = builtin_pairs[i];
}

enum fb_status fb_cluster_add_pair(struct fb_cluster_ctx *ctx, const char *text,
                                   struct fb_err *err)
{
    const char *eq = strchr(text, '=');
    size_t plen = eq ? (size_t)(eq - text) : 0;
    struct fb_version_pair p;
    if (eq == NULL || plen == 0 || eq[1] == '\0' || plen >= sizeof p.plugin ||
        strlen(eq + 1) >= sizeof p.daemon || strchr(eq + 1, '=') != NULL)
        return fb_fail(err, FB_ERR_USAGE, "--pair '%s' must be PLUGIN=DAEMON versions, e.g. "
                                          "--pair v1.0.15=v1.0.21", text);
    if (ctx->npairs == FB_PAIRS_MAX)
        return fb_fail(err, FB_ERR_USAGE, "at most %d version pairs", FB_PAIRS_MAX);
    snprintf(p.plugin, sizeof p.plugin, "%.*s", (int)plen, text);
    snprintf(p.daemon, sizeof p.daemon, "%s", eq + 1);
    ctx->pairs[ctx->npairs++] = p;
    return FB_OK;
}

bool fb_cluster_is_tcpxo_node(json_object *node)
{
    const struct fb_gke_family *fam = fb_gke_family_of_node(node);
    return fam != NULL && fam->transport == FB_GKE_TCPXO;
}

/* The gpu-nic substring in a Network's name is how GKE TCPXO tooling finds
 * the GPU NIC networks; a prefix such as a cluster name is allowed. */
bool fb_cluster_is_gpu_nic_network(const char *name)
{
    return name != NULL && strstr(name, "gpu-nic") != NULL;
}

json_object *fb_cluster_find_node(const struct fb_cluster_ctx *ctx, const char *name)
{
    json_object *items = fb_kube_items(ctx->data->nodes);
    if (items == NULL || name == NULL)
        return NULL;
    for (size_t i = 0; i < json_object_array_length(items); i++) {
        json_object *node = json_object_array_get_idx(items, i);
        if (strcmp(fb_kube_name(node), name) == 0)
            return node;
    }
    return NULL;
}

const char *fb_cluster_condition(json_object *obj, const char *type, const char **reason,
                                 const char **since)
{
    static const char *const keys[] = {"status", "conditions", NULL};
    json_object *conds = fb_kube_path(obj, keys);
    if (reason)
        *reason = NULL;
    if (since)
        *since = NULL;
    if (conds == NULL || !json_object_is_type(conds, json_type_array))
        return NULL;
    for (size_t i = 0; i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        const char *t = fb_json_get_string(c, "type");
        if (t == NULL || strcmp(t, type) != 0)
            continue;
        if (reason)
            *reason = fb_json_get_string(c, "reason");
        if (since)
            *since = fb_json_get_string(c, "lastTransitionTime");
        return fb_json_get_string(c, "status");
    }
    return NULL;
}
