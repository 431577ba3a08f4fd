/* fabric-topo's analysis on hwloc XML topologies modelled on real GPU
 * servers (tests/fixtures/doctor/topo): device discovery, PCIe path levels,
 * NIC assignment, CPU plans, warnings and the JSON document. */
#include "core/files.h"
#include "core/jsonio.h"
#include "doctor/affinity.h"
#include "doctor/topo.h"
#include "doctor/topo_out.h"

#include "check.h"

static struct fb_topo t;
static struct fb_affinity a;

static const char *fixture(const char *name)
{
    static char buf[1024];
    const char *root = getenv("FB_ROOT");
    snprintf(buf, sizeof buf, "%s/tests/fixtures/doctor/topo/%s", root ? root : ".", name);
    return buf;
}

/* Loads and analyses; false (and a failed check) when either fails. */
static bool open_topo(const char *name, const char *nics)
{
    struct fb_err err = {FB_OK, ""};
    fb_affinity_free(&a);
    fb_topo_free(&t);
    enum fb_status st = fb_topo_load(fixture(name), &t, &err);
    CHECK_INT(st, FB_OK);
    if (st != FB_OK) {
        printf("#   %s\n", err.msg);
        return false;
    }
    st = fb_affinity_analyse(&t, nics, &a, &err);
    CHECK_INT(st, FB_OK);
    return st == FB_OK;
}

static long nic_index(const char *name)
{
    for (size_t n = 0; n < t.nnics; n++)
        if (strcmp(t.nics[n].name, name) == 0)
            return (long)n;
    return -1;
}

static const char *link_to(size_t gpu, const char *nic)
{
    long n = nic_index(nic);
    return n < 0 ? "missing" : fb_link_name(fb_topo_link(&t, gpu, (size_t)n));
}

static size_t count_findings(enum fb_finding_code code)
{
    size_t k = 0;
    for (size_t i = 0; i < a.nfindings; i++)
        k += a.findings[i].code == code;
    return k;
}

static const char *finding_text(enum fb_finding_code code)
{
    for (size_t i = 0; i < a.nfindings; i++)
        if (a.findings[i].code == code)
            return a.findings[i].message;
    return "(no such finding)";
}

static void healthy_server_devices(void)
{
    if (!open_topo("h100-8gpu-8nic.xml", NULL))
        return;
    CHECK_STR(t.hostname, "gpu-healthy");
    CHECK_INT(t.npackages, 2);
    CHECK_INT(t.nnuma, 2);
    CHECK_INT(t.ncores, 112);
    CHECK_INT(t.npus, 224);
    /* The BMC VGA and the NVSwitches are not GPUs; the X710 ports are NICs. */
    CHECK_INT(t.ngpus, 8);
    CHECK_INT(t.nnics, 10);
    CHECK_STR(t.gpus[0].busid, "0000:18:00.0");
    CHECK_STR(t.gpus[0].model, "GH100 [H100 SXM5 80GB]");
    CHECK_STR(t.gpus[0].osdevs, "cuda0,nvml0");
    CHECK_INT(t.gpus[5].package, 1);
    CHECK_INT(t.gpus[5].numa, 1);
    long m0 = nic_index("mlx5_0");
    CHECK(m0 >= 0);
    if (m0 >= 0) {
        CHECK_STR(t.nics[m0].rdma, "mlx5_0");
        CHECK_STR(t.nics[m0].netdevs, "ibp25s0");
        CHECK_NEAR(t.nics[m0].link_GBps, 63.015, 1e-3);
    }
    CHECK(nic_index("eno1") >= 0);
}

