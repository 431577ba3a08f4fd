/* librdmacm stand-in: the connection manager needs the kernel's rdma_cm,
 * which this machine has not; every call fails as librdmacm does without
 * it (-1 or NULL with errno ENODEV), so perftest -R says it cannot. Its
 * header may be missing here, hence the opaque declarations. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

struct rdma_cm_id;
struct rdma_event_channel;
struct rdma_cm_event;
struct rdma_addrinfo;
struct rdma_conn_param;
struct sockaddr;
struct ibv_pd;
struct ibv_qp_init_attr;
struct ibv_qp_init_attr_ex;

#define FAIL_INT { errno = ENODEV; return -1; }

int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *p);
int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *p) { (void)id; (void)p; FAIL_INT }
int rdma_ack_cm_event(struct rdma_cm_event *e);
int rdma_ack_cm_event(struct rdma_cm_event *e) { (void)e; FAIL_INT }
int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *a);
int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *a) { (void)id; (void)a; FAIL_INT }
int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *p);
int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *p) { (void)id; (void)p; FAIL_INT }
struct rdma_event_channel *rdma_create_event_channel(void);
struct rdma_event_channel *rdma_create_event_channel(void)
{
    errno = ENODEV;
    return NULL;
}
int rdma_create_id(struct rdma_event_channel *c, struct rdma_cm_id **id, void *ctx, int ps);
int rdma_create_id(struct rdma_event_channel *c, struct rdma_cm_id **id, void *ctx, int ps)
{
    (void)c; (void)id; (void)ctx; (void)ps;
    FAIL_INT
}
int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *a);
int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *a)
{
    (void)id; (void)pd; (void)a;
    FAIL_INT
}
int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *a);
int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *a) { (void)id; (void)a; FAIL_INT }
void rdma_destroy_event_channel(struct rdma_event_channel *c);
void rdma_destroy_event_channel(struct rdma_event_channel *c) { (void)c; }
int rdma_destroy_id(struct rdma_cm_id *id);
int rdma_destroy_id(struct rdma_cm_id *id) { (void)id; FAIL_INT }
void rdma_destroy_qp(struct rdma_cm_id *id);
void rdma_destroy_qp(struct rdma_cm_id *id) { (void)id; }
int rdma_disconnect(struct rdma_cm_id *id);
int rdma_disconnect(struct rdma_cm_id *id) { (void)id; FAIL_INT }
const char *rdma_event_str(int event);
const char *rdma_event_str(int event)
{
    (void)event;
    return "UNKNOWN EVENT";
}
void rdma_freeaddrinfo(struct rdma_addrinfo *res);
void rdma_freeaddrinfo(struct rdma_addrinfo *res) { (void)res; }
int rdma_get_cm_event(struct rdma_event_channel *c, struct rdma_cm_event **e);
int rdma_get_cm_event(struct rdma_event_channel *c, struct rdma_cm_event **e) { (void)c; (void)e; FAIL_INT }
int rdma_getaddrinfo(const char *node, const char *service, const struct rdma_addrinfo *hints,
                     struct rdma_addrinfo **res);
int rdma_getaddrinfo(const char *node, const char *service, const struct rdma_addrinfo *hints,
                     struct rdma_addrinfo **res)
{
    (void)node; (void)service; (void)hints; (void)res;
    FAIL_INT
}
int rdma_listen(struct rdma_cm_id *id, int backlog);
int rdma_listen(struct rdma_cm_id *id, int backlog) { (void)id; (void)backlog; FAIL_INT }
int rdma_reject(struct rdma_cm_id *id, const void *data, uint8_t len);
int rdma_reject(struct rdma_cm_id *id, const void *data, uint8_t len) { (void)id; (void)data; (void)len; FAIL_INT }
int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src, struct sockaddr *dst, int ms);
int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src, struct sockaddr *dst, int ms)
{
    (void)id; (void)src; (void)dst; (void)ms;
    FAIL_INT
}
int rdma_resolve_route(struct rdma_cm_id *id, int ms);
int rdma_resolve_route(struct rdma_cm_id *id, int ms) { (void)id; (void)ms; FAIL_INT }
int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval, size_t optlen);
int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval, size_t optlen)
{
    (void)id; (void)level; (void)optname; (void)optval; (void)optlen;
    FAIL_INT
}
void rdma_destroy_ep(struct rdma_cm_id *id);
void rdma_destroy_ep(struct rdma_cm_id *id) { (void)id; }
int rdma_establish(struct rdma_cm_id *id);
int rdma_establish(struct rdma_cm_id *id) { (void)id; FAIL_INT }
uint16_t rdma_get_src_port(struct rdma_cm_id *id);
uint16_t rdma_get_src_port(struct rdma_cm_id *id)
{
    (void)id;
    return 0;
}
struct ibv_context;
/* No rdma_cm: no devices (NULL, errno ENODEV, as without the kernel module). */
struct ibv_context **rdma_get_devices(int *num_devices);
struct ibv_context **rdma_get_devices(int *num_devices)
{
    if (num_devices != NULL)
        *num_devices = 0;
    errno = ENODEV;
    return NULL;
}
void rdma_free_devices(struct ibv_context **list);
void rdma_free_devices(struct ibv_context **list) { (void)list; }
int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel);
int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel) { (void)id; (void)channel; FAIL_INT }
struct ibv_qp_attr;
int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr, int *qp_attr_mask);
int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr, int *qp_attr_mask)
{
    (void)id; (void)qp_attr; (void)qp_attr_mask;
    FAIL_INT
}
