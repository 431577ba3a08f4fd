#include "core/jsonio.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/files.h"
#include "core/json_lint.h"
#include "core/text.h"

char *fb_json_text(json_object *obj, int flags)
{
    const char *text = json_object_to_json_string_ext(obj, flags);
    if (text == NULL)
        return NULL;
    /* json-c copies bytes >= 0x80 through as they are: an environment
     * variable or host name that is not UTF-8 would make the whole file
     * unreadable to strict readers. Structure is ASCII, so only string
     * contents change. */
    size_t n = 0;
    char *clean = fb_utf8_sanitize(text, strlen(text), &n);
    char *out = clean ? realloc(clean, n + 2) : NULL;
    if (out == NULL) {
        free(clean);
        return NULL;
    }
    memcpy(out + n, "\n", 2);
    return out;
}

enum fb_status fb_json_write_atomic(const char *path, json_object *obj,
                                    struct fb_err *err)
{
    char *text = fb_json_text(obj, FB_JSON_FILE_FLAGS);
    if (text == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "cannot serialise JSON for %s (out of memory)", path);
    enum fb_status st = fb_out_write(path, text, strlen(text), err);
    free(text);
    return st;
}

enum fb_status fb_json_write_atomic_for(const char *path, json_object *obj, const char *flag,
                                        struct fb_err *err)
{
    enum fb_status st = fb_json_write_atomic(path, obj, err);
    if (st != FB_OK && flag != NULL)
        fb_out_name_option(err, flag);
    return st;
}

enum fb_status fb_json_create(char *path, size_t cap, json_object *obj, struct fb_err *err)
{
    char *text = fb_json_text(obj, FB_JSON_FILE_FLAGS);
    if (text == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "cannot serialise JSON for %s (out of memory)", path);
    enum fb_status st = fb_out_create(path, cap, text, strlen(text), err);
    free(text);
    return st;
}

enum fb_status fb_json_print(FILE *f, json_object *obj, int flags, struct fb_err *err)
{
    char *text = fb_json_text(obj, flags);
    if (text == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "cannot serialise JSON (out of memory)");
    bool ok = fputs(text, f) != EOF && fflush(f) == 0;
    free(text);
    return ok ? FB_OK : fb_fail(err, FB_ERR_IO, "cannot write JSON to standard output: %s", strerror(errno));
}

static size_t first_non_space(const char *text, size_t from, size_t len)
{
    while (from < len && (text[from] == ' ' || text[from] == '\n' || text[from] == '\r' || text[from] == '\t'))
        from++;
    return from;
}

