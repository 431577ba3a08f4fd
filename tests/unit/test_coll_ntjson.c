/* nccl-tests' -J document as a view of the record, and the 2.19.6 table's
 * header, footer and -M line. The expectations come from nccl-tests
 * 2.19.6's src/util.cu (jsonOutputInit, writeDeviceReport,
 * writeBenchmarkLine*, writePerIterReport, writeResultHeader/Footer,
 * writeMemInfo, getMemString, writeErrors, jsonOutputFinalize) and
 * src/common.cu (the NCCL_TESTS_MIN_BW check `bw < min * 0.9`). */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "coll/ntjson.h"
#include "coll/table.h"
#include "core/jsonio.h"

static json_object *parse(const char *text)
{
    json_object *o = json_tokener_parse(text);
    CHECK(o != NULL);
    return o;
}

/* The keys of an object, in order, joined by ",". */
static void keys_of(json_object *o, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    json_object_object_foreach(o, k, v) {
        (void)v;
        used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? "," : "", k);
        if (used >= len)
            return;
    }
}

#define CHECK_KEYS(obj, want)                   \
    do {                                        \
        char fbt_keys[1024];                    \
        keys_of((obj), fbt_keys, sizeof fbt_keys); \
        CHECK_STR(fbt_keys, (want));            \
    } while (0)

/* A record as fabric-coll writes it, with the per-row fields of -d all and
 * the per-placement -I 1 summary. */
static const char *RECORD =
    "{\"schema\":\"fabric-bench.result\",\"kind\":\"collective\",\"complete\":true,\"fault\":null,"
    "\"tool\":{\"name\":\"fabric-coll\",\"invoked_as\":\"all_reduce_perf\"},"
    "\"start_time\":\"2026-11-02T09:14:55Z\",\"end_time\":\"2026-11-02T09:14:58Z\","
    "\"env\":{\"NCCL_IB_HCA\":\"mlx5_0\",\"FABRIC_CLUSTER\":\"lab\"},"
    "\"collective\":\"all_reduce\",\"dtype\":\"float\",\"op\":\"sum\",\"root\":-1,"
    "\"args\":[\"all_reduce_perf\",\"-b\",\"1K\",\"-m\",\"2\"],\"time_column\":\"time\","
    "\"config\":{\"minbytes\":1024,\"maxbytes\":2048,\"stepbytes\":1048576,\"stepfactor\":2,\"iters\":5,"
    "\"warmup_iters\":1,\"agg_iters\":2,\"check\":1,\"cudagraph\":0,\"nthreads\":1,\"ngpus\":1,"
    "\"blocking\":0,\"parallel_init\":0,\"per_iter_timing\":1},"
    "\"versions\":{\"nccl\":\"2.27.3\"},"
    "\"devices\":[{\"rank\":0,\"host\":\"n1\",\"pid\":42,\"cuda_device\":3,\"pci_bus_id\":\"0000:1b:00.0\","
    "\"name\":\"NVIDIA H100\"}],"
    "\"rows\":["
    "{\"bytes\":1024,\"count\":256,\"run\":0,\"iterations\":10,"
    "\"out_of_place\":{\"time_us\":12.5,\"algbw_GBps\":0.08192,\"busbw_GBps\":0.1,\"wrong\":0,\"cpu_time_us\":3.25,"
    "\"per_iter\":{\"skipped_iterations\":1,\"min_us\":11,\"max_us\":14,\"avg_us\":12.5,\"p50_us\":12,"
    "\"p95_us\":14,\"p99_us\":14,\"stdev_us\":1.1,\"cv_pct\":8.8,\"times_us\":[11,12,14]}},"
    "\"in_place\":{\"time_us\":null,\"algbw_GBps\":0.5,\"busbw_GBps\":0.3,\"wrong\":null}},"
    "{\"bytes\":2048,\"count\":256,\"type\":\"double\",\"redop\":\"max\",\"root\":2,\"run\":0,\"iterations\":10,"
    "\"out_of_place\":{\"time_us\":20,\"algbw_GBps\":1,\"busbw_GBps\":0.2,\"wrong\":3},"
    "\"in_place\":{\"time_us\":21,\"algbw_GBps\":1,\"busbw_GBps\":0.4,\"wrong\":0}}],"
    "\"footer\":{\"out_of_bounds\":1,\"avg_busbw_GBps\":0.25,\"min_bw_GBps\":0.3,\"min_bw_ok\":false}}";

