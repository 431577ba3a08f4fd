/* RDMA devices per GPU and GPUDirect RDMA readiness, judged from nodes and
 * the GPU and Network Operators' driver pods. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonio.h"
#include "doctor/cluster.h"

#define GPU_RESOURCE "nvidia.com/gpu"
#define INSTANCE_TYPE "node.kubernetes.io/instance-type"
#define DRIVER_APP "nvidia-driver-daemonset"
#define PEERMEM_CTR "nvidia-peermem-ctr"
#define DRIVER_CTR "nvidia-driver-ctr"
#define OFED_LABEL "nvidia.com/ofed-driver"

/* Resources that count whole devices (a VF, an EFA device, a NIC). The
 * shared device plugin's rdma/... resources count shares of all devices
 * instead, so they have no ratio. */
static const char *const device_resources[] = {
    "vpc.amazonaws.com/efa", "nvidia.com/rdma_vf", "nvidia.com/rdma-vf",
    "nvidia.com/mlnxnics",   "nvidia.com/hostdev", NULL,
};

/* Fabric devices the instance type has for its GPUs. */
struct instance_fabric {
    const char *type;
    long devices, gpus;
};

static const struct instance_fabric known_instances[] = {
    {"p5.48xlarge", 32, 8},              /* 32 EFA devices, 3200 Gbps */
    {"p5e.48xlarge", 32, 8},
    {"p4d.24xlarge", 4, 8},              /* 4 EFA devices, 400 Gbps */
    {"Standard_ND96isr_H100_v5", 8, 8},  /* 8 InfiniBand NDR HCAs */
    {"Standard_ND96isr_H200_v5", 8, 8},
    {"a3-ultragpu-8g", 8, 8},            /* 8 ConnectX-7 RDMA NICs */
    {"BM.GPU.H100.8", 16, 8},            /* 16 RoCE ports as rdma-vf */
};

static const struct instance_fabric *find_instance(const char *type)
{
    for (size_t i = 0; type && i < sizeof known_instances / sizeof known_instances[0]; i++)
        if (strcmp(known_instances[i].type, type) == 0)
            return &known_instances[i];
    return NULL;
}

static const char *instance_type(json_object *node)
{
    const char *t = fb_kube_label(node, INSTANCE_TYPE);
    return t ? t : fb_kube_label(node, "beta.kubernetes.io/instance-type");
}

/* The node's device resource and its count; NULL when it offers none. */
static const char *node_device_resource(json_object *node, long long *count)
{
    for (int i = 0; device_resources[i]; i++) {
        long long n = fb_cluster_node_allocatable(node, device_resources[i]);
        if (n > 0) {
            *count = n;
            return device_resources[i];
        }
    }
    *count = 0;
    return NULL;
}

/* The ratio seen first for each instance type, to find uneven nodes. */
struct type_ratio {
    char type[64], node[128];
    long long devices, gpus;
};

#define TYPES_MAX 16

struct ratio_state {
    struct type_ratio types[TYPES_MAX];
    size_t ntypes, nodes, pods;
    char bad[FB_CHECK_TEXT_MAX], good[512];
    size_t bu, gu;
    enum fb_check_outcome worst;
    bool node_wrong, pod_short;
};

