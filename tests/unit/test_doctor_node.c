/* fabric-doctor node checks, one healthy and several broken trees per
 * check; each asserts the exact verdict and that the evidence (and the
 * culprit list) names what is wrong. */
#include "doctor/node.h"
#include "doctor/topo.h"

#include "check.h"
#include "test_doctor_tree.h"

static struct fb_node_ctx ctx;
static struct fb_check c;

static void fresh(void)
{
    tree_new();
    fb_node_ctx_init(&ctx, tree_root);
}

static void run_check(void (*fn)(const struct fb_node_ctx *, struct fb_check *), const char *name)
{
    fb_check_init(&c, name);
    fn(&ctx, &c);
}

#define EXPECT(want, text)                                       \
    do {                                                         \
        CHECK_STR(fb_verdict_name(c.verdict), want);             \
        CHECK_CONTAINS(c.evidence, text);                        \
    } while (0)

#define MODULE(name) name " 16384 0 - Live 0x0000000000000000\n"
#define PROPRIETARY "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.161.08  Tue Mar  5 2024\n"
#define OPEN_MODULE "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build\n"

/* ---- peermem ---- */

static void peermem_loaded(void)
{
    fresh();
    put("/proc/modules", MODULE("nvidia_peermem") MODULE("nvidia"));
    run_check(fb_node_check_peermem, "peermem");
    EXPECT("ok", "nvidia_peermem loaded");
}

static void peermem_legacy_module(void)
{
    fresh();
    put("/proc/modules", MODULE("nv_peer_mem") MODULE("nvidia"));
    run_check(fb_node_check_peermem, "peermem");
    EXPECT("ok", "nv_peer_mem loaded");
}

static void peermem_missing_proprietary_driver(void)
{
    fresh();
    put("/proc/modules", MODULE("nvidia_uvm") MODULE("nvidia") MODULE("ib_core"));
    put("/proc/driver/nvidia/version", PROPRIETARY);
    put("/proc/sys/kernel/osrelease", "6.5.0-35-generic\n");
    run_check(fb_node_check_peermem, "peermem");
    EXPECT("fail", "nvidia_peermem not in /proc/modules");
    CHECK_CONTAINS(c.evidence, "535.161.08 is the proprietary kernel module");
    CHECK(fb_check_has_culprit(&c, "nvidia_peermem"));
    CHECK_CONTAINS(c.fix, "modprobe nvidia-peermem");
}

static void peermem_dmabuf_open_module(void)
{
    fresh();
    put("/proc/modules", MODULE("nvidia"));
    put("/proc/driver/nvidia/version", OPEN_MODULE);
    put("/proc/sys/kernel/osrelease", "6.1.0-18-amd64\n");
    run_check(fb_node_check_peermem, "peermem");
    EXPECT("ok", "dma-buf works");
    CHECK_CONTAINS(c.evidence, "550.54.15");
}

static void peermem_dmabuf_old_kernel(void)
{
    fresh();
    put("/proc/modules", MODULE("nvidia"));
    put("/proc/driver/nvidia/version", OPEN_MODULE);
    put("/proc/sys/kernel/osrelease", "5.4.0-150-generic\n");
    run_check(fb_node_check_peermem, "peermem");
    EXPECT("fail", "Linux 5.4.0-150-generic predates dma-buf RDMA (5.12)");
}

static void peermem_no_driver(void)
{
    fresh();
    put("/proc/modules", MODULE("virtio_net"));
    run_check(fb_node_check_peermem, "peermem");
    EXPECT("fail", "no nvidia kernel module");
    CHECK(fb_check_has_culprit(&c, "nvidia"));
}

/* A kernel without loadable modules has no /proc/modules: /sys/module tells. */
static void peermem_from_sys_module(void)
{
    fresh();
    put_dir("/sys/module/nvidia");
    put_dir("/sys/module/nvidia_peermem");
    run_check(fb_node_check_peermem, "peermem");
    EXPECT("ok", "/sys/module");
    fresh();
    run_check(fb_node_check_peermem, "peermem");
    EXPECT("fail", "/proc/modules");
}

