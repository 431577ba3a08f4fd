/* JSON files on disk: atomic writes (temp file, fsync, rename) so a reader
 * or a crash never sees half a file, text that is always valid UTF-8, and
 * reads that turn every way a file can be wrong into one line naming the
 * file. */
#ifndef FB_CORE_JSONIO_H
#define FB_CORE_JSONIO_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/outfile.h"
#include "core/status.h"

/* How results files are laid out: indented, "a": 1, slashes as they are. */
#define FB_JSON_FILE_FLAGS \
    (JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE)

/* The one serialiser of every document written: json-c's text with `flags`
 * and a final newline, valid UTF-8 whatever bytes the strings held (bytes
 * that are not become U+FFFD). NULL when out of memory; free it. */
char *fb_json_text(json_object *obj, int flags);

/* Writes the document to `path` as core/outfile.h says: a regular file (or
 * nothing yet) replaced atomically, a device or FIFO written into, anything
 * else refused (FB_ERR_IO). */
enum fb_status fb_json_write_atomic(const char *path, json_object *obj,
                                    struct fb_err *err);

/* The same for a path another option chose (`flag`, e.g. "-o FILE"): the
 * error names that option. */
enum fb_status fb_json_write_atomic_for(const char *path, json_object *obj, const char *flag,
                                        struct fb_err *err);

/* Writes the document to a new file, never over an existing one: `path`,
 * else PATH-2.json, PATH-3.json ...; `path` becomes the name taken. */
enum fb_status fb_json_create(char *path, size_t cap, json_object *obj, struct fb_err *err);

/* The document on `f` (standard output), flushed; FB_ERR_IO when it fails. */
enum fb_status fb_json_print(FILE *f, json_object *obj, int flags, struct fb_err *err);

/* Why a text is not one JSON document: json-c's error, how far it got, and
 * whether the text merely ends early (a run killed while writing). */
struct fb_json_syntax {
    enum json_tokener_error error;
    size_t offset;
    bool truncated;
};

/* Parses `len` bytes of text as exactly one JSON document (trailing blanks
 * allowed, anything else refused). FB_ERR_INPUT naming `name`, the error and
 * the byte when it is not; *why says so too, for callers with a message of
 * their own. FB_ERR_INTERNAL only when the parser cannot be allocated. */
enum fb_status fb_json_parse_text(const char *name, const char *text, size_t len, json_object **doc,
                                  struct fb_json_syntax *why, struct fb_err *err);

/* Reads and parses a whole file; FB_ERR_INPUT on a missing, empty, truncated
 * or non-JSON file, with the parser's position in the message. */
enum fb_status fb_json_read_file(const char *path, json_object **out,
                                 struct fb_err *err);

/* What a document is, for messages that name the file of the wrong kind:
 * "an array", "a reference profile", "a probe result (fabric-rdma)",
 * "a kubectl list", "nccl-tests -J output", ... */
const char *fb_json_doc_kind(json_object *doc);

/* Facts a document cannot state (a device hwloc could not place, an
 * attribute sysfs did not have) are JSON null, never -1 or "", so a reader
 * tells "unknown" from a value without knowing each producer's sentinel:
 * an int, or null when negative; a string, or null when NULL or empty. */
json_object *fb_json_int_or_null(int v);
json_object *fb_json_string_or_null(const char *s);

/* Non-finite doubles become null: JSON has no NaN, and a NaN bandwidth must
 * not make the file unreadable. */
json_object *fb_json_number(double v);

/* The value at `key`, or NULL when obj is NULL, not an object, or lacks it
 * (JSON null is NULL too: json-c stores it so). */
json_object *fb_json_member(json_object *obj, const char *key);

/* Typed look-ups that return false when the key is absent or of the wrong
 * type (or obj is not an object), leaving *out untouched. */
bool fb_json_get_double(json_object *obj, const char *key, double *out);
bool fb_json_get_int64(json_object *obj, const char *key, int64_t *out);
bool fb_json_get_bool(json_object *obj, const char *key, bool *out);
const char *fb_json_get_string(json_object *obj, const char *key);

/* An optional integer member that must lie in [min, max]: absent, found
 * (stored in *out) or wrong (present but not an integer in range), so each
 * reader words its own error. */
enum fb_json_found { FB_JSON_ABSENT, FB_JSON_FOUND, FB_JSON_WRONG };
enum fb_json_found fb_json_get_ranged(json_object *obj, const char *key, long long min, long long max,
                                      long *out);

#endif
