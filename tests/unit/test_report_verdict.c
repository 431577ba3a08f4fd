/* Verdict rules, each reachable and right at its boundaries: exactly at the
 * floor, 10 % under, at and under the FAIL line, the TCP fallback with
 * numbers that would pass, wrong results, an unfinished run. */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "report_fixture.h"
#include "report/profile_match.h"
#include "report/verdict.h"

#define G16 (16ULL << 30)

static struct fb_profiles shipped;

static enum fb_status judge_doc(json_object *doc, const char *profile, struct fb_verdict *v, struct fb_err *err)
{
    struct fb_result r;
    enum fb_status st = result_of(doc, &r, err);
    if (st != FB_OK)
        return st;
    st = fb_verdict_judge(&r, &shipped, profile, v, err);
    fb_result_free(&r);
    return st;
}

/* The GKE TCPXO fixture with busBW at 16G set to `at16g` (in-place a bit lower). */
static enum fb_status judge_at_16g(double at16g, struct fb_verdict *v)
{
    json_object *doc = fixture_doc("gke-tcpxo-allreduce.json");
    set_busbw(doc, G16, at16g, at16g * 0.99);
    struct fb_err err = {0};
    enum fb_status st = judge_doc(doc, NULL, v, &err);
    if (st != FB_OK)
        printf("# judge failed: %s\n", err.msg);
    return st;
}

static void test_pass_at_typical(void)
{
    struct fb_verdict v;
    CHECK_INT(judge_at_16g(342.0, &v), FB_OK);
    CHECK_INT(v.code, FB_OK);
    CHECK_STR(v.name, "PASS");
    CHECK_STR(v.profile->name, "gke-a3-mega-tcpxo");
    CHECK(v.auto_picked);
    CHECK_INT(v.measured_bytes, G16);
    CHECK_NEAR(v.measured, 342.0, 1e-12);
    CHECK_NEAR(v.ratio, 342.0 / 340.0, 1e-12);
    CHECK_CONTAINS(fb_str_get(&v.reasons), "busBW 342.00 GB/s at 16G");
    CHECK_CONTAINS(fb_str_get(&v.reasons), "NET/FasTrak");
    fb_verdict_free(&v);
}

static void test_exactly_at_the_floor_passes(void)
{
    struct fb_verdict v;
    CHECK_INT(judge_at_16g(300.0, &v), FB_OK);
    CHECK_STR(v.name, "PASS");
    fb_verdict_free(&v);
    CHECK_INT(judge_at_16g(299.99, &v), FB_OK);
    CHECK_STR(v.name, "DEGRADED");
    CHECK_INT(v.code, FB_VERDICT_DEGRADED);
    fb_verdict_free(&v);
}

static void test_ten_percent_under_is_degraded(void)
{
    struct fb_verdict v;
    CHECK_INT(judge_at_16g(270.0, &v), FB_OK);
    CHECK_STR(v.name, "DEGRADED");
    CHECK_CONTAINS(fb_str_get(&v.reasons), "below the floor");
    fb_verdict_free(&v);
}

static void test_far_below_is_fail(void)
{
    struct fb_verdict v;
    /* The FAIL line is half the floor unless the profile says otherwise. */
    CHECK_INT(judge_at_16g(150.0, &v), FB_OK);
    CHECK_STR(v.name, "DEGRADED");
    fb_verdict_free(&v);
    CHECK_INT(judge_at_16g(149.9, &v), FB_OK);
    CHECK_STR(v.name, "FAIL");
    CHECK_INT(v.code, FB_VERDICT_FAIL);
    CHECK_CONTAINS(fb_str_get(&v.reasons), "far below");
    fb_verdict_free(&v);
}