/* ---- memlock and ipc-lock ---- */

static void limits(const char *proc, const char *memlock)
{
    char path[128], text[512];
    snprintf(path, sizeof path, "%s/limits", proc);
    snprintf(text, sizeof text,
             "Limit                     Soft Limit           Hard Limit           Units\n"
             "Max open files            1048576              1048576              files\n"
             "Max locked memory         %-20s %-20s bytes\n", memlock, memlock);
    put(path, text);
}

static void capeff(const char *proc, const char *hex)
{
    char path[128], text[256];
    snprintf(path, sizeof path, "%s/status", proc);
    snprintf(text, sizeof text, "Name:\tpython3\nCapInh:\t0000000000000000\nCapEff:\t%s\n"
                                "CapBnd:\t%s\n", hex, hex);
    put(path, text);
}

#define CAPS_WITH_IPC_LOCK "00000000a80465fb"    /* bit 14 set */
#define CAPS_WITHOUT_IPC_LOCK "00000000a80425fb" /* bit 14 clear */

static void memlock_unlimited(void)
{
    fresh();
    limits("/proc/self", "unlimited");
    capeff("/proc/self", CAPS_WITHOUT_IPC_LOCK);
    run_check(fb_node_check_memlock, "memlock");
    EXPECT("ok", "unlimited");
    run_check(fb_node_check_ipc_lock, "ipc-lock");
    EXPECT("ok", "not needed while RLIMIT_MEMLOCK is unlimited");
}

static void memlock_low_without_cap(void)
{
    fresh();
    limits("/proc/self", "65536");
    capeff("/proc/self", CAPS_WITHOUT_IPC_LOCK);
    run_check(fb_node_check_memlock, "memlock");
    EXPECT("fail", "RLIMIT_MEMLOCK 64 KiB without CAP_IPC_LOCK");
    CHECK_CONTAINS(c.fix, "ulimit -l unlimited");
    run_check(fb_node_check_ipc_lock, "ipc-lock");
    EXPECT("fail", "CAP_IPC_LOCK not held");
    CHECK_CONTAINS(c.evidence, "64 KiB");
    CHECK(fb_check_has_culprit(&c, "IPC_LOCK"));
}

static void memlock_low_with_cap(void)
{
    fresh();
    limits("/proc/self", "8388608");
    capeff("/proc/self", CAPS_WITH_IPC_LOCK);
    run_check(fb_node_check_memlock, "memlock");
    EXPECT("ok", "RLIMIT_MEMLOCK 8 MiB, but CAP_IPC_LOCK");
    run_check(fb_node_check_ipc_lock, "ipc-lock");
    EXPECT("ok", "CAP_IPC_LOCK held");
}

static void memlock_large_finite_warns(void)
{
    fresh();
    limits("/proc/self", "4294967296");
    capeff("/proc/self", CAPS_WITHOUT_IPC_LOCK);
    run_check(fb_node_check_memlock, "memlock");
    EXPECT("warn", "RLIMIT_MEMLOCK 4 GiB");
    run_check(fb_node_check_ipc_lock, "ipc-lock");
    EXPECT("warn", "4 GiB");
}

static void memlock_of_another_process(void)
{
    fresh();
    limits("/proc/self", "unlimited");
    limits("/proc/4242", "65536");
    capeff("/proc/4242", CAPS_WITHOUT_IPC_LOCK);
    snprintf(ctx.proc, sizeof ctx.proc, "/proc/4242");
    run_check(fb_node_check_memlock, "memlock");
    EXPECT("fail", "/proc/4242/limits");
}

static void memlock_unreadable(void)
{
    fresh();
    run_check(fb_node_check_memlock, "memlock");
    EXPECT("fail", "/proc/self/limits");
    run_check(fb_node_check_ipc_lock, "ipc-lock");
    EXPECT("fail", "/proc/self/status");
}

