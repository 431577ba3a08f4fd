/* The device-level entry points: the device list, contexts, device, port,
 * GID and P_Key queries, sysfs reads, the string helpers, and the calls a
 * device without a feature answers with "not supported". */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "ibv_internal.h"

/* The headers turn these names into inline wrappers; the library exports
 * the functions behind them. */
#undef ibv_get_device_list
#undef ibv_query_port

struct ibv_device **ibv_get_device_list(int *num_devices)
{
    int n = 0;
    struct sib_dev *d = sib_devices(&n);
    if (n < 0) {
        errno = EINVAL;
        return NULL;
    }
    struct ibv_device **list = calloc((size_t)n + 1, sizeof *list);
    if (list == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    for (int i = 0; i < n; i++)
        list[i] = &d[i].dev;
    if (num_devices != NULL)
        *num_devices = n;
    return list;
}

void ibv_free_device_list(struct ibv_device **list) { free(list); }

const char *ibv_get_device_name(struct ibv_device *device) { return device->name; }

static struct sib_dev *dev_of(struct ibv_device *device)
{
    return SIB_CONTAINER(device, struct sib_dev, dev);
}

__be64 ibv_get_device_guid(struct ibv_device *device)
{
    uint64_t v = dev_of(device)->node_guid, be = 0;
    for (int i = 0; i < 8; i++)
        ((uint8_t *)&be)[i] = (uint8_t)(v >> (56 - 8 * i));
    return (__be64)be;
}

int ibv_get_device_index(struct ibv_device *device) { return dev_of(device)->index; }

static int query_device_ex(struct ibv_context *context, const struct ibv_query_device_ex_input *input,
                           struct ibv_device_attr_ex *attr, size_t attr_size);
static int query_port_ex(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *attr,
                         size_t attr_size);

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
    struct sib_ctx *c = calloc(1, sizeof *c);
    if (c == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    c->dev = dev_of(device);
    pthread_mutex_init(&c->lock, NULL);
    struct verbs_context *v = &c->vctx;
    struct ibv_context *ctx = &v->context;
    v->sz = sizeof *v;
    v->query_port = query_port_ex;
    v->query_device_ex = query_device_ex;
    v->create_qp_ex = sib_create_qp_ex;
    ctx->device = device;
    ctx->abi_compat = __VERBS_ABI_IS_EXTENDED;
    ctx->ops.poll_cq = sib_poll_cq;
    ctx->ops.req_notify_cq = sib_req_notify_cq;
    ctx->ops.post_send = sib_post_send;
    ctx->ops.post_recv = sib_post_recv;
    /* Nothing ever arrives on them, but they are real descriptors. */
    ctx->async_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    ctx->cmd_fd = eventfd(0, EFD_CLOEXEC);
    ctx->num_comp_vectors = 1;
    pthread_mutex_init(&ctx->mutex, NULL);
    return ctx;
}

int ibv_close_device(struct ibv_context *context)
{
    struct sib_ctx *c = sib_ctx_of(context);
    if (context->async_fd >= 0)
        close(context->async_fd);
    if (context->cmd_fd >= 0)
        close(context->cmd_fd);
    free(c);
    return 0;
}

static void device_attr(const struct sib_dev *d, struct ibv_device_attr *a)
{
    memset(a, 0, sizeof *a);
    snprintf(a->fw_ver, sizeof a->fw_ver, "28.39.1002");
    uint64_t be = (uint64_t)ibv_get_device_guid((struct ibv_device *)&d->dev);
    a->node_guid = be;
    a->sys_image_guid = be;
    a->max_mr_size = ~0ull;
    a->page_size_cap = 0xfffffffffffff000ull;
    a->vendor_id = 0x02c9;
    a->vendor_part_id = 4129;
    a->hw_ver = 0;
    a->max_qp = 131072;
    a->max_qp_wr = SIB_QP_WR_MAX;
    a->device_cap_flags = IBV_DEVICE_BAD_PKEY_CNTR | IBV_DEVICE_BAD_QKEY_CNTR |
                          IBV_DEVICE_CHANGE_PHY_PORT | IBV_DEVICE_PORT_ACTIVE_EVENT |
                          IBV_DEVICE_SYS_IMAGE_GUID | IBV_DEVICE_RC_RNR_NAK_GEN;
    a->max_sge = SIB_SGE_MAX;
    a->max_sge_rd = SIB_SGE_MAX;
    a->max_cq = 16777216;
    a->max_cqe = SIB_CQE_MAX;
    a->max_mr = 16777216;
    a->max_pd = 16777216;
    a->max_qp_rd_atom = 16;
    a->max_ee_rd_atom = 0;
    a->max_res_rd_atom = 16 * 131072;
    a->max_qp_init_rd_atom = 16;
    a->atomic_cap = IBV_ATOMIC_NONE;
    a->max_pkeys = 128;
    a->local_ca_ack_delay = 16;
    a->phys_port_cnt = 1;
}

int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *device_attr_out)
{
    device_attr(sib_ctx_of(context)->dev, device_attr_out);
    return 0;
}

