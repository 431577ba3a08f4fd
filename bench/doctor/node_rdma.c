/* RDMA devices and the NCCL_IB_HCA list that picks among them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor/devspec.h"
#include "doctor/inventory.h"
#include "doctor/node.h"
#include "core/rootfs.h"

/* "mlx5_0, mlx5_1, ..." into a bounded buffer. */
static void list_names(const struct fb_inv_rdma *devs, size_t n, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++)
        fb_strbuf_append(buf, len, &used, "%s%s", i ? ", " : "", devs[i].name);
    if (n == 0)
        snprintf(buf, len, "none");
}

static const char *first_link_layer(const struct fb_inv_rdma *d)
{
    return d->nports && d->port[0].link_layer[0] ? d->port[0].link_layer : "unknown";
}

/* "link InfiniBand 400 Gb/sec (4X NDR)" when every device's first port has
 * one link layer; else each layer with its devices, since a node with an
 * InfiniBand fabric for the GPUs and RoCE for storage must not read as one
 * fabric. */
static void link_summary(const struct fb_inv_rdma *devs, size_t n, char *buf, size_t len)
{
    size_t used = 0, i = 0;
    buf[0] = '\0';
    while (i < n && strcmp(first_link_layer(&devs[i]), first_link_layer(&devs[0])) == 0)
        i++;
    if (i == n) {
        const struct fb_inv_port *p0 = devs[0].nports ? &devs[0].port[0] : NULL;
        snprintf(buf, len, "link %s %s", first_link_layer(&devs[0]), p0 && p0->rate[0] ? p0->rate : "");
        return;
    }
    fb_strbuf_append(buf, len, &used, "mixed links:");
    for (size_t a = 0; a < n; a++) {
        const char *layer = first_link_layer(&devs[a]);
        size_t b = 0;
        while (b < a && strcmp(first_link_layer(&devs[b]), layer) != 0)
            b++;
        if (b < a)
            continue; /* this layer was listed with its first device */
        fb_strbuf_append(buf, len, &used, "%s %s (", a ? ";" : "", layer);
        for (size_t k = a, m = 0; k < n; k++)
            if (strcmp(first_link_layer(&devs[k]), layer) == 0)
                fb_strbuf_append(buf, len, &used, "%s%s", m++ ? ", " : "", devs[k].name);
        fb_strbuf_append(buf, len, &used, ")");
    }
}

static size_t count_uverbs(const char *root)
{
    char **names = NULL;
    size_t n = 0, uverbs = 0;
    struct fb_err ignored = {FB_OK, ""};
    if (fb_rootfs_list(root, "/dev/infiniband", &names, &n, &ignored) != FB_OK)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(names[i], "uverbs", 6) == 0)
            uverbs++;
    fb_rootfs_free_list(names, n);
    return uverbs;
}

/* The devices both checks judge; false when sysfs could not be read, and the
 * check has failed saying so. */
static bool scan_devices(const struct fb_node_ctx *ctx, struct fb_inv_rdma **devs, size_t *n,
                         struct fb_check *c)
{
    struct fb_err err = {FB_OK, ""};
    return !fb_check_fails_on(c, fb_inv_rdma_scan(ctx->root, devs, n, &err), &err);
}

void fb_node_check_rdma_devices(const struct fb_node_ctx *ctx, struct fb_check *c)
{
    struct fb_inv_rdma *devs = NULL;
    size_t n = 0;
    if (!scan_devices(ctx, &devs, &n, c))
        return;
    if (n == 0) {
        fb_check_set(c, FB_CHECK_FAIL, "no RDMA device in /sys/class/infiniband: NCCL falls "
                                       "back to TCP sockets");
        fb_check_fix(c, "load the RDMA driver (mlx5_ib, efa) on the node; in a pod, request the "
                        "RDMA resource (rdma/..., nvidia.com/rdma_vf, vpc.amazonaws.com/efa)");
        return;
    }
    char names[512], links[512];
    list_names(devs, n, names, sizeof names);
    link_summary(devs, n, links, sizeof links);
    fb_check_set(c, FB_CHECK_OK, "%zu device%s (%s), %s", n, n == 1 ? "" : "s", names, links);

    if (!fb_rootfs_is_dir(ctx->root, "/dev/infiniband")) {
        fb_check_set(c, FB_CHECK_FAIL, "%zu RDMA device%s in /sys/class/infiniband (%s) but no "
                                       "/dev/infiniband: user space cannot open them", n,
                     n == 1 ? "" : "s", names);
        fb_check_culprit(c, "/dev/infiniband");
        fb_check_fix(c, "mount /dev/infiniband into the container (the RDMA or SR-IOV device "
                        "plugin does it for pods that request its resource)");
        free(devs);
        return;
    }
    size_t uverbs = count_uverbs(ctx->root);

    char down[512];
    size_t used = 0, ndown = 0;
    down[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (fb_inv_rdma_any_active(&devs[i]))
            continue;
        ndown++;
        const char *state = devs[i].nports ? devs[i].port[0].state : "no ports";
        fb_strbuf_append(down, sizeof down, &used, "%s%s port %d %s", ndown > 1 ? ", " : "",
                         devs[i].name, devs[i].nports ? devs[i].port[0].num : 0,
                         state[0] ? state : "state unknown");
        fb_check_culprit(c, "%s", devs[i].name);
    }
    if (ndown > 0) {
        fb_check_set(c, FB_CHECK_WARN, "%zu of %zu RDMA devices have no ACTIVE port: %s", ndown,
                     n, down);
        fb_check_fix(c, "check cable and switch port (ibstat, ip link), or keep NCCL off the "
                        "device with NCCL_IB_HCA=^=%s", c->culprits[0]);
    } else if (uverbs < n) {
        fb_check_set(c, FB_CHECK_WARN, "/dev/infiniband has %zu uverbs file%s for %zu RDMA "
                                       "devices: some devices cannot be opened", uverbs,
                     uverbs == 1 ? "" : "s", n);
        fb_check_culprit(c, "/dev/infiniband");
        fb_check_fix(c, "expose every device's uverbs file to the container (request one RDMA "
                        "resource per NIC)");
    } else {
        fb_check_note(c, "all ports ACTIVE; /dev/infiniband has %zu uverbs", uverbs);
    }
    free(devs);
}

