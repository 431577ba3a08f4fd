#include "probe/ofi_env.h"

#include <stdio.h>
#include <string.h>

/* 1 when `name` is one of the comma list's items. */
static int listed(const char *list, const char *name, size_t name_len)
{
    for (const char *p = list; *p != '\0';) {
        size_t n = strcspn(p, ",");
        if (n == name_len && strncmp(p, name, n) == 0)
            return 1;
        p += n + (p[n] == ',');
    }
    return 0;
}

enum fb_status probe_ofi_provider_agrees(const char *provider, const char *fi_provider,
                                         struct fb_err *err)
{
    if (provider == NULL || *provider == '\0' || fi_provider == NULL || *fi_provider == '\0')
        return FB_OK;
    size_t core = strcspn(provider, ";"); /* libfabric filters core providers */
    int excluding = fi_provider[0] == '^';
    int in = listed(fi_provider + excluding, provider, core);
    if (excluding ? !in : in)
        return FB_OK;
    return fb_fail(err, FB_ERR_USAGE,
                   "--provider %s disagrees with FI_PROVIDER=%s, which keeps libfabric from "
                   "loading %.*s; unset FI_PROVIDER or make the two name the same provider",
                   provider, fi_provider, (int)core, provider);
}
