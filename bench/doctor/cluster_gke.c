/* GKE multi-networking for TCPXO: the eight gpu-nic Networks and each
 * a3-mega node's mapping of its GPU NICs onto them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonio.h"
#include "doctor/cluster.h"

#define NIC_INFO "networking.gke.io/nic-info"
#define NORTH_IFS "networking.gke.io/north-interfaces"

static size_t count_tcpxo_nodes(const struct fb_cluster_ctx *ctx)
{
    json_object *items = fb_kube_items(ctx->data->nodes);
    size_t n = 0;
    for (size_t i = 0; items && i < json_object_array_length(items); i++)
        n += fb_cluster_is_tcpxo_node(json_object_array_get_idx(items, i));
    return n;
}

/* "gpu-nic-3 Ready=False (NetworkNotFound)" */
static void describe_not_ready(json_object *net, char *buf, size_t len, bool *ready)
{
    const char *why_r = NULL, *why_p = NULL;
    const char *r = fb_cluster_condition(net, "Ready", &why_r, NULL);
    const char *p = fb_cluster_condition(net, "ParamsReady", &why_p, NULL);
    bool ok_r = r && strcmp(r, "True") == 0, ok_p = p && strcmp(p, "True") == 0;
    *ready = ok_r && ok_p;
    const char *cond = ok_r ? "ParamsReady" : "Ready";
    const char *status = ok_r ? p : r;
    const char *why = ok_r ? why_p : why_r;
    snprintf(buf, len, "%s %s=%s%s%s%s", fb_kube_name(net), cond, status ? status : "absent",
             why ? " (" : "", why ? why : "", why ? ")" : "");
}

static bool is_device_network(json_object *net)
{
    static const char *const type_keys[] = {"spec", "type", NULL};
    json_object *type = fb_kube_path(net, type_keys);
    return type != NULL && strcmp(json_object_get_string(type), "Device") == 0;
}

void fb_cluster_check_gpu_nic_networks(const struct fb_cluster_ctx *ctx, struct fb_check *c)
{
    json_object *items = fb_kube_items(ctx->data->networks);
    size_t total = items ? json_object_array_length(items) : 0;
    size_t gpu_nic = 0, ready = 0, misnamed = 0;
    char ready_names[512], bad[768], others[256];
    size_t ru = 0, bu = 0, ou = 0;
    ready_names[0] = bad[0] = others[0] = '\0';
    for (size_t i = 0; i < total; i++) {
        json_object *net = json_object_array_get_idx(items, i);
        const char *name = fb_kube_name(net);
        if (!fb_cluster_is_gpu_nic_network(name)) {
            if (is_device_network(net))
                fb_strbuf_append(others, sizeof others, &ou, "%s%s", misnamed++ ? ", " : "",
                                 name);
            continue;
        }
        gpu_nic++;
        char state[256];
        bool is_ready = false;
        describe_not_ready(net, state, sizeof state, &is_ready);
        if (is_ready)
            fb_strbuf_append(ready_names, sizeof ready_names, &ru, "%s%s", ready++ ? ", " : "",
                             name);
        else
            fb_strbuf_append(bad, sizeof bad, &bu, "%s%s", bu ? "; " : "", state);
    }
    /* Device Networks alone (A3 High's vpc1..vpc4, A3 Ultra's rdma-0..7)
     * do not make a TCPXO cluster; an a3-megagpu-8g node does. */
    if (gpu_nic == 0 && count_tcpxo_nodes(ctx) == 0) {
        fb_check_set(c, FB_CHECK_SKIP, "no gpu-nic Network and no %s node: not a GKE TCPXO "
                                       "cluster%s%s", FB_GKE_TCPXO_MACHINE,
                     fb_kube_note(ctx->data, FB_KUBE_NETWORKS)[0] ? "; " : "",
                     fb_kube_note(ctx->data, FB_KUBE_NETWORKS));
        return;
    }
    if (ready >= FB_GKE_GPU_NICS) {
        /* A leftover Network beyond the ready eight (a deleted pool's) is
         * noted, not failed. */
        fb_check_set(c, FB_CHECK_OK, "%zu gpu-nic Networks Ready and ParamsReady: %s", ready,
                     ready_names);
        if (bu > 0)
            fb_check_note(c, "not ready, beyond the eight needed: %s", bad);
        return;
    }
    /* Device Networks that would make up the shortfall were most likely
     * created under other names (Google's samples say vpc1..vpc8). */
    bool renamed = gpu_nic < FB_GKE_GPU_NICS && gpu_nic + misnamed >= FB_GKE_GPU_NICS;
    for (size_t i = 0; i < total; i++) {
        json_object *net = json_object_array_get_idx(items, i);
        char state[256];
        bool is_ready = false;
        describe_not_ready(net, state, sizeof state, &is_ready);
        bool gpu = fb_cluster_is_gpu_nic_network(fb_kube_name(net));
        if ((gpu && !is_ready) || (!gpu && renamed && is_device_network(net)))
            fb_check_culprit(c, "%s", fb_kube_name(net));
    }
    fb_check_set(c, FB_CHECK_FAIL, "%zu of the %d gpu-nic Networks TCPXO needs are Ready and "
                                   "ParamsReady%s%s%s%s", ready, FB_GKE_GPU_NICS,
                 bu ? "; not ready: " : "", bad,
                 renamed ? "; Device Networks without gpu-nic in the name: " : "",
                 renamed ? others : "");
    if (renamed)
        fb_check_fix(c, "Network names must contain gpu-nic: recreate %s as gpu-nic-0..gpu-nic-7 "
                        "(and the pods' networking.gke.io/interfaces to match)", others);
    else if (bu > 0)
        fb_check_fix(c, "look at the conditions (kubectl get networks.networking.gke.io NAME -o "
                        "jsonpath='{.status.conditions}'); ParamsReady=False means the "
                        "GKENetworkParamSet binding is broken");
    else
        fb_check_fix(c, "create one Network and GKENetworkParamSet pair per GPU NIC (%d), each "
                        "name containing gpu-nic", FB_GKE_GPU_NICS);
}

