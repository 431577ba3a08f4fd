#include "probe/comm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"

void probe_rank_name(const struct probe_ctx *c, int rank, char *buf, size_t len)
{
    if (rank >= 0 && rank < c->w->size)
        snprintf(buf, len, "rank %d (%s)", rank, c->w->hosts[rank]);
    else
        snprintf(buf, len, "rank %d", rank);
}

enum fb_status probe_check_stop(const struct probe_ctx *c, struct fb_err *err)
{
    if (c->stop == NULL || *c->stop == 0)
        return FB_OK;
    int sig = *c->stop;
    return fb_fail(err, sig == SIGINT ? FB_EXIT_SIGINT : FB_EXIT_SIGTERM,
                   "stopped by %s; sizes already finished are kept in the results file",
                   sig == SIGINT ? "SIGINT" : "SIGTERM");
}

/* Polls without hogging a core another rank may need: spin briefly, then
 * sleep in growing steps up to a millisecond. */
struct backoff {
    double started;
    long ns;
};

static void backoff_pause(struct backoff *b)
{
    if (fb_now() - b->started < 200e-6)
        return;
    struct timespec ts = {0, b->ns};
    nanosleep(&ts, NULL);
    if (b->ns < 1000000)
        b->ns *= 2;
}

static void send_word(const struct probe_ctx *c, int to)
{
    MPI_Request req;
    if (MPI_Isend(&c->alive->word, 1, MPI_INT32_T, to, PROBE_TAG_ALIVE, c->comm, &req) == MPI_SUCCESS)
        MPI_Request_free(&req); /* a word lost with a broken connection is no loss */
}

static void pass_word_on(const struct probe_ctx *c, double now)
{
    struct probe_alive *a = c->alive;
    a->last_sent = now;
    a->progressed = 0;
    if (c->w->rank != 0) {
        send_word(c, 0);
        return;
    }
    for (int r = 1; r < c->w->size; r++)
        send_word(c, r);
}

void probe_alive_progress(const struct probe_ctx *c)
{
    if (c == NULL || c->alive == NULL)
        return;
    c->alive->progressed = 1;
    double now = fb_now();
    if (now - c->alive->last_sent >= c->alive->period)
        pass_word_on(c, now);
}

void probe_alive_hook(void *ctx) { probe_alive_progress(ctx); }

int probe_alive_heard(const struct probe_ctx *c)
{
    if (c->alive == NULL)
        return 0;
    int heard = 0;
    for (;;) {
        int flag = 0;
        MPI_Message msg;
        if (MPI_Improbe(MPI_ANY_SOURCE, PROBE_TAG_ALIVE, c->comm, &flag, &msg, MPI_STATUS_IGNORE) !=
                MPI_SUCCESS || !flag)
            break;
        int32_t word;
        MPI_Mrecv(&word, 1, MPI_INT32_T, &msg, MPI_STATUS_IGNORE);
        heard = 1;
    }
    if (heard && c->w->rank == 0)
        probe_alive_progress(c);
    return heard;
}

static enum fb_status wait_status(const struct probe_ctx *c, MPI_Request *req, MPI_Status *status,
                                  double limit_s, int peer, const char *what, struct fb_err *err)
{
    struct backoff b = {fb_now(), 10000};
    double deadline = b.started + limit_s;
    for (;;) {
        int done = 0;
        if (MPI_Test(req, &done, status) != MPI_SUCCESS) {
            char who[FB_HOST_MAX + 32];
            probe_rank_name(c, peer, who, sizeof who);
            return fb_fail(err, FB_ERR_RUNTIME, "MPI failed while %s with %s", what, who);
        }
        if (done)
            return FB_OK;
        if (probe_check_stop(c, err) != FB_OK)
            return err->code;
        if (probe_alive_heard(c))
            deadline = fb_now() + limit_s;
        if (fb_now() > deadline) {
            char who[FB_HOST_MAX + 32];
            probe_rank_name(c, peer, who, sizeof who);
            return fb_fail(err, FB_ERR_TIMEOUT,
                           "%s did not answer within %.0f s while %s; check that host (process "
                           "alive? network up?) or raise --timeout",
                           who, limit_s, what);
        }
        backoff_pause(&b);
    }
}

