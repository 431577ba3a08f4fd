/* The libfabric transport: one provider domain per rank, -q reliable
 * datagram endpoints on every link end, RMA write (or read) bandwidth and
 * ping-pong latency (fabric_ofi.c, rma_ofi.c). Endpoint names and memory
 * keys travel over MPI. The end that only lends its memory cannot simply
 * wait as a verbs target does: providers with manual progress (tcp, efa
 * emulating RMA) need it to poll, so it serves until the active end says,
 * over MPI, that it is through. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/mem.h"
#include "probe/ofi_env.h"
#include "probe/ofi_internal.h"
#include "probe/opts.h"
#include "probe/rounds.h"
#include "probe/transport.h"

static long ofi_lanes(const struct probe_opts *o) { return o->qps; }

static enum fb_status ofi_check_options(const struct probe_opts *o, struct fb_err *err)
{
    return probe_ofi_provider_agrees(o->provider, getenv("FI_PROVIDER"), err);
}

static void ofi_describe_options(const struct probe_opts *o, char *buf, size_t len)
{
    snprintf(buf, len, ", RMA %s, window %ld, completions by %s", o->op_read ? "read" : "write",
             o->tx_depth, o->counter_completion ? "counter" : "CQ");
}

static enum fb_status ofi_open(struct probe_rank_env *env, struct probe_endpoint *ep,
                               struct fb_err *err)
{
    const struct probe_opts *o = env->o;
    const struct fb_world *w = env->c->w;
    struct probe_ofi_cfg cfg = {o->provider, o->ib_dev, o->op_read, o->counter_completion,
                                o->use_cuda, w->nodes > 1, o->tx_depth, o->sizes[o->nsizes - 1],
                                getenv("FI_PROVIDER")};
    if (probe_ofi_open(&cfg, w->local_rank, w->local_size, w->host, &env->ofi, ep, err) != FB_OK)
        return err->code;
    if (o->use_cuda)
        snprintf(ep->hmem, sizeof ep->hmem, "FI_HMEM_CUDA");
    return FB_OK;
}

/* Regions are registered per endpoint when a round connects (FI_MR_ENDPOINT
 * binds them to one); here the domain learns what memory it will get. */
static enum fb_status ofi_register_memory(struct probe_rank_env *env, struct probe_mem *m,
                                          struct fb_err *err)
{
    (void)err;
    env->ofi->gpu = m->gpu;
    env->ofi->hmem_iface = m->gpu >= 0 ? FI_HMEM_CUDA : FI_HMEM_SYSTEM;
    snprintf(m->reg_path, sizeof m->reg_path, "%s", m->gpu >= 0 ? "fi_hmem_cuda" : "host");
    return FB_OK;
}

static void ofi_close(struct probe_rank_env *env)
{
    probe_ofi_close(env->ofi);
    env->ofi = NULL;
}

/* The end that posts the operations: the source writes, the destination
 * reads (the bytes still flow from source to destination). */
static int is_active(const struct probe_opts *o, const struct probe_end *e)
{
    return o->op_read ? !e->is_src : e->is_src;
}

/* Both directions at once: a passive end borrows the endpoints of an
 * active end towards the same peer, so each pair of ranks shares one
 * connection both ways (as fi_rma_bw and ib_write_bw -b do) and the
 * active end's polling drives the peer's writes too. */
static struct probe_ofi_link *lender_for(const struct probe_rank_env *env, struct probe_round *rd,
                                         const struct probe_end *e, int *lent)
{
    if (!env->o->bidirectional || env->o->latency || is_active(env->o, e))
        return NULL;
    for (int i = 0; i < rd->nends; i++) {
        const struct probe_end *a = &rd->ends[i];
        if (!lent[i] && a->peer == e->peer && is_active(env->o, a) && a->ol != NULL) {
            lent[i] = 1;
            return a->ol;
        }
    }
    return NULL;
}

/* This end's endpoints (or borrowed ones) and regions; its record for the
 * peer goes into e->record, its length into *len. */
static enum fb_status create_end(const struct probe_rank_env *env, struct probe_end *e,
                                 struct probe_ofi_link *share, int *len, struct fb_err *err)
{
    const struct probe_opts *o = env->o;
    if (env->host_memory)
        memset(e->slot, 0, env->slot_len); /* no stale byte may pass for a latency reply */
    struct probe_ofiinfo mine;
    if (probe_ofi_link_create(env->ofi, e->link->id, env->c->w->rank, o->latency ? 1 : (int)o->qps,
                              e->slot, env->slot_len, e->peer_name, share, &e->ol, &mine,
                              err) != FB_OK)
        return err->code;
    *len = (int)probe_ofiinfo_encode(&mine, e->record);
    return FB_OK;
}

