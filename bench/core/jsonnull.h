/* Facts a document cannot state (a device hwloc could not place, an
 * attribute sysfs did not have) are JSON null, never -1 or "", so a reader
 * tells "unknown" from a value without knowing each producer's sentinel. */
#ifndef FB_CORE_JSONNULL_H
#define FB_CORE_JSONNULL_H

#include <json-c/json.h>

/* An int, or null when v is negative (the sentinel for "not known"). */
json_object *fb_json_int_or_null(int v);

/* A string, or null when s is NULL or empty. */
json_object *fb_json_string_or_null(const char *s);

#endif