static void path_levels(void)
{
    if (!open_topo("h100-8gpu-8nic.xml", NULL))
        return;
    CHECK_STR(link_to(0, "mlx5_0"), "PIX");  /* same switch */
    CHECK_STR(link_to(0, "mlx5_1"), "NODE"); /* other host bridge, same socket */
    CHECK_STR(link_to(0, "mlx5_4"), "SYS");  /* other socket */
    CHECK_STR(link_to(7, "mlx5_7"), "PIX");
    if (!open_topo("2gpu-cross-socket.xml", NULL))
        return;
    CHECK_STR(link_to(0, "mlx5_1"), "PHB"); /* same host bridge, other root port */
    CHECK_STR(link_to(1, "mlx5_0"), "SYS");
    if (!open_topo("h100-8gpu-4nic.xml", NULL))
        return;
    CHECK_STR(link_to(0, "mlx5_0"), "PXB"); /* through a lower and an upper switch */
    CHECK_STR(link_to(2, "mlx5_1"), "PXB");
    CHECK_STR(link_to(0, "mlx5_1"), "NODE");
}

static void healthy_plan(void)
{
    if (!open_topo("h100-8gpu-8nic.xml", NULL))
        return;
    CHECK_INT(a.nfindings, 0);
    CHECK_INT(a.nfabric, 8); /* RDMA NICs only: the X710 ports stay out */
    CHECK_STR(a.ib_hca, "=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7");
    for (size_t g = 0; g < t.ngpus; g++) {
        char want[32];
        snprintf(want, sizeof want, "mlx5_%zu", g);
        CHECK(a.ranks[g].nic >= 0);
        if (a.ranks[g].nic >= 0)
            CHECK_STR(t.nics[a.ranks[g].nic].name, want);
        CHECK_INT(a.ranks[g].level, FB_LINK_PIX);
    }
    /* Four ranks share socket 0's 56 cores: 14 cores each, with siblings. */
    char cpus[128];
    hwloc_bitmap_list_snprintf(cpus, sizeof cpus, a.ranks[0].cpus);
    CHECK_STR(cpus, "0-13,112-125");
    hwloc_bitmap_list_snprintf(cpus, sizeof cpus, a.ranks[7].cpus);
    CHECK_STR(cpus, "98-111,210-223");
    CHECK(!hwloc_bitmap_intersects(a.ranks[0].cpus, a.ranks[1].cpus));
}

static void nic_on_wrong_socket(void)
{
    if (!open_topo("h100-nic-wrong-socket.xml", NULL))
        return;
    long m5 = nic_index("mlx5_5");
    CHECK(m5 >= 0);
    if (m5 < 0)
        return;
    CHECK_INT(t.nics[m5].package, 0);
    CHECK_STR(link_to(5, "mlx5_5"), "SYS");
    CHECK_INT(a.best[5], FB_LINK_NODE);
    CHECK_INT(count_findings(FB_FIND_NIC_UNUSED), 1);
    CHECK_CONTAINS(finding_text(FB_FIND_NIC_UNUSED), "mlx5_5");
    CHECK_CONTAINS(finding_text(FB_FIND_SOCKET_IMBALANCE), "socket 0: 4 GPUs, 5 NICs");
    CHECK_CONTAINS(finding_text(FB_FIND_SOCKET_IMBALANCE), "idle there: mlx5_5");
    CHECK_CONTAINS(finding_text(FB_FIND_FAR_NIC), "GPU5");
    CHECK_INT(count_findings(FB_FIND_NIC_SHARED), 1);
    /* GPUs with a NIC on their own switch keep it. */
    CHECK_INT(a.ranks[4].level, FB_LINK_PIX);
    CHECK_INT(a.ranks[6].level, FB_LINK_PIX);
    CHECK(strstr(a.ib_hca, "mlx5_5") == NULL);
}

static void gpus_outnumber_nics(void)
{
    if (!open_topo("h100-8gpu-4nic.xml", NULL))
        return;
    CHECK_INT(count_findings(FB_FIND_NIC_SHARED), 4);
    CHECK_CONTAINS(finding_text(FB_FIND_NIC_SHARED), "GPU0, GPU1 share mlx5_0");
    CHECK_INT(count_findings(FB_FIND_NIC_UNUSED), 0);
    CHECK_STR(a.ib_hca, "=mlx5_0,mlx5_1,mlx5_2,mlx5_3");
}

