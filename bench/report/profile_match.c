/* Which reference profile applies to a collective result, and a new
 * profile made from known-good results: the part of profiles that needs the
 * results reader. */
#include "report/profile_match.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "core/jsonio.h"
#include "core/text.h"
#include "core/units.h"
#include "nccl/nccl_log.h"
#include "report/physics.h"

const char *fb_intended_net(const struct fb_result *r)
{
    if (r->env == NULL)
        return NULL;
    const char *fabric = NULL;
    json_object_object_foreach(r->env, key, val) {
        const char *v = json_object_is_type(val, json_type_string) ? json_object_get_string(val) : "";
        if (strcmp(key, "NCCL_NET") == 0 && v[0] != '\0')
            return fb_net_canonical(v);
        if (fb_starts_with(key, "NCCL_FASTRAK_") || fb_starts_with(key, "NCCL_TCPXO_"))
            fabric = "FasTrak";
        else if ((strcmp(key, "FI_PROVIDER") == 0 && strcasecmp(v, "efa") == 0) || fb_starts_with(key, "FI_EFA_"))
            fabric = fabric ? fabric : "OFI";
        else if (strcmp(key, "NCCL_IB_HCA") == 0 || strcmp(key, "NCCL_IB_GID_INDEX") == 0)
            fabric = fabric ? fabric : "IB";
    }
    return fabric;
}

#define BESIDE_SUFFIX ".profile.json"

void fb_profile_beside_path(const char *result_path, char *buf, size_t len)
{
    size_t n = strlen(result_path), ext = strlen(".json");
    if (n > ext && strcmp(result_path + n - ext, ".json") == 0)
        n -= ext;
    snprintf(buf, len, "%.*s%s", (int)n, result_path, BESIDE_SUFFIX);
}

enum fb_status fb_profile_beside(const char *result_path, struct fb_profile **p, struct fb_err *err)
{
    *p = NULL;
    char path[PATH_MAX];
    fb_profile_beside_path(result_path, path, sizeof path);
    struct stat sb;
    if (stat(path, &sb) != 0)
        return FB_OK; /* none: the usual case */
    json_object *doc = NULL;
    enum fb_status st = fb_json_read_file(path, &doc, err);
    struct fb_profile *own = st == FB_OK ? calloc(1, sizeof *own) : NULL;
    if (st == FB_OK && own == NULL)
        st = fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    const char *schema = st == FB_OK ? fb_json_get_string(doc, "schema") : NULL;
    if (st == FB_OK && (schema == NULL || strcmp(schema, "fabric-bench.profile") != 0))
        st = fb_fail(err, FB_ERR_INPUT, "%s, kept beside %s as its profile, is %s, not a reference profile; remove or rename it",
                     path, result_path, fb_json_doc_kind(doc));
    if (st == FB_OK)
        st = fb_profile_parse(doc, path, own, err);
    if (st == FB_OK && !own->target)
        st = fb_fail(err, FB_ERR_INPUT, "%s, the profile kept beside %s, describes a failure, not a target; remove it or make it a target profile",
                     path, result_path);
    json_object_put(doc);
    if (st != FB_OK) {
        free(own);
        return st;
    }
    *p = own;
    return FB_OK;
}

/* The network a run is judged by: what NCCL used, or when it fell back to
 * sockets (or was not logged), the one its environment asked for. */
static const char *match_net(const struct fb_result *r)
{
    if (r->net != NULL && strcmp(r->net, "Socket") != 0)
        return r->net;
    return fb_intended_net(r);
}

static bool uses_intra(const struct fb_result *r, const char *intra)
{
    json_object *pr = fb_json_member(r->transport, "per_rank");
    for (size_t i = 0; pr != NULL && i < json_object_array_length(pr); i++) {
        json_object *arr = fb_json_member(json_object_array_get_idx(pr, i), "intra");
        for (size_t k = 0; arr != NULL && json_object_is_type(arr, json_type_array) &&
                           k < json_object_array_length(arr); k++) {
            json_object *s = json_object_array_get_idx(arr, k);
            if (json_object_is_type(s, json_type_string) && strcmp(json_object_get_string(s), intra) == 0)
                return true;
        }
    }
    return false;
}

