/* perftest bandwidth output (ib_write_bw, ib_read_bw, ib_send_bw) as a
 * "probe" results document with one link.
 *
 * Text facts: a dashed block with the test name ("RDMA_Write BW Test") and
 * "Key : value" pairs (Device, Number of qps, Connection type, TX depth,
 * CQ Moderation, Mtu "4096[B]", Link type, GID index), then the result
 * header " #bytes #iterations BW peak[UNIT] BW average[UNIT] MsgRate[Mpps]"
 * where UNIT is Gb/sec (--report_gbits) or MB/sec / MiB/sec (2^20 bytes),
 * and one line per size.
 *
 * --out_json facts: {"test_info": {"test": "RDMA_Write_BW_Test", "Device",
 * "Number_of_qps", "Connection_type", "TX_depth", "CQ_Moderation", "Mtu",
 * "Link_type", "GID_index", "cuda_device", ...}, "results": {"MsgSize",
 * "n_iterations", "BW_peak", "BW_average", "MsgRate"}}: one size, no unit.
 * The unit shows in the numbers themselves: BW / (MsgSize x MsgRate) is
 * 8e-3 for Gb/s and 1e6 / 2^20 for MiB/s, both measured over one interval.
 *
 * The document follows docs/schema/probe.schema.json with one pair
 * ("local" printed the output, "remote" is its peer: perftest names neither)
 * and tool.name "perftest"; messages = iterations x QPs. The data flows
 * from the side that posts to its peer (the client of ib_write_bw and
 * ib_send_bw) except for RDMA READ, where the client pulls its peer's
 * memory. A peak perftest did not measure ("BW peak won't be measured",
 * printed as 0.00) is unknown, not 0.
 *
 * A size whose peak, average and rate all print as 0 measured nothing:
 * perftest converts cycles to seconds with a clock rate it calibrates for
 * every size, and when that calibration fails on a busy CPU ("Correlation
 * coefficient r^2: ... < 0.9" on stderr) and -F let the run go on, the rate
 * is 0 and so is every figure. Such a size is kept with unknown figures.
 * Output captured with 2>&1 carries perftest's own stderr lines, and since
 * its stdout is block-buffered into a file, such a line can land inside a
 * table line; the known ones are cut out, joining the two halves. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/array.h"
#include "core/envelope.h"
#include "core/clock.h"
#include "core/jsonio.h"
#include "core/version.h"
#include "report/import.h"
#include "report/import_figures.h"
#include "core/text.h"

#define MIB_PER_S_IN_GBPS (1048576.0 * 8 / 1e9)
#define PERF_DEVICE_MAX 64

struct perf_row {
    unsigned long long bytes, iterations;
    double peak_Gbps, avg_Gbps, msg_rate_Mpps;
};

struct perf_run {
    char test[48];   /* "rdma_write_bw" */
    char device[PERF_DEVICE_MAX];
    char connection[8];
    char link[16];
    long qps, tx_depth, cq_mod, mtu, gid_index, lid_local, lid_remote, cuda_device;
    bool cuda, bidirectional, server_side;
    char gpu_name[64]; /* "[pid = 29, dev = 0] device name = [NVIDIA H200]" of a CUDA run */
    bool no_peak; /* "WARNING: BW peak won't be measured in this run." */
    const char *units; /* "Gb/sec" or "MiB/sec" as found */
    struct perf_row *rows;
    size_t nrows;
    /* The failure perftest printed (perftest_failure), "" when none: its
     * lines joined, the first one's line number, the rows before it. */
    char fault[512];
    long fault_line;
    size_t fault_after_rows;
};

static void run_init(struct perf_run *r)
{
    memset(r, 0, sizeof *r);
    r->qps = r->tx_depth = r->cq_mod = r->mtu = r->gid_index = -1;
    r->lid_local = r->lid_remote = r->cuda_device = -1;
}

/* perftest's own limits are far below these; anything above is not a
 * measurement, and would overflow the message and byte counts. */
#define PERF_MAX_BYTES (1ULL << 40)
#define PERF_MAX_ITERS 1000000000000ULL
#define PERF_MAX_QPS 65536

/* perftest's bandwidths come from cycle counters over the whole run, which
 * its output does not print: they cannot be derived again from the size and
 * the iterations. What can be refused is what no link measures: beyond
 * FB_FIGURE_ABSURD_GBPS, or a message rate of more than 1e6 Mpps. */
#define PERF_MAX_GBPS (FB_FIGURE_ABSURD_GBPS * 8)
#define PERF_MAX_MPPS 1e6

/* The average and the message rate come from the same messages over the
 * same cycles (print_report_bw, every release since 2013, bidirectional
 * sums included), so average = rate x size, in Gb/s rate[Mpps] x bytes x
 * 8e-3 whatever unit was printed. The slack is twice what rounding to the
 * printed digits (2 for a bandwidth in its own unit, 6 for the rate) can
 * move them; real outputs come within one. */
static bool average_follows_rate(const struct perf_row *row, double to_Gbps)
{
    double from_rate = row->msg_rate_Mpps * (double)row->bytes * 8e-3;
    double slack = 2 * (0.005 * to_Gbps + 0.5e-6 * (double)row->bytes * 8e-3) + 1e-9 * row->avg_Gbps;
    return fabs(row->avg_Gbps - from_rate) <= slack;
}

