#include "probe/opts.h"

#include <stddef.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "core/world.h"
#include "probe/tcp_layout.h"

#define OFF(f) offsetof(struct probe_opts, f)
#define BIG 2147483647.0

/* In the order of the int they set: op_read, counter_completion. */
static const char *const op_names[] = {"write", "read", NULL};
static const char *const completion_names[] = {"cq", "counter", NULL};

const struct fb_opt probe_options[] = {
    {0, "transport", FB_OPT_STRING, OFF(transport_name), "rdma|tcp|ofi", "rdma (verbs RDMA WRITE, default), tcp (sockets) or ofi (libfabric RMA: EFA, Slingshot, any provider)", 0, 0, 0},
    {0, "provider", FB_OPT_STRING, OFF(provider), "NAME", "ofi: libfabric provider: efa, cxi, verbs;ofi_rxm, tcp, shm, ... (default $FI_PROVIDER, else libfabric's first with RMA)", 0, 0, 0},
    {0, "op", FB_OPT_CHOICE, OFF(op_read), NULL, "ofi: RMA operation (default write; read where a provider offers only reads)", 0, 0, 0, .choices = op_names},
    {0, "completion", FB_OPT_CHOICE, OFF(counter_completion), NULL, "ofi: a CQ entry per operation, streaming (default), or a counter, a window at a time (fi_rma_bw style)", 0, 0, 0, .choices = completion_names},
    {0, "pattern", FB_OPT_STRING, OFF(pattern_name), "NAME", "pairs (rank i <-> i+N/2, default), ring, all-pairs (every node pair, in rounds)", 0, 0, 0},
    {'d', "ib-dev", FB_OPT_STRING, OFF(ib_dev), "LIST", "HCA (rdma) or libfabric domain (ofi) per local rank, comma list (default: all, HCAs in name order, domains in libfabric's)", 0, 0, 0},
    {'i', "ib-port", FB_OPT_INT, OFF(ib_port), "PORT", "HCA port (default 1)", 1, 255, 0},
    {'x', "gid-index", FB_OPT_INT, OFF(gid_index), "INDEX", "GID index (default: automatic, RoCE v2 with an IPv4 address)", -1, 1023, 0},
    {0, "mtu", FB_OPT_INT, OFF(mtu), "BYTES", "path MTU 256-4096 (default: the port's active MTU)", 0, 4096, 0},
    {0, "sl", FB_OPT_INT, OFF(sl), "N", "InfiniBand service level (default 0)", 0, 15, 0},
    {0, "tclass", FB_OPT_INT, OFF(tclass), "N", "RoCE traffic class (default 0)", 0, 255, 0},
    {0, "iface", FB_OPT_STRING, OFF(iface), "LIST", "tcp: interface per local rank, comma list (default: loopback on one host, else the default route's)", 0, 0, 0},
    {'P', "streams", FB_OPT_INT, OFF(streams), "N", "tcp: streams per link (default 1)", 1, 64, 0},
    {0, "threads", FB_OPT_INT, OFF(threads), "N", "tcp: threads per link end driving its streams (default: one per stream, as iperf3)", 1, 64, 0},
    {0, "nccl-like", FB_OPT_FLAG, OFF(nccl_like), NULL, "tcp: streams and threads as NCCL's socket transport picks them (NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD, else the NIC's cloud default)", 0, 0, 0},
    {0, "sock-buf", FB_OPT_SIZE, OFF(sock_buf), "BYTES", "tcp: socket buffer size (default: kernel autotuning)", 0, 0, 0},
    {'s', "size", FB_OPT_SIZE, OFF(size), "BYTES", "message size (default 1M; latency 2)", 0, 0, 0},
    {'a', "all", FB_OPT_FLAG, OFF(all_sizes), NULL, "sweep sizes from --min-size to --max-size by powers of 2", 0, 0, 0},
    {0, "min-size", FB_OPT_SIZE, OFF(min_size), "BYTES", "first size of -a (default 2)", 0, 0, 0},
    {0, "max-size", FB_OPT_SIZE, OFF(max_size), "BYTES", "last size of -a (default 8M)", 0, 0, 0},
    {'n', "iters", FB_OPT_INT, OFF(iters), "N", "timed messages per QP/stream (default 5000 rdma, 1000 latency)", 1, BIG, 0},
    {'D', "duration", FB_OPT_DOUBLE, OFF(duration), "SECONDS", "time each size instead of counting (default for tcp bandwidth: 2)", 0.01, 86400, 0},
    {'w', "warmup", FB_OPT_INT, OFF(warmup), "N", "untimed messages per QP/stream before each size (default 100)", 0, BIG, 0},
    {0, "margin", FB_OPT_DOUBLE, OFF(margin), "SECONDS", "untimed seconds before each size with -D (default 0.2)", 0, 3600, 0},
    {'q', "qps", FB_OPT_INT, OFF(qps), "N", "rdma: queue pairs per link; ofi: endpoints per link (default 2)", 1, 64, 0},
    {'t', "tx-depth", FB_OPT_INT, OFF(tx_depth), "N", "rdma: writes outstanding per QP; ofi: per endpoint (default 128)", 1, 16384, 0},
    {'Q', "cq-mod", FB_OPT_INT, OFF(cq_mod), "N", "rdma: one completion per N writes (default 32)", 1, 16384, 0},
    {'l', "post-list", FB_OPT_INT, OFF(post_list), "N", "rdma: writes per ibv_post_send (default 1)", 1, 64, 0},
    {'b', "bidirectional", FB_OPT_FLAG, OFF(bidirectional), NULL, "measure both directions of every link at once", 0, 0, 0},
    {0, "latency", FB_OPT_FLAG, OFF(latency), NULL, "ping-pong latency (ib_write_lat style) instead of bandwidth", 0, 0, 0},
    {0, "use-cuda", FB_OPT_FLAG, OFF(use_cuda), NULL, "rdma, ofi: GPU memory (GPUDirect RDMA; rdma: dma-buf, else nvidia-peermem; ofi: FI_HMEM)", 0, 0, 0},
    {0, "cuda-device", FB_OPT_INT, OFF(cuda_device), "N", "GPU for --use-cuda (default: local rank modulo the GPU count)", -1, 1023, 0},
    {0, "threshold", FB_OPT_DOUBLE, OFF(threshold), "FRACTION", "flag links below this share of line rate, else of the median link (default 0.9)", 0.01, 1, 0},
    {0, "interval", FB_OPT_DOUBLE, OFF(interval), "SECONDS", "first sampling interval; doubles to fit 64 samples (default 0.001)", 0.0001, 3600, 0},
    {0, "timeout", FB_OPT_DOUBLE, OFF(timeout), "SECONDS", "silence tolerated from a peer before exit 8 (default 30)", 0.1, 86400, 0},
    {'J', "json", FB_OPT_STRING, OFF(json_path), "FILE", "results path (default results/<cluster>/<UTC time>-probe-<transport>.json)", 0, 0, 0},
    {0, "results-dir", FB_OPT_STRING, OFF(results_dir), "DIR", "results directory (default results)", 0, 0, 0},
    {0, "cluster", FB_OPT_STRING, OFF(cluster), "NAME", "cluster label (default $FABRIC_CLUSTER, else rank 0's host)", 0, 0, 0},
    {'h', "help", FB_OPT_FLAG, OFF(help), NULL, "this help", 0, 0, 0},
    {0, "version", FB_OPT_FLAG, OFF(version), NULL, "print the version", 0, 0, 0},
    FB_OPT_END,
};

