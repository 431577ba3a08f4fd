/* The results envelope (docs/results-schema.md) for the documents this
 * module writes: kind "doctor" and kind "topology". Both describe a moment,
 * not a run, so they are complete from the start and end when written. */
#ifndef FB_DOCTOR_ENVELOPE_H
#define FB_DOCTOR_ENVELOPE_H

#include <json-c/json.h>

#include "core/status.h"

struct fb_envelope_info {
    const char *kind;       /* "doctor" or "topology" */
    const char *tool;       /* "fabric-doctor" */
    const char *invoked_as; /* argv[0] */
    const char *cluster;    /* --cluster, or NULL: $FABRIC_CLUSTER, else host */
    const char *host;       /* the host described, or NULL: this host */
};

/* A new document with every envelope key set; `warnings` is an empty array
 * the caller fills. start_time and end_time are both now. */
json_object *fb_envelope_new(const struct fb_envelope_info *info);

/* Adds one line to the envelope's warnings array. */
void fb_envelope_warn(json_object *doc, const char *message);

/* Writes the document to stdout (path "-") or atomically to a file. */
enum fb_status fb_envelope_write(json_object *doc, const char *path, struct fb_err *err);

#endif
