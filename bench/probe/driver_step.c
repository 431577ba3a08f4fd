/* The lockstep step: every rank reports, rank 0 records and decides, every
 * rank learns the verdict; and how the job ends when the verdict is a
 * failure. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/driver.h"

struct probe_verdict probe_verdict_of(const struct fb_err *err, int rank, int abort_job)
{
    struct probe_verdict v = {err->code, rank, abort_job, ""};
    snprintf(v.msg, sizeof v.msg, "%s", err->msg);
    return v;
}

static int timed_out(int code) { return code == FB_ERR_TIMEOUT; }

/* Picks the report that explains the failure best: a rank that is gone
 * beats everything (its peers' errors are its consequence), a named error
 * beats a timeout (the timeout is usually its consequence), then the
 * lowest rank. */
static void decide(const struct probe_report *all, const unsigned char *arrived, int n,
                   struct probe_verdict *v)
{
    memset(v, 0, sizeof *v);
    v->rank = -1;
    int lost = 0;
    for (int k = 0; k < n; k++) {
        const struct probe_report *r = &all[k];
        if (r->code == FB_OK)
            continue;
        v->abort_job |= timed_out(r->code);
        int gone = arrived[k] == PROBE_LOST;
        int better = v->code == FB_OK || (gone && !lost) ||
                     (!lost && timed_out(v->code) && !timed_out(r->code));
        lost |= gone;
        if (better) {
            v->code = r->code;
            v->rank = r->rank;
            snprintf(v->msg, sizeof v->msg, "%s", r->msg);
        }
    }
}

static int by_link(const void *x, const void *y)
{
    const struct probe_row *a = x, *b = y;
    return a->m.link - b->m.link;
}

/* Rank 0: rows of this step into the record, in link order, and the file
 * rewritten. */
