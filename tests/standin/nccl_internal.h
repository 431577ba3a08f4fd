/* Inside the NCCL stand-in: the communicator, the calls it carries out and
 * the parts that implement them (bootstrap and mesh, the transfer engine,
 * the collectives, the debug log). */
#ifndef FBSI_NCCL_INTERNAL_H
#define FBSI_NCCL_INTERNAL_H

#include <nccl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define FBSI_HOST_MAX 64

enum call_kind { C_ALLREDUCE, C_ALLGATHER, C_REDUCESCATTER, C_BROADCAST, C_REDUCE, C_SEND, C_RECV,
                 C_ALLTOALL };

/* One NCCL call, as the caller gave it. `root` is the peer of send/recv. */
struct call {
    enum call_kind kind;
    const void *send;
    void *recv;
    size_t count;
    ncclDataType_t dt;
    ncclRedOp_t op;
    int root;
    /* PreMulSum (ncclRedOpCreatePreMulSum): this rank's input times
     * `scalar`, then summed; op is then ncclSum. */
    int premul;
    double scalar;
};

/* The calls of one ncclGroupStart/End (or a lone call): carried out
 * together, in order, by the stream's worker, or by a stalled rank's
 * worker on its behalf (FB_STANDIN_HANG_RANK). */
struct task {
    struct ncclComm *comm;
    struct call *calls;
    size_t n;
    int graph;   /* captured into a CUDA graph: replayed, kept with the comm */
    int claimed; /* executed (or being), under the comm's state lock */
    struct task *next;
};

struct peer_info {
    char host[FBSI_HOST_MAX];
    int cuda_dev;
    int64_t bus_id;
};

/* What the FB_STANDIN_* knobs ask of this rank (docs/standin.md). */
struct faults {
    int corrupt;    /* FB_STANDIN_CORRUPT_RANK is this rank */
    size_t corrupt_elems; /* FB_STANDIN_CORRUPT_ELEMS: how many elements of each call */
    int hang;       /* FB_STANDIN_HANG_RANK is this rank */
    int fail_async; /* FB_STANDIN_FAIL=async on this rank */
    long after;     /* FB_STANDIN_AFTER: the operation the fault starts at */
};

/* What the caller asked of NCCL, counted for the `standin: rank R: entry
 * points ...` line at destroy (nccl_stats.c, docs/standin.md). */
enum entry_point { E_ALLREDUCE, E_ALLGATHER, E_REDUCESCATTER, E_BROADCAST, E_REDUCE, E_ALLTOALL, E_GATHER,
                   E_SCATTER, E_SEND, E_RECV, E_COUNT };
#define FBSI_ADDR_SLOTS 1024
struct stats {
    pthread_mutex_t lock;
    long entry[E_COUNT];
    long calls, on_mem_alloc; /* calls, and those whose buffers all came from ncclMemAlloc */
    long fused;               /* tasks carried out that held more than one call */
    const void *addr[FBSI_ADDR_SLOTS]; /* distinct buffer addresses (open addressing) */
    int naddr;
    atomic_int finalized;   /* ncclCommFinalize was called */
    atomic_long late_dereg; /* deregistrations after it */
};

struct ncclComm {
    int rank, nranks, cuda_dev;
    int64_t bus_id;
    uint64_t id;            /* shared by every rank of the communicator */
    int *fd;                /* a TCP connection per peer; -1 for this rank */
    struct peer_info *peers;
    uint64_t *send_seq, *recv_seq;
    struct faults faults;
    long tasks_run;

    pthread_mutex_t exec; /* one task at a time on the connections */
    char *scratch;        /* exec: receive space of the reductions */
    size_t scratch_size;

    pthread_mutex_t state; /* guards what follows */
    pthread_cond_t cond;
    struct task *pending;   /* enqueued, not yet finished, in order */
    struct task *graph_tasks;
    int running;            /* graph replays under way */
    long replayed;          /* tasks run from CUDA graphs */
    char last_error[512];
    atomic_int async_error; /* ncclResult_t */
    atomic_int aborted;
    int init_failed;        /* a deferred (grouped) init that did not complete */

