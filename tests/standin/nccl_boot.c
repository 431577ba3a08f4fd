/* NCCL stand-in, set-up: the unique id carries rank 0's addresses and the
 * port it listens on; every rank connects to rank 0, which checks that all
 * belong to the same communicator and hands out the table of ranks; then
 * each pair of other ranks connects directly (the lower listens).
 *
 * With NCCL_COMM_ID=HOST:PORT set, as in NCCL, ncclGetUniqueId only
 * encodes that address (every process makes the same id) and rank 0
 * creates the root there inside ncclCommInitRank: a port already taken or
 * an address that is not rank 0's fails there, at once. The other ranks
 * try to connect until rank 0 answers, and rank 0 waits for every rank:
 * neither wait is bounded, as in NCCL. */
#include <netdb.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "nccl_internal.h"

#define ID_MAGIC 0x46424944u /* "FBID" */
#define HELLO_MAGIC 0x4642484cu
#define MAX_ADDRS 28
#define CONNECT_TRIES 150 /* 0.2 s apart: rank 0 may still be starting */

struct unique_id {
    uint32_t magic;
    uint8_t naddr, from_env; /* from_env: NCCL_COMM_ID's address, no root yet */
    uint16_t port;
    uint64_t nonce;
    uint32_t addr[MAX_ADDRS];
};
_Static_assert(sizeof(struct unique_id) <= sizeof(ncclUniqueId), "the id fits NCCL's 128 bytes");

struct hello {
    uint32_t magic;
    int32_t rank, nranks, status, cuda_dev;
    uint16_t port, pad;
    uint64_t nonce;
    int64_t bus_id;
    char host[FBSI_HOST_MAX];
};

struct entry {
    uint32_t addr;
    uint16_t port, pad;
    int32_t cuda_dev;
    int64_t bus_id;
    char host[FBSI_HOST_MAX];
};

struct reply {
    uint32_t magic;
    int32_t failed_rank; /* -1: every rank is in */
    char reason[256];
};

/* The listening sockets ncclGetUniqueId opened, until this process's
 * ncclCommInitRank as rank 0 takes its own. */
static pthread_mutex_t roots_lock = PTHREAD_MUTEX_INITIALIZER;
static struct root {
    uint64_t nonce;
    int fd;
    struct root *next;
} *roots;

static uint64_t fresh_nonce(void)
{
    uint64_t n = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read(fd, &n, sizeof n) != (ssize_t)sizeof n) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        n = (uint64_t)t.tv_nsec ^ ((uint64_t)t.tv_sec << 20) ^ ((uint64_t)getpid() << 40);
    }
    if (fd >= 0)
        close(fd);
    return n | 1;
}

/* NCCL_COMM_ID=HOST:PORT as an id: the same in every process. */
static ncclResult_t id_from_env(const char *env, ncclUniqueId *out)
{
    struct unique_id id = {.magic = ID_MAGIC, .naddr = 1, .from_env = 1, .nonce = 1469598103934665603ULL};
    char host[256];
    const char *colon = strrchr(env, ':');
    long port = colon ? strtol(colon + 1, NULL, 10) : 0;
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
    if (colon == NULL || (size_t)(colon - env) >= sizeof host || port < 1 || port > 65535) {
        fbsi_set_error(NULL, "NCCL_COMM_ID=%s is not <host>:<port>", env);
        return ncclInvalidArgument;
    }
    snprintf(host, sizeof host, "%.*s", (int)(colon - env), env);
    if (getaddrinfo(host, NULL, &hints, &res) != 0 || res == NULL) {
        fbsi_set_error(NULL, "NCCL_COMM_ID: cannot resolve '%s'", host);
        return ncclSystemError;
    }
    id.addr[0] = ((struct sockaddr_in *)res->ai_addr)->sin_addr.s_addr;
    id.port = (uint16_t)port;
    freeaddrinfo(res);
    for (const char *p = env; *p; p++)
        id.nonce = (id.nonce ^ (unsigned char)*p) * 1099511628211ULL;
    id.nonce |= 1;
    memset(out, 0, sizeof *out);
    memcpy(out, &id, sizeof id);
    return ncclSuccess;
}

/* Rank 0 of an id from NCCL_COMM_ID: the root at that very address. */
static int listen_at(const struct unique_id *id)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(id->port), .sin_addr.s_addr = id->addr[0]};
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one); /* as NCCL: a port in TIME_WAIT is free */
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, 256) == 0)
        return fd;
    if (fd >= 0)
        close(fd);
    return -1;
}

ncclResult_t fbsi_unique_id(ncclUniqueId *out)
{
    const char *env = getenv("NCCL_COMM_ID");
    if (env != NULL && *env != '\0')
        return id_from_env(env, out);
    struct unique_id id = {.magic = ID_MAGIC, .nonce = fresh_nonce()};
    int fd = fbsi_listen(&id.port);
    if (fd < 0) {
        fbsi_set_error(NULL, "ncclGetUniqueId: cannot open a listening socket");
        return ncclSystemError;
    }
    id.naddr = (uint8_t)fbsi_local_addrs(id.addr, MAX_ADDRS);
    struct root *r = malloc(sizeof *r);
    if (r == NULL) {
        close(fd);
        return ncclSystemError;
    }
    *r = (struct root){id.nonce, fd, NULL};
    pthread_mutex_lock(&roots_lock);
    r->next = roots;
    roots = r;
    pthread_mutex_unlock(&roots_lock);
    memset(out, 0, sizeof *out);
    memcpy(out, &id, sizeof id);
    return ncclSuccess;
}