static void test_socket_is_fallback_whatever_the_numbers(void)
{
    /* NET/Socket between nodes with numbers that would PASS. */
    json_object *doc = fixture_doc("gke-socket-allreduce.json");
    set_busbw(doc, G16, 345.0, 344.0);
    struct fb_verdict v;
    struct fb_err err = {0};
    CHECK_INT(judge_doc(doc, NULL, &v, &err), FB_OK);
    CHECK_STR(v.name, "TCP-FALLBACK");
    CHECK_INT(v.code, FB_VERDICT_TCP_FALLBACK);
    CHECK_INT(v.socket_ranks, 16);
    CHECK_CONTAINS(fb_str_get(&v.reasons), "whatever its numbers say");
    CHECK_CONTAINS(fb_str_get(&v.reasons), "interfaces eth0");
    /* The environment asked for FasTrak: the TCPXO causes are the ones listed. */
    CHECK_STR(v.profile->name, "gke-a3-mega-tcpxo");
    CHECK_CONTAINS(fb_str_get(&v.reasons), "tcpxo-daemon");
    fb_verdict_free(&v);
}

static void test_socket_on_one_node_is_not_fallback(void)
{
    json_object *doc = fixture_doc("h100-nvls-allreduce.json");
    json_object *t = json_object_object_get(doc, "transport");
    set_key(t, "net", json_object_new_string("Socket"));
    struct fb_verdict v;
    struct fb_err err = {0};
    CHECK_INT(judge_doc(doc, NULL, &v, &err), FB_OK);
    CHECK(strcmp(v.name, "TCP-FALLBACK") != 0);
    fb_verdict_free(&v);
}

static void test_wrong_results_fail_first(void)
{
    json_object *doc = fixture_doc("gke-socket-allreduce.json");
    json_object *row = json_object_array_get_idx(json_object_object_get(doc, "rows"), 5);
    set_key(json_object_object_get(row, "in_place"), "wrong", json_object_new_int(7));
    struct fb_verdict v;
    struct fb_err err = {0};
    CHECK_INT(judge_doc(doc, NULL, &v, &err), FB_OK);
    CHECK_STR(v.name, "FAIL");
    CHECK_CONTAINS(fb_str_get(&v.reasons), "7 wrong elements");
    /* The fallback is still reported beside it, with what to look at. */
    CHECK(v.fallback);
    CHECK_CONTAINS(fb_str_get(&v.reasons), "TCP fallback");
    CHECK_CONTAINS(fb_str_get(&v.reasons), "Look at:");
    fb_verdict_free(&v);
}

static void test_unfinished_run_is_incomplete(void)
{
    struct fb_verdict v;
    struct fb_err err = {0};
    CHECK_INT(judge_doc(fixture_doc("gke-tcpxo-incomplete.json"), NULL, &v, &err), FB_OK);
    CHECK_STR(v.name, "INCOMPLETE");
    CHECK_INT(v.code, FB_VERDICT_INCOMPLETE);
    CHECK_CONTAINS(fb_str_get(&v.reasons), "22 rows of 25 planned");
    CHECK_CONTAINS(fb_str_get(&v.reasons), "timeout on gke-a3-demo-0");
    /* It never reached the profile's size: compared at its largest. */
    CHECK_INT(v.measured_bytes, 2ULL << 30);
    CHECK_CONTAINS(fb_str_get(&v.reasons), "rerun with -e 16G");
    fb_verdict_free(&v);
    /* complete=false alone is enough. */
    json_object *doc = fixture_doc("gke-tcpxo-allreduce.json");
    set_key(doc, "complete", json_object_new_boolean(0));
    CHECK_INT(judge_doc(doc, NULL, &v, &err), FB_OK);
    CHECK_STR(v.name, "INCOMPLETE");
    fb_verdict_free(&v);
}

static void test_early_stop_is_not_incomplete(void)
{
    /* Stopped at 64M on NET/Socket: the fallback, not an unfinished run. */
    struct fb_verdict v;
    struct fb_err err = {0};
    CHECK_INT(judge_doc(fixture_doc("gke-socket-earlystop.json"), NULL, &v, &err), FB_OK);
    CHECK_STR(v.name, "TCP-FALLBACK");
    CHECK_CONTAINS(fb_str_get(&v.reasons), "stopped the sweep after 64M");
    CHECK_CONTAINS(fb_str_get(&v.reasons), "8 larger sizes not measured");
    CHECK(strstr(fb_str_get(&v.reasons), "did not finish") == NULL);
    fb_verdict_free(&v);
    /* Stopped on the busBW band alone (no log): physics says TCP. */
    CHECK_INT(judge_doc(fixture_doc("gke-band-earlystop.json"), NULL, &v, &err), FB_OK);
    CHECK_STR(v.name, "TCP-FALLBACK");
    CHECK_CONTAINS(fb_str_get(&v.reasons), "under the 8 GB/s fallback band");
    CHECK_CONTAINS(fb_str_get(&v.reasons), "inside the TCP-fallback band (<= 12 GB/s");
    fb_verdict_free(&v);
    /* Without the early_stop record the same short sweep is unfinished. */
    json_object *doc = fixture_doc("gke-band-earlystop.json");
    json_object_object_add(doc, "early_stop", NULL);
    CHECK_INT(judge_doc(doc, NULL, &v, &err), FB_OK);
    CHECK_STR(v.name, "INCOMPLETE");
    fb_verdict_free(&v);
}

