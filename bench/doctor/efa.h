/* AWS EFA: which RDMA devices are EFA, which instance families do RDMA
 * over it, and how NCCL's OFI plugin reads its settings. The rules are
 * functions of a string, so they are tested without a node; only
 * fb_efa_scan reads the machine (through a root, rootfs.h). */
#ifndef FB_DOCTOR_EFA_H
#define FB_DOCTOR_EFA_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

/* A p5.48xlarge has 32; room for a node larger still. */
#define FB_EFA_DEVICES_MAX 64
#define FB_EFA_NAME_MAX 64

struct fb_efa_devices {
    size_t n;
    char name[FB_EFA_DEVICES_MAX][FB_EFA_NAME_MAX];
};

/* The EFA devices of /sys/class/infiniband in version order: a device whose
 * device/driver link ends in "efa"; where it has no such link (a tree
 * copied with cat), one whose node_type is "unspecified" (EFA's) or whose
 * name is efa_N (older drivers). No /sys/class/infiniband gives n = 0. */
enum fb_status fb_efa_scan(const char *root, struct fb_efa_devices *out, struct fb_err *err);

/* "p5.48xlarge" -> "p5", "trn1n.32xlarge" -> "trn1n": true when `product`
 * (DMI product_name, which EC2 sets to the instance type) has the shape
 * family.size; false for other machines ("Standard PC (Q35 ...)"). */
bool fb_efa_instance_family(const char *product, char *family, size_t len);

/* Whether a family's EFA does RDMA read and write, so GPUDirect RDMA
 * applies (FI_EFA_USE_DEVICE_RDMA). A short table of the GPU and Trainium
 * families known to, not every EFA instance: other families are not
 * judged. */
bool fb_efa_family_has_rdma(const char *family);

/* "p4d, p4de, ..." (the table) for messages. */
void fb_efa_rdma_families(char *buf, size_t len);

/* FI_PROVIDER unset, empty or "efa" (any case): libfabric may load EFA. */
bool fb_efa_fi_provider_ok(const char *fi_provider);

/* A libfabric boolean that is on: 1, y, yes, true, on (any case). */
bool fb_efa_flag_on(const char *value);

enum fb_efa_net {
    FB_EFA_NET_UNSET = 0, /* NCCL picks the plugin's network itself */
    FB_EFA_NET_OFI,       /* a name the OFI plugin goes by */
    FB_EFA_NET_OTHER,     /* Socket, IB or another plugin's */
};

/* NCCL_NET's value against the names the OFI plugin has had: "AWS
 * Libfabric", "Libfabric", "OFI" (NCCL compares without case). */
enum fb_efa_net fb_efa_nccl_net_kind(const char *nccl_net);

/* Whether NCCL_PROTO leaves out Simple: a list without it ("LL,LL128"), or
 * an exclusion (^) with it ("^Simple"). Unset or empty excludes nothing. */
bool fb_efa_proto_excludes_simple(const char *nccl_proto);

enum fb_efa_plugin {
    FB_EFA_PLUGIN_DEFAULT = 0, /* NCCL_NET_PLUGIN unset: NCCL loads libnccl-net.so */
    FB_EFA_PLUGIN_NONE,        /* "none": no network plugin at all */
    FB_EFA_PLUGIN_PATH,        /* a path (holds '/'): that file */
    FB_EFA_PLUGIN_FILE,        /* a library name or suffix: searched like dlopen does */
};

/* What NCCL_NET_PLUGIN asks NCCL to load, and the file: unset gives
 * "libnccl-net.so"; "ofi" gives "libnccl-net-ofi.so"; a name ending in
 * ".so" or a path is taken as written. */
enum fb_efa_plugin fb_efa_plugin_wanted(const char *nccl_net_plugin, char *file, size_t len);

/* Whether a library (a path or a file name) is the OFI plugin by its name:
 * libnccl-net.so, libnccl-net-ofi.so or libnccl-net-aws-ofi.so. */
bool fb_efa_plugin_is_ofi(const char *file);

/* The OFI plugin's file names, i = 0, 1, ...; NULL past the last. The
 * first is the one NCCL loads when NCCL_NET_PLUGIN is unset. */
const char *fb_efa_plugin_name(size_t i);

#endif