static int take_root(uint64_t nonce)
{
    int fd = -1;
    pthread_mutex_lock(&roots_lock);
    for (struct root **p = &roots; *p; p = &(*p)->next) {
        if ((*p)->nonce == nonce) {
            struct root *r = *p;
            fd = r->fd;
            *p = r->next;
            free(r);
            break;
        }
    }
    pthread_mutex_unlock(&roots_lock);
    return fd;
}

static void fill_hello(const struct ncclComm *c, struct hello *h, uint16_t port, int status)
{
    *h = (struct hello){.magic = HELLO_MAGIC, .rank = c->rank, .nranks = c->nranks, .status = status,
                        .cuda_dev = c->cuda_dev, .port = port, .nonce = c->id, .bus_id = c->bus_id};
    fbsi_short_host(h->host, sizeof h->host);
}

static void set_peer(struct entry *table, int r, const struct hello *h, uint32_t addr)
{
    table[r] = (struct entry){.addr = addr, .port = h->port, .cuda_dev = h->cuda_dev, .bus_id = h->bus_id};
    memcpy(table[r].host, h->host, sizeof table[r].host);
    table[r].host[FBSI_HOST_MAX - 1] = '\0';
}

/* Rank 0: takes every other rank's hello, then answers each with the
 * table, or with the rank that could not join. */
static ncclResult_t gather_ranks(struct ncclComm *c, int lfd, struct entry *table, int my_status)
{
    struct reply rep = {.magic = HELLO_MAGIC, .failed_rank = my_status ? 0 : -1};
    struct hello me;
    fill_hello(c, &me, 0, my_status);
    set_peer(table, 0, &me, 0);
    for (int got = 1; got < c->nranks; got++) {
        uint32_t addr = 0;
        struct hello h;
        int fd = fbsi_accept(lfd, &addr);
        if (fd < 0 || fbsi_recv_all(fd, &h, sizeof h) != 0 || h.magic != HELLO_MAGIC || h.nonce != c->id) {
            fbsi_set_error(c, "rank 0: a connection that is not a rank of this communicator (stale id?)");
            if (fd >= 0)
                close(fd);
            got--;
            continue;
        }
        if (h.nranks != c->nranks || h.rank <= 0 || h.rank >= c->nranks || c->fd[h.rank] >= 0) {
            snprintf(rep.reason, sizeof rep.reason, "rank %d of %d ranks joined a communicator of %d", h.rank,
                     h.nranks, c->nranks);
            rep.failed_rank = h.rank;
            close(fd);
            continue;
        }
        c->fd[h.rank] = fd;
        set_peer(table, h.rank, &h, addr);
        if (h.status != 0 && rep.failed_rank < 0)
            rep.failed_rank = h.rank;
    }
    if (rep.failed_rank >= 0 && rep.reason[0] == '\0')
        snprintf(rep.reason, sizeof rep.reason, "rank %d on %s failed to initialise", rep.failed_rank,
                 table[rep.failed_rank].host);
    for (int r = 1; r < c->nranks; r++)
        if (c->fd[r] >= 0 && (fbsi_send_all(c->fd[r], &rep, sizeof rep) != 0 ||
                              fbsi_send_all(c->fd[r], table, (size_t)c->nranks * sizeof *table) != 0))
            rep.failed_rank = r;
    if (rep.failed_rank < 0)
        return ncclSuccess;
    if (!my_status)
        fbsi_set_error(c, "%s", rep.reason);
    return my_status ? ncclSystemError : ncclRemoteError;
}

static int connect_root(const struct unique_id *id)
{
    for (int t = 0; t < CONNECT_TRIES || id->from_env; t++) {
        for (int i = 0; i < id->naddr; i++) {
            int fd = fbsi_connect(id->addr[i], id->port);
            if (fd >= 0)
                return fd;
        }
        struct timespec pause = {0, 200000000L};
        nanosleep(&pause, NULL);
    }
    return -1;
}

/* Any other rank: hello to rank 0, the table back. */
static ncclResult_t join_root(struct ncclComm *c, const struct unique_id *id, uint16_t port,
                              struct entry *table, int my_status)
{
    int fd = connect_root(id);
    if (fd < 0) {
        fbsi_set_error(c, "rank %d: cannot reach rank 0 at any of its %d addresses, port %u", c->rank, id->naddr,
                       id->port);
        return ncclSystemError;
    }
    c->fd[0] = fd;
    struct hello h;
    struct reply rep;
    fill_hello(c, &h, port, my_status);
    if (fbsi_send_all(fd, &h, sizeof h) != 0 || fbsi_recv_all(fd, &rep, sizeof rep) != 0 ||
        fbsi_recv_all(fd, table, (size_t)c->nranks * sizeof *table) != 0) {
        fbsi_set_error(c, "rank %d: rank 0 closed the connection during set-up", c->rank);
        return ncclRemoteError;
    }
    if (rep.failed_rank < 0)
        return ncclSuccess;
    rep.reason[sizeof rep.reason - 1] = '\0';
    if (!my_status)
        fbsi_set_error(c, "%s", rep.reason);
    return my_status ? ncclSystemError : ncclRemoteError;
}