/* Files that are there but lack the line, or its value, are unreadable too. */
static void memlock_lines_missing_or_empty(void)
{
    fresh();
    put("/proc/self/limits", "Limit                     Soft Limit           Hard Limit\n");
    put("/proc/self/status", "Name:\tpython3\nCapEff:\t\n");
    run_check(fb_node_check_memlock, "memlock");
    EXPECT("fail", "/proc/self/limits has no readable 'Max locked memory' line");
    run_check(fb_node_check_ipc_lock, "ipc-lock");
    EXPECT("fail", "/proc/self/status has no readable CapEff line");
    limits("/proc/self", "64kB");
    capeff("/proc/self", "not-hex");
    run_check(fb_node_check_memlock, "memlock");
    EXPECT("fail", "no readable 'Max locked memory' line");
    run_check(fb_node_check_ipc_lock, "ipc-lock");
    EXPECT("fail", "no readable CapEff line");
}

/* ---- shm ---- */

static void shm_mount(const char *options)
{
    char text[512];
    snprintf(text, sizeof text, "overlay / overlay rw 0 0\nshm /dev/shm tmpfs %s 0 0\n", options);
    put("/proc/self/mounts", text);
    put("/proc/meminfo", "MemTotal:       16777216 kB\nMemFree:        1 kB\n");
}

static void shm_container_default(void)
{
    fresh();
    shm_mount("rw,nosuid,nodev,noexec,relatime,size=65536k");
    run_check(fb_node_check_shm, "shm");
    EXPECT("fail", "/dev/shm is 64 MiB");
    CHECK_CONTAINS(c.fix, "medium: Memory");
}

static void shm_small_warns(void)
{
    fresh();
    shm_mount("rw,size=512m");
    run_check(fb_node_check_shm, "shm");
    EXPECT("warn", "512 MiB");
}

static void shm_large_ok(void)
{
    fresh();
    shm_mount("rw,size=1g");
    run_check(fb_node_check_shm, "shm");
    EXPECT("ok", "1 GiB");
    shm_mount("rw,size=50%");
    run_check(fb_node_check_shm, "shm");
    EXPECT("ok", "8 GiB");
    shm_mount("rw,relatime");
    run_check(fb_node_check_shm, "shm");
    EXPECT("ok", "tmpfs default: half of RAM");
}

static void shm_later_mount_wins(void)
{
    fresh();
    put("/proc/self/mounts", "shm /dev/shm tmpfs rw,size=8g 0 0\n"
                             "shm /dev/shm tmpfs rw,size=64m 0 0\n");
    run_check(fb_node_check_shm, "shm");
    EXPECT("fail", "64 MiB");
}

static void shm_not_mounted(void)
{
    fresh();
    put("/proc/self/mounts", "overlay / overlay rw 0 0\n");
    put_dir("/dev/shm");
    run_check(fb_node_check_shm, "shm");
    EXPECT("warn", "not a mount of its own");
    fresh();
    put("/proc/self/mounts", "overlay / overlay rw 0 0\n");
    run_check(fb_node_check_shm, "shm");
    EXPECT("fail", "no /dev/shm");
}

/* ---- rdma-devices ---- */

static void hca(const char *dev, const char *state, const char *link_layer, const char *netdev,
                const char *mtu)
{
    char path[256], text[64];
    snprintf(path, sizeof path, "/sys/class/infiniband/%s/ports/1/state", dev);
    put(path, state);
    snprintf(path, sizeof path, "/sys/class/infiniband/%s/ports/1/link_layer", dev);
    put(path, link_layer);
    snprintf(path, sizeof path, "/sys/class/infiniband/%s/ports/1/rate", dev);
    put(path, "400 Gb/sec (4X NDR)\n");
    snprintf(path, sizeof path, "/sys/class/infiniband/%s/device/net/%s/ifindex", dev, netdev);
    put(path, "3\n");
    snprintf(path, sizeof path, "/sys/class/net/%s/mtu", netdev);
    snprintf(text, sizeof text, "%s\n", mtu);
    put(path, text);
    snprintf(path, sizeof path, "/sys/class/net/%s/operstate", netdev);
    put(path, "up\n");
}

static void uverbs(int n)
{
    for (int i = 0; i < n; i++) {
        char path[64];
        snprintf(path, sizeof path, "/dev/infiniband/uverbs%d", i);
        put(path, "");
    }
}

