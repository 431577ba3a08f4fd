/* The scan's results document (docs/schema/scan.schema.json) and its lines
 * on stderr. */
#include <stdio.h>
#include <string.h>

#include "core/envelope.h"
#include "core/jsonio.h"
#include "core/outfile.h"
#include "core/text.h"
#include "core/units.h"
#include "scan/run.h"

static json_object *figure(double v) { return v >= 0 ? fb_json_number(v) : NULL; }

static json_object *config_json(const struct scan_run *r)
{
    json_object *c = json_object_new_object();
    json_object_object_add(c, "mode", json_object_new_string(r->o.mode == SCAN_MODE_EXHAUSTIVE ? "exhaustive" : "fast"));
    json_object_object_add(c, "backend", json_object_new_string(r->e.ops->name));
    json_object_object_add(c, "collective", json_object_new_string("all_reduce"));
    json_object_object_add(c, "bytes", json_object_new_int64((int64_t)r->p.bytes));
    json_object_object_add(c, "iters", json_object_new_int(r->p.iters));
    json_object_object_add(c, "warmup", json_object_new_int(r->p.warmup));
    json_object_object_add(c, "threshold", fb_json_number(r->o.threshold));
    json_object_object_add(c, "test_timeout_s", fb_json_number(r->o.test_timeout));
    json_object_object_add(c, "seed", json_object_new_int64((int64_t)r->seed));
    json_object_object_add(c, "ranks_per_node", json_object_new_int(r->l.per_node));
    json_object_object_add(c, "topology", fb_json_string_or_null(r->o.topology));
    return c;
}

static json_object *estimate_json(const struct scan_estimate *e, double test_seconds)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "rounds", json_object_new_int(e->rounds));
    json_object_object_add(o, "tests", json_object_new_int(e->tests));
    json_object_object_add(o, "max_pairs_per_round", json_object_new_int(e->max_pairs));
    json_object_object_add(o, "seconds", fb_json_number(e->rounds * test_seconds));
    return o;
}

static const char *rack_of(const struct scan_run *r, int x)
{
    return r->l.rack != NULL && r->l.rack[x] >= 0 ? r->l.rack_name[r->l.rack[x]] : NULL;
}

static json_object *node_json(const struct scan_run *r, int x)
{
    const struct scan_node *n = &r->nodes[x];
    json_object *o = json_object_new_object(), *ranks = json_object_new_array();
    json_object_object_add(o, "host", json_object_new_string(r->l.host[x]));
    json_object_object_add(o, "node", fb_json_string_or_null(r->l.node_name != NULL ? r->l.node_name[x] : NULL));
    json_object_object_add(o, "rack", fb_json_string_or_null(rack_of(r, x)));
    for (int l = 0; l < r->l.per_node; l++)
        json_object_array_add(ranks, json_object_new_int(r->l.ranks[x * r->l.per_node + l]));
    json_object_object_add(o, "ranks", ranks);
    json_object_object_add(o, "verdict", json_object_new_string(scan_verdict_name(n->verdict)));
    json_object_object_add(o, "reason", fb_json_string_or_null(n->reason[0] ? n->reason : NULL));
    json_object_object_add(o, "alone_busbw_GBps", figure(n->alone));
    json_object_object_add(o, "best_pair_busbw_GBps", figure(n->best_pair));
    json_object_object_add(o, "ratio_to_median", figure(n->ratio));
    return o;
}

static json_object *test_json(const struct scan_run *r, const struct scan_test *t)
{
    json_object *o = json_object_new_object(), *hosts = json_object_new_array();
    json_object_object_add(o, "round", json_object_new_int(t->round));
    json_object_object_add(o, "pass", json_object_new_string(scan_pass_name(t->pass)));
    json_object_array_add(hosts, json_object_new_string(r->l.host[t->a]));
    if (t->b >= 0)
        json_object_array_add(hosts, json_object_new_string(r->l.host[t->b]));
    json_object_object_add(o, "hosts", hosts);
    json_object_object_add(o, "status", json_object_new_string(scan_status_name(t->status)));
    json_object_object_add(o, "busbw_GBps", figure(t->busbw));
    json_object_object_add(o, "seconds", fb_json_number(t->seconds));
    json_object_object_add(o, "error", fb_json_string_or_null(t->error[0] ? t->error : NULL));
    return o;
}

