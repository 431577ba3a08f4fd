#include "probe/schedule.h"

#include <stdlib.h>
#include <string.h>

static const char *const pattern_names[] = {"pairs", "ring", "all-pairs"};

const char *probe_pattern_name(enum probe_pattern p)
{
    return (unsigned)p < 3 ? pattern_names[p] : "unknown";
}

int probe_pattern_parse(const char *name, enum probe_pattern *out)
{
    for (int i = 0; i < 3; i++) {
        if (strcmp(name, pattern_names[i]) == 0) {
            *out = (enum probe_pattern)i;
            return 0;
        }
    }
    return -1;
}

/* Growable link list; rounds are appended in order. */
struct builder {
    struct probe_schedule *s;
    int cap;
};

static int add_link(struct builder *b, int round, int src, int dst)
{
    struct probe_schedule *s = b->s;
    if (s->nlinks == b->cap) {
        int cap = b->cap ? b->cap * 2 : 16;
        struct probe_link *grown = realloc(s->links, (size_t)cap * sizeof *grown);
        if (grown == NULL)
            return -1;
        s->links = grown;
        b->cap = cap;
    }
    s->links[s->nlinks] = (struct probe_link){s->nlinks, round, src, dst};
    s->nlinks++;
    return 0;
}

static int add_pair(struct builder *b, int round, int src, int dst, int bidirectional)
{
    if (add_link(b, round, src, dst) != 0)
        return -1;
    return bidirectional ? add_link(b, round, dst, src) : 0;
}

static int build_pairs(struct builder *b, int n, int bidirectional)
{
    for (int i = 0; i < n / 2; i++)
        if (add_pair(b, 0, i, i + n / 2, bidirectional) != 0)
            return -1;
    return 0;
}

static int build_ring(struct builder *b, int n, int bidirectional)
{
    for (int i = 0; i < n; i++)
        if (add_link(b, 0, i, (i + 1) % n) != 0)
            return -1;
    /* With two ranks the forward ring already holds both directions. */
    if (bidirectional && n > 2)
        for (int i = 0; i < n; i++)
            if (add_link(b, 0, i, (i + n - 1) % n) != 0)
                return -1;
    return 0;
}

/* Which way a node pair's links run: the lower node writes to the higher
 * when their distance is odd, the higher to the lower when it is even. Every
 * node of three or more then sends on some links and receives on others
 * (odd counts: exactly half each way), so one direction per pair still
 * measures every node's send and receive path in the same rounds. */
static int lower_sends(int lo, int hi) { return (hi - lo) % 2 == 1; }

/* Circle method: node m-1 stays put while the others rotate; each round
 * pairs m-1 with r and (r+k) with (r-k) for k = 1 .. m/2-1 (mod m-1). An odd
 * node count gets a dummy node m-1 whose partner sits the round out. */
static int build_all_pairs(struct builder *b, int nnodes, int rails, const int *rank_at,
                           int bidirectional)
{
    int m = nnodes + (nnodes & 1);
    for (int r = 0; r < m - 1; r++) {
        for (int k = 0; k < m / 2; k++) {
            int a = k == 0 ? m - 1 : (r + k) % (m - 1);
            int c = k == 0 ? r : (r - k + m - 1) % (m - 1);
            if (a >= nnodes || c >= nnodes)
                continue;
            int lo = a < c ? a : c, hi = a < c ? c : a;
            int from = lower_sends(lo, hi) ? lo : hi, to = from == lo ? hi : lo;
            for (int l = 0; l < rails; l++)
                if (add_pair(b, r, rank_at[from * rails + l], rank_at[to * rails + l], bidirectional) != 0)
                    return -1;
        }
    }
    return 0;
}

