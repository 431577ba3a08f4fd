#include "core/watchdog.h"
#include "core/world_env.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/watchdog_channel.h"

#define TICK_S 0.1
#define HEARTBEAT_S 1.0
#define STALE_S 3.5       /* three missed heartbeats: stopped, dead or cut off */
#define GRACE_S 5.0       /* how long other ranks leave rank 0 to act */
#define FIRST_CONTACT_S 30.0
#define LAST_WORD_S 1.0   /* how long a rank's "done" may take to leave */
#define LET_END_WAIT_S 10 /* how long the main thread leaves the thread to end the job */

extern char *program_invocation_short_name;

struct peer {
    double last_seen;
    int gone; /* its line closed */
    struct fb_wd_msg hb;
};

struct fb_watchdog {
    const struct fb_world *w;
    struct fb_wd_channel *ch;
    pthread_t thread;
    fb_fault_hook hook;
    void *ctx;
    sigset_t signals;
    atomic_int stop;
    atomic_int ending; /* the thread is ending the process: its code stands */

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
    int expired_rank;   /* rank 0: a rank that said its own deadline passed */
    int ordered_to_end; /* the other ranks: rank 0 said the job ends */
    struct peer *peers; /* rank 0 */
};

void fb_watchdog_let_end(struct fb_watchdog *wd)
{
    if (wd == NULL || !atomic_load(&wd->ending))
        return;
    /* The thread exits the process within a few writes; the bound only
     * keeps a main thread from waiting on a thread that cannot finish. A
     * signal cuts nanosleep short: the rest is slept again. */
    struct timespec left = {LET_END_WAIT_S, 0};
    while (nanosleep(&left, &left) != 0 && errno == EINTR)
        ;
}



double fb_watchdog_bound(double ops, double bytes, double floor_Bps)
{
    return FIRST_CONTACT_S + 4.0 * ops * bytes / floor_Bps;
}

static void snapshot(struct fb_watchdog *wd, struct fb_wd_msg *hb, double now)
{
    pthread_mutex_lock(&wd->lock);
    hb->kind = FB_WD_HEARTBEAT;
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
    struct fb_wd_msg hb = {0};
    snapshot(wd, &hb, now);
    hb.expired = expired;
    fb_wd_channel_send(wd->ch, &hb); /* not taken: rank 0 is not reading, which is the news */
}

/* What arrives on the channel: heartbeats at rank 0, the order to end at
 * the others. A closed line says nothing by itself: a killed rank is
 * Open MPI's to report, a stopped or cut-off one goes silent. */
static void on_message(void *ctx, int from, const struct fb_wd_msg *m)
{
    struct fb_watchdog *wd = ctx;
    if (wd->w->rank != 0) {
        wd->ordered_to_end |= m != NULL && m->kind == FB_WD_ABORT;
        return;
    }
    struct peer *p = &wd->peers[from];
    if (m == NULL) {
        p->gone = 1;
        return;
    }
    p->hb = *m;
    p->last_seen = fb_now();
    if (m->expired && wd->expired_rank < 0)
        wd->expired_rank = from;
}

static int is_done(const struct peer *p)
{
    return p->hb.kind == FB_WD_DONE;
}

/* Stopped, dead or cut off: three heartbeats missed, or its line closed
 * without a last word. */
static int is_silent(const struct peer *p, double now)
{
    return !is_done(p) && (p->gone || now - p->last_seen > STALE_S);
}

static void describe_rank(struct fb_watchdog *wd, int r, double now)
{
    const struct peer *p = &wd->peers[r];
    const char *prog = program_invocation_short_name;
    double silent = now - p->last_seen;
    if (is_done(p))
        return;
    if (is_silent(p, now))
        fprintf(stderr, "%s:   rank %d on %s: no heartbeat for %.0f s (stopped, killed or cut off)%s%s\n",
                prog, r, wd->w->hosts[r], silent, p->hb.what[0] ? "; last at " : "", p->hb.what);
    else
        fprintf(stderr, "%s:   rank %d on %s: alive, at %s (%s iteration %lld, %.0f s in)\n", prog, r,
                wd->w->hosts[r], p->hb.what[0] ? p->hb.what : "set-up", p->hb.phase,
                (long long)p->hb.iteration, p->hb.elapsed);
}

