/* GPU pods on GKE GPU machines: do their interfaces name the family's GPU
 * NIC Networks, each its own, existing and ready, as fabric-bench was
 * given them; and does the RxDM sidecar's NRI device list hold exactly
 * the pod's GPUs. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonio.h"
#include "doctor/cluster.h"

#define GPU_RESOURCE "nvidia.com/gpu"
#define POD_INTERFACES "networking.gke.io/interfaces"
#define NRI_PREFIX "devices.gke.io/container."

static long long quantity_at(json_object *obj, const char *const *keys)
{
    json_object *v = fb_kube_path(obj, keys);
    if (v == NULL)
        return 0;
    return json_object_is_type(v, json_type_int) ? json_object_get_int64(v)
                                                 : atoll(json_object_get_string(v));
}

/* The GPUs a pod's containers ask for (the larger of request and limit). */
static long long pod_gpus(json_object *pod)
{
    static const char *const ck[] = {"spec", "containers", NULL};
    static const char *const req[] = {"resources", "requests", GPU_RESOURCE, NULL};
    static const char *const lim[] = {"resources", "limits", GPU_RESOURCE, NULL};
    json_object *ctrs = fb_kube_path(pod, ck);
    long long sum = 0;
    for (size_t i = 0; ctrs && json_object_is_type(ctrs, json_type_array) &&
                       i < json_object_array_length(ctrs); i++) {
        json_object *ctr = json_object_array_get_idx(ctrs, i);
        long long r = quantity_at(ctr, req), l = quantity_at(ctr, lim);
        sum += r > l ? r : l;
    }
    return sum;
}

static long long node_gpus(json_object *node)
{
    static const char *const keys[] = {"status", "allocatable", GPU_RESOURCE, NULL};
    return quantity_at(node, keys);
}

static bool pod_active(json_object *pod)
{
    static const char *const keys[] = {"status", "phase", NULL};
    json_object *phase = fb_kube_path(pod, keys);
    const char *p = phase ? json_object_get_string(phase) : "";
    return strcmp(p, "Succeeded") != 0 && strcmp(p, "Failed") != 0;
}

/* A running or pending GPU pod placed on a node of a GKE family. */
static const struct fb_gke_family *gke_gpu_pod(const struct fb_cluster_ctx *ctx, json_object *pod,
                                               json_object **node)
{
    static const char *const node_key[] = {"spec", "nodeName", NULL};
    *node = NULL;
    if (!pod_active(pod) || pod_gpus(pod) <= 0)
        return NULL;
    json_object *nn = fb_kube_path(pod, node_key);
    *node = nn ? fb_cluster_find_node(ctx, json_object_get_string(nn)) : NULL;
    return *node ? fb_gke_family_of_node(*node) : NULL;
}

static void pod_who(json_object *pod, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s", fb_kube_namespace(pod), fb_kube_name(pod));
}

/* A pod's worst finding, by fb_check_set's rule. */
struct finding {
    enum fb_check_outcome v;
    char why[512];
    unsigned kinds; /* KIND_* seen, for the fix */
};

enum {
    KIND_UNMAPPED = 1 << 0,
    KIND_SHARED = 1 << 1,
    KIND_NO_NETWORK = 1 << 2,
    KIND_NOT_READY = 1 << 3,
    KIND_MISMATCH = 1 << 4,
    KIND_NAME = 1 << 5,
    KIND_DEVICES = 1 << 6,
};

