/* fabric-topo's two outputs: a table for people and a kind "topology"
 * results document (docs/schema/topology.schema.json) for scripts. */
#ifndef FB_DOCTOR_TOPO_OUT_H
#define FB_DOCTOR_TOPO_OUT_H

#include <json-c/json.h>
#include <stdio.h>

#include "doctor/affinity.h"
#include "core/envelope.h"
#include "doctor/topo.h"

void fb_topo_print(FILE *out, const struct fb_topo *t, const struct fb_affinity *a);

/* The whole document: envelope plus body; findings also go to warnings. */
json_object *fb_topo_json(const struct fb_topo *t, const struct fb_affinity *a,
                          const struct fb_envelope_info *info);

#endif
