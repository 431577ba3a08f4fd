/* Device, port and GID: everything about this rank's HCA that must be
 * known before a queue pair is made. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/devsel.h"
#include "probe/linerate.h"
#include "probe/sysfs.h"
#include "probe/verbs_internal.h"

int probe_mtu_bytes(int ibv_mtu)
{
    return ibv_mtu >= IBV_MTU_256 && ibv_mtu <= IBV_MTU_4096 ? 128 << ibv_mtu : 0;
}

int probe_mtu_enum(int bytes)
{
    for (int m = IBV_MTU_256; m <= IBV_MTU_4096; m++)
        if (probe_mtu_bytes(m) == bytes)
            return m;
    return 0;
}

static const char *phys_state_name(uint8_t s)
{
    static const char *const names[] = {"unknown", "Sleep", "Polling", "Disabled",
                                        "PortConfigurationTraining", "LinkUp",
                                        "LinkErrorRecovery", "PhyTest"};
    return s < sizeof names / sizeof *names ? names[s] : "unknown";
}

/* The kernel without RDMA answers ENOSYS; RDMA without a provider or HCA
 * gives an empty list. Both mean "nothing to probe here", not a failure. */
static enum fb_status device_list(struct ibv_device ***list, int *n, struct fb_err *err)
{
    errno = 0;
    *list = ibv_get_device_list(n);
    if (*list == NULL) {
        if (errno == ENOSYS)
            return fb_fail(err, FB_ERR_UNAVAIL,
                           "no RDMA in this kernel (ibv_get_device_list: %s); load the RDMA "
                           "drivers (e.g. mlx5_ib) or use --transport tcp", strerror(ENOSYS));
        return fb_fail(err, FB_ERR_RUNTIME, "ibv_get_device_list failed: %s",
                       strerror(errno ? errno : EIO));
    }
    if (*n == 0) {
        ibv_free_device_list(*list);
        *list = NULL;
        return fb_fail(err, FB_ERR_UNAVAIL,
                       "no RDMA devices: the kernel has RDMA but no HCA or provider is present "
                       "(see ibv_devices); install the provider (ibverbs-providers) or use "
                       "--transport tcp");
    }
    return FB_OK;
}

static enum fb_status open_named(const struct probe_verbs_cfg *cfg, int local_rank, int local_size,
                                 const char *host, struct probe_verbs_dev *d, struct fb_err *err)
{
    struct ibv_device **list = NULL;
    int n = 0;
    if (device_list(&list, &n, err) != FB_OK)
        return err->code;
    const char **names = malloc((size_t)n * sizeof *names);
    if (names == NULL) {
        ibv_free_device_list(list);
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    }
    for (int i = 0; i < n; i++)
        names[i] = ibv_get_device_name(list[i]);
    enum fb_status st = probe_pick_device(names, n, cfg->devices, local_rank, local_size, "HCA",
                                          "-d", host, d->name, sizeof d->name, err);
    for (int i = 0; st == FB_OK && i < n && d->ctx == NULL; i++) {
        if (strcmp(names[i], d->name) != 0)
            continue;
        d->ctx = ibv_open_device(list[i]);
        if (d->ctx == NULL)
            st = fb_fail(err, FB_ERR_RUNTIME, "cannot open HCA %s: %s", d->name, strerror(errno));
    }
    free(names);
    ibv_free_device_list(list);
    return st;
}

static enum fb_status check_port(struct probe_verbs_dev *d, const struct probe_verbs_cfg *cfg,
                                 const char *host, struct ibv_device_attr *dattr,
                                 struct ibv_port_attr *pattr, struct fb_err *err)
{
    if (ibv_query_device(d->ctx, dattr) != 0)
        return fb_fail(err, FB_ERR_RUNTIME, "ibv_query_device on %s failed: %s", d->name,
                       strerror(errno));
    if (cfg->port < 1 || cfg->port > dattr->phys_port_cnt)
        return fb_fail(err, FB_ERR_USAGE, "port %d does not exist on %s (it has port%s 1-%u); "
                       "pass -i with one of those", cfg->port, d->name,
                       dattr->phys_port_cnt > 1 ? "s" : "", dattr->phys_port_cnt);
    d->port = cfg->port;
    if (ibv_query_port(d->ctx, (uint8_t)d->port, pattr) != 0)
        return fb_fail(err, FB_ERR_RUNTIME, "ibv_query_port on %s port %d failed: %s", d->name,
                       d->port, strerror(errno));
    /* Refused at open: a QP towards a port that is not ACTIVE would only
     * time out later, with nothing to say which end is at fault. The
     * host is named because every rank reports its own port. */
    if (pattr->state != IBV_PORT_ACTIVE)
        return fb_fail(err, FB_ERR_RUNTIME,
                       "%s port %d on %s is %s (physical state %s), not ACTIVE; check the cable, "
                       "the switch port and the subnet manager (ibstat %s on %s), or choose "
                       "another HCA with -d",
                       d->name, d->port, host, ibv_port_state_str(pattr->state),
                       phys_state_name(pattr->phys_state), d->name, host);
    d->ll = pattr->link_layer == IBV_LINK_LAYER_ETHERNET ? PROBE_LL_ETH : PROBE_LL_IB;
    d->lid = pattr->lid;
    int active = probe_mtu_bytes(pattr->active_mtu);
    d->mtu_bytes = cfg->mtu > 0 ? cfg->mtu : active;
    if (cfg->mtu > active)
        return fb_fail(err, FB_ERR_USAGE, "--mtu %d exceeds the active MTU %d of %s port %d; use "
                       "%d or less", cfg->mtu, active, d->name, d->port, active);
    return FB_OK;
}

