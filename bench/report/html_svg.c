/* Inline SVG line plots (html_svg.h). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/units.h"
#include "report/html_svg.h"

#define SVG_W 720.0
#define SVG_H 360.0
#define PAD_L 70.0
#define PAD_R 170.0
#define PAD_T 34.0
#define PAD_B 52.0

/* A control character HTML must not carry raw (C0 but tab, newline and
 * carriage return; DEL; C1, U+0080..U+009F, as UTF-8): the bytes at p
 * it spans, 0 for none. */
static size_t control_at(const unsigned char *p)
{
    if ((*p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r') || *p == 0x7F)
        return 1;
    return p[0] == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9F ? 2 : 0;
}

void fb_html_escape(struct fb_str *out, const char *text)
{
    for (const char *p = text ? text : ""; *p; p++) {
        size_t ctl = control_at((const unsigned char *)p);
        if (ctl > 0) {
            fb_str_addf(out, "&#xFFFD;"); /* the replacement character */
            p += ctl - 1;
            continue;
        }
        switch (*p) {
        case '&': fb_str_addf(out, "&amp;"); break;
        case '<': fb_str_addf(out, "&lt;"); break;
        case '>': fb_str_addf(out, "&gt;"); break;
        case '"': fb_str_addf(out, "&quot;"); break;
        case '\'': fb_str_addf(out, "&#39;"); break;
        default: fb_str_addn(out, p, 1);
        }
    }
}

/* The smallest of 1, 2, 5, 10 times the power of ten at or below `raw`
 * that is at least `raw`. */
static double nice_step(double raw)
{
    double mag = pow(10, floor(log10(raw)));
    static const double mults[] = {1, 2, 5, 10};
    for (size_t i = 0; i < sizeof mults / sizeof *mults; i++)
        if (mults[i] * mag >= raw * (1 - 1e-9))
            return mults[i] * mag;
    return 10 * mag;
}

static void linear_ticks(double lo, double hi, size_t most, struct fb_ticks *t)
{
    if (!(hi > lo)) { /* one value: a unit around it, from 0 when it is 0 */
        double pad = lo != 0 ? fabs(lo) / 2 : 1;
        hi = lo == 0 ? 1 : lo + pad;
        lo = lo == 0 ? 0 : lo - pad;
    }
    double step = nice_step((hi - lo) / (double)(most - 1));
    double first = floor(lo / step + 1e-9), last = ceil(hi / step - 1e-9);
    while (last - first + 1 > (double)most) { /* the widened ends added a tick */
        step = nice_step(step * 1.0001);
        first = floor(lo / step + 1e-9);
        last = ceil(hi / step - 1e-9);
    }
    for (double k = first; k <= last && t->n < FB_TICKS_MAX; k++)
        t->v[t->n++] = k * step == 0 ? 0 : k * step; /* no -0 */
    t->lo = first * step;
    t->hi = last * step;
}

/* Exponent strides of a log axis: 1, 2, 5, 10, 20, 50, ... */
static long exponent_stride(long span, size_t most)
{
    static const long mults[] = {1, 2, 5};
    for (long mag = 1;; mag *= 10)
        for (size_t i = 0; i < sizeof mults / sizeof *mults; i++)
            if (span / (mults[i] * mag) + 1 <= (long)most)
                return mults[i] * mag;
}

static void log_ticks(double base, double lo, double hi, size_t most, struct fb_ticks *t)
{
    t->lo = lo;
    t->hi = hi;
    double eps = 1e-9;
    long e0 = (long)ceil(log(lo) / log(base) - eps), e1 = (long)floor(log(hi) / log(base) + eps);
    long stride = e1 > e0 ? exponent_stride(e1 - e0, most) : 1;
    /* Base 10 with room to spare: 2 and 5 inside each decade as well. */
    bool subs = base == 10 && stride == 1 && (size_t)(3 * (e1 - e0 + 2)) <= most;
    static const double mantissas[] = {1, 2, 5};
    for (long e = e0 - 1; e <= e1 && t->n < FB_TICKS_MAX; e++) {
        if (((e % stride) + stride) % stride != 0)
            continue;
        for (size_t m = 0; m < (subs ? 3u : 1u) && t->n < FB_TICKS_MAX; m++) {
            double v = mantissas[m] * pow(base, (double)e);
            if (v >= lo * (1 - eps) && v <= hi * (1 + eps))
                t->v[t->n++] = v;
        }
    }
    if (t->n == 0) /* a range between two round values: its low end */
        t->v[t->n++] = lo;
}

void fb_axis_ticks(enum fb_axis_scale scale, double lo, double hi, size_t most, struct fb_ticks *t)
{
    memset(t, 0, sizeof *t);
    most = most < 2 ? 2 : most > FB_TICKS_MAX ? FB_TICKS_MAX : most;
    if (scale == FB_AXIS_LINEAR || !(lo > 0) || !(hi >= lo)) /* no log of 0 or less */
        linear_ticks(lo, hi, most, t);
    else
        log_ticks(scale == FB_AXIS_LOG2 ? 2 : 10, lo, hi, most, t);
}

/* A palette that stays apart on white and for common colour blindness. */
static const char *const colours[] = {"#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#000000"};

struct frame {
    double x0, x1, y1; /* axis ranges: x0..x1, 0..y1 */
    bool log2x;
    struct fb_ticks yticks;
};

/* Enough ticks to read a value off, few enough to stay apart. */
#define X_TICKS 9
#define Y_TICKS 6

static double px(const struct frame *f, double x)
{
    double v = f->log2x ? log2(x) : x;
    double lo = f->log2x ? log2(f->x0) : f->x0, hi = f->log2x ? log2(f->x1) : f->x1;
    double span = hi > lo ? hi - lo : 1;
    double off = hi > lo ? (v - lo) / span : 0.5;
    return PAD_L + off * (SVG_W - PAD_L - PAD_R);
}

static double py(const struct frame *f, double y)
{
    return SVG_H - PAD_B - (y / f->y1) * (SVG_H - PAD_T - PAD_B);
}

static void data_range(const struct fb_svg_series *s, size_t ns, bool log2x, struct frame *f)
{
    *f = (struct frame){.x0 = INFINITY, .x1 = -INFINITY, .y1 = 0, .log2x = log2x};
    for (size_t i = 0; i < ns; i++)
        for (size_t k = 0; k < s[i].n; k++) {
            if (isnan(s[i].y[k]) || (log2x && s[i].x[k] <= 0))
                continue;
            f->x0 = fmin(f->x0, s[i].x[k]);
            f->x1 = fmax(f->x1, s[i].x[k]);
            f->y1 = fmax(f->y1, s[i].y[k]);
        }
    if (!isfinite(f->x0))
        f->x0 = f->x1 = 1;
}

static void axes(struct fb_str *out, const struct fb_svg_plot *p, const struct frame *f)
{
    double bottom = SVG_H - PAD_B, right = SVG_W - PAD_R;
    fb_str_addf(out, "<rect x=\"0\" y=\"0\" width=\"%g\" height=\"%g\" fill=\"#fff\"/>\n", SVG_W, SVG_H);
    fb_str_addf(out, "<text x=\"%g\" y=\"20\" class=\"t\">", PAD_L);
    fb_html_escape(out, p->title);
    fb_str_addf(out, "</text>\n<path d=\"M%g %g V%g H%g\" stroke=\"#333\" fill=\"none\"/>\n", PAD_L, PAD_T, bottom, right);
    for (size_t i = 0; i < f->yticks.n; i++) {
        double y = f->yticks.v[i];
        fb_str_addf(out, "<path d=\"M%g %.1f H%g\" stroke=\"#ddd\"/><text x=\"%g\" y=\"%.1f\" class=\"yl\">%g</text>\n",
                    PAD_L, py(f, y), right, PAD_L - 6, py(f, y) + 4, y);
    }
    if (p->log2x) {
        struct fb_ticks xt;
        fb_axis_ticks(FB_AXIS_LOG2, f->x0, f->x1, X_TICKS, &xt);
        for (size_t i = 0; i < xt.n; i++) {
            char label[32];
            fb_format_size((uint64_t)xt.v[i], label, sizeof label);
            fb_str_addf(out, "<text x=\"%.1f\" y=\"%g\" class=\"xl\">%s</text>\n", px(f, xt.v[i]), bottom + 16, label);
        }
    } else {
        size_t step = p->nxticks > 6 ? (p->nxticks + 5) / 6 : 1;
        for (size_t i = 0; i < p->nxticks; i += step) {
            fb_str_addf(out, "<text x=\"%.1f\" y=\"%g\" class=\"xl\">", px(f, (double)i), bottom + 16);
            fb_html_escape(out, p->xticks[i]);
            fb_str_addf(out, "</text>\n");
        }
    }
    fb_str_addf(out, "<text x=\"%g\" y=\"%g\" class=\"xl\">", (PAD_L + right) / 2, SVG_H - 12);
    fb_html_escape(out, p->xlabel);
    fb_str_addf(out, "</text>\n<text x=\"14\" y=\"%g\" class=\"xl\" transform=\"rotate(-90 14 %g)\">",
                (PAD_T + bottom) / 2, (PAD_T + bottom) / 2);
    fb_html_escape(out, p->ylabel);
    fb_str_addf(out, "</text>\n");
}

/* A legend entry fits its margin: long labels are cut at a character
 * boundary with an ellipsis (the full label is the line's tooltip). */
#define LEGEND_CHARS 20

static void legend_label(struct fb_str *out, const char *label)
{
    const char *p = label ? label : "";
    size_t chars = 0, cut = 0;
    for (size_t i = 0; p[i] != '\0'; i++) {
        bool starts_char = ((unsigned char)p[i] & 0xC0) != 0x80;
        if (starts_char && ++chars == LEGEND_CHARS)
            cut = i; /* where the last character that fits beside "..." ends */
    }
    if (chars <= LEGEND_CHARS) {
        fb_html_escape(out, p);
        return;
    }
    char *head = strndup(p, cut);
    fb_html_escape(out, head ? head : "");
    free(head);
    fb_str_addf(out, "&#8230;");
}

static void one_series(struct fb_str *out, const struct frame *f, const struct fb_svg_series *s, size_t idx)
{
    const char *c = colours[idx % (sizeof colours / sizeof colours[0])];
    fb_str_addf(out, "<polyline class=\"series\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", c);
    const char *sep = "";
    for (size_t k = 0; k < s->n; k++) {
        if (isnan(s->y[k]))
            continue;
        fb_str_addf(out, "%s%.1f,%.1f", sep, px(f, s->x[k]), py(f, s->y[k]));
        sep = " ";
    }
    fb_str_addf(out, "\"><title>");
    fb_html_escape(out, s->label);
    fb_str_addf(out, "</title></polyline>\n");
    for (size_t k = 0; k < s->n; k++) {
        if (isnan(s->y[k]))
            continue;
        bool mark = s->marked != NULL && s->marked[k];
        fb_str_addf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" fill=\"%s\"%s/>\n", px(f, s->x[k]), py(f, s->y[k]),
                    mark ? 6 : 3, mark ? "none" : c, mark ? " stroke=\"#d00\" stroke-width=\"2.5\" class=\"outlier\"" : "");
    }
    double ly = PAD_T + 8 + 18.0 * (double)idx;
    fb_str_addf(out, "<path d=\"M%g %g h18\" stroke=\"%s\" stroke-width=\"3\"/><text x=\"%g\" y=\"%g\" class=\"lg\">",
                SVG_W - PAD_R + 12, ly, c, SVG_W - PAD_R + 34, ly + 4);
    legend_label(out, s->label);
    fb_str_addf(out, "</text>\n");
}

void fb_svg_line_plot(struct fb_str *out, const struct fb_svg_plot *p, const struct fb_svg_series *s, size_t ns)
{
    struct frame f;
    data_range(s, ns, p->log2x, &f);
    fb_axis_ticks(FB_AXIS_LINEAR, 0, f.y1, Y_TICKS, &f.yticks);
    f.y1 = f.yticks.hi;
    if (!p->log2x && p->nxticks > 0) {
        f.x0 = 0;
        f.x1 = (double)(p->nxticks - 1);
    }
    fb_str_addf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" width=\"%g\" height=\"%g\" viewBox=\"0 0 %g %g\" role=\"img\">\n",
                SVG_W, SVG_H, SVG_W, SVG_H);
    axes(out, p, &f);
    for (size_t i = 0; i < ns; i++)
        one_series(out, &f, &s[i], i);
    fb_str_addf(out, "</svg>\n");
}