/* Adds a row whose bandwidths are in Gb/s, from a unit worth to_Gbps. */
static enum fb_status add_row(struct perf_run *r, const struct perf_row *row, double to_Gbps, const char *name,
                              struct fb_err *err)
{
    if (row->bytes > PERF_MAX_BYTES || row->iterations > PERF_MAX_ITERS)
        return fb_fail(err, FB_ERR_INPUT, "%s: perftest line with %llu bytes x %llu iterations: out of any real range",
                       name, row->bytes, row->iterations);
    if (row->peak_Gbps > PERF_MAX_GBPS || row->avg_Gbps > PERF_MAX_GBPS || row->msg_rate_Mpps > PERF_MAX_MPPS)
        return fb_fail(err, FB_ERR_INPUT, "%s: perftest line of %llu bytes with %g Gb/s peak, %g Gb/s average, %g Mpps: beyond any link (at most %g Gb/s, %g Mpps); the line is damaged",
                       name, row->bytes, row->peak_Gbps, row->avg_Gbps, row->msg_rate_Mpps, PERF_MAX_GBPS, PERF_MAX_MPPS);
    if (!average_follows_rate(row, to_Gbps))
        return fb_fail(err, FB_ERR_INPUT, "%s: perftest line of %llu bytes: an average of %g Gb/s cannot come with %g Mpps (that rate of %llu-byte messages is %g Gb/s, and perftest computes both from the same messages); the line is damaged",
                       name, row->bytes, row->avg_Gbps, row->msg_rate_Mpps, row->bytes,
                       row->msg_rate_Mpps * (double)row->bytes * 8e-3);
    return fb_array_append(&r->rows, &r->nrows, sizeof *row, row, "importing perftest rows", err);
}

/* A line perftest prints when the test fails (its sources, every
 * ib_*_bw): a work completion with an error status ("Completion with
 * error at client", "Failed status 10: wr_id 0 syndrom 0x88", and the
 * provider's "got completion with error"), the run loop giving up ("Failed
 * to complete run_iter_bw function successfully"), and each set-up or
 * exchange step that could not be done ("Couldn't connect to ...",
 * "Unable to create QP.", "Failed to exchange data between server and
 * clients", "Problems with warm up", "ibv_query_qp failed to get ..."). */
static bool perftest_failure(const char *s)
{
    static const char *const starts[] = {"Completion with error", "Failed status", "Failed to ", "Couldn't ",
                                         "Unable to ", "Problems with "};
    static const char *const inside[] = {"got completion with error", " failed to ", "Completion with error"};
    for (size_t k = 0; k < sizeof starts / sizeof *starts; k++)
        if (fb_starts_with(s, starts[k]))
            return true;
    for (size_t k = 0; k < sizeof inside / sizeof *inside; k++)
        if (strstr(s, inside[k]) != NULL)
            return true;
    return false;
}

/* Adds a failure line to the run's fault: the first three, joined. */
static void note_failure(struct perf_run *r, const char *s, long lineno)
{
    size_t used = strlen(r->fault);
    if (used == 0) {
        r->fault_line = lineno;
        r->fault_after_rows = r->nrows;
    } else if (strchr(r->fault, ';') != NULL && strchr(strchr(r->fault, ';') + 1, ';') != NULL) {
        return;
    }
    char quoted[256];
    fb_import_printable(quoted, sizeof quoted, s, 200);
    fb_strbuf_append(r->fault, sizeof r->fault, &used, "%s%s", used ? "; " : "", quoted);
}

/* "RDMA_Write BW Test" / "RDMA_Write_BW_Test" -> "rdma_write_bw" */
static void test_name(const char *in, char *out, size_t len)
{
    size_t k = 0;
    for (const char *c = in; *c && k + 1 < len; c++) {
        if (strncasecmp(c, "_test", 5) == 0 || strncasecmp(c, " test", 5) == 0)
            break;
        out[k++] = (*c == ' ' || *c == '_') ? '_' : (char)tolower((unsigned char)*c);
    }
    while (k > 0 && out[k - 1] == '_')
        k--;
    out[k] = '\0';
}

static json_object *nullable_long(long v)
{
    return v >= 0 ? json_object_new_int64(v) : NULL;
}

/* The probe schema's cluster label: --cluster, else the file's name. */
static void cluster_label(const char *given, const char *name, char *out, size_t len)
{
    const char *base = strrchr(name, '/');
    fb_label_safe(given ? given : (base ? base + 1 : name), out, len);
    if (out[0] == '\0')
        snprintf(out, len, "imported");
}

