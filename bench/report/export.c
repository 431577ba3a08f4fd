/* The export model and its readers: each document kind is one row of
 * `kinds`, a test that recognises it and a reader that adds its samples
 * and test cases. A new kind is a new row. */
#include "report/export.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/array.h"
#include "core/files.h"
#include "core/jsonio.h"
#include "report/probe_verdict.h"
#include "report/result.h"
#include "report/verdict.h"

static const struct fb_export_family_desc families[FB_FAM_COUNT] = {
    [FB_FAM_BUSBW] = {"fabric_bench_busbw_bytes_per_second", "bytes_per_second",
                      "Bus bandwidth of a collective at one message size (best repetition), as nccl-tests reports it."},
    [FB_FAM_ALGBW] = {"fabric_bench_algbw_bytes_per_second", "bytes_per_second",
                      "Algorithm bandwidth (size / time) of the repetition with the best bus bandwidth."},
    [FB_FAM_TIME] = {"fabric_bench_time_seconds", "seconds",
                     "Time of one collective operation of the repetition with the best bus bandwidth."},
    [FB_FAM_VERDICT] = {"fabric_bench_verdict", NULL,
                        "fabric-report verdict as its exit code: 0 PASS, 20 DEGRADED, 21 TCP-FALLBACK, 22 FAIL, 23 INCOMPLETE; fabric-scan: 0 PASS, 24 SUSPECTS."},
    [FB_FAM_DOCTOR_CHECK] = {"fabric_bench_doctor_check", NULL,
                             "fabric-doctor check outcome: 0 ok, 1 warn, 2 fail, 3 skip."},
    [FB_FAM_PROBE_BW] = {"fabric_bench_probe_bandwidth_bytes_per_second", "bytes_per_second",
                         "Average bandwidth fabric-rdma measured on one link (source to destination) at one size."},
    [FB_FAM_SCAN_NODE] = {"fabric_bench_scan_node_verdict", NULL,
                          "fabric-scan verdict of one node: 0 pass, 1 slow, 2 failed, 3 untested."},
    [FB_FAM_SCAN_NODE_BW] = {"fabric_bench_scan_node_busbw_bytes_per_second", "bytes_per_second",
                             "Bus bandwidth of a node in a fabric-scan: alone (intra-node) or its best pair test."},
    [FB_FAM_SCAN_SUSPECTS] = {"fabric_bench_scan_suspects", NULL,
                              "Nodes and links a fabric-scan named slow or failed."},
};

const struct fb_export_family_desc *fb_export_family(enum fb_export_family f)
{
    return &families[f];
}

void fb_export_label_escape(struct fb_str *out, const char *value)
{
    for (const char *p = value; *p != '\0'; p++) {
        if (*p == '\\')
            fb_str_addn(out, "\\\\", 2);
        else if (*p == '"')
            fb_str_addn(out, "\\\"", 2);
        else if (*p == '\n')
            fb_str_addn(out, "\\n", 2);
        else
            fb_str_addn(out, p, 1);
    }
}

void fb_export_xml_escape(struct fb_str *out, const char *text)
{
    for (const unsigned char *p = (const unsigned char *)text; *p != '\0'; p++) {
        switch (*p) {
        case '&': fb_str_addn(out, "&amp;", 5); break;
        case '<': fb_str_addn(out, "&lt;", 4); break;
        case '>': fb_str_addn(out, "&gt;", 4); break;
        case '"': fb_str_addn(out, "&quot;", 6); break;
        case '\'': fb_str_addn(out, "&apos;", 6); break;
        case '\t': case '\n': case '\r': fb_str_addf(out, "&#%d;", *p); break;
        default:
            /* XML 1.0 has no way to write other control characters at all. */
            if (*p < 0x20)
                fb_str_addn(out, "?", 1);
            else
                fb_str_addn(out, (const char *)p, 1);
        }
    }
}