/* A sweep that stops far short of the profile's size is not comparable:
 * neither PASS nor FAIL. Eight times short it is still judged. */
static void test_far_short_sweep_is_not_comparable(void)
{
    static const struct {
        unsigned long long keep_up_to;
        const char *name;
    } cases[] = {{256ULL << 20, "INCOMPLETE"}, {2ULL << 30, "PASS"}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        json_object *doc = fixture_doc("gke-tcpxo-allreduce.json");
        json_object *rows = json_object_object_get(doc, "rows"), *kept = json_object_new_array();
        for (size_t i = 0; i < json_object_array_length(rows); i++) {
            json_object *row = json_object_array_get_idx(rows, i);
            if ((unsigned long long)json_object_get_int64(json_object_object_get(row, "bytes")) <= cases[c].keep_up_to)
                json_object_array_add(kept, json_object_get(row));
        }
        json_object_object_add(doc, "rows", kept);
        struct fb_verdict v;
        struct fb_err err = {0};
        CHECK_INT(judge_doc(doc, NULL, &v, &err), FB_OK);
        if (strcmp(cases[c].name, "INCOMPLETE") == 0) {
            CHECK_STR(v.name, "INCOMPLETE");
            CHECK_CONTAINS(fb_str_get(&v.reasons), "Not comparable: the sweep stops 64x short of the profile's size");
        } else {
            CHECK(strstr(fb_str_get(&v.reasons), "Not comparable") == NULL);
        }
        fb_verdict_free(&v);
    }
}

static void test_profile_choice(void)
{
    struct fb_verdict v;
    struct fb_err err = {0};
    /* NVLS in the log picks the NVLS profile over the ring one. */
    CHECK_INT(judge_doc(fixture_doc("h100-nvls-allreduce.json"), NULL, &v, &err), FB_OK);
    CHECK_STR(v.profile->name, "h100-8gpu-nvls");
    fb_verdict_free(&v);
    json_object *doc = fixture_doc("h100-nvls-allreduce.json");
    set_key(doc, "transport", NULL);
    CHECK_INT(judge_doc(doc, NULL, &v, &err), FB_OK);
    CHECK_STR(v.profile->name, "h100-8gpu-nvlink");
    CHECK_STR(v.name, "PASS");
    fb_verdict_free(&v);
    /* IB without GPUDirect: the right profile, and the reason said. */
    CHECK_INT(judge_doc(fixture_doc("ib-nogdr-allreduce.json"), NULL, &v, &err), FB_OK);
    CHECK_STR(v.profile->name, "ib-ndr400-8nic");
    CHECK_STR(v.name, "DEGRADED");
    CHECK_CONTAINS(fb_str_get(&v.reasons), "nvidia_peermem");
    fb_verdict_free(&v);
    /* A named profile wins, and a misfit is noted. */
    CHECK_INT(judge_doc(fixture_doc("ib-nogdr-allreduce.json"), "gke-a3-mega-tcpxo", &v, &err), FB_OK);
    CHECK_STR(v.profile->name, "gke-a3-mega-tcpxo");
    CHECK(!v.auto_picked);
    CHECK_CONTAINS(fb_str_get(&v.reasons), "may not describe this run");
    fb_verdict_free(&v);
}

