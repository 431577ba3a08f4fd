#include "probe/outliers.h"

#include <math.h>
#include <stdlib.h>

#include "probe/measure.h"

static int touches(const struct probe_link_score *s, int e) { return s->src == e || s->dst == e; }

/* Median of the finite figures of links that touch none of `skip` (n_skip
 * endpoints); NAN when there are none. `tmp` has room for n. */
static double median_without(const struct probe_link_score *v, int n, const int *skip, int n_skip,
                             double *tmp)
{
    int m = 0;
    for (int i = 0; i < n; i++) {
        int hit = !isfinite(v[i].avg_gbps);
        for (int k = 0; k < n_skip && !hit; k++)
            hit = touches(&v[i], skip[k]);
        if (!hit)
            tmp[m++] = v[i].avg_gbps;
    }
    return probe_median(tmp, m);
}

/* The send (or receive) path of endpoint e against `ref` (used for links
 * without a line rate). */
static struct probe_path judge_path(const struct probe_link_score *v, int n, int e, int sending,
                                    double ref, double frac, double *tmp)
{
    struct probe_path p = {0, 0, NAN, 0};
    for (int i = 0; i < n; i++) {
        if ((sending ? v[i].src : v[i].dst) != e || !isfinite(v[i].avg_gbps))
            continue;
        double r = v[i].line_gbps > 0 ? v[i].line_gbps : ref;
        if (!isfinite(r) || r <= 0)
            continue;
        tmp[p.links++] = v[i].avg_gbps / r;
        p.slow += v[i].avg_gbps < frac * r;
    }
    p.ratio = probe_median(tmp, p.links);
    p.suspect = p.links > 0 && p.slow == p.links;
    return p;
}

static double slow_share(const struct probe_suspect *s)
{
    return s->links > 0 ? (double)s->flagged / s->links : 0;
}

/* A path of one link cannot tell its two ends apart by itself: keep it
 * only when the other end's opposite path is not slow too, or when this
 * end has more of its links slow (its other path is slow as well). */
static void settle_single_links(const struct probe_link_score *v, int n, struct probe_suspect *all,
                                int nendpoints)
{
    int *keep_send = calloc((size_t)nendpoints * 2, sizeof *keep_send);
    if (keep_send == NULL)
        return;
    int *keep_recv = keep_send + nendpoints;
    for (int e = 0; e < nendpoints; e++) {
        keep_send[e] = all[e].send.suspect;
        keep_recv[e] = all[e].recv.suspect;
    }
    for (int i = 0; i < n; i++) {
        int s = v[i].src, d = v[i].dst;
        if (s < 0 || s >= nendpoints || d < 0 || d >= nendpoints || s == d)
            continue;
        if (!all[s].send.suspect || !all[d].recv.suspect)
            continue;
        double ss = slow_share(&all[s]), sd = slow_share(&all[d]);
        if (all[s].send.links == 1 && !(ss > sd))
            keep_send[s] = 0;
        if (all[d].recv.links == 1 && !(sd > ss))
            keep_recv[d] = 0;
    }
    for (int e = 0; e < nendpoints; e++) {
        all[e].send.suspect = keep_send[e];
        all[e].recv.suspect = keep_recv[e];
    }
    free(keep_send);
}

static double worst_ratio(const struct probe_suspect *s)
{
    double a = s->send.suspect ? s->send.ratio : INFINITY;
    double b = s->recv.suspect ? s->recv.ratio : INFINITY;
    return a < b ? a : b;
}

static int by_severity(const void *a, const void *b)
{
    const struct probe_suspect *x = a, *y = b;
    double rx = worst_ratio(x), ry = worst_ratio(y);
    if (rx != ry)
        return rx < ry ? -1 : 1;
    return x->endpoint - y->endpoint;
}

int probe_suspects(const struct probe_link_score *v, int n, double frac, int nendpoints,
                   struct probe_suspect *out)
{
    struct probe_suspect *all = calloc((size_t)(nendpoints > 0 ? nendpoints : 1), sizeof *all);
    double *tmp = calloc((size_t)(n > 0 ? n : 1), sizeof *tmp);
    if (all == NULL || tmp == NULL) {
        free(all);
        free(tmp);
        return 0;
    }
    double everyone = median_without(v, n, NULL, 0, tmp);
    for (int e = 0; e < nendpoints; e++) {
        struct probe_suspect *s = &all[e];
        double others = median_without(v, n, &e, 1, tmp);
        s->endpoint = e;
        s->reference_gbps = isfinite(others) ? others : everyone;
        s->send = judge_path(v, n, e, 1, s->reference_gbps, frac, tmp);
        s->recv = judge_path(v, n, e, 0, s->reference_gbps, frac, tmp);
        s->flagged = s->send.slow + s->recv.slow;
        for (int i = 0; i < n; i++)
            s->links += touches(&v[i], e);
        s->by_line_rate = 1;
        for (int i = 0; i < n; i++)
            if (touches(&v[i], e) && v[i].line_gbps <= 0)
                s->by_line_rate = 0;
        if (s->by_line_rate)
            s->reference_gbps = 0;
    }
    settle_single_links(v, n, all, nendpoints);
    int k = 0;
    for (int e = 0; e < nendpoints; e++)
        if (all[e].send.suspect || all[e].recv.suspect)
            out[k++] = all[e];
    qsort(out, (size_t)k, sizeof *out, by_severity);
    free(all);
    free(tmp);
    return k;
}

int probe_flag_links(const struct probe_link_score *v, int n, double frac,
                     const struct probe_suspect *suspects, int nsuspects,
                     struct probe_flag *flags)
{
    double *tmp = calloc((size_t)(n > 0 ? n : 1), sizeof *tmp);
    int *skip = calloc((size_t)(nsuspects > 0 ? nsuspects : 1), sizeof *skip);
    if (tmp == NULL || skip == NULL) {
        free(tmp);
        free(skip);
        return 0;
    }
    for (int k = 0; k < nsuspects; k++)
        skip[k] = suspects[k].endpoint;
    double median = median_without(v, n, skip, nsuspects, tmp);
    if (!isfinite(median))
        median = median_without(v, n, NULL, 0, tmp);
    free(tmp);
    free(skip);

    int nf = 0;
    for (int i = 0; i < n; i++) {
        int by_line = v[i].line_gbps > 0;
        double ref = by_line ? v[i].line_gbps : median;
        if (!isfinite(ref) || !isfinite(v[i].avg_gbps))
            continue;
        if (v[i].avg_gbps < frac * ref)
            flags[nf++] = (struct probe_flag){i, ref, by_line, frac * ref};
    }
    return nf;
}
