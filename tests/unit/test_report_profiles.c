/* Reference profiles: the shipped data files, the parser's refusals, the
 * automatic pick, and a baseline that reads back and judges its own run. */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "report_fixture.h"
#include "report/profile_match.h"
#include "report/verdict.h"

static void test_shipped_profiles_load_and_cite_sources(void)
{
    const char *dirs[] = {REFERENCE};
    struct fb_profiles ps;
    struct fb_err err = {0};
    CHECK_INT(fb_profiles_load(dirs, 1, &ps, &err), FB_OK);
    /* The atlas: at least 25 target profiles, each citing its sources. */
    size_t targets = 0;
    for (size_t i = 0; i < ps.n; i++)
        targets += ps.p[i].target;
    CHECK(targets >= 25);
    const char *names[] = {"gke-a3-mega-tcpxo", "tcp-fallback", "h100-8gpu-nvls", "h100-8gpu-nvlink",
                           "h200-8gpu-nvlink", "ib-ndr400-8nic", "aws-p5-efa", "mi300x-8gpu-xgmi",
                           "mi325x-8gpu-xgmi", "mi355x-pollara", "gb200-nvl72-rack", "gke-a3-ultra",
                           "roce-400g-nic", "ib-write-bw-400g-gdr"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const struct fb_profile *p = fb_profile_find(&ps, names[i]);
        CHECK(p != NULL);
        if (p == NULL)
            continue;
        CHECK(strlen(p->source) > 10);
        CHECK(p->revision >= 1);
        CHECK(p->family[0] != '\0');
        for (int k = 0; k < p->nexpect; k++)
            CHECK(p->target ? p->expect[k].floor > 0 : p->expect[k].busbw > 0);
    }
    /* The figures of ANCHORS.md section 4, as data. */
    const struct fb_expect *e = fb_profile_expect(fb_profile_find(&ps, "gke-a3-mega-tcpxo"), "all_reduce");
    CHECK(e != NULL);
    CHECK_INT(e->at_bytes, 16ULL << 30);
    CHECK_NEAR(e->busbw, 340, 0);
    CHECK_NEAR(e->floor, 300, 0);
    CHECK_NEAR(e->fail_below, 150, 0);
    CHECK_NEAR(e->avg_busbw, 100, 0);
    e = fb_profile_expect(fb_profile_find(&ps, "gke-a3-mega-tcpxo"), "all_gather");
    CHECK_NEAR(e->busbw, 188, 0);
    CHECK_INT(e->at_bytes, 8ULL << 30);
    e = fb_profile_expect(fb_profile_find(&ps, "aws-p5-efa"), "all_reduce");
    CHECK_NEAR(e->busbw, 487.09, 0);
    CHECK_NEAR(e->floor, 300, 0);
    /* A family's NICs, one NIC's figures and a link's. */
    const struct fb_profile *p5 = fb_profile_find(&ps, "aws-p5-efa");
    CHECK_INT(p5->nics.per_node, 32);
    CHECK_NEAR(fb_profile_nic_per_gpu(p5), 400, 0);
    const struct fb_profile *nic = fb_profile_find(&ps, "roce-400g-nic");
    CHECK(nic->per_nic && nic->nics.per_node == 1 && nic->nics.gbps == 400);
    const struct fb_profile *link = fb_profile_find(&ps, "ib-write-bw-400g-gdr");
    CHECK(link->nexpect == 0 && link->nprobe == 1 && link->probe[0].gpu_memory);
    CHECK(!isnan(fb_profile_find(&ps, "mi300x-8gpu-xgmi")->intra_GBps));
    CHECK(!fb_profile_find(&ps, "tcp-fallback")->target);
    char names_buf[1024];
    fb_profiles_names(&ps, names_buf, sizeof names_buf);
    /* Targets first: a symptom is not what a user should pick. */
    CHECK(strstr(names_buf, "tcp-fallback") > strstr(names_buf, "ib-ndr400-8nic"));
    fb_profiles_free(&ps);
}

static json_object *profile_doc(void)
{
    json_object *doc = NULL;
    struct fb_err err = {0};
    fb_json_read_file(REFERENCE "/gke-a3-mega-tcpxo.json", &doc, &err);
    return doc;
}

static void refuse(const char *what, void (*edit)(json_object *), const char *needle)
{
    json_object *doc = profile_doc();
    edit(doc);
    struct fb_profile p;
    struct fb_err err = {0};
    enum fb_status st = fb_profile_parse(doc, "p.json", &p, &err);
    if (st != FB_ERR_INPUT || strstr(err.msg, needle) == NULL)
        printf("# case %s: %d \"%s\"\n", what, st, err.msg);
    CHECK_INT(st, FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, needle);
    CHECK_CONTAINS(err.msg, "p.json");
    json_object_put(doc);
}

