/* The results document of one fabric-coll run (docs/results-schema.md,
 * kind "collective"). Rank 0 owns it and rewrites the file atomically after
 * every size, so a run that dies keeps every finished size. */
#ifndef FB_COLL_RECORD_H
#define FB_COLL_RECORD_H

#include <json-c/json.h>
#include <limits.h>
#include <stdbool.h>

#include "coll/measure.h"
#include "core/status.h"

/* Where the pods' wiring came from (--runtime-source SPEC): a deployed
 * artifact ("delivered:KIND/NAMESPACE/NAME@GENERATION") or one of
 * fabric-bench's own overlays ("fabric-bench:FABRIC"). Empty strings are
 * keys that do not apply. */
struct fb_runtime_source {
    int given, delivered;
    char kind[64], ns[64], name[254], generation[24];
};

struct fb_record {
    json_object *doc;
    json_object *rows;
    char path[PATH_MAX];
    int sizes_planned;
    bool stream;  /* path is a device or FIFO: one document, when the run ends */
    bool faulted; /* a fault is recorded: the run ends with the next save */
};

/* A new document with the envelope filled in; the caller adds the run's
 * description (collective, devices, ...) with json_object_object_add. */
enum fb_status fb_record_new(struct fb_record *rec, const char *path, const char *tool,
                             const char *invoked_as, const char *cluster, struct fb_err *err);

void fb_record_add_row(struct fb_record *rec, const struct fb_call *call, int run, long iterations,
                       const struct fb_measurement *oop, const struct fb_measurement *ip);

/* With rank groups: one row of group `group` (split.groups[group].rows;
 * nothing when the document has no split). */
void fb_record_add_group_row(struct fb_record *rec, int group, const struct fb_call *call, int run,
                             long iterations, const struct fb_measurement *oop, const struct fb_measurement *ip);

void fb_record_warn(struct fb_record *rec, const char *text);

/* runtime_source: the object of `src`, or null when it was not given. */
void fb_record_runtime_source(struct fb_record *rec, const struct fb_runtime_source *src);

/* Records why the run ended early; the document stays incomplete. */
void fb_record_fault(struct fb_record *rec, enum fb_status code, const char *message, int rank,
                     const char *host);

/* The first version on disk, before anything that can be interrupted: a
 * complete document with no rows yet. `exclusive` (a name the program made
 * up) creates a new file, numbered when the name is taken, and rec->path
 * becomes its name; otherwise (-J FILE) the file is replaced. A device or
 * FIFO is only checked now: it gets the document when the run ends. */
enum fb_status fb_record_start(struct fb_record *rec, bool exclusive, struct fb_err *err);

/* Recomputes the summary and writes the file atomically (a stream only
 * once the run is complete or faulted). */
enum fb_status fb_record_save(struct fb_record *rec, int complete, struct fb_err *err);

void fb_record_free(struct fb_record *rec);

/* With repeated runs (-N): per size, the coefficient of variation of the
 * time across runs, and which sizes exceed `threshold_pct`. NULL when every
 * size was measured once. */
json_object *fb_stability_of_rows(json_object *rows, double threshold_pct);

/* Summary over a rows array (also used by readers of old files). */
json_object *fb_summary_of_rows(json_object *rows, int sizes_planned);

#endif
