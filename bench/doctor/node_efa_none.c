/* efa-provider in a build without libfabric: the check is listed, and says
 * how to get it, instead of vanishing from the checklist. */
#ifndef HAVE_OFI
#include "doctor/node.h"

void fb_node_check_efa_provider(const struct fb_node_ctx *ctx, struct fb_check *c)
{
    (void)ctx;
    fb_check_set(c, FB_CHECK_SKIP, "built without libfabric: install libfabric-dev (or set "
                                   "LIBFABRIC_HOME to an install) and rebuild to ask for the efa "
                                   "provider");
}
#else
typedef int fb_doctor_efa_none_is_empty; /* a translation unit may not be empty */
#endif