static void found(struct finding *f, enum fb_check_outcome v, unsigned kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void found(struct finding *f, enum fb_check_outcome v, unsigned kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fb_outcome_keep_worst(&f->v, f->why, sizeof f->why, v, fmt, ap);
    va_end(ap);
    f->kinds |= kind;
}

/* The family's GPU NICs as the pod maps them: net[k] for eth<first_if+k>. */
struct pod_nics {
    const char *net[FB_GKE_NIC_MAX];
    json_object *ifs; /* owns the strings */
};

/* false (with f set) when the annotation is absent or not an array. */
static bool read_pod_nics(json_object *pod, const struct fb_gke_family *fam, struct pod_nics *pn,
                          struct finding *f)
{
    memset(pn, 0, sizeof *pn);
    const char *text = fb_kube_annotation(pod, POD_INTERFACES);
    if (text == NULL) {
        found(f, FB_CHECK_FAIL, KIND_UNMAPPED, "no %s annotation: eth0 only", POD_INTERFACES);
        return false;
    }
    pn->ifs = json_tokener_parse(text);
    if (pn->ifs == NULL || !json_object_is_type(pn->ifs, json_type_array)) {
        found(f, FB_CHECK_FAIL, KIND_UNMAPPED, "%s is not a JSON array", POD_INTERFACES);
        json_object_put(pn->ifs);
        pn->ifs = NULL;
        return false;
    }
    for (size_t i = 0; i < json_object_array_length(pn->ifs); i++) {
        json_object *e = json_object_array_get_idx(pn->ifs, i);
        const char *name = fb_json_get_string(e, "interfaceName");
        const char *net = fb_json_get_string(e, "network");
        int k = name && strncmp(name, "eth", 3) == 0 ? atoi(name + 3) - fam->first_if : -1;
        if (net && k >= 0 && k < fam->nics)
            pn->net[k] = net;
    }
    return true;
}

static json_object *find_network(const struct fb_cluster_ctx *ctx, const char *name)
{
    json_object *items = fb_kube_items(ctx->data->networks);
    for (size_t i = 0; items && i < json_object_array_length(items); i++) {
        json_object *net = json_object_array_get_idx(items, i);
        if (strcmp(fb_kube_name(net), name) == 0)
            return net;
    }
    return NULL;
}

static void judge_unmapped_and_shared(const struct fb_gke_family *fam, const struct pod_nics *pn,
                                      struct finding *f)
{
    char missing[128] = "";
    size_t used = 0, nmissing = 0, distinct = 0;
    const char *shared = NULL;
    for (int k = 0; k < fam->nics; k++) {
        if (pn->net[k] == NULL) {
            fb_strbuf_append(missing, sizeof missing, &used, "%seth%d", nmissing++ ? "," : "",
                             fam->first_if + k);
            continue;
        }
        bool first = true;
        for (int j = 0; j < k; j++)
            if (pn->net[j] && strcmp(pn->net[j], pn->net[k]) == 0) {
                first = false;
                shared = shared ? shared : pn->net[k];
            }
        distinct += first;
    }
    int last = fam->first_if + fam->nics - 1;
    if (nmissing > 0)
        found(f, FB_CHECK_FAIL, KIND_UNMAPPED, "%s maps %zu of eth%d..eth%d (missing %s)",
              POD_INTERFACES, fam->nics - nmissing, fam->first_if, last, missing);
    if (distinct == 1 && nmissing == 0)
        found(f, FB_CHECK_FAIL, KIND_SHARED, "all %d GPU NICs eth%d..eth%d on ONE Network '%s': "
              "one NIC's bandwidth", fam->nics, fam->first_if, last, shared);
    else if (shared != NULL)
        found(f, FB_CHECK_FAIL, KIND_SHARED, "eth%d..eth%d map onto %zu distinct Networks, not "
              "%d ('%s' more than once)", fam->first_if, last, distinct, fam->nics, shared);
}

static void judge_networks(const struct fb_cluster_ctx *ctx, const struct fb_gke_family *fam,
                           const struct pod_nics *pn, struct finding *f)
{
    for (int k = 0; k < fam->nics; k++) {
        const char *name = pn->net[k];
        if (name == NULL)
            continue;
        int eth = fam->first_if + k;
        json_object *net = find_network(ctx, name);
        if (net == NULL) {
            found(f, FB_CHECK_FAIL, KIND_NO_NETWORK, "eth%d -> Network '%s', which does not "
                  "exist", eth, name);
            continue;
        }
        const char *why_r = NULL, *why_p = NULL;
        const char *r = fb_cluster_condition(net, "Ready", &why_r, NULL);
        const char *p = fb_cluster_condition(net, "ParamsReady", &why_p, NULL);
        if (r == NULL && p == NULL)
            found(f, FB_CHECK_WARN, KIND_NOT_READY, "eth%d -> Network '%s' reports no conditions: "
                  "readiness unverified", eth, name);
        else if (r == NULL || strcmp(r, "True") != 0 || p == NULL || strcmp(p, "True") != 0)
            found(f, FB_CHECK_FAIL, KIND_NOT_READY, "eth%d -> Network '%s' Ready=%s ParamsReady=%s",
                  eth, name, r ? r : "absent", p ? p : "absent");
        if (fam->net_pattern && strstr(name, fam->net_pattern) == NULL)
            found(f, FB_CHECK_WARN, KIND_NAME, "eth%d -> Network '%s' lacks '%s' in its name, "
                  "which %s tooling expects", eth, name, fam->net_pattern, fam->transport_name);
    }
}

static void judge_given(const struct fb_cluster_ctx *ctx, const struct fb_gke_family *fam,
                        const struct pod_nics *pn, struct finding *f)
{
    const struct fb_gke_nic_map *map = ctx->given_nics;
    for (size_t i = 0; map && i < map->n; i++) {
        int k = atoi(map->ifname[i] + 3) - fam->first_if;
        const char *deployed = k >= 0 && k < fam->nics ? pn->net[k] : NULL;
        if (deployed == NULL || strcmp(deployed, map->network[i]) != 0)
            found(f, FB_CHECK_FAIL, KIND_MISMATCH, "%s deployed on '%s', fabric-bench was given "
                  "'%s'", map->ifname[i], deployed ? deployed : "nothing", map->network[i]);
    }
    /* A GPU NIC the pod has and the file does not name differs as much
     * (the launcher's rule for --gpu-nics, too). */
    for (int k = 0; map && k < fam->nics; k++) {
        char ifname[16];
        snprintf(ifname, sizeof ifname, "eth%d", fam->first_if + k);
        if (pn->net[k] != NULL && fb_gke_given_network(map, ifname) == NULL)
            found(f, FB_CHECK_FAIL, KIND_MISMATCH, "%s deployed on '%s', absent from what "
                  "fabric-bench was given", ifname, pn->net[k]);
    }
}

/* A check's tally over pods: the failing and warning ones, in words. */
struct tally {
    size_t pods, failed, warned;
    unsigned kinds;
    char fails[FB_CHECK_TEXT_MAX], warns[FB_CHECK_TEXT_MAX];
    size_t fu, wu;
};

static void tally_pod(struct tally *t, struct fb_check *c, json_object *pod,
                      const struct finding *f)
{
    char who[160];
    pod_who(pod, who, sizeof who);
    t->pods++;
    t->kinds |= f->kinds;
    if (f->v == FB_CHECK_FAIL) {
        t->failed++;
        fb_strbuf_append(t->fails, sizeof t->fails, &t->fu, "%s%s: %s", t->fu ? "; " : "", who,
                         f->why);
        fb_check_culprit(c, "%s", who);
    } else if (f->v == FB_CHECK_WARN) {
        t->warned++;
        fb_strbuf_append(t->warns, sizeof t->warns, &t->wu, "%s%s: %s", t->wu ? "; " : "", who,
                         f->why);
        fb_check_culprit(c, "%s", who);
    }
}

static void interfaces_fix(struct fb_check *c, unsigned kinds)
{
    char fix[FB_CHECK_TEXT_MAX];
    size_t used = 0;
    fix[0] = '\0';
    if (kinds & (KIND_UNMAPPED | KIND_SHARED))
        fb_strbuf_append(fix, sizeof fix, &used, "give every GPU NIC its own Network in the "
                         "pod's %s (as manifests/overlays/gke-tcpxo/gpu-nics.yaml lists them)",
                         POD_INTERFACES);
    if (kinds & KIND_NO_NETWORK)
        fb_strbuf_append(fix, sizeof fix, &used, "%screate the missing Network and its "
                         "GKENetworkParamSet, or correct the name (kubectl get "
                         "networks.networking.gke.io)", used ? "; " : "");
    if (kinds & KIND_NOT_READY)
        fb_strbuf_append(fix, sizeof fix, &used, "%sfix the Network's GKENetworkParamSet "
                         "(kubectl describe networks.networking.gke.io NAME)", used ? "; " : "");
    if (kinds & KIND_MISMATCH)
        fb_strbuf_append(fix, sizeof fix, &used, "%sdeploy with the --gpu-nics mapping, or "
                         "correct the file to the cluster's Networks", used ? "; " : "");
    if (kinds & KIND_NAME)
        fb_strbuf_append(fix, sizeof fix, &used, "%srename the Networks as the family's "
                         "tooling expects", used ? "; " : "");
    fb_check_fix(c, "%s", fix);
}

static void finish_tally(struct fb_check *c, const struct tally *t, const char *ok_text,
                         const char *skip_text)
{
    if (t->pods == 0) {
        fb_check_set(c, FB_CHECK_SKIP, "%s", skip_text);
        return;
    }
    if (t->failed > 0) {
        fb_check_set(c, FB_CHECK_FAIL, "%zu of %zu pods: %s", t->failed, t->pods, t->fails);
        if (t->warned)
            fb_check_note(c, "also: %s", t->warns);
        return;
    }
    if (t->warned > 0) {
        fb_check_set(c, FB_CHECK_WARN, "%zu of %zu pods: %s", t->warned, t->pods, t->warns);
        return;
    }
    fb_check_set(c, FB_CHECK_OK, "%zu pods %s", t->pods, ok_text);
}

void fb_cluster_check_pod_interfaces(const struct fb_cluster_ctx *ctx, struct fb_check *c)
{
    json_object *pods = fb_kube_items(ctx->data->pods);
    struct tally t;
    memset(&t, 0, sizeof t);
    for (size_t i = 0; pods && i < json_object_array_length(pods); i++) {
        json_object *pod = json_object_array_get_idx(pods, i), *node = NULL;
        const struct fb_gke_family *fam = gke_gpu_pod(ctx, pod, &node);
        if (fam == NULL)
            continue;
        struct finding f = {FB_CHECK_OK, "", 0};
        struct pod_nics pn;
        if (read_pod_nics(pod, fam, &pn, &f)) {
            judge_unmapped_and_shared(fam, &pn, &f);
            judge_networks(ctx, fam, &pn, &f);
            judge_given(ctx, fam, &pn, &f);
        }
        tally_pod(&t, c, pod, &f);
        json_object_put(pn.ifs);
    }
    char families[256], skip[400];
    fb_gke_family_names(families, sizeof families);
    snprintf(skip, sizeof skip, "no GPU pod on a GKE GPU machine (%s)", families);
    finish_tally(c, &t, ctx->given_nics ? "map their GPU NICs onto distinct, existing, Ready "
                                          "Networks, as --gpu-nics gives them"
                                        : "map their GPU NICs onto distinct, existing, Ready "
                                          "Networks", skip);
    if (t.failed || t.warned)
        interfaces_fix(c, t.kinds);
}

/* ---- the sidecar's NRI device list ---- */

#define GPU_DEV_MAX 64

struct dev_list {
    bool gpu[GPU_DEV_MAX];
    int ngpu;
    bool ctl, uvm, dmabuf;
};

/* The annotation is a YAML list of "- path: /dev/X" items. */
static void read_dev_list(const char *text, struct dev_list *dl)
{
    memset(dl, 0, sizeof *dl);
    for (const char *p = text; p && *p;) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        char line[256];
        snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), p);
        const char *dev = strstr(line, "path:");
        if (dev) {
            dev += 5;
            dev += strspn(dev, " \"'");
            char path[128];
            snprintf(path, sizeof path, "%.*s", (int)strcspn(dev, " \"'\r"), dev);
            int k = -1;
            char tail = 0;
            if (sscanf(path, "/dev/nvidia%d%c", &k, &tail) == 1 && k >= 0 && k < GPU_DEV_MAX &&
                !dl->gpu[k]) {
                dl->gpu[k] = true;
                dl->ngpu++;
            }
            dl->ctl |= strcmp(path, "/dev/nvidiactl") == 0;
            dl->uvm |= strcmp(path, "/dev/nvidia-uvm") == 0;
            dl->dmabuf |= strcmp(path, "/dev/dmabuf_import_helper") == 0;
        }
        p = eol ? eol + 1 : NULL;
    }
}

