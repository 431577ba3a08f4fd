/* The provider a run asks for and the one libfabric will load. FI_PROVIDER
 * filters libfabric's providers before the probe asks for one, so a
 * --provider it filters out could only fail later, as "no provider";
 * saying so at the start names the real problem. Pure, so the rules are
 * tested without libfabric. */
#ifndef FB_PROBE_OFI_ENV_H
#define FB_PROBE_OFI_ENV_H

#include "core/status.h"

/* FB_ERR_USAGE when `fi_provider` (FI_PROVIDER's value: "efa", "tcp,shm",
 * "^shm", NULL or "" for unset) would keep libfabric from loading the
 * core provider of `provider` ("verbs" of "verbs;ofi_rxm"); FB_OK when
 * either is unset or they agree. */
enum fb_status probe_ofi_provider_agrees(const char *provider, const char *fi_provider,
                                         struct fb_err *err);

#endif
