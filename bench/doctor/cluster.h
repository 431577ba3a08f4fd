/* fabric-doctor cluster: checks of a Kubernetes cluster's GPU fabric
 * wiring from kubectl lists (kube.h): GKE multi-network Networks, a3-mega
 * NIC mapping, worker pods' fabric resources, TCPXO version pairing. */
#ifndef FB_DOCTOR_CLUSTER_H
#define FB_DOCTOR_CLUSTER_H

#include <stddef.h>

#include "doctor/check.h"
#include "doctor/kube.h"

/* GKE a3-megagpu-8g: eight GPU NICs, eth1..eth8, beside eth0. */
#define FB_GKE_GPU_NICS 8
#define FB_GKE_TCPXO_MACHINE "a3-megagpu-8g"

#define FB_PAIRS_MAX 16

/* A nccl-plugin installer version and the tcpxo-daemon (tcpgpudmarxd)
 * version Google released with it. */
struct fb_version_pair {
    char plugin[32];
    char daemon[32];
};

struct fb_cluster_ctx {
    const struct fb_kube_data *data;
    size_t npairs;
    struct fb_version_pair pairs[FB_PAIRS_MAX];
    /* gpu-capacity: GPUs a node must have free (--gpus-per-node, 0 reads
     * as 1), and whether its skip decides the exit (11): it does when the
     * check is named or --gpus-per-node is given, not when a full run
     * judges the running workers that hold the GPUs. */
    long gpus_per_node;
    bool capacity_gates;
};

typedef void (*fb_cluster_check_fn)(const struct fb_cluster_ctx *ctx, struct fb_check *out);

struct fb_cluster_check_def {
    const char *name;
    unsigned needs; /* FB_KUBE_* lists */
    fb_cluster_check_fn run;
    const char *about;
};
/* fb_check_table_find finds a row by the name at its start. */
_Static_assert(offsetof(struct fb_cluster_check_def, name) == 0,
               "a check row starts with its name");

const struct fb_cluster_check_def *fb_cluster_checks(size_t *n);
const struct fb_cluster_check_def *fb_cluster_check_find(const char *name);

/* The built-in known pairs. */
void fb_cluster_ctx_init(struct fb_cluster_ctx *ctx, const struct fb_kube_data *data);

/* Adds "PLUGIN=DAEMON" (--pair); FB_ERR_USAGE when malformed or full. */
enum fb_status fb_cluster_add_pair(struct fb_cluster_ctx *ctx, const char *text,
                                   struct fb_err *err);

void fb_cluster_check_gpu_nic_networks(const struct fb_cluster_ctx *ctx, struct fb_check *c);
void fb_cluster_check_nic_info(const struct fb_cluster_ctx *ctx, struct fb_check *c);
void fb_cluster_check_pod_fabric(const struct fb_cluster_ctx *ctx, struct fb_check *c);
void fb_cluster_check_tcpxo_versions(const struct fb_cluster_ctx *ctx, struct fb_check *c);

/* Shared by the cluster checks. */
bool fb_cluster_is_tcpxo_node(json_object *node);
bool fb_cluster_is_gpu_nic_network(const char *name);
json_object *fb_cluster_find_node(const struct fb_cluster_ctx *ctx, const char *name);

/* RDMA fabric wiring (cluster_rdma.c, cluster_multus.c, cluster_gdr.c) and
 * GPU capacity (cluster_capacity.c). */
void fb_cluster_check_sriov_node_states(const struct fb_cluster_ctx *ctx, struct fb_check *c);
void fb_cluster_check_nic_cluster_policy(const struct fb_cluster_ctx *ctx, struct fb_check *c);
void fb_cluster_check_multus_attachments(const struct fb_cluster_ctx *ctx, struct fb_check *c);
void fb_cluster_check_devices_per_gpu(const struct fb_cluster_ctx *ctx, struct fb_check *c);
void fb_cluster_check_gpudirect_rdma(const struct fb_cluster_ctx *ctx, struct fb_check *c);
void fb_cluster_check_gpu_capacity(const struct fb_cluster_ctx *ctx, struct fb_check *c);

/* Pod and node quantities as pod-fabric reads them (cluster_pods.c): a
 * pod's count is the larger of request and limit per container, summed. */
long long fb_cluster_quantity(json_object *v);
long long fb_cluster_pod_qty(json_object *pod, const char *resource);
long long fb_cluster_node_allocatable(json_object *node, const char *resource);
bool fb_cluster_pod_finished(json_object *pod);

/* A string at a path, NULL when absent or not a string. */
const char *fb_cluster_string_at(json_object *obj, const char *const *keys);
/* spec.nodeName, NULL when not bound. */
const char *fb_cluster_pod_node(json_object *pod);
/* status.conditions[type]: its status ("True", ...) and lastTransitionTime
 * (NULL when absent); returns the status or NULL without the condition. */
const char *fb_cluster_condition(json_object *obj, const char *type, const char **since);
/* "namespace/name" of an object. */
void fb_cluster_who(json_object *obj, char *buf, size_t len);

#endif