static void ib_node(int n)
{
    fresh();
    for (int i = 0; i < n; i++) {
        char dev[16], nd[16];
        snprintf(dev, sizeof dev, "mlx5_%d", i);
        snprintf(nd, sizeof nd, "ibp%ds0", 24 + i);
        hca(dev, "4: ACTIVE\n", "InfiniBand\n", nd, "4092");
    }
    uverbs(n);
}

static void rdma_devices_healthy(void)
{
    ib_node(4);
    run_check(fb_node_check_rdma_devices, "rdma-devices");
    EXPECT("ok", "4 devices (mlx5_0, mlx5_1, mlx5_2, mlx5_3)");
    CHECK_CONTAINS(c.evidence, "4 uverbs");
}

/* An InfiniBand fabric for the GPUs and RoCE for storage: both named. */
static void rdma_devices_mixed_links(void)
{
    ib_node(3);
    put("/sys/class/infiniband/mlx5_2/ports/1/link_layer", "Ethernet\n");
    run_check(fb_node_check_rdma_devices, "rdma-devices");
    EXPECT("ok", "mixed links: InfiniBand (mlx5_0, mlx5_1); Ethernet (mlx5_2)");
    ib_node(2);
    run_check(fb_node_check_rdma_devices, "rdma-devices");
    EXPECT("ok", "2 devices (mlx5_0, mlx5_1), link InfiniBand 400 Gb/sec (4X NDR)");
}

static void rdma_devices_none(void)
{
    fresh();
    run_check(fb_node_check_rdma_devices, "rdma-devices");
    EXPECT("fail", "no RDMA device in /sys/class/infiniband");
    CHECK_CONTAINS(c.evidence, "TCP sockets");
}

static void rdma_devices_not_in_container(void)
{
    ib_node(2);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s/dev/infiniband'", tree_root);
    CHECK_INT(system(cmd), 0);
    run_check(fb_node_check_rdma_devices, "rdma-devices");
    EXPECT("fail", "no /dev/infiniband");
    CHECK(fb_check_has_culprit(&c, "/dev/infiniband"));
}

static void rdma_devices_port_down(void)
{
    ib_node(3);
    put("/sys/class/infiniband/mlx5_1/ports/1/state", "1: DOWN\n");
    run_check(fb_node_check_rdma_devices, "rdma-devices");
    EXPECT("warn", "mlx5_1 port 1 DOWN");
    CHECK(fb_check_has_culprit(&c, "mlx5_1"));
    CHECK(!fb_check_has_culprit(&c, "mlx5_0"));
    CHECK_CONTAINS(c.fix, "NCCL_IB_HCA=^=mlx5_1");
}

static void rdma_devices_missing_uverbs(void)
{
    ib_node(4);
    char path[400];
    snprintf(path, sizeof path, "%s/dev/infiniband/uverbs3", tree_root);
    CHECK_INT(unlink(path), 0);
    run_check(fb_node_check_rdma_devices, "rdma-devices");
    EXPECT("warn", "3 uverbs files for 4 RDMA devices");
}

/* ---- ib-hca ---- */

static void ib_hca_with(const char *value)
{
    ctx.env.ib_hca = value;
    run_check(fb_node_check_ib_hca, "ib-hca");
}

static void ib_hca_unset_and_exact_list(void)
{
    ib_node(2);
    ib_hca_with(NULL);
    EXPECT("ok", "unset");
    ib_hca_with("=mlx5_0:1,mlx5_1:1");
    EXPECT("ok", "selects 2 of 2 devices");
}

/* Unset, a DOWN device is not among those NCCL uses. */
static void ib_hca_unset_leaves_down_device_out(void)
{
    ib_node(3);
    put("/sys/class/infiniband/mlx5_1/ports/1/state", "1: DOWN\n");
    ib_hca_with(NULL);
    EXPECT("ok", "with an active port (mlx5_0, mlx5_2; not mlx5_1: no ACTIVE port");
}

