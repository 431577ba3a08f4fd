/* TCP sockets between ranks: which interface a rank uses, the listener a
 * destination opens, the streams a source connects, and the measurements
 * (bandwidth over one or several streams, ping-pong latency). The control
 * plane (addresses, end-of-phase totals) travels over MPI; the sockets carry
 * only payload and a one-time stream greeting. */
#ifndef FB_PROBE_TCP_H
#define FB_PROBE_TCP_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "probe/comm.h"
#include "probe/endpoint.h"
#include "probe/measure.h"
#include "probe/size_spec.h"
#include "probe/wire.h"

#define PROBE_STREAMS_MAX 64

struct probe_tcp_cfg {
    const char *ifaces; /* --iface: comma list by local rank, NULL for the default */
    int streams;        /* -P */
    int threads;        /* --threads: workers per link end, 0 = one per stream */
    long sock_buf;      /* --sock-buf: SO_SNDBUF/SO_RCVBUF, 0 leaves autotuning on */
    int nodelay;        /* TCP_NODELAY (latency mode) */
    void (*progress)(void *arg); /* called while waiting on sockets during set-up */
    void *progress_arg;
};

/* The interface of the default route in <root>/proc/net/route; 0 if found. */
int probe_tcp_default_route_iface(const char *root, char *name, size_t len);

/* This rank's interface and IPv4 address: --iface when given (errors list
 * the interfaces that have one), else loopback when every rank is on this
 * host, else the default route's interface, else the first non-loopback one
 * by name. Fills the endpoint's device, address, MTU, speed and NUMA facts. */
enum fb_status probe_tcp_pick_iface(const struct probe_tcp_cfg *cfg, int local_rank,
                                    int local_size, int single_host, const char *host,
                                    struct in_addr *addr, struct probe_endpoint *ep,
                                    struct fb_err *err);

/* A listening socket on addr, port chosen by the kernel. */
enum fb_status probe_tcp_listen(struct in_addr addr, const struct probe_tcp_cfg *cfg, int *fd,
                                uint16_t *port, struct fb_err *err);

/* Connects cfg->streams sockets from `local` to the peer's listener, each
 * greeting with its link and stream number. */
enum fb_status probe_tcp_connect(struct in_addr local, const struct probe_tcpinfo *peer,
                                 const struct probe_tcp_cfg *cfg, uint32_t link, double timeout,
                                 const char *peer_name, int *fds, struct fb_err *err);

/* Accepts cfg->streams greeted connections for `link`, fds in stream order. */
enum fb_status probe_tcp_accept(int lfd, const struct probe_tcp_cfg *cfg, uint32_t link,
                                double timeout, const char *peer_name, int *fds,
                                struct fb_err *err);

/* One end of a link on this rank. */
struct probe_tcp_flow {
    int link;
    int peer;        /* peer rank */
    int sending;     /* 1 at the source */
    int nfd;
    int fds[PROBE_STREAMS_MAX];
    char *buf;       /* source bytes, or where received bytes land */
    size_t buf_len;
    char peer_name[FB_HOST_MAX + 96];
};

/* Bandwidth on all flows of this rank at once, each flow's streams spread
 * over `threads` worker threads (0: one per stream): a warm-up phase, then
 * the timed one. Each phase ends with the source telling the destination over
 * MPI how many bytes it sent and the destination acknowledging once it read
 * them all. The destination measures (first byte read to last), out[i] for
 * receiving flows[i]. */
enum fb_status probe_tcp_bw(const struct probe_ctx *c, struct probe_tcp_flow *flows, int n,
                            int threads, const struct probe_size_spec *r, struct probe_measure *out,
                            struct fb_err *err);

/* Ping-pong of `size`-byte messages on stream 0; the initiator times the
 * round trips. */
enum fb_status probe_tcp_lat(struct probe_tcp_flow *f, const struct probe_size_spec *r,
                             int initiator, struct probe_measure *out, struct fb_err *err);

void probe_tcp_close_flow(struct probe_tcp_flow *f);

#endif
