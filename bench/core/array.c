#include "core/array.h"

#include <stdlib.h>
#include <string.h>

enum fb_status fb_array_append(void *items, size_t *n, size_t size, const void *item,
                               const char *what, struct fb_err *err)
{
    /* The caller's T * is read and written through memcpy: every object
     * pointer has void *'s representation on the platforms this runs on,
     * and memcpy keeps the compiler's aliasing rules out of it. */
    void *array = NULL;
    memcpy(&array, items, sizeof array);
    void *grown = realloc(array, (*n + 1) * size);
    if (grown == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory %s", what);
    memcpy((char *)grown + *n * size, item, size);
    memcpy(items, &grown, sizeof grown);
    (*n)++;
    return FB_OK;
}
