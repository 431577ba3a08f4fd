/* Doctor, probe and scan documents in the HTML report (html_docs.h). */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "core/files.h"
#include "core/jsonio.h"
#include "report/html_docs.h"
#include "report/html_svg.h"
#include "report/probe_verdict.h"

typedef void (*doc_render)(json_object *doc, const char *path, const struct fb_profiles *ps, struct fb_str *out);

static void cell(struct fb_str *out, const char *tag, const char *cls, const char *text)
{
    fb_str_addf(out, "<%s%s%s%s>", tag, cls ? " class=\"" : "", cls ? cls : "", cls ? "\"" : "");
    fb_html_escape(out, text);
    fb_str_addf(out, "</%s>", tag);
}

static void doc_heading(json_object *doc, const char *path, struct fb_str *out)
{
    fb_str_addf(out, "<h3>");
    fb_html_escape(out, fb_json_get_string(doc, "cluster"));
    fb_str_addf(out, " <small>");
    fb_html_escape(out, fb_json_get_string(doc, "start_time"));
    fb_str_addf(out, " &middot; ");
    fb_html_escape(out, path);
    fb_str_addf(out, "</small></h3>\n");
}

/* fabric-doctor: its summary verdict and one row per check. */
static void render_doctor(json_object *doc, const char *path, const struct fb_profiles *ps, struct fb_str *out)
{
    (void)ps;
    doc_heading(doc, path, out);
    json_object *summary = NULL, *checks = NULL;
    json_object_object_get_ex(doc, "summary", &summary);
    const char *verdict = summary ? fb_json_get_string(summary, "verdict") : NULL;
    fb_str_addf(out, "<p>fabric-doctor ");
    fb_html_escape(out, fb_json_get_string(doc, "mode"));
    fb_str_addf(out, ": ");
    cell(out, "span", "v-doc", verdict ? verdict : "unknown");
    fb_str_addf(out, "</p>\n<table><tr><th>check</th><th>verdict</th><th>evidence</th><th>fix</th></tr>\n");
    if (json_object_object_get_ex(doc, "checks", &checks) && json_object_is_type(checks, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(checks); i++) {
            json_object *c = json_object_array_get_idx(checks, i);
            const char *v = fb_json_get_string(c, "verdict");
            char cls[32];
            snprintf(cls, sizeof cls, "d-%s", v ? v : "none");
            fb_str_addf(out, "<tr>");
            cell(out, "td", NULL, fb_json_get_string(c, "name"));
            cell(out, "td", cls, v);
            cell(out, "td", NULL, fb_json_get_string(c, "evidence"));
            cell(out, "td", NULL, fb_json_get_string(c, "fix"));
            fb_str_addf(out, "</tr>\n");
        }
    }
    fb_str_addf(out, "</table>\n");
}

/* fabric-rdma: the verdict fabric-report check gives it. */
static void render_probe(json_object *doc, const char *path, const struct fb_profiles *ps, struct fb_str *out)
{
    doc_heading(doc, path, out);
    struct fb_str text = {0};
    struct fb_err err = {0};
    enum fb_status verdict = FB_OK;
    if (fb_probe_judge(doc, path, ps, &text, &verdict, &err) == FB_OK)
        cell(out, "pre", NULL, fb_str_get(&text));
    else
        cell(out, "p", "v-none", err.msg);
    fb_str_free(&text);
}

/* The pair figure of hosts i and j: the latest test between them, as
 * "0.47" with the test's status as its class. NULL when none ran. */
static json_object *scan_pair_test(json_object *tests, const char *a, const char *b)
{
    json_object *found = NULL;
    for (size_t i = 0; i < json_object_array_length(tests); i++) {
        json_object *t = json_object_array_get_idx(tests, i), *hosts = fb_json_member(t, "hosts");
        if (!json_object_is_type(hosts, json_type_array) || json_object_array_length(hosts) != (b ? 2u : 1u))
            continue;
        const char *h0 = json_object_get_string(json_object_array_get_idx(hosts, 0));
        const char *h1 = b ? json_object_get_string(json_object_array_get_idx(hosts, 1)) : NULL;
        if (b == NULL ? strcmp(h0, a) == 0
                      : (strcmp(h0, a) == 0 && strcmp(h1, b) == 0) || (strcmp(h0, b) == 0 && strcmp(h1, a) == 0))
            found = t;
    }
    return found;
}

