/* fabric-report html: one self-contained page (inline CSS and SVG, no
 * script, nothing fetched) over a results tree: the verdict of every
 * document (verdict.h, probe_verdict.h, doctor checks), the clusters
 * compared at matching sizes (compare.h), busBW against size per
 * collective, and the history of every series with its outliers
 * (history.h). docs/report.md. */
#ifndef FB_REPORT_HTML_H
#define FB_REPORT_HTML_H

#include "core/status.h"
#include "report/history.h"

struct fb_html_opts {
    const char *out;
    struct fb_hist_opts hist;
    const char *const *profile_dirs;
    int nprofile_dirs;
    double noise; /* compare's noise band, relative */
};

/* Reads the documents under `paths` (directories searched, files as
 * given) and writes the page to o->out atomically. A tree without
 * collective results but with doctor, probe or scan documents makes a page
 * of those; one without any of them is FB_ERR_INPUT, nothing written. */
enum fb_status fb_html_report(const char *const *paths, int npaths, const struct fb_html_opts *o,
                              struct fb_err *err);

#endif
