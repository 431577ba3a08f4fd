#include "doctor/topo_out.h"

#include <string.h>

#include "core/jsonio.h"
#include "core/text.h"

static void cpulist(hwloc_const_bitmap_t set, char *buf, size_t len)
{
    if (set == NULL || hwloc_bitmap_iszero(set))
        snprintf(buf, len, "-");
    else
        hwloc_bitmap_list_snprintf(buf, len, set);
}

static void nearest_list(const struct fb_topo *t, const struct fb_affinity *a, size_t g,
                         char *buf, size_t len)
{
    size_t used = 0, k = 0;
    buf[0] = '\0';
    for (size_t n = 0; n < t->nnics; n++)
        if (fb_affinity_nearest(t, a, g, n))
            fb_strbuf_append(buf, len, &used, "%s%s", k++ ? "," : "", t->nics[n].name);
    if (k == 0)
        snprintf(buf, len, "-");
}

static void serves_list(const struct fb_topo *t, const struct fb_affinity *a, size_t n,
                        char *buf, size_t len)
{
    if (fb_affinity_served(t, a, n, ",", buf, len) == 0)
        snprintf(buf, len, "%s", a->fabric[n] ? "-" : "(not fabric)");
}

/* Socket and NUMA numbers, "-" when hwloc could not place the device. */
static const char *place(int v, char *buf, size_t len)
{
    if (v < 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%d", v);
    return buf;
}

static void print_devices(FILE *out, const struct fb_topo *t, const struct fb_affinity *a)
{
    char s[16], m[16];
    if (t->ngpus > 0)
        fprintf(out, "\n%-6s %-13s %-30s %6s %4s  %-18s %s\n", "GPU", "PCI", "model", "socket",
                "NUMA", "nearest NIC", "path");
    for (size_t g = 0; g < t->ngpus; g++) {
        const struct fb_topo_dev *d = &t->gpus[g];
        char near[256];
        nearest_list(t, a, g, near, sizeof near);
        fprintf(out, "GPU%-3zu %-13s %-30.30s %6s %4s  %-18s %s\n", g, d->busid, d->model,
                place(d->package, s, sizeof s), place(d->numa, m, sizeof m), near,
                fb_link_name(a->best[g]));
    }
    if (t->nnics > 0)
        fprintf(out, "\n%-10s %-13s %-10s %-16s %6s %4s %8s  %s\n", "NIC", "PCI", "RDMA",
                "netdevs", "socket", "NUMA", "link", "serves");
    for (size_t n = 0; n < t->nnics; n++) {
        const struct fb_topo_dev *d = &t->nics[n];
        char serves[256], link[16];
        serves_list(t, a, n, serves, sizeof serves);
        if (d->link_GBps > 0)
            snprintf(link, sizeof link, "%.1fGB/s", (double)d->link_GBps);
        else
            snprintf(link, sizeof link, "-");
        fprintf(out, "%-10s %-13s %-10s %-16.16s %6s %4s %8s  %s\n", d->name, d->busid,
                d->rdma[0] ? d->rdma : "-", d->netdevs[0] ? d->netdevs : "-",
                place(d->package, s, sizeof s), place(d->numa, m, sizeof m), link, serves);
    }
}

static void print_matrix(FILE *out, const struct fb_topo *t)
{
    if (t->ngpus == 0 || t->nnics == 0)
        return;
    fprintf(out, "\nPCIe paths (PIX same switch, PXB switches, PHB host bridge, NODE same "
                 "NUMA node, SYS across sockets)\n%-6s", "");
    for (size_t n = 0; n < t->nnics; n++)
        fprintf(out, " %-8.8s", t->nics[n].name);
    fputc('\n', out);
    for (size_t g = 0; g < t->ngpus; g++) {
        fprintf(out, "GPU%-3zu", g);
        for (size_t n = 0; n < t->nnics; n++)
            fprintf(out, " %-8s", fb_link_name(fb_topo_link(t, g, n)));
        fputc('\n', out);
    }
}

static void print_ranks(FILE *out, const struct fb_topo *t, const struct fb_affinity *a)
{
    if (t->ngpus == 0)
        return;
    fprintf(out, "\n%-5s %-6s %-10s %-7s %4s  %s\n", "rank", "GPU", "NIC", "path", "NUMA",
            "CPUs");
    for (size_t g = 0; g < t->ngpus; g++) {
        const struct fb_rank_plan *r = &a->ranks[g];
        char cpus[512];
        cpulist(r->cpus, cpus, sizeof cpus);
        char m[16];
        fprintf(out, "%-5zu GPU%-3zu %-10s %-7s %4s  %s\n", g, g,
                r->nic >= 0 ? t->nics[r->nic].name : "-", fb_link_name(r->level),
                place(t->gpus[g].numa, m, sizeof m), cpus);
    }
    if (a->ib_hca[0])
        fprintf(out, "\nsuggested: NCCL_IB_HCA=%s\n", a->ib_hca);
    fprintf(out, "bind each local rank to its CPUs, e.g. numactl --physcpubind=CPUS "
                 "--membind=NUMA (or the launcher's binding options)\n");
}

void fb_topo_print(FILE *out, const struct fb_topo *t, const struct fb_affinity *a)
{
    size_t rdma = 0;
    for (size_t n = 0; n < t->nnics; n++)
        rdma += t->nics[n].rdma[0] != '\0';
    fprintf(out, "fabric-topo: %s%s%s%s\n", t->hostname[0] ? t->hostname : "",
            t->hostname[0] ? " (" : "", t->source, t->hostname[0] ? ")" : "");
    fprintf(out, "machine: %d socket%s, %d NUMA node%s, %d cores, %d PUs; %zu GPU%s, %zu NIC%s "
                 "(%zu RDMA, %zu fabric)\n", t->npackages, t->npackages == 1 ? "" : "s",
            t->nnuma, t->nnuma == 1 ? "" : "s", t->ncores, t->npus, t->ngpus,
            t->ngpus == 1 ? "" : "s", t->nnics, t->nnics == 1 ? "" : "s", rdma, a->nfabric);
    if (t->ngpus == 0)
        fprintf(out, "no GPU found: nothing to pair with NICs (analyse a GPU node's export with "
                     "--topology FILE.xml)\n");
    print_devices(out, t, a);
    print_matrix(out, t);
    print_ranks(out, t, a);
    fputc('\n', out);
    if (a->nfindings == 0)
        fprintf(out, "findings: none\n");
    for (size_t i = 0; i < a->nfindings; i++)
        fprintf(out, "WARN %-16s %s\n", fb_finding_name(a->findings[i].code),
                a->findings[i].message);
}

static json_object *hex_id(unsigned v)
{
    char buf[8];
    snprintf(buf, sizeof buf, "0x%04x", v);
    return json_object_new_string(buf);
}

static json_object *name_array(const char *csv)
{
    json_object *arr = json_object_new_array();
    char copy[256];
    snprintf(copy, sizeof copy, "%s", csv);
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        json_object_array_add(arr, json_object_new_string(tok));
    return arr;
}

static json_object *dev_json(const struct fb_topo_dev *d, size_t index)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "index", json_object_new_int((int)index));
    json_object_object_add(o, "name", json_object_new_string(d->name));
    json_object_object_add(o, "pci_bus_id", json_object_new_string(d->busid));
    json_object_object_add(o, "vendor_id", hex_id(d->vendor_id));
    json_object_object_add(o, "device_id", hex_id(d->device_id));
    json_object_object_add(o, "model", json_object_new_string(d->model));
    json_object_object_add(o, "numa", fb_json_int_or_null(d->numa));
    json_object_object_add(o, "package", fb_json_int_or_null(d->package));
    json_object_object_add(o, "pcie_link_GBps",
                           d->link_GBps > 0 ? json_object_new_double(d->link_GBps) : NULL);
    char cpus[512];
    cpulist(d->cpuset, cpus, sizeof cpus);
    json_object_object_add(o, "local_cpus", json_object_new_string(cpus));
    return o;
}