static void defaults(struct probe_opts *o)
{
    memset(o, 0, sizeof *o);
    o->transport_name = "rdma";
    o->pattern_name = "pairs";
    o->ib_port = 1;
    o->gid_index = -1;
    o->streams = 1;
    o->size = 1 << 20;
    o->min_size = 2;
    o->max_size = 8 << 20;
    o->warmup = 100;
    o->margin = 0.2;
    o->qps = 2;
    o->tx_depth = 128;
    o->cq_mod = 32;
    o->post_list = 1;
    o->cuda_device = -1;
    o->threshold = 0.9;
    o->interval = 0.001;
    o->timeout = 30;
    o->results_dir = "results";
}

static int given(const struct fb_opts_result *res, const char *name)
{
    int i = fb_opts_find(probe_options, name);
    return i >= 0 && res->given[i];
}

static enum fb_status plan_sizes(struct probe_opts *o, const struct fb_opts_result *res,
                                 struct fb_err *err)
{
    if (!o->all_sizes) {
        if (o->latency && !given(res, "size"))
            o->size = 2;
        if (o->size == 0)
            return fb_fail(err, FB_ERR_USAGE, "-s 0: a message needs at least 1 byte");
        o->sizes[0] = o->size;
        o->nsizes = 1;
        return FB_OK;
    }
    if (given(res, "size"))
        return fb_fail(err, FB_ERR_USAGE, "-a sweeps --min-size..--max-size; drop -s or -a");
    if (o->min_size == 0 || o->min_size > o->max_size)
        return fb_fail(err, FB_ERR_USAGE, "--min-size %llu and --max-size %llu: need 1 <= min <= max",
                       (unsigned long long)o->min_size, (unsigned long long)o->max_size);
    for (uint64_t s = o->min_size; s <= o->max_size && o->nsizes < 64; s *= 2)
        o->sizes[o->nsizes++] = s;
    return FB_OK;
}

