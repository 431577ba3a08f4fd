/* What json-c accepts but JSON does not allow, or allows and leaves
 * ambiguous, or reads as something the text does not say: a key twice in
 * one object (readers disagree on which counts: json-c keeps the last,
 * others the first), the bare literals NaN and Infinity, a number past a
 * double's range (json-c makes it inf) or an integer past 64 bits (json-c
 * makes it the largest), and a \u0000 inside a string (every C reader
 * stops there, cutting the string). Checked on text json-c has already
 * parsed. */
#ifndef FB_CORE_JSON_LINT_H
#define FB_CORE_JSON_LINT_H

#include <stdbool.h>
#include <stddef.h>

struct fb_json_lint {
    long line;      /* of the offending token, from 1 */
    char what[160]; /* "duplicate key \"size\"", "Infinity is not a JSON number", ... */
};

/* False, with *out filled, at the first such token of `text`, which must
 * be one valid JSON document. */
bool fb_json_lint_ok(const char *text, size_t len, struct fb_json_lint *out);

#endif
