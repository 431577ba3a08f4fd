/* The self-contained HTML report (html.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>

#include "core/outfile.h"
#include "core/units.h"
#include "core/version.h"
#include "nccl/profiles.h"
#include "report/compare.h"
#include "report/html.h"
#include "report/html_docs.h"
#include "report/html_svg.h"
#include "report/verdict.h"

static const char page_css[] =
    "body{font:15px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#222;padding:0 16px}"
    "h1{font-size:24px}h2{border-bottom:2px solid #ccc;padding-bottom:4px;margin-top:32px}"
    "h3{font-size:16px;margin:18px 0 6px}small{color:#666;font-weight:normal}"
    "table{border-collapse:collapse;margin:8px 0;font-size:14px}"
    "th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}th{background:#f2f2f2}"
    "td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}td.file{font-size:12px}"
    "pre{background:#f7f7f7;border:1px solid #ddd;padding:8px;overflow-x:auto;font-size:13px}"
    ".v-PASS,.h-ok,.d-ok{color:#070;font-weight:bold}.v-DEGRADED,.d-warn{color:#a60;font-weight:bold}"
    ".v-FAIL,.v-TCP-FALLBACK,.d-fail,.h-outlier{color:#c00;font-weight:bold}"
    ".v-INCOMPLETE,.v-none,.d-skip,.h-few{color:#666}"
    "tr.outlier td{background:#fde8e8}"
    ".s-slow,.s-timeout{background:#fff1d6}.s-failed{background:#fde8e8;font-weight:bold}"
    ".s-untested{color:#666}table.matrix td{min-width:3em}"
    "svg.plot{display:block;margin:8px 0;border:1px solid #ddd}"
    "svg .t{font-size:15px;font-weight:bold}svg .xl{font-size:12px;text-anchor:middle}"
    "svg .yl{font-size:12px;text-anchor:end}svg .lg{font-size:12px}";

static void cell(struct fb_str *out, const char *tag, const char *cls, const char *text)
{
    fb_str_addf(out, "<%s%s%s%s>", tag, cls ? " class=\"" : "", cls ? cls : "", cls ? "\"" : "");
    fb_html_escape(out, text);
    fb_str_addf(out, "</%s>", tag);
}

/* A file by its name, its whole path as the cell's tooltip: the
 * directories repeat in every row and crowd the table. */
static void file_cell(struct fb_str *out, const char *path)
{
    const char *base = strrchr(path, '/');
    fb_str_addf(out, "<td class=\"file\" title=\"");
    fb_html_escape(out, path);
    fb_str_addf(out, "\">");
    fb_html_escape(out, base ? base + 1 : path);
    fb_str_addf(out, "</td>");
}

static void num_cell(struct fb_str *out, double v, const char *fmt)
{
    if (isnan(v))
        fb_str_addf(out, "<td class=\"n\">-</td>");
    else {
        fb_str_addf(out, "<td class=\"n\">");
        fb_str_addf(out, fmt, v);
        fb_str_addf(out, "</td>");
    }
}

/* ---- verdicts ---- */

/* check's text: its headline shown, the paragraph behind it folded away
 * (a <details> element needs no script). */
static void verdict_reasons(struct fb_str *out, const char *text)
{
    const char *nl = strchr(text, '\n');
    size_t n = nl ? (size_t)(nl - text) : strlen(text);
    char *head = strndup(text, n);
    fb_str_addf(out, "<td><details><summary>");
    fb_html_escape(out, head ? head : "");
    fb_str_addf(out, "</summary>");
    fb_html_escape(out, nl ? nl + 1 : "");
    fb_str_addf(out, "</details></td>");
    free(head);
}