struct nic_slot {
    bool seen;
    const char *ip;
};

enum node_result { NODE_OK, NODE_UNVERIFIED, NODE_FAIL };

static json_object *parse_array(const char *text, const char **why)
{
    enum json_tokener_error jerr = json_tokener_success;
    json_object *v = json_tokener_parse_verbose(text, &jerr);
    *why = NULL;
    if (v == NULL) {
        *why = json_tokener_error_desc(jerr);
        return NULL;
    }
    if (!json_object_is_type(v, json_type_array)) {
        json_object_put(v);
        *why = "not a JSON array";
        return NULL;
    }
    return v;
}

/* eth1..eth8 each mapped once, nothing past eth8. Fills slots[0..8]. */
static enum node_result check_names(json_object *info, struct nic_slot *slots, char *why,
                                    size_t len)
{
    for (size_t i = 0; i < json_object_array_length(info); i++) {
        json_object *e = json_object_array_get_idx(info, i);
        const char *name = fb_json_get_string(e, "birthName");
        if (name == NULL) {
            snprintf(why, len, "%s entry %zu has no birthName", NIC_INFO, i);
            return NODE_FAIL;
        }
        char *end = NULL;
        long k = strncmp(name, "eth", 3) == 0 ? strtol(name + 3, &end, 10) : -1;
        if (end == NULL || *end != '\0' || end == name + 3 || k < 0 || k > FB_GKE_GPU_NICS) {
            snprintf(why, len, "%s is beyond eth0..eth%d: a gVNIC or extra network took a GPU "
                               "NIC slot", name, FB_GKE_GPU_NICS);
            return NODE_FAIL;
        }
        if (slots[k].seen) {
            snprintf(why, len, "%s listed twice in %s", name, NIC_INFO);
            return NODE_FAIL;
        }
        slots[k].seen = true;
        slots[k].ip = fb_json_get_string(e, "birthIP");
    }
    size_t mapped = 0, used = 0;
    char missing[64] = "";
    for (int k = 1; k <= FB_GKE_GPU_NICS; k++) {
        if (slots[k].seen)
            mapped++;
        else
            fb_strbuf_append(missing, sizeof missing, &used, "%seth%d", used ? ", " : "", k);
    }
    if (mapped < FB_GKE_GPU_NICS) {
        snprintf(why, len, "%zu of eth1..eth%d mapped, missing %s: a GPU NIC is not attached "
                           "(gVNIC displacement)", mapped, FB_GKE_GPU_NICS, missing);
        return NODE_FAIL;
    }
    return NODE_OK;
}

/* Each GPU NIC's birth IP must be on a gpu-nic Network per north-interfaces. */
static enum node_result check_join(json_object *north, const struct nic_slot *slots, char *why,
                                   size_t len)
{
    for (int k = 1; k <= FB_GKE_GPU_NICS; k++) {
        if (slots[k].ip == NULL) {
            snprintf(why, len, "eth%d has no birthIP to join with %s", k, NORTH_IFS);
            return NODE_UNVERIFIED;
        }
        const char *network = NULL;
        for (size_t i = 0; i < json_object_array_length(north) && network == NULL; i++) {
            json_object *e = json_object_array_get_idx(north, i);
            const char *ip = fb_json_get_string(e, "ipAddress");
            if (ip && strcmp(ip, slots[k].ip) == 0)
                network = fb_json_get_string(e, "network");
        }
        if (network == NULL) {
            snprintf(why, len, "eth%d (%s) is not in %s", k, slots[k].ip, NORTH_IFS);
            return NODE_UNVERIFIED;
        }
        if (!fb_cluster_is_gpu_nic_network(network)) {
            snprintf(why, len, "eth%d (%s) is on Network '%s', not a gpu-nic Network: a gVNIC "
                               "took a GPU NIC slot", k, slots[k].ip, network);
            return NODE_FAIL;
        }
    }
    return NODE_OK;
}

