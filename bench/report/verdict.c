#include "report/verdict.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonio.h"
#include "core/units.h"

/* What to look at when a run meant for a fabric fell back to sockets
 * (the failure modes field engineers meet most, per fabric). */
static const struct {
    const char *fabric;
    const char *causes;
} fallback_causes[] = {
    {"FasTrak", "the tcpxo-daemon sidecar running and Ready (2/2), RxDM seeing 8 of 8 GPUs "
                "(7/8: a gVNIC network took a GPU NIC slot; 0/8: /sys not mounted at /hostsysfs), "
                "the plugin and daemon images being a released pair, nccl-env-profile.sh sourced, "
                "and the eight gpu-nic networks in networking.gke.io/interfaces"},
    {"IB", "nvidia_peermem in /proc/modules, NCCL_IB_HCA naming devices that ibv_devices lists, "
           "the RDMA interface attached to the pod, RLIMIT_MEMLOCK and IPC_LOCK, NCCL_IB_GID_INDEX "
           "on RoCE (usually 3), one MTU end to end, and GPU and NIC on the same NUMA node"},
    {"OFI", "vpc.amazonaws.com/efa devices requested, FI_PROVIDER=efa and FI_EFA_USE_DEVICE_RDMA=1, "
            "the aws-ofi-nccl plugin on LD_LIBRARY_PATH, and hugepages with enough pod memory"},
    {NULL, "the fabric's NCCL net plugin loading (NET/Plugin lines of the log), RDMA devices or GPU "
           "NICs visible in the container, NCCL_IB_HCA and NCCL_SOCKET_IFNAME, nvidia_peermem, and "
           "RLIMIT_MEMLOCK (fabric-doctor node checks these)"},
};

static const char *causes_for(const char *fabric)
{
    size_t n = sizeof fallback_causes / sizeof *fallback_causes;
    for (size_t i = 0; i + 1 < n; i++)
        if (fabric != NULL && strcmp(fabric, fallback_causes[i].fabric) == 0)
            return fallback_causes[i].causes;
    return fallback_causes[n - 1].causes;
}

static const char *str_member(json_object *obj, const char *key)
{
    json_object *v = fb_json_member(obj, key);
    return v != NULL && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

/* Nodes from the topology, else from the hosts of the NCCL log: several
 * hosts prove several nodes, but one host proves one node only when the log
 * shows every rank (an excerpt of a 16-rank log may quote one host). 0: the
 * output does not show the nodes. */
static long run_nodes(const struct fb_result *r)
{
    if (r->nodes > 0)
        return r->nodes;
    json_object *pr = fb_json_member(r->transport, "per_rank");
    size_t logged = pr != NULL && json_object_is_type(pr, json_type_array) ? json_object_array_length(pr) : 0;
    long n = 0;
    for (size_t i = 0; i < logged; i++) {
        const char *h = str_member(json_object_array_get_idx(pr, i), "host");
        bool seen = h == NULL;
        for (size_t k = 0; !seen && k < i; k++) {
            const char *o = str_member(json_object_array_get_idx(pr, k), "host");
            seen = o != NULL && strcmp(o, h) == 0;
        }
        n += !seen;
    }
    bool every_rank_logged = r->ranks > 0 && logged >= (size_t)r->ranks;
    return n >= 2 || (n == 1 && every_rank_logged) ? n : 0;
}

/* The first few distinct names of a list, and whether there were more:
 * enough to point at the culprit without printing 1000 hosts. */
#define NAMES_SHOWN 4

struct names {
    const char *shown[NAMES_SHOWN];
    int n;
    bool more;
};

static void names_add(struct names *l, const char *item)
{
    if (item == NULL || item[0] == '\0')
        return;
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->shown[i], item) == 0)
            return;
    if (l->n < NAMES_SHOWN)
        l->shown[l->n++] = item;
    else
        l->more = true;
}

static void names_print(const struct names *l, struct fb_str *out)
{
    for (int i = 0; i < l->n; i++)
        fb_str_addf(out, "%s%s", i ? ", " : "", l->shown[i]);
    if (l->more)
        fb_str_addf(out, ", ...");
}

/* "on 4 of 4 ranks (hosts gpu-a, gpu-b; interfaces eth0)" */
static void describe_socket_ranks(const struct fb_result *r, struct fb_verdict *v, struct fb_str *out)
{
    json_object *pr = fb_json_member(r->transport, "per_rank");
    struct names hosts = {0}, ifaces = {0};
    size_t total = pr ? json_object_array_length(pr) : 0;
    v->socket_ranks = 0;
    for (size_t i = 0; i < total; i++) {
        json_object *e = json_object_array_get_idx(pr, i);
        const char *net = str_member(e, "net");
        if (net == NULL || strcmp(net, "Socket") != 0)
            continue;
        v->socket_ranks++;
        names_add(&hosts, str_member(e, "host"));
        json_object *arr = fb_json_member(e, "interfaces");
        for (size_t k = 0; arr != NULL && json_object_is_type(arr, json_type_array) &&
                           k < json_object_array_length(arr); k++) {
            json_object *s = json_object_array_get_idx(arr, k);
            if (json_object_is_type(s, json_type_string))
                names_add(&ifaces, json_object_get_string(s));
        }
    }
    if (v->socket_ranks == 0)
        return;
    fb_str_addf(out, " on %ld of %zu logged ranks", v->socket_ranks, total);
    if (hosts.n == 0 && ifaces.n == 0)
        return;
    fb_str_addf(out, " (");
    if (hosts.n > 0) {
        fb_str_addf(out, "hosts ");
        names_print(&hosts, out);
    }
    if (ifaces.n > 0) {
        fb_str_addf(out, "%sinterfaces ", hosts.n ? "; " : "");
        names_print(&ifaces, out);
    }
    fb_str_addf(out, ")");
}

static void describe_transport(const struct fb_result *r, long nodes, struct fb_str *out)
{
    if (r->transport == NULL) {
        if (r->backend != NULL && strcmp(r->backend, "mpi") == 0)
            fb_str_addf(out, " Transport: MPI (host memory); NCCL not involved.");
        else if (nodes > 1)
            fb_str_addf(out, " Transport unknown: NCCL's log was not captured (rerun with --nccl-log).");
        return;
    }
    if (r->net == NULL) {
        fb_str_addf(out, " Transport: no inter-node channel%s.", nodes == 1 ? " (one node)" : " in the log");
        return;
    }
    if (strcmp(r->net, "Socket") == 0)
        fb_str_addf(out, " Transport: NET/Socket (TCP).");
    else
        fb_str_addf(out, " Transport: NET/%s%s.", r->net,
                    r->gdr == 1 ? " with GPUDirect RDMA" : r->gdr == 0 ? " without GPUDirect RDMA" : "");
}

static void size_label(unsigned long long bytes, char *buf, size_t len)
{
    fb_format_size(bytes, buf, len);
}

/* The size the profile quotes, else the largest measured size below it,
 * else the largest size: never extrapolate a figure upward. */
static const struct fb_point *compared_point(const struct fb_point *pts, size_t n, unsigned long long at)
{
    const struct fb_point *below = NULL;
    for (size_t i = 0; i < n; i++) {
        if (pts[i].bytes == at)
            return &pts[i];
        if (pts[i].bytes < at)
            below = &pts[i];
    }
    return below ? below : (n ? &pts[n - 1] : NULL);
}