static void verdict_row(const struct fb_result *r, const struct fb_profiles *ps, struct fb_str *out)
{
    struct fb_verdict v = {0};
    struct fb_err err = {0};
    fb_str_addf(out, "<tr>");
    cell(out, "td", NULL, fb_result_label(r));
    cell(out, "td", NULL, r->collective);
    cell(out, "td", NULL, r->start_time ? r->start_time : "");
    file_cell(out, r->path);
    if (fb_verdict_judge(r, ps, NULL, &v, &err) == FB_OK) {
        char cls[32];
        snprintf(cls, sizeof cls, "v-%s", v.name);
        cell(out, "td", cls, v.name);
        struct fb_str text = {0};
        fb_verdict_text(&v, r, &text);
        verdict_reasons(out, fb_str_get(&text));
        fb_str_free(&text);
    } else {
        cell(out, "td", "v-none", "no verdict");
        cell(out, "td", NULL, err.msg);
    }
    fb_verdict_free(&v);
    fb_str_addf(out, "</tr>\n");
}

static void verdicts_section(const struct fb_result_set *set, const struct fb_profiles *ps, struct fb_str *out)
{
    fb_str_addf(out, "<section id=\"verdicts\"><h2>Verdicts</h2>\n<p>fabric-report check on every collective result.</p>\n"
                     "<table><tr><th>cluster</th><th>collective</th><th>start</th><th>file</th><th>verdict</th><th>why</th></tr>\n");
    for (size_t i = 0; i < set->n; i++)
        verdict_row(&set->r[i], ps, out);
    fb_str_addf(out, "</table></section>\n");
}

/* ---- comparison and busBW vs size, on the newest run of each cluster ---- */

/* The newest measured run of each cluster for `collective`, as a view of
 * `all`: the results stay all's (free only view->r). Chosen from what is
 * loaded, not read again from the tree once per collective; runs that
 * stopped before their first row are left out. */
static enum fb_status latest_of(const struct fb_result_set *all, const char *collective,
                                struct fb_result_set *view, struct fb_err *err)
{
    view->r = calloc(all->n ? all->n : 1, sizeof *view->r);
    bool *keep = calloc(all->n ? all->n : 1, sizeof *keep);
    view->n = 0;
    for (size_t i = 0; view->r != NULL && i < all->n; i++)
        if (all->r[i].nrows > 0 && strcmp(all->r[i].collective, collective) == 0)
            view->r[view->n++] = all->r[i];
    bool marked = view->r != NULL && keep != NULL && fb_result_set_mark_latest(view, keep);
    size_t kept = 0;
    for (size_t i = 0; marked && i < view->n; i++)
        if (keep[i])
            view->r[kept++] = view->r[i];
    view->n = kept;
    free(keep);
    return marked ? FB_OK : fb_fail(err, FB_ERR_INTERNAL, "out of memory choosing the newest runs");
}

static enum fb_status size_plot(const struct fb_result_set *set, const char *collective, struct fb_str *out,
                                struct fb_err *err)
{
    struct fb_svg_series *s = calloc(set->n, sizeof *s);
    struct fb_point **pts = calloc(set->n, sizeof *pts);
    double **xs = calloc(set->n, sizeof *xs), **ys = calloc(set->n, sizeof *ys);
    enum fb_status st = s && pts && xs && ys ? FB_OK : fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    for (size_t i = 0; i < set->n && st == FB_OK; i++) {
        size_t n = 0;
        st = fb_result_points(&set->r[i], &pts[i], &n, err);
        xs[i] = calloc(n + 1, sizeof **xs);
        ys[i] = calloc(n + 1, sizeof **ys);
        if (st == FB_OK && (xs[i] == NULL || ys[i] == NULL))
            st = fb_fail(err, FB_ERR_INTERNAL, "out of memory");
        for (size_t k = 0; st == FB_OK && k < n; k++) {
            xs[i][k] = (double)pts[i][k].bytes;
            ys[i][k] = pts[i][k].best;
        }
        s[i] = (struct fb_svg_series){.label = fb_result_label(&set->r[i]), .x = xs[i], .y = ys[i], .n = n};
    }
    char title[160];
    snprintf(title, sizeof title, "%s: busBW vs size (newest run per cluster)", collective);
    struct fb_svg_plot p = {.title = title, .xlabel = "message size (log2)", .ylabel = "busBW GB/s", .log2x = true};
    if (st == FB_OK)
        fb_svg_line_plot(out, &p, s, set->n);
    for (size_t i = 0; set && i < set->n; i++) {
        if (pts)
            free(pts[i]);
        if (xs)
            free(xs[i]);
        if (ys)
            free(ys[i]);
    }
    free(s);
    free(pts);
    free(xs);
    free(ys);
    return st;
}