/* rank_at[node * rails + local] = rank, once every node has the same count. */
static enum fb_status rails_of(const struct probe_layout *lay, int **rank_at, int *rails,
                               struct fb_err *err)
{
    int *count = calloc((size_t)lay->nnodes, sizeof *count);
    if (count == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    for (int r = 0; r < lay->nranks; r++)
        count[lay->node_of[r]]++;
    for (int n = 1; n < lay->nnodes; n++) {
        if (count[n] != count[0]) {
            fb_fail(err, FB_ERR_USAGE,
                    "all-pairs needs the same number of ranks on every node (one per HCA or "
                    "interface), but node 0 has %d and node %d has %d; launch with "
                    "--npernode or -N",
                    count[0], n, count[n]);
            free(count);
            return err->code;
        }
    }
    *rails = count[0];
    free(count);
    *rank_at = malloc((size_t)lay->nranks * sizeof **rank_at);
    if (*rank_at == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    for (int r = 0; r < lay->nranks; r++)
        (*rank_at)[lay->node_of[r] * *rails + lay->local_of[r]] = r;
    return FB_OK;
}

static void index_rounds(struct probe_schedule *s)
{
    int nrounds = 0;
    for (int i = 0; i < s->nlinks; i++)
        if (s->links[i].round + 1 > nrounds)
            nrounds = s->links[i].round + 1;
    s->nrounds = nrounds;
    for (int r = 0, i = 0; r <= nrounds; r++) {
        while (i < s->nlinks && s->links[i].round < r)
            i++;
        s->first[r] = i;
    }
}

enum fb_status probe_schedule_build(enum probe_pattern p, int bidirectional,
                                    const struct probe_layout *lay,
                                    struct probe_schedule *s, struct fb_err *err)
{
    memset(s, 0, sizeof *s);
    int n = lay->nranks;
    if (n < 2)
        return fb_fail(err, FB_ERR_USAGE,
                       "%s needs at least 2 ranks but this job has %d; launch with mpirun -np 2 or more",
                       probe_pattern_name(p), n);
    if (p == PROBE_PATTERN_PAIRS && n % 2 != 0)
        return fb_fail(err, FB_ERR_USAGE,
                       "pairs needs an even number of ranks (rank i pairs with i+N/2) but this "
                       "job has %d; launch an even count or use --pattern ring", n);
    if (p == PROBE_PATTERN_ALL_PAIRS && lay->nnodes < 2)
        return fb_fail(err, FB_ERR_USAGE,
                       "all-pairs pairs nodes, but all %d ranks run on one node; launch across "
                       "2 or more hosts or use --pattern pairs", n);

    struct builder b = {s, 0};
    int rc = 0, rails = 0, *rank_at = NULL;
    switch (p) {
    case PROBE_PATTERN_PAIRS: rc = build_pairs(&b, n, bidirectional); break;
    case PROBE_PATTERN_RING: rc = build_ring(&b, n, bidirectional); break;
    case PROBE_PATTERN_ALL_PAIRS:
        if (rails_of(lay, &rank_at, &rails, err) != FB_OK)
            return err->code;
        rc = build_all_pairs(&b, lay->nnodes, rails, rank_at, bidirectional);
        free(rank_at);
        break;
    }
    if (rc == 0)
        s->first = malloc(((size_t)(s->nlinks ? s->links[s->nlinks - 1].round : 0) + 2) * sizeof *s->first);
    if (rc != 0 || s->first == NULL) {
        probe_schedule_free(s);
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory building the %s schedule",
                       probe_pattern_name(p));
    }
    index_rounds(s);
    return FB_OK;
}

void probe_schedule_free(struct probe_schedule *s)
{
    free(s->links);
    free(s->first);
    memset(s, 0, sizeof *s);
}

int probe_schedule_max_ends(const struct probe_schedule *s, int nranks)
{
    int *ends = calloc((size_t)nranks, sizeof *ends);
    int best = 0;
    if (ends == NULL)
        return 2 * s->nlinks; /* safe upper bound */
    for (int r = 0; r < s->nrounds; r++) {
        memset(ends, 0, (size_t)nranks * sizeof *ends);
        for (int i = s->first[r]; i < s->first[r + 1]; i++) {
            ends[s->links[i].src]++;
            ends[s->links[i].dst]++;
        }
        for (int k = 0; k < nranks; k++)
            if (ends[k] > best)
                best = ends[k];
    }
    free(ends);
    return best;
}

void probe_schedule_paths(const struct probe_schedule *s, int nranks, int *sends, int *recvs)
{
    memset(sends, 0, (size_t)nranks * sizeof *sends);
    memset(recvs, 0, (size_t)nranks * sizeof *recvs);
    for (int i = 0; i < s->nlinks; i++) {
        const struct probe_link *l = &s->links[i];
        if (l->src >= 0 && l->src < nranks && l->dst >= 0 && l->dst < nranks) {
            sends[l->src]++;
            recvs[l->dst]++;
        }
    }
}

int probe_pattern_max_ends(enum probe_pattern p, int bidirectional)
{
    return (p == PROBE_PATTERN_RING ? 2 : 1) * (bidirectional ? 2 : 1);
}
