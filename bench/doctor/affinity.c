#include "doctor/affinity.h"

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

/* The default: RDMA NICs when there are any (NCCL's IB/RoCE devices), else
 * every NIC. An include list replaces it; an exclusion list narrows it, as
 * NCCL_IB_HCA=^... narrows the RDMA devices. */
static enum fb_status pick_fabric(const struct fb_topo *t, const char *nic_spec,
                                  struct fb_affinity *a, struct fb_err *err)
{
    size_t rdma = 0;
    for (size_t n = 0; n < t->nnics; n++)
        rdma += t->nics[n].rdma[0] != '\0';
    a->pick = rdma > 0 ? FB_PICK_RDMA : FB_PICK_ALL;
    for (size_t n = 0; n < t->nnics; n++)
        a->fabric[n] = rdma == 0 || t->nics[n].rdma[0] != '\0';
    if (nic_spec != NULL) {
        struct fb_devspec spec;
        enum fb_status st = fb_devspec_parse(nic_spec, "--nics", &spec, err);
        if (st != FB_OK)
            return st;
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
    for (int level = FB_LINK_PIX; level <= FB_LINK_SYS; level++) {
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