static void scan_matrix_cell(struct fb_str *out, json_object *t)
{
    if (t == NULL) {
        fb_str_addf(out, "<td></td>");
        return;
    }
    const char *status = fb_json_get_string(t, "status");
    double gbps = -1;
    char text[32] = "-", cls[32];
    if (fb_json_get_double(t, "busbw_GBps", &gbps) && gbps >= 0)
        snprintf(text, sizeof text, "%.3g", gbps);
    snprintf(cls, sizeof cls, "n s-%s", status ? status : "none");
    fb_str_addf(out, "<td class=\"%s\" title=\"", cls);
    fb_html_escape(out, status ? status : "");
    fb_str_addf(out, "\">");
    fb_html_escape(out, text);
    fb_str_addf(out, "</td>");
}

/* Past this many nodes the matrix would be a wall of cells: the named
 * nodes' table says what matters. */
#define SCAN_MATRIX_MAX 64

/* Rows and columns are the hosts; a cell is the busBW (GB/s) of their
 * latest pair test, the diagonal each node alone. */
static void scan_matrix(json_object *nodes, json_object *tests, struct fb_str *out)
{
    size_t n = json_object_array_length(nodes);
    fb_str_addf(out, "<table class=\"matrix\"><tr><th>busBW GB/s</th>");
    for (size_t j = 0; j < n; j++)
        cell(out, "th", NULL, fb_json_get_string(json_object_array_get_idx(nodes, j), "host"));
    fb_str_addf(out, "</tr>\n");
    for (size_t i = 0; i < n; i++) {
        const char *a = fb_json_get_string(json_object_array_get_idx(nodes, i), "host");
        fb_str_addf(out, "<tr>");
        cell(out, "th", NULL, a);
        for (size_t j = 0; j < n; j++) {
            const char *b = fb_json_get_string(json_object_array_get_idx(nodes, j), "host");
            scan_matrix_cell(out, a && b ? scan_pair_test(tests, a, i == j ? NULL : b) : NULL);
        }
        fb_str_addf(out, "</tr>\n");
    }
    fb_str_addf(out, "</table>\n");
}

/* fabric-scan: the verdict, the nodes it named with their evidence, and
 * the node matrix. */
static void render_scan(json_object *doc, const char *path, const struct fb_profiles *ps, struct fb_str *out)
{
    (void)ps;
    doc_heading(doc, path, out);
    json_object *nodes = fb_json_member(doc, "nodes"), *tests = fb_json_member(doc, "tests");
    json_object *summary = fb_json_member(doc, "summary");
    const char *verdict = fb_json_get_string(summary, "verdict");
    if (!json_object_is_type(nodes, json_type_array) || !json_object_is_type(tests, json_type_array)) {
        cell(out, "p", "v-none", "not a scan document fabric-report reads (no nodes or tests)");
        return;
    }
    char line[160];
    snprintf(line, sizeof line, "%zu nodes, %s mode: ", json_object_array_length(nodes),
             fb_json_get_string(fb_json_member(doc, "config"), "mode") ? fb_json_get_string(fb_json_member(doc, "config"), "mode") : "?");
    fb_str_addf(out, "<p>fabric-scan, ");
    fb_html_escape(out, line);
    cell(out, "span", verdict && strcmp(verdict, "pass") == 0 ? "v-PASS" : "v-FAIL", verdict ? verdict : "unknown");
    fb_str_addf(out, "</p>\n<table><tr><th>host</th><th>node</th><th>verdict</th><th>evidence</th></tr>\n");
    for (size_t i = 0; i < json_object_array_length(nodes); i++) {
        json_object *x = json_object_array_get_idx(nodes, i);
        const char *v = fb_json_get_string(x, "verdict");
        if (v == NULL || strcmp(v, "pass") == 0)
            continue;
        char cls[32];
        snprintf(cls, sizeof cls, "s-%s", v);
        fb_str_addf(out, "<tr>");
        cell(out, "td", NULL, fb_json_get_string(x, "host"));
        cell(out, "td", NULL, fb_json_get_string(x, "node"));
        cell(out, "td", cls, v);
        cell(out, "td", NULL, fb_json_get_string(x, "reason"));
        fb_str_addf(out, "</tr>\n");
    }
    fb_str_addf(out, "</table>\n");
    if (json_object_array_length(nodes) <= SCAN_MATRIX_MAX)
        scan_matrix(nodes, tests, out);
}

