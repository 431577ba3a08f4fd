#include "core/watchdog.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"

#define TICK_S 0.1
#define HEARTBEAT_S 1.0
#define STALE_S 3.5       /* three missed heartbeats: stopped, dead or cut off */
#define GRACE_S 5.0       /* how long other ranks leave rank 0 to act */
#define FIRST_CONTACT_S 30.0
#define ABORT_BACKSTOP_S 5
#define TAG_HEARTBEAT 7301

extern char *program_invocation_short_name;

struct heartbeat {
    int32_t rank, done, expired, pad;
    int64_t step, iteration;
    int64_t ticks; /* fb_watchdog_tick calls since the step was armed */
    double elapsed; /* seconds since the step was armed */
    char phase[16];
    char what[96];
};

struct peer {
    double last_seen;
    struct heartbeat hb;
};

struct fb_watchdog {
    const struct fb_world *w;
    MPI_Comm comm;
    pthread_t thread;
    fb_fault_hook hook;
    void *ctx;
    sigset_t signals;
    atomic_int stop;

    pthread_mutex_t lock; /* guards the armed state below */
    double deadline, armed_at, armed_for;
    long step;
    char what[96];
    /* Ticked every iteration: atomics, no lock, no formatting. */
    atomic_long iteration, ticks;
    _Atomic(const char *) phase;

    /* owned by the thread */
    double last_heartbeat;
    int expired_sent;
    MPI_Request send_req;
    struct heartbeat send_buf;
    struct peer *peers;        /* rank 0 */
    MPI_Request *recv_req;     /* rank 0 */
    struct heartbeat *recv_buf; /* rank 0 */
};

double fb_watchdog_bound(double ops, double bytes, double floor_Bps)
{
    return FIRST_CONTACT_S + 4.0 * ops * bytes / floor_Bps;
}

static void snapshot(struct fb_watchdog *wd, struct heartbeat *hb, double now)
{
    pthread_mutex_lock(&wd->lock);
    hb->rank = wd->w->rank;
    hb->step = wd->step;
    hb->iteration = atomic_load(&wd->iteration);
    hb->ticks = atomic_load(&wd->ticks);
    hb->elapsed = wd->deadline > 0 ? now - wd->armed_at : 0;
    snprintf(hb->phase, sizeof hb->phase, "%s", atomic_load(&wd->phase));
    snprintf(hb->what, sizeof hb->what, "%s", wd->what);
    pthread_mutex_unlock(&wd->lock);
}

static void send_heartbeat(struct fb_watchdog *wd, double now, int expired)
{
    if (wd->w->rank == 0) {
        snapshot(wd, &wd->peers[0].hb, now);
        wd->peers[0].last_seen = now;
        return;
    }
    if (wd->send_req != MPI_REQUEST_NULL) {
        int done = 0;
        MPI_Test(&wd->send_req, &done, MPI_STATUS_IGNORE);
        if (!done)
            return; /* rank 0 is not taking them: that is the news */
    }
    snapshot(wd, &wd->send_buf, now);
    wd->send_buf.expired = expired;
    MPI_Isend(&wd->send_buf, sizeof wd->send_buf, MPI_BYTE, 0, TAG_HEARTBEAT, wd->comm, &wd->send_req);
}

/* Rank 0: take in every heartbeat that has arrived; returns a rank whose
 * own deadline has passed, or -1. */
static int poll_heartbeats(struct fb_watchdog *wd, double now)
{
    int expired_rank = -1;
    for (int r = 1; r < wd->w->size; r++) {
        int got = 1;
        while (got && wd->recv_req[r] != MPI_REQUEST_NULL) {
            MPI_Test(&wd->recv_req[r], &got, MPI_STATUS_IGNORE);
            if (!got)
                break;
            wd->peers[r].hb = wd->recv_buf[r];
            wd->peers[r].last_seen = now;
            if (wd->recv_buf[r].expired && expired_rank < 0)
                expired_rank = r;
            if (!wd->recv_buf[r].done)
                MPI_Irecv(&wd->recv_buf[r], sizeof wd->recv_buf[r], MPI_BYTE, r, TAG_HEARTBEAT,
                          wd->comm, &wd->recv_req[r]);
        }
    }
    return expired_rank;
}

