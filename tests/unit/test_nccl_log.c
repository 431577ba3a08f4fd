/* Transport detection from NCCL INFO logs, on hand-written logs in each
 * form NCCL and its network plugins print. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "nccl/nccl_log.h"

#define LOGS "tests/fixtures/report/nccl-logs/"

/* Every file of a fixture directory, sorted, as NCCL_DEBUG_FILE left them. */
static int dir_files(const char *dir, char paths[][512], int max)
{
    struct dirent **names = NULL;
    int n = scandir(dir, &names, NULL, alphasort), k = 0;
    for (int i = 0; i < n; i++) {
        if (names[i]->d_name[0] != '.' && k < max)
            snprintf(paths[k++], 512, "%s/%s", dir, names[i]->d_name);
        free(names[i]);
    }
    free(names);
    return k;
}

static json_object *transport_of(const char *dir, struct fb_err *err, enum fb_status *st)
{
    char paths[16][512];
    const char *ptrs[16];
    int n = dir_files(dir, paths, 16);
    for (int i = 0; i < n; i++)
        ptrs[i] = paths[i];
    json_object *t = NULL;
    *st = fb_transport_from_logs(ptrs, n, &t, err);
    return t;
}

static const char *str_at(json_object *o, const char *key)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v) || v == NULL)
        return "(null)";
    return json_object_get_string(v);
}

static json_object *rank_at(json_object *t, size_t i)
{
    json_object *pr = NULL;
    json_object_object_get_ex(t, "per_rank", &pr);
    return pr ? json_object_array_get_idx(pr, i) : NULL;
}

static size_t ranks_in(json_object *t)
{
    json_object *pr = NULL;
    json_object_object_get_ex(t, "per_rank", &pr);
    return pr ? json_object_array_length(pr) : 0;
}

static const char *joined(json_object *r, const char *key, char *buf, size_t len)
{
    json_object *arr = NULL;
    buf[0] = '\0';
    if (!json_object_object_get_ex(r, key, &arr) || arr == NULL)
        return buf;
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s%s", i ? "," : "", json_object_get_string(json_object_array_get_idx(arr, i)));
    }
    return buf;
}

static void test_ib_with_gdr(void)
{
    struct fb_err err = {0};
    enum fb_status st;
    json_object *t = transport_of(LOGS "ib-gdr", &err, &st);
    CHECK_INT(st, FB_OK);
    CHECK_STR(str_at(t, "net"), "IB");
    CHECK_STR(str_at(t, "gdr"), "true");
    CHECK_STR(str_at(t, "source"), "nccl-log");
    CHECK_INT(ranks_in(t), 4);
    char buf[256];
    for (size_t i = 0; i < 4; i++) {
        json_object *r = rank_at(t, i);
        CHECK_INT(json_object_get_int(json_object_object_get(r, "rank")), (int)i);
        CHECK_STR(str_at(r, "host"), i < 2 ? "gpu-a" : "gpu-b");
        CHECK_STR(str_at(r, "net"), "IB");
        CHECK_STR(joined(r, "interfaces", buf, sizeof buf), "mlx5_0:1/IB,mlx5_1:1/IB");
        CHECK_STR(joined(r, "intra", buf, sizeof buf), "P2P,CUMEM");
    }
    json_object_put(t);
}

static void test_socket_is_detected(void)
{
    struct fb_err err = {0};
    enum fb_status st;
    json_object *t = transport_of(LOGS "socket", &err, &st);
    CHECK_INT(st, FB_OK);
    CHECK_STR(str_at(t, "net"), "Socket");
    CHECK_STR(str_at(t, "gdr"), "false");
    char buf[256];
    CHECK_STR(joined(rank_at(t, 3), "interfaces", buf, sizeof buf), "eth0");
    CHECK_STR(str_at(rank_at(t, 3), "net"), "Socket");
    json_object_put(t);
}