const char *fb_verdict_name(enum fb_status code)
{
    switch (code) {
    case FB_OK: return "PASS";
    case FB_VERDICT_DEGRADED: return "DEGRADED";
    case FB_VERDICT_TCP_FALLBACK: return "TCP-FALLBACK";
    case FB_VERDICT_FAIL: return "FAIL";
    default: return "INCOMPLETE";
    }
}

static void set_verdict(struct fb_verdict *v, enum fb_status code)
{
    bool verdict = code == FB_OK || code == FB_VERDICT_DEGRADED || code == FB_VERDICT_TCP_FALLBACK ||
                   code == FB_VERDICT_FAIL;
    v->code = verdict ? code : FB_VERDICT_INCOMPLETE;
    v->name = fb_verdict_name(v->code);
}

/* The limit the result was judged against when it was measured, kept
 * beside it: it wins over any profile picked from its criteria. */
static enum fb_status own_profile(const struct fb_result *r, struct fb_verdict *v, struct fb_err *err)
{
    enum fb_status st = fb_profile_beside(r->path, &v->own, err);
    if (st != FB_OK || v->own == NULL)
        return st;
    const char *base = strrchr(v->own->path, '/');
    v->profile = v->own;
    snprintf(v->profile_how, sizeof v->profile_how, "its own, kept beside it as %.200s", base ? base + 1 : v->own->path);
    return FB_OK;
}

static enum fb_status choose_profile(const struct fb_result *r, const struct fb_profiles *ps,
                                     const char *name, struct fb_verdict *v, struct fb_err *err)
{
    char known[1024];
    fb_profiles_names(ps, known, sizeof known);
    if (name == NULL) {
        enum fb_status st = own_profile(r, v, err);
        if (st != FB_OK)
            return st;
        if (v->profile == NULL)
            v->profile = fb_profile_pick(ps, r, v->profile_how, sizeof v->profile_how);
        v->auto_picked = v->profile != NULL;
    } else {
        v->profile = fb_profile_find(ps, name);
        if (v->profile == NULL)
            return fb_fail(err, FB_ERR_USAGE, "unknown profile '%s'; known: %s (or save one: fabric-report baseline RESULT.json --name NAME)", name, known);
        if (!v->profile->target)
            return fb_fail(err, FB_ERR_USAGE, "profile '%s' describes a failure, not a target; name a target profile (known: %s)", name, known);
        snprintf(v->profile_how, sizeof v->profile_how, "named");
    }
    if (v->profile == NULL && name == NULL) {
        v->profile = fb_profile_family(ps, r, v->profile_how, sizeof v->profile_how);
        v->family = v->profile != NULL;
    }
    if (v->profile == NULL)
        return FB_OK;
    v->expect = fb_profile_expect(v->profile, r->collective);
    if (v->expect == NULL) {
        struct fb_str has = {0};
        for (int i = 0; i < v->profile->nexpect; i++)
            fb_str_addf(&has, "%s%s", i ? ", " : "", v->profile->expect[i].collective);
        fb_fail(err, FB_ERR_USAGE, "profile '%s' has no figures for %s (it has %s); name another with --profile", v->profile->name, r->collective, fb_str_get(&has));
        fb_str_free(&has);
        return FB_ERR_USAGE;
    }
    return FB_OK;
}

static void note_incomplete(const struct fb_result *r, bool fault_told, struct fb_str *out)
{
    fb_str_addf(out, " The run did not finish: %zu row%s", r->nrows, r->nrows == 1 ? "" : "s");
    if (r->sizes_planned >= 0)
        fb_str_addf(out, " of %ld planned", r->sizes_planned);
    fb_str_addf(out, " measured");
    if (r->fault != NULL && !fault_told) {
        const char *status = str_member(r->fault, "status"), *msg = str_member(r->fault, "message");
        const char *host = str_member(r->fault, "host");
        fb_str_addf(out, "; it stopped with %s%s%s%s%s", status ? status : "a fault", host ? " on " : "",
                    host ? host : "", msg ? ": " : "", msg ? msg : "");
    }
    fb_str_addf(out, ".");
}

static void note_early_stop(const struct fb_result *r, struct fb_str *out)
{
    const char *reason = str_member(r->early_stop, "reason");
    int64_t at = 0, skipped = 0;
    fb_json_get_int64(r->early_stop, "at_bytes", &at);
    fb_json_get_int64(r->early_stop, "sizes_skipped", &skipped);
    char size[32];
    size_label(at > 0 ? (unsigned long long)at : 0, size, sizeof size);
    fb_str_addf(out, " fabric-coll stopped the sweep after %s (%s); %lld larger size%s not measured (--full measures them).",
                size, reason ? reason : "no reason recorded", (long long)skipped, skipped == 1 ? "" : "s");
}

/* Numbers near the TCP-fallback figure on a multi-node run whose log was not
 * captured: say what they look like, without calling it proven. */
static void note_fallback_lookalike(const struct fb_result *r, const struct fb_profiles *ps,
                                    const struct fb_verdict *v, struct fb_str *out)
{
    if (r->transport != NULL || v->nodes < 2 || isnan(v->measured) ||
        (r->backend != NULL && strcmp(r->backend, "mpi") == 0))
        return;
    for (size_t i = 0; i < ps->n; i++) {
        const struct fb_profile *p = &ps->p[i];
        const struct fb_expect *e = p->target ? NULL : fb_profile_expect(p, r->collective);
        if (e != NULL && !isnan(e->busbw) && strcmp(p->fabric, "Socket") == 0 && v->measured <= 3 * e->busbw) {
            fb_str_addf(out, " %.1f GB/s is in the range of profile %s (~%.0f GB/s): likely the TCP fallback; capture NCCL's log (--nccl-log) to confirm.",
                        v->measured, p->name, e->busbw);
            return;
        }
    }
}

/* Compares busBW with the profile; returns the rule-4 verdict. */
#define NOT_COMPARABLE_FACTOR 16ULL

static enum fb_status judge_bandwidth(const struct fb_point *pts, size_t npts, bool stopped_on_purpose,
                                      struct fb_verdict *v, struct fb_str *out)
{
    const struct fb_expect *e = v->expect;
    const struct fb_point *pt = compared_point(pts, npts, e->at_bytes);
    if (pt == NULL) {
        fb_str_addf(out, " No size has a busBW figure to compare.");
        return FB_VERDICT_FAIL;
    }
    char at[32], measured_at[32];
    size_label(e->at_bytes, at, sizeof at);
    size_label(pt->bytes, measured_at, sizeof measured_at);
    double typical = isnan(e->busbw) ? e->floor : e->busbw;
    v->measured_bytes = pt->bytes;
    v->measured = pt->best;
    v->ratio = typical > 0 ? pt->best / typical : NAN;
    enum fb_status band = pt->best >= e->floor        ? FB_OK
                          : pt->best >= e->fail_below ? FB_VERDICT_DEGRADED
                                                      : FB_VERDICT_FAIL;
    fb_str_addf(out, " busBW %.2f GB/s at %s vs ", pt->best, measured_at);
    if (!isnan(e->busbw))
        fb_str_addf(out, "%.1f expected (floor %.1f, ", e->busbw, e->floor);
    else
        fb_str_addf(out, "floor %.1f (", e->floor);
    fb_str_addf(out, "FAIL under %.1f): ratio %.2f%s.", e->fail_below, v->ratio,
                band == FB_VERDICT_DEGRADED ? ", below the floor"
                : band == FB_VERDICT_FAIL   ? ", far below the profile"
                                            : "");
    if (pt->bytes != e->at_bytes)
        fb_str_addf(out, " The profile's figure is for %s; this run's closest size is %s, so a lower number is expected (rerun with -e %s).",
                    at, measured_at, at);
    /* Sixteen times smaller and more, busBW is still climbing: neither a
     * pass nor a failure can be read off it. A sweep fabric-coll stopped on
     * the fallback band was already judged by that band. */
    if (!stopped_on_purpose && pt->bytes * NOT_COMPARABLE_FACTOR < e->at_bytes) {
        fb_str_addf(out, " Not comparable: the sweep stops %.0fx short of the profile's size.",
                    (double)e->at_bytes / (double)pt->bytes);
        return FB_VERDICT_INCOMPLETE;
    }
    return band;
}

