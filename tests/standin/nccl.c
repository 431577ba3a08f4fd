/* NCCL stand-in, the API: communicators whose ranks are processes joined by
 * TCP (nccl_boot.c, nccl_net.c), calls that are enqueued on a CUDA stream
 * (the CUDA stand-in's: cudaLaunchHostFunc) and carried out there, so they
 * complete asynchronously as on a GPU, and the faults the FB_STANDIN_*
 * knobs ask for (docs/standin.md). */
#include <arpa/inet.h>
#include <cuda_runtime.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "nccl_internal.h"

#define DEFAULT_AFTER 100

/* The process's last error (ncclGetLastError without a communicator) and
 * the aborted communicators, kept so that a thread still holding one gets
 * ncclInvalidUsage rather than freed memory. */
static pthread_mutex_t lib_lock = PTHREAD_MUTEX_INITIALIZER;
static char lib_error[512];
static struct ncclComm *aborted_comms[64];
static size_t n_aborted;

/* The calling thread's open group (ncclGroupStart .. ncclGroupEnd). */
struct group_part {
    struct ncclComm *comm;
    cudaStream_t stream;
    struct call *calls;
    size_t n, cap;
};
static _Thread_local int group_depth;
static _Thread_local struct group_part *group;
static _Thread_local size_t group_n, group_cap;

const char *fbsi_call_name(enum call_kind k)
{
    static const char *const names[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce",
                                        "Send", "Recv", "AllToAll"};
    return (unsigned)k < sizeof names / sizeof *names ? names[k] : "?";
}

void fbsi_set_error(struct ncclComm *c, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&lib_lock);
    snprintf(lib_error, sizeof lib_error, "%s", text);
    pthread_mutex_unlock(&lib_lock);
    if (c != NULL) {
        pthread_mutex_lock(&c->state);
        snprintf(c->last_error, sizeof c->last_error, "%s", text);
        pthread_mutex_unlock(&c->state);
    }
    fbsi_warn(c ? c->cuda_dev : 0, "%s", text);
}

const char *ncclGetErrorString(ncclResult_t result)
{
    static const char *const texts[] = {
        [ncclSuccess] = "no error",
        [ncclUnhandledCudaError] = "unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
        [ncclSystemError] = "unhandled system error (run with NCCL_DEBUG=INFO for details)",
        [ncclInternalError] = "internal error - please report this issue to the NCCL developers",
        [ncclInvalidArgument] = "invalid argument (run with NCCL_DEBUG=WARN for details)",
        [ncclInvalidUsage] = "invalid usage (run with NCCL_DEBUG=WARN for details)",
        [ncclRemoteError] = "remote process exited or there was a network error",
        [ncclInProgress] = "NCCL operation in progress",
    };
    return (unsigned)result < sizeof texts / sizeof *texts ? texts[result] : "unknown result code";
}

const char *ncclGetLastError(ncclComm_t comm)
{
    if (comm != NULL && comm->last_error[0] != '\0')
        return comm->last_error;
    return lib_error;
}

ncclResult_t ncclGetVersion(int *version)
{
    if (version == NULL)
        return ncclInvalidArgument;
    *version = fbsi_version();
    return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId)
{
    if (uniqueId == NULL)
        return ncclInvalidArgument;
    if (strcmp(fbsi_env_str("FB_STANDIN_FAIL", ""), "id") == 0) {
        fbsi_set_error(NULL, "ncclGetUniqueId: failure injected (FB_STANDIN_FAIL=id)");
        return ncclSystemError;
    }
    return fbsi_unique_id(uniqueId);
}

/* --- communicators -------------------------------------------------------- */

static void read_faults(struct ncclComm *c, int *fail_init)
{
    const char *fail = fbsi_env_str("FB_STANDIN_FAIL", "");
    int fail_rank = (int)fbsi_env_long("FB_STANDIN_FAIL_RANK", c->nranks - 1);
    c->faults.corrupt = fbsi_env_long("FB_STANDIN_CORRUPT_RANK", -1) == c->rank;
    long elems = fbsi_env_long("FB_STANDIN_CORRUPT_ELEMS", 1);
    c->faults.corrupt_elems = elems < 1 ? 1 : (size_t)elems;
    c->faults.hang = fbsi_env_long("FB_STANDIN_HANG_RANK", -1) == c->rank;
    c->faults.fail_async = strcmp(fail, "async") == 0 && fail_rank == c->rank;
    c->faults.after = fbsi_env_long("FB_STANDIN_AFTER", DEFAULT_AFTER);
    *fail_init = strcmp(fail, "init") == 0 && fail_rank == c->rank;
}

static struct ncclComm *comm_new(int nranks, int rank, int dev)
{
    struct ncclComm *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->nranks = nranks;
    c->rank = rank;
    c->cuda_dev = dev;
    c->fd = malloc((size_t)nranks * sizeof *c->fd);
    c->peers = calloc((size_t)nranks, sizeof *c->peers);
    c->send_seq = calloc((size_t)nranks, sizeof *c->send_seq);
    c->recv_seq = calloc((size_t)nranks, sizeof *c->recv_seq);
    if (!c->fd || !c->peers || !c->send_seq || !c->recv_seq) {
        free(c->fd), free(c->peers), free(c->send_seq), free(c->recv_seq), free(c);
        return NULL;
    }
    for (int i = 0; i < nranks; i++)
        c->fd[i] = -1;
    pthread_mutex_init(&c->exec, NULL);
    pthread_mutex_init(&c->state, NULL);
    pthread_cond_init(&c->cond, NULL);
    atomic_init(&c->async_error, ncclSuccess);
    atomic_init(&c->aborted, 0);
    c->cta_policy = -1;
    c->init_group = 1;
    atomic_init(&c->registered, 0);
    atomic_init(&c->windows, 0);
    atomic_init(&c->null_stream, 0);
    fbsi_stats_init(&c->stats);
    char bus[32] = "";
    cudaDeviceGetPCIBusId(bus, (int)sizeof bus, dev);
    char hex[32];
    size_t n = 0;
    /* NCCL's busId: the hex digits of the PCI address, 0000:18:00.0 -> 18000. */
    for (const char *p = bus; *p && n + 1 < sizeof hex; p++)
        if (*p != ':' && *p != '.')
            hex[n++] = *p;
    hex[n] = '\0';
    c->bus_id = strtoll(hex, NULL, 16);
    return c;
}

