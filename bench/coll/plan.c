#include "coll/plan.h"

#include <stdlib.h>

#include "core/units.h"

enum fb_status fb_plan_sizes(uint64_t min, uint64_t max, long factor, uint64_t step,
                             struct fb_plan *plan, struct fb_err *err)
{
    plan->sizes = NULL;
    plan->count = 0;
    plan->linear_warning = 0;
    plan->merged = 0;
    uint64_t n = 0;
    if (factor > 1) {
        for (uint64_t s = min; s <= max; s *= (uint64_t)factor) {
            n++;
            if (s > UINT64_MAX / (uint64_t)factor)
                break;
        }
    } else {
        n = (max - min) / step + 1;
    }
    if (n > FB_PLAN_MAX_SIZES) {
        char a[32], b[32], c[32];
        fb_format_size(min, a, sizeof a);
        fb_format_size(max, b, sizeof b);
        fb_format_size(step, c, sizeof c);
        return fb_fail(err, FB_ERR_USAGE,
                       "-b %s -e %s steps linearly by %s (no -f): %llu sizes; add -f 2 for a doubling sweep or raise -i",
                       a, b, c, (unsigned long long)n);
    }
    plan->sizes = malloc(n * sizeof *plan->sizes);
    if (plan->sizes == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory for %llu sizes", (unsigned long long)n);
    uint64_t s = min;
    for (uint64_t i = 0; i < n; i++) {
        plan->sizes[i] = s;
        s = factor > 1 ? s * (uint64_t)factor : s + step;
    }
    plan->count = (int)n;
    plan->linear_warning = factor <= 1 && n > 64;
    return FB_OK;
}

void fb_plan_dedupe(struct fb_plan *plan, const struct fb_collective *c, size_t eltsize, int nranks)
{
    int kept = 0;
    size_t last = 0;
    for (int i = 0; i < plan->count; i++) {
        size_t bytes = c->counts((size_t)plan->sizes[i], eltsize, nranks).bytes;
        if (kept > 0 && bytes == last)
            continue;
        plan->sizes[kept++] = plan->sizes[i];
        last = bytes;
    }
    plan->merged += plan->count - kept;
    plan->count = kept;
}

void fb_plan_free(struct fb_plan *plan)
{
    free(plan->sizes);
    plan->sizes = NULL;
    plan->count = 0;
}

void fb_plan_buffers(const struct fb_collective *c, size_t eltsize, int nranks, uint64_t size,
                     size_t *send_bytes, size_t *recv_bytes)
{
    struct fb_counts k = c->counts((size_t)size, eltsize, nranks);
    *send_bytes = k.send * eltsize;
    /* In-place calls use the receive buffer for both roles: it must hold
     * the input too (reduce_scatter's input is n times its output). */
    *recv_bytes = (k.recv > k.send ? k.recv : k.send) * eltsize;
}

int fb_plan_largest_fit(const struct fb_plan *plan, const struct fb_collective *c, size_t eltsize,
                        int nranks, int sharers, uint64_t avail, uint64_t reserve)
{
    uint64_t usable = avail > reserve ? avail - reserve : 0;
    for (int i = plan->count - 1; i >= 0; i--) {
        size_t send = 0, recv = 0;
        fb_plan_buffers(c, eltsize, nranks, plan->sizes[i], &send, &recv);
        /* Sizes grow along the plan, so the first fit from the top wins. */
        if ((send + recv) * (uint64_t)sharers <= usable)
            return i;
    }
    return -1;
}
