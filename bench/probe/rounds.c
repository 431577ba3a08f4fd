#include "probe/rounds.h"

#include <string.h>

uint64_t probe_slot_len(const struct probe_opts *o)
{
    uint64_t largest = o->sizes[o->nsizes - 1];
    if (o->latency)
        return 2 * largest; /* receive area, then send area */
    uint64_t need = (uint64_t)o->tp->lanes(o) * largest;
    return need < o->tp->slot_min ? o->tp->slot_min : need;
}

static void list_ends(const struct probe_rank_env *env, const struct probe_schedule *s, int round,
                      struct probe_round *rd)
{
    int me = env->c->w->rank;
    memset(rd, 0, sizeof *rd);
    rd->index = round;
    rd->tp = env->o->tp;
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

enum fb_status probe_round_setup(const struct probe_rank_env *env, const struct probe_schedule *s,
                                 int round, struct probe_round *rd, struct fb_err *err)
{
    list_ends(env, s, round, rd);
    enum fb_status st = rd->tp->connect_round(env, rd, err);
    if (st != FB_OK)
        probe_round_teardown(rd);
    return st;
}

enum fb_status probe_round_measure(const struct probe_rank_env *env, struct probe_round *rd,
                                   uint64_t size, struct probe_measure *out, int *nout,
                                   struct fb_err *err)
{
    struct probe_size_spec spec;
    probe_size_spec_for(env->o, size, env->c->stop, &spec);
    spec.progress = probe_alive_hook;
    spec.progress_arg = (void *)env->c;
    *nout = 0;
    if (rd->nends == 0)
        return FB_OK;
    if (!env->o->latency)
        return rd->tp->bandwidth(env, rd, &spec, out, nout, err);
    /* Latency pairs ranks: one end each, timed by the initiator. */
    struct probe_end *e = &rd->ends[0];
    struct probe_measure m;
    enum fb_status st = rd->tp->latency(env, e, &spec, &m, err);
    if (st == FB_OK && e->is_src)
        out[(*nout)++] = m;
    return st;
}

void probe_round_teardown(struct probe_round *rd)
{
    for (int i = 0; i < rd->nends; i++)
        rd->tp->disconnect_end(&rd->ends[i]);
    rd->nends = 0;
}
