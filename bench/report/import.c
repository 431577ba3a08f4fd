#include "report/import.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "core/text.h"

/* The importers. Their detectors exclude each other (nccl-tests text, whose
 * signs are the loosest, claims nothing perftest or JSON), so the order is
 * only the one --format's message lists. Adding a format is a row here plus
 * its file. */
struct importer {
    enum fb_import_format format;
    const char *name; /* --format */
    bool (*detect)(const char *text, size_t len);
    enum fb_status (*read)(const char *name, const char *text, size_t len,
                           const struct fb_import_opts *o, struct fb_import_out *out,
                           struct fb_err *err);
};

static const struct importer importers[] = {
    {FB_IMPORT_NCCLT_TEXT, "nccl-tests-text", fb_detect_ncclt_text, fb_import_ncclt_text},
    {FB_IMPORT_NCCLT_JSON, "nccl-tests-json", fb_detect_ncclt_json, fb_import_ncclt_json},
    {FB_IMPORT_RCCLT_JSON, "rccl-tests-json", fb_detect_rcclt_json, fb_import_rcclt_json},
    {FB_IMPORT_PERFTEST_TEXT, "perftest-text", fb_detect_perftest_text, fb_import_perftest_text},
    {FB_IMPORT_PERFTEST_JSON, "perftest-json", fb_detect_perftest_json, fb_import_perftest_json},
};
#define NIMPORTERS (sizeof importers / sizeof *importers)

static const struct importer *importer_of(enum fb_import_format f)
{
    for (size_t i = 0; i < NIMPORTERS; i++)
        if (importers[i].format == f)
            return &importers[i];
    return NULL;
}

const char *fb_import_format_name(enum fb_import_format f)
{
    const struct importer *imp = importer_of(f);
    return imp ? imp->name : "auto";
}

enum fb_status fb_import_format_parse(const char *name, enum fb_import_format *f, struct fb_err *err)
{
    if (strcmp(name, "auto") == 0) {
        *f = FB_IMPORT_AUTO;
        return FB_OK;
    }
    char names[256] = "auto";
    size_t used = strlen(names);
    for (size_t i = 0; i < NIMPORTERS; i++) {
        if (strcmp(name, importers[i].name) == 0) {
            *f = importers[i].format;
            return FB_OK;
        }
    }
    for (size_t i = 0; i < NIMPORTERS; i++)
        fb_strbuf_append(names, sizeof names, &used, "%s%s", i + 1 == NIMPORTERS ? " or " : ", ",
                         importers[i].name);
    return fb_fail(err, FB_ERR_USAGE, "--format %s: use %s", name, names);
}

bool fb_import_looks_json(const char *text, size_t len)
{
    size_t i = 0;
    while (i < len && (text[i] == ' ' || text[i] == '\n' || text[i] == '\r' || text[i] == '\t'))
        i++;
    return i < len && text[i] == '{';
}

bool fb_import_contains(const char *text, size_t len, const char *needle)
{
    return memmem(text, len, needle, strlen(needle)) != NULL;
}

char *fb_import_printable(char *dst, size_t cap, const char *src, size_t max)
{
    size_t used = 0, len = strnlen(src, max);
    const unsigned char *s = (const unsigned char *)src;
    if (cap == 0)
        return dst;
    dst[0] = '\0';
    for (size_t i = 0; i < len;) {
        size_t n = fb_utf8_len(s + i, len - i);
        char esc[8] = "";
        if (s[i] == '\t')
            snprintf(esc, sizeof esc, " ");
        else if (n == 0 || s[i] < 0x20 || s[i] == 0x7F)
            snprintf(esc, sizeof esc, "\\x%02x", s[i]), n = 1;
        else if (n == 2 && s[i] == 0xC2 && s[i + 1] < 0xA0) /* U+0080..U+009F */
            snprintf(esc, sizeof esc, "\\u%04x", s[i + 1]);
        size_t add = esc[0] ? strlen(esc) : n;
        if (used + add >= cap)
            break;
        memcpy(dst + used, esc[0] ? esc : (const char *)s + i, add);
        used += add;
        dst[used] = '\0';
        i += n;
    }
    return dst;
}

/* Why JSON that no importer claims is refused. */
static enum fb_status refuse_json(const char *name, const char *text, size_t len, struct fb_err *err)
{
    if (fb_import_contains(text, len, "\"fabric-bench.result\""))
        return fb_fail(err, FB_ERR_INPUT, "%s is already a fabric-bench result; nothing to import", name);
    return fb_fail(err, FB_ERR_INPUT, "%s is JSON but neither nccl-tests -J, rccl-tests -Z json nor perftest --out_json output", name);
}

enum fb_status fb_import_detect(const char *name, const char *text, size_t len,
                                enum fb_import_format *f, struct fb_err *err)
{
    for (size_t i = 0; i < NIMPORTERS; i++)
        if (importers[i].detect(text, len)) {
            *f = importers[i].format;
            return FB_OK;
        }
    if (fb_import_looks_json(text, len))
        return refuse_json(name, text, len, err);
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
    const struct importer *imp = importer_of(f);
    if (imp == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "unknown import format");
    return imp->read(name, text, len, o, out, err);
}

enum fb_status fb_import_out_add(struct fb_import_out *out, json_object *doc, struct fb_err *err)
{
    enum fb_status st = fb_array_append(&out->docs, &out->n, sizeof doc, &doc, "importing", err);
    if (st != FB_OK)
        json_object_put(doc);
    return st;
}

void fb_import_out_free(struct fb_import_out *out)
{
    for (size_t i = 0; i < out->n; i++)
        json_object_put(out->docs[i]);
    free(out->docs);
    out->docs = NULL;
    out->n = 0;
}
