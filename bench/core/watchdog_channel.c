#include "core/watchdog_channel.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/clock.h"

#define MAGIC 0x46425744u  /* "FBWD" */
#define MAX_ADDRS 8        /* rank 0's addresses offered to the others */
#define MAX_CANDIDATES 16  /* addresses one rank tries at once */
#define ACCEPT_MARGIN_S 5.0 /* rank 0 waits this much past the ranks' bound */

struct line {
    int fd;
    size_t have; /* bytes of `in` received so far */
    struct fb_wd_msg in;
};

struct fb_wd_channel {
    const struct fb_world *w;
    int nlines;         /* rank 0: one per rank (its own unused); else one, to rank 0 */
    struct line *lines;
    struct fb_wd_msg out; /* rank != 0: the message on its way */
    size_t out_len, out_off;
};

/* What rank 0 tells every rank before they connect. */
struct contact {
    int32_t status, port, naddrs, pad;
    uint32_t addr[MAX_ADDRS], mask[MAX_ADDRS]; /* network byte order */
    char host[FB_HOST_MAX];                    /* FB_WATCHDOG_ADDR's host; "" for addr[] */
};

struct candidates {
    int n;
    struct sockaddr_in sa[MAX_CANDIDATES];
};

static const char *addr_text(const struct sockaddr_in *sa, char *buf, size_t len)
{
    char ip[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &sa->sin_addr, ip, sizeof ip);
    snprintf(buf, len, "%s:%d", ip, ntohs(sa->sin_port));
    return buf;
}

enum fb_status fb_wd_parse_addr(const char *value, char *host, size_t host_len, int *port,
                                struct fb_err *err)
{
    const char *fix = "give HOST or HOST:PORT (PORT 1-65535), an address of rank 0's host every rank reaches";
    const char *colon = strrchr(value, ':');
    size_t n = colon ? (size_t)(colon - value) : strlen(value);
    *port = 0;
    if (n == 0)
        return fb_fail(err, FB_ERR_USAGE, "%s='%s' names no host; %s", FB_WD_ADDR_ENV, value, fix);
    if (n >= host_len)
        return fb_fail(err, FB_ERR_USAGE, "%s='%.40s...': the host is too long; %s", FB_WD_ADDR_ENV, value, fix);
    if (memchr(value, ':', n) != NULL)
        return fb_fail(err, FB_ERR_USAGE, "%s='%s': IPv6 addresses are not supported; %s", FB_WD_ADDR_ENV, value,
                       fix);
    for (size_t i = 0; i < n; i++)
        if (value[i] <= ' ' || value[i] == '/' || (unsigned char)value[i] >= 0x7f)
            return fb_fail(err, FB_ERR_USAGE, "%s='%s': the host holds a character no host name has; %s",
                           FB_WD_ADDR_ENV, value, fix);
    if (colon != NULL) {
        const char *p = colon + 1;
        long v = 0;
        if (*p == '\0' || strspn(p, "0123456789") != strlen(p) || strlen(p) > 5 || (v = strtol(p, NULL, 10)) < 1 ||
            v > 65535)
            return fb_fail(err, FB_ERR_USAGE, "%s='%s': '%s' is not a port; %s", FB_WD_ADDR_ENV, value, p, fix);
        *port = (int)v;
    }
    memcpy(host, value, n);
    host[n] = '\0';
    return FB_OK;
}

/* Rank 0's IPv4 addresses other than loopback, with their netmasks. */
static void list_addresses(struct contact *c)
{
    struct ifaddrs *all = NULL;
    if (getifaddrs(&all) != 0)
        return;
    for (struct ifaddrs *i = all; i != NULL && c->naddrs < MAX_ADDRS; i = i->ifa_next) {
        if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP) ||
            (i->ifa_flags & IFF_LOOPBACK))
            continue;
        c->addr[c->naddrs] = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
        c->mask[c->naddrs] = i->ifa_netmask ? ((struct sockaddr_in *)i->ifa_netmask)->sin_addr.s_addr : 0;
        c->naddrs++;
    }
    freeifaddrs(all);
}