static json_object *gpus_json(const struct fb_topo *t, const struct fb_affinity *a)
{
    json_object *arr = json_object_new_array();
    for (size_t g = 0; g < t->ngpus; g++) {
        json_object *o = dev_json(&t->gpus[g], g);
        json_object_object_add(o, "os_devices", name_array(t->gpus[g].osdevs));
        json_object *near = json_object_new_array();
        json_object *links = json_object_new_object();
        for (size_t n = 0; n < t->nnics; n++) {
            if (fb_affinity_nearest(t, a, g, n))
                json_object_array_add(near, json_object_new_string(t->nics[n].name));
            json_object_object_add(links, t->nics[n].name,
                                   json_object_new_string(fb_link_name(fb_topo_link(t, g, n))));
        }
        json_object_object_add(o, "nearest_nics", near);
        json_object_object_add(o, "nearest_level", a->best[g] != FB_LINK_NONE
                                   ? json_object_new_string(fb_link_name(a->best[g])) : NULL);
        json_object_object_add(o, "links", links);
        json_object_array_add(arr, o);
    }
    return arr;
}

static json_object *nics_json(const struct fb_topo *t, const struct fb_affinity *a)
{
    json_object *arr = json_object_new_array();
    for (size_t n = 0; n < t->nnics; n++) {
        const struct fb_topo_dev *d = &t->nics[n];
        json_object *o = dev_json(d, n);
        json_object_object_add(o, "rdma_device", fb_json_string_or_null(d->rdma));
        json_object_object_add(o, "netdevs", name_array(d->netdevs));
        json_object_object_add(o, "fabric", json_object_new_boolean(a->fabric[n]));
        json_object *serves = json_object_new_array();
        for (size_t g = 0; g < t->ngpus; g++)
            if (a->ranks[g].nic == (long)n)
                json_object_array_add(serves, json_object_new_int((int)g));
        json_object_object_add(o, "serves_gpus", serves);
        json_object_array_add(arr, o);
    }
    return arr;
}

