#include "doctor/affinity.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor/check.h"
#include "doctor/devspec.h"

const char *fb_finding_name(enum fb_finding_code code)
{
    switch (code) {
    case FB_FIND_NO_NIC: return "no-fabric-nic";
    case FB_FIND_FAR_NIC: return "far-nic";
    case FB_FIND_CROSS_SOCKET: return "cross-socket";
    case FB_FIND_NIC_SHARED: return "nic-shared";
    case FB_FIND_NIC_UNUSED: return "nic-unused";
    case FB_FIND_SOCKET_IMBALANCE: return "socket-imbalance";
    case FB_FIND_NIC_LINK_SLOW: return "nic-link-slow";
    case FB_FIND_NOT_FABRIC: return "not-fabric";
    case FB_FIND_GPU_UNCONFIRMED: return "gpu-unconfirmed";
    case FB_FIND_LOCALITY_UNKNOWN: return "locality-unknown";
    }
    return "unknown";
}

static void add_finding(struct fb_affinity *a, enum fb_finding_code code, long gpu, long nic,
                        const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void add_finding(struct fb_affinity *a, enum fb_finding_code code, long gpu, long nic,
                        const char *fmt, ...)
{
    if (a->nfindings == a->capfindings) {
        size_t cap = a->capfindings ? a->capfindings * 2 : 8;
        struct fb_finding *bigger = realloc(a->findings, cap * sizeof *bigger);
        if (bigger == NULL)
            return; /* findings are advice; losing one under OOM is acceptable */
        a->findings = bigger;
        a->capfindings = cap;
    }
    struct fb_finding *f = &a->findings[a->nfindings++];
    f->code = code;
    f->gpu = gpu;
    f->nic = nic;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->message, sizeof f->message, fmt, ap);
    va_end(ap);
}

static bool name_listed(const struct fb_devspec *spec, const char *name)
{
    for (size_t e = 0; e < spec->n; e++)
        if (fb_devspec_entry_matches(spec, e, name, -1))
            return true;
    return false;
}

/* A NIC answers to its RDMA device and to each interface name: an include
 * list takes it when any name is listed, an exclusion list drops it then. */
static bool nic_selected(const struct fb_devspec *spec, const struct fb_topo_dev *nic)
{
    bool listed = nic->rdma[0] && name_listed(spec, nic->rdma);
    char list[sizeof nic->netdevs];
    snprintf(list, sizeof list, "%s", nic->netdevs);
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok && !listed;
         tok = strtok_r(NULL, ",", &save))
        listed = name_listed(spec, tok);
    return spec->exclude ? !listed : listed;
}

/* "10" of "10-Gigabit", "40" of "40 Gigabit": a speed (2 to 800 Gb/s)
 * just before `at`, not a model number ("I350 Gigabit", "82576 Gigabit"). */
static bool speed_before(const char *model, const char *at)
{
    const char *end = at;
    if (end > model && (end[-1] == ' ' || end[-1] == '-'))
        end--;
    const char *start = end;
    while (start > model && (isdigit((unsigned char)start[-1]) || start[-1] == '.'))
        start--;
    if (start == end || (start > model && start[-1] != ' '))
        return false;
    double gbps = strtod(start, NULL);
    return gbps >= 2 && gbps <= 800;
}

/* A gigabit controller by the name hwloc gives it (PCIDevice): "I350
 * Gigabit Network Connection", "NetXtreme BCM5720 Gigabit Ethernet PCIe";
 * not "82599ES 10-Gigabit SFI/SFP+". */
static bool gigabit_model(const char *model)
{
    const char *g = strstr(model, "Gigabit");
    return g != NULL && !speed_before(model, g);
}

/* A WLAN or WWAN interface, as the kernel's predictable names (wlp5s0,
 * wwan0) and the old wlanN say. */
static bool wireless_netdev(const char *netdevs)
{
    char list[128];
    snprintf(list, sizeof list, "%s", netdevs);
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        if (strncmp(tok, "wl", 2) == 0 || strncmp(tok, "ww", 2) == 0)
            return true;
    return false;
}