static enum node_result verify_node(json_object *node, char *why, size_t len)
{
    const char *info_text = fb_kube_annotation(node, NIC_INFO);
    if (info_text == NULL) {
        snprintf(why, len, "no %s annotation", NIC_INFO);
        return NODE_UNVERIFIED;
    }
    const char *perr = NULL;
    json_object *info = parse_array(info_text, &perr);
    if (info == NULL) {
        snprintf(why, len, "%s annotation unparseable (%s)", NIC_INFO, perr);
        return NODE_FAIL;
    }
    struct nic_slot slots[FB_GKE_GPU_NICS + 1];
    memset(slots, 0, sizeof slots);
    enum node_result r = check_names(info, slots, why, len);
    const char *north_text = fb_kube_annotation(node, NORTH_IFS);
    if (r == NODE_OK && north_text == NULL) {
        snprintf(why, len, "eth1..eth%d mapped, but no %s annotation to check their Networks",
                 FB_GKE_GPU_NICS, NORTH_IFS);
        r = NODE_UNVERIFIED;
    } else if (r == NODE_OK) {
        json_object *north = parse_array(north_text, &perr);
        if (north == NULL) {
            snprintf(why, len, "%s annotation unparseable (%s)", NORTH_IFS, perr);
            r = NODE_FAIL;
        } else {
            r = check_join(north, slots, why, len);
            json_object_put(north);
        }
    }
    json_object_put(info); /* slots point into it until here */
    return r;
}

void fb_cluster_check_nic_info(const struct fb_cluster_ctx *ctx, struct fb_check *c)
{
    json_object *items = fb_kube_items(ctx->data->nodes);
    size_t total = 0, ok = 0, unverified = 0, failed = 0;
    const char *unverified_names[FB_CHECK_CULPRITS_MAX];
    char fails[FB_CHECK_TEXT_MAX], unver[FB_CHECK_TEXT_MAX];
    size_t fu = 0, uu = 0;
    fails[0] = unver[0] = '\0';
    for (size_t i = 0; items && i < json_object_array_length(items); i++) {
        json_object *node = json_object_array_get_idx(items, i);
        if (!fb_cluster_is_tcpxo_node(node))
            continue;
        total++;
        char why[384];
        switch (verify_node(node, why, sizeof why)) {
        case NODE_OK:
            ok++;
            break;
        case NODE_UNVERIFIED:
            if (unverified < FB_CHECK_CULPRITS_MAX)
                unverified_names[unverified] = fb_kube_name(node);
            unverified++;
            fb_strbuf_append(unver, sizeof unver, &uu, "%s%s: %s", uu ? "; " : "",
                             fb_kube_name(node), why);
            break;
        case NODE_FAIL:
            failed++;
            fb_strbuf_append(fails, sizeof fails, &fu, "%s%s: %s", fu ? "; " : "",
                             fb_kube_name(node), why);
            fb_check_culprit(c, "%s", fb_kube_name(node));
            break;
        }
    }
    if (total == 0) {
        fb_check_set(c, FB_CHECK_SKIP, "no %s node (label node.kubernetes.io/instance-type)",
                     FB_GKE_TCPXO_MACHINE);
        return;
    }
    if (failed > 0) {
        fb_check_set(c, FB_CHECK_FAIL, "%zu of %zu %s nodes fail: %s", failed, total,
                     FB_GKE_TCPXO_MACHINE, fails);
        fb_check_fix(c, "provision the node pool with exactly the eight GPU NIC networks as "
                        "additional node networks (no gVNIC network among them) and recreate "
                        "the nodes");
        if (unverified)
            fb_check_note(c, "%zu more unverified", unverified);
        return;
    }
    if (unverified > 0) {
        for (size_t i = 0; i < unverified && i < FB_CHECK_CULPRITS_MAX; i++)
            fb_check_culprit(c, "%s", unverified_names[i]);
        fb_check_set(c, FB_CHECK_WARN, "%zu of %zu %s nodes verified; unverified: %s", ok, total,
                     FB_GKE_TCPXO_MACHINE, unver);
        fb_check_fix(c, "read the annotations on the node (kubectl get node NAME -o yaml); GKE "
                        "writes %s and %s on multi-network nodes", NIC_INFO, NORTH_IFS);
        return;
    }
    fb_check_set(c, FB_CHECK_OK, "%zu of %zu %s nodes map eth1..eth%d onto gpu-nic Networks",
                 ok, total, FB_GKE_TCPXO_MACHINE, FB_GKE_GPU_NICS);
}
