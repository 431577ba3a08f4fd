#include "coll/table.h"

#include <inttypes.h>
#include <string.h>
#include <time.h>

/* nccl-tests' layout of the -S column: its header is the strftime format
 * itself, the cells the local time. */
#define TS_FORMAT "%Y-%m-%d %H:%M:%S"
#define TS_HEADER_WIDTH 19
#define TS_CELL_WIDTH 21

void fb_table_number(double v, int width, char *buf)
{
    static const char *const fixed[] = {"%*.2f", "%*.1f", "%*.0f"};
    for (int i = 0; i < 3; i++)
        if (snprintf(buf, (size_t)width + 1, fixed[i], width, v) <= width)
            return;
    snprintf(buf, (size_t)width + 1, width >= 7 ? "%*.1e" : "%*.0e", width, v);
}

void fb_table_preamble(FILE *out, const struct coll_config *cfg, uint64_t minb, uint64_t maxb)
{
    fprintf(out, "# Collective test starting: %s\n", cfg->coll->perf_name);
    fprintf(out,
            "# nThread %ld nGpus %ld minBytes %llu maxBytes %llu step: %llu(%s) warmup iters: %ld "
            "iters: %ld agg iters: %ld validation: %ld graph: %ld unalign: %ld\n",
            cfg->nthreads, cfg->ngpus, (unsigned long long)minb, (unsigned long long)maxb,
            (unsigned long long)(cfg->stepfactor > 1 ? (uint64_t)cfg->stepfactor : cfg->stepbytes),
            cfg->stepfactor > 1 ? "factor" : "bytes", cfg->warmup, cfg->iters, cfg->agg, cfg->check,
            cfg->graph, cfg->unalign);
    /* -z 3 here times the barrier too (nccl-tests' excludes it), so its
     * line says only what is done. */
    if (cfg->blocking == 1)
        fprintf(out, "# Blocking Enabled: wait and barrier after each inner iteration (-m) \n");
    else if (cfg->blocking == 2)
        fprintf(out, "# Blocking Enabled: wait after each inner iteration (-m), no barrier \n");
    else if (cfg->blocking == 3)
        fprintf(out, "# Blocking Enabled: wait and barrier after each outer iteration (-n) \n");
    fprintf(out, "#\n");
}

void fb_table_header(FILE *out, const struct coll_config *cfg)
{
    const char *t = cfg->cputime ? "cputime" : "time";
    int ts_pad = cfg->timestamps ? TS_HEADER_WIDTH : 0;
    fprintf(out, "#\n");
    fprintf(out, "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n",
            "", "", "", "", "");
    fprintf(out, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "size", "count",
            "type", "redop", "root", t, "algbw", "busbw", "#wrong", t, "algbw", "busbw", "#wrong", ts_pad,
            cfg->timestamps ? "timestamp" : "");
    fprintf(out, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "(B)",
            "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", ts_pad,
            cfg->timestamps ? TS_FORMAT : "");
}

void fb_table_header_per_iter(FILE *out, const struct coll_config *cfg)
{
    const char *const names[] = {"size", "count", "type", "redop", "root", cfg->cputime ? "cputime" : "time",
                                 "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99", "i_cv%"};
    static const char *const units[] = {"(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)",
                                        "", "(us)", "(us)", "(us)", "(%)"};
    fprintf(out, "#\n");
    fprintf(out, "# %10s  %12s  %8s  %6s  %6s              out-of-place (+ per-iteration)"
                 "                                in-place (+ per-iteration)\n", "", "", "", "", "");
    for (int line = 0; line < 2; line++) {
        const char *const *w = line == 0 ? names : units;
        fprintf(out, "# %10s  %12s  %8s  %6s  %6s", w[0], w[1], w[2], w[3], w[4]);
        for (int p = 0; p < 2; p++)
            fprintf(out, "  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s", w[5], w[6], w[7], w[8], w[9], w[10], w[11], w[12]);
        fprintf(out, "\n");
    }
}

static void per_iter_cells(FILE *out, const struct fb_per_iter *it)
{
    char mn[8], mx[8], p99[8], cv[8];
    fb_table_number(it->stats.min, 7, mn);
    fb_table_number(it->stats.max, 7, mx);
    fb_table_number(it->stats.p99, 7, p99);
    fb_table_number(it->stats.cv_pct, 7, cv);
    fprintf(out, "  %7s  %7s  %7s  %7s", mn, mx, p99, cv);
}