static int query_device_ex(struct ibv_context *context, const struct ibv_query_device_ex_input *input,
                           struct ibv_device_attr_ex *attr, size_t attr_size)
{
    if ((input && input->comp_mask) || attr_size < sizeof attr->orig_attr)
        return EINVAL;
    struct ibv_device_attr_ex full;
    memset(&full, 0, sizeof full);
    device_attr(sib_ctx_of(context)->dev, &full.orig_attr);
    full.max_dm_size = 0;
    memcpy(attr, &full, attr_size < sizeof full ? attr_size : sizeof full);
    return 0;
}

static void port_attr(const struct sib_port *p, struct ibv_port_attr *a)
{
    memset(a, 0, sizeof *a);
    int eth = p->link_layer == IBV_LINK_LAYER_ETHERNET;
    a->state = p->active ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
    a->max_mtu = IBV_MTU_4096;
    a->active_mtu = p->mtu;
    a->gid_tbl_len = p->gid_tbl_len;
    a->port_cap_flags = eth ? IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS
                            : IBV_PORT_CM_SUP | IBV_PORT_SYS_IMAGE_GUID_SUP | IBV_PORT_CAP_MASK2_SUP;
    a->max_msg_sz = 1u << 30;
    a->pkey_tbl_len = eth ? 1 : 128;
    a->lid = p->lid;
    a->sm_lid = p->sm_lid;
    a->max_vl_num = 4;
    a->subnet_timeout = 18;
    a->active_width = p->width;
    a->active_speed = p->speed;
    a->phys_state = p->active ? 5 : 3;
    a->link_layer = p->link_layer;
}

static int query_port_ex(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *attr,
                         size_t attr_size)
{
    if (port_num != 1)
        return EINVAL;
    struct ibv_port_attr full;
    port_attr(&sib_ctx_of(context)->dev->port, &full);
    memcpy(attr, &full, attr_size < sizeof full ? attr_size : sizeof full);
    return 0;
}

int ibv_query_port(struct ibv_context *context, uint8_t port_num, struct _compat_ibv_port_attr *attr);
int ibv_query_port(struct ibv_context *context, uint8_t port_num, struct _compat_ibv_port_attr *attr)
{
    /* The old struct: ibv_port_attr up to its flags, before port_cap_flags2. */
    return query_port_ex(context, port_num, (struct ibv_port_attr *)(void *)attr,
                         offsetof(struct ibv_port_attr, port_cap_flags2));
}

int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
    const struct sib_port *p = &sib_ctx_of(context)->dev->port;
    if (port_num != 1 || index < 0 || index >= p->gid_tbl_len) {
        errno = EINVAL;
        return -1;
    }
    memset(gid, 0, sizeof *gid);
    if (index < p->ngid)
        memcpy(gid->raw, p->gid[index], 16);
    return 0;
}

/* ibv_devinfo's: 0 IB/RoCE v1, 1 RoCE v2 (enum ibv_gid_type_sysfs). */
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index, int *type);
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index, int *type)
{
    const struct sib_port *p = &sib_ctx_of(context)->dev->port;
    if (port_num != 1 || index >= (unsigned)p->gid_tbl_len) {
        errno = EINVAL;
        return -1;
    }
    *type = index < (unsigned)p->ngid && p->gid_type[index] == IBV_GID_TYPE_ROCE_V2;
    return 0;
}