static void no_sources(json_object *d) { json_object_object_del(d, "sources"); }
static void bad_name(json_object *d) { json_object_object_add(d, "name", json_object_new_string("a/b")); }
static void bad_role(json_object *d) { json_object_object_add(d, "role", json_object_new_string("maybe")); }
static void no_floor(json_object *d)
{
    json_object_object_del(json_object_object_get(json_object_object_get(d, "collectives"), "all_reduce"), "floor_GBps");
}
static void fail_above_floor(json_object *d)
{
    json_object_object_add(json_object_object_get(json_object_object_get(d, "collectives"), "all_reduce"),
                           "fail_below_GBps", json_object_new_double(301));
}
static void unknown_collective(json_object *d)
{
    json_object_object_add(json_object_object_get(d, "collectives"), "allreduce", json_object_new_object());
}
static void nodes_reversed(json_object *d)
{
    json_object *m = json_object_object_get(d, "match");
    json_object_object_add(m, "nodes_min", json_object_new_int(4));
    json_object_object_add(m, "nodes_max", json_object_new_int(2));
}
static void version_two(json_object *d) { json_object_object_add(d, "schema_version", json_object_new_int(2)); }

static void test_parser_refuses_bad_profiles(void)
{
    refuse("sources", no_sources, "sources");
    refuse("name", bad_name, "name \"a/b\"");
    refuse("role", bad_role, "role");
    refuse("floor", no_floor, "floor_GBps is missing");
    refuse("fail line", fail_above_floor, "fail_below_GBps is above floor_GBps");
    refuse("collective", unknown_collective, "collectives.allreduce");
    refuse("nodes", nodes_reversed, "nodes_min is above");
    refuse("version", version_two, "schema_version");
}

