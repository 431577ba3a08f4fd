#include "probe/rounds.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"

/* Small sizes still read in large chunks: a TCP receiver should not be
 * limited by its read size. */
#define TCP_RECV_MIN (256u << 10)
#define LAT_INLINE 220

uint64_t probe_slot_len(const struct probe_opts *o)
{
    uint64_t largest = o->sizes[o->nsizes - 1];
    if (o->latency)
        return 2 * largest; /* receive area, then send area */
    if (o->transport == PROBE_TCP) {
        uint64_t need = (uint64_t)o->streams * largest;
        return need < TCP_RECV_MIN ? TCP_RECV_MIN : need;
    }
    return (uint64_t)o->qps * largest;
}

static void list_ends(const struct probe_rank_env *env, const struct probe_schedule *s, int round,
                      struct probe_round *rd)
{
    int me = env->c->w->rank;
    memset(rd, 0, sizeof *rd);
    rd->index = round;
    for (int i = s->first[round]; i < s->first[round + 1] && rd->nends < env->nslots; i++) {
        const struct probe_link *l = &s->links[i];
        if (l->src != me && l->dst != me)
            continue;
        struct probe_end *e = &rd->ends[rd->nends];
        e->link = l;
        e->is_src = l->src == me;
        e->peer = e->is_src ? l->dst : l->src;
        e->slot = env->buf + (uint64_t)rd->nends * env->slot_len;
        e->listen_fd = -1;
        probe_rank_name(env->c, e->peer, e->peer_name, sizeof e->peer_name);
        rd->nends++;
    }
}

/* ---- rdma --------------------------------------------------------------- */

static enum fb_status setup_verbs_end(const struct probe_rank_env *env, struct probe_end *e,
                                      struct fb_err *err)
{
    const struct probe_opts *o = env->o;
    if (env->host_memory)
        memset(e->slot, 0, env->slot_len); /* no stale byte may pass for a latency reply */
    int nqp = o->latency ? 1 : (int)o->qps;
    if (probe_verbs_link_create(env->dev, e->link->id, env->c->w->rank, nqp, (int)o->tx_depth,
                                o->latency ? LAT_INLINE : 0, e->slot, env->slot_len, env->mr,
                                e->peer_name, &e->vl, err) != FB_OK)
        return err->code;
    struct probe_qpinfo mine, theirs;
    probe_verbs_link_info(e->vl, &mine);
    uint8_t in[PROBE_QPINFO_WIRE_MAX];
    int len = (int)probe_qpinfo_encode(&mine, e->record), got = 0;
    char what[96];
    snprintf(what, sizeof what, "exchanging queue-pair records for link %d", e->link->id);
    if (probe_exchange(env->c, e->peer, PROBE_TAG_QPINFO, e->record, len, in, sizeof in, &got,
                       o->timeout, what, err) != FB_OK ||
        probe_qpinfo_decode(in, (size_t)got, &theirs, err) != FB_OK)
        return err->code;
    if ((int)theirs.link != e->link->id || theirs.rank != e->peer)
        return fb_fail(err, FB_ERR_LAUNCH, "%s sent the record of link %u where link %d was due; "
                       "are all ranks running the same command?", e->peer_name, theirs.link,
                       e->link->id);
    return probe_verbs_link_connect(e->vl, &theirs, env->me, err);
}

/* ---- tcp ---------------------------------------------------------------- */

