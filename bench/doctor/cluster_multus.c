/* Multus secondary networks of GPU pods: what a pod asks for in
 * k8s.v1.cni.cncf.io/networks against what Multus reports attached in
 * k8s.v1.cni.cncf.io/network-status, and the NetworkAttachmentDefinitions
 * the requests name. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonio.h"
#include "core/text.h"
#include "doctor/cluster.h"

#define NETWORKS "k8s.v1.cni.cncf.io/networks"
#define NETWORK_STATUS "k8s.v1.cni.cncf.io/network-status"
#define NAD_RESOURCE "k8s.v1.cni.cncf.io/resourceName"
#define GPU_RESOURCE "nvidia.com/gpu"
#define MAX_REQUESTS 16
#define MTU_SEEN_MAX 32

struct net_request {
    char ns[64], name[128], iface[32]; /* iface "" when not asked */
};

/* "ns/name@iface" or "name": one comma-separated element. */
static void parse_short_request(const char *text, const char *pod_ns, struct net_request *r)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", text);
    char *s = buf;
    while (*s == ' ')
        s++;
    char *end = s + strlen(s);
    while (end > s && end[-1] == ' ')
        *--end = '\0';
    char *at = strchr(s, '@'), *slash = strchr(s, '/');
    if (at)
        *at = '\0';
    const char *iface = at ? at + 1 : "";
    fb_copy(r->iface, sizeof r->iface, iface, strlen(iface));
    if (slash && (!at || slash < at)) {
        *slash = '\0';
        fb_copy(r->ns, sizeof r->ns, s, strlen(s));
        fb_copy(r->name, sizeof r->name, slash + 1, strlen(slash + 1));
    } else {
        fb_copy(r->ns, sizeof r->ns, pod_ns, strlen(pod_ns));
        fb_copy(r->name, sizeof r->name, s, strlen(s));
    }
}

/* The annotation is either the short comma list or a JSON array of
 * {name, namespace, interface}. Returns the count kept (at most
 * MAX_REQUESTS; *beyond counts the rest), or -1 when malformed. */
static int parse_requests(const char *text, const char *pod_ns, struct net_request *out,
                          int *beyond)
{
    *beyond = 0;
    const char *p = text;
    while (*p == ' ' || *p == '\n')
        p++;
    int n = 0;
    if (*p == '[') {
        json_object *arr = json_tokener_parse(p);
        if (arr == NULL || !json_object_is_type(arr, json_type_array)) {
            json_object_put(arr);
            return -1;
        }
        for (size_t i = 0; i < json_object_array_length(arr); i++) {
            json_object *e = json_object_array_get_idx(arr, i);
            const char *name = fb_json_get_string(e, "name");
            if (name == NULL)
                continue;
            if (n == MAX_REQUESTS) {
                (*beyond)++;
                continue;
            }
            const char *ns = fb_json_get_string(e, "namespace");
            const char *iface = fb_json_get_string(e, "interface");
            snprintf(out[n].ns, sizeof out[n].ns, "%s", ns ? ns : pod_ns);
            snprintf(out[n].name, sizeof out[n].name, "%s", name);
            snprintf(out[n].iface, sizeof out[n].iface, "%s", iface ? iface : "");
            n++;
        }
        json_object_put(arr);
        return n;
    }
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", p);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (strspn(tok, " ") == strlen(tok))
            continue;
        if (n == MAX_REQUESTS)
            (*beyond)++;
        else
            parse_short_request(tok, pod_ns, &out[n++]);
    }
    return n;
}

static json_object *find_nad(const struct fb_cluster_ctx *ctx, const struct net_request *r)
{
    json_object *items = fb_kube_items(ctx->data->nads);
    for (size_t i = 0; items && i < json_object_array_length(items); i++) {
        json_object *nad = json_object_array_get_idx(items, i);
        if (strcmp(fb_kube_name(nad), r->name) == 0 && strcmp(fb_kube_namespace(nad), r->ns) == 0)
            return nad;
    }
    return NULL;
}

/* The "mtu" of a NAD's CNI config (spec.config, a JSON string), 0 when
 * it sets none. */
static long nad_mtu(json_object *nad)
{
    static const char *const keys[] = {"spec", "config", NULL};
    const char *text = fb_cluster_string_at(nad, keys);
    json_object *cfg = text ? json_tokener_parse(text) : NULL, *mtu = NULL;
    long v = 0;
    if (cfg && json_object_object_get_ex(cfg, "mtu", &mtu))
        v = (long)json_object_get_int64(mtu);
    json_object_put(cfg);
    return v;
}