static void describe_rank(struct fb_watchdog *wd, int r, double now)
{
    const struct peer *p = &wd->peers[r];
    const char *prog = program_invocation_short_name;
    double silent = now - p->last_seen;
    if (p->hb.done)
        return;
    if (silent > STALE_S)
        fprintf(stderr, "%s:   rank %d on %s: no heartbeat for %.0f s (stopped, killed or cut off)%s%s\n",
                prog, r, wd->w->hosts[r], silent, p->hb.what[0] ? "; last at " : "", p->hb.what);
    else
        fprintf(stderr, "%s:   rank %d on %s: alive, at %s (%s iteration %lld, %.0f s in)\n", prog, r,
                wd->w->hosts[r], p->hb.what[0] ? p->hb.what : "set-up", p->hb.phase,
                (long long)p->hb.iteration, p->hb.elapsed);
}

static int behind(const struct heartbeat *a, const struct heartbeat *b)
{
    return a->step < b->step || (a->step == b->step && a->ticks < b->ticks);
}

/* Rank 0: the rank a timeout is laid at. Every rank waits for the one
 * that stopped answering, else for the one furthest behind in the run (a
 * rank whose GPU stream never completes stays in its last wait while the
 * others go on to the next collective and wait there); `fallback` (the rank
 * whose deadline passed) when none is behind it. */
static int pick_culprit(struct fb_watchdog *wd, double now, int fallback)
{
    snapshot(wd, &wd->peers[0].hb, now);
    wd->peers[0].last_seen = now;
    int best = fallback;
    for (int r = 0; r < wd->w->size; r++) {
        const struct peer *p = &wd->peers[r];
        if (p->hb.done)
            continue;
        if (now - p->last_seen > STALE_S)
            return r;
        if (behind(&p->hb, &wd->peers[best].hb))
            best = r;
    }
    return best;
}

/* Where to say the job stopped. A rank that went silent last reported a
 * place up to a heartbeat (more on a loaded host) before it stopped, which
 * may be a step the others have long left (set-up, an earlier size); the
 * operation that did not complete is then the one the live ranks wait in:
 * the place of the live rank furthest behind, when the culprit is behind it. */
static const struct heartbeat *silent_culprit_place(struct fb_watchdog *wd, double now,
                                                    int culprit)
{
    const struct heartbeat *at = &wd->peers[culprit].hb;
    if (now - wd->peers[culprit].last_seen <= STALE_S)
        return at;
    const struct heartbeat *live = NULL;
    for (int r = 0; r < wd->w->size; r++) {
        const struct peer *p = &wd->peers[r];
        if (r == culprit || p->hb.done || now - p->last_seen > STALE_S)
            continue;
        if (live == NULL || behind(&p->hb, live))
            live = &p->hb;
    }
    return live != NULL && behind(at, live) ? live : at;
}

static void *exit_later(void *arg)
{
    (void)arg;
    sleep(ABORT_BACKSTOP_S);
    _exit(FB_ERR_TIMEOUT);
    return NULL;
}