/* perftest names neither host: "local" is the side whose output this is. */
static json_object *endpoint_json(const struct perf_run *r, int rank)
{
    bool local = rank == 0;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "rank", json_object_new_int(rank));
    json_object_object_add(o, "host", json_object_new_string(local ? "local" : "remote"));
    json_object_object_add(o, "local_rank", json_object_new_int(0));
    json_object_object_add(o, "device", local && r->device[0] ? json_object_new_string(r->device) : NULL);
    json_object_object_add(o, "port", NULL);
    json_object_object_add(o, "firmware", NULL);
    json_object_object_add(o, "link_layer", r->link[0] ? json_object_new_string(r->link) : NULL);
    json_object_object_add(o, "port_state", NULL);
    json_object_object_add(o, "mtu_bytes", NULL);
    json_object_object_add(o, "active_mtu_bytes", r->mtu > 0 ? json_object_new_int64(r->mtu) : NULL);
    json_object_object_add(o, "rate", NULL);
    json_object_object_add(o, "line_rate_Gbps", NULL);
    long lid = local ? r->lid_local : r->lid_remote;
    json_object_object_add(o, "lid", nullable_long(lid));
    json_object_object_add(o, "gid", NULL);
    json_object_object_add(o, "address", NULL);
    json_object_object_add(o, "numa_node", NULL);
    json_object_object_add(o, "pci_bus_id", NULL);
    json_object *mem = json_object_new_object();
    bool gpu = local && r->cuda;
    json_object_object_add(mem, "kind", json_object_new_string(gpu ? "gpu" : "host"));
    json_object_object_add(mem, "registration", NULL);
    json_object_object_add(mem, "numa_node", NULL);
    json_object_object_add(mem, "gpu", gpu ? nullable_long(r->cuda_device) : NULL);
    json_object_object_add(mem, "gpu_bus_id", NULL);
    json_object_object_add(mem, "gpu_name", gpu && r->gpu_name[0] ? json_object_new_string(r->gpu_name) : NULL);
    json_object_object_add(o, "memory", mem);
    return o;
}

static json_object *end_json(const struct perf_run *r, int rank)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "rank", json_object_new_int(rank));
    json_object_object_add(o, "host", json_object_new_string(rank == 0 ? "local" : "remote"));
    json_object_object_add(o, "device", rank == 0 && r->device[0] ? json_object_new_string(r->device) : NULL);
    return o;
}

/* Whether the data flowed from the peer into the side that printed the
 * output: the server of a write or send test receives; the client of a
 * read test reads its peer's memory. */
static bool flows_in(const struct perf_run *r)
{
    return r->server_side != fb_starts_with(r->test, "rdma_read");
}

/* A size printed as all zeros measured nothing (its clock calibration
 * failed: see the top of this file). */
static bool row_measured(const struct perf_row *p)
{
    return p->peak_Gbps > 0 || p->avg_Gbps > 0 || p->msg_rate_Mpps > 0;
}

/* The peak as measured: NAN where perftest did not measure it, which it
 * prints as 0 (a peak below a non-zero average is no measurement). */
static double measured_peak(const struct perf_run *r, const struct perf_row *p)
{
    return r->no_peak || !row_measured(p) || (p->peak_Gbps == 0 && p->avg_Gbps > 0) ? NAN : p->peak_Gbps;
}

/* One size of the table as a link measurement of the probe schema. */
static json_object *link_json(const struct perf_run *r, const struct perf_row *p)
{
    int src = flows_in(r) ? 1 : 0;
    double peak = measured_peak(r, p);
    double avg = row_measured(p) ? p->avg_Gbps : NAN, rate = row_measured(p) ? p->msg_rate_Mpps : NAN;
    double messages = (double)p->iterations * (double)(r->qps > 0 ? r->qps : 1);
    double bytes = messages * (double)p->bytes;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "round", json_object_new_int(0));
    json_object_object_add(o, "link", json_object_new_int(0));
    json_object_object_add(o, "size_bytes", json_object_new_int64((int64_t)(p->bytes ? p->bytes : 1)));
    json_object_object_add(o, "src", end_json(r, src));
    json_object_object_add(o, "dst", end_json(r, 1 - src));
    json_object_object_add(o, "messages", json_object_new_int64((int64_t)messages));
    json_object_object_add(o, "bytes", fb_json_number(bytes));
    json_object_object_add(o, "time_s", avg > 0 ? fb_json_number(bytes * 8 / (avg * 1e9)) : NULL);
    json_object_object_add(o, "avg_Gbps", fb_json_number(avg));
    json_object_object_add(o, "avg_GBps", fb_json_number(avg / 8));
    json_object_object_add(o, "peak_Gbps", fb_json_number(peak));
    json_object_object_add(o, "peak_GBps", fb_json_number(peak / 8));
    json_object_object_add(o, "msg_rate_Mpps", fb_json_number(rate));
    json_object_object_add(o, "line_rate_Gbps", NULL);
    json_object_object_add(o, "line_rate_share", NULL);
    json_object_object_add(o, "samples", json_object_new_array());
    json_object_object_add(o, "latency", NULL);
    json_object_object_add(o, "flagged", json_object_new_boolean(false));
    return o;
}

/* Counts the header gives that no real run has are unknown, not data. */
static void drop_implausible(struct perf_run *r)
{
    if (r->qps > PERF_MAX_QPS)
        r->qps = -1;
}

static json_object *config_json(const struct perf_run *r)
{
    const struct perf_row *last = r->nrows > 0 ? &r->rows[r->nrows - 1] : NULL;
    json_object *c = json_object_new_object();
    json_object_object_add(c, "transport", json_object_new_string("rdma"));
    json_object_object_add(c, "pattern", json_object_new_string("pairs"));
    json_object_object_add(c, "size", last ? json_object_new_int64((int64_t)last->bytes) : NULL);
    json_object_object_add(c, "iters", last ? json_object_new_int64((int64_t)last->iterations) : NULL);
    json_object_object_add(c, "duration", NULL);
    json_object_object_add(c, "qps", nullable_long(r->qps));
    json_object_object_add(c, "streams", NULL);
    json_object_object_add(c, "threshold", NULL);
    json_object_object_add(c, "timeout", NULL);
    json_object_object_add(c, "connection", r->connection[0] ? json_object_new_string(r->connection) : NULL);
    json_object_object_add(c, "tx_depth", nullable_long(r->tx_depth));
    json_object_object_add(c, "cq_moderation", nullable_long(r->cq_mod));
    json_object_object_add(c, "gid_index", nullable_long(r->gid_index));
    return c;
}

