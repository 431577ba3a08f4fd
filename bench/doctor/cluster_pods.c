/* Worker pods: do they ask for the fabric their nodes offer, and do the
 * TCPXO pieces they run belong together. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor/cluster.h"

#define GPU_RESOURCE "nvidia.com/gpu"
#define POD_INTERFACES "networking.gke.io/interfaces"
#define PLUGIN_IMAGE "nccl-plugin-gpudirecttcpx"
#define DAEMON_IMAGE "tcpgpudmarxd"

/* Extended resources that carry RDMA or EFA into a pod. */
static bool is_fabric_resource(const char *name)
{
    static const char *const exact[] = {"vpc.amazonaws.com/efa", "nvidia.com/rdma_vf",
                                        "nvidia.com/rdma-vf", "nvidia.com/hostdev", NULL};
    for (int i = 0; exact[i]; i++)
        if (strcmp(name, exact[i]) == 0)
            return true;
    return strncmp(name, "rdma/", 5) == 0; /* rdma/hca_shared_devices_a, rdma/shared_ib */
}

static bool needs_ipc_lock(const char *resource)
{
    return strcmp(resource, "vpc.amazonaws.com/efa") != 0;
}

static long long quantity(json_object *v)
{
    if (v == NULL)
        return 0;
    if (json_object_is_type(v, json_type_int))
        return json_object_get_int64(v);
    return atoll(json_object_get_string(v));
}

static json_object *containers(json_object *pod, const char *which)
{
    const char *const keys[] = {"spec", which, NULL};
    json_object *arr = fb_kube_path(pod, keys);
    return arr && json_object_is_type(arr, json_type_array) ? arr : NULL;
}

/* The larger of a container's request and limit for a resource. */
static long long container_qty(json_object *ctr, const char *resource)
{
    const char *const req[] = {"resources", "requests", resource, NULL};
    const char *const lim[] = {"resources", "limits", resource, NULL};
    long long r = quantity(fb_kube_path(ctr, req)), l = quantity(fb_kube_path(ctr, lim));
    return r > l ? r : l;
}

static long long pod_qty(json_object *pod, const char *resource)
{
    json_object *ctrs = containers(pod, "containers");
    long long sum = 0;
    for (size_t i = 0; ctrs && i < json_object_array_length(ctrs); i++)
        sum += container_qty(json_object_array_get_idx(ctrs, i), resource);
    return sum;
}

static long long node_allocatable(json_object *node, const char *resource)
{
    const char *const keys[] = {"status", "allocatable", resource, NULL};
    return quantity(fb_kube_path(node, keys));
}

static bool pod_finished(json_object *pod)
{
    static const char *const keys[] = {"status", "phase", NULL};
    json_object *phase = fb_kube_path(pod, keys);
    const char *p = phase ? json_object_get_string(phase) : "";
    return strcmp(p, "Succeeded") == 0 || strcmp(p, "Failed") == 0;
}

static const char *container_name(json_object *ctr)
{
    json_object *n = NULL;
    return json_object_object_get_ex(ctr, "name", &n) ? json_object_get_string(n) : "(unnamed)";
}

static bool container_has_ipc_lock(json_object *ctr)
{
    static const char *const priv[] = {"securityContext", "privileged", NULL};
    static const char *const add[] = {"securityContext", "capabilities", "add", NULL};
    json_object *p = fb_kube_path(ctr, priv);
    if (p && json_object_get_boolean(p))
        return true;
    json_object *caps = fb_kube_path(ctr, add);
    for (size_t i = 0; caps && i < json_object_array_length(caps); i++) {
        const char *cap = json_object_get_string(json_object_array_get_idx(caps, i));
        if (strcmp(cap, "IPC_LOCK") == 0 || strcmp(cap, "CAP_IPC_LOCK") == 0)
            return true;
    }
    return false;
}

/* Image references in all containers and init containers of a pod. */
static const char *find_image(json_object *pod, const char *needle)
{
    static const char *const which[] = {"containers", "initContainers"};
    for (int w = 0; w < 2; w++) {
        json_object *ctrs = containers(pod, which[w]);
        for (size_t i = 0; ctrs && i < json_object_array_length(ctrs); i++) {
            json_object *img = NULL;
            if (json_object_object_get_ex(json_object_array_get_idx(ctrs, i), "image", &img) &&
                strstr(json_object_get_string(img), needle) != NULL)
                return json_object_get_string(img);
        }
    }
    return NULL;
}

