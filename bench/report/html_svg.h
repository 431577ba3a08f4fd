/* Line plots as inline SVG, for the self-contained HTML report: axes,
 * ticks, one polyline per series (one point per value) and markers on the
 * points a series marks (outliers). */
#ifndef FB_REPORT_HTML_SVG_H
#define FB_REPORT_HTML_SVG_H

#include <stdbool.h>
#include <stddef.h>

#include "core/text.h"

struct fb_svg_series {
    const char *label;
    const double *x, *y;  /* n points; NAN y values are left out */
    const bool *marked;   /* NULL or n flags: drawn as a red ring */
    size_t n;
};

struct fb_svg_plot {
    const char *title, *xlabel, *ylabel;
    bool log2x;                      /* x is bytes: log2 axis, sizes as ticks */
    const char *const *xticks;       /* NULL, or one label per integer x (time plots) */
    size_t nxticks;
};

/* HTML text: &, <, >, " and ' as entities (text and attribute values),
 * control characters as U+FFFD. */
void fb_html_escape(struct fb_str *out, const char *text);

/* Appends one <svg> element. */
void fb_svg_line_plot(struct fb_str *out, const struct fb_svg_plot *p, const struct fb_svg_series *s,
                      size_t ns);

#endif
