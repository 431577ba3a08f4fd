/* Judging a topology (topo.h) for multi-node NCCL: which NIC each GPU
 * should use, which CPUs each local rank should run on, and what in the
 * machine's layout costs bandwidth.
 *
 * Fabric NICs are every RDMA-capable NIC, else every NIC that can carry
 * fabric traffic (not a wireless, gigabit or slow-linked one: not_fabric_why);
 * a --nics list (NCCL_IB_HCA syntax) names them instead, or with '^'
 * excludes some. Each GPU, most constrained first, takes
 * the least loaded fabric NIC at its best path level; local rank i drives
 * GPU i (PCI bus order, as CUDA_DEVICE_ORDER=PCI_BUS_ID and nvidia-smi). */
#ifndef FB_DOCTOR_AFFINITY_H
#define FB_DOCTOR_AFFINITY_H

#include <hwloc.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"
#include "doctor/topo.h"

enum fb_finding_code {
    FB_FIND_NO_NIC,           /* GPUs but no fabric NIC at all */
    FB_FIND_FAR_NIC,          /* a GPU's best NIC is farther than other GPUs' */
    FB_FIND_CROSS_SOCKET,     /* a GPU's NIC is on another socket */
    FB_FIND_NIC_SHARED,       /* GPUs outnumber nearby NICs: one NIC feeds several */
    FB_FIND_NIC_UNUSED,       /* a fabric NIC no GPU is nearest to */
    FB_FIND_SOCKET_IMBALANCE, /* NICs per socket do not follow GPUs per socket */
    FB_FIND_NIC_LINK_SLOW,    /* a NIC's PCIe link is slower than its twins' */
    FB_FIND_NOT_FABRIC,       /* no RDMA NIC: a wireless, gigabit or slow NIC left out */
    FB_FIND_GPU_UNCONFIRMED,  /* AMD display devices counted (or not) as GPUs on class alone */
    FB_FIND_LOCALITY_UNKNOWN, /* devices the topology gives no NUMA locality */
};

const char *fb_finding_name(enum fb_finding_code code);

struct fb_finding {
    enum fb_finding_code code;
    long gpu; /* index or -1 */
    long nic; /* index or -1 */
    char message[512];
};

struct fb_rank_plan {
    size_t gpu;
    long nic;            /* -1 without fabric NIC */
    enum fb_link level;  /* GPU to that NIC */
    hwloc_bitmap_t cpus; /* this rank's share of the GPU's local cores */
};

enum fb_fabric_pick { FB_PICK_SPEC, FB_PICK_RDMA, FB_PICK_ALL };

struct fb_affinity {
    enum fb_fabric_pick pick;
    bool *fabric;         /* per NIC */
    size_t nfabric;
    enum fb_link *best;   /* per GPU: best level to a fabric NIC (NONE: none) */
    size_t *load;         /* per NIC: GPUs assigned */
    size_t nranks;
    struct fb_rank_plan *ranks; /* per GPU: local rank i drives GPU i */
    size_t nfindings, capfindings;
    struct fb_finding *findings;
    char ib_hca[1024];    /* suggested NCCL_IB_HCA, "" without RDMA NICs */
};

/* nic_spec: NULL, or a list in NCCL_IB_HCA syntax matched against RDMA
 * device and interface names. A bad list is FB_ERR_USAGE. */
enum fb_status fb_affinity_analyse(const struct fb_topo *t, const char *nic_spec,
                                   struct fb_affinity *a, struct fb_err *err);
void fb_affinity_free(struct fb_affinity *a);

/* "GPU0, GPU4" (joined by sep): the GPUs whose ranks drive NIC n, into a
 * bounded buffer; returns how many. */
size_t fb_affinity_served(const struct fb_topo *t, const struct fb_affinity *a, size_t n,
                          const char *sep, char *buf, size_t len);

/* NIC n is at GPU g's best level (one of its nearest fabric NICs). */
bool fb_affinity_nearest(const struct fb_topo *t, const struct fb_affinity *a, size_t g,
                         size_t n);

#endif