static void gid_entry(const struct sib_port *p, int i, struct ibv_gid_entry *e)
{
    memset(e, 0, sizeof *e);
    memcpy(e->gid.raw, p->gid[i], 16);
    e->gid_index = (uint32_t)i;
    e->port_num = 1;
    e->gid_type = p->gid_type[i];
    e->ndev_ifindex = p->link_layer == IBV_LINK_LAYER_ETHERNET ? p->ndev_ifindex : 0;
}

int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t gid_index,
                      struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
    const struct sib_port *p = &sib_ctx_of(context)->dev->port;
    if (flags != 0 || entry_size < sizeof *entry || port_num != 1 || gid_index >= (uint32_t)p->gid_tbl_len)
        return EINVAL;
    if (gid_index >= (uint32_t)p->ngid)
        return ENODATA; /* an empty entry, as the kernel says it */
    gid_entry(p, (int)gid_index, entry);
    return 0;
}

ssize_t _ibv_query_gid_table(struct ibv_context *context, struct ibv_gid_entry *entries,
                             size_t max_entries, uint32_t flags, size_t entry_size)
{
    const struct sib_port *p = &sib_ctx_of(context)->dev->port;
    if (flags != 0 || entry_size < sizeof *entries)
        return -EINVAL;
    if (max_entries < (size_t)p->ngid)
        return -EINVAL;
    for (int i = 0; i < p->ngid; i++)
        gid_entry(p, i, (struct ibv_gid_entry *)(void *)((char *)entries + (size_t)i * entry_size));
    return p->ngid;
}

int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
    (void)context;
    if (port_num != 1 || index < 0 || index >= 128) {
        errno = EINVAL;
        return -1;
    }
    *pkey = index == 0 ? htobe16(0xffff) : 0;
    return 0;
}

int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
    (void)context;
    return port_num == 1 && be16toh(pkey) == 0xffff ? 0 : -1;
}

/* A file of the device's sysfs-style tree (its ibdev_path points there). */
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || size == 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    ssize_t n = read(fd, buf, size);
    close(fd);
    if (n < 0)
        return -1;
    if ((size_t)n == size)
        n--;
    buf[n] = '\0';
    if (n > 0 && buf[n - 1] == '\n')
        buf[--n] = '\0';
    return (int)n;
}

int ibv_get_sysfs_path(char *buf, size_t size)
{
    snprintf(buf, size, "/sys");
    return 0;
}

int ibv_fork_init(void) { return 0; }
enum ibv_fork_status ibv_is_fork_initialized(void) { return IBV_FORK_UNNEEDED; }

int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
    (void)qp;
    (void)ece;
    return EOPNOTSUPP;
}

int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
    (void)qp;
    (void)ece;
    return EOPNOTSUPP;
}

int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
    (void)qp;
    (void)op;
    (void)flags;
    return 0; /* data lands in order: one copy, front to back */
}

int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
    (void)context;
    (void)event;
    errno = EAGAIN; /* no asynchronous events are ever raised */
    return -1;
}

void ibv_ack_async_event(struct ibv_async_event *event) { (void)event; }

/* ---- strings -------------------------------------------------------------- */

const char *ibv_node_type_str(enum ibv_node_type node_type)
{
    static const char *const names[] = {"unknown", "InfiniBand channel adapter", "InfiniBand switch",
                                        "InfiniBand router", "iWARP NIC", "usNIC", "usNIC UDP",
                                        "unspecified"};
    return node_type >= IBV_NODE_CA && node_type <= IBV_NODE_UNSPECIFIED ? names[node_type] : names[0];
}

const char *ibv_port_state_str(enum ibv_port_state port_state)
{
    static const char *const names[] = {"PORT_NOP", "PORT_DOWN", "PORT_INIT", "PORT_ARMED",
                                        "PORT_ACTIVE", "PORT_ACTIVE_DEFER"};
    return port_state <= IBV_PORT_ACTIVE_DEFER ? names[port_state] : "unknown";
}