/* The GPUs a NIC serves, as the finding and the table list them. */
static void gpus_served_by_a_nic(void)
{
    if (!open_topo("h100-8gpu-4nic.xml", NULL))
        return;
    char buf[64];
    CHECK_INT(fb_affinity_served(&t, &a, (size_t)nic_index("mlx5_0"), ", ", buf, sizeof buf), 2);
    CHECK_STR(buf, "GPU0, GPU1");
    CHECK_INT(fb_affinity_served(&t, &a, (size_t)nic_index("mlx5_3"), ",", buf, sizeof buf), 2);
    CHECK_STR(buf, "GPU6,GPU7");
    char small[8];
    fb_affinity_served(&t, &a, (size_t)nic_index("mlx5_0"), ", ", small, sizeof small);
    CHECK_STR(small, "GPU0...");
}

static void gpu_across_the_interconnect(void)
{
    if (!open_topo("2gpu-cross-socket.xml", NULL))
        return;
    CHECK_INT(count_findings(FB_FIND_CROSS_SOCKET), 1);
    CHECK_CONTAINS(finding_text(FB_FIND_CROSS_SOCKET), "GPU1");
    CHECK_CONTAINS(finding_text(FB_FIND_CROSS_SOCKET), "socket 0");
    /* Equal SYS candidates: the idle one, not GPU0's. */
    CHECK(a.ranks[1].nic >= 0);
    if (a.ranks[1].nic >= 0)
        CHECK_STR(t.nics[a.ranks[1].nic].name, "mlx5_1");
    CHECK_INT(count_findings(FB_FIND_NIC_SHARED), 0);
}

static void degraded_nic_link(void)
{
    if (!open_topo("h100-nic-slow-link.xml", NULL))
        return;
    CHECK_INT(count_findings(FB_FIND_NIC_LINK_SLOW), 1);
    CHECK_CONTAINS(finding_text(FB_FIND_NIC_LINK_SLOW), "mlx5_3");
    CHECK_CONTAINS(finding_text(FB_FIND_NIC_LINK_SLOW), "15.8 GB/s");
}

static void nics_option(void)
{
    if (!open_topo("h100-8gpu-8nic.xml", "^=mlx5_7"))
        return;
    CHECK_INT(a.nfabric, 7);
    CHECK_INT(a.ranks[7].level, FB_LINK_NODE);
    CHECK(strstr(a.ib_hca, "mlx5_7") == NULL);
    if (!open_topo("h100-8gpu-8nic.xml", "eno"))
        return;
    CHECK_INT(a.nfabric, 2);
    CHECK_INT(count_findings(FB_FIND_CROSS_SOCKET), 4); /* GPUs 4..7 reach eno* across sockets */
    CHECK_STR(a.ib_hca, "");
    struct fb_err err = {FB_OK, ""};
    struct fb_affinity bad;
    CHECK_INT(fb_affinity_analyse(&t, "mlx5_0:zero", &bad, &err), FB_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "--nics");
}

static void no_gpus_no_io(void)
{
    if (!open_topo("synthetic-2pack-noio.xml", NULL))
        return;
    CHECK_INT(t.ngpus, 0);
    CHECK_INT(t.nnics, 0);
    CHECK_INT(t.npackages, 2);
    CHECK_INT(a.nfindings, 0);
}

/* A 1.x export (type "Socket", I/O under the NUMA node beside the socket,
 * CPU-less GPU-memory NUMA nodes) places every GPU and NIC on the socket
 * and NUMA node the 2.x export of the same machine gives, so paths, plan
 * and findings are the same; a 3.0 export (OS device kinds as a bitmask,
 * the host name after the root object) names every device as 2.x does. */