static void test_profile_errors(void)
{
    struct fb_verdict v;
    struct fb_err err = {0};
    CHECK_INT(judge_doc(fixture_doc("gke-tcpxo-allreduce.json"), "no-such", &v, &err), FB_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "unknown profile 'no-such'");
    CHECK_CONTAINS(err.msg, "gke-a3-mega-tcpxo");
    fb_err_clear(&err);
    CHECK_INT(judge_doc(fixture_doc("gke-tcpxo-allreduce.json"), "tcp-fallback", &v, &err), FB_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "describes a failure");
    fb_err_clear(&err);
    CHECK_INT(judge_doc(fixture_doc("gke-tcpxo-allgather.json"), "h100-8gpu-nvls", &v, &err), FB_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "no figures for all_gather");
    fb_err_clear(&err);
    /* A complete, correct run no profile describes: the user must name one. */
    CHECK_INT(judge_doc(fixture_doc("vm-mpi-allreduce-4.json"), NULL, &v, &err), FB_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "no reference profile matches");
    CHECK_CONTAINS(err.msg, "fabric-report baseline");
    CHECK(strchr(err.msg, '\n') == NULL);
}

static void test_fallback_without_profile_still_judged(void)
{
    json_object *doc = fixture_doc("gke-socket-allreduce.json");
    set_key(doc, "env", json_object_new_object());
    struct fb_verdict v;
    struct fb_err err = {0};
    CHECK_INT(judge_doc(doc, NULL, &v, &err), FB_OK);
    CHECK_STR(v.name, "TCP-FALLBACK");
    CHECK(v.profile == NULL);
    CHECK_CONTAINS(fb_str_get(&v.reasons), "fabric-doctor");
    fb_verdict_free(&v);
}

/* Physics first: no log, numbers in the TCP band across nodes. */
static void test_unlogged_multinode_run_that_looks_like_tcp(void)
{
    json_object *doc = fixture_doc("gke-socket-allreduce.json");
    set_key(doc, "transport", NULL);
    struct fb_verdict v;
    struct fb_err err = {0};
    CHECK_INT(judge_doc(doc, NULL, &v, &err), FB_OK);
    CHECK_STR(v.name, "TCP-FALLBACK");
    CHECK_CONTAINS(fb_str_get(&v.reasons), "busBW peaks at 3.95 GB/s (at 16G) across nodes, inside the TCP-fallback band");
    CHECK_CONTAINS(fb_str_get(&v.reasons), "--nccl-log");
    CHECK_CONTAINS(fb_str_get(&v.reasons), "tcpxo-daemon"); /* what it was meant to use */
    fb_verdict_free(&v);
}

static void test_json_and_text_forms(void)
{
    json_object *doc = fixture_doc("gke-tcpxo-allreduce.json");
    struct fb_result r;
    struct fb_err err = {0};
    CHECK_INT(result_of(doc, &r, &err), FB_OK);
    struct fb_verdict v;
    CHECK_INT(fb_verdict_judge(&r, &shipped, NULL, &v, &err), FB_OK);
    json_object *j = fb_verdict_json(&v, &r);
    CHECK_STR(fb_json_get_string(j, "verdict"), "PASS");
    CHECK_STR(fb_json_get_string(j, "schema"), "fabric-bench.report-check");
    int64_t code = -1;
    CHECK(fb_json_get_int64(j, "exit_code", &code));
    CHECK_INT(code, 0);
    json_object *prof = json_object_object_get(j, "profile");
    CHECK_STR(fb_json_get_string(prof, "picked"), "auto");
    CHECK_CONTAINS(fb_json_get_string(prof, "source"), "AI Cluster Runtime");
    json_object *sum = json_object_object_get(j, "summary");
    double avg1m = 0;
    CHECK(fb_json_get_double(sum, "avg_busbw_ge_1MiB_GBps", &avg1m));
    CHECK(avg1m > 100);
    struct fb_str text = {0};
    fb_verdict_text(&v, &r, &text);
    CHECK(fb_starts_with(fb_str_get(&text), "PASS: all_reduce on gke-a3-demo, 16 ranks on 2 nodes"));
    CHECK_CONTAINS(fb_str_get(&text), "average over sizes >= 1 MiB");
    CHECK_CONTAINS(fb_str_get(&text), "nccl-tests average over all sizes");
    fb_str_free(&text);
    json_object_put(j);
    fb_verdict_free(&v);
    fb_result_free(&r);
}

