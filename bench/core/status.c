#include "core/status.h"

#include <stdarg.h>
#include <stdio.h>

enum fb_status fb_fail(struct fb_err *err, enum fb_status code, const char *fmt, ...)
{
    if (err == NULL || err->code != FB_OK)
        return code;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return code;
}

void fb_err_clear(struct fb_err *err)
{
    err->code = FB_OK;
    err->msg[0] = '\0';
}

const char *fb_status_name(enum fb_status code)
{
    switch (code) {
    case FB_OK: return "ok";
    case FB_ERR_INTERNAL: return "internal";
    case FB_ERR_USAGE: return "usage";
    case FB_ERR_WRONG: return "wrong-results";
    case FB_ERR_MEMORY: return "memory";
    case FB_ERR_UNAVAIL: return "unavailable";
    case FB_ERR_LAUNCH: return "launch";
    case FB_ERR_IO: return "io";
    case FB_ERR_TIMEOUT: return "timeout";
    case FB_ERR_RUNTIME: return "runtime";
    case FB_ERR_INPUT: return "input";
    case FB_ERR_SKIPPED: return "skipped";
    case FB_ERR_MISMATCH: return "mismatch";
    case FB_VERDICT_DEGRADED: return "degraded";
    case FB_VERDICT_TCP_FALLBACK: return "tcp-fallback";
    case FB_VERDICT_FAIL: return "fail";
    case FB_VERDICT_INCOMPLETE: return "incomplete";
    case FB_DOCTOR_WARN: return "warn";
    case FB_DOCTOR_FAIL: return "fail";
    case FB_SCAN_SUSPECTS: return "suspects";
    case FB_INVALID: return "invalid";
    case FB_EXIT_SIGINT: return "interrupted";
    case FB_EXIT_SIGTERM: return "terminated";
    }
    return "unknown";
}
