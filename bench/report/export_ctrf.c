/* CTRF JSON (https://ctrf.io, spec 0.0.0): results.tool, results.summary
 * and one test per doctor check, verdict or probed link, with the status
 * passed, failed or skipped, the document's own spelling in rawStatus, the
 * evidence as message and the fix or reasons as trace. */
#include "report/export.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <sys/time.h>

#include "core/jsonio.h"

static const char *status_name(enum fb_export_outcome o)
{
    return o == FB_CASE_PASSED ? "passed" : o == FB_CASE_FAILED ? "failed" : "skipped";
}

static json_object *test_json(const struct fb_export_case *c)
{
    json_object *t = json_object_new_object();
    json_object_object_add(t, "name", json_object_new_string(c->name));
    json_object_object_add(t, "status", json_object_new_string(status_name(c->outcome)));
    json_object_object_add(t, "duration", json_object_new_int64((int64_t)(c->seconds * 1000 + 0.5)));
    json_object_object_add(t, "rawStatus", json_object_new_string(c->kind));
    json_object *suite = json_object_new_array();
    json_object_array_add(suite, json_object_new_string(c->suite));
    json_object_object_add(t, "suite", suite);
    if (c->message != NULL)
        json_object_object_add(t, "message", json_object_new_string(c->message));
    if (c->text != NULL)
        json_object_object_add(t, "trace", json_object_new_string(c->text));
    return t;
}

static json_object *summary_json(const struct fb_export *x, json_object *tests)
{
    size_t n[3] = {0};
    for (size_t i = 0; i < x->ncases; i++)
        n[x->cases[i].outcome]++;
    struct timeval now;
    gettimeofday(&now, NULL);
    int64_t ms = (int64_t)now.tv_sec * 1000 + now.tv_usec / 1000;
    json_object *s = json_object_new_object();
    json_object_object_add(s, "tests", json_object_new_int64((int64_t)json_object_array_length(tests)));
    json_object_object_add(s, "passed", json_object_new_int64((int64_t)n[FB_CASE_PASSED]));
    json_object_object_add(s, "failed", json_object_new_int64((int64_t)n[FB_CASE_FAILED]));
    json_object_object_add(s, "skipped", json_object_new_int64((int64_t)n[FB_CASE_SKIPPED]));
    json_object_object_add(s, "pending", json_object_new_int64(0));
    json_object_object_add(s, "other", json_object_new_int64(0));
    /* The documents were judged now; their own times are in them. */
    json_object_object_add(s, "start", json_object_new_int64(ms));
    json_object_object_add(s, "stop", json_object_new_int64(ms));
    return s;
}

void fb_export_write_ctrf(const struct fb_export *x, const char *version, struct fb_str *out)
{
    json_object *tests = json_object_new_array();
    for (size_t i = 0; i < x->ncases; i++)
        json_object_array_add(tests, test_json(&x->cases[i]));
    json_object *tool = json_object_new_object();
    json_object_object_add(tool, "name", json_object_new_string("fabric-bench"));
    json_object_object_add(tool, "version", json_object_new_string(version));
    json_object *results = json_object_new_object();
    json_object_object_add(results, "tool", tool);
    json_object_object_add(results, "summary", summary_json(x, tests));
    json_object_object_add(results, "tests", tests);
    json_object *doc = json_object_new_object();
    json_object_object_add(doc, "reportFormat", json_object_new_string("CTRF"));
    json_object_object_add(doc, "specVersion", json_object_new_string("0.0.0"));
    json_object_object_add(doc, "results", results);
    char *text = fb_json_text(doc, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);
    if (text != NULL)
        fb_str_addf(out, "%s", text);
    else
        out->oom = true;
    free(text);
    json_object_put(doc);
}
