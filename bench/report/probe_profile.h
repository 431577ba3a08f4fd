/* What a link should carry, from the atlas: the probe profile (ib_write_bw
 * per line rate, from GPU or host memory) that fits a probe result, with
 * the line rate read off the result or, where it does not print it (perftest
 * never does), taken from the NICs of the GPU's families in the atlas. */
#ifndef FB_REPORT_PROBE_PROFILE_H
#define FB_REPORT_PROBE_PROFILE_H

#include <json-c/json.h>
#include <stdbool.h>

#include "nccl/profiles.h"

struct fb_probe_expectation {
    const struct fb_profile *profile; /* NULL when none fits */
    const struct fb_probe_expect *expect;
    double line_rate;      /* Gb/s; NAN when unknown */
    bool gpu_memory;       /* the result wrote from or to GPU memory */
    char line_from[256];   /* where the line rate comes from */
};

/* Fills `x` for a probe document; x->profile is NULL when the line rate
 * is unknown or no probe profile has that rate and memory kind. */
void fb_probe_expectation_read(json_object *doc, const struct fb_profiles *ps, struct fb_probe_expectation *x);

#endif