static void ib_hca_names_missing_device(void)
{
    ib_node(2);
    ib_hca_with("mlx5_0,mlx5_9");
    EXPECT("fail", "entry 'mlx5_9' matches no RDMA device (have mlx5_0, mlx5_1)");
    CHECK(fb_check_has_culprit(&c, "mlx5_9"));
}

static void ib_hca_names_missing_port(void)
{
    ib_node(2);
    ib_hca_with("=mlx5_0:2");
    EXPECT("fail", "mlx5_0 has no port 2");
    CHECK(fb_check_has_culprit(&c, "mlx5_0:2"));
}

static void ib_hca_prefix_surprise(void)
{
    ib_node(12);
    ib_hca_with("mlx5_1,mlx5_2");
    EXPECT("warn", "entry 'mlx5_1' is a prefix: it also selects mlx5_10, mlx5_11");
    CHECK(fb_check_has_culprit(&c, "mlx5_1"));
    CHECK_CONTAINS(c.fix, "=mlx5_1");
    ib_hca_with("mlx5");
    EXPECT("ok", "selects 12 of 12"); /* a deliberate prefix is fine */
}

static void ib_hca_excludes_everything(void)
{
    ib_node(2);
    ib_hca_with("^mlx5");
    EXPECT("fail", "leaves no RDMA device");
    ib_hca_with("^mlx5_9");
    EXPECT("warn", "excludes 'mlx5_9', which matches no device");
    ib_hca_with("^=mlx5_1");
    EXPECT("ok", "selects 1 of 2 devices: mlx5_0");
}

static void ib_hca_bad_syntax(void)
{
    ib_node(1);
    ib_hca_with("mlx5_0:one");
    EXPECT("fail", "port 'one' is not a port number");
}

static void ib_hca_selects_down_device(void)
{
    ib_node(2);
    put("/sys/class/infiniband/mlx5_1/ports/1/state", "1: DOWN\n");
    ib_hca_with("=mlx5_0,mlx5_1");
    EXPECT("warn", "selects mlx5_1 with no ACTIVE port");
    CHECK(fb_check_has_culprit(&c, "mlx5_1"));
}

static void ib_hca_without_devices(void)
{
    fresh();
    ib_hca_with("mlx5_0");
    EXPECT("fail", "lists no device");
    ib_hca_with(NULL);
    EXPECT("skip", "unset and no RDMA device");
}

/* ---- socket-ifname ---- */

static void iface(const char *name, const char *mtu, const char *state)
{
    char path[128], text[32];
    snprintf(path, sizeof path, "/sys/class/net/%s/mtu", name);
    snprintf(text, sizeof text, "%s\n", mtu);
    put(path, text);
    snprintf(path, sizeof path, "/sys/class/net/%s/operstate", name);
    snprintf(text, sizeof text, "%s\n", state);
    put(path, text);
}

static void host_ifaces(void)
{
    fresh();
    iface("lo", "65536", "unknown");
    iface("eth0", "1500", "up");
    iface("eth1", "1500", "down");
    iface("docker0", "1500", "up");
}

static void socket_with(const char *value)
{
    ctx.env.socket_ifname = value;
    run_check(fb_node_check_socket_ifname, "socket-ifname");
}

static void socket_ifname_healthy(void)
{
    host_ifaces();
    socket_with(NULL);
    EXPECT("ok", "unset");
    socket_with("=eth0");
    EXPECT("ok", "selects eth0 (up, MTU 1500)");
    socket_with("^docker,lo");
    EXPECT("ok", "leaves eth0, eth1");
}

static void socket_ifname_missing(void)
{
    host_ifaces();
    socket_with("eth0,ens5");
    EXPECT("fail", "entry 'ens5' matches no interface");
    CHECK(fb_check_has_culprit(&c, "ens5"));
    socket_with("=eth");
    EXPECT("fail", "entry 'eth' matches no interface");
}

static void socket_ifname_leaves_loopback(void)
{
    host_ifaces();
    socket_with("^docker0");
    EXPECT("warn", "leaves lo selectable");
    CHECK(fb_check_has_culprit(&c, "lo"));
    CHECK_CONTAINS(c.fix, "^docker,lo");
    socket_with("lo");
    EXPECT("warn", "selects lo");
}