static int behind(const struct fb_wd_msg *a, const struct fb_wd_msg *b)
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
        if (is_done(p))
            continue;
        if (is_silent(p, now))
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
static const struct fb_wd_msg *silent_culprit_place(struct fb_watchdog *wd, double now,
                                                    int culprit)
{
    const struct fb_wd_msg *at = &wd->peers[culprit].hb;
    if (!is_silent(&wd->peers[culprit], now))
        return at;
    const struct fb_wd_msg *live = NULL;
    for (int r = 0; r < wd->w->size; r++) {
        const struct peer *p = &wd->peers[r];
        if (r == culprit || is_done(p) || is_silent(p, now))
            continue;
        if (live == NULL || behind(&p->hb, live))
            live = &p->hb;
    }
    return live != NULL && behind(at, live) ? live : at;
}

/* The main thread may sit in an MPI call that never returns, and MPI at
 * MPI_THREAD_SINGLE takes no call from this thread: the end goes through
 * the channel. Rank 0 orders the others to end (each runs its hook, so
 * NCCL communicators are aborted there too) and exits; the launcher sees
 * the timeout exit code and ends whatever is left (a stopped rank). */
static void end_job(struct fb_watchdog *wd)
{
    if (wd->w->rank == 0) {
        struct fb_wd_msg order = {.kind = FB_WD_ABORT, .rank = 0};
        fb_wd_channel_tell_all(wd->ch, &order);
    }
    fflush(stdout);
    fflush(stderr);
    _exit(FB_ERR_TIMEOUT);
}

/* Rank 0 said the job ends: it has said why and where. */
static void end_on_order(struct fb_watchdog *wd)
{
    atomic_store(&wd->ending, 1);
    if (wd->hook)
        wd->hook(wd->ctx, FB_ERR_TIMEOUT, "rank 0 ended the job: a wait did not complete within its bound");
    fflush(stdout);
    fflush(stderr);
    _exit(FB_ERR_TIMEOUT);
}

