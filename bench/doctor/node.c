#include "doctor/node.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor/inventory.h"
#include "core/rootfs.h"

static const struct fb_node_check_def checks[] = {
    {"peermem", FB_FABRIC_RDMA, fb_node_check_peermem,
     "GPUDirect RDMA: nvidia_peermem loaded, or a dma-buf capable driver"},
    {"memlock", FB_FABRIC_ALL, fb_node_check_memlock,
     "RLIMIT_MEMLOCK high enough to register RDMA memory"},
    {"ipc-lock", FB_FABRIC_ALL, fb_node_check_ipc_lock,
     "CAP_IPC_LOCK held where RLIMIT_MEMLOCK is finite"},
    {"rdma-devices", FB_FABRIC_RDMA, fb_node_check_rdma_devices,
     "RDMA devices in /sys/class/infiniband, ports ACTIVE, /dev/infiniband present"},
    {"ib-hca", FB_FABRIC_RDMA, fb_node_check_ib_hca,
     "NCCL_IB_HCA names RDMA devices (and ports) that exist"},
    {"efa", FB_FABRIC_RDMA, fb_node_check_efa,
     "AWS EFA: devices, instance family, NCCL OFI plugin, FI_PROVIDER/NCCL_NET/FI_EFA_* settings"},
    {"efa-provider", FB_FABRIC_RDMA, fb_node_check_efa_provider,
     "AWS EFA: this host's libfabric has the efa provider with RDM endpoints and RMA"},
    {"socket-ifname", FB_FABRIC_ALL, fb_node_check_socket_ifname,
     "NCCL_SOCKET_IFNAME names interfaces that exist and are up"},
    {"mtu", FB_FABRIC_ALL, fb_node_check_mtu,
     "MTU >= 4200 on RoCE netdevs, equal across each interface set"},
    {"shm", FB_FABRIC_ALL, fb_node_check_shm,
     "/dev/shm large enough for NCCL's shared-memory transport"},
    {"tcpxo-profile", FB_FABRIC_TCPXO, fb_node_check_tcpxo_profile,
     "GKE TCPXO: nccl-env-profile.sh present and sourced"},
    {"tcpxo-aperture", FB_FABRIC_TCPXO, fb_node_check_tcpxo_aperture,
     "GKE TCPXO: /dev/aperture_devices mounted"},
    {"gpu-nic-affinity", FB_FABRIC_ALL, fb_node_check_gpu_nic_affinity,
     "every GPU has its own NIC nearby (hwloc; see fabric-topo)"},
};

const struct fb_node_check_def *fb_node_checks(size_t *n)
{
    *n = sizeof checks / sizeof checks[0];
    return checks;
}

const struct fb_node_check_def *fb_node_check_find(const char *name)
{
    return fb_check_table_find(checks, sizeof checks, sizeof checks[0], name);
}

void fb_node_ctx_init(struct fb_node_ctx *ctx, const char *root)
{
    memset(ctx, 0, sizeof *ctx);
    ctx->root = root ? root : "";
    snprintf(ctx->proc, sizeof ctx->proc, "/proc/self");
    ctx->fabric = FB_FABRIC_RDMA;
    snprintf(ctx->fabric_why, sizeof ctx->fabric_why, "default");
}

static void env_clear(struct fb_node_env *env)
{
    memset(env, 0, sizeof *env);
}

/* Keeps a variable the checks judge; the rest of the environment is not ours. */
static void env_take(struct fb_node_env *env, const char *name, size_t name_len,
                     const char *value)
{
#define IS(s) (name_len == strlen(s) && strncmp(name, s, name_len) == 0)
    if (IS("NCCL_IB_HCA"))
        env->ib_hca = value;
    else if (IS("NCCL_SOCKET_IFNAME"))
        env->socket_ifname = value;
    else if (IS("NCCL_FASTRAK_IFNAME"))
        env->fastrak_ifname = value;
    else if (IS("NCCL_LIB_DIR"))
        env->nccl_lib_dir = value;
    else if (IS("NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY"))
        env->llcm_dir = value;
    else if (IS("FI_PROVIDER"))
        env->fi_provider = value;
    else if (IS("FI_EFA_USE_DEVICE_RDMA"))
        env->efa_device_rdma = value;
    else if (IS("NCCL_NET"))
        env->nccl_net = value;
    else if (IS("NCCL_NET_PLUGIN"))
        env->nccl_net_plugin = value;
    else if (IS("NCCL_PROTO"))
        env->nccl_proto = value;
    else if (IS("LD_LIBRARY_PATH"))
        env->ld_library_path = value;
#undef IS
    if (name_len > 13 && strncmp(name, "NCCL_FASTRAK_", 13) == 0)
        env->fastrak_set = true;
}

