/* gpu-capacity: can a multi-node run start now? It needs two schedulable
 * GPU nodes with --gpus-per-node GPUs free. launch/kubectl.sh applies the
 * same rule (docs/doctor.md, gpu-capacity), so the two agree on a cluster.
 *
 * A free GPU node: .spec.unschedulable not true; condition Ready=True; no
 * taint of effect NoSchedule or NoExecute other than key nvidia.com/gpu;
 * allocatable nvidia.com/gpu minus the GPUs of the pods bound to it that
 * are not Succeeded/Failed and not fabric-bench's own workers (label
 * app.kubernetes.io/name=fabric-bench) is at least N. */
#include <stdio.h>
#include <string.h>

#include "core/jsonio.h"
#include "doctor/cluster.h"

#define GPU_RESOURCE "nvidia.com/gpu"
#define OWN_LABEL "app.kubernetes.io/name"
#define OWN_VALUE "fabric-bench"
#define NODES_NEEDED 2

static bool is_own_worker(json_object *pod)
{
    const char *v = fb_kube_label(pod, OWN_LABEL);
    return v != NULL && strcmp(v, OWN_VALUE) == 0;
}

/* The first taint that keeps a GPU pod off the node, as "key:Effect". */
static bool blocking_taint(json_object *node, char *buf, size_t len)
{
    static const char *const keys[] = {"spec", "taints", NULL};
    json_object *taints = fb_kube_path(node, keys);
    for (size_t i = 0; taints && json_object_is_type(taints, json_type_array) &&
                       i < json_object_array_length(taints); i++) {
        json_object *t = json_object_array_get_idx(taints, i);
        const char *key = fb_json_get_string(t, "key");
        const char *effect = fb_json_get_string(t, "effect");
        if (effect == NULL || (strcmp(effect, "NoSchedule") != 0 && strcmp(effect, "NoExecute") != 0))
            continue;
        if (key && strcmp(key, GPU_RESOURCE) == 0)
            continue;
        snprintf(buf, len, "%s:%s", key ? key : "?", effect);
        return true;
    }
    return false;
}

/* GPUs held on the node by pods other than fabric-bench's own. */
static long long gpus_in_use(const struct fb_cluster_ctx *ctx, const char *node)
{
    json_object *pods = fb_kube_items(ctx->data->pods);
    long long used = 0;
    for (size_t i = 0; pods && i < json_object_array_length(pods); i++) {
        json_object *pod = json_object_array_get_idx(pods, i);
        const char *on = fb_cluster_pod_node(pod);
        if (on && strcmp(on, node) == 0 && !fb_cluster_pod_finished(pod) && !is_own_worker(pod))
            used += fb_cluster_pod_qty(pod, GPU_RESOURCE);
    }
    return used;
}

/* Free GPUs on the node, or -1 with why it is out in `why`. */
static long long node_free_gpus(const struct fb_cluster_ctx *ctx, json_object *node,
                                long need, char *why, size_t len)
{
    static const char *const unsched[] = {"spec", "unschedulable", NULL};
    json_object *u = fb_kube_path(node, unsched);
    const char *since = NULL;
    const char *ready = fb_cluster_condition(node, "Ready", NULL, &since);
    char taint[160];
    long long alloc = fb_cluster_node_allocatable(node, GPU_RESOURCE);
    if (u && json_object_get_boolean(u)) {
        snprintf(why, len, "cordoned");
        return -1;
    }
    if (ready == NULL || strcmp(ready, "True") != 0) {
        snprintf(why, len, "Ready=%s", ready ? ready : "absent");
        return -1;
    }
    if (blocking_taint(node, taint, sizeof taint)) {
        snprintf(why, len, "taint %s", taint);
        return -1;
    }
    long long free_gpus = alloc - gpus_in_use(ctx, fb_kube_name(node));
    if (free_gpus < need) {
        snprintf(why, len, "%lld of %lld GPUs free, needs %ld", free_gpus < 0 ? 0 : free_gpus,
                 alloc, need);
        return -1;
    }
    return free_gpus;
}

void fb_cluster_check_gpu_capacity(const struct fb_cluster_ctx *ctx, struct fb_check *c)
{
    json_object *nodes = fb_kube_items(ctx->data->nodes);
    long need = ctx->gpus_per_node > 0 ? ctx->gpus_per_node : 1;
    char out[FB_CHECK_TEXT_MAX] = "", in[512] = "";
    size_t ou = 0, iu = 0, gpu_nodes = 0, free_nodes = 0;
    for (size_t i = 0; nodes && i < json_object_array_length(nodes); i++) {
        json_object *node = json_object_array_get_idx(nodes, i);
        if (fb_cluster_node_allocatable(node, GPU_RESOURCE) <= 0)
            continue;
        gpu_nodes++;
        char why[200];
        long long n = node_free_gpus(ctx, node, need, why, sizeof why);
        if (n >= 0) {
            free_nodes++;
            fb_strbuf_append(in, sizeof in, &iu, "%s%s (%lld free)", iu ? ", " : "",
                             fb_kube_name(node), n);
        } else {
            fb_strbuf_append(out, sizeof out, &ou, "%s%s: %s", ou ? "; " : "", fb_kube_name(node),
                             why);
            fb_check_culprit(c, "%s", fb_kube_name(node));
        }
    }
    char why[256];
    if (free_nodes >= NODES_NEEDED && fb_kube_pods_partial(ctx->data, NULL, why, sizeof why)) {
        /* Pods of the namespaces the list lacks may hold these GPUs: free
         * is unverified (busy stays busy, whatever else runs). */
        char cmd[600];
        fb_kube_save_command(ctx->data, FB_KUBE_PODS, cmd, sizeof cmd);
        fb_check_set(c, FB_CHECK_SKIP, "unverified: %zu GPU nodes look free (%s), but %s: the "
                     "GPUs other namespaces' pods hold are not counted", free_nodes, in, why);
        fb_check_fix(c, "save the pods of every namespace: %s", cmd);
        return;
    }
    if (free_nodes >= NODES_NEEDED) {
        fb_check_set(c, FB_CHECK_OK, "%zu free GPU nodes (at least %ld free GPU%s each): %s", free_nodes,
                     need, need == 1 ? "" : "s", in);
        if (ou > 0)
            fb_check_note(c, "out: %s", out);
        return;
    }
    c->blocks_run = ctx->capacity_gates;
    fb_check_set(c, FB_CHECK_SKIP, "skipped: needs two free GPU nodes (at least %ld free GPU%s each), %zu of "
                 "%zu GPU nodes free (%s%s%s)%s", need, need == 1 ? "" : "s", free_nodes, gpu_nodes,
                 gpu_nodes == 0 ? "no node offers " GPU_RESOURCE : out,
                 iu ? "; free: " : "", in,
                 ctx->capacity_gates ? "" : "; not gating the exit: name gpu-capacity or give "
                                            "--gpus-per-node");
    fb_check_fix(c, "free GPUs on a second node (finish or delete the pods holding them, "
                    "uncordon, remove the taint) or add a GPU node");
}