/* The one block a person reads after a hang, then the end of the job. */
static void report_and_abort(struct fb_watchdog *wd, double now, int culprit)
{
    const char *prog = program_invocation_short_name;
    char message[FB_HOST_MAX + 256], where[48] = "";
    atomic_store(&wd->ending, 1);
    struct fb_wd_msg me;
    snapshot(wd, &me, now);
    /* Rank 0 knows where the culprit is: that is the place to name. */
    const struct fb_wd_msg *at = wd->w->rank == 0 ? silent_culprit_place(wd, now, culprit) : &me;
    if (strcmp(at->phase, "start") != 0 && at->phase[0] != '\0')
        snprintf(where, sizeof where, " (%s iteration %lld)", at->phase, (long long)at->iteration);
    snprintf(message, sizeof message, "%s%s did not complete within %.0f s (rank %d on %s)",
             at->what[0] ? at->what : "set-up", where, wd->armed_for, culprit, wd->w->hosts[culprit]);
    fprintf(stderr, "%s: timeout: %s\n", prog, message);
    if (wd->w->rank == 0) {
        int silent = 0;
        for (int r = 0; r < wd->w->size; r++)
            silent += is_silent(&wd->peers[r], now);
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
    end_job(wd);
}

static void handle_signal(struct fb_watchdog *wd, int sig)
{
    enum fb_status code = sig == SIGINT ? FB_EXIT_SIGINT : FB_EXIT_SIGTERM;
    char message[FB_HOST_MAX + 64];
    atomic_store(&wd->ending, 1);
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

/* Under the env launch a peer's end (its own watchdog fired, or it was
 * told to end) fails this rank's NCCL call a moment before this rank's
 * watchdog sees the same wait expire; each process exits on its own, so
 * the first to exit would set the code. The failing call leaves this
 * rank's watchdog until its armed deadline and the grace other ranks give
 * rank 0 to end the job with its own code and report; a call failing with
 * nothing armed, or past that, ends the process as before. */
#define LET_END_POLL_NS 50000000L

static void let_end_hook(void *arg)
{
    struct fb_watchdog *wd = arg;
    double until = armed_deadline(wd);
    if (until > 0)
        until += GRACE_S + 1.0;
    while (!atomic_load(&wd->ending) && fb_now() < until)
        nanosleep(&(struct timespec){0, LET_END_POLL_NS}, NULL);
    fb_watchdog_let_end(wd);
}

static void check_deadlines(struct fb_watchdog *wd, double now)
{
    double deadline = armed_deadline(wd);
    int expired = deadline > 0 && now > deadline;
    if (now - wd->last_heartbeat >= HEARTBEAT_S || (expired && !wd->expired_sent)) {
        send_heartbeat(wd, now, expired);
        wd->last_heartbeat = now;
        wd->expired_sent |= expired;
    }
    if (wd->w->rank == 0) {
        if (expired)
            report_and_abort(wd, now, pick_culprit(wd, now, 0));
        if (wd->expired_rank > 0)
            report_and_abort(wd, now, pick_culprit(wd, now, wd->expired_rank));
    } else if (wd->ordered_to_end) {
        end_on_order(wd);
    } else if (expired && now > deadline + GRACE_S) {
        report_and_abort(wd, now, wd->w->rank);
    }
}

static void *watch(void *arg)
{
    struct fb_watchdog *wd = arg;
    const struct timespec now_only = {0, 0};
    while (!atomic_load(&wd->stop)) {
        fb_wd_channel_poll(wd->ch, TICK_S, on_message, wd);
        int sig = sigtimedwait(&wd->signals, NULL, &now_only);
        if (sig == SIGINT || sig == SIGTERM)
            handle_signal(wd, sig);
        check_deadlines(wd, fb_now());
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

static void watchdog_free(struct fb_watchdog *wd)
{
    fb_wd_channel_close(wd->ch);
    pthread_mutex_destroy(&wd->lock);
    free(wd->peers);
    free(wd);
}

enum fb_status fb_watchdog_start(struct fb_watchdog **out, const struct fb_world *w,
                                 fb_fault_hook hook, void *ctx, struct fb_err *err)
{
    *out = NULL;
    struct fb_watchdog *wd = calloc(1, sizeof *wd);
    if (wd == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    wd->w = w;
    wd->hook = hook;
    wd->ctx = ctx;
    wd->expired_rank = -1;
    pthread_mutex_init(&wd->lock, NULL);
    atomic_store(&wd->phase, "set-up");
    if (fb_wd_channel_open(&wd->ch, w, err) != FB_OK) {
        watchdog_free(wd);
        return err->code;
    }
    if (w->rank == 0) {
        wd->peers = calloc((size_t)w->size, sizeof *wd->peers);
        if (wd->peers == NULL) {
            watchdog_free(wd);
            return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
        }
        double now = fb_now();
        for (int r = 0; r < w->size; r++)
            wd->peers[r].last_seen = now;
    }
    signal_set(&wd->signals);
    pthread_sigmask(SIG_BLOCK, &wd->signals, NULL);
    if (pthread_create(&wd->thread, NULL, watch, wd) != 0) {
        watchdog_free(wd);
        return fb_fail(err, FB_ERR_INTERNAL, "cannot start the watchdog thread: %s", strerror(errno));
    }
    /* A coordination call that fails because this watchdog is ending the
     * job leaves the exit code and the report to it (the env launch). */
    if (w->nccl != NULL)
        fb_wn_on_fatal(w->nccl, let_end_hook, wd);
    *out = wd;
    return FB_OK;
}

void fb_watchdog_stop(struct fb_watchdog *wd)
{
    if (wd == NULL)
        return;
    if (wd->w->nccl != NULL)
        fb_wn_on_fatal(wd->w->nccl, NULL, NULL);
    atomic_store(&wd->stop, 1);
    pthread_join(wd->thread, NULL);
    if (wd->w->rank != 0) {
        /* Rank 0 may still be at work (writing results): it must not take
         * this rank's silence from now on for a stop. */
        struct fb_wd_msg last = {0};
        snapshot(wd, &last, fb_now());
        last.kind = FB_WD_DONE;
        fb_wd_channel_send_last(wd->ch, &last, LAST_WORD_S);
    }
    watchdog_free(wd);
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