static void judge_devices(json_object *pod, json_object *node, const struct fb_gke_family *fam,
                          const char *ctr, struct finding *f)
{
    char key[128];
    snprintf(key, sizeof key, NRI_PREFIX "%s", ctr);
    const char *text = fb_kube_annotation(pod, key);
    if (text == NULL) {
        found(f, FB_CHECK_FAIL, KIND_DEVICES, "no %s annotation: NRI injects no GPU into the "
              "sidecar", key);
        return;
    }
    long long want = pod_gpus(pod), have = node ? node_gpus(node) : want;
    if (want > have)
        found(f, FB_CHECK_FAIL, KIND_DEVICES, "requests %lld GPUs, %s has %lld allocatable",
              want, fb_kube_name(node), have);
    struct dev_list dl;
    read_dev_list(text, &dl);
    char missing[384] = "", extra[256] = "";
    size_t mu = 0, xu = 0;
    /* A pod that takes the whole node owns /dev/nvidia0..N-1; one that takes
     * part of it may be handed any N of them, so only the count is known. */
    bool whole = want == have;
    for (int k = 0; k < GPU_DEV_MAX; k++) {
        if (whole && k < want && !dl.gpu[k])
            fb_strbuf_append(missing, sizeof missing, &mu, "%s/dev/nvidia%d", mu ? ", " : "", k);
        if (dl.gpu[k] && k >= have)
            fb_strbuf_append(extra, sizeof extra, &xu, "%s/dev/nvidia%d", xu ? ", " : "", k);
    }
    if (!dl.ctl)
        fb_strbuf_append(missing, sizeof missing, &mu, "%s/dev/nvidiactl", mu ? ", " : "");
    if (!dl.uvm)
        fb_strbuf_append(missing, sizeof missing, &mu, "%s/dev/nvidia-uvm", mu ? ", " : "");
    if (fam->dmabuf && !dl.dmabuf)
        fb_strbuf_append(missing, sizeof missing, &mu, "%s/dev/dmabuf_import_helper",
                         mu ? ", " : "");
    if (mu > 0 || (!whole && dl.ngpu < want))
        found(f, FB_CHECK_FAIL, KIND_DEVICES, "%s lists %d of the %lld GPUs the pod requests%s%s",
              key, dl.ngpu, want, mu ? ", missing " : "", missing);
    if (xu > 0)
        found(f, FB_CHECK_FAIL, KIND_DEVICES, "%s lists %s, beyond the %lld GPUs of %s", key,
              extra, have, node ? fb_kube_name(node) : "the node");
    else if (dl.ngpu > want)
        found(f, FB_CHECK_WARN, KIND_DEVICES, "%s lists %d GPUs for a pod that requests %lld: "
              "the daemon manages GPUs another pod owns", key, dl.ngpu, want);
}