static enum fb_status exchange_end(const struct probe_rank_env *env, struct probe_end *e, int len,
                                   struct fb_err *err)
{
    static uint8_t in[PROBE_OFIINFO_WIRE_MAX]; /* one end at a time; too large for the stack */
    struct probe_ofiinfo theirs;
    int got = 0;
    char what[96];
    snprintf(what, sizeof what, "exchanging libfabric endpoint records for link %d", e->link->id);
    if (probe_exchange(env->c, e->peer, PROBE_TAG_OFIINFO, e->record, len, in, sizeof in, &got,
                       env->o->timeout, what, err) != FB_OK ||
        probe_ofiinfo_decode(in, (size_t)got, &theirs, err) != FB_OK)
        return err->code;
    if ((int)theirs.link != e->link->id || theirs.rank != e->peer)
        return fb_fail(err, FB_ERR_LAUNCH, "%s sent the record of link %u where link %d was due; "
                       "are all ranks running the same command?", e->peer_name, theirs.link,
                       e->link->id);
    return probe_ofi_link_connect(e->ol, &theirs, env->me, err);
}

/* Active ends first, so passive ones can borrow their endpoints; then
 * the records, in the round's order on both sides. */
static enum fb_status ofi_connect_round(const struct probe_rank_env *env, struct probe_round *rd,
                                        struct fb_err *err)
{
    int len[PROBE_ENDS_MAX] = {0}, lent[PROBE_ENDS_MAX] = {0};
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < rd->nends; i++) {
            struct probe_end *e = &rd->ends[i];
            if (is_active(env->o, e) != (pass == 0))
                continue;
            if (create_end(env, e, lender_for(env, rd, e, lent), &len[i], err) != FB_OK)
                return err->code;
        }
    for (int i = 0; i < rd->nends; i++)
        if (exchange_end(env, &rd->ends[i], len[i], err) != FB_OK)
            return err->code;
    return FB_OK;
}

/* The passive ends of a step and the word each awaits from its peer; and
 * the words this rank's active ends send, in flight while the passive ends
 * are served (a word may need the peer to make progress, and the peer's
 * writes need ours). */
struct serving {
    struct probe_end *ends[PROBE_ENDS_MAX];
    MPI_Request req[PROBE_ENDS_MAX];
    int32_t status[PROBE_ENDS_MAX];
    int n;
    MPI_Request sent[PROBE_ENDS_MAX];
    int32_t word;
    int nsent;
};

static void await_words(const struct probe_rank_env *env, struct serving *sv)
{
    for (int i = 0; i < sv->n; i++)
        MPI_Irecv(&sv->status[i], 1, MPI_INT32_T, sv->ends[i]->peer, PROBE_TAG_OFI_DONE,
                  env->c->comm, &sv->req[i]);
}

static enum fb_status progress_all(void *arg, struct fb_err *err)
{
    struct serving *sv = arg;
    for (int i = 0; i < sv->n; i++)
        if (probe_ofi_progress(sv->ends[i]->ol, err) != FB_OK)
            return err->code;
    return FB_OK;
}

/* While this rank's active ends run, they drive the endpoints passive
 * ends borrow (reading those CQs here would take the active ends'
 * completions): only the passive ends with endpoints of their own. */
static enum fb_status progress_owners(void *arg, struct fb_err *err)
{
    struct serving *sv = arg;
    for (int i = 0; i < sv->n; i++)
        if (!probe_ofi_link_borrows(sv->ends[i]->ol) && probe_ofi_progress(sv->ends[i]->ol, err) != FB_OK)
            return err->code;
    return FB_OK;
}

/* Drives the passive ends until every peer has said it is through, or
 * until the longest its measurement may take has passed. */
static enum fb_status serve(const struct probe_rank_env *env, struct serving *sv,
                            const struct probe_size_spec *spec, struct fb_err *err)
{
    double limit = probe_size_spec_bound_s(spec, (int)env->o->qps) + env->o->timeout;
    double since = MPI_Wtime();
    for (unsigned long spin = 0;; spin++) {
        if (progress_all(sv, err) != FB_OK)
            return err->code;
        int pending = -1, sending = 0;
        for (int i = 0; i < sv->n; i++) {
            int flag = 1;
            if (sv->req[i] != MPI_REQUEST_NULL)
                MPI_Test(&sv->req[i], &flag, MPI_STATUS_IGNORE);
            if (!flag)
                pending = i;
        }
        for (int i = 0; i < sv->nsent; i++) {
            int flag = 1;
            if (sv->sent[i] != MPI_REQUEST_NULL)
                MPI_Test(&sv->sent[i], &flag, MPI_STATUS_IGNORE);
            sending |= !flag;
        }
        if (pending < 0 && !sending)
            return FB_OK;
        /* A passive end sees no completion of its own to tell work from
         * idling: it polls, then lets any rank that wants the core run. */
        sched_yield();
        if ((spin & 255) == 0 && probe_alive_heard(env->c))
            since = MPI_Wtime(); /* the job moves: a slow peer is still at it */
        if ((spin & 255) == 0 && MPI_Wtime() - since > limit && pending >= 0)
            return fb_fail(err, FB_ERR_TIMEOUT,
                           "%s did not finish its RMA into %s within %.0f s; the peer or the path "
                           "stopped answering (check that host and the link), or raise --timeout",
                           sv->ends[pending]->peer_name, env->me, limit);
        if ((spin & 255) == 0 && MPI_Wtime() - since > limit)
            return fb_fail(err, FB_ERR_TIMEOUT, "a peer of %s did not take its word that an RMA "
                           "run is through within %.0f s; check the hosts of its links",
                           env->me, limit);
        if ((spin & 1023) == 0 && probe_check_stop(env->c, err) != FB_OK)
            return err->code;
    }
}