static enum fb_status record_rows(struct probe_driver *d, const struct probe_report *all,
                                  int round, struct fb_err *err)
{
    int n = 0;
    for (int k = 0; k < d->w.size; k++)
        n += all[k].code == FB_OK ? all[k].n : 0;
    struct probe_row *rows = calloc((size_t)(n > 0 ? n : 1), sizeof *rows);
    if (rows == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory for %d result rows", n);
    n = 0;
    for (int k = 0; k < d->w.size; k++) {
        for (int i = 0; all[k].code == FB_OK && i < all[k].n; i++) {
            const struct probe_measure *m = &all[k].m[i];
            const struct probe_link *l = &d->sched.links[m->link];
            rows[n++] = (struct probe_row){round, l->src, l->dst, *m};
        }
    }
    qsort(rows, (size_t)n, sizeof *rows, by_link);
    enum fb_status st = FB_OK;
    for (int i = 0; i < n && st == FB_OK; i++) {
        st = probe_results_add(&d->res, &rows[i], err);
        if (st == FB_OK)
            probe_print_row(stdout, &d->res, &rows[i]);
    }
    free(rows);
    return st == FB_OK ? probe_results_save(&d->res, 0, err) : st;
}

static int report_failed(const void *rec)
{
    return ((const struct probe_report *)rec)->code != FB_OK;
}

/* Rank 0: stands in for ranks that never reported, so the verdict can
 * weigh their silence against the errors others named. `stopped`: a stop
 * signal ended the gather, so they were not waited for. */
static void fill_silent(struct probe_driver *d, struct probe_report *all,
                        const unsigned char *arrived, double limit_s, int stopped)
{
    for (int r = 1; r < d->w.size; r++) {
        if (arrived[r] == 1)
            continue;
        all[r] = (struct probe_report){.code = FB_ERR_TIMEOUT, .rank = r};
        if (arrived[r] == PROBE_LOST)
            snprintf(all[r].msg, sizeof all[r].msg,
                     "stopped answering: its MPI connection to rank 0 broke before it reported "
                     "(process killed, out of memory, host down?); check that host");
        else if (stopped)
            snprintf(all[r].msg, sizeof all[r].msg,
                     "rank %d (%s) had not reported when the job was stopped; if a process "
                     "died, the launcher's message names it", r, d->w.hosts[r]);
        else
            snprintf(all[r].msg, sizeof all[r].msg,
                     "rank %d (%s) did not report within %.0f s; check that host (process "
                     "alive? network up?) or raise --timeout", r, d->w.hosts[r], limit_s);
    }
}

/* Rank 0: every failure besides the one the verdict names goes into the
 * record's warnings; the second error often explains the first. */
static void note_other_failures(struct probe_driver *d, const struct probe_report *all,
                                const struct probe_verdict *v)
{
    for (int r = 0; d->have_results && r < d->w.size; r++) {
        if (all[r].code == FB_OK || r == v->rank)
            continue;
        char line[FB_ERR_MSG_MAX + FB_HOST_MAX + 32];
        snprintf(line, sizeof line, "rank %d (%s): %s", r, d->w.hosts[r], all[r].msg);
        probe_results_warn(&d->res, line);
    }
}

/* Rank 0: gathers every report, decides and records. Returns 1 when every
 * rank was heard from; `err` keeps a failure to record, which a failed
 * broadcast after it will not replace. */
static int hear_all(struct probe_driver *d, const struct probe_gather_spec *g,
                    const struct probe_report *mine, int round, struct probe_verdict *v,
                    struct fb_err *err)
{
    struct probe_report *all = calloc((size_t)d->w.size, sizeof *all);
    unsigned char *arrived = calloc((size_t)d->w.size, 1);
    if (all == NULL || arrived == NULL) {
        fprintf(stderr, "fabric-rdma: out of memory\n");
        MPI_Abort(d->w.comm, FB_ERR_INTERNAL);
    }
    enum fb_status heard = probe_gather(&d->c, g, mine, all, arrived, err);
    int stopped = heard == FB_EXIT_SIGINT || heard == FB_EXIT_SIGTERM;
    fill_silent(d, all, arrived, g->limit_s, stopped);
    decide(all, arrived, d->w.size, v);
    /* A stop signal that ended the gather is the verdict, as it is when it
     * lands while rank 0 measures (its own report): the ranks not heard
     * from yet were not waited for, so their silence is no timeout. A
     * failure another rank named still comes first. */
    if (stopped && (v->code == FB_OK || timed_out(v->code)))
        *v = probe_verdict_of(err, 0, v->abort_job);
    note_other_failures(d, all, v);
    fb_err_clear(err);
    if (round >= 0 && record_rows(d, all, round, err) != FB_OK && v->code == FB_OK)
        *v = probe_verdict_of(err, 0, 0);
    free(all);
    free(arrived);
    return heard == FB_OK;
}

int probe_driver_step(struct probe_driver *d, struct probe_report *mine, int round,
                      double limit_s, struct probe_verdict *v)
{
    struct fb_err err = {0};
    struct probe_gather_spec g = {sizeof *mine, limit_s, d->o.timeout, report_failed,
                                  "reporting to rank 0"};
    mine->rank = d->w.rank;
    memset(v, 0, sizeof *v);
    v->rank = -1;
    if (d->w.rank != 0 && probe_gather(&d->c, &g, mine, NULL, NULL, &err) != FB_OK) {
        *v = probe_verdict_of(&err, d->w.rank, 1);
        return 0;
    }
    if (d->w.rank == 0 && !hear_all(d, &g, mine, round, v, &err))
        return 0;
    /* Every rank has reported and waits for the verdict, so delivering it
     * takes rank 0 no time unless a rank stopped since: --timeout, as every
     * wait after a failure gets. Within that, rank 0 names the stopped rank
     * before the ranks already at the end handshake (3 x --timeout) name
     * rank 0. The others allow for rank 0's gather. */
    double bound = d->w.rank == 0 ? d->o.timeout : 2 * limit_s;
    int silent = -1;
    if (probe_bcast(&d->c, v, sizeof *v, bound, "waiting for rank 0's verdict", &silent, &err) ==
        FB_OK)
        return 1;
    if (d->w.rank != 0)
        *v = probe_verdict_of(&err, d->w.rank, 1);
    else if (v->code == FB_OK) /* the rank that did not take it is the one to look at */
        *v = probe_verdict_of(&err, silent > 0 ? silent : 0, 1);
    else
        v->abort_job = 1; /* the failure stands; the silent rank is likely its cause's host */
    return 0;
}

int probe_driver_end(struct probe_driver *d, const struct probe_verdict *v, int shared)
{
    char kept[PATH_MAX + 32] = "";
    if (d->w.rank == 0 && d->have_results) {
        struct fb_err ignored = {0};
        probe_results_fault(&d->res, (enum fb_status)v->code, v->msg, v->rank);
        if (probe_results_save(&d->res, 0, &ignored) == FB_OK)
            snprintf(kept, sizeof kept, " (measured so far: %s)", d->res.path);
    }
    if (d->w.rank == 0 && v->rank > 0)
        fprintf(stderr, "fabric-rdma: rank %d (%s): %s%s\n", v->rank, d->w.hosts[v->rank], v->msg,
                kept);
    else if (d->w.rank == 0)
        fprintf(stderr, "fabric-rdma: %s%s\n", v->msg, kept);
    else if (!shared && v->code != FB_EXIT_SIGINT && v->code != FB_EXIT_SIGTERM)
        /* A signal on another rank is the launcher tearing the job down:
         * rank 0 speaks for it. */
        fprintf(stderr, "fabric-rdma: rank %d (%s): %s\n", d->w.rank, d->w.host, v->msg);
    if (!shared || (v->abort_job && d->w.rank == 0)) {
        fflush(NULL);
        MPI_Abort(d->w.comm, v->code);
    }
    if (v->abort_job) /* rank 0 is ending the job with MPI_Abort */
        fb_world_await_abort(v->code);
    return v->code;
}