/* Ranks first..n-1 connect pairwise: each connects to the lower ranks
 * (whose listening sockets exist already) and then accepts the higher ones.
 * At init rank 0's connections are those of the bootstrap (first = 1). */
static ncclResult_t mesh(struct ncclComm *c, int lfd, const struct entry *table, int first)
{
    struct hello h;
    fill_hello(c, &h, 0, 0);
    for (int r = first; r < c->rank; r++) {
        c->fd[r] = fbsi_connect(table[r].addr, table[r].port);
        if (c->fd[r] < 0 || fbsi_send_all(c->fd[r], &h, sizeof h) != 0) {
            fbsi_set_error(c, "rank %d cannot connect to rank %d on %s", c->rank, r, table[r].host);
            return ncclSystemError;
        }
    }
    for (int n = c->rank + 1; n < c->nranks; n++) {
        struct hello in;
        int fd = fbsi_accept(lfd, NULL);
        if (fd < 0 || fbsi_recv_all(fd, &in, sizeof in) != 0 || in.nonce != c->id || in.rank <= c->rank ||
            in.rank >= c->nranks || c->fd[in.rank] >= 0) {
            fbsi_set_error(c, "rank %d: a bad connection while connecting the ranks", c->rank);
            if (fd >= 0)
                close(fd);
            return ncclSystemError;
        }
        c->fd[in.rank] = fd;
    }
    return ncclSuccess;
}

/* The table becomes the communicator's view of its peers. */
static void adopt(struct ncclComm *c, const struct entry *table)
{
    for (int i = 0; i < c->nranks; i++) {
        memcpy(c->peers[i].host, table[i].host, sizeof c->peers[i].host);
        c->peers[i].cuda_dev = table[i].cuda_dev;
        c->peers[i].bus_id = table[i].bus_id;
        if (c->fd[i] >= 0)
            fbsi_socket_ready(c->fd[i]);
    }
}

ncclResult_t fbsi_bootstrap(struct ncclComm *c, const ncclUniqueId *raw, int fail_init)
{
    struct unique_id id;
    memcpy(&id, raw, sizeof id);
    if (id.magic != ID_MAGIC) {
        fbsi_set_error(c, "ncclCommInitRank: the unique id was not made by ncclGetUniqueId");
        return ncclInvalidArgument;
    }
    c->id = id.nonce;
    struct entry *table = calloc((size_t)c->nranks, sizeof *table);
    if (table == NULL)
        return ncclSystemError;
    ncclResult_t r = ncclSuccess;
    int lfd = c->rank != 0 ? -1 : id.from_env ? listen_at(&id) : take_root(id.nonce);
    uint16_t port = 0;
    if (c->rank == 0 && lfd < 0 && id.from_env) {
        char ip[INET_ADDRSTRLEN] = "?";
        inet_ntop(AF_INET, &id.addr[0], ip, sizeof ip);
        fbsi_set_error(c, "bootstrap: cannot create the root at NCCL_COMM_ID's %s:%u: %s", ip, id.port,
                       strerror(errno));
        r = ncclSystemError;
    } else if (c->rank == 0 && lfd < 0) {
        fbsi_set_error(c, "rank 0 must be the process that called ncclGetUniqueId (a stand-in limit)");
        r = ncclInvalidUsage;
    } else if (c->rank != 0 && (lfd = fbsi_listen(&port)) < 0) {
        fbsi_set_error(c, "rank %d: cannot open a listening socket", c->rank);
        r = ncclSystemError;
    }
    if (r == ncclSuccess)
        r = c->rank == 0 ? gather_ranks(c, lfd, table, fail_init) : join_root(c, &id, port, table, fail_init);
    if (r == ncclSuccess && c->rank != 0)
        r = mesh(c, lfd, table, 1);
    if (r == ncclSuccess)
        adopt(c, table);
    if (lfd >= 0)
        close(lfd);
    free(table);
    return r;
}

ncclResult_t fbsi_split_mesh(struct ncclComm *c, int lfd, const struct fbsi_member *m)
{
    struct entry *table = calloc((size_t)c->nranks, sizeof *table);
    if (table == NULL)
        return ncclSystemError;
    for (int i = 0; i < c->nranks; i++) {
        table[i] = (struct entry){.addr = m[i].addr, .port = m[i].port, .cuda_dev = m[i].info.cuda_dev,
                                  .bus_id = m[i].info.bus_id};
        memcpy(table[i].host, m[i].info.host, sizeof table[i].host);
    }
    ncclResult_t r = mesh(c, lfd, table, 0);
    if (r == ncclSuccess)
        adopt(c, table);
    free(table);
    return r;
}