/* Hypervisors' NICs (Google gVNIC, virtio, Amazon ENA, Microsoft MANA,
 * VMware vmxnet3) sit on an emulated PCIe link whose speed says nothing of
 * theirs: GKE's TCPXO GPU NICs are gVNICs. */
static bool virtual_nic(const struct fb_topo_dev *d)
{
    static const unsigned vendors[] = {0x1ae0, 0x1af4, 0x1d0f, 0x1414, 0x15ad};
    for (size_t i = 0; i < sizeof vendors / sizeof *vendors; i++)
        if (d->vendor_id == vendors[i])
            return true;
    return false;
}

/* A PCIe link below one 10 Gb/s port (1.25 GB/s) feeds no fabric NIC. */
#define FABRIC_MIN_LINK_GBPS 1.25f

/* Why a NIC without RDMA cannot carry fabric traffic, or NULL when it can:
 * a wireless interface, a gigabit controller (the management port), a
 * PCIe link too slow for a 10 Gb/s port. */
static const char *not_fabric_why(const struct fb_topo_dev *d, char *buf, size_t len)
{
    if (wireless_netdev(d->netdevs))
        return "a wireless interface";
    if (gigabit_model(d->model)) {
        snprintf(buf, len, "a gigabit controller (%s), a management port", d->model);
        return buf;
    }
    if (!virtual_nic(d) && d->link_GBps > 0 && d->link_GBps < FABRIC_MIN_LINK_GBPS) {
        snprintf(buf, len, "its PCIe link (%.2f GB/s) cannot carry even a 10 Gb/s port",
                 (double)d->link_GBps);
        return buf;
    }
    return NULL;
}

/* Without RDMA NICs every NIC is a candidate, but a laptop's Wi-Fi, a
 * server's gigabit management port or a NIC on a slow link carries no
 * fabric: each is left out with a finding (when there are GPUs to plan
 * for), so a machine with only those has no fabric NIC. */
static void leave_out_non_fabric(const struct fb_topo *t, struct fb_affinity *a)
{
    for (size_t n = 0; n < t->nnics; n++) {
        char buf[256];
        const char *why = not_fabric_why(&t->nics[n], buf, sizeof buf);
        if (why == NULL)
            continue;
        a->fabric[n] = false;
        if (t->ngpus > 0)
            add_finding(a, FB_FIND_NOT_FABRIC, -1, (long)n,
                        "%s (%s) is not counted as a fabric NIC: %s (--nics names it to count "
                        "it)", t->nics[n].name, t->nics[n].busid, why);
    }
}

/* The default: RDMA NICs when there are any (NCCL's IB/RoCE devices), else
 * every NIC that can carry fabric traffic. An include list replaces it; an
 * exclusion list narrows it, as NCCL_IB_HCA=^... narrows the RDMA devices. */
static enum fb_status pick_fabric(const struct fb_topo *t, const char *nic_spec,
                                  struct fb_affinity *a, struct fb_err *err)
{
    struct fb_devspec spec = {0};
    if (nic_spec != NULL) {
        enum fb_status st = fb_devspec_parse(nic_spec, "--nics", &spec, err);
        if (st != FB_OK)
            return st;
    }
    size_t rdma = 0;
    for (size_t n = 0; n < t->nnics; n++)
        rdma += t->nics[n].rdma[0] != '\0';
    a->pick = rdma > 0 ? FB_PICK_RDMA : FB_PICK_ALL;
    for (size_t n = 0; n < t->nnics; n++)
        a->fabric[n] = rdma == 0 || t->nics[n].rdma[0] != '\0';
    if (rdma == 0 && (nic_spec == NULL || spec.exclude))
        leave_out_non_fabric(t, a);
    if (nic_spec != NULL) {
        a->pick = FB_PICK_SPEC;
        for (size_t n = 0; n < t->nnics; n++)
            a->fabric[n] = nic_selected(&spec, &t->nics[n]) && (!spec.exclude || a->fabric[n]);
    }
    for (size_t n = 0; n < t->nnics; n++)
        a->nfabric += a->fabric[n];
    return FB_OK;
}

