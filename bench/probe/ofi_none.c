/* The ofi transport in a build without libfabric: --transport ofi is
 * known, and the option check says at the start how to get it; the ops
 * are never reached. */
#ifndef HAVE_OFI
#include "probe/opts.h"
#include "probe/rounds.h"
#include "probe/transport.h"

static const char built_without[] =
    "fabric-rdma was built without libfabric; install libfabric-dev (or set LIBFABRIC_HOME to "
    "an install) and rebuild for --transport ofi";

static long none_lanes(const struct probe_opts *o) { return o->qps; }

static enum fb_status none_open(struct probe_rank_env *env, struct probe_endpoint *ep,
                                struct fb_err *err)
{
    (void)env;
    (void)ep;
    return fb_fail(err, FB_ERR_UNAVAIL, "%s", built_without);
}

static void none_close(struct probe_rank_env *env) { (void)env; }

static enum fb_status none_connect_round(const struct probe_rank_env *env, struct probe_round *rd,
                                         struct fb_err *err)
{
    (void)env;
    (void)rd;
    return fb_fail(err, FB_ERR_UNAVAIL, "%s", built_without);
}

static enum fb_status none_bandwidth(const struct probe_rank_env *env, struct probe_round *rd,
                                     const struct probe_size_spec *spec, struct probe_measure *out,
                                     int *nout, struct fb_err *err)
{
    (void)env;
    (void)rd;
    (void)spec;
    (void)out;
    (void)nout;
    return fb_fail(err, FB_ERR_UNAVAIL, "%s", built_without);
}

static enum fb_status none_latency(const struct probe_rank_env *env, struct probe_end *e,
                                   const struct probe_size_spec *spec, struct probe_measure *out,
                                   struct fb_err *err)
{
    (void)env;
    (void)e;
    (void)spec;
    (void)out;
    return fb_fail(err, FB_ERR_UNAVAIL, "%s", built_without);
}

static void none_disconnect_end(struct probe_end *e) { (void)e; }

static void none_describe_endpoint(const struct probe_endpoint *e, char *port, size_t port_len,
                                   char *address, size_t address_len)
{
    (void)e;
    snprintf(port, port_len, "-");
    snprintf(address, address_len, "-");
}

const struct probe_transport_ops probe_transport_ofi = {
    .name = "ofi",
    .unavailable = built_without,
    .lane = "endpoint",
    .lanes = none_lanes,
    .gpu_memory = 1,
    .open = none_open,
    .close = none_close,
    .connect_round = none_connect_round,
    .bandwidth = none_bandwidth,
    .latency = none_latency,
    .disconnect_end = none_disconnect_end,
    .port_column = "provider",
    .address_column = "fabric address",
    .describe_endpoint = none_describe_endpoint,
};
#else
typedef int probe_ofi_none_is_empty; /* a translation unit may not be empty */
#endif