/* Whether profile p describes r, with the nodes the run shows (its
 * topology, else its NCCL log's hosts). A run that shows none is neither
 * on too few nodes nor too many: when its node count is the only misfit,
 * `why` says that it is not shown, not a count it does not have. */
static bool profile_fits(const struct fb_profile *p, const struct fb_result *r, long nodes, char *why, size_t len)
{
    struct fb_result shown = *r;
    shown.nodes = nodes;
    if (fb_profile_applies(p, &shown, why, len))
        return true;
    if (nodes > 0)
        return false;
    shown.nodes = p->match.nodes_min > 0 ? p->match.nodes_min : p->match.nodes_max;
    if (shown.ranks_per_node == 0)
        shown.ranks_per_node = p->match.ranks_per_node;
    if (fb_profile_applies(p, &shown, why, len))
        snprintf(why, len, "its node count is not shown");
    return false;
}

static void note_profile_fit(const struct fb_result *r, struct fb_verdict *v, struct fb_str *out)
{
    char why[128];
    /* Named, or kept with the result. A profile picked by its criteria
     * fits them, and one picked from the GPU family already says in the
     * headline what it assumed (the network the output does not show). */
    bool given = (!v->auto_picked && !v->family) || v->profile == v->own;
    if (given && !profile_fits(v->profile, r, v->nodes, why, sizeof why))
        fb_str_addf(out, " Note: profile %s may not describe this run (%s).", v->profile->name, why);
    bool want_gdr = strcmp(v->profile->fabric, "OFI") == 0; /* IB: judge_gdr */
    if (want_gdr && r->net != NULL && strcmp(r->net, "OFI") == 0 && r->gdr == 0)
        fb_str_addf(out, " NET/%s ran without GPUDirect RDMA (no GDRDMA on its channels): check nvidia_peermem in /proc/modules or dma-buf support.",
                    r->net);
}

static void summary_sentence(const struct fb_summary *s, struct fb_str *out)
{
    if (isnan(s->peak_busbw))
        return;
    char peak_at[32];
    size_label(s->peak_bytes, peak_at, sizeof peak_at);
    fb_str_addf(out, " Peak %.2f GB/s at %s; average over sizes >= 1 MiB ", s->peak_busbw, peak_at);
    if (isnan(s->avg_busbw_ge_1MiB))
        fb_str_addf(out, "n/a");
    else
        fb_str_addf(out, "%.2f GB/s", s->avg_busbw_ge_1MiB);
    fb_str_addf(out, " (nccl-tests average over all sizes %.2f).", s->avg_busbw);
}

static bool on_gpus(const struct fb_result *r)
{
    return (r->device_kind != NULL && strcmp(r->device_kind, "gpu") == 0) ||
           (r->backend != NULL && strcmp(r->backend, "nccl") == 0);
}

/* More than one node, as the run shows it; a run that does not show its
 * nodes spans them when it has more ranks than a node holds GPUs. */
#define GPUS_PER_NODE_MAX 8

static bool spans_nodes(const struct fb_result *r, const struct fb_verdict *v, bool *assumed)
{
    *assumed = v->nodes == 0 && r->ranks > GPUS_PER_NODE_MAX;
    return v->nodes > 1 || *assumed;
}

/* One rank: every busBW formula gives 0 (nothing crosses a link), so
 * there is nothing to compare with any fabric. */
static bool judge_one_rank(const struct fb_result *r, struct fb_verdict *v, struct fb_str *out)
{
    if (r->ranks != 1 || r->nrows == 0 || !(v->summary.peak_busbw == 0))
        return false;
    set_verdict(v, FB_VERDICT_INCOMPLETE);
    fb_str_addf(out, " Not comparable: one rank moves nothing between GPUs, so busBW is 0 by definition; run on 2 or more GPUs to judge a link.");
    return true;
}

/* nccl-tests' own count of wrong values ("# Out of bounds values : N
 * FAILED"), which import keeps: the only count the older layouts give,
 * whose per-row column is a deviation, not a count. 0 when not recorded. */
static int64_t imported_out_of_bounds(const struct fb_result *r)
{
    int64_t n = 0;
    return fb_json_get_int64(fb_json_member(r->doc, "import"), "out_of_bounds", &n) && n > 0 ? n : 0;
}

/* nccl-tests' printed "# Avg bus bandwidth", which import keeps; NAN when
 * the output had none. */
static double printed_average(const struct fb_result *r)
{
    double avg = NAN;
    if (!fb_json_get_double(fb_json_member(r->doc, "import"), "avg_bus_bandwidth_GBps", &avg) || !(avg >= 0))
        return NAN;
    return avg;
}

/* A block whose table was elided: the footer's average is all that is
 * left of a run that finished. */
static bool summary_only(const struct fb_result *r)
{
    return r->nrows == 0 && r->fault == NULL && !isnan(printed_average(r));
}

/* Rules 1 to 3, which need no profile. Returns true when one of them
 * decided the verdict; each that holds adds its sentence. */
static bool judge_without_profile(const struct fb_result *r, struct fb_verdict *v, struct fb_str *out)
{
    bool decided = judge_one_rank(r, v, out);
    int64_t oob = imported_out_of_bounds(r);
    if (v->summary.wrong_total > 0) {
        set_verdict(v, FB_VERDICT_FAIL);
        fb_str_addf(out, " %lld wrong element%s: the data path corrupts results, whatever the bandwidth.",
                    v->summary.wrong_total, v->summary.wrong_total == 1 ? "" : "s");
        decided = true;
    } else if (oob > 0) {
        set_verdict(v, FB_VERDICT_FAIL);
        fb_str_addf(out, " nccl-tests counted %lld out-of-bounds value%s: the collective returned wrong data, so its bandwidth is not a valid measurement; the data path corrupts results.",
                    (long long)oob, oob == 1 ? "" : "s");
        decided = true;
    }
    if (r->net != NULL && strcmp(r->net, "Socket") == 0 && v->nodes > 1) {
        if (!decided)
            set_verdict(v, FB_VERDICT_TCP_FALLBACK);
        v->fallback = true;
        fb_str_addf(out, " NCCL moved inter-node traffic over TCP sockets (NET/Socket)");
        describe_socket_ranks(r, v, out);
        fb_str_addf(out, ": a multi-node run on sockets is the TCP fallback, whatever its numbers say.");
        decided = true;
    }
    /* NCCL or CUDA failing before the first row measured: the fabric (or the
     * GPU path) did not carry one message. After some rows, the run is only
     * cut short (a peer killed, a node lost) and what it measured stands. */
    const char *msg = r->fault ? str_member(r->fault, "message") : NULL;
    bool failed = r->nrows == 0 && msg != NULL &&
                  (strstr(msg, "NCCL failure") != NULL || strstr(msg, "CUDA failure") != NULL);
    if (failed) {
        set_verdict(v, FB_VERDICT_FAIL);
        fb_str_addf(out, " The run failed: %s.", msg);
        decided = true;
    }
    /* A sweep fabric-coll ended on purpose (TCP fallback plain at 64M)
     * skipped sizes by decision: it is not an unfinished run. */
    bool short_sweep = r->sizes_planned >= 0 && r->sizes_done >= 0 && r->sizes_done < r->sizes_planned;
    bool incomplete = !r->complete || (r->nrows == 0 && !summary_only(r)) || (short_sweep && r->early_stop == NULL);
    if (r->early_stop != NULL)
        note_early_stop(r, out);
    if (incomplete) {
        if (!decided)
            set_verdict(v, FB_VERDICT_INCOMPLETE);
        note_incomplete(r, failed, out);
        decided = true;
    }
    return decided;
}