static void same_machine_in_v1_and_v2(const char *v2, const char *v1)
{
    struct fb_topo t2, t1;
    struct fb_affinity a2, a1;
    struct fb_err err = {FB_OK, ""};
    CHECK_INT(fb_topo_load(fixture(v2), &t2, &err), FB_OK);
    CHECK_INT(fb_topo_load(fixture(v1), &t1, &err), FB_OK);
    if (err.code != FB_OK) {
        printf("#   %s\n", err.msg);
        return;
    }
    CHECK_STR(t1.hostname, t2.hostname);
    CHECK_INT(t1.npackages, t2.npackages);
    CHECK_INT(t1.ngpus, t2.ngpus);
    CHECK_INT(t1.nnics, t2.nnics);
    const struct {
        struct fb_topo_dev *one, *two;
        size_t n;
    } kinds[] = {{t1.gpus, t2.gpus, t1.ngpus < t2.ngpus ? t1.ngpus : t2.ngpus},
                 {t1.nics, t2.nics, t1.nnics < t2.nnics ? t1.nnics : t2.nnics}};
    for (size_t k = 0; k < 2; k++) {
        for (size_t i = 0; i < kinds[k].n; i++) {
            const struct fb_topo_dev *d1 = &kinds[k].one[i], *d2 = &kinds[k].two[i];
            CHECK_STR(d1->busid, d2->busid);
            CHECK_STR(d1->name, d2->name);
            CHECK_STR(d1->rdma, d2->rdma);
            CHECK_STR(d1->netdevs, d2->netdevs);
            CHECK_STR(d1->osdevs, d2->osdevs);
            CHECK(d2->package >= 0);
            CHECK_INT(d1->package, d2->package);
            CHECK_INT(d1->numa, d2->numa);
        }
    }
    for (size_t g = 0; g < t1.ngpus && g < t2.ngpus; g++)
        for (size_t n = 0; n < t1.nnics && n < t2.nnics; n++)
            CHECK_INT(fb_topo_link(&t1, g, n), fb_topo_link(&t2, g, n));
    CHECK_INT(fb_affinity_analyse(&t2, NULL, &a2, &err), FB_OK);
    CHECK_INT(fb_affinity_analyse(&t1, NULL, &a1, &err), FB_OK);
    CHECK_INT(a1.nfindings, a2.nfindings);
    for (size_t i = 0; i < a1.nfindings && i < a2.nfindings; i++)
        CHECK_STR(a1.findings[i].message, a2.findings[i].message);
    CHECK_STR(a1.ib_hca, a2.ib_hca);
    fb_affinity_free(&a1);
    fb_affinity_free(&a2);
    fb_topo_free(&t1);
    fb_topo_free(&t2);
}

static void v1_exports_place_devices_as_v2(void)
{
    same_machine_in_v1_and_v2("h100-8gpu-8nic.xml", "h100-8gpu-8nic-v1.xml");
    same_machine_in_v1_and_v2("h100-nic-wrong-socket.xml", "h100-nic-wrong-socket-v1.xml");
}

static void v3_export_reads_as_v2(void)
{
    same_machine_in_v1_and_v2("h100-8gpu-8nic.xml", "h100-8gpu-8nic-v3.xml");
    if (!open_topo("h100-8gpu-8nic-v3.xml", NULL))
        return;
    CHECK_STR(t.hostname, "gpu-healthy");
    CHECK_STR(a.ib_hca, "=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7");
}

/* A fixture with every `from` replaced by `to`, loaded and analysed. */
static bool open_variant(const char *name, const char *from, const char *to)
{
    char *text = NULL;
    size_t len = 0;
    struct fb_err err = {FB_OK, ""};
    if (fb_read_file(fixture(name), &text, &len, &err) != FB_OK)
        return false;
    char path[] = "/tmp/fbtopo-variant.XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    for (char *p = text, *hit; f && p; p = hit ? hit + strlen(from) : NULL) {
        hit = strstr(p, from);
        fwrite(p, 1, hit ? (size_t)(hit - p) : strlen(p), f);
        if (hit)
            fputs(to, f);
    }
    if (f)
        fclose(f);
    free(text);
    fb_affinity_free(&a);
    fb_topo_free(&t);
    enum fb_status st = fb_topo_load(path, &t, &err);
    unlink(path);
    CHECK_INT(st, FB_OK);
    if (st == FB_OK)
        st = fb_affinity_analyse(&t, NULL, &a, &err);
    return st == FB_OK;
}

