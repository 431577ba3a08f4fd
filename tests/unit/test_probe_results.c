/* The results record and the operator's text for a synthetic RDMA fleet:
 * 4 nodes x 2 HCAs, all-pairs, with one slow NIC (node c, mlx5_1).
 * With FB_PROBE_DUMP=DIR the document is also written there, for the
 * schema check in tests/probe/test_probe_schema.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/envelope.h"
#include "core/jsonio.h"
#include "probe/results.h"

#define NODES 4
#define RAILS 2
#define RANKS (NODES * RAILS)

struct fleet {
    struct probe_opts o;
    struct fb_world w;
    char hosts[RANKS][FB_HOST_MAX];
    struct probe_endpoint ep[RANKS];
    int node_of[RANKS], local_of[RANKS];
    struct probe_schedule s;
    struct probe_results r;
};

static void endpoint(struct fleet *f, int k)
{
    struct probe_endpoint *e = &f->ep[k];
    memset(e, 0, sizeof *e);
    e->rank = k;
    e->local_rank = k % RAILS;
    snprintf(e->host, sizeof e->host, "%s", f->hosts[k]);
    snprintf(e->device, sizeof e->device, "mlx5_%d", k % RAILS);
    e->port = 1;
    snprintf(e->firmware, sizeof e->firmware, "28.39.1002");
    snprintf(e->link_layer, sizeof e->link_layer, "Ethernet");
    snprintf(e->port_state, sizeof e->port_state, "ACTIVE");
    e->mtu = e->active_mtu = 4096;
    snprintf(e->rate, sizeof e->rate, "4X NDR (400 Gb/s)");
    e->line_rate_gbps = 400;
    e->lid = 0;
    e->gid_index = 3;
    snprintf(e->gid, sizeof e->gid, "::ffff:10.0.%d.%d", k / RAILS, k % RAILS);
    snprintf(e->gid_type, sizeof e->gid_type, "RoCE v2");
    e->gid_auto = 1;
    snprintf(e->gid_rule, sizeof e->gid_rule, "RoCE v2, IPv4-mapped");
    e->numa_node = k % RAILS;
    snprintf(e->pci_bus_id, sizeof e->pci_bus_id, "0000:%02x:00.0", 0x17 + k % RAILS);
    snprintf(e->mem_kind, sizeof e->mem_kind, "gpu");
    snprintf(e->mem_reg, sizeof e->mem_reg, "dmabuf");
    e->mem_numa_node = -1;
    e->gpu = k % RAILS;
    snprintf(e->gpu_bus_id, sizeof e->gpu_bus_id, "0000:%02x:00.0", 0x18 + k % RAILS);
    snprintf(e->gpu_name, sizeof e->gpu_name, "NVIDIA H100 80GB HBM3");
}

static void measure(struct probe_measure *m, int link, double gbps)
{
    memset(m, 0, sizeof *m);
    m->link = link;
    m->size = 8 << 20;
    m->messages = 10000;
    m->bytes = 10000.0 * (8 << 20);
    m->seconds = m->bytes * 8 / (gbps * 1e9);
    probe_samples_init(&m->samples, 0, m->seconds / 4);
    for (int i = 1; i <= 4; i++)
        probe_samples_add(&m->samples, i * m->seconds / 4, m->bytes / 4);
    probe_samples_finish(&m->samples, m->seconds);
}

static void build(struct fleet *f)
{
    memset(f, 0, sizeof *f);
    char *argv[] = {"fabric-rdma", "--pattern", "all-pairs", "-s", "8M", "--use-cuda", NULL};
    struct fb_err err = {0};
    CHECK_INT(probe_opts_parse(&f->o, 6, argv, &err), FB_OK);
    for (int k = 0; k < RANKS; k++) {
        snprintf(f->hosts[k], FB_HOST_MAX, "node-%c", 'a' + k / RAILS);
        f->node_of[k] = k / RAILS;
        f->local_of[k] = k % RAILS;
        endpoint(f, k);
    }
    f->w.size = RANKS;
    f->w.nodes = NODES;
    f->w.hosts = f->hosts;
    struct probe_layout lay = {RANKS, NODES, f->node_of, f->local_of};
    CHECK_INT(probe_schedule_build(PROBE_PATTERN_ALL_PAIRS, 0, &lay, &f->s, &err), FB_OK);
    probe_results_init(&f->r, &f->o, &f->w, &f->s, f->ep, "/nonexistent/x.json", "lab");
    for (int i = 0; i < f->s.nlinks; i++) {
        const struct probe_link *l = &f->s.links[i];
        int bad = l->src == 5 || l->dst == 5; /* node-c mlx5_1 */
        struct probe_row row = {l->round, l->src, l->dst, {0}};
        measure(&row.m, l->id, bad ? 181.0 : 392.0);
        CHECK_INT(probe_results_add(&f->r, &row, &err), FB_OK);
    }
}