static void comm_free(struct ncclComm *c)
{
    for (int i = 0; i < c->nranks; i++)
        if (c->fd[i] >= 0)
            close(c->fd[i]);
    for (struct task *t = c->graph_tasks, *next; t; t = next) {
        next = t->next;
        free(t->calls);
        free(t);
    }
    pthread_mutex_destroy(&c->exec);
    pthread_mutex_destroy(&c->state);
    pthread_cond_destroy(&c->cond);
    fbsi_stats_free(&c->stats);
    free(c->scratch);
    free(c->fd), free(c->peers), free(c->send_seq), free(c->recv_seq);
    free(c);
}

/* The peers see a closed connection: an error here becomes theirs. */
static void cut_connections(struct ncclComm *c)
{
    for (int i = 0; i < c->nranks; i++)
        if (c->fd[i] >= 0)
            shutdown(c->fd[i], SHUT_RDWR);
}

static const char *net_name(void)
{
    return fbsi_env_str("FB_STANDIN_NET", "Socket");
}

/* How NCCL names the network in "Using network" and in channel lines. */
static const char *net_label(const char *net)
{
    return strcasecmp(net, "OFI") == 0 ? "AWS Libfabric" : net;
}

static void log_channels(const struct ncclComm *c, const char *net, const char *gdr)
{
    int me = c->rank, next = (me + 1) % c->nranks, prev = (me + c->nranks - 1) % c->nranks;
    const struct peer_info *p = c->peers;
    for (int ch = 0; ch < 2 && c->nranks > 1; ch++) {
        if (strcmp(p[prev].host, p[me].host) != 0)
            fbsi_info(c->cuda_dev, "Channel %02d/0 : %d[%d] -> %d[%d] [receive] via NET/%s/%d%s", ch, prev,
                      p[prev].cuda_dev, me, c->cuda_dev, net_label(net), c->cuda_dev, gdr);
        if (strcmp(p[next].host, p[me].host) != 0)
            fbsi_info(c->cuda_dev, "Channel %02d/0 : %d[%d] -> %d[%d] [send] via NET/%s/%d%s", ch, me,
                      c->cuda_dev, next, p[next].cuda_dev, net_label(net), c->cuda_dev, gdr);
        else
            fbsi_info(c->cuda_dev, "Channel %02d/0 : %d[%d] -> %d[%d] via P2P/CUMEM/read", ch, me, c->cuda_dev,
                      next, p[next].cuda_dev);
    }
}

/* The interface and address this rank's connections leave from. */
static void local_iface(const struct ncclComm *c, char *name, size_t nlen, char *ip, size_t iplen)
{
    uint32_t addr = 0;
    for (int i = 0; i < c->nranks && addr == 0; i++) {
        struct sockaddr_in a;
        socklen_t len = sizeof a;
        if (c->fd[i] >= 0 && getsockname(c->fd[i], (struct sockaddr *)&a, &len) == 0)
            addr = a.sin_addr.s_addr;
    }
    if (addr == 0)
        fbsi_local_addrs(&addr, 1);
    if (!fbsi_iface_of(addr, name, nlen))
        snprintf(name, nlen, "lo");
    inet_ntop(AF_INET, &addr, ip, (socklen_t)iplen);
}

/* The INFO lines NCCL prints at init, those fabric-coll's --nccl-log reads. */
static void log_init(const struct ncclComm *c)
{
    const char *net = net_name();
    int dev = c->cuda_dev;
    const char *gdr = fbsi_env_long("FB_STANDIN_GDR", 1) && strcasecmp(net, "Socket") != 0 ? "/GDRDMA" : "";
    char ifname[64], ip[64];
    local_iface(c, ifname, sizeof ifname, ip, sizeof ip);
    int v = fbsi_version();
    if (c->rank == 0)
        fbsi_info(dev, "NCCL version %d.%d.%d+cuda%d.%d", v / 10000, v / 100 % 100, v % 100, CUDART_VERSION / 1000,
                  CUDART_VERSION % 1000 / 10);
    fbsi_info(dev, "standin: fabric-bench stand-in for NCCL (tests/standin): TCP between ranks, network shown as %s",
              net);
    fbsi_info(dev, "Bootstrap: Using %s:%s<0>", ifname, ip);
    if (strcasecmp(net, "Socket") == 0)
        fbsi_info(dev, "NET/Socket : Using [0]%s:%s<0>", ifname, ip);
    else if (strcasecmp(net, "IB") == 0)
        fbsi_info(dev, "NET/IB : Using [0]mlx5_%d:1/IB [RO]; OOB %s:%s<0>", dev, ifname, ip);
    else if (strcasecmp(net, "OFI") == 0)
        fbsi_info(dev, "NET/OFI Selected Provider is efa, fabric is efa-direct (found 1 nics)");
    else
        fbsi_info(dev, "NET/%s : Using [0]%s:%s<0>", net, ifname, ip);
    fbsi_info(dev, "Using network %s", net_label(net));
    fbsi_info(dev, "comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %llx commId 0x%llx - Init START",
              (const void *)c, c->rank, c->nranks, dev, dev, (unsigned long long)c->bus_id,
              (unsigned long long)c->id);
    log_channels(c, net, gdr);
    fbsi_info(dev, "Connected all rings");
    fbsi_info(dev, "comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %llx commId 0x%llx - Init COMPLETE",
              (const void *)c, c->rank, c->nranks, dev, dev, (unsigned long long)c->bus_id,
              (unsigned long long)c->id);
}