void fb_export_number(struct fb_str *out, double v)
{
    if (isnan(v))
        fb_str_addf(out, "NaN");
    else if (isinf(v))
        fb_str_addf(out, "%sInf", v > 0 ? "+" : "-");
    else if (v == floor(v) && fabs(v) < 1e15)
        fb_str_addf(out, "%.0f", v);
    else
        fb_str_addf(out, "%.17g", v);
}

/* The index of the series' sample when it was given before, else -1 (and
 * it is remembered as index `next`). The set is a hash (a JSON object keyed
 * by family and labels): a results tree holds hundreds of thousands of
 * samples. */
static long sample_known(struct fb_export *x, enum fb_export_family f, const char *labels,
                         size_t next)
{
    if (x->seen == NULL)
        x->seen = json_object_new_object();
    struct fb_str key = {0};
    fb_str_addf(&key, "%d %s", (int)f, labels);
    json_object *at = NULL;
    long known = json_object_object_get_ex(x->seen, fb_str_get(&key), &at)
                     ? (long)json_object_get_int64(at) : -1;
    if (known < 0)
        json_object_object_add(x->seen, fb_str_get(&key), json_object_new_int64((int64_t)next));
    fb_str_free(&key);
    return known;
}

enum fb_status fb_export_add_sample(struct fb_export *x, enum fb_export_family f, double value,
                                    struct fb_err *err, ...)
{
    struct fb_str labels = {0};
    va_list ap;
    va_start(ap, err);
    for (const char *name; (name = va_arg(ap, const char *)) != NULL;) {
        const char *v = va_arg(ap, const char *);
        if (v == NULL)
            continue;
        fb_str_addf(&labels, "%s%s=\"", labels.len > 0 ? "," : "", name);
        fb_export_label_escape(&labels, v);
        fb_str_addn(&labels, "\"", 1);
    }
    va_end(ap);
    if (labels.oom) {
        fb_str_free(&labels);
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    }
    /* Files come in name order, and results are named by their start time:
     * the later document is the newer run, and a gauge shows the newest. */
    long known = sample_known(x, f, fb_str_get(&labels), x->nsamples);
    if (known >= 0) {
        x->samples[known].value = value;
        x->duplicates++;
        fb_str_free(&labels);
        return FB_OK;
    }
    struct fb_export_sample s = {f, strdup(fb_str_get(&labels)), value};
    fb_str_free(&labels);
    if (s.labels == NULL || fb_array_append(&x->samples, &x->nsamples, sizeof s, &s, "exporting", err) != FB_OK) {
        free(s.labels);
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    }
    return FB_OK;
}

static char *dup_or_null(const char *s)
{
    return s != NULL ? strdup(s) : NULL;
}

static void case_free(struct fb_export_case *c)
{
    free(c->suite);
    free(c->name);
    free(c->kind);
    free(c->message);
    free(c->text);
}

enum fb_status fb_export_add_case(struct fb_export *x, const struct fb_export_case *c, struct fb_err *err)
{
    struct fb_export_case k = {dup_or_null(c->suite), dup_or_null(c->name), c->outcome, dup_or_null(c->kind),
                               c->seconds, dup_or_null(c->message), dup_or_null(c->text)};
    if (k.suite == NULL || k.name == NULL || k.kind == NULL ||
        fb_array_append(&x->cases, &x->ncases, sizeof k, &k, "exporting", err) != FB_OK) {
        case_free(&k);
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    }
    return FB_OK;
}

void fb_export_free(struct fb_export *x)
{
    for (size_t i = 0; i < x->nsamples; i++)
        free(x->samples[i].labels);
    for (size_t i = 0; i < x->ncases; i++)
        case_free(&x->cases[i]);
    free(x->samples);
    free(x->cases);
    json_object_put(x->seen);
    *x = (struct fb_export){0};
}

/* ---- the document kinds ---- */

static bool is_result_kind(json_object *doc, const char *kind)
{
    const char *schema = fb_json_get_string(doc, "schema"), *k = fb_json_get_string(doc, "kind");
    return schema != NULL && strcmp(schema, "fabric-bench.result") == 0 && k != NULL && strcmp(k, kind) == 0;
}

