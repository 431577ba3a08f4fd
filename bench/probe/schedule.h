/* Which rank measures which, and when. A schedule is a list of rounds; the
 * links of one round run at the same time, rounds run one after another.
 *
 *   pairs      rank i -> rank i + N/2 (one round; N even)
 *   ring       rank i -> rank i + 1 mod N (one round)
 *   all-pairs  every pair of nodes once, no node in two pairs of a round
 *              (circle method: N-1 rounds for N even, N for N odd); a node
 *              pair runs one link per rail, local rank l -> local rank l,
 *              the lower node writing to the higher when their distance
 *              is odd, the higher to the lower when it is even (with 3 or
 *              more nodes every node both sends and receives).
 * Bidirectional adds the reverse of every link to the same round. */
#ifndef FB_PROBE_SCHEDULE_H
#define FB_PROBE_SCHEDULE_H

#include "core/status.h"

enum probe_pattern { PROBE_PATTERN_PAIRS, PROBE_PATTERN_RING, PROBE_PATTERN_ALL_PAIRS };

struct probe_link {
    int id;    /* index in schedule order */
    int round;
    int src, dst; /* ranks; src writes (rdma) or sends (tcp) */
};

struct probe_schedule {
    int nrounds, nlinks;
    struct probe_link *links; /* grouped by round, rounds in order */
    int *first;               /* links of round r: [first[r], first[r+1]) */
};

/* Where ranks sit: node index and local rank of every rank. */
struct probe_layout {
    int nranks, nnodes;
    const int *node_of;
    const int *local_of;
};

const char *probe_pattern_name(enum probe_pattern p);
/* 0 on success, -1 for an unknown name. */
int probe_pattern_parse(const char *name, enum probe_pattern *out);

/* Errors (FB_ERR_USAGE) name the launch that would fit: an odd rank count
 * for pairs, fewer than two ranks, fewer than two nodes or an uneven rank
 * count per node for all-pairs. */
enum fb_status probe_schedule_build(enum probe_pattern p, int bidirectional,
                                    const struct probe_layout *lay,
                                    struct probe_schedule *s, struct fb_err *err);
void probe_schedule_free(struct probe_schedule *s);

/* Largest number of link ends (as source or destination) any one rank has
 * in any round: how many buffer slots a rank needs. */
int probe_schedule_max_ends(const struct probe_schedule *s, int nranks);

/* How many links each rank sends on (sends[rank]) and receives on
 * (recvs[rank]) over the whole schedule: which paths the run measures. */
void probe_schedule_paths(const struct probe_schedule *s, int nranks, int *sends, int *recvs);

/* The same bound from the pattern alone, before the job's layout is known:
 * one end per rank, two in a ring, doubled by -b. */
int probe_pattern_max_ends(enum probe_pattern p, int bidirectional);

#endif
