#include "probe/sysfs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rootfs.h"
#include "core/text.h"

/* A device attribute as a number, -1 when it is missing or not a number:
 * these facts are descriptive, never a reason to stop. */
static long attribute(const char *root, const char *path)
{
    struct fb_err ignored = {0};
    long v = -1;
    return fb_rootfs_read_long(root, path, &v, &ignored) == FB_OK ? v : -1;
}

int probe_sysfs_numa_node(const char *root, const char *cls, const char *name)
{
    char path[FB_ROOTFS_PATH_MAX];
    snprintf(path, sizeof path, "/sys/class/%s/%s/device/numa_node", cls, name);
    long v = attribute(root, path);
    return v < 0 || v > 4096 ? -1 : (int)v;
}

int probe_sysfs_pci_address(const char *root, const char *cls, const char *name, char *buf,
                            size_t len)
{
    static const char key[] = "PCI_SLOT_NAME=";
    char path[FB_ROOTFS_PATH_MAX], *text = NULL;
    struct fb_err ignored = {0};
    buf[0] = '\0';
    snprintf(path, sizeof path, "/sys/class/%s/%s/device/uevent", cls, name);
    if (fb_rootfs_read(root, path, &text, &ignored) != FB_OK)
        return -1;
    int found = -1;
    size_t pos = 0, n = 0, tlen = strlen(text);
    const char *line = NULL;
    while (found != 0 && fb_next_line(text, tlen, &pos, &line, &n)) {
        if (n >= sizeof key - 1 && strncmp(line, key, sizeof key - 1) == 0) {
            fb_copy(buf, len, line + sizeof key - 1, n - (sizeof key - 1));
            found = 0;
        }
    }
    free(text);
    return found;
}

long probe_sysfs_net_speed_mbps(const char *root, const char *iface)
{
    char path[FB_ROOTFS_PATH_MAX];
    /* Only interfaces backed by a device have a real link speed. */
    snprintf(path, sizeof path, "/sys/class/net/%s/device", iface);
    if (!fb_rootfs_exists(root, path))
        return -1;
    snprintf(path, sizeof path, "/sys/class/net/%s/speed", iface);
    long v = attribute(root, path);
    return v > 0 ? v : -1;
}

long probe_sysfs_net_mtu(const char *root, const char *iface)
{
    char path[FB_ROOTFS_PATH_MAX];
    snprintf(path, sizeof path, "/sys/class/net/%s/mtu", iface);
    return attribute(root, path);
}
