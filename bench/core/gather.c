#include "core/gather.h"
#include "core/coord.h"

#include <stdlib.h>
#include <string.h>

enum fb_status fb_gather_strings(const struct fb_world *w, const char *mine, char ***all,
                                 struct fb_err *err)
{
    *all = NULL;
    int len = (int)strlen(mine) + 1;
    int *lens = NULL, *displs = NULL;
    char *buf = NULL;
    enum fb_status st = FB_OK;
    if (w->rank == 0) {
        lens = calloc((size_t)w->size, sizeof *lens);
        displs = calloc((size_t)w->size, sizeof *displs);
        if (lens == NULL || displs == NULL)
            st = fb_fail(err, FB_ERR_INTERNAL, "out of memory gathering from %d ranks", w->size);
    }
    /* Every rank must take part even when rank 0 is out of memory. */
    fb_coord_gather(w, &len, lens, sizeof len, 0);
    long total = 0;
    if (w->rank == 0 && st == FB_OK) {
        for (int r = 0; r < w->size; r++) {
            displs[r] = (int)total;
            total += lens[r];
        }
        buf = malloc((size_t)total);
        if (buf == NULL)
            st = fb_fail(err, FB_ERR_INTERNAL, "out of memory gathering %ld bytes", total);
    }
    fb_coord_gatherv(w, mine, len, buf, lens, displs);
    if (w->rank == 0 && st == FB_OK) {
        char **out = calloc((size_t)w->size, sizeof *out);
        for (int r = 0; out != NULL && r < w->size; r++)
            out[r] = strdup(buf + displs[r]);
        *all = out;
        if (out == NULL)
            st = fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    }
    free(buf);
    free(lens);
    free(displs);
    return st;
}

void fb_gather_free(const struct fb_world *w, char **all)
{
    if (all == NULL)
        return;
    for (int r = 0; r < w->size; r++)
        free(all[r]);
    free(all);
}
