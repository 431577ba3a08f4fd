#include "report/import.h"

#include <stdlib.h>
#include <string.h>

#include "core/text.h"

static const char *const format_names[] = {
    [FB_IMPORT_AUTO] = "auto",
    [FB_IMPORT_NCCLT_TEXT] = "nccl-tests-text",
    [FB_IMPORT_NCCLT_JSON] = "nccl-tests-json",
    [FB_IMPORT_PERFTEST_TEXT] = "perftest-text",
    [FB_IMPORT_PERFTEST_JSON] = "perftest-json",
};

const char *fb_import_format_name(enum fb_import_format f)
{
    return format_names[f];
}

enum fb_status fb_import_format_parse(const char *name, enum fb_import_format *f, struct fb_err *err)
{
    for (size_t i = 0; i < sizeof format_names / sizeof *format_names; i++)
        if (strcmp(name, format_names[i]) == 0) {
            *f = (enum fb_import_format)i;
            return FB_OK;
        }
    return fb_fail(err, FB_ERR_USAGE, "--format %s: use auto, nccl-tests-text, nccl-tests-json, perftest-text or perftest-json", name);
}

static bool contains(const char *text, size_t len, const char *needle)
{
    return memmem(text, len, needle, strlen(needle)) != NULL;
}

/* "  1048576  262144  float  sum  -1  93.64 ...": a table line cut out of
 * its header still reads as nccl-tests (two integers, a type, a reduction). */
static bool has_table_line(const char *text, size_t len)
{
    static const char *const types[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64",
                                        "half", "float", "double", "bfloat16"};
    size_t pos = 0, n = 0;
    const char *line = NULL;
    for (int lines = 0; lines < 200 && fb_next_line(text, len, &pos, &line, &n); lines++) {
        char buf[512];
        fb_copy(buf, sizeof buf, line, n);
        char *tok[16];
        unsigned long long a, b;
        if (fb_tokens(buf, tok, 16) < 12 || !fb_parse_u64_token(tok[0], &a) || !fb_parse_u64_token(tok[1], &b))
            continue;
        for (size_t i = 0; i < sizeof types / sizeof *types; i++)
            if (strcmp(tok[2], types[i]) == 0)
                return true;
    }
    return false;
}

enum fb_status fb_import_detect(const char *name, const char *text, size_t len,
                                enum fb_import_format *f, struct fb_err *err)
{
    size_t i = 0;
    while (i < len && (text[i] == ' ' || text[i] == '\n' || text[i] == '\r' || text[i] == '\t'))
        i++;
    if (i < len && text[i] == '{') {
        if (contains(text, len, "\"test_info\""))
            *f = FB_IMPORT_PERFTEST_JSON;
        else if (contains(text, len, "\"results\"") || contains(text, len, "\"nccl_version\"") ||
                 (contains(text, len, "\"args\"") && contains(text, len, "\"config\"")))
            *f = FB_IMPORT_NCCLT_JSON;
        else if (contains(text, len, "\"fabric-bench.result\""))
            return fb_fail(err, FB_ERR_INPUT, "%s is already a fabric-bench result; nothing to import", name);
        else
            return fb_fail(err, FB_ERR_INPUT, "%s is JSON but neither nccl-tests -J nor perftest --out_json output", name);
        return FB_OK;
    }
    if (contains(text, len, "#bytes") && contains(text, len, "#iterations")) {
        *f = FB_IMPORT_PERFTEST_TEXT;
        return FB_OK;
    }
    if (contains(text, len, "# nThread") || contains(text, len, "Avg bus bandwidth") ||
        contains(text, len, "Collective test starting") || contains(text, len, "busbw") ||
        has_table_line(text, len)) {
        *f = FB_IMPORT_NCCLT_TEXT;
        return FB_OK;
    }
    return fb_fail(err, FB_ERR_INPUT, "%s is not an nccl-tests or perftest output this importer knows; name the format with --format", name);
}

enum fb_status fb_import_text(const char *name, const char *text, size_t len, enum fb_import_format f,
                              const struct fb_import_opts *o, struct fb_import_out *out,
                              struct fb_err *err)
{
    if (f == FB_IMPORT_AUTO) {
        enum fb_status st = fb_import_detect(name, text, len, &f, err);
        if (st != FB_OK)
            return st;
    }
    switch (f) {
    case FB_IMPORT_NCCLT_TEXT: return fb_import_ncclt_text(name, text, len, o, out, err);
    case FB_IMPORT_NCCLT_JSON: return fb_import_ncclt_json(name, text, len, o, out, err);
    case FB_IMPORT_PERFTEST_TEXT: return fb_import_perftest_text(name, text, len, o, out, err);
    case FB_IMPORT_PERFTEST_JSON: return fb_import_perftest_json(name, text, len, o, out, err);
    default: return fb_fail(err, FB_ERR_INTERNAL, "unknown import format");
    }
}

enum fb_status fb_import_out_add(struct fb_import_out *out, json_object *doc, struct fb_err *err)
{
    json_object **docs = realloc(out->docs, (out->n + 1) * sizeof *docs);
    if (docs == NULL) {
        json_object_put(doc);
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory importing");
    }
    out->docs = docs;
    out->docs[out->n++] = doc;
    return FB_OK;
}

void fb_import_out_free(struct fb_import_out *out)
{
    for (size_t i = 0; i < out->n; i++)
        json_object_put(out->docs[i]);
    free(out->docs);
    out->docs = NULL;
    out->n = 0;
}