/* MI25/MI50 firmware reports display class 0300; without ROCm's hwloc
 * plugin the export has only DRM and OpenCL devices for them. On a node
 * with an RDMA NIC (or several alike) they are GPUs, marked unconfirmed;
 * the BMC VGA beside them is not. */
static void amd_display_class_gpus(void)
{
    if (!open_topo("mi50-4gpu-display-class.xml", NULL))
        return;
    CHECK_INT(t.ngpus, 4);
    for (size_t g = 0; g < t.ngpus; g++)
        CHECK(t.gpus[g].by_class);
    CHECK_STR(t.gpus[3].busid, "0000:73:00.0");
    CHECK_INT(count_findings(FB_FIND_GPU_UNCONFIRMED), 1);
    CHECK_CONTAINS(finding_text(FB_FIND_GPU_UNCONFIRMED), "GPU0 (0000:13:00.0), GPU1");
    CHECK_CONTAINS(finding_text(FB_FIND_GPU_UNCONFIRMED), "1002:66a1, Vega 20");
    CHECK_STR(a.ib_hca, "=mlx5_0");
    /* ROCm saw one of them: its twins are GPUs too, nothing unconfirmed. */
    if (!open_variant("mi50-4gpu-display-class.xml", "name=\"card1\"", "name=\"rsmi0\""))
        return;
    CHECK_INT(t.ngpus, 4);
    CHECK(!t.gpus[1].by_class);
    CHECK_INT(count_findings(FB_FIND_GPU_UNCONFIRMED), 0);
    /* MI300: a processing accelerator (class 1200), a GPU for sure. */
    if (!open_variant("mi50-4gpu-display-class.xml", "0300 [1002:66a1]", "1200 [1002:74a1]"))
        return;
    CHECK_INT(t.ngpus, 4);
    CHECK_INT(count_findings(FB_FIND_GPU_UNCONFIRMED), 0);
}

/* A workstation's Radeon beside a GeForce is its display card; alone on a
 * node without RDMA NIC it is not counted, but named as a possible GPU. */
static void amd_display_card_is_not_a_gpu(void)
{
    if (!open_topo("ws-1gpu-gige-wifi.xml", NULL))
        return;
    CHECK_INT(t.ngpus, 1);
    CHECK_STR(t.gpus[0].busid, "0000:08:00.0");
    CHECK_INT(t.nuncounted, 0);
    CHECK_INT(count_findings(FB_FIND_GPU_UNCONFIRMED), 0);
    if (!open_topo("ws-radeon-gige-wifi.xml", NULL))
        return;
    CHECK_INT(t.ngpus, 0);
    CHECK_INT(t.nuncounted, 1);
    CHECK_STR(t.uncounted, "0000:44:00.0 (1002:6863)");
    CHECK_CONTAINS(finding_text(FB_FIND_GPU_UNCONFIRMED), "may be Instinct GPUs");
}

/* Without RDMA NICs, wireless, gigabit (by controller name) and
 * slow-linked NICs carry no fabric: each is left out with a finding, and
 * the plan takes the 10-Gigabit NIC; with only those, there is no fabric
 * NIC. --nics still names any. */
static void slow_gigabit_and_wireless_nics_are_not_fabric(void)
{
    if (!open_topo("ws-1gpu-10g-gige-wifi.xml", NULL))
        return;
    CHECK_INT(a.nfabric, 1);
    CHECK_INT(count_findings(FB_FIND_NOT_FABRIC), 3);
    CHECK(a.ranks[0].nic >= 0);
    if (a.ranks[0].nic >= 0)
        CHECK_STR(t.nics[a.ranks[0].nic].name, "enp10s0");
    CHECK_CONTAINS(finding_text(FB_FIND_NOT_FABRIC), "enp4s0 (0000:04:00.0) is not counted as a "
                                                     "fabric NIC: a gigabit controller");
    CHECK(!a.fabric[nic_index("enp5s0")]);
    CHECK(!a.fabric[nic_index("wlp6s0")]);
    CHECK_INT(count_findings(FB_FIND_NO_NIC), 0);
    if (!open_topo("ws-1gpu-gige-wifi.xml", NULL))
        return;
    CHECK_INT(a.nfabric, 0);
    CHECK_INT(count_findings(FB_FIND_NO_NIC), 1);
    if (!open_topo("ws-1gpu-gige-wifi.xml", "enp4s0"))
        return;
    CHECK_INT(a.nfabric, 1);
    CHECK_INT(count_findings(FB_FIND_NOT_FABRIC), 0);
    /* An exclusion list narrows the default set, which leaves them out. */
    if (!open_topo("ws-1gpu-10g-gige-wifi.xml", "^=enp5s0"))
        return;
    CHECK_INT(a.nfabric, 1);
    CHECK_INT(count_findings(FB_FIND_NOT_FABRIC), 3);
}