static const struct fb_inv_rdma *find_dev(const struct fb_inv_rdma *devs, size_t n,
                                          const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(devs[i].name, name) == 0)
            return &devs[i];
    return NULL;
}

/* An entry naming a device exactly, without '=', also selects every device
 * it is a prefix of: NCCL_IB_HCA=mlx5_1 takes mlx5_10..mlx5_17 too. */
static void warn_prefix_surprise(const struct fb_devspec *spec, size_t e,
                                 const struct fb_inv_rdma *devs, size_t n, struct fb_check *c)
{
    if (spec->exact || find_dev(devs, n, spec->entry[e].name) == NULL)
        return;
    char extra[256];
    size_t used = 0, nextra = 0;
    extra[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (strcmp(devs[i].name, spec->entry[e].name) != 0 &&
            fb_devspec_entry_matches(spec, e, devs[i].name, -1)) {
            fb_strbuf_append(extra, sizeof extra, &used, "%s%s", nextra ? ", " : "",
                             devs[i].name);
            nextra++;
        }
    }
    if (nextra == 0)
        return;
    fb_check_set(c, FB_CHECK_WARN, "NCCL_IB_HCA entry '%s' is a prefix: it also %s %s",
                 spec->entry[e].name, spec->exclude ? "excludes" : "selects", extra);
    fb_check_culprit(c, "%s", spec->entry[e].name);
    fb_check_fix(c, "start the list with '=' for exact names (NCCL_IB_HCA=%s=%s,...)",
                 spec->exclude ? "^" : "", spec->entry[e].name);
}

/* Checks an include entry against the devices; false when it names none. */
static bool check_include_entry(const struct fb_devspec *spec, size_t e,
                                const struct fb_inv_rdma *devs, size_t n,
                                const char *names, struct fb_check *c)
{
    const struct fb_devspec_entry *entry = &spec->entry[e];
    bool matched = false;
    for (size_t i = 0; i < n; i++) {
        if (!fb_devspec_entry_matches(spec, e, devs[i].name, -1))
            continue;
        matched = true;
        if (entry->port > 0 && fb_inv_rdma_port(&devs[i], entry->port) == NULL) {
            fb_check_set(c, FB_CHECK_FAIL, "NCCL_IB_HCA entry '%s:%d': %s has no port %d",
                         entry->name, entry->port, devs[i].name, entry->port);
            fb_check_culprit(c, "%s:%d", entry->name, entry->port);
            fb_check_fix(c, "use a port the device has (ls /sys/class/infiniband/%s/ports), "
                            "usually :1", devs[i].name);
        }
    }
    if (!matched) {
        fb_check_set(c, FB_CHECK_FAIL, "NCCL_IB_HCA entry '%s' matches no RDMA device (have %s)",
                     entry->name, names);
        fb_check_culprit(c, "%s", entry->name);
        fb_check_fix(c, "name devices listed in /sys/class/infiniband (ibv_devices), e.g. "
                        "NCCL_IB_HCA==%s", n ? devs[0].name : "mlx5_0");
    }
    return matched;
}

/* The devices NCCL would take unasked: those with an ACTIVE port, and those
 * it passes over, so a DOWN device is not read as one in use. */