static void test_view_has_nccl_tests_keys_in_order(void)
{
    json_object *rec = parse(RECORD), *v = fb_ntjson_from_record(rec, false);
    /* jsonOutputInit, writeDeviceReport, writeResultHeader/Footer,
     * writeErrors, jsonOutputFinalize: the top level in this order. */
    CHECK_KEYS(v, "version,start_time,args,env,nccl_version,config,results,out_of_bounds,"
                  "average_bus_bandwidth,errors,end_time");
    CHECK_INT(json_object_get_int(fb_json_member(v, "version")), 3);
    CHECK_INT(json_object_get_int(fb_json_member(v, "nccl_version")), 22703);
    CHECK_KEYS(fb_json_member(v, "config"),
               "nthreads,ngpus,minimum_bytes,maximum_bytes,step_factor,warmup_iters,iterations,"
               "aggregated_iterations,validation,graph,blocking_collectives,per_iter_timing,per_iter_skip,"
               "parallel_init,devices");
    json_object *c = fb_json_member(v, "config");
    CHECK_STR(fb_json_get_string(c, "blocking_collectives"), "false"); /* jsonBool: a string */
    CHECK_STR(fb_json_get_string(c, "per_iter_timing"), "true");
    json_object *dev = json_object_array_get_idx(fb_json_member(c, "devices"), 0);
    CHECK_KEYS(dev, "rank,group,pid,hostname,device,device_hex,device_info");
    CHECK_STR(fb_json_get_string(dev, "device_hex"), "0000:1b:00"); /* %04x:%02x:%02x */
    CHECK_INT(json_object_get_int(fb_json_member(dev, "device")), 3);
    /* Only NCCL_*, FI_*, UCX_* and the launcher's variables. */
    json_object *env = fb_json_member(v, "env");
    CHECK_INT(json_object_array_length(env), 1);
    CHECK_STR(json_object_get_string(json_object_array_get_idx(env, 0)), "NCCL_IB_HCA=mlx5_0");
    json_object_put(v);
    json_object_put(rec);
}

static void test_rows_map_to_results(void)
{
    json_object *rec = parse(RECORD), *v = fb_ntjson_from_record(rec, false);
    json_object *results = fb_json_member(v, "results");
    CHECK_INT(json_object_array_length(results), 2);
    json_object *r0 = json_object_array_get_idx(results, 0), *r1 = json_object_array_get_idx(results, 1);
    /* writeBenchmarkLinePreamble, Body (out of place, then in place, each
     * followed by its -I summary), Terminator. */
    CHECK_KEYS(r0, "size,count,type,redop,root,out_of_place,out_of_place_per_iter,in_place,actual_iterations,"
                   "experiment_name");
    CHECK_KEYS(r1, "size,count,type,redop,root,out_of_place,in_place,actual_iterations,experiment_name");
    CHECK_STR(fb_json_get_string(r0, "root"), "    -1"); /* sprintf("%6i") */
    CHECK_STR(fb_json_get_string(r0, "type"), "float");
    CHECK_STR(fb_json_get_string(r1, "type"), "double"); /* the row's own */
    CHECK_STR(fb_json_get_string(r1, "redop"), "max");
    CHECK_STR(fb_json_get_string(r1, "root"), "     2");
    CHECK_INT(json_object_get_int(fb_json_member(r0, "actual_iterations")), 5); /* -n, not -n x -m */
    CHECK_STR(fb_json_get_string(r0, "experiment_name"), "");
    json_object *oop = fb_json_member(r0, "out_of_place"), *ip = fb_json_member(r0, "in_place");
    CHECK_KEYS(oop, "time,alg_bw,bus_bw,nwrong");
    CHECK(json_object_is_type(fb_json_member(oop, "time"), json_type_double));
    CHECK(json_object_is_type(fb_json_member(oop, "nwrong"), json_type_double)); /* jsonDouble(wrong) */
    CHECK_STR(fb_json_get_string(ip, "time"), "nan"); /* jsonDouble(NaN) */
    CHECK(json_object_is_type(fb_json_member(ip, "nwrong"), json_type_null)); /* not checked */
    json_object *pi = fb_json_member(r0, "out_of_place_per_iter");
    CHECK_KEYS(pi, "skipped_iterations,min_us,max_us,avg_us,p50_us,p95_us,p99_us,stdev_us,cv_pct,times_us");
    CHECK(json_object_is_type(fb_json_member(pi, "skipped_iterations"), json_type_int));
    CHECK_NEAR(json_object_get_double(fb_json_member(pi, "p50_us")), 12, 1e-12);
    CHECK_INT(json_object_array_length(fb_json_member(pi, "times_us")), 3);
    /* Text as nccl-tests prints doubles ("%lf"), compact. */
    char *text = fb_ntjson_text(rec, false);
    CHECK_CONTAINS(text, "\"out_of_place\":{\"time\":12.500000,\"alg_bw\":0.081920,\"bus_bw\":0.100000,\"nwrong\":0.000000}");
    free(text);
    json_object_put(v);
    json_object_put(rec);
}