/* GKE's TCPXO GPU NICs are gVNICs, virtual NICs on an emulated PCIe link:
 * every one stays a fabric NIC, each GPU on the one on its switch. */
static void gvnic_nics_are_fabric(void)
{
    if (!open_topo("a3mega-8gpu-gvnic.xml", NULL))
        return;
    CHECK_INT(a.nfabric, 9);
    CHECK_INT(count_findings(FB_FIND_NOT_FABRIC), 0);
    for (size_t g = 0; g < t.ngpus; g++) {
        char want[32];
        snprintf(want, sizeof want, "eth%zu", g + 1);
        CHECK(a.ranks[g].nic >= 0);
        if (a.ranks[g].nic >= 0)
            CHECK_STR(t.nics[a.ranks[g].nic].name, want);
        CHECK_INT(a.ranks[g].level, FB_LINK_PIX);
    }
}

/* I/O hung at the root of a 1.x export has no locality: no NUMA node, no
 * socket, no local CPUs, and no path across host bridges; the host bridge
 * GPU0 shares with the HCA still gives PHB. */
static void io_at_the_root_has_no_locality(void)
{
    if (!open_topo("2gpu-io-at-root-v1.xml", NULL))
        return;
    CHECK_INT(t.ngpus, 2);
    CHECK_INT(t.gpus[1].numa, -1);
    CHECK_INT(t.gpus[1].package, -1);
    CHECK(t.gpus[1].locality_unknown);
    CHECK(hwloc_bitmap_iszero(t.gpus[1].cpuset));
    CHECK_INT(t.nics[0].numa, -1);
    CHECK_STR(link_to(0, "mlx5_0"), "PHB");
    CHECK_STR(link_to(1, "mlx5_0"), "unknown");
    CHECK_INT(count_findings(FB_FIND_LOCALITY_UNKNOWN), 1);
    CHECK_CONTAINS(finding_text(FB_FIND_LOCALITY_UNKNOWN), "GPU1 (0000:82:00.0), mlx5_0");
    CHECK_INT(count_findings(FB_FIND_CROSS_SOCKET), 0);
    CHECK_INT(count_findings(FB_FIND_FAR_NIC), 0);
    CHECK(hwloc_bitmap_iszero(a.ranks[1].cpus));
}

/* A real 1.x export (hwloc's devel09 image, ../shared/realworld/hwloc):
 * all its I/O hangs under NUMA node 0, so every NIC is on that node and on
 * the one socket that holds it. */
static void real_v1_export_sockets(void)
{
    char path[1024];
    const char *root = getenv("FB_ROOT");
    snprintf(path, sizeof path, "%s/../shared/realworld/hwloc/hwloc_v1_dell_r410_ib.xml",
             root ? root : ".");
    if (access(path, R_OK) != 0) {
        printf("#   %s not there: nothing to read\n", path);
        return;
    }
    struct fb_topo x;
    struct fb_err err = {FB_OK, ""};
    CHECK_INT(fb_topo_load(path, &x, &err), FB_OK);
    if (err.code != FB_OK)
        return;
    CHECK_INT(x.nnics, 3);
    for (size_t n = 0; n < x.nnics; n++) {
        CHECK_INT(x.nics[n].numa, 0);
        CHECK(x.nics[n].package >= 0);
        CHECK_INT(x.nics[n].package, x.nics[0].package);
    }
    fb_topo_free(&x);
}

