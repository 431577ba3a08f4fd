/* The TCP transport: one interface per rank, -P sockets on every link
 * end, bandwidth measured at the destination and ping-pong latency (tcp.c,
 * tcp_run.c). Addresses travel over MPI. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "probe/opts.h"
#include "probe/rounds.h"
#include "probe/transport.h"

/* Small sizes still read in large chunks: a TCP receiver should not be
 * limited by its read size. */
#define TCP_RECV_MIN (256u << 10)

static long tcp_lanes(const struct probe_opts *o) { return o->streams; }

static enum fb_status tcp_open(struct probe_rank_env *env, struct probe_endpoint *ep,
                               struct fb_err *err)
{
    const struct probe_opts *o = env->o;
    const struct fb_world *w = env->c->w;
    env->tcfg = (struct probe_tcp_cfg){o->iface, (int)o->streams, (int)o->threads,
                                       (long)o->sock_buf, o->latency, NULL, NULL};
    return probe_tcp_pick_iface(&env->tcfg, w->local_rank, w->local_size, w->nodes == 1, w->host,
                                &env->addr, ep, err);
}

/* Sockets live only as long as a round. */
static void tcp_close(struct probe_rank_env *env) { (void)env; }

static enum fb_status offer(const struct probe_rank_env *env, const struct probe_tcp_cfg *cfg,
                            struct probe_end *e, struct fb_err *err)
{
    uint16_t port = 0;
    if (probe_tcp_listen(env->addr, cfg, &e->listen_fd, &port, err) != FB_OK)
        return err->code;
    struct probe_tcpinfo info = {.link = (uint32_t)e->link->id, .rank = env->c->w->rank,
                                 .port = port, .streams = (uint16_t)env->tcfg.streams};
    memcpy(info.ipv4, &env->addr, 4);
    int len = (int)probe_tcpinfo_encode(&info, e->record);
    MPI_Isend(e->record, len, MPI_BYTE, e->peer, PROBE_TAG_TCPINFO, env->c->comm, &e->record_req);
    return FB_OK;
}

static enum fb_status connect_end(const struct probe_rank_env *env,
                                  const struct probe_tcp_cfg *cfg, struct probe_end *e,
                                  struct fb_err *err)
{
    uint8_t in[PROBE_TCPINFO_WIRE_LEN + 8];
    int got = 0;
    char what[96];
    snprintf(what, sizeof what, "waiting for the TCP address of link %d", e->link->id);
    struct probe_tcpinfo peer;
    if (probe_recv(env->c, e->peer, PROBE_TAG_TCPINFO, in, sizeof in, &got, env->o->timeout, what,
                   err) != FB_OK ||
        probe_tcpinfo_decode(in, (size_t)got, &peer, err) != FB_OK)
        return err->code;
    if ((int)peer.link != e->link->id || peer.streams != env->tcfg.streams)
        return fb_fail(err, FB_ERR_LAUNCH, "%s offered link %u with %u streams where link %d with "
                       "%d was due; run every rank with the same options", e->peer_name, peer.link,
                       peer.streams, e->link->id, env->tcfg.streams);
    return probe_tcp_connect(env->addr, &peer, cfg, (uint32_t)e->link->id, env->o->timeout,
                             e->peer_name, e->flow.fds, err);
}

static enum fb_status accept_end(const struct probe_rank_env *env,
                                 const struct probe_tcp_cfg *cfg, struct probe_end *e,
                                 struct fb_err *err)
{
    if (probe_tcp_accept(e->listen_fd, cfg, (uint32_t)e->link->id, env->o->timeout, e->peer_name,
                         e->flow.fds, err) != FB_OK)
        return err->code;
    close(e->listen_fd);
    e->listen_fd = -1;
    return probe_wait(env->c, &e->record_req, env->o->timeout, e->peer,
                      "handing over a TCP address", err);
}

static void init_flow(const struct probe_rank_env *env, struct probe_end *e)
{
    struct probe_tcp_flow *f = &e->flow;
    f->link = e->link->id;
    f->peer = e->peer;
    f->sending = e->is_src;
    f->nfd = env->tcfg.streams;
    for (int k = 0; k < PROBE_STREAMS_MAX; k++)
        f->fds[k] = -1;
    f->buf = e->slot;
    f->buf_len = env->slot_len;
    snprintf(f->peer_name, sizeof f->peer_name, "%s", e->peer_name);
}

