#include "doctor/inventory.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rootfs.h"
#include "core/text.h"

static void read_attr(const char *root, char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* sysfs attributes are best effort: a missing one leaves the field empty
 * and the check that needs it says so. The path is a format
 * ("/sys/class/net/%s/operstate"). */
static void read_attr(const char *root, char *buf, size_t len, const char *fmt, ...)
{
    char path[FB_ROOTFS_PATH_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(path, sizeof path, fmt, ap);
    va_end(ap);
    struct fb_err ignored = {FB_OK, ""};
    if (fb_rootfs_read_line(root, path, buf, len, &ignored) != FB_OK)
        buf[0] = '\0';
}

/* Names in /sys/class/infiniband/DEV/SUB (free with fb_rootfs_free_list);
 * best effort too: none when it cannot be listed. */
static char **list_dev_dir(const char *root, const char *dev, const char *sub, size_t *n)
{
    char path[FB_ROOTFS_PATH_MAX];
    snprintf(path, sizeof path, "/sys/class/infiniband/%s/%s", dev, sub);
    char **names = NULL;
    struct fb_err ignored = {FB_OK, ""};
    *n = 0;
    if (fb_rootfs_list(root, path, &names, n, &ignored) != FB_OK)
        return NULL;
    return names;
}

static void read_port(const char *root, const char *dev, const char *num,
                      struct fb_inv_port *p)
{
    char state[64];
    p->num = atoi(num);
    read_attr(root, state, sizeof state, "/sys/class/infiniband/%s/ports/%s/state", dev, num);
    /* "4: ACTIVE" -> "ACTIVE" */
    const char *colon = strchr(state, ':');
    const char *word = colon ? colon + 1 : state;
    while (*word == ' ')
        word++;
    fb_copy(p->state, sizeof p->state, word, strlen(word));
    read_attr(root, p->link_layer, sizeof p->link_layer,
              "/sys/class/infiniband/%s/ports/%s/link_layer", dev, num);
    read_attr(root, p->rate, sizeof p->rate, "/sys/class/infiniband/%s/ports/%s/rate", dev, num);
}

static void read_netdevs(const char *root, struct fb_inv_rdma *d)
{
    /* The PCI function's net/ directory names the netdev of both RoCE and
     * IPoIB; a RoCE port's GID table is the fallback where device/ is hidden. */
    size_t n = 0;
    char **names = list_dev_dir(root, d->name, "device/net", &n);
    for (size_t i = 0; i < n && d->nnetdevs < FB_INV_NETDEVS_MAX; i++)
        snprintf(d->netdev[d->nnetdevs++], FB_INV_NAME_MAX, "%s", names[i]);
    fb_rootfs_free_list(names, n);
    for (size_t i = 0; i < d->nports && d->nnetdevs == 0; i++) {
        char ndev[FB_INV_NAME_MAX];
        read_attr(root, ndev, sizeof ndev, "/sys/class/infiniband/%s/ports/%d/gid_attrs/ndevs/0",
                  d->name, d->port[i].num);
        if (ndev[0] != '\0')
            snprintf(d->netdev[d->nnetdevs++], FB_INV_NAME_MAX, "%s", ndev);
    }
}

enum fb_status fb_inv_rdma_scan(const char *root, struct fb_inv_rdma **out, size_t *n,
                                struct fb_err *err)
{
    *out = NULL;
    *n = 0;
    if (!fb_rootfs_is_dir(root, "/sys/class/infiniband"))
        return FB_OK;
    char **names = NULL;
    size_t count = 0;
    enum fb_status st = fb_rootfs_list(root, "/sys/class/infiniband", &names, &count, err);
    if (st != FB_OK || count == 0) {
        if (st == FB_OK)
            fb_rootfs_free_list(names, count);
        return st;
    }
    struct fb_inv_rdma *devs = calloc(count, sizeof *devs);
    if (devs == NULL) {
        fb_rootfs_free_list(names, count);
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory scanning RDMA devices");
    }
    for (size_t i = 0; i < count; i++) {
        struct fb_inv_rdma *d = &devs[i];
        snprintf(d->name, sizeof d->name, "%s", names[i]);
        size_t np = 0;
        char **ports = list_dev_dir(root, d->name, "ports", &np);
        for (size_t p = 0; p < np && d->nports < FB_INV_PORTS_MAX; p++)
            read_port(root, d->name, ports[p], &d->port[d->nports++]);
        fb_rootfs_free_list(ports, np);
        read_netdevs(root, d);
    }
    fb_rootfs_free_list(names, count);
    *out = devs;
    *n = count;
    return FB_OK;
}

bool fb_inv_port_active(const struct fb_inv_port *p)
{
    return strcmp(p->state, "ACTIVE") == 0;
}

bool fb_inv_rdma_any_active(const struct fb_inv_rdma *d)
{
    for (size_t i = 0; i < d->nports; i++)
        if (fb_inv_port_active(&d->port[i]))
            return true;
    return false;
}

bool fb_inv_rdma_is_roce(const struct fb_inv_rdma *d)
{
    return d->nports > 0 && strcmp(d->port[0].link_layer, "Ethernet") == 0;
}

const struct fb_inv_port *fb_inv_rdma_port(const struct fb_inv_rdma *d, int num)
{
    for (size_t i = 0; i < d->nports; i++)
        if (d->port[i].num == num)
            return &d->port[i];
    return NULL;
}

void fb_inv_netdev_read(const char *root, const char *name, struct fb_inv_netdev *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", name);
    out->mtu = -1;
    char path[FB_ROOTFS_PATH_MAX];
    snprintf(path, sizeof path, "/sys/class/net/%s", name);
    out->exists = fb_rootfs_exists(root, path);
    if (!out->exists)
        return;
    struct fb_err ignored = {FB_OK, ""};
    snprintf(path, sizeof path, "/sys/class/net/%s/mtu", name);
    if (fb_rootfs_read_long(root, path, &out->mtu, &ignored) != FB_OK)
        out->mtu = -1;
    read_attr(root, out->operstate, sizeof out->operstate, "/sys/class/net/%s/operstate", name);
}

enum fb_status fb_inv_net_list(const char *root, char ***names, size_t *n, struct fb_err *err)
{
    *names = NULL;
    *n = 0;
    if (!fb_rootfs_is_dir(root, "/sys/class/net"))
        return FB_OK;
    enum fb_status st = fb_rootfs_list(root, "/sys/class/net", names, n, err);
    if (st != FB_OK)
        return st;
    /* Interfaces are directories; bonding_masters and the like are files. */
    size_t kept = 0;
    for (size_t i = 0; i < *n; i++) {
        char path[FB_ROOTFS_PATH_MAX];
        snprintf(path, sizeof path, "/sys/class/net/%s", (*names)[i]);
        if (fb_rootfs_is_dir(root, path))
            (*names)[kept++] = (*names)[i];
        else
            free((*names)[i]);
    }
    *n = kept;
    return FB_OK;
}
