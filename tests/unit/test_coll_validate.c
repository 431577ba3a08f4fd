/* The checker against the table: what fb_check_call expects, read through
 * a backend in small chunks, is what the collective's row says, element by
 * element, for the rooted and uneven collectives. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "coll/validate.h"

/* A backend of host buffers that only writes and reads. */
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

static const struct fb_backend_ops host_ops = {.name = "host", .write = host_write, .read = host_read};

/* Fills rank's receive buffer with the row's expectation (poison where it
 * expects nothing), so a right result reads as right. */
static struct fb_call call_for(enum fb_coll_id id, size_t bytes, int rank, int n, int root)
{
    struct fb_call c = {0};
    c.coll = fb_collective(id);
    c.dtype = FB_FLOAT;
    c.op = FB_SUM;
    c.root = root;
    c.counts = c.coll->counts(bytes, 4, n);
    host.recv_bytes = c.counts.recv * 4;
    host.recv = calloc(1, host.recv_bytes + 1);
    host.send_bytes = 0;
    for (size_t i = 0; i < c.counts.recv; i++) {
        double want = -1;
        if (!fb_coll_expected(c.coll, &c.counts, c.dtype, c.op, n, rank, root, i, &want))
            want = -99;
        fb_store(FB_FLOAT, host.recv, i, want);
    }
    return c;
}

static uint64_t wrong_on(struct fb_checker *ck, const struct fb_call *c, int rank, int n, size_t *first)
{
    struct fb_backend be = {.ops = &host_ops};
    struct fb_mismatch mm;
    struct fb_err err = {0};
    CHECK_INT(fb_check_call(ck, &be, 0, c, rank, n, &mm, &err), FB_OK);
    *first = mm.first_index;
    return mm.wrong;
}

/* alltoallv's checker walks the senders' shares as it reads: every
 * element of every rank at 1 to 5 ranks, chunks of 7 floats crossing the
 * shares' edges, agrees with the table; one changed element is found at
 * its index. */
static void test_alltoallv_walk_agrees_with_the_table(void)
{
    struct fb_checker ck;
    struct fb_err err = {0};
    CHECK_INT(fb_checker_init(&ck, 28, &err), FB_OK);
    for (int n = 1; n <= 5; n++) {
        for (int rank = 0; rank < n; rank++) {
            struct fb_call c = call_for(FB_ALLTOALLV, 1000 + 37 * (size_t)n, rank, n, 0);
            size_t first = 0;
            CHECK_INT(wrong_on(&ck, &c, rank, n, &first), 0);
            size_t bad = c.counts.recv / 2 + (size_t)rank;
            fb_store(FB_FLOAT, host.recv, bad, 12345);
            CHECK_INT(wrong_on(&ck, &c, rank, n, &first), 1);
            CHECK_INT(first, bad);
            free(host.recv);
        }
    }
    fb_checker_free(&ck);
}

/* gather checks only the root; scatter and hypercube every rank. */
static void test_rooted_and_hypercube_checks(void)
{
    struct fb_checker ck;
    struct fb_err err = {0};
    size_t first = 0;
    CHECK_INT(fb_checker_init(&ck, 64, &err), FB_OK);
    struct fb_call c = call_for(FB_GATHER, 4096, 1, 4, 1);
    fb_store(FB_FLOAT, host.recv, 700, 1);
    CHECK_INT(wrong_on(&ck, &c, 1, 4, &first), 1);
    CHECK_INT(first, 700);
    CHECK_INT(wrong_on(&ck, &c, 2, 4, &first), 0); /* a non-root's buffer is not its result */
    free(host.recv);
    c = call_for(FB_SCATTER, 4096, 3, 4, 0);
    CHECK_INT(wrong_on(&ck, &c, 3, 4, &first), 0);
    CHECK(wrong_on(&ck, &c, 2, 4, &first) > 0); /* rank 3's block is not rank 2's */
    free(host.recv);
    c = call_for(FB_HYPERCUBE, 4096, 0, 4, 0);
    fb_store(FB_FLOAT, host.recv, 1023, 0.5);
    CHECK_INT(wrong_on(&ck, &c, 0, 4, &first), 1);
    free(host.recv);
    fb_checker_free(&ck);
}

int main(void)
{
    RUN(test_alltoallv_walk_agrees_with_the_table);
    RUN(test_rooted_and_hypercube_checks);
    return fbt_done();
}
