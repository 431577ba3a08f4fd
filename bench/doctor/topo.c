#include "doctor/topo.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/files.h"
#include "core/text.h"
#include "doctor/topo_xml.h"

#define PCI_VENDOR_NVIDIA 0x10de
#define PCI_VENDOR_AMD 0x1002
#define PCI_CLASS_DISPLAY 0x03
#define PCI_CLASS_DISPLAY_OTHER 0x0380 /* AMD Instinct up to MI250X */
#define PCI_CLASS_ACCELERATOR 0x1200   /* processing accelerator: AMD Instinct MI300 */
#define PCI_CLASS_NETWORK 0x02
#define PCI_CLASS_INFINIBAND_OLD 0x0c06 /* serial bus/InfiniBand: ConnectX-2 era HCAs */

const char *fb_link_name(enum fb_link l)
{
    switch (l) {
    case FB_LINK_PIX: return "PIX";
    case FB_LINK_PXB: return "PXB";
    case FB_LINK_PHB: return "PHB";
    case FB_LINK_NODE: return "NODE";
    case FB_LINK_SYS: return "SYS";
    case FB_LINK_UNKNOWN: return "unknown";
    case FB_LINK_NONE: break;
    }
    return "-";
}

/* A compute OS device a collective library drives: CUDA, ROCm (rsmi, filed
 * as a GPU device by hwloc 1.x and 2.x), Level Zero; OpenCL alone is any
 * graphics card's. */
static bool has_compute_osdev(hwloc_obj_t pci)
{
    for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling) {
        if (c->type != HWLOC_OBJ_OS_DEVICE)
            continue;
        bool opencl = c->name != NULL && strncmp(c->name, "opencl", 6) == 0;
        bool rocm = c->name != NULL && strncmp(c->name, "rsmi", 4) == 0;
        if (rocm || (c->attr->osdev.type == HWLOC_OBJ_OSDEV_COPROC && !opencl))
            return true;
    }
    return false;
}

/* How sure a PCI function is a GPU. Sure: NVIDIA display-class devices
 * (found by vendor and class, with or without OS devices: an export may
 * carry them for one GPU only); AMD accelerators (class 0380, and 1200 from
 * MI300 on: Instinct, never Radeon); any display device with a compute OS
 * device. Maybe: an AMD display device (class 03xx) with none, which is a
 * Radeon display card or an Instinct GPU (MI25, MI50: their firmware gives
 * class 0300) exported without ROCm's hwloc plugin; choose_maybe_gpus
 * decides. The server's BMC VGA is a display device too, and never a GPU;
 * NVSwitch functions are bridges (0680), never GPUs. */
enum gpu_evidence { NOT_GPU, GPU_SURE, GPU_MAYBE };

static enum gpu_evidence gpu_evidence(hwloc_obj_t o)
{
    unsigned cls = o->attr->pcidev.class_id, v = o->attr->pcidev.vendor_id;
    if (v == PCI_VENDOR_AMD && (cls == PCI_CLASS_DISPLAY_OTHER || cls == PCI_CLASS_ACCELERATOR))
        return GPU_SURE;
    if ((cls >> 8) != PCI_CLASS_DISPLAY)
        return NOT_GPU;
    if (v == PCI_VENDOR_NVIDIA || has_compute_osdev(o))
        return GPU_SURE;
    return v == PCI_VENDOR_AMD ? GPU_MAYBE : NOT_GPU;
}

/* hwloc 1.x exports may file an RDMA device ("mlx4_0") as a network OS
 * device; verbs names are never interface names. */
static bool verbs_name(const char *name)
{
    static const char *const prefixes[] = {"mlx4_", "mlx5_", "hfi1_", "qib", "bnxt_re", "irdma", "efa_", "rxe", "ionic_"};
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    return false;
}

static bool is_nic(hwloc_obj_t o)
{
    return (o->attr->pcidev.class_id >> 8) == PCI_CLASS_NETWORK ||
           o->attr->pcidev.class_id == PCI_CLASS_INFINIBAND_OLD;
}

/* A NIC with an RDMA device: an OpenFabrics OS device, or a verbs name
 * filed as a network device (hwloc 1.x). */
static bool is_rdma_nic(hwloc_obj_t o)
{
    for (hwloc_obj_t c = o->io_first_child; is_nic(o) && c; c = c->next_sibling)
        if (c->type == HWLOC_OBJ_OS_DEVICE &&
            (c->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS ||
             (c->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK && c->name && verbs_name(c->name))))
            return true;
    return false;
}