static void test_footer_and_cpu_time(void)
{
    json_object *rec = parse(RECORD);
    json_object_object_add(rec, "time_column", json_object_new_string("cpu_time"));
    json_object *v = fb_ntjson_from_record(rec, false);
    json_object *oop = fb_json_member(json_object_array_get_idx(fb_json_member(v, "results"), 0), "out_of_place");
    CHECK_KEYS(oop, "cpu_time,alg_bw,bus_bw,nwrong"); /* -C 1 */
    CHECK_NEAR(json_object_get_double(fb_json_member(oop, "cpu_time")), 3.25, 1e-12);
    json_object *oob = fb_json_member(v, "out_of_bounds"), *avg = fb_json_member(v, "average_bus_bandwidth");
    CHECK_KEYS(oob, "count,okay");
    CHECK_INT(json_object_get_int(fb_json_member(oob, "count")), 1);
    CHECK_STR(fb_json_get_string(oob, "okay"), "false");
    CHECK_KEYS(avg, "bandwidth,okay");
    /* 0.25 < 0.3 x 0.9: FAILED, "false". */
    CHECK_STR(fb_json_get_string(avg, "okay"), "false");
    CHECK_STR(json_object_get_string(json_object_array_get_idx(fb_json_member(v, "errors"), 0)), "");
    json_object_put(v);
    /* No MIN_BW: "unchecked". */
    json_object_object_del(fb_json_member(rec, "footer"), "min_bw_GBps");
    v = fb_ntjson_from_record(rec, false);
    CHECK_STR(fb_json_get_string(fb_json_member(v, "average_bus_bandwidth"), "okay"), "unchecked");
    json_object_put(v);
    /* A run still going (or killed) has no footer and no end time. */
    json_object_object_add(rec, "complete", json_object_new_boolean(0));
    v = fb_ntjson_from_record(rec, false);
    CHECK_KEYS(v, "version,start_time,args,env,nccl_version,config,results");
    json_object_put(v);
    json_object_put(rec);
}

static void test_creation_never_replaces(void)
{
    char dir[] = "/tmp/fbt-ntjson.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char want[256], line[512];
    snprintf(want, sizeof want, "%s/out.json", dir);
    json_object *rec = parse(RECORD);
    struct fb_ntjson_file f;
    /* jsonOutputInit: fopen(path, "wx"), then PATH.0, PATH.1 ... */
    const char *expect[] = {"out.json", "out.json.0", "out.json.1"};
    for (int i = 0; i < 3; i++) {
        fb_ntjson_open(&f, want, rec, line, sizeof line);
        char path[300], msg[400];
        snprintf(path, sizeof path, "%s/%s", dir, expect[i]);
        snprintf(msg, sizeof msg, "# Writing JSON output to %s", path);
        CHECK(f.active);
        CHECK_STR(f.path, path);
        CHECK_STR(line, msg);
        json_object *back = NULL;
        struct fb_err err = {0};
        CHECK_INT(fb_json_read_file(path, &back, &err), FB_OK);
        CHECK_INT(json_object_get_int(fb_json_member(back, "version")), 3);
        json_object_put(back);
    }
    char missing[300];
    snprintf(missing, sizeof missing, "%s/no/such/dir.json", dir);
    fb_ntjson_open(&f, missing, rec, line, sizeof line);
    CHECK(!f.active);
    char msg[400];
    snprintf(msg, sizeof msg, "# skipping json output; %s not accessible", missing);
    CHECK_STR(line, msg);
    CHECK(fb_ntjson_name_is_json("a/b.JSON"));
    CHECK(!fb_ntjson_name_is_json("a.json/b"));
    CHECK(!fb_ntjson_name_is_json("out.txt"));
    json_object_put(rec);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK_INT(system(cmd), 0);
}

