#include "coll/validate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nccl/pattern.h"

enum fb_status fb_checker_init(struct fb_checker *ck, size_t stage_bytes, struct fb_err *err)
{
    memset(ck, 0, sizeof *ck);
    ck->stage = malloc(stage_bytes);
    ck->expect = malloc(FB_EXPECT_PERIOD * sizeof *ck->expect);
    if (ck->stage == NULL || ck->expect == NULL)
        return fb_fail(err, FB_ERR_MEMORY, "cannot allocate %zu bytes for validation", stage_bytes);
    ck->stage_bytes = stage_bytes;
    return FB_OK;
}

void fb_checker_free(struct fb_checker *ck)
{
    free(ck->stage);
    free(ck->expect);
    memset(ck, 0, sizeof *ck);
}

static void tabulate(struct fb_checker *ck, enum fb_dtype t, enum fb_redop op, int nranks)
{
    if (ck->expect_ranks == nranks && ck->expect_dtype == t && ck->expect_op == op)
        return;
    for (size_t i = 0; i < FB_EXPECT_PERIOD; i++)
        ck->expect[i] = fb_expected_reduce(t, op, nranks, i);
    ck->expect_dtype = t;
    ck->expect_op = op;
    ck->expect_ranks = nranks;
}

/* The region a call reads as input: which buffer, element offset, count. */
static void input_region(const struct fb_call *c, enum fb_buf *buf, size_t *off, size_t *n)
{
    *buf = c->in_place ? FB_BUF_RECV : FB_BUF_SEND;
    *off = c->send_off;
    *n = c->counts.send;
}

static struct fb_pattern pattern_of(const struct fb_call *c, int rank, int nranks)
{
    return fb_pattern_make(c->coll, &c->counts, c->dtype, c->op, nranks, rank, c->root);
}

/* Input when `poison` is 0, else the poison no correct result holds. */
static enum fb_status fill(struct fb_checker *ck, struct fb_backend *be, int local, const struct fb_call *c,
                           enum fb_buf buf, size_t off, size_t n, int poison, int rank,
                           int nranks, struct fb_err *err)
{
    size_t esz = fb_dtype_info(c->dtype)->size;
    size_t per = ck->stage_bytes / esz;
    struct fb_pattern p = pattern_of(c, rank, nranks);
    double bad = fb_pat_poison(c->dtype);
    for (size_t done = 0; done < n; done += per) {
        size_t k = n - done < per ? n - done : per;
        for (size_t j = 0; j < k; j++)
            fb_pat_store(c->dtype, ck->stage, j, poison ? bad : fb_pat_input(&p, done + j));
        enum fb_status st = be->ops->write(be, local, buf, (off + done) * esz, ck->stage, k * esz, err);
        if (st != FB_OK)
            return st;
    }
    return FB_OK;
}

enum fb_status fb_prepare_call(struct fb_checker *ck, struct fb_backend *be, int local,
                               const struct fb_call *c, int rank, int nranks, struct fb_err *err)
{
    enum fb_buf buf;
    size_t off, n;
    /* Poison first, input second: for in-place calls the input overwrites
     * part of the poisoned region, and stale results of an earlier call can
     * never pass for this one's. */
    enum fb_status st = fill(ck, be, local, c, FB_BUF_RECV, c->recv_off, c->counts.recv, 1, rank, nranks, err);
    if (st != FB_OK)
        return st;
    if ((c->coll->id == FB_BROADCAST || c->coll->id == FB_SCATTER) && rank != c->root)
        return FB_OK; /* only the root's input travels; the rest stays poisoned */
    input_region(c, &buf, &off, &n);
    return fill(ck, be, local, c, buf, off, n, 0, rank, nranks, err);
}

/* The table's alltoallv expectation walks every sender's share for each
 * element; the checker reads the receive buffer in order, so it keeps the
 * share it is in and steps to the next one instead (empty shares skipped). */
static double alltoallv_expected(const struct fb_call *c, struct fb_checker *ck, int rank, int nranks,
                                 size_t i, int *defined)
{
    size_t esz = fb_dtype_info(c->dtype)->size, p = c->counts.param;
    if (i == 0 || i < ck->share.start) {
        ck->share.from = -1;
        ck->share.start = ck->share.end = 0;
    }
    while (i >= ck->share.end && ck->share.from + 1 < nranks) {
        int from = ++ck->share.from;
        ck->share.start = ck->share.end;
        ck->share.end += fb_alltoallv_count(p, esz, nranks, from, rank);
        ck->share.from_off = fb_alltoallv_send_offset(p, esz, nranks, from, rank);
    }
    *defined = i < ck->share.end;
    size_t at = ck->share.from_off + (i - ck->share.start);
    return *defined ? fb_pat_move(ck->share.from, at) : 0;
}

/* Reductions read one tabulated period instead of folding every rank. */
static double expected_at(const struct fb_call *c, const struct fb_pattern *p, struct fb_checker *ck, int rank,
                          int nranks, size_t i, int *defined)
{
    if (c->coll->id == FB_ALLTOALLV)
        return alltoallv_expected(c, ck, rank, nranks, i, defined);
    double want = 0;
    *defined = fb_pat_expected(p, c->coll->reduces ? ck->expect : NULL, i, &want);
    return want;
}

enum fb_status fb_check_call(struct fb_checker *ck, struct fb_backend *be, int local, const struct fb_call *c,
                             int rank, int nranks, struct fb_mismatch *out, struct fb_err *err)
{
    memset(out, 0, sizeof *out);
    out->rank = rank;
    if (c->coll->reduces)
        tabulate(ck, c->dtype, c->op, nranks);
    size_t esz = fb_dtype_info(c->dtype)->size;
    size_t per = ck->stage_bytes / esz;
    size_t n = c->counts.recv;
    /* A non-root's receive buffer of reduce and gather holds no result:
     * not read at all (it may be gigabytes of GPU memory). */
    if ((c->coll->id == FB_REDUCE || c->coll->id == FB_GATHER) && rank != c->root)
        return FB_OK;
    struct fb_pattern p = pattern_of(c, rank, nranks);
    for (size_t done = 0; done < n; done += per) {
        size_t k = n - done < per ? n - done : per;
        enum fb_status st = be->ops->read(be, local, FB_BUF_RECV, (c->recv_off + done) * esz, ck->stage,
                                          k * esz, err);
        if (st != FB_OK)
            return st;
        for (size_t j = 0; j < k; j++) {
            int defined = 0;
            double want = expected_at(c, &p, ck, rank, nranks, done + j, &defined);
            double got = fb_pat_load(c->dtype, ck->stage, j);
            if (!defined || fb_pat_matches(c->dtype, c->op, got, want))
                continue;
            if (out->wrong++ == 0) {
                out->first_index = done + j;
                out->got = got;
                out->want = want;
            }
        }
    }
    return FB_OK;
}