static void append_name(char *buf, size_t len, const char *name)
{
    size_t used = strlen(buf);
    if (used + strlen(name) + 2 < len)
        snprintf(buf + used, len - used, "%s%s", used ? "," : "", name);
}

static int first_numa(hwloc_obj_t locality)
{
    if (locality == NULL || locality->nodeset == NULL || hwloc_bitmap_iszero(locality->nodeset))
        return -1;
    return hwloc_bitmap_first(locality->nodeset);
}

/* I/O attached to the machine itself has no locality on a machine of
 * several NUMA nodes: a hwloc 1.x export that recorded none (its host
 * bridges hung at the root), or a kernel that gives none (numa_node -1).
 * Its "NUMA node" would otherwise read as the machine's first. */
static bool locality_unknown(hwloc_topology_t topo, hwloc_obj_t locality)
{
    return locality == hwloc_get_root_obj(topo) &&
           hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE) > 1;
}

/* A device's socket: the Package above it; else the one Package whose CPUs
 * hold all the device's local CPUs. hwloc 1.x exports hang I/O under the
 * NUMA node beside the socket, which hwloc 2.x reads as a Group holding
 * both: no Package is above the device then, on a machine whose NUMA
 * nodes include CPU-less ones (GPU memory) that keep the Group. Local
 * CPUs spread over several packages have no socket (-1). The number is the
 * Package's OS index, as a 2.x export of the machine gives it, else its
 * logical index (an export that recorded none). */
static int socket_of(hwloc_topology_t topo, hwloc_obj_t dev, hwloc_obj_t locality)
{
    hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, dev);
    bool local = locality != NULL && locality->cpuset != NULL &&
                 !hwloc_bitmap_iszero(locality->cpuset);
    /* hwloc's "covering" look-ups take any package that shares one CPU. */
    for (hwloc_obj_t p = NULL; pkg == NULL && local &&
                               (p = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_PACKAGE, p));)
        if (p->cpuset != NULL && hwloc_bitmap_isincluded(locality->cpuset, p->cpuset))
            pkg = p;
    if (pkg == NULL)
        return -1;
    return pkg->os_index != HWLOC_UNKNOWN_INDEX ? (int)pkg->os_index : (int)pkg->logical_index;
}

static void fill_dev(hwloc_topology_t topo, hwloc_obj_t o, struct fb_topo_dev *d)
{
    struct hwloc_pcidev_attr_s *p = &o->attr->pcidev;
    snprintf(d->busid, sizeof d->busid, "%04x:%02x:%02x.%x", (unsigned)p->domain, p->bus,
             p->dev, p->func);
    d->vendor_id = p->vendor_id;
    d->device_id = p->device_id;
    d->class_id = p->class_id;
    d->link_GBps = p->linkspeed;
    const char *model = hwloc_obj_get_info_by_name(o, "PCIDevice");
    if (model != NULL)
        snprintf(d->model, sizeof d->model, "%s", model);
    else
        snprintf(d->model, sizeof d->model, "%04x:%04x", p->vendor_id, p->device_id);
    for (hwloc_obj_t c = o->io_first_child; c; c = c->next_sibling) {
        if (c->type != HWLOC_OBJ_OS_DEVICE || c->name == NULL)
            continue;
        switch (c->attr->osdev.type) {
        case HWLOC_OBJ_OSDEV_OPENFABRICS:
            if (d->rdma[0] == '\0')
                snprintf(d->rdma, sizeof d->rdma, "%s", c->name);
            break;
        case HWLOC_OBJ_OSDEV_NETWORK:
            if (verbs_name(c->name) && d->rdma[0] == '\0')
                snprintf(d->rdma, sizeof d->rdma, "%s", c->name);
            else
                append_name(d->netdevs, sizeof d->netdevs, c->name);
            break;
        case HWLOC_OBJ_OSDEV_COPROC:
        case HWLOC_OBJ_OSDEV_GPU:
            append_name(d->osdevs, sizeof d->osdevs, c->name);
            break;
        default:
            break;
        }
    }
    /* The name people use: RDMA device, else interface, else compute device. */
    const char *name = d->busid;
    char first[64] = "";
    if (d->rdma[0]) {
        name = d->rdma;
    } else if (d->netdevs[0] || d->osdevs[0]) {
        const char *list = d->netdevs[0] ? d->netdevs : d->osdevs;
        snprintf(first, sizeof first, "%.*s", (int)strcspn(list, ","), list);
        name = first;
    }
    snprintf(d->name, sizeof d->name, "%s", name);
    hwloc_obj_t locality = hwloc_get_non_io_ancestor_obj(topo, o);
    d->locality_unknown = locality_unknown(topo, locality);
    if (d->locality_unknown)
        locality = NULL;
    d->numa = first_numa(locality);
    d->package = socket_of(topo, o, locality);
    d->cpuset = locality && locality->cpuset ? hwloc_bitmap_dup(locality->cpuset)
                                             : hwloc_bitmap_alloc();
}