static void log_end(const struct ncclComm *c, const char *what)
{
    fbsi_info(c->cuda_dev, "comm %p rank %d nranks %d cudaDev %d busId %llx - %s COMPLETE", (const void *)c,
              c->rank, c->nranks, c->cuda_dev, (unsigned long long)c->bus_id, what);
}

/* Inits inside ncclGroupStart/End wait for ncclGroupEnd, which runs them
 * together: one process's several ranks (a thread each) must all be
 * joining for any of them to complete. */
struct pending_init {
    struct ncclComm *c;
    ncclUniqueId id;
    int fail_init;
    ncclResult_t r;
    pthread_t tid;
    int started;
};
static _Thread_local struct pending_init *inits;
static _Thread_local size_t inits_n, inits_cap;

static ncclResult_t join_comm(struct ncclComm *c, const ncclUniqueId *id, int fail_init)
{
    ncclResult_t r = fbsi_bootstrap(c, id, fail_init);
    if (r == ncclSuccess)
        log_init(c);
    return r;
}

static void *pending_main(void *arg)
{
    struct pending_init *p = arg;
    p->r = join_comm(p->c, &p->id, p->fail_init);
    return NULL;
}

/* A grouped init that failed leaves its handle to the caller (as NCCL
 * does), marked so that destroying it says nothing. */
static ncclResult_t run_pending_inits(void)
{
    ncclResult_t r = ncclSuccess;
    for (size_t i = 0; i < inits_n; i++) {
        inits[i].c->init_group = (int)inits_n;
        inits[i].started = inits_n > 1 && pthread_create(&inits[i].tid, NULL, pending_main, &inits[i]) == 0;
    }
    for (size_t i = 0; i < inits_n; i++) {
        if (inits[i].started)
            pthread_join(inits[i].tid, NULL);
        else
            pending_main(&inits[i]);
        if (inits[i].r != ncclSuccess) {
            inits[i].c->init_failed = 1;
            atomic_store(&inits[i].c->async_error, inits[i].r);
            if (r == ncclSuccess)
                r = inits[i].r;
        }
    }
    free(inits);
    inits = NULL;
    inits_n = inits_cap = 0;
    return r;
}

static ncclResult_t defer_init(struct ncclComm *c, const ncclUniqueId *id, int fail_init);

static ncclResult_t init_rank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank, const ncclConfig_t *config)
{
    int dev = 0;
    if (comm == NULL || nranks < 1 || rank < 0 || rank >= nranks) {
        fbsi_set_error(NULL, "ncclCommInitRank: rank %d of %d ranks is not a rank", rank, nranks);
        return ncclInvalidArgument;
    }
    *comm = NULL;
    if (cudaGetDevice(&dev) != cudaSuccess) {
        fbsi_set_error(NULL, "ncclCommInitRank: no CUDA device (cudaGetDevice failed)");
        return ncclUnhandledCudaError;
    }
    struct ncclComm *c = comm_new(nranks, rank, dev);
    if (c == NULL)
        return ncclSystemError;
    /* A library older than the field reads only what it knows. */
    if (config != NULL && config->CTAPolicy != NCCL_CONFIG_UNDEF_INT && fbsi_version() >= NCCL_VERSION(2, 27, 0))
        c->cta_policy = config->CTAPolicy;
    c->nonblocking = config != NULL && config->blocking == 0;
    int fail_init = 0;
    read_faults(c, &fail_init);
    if (fail_init)
        fbsi_set_error(c, "rank %d: initialisation failure injected (FB_STANDIN_FAIL=init)", rank);
    if (c->nonblocking && group_depth == 0) {
        *comm = c;
        return defer_init(c, &commId, fail_init);
    }
    if (group_depth > 0) {
        struct pending_init *p = fbsi_grow(inits, &inits_cap, inits_n, sizeof *p);
        if (p == NULL) {
            comm_free(c);
            return ncclSystemError;
        }
        inits = p;
        inits[inits_n++] = (struct pending_init){.c = c, .id = commId, .fail_init = fail_init};
        *comm = c;
        return ncclSuccess;
    }
    ncclResult_t r = join_comm(c, &commId, fail_init);
    if (r != ncclSuccess) {
        comm_free(c);
        return r;
    }
    *comm = c;
    return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
    return init_rank(comm, nranks, commId, rank, NULL);
}

/* config.blocking = 0 outside a group: ncclInProgress, the init going on
 * in a thread until ncclCommGetAsyncError says how it ended. Inside a
 * group the inits complete at ncclGroupEnd, blocking. */
ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t *config)
{
    return init_rank(comm, nranks, commId, rank, config);
}

/* One process, ndev ranks: a fresh id and one group of inits. */
ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist)
{
    if (comm == NULL || ndev < 1) {
        fbsi_set_error(NULL, "ncclCommInitAll: %d devices", ndev);
        return ncclInvalidArgument;
    }
    ncclUniqueId id;
    ncclResult_t r = ncclGetUniqueId(&id);
    int prev = 0;
    cudaGetDevice(&prev);
    if (r == ncclSuccess)
        r = ncclGroupStart();
    for (int i = 0; i < ndev && r == ncclSuccess; i++) {
        if (cudaSetDevice(devlist ? devlist[i] : i) != cudaSuccess) {
            fbsi_set_error(NULL, "ncclCommInitAll: device %d is not a device", devlist ? devlist[i] : i);
            r = ncclInvalidArgument;
        } else {
            r = ncclCommInitRank(&comm[i], ndev, id, i);
        }
    }
    ncclResult_t end = ncclGroupEnd();
    cudaSetDevice(prev);
    return r != ncclSuccess ? r : end;
}