static enum fb_status rank0_listen(struct contact *c, int *lfd, struct fb_err *err)
{
    const char *env = getenv(FB_WD_ADDR_ENV);
    int port = 0;
    if (env != NULL && fb_wd_parse_addr(env, c->host, sizeof c->host, &port, err) != FB_OK)
        return err->code;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return fb_fail(err, FB_ERR_RUNTIME, "watchdog channel: socket: %s", strerror(errno));
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one); /* a fixed port again right after a run */
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_ANY)};
    socklen_t len = sizeof sa;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 256) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
        int e = errno;
        close(fd);
        return fb_fail(err, FB_ERR_RUNTIME, "watchdog channel: cannot listen on port %d on %s: %s%s", port,
                       env ? env : "every address", strerror(e),
                       port ? "; choose another port in " FB_WD_ADDR_ENV : "");
    }
    *lfd = fd;
    c->port = ntohs(sa.sin_port);
    if (c->host[0] == '\0')
        list_addresses(c);
    return FB_OK;
}

static void add_candidate(struct candidates *k, uint32_t addr, int port)
{
    for (int i = 0; i < k->n; i++)
        if (k->sa[i].sin_addr.s_addr == addr)
            return;
    if (k->n == MAX_CANDIDATES)
        return;
    k->sa[k->n++] = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                         .sin_addr.s_addr = addr};
}

/* True when `addr` lies on a subnet of one of this host's interfaces. */
static int on_my_subnet(uint32_t addr, uint32_t mask)
{
    struct ifaddrs *all = NULL;
    int hit = 0;
    if (mask == 0 || getifaddrs(&all) != 0)
        return 0;
    for (struct ifaddrs *i = all; i != NULL && !hit; i = i->ifa_next)
        if (i->ifa_addr != NULL && i->ifa_addr->sa_family == AF_INET && !(i->ifa_flags & IFF_LOOPBACK))
            hit = (((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr & mask) == (addr & mask);
    freeifaddrs(all);
    return hit;
}

static enum fb_status resolve_override(const struct fb_world *w, const struct contact *c, struct candidates *k,
                                      struct fb_err *err)
{
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = getaddrinfo(c->host, NULL, &hints, &res);
    if (rc != 0)
        return fb_fail(err, FB_ERR_RUNTIME,
                       "rank %d on %s cannot resolve %s's host '%s': %s; give an address every host resolves",
                       w->rank, w->host, FB_WD_ADDR_ENV, c->host, gai_strerror(rc));
    for (struct addrinfo *a = res; a != NULL; a = a->ai_next)
        add_candidate(k, ((struct sockaddr_in *)a->ai_addr)->sin_addr.s_addr, c->port);
    freeaddrinfo(res);
    return FB_OK;
}

/* In order of likelihood: loopback on rank 0's own host, then rank 0's
 * addresses on a subnet this host shares, then the rest. */
static void default_candidates(const struct fb_world *w, const struct contact *c, struct candidates *k)
{
    if (strcmp(w->hosts[0], w->host) == 0)
        add_candidate(k, htonl(INADDR_LOOPBACK), c->port);
    for (int i = 0; i < c->naddrs; i++)
        if (on_my_subnet(c->addr[i], c->mask[i]))
            add_candidate(k, c->addr[i], c->port);
    for (int i = 0; i < c->naddrs; i++)
        add_candidate(k, c->addr[i], c->port);
    add_candidate(k, htonl(INADDR_LOOPBACK), c->port); /* one network namespace under other names */
}

static void close_all(int *fds, int n, int keep)
{
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0 && fds[i] != keep)
            close(fds[i]);
}

/* Starts a connection to every candidate at once and keeps the first that
 * completes (the earliest in order when several do). Returns the socket or
 * -1, with the last reason in `why`. */
static int connect_first(const struct candidates *k, double deadline, char *why, size_t why_len)
{
    int fds[MAX_CANDIDATES], live = 0;
    snprintf(why, why_len, "no address to try");
    for (int i = 0; i < k->n; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fds[i] >= 0 && connect(fds[i], (const struct sockaddr *)&k->sa[i], sizeof k->sa[i]) == 0) {
            close_all(fds, i, fds[i]);
            return fds[i];
        }
        if (fds[i] >= 0 && errno == EINPROGRESS) {
            live++;
            continue;
        }
        snprintf(why, why_len, "%s", strerror(errno));
        if (fds[i] >= 0)
            close(fds[i]);
        fds[i] = -1;
    }
    while (live > 0) {
        struct pollfd p[MAX_CANDIDATES];
        for (int i = 0; i < k->n; i++)
            p[i] = (struct pollfd){.fd = fds[i], .events = POLLOUT};
        double left = deadline - fb_now();
        if (left <= 0) {
            snprintf(why, why_len, "no answer");
            break;
        }
        if (poll(p, (nfds_t)k->n, (int)(left * 1000) + 1) < 0 && errno != EINTR)
            break;
        for (int i = 0; i < k->n; i++) {
            if (fds[i] < 0 || p[i].revents == 0)
                continue;
            int e = 0;
            socklen_t len = sizeof e;
            getsockopt(fds[i], SOL_SOCKET, SO_ERROR, &e, &len);
            if (e == 0) {
                close_all(fds, k->n, fds[i]);
                return fds[i];
            }
            snprintf(why, why_len, "%s", strerror(e));
            close(fds[i]);
            fds[i] = -1;
            live--;
        }
    }
    close_all(fds, k->n, -1);
    return -1;
}

