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

#endif