/* A non-blocking communicator's operations still being handed on. */
static void wait_deferred(struct ncclComm *c)
{
    pthread_mutex_lock(&c->state);
    while (c->deferred > 0)
        pthread_cond_wait(&c->cond, &c->state);
    pthread_mutex_unlock(&c->state);
}

static int idle(const struct ncclComm *c)
{
    return c->pending == NULL && c->running == 0;
}

/* Waits until every enqueued call has been carried out. */
static void wait_idle(struct ncclComm *c)
{
    pthread_mutex_lock(&c->state);
    while (!idle(c) && !atomic_load(&c->aborted))
        pthread_cond_wait(&c->cond, &c->state);
    pthread_mutex_unlock(&c->state);
}

static ncclResult_t defer_finalize(struct ncclComm *c);
static ncclResult_t ready_for_call(struct ncclComm *c, const char *api);

ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
    if (comm == NULL)
        return ncclInvalidArgument;
    ncclResult_t r = ready_for_call(comm, "ncclCommFinalize");
    if (r != ncclSuccess)
        return r;
    atomic_store(&comm->stats.finalized, 1);
    if (comm->nonblocking)
        return defer_finalize(comm);
    wait_idle(comm);
    return atomic_load(&comm->async_error);
}

struct split_info {
    int32_t color, key;
    uint16_t port, pad;
};

/* Every rank's colour, key and listening port: an all_gather over the
 * parent's connections. The parent is idle (every rank splits at the same
 * point of its program), so this is the next thing on every wire. */
static ncclResult_t split_exchange(struct ncclComm *c, struct split_info *all)
{
    struct call k = {C_ALLGATHER, &all[c->rank], all, sizeof *all, ncclUint8, ncclSum, 0, 0, 0};
    pthread_mutex_lock(&c->exec);
    ncclResult_t r = fbsi_run_collective(c, &k);
    pthread_mutex_unlock(&c->exec);
    return r;
}

/* The parent ranks of one colour, by key then parent rank: the new ranks. */
static int members(const struct split_info *all, int n, int color, int *old)
{
    int k = 0;
    for (int q = 0; q < n; q++) {
        if (all[q].color != color)
            continue;
        int at = k++;
        while (at > 0 && all[old[at - 1]].key > all[q].key) {
            old[at] = old[at - 1];
            at--;
        }
        old[at] = q;
    }
    return k;
}

static uint32_t peer_addr(const struct ncclComm *c, int q)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    if (c->fd[q] < 0 || getpeername(c->fd[q], (struct sockaddr *)&a, &len) != 0)
        return 0;
    return a.sin_addr.s_addr;
}

static ncclResult_t split_build(struct ncclComm *parent, const struct split_info *all, int color, int lfd,
                                ncclComm_t *newcomm)
{
    int *old = malloc((size_t)parent->nranks * sizeof *old);
    struct fbsi_member *m = calloc((size_t)parent->nranks, sizeof *m);
    struct ncclComm *c = NULL;
    ncclResult_t r = ncclSystemError;
    int n = old && m ? members(all, parent->nranks, color, old) : 0, me = 0;
    for (int i = 0; i < n; i++) {
        me = old[i] == parent->rank ? i : me;
        m[i] = (struct fbsi_member){.addr = peer_addr(parent, old[i]), .port = all[old[i]].port,
                                    .info = parent->peers[old[i]]};
    }
    if (n > 0 && (c = comm_new(n, me, parent->cuda_dev)) != NULL) {
        int unused = 0;
        c->id = parent->id * 1099511628211ULL + (uint32_t)color;
        read_faults(c, &unused);
        r = fbsi_split_mesh(c, lfd, m);
    }
    if (r == ncclSuccess) {
        log_init(c);
        *newcomm = c;
    } else if (c != NULL) {
        comm_free(c);
    }
    free(old);
    free(m);
    return r;
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config)
{
    (void)config;
    if (comm == NULL || newcomm == NULL || (color < 0 && color != NCCL_SPLIT_NOCOLOR))
        return ncclInvalidArgument;
    *newcomm = NULL;
    if (atomic_load(&comm->aborted))
        return ncclInvalidUsage;
    wait_idle(comm);
    ncclResult_t r = (ncclResult_t)atomic_load(&comm->async_error);
    if (r != ncclSuccess)
        return r;
    struct split_info *all = calloc((size_t)comm->nranks, sizeof *all);
    if (all == NULL)
        return ncclSystemError;
    uint16_t port = 0;
    int lfd = color == NCCL_SPLIT_NOCOLOR ? -1 : fbsi_listen(&port);
    all[comm->rank] = (struct split_info){.color = color, .key = key, .port = port};
    r = split_exchange(comm, all);
    if (r == ncclSuccess && color != NCCL_SPLIT_NOCOLOR)
        r = lfd < 0 ? ncclSystemError : split_build(comm, all, color, lfd, newcomm);
    if (r != ncclSuccess)
        fbsi_set_error(comm, "ncclCommSplit on rank %d failed: %s", comm->rank, ncclGetErrorString(r));
    if (lfd >= 0)
        close(lfd);
    free(all);
    return r;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    if (comm == NULL)
        return ncclInvalidArgument;
    if (atomic_load(&comm->aborted))
        return ncclInvalidUsage;
    wait_deferred(comm);
    wait_idle(comm);
    if (comm->init_failed) {
        comm_free(comm);
        return ncclSuccess;
    }
    /* For tests: what the caller asked of NCCL reached it, and graph
     * launches really carried the captured calls. */
    char cta[16] = "unset";
    if (comm->cta_policy >= 0)
        snprintf(cta, sizeof cta, "%d", comm->cta_policy);
    fbsi_info(comm->cuda_dev,
              "standin: rank %d: set up in a group of %d, CTA policy %s, %d buffers registered, %d symmetric windows, "
              "%ld calls on the NULL stream",
              comm->rank, comm->init_group, cta, atomic_load(&comm->registered), atomic_load(&comm->windows),
              atomic_load(&comm->null_stream));
    fbsi_info(comm->cuda_dev, "standin: %ld calls carried out, %ld of them replayed from CUDA graphs",
              comm->tasks_run, comm->replayed);
    fbsi_stats_log(comm);
    log_end(comm, "Destroy");
    comm_free(comm);
    return ncclSuccess;
}

