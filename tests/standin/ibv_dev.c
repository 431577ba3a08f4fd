/* Devices, ports and GID tables described by the FB_STANDIN_IB_* knobs, the
 * registry directory every process shares, and the sysfs-style tree that
 * ibv_devinfo, fabric-doctor and the probe can read. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/if_packet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ibv_internal.h"

static struct {
    pthread_once_t once;
    int ndev, failed;
    struct sib_dev devs[SIB_DEVS_MAX];
    char host[64];
    char dir[512];
    char sysfs[512];
    _Atomic uint32_t *ids;
    double retry_cap_s;
    int dmabuf;
} g = {.once = PTHREAD_ONCE_INIT};

double sib_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t fnv1a(const char *s, uint64_t h)
{
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

/* Per-device knob: a comma list of VALUE (every device), DEV=VALUE,
 * HOST:DEV=VALUE, HOST:*=VALUE; the most specific item for this host and
 * device wins. Returns the value or dflt. */
static const char *knob(const char *var, const char *dev, const char *dflt, char *buf, size_t len)
{
    const char *v = getenv(var);
    if (v == NULL || *v == '\0')
        return dflt;
    int best = 0;
    const char *p = v;
    while (*p) {
        size_t n = strcspn(p, ",");
        char item[256];
        snprintf(item, sizeof item, "%.*s", (int)(n < 255 ? n : 255), p);
        p += n + (p[n] == ',');
        char *eq = strchr(item, '=');
        int rank = 1;
        const char *val = item;
        if (eq != NULL) {
            *eq = '\0';
            val = eq + 1;
            char *colon = strchr(item, ':');
            const char *d = colon ? colon + 1 : item;
            if (colon != NULL) {
                *colon = '\0';
                if (strcmp(item, g.host) != 0)
                    continue;
            }
            int any = strcmp(d, "*") == 0;
            if (!any && strcmp(d, dev) != 0)
                continue;
            rank = colon ? (any ? 2 : 4) : (any ? 1 : 3);
        }
        if (rank >= best) {
            best = rank;
            snprintf(buf, len, "%.*s", (int)(len > 1 ? len - 1 : 0), val);
        }
    }
    return best ? buf : dflt;
}

static int bad_knob(const char *var, const char *dev, const char *val, const char *want)
{
    fprintf(stderr, "standin: %s: '%s' for %s is not %s\n", var, val, dev, want);
    return -1;
}

struct code { const char *name; unsigned code; };
static const struct code speeds[] = {{"SDR", 1},  {"DDR", 2},  {"QDR", 4},   {"FDR10", 8},
                                     {"FDR", 16}, {"EDR", 32}, {"HDR", 64}, {"NDR", 128}};
static const struct code widths[] = {{"1", 1}, {"4", 2}, {"8", 4}, {"12", 8}, {"2", 16}};

static int lookup(const struct code *t, size_t n, const char *name, unsigned *out)
{
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(t[i].name, name) == 0) {
            *out = t[i].code;
            return 0;
        }
    return -1;
}

/* The host's own address for RoCE GIDs: FB_STANDIN_IB_IPV4, else the first
 * non-loopback IPv4 interface (its name and MAC too). */
static void host_address(struct sib_port *p, uint32_t *ipv4, uint8_t mac[6], int *have_mac)
{
    const char *knobbed = getenv("FB_STANDIN_IB_IPV4");
    struct in_addr a;
    *ipv4 = 0;
    *have_mac = 0;
    if (knobbed != NULL && *knobbed && inet_pton(AF_INET, knobbed, &a) == 1)
        *ipv4 = a.s_addr;
    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs) != 0)
        return;
    for (struct ifaddrs *i = ifs; i != NULL && p->ndev[0] == '\0'; i = i->ifa_next) {
        if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET || strcmp(i->ifa_name, "lo") == 0)
            continue;
        snprintf(p->ndev, sizeof p->ndev, "%s", i->ifa_name);
        p->ndev_ifindex = if_nametoindex(i->ifa_name);
        if (*ipv4 == 0)
            *ipv4 = ((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr.s_addr;
    }
    for (struct ifaddrs *i = ifs; i != NULL && p->ndev[0]; i = i->ifa_next) {
        if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_PACKET || strcmp(i->ifa_name, p->ndev))
            continue;
        const struct sockaddr_ll *ll = (const struct sockaddr_ll *)(void *)i->ifa_addr;
        if (ll->sll_halen == 6) {
            memcpy(mac, ll->sll_addr, 6);
            *have_mac = 1;
        }
    }
    freeifaddrs(ifs);
}

