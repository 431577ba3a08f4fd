/* AWS EFA through this host's libfabric: does the library NCCL's OFI
 * plugin will load have the efa provider, with the reliable datagram
 * endpoints (FI_EP_RDM) and RMA the plugin uses? It asks the live library,
 * so a --root tree is not judged. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include "doctor/efa.h"
#include "doctor/node.h"
#include "core/text.h"

/* 1.9 is what the probe asks too; newer libraries answer it. */
#define EFA_FI_VERSION FI_VERSION(1, 9)

/* Every registration mode a caller could honour, so none filters efa out:
 * the question is whether the provider is there, not whether one mode is. */
#define EFA_MR_MODES \
    (FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT)

static int ask_efa(uint64_t caps, struct fi_info **list)
{
    struct fi_info *hints = fi_allocinfo();
    if (hints == NULL)
        return -FI_ENOMEM;
    hints->fabric_attr->prov_name = strdup("efa");
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = caps;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->domain_attr->mr_mode = EFA_MR_MODES;
    *list = NULL;
    int rc = hints->fabric_attr->prov_name ? fi_getinfo(EFA_FI_VERSION, NULL, NULL, 0, hints, list)
                                           : -FI_ENOMEM;
    fi_freeinfo(hints);
    return rc;
}

/* "libfabric 1.22 (/opt/amazon/efa/lib/libfabric.so.1)": which library
 * answered matters, as containers often carry the distribution's beside
 * the EFA installer's. */
static void library_name(char *buf, size_t len)
{
    uint32_t v = fi_version();
    Dl_info where;
    memset(&where, 0, sizeof where);
    if (dladdr((void *)(uintptr_t)fi_getinfo, &where) != 0 && where.dli_fname != NULL)
        snprintf(buf, len, "libfabric %u.%u (%s)", FI_MAJOR(v), FI_MINOR(v), where.dli_fname);
    else
        snprintf(buf, len, "libfabric %u.%u", FI_MAJOR(v), FI_MINOR(v));
}

/* "rdmap16s27-rdm, rdmap32s27-rdm": each domain once, in libfabric's order. */
static void domain_names(const struct fi_info *list, char *buf, size_t len, size_t *count)
{
    size_t used = 0;
    *count = 0;
    buf[0] = '\0';
    for (const struct fi_info *i = list; i != NULL; i = i->next) {
        const char *name = i->domain_attr ? i->domain_attr->name : NULL;
        if (name == NULL)
            continue;
        bool seen = false;
        for (const struct fi_info *j = list; j != i && !seen; j = j->next)
            seen = j->domain_attr && j->domain_attr->name &&
                   strcmp(j->domain_attr->name, name) == 0;
        if (seen)
            continue;
        fb_strbuf_append(buf, len, &used, "%s%s", *count ? ", " : "", name);
        (*count)++;
    }
}

#define FIX_LIBFABRIC                                                                          \
    "install the EFA installer's libfabric (/opt/amazon/efa) and put /opt/amazon/efa/lib "    \
    "first in LD_LIBRARY_PATH, or use a newer libfabric with the efa provider"

/* The full question found nothing: without FI_RMA, is efa there at all? */
static void judge_missing(int rc, const char *lib, size_t ndevs, struct fb_check *c)
{
    struct fi_info *plain = NULL;
    /* FI_PROVIDER filters providers inside libfabric: say so when it is
     * what hid efa (this process's environment is what libfabric read). */
    const char *filter = getenv("FI_PROVIDER");
    char why[160] = "";
    if (!fb_efa_fi_provider_ok(filter))
        snprintf(why, sizeof why, " (FI_PROVIDER=%s filters it out)", filter);
    if (rc != -FI_ENODATA) {
        fb_check_set(c, FB_CHECK_FAIL, "%s: fi_getinfo for efa failed: %s (%d)%s", lib,
                     fi_strerror(-rc), rc, why);
    } else if (ask_efa(0, &plain) == 0) {
        fb_check_set(c, FB_CHECK_FAIL, "%s: the efa provider has FI_EP_RDM endpoints but no "
                                       "FI_RMA: the OFI plugin cannot use it", lib);
    } else {
        fb_check_set(c, FB_CHECK_FAIL, "%s has no efa provider with FI_EP_RDM endpoints, though "
                                       "this node has %zu EFA device%s%s", lib, ndevs,
                     ndevs == 1 ? "" : "s", why);
    }
    fi_freeinfo(plain);
    fb_check_culprit(c, "efa");
    fb_check_fix(c, "%s; where it is installed, the devices' /dev/infiniband files must reach "
                    "the process (see rdma-devices)", FIX_LIBFABRIC);
}

void fb_node_check_efa_provider(const struct fb_node_ctx *ctx, struct fb_check *c)
{
    if (!fb_node_root_is_live(ctx)) {
        fb_check_set(c, FB_CHECK_SKIP, "asks this host's libfabric, not a --root tree: run it "
                                       "on the node");
        return;
    }
    struct fb_efa_devices devs;
    struct fb_err err = {FB_OK, ""};
    if (fb_check_fails_on(c, fb_efa_scan(ctx->root, &devs, &err), &err))
        return;
    if (devs.n == 0) {
        fb_check_set(c, FB_CHECK_SKIP, "no EFA devices: not an EFA node");
        return;
    }
    char lib[FB_CHECK_TEXT_MAX / 2];
    library_name(lib, sizeof lib);
    struct fi_info *list = NULL;
    int rc = ask_efa(FI_RMA, &list);
    if (rc != 0) {
        judge_missing(rc, lib, devs.n, c);
        return;
    }
    char domains[512];
    size_t ndomains = 0;
    domain_names(list, domains, sizeof domains, &ndomains);
    uint32_t pv = list->fabric_attr ? list->fabric_attr->prov_version : 0;
    fb_check_set(c, FB_CHECK_OK, "%s: efa provider %u.%u, FI_EP_RDM with FI_RMA on %zu domain%s "
                                 "(%s) for %zu EFA device%s", lib, FI_MAJOR(pv), FI_MINOR(pv),
                 ndomains, ndomains == 1 ? "" : "s", ndomains ? domains : "none", devs.n,
                 devs.n == 1 ? "" : "s");
    /* libfabric opens one RDM domain per device it can use. */
    if (ndomains < devs.n) {
        fb_check_set(c, FB_CHECK_WARN, "%s: efa answers for %zu of %zu EFA devices (%s): the "
                                       "others cannot be opened", lib, ndomains, devs.n,
                     ndomains ? domains : "none");
        fb_check_fix(c, "expose every EFA device's /dev/infiniband/uverbs file to the workload "
                        "(request the node's vpc.amazonaws.com/efa devices; see rdma-devices)");
    }
    fi_freeinfo(list);
}