static json_object *suspects_json(const struct scan_run *r)
{
    json_object *o = json_object_new_object(), *nodes = json_object_new_array(), *links = json_object_new_array();
    for (int x = 0; x < r->l.nnodes; x++)
        if (r->nodes[x].verdict == SCAN_NODE_SLOW || r->nodes[x].verdict == SCAN_NODE_FAILED)
            json_object_array_add(nodes, json_object_new_string(r->l.host[x]));
    for (int i = 0; i < r->j.nlinks; i++) {
        const struct scan_link *k = &r->j.links[i];
        json_object *link = json_object_new_object(), *hosts = json_object_new_array(),
                    *racks = json_object_new_array();
        json_object_array_add(hosts, json_object_new_string(r->l.host[k->a]));
        json_object_array_add(hosts, json_object_new_string(r->l.host[k->b]));
        json_object_array_add(racks, fb_json_string_or_null(rack_of(r, k->a)));
        json_object_array_add(racks, fb_json_string_or_null(rack_of(r, k->b)));
        json_object_object_add(link, "hosts", hosts);
        json_object_object_add(link, "racks", racks);
        json_object_object_add(link, "busbw_GBps", figure(k->busbw));
        json_object_array_add(links, link);
    }
    json_object_object_add(o, "nodes", nodes);
    json_object_object_add(o, "links", links);
    return o;
}

static json_object *summary_json(const struct scan_run *r)
{
    json_object *o = json_object_new_object();
    int suspects = r->j.slow + r->j.failed + r->j.nlinks > 0;
    json_object_object_add(o, "verdict", json_object_new_string(suspects ? "suspects" : "pass"));
    json_object_object_add(o, "passed", json_object_new_int(r->j.passed));
    json_object_object_add(o, "slow", json_object_new_int(r->j.slow));
    json_object_object_add(o, "failed", json_object_new_int(r->j.failed));
    json_object_object_add(o, "untested", json_object_new_int(r->j.untested));
    json_object_object_add(o, "rounds_run", json_object_new_int(r->rounds_run));
    return o;
}

static json_object *fleet_json(const struct scan_run *r)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "median_pair_busbw_GBps", figure(r->ntests ? r->j.median_pair : -1));
    json_object_object_add(o, "median_alone_busbw_GBps", figure(r->ntests ? r->j.median_alone : -1));
    json_object_object_add(o, "nodes", json_object_new_int(r->l.nnodes));
    return o;
}

static json_object *document(const struct scan_run *r, int complete, const struct fb_err *fault)
{
    struct fb_envelope_info info = {"scan", "fabric-scan", r->invoked_as, r->o.cluster, NULL, 1};
    json_object *d = fb_envelope_new(&info), *hosts = json_object_new_array();
    for (int x = 0; x < r->l.nnodes; x++)
        json_object_array_add(hosts, json_object_new_string(r->l.host[x]));
    json_object_object_add(d, "hosts", hosts);
    if (r->alone_skipped)
        fb_envelope_warn(d, "no alone round: one GPU per node has no intra-node all_reduce to time");
    if (fault != NULL)
        fb_envelope_fault(d, fault->code, fault->msg, 0, r->w.host);
    json_object_object_add(d, "config", config_json(r));
    json_object_object_add(d, "estimate", estimate_json(&r->est, r->o.test_seconds));
    json_object_object_add(d, "fleet", fleet_json(r));
    json_object *nodes = json_object_new_array(), *tests = json_object_new_array();
    for (int x = 0; x < r->l.nnodes; x++)
        json_object_array_add(nodes, node_json(r, x));
    for (int i = 0; i < r->ntests; i++)
        json_object_array_add(tests, test_json(r, &r->tests[i]));
    json_object_object_add(d, "nodes", nodes);
    json_object_object_add(d, "tests", tests);
    json_object_object_add(d, "suspects", suspects_json(r));
    json_object_object_add(d, "summary", summary_json(r));
    fb_envelope_finish(d, complete);
    return d;
}

