/* The operators that wire an RDMA fabric: the SR-IOV Network Operator's
 * per-node state (synced, VFs allocated) and the NVIDIA Network Operator's
 * NicClusterPolicy (MOFED, device plugins, CNI pieces ready). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonio.h"
#include "doctor/cluster.h"

const char *fb_cluster_string_at(json_object *obj, const char *const *keys)
{
    json_object *v = fb_kube_path(obj, keys);
    return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

const char *fb_cluster_pod_node(json_object *pod)
{
    static const char *const keys[] = {"spec", "nodeName", NULL};
    return fb_cluster_string_at(pod, keys);
}

void fb_cluster_who(json_object *obj, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s", fb_kube_namespace(obj), fb_kube_name(obj));
}

static json_object *array_at(json_object *obj, const char *const *keys)
{
    json_object *a = fb_kube_path(obj, keys);
    return a && json_object_is_type(a, json_type_array) ? a : NULL;
}

/* ---- sriov-node-states ---- */

#define SRIOV_DRAIN "kubectl drain %s --ignore-daemonsets"

/* The VFs a status interface shows: its Vfs list, else its numVfs. */
static long long status_vfs(json_object *iface)
{
    json_object *vfs = NULL;
    if (json_object_object_get_ex(iface, "Vfs", &vfs) && json_object_is_type(vfs, json_type_array))
        return (long long)json_object_array_length(vfs);
    json_object *n = NULL;
    return json_object_object_get_ex(iface, "numVfs", &n) ? fb_cluster_quantity(n) : 0;
}

static json_object *status_iface(json_object *state, const char *pci)
{
    static const char *const keys[] = {"status", "interfaces", NULL};
    json_object *ifs = array_at(state, keys);
    for (size_t i = 0; ifs && pci && i < json_object_array_length(ifs); i++) {
        const char *p = fb_json_get_string(json_object_array_get_idx(ifs, i), "pciAddress");
        if (p && strcmp(p, pci) == 0)
            return json_object_array_get_idx(ifs, i);
    }
    return NULL;
}

struct vf_tally {
    long long asked, have;
    size_t pfs;
    char short_of[384]; /* "ens5f0 0000:86:00.0 2 of 6" ... */
    size_t used;
};

/* Each spec interface's numVfs against the status interface at its PCI
 * address. */
static void tally_vfs(json_object *state, struct vf_tally *t)
{
    static const char *const keys[] = {"spec", "interfaces", NULL};
    json_object *ifs = array_at(state, keys);
    memset(t, 0, sizeof *t);
    for (size_t i = 0; ifs && i < json_object_array_length(ifs); i++) {
        json_object *want = json_object_array_get_idx(ifs, i), *n = NULL;
        long long asked = json_object_object_get_ex(want, "numVfs", &n) ? fb_cluster_quantity(n) : 0;
        if (asked <= 0)
            continue;
        const char *pci = fb_json_get_string(want, "pciAddress");
        const char *name = fb_json_get_string(want, "name");
        json_object *got = status_iface(state, pci);
        long long have = got ? status_vfs(got) : 0;
        t->asked += asked;
        t->have += have < asked ? have : asked;
        t->pfs++;
        if (have < asked)
            fb_strbuf_append(t->short_of, sizeof t->short_of, &t->used, "%s%s %s %lld of %lld VFs",
                             t->used ? ", " : "", name ? name : "?", pci ? pci : "?", have, asked);
    }
}

/* One node's state as a verdict and one line; *drain when draining the
 * node lets the config daemon finish, *failed on syncStatus Failed. */
