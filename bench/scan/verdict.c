#include "scan/verdict.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const pass_names[] = {"alone", "first", "second", "all-pairs", "confirm"};
static const char *const status_names[] = {"ok", "slow", "failed", "timeout"};
static const char *const verdict_names[] = {"pass", "slow", "failed", "untested"};

const char *scan_pass_name(enum scan_pass p) { return pass_names[p]; }
const char *scan_status_name(enum scan_status s) { return status_names[s]; }
const char *scan_verdict_name(enum scan_verdict v) { return verdict_names[v]; }

static int is_alone(const struct scan_test *t) { return t->b < 0; }
static int measured(const struct scan_test *t) { return t->busbw >= 0 && t->status <= SCAN_SLOW; }
static int bad(const struct scan_test *t) { return t->status != SCAN_OK; }

static int by_value(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

double scan_median(const struct scan_test *tests, int ntests, int alone)
{
    double *v = malloc((size_t)(ntests > 0 ? ntests : 1) * sizeof *v);
    int n = 0;
    double m = -1;
    if (v == NULL)
        return -1;
    for (int i = 0; i < ntests; i++)
        if (is_alone(&tests[i]) == alone && measured(&tests[i]))
            v[n++] = tests[i].busbw;
    if (n > 0) {
        qsort(v, (size_t)n, sizeof *v, by_value);
        m = v[n / 2];
    }
    free(v);
    return m;
}

void scan_classify(struct scan_test *tests, int ntests, double threshold)
{
    double pair = scan_median(tests, ntests, 0), alone = scan_median(tests, ntests, 1);
    for (int i = 0; i < ntests; i++) {
        struct scan_test *t = &tests[i];
        double m = is_alone(t) ? alone : pair;
        if (measured(t))
            t->status = t->busbw < threshold * m ? SCAN_SLOW : SCAN_OK;
    }
}

static int partner(const struct scan_test *t, int x) { return t->a == x ? t->b : t->a; }
static int involves(const struct scan_test *t, int x) { return !is_alone(t) && (t->a == x || t->b == x); }

/* "HOST: 0.41 GB/s, 0.09x the fleet median 4.6 GB/s" or "HOST: timeout (why)" */
static void describe_test(const struct scan_test *t, int x, double median, const char *const *names,
                          char *out, size_t len)
{
    const char *peer = names[partner(t, x)];
    if (measured(t) && median > 0)
        snprintf(out, len, "%s: %.3g GB/s, %.2fx the fleet median %.3g GB/s", peer, t->busbw,
                 t->busbw / median, median);
    else if (t->error[0])
        snprintf(out, len, "%.64s: %s (%.160s)", peer, scan_status_name(t->status), t->error);
    else
        snprintf(out, len, "%s: %s", peer, scan_status_name(t->status));
}

static enum scan_verdict verdict_of(const struct scan_test *t)
{
    if (t->status == SCAN_OK)
        return SCAN_NODE_PASS;
    return t->status == SCAN_SLOW ? SCAN_NODE_SLOW : SCAN_NODE_FAILED;
}

static const struct scan_test *find_test(const struct scan_test *tests, int ntests, int x,
                                         enum scan_pass pass)
{
    const struct scan_test *found = NULL;
    for (int i = 0; i < ntests; i++)
        if (tests[i].pass == pass && involves(&tests[i], x))
            found = &tests[i]; /* the latest */
    return found;
}

static int lost_before(const struct scan_node *nodes, int x, int round)
{
    return nodes[x].lost_round >= 0 && nodes[x].lost_round <= round;
}

/* Fast mode: a node good in the first pass passes; a suspect is decided by
 * its test against a known-good node, else by the first pass alone. */
static void judge_fast(const struct scan_test *tests, int ntests, double median,
                       const char *const *names, struct scan_node *nodes, int x)
{
    const struct scan_test *first = find_test(tests, ntests, x, SCAN_PASS_FIRST);
    const struct scan_test *second = NULL;
    struct scan_node *n = &nodes[x];
    char what[SCAN_TEXT_MAX];
    if (first != NULL && !bad(first)) {
        n->verdict = SCAN_NODE_PASS;
        n->ratio = median > 0 ? first->busbw / median : -1;
        return;
    }
    for (int i = 0; i < ntests; i++)
        if (tests[i].pass == SCAN_PASS_SECOND && involves(&tests[i], x))
            second = &tests[i];
    if (second != NULL && lost_before(nodes, partner(second, x), second->round)) {
        describe_test(second, x, median, names, what, sizeof what);
        n->verdict = SCAN_NODE_UNTESTED;
        snprintf(n->reason, sizeof n->reason, "its known-good partner was lost (%.200s)", what);
        return;
    }
    const struct scan_test *decides = second != NULL ? second : first;
    if (decides == NULL) {
        n->verdict = SCAN_NODE_UNTESTED;
        snprintf(n->reason, sizeof n->reason, "no known-good node was left to test it against");
        return;
    }
    n->verdict = verdict_of(decides);
    n->ratio = measured(decides) && median > 0 ? decides->busbw / median : -1;
    describe_test(decides, x, median, names, what, sizeof what);
    if (second != NULL && first != NULL) {
        char earlier[SCAN_TEXT_MAX];
        describe_test(first, x, median, names, earlier, sizeof earlier);
        snprintf(n->reason, sizeof n->reason, "%s with known-good %.200s; first pass with %.200s",
                 decides->status == SCAN_OK ? "cleared" : scan_verdict_name(n->verdict), what, earlier);
    } else if (second != NULL) {
        snprintf(n->reason, sizeof n->reason, "%s with known-good %.200s",
                 decides->status == SCAN_OK ? "cleared" : scan_verdict_name(n->verdict), what);
    } else {
        snprintf(n->reason, sizeof n->reason, "first pass with %.200s (no known-good node left to isolate it)", what);
    }
    if (n->verdict == SCAN_NODE_PASS && second == NULL)
        n->reason[0] = '\0';
}

/* Exhaustive: the majority of a node's tests with nodes still answering. */
static void judge_exhaustive(const struct scan_test *tests, int ntests, double median,
                             const char *const *names, struct scan_node *nodes, int x)
{
    int ntest = 0, nslow = 0, nfail = 0, nfig = 0;
    double *figures = malloc((size_t)(ntests > 0 ? ntests : 1) * sizeof *figures);
    const struct scan_test *example = NULL;
    struct scan_node *n = &nodes[x];
    for (int i = 0; i < ntests; i++) {
        const struct scan_test *t = &tests[i];
        if (!involves(t, x) || t->pass == SCAN_PASS_CONFIRM || lost_before(nodes, partner(t, x), t->round))
            continue;
        ntest++;
        nslow += t->status == SCAN_SLOW;
        nfail += t->status >= SCAN_FAILED;
        if (bad(t) && example == NULL)
            example = t;
        if (measured(t) && figures != NULL)
            figures[nfig++] = t->busbw;
    }
    if (nfig > 0) {
        qsort(figures, (size_t)nfig, sizeof figures[0], by_value);
        n->ratio = median > 0 ? figures[nfig / 2] / median : -1;
    }
    free(figures);
    if (ntest == 0) {
        n->verdict = SCAN_NODE_UNTESTED;
        snprintf(n->reason, sizeof n->reason, "no test with a node still answering");
        return;
    }
    if (2 * (nslow + nfail) <= ntest) {
        n->verdict = SCAN_NODE_PASS;
        return;
    }
    char what[SCAN_TEXT_MAX];
    describe_test(example, x, median, names, what, sizeof what);
    n->verdict = nfail > nslow ? SCAN_NODE_FAILED : SCAN_NODE_SLOW;
    snprintf(n->reason, sizeof n->reason, "%d of %d pair tests %s (%d slow, %d failed); e.g. with %.200s",
             nslow + nfail, ntest, n->verdict == SCAN_NODE_FAILED ? "failed" : "bad", nslow, nfail, what);
}

/* A lost node; when its partner of that round was lost with it, the
 * reason says so: one of the two may have taken the other down (on host
 * memory Open MPI ends a process whose peer dies in mid-transfer). */
static void describe_loss(const struct scan_test *tests, int ntests, const char *const *names,
                          struct scan_node *nodes, int x)
{
    struct scan_node *n = &nodes[x];
    const char *with = NULL;
    for (int i = 0; i < ntests && with == NULL; i++) {
        const struct scan_test *t = &tests[i];
        if (t->round == n->lost_round && involves(t, x) && nodes[partner(t, x)].lost_round == n->lost_round)
            with = names[partner(t, x)];
    }
    n->verdict = SCAN_NODE_FAILED;
    if (with != NULL)
        snprintf(n->reason, sizeof n->reason,
                 "stopped answering the coordinator in round %d together with %.64s, its partner in that round "
                 "(killed, stopped or cut off; one of the two may have taken the other down)",
                 n->lost_round, with);
    else
        snprintf(n->reason, sizeof n->reason,
                 "stopped answering the coordinator in round %d (killed, stopped or cut off)", n->lost_round);
}

static void judge_alone_figure(const struct scan_test *t, double median_alone, double threshold,
                               struct scan_node *n)
{
    if (t == NULL || !measured(t) || median_alone <= 0 || t->busbw >= threshold * median_alone ||
        n->verdict != SCAN_NODE_PASS)
        return;
    n->verdict = SCAN_NODE_SLOW;
    snprintf(n->reason, sizeof n->reason, "its own intra-node figure %.3g GB/s is %.2fx the fleet's %.3g GB/s",
             t->busbw, t->busbw / median_alone, median_alone);
}

static void fill_figures(const struct scan_test *tests, int ntests, struct scan_node *n, int x)
{
    n->alone = n->best_pair = -1;
    for (int i = 0; i < ntests; i++) {
        const struct scan_test *t = &tests[i];
        if (!measured(t))
            continue;
        if (is_alone(t) && t->a == x)
            n->alone = t->busbw;
        else if (involves(t, x) && t->busbw > n->best_pair)
            n->best_pair = t->busbw;
    }
}

/* The confirmation test of t's pair, NULL when none ran. */
static const struct scan_test *confirmation(const struct scan_test *tests, int ntests, const struct scan_test *t)
{
    for (int i = 0; i < ntests; i++)
        if (tests[i].pass == SCAN_PASS_CONFIRM && tests[i].a == t->a && tests[i].b == t->b)
            return &tests[i];
    return NULL;
}

static int collect_links(const struct scan_test *tests, int ntests, const struct scan_node *nodes,
                         struct scan_judgement *j)
{
    for (int i = 0; i < ntests; i++) {
        const struct scan_test *t = &tests[i];
        if (is_alone(t) || !bad(t) || t->pass == SCAN_PASS_CONFIRM || nodes[t->a].verdict != SCAN_NODE_PASS ||
            nodes[t->b].verdict != SCAN_NODE_PASS)
            continue;
        const struct scan_test *again = confirmation(tests, ntests, t);
        if (again != NULL && !bad(again))
            continue; /* good the second time: a passing hiccup, not the link */
        struct scan_link *grown = realloc(j->links, (size_t)(j->nlinks + 1) * sizeof *grown);
        if (grown == NULL)
            return -1;
        j->links = grown;
        j->links[j->nlinks++] = (struct scan_link){t->a, t->b, measured(t) ? t->busbw : -1};
    }
    return 0;
}

int scan_judge(struct scan_test *tests, int ntests, int exhaustive, double threshold, int judge_alone,
               const char *const *names, struct scan_node *nodes, int nnodes,
               struct scan_judgement *j)
{
    memset(j, 0, sizeof *j);
    scan_classify(tests, ntests, threshold);
    j->median_pair = scan_median(tests, ntests, 0);
    j->median_alone = scan_median(tests, ntests, 1);
    for (int x = 0; x < nnodes; x++) {
        struct scan_node *n = &nodes[x];
        n->reason[0] = '\0';
        n->ratio = -1;
        fill_figures(tests, ntests, n, x);
        if (n->lost_round >= 0) {
            describe_loss(tests, ntests, names, nodes, x);
        } else if (exhaustive) {
            judge_exhaustive(tests, ntests, j->median_pair, names, nodes, x);
        } else {
            judge_fast(tests, ntests, j->median_pair, names, nodes, x);
        }
        if (judge_alone)
            for (int i = 0; i < ntests; i++)
                if (is_alone(&tests[i]) && tests[i].a == x)
                    judge_alone_figure(&tests[i], j->median_alone, threshold, n);
        j->passed += n->verdict == SCAN_NODE_PASS;
        j->slow += n->verdict == SCAN_NODE_SLOW;
        j->failed += n->verdict == SCAN_NODE_FAILED;
        j->untested += n->verdict == SCAN_NODE_UNTESTED;
    }
    return collect_links(tests, ntests, nodes, j);
}

void scan_judgement_free(struct scan_judgement *j)
{
    free(j->links);
    j->links = NULL;
    j->nlinks = 0;
}
