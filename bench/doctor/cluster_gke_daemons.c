/* What GKE runs beside the workload: the NCCL plugin installer and the
 * NRI device injector on every GPU node, and the RxDM sidecars' own word
 * on the GPUs they found (their logs). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonio.h"
#include "doctor/cluster.h"

#define NRI_INJECTOR "nri-device-injector"
#define MANIFESTS "GoogleCloudPlatform/container-engine-accelerators"

static bool pod_ready(json_object *pod)
{
    const char *why = NULL;
    const char *ready = fb_cluster_condition(pod, "Ready", &why, NULL);
    return ready && strcmp(ready, "True") == 0;
}

static bool owned_by_daemonset(json_object *pod, const char *ds)
{
    static const char *const keys[] = {"metadata", "ownerReferences", NULL};
    json_object *refs = fb_kube_path(pod, keys);
    for (size_t i = 0; refs && json_object_is_type(refs, json_type_array) &&
                       i < json_object_array_length(refs); i++) {
        json_object *r = json_object_array_get_idx(refs, i);
        const char *kind = fb_json_get_string(r, "kind"), *name = fb_json_get_string(r, "name");
        if (kind && name && strcmp(kind, "DaemonSet") == 0 && strcmp(name, ds) == 0)
            return true;
    }
    return false;
}

static const char *pod_node(json_object *pod)
{
    static const char *const keys[] = {"spec", "nodeName", NULL};
    json_object *n = fb_kube_path(pod, keys);
    return n ? json_object_get_string(n) : "";
}

/* "Ready", "not Ready", or NULL when the DaemonSet has no pod on the node. */
static const char *ds_pod_state(const struct fb_cluster_ctx *ctx, const char *ds,
                                const char *node)
{
    json_object *pods = fb_kube_items(ctx->data->pods);
    const char *state = NULL;
    for (size_t i = 0; pods && i < json_object_array_length(pods); i++) {
        json_object *pod = json_object_array_get_idx(pods, i);
        if (!owned_by_daemonset(pod, ds) || strcmp(pod_node(pod), node) != 0)
            continue;
        if (pod_ready(pod))
            return "Ready";
        state = "not Ready";
    }
    return state;
}

static json_object *find_daemonset(const struct fb_cluster_ctx *ctx, const char *name)
{
    json_object *items = fb_kube_items(ctx->data->daemonsets);
    for (size_t i = 0; items && i < json_object_array_length(items); i++) {
        json_object *ds = json_object_array_get_idx(items, i);
        if (strcmp(fb_kube_name(ds), name) == 0)
            return ds;
    }
    return NULL;
}

static long long status_number(json_object *ds, const char *field)
{
    const char *const keys[] = {"status", field, NULL};
    json_object *v = fb_kube_path(ds, keys);
    return v ? json_object_get_int64(v) : 0;
}

struct ds_need {
    const char *name, *manifest;
};

/* The DaemonSets a node's family needs: its installer, and the NRI
 * injector where a sidecar takes its devices by annotation. */
static size_t needs_of(const struct fb_gke_family *fam, struct ds_need *out)
{
    size_t n = 0;
    out[n++] = (struct ds_need){fam->installer, fam->installer_manifest};
    if (fam->nri)
        out[n++] = (struct ds_need){NRI_INJECTOR, "nri_device_injector/nri-device-injector.yaml"};
    return n;
}

struct ds_tally {
    size_t nodes, checked, lacking;
    char fails[FB_CHECK_TEXT_MAX], fix[FB_CHECK_TEXT_MAX], names[512];
    size_t fu, xu, nu;
};

static void judge_node_ds(const struct fb_cluster_ctx *ctx, json_object *node,
                          const struct ds_need *need, struct ds_tally *t, struct fb_check *c)
{
    const char *name = fb_kube_name(node);
    const char *state = ds_pod_state(ctx, need->name, name);
    t->checked++;
    if (state && strcmp(state, "Ready") == 0)
        return;
    bool listed = find_daemonset(ctx, need->name) != NULL;
    bool known = fb_kube_note(ctx->data, FB_KUBE_DAEMONSETS)[0] == '\0';
    t->lacking++;
    fb_strbuf_append(t->fails, sizeof t->fails, &t->fu, "%s%s: %s %s", t->fu ? "; " : "", name,
                     need->name, state ? "pod not Ready" :
                     (known && !listed) ? "DaemonSet absent" : "no pod");
    fb_check_culprit(c, "%s", name);
    if (strstr(t->names, need->name) == NULL) {
        fb_strbuf_append(t->names, sizeof t->names, &t->nu, "%s%s", t->nu ? ", " : "",
                         need->name);
        fb_strbuf_append(t->fix, sizeof t->fix, &t->xu, "%s%s: kubectl apply -f the %s "
                         "manifest %s, then kubectl -n kube-system describe pod on %s",
                         t->xu ? "; " : "", need->name, MANIFESTS, need->manifest, name);
    }
}