static enum fb_check_outcome judge_sriov_node(json_object *state, char *line, size_t len,
                                              bool *drain, bool *failed)
{
    static const char *const sync_key[] = {"status", "syncStatus", NULL};
    static const char *const err_key[] = {"status", "lastSyncError", NULL};
    const char *sync = fb_cluster_string_at(state, sync_key);
    const char *error = fb_cluster_string_at(state, err_key);
    struct vf_tally t;
    tally_vfs(state, &t);
    const char *node = fb_kube_name(state);
    *failed = sync && strcmp(sync, "Failed") == 0;
    *drain = !*failed && (t.used > 0 || (sync && strcmp(sync, "InProgress") == 0));
    if (*failed) {
        snprintf(line, len, "%s: sync Failed: %s", node, error && error[0] ? error : "no lastSyncError");
        return FB_CHECK_FAIL;
    }
    if (t.used > 0 && sync && strcmp(sync, "InProgress") == 0) {
        snprintf(line, len, "%s: still applying (InProgress): %s", node, t.short_of);
        return FB_CHECK_WARN;
    }
    if (t.used > 0) {
        snprintf(line, len, "%s: syncStatus %s but %s: VF allocation stuck", node,
                 sync ? sync : "absent", t.short_of);
        return FB_CHECK_FAIL;
    }
    if (sync && strcmp(sync, "InProgress") == 0) {
        snprintf(line, len, "%s: still applying (InProgress), %lld of %lld VFs present", node,
                 t.have, t.asked);
        return FB_CHECK_WARN;
    }
    if (sync == NULL || strcmp(sync, "Succeeded") != 0) {
        snprintf(line, len, "%s: syncStatus %s: sync unverified (%lld of %lld VFs on %zu PFs "
                 "present)", node, sync ? sync : "absent", t.have, t.asked, t.pfs);
        return FB_CHECK_WARN;
    }
    snprintf(line, len, "%s: Succeeded, %lld VFs on %zu PFs", node, t.have, t.pfs);
    return FB_CHECK_OK;
}

void fb_cluster_check_sriov_node_states(const struct fb_cluster_ctx *ctx, struct fb_check *c)
{
    json_object *items = fb_kube_items(ctx->data->sriov_states);
    size_t n = items ? json_object_array_length(items) : 0;
    if (n == 0) {
        const char *note = fb_kube_note(ctx->data, FB_KUBE_SRIOV_STATES);
        fb_check_set(c, FB_CHECK_SKIP, "no SriovNetworkNodeState: no SR-IOV Network Operator%s%s",
                     note[0] ? "; " : "", note);
        return;
    }
    char bad[FB_CHECK_TEXT_MAX] = "", good[FB_CHECK_TEXT_MAX] = "", drain[FB_CHECK_TEXT_MAX] = "";
    size_t bu = 0, gu = 0, du = 0, nbad = 0;
    enum fb_check_outcome worst = FB_CHECK_OK;
    bool stuck = false, failed = false;
    for (size_t i = 0; i < n; i++) {
        json_object *state = json_object_array_get_idx(items, i);
        char line[640];
        bool drain_it = false, node_failed = false;
        enum fb_check_outcome v = judge_sriov_node(state, line, sizeof line, &drain_it,
                                                   &node_failed);
        if (v == FB_CHECK_OK) {
            fb_strbuf_append(good, sizeof good, &gu, "%s%s", gu ? "; " : "", line);
            continue;
        }
        nbad++;
        worst = v > worst ? v : worst;
        fb_strbuf_append(bad, sizeof bad, &bu, "%s%s", bu ? "; " : "", line);
        fb_check_culprit(c, "%s", fb_kube_name(state));
        failed |= node_failed;
        if (drain_it) {
            stuck = true;
            fb_strbuf_append(drain, sizeof drain, &du, "%s" SRIOV_DRAIN, du ? "; " : "",
                             fb_kube_name(state));
        }
    }
    if (worst == FB_CHECK_OK) {
        fb_check_set(c, FB_CHECK_OK, "%zu nodes synced with their VFs: %s", n, good);
        return;
    }
    fb_check_set(c, worst, "%zu of %zu nodes: %s", nbad, n, bad);
    if (stuck)
        fb_check_fix(c, "drain the node so the sriov-config-daemon can apply the VFs (%s), then "
                        "kubectl uncordon it; if it stays stuck, read the daemon's log%s", drain,
                     failed ? "; for Failed nodes fix what lastSyncError names" : "");
    else if (failed)
        fb_check_fix(c, "fix what lastSyncError names (the SriovNetworkNodePolicy: numVfs, "
                        "deviceType, PF name), then read the sriov-config-daemon log on the node");
    else
        fb_check_fix(c, "kubectl get sriovnetworknodestates -A -o json with status.syncStatus "
                        "(the capture lacks it) to confirm the sync");
}

/* ---- nic-cluster-policy ---- */