bool fb_profile_applies(const struct fb_profile *p, const struct fb_result *r, char *why, size_t whylen)
{
    const struct fb_match *m = &p->match;
    if (fb_profile_expect(p, r->collective) == NULL)
        return snprintf(why, whylen, "no figures for %s", r->collective), false;
    if (m->gpu[0] != '\0') {
        bool gpu = r->device_kind != NULL && strcmp(r->device_kind, "gpu") == 0 && r->device_name != NULL;
        if (!gpu || fb_gpu_token(r->device_name, m->gpu) == NULL)
            return snprintf(why, whylen, "GPU is not %s", m->gpu), false;
    }
    if (m->backend[0] != '\0' && (r->backend == NULL || strcmp(r->backend, m->backend) != 0))
        return snprintf(why, whylen, "backend is not %s", m->backend), false;
    if (m->nodes_min > 0 && r->nodes < m->nodes_min)
        return snprintf(why, whylen, "fewer than %ld nodes", m->nodes_min), false;
    if (m->nodes_max > 0 && (r->nodes == 0 || r->nodes > m->nodes_max))
        return snprintf(why, whylen, "more than %ld nodes", m->nodes_max), false;
    if (m->ranks > 0 && r->ranks != m->ranks)
        return snprintf(why, whylen, "not %ld ranks", m->ranks), false;
    if (m->ranks_per_node > 0 && r->ranks_per_node != m->ranks_per_node)
        return snprintf(why, whylen, "not %ld ranks per node", m->ranks_per_node), false;
    const char *net = match_net(r);
    if (m->net[0] != '\0' && (net == NULL || strcmp(net, m->net) != 0))
        return snprintf(why, whylen, "network is not %s", m->net), false;
    if (m->intra[0] != '\0' && !uses_intra(r, m->intra))
        return snprintf(why, whylen, "no rank used %s", m->intra), false;
    return true;
}

static int criteria(const struct fb_match *m)
{
    return (m->gpu[0] != 0) + (m->backend[0] != 0) + (m->nodes_min > 0) + (m->nodes_max > 0) +
           (m->ranks > 0) + (m->ranks_per_node > 0) + (m->net[0] != 0) + (m->intra[0] != 0);
}

const struct fb_profile *fb_profile_pick(const struct fb_profiles *ps, const struct fb_result *r,
                                         char *why, size_t whylen)
{
    const struct fb_profile *best = NULL;
    int best_score = -1;
    char scratch[128];
    for (size_t i = 0; i < ps->n; i++) {
        const struct fb_profile *p = &ps->p[i];
        if (!p->target || p->per_nic || !fb_profile_applies(p, r, scratch, sizeof scratch))
            continue;
        int score = criteria(&p->match);
        if (score > best_score || (score == best_score && strcmp(p->name, best->name) < 0)) {
            best = p;
            best_score = score;
        }
    }
    if (best != NULL) {
        const char *net = match_net(r);
        snprintf(why, whylen, "auto: GPU %s, %ld node%s, %ld rank%s, net %s%s",
                 r->device_name ? r->device_name : (r->device_kind ? r->device_kind : "unknown"),
                 r->nodes, r->nodes == 1 ? "" : "s", r->ranks, r->ranks == 1 ? "" : "s",
                 net ? net : "none", r->net && strcmp(r->net, "Socket") == 0 && net ? " (intended; NCCL used Socket)" : "");
    }
    return best;
}

/* Whether p describes r's family, and what had to be assumed for it. */
static bool family_fits(const struct fb_profile *p, const struct fb_result *r, struct fb_str *assumed)
{
    const struct fb_match *m = &p->match;
    bool gpu = r->device_kind != NULL && strcmp(r->device_kind, "gpu") == 0 && r->device_name != NULL;
    if (!p->target || p->per_nic || m->gpu[0] == '\0' || !gpu || fb_gpu_token(r->device_name, m->gpu) == NULL ||
        fb_profile_expect(p, r->collective) == NULL || m->intra[0] != '\0')
        return false;
    if (m->backend[0] != '\0' && (r->backend == NULL || strcmp(r->backend, m->backend) != 0))
        return false;
    if (m->ranks > 0 && r->ranks != m->ranks)
        return false;
    long rpn = r->ranks_per_node, nodes = r->nodes;
    if (m->ranks_per_node > 0 && rpn == 0) {
        if (r->ranks < m->ranks_per_node || r->ranks % m->ranks_per_node != 0)
            return false;
        rpn = m->ranks_per_node;
        if (nodes == 0)
            nodes = r->ranks / rpn;
        fb_str_addf(assumed, "%s%ld ranks per node", assumed->len ? ", " : "", rpn);
    }
    if (m->ranks_per_node > 0 && rpn != m->ranks_per_node)
        return false;
    if (nodes == 0 && (m->nodes_min > 0 || m->nodes_max > 0))
        fb_str_addf(assumed, "%sthe node count", assumed->len ? ", " : "");
    else if ((m->nodes_min > 0 && nodes < m->nodes_min) || (m->nodes_max > 0 && nodes > m->nodes_max))
        return false;
    /* A run the log shows on sockets, with no word of what it was meant to
     * use, is judged by the sockets rule, not by an assumed fabric. */
    const char *net = match_net(r);
    if (net == NULL && r->net != NULL)
        return false;
    if (m->net[0] != '\0' && net != NULL && strcmp(net, m->net) != 0)
        return false;
    if (m->net[0] != '\0' && net == NULL)
        fb_str_addf(assumed, "%snetwork %s", assumed->len ? ", " : "", m->net);
    return assumed->len > 0; /* nothing assumed: the exact match said no */
}

