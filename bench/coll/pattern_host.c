#include "coll/pattern_host.h"

#include <stdlib.h>
#include <string.h>

/* Reduction inputs repeat every 4096 elements (sum), 64 (max, min), 4
 * (avg) or 3 x nranks (prod); a table holds whole periods, at least this
 * many elements, so that copies from it are long. */
#define INPUT_MIN 4096

void fb_host_tables_init(struct fb_host_tables *ht)
{
    memset(ht, 0, sizeof *ht);
    ht->type = ht->in_type = ht->red_type = ht->sh_type = -1;
}

void fb_host_tables_free(struct fb_host_tables *ht)
{
    free(ht->move);
    free(ht->poison);
    free(ht->input);
    free(ht->reduce);
    free(ht->reduce_bytes);
    free(ht->share_start);
    free(ht->share_from);
    fb_host_tables_init(ht);
}

static int reduces(const struct fb_pattern *p)
{
    return p->coll == FB_ALL_REDUCE || p->coll == FB_REDUCE || p->coll == FB_REDUCE_SCATTER;
}

static size_t input_base_period(const struct fb_pattern *p)
{
    switch (p->op) {
    case FB_PROD: return 3 * (size_t)p->nranks;
    case FB_MAX:
    case FB_MIN: return 64;
    case FB_AVG: return 4;
    default: return 4096;
    }
}

/* The tables of the type: every stretch's row and the poison. */
static int prepare_type(struct fb_host_tables *ht, const struct fb_pattern *p)
{
    if (ht->type == p->dtype)
        return 1;
    int esz = fb_pat_size(p->dtype);
    unsigned char *move = realloc(ht->move, 64 * 64 * (size_t)esz), *poison = NULL;
    if (move != NULL)
        ht->move = move;
    poison = realloc(ht->poison, 64 * (size_t)esz);
    if (poison != NULL)
        ht->poison = poison;
    if (move == NULL || poison == NULL)
        return 0;
    for (unsigned row = 0; row < 64; row++)
        for (unsigned col = 0; col < 64; col++)
            fb_pat_store(p->dtype, ht->move, row * 64 + col, fb_pat_move_cell(row, col));
    for (int i = 0; i < 64; i++)
        fb_pat_store(p->dtype, ht->poison, (uint64_t)i, fb_pat_poison(p->dtype));
    ht->type = p->dtype;
    ht->esz = esz;
    return 1;
}

static int prepare_input(struct fb_host_tables *ht, const struct fb_pattern *p)
{
    if (ht->in_type == p->dtype && ht->in_op == p->op && ht->in_ranks == p->nranks && ht->in_rank == p->rank)
        return 1;
    size_t base = input_base_period(p);
    size_t period = base * ((INPUT_MIN + base - 1) / base);
    unsigned char *in = realloc(ht->input, period * (size_t)fb_pat_size(p->dtype));
    if (in == NULL)
        return 0;
    ht->input = in;
    for (size_t i = 0; i < period; i++)
        fb_pat_store(p->dtype, in, i, fb_pat_input(p, i));
    ht->in_period = period;
    ht->in_type = p->dtype;
    ht->in_op = p->op;
    ht->in_ranks = p->nranks;
    ht->in_rank = p->rank;
    return 1;
}

static int prepare_reduce(struct fb_host_tables *ht, const struct fb_pattern *p)
{
    if (ht->red_type == p->dtype && ht->red_op == p->op && ht->red_ranks == p->nranks)
        return 1;
    if (ht->reduce == NULL && (ht->reduce = malloc(FB_EXPECT_PERIOD * sizeof *ht->reduce)) == NULL)
        return 0;
    unsigned char *bytes = realloc(ht->reduce_bytes, FB_EXPECT_PERIOD * (size_t)fb_pat_size(p->dtype));
    if (bytes == NULL)
        return 0;
    ht->reduce_bytes = bytes;
    for (size_t i = 0; i < FB_EXPECT_PERIOD; i++) {
        ht->reduce[i] = fb_pat_reduce_expected(p->dtype, p->op, p->sum_cap, p->nranks, i);
        fb_pat_store(p->dtype, bytes, i, ht->reduce[i]);
    }
    ht->red_type = p->dtype;
    ht->red_op = p->op;
    ht->red_ranks = p->nranks;
    ht->key++;
    return 1;
}