static void socket_ifname_down_or_all_excluded(void)
{
    host_ifaces();
    socket_with("=eth1");
    EXPECT("warn", "eth1, which is down");
    CHECK(fb_check_has_culprit(&c, "eth1"));
    socket_with("^eth,lo,docker");
    EXPECT("fail", "excludes every interface");
}

/* ---- mtu ---- */

static void roce_node(const char *mtu1, const char *mtu2, const char *mtu3)
{
    fresh();
    hca("mlx5_0", "4: ACTIVE\n", "Ethernet\n", "ens1np0", mtu1);
    hca("mlx5_1", "4: ACTIVE\n", "Ethernet\n", "ens2np0", mtu2);
    hca("mlx5_2", "4: ACTIVE\n", "Ethernet\n", "ens3np0", mtu3);
}

static void mtu_roce_healthy(void)
{
    roce_node("9000", "9000", "9000");
    run_check(fb_node_check_mtu, "mtu");
    EXPECT("ok", "RoCE netdevs: 3 x 9000");
}

static void mtu_roce_too_small(void)
{
    roce_node("1500", "1500", "1500");
    run_check(fb_node_check_mtu, "mtu");
    EXPECT("fail", "RoCE netdev ens1np0 has MTU 1500 < 4200");
    CHECK(fb_check_has_culprit(&c, "ens3np0"));
}

static void mtu_roce_mismatch(void)
{
    roce_node("9000", "4200", "9000");
    run_check(fb_node_check_mtu, "mtu");
    EXPECT("warn", "most have 9000, but ens2np0 4200");
    CHECK(fb_check_has_culprit(&c, "ens2np0"));
    CHECK(!fb_check_has_culprit(&c, "ens1np0"));
}

static void mtu_ipoib_not_flagged(void)
{
    ib_node(2);
    run_check(fb_node_check_mtu, "mtu");
    EXPECT("ok", "IPoIB netdevs: 2 x 4092");
}

static void mtu_socket_interfaces(void)
{
    fresh();
    iface("eth1", "8244", "up");
    iface("eth2", "8244", "up");
    iface("eth3", "1460", "up");
    ctx.env.fastrak_ifname = "eth1,eth2,eth3";
    run_check(fb_node_check_mtu, "mtu");
    EXPECT("warn", "NCCL_FASTRAK_IFNAME interfaces: most have 8244, but eth3 1460");
    fresh();
    run_check(fb_node_check_mtu, "mtu");
    EXPECT("skip", "no RDMA netdev");
}

/* ---- TCPXO ---- */

static void tcpxo_profile_cases(void)
{
    fresh();
    run_check(fb_node_check_tcpxo_profile, "tcpxo-profile");
    EXPECT("fail", "no /usr/local/nvidia/lib64/nccl-env-profile.sh");
    CHECK_CONTAINS(c.fix, "/home/kubernetes/bin/nvidia");
    put("/usr/local/nvidia/lib64/nccl-env-profile.sh", "export NCCL_FASTRAK_CTRL_DEV=eth0\n");
    run_check(fb_node_check_tcpxo_profile, "tcpxo-profile");
    EXPECT("warn", "present but not sourced");
    ctx.env.fastrak_set = true;
    run_check(fb_node_check_tcpxo_profile, "tcpxo-profile");
    EXPECT("ok", "present; NCCL_FASTRAK_* set");
    ctx.env.nccl_lib_dir = "/opt/nccl/lib";
    run_check(fb_node_check_tcpxo_profile, "tcpxo-profile");
    EXPECT("fail", "no /opt/nccl/lib/nccl-env-profile.sh (NCCL_LIB_DIR set)");
}

