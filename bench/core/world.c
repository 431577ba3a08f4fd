#include "core/world.h"

#include "core/coord.h"
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"

uint64_t fb_hash_bytes(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static int first_rank_on_host(const struct fb_world *w, int r)
{
    for (int q = 0; q < r; q++)
        if (strcmp(w->hosts[q], w->hosts[r]) == 0)
            return q;
    return r;
}

/* Node index = order of first appearance of the host name, so rank 0's host
 * is node 0 and every rank computes the same numbering. */
static void assign_nodes(struct fb_world *w)
{
    w->nodes = w->local_rank = w->local_size = 0;
    for (int r = 0; r < w->size; r++) {
        int same_host = strcmp(w->hosts[r], w->host) == 0;
        if (first_rank_on_host(w, r) == r) {
            if (same_host)
                w->node = w->nodes;
            w->nodes++;
        }
        if (same_host) {
            w->local_rank += r < w->rank;
            w->local_size++;
        }
    }
}

enum fb_status fb_world_init(struct fb_world *w, MPI_Comm comm, struct fb_err *err)
{
    memset(w, 0, sizeof *w);
    w->comm = comm;
    MPI_Comm_rank(comm, &w->rank);
    MPI_Comm_size(comm, &w->size);
    return fb_world_init_hosts(w, err);
}

enum fb_status fb_world_init_hosts(struct fb_world *w, struct fb_err *err)
{
    fb_hostname(w->host, sizeof w->host);
    w->hosts = calloc((size_t)w->size, sizeof *w->hosts);
    if (w->hosts == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory for %d host names", w->size);
    fb_coord_allgather(w, w->host, w->hosts, FB_HOST_MAX);
    assign_nodes(w);
    return FB_OK;
}

void fb_world_free(struct fb_world *w)
{
    free(w->hosts);
    w->hosts = NULL;
    if (w->owns_comm && w->nccl == NULL && w->comm != MPI_COMM_NULL)
        MPI_Comm_free(&w->comm);
    fb_coord_free(w);
    w->owns_comm = 0;
}

/* The group's node numbering, by first appearance of each host among its
 * ranks, as fb_world_init numbers the job's. */
static void assign_group_nodes(struct fb_world *g)
{
    g->nodes = 0;
    for (int r = 0; r < g->size; r++) {
        if (first_rank_on_host(g, r) != r)
            continue;
        if (strcmp(g->hosts[r], g->host) == 0)
            g->node = g->nodes;
        g->nodes++;
    }
}

enum fb_status fb_world_split(const struct fb_world *parent, int color, int key, struct fb_world *group,
                              struct fb_err *err)
{
    memset(group, 0, sizeof *group);
    group->comm = MPI_COMM_NULL;
    if (fb_coord_split(parent, color, key, group, err) != FB_OK)
        return err->code;
    group->owns_comm = 1;
    snprintf(group->host, sizeof group->host, "%s", parent->host);
    group->local_rank = parent->local_rank;
    group->local_size = parent->local_size;
    group->hosts = calloc((size_t)group->size, sizeof *group->hosts);
    if (group->hosts == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory for %d host names", group->size);
    fb_coord_allgather(group, group->host, group->hosts, FB_HOST_MAX);
    assign_group_nodes(group);
    return FB_OK;
}

enum fb_status fb_world_check_launcher(const struct fb_world *w, struct fb_err *err)
{
    const char *var = NULL;
    int intended = fb_launcher_world_size(&var);
    if (intended > w->size)
        return fb_fail(err, FB_ERR_LAUNCH,
                       "the launcher started %d ranks (%s=%d) but MPI sees %d: this binary's MPI "
                       "library is not the launcher's; rebuild fabric-bench with the mpicc that "
                       "matches this mpirun",
                       intended, var, intended, w->size);
    return FB_OK;
}

enum fb_status fb_world_check_same(const struct fb_world *w, uint64_t hash,
                                   const char *what, struct fb_err *err)
{
    uint64_t *all = malloc((size_t)w->size * sizeof *all);
    if (all == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    fb_coord_allgather(w, &hash, all, sizeof hash);
    /* The majority hash is "right"; with a tie, rank 0's. */
    uint64_t major = all[0];
    int best = 0;
    for (int i = 0; i < w->size; i++) {
        int c = 0;
        for (int j = 0; j < w->size; j++)
            c += all[j] == all[i];
        if (c > best) {
            best = c;
            major = all[i];
        }
    }
    char odd[512] = "";
    size_t used = 0;
    int n_odd = 0;
    for (int i = 0; i < w->size; i++) {
        if (all[i] == major)
            continue;
        if (n_odd < 4 && used < sizeof odd)
            used += (size_t)snprintf(odd + used, sizeof odd - used, "%s%d (%s)",
                                     n_odd ? ", " : "", i, w->hosts[i]);
        n_odd++;
    }
    free(all);
    if (n_odd == 0)
        return FB_OK;
    return fb_fail(err, FB_ERR_LAUNCH,
                   "ranks were started with different %s: rank%s %s%s differ%s from the other %d; "
                   "launch every rank with the same command line",
                   what, n_odd > 1 ? "s" : "", odd, n_odd > 4 ? ", ..." : "", n_odd > 1 ? "" : "s",
                   best);
}

_Noreturn void fb_world_await_abort(int code)
{
    fflush(NULL);
    sleep(60);
    _exit(code);
}

enum fb_status fb_world_agree(const struct fb_world *w, struct fb_err *err)
{
    int mine = (int)err->code;
    int worst = mine;
    fb_coord_allreduce(w, &worst, 1, FB_CDT_INT, FB_COP_MAX);
    if (worst == 0)
        return FB_OK;
    /* The lowest rank holding the worst code tells its story. */
    int cand = (mine == worst) ? w->rank : w->size;
    int teller = cand;
    fb_coord_allreduce(w, &teller, 1, FB_CDT_INT, FB_COP_MIN);
    if (teller != 0)
        fb_coord_to_rank0(w, err->msg, FB_ERR_MSG_MAX, teller);
    err->msg[FB_ERR_MSG_MAX - 1] = '\0';
    err->code = (enum fb_status)worst;
    if (w->rank != teller && w->rank != 0)
        err->msg[0] = '\0';
    return (enum fb_status)worst;
}

/* Tag of the end handshake: above every tag the programs use. */
#define END_TAG 32000

/* Polls `n` requests until all completed or the deadline passed; returns
 * the index of the first still pending, -1 when all completed. */
static int wait_all_until(int n, MPI_Request *req, double deadline)
{
    for (;;) {
        int pending = -1;
        for (int i = n - 1; i >= 0; i--) {
            int done = 1;
            if (req[i] != MPI_REQUEST_NULL && (MPI_Test(&req[i], &done, MPI_STATUS_IGNORE) != MPI_SUCCESS))
                done = 1; /* a broken connection: MPI_Finalize will not wait for that process */
            if (!done)
                pending = i;
        }
        if (pending < 0 || fb_now() > deadline)
            return pending;
        usleep(1000);
    }
}

static volatile sig_atomic_t end_code;

static void end_watchdog(int sig)
{
    (void)sig;
    _exit(end_code);
}

static _Noreturn void end_by_abort(MPI_Comm comm, int code)
{
    fflush(NULL);
    MPI_Abort(comm, code);
    _exit(code); /* MPI_Abort does not return; this keeps _Noreturn honest */
}

/* Everything measured is saved before the end: a stop signal from here on
 * (the launcher tearing the job down after rank 0's MPI_Abort) ends the
 * process at once, where a handler that only takes note would leave it
 * waiting out the handshake and naming rank 0 for the launcher's doing. */
static void stop_signals_end_process(void)
{
    sigset_t stops;
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    pthread_sigmask(SIG_UNBLOCK, &stops, NULL);
}

void fb_world_end(const struct fb_world *w, MPI_Comm comm, double limit_s, int code)
{
    int word = code, go = 1;
    double deadline = fb_now() + limit_s;
    fflush(NULL);
    stop_signals_end_process();
    if (w->rank != 0) {
        MPI_Request req[2];
        MPI_Isend(&word, 1, MPI_INT, 0, END_TAG, comm, &req[0]);
        MPI_Irecv(&go, 1, MPI_INT, 0, END_TAG, comm, &req[1]);
        /* Rank 0 may come to the end limit_s after this rank (its last
         * bounded wait, such as handing a verdict to a rank that stopped),
         * then hears everyone within limit_s and, if one is silent, ends
         * the job: a third limit_s lets that end reach this rank before it
         * would name rank 0. */
        if (wait_all_until(2, req, deadline + 2 * limit_s) >= 0) {
            fprintf(stderr, "fabric-bench: rank 0 (%s) did not answer at the end of the job within "
                    "%.0f s; ending it\n", w->hosts[0], 3 * limit_s);
            end_by_abort(comm, FB_ERR_TIMEOUT);
        }
    } else {
        int n = w->size - 1;
        MPI_Request *req = malloc((size_t)(n > 0 ? 2 * n : 1) * sizeof *req);
        int *words = malloc((size_t)(n > 0 ? n : 1) * sizeof *words);
        if (req == NULL || words == NULL)
            end_by_abort(comm, FB_ERR_INTERNAL);
        for (int r = 1; r <= n; r++)
            MPI_Irecv(&words[r - 1], 1, MPI_INT, r, END_TAG, comm, &req[r - 1]);
        int silent = wait_all_until(n, req, deadline);
        if (silent >= 0) {
            fprintf(stderr, "fabric-bench: rank %d (%s) did not reach the end of the job within %.0f s "
                    "after its last step (stopped or hung?); check that host. Everything measured "
                    "is kept; ending the job\n", silent + 1, w->hosts[silent + 1], limit_s);
            end_by_abort(comm, FB_ERR_TIMEOUT);
        }
        for (int r = 1; r <= n; r++)
            MPI_Isend(&go, 1, MPI_INT, r, END_TAG, comm, &req[n + r - 1]);
        if (wait_all_until(n, req + n, fb_now() + limit_s) >= 0)
            end_by_abort(comm, FB_ERR_TIMEOUT);
        free(req);
        free(words);
    }
    /* A rank may still stop between the answer and MPI_Finalize's own
     * exchange: the watchdog bounds that too. */
    end_code = code;
    signal(SIGALRM, end_watchdog);
    alarm((unsigned)limit_s + 1);
    MPI_Finalize();
    alarm(0);
}
