/* Which device (HCA or network interface) a rank uses: one rank per device,
 * local rank l taking the l-th. Pure over a list of names, so the rules and
 * their errors are tested without hardware. */
#ifndef FB_PROBE_DEVSEL_H
#define FB_PROBE_DEVSEL_H

#include <stddef.h>

#include "core/status.h"

/* `present`: the devices this host has. `requested`: NULL for all of them in
 * name order, else a comma list ("mlx5_0,mlx5_3"); a single name is shared
 * by every local rank. Errors (FB_ERR_USAGE): a requested name that is not
 * present (the message lists those that are), or more local ranks than
 * devices. `what` is "HCA" or "interface", `flag` the option ("-d"). */
enum fb_status probe_pick_device(const char *const *present, int npresent, const char *requested,
                                 int local_rank, int local_size, const char *what,
                                 const char *flag, const char *host, char *out, size_t len,
                                 struct fb_err *err);


#endif
