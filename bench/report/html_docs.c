/* Doctor and probe documents in the HTML report (html_docs.h). */
#include <stdio.h>
#include <string.h>

#include "core/files.h"
#include "core/jsonio.h"
#include "report/html_docs.h"
#include "report/html_svg.h"
#include "report/probe_verdict.h"

typedef void (*doc_render)(json_object *doc, const char *path, struct fb_str *out);

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
static void render_doctor(json_object *doc, const char *path, struct fb_str *out)
{
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
static void render_probe(json_object *doc, const char *path, struct fb_str *out)
{
    doc_heading(doc, path, out);
    struct fb_str text = {0};
    struct fb_err err = {0};
    enum fb_status verdict = FB_OK;
    if (fb_probe_judge(doc, path, &text, &verdict, &err) == FB_OK)
        cell(out, "pre", NULL, fb_str_get(&text));
    else
        cell(out, "p", "v-none", err.msg);
    fb_str_free(&text);
}

static const struct doc_kind {
    const char *kind, *title;
    doc_render render;
} doc_kinds[] = {
    {"doctor", "Doctor checks", render_doctor},
    {"probe", "Link probes", render_probe},
};

#define NKINDS (sizeof doc_kinds / sizeof doc_kinds[0])

struct doc_walk {
    const struct doc_kind *kind;
    struct fb_str *out;
    int found;
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
    if (kind != NULL && strcmp(kind, w->kind->kind) == 0) {
        if (w->found++ == 0) {
            fb_str_addf(w->out, "<section id=\"%s\"><h2>", w->kind->kind);
            fb_html_escape(w->out, w->kind->title);
            fb_str_addf(w->out, "</h2>\n");
        }
        w->kind->render(doc, path, w->out);
    }
    json_object_put(doc);
    return FB_OK;
}

enum fb_status fb_html_other_docs(const char *const *dirs, int ndirs, struct fb_str *out, struct fb_err *err)
{
    enum fb_status st = FB_OK;
    for (size_t k = 0; k < NKINDS && st == FB_OK; k++) {
        struct doc_walk w = {.kind = &doc_kinds[k], .out = out};
        for (int i = 0; i < ndirs && st == FB_OK; i++)
            st = fb_walk_json_files(dirs[i], 8, false, visit_doc, &w, err);
        if (w.found)
            fb_str_addf(out, "</section>\n");
    }
    return st;
}
