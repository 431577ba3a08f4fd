/* NCCL stand-in, the wire: TCP sockets between every pair of ranks, and an
 * engine that moves the transfers of one step over them concurrently
 * (poll, non-blocking), so that any mix of sends and receives completes
 * without deadlock. Each transfer carries a header naming the call, a
 * sequence number and the length, so ranks that disagree about what they
 * are doing get an error naming both sides instead of wrong data. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common.h"
#include "nccl_internal.h"

#define WIRE_MAGIC 0x46425349u /* "FBSI" */
#define POLL_MS 200
#define MAX_IO (4u << 20)

struct wire_hdr {
    uint32_t magic, kind;
    uint64_t seq, len;
};

struct xfer {
    int peer, send;
    enum call_kind kind;
    char *buf;
    size_t len, done;
    char *copy; /* a send that overlaps a receive travels from a snapshot */
    struct wire_hdr hdr;
    size_t hdr_done;
};

/* --- addresses --------------------------------------------------------- */

/* NCCL_SOCKET_IFNAME as NCCL reads it: prefixes, "^" excludes, "=" exact. */
static int iface_wanted(const char *name)
{
    const char *spec = getenv("NCCL_SOCKET_IFNAME");
    if (spec == NULL || *spec == '\0')
        return strncmp(name, "docker", 6) != 0;
    int exclude = spec[0] == '^', exact = spec[exclude] == '=';
    char list[256];
    snprintf(list, sizeof list, "%s", spec + exclude + exact);
    int hit = 0;
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok && !hit; tok = strtok_r(NULL, ",", &save))
        hit = exact ? strcmp(name, tok) == 0 : strncmp(name, tok, strlen(tok)) == 0;
    return exclude ? !hit : hit;
}

/* IPv4 addresses of the up interfaces NCCL would use, loopback last:
 * peers on other hosts try them in order. */
int fbsi_local_addrs(uint32_t *out, int max)
{
    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs) != 0)
        return 0;
    int n = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (struct ifaddrs *i = ifs; i && n < max; i = i->ifa_next) {
            if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP))
                continue;
            int loop = (i->ifa_flags & IFF_LOOPBACK) != 0;
            if (loop != pass || (!loop && !iface_wanted(i->ifa_name)))
                continue;
            out[n++] = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
        }
    }
    freeifaddrs(ifs);
    return n;
}

int fbsi_iface_of(uint32_t addr, char *name, size_t len)
{
    struct ifaddrs *ifs = NULL;
    int found = 0;
    if (getifaddrs(&ifs) != 0)
        return 0;
    for (struct ifaddrs *i = ifs; i && !found; i = i->ifa_next) {
        if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
            ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr == addr) {
            snprintf(name, len, "%s", i->ifa_name);
            found = 1;
        }
    }
    freeifaddrs(ifs);
    return found;
}

/* --- sockets ----------------------------------------------------------- */