void fb_cluster_check_nri_devices(const struct fb_cluster_ctx *ctx, struct fb_check *c)
{
    json_object *pods = fb_kube_items(ctx->data->pods);
    struct tally t;
    memset(&t, 0, sizeof t);
    for (size_t i = 0; pods && i < json_object_array_length(pods); i++) {
        json_object *pod = json_object_array_get_idx(pods, i), *node = NULL;
        const struct fb_gke_family *fam = gke_gpu_pod(ctx, pod, &node);
        const char *ctr = fam && fam->daemon ? fb_kube_rxdm_container(pod) : NULL;
        if (ctr == NULL)
            continue; /* no sidecar: pod-fabric says so */
        struct finding f = {FB_CHECK_OK, "", 0};
        judge_devices(pod, node, fam, ctr, &f);
        tally_pod(&t, c, pod, &f);
    }
    finish_tally(c, &t, "hand their RxDM sidecar exactly their GPUs and the devices its "
                        "transport needs",
                 "no GPU pod with an RxDM sidecar (tcpxo-daemon, tcpx-daemon) on a GKE GPU "
                 "machine");
    if (t.failed || t.warned)
        fb_check_fix(c, "list /dev/nvidia0..N-1 for the N GPUs the pod requests, plus "
                        "/dev/nvidiactl, /dev/nvidia-uvm and on TCPXO /dev/dmabuf_import_helper, "
                        "in the devices.gke.io/container.<sidecar> annotation (see "
                        "manifests/overlays/gke-tcpxo)");
}