enum fb_status probe_wait(const struct probe_ctx *c, MPI_Request *req, double limit_s, int peer,
                          const char *what, struct fb_err *err)
{
    return wait_status(c, req, MPI_STATUS_IGNORE, limit_s, peer, what, err);
}

enum fb_status probe_exchange(const struct probe_ctx *c, int peer, int tag, const void *out,
                              int len, void *in, int cap, int *got, double limit_s,
                              const char *what, struct fb_err *err)
{
    MPI_Request rreq, sreq;
    MPI_Status st;
    MPI_Irecv(in, cap, MPI_BYTE, peer, tag, c->comm, &rreq);
    MPI_Isend(out, len, MPI_BYTE, peer, tag, c->comm, &sreq);
    if (probe_wait(c, &sreq, limit_s, peer, what, err) != FB_OK)
        return err->code;
    if (wait_status(c, &rreq, &st, limit_s, peer, what, err) != FB_OK)
        return err->code;
    MPI_Get_count(&st, MPI_BYTE, got);
    return FB_OK;
}

enum fb_status probe_recv(const struct probe_ctx *c, int peer, int tag, void *in, int cap, int *got,
                          double limit_s, const char *what, struct fb_err *err)
{
    MPI_Request req;
    MPI_Status st;
    MPI_Irecv(in, cap, MPI_BYTE, peer, tag, c->comm, &req);
    if (wait_status(c, &req, &st, limit_s, peer, what, err) != FB_OK)
        return err->code;
    MPI_Get_count(&st, MPI_BYTE, got);
    return FB_OK;
}

static enum fb_status lost_rank(const struct probe_ctx *c, int r, const char *what,
                                struct fb_err *err)
{
    char who[FB_HOST_MAX + 32];
    probe_rank_name(c, r, who, sizeof who);
    return fb_fail(err, FB_ERR_TIMEOUT,
                   "%s stopped answering: its MPI connection broke while %s (process killed, out "
                   "of memory, host down?); check that host", who, what);
}