/* The one block a person reads after a hang, then the end of the job. */
static void report_and_abort(struct fb_watchdog *wd, double now, int culprit)
{
    const char *prog = program_invocation_short_name;
    char message[FB_HOST_MAX + 256], where[48] = "";
    struct heartbeat me;
    snapshot(wd, &me, now);
    /* Rank 0 knows where the culprit is: that is the place to name. */
    const struct heartbeat *at = wd->w->rank == 0 ? silent_culprit_place(wd, now, culprit) : &me;
    if (strcmp(at->phase, "start") != 0 && at->phase[0] != '\0')
        snprintf(where, sizeof where, " (%s iteration %lld)", at->phase, (long long)at->iteration);
    snprintf(message, sizeof message, "%s%s did not complete within %.0f s (rank %d on %s)",
             at->what[0] ? at->what : "set-up", where, wd->armed_for, culprit, wd->w->hosts[culprit]);
    fprintf(stderr, "%s: timeout: %s\n", prog, message);
    if (wd->w->rank == 0) {
        int silent = 0;
        for (int r = 0; r < wd->w->size; r++)
            silent += !wd->peers[r].hb.done && now - wd->peers[r].last_seen > STALE_S;
        fprintf(stderr, "%s: where every rank is (%d not answering):\n", prog, silent);
        for (int r = 0; r < wd->w->size; r++)
            describe_rank(wd, r, now);
    } else {
        fprintf(stderr, "%s:   rank 0 on %s did not act on it: it may be stopped, dead or cut off\n",
                prog, wd->w->hosts[0]);
    }
    if (wd->hook)
        wd->hook(wd->ctx, FB_ERR_TIMEOUT, message);
    fprintf(stderr, "%s: stopping every rank (exit %d)\n", prog, FB_ERR_TIMEOUT);
    fflush(stderr);
    /* MPI_Abort waits on the launcher, which may itself wait on a host that
     * is cut off: this process ends within the bound regardless. */
    pthread_t backstop;
    if (pthread_create(&backstop, NULL, exit_later, NULL) == 0)
        pthread_detach(backstop);
    MPI_Abort(wd->w->comm, FB_ERR_TIMEOUT);
    _exit(FB_ERR_TIMEOUT);
}

static void handle_signal(struct fb_watchdog *wd, int sig)
{
    enum fb_status code = sig == SIGINT ? FB_EXIT_SIGINT : FB_EXIT_SIGTERM;
    char message[FB_HOST_MAX + 64];
    snprintf(message, sizeof message, "stopped by %s on rank %d (%s)", sig == SIGINT ? "SIGINT" : "SIGTERM",
             wd->w->rank, wd->w->host);
    if (wd->hook)
        wd->hook(wd->ctx, code, message);
    if (wd->w->rank == 0)
        fprintf(stderr, "%s: %s; finished sizes are kept\n", program_invocation_short_name, message);
    fflush(stdout);
    fflush(stderr);
    _exit(code);
}

static double armed_deadline(struct fb_watchdog *wd)
{
    pthread_mutex_lock(&wd->lock);
    double d = wd->deadline;
    pthread_mutex_unlock(&wd->lock);
    return d;
}

static void *watch(void *arg)
{
    struct fb_watchdog *wd = arg;
    struct timespec tick = {0, (long)(TICK_S * 1e9)};
    while (!atomic_load(&wd->stop)) {
        int sig = sigtimedwait(&wd->signals, NULL, &tick);
        if (sig == SIGINT || sig == SIGTERM)
            handle_signal(wd, sig);
        double now = fb_now();
        double deadline = armed_deadline(wd);
        int expired = deadline > 0 && now > deadline;
        if (now - wd->last_heartbeat >= HEARTBEAT_S || (expired && !wd->expired_sent)) {
            send_heartbeat(wd, now, expired);
            wd->last_heartbeat = now;
            wd->expired_sent |= expired;
        }
        if (wd->w->rank == 0) {
            int peer_expired = poll_heartbeats(wd, now);
            if (expired)
                report_and_abort(wd, now, pick_culprit(wd, now, 0));
            if (peer_expired > 0)
                report_and_abort(wd, now, pick_culprit(wd, now, peer_expired));
        } else if (expired && now > deadline + GRACE_S) {
            report_and_abort(wd, now, wd->w->rank);
        }
    }
    return NULL;
}

static void signal_set(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
}

void fb_signals_block(void)
{
    sigset_t set;
    signal_set(&set);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
}