/* What a Network Operator component not ready leaves undone. */
static const char *component_meaning(const char *state)
{
    static const struct {
        const char *name, *meaning;
    } known[] = {
        {"state-OFED", "MOFED driver not loaded on some nodes"},
        {"state-RDMA-device-plugin", "RDMA shared device plugin down: no rdma/* resources"},
        {"state-SRIOV-device-plugin", "SR-IOV device plugin down: no VF resources"},
        {"state-multus-cni", "Multus down: no secondary networks in pods"},
        {"state-container-networking-plugins", "CNI plugins (macvlan, ipvlan, host-device) missing"},
        {"state-ipoib-cni", "IPoIB CNI missing"},
        {"state-ib-kubernetes", "ib-kubernetes down: no InfiniBand PKeys for pods"},
        {"state-nv-ipam-cni", "nv-ipam down: secondary interfaces get no address"},
        {"state-whereabouts-cni", "whereabouts IPAM missing"},
        {"state-nic-feature-discovery", "NIC feature labels missing"},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(state, known[i].name) == 0)
            return known[i].meaning;
    return NULL;
}

struct policy_tally {
    size_t ready, ignored, bad;
    char ready_names[512], bad_text[640];
    size_t ru, bu;
};

static void tally_components(json_object *policy, struct policy_tally *t, struct fb_check *c)
{
    static const char *const keys[] = {"status", "appliedStates", NULL};
    json_object *states = array_at(policy, keys);
    for (size_t i = 0; states && i < json_object_array_length(states); i++) {
        json_object *s = json_object_array_get_idx(states, i);
        const char *name = fb_json_get_string(s, "name");
        const char *state = fb_json_get_string(s, "state");
        name = name ? name : "(unnamed)";
        state = state ? state : "absent";
        if (strcmp(state, "ready") == 0) {
            fb_strbuf_append(t->ready_names, sizeof t->ready_names, &t->ru, "%s%s",
                             t->ready++ ? ", " : "", name);
        } else if (strcmp(state, "ignore") == 0) {
            t->ignored++;
        } else {
            const char *meaning = component_meaning(name);
            const char *msg = fb_json_get_string(s, "message");
            fb_strbuf_append(t->bad_text, sizeof t->bad_text, &t->bu, "%s%s %s%s%s%s%s",
                             t->bad++ ? "; " : "", name, state, meaning ? ": " : "",
                             meaning ? meaning : "", msg && msg[0] ? ": " : "",
                             msg && msg[0] ? msg : "");
            fb_check_culprit(c, "%s", name);
        }
    }
}

void fb_cluster_check_nic_cluster_policy(const struct fb_cluster_ctx *ctx, struct fb_check *c)
{
    json_object *items = fb_kube_items(ctx->data->nic_policies);
    size_t n = items ? json_object_array_length(items) : 0;
    if (n == 0) {
        const char *note = fb_kube_note(ctx->data, FB_KUBE_NIC_POLICIES);
        fb_check_set(c, FB_CHECK_SKIP, "no NicClusterPolicy: no NVIDIA Network Operator%s%s",
                     note[0] ? "; " : "", note);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        json_object *policy = json_object_array_get_idx(items, i);
        static const char *const state_key[] = {"status", "state", NULL};
        const char *state = fb_cluster_string_at(policy, state_key);
        struct policy_tally t;
        memset(&t, 0, sizeof t);
        tally_components(policy, &t, c);
        const char *name = fb_kube_name(policy);
        if (t.bad > 0) {
            fb_check_set(c, FB_CHECK_FAIL, "%s state %s: %s", name, state ? state : "absent",
                         t.bad_text);
            fb_check_fix(c, "kubectl -n nvidia-network-operator get pods: the failing "
                            "component's pods (mofed-* for state-OFED) name the cause in their "
                            "events and logs; fix them, the policy turns ready by itself");
        } else if (state == NULL || strcmp(state, "ready") != 0) {
            fb_check_set(c, FB_CHECK_WARN, "%s state %s with no component failing: the "
                         "operator is still reconciling or has not reported", name,
                         state ? state : "absent");
            fb_check_culprit(c, "%s", name);
            fb_check_fix(c, "wait for the operator, then check again; if it stays, read the "
                            "network-operator controller's log");
        } else {
            fb_check_set(c, FB_CHECK_OK, "%s ready: %zu components ready (%s), %zu ignored",
                         name, t.ready, t.ready_names, t.ignored);
        }
    }
}