enum fb_status probe_gather(const struct probe_ctx *c, const struct probe_gather_spec *g,
                            const void *mine, void *all, unsigned char *arrived,
                            struct fb_err *err)
{
    const struct fb_world *w = c->w;
    if (w->rank != 0) {
        MPI_Request req;
        MPI_Isend(mine, (int)g->len, MPI_BYTE, 0, PROBE_TAG_REPORT, c->comm, &req);
        return probe_wait(c, &req, g->limit_s, 0, g->what, err);
    }
    memcpy(all, mine, g->len);
    memset(arrived, 0, (size_t)w->size);
    arrived[0] = 1;
    int n = w->size - 1;
    MPI_Request *reqs = malloc((size_t)(n > 0 ? n : 1) * sizeof *reqs);
    int *idx = malloc((size_t)(n > 0 ? n : 1) * sizeof *idx);
    MPI_Status *sts = malloc((size_t)(n > 0 ? n : 1) * sizeof *sts);
    if (reqs == NULL || idx == NULL || sts == NULL) {
        free(reqs);
        free(idx);
        free(sts);
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    }
    for (int r = 1; r < w->size; r++)
        MPI_Irecv((char *)all + (size_t)r * g->len, (int)g->len, MPI_BYTE, r, PROBE_TAG_REPORT,
                  c->comm, &reqs[r - 1]);
    struct backoff b = {fb_now(), 10000};
    int failing = g->failed(mine);
    double deadline = b.started + (failing ? g->grace_s : g->limit_s);
    int left = n;
    enum fb_status st = FB_OK;
    while (left > 0 && st == FB_OK) {
        int got = 0;
        int rc = MPI_Testsome(n, reqs, &got, idx, sts);
        for (int i = 0; got != MPI_UNDEFINED && i < got; i++) {
            int r = idx[i] + 1;
            /* A receive that completed in error (the peer's process is gone
             * and its connection broke) holds no report: that rank is lost,
             * and nothing it sent may be read as a success. */
            if (rc == MPI_ERR_IN_STATUS && sts[i].MPI_ERROR != MPI_SUCCESS) {
                arrived[r] = PROBE_LOST;
                st = lost_rank(c, r, g->what, err);
                continue;
            }
            arrived[r] = 1;
            double grace = fb_now() + g->grace_s;
            if (g->failed((char *)all + (size_t)r * g->len) && grace < deadline)
                deadline = grace;
            failing |= g->failed((char *)all + (size_t)r * g->len);
        }
        if (got == MPI_UNDEFINED || st != FB_OK)
            break;
        if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) {
            st = fb_fail(err, FB_ERR_RUNTIME, "MPI failed while %s", g->what);
            break;
        }
        left -= got;
        if (left == 0 || got > 0)
            continue;
        st = probe_check_stop(c, err);
        /* A rank still measuring says so: its report may take as long as
         * its link needs, as long as the job keeps moving. */
        if (st == FB_OK && probe_alive_heard(c) && !failing && fb_now() + g->limit_s > deadline)
            deadline = fb_now() + g->limit_s;
        if (st == FB_OK && fb_now() > deadline) {
            int first = 1;
            while (arrived[first])
                first++;
            char who[FB_HOST_MAX + 32];
            probe_rank_name(c, first, who, sizeof who);
            st = fb_fail(err, FB_ERR_TIMEOUT,
                         "%s did not answer while %s%s; check that host (process alive? network "
                         "up?) or raise --timeout",
                         who, g->what, left > 1 ? " (nor did other ranks)" : "");
        }
        if (st == FB_OK)
            backoff_pause(&b);
    }
    /* Receives still posted towards silent ranks are left to MPI_Abort,
     * which follows every failed gather. */
    free(reqs);
    free(idx);
    free(sts);
    return st;
}

/* Rank 0: one send per rank rather than a broadcast, so a rank that does
 * not take it (its process gone, its connection broken) is the one named,
 * not the root. */
static enum fb_status send_to_all(const struct probe_ctx *c, void *buf, int len, double limit_s,
                                  int *silent, struct fb_err *err)
{
    int n = c->w->size - 1;
    MPI_Request *reqs = malloc((size_t)(n > 0 ? n : 1) * sizeof *reqs);
    if (reqs == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    for (int r = 1; r <= n; r++)
        MPI_Isend(buf, len, MPI_BYTE, r, PROBE_TAG_VERDICT, c->comm, &reqs[r - 1]);
    double deadline = fb_now() + limit_s;
    enum fb_status st = FB_OK;
    for (int r = 1; r <= n && st == FB_OK; r++) {
        double left = deadline - fb_now();
        st = probe_wait(c, &reqs[r - 1], left > 0 ? left : 0, r, "taking rank 0's verdict", err);
        if (st != FB_OK)
            *silent = r;
    }
    /* Sends still pending towards a silent rank are left to MPI_Abort,
     * which follows every failed step. */
    free(reqs);
    return st;
}

enum fb_status probe_bcast(const struct probe_ctx *c, void *buf, int len, double limit_s,
                           const char *what, int *silent, struct fb_err *err)
{
    *silent = -1;
    if (c->w->rank == 0)
        return send_to_all(c, buf, len, limit_s, silent, err);
    MPI_Request req;
    MPI_Irecv(buf, len, MPI_BYTE, 0, PROBE_TAG_VERDICT, c->comm, &req);
    return probe_wait(c, &req, limit_s, 0, what, err);
}