static void test_tcpxo_is_fastrak(void)
{
    struct fb_err err = {0};
    enum fb_status st;
    json_object *t = transport_of(LOGS "tcpxo", &err, &st);
    CHECK_INT(st, FB_OK);
    CHECK_STR(str_at(t, "net"), "FasTrak");
    char buf[256];
    CHECK_STR(joined(rank_at(t, 0), "interfaces", buf, sizeof buf), "eth1,eth2,eth3,eth4,eth5,eth6,eth7,eth8");
    CHECK_STR(str_at(rank_at(t, 2), "host"), "a3mega-1");
    json_object_put(t);
}

static void test_efa_is_ofi(void)
{
    struct fb_err err = {0};
    enum fb_status st;
    json_object *t = transport_of(LOGS "efa", &err, &st);
    CHECK_INT(st, FB_OK);
    CHECK_STR(str_at(t, "net"), "OFI");
    CHECK_STR(str_at(t, "gdr"), "true");
    char buf[256];
    CHECK_STR(joined(rank_at(t, 1), "interfaces", buf, sizeof buf), "efa");
    CHECK_STR(joined(rank_at(t, 1), "intra", buf, sizeof buf), "P2P");
    json_object_put(t);
}

static void test_single_node_has_no_net(void)
{
    struct fb_err err = {0};
    enum fb_status st;
    json_object *t = transport_of(LOGS "nvls-1node", &err, &st);
    CHECK_INT(st, FB_OK);
    CHECK_STR(str_at(t, "net"), "(null)");
    CHECK_STR(str_at(t, "gdr"), "(null)");
    CHECK_INT(ranks_in(t), 4);
    char buf[256];
    /* Devices are listed once per process: every GPU of it gets them. */
    CHECK_STR(joined(rank_at(t, 3), "interfaces", buf, sizeof buf), "mlx5_0:1/IB,mlx5_1:1/IB");
    CHECK_STR(joined(rank_at(t, 3), "intra", buf, sizeof buf), "P2P,CUMEM,NVLS");
    json_object_put(t);
}

static void test_ib_without_gdr_in_one_file(void)
{
    struct fb_err err = {0};
    enum fb_status st;
    json_object *t = transport_of(LOGS "ib-nogdr", &err, &st);
    CHECK_INT(st, FB_OK);
    CHECK_STR(str_at(t, "net"), "IB");
    CHECK_STR(str_at(t, "gdr"), "false");
    CHECK_INT(ranks_in(t), 2);
    CHECK_STR(str_at(rank_at(t, 1), "host"), "node1");
    char buf[256];
    CHECK_STR(joined(rank_at(t, 0), "interfaces", buf, sizeof buf), "mlx5_2:1/RoCE");
    json_object_put(t);
}

static void test_tagged_and_timestamped_lines(void)
{
    struct fb_err err = {0};
    enum fb_status st;
    json_object *t = transport_of(LOGS "relay-tagged", &err, &st);
    CHECK_INT(st, FB_OK);
    CHECK_STR(str_at(t, "net"), "IB");
    CHECK_STR(str_at(t, "gdr"), "true");
    CHECK_INT(ranks_in(t), 2);
    CHECK_STR(str_at(rank_at(t, 0), "host"), "gpu-a");
    CHECK_STR(str_at(rank_at(t, 1), "host"), "gpu-b");
    json_object_put(t);
}

static void test_one_socket_rank_makes_the_run_socket(void)
{
    struct fb_err err = {0};
    enum fb_status st;
    json_object *t = transport_of(LOGS "mixed-nets", &err, &st);
    CHECK_INT(st, FB_OK);
    CHECK_STR(str_at(t, "net"), "Socket");
    CHECK_STR(str_at(rank_at(t, 0), "net"), "IB");
    CHECK_STR(str_at(rank_at(t, 1), "net"), "Socket");
    json_object_put(t);
}

