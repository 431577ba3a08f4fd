#include "report/probe_verdict.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/jsonio.h"
#include "report/probe_profile.h"
#include "report/verdict.h"

bool fb_is_probe_doc(json_object *doc)
{
    const char *schema = fb_json_get_string(doc, "schema"), *kind = fb_json_get_string(doc, "kind");
    return schema != NULL && strcmp(schema, "fabric-bench.result") == 0 && kind != NULL &&
           strcmp(kind, "probe") == 0;
}

/* "host:device[rank]", as fabric-rdma prints an endpoint. */
static void end_label(json_object *end, char *buf, size_t len)
{
    const char *host = fb_json_get_string(end, "host"), *dev = fb_json_get_string(end, "device");
    int64_t rank = -1;
    fb_json_get_int64(end, "rank", &rank);
    snprintf(buf, len, "%s:%s[%lld]", host ? host : "?", dev ? dev : "-", (long long)rank);
}

static void describe_flags(json_object *flags, struct fb_str *out)
{
    size_t n = json_object_is_type(flags, json_type_array) ? json_object_array_length(flags) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *f = json_object_array_get_idx(flags, i);
        char src[160], dst[160];
        end_label(fb_json_member(f, "src"), src, sizeof src);
        end_label(fb_json_member(f, "dst"), dst, sizeof dst);
        double avg = NAN, ref = NAN;
        fb_json_get_double(f, "avg_Gbps", &avg);
        fb_json_get_double(f, "reference_Gbps", &ref);
        const char *what = fb_json_get_string(f, "reference");
        fb_str_addf(out, " Slow: %s -> %s at %.2f Gb/s, %.0f %% of its %s (%.2f Gb/s).", src, dst, avg,
                    ref > 0 ? 100 * avg / ref : NAN, what && strcmp(what, "line-rate") == 0 ? "line rate" : "links' median",
                    ref);
    }
}

/* "send path slow (4 of 4 links from it at 0.03x the median of the links
 * not touching it)": one path of a suspect, as fabric-rdma prints it. */
static void describe_path(json_object *s, const char *dir, struct fb_str *out)
{
    json_object *p = fb_json_member(s, dir);
    int64_t slow = 0, links = 0;
    double ratio = NAN;
    bool is_slow = false;
    if (!fb_json_get_bool(p, "slow", &is_slow) || !is_slow)
        return;
    fb_json_get_int64(p, "slow_links", &slow);
    fb_json_get_int64(p, "links", &links);
    fb_json_get_double(p, "ratio", &ratio);
    const char *ref = fb_json_get_string(s, "reference");
    fb_str_addf(out, "%s path slow (%lld of %lld link%s %s it at %.2fx %s)", dir, (long long)slow, (long long)links,
                links == 1 ? "" : "s", strcmp(dir, "send") == 0 ? "from" : "into", ratio,
                ref != NULL && strcmp(ref, "line-rate") == 0 ? "the line rate" : "the median of the links not touching it");
}

static void describe_suspects(json_object *suspects, struct fb_str *out)
{
    size_t n = json_object_is_type(suspects, json_type_array) ? json_object_array_length(suspects) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *s = json_object_array_get_idx(suspects, i);
        char who[160];
        end_label(s, who, sizeof who);
        struct fb_str paths = {0};
        describe_path(s, "send", &paths);
        size_t send_len = paths.len;
        struct fb_str recv = {0};
        describe_path(s, "receive", &recv);
        if (recv.len > 0)
            fb_str_addf(&paths, "%s%s", send_len ? ", " : "", fb_str_get(&recv));
        fb_str_free(&recv);
        if (paths.len > 0) {
            fb_str_addf(out, " Suspect: %s: %s: look at its cable, port and NIC first.", who, fb_str_get(&paths));
        } else {
            int64_t slow = 0, links = 0;
            fb_json_get_int64(s, "slow_links", &slow);
            fb_json_get_int64(s, "links", &links);
            fb_str_addf(out, " Suspect: %s, slow in %lld of its %lld links: look at its cable, port and NIC first.",
                        who, (long long)slow, (long long)links);
        }
        fb_str_free(&paths);
    }
}

/* perftest's own output names no threshold, so an imported run is held to
 * the atlas's figure for its line rate and memory, when one is known.
 * fabric-rdma's own results carry their flags (a share of the line rate
 * the run was given) and are judged by those. Returns true when it falls
 * short. */
