/* The RDMA transport: one HCA port per rank, RC queue pairs on every link
 * end, RDMA WRITE bandwidth and ping-pong latency (verbs_*.c). */
#include <stdio.h>
#include <string.h>

#include "probe/mem.h"
#include "probe/opts.h"
#include "probe/rounds.h"
#include "probe/transport.h"

/* Inline bytes asked for in latency mode: small pings skip the DMA read. */
#define LAT_INLINE 220

static long verbs_lanes(const struct probe_opts *o) { return o->qps; }

static enum fb_status verbs_check_options(const struct probe_opts *o, struct fb_err *err)
{
    if (o->mtu != 0 && o->mtu != 256 && o->mtu != 512 && o->mtu != 1024 && o->mtu != 2048 &&
        o->mtu != 4096)
        return fb_fail(err, FB_ERR_USAGE, "--mtu %ld: use 256, 512, 1024, 2048 or 4096", o->mtu);
    if (o->cq_mod + o->post_list - 1 > o->tx_depth)
        return fb_fail(err, FB_ERR_USAGE,
                       "-t %ld is too shallow for -Q %ld and -l %ld (the queue would stall); use "
                       "-t %ld or more", o->tx_depth, o->cq_mod, o->post_list,
                       o->cq_mod + o->post_list - 1);
    if (o->sizes[o->nsizes - 1] > (1ULL << 30))
        return fb_fail(err, FB_ERR_USAGE, "RDMA messages are limited to 1G here; lower -s/--max-size");
    return FB_OK;
}

static void verbs_describe_options(const struct probe_opts *o, char *buf, size_t len)
{
    snprintf(buf, len, ", tx depth %ld, cq moderation %ld, post list %ld", o->tx_depth, o->cq_mod,
             o->post_list);
}

static enum fb_status verbs_open(struct probe_rank_env *env, struct probe_endpoint *ep,
                                 struct fb_err *err)
{
    const struct probe_opts *o = env->o;
    const struct fb_world *w = env->c->w;
    struct probe_verbs_cfg vc = {o->ib_dev, (int)o->ib_port, o->gid_index, (int)o->mtu,
                                 (int)o->sl, (int)o->tclass};
    return probe_verbs_open(&vc, w->local_rank, w->local_size, w->host, &env->dev, ep, err);
}

static enum fb_status verbs_register_memory(struct probe_rank_env *env, struct probe_mem *m,
                                            struct fb_err *err)
{
    return probe_mem_register(m, probe_verbs_pd(env->dev), &env->mr, err);
}

static void verbs_close(struct probe_rank_env *env)
{
    if (env->mr != NULL)
        ibv_dereg_mr(env->mr);
    env->mr = NULL;
    probe_verbs_close(env->dev);
    env->dev = NULL;
}

/* Queue pairs for one end, then the records both ends need to reach each
 * other, exchanged over MPI. */
static enum fb_status connect_end(const struct probe_rank_env *env, struct probe_end *e,
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

static enum fb_status verbs_connect_round(const struct probe_rank_env *env,
                                          struct probe_round *rd, struct fb_err *err)
{
    for (int i = 0; i < rd->nends; i++)
        if (connect_end(env, &rd->ends[i], err) != FB_OK)
            return err->code;
    return FB_OK;
}

/* Sources write and time; destinations only lend their memory. */
static enum fb_status verbs_bandwidth(const struct probe_rank_env *env, struct probe_round *rd,
                                      const struct probe_size_spec *spec,
                                      struct probe_measure *out, int *nout, struct fb_err *err)
{
    (void)env;
    struct probe_verbs_link *links[PROBE_ENDS_MAX];
    struct probe_measure tmp[PROBE_ENDS_MAX];
    int n = 0;
    for (int i = 0; i < rd->nends; i++)
        if (rd->ends[i].is_src)
            links[n++] = rd->ends[i].vl;
    if (n > 0 && probe_verbs_write_bw(links, n, spec, tmp, err) != FB_OK)
        return err->code;
    for (int i = 0; i < n; i++)
        out[(*nout)++] = tmp[i];
    return FB_OK;
}

static enum fb_status verbs_latency(const struct probe_rank_env *env, struct probe_end *e,
                                    const struct probe_size_spec *spec, struct probe_measure *out,
                                    struct fb_err *err)
{
    (void)env;
    return probe_verbs_write_lat(e->vl, spec, e->is_src, out, err);
}

static void verbs_disconnect_end(struct probe_end *e)
{
    probe_verbs_link_destroy(e->vl);
    e->vl = NULL;
}

static void verbs_describe_endpoint(const struct probe_endpoint *e, char *port, size_t port_len,
                                    char *address, size_t address_len)
{
    snprintf(port, port_len, "%d %s", e->port, e->port_state);
    snprintf(address, address_len, "%d %s %s %s", e->gid_index, e->gid_type, e->gid,
             e->gid_auto ? "auto" : "-x");
}

const struct probe_transport_ops probe_transport_verbs = {
    .name = "rdma",
    .lane = "QP",
    .lanes = verbs_lanes,
    .default_duration_s = 0,
    .gpu_memory = 1,
    .slot_min = 0,
    .check_options = verbs_check_options,
    .describe_options = verbs_describe_options,
    .open = verbs_open,
    .register_memory = verbs_register_memory,
    .close = verbs_close,
    .connect_round = verbs_connect_round,
    .bandwidth = verbs_bandwidth,
    .latency = verbs_latency,
    .disconnect_end = verbs_disconnect_end,
    .port_column = "port",
    .address_column = "GID (index type address choice)",
    .describe_endpoint = verbs_describe_endpoint,
};