const struct fb_profile *fb_profile_family(const struct fb_profiles *ps, const struct fb_result *r,
                                           char *assumed, size_t len)
{
    const struct fb_profile *best = NULL;
    struct fb_str best_assumed = {0}, others = {0};
    for (size_t i = 0; i < ps->n; i++) {
        const struct fb_profile *p = &ps->p[i];
        struct fb_str a = {0};
        if (family_fits(p, r, &a)) {
            const struct fb_expect *e = fb_profile_expect(p, r->collective);
            const struct fb_expect *be = best ? fb_profile_expect(best, r->collective) : NULL;
            if (best == NULL || e->floor < be->floor) {
                if (best != NULL)
                    fb_str_addf(&others, "%s%s", others.len ? ", " : "", best->name);
                best = p;
                fb_str_free(&best_assumed);
                best_assumed = a;
                continue;
            }
            fb_str_addf(&others, "%s%s", others.len ? ", " : "", p->name);
        }
        fb_str_free(&a);
    }
    if (best != NULL) {
        snprintf(assumed, len, "family: GPU %s; assumed %s (not in the output)%s%s%s", best->match.gpu,
                 fb_str_get(&best_assumed), others.len ? "; the most lenient of its family, others: " : "",
                 fb_str_get(&others), "");
    }
    fb_str_free(&best_assumed);
    fb_str_free(&others);
    return best;
}

/* "1K-16G" -> 1024 and 16 GiB: the sweep a profile's average covers;
 * false when it is not such a range. */
static bool avg_range_parse(const char *text, unsigned long long *lo, unsigned long long *hi)
{
    const char *dash = strchr(text, '-');
    char first[16];
    if (dash == NULL || dash == text || (size_t)(dash - text) >= sizeof first)
        return false;
    fb_copy(first, sizeof first, text, (size_t)(dash - text));
    struct fb_err ignored = {0};
    uint64_t a = 0, b = 0;
    if (fb_parse_size(first, "range", &a, &ignored) != FB_OK || fb_parse_size(dash + 1, "range", &b, &ignored) != FB_OK)
        return false;
    *lo = a;
    *hi = b;
    return true;
}

/* The floor convention of docs/report.md: 90 % of a typical figure. */
#define AVG_FLOOR_SHARE 0.9

double fb_expect_avg_floor(const struct fb_expect *e)
{
    if (!isnan(e->avg_floor))
        return e->avg_floor;
    return isnan(e->avg_busbw) ? NAN : AVG_FLOOR_SHARE * e->avg_busbw;
}

bool fb_expect_covers_sweep(const struct fb_expect *e, unsigned long long lo, unsigned long long hi)
{
    unsigned long long plo = 0, phi = 0;
    return e != NULL && !isnan(fb_expect_avg_floor(e)) && avg_range_parse(e->avg_range, &plo, &phi) && plo == lo &&
           phi == hi;
}