static bool is_collective(json_object *doc) { return is_result_kind(doc, "collective"); }
static bool is_doctor(json_object *doc) { return is_result_kind(doc, "doctor"); }
static bool is_probe(json_object *doc) { return fb_is_probe_doc(doc); }
static bool is_scan(json_object *doc) { return is_result_kind(doc, "scan"); }

static bool is_check(json_object *doc)
{
    const char *schema = fb_json_get_string(doc, "schema");
    return schema != NULL && strcmp(schema, "fabric-bench.report-check") == 0;
}

static enum fb_export_outcome verdict_outcome(const char *verdict)
{
    return strcmp(verdict, "PASS") == 0 ? FB_CASE_PASSED : FB_CASE_FAILED;
}

/* What a reader needs besides the document. */
struct export_in {
    const char *path;
    const struct fb_profiles *ps;
    struct fb_export *x;
};

static void number_text(char *buf, size_t len, long long v)
{
    if (v > 0)
        snprintf(buf, len, "%lld", v);
    else
        buf[0] = '\0';
}

/* True when no other row at the same size has a better figure in the same
 * placement: one series per size, from the best repetition. */
static bool best_at_size(const struct fb_result *r, size_t i, bool in_place)
{
    const struct fb_place *me = in_place ? &r->rows[i].ip : &r->rows[i].oop;
    for (size_t j = 0; j < r->nrows; j++) {
        const struct fb_place *o = in_place ? &r->rows[j].ip : &r->rows[j].oop;
        if (j == i || r->rows[j].bytes != r->rows[i].bytes || !o->present || isnan(o->busbw_GBps))
            continue;
        if (o->busbw_GBps > me->busbw_GBps || (o->busbw_GBps == me->busbw_GBps && j < i))
            return false;
    }
    return true;
}

static enum fb_status add_row_samples(const struct fb_result *r, size_t i, bool in_place, struct fb_export *x,
                                      struct fb_err *err)
{
    const struct fb_place *p = in_place ? &r->rows[i].ip : &r->rows[i].oop;
    if (!p->present || isnan(p->busbw_GBps) || !best_at_size(r, i, in_place))
        return FB_OK;
    char nodes[24], ranks[24], size[24];
    number_text(nodes, sizeof nodes, r->nodes);
    number_text(ranks, sizeof ranks, r->ranks);
    snprintf(size, sizeof size, "%llu", r->rows[i].bytes);
    const char *place = in_place ? "in_place" : "out_of_place";
#define ROW_LABELS "cluster", r->cluster, "collective", r->collective, "backend", r->backend, "nodes", nodes, \
                   "ranks", ranks, "size", size, "placement", place, (const char *)NULL
    enum fb_status st = fb_export_add_sample(x, FB_FAM_BUSBW, p->busbw_GBps * 1e9, err, ROW_LABELS);
    if (st == FB_OK && !isnan(p->algbw_GBps))
        st = fb_export_add_sample(x, FB_FAM_ALGBW, p->algbw_GBps * 1e9, err, ROW_LABELS);
    if (st == FB_OK && !isnan(p->time_us))
        st = fb_export_add_sample(x, FB_FAM_TIME, p->time_us * 1e-6, err, ROW_LABELS);
#undef ROW_LABELS
    return st;
}

/* A verdict as a sample and a test case, for results and check documents. */
static enum fb_status add_verdict(const struct export_in *in, const char *cluster, const char *collective,
                                  const char *backend, long nodes, long ranks, const char *verdict, int code,
                                  const char *reasons, struct fb_err *err)
{
    char n[24], k[24], suite[512], name[256];
    while (reasons != NULL && *reasons == ' ')
        reasons++;
    number_text(n, sizeof n, nodes);
    number_text(k, sizeof k, ranks);
    enum fb_status st = fb_export_add_sample(in->x, FB_FAM_VERDICT, code, err, "cluster", cluster, "collective",
                                             collective, "backend", backend, "nodes", n, "ranks", k, "verdict",
                                             verdict, (const char *)NULL);
    snprintf(suite, sizeof suite, "verdicts %s (%s)", cluster ? cluster : "?", in->path);
    snprintf(name, sizeof name, "%s %s%s%s", collective ? collective : "?", cluster ? cluster : "?",
             nodes > 0 ? " nodes=" : "", n);
    struct fb_export_case c = {suite, name, verdict_outcome(verdict), (char *)verdict, 0,
                               (char *)verdict, (char *)reasons};
    return st == FB_OK ? fb_export_add_case(in->x, &c, err) : st;
}

