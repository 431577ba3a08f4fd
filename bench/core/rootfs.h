/* Reading the node's /proc, /sys and /dev through a root directory.
 *
 * Every node check reads the machine only through these calls, so a test can
 * point them at a fake tree and a support engineer at a copy taken from a
 * broken node (`--root DIR`); the live system is root "" or "/". Paths passed
 * in are absolute within the root ("/proc/modules"). */
#ifndef FB_CORE_ROOTFS_H
#define FB_CORE_ROOTFS_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

#define FB_ROOTFS_PATH_MAX 4096

/* Writes root + path into buf; false when it does not fit. */
bool fb_rootfs_path(const char *root, const char *path, char *buf, size_t len);

bool fb_rootfs_exists(const char *root, const char *path);
bool fb_rootfs_is_dir(const char *root, const char *path);

/* Whole file into a NUL-terminated malloc'd string (*out, caller frees).
 * FB_ERR_INPUT with the full path and errno text when it cannot be read. */
enum fb_status fb_rootfs_read(const char *root, const char *path, char **out,
                              struct fb_err *err);

/* The same with the byte count, for files holding NUL bytes
 * (/proc/PID/environ). */
enum fb_status fb_rootfs_read_bytes(const char *root, const char *path, char **out,
                                    size_t *len, struct fb_err *err);

/* First line of a small file (sysfs attributes), newline stripped. */
enum fb_status fb_rootfs_read_line(const char *root, const char *path, char *buf,
                                   size_t len, struct fb_err *err);

/* A sysfs integer attribute such as /sys/class/net/eth0/mtu. */
enum fb_status fb_rootfs_read_long(const char *root, const char *path, long *out,
                                   struct fb_err *err);

/* The text of a symbolic link (not resolved: "../../../bus/pci/drivers/efa"
 * of a sysfs device's driver link), NUL-terminated. FB_ERR_INPUT when it is
 * no link, cannot be read, or does not fit in buf. */
enum fb_status fb_rootfs_readlink(const char *root, const char *path, char *buf, size_t len,
                                  struct fb_err *err);

/* A sorted directory listing without "." and "..". *out is an array of
 * *count malloc'd names (fb_rootfs_free_list). A missing directory gives
 * FB_ERR_INPUT; an empty one gives FB_OK with count 0. */
enum fb_status fb_rootfs_list(const char *root, const char *path, char ***out,
                              size_t *count, struct fb_err *err);
void fb_rootfs_free_list(char **names, size_t count);

#endif