static enum fb_status connect_to_rank0(struct fb_wd_channel *ch, const struct contact *c, struct fb_err *err)
{
    const struct fb_world *w = ch->w;
    struct candidates k = {0};
    if (c->host[0] != '\0' && resolve_override(w, c, &k, err) != FB_OK)
        return err->code;
    if (c->host[0] == '\0')
        default_candidates(w, c, &k);
    char why[128], first[32];
    int fd = connect_first(&k, fb_now() + FB_WD_CONNECT_S, why, sizeof why);
    if (fd < 0)
        return fb_fail(err, FB_ERR_RUNTIME,
                       "rank %d on %s cannot reach rank 0's watchdog channel on %s at %s%s within %.0f s (%s); set "
                       "%s=HOST[:PORT] to an address of %s this host reaches, or run with --no-watchdog",
                       w->rank, w->host, w->hosts[0], k.n ? addr_text(&k.sa[0], first, sizeof first) : "no address",
                       k.n > 1 ? " and others" : "", FB_WD_CONNECT_S, why, FB_WD_ADDR_ENV, w->hosts[0]);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ch->lines[0].fd = fd;
    struct fb_wd_msg hello = {.magic = MAGIC, .kind = FB_WD_HELLO, .rank = w->rank};
    fb_wd_channel_send_last(ch, &hello, FB_WD_CONNECT_S);
    if (ch->out_off < ch->out_len)
        return fb_fail(err, FB_ERR_RUNTIME, "rank %d on %s: rank 0's watchdog channel on %s took no greeting",
                       w->rank, w->host, w->hosts[0]);
    return FB_OK;
}

/* A whole message arrived in `l`: true, with it in l->in. False on EOF or
 * an error (the line is then closed) and when more is to come. */
static int read_line(struct line *l, int *closed)
{
    *closed = 0;
    for (;;) {
        ssize_t n = recv(l->fd, (char *)&l->in + l->have, sizeof l->in - l->have, MSG_DONTWAIT);
        if (n > 0) {
            l->have += (size_t)n;
            if (l->have == sizeof l->in) {
                l->have = 0;
                if (l->in.magic == MAGIC)
                    return 1;
            }
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return 0;
        close(l->fd);
        l->fd = -1;
        *closed = 1;
        return 0;
    }
}

/* Connections not yet greeted: room for every rank and a few strangers. */
struct pending {
    int n, cap;
    struct line *l;
};

static void take_new(int lfd, struct pending *p)
{
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        if (p->n == p->cap) {
            close(fd); /* more than the job has ranks: not ranks of this job */
            continue;
        }
        p->l[p->n++] = (struct line){.fd = fd};
    }
}

/* Reads greetings; a known rank's line moves to ch->lines. Returns how
 * many ranks said who they are. */
