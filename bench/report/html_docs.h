/* The documents of the HTML report that are not collective results, one
 * table row per document kind: what it is called and how its verdict is
 * drawn. A new kind (a scan) is one row in html_docs.c. */
#ifndef FB_REPORT_HTML_DOCS_H
#define FB_REPORT_HTML_DOCS_H

#include "core/status.h"
#include "core/text.h"

/* Appends a section per document kind found under `dirs`; FB_ERR_INPUT
 * when a directory cannot be read. */
enum fb_status fb_html_other_docs(const char *const *dirs, int ndirs, struct fb_str *out,
                                  struct fb_err *err);

#endif