/* The fabric resources a node offers, as a comma list into buf. */
static size_t offered(json_object *node, char *buf, size_t len)
{
    static const char *const keys[] = {"status", "allocatable", NULL};
    json_object *alloc = fb_kube_path(node, keys);
    size_t used = 0, n = 0;
    buf[0] = '\0';
    if (alloc == NULL || !json_object_is_type(alloc, json_type_object))
        return 0;
    json_object_object_foreach(alloc, key, val) {
        if (is_fabric_resource(key) && quantity(val) > 0) {
            fb_strbuf_append(buf, len, &used, "%s%s", n++ ? "," : "", key);
        }
    }
    return n;
}

/* A pod's worst finding, kept as a check keeps its own (fb_check_set's rule). */
struct pod_verdict {
    enum fb_check_outcome v;
    char why[384];
};

static void pod_set(struct pod_verdict *pv, enum fb_check_outcome v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void pod_set(struct pod_verdict *pv, enum fb_check_outcome v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fb_outcome_keep_worst(&pv->v, pv->why, sizeof pv->why, v, fmt, ap);
    va_end(ap);
}

static void judge_tcpxo_pod(json_object *pod, struct pod_verdict *pv)
{
    const char *text = fb_kube_annotation(pod, POD_INTERFACES);
    if (text == NULL) {
        pod_set(pv, FB_CHECK_FAIL, "no %s annotation: it gets eth0 only, so TCP", POD_INTERFACES);
        return;
    }
    json_object *ifs = json_tokener_parse(text);
    if (ifs == NULL || !json_object_is_type(ifs, json_type_array)) {
        pod_set(pv, FB_CHECK_FAIL, "%s annotation is not a JSON array", POD_INTERFACES);
        json_object_put(ifs);
        return;
    }
    bool mapped[FB_GKE_GPU_NICS + 1] = {false};
    for (size_t i = 0; i < json_object_array_length(ifs); i++) {
        json_object *e = json_object_array_get_idx(ifs, i), *n = NULL, *net = NULL;
        if (!json_object_object_get_ex(e, "interfaceName", &n) ||
            !json_object_object_get_ex(e, "network", &net))
            continue;
        const char *name = json_object_get_string(n);
        int k = strncmp(name, "eth", 3) == 0 ? atoi(name + 3) : 0;
        if (k >= 1 && k <= FB_GKE_GPU_NICS &&
            fb_cluster_is_gpu_nic_network(json_object_get_string(net)))
            mapped[k] = true;
    }
    json_object_put(ifs);
    char missing[64] = "";
    size_t used = 0, nmissing = 0;
    for (int k = 1; k <= FB_GKE_GPU_NICS; k++)
        if (!mapped[k]) {
            fb_strbuf_append(missing, sizeof missing, &used, "%seth%d", nmissing ? "," : "", k);
            nmissing++;
        }
    if (nmissing > 0)
        pod_set(pv, FB_CHECK_FAIL, "%s maps %zu of eth1..eth%d to gpu-nic Networks (missing %s)",
                POD_INTERFACES, FB_GKE_GPU_NICS - nmissing, FB_GKE_GPU_NICS, missing);
    if (find_image(pod, DAEMON_IMAGE) == NULL)
        pod_set(pv, FB_CHECK_FAIL, "no tcpxo-daemon sidecar (%s image)", DAEMON_IMAGE);
}

static void judge_rdma_pod(json_object *pod, json_object *node, const char *offer,
                           struct pod_verdict *pv)
{
    char list[256];
    snprintf(list, sizeof list, "%s", offer);
    const char *asked = NULL;
    for (char *save = NULL, *r = strtok_r(list, ",", &save); r; r = strtok_r(NULL, ",", &save))
        if (pod_qty(pod, r) > 0) {
            asked = r;
            break;
        }
    if (asked == NULL) {
        pod_set(pv, FB_CHECK_FAIL, "requests %s but none of %s offered by %s", GPU_RESOURCE,
                offer, node ? fb_kube_name(node) : "the GPU nodes");
        return;
    }
    long long want = pod_qty(pod, asked), have = node ? node_allocatable(node, asked) : 0;
    long long gpus = pod_qty(pod, GPU_RESOURCE);
    /* A pod that takes the whole node's GPUs should take its whole fabric:
     * EFA on p5 is 32 devices, and 4 of them is an eighth of the bandwidth. */
    if (node && gpus >= node_allocatable(node, GPU_RESOURCE) && want < have)
        pod_set(pv, FB_CHECK_WARN, "takes all %lld GPUs of %s but only %lld of its %lld %s", gpus,
                fb_kube_name(node), want, have, asked);
    if (!needs_ipc_lock(asked))
        return;
    json_object *ctrs = containers(pod, "containers");
    for (size_t i = 0; ctrs && i < json_object_array_length(ctrs); i++) {
        json_object *ctr = json_object_array_get_idx(ctrs, i);
        if (container_qty(ctr, GPU_RESOURCE) > 0 && !container_has_ipc_lock(ctr))
            pod_set(pv, FB_CHECK_WARN, "container %s uses RDMA without IPC_LOCK (or privileged)",
                    container_name(ctr));
    }
}

void fb_cluster_check_pod_fabric(const struct fb_cluster_ctx *ctx, struct fb_check *c)
{
    json_object *pods = fb_kube_items(ctx->data->pods);
    json_object *nodes = fb_kube_items(ctx->data->nodes);
    /* Fabric on offer anywhere, for pods not scheduled yet. */
    char any_offer[256] = "";
    for (size_t i = 0; nodes && i < json_object_array_length(nodes) && !any_offer[0]; i++) {
        json_object *node = json_object_array_get_idx(nodes, i);
        if (node_allocatable(node, GPU_RESOURCE) > 0)
            offered(node, any_offer, sizeof any_offer);
    }
    size_t gpu_pods = 0, bad = 0, warned = 0, bare = 0;
    char fails[FB_CHECK_TEXT_MAX], warns[FB_CHECK_TEXT_MAX];
    size_t fu = 0, wu = 0;
    fails[0] = warns[0] = '\0';
    for (size_t i = 0; pods && i < json_object_array_length(pods); i++) {
        json_object *pod = json_object_array_get_idx(pods, i);
        if (pod_finished(pod) || pod_qty(pod, GPU_RESOURCE) <= 0)
            continue;
        gpu_pods++;
        static const char *const node_key[] = {"spec", "nodeName", NULL};
        json_object *nn = fb_kube_path(pod, node_key);
        json_object *node = nn ? fb_cluster_find_node(ctx, json_object_get_string(nn)) : NULL;
        char offer[256];
        if (node == NULL || offered(node, offer, sizeof offer) == 0)
            snprintf(offer, sizeof offer, "%s", node ? "" : any_offer);
        struct pod_verdict pv = {FB_CHECK_OK, ""};
        const struct fb_gke_family *fam = node ? fb_gke_family_of_node(node) : NULL;
        bool tcpxo = (node && fb_cluster_is_tcpxo_node(node)) ||
                     (fam == NULL && fb_kube_annotation(pod, POD_INTERFACES) != NULL);
        char gke_why[384];
        if (tcpxo)
            judge_tcpxo_pod(pod, &pv);
        else if (fam) {
            if (fb_gke_judge_pod(fam, pod, gke_why, sizeof gke_why) != FB_CHECK_OK)
                pod_set(&pv, FB_CHECK_FAIL, "%s", gke_why);
        } else if (offer[0])
            judge_rdma_pod(pod, node, offer, &pv);
        else
            bare++;
        char who[160];
        snprintf(who, sizeof who, "%s/%s", fb_kube_namespace(pod), fb_kube_name(pod));
        if (pv.v == FB_CHECK_FAIL) {
            bad++;
            fb_strbuf_append(fails, sizeof fails, &fu, "%s%s: %s", fu ? "; " : "", who, pv.why);
            fb_check_culprit(c, "%s", who);
        } else if (pv.v == FB_CHECK_WARN) {
            warned++;
            fb_strbuf_append(warns, sizeof warns, &wu, "%s%s: %s", wu ? "; " : "", who, pv.why);
            fb_check_culprit(c, "%s", who);
        }
    }
    if (gpu_pods == 0) {
        fb_check_set(c, FB_CHECK_SKIP, "no running pod requests %s", GPU_RESOURCE);
        return;
    }
    if (bad > 0) {
        fb_check_set(c, FB_CHECK_FAIL, "%zu of %zu GPU pods lack their fabric: %s", bad,
                     gpu_pods, fails);
        fb_check_fix(c, "request the fabric resource in the worker template (resources.limits), "
                        "or on GKE TCPXO add the %s annotation for eth1..eth8 and the "
                        "tcpxo-daemon sidecar (see manifests/overlays)", POD_INTERFACES);
        return;
    }
    if (warned > 0) {
        fb_check_set(c, FB_CHECK_WARN, "%zu of %zu GPU pods: %s", warned, gpu_pods, warns);
        fb_check_fix(c, "request every fabric device of the node and add IPC_LOCK to the "
                        "containers that use RDMA");
        return;
    }
    if (bare == gpu_pods) {
        fb_check_set(c, FB_CHECK_WARN, "%zu GPU pods, but no node offers a fabric resource (efa, "
                                       "rdma_vf, hca_shared_devices) and none uses TCPXO: "
                                       "multi-node NCCL would use TCP sockets", gpu_pods);
        fb_check_fix(c, "deploy the fabric's device plugin (Network Operator, EFA or RDMA "
                        "shared device plugin) or the GKE TCPXO wiring");
        return;
    }
    fb_check_set(c, FB_CHECK_OK, "%zu GPU pods request their nodes' fabric", gpu_pods);
    if (bare > 0)
        fb_check_note(c, "%zu on nodes without fabric", bare);
}

/* "repo/tcpgpudmarxd-dev:v1.0.21" -> "v1.0.21"; "" for untagged or digest
 * references, which say nothing about the release. */
static void image_tag(const char *image, char *tag, size_t len)
{
    const char *slash = strrchr(image, '/');
    const char *colon = strrchr(slash ? slash : image, ':');
    tag[0] = '\0';
    if (colon && strchr(image, '@') == NULL)
        snprintf(tag, len, "%s", colon + 1);
}

#define PODS_PER_VERSION 16

struct version_use {
    char version[32];
    size_t pods;
    char pod[PODS_PER_VERSION][160]; /* the first few, for evidence and culprits */
};

static void count_version(struct version_use *uses, size_t *n, size_t max, const char *version,
                          const char *pod)
{
    size_t i = 0;
    while (i < *n && strcmp(uses[i].version, version) != 0)
        i++;
    if (i == *n) {
        if (*n == max)
            return;
        memset(&uses[i], 0, sizeof uses[i]);
        snprintf(uses[i].version, sizeof uses[i].version, "%s", version);
        (*n)++;
    }
    if (uses[i].pods < PODS_PER_VERSION)
        snprintf(uses[i].pod[uses[i].pods], sizeof uses[i].pod[0], "%s", pod);
    uses[i].pods++;
}

/* The first known pair with this plugin and this daemon; NULL for either
 * matches any. */
static const struct fb_version_pair *find_pair(const struct fb_cluster_ctx *ctx,
                                               const char *plugin, const char *daemon)
{
    for (size_t i = 0; i < ctx->npairs; i++)
        if ((plugin == NULL || strcmp(ctx->pairs[i].plugin, plugin) == 0) &&
            (daemon == NULL || strcmp(ctx->pairs[i].daemon, daemon) == 0))
            return &ctx->pairs[i];
    return NULL;
}

static const char *shown(const char *version)
{
    return version[0] ? version : "untagged";
}

/* "v1.0.21 (2 pods: default/a, default/b)" */
static void describe_use(const struct version_use *u, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    fb_strbuf_append(buf, len, &used, "%s (%zu pod%s: ", shown(u->version), u->pods,
                     u->pods == 1 ? "" : "s");
    for (size_t i = 0; i < u->pods && i < PODS_PER_VERSION; i++)
        fb_strbuf_append(buf, len, &used, "%s%s", i ? ", " : "", u->pod[i]);
    fb_strbuf_append(buf, len, &used, "%s)", u->pods > PODS_PER_VERSION ? ", ..." : "");
}

static void list_uses(const struct version_use *u, size_t n, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        char one[512];
        describe_use(&u[i], one, sizeof one);
        fb_strbuf_append(buf, len, &used, "%s%s", i ? ", " : "", one);
    }
}