static bool is_host_bridge(hwloc_obj_t o)
{
    return o->type == HWLOC_OBJ_BRIDGE && o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST;
}

/* hwloc_get_common_ancestor_obj compares depths, which I/O objects do not
 * have in a usable form; walk the parent chains instead. */
static hwloc_obj_t common_ancestor(hwloc_obj_t a, hwloc_obj_t b)
{
    for (hwloc_obj_t x = a; x; x = x->parent)
        for (hwloc_obj_t y = b; y; y = y->parent)
            if (x == y)
                return x;
    return NULL;
}

static int bridges_between(hwloc_obj_t dev, hwloc_obj_t ancestor)
{
    int n = 0;
    for (hwloc_obj_t x = dev->parent; x && x != ancestor; x = x->parent)
        n += x->type == HWLOC_OBJ_BRIDGE;
    return n;
}

/* `unknown`: the locality of either end is unknown (fill_dev). */
static enum fb_link path_level(hwloc_topology_t topo, hwloc_obj_t gpu, hwloc_obj_t nic, bool unknown)
{
    hwloc_obj_t common = common_ancestor(gpu, nic);
    if (common != NULL && common->type == HWLOC_OBJ_BRIDGE) {
        if (is_host_bridge(common))
            return FB_LINK_PHB;
        /* Below a switch's upstream port each device sits behind one
         * downstream port: one bridge each side is still "one switch". */
        bool one_switch = bridges_between(gpu, common) <= 1 && bridges_between(nic, common) <= 1;
        return one_switch ? FB_LINK_PIX : FB_LINK_PXB;
    }
    if (unknown)
        return FB_LINK_UNKNOWN;
    hwloc_obj_t ga = hwloc_get_non_io_ancestor_obj(topo, gpu);
    hwloc_obj_t na = hwloc_get_non_io_ancestor_obj(topo, nic);
    if (ga && na && ga->nodeset && na->nodeset && hwloc_bitmap_intersects(ga->nodeset, na->nodeset))
        return FB_LINK_NODE;
    return FB_LINK_SYS;
}

static int compare_busid(const void *a, const void *b)
{
    hwloc_obj_t x = *(hwloc_obj_t const *)a, y = *(hwloc_obj_t const *)b;
    const struct hwloc_pcidev_attr_s *p = &x->attr->pcidev, *q = &y->attr->pcidev;
    long kx = ((long)p->domain << 24) | (p->bus << 16) | (p->dev << 8) | p->func;
    long ky = ((long)q->domain << 24) | (q->bus << 16) | (q->dev << 8) | q->func;
    return (kx > ky) - (kx < ky);
}

/* The export as hwloc's own XML parser will read it (topo_xml.h), read
 * once through the shared reader (a regular text file within the input
 * limit: hwloc would read a FIFO or /dev/zero forever) and handed to hwloc
 * from memory. */
static enum fb_status xml_for_hwloc(const char *xml_path, struct fb_str *xml,
                                    struct fb_err *err)
{
    char *text = NULL;
    size_t len = 0;
    enum fb_status st = fb_read_file(xml_path, &text, &len, err);
    if (st != FB_OK)
        return st;
    if (memchr(text, '\0', len) != NULL)
        st = fb_fail(err, FB_ERR_INPUT, "%s holds NUL bytes: not an hwloc XML topology; export one with lstopo --of xml FILE",
                     xml_path);
    else
        st = fb_topo_xml_for_hwloc(text, len, xml_path, xml, err);
    free(text);
    return st;
}

static enum fb_status open_topology(const char *xml_path, hwloc_topology_t *out,
                                    struct fb_err *err)
{
    struct fb_str xml = {0};
    if (xml_path != NULL) {
        enum fb_status st = xml_for_hwloc(xml_path, &xml, err);
        if (st != FB_OK) {
            fb_str_free(&xml);
            return st;
        }
        /* hwloc's own parser, which reads the rewritten export; the libxml2
         * plugin prints its errors on stderr (topo_xml.h says why not). */
        setenv("HWLOC_LIBXML_IMPORT", "0", 0);
    }
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0) {
        fb_str_free(&xml);
        return fb_fail(err, FB_ERR_INTERNAL, "hwloc_topology_init failed");
    }
    /* An export keeps every I/O object it holds; the live machine only
     * needs bridges leading to GPUs, NICs and their OS devices. */
    hwloc_topology_set_io_types_filter(topo, xml_path ? HWLOC_TYPE_FILTER_KEEP_ALL
                                                      : HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
#ifdef __linux__
    /* Linux's own backend finds PCI devices, classes, ids and link speeds in
     * sysfs; the libpciaccess component only adds vendor names, and leaks
     * its state on every load. */
    if (xml_path == NULL)
        hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "pci");
