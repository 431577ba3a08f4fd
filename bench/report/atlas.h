/* The atlas: the reference profiles listed by family, for people
 * (`fabric-report profiles`) and as the Markdown table docs/report.md
 * carries (`fabric-report profiles --markdown`), so that the table is
 * generated from the profiles, never written twice. */
#ifndef FB_REPORT_ATLAS_H
#define FB_REPORT_ATLAS_H

#include "core/text.h"
#include "nccl/profiles.h"

/* One block a family, in the atlas's order (single node first, symptoms
 * last, then families of the user's own), a line a profile. */
void fb_atlas_text(const struct fb_profiles *ps, struct fb_str *out);

/* | family | profile | figures | source | */
void fb_atlas_markdown(const struct fb_profiles *ps, struct fb_str *out);

/* "all_reduce 370 / 333 GB/s at 8G; NICs 8 x 400 Gb/s RoCE": what a
 * profile says, in one line. */
void fb_atlas_figures(const struct fb_profile *p, struct fb_str *out);

#endif
