/* Time sources: a monotonic clock for measurements, UTC wall time for
 * records and file names. */
#ifndef FB_CORE_CLOCK_H
#define FB_CORE_CLOCK_H

#include <stddef.h>

/* Seconds on CLOCK_MONOTONIC: immune to NTP steps during a long sweep. */
double fb_now(void);

/* "2026-11-30T15:01:02Z" */
void fb_utc_iso(char *buf, size_t len);

/* The same for seconds since the epoch (a file's mtime); negative is 0. */
void fb_utc_iso_at(long long t, char *buf, size_t len);

/* "20261130T150102Z": sorts by time, safe in file names. */
void fb_utc_stamp(char *buf, size_t len);

#endif