enum fb_status fb_json_parse_text(const char *name, const char *text, size_t len, json_object **doc,
                                  struct fb_json_syntax *why, struct fb_err *err)
{
    *doc = NULL;
    memset(why, 0, sizeof *why);
    json_tokener *tok = json_tokener_new();
    if (tok == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory parsing %s", name);
    /* json-c takes an int length: past 2 GiB the document reads as cut short. */
    json_object *obj = json_tokener_parse_ex(tok, text, (int)(len > INT_MAX ? INT_MAX : len));
    why->error = json_tokener_get_error(tok);
    why->offset = json_tokener_get_parse_end(tok);
    /* A bare number or literal at the very end ("42", "null") waits for a
     * delimiter: one blank tells it ended rather than was cut. */
    if (obj == NULL && why->error == json_tokener_continue && len <= INT_MAX) {
        obj = json_tokener_parse_ex(tok, " ", 1);
        why->error = json_tokener_get_error(tok);
        why->offset = len;
    }
    json_tokener_free(tok);
    if (obj != NULL && why->error == json_tokener_success) {
        /* Trailing non-space text means two documents or garbage. */
        size_t junk = first_non_space(text, why->offset, len);
        struct fb_json_lint lint;
        if (junk == len && !fb_json_lint_ok(text, len, &lint)) {
            json_object_put(obj);
            why->error = json_tokener_error_parse_unexpected;
            return fb_fail(err, FB_ERR_INPUT, "%s, line %ld: %s; fix the file (each key once in an object, finite numbers within a double's range, no \\u0000 in a string)",
                           name, lint.line, lint.what);
        }
        if (junk == len) {
            *doc = obj;
            return FB_OK;
        }
        why->error = json_tokener_error_parse_unexpected;
        why->offset = junk;
    }
    json_object_put(obj);
    /* json-c returns no object for a literal null: success, nothing built. */
    if (obj == NULL && why->error == json_tokener_success) {
        size_t junk = first_non_space(text, why->offset, len);
        why->error = json_tokener_error_parse_unexpected;
        if (junk == len)
            return fb_fail(err, FB_ERR_INPUT, "%s holds only null at the top level, not a JSON object", name);
        why->offset = junk;
    }
    why->truncated = why->error == json_tokener_continue;
    if (why->truncated)
        return fb_fail(err, FB_ERR_INPUT, "%s is truncated (JSON ends early at byte %zu); rerun or restore the file", name, len);
    return fb_fail(err, FB_ERR_INPUT, "%s is not valid JSON (%s at byte %zu)", name,
                   json_tokener_error_desc(why->error), why->offset);
}

enum fb_status fb_json_read_file(const char *path, json_object **out, struct fb_err *err)
{
    char *text = NULL;
    size_t len = 0;
    enum fb_status st = fb_read_file(path, &text, &len, err);
    if (st != FB_OK)
        return st;
    if (len == 0)
        st = fb_fail(err, FB_ERR_INPUT, "%s is empty; expected a fabric-bench results JSON file", path);
    else if (strlen(text) != len)
        st = fb_fail(err, FB_ERR_INPUT, "%s contains NUL bytes; it is not a JSON text file", path);
    else {
        struct fb_json_syntax why;
        st = fb_json_parse_text(path, text, len, out, &why, err);
    }
    free(text);
    return st;
}

/* The documents this suite writes, by schema and kind (NULL: any kind). */
static const struct {
    const char *schema, *kind, *what;
} own_kinds[] = {
    {"fabric-bench.profile", NULL, "a reference profile"},
    {"fabric-bench.result", "collective", "a collective result (fabric-coll)"},
    {"fabric-bench.result", "probe", "a probe result (fabric-rdma)"},
    {"fabric-bench.result", "doctor", "a fabric-doctor report"},
    {"fabric-bench.result", "topology", "a fabric-topo document"},
};

/* The producers this suite reads or meets by mistake, told apart by the
 * members each always writes. */
static const char *object_kind(json_object *doc)
{
    const char *schema = fb_json_get_string(doc, "schema"), *kind = fb_json_get_string(doc, "kind");
    for (size_t i = 0; schema != NULL && i < sizeof own_kinds / sizeof *own_kinds; i++)
        if (strcmp(schema, own_kinds[i].schema) == 0 &&
            (own_kinds[i].kind == NULL || (kind != NULL && strcmp(kind, own_kinds[i].kind) == 0)))
            return own_kinds[i].what;
    if (schema != NULL && strncmp(schema, "fabric-bench.", 13) == 0)
        return "a fabric-bench document of another kind";
    if (fb_json_get_string(doc, "apiVersion") != NULL && json_object_is_type(fb_json_member(doc, "items"), json_type_array))
        return "a kubectl list";
    if (fb_json_get_string(doc, "apiVersion") != NULL && kind != NULL)
        return "a single Kubernetes object";
    if (fb_json_member(doc, "results") != NULL && fb_json_member(doc, "config") != NULL)
        return "nccl-tests -J output";
    return "a JSON object of an unknown kind";
}

const char *fb_json_doc_kind(json_object *doc)
{
    switch (json_object_get_type(doc)) {
    case json_type_null: return "null";
    case json_type_boolean: return "a boolean";
    case json_type_double:
    case json_type_int: return "a number";
    case json_type_string: return "a string";
    case json_type_array: return "an array";
    case json_type_object: return object_kind(doc);
    }
    return "a JSON value";
}

json_object *fb_json_int_or_null(int v)
{
    return v >= 0 ? json_object_new_int(v) : NULL;
}

json_object *fb_json_string_or_null(const char *s)
{
    return s != NULL && s[0] != '\0' ? json_object_new_string(s) : NULL;
}

json_object *fb_json_number(double v)
{
    return isfinite(v) ? json_object_new_double(v) : NULL;
}

json_object *fb_json_member(json_object *obj, const char *key)
{
    json_object *v = NULL;
    if (!json_object_is_type(obj, json_type_object) || !json_object_object_get_ex(obj, key, &v))
        return NULL;
    return v;
}

bool fb_json_get_double(json_object *obj, const char *key, double *out)
{
    json_object *v = fb_json_member(obj, key);
    if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
        return false;
    *out = json_object_get_double(v);
    return true;
}

bool fb_json_get_int64(json_object *obj, const char *key, int64_t *out)
{
    json_object *v = fb_json_member(obj, key);
    if (!json_object_is_type(v, json_type_int))
        return false;
    *out = json_object_get_int64(v);
    return true;
}

bool fb_json_get_bool(json_object *obj, const char *key, bool *out)
{
    json_object *v = fb_json_member(obj, key);
    if (!json_object_is_type(v, json_type_boolean))
        return false;
    *out = json_object_get_boolean(v);
    return true;
}

const char *fb_json_get_string(json_object *obj, const char *key)
{
    json_object *v = fb_json_member(obj, key);
    if (!json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

enum fb_json_found fb_json_get_ranged(json_object *obj, const char *key, long long min, long long max,
                                      long *out)
{
    json_object *v = fb_json_member(obj, key);
    if (v == NULL)
        return FB_JSON_ABSENT;
    if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < min ||
        json_object_get_int64(v) > max)
        return FB_JSON_WRONG;
    *out = (long)json_object_get_int64(v);
    return FB_JSON_FOUND;
}