static void add_gid(struct sib_port *p, const uint8_t raw[16], enum ibv_gid_type t)
{
    memcpy(p->gid[p->ngid], raw, 16);
    p->gid_type[p->ngid++] = t;
}

/* RoCE: the table a real port has: 0/1 link-local from the MAC (v1, v2),
 * 2/3 the interface's IPv4 address mapped (v1, v2). InfiniBand: the port GID
 * (subnet prefix fe80::/64 + port GUID). */
static void fill_gids(struct sib_dev *d)
{
    struct sib_port *p = &d->port;
    uint8_t raw[16] = {0xfe, 0x80};
    if (p->link_layer == IBV_LINK_LAYER_INFINIBAND) {
        for (int i = 0; i < 8; i++)
            raw[8 + i] = (uint8_t)(d->node_guid >> (56 - 8 * i));
        add_gid(p, raw, IBV_GID_TYPE_IB);
        p->gid_tbl_len = 128;
        return;
    }
    uint32_t ipv4;
    uint8_t mac[6];
    int have_mac;
    host_address(p, &ipv4, mac, &have_mac);
    if (!have_mac) {
        uint64_t h = fnv1a(g.host, 0xcbf29ce484222325ull) + (uint64_t)d->index;
        mac[0] = 0x02;
        for (int i = 1; i < 6; i++)
            mac[i] = (uint8_t)(h >> (8 * i));
    }
    raw[8] = mac[0] ^ 2;
    raw[9] = mac[1];
    raw[10] = mac[2];
    raw[11] = 0xff;
    raw[12] = 0xfe;
    memcpy(raw + 13, mac + 3, 3);
    add_gid(p, raw, IBV_GID_TYPE_ROCE_V1);
    add_gid(p, raw, IBV_GID_TYPE_ROCE_V2);
    if (ipv4 != 0) {
        uint8_t m[16] = {0};
        m[10] = m[11] = 0xff;
        memcpy(m + 12, &ipv4, 4);
        add_gid(p, m, IBV_GID_TYPE_ROCE_V1);
        add_gid(p, m, IBV_GID_TYPE_ROCE_V2);
    }
    p->gid_tbl_len = 255;
}