enum fb_status scan_results_write(struct scan_run *r, int complete, const struct fb_err *fault,
                                  struct fb_err *err)
{
    int stream = fb_out_is_stream(r->path);
    if (stream && !complete && fault == NULL)
        return FB_OK; /* a stream gets one document, at the end */
    json_object *d = document(r, complete, fault);
    enum fb_status st;
    if (!r->path_taken && r->o.json_path == NULL) {
        st = fb_json_create(r->path, sizeof r->path, d, err);
    } else {
        st = fb_json_write_atomic(r->path, d, err);
    }
    r->path_taken = st == FB_OK || r->path_taken;
    json_object_put(d);
    return st;
}

void scan_print_estimate(const struct scan_run *r)
{
    char size[32];
    fb_format_size(r->p.bytes, size, sizeof size);
    fprintf(stderr, "fabric-scan: %d nodes x %d rank%s, %s mode, %s all_reduce x %d (%s): about %d round%s, "
            "%d tests, up to %d at once; about %.0f s at %.3g s per test\n",
            r->l.nnodes, r->l.per_node, r->l.per_node == 1 ? "" : "s",
            r->o.mode == SCAN_MODE_EXHAUSTIVE ? "exhaustive" : "fast", size, r->p.iters, r->e.ops->name,
            r->est.rounds, r->est.rounds == 1 ? "" : "s", r->est.tests, r->est.max_pairs,
            r->est.rounds * r->o.test_seconds, r->o.test_seconds);
}

void scan_print_summary(const struct scan_run *r)
{
    printf("# fabric-scan: %d nodes, %s mode, median pair busBW %.3g GB/s\n", r->l.nnodes,
           r->o.mode == SCAN_MODE_EXHAUSTIVE ? "exhaustive" : "fast", r->j.median_pair);
    printf("# %-24s %-8s %10s %10s %7s  %s\n", "host", "verdict", "alone", "best pair", "ratio", "evidence");
    for (int x = 0; x < r->l.nnodes; x++) {
        const struct scan_node *n = &r->nodes[x];
        char alone[16] = "-", pair[16] = "-", ratio[16] = "-";
        if (n->alone >= 0)
            snprintf(alone, sizeof alone, "%.3g", n->alone);
        if (n->best_pair >= 0)
            snprintf(pair, sizeof pair, "%.3g", n->best_pair);
        if (n->ratio >= 0)
            snprintf(ratio, sizeof ratio, "%.2fx", n->ratio);
        printf("  %-24s %-8s %10s %10s %7s  %s\n", r->l.host[x], scan_verdict_name(n->verdict), alone, pair,
               ratio, n->reason);
    }
    for (int i = 0; i < r->j.nlinks; i++)
        printf("  link %s <-> %s: %.3g GB/s, both nodes pass elsewhere\n", r->l.host[r->j.links[i].a],
               r->l.host[r->j.links[i].b], r->j.links[i].busbw);
    int suspects = r->j.slow + r->j.failed + r->j.nlinks;
    printf("# verdict: %s (%d pass, %d slow, %d failed, %d untested, %d suspect link%s); results: %s\n",
           suspects ? "SUSPECTS" : "PASS", r->j.passed, r->j.slow, r->j.failed, r->j.untested, r->j.nlinks,
           r->j.nlinks == 1 ? "" : "s", r->path);
}