static enum fb_status tcp_offer(const struct probe_rank_env *env, const struct probe_tcp_cfg *cfg,
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

static enum fb_status tcp_connect_end(const struct probe_rank_env *env,
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

/* Destinations offer first, then sources connect, then destinations
 * accept: no rank waits on another that waits on it. */
static void mpi_progress(void *arg)
{
    const struct probe_ctx *c = arg;
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, c->comm, &flag, MPI_STATUS_IGNORE);
}

static enum fb_status setup_tcp(const struct probe_rank_env *env, struct probe_round *rd,
                                struct fb_err *err)
{
    struct probe_tcp_cfg cfg = env->tcfg;
    cfg.progress = mpi_progress;
    cfg.progress_arg = (void *)env->c;
    for (int i = 0; i < rd->nends; i++)
        init_flow(env, &rd->ends[i]);
    for (int i = 0; i < rd->nends; i++)
        if (!rd->ends[i].is_src && tcp_offer(env, &cfg, &rd->ends[i], err) != FB_OK)
            return err->code;
    for (int i = 0; i < rd->nends; i++)
        if (rd->ends[i].is_src && tcp_connect_end(env, &cfg, &rd->ends[i], err) != FB_OK)
            return err->code;
    for (int i = 0; i < rd->nends; i++) {
        struct probe_end *e = &rd->ends[i];
        if (e->is_src)
            continue;
        if (probe_tcp_accept(e->listen_fd, &cfg, (uint32_t)e->link->id, env->o->timeout,
                             e->peer_name, e->flow.fds, err) != FB_OK)
            return err->code;
        close(e->listen_fd);
        e->listen_fd = -1;
        if (probe_wait(env->c, &e->record_req, env->o->timeout, e->peer,
                       "handing over a TCP address", err) != FB_OK)
            return err->code;
    }
    return FB_OK;
}

enum fb_status probe_round_setup(const struct probe_rank_env *env, const struct probe_schedule *s,
                                 int round, struct probe_round *rd, struct fb_err *err)
{
    list_ends(env, s, round, rd);
    enum fb_status st = FB_OK;
    if (env->o->transport == PROBE_TCP)
        st = setup_tcp(env, rd, err);
    else
        for (int i = 0; i < rd->nends && st == FB_OK; i++)
            st = setup_verbs_end(env, &rd->ends[i], err);
    if (st != FB_OK)
        probe_round_teardown(rd);
    return st;
}

enum fb_status probe_round_measure(const struct probe_rank_env *env, struct probe_round *rd,
                                   uint64_t size, struct probe_measure *out, int *nout,
                                   struct fb_err *err)
{
    const struct probe_opts *o = env->o;
    struct probe_size_spec r;
    probe_size_spec_for(o, size, env->c->stop, &r);
    *nout = 0;
    if (rd->nends == 0)
        return FB_OK;
    struct probe_measure tmp[PROBE_ENDS_MAX];
    if (o->latency) {
        struct probe_end *e = &rd->ends[0];
        enum fb_status st = o->transport == PROBE_TCP
                                ? probe_tcp_lat(&e->flow, &r, e->is_src, &tmp[0], err)
                                : probe_verbs_write_lat(e->vl, &r, e->is_src, &tmp[0], err);
        if (st == FB_OK && e->is_src)
            out[(*nout)++] = tmp[0];
        return st;
    }
    if (o->transport == PROBE_TCP) {
        struct probe_tcp_flow flows[PROBE_ENDS_MAX];
        for (int i = 0; i < rd->nends; i++)
            flows[i] = rd->ends[i].flow;
        if (probe_tcp_bw(env->c, flows, rd->nends, &r, tmp, err) != FB_OK)
            return err->code;
        for (int i = 0; i < rd->nends; i++)
            if (!rd->ends[i].is_src)
                out[(*nout)++] = tmp[i];
        return FB_OK;
    }
    struct probe_verbs_link *links[PROBE_ENDS_MAX];
    int n = 0;
    for (int i = 0; i < rd->nends; i++)
        if (rd->ends[i].is_src)
            links[n++] = rd->ends[i].vl;
    if (n > 0 && probe_verbs_write_bw(links, n, &r, tmp, err) != FB_OK)
        return err->code;
    for (int i = 0; i < n; i++)
        out[(*nout)++] = tmp[i];
    return FB_OK;
}

void probe_round_teardown(struct probe_round *rd)
{
    for (int i = 0; i < rd->nends; i++) {
        struct probe_end *e = &rd->ends[i];
        probe_verbs_link_destroy(e->vl);
        e->vl = NULL;
        probe_tcp_close_flow(&e->flow);
        if (e->listen_fd >= 0)
            close(e->listen_fd);
        e->listen_fd = -1;
    }
    rd->nends = 0;
}