static json_object *get(json_object *o, const char *key)
{
    json_object *v = NULL;
    json_object_object_get_ex(o, key, &v);
    return v;
}

static void test_document_carries_units_and_facts(void)
{
    static struct fleet f;
    build(&f);
    json_object *d = probe_results_json(&f.r, 1);
    CHECK_STR(fb_json_get_string(d, "kind"), "probe");
    CHECK_STR(fb_json_get_string(d, "transport"), "rdma");
    CHECK_STR(fb_json_get_string(d, "pattern"), "all-pairs");
    json_object *links = get(d, "links");
    CHECK_INT(json_object_array_length(links), 12); /* 6 node pairs x 2 rails */
    json_object *l0 = json_object_array_get_idx(links, 0);
    double avg = 0, gBps = 0, share = 0;
    CHECK(fb_json_get_double(l0, "avg_Gbps", &avg));
    CHECK(fb_json_get_double(l0, "avg_GBps", &gBps));
    CHECK(fb_json_get_double(l0, "line_rate_share", &share));
    CHECK_NEAR(gBps * 8, avg, 1e-9);
    CHECK_NEAR(share, avg / 400, 1e-9);
    CHECK_INT(json_object_array_length(get(l0, "samples")), 4);
    json_object *ep = json_object_array_get_idx(get(d, "endpoints"), 5);
    CHECK_STR(fb_json_get_string(ep, "device"), "mlx5_1");
    CHECK_STR(fb_json_get_string(get(ep, "gid"), "type"), "RoCE v2");
    CHECK_STR(fb_json_get_string(get(ep, "memory"), "registration"), "dmabuf");
    CHECK_STR(fb_json_get_string(get(ep, "memory"), "gpu_bus_id"), "0000:19:00.0");
    json_object_put(d);
    probe_results_free(&f.r);
    probe_schedule_free(&f.s);
}

static void test_slow_nic_is_flagged_and_suspected(void)
{
    static struct fleet f;
    build(&f);
    json_object *d = probe_results_json(&f.r, 1);
    json_object *flags = get(d, "flags"), *sus = get(d, "suspects");
    CHECK_INT(json_object_array_length(flags), 3); /* node-c rail 1 meets 3 other nodes */
    CHECK_STR(fb_json_get_string(json_object_array_get_idx(flags, 0), "reference"), "line-rate");
    CHECK_INT(json_object_array_length(sus), 1);
    json_object *s0 = json_object_array_get_idx(sus, 0);
    CHECK_STR(fb_json_get_string(s0, "host"), "node-c");
    CHECK_STR(fb_json_get_string(s0, "device"), "mlx5_1");
    int64_t slow = 0;
    CHECK(fb_json_get_int64(s0, "slow_links", &slow));
    CHECK_INT(slow, 3);
    /* node-c sends to node-a and node-d and receives from node-b: both its
     * paths are slow, named together. */
    json_object *paths = get(s0, "paths");
    CHECK_INT(json_object_array_length(paths), 2);
    CHECK_STR(json_object_get_string(json_object_array_get_idx(paths, 0)), "send");
    int64_t n_send = 0;
    CHECK(fb_json_get_int64(get(s0, "send"), "links", &n_send));
    CHECK_INT(n_send, 2);
    /* The matrix shows the slowest link per host pair, rows sending: node-c
     * writes to node-a (an even distance), node-a to node-b. */
    json_object *rows = get(get(d, "matrix"), "avg_Gbps");
    CHECK_NEAR(json_object_get_double(json_object_array_get_idx(json_object_array_get_idx(rows, 2), 0)), 181.0, 1e-6);
    CHECK_NEAR(json_object_get_double(json_object_array_get_idx(json_object_array_get_idx(rows, 0), 1)), 392.0, 1e-6);
    CHECK(json_object_get_type(json_object_array_get_idx(json_object_array_get_idx(rows, 1), 0)) == json_type_null);
    /* 4 nodes: every endpoint sends and receives somewhere. */
    CHECK_INT(json_object_array_length(get(get(d, "summary"), "paths_unmeasured")), 0);
    int64_t flagged = 0;
    CHECK(fb_json_get_int64(get(d, "summary"), "flagged", &flagged));
    CHECK_INT(flagged, 3);
    const char *dump = getenv("FB_PROBE_DUMP");
    if (dump != NULL) {
        char path[1024];
        struct fb_err err = {0};
        snprintf(path, sizeof path, "%s/rdma-fleet.json", dump);
        CHECK_INT(fb_json_write_atomic(path, d, &err), FB_OK);
    }
    json_object_put(d);
    probe_results_free(&f.r);
    probe_schedule_free(&f.s);
}

