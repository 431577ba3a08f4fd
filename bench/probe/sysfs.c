#include "probe/sysfs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    int ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    if (!ok)
        return -1;
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}

static long read_long(const char *path, long fallback)
{
    char line[64], *end = NULL;
    if (read_line(path, line, sizeof line) != 0)
        return fallback;
    long v = strtol(line, &end, 10);
    return end != line && *end == '\0' ? v : fallback;
}

int probe_sysfs_numa_node(const char *root, const char *cls, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/sys/class/%s/%s/device/numa_node", root, cls, name);
    long v = read_long(path, -1);
    return v < 0 || v > 4096 ? -1 : (int)v;
}

int probe_sysfs_pci_address(const char *root, const char *cls, const char *name, char *buf,
                            size_t len)
{
    char path[1024], line[256];
    snprintf(path, sizeof path, "%s/sys/class/%s/%s/device/uevent", root, cls, name);
    FILE *f = fopen(path, "r");
    buf[0] = '\0';
    if (f == NULL)
        return -1;
    int found = -1;
    while (found != 0 && fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "PCI_SLOT_NAME=", 14) == 0) {
            line[strcspn(line, "\n")] = '\0';
            snprintf(buf, len, "%s", line + 14);
            found = 0;
        }
    }
    fclose(f);
    return found;
}

long probe_sysfs_net_speed_mbps(const char *root, const char *iface)
{
    char path[1024];
    struct stat st;
    /* Only interfaces backed by a device have a real link speed. */
    snprintf(path, sizeof path, "%s/sys/class/net/%s/device", root, iface);
    if (stat(path, &st) != 0)
        return -1;
    snprintf(path, sizeof path, "%s/sys/class/net/%s/speed", root, iface);
    long v = read_long(path, -1);
    return v > 0 ? v : -1;
}

long probe_sysfs_net_mtu(const char *root, const char *iface)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/sys/class/net/%s/mtu", root, iface);
    return read_long(path, -1);
}
