/* How many streams a TCP link has and how many threads drive them when
 * fabric-rdma copies NCCL's socket transport (--nccl-like): NCCL opens
 * NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD sockets per connection and
 * drives them with NCCL_SOCKET_NTHREADS helper threads; unset, both come
 * from the NIC's PCI vendor (AWS ENA 2 x 8, Google gVNIC 4 x 1, else no
 * helper thread and the one socket). */
#ifndef FB_PROBE_TCP_LAYOUT_H
#define FB_PROBE_TCP_LAYOUT_H

#include <stddef.h>

#include "core/status.h"

#define PROBE_NCCL_THREADS_MAX 16 /* NCCL's MAX_THREADS */
#define PROBE_NCCL_SOCKETS_MAX 64 /* NCCL's MAX_SOCKETS */

struct probe_tcp_layout {
    int threads; /* per link end, >= 1 */
    int streams; /* per link, a multiple of threads */
    char why[160]; /* "NCCL_SOCKET_NTHREADS=2 x NCCL_NSOCKS_PERTHREAD=8, AWS NIC default" */
};

/* The layout NCCL would pick from the two variables (NULL when unset) and
 * the NIC's PCI vendor (-1 when unknown). A variable that is not a whole
 * number >= 0 is FB_ERR_USAGE naming it. */
enum fb_status probe_tcp_nccl_layout(const char *nthreads, const char *nsocks, long vendor,
                                     struct probe_tcp_layout *out, struct fb_err *err);

/* The PCI vendor of the first interface of `iface_list` (--iface), or of
 * the default route's interface when the list is NULL or empty, from
 * <root>/sys; -1 when there is none (loopback, a veth, no route). */
long probe_tcp_iface_vendor(const char *root, const char *iface_list);

#endif
