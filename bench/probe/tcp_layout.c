/* NCCL's socket transport layout for --nccl-like (see tcp_layout.h). */
#include "probe/tcp_layout.h"

#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rootfs.h"
#include "probe/tcp.h"

#define VENDOR_AWS 0x1d0f
#define VENDOR_GOOGLE 0x1ae0

/* NCCL's automatic choice by NIC vendor. */
static void vendor_default(long vendor, int *threads, int *socks, const char **who)
{
    *threads = 0, *socks = 1, *who = "NCCL's default (no helper threads)";
    if (vendor == VENDOR_AWS)
        *threads = 2, *socks = 8, *who = "AWS NIC default";
    else if (vendor == VENDOR_GOOGLE)
        *threads = 4, *socks = 1, *who = "Google NIC default";
}

static enum fb_status parse_count(const char *name, const char *text, int *out, struct fb_err *err)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (*text == '\0' || *end != '\0' || errno != 0 || v < 0 || v > 1 << 20)
        return fb_fail(err, FB_ERR_USAGE, "%s=%s is not a whole number >= 0; set it as NCCL "
                       "reads it (e.g. %s=2) or unset it", name, text, name);
    *out = (int)v;
    return FB_OK;
}

enum fb_status probe_tcp_nccl_layout(const char *nthreads, const char *nsocks, long vendor,
                                     struct probe_tcp_layout *out, struct fb_err *err)
{
    int threads = 0, socks = 0;
    const char *who = "";
    vendor_default(vendor, &threads, &socks, &who);
    int auto_threads = nthreads == NULL || *nthreads == '\0';
    int auto_socks = nsocks == NULL || *nsocks == '\0';
    if (!auto_threads && parse_count("NCCL_SOCKET_NTHREADS", nthreads, &threads, err) != FB_OK)
        return err->code;
    if (!auto_socks && parse_count("NCCL_NSOCKS_PERTHREAD", nsocks, &socks, err) != FB_OK)
        return err->code;
    /* NCCL caps the threads, then the sockets per thread to fit. */
    if (threads > PROBE_NCCL_THREADS_MAX)
        threads = PROBE_NCCL_THREADS_MAX;
    if (threads > 0 && threads * socks > PROBE_NCCL_SOCKETS_MAX)
        socks = PROBE_NCCL_SOCKETS_MAX / threads;
    const char *source = auto_threads && auto_socks ? who : auto_threads || auto_socks
                         ? "the unset one from the NIC" : "both set";
    if (threads == 0 || socks == 0) {
        /* No data sockets: NCCL's proxy thread moves the bytes on the
         * connection's one socket. */
        out->threads = out->streams = 1;
        snprintf(out->why, sizeof out->why, "NCCL_SOCKET_NTHREADS=%d x NCCL_NSOCKS_PERTHREAD=%d, "
                 "%s: one socket, one thread", threads, socks, source);
        return FB_OK;
    }
    out->threads = threads;
    out->streams = threads * socks;
    snprintf(out->why, sizeof out->why, "NCCL_SOCKET_NTHREADS=%d x NCCL_NSOCKS_PERTHREAD=%d, %s",
             threads, socks, source);
    return FB_OK;
}

long probe_tcp_iface_vendor(const char *root, const char *iface_list)
{
    char name[IF_NAMESIZE + 1] = "";
    if (iface_list != NULL && *iface_list != '\0')
        snprintf(name, sizeof name, "%.*s", (int)strcspn(iface_list, ","), iface_list);
    else if (probe_tcp_default_route_iface(root, name, sizeof name) != 0)
        return -1;
    if (name[0] == '\0' || strchr(name, '/') != NULL || strcmp(name, "..") == 0)
        return -1;
    char path[FB_ROOTFS_PATH_MAX], line[32];
    struct fb_err ignored = {0};
    snprintf(path, sizeof path, "/sys/class/net/%s/device/vendor", name);
    if (fb_rootfs_read_line(root, path, line, sizeof line, &ignored) != FB_OK)
        return -1;
    char *end = NULL;
    long v = strtol(line, &end, 16);
    return end != line ? v : -1;
}
