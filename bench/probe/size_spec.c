#include "probe/size_spec.h"

#include "probe/opts.h"

double probe_size_spec_bound_s(const struct probe_size_spec *r, int lanes)
{
    if (r->iters == 0)
        return r->margin + r->duration + 1.0;
    double messages = (double)(r->iters + r->warmup) * (lanes > 0 ? lanes : 1);
    return messages * ((double)r->size * 8.0 / (PROBE_FLOOR_GBPS * 1e9) + 1e-3) + 1.0;
}

double probe_silence_allowed(const struct probe_size_spec *r, double done, double seconds,
                             double bytes_per_completion)
{
    if (done <= 0 || seconds <= 0)
        return r->timeout;
    return r->timeout + bytes_per_completion / (done / seconds);
}

void probe_size_spec_progress(const struct probe_size_spec *r)
{
    if (r->progress != NULL)
        r->progress(r->progress_arg);
}

enum fb_status probe_stopped(const volatile sig_atomic_t *stop, struct fb_err *err)
{
    if (stop == NULL || *stop == 0)
        return FB_OK;
    return fb_fail(err, *stop == SIGINT ? FB_EXIT_SIGINT : FB_EXIT_SIGTERM,
                   "stopped by a signal; sizes already finished are kept in the results file");
}

void probe_size_spec_for(const struct probe_opts *o, uint64_t size,
                         const volatile sig_atomic_t *stop, struct probe_size_spec *r)
{
    *r = (struct probe_size_spec){
        .size = size,
        .stride = o->sizes[o->nsizes - 1],
        .iters = o->iters,
        .warmup = o->warmup,
        .duration = o->duration,
        .margin = o->margin,
        .cq_mod = (int)o->cq_mod,
        .post_list = (int)o->post_list,
        .tx_depth = (int)o->tx_depth,
        .interval = o->interval,
        .timeout = o->timeout,
        .stop = stop,
    };
}
