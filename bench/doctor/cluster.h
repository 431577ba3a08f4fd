/* fabric-doctor cluster: checks of a Kubernetes cluster's GPU fabric
 * wiring from kubectl lists (kube.h): GKE multi-network Networks, a3-mega
 * NIC mapping, worker pods' fabric resources, TCPXO version pairing; per
 * GKE GPU machine family (A3 High, A3 Mega, A3 Ultra, A4) the pods' GPU NIC
 * Networks, the RxDM sidecar's devices and logs, the node DaemonSets. */
#ifndef FB_DOCTOR_CLUSTER_H
#define FB_DOCTOR_CLUSTER_H

#include <stddef.h>

#include "doctor/check.h"
#include "doctor/kube.h"

/* GKE a3-megagpu-8g: eight GPU NICs, eth1..eth8, beside eth0 (its row of
 * the family table, cluster_gke_family.c). */
#define FB_GKE_GPU_NICS 8
#define FB_GKE_TCPXO_MACHINE "a3-megagpu-8g"

#define FB_PAIRS_MAX 16

/* The GKE GPU machine families and how each wires its GPU NICs. */
enum fb_gke_transport {
    FB_GKE_TCPX,  /* GPUDirect-TCPX, A3 High */
    FB_GKE_TCPXO, /* GPUDirect-TCPXO, A3 Mega */
    FB_GKE_RDMA,  /* GPUDirect RDMA (RoCE, gIB plugin), A3 Ultra and A4 */
};

struct fb_gke_family {
    const char *machine;      /* node.kubernetes.io/instance-type */
    enum fb_gke_transport transport;
    const char *transport_name;
    int nics;                 /* GPU NICs in a pod */
    int first_if;             /* the first GPU NIC is eth<first_if> */
    const char *net_pattern;  /* substring every GPU NIC Network's name holds, or NULL */
    const char *daemon;       /* the sidecar container (RxDM), NULL when none */
    bool dmabuf;              /* the sidecar also needs /dev/dmabuf_import_helper */
    const char *installer;    /* the NCCL plugin installer DaemonSet (kube-system) */
    bool nri;                 /* nri-device-injector must run (sidecar device list) */
    const char *installer_manifest; /* in GoogleCloudPlatform/container-engine-accelerators */
};

/* "a3-highgpu-8g, a3-megagpu-8g, ..." */
void fb_gke_family_names(char *buf, size_t len);

const struct fb_gke_family *fb_gke_family_of_machine(const char *machine);
/* The family of a node by its instance-type label; NULL for other nodes. */
const struct fb_gke_family *fb_gke_family_of_node(json_object *node);

#define FB_GKE_NIC_MAX 16

/* Interface -> Network, as fabric-bench was given it (--gpu-nics). */
struct fb_gke_nic_map {
    size_t n;
    char ifname[FB_GKE_NIC_MAX][16];
    char network[FB_GKE_NIC_MAX][64];
};

/* Reads the gpu-nics ConfigMap (data: eth1: NAME ...) or a JSON
 * interfaces array ([{"interfaceName":..., "network":...}]); FB_ERR_INPUT
 * naming the file and the line when malformed. */
enum fb_status fb_gke_read_nic_map(const char *path, struct fb_gke_nic_map *map,
                                   struct fb_err *err);
enum fb_status fb_gke_parse_nic_map(const char *text, const char *what,
                                    struct fb_gke_nic_map *map, struct fb_err *err);
/* The Network given for an interface, or NULL. */
const char *fb_gke_given_network(const struct fb_gke_nic_map *map, const char *ifname);

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
    const struct fb_gke_nic_map *given_nics; /* --gpu-nics, or NULL */
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

/* A check that needs networks.json, nodes.json or pods.json where --from
 * DIR does not hold it cannot judge: SKIP naming the file and the command
 * that saves it; true when it did (the check is then not run). */
bool fb_cluster_skip_unsaved(const struct fb_cluster_ctx *ctx,
                             const struct fb_cluster_check_def *def, struct fb_check *c);

/* The built-in known pairs. */
void fb_cluster_ctx_init(struct fb_cluster_ctx *ctx, const struct fb_kube_data *data);

/* Adds "PLUGIN=DAEMON" (--pair); FB_ERR_USAGE when malformed or full. */
enum fb_status fb_cluster_add_pair(struct fb_cluster_ctx *ctx, const char *text,
                                   struct fb_err *err);

void fb_cluster_check_gpu_nic_networks(const struct fb_cluster_ctx *ctx, struct fb_check *c);
void fb_cluster_check_nic_info(const struct fb_cluster_ctx *ctx, struct fb_check *c);
void fb_cluster_check_pod_fabric(const struct fb_cluster_ctx *ctx, struct fb_check *c);
void fb_cluster_check_tcpxo_versions(const struct fb_cluster_ctx *ctx, struct fb_check *c);
void fb_cluster_check_pod_interfaces(const struct fb_cluster_ctx *ctx, struct fb_check *c);
void fb_cluster_check_nri_devices(const struct fb_cluster_ctx *ctx, struct fb_check *c);
void fb_cluster_check_gke_daemonsets(const struct fb_cluster_ctx *ctx, struct fb_check *c);
void fb_cluster_check_rxdm_logs(const struct fb_cluster_ctx *ctx, struct fb_check *c);

/* pod-fabric's judgement of a GPU pod on a GKE family node other than A3
 * Mega: the interfaces annotation names the family's GPU NICs, and the
 * sidecar runs where the family needs one. FB_CHECK_OK or FB_CHECK_FAIL
 * with the reason in why. */
enum fb_check_outcome fb_gke_judge_pod(const struct fb_gke_family *fam, json_object *pod,
                                       char *why, size_t len);

/* Shared by the cluster checks. */
bool fb_cluster_is_tcpxo_node(json_object *node);
bool fb_cluster_is_gpu_nic_network(const char *name);
json_object *fb_cluster_find_node(const struct fb_cluster_ctx *ctx, const char *name);
/* A status condition: "True", "False", "Unknown", or NULL when absent. */
/* A condition's status ("True", "False", "Unknown"; NULL when absent), with
 * its reason and lastTransitionTime where asked (NULL pointers: not). */
const char *fb_cluster_condition(json_object *obj, const char *type, const char **reason,
                                 const char **since);

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
/* "namespace/name" of an object. */
void fb_cluster_who(json_object *obj, char *buf, size_t len);

#endif