static void placement(FILE *out, const struct fb_measurement *r, int cputime)
{
    char t[8], a[7], b[7];
    fb_table_number(cputime ? r->cpu_time_us : r->time_us, 7, t);
    fb_table_number(r->algbw_GBps, 6, a);
    fb_table_number(r->busbw_GBps, 6, b);
    /* The exact count: nccl-tests prints it with %6g, which shows a
     * million wrong elements as 1e+06 (readers taking the digits before
     * the 'e' see 1) and 1234567 as 1.23457e+06. An integer reads the
     * same below a million and right above it. */
    if (r->wrong >= 0)
        fprintf(out, "  %7s  %6s  %6s  %6" PRId64, t, a, b, r->wrong);
    else
        fprintf(out, "  %7s  %6s  %6s    N/A", t, a, b);
    if (r->iter.times_us != NULL)
        per_iter_cells(out, &r->iter);
}

static void timestamp_cell(FILE *out)
{
    char now[64];
    time_t t = time(NULL);
    struct tm local;
    localtime_r(&t, &local);
    strftime(now, sizeof now, TS_FORMAT, &local);
    fprintf(out, "%*s", TS_CELL_WIDTH, now);
}

void fb_table_row(FILE *out, const struct coll_config *cfg, const struct fb_call *call,
                  const struct fb_measurement *oop, const struct fb_measurement *ip)
{
    fprintf(out, "%12zu  %12zu  %8s  %6s  %6d", call->counts.bytes, call->counts.param,
            fb_dtype_info(call->dtype)->name, call->coll->reduces ? fb_redop_name(call->op) : "none",
            call->coll->rooted ? call->root : -1);
    placement(out, oop, (int)cfg->cputime);
    placement(out, ip, (int)cfg->cputime);
    /* With -I the per-iteration cells take the timestamp's place, as in
     * nccl-tests (writeBenchmarkLineBody). */
    if (cfg->timestamps && !cfg->per_iter)
        timestamp_cell(out);
    fputc('\n', out);
}

bool fb_table_min_bw_ok(const struct fb_table_totals *t)
{
    return !t->min_bw_set || !(t->avg_busbw < t->min_bw * 0.9);
}

void fb_table_footer(FILE *out, const struct fb_table_totals *t)
{
    fprintf(out, "# %-20s : %lld %s\n", "Out of bounds values", (long long)t->out_of_bounds,
            t->out_of_bounds ? "FAILED" : "OK");
    fprintf(out, "# %-20s : %g %s\n", "Avg bus bandwidth", t->avg_busbw,
            !t->min_bw_set ? "" : fb_table_min_bw_ok(t) ? "OK" : "FAILED");
    fprintf(out, "#\n");
    fprintf(out, "# Collective test concluded: %s\n", t->perf_name);
}

void fb_table_mem_string(uint64_t bytes, char *buf, size_t len)
{
    static const char *const units[] = {" B", " KB", " MB", " GB"};
    int u = 0;
    while (u < 3 && bytes >= 1ULL << (10 * (u + 1)))
        u++;
    double v = (double)bytes / (double)(1ULL << (10 * u));
    int decimals = v < 10.0 ? 2 : v < 100.0 ? 1 : 0;
    snprintf(buf, len, "%.*f%s", decimals, v, units[u]);
}

void fb_table_memory(FILE *out, const struct fb_table_memory *m)
{
    char line[512];
    size_t used = 0;
    uint64_t total = 0;
    bool all_known = true;
    for (int i = 0; i < FB_TABLE_MEM_PARTS; i++) {
        char amount[32] = "n/a";
        if (m->known[i])
            fb_table_mem_string(m->bytes[i], amount, sizeof amount);
        used += (size_t)snprintf(line + used, sizeof line - used, "%s %s %s", m->names[i], amount,
                                 i < FB_TABLE_MEM_PARTS - 1 ? "| " : "");
        if (used >= sizeof line)
            used = sizeof line - 1;
        total += m->known[i] ? m->bytes[i] : 0;
        all_known = all_known && m->known[i];
    }
    char sum[32] = "n/a";
    if (all_known)
        fb_table_mem_string(total, sum, sizeof sum);
    fprintf(out, "# %-20s : %s| Total  %s\n", m->title, line, sum);
}

void fb_table_close(FILE *out)
{
    fprintf(out, "#\n");
}
