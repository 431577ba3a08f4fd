/* How one size is measured, whatever the transport: iterations or a
 * duration, the warm-up before the timed part, sampling, and how long
 * silence from the peer is tolerated. */
#ifndef FB_PROBE_SIZE_SPEC_H
#define FB_PROBE_SIZE_SPEC_H

#include <signal.h>
#include <stdint.h>

#include "core/status.h"

struct probe_size_spec {
    uint64_t size;       /* message bytes */
    uint64_t stride;     /* distance between per-QP/stream regions (largest size) */
    long iters;          /* timed messages per QP/stream; 0 selects duration mode */
    long warmup;         /* untimed messages per QP/stream before (iteration mode) */
    double duration;     /* timed seconds (duration mode) */
    double margin;       /* untimed seconds before (duration mode) */
    int cq_mod;          /* rdma: one signaled completion per cq_mod writes */
    int post_list;       /* rdma: writes chained per ibv_post_send */
    int tx_depth;        /* rdma: writes outstanding per QP */
    double interval;     /* first sample interval, seconds */
    double timeout;      /* seconds of silence before the peer is declared gone */
    const volatile sig_atomic_t *stop;
    /* Called when the transfers completed something: the word that the
     * measurement moves (probe_alive_progress); NULL: nobody listens. */
    void (*progress)(void *arg);
    void *progress_arg;
};

/* How long a sender may hear nothing before its peer counts as gone:
 * --timeout, plus the time the next completion's bytes take at the rate
 * measured so far (`done` bytes in `seconds`). A slow link with completions
 * moderated (one per -Q writes) completes seldom, and is still alive. */
double probe_silence_allowed(const struct probe_size_spec *r, double done, double seconds,
                             double bytes_per_completion);

/* Calls the spec's progress hook, if any. */
void probe_size_spec_progress(const struct probe_size_spec *r);

/* Slowest rate a wait for someone else's measurement allows before calling
 * it a hang: a link this slow is broken anyway. */
#define PROBE_FLOOR_GBPS 1.0

/* Upper bound of one size's run at PROBE_FLOOR_GBPS (and 1 ms per message),
 * for waits that cover another rank's measurement. */
double probe_size_spec_bound_s(const struct probe_size_spec *r, int lanes);

/* FB_EXIT_SIGINT or FB_EXIT_SIGTERM, with the message, once a stop signal
 * arrived (`stop` as in the spec); else FB_OK. Measurement loops call it. */
enum fb_status probe_stopped(const volatile sig_atomic_t *stop, struct fb_err *err);

struct probe_opts;

/* The spec the options give for `size`; `stop` is the signal flag long
 * loops watch. */
void probe_size_spec_for(const struct probe_opts *o, uint64_t size,
                         const volatile sig_atomic_t *stop, struct probe_size_spec *r);

#endif