static void tcpxo_aperture_cases(void)
{
    fresh();
    run_check(fb_node_check_tcpxo_aperture, "tcpxo-aperture");
    EXPECT("fail", "no /dev/aperture_devices");
    CHECK(fb_check_has_culprit(&c, "/dev/aperture_devices"));
    put_dir("/dev/aperture_devices");
    run_check(fb_node_check_tcpxo_aperture, "tcpxo-aperture");
    EXPECT("fail", "is empty");
    put("/dev/aperture_devices/0000:06:00.1", "");
    put("/dev/aperture_devices/0000:0c:00.1", "");
    run_check(fb_node_check_tcpxo_aperture, "tcpxo-aperture");
    EXPECT("warn", "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY is unset");
    ctx.env.llcm_dir = "/dev/aperture_devices";
    run_check(fb_node_check_tcpxo_aperture, "tcpxo-aperture");
    EXPECT("ok", "has 2 entries");
    ctx.env.llcm_dir = "/dev/llcm";
    run_check(fb_node_check_tcpxo_aperture, "tcpxo-aperture");
    EXPECT("fail", "no /dev/llcm (NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY)");
}

/* ---- fabric detection, applicability, environment ---- */

static void fabric_detection(void)
{
    ib_node(1);
    fb_node_resolve_fabric(&ctx, FB_FABRIC_AUTO);
    CHECK_INT(ctx.fabric, FB_FABRIC_RDMA);
    CHECK_CONTAINS(ctx.fabric_why, "detected: 1 RDMA device");
    fresh();
    put_dir("/dev/aperture_devices");
    fb_node_resolve_fabric(&ctx, FB_FABRIC_AUTO);
    CHECK_INT(ctx.fabric, FB_FABRIC_TCPXO);
    fresh();
    ctx.env.fastrak_set = true;
    fb_node_resolve_fabric(&ctx, FB_FABRIC_AUTO);
    CHECK_INT(ctx.fabric, FB_FABRIC_TCPXO);
    fresh();
    fb_node_resolve_fabric(&ctx, FB_FABRIC_AUTO);
    CHECK_INT(ctx.fabric, FB_FABRIC_RDMA);
    CHECK_CONTAINS(ctx.fabric_why, "assumed");
    fb_node_resolve_fabric(&ctx, FB_FABRIC_TCPXO);
    CHECK_INT(ctx.fabric, FB_FABRIC_TCPXO);
}

static void checks_skip_outside_their_fabric(void)
{
    fresh();
    fb_node_resolve_fabric(&ctx, FB_FABRIC_RDMA);
    const struct fb_node_check_def *def = fb_node_check_find("tcpxo-aperture");
    CHECK(def != NULL);
    fb_node_run(&ctx, def, false, &c);
    EXPECT("skip", "applies to GKE TCPXO nodes");
    fb_node_run(&ctx, def, true, &c); /* named: runs anyway */
    EXPECT("fail", "no /dev/aperture_devices");
    CHECK(fb_node_check_find("nonsense") == NULL);
}

static void environment_from_block(void)
{
    static const char block[] = "PATH=/bin\0NCCL_IB_HCA==mlx5_0\0NCCL_SOCKET_IFNAME=eth0\0"
                                "NCCL_FASTRAK_NUM_FLOWS=2\0NCCL_LIB_DIR=/x\0";
    struct fb_node_env env;
    fb_node_env_from_block(block, sizeof block - 1, &env);
    CHECK_STR(env.ib_hca, "=mlx5_0");
    CHECK_STR(env.socket_ifname, "eth0");
    CHECK_STR(env.nccl_lib_dir, "/x");
    CHECK(env.fastrak_set);
    CHECK(env.fastrak_ifname == NULL);
}

/* ---- gpu-nic-affinity ---- */

static const char *fixture(const char *name, char *buf, size_t len)
{
    const char *root = getenv("FB_ROOT");
    snprintf(buf, len, "%s/tests/fixtures/doctor/topo/%s", root ? root : ".", name);
    return buf;
}