bool fb_affinity_nearest(const struct fb_topo *t, const struct fb_affinity *a, size_t g,
                         size_t n)
{
    return a->fabric[n] && a->best[g] != FB_LINK_NONE && fb_topo_link(t, g, n) == a->best[g];
}

/* Most constrained GPUs (best path closest) choose first, so a GPU with a
 * NIC on its own switch is never pushed off it by one that is far anyway. */
static void assign_nics(const struct fb_topo *t, struct fb_affinity *a)
{
    for (size_t g = 0; g < t->ngpus; g++) {
        a->best[g] = FB_LINK_NONE;
        for (size_t n = 0; n < t->nnics; n++) {
            enum fb_link l = fb_topo_link(t, g, n);
            if (a->fabric[n] && (a->best[g] == FB_LINK_NONE || l < a->best[g]))
                a->best[g] = l;
        }
        a->ranks[g].gpu = g;
        a->ranks[g].nic = -1;
        a->ranks[g].level = FB_LINK_NONE;
    }
    for (int level = FB_LINK_PIX; level <= FB_LINK_UNKNOWN; level++) {
        for (size_t g = 0; g < t->ngpus; g++) {
            if ((int)a->best[g] != level)
                continue;
            long pick = -1;
            for (size_t n = 0; n < t->nnics; n++) {
                if (!fb_affinity_nearest(t, a, g, n))
                    continue;
                bool same_socket = t->nics[n].package == t->gpus[g].package;
                bool pick_same = pick >= 0 && t->nics[pick].package == t->gpus[g].package;
                if (pick < 0 || a->load[n] < a->load[pick] ||
                    (a->load[n] == a->load[pick] && same_socket && !pick_same))
                    pick = (long)n;
            }
            a->ranks[g].nic = pick;
            a->ranks[g].level = pick >= 0 ? fb_topo_link(t, g, (size_t)pick) : FB_LINK_NONE;
            if (pick >= 0)
                a->load[pick]++;
        }
    }
}

/* Each rank gets an equal, contiguous share of the cores local to its GPU,
 * shared with the other ranks whose GPUs have the same locality. */
static void plan_cpus(const struct fb_topo *t, struct fb_affinity *a)
{
    for (size_t g = 0; g < t->ngpus; g++) {
        const hwloc_bitmap_t local = t->gpus[g].cpuset;
        size_t k = 0, me = 0;
        for (size_t o = 0; o < t->ngpus; o++) {
            if (!hwloc_bitmap_isequal(t->gpus[o].cpuset, local))
                continue;
            if (o == g)
                me = k;
            k++;
        }
        size_t m = 0;
        for (size_t c = 0; c < t->ncoresets; c++)
            m += hwloc_bitmap_isincluded(t->coresets[c], local) != 0;
        a->ranks[g].cpus = hwloc_bitmap_alloc();
        if (m < k || hwloc_bitmap_iszero(local)) {
            hwloc_bitmap_copy(a->ranks[g].cpus, local);
            continue;
        }
        size_t lo = me * m / k, hi = (me + 1) * m / k, i = 0;
        for (size_t c = 0; c < t->ncoresets; c++) {
            if (!hwloc_bitmap_isincluded(t->coresets[c], local))
                continue;
            if (i >= lo && i < hi)
                hwloc_bitmap_or(a->ranks[g].cpus, a->ranks[g].cpus, t->coresets[c]);
            i++;
        }
    }
}