#define G8 (8ULL << 30)

static void set_gpu(json_object *doc, const char *name)
{
    json_object *devs = json_object_object_get(doc, "devices");
    for (size_t i = 0; i < json_object_array_length(devs); i++)
        set_key(json_object_array_get_idx(devs, i), "name", json_object_new_string(name));
}

/* The TCPXO pair with its log and environment gone: nothing says which
 * fabric it was meant to use. */
static json_object *unlabelled_pair(void)
{
    json_object *doc = fixture_doc("gke-tcpxo-allreduce.json");
    set_key(doc, "env", json_object_new_object());
    set_key(doc, "transport", NULL);
    return doc;
}

static enum fb_status judge_ask(json_object *doc, const struct fb_verdict_ask *ask, struct fb_verdict *v)
{
    struct fb_result r;
    struct fb_err err = {0};
    enum fb_status st = result_of(doc, &r, &err);
    if (st == FB_OK)
        st = fb_verdict_judge_with(&r, &shipped, ask, v, &err);
    if (st != FB_OK)
        printf("# judge failed: %s\n", err.msg);
    fb_result_free(&r);
    return st;
}

/* A GPU no profile names, across nodes, far above the TCP band: the fabric
 * is in use; that is a PASS that checked no figure, and says so. */
static void test_fabric_in_use_without_profile(void)
{
    json_object *doc = unlabelled_pair();
    set_gpu(doc, "NVIDIA GB200");
    struct fb_verdict v;
    const struct fb_verdict_ask ask = {0};
    CHECK_INT(judge_ask(doc, &ask, &v), FB_OK);
    CHECK_STR(v.name, "PASS");
    CHECK(v.profile == NULL);
    CHECK_CONTAINS(fb_str_get(&v.reasons), "Fabric in use: busBW peaks at");
    CHECK_CONTAINS(fb_str_get(&v.reasons), "no figure was checked");
    fb_verdict_free(&v);
    /* Nodes not shown, more ranks than a node holds: assumed to span nodes. */
    doc = unlabelled_pair();
    set_gpu(doc, "NVIDIA GB200");
    json_object *topo = json_object_object_get(doc, "topology");
    set_key(topo, "nodes", NULL);
    set_key(topo, "ranks_per_node", NULL);
    set_key(doc, "devices", json_object_new_array());
    CHECK_INT(judge_ask(doc, &ask, &v), FB_OK);
    CHECK_STR(v.name, "PASS");
    CHECK_CONTAINS(fb_str_get(&v.reasons), "(assumed: more than 8 ranks)");
    CHECK_INT(v.nodes, 0);
    fb_verdict_free(&v);
}

/* The same pair with its GPU known: the H100 multi-node profiles are its
 * family. The most lenient is taken, what was assumed is said, and a run
 * far below it is DEGRADED, never FAIL, since the assumption may be wrong. */
static void test_family_profile_is_assumed(void)
{
    struct fb_verdict v;
    const struct fb_verdict_ask ask = {0};
    CHECK_INT(judge_ask(unlabelled_pair(), &ask, &v), FB_OK);
    CHECK_STR(v.name, "PASS");
    CHECK(v.family);
    CHECK(v.profile != NULL && v.expect->floor == 300.0);
    CHECK_CONTAINS(v.profile_how, "family: GPU H100; assumed network");
    CHECK_CONTAINS(v.profile_how, "others: gke-a3-mega-tcpxo"); /* the other candidate, named */
    /* The network was assumed, and said so: no note that it is not OFI. */
    CHECK(strstr(fb_str_get(&v.reasons), "may not describe") == NULL);
    fb_verdict_free(&v);
    json_object *doc = unlabelled_pair();
    set_busbw(doc, G16, 100.0, 99.0);
    CHECK_INT(judge_ask(doc, &ask, &v), FB_OK);
    CHECK_STR(v.name, "DEGRADED");
    CHECK_CONTAINS(fb_str_get(&v.reasons), "DEGRADED, not FAIL: the profile was assumed");
    fb_verdict_free(&v);
    /* A shape the family does not have (4 GPUs a node) gets no family. */
    doc = unlabelled_pair();
    set_key(json_object_object_get(doc, "topology"), "ranks_per_node", json_object_new_int(4));
    set_key(json_object_object_get(doc, "topology"), "nodes", json_object_new_int(4));
    CHECK_INT(judge_ask(doc, &ask, &v), FB_OK);
    CHECK(!v.family);
    /* Physics instead: 340 GB/s is more than the NICs of 4 H100 of any
     * family carry by a ring (4 x 400 Gb/s = 200 GB/s), so not a fabric
     * figure, and a PASS. */
    CHECK_STR(v.name, "PASS");
    CHECK(v.by_physics);
    CHECK_CONTAINS(fb_str_get(&v.reasons), "not a figure of the fabric");
    CHECK_CONTAINS(fb_str_get(&v.reasons), "NCCL_ALGO=Ring");
    fb_verdict_free(&v);
}