static enum fb_status add_judged(const struct export_in *in, const struct fb_result *r, struct fb_err *err)
{
    struct fb_verdict v = {0};
    struct fb_err why = {0};
    enum fb_status st = FB_OK;
    if (fb_verdict_judge(r, in->ps, NULL, &v, &why) == FB_OK) {
        st = add_verdict(in, r->cluster, r->collective, r->backend, r->nodes, r->ranks, v.name, v.code,
                         fb_str_get(&v.reasons), err);
    } else {
        /* No rule judges it (one node, no profile): reported, not failed. */
        char suite[512], name[256];
        snprintf(suite, sizeof suite, "verdicts %s (%s)", r->cluster ? r->cluster : "?", in->path);
        snprintf(name, sizeof name, "%s %s", r->collective, r->cluster ? r->cluster : "?");
        struct fb_export_case c = {suite, name, FB_CASE_SKIPPED, "SKIP", 0, why.msg, NULL};
        st = fb_export_add_case(in->x, &c, err);
    }
    fb_verdict_free(&v);
    return st;
}

static enum fb_status read_collective(json_object *doc, const struct export_in *in, struct fb_err *err)
{
    struct fb_result r;
    enum fb_status st = fb_result_from_json(json_object_get(doc), in->path, &r, err);
    if (st != FB_OK)
        return st;
    for (size_t i = 0; st == FB_OK && i < r.nrows; i++) {
        st = add_row_samples(&r, i, false, in->x, err);
        if (st == FB_OK)
            st = add_row_samples(&r, i, true, in->x, err);
    }
    if (st == FB_OK)
        st = add_judged(in, &r, err);
    fb_result_free(&r);
    return st;
}

static enum fb_status read_check(json_object *doc, const struct export_in *in, struct fb_err *err)
{
    const char *verdict = fb_json_get_string(doc, "verdict");
    int64_t code = 0, nodes = 0, ranks = 0;
    if (verdict == NULL || !fb_json_get_int64(doc, "exit_code", &code))
        return fb_fail(err, FB_ERR_INPUT, "%s: a fabric-report check document needs \"verdict\" and \"exit_code\" "
                       "(docs/schema/report-check.schema.json); make it again with fabric-report check --json", in->path);
    fb_json_get_int64(doc, "nodes", &nodes);
    fb_json_get_int64(doc, "ranks", &ranks);
    return add_verdict(in, fb_json_get_string(doc, "cluster"), fb_json_get_string(doc, "collective"), NULL,
                       (long)nodes, (long)ranks, verdict, (int)code, fb_json_get_string(doc, "reasons"), err);
}

static int doctor_code(const char *verdict)
{
    static const char *const names[] = {"ok", "warn", "fail", "skip"};
    for (int i = 0; i < 4; i++)
        if (strcmp(verdict, names[i]) == 0)
            return i;
    return -1;
}

