/* The libfabric transport's insides, shared by its three files: the domain
 * a rank opens (fabric_ofi.c), the endpoints of a link end and the RMA that
 * moves bytes over them (rma_ofi.c), and the ops the driver calls
 * (transport_ofi.c). Only files compiled with libfabric include it. */
#ifndef FB_PROBE_OFI_INTERNAL_H
#define FB_PROBE_OFI_INTERNAL_H

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "probe/endpoint.h"
#include "probe/measure.h"
#include "probe/size_spec.h"
#include "probe/wire.h"

/* What a rank asks libfabric for. */
struct probe_ofi_cfg {
    const char *provider; /* --provider, else NULL: FI_PROVIDER or libfabric's first */
    const char *domains;  /* -d, NULL for all */
    int op_read;          /* --op read */
    int counter;          /* --completion counter */
    int use_cuda;         /* needs FI_HMEM */
    int multi_node;       /* the job spans hosts: intra-node providers cannot reach */
    long tx_depth;        /* -t: operations in flight per endpoint */
    uint64_t max_size;    /* largest message of the run */
    const char *fi_provider; /* FI_PROVIDER's value (NULL: unset): it filters what libfabric loads */
};

/* One rank's provider and domain. */
struct probe_ofi_dev {
    struct fi_info *info; /* the chosen domain's entry */
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    uint64_t mr_mode;
    int op_read, counter;
    int hmem_iface;       /* FI_HMEM_SYSTEM, or FI_HMEM_CUDA for GPU memory */
    int gpu;              /* the CUDA device with FI_HMEM_CUDA */
    size_t window;        /* operations in flight per endpoint */
    char name[64];        /* the domain ("eth0", "rdmap16s27-rdm") */
    char provider[PROBE_OFI_PROV_MAX];
};

/* One endpoint of a link end, with the queue it completes to. */
struct probe_ofi_lane {
    struct fid_ep *ep;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_cntr *cntr; /* --completion counter */
    struct fid_mr *mr;
    void *desc;            /* the local buffer's descriptor (FI_MR_LOCAL) */
    fi_addr_t peer;
    uint64_t remote_base, rkey;
    struct fi_context2 *ctx; /* one per operation in flight (FI_CONTEXT2 mode) */
    struct fi_context2 **free_ctx;
    size_t nfree;
};

/* One end of a link: -q endpoints over this rank's slot. A passive end of
 * a bidirectional pair borrows the endpoints of the active end towards the
 * same peer (one connection both ways, as fi_rma_bw and ib_write_bw -b
 * use): `lender` is that end, and an end is freed when its last user
 * (itself, its borrower) lets go. */
struct probe_ofi_link {
    struct probe_ofi_dev *dev;
    int link_id, nlanes;
    struct probe_ofi_link *lender; /* NULL: the endpoints are this end's own */
    int users;
    char *local;        /* the slot */
    uint64_t len;
    char peer_name[FB_HOST_MAX + 96];
    struct probe_ofi_lane lane[PROBE_QPS_MAX];
};

/* ---- fabric_ofi.c ---- */

/* Finds the provider and this local rank's domain, opens fabric and
 * domain, and fills the endpoint's description. Errors name the provider
 * and the fix: unknown provider, no FI_RMA, no FI_HMEM for --use-cuda
 * (FB_ERR_UNAVAIL); no domain for the local rank (FB_ERR_USAGE). */
enum fb_status probe_ofi_open(const struct probe_ofi_cfg *cfg, int local_rank, int local_size,
                              const char *host, struct probe_ofi_dev **out,
                              struct probe_endpoint *ep, struct fb_err *err);
void probe_ofi_close(struct probe_ofi_dev *d);

/* "FI_MR_LOCAL|FI_MR_VIRT_ADDR" of the bits this probe knows. */
void probe_ofi_mr_mode_name(uint64_t mode, char *buf, size_t len);

/* ---- rma_ofi.c ---- */

/* Endpoints, queues and memory regions for one end, over [local, local +
 * len), or with `share` non-NULL only the regions, bound to share's
 * endpoints (a passive end lending its memory through them); `info`
 * receives what the peer needs. */
enum fb_status probe_ofi_link_create(struct probe_ofi_dev *d, int link_id, int rank, int nlanes,
                                     char *local, uint64_t len, const char *peer_name,
                                     struct probe_ofi_link *share, struct probe_ofi_link **out,
                                     struct probe_ofiinfo *info, struct fb_err *err);
/* 1 when the end uses another end's endpoints: that end's polling drives them. */
int probe_ofi_link_borrows(const struct probe_ofi_link *l);
/* Inserts the peer's endpoint addresses; its provider must be ours. */
enum fb_status probe_ofi_link_connect(struct probe_ofi_link *l, const struct probe_ofiinfo *peer,
                                      const char *me, struct fb_err *err);
void probe_ofi_link_destroy(struct probe_ofi_link *l);

/* Drives the provider for an end that only lends its memory: providers
 * with manual progress (tcp, efa without device RDMA) move a peer's bytes
 * only while the target reads its queues. */
enum fb_status probe_ofi_progress(struct probe_ofi_link *l, struct fb_err *err);

/* Called between polls of a bandwidth run so the rank's passive ends keep
 * progressing; nonzero status ends the run. */
struct probe_ofi_idle {
    enum fb_status (*fn)(void *arg, struct fb_err *err);
    void *arg;
};

/* Bandwidth of the operation on every active end at once; out[i] for
 * links[i]. */
enum fb_status probe_ofi_bw(struct probe_ofi_link **links, int n, const struct probe_size_spec *r,
                            const struct probe_ofi_idle *idle, struct probe_measure *out,
                            struct fb_err *err);

/* Write ping-pong (both ends) or, with --op read, reads timed by the
 * initiator alone. */
enum fb_status probe_ofi_write_lat(struct probe_ofi_link *l, const struct probe_size_spec *r,
                                   int initiator, struct probe_measure *out, struct fb_err *err);
enum fb_status probe_ofi_read_lat(struct probe_ofi_link *l, const struct probe_size_spec *r,
                                  struct probe_measure *out, struct fb_err *err);

#endif
