#include "coll/table.h"

#include <string.h>

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
            "iters: %ld agg iters: %ld validation: %ld graph: %ld\n",
            cfg->nthreads, cfg->ngpus, (unsigned long long)minb, (unsigned long long)maxb,
            (unsigned long long)(cfg->stepfactor > 1 ? (uint64_t)cfg->stepfactor : cfg->stepbytes),
            cfg->stepfactor > 1 ? "factor" : "bytes", cfg->warmup, cfg->iters, cfg->agg, cfg->check,
            cfg->graph);
    if (cfg->blocking == 1)
        fprintf(out, "# Blocking Enabled: wait and barrier after each inner iteration (-m)\n");
    else if (cfg->blocking == 2)
        fprintf(out, "# Blocking Enabled: wait after each inner iteration (-m), no barrier\n");
    else if (cfg->blocking == 3)
        fprintf(out, "# Blocking Enabled: wait and barrier after each outer iteration (-n)\n");
    fprintf(out, "#\n");
}

void fb_table_header(FILE *out)
{
    fprintf(out, "#\n");
    fprintf(out, "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n",
            "", "", "", "", "");
    fprintf(out, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size", "count",
            "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
    fprintf(out, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)",
            "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
}

void fb_table_header_per_iter(FILE *out)
{
    static const char *const names[] = {"size", "count", "type", "redop", "root", "time", "algbw", "busbw",
                                        "#wrong", "i_min", "i_max", "i_p99", "i_cv%"};
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

static void placement(FILE *out, const struct fb_measurement *r)
{
    char t[8], a[7], b[7];
    fb_table_number(r->time_us, 7, t);
    fb_table_number(r->algbw_GBps, 6, a);
    fb_table_number(r->busbw_GBps, 6, b);
    if (r->wrong >= 0)
        fprintf(out, "  %7s  %6s  %6s  %6g", t, a, b, (double)r->wrong);
    else
        fprintf(out, "  %7s  %6s  %6s    N/A", t, a, b);
    if (r->iter.times_us != NULL)
        per_iter_cells(out, &r->iter);
}

void fb_table_row(FILE *out, const struct fb_call *call, const struct fb_measurement *oop,
                  const struct fb_measurement *ip)
{
    fprintf(out, "%12zu  %12zu  %8s  %6s  %6d", call->counts.bytes, call->counts.param,
            fb_dtype_info(call->dtype)->name, call->coll->reduces ? fb_redop_name(call->op) : "none",
            call->coll->rooted ? call->root : -1);
    placement(out, oop);
    placement(out, ip);
    fputc('\n', out);
}

void fb_table_footer(FILE *out, uint64_t wrong_total, double avg_busbw)
{
    fprintf(out, "# %-20s : %llu %s\n", "Out of bounds values", (unsigned long long)wrong_total,
            wrong_total ? "FAILED" : "OK");
    fprintf(out, "# %-20s : %g \n", "Avg bus bandwidth", avg_busbw);
    fprintf(out, "#\n");
}