/* numberReady below desiredNumberScheduled elsewhere (nodes outside the
 * GPU pools, or not listed) is worth a word, not a failure. */
static void note_short_daemonsets(const struct fb_cluster_ctx *ctx, const struct ds_tally *t,
                                  struct fb_check *c, const char *wanted)
{
    json_object *items = fb_kube_items(ctx->data->daemonsets);
    for (size_t i = 0; items && i < json_object_array_length(items); i++) {
        json_object *ds = json_object_array_get_idx(items, i);
        long long ready = status_number(ds, "numberReady");
        long long desired = status_number(ds, "desiredNumberScheduled");
        if (strstr(wanted, fb_kube_name(ds)) != NULL && ready < desired && t->lacking == 0) {
            fb_check_set(c, FB_CHECK_WARN, "every GPU node has its DaemonSet pods Ready, but "
                         "%s/%s has %lld of %lld Ready", fb_kube_namespace(ds), fb_kube_name(ds),
                         ready, desired);
            fb_check_fix(c, "kubectl -n %s get pods -o wide | grep %s: a GPU node this list "
                            "does not hold lacks it", fb_kube_namespace(ds), fb_kube_name(ds));
        }
    }
}

static size_t count_gke_gpu_nodes(json_object *nodes)
{
    size_t n = 0;
    for (size_t i = 0; nodes && i < json_object_array_length(nodes); i++)
        n += fb_gke_family_of_node(json_object_array_get_idx(nodes, i)) != NULL;
    return n;
}

/* The DaemonSets' pods run in kube-system: a pods list without that
 * namespace (saved without -A, or from a namespace holding nothing)
 * cannot show them, so their absence proves nothing. */
static bool skip_without_kube_system(const struct fb_cluster_ctx *ctx, size_t gpu_nodes,
                                     struct fb_check *c)
{
    char why[256], cmd[600];
    if (!fb_kube_pods_partial(ctx->data, "kube-system", why, sizeof why))
        return false;
    fb_kube_save_command(ctx->data, FB_KUBE_PODS, cmd, sizeof cmd);
    fb_check_set(c, FB_CHECK_SKIP, "%zu GKE GPU node%s, but %s: it proves nothing about the "
                 "node DaemonSets, whose pods run in kube-system", gpu_nodes,
                 gpu_nodes == 1 ? "" : "s", why);
    fb_check_fix(c, "save the pods of every namespace: %s", cmd);
    return true;
}

void fb_cluster_check_gke_daemonsets(const struct fb_cluster_ctx *ctx, struct fb_check *c)
{
    json_object *nodes = fb_kube_items(ctx->data->nodes);
    size_t gpu_nodes = count_gke_gpu_nodes(nodes);
    if (gpu_nodes > 0 && skip_without_kube_system(ctx, gpu_nodes, c))
        return;
    struct ds_tally t;
    memset(&t, 0, sizeof t);
    char wanted[256] = "";
    size_t wu = 0;
    for (size_t i = 0; nodes && i < json_object_array_length(nodes); i++) {
        json_object *node = json_object_array_get_idx(nodes, i);
        const struct fb_gke_family *fam = fb_gke_family_of_node(node);
        if (fam == NULL)
            continue;
        t.nodes++;
        struct ds_need needs[2];
        size_t n = needs_of(fam, needs);
        for (size_t k = 0; k < n; k++) {
            judge_node_ds(ctx, node, &needs[k], &t, c);
            if (strstr(wanted, needs[k].name) == NULL)
                fb_strbuf_append(wanted, sizeof wanted, &wu, "%s%s", wu ? ", " : "",
                                 needs[k].name);
        }
    }
    if (t.nodes == 0) {
        char families[256];
        fb_gke_family_names(families, sizeof families);
        fb_check_set(c, FB_CHECK_SKIP, "no GKE GPU node (%s)", families);
        return;
    }
    if (t.lacking > 0) {
        fb_check_set(c, FB_CHECK_FAIL, "%zu of %zu node DaemonSet pods missing or not Ready: %s",
                     t.lacking, t.checked, t.fails);
        fb_check_fix(c, "%s", t.fix);
        return;
    }
    fb_check_set(c, FB_CHECK_OK, "%s Ready on all %zu GKE GPU nodes", wanted, t.nodes);
    if (fb_kube_note(ctx->data, FB_KUBE_DAEMONSETS)[0])
        fb_check_note(c, "judged from the pods: %s", fb_kube_note(ctx->data, FB_KUBE_DAEMONSETS));
    note_short_daemonsets(ctx, &t, c, wanted);
}

/* ---- the RxDM sidecars' logs ---- */

/* RxDM (fastrak_gpumem_manager) stops when the GPUs it counts in the PCI
 * tree differ from what it expects: "Number of GPUs detected in the PCI
 * tree N ...". The first number after the phrase is the count it found. */
#define GPU_COUNT_PHRASE "Number of GPUs detected"

