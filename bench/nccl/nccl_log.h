/* Which transports NCCL really used, read from its NCCL_DEBUG=INFO output.
 *
 * NCCL picks its network silently: a cluster whose RDMA path is broken runs
 * on TCP sockets and only the INFO log says so ("via NET/Socket"). This
 * module reads that log (one file per process, as NCCL_DEBUG_FILE writes it,
 * or any text holding INFO lines such as an nccl-tests output) and builds the
 * "transport" object of docs/results-schema.md:
 *
 *   {net, gdr, per_rank: [{rank, host, net, gdr, interfaces, intra}], source}
 *
 * Facts used, per process and GPU (the "host:pid:tid [dev]" line prefix):
 *   "comm 0x.. rank R nRanks N"             the rank
 *   "Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA"
 *                                           network used, GPUDirect or not
 *   "... via P2P/CUMEM/read", "via SHM/..."  intra-node transports
 *   "NVLS comm ...", "Connected NVLS"       NVLink SHARP
 *   "NET/IB : Using [0]mlx5_0:1/IB ..."     interfaces of a network
 *   "NET/OFI Selected Provider is efa ..."  libfabric provider (EFA)
 *   "Using network IB"                      the network NCCL initialised
 * Network names are canonical: IB, Socket, FasTrak (GKE TCPXO), OFI (AWS
 * Libfabric / EFA); other plugins keep the name they print. */
#ifndef FB_NCCL_NCCL_LOG_H
#define FB_NCCL_NCCL_LOG_H

#include <json-c/json.h>
#include <stddef.h>

#include "core/status.h"
#include "core/text.h"

/* Reads the given log files (each NCCL process's NCCL_DEBUG_FILE output; a
 * file may also hold several processes' lines) and returns a new "transport"
 * object in *transport_out. FB_ERR_INPUT, with a one-line message naming the
 * file, for a missing or unreadable file, files without any NCCL INFO line,
 * logs of different runs mixed together (ranks seen twice, different rank
 * counts) and logs that end before NCCL chose its transports. */
enum fb_status fb_transport_from_logs(const char *const *paths, int npaths,
                                      json_object **transport_out, struct fb_err *err);

/* The same where each argument may also be a directory holding one log per
 * process (NCCL_DEBUG_FILE=DIR/nccl.%h.%p): its regular files are read in
 * name order. */
enum fb_status fb_transport_from_args(const char *const *args, int nargs,
                                      json_object **transport_out, struct fb_err *err);

/* A transport object as a few lines for people: the run's network, then a
 * line per rank (host, network, GPUDirect, interfaces, intra-node). */
void fb_transport_text(json_object *transport, struct fb_str *out);

/* The same in steps, for callers that hold the text rather than files (a
 * multi-node run gathers each rank's log to one rank; an nccl-tests output
 * carries INFO lines between its table lines). */
struct fb_nccl_log;

struct fb_nccl_log *fb_nccl_log_new(void);
void fb_nccl_log_free(struct fb_nccl_log *log);

/* Adds the INFO lines of `text`; other lines are ignored. `source` names the
 * text in messages and stands in for the host of lines without a prefix. */
enum fb_status fb_nccl_log_feed(struct fb_nccl_log *log, const char *source, const char *text,
                                size_t len, struct fb_err *err);

/* Number of "NCCL INFO" lines fed so far. */
size_t fb_nccl_log_info_lines(const struct fb_nccl_log *log);

/* Builds the transport object from everything fed (errors as above). */
enum fb_status fb_nccl_log_transport(const struct fb_nccl_log *log, json_object **transport_out,
                                     struct fb_err *err);

/* Canonical network name for a name NCCL prints ("AWS Libfabric" -> "OFI").
 * Returns `name` itself when it is not one of the known aliases. */
const char *fb_net_canonical(const char *name);

#endif