void fb_node_env_from_process(struct fb_node_env *env)
{
    extern char **environ;
    env_clear(env);
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (eq != NULL)
            env_take(env, *e, (size_t)(eq - *e), eq + 1);
    }
}

void fb_node_env_from_block(const char *block, size_t len, struct fb_node_env *env)
{
    env_clear(env);
    const char *p = block, *end = block + len;
    while (p < end) {
        size_t n = strnlen(p, (size_t)(end - p));
        const char *eq = memchr(p, '=', n);
        if (eq != NULL && n < (size_t)(end - p)) /* only NUL-terminated entries */
            env_take(env, p, (size_t)(eq - p), eq + 1);
        p += n + 1;
    }
}

static bool tcpxo_profile_present(const struct fb_node_ctx *ctx)
{
    char path[FB_ROOTFS_PATH_MAX];
    snprintf(path, sizeof path, "%s/nccl-env-profile.sh",
             ctx->env.nccl_lib_dir ? ctx->env.nccl_lib_dir : "/usr/local/nvidia/lib64");
    return fb_rootfs_exists(ctx->root, path);
}

void fb_node_resolve_fabric(struct fb_node_ctx *ctx, enum fb_fabric requested)
{
    if (requested != FB_FABRIC_AUTO) {
        ctx->fabric = requested;
        snprintf(ctx->fabric_why, sizeof ctx->fabric_why, "--fabric");
        return;
    }
    struct fb_inv_rdma *devs = NULL;
    size_t n = 0;
    struct fb_err ignored = {FB_OK, ""};
    if (fb_inv_rdma_scan(ctx->root, &devs, &n, &ignored) == FB_OK && n > 0) {
        ctx->fabric = FB_FABRIC_RDMA;
        snprintf(ctx->fabric_why, sizeof ctx->fabric_why, "detected: %zu RDMA device%s", n,
                 n == 1 ? "" : "s");
    } else if (fb_rootfs_exists(ctx->root, "/dev/aperture_devices")) {
        ctx->fabric = FB_FABRIC_TCPXO;
        snprintf(ctx->fabric_why, sizeof ctx->fabric_why, "detected: /dev/aperture_devices");
    } else if (ctx->env.fastrak_set) {
        ctx->fabric = FB_FABRIC_TCPXO;
        snprintf(ctx->fabric_why, sizeof ctx->fabric_why, "detected: NCCL_FASTRAK_* set");
    } else if (tcpxo_profile_present(ctx)) {
        ctx->fabric = FB_FABRIC_TCPXO;
        snprintf(ctx->fabric_why, sizeof ctx->fabric_why, "detected: nccl-env-profile.sh");
    } else {
        ctx->fabric = FB_FABRIC_RDMA;
        snprintf(ctx->fabric_why, sizeof ctx->fabric_why,
                 "assumed: no RDMA device and no TCPXO sign; use --fabric tcpxo on GKE TCPXO");
    }
    free(devs);
}

void fb_node_run(const struct fb_node_ctx *ctx, const struct fb_node_check_def *def,
                 bool named, struct fb_check *out)
{
    fb_check_init(out, def->name);
    if (!named && (def->fabrics & ctx->fabric) == 0) {
        fb_check_set(out, FB_CHECK_SKIP, "applies to %s nodes; this one is %s (%s)",
                     def->fabrics == FB_FABRIC_TCPXO ? "GKE TCPXO" : "RDMA",
                     ctx->fabric == FB_FABRIC_TCPXO ? "TCPXO" : "RDMA", ctx->fabric_why);
        return;
    }
    def->run(ctx, out);
}

bool fb_node_root_is_live(const struct fb_node_ctx *ctx)
{
    return ctx->root == NULL || ctx->root[0] == '\0' || strcmp(ctx->root, "/") == 0;
}

void fb_node_proc_path(const struct fb_node_ctx *ctx, const char *file, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s", ctx->proc[0] ? ctx->proc : "/proc/self", file);
}

void fb_node_format_bytes(unsigned long long bytes, char *buf, size_t len)
{
    static const char *const unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%llu bytes", bytes);
    else if (v == (double)(unsigned long long)v)
        snprintf(buf, len, "%llu %s", (unsigned long long)v, unit[u]);
    else
        snprintf(buf, len, "%.1f %s", v, unit[u]);
}
