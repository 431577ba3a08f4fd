/* fabric-doctor's outputs for a list of checks: a checklist for people
 * and a kind "doctor" results document (docs/schema/doctor.schema.json). */
#ifndef FB_DOCTOR_CHECKLIST_H
#define FB_DOCTOR_CHECKLIST_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdio.h>

#include "doctor/check.h"
#include "core/envelope.h"

/* What was examined, as key/value pairs: shown on the header line and kept
 * as the document's "target" object. */
struct fb_target_kv {
    const char *key;
    const char *value;
};

struct fb_checklist {
    const char *mode; /* "node" or "cluster" */
    const struct fb_target_kv *target;
    size_t ntarget;
    const struct fb_check *checks;
    size_t nchecks;
};

void fb_checklist_print(FILE *out, const struct fb_checklist *list);
json_object *fb_checklist_json(const struct fb_checklist *list,
                               const struct fb_envelope_info *info);

#endif
