#include "scan/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"

/* Buffers are never reused after a test timed out: a receive still posted
 * to a stopped peer may land in them later. */
struct mpi_state {
    float *send, *recv, *tmp;
    size_t count; /* floats */
};

static enum fb_status mpi_available(struct fb_err *err)
{
    (void)err;
    return FB_OK;
}

static void free_buffers(struct mpi_state *s)
{
    free(s->send);
    free(s->recv);
    free(s->tmp);
    s->send = s->recv = s->tmp = NULL;
}

static enum fb_status alloc_buffers(struct mpi_state *s, int rank, struct fb_err *err)
{
    size_t bytes = s->count * sizeof(float);
    s->send = malloc(bytes);
    s->recv = malloc(bytes);
    s->tmp = malloc(bytes / 2);
    if (s->send == NULL || s->recv == NULL || s->tmp == NULL) {
        free_buffers(s);
        return fb_fail(err, FB_ERR_MEMORY, "%zu bytes of host memory for the scan's buffers: lower -b",
                       bytes);
    }
    for (size_t i = 0; i < s->count; i++)
        s->send[i] = (float)(1 + rank % 7);
    memset(s->recv, 0, bytes);
    return FB_OK;
}

static enum fb_status mpi_init(struct scan_engine *e, const struct fb_world *w, size_t bytes,
                               struct fb_err *err)
{
    struct mpi_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return fb_fail(err, FB_ERR_MEMORY, "out of memory");
    s->count = bytes / sizeof(float) / 2 * 2; /* even: two halves */
    if (s->count < 2)
        s->count = 2;
    e->state = s;
    e->w = w;
    MPI_Comm_set_errhandler(w->comm, MPI_ERRORS_RETURN);
    return alloc_buffers(s, w->rank, err);
}

int scan_wait_requests(int n, MPI_Request *req, double deadline, char *error, size_t len)
{
    struct timespec pause = {0, 50 * 1000};
    for (;;) {
        int done = 0;
        int rc = MPI_Testall(n, req, &done, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) {
            char text[MPI_MAX_ERROR_STRING];
            int tlen = 0;
            MPI_Error_string(rc, text, &tlen);
            snprintf(error, len, "MPI: %s", text);
            return -1;
        }
        if (done)
            return 1;
        if (fb_now() > deadline)
            return 0;
        nanosleep(&pause, NULL);
    }
}

/* One exchange: send `n` floats from `out`, receive `n` into `in`. */
static int exchange(const struct fb_world *w, int peer, int tag, const float *out, float *in, size_t n,
                    double deadline, char *error, size_t len)
{
    MPI_Request req[2];
    MPI_Irecv(in, (int)n, MPI_FLOAT, peer, tag, w->comm, &req[0]);
    MPI_Isend(out, (int)n, MPI_FLOAT, peer, tag, w->comm, &req[1]);
    return scan_wait_requests(2, req, deadline, error, len);
}

/* Two-rank all_reduce of s->send into s->recv (count is even): the lower
 * rank reduces the first half, the higher the second, then they swap. */
static int allreduce_pair(struct mpi_state *s, const struct fb_world *w, int peer, int tag,
                          double deadline, char *error, size_t len)
{
    size_t half = s->count / 2, mine = w->rank < peer ? 0 : half, theirs = half - mine;
    int rc = exchange(w, peer, tag, s->send + theirs, s->tmp, half, deadline, error, len);
    if (rc != 1)
        return rc;
    for (size_t i = 0; i < half; i++)
        s->recv[mine + i] = s->send[mine + i] + s->tmp[i];
    return exchange(w, peer, tag, s->recv + mine, s->recv + theirs, half, deadline, error, len);
}

static int copy_to_self(struct mpi_state *s, const struct fb_world *w, int tag, double deadline,
                        char *error, size_t len)
{
    return exchange(w, w->rank, tag, s->send, s->recv, s->count, deadline, error, len);
}

static int check_sum(const struct mpi_state *s, int rank, int peer)
{
    float want = (float)(2 + rank % 7 + peer % 7);
    for (size_t i = 0; i < s->count; i++)
        if (s->recv[i] != want)
            return 0;
    return 1;
}

/* The bus factor of all_reduce at two ranks is 1, and a copy to oneself
 * moves the buffer once: either way bytes x iterations / time. */
static void finish(struct scan_report *out, int rc, size_t bytes, int iters, double timed)
{
    if (rc == 1) {
        out->status = SCAN_OK;
        out->busbw = iters > 0 && timed > 0 ? (double)bytes * iters / timed / 1e9 : -1;
    } else {
        out->status = rc == 0 ? SCAN_TIMEOUT : SCAN_FAILED;
    }
}

static void mpi_test(struct scan_engine *e, const int *ranks, int nranks, int tag,
                     const struct scan_params *p, double deadline, struct scan_report *out)
{
    struct mpi_state *s = e->state;
    const struct fb_world *w = e->w;
    int peer = nranks == 2 ? (ranks[0] == w->rank ? ranks[1] : ranks[0]) : w->rank;
    int rc = 1;
    double start = fb_now(), t0 = start;
    memset(out, 0, sizeof *out);
    out->busbw = -1;
    for (int i = 0; i < p->warmup + p->iters && rc == 1; i++) {
        if (i == p->warmup)
            t0 = fb_now();
        rc = nranks == 2 ? allreduce_pair(s, w, peer, tag, deadline, out->error, sizeof out->error)
                         : copy_to_self(s, w, tag, deadline, out->error, sizeof out->error);
    }
    finish(out, rc, s->count * sizeof(float), p->iters, fb_now() - t0);
    out->seconds = fb_now() - start;
    if (rc == 1 && nranks == 2 && !check_sum(s, w->rank, peer)) {
        out->status = SCAN_FAILED;
        snprintf(out->error, sizeof out->error, "wrong sum received from rank %d", peer);
    }
    if (rc == 0)
        snprintf(out->error, sizeof out->error, "no answer from rank %d (%s) within the test's bound",
                 peer, w->hosts[peer]);
    if (rc != 1) { /* leave the old buffers to any receive still posted */
        struct fb_err err = {0};
        s->send = s->recv = s->tmp = NULL;
        if (alloc_buffers(s, w->rank, &err) != FB_OK)
            snprintf(out->error, sizeof out->error, "%.200s", err.msg);
    }
}

static void mpi_fini(struct scan_engine *e)
{
    struct mpi_state *s = e->state;
    if (s != NULL)
        free_buffers(s);
    free(s);
    e->state = NULL;
}

const struct scan_engine_ops scan_engine_mpi = {
    .name = "mpi",
    .available = mpi_available,
    .init = mpi_init,
    .test = mpi_test,
    .fini = mpi_fini,
};
