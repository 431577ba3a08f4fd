#include "probe/run.h"

double probe_run_bound_s(const struct probe_run *r, int lanes)
{
    if (r->iters == 0)
        return r->margin + r->duration + 1.0;
    double messages = (double)(r->iters + r->warmup) * (lanes > 0 ? lanes : 1);
    return messages * ((double)r->size * 8.0 / (PROBE_FLOOR_GBPS * 1e9) + 1e-3) + 1.0;
}
