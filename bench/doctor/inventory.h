/* What the node's sysfs says about RDMA devices and network interfaces,
 * read through a root directory (rootfs.h). Several checks judge the same
 * facts (a RoCE netdev's MTU, an HCA's port state), so they are gathered here
 * once, in one shape. */
#ifndef FB_DOCTOR_INVENTORY_H
#define FB_DOCTOR_INVENTORY_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

#define FB_INV_NAME_MAX 64
#define FB_INV_PORTS_MAX 4
#define FB_INV_NETDEVS_MAX 4

struct fb_inv_port {
    int num;
    char state[32];      /* "ACTIVE", "DOWN", "INIT" (number prefix dropped) */
    char link_layer[32]; /* "InfiniBand" or "Ethernet" (RoCE) */
    char rate[64];       /* "400 Gb/sec (4X NDR)" */
};

struct fb_inv_rdma {
    char name[FB_INV_NAME_MAX];
    size_t nports;
    struct fb_inv_port port[FB_INV_PORTS_MAX];
    size_t nnetdevs;
    char netdev[FB_INV_NETDEVS_MAX][FB_INV_NAME_MAX];
};

struct fb_inv_netdev {
    char name[FB_INV_NAME_MAX];
    bool exists;
    long mtu;          /* -1 when unreadable */
    char operstate[16]; /* "up", "down", "unknown" (loopback, some virtual) */
};

/* RDMA devices of /sys/class/infiniband in version order. No such
 * directory (no RDMA in the kernel) is not an error: *n is 0. */
enum fb_status fb_inv_rdma_scan(const char *root, struct fb_inv_rdma **out, size_t *n,
                                struct fb_err *err);

bool fb_inv_port_active(const struct fb_inv_port *p);
bool fb_inv_rdma_any_active(const struct fb_inv_rdma *d);
bool fb_inv_rdma_is_roce(const struct fb_inv_rdma *d);
const struct fb_inv_port *fb_inv_rdma_port(const struct fb_inv_rdma *d, int num);

/* One interface of /sys/class/net. */
void fb_inv_netdev_read(const char *root, const char *name, struct fb_inv_netdev *out);

/* Names in /sys/class/net (rootfs list semantics: free with
 * fb_rootfs_free_list); a missing directory gives *n = 0. */
enum fb_status fb_inv_net_list(const char *root, char ***names, size_t *n, struct fb_err *err);

#endif
