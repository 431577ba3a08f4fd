/* The documents of the HTML report that are not collective results, one
 * table row per document kind: what it is called and how its verdict is
 * drawn. A new kind (a scan) is one row in html_docs.c. */
#ifndef FB_REPORT_HTML_DOCS_H
#define FB_REPORT_HTML_DOCS_H

#include <stdbool.h>

#include "core/status.h"
#include "core/text.h"
#include "nccl/profiles.h"

/* Appends a section per document kind found in `paths` (directories
 * searched, files taken as given); *found counts the documents shown.
 * FB_ERR_INPUT when a directory cannot be read. */
enum fb_status fb_html_other_docs(const char *const *paths, int npaths, const struct fb_profiles *ps,
                                  struct fb_str *out, size_t *found, struct fb_err *err);

/* True when `path` is a file holding a document of a kind shown here
 * (doctor, probe, scan): given by name, it is not a collective result. */
bool fb_html_other_doc_file(const char *path);

#endif
