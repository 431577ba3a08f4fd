/* What one rank measures with: its device and port, the addressing it
 * chose and its memory. Plain data, gathered to rank 0 for the header and
 * the results record. Unknown numbers are -1 (0 for line rate), unknown
 * strings empty. */
#ifndef FB_PROBE_ENDPOINT_H
#define FB_PROBE_ENDPOINT_H

#include <stdint.h>

#include "core/host.h"

struct probe_endpoint {
    int rank, local_rank;
    char host[FB_HOST_MAX];
    char device[64];       /* HCA ("mlx5_0") or interface ("eth0") */
    int port;              /* HCA port; -1 for tcp */
    char firmware[64];
    char link_layer[16];   /* "InfiniBand", "Ethernet" */
    char port_state[16];   /* "ACTIVE", ... */
    int mtu;               /* path MTU used (rdma) or interface MTU (tcp) */
    int active_mtu;        /* port's active MTU (rdma) */
    char rate[48];         /* "4X NDR (400 Gb/s)" */
    double line_rate_gbps; /* data rate after encoding; 0 unknown */
    int lid;
    int gid_index;
    char gid[48];
    char gid_type[12];     /* "IB", "RoCE v1", "RoCE v2" */
    int gid_auto;          /* chosen by the rules, not -x */
    char gid_rule[40];
    char address[48];      /* tcp: the IPv4 address used; ofi: the domain's */
    /* ofi: what libfabric chose */
    char provider[32];     /* "efa", "tcp;ofi_rxm" */
    char provider_version[16];
    char fabric[64];       /* fabric_attr->name */
    char ep_type[16];      /* "FI_EP_RDM" */
    char mr_mode[128];     /* the domain's mr_mode bits, "FI_MR_LOCAL|FI_MR_VIRT_ADDR" */
    char hmem[16];         /* "FI_HMEM_CUDA" when GPU memory is registered, else "" */
    char libfabric[16];    /* the library's version, "1.17" */
    int numa_node;         /* the device's node */
    char pci_bus_id[32];   /* the device's PCI address */
    char mem_kind[8];      /* "host", "gpu" */
    char mem_reg[16];      /* "host", "dmabuf", "peermem"; "" for tcp */
    int mem_numa_node;     /* node the host buffer is bound to, -1 none */
    int gpu;
    char gpu_bus_id[32];
    char gpu_name[96];
};

#endif