static enum fb_status find_transport(struct probe_opts *o, struct fb_err *err)
{
    char names[128];
    o->tp = probe_transport_find(o->transport_name, &o->transport);
    if (o->tp != NULL && o->tp->unavailable != NULL)
        return fb_fail(err, FB_ERR_UNAVAIL, "--transport %s: %s", o->tp->name, o->tp->unavailable);
    if (o->tp != NULL)
        return FB_OK;
    probe_transport_names(0, names, sizeof names);
    return fb_fail(err, FB_ERR_USAGE, "--transport %s: use %s", o->transport_name, names);
}

static enum fb_status check_modes(const struct probe_opts *o, const struct fb_opts_result *res,
                                  struct fb_err *err)
{
    if (given(res, "iters") && given(res, "duration"))
        return fb_fail(err, FB_ERR_USAGE, "-n and -D both given; count messages or time, not both");
    if (o->latency && o->pattern == PROBE_PATTERN_RING)
        return fb_fail(err, FB_ERR_USAGE, "--latency pairs ranks for ping-pong; use --pattern pairs "
                       "or all-pairs");
    if (o->latency && o->bidirectional)
        return fb_fail(err, FB_ERR_USAGE, "--latency is a round trip already; drop -b");
    return FB_OK;
}

/* Options of the ofi transport are refused elsewhere rather than ignored:
 * a user who typed --provider efa expects libfabric to run. */
static enum fb_status check_ofi_options(const struct probe_opts *o, const struct fb_opts_result *res,
                                        struct fb_err *err)
{
    static const char *const ofi_only[] = {"provider", "op", "completion"};
    for (size_t i = 0; o->transport != PROBE_OFI && i < sizeof ofi_only / sizeof ofi_only[0]; i++)
        if (given(res, ofi_only[i]))
            return fb_fail(err, FB_ERR_USAGE, "--%s applies to --transport ofi; add "
                           "--transport ofi or drop --%s", ofi_only[i], ofi_only[i]);
    if (o->counter_completion && o->latency)
        return fb_fail(err, FB_ERR_USAGE, "--latency waits on each operation's CQ entry; drop "
                       "--completion counter");
    return FB_OK;
}

/* --threads and --nccl-like: TCP only; --nccl-like sets -P and --threads
 * as NCCL would on this host's NIC, so it takes neither. */
static enum fb_status plan_tcp_threads(struct probe_opts *o, const struct fb_opts_result *res,
                                       struct fb_err *err)
{
    static const char *const tcp_only[] = {"threads", "nccl-like"};
    for (size_t i = 0; o->transport != PROBE_TCP && i < sizeof tcp_only / sizeof tcp_only[0]; i++)
        if (given(res, tcp_only[i]))
            return fb_fail(err, FB_ERR_USAGE, "--%s applies to --transport tcp; add "
                           "--transport tcp or drop --%s", tcp_only[i], tcp_only[i]);
    if (o->nccl_like) {
        if (given(res, "streams") || given(res, "threads"))
            return fb_fail(err, FB_ERR_USAGE, "--nccl-like picks the streams and threads as NCCL "
                           "does; drop -P/--threads, or set NCCL_SOCKET_NTHREADS and "
                           "NCCL_NSOCKS_PERTHREAD");
        struct probe_tcp_layout l;
        if (probe_tcp_nccl_layout(getenv("NCCL_SOCKET_NTHREADS"), getenv("NCCL_NSOCKS_PERTHREAD"),
                                  probe_tcp_iface_vendor("", o->iface), &l, err) != FB_OK)
            return err->code;
        o->streams = l.streams;
        o->threads = l.threads;
        snprintf(o->layout, sizeof o->layout, "%s", l.why);
    }
    if (o->threads > o->streams)
        return fb_fail(err, FB_ERR_USAGE, "--threads %ld with -P %ld: each thread drives at least "
                       "one stream; raise -P or lower --threads", o->threads, o->streams);
    if (o->transport == PROBE_TCP && o->threads == 0)
        o->threads = o->streams; /* recorded as what ran */
    return FB_OK;
}

