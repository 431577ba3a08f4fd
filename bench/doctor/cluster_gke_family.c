/* The GKE GPU machine families (how many GPU NICs, on which interfaces,
 * through which transport and which DaemonSets) and the GPU NIC mapping
 * fabric-bench was given (--gpu-nics FILE). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/files.h"
#include "core/jsonio.h"
#include "doctor/cluster.h"

/* A3 High pods name their four Networks freely (Google's samples: vpc1..vpc4);
 * A3 Mega's tooling finds gpu-nic in the name; A3 Ultra and A4 attach eth1
 * to a gVNIC Network and eth2..eth9 to rdma-0..rdma-7 (GKENetworkParamSet
 * deviceMode RDMA), without a sidecar: the gIB plugin talks to the NICs. */
static const struct fb_gke_family families[] = {
    {"a3-highgpu-8g", FB_GKE_TCPX, "GPUDirect-TCPX", 4, 1, NULL, "tcpx-daemon", false,
     "nccl-tcpx-installer", true, "gpudirect-tcpx/nccl-tcpx-installer.yaml"},
    {FB_GKE_TCPXO_MACHINE, FB_GKE_TCPXO, "GPUDirect-TCPXO", FB_GKE_GPU_NICS, 1, "gpu-nic",
     "tcpxo-daemon", true, "nccl-tcpxo-installer", true,
     "gpudirect-tcpxo/nccl-tcpxo-installer.yaml"},
    {"a3-ultragpu-8g", FB_GKE_RDMA, "GPUDirect RDMA", 8, 2, "rdma-", NULL, false,
     "nccl-rdma-installer", false, "gpudirect-rdma/nccl-rdma-installer.yaml"},
    {"a4-highgpu-8g", FB_GKE_RDMA, "GPUDirect RDMA", 8, 2, "rdma-", NULL, false,
     "nccl-rdma-installer", false, "gpudirect-rdma/nccl-rdma-installer.yaml"},
};

const struct fb_gke_family *fb_gke_family_of_machine(const char *machine)
{
    for (size_t i = 0; machine && i < sizeof families / sizeof families[0]; i++)
        if (strcmp(families[i].machine, machine) == 0)
            return &families[i];
    return NULL;
}

const struct fb_gke_family *fb_gke_family_of_node(json_object *node)
{
    const char *type = fb_kube_label(node, "node.kubernetes.io/instance-type");
    if (type == NULL)
        type = fb_kube_label(node, "beta.kubernetes.io/instance-type");
    return fb_gke_family_of_machine(type);
}

void fb_gke_family_names(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
        fb_strbuf_append(buf, len, &used, "%s%s", i ? ", " : "", families[i].machine);
}

/* ---- --gpu-nics FILE ---- */

#define NIC_MAP_SHAPES "give the gpu-nics ConfigMap (data: eth1: NAME ...) or a JSON " \
                       "interfaces array ([{\"interfaceName\": \"eth1\", \"network\": NAME}])"

static bool is_eth_name(const char *s)
{
    if (strncmp(s, "eth", 3) != 0 || !isdigit((unsigned char)s[3]))
        return false;
    for (s += 3; *s; s++)
        if (!isdigit((unsigned char)*s))
            return false;
    return true;
}

static enum fb_status map_add(struct fb_gke_nic_map *map, const char *ifname, const char *net,
                              const char *what, struct fb_err *err)
{
    if (!is_eth_name(ifname) || net[0] == '\0' || strlen(ifname) >= sizeof map->ifname[0] ||
        strlen(net) >= sizeof map->network[0])
        return fb_fail(err, FB_ERR_INPUT, "%s: '%s: %s' is not ethN: NETWORK; %s", what, ifname,
                       net, NIC_MAP_SHAPES);
    for (size_t i = 0; i < map->n; i++)
        if (strcmp(map->ifname[i], ifname) == 0)
            return fb_fail(err, FB_ERR_INPUT, "%s: %s given twice; %s", what, ifname,
                           NIC_MAP_SHAPES);
    if (map->n == FB_GKE_NIC_MAX)
        return fb_fail(err, FB_ERR_INPUT, "%s: more than %d interfaces", what, FB_GKE_NIC_MAX);
    snprintf(map->ifname[map->n], sizeof map->ifname[0], "%s", ifname);
    snprintf(map->network[map->n], sizeof map->network[0], "%s", net);
    map->n++;
    return FB_OK;
}