/* TCP-band numbers while NCCL's channels went over IB: the fabric is there
 * but slow, which is not the fallback. */
static void test_band_with_rdma_channels_is_degraded(void)
{
    json_object *doc = fixture_doc("gke-socket-allreduce.json");
    json_object *t = json_object_object_get(doc, "transport");
    set_key(t, "net", json_object_new_string("IB"));
    set_key(t, "gdr", json_object_new_boolean(1));
    set_key(t, "per_rank", json_object_new_array());
    struct fb_verdict v;
    const struct fb_verdict_ask ask = {0};
    CHECK_INT(judge_ask(doc, &ask, &v), FB_OK);
    CHECK_STR(v.name, "DEGRADED");
    CHECK(!v.fallback);
    CHECK_CONTAINS(fb_str_get(&v.reasons), "NCCL's channels went over NET/IB, yet busBW peaks at");
    fb_verdict_free(&v);
}

/* Two nodes against one, per GPU: the family's single-node profile, or a
 * single-node run given; under half of it is DEGRADED. */
static void test_single_node_figure(void)
{
    struct fb_verdict v;
    const struct fb_verdict_ask plain = {0};
    CHECK_INT(judge_ask(fixture_doc("gke-tcpxo-allreduce.json"), &plain, &v), FB_OK);
    CHECK_STR(v.name, "PASS");
    CHECK_CONTAINS(fb_str_get(&v.reasons), "of its single-node figure (");
    CHECK_CONTAINS(fb_str_get(&v.reasons), "vs 370.00 GB/s at 8G, profile h100-8gpu-nvlink)");
    fb_verdict_free(&v);
    json_object *one_doc = fixture_doc("h100-nvls-allreduce.json");
    set_busbw(one_doc, G8, 1000.0, 1000.0);
    struct fb_result one;
    struct fb_err err = {0};
    CHECK_INT(result_of(one_doc, &one, &err), FB_OK);
    const struct fb_verdict_ask ask = {.single_node = &one};
    CHECK_INT(judge_ask(fixture_doc("gke-tcpxo-allreduce.json"), &ask, &v), FB_OK);
    CHECK_STR(v.name, "DEGRADED");
    CHECK_CONTAINS(fb_str_get(&v.reasons), "vs 1000.00 GB/s at 8G");
    CHECK_CONTAINS(fb_str_get(&v.reasons), "far slower than the links inside one");
    fb_verdict_free(&v);
    fb_result_free(&one);
}

/* IB without GPUDirect RDMA caps a PASS at DEGRADED, quoting the line. */
static void test_ib_without_gdr_names_the_line(void)
{
    json_object *doc = fixture_doc("ib-nogdr-allreduce.json");
    set_busbw(doc, G8, 400.0, 400.0);
    json_object *q = json_object_new_object();
    set_key(q, "text", json_object_new_string("Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0"));
    set_key(q, "where", json_object_new_string("nccl.ib-lab-0.7:42"));
    set_key(json_object_object_get(doc, "transport"), "no_gdr_channel", q);
    struct fb_verdict v;
    const struct fb_verdict_ask ask = {0};
    CHECK_INT(judge_ask(doc, &ask, &v), FB_OK);
    CHECK_STR(v.name, "DEGRADED");
    CHECK_CONTAINS(fb_str_get(&v.reasons), "without GPUDirect RDMA (nccl.ib-lab-0.7:42: \"Channel 00/0");
    fb_verdict_free(&v);
}