static bool short_of_atlas(json_object *doc, const struct fb_profiles *ps, double median, struct fb_str *out)
{
    if (ps == NULL || fb_json_member(doc, "import") == NULL || isnan(median))
        return false;
    struct fb_probe_expectation x;
    fb_probe_expectation_read(doc, ps, &x);
    if (x.profile == NULL)
        return false;
    bool shortfall = median < x.expect->floor;
    fb_str_addf(out, " Against profile %s r%ld (%s): a %.0f Gb/s link from %s memory passes at %.0f Gb/s; this one carries %.2f Gb/s, %.0f %% of its line rate (the line rate from %s)%s",
                x.profile->name, x.profile->revision, x.profile->source, x.line_rate, x.gpu_memory ? "GPU" : "host",
                x.expect->floor, median, 100 * median / x.line_rate, x.line_from, shortfall ? ": " : ".");
    if (shortfall)
        fb_str_addf(out, "%s.", x.gpu_memory ? "GPU memory crosses the PCIe path to the NIC slowly (a GPU not PCIe-local to the NIC, ACS or IOMMU redirecting peer traffic, DMA-BUF or peermem limits); compare with the same NIC from host memory"
                                             : "the NIC carries less than its line rate (link width or speed negotiated down, MTU, too few QPs, a congested or faulty port)");
    return shortfall;
}

enum fb_status fb_probe_judge(json_object *doc, const char *path, const struct fb_profiles *ps, struct fb_str *text,
                              enum fb_status *verdict, struct fb_err *err)
{
    json_object *summary = fb_json_member(doc, "summary");
    int64_t flagged = 0, done = 0, planned = 0;
    bool complete = false;
    if (!fb_json_get_int64(summary, "flagged", &flagged) || !fb_json_get_int64(summary, "measurements_done", &done) ||
        !fb_json_get_int64(summary, "measurements_planned", &planned) || !fb_json_get_bool(doc, "complete", &complete))
        return fb_fail(err, FB_ERR_INPUT, "%s: a probe result needs \"complete\" and summary.flagged, measurements_done and measurements_planned", path);
    const char *transport = fb_json_get_string(doc, "transport"), *pattern = fb_json_get_string(doc, "pattern");
    const char *cluster = fb_json_get_string(doc, "cluster");
    double min = NAN, median = NAN;
    fb_json_get_double(summary, "min_avg_Gbps", &min);
    fb_json_get_double(summary, "median_avg_Gbps", &median);
    /* A runtime fault (a work completion with an error, a verbs or socket
     * call that failed) is a failure of the link, whatever the sizes
     * before it measured; other faults (a timeout, a signal) cut it short. */
    const char *fault_status = fb_json_get_string(fb_json_member(doc, "fault"), "status");
    bool failed = fault_status != NULL && strcmp(fault_status, fb_status_name(FB_ERR_RUNTIME)) == 0;
    struct fb_str atlas = {0};
    bool shortfall = !failed && short_of_atlas(doc, ps, median, &atlas);
    *verdict = failed ? FB_VERDICT_FAIL
               : !complete || done < planned ? FB_VERDICT_INCOMPLETE
               : flagged > 0 || shortfall ? FB_VERDICT_DEGRADED : FB_OK;
    fb_str_addf(text, "%s: %s probe (%s) on %s, %lld of %lld measurements\n", fb_verdict_name(*verdict),
                transport ? transport : "?",
                pattern ? pattern : "?", cluster ? cluster : "?", (long long)done, (long long)planned);
    struct fb_str reasons = {0};
    if (failed)
        fb_str_addf(&reasons, " The probe failed: %s%s.", fb_json_get_string(fb_json_member(doc, "fault"), "message"),
                    done > 0 ? "; what it measured before is not a verdict on the link" : "");
    else if (*verdict == FB_VERDICT_INCOMPLETE) {
        const char *why = fb_json_get_string(fb_json_member(doc, "fault"), "message");
        fb_str_addf(&reasons, " The probe did not finish%s%s; what it measured is judged below.", why ? ": " : "",
                    why ? why : "");
    }
    if (flagged > 0)
        fb_str_addf(&reasons, " %lld link%s below the threshold.", (long long)flagged, flagged == 1 ? "" : "s");
    describe_flags(fb_json_member(doc, "flags"), &reasons);
    describe_suspects(fb_json_member(doc, "suspects"), &reasons);
    if (!isnan(min))
        fb_str_addf(&reasons, " Slowest link %.2f Gb/s, median %.2f Gb/s at the reference size.", min, median);
    fb_str_addf(&reasons, "%s", fb_str_get(&atlas));
    fb_str_free(&atlas);
    fb_str_addf(text, "%s\n", fb_str_get(&reasons) + (reasons.len > 0 ? 1 : 0));
    fb_str_free(&reasons);
    return FB_OK;
}