/* Safe from another thread while calls hang: work in flight is cut off
 * and skipped; the memory stays (see aborted_comms). */
ncclResult_t ncclCommAbort(ncclComm_t comm)
{
    if (comm == NULL)
        return ncclInvalidArgument;
    if (atomic_exchange(&comm->aborted, 1))
        return ncclSuccess;
    cut_connections(comm);
    pthread_mutex_lock(&comm->state);
    pthread_cond_broadcast(&comm->cond);
    pthread_mutex_unlock(&comm->state);
    pthread_mutex_lock(&lib_lock);
    if (n_aborted < sizeof aborted_comms / sizeof *aborted_comms)
        aborted_comms[n_aborted++] = comm;
    pthread_mutex_unlock(&lib_lock);
    log_end(comm, "Abort");
    return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
    if (comm == NULL || asyncError == NULL)
        return ncclInvalidArgument;
    ncclResult_t r = (ncclResult_t)atomic_load(&comm->async_error);
    if (r == ncclSuccess) {
        pthread_mutex_lock(&comm->state);
        r = comm->deferred > 0 ? ncclInProgress : ncclSuccess;
        pthread_mutex_unlock(&comm->state);
    }
    *asyncError = r;
    return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
    if (comm == NULL || count == NULL)
        return ncclInvalidArgument;
    *count = comm->nranks;
    return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device)
{
    if (comm == NULL || device == NULL)
        return ncclInvalidArgument;
    *device = comm->cuda_dev;
    return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
    if (comm == NULL || rank == NULL)
        return ncclInvalidArgument;
    *rank = comm->rank;
    return ncclSuccess;
}

/* --- carrying calls out --------------------------------------------------- */

/* An error mid-call: recorded once, and the connections are cut so the
 * peers stop too (their ncclCommGetAsyncError says ncclRemoteError). */
static void fail(struct ncclComm *c, ncclResult_t r)
{
    if (atomic_load(&c->aborted))
        return;
    int none = ncclSuccess;
    atomic_compare_exchange_strong(&c->async_error, &none, (int)r);
    cut_connections(c);
}

/* As a GPU kernel waiting on a dead peer: the stream stays busy until the
 * communicator is aborted. */
static void wait_abort(struct ncclComm *c)
{
    pthread_mutex_lock(&c->state);
    while (!atomic_load(&c->aborted))
        pthread_cond_wait(&c->cond, &c->state);
    pthread_mutex_unlock(&c->state);
}

static ncclResult_t run_calls(struct ncclComm *c, const struct task *t)
{
    ncclResult_t r = ncclSuccess;
    for (size_t i = 0; i < t->n && r == ncclSuccess;) {
        size_t j = i;
        while (j < t->n && (t->calls[j].kind == C_SEND || t->calls[j].kind == C_RECV))
            j++;
        if (j > i) {
            r = fbsi_run_p2p(c, &t->calls[i], j - i);
            i = j;
        } else {
            const struct call *k = &t->calls[i++];
            r = k->premul ? fbsi_run_premulsum(c, k) : fbsi_run_collective(c, k);
        }
    }
    for (size_t i = 0; r == ncclSuccess && c->faults.corrupt && i < t->n; i++)
        fbsi_corrupt(c, &t->calls[i]);
    return r;
}

/* Carries out one task; returns 1 when FB_STANDIN_HANG_RANK stops this
 * rank's stream here. */
static int execute(struct ncclComm *c, const struct task *t)
{
    int stall = 0, hang = 0;
    pthread_mutex_lock(&c->exec);
    long n = ++c->tasks_run;
    if (t->n > 1) {
        pthread_mutex_lock(&c->stats.lock);
        c->stats.fused++;
        pthread_mutex_unlock(&c->stats.lock);
    }
    if (atomic_load(&c->aborted)) {
        /* skipped: the communicator is gone */
    } else if (atomic_load(&c->async_error) != ncclSuccess) {
        stall = 1;
    } else if (c->faults.fail_async && n == c->faults.after) {
        fbsi_set_error(c, "rank %d: network failure injected at operation %ld (FB_STANDIN_FAIL=async)", c->rank, n);
        fail(c, ncclSystemError);
        stall = 1;
    } else {
        ncclResult_t r = run_calls(c, t);
        if (r != ncclSuccess)
            fail(c, r);
        stall = r != ncclSuccess;
        hang = r == ncclSuccess && c->faults.hang && n == c->faults.after;
    }
    pthread_mutex_unlock(&c->exec);
    if (stall)
        wait_abort(c);
    return hang;
}

static struct task *next_unclaimed(struct ncclComm *c)
{
    for (struct task *t = c->pending; t; t = t->next)
        if (!t->claimed)
            return t;
    return NULL;
}

/* FB_STANDIN_HANG_RANK: this rank's stream never completes again, but the
 * calls enqueued after still reach the other ranks (carried out here, from
 * the stuck stream's worker), so they finish theirs and this rank alone is
 * behind, which is what the watchdog must find. */
static void serve_while_hung(struct ncclComm *c)
{
    fbsi_warn(c->cuda_dev, "rank %d: stream stopped completing (FB_STANDIN_HANG_RANK)", c->rank);
    for (;;) {
        pthread_mutex_lock(&c->state);
        struct task *t = NULL;
        while (!atomic_load(&c->aborted) && (t = next_unclaimed(c)) == NULL)
            pthread_cond_wait(&c->cond, &c->state);
        if (atomic_load(&c->aborted)) {
            pthread_mutex_unlock(&c->state);
            return;
        }
        t->claimed = 1;
        pthread_mutex_unlock(&c->state);
        execute(c, t);
    }
}

