/* GPUs and NICs of one machine and the PCIe path between every pair, read
 * with hwloc from the live machine or from an XML export (`lstopo --of xml`),
 * so a topology taken on a cluster node can be judged anywhere.
 *
 * Path levels are those of nvidia-smi topo and NCCL, best first:
 *   PIX  same PCIe switch (at most one switch between the two)
 *   PXB  several switches, no host bridge
 *   PHB  through one PCIe host bridge (root complex)
 *   NODE between host bridges of one NUMA node
 *   SYS  across the CPU interconnect between NUMA nodes or sockets
 * and, past them, "unknown": between host bridges when the topology gives
 * one of the two devices no NUMA locality. */
#ifndef FB_DOCTOR_TOPO_H
#define FB_DOCTOR_TOPO_H

#include <hwloc.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

enum fb_link {
    FB_LINK_NONE = 0,
    FB_LINK_PIX,
    FB_LINK_PXB,
    FB_LINK_PHB,
    FB_LINK_NODE,
    FB_LINK_SYS,
    FB_LINK_UNKNOWN, /* ranks after SYS: any known path is preferred */
};

const char *fb_link_name(enum fb_link l);

struct fb_topo_dev {
    char busid[16];       /* "0000:18:00.0" */
    unsigned vendor_id, device_id, class_id;
    char model[128];      /* hwloc's PCIDevice name, else "vvvv:dddd" */
    char name[64];        /* what people call it: mlx5_0, eth1, cuda0, else bus id */
    char rdma[64];        /* NIC: openfabrics device ("" when none) */
    char netdevs[128];    /* NIC: network interfaces, comma separated */
    char osdevs[128];     /* GPU: cuda0, nvml0, ... comma separated */
    int numa;             /* first NUMA node of its locality, -1 unknown */
    int package;          /* socket (Package os index), -1 unknown */
    float link_GBps;      /* PCIe link speed hwloc measured, 0 unknown */
    hwloc_bitmap_t cpuset; /* CPUs local to the device (empty: unknown) */
    bool locality_unknown; /* attached to the machine itself on a multi-NUMA machine */
    bool by_class;        /* GPU: counted on its AMD display class alone (no ROCm device) */
};

struct fb_topo {
    char source[4096];    /* "live" or the XML path */
    char hostname[256];   /* from the XML's HostName, else "" */
    int npackages, nnuma, ncores, npus;
    size_t ngpus, nnics;
    struct fb_topo_dev *gpus, *nics; /* each in PCI bus order */
    enum fb_link *link;              /* link[g * nnics + n] */
    size_t ncoresets;
    hwloc_bitmap_t *coresets;        /* the PUs of every core, in topology order */
    size_t nuncounted;               /* AMD display devices left out as GPUs */
    char uncounted[256];             /* "0000:44:00.0 (1002:6863), ..." */
};

/* Loads the live machine (xml_path NULL) or an XML file. A missing,
 * unreadable or non-hwloc file is FB_ERR_INPUT with a one-line message. */
enum fb_status fb_topo_load(const char *xml_path, struct fb_topo *t, struct fb_err *err);
void fb_topo_free(struct fb_topo *t);

static inline enum fb_link fb_topo_link(const struct fb_topo *t, size_t gpu, size_t nic)
{
    return t->link[gpu * t->nnics + nic];
}

#endif