/* An nccl-tests excerpt as published: the results table and NCCL's network
 * lines kept, the device lines elided ("..."), so the node count is unknown.
 * Built from the 2-node Socket fixture: 8 ranks, no hosts or devices, one
 * host quoted by the log, busBW at every size >= `from` set to `gbps`. */
static json_object *excerpt_without_devices(const char *net, unsigned long long from, double gbps)
{
    json_object *doc = fixture_doc("gke-socket-allreduce.json");
    json_object *topo = json_object_object_get(doc, "topology");
    set_key(topo, "ranks", json_object_new_int(8));
    set_key(topo, "nodes", NULL);
    set_key(topo, "ranks_per_node", NULL);
    set_key(doc, "hosts", json_object_new_array());
    set_key(doc, "devices", json_object_new_array());
    set_key(doc, "env", json_object_new_object());
    json_object *t = json_object_object_get(doc, "transport");
    json_object *quoted = json_object_get(json_object_array_get_idx(json_object_object_get(t, "per_rank"), 0));
    set_key(quoted, "net", json_object_new_string(net));
    json_object *per_rank = json_object_new_array();
    json_object_array_add(per_rank, quoted);
    set_key(t, "per_rank", per_rank);
    set_key(t, "net", json_object_new_string(net));
    json_object *rows = json_object_object_get(doc, "rows");
    for (size_t i = 0; i < json_object_array_length(rows); i++) {
        json_object *row = json_object_array_get_idx(rows, i);
        unsigned long long bytes = (unsigned long long)json_object_get_int64(json_object_object_get(row, "bytes"));
        if (bytes >= from)
            set_busbw(doc, bytes, gbps, gbps * 0.99);
    }
    return doc;
}

#define M64 (64ULL << 20)

/* Inside the band (<= 3 x 4 GB/s at >= 64M) with the nodes unknown: both
 * readings are unhealthy, so the band's verdict is given and both are said. */
static void test_excerpt_without_device_lines_socket(void)
{
    static const double in_band[] = {3.95, 12.0};
    for (size_t c = 0; c < sizeof in_band / sizeof *in_band; c++) {
        struct fb_verdict v;
        const struct fb_verdict_ask ask = {0};
        CHECK_INT(judge_ask(excerpt_without_devices("Socket", M64, in_band[c]), &ask, &v), FB_OK);
        CHECK_STR(v.name, "TCP-FALLBACK");
        CHECK_INT(v.nodes, 0);
        CHECK(v.fallback);
        CHECK_INT(v.measured_bytes, M64);
        CHECK_CONTAINS(fb_str_get(&v.reasons), "with NCCL on NET/Socket");
        CHECK_CONTAINS(fb_str_get(&v.reasons), "The output does not show the nodes");
        CHECK_CONTAINS(fb_str_get(&v.reasons), "across nodes it is the TCP fallback");
        CHECK_CONTAINS(fb_str_get(&v.reasons), "on one node, GPUs that move no more than TCP sockets have lost their own links");
        CHECK_CONTAINS(fb_str_get(&v.reasons), "Look at:");
        fb_verdict_free(&v);
    }
}

static void test_excerpt_without_device_lines_rdma(void)
{
    static const char *const rdma[] = {"IB", "OFI", "FasTrak", "GPUDirectTCPX"};
    for (size_t c = 0; c < sizeof rdma / sizeof *rdma; c++) {
        struct fb_verdict v;
        const struct fb_verdict_ask ask = {0};
        CHECK_INT(judge_ask(excerpt_without_devices(rdma[c], M64, 6.0), &ask, &v), FB_OK);
        CHECK_STR(v.name, "DEGRADED");
        CHECK(!v.fallback);
        CHECK_CONTAINS(fb_str_get(&v.reasons), "across nodes the fabric is in use but carries no more than TCP would");
        CHECK_CONTAINS(fb_str_get(&v.reasons), "on one node, GPUs");
        fb_verdict_free(&v);
    }
}

/* What the rule does not cover: above the band (fast on one node proves
 * nothing), a sweep that stops below 64M, and an excerpt with no network
 * line. None of them can be judged without a profile: exit 2, nodes said
 * to be unknown. */
