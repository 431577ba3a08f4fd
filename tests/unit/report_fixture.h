/* Helpers shared by the report unit tests: fixture paths and results made
 * by editing a fixture in memory (one knob per test, the rest realistic). */
#ifndef FB_TEST_REPORT_FIXTURE_H
#define FB_TEST_REPORT_FIXTURE_H

#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "core/jsonio.h"
#include "report/result.h"

#define RESULTS "tests/fixtures/report/results/"
#define REFERENCE "results/reference"

static inline json_object *fixture_doc(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, RESULTS "%s", name);
    json_object *doc = NULL;
    struct fb_err err = {0};
    if (fb_json_read_file(path, &doc, &err) != FB_OK) {
        printf("# cannot read fixture %s: %s\n", path, err.msg);
        return NULL;
    }
    return doc;
}

/* Sets the busBW of both placements of the row with `bytes`. */
static inline void set_busbw(json_object *doc, unsigned long long bytes, double oop, double ip)
{
    json_object *rows = json_object_object_get(doc, "rows");
    for (size_t i = 0; i < json_object_array_length(rows); i++) {
        json_object *row = json_object_array_get_idx(rows, i);
        if ((unsigned long long)json_object_get_int64(json_object_object_get(row, "bytes")) != bytes)
            continue;
        json_object_object_add(json_object_object_get(row, "out_of_place"), "busbw_GBps", json_object_new_double(oop));
        json_object_object_add(json_object_object_get(row, "in_place"), "busbw_GBps", json_object_new_double(ip));
    }
}

static inline void set_key(json_object *obj, const char *key, json_object *value)
{
    json_object_object_add(obj, key, value);
}

/* Loads a doc as a result (takes the doc); the test fails if it does not load. */
static inline enum fb_status result_of(json_object *doc, struct fb_result *r, struct fb_err *err)
{
    return fb_result_from_json(doc, "test.json", r, err);
}

#endif