static enum fb_status parse_json_map(const char *text, const char *what,
                                     struct fb_gke_nic_map *map, struct fb_err *err)
{
    enum json_tokener_error jerr = json_tokener_success;
    json_object *arr = json_tokener_parse_verbose(text, &jerr);
    if (arr == NULL || !json_object_is_type(arr, json_type_array)) {
        json_object_put(arr);
        return fb_fail(err, FB_ERR_INPUT, "%s: not a JSON array (%s); %s", what,
                       arr ? "another JSON value" : json_tokener_error_desc(jerr), NIC_MAP_SHAPES);
    }
    enum fb_status st = FB_OK;
    for (size_t i = 0; st == FB_OK && i < json_object_array_length(arr); i++) {
        json_object *e = json_object_array_get_idx(arr, i);
        const char *ifname = fb_json_get_string(e, "interfaceName");
        const char *net = fb_json_get_string(e, "network");
        if (ifname == NULL || net == NULL)
            st = fb_fail(err, FB_ERR_INPUT, "%s: entry %zu lacks interfaceName or network; %s",
                         what, i, NIC_MAP_SHAPES);
        else if (strcmp(ifname, "eth0") != 0) /* eth0 is the pod network, not a GPU NIC */
            st = map_add(map, ifname, net, what, err);
    }
    json_object_put(arr);
    return st;
}

/* "  eth1: gpu-nic-0  # note" -> key "eth1", value "gpu-nic-0". */
static bool split_yaml_pair(char *line, char **key, char **value)
{
    char *hash = strstr(line, " #");
    if (hash)
        *hash = '\0';
    char *colon = strchr(line, ':');
    if (colon == NULL)
        return false;
    *colon = '\0';
    *key = line + strspn(line, " ");
    char *v = colon + 1;
    v += strspn(v, " \t");
    size_t n = strlen(v);
    while (n > 0 && isspace((unsigned char)v[n - 1]))
        v[--n] = '\0';
    if (n >= 2 && (v[0] == '"' || v[0] == '\'') && v[n - 1] == v[0]) {
        v[n - 1] = '\0';
        v++;
    }
    char *k = *key;
    size_t kn = strlen(k);
    while (kn > 0 && isspace((unsigned char)k[kn - 1]))
        k[--kn] = '\0';
    *value = v;
    return true;
}

/* Just the ConfigMap shape: a top-level data: block of ethN: NAME lines. */
static enum fb_status parse_configmap(char *text, const char *what, struct fb_gke_nic_map *map,
                                      struct fb_err *err)
{
    bool in_data = false, seen_data = false;
    int lineno = 0;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        lineno++;
        size_t n = strlen(line);
        if (n > 0 && line[n - 1] == '\r')
            line[--n] = '\0';
        const char *body = line + strspn(line, " ");
        if (body[0] == '\0' || body[0] == '#')
            continue;
        if (line[0] != ' ') {
            in_data = strncmp(line, "data:", 5) == 0 && line[5 + strspn(line + 5, " ")] == '\0';
            seen_data |= in_data;
            continue;
        }
        if (!in_data)
            continue;
        char *key = NULL, *value = NULL;
        if (!split_yaml_pair(line, &key, &value))
            return fb_fail(err, FB_ERR_INPUT, "%s line %d: '%s' is not ethN: NETWORK; %s", what,
                           lineno, body, NIC_MAP_SHAPES);
        enum fb_status st = map_add(map, key, value, what, err);
        if (st != FB_OK)
            return st;
    }
    if (!seen_data || map->n == 0)
        return fb_fail(err, FB_ERR_INPUT, "%s: no data: block of ethN: NETWORK lines; %s", what,
                       NIC_MAP_SHAPES);
    return FB_OK;
}

enum fb_status fb_gke_parse_nic_map(const char *text, const char *what,
                                    struct fb_gke_nic_map *map, struct fb_err *err)
{
    memset(map, 0, sizeof *map);
    const char *start = text + strspn(text, " \t\r\n");
    if (*start == '[')
        return parse_json_map(start, what, map, err);
    char *copy = strdup(text);
    if (copy == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    enum fb_status st = parse_configmap(copy, what, map, err);
    free(copy);
    return st;
}

enum fb_status fb_gke_read_nic_map(const char *path, struct fb_gke_nic_map *map,
                                   struct fb_err *err)
{
    char *text = NULL, what[4200];
    size_t len = 0;
    enum fb_status st = fb_read_text_file(path, &text, &len, err);
    if (st != FB_OK)
        return st;
    snprintf(what, sizeof what, "--gpu-nics %s", path);
    st = fb_gke_parse_nic_map(text, what, map, err);
    free(text);
    return st;
}

const char *fb_gke_given_network(const struct fb_gke_nic_map *map, const char *ifname)
{
    for (size_t i = 0; map && i < map->n; i++)
        if (strcmp(map->ifname[i], ifname) == 0)
            return map->network[i];
    return NULL;
}