/* Where each sender's share starts in my receive buffer and in its send
 * buffer: the shares of the ranks before me come first in both. */
static int prepare_shares(struct fb_host_tables *ht, const struct fb_pattern *p)
{
    if (ht->sh_type == p->dtype && ht->sh_ranks == p->nranks && ht->sh_rank == p->rank && ht->sh_param == p->param)
        return 1;
    size_t n = (size_t)p->nranks;
    if (ht->share_cap < n + 1) {
        free(ht->share_start);
        free(ht->share_from);
        ht->share_start = malloc((n + 1) * sizeof *ht->share_start);
        ht->share_from = malloc((n + 1) * sizeof *ht->share_from);
        ht->share_cap = ht->share_start && ht->share_from ? n + 1 : 0;
        if (ht->share_cap == 0)
            return 0;
    }
    size_t esz = (size_t)fb_pat_size(p->dtype);
    uint64_t at = 0;
    for (int from = 0; from < p->nranks; from++) {
        ht->share_start[from] = at;
        ht->share_from[from] = fb_alltoallv_send_offset(p->param, esz, p->nranks, from, p->rank);
        at += fb_alltoallv_count(p->param, esz, p->nranks, from, p->rank);
    }
    ht->share_start[n] = at;
    ht->share_from[n] = 0;
    ht->sh_type = p->dtype;
    ht->sh_ranks = p->nranks;
    ht->sh_rank = p->rank;
    ht->sh_param = p->param;
    ht->key++;
    return 1;
}

enum fb_status fb_host_tables_prepare(struct fb_host_tables *ht, const struct fb_pattern *p, struct fb_err *err)
{
    int ok = prepare_type(ht, p);
    if (ok && reduces(p))
        ok = prepare_input(ht, p) && prepare_reduce(ht, p);
    if (ok && p->coll == FB_ALLTOALLV)
        ok = prepare_shares(ht, p);
    if (!ok)
        return fb_fail(err, FB_ERR_MEMORY, "cannot allocate the validation tables");
    return FB_OK;
}

struct fb_pat_tables fb_host_tables_view(const struct fb_host_tables *ht, const struct fb_pattern *p)
{
    struct fb_pat_tables t = {NULL, NULL, NULL};
    if (reduces(p))
        t.reduce = ht->reduce;
    if (p->coll == FB_ALLTOALLV)
        t.share_start = ht->share_start, t.share_from = ht->share_from;
    return t;
}

/* k elements; a whole stretch with its size known to the compiler, which
 * then copies it in a few vector moves instead of calling memcpy. */
static inline void copy_elems(unsigned char *d, const unsigned char *s, uint64_t k, int esz)
{
    if (k == 64) {
        switch (esz) {
        case 1: memcpy(d, s, 64); return;
        case 2: memcpy(d, s, 128); return;
        case 4: memcpy(d, s, 256); return;
        case 8: memcpy(d, s, 512); return;
        default: break;
        }
    }
    memcpy(d, s, (size_t)k * (size_t)esz);
}

static inline int same_elems(const unsigned char *a, const unsigned char *b, uint64_t k, int esz)
{
    if (k == 64) {
        switch (esz) {
        case 1: return memcmp(a, b, 64) == 0;
        case 2: return memcmp(a, b, 128) == 0;
        case 4: return memcmp(a, b, 256) == 0;
        case 8: return memcmp(a, b, 512) == 0;
        default: break;
        }
    }
    return memcmp(a, b, (size_t)k * (size_t)esz) == 0;
}

/* The tables a run of elements is copied from or compared with. */
enum table { TAB_POISON, TAB_INPUT, TAB_MOVE, TAB_REDUCE };

