/* Arrays that grow one element at a time (rows of a table, devices, result
 * files): the realloc-and-copy every reader needs, written once. */
#ifndef FB_CORE_ARRAY_H
#define FB_CORE_ARRAY_H

#include <stddef.h>

#include "core/status.h"

/* Appends a copy of `item` (`size` bytes) to the malloc'd array whose
 * address is `items` (a T ** for any element type T) holding *n elements.
 * On allocation failure the array is unchanged and FB_ERR_INTERNAL says
 * "out of memory" with `what` ("importing devices"). */
enum fb_status fb_array_append(void *items, size_t *n, size_t size, const void *item,
                               const char *what, struct fb_err *err);

#endif
