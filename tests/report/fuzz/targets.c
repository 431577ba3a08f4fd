/* Fuzz targets of fabric-report: each takes arbitrary bytes and must never
 * crash, leak or trip a sanitizer, whatever the input. Built two ways:
 * with libFuzzer by tests/report/fuzz.sh (fuzz_main.c), and into the unit
 * test test_report_fuzz, which replays every saved input
 * (tests/fixtures/report/fuzz/<target>/) on each test run.
 *
 * Beyond "no crash", the importers must only ever produce documents the
 * results reader accepts: an imported file that check/compare refuse
 * would be a bug, so that is checked (abort) too. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonio.h"
#include "report/compare.h"
#include "report/import.h"
#include "nccl/nccl_log.h"
#include "report/plot.h"
#include "report/profile_match.h"
#include "report/result.h"
#include "report/verdict.h"

static struct fb_profiles *fuzz_profiles(void)
{
    static struct fb_profiles ps;
    static int loaded;
    if (!loaded) {
        const char *dirs[] = {"results/reference"};
        struct fb_err err = {0};
        if (fb_profiles_load(dirs, 1, &ps, &err) != FB_OK)
            memset(&ps, 0, sizeof ps);
        loaded = 1;
    }
    return &ps;
}

static json_object *parse_bytes(const uint8_t *data, size_t size)
{
    json_tokener *tok = json_tokener_new();
    if (tok == NULL)
        return NULL;
    json_object *doc = json_tokener_parse_ex(tok, (const char *)data, (int)(size > 1 << 20 ? 1 << 20 : size));
    if (json_tokener_get_error(tok) != json_tokener_success && doc != NULL) {
        json_object_put(doc);
        doc = NULL;
    }
    json_tokener_free(tok);
    return doc;
}

/* Everything the subcommands do with a result that loaded. */
static void exercise_result(struct fb_result *r)
{
    struct fb_summary s;
    fb_summary_compute(r->rows, r->nrows, &s);
    json_object_put(fb_summary_json(&s, r->sizes_planned, r->sizes_done));
    struct fb_err err = {0};
    struct fb_verdict v;
    if (fb_verdict_judge(r, fuzz_profiles(), NULL, &v, &err) == FB_OK) {
        struct fb_str text = {0};
        fb_verdict_text(&v, r, &text);
        fb_str_free(&text);
        json_object_put(fb_verdict_json(&v, r));
    }
    fb_verdict_free(&v);
    struct fb_result_set set = {.r = r, .n = 1};
    for (int f = FB_CMP_TEXT; f <= FB_CMP_JSON; f++) {
        struct fb_compare_opts o = {.format = (enum fb_compare_format)f, .noise = 0.05};
        struct fb_str out = {0};
        fb_err_clear(&err);
        fb_compare(&set, &o, &out, &err);
        fb_str_free(&out);
    }
    const char *data[] = {"/dev/null"};
    struct fb_plot_opts po = {.out = "x.png", .width = 800, .height = 600};
    struct fb_plot_line line = {"line 'quoted'", 10, true};
    struct fb_str script = {0};
    fb_plot_script(&set, data, &line, 1, &po, "x.png", &script);
    fb_str_free(&script);
    const struct fb_result *runs[] = {r};
    json_object *prof = NULL;
    fb_err_clear(&err);
    if (fb_profile_from_results(runs, 1, "fuzz", 0.1, &prof, &err) == FB_OK) {
        struct fb_profile p;
        fb_err_clear(&err);
        if (fb_profile_parse(prof, "fuzz", &p, &err) != FB_OK) {
            fprintf(stderr, "baseline profile does not parse back: %s\n", err.msg);
            abort();
        }
        json_object_put(prof);
    }
}

int fuzz_results(const uint8_t *data, size_t size)
{
    json_object *doc = parse_bytes(data, size);
    if (doc == NULL)
        return 0;
    struct fb_result r;
    struct fb_err err = {0};
    if (fb_result_from_json(doc, "fuzz.json", &r, &err) == FB_OK) {
        exercise_result(&r);
        fb_result_free(&r);
    }
    return 0;
}

/* Imported collective documents must load as results; serialise and read
 * them back as a file would be. */
static void check_imported(struct fb_import_out *out)
{
    for (size_t i = 0; i < out->n; i++) {
        const char *kind = fb_json_get_string(out->docs[i], "kind");
        if (kind == NULL || strcmp(kind, "collective") != 0)
            continue;
        const char *text = json_object_to_json_string(out->docs[i]);
        json_object *back = parse_bytes((const uint8_t *)text, strlen(text));
        struct fb_result r;
        struct fb_err err = {0};
        if (back == NULL || fb_result_from_json(back, "imported.json", &r, &err) != FB_OK) {
            fprintf(stderr, "imported document does not load: %s\n", err.msg);
            abort();
        }
        exercise_result(&r);
        fb_result_free(&r);
    }
}

static int fuzz_import(const uint8_t *data, size_t size, enum fb_import_format f)
{
    struct fb_import_opts o = {.mtime = 0};
    struct fb_import_out out = {0};
    struct fb_err err = {0};
    if (fb_import_text("fuzz_all_reduce.txt", (const char *)data, size, f, &o, &out, &err) == FB_OK)
        check_imported(&out);
    fb_import_out_free(&out);
    return 0;
}

int fuzz_ncclt_text(const uint8_t *data, size_t size)
{
    return fuzz_import(data, size, FB_IMPORT_NCCLT_TEXT);
}

int fuzz_ncclt_json(const uint8_t *data, size_t size)
{
    return fuzz_import(data, size, FB_IMPORT_NCCLT_JSON);
}

int fuzz_perftest(const uint8_t *data, size_t size)
{
    fuzz_import(data, size, FB_IMPORT_PERFTEST_TEXT);
    return fuzz_import(data, size, FB_IMPORT_PERFTEST_JSON);
}

int fuzz_import_auto(const uint8_t *data, size_t size)
{
    return fuzz_import(data, size, FB_IMPORT_AUTO);
}

int fuzz_nccl_log(const uint8_t *data, size_t size)
{
    struct fb_nccl_log *log = fb_nccl_log_new();
    struct fb_err err = {0};
    json_object *t = NULL;
    if (log != NULL && fb_nccl_log_feed(log, "fuzz.log", (const char *)data, size, &err) == FB_OK &&
        fb_nccl_log_transport(log, &t, &err) == FB_OK) {
        /* The transport object must be what the results reader accepts. */
        static const char base[] = "{\"schema\":\"fabric-bench.result\",\"schema_version\":1,"
                                   "\"kind\":\"collective\",\"complete\":true,\"collective\":\"all_reduce\",\"rows\":[]}";
        json_object *doc = parse_bytes((const uint8_t *)base, sizeof base - 1);
        json_object_object_add(doc, "transport", t);
        struct fb_result r;
        if (fb_result_from_json(doc, "transport.json", &r, &err) != FB_OK) {
            fprintf(stderr, "transport object does not load: %s\n", err.msg);
            abort();
        }
        exercise_result(&r);
        fb_result_free(&r);
    }
    fb_nccl_log_free(log);
    return 0;
}

int fuzz_profile(const uint8_t *data, size_t size)
{
    json_object *doc = parse_bytes(data, size);
    if (doc == NULL)
        return 0;
    struct fb_profile p;
    struct fb_err err = {0};
    fb_profile_parse(doc, "fuzz-profile.json", &p, &err);
    json_object_put(doc);
    return 0;
}
