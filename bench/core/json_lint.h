/* What json-c accepts but JSON does not allow, or allows and leaves
 * ambiguous: a key twice in one object (readers disagree on which counts:
 * json-c keeps the last, others the first) and the bare literals NaN and
 * Infinity. Checked on text json-c has already parsed. */
#ifndef FB_CORE_JSON_LINT_H
#define FB_CORE_JSON_LINT_H

#include <stdbool.h>
#include <stddef.h>

struct fb_json_lint {
    long line;      /* of the offending token, from 1 */
    char what[160]; /* "duplicate key \"size\"", "Infinity is not a JSON number" */
};

/* False, with *out filled, at the first such token of `text`, which must
 * be one valid JSON document. */
bool fb_json_lint_ok(const char *text, size_t len, struct fb_json_lint *out);

#endif
