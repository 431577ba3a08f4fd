/* From the tests a scan ran to a verdict per node and per link.
 *
 * A test's figure is judged against the fleet: the median bus bandwidth of
 * every pair test that measured one (the upper median, so that with two
 * pairs the slower is judged against the faster). Below `threshold` times
 * it, the test is slow.
 *
 * A node's verdict:
 *   failed    it stopped answering the coordinator, or the test that
 *             decides it failed or timed out
 *   slow      the test that decides it is slow, or (NCCL) its own
 *             intra-node figure is below threshold x the fleet's
 *   untested  nothing decided it (its known-good partner was lost)
 *   pass      otherwise
 * What decides: in the fast mode, the second-pass test against a known-
 * good node when there is one, else the first-pass test; exhaustively, the
 * majority of its pair tests (a node whose tests are mostly bad is the
 * common factor; one bad pair among good ones is the link's).
 *
 * A link is suspect when a pair test is slow or failed, both of its nodes
 * pass, and its confirmation test (the same pair again, SCAN_PASS_CONFIRM)
 * is bad too, or was not run. Confirmation tests decide no node. */
#ifndef FB_SCAN_VERDICT_H
#define FB_SCAN_VERDICT_H

#include <stddef.h>

enum scan_pass { SCAN_PASS_ALONE, SCAN_PASS_FIRST, SCAN_PASS_SECOND, SCAN_PASS_ALL_PAIRS, SCAN_PASS_CONFIRM };
enum scan_status { SCAN_OK, SCAN_SLOW, SCAN_FAILED, SCAN_TIMEOUT };
enum scan_verdict { SCAN_NODE_PASS, SCAN_NODE_SLOW, SCAN_NODE_FAILED, SCAN_NODE_UNTESTED };

#define SCAN_TEXT_MAX 256

struct scan_test {
    int round;
    enum scan_pass pass;
    int a, b;         /* node indices; b = -1 for a node alone */
    enum scan_status status;
    double busbw;     /* GB/s, < 0 when nothing was measured */
    double seconds;   /* wall time of the test */
    char error[SCAN_TEXT_MAX];
};

struct scan_node {
    int lost_round;   /* round in which it stopped answering, -1 if never */
    enum scan_verdict verdict;
    double alone;     /* GB/s or < 0 */
    double best_pair; /* GB/s or < 0 */
    double ratio;     /* the deciding figure / the fleet median, < 0 if none */
    char reason[SCAN_TEXT_MAX * 2];
};

struct scan_link {
    int a, b;
    double busbw;
};

struct scan_judgement {
    double median_pair, median_alone; /* GB/s, < 0 when none */
    int nlinks;
    struct scan_link *links;          /* allocated; free with scan_judgement_free */
    int passed, slow, failed, untested;
};

const char *scan_pass_name(enum scan_pass p);
const char *scan_status_name(enum scan_status s);
const char *scan_verdict_name(enum scan_verdict v);

/* The upper median of the figures of `tests` of the given kind (alone or
 * pair), < 0 when none measured. */
double scan_median(const struct scan_test *tests, int ntests, int alone);

/* Sets the status of every measured test from the median: SLOW below
 * threshold x median, OK otherwise (FAILED and TIMEOUT stay). */
void scan_classify(struct scan_test *tests, int ntests, double threshold);

/* Judges every node (nodes[i].lost_round set by the caller) and collects
 * the suspect links. `names` are the nodes' hosts, for the reasons;
 * `judge_alone` makes a low intra-node figure a verdict (NCCL). -1 when
 * memory runs out. */
int scan_judge(struct scan_test *tests, int ntests, int exhaustive, double threshold, int judge_alone,
               const char *const *names, struct scan_node *nodes, int nnodes,
               struct scan_judgement *j);
void scan_judgement_free(struct scan_judgement *j);

#endif