static void ratio_bad(struct ratio_state *st, enum fb_check_outcome v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void ratio_bad(struct ratio_state *st, enum fb_check_outcome v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fb_outcome_append(&st->worst, st->bad, sizeof st->bad, &st->bu, "; ", 384, v, fmt, ap);
    va_end(ap);
}

static void judge_node_ratio(json_object *node, const char *res, long long devices,
                             long long gpus, struct ratio_state *st, struct fb_check *c)
{
    const char *type = instance_type(node);
    const char *name = fb_kube_name(node);
    const struct instance_fabric *known = find_instance(type);
    double per_gpu = (double)devices / (double)gpus;
    if (known) {
        long long expect = gpus * known->devices / known->gpus;
        if (devices != expect) {
            ratio_bad(st, devices < expect ? FB_CHECK_FAIL : FB_CHECK_WARN,
                      "%s (%s): %lld %s for %lld GPUs (%g per GPU), the instance has %lld (%g "
                      "per GPU)", name, type, devices, res, gpus, per_gpu, expect,
                      (double)known->devices / (double)known->gpus);
            fb_check_culprit(c, "%s", name);
            st->node_wrong = true;
        } else if (st->gu < 200 && strstr(st->good, type) == NULL) {
            fb_strbuf_append(st->good, sizeof st->good, &st->gu, "%s%s %lld %s / %lld GPUs = "
                             "%g per GPU as the instance has", st->gu ? ", " : "", type, devices,
                             res, gpus, per_gpu);
        }
        return;
    }
    const char *key = type ? type : "(no instance type)";
    for (size_t i = 0; i < st->ntypes; i++) {
        struct type_ratio *t = &st->types[i];
        if (strcmp(t->type, key) != 0)
            continue;
        if (t->devices * gpus != devices * t->gpus) {
            ratio_bad(st, FB_CHECK_WARN, "%s (%s): %lld %s / %lld GPUs = %g per GPU, but %s has "
                      "%g", name, key, devices, res, gpus, per_gpu, t->node,
                      (double)t->devices / (double)t->gpus);
            fb_check_culprit(c, "%s", name);
            st->node_wrong = true;
        }
        return;
    }
    if (st->ntypes < TYPES_MAX) {
        struct type_ratio *t = &st->types[st->ntypes++];
        snprintf(t->type, sizeof t->type, "%s", key);
        snprintf(t->node, sizeof t->node, "%s", name);
        t->devices = devices;
        t->gpus = gpus;
        if (st->gu < 200)
            fb_strbuf_append(st->good, sizeof st->good, &st->gu, "%s%s %lld %s / %lld GPUs = "
                             "%g per GPU", st->gu ? ", " : "", key, devices, res, gpus, per_gpu);
    }
}

/* A pod's share of the node's devices against its share of the GPUs. */
static void judge_pod_ratio(json_object *pod, json_object *node, const char *res,
                            long long devices, long long gpus, struct ratio_state *st,
                            struct fb_check *c)
{
    long long pg = fb_cluster_pod_qty(pod, GPU_RESOURCE);
    long long pd = fb_cluster_pod_qty(pod, res);
    st->pods++;
    if (pd * gpus >= pg * devices)
        return;
    char who[160];
    fb_cluster_who(pod, who, sizeof who);
    double share = (double)pg * (double)devices / (double)gpus;
    ratio_bad(st, 2 * pd * gpus < pg * devices ? FB_CHECK_FAIL : FB_CHECK_WARN,
              "%s: %lld GPUs but %lld of %s's %lld %s (%g per GPU; in proportion %g)", who, pg,
              pd, fb_kube_name(node), devices, res, (double)pd / (double)pg, share);
    fb_check_culprit(c, "%s", who);
    st->pod_short = true;
}

void fb_cluster_check_devices_per_gpu(const struct fb_cluster_ctx *ctx, struct fb_check *c)
{
    json_object *nodes = fb_kube_items(ctx->data->nodes);
    json_object *pods = fb_kube_items(ctx->data->pods);
    struct ratio_state *st = calloc(1, sizeof *st);
    if (st == NULL) {
        fb_check_set(c, FB_CHECK_FAIL, "out of memory");
        return;
    }
    st->worst = FB_CHECK_OK;
    for (size_t i = 0; nodes && i < json_object_array_length(nodes); i++) {
        json_object *node = json_object_array_get_idx(nodes, i);
        long long gpus = fb_cluster_node_allocatable(node, GPU_RESOURCE), devices = 0;
        const char *res = node_device_resource(node, &devices);
        if (gpus <= 0 || res == NULL)
            continue;
        st->nodes++;
        judge_node_ratio(node, res, devices, gpus, st, c);
        for (size_t k = 0; pods && k < json_object_array_length(pods); k++) {
            json_object *pod = json_object_array_get_idx(pods, k);
            const char *on = fb_cluster_pod_node(pod);
            if (on && strcmp(on, fb_kube_name(node)) == 0 && !fb_cluster_pod_finished(pod) &&
                fb_cluster_pod_qty(pod, GPU_RESOURCE) > 0)
                judge_pod_ratio(pod, node, res, devices, gpus, st, c);
        }
    }
    if (st->nodes == 0)
        fb_check_set(c, FB_CHECK_SKIP, "no GPU node offers per-device fabric resources (EFA, "
                                       "rdma_vf, rdma-vf, mlnxnics, hostdev); rdma/* shared "
                                       "resources count shares, not devices");
    else if (st->worst == FB_CHECK_OK)
        fb_check_set(c, FB_CHECK_OK, "%zu GPU nodes: %s; %zu GPU pods in proportion", st->nodes,
                     st->good, st->pods);
    else
        fb_check_set(c, st->worst, "%s", st->bad);
    if (st->node_wrong)
        fb_check_fix(c, "a node short of its devices: the device plugin's selectors or the "
                        "SR-IOV policy's numVfs leave some out (kubectl describe node: "
                        "Allocatable); then every node of a type offers the same count%s",
                     st->pod_short ? "; and request devices in proportion to GPUs" : "");
    else if (st->pod_short)
        fb_check_fix(c, "request the node's devices in proportion to the GPUs (8 GPUs of a "
                        "p5.48xlarge: vpc.amazonaws.com/efa: 32; of a BM.GPU.H100.8: "
                        "nvidia.com/rdma-vf: 16): NCCL uses only the devices it is given");
    free(st);
}

/* ---- gpudirect-rdma ---- */

/* RDMA resources: everything pod-fabric counts but EFA, whose GPU memory
 * registration is the EFA driver's (efa_nv_peermem) or dma-buf. */
static bool node_has_rdma(json_object *node)
{
    static const char *const keys[] = {"status", "allocatable", NULL};
    json_object *alloc = fb_kube_path(node, keys);
    if (alloc == NULL || !json_object_is_type(alloc, json_type_object))
        return false;
    json_object_object_foreach(alloc, key, val) {
        bool rdma = strncmp(key, "rdma/", 5) == 0 || strcmp(key, "nvidia.com/rdma_vf") == 0 ||
                    strcmp(key, "nvidia.com/rdma-vf") == 0 ||
                    strcmp(key, "nvidia.com/mlnxnics") == 0 ||
                    strcmp(key, "nvidia.com/hostdev") == 0;
        if (rdma && fb_cluster_quantity(val) > 0)
            return true;
    }
    return false;
}

static bool is_driver_pod(json_object *pod)
{
    const char *app = fb_kube_label(pod, "app");
    return (app && strcmp(app, DRIVER_APP) == 0) ||
           strncmp(fb_kube_name(pod), DRIVER_APP, strlen(DRIVER_APP)) == 0;
}

static bool is_mofed_pod(json_object *pod)
{
    static const char *const keys[] = {"metadata", "labels", OFED_LABEL, NULL};
    return fb_kube_path(pod, keys) != NULL;
}

static json_object *pod_on(const struct fb_cluster_ctx *ctx, const char *node,
                           bool (*is)(json_object *))
{
    json_object *pods = fb_kube_items(ctx->data->pods);
    for (size_t i = 0; pods && i < json_object_array_length(pods); i++) {
        json_object *pod = json_object_array_get_idx(pods, i);
        const char *on = fb_cluster_pod_node(pod);
        if (on && strcmp(on, node) == 0 && !fb_cluster_pod_finished(pod) && is(pod))
            return pod;
    }
    return NULL;
}

static json_object *named_in(json_object *pod, const char *which, const char *name)
{
    const char *const keys[] = {which == NULL ? "spec" : "status",
                                which == NULL ? "containers" : which, NULL};
    json_object *arr = fb_kube_path(pod, keys);
    for (size_t i = 0; arr && json_object_is_type(arr, json_type_array) &&
                       i < json_object_array_length(arr); i++) {
        const char *n = fb_json_get_string(json_object_array_get_idx(arr, i), "name");
        if (n && strcmp(n, name) == 0)
            return json_object_array_get_idx(arr, i);
    }
    return NULL;
}

/* "ready", or why not: the waiting reason ("PodInitializing"). */
static bool container_ready(json_object *pod, const char *name, const char **why)
{
    json_object *st = named_in(pod, "containerStatuses", name), *ready = NULL;
    static const char *const reason[] = {"state", "waiting", "reason", NULL};
    *why = st ? fb_cluster_string_at(st, reason) : "no status";
    if (*why == NULL)
        *why = "not ready";
    return st && json_object_object_get_ex(st, "ready", &ready) && json_object_get_boolean(ready);
}

/* When the pod became Ready: its Ready condition, else its containers'
 * earliest start. RFC 3339 UTC times compare as strings. */
static const char *ready_since(json_object *pod)
{
    const char *since = NULL;
    const char *status = fb_cluster_condition(pod, "Ready", NULL, &since);
    if (status && strcmp(status, "True") == 0 && since)
        return since;
    static const char *const keys[] = {"status", "containerStatuses", NULL};
    static const char *const started[] = {"state", "running", "startedAt", NULL};
    json_object *arr = fb_kube_path(pod, keys);
    const char *first = NULL;
    for (size_t i = 0; arr && json_object_is_type(arr, json_type_array) &&
                       i < json_object_array_length(arr); i++) {
        const char *t = fb_cluster_string_at(json_object_array_get_idx(arr, i), started);
        if (t && (first == NULL || strcmp(t, first) < 0))
            first = t;
    }
    return first;
}

static bool pod_ready(json_object *pod)
{
    const char *since = NULL, *status = fb_cluster_condition(pod, "Ready", NULL, &since);
    return status && strcmp(status, "True") == 0;
}

static const char *driver_env(json_object *pod, const char *var)
{
    json_object *ctr = named_in(pod, NULL, DRIVER_CTR), *env = NULL;
    if (ctr == NULL || !json_object_object_get_ex(ctr, "env", &env))
        return NULL;
    for (size_t i = 0; json_object_is_type(env, json_type_array) &&
                       i < json_object_array_length(env); i++) {
        json_object *e = json_object_array_get_idx(env, i);
        const char *n = fb_json_get_string(e, "name");
        if (n && strcmp(n, var) == 0)
            return fb_json_get_string(e, "value");
    }
    return NULL;
}

/* Linux >= 5.12 (dma-buf import in the RDMA core). */
static bool kernel_has_dmabuf(json_object *node, const char **version)
{
    static const char *const keys[] = {"status", "nodeInfo", "kernelVersion", NULL};
    *version = fb_cluster_string_at(node, keys);
    int major = 0, minor = 0;
    if (*version == NULL || sscanf(*version, "%d.%d", &major, &minor) != 2)
        return false;
    return major > 5 || (major == 5 && minor >= 12);
}

struct gdr_node {
    enum fb_check_outcome v;
    char line[320];
    bool order, dmabuf;
};

static void judge_peermem(json_object *driver, json_object *mofed, const char *name,
                          struct gdr_node *g)
{
    const char *why = NULL;
    if (!container_ready(driver, PEERMEM_CTR, &why)) {
        g->v = FB_CHECK_FAIL;
        snprintf(g->line, sizeof g->line, "%s: %s in %s not ready (%s)", name, PEERMEM_CTR,
                 fb_kube_name(driver), why);
        return;
    }
    if (mofed && !pod_ready(mofed)) {
        g->v = FB_CHECK_FAIL;
        snprintf(g->line, sizeof g->line, "%s: MOFED pod %s not Ready", name, fb_kube_name(mofed));
        return;
    }
    const char *dt = ready_since(driver), *mt = mofed ? ready_since(mofed) : NULL;
    if (dt && mt && strcmp(dt, mt) < 0) {
        g->v = FB_CHECK_WARN;
        g->order = true;
        snprintf(g->line, sizeof g->line, "%s: driver pod %s Ready %s before MOFED pod %s (%s): "
                 "restart the driver pod after MOFED", name, fb_kube_name(driver), dt,
                 fb_kube_name(mofed), mt);
        return;
    }
    g->v = FB_CHECK_OK;
    snprintf(g->line, sizeof g->line, "%s: %s ready%s", name, PEERMEM_CTR,
             mofed ? ", after MOFED" : "");
}

static void judge_dmabuf(json_object *driver, json_object *node, const char *name,
                         struct gdr_node *g)
{
    const char *open = driver_env(driver, "OPEN_KERNEL_MODULES_ENABLED");
    const char *type = driver_env(driver, "KERNEL_MODULE_TYPE");
    const char *kernel = NULL;
    bool new_kernel = kernel_has_dmabuf(node, &kernel);
    bool is_open = (open && strcmp(open, "true") == 0) || (type && strcmp(type, "open") == 0);
    g->dmabuf = true;
    if (is_open && new_kernel) {
        g->v = FB_CHECK_OK;
        snprintf(g->line, sizeof g->line, "%s: dma-buf (open kernel modules, kernel %s)", name,
                 kernel);
    } else if (type && strcmp(type, "auto") == 0 && new_kernel) {
        g->v = FB_CHECK_WARN;
        snprintf(g->line, sizeof g->line, "%s: no %s and KERNEL_MODULE_TYPE=auto: dma-buf "
                 "unverified (the open modules come only with newer drivers)", name, PEERMEM_CTR);
    } else {
        g->v = FB_CHECK_FAIL;
        snprintf(g->line, sizeof g->line, "%s: no %s and %s: no GPUDirect RDMA path, GPU "
                 "buffers go through host memory", name, PEERMEM_CTR,
                 is_open ? "kernel below 5.12" : "proprietary kernel modules");
    }
}

void fb_cluster_check_gpudirect_rdma(const struct fb_cluster_ctx *ctx, struct fb_check *c)
{
    json_object *nodes = fb_kube_items(ctx->data->nodes);
    size_t rdma = 0, host = 0, judged = 0, no_mofed = 0;
    char bad[FB_CHECK_TEXT_MAX] = "", good[640] = "";
    size_t bu = 0, gu = 0;
    enum fb_check_outcome worst = FB_CHECK_OK;
    bool order = false, dmabuf = false;
    for (size_t i = 0; nodes && i < json_object_array_length(nodes); i++) {
        json_object *node = json_object_array_get_idx(nodes, i);
        const char *name = fb_kube_name(node);
        json_object *mofed = pod_on(ctx, name, is_mofed_pod);
        if (fb_cluster_node_allocatable(node, GPU_RESOURCE) <= 0 ||
            (!node_has_rdma(node) && mofed == NULL))
            continue;
        rdma++;
        json_object *driver = pod_on(ctx, name, is_driver_pod);
        if (driver == NULL) {
            host++;
            continue;
        }
        judged++;
        no_mofed += mofed == NULL;
        struct gdr_node g = {FB_CHECK_OK, "", false, false};
        if (named_in(driver, NULL, PEERMEM_CTR))
            judge_peermem(driver, mofed, name, &g);
        else
            judge_dmabuf(driver, node, name, &g);
        if (g.v == FB_CHECK_OK) {
            fb_strbuf_append(good, sizeof good, &gu, "%s%s", gu ? "; " : "", g.line);
            continue;
        }
        worst = g.v > worst ? g.v : worst;
        order |= g.order;
        dmabuf |= g.dmabuf;
        fb_strbuf_append(bad, sizeof bad, &bu, "%s%s", bu ? "; " : "", g.line);
        fb_check_culprit(c, "%s", name);
    }
    if (rdma == 0) {
        fb_check_set(c, FB_CHECK_SKIP, "no GPU node with an RDMA fabric (EFA registers GPU "
                                       "memory through its own driver or dma-buf)");
        return;
    }
    char partial[256];
    bool lacks = fb_kube_pods_partial(ctx->data, NULL, partial, sizeof partial);
    if (judged == 0 && lacks) {
        /* The operators' pods run in namespaces of their own. */
        char cmd[600];
        fb_kube_save_command(ctx->data, FB_KUBE_PODS, cmd, sizeof cmd);
        fb_check_set(c, FB_CHECK_SKIP, "%zu RDMA GPU nodes, no GPU Operator driver pod in the "
                     "list, but %s: the driver pods run in the operator's namespace", rdma,
                     partial);
        fb_check_fix(c, "save the pods of every namespace: %s", cmd);
        return;
    }
    if (judged == 0) {
        fb_check_set(c, FB_CHECK_SKIP, "%zu RDMA GPU nodes, no GPU Operator driver pod: the "
                     "driver is the hosts'; fabric-doctor node peermem on a node judges it", rdma);
        return;
    }
    if (worst == FB_CHECK_OK)
        fb_check_set(c, FB_CHECK_OK, "%zu RDMA GPU nodes: %s", judged, good);
    else
        fb_check_set(c, worst, "%s", bad);
    if (host > 0)
        fb_check_note(c, "%zu nodes with the hosts' driver not judged", host);
    if (lacks && no_mofed > 0)
        fb_check_note(c, "%zu nodes without a MOFED pod in the list (%s): the driver's start "
                      "after MOFED unverified", no_mofed, partial);
    if (worst == FB_CHECK_OK)
        return;
    if (order)
        fb_check_fix(c, "nvidia-peermem must be built against MOFED: kubectl delete pod of the "
                        "driver on each named node (the DaemonSet restarts it after MOFED)");
    else if (dmabuf)
        fb_check_fix(c, "GPU Operator: --set driver.rdma.enabled=true (nvidia-peermem), or the "
                        "open kernel modules (driver.kernelModuleType=open, older releases "
                        "driver.useOpenKernelModules=true) on Linux >= 5.12 for dma-buf");
    else
        fb_check_fix(c, "the driver pod's %s waits for MOFED (/run/mellanox/drivers/.driver-"
                        "ready): get the Network Operator's mofed pod Ready on the node, then "
                        "the driver pod", PEERMEM_CTR);
}
