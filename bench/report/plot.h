/* busBW against message size, one curve per result, drawn by gnuplot
 * (log2 x axis, reference lines of the chosen profiles, cluster names in
 * the title). The script is plain text so it can be kept and edited. */
#ifndef FB_REPORT_PLOT_H
#define FB_REPORT_PLOT_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"
#include "report/result.h"
#include "core/text.h"

struct fb_plot_line {
    char label[160];
    double gbps;
    bool floor; /* drawn dotted; a typical figure is dashed */
};

struct fb_plot_opts {
    const char *out;    /* FILE.png or FILE.svg */
    int width, height;  /* pixels */
    const char *title;  /* NULL: "<collective> busBW: <clusters>" */
    bool logy;
    const char *script; /* also keep the gnuplot script here, its data beside
                         * it (SCRIPT.0.dat, ...); NULL: do not */
};

/* The gnuplot script: data_files[i] holds result i as "bytes busbw" lines,
 * `output` is the file gnuplot writes. */
void fb_plot_script(const struct fb_result_set *set, const char *const *data_files,
                    const struct fb_plot_line *lines, size_t nlines, const struct fb_plot_opts *o,
                    const char *output, struct fb_str *out);

/* Writes the data, runs gnuplot (FABRIC_GNUPLOT or "gnuplot" on PATH) with a
 * time limit and moves the picture into place only when gnuplot exited 0
 * and printed nothing: its warnings are errors here. */
enum fb_status fb_plot(const struct fb_result_set *set, const struct fb_plot_line *lines,
                       size_t nlines, const struct fb_plot_opts *o, struct fb_err *err);

#endif