/* ---- pod-fabric's view of the families other than A3 Mega ---- */

static bool has_container(json_object *pod, const char *name)
{
    static const char *const which[] = {"initContainers", "containers"};
    for (int w = 0; w < 2; w++) {
        const char *const keys[] = {"spec", which[w], NULL};
        json_object *ctrs = fb_kube_path(pod, keys);
        for (size_t i = 0; ctrs && json_object_is_type(ctrs, json_type_array) &&
                           i < json_object_array_length(ctrs); i++) {
            const char *n = fb_json_get_string(json_object_array_get_idx(ctrs, i), "name");
            if (n && strcmp(n, name) == 0)
                return true;
        }
    }
    return false;
}

enum fb_check_outcome fb_gke_judge_pod(const struct fb_gke_family *fam, json_object *pod,
                                       char *why, size_t len)
{
    struct finding f = {FB_CHECK_OK, "", 0};
    struct pod_nics pn;
    if (read_pod_nics(pod, fam, &pn, &f)) {
        int mapped = 0;
        for (int k = 0; k < fam->nics; k++)
            mapped += pn.net[k] != NULL;
        if (mapped < fam->nics)
            found(&f, FB_CHECK_FAIL, KIND_UNMAPPED, "%s maps %d of eth%d..eth%d (%s)",
                  POD_INTERFACES, mapped, fam->first_if, fam->first_if + fam->nics - 1,
                  fam->transport_name);
        json_object_put(pn.ifs);
    }
    if (fam->daemon && fb_kube_rxdm_container(pod) == NULL && !has_container(pod, fam->daemon))
        found(&f, FB_CHECK_FAIL, KIND_UNMAPPED, "no %s sidecar (tcpgpudmarxd image)", fam->daemon);
    snprintf(why, len, "%s", f.why);
    return f.v;
}