static void test_earlier_directories_override(void)
{
    /* A user directory holding a profile of the same name shadows the shipped one. */
    char dir[] = "/tmp/fbprof.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    json_object *doc = profile_doc();
    json_object_object_add(doc, "description", json_object_new_string("my own"));
    char path[256];
    snprintf(path, sizeof path, "%s/mine.json", dir);
    struct fb_err err = {0};
    CHECK_INT(fb_json_write_atomic(path, doc, &err), FB_OK);
    json_object_put(doc);
    const char *dirs[] = {dir, REFERENCE, "/nonexistent/dir"};
    struct fb_profiles ps;
    struct fb_profiles shipped;
    CHECK_INT(fb_profiles_load(dirs + 1, 1, &shipped, &err), FB_OK);
    CHECK_INT(fb_profiles_load(dirs, 3, &ps, &err), FB_OK);
    CHECK_INT(ps.n, shipped.n);
    fb_profiles_free(&shipped);
    CHECK_STR(fb_profile_find(&ps, "gke-a3-mega-tcpxo")->description, "my own");
    fb_profiles_free(&ps);
    /* A broken file on the path is an error naming it, not silently skipped. */
    FILE *f = fopen(path, "w");
    fputs("{\"schema\": \"fabric-bench.profile\"", f);
    fclose(f);
    CHECK_INT(fb_profiles_load(dirs, 3, &ps, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "mine.json");
    unlink(path);
    rmdir(dir);
}

static void test_intended_network_from_the_environment(void)
{
    struct {
        const char *key, *value, *net;
    } cases[] = {
        {"NCCL_FASTRAK_IFNAME", "eth1", "FasTrak"}, {"FI_PROVIDER", "efa", "OFI"},
        {"NCCL_IB_HCA", "=mlx5_0", "IB"}, {"NCCL_NET", "AWS Libfabric", "OFI"},
        {"NCCL_DEBUG", "INFO", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        json_object *doc = fixture_doc("vm-mpi-allreduce-4.json");
        json_object *env = json_object_new_object();
        json_object_object_add(env, cases[i].key, json_object_new_string(cases[i].value));
        set_key(doc, "env", env);
        struct fb_result r;
        struct fb_err err = {0};
        CHECK_INT(result_of(doc, &r, &err), FB_OK);
        const char *net = fb_intended_net(&r);
        if (cases[i].net == NULL)
            CHECK(net == NULL);
        else
            CHECK_STR(net, cases[i].net);
        fb_result_free(&r);
    }
}

static void test_baseline_round_trip(void)
{
    struct fb_result r;
    struct fb_err err = {0};
    CHECK_INT(fb_result_load(RESULTS "vm-mpi-allreduce-4.json", &r, &err), FB_OK);
    const struct fb_result *runs[] = {&r};
    json_object *doc = NULL;
    CHECK_INT(fb_profile_from_results(runs, 1, "vm-local", 0.25, &doc, &err), FB_OK);
    struct fb_profile p;
    CHECK_INT(fb_profile_parse(doc, "vm-local.json", &p, &err), FB_OK);
    CHECK_STR(p.name, "vm-local");
    CHECK(p.target);
    CHECK_STR(p.match.backend, "mpi");
    CHECK_INT(p.match.ranks, 4);
    CHECK_INT(p.match.nodes_min, 1);
    CHECK_INT(p.match.nodes_max, 1);
    const struct fb_expect *e = fb_profile_expect(&p, "all_reduce");
    struct fb_summary s;
    fb_summary_compute(r.rows, r.nrows, &s);
    CHECK_INT(e->at_bytes, s.largest_bytes);
    CHECK_NEAR(e->busbw, s.busbw_at_largest, 1e-12);
    CHECK_NEAR(e->floor, s.busbw_at_largest * 0.75, 1e-12);
    CHECK_CONTAINS(p.source, "vm-mpi-allreduce-4.json");
    /* The run it came from passes against it, picked automatically. */
    struct fb_profiles ps = {.p = &p, .n = 1};
    struct fb_verdict v;
    CHECK_INT(fb_verdict_judge(&r, &ps, NULL, &v, &err), FB_OK);
    CHECK_STR(v.name, "PASS");
    CHECK(v.profile == &p);
    fb_verdict_free(&v);
    json_object_put(doc);
    fb_result_free(&r);
}

static void test_baseline_refuses_bad_runs(void)
{
    const char *files[] = {"gke-tcpxo-incomplete.json", "gke-socket-allreduce.json"};
    const char *needles[] = {"did not finish", "TCP fallback"};
    for (int i = 0; i < 2; i++) {
        struct fb_result r;
        struct fb_err err = {0};
        char path[256];
        snprintf(path, sizeof path, RESULTS "%s", files[i]);
        CHECK_INT(fb_result_load(path, &r, &err), FB_OK);
        const struct fb_result *runs[] = {&r};
        json_object *doc = NULL;
        CHECK_INT(fb_profile_from_results(runs, 1, "x", 0.1, &doc, &err), FB_ERR_INPUT);
        CHECK_CONTAINS(err.msg, needles[i]);
        fb_result_free(&r);
    }
    struct fb_result a, b;
    struct fb_err err = {0};
    CHECK_INT(fb_result_load(RESULTS "vm-mpi-allreduce-4.json", &a, &err), FB_OK);
    CHECK_INT(fb_result_load(RESULTS "vm-mpi-allreduce-2.json", &b, &err), FB_OK);
    const struct fb_result *runs[] = {&a, &b};
    json_object *doc = NULL;
    CHECK_INT(fb_profile_from_results(runs, 2, "x", 0.1, &doc, &err), FB_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "both all_reduce");
    fb_err_clear(&err);
    CHECK_INT(fb_profile_from_results(runs, 1, "bad name", 0.1, &doc, &err), FB_ERR_USAGE);
    fb_result_free(&a);
    fb_result_free(&b);
    /* Two collectives of one cluster make one profile. */
    CHECK_INT(fb_result_load(RESULTS "vm-mpi-allreduce-4.json", &a, &err), FB_OK);
    CHECK_INT(fb_result_load(RESULTS "vm-mpi-allgather-4.json", &b, &err), FB_OK);
    CHECK_INT(fb_profile_from_results(runs, 2, "vm4", 0.1, &doc, &err), FB_OK);
    struct fb_profile p;
    CHECK_INT(fb_profile_parse(doc, "vm4.json", &p, &err), FB_OK);
    CHECK_INT(p.nexpect, 2);
    CHECK(fb_profile_expect(&p, "all_gather") != NULL);
    json_object_put(doc);
    fb_result_free(&a);
    fb_result_free(&b);
}

/* A result's own profile, kept beside it as RESULT.profile.json (make demo
 * writes one per run): every judge of the file uses it, before any profile
 * picked from criteria; a name given still wins; what is there must be a
 * target profile. */
static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f != NULL) {
        fputs(text, f);
        fclose(f);
    }
}

static const char own_profile[] =
    "{\"schema\": \"fabric-bench.profile\", \"schema_version\": 1, \"name\": \"demo-host\", \"revision\": 1,"
    " \"role\": \"target\", \"description\": \"measured with the run\", \"match\": {\"backend\": \"mpi\"},"
    " \"collectives\": {\"all_reduce\": {\"at_bytes\": 1024, \"floor_GBps\": %s, \"fail_below_GBps\": 0.001}},"
    " \"sources\": [{\"ref\": \"the unit test\"}]}";

