/* Doctor building blocks: NCCL device-list syntax, check records and exit
 * codes, bounded text, reading through a root, the sysfs inventory and the
 * checklist outputs. */
#include "core/jsonio.h"
#include "core/status.h"
#include "doctor/check.h"
#include "doctor/checklist.h"
#include "doctor/cluster.h"
#include "doctor/devspec.h"
#include "doctor/inventory.h"
#include "doctor/node.h"
#include "core/rootfs.h"
#include "core/text.h"

#include "check.h"
#include "test_doctor_tree.h"

static void devspec_plain_list_is_prefix_match(void)
{
    struct fb_devspec s;
    struct fb_err err = {FB_OK, ""};
    CHECK_INT(fb_devspec_parse("mlx5_0,mlx5_1", "NCCL_IB_HCA", &s, &err), FB_OK);
    CHECK_INT(s.n, 2);
    CHECK(!s.exclude && !s.exact);
    CHECK(fb_devspec_selects(&s, "mlx5_0", -1));
    CHECK(fb_devspec_selects(&s, "mlx5_10", -1)); /* prefix: the classic surprise */
    CHECK(!fb_devspec_selects(&s, "mlx5_2", -1));
}

static void devspec_exact_and_exclude(void)
{
    struct fb_devspec s;
    struct fb_err err = {FB_OK, ""};
    CHECK_INT(fb_devspec_parse("^=mlx5_1", "NCCL_IB_HCA", &s, &err), FB_OK);
    CHECK(s.exclude && s.exact);
    CHECK(!fb_devspec_selects(&s, "mlx5_1", -1));
    CHECK(fb_devspec_selects(&s, "mlx5_10", -1));
    CHECK_INT(fb_devspec_parse("=eth0", "NCCL_SOCKET_IFNAME", &s, &err), FB_OK);
    CHECK(fb_devspec_selects(&s, "eth0", -1));
    CHECK(!fb_devspec_selects(&s, "eth01", -1));
}

static void devspec_ports(void)
{
    struct fb_devspec s;
    struct fb_err err = {FB_OK, ""};
    CHECK_INT(fb_devspec_parse("=mlx5_0:1,mlx5_1:2", "NCCL_IB_HCA", &s, &err), FB_OK);
    CHECK_INT(s.entry[0].port, 1);
    CHECK_INT(s.entry[1].port, 2);
    CHECK(fb_devspec_selects(&s, "mlx5_0", 1));
    CHECK(!fb_devspec_selects(&s, "mlx5_0", 2));
    CHECK(fb_devspec_selects(&s, "mlx5_0", -1)); /* the device as a whole */
    char back[128];
    fb_devspec_format(&s, back, sizeof back);
    CHECK_STR(back, "=mlx5_0:1,mlx5_1:2");
}

