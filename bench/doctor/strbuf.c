#include "doctor/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