static char *printed(void (*fn)(FILE *, const void *), const void *arg)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    fn(f, arg);
    fclose(f);
    return text;
}

static void header_of(FILE *f, const void *cfg) { fb_table_header(f, cfg); }
static void footer_of(FILE *f, const void *t) { fb_table_footer(f, t); }
static void memory_of(FILE *f, const void *m) { fb_table_memory(f, m); }

static void test_table_header_cputime_timestamps(void)
{
    struct coll_config cfg;
    coll_config_defaults(&cfg);
    char *text = printed(header_of, &cfg);
    /* writeResultHeader: " %*s" ends each title line (width 0 without -S). */
    CHECK_CONTAINS(text, "  #wrong     time   algbw   busbw  #wrong \n");
    free(text);
    cfg.cputime = cfg.timestamps = 1;
    text = printed(header_of, &cfg);
    CHECK_CONTAINS(text, "  #wrong  cputime   algbw   busbw  #wrong           timestamp\n");
    CHECK_CONTAINS(text, "(GB/s)           %Y-%m-%d %H:%M:%S\n");
    free(text);
}

static void test_table_footer_min_bw(void)
{
    struct fb_table_totals t = {.out_of_bounds = 0, .avg_busbw = 9.5, .perf_name = "all_reduce_perf"};
    char *text = printed(footer_of, &t);
    CHECK_STR(text, "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 9.5 \n#\n"
                    "# Collective test concluded: all_reduce_perf\n");
    free(text);
    t.min_bw_set = true;
    t.min_bw = 10; /* 9.5 >= 10 x 0.9 */
    CHECK(fb_table_min_bw_ok(&t));
    text = printed(footer_of, &t);
    CHECK_CONTAINS(text, "# Avg bus bandwidth    : 9.5 OK\n");
    free(text);
    t.min_bw = 11; /* 9.5 < 9.9 */
    CHECK(!fb_table_min_bw_ok(&t));
    t.out_of_bounds = 2;
    text = printed(footer_of, &t);
    CHECK_CONTAINS(text, "# Out of bounds values : 2 FAILED\n# Avg bus bandwidth    : 9.5 FAILED\n");
    free(text);
}

static void test_memory_line(void)
{
    char b[32];
    /* getMemString: binary units, 2 decimals under 10, 1 under 100. */
    fb_table_mem_string(512, b, sizeof b);
    CHECK_STR(b, "512 B");
    fb_table_mem_string(1536, b, sizeof b);
    CHECK_STR(b, "1.50 KB");
    fb_table_mem_string(50ULL << 20, b, sizeof b);
    CHECK_STR(b, "50.0 MB");
    fb_table_mem_string(3ULL << 30, b, sizeof b);
    CHECK_STR(b, "3.00 GB");
    struct fb_table_memory m = {.title = "GPU memory usage",
                                .names = {"Initialization", "User-Allocated", "Collective"},
                                .bytes = {1ULL << 30, 512ULL << 20, 0},
                                .known = {true, true, true}};
    char *text = printed(memory_of, &m);
    CHECK_STR(text, "# GPU memory usage     : Initialization 1.00 GB | User-Allocated 512 MB | Collective 0.00 B "
                    "| Total  1.50 GB\n");
    free(text);
    m.known[0] = false;
    text = printed(memory_of, &m);
    CHECK_CONTAINS(text, "Initialization n/a | ");
    CHECK_CONTAINS(text, "| Total  n/a\n");
    free(text);
}

int main(void)
{
    RUN(test_view_has_nccl_tests_keys_in_order);
    RUN(test_rows_map_to_results);
    RUN(test_footer_and_cpu_time);
    RUN(test_creation_never_replaces);
    RUN(test_table_header_cputime_timestamps);
    RUN(test_table_footer_min_bw);
    RUN(test_memory_line);
    return fbt_done();
}
