/* Size parsing and printing with nccl-tests conventions: K/M/G/T are binary
 * (K = 1024) for sizes; bandwidths elsewhere are decimal (GB = 1e9). */
#ifndef FB_CORE_UNITS_H
#define FB_CORE_UNITS_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

/* "1K", "16G", "65536", "1.5M" (rounded down to a byte). Rejects negative,
 * empty, trailing junk and overflow; `what` names the flag in the error. */
enum fb_status fb_parse_size(const char *text, const char *what, uint64_t *out,
                             struct fb_err *err);

enum fb_status fb_parse_int(const char *text, const char *what, long min, long max,
                            long *out, struct fb_err *err);

enum fb_status fb_parse_double(const char *text, const char *what, double min,
                               double max, double *out, struct fb_err *err);

/* Human binary size: 1024 -> "1K", 1536 -> "1536", 16 GiB -> "16G". Exact
 * when the size is a whole multiple, else plain bytes. */
void fb_format_size(uint64_t bytes, char *buf, size_t len);

/* "22.1 GiB" style for messages about memory. */
void fb_format_gib(uint64_t bytes, char *buf, size_t len);

#endif