/* The largest size measured: what a verdict on the link reads. */
static const struct perf_row *last_measured(const struct perf_run *r)
{
    for (size_t i = r->nrows; i > 0; i--)
        if (row_measured(&r->rows[i - 1]))
            return &r->rows[i - 1];
    return NULL;
}

static json_object *summary_json(const struct perf_run *r)
{
    const struct perf_row *last = last_measured(r);
    if (last == NULL) { /* a failure before any size was measured */
        json_object *s = json_object_new_object();
        json_object_object_add(s, "links_planned", json_object_new_int(1));
        json_object_object_add(s, "rounds_planned", json_object_new_int(1));
        json_object_object_add(s, "measurements_planned", json_object_new_int64((int64_t)r->nrows + 1));
        json_object_object_add(s, "measurements_done", json_object_new_int64((int64_t)r->nrows));
        json_object_object_add(s, "reference_size_bytes", NULL);
        json_object_object_add(s, "min_avg_Gbps", NULL);
        json_object_object_add(s, "median_avg_Gbps", NULL);
        json_object_object_add(s, "max_avg_Gbps", NULL);
        json_object_object_add(s, "flagged", json_object_new_int(0));
        return s;
    }
    json_object *s = json_object_new_object();
    json_object_object_add(s, "links_planned", json_object_new_int(1));
    json_object_object_add(s, "rounds_planned", json_object_new_int(1));
    json_object_object_add(s, "measurements_planned", json_object_new_int64((int64_t)r->nrows + (r->fault[0] != '\0')));
    json_object_object_add(s, "measurements_done", json_object_new_int64((int64_t)r->nrows));
    json_object_object_add(s, "reference_size_bytes", json_object_new_int64((int64_t)(last->bytes ? last->bytes : 1)));
    json_object_object_add(s, "min_avg_Gbps", fb_json_number(last->avg_Gbps));
    json_object_object_add(s, "median_avg_Gbps", fb_json_number(last->avg_Gbps));
    json_object_object_add(s, "max_avg_Gbps", fb_json_number(last->avg_Gbps));
    json_object_object_add(s, "flagged", json_object_new_int(0));
    return s;
}

/* Names the sizes printed as all zeros, and why they are unknown. */
static void warn_unmeasured(const struct perf_run *r, json_object *warnings)
{
    char sizes[256] = "";
    size_t used = 0, n = 0;
    for (size_t i = 0; i < r->nrows; i++)
        if (!row_measured(&r->rows[i]) && n++ < 8)
            fb_strbuf_append(sizes, sizeof sizes, &used, "%s%llu", used ? ", " : "", r->rows[i].bytes);
    if (n == 0)
        return;
    char msg[512];
    snprintf(msg, sizeof msg,
             "perftest printed only zeros for %zu size%s (%s%s bytes): its clock calibration failed there (\"Correlation coefficient r^2 < 0.9\" on stderr, a busy CPU), so those figures are unknown (null); rerun on an idle core (taskset -c N)",
             n, n == 1 ? "" : "s", sizes, n > 8 ? ", ..." : "");
    json_object_array_add(warnings, json_object_new_string(msg));
}

/* The failure as the probe schema's fault: perftest's lines, and where
 * they stand (the line, after which size), said by the side that printed
 * them. */
static json_object *fault_json(const struct perf_run *r)
{
    char msg[768];
    if (r->fault_after_rows > 0)
        snprintf(msg, sizeof msg, "perftest failed at line %ld, after the %llu-byte size: %s", r->fault_line,
                 r->rows[r->fault_after_rows - 1].bytes, r->fault);
    else
        snprintf(msg, sizeof msg, "perftest failed at line %ld, before its first size: %s", r->fault_line, r->fault);
    json_object *f = json_object_new_object();
    json_object_object_add(f, "status", json_object_new_string(fb_status_name(FB_ERR_RUNTIME)));
    json_object_object_add(f, "exit_code", json_object_new_int(FB_ERR_RUNTIME));
    json_object_object_add(f, "message", json_object_new_string(msg));
    json_object_object_add(f, "rank", json_object_new_int(0));
    json_object_object_add(f, "host", json_object_new_string("local"));
    json_object_object_add(f, "line", json_object_new_int64(r->fault_line));
    json_object_object_add(f, "after_bytes", r->fault_after_rows > 0
                                                 ? json_object_new_int64((int64_t)r->rows[r->fault_after_rows - 1].bytes)
                                                 : NULL);
    return f;
}

