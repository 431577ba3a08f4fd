#include "doctor/efa.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/rootfs.h"
#include "core/text.h"

/* EFA families with RDMA read/write, from AWS's instance documentation.
 * Deliberately short: a family missing here is not judged, never failed. */
static const char *const rdma_families[] = {
    "p4d", "p4de", "p5", "p5e", "p5en", "trn1", "trn1n", "trn2",
};

static const char *const plugin_names[] = {
    "libnccl-net.so", "libnccl-net-ofi.so", "libnccl-net-aws-ofi.so",
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The last path component: "efa" of "../../../bus/pci/drivers/efa". */
static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static bool driver_is_efa(const char *root, const char *dev, bool *has_link)
{
    char path[FB_ROOTFS_PATH_MAX], link[FB_ROOTFS_PATH_MAX];
    struct fb_err ignored = {FB_OK, ""};
    snprintf(path, sizeof path, "/sys/class/infiniband/%s/device/driver", dev);
    *has_link = fb_rootfs_readlink(root, path, link, sizeof link, &ignored) == FB_OK;
    return *has_link && strcmp(base_name(link), "efa") == 0;
}

/* "7: unspecified": the node type the EFA driver registers (it is neither
 * an InfiniBand CA nor an iWARP RNIC). */
static bool node_type_is_efa(const char *root, const char *dev)
{
    char path[FB_ROOTFS_PATH_MAX], line[64];
    struct fb_err ignored = {FB_OK, ""};
    snprintf(path, sizeof path, "/sys/class/infiniband/%s/node_type", dev);
    if (fb_rootfs_read_line(root, path, line, sizeof line, &ignored) != FB_OK)
        return false;
    return strstr(line, "unspecified") != NULL;
}

static bool is_efa(const char *root, const char *dev)
{
    bool has_link = false;
    if (driver_is_efa(root, dev, &has_link))
        return true;
    /* A driver link that names another driver settles it. */
    if (has_link)
        return false;
    return node_type_is_efa(root, dev) || strncmp(dev, "efa_", 4) == 0;
}

enum fb_status fb_efa_scan(const char *root, struct fb_efa_devices *out, struct fb_err *err)
{
    out->n = 0;
    if (!fb_rootfs_is_dir(root, "/sys/class/infiniband"))
        return FB_OK;
    char **names = NULL;
    size_t count = 0;
    enum fb_status st = fb_rootfs_list(root, "/sys/class/infiniband", &names, &count, err);
    if (st != FB_OK)
        return st;
    for (size_t i = 0; i < count && out->n < FB_EFA_DEVICES_MAX; i++)
        if (is_efa(root, names[i]))
            snprintf(out->name[out->n++], FB_EFA_NAME_MAX, "%s", names[i]);
    fb_rootfs_free_list(names, count);
    return FB_OK;
}

static bool family_char(char ch)
{
    return islower((unsigned char)ch) || isdigit((unsigned char)ch) || ch == '-';
}

bool fb_efa_instance_family(const char *product, char *family, size_t len)
{
    family[0] = '\0';
    if (product == NULL)
        return false;
    const char *dot = strchr(product, '.');
    if (dot == NULL || dot == product || !islower((unsigned char)product[0]) || dot[1] == '\0')
        return false;
    for (const char *p = product; p < dot; p++)
        if (!family_char(*p))
            return false;
    for (const char *p = dot + 1; *p; p++)
        if (!family_char(*p))
            return false;
    size_t n = (size_t)(dot - product);
    if (n >= len)
        return false;
    fb_copy(family, len, product, n);
    return true;
}

bool fb_efa_family_has_rdma(const char *family)
{
    for (size_t i = 0; i < COUNT(rdma_families); i++)
        if (strcmp(family, rdma_families[i]) == 0)
            return true;
    return false;
}

void fb_efa_rdma_families(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < COUNT(rdma_families); i++)
        fb_strbuf_append(buf, len, &used, "%s%s", i ? ", " : "", rdma_families[i]);
}

bool fb_efa_fi_provider_ok(const char *fi_provider)
{
    return fi_provider == NULL || fi_provider[0] == '\0' || strcasecmp(fi_provider, "efa") == 0;
}

bool fb_efa_flag_on(const char *value)
{
    static const char *const on[] = {"1", "y", "yes", "true", "on"};
    if (value == NULL)
        return false;
    for (size_t i = 0; i < COUNT(on); i++)
        if (strcasecmp(value, on[i]) == 0)
            return true;
    return false;
}

enum fb_efa_net fb_efa_nccl_net_kind(const char *nccl_net)
{
    static const char *const ofi[] = {"AWS Libfabric", "Libfabric", "OFI"};
    if (nccl_net == NULL || nccl_net[0] == '\0')
        return FB_EFA_NET_UNSET;
    for (size_t i = 0; i < COUNT(ofi); i++)
        if (strcasecmp(nccl_net, ofi[i]) == 0)
            return FB_EFA_NET_OFI;
    return FB_EFA_NET_OTHER;
}

/* Whether the comma list holds `word` (spaces around items allowed, any
 * case), as NCCL reads NCCL_PROTO. */
static bool list_has(const char *list, const char *word)
{
    size_t wn = strlen(word);
    for (const char *p = list; *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t n = strcspn(p, ",");
        size_t k = n;
        while (k > 0 && p[k - 1] == ' ')
            k--;
        if (k == wn && strncasecmp(p, word, wn) == 0)
            return true;
        p += n;
    }
    return false;
}

bool fb_efa_proto_excludes_simple(const char *nccl_proto)
{
    if (nccl_proto == NULL)
        return false;
    while (*nccl_proto == ' ')
        nccl_proto++;
    if (*nccl_proto == '\0')
        return false;
    if (*nccl_proto == '^')
        return list_has(nccl_proto + 1, "simple");
    return !list_has(nccl_proto, "simple");
}

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && strcmp(s + n - t, tail) == 0;
}

enum fb_efa_plugin fb_efa_plugin_wanted(const char *nccl_net_plugin, char *file, size_t len)
{
    const char *v = nccl_net_plugin;
    if (v == NULL || v[0] == '\0') {
        snprintf(file, len, "%s", plugin_names[0]);
        return FB_EFA_PLUGIN_DEFAULT;
    }
    if (strcasecmp(v, "none") == 0) {
        file[0] = '\0';
        return FB_EFA_PLUGIN_NONE;
    }
    snprintf(file, len, "%s", v);
    if (strchr(v, '/') != NULL)
        return FB_EFA_PLUGIN_PATH;
    /* A suffix names libnccl-net-<suffix>.so; a library name stands as is. */
    if (!ends_with(v, ".so") && strstr(v, ".so.") == NULL)
        snprintf(file, len, "libnccl-net-%s.so", v);
    return FB_EFA_PLUGIN_FILE;
}

bool fb_efa_plugin_is_ofi(const char *file)
{
    const char *name = base_name(file);
    for (size_t i = 0; i < COUNT(plugin_names); i++)
        if (strcmp(name, plugin_names[i]) == 0)
            return true;
    return false;
}

const char *fb_efa_plugin_name(size_t i)
{
    return i < COUNT(plugin_names) ? plugin_names[i] : NULL;
}
