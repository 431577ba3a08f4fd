/* Bounded one-line text building: lists of devices, nodes or pods that go
 * into a message or a table cell. */
#ifndef FB_DOCTOR_STRBUF_H
#define FB_DOCTOR_STRBUF_H

#include <stddef.h>

/* Appends at *used, truncating with "..." when the buffer is full, so a
 * long list stays one line and is never mistaken for complete. */
void fb_strbuf_append(char *buf, size_t len, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