/* A probe document (docs/schema/probe.schema.json) holding one pair. */
static enum fb_status build_doc(struct perf_run *r, const char *name, const char *format,
                                const struct fb_import_opts *o, json_object *warnings,
                                json_object **out, struct fb_err *err)
{
    bool failed = r->fault[0] != '\0';
    if (r->nrows == 0 && !failed)
        return fb_fail(err, FB_ERR_INPUT, "%s holds no bandwidth lines (a latency test, or the run failed before its table)", name);
    if (last_measured(r) == NULL && !failed)
        return fb_fail(err, FB_ERR_INPUT, "%s: every figure of the table is 0: perftest could not calibrate its clock (\"Correlation coefficient r^2 < 0.9\" on a busy CPU); rerun it on an idle core (taskset -c N)", name);
    warn_unmeasured(r, warnings);
    char cluster[128], when[32];
    drop_implausible(r);
    cluster_label(o->cluster, name, cluster, sizeof cluster);
    fb_utc_iso_at(o->mtime, when, sizeof when);
    json_object *d = json_object_new_object();
    json_object_object_add(d, "schema", json_object_new_string(FB_SCHEMA_NAME));
    json_object_object_add(d, "schema_version", json_object_new_int(FB_SCHEMA_VERSION));
    json_object_object_add(d, "kind", json_object_new_string("probe"));
    json_object_object_add(d, "complete", json_object_new_boolean(!failed));
    json_object_object_add(d, "fault", failed ? fault_json(r) : NULL);
    json_object *tool = json_object_new_object();
    json_object_object_add(tool, "name", json_object_new_string("perftest"));
    json_object_object_add(tool, "version", json_object_new_string("unknown"));
    json_object_object_add(tool, "invoked_as", json_object_new_string(r->test[0] ? r->test : ""));
    json_object_object_add(d, "tool", tool);
    json_object_object_add(d, "cluster", json_object_new_string(cluster));
    json_object_object_add(d, "start_time", json_object_new_string(when));
    json_object_object_add(d, "end_time", failed ? NULL : json_object_new_string(when));
    json_object *hosts = json_object_new_array();
    json_object_array_add(hosts, json_object_new_string("local"));
    json_object_array_add(hosts, json_object_new_string("remote"));
    json_object_object_add(d, "hosts", hosts);
    json_object_object_add(d, "env", json_object_new_object());
    json_object_array_add(warnings, json_object_new_string("imported from perftest: start_time is the file's modification time; perftest names neither host (\"local\" printed this output)"));
    json_object_object_add(d, "warnings", json_object_get(warnings));
    json_object_object_add(d, "transport", json_object_new_string("rdma"));
    json_object_object_add(d, "pattern", json_object_new_string("pairs"));
    json_object_object_add(d, "mode", json_object_new_string("bandwidth"));
    json_object_object_add(d, "bidirectional", json_object_new_boolean(r->bidirectional));
    json_object_object_add(d, "config", config_json(r));
    json_object *topo = json_object_new_object();
    json_object_object_add(topo, "ranks", json_object_new_int(2));
    json_object_object_add(topo, "nodes", json_object_new_int(2));
    json_object_object_add(topo, "rounds", json_object_new_int(1));
    json_object_object_add(topo, "links", json_object_new_int(1));
    json_object_object_add(d, "topology", topo);
    json_object *versions = json_object_new_object();
    json_object_object_add(versions, "mpi", NULL);
    json_object_object_add(d, "versions", versions);
    json_object *eps = json_object_new_array();
    json_object_array_add(eps, endpoint_json(r, 0));
    json_object_array_add(eps, endpoint_json(r, 1));
    json_object_object_add(d, "endpoints", eps);
    json_object *links = json_object_new_array();
    for (size_t i = 0; i < r->nrows; i++)
        json_object_array_add(links, link_json(r, &r->rows[i]));
    json_object_object_add(d, "links", links);
    json_object_object_add(d, "flags", json_object_new_array());
    json_object_object_add(d, "suspects", json_object_new_array());
    json_object_object_add(d, "matrix", NULL);
    json_object_object_add(d, "summary", summary_json(r));
    json_object *imp = json_object_new_object();
    json_object_object_add(imp, "format", json_object_new_string(format));
    json_object_object_add(imp, "file", json_object_new_string(name));
    json_object_object_add(imp, "test", json_object_new_string(r->test[0] ? r->test : "unknown"));
    json_object_object_add(imp, "units_in_input", json_object_new_string(r->units ? r->units : "unknown"));
    json_object_object_add(imp, "importer", json_object_new_string("fabric-report " FB_VERSION));
    json_object_object_add(d, "import", imp);
    *out = d;
    return FB_OK;
}

/* An RDMA device name as the kernel gives them (mlx5_0, rxe2, rocep1s0f0,
 * bnxt_re0, efa_0); a documentation placeholder such as "<RDMA-NIC-2>" is
 * none. */
static bool device_name_ok(const char *v)
{
    size_t n = strlen(v);
    if (n == 0 || n >= PERF_DEVICE_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)v[i]) && v[i] != '_' && v[i] != '-' && v[i] != '.')
            return false;
    return true;
}

static void set_device(struct perf_run *r, const char *v, json_object *warnings)
{
    char quoted[96], msg[192];
    if (device_name_ok(v)) {
        fb_copy(r->device, sizeof r->device, v, strlen(v));
        return;
    }
    snprintf(msg, sizeof msg, "perftest's Device \"%s\" is not a device name (a placeholder?): device left unknown",
             fb_import_printable(quoted, sizeof quoted, v, 64));
    json_object_array_add(warnings, json_object_new_string(msg));
}

