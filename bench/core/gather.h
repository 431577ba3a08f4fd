/* Gathering variable-length text (JSON fragments, log summaries) from every
 * rank to rank 0, for the per-rank parts of a results file. */
#ifndef FB_CORE_GATHER_H
#define FB_CORE_GATHER_H

#include "core/world.h"

/* Collective. On rank 0, *all receives w->size strings (free with
 * fb_gather_free); elsewhere it is set to NULL. */
enum fb_status fb_gather_strings(const struct fb_world *w, const char *mine, char ***all,
                                 struct fb_err *err);
void fb_gather_free(const struct fb_world *w, char **all);

#endif