static void find_far_and_cross(const struct fb_topo *t, struct fb_affinity *a)
{
    enum fb_link overall = FB_LINK_NONE;
    for (size_t g = 0; g < t->ngpus; g++)
        if (a->best[g] != FB_LINK_NONE && (overall == FB_LINK_NONE || a->best[g] < overall))
            overall = a->best[g];
    for (size_t g = 0; g < t->ngpus; g++) {
        const struct fb_rank_plan *r = &a->ranks[g];
        if (r->nic < 0)
            continue;
        const struct fb_topo_dev *gpu = &t->gpus[g], *nic = &t->nics[r->nic];
        if (r->level == FB_LINK_UNKNOWN)
            continue; /* named by the locality-unknown finding */
        if (gpu->package >= 0 && nic->package >= 0 && gpu->package != nic->package)
            add_finding(a, FB_FIND_CROSS_SOCKET, (long)g, r->nic,
                        "GPU%zu (%s, socket %d): nearest NIC %s is on socket %d (%s): its "
                        "traffic crosses the CPU interconnect", g, gpu->busid, gpu->package,
                        nic->name, nic->package, fb_link_name(r->level));
        else if (r->level == FB_LINK_SYS)
            add_finding(a, FB_FIND_CROSS_SOCKET, (long)g, r->nic,
                        "GPU%zu (%s): nearest NIC %s is SYS away (another NUMA node)", g,
                        gpu->busid, nic->name);
        else if (a->best[g] > overall)
            add_finding(a, FB_FIND_FAR_NIC, (long)g, r->nic,
                        "GPU%zu (%s): nearest NIC %s is %s away while other GPUs have one at "
                        "%s: no NIC on its PCIe switch", g, gpu->busid, nic->name,
                        fb_link_name(a->best[g]), fb_link_name(overall));
    }
}

size_t fb_affinity_served(const struct fb_topo *t, const struct fb_affinity *a, size_t n,
                          const char *sep, char *buf, size_t len)
{
    size_t used = 0, k = 0;
    buf[0] = '\0';
    for (size_t g = 0; g < t->ngpus; g++)
        if (a->ranks[g].nic == (long)n)
            fb_strbuf_append(buf, len, &used, "%sGPU%zu", k++ ? sep : "", g);
    return k;
}

static void find_shared_and_unused(const struct fb_topo *t, struct fb_affinity *a)
{
    for (size_t n = 0; n < t->nnics; n++) {
        if (a->load[n] > 1) {
            char gpus[256];
            fb_affinity_served(t, a, n, ", ", gpus, sizeof gpus);
            add_finding(a, FB_FIND_NIC_SHARED, -1, (long)n,
                        "GPUs outnumber nearby NICs: %s share %s (%zu GPUs on one NIC split "
                        "its bandwidth)", gpus, t->nics[n].name, a->load[n]);
        }
        /* Without RDMA NICs or a --nics list, an idle NIC is as likely the
         * management port as a misplaced fabric NIC: stay quiet. */
        if (a->fabric[n] && a->load[n] == 0 && t->ngpus > 0 && a->pick != FB_PICK_ALL)
            add_finding(a, FB_FIND_NIC_UNUSED, -1, (long)n,
                        "%s (%s, socket %d) is the nearest NIC of no GPU: its bandwidth goes "
                        "unused", t->nics[n].name, t->nics[n].busid, t->nics[n].package);
    }
}

static void find_socket_imbalance(const struct fb_topo *t, struct fb_affinity *a)
{
    if (t->npackages < 2 || t->ngpus == 0)
        return;
    enum { MAXPKG = 16 };
    size_t gpus[MAXPKG] = {0}, nics[MAXPKG] = {0};
    for (size_t g = 0; g < t->ngpus; g++)
        if (t->gpus[g].package >= 0 && t->gpus[g].package < MAXPKG)
            gpus[t->gpus[g].package]++;
    for (size_t n = 0; n < t->nnics; n++)
        if (a->fabric[n] && t->nics[n].package >= 0 && t->nics[n].package < MAXPKG)
            nics[t->nics[n].package]++;
    bool surplus = false, deficit = false;
    for (int p = 0; p < MAXPKG; p++) {
        surplus |= nics[p] > gpus[p];
        deficit |= nics[p] < gpus[p];
    }
    if (!surplus || !deficit)
        return;
    char counts[256], idle[256];
    size_t cu = 0, iu = 0, k = 0;
    counts[0] = idle[0] = '\0';
    for (int p = 0; p < MAXPKG; p++)
        if (gpus[p] || nics[p])
            fb_strbuf_append(counts, sizeof counts, &cu, "%ssocket %d: %zu GPU%s, %zu NIC%s",
                             cu ? "; " : "", p, gpus[p], gpus[p] == 1 ? "" : "s", nics[p],
                             nics[p] == 1 ? "" : "s");
    for (size_t n = 0; n < t->nnics; n++) {
        int p = t->nics[n].package;
        if (a->fabric[n] && a->load[n] == 0 && p >= 0 && p < MAXPKG && nics[p] > gpus[p])
            fb_strbuf_append(idle, sizeof idle, &iu, "%s%s", k++ ? ", " : "", t->nics[n].name);
    }
    add_finding(a, FB_FIND_SOCKET_IMBALANCE, -1, -1,
                "NICs do not follow GPUs across sockets (%s): a NIC sits on the wrong socket%s%s",
                counts, k ? "; idle there: " : "", idle);
}

