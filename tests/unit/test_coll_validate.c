/* The checker against the formulas: what fb_prepare_call writes is each
 * element's input, and what fb_check_call counts as wrong is exactly what
 * the formulas (fb_coll_input, fb_coll_expected) say is wrong, element by
 * element, for every collective, type and operator, whether it checks in
 * place in host memory or through a staging buffer of a few bytes whose
 * chunks cross every stretch and share edge. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "coll/validate.h"

/* A backend of host buffers: staged (write and read only) or in place. */
static struct fb_buffers host;

static enum fb_status host_write(struct fb_backend *be, int local, enum fb_buf which, size_t off, const void *src,
                                 size_t bytes, struct fb_err *err)
{
    (void)be, (void)local;
    char *at = fb_buffer_span(&host, which, off, bytes, "write", err);
    if (at == NULL)
        return err->code;
    memcpy(at, src, bytes);
    return FB_OK;
}

static enum fb_status host_read(struct fb_backend *be, int local, enum fb_buf which, size_t off, void *dst,
                                size_t bytes, struct fb_err *err)
{
    (void)be, (void)local;
    const char *at = fb_buffer_span(&host, which, off, bytes, "read", err);
    if (at == NULL)
        return err->code;
    memcpy(dst, at, bytes);
    return FB_OK;
}

static enum fb_status host_at(struct fb_backend *be, int local, enum fb_buf which, size_t off, size_t bytes,
                              char **at, struct fb_err *err)
{
    (void)be, (void)local;
    *at = fb_buffer_span(&host, which, off, bytes, "span", err);
    return *at ? FB_OK : err->code;
}

static const struct fb_backend_ops staged_ops = {.name = "staged", .write = host_write, .read = host_read};
static const struct fb_backend_ops inplace_ops = {
    .name = "inplace", .write = host_write, .read = host_read, .host_span = host_at};

static struct fb_call call_of(enum fb_coll_id id, enum fb_dtype t, enum fb_redop op, size_t bytes, int n, int root)
{
    struct fb_call c = {0};
    c.coll = fb_collective(id);
    c.dtype = t;
    c.op = op;
    c.root = root;
    c.counts = c.coll->counts(bytes, fb_dtype_info(t)->size, n);
    return c;
}

static void buffers_for(const struct fb_call *c)
{
    size_t esz = fb_dtype_info(c->dtype)->size;
    host.send_bytes = c->counts.send * esz;
    host.recv_bytes = c->counts.recv * esz;
    host.send = calloc(1, host.send_bytes + 1);
    host.recv = calloc(1, host.recv_bytes + 1);
}

static void buffers_free(void)
{
    free(host.send);
    free(host.recv);
    memset(&host, 0, sizeof host);
}

/* The receive buffer as a right result holds it (poison where nothing is
 * defined), from the formulas. */
static void write_expected(const struct fb_call *c, int rank, int n)
{
    for (size_t i = 0; i < c->counts.recv; i++) {
        double want = 0;
        if (!fb_coll_expected(c->coll, &c->counts, c->dtype, c->op, n, rank, c->root, i, &want))
            want = -99;
        fb_store(c->dtype, host.recv, i, want);
    }
}

static uint64_t wrong_on(struct fb_checker *ck, struct fb_backend *be, const struct fb_call *c, int rank, int n,
                         size_t *first)
{
    struct fb_mismatch mm;
    struct fb_err err = {0};
    CHECK_INT(fb_check_call(ck, be, 0, c, rank, n, &mm, &err), FB_OK);
    *first = mm.first_index;
    return mm.wrong;
}

/* Same bytes as the formula's value stored in the type. */
static int holds(enum fb_dtype t, const void *buf, size_t i, double v)
{
    unsigned char want[8], *got = (unsigned char *)buf + i * fb_dtype_info(t)->size;
    fb_store(t, want, 0, v);
    return memcmp(got, want, fb_dtype_info(t)->size) == 0;
}

/* The value no right result holds. */
static double poison_of(enum fb_dtype t)
{
    return t == FB_UINT8 ? 255 : t == FB_UINT32 ? 4294967295.0 : t == FB_UINT64 ? 18446744073709549568.0 : -99;
}

/* prepare writes every input element and poisons the whole output. */
static void check_prepare(struct fb_checker *ck, struct fb_backend *be, const struct fb_call *c, int rank, int n)
{
    struct fb_err err = {0};
    CHECK_INT(fb_prepare_call(ck, be, 0, c, rank, n, &err), FB_OK);
    int sends = !((c->coll->id == FB_BROADCAST || c->coll->id == FB_SCATTER) && rank != c->root);
    size_t bad_in = 0, bad_poison = 0;
    for (size_t i = 0; sends && i < c->counts.send; i++)
        bad_in += !holds(c->dtype, host.send, i, fb_coll_input(c->coll, c->dtype, c->op, n, rank, i));
    for (size_t i = 0; i < c->counts.recv; i++)
        bad_poison += !holds(c->dtype, host.recv, i, poison_of(c->dtype));
    CHECK_INT(bad_in, 0);
    CHECK_INT(bad_poison, 0);
}

