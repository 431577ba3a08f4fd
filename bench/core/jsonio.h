/* JSON files on disk: atomic writes (temp file, fsync, rename) so a reader
 * or a crash never sees half a file, and reads that turn every way a file can
 * be wrong into one line naming the file. */
#ifndef FB_CORE_JSONIO_H
#define FB_CORE_JSONIO_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"

/* mkdir -p for the directory part of `path` (the file itself not created);
 * a failure names `flag`, the option that chose the path ("-o FILE"). */
enum fb_status fb_make_parent_dirs(const char *path, const char *flag, struct fb_err *err);

/* Creates the parent directories and proves a file can be written and
 * renamed there, before any measurement is spent. */
enum fb_status fb_probe_writable(const char *path, struct fb_err *err);

/* A failure names "-J FILE" as the option to change, or `flag` (_for). */
enum fb_status fb_json_write_atomic(const char *path, json_object *obj,
                                    struct fb_err *err);
enum fb_status fb_json_write_atomic_for(const char *path, json_object *obj, const char *flag,
                                        struct fb_err *err);

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
