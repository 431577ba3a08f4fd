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

/* Axis ticks on round values, as plotting libraries place them.
 * Linear: steps of 1, 2 or 5 times a power of ten, the axis widened to the
 * ticks around the data (0 to 5 in steps of 1, not 0 to 4.98 in quarters).
 * Log base 10: decades, with 2 and 5 inside each when there is room.
 * Log base 2 (bytes): powers of two whose exponent steps by 1, 2, 5 or 10,
 * so that 1K, 1M and 1G stay on ticks; the axis is the data's range. */
#define FB_TICKS_MAX 32

enum fb_axis_scale { FB_AXIS_LINEAR, FB_AXIS_LOG10, FB_AXIS_LOG2 };

struct fb_ticks {
    double v[FB_TICKS_MAX]; /* ascending */
    size_t n;
    double lo, hi;          /* the axis range, which holds [lo, hi] of the data */
};

/* At most `most` ticks (2 to FB_TICKS_MAX) for data over [lo, hi]; a log
 * scale over a range that reaches 0 or below is drawn linear. */
void fb_axis_ticks(enum fb_axis_scale scale, double lo, double hi, size_t most, struct fb_ticks *t);

/* HTML text: &, <, >, " and ' as entities (text and attribute values),
 * control characters as U+FFFD. */
void fb_html_escape(struct fb_str *out, const char *text);

/* Appends one <svg> element. */
void fb_svg_line_plot(struct fb_str *out, const struct fb_svg_plot *p, const struct fb_svg_series *s,
                      size_t ns);

#endif
