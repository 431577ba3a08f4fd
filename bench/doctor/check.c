#include "doctor/check.h"

#include <stdio.h>
#include <string.h>

void fb_check_init(struct fb_check *c, const char *name)
{
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->verdict = FB_CHECK_SKIP;
}

/* Evidence must stay one line whatever a file or annotation held. */
static void flatten(char *s)
{
    for (; *s; s++)
        if (*s == '\n' || *s == '\r' || *s == '\t')
            *s = ' ';
}

/* Formats into a fixed field of a check, kept to one line. */
static void vformat_line(char *field, size_t len, const char *fmt, va_list ap)
{
    vsnprintf(field, len, fmt, ap);
    flatten(field);
}

void fb_outcome_keep_worst(enum fb_check_outcome *kept, char *why, size_t len,
                           enum fb_check_outcome v, const char *fmt, va_list ap)
{
    /* The first setter decides the skip/ok baseline; afterwards only a worse
     * verdict may overwrite what was said. */
    if (why[0] != '\0' && v <= *kept)
        return;
    *kept = v;
    vformat_line(why, len, fmt, ap);
}

void fb_outcome_append(enum fb_check_outcome *worst, char *buf, size_t len, size_t *used,
                       const char *sep, size_t one_max, enum fb_check_outcome v,
                       const char *fmt, va_list ap)
{
    char one[FB_CHECK_TEXT_MAX];
    vsnprintf(one, one_max < sizeof one ? one_max : sizeof one, fmt, ap);
    *worst = v > *worst ? v : *worst;
    fb_strbuf_append(buf, len, used, "%s%s", *used ? sep : "", one);
}

void fb_check_set(struct fb_check *c, enum fb_check_outcome v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fb_outcome_keep_worst(&c->verdict, c->evidence, sizeof c->evidence, v, fmt, ap);
    va_end(ap);
}

void fb_check_fix(struct fb_check *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vformat_line(c->fix, sizeof c->fix, fmt, ap);
    va_end(ap);
}

void fb_check_note(struct fb_check *c, const char *fmt, ...)
{
    char note[FB_CHECK_TEXT_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(note, sizeof note, fmt, ap);
    va_end(ap);
    size_t used = strlen(c->evidence);
    fb_strbuf_append(c->evidence, sizeof c->evidence, &used, "%s%s", used ? "; " : "", note);
    flatten(c->evidence);
}

bool fb_check_fails_on(struct fb_check *c, enum fb_status st, const struct fb_err *err)
{
    if (st == FB_OK)
        return false;
    fb_check_set(c, FB_CHECK_FAIL, "%s", err->msg);
    return true;
}

bool fb_check_has_culprit(const struct fb_check *c, const char *name)
{
    for (size_t i = 0; i < c->nculprits; i++)
        if (strcmp(c->culprits[i], name) == 0)
            return true;
    return false;
}

void fb_check_culprit(struct fb_check *c, const char *fmt, ...)
{
    char name[FB_CHECK_CULPRIT_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    if (c->nculprits == FB_CHECK_CULPRITS_MAX || fb_check_has_culprit(c, name))
        return;
    memcpy(c->culprits[c->nculprits++], name, sizeof name);
}

const void *fb_check_table_find(const void *table, size_t table_size, size_t row_size,
                                const char *name)
{
    const char *row = table;
    for (size_t at = 0; at + row_size <= table_size; at += row_size) {
        const char *row_name = *(const char *const *)(const void *)(row + at);
        if (strcmp(row_name, name) == 0)
            return row + at;
    }
    return NULL;
}

const char *fb_verdict_name(enum fb_check_outcome v)
{
    switch (v) {
    case FB_CHECK_OK: return "ok";
    case FB_CHECK_WARN: return "warn";
    case FB_CHECK_FAIL: return "fail";
    case FB_CHECK_SKIP: return "skip";
    }
    return "skip";
}

const char *fb_verdict_label(enum fb_check_outcome v)
{
    switch (v) {
    case FB_CHECK_OK: return "OK";
    case FB_CHECK_WARN: return "WARN";
    case FB_CHECK_FAIL: return "FAIL";
    case FB_CHECK_SKIP: return "SKIP";
    }
    return "SKIP";
}

struct fb_check_counts fb_check_count(const struct fb_check *checks, size_t n)
{
    struct fb_check_counts k = {0, 0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        switch (checks[i].verdict) {
        case FB_CHECK_OK: k.ok++; break;
        case FB_CHECK_WARN: k.warn++; break;
        case FB_CHECK_FAIL: k.fail++; break;
        case FB_CHECK_SKIP: k.skip++; break;
        }
    }
    return k;
}

enum fb_status fb_check_exit_status(const struct fb_check *checks, size_t n)
{
    struct fb_check_counts k = fb_check_count(checks, n);
    if (k.fail > 0)
        return FB_DOCTOR_FAIL;
    for (size_t i = 0; i < n; i++)
        if (checks[i].blocks_run && checks[i].verdict == FB_CHECK_SKIP)
            return FB_ERR_SKIPPED;
    if (k.warn > 0)
        return FB_DOCTOR_WARN;
    return FB_OK;
}
