/* The envelope every results document shares (docs/results-schema.md):
 * schema and version, kind, completeness, fault, tool, cluster, times,
 * hosts, environment, warnings. Each program adds its body. */
#ifndef FB_CORE_ENVELOPE_H
#define FB_CORE_ENVELOPE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

struct fb_envelope_info {
    const char *kind;       /* "collective", "probe", "doctor", "topology" */
    const char *tool;       /* "fabric-doctor" */
    const char *invoked_as; /* argv[0] */
    const char *cluster;    /* --cluster, or NULL: $FABRIC_CLUSTER, else host */
    const char *host;       /* the host described, or NULL: this host */
    /* A measurement in progress: complete false, end_time null until
     * fb_envelope_finish. Otherwise (a snapshot such as a doctor report)
     * complete from the start and ended when written. */
    int running;
};

/* A new document with every envelope key set; `warnings` is an empty array
 * the caller fills. */
json_object *fb_envelope_new(const struct fb_envelope_info *info);

/* Adds one line to the envelope's warnings array. */
void fb_envelope_warn(json_object *doc, const char *message);

/* Records why a measurement ended early: {status, exit_code, message, rank,
 * host} (rank < 0 and host NULL when unknown). */
void fb_envelope_fault(json_object *doc, enum fb_status code, const char *message, int rank,
                       const char *host);

/* Sets complete and, when complete, end_time. */
void fb_envelope_finish(json_object *doc, int complete);

/* Writes the document to stdout (path "-") or atomically to a file. */
enum fb_status fb_envelope_write(json_object *doc, const char *path, struct fb_err *err);

/* Cluster labels name results directories (DIR/LABEL/...), so they must
 * stay inside DIR and distinct: 1 to FB_LABEL_MAX-1 bytes of [A-Za-z0-9._-],
 * not "." or "..". */
#define FB_LABEL_MAX 128
bool fb_label_ok(const char *name);

/* `name` mapped into that alphabet one to one: other bytes (and the dots
 * of "." and "..") become %XX, so distinct names stay distinct; "" becomes
 * "unnamed". */
void fb_label_escape(const char *name, char *out, size_t len);

/* The cluster label of a document: `given`, else $FABRIC_CLUSTER, else
 * `fallback` (a host name), escaped as above. */
void fb_cluster_label(const char *given, const char *fallback, char *out, size_t len);

/* The same for a program that files results under the label: a label the
 * user gave (--cluster, FABRIC_CLUSTER) that is not fb_label_ok is
 * FB_ERR_USAGE naming where it came from and the alphabet; the fallback
 * host name is escaped. */
enum fb_status fb_cluster_label_checked(const char *given, const char *fallback, char *out, size_t len,
                                        struct fb_err *err);

/* `name` cut to that alphabet (others become '_'), for labels that name
 * no directory. */
void fb_label_safe(const char *name, char *out, size_t len);

/* Where a measurement's results go: -J PATH when given, else
 * DIR/CLUSTER/STAMP-WHAT.json (WHAT: "all_reduce", "probe-verbs"), a first
 * choice that fb_json_create numbers when a run of the same second has it. */
struct fb_results_name {
    const char *json_path; /* -J, or NULL */
    const char *dir;       /* --results-dir */
    const char *cluster;   /* a label from fb_cluster_label */
    const char *what;
};
enum fb_status fb_results_path(const struct fb_results_name *n, char *path, size_t len,
                               struct fb_err *err);

#endif