/* On GPUs busBW grows with the message size until the links are full and
 * then holds: large messages far slower than the run's own best mean the
 * path broke down mid-sweep (a link flapping, retransmits, a congested
 * switch), whatever a profile says. Host memory is exempt: caches make its
 * curve fall by nature. */
#define COLLAPSE_SHARE 0.5
#define COLLAPSE_MIN_PEAK_BYTES (1ULL << 20)

static bool collapsed(const struct fb_result *r, const struct fb_point *pts, size_t npts, struct fb_str *out)
{
    if (!on_gpus(r) || npts < 2)
        return false;
    const struct fb_point *peak = &pts[0], *last = &pts[npts - 1];
    for (size_t i = 1; i < npts; i++)
        if (pts[i].best > peak->best)
            peak = &pts[i];
    if (peak == last || peak->bytes < COLLAPSE_MIN_PEAK_BYTES || !(last->best < COLLAPSE_SHARE * peak->best))
        return false;
    char at[32], end[32];
    size_label(peak->bytes, at, sizeof at);
    size_label(last->bytes, end, sizeof end);
    fb_str_addf(out, " busBW collapses from %.2f GB/s at %s to %.2f GB/s at %s (%.0f %%): the path broke down at large messages.",
                peak->best, at, last->best, end, 100 * last->best / peak->best);
    return true;
}

/* The TCP-fallback band: busBW up to TCP_BAND_FACTOR x the figure of the
 * symptom profile of NET/Socket (about 4 GB/s on a GKE a3-mega pair; 9.5 on
 * a Slingshot pair): what sockets carry, whatever the NICs. Judged at sizes
 * where bandwidth, not latency, sets the figure. */
#define TCP_BAND_FACTOR 3.0
#define BAND_MIN_BYTES (64ULL << 20)

static double tcp_band_top(const struct fb_profiles *ps, const char *collective, const char **from)
{
    for (size_t i = 0; i < ps->n; i++) {
        const struct fb_profile *p = &ps->p[i];
        if (p->target || strcmp(p->fabric, "Socket") != 0 || p->nexpect == 0)
            continue;
        const struct fb_expect *e = fb_profile_expect(p, collective);
        if (e == NULL)
            e = &p->expect[0]; /* busBW is comparable across collectives */
        if (isnan(e->busbw))
            continue;
        *from = p->name;
        return TCP_BAND_FACTOR * e->busbw;
    }
    return NAN;
}

/* The best busBW at sizes >= BAND_MIN_BYTES; NULL when the sweep stops
 * below them. */
static const struct fb_point *large_peak(const struct fb_point *pts, size_t npts)
{
    const struct fb_point *best = NULL;
    for (size_t i = 0; i < npts; i++)
        if (pts[i].bytes >= BAND_MIN_BYTES && (best == NULL || pts[i].best > best->best))
            best = &pts[i];
    return best;
}

/* Where a run stands against the TCP-fallback band: its best busBW at
 * large sizes, the band's top and where it comes from. `pk` is NULL when
 * the band says nothing about the run (not GPUs, no large size, no band
 * profile, or one node). Read once for every rule that uses it. */
struct band_reading {
    const struct fb_point *pk;
    double top;
    const char *from;
    bool spans;         /* across nodes, as the run shows it or assumed */
    bool assumed;       /* multi-node only because of the rank count */
    bool nodes_unknown; /* no node count, but NCCL named the network it chose */
    char at[32];
};

static void read_band(const struct fb_result *r, const struct fb_profiles *ps, const struct fb_point *pts,
                      size_t npts, const struct fb_verdict *v, struct band_reading *b)
{
    memset(b, 0, sizeof *b);
    b->top = tcp_band_top(ps, r->collective, &b->from);
    b->pk = large_peak(pts, npts);
    b->spans = spans_nodes(r, v, &b->assumed);
    /* An excerpt without device lines: its node count is unknown, but the
     * network line shows what NCCL set up; both readings of a band figure
     * are judged (judge_band_nodes_unknown). */
    b->nodes_unknown = !b->spans && v->nodes == 0 && r->net != NULL;
    if (!on_gpus(r) || !(b->spans || b->nodes_unknown) || isnan(b->top))
        b->pk = NULL;
    if (b->pk != NULL)
        size_label(b->pk->bytes, b->at, sizeof b->at);
}

static void band_measured(const struct band_reading *b, struct fb_verdict *v)
{
    v->measured_bytes = b->pk->bytes;
    v->measured = b->pk->best;
}

static bool rdma_net(const struct fb_result *r)
{
    return r->net != NULL && strcmp(r->net, "Socket") != 0;
}

/* The band figure of a run whose nodes the output does not show: across
 * nodes it is the TCP fallback (or, on an RDMA network, a fabric carrying
 * no more than TCP); on one node GPUs that move no more than TCP sockets
 * have lost their own links. Either reading is an unhealthy run, so the
 * verdict is the band's, and the paragraph gives both. */
static void judge_band_nodes_unknown(const struct fb_result *r, const struct band_reading *b, struct fb_verdict *v,
                                     struct fb_str *out)
{
    bool rdma = rdma_net(r);
    set_verdict(v, rdma ? FB_VERDICT_DEGRADED : FB_VERDICT_TCP_FALLBACK);
    v->fallback = !rdma;
    fb_str_addf(out, " busBW peaks at %.2f GB/s (at %s), inside the TCP-fallback band (<= %.0f GB/s, %.0fx profile %s), with NCCL on NET/%s.",
                b->pk->best, b->at, b->top, TCP_BAND_FACTOR, b->from, r->net);
    fb_str_addf(out, " The output does not show the nodes (no '#  Rank ... on HOST' device lines), and either reading is an unhealthy run: across nodes %s; on one node, GPUs that move no more than TCP sockets have lost their own links (NVLink or PCIe peer-to-peer unused: NCCL_P2P_DISABLE, NCCL_SHM_DISABLE, or a container or VM hiding the GPUs' topology).",
                rdma ? "the fabric is in use but carries no more than TCP would (one NIC of several, no GPUDirect RDMA, a slow or congested link)"
                     : "it is the TCP fallback (NCCL moved the data over sockets)");
    fb_str_addf(out, " Keep the device lines in the output, or rerun with them, to tell which.");
}