/* One plugin version against one daemon version; a mismatch is appended to
 * `problems` and returns true. */
static bool judge_pair(const struct fb_cluster_ctx *ctx, const struct version_use *p,
                       const struct version_use *d, struct fb_check *c, char *problems,
                       size_t len, size_t *used)
{
    if (p->version[0] == '\0' || d->version[0] == '\0') {
        fb_check_set(c, FB_CHECK_WARN, "%s image pinned without a version tag: pairing "
                                       "unverifiable", p->version[0] ? "tcpxo-daemon" : "plugin");
        fb_check_fix(c, "reference the images by their release tag (e.g. tcpgpudmarxd-dev:v1.0.21)");
        return false;
    }
    if (find_pair(ctx, p->version, d->version) != NULL)
        return false;
    const struct fb_version_pair *byp = find_pair(ctx, p->version, NULL);
    const struct fb_version_pair *byd = find_pair(ctx, NULL, d->version);
    char who[512];
    describe_use(d, who, sizeof who);
    if (byp || byd) {
        if (byp)
            fb_strbuf_append(problems, len, used, "%stcpxo-daemon %s with plugin %s, which pairs "
                             "with daemon %s", *used ? "; " : "", who, p->version, byp->daemon);
        else
            fb_strbuf_append(problems, len, used, "%stcpxo-daemon %s pairs with plugin %s, but "
                             "the installer runs %s", *used ? "; " : "", who, byd->plugin,
                             shown(p->version));
        for (size_t i = 0; i < d->pods && i < PODS_PER_VERSION; i++)
            fb_check_culprit(c, "%s", d->pod[i]);
        return true;
    }
    fb_check_set(c, FB_CHECK_WARN, "plugin %s with tcpxo-daemon %s: a pair this tool does not "
                                   "know", shown(p->version), shown(d->version));
    fb_check_fix(c, "check Google's release notes; if they pair, say so with --pair %s=%s",
                 shown(p->version), shown(d->version));
    return false;
}