static int describe_port(struct sib_dev *d)
{
    const char *name = d->dev.name;
    struct sib_port *p = &d->port;
    char b[128];
    const char *v = knob("FB_STANDIN_IB_LINK", name, "ib", b, sizeof b);
    if (strcasecmp(v, "ib") == 0 || strcasecmp(v, "infiniband") == 0)
        p->link_layer = IBV_LINK_LAYER_INFINIBAND;
    else if (strcasecmp(v, "eth") == 0 || strcasecmp(v, "ethernet") == 0 || strcasecmp(v, "roce") == 0)
        p->link_layer = IBV_LINK_LAYER_ETHERNET;
    else
        return bad_knob("FB_STANDIN_IB_LINK", name, v, "ib or eth");
    int eth = p->link_layer == IBV_LINK_LAYER_ETHERNET;
    v = knob("FB_STANDIN_IB_STATE", name, "active", b, sizeof b);
    if (strcasecmp(v, "active") != 0 && strcasecmp(v, "down") != 0)
        return bad_knob("FB_STANDIN_IB_STATE", name, v, "active or down");
    p->active = strcasecmp(v, "active") == 0;
    v = knob("FB_STANDIN_IB_MTU", name, eth ? "1024" : "4096", b, sizeof b);
    int mtu = atoi(v);
    p->mtu = 0;
    for (int m = IBV_MTU_256; m <= IBV_MTU_4096; m++)
        if ((128 << m) == mtu)
            p->mtu = (enum ibv_mtu)m;
    if (p->mtu == 0)
        return bad_knob("FB_STANDIN_IB_MTU", name, v, "256, 512, 1024, 2048 or 4096");
    unsigned code;
    v = knob("FB_STANDIN_IB_SPEED", name, "NDR", b, sizeof b);
    if (lookup(speeds, sizeof speeds / sizeof *speeds, v, &code) != 0)
        return bad_knob("FB_STANDIN_IB_SPEED", name, v, "SDR, DDR, QDR, FDR10, FDR, EDR, HDR or NDR");
    p->speed = (uint8_t)code;
    v = knob("FB_STANDIN_IB_WIDTH", name, "4", b, sizeof b);
    char w[16];
    snprintf(w, sizeof w, "%s", v);
    size_t wl = strlen(w);
    if (wl > 0 && (w[wl - 1] == 'x' || w[wl - 1] == 'X'))
        w[wl - 1] = '\0'; /* "4x" as ibstat writes it */
    if (lookup(widths, sizeof widths / sizeof *widths, w, &code) != 0)
        return bad_knob("FB_STANDIN_IB_WIDTH", name, v, "1, 2, 4, 8 or 12 (or 4x ...)");
    p->width = (uint8_t)code;
    v = knob("FB_STANDIN_IB_RATE_GBPS", name, "0", b, sizeof b);
    char *end;
    p->cap_gbps = strtod(v, &end);
    if (*end != '\0' || p->cap_gbps < 0)
        return bad_knob("FB_STANDIN_IB_RATE_GBPS", name, v, "a rate in Gb/s");
    v = knob("FB_STANDIN_IB_TX_RATE_GBPS", name, "0", b, sizeof b);
    p->tx_gbps = strtod(v, &end);
    if (*end != '\0' || p->tx_gbps < 0)
        return bad_knob("FB_STANDIN_IB_TX_RATE_GBPS", name, v, "a rate in Gb/s");
    v = knob("FB_STANDIN_IB_RX_RATE_GBPS", name, "0", b, sizeof b);
    p->rx_gbps = strtod(v, &end);
    if (*end != '\0' || p->rx_gbps < 0)
        return bad_knob("FB_STANDIN_IB_RX_RATE_GBPS", name, v, "a rate in Gb/s");
    char dflt[16];
    uint64_t h = fnv1a(name, fnv1a("/", fnv1a(g.host, 0xcbf29ce484222325ull)));
    snprintf(dflt, sizeof dflt, "%u", 1 + (unsigned)(h % 0xbffe));
    v = knob("FB_STANDIN_IB_LID", name, dflt, b, sizeof b);
    long lid = strtol(v, &end, 0);
    if (*end != '\0' || lid < 1 || lid > 0xbfff)
        return bad_knob("FB_STANDIN_IB_LID", name, v, "a unicast LID (1-0xbfff)");
    p->lid = eth ? 0 : (uint16_t)lid;
    p->sm_lid = eth ? 0 : 1;
    d->node_guid = 0x0c42a10300000000ull | ((h >> 8) & 0xffffff00ull) | (uint64_t)(d->index & 0xff);
    fill_gids(d);
    return 0;
}

/* ---- the registry ------------------------------------------------------- */

