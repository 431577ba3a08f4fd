/* fabric-report export: results, check, probe and doctor documents as
 * metrics (OpenMetrics or the Prometheus text format) or as test reports
 * (JUnit XML, CTRF JSON) for CI dashboards.
 *
 * Every document is first turned into one neutral model, samples of the
 * metric families below and test cases, so that each output format is one
 * writer of that model and each document kind one reader of it
 * (export.c's kind table). */
#ifndef FB_REPORT_EXPORT_H
#define FB_REPORT_EXPORT_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"
#include "core/text.h"
#include "nccl/profiles.h"

enum fb_export_format {
    FB_EXPORT_OPENMETRICS,
    FB_EXPORT_PROMETHEUS,
    FB_EXPORT_JUNIT,
    FB_EXPORT_CTRF,
};

/* The metric families, in the order they are written. */
enum fb_export_family {
    FB_FAM_BUSBW,
    FB_FAM_ALGBW,
    FB_FAM_TIME,
    FB_FAM_VERDICT,
    FB_FAM_DOCTOR_CHECK,
    FB_FAM_PROBE_BW,
    FB_FAM_SCAN_NODE,
    FB_FAM_SCAN_NODE_BW,
    FB_FAM_SCAN_SUSPECTS,
    FB_FAM_COUNT,
};

struct fb_export_family_desc {
    const char *name; /* ends in the unit when there is one (OpenMetrics) */
    const char *unit; /* NULL when the value has none */
    const char *help;
};

const struct fb_export_family_desc *fb_export_family(enum fb_export_family f);

/* One sample: its family, its label set rendered and escaped
 * (a="x",b="y"), its value. */
struct fb_export_sample {
    enum fb_export_family family;
    char *labels;
    double value;
};

enum fb_export_outcome { FB_CASE_PASSED, FB_CASE_FAILED, FB_CASE_SKIPPED };

/* One test case: a doctor check, the verdict on a document, a probed pair. */
struct fb_export_case {
    char *suite;    /* the document it came from: "doctor cluster lab (FILE)" */
    char *name;     /* the check, verdict or pair */
    enum fb_export_outcome outcome;
    char *kind;     /* the verdict as the document spells it: "FAIL", "warn" */
    double seconds; /* 0 when the document does not time it */
    char *message;  /* the evidence; NULL for none */
    char *text;     /* the fix or the reasons; NULL for none */
};

struct fb_export {
    struct fb_export_sample *samples;
    size_t nsamples;
    struct fb_export_case *cases;
    size_t ncases;
    size_t duplicates; /* samples replaced by a later document of the same series */
    size_t documents;
    json_object *seen; /* the series given so far */
};

/* Reads the files and directories (searched for *.json; JSON of another
 * kind there, such as profiles, is passed over) into `x`. FB_ERR_INPUT
 * naming the file for a named file of no known kind or a document that does
 * not read, and when nothing was found. `ps`: the profiles results
 * documents are judged against. */
enum fb_status fb_export_load(const char *const *paths, int npaths, const struct fb_profiles *ps,
                              struct fb_export *x, struct fb_err *err);

void fb_export_free(struct fb_export *x);

/* Writes the model in `format` to `out`. */
void fb_export_write(const struct fb_export *x, enum fb_export_format format, const char *version,
                     struct fb_str *out);

/* The format named on the command line; false when unknown. */
bool fb_export_format_parse(const char *name, enum fb_export_format *f);

/* Model building, for the readers (and the unit tests). A label set is
 * given as NULL-terminated name, value pairs; NULL values are left out.
 * A sample whose family and labels repeat one already given is dropped
 * (a series has one value) and counted. */
enum fb_status fb_export_add_sample(struct fb_export *x, enum fb_export_family f, double value,
                                    struct fb_err *err, ...);
enum fb_status fb_export_add_case(struct fb_export *x, const struct fb_export_case *c,
                                  struct fb_err *err);

/* Escaping, per format. */
void fb_export_label_escape(struct fb_str *out, const char *value); /* \\ \" \n */
void fb_export_xml_escape(struct fb_str *out, const char *text);     /* & < > " ' and controls */
/* A number as the text formats want it: NaN, +Inf, -Inf, else %.17g-exact. */
void fb_export_number(struct fb_str *out, double v);

/* The three writers. */
void fb_export_write_metrics(const struct fb_export *x, bool openmetrics, struct fb_str *out);
void fb_export_write_junit(const struct fb_export *x, struct fb_str *out);
void fb_export_write_ctrf(const struct fb_export *x, const char *version, struct fb_str *out);

#endif
