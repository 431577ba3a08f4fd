/* A verdict on a fabric-rdma results document (kind "probe"), so a link
 * check gates a job as a collective run does: FAIL when it ended with a
 * runtime fault (perftest's "Completion with error", a failed verbs call),
 * INCOMPLETE when it did not finish, DEGRADED when links were flagged slow
 * (each named with its share of the reference, and the endpoints they
 * share), DEGRADED too when an imported perftest run falls short of the
 * atlas's figure for its line rate and memory (report/probe_profile.h),
 * else PASS with the slowest link's figure. */
#ifndef FB_REPORT_PROBE_VERDICT_H
#define FB_REPORT_PROBE_VERDICT_H

#include <json-c/json.h>
#include <stdbool.h>

#include "core/status.h"
#include "core/text.h"
#include "nccl/profiles.h"

/* True when `doc` is a fabric-bench probe document. */
bool fb_is_probe_doc(json_object *doc);

/* Writes the verdict paragraph to `text` and its exit code (FB_OK,
 * FB_VERDICT_DEGRADED, FB_VERDICT_FAIL or FB_VERDICT_INCOMPLETE) to *verdict. FB_ERR_INPUT
 * naming `path` when the document lacks what a probe result holds. `ps`
 * (NULL: none) gives the atlas's link figures. */
enum fb_status fb_probe_judge(json_object *doc, const char *path, const struct fb_profiles *ps, struct fb_str *text,
                              enum fb_status *verdict, struct fb_err *err);

#endif