static void unlink_task(struct ncclComm *c, struct task *t)
{
    for (struct task **p = &c->pending; *p; p = &(*p)->next) {
        if (*p == t) {
            *p = t->next;
            return;
        }
    }
}

/* The stream reached the task (cudaLaunchHostFunc). */
static void run_task(void *arg)
{
    struct task *t = arg;
    struct ncclComm *c = t->comm;
    pthread_mutex_lock(&c->state);
    int mine = t->graph || !t->claimed;
    if (t->graph) {
        c->running++;
        c->replayed++;
    } else
        t->claimed = 1;
    pthread_mutex_unlock(&c->state);
    if (mine && execute(c, t))
        serve_while_hung(c);
    pthread_mutex_lock(&c->state);
    if (t->graph) {
        c->running--;
    } else {
        unlink_task(c, t);
        free(t->calls);
        free(t);
    }
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->state);
}

static void append_pending(struct ncclComm *c, struct task *t)
{
    struct task **p = &c->pending;
    while (*p)
        p = &(*p)->next;
    *p = t;
}

static ncclResult_t submit(struct ncclComm *c, cudaStream_t stream, const struct call *calls, size_t n)
{
    struct task *t = calloc(1, sizeof *t);
    struct call *copy = malloc(n * sizeof *copy);
    if (t == NULL || copy == NULL) {
        free(t), free(copy);
        fbsi_set_error(c, "out of host memory");
        return ncclSystemError;
    }
    memcpy(copy, calls, n * sizeof *copy);
    *t = (struct task){.comm = c, .calls = copy, .n = n};
    /* The NULL stream is the communicator's device's, whichever device
     * the caller has current, as with NCCL. */
    int null_stream = stream == NULL || stream == cudaStreamLegacy || stream == cudaStreamPerThread, prev = 0;
    if (null_stream) {
        atomic_fetch_add(&c->null_stream, 1);
        cudaGetDevice(&prev);
        cudaSetDevice(c->cuda_dev);
    }
    enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    cudaStreamIsCapturing(stream, &cap);
    int graph = t->graph = cap == cudaStreamCaptureStatusActive;
    pthread_mutex_lock(&c->state);
    if (graph) {
        t->next = c->graph_tasks;
        c->graph_tasks = t;
    } else {
        append_pending(c, t);
    }
    pthread_mutex_unlock(&c->state);
    /* From here the stream's worker may run (and free) the task. */
    cudaError_t e = cudaLaunchHostFunc(stream, run_task, t);
    if (null_stream)
        cudaSetDevice(prev);
    pthread_mutex_lock(&c->state);
    if (e != cudaSuccess && !graph)
        unlink_task(c, t);
    pthread_cond_broadcast(&c->cond); /* a hung rank's worker takes it */
    pthread_mutex_unlock(&c->state);
    if (e != cudaSuccess) {
        if (!graph)
            free(copy), free(t);
        fbsi_set_error(c, "cannot enqueue on the stream: %s", cudaGetErrorString(e));
        return ncclUnhandledCudaError;
    }
    return ncclSuccess;
}

/* --- non-blocking communicators (config.blocking = 0) ------------------------ */

/* An operation of a non-blocking communicator, handed on by a thread of
 * its own a little later (NCCL enqueues such work in the background):
 * until it has been, ncclCommGetAsyncError says ncclInProgress, the
 * stream may not have the work yet, and the next call is refused. */
enum deferred_kind { D_INIT, D_SUBMIT, D_FINALIZE };
struct deferred {
    struct ncclComm *c;
    enum deferred_kind kind;
    ncclUniqueId id; /* D_INIT */
    int fail_init;
    cudaStream_t stream; /* D_SUBMIT: the calls, owned */
    struct call *calls;
    size_t n;
};

/* Long beside the microseconds between two calls of a caller who does not
 * poll, so that one is caught every time. */
#define DEFER_NS 2000000L

static void *deferred_main(void *arg)
{
    struct deferred *d = arg;
    struct ncclComm *c = d->c;
    ncclResult_t r = ncclSuccess;
    struct timespec pause = {0, DEFER_NS};
    nanosleep(&pause, NULL);
    if (!atomic_load(&c->aborted)) {
        switch (d->kind) {
        case D_INIT:
            r = join_comm(c, &d->id, d->fail_init);
            c->init_failed = r != ncclSuccess;
            break;
        case D_SUBMIT: r = submit(c, d->stream, d->calls, d->n); break;
        case D_FINALIZE: wait_idle(c); break;
        }
    }
    int none = ncclSuccess;
    if (r != ncclSuccess)
        atomic_compare_exchange_strong(&c->async_error, &none, (int)r);
    free(d->calls);
    free(d);
    pthread_mutex_lock(&c->state);
    c->deferred--;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->state);
    return NULL;
}

/* Takes d. */
static ncclResult_t defer(struct deferred *d)
{
    struct ncclComm *c = d->c;
    pthread_attr_t attr;
    pthread_t tid;
    pthread_mutex_lock(&c->state);
    c->deferred++;
    pthread_mutex_unlock(&c->state);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int started = pthread_create(&tid, &attr, deferred_main, d) == 0;
    pthread_attr_destroy(&attr);
    if (!started) {
        deferred_main(d);
        return (ncclResult_t)atomic_load(&c->async_error);
    }
    return ncclInProgress;
}

static ncclResult_t defer_new(struct ncclComm *c, enum deferred_kind kind, struct deferred **out)
{
    *out = calloc(1, sizeof **out);
    if (*out == NULL) {
        fbsi_set_error(c, "out of host memory");
        return ncclSystemError;
    }
    **out = (struct deferred){.c = c, .kind = kind};
    return ncclSuccess;
}

