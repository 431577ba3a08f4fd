#include "coll/pacing.h"

#include <stdio.h>
#include <string.h>

#include "core/units.h"

long fb_budget_iterations(double remaining_s, int sizes_left, double per_op_s, int placements,
                          long cap)
{
    if (sizes_left < 1)
        sizes_left = 1;
    if (per_op_s <= 0)
        return cap;
    double share = remaining_s / sizes_left;
    double fit = share / (per_op_s * placements);
    long iters = fit >= (double)cap ? cap : (long)fit;
    return iters < FB_BUDGET_MIN_ITERS ? FB_BUDGET_MIN_ITERS : iters;
}

int fb_fallback_suspected(const struct fb_fallback_rule *rule, uint64_t bytes, double busbw_GBps,
                          int socket_seen, const char *net, char *reason, size_t len)
{
    if (rule->nodes < 2 || bytes < FB_FALLBACK_MIN_BYTES)
        return 0;
    if (!socket_seen && !(busbw_GBps <= rule->band_GBps))
        return 0;
    char size[32];
    fb_format_size(bytes, size, sizeof size);
    if (socket_seen)
        snprintf(reason, len, "TCP fallback suspected at %s: %.1f GB/s busBW on NET/Socket", size, busbw_GBps);
    else
        snprintf(reason, len, "TCP fallback suspected at %s: %.1f GB/s busBW on %s, within the fallback band (<= %.1f GB/s)",
                 size, busbw_GBps, net, rule->band_GBps);
    return 1;
}

int fb_log_shows_socket(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    char line[1024];
    int seen = 0;
    while (!seen && fgets(line, sizeof line, f) != NULL)
        seen = strstr(line, "via NET/Socket") != NULL;
    fclose(f);
    return seen;
}