/* 1 when the entry has a type this module knows. */
static int convert_gid(const struct ibv_gid_entry *in, struct probe_gid_entry *out)
{
    out->index = in->gid_index;
    memcpy(out->raw, in->gid.raw, 16);
    switch (in->gid_type) {
    case IBV_GID_TYPE_IB: out->type = PROBE_GID_IB; return 1;
    case IBV_GID_TYPE_ROCE_V1: out->type = PROBE_GID_ROCE_V1; return 1;
    case IBV_GID_TYPE_ROCE_V2: out->type = PROBE_GID_ROCE_V2; return 1;
    }
    return 0;
}

static enum fb_status choose_gid(struct probe_verbs_dev *d, const struct probe_verbs_cfg *cfg,
                                 const char *host, const struct ibv_device_attr *dattr,
                                 const struct ibv_port_attr *pattr, struct fb_err *err)
{
    size_t cap = (size_t)pattr->gid_tbl_len * dattr->phys_port_cnt;
    struct ibv_gid_entry *table = calloc(cap ? cap : 1, sizeof *table);
    struct probe_gid_entry *mine = calloc(cap ? cap : 1, sizeof *mine);
    if (table == NULL || mine == NULL) {
        free(table);
        free(mine);
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    }
    ssize_t got = ibv_query_gid_table(d->ctx, table, cap, 0);
    enum fb_status st = FB_OK;
    if (got < 0) {
        st = fb_fail(err, FB_ERR_RUNTIME, "cannot read the GID table of %s: %s", d->name,
                     strerror((int)-got));
    } else {
        size_t n = 0;
        for (ssize_t i = 0; i < got; i++)
            if (table[i].port_num == (uint32_t)d->port && convert_gid(&table[i], &mine[n]))
                n++;
        char where[160];
        snprintf(where, sizeof where, "%s port %d on %s", d->name, d->port, host);
        st = probe_gid_select(mine, n, (uint32_t)pattr->gid_tbl_len, d->ll, cfg->gid_index, where,
                              &d->gid, err);
    }
    free(table);
    free(mine);
    return st;
}

static void fill_endpoint(const struct probe_verbs_dev *d, const struct ibv_device_attr *dattr,
                          const struct ibv_port_attr *pattr, struct probe_endpoint *ep)
{
    snprintf(ep->device, sizeof ep->device, "%s", d->name);
    ep->port = d->port;
    snprintf(ep->firmware, sizeof ep->firmware, "%s", dattr->fw_ver);
    snprintf(ep->link_layer, sizeof ep->link_layer, "%s", probe_link_layer_name(d->ll));
    snprintf(ep->port_state, sizeof ep->port_state, "%s", ibv_port_state_str(pattr->state));
    ep->mtu = d->mtu_bytes;
    ep->active_mtu = probe_mtu_bytes(pattr->active_mtu);
    probe_rate_describe(pattr->active_speed, pattr->active_width, ep->rate, sizeof ep->rate);
    ep->line_rate_gbps = probe_line_rate_gbps(pattr->active_speed, pattr->active_width);
    ep->lid = d->lid;
    ep->gid_index = (int)d->gid.index;
    probe_gid_format(d->gid.raw, ep->gid, sizeof ep->gid);
    snprintf(ep->gid_type, sizeof ep->gid_type, "%s", probe_gid_type_name(d->gid.type));
    ep->gid_auto = d->gid.automatic;
    snprintf(ep->gid_rule, sizeof ep->gid_rule, "%s", d->gid.why);
    ep->numa_node = probe_sysfs_numa_node("", "infiniband", d->name);
    probe_sysfs_pci_address("", "infiniband", d->name, ep->pci_bus_id, sizeof ep->pci_bus_id);
}

enum fb_status probe_verbs_open(const struct probe_verbs_cfg *cfg, int local_rank,
                                int local_size, const char *host, struct probe_verbs_dev **out,
                                struct probe_endpoint *ep, struct fb_err *err)
{
    *out = NULL;
    struct probe_verbs_dev *d = calloc(1, sizeof *d);
    if (d == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    d->sl = cfg->sl;
    d->tclass = cfg->tclass;
    struct ibv_device_attr dattr;
    struct ibv_port_attr pattr;
    enum fb_status st = open_named(cfg, local_rank, local_size, host, d, err);
    if (st == FB_OK)
        st = check_port(d, cfg, host, &dattr, &pattr, err);
    if (st == FB_OK)
        st = choose_gid(d, cfg, host, &dattr, &pattr, err);
    if (st == FB_OK) {
        d->pd = ibv_alloc_pd(d->ctx);
        if (d->pd == NULL)
            st = fb_fail(err, FB_ERR_RUNTIME, "ibv_alloc_pd on %s failed: %s", d->name,
                         strerror(errno));
    }
    if (st != FB_OK) {
        probe_verbs_close(d);
        return st;
    }
    fill_endpoint(d, &dattr, &pattr, ep);
    *out = d;
    return FB_OK;
}

struct ibv_pd *probe_verbs_pd(struct probe_verbs_dev *d) { return d->pd; }

void probe_verbs_close(struct probe_verbs_dev *d)
{
    if (d == NULL)
        return;
    if (d->pd != NULL)
        ibv_dealloc_pd(d->pd);
    if (d->ctx != NULL)
        ibv_close_device(d->ctx);
    free(d);
}