static enum fb_status check_gpu_memory(const struct probe_opts *o,
                                       const struct fb_opts_result *res, struct fb_err *err)
{
    if (o->use_cuda && !o->tp->gpu_memory) {
        char names[128];
        probe_transport_names(1, names, sizeof names);
        return fb_fail(err, FB_ERR_USAGE, "--use-cuda applies to --transport %s; drop it for %s",
                       names, o->tp->name);
    }
    if (o->use_cuda && o->latency)
        return fb_fail(err, FB_ERR_USAGE, "--latency polls host memory; drop --use-cuda");
    if (given(res, "cuda-device") && !o->use_cuda)
        return fb_fail(err, FB_ERR_USAGE, "--cuda-device needs --use-cuda");
    return FB_OK;
}

/* Counting is the default except for bandwidth on a transport that (like
 * iperf3 over TCP) runs for a time. */
static void default_amount(struct probe_opts *o, const struct fb_opts_result *res)
{
    if (!given(res, "iters") && !given(res, "duration")) {
        if (!o->latency && o->tp->default_duration_s > 0)
            o->duration = o->tp->default_duration_s;
        else
            o->iters = o->latency ? 1000 : 5000;
    }
    if (given(res, "duration"))
        o->iters = 0;
}

static enum fb_status check_combinations(struct probe_opts *o, const struct fb_opts_result *res,
                                         struct fb_err *err)
{
    if (find_transport(o, err) != FB_OK)
        return err->code;
    if (probe_pattern_parse(o->pattern_name, &o->pattern) != 0)
        return fb_fail(err, FB_ERR_USAGE, "--pattern %s: use pairs, ring or all-pairs",
                       o->pattern_name);
    if (check_modes(o, res, err) != FB_OK || check_ofi_options(o, res, err) != FB_OK ||
        check_gpu_memory(o, res, err) != FB_OK || plan_tcp_threads(o, res, err) != FB_OK)
        return err->code;
    default_amount(o, res);
    return o->tp->check_options != NULL ? o->tp->check_options(o, err) : FB_OK;
}

static void record_invocation(struct probe_opts *o, int argc, char **argv)
{
    size_t used = 0;
    o->invoked_as[0] = '\0';
    for (int i = 0; i < argc && used < sizeof o->invoked_as; i++)
        used += (size_t)snprintf(o->invoked_as + used, sizeof o->invoked_as - used, "%s%s",
                                 i ? " " : "", argv[i]);
}

enum fb_status probe_opts_parse(struct probe_opts *o, int argc, char **argv, struct fb_err *err)
{
    defaults(o);
    record_invocation(o, argc, argv);
    struct fb_opts_result res;
    enum fb_status st = fb_opts_parse(probe_options, argc, argv, o, &res, err);
    if (st == FB_OK && res.npositional > 0)
        st = fb_fail(err, FB_ERR_USAGE, "unexpected argument '%s': fabric-rdma takes no host name "
                     "(every pair comes from the MPI job); see --help", res.positional[0]);
    if (st == FB_OK && !o->help && !o->version)
        st = plan_sizes(o, &res, err);
    if (st == FB_OK && !o->help && !o->version)
        st = check_combinations(o, &res, err);
    fb_opts_result_free(&res);
    return st;
}

uint64_t probe_opts_hash(const struct probe_opts *o)
{
    uint64_t h = fb_opts_hash(probe_options, o);
    return fb_hash_bytes(h, o->sizes, (size_t)o->nsizes * sizeof o->sizes[0]);
}

void probe_opts_help(const char *prog)
{
    printf("usage: mpirun -np N %s [options]\n"
           "Raw link probe across every pair of an MPI job: RDMA WRITE bandwidth or latency\n"
           "(ib_write_bw / ib_write_lat style) over verbs or libfabric (EFA, Slingshot), or a\n"
           "TCP baseline. One rank per HCA, libfabric domain or interface: local rank l uses\n"
           "the l-th device.\n\n", prog);
    fb_opts_help(stdout, probe_options);
    printf("\nexit codes: 0 ok, 1 internal error, 2 usage, 4 memory, 5 unavailable (no RDMA/GPU\n"
           "here), 6 the ends of a link disagree, 7 io, 8 timeout (names the silent rank and\n"
           "host), 9 runtime, 130 SIGINT, 143 SIGTERM (see docs/probe.md, docs/exit-codes.md)\n");
}