static void bad_inputs(void)
{
    struct fb_topo x;
    struct fb_err err = {FB_OK, ""};
    CHECK_INT(fb_topo_load("/nonexistent/topo.xml", &x, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "/nonexistent/topo.xml");
    fb_err_clear(&err);
    char path[] = "/tmp/fbtopo.XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0) {
        CHECK(write(fd, "<topology version=\"2.0\"><object", 32) == 32);
        close(fd);
        CHECK_INT(fb_topo_load(path, &x, &err), FB_ERR_INPUT);
        CHECK_CONTAINS(err.msg, "not an hwloc XML topology");
        unlink(path);
    }
}

static void live_machine_loads(void)
{
    struct fb_topo x;
    struct fb_affinity y;
    struct fb_err err = {FB_OK, ""};
    CHECK_INT(fb_topo_load(NULL, &x, &err), FB_OK);
    CHECK(x.npus >= 1);
    CHECK_STR(x.source, "live");
    CHECK_INT(fb_affinity_analyse(&x, NULL, &y, &err), FB_OK);
    fb_affinity_free(&y);
    fb_topo_free(&x);
}

static void json_document(void)
{
    if (!open_topo("h100-nic-wrong-socket.xml", NULL))
        return;
    struct fb_envelope_info info = {"topology", "fabric-topo", "fabric-topo", NULL, t.hostname};
    json_object *doc = fb_topo_json(&t, &a, &info);
    CHECK_STR(fb_json_get_string(doc, "kind"), "topology");
    CHECK_STR(fb_json_get_string(doc, "cluster"), getenv("FABRIC_CLUSTER") ? getenv("FABRIC_CLUSTER")
                                                                             : "gpu-wrong-socket");
    json_object *gpus = NULL, *ranks = NULL, *findings = NULL, *warnings = NULL, *suggest = NULL;
    CHECK(json_object_object_get_ex(doc, "gpus", &gpus));
    CHECK_INT(json_object_array_length(gpus), 8);
    json_object *g5 = json_object_array_get_idx(gpus, 5), *links = NULL;
    CHECK_STR(fb_json_get_string(g5, "nearest_level"), "NODE");
    CHECK(json_object_object_get_ex(g5, "links", &links));
    CHECK_STR(fb_json_get_string(links, "mlx5_5"), "SYS");
    CHECK(json_object_object_get_ex(doc, "ranks", &ranks));
    CHECK_STR(fb_json_get_string(json_object_array_get_idx(ranks, 0), "cpus"), "0-13,112-125");
    CHECK(json_object_object_get_ex(doc, "findings", &findings));
    CHECK(json_object_object_get_ex(doc, "warnings", &warnings));
    CHECK_INT(json_object_array_length(findings), (int)a.nfindings);
    CHECK_INT(json_object_array_length(warnings), (int)a.nfindings);
    CHECK(json_object_object_get_ex(doc, "suggest", &suggest));
    CHECK_CONTAINS(fb_json_get_string(suggest, "nccl_ib_hca"), "=mlx5_0,");
    json_object_put(doc);
}

int main(void)
{
    RUN(healthy_server_devices);
    RUN(path_levels);
    RUN(healthy_plan);
    RUN(nic_on_wrong_socket);
    RUN(gpus_outnumber_nics);
    RUN(gpus_served_by_a_nic);
    RUN(gpu_across_the_interconnect);
    RUN(degraded_nic_link);
    RUN(nics_option);
    RUN(no_gpus_no_io);
    RUN(v1_exports_place_devices_as_v2);
    RUN(v3_export_reads_as_v2);
    RUN(amd_display_class_gpus);
    RUN(amd_display_card_is_not_a_gpu);
    RUN(slow_gigabit_and_wireless_nics_are_not_fabric);
    RUN(gvnic_nics_are_fabric);
    RUN(io_at_the_root_has_no_locality);
    RUN(real_v1_export_sockets);
    RUN(bad_inputs);
    RUN(live_machine_loads);
    RUN(json_document);
    fb_affinity_free(&a);
    fb_topo_free(&t);
    return fbt_done();
}