int fbsi_listen(uint16_t *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
    socklen_t len = sizeof a;
    if (fd < 0)
        return -1;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 256) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        close(fd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

/* Connects within a couple of seconds (an address of another subnet fails
 * fast or times out here, and the next one is tried). */
int fbsi_connect(uint32_t addr, uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = addr};
    if (fd < 0)
        return -1;
    int rc = connect(fd, (struct sockaddr *)&a, sizeof a);
    if (rc != 0 && errno == EINPROGRESS) {
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        int soerr = 0;
        socklen_t len = sizeof soerr;
        rc = poll(&p, 1, 2000) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 && soerr == 0
                 ? 0 : -1;
    }
    if (rc != 0) {
        close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

int fbsi_accept(int lfd, uint32_t *peer_addr)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int fd;
    do
        fd = accept4(lfd, (struct sockaddr *)&a, &len, SOCK_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd >= 0 && peer_addr)
        *peer_addr = a.sin_addr.s_addr;
    return fd;
}

/* Blocking, whole: set-up messages only (the data goes by the engine). */
static int io_all(int fd, char *p, size_t n, int sending)
{
    for (size_t done = 0; done < n;) {
        ssize_t k = sending ? send(fd, p + done, n - done, MSG_NOSIGNAL) : recv(fd, p + done, n - done, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        done += (size_t)k;
    }
    return 0;
}

int fbsi_send_all(int fd, const void *p, size_t n)
{
    return io_all(fd, (char *)p, n, 1);
}

int fbsi_recv_all(int fd, void *p, size_t n)
{
    return io_all(fd, p, n, 0);
}

/* From set-up to data: non-blocking, no Nagle delay on small messages. */
void fbsi_socket_ready(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* --- the engine ---------------------------------------------------------- */

void fbsi_plan_init(struct plan *p, struct ncclComm *c)
{
    memset(p, 0, sizeof *p);
    p->c = c;
}

int fbsi_plan_add(struct plan *p, int peer, int send, enum call_kind kind, const void *buf, size_t len)
{
    struct xfer *x = fbsi_grow(p->x, &p->cap, p->n, sizeof *x);
    if (x == NULL)
        return 0;
    p->x = x;
    p->x[p->n++] = (struct xfer){.peer = peer, .send = send, .kind = kind, .buf = (char *)buf, .len = len};
    return 1;
}

void fbsi_plan_free(struct plan *p)
{
    for (size_t i = 0; i < p->n; i++)
        free(p->x[i].copy);
    free(p->x);
    memset(p, 0, sizeof *p);
}

static int overlaps(const struct xfer *a, const struct xfer *b)
{
    return a->len && b->len && a->buf < b->buf + b->len && b->buf < a->buf + a->len;
}

/* A send whose bytes a receive of the same step overwrites (in-place
 * alltoall) must send what was there before the step. */
static int snapshot_aliased(struct plan *p)
{
    for (size_t i = 0; i < p->n; i++) {
        struct xfer *s = &p->x[i];
        for (size_t j = 0; s->send && !s->copy && j < p->n; j++) {
            if (p->x[j].send || !overlaps(s, &p->x[j]))
                continue;
            if ((s->copy = malloc(s->len)) == NULL)
                return 0;
            memcpy(s->copy, s->buf, s->len);
            s->buf = s->copy;
        }
    }
    return 1;
}

/* Transfers to this rank itself pair up in order. */
static ncclResult_t run_self(struct plan *p)
{
    size_t r = 0;
    for (size_t s = 0; s < p->n; s++) {
        struct xfer *snd = &p->x[s];
        if (!snd->send || snd->peer != p->c->rank)
            continue;
        while (r < p->n && (p->x[r].send || p->x[r].peer != p->c->rank))
            r++;
        if (r == p->n || p->x[r].len != snd->len) {
            fbsi_set_error(p->c, "rank %d: a %s to itself of %zu bytes has no matching receive of that size",
                           p->c->rank, fbsi_call_name(snd->kind), snd->len);
            return ncclInvalidUsage;
        }
        memmove(p->x[r].buf, snd->buf, snd->len);
        p->x[r].done = p->x[r].len;
        snd->done = snd->len;
        r++;
    }
    for (size_t i = r; i < p->n; i++) {
        if (!p->x[i].send && p->x[i].peer == p->c->rank) {
            fbsi_set_error(p->c, "rank %d: a receive from itself has no matching send", p->c->rank);
            return ncclInvalidUsage;
        }
    }
    return ncclSuccess;
}

/* The next unfinished transfer to or from `peer` in one direction. */
static struct xfer *head(struct plan *p, int peer, int send)
{
    for (size_t i = 0; i < p->n; i++) {
        struct xfer *x = &p->x[i];
        if (x->peer == peer && x->send == send && (x->hdr_done < sizeof x->hdr || x->done < x->len))
            return x;
    }
    return NULL;
}

static ncclResult_t lost(struct plan *p, int peer, const char *how)
{
    const struct ncclComm *c = p->c;
    if (atomic_load(&c->aborted))
        return ncclInvalidUsage;
    fbsi_set_error(p->c, "rank %d on %s: the connection to rank %d on %s %s", c->rank, c->peers[c->rank].host,
                   peer, c->peers[peer].host, how);
    return ncclRemoteError;
}

static ncclResult_t step_send(struct plan *p, struct xfer *x)
{
    int fd = p->c->fd[x->peer];
    if (x->hdr.magic == 0) /* numbered when it starts: the peer's order */
        x->hdr = (struct wire_hdr){WIRE_MAGIC, (uint32_t)x->kind, p->c->send_seq[x->peer]++, x->len};
    while (x->hdr_done < sizeof x->hdr || x->done < x->len) {
        int in_hdr = x->hdr_done < sizeof x->hdr;
        const char *from = in_hdr ? (const char *)&x->hdr + x->hdr_done : x->buf + x->done;
        size_t want = in_hdr ? sizeof x->hdr - x->hdr_done : x->len - x->done;
        ssize_t k = send(fd, from, want < MAX_IO ? want : MAX_IO, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return ncclSuccess;
        if (k <= 0)
            return lost(p, x->peer, "broke (remote process exited or network error)");
        *(in_hdr ? &x->hdr_done : &x->done) += (size_t)k;
    }
    return ncclSuccess;
}

static ncclResult_t check_header(struct plan *p, struct xfer *x)
{
    const struct ncclComm *c = p->c;
    uint64_t want_seq = c->recv_seq[x->peer];
    if (x->hdr.magic != WIRE_MAGIC || x->hdr.seq != want_seq) {
        fbsi_set_error(p->c, "rank %d: garbled stream from rank %d (transfer %llu, expected %llu)", c->rank,
                       x->peer, (unsigned long long)x->hdr.seq, (unsigned long long)want_seq);
        return ncclInternalError;
    }
    if (x->hdr.len != x->len || x->hdr.kind != (uint32_t)x->kind) {
        fbsi_set_error(p->c,
                       "rank %d sent %s of %llu bytes where rank %d expected %s of %zu: the ranks called "
                       "different collectives or counts",
                       x->peer, fbsi_call_name((enum call_kind)x->hdr.kind), (unsigned long long)x->hdr.len,
                       c->rank, fbsi_call_name(x->kind), x->len);
        return ncclInvalidUsage;
    }
    p->c->recv_seq[x->peer]++;
    return ncclSuccess;
}

static ncclResult_t step_recv(struct plan *p, struct xfer *x)
{
    int fd = p->c->fd[x->peer];
    while (x->hdr_done < sizeof x->hdr || x->done < x->len) {
        int in_hdr = x->hdr_done < sizeof x->hdr;
        char *to = in_hdr ? (char *)&x->hdr + x->hdr_done : x->buf + x->done;
        size_t want = in_hdr ? sizeof x->hdr - x->hdr_done : x->len - x->done;
        ssize_t k = recv(fd, to, want < MAX_IO ? want : MAX_IO, MSG_DONTWAIT);
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return ncclSuccess;
        if (k == 0)
            return lost(p, x->peer, "was closed (remote process exited or there was a network error)");
        if (k < 0)
            return lost(p, x->peer, "broke (remote process exited or network error)");
        *(in_hdr ? &x->hdr_done : &x->done) += (size_t)k;
        if (in_hdr && x->hdr_done == sizeof x->hdr) {
            ncclResult_t r = check_header(p, x);
            if (r != ncclSuccess)
                return r;
        }
    }
    return ncclSuccess;
}

/* One poll round over every peer with work in either direction. */
static ncclResult_t poll_round(struct plan *p, struct pollfd *fds, int *peer_of, int *busy)
{
    const struct ncclComm *c = p->c;
    int n = 0;
    for (int peer = 0; peer < c->nranks; peer++) {
        if (peer == c->rank)
            continue;
        short ev = (short)((head(p, peer, 1) ? POLLOUT : 0) | (head(p, peer, 0) ? POLLIN : 0));
        if (ev == 0)
            continue;
        fds[n] = (struct pollfd){.fd = c->fd[peer], .events = ev};
        peer_of[n++] = peer;
    }
    *busy = n > 0;
    if (n == 0)
        return ncclSuccess;
    if (poll(fds, (nfds_t)n, POLL_MS) < 0 && errno != EINTR)
        return lost(p, peer_of[0], "could not be polled");
    if (atomic_load(&c->aborted))
        return ncclInvalidUsage;
    for (int i = 0; i < n; i++) {
        struct xfer *x;
        ncclResult_t r = ncclSuccess;
        if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) && (x = head(p, peer_of[i], 0)) != NULL)
            r = step_recv(p, x);
        if (r == ncclSuccess && (fds[i].revents & (POLLOUT | POLLERR)) && (x = head(p, peer_of[i], 1)) != NULL)
            r = step_send(p, x);
        if (r == ncclSuccess && (fds[i].revents & POLLHUP) && head(p, peer_of[i], 0) == NULL &&
            head(p, peer_of[i], 1) != NULL)
            r = lost(p, peer_of[i], "was closed (remote process exited or there was a network error)");
        if (r != ncclSuccess)
            return r;
    }
    return ncclSuccess;
}

ncclResult_t fbsi_plan_run(struct plan *p)
{
    if (!snapshot_aliased(p)) {
        fbsi_set_error(p->c, "out of host memory for an in-place transfer");
        return ncclSystemError;
    }
    ncclResult_t r = run_self(p);
    struct pollfd *fds = calloc((size_t)p->c->nranks, sizeof *fds);
    int *peer_of = calloc((size_t)p->c->nranks, sizeof *peer_of);
    int busy = 1;
    if (fds == NULL || peer_of == NULL) {
        fbsi_set_error(p->c, "out of host memory");
        r = ncclSystemError;
    }
    while (r == ncclSuccess && busy)
        r = poll_round(p, fds, peer_of, &busy);
    free(fds);
    free(peer_of);
    return r;
}
