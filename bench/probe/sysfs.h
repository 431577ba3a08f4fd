/* Device facts verbs and sockets do not give: NUMA node, PCI address, a
 * network interface's speed. Read through core/rootfs.h under a root
 * directory ("" for the live system) so tests read recorded trees. Unknown
 * is -1 or "". */
#ifndef FB_PROBE_SYSFS_H
#define FB_PROBE_SYSFS_H

#include <stddef.h>

/* <root>/sys/class/<cls>/<name>/device/numa_node; cls "infiniband" or "net". */
int probe_sysfs_numa_node(const char *root, const char *cls, const char *name);

/* PCI_SLOT_NAME from <root>/sys/class/<cls>/<name>/device/uevent. Returns 0
 * when found. */
int probe_sysfs_pci_address(const char *root, const char *cls, const char *name, char *buf,
                            size_t len);

/* Link speed in Mb/s of a physical interface; -1 for virtual interfaces
 * (veth, bridges, loopback report made-up or no speeds) and unknown ones. */
long probe_sysfs_net_speed_mbps(const char *root, const char *iface);

/* <root>/sys/class/net/<iface>/mtu, or -1. */
long probe_sysfs_net_mtu(const char *root, const char *iface);

#endif
