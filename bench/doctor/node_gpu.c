/* GPUDirect RDMA kernel support: how the NIC gets to DMA into GPU memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor/node.h"
#include "core/rootfs.h"

/* /proc/modules lines start with the module name. */
static bool module_loaded(const char *modules, const char *name)
{
    size_t n = strlen(name);
    for (const char *line = modules; line && *line; ) {
        if (strncmp(line, name, n) == 0 && line[n] == ' ')
            return true;
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    return false;
}

struct nvidia_driver {
    bool known;
    bool open_module; /* the open kernel modules export GPU memory as dma-buf */
    char version[32];
};

static void read_driver(const char *root, struct nvidia_driver *d)
{
    memset(d, 0, sizeof *d);
    char line[512];
    struct fb_err ignored = {FB_OK, ""};
    if (fb_rootfs_read_line(root, "/proc/driver/nvidia/version", line, sizeof line,
                            &ignored) != FB_OK)
        return;
    d->known = true;
    d->open_module = strstr(line, "Open Kernel Module") != NULL;
    /* "NVRM version: NVIDIA UNIX ... Kernel Module for x86_64  550.54.15  Release ..." */
    for (char *tok = strtok(line, " \t"); tok; tok = strtok(NULL, " \t")) {
        int a, b;
        if (sscanf(tok, "%d.%d", &a, &b) == 2 && strchr(tok, '.') != NULL) {
            snprintf(d->version, sizeof d->version, "%s", tok);
            break;
        }
    }
}

/* Kernel major.minor from /proc/sys/kernel/osrelease; false when unknown. */
static bool read_kernel(const char *root, int *major, int *minor, char *text, size_t len)
{
    struct fb_err ignored = {FB_OK, ""};
    if (fb_rootfs_read_line(root, "/proc/sys/kernel/osrelease", text, len, &ignored) != FB_OK)
        return false;
    return sscanf(text, "%d.%d", major, minor) == 2;
}

/* Loaded modules from /proc/modules; a kernel without loadable modules has
 * none, and then /sys/module lists what is built in or loaded. */
struct module_view {
    char *text;         /* /proc/modules, or NULL */
    const char *source; /* what the evidence cites */
};

static bool has_module(const struct fb_node_ctx *ctx, const struct module_view *m,
                       const char *name)
{
    if (m->text != NULL)
        return module_loaded(m->text, name);
    char path[128];
    snprintf(path, sizeof path, "/sys/module/%s", name);
    return fb_rootfs_is_dir(ctx->root, path);
}

void fb_node_check_peermem(const struct fb_node_ctx *ctx, struct fb_check *c)
{
    struct module_view m = {NULL, "/proc/modules"};
    struct fb_err err = {FB_OK, ""};
    if (fb_rootfs_read(ctx->root, "/proc/modules", &m.text, &err) != FB_OK) {
        if (!fb_rootfs_is_dir(ctx->root, "/sys/module")) {
            fb_check_set(c, FB_CHECK_FAIL, "%s; no /sys/module either", err.msg);
            fb_check_fix(c, "run on the GPU node itself, or pass --root with a copy of its /proc "
                            "and /sys");
            return;
        }
        m.source = "/sys/module (no /proc/modules: kernel without loadable modules)";
    }
    bool peermem = has_module(ctx, &m, "nvidia_peermem");
    bool legacy = has_module(ctx, &m, "nv_peer_mem");
    bool nvidia = has_module(ctx, &m, "nvidia");
    free(m.text);
    if (peermem || legacy) {
        fb_check_set(c, FB_CHECK_OK, "%s loaded (%s)", peermem ? "nvidia_peermem" : "nv_peer_mem",
                     m.source);
        return;
    }
    if (!nvidia) {
        fb_check_set(c, FB_CHECK_FAIL, "no nvidia kernel module in %s: no GPU driver loaded, so "
                                       "no GPUDirect RDMA", m.source);
        fb_check_culprit(c, "nvidia");
        fb_check_fix(c, "install and load the NVIDIA driver (GPU Operator or the node image), "
                        "then modprobe nvidia-peermem");
        return;
    }
    struct nvidia_driver drv;
    read_driver(ctx->root, &drv);
    int kmaj = 0, kmin = 0;
    char krel[128] = "";
    bool kernel_known = read_kernel(ctx->root, &kmaj, &kmin, krel, sizeof krel);
    /* dma-buf GPUDirect needs the GPU side (open kernel module) and the
     * kernel's dma-buf import for RDMA (Linux 5.12). */
    bool kernel_ok = kernel_known && (kmaj > 5 || (kmaj == 5 && kmin >= 12));
    if (drv.open_module && kernel_ok) {
        fb_check_set(c, FB_CHECK_OK,
                     "nvidia_peermem not loaded, but dma-buf works: NVIDIA open kernel module "
                     "%s on Linux %s (NCCL 2.13+ and perftest --use_cuda_dmabuf use it)",
                     drv.version[0] ? drv.version : "(version unknown)", krel);
        return;
    }
    char why[256];
    if (!drv.known)
        snprintf(why, sizeof why, "/proc/driver/nvidia/version unreadable, so dma-buf support "
                                  "is unknown");
    else if (!drv.open_module)
        snprintf(why, sizeof why, "driver %s is the proprietary kernel module (no dma-buf export)",
                 drv.version[0] ? drv.version : "(version unknown)");
    else if (!kernel_known)
        snprintf(why, sizeof why, "kernel version unknown (/proc/sys/kernel/osrelease)");
    else
        snprintf(why, sizeof why, "Linux %s predates dma-buf RDMA (5.12)", krel);
    fb_check_set(c, FB_CHECK_FAIL,
                 "nvidia_peermem not in %s and no dma-buf path: %s; GPU buffers would be "
                 "staged through host memory", m.source, why);
    fb_check_culprit(c, "nvidia_peermem");
    fb_check_fix(c, "modprobe nvidia-peermem on the node (GPU Operator: driver.rdma.enabled=true; "
                    "AKS: a peermem reloader DaemonSet), or use the open kernel module on "
                    "Linux >= 5.12 for dma-buf");
}
