#include "core/clock.h"

#include <time.h>

double fb_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void format_utc(const char *fmt, time_t t, char *buf, size_t len)
{
    struct tm tm;
    gmtime_r(&t, &tm);
    if (strftime(buf, len, fmt, &tm) == 0 && len > 0)
        buf[0] = '\0';
}

void fb_utc_iso(char *buf, size_t len) { fb_utc_iso_at((long long)time(NULL), buf, len); }

void fb_utc_iso_at(long long t, char *buf, size_t len)
{
    format_utc("%Y-%m-%dT%H:%M:%SZ", t >= 0 ? (time_t)t : 0, buf, len);
}

void fb_utc_stamp(char *buf, size_t len) { format_utc("%Y%m%dT%H%M%SZ", time(NULL), buf, len); }