static void affinity_from_xml(void)
{
    char path[1024];
    struct fb_topo t;
    struct fb_err err = {FB_OK, ""};
    fresh();
    CHECK_INT(fb_topo_load(fixture("h100-8gpu-8nic.xml", path, sizeof path), &t, &err), FB_OK);
    ctx.topo = &t;
    run_check(fb_node_check_gpu_nic_affinity, "gpu-nic-affinity");
    EXPECT("ok", "8 GPUs on 8 fabric NICs, one each: 8 at PIX");
    fb_topo_free(&t);
    CHECK_INT(fb_topo_load(fixture("h100-nic-wrong-socket.xml", path, sizeof path), &t, &err),
              FB_OK);
    run_check(fb_node_check_gpu_nic_affinity, "gpu-nic-affinity");
    EXPECT("warn", "GPU5");
    CHECK(fb_check_has_culprit(&c, "mlx5_5"));
    CHECK(fb_check_has_culprit(&c, "GPU5"));
    fb_topo_free(&t);
    CHECK_INT(fb_topo_load(fixture("synthetic-2pack-noio.xml", path, sizeof path), &t, &err),
              FB_OK);
    run_check(fb_node_check_gpu_nic_affinity, "gpu-nic-affinity");
    EXPECT("skip", "no GPU");
    fb_topo_free(&t);
    /* AMD display-class GPUs without a ROCm device: counted, said so. */
    CHECK_INT(fb_topo_load(fixture("mi50-4gpu-display-class.xml", path, sizeof path), &t, &err),
              FB_OK);
    run_check(fb_node_check_gpu_nic_affinity, "gpu-nic-affinity");
    EXPECT("warn", "AMD display-class devices (1002:66a1, Vega 20) with no ROCm device");
    fb_topo_free(&t);
    CHECK_INT(fb_topo_load(fixture("ws-radeon-gige-wifi.xml", path, sizeof path), &t, &err),
              FB_OK);
    run_check(fb_node_check_gpu_nic_affinity, "gpu-nic-affinity");
    EXPECT("skip", "0000:44:00.0 (1002:6863) without a ROCm device may be GPUs");
    fb_topo_free(&t);
    ctx.topo = NULL;
    run_check(fb_node_check_gpu_nic_affinity, "gpu-nic-affinity");
    EXPECT("skip", "pass --topology");
}

int main(void)
{
    RUN(peermem_loaded);
    RUN(peermem_legacy_module);
    RUN(peermem_missing_proprietary_driver);
    RUN(peermem_dmabuf_open_module);
    RUN(peermem_dmabuf_old_kernel);
    RUN(peermem_no_driver);
    RUN(peermem_from_sys_module);
    RUN(memlock_unlimited);
    RUN(memlock_low_without_cap);
    RUN(memlock_low_with_cap);
    RUN(memlock_large_finite_warns);
    RUN(memlock_of_another_process);
    RUN(memlock_unreadable);
    RUN(memlock_lines_missing_or_empty);
    RUN(shm_container_default);
    RUN(shm_small_warns);
    RUN(shm_large_ok);
    RUN(shm_later_mount_wins);
    RUN(shm_not_mounted);
    RUN(rdma_devices_healthy);
    RUN(rdma_devices_none);
    RUN(rdma_devices_mixed_links);
    RUN(rdma_devices_not_in_container);
    RUN(rdma_devices_port_down);
    RUN(rdma_devices_missing_uverbs);
    RUN(ib_hca_unset_and_exact_list);
    RUN(ib_hca_unset_leaves_down_device_out);
    RUN(ib_hca_names_missing_device);
    RUN(ib_hca_names_missing_port);
    RUN(ib_hca_prefix_surprise);
    RUN(ib_hca_excludes_everything);
    RUN(ib_hca_bad_syntax);
    RUN(ib_hca_selects_down_device);
    RUN(ib_hca_without_devices);
    RUN(socket_ifname_healthy);
    RUN(socket_ifname_missing);
    RUN(socket_ifname_leaves_loopback);
    RUN(socket_ifname_down_or_all_excluded);
    RUN(mtu_roce_healthy);
    RUN(mtu_roce_too_small);
    RUN(mtu_roce_mismatch);
    RUN(mtu_ipoib_not_flagged);
    RUN(mtu_socket_interfaces);
    RUN(tcpxo_profile_cases);
    RUN(tcpxo_aperture_cases);
    RUN(fabric_detection);
    RUN(checks_skip_outside_their_fabric);
    RUN(environment_from_block);
    RUN(affinity_from_xml);
    tree_done();
    return fbt_done();
}
