/* Which network NCCL used in this run, from its own INFO log: each rank
 * points NCCL_DEBUG_FILE at a private file before NCCL starts, and after the
 * sweep the files' text is gathered to rank 0 and read there (the ranks of a
 * multi-node job do not share a file system). */
#ifndef FB_COLL_TRANSPORT_H
#define FB_COLL_TRANSPORT_H

#include <json-c/json.h>
#include <limits.h>

#include "core/world.h"

struct fb_nccl_capture {
    int active;
    char path[PATH_MAX]; /* this rank's log file */
};

/* Sets NCCL_DEBUG=INFO (and NCCL_DEBUG_SUBSYS=INIT,NET unless set) and a
 * per-process NCCL_DEBUG_FILE in `dir`. Must run before NCCL initialises.
 * A user's own NCCL_DEBUG_FILE is respected: capture then stays off and
 * `note` says why. Local. */
void fb_nccl_capture_start(struct fb_nccl_capture *cap, const char *dir, char *note, size_t len);

/* Collective. Gathers every rank's log to rank 0, keeps a copy at
 * `save_path` (rank 0, may be NULL) and returns the transport object on
 * rank 0 (NULL elsewhere). Errors are for rank 0 to report as warnings: the
 * measurement stands without them. */
enum fb_status fb_nccl_capture_finish(struct fb_nccl_capture *cap, const struct fb_world *w,
                                      const char *save_path, json_object **transport,
                                      struct fb_err *err);

/* "net Socket, GPUDirect RDMA no, 2 ranks" for the table's comment line. */
void fb_transport_describe(json_object *transport, char *buf, size_t len);

#endif
