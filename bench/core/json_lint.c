#include "core/json_lint.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A key as it stands in the text, quotes excluded, and its line. */
struct key {
    const char *s;
    size_t n;
    long line;
};

/* One open object's keys, or an array (no keys). */
struct frame {
    bool object;
    bool want_key;
    struct key *keys;
    size_t nkeys, cap;
};

struct lint {
    const char *text;
    size_t len, pos;
    long line;
    struct frame *stack;
    size_t depth, cap;
    struct fb_json_lint *out;
    bool bad;
};

static int key_order(const void *a, const void *b)
{
    const struct key *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->s, y->s, n);
    if (c != 0)
        return c;
    if (x->n != y->n)
        return x->n < y->n ? -1 : 1;
    return x->line < y->line ? -1 : x->line > y->line;
}

/* Records the first finding, quoting at most 64 bytes of the text with
 * control characters (C0, DEL, C1) escaped: the message reaches a terminal. */
static void fail(struct lint *l, long line, const char *what, const char *s, size_t n)
{
    if (l->bad)
        return;
    l->bad = true;
    l->out->line = line;
    size_t cap = sizeof l->out->what, used = (size_t)snprintf(l->out->what, cap, "%s", what);
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < (n > 64 ? 64 : n) && used + 8 < cap; i++) {
        bool c1 = u[i] == 0xC2 && i + 1 < n && u[i + 1] >= 0x80 && u[i + 1] <= 0x9F;
        if (u[i] < 0x20 || u[i] == 0x7F)
            used += (size_t)snprintf(l->out->what + used, cap - used, "\\x%02x", u[i]);
        else if (c1)
            used += (size_t)snprintf(l->out->what + used, cap - used, "\\u%04x", u[++i]);
        else
            l->out->what[used++] = (char)u[i];
    }
    l->out->what[used < cap ? used : cap - 1] = '\0';
    if (n && used + 1 < cap)
        snprintf(l->out->what + used, cap - used, "\"");
}

/* Sorting finds a repeated key in n log n, whatever the object's size. */
static void close_frame(struct lint *l)
{
    struct frame *f = &l->stack[--l->depth];
    if (f->object && f->nkeys > 1) {
        qsort(f->keys, f->nkeys, sizeof *f->keys, key_order);
        for (size_t i = 1; i < f->nkeys; i++)
            if (f->keys[i].n == f->keys[i - 1].n && memcmp(f->keys[i].s, f->keys[i - 1].s, f->keys[i].n) == 0)
                fail(l, f->keys[i].line, "duplicate key \"", f->keys[i].s, f->keys[i].n);
    }
    free(f->keys);
}

/* Room for one more element in *items (capacity *cap, `used` in use),
 * doubling the capacity so that appends stay amortised constant. */
static bool room_for_one(void **items, size_t *cap, size_t used, size_t size)
{
    if (used < *cap)
        return true;
    size_t grown = *cap ? *cap * 2 : 16;
    void *p = realloc(*items, grown * size);
    if (p == NULL)
        return false;
    *items = p;
    *cap = grown;
    return true;
}

static bool open_frame(struct lint *l, bool object)
{
    void *stack = l->stack;
    bool ok = room_for_one(&stack, &l->cap, l->depth, sizeof *l->stack);
    l->stack = stack;
    if (ok)
        l->stack[l->depth++] = (struct frame){.object = object, .want_key = object};
    return ok;
}

static bool add_key(struct frame *f, const char *s, size_t n, long line)
{
    void *keys = f->keys;
    bool ok = room_for_one(&keys, &f->cap, f->nkeys, sizeof *f->keys);
    f->keys = keys;
    if (ok)
        f->keys[f->nkeys++] = (struct key){s, n, line};
    return ok;
}

/* json-c decodes "\u0000" into the string, and every reader of a C string
 * stops there: "ab\u0000cd" would silently read as "ab". */
static bool escapes_nul(const char *s, size_t left)
{
    return left >= 6 && s[1] == 'u' && memcmp(s + 2, "0000", 4) == 0;
}

/* At an opening quote: skips the string, recording it when it is a key. */
static bool string_token(struct lint *l)
{
    size_t start = ++l->pos;
    while (l->pos < l->len && l->text[l->pos] != '"') {
        if (l->text[l->pos] == '\\' && escapes_nul(l->text + l->pos, l->len - l->pos))
            fail(l, l->line, "\\u0000 (NUL) would cut the string short: \"", l->text + start, l->pos + 6 - start);
        l->pos += l->text[l->pos] == '\\' ? 2 : 1;
    }
    struct frame *f = l->depth ? &l->stack[l->depth - 1] : NULL;
    bool ok = true;
    if (f != NULL && f->object && f->want_key) {
        ok = add_key(f, l->text + start, l->pos - start, l->line);
        f->want_key = false;
    }
    l->pos++;
    return ok;
}

/* At a number's first character: skips it. json-c turns a number past a
 * double's range into inf and an integer past 64 bits into the largest
 * one, both silently: neither is what the file says. */
static void number_token(struct lint *l)
{
    size_t start = l->pos;
    bool integer = true;
    while (l->pos < l->len && strchr("+-0123456789.eE", l->text[l->pos]) != NULL && l->text[l->pos] != '\0') {
        integer = integer && strchr(".eE", l->text[l->pos]) == NULL;
        l->pos++;
    }
    char tok[512];
    size_t n = l->pos - start;
    if (n >= sizeof tok) {
        fail(l, l->line, "a number of more than 511 characters: \"", l->text + start, 32);
        return;
    }
    memcpy(tok, l->text + start, n);
    tok[n] = '\0';
    errno = 0;
    if (integer) {
        if (tok[0] == '-')
            (void)strtoll(tok, NULL, 10);
        else
            (void)strtoull(tok, NULL, 10);
        if (errno == ERANGE)
            fail(l, l->line, "an integer beyond 64 bits: \"", tok, n);
    } else if (isinf(strtod(tok, NULL))) {
        fail(l, l->line, "a number beyond the range of a double: \"", tok, n);
    }
}

bool fb_json_lint_ok(const char *text, size_t len, struct fb_json_lint *out)
{
    struct lint l = {.text = text, .len = len, .line = 1, .out = out};
    bool mem = true;
    while (mem && l.pos < len) {
        char c = text[l.pos];
        if (c == '"') {
            mem = string_token(&l);
            continue;
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
            number_token(&l);
            continue;
        }
        if (c == '\n')
            l.line++;
        else if (c == '{' || c == '[')
            mem = open_frame(&l, c == '{');
        else if ((c == '}' || c == ']') && l.depth > 0)
            close_frame(&l);
        else if (c == ',' && l.depth > 0 && l.stack[l.depth - 1].object)
            l.stack[l.depth - 1].want_key = true;
        else if (c == 'N' || (c == 'n' && l.pos + 1 < len && (text[l.pos + 1] | 0x20) == 'a'))
            fail(&l, l.line, "NaN is not a JSON number", "", 0); /* outside strings only null has an n */
        else if (c == 'I' || c == 'i')
            fail(&l, l.line, "Infinity is not a JSON number", "", 0);
        l.pos++;
    }
    while (l.depth > 0)
        close_frame(&l);
    free(l.stack);
    if (!mem)
        fail(&l, l.line, "out of memory checking the document", "", 0);
    return !l.bad;
}