/* GPUs drop their PCIe link speed when idle, NICs do not: a NIC slower than
 * its twins sits in a degraded slot, riser or bifurcation. */
static void find_slow_links(const struct fb_topo *t, struct fb_affinity *a)
{
    for (size_t n = 0; n < t->nnics; n++) {
        const struct fb_topo_dev *d = &t->nics[n];
        float best = 0;
        for (size_t o = 0; o < t->nnics; o++)
            if (a->fabric[o] && t->nics[o].vendor_id == d->vendor_id &&
                t->nics[o].device_id == d->device_id && t->nics[o].link_GBps > best)
                best = t->nics[o].link_GBps;
        if (a->fabric[n] && d->link_GBps > 0 && d->link_GBps < best * 0.9f)
            add_finding(a, FB_FIND_NIC_LINK_SLOW, -1, (long)n,
                        "%s (%s) has a %.1f GB/s PCIe link while its twins have %.1f GB/s: a "
                        "degraded slot or riser", d->name, d->busid, (double)d->link_GBps,
                        (double)best);
    }
}

/* "GPU0 (0000:13:00.0), GPU1 (...)" for the GPUs with `mark`, into buf. */
static size_t gpus_marked(const struct fb_topo *t, bool (*mark)(const struct fb_topo_dev *),
                          char *buf, size_t len)
{
    size_t used = 0, k = 0;
    buf[0] = '\0';
    for (size_t g = 0; g < t->ngpus; g++)
        if (mark(&t->gpus[g]))
            fb_strbuf_append(buf, len, &used, "%sGPU%zu (%s)", k++ ? ", " : "", g,
                             t->gpus[g].busid);
    return k;
}

static bool counted_by_class(const struct fb_topo_dev *d)
{
    return d->by_class;
}

static bool placed_nowhere(const struct fb_topo_dev *d)
{
    return d->locality_unknown;
}

/* AMD display-class devices without a ROCm device counted as GPUs on the
 * compute-node evidence (topo.c): an export with ROCm's OS devices
 * settles it. */
static void find_unconfirmed_gpus(const struct fb_topo *t, struct fb_affinity *a)
{
    char gpus[512];
    size_t k = gpus_marked(t, counted_by_class, gpus, sizeof gpus), first = 0;
    while (first < t->ngpus && !t->gpus[first].by_class)
        first++;
    if (k == 0)
        return;
    const struct fb_topo_dev *d = &t->gpus[first];
    char ids[16];
    snprintf(ids, sizeof ids, "%04x:%04x", d->vendor_id, d->device_id);
    bool named = strcmp(d->model, ids) != 0;
    add_finding(a, FB_FIND_GPU_UNCONFIRMED, -1, -1,
                "%s: AMD display-class device%s (%s%s%s) with no ROCm device in the topology, "
                "counted as Instinct GPU%s on a compute node (an RDMA NIC, or several alike); "
                "a topology taken with ROCm's hwloc support (rsmi OS devices) confirms %s",
                gpus, k == 1 ? "" : "s", ids, named ? ", " : "", named ? d->model : "",
                k == 1 ? "" : "s", k == 1 ? "it" : "them");
}

/* Where no GPU was counted, the AMD display devices left out may be GPUs
 * all the same. */