static void devspec_rejects_bad_lists(void)
{
    struct {
        const char *text, *var, *expect;
    } bad[] = {
        {"mlx5_0:x", "NCCL_IB_HCA", "NCCL_IB_HCA='mlx5_0:x': port 'x'"},
        {"^", "NCCL_IB_HCA", "names no device"},
        {":1", "NCCL_IB_HCA", "a port but no name"},
        {"mlx5_0:", "NCCL_IB_HCA", "port after ':' must be a number"},
        /* '^' and '=' lead the list; inside it they are no device's name. */
        {"^=,,=,^", "--nics", "--nics='^=,,=,^': '=' is not a device name"},
        {"mlx5_0,^mlx5_1", "NCCL_IB_HCA", "'^mlx5_1' is not a device name ('^' may only lead the list"},
        {"mlx5 0", "NCCL_IB_HCA", "'mlx5 0' is not a device name (names hold no blanks"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct fb_devspec s;
        struct fb_err err = {FB_OK, ""};
        CHECK_INT(fb_devspec_parse(bad[i].text, bad[i].var, &s, &err), FB_ERR_USAGE);
        CHECK_CONTAINS(err.msg, bad[i].expect);
    }
    /* Empty entries are skipped, as NCCL does. */
    struct fb_devspec s;
    struct fb_err err = {FB_OK, ""};
    CHECK_INT(fb_devspec_parse("mlx5_0,,mlx5_1,", "NCCL_IB_HCA", &s, &err), FB_OK);
    CHECK_INT(s.n, 2);
}

static void devspec_caps_entries(void)
{
    char big[FB_DEVSPEC_MAX * 8 + 16] = "";
    size_t used = 0;
    for (int i = 0; i <= FB_DEVSPEC_MAX; i++)
        fb_strbuf_append(big, sizeof big, &used, "%sd%d", i ? "," : "", i);
    struct fb_devspec s;
    struct fb_err err = {FB_OK, ""};
    CHECK_INT(fb_devspec_parse(big, "NCCL_IB_HCA", &s, &err), FB_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "more than 32");
}

static void keep_worst(enum fb_check_outcome *kept, char *why, size_t len,
                       enum fb_check_outcome v, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static void keep_worst(enum fb_check_outcome *kept, char *why, size_t len,
                       enum fb_check_outcome v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fb_outcome_keep_worst(kept, why, len, v, fmt, ap);
    va_end(ap);
}

static void check_keeps_the_worst_verdict(void)
{
    struct fb_check c;
    fb_check_init(&c, "x");
    CHECK_INT(c.verdict, FB_CHECK_SKIP);
    fb_check_set(&c, FB_CHECK_OK, "fine");
    fb_check_set(&c, FB_CHECK_FAIL, "broken %d", 1);
    fb_check_set(&c, FB_CHECK_WARN, "meh");
    fb_check_set(&c, FB_CHECK_FAIL, "second failure");
    CHECK_INT(c.verdict, FB_CHECK_FAIL);
    CHECK_STR(c.evidence, "broken 1");
    fb_check_note(&c, "and %s", "more");
    CHECK_STR(c.evidence, "broken 1; and more");
}

static void check_evidence_is_one_line(void)
{
    struct fb_check c;
    fb_check_init(&c, "x");
    fb_check_set(&c, FB_CHECK_FAIL, "line one\nline two\ttab");
    CHECK(strchr(c.evidence, '\n') == NULL);
    CHECK(strchr(c.evidence, '\t') == NULL);
}

static void outcome_kept_outside_a_check(void)
{
    struct {
        enum fb_check_outcome v;
        char why[16];
    } pod = {FB_CHECK_OK, ""};
    keep_worst(&pod.v, pod.why, sizeof pod.why, FB_CHECK_WARN, "no %s", "IPC_LOCK");
    keep_worst(&pod.v, pod.why, sizeof pod.why, FB_CHECK_FAIL, "no fabric\nat all, really");
    keep_worst(&pod.v, pod.why, sizeof pod.why, FB_CHECK_WARN, "milder");
    CHECK_INT(pod.v, FB_CHECK_FAIL);
    CHECK_STR(pod.why, "no fabric at al"); /* one line, bounded */
}

struct row {
    const char *name;
    int value;
};

static void check_table_finds_rows_by_name(void)
{
    static const struct row table[] = {{"peermem", 1}, {"mtu", 2}, {"shm", 3}};
    const struct row *r = fb_check_table_find(table, sizeof table, sizeof table[0], "mtu");
    CHECK(r == &table[1]);
    r = fb_check_table_find(table, sizeof table, sizeof table[0], "shm");
    CHECK(r == &table[2]);
    CHECK(fb_check_table_find(table, sizeof table, sizeof table[0], "sh") == NULL);
    CHECK(fb_check_table_find(table, 0, sizeof table[0], "peermem") == NULL);
}

static void every_check_is_found_by_its_name(void)
{
    size_t n = 0;
    const struct fb_node_check_def *nd = fb_node_checks(&n);
    CHECK(n > 0);
    for (size_t i = 0; i < n; i++)
        CHECK(fb_node_check_find(nd[i].name) == &nd[i]);
    const struct fb_cluster_check_def *cd = fb_cluster_checks(&n);
    CHECK(n > 0);
    for (size_t i = 0; i < n; i++)
        CHECK(fb_cluster_check_find(cd[i].name) == &cd[i]);
    CHECK(fb_node_check_find("pod-fabric") == NULL);
    CHECK(fb_cluster_check_find("peermem") == NULL);
}

static void check_fails_on_a_failed_read(void)
{
    struct fb_check c;
    fb_check_init(&c, "x");
    struct fb_err err = {FB_OK, ""};
    CHECK(!fb_check_fails_on(&c, FB_OK, &err));
    CHECK_INT(c.verdict, FB_CHECK_SKIP);
    CHECK(fb_check_fails_on(&c, fb_fail(&err, FB_ERR_INPUT, "cannot read %s", "/proc/x"), &err));
    CHECK_INT(c.verdict, FB_CHECK_FAIL);
    CHECK_STR(c.evidence, "cannot read /proc/x");
}

static void check_culprits_unique(void)
{
    struct fb_check c;
    fb_check_init(&c, "x");
    fb_check_culprit(&c, "mlx5_%d", 1);
    fb_check_culprit(&c, "mlx5_1");
    fb_check_culprit(&c, "eth0");
    CHECK_INT(c.nculprits, 2);
    CHECK(fb_check_has_culprit(&c, "eth0"));
}

static void exit_codes_follow_the_worst(void)
{
    struct fb_check cs[3];
    fb_check_init(&cs[0], "a");
    fb_check_init(&cs[1], "b");
    fb_check_init(&cs[2], "c");
    fb_check_set(&cs[0], FB_CHECK_OK, "ok");
    CHECK_INT(fb_check_exit_status(cs, 3), FB_OK); /* skips do not count */
    fb_check_set(&cs[1], FB_CHECK_WARN, "w");
    CHECK_INT(fb_check_exit_status(cs, 3), FB_DOCTOR_WARN);
    CHECK_INT(fb_check_exit_status(cs, 3), 30);
    fb_check_set(&cs[2], FB_CHECK_FAIL, "f");
    CHECK_INT(fb_check_exit_status(cs, 3), 31);
    struct fb_check_counts k = fb_check_count(cs, 3);
    CHECK_INT(k.ok + k.warn + k.fail + k.skip, 3);
}

static void strbuf_truncates_visibly(void)
{
    char buf[16];
    size_t used = 0;
    fb_strbuf_append(buf, sizeof buf, &used, "%s", "abc");
    fb_strbuf_append(buf, sizeof buf, &used, "%s", "defghijklmnopqrstu");
    CHECK_INT(strlen(buf), 15);
    CHECK_STR(buf + 12, "...");
    fb_strbuf_append(buf, sizeof buf, &used, "%s", "more");
    CHECK_INT(strlen(buf), 15);
}

static void rootfs_reads_below_the_root(void)
{
    const char *root = tree_new();
    put("/sys/class/net/eth0/mtu", "9000\n");
    put("/sys/class/net/eth0/operstate", "up\n");
    put("/sys/class/net/bonding_masters", "bond0\n");
    put_dir("/sys/class/net/eth10");
    put_dir("/sys/class/net/eth2");
    long mtu = 0;
    struct fb_err err = {FB_OK, ""};
    CHECK_INT(fb_rootfs_read_long(root, "/sys/class/net/eth0/mtu", &mtu, &err), FB_OK);
    CHECK_INT(mtu, 9000);
    char withslash[300];
    snprintf(withslash, sizeof withslash, "%s/", root);
    CHECK_INT(fb_rootfs_read_long(withslash, "/sys/class/net/eth0/mtu", &mtu, &err), FB_OK);
    CHECK_INT(fb_rootfs_read_long(root, "/sys/class/net/eth0/operstate", &mtu, &err),
              FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "not an integer");
    fb_err_clear(&err);
    char line[32];
    CHECK_INT(fb_rootfs_read_line(root, "/nope", line, sizeof line, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "/nope");
    /* Version order and only interfaces (directories). */
    char **names = NULL;
    size_t n = 0;
    CHECK_INT(fb_inv_net_list(root, &names, &n, &err), FB_OK);
    CHECK_INT(n, 3);
    if (n == 3) {
        CHECK_STR(names[0], "eth0");
        CHECK_STR(names[1], "eth2");
        CHECK_STR(names[2], "eth10");
    }
    fb_rootfs_free_list(names, n);
}

static void rootfs_reads_links_as_written(void)
{
    const char *root = tree_new();
    put_link("/sys/class/infiniband/efa_0/device/driver", "../../../bus/pci/drivers/efa");
    put("/sys/class/infiniband/efa_0/node_type", "7: unspecified\n");
    char link[64];
    struct fb_err err = {FB_OK, ""};
    CHECK_INT(fb_rootfs_readlink(root, "/sys/class/infiniband/efa_0/device/driver", link,
                                 sizeof link, &err), FB_OK);
    CHECK_STR(link, "../../../bus/pci/drivers/efa");
    /* A target that does not fit is an error, not a cut name. */
    char small[8];
    CHECK_INT(fb_rootfs_readlink(root, "/sys/class/infiniband/efa_0/device/driver", small,
                                 sizeof small, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "longer than 7 bytes");
    fb_err_clear(&err);
    CHECK_INT(fb_rootfs_readlink(root, "/sys/class/infiniband/efa_0/node_type", link,
                                 sizeof link, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "cannot read link");
}

static void inventory_reads_hcas(void)
{
    const char *root = tree_new();
    put("/sys/class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
    put("/sys/class/infiniband/mlx5_0/ports/1/link_layer", "Ethernet\n");
    put("/sys/class/infiniband/mlx5_0/ports/1/rate", "200 Gb/sec (2X HDR)\n");
    put("/sys/class/infiniband/mlx5_0/device/net/ens1f0np0/ifindex", "4\n");
    put("/sys/class/infiniband/mlx5_1/ports/1/state", "1: DOWN\n");
    put("/sys/class/infiniband/mlx5_1/ports/1/link_layer", "Ethernet\n");
    put("/sys/class/infiniband/mlx5_1/ports/1/gid_attrs/ndevs/0", "ens2f0np0\n");
    struct fb_inv_rdma *devs = NULL;
    size_t n = 0;
    struct fb_err err = {FB_OK, ""};
    CHECK_INT(fb_inv_rdma_scan(root, &devs, &n, &err), FB_OK);
    CHECK_INT(n, 2);
    if (n == 2) {
        CHECK_STR(devs[0].port[0].state, "ACTIVE");
        CHECK(fb_inv_rdma_is_roce(&devs[0]));
        CHECK(fb_inv_rdma_any_active(&devs[0]));
        CHECK(!fb_inv_rdma_any_active(&devs[1]));
        CHECK_STR(devs[0].netdev[0], "ens1f0np0");
        CHECK_STR(devs[1].netdev[0], "ens2f0np0"); /* from the GID table */
        CHECK(fb_inv_rdma_port(&devs[0], 1) != NULL);
        CHECK(fb_inv_rdma_port(&devs[0], 2) == NULL);
    }
    free(devs);
    /* No RDMA in the kernel at all is not an error. */
    tree_new();
    CHECK_INT(fb_inv_rdma_scan(tree_root, &devs, &n, &err), FB_OK);
    CHECK_INT(n, 0);
}

static void checklist_text_and_json(void)
{
    struct fb_check cs[2];
    fb_check_init(&cs[0], "peermem");
    fb_check_set(&cs[0], FB_CHECK_FAIL, "nvidia_peermem not loaded");
    fb_check_fix(&cs[0], "modprobe nvidia-peermem");
    fb_check_culprit(&cs[0], "nvidia_peermem");
    fb_check_init(&cs[1], "shm");
    fb_check_set(&cs[1], FB_CHECK_OK, "/dev/shm is 8 GiB");
    struct fb_target_kv target[] = {{"host", "gpu-a1"}, {"root", "/"}};
    struct fb_checklist list = {"node", target, 2, cs, 2};
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    fb_checklist_print(f, &list);
    fclose(f);
    CHECK_CONTAINS(text, "fabric-doctor node: host gpu-a1; root /");
    CHECK_CONTAINS(text, "FAIL  peermem");
    CHECK_CONTAINS(text, "fix: modprobe nvidia-peermem");
    CHECK_CONTAINS(text, "OK    shm");
    CHECK_CONTAINS(text, "summary: 1 OK, 0 WARN, 1 FAIL, 0 SKIP: exit 31 (fail)");
    free(text);
    struct fb_envelope_info info = {"doctor", "fabric-doctor", "fabric-doctor", "lab", NULL};
    json_object *doc = fb_checklist_json(&list, &info);
    CHECK_STR(fb_json_get_string(doc, "kind"), "doctor");
    CHECK_STR(fb_json_get_string(doc, "cluster"), "lab");
    json_object *checks = NULL, *summary = NULL, *warnings = NULL;
    CHECK(json_object_object_get_ex(doc, "checks", &checks));
    CHECK_INT(json_object_array_length(checks), 2);
    json_object *c0 = json_object_array_get_idx(checks, 0);
    CHECK_STR(fb_json_get_string(c0, "verdict"), "fail");
    CHECK(json_object_object_get_ex(doc, "summary", &summary));
    int64_t code = 0;
    CHECK(fb_json_get_int64(summary, "exit_code", &code));
    CHECK_INT(code, 31);
    CHECK(json_object_object_get_ex(doc, "warnings", &warnings));
    CHECK_INT(json_object_array_length(warnings), 1);
    json_object_put(doc);
}

int main(void)
{
    RUN(devspec_plain_list_is_prefix_match);
    RUN(devspec_exact_and_exclude);
    RUN(devspec_ports);
    RUN(devspec_rejects_bad_lists);
    RUN(devspec_caps_entries);
    RUN(check_keeps_the_worst_verdict);
    RUN(check_evidence_is_one_line);
    RUN(outcome_kept_outside_a_check);
    RUN(check_table_finds_rows_by_name);
    RUN(every_check_is_found_by_its_name);
    RUN(check_fails_on_a_failed_read);
    RUN(check_culprits_unique);
    RUN(exit_codes_follow_the_worst);
    RUN(strbuf_truncates_visibly);
    RUN(rootfs_reads_below_the_root);
    RUN(rootfs_reads_links_as_written);
    RUN(inventory_reads_hcas);
    RUN(checklist_text_and_json);
    tree_done();
    return fbt_done();
}