static void test_text_names_host_and_hca(void)
{
    static struct fleet f;
    build(&f);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    probe_print_header(out, &f.r);
    for (int i = 0; i < f.r.nrows; i++)
        probe_print_row(out, &f.r, &f.r.rows[i]);
    probe_print_summary(out, &f.r);
    fclose(out);
    CHECK_CONTAINS(text, "rdma all-pairs bandwidth, 8 ranks on 4 nodes, 12 links in 3 rounds");
    CHECK_CONTAINS(text, "3 RoCE v2 ::ffff:10.0.2.1 auto");
    CHECK_CONTAINS(text, "gpu 1 0000:19:00.0 dmabuf");
    CHECK_CONTAINS(text, "# SLOW node-c:mlx5_1[5] -> node-a:mlx5_1[1] at 8M: 181.00 Gb/s, 45% of the line rate (400.00 Gb/s)");
    CHECK_CONTAINS(text, "# SUSPECT node-c:mlx5_1[5] (host node-c, device mlx5_1): send path slow (2 of 2 links from it at 0.45x the line rate)");
    CHECK_CONTAINS(text, "# SUSPECT node-c:mlx5_1[5] (host node-c, device mlx5_1): receive path slow (1 of 1 link to it at 0.45x the line rate)");
    CHECK_CONTAINS(text, "# paths: every endpoint's send and receive path measured");
    CHECK_CONTAINS(text, "# host matrix at 8M");
    CHECK_CONTAINS(text, "392.00");
    free(text);
    probe_results_free(&f.r);
    probe_schedule_free(&f.s);
}

static void test_fault_is_recorded(void)
{
    static struct fleet f;
    build(&f);
    probe_results_fault(&f.r, FB_ERR_TIMEOUT, "rank 5 (node-c) did not answer", 5);
    json_object *d = probe_results_json(&f.r, 0);
    bool complete = true;
    CHECK(fb_json_get_bool(d, "complete", &complete));
    CHECK(!complete);
    json_object *fault = get(d, "fault");
    CHECK_STR(fb_json_get_string(fault, "status"), "timeout");
    CHECK_STR(fb_json_get_string(fault, "host"), "node-c");
    int64_t code = 0;
    CHECK(fb_json_get_int64(fault, "exit_code", &code));
    CHECK_INT(code, 8);
    json_object_put(d);
    probe_results_free(&f.r);
    probe_schedule_free(&f.s);
}

static void test_cluster_label_is_path_safe(void)
{
    char out[64];
    fb_cluster_label("gke a3/mega", "h0", out, sizeof out);
    CHECK_STR(out, "gke%20a3%2Fmega");
    unsetenv("FABRIC_CLUSTER");
    fb_cluster_label(NULL, "node-a", out, sizeof out);
    CHECK_STR(out, "node-a");
    setenv("FABRIC_CLUSTER", "oci-h100", 1);
    fb_cluster_label(NULL, "node-a", out, sizeof out);
    CHECK_STR(out, "oci-h100");
    unsetenv("FABRIC_CLUSTER");
}

int main(void)
{
    RUN(test_document_carries_units_and_facts);
    RUN(test_slow_nic_is_flagged_and_suspected);
    RUN(test_text_names_host_and_hca);
    RUN(test_fault_is_recorded);
    RUN(test_cluster_label_is_path_safe);
    return fbt_done();
}