/* Physics, before any profile: a multi-node GPU run whose large messages
 * stay in the TCP band fell back to TCP, whatever it was meant to use; when
 * NCCL's own channels went over an RDMA network the fabric is there but
 * delivers TCP-band bandwidth (DEGRADED). */
static bool judge_tcp_band(const struct fb_result *r, const struct band_reading *b, struct fb_verdict *v,
                           struct fb_str *out)
{
    if (b->pk == NULL || b->pk->best > b->top)
        return false;
    band_measured(b, v);
    if (b->nodes_unknown) {
        judge_band_nodes_unknown(r, b, v, out);
        return true;
    }
    if (rdma_net(r)) {
        set_verdict(v, FB_VERDICT_DEGRADED);
        fb_str_addf(out, " NCCL's channels went over NET/%s, yet busBW peaks at %.2f GB/s (at %s), inside the TCP-fallback band (<= %.0f GB/s): the fabric is in use but carries no more than TCP would (one NIC of several, no GPUDirect RDMA, a slow or congested link).",
                    r->net, b->pk->best, b->at, b->top);
        return true;
    }
    set_verdict(v, FB_VERDICT_TCP_FALLBACK);
    v->fallback = true;
    fb_str_addf(out, " busBW peaks at %.2f GB/s (at %s) across nodes%s, inside the TCP-fallback band (<= %.0f GB/s, %.0fx profile %s): NCCL moved the data over TCP sockets, whatever the run was meant to use.",
                b->pk->best, b->at, b->assumed ? " (assumed: more than 8 ranks)" : "", b->top, TCP_BAND_FACTOR, b->from);
    return true;
}

/* Physics when no profile describes the cluster: busBW far above the TCP
 * band across nodes proves the fabric carried the run. That is all it
 * proves; a figure check needs a profile. A run that does not show its
 * nodes proves nothing by being fast: one node's links are fast too. */
static bool judge_fabric_in_use(const struct band_reading *b, struct fb_verdict *v, struct fb_str *out)
{
    if (b->pk == NULL || !b->spans || !(b->pk->best > b->top))
        return false;
    band_measured(b, v);
    set_verdict(v, FB_OK);
    fb_str_addf(out, " Fabric in use: busBW peaks at %.2f GB/s (at %s) across nodes%s, %.1fx the top of the TCP-fallback band (%.0f GB/s). No reference profile describes this cluster, so no figure was checked; save one from a known-good run (fabric-report baseline) to judge the next.",
                b->pk->best, b->at, b->assumed ? " (assumed: more than 8 ranks)" : "", b->pk->best / b->top, b->top);
    return true;
}

/* The sweep the run's printed average covers (its -b and -e); false when
 * the header was not kept. */
static bool run_range(const struct fb_result *r, uint64_t *lo, uint64_t *hi)
{
    json_object *c = fb_json_member(r->doc, "config");
    int64_t a = 0, b = 0;
    if (!fb_json_get_int64(c, "minbytes", &a) || !fb_json_get_int64(c, "maxbytes", &b) || a < 0 || b < a)
        return false;
    *lo = (uint64_t)a;
    *hi = (uint64_t)b;
    return true;
}

/* A summary-only block (rule 11): nccl-tests' average, all sizes and both
 * placements, is comparable with a profile's average over the same sweep
 * only, as it is dominated by the small sizes. PASS at the profile's pass
 * line on that average (else 90 % of its typical average), FAIL under half
 * of it (DEGRADED when the profile is the family's); INCOMPLETE, saying
 * what is missing, when no profile has such an average. */
static void judge_summary_only(const struct fb_result *r, const struct fb_profiles *ps, struct fb_verdict *v,
                               struct fb_str *out)
{
    double avg = printed_average(r);
    uint64_t lo = 0, hi = 0;
    char range[48] = "a sweep whose sizes the output does not show";
    bool shown = run_range(r, &lo, &hi);
    if (shown) {
        char a[16], b[16];
        size_label(lo, a, sizeof a);
        size_label(hi, b, sizeof b);
        snprintf(range, sizeof range, "%s-%s", a, b);
    }
    v->measured = avg;
    fb_str_addf(out, " Only nccl-tests' average was kept (%.2f GB/s over %s); the table's rows were not.", avg, range);
    /* A profile named (or kept beside the run) is the one; else the one of
     * the run or its family whose average covers this sweep. */
    const struct fb_profile *p = v->profile;
    if (shown && (v->auto_picked || v->family || p == NULL) && v->profile != v->own) {
        char how[sizeof v->profile_how];
        const struct fb_profile *with = fb_profile_with_average(ps, r, lo, hi, how, sizeof how);
        if (with != NULL) {
            p = v->profile = with;
            v->expect = fb_profile_expect(with, r->collective);
            v->family = strncmp(how, "family", 6) == 0;
            v->auto_picked = true;
            snprintf(v->profile_how, sizeof v->profile_how, "%s", how);
        }
    }
    const struct fb_expect *e = p != NULL ? fb_profile_expect(p, r->collective) : NULL;
    bool comparable = shown && fb_expect_covers_sweep(e, lo, hi);
    if (!comparable) {
        set_verdict(v, FB_VERDICT_INCOMPLETE);
        if (e == NULL || isnan(fb_expect_avg_floor(e)))
            fb_str_addf(out, " No profile that applies gives an average for %s, so it cannot be judged: keep the table (its rows at large sizes) to judge the run.", r->collective);
        else
            fb_str_addf(out, " Profile %s's average is over %s, not over this run's %s, and averages of different sweeps differ: keep the table, or rerun with -b and -e of %s.",
                        p->name, e->avg_range, range, e->avg_range);
        return;
    }
    double floor = fb_expect_avg_floor(e);
    v->ratio = avg / floor;
    enum fb_status band = avg >= floor ? FB_OK : avg >= floor / 2 ? FB_VERDICT_DEGRADED : FB_VERDICT_FAIL;
    if (band == FB_VERDICT_FAIL && v->family)
        band = FB_VERDICT_DEGRADED;
    set_verdict(v, band);
    fb_str_addf(out, " Against profile %s's average over the same sweep: ", p->name);
    if (!isnan(e->avg_busbw))
        fb_str_addf(out, "typical %.1f GB/s, ", e->avg_busbw);
    fb_str_addf(out, "PASS at %.1f GB/s (%s), FAIL under %.1f: ratio %.2f%s.", floor,
                isnan(e->avg_floor) ? "90 % of the typical" : "its source's pass line", floor / 2, v->ratio,
                band == FB_OK ? "" : band == FB_VERDICT_DEGRADED ? ", below the floor" : ", far below the profile");
}


/* busBW above what the nodes' NICs carry by a ring, on 2 or more nodes: a
 * Tree or NVLS-Tree all_reduce moves each byte across the fabric once, not
 * twice, so its busBW can reach nearly twice the NICs' figure. It is not a
 * figure of the fabric; a Ring run is. */
#define INFLATION_MARGIN 1.05

static bool above_nic_bound(const struct fb_verdict *v, double busbw)
{
    const struct fb_physics *ph = &v->physics;
    return ph->across && !isnan(ph->bound_most) && busbw > INFLATION_MARGIN * ph->bound_most;
}