static enum fb_status collective_section(const struct fb_result_set *all, const char *collective, double noise,
                                         struct fb_str *out, size_t *shown, struct fb_err *err)
{
    struct fb_result_set set = {0};
    enum fb_status st = latest_of(all, collective, &set, err);
    if (st != FB_OK || set.n == 0) {
        free(set.r);
        return st; /* nothing measured for it */
    }
    (*shown)++;
    fb_str_addf(out, "<h3>");
    fb_html_escape(out, collective);
    fb_str_addf(out, "</h3>\n");
    st = size_plot(&set, collective, out, err);
    struct fb_str table = {0};
    struct fb_compare_opts o = {.format = FB_CMP_TEXT, .noise = noise};
    if (st == FB_OK && set.n > 1) {
        struct fb_err cmp = {0};
        if (fb_compare(&set, &o, &table, &cmp) == FB_OK)
            cell(out, "pre", "compare", fb_str_get(&table));
        else
            cell(out, "p", "v-none", cmp.msg);
    } else if (st == FB_OK) {
        fb_str_addf(out, "<p>One cluster only: nothing to compare.</p>\n");
    }
    fb_str_free(&table);
    free(set.r); /* a view: the results are all's */
    return st;
}

static bool seen_collective(const struct fb_result_set *set, size_t upto, const char *c)
{
    for (size_t i = 0; i < upto; i++)
        if (strcmp(set->r[i].collective, c) == 0)
            return true;
    return false;
}

static enum fb_status compare_section(const struct fb_result_set *all,
                                      double noise, struct fb_str *out, struct fb_err *err)
{
    fb_str_addf(out, "<section id=\"compare\"><h2>Clusters compared</h2>\n<p>The newest measured run of each cluster, "
                     "per collective: busBW at matching sizes (fabric-report compare --latest).</p>\n");
    enum fb_status st = FB_OK;
    size_t shown = 0;
    for (size_t i = 0; i < all->n && st == FB_OK; i++)
        if (!seen_collective(all, i, all->r[i].collective))
            st = collective_section(all, all->r[i].collective, noise, out, &shown, err);
    if (st == FB_OK && shown == 0)
        fb_str_addf(out, "<p class=\"v-none\">No run measured a busBW (each stopped before its first row): nothing to compare or plot.</p>\n");
    fb_str_addf(out, "</section>\n");
    return st;
}

/* ---- history ---- */

static void history_table(const struct fb_hist_series *s, struct fb_str *out)
{
    fb_str_addf(out, "<table class=\"history\"><tr><th>start</th><th>busBW GB/s</th><th>median</th><th>MAD</th>"
                     "<th>ratio</th><th>state</th><th>hosts</th><th>file</th></tr>\n");
    for (size_t k = 0; k < s->n; k++) {
        const struct fb_hist_run *run = &s->runs[k];
        bool outlier = run->j.state == FB_HIST_OUTLIER;
        fb_str_addf(out, "<tr%s>", outlier ? " class=\"outlier\"" : "");
        cell(out, "td", NULL, run->r->start_time ? run->r->start_time : "");
        num_cell(out, run->busbw, "%.3f");
        num_cell(out, run->j.median, "%.3f");
        num_cell(out, run->j.mad, "%.3f");
        num_cell(out, 100 * run->j.ratio, "%.0f %%");
        const char *cls = outlier ? "h-outlier" : run->j.state == FB_HIST_OK ? "h-ok" : "h-few";
        cell(out, "td", cls, outlier ? "OUTLIER" : fb_hist_state_name(run->j.state));
        cell(out, "td", NULL, run->hosts);
        file_cell(out, run->r->path);
        fb_str_addf(out, "</tr>\n");
    }
    fb_str_addf(out, "</table>\n");
}