static bool find_gpu_count(const char *log, long *count, char *line, size_t len)
{
    const char *hit = strstr(log, GPU_COUNT_PHRASE);
    if (hit == NULL)
        return false;
    const char *start = hit;
    while (start > log && start[-1] != '\n')
        start--;
    const char *p = hit + strlen(GPU_COUNT_PHRASE);
    while (*p && *p != '\n' && !isdigit((unsigned char)*p))
        p++;
    if (!isdigit((unsigned char)*p))
        return false;
    *count = strtol(p, NULL, 10);
    size_t n = strcspn(start, "\n");
    snprintf(line, len, "%.*s", (int)(n < 240 ? n : 240), start);
    return true;
}

struct log_tally {
    size_t pods, read, failed, displaced, nosys;
    char fails[FB_CHECK_TEXT_MAX], unread[FB_CHECK_TEXT_MAX];
    size_t fu, uu;
};

static void judge_log(const struct fb_cluster_ctx *ctx, json_object *pod, const char *ctr,
                      struct log_tally *t, struct fb_check *c)
{
    const char *ns = fb_kube_namespace(pod), *name = fb_kube_name(pod);
    const char *log = fb_kube_log(ctx->data, ns, name, ctr);
    t->pods++;
    if (log == NULL) {
        fb_strbuf_append(t->unread, sizeof t->unread, &t->uu, "%s%s/%s: %s", t->uu ? "; " : "",
                         ns, name, fb_kube_log_error(ctx->data, ns, name, ctr));
        return;
    }
    t->read++;
    long count = -1;
    char line[256];
    if (!find_gpu_count(log, &count, line, sizeof line))
        return;
    t->failed++;
    if (count == 0)
        t->nosys++;
    else
        t->displaced++;
    fb_strbuf_append(t->fails, sizeof t->fails, &t->fu, "%s%s/%s %s found %ld GPUs (%s): \"%s\"",
                     t->fu ? "; " : "", ns, name, ctr, count,
                     count == 0 ? "no PCI tree: /sys not mounted at /hostsysfs"
                                : "a GPU's PCI slot taken", line);
    fb_check_culprit(c, "%s/%s", ns, name);
}

static bool is_running(json_object *pod)
{
    static const char *const keys[] = {"status", "phase", NULL};
    json_object *phase = fb_kube_path(pod, keys);
    return phase && strcmp(json_object_get_string(phase), "Running") == 0;
}

void fb_cluster_check_rxdm_logs(const struct fb_cluster_ctx *ctx, struct fb_check *c)
{
    json_object *pods = fb_kube_items(ctx->data->pods);
    struct log_tally t;
    memset(&t, 0, sizeof t);
    for (size_t i = 0; pods && i < json_object_array_length(pods); i++) {
        json_object *pod = json_object_array_get_idx(pods, i);
        const char *ctr = fb_kube_rxdm_container(pod);
        if (ctr && is_running(pod))
            judge_log(ctx, pod, ctr, &t, c);
    }
    if (t.pods == 0) {
        fb_check_set(c, FB_CHECK_SKIP, "no running pod with an RxDM sidecar (tcpxo-daemon, "
                                       "tcpx-daemon, tcpgpudmarxd image)");
        return;
    }
    if (t.failed > 0) {
        fb_check_set(c, FB_CHECK_FAIL, "%zu of %zu RxDM sidecars stopped on their GPU count: %s",
                     t.failed, t.pods, t.fails);
        char fix[FB_CHECK_TEXT_MAX];
        size_t used = 0;
        fix[0] = '\0';
        if (t.displaced)
            fb_strbuf_append(fix, sizeof fix, &used, "fewer GPUs than the node has: provision "
                             "the node pool with exactly the eight GPU NIC networks as "
                             "additional node networks (no gVNIC among them) and recreate the "
                             "nodes; a sidecar without hostNetwork can also see too few");
        if (t.nosys)
            fb_strbuf_append(fix, sizeof fix, &used, "%s0 GPUs: give the sidecar its hostPath "
                             "mounts /sys -> /hostsysfs and /proc/sys -> /hostprocsysfs (see "
                             "manifests/overlays/gke-tcpxo)", used ? "; " : "");
        fb_check_fix(c, "%s", fix);
        if (t.uu)
            fb_check_note(c, "unverified: %s", t.unread);
        return;
    }
    if (t.read == 0) {
        fb_check_set(c, FB_CHECK_SKIP, "%zu RxDM sidecars, no log read, unverified: %s", t.pods,
                     t.unread);
        return;
    }
    if (t.read < t.pods) {
        fb_check_set(c, FB_CHECK_WARN, "%zu of %zu RxDM logs read, clean; unverified: %s", t.read,
                     t.pods, t.unread);
        fb_check_fix(c, "read them with kubectl logs -n NS POD -c CONTAINER, or save them under "
                        "DIR/logs/NS.POD.CONTAINER.log for --from DIR");
        return;
    }
    fb_check_set(c, FB_CHECK_OK, "%zu RxDM logs read: none reports a GPU count mismatch",
                 t.pods);
}
