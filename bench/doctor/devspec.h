/* NCCL's device-list syntax, shared by NCCL_IB_HCA and NCCL_SOCKET_IFNAME.
 *
 *   [^][=]name[:port][,name[:port]...]
 *
 * A leading '^' turns the whole list into an exclusion list; a '=' after it
 * switches from prefix to exact matching for every entry. Without '=',
 * "mlx5_1" also selects mlx5_10..mlx5_19, the classic surprise this module
 * lets the checks point out. Ports only mean something for RDMA devices. */
#ifndef FB_DOCTOR_DEVSPEC_H
#define FB_DOCTOR_DEVSPEC_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

#define FB_DEVSPEC_MAX 32 /* NCCL's MAX_IB_DEVS: entries past it are ignored */
#define FB_DEVSPEC_NAME_MAX 64

struct fb_devspec_entry {
    char name[FB_DEVSPEC_NAME_MAX];
    int port; /* -1: any port */
};

struct fb_devspec {
    bool exclude;
    bool exact;
    size_t n;
    struct fb_devspec_entry entry[FB_DEVSPEC_MAX];
};

/* Parses `text` (the value of variable `var`, named in errors). Rejects an
 * empty list, a port that is not a positive integer, a name too long and more
 * than FB_DEVSPEC_MAX entries; NCCL ignores those silently or truncates. */
enum fb_status fb_devspec_parse(const char *text, const char *var, struct fb_devspec *out,
                                struct fb_err *err);

/* Entry i matches device `name` (port -1: the device as a whole). */
bool fb_devspec_entry_matches(const struct fb_devspec *spec, size_t i, const char *name,
                              int port);

/* The whole list selects `name`/`port` as NCCL would (exclusion applied). */
bool fb_devspec_selects(const struct fb_devspec *spec, const char *name, int port);

/* Writes the list back in NCCL syntax (for messages and suggestions). */
void fb_devspec_format(const struct fb_devspec *spec, char *buf, size_t len);

#endif
