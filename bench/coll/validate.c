#include "coll/validate.h"

#include <stdlib.h>
#include <string.h>

enum fb_check_place fb_check_place_of(const struct fb_backend *be)
{
    if (be->ops->fill != NULL && be->ops->check != NULL)
        return FB_CHECK_DEVICE;
    return be->ops->host_span != NULL ? FB_CHECK_HOST : FB_CHECK_STAGED;
}

const char *fb_check_place_text(enum fb_check_place place)
{
    switch (place) {
    case FB_CHECK_DEVICE: return "checks on the GPU";
    case FB_CHECK_HOST: return "checks in host memory";
    case FB_CHECK_STAGED: return "checks staged through host memory (built without nvcc: no GPU kernels)";
    }
    return "?";
}

const char *fb_check_place_name(enum fb_check_place place)
{
    switch (place) {
    case FB_CHECK_DEVICE: return "device";
    case FB_CHECK_HOST: return "host";
    case FB_CHECK_STAGED: return "staged";
    }
    return "?";
}

enum fb_status fb_checker_init(struct fb_checker *ck, const struct fb_backend *be, size_t stage_bytes,
                               struct fb_err *err)
{
    memset(ck, 0, sizeof *ck);
    fb_host_tables_init(&ck->tables);
    ck->place = fb_check_place_of(be);
    if (ck->place != FB_CHECK_STAGED)
        return FB_OK;
    ck->stage = malloc(stage_bytes);
    if (ck->stage == NULL)
        return fb_fail(err, FB_ERR_MEMORY, "cannot allocate %zu bytes for validation", stage_bytes);
    ck->stage_bytes = stage_bytes;
    return FB_OK;
}

void fb_checker_free(struct fb_checker *ck)
{
    free(ck->stage);
    fb_host_tables_free(&ck->tables);
    memset(ck, 0, sizeof *ck);
}

static struct fb_pattern pattern_of(const struct fb_call *c, int rank, int nranks)
{
    return fb_pattern_make(c->coll, &c->counts, c->dtype, c->op, nranks, rank, c->root);
}

/* n elements of `buf` from element `off` on: the input (poison 0) or the
 * poison no correct result holds. */
static enum fb_status fill(struct fb_checker *ck, struct fb_backend *be, int local, const struct fb_pattern *p,
                           enum fb_buf buf, size_t off, size_t n, int poison, struct fb_err *err)
{
    size_t esz = (size_t)fb_pat_size(p->dtype);
    if (n == 0)
        return FB_OK;
    if (ck->place == FB_CHECK_DEVICE)
        return be->ops->fill(be, local, buf, off, n, p, poison, err);
    if (ck->place == FB_CHECK_HOST) {
        char *at = NULL;
        enum fb_status st = be->ops->host_span(be, local, buf, off * esz, n * esz, &at, err);
        if (st == FB_OK)
            fb_host_fill(&ck->tables, p, at, 0, n, poison);
        return st;
    }
    size_t per = ck->stage_bytes / esz;
    for (size_t done = 0; done < n; done += per) {
        size_t k = n - done < per ? n - done : per;
        fb_host_fill(&ck->tables, p, ck->stage, done, k, poison);
        enum fb_status st = be->ops->write(be, local, buf, (off + done) * esz, ck->stage, k * esz, err);
        if (st != FB_OK)
            return st;
    }
    return FB_OK;
}

enum fb_status fb_prepare_call(struct fb_checker *ck, struct fb_backend *be, int local,
                               const struct fb_call *c, int rank, int nranks, struct fb_err *err)
{
    struct fb_pattern p = pattern_of(c, rank, nranks);
    enum fb_status st = fb_host_tables_prepare(&ck->tables, &p, err);
    /* Poison first, input second: for in-place calls the input overwrites
     * part of the poisoned region, and stale results of an earlier call can
     * never pass for this one's. */
    if (st == FB_OK)
        st = fill(ck, be, local, &p, FB_BUF_RECV, c->recv_off, c->counts.recv, 1, err);
    if (st != FB_OK)
        return st;
    if ((c->coll->id == FB_BROADCAST || c->coll->id == FB_SCATTER) && rank != c->root)
        return FB_OK; /* only the root's input travels; the rest stays poisoned */
    /* The input region: in the receive buffer for an in-place call. */
    return fill(ck, be, local, &p, c->in_place ? FB_BUF_RECV : FB_BUF_SEND, c->send_off, c->counts.send, 0, err);
}

static enum fb_status count_wrong(struct fb_checker *ck, struct fb_backend *be, int local, const struct fb_call *c,
                                  const struct fb_pattern *p, uint64_t *wrong, uint64_t *first, struct fb_err *err)
{
    size_t esz = (size_t)fb_pat_size(p->dtype), n = c->counts.recv;
    *wrong = 0;
    if (ck->place == FB_CHECK_DEVICE) {
        struct fb_pat_tables t = fb_host_tables_view(&ck->tables, p);
        return be->ops->check(be, local, c->recv_off, n, p, &t, ck->tables.key, wrong, first, err);
    }
    if (ck->place == FB_CHECK_HOST) {
        char *at = NULL;
        enum fb_status st = be->ops->host_span(be, local, FB_BUF_RECV, c->recv_off * esz, n * esz, &at, err);
        if (st == FB_OK)
            *wrong = fb_host_check(&ck->tables, p, at, 0, n, first);
        return st;
    }
    size_t per = ck->stage_bytes / esz;
    for (size_t done = 0; done < n; done += per) {
        size_t k = n - done < per ? n - done : per;
        enum fb_status st = be->ops->read(be, local, FB_BUF_RECV, (c->recv_off + done) * esz, ck->stage,
                                          k * esz, err);
        if (st != FB_OK)
            return st;
        *wrong += fb_host_check(&ck->tables, p, ck->stage, done, k, first);
    }
    return FB_OK;
}

enum fb_status fb_check_call(struct fb_checker *ck, struct fb_backend *be, int local, const struct fb_call *c,
                             int rank, int nranks, struct fb_mismatch *out, struct fb_err *err)
{
    memset(out, 0, sizeof *out);
    out->rank = rank;
    /* A non-root's receive buffer of reduce and gather holds no result:
     * not read at all (it may be gigabytes of GPU memory). */
    if ((c->coll->id == FB_REDUCE || c->coll->id == FB_GATHER) && rank != c->root)
        return FB_OK;
    struct fb_pattern p = pattern_of(c, rank, nranks);
    uint64_t wrong = 0, first = UINT64_MAX;
    enum fb_status st = fb_host_tables_prepare(&ck->tables, &p, err);
    if (st == FB_OK)
        st = count_wrong(ck, be, local, c, &p, &wrong, &first, err);
    if (st != FB_OK || wrong == 0)
        return st;
    if (first >= c->counts.recv)
        return fb_fail(err, FB_ERR_INTERNAL, "check found %llu wrong elements but no position among %zu",
                       (unsigned long long)wrong, c->counts.recv);
    /* The first wrong element alone crosses to the host, for the message. */
    size_t esz = (size_t)fb_pat_size(p.dtype);
    unsigned char elem[8];
    struct fb_pat_tables t = fb_host_tables_view(&ck->tables, &p);
    st = be->ops->read(be, local, FB_BUF_RECV, (c->recv_off + first) * esz, elem, esz, err);
    if (st != FB_OK)
        return st;
    out->wrong = wrong;
    out->first_index = first;
    out->got = fb_pat_load(p.dtype, elem, 0);
    fb_pat_expected(&p, &t, first, &out->want);
    return FB_OK;
}