static int take_greetings(struct fb_wd_channel *ch, struct pending *p, const struct pollfd *pf)
{
    int greeted = 0;
    for (int i = p->n - 1; i >= 0; i--) {
        if (pf[i].revents == 0)
            continue;
        int closed;
        struct line *l = &p->l[i];
        if (read_line(l, &closed)) {
            int r = l->in.rank;
            if (l->in.kind == FB_WD_HELLO && r > 0 && r < ch->nlines && ch->lines[r].fd < 0) {
                ch->lines[r] = (struct line){.fd = l->fd};
                greeted++;
            } else {
                close(l->fd);
            }
            closed = 1;
        }
        if (closed)
            p->l[i] = p->l[--p->n];
    }
    return greeted;
}

/* Rank 0: takes connections until every rank said who it is, or the
 * ranks agreed (req) that one cannot, or the bound passes. */
static void accept_ranks(struct fb_wd_channel *ch, int lfd, MPI_Request *req, const int *worst, double deadline)
{
    int missing = ch->nlines - 1, agreed = 0;
    struct pending p = {.cap = ch->nlines + 16};
    p.l = calloc((size_t)p.cap, sizeof *p.l);
    struct pollfd *pf = calloc((size_t)p.cap + 1, sizeof *pf);
    if (p.l == NULL || pf == NULL)
        deadline = 0; /* out of memory: the ranks are reported missing */
    while (fb_now() < deadline) {
        for (int i = 0; i < p.n; i++)
            pf[i] = (struct pollfd){.fd = p.l[i].fd, .events = POLLIN};
        pf[p.n] = (struct pollfd){.fd = lfd, .events = POLLIN};
        if (poll(pf, (nfds_t)p.n + 1, 50) > 0) {
            missing -= take_greetings(ch, &p, pf);
            if (pf[p.n].revents)
                take_new(lfd, &p);
        }
        if (!agreed)
            MPI_Test(req, &agreed, MPI_STATUS_IGNORE);
        if (agreed && (*worst != FB_OK || missing == 0))
            break;
    }
    for (int i = 0; i < p.n; i++)
        close(p.l[i].fd);
    free(p.l);
    free(pf);
    if (!agreed)
        MPI_Wait(req, MPI_STATUS_IGNORE); /* each rank's own try is bounded */
}

static void report_missing(const struct fb_wd_channel *ch, struct fb_err *err)
{
    for (int r = 1; r < ch->nlines; r++)
        if (ch->lines[r].fd < 0) {
            fb_fail(err, FB_ERR_RUNTIME,
                    "rank %d on %s connected to the watchdog channel but did not say so within %.0f s; "
                    "check for a firewall or proxy between the hosts, or run with --no-watchdog",
                    r, ch->w->hosts[r], FB_WD_CONNECT_S + ACCEPT_MARGIN_S);
            return;
        }
}

static struct fb_wd_channel *channel_new(const struct fb_world *w)
{
    struct fb_wd_channel *ch = calloc(1, sizeof *ch);
    if (ch == NULL)
        return NULL;
    ch->w = w;
    ch->nlines = w->rank == 0 ? w->size : 1;
    ch->lines = calloc((size_t)ch->nlines, sizeof *ch->lines);
    if (ch->lines == NULL) {
        free(ch);
        return NULL;
    }
    for (int i = 0; i < ch->nlines; i++)
        ch->lines[i].fd = -1;
    return ch;
}

enum fb_status fb_wd_channel_open(struct fb_wd_channel **out, const struct fb_world *w, struct fb_err *err)
{
    *out = NULL;
    struct fb_wd_channel *ch = channel_new(w);
    struct contact c = {0};
    int lfd = -1;
    if (ch == NULL)
        fb_fail(err, FB_ERR_INTERNAL, "out of memory for the watchdog channel");
    else if (w->rank == 0)
        c.status = (int32_t)rank0_listen(&c, &lfd, err);
    MPI_Bcast(&c, sizeof c, MPI_BYTE, 0, w->comm);
    if (c.status == FB_OK) {
        int mine = (int)err->code, worst = 0;
        if (mine == FB_OK && w->rank != 0)
            mine = (int)connect_to_rank0(ch, &c, err);
        MPI_Request req;
        MPI_Iallreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, w->comm, &req);
        if (w->rank == 0 && ch != NULL)
            accept_ranks(ch, lfd, &req, &worst, fb_now() + FB_WD_CONNECT_S + ACCEPT_MARGIN_S);
        else
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (w->rank == 0 && ch != NULL && worst == FB_OK)
            report_missing(ch, err);
    }
    if (lfd >= 0)
        close(lfd);
    if (fb_world_agree(w, err) != FB_OK) {
        fb_wd_channel_close(ch);
        return err->code;
    }
    *out = ch;
    return FB_OK;
}

