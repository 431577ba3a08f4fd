#include "core/clock.h"

#include <time.h>

double fb_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void format_utc(const char *fmt, char *buf, size_t len)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    if (strftime(buf, len, fmt, &tm) == 0 && len > 0)
        buf[0] = '\0';
}

void fb_utc_iso(char *buf, size_t len) { format_utc("%Y-%m-%dT%H:%M:%SZ", buf, len); }

void fb_utc_stamp(char *buf, size_t len) { format_utc("%Y%m%dT%H%M%SZ", buf, len); }