static void test_bad_logs_give_one_line(void)
{
    struct {
        const char *dir, *needle;
    } cases[] = {
        {LOGS "mixed-runs", "mixed"},
        {LOGS "truncated", "ends before"},
        {LOGS "no-info", "NCCL_DEBUG=INFO"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct fb_err err = {0};
        enum fb_status st;
        json_object *t = transport_of(cases[i].dir, &err, &st);
        CHECK_INT(st, FB_ERR_INPUT);
        CHECK(t == NULL);
        CHECK_CONTAINS(err.msg, cases[i].needle);
        CHECK(strchr(err.msg, '\n') == NULL);
    }
    struct fb_err err = {0};
    const char *missing[] = {LOGS "does-not-exist"};
    json_object *t = NULL;
    CHECK_INT(fb_transport_from_logs(missing, 1, &t, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "does-not-exist");
    fb_err_clear(&err);
    CHECK_INT(fb_transport_from_logs(NULL, 0, &t, &err), FB_ERR_USAGE);
}

static void test_text_feed_and_canonical_names(void)
{
    const char text[] = "# nThread 1 nGpus 1\n"
                        "h1:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0\n"
                        "h1:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/GPUDirectTCPX/0\n"
                        "           8             2     float     sum      -1    10.00    0.00    0.00      0\n";
    struct fb_nccl_log *log = fb_nccl_log_new();
    struct fb_err err = {0};
    CHECK_INT(fb_nccl_log_feed(log, "stdout", text, sizeof text - 1, &err), FB_OK);
    CHECK_INT(fb_nccl_log_info_lines(log), 2);
    json_object *t = NULL;
    CHECK_INT(fb_nccl_log_transport(log, &t, &err), FB_OK);
    CHECK_STR(str_at(t, "net"), "GPUDirectTCPX");
    json_object_put(t);
    fb_nccl_log_free(log);
    CHECK_STR(fb_net_canonical("AWS Libfabric"), "OFI");
    CHECK_STR(fb_net_canonical("socket"), "Socket");
    CHECK_STR(fb_net_canonical("FastSocket"), "FastSocket");
}

static const char *net_of_text(const char *text, struct fb_err *err)
{
    static char net[64];
    struct fb_nccl_log *log = fb_nccl_log_new();
    json_object *t = NULL;
    net[0] = '\0';
    if (fb_nccl_log_feed(log, "text", text, strlen(text), err) == FB_OK &&
        fb_nccl_log_transport(log, &t, err) == FB_OK)
        snprintf(net, sizeof net, "%s", str_at(t, "net"));
    json_object_put(t);
    fb_nccl_log_free(log);
    return net;
}

/* The network NCCL says it chose counts without channel lines: a GKE
 * TCPXO log cut before the rings, an NCCL 2.27+ plugin assignment, a bare
 * device list. Channels all inside a node still mean no network. */
static void test_chosen_network_without_channels(void)
{
    struct fb_err err = {0};
    CHECK_STR(net_of_text("a3m-0:10:10 [0] NCCL INFO comm 0x1 rank 0 nranks 16 cudaDev 0 busId 8000 - Init START\n"
                          "a3m-0:10:10 [0] NCCL INFO Using network FasTrak\n"
                          "a3m-1:10:10 [0] NCCL INFO comm 0x2 rank 8 nranks 16 cudaDev 0 busId 8000 - Init START\n"
                          "a3m-1:10:10 [0] NCCL INFO Using network FasTrak\n", &err), "FasTrak");
    CHECK_STR(net_of_text("lab:5:5 [0] NCCL INFO Failed to initialize NET plugin IB\n"
                          "lab:5:5 [0] NCCL INFO Initialized NET plugin Socket\n"
                          "lab:5:5 [0] NCCL INFO Assigned NET plugin Socket to comm\n", &err), "Socket");
    CHECK_STR(net_of_text("n2:7:7 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.0.2<0>\n", &err), "IB");
    CHECK_STR(net_of_text("n1:3:3 [0] NCCL INFO Using network IB\n"
                          "n1:3:3 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0\n"
                          "n1:3:3 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM\n", &err), "(null)");
}

/* A rank whose process logs under two device tags is one rank, not two
 * runs mixed. */
static void test_relogged_rank_is_one_rank(void)
{
    struct fb_err err = {0};
    CHECK_STR(net_of_text("h1:9:9 [0] NCCL INFO comm 0x1 rank 1 nranks 2 cudaDev 0\n"
                          "h1:9:12 [1] NCCL INFO comm 0x1 rank 1 nranks 2 cudaDev 0\n"
                          "h1:9:9 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [send] via NET/Socket/0\n", &err), "Socket");
    CHECK_INT(err.code, FB_OK);
}

static json_object *transport_of_text(const char *text, struct fb_err *err)
{
    struct fb_nccl_log *log = fb_nccl_log_new();
    json_object *t = NULL;
    if (fb_nccl_log_feed(log, "run.log", text, strlen(text), err) != FB_OK ||
        fb_nccl_log_transport(log, &t, err) != FB_OK)
        t = NULL;
    fb_nccl_log_free(log);
    return t;
}

static const char *quoted_at(json_object *t, const char *key, const char *field)
{
    json_object *q = NULL;
    json_object_object_get_ex(t, key, &q);
    return q ? str_at(q, field) : "(null)";
}

/* What the run says once, whichever rank says it: versions, plugins, the
 * libfabric provider, the coll plugin, why a network was given up, a
 * channel without GPUDirect RDMA and the first WARN, quoted with its line. */
static void test_run_facts(void)
{
    struct fb_err err = {0};
    json_object *t = transport_of_text(
        "NCCL version 2.20.5+cuda12.4\n"
        "n1:5:5 [0] NCCL INFO NET/Plugin: Loaded net plugin AWS Libfabric (v6)\n"
        "n1:5:5 [0] NCCL INFO NET/OFI Using aws-ofi-nccl 1.6.0\n"
        "n1:5:5 [0] NCCL INFO NET/OFI Selected Provider is cxi (found 4 nics)\n"
        "n1:5:5 [0] NCCL INFO NET/Plugin: Loaded coll plugin SHARP (v6)\n"
        "n1:5:5 [0] NCCL INFO NET/IB : No device found.\n"
        "n1:5:5 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0\n"
        "n1:5:5 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/AWS Libfabric/0\n"
        "n2:6:6 [0] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 0\n"
        "n2:6:6 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [send] via NET/AWS Libfabric/0/GDRDMA\n"
        "n2:6:9 [0] transport/net.cc:1 NCCL WARN NET/OFI Request error\n", &err);
    CHECK(t != NULL);
    CHECK_STR(str_at(t, "nccl_version"), "2.20.5+cuda12.4");
    CHECK_STR(str_at(t, "net_plugin"), "AWS Libfabric (v6)");
    CHECK_STR(str_at(t, "plugin_version"), "aws-ofi-nccl 1.6.0");
    CHECK_STR(str_at(t, "provider"), "cxi");
    CHECK_STR(str_at(t, "coll_plugin"), "SHARP (v6)");
    CHECK_STR(str_at(t, "ranks"), "2");
    CHECK_STR(str_at(t, "hosts"), "2");
    CHECK_STR(quoted_at(t, "fallback_reason", "text"), "NET/IB : No device found.");
    CHECK_STR(quoted_at(t, "fallback_reason", "where"), "run.log:6");
    CHECK_STR(quoted_at(t, "no_gdr_channel", "where"), "run.log:8");
    CHECK_STR(quoted_at(t, "warn", "text"), "NET/OFI Request error");
    CHECK_STR(quoted_at(t, "warn", "where"), "run.log:11");
    CHECK_STR(str_at(t, "gdr"), "false"); /* one rank without it */
    struct fb_str text = {0};
    fb_transport_text(t, &text);
    CHECK_CONTAINS(fb_str_get(&text), "run: 2 ranks on 2 hosts, NCCL 2.20.5+cuda12.4\n");
    CHECK_CONTAINS(fb_str_get(&text), "libfabric provider: cxi\n");
    CHECK_CONTAINS(fb_str_get(&text), "NCCL WARN: NET/OFI Request error (run.log:11)\n");
    fb_str_free(&text);
    json_object_put(t);
    /* GKE A3 High names its plugin with the ABI version. */
    CHECK_STR(net_of_text("a3h:1:1 [0] NCCL INFO Using network GPUDirectTCPX_v7\n", &err), "GPUDirectTCPX");
}

/* Older NCCL and RCCL say the same facts in other words: NCCL 2.7's SHM is
 * "via direct shared memory", it warns (not informs) that libibverbs is
 * missing before it goes on with sockets, and RCCL names its version
 * "RCCL version : X". A shared-memory segment it failed to open is no
 * network given up. */
static void test_older_and_rccl_wording(void)
{
    struct fb_err err = {0};
    json_object *t = transport_of_text(
        "t1:5:5 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n"
        "t1:5:5 [0] NCCL INFO NET/Socket : Using [0]eno2:10.0.0.5<0>\n"
        "t1:5:5 [0] NCCL INFO RCCL version : 2.26.6-HEAD:f224e2c\n"
        "t1:5:9 [0] NCCL INFO Channel 00 : 0[18000] -> 1[1a000] via direct shared memory\n"
        "t1:5:9 [0] NCCL INFO Channel 00 : 2[af000] -> 0[18000] [receive] via NET/Socket/0\n"
        "t1:5:9 [0] NCCL INFO comm 0x1 rank 0 nranks 4 cudaDev 0 busId 18000 - Init COMPLETE\n", &err);
    CHECK(t != NULL);
    char buf[64];
    CHECK_STR(joined(rank_at(t, 0), "intra", buf, sizeof buf), "SHM");
    CHECK_STR(quoted_at(t, "fallback_reason", "text"), "Failed to open libibverbs.so[.1]");
    CHECK_STR(quoted_at(t, "fallback_reason", "where"), "run.log:1");
    CHECK_STR(str_at(t, "nccl_version"), "RCCL 2.26.6-HEAD:f224e2c");
    struct fb_str text = {0};
    fb_transport_text(t, &text);
    CHECK_CONTAINS(fb_str_get(&text), "run: 4 ranks on 1 host, RCCL 2.26.6-HEAD:f224e2c\n");
    fb_str_free(&text);
    json_object_put(t);
    t = transport_of_text("t1:5:5 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0\n"
                          "t1:5:5 [0] misc/shmutils.cc:9 NCCL WARN Failed to open /dev/shm/nccl-Ab12\n"
                          "t1:5:5 [0] NCCL INFO Channel 00 : 0[0] -> 1[0] [send] via NET/IB/0\n", &err);
    CHECK(t != NULL);
    CHECK_STR(quoted_at(t, "fallback_reason", "text"), "(null)");
    json_object_put(t);
}

/* Two processes writing one file cut or glue line starts: the host of a
 * damaged prefix is the rank's own host, not another rank, and a half
 * line without a rank is no rank at all. */
static void test_interleaved_half_lines(void)
{
    struct fb_err err = {0};
    json_object *t = transport_of_text(
        "hosthostab:7:7 [0] NCCL INFO cudaDriverVersion 12020\n"
        "hostab:7:7 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0\n"
        "hostab:8:8 [1] NCCL INFO comm 0x1 rank 1 nranks 2 cudaDev 1\n"
        "stab:8:8 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/CUMEM/read\n"
        "hoab:9:9 [2] NCCL INFO Channel 00/0 : 2[2] -> 0[0] via P2P/CUMEM/read\n", &err);
    CHECK(t != NULL);
    CHECK_INT(ranks_in(t), 2);
    CHECK_STR(str_at(rank_at(t, 0), "host"), "hostab");
    CHECK_STR(str_at(rank_at(t, 1), "host"), "hostab");
    CHECK_STR(str_at(t, "hosts"), "1");
    json_object_put(t);
}

static void test_directories_and_the_table(void)
{
    const char *args[] = {LOGS "ib-nogdr", LOGS "relay-tagged/output.log"};
    json_object *t = NULL;
    struct fb_err err = {0};
    /* Two runs given together: ranks 0 and 1 appear twice. */
    CHECK_INT(fb_transport_from_args(args, 2, &t, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "mixed");
    fb_err_clear(&err);
    CHECK_INT(fb_transport_from_args(args, 1, &t, &err), FB_OK);
    struct fb_str text = {0};
    fb_transport_text(t, &text);
    CHECK(fb_starts_with(fb_str_get(&text), "NET/IB without GPUDirect RDMA across 2 logged ranks\n"));
    CHECK_CONTAINS(fb_str_get(&text), "\n1     node1                IB       no   mlx5_2:1/RoCE");
    fb_str_free(&text);
    json_object_put(t);
    char empty[] = "/tmp/fbnccl.XXXXXX";
    CHECK(mkdtemp(empty) != NULL);
    const char *none[] = {empty};
    CHECK_INT(fb_transport_from_args(none, 1, &t, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "holds no files");
    rmdir(empty);
}

/* A rank's log linked into the directory a second time is not read as
 * another rank's, nor is a link out of it. */
static void test_links_in_a_log_directory_are_not_followed(void)
{
    char dir[] = "/tmp/fbnccl.XXXXXX", path[256], link1[256], link2[256], cwd[4096];
    CHECK(mkdtemp(dir) != NULL);
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    snprintf(path, sizeof path, "%s/nccl.gpu-a.5200", dir);
    snprintf(link1, sizeof link1, "%s/nccl.gpu-a.5200.again", dir);
    snprintf(link2, sizeof link2, "%s/elsewhere", dir);
    char *text = NULL;
    size_t len = 0;
    FILE *in = fopen(LOGS "socket/nccl.gpu-a.5200", "r"), *out = fopen(path, "w");
    CHECK(in != NULL && out != NULL);
    FILE *mem = open_memstream(&text, &len);
    for (int c; (c = fgetc(in)) != EOF;)
        fputc(c, mem);
    fclose(mem);
    fputs(text, out);
    fclose(in);
    fclose(out);
    free(text);
    char target[4096 + 64];
    snprintf(target, sizeof target, "%s/" LOGS "socket/nccl.gpu-b.5202", cwd);
    CHECK(symlink(path, link1) == 0);
    CHECK(symlink(target, link2) == 0);
    const char *args[] = {dir};
    json_object *t = NULL;
    struct fb_err err = {0};
    CHECK_INT(fb_transport_from_args(args, 1, &t, &err), FB_OK);
    CHECK(rank_at(t, 0) != NULL && rank_at(t, 1) == NULL);
    CHECK_STR(str_at(rank_at(t, 0), "host"), "gpu-a");
    json_object_put(t);
    unlink(link1);
    unlink(link2);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    RUN(test_ib_with_gdr);
    RUN(test_links_in_a_log_directory_are_not_followed);
    RUN(test_socket_is_detected);
    RUN(test_tcpxo_is_fastrak);
    RUN(test_efa_is_ofi);
    RUN(test_single_node_has_no_net);
    RUN(test_ib_without_gdr_in_one_file);
    RUN(test_tagged_and_timestamped_lines);
    RUN(test_one_socket_rank_makes_the_run_socket);
    RUN(test_bad_logs_give_one_line);
    RUN(test_text_feed_and_canonical_names);
    RUN(test_directories_and_the_table);
    RUN(test_chosen_network_without_channels);
    RUN(test_relogged_rank_is_one_rank);
    RUN(test_run_facts);
    RUN(test_older_and_rccl_wording);
    RUN(test_interleaved_half_lines);
    return fbt_done();
}