const struct fb_profile *fb_profile_with_average(const struct fb_profiles *ps, const struct fb_result *r,
                                                 unsigned long long lo, unsigned long long hi, char *how, size_t len)
{
    const struct fb_profile *best = NULL;
    bool best_family = false;
    for (size_t i = 0; i < ps->n; i++) {
        const struct fb_profile *p = &ps->p[i];
        const struct fb_expect *e = fb_profile_expect(p, r->collective);
        char why[128];
        struct fb_str assumed = {0};
        bool exact = p->target && !p->per_nic && fb_profile_applies(p, r, why, sizeof why);
        bool family = !exact && family_fits(p, r, &assumed);
        fb_str_free(&assumed);
        if (!(exact || family) || !fb_expect_covers_sweep(e, lo, hi))
            continue;
        /* An exact fit wins over the family; among equals, the most lenient. */
        bool better = best == NULL || (best_family && exact) ||
                      (best_family == family && fb_expect_avg_floor(e) < fb_expect_avg_floor(fb_profile_expect(best, r->collective)));
        if (better) {
            best = p;
            best_family = family;
        }
    }
    if (best != NULL)
        snprintf(how, len, "%s: the %s whose average covers this run's sweep", best_family ? "family" : "auto",
                 best_family ? "most lenient profile of its GPU family" : "profile that applies");
    return best;
}

static enum fb_status baseline_refusal(const struct fb_result *r, struct fb_err *err)
{
    struct fb_summary s;
    fb_summary_compute(r->rows, r->nrows, &s);
    if (!r->complete || r->nrows == 0)
        return fb_fail(err, FB_ERR_INPUT, "%s did not finish (complete: false); a baseline needs a complete known-good run", r->path);
    if (s.wrong_total > 0)
        return fb_fail(err, FB_ERR_INPUT, "%s has %lld wrong elements; a baseline needs a run whose results are correct", r->path, s.wrong_total);
    if (r->nodes > 1 && r->net != NULL && strcmp(r->net, "Socket") == 0)
        return fb_fail(err, FB_ERR_INPUT, "%s ran on the TCP fallback (NET/Socket between nodes); a baseline needs a run on the real fabric", r->path);
    if (isnan(s.busbw_at_largest))
        return fb_fail(err, FB_ERR_INPUT, "%s has no busBW at its largest size; nothing to make a baseline from", r->path);
    /* One rank moves nothing between ranks (busBW 0 by definition) and tiny
     * sizes round to 0: such a typical figure would pass every later run. */
    if (!(s.busbw_at_largest > 0))
        return fb_fail(err, FB_ERR_INPUT, "%s has busBW 0 GB/s at its largest size (%ld rank%s); a baseline needs a run of 2 or more ranks up to large sizes",
                       r->path, r->ranks, r->ranks == 1 ? "" : "s");
    return FB_OK;
}

/* Criteria that describe the run, each cut to what a profile may hold so
 * that the profile written always reads back. */
static json_object *baseline_match(const struct fb_result *r)
{
    json_object *m = json_object_new_object();
    if (r->device_kind != NULL && strcmp(r->device_kind, "gpu") == 0 && r->device_name != NULL) {
        char model[sizeof ((struct fb_match *)0)->gpu];
        json_object_object_add(m, "gpu", json_object_new_string(fb_gpu_model(r->device_name, model, sizeof model)));
    }
    if (r->backend != NULL && (strcmp(r->backend, "mpi") == 0 || strcmp(r->backend, "nccl") == 0))
        json_object_object_add(m, "backend", json_object_new_string(r->backend));
    if (r->nodes > 0) {
        json_object_object_add(m, "nodes_min", json_object_new_int64(r->nodes));
        json_object_object_add(m, "nodes_max", json_object_new_int64(r->nodes));
    }
    if (r->ranks > 0)
        json_object_object_add(m, "ranks", json_object_new_int64(r->ranks));
    if (r->ranks_per_node > 0)
        json_object_object_add(m, "ranks_per_node", json_object_new_int64(r->ranks_per_node));
    if (r->net != NULL && strlen(r->net) < sizeof ((struct fb_match *)0)->net)
        json_object_object_add(m, "net", json_object_new_string(r->net));
    return m;
}

static json_object *baseline_expect(const struct fb_result *r, double tolerance)
{
    struct fb_summary s;
    fb_summary_compute(r->rows, r->nrows, &s);
    json_object *e = json_object_new_object();
    json_object_object_add(e, "at_bytes", json_object_new_int64((int64_t)s.largest_bytes));
    json_object_object_add(e, "busbw_GBps", fb_json_number(s.busbw_at_largest));
    json_object_object_add(e, "floor_GBps", fb_json_number(s.busbw_at_largest * (1 - tolerance)));
    if (s.avg_busbw_ge_1MiB > 0) {
        json_object_object_add(e, "avg_busbw_GBps", fb_json_number(s.avg_busbw_ge_1MiB));
        json_object_object_add(e, "avg_range", json_object_new_string(">=1M"));
    }
    return e;
}