static json_object *ranks_json(const struct fb_topo *t, const struct fb_affinity *a)
{
    json_object *arr = json_object_new_array();
    for (size_t g = 0; g < t->ngpus; g++) {
        const struct fb_rank_plan *r = &a->ranks[g];
        json_object *o = json_object_new_object();
        char cpus[512];
        cpulist(r->cpus, cpus, sizeof cpus);
        json_object_object_add(o, "local_rank", json_object_new_int((int)g));
        json_object_object_add(o, "gpu", json_object_new_int((int)g));
        json_object_object_add(o, "nic", r->nic >= 0 ? json_object_new_string(t->nics[r->nic].name)
                                                     : NULL);
        json_object_object_add(o, "level", r->nic >= 0
                                   ? json_object_new_string(fb_link_name(r->level)) : NULL);
        json_object_object_add(o, "numa", fb_json_int_or_null(t->gpus[g].numa));
        json_object_object_add(o, "cpus", json_object_new_string(cpus));
        json_object_array_add(arr, o);
    }
    return arr;
}

static const char *pick_name(enum fb_fabric_pick p)
{
    switch (p) {
    case FB_PICK_SPEC: return "nics-option";
    case FB_PICK_RDMA: return "rdma";
    case FB_PICK_ALL: return "all";
    }
    return "all";
}

json_object *fb_topo_json(const struct fb_topo *t, const struct fb_affinity *a,
                          const struct fb_envelope_info *info)
{
    json_object *d = fb_envelope_new(info);
    json_object_object_add(d, "source", json_object_new_string(t->source));
    json_object *m = json_object_new_object();
    json_object_object_add(m, "hostname", fb_json_string_or_null(t->hostname));
    json_object_object_add(m, "packages", json_object_new_int(t->npackages));
    json_object_object_add(m, "numa_nodes", json_object_new_int(t->nnuma));
    json_object_object_add(m, "cores", json_object_new_int(t->ncores));
    json_object_object_add(m, "pus", json_object_new_int(t->npus));
    json_object_object_add(d, "machine", m);
    json_object_object_add(d, "fabric_nics", json_object_new_string(pick_name(a->pick)));
    json_object_object_add(d, "gpus", gpus_json(t, a));
    json_object_object_add(d, "nics", nics_json(t, a));
    json_object_object_add(d, "ranks", ranks_json(t, a));
    json_object *s = json_object_new_object();
    json_object_object_add(s, "nccl_ib_hca", fb_json_string_or_null(a->ib_hca));
    json_object_object_add(d, "suggest", s);
    json_object *f = json_object_new_array();
    for (size_t i = 0; i < a->nfindings; i++) {
        const struct fb_finding *x = &a->findings[i];
        json_object *o = json_object_new_object();
        json_object_object_add(o, "code", json_object_new_string(fb_finding_name(x->code)));
        json_object_object_add(o, "gpu", x->gpu >= 0 ? json_object_new_int((int)x->gpu) : NULL);
        json_object_object_add(o, "nic", x->nic >= 0
                                   ? json_object_new_string(t->nics[x->nic].name) : NULL);
        json_object_object_add(o, "message", json_object_new_string(x->message));
        json_object_array_add(f, o);
        fb_envelope_warn(d, x->message);
    }
    json_object_object_add(d, "findings", f);
    return d;
}
