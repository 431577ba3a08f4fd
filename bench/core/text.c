#include "core/text.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool grow(struct fb_str *b, size_t need)
{
    if (b->oom)
        return false;
    if (b->len + need + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + need + 1)
        cap *= 2;
    char *s = realloc(b->s, cap);
    if (s == NULL) {
        b->oom = true;
        return false;
    }
    b->s = s;
    b->cap = cap;
    return true;
}

void fb_str_addn(struct fb_str *b, const char *text, size_t n)
{
    if (!grow(b, n))
        return;
    memcpy(b->s + b->len, text, n);
    b->len += n;
    b->s[b->len] = '\0';
}

void fb_str_addf(struct fb_str *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !grow(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

const char *fb_str_get(const struct fb_str *b)
{
    return b->s ? b->s : "";
}

void fb_str_free(struct fb_str *b)
{
    free(b->s);
    memset(b, 0, sizeof *b);
}

bool fb_next_line(const char *text, size_t len, size_t *pos, const char **line, size_t *n)
{
    if (*pos >= len)
        return false;
    const char *start = text + *pos;
    const char *nl = memchr(start, '\n', len - *pos);
    size_t l = nl ? (size_t)(nl - start) : len - *pos;
    *pos += l + (nl ? 1 : 0);
    if (l > 0 && start[l - 1] == '\r')
        l--;
    *line = start;
    *n = l;
    return true;
}

int fb_tokens(char *line, char **tok, int max)
{
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(line, " \t\r\n", &save); t != NULL && n < max;
         t = strtok_r(NULL, " \t\r\n", &save))
        tok[n++] = t;
    return n;
}

bool fb_starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool fb_parse_u64_token(const char *tok, unsigned long long *out)
{
    if (tok == NULL || *tok < '0' || *tok > '9')
        return false;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(tok, &end, 10);
    if (errno != 0 || *end != '\0')
        return false;
    *out = v;
    return true;
}

bool fb_parse_double_token(const char *tok, double *out)
{
    if (tok == NULL || *tok == '\0')
        return false;
    errno = 0;
    char *end = NULL;
    double v = strtod(tok, &end);
    if (errno != 0 || *end != '\0' || !isfinite(v))
        return false;
    *out = v;
    return true;
}

void fb_copy(char *dst, size_t size, const char *src, size_t n)
{
    if (size == 0)
        return;
    if (n >= size)
        n = size - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

void fb_strbuf_append(char *buf, size_t len, size_t *used, const char *fmt, ...)
{
    if (len == 0 || *used >= len - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *used, len - *used, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= len - *used) {
        *used = len - 1;
        if (len > 4)
            memcpy(buf + len - 4, "...", 4);
        return;
    }
    *used += (size_t)n;
}

void fb_join_names(const char *const *names, size_t n, const char *empty, char *buf, size_t len)
{
    size_t used = 0;
    if (len == 0)
        return;
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++)
        fb_strbuf_append(buf, len, &used, "%s%s", i ? ", " : "", names[i]);
    if (n == 0)
        snprintf(buf, len, "%s", empty);
}

int fb_name_order(const void *a, const void *b)
{
    return strverscmp(*(const char *const *)a, *(const char *const *)b);
}

static char *skip_blanks(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

bool fb_next_line_copy(const char *text, size_t len, size_t *pos, char *buf, size_t size, char **start)
{
    const char *line = NULL;
    size_t n = 0;
    if (!fb_next_line(text, len, pos, &line, &n))
        return false;
    fb_copy(buf, size, line, n);
    *start = skip_blanks(buf);
    return true;
}

/* Length of an Open MPI output tag at s ("[1,0]<stdout>:", "[1,3]<stderr>:"),
 * or 0. */
static size_t mpi_tag_len(const char *s)
{
    if (s[0] != '[' || !isdigit((unsigned char)s[1]))
        return 0;
    size_t i = 1;
    while (isdigit((unsigned char)s[i]) || s[i] == ',')
        i++;
    static const char *const streams[] = {"]<stdout>:", "]<stderr>:", "]<stddiag>:"};
    for (size_t k = 0; k < sizeof streams / sizeof *streams; k++)
        if (strncmp(s + i, streams[k], strlen(streams[k])) == 0)
            return i + strlen(streams[k]);
    return 0;
}

/* "2026-12-01T19:21:43.123456789Z " or "...+00:00 ": kubectl logs
 * --timestamps. */
static size_t rfc3339_len(const char *s)
{
    static const char shape[] = "dddd-dd-ddTdd:dd:dd";
    size_t i = 0;
    for (; shape[i]; i++)
        if (shape[i] == 'd' ? !isdigit((unsigned char)s[i]) : s[i] != shape[i])
            return 0;
    if (s[i] == '.')
        for (i++; isdigit((unsigned char)s[i]); i++)
            ;
    if (s[i] == 'Z')
        i++;
    else if ((s[i] == '+' || s[i] == '-') && isdigit((unsigned char)s[i + 1]))
        i += 6;
    return s[i] == ' ' ? i + 1 : 0;
}

/* "12: " from srun -l; digits then a colon and a blank, nothing else. */
static size_t srun_rank_len(const char *s)
{
    size_t i = 0;
    while (isdigit((unsigned char)s[i]))
        i++;
    return i > 0 && i <= 6 && s[i] == ':' && s[i + 1] == ' ' ? i + 2 : 0;
}

static void remove_inner_mpi_tags(char *s)
{
    for (char *at = strchr(s, '['); at != NULL; at = strchr(at, '[')) {
        size_t n = mpi_tag_len(at);
        if (n == 0) {
            at++;
            continue;
        }
        memmove(at, at + n, strlen(at + n) + 1);
    }
}

/* ANSI terminal sequences (ESC [ parameters letter): colour from a
 * launcher, a wrapper script or kubectl writing to a terminal. */
static void remove_ansi(char *s)
{
    char *w = s;
    for (const char *r = s; *r;) {
        if (r[0] == '\033' && r[1] == '[') {
            r += 2;
            while (*r && !isalpha((unsigned char)*r))
                r++;
            if (*r)
                r++;
            continue;
        }
        *w++ = *r++;
    }
    *w = '\0';
}

char *fb_strip_launcher_prefixes(char *line)
{
    remove_ansi(line);
    char *s = skip_blanks(line);
    for (;;) {
        size_t n = mpi_tag_len(s);
        if (n == 0)
            n = rfc3339_len(s);
        if (n == 0)
            n = srun_rank_len(s);
        if (n == 0)
            break;
        s = skip_blanks(s + n);
    }
    remove_inner_mpi_tags(s);
    return s;
}

long fb_launcher_rank(const char *line)
{
    const char *s = skip_blanks((char *)line);
    size_t n = rfc3339_len(s);
    s = skip_blanks((char *)s + n);
    size_t tag = mpi_tag_len(s);
    if (tag > 0) {
        const char *comma = memchr(s, ',', tag);
        return comma != NULL && isdigit((unsigned char)comma[1]) ? strtol(comma + 1, NULL, 10) : -1;
    }
    return srun_rank_len(s) > 0 ? strtol(s, NULL, 10) : -1;
}

size_t fb_utf8_len(const unsigned char *p, size_t left)
{
    unsigned char c = p[0];
    if (c < 0x80)
        return 1;
    size_t n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (n == 0 || n > left)
        return 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c == 0xE0)
        lo = 0xA0;
    else if (c == 0xED)
        hi = 0x9F;
    else if (c == 0xF0)
        lo = 0x90;
    else if (c == 0xF4)
        hi = 0x8F;
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
    return n;
}

char *fb_utf8_sanitize(const char *text, size_t len, size_t *out_len)
{
    /* U+FFFD takes three bytes for each byte it replaces. */
    char *out = len < SIZE_MAX / 3 ? malloc(3 * len + 1) : NULL;
    if (out == NULL)
        return NULL;
    const unsigned char *p = (const unsigned char *)text;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t n = fb_utf8_len(p + i, len - i);
        if (n == 0) {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
            continue;
        }
        memcpy(out + o, p + i, n);
        o += n;
        i += n;
    }
    out[o] = '\0';
    if (out_len != NULL)
        *out_len = o;
    return out;
}

void fb_ascii_printable(const char *s, char *out, size_t len)
{
    size_t i = 0;
    for (; s[i] != '\0' && i + 1 < len; i++)
        out[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
    out[i] = '\0';
}