void fb_signals_unblock(void)
{
    sigset_t set;
    signal_set(&set);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

enum fb_status fb_watchdog_start(struct fb_watchdog **out, const struct fb_world *w,
                                 fb_fault_hook hook, void *ctx, struct fb_err *err)
{
    *out = NULL;
    int provided = 0;
    MPI_Query_thread(&provided);
    if (provided < MPI_THREAD_MULTIPLE)
        return fb_fail(err, FB_ERR_UNAVAIL, "MPI does not provide MPI_THREAD_MULTIPLE: waits are not bounded");
    struct fb_watchdog *wd = calloc(1, sizeof *wd);
    if (wd == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    wd->w = w;
    wd->hook = hook;
    wd->ctx = ctx;
    wd->send_req = MPI_REQUEST_NULL;
    pthread_mutex_init(&wd->lock, NULL);
    atomic_store(&wd->phase, "set-up");
    MPI_Comm_dup(w->comm, &wd->comm);
    double now = fb_now();
    if (w->rank == 0) {
        wd->peers = calloc((size_t)w->size, sizeof *wd->peers);
        wd->recv_req = calloc((size_t)w->size, sizeof *wd->recv_req);
        wd->recv_buf = calloc((size_t)w->size, sizeof *wd->recv_buf);
        if (!wd->peers || !wd->recv_req || !wd->recv_buf)
            return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
        for (int r = 0; r < w->size; r++) {
            wd->peers[r].last_seen = now;
            wd->recv_req[r] = MPI_REQUEST_NULL;
            if (r > 0)
                MPI_Irecv(&wd->recv_buf[r], sizeof wd->recv_buf[r], MPI_BYTE, r, TAG_HEARTBEAT,
                          wd->comm, &wd->recv_req[r]);
        }
    }
    signal_set(&wd->signals);
    pthread_sigmask(SIG_BLOCK, &wd->signals, NULL);
    if (pthread_create(&wd->thread, NULL, watch, wd) != 0)
        return fb_fail(err, FB_ERR_INTERNAL, "cannot start the watchdog thread: %s", strerror(errno));
    *out = wd;
    return FB_OK;
}

/* Last heartbeat: every send matched before MPI_Finalize. */
static void drain(struct fb_watchdog *wd)
{
    if (wd->w->rank != 0) {
        if (wd->send_req != MPI_REQUEST_NULL)
            MPI_Wait(&wd->send_req, MPI_STATUS_IGNORE);
        struct heartbeat last = {.rank = wd->w->rank, .done = 1};
        MPI_Send(&last, sizeof last, MPI_BYTE, 0, TAG_HEARTBEAT, wd->comm);
        return;
    }
    for (int r = 1; r < wd->w->size; r++) {
        while (wd->recv_req[r] != MPI_REQUEST_NULL) {
            MPI_Wait(&wd->recv_req[r], MPI_STATUS_IGNORE);
            if (!wd->recv_buf[r].done)
                MPI_Irecv(&wd->recv_buf[r], sizeof wd->recv_buf[r], MPI_BYTE, r, TAG_HEARTBEAT,
                          wd->comm, &wd->recv_req[r]);
        }
    }
}

void fb_watchdog_stop(struct fb_watchdog *wd)
{
    if (wd == NULL)
        return;
    atomic_store(&wd->stop, 1);
    pthread_join(wd->thread, NULL);
    drain(wd);
    MPI_Comm_free(&wd->comm);
    pthread_mutex_destroy(&wd->lock);
    free(wd->peers);
    free(wd->recv_req);
    free(wd->recv_buf);
    free(wd);
}

void fb_watchdog_arm(struct fb_watchdog *wd, double seconds, long step, const char *what)
{
    if (wd == NULL)
        return;
    double now = fb_now();
    pthread_mutex_lock(&wd->lock);
    wd->armed_at = now;
    wd->armed_for = seconds;
    wd->deadline = now + seconds;
    wd->step = step;
    atomic_store(&wd->iteration, 0);
    atomic_store(&wd->ticks, 0);
    atomic_store(&wd->phase, "start");
    snprintf(wd->what, sizeof wd->what, "%s", what);
    pthread_mutex_unlock(&wd->lock);
}

void fb_watchdog_tick(struct fb_watchdog *wd, long iteration, const char *phase)
{
    if (wd == NULL)
        return;
    atomic_store_explicit(&wd->iteration, iteration, memory_order_relaxed);
    atomic_fetch_add_explicit(&wd->ticks, 1, memory_order_relaxed);
    atomic_store_explicit(&wd->phase, phase, memory_order_relaxed);
}

void fb_watchdog_disarm(struct fb_watchdog *wd)
{
    if (wd == NULL)
        return;
    pthread_mutex_lock(&wd->lock);
    wd->deadline = 0;
    pthread_mutex_unlock(&wd->lock);
}