static void find_uncounted_gpus(const struct fb_topo *t, struct fb_affinity *a)
{
    if (t->ngpus == 0 && t->nuncounted > 0)
        add_finding(a, FB_FIND_GPU_UNCONFIRMED, -1, -1,
                    "no GPU counted, but AMD display-class device%s %s, with no ROCm device "
                    "in the topology, may be Instinct GPUs (MI25 and MI50 report a display "
                    "class): on a GPU node take the topology with ROCm's hwloc support (rsmi "
                    "OS devices)", t->nuncounted == 1 ? "" : "s", t->uncounted);
}

static void find_unknown_locality(const struct fb_topo *t, struct fb_affinity *a)
{
    if (t->ngpus == 0)
        return;
    char gpus[512], nics[512];
    size_t used = 0, k = gpus_marked(t, placed_nowhere, gpus, sizeof gpus), m = 0;
    nics[0] = '\0';
    for (size_t n = 0; n < t->nnics; n++)
        if (t->nics[n].locality_unknown && a->fabric[n])
            fb_strbuf_append(nics, sizeof nics, &used, "%s%s", m++ ? ", " : "", t->nics[n].name);
    if (k + m == 0)
        return;
    add_finding(a, FB_FIND_LOCALITY_UNKNOWN, -1, -1,
                "the topology gives no NUMA locality for %s%s%s (I/O attached to the machine "
                "itself: a hwloc 1.x export that recorded none, or firmware that gives none): "
                "their socket, NUMA node and local CPUs are unknown, and so is every path of "
                "theirs across host bridges; take the topology with hwloc 2.x on the node "
                "(lstopo --of xml), and check numa_node in /sys/bus/pci/devices",
                gpus, k && m ? ", " : "", nics);
}

static void suggest_ib_hca(const struct fb_topo *t, struct fb_affinity *a)
{
    size_t used = 0, k = 0;
    a->ib_hca[0] = '\0';
    for (size_t g = 0; g < t->ngpus; g++) {
        long n = a->ranks[g].nic;
        if (n < 0 || t->nics[n].rdma[0] == '\0')
            continue;
        bool seen = false;
        for (size_t e = 0; e < g && !seen; e++)
            seen = a->ranks[e].nic == n;
        if (!seen)
            fb_strbuf_append(a->ib_hca, sizeof a->ib_hca, &used, "%s%s", k++ ? "," : "=",
                             t->nics[n].rdma);
    }
}

enum fb_status fb_affinity_analyse(const struct fb_topo *t, const char *nic_spec,
                                   struct fb_affinity *a, struct fb_err *err)
{
    memset(a, 0, sizeof *a);
    a->fabric = calloc(t->nnics + 1, sizeof *a->fabric);
    a->load = calloc(t->nnics + 1, sizeof *a->load);
    a->best = calloc(t->ngpus + 1, sizeof *a->best);
    a->ranks = calloc(t->ngpus + 1, sizeof *a->ranks);
    if (!a->fabric || !a->load || !a->best || !a->ranks) {
        fb_affinity_free(a);
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory analysing the topology");
    }
    a->nranks = t->ngpus;
    enum fb_status st = pick_fabric(t, nic_spec, a, err);
    if (st != FB_OK) {
        fb_affinity_free(a);
        return st;
    }
    assign_nics(t, a);
    plan_cpus(t, a);
    if (t->ngpus > 0 && a->nfabric == 0)
        add_finding(a, FB_FIND_NO_NIC, -1, -1,
                    "%zu GPU%s but no fabric NIC%s: multi-node NCCL would use TCP sockets",
                    t->ngpus, t->ngpus == 1 ? "" : "s", nic_spec ? " matches --nics" : "");
    find_unconfirmed_gpus(t, a);
    find_uncounted_gpus(t, a);
    find_unknown_locality(t, a);
    find_far_and_cross(t, a);
    find_shared_and_unused(t, a);
    find_socket_imbalance(t, a);
    find_slow_links(t, a);
    suggest_ib_hca(t, a);
    return FB_OK;
}

void fb_affinity_free(struct fb_affinity *a)
{
    for (size_t g = 0; a->ranks && g < a->nranks; g++)
        hwloc_bitmap_free(a->ranks[g].cpus);
    free(a->fabric);
    free(a->load);
    free(a->best);
    free(a->ranks);
    free(a->findings);
    memset(a, 0, sizeof *a);
}