void fb_wd_channel_close(struct fb_wd_channel *ch)
{
    if (ch == NULL)
        return;
    for (int i = 0; i < ch->nlines; i++)
        if (ch->lines[i].fd >= 0)
            close(ch->lines[i].fd);
    free(ch->lines);
    free(ch);
}

/* 1: all of the queued message has left; 0: some is still to go. */
static int flush_out(struct fb_wd_channel *ch)
{
    int fd = ch->lines[0].fd;
    while (ch->out_off < ch->out_len) {
        if (fd < 0)
            return 0;
        ssize_t n = send(fd, (char *)&ch->out + ch->out_off, ch->out_len - ch->out_off, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n <= 0)
            return 0; /* full (rank 0 not reading) or broken (the next poll says so) */
        ch->out_off += (size_t)n;
    }
    return 1;
}

int fb_wd_channel_send(struct fb_wd_channel *ch, const struct fb_wd_msg *m)
{
    if (!flush_out(ch))
        return 0;
    ch->out = *m;
    ch->out.magic = MAGIC;
    ch->out_len = sizeof ch->out;
    ch->out_off = 0;
    flush_out(ch);
    return 1;
}

static void wait_writable(int fd, double deadline)
{
    double left = deadline - fb_now();
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    if (fd >= 0 && left > 0)
        poll(&p, 1, (int)(left * 1000) + 1);
}

void fb_wd_channel_send_last(struct fb_wd_channel *ch, const struct fb_wd_msg *m, double seconds)
{
    double deadline = fb_now() + seconds;
    while (!flush_out(ch) && ch->lines[0].fd >= 0 && fb_now() < deadline)
        wait_writable(ch->lines[0].fd, deadline);
    if (!fb_wd_channel_send(ch, m))
        return;
    while (!flush_out(ch) && ch->lines[0].fd >= 0 && fb_now() < deadline)
        wait_writable(ch->lines[0].fd, deadline);
}

void fb_wd_channel_tell_all(struct fb_wd_channel *ch, const struct fb_wd_msg *m)
{
    struct fb_wd_msg out = *m;
    out.magic = MAGIC;
    for (int r = 1; r < ch->nlines; r++)
        if (ch->lines[r].fd >= 0 && send(ch->lines[r].fd, &out, sizeof out, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
            continue; /* that rank's line is full or gone: it ends on its own bound */
}

void fb_wd_channel_poll(struct fb_wd_channel *ch, double seconds, fb_wd_on_msg on_msg, void *ctx)
{
    struct pollfd stack[64], *pf = ch->nlines <= 64 ? stack : calloc((size_t)ch->nlines, sizeof *pf);
    if (pf == NULL)
        pf = stack; /* out of memory: wait, read nothing this round */
    int n = pf == stack && ch->nlines > 64 ? 0 : ch->nlines;
    for (int i = 0; i < n; i++)
        pf[i] = (struct pollfd){.fd = ch->lines[i].fd, .events = POLLIN}; /* fd -1: skipped by poll */
    if (poll(pf, (nfds_t)n, (int)(seconds * 1000)) > 0) {
        for (int i = 0; i < n; i++) {
            if (pf[i].revents == 0 || ch->lines[i].fd < 0)
                continue;
            int closed = 0;
            while (read_line(&ch->lines[i], &closed))
                on_msg(ctx, ch->w->rank == 0 ? i : 0, &ch->lines[i].in);
            if (closed)
                on_msg(ctx, ch->w->rank == 0 ? i : 0, NULL);
        }
    }
    if (pf != stack)
        free(pf);
}