#endif
    int set = xml_path != NULL ? hwloc_topology_set_xmlbuffer(topo, fb_str_get(&xml), (int)xml.len + 1) : 0;
    if (set != 0) {
        fb_str_free(&xml);
        hwloc_topology_destroy(topo);
        return fb_fail(err, FB_ERR_INPUT, "cannot use %s as a topology: %s", xml_path,
                       strerror(errno));
    }
    int loaded = hwloc_topology_load(topo);
    fb_str_free(&xml);
    if (loaded != 0) {
        hwloc_topology_destroy(topo);
        if (xml_path != NULL)
            return fb_fail(err, FB_ERR_INPUT, "%s is not an hwloc XML topology; export one "
                                              "with lstopo --of xml FILE", xml_path);
        return fb_fail(err, FB_ERR_RUNTIME, "hwloc cannot read this machine's topology: %s",
                       strerror(errno));
    }
    *out = topo;
    return FB_OK;
}

static bool same_model(hwloc_obj_t a, hwloc_obj_t b)
{
    return a->attr->pcidev.vendor_id == b->attr->pcidev.vendor_id &&
           a->attr->pcidev.device_id == b->attr->pcidev.device_id;
}

/* The PCI functions of a topology, sorted out. */
struct found {
    hwloc_obj_t *gpus, *nics, *maybe;
    size_t ngpus, nnics, nmaybe;
    bool *by_class; /* per GPU */
    bool rdma;      /* some NIC has an RDMA device */
};

/* AMD display devices without a ROCm device (gpu_evidence) count as GPUs
 * when they are the model of a GPU found for sure (ROCm saw one of them),
 * or when no GPU was found for sure and the node looks like a compute
 * node: an RDMA NIC, or several of one model (a workstation has one
 * display card). Those counted on their class alone are marked by_class
 * (the gpu-unconfirmed finding); those left out are listed in the topology
 * when no GPU was found, since they may be GPUs all the same. */
static void choose_maybe_gpus(struct found *f, struct fb_topo *t)
{
    size_t nsure = f->ngpus;
    size_t used = 0;
    for (size_t m = 0; m < f->nmaybe; m++) {
        bool twin = false, alike = false;
        for (size_t g = 0; g < nsure; g++)
            twin |= same_model(f->maybe[m], f->gpus[g]);
        for (size_t o = 0; o < f->nmaybe; o++)
            alike |= o != m && same_model(f->maybe[m], f->maybe[o]);
        if (twin || (nsure == 0 && (f->rdma || alike))) {
            f->by_class[f->ngpus] = !twin;
            f->gpus[f->ngpus++] = f->maybe[m];
        } else if (nsure == 0) {
            const struct hwloc_pcidev_attr_s *p = &f->maybe[m]->attr->pcidev;
            fb_strbuf_append(t->uncounted, sizeof t->uncounted, &used,
                             "%s%04x:%02x:%02x.%x (%04x:%04x)", used ? ", " : "",
                             (unsigned)p->domain, p->bus, p->dev, p->func, p->vendor_id,
                             p->device_id);
            t->nuncounted++;
        }
    }
}

