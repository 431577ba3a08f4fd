/* GPU <-> NIC placement as a node check: the same analysis as fabric-topo,
 * reduced to a verdict. */
#include <stdio.h>
#include <string.h>

#include "doctor/affinity.h"
#include "doctor/node.h"

static void judge(const struct fb_topo *t, const struct fb_affinity *a, struct fb_check *c)
{
    if (t->ngpus == 0 && t->nuncounted > 0) {
        fb_check_set(c, FB_CHECK_SKIP, "no GPU counted in the topology (%s); AMD display-class "
                     "device(s) %s without a ROCm device may be GPUs: take the topology with "
                     "ROCm's hwloc support", t->source, t->uncounted);
        return;
    }
    if (t->ngpus == 0) {
        fb_check_set(c, FB_CHECK_SKIP, "no GPU in the topology (%s)", t->source);
        return;
    }
    size_t at[FB_LINK_UNKNOWN + 1] = {0};
    for (size_t g = 0; g < t->ngpus; g++)
        at[a->ranks[g].level]++;
    char levels[128];
    size_t used = 0;
    levels[0] = '\0';
    for (int l = FB_LINK_PIX; l <= FB_LINK_UNKNOWN; l++)
        if (at[l])
            fb_strbuf_append(levels, sizeof levels, &used, "%s%zu at %s", used ? ", " : "",
                             at[l], fb_link_name((enum fb_link)l));
    if (a->nfindings == 0) {
        fb_check_set(c, FB_CHECK_OK, "%zu GPUs on %zu fabric NICs, one each: %s (%s)", t->ngpus,
                     a->nfabric, levels[0] ? levels : "none", t->source);
        return;
    }
    fb_check_set(c, FB_CHECK_WARN, "%s%s", a->findings[0].message,
                 a->nfindings > 1 ? " (and more: run fabric-topo)" : "");
    for (size_t i = 0; i < a->nfindings; i++) {
        const struct fb_finding *f = &a->findings[i];
        if (f->gpu >= 0)
            fb_check_culprit(c, "GPU%ld", f->gpu);
        if (f->nic >= 0)
            fb_check_culprit(c, "%s", t->nics[f->nic].name);
    }
    fb_check_fix(c, "run fabric-topo for the path table and a per-rank NIC and CPU plan; put "
                    "each GPU's NIC on its PCIe switch and socket, or accept the lost bandwidth");
}

void fb_node_check_gpu_nic_affinity(const struct fb_node_ctx *ctx, struct fb_check *c)
{
    struct fb_topo live;
    const struct fb_topo *t = ctx->topo;
    struct fb_err err = {FB_OK, ""};
    if (t == NULL) {
        if (!fb_node_root_is_live(ctx)) {
            fb_check_set(c, FB_CHECK_SKIP, "hwloc reads only the live machine; for a --root tree "
                                           "pass --topology FILE.xml (lstopo --of xml on the node)");
            return;
        }
        if (fb_check_fails_on(c, fb_topo_load(NULL, &live, &err), &err))
            return;
        t = &live;
    }
    struct fb_affinity a;
    if (!fb_check_fails_on(c, fb_affinity_analyse(t, NULL, &a, &err), &err))
        judge(t, &a, c);
    fb_affinity_free(&a);
    if (t == &live)
        fb_topo_free(&live);
}