static ncclResult_t defer_init(struct ncclComm *c, const ncclUniqueId *id, int fail_init)
{
    struct deferred *d;
    ncclResult_t r = defer_new(c, D_INIT, &d);
    if (r != ncclSuccess)
        return r;
    d->id = *id;
    d->fail_init = fail_init;
    return defer(d);
}

static ncclResult_t defer_finalize(struct ncclComm *c)
{
    struct deferred *d;
    ncclResult_t r = defer_new(c, D_FINALIZE, &d);
    return r != ncclSuccess ? r : defer(d);
}

/* Takes calls. */
static ncclResult_t defer_submit(struct ncclComm *c, cudaStream_t stream, struct call *calls, size_t n)
{
    struct deferred *d;
    ncclResult_t r = defer_new(c, D_SUBMIT, &d);
    if (r != ncclSuccess) {
        free(calls);
        return r;
    }
    d->stream = stream;
    d->calls = calls;
    d->n = n;
    return defer(d);
}

/* NCCL's own words for a call on a non-blocking communicator whose last
 * operation has not completed. */
static ncclResult_t ready_for_call(struct ncclComm *c, const char *api)
{
    pthread_mutex_lock(&c->state);
    int busy = c->nonblocking && c->deferred > 0;
    pthread_mutex_unlock(&c->state);
    if (!busy)
        return ncclSuccess;
    fbsi_set_error(c, "%s: Attempt to use communicator before the previous operation returned ncclSuccess", api);
    return ncclInvalidArgument;
}

/* --- groups and the calls ---------------------------------------------------- */

ncclResult_t ncclGroupStart(void)
{
    group_depth++;
    return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void)
{
    if (group_depth == 0) {
        fbsi_set_error(NULL, "ncclGroupEnd without ncclGroupStart");
        return ncclInvalidUsage;
    }
    if (--group_depth > 0)
        return ncclSuccess;
    ncclResult_t r = inits_n > 0 ? run_pending_inits() : ncclSuccess;
    int in_progress = 0;
    for (size_t i = 0; i < group_n; i++) {
        struct group_part *g = &group[i];
        if (r == ncclSuccess && g->comm->nonblocking) {
            r = defer_submit(g->comm, g->stream, g->calls, g->n);
            in_progress |= r == ncclInProgress;
            r = r == ncclInProgress ? ncclSuccess : r;
            continue;
        }
        if (r == ncclSuccess)
            r = submit(g->comm, g->stream, g->calls, g->n);
        free(g->calls);
    }
    free(group);
    group = NULL;
    group_n = group_cap = 0;
    return r == ncclSuccess && in_progress ? ncclInProgress : r;
}

static ncclResult_t group_add(struct ncclComm *c, cudaStream_t stream, const struct call *k)
{
    struct group_part *g = NULL;
    for (size_t i = 0; i < group_n && g == NULL; i++)
        if (group[i].comm == c && group[i].stream == stream)
            g = &group[i];
    if (g == NULL) {
        struct group_part *parts = fbsi_grow(group, &group_cap, group_n, sizeof *parts);
        if (parts == NULL)
            return ncclSystemError;
        group = parts;
        g = &group[group_n++];
        *g = (struct group_part){.comm = c, .stream = stream};
    }
    struct call *calls = fbsi_grow(g->calls, &g->cap, g->n, sizeof *calls);
    if (calls == NULL)
        return ncclSystemError;
    g->calls = calls;
    g->calls[g->n++] = *k;
    return ncclSuccess;
}

static int device_buffer(const void *p, size_t bytes)
{
    struct cudaPointerAttributes a;
    if (bytes == 0)
        return 1;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess || a.type != cudaMemoryTypeDevice)
        return 0;
    return cudaPointerGetAttributes(&a, (const char *)p + bytes - 1) == cudaSuccess &&
           a.type == cudaMemoryTypeDevice;
}

/* What NCCL checks before it enqueues: the error comes back from the call. */
static ncclResult_t check_call(struct ncclComm *c, const struct call *k, size_t send_elems, size_t recv_elems)
{
    const char *name = fbsi_call_name(k->kind);
    size_t esz = fbsi_type_size(k->dt);
    if (c == NULL) {
        fbsi_set_error(NULL, "%s: comm is NULL", name);
        return ncclInvalidArgument;
    }
    if (atomic_load(&c->aborted)) {
        fbsi_set_error(c, "%s: the communicator was aborted", name);
        return ncclInvalidUsage;
    }
    ncclResult_t async = (ncclResult_t)atomic_load(&c->async_error);
    if (async != ncclSuccess)
        return async;
    ncclResult_t ready = ready_for_call(c, name);
    if (ready != ncclSuccess)
        return ready;
    if (esz == 0) {
        fbsi_set_error(c, "%s: datatype %d is not carried by the stand-in", name, (int)k->dt);
        return ncclInvalidArgument;
    }
    if ((int)k->op < 0 || (int)k->op >= (int)ncclNumOps) {
        fbsi_set_error(c, "%s: reduction operation %d is not supported", name, (int)k->op);
        return ncclInvalidArgument;
    }
    if (k->root < 0 || k->root >= c->nranks) {
        fbsi_set_error(c, "%s: %s %d is not a rank of this %d-rank communicator", name,
                       k->kind == C_SEND || k->kind == C_RECV ? "peer" : "root", k->root, c->nranks);
        return ncclInvalidArgument;
    }
    if (!device_buffer(k->send, send_elems * esz) || !device_buffer(k->recv, recv_elems * esz)) {
        fbsi_set_error(c, "%s: a buffer is not device memory (%zu + %zu bytes at %p, %p)", name, send_elems * esz,
                       recv_elems * esz, k->send, (void *)k->recv);
        return ncclInvalidArgument;
    }
    return ncclSuccess;
}

