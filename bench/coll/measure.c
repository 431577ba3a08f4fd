#include "coll/measure.h"
#include "core/coord.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"

struct fb_call fb_make_call(const struct fb_collective *coll, enum fb_dtype t, enum fb_redop op,
                            int root, uint64_t size, int in_place, int rank, int nranks,
                            enum fb_inplace_style style)
{
    struct fb_call c = {0};
    c.coll = coll;
    c.dtype = t;
    c.op = coll->reduces ? op : FB_SUM;
    c.root = coll->rooted ? root : 0;
    c.in_place = in_place;
    c.counts = coll->counts((size_t)size, fb_dtype_info(t)->size, nranks);
    if (in_place)
        coll->inplace_offsets(&c.counts, rank, style, &c.send_off, &c.recv_off);
    return c;
}

int fb_total_ranks(const struct fb_backend *be, const struct fb_world *w)
{
    return w->size * (be->local_ranks > 0 ? be->local_ranks : 1);
}

void fb_call_unalign(struct fb_call *c, size_t elements)
{
    c->send_off += elements;
    c->recv_off += elements;
}

long fb_percentile_index(long n, int pct)
{
    long rank = (n * pct + 99) / 100 - 1;
    return rank < n - 1 ? rank : n - 1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void fb_iter_stats_of(const double *times, long n, struct fb_iter_stats *out)
{
    *out = (struct fb_iter_stats){0};
    double *sorted = n > 0 ? malloc((size_t)n * sizeof *sorted) : NULL;
    if (sorted == NULL)
        return;
    memcpy(sorted, times, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_double);
    double sum = 0, var = 0;
    for (long i = 0; i < n; i++)
        sum += sorted[i];
    out->avg = sum / (double)n;
    for (long i = 0; i < n; i++)
        var += (sorted[i] - out->avg) * (sorted[i] - out->avg);
    out->min = sorted[0];
    out->max = sorted[n - 1];
    out->p50 = sorted[n / 2];
    out->p95 = sorted[fb_percentile_index(n, 95)];
    out->p99 = sorted[fb_percentile_index(n, 99)];
    out->stdev = sqrt(var / (double)n);
    out->cv_pct = out->avg > 0 ? out->stdev / out->avg * 100 : 0;
    free(sorted);
}

void fb_measurement_free(struct fb_measurement *m)
{
    free(m->iter.times_us);
    m->iter = (struct fb_per_iter){0};
}

const char *fb_time_reduction_name(enum fb_time_reduction r)
{
    static const char *const names[] = {"rank0", "mean", "min", "max"};
    return names[r];
}

/* The furthest one buffer can move a call whose span ends at `end`
 * bytes by steps of `stride`: how many placements fit in `cap`. */
static long placements(size_t cap, size_t end, size_t stride)
{
    if (stride == 0 || end > cap)
        return 1;
    return (long)((cap - end) / stride) + 1;
}

/* Call `index` of a timed or warm-up run starts `index % steps` spans into
 * its buffers, steps being as many spans as the buffers hold, as nccl-tests
 * moves its buffers every call (startColl, src/common.cu): mid sizes then
 * do not stay in a GPU's L2 cache, and a call that reads what an earlier
 * one still writes is caught. In place, both roles move in the receive
 * buffer by the larger span. Check iterations are call 0: no shift. */
static void shift_calls(const struct fb_backend *be, const struct fb_call *calls, long index,
                        struct fb_call *out)
{
    int n = be->local_ranks > 0 ? be->local_ranks : 1;
    for (int i = 0; i < n; i++) {
        const struct fb_call *c = &calls[i];
        size_t esz = fb_dtype_info(c->dtype)->size;
        size_t send_stride = c->in_place ? (c->counts.send > c->counts.recv ? c->counts.send : c->counts.recv)
                                         : c->counts.send;
        size_t recv_stride = c->in_place ? send_stride : c->counts.recv;
        long steps = placements(be->recv_cap, (c->recv_off + recv_stride) * esz, recv_stride * esz);
        if (!c->in_place) {
            long s = placements(be->send_cap, (c->send_off + send_stride) * esz, send_stride * esz);
            steps = s < steps ? s : steps;
        }
        size_t k = (size_t)(index % steps);
        out[i] = *c;
        out[i].send_off += k * send_stride;
        out[i].recv_off += k * recv_stride;
    }
}

/* Call `index` of this process's ranks, its buffers shifted. */
static enum fb_status run_call(struct fb_backend *be, const struct fb_call *calls, long index, struct fb_err *err)
{
    struct fb_call shifted[FB_LOCAL_RANKS_MAX];
    shift_calls(be, calls, index, shifted); /* no room (no buffers yet): no shift */
    return be->ops->run(be, shifted, err);
}

/* -m's calls of one iteration go to the library as one batch, as
 * nccl-tests groups them; a batch cannot be waited for inside, so -z 1
 * and -z 2 (a wait after every call) issue them one by one. */
static int batched(const struct fb_backend *be, const struct fb_timing *tm)
{
    return tm->agg > 1 && be->ops->batch_begin != NULL && tm->blocking != 1 && tm->blocking != 2;
}

/* Iteration `it`'s -m calls, each waited for (and met at a barrier) as
 * -z 1 and -z 2 ask. */
static enum fb_status run_iteration(struct fb_backend *be, const struct fb_world *w,
                                    const struct fb_timing *tm, const struct fb_call *calls, long it,
                                    struct fb_err *err)
{
    int batch = batched(be, tm);
    enum fb_status st = batch ? be->ops->batch_begin(be, calls, err) : FB_OK;
    for (long a = 0; a < tm->agg && st == FB_OK; a++) {
        st = run_call(be, calls, it * tm->agg + a, err);
        if (st == FB_OK && (tm->blocking == 1 || tm->blocking == 2))
            st = be->ops->wait(be, err);
        if (st == FB_OK && tm->blocking == 1)
            fb_coord_barrier(w);
    }
    if (batch) {
        enum fb_status end = be->ops->batch_end(be, err);
        st = st != FB_OK ? st : end;
    }
    return st;
}

/* `issued` (may be NULL) gets the clock when the last call is issued,
 * before the final wait: nccl-tests' CPU time (-C) ends there. */
static enum fb_status run_ops(struct fb_backend *be, const struct fb_world *w,
                              const struct fb_timing *tm, const struct fb_call *calls, long iters,
                              const char *phase, double *issued, struct fb_err *err)
{
    for (long it = 0; it < iters; it++) {
        fb_watchdog_tick(tm->wd, it, phase);
        enum fb_status st = run_iteration(be, w, tm, calls, it, err);
        if (st == FB_OK && tm->blocking == 3) {
            st = be->ops->wait(be, err);
            if (st == FB_OK)
                fb_coord_barrier(w);
        }
        if (st != FB_OK)
            return st;
    }
    if (issued != NULL)
        *issued = fb_now();
    fb_watchdog_tick(tm->wd, iters, phase);
    return be->ops->wait(be, err);
}

/* The calls of `iters` iterations captured into one graph per stream, as
 * nccl-tests -G captures its timed loop; the captures are ended whatever
 * happened, so that no stream is left capturing. */
static enum fb_status capture_iterations(struct fb_backend *be, const struct fb_world *w,
                                         const struct fb_timing *tm, const struct fb_call *calls, long iters,
                                         struct fb_err *err)
{
    enum fb_status st = be->ops->graph_begin(be, err);
    if (st != FB_OK)
        return st;
    for (long it = 0; it < iters && st == FB_OK; it++)
        st = run_iteration(be, w, tm, calls, it, err);
    struct fb_err end_err = {0};
    enum fb_status end = be->ops->graph_end(be, st == FB_OK ? err : &end_err);
    return st != FB_OK ? st : end;
}

/* -G: capture, instantiate, meet at a barrier (capture and instantiation
 * skew between ranks is not timed, as in nccl-tests), then time the
 * launches to their completion. */
static enum fb_status run_graphs(struct fb_backend *be, const struct fb_world *w, const struct fb_timing *tm,
                                 const struct fb_call *calls, double *seconds, struct fb_err *err)
{
    enum fb_status st = capture_iterations(be, w, tm, calls, tm->iters, err);
    fb_watchdog_tick(tm->wd, 0, "barrier");
    fb_coord_barrier(w); /* every rank, failed or not: the others wait here */
    double t0 = fb_now();
    fb_watchdog_tick(tm->wd, 0, "timed");
    if (st == FB_OK)
        st = be->ops->graph_launch(be, be->graph_launches, err);
    if (st == FB_OK)
        st = be->ops->wait(be, err);
    *seconds = fb_now() - t0;
    fb_watchdog_tick(tm->wd, tm->iters, "timed");
    be->ops->graph_free(be);
    return st;
}

/* The check iteration's call as it was measured: with -G through a graph
 * of its own (nccl-tests validates the captured graph, not a plain call). */
static enum fb_status run_checked_call(struct fb_backend *be, const struct fb_world *w, const struct fb_call *calls,
                                       struct fb_err *err)
{
    if (!(be->graph_launches > 0 && be->ops->graph_begin != NULL))
        return be->ops->run(be, calls, err);
    const struct fb_timing one = {.iters = 1, .agg = 1};
    enum fb_status st = capture_iterations(be, w, &one, calls, 1, err);
    if (st == FB_OK)
        st = be->ops->graph_launch(be, 1, err);
    if (st == FB_OK)
        st = be->ops->wait(be, err);
    be->ops->graph_free(be);
    return st;
}

/* -I 1 on a backend without its own clock (MPI, whose calls block) or
 * with -z 3: each iteration timed from its first call to its completion
 * (the barrier of -z 3 left out), per operation. */
static enum fb_status run_timed_per_iter(struct fb_backend *be, const struct fb_world *w,
                                         const struct fb_timing *tm, const struct fb_call *call,
                                         double *seconds, struct fb_err *err)
{
    for (long it = 0; it < tm->iters; it++) {
        fb_watchdog_tick(tm->wd, it, "timed");
        double t0 = fb_now();
        enum fb_status st = run_iteration(be, w, tm, call, it, err);
        if (st == FB_OK)
            st = be->ops->wait(be, err);
        if (st != FB_OK)
            return st;
        seconds[it] = (fb_now() - t0) / (double)tm->agg;
        if (tm->blocking == 3)
            fb_coord_barrier(w);
    }
    fb_watchdog_tick(tm->wd, tm->iters, "timed");
    return FB_OK;
}

/* -I 1 on a backend with its own clock: marks between the iterations,
 * which run as they would without -I; per operation. */
static enum fb_status run_timed_marked(struct fb_backend *be, const struct fb_world *w,
                                       const struct fb_timing *tm, const struct fb_call *call,
                                       double *seconds, struct fb_err *err)
{
    enum fb_status st = be->ops->marks(be, tm->iters, err);
    if (st == FB_OK)
        st = be->ops->mark(be, 0, err);
    for (long it = 0; st == FB_OK && it < tm->iters; it++) {
        fb_watchdog_tick(tm->wd, it, "timed");
        st = run_iteration(be, w, tm, call, it, err);
        if (st == FB_OK)
            st = be->ops->mark(be, it + 1, err);
    }
    fb_watchdog_tick(tm->wd, tm->iters, "timed");
    if (st == FB_OK)
        st = be->ops->wait(be, err);
    if (st == FB_OK)
        st = be->ops->spans(be, seconds, tm->iters, err);
    for (long it = 0; st == FB_OK && it < tm->iters; it++)
        seconds[it] /= (double)tm->agg;
    struct fb_err ignored = {0};
    be->ops->marks(be, 0, &ignored);
    return st;
}

/* Per iteration, the slowest rank's time, as nccl-tests reduces its
 * per-process rows (ReduceProcessMaxIterTimes, src/common.cu). */
static void reduce_per_iter(const struct fb_world *w, const struct fb_timing *tm, double *seconds,
                            struct fb_per_iter *out)
{
    fb_coord_allreduce(w, seconds, (int)tm->iters, FB_CDT_DOUBLE, FB_COP_MAX);
    for (long i = 0; i < tm->iters; i++)
        seconds[i] *= 1e6;
    out->times_us = seconds;
    out->n = tm->iters;
    /* Under --time-budget a size may get fewer iterations than -K skips. */
    out->skipped = tm->per_iter_skip < tm->iters ? tm->per_iter_skip : tm->iters - 1;
    fb_iter_stats_of(seconds + out->skipped, out->n - out->skipped, &out->stats);
}

static void reduce_time(const struct fb_world *w, double local_s, enum fb_time_reduction how,
                        struct fb_measurement *res)
{
    double sum = local_s, mn = local_s, mx = local_s, r0 = local_s;
    fb_coord_allreduce(w, &sum, 1, FB_CDT_DOUBLE, FB_COP_SUM);
    fb_coord_allreduce(w, &mn, 1, FB_CDT_DOUBLE, FB_COP_MIN);
    fb_coord_allreduce(w, &mx, 1, FB_CDT_DOUBLE, FB_COP_MAX);
    fb_coord_bcast(w, &r0, sizeof r0, 0);
    res->time_us_mean = sum / w->size * 1e6;
    res->time_us_min = mn * 1e6;
    res->time_us_max = mx * 1e6;
    switch (how) {
    case FB_TIME_RANK0: res->time_us = r0 * 1e6; break;
    case FB_TIME_MEAN: res->time_us = res->time_us_mean; break;
    case FB_TIME_MIN: res->time_us = res->time_us_min; break;
    case FB_TIME_MAX: res->time_us = res->time_us_max; break;
    }
}

/* Every local rank's input written, its output poisoned. */
static enum fb_status prepare_all(struct fb_backend *be, const struct fb_world *w, struct fb_checker *ck,
                                  const struct fb_call *calls, struct fb_err *err)
{
    int n = fb_total_ranks(be, w);
    enum fb_status st = FB_OK;
    for (int i = 0; i < be->local_ranks && st == FB_OK; i++)
        st = fb_prepare_call(ck, be, i, &calls[i], w->rank * be->local_ranks + i, n, err);
    return st;
}

/* Every local rank's output checked; `mm` keeps the first wrong one. */
static enum fb_status check_all(struct fb_backend *be, const struct fb_world *w, struct fb_checker *ck,
                                const struct fb_call *calls, struct fb_mismatch *mm, struct fb_err *err)
{
    int n = fb_total_ranks(be, w);
    uint64_t wrong = 0;
    *mm = (struct fb_mismatch){0};
    for (int i = 0; i < be->local_ranks; i++) {
        struct fb_mismatch one;
        enum fb_status st = fb_check_call(ck, be, i, &calls[i], w->rank * be->local_ranks + i, n, &one, err);
        if (st != FB_OK)
            return st;
        if (one.wrong > 0 && wrong == 0)
            *mm = one;
        wrong += one.wrong;
    }
    mm->wrong = wrong;
    return FB_OK;
}

static enum fb_status check_iterations(struct fb_backend *be, const struct fb_world *w,
                                       const struct fb_timing *tm, struct fb_checker *ck,
                                       const struct fb_call *calls, struct fb_mismatch *mm,
                                       int64_t *wrong_all, struct fb_err *err)
{
    uint64_t local = 0;
    for (long k = 0; k < tm->check; k++) {
        struct fb_mismatch this_round;
        fb_watchdog_tick(tm->wd, k, "check");
        enum fb_status st = prepare_all(be, w, ck, calls, err);
        if (st == FB_OK) {
            fb_coord_barrier(w);
            st = run_checked_call(be, w, calls, err);
        }
        if (st == FB_OK)
            st = be->ops->wait(be, err);
        if (st == FB_OK)
            st = check_all(be, w, ck, calls, &this_round, err);
        if (st != FB_OK)
            return st;
        if (this_round.wrong > 0 && local == 0)
            *mm = this_round;
        local += this_round.wrong;
    }
    fb_watchdog_tick(tm->wd, tm->check, "check");
    mm->wrong = local;
    uint64_t all = local;
    fb_coord_allreduce(w, &all, 1, FB_CDT_U64, FB_COP_SUM);
    *wrong_all = (int64_t)all;
    return FB_OK;
}

enum fb_status fb_measure(struct fb_backend *be, const struct fb_world *w,
                          const struct fb_timing *tm, struct fb_checker *ck,
                          const struct fb_call *calls, struct fb_measurement *res,
                          struct fb_mismatch *mm, struct fb_err *err)
{
    const struct fb_call *call = &calls[0];
    *res = (struct fb_measurement){0};
    *mm = (struct fb_mismatch){0};
    enum fb_status st = run_ops(be, w, tm, calls, tm->warmup, "warm-up", NULL, err);
    if (st != FB_OK)
        return st;
    fb_watchdog_tick(tm->wd, 0, "barrier");
    fb_coord_barrier(w);
    double t0 = fb_now(), elapsed = 0, issued = 0;
    long ops = tm->iters * tm->agg;
    int graphs = be->graph_launches > 0 && be->ops->graph_begin != NULL;
    double *iter_s = NULL;
    if (graphs) {
        st = run_graphs(be, w, tm, calls, &elapsed, err);
        issued = t0 + elapsed;
    } else if (tm->per_iter) {
        iter_s = calloc((size_t)tm->iters, sizeof *iter_s);
        if (iter_s == NULL)
            return fb_fail(err, FB_ERR_INTERNAL, "out of memory for %ld per-iteration times", tm->iters);
        /* -z 3 waits and meets at a barrier after every iteration anyway:
         * timing each to its completion leaves the barrier out. */
        if (be->ops->mark != NULL && tm->blocking != 3)
            st = run_timed_marked(be, w, tm, calls, iter_s, err);
        else
            st = run_timed_per_iter(be, w, tm, calls, iter_s, err);
        elapsed = fb_now() - t0;
        issued = t0 + elapsed;
    } else {
        st = run_ops(be, w, tm, calls, tm->iters, "timed", &issued, err);
        elapsed = fb_now() - t0;
    }
    if (st != FB_OK) {
        free(iter_s);
        return st;
    }
    double per_op = elapsed / (double)(ops * (graphs ? be->graph_launches : 1));
    /* Past this rank's last wait: a rank still stuck in it is behind. */
    fb_watchdog_tick(tm->wd, 0, "time reduction");
    reduce_time(w, per_op, tm->reduction, res);
    /* Per operation, not per graph replay, as nccl-tests divides it. */
    res->cpu_time_us = (issued - t0) / (double)ops * 1e6;
    if (iter_s != NULL)
        reduce_per_iter(w, tm, iter_s, &res->iter);
    double seconds = res->time_us * 1e-6;
    res->algbw_GBps = fb_coll_algbw_GBps(call->coll, call->counts.bytes, seconds, fb_total_ranks(be, w));
    res->busbw_GBps = fb_busbw_GBps(call->coll, call->counts.bytes, seconds, fb_total_ranks(be, w));
    res->wrong = -1;
    if (tm->check > 0 && !(call->in_place && call->coll->inplace_unchecked))
        st = check_iterations(be, w, tm, ck, calls, mm, &res->wrong, err);
    return st;
}

/* One call, timed on every rank; the slowest rank's time, on all ranks. */
static enum fb_status timed_call(struct fb_backend *be, const struct fb_world *w, const struct fb_call *calls,
                                 double *seconds, struct fb_err *err)
{
    fb_coord_barrier(w);
    double t0 = fb_now();
    enum fb_status st = be->ops->run(be, calls, err);
    if (st == FB_OK)
        st = be->ops->wait(be, err);
    if (st != FB_OK)
        return st;
    double mine = fb_now() - t0;
    *seconds = mine;
    fb_coord_allreduce(w, seconds, 1, FB_CDT_DOUBLE, FB_COP_MAX);
    return FB_OK;
}

/* A call is timed up to three times and the quickest kept: on a busy
 * machine one preemption stalls a call of microseconds for tens of
 * milliseconds, which would starve that size of iterations. Only a call of
 * 0.1 s or more is kept alone: a stall changes it by less than half, and a
 * second call would cost the budget as much again. (Stopping at 10 ms let
 * one stalled first call of 1K leave it 2 iterations.) Every rank holds the
 * same time, so all stop together. */
#define CALIBRATE_CALLS_MAX 3
#define CALIBRATE_LONG_S 0.1

enum fb_status fb_calibrate(struct fb_backend *be, const struct fb_world *w,
                            const struct fb_call *calls, double *seconds, struct fb_err *err)
{
    double best = 0;
    for (int i = 0; i < CALIBRATE_CALLS_MAX; i++) {
        double t = 0;
        enum fb_status st = timed_call(be, w, calls, &t, err);
        if (st != FB_OK)
            return st;
        best = i == 0 || t < best ? t : best;
        if (t >= CALIBRATE_LONG_S)
            break;
    }
    *seconds = best;
    return FB_OK;
}
