#include "probe/measure.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double probe_gbps(double bytes, double seconds)
{
    return seconds > 0 ? bytes * 8.0 / seconds / 1e9 : NAN;
}

double probe_gBps(double bytes, double seconds)
{
    return seconds > 0 ? bytes / seconds / 1e9 : NAN;
}

double probe_mpps(double messages, double seconds)
{
    return seconds > 0 ? messages / seconds / 1e6 : NAN;
}

void probe_samples_init(struct probe_samples *s, double t0, double interval)
{
    memset(s, 0, sizeof *s);
    s->t0 = t0;
    s->open_at = t0;
    s->interval = interval > 0 ? interval : 1e-3;
}

static void merge_neighbours(struct probe_samples *s)
{
    int k = 0;
    for (int i = 0; i + 1 < s->n; i += 2, k++) {
        s->start_s[k] = s->start_s[i];
        s->dur_s[k] = s->dur_s[i] + s->dur_s[i + 1];
        s->bytes[k] = s->bytes[i] + s->bytes[i + 1];
    }
    if (s->n % 2) {
        s->start_s[k] = s->start_s[s->n - 1];
        s->dur_s[k] = s->dur_s[s->n - 1];
        s->bytes[k] = s->bytes[s->n - 1];
        k++;
    }
    s->n = k;
    s->interval *= 2;
}

static void close_interval(struct probe_samples *s, double at)
{
    if (s->n == PROBE_SAMPLES_MAX)
        merge_neighbours(s);
    s->start_s[s->n] = s->open_at - s->t0;
    s->dur_s[s->n] = at - s->open_at;
    s->bytes[s->n] = s->open_bytes;
    s->n++;
    s->open_at = at;
    s->open_bytes = 0;
}

void probe_samples_add(struct probe_samples *s, double now, double bytes)
{
    s->open_bytes += bytes;
    /* The tolerance keeps float rounding from pushing an event that lands
     * on the boundary into the next interval. */
    if (now - s->open_at >= s->interval * (1 - 1e-9))
        close_interval(s, now);
}

void probe_samples_finish(struct probe_samples *s, double t_end)
{
    if (s->open_bytes > 0 || s->n == 0)
        close_interval(s, t_end > s->open_at ? t_end : s->open_at);
}

void probe_measure_open(struct probe_measure *m, int link, uint64_t size)
{
    memset(m, 0, sizeof *m);
    m->link = link;
    m->size = size;
}

void probe_measure_close(struct probe_measure *m, double bytes, uint64_t messages, double t_first, double t_last)
{
    m->bytes = bytes;
    m->messages = messages;
    m->seconds = t_last - t_first;
    probe_samples_finish(&m->samples, t_last);
}

double probe_samples_peak_gbps(const struct probe_samples *s, double fallback)
{
    double best = -1;
    for (int i = 0; i < s->n; i++) {
        if (s->dur_s[i] < s->interval / 2 || s->dur_s[i] <= 0)
            continue;
        double g = probe_gbps(s->bytes[i], s->dur_s[i]);
        if (g > best)
            best = g;
    }
    return best < 0 ? fallback : best;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted values. */
static double percentile(const double *sorted, long n, double p)
{
    long k = (long)ceil(p / 100.0 * (double)n) - 1;
    if (k < 0)
        k = 0;
    if (k >= n)
        k = n - 1;
    return sorted[k];
}

void probe_latency_from_rtts(double *rtt_s, long n, struct probe_latency *lat)
{
    memset(lat, 0, sizeof *lat);
    if (n <= 0)
        return;
    qsort(rtt_s, (size_t)n, sizeof *rtt_s, cmp_double);
    double sum = 0;
    for (long i = 0; i < n; i++)
        sum += rtt_s[i];
    const double half_us = 0.5e6;
    lat->valid = 1;
    lat->min_us = rtt_s[0] * half_us;
    lat->max_us = rtt_s[n - 1] * half_us;
    lat->avg_us = sum / (double)n * half_us;
    lat->p50_us = percentile(rtt_s, n, 50) * half_us;
    lat->p99_us = percentile(rtt_s, n, 99) * half_us;
}

int probe_rtt_reserve(struct probe_rtt_log *log, long cap)
{
    if (cap <= log->cap)
        return 0;
    double *grown = realloc(log->v, (size_t)cap * sizeof *grown);
    if (grown == NULL)
        return -1;
    log->v = grown;
    log->cap = cap;
    return 0;
}

int probe_rtt_push(struct probe_rtt_log *log, double rtt_s)
{
    if (log->n == log->cap && probe_rtt_reserve(log, log->cap ? log->cap * 2 : 4096) != 0)
        return -1;
    log->v[log->n++] = rtt_s;
    return 0;
}

void probe_rtt_free(struct probe_rtt_log *log)
{
    free(log->v);
    memset(log, 0, sizeof *log);
}

void probe_latency_finish(struct probe_measure *out, struct probe_rtt_log *log, uint64_t size,
                          double t_first, double t_last, double interval)
{
    out->messages = (uint64_t)log->n;
    out->bytes = (double)log->n * (double)size;
    out->seconds = t_last - t_first;
    probe_samples_init(&out->samples, t_first, interval);
    probe_latency_from_rtts(log->v, log->n, &out->lat);
}

double probe_median(const double *v, int n)
{
    if (n <= 0)
        return NAN;
    double *c = malloc((size_t)n * sizeof *c);
    if (c == NULL)
        return NAN;
    memcpy(c, v, (size_t)n * sizeof *c);
    qsort(c, (size_t)n, sizeof *c, cmp_double);
    double m = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
    free(c);
    return m;
}