/* The profile is held to the loader's rules before it is written: a file
 * every later check would refuse (or misread) is never saved. */
static enum fb_status baseline_reads_back(json_object *doc, const char *name, struct fb_err *err)
{
    struct fb_profile *p = malloc(sizeof *p);
    if (p == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory checking the baseline");
    struct fb_err why = {0};
    enum fb_status st = fb_profile_parse(doc, name, p, &why);
    free(p);
    if (st != FB_OK)
        return fb_fail(err, FB_ERR_INPUT, "the baseline would not read back (%s); give a known-good run of 2 or more ranks", why.msg);
    return FB_OK;
}

enum fb_status fb_profile_from_results(const struct fb_result *const *runs, size_t n,
                                       const char *name, double tolerance, json_object **out,
                                       struct fb_err *err)
{
    if (!fb_profile_name_ok(name))
        return fb_fail(err, FB_ERR_USAGE, "--name %s: use letters, digits, '.', '_' and '-' only", name);
    if (!(tolerance >= 0 && tolerance < 1))
        return fb_fail(err, FB_ERR_USAGE, "--tolerance must be in [0, 100) percent");
    for (size_t i = 0; i < n; i++) {
        enum fb_status st = baseline_refusal(runs[i], err);
        if (st != FB_OK)
            return st;
        for (size_t k = 0; k < i; k++) {
            if (strcmp(runs[k]->collective, runs[i]->collective) == 0)
                return fb_fail(err, FB_ERR_USAGE, "%s and %s are both %s; give one run per collective", runs[k]->path, runs[i]->path, runs[i]->collective);
            if (runs[k]->nodes != runs[i]->nodes || runs[k]->ranks != runs[i]->ranks)
                return fb_fail(err, FB_ERR_USAGE, "%s and %s ran on different rank or node counts; one profile describes one shape of cluster", runs[k]->path, runs[i]->path);
        }
    }
    const struct fb_result *r0 = runs[0];
    json_object *doc = json_object_new_object();
    json_object_object_add(doc, "schema", json_object_new_string("fabric-bench.profile"));
    json_object_object_add(doc, "schema_version", json_object_new_int(1));
    json_object_object_add(doc, "name", json_object_new_string(name));
    json_object_object_add(doc, "revision", json_object_new_int(1));
    json_object_object_add(doc, "role", json_object_new_string("target"));
    char desc[256];
    snprintf(desc, sizeof desc, "baseline of %s: %ld rank%s on %ld node%s, %s backend%s%s", r0->cluster,
             r0->ranks, r0->ranks == 1 ? "" : "s", r0->nodes, r0->nodes == 1 ? "" : "s",
             r0->backend ? r0->backend : "unknown", r0->net ? ", net " : "", r0->net ? r0->net : "");
    json_object_object_add(doc, "description", json_object_new_string(desc));
    if (r0->net != NULL && strlen(r0->net) < sizeof ((struct fb_profile *)0)->fabric)
        json_object_object_add(doc, "fabric", json_object_new_string(r0->net));
    json_object_object_add(doc, "match", baseline_match(r0));
    json_object *colls = json_object_new_object();
    json_object *sources = json_object_new_array();
    for (size_t i = 0; i < n; i++) {
        json_object_object_add(colls, runs[i]->collective, baseline_expect(runs[i], tolerance));
        json_object *src = json_object_new_object();
        char what[128], ref[PATH_MAX + 256];
        snprintf(what, sizeof what, "%s measured on a known-good run; floor %.0f%% below it", runs[i]->collective, tolerance * 100);
        snprintf(ref, sizeof ref, "%s (cluster %s, started %s)", runs[i]->path, runs[i]->cluster,
                 runs[i]->start_time ? runs[i]->start_time : "unknown");
        json_object_object_add(src, "what", json_object_new_string(what));
        json_object_object_add(src, "ref", json_object_new_string(ref));
        json_object_array_add(sources, src);
    }
    json_object_object_add(doc, "collectives", colls);
    json_object_object_add(doc, "sources", sources);
    enum fb_status st = baseline_reads_back(doc, name, err);
    if (st != FB_OK) {
        json_object_put(doc);
        return st;
    }
    *out = doc;
    return FB_OK;
}