/* A lone call of a non-blocking communicator: handed on later. */
static ncclResult_t submit_lone(struct ncclComm *c, cudaStream_t stream, const struct call *k)
{
    if (!c->nonblocking)
        return submit(c, stream, k, 1);
    struct call *copy = malloc(sizeof *copy);
    if (copy == NULL) {
        fbsi_set_error(c, "out of host memory");
        return ncclSystemError;
    }
    *copy = *k;
    return defer_submit(c, stream, copy, 1);
}

/* `e` names the entry point the caller called (E_COUNT: a call made
 * inside another entry point, not counted again). */
static ncclResult_t enqueue(struct ncclComm *c, cudaStream_t stream, const struct call *call, size_t send_elems,
                            size_t recv_elems, enum entry_point e)
{
    if (e != E_COUNT)
        fbsi_stats_entry(c, e);
    /* A PreMulSum operator's scalar is read now, as NCCL reads a
     * ncclScalarHostImmediate one: the operator may be destroyed next. */
    struct call premul = *call;
    const struct call *k = call;
    if ((int)call->op >= (int)ncclNumOps && c != NULL && fbsi_premulsum_scalar(c, call->op, &premul.scalar)) {
        premul.premul = 1;
        premul.op = ncclSum;
        k = &premul;
    }
    ncclResult_t r = check_call(c, k, send_elems, recv_elems);
    if (r != ncclSuccess)
        return r;
    size_t esz = fbsi_type_size(k->dt);
    fbsi_stats_call(c, k, send_elems * esz, recv_elems * esz);
    return group_depth > 0 ? group_add(c, stream, k) : submit_lone(c, stream, k);
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    struct call k = {C_ALLREDUCE, sendbuff, recvbuff, count, datatype, op, 0, 0, 0};
    return enqueue(comm, stream, &k, count, count, E_ALLREDUCE);
}

ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream)
{
    struct call k = {C_ALLGATHER, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0, 0, 0};
    return enqueue(comm, stream, &k, sendcount, comm ? sendcount * (size_t)comm->nranks : 0, E_ALLGATHER);
}

ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    struct call k = {C_REDUCESCATTER, sendbuff, recvbuff, recvcount, datatype, op, 0, 0, 0};
    return enqueue(comm, stream, &k, comm ? recvcount * (size_t)comm->nranks : 0, recvcount, E_REDUCESCATTER);
}

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream)
{
    struct call k = {C_BROADCAST, sendbuff, recvbuff, count, datatype, ncclSum, root, 0, 0};
    return enqueue(comm, stream, &k, comm && comm->rank == root ? count : 0, count, E_BROADCAST);
}

ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream)
{
    return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream)
{
    struct call k = {C_REDUCE, sendbuff, recvbuff, count, datatype, op, root, 0, 0};
    return enqueue(comm, stream, &k, count, comm && comm->rank == root ? count : 0, E_REDUCE);
}

ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                          ncclComm_t comm, cudaStream_t stream)
{
    struct call k = {C_ALLTOALL, sendbuff, recvbuff, count, datatype, ncclSum, 0, 0, 0};
    size_t all = comm ? count * (size_t)comm->nranks : 0;
    return enqueue(comm, stream, &k, all, all, E_ALLTOALL);
}

static ncclResult_t send_to(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                           cudaStream_t stream, enum entry_point e)
{
    struct call k = {C_SEND, sendbuff, NULL, count, datatype, ncclSum, peer, 0, 0};
    return enqueue(comm, stream, &k, count, 0, e);
}

static ncclResult_t recv_from(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                              cudaStream_t stream, enum entry_point e)
{
    struct call k = {C_RECV, NULL, recvbuff, count, datatype, ncclSum, peer, 0, 0};
    return enqueue(comm, stream, &k, 0, count, e);
}

ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream)
{
    return send_to(sendbuff, count, datatype, peer, comm, stream, E_SEND);
}

ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream)
{
    return recv_from(recvbuff, count, datatype, peer, comm, stream, E_RECV);
}

/* NCCL 2.28's rooted calls, made of the point-to-point calls above in one
 * group (so each goes through the same checks and transfers): every rank
 * sends its block to the root, which receives block i from rank i
 * (gather), or the root sends block i to rank i (scatter). */
static ncclResult_t rooted(enum entry_point e, int to_root, const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
    ncclResult_t r = fbsi_needs_version(comm, e == E_GATHER ? "ncclGather" : "ncclScatter", 2, 28);
    if (r != ncclSuccess || comm == NULL)
        return r != ncclSuccess ? r : ncclInvalidArgument;
    fbsi_stats_entry(comm, e);
    size_t block = count * fbsi_type_size(datatype);
    r = ncclGroupStart();
    if (to_root && r == ncclSuccess)
        r = send_to(sendbuff, count, datatype, root, comm, stream, E_COUNT);
    for (int i = 0; comm->rank == root && i < comm->nranks && r == ncclSuccess; i++)
        r = to_root ? recv_from((char *)recvbuff + (size_t)i * block, count, datatype, i, comm, stream, E_COUNT)
                    : send_to((const char *)sendbuff + (size_t)i * block, count, datatype, i, comm, stream, E_COUNT);
    if (!to_root && r == ncclSuccess)
        r = recv_from(recvbuff, count, datatype, root, comm, stream, E_COUNT);
    ncclResult_t end = ncclGroupEnd();
    return r != ncclSuccess ? r : end;
}

ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                        ncclComm_t comm, cudaStream_t stream)
{
    return rooted(E_GATHER, 1, sendbuff, recvbuff, count, datatype, root, comm, stream);
}

ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                         ncclComm_t comm, cudaStream_t stream)
{
    return rooted(E_SCATTER, 0, sendbuff, recvbuff, count, datatype, root, comm, stream);
}
