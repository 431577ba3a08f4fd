#include "core/json_lint.h"

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

static void fail(struct lint *l, long line, const char *what, const char *s, size_t n)
{
    if (l->bad)
        return;
    l->bad = true;
    l->out->line = line;
    snprintf(l->out->what, sizeof l->out->what, "%s%.*s%s", what, (int)(n > 64 ? 64 : n), s, n ? "\"" : "");
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

/* At an opening quote: skips the string, recording it when it is a key. */
static bool string_token(struct lint *l)
{
    size_t start = ++l->pos;
    while (l->pos < l->len && l->text[l->pos] != '"')
        l->pos += l->text[l->pos] == '\\' ? 2 : 1;
    struct frame *f = l->depth ? &l->stack[l->depth - 1] : NULL;
    bool ok = true;
    if (f != NULL && f->object && f->want_key) {
        ok = add_key(f, l->text + start, l->pos - start, l->line);
        f->want_key = false;
    }
    l->pos++;
    return ok;
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