#define STATUS_MAX 64

/* Multus names entries "ns/name" (older releases: "name"). A network asked
 * twice is two interfaces, so each entry answers one request: the unused
 * one on the interface asked for, else the first unused one. */
static json_object *find_status(json_object *status, const struct net_request *r, bool *used)
{
    char full[200];
    snprintf(full, sizeof full, "%.63s/%.127s", r->ns, r->name);
    size_t n = status ? json_object_array_length(status) : 0;
    n = n < STATUS_MAX ? n : STATUS_MAX;
    for (int pass = r->iface[0] ? 0 : 1; pass < 2; pass++)
        for (size_t i = 0; i < n; i++) {
            json_object *e = json_object_array_get_idx(status, i);
            const char *name = fb_json_get_string(e, "name");
            const char *iface = fb_json_get_string(e, "interface");
            if (used[i] || name == NULL || (strcmp(name, full) != 0 && strcmp(name, r->name) != 0))
                continue;
            if (pass == 0 && (iface == NULL || strcmp(iface, r->iface) != 0))
                continue;
            used[i] = true;
            return e;
        }
    return NULL;
}

/* Resources whose device goes with the attachment (SR-IOV VF, host
 * device): Multus reports it in device-info. */
static bool asks_bound_rdma_device(json_object *pod)
{
    static const char *const bound[] = {"nvidia.com/rdma_vf", "nvidia.com/rdma-vf",
                                        "nvidia.com/hostdev", "nvidia.com/mlnxnics", NULL};
    for (int i = 0; bound[i]; i++)
        if (fb_cluster_pod_qty(pod, bound[i]) > 0)
            return true;
    return false;
}

struct mtu_seen {
    char net[200];
    long mtu;
    char pod[160];
};

struct multus_state {
    struct mtu_seen seen[MTU_SEEN_MAX];
    size_t nseen;
    size_t pods, attached;
};

/* What went wrong, so the fix names only what applies. */
enum finding_kind {
    KIND_NO_NAD = 1 << 0,
    KIND_NOT_ATTACHED = 1 << 1,
    KIND_IFACE = 1 << 2,
    KIND_NO_IP = 1 << 3,
    KIND_NO_DEVICE = 1 << 4,
    KIND_MTU = 1 << 5,
};

struct pod_finding {
    enum fb_check_outcome v;
    char why[512];
    size_t used;
    unsigned kinds;
};