static void list_active(const struct fb_inv_rdma *devs, size_t n, char *buf, size_t len)
{
    size_t used = 0, nactive = 0, ndown = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++)
        if (fb_inv_rdma_any_active(&devs[i]))
            fb_strbuf_append(buf, len, &used, "%s%s", nactive++ ? ", " : "", devs[i].name);
    if (nactive == 0)
        fb_strbuf_append(buf, len, &used, "none");
    for (size_t i = 0; i < n; i++)
        if (!fb_inv_rdma_any_active(&devs[i]))
            fb_strbuf_append(buf, len, &used, "%s%s", ndown++ ? ", " : "; not ", devs[i].name);
    if (ndown > 0)
        fb_strbuf_append(buf, len, &used, ": no ACTIVE port, see rdma-devices");
}

void fb_node_check_ib_hca(const struct fb_node_ctx *ctx, struct fb_check *c)
{
    struct fb_inv_rdma *devs = NULL;
    size_t n = 0;
    if (!scan_devices(ctx, &devs, &n, c))
        return;
    char names[512];
    list_names(devs, n, names, sizeof names);
    const char *value = ctx->env.ib_hca;
    if (value == NULL || value[0] == '\0') {
        if (n == 0)
            fb_check_set(c, FB_CHECK_SKIP, "NCCL_IB_HCA unset and no RDMA device (see "
                                           "rdma-devices)");
        else {
            char active[512];
            list_active(devs, n, active, sizeof active);
            fb_check_set(c, FB_CHECK_OK, "NCCL_IB_HCA unset: NCCL uses every RDMA device with "
                                         "an active port (%s)", active);
        }
        free(devs);
        return;
    }
    struct fb_devspec spec;
    struct fb_err err = {FB_OK, ""};
    if (fb_check_fails_on(c, fb_devspec_parse(value, "NCCL_IB_HCA", &spec, &err), &err)) {
        fb_check_culprit(c, "NCCL_IB_HCA");
        fb_check_fix(c, "write it as [^][=]dev[:port][,dev[:port]...], e.g. "
                        "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1");
        free(devs);
        return;
    }
    if (n == 0) {
        fb_check_set(c, FB_CHECK_FAIL, "NCCL_IB_HCA='%s' but /sys/class/infiniband lists no "
                                       "device", value);
        fb_check_fix(c, "make the RDMA devices visible first (see rdma-devices)");
        free(devs);
        return;
    }
    /* Selected devices, as NCCL would take them. */
    char chosen[512], inactive[256];
    size_t cu = 0, iu = 0, nchosen = 0, ninactive = 0;
    chosen[0] = inactive[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (!fb_devspec_selects(&spec, devs[i].name, -1))
            continue;
        fb_strbuf_append(chosen, sizeof chosen, &cu, "%s%s", nchosen++ ? ", " : "",
                         devs[i].name);
        if (!fb_inv_rdma_any_active(&devs[i]))
            fb_strbuf_append(inactive, sizeof inactive, &iu, "%s%s", ninactive++ ? ", " : "",
                             devs[i].name);
    }
    fb_check_set(c, FB_CHECK_OK, "NCCL_IB_HCA='%s' selects %zu of %zu devices: %s", value,
                 nchosen, n, nchosen ? chosen : "none");
    for (size_t e = 0; e < spec.n; e++) {
        if (!spec.exclude) {
            check_include_entry(&spec, e, devs, n, names, c);
        } else {
            bool matched = false;
            for (size_t i = 0; i < n && !matched; i++)
                matched = fb_devspec_entry_matches(&spec, e, devs[i].name, -1);
            if (!matched) {
                fb_check_set(c, FB_CHECK_WARN, "NCCL_IB_HCA excludes '%s', which matches no "
                                               "device (have %s): a typo leaves the device "
                                               "meant in use", spec.entry[e].name, names);
                fb_check_culprit(c, "%s", spec.entry[e].name);
                fb_check_fix(c, "correct the name in the exclusion list");
            }
        }
        warn_prefix_surprise(&spec, e, devs, n, c);
    }
    if (nchosen == 0) {
        fb_check_set(c, FB_CHECK_FAIL, "NCCL_IB_HCA='%s' leaves no RDMA device (have %s): NCCL "
                                       "falls back to TCP sockets", value, names);
        fb_check_culprit(c, "NCCL_IB_HCA");
        fb_check_fix(c, "list the devices to use, e.g. NCCL_IB_HCA==%s", devs[0].name);
    } else if (ninactive > 0) {
        fb_check_set(c, FB_CHECK_WARN, "NCCL_IB_HCA selects %s with no ACTIVE port", inactive);
        for (size_t i = 0; i < n; i++)
            if (fb_devspec_selects(&spec, devs[i].name, -1) && !fb_inv_rdma_any_active(&devs[i]))
                fb_check_culprit(c, "%s", devs[i].name);
        fb_check_fix(c, "bring the port up or drop the device from NCCL_IB_HCA");
    }
    free(devs);
}