/* "2026-01-04T09:30:00Z" as "01-04 09:30": the ticks of a time axis
 * stay apart (the table beside the plot has the full times). */
static const char *short_time(const char *iso, char *buf, size_t len)
{
    if (iso == NULL || strlen(iso) < 16 || iso[10] != 'T')
        return iso ? iso : "?";
    snprintf(buf, len, "%.5s %.5s", iso + 5, iso + 11);
    return buf;
}

static enum fb_status history_plot(const struct fb_hist_series *s, struct fb_str *out, struct fb_err *err)
{
    double *x = calloc(s->n + 1, sizeof *x), *y = calloc(s->n + 1, sizeof *y);
    bool *marked = calloc(s->n + 1, sizeof *marked);
    const char **ticks = calloc(s->n + 1, sizeof *ticks);
    char (*labels)[20] = calloc(s->n + 1, sizeof *labels);
    if (x == NULL || y == NULL || marked == NULL || ticks == NULL || labels == NULL) {
        free(x), free(y), free(marked), free(ticks), free(labels);
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    }
    for (size_t k = 0; k < s->n; k++) {
        x[k] = (double)k;
        y[k] = s->runs[k].busbw;
        marked[k] = s->runs[k].j.state == FB_HIST_OUTLIER;
        ticks[k] = short_time(s->runs[k].r->start_time, labels[k], sizeof labels[k]);
    }
    char title[200], size[32];
    fb_format_size(s->bytes, size, sizeof size);
    snprintf(title, sizeof title, "busBW at %s over time", size);
    struct fb_svg_series one = {.label = s->cluster, .x = x, .y = y, .marked = marked, .n = s->n};
    struct fb_svg_plot p = {.title = title, .xlabel = "run start (UTC, month-day time), in order", .ylabel = "busBW GB/s",
                            .xticks = ticks, .nxticks = s->n};
    fb_svg_line_plot(out, &p, &one, 1);
    free(x), free(y), free(marked), free(ticks), free(labels);
    return FB_OK;
}

static bool series_measured(const struct fb_hist_series *s)
{
    for (size_t k = 0; k < s->n; k++)
        if (isfinite(s->runs[k].busbw))
            return true;
    return false;
}

static enum fb_status history_section(const struct fb_result_set *set, const struct fb_hist_opts *o, struct fb_str *out,
                                      struct fb_err *err)
{
    struct fb_history h;
    enum fb_status st = fb_history_build(set, o, &h, err);
    if (st != FB_OK)
        return st;
    fb_str_addf(out, "<section id=\"history\"><h2>History</h2>\n<p>Each run against the earlier complete runs of its "
                     "series: an outlier falls below median &minus; %g&middot;MAD and below %g %% of the median; "
                     "fewer than %d earlier runs is not enough history.</p>\n", o->k, 100 * o->floor, FB_HIST_MIN_EARLIER);
    for (size_t i = 0; i < h.n && st == FB_OK; i++) {
        const struct fb_hist_series *s = &h.s[i];
        char head[160];
        snprintf(head, sizeof head, " %s (%s, %ld ranks%s%.60s)", s->collective, s->backend, s->ranks,
                 s->hosts ? ", on " : "", s->hosts ? (*s->hosts ? s->hosts : "hosts not named") : "");
        fb_str_addf(out, "<h3>");
        fb_html_escape(out, s->cluster);
        fb_html_escape(out, head);
        fb_str_addf(out, "</h3>\n");
        if (series_measured(s))
            st = history_plot(s, out, err);
        else
            fb_str_addf(out, "<p class=\"v-none\">No run of this series measured busBW at a common size: nothing to plot.</p>\n");
        history_table(s, out);
    }
    fb_str_addf(out, "</section>\n");
    fb_history_free(&h);
    return st;
}

/* ---- the page ---- */

static void paths_list(struct fb_str *out, const char *const *paths, int npaths)
{
    for (int i = 0; i < npaths; i++) {
        fb_str_addf(out, "%s<code>", i ? ", " : "");
        fb_html_escape(out, paths[i]);
        fb_str_addf(out, "</code>");
    }
}