    /* What the caller asked of NCCL, said at destroy (docs/standin.md). */
    int cta_policy;          /* ncclConfig_t CTAPolicy, -1 when not set */
    int init_group;          /* inits in the group this one completed in (1: alone) */
    atomic_int registered;   /* ncclCommRegister buffers */
    atomic_int windows;      /* ncclCommWindowRegister windows with NCCL_WIN_COLL_SYMMETRIC */
    atomic_long null_stream; /* calls enqueued on the NULL stream */
    struct stats stats;

    /* config.blocking = 0: calls return ncclInProgress and are enqueued
     * later by a thread of their own (`busy` until then, when the next
     * call is refused, as NCCL refuses it); `deferred` such threads are
     * still running, which destroy waits for (under `state`). */
    int nonblocking;
    atomic_int busy;
    int deferred;
};

/* nccl_mem.c: the version this stand-in says it is (FB_STANDIN_NCCL_VERSION,
 * default the header's), and whether memory came from ncclMemAlloc. */
int fbsi_version(void);
int fbsi_from_mem_alloc(const void *p, size_t n);
ncclResult_t fbsi_needs_version(struct ncclComm *c, const char *api, int major, int minor);

/* nccl_debug.c: NCCL_DEBUG, NCCL_DEBUG_FILE (%h, %p) as NCCL reads them. */
void fbsi_info(int dev, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fbsi_warn(int dev, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fbsi_short_host(char *buf, size_t len);

/* nccl.c: the reason the next ncclGetLastError gives (and a WARN line). */
void fbsi_set_error(struct ncclComm *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *fbsi_call_name(enum call_kind k);

/* nccl_net.c: sockets and the transfer engine. A plan is the set of
 * transfers of one step, run together until all are done. */
int fbsi_local_addrs(uint32_t *out, int max);
int fbsi_iface_of(uint32_t addr, char *name, size_t len);
int fbsi_listen(uint16_t *port);
int fbsi_connect(uint32_t addr, uint16_t port);
int fbsi_accept(int lfd, uint32_t *peer_addr);
int fbsi_send_all(int fd, const void *p, size_t n);
int fbsi_recv_all(int fd, void *p, size_t n);
void fbsi_socket_ready(int fd);

struct xfer;
struct plan {
    struct ncclComm *c;
    struct xfer *x;
    size_t n, cap;
};
void fbsi_plan_init(struct plan *p, struct ncclComm *c);
int fbsi_plan_add(struct plan *p, int peer, int send, enum call_kind kind, const void *buf, size_t len);
ncclResult_t fbsi_plan_run(struct plan *p);
void fbsi_plan_free(struct plan *p);

/* nccl_boot.c: the unique id, the bootstrap through rank 0, the mesh. */
ncclResult_t fbsi_unique_id(ncclUniqueId *id);
ncclResult_t fbsi_bootstrap(struct ncclComm *c, const ncclUniqueId *id, int fail_init);

/* A rank of a communicator being split off: where it listens. */
struct fbsi_member {
    uint32_t addr;
    uint16_t port;
    struct peer_info info;
};
ncclResult_t fbsi_split_mesh(struct ncclComm *c, int lfd, const struct fbsi_member *m);

/* nccl_coll.c: element types and the collectives over a plan. */
size_t fbsi_type_size(ncclDataType_t t);
ncclResult_t fbsi_run_collective(struct ncclComm *c, const struct call *k);
ncclResult_t fbsi_run_p2p(struct ncclComm *c, const struct call *k, size_t n);
void fbsi_corrupt(const struct ncclComm *c, const struct call *k);
float fbsi_bf16_load(uint16_t h);
uint16_t fbsi_bf16_store(float f);

/* nccl_stats.c: the counts said at destroy. */
void fbsi_stats_init(struct stats *s);
void fbsi_stats_free(struct stats *s);
void fbsi_stats_entry(struct ncclComm *c, enum entry_point e);
void fbsi_stats_call(struct ncclComm *c, const struct call *k, size_t send_bytes, size_t recv_bytes);
void fbsi_stats_log(struct ncclComm *c);

/* nccl_redop.c: elements of any type as doubles (the 8-bit floats too),
 * and the PreMulSum operators of each communicator. */
double fbsi_elem_load(ncclDataType_t t, const void *buf, size_t i);
void fbsi_elem_store(ncclDataType_t t, void *buf, size_t i, double v);
int fbsi_premulsum_scalar(const struct ncclComm *c, ncclRedOp_t op, double *scalar);
ncclResult_t fbsi_run_premulsum(struct ncclComm *c, const struct call *k);

#endif
