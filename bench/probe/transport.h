/* How bytes cross a link: RDMA verbs (transport_verbs.c), TCP sockets
 * (transport_tcp.c) or libfabric RMA (transport_ofi.c; ofi_none.c in a
 * build without libfabric). Everything the two do differently sits behind one ops
 * struct, from what the options mean for a transport to how a round is
 * connected and measured and how an endpoint is shown; the driver, the
 * rounds and the results call through it. The table of transports by name
 * (transports.c) drives --transport. */
#ifndef FB_PROBE_TRANSPORT_H
#define FB_PROBE_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

/* Rows of the transport table. */
enum probe_transport { PROBE_RDMA, PROBE_TCP, PROBE_OFI };

struct probe_endpoint;
struct probe_end;
struct probe_measure;
struct probe_mem;
struct probe_opts;
struct probe_rank_env;
struct probe_round;
struct probe_size_spec;

struct probe_transport_ops {
    const char *name; /* --transport value, "transport" in the record */
    /* Why this build cannot run it ("built without libfabric; ..."), NULL
     * when it can: a usage that names it ends with exit 5 and this line. */
    const char *unavailable;

    /* What the options mean for it. */
    const char *lane; /* what carries a share of a link's messages: "QP", "stream" */
    long (*lanes)(const struct probe_opts *o); /* lanes per link: -q, -P */
    /* Bandwidth runs this long unless -n or -D says (tcp, like iperf3);
     * 0 counts messages. */
    double default_duration_s;
    int gpu_memory;     /* --use-cuda applies */
    uint64_t slot_min;  /* a bandwidth slot is at least this large */
    /* FB_ERR_USAGE naming the fix for options this transport cannot run;
     * NULL when it takes any. */
    enum fb_status (*check_options)(const struct probe_opts *o, struct fb_err *err);
    /* The header's settings after the lane count (", tx depth 128, ...");
     * NULL when there are none. */
    void (*describe_options)(const struct probe_opts *o, char *buf, size_t len);

    /* This rank's device: picks and opens it and fills the endpoint. */
    enum fb_status (*open)(struct probe_rank_env *env, struct probe_endpoint *ep,
                           struct fb_err *err);
    /* Makes the buffer reachable by the device; NULL when sockets copy it. */
    enum fb_status (*register_memory)(struct probe_rank_env *env, struct probe_mem *m,
                                      struct fb_err *err);
    /* Undoes open and register_memory; safe after either failed. */
    void (*close)(struct probe_rank_env *env);

    /* Connects this rank's ends of a round (endpoint records, then queue
     * pairs or sockets). */
    enum fb_status (*connect_round)(const struct probe_rank_env *env, struct probe_round *rd,
                                    struct fb_err *err);
    /* Bandwidth on every end of the round at once; out[] receives the
     * measurements this rank owns (rdma: sources, tcp: destinations). */
    enum fb_status (*bandwidth)(const struct probe_rank_env *env, struct probe_round *rd,
                                const struct probe_size_spec *spec, struct probe_measure *out,
                                int *nout, struct fb_err *err);
    /* Ping-pong on one end; the initiator (the source) times it. */
    enum fb_status (*latency)(const struct probe_rank_env *env, struct probe_end *e,
                              const struct probe_size_spec *spec, struct probe_measure *out,
                              struct fb_err *err);
    /* Releases one end; safe on an end never connected. */
    void (*disconnect_end)(struct probe_end *e);

    /* The endpoint table of the header: two column titles and their cells. */
    const char *port_column, *address_column;
    void (*describe_endpoint)(const struct probe_endpoint *e, char *port, size_t port_len,
                              char *address, size_t address_len);
};

extern const struct probe_transport_ops probe_transport_verbs;
extern const struct probe_transport_ops probe_transport_tcp;
extern const struct probe_transport_ops probe_transport_ofi;

/* The transport called `name`, NULL when there is none; *row is its row. */
const struct probe_transport_ops *probe_transport_find(const char *name,
                                                       enum probe_transport *row);

/* The names of the transports, "rdma or tcp"; those with GPU memory only
 * when `gpu_only`. */
void probe_transport_names(int gpu_only, char *buf, size_t len);

/* "rdma, tcp, ofi (built without libfabric)" for --version. */
void probe_transport_build(char *buf, size_t len);

#endif
