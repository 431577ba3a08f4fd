/* How much of a sweep to run: iteration counts that fit a time budget, and
 * the early stop when the fabric is plainly the TCP fallback, so a 16G sweep
 * over sockets does not crawl for minutes to confirm what 64M already said. */
#ifndef FB_COLL_PACING_H
#define FB_COLL_PACING_H

#include <stddef.h>
#include <stdint.h>

/* Fewest timed iterations a size gets under a budget: below this the mean
 * of a sample says little. */
#define FB_BUDGET_MIN_ITERS 2
/* Sizes below this never trigger the early stop: small messages are
 * latency-bound on every fabric. */
#define FB_FALLBACK_MIN_BYTES (64ULL << 20)

/* Timed iterations for the next size: an equal share of what is left of the
 * budget over the sizes left, divided by the calibrated cost of one
 * iteration of both placements; within [FB_BUDGET_MIN_ITERS, cap]. */
long fb_budget_iterations(double remaining_s, int sizes_left, double per_op_s, int placements,
                          long cap);

struct fb_fallback_rule {
    double band_GBps; /* busBW at or under this is the TCP-fallback band */
    int nodes;        /* a fallback needs more than one node */
};

/* 1 when the sweep should stop after this size; `reason` then reads
 * "TCP fallback suspected at 64M: 3.8 GB/s busBW on NET/Socket". */
int fb_fallback_suspected(const struct fb_fallback_rule *rule, uint64_t bytes, double busbw_GBps,
                          int socket_seen, const char *net, char *reason, size_t len);

/* Whether an NCCL INFO log shows a channel over NET/Socket. */
int fb_log_shows_socket(const char *path);

#endif