static void note_inflation(const struct fb_result *r, const struct fb_verdict *v, double busbw, struct fb_str *out)
{
    const struct fb_physics *ph = &v->physics;
    fb_str_addf(out, " busBW %.2f GB/s is above what the NICs of %ld such GPU%s carry by a ring (%.1f GB/s at most): not a figure of the fabric",
                busbw, ph->gpus_per_node, ph->gpus_per_node == 1 ? "" : "s", ph->bound_most);
    if (strcmp(r->collective, "all_reduce") == 0)
        fb_str_addf(out, " but of NCCL's Tree or NVLS-Tree, which cross the fabric once per byte on 2 or more nodes");
    fb_str_addf(out, "; rerun with NCCL_ALGO=Ring to judge the fabric.");
}

/* Physics when no profile describes the run: the bound a ring can reach
 * from the hardware the run shows (physics.h). PASS at FB_PHYSICS_*_SHARE
 * of it and above, DEGRADED below; never FAIL, since the bound is an
 * upper limit, not a measured figure. Returns true when it decided. */
static bool judge_physics(const struct fb_result *r, const struct fb_point *pts, size_t npts, struct fb_verdict *v,
                          struct fb_str *out)
{
    const struct fb_physics *ph = &v->physics;
    /* The best busBW at 64 MiB and above, where bandwidth, not latency,
     * sets the figure; none when the sweep stops below. */
    const struct fb_point *pt = large_peak(pts, npts);
    if (isnan(ph->bound) || pt == NULL)
        return false;
    char at[32];
    size_label(pt->bytes, at, sizeof at);
    v->measured_bytes = pt->bytes;
    v->measured = pt->best;
    v->ratio = pt->best / ph->bound;
    v->by_physics = true;
    if (above_nic_bound(v, pt->best)) {
        set_verdict(v, FB_OK);
        fb_str_addf(out, " Physics: %s.", ph->inputs);
        note_inflation(r, v, pt->best, out);
        return true;
    }
    bool ok = pt->best >= ph->floor;
    set_verdict(v, ok ? FB_OK : FB_VERDICT_DEGRADED);
    fb_str_addf(out, " No profile describes this run; physics judges it: %s. busBW %.2f GB/s at %s is %.0f %% of that bound; PASS at %.1f GB/s and above (%s)%s",
                ph->inputs, pt->best, at, 100 * v->ratio, ph->floor, ph->floor_rule, ok ? "." : ": ");
    if (!ok && ph->across && ph->logged_nics > 0 && ph->logged_nics < ph->nics)
        fb_str_addf(out, "NCCL's log lists %ld NIC%s per node where these GPUs have %ld: the others are not attached or not visible to NCCL (NCCL_IB_HCA, the pod's RDMA devices).",
                    ph->logged_nics, ph->logged_nics == 1 ? "" : "s", ph->nics);
    else if (!ok && ph->across)
        fb_str_addf(out, "the fabric carries less than its NICs allow (a GPU not PCIe-local to its NIC, no GPUDirect RDMA, a slow or misnegotiated link, fewer NICs in use than GPUs).");
    else if (!ok)
        fb_str_addf(out, "the GPUs' own links carry less than they allow (NVLink or xGMI degraded, P2P disabled, a container or VM hiding the topology).");
    return true;
}

/* busBW of `pts` at `bytes`, else at the largest size below it; NAN when
 * there is none. */
static double busbw_at(const struct fb_point *pts, size_t n, unsigned long long bytes, unsigned long long *used)
{
    const struct fb_point *pt = compared_point(pts, n, bytes);
    if (pt == NULL || pt->bytes > bytes)
        return NAN;
    *used = pt->bytes;
    return pt->best;
}

/* The loop every engineer runs by hand: two nodes against one, per GPU.
 * The single-node figure comes from a given run of the same GPUs, else from
 * the single-node profile of the GPU family with as many GPUs per node. */
#define INTER_INTRA_SHARE 0.5

static const struct fb_expect *single_node_profile(const struct fb_result *r, const struct fb_profiles *ps,
                                                   const struct fb_profile **from)
{
    for (size_t i = 0; on_gpus(r) && r->device_name != NULL && r->ranks_per_node > 0 && i < ps->n; i++) {
        const struct fb_profile *p = &ps->p[i];
        const struct fb_match *m = &p->match;
        const struct fb_expect *e = fb_profile_expect(p, r->collective);
        if (p->target && e != NULL && !isnan(e->busbw) && m->nodes_max == 1 && m->intra[0] == '\0' &&
            m->gpu[0] != '\0' && fb_gpu_token(r->device_name, m->gpu) != NULL && m->ranks_per_node == r->ranks_per_node) {
            *from = p;
            return e;
        }
    }
    return NULL;
}

static void compare_single_node(const struct fb_result *r, const struct fb_profiles *ps, const struct fb_result *one,
                                const struct fb_point *pts, size_t npts, struct fb_verdict *v, struct fb_str *out)
{
    bool assumed = false;
    if (!spans_nodes(r, v, &assumed) || npts == 0 || v->code != FB_OK)
        return;
    double intra = NAN, inter = NAN;
    unsigned long long at = 0, used = 0;
    char source[PATH_MAX + 64];
    if (one != NULL) {
        struct fb_point *opts = NULL;
        size_t on = 0;
        struct fb_err ignored = {0};
        if (fb_result_points(one, &opts, &on, &ignored) != FB_OK || on == 0) {
            free(opts);
            return;
        }
        at = pts[npts - 1].bytes < opts[on - 1].bytes ? pts[npts - 1].bytes : opts[on - 1].bytes;
        intra = busbw_at(opts, on, at, &used);
        at = used;
        free(opts);
        snprintf(source, sizeof source, "%s", one->path);
    } else {
        const struct fb_profile *p = NULL;
        const struct fb_expect *e = single_node_profile(r, ps, &p);
        if (e == NULL)
            return;
        intra = e->busbw;
        at = e->at_bytes;
        snprintf(source, sizeof source, "profile %s", p->name);
    }
    inter = busbw_at(pts, npts, at, &used);
    if (isnan(intra) || isnan(inter) || !(intra > 0))
        return;
    char label[32];
    size_label(used, label, sizeof label);
    double share = inter / intra;
    fb_str_addf(out, " Across nodes each GPU gets %.0f %% of its single-node figure (%.2f vs %.2f GB/s at %s, %s)", 100 * share,
                inter, intra, label, source);
    if (share < INTER_INTRA_SHARE) {
        set_verdict(v, FB_VERDICT_DEGRADED);
        fb_str_addf(out, ": the fabric between nodes is far slower than the links inside one.");
    } else {
        fb_str_addf(out, ".");
    }
}

/* IB or RoCE without GPUDirect RDMA stages every message through host
 * memory: a cluster built for it is misconfigured (peer memory module,
 * dma-buf, ACS), whatever the figure. */
static void judge_gdr(const struct fb_result *r, struct fb_verdict *v, struct fb_str *out)
{
    bool assumed = false;
    if (r->net == NULL || r->gdr != 0 || !spans_nodes(r, v, &assumed) ||
        (strcmp(r->net, "IB") != 0 && strcmp(r->net, "IBext") != 0))
        return;
    json_object *q = fb_json_member(r->transport, "no_gdr_channel");
    const char *text = str_member(q, "text"), *where = str_member(q, "where");
    if (v->code == FB_OK)
        set_verdict(v, FB_VERDICT_DEGRADED);
    fb_str_addf(out, " NET/%s carried inter-node traffic without GPUDirect RDMA", r->net);
    if (text != NULL)
        fb_str_addf(out, " (%s: \"%s\")", where ? where : "log", text);
    fb_str_addf(out, ": every message is staged through host memory; check nvidia_peermem in /proc/modules (or dma-buf support) and NCCL_NET_GDR_LEVEL.");
}