static void page_head(struct fb_str *out, const char *const *paths, int npaths, const struct fb_result_set *set)
{
    fb_str_addf(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
                     "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n"
                     "<title>fabric-bench report</title>\n<style>%s</style></head><body>\n<h1>fabric-bench report</h1>\n<p>",
                page_css);
    if (set->n > 0) {
        fb_str_addf(out, "%zu collective result%s from ", set->n, set->n == 1 ? "" : "s");
        paths_list(out, paths, npaths);
    } else {
        fb_str_addf(out, "No collective results (fabric-coll -J) in ");
        paths_list(out, paths, npaths);
        fb_str_addf(out, ": the documents below are all there is");
    }
    fb_str_addf(out, "; fabric-report %s.</p>\n", FB_VERSION);
    if (set->n > 0)
        fb_str_addf(out, "<nav><a href=\"#verdicts\">Verdicts</a> &middot; <a href=\"#compare\">"
                         "Clusters compared</a> &middot; <a href=\"#history\">History</a></nav>\n");
}

static enum fb_status collective_sections(const struct fb_html_opts *o, const struct fb_profiles *ps,
                                          const struct fb_result_set *set, struct fb_str *out, struct fb_err *err)
{
    verdicts_section(set, ps, out);
    enum fb_status st = compare_section(set, o->noise, out, err);
    if (st == FB_OK)
        st = history_section(set, &o->hist, out, err);
    return st;
}

/* Nothing at all to show is an error, not an empty page. */
static enum fb_status nothing_to_show(const char *const *paths, int npaths, struct fb_err *err)
{
    return fb_fail(err, FB_ERR_INPUT, "%s%s holds nothing the page shows: no collective results (fabric-coll -J), "
                   "doctor, probe or scan documents (*.json); name the results directory (results/)",
                   paths[0], npaths > 1 ? " (and the rest)" : "");
}

static enum fb_status page_body(const char *const *paths, int npaths,
                                const struct fb_html_opts *o, const struct fb_result_set *set, struct fb_str *out,
                                struct fb_err *err)
{
    struct fb_str docs = {0};
    size_t ndocs = 0;
    struct fb_profiles ps;
    enum fb_status st = fb_profiles_load_default(o->profile_dirs, o->nprofile_dirs, &ps, err);
    if (st != FB_OK)
        return st;
    st = fb_html_other_docs(paths, npaths, &ps, &docs, &ndocs, err);
    if (st == FB_OK && set->n == 0 && ndocs == 0)
        st = nothing_to_show(paths, npaths, err);
    if (st == FB_OK)
        page_head(out, paths, npaths, set);
    if (st == FB_OK && set->n > 0)
        st = collective_sections(o, &ps, set, out, err);
    if (st == FB_OK) {
        fb_str_addf(out, "%s", fb_str_get(&docs));
        fb_str_addf(out, "</body></html>\n");
    }
    fb_str_free(&docs);
    fb_profiles_free(&ps);
    return st;
}

enum fb_status fb_html_report(const char *const *paths, int npaths, const struct fb_html_opts *o, struct fb_err *err)
{
    /* Directories go to both readers; a doctor, probe or scan document
     * named on its own is not a collective result. */
    const char **results = calloc((size_t)npaths + 1, sizeof *results);
    if (results == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    int nresults = 0;
    for (int i = 0; i < npaths; i++)
        if (!fb_html_other_doc_file(paths[i]))
            results[nresults++] = paths[i];
    struct fb_result_set set = {0};
    enum fb_status st = nresults > 0 ? fb_result_set_load_any(results, nresults, &set, err) : FB_OK;
    struct fb_str page = {0};
    if (st == FB_OK)
        st = page_body(paths, npaths, o, &set, &page, err);
    if (st == FB_OK) {
        const char *text = fb_str_get(&page);
        st = fb_out_write(o->out, text, strlen(text), err);
        if (st != FB_OK)
            fb_out_name_option(err, "-o FILE");
    }
    fb_str_free(&page);
    fb_result_set_free(&set);
    free(results);
    return st;
}