/* One "Key : value" of the header block. */
static void on_key(struct perf_run *r, const char *key, const char *v, json_object *warnings)
{
    if (strcmp(key, "Device") == 0)
        set_device(r, v, warnings);
    else if (strcmp(key, "Number of qps") == 0)
        r->qps = strtol(v, NULL, 10);
    else if (strcmp(key, "Connection type") == 0)
        fb_copy(r->connection, sizeof r->connection, v, strlen(v));
    else if (strcmp(key, "TX depth") == 0)
        r->tx_depth = strtol(v, NULL, 10);
    else if (strcmp(key, "CQ Moderation") == 0)
        r->cq_mod = strtol(v, NULL, 10);
    else if (strcmp(key, "Mtu") == 0)
        r->mtu = strtol(v, NULL, 10);
    else if (strcmp(key, "Link type") == 0)
        fb_copy(r->link, sizeof r->link, v, strlen(v));
    else if (strcmp(key, "GID index") == 0)
        r->gid_index = strtol(v, NULL, 10);
}

/* " Dual-port : OFF\t\tDevice : mlx5_0", and the same padded with spaces
 * ("Dual-port       : OFF          Device         : rxe2"): perftest pads
 * with either, so pairs are told apart by their colons, not by tabs. A key
 * is the words after the previous value ("PCIe relax order:" included), a
 * value one word. */
static void on_keys(struct perf_run *r, char *line, json_object *warnings)
{
    char *tok[32];
    int n = fb_tokens(line, tok, 32);
    char key[64] = "";
    size_t used = 0;
    for (int i = 0; i < n; i++) {
        size_t len = strlen(tok[i]);
        bool colon = len > 0 && tok[i][len - 1] == ':';
        if (colon)
            tok[i][len - 1] = '\0';
        if (tok[i][0] != '\0')
            fb_strbuf_append(key, sizeof key, &used, "%s%s", used ? " " : "", tok[i]);
        if (!colon)
            continue;
        if (i + 1 < n)
            on_key(r, key, tok[++i], warnings);
        key[0] = '\0';
        used = 0;
    }
}

static enum fb_status on_data(struct perf_run *r, const char *line, double to_Gbps, const char *name,
                              struct fb_err *err)
{
    char buf[512];
    fb_copy(buf, sizeof buf, line, strlen(line));
    char *tok[12];
    int n = fb_tokens(buf, tok, 12);
    struct perf_row row = {0};
    if (n < 5 || !fb_parse_u64_token(tok[0], &row.bytes))
        return FB_OK;
    if (!fb_parse_u64_token(tok[1], &row.iterations) || !fb_parse_double_token(tok[2], &row.peak_Gbps) ||
        !fb_parse_double_token(tok[3], &row.avg_Gbps) || !fb_parse_double_token(tok[4], &row.msg_rate_Mpps) ||
        row.peak_Gbps < 0 || row.avg_Gbps < 0 || row.msg_rate_Mpps < 0) {
        char quoted[256];
        return fb_fail(err, FB_ERR_INPUT, "%s: bandwidth line with a value that is not a number >= 0: \"%s\"", name,
                       fb_import_printable(quoted, sizeof quoted, line, 80));
    }
    row.peak_Gbps *= to_Gbps;
    row.avg_Gbps *= to_Gbps;
    return add_row(r, &row, to_Gbps, name, err);
}

/* perftest's own stderr lines (get_clock.c) that appear between size
 * lines, and what each tells the reader of the figures. */
#define STDERR_NOTES 2
static const struct {
    const char *prefix, *meaning;
} stderr_notes[STDERR_NOTES] = {
    {"Correlation coefficient r^2: ",
     "perftest could not calibrate its clock (\"Correlation coefficient r^2 < 0.9\", a busy CPU): with -F it printed zeros for that size"},
    {"Conflicting CPU frequency values detected: ",
     "perftest found cores at different clock rates (\"Conflicting CPU frequency values detected\": the CPU is not at its top frequency), so its figures vary with the clock; pin it with cpupower frequency-set -g performance"},
};

/* Which note starts at `at`: its index, or -1. */
static int stderr_note_at(const char *text, size_t len, size_t at)
{
    for (int k = 0; k < STDERR_NOTES; k++) {
        size_t n = strlen(stderr_notes[k].prefix);
        if (len - at >= n && memcmp(text + at, stderr_notes[k].prefix, n) == 0)
            return k;
    }
    return -1;
}

/* The text with each stderr note cut out from its start through its
 * newline: a note that split a table line leaves the line whole again.
 * found[k] counts note k. */
static void cut_stderr_notes(const char *text, size_t len, struct fb_str *out, int found[STDERR_NOTES])
{
    size_t from = 0, i = 0;
    while (i < len) {
        int k = stderr_note_at(text, len, i);
        if (k < 0) {
            i++;
            continue;
        }
        fb_str_addn(out, text + from, i - from);
        const char *nl = memchr(text + i, '\n', len - i);
        from = i = nl != NULL ? (size_t)(nl - text) + 1 : len;
        found[k]++;
    }
    fb_str_addn(out, text + from, len - from);
}

/* The GPU a CUDA run wrote from: what perftest prints between the brackets
 * of "device name = [...]", printable ASCII only. */
static void gpu_name(const char *line, char *out, size_t len)
{
    const char *from = strstr(line, "device name = [") + strlen("device name = [");
    const char *to = strchr(from, ']');
    char raw[64];
    fb_copy(raw, sizeof raw, from, to != NULL ? (size_t)(to - from) : strlen(from));
    fb_ascii_printable(raw, out, len);
}