const char *ibv_event_type_str(enum ibv_event_type event)
{
    static const char *const names[] = {
        "CQ error", "local work queue catastrophic error", "invalid request local work queue error",
        "local access violation work queue error", "communication established",
        "send queue drained", "path migrated", "path migration request error",
        "local catastrophic error", "port active", "port error", "LID change", "P_Key change",
        "SM change", "SRQ catastrophic error", "SRQ limit reached", "last WQE reached",
        "client reregistration", "GID table change", "WQ fatal"};
    return (unsigned)event < sizeof names / sizeof *names ? names[event] : "unknown";
}

const char *ibv_wc_status_str(enum ibv_wc_status status)
{
    static const char *const names[] = {
        "success", "local length error", "local QP operation error", "local EE context operation error",
        "local protection error", "Work Request Flushed Error", "memory management operation error",
        "bad response error", "local access error", "remote invalid request error",
        "remote access error", "remote operation error", "transport retry counter exceeded",
        "RNR retry counter exceeded", "local RDD violation error", "remote invalid RD request",
        "aborted error", "invalid EE context number", "invalid EE context state", "fatal error",
        "response timeout error", "general error", "TM error", "TM rendezvous error"};
    return (unsigned)status < sizeof names / sizeof *names ? names[status] : "unknown";
}

int ibv_rate_to_mult(enum ibv_rate rate)
{
    switch (rate) {
    case IBV_RATE_2_5_GBPS: return 1;
    case IBV_RATE_5_GBPS: return 2;
    case IBV_RATE_10_GBPS: return 4;
    case IBV_RATE_20_GBPS: return 8;
    case IBV_RATE_30_GBPS: return 12;
    case IBV_RATE_40_GBPS: return 16;
    case IBV_RATE_60_GBPS: return 24;
    case IBV_RATE_80_GBPS: return 32;
    case IBV_RATE_120_GBPS: return 48;
    default: return -1;
    }
}

enum ibv_rate mult_to_ibv_rate(int mult)
{
    switch (mult) {
    case 1: return IBV_RATE_2_5_GBPS;
    case 2: return IBV_RATE_5_GBPS;
    case 4: return IBV_RATE_10_GBPS;
    case 8: return IBV_RATE_20_GBPS;
    case 12: return IBV_RATE_30_GBPS;
    case 16: return IBV_RATE_40_GBPS;
    case 24: return IBV_RATE_60_GBPS;
    case 32: return IBV_RATE_80_GBPS;
    case 48: return IBV_RATE_120_GBPS;
    default: return IBV_RATE_MAX;
    }
}

/* ---- what this device does not have ---------------------------------------- */

struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *srq_init_attr)
{
    (void)pd;
    (void)srq_init_attr;
    errno = EOPNOTSUPP;
    return NULL;
}

int ibv_destroy_srq(struct ibv_srq *srq)
{
    (void)srq;
    return EOPNOTSUPP;
}

int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr, int srq_attr_mask)
{
    (void)srq;
    (void)srq_attr;
    (void)srq_attr_mask;
    return EOPNOTSUPP;
}

int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr)
{
    (void)srq;
    (void)srq_attr;
    return EOPNOTSUPP;
}

struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
    (void)attr;
    struct ibv_ah *ah = calloc(1, sizeof *ah);
    if (ah == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    ah->context = pd->context;
    ah->pd = pd;
    return ah;
}

struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc, struct ibv_grh *grh,
                                     uint8_t port_num)
{
    (void)pd;
    (void)wc;
    (void)grh;
    (void)port_num;
    errno = EOPNOTSUPP; /* no UD here */
    return NULL;
}

int ibv_destroy_ah(struct ibv_ah *ah)
{
    free(ah);
    return 0;
}

int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
    (void)qp;
    (void)gid;
    (void)lid;
    return EOPNOTSUPP;
}

int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
    (void)qp;
    (void)gid;
    (void)lid;
    return EOPNOTSUPP;
}

int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
    (void)cq;
    (void)cqe;
    return EOPNOTSUPP;
}