static enum fb_status judge_file(const char *path, const struct fb_profiles *ps, const char *name,
                                 struct fb_verdict *v, struct fb_err *err)
{
    struct fb_result r;
    enum fb_status st = fb_result_load(path, &r, err);
    if (st != FB_OK)
        return st;
    st = fb_verdict_judge(&r, ps, name, v, err);
    fb_result_free(&r);
    return st;
}

static void test_own_profile_beside_the_result(void)
{
    char dir[] = "/tmp/fbown.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char result[256], beside[256], text[1024];
    snprintf(result, sizeof result, "%s/20260101T000000Z-all_reduce.json", dir);
    fb_profile_beside_path(result, beside, sizeof beside);
    CHECK(strstr(beside, "/20260101T000000Z-all_reduce.profile.json") != NULL);
    json_object *doc = fixture_doc("vm-mpi-allreduce-2.json"); /* 0.186 GB/s at 1K */
    struct fb_err err = {0};
    CHECK_INT(fb_json_write_atomic(result, doc, &err), FB_OK);
    json_object_put(doc);
    const char *dirs[] = {REFERENCE};
    struct fb_profiles ps;
    CHECK_INT(fb_profiles_load(dirs, 1, &ps, &err), FB_OK);
    struct fb_verdict v = {0};
    /* Without it: one node, no profile: no verdict (what html showed). */
    CHECK_INT(judge_file(result, &ps, NULL, &v, &err), FB_ERR_USAGE);
    fb_verdict_free(&v);
    fb_err_clear(&err);
    snprintf(text, sizeof text, own_profile, "0.1");
    write_text(beside, text);
    CHECK_INT(judge_file(result, &ps, NULL, &v, &err), FB_OK);
    CHECK_STR(v.name, "PASS");
    CHECK(v.profile != NULL && strcmp(v.profile->name, "demo-host") == 0);
    CHECK_CONTAINS(v.profile_how, "its own, kept beside it as 20260101T000000Z-all_reduce.profile.json");
    CHECK_INT(v.measured_bytes, 1024);
    fb_verdict_free(&v);
    CHECK(v.own == NULL && v.profile == NULL);
    /* Below its floor but above its FAIL line: DEGRADED. */
    snprintf(text, sizeof text, own_profile, "1.5");
    write_text(beside, text);
    CHECK_INT(judge_file(result, &ps, NULL, &v, &err), FB_OK);
    CHECK_STR(v.name, "DEGRADED");
    fb_verdict_free(&v);
    /* A profile named on the command line wins. */
    CHECK_INT(judge_file(result, &ps, "h100-8gpu-nvlink", &v, &err), FB_OK);
    CHECK_STR(v.profile->name, "h100-8gpu-nvlink");
    fb_verdict_free(&v);
    /* Not a profile, a symptom profile, a broken file: an input error naming it. */
    static const char *const bad[] = {
        "{\"schema\": \"fabric-bench.result\", \"kind\": \"collective\"}",
        "{\"schema\": \"fabric-bench.profile\", \"schema_version\": 1, \"name\": \"s\", \"revision\": 1, \"role\": \"symptom\","
        " \"description\": \"d\", \"collectives\": {\"all_reduce\": {\"at_bytes\": 1024, \"busbw_GBps\": 1}}, \"sources\": [{\"ref\": \"r\"}]}",
        "{\"schema\": \"fabric-bench.profile\"",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        write_text(beside, bad[i]);
        fb_err_clear(&err);
        CHECK_INT(judge_file(result, &ps, NULL, &v, &err), FB_ERR_INPUT);
        CHECK_CONTAINS(err.msg, "all_reduce.profile.json");
        CHECK(strchr(err.msg, '\n') == NULL);
        fb_verdict_free(&v);
    }
    /* Another result's profile does not apply. */
    unlink(beside);
    char other[300];
    snprintf(other, sizeof other, "%s/20260102T000000Z-all_reduce.profile.json", dir);
    snprintf(text, sizeof text, own_profile, "0.1");
    write_text(other, text);
    fb_err_clear(&err);
    CHECK_INT(judge_file(result, &ps, NULL, &v, &err), FB_ERR_USAGE);
    fb_verdict_free(&v);
    unlink(other);
    unlink(result);
    rmdir(dir);
    fb_profiles_free(&ps);
}

int main(void)
{
    RUN(test_shipped_profiles_load_and_cite_sources);
    RUN(test_parser_refuses_bad_profiles);
    RUN(test_earlier_directories_override);
    RUN(test_intended_network_from_the_environment);
    RUN(test_baseline_round_trip);
    RUN(test_baseline_refuses_bad_runs);
    RUN(test_own_profile_beside_the_result);
    return fbt_done();
}