static enum fb_status read_text(const char *name, const char *text, size_t len, const struct fb_import_opts *o,
                                json_object *warnings, struct fb_import_out *out, struct fb_err *err)
{
    struct perf_run r;
    run_init(&r);
    double to_Gbps = 0;
    size_t pos = 0;
    char buf[1024], *s = NULL;
    enum fb_status st = FB_OK;
    long lineno = 0;
    while (st == FB_OK && fb_next_line_copy(text, len, &pos, buf, sizeof buf, &s)) {
        lineno++;
        if (perftest_failure(s)) {
            note_failure(&r, s, lineno);
        } else if (r.fault[0] != '\0') {
            continue; /* what follows a failure ("scnt=128, ccnt=0") measured nothing */
        } else if (strstr(s, " BW Test") != NULL || strstr(s, "_BW_Test") != NULL) {
            test_name(s, r.test, sizeof r.test);
            r.bidirectional = strstr(s, "Bidirectional") != NULL;
        } else if (strstr(s, "device name = [") != NULL) {
            gpu_name(s, r.gpu_name, sizeof r.gpu_name);
            r.cuda = true;
        } else if (strstr(s, "CUDA") != NULL) {
            r.cuda = true;
        } else if (strstr(s, "Waiting for client") != NULL) {
            r.server_side = true;
        } else if (strstr(s, "BW peak won't be measured") != NULL) {
            r.no_peak = true;
        } else if (fb_starts_with(s, "local address: LID ") && r.lid_local < 0) {
            r.lid_local = strtol(s + strlen("local address: LID "), NULL, 16);
        } else if (fb_starts_with(s, "remote address: LID ") && r.lid_remote < 0) {
            r.lid_remote = strtol(s + strlen("remote address: LID "), NULL, 16);
        } else if (fb_starts_with(s, "#bytes")) {
            if (strstr(s, "t_min") != NULL || strstr(s, "t_avg") != NULL)
                st = fb_fail(err, FB_ERR_INPUT, "%s is a perftest latency report; only bandwidth reports (ib_*_bw) are imported", name);
            else if (strstr(s, "[Gb/sec]") != NULL)
                to_Gbps = 1, r.units = "Gb/sec";
            else if (strstr(s, "[MB/sec]") != NULL || strstr(s, "[MiB/sec]") != NULL)
                to_Gbps = MIB_PER_S_IN_GBPS, r.units = "MiB/sec";
            else
                st = fb_fail(err, FB_ERR_INPUT, "%s: bandwidth header without a known unit ([Gb/sec] or [MB/sec])", name);
        } else if (to_Gbps > 0 && isdigit((unsigned char)s[0])) {
            st = on_data(&r, s, to_Gbps, name, err);
        } else if (strchr(s, ':') != NULL && to_Gbps == 0) {
            on_keys(&r, s, warnings);
        }
    }
    json_object *doc = NULL;
    if (st == FB_OK && to_Gbps == 0 && r.fault[0] == '\0')
        st = fb_fail(err, FB_ERR_INPUT, "%s has no perftest bandwidth table (no \" #bytes ... BW average\" header)", name);
    if (st == FB_OK)
        st = build_doc(&r, name, "perftest-text", o, warnings, &doc, err);
    if (st == FB_OK)
        st = fb_import_out_add(out, doc, err);
    free(r.rows);
    return st;
}

enum fb_status fb_import_perftest_text(const char *name, const char *text, size_t len,
                                       const struct fb_import_opts *o, struct fb_import_out *out,
                                       struct fb_err *err)
{
    struct fb_str clean = {0};
    int found[STDERR_NOTES] = {0};
    cut_stderr_notes(text, len, &clean, found);
    json_object *warnings = json_object_new_array();
    for (int k = 0; k < STDERR_NOTES; k++) {
        if (found[k] == 0)
            continue;
        char msg[512];
        snprintf(msg, sizeof msg, "%s (said %d time%s on its stderr, read with its table)", stderr_notes[k].meaning,
                 found[k], found[k] == 1 ? "" : "s");
        json_object_array_add(warnings, json_object_new_string(msg));
    }
    enum fb_status st = clean.oom ? fb_fail(err, FB_ERR_INTERNAL, "%s: out of memory reading perftest's table", name)
                                  : read_text(name, fb_str_get(&clean), clean.len, o, warnings, out, err);
    json_object_put(warnings);
    fb_str_free(&clean);
    return st;
}

static bool json_num(json_object *o, const char *key, double *out)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v) || v == NULL)
        return false;
    if (json_object_is_type(v, json_type_string))
        return fb_parse_double_token(json_object_get_string(v), out);
    if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
        return false;
    *out = json_object_get_double(v);
    return isfinite(*out);
}

static long json_long(json_object *o, const char *key)
{
    double d = 0;
    return json_num(o, key, &d) && d >= 0 && d < 1e12 ? (long)d : -1;
}

