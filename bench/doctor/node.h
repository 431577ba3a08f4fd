/* fabric-doctor node: checks of one node's GPU-fabric prerequisites.
 *
 * Each check reads the machine only through ctx->root (rootfs.h), judges
 * the environment NCCL would see (ctx->env) and fills one struct fb_check.
 * Checks belong to fabrics: RDMA (InfiniBand, RoCE, EFA) and GKE TCPXO; a
 * check that does not apply to the node's fabric is skipped unless asked
 * for by name. */
#ifndef FB_DOCTOR_NODE_H
#define FB_DOCTOR_NODE_H

#include <stdbool.h>
#include <stddef.h>

#include "doctor/check.h"
#include "doctor/topo.h"

enum fb_fabric {
    FB_FABRIC_AUTO = 0,
    FB_FABRIC_RDMA = 1,
    FB_FABRIC_TCPXO = 2,
};
#define FB_FABRIC_ALL (FB_FABRIC_RDMA | FB_FABRIC_TCPXO)

/* The NCCL settings the checks judge, as the workload would see them. */
struct fb_node_env {
    const char *ib_hca;         /* NCCL_IB_HCA */
    const char *socket_ifname;  /* NCCL_SOCKET_IFNAME */
    const char *fastrak_ifname; /* NCCL_FASTRAK_IFNAME (TCPXO data NICs) */
    const char *nccl_lib_dir;   /* NCCL_LIB_DIR (TCPXO profile location) */
    const char *llcm_dir;       /* NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY */
    bool fastrak_set;           /* any NCCL_FASTRAK_* variable present */
    const char *fi_provider;    /* FI_PROVIDER (libfabric's provider filter) */
    const char *efa_device_rdma; /* FI_EFA_USE_DEVICE_RDMA */
    const char *nccl_net;       /* NCCL_NET (the network NCCL must use) */
    const char *nccl_net_plugin; /* NCCL_NET_PLUGIN (which plugin library) */
    const char *nccl_proto;     /* NCCL_PROTO */
    const char *ld_library_path; /* LD_LIBRARY_PATH (where dlopen finds the plugin) */
};

struct fb_node_ctx {
    const char *root;         /* "" or "/" for the live system */
    char proc[64];            /* "/proc/self", or "/proc/PID" for --pid */
    enum fb_fabric fabric;    /* resolved: RDMA or TCPXO */
    char fabric_why[256];     /* "detected: 8 RDMA devices", "--fabric", ... */
    struct fb_node_env env;
    const struct fb_topo *topo; /* gpu-nic-affinity input (--topology); NULL:
                                   the live machine's, when root is live */
};

typedef void (*fb_node_check_fn)(const struct fb_node_ctx *ctx, struct fb_check *out);

struct fb_node_check_def {
    const char *name;
    unsigned fabrics; /* FB_FABRIC_* bits where it applies */
    fb_node_check_fn run;
    const char *about;
};
/* fb_check_table_find finds a row by the name at its start. */
_Static_assert(offsetof(struct fb_node_check_def, name) == 0,
               "a check row starts with its name");

/* Live root, /proc/self, empty environment, fabric unresolved (RDMA). */
void fb_node_ctx_init(struct fb_node_ctx *ctx, const char *root);

/* All checks in report order, and look-up by name (NULL when unknown). */
const struct fb_node_check_def *fb_node_checks(size_t *n);
const struct fb_node_check_def *fb_node_check_find(const char *name);

/* Fills env from this process's environment. */
void fb_node_env_from_process(struct fb_node_env *env);

/* Fills env from a NUL-separated environ block (/proc/PID/environ); the
 * pointers point into `block`, which must outlive env. */
void fb_node_env_from_block(const char *block, size_t len, struct fb_node_env *env);

/* Resolves FB_FABRIC_AUTO from what the node shows: RDMA devices mean RDMA;
 * else TCPXO signs (/dev/aperture_devices, NCCL_FASTRAK_*, the TCPXO
 * profile); else RDMA, said to be assumed. */
void fb_node_resolve_fabric(struct fb_node_ctx *ctx, enum fb_fabric requested);

/* Runs one check; `named` runs it even where its fabric does not apply. */
void fb_node_run(const struct fb_node_ctx *ctx, const struct fb_node_check_def *def,
                 bool named, struct fb_check *out);

/* The checks, one per concern (node_*.c). */
void fb_node_check_peermem(const struct fb_node_ctx *ctx, struct fb_check *c);
void fb_node_check_memlock(const struct fb_node_ctx *ctx, struct fb_check *c);
void fb_node_check_ipc_lock(const struct fb_node_ctx *ctx, struct fb_check *c);
void fb_node_check_rdma_devices(const struct fb_node_ctx *ctx, struct fb_check *c);
void fb_node_check_ib_hca(const struct fb_node_ctx *ctx, struct fb_check *c);
void fb_node_check_efa(const struct fb_node_ctx *ctx, struct fb_check *c);
/* node_efa_ofi.c under libfabric, else node_efa_none.c. */
void fb_node_check_efa_provider(const struct fb_node_ctx *ctx, struct fb_check *c);
void fb_node_check_socket_ifname(const struct fb_node_ctx *ctx, struct fb_check *c);
void fb_node_check_mtu(const struct fb_node_ctx *ctx, struct fb_check *c);
void fb_node_check_shm(const struct fb_node_ctx *ctx, struct fb_check *c);
void fb_node_check_tcpxo_profile(const struct fb_node_ctx *ctx, struct fb_check *c);
void fb_node_check_tcpxo_aperture(const struct fb_node_ctx *ctx, struct fb_check *c);
void fb_node_check_gpu_nic_affinity(const struct fb_node_ctx *ctx, struct fb_check *c);

/* Shared by the node checks. */

/* Whether the checks read the live machine (root "" or "/"), which checks
 * that ask the host's libraries (hwloc, libfabric) need. */
bool fb_node_root_is_live(const struct fb_node_ctx *ctx);

/* Path of a file of the judged process: "/proc/self/limits". */
void fb_node_proc_path(const struct fb_node_ctx *ctx, const char *file, char *buf, size_t len);

/* RLIMIT_MEMLOCK soft limit from <proc>/limits; UINT64_MAX = unlimited. */
enum fb_status fb_node_memlock(const struct fb_node_ctx *ctx, unsigned long long *bytes,
                               struct fb_err *err);

/* Whether CapEff in <proc>/status holds CAP_IPC_LOCK; *capeff gets the hex. */
enum fb_status fb_node_has_ipc_lock(const struct fb_node_ctx *ctx, bool *held, char *capeff,
                                    size_t len, struct fb_err *err);

/* "64 KiB", "8 MiB", "1.5 GiB". */
void fb_node_format_bytes(unsigned long long bytes, char *buf, size_t len);

#endif