static const struct doc_kind {
    const char *kind, *title;
    doc_render render;
} doc_kinds[] = {
    {"doctor", "Doctor checks", render_doctor},
    {"probe", "Link probes", render_probe},
    {"scan", "Fleet scans", render_scan},
};

#define NKINDS (sizeof doc_kinds / sizeof doc_kinds[0])

/* One walk over the directories: each document read once, rendered into
 * the section of its kind; the sections follow in the order of doc_kinds. */
struct doc_walk {
    const struct fb_profiles *ps;
    struct fb_str section[NKINDS];
    size_t found; /* documents rendered */
};

static enum fb_status visit_doc(const char *path, void *ctx, struct fb_err *err)
{
    (void)err;
    struct doc_walk *w = ctx;
    json_object *doc = NULL;
    struct fb_err unread = {0};
    if (fb_json_read_file(path, &doc, &unread) != FB_OK)
        return FB_OK; /* not JSON: the results reader already said so or passed it */
    const char *kind = fb_json_get_string(doc, "kind");
    for (size_t k = 0; kind != NULL && k < NKINDS; k++) {
        if (strcmp(kind, doc_kinds[k].kind) != 0)
            continue;
        struct fb_str *out = &w->section[k];
        if (out->len == 0) {
            fb_str_addf(out, "<section id=\"%s\"><h2>", doc_kinds[k].kind);
            fb_html_escape(out, doc_kinds[k].title);
            fb_str_addf(out, "</h2>\n");
        }
        doc_kinds[k].render(doc, path, w->ps, out);
        w->found++;
    }
    json_object_put(doc);
    return FB_OK;
}

/* A directory is searched, a file given by name is taken as it is; the
 * one walk shows each document once. */
static enum fb_status visit_path(struct fb_walk *walk, const char *path, struct doc_walk *w, struct fb_err *err)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode))
        return fb_walk_file(walk, path, visit_doc, w, err);
    return fb_walk_tree(walk, path, 8, false, visit_doc, w, err);
}

enum fb_status fb_html_other_docs(const char *const *paths, int npaths, const struct fb_profiles *ps,
                                  struct fb_str *out, size_t *found, struct fb_err *err)
{
    struct doc_walk w = {.ps = ps};
    struct fb_walk walk = {0}; /* each document once across the directories */
    enum fb_status st = FB_OK;
    for (int i = 0; i < npaths && st == FB_OK; i++)
        st = visit_path(&walk, paths[i], &w, err);
    fb_walk_free(&walk);
    for (size_t k = 0; k < NKINDS; k++) {
        if (st == FB_OK && w.section[k].len > 0) {
            fb_str_addn(out, w.section[k].s, w.section[k].len);
            fb_str_addf(out, "</section>\n");
        }
        fb_str_free(&w.section[k]);
    }
    *found = w.found;
    return st;
}

bool fb_html_other_doc_file(const char *path)
{
    struct stat sb;
    json_object *doc = NULL;
    struct fb_err unread = {0};
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode) || fb_json_read_file(path, &doc, &unread) != FB_OK)
        return false;
    const char *kind = fb_json_get_string(doc, "kind");
    bool other = false;
    for (size_t k = 0; kind != NULL && k < NKINDS; k++)
        other = other || strcmp(kind, doc_kinds[k].kind) == 0;
    json_object_put(doc);
    return other;
}
