/* Which nodes test against which, round by round. Nodes are indices
 * 0..n-1; a round is a set of disjoint pairs that run at the same time.
 *
 *   all pairs    every pair once (circle method): n-1 rounds for n even, n
 *                for n odd (one node sits each round out)
 *   first pass   one random perfect matching; with racks, nodes are paired
 *                inside their rack first, so a slow pair points at a node
 *                rather than at the links between racks
 *   second pass  each suspect against a distinct known-good node (same rack
 *                first), as many rounds as the good nodes need to cover
 *                the suspects
 *
 * Pure functions of their inputs (the seed included): every rank computes
 * the same schedule, and tests check it without MPI. */
#ifndef FB_SCAN_PAIRING_H
#define FB_SCAN_PAIRING_H

#include <stdint.h>

struct scan_pair {
    int a, b; /* node indices, a < b */
};

/* Rounds of the all-pairs schedule for n nodes. */
int scan_all_pairs_rounds(int n);

/* Round r (0-based) of the all-pairs schedule; writes at most n/2 pairs,
 * returns how many. */
int scan_all_pairs_round(int n, int r, struct scan_pair *out);

/* The first pass: rack[i] is node i's rack index (NULL: one rack). Writes
 * n/2 pairs; the node left over when n is odd is *idle (else -1). */
int scan_first_pass(int n, const int *rack, uint64_t seed, struct scan_pair *out, int *idle);

/* One round of the second pass. suspect[i] and good[i] flag the nodes;
 * done[i] marks suspects already retested (set here for those paired).
 * Writes at most min(suspects left, good nodes) pairs, returns how many; 0
 * when every suspect is done or no good node exists. */
int scan_second_pass_round(int n, const int *rack, const unsigned char *suspect,
                           const unsigned char *good, unsigned char *done, struct scan_pair *out);

/* The schedule's size before it runs: rounds, tests and the largest round,
 * for the fast mode assuming `suspects` suspects after the first pass. */
struct scan_estimate {
    int rounds, tests, max_pairs;
};
struct scan_estimate scan_estimate_exhaustive(int n);
struct scan_estimate scan_estimate_fast(int n, int suspects);

#endif