static void finding(struct pod_finding *f, enum fb_check_outcome v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* All of a pod's findings are kept ("; "), the worst verdict with them. */
static void finding(struct pod_finding *f, enum fb_check_outcome v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fb_outcome_append(&f->v, f->why, sizeof f->why, &f->used, ", ", 256, v, fmt, ap);
    va_end(ap);
}

/* An MTU for a network seen on another pod differs: "pod a 9000". */
static const struct mtu_seen *other_mtu(struct multus_state *st, const char *net, long mtu,
                                        const char *pod)
{
    const struct mtu_seen *differs = NULL;
    bool known = false;
    for (size_t i = 0; i < st->nseen; i++)
        if (strcmp(st->seen[i].net, net) == 0) {
            known = true;
            if (st->seen[i].mtu != mtu)
                differs = &st->seen[i];
        }
    if (!known && st->nseen < MTU_SEEN_MAX) {
        struct mtu_seen *s = &st->seen[st->nseen++];
        snprintf(s->net, sizeof s->net, "%s", net);
        snprintf(s->pod, sizeof s->pod, "%s", pod);
        s->mtu = mtu;
    }
    return differs;
}

static void judge_attachment(const struct net_request *r, json_object *entry, json_object *nad,
                             const char *who, struct multus_state *st, struct pod_finding *f,
                             bool *device)
{
    const char *iface = fb_json_get_string(entry, "interface");
    json_object *ips = NULL;
    if (iface == NULL || (r->iface[0] && strcmp(iface, r->iface) != 0))
        f->kinds |= KIND_IFACE;
    if (iface == NULL)
        finding(f, FB_CHECK_FAIL, "%s attached without an interface", r->name);
    else if (r->iface[0] && strcmp(iface, r->iface) != 0)
        finding(f, FB_CHECK_FAIL, "%s on %s, asked @%s", r->name, iface, r->iface);
    if (!json_object_object_get_ex(entry, "ips", &ips) || json_object_array_length(ips) == 0) {
        f->kinds |= KIND_NO_IP;
        finding(f, FB_CHECK_WARN, "%s on %s has no IP (RoCE needs one for its GID)", r->name,
                iface ? iface : "?");
    }
    if (json_object_object_get_ex(entry, "device-info", NULL)) {
        *device = true;
    } else if (fb_kube_annotation(nad, NAD_RESOURCE) != NULL) {
        f->kinds |= KIND_NO_DEVICE;
        finding(f, FB_CHECK_WARN, "%s attached but no RDMA device (device-info) although the "
                "NAD binds %s", r->name, fb_kube_annotation(nad, NAD_RESOURCE));
    }
    json_object *m = NULL;
    long mtu = json_object_object_get_ex(entry, "mtu", &m) ? (long)json_object_get_int64(m) : 0;
    long want = nad_mtu(nad);
    bool off_nad = mtu > 0 && want > 0 && mtu != want;
    if (off_nad) {
        f->kinds |= KIND_MTU;
        finding(f, FB_CHECK_WARN, "%s MTU %ld, its NAD says %ld", r->name, mtu, want);
    }
    long eff = mtu > 0 ? mtu : want;
    char net[200];
    snprintf(net, sizeof net, "%.63s/%.127s", r->ns, r->name);
    const struct mtu_seen *o = eff > 0 ? other_mtu(st, net, eff, who) : NULL;
    /* Off its NAD already says why it differs from the other pods. */
    if (o && !off_nad) {
        f->kinds |= KIND_MTU;
        finding(f, FB_CHECK_WARN, "%s MTU %ld, %s has %ld", r->name, eff, o->pod, o->mtu);
    }
    st->attached++;
}

static void judge_pod(const struct fb_cluster_ctx *ctx, json_object *pod, const char *text,
                      struct multus_state *st, struct pod_finding *f)
{
    struct net_request req[MAX_REQUESTS];
    int beyond = 0;
    int n = parse_requests(text, fb_kube_namespace(pod), req, &beyond);
    if (n < 0) {
        finding(f, FB_CHECK_FAIL, "%s is not a network list or JSON array", NETWORKS);
        return;
    }
    static const char *const phase_key[] = {"status", "phase", NULL};
    const char *phase = fb_cluster_string_at(pod, phase_key);
    bool running = phase && strcmp(phase, "Running") == 0;
    const char *status_text = fb_kube_annotation(pod, NETWORK_STATUS);
    json_object *status = status_text ? json_tokener_parse(status_text) : NULL;
    if (status && !json_object_is_type(status, json_type_array)) {
        json_object_put(status);
        status = NULL;
    }
    char who[160];
    fb_cluster_who(pod, who, sizeof who);
    bool device = false, used[STATUS_MAX] = {false};
    size_t attached_before = st->attached;
    if (beyond > 0)
        finding(f, FB_CHECK_WARN, "%d more requested networks not judged (the first %d are)",
                beyond, MAX_REQUESTS);
    for (int i = 0; i < n; i++) {
        json_object *nad = find_nad(ctx, &req[i]);
        if (nad == NULL) {
            f->kinds |= KIND_NO_NAD;
            finding(f, FB_CHECK_FAIL, "asks %s/%s, no such NetworkAttachmentDefinition",
                    req[i].ns, req[i].name);
            continue;
        }
        if (!running)
            continue;
        json_object *entry = find_status(status, &req[i], used);
        if (entry == NULL) {
            f->kinds |= KIND_NOT_ATTACHED;
            finding(f, FB_CHECK_FAIL, "%s requested but not attached (%s)", req[i].name,
                    status_text ? "no network-status entry" : "no network-status annotation");
        } else {
            judge_attachment(&req[i], entry, nad, who, st, f, &device);
        }
    }
    if (st->attached > attached_before && !device && asks_bound_rdma_device(pod)) {
        f->kinds |= KIND_NO_DEVICE;
        finding(f, FB_CHECK_WARN, "attached but no RDMA device (device-info) on any network, "
                "though it asks an RDMA VF");
    }
    json_object_put(status);
}

/* One sentence per kind of finding, in the order a fix is made. */
static void set_fix(struct fb_check *c, unsigned kinds)
{
    static const struct {
        unsigned kind;
        const char *text;
    } fixes[] = {
        {KIND_NO_NAD, "create the NetworkAttachmentDefinition in the pod's namespace (or name "
                      "its namespace: ns/name@net1)"},
        {KIND_NOT_ATTACHED, "kubectl describe pod shows why Multus did not attach it (the CNI "
                            "plugin's error in the pod's events)"},
        {KIND_IFACE, "ask the interface by name (name@net1) and use that name in "
                     "NCCL_SOCKET_IFNAME/NCCL_IB_HCA"},
        {KIND_NO_IP, "give the NAD an ipam (nv-ipam, whereabouts) so RoCE has a GID"},
        {KIND_NO_DEVICE, "a VF network's NAD carries the " NAD_RESOURCE " annotation and the pod "
                         "requests that resource, so the VF comes with the attachment"},
        {KIND_MTU, "give every NAD of one fabric the same \"mtu\", and the switch path that "
                   "MTU"},
    };
    char text[FB_CHECK_TEXT_MAX] = "";
    size_t used = 0;
    for (size_t i = 0; i < sizeof fixes / sizeof fixes[0]; i++)
        if (kinds & fixes[i].kind)
            fb_strbuf_append(text, sizeof text, &used, "%s%s", used ? "; " : "", fixes[i].text);
    fb_check_fix(c, "%s", text);
}

static bool asks_networks(json_object *pod)
{
    return !fb_cluster_pod_finished(pod) && fb_cluster_pod_qty(pod, GPU_RESOURCE) > 0 &&
           fb_kube_annotation(pod, NETWORKS) != NULL;
}

/* Without netattachdefs.json every request would name "no such" NAD: a
 * save that left the file out proves nothing about them. */
static bool skip_unsaved_nads(const struct fb_cluster_ctx *ctx, json_object *pods,
                              struct fb_check *c)
{
    size_t asking = 0;
    for (size_t i = 0; pods && i < json_object_array_length(pods); i++)
        asking += asks_networks(json_object_array_get_idx(pods, i));
    if (asking == 0 || !(ctx->data->unsaved & FB_KUBE_NADS))
        return false;
    char cmd[600];
    fb_kube_save_command(ctx->data, FB_KUBE_NADS, cmd, sizeof cmd);
    fb_check_set(c, FB_CHECK_SKIP, "not judged: %zu GPU pods ask for Multus networks, but "
                 "netattachdefs.json is not saved in %s", asking,
                 ctx->data->dir ? ctx->data->dir : "--from DIR");
    fb_check_fix(c, "save it: %s", cmd);
    return true;
}

void fb_cluster_check_multus_attachments(const struct fb_cluster_ctx *ctx, struct fb_check *c)
{
    json_object *pods = fb_kube_items(ctx->data->pods);
    if (skip_unsaved_nads(ctx, pods, c))
        return;
    struct multus_state *st = calloc(1, sizeof *st);
    if (st == NULL) {
        fb_check_set(c, FB_CHECK_FAIL, "out of memory");
        return;
    }
    char bad[FB_CHECK_TEXT_MAX] = "";
    size_t bu = 0, nbad = 0;
    enum fb_check_outcome worst = FB_CHECK_OK;
    unsigned kinds = 0;
    for (size_t i = 0; pods && i < json_object_array_length(pods); i++) {
        json_object *pod = json_object_array_get_idx(pods, i);
        const char *text = fb_kube_annotation(pod, NETWORKS);
        if (!asks_networks(pod))
            continue;
        st->pods++;
        struct pod_finding f = {FB_CHECK_OK, "", 0};
        judge_pod(ctx, pod, text, st, &f);
        if (f.v == FB_CHECK_OK)
            continue;
        char who[160];
        fb_cluster_who(pod, who, sizeof who);
        nbad++;
        kinds |= f.kinds;
        worst = f.v > worst ? f.v : worst;
        fb_strbuf_append(bad, sizeof bad, &bu, "%s%s: %s", bu ? "; " : "", who, f.why);
        fb_check_culprit(c, "%s", who);
    }
    size_t pods_asking = st->pods, attached = st->attached;
    free(st);
    if (pods_asking == 0) {
        fb_check_set(c, FB_CHECK_SKIP, "no GPU pod asks for Multus networks (%s)", NETWORKS);
        return;
    }
    if (worst == FB_CHECK_OK) {
        fb_check_set(c, FB_CHECK_OK, "%zu GPU pods: %zu requested networks attached as asked",
                     pods_asking, attached);
        return;
    }
    fb_check_set(c, worst, "%zu of %zu GPU pods: %s", nbad, pods_asking, bad);
    set_fix(c, kinds);
}