/* The unit of --out_json numbers: from --units, else from their ratio. */
static enum fb_status json_units(const struct fb_import_opts *o, double bytes, double bw, double rate,
                                 const char *name, double *to_Gbps, const char **units, struct fb_err *err)
{
    if (o->units != NULL) {
        if (strcmp(o->units, "Gbps") == 0)
            return *to_Gbps = 1, *units = "Gb/sec", FB_OK;
        if (strcmp(o->units, "MBps") == 0 || strcmp(o->units, "MiBps") == 0)
            return *to_Gbps = MIB_PER_S_IN_GBPS, *units = "MiB/sec", FB_OK;
        return fb_fail(err, FB_ERR_USAGE, "--units %s: use Gbps (perftest --report_gbits) or MBps", o->units);
    }
    double bytes_per_s = bytes * rate * 1e6;
    if (bytes_per_s > 0 && bw > 0) {
        double as_gbps = bw / (bytes_per_s * 8 / 1e9), as_mib = bw / (bytes_per_s / 1048576.0);
        if (fabs(as_gbps - 1) < 0.2)
            return *to_Gbps = 1, *units = "Gb/sec", FB_OK;
        if (fabs(as_mib - 1) < 0.2)
            return *to_Gbps = MIB_PER_S_IN_GBPS, *units = "MiB/sec", FB_OK;
    }
    return fb_fail(err, FB_ERR_INPUT, "%s: cannot tell the bandwidth unit of this --out_json file; add --units Gbps or --units MBps", name);
}

enum fb_status fb_import_perftest_json(const char *name, const char *text, size_t len,
                                       const struct fb_import_opts *o, struct fb_import_out *out,
                                       struct fb_err *err)
{
    json_object *doc = NULL;
    struct fb_json_syntax why;
    enum fb_status st = fb_json_parse_text(name, text, len, &doc, &why, err);
    if (st != FB_OK && st != FB_ERR_INPUT)
        return st;
    json_object *info = NULL, *res = NULL;
    if (doc == NULL || !json_object_is_type(doc, json_type_object) ||
        !json_object_object_get_ex(doc, "test_info", &info) || !json_object_object_get_ex(doc, "results", &res) ||
        !json_object_is_type(info, json_type_object) || !json_object_is_type(res, json_type_object)) {
        if (doc != NULL)
            json_object_put(doc);
        return fb_fail(err, FB_ERR_INPUT, "%s: not perftest --out_json output (needs \"test_info\" and \"results\" objects)", name);
    }
    struct perf_run r;
    run_init(&r);
    const char *test = fb_json_get_string(info, "test");
    if (test != NULL)
        test_name(test, r.test, sizeof r.test);
    r.bidirectional = test != NULL && strstr(test, "Bidirectional") != NULL;
    json_object *warnings = json_object_new_array();
    const char *s = fb_json_get_string(info, "Device");
    if (s != NULL)
        set_device(&r, s, warnings);
    s = fb_json_get_string(info, "Connection_type");
    if (s != NULL)
        fb_copy(r.connection, sizeof r.connection, s, strlen(s));
    s = fb_json_get_string(info, "Link_type");
    if (s != NULL)
        fb_copy(r.link, sizeof r.link, s, strlen(s));
    r.qps = json_long(info, "Number_of_qps");
    r.tx_depth = json_long(info, "TX_depth");
    r.cq_mod = json_long(info, "CQ_Moderation");
    r.mtu = json_long(info, "Mtu");
    r.gid_index = json_long(info, "GID_index");
    r.cuda = json_object_object_get_ex(info, "cuda_device", NULL);
    r.cuda_device = json_long(info, "cuda_device");
    struct perf_row row = {0};
    double bytes = 0, iters = 0;
    st = FB_OK;
    if (!json_num(res, "MsgSize", &bytes) || !json_num(res, "n_iterations", &iters) ||
        !json_num(res, "BW_peak", &row.peak_Gbps) || !json_num(res, "BW_average", &row.avg_Gbps) ||
        !json_num(res, "MsgRate", &row.msg_rate_Mpps) || bytes < 0 || iters < 0 || row.avg_Gbps < 0 ||
        row.peak_Gbps < 0 || row.msg_rate_Mpps < 0 || bytes > 1e18 || iters > 1e18)
        st = fb_fail(err, FB_ERR_INPUT, "%s: \"results\" needs MsgSize, n_iterations, BW_peak, BW_average and MsgRate numbers", name);
    double to_Gbps = 1; /* a row of zeros measured nothing, in any unit */
    if (st == FB_OK && row_measured(&row))
        st = json_units(o, bytes, row.avg_Gbps, row.msg_rate_Mpps, name, &to_Gbps, &r.units, err);
    if (st == FB_OK) {
        row.bytes = (unsigned long long)bytes;
        row.iterations = (unsigned long long)iters;
        row.peak_Gbps *= to_Gbps;
        row.avg_Gbps *= to_Gbps;
        st = add_row(&r, &row, to_Gbps, name, err);
    }
    json_object *result = NULL;
    if (st == FB_OK)
        st = build_doc(&r, name, "perftest-json", o, warnings, &result, err);
    if (st == FB_OK)
        st = fb_import_out_add(out, result, err);
    json_object_put(warnings);
    json_object_put(doc);
    free(r.rows);
    return st;
}

bool fb_detect_perftest_json(const char *text, size_t len)
{
    return fb_import_looks_json(text, len) && fb_import_contains(text, len, "\"test_info\"");
}

bool fb_detect_perftest_text(const char *text, size_t len)
{
    /* A run that failed before its table has the header block only. */
    return !fb_import_looks_json(text, len) &&
           ((fb_import_contains(text, len, "#bytes") && fb_import_contains(text, len, "#iterations")) ||
            (fb_import_contains(text, len, " BW Test") && fb_import_contains(text, len, "Number of qps")));
}