/* Tells each active end's peer that this rank is through with the size
 * (with how it went, so a failure ends the peer's wait at once). The words
 * stay in flight in `sv` while serve() drives the passive ends: waiting
 * for them without polling the provider stalled a bidirectional run (the
 * peer, still writing into this rank, needed its progress). */
static enum fb_status say_done(const struct probe_rank_env *env, struct serving *sv,
                               struct probe_end **ends, int n, enum fb_status st)
{
    sv->word = (int32_t)st;
    sv->nsent = n;
    for (int i = 0; i < n; i++) {
        MPI_Isend(&sv->word, 1, MPI_INT32_T, ends[i]->peer, PROBE_TAG_OFI_DONE, env->c->comm,
                  &sv->sent[i]);
        if (st != FB_OK) /* the job is ending; do not wait on a broken path */
            MPI_Request_free(&sv->sent[i]);
    }
    return st;
}

static enum fb_status ofi_bandwidth(const struct probe_rank_env *env, struct probe_round *rd,
                                    const struct probe_size_spec *spec, struct probe_measure *out,
                                    int *nout, struct fb_err *err)
{
    struct probe_end *active[PROBE_ENDS_MAX];
    struct probe_ofi_link *links[PROBE_ENDS_MAX];
    struct probe_measure tmp[PROBE_ENDS_MAX];
    struct serving sv = {.n = 0};
    int na = 0;
    for (int i = 0; i < rd->nends; i++) {
        struct probe_end *e = &rd->ends[i];
        if (is_active(env->o, e)) {
            active[na] = e;
            links[na++] = e->ol;
        } else {
            sv.ends[sv.n++] = e;
        }
    }
    await_words(env, &sv);
    struct probe_ofi_idle idle = {progress_owners, &sv};
    enum fb_status st = na > 0 ? probe_ofi_bw(links, na, spec, &idle, tmp, err) : FB_OK;
    if (say_done(env, &sv, active, na, st) != FB_OK)
        return err->code;
    if (serve(env, &sv, spec, err) != FB_OK)
        return err->code;
    for (int i = 0; i < na; i++)
        out[(*nout)++] = tmp[i];
    return FB_OK;
}

/* Write latency is a ping-pong of both ends; read latency is the
 * initiator's alone, its peer serving until told it is through. */
static enum fb_status ofi_latency(const struct probe_rank_env *env, struct probe_end *e,
                                  const struct probe_size_spec *spec, struct probe_measure *out,
                                  struct fb_err *err)
{
    if (!env->o->op_read)
        return probe_ofi_write_lat(e->ol, spec, e->is_src, out, err);
    struct serving sv = {.n = 0};
    if (e->is_src) {
        enum fb_status st = probe_ofi_read_lat(e->ol, spec, out, err);
        if (say_done(env, &sv, &e, 1, st) != FB_OK)
            return err->code;
        return serve(env, &sv, spec, err);
    }
    memset(out, 0, sizeof *out);
    sv.ends[0] = e;
    sv.n = 1;
    await_words(env, &sv);
    return serve(env, &sv, spec, err);
}

static void ofi_disconnect_end(struct probe_end *e)
{
    probe_ofi_link_destroy(e->ol);
    e->ol = NULL;
}

static void ofi_describe_endpoint(const struct probe_endpoint *e, char *port, size_t port_len,
                                  char *address, size_t address_len)
{
    snprintf(port, port_len, "%s %s", e->provider, e->provider_version);
    snprintf(address, address_len, "%s%s%s", e->fabric, e->address[0] ? " " : "", e->address);
}

const struct probe_transport_ops probe_transport_ofi = {
    .name = "ofi",
    .lane = "endpoint",
    .lanes = ofi_lanes,
    .default_duration_s = 0,
    .gpu_memory = 1,
    .slot_min = 0,
    .check_options = ofi_check_options,
    .describe_options = ofi_describe_options,
    .open = ofi_open,
    .register_memory = ofi_register_memory,
    .close = ofi_close,
    .connect_round = ofi_connect_round,
    .bandwidth = ofi_bandwidth,
    .latency = ofi_latency,
    .disconnect_end = ofi_disconnect_end,
    .port_column = "provider",
    .address_column = "fabric address",
    .describe_endpoint = ofi_describe_endpoint,
};