/* Where element j of a table's sequence lies (rank r's data, for
 * TAB_MOVE), and in *room how many elements follow it there in order: the
 * rest of its stretch's row, or of the period. */
static const unsigned char *segment(const struct fb_host_tables *ht, enum table which, int r, uint64_t j,
                                    uint64_t *room)
{
    const unsigned char *tab = ht->reduce_bytes;
    uint64_t period = FB_EXPECT_PERIOD, esz = (uint64_t)ht->esz;
    switch (which) {
    case TAB_MOVE:
        *room = 64 - j % 64;
        return ht->move + ((uint64_t)fb_pat_move_row(r, j) * 64 + j % 64) * esz;
    case TAB_POISON: tab = ht->poison, period = 64; break;
    case TAB_INPUT: tab = ht->input, period = ht->in_period; break;
    case TAB_REDUCE: break;
    }
    *room = period - j % period;
    return tab + (j % period) * esz;
}

/* n elements of the table's sequence from j on into d. */
static void fill_run(const struct fb_host_tables *ht, enum table which, int r, uint64_t j, uint64_t n,
                     unsigned char *d)
{
    while (n > 0) {
        uint64_t room;
        const unsigned char *s = segment(ht, which, r, j, &room);
        uint64_t k = room < n ? room : n;
        copy_elems(d, s, k, ht->esz);
        d += k * (uint64_t)ht->esz;
        j += k;
        n -= k;
    }
}

void fb_host_fill(const struct fb_host_tables *ht, const struct fb_pattern *p, void *buf, uint64_t i0, uint64_t n,
                  int poison)
{
    enum table which = poison ? TAB_POISON : reduces(p) ? TAB_INPUT : TAB_MOVE;
    fill_run(ht, which, p->rank, i0, n, buf);
}

/* Elements that differ from the table in their bytes, judged one by one
 * (-0 for 0, an average within its tolerance, pass). */
static uint64_t judge(const struct fb_pattern *p, const struct fb_pat_tables *t, const unsigned char *got, uint64_t i,
                      uint64_t k, uint64_t *first)
{
    uint64_t wrong = 0;
    for (uint64_t e = 0; e < k; e++) {
        double want = 0;
        if (!fb_pat_expected(p, t, i + e, &want) || fb_pat_matches(p->dtype, p->op, fb_pat_load(p->dtype, got, e), want))
            continue;
        if (wrong++ == 0 && i + e < *first)
            *first = i + e;
    }
    return wrong;
}

/* Receive elements [i, i + n), held at got, against the table's sequence
 * from j on. */
static uint64_t check_run(const struct fb_host_tables *ht, const struct fb_pattern *p, const struct fb_pat_tables *t,
                          enum table which, int r, const unsigned char *got, uint64_t i, uint64_t j, uint64_t n,
                          uint64_t *first)
{
    uint64_t wrong = 0;
    while (n > 0) {
        uint64_t room;
        const unsigned char *s = segment(ht, which, r, j, &room);
        uint64_t k = room < n ? room : n;
        if (!same_elems(got, s, k, ht->esz))
            wrong += judge(p, t, got, i, k, first);
        got += k * (uint64_t)ht->esz;
        i += k;
        j += k;
        n -= k;
    }
    return wrong;
}

uint64_t fb_host_check(const struct fb_host_tables *ht, const struct fb_pattern *p, const void *buf, uint64_t i0,
                       uint64_t n, uint64_t *first)
{
    struct fb_pat_tables t = fb_host_tables_view(ht, p);
    const unsigned char *got = buf;
    uint64_t wrong = 0, i = i0, end = i0 + n;
    while (i < end) {
        struct fb_pat_src s = fb_pat_source(p, &t, i);
        uint64_t k = s.len < end - i ? s.len : end - i;
        if (s.kind != FB_SRC_NONE)
            wrong += check_run(ht, p, &t, s.kind == FB_SRC_MOVE ? TAB_MOVE : TAB_REDUCE, s.rank, got, i, s.j, k, first);
        got += k * (uint64_t)ht->esz;
        i += k;
    }
    return wrong;
}