static void test_excerpt_without_device_lines_not_judged(void)
{
    struct fb_verdict v;
    struct fb_err err = {0};
    CHECK_INT(judge_doc(excerpt_without_devices("Socket", M64, 12.01), NULL, &v, &err), FB_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "nodes not shown");
    fb_err_clear(&err);
    json_object *doc = excerpt_without_devices("Socket", M64, 3.9);
    json_object *rows = json_object_object_get(doc, "rows"), *kept = json_object_new_array();
    for (size_t i = 0; i < json_object_array_length(rows); i++) {
        json_object *row = json_object_array_get_idx(rows, i);
        if ((unsigned long long)json_object_get_int64(json_object_object_get(row, "bytes")) < M64)
            json_object_array_add(kept, json_object_get(row));
    }
    set_key(doc, "rows", kept);
    CHECK_INT(judge_doc(doc, NULL, &v, &err), FB_ERR_USAGE);
    fb_err_clear(&err);
    doc = excerpt_without_devices("Socket", M64, 3.9);
    set_key(doc, "transport", NULL);
    CHECK_INT(judge_doc(doc, NULL, &v, &err), FB_ERR_USAGE);
    fb_err_clear(&err);
}

/* One host in the log is one node only when the log shows every rank;
 * two hosts are several nodes however few ranks they show. */
static void test_log_hosts_as_nodes(void)
{
    struct fb_verdict v;
    struct fb_err err = {0};
    json_object *doc = excerpt_without_devices("Socket", M64, 3.9);
    set_key(json_object_object_get(doc, "topology"), "ranks", json_object_new_int(1));
    set_busbw(doc, 1ULL << 20, 0.5, 0.5); /* one rank with a figure: not the one-rank rule */
    CHECK_INT(judge_doc(doc, NULL, &v, &err), FB_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "1 node,");
    fb_err_clear(&err);
    doc = excerpt_without_devices("Socket", M64, 3.9);
    json_object *per_rank = json_object_object_get(json_object_object_get(doc, "transport"), "per_rank");
    json_object *second = json_object_new_object();
    set_key(second, "host", json_object_new_string("gke-a3-broken-1"));
    set_key(second, "net", json_object_new_string("Socket"));
    json_object_array_add(per_rank, second);
    CHECK_INT(judge_doc(doc, NULL, &v, &err), FB_OK);
    CHECK_STR(v.name, "TCP-FALLBACK");
    CHECK_INT(v.nodes, 2);
    CHECK_CONTAINS(fb_str_get(&v.reasons), "a multi-node run on sockets is the TCP fallback");
    fb_verdict_free(&v);
}

int main(void)
{
    const char *dirs[] = {REFERENCE};
    struct fb_err err = {0};
    if (fb_profiles_load(dirs, 1, &shipped, &err) != FB_OK) {
        printf("not ok - load_reference_profiles: %s\n", err.msg);
        return 1;
    }
    RUN(test_pass_at_typical);
    RUN(test_exactly_at_the_floor_passes);
    RUN(test_ten_percent_under_is_degraded);
    RUN(test_far_below_is_fail);
    RUN(test_socket_is_fallback_whatever_the_numbers);
    RUN(test_socket_on_one_node_is_not_fallback);
    RUN(test_wrong_results_fail_first);
    RUN(test_unfinished_run_is_incomplete);
    RUN(test_early_stop_is_not_incomplete);
    RUN(test_far_short_sweep_is_not_comparable);
    RUN(test_profile_choice);
    RUN(test_profile_errors);
    RUN(test_fallback_without_profile_still_judged);
    RUN(test_unlogged_multinode_run_that_looks_like_tcp);
    RUN(test_json_and_text_forms);
    RUN(test_fabric_in_use_without_profile);
    RUN(test_family_profile_is_assumed);
    RUN(test_band_with_rdma_channels_is_degraded);
    RUN(test_single_node_figure);
    RUN(test_ib_without_gdr_names_the_line);
    RUN(test_excerpt_without_device_lines_socket);
    RUN(test_excerpt_without_device_lines_rdma);
    RUN(test_excerpt_without_device_lines_not_judged);
    RUN(test_log_hosts_as_nodes);
    fb_profiles_free(&shipped);
    return fbt_done();
}
