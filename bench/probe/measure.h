/* One link's measurement at one size: bytes over time, per-interval
 * samples, latency percentiles, and the arithmetic that turns them into
 * Gb/s and GB/s. Plain data (no pointers), so it travels to rank 0 as bytes
 * between ranks of the same binary. */
#ifndef FB_PROBE_MEASURE_H
#define FB_PROBE_MEASURE_H

#include <stdint.h>

#define PROBE_SAMPLES_MAX 64

/* Samples partition a run into consecutive intervals: each closes at the
 * first event at least `interval` after it opened. When the table fills,
 * neighbours merge and the interval doubles, so any run length fits in
 * PROBE_SAMPLES_MAX samples spread over all of it. */
struct probe_samples {
    double t0;        /* run start (monotonic seconds) */
    double interval;  /* current interval, grows by doubling */
    double open_at;   /* start of the open interval */
    double open_bytes;
    int n;
    double start_s[PROBE_SAMPLES_MAX]; /* from t0 */
    double dur_s[PROBE_SAMPLES_MAX];
    double bytes[PROBE_SAMPLES_MAX];
};

void probe_samples_init(struct probe_samples *s, double t0, double interval);
/* `bytes` finished at monotonic time `now` (since the previous event). */
void probe_samples_add(struct probe_samples *s, double now, double bytes);
/* Closes the open interval at `t_end`. */
void probe_samples_finish(struct probe_samples *s, double t_end);
/* Best sample in Gb/s among those at least half the final interval long
 * (a short tail says little); `fallback` when none is. */
double probe_samples_peak_gbps(const struct probe_samples *s, double fallback);

struct probe_latency {
    int valid;
    double min_us, p50_us, avg_us, p99_us, max_us; /* one-way: round trip / 2 */
};

struct probe_measure {
    int link;            /* schedule link id */
    int status;          /* enum fb_status of this link's run */
    uint64_t size;       /* message bytes */
    uint64_t messages;   /* timed messages over all QPs/streams */
    double bytes;        /* timed bytes delivered */
    double seconds;      /* timed window */
    struct probe_samples samples;
    struct probe_latency lat;
};

/* A link's measurement at one size, emptied; its samples start at the
 * first timed transfer (probe_samples_init). */
void probe_measure_open(struct probe_measure *m, int link, uint64_t size);
/* Closes it: `bytes` (`messages` of them) timed from t_first to t_last. */
void probe_measure_close(struct probe_measure *m, double bytes, uint64_t messages, double t_first, double t_last);

double probe_gbps(double bytes, double seconds);  /* 1e9 bits per second */
double probe_gBps(double bytes, double seconds);  /* 1e9 bytes per second */
double probe_mpps(double messages, double seconds);

/* Fills lat from `n` round-trip times in seconds (sorts them in place). */
void probe_latency_from_rtts(double *rtt_s, long n, struct probe_latency *lat);

/* The round-trip times a latency initiator collects, in seconds (rank
 * local: never sent). */
struct probe_rtt_log {
    double *v;
    long n, cap;
};

/* Room for `cap` times before the first; -1 when out of memory. */
int probe_rtt_reserve(struct probe_rtt_log *log, long cap);
/* Appends one, doubling the room when it is full; -1 when out of memory. */
int probe_rtt_push(struct probe_rtt_log *log, double rtt_s);
void probe_rtt_free(struct probe_rtt_log *log);

/* The initiator's measurement of a latency run: the logged round trips of
 * `size`-byte messages, timed from t_first to t_last (sorts the log). */
void probe_latency_finish(struct probe_measure *out, struct probe_rtt_log *log, uint64_t size,
                          double t_first, double t_last, double interval);

/* Median of n values (sorts a copy); NAN for n == 0. */
double probe_median(const double *v, int n);

#endif