static enum fb_status no_profile(const struct fb_result *r, const struct fb_profiles *ps,
                                 const struct fb_verdict *v, struct fb_err *err)
{
    char known[1024];
    fb_profiles_names(ps, known, sizeof known);
    const char *net = r->net ? r->net : fb_intended_net(r);
    char nodes[32] = "nodes not shown";
    if (v->nodes > 0)
        snprintf(nodes, sizeof nodes, "%ld node%s", v->nodes, v->nodes == 1 ? "" : "s");
    return fb_fail(err, FB_ERR_USAGE,
                   "no reference profile matches %s (%s %s, %s, %ld ranks, net %s, %s); name one with --profile (known: %s) or save one from a known-good run: fabric-report baseline RESULT.json --name NAME",
                   r->path, r->device_kind ? r->device_kind : "device", r->device_name ? r->device_name : "unknown",
                   nodes, r->ranks, net ? net : "none", r->collective, known);
}

enum fb_status fb_verdict_judge_with(const struct fb_result *r, const struct fb_profiles *ps,
                                     const struct fb_verdict_ask *ask, struct fb_verdict *v,
                                     struct fb_err *err)
{
    memset(v, 0, sizeof *v);
    v->measured = v->ratio = NAN;
    fb_summary_compute(r->rows, r->nrows, &v->summary);
    v->nodes = run_nodes(r);
    enum fb_status st = choose_profile(r, ps, ask->profile_name, v, err);
    if (st != FB_OK) {
        fb_verdict_free(v);
        return st;
    }
    set_verdict(v, FB_OK);
    struct fb_str *out = &v->reasons;
    struct fb_point *pts = NULL;
    size_t npts = 0;
    st = fb_result_points(r, &pts, &npts, err);
    if (st != FB_OK) {
        fb_verdict_free(v);
        return st;
    }
    fb_physics_read(r, ps, v->nodes, &v->physics);
    bool decided = judge_without_profile(r, v, out);
    if (!decided && summary_only(r)) {
        judge_summary_only(r, ps, v, out);
        free(pts);
        describe_transport(r, v->nodes, out);
        return FB_OK;
    }
    /* A collapse makes a run that would pass (or has no profile) DEGRADED;
     * a profile's FAIL stays FAIL. A collapsed curve is judged as such, not
     * by its band. */
    bool collapse = !decided && collapsed(r, pts, npts, out);
    if (collapse && v->expect == NULL) {
        set_verdict(v, FB_VERDICT_DEGRADED);
        decided = true;
    }
    struct band_reading reading;
    read_band(r, ps, pts, npts, v, &reading);
    bool band = !decided && !collapse && !v->fallback && judge_tcp_band(r, &reading, v, out);
    decided = decided || band;
    if (!decided && v->expect == NULL && judge_physics(r, pts, npts, v, out))
        decided = true;
    if (!decided && v->expect == NULL && judge_fabric_in_use(&reading, v, out))
        decided = true;
    if (!decided && v->expect == NULL) {
        free(pts);
        fb_verdict_free(v);
        return no_profile(r, ps, v, err);
    }
    if (v->expect != NULL && !band) {
        enum fb_status fig = judge_bandwidth(pts, npts, r->early_stop != NULL, v, out);
        /* A profile assumed from the family may not be this cluster's:
         * it can say the run falls short, not that it failed. */
        if (v->family && fig == FB_VERDICT_FAIL && !decided) {
            fig = FB_VERDICT_DEGRADED;
            fb_str_addf(out, " (DEGRADED, not FAIL: the profile was assumed; name the cluster's own with --profile.)");
        }
        if (!decided)
            set_verdict(v, collapse && fig == FB_OK ? FB_VERDICT_DEGRADED : fig);
        note_profile_fit(r, v, out);
        if (!isnan(v->measured) && above_nic_bound(v, v->measured) && v->profile->match.nodes_max != 1)
            note_inflation(r, v, v->measured, out);
    } else if (npts > 0 && isnan(v->measured)) {
        v->measured_bytes = pts[npts - 1].bytes;
        v->measured = pts[npts - 1].best;
    }
    compare_single_node(r, ps, ask->single_node, pts, npts, v, out);
    judge_gdr(r, v, out);
    free(pts);
    if (!band)
        note_fallback_lookalike(r, ps, v, out);
    describe_transport(r, v->nodes, out);
    summary_sentence(&v->summary, out);
    if (v->fallback) {
        const char *fabric = v->profile && v->profile->fabric[0] ? v->profile->fabric : fb_intended_net(r);
        fb_str_addf(out, " Look at: %s.", causes_for(fabric));
    }
    return FB_OK;
}

enum fb_status fb_verdict_judge(const struct fb_result *r, const struct fb_profiles *ps,
                                const char *profile_name, struct fb_verdict *v, struct fb_err *err)
{
    const struct fb_verdict_ask ask = {.profile_name = profile_name};
    return fb_verdict_judge_with(r, ps, &ask, v, err);
}

void fb_verdict_free(struct fb_verdict *v)
{
    fb_str_free(&v->reasons);
    fb_str_free(&v->chain);
    if (v->profile == v->own)
        v->profile = NULL;
    free(v->own);
    v->own = NULL;
}

/* "wiring: delivered ClusterTrainingRuntime/NAME (generation 3)" or
 * "wiring: fabric-bench overlay gke-tcpxo", when the result says. */
static void wiring_line(const struct fb_result *r, struct fb_str *out)
{
    if (r->runtime_source == NULL)
        return;
    const char *origin = fb_json_get_string(r->runtime_source, "origin");
    const char *kind = fb_json_get_string(r->runtime_source, "kind");
    const char *name = fb_json_get_string(r->runtime_source, "name");
    int64_t gen = 0;
    if (origin == NULL || name == NULL)
        return;
    if (strcmp(origin, "delivered") == 0)
        fb_str_addf(out, "\nwiring: delivered %s/%s", kind ? kind : "?", name);
    else
        fb_str_addf(out, "\nwiring: %s %s %s", origin, kind ? kind : "", name);
    if (fb_json_get_int64(r->runtime_source, "generation", &gen))
        fb_str_addf(out, " (generation %lld)", (long long)gen);
}

void fb_verdict_text(const struct fb_verdict *v, const struct fb_result *r, struct fb_str *out)
{
    fb_str_addf(out, "%s: %s on %s, %ld rank%s", v->name,
                strcmp(r->collective, FB_COLLECTIVE_UNKNOWN) == 0 ? "a collective it never named" : r->collective,
                r->cluster, r->ranks, r->ranks == 1 ? "" : "s");
    if (v->nodes > 0)
        fb_str_addf(out, " on %ld node%s", v->nodes, v->nodes == 1 ? "" : "s");
    else
        fb_str_addf(out, ", nodes not shown");
    if (r->device_name != NULL)
        fb_str_addf(out, " (%s)", r->device_name);
    if (v->profile != NULL)
        fb_str_addf(out, "; profile %s r%ld (%s)", v->profile->name, v->profile->revision, v->profile_how);
    else
        fb_str_addf(out, "; no profile applies");
    wiring_line(r, out);
    fb_str_addf(out, "\n%s\n", fb_str_get(&v->reasons) + (v->reasons.len > 0 ? 1 : 0));
}

