/* GKE GPUDirect-TCPXO: the NCCL plugin's environment profile and the LLCM
 * aperture devices must reach the workload container. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor/node.h"
#include "core/rootfs.h"

#define TCPXO_DEFAULT_LIB_DIR "/usr/local/nvidia/lib64"
#define TCPXO_APERTURE_DIR "/dev/aperture_devices"

void fb_node_check_tcpxo_profile(const struct fb_node_ctx *ctx, struct fb_check *c)
{
    const char *dir = ctx->env.nccl_lib_dir ? ctx->env.nccl_lib_dir : TCPXO_DEFAULT_LIB_DIR;
    char path[FB_ROOTFS_PATH_MAX];
    snprintf(path, sizeof path, "%s/nccl-env-profile.sh", dir);
    if (!fb_rootfs_exists(ctx->root, path)) {
        fb_check_set(c, FB_CHECK_FAIL, "no %s (NCCL_LIB_DIR %s): the TCPXO NCCL plugin is not "
                                       "installed in this container", path,
                     ctx->env.nccl_lib_dir ? "set" : "unset, default " TCPXO_DEFAULT_LIB_DIR);
        fb_check_culprit(c, "%s", path);
        fb_check_fix(c, "mount the host's /home/kubernetes/bin/nvidia at /usr/local/nvidia (the "
                        "nccl-tcpxo-installer DaemonSet puts plugin and profile there) and set "
                        "NCCL_LIB_DIR=/usr/local/nvidia/lib64");
        return;
    }
    if (!ctx->env.fastrak_set) {
        fb_check_set(c, FB_CHECK_WARN, "%s present but not sourced: no NCCL_FASTRAK_* variable "
                                       "in the environment, so NCCL will not use FasTrak",
                     path);
        fb_check_culprit(c, "NCCL_FASTRAK_*");
        fb_check_fix(c, "source ${NCCL_LIB_DIR}/nccl-env-profile.sh before launching, and pass "
                        "the variables on (mpirun -x NCCL_...)");
        return;
    }
    fb_check_set(c, FB_CHECK_OK, "%s present; NCCL_FASTRAK_* set", path);
}

void fb_node_check_tcpxo_aperture(const struct fb_node_ctx *ctx, struct fb_check *c)
{
    const char *dir = ctx->env.llcm_dir ? ctx->env.llcm_dir : TCPXO_APERTURE_DIR;
    if (!fb_rootfs_is_dir(ctx->root, dir)) {
        fb_check_set(c, FB_CHECK_FAIL, "no %s%s: the TCPXO receive path has no LLCM devices",
                     dir, ctx->env.llcm_dir ? " (NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY)" : "");
        fb_check_culprit(c, "%s", dir);
        fb_check_fix(c, "mount the host's /dev/aperture_devices into the workload container "
                        "(hostPath) and set NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY=/dev/"
                        "aperture_devices");
        return;
    }
    char **names = NULL;
    size_t n = 0;
    struct fb_err err = {FB_OK, ""};
    if (fb_check_fails_on(c, fb_rootfs_list(ctx->root, dir, &names, &n, &err), &err))
        return;
    fb_rootfs_free_list(names, n);
    if (n == 0) {
        fb_check_set(c, FB_CHECK_FAIL, "%s is empty: the host's aperture devices are not "
                                       "mounted", dir);
        fb_check_culprit(c, "%s", dir);
        fb_check_fix(c, "mount the host path /dev/aperture_devices itself, not an empty "
                        "directory");
        return;
    }
    if (ctx->env.llcm_dir == NULL) {
        fb_check_set(c, FB_CHECK_WARN, "%s has %zu entr%s, but "
                                       "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY is unset", dir, n,
                     n == 1 ? "y" : "ies");
        fb_check_culprit(c, "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY");
        fb_check_fix(c, "set NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY=/dev/aperture_devices in the "
                        "workload environment");
        return;
    }
    fb_check_set(c, FB_CHECK_OK, "%s has %zu entr%s (NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY)", dir,
                 n, n == 1 ? "y" : "ies");
}
