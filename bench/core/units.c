#include "core/units.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int unit_shift(char c)
{
    switch (toupper((unsigned char)c)) {
    case 'K': return 10;
    case 'M': return 20;
    case 'G': return 30;
    case 'T': return 40;
    default: return -1;
    }
}

enum fb_status fb_parse_size(const char *text, const char *what, uint64_t *out,
                             struct fb_err *err)
{
    if (text == NULL || *text == '\0')
        return fb_fail(err, FB_ERR_USAGE, "%s: empty size; give bytes such as 1K, 64M or 16G", what);
    if (text[0] == '-')
        return fb_fail(err, FB_ERR_USAGE, "%s: size '%s' is negative; sizes are positive bytes (1K, 64M, 16G)", what, text);
    char *end = NULL;
    errno = 0;
    double value = strtod(text, &end);
    if (end == text || errno != 0 || !isfinite(value))
        return fb_fail(err, FB_ERR_USAGE, "%s: '%s' is not a size; use bytes with an optional K/M/G suffix (1K = 1024)", what, text);
    int shift = 0;
    if (*end != '\0') {
        shift = unit_shift(*end);
        /* Accept "1KB"/"1KiB" too: people type them. */
        const char *rest = end + 1;
        if (shift >= 0 && (strcmp(rest, "") == 0 || strcasecmp(rest, "B") == 0 ||
                           strcasecmp(rest, "iB") == 0))
            end = (char *)rest + strlen(rest);
        else
            return fb_fail(err, FB_ERR_USAGE, "%s: unknown suffix in '%s'; use K, M, G or T (binary, 1K = 1024)", what, text);
    }
    double bytes = ldexp(value, shift);
    if (bytes >= 18446744073709549568.0)
        return fb_fail(err, FB_ERR_USAGE, "%s: '%s' is too large", what, text);
    *out = (uint64_t)bytes;
    return FB_OK;
}

enum fb_status fb_parse_int(const char *text, const char *what, long min, long max,
                            long *out, struct fb_err *err)
{
    char *end = NULL;
    errno = 0;
    long v = (text && *text) ? strtol(text, &end, 0) : 0;
    if (text == NULL || *text == '\0' || *end != '\0' || errno != 0)
        return fb_fail(err, FB_ERR_USAGE, "%s: '%s' is not a whole number", what, text ? text : "");
    if (v < min || v > max)
        return fb_fail(err, FB_ERR_USAGE, "%s: %ld is out of range; allowed %ld to %ld", what, v, min, max);
    *out = v;
    return FB_OK;
}

enum fb_status fb_parse_double(const char *text, const char *what, double min,
                               double max, double *out, struct fb_err *err)
{
    char *end = NULL;
    errno = 0;
    double v = (text && *text) ? strtod(text, &end) : 0;
    if (text == NULL || *text == '\0' || *end != '\0' || errno != 0 || !isfinite(v))
        return fb_fail(err, FB_ERR_USAGE, "%s: '%s' is not a number", what, text ? text : "");
    if (v < min || v > max)
        return fb_fail(err, FB_ERR_USAGE, "%s: %g is out of range; allowed %g to %g", what, v, min, max);
    *out = v;
    return FB_OK;
}

void fb_format_size(uint64_t bytes, char *buf, size_t len)
{
    static const char suffix[] = "KMGT";
    int i = -1;
    uint64_t v = bytes;
    while (i < 3 && v >= 1024 && v % 1024 == 0) {
        v /= 1024;
        i++;
    }
    if (i < 0)
        snprintf(buf, len, "%llu", (unsigned long long)bytes);
    else
        snprintf(buf, len, "%llu%c", (unsigned long long)v, suffix[i]);
}

void fb_format_gib(uint64_t bytes, char *buf, size_t len)
{
    snprintf(buf, len, "%.1f GiB", (double)bytes / (double)(1ULL << 30));
}
