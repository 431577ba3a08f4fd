#include "probe/outliers.h"

#include <math.h>
#include <stdlib.h>

#include "probe/measure.h"

int probe_flag_links(const struct probe_link_score *v, int n, double frac,
                     struct probe_flag *flags)
{
    double *avg = calloc((size_t)(n > 0 ? n : 1), sizeof *avg);
    if (avg == NULL)
        return 0;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i].avg_gbps))
            avg[m++] = v[i].avg_gbps;
    double median = probe_median(avg, m);
    free(avg);

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

static int by_flagged_desc(const void *a, const void *b)
{
    const struct probe_suspect *x = a, *y = b;
    if (x->flagged != y->flagged)
        return y->flagged - x->flagged;
    return x->endpoint - y->endpoint;
}

int probe_suspects(const struct probe_link_score *v, int n, const struct probe_flag *flags,
                   int nflags, int nendpoints, struct probe_suspect *out)
{
    struct probe_suspect *all = calloc((size_t)(nendpoints > 0 ? nendpoints : 1), sizeof *all);
    if (all == NULL)
        return 0;
    for (int e = 0; e < nendpoints; e++)
        all[e].endpoint = e;
    for (int i = 0; i < n; i++) {
        if (v[i].src >= 0 && v[i].src < nendpoints)
            all[v[i].src].links++;
        if (v[i].dst >= 0 && v[i].dst < nendpoints && v[i].dst != v[i].src)
            all[v[i].dst].links++;
    }
    for (int f = 0; f < nflags; f++) {
        const struct probe_link_score *s = &v[flags[f].index];
        if (s->src >= 0 && s->src < nendpoints)
            all[s->src].flagged++;
        if (s->dst >= 0 && s->dst < nendpoints && s->dst != s->src)
            all[s->dst].flagged++;
    }
    int k = 0;
    for (int e = 0; e < nendpoints; e++)
        if (all[e].flagged >= 2 && 2 * all[e].flagged >= all[e].links)
            out[k++] = all[e];
    qsort(out, (size_t)k, sizeof *out, by_flagged_desc);
    free(all);
    return k;
}