static enum fb_status find_devices(hwloc_topology_t topo, struct fb_topo *t, struct found *f,
                                   struct fb_err *err)
{
    size_t npci = 0;
    for (hwloc_obj_t o = hwloc_get_next_pcidev(topo, NULL); o; o = hwloc_get_next_pcidev(topo, o))
        npci++;
    f->gpus = calloc(npci + 1, sizeof *f->gpus);
    f->nics = calloc(npci + 1, sizeof *f->nics);
    f->maybe = calloc(npci + 1, sizeof *f->maybe);
    f->by_class = calloc(npci + 1, sizeof *f->by_class);
    if (f->gpus == NULL || f->nics == NULL || f->maybe == NULL || f->by_class == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory reading the topology");
    for (hwloc_obj_t o = hwloc_get_next_pcidev(topo, NULL); o; o = hwloc_get_next_pcidev(topo, o)) {
        enum gpu_evidence e = gpu_evidence(o);
        if (e == GPU_SURE)
            f->gpus[f->ngpus++] = o;
        else if (e == GPU_MAYBE)
            f->maybe[f->nmaybe++] = o;
        else if (is_nic(o))
            f->nics[f->nnics++] = o;
        f->rdma |= is_rdma_nic(o);
    }
    choose_maybe_gpus(f, t);
    return FB_OK;
}

/* GPUs and NICs in PCI bus order, each GPU's by_class mark kept with it. */
static void sort_devices(struct found *f)
{
    for (size_t i = 1; i < f->ngpus; i++)
        for (size_t j = i; j > 0 && compare_busid(&f->gpus[j - 1], &f->gpus[j]) > 0; j--) {
            hwloc_obj_t o = f->gpus[j];
            bool b = f->by_class[j];
            f->gpus[j] = f->gpus[j - 1];
            f->by_class[j] = f->by_class[j - 1];
            f->gpus[j - 1] = o;
            f->by_class[j - 1] = b;
        }
    qsort(f->nics, f->nnics, sizeof *f->nics, compare_busid);
}

static enum fb_status collect(hwloc_topology_t topo, struct fb_topo *t, struct found *f,
                              struct fb_err *err)
{
    enum fb_status st = find_devices(topo, t, f, err);
    if (st != FB_OK)
        return st;
    sort_devices(f);
    t->ngpus = f->ngpus;
    t->nnics = f->nnics;
    t->gpus = calloc(t->ngpus + 1, sizeof *t->gpus);
    t->nics = calloc(t->nnics + 1, sizeof *t->nics);
    t->link = calloc(t->ngpus * t->nnics + 1, sizeof *t->link);
    if (t->gpus == NULL || t->nics == NULL || t->link == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory reading the topology");
    for (size_t g = 0; g < t->ngpus; g++) {
        fill_dev(topo, f->gpus[g], &t->gpus[g]);
        t->gpus[g].by_class = f->by_class[g];
    }
    for (size_t n = 0; n < t->nnics; n++)
        fill_dev(topo, f->nics[n], &t->nics[n]);
    for (size_t g = 0; g < t->ngpus; g++)
        for (size_t n = 0; n < t->nnics; n++)
            t->link[g * t->nnics + n] = path_level(topo, f->gpus[g], f->nics[n],
                                                   t->gpus[g].locality_unknown || t->nics[n].locality_unknown);
    return FB_OK;
}

static enum fb_status collect_cores(hwloc_topology_t topo, struct fb_topo *t, struct fb_err *err)
{
    int ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    bool by_pu = ncores <= 0; /* some exports have PUs only */
    int n = by_pu ? hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU) : ncores;
    t->coresets = calloc((size_t)(n > 0 ? n : 1), sizeof *t->coresets);
    if (t->coresets == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory reading the topology");
    for (int i = 0; i < n; i++) {
        hwloc_obj_t o = hwloc_get_obj_by_type(topo, by_pu ? HWLOC_OBJ_PU : HWLOC_OBJ_CORE,
                                              (unsigned)i);
        t->coresets[t->ncoresets++] = hwloc_bitmap_dup(o->cpuset);
    }
    return FB_OK;
}

enum fb_status fb_topo_load(const char *xml_path, struct fb_topo *t, struct fb_err *err)
{
    memset(t, 0, sizeof *t);
    snprintf(t->source, sizeof t->source, "%s", xml_path ? xml_path : "live");
    hwloc_topology_t topo = NULL;
    enum fb_status st = open_topology(xml_path, &topo, err);
    if (st != FB_OK)
        return st;
    hwloc_obj_t root = hwloc_get_root_obj(topo);
    const char *host = hwloc_obj_get_info_by_name(root, "HostName");
    if (host != NULL)
        snprintf(t->hostname, sizeof t->hostname, "%s", host);
    t->npackages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
    t->nnuma = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    t->ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    t->npus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    struct found f = {0};
    st = collect(topo, t, &f, err);
    if (st == FB_OK)
        st = collect_cores(topo, t, err);
    free(f.gpus);
    free(f.nics);
    free(f.maybe);
    free(f.by_class);
    hwloc_topology_destroy(topo);
    if (st != FB_OK)
        fb_topo_free(t);
    return st;
}

void fb_topo_free(struct fb_topo *t)
{
    for (size_t i = 0; t->gpus && i < t->ngpus; i++)
        hwloc_bitmap_free(t->gpus[i].cpuset);
    for (size_t i = 0; t->nics && i < t->nnics; i++)
        hwloc_bitmap_free(t->nics[i].cpuset);
    for (size_t i = 0; i < t->ncoresets; i++)
        hwloc_bitmap_free(t->coresets[i]);
    free(t->gpus);
    free(t->nics);
    free(t->link);
    free(t->coresets);
    memset(t, 0, sizeof *t);
}