static void mpi_progress(void *arg)
{
    const struct probe_ctx *c = arg;
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, c->comm, &flag, MPI_STATUS_IGNORE);
}

/* Destinations offer first, then sources connect, then destinations
 * accept: no rank waits on another that waits on it. */
static enum fb_status tcp_connect_round(const struct probe_rank_env *env, struct probe_round *rd,
                                        struct fb_err *err)
{
    struct probe_tcp_cfg cfg = env->tcfg;
    cfg.progress = mpi_progress;
    cfg.progress_arg = (void *)env->c;
    for (int i = 0; i < rd->nends; i++)
        init_flow(env, &rd->ends[i]);
    for (int i = 0; i < rd->nends; i++)
        if (!rd->ends[i].is_src && offer(env, &cfg, &rd->ends[i], err) != FB_OK)
            return err->code;
    for (int i = 0; i < rd->nends; i++)
        if (rd->ends[i].is_src && connect_end(env, &cfg, &rd->ends[i], err) != FB_OK)
            return err->code;
    for (int i = 0; i < rd->nends; i++)
        if (!rd->ends[i].is_src && accept_end(env, &cfg, &rd->ends[i], err) != FB_OK)
            return err->code;
    return FB_OK;
}

/* Every flow of this rank at once; destinations time what they read. */
static enum fb_status tcp_bandwidth(const struct probe_rank_env *env, struct probe_round *rd,
                                    const struct probe_size_spec *spec, struct probe_measure *out,
                                    int *nout, struct fb_err *err)
{
    struct probe_tcp_flow flows[PROBE_ENDS_MAX];
    struct probe_measure tmp[PROBE_ENDS_MAX];
    for (int i = 0; i < rd->nends; i++)
        flows[i] = rd->ends[i].flow;
    if (probe_tcp_bw(env->c, flows, rd->nends, env->tcfg.threads, spec, tmp, err) != FB_OK)
        return err->code;
    for (int i = 0; i < rd->nends; i++)
        if (!rd->ends[i].is_src)
            out[(*nout)++] = tmp[i];
    return FB_OK;
}

static enum fb_status tcp_latency(const struct probe_rank_env *env, struct probe_end *e,
                                  const struct probe_size_spec *spec, struct probe_measure *out,
                                  struct fb_err *err)
{
    (void)env;
    return probe_tcp_lat(&e->flow, spec, e->is_src, out, err);
}

/* ", one thread per stream" or ", 2 threads (NCCL_SOCKET_NTHREADS=2 x ...)". */
static void tcp_describe_options(const struct probe_opts *o, char *buf, size_t len)
{
    if (o->threads <= 0 || o->threads == o->streams)
        snprintf(buf, len, ", %s", o->streams == 1 ? "on its own thread" : "one thread per stream");
    else
        snprintf(buf, len, ", %ld thread%s", o->threads, o->threads == 1 ? "" : "s");
    if (o->layout[0] != '\0') {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, " (%s)", o->layout);
    }
}

static void tcp_disconnect_end(struct probe_end *e)
{
    probe_tcp_close_flow(&e->flow);
    if (e->listen_fd >= 0)
        close(e->listen_fd);
    e->listen_fd = -1;
}

static void tcp_describe_endpoint(const struct probe_endpoint *e, char *port, size_t port_len,
                                  char *address, size_t address_len)
{
    snprintf(port, port_len, "%s", e->link_layer);
    snprintf(address, address_len, "%s", e->address);
}

const struct probe_transport_ops probe_transport_tcp = {
    .name = "tcp",
    .lane = "stream",
    .lanes = tcp_lanes,
    .default_duration_s = 2,
    .gpu_memory = 0,
    .slot_min = TCP_RECV_MIN,
    .check_options = NULL,
    .describe_options = tcp_describe_options,
    .open = tcp_open,
    .register_memory = NULL,
    .close = tcp_close,
    .connect_round = tcp_connect_round,
    .bandwidth = tcp_bandwidth,
    .latency = tcp_latency,
    .disconnect_end = tcp_disconnect_end,
    .port_column = "link",
    .address_column = "address",
    .describe_endpoint = tcp_describe_endpoint,
};