static json_object *num_or_null(double d)
{
    return fb_json_number(d);
}

json_object *fb_verdict_json(const struct fb_verdict *v, const struct fb_result *r)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "schema", json_object_new_string("fabric-bench.report-check"));
    json_object_object_add(o, "schema_version", json_object_new_int(1));
    json_object_object_add(o, "verdict", json_object_new_string(v->name));
    json_object_object_add(o, "exit_code", json_object_new_int(v->code));
    json_object_object_add(o, "file", json_object_new_string(r->path));
    json_object_object_add(o, "cluster", json_object_new_string(r->cluster));
    json_object_object_add(o, "collective", json_object_new_string(r->collective));
    json_object_object_add(o, "ranks", json_object_new_int64(r->ranks));
    json_object_object_add(o, "nodes", json_object_new_int64(v->nodes));
    json_object_object_add(o, "complete", json_object_new_boolean(r->complete));
    json_object_object_add(o, "wrong_total", json_object_new_int64(v->summary.wrong_total));
    json_object *prof = NULL;
    if (v->profile != NULL) {
        prof = json_object_new_object();
        json_object_object_add(prof, "name", json_object_new_string(v->profile->name));
        json_object_object_add(prof, "revision", json_object_new_int64(v->profile->revision));
        json_object_object_add(prof, "picked", json_object_new_string(v->family ? "family" : v->auto_picked ? "auto" : "named"));
        json_object_object_add(prof, "why", json_object_new_string(v->profile_how));
        json_object_object_add(prof, "source", json_object_new_string(v->profile->source));
    }
    json_object_object_add(o, "profile", prof);
    json_object *measured = NULL;
    if (!isnan(v->measured)) {
        measured = json_object_new_object();
        json_object_object_add(measured, "bytes", json_object_new_int64((int64_t)v->measured_bytes));
        json_object_object_add(measured, "busbw_GBps", num_or_null(v->measured));
    }
    json_object_object_add(o, "measured", measured);
    json_object *expected = NULL;
    if (v->expect != NULL) {
        expected = json_object_new_object();
        json_object_object_add(expected, "bytes", json_object_new_int64((int64_t)v->expect->at_bytes));
        json_object_object_add(expected, "busbw_GBps", num_or_null(v->expect->busbw));
        json_object_object_add(expected, "floor_GBps", num_or_null(v->expect->floor));
        json_object_object_add(expected, "fail_below_GBps", num_or_null(v->expect->fail_below));
    }
    json_object_object_add(o, "expected", expected);
    json_object_object_add(o, "ratio", v->expect ? num_or_null(v->ratio) : NULL);
    json_object *t = json_object_new_object();
    json_object_object_add(t, "net", r->net ? json_object_new_string(r->net) : NULL);
    json_object_object_add(t, "gdr", r->gdr < 0 ? NULL : json_object_new_boolean(r->gdr));
    json_object_object_add(t, "captured", json_object_new_boolean(r->transport != NULL));
    json_object_object_add(t, "socket_ranks", json_object_new_int64(v->socket_ranks));
    json_object_object_add(o, "transport", t);
    json_object_object_add(o, "summary", fb_summary_json(&v->summary, r->sizes_planned, r->sizes_done));
    const char *reasons = fb_str_get(&v->reasons);
    json_object_object_add(o, "reasons", json_object_new_string(reasons[0] == ' ' ? reasons + 1 : reasons));
    return o;
}

/* Why each profile of the run's GPU (every profile, when the GPU is not
 * named) did not apply, a few at most: what --explain shows of the search. */
#define EXPLAIN_REJECTED_MAX 8

static void explain_rejected(const struct fb_result *r, const struct fb_profiles *ps, struct fb_str *out)
{
    int shown = 0, more = 0;
    for (size_t i = 0; i < ps->n; i++) {
        const struct fb_profile *p = &ps->p[i];
        char why[128];
        bool gpu_named = r->device_name != NULL && p->match.gpu[0] != '\0' && fb_gpu_token(r->device_name, p->match.gpu) != NULL;
        if (!p->target || p->nexpect == 0 || (r->device_name != NULL && !gpu_named) || fb_profile_applies(p, r, why, sizeof why))
            continue;
        if (shown == EXPLAIN_REJECTED_MAX) {
            more++;
            continue;
        }
        fb_str_addf(out, "%s%s (%s)", shown ? "; " : "", p->name, why);
        shown++;
    }
    if (shown == 0)
        fb_str_addf(out, "no profile names %s", r->device_name ? r->device_name : "this run's GPU");
    if (more > 0)
        fb_str_addf(out, "; and %d more", more);
}

void fb_verdict_explain(const struct fb_verdict *v, const struct fb_result *r, const struct fb_profiles *ps,
                        struct fb_str *out)
{
    const char *vendor = fb_gpu_vendor(r->device_name);
    fb_str_addf(out, "how this verdict was reached:\n");
    fb_str_addf(out, "  run: %s, %ld rank%s, ", r->collective, r->ranks, r->ranks == 1 ? "" : "s");
    if (v->nodes > 0)
        fb_str_addf(out, "%ld node%s", v->nodes, v->nodes == 1 ? "" : "s");
    else
        fb_str_addf(out, "nodes not shown");
    if (r->ranks_per_node > 0)
        fb_str_addf(out, " (%ld per node)", r->ranks_per_node);
    fb_str_addf(out, ", GPU %s%s%s%s, network %s%s\n", r->device_name ? r->device_name : "not named", vendor ? " (" : "",
                vendor ? vendor : "", vendor ? ")" : "", r->net ? r->net : "not logged",
                r->net && r->gdr == 1 ? " with GPUDirect RDMA" : r->net && r->gdr == 0 ? " without GPUDirect RDMA" : "");
    if (v->profile != NULL) {
        fb_str_addf(out, "  profile: %s r%ld, %s\n", v->profile->name, v->profile->revision, v->profile_how);
    } else {
        fb_str_addf(out, "  profile: none applies: ");
        explain_rejected(r, ps, out);
        fb_str_addf(out, "\n");
    }
    const struct fb_physics *ph = &v->physics;
    if (!isnan(ph->bound))
        fb_str_addf(out, "  physics: %s; bound %.1f GB/s, floor %.1f GB/s (%s)%s\n", ph->inputs, ph->bound, ph->floor,
                    ph->floor_rule, v->by_physics ? (ph->across ? "; it decided: PASS at the floor, DEGRADED below, above the bound not a fabric figure"
                                                                : "; it decided: PASS at the floor, DEGRADED below")
                                                  : "; a note beside the profile's figures");
    else if (ph->inputs[0] != '\0')
        fb_str_addf(out, "  physics: %s\n", ph->inputs);
    else
        fb_str_addf(out, "  physics: no bound (%s)\n", r->device_name == NULL ? "the GPU is not named" : "no family in the atlas gives this GPU's NICs or links for this collective");
    if (!isnan(v->measured))
        fb_str_addf(out, "  measured: %.2f GB/s at %llu bytes\n", v->measured, v->measured_bytes);
    fb_str_addf(out, "  verdict: %s (exit %d)\n", v->name, (int)v->code);
    if (v->profile != NULL)
        fb_str_addf(out, "  source: %s\n", v->profile->source);
    if (!isnan(ph->bound) && ph->source[0] != '\0')
        fb_str_addf(out, "  physics source: %s\n", ph->source);
}