static enum fb_status read_doctor_check(json_object *c, const struct export_in *in, const char *cluster,
                                        const char *mode, const char *host, const char *suite, struct fb_err *err)
{
    const char *name = fb_json_get_string(c, "name"), *verdict = fb_json_get_string(c, "verdict");
    int code = verdict != NULL ? doctor_code(verdict) : -1;
    if (name == NULL || code < 0)
        return fb_fail(err, FB_ERR_INPUT, "%s: a doctor check needs a \"name\" and a \"verdict\" of ok, warn, fail or "
                       "skip (docs/schema/doctor.schema.json)", in->path);
    enum fb_status st = fb_export_add_sample(in->x, FB_FAM_DOCTOR_CHECK, code, err, "cluster", cluster, "mode",
                                             mode, "host", host, "check", name, "verdict", verdict,
                                             (const char *)NULL);
    struct fb_export_case k = {(char *)suite, (char *)name,
                               code == 0 ? FB_CASE_PASSED : code == 3 ? FB_CASE_SKIPPED : FB_CASE_FAILED,
                               (char *)verdict, 0, (char *)fb_json_get_string(c, "evidence"),
                               (char *)fb_json_get_string(c, "fix")};
    return st == FB_OK ? fb_export_add_case(in->x, &k, err) : st;
}

static enum fb_status read_doctor(json_object *doc, const struct export_in *in, struct fb_err *err)
{
    json_object *checks = fb_json_member(doc, "checks");
    const char *cluster = fb_json_get_string(doc, "cluster"), *mode = fb_json_get_string(doc, "mode");
    if (!json_object_is_type(checks, json_type_array) || mode == NULL)
        return fb_fail(err, FB_ERR_INPUT, "%s: a doctor document needs \"mode\" and a \"checks\" array "
                       "(docs/schema/doctor.schema.json); make it again with fabric-doctor -J FILE", in->path);
    /* A node document speaks of one host; a cluster document of many. */
    const char *host = strcmp(mode, "node") == 0 ? fb_json_get_string(fb_json_member(doc, "target"), "host") : NULL;
    char suite[512];
    snprintf(suite, sizeof suite, "doctor %s %s%s%s (%s)", mode, cluster ? cluster : "?", host ? " " : "",
             host ? host : "", in->path);
    enum fb_status st = FB_OK;
    for (size_t i = 0; st == FB_OK && i < json_object_array_length(checks); i++)
        st = read_doctor_check(json_object_array_get_idx(checks, i), in, cluster, mode, host, suite, err);
    return st;
}