void fb_cluster_check_tcpxo_versions(const struct fb_cluster_ctx *ctx, struct fb_check *c)
{
    json_object *pods = fb_kube_items(ctx->data->pods);
    enum { MAXV = 8 };
    struct version_use plugin[MAXV], daemon[MAXV];
    size_t np = 0, nd = 0;
    for (size_t i = 0; pods && i < json_object_array_length(pods); i++) {
        json_object *pod = json_object_array_get_idx(pods, i);
        char who[160], tag[32];
        snprintf(who, sizeof who, "%s/%s", fb_kube_namespace(pod), fb_kube_name(pod));
        const char *img = find_image(pod, PLUGIN_IMAGE);
        if (img) {
            image_tag(img, tag, sizeof tag);
            count_version(plugin, &np, MAXV, tag, who);
        }
        img = find_image(pod, DAEMON_IMAGE);
        if (img) {
            image_tag(img, tag, sizeof tag);
            count_version(daemon, &nd, MAXV, tag, who);
        }
    }
    char pl[FB_CHECK_TEXT_MAX], dl[FB_CHECK_TEXT_MAX];
    list_uses(plugin, np, pl, sizeof pl);
    list_uses(daemon, nd, dl, sizeof dl);
    if (np == 0 && nd == 0) {
        fb_check_set(c, FB_CHECK_SKIP, "no %s or %s image in any pod", PLUGIN_IMAGE, DAEMON_IMAGE);
        return;
    }
    if (nd == 0) {
        fb_check_set(c, FB_CHECK_SKIP, "plugin %s installed; no tcpxo-daemon running to pair "
                                       "with it", pl);
        return;
    }
    if (np == 0) {
        fb_check_set(c, FB_CHECK_WARN, "tcpxo-daemon %s, but no %s installer pod in the list: "
                                       "pairing unverified", dl, PLUGIN_IMAGE);
        fb_check_fix(c, "include kube-system (kubectl get pods -A -o json) so the "
                        "nccl-tcpxo-installer pods are seen");
        return;
    }
    char problems[FB_CHECK_TEXT_MAX];
    size_t used = 0;
    problems[0] = '\0';
    bool mismatch = false;
    for (size_t p = 0; p < np; p++)
        for (size_t d = 0; d < nd; d++)
            mismatch |= judge_pair(ctx, &plugin[p], &daemon[d], c, problems, sizeof problems,
                                   &used);
    if (mismatch) {
        fb_check_set(c, FB_CHECK_FAIL, "%s", problems);
        fb_check_fix(c, "run the daemon paired with the installed plugin; upgrade in order: the "
                        "plugin installer first, then the workload's tcpxo-daemon image");
    } else if (nd > 1) {
        fb_check_set(c, FB_CHECK_FAIL, "tcpxo-daemon versions differ across pods: %s", dl);
        for (size_t d = 0; d < nd; d++)
            for (size_t i = 0; i < daemon[d].pods && i < PODS_PER_VERSION; i++)
                fb_check_culprit(c, "%s", daemon[d].pod[i]);
        fb_check_fix(c, "run one tcpxo-daemon version in every worker, the one paired with the "
                        "installed plugin");
    }
    if (np > 1) {
        fb_check_set(c, FB_CHECK_WARN, "plugin installer versions differ (a rollout in "
                                       "progress?): %s", pl);
        fb_check_fix(c, "let the nccl-tcpxo-installer DaemonSet finish, then check again");
    }
    fb_check_set(c, FB_CHECK_OK, "plugin %s with tcpxo-daemon %s: a released pair", pl, dl);
}

/* pod-fabric's readings for the RDMA and capacity checks. */
long long fb_cluster_quantity(json_object *v) { return quantity(v); }
long long fb_cluster_pod_qty(json_object *pod, const char *resource) { return pod_qty(pod, resource); }
long long fb_cluster_node_allocatable(json_object *node, const char *resource)
{
    return node_allocatable(node, resource);
}
bool fb_cluster_pod_finished(json_object *pod) { return pod_finished(pod); }
