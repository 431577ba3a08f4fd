#include "scan/run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/world_env.h"

#define TAG_ORDER 11
#define TAG_REPORT 12
#define TAG_TESTS 1000
#define MAX_TEST_RANKS 128
/* Beyond the test's own bound: time for orders and reports to travel. */
#define SLACK_S 5.0

enum order_kind { ORDER_TEST, ORDER_IDLE, ORDER_STOP };

struct order {
    int32_t kind, round, tag, nranks;
    int32_t ranks[MAX_TEST_RANKS];
};

struct report_msg {
    int32_t round, status;
    double busbw, seconds;
    char error[SCAN_TEXT_MAX];
};

/* ---- what each rank of a test runs with ---------------------------------- */

static int is_nccl(const struct scan_run *r) { return strcmp(r->e.ops->name, "nccl") == 0; }

/* The ranks of local rank `l` of node a in the test of a and b (b < 0:
 * alone). MPI pairs rail with rail (local rank l with local rank l); NCCL
 * joins every GPU of both nodes. Ascending. */
static int test_ranks(const struct scan_run *r, int a, int b, int l, int32_t *out)
{
    const struct scan_layout *y = &r->l;
    int n = 0;
    if (!is_nccl(r)) {
        out[n++] = y->ranks[a * y->per_node + l];
        if (b >= 0)
            out[n++] = y->ranks[b * y->per_node + l];
    } else {
        for (int k = 0; k < y->per_node; k++)
            out[n++] = y->ranks[a * y->per_node + k];
        for (int k = 0; b >= 0 && k < y->per_node; k++)
            out[n++] = y->ranks[b * y->per_node + k];
    }
    for (int i = 1; i < n; i++) /* insertion sort: a handful of ranks */
        for (int j = i; j > 0 && out[j - 1] > out[j]; j--) {
            int32_t t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return n;
}

static void run_order(struct scan_run *r, const struct order *o, struct report_msg *rep)
{
    struct scan_report out;
    memset(rep, 0, sizeof *rep);
    rep->round = o->round;
    rep->busbw = -1;
    if (o->kind == ORDER_IDLE && r->e.ops->idle != NULL)
        r->e.ops->idle(&r->e, fb_now() + r->o.test_timeout);
    if (o->kind != ORDER_TEST)
        return;
    int ranks[MAX_TEST_RANKS];
    for (int i = 0; i < o->nranks; i++)
        ranks[i] = o->ranks[i];
    r->e.ops->test(&r->e, ranks, o->nranks, o->tag, &r->p, fb_now() + r->o.test_timeout, &out);
    rep->status = out.status;
    rep->busbw = out.busbw;
    rep->seconds = out.seconds;
    snprintf(rep->error, sizeof rep->error, "%s", out.error);
}

/* ---- orders and reports: MPI point-to-point, or the job's NCCL communicator */

/* 1 arrived, 0 not by the deadline, -1 failed (why in `why`). Under NCCL
 * a message that does not come leaves the communicator stuck behind it:
 * the waits after it fail by their deadlines too. */
static int recv_from(const struct scan_run *r, void *buf, size_t n, int peer, int tag, double deadline, char *why,
                     size_t len)
{
    if (r->w.nccl != NULL)
        return fb_wn_recv(r->w.nccl, buf, n, peer, deadline);
    MPI_Request req;
    MPI_Irecv(buf, (int)n, MPI_BYTE, peer, tag, r->w.comm, &req);
    return scan_wait_requests(1, &req, deadline, why, len);
}

static int send_to(const struct scan_run *r, const void *buf, size_t n, int peer, int tag, double deadline,
                   char *why, size_t len)
{
    if (r->w.nccl != NULL)
        return fb_wn_send(r->w.nccl, buf, n, peer, deadline);
    MPI_Request req;
    MPI_Isend(buf, (int)n, MPI_BYTE, peer, tag, r->w.comm, &req);
    return scan_wait_requests(1, &req, deadline, why, len);
}

/* ---- the other ranks: follow orders until told to stop -------------------- */

static double order_wait_s(const struct scan_run *r) { return 2 * r->o.test_timeout + 4 * SLACK_S; }

static enum fb_status follow_orders(struct scan_run *r, struct fb_err *err)
{
    for (;;) {
        struct order o;
        struct report_msg rep;
        char why[SCAN_TEXT_MAX] = "";
        if (recv_from(r, &o, sizeof o, 0, TAG_ORDER, fb_now() + order_wait_s(r), why, sizeof why) != 1)
            return fb_fail(err, FB_ERR_TIMEOUT,
                           "rank 0 (%s), the scan's coordinator, sent no order for %.0f s%s%s: it is lost "
                           "(killed, stopped or cut off); its results file holds the rounds it finished",
                           r->w.hosts[0], order_wait_s(r), why[0] ? ": " : "", why);
        if (o.kind == ORDER_STOP) {
            r->abandoned = o.round; /* rank 0 is about to MPI_Abort (stop_followers) */
            r->stop_code = o.tag;   /* rank 0's exit code, the env launch's own */
            return FB_OK;
        }
        run_order(r, &o, &rep);
        if (send_to(r, &rep, sizeof rep, 0, TAG_REPORT, fb_now() + order_wait_s(r), why, sizeof why) != 1)
            return fb_fail(err, FB_ERR_TIMEOUT, "rank 0 (%s), the scan's coordinator, took no report for %.0f s: it is lost "
                           "(killed, stopped or cut off); its results file holds the rounds it finished",
                           r->w.hosts[0], order_wait_s(r));
    }
}

/* ---- rank 0: one round ------------------------------------------------------ */

struct round_plan {
    int round;
    enum scan_pass pass;
    int npairs;
    const struct scan_pair *pairs; /* b = -1: alone */
};

static int node_lost(const struct scan_run *r, int x) { return r->nodes[x].lost_round >= 0; }

static struct scan_test *add_test(struct scan_run *r, int round, enum scan_pass pass, int a, int b)
{
    if (r->ntests == r->tests_cap) {
        int cap = r->tests_cap ? 2 * r->tests_cap : 64;
        struct scan_test *grown = realloc(r->tests, (size_t)cap * sizeof *grown);
        if (grown == NULL)
            return NULL;
        r->tests = grown;
        r->tests_cap = cap;
    }
    struct scan_test *t = &r->tests[r->ntests++];
    memset(t, 0, sizeof *t);
    *t = (struct scan_test){.round = round, .pass = pass, .a = a, .b = b, .status = SCAN_OK, .busbw = -1};
    return t;
}

/* Orders for every rank of every live node: the test its node is in this
 * round, else idle (which still proves it answers). test_of[x] is node x's
 * test index or -1. */
static void make_orders(const struct scan_run *r, const struct round_plan *plan, const int *test_of,
                        struct order *orders)
{
    const struct scan_layout *y = &r->l;
    for (int x = 0; x < y->nnodes; x++)
        for (int l = 0; l < y->per_node; l++) {
            struct order *o = &orders[y->ranks[x * y->per_node + l]];
            memset(o, 0, sizeof *o);
            o->round = plan->round;
            o->kind = ORDER_IDLE;
            if (test_of[x] < 0)
                continue;
            const struct scan_test *t = &r->tests[test_of[x]];
            o->kind = ORDER_TEST;
            o->tag = TAG_TESTS + plan->round % 30000;
            o->nranks = test_ranks(r, t->a, t->b, l, o->ranks);
        }
}

/* Folds one rank's report into its test: the slowest rail's figure, the
 * worst status, the first error. */
static void fold_report(struct scan_test *t, const struct report_msg *rep, int rank, const char *host)
{
    if (rep->status > (int)t->status) {
        t->status = (enum scan_status)rep->status;
        if (rep->error[0])
            snprintf(t->error, sizeof t->error, "rank %d (%s): %.200s", rank, host, rep->error);
    }
    if (rep->status == SCAN_OK && rep->busbw >= 0 && (t->busbw < 0 || rep->busbw < t->busbw))
        t->busbw = rep->busbw;
    if (rep->seconds > t->seconds)
        t->seconds = rep->seconds;
}

static void mark_lost(struct scan_run *r, int x, int round, struct scan_test *t)
{
    if (!node_lost(r, x)) {
        r->nodes[x].lost_round = round;
        fprintf(stderr, "fabric-scan: round %d: %s stopped answering (killed, stopped or cut off): failed; the scan goes on without it\n",
                round, r->l.host[x]);
    }
    r->abandoned = 1;
    if (t != NULL && t->status < SCAN_FAILED) {
        t->status = SCAN_FAILED;
        snprintf(t->error, sizeof t->error, "%s stopped answering", r->l.host[x]);
    }
}

/* Collects the reports of every live rank but rank 0 by the deadline.
 * Buffers of reports that never came are left allocated: the receive is
 * still posted. */
static void collect_reports(struct scan_run *r, const struct round_plan *plan, const int *test_of,
                            double deadline)
{
    const struct scan_layout *y = &r->l;
    int n = r->w.size;
    struct report_msg *reps = calloc((size_t)n, sizeof *reps);
    MPI_Request *req = malloc((size_t)n * sizeof *req);
    unsigned char *waiting = calloc((size_t)n, 1);
    if (reps == NULL || req == NULL || waiting == NULL) {
        free(reps), free(req), free(waiting);
        return;
    }
    for (int k = 0; k < n; k++)
        req[k] = MPI_REQUEST_NULL;
    for (int x = 0; x < y->nnodes; x++)
        for (int l = 0; l < y->per_node && !node_lost(r, x); l++) {
            int rank = y->ranks[x * y->per_node + l];
            if (rank != 0 && r->w.nccl != NULL) {
                waiting[rank] = 1; /* received in turn below */
            } else if (rank != 0) {
                MPI_Irecv(&reps[rank], sizeof reps[rank], MPI_BYTE, rank, TAG_REPORT, r->w.comm, &req[rank]);
                waiting[rank] = 1;
            }
        }
    char why[SCAN_TEXT_MAX];
    int all = 1;
    for (int k = 0; k < n; k++) {
        if (!waiting[k])
            continue;
        int x = y->node_of[k];
        struct scan_test *t = test_of[x] >= 0 ? &r->tests[test_of[x]] : NULL;
        int got = r->w.nccl != NULL ? fb_wn_recv(r->w.nccl, &reps[k], sizeof reps[k], k, deadline)
                                    : scan_wait_requests(1, &req[k], deadline, why, sizeof why);
        if (got == 1 && reps[k].round == plan->round) {
            if (t != NULL)
                fold_report(t, &reps[k], k, r->w.hosts[k]);
        } else {
            all = 0;
            mark_lost(r, x, plan->round, t);
        }
    }
    if (all)
        free(reps);
    free(req);
    free(waiting);
}

/* A test with a lost node failed whatever its other node saw. */
static void blame_lost(struct scan_run *r, const struct round_plan *plan)
{
    for (int i = 0; i < r->ntests; i++) {
        struct scan_test *t = &r->tests[i];
        if (t->round != plan->round)
            continue;
        if (t->status >= SCAN_FAILED)
            r->abandoned = 1;
        if (node_lost(r, t->a))
            mark_lost(r, t->a, plan->round, t);
        else if (t->b >= 0 && node_lost(r, t->b))
            mark_lost(r, t->b, plan->round, t);
    }
}

static const char *round_name(enum scan_pass p)
{
    static const char *const names[] = {"each node alone", "first pass", "second pass", "all pairs",
                                        "links confirmed"};
    return names[p];
}

static enum fb_status run_round(struct scan_run *r, const struct round_plan *plan, struct fb_err *err)
{
    const struct scan_layout *y = &r->l;
    int *test_of = malloc((size_t)y->nnodes * sizeof *test_of);
    struct order *orders = r->orders;
    if (test_of == NULL) {
        return fb_fail(err, FB_ERR_MEMORY, "out of memory for round %d", plan->round);
    }
    for (int x = 0; x < y->nnodes; x++)
        test_of[x] = -1;
    for (int i = 0; i < plan->npairs; i++) {
        const struct scan_pair *p = &plan->pairs[i];
        if (node_lost(r, p->a) || (p->b >= 0 && node_lost(r, p->b)))
            continue;
        if (add_test(r, plan->round, plan->pass, p->a, p->b) == NULL) {
            free(test_of);
            return fb_fail(err, FB_ERR_MEMORY, "out of memory for round %d", plan->round);
        }
        test_of[p->a] = r->ntests - 1;
        if (p->b >= 0)
            test_of[p->b] = r->ntests - 1;
    }
    make_orders(r, plan, test_of, orders);
    double start = fb_now();
    for (int k = 1; k < r->w.size; k++) {
        int x = y->node_of[k];
        if (!node_lost(r, x) && r->w.nccl != NULL) {
            fb_wn_send(r->w.nccl, &orders[k], sizeof orders[k], k, start + r->o.test_timeout); /* shows in the report */
        } else if (!node_lost(r, x)) {
            MPI_Request req;
            MPI_Isend(&orders[k], sizeof orders[k], MPI_BYTE, k, TAG_ORDER, r->w.comm, &req);
            MPI_Request_free(&req); /* completion shows in the report */
        }
    }
    struct report_msg mine;
    run_order(r, &orders[0], &mine);
    if (test_of[0] >= 0)
        fold_report(&r->tests[test_of[0]], &mine, 0, r->w.hosts[0]);
    collect_reports(r, plan, test_of, start + r->o.test_timeout + SLACK_S);
    blame_lost(r, plan);
    r->rounds_run++;
    r->next_round = plan->round + 1;
    fprintf(stderr, "fabric-scan: round %d (%s): %d test%s in %.1f s\n", plan->round, round_name(plan->pass),
            plan->npairs, plan->npairs == 1 ? "" : "s", fb_now() - start);
    free(test_of);
    return FB_OK;
}

/* ---- rank 0: the schedule -------------------------------------------------- */

static enum fb_status save_progress(struct scan_run *r, struct fb_err *err)
{
    scan_judgement_free(&r->j);
    const char **names = (const char **)r->l.host;
    if (scan_judge(r->tests, r->ntests, r->o.mode == SCAN_MODE_EXHAUSTIVE, r->o.threshold,
                   is_nccl(r), names, r->nodes, r->l.nnodes, &r->j) != 0)
        return fb_fail(err, FB_ERR_MEMORY, "out of memory judging the scan");
    return scan_results_write(r, 0, NULL, err);
}

static enum fb_status alone_round(struct scan_run *r, struct scan_pair *pairs, struct fb_err *err)
{
    int n = r->l.nnodes;
    if (r->o.no_alone)
        return FB_OK;
    if (is_nccl(r) && r->l.per_node < 2) {
        r->alone_skipped = 1; /* one GPU alone has no all_reduce to time */
        return FB_OK;
    }
    for (int x = 0; x < n; x++)
        pairs[x] = (struct scan_pair){x, -1};
    struct round_plan plan = {0, SCAN_PASS_ALONE, n, pairs};
    if (run_round(r, &plan, err) != FB_OK)
        return err->code;
    return save_progress(r, err);
}

static enum fb_status exhaustive_rounds(struct scan_run *r, struct scan_pair *pairs, struct fb_err *err)
{
    int n = r->l.nnodes;
    for (int k = 0; k < scan_all_pairs_rounds(n); k++) {
        struct round_plan plan = {k + 1, SCAN_PASS_ALL_PAIRS, scan_all_pairs_round(n, k, pairs), pairs};
        if (run_round(r, &plan, err) != FB_OK || save_progress(r, err) != FB_OK)
            return err->code;
    }
    return FB_OK;
}

/* After the first pass: suspects are the nodes of bad tests and the node
 * that sat out; good ones are the nodes of good tests still answering. */
static void split_first_pass(struct scan_run *r, unsigned char *suspect, unsigned char *good)
{
    int n = r->l.nnodes;
    memset(suspect, 0, (size_t)n);
    memset(good, 0, (size_t)n);
    for (int x = 0; x < n; x++)
        suspect[x] = !node_lost(r, x); /* until a good test says otherwise */
    for (int i = 0; i < r->ntests; i++) {
        const struct scan_test *t = &r->tests[i];
        if (t->pass != SCAN_PASS_FIRST || t->status != SCAN_OK)
            continue;
        good[t->a] = good[t->b] = 1;
        suspect[t->a] = suspect[t->b] = 0;
    }
    for (int x = 0; x < n; x++)
        if (node_lost(r, x))
            good[x] = 0;
}

static enum fb_status fast_rounds(struct scan_run *r, struct scan_pair *pairs, struct fb_err *err)
{
    int n = r->l.nnodes, idle;
    int np = scan_first_pass(n, r->l.rack, r->seed, pairs, &idle);
    if (np < 0)
        return fb_fail(err, FB_ERR_MEMORY, "out of memory pairing %d nodes", n);
    struct round_plan plan = {1, SCAN_PASS_FIRST, np, pairs};
    if (run_round(r, &plan, err) != FB_OK || save_progress(r, err) != FB_OK)
        return err->code;
    scan_classify(r->tests, r->ntests, r->o.threshold);
    unsigned char *suspect = malloc((size_t)n), *good = malloc((size_t)n), *done = calloc((size_t)n, 1);
    enum fb_status st = FB_OK;
    if (suspect == NULL || good == NULL || done == NULL)
        st = fb_fail(err, FB_ERR_MEMORY, "out of memory");
    if (st == FB_OK)
        split_first_pass(r, suspect, good);
    for (int round = 2; st == FB_OK; round++) {
        for (int x = 0; x < n; x++)
            good[x] = good[x] && !node_lost(r, x);
        int k = scan_second_pass_round(n, r->l.rack, suspect, good, done, pairs);
        if (k <= 0)
            break;
        struct round_plan second = {round, SCAN_PASS_SECOND, k, pairs};
        if (run_round(r, &second, err) != FB_OK || save_progress(r, err) != FB_OK)
            st = err->code;
    }
    free(suspect), free(good), free(done);
    return st;
}

/* The pairs of the candidate links not yet retested whose nodes are free
 * this round; marks them retested. */
static int confirm_round_pairs(const struct scan_run *r, const struct scan_link *cand, int ncand,
                               unsigned char *retested, unsigned char *busy, struct scan_pair *pairs)
{
    int np = 0;
    memset(busy, 0, (size_t)r->l.nnodes);
    for (int i = 0; i < ncand; i++) {
        int a = cand[i].a, b = cand[i].b;
        if (retested[i] || busy[a] || busy[b])
            continue;
        retested[i] = 1;
        if (node_lost(r, a) || node_lost(r, b))
            continue;
        busy[a] = busy[b] = 1;
        pairs[np++] = (struct scan_pair){a, b};
    }
    return np;
}

/* A bad test between two good nodes is named a link only when the pair is
 * bad again: one slow test among good ones is as often a hiccup of the
 * machines (a busy host, a burst of other traffic) as the cable. */
static enum fb_status confirm_links(struct scan_run *r, struct scan_pair *pairs, struct fb_err *err)
{
    if (save_progress(r, err) != FB_OK)
        return err->code;
    if (r->j.nlinks == 0)
        return FB_OK;
    int ncand = r->j.nlinks;
    struct scan_link *cand = malloc((size_t)ncand * sizeof *cand);
    unsigned char *retested = calloc((size_t)ncand, 1), *busy = malloc((size_t)r->l.nnodes);
    enum fb_status st = FB_OK;
    if (cand == NULL || retested == NULL || busy == NULL)
        st = fb_fail(err, FB_ERR_MEMORY, "out of memory confirming %d links", ncand);
    else
        memcpy(cand, r->j.links, (size_t)ncand * sizeof *cand);
    for (int np; st == FB_OK && (np = confirm_round_pairs(r, cand, ncand, retested, busy, pairs)) > 0;) {
        struct round_plan plan = {r->next_round, SCAN_PASS_CONFIRM, np, pairs};
        if (run_round(r, &plan, err) != FB_OK || save_progress(r, err) != FB_OK)
            st = err->code;
    }
    free(cand), free(retested), free(busy);
    return st;
}

/* The stop order's round says whether rank 0 ends the job with MPI_Abort
 * (a node lost, a test abandoned, or a code to hand to the shell): a
 * follower then waits for it instead of entering MPI_Finalize
 * (scan_run_end). Under MPI the sends are not waited for: the end
 * handshake (fb_world_end) hears from every follower within
 * --test-timeout and names one that stopped before it took its order,
 * or MPI_Abort ends them all. Waiting here, one follower at a time,
 * would hold rank 0 past the bound the followers give it at the end, and
 * they would name rank 0 for a follower's silence. */
static void stop_followers(struct scan_run *r, enum fb_status end)
{
    static struct order stop; /* outlives the sends: the process ends soon after */
    stop.kind = ORDER_STOP;
    stop.round = r->abandoned || end != FB_OK;
    stop.tag = (int32_t)end;
    for (int k = 1; k < r->w.size; k++) {
        int x = r->l.node_of[k];
        if (node_lost(r, x))
            continue;
        if (r->w.nccl != NULL) {
            char why[SCAN_TEXT_MAX];
            send_to(r, &stop, sizeof stop, k, TAG_ORDER, fb_now() + SLACK_S, why, sizeof why);
        } else {
            MPI_Request req;
            MPI_Isend(&stop, sizeof stop, MPI_BYTE, k, TAG_ORDER, r->w.comm, &req);
            MPI_Request_free(&req);
        }
    }
}

static enum fb_status coordinate(struct scan_run *r, struct fb_err *err)
{
    int n = r->l.nnodes;
    struct scan_pair *pairs = malloc((size_t)(n > 1 ? n : 2) * sizeof *pairs);
    r->nodes = calloc((size_t)n, sizeof *r->nodes);
    /* One order per rank, reused each round: a rank that reported has
     * received the last one, and a lost rank is sent no more. */
    r->orders = calloc((size_t)r->w.size, sizeof *r->orders);
    if (pairs == NULL || r->nodes == NULL || r->orders == NULL) {
        free(pairs);
        return fb_fail(err, FB_ERR_MEMORY, "out of memory for %d nodes", n);
    }
    for (int x = 0; x < n; x++)
        r->nodes[x].lost_round = -1;
    scan_print_estimate(r);
    enum fb_status st = scan_results_write(r, 0, NULL, err);
    if (st == FB_OK)
        st = alone_round(r, pairs, err);
    if (st == FB_OK)
        st = r->o.mode == SCAN_MODE_EXHAUSTIVE ? exhaustive_rounds(r, pairs, err) : fast_rounds(r, pairs, err);
    if (st == FB_OK)
        st = confirm_links(r, pairs, err);
    free(pairs);
    if (st != FB_OK)
        return st;
    if (save_progress(r, err) != FB_OK)
        return err->code;
    int suspects = r->j.slow + r->j.failed + r->j.nlinks > 0;
    if ((st = scan_results_write(r, 1, NULL, err)) != FB_OK)
        return st;
    scan_print_summary(r);
    enum fb_status end = suspects ? FB_SCAN_SUSPECTS : FB_OK;
    stop_followers(r, end);
    return end;
}

enum fb_status scan_run(struct scan_run *r, struct fb_err *err)
{
    if (r->l.nnodes < 2) {
        enum fb_status st = fb_fail(err, FB_ERR_USAGE, "all %d ranks run on one node (%s): a scan pairs nodes; "
                                    "launch across two or more (mpirun --map-by ppr:1:node)",
                                    r->w.size, r->l.host[0]);
        return st;
    }
    return r->w.rank == 0 ? coordinate(r, err) : follow_orders(r, err);
}

void scan_run_end(struct scan_run *r, enum fb_status st)
{
    fflush(stdout);
    fflush(stderr);
    if (r->w.nccl != NULL) /* the env launch: no MPI to end; a follower takes rank 0's code */
        exit(r->w.rank != 0 && r->abandoned && st == FB_OK ? r->stop_code : (int)st);
    if (r->w.rank == 0 && (r->abandoned || st != FB_OK)) {
        /* A stopped or half-finished rank would hold MPI_Finalize (and
         * mpirun) forever; MPI_Abort ends every process, stopped ones too.
         * It is also the one way the exit code reaches the shell: with
         * orte_abort_on_non_zero_status 0, which lets the scan outlive a
         * killed node, mpirun exits 0 whatever the ranks return. */
        MPI_Abort(r->w.comm, (int)st);
    }
    /* Rank 0 ends the job with MPI_Abort when it holds an error (set-up's
     * errors are agreed, so every rank holds it) or said so in its stop
     * order (seen for a refused node name: mpirun died, exit 139). */
    if (r->w.rank != 0 && (r->abandoned || st != FB_OK) && st != FB_ERR_TIMEOUT)
        fb_world_await_abort((int)st);
    if (st == FB_ERR_TIMEOUT) /* the coordinator is lost: MPI_Finalize would wait for it */
        MPI_Abort(r->w.comm, (int)st);
    /* Every rank healthy when last heard of; one may still have stopped
     * since its last test, which MPI_Finalize would wait for forever. */
    fb_world_end(&r->w, r->w.comm, r->o.test_timeout, (int)st);
}
