/* Other tools' output turned into this project's results JSON, so that years
 * of existing logs become comparable: nccl-tests text tables (the formats
 * with and without the root column, with and without the 2.19
 * "# Collective test starting" lines; rccl-tests' alike), nccl-tests -J
 * JSON, rccl-tests' own JSON (-Z json), and perftest
 * ib_write_bw text and --out_json output. */
#ifndef FB_REPORT_IMPORT_H
#define FB_REPORT_IMPORT_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

enum fb_import_format {
    FB_IMPORT_AUTO,
    FB_IMPORT_NCCLT_TEXT,
    FB_IMPORT_NCCLT_JSON,
    FB_IMPORT_RCCLT_JSON,
    FB_IMPORT_PERFTEST_TEXT,
    FB_IMPORT_PERFTEST_JSON,
};

struct fb_import_opts {
    const char *cluster;    /* label of the results; default: first host, else the file name */
    const char *collective; /* when the input does not say which collective ran */
    const char *units;      /* perftest --out_json: "Gbps" or "MBps" when they cannot be inferred */
    long long mtime;        /* the file's modification time (UTC seconds), -1 unknown: stands
                             * in for the start time an input lacks */
};

/* One input can hold several runs (a log of several collectives). */
struct fb_import_out {
    json_object **docs;
    size_t n;
};

/* "nccl-tests-text", "nccl-tests-json", "rccl-tests-json", "perftest-text", "perftest-json". */
const char *fb_import_format_name(enum fb_import_format f);
enum fb_status fb_import_format_parse(const char *name, enum fb_import_format *f, struct fb_err *err);

/* Guesses the format from the content; FB_ERR_INPUT when it is none of them. */
enum fb_status fb_import_detect(const char *name, const char *text, size_t len,
                                enum fb_import_format *f, struct fb_err *err);

/* Converts `text` (the content of file `name`). Every document appended to
 * `out` is a complete results document of docs/results-schema.md. */
enum fb_status fb_import_text(const char *name, const char *text, size_t len, enum fb_import_format f,
                              const struct fb_import_opts *o, struct fb_import_out *out,
                              struct fb_err *err);

void fb_import_out_free(struct fb_import_out *out);

/* Per format (import_ncclt.c, import_ncclt_json.c, import_perftest.c): a
 * detector that claims content of its format, and the reader. The table
 * in import.c lists them. */
bool fb_detect_ncclt_text(const char *text, size_t len);
bool fb_detect_ncclt_json(const char *text, size_t len);
bool fb_detect_rcclt_json(const char *text, size_t len);
bool fb_detect_perftest_text(const char *text, size_t len);
bool fb_detect_perftest_json(const char *text, size_t len);

enum fb_status fb_import_ncclt_text(const char *name, const char *text, size_t len,
                                    const struct fb_import_opts *o, struct fb_import_out *out,
                                    struct fb_err *err);
enum fb_status fb_import_ncclt_json(const char *name, const char *text, size_t len,
                                    const struct fb_import_opts *o, struct fb_import_out *out,
                                    struct fb_err *err);
enum fb_status fb_import_rcclt_json(const char *name, const char *text, size_t len,
                                    const struct fb_import_opts *o, struct fb_import_out *out,
                                    struct fb_err *err);
enum fb_status fb_import_perftest_text(const char *name, const char *text, size_t len,
                                       const struct fb_import_opts *o, struct fb_import_out *out,
                                       struct fb_err *err);
enum fb_status fb_import_perftest_json(const char *name, const char *text, size_t len,
                                       const struct fb_import_opts *o, struct fb_import_out *out,
                                       struct fb_err *err);

/* Detection helpers: the text's first non-blank is '{'; a substring. */
bool fb_import_looks_json(const char *text, size_t len);
bool fb_import_contains(const char *text, size_t len, const char *needle);

/* Input text made safe to quote in a message or a warning: at most `max`
 * bytes of `src` into `dst` (always terminated, cut short rather than
 * overflow), with control characters, DEL, C1 controls and bytes that are
 * not UTF-8 written as visible escapes ("\x1b", "\u009b"), so a quoted
 * line can neither drive the terminal it is printed on nor break a JSON
 * reader downstream. Returns dst. */
char *fb_import_printable(char *dst, size_t cap, const char *src, size_t max);

/* Appends a document to `out` (takes it). */
enum fb_status fb_import_out_add(struct fb_import_out *out, json_object *doc, struct fb_err *err);

#endif
