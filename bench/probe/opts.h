/* fabric-rdma's options: one table (core/options.h) drives parsing,
 * --help and the JSON echo; the checks between options live here too, but
 * for those of one transport, which its ops make (probe/transport.h). */
#ifndef FB_PROBE_OPTS_H
#define FB_PROBE_OPTS_H

#include <stdint.h>

#include "core/options.h"
#include "core/status.h"
#include "probe/schedule.h"
#include "probe/transport.h"

struct probe_opts {
    const char *transport_name, *pattern_name;
    const char *provider;                  /* ofi */
    int op_read;                           /* ofi: --op read */
    int counter_completion;                /* ofi: --completion counter */
    const char *ib_dev;
    long ib_port, gid_index, mtu, sl, tclass;
    const char *iface;
    long streams;
    long threads;                          /* tcp: 0 = one per stream */
    int nccl_like;                         /* tcp: --nccl-like */
    char layout[160];                      /* tcp: how --nccl-like chose streams and threads */
    uint64_t sock_buf;
    uint64_t size, min_size, max_size;
    int all_sizes;
    long iters, warmup;
    double duration, margin;
    long qps, tx_depth, cq_mod, post_list;
    int bidirectional, latency;
    int use_cuda;
    long cuda_device;
    double threshold, interval, timeout;
    const char *json_path, *results_dir, *cluster;
    int help, version;

    /* derived by probe_opts_parse */
    enum probe_transport transport;        /* the row of --transport in the table */
    const struct probe_transport_ops *tp;  /* and its ops */
    enum probe_pattern pattern;
    int nsizes;
    uint64_t sizes[64];
    char invoked_as[1024];
};

extern const struct fb_opt probe_options[];

/* Defaults, parse, then the cross-option checks and derived fields. Errors
 * are FB_ERR_USAGE with one line naming the option and the fix. */
enum fb_status probe_opts_parse(struct probe_opts *o, int argc, char **argv, struct fb_err *err);

/* Hash of everything that must match on every rank. */
uint64_t probe_opts_hash(const struct probe_opts *o);

void probe_opts_help(const char *prog);

#endif