/* A right result passes; one element changed anywhere is found at its
 * index, alone. */
static void check_finds(struct fb_checker *ck, struct fb_backend *be, const struct fb_call *c, int rank, int n)
{
    size_t first = 0;
    write_expected(c, rank, n);
    CHECK_INT(wrong_on(ck, be, c, rank, n, &first), 0);
    int defined_anywhere = !((c->coll->id == FB_REDUCE || c->coll->id == FB_GATHER) && rank != c->root);
    size_t spots[] = {0, c->counts.recv / 2 + (size_t)rank, c->counts.recv - 1};
    for (size_t k = 0; defined_anywhere && c->counts.recv > 0 && k < 3; k++) {
        double want = 0;
        size_t at = spots[k];
        if (!fb_coll_expected(c->coll, &c->counts, c->dtype, c->op, n, rank, c->root, at, &want))
            continue; /* alltoallv's tail past the shares */
        unsigned char keep[8];
        size_t esz = fb_dtype_info(c->dtype)->size;
        memcpy(keep, host.recv + at * esz, esz);
        fb_store(c->dtype, host.recv, at, poison_of(c->dtype));
        CHECK_INT(wrong_on(ck, be, c, rank, n, &first), 1);
        CHECK_INT(first, at);
        memcpy(host.recv + at * esz, keep, esz);
    }
}

static void sweep_cases(const struct fb_backend_ops *ops, size_t stage)
{
    static const enum fb_dtype types[] = {FB_INT8, FB_UINT8, FB_HALF, FB_FLOAT, FB_BFLOAT16, FB_F8E4M3, FB_F8E5M2,
                                          FB_DOUBLE, FB_UINT64};
    static const enum fb_redop ops_red[] = {FB_SUM, FB_PROD, FB_MAX, FB_MIN, FB_AVG, FB_MULSUM};
    struct fb_backend be = {.ops = ops};
    struct fb_checker ck;
    struct fb_err err = {0};
    CHECK_INT(fb_checker_init(&ck, &be, stage, &err), FB_OK);
    CHECK_INT(ck.place, ops->host_span ? FB_CHECK_HOST : FB_CHECK_STAGED);
    for (int id = 0; id < FB_NCOLLS; id++) {
        const struct fb_collective *coll = fb_collective(id);
        for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
            for (size_t oi = 0; oi < (coll->reduces ? sizeof ops_red / sizeof ops_red[0] : 1); oi++) {
                if (ops_red[oi] == FB_AVG && !fb_dtype_info(types[ti])->is_float)
                    continue;
                for (int n = 1; n <= 4; n += 3) {
                    for (int rank = 0; rank < n; rank++) {
                        struct fb_call c = call_of(id, types[ti], ops_red[oi], 9000 + 37 * (size_t)n, n, n - 1);
                        buffers_for(&c);
                        check_prepare(&ck, &be, &c, rank, n);
                        check_finds(&ck, &be, &c, rank, n);
                        buffers_free();
                    }
                }
            }
        }
    }
    fb_checker_free(&ck);
}

static void test_staged_checks_agree_with_the_formulas(void) { sweep_cases(&staged_ops, 24); }

static void test_in_place_checks_agree_with_the_formulas(void) { sweep_cases(&inplace_ops, 0); }

/* A value that is right with a different sign bit (-0 for 0) passes; a NaN
 * where a number belongs does not. */
static void test_bytes_that_differ_are_judged_by_value(void)
{
    struct fb_backend be = {.ops = &inplace_ops};
    struct fb_checker ck;
    struct fb_err err = {0};
    size_t first = 0;
    CHECK_INT(fb_checker_init(&ck, &be, 0, &err), FB_OK);
    struct fb_call c = call_of(FB_ALL_GATHER, FB_FLOAT, FB_SUM, 4096, 2, 0);
    buffers_for(&c);
    write_expected(&c, 0, 2);
    size_t zero = 0;
    while (fb_load(FB_FLOAT, host.recv, zero) != 0)
        zero++;
    fb_store(FB_FLOAT, host.recv, zero, -0.0);
    CHECK_INT(wrong_on(&ck, &be, &c, 0, 2, &first), 0);
    fb_store(FB_FLOAT, host.recv, 77, NAN);
    CHECK_INT(wrong_on(&ck, &be, &c, 0, 2, &first), 1);
    CHECK_INT(first, 77);
    buffers_free();
    fb_checker_free(&ck);
}

int main(void)
{
    RUN(test_staged_checks_agree_with_the_formulas);
    RUN(test_in_place_checks_agree_with_the_formulas);
    RUN(test_bytes_that_differ_are_judged_by_value);
    return fbt_done();
}