/* The length of a JSON array; 0 for a member that is absent or not one. */
static size_t array_length(json_object *a)
{
    return json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

/* "host:device[rank]", as fabric-rdma names an endpoint. */
static void end_label(json_object *end, char *buf, size_t len)
{
    const char *host = fb_json_get_string(end, "host"), *dev = fb_json_get_string(end, "device");
    int64_t rank = -1;
    fb_json_get_int64(end, "rank", &rank);
    snprintf(buf, len, "%s:%s[%lld]", host ? host : "?", dev ? dev : "-", (long long)rank);
}

static enum fb_status read_probe_link(json_object *l, const struct export_in *in, const char *cluster,
                                      const char *transport, const char *suite, struct fb_err *err)
{
    char src[160], dst[160], size[24], pair[400];
    end_label(fb_json_member(l, "src"), src, sizeof src);
    end_label(fb_json_member(l, "dst"), dst, sizeof dst);
    int64_t bytes = 0;
    fb_json_get_int64(l, "size_bytes", &bytes);
    snprintf(size, sizeof size, "%lld", (long long)bytes);
    snprintf(pair, sizeof pair, "%s -> %s size=%s", src, dst, size);
    double gbps = NAN, secs = 0;
    bool flagged = false;
    fb_json_get_double(l, "avg_GBps", &gbps);
    fb_json_get_double(l, "time_s", &secs);
    fb_json_get_bool(l, "flagged", &flagged);
    enum fb_status st = FB_OK;
    if (!isnan(gbps))
        st = fb_export_add_sample(in->x, FB_FAM_PROBE_BW, gbps * 1e9, err, "cluster", cluster, "transport",
                                  transport, "src", src, "dst", dst, "size", size, (const char *)NULL);
    char message[160];
    snprintf(message, sizeof message, isnan(gbps) ? "not measured" : "%.3f GB/s%s", gbps,
             flagged ? ", below the threshold" : "");
    struct fb_export_case c = {(char *)suite, pair,
                               isnan(gbps) ? FB_CASE_SKIPPED : flagged ? FB_CASE_FAILED : FB_CASE_PASSED,
                               flagged ? "slow" : "measured", secs, message,
                               flagged ? "look at this link's cable, port and NIC (fabric-report check FILE names the suspects)" : NULL};
    return st == FB_OK ? fb_export_add_case(in->x, &c, err) : st;
}

static enum fb_status read_probe(json_object *doc, const struct export_in *in, struct fb_err *err)
{
    struct fb_str text = {0};
    enum fb_status verdict = FB_OK;
    enum fb_status st = fb_probe_judge(doc, in->path, in->ps, &text, &verdict, err);
    json_object *links = fb_json_member(doc, "links");
    const char *cluster = fb_json_get_string(doc, "cluster"), *transport = fb_json_get_string(doc, "transport");
    char suite[512], collective[64];
    snprintf(suite, sizeof suite, "probe %s %s (%s)", transport ? transport : "?", cluster ? cluster : "?", in->path);
    snprintf(collective, sizeof collective, "probe-%s", transport ? transport : "?");
    int64_t nodes = 0, ranks = 0;
    fb_json_get_int64(fb_json_member(doc, "topology"), "nodes", &nodes);
    fb_json_get_int64(fb_json_member(doc, "topology"), "ranks", &ranks);
    for (size_t i = 0; st == FB_OK && i < array_length(links); i++)
        st = read_probe_link(json_object_array_get_idx(links, i), in, cluster, transport, suite, err);
    if (st == FB_OK)
        st = add_verdict(in, cluster, collective, transport, (long)nodes, (long)ranks, fb_verdict_name(verdict),
                         verdict, fb_str_get(&text), err);
    fb_str_free(&text);
    return st;
}

/* ---- fabric-scan ---- */

static int scan_verdict_code(const char *verdict)
{
    static const char *const names[] = {"pass", "slow", "failed", "untested"};
    for (int i = 0; verdict != NULL && i < 4; i++)
        if (strcmp(verdict, names[i]) == 0)
            return i;
    return -1;
}

static enum fb_status add_scan_figure(const struct export_in *in, json_object *node, const char *member,
                                      const char *test, const char *const *who, struct fb_err *err)
{
    double gbps = NAN;
    if (!fb_json_get_double(node, member, &gbps) || isnan(gbps))
        return FB_OK; /* not measured: no sample rather than a zero */
    return fb_export_add_sample(in->x, FB_FAM_SCAN_NODE_BW, gbps * 1e9, err, "cluster", who[0], "host", who[1],
                                "node", who[2], "rack", who[3], "test", test, (const char *)NULL);
}

/* One node: its verdict and figures as samples, and a test case whose
 * message is the scan's evidence. */
static enum fb_status read_scan_node(json_object *node, const struct export_in *in, const char *cluster,
                                     const char *suite, struct fb_err *err)
{
    const char *host = fb_json_get_string(node, "host"), *verdict = fb_json_get_string(node, "verdict");
    int code = scan_verdict_code(verdict);
    if (host == NULL || code < 0)
        return fb_fail(err, FB_ERR_INPUT, "%s: a scan node needs a \"host\" and a \"verdict\" of pass, slow, failed "
                       "or untested (docs/schema/scan.schema.json)", in->path);
    const char *who[4] = {cluster, host, fb_json_get_string(node, "node"), fb_json_get_string(node, "rack")};
    enum fb_status st = fb_export_add_sample(in->x, FB_FAM_SCAN_NODE, code, err, "cluster", cluster, "host", host,
                                             "node", who[2], "rack", who[3], "verdict", verdict,
                                             (const char *)NULL);
    if (st == FB_OK)
        st = add_scan_figure(in, node, "alone_busbw_GBps", "alone", who, err);
    if (st == FB_OK)
        st = add_scan_figure(in, node, "best_pair_busbw_GBps", "pair", who, err);
    const char *reason = fb_json_get_string(node, "reason");
    struct fb_export_case c = {(char *)suite, (char *)host,
                               code == 0 ? FB_CASE_PASSED : code == 3 ? FB_CASE_SKIPPED : FB_CASE_FAILED,
                               (char *)verdict, 0, (char *)(reason ? reason : verdict),
                               code == 1 || code == 2 ? "drain the node and look at its NICs, cables and GPUs; "
                                                        "rescan with --mode exhaustive to tell the node from its links"
                                                      : NULL};
    return st == FB_OK ? fb_export_add_case(in->x, &c, err) : st;
}

/* A suspect link: a failed test case named after its two hosts. */
static enum fb_status read_scan_link(json_object *link, const struct export_in *in, const char *suite,
                                     struct fb_err *err)
{
    json_object *hosts = fb_json_member(link, "hosts");
    if (array_length(hosts) != 2)
        return fb_fail(err, FB_ERR_INPUT, "%s: a suspect link needs its two \"hosts\" (docs/schema/scan.schema.json)",
                       in->path);
    char name[300], message[160];
    snprintf(name, sizeof name, "link %s-%s", json_object_get_string(json_object_array_get_idx(hosts, 0)),
             json_object_get_string(json_object_array_get_idx(hosts, 1)));
    double gbps = NAN;
    if (fb_json_get_double(link, "busbw_GBps", &gbps) && !isnan(gbps))
        snprintf(message, sizeof message, "%.3g GB/s between two nodes that pass, confirmed by a retest", gbps);
    else
        snprintf(message, sizeof message, "failed between two nodes that pass");
    struct fb_export_case c = {(char *)suite, name, FB_CASE_FAILED, "link", 0, message,
                               "look at the cables, ports and switch between these two nodes"};
    return fb_export_add_case(in->x, &c, err);
}

static enum fb_status read_scan(json_object *doc, const struct export_in *in, struct fb_err *err)
{
    json_object *nodes = fb_json_member(doc, "nodes"), *suspects = fb_json_member(doc, "suspects");
    const char *cluster = fb_json_get_string(doc, "cluster");
    const char *backend = fb_json_get_string(fb_json_member(doc, "config"), "backend");
    if (!json_object_is_type(nodes, json_type_array))
        return fb_fail(err, FB_ERR_INPUT, "%s: a scan document needs a \"nodes\" array "
                       "(docs/schema/scan.schema.json); make it again with fabric-scan -J FILE", in->path);
    char suite[512], count[24];
    snprintf(suite, sizeof suite, "scan %s (%s)", cluster ? cluster : "?", in->path);
    snprintf(count, sizeof count, "%zu", array_length(nodes));
    enum fb_status st = FB_OK;
    for (size_t i = 0; st == FB_OK && i < array_length(nodes); i++)
        st = read_scan_node(json_object_array_get_idx(nodes, i), in, cluster, suite, err);
    json_object *links = fb_json_member(suspects, "links");
    for (size_t i = 0; st == FB_OK && i < array_length(links); i++)
        st = read_scan_link(json_object_array_get_idx(links, i), in, suite, err);
    size_t ranks = 0;
    for (size_t i = 0; i < array_length(nodes); i++)
        ranks += array_length(fb_json_member(json_object_array_get_idx(nodes, i), "ranks"));
    size_t named = array_length(fb_json_member(suspects, "nodes")) + array_length(fb_json_member(suspects, "links"));
    if (st == FB_OK)
        st = fb_export_add_sample(in->x, FB_FAM_SCAN_SUSPECTS, (double)named, err, "cluster", cluster, "backend",
                                  backend, "nodes", count, (const char *)NULL);
    bool complete = false;
    fb_json_get_bool(doc, "complete", &complete);
    const char *verdict = named > 0 ? "SUSPECTS" : complete ? "PASS" : "INCOMPLETE";
    char reasons[160];
    snprintf(reasons, sizeof reasons, "%zu of %s nodes and links named%s", named, count,
             complete ? "" : "; the scan did not finish");
    if (st == FB_OK)
        st = add_verdict(in, cluster, "scan", backend, (long)array_length(nodes), (long)ranks, verdict,
                         named > 0 ? FB_SCAN_SUSPECTS : complete ? 0 : FB_VERDICT_INCOMPLETE, reasons, err);
    return st;
}

/* The kinds export reads. The reader does not take the document. */
static const struct {
    bool (*is)(json_object *doc);
    enum fb_status (*read)(json_object *doc, const struct export_in *in, struct fb_err *err);
} kinds[] = {
    {is_collective, read_collective},
    {is_check, read_check},
    {is_probe, read_probe},
    {is_doctor, read_doctor},
    {is_scan, read_scan},
};

#define NKINDS (sizeof kinds / sizeof kinds[0])

/* Reads one file; `named` says it was given by name, where a document of
 * no known kind is an error rather than passed over. */
static enum fb_status read_one(const char *path, bool named, const struct fb_profiles *ps, struct fb_export *x,
                               struct fb_err *err)
{
    json_object *doc = NULL;
    enum fb_status st = fb_json_read_file(path, &doc, err);
    if (st != FB_OK)
        return st;
    size_t k = 0;
    while (k < NKINDS && !kinds[k].is(doc))
        k++;
    struct export_in in = {path, ps, x};
    if (k < NKINDS) {
        st = kinds[k].read(doc, &in, err);
        x->documents++;
    } else if (named) {
        st = fb_fail(err, FB_ERR_INPUT, "%s: %s is no document export reads; give results (fabric-coll), "
                     "fabric-report check --json, probe (fabric-rdma), doctor (fabric-doctor -J) or scan (fabric-scan) documents",
                     path, fb_json_doc_kind(doc));
    }
    json_object_put(doc);
    return st;
}

struct walk_ctx {
    const struct fb_profiles *ps;
    struct fb_export *x;
};

static enum fb_status visit_file(const char *path, void *ctx, struct fb_err *err)
{
    struct walk_ctx *w = ctx;
    return read_one(path, false, w->ps, w->x, err);
}

enum fb_status fb_export_load(const char *const *paths, int npaths, const struct fb_profiles *ps,
                              struct fb_export *x, struct fb_err *err)
{
    struct walk_ctx w = {ps, x};
    /* One walk for every directory given: a document is exported once. */
    struct fb_walk walk = {0};
    enum fb_status st = FB_OK;
    for (int i = 0; st == FB_OK && i < npaths; i++) {
        struct stat sb;
        if (stat(paths[i], &sb) == 0 && S_ISDIR(sb.st_mode))
            st = fb_walk_tree(&walk, paths[i], 8, false, visit_file, &w, err);
        else
            st = read_one(paths[i], true, ps, x, err);
    }
    fb_walk_free(&walk);
    if (st == FB_OK && x->documents == 0)
        st = fb_fail(err, FB_ERR_INPUT, "no results, check, probe, doctor or scan documents in %s%s; give the files or "
                     "the directories holding them", paths[0], npaths > 1 ? " and the rest" : "");
    return st;
}

bool fb_export_format_parse(const char *name, enum fb_export_format *f)
{
    static const struct {
        const char *name;
        enum fb_export_format f;
    } names[] = {{"openmetrics", FB_EXPORT_OPENMETRICS}, {"prometheus", FB_EXPORT_PROMETHEUS},
                 {"junit", FB_EXPORT_JUNIT}, {"ctrf", FB_EXPORT_CTRF}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i].name) == 0) {
            *f = names[i].f;
            return true;
        }
    return false;
}

void fb_export_write(const struct fb_export *x, enum fb_export_format format, const char *version,
                     struct fb_str *out)
{
    switch (format) {
    case FB_EXPORT_OPENMETRICS: fb_export_write_metrics(x, true, out); break;
    case FB_EXPORT_PROMETHEUS: fb_export_write_metrics(x, false, out); break;
    case FB_EXPORT_JUNIT: fb_export_write_junit(x, out); break;
    case FB_EXPORT_CTRF: fb_export_write_ctrf(x, version, out); break;
    }
}