static void registry_init(void)
{
    const char *d = getenv("FB_STANDIN_IB_DIR");
    if (d != NULL && *d)
        snprintf(g.dir, sizeof g.dir, "%s", d);
    else
        snprintf(g.dir, sizeof g.dir, "%s/fb-standin-ib-%u",
                 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", (unsigned)getuid());
    if (mkdir(g.dir, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "standin: cannot make the registry %s: %s\n", g.dir, strerror(errno));
        g.dir[0] = '\0';
        return;
    }
    size_t got = 0;
    g.ids = sib_map("ids", 4096, 1, &got);
    if (g.ids == NULL)
        g.dir[0] = '\0';
}

void *sib_map(const char *name, size_t len, int create, size_t *mapped)
{
    char path[1024];
    *mapped = 0;
    if (g.dir[0] == '\0')
        return NULL;
    snprintf(path, sizeof path, "%s/%s", g.dir, name);
    int fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
    if (fd < 0)
        return NULL;
    struct stat st;
    if ((create && ftruncate(fd, (off_t)len) != 0) || fstat(fd, &st) != 0 || (size_t)st.st_size < len) {
        close(fd);
        return NULL;
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return NULL;
    *mapped = (size_t)st.st_size;
    return p;
}

uint32_t sib_unique(int which)
{
    uint32_t n = atomic_fetch_add(&g.ids[which], 1u);
    switch (which) {
    case SIB_ID_QPN: return 0x100 + n % (0xffffffu - 0x100);
    case SIB_ID_KEY: return 0x1000 + n;
    default: return n + 1;
    }
}

const char *sib_registry_dir(void) { return g.dir; }
double sib_retry_cap_s(void) { return g.retry_cap_s; }
int sib_dmabuf_enabled(void) { return g.dmabuf; }

/* ---- the sysfs-style tree ---------------------------------------------- */

static int mkdirs(const char *path)
{
    char p[1024];
    snprintf(p, sizeof p, "%s", path);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, 0755) != 0 && errno != EEXIST)
            return -1;
        *s = '/';
    }
    return mkdir(p, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* Writes base/rel atomically (processes of one host write the same tree). */
static void put(const char *base, const char *rel, const char *fmt, ...)
{
    char path[1024], tmp[1100], dir[1024];
    snprintf(path, sizeof path, "%s/%s", base, rel);
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = '\0';
    if (mkdirs(dir) != 0)
        return;
    snprintf(tmp, sizeof tmp, "%s.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (f == NULL)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        unlink(tmp);
}

static void guid_text(uint64_t v, char *buf, size_t len)
{
    snprintf(buf, len, "%04x:%04x:%04x:%04x", (unsigned)(v >> 48) & 0xffff,
             (unsigned)(v >> 32) & 0xffff, (unsigned)(v >> 16) & 0xffff, (unsigned)v & 0xffff);
}

static double lane_nominal(unsigned speed)
{
    static const double g_[] = {2.5, 5, 10, 10, 14, 25, 50, 100};
    for (size_t i = 0; i < sizeof speeds / sizeof *speeds; i++)
        if (speeds[i].code == speed)
            return g_[i];
    return 0;
}

static int lanes(unsigned width)
{
    for (size_t i = 0; i < sizeof widths / sizeof *widths; i++)
        if (widths[i].code == width)
            return atoi(widths[i].name);
    return 0;
}

void sib_rate_text(const struct sib_port *p, char *buf, size_t len)
{
    const char *name = "?";
    for (size_t i = 0; i < sizeof speeds / sizeof *speeds; i++)
        if (speeds[i].code == p->speed)
            name = speeds[i].name;
    snprintf(buf, len, "%g Gb/sec (%dX %s)", lane_nominal(p->speed) * lanes(p->width), lanes(p->width), name);
}

static void write_tree(const struct sib_dev *d)
{
    const struct sib_port *p = &d->port;
    char b[1024], t[64];
    snprintf(b, sizeof b, "%s", d->dev.ibdev_path);
    put(b, "node_type", "1: CA\n");
    guid_text(d->node_guid, t, sizeof t);
    put(b, "node_guid", "%s\n", t);
    put(b, "sys_image_guid", "%s\n", t);
    put(b, "fw_ver", "28.39.1002\n");
    put(b, "hca_type", "MT4129\n");
    put(b, "board_id", "FB_STANDIN_%04d\n", d->index);
    put(b, "node_desc", "%s %s\n", g.host, d->dev.name);
    put(b, "device/numa_node", "0\n");
    put(b, "device/uevent", "DRIVER=mlx5_core\nPCI_SLOT_NAME=0000:%02x:00.0\n", 0x0c + 0x10 * d->index);
    put(b, "ports/1/state", p->active ? "4: ACTIVE\n" : "1: DOWN\n");
    put(b, "ports/1/phys_state", p->active ? "5: LinkUp\n" : "3: Disabled\n");
    put(b, "ports/1/link_layer", p->link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet\n" : "InfiniBand\n");
    sib_rate_text(p, t, sizeof t);
    put(b, "ports/1/rate", "%s\n", t);
    put(b, "ports/1/lid", "0x%x\n", p->lid);
    put(b, "ports/1/sm_lid", "0x%x\n", p->sm_lid);
    put(b, "ports/1/lid_mask_count", "0\n");
    for (int i = 0; i < SIB_GIDS_MAX; i++) {
        uint8_t zero[16] = {0};
        const uint8_t *r = i < p->ngid ? p->gid[i] : zero;
        char rel[64];
        snprintf(rel, sizeof rel, "ports/1/gids/%d", i);
        put(b, rel, "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x\n", r[0],
            r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13], r[14], r[15]);
        if (i >= p->ngid)
            continue;
        snprintf(rel, sizeof rel, "ports/1/gid_attrs/types/%d", i);
        put(b, rel, p->gid_type[i] == IBV_GID_TYPE_ROCE_V2 ? "RoCE v2\n" : "IB/RoCE v1\n");
        snprintf(rel, sizeof rel, "ports/1/gid_attrs/ndevs/%d", i);
        if (p->link_layer == IBV_LINK_LAYER_ETHERNET)
            put(b, rel, "%s\n", p->ndev);
    }
}

/* ---- the device list ----------------------------------------------------- */

static int describe_devices(void)
{
    const char *names = getenv("FB_STANDIN_IB_DEVICES");
    if (names == NULL)
        names = "mlx5_0";
    const char *s = getenv("FB_STANDIN_IB_SYSFS");
    if (s != NULL && *s)
        snprintf(g.sysfs, sizeof g.sysfs, "%s", s);
    else if (g.dir[0])
        snprintf(g.sysfs, sizeof g.sysfs, "%.400s/sysfs/%.64s", g.dir, g.host);
    char root[sizeof g.sysfs];
    snprintf(root, sizeof root, "%s", g.sysfs);
    for (const char *p = names; *p && g.ndev < SIB_DEVS_MAX;) {
        size_t n = strcspn(p, ",");
        if (n > 0 && n < IBV_SYSFS_NAME_MAX) {
            struct sib_dev *d = &g.devs[g.ndev];
            d->index = g.ndev;
            d->dev.node_type = IBV_NODE_CA;
            d->dev.transport_type = IBV_TRANSPORT_IB;
            char name[IBV_SYSFS_NAME_MAX];
            snprintf(name, sizeof name, "%.*s", (int)n, p);
            snprintf(d->dev.name, sizeof d->dev.name, "%s", name);
            snprintf(d->dev.dev_name, sizeof d->dev.dev_name, "uverbs%d", d->index);
            snprintf(d->dev.dev_path, sizeof d->dev.dev_path, "%.160s/sys/class/infiniband_verbs/uverbs%d",
                     root, d->index);
            snprintf(d->dev.ibdev_path, sizeof d->dev.ibdev_path, "%.160s/sys/class/infiniband/%s",
                     root, name);
            if (describe_port(d) != 0)
                return -1;
            g.ndev++;
        } else if (n > 0) {
            return bad_knob("FB_STANDIN_IB_DEVICES", "the list", p, "a device name under 64 characters");
        }
        p += n + (p[n] == ',');
    }
    for (int i = 0; i < g.ndev && g.sysfs[0]; i++) {
        write_tree(&g.devs[i]);
        /* the device node fabric-doctor looks for beside the tree */
        char rel[64];
        snprintf(rel, sizeof rel, "dev/infiniband/uverbs%d", i);
        put(root, rel, "");
    }
    return 0;
}

static void init_once(void)
{
    if (gethostname(g.host, sizeof g.host) != 0)
        snprintf(g.host, sizeof g.host, "localhost");
    g.host[sizeof g.host - 1] = '\0';
    const char *r = getenv("FB_STANDIN_IB_RETRY_MAX_MS");
    g.retry_cap_s = (r && *r ? atof(r) : 2000.0) / 1000.0;
    const char *dm = getenv("FB_STANDIN_IB_DMABUF");
    g.dmabuf = !(dm && strcmp(dm, "0") == 0);
    registry_init();
    if (describe_devices() != 0)
        g.failed = 1;
}

struct sib_dev *sib_devices(int *n)
{
    pthread_once(&g.once, init_once);
    *n = g.failed ? -1 : g.ndev;
    return g.devs;
}

const char *sib_host(void) { return g.host; }
