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
#include "core/coord.h"
#include "core/world_env.h"

#define MAX_ADDRS 8         /* rank 0's addresses offered to the others */
#define MAX_CANDIDATES 16   /* addresses one rank tries at once */
#define ACCEPT_MARGIN_S 5.0 /* rank 0 waits this much past the ranks' bound */
#define REDIAL_PAUSE_S 0.1  /* between a rank's rounds of connections */

/* A connection and the frame coming in on it. */
struct line {
    int fd;
    size_t have; /* bytes of `in` received so far */
    struct fb_wd_frame in;
    uint8_t key[FB_WD_KEY_LEN]; /* the connection's, once proven */
    uint64_t sent, received;    /* the next sequence number each way */
};

struct fb_wd_channel {
    const struct fb_world *w;
    int nlines; /* rank 0: one per rank (its own unused); else one, to rank 0 */
    struct line *lines;
    struct fb_wd_frame out; /* rank != 0: the record on its way */
    size_t out_len, out_off;
};

/* What rank 0 tells every rank before they connect (MPI_Bcast). */
struct contact {
    int32_t status, port, naddrs, pad;
    uint32_t addr[MAX_ADDRS], mask[MAX_ADDRS]; /* network byte order */
    char host[FB_HOST_MAX];                    /* FB_WATCHDOG_ADDR's host; "" for addr[] */
    uint8_t secret[FB_WD_KEY_LEN];             /* the job's: wiped once the channel is open */
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

static enum fb_status rank0_listen(const struct fb_world *w, struct contact *c, int *lfd, struct fb_err *err)
{
    if (w->nccl != NULL) {
        if (fb_job_secret(c->secret, err) != FB_OK)
            return err->code;
    } else if (fb_random_bytes(c->secret, sizeof c->secret) != 0)
        return fb_fail(err, FB_ERR_RUNTIME,
                       "watchdog channel: the kernel gives no random bytes for the job's secret (getrandom: %s); "
                       "run on a kernel with getrandom(2) (Linux 3.17 or later), or with --no-watchdog",
                       strerror(errno));
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
 * addresses on a subnet this host shares, then the rest.
 *
 * On any other host 127.0.0.1:PORT is that host's own loopback, where
 * anyone may listen: it is tried only when rank 0 offers no address at all
 * (the ranks can then only share its network namespace). Such a listener
 * could forge nothing against the handshake, but it would still take the
 * rank's greeting and its time; and a rank that shares rank 0's namespace
 * under another host name reaches it through rank 0's own addresses. */
static void default_candidates(const struct fb_world *w, const struct contact *c, struct candidates *k)
{
    if (strcmp(w->hosts[0], w->host) == 0)
        add_candidate(k, htonl(INADDR_LOOPBACK), c->port);
    for (int i = 0; i < c->naddrs; i++)
        if (on_my_subnet(c->addr[i], c->mask[i]))
            add_candidate(k, c->addr[i], c->port);
    for (int i = 0; i < c->naddrs; i++)
        add_candidate(k, c->addr[i], c->port);
    if (c->naddrs == 0)
        add_candidate(k, htonl(INADDR_LOOPBACK), c->port);
}

static void close_line(struct line *l)
{
    if (l->fd >= 0)
        close(l->fd);
    l->fd = -1;
    explicit_bzero(l->key, sizeof l->key);
}

/* A whole frame arrived on `l`: true, with it in l->in. False when more is
 * to come, and on EOF or an error (the line is then closed, *closed set). */
static int read_frame(struct line *l, int *closed)
{
    *closed = 0;
    for (;;) {
        ssize_t n = recv(l->fd, (char *)&l->in + l->have, sizeof l->in - l->have, MSG_DONTWAIT);
        if (n > 0) {
            l->have += (size_t)n;
            if (l->have < sizeof l->in)
                continue;
            l->have = 0;
            return 1;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return 0;
        close_line(l);
        *closed = 1;
        return 0;
    }
}

/* One frame on a connection that has nothing else queued (a greeting, or
 * the order to end): whole or not at all, without blocking. */
static int send_frame(int fd, const struct fb_wd_frame *f)
{
    return send(fd, f, sizeof *f, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)sizeof *f;
}

/* ---- a rank: reaching rank 0 and proving it is a rank of this job ---- */

enum stage {
    DIALING,         /* TCP connect in progress */
    AWAIT_CHALLENGE, /* connected: rank 0 speaks first */
    CHALLENGED,      /* its nonce is here; the HELLO waits its turn */
    AWAIT_WELCOME,   /* HELLO sent: rank 0 must prove it holds the secret */
};

struct attempt {
    struct line l; /* fd -1: given up */
    enum stage stage;
    double until; /* AWAIT_WELCOME: given up then */
    uint8_t nonce0[FB_WD_NONCE_LEN];
};

/* One rank's connections to every candidate address at once. HELLOs go out
 * one at a time, so rank 0 never sees two proven lines of one rank. */
struct dial {
    int32_t rank;
    int n; /* addresses in sa */
    const struct sockaddr_in *sa;
    const uint8_t *secret;
    struct attempt a[MAX_CANDIDATES];
    int hello_on; /* the attempt whose WELCOME is awaited, or -1 */
    int answered; /* an address took a connection this round: another round may pass */
    char why[160];
};

static void give_up(struct dial *d, int i, const char *why)
{
    char where[32];
    close_line(&d->a[i].l);
    if (d->hello_on == i)
        d->hello_on = -1;
    snprintf(d->why, sizeof d->why, "%s: %s", addr_text(&d->sa[i], where, sizeof where), why);
}

static void dial_all(struct dial *d)
{
    d->answered = 0;
    for (int i = 0; i < d->n; i++) {
        struct attempt *a = &d->a[i];
        *a = (struct attempt){.l.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)};
        if (a->l.fd < 0) {
            snprintf(d->why, sizeof d->why, "socket: %s", strerror(errno));
            continue;
        }
        if (connect(a->l.fd, (const struct sockaddr *)&d->sa[i], sizeof d->sa[i]) == 0) {
            a->stage = AWAIT_CHALLENGE;
            d->answered = 1;
        } else if (errno == EINPROGRESS)
            a->stage = DIALING;
        else
            give_up(d, i, strerror(errno));
    }
}

static int attempts_live(const struct dial *d)
{
    int n = 0;
    for (int i = 0; i < d->n; i++)
        n += d->a[i].l.fd >= 0;
    return n;
}

static void on_connected(struct dial *d, int i)
{
    int e = 0;
    socklen_t len = sizeof e;
    getsockopt(d->a[i].l.fd, SOL_SOCKET, SO_ERROR, &e, &len);
    if (e != 0) {
        give_up(d, i, strerror(e));
        return;
    }
    d->a[i].stage = AWAIT_CHALLENGE;
    d->answered = 1;
}

static void send_hello(struct dial *d, int i)
{
    struct attempt *a = &d->a[i];
    struct fb_wd_frame hello = {0};
    if (fb_random_bytes(hello.nonce, sizeof hello.nonce) != 0) {
        give_up(d, i, "no random bytes for the greeting");
        return;
    }
    hello.m.kind = FB_WD_HELLO;
    hello.m.rank = d->rank;
    fb_wd_session_key(d->secret, a->nonce0, hello.nonce, d->rank, a->l.key);
    fb_wd_seal(&hello, a->l.key, FB_WD_TO_RANK0, 0);
    if (!send_frame(a->l.fd, &hello)) {
        give_up(d, i, "the greeting could not be sent");
        return;
    }
    a->stage = AWAIT_WELCOME;
    a->until = fb_now() + FB_WD_HANDSHAKE_S;
    d->hello_on = i;
}

/* A frame arrived on attempt i: 1 when it is rank 0's proof (the line is
 * the rank's), 0 otherwise. */
static int on_frame(struct dial *d, int i)
{
    struct attempt *a = &d->a[i];
    const struct fb_wd_frame *f = &a->l.in;
    if (a->stage == AWAIT_CHALLENGE) {
        if (f->magic != FB_WD_MAGIC || f->dir != FB_WD_FROM_RANK0 || f->m.kind != FB_WD_CHALLENGE) {
            give_up(d, i, "what answers there is not a fabric-bench watchdog channel");
            return 0;
        }
        memcpy(a->nonce0, f->nonce, sizeof a->nonce0);
        a->stage = CHALLENGED;
        return 0;
    }
    if (a->stage == AWAIT_WELCOME && fb_wd_unseal(f, a->l.key, FB_WD_FROM_RANK0, 0) && f->m.kind == FB_WD_WELCOME &&
        f->m.rank == d->rank)
        return 1;
    give_up(d, i, "what answers there did not prove it is rank 0 of this job");
    return 0;
}

/* Handles what poll saw on attempt i; 1 when it won. */
static int on_event(struct dial *d, int i, short revents)
{
    struct attempt *a = &d->a[i];
    if (revents == 0 || a->l.fd < 0)
        return 0;
    if (a->stage == DIALING) {
        on_connected(d, i);
        return 0;
    }
    int closed = 0;
    while (a->l.fd >= 0 && read_frame(&a->l, &closed))
        if (on_frame(d, i))
            return 1;
    if (closed)
        give_up(d, i, "the connection closed during the greeting");
    return 0;
}

/* The next HELLO, and the end of a wait for a WELCOME that is not coming. */
static void advance(struct dial *d, double now)
{
    if (d->hello_on >= 0 && now > d->a[d->hello_on].until)
        give_up(d, d->hello_on, "no proof that it is rank 0 of this job within the handshake bound");
    for (int i = 0; i < d->n && d->hello_on < 0; i++)
        if (d->a[i].l.fd >= 0 && d->a[i].stage == CHALLENGED)
            send_hello(d, i);
}

/* Waits for the next event on any attempt, at most until `deadline` or the
 * end of the awaited WELCOME. Returns the attempt that won, or -1. */
static int wait_for_attempts(struct dial *d, double deadline)
{
    struct pollfd p[MAX_CANDIDATES];
    double until = deadline;
    for (int i = 0; i < d->n; i++) {
        const struct attempt *a = &d->a[i];
        p[i] = (struct pollfd){.fd = a->l.fd, .events = a->stage == DIALING ? POLLOUT : POLLIN};
    }
    if (d->hello_on >= 0 && d->a[d->hello_on].until < until)
        until = d->a[d->hello_on].until;
    double left = until - fb_now();
    if (poll(p, (nfds_t)d->n, left > 0 ? (int)(left * 1000) + 1 : 0) <= 0)
        return -1;
    for (int i = 0; i < d->n; i++)
        if (on_event(d, i, p[i].revents))
            return i;
    return -1;
}

/* Returns the index of the attempt that won, every other one closed; or
 * -1, every one closed, with d->why. A round whose connections were all
 * taken and then dropped (rank 0 busy with strangers' connections, a
 * stranger's listener) is followed by another until the deadline; a round
 * that no address took ends the try at once. */
static int dial_rank0(struct dial *d, double deadline)
{
    int won = -1;
    d->hello_on = -1;
    d->why[0] = '\0';
    dial_all(d);
    while (won < 0 && fb_now() < deadline) {
        if (attempts_live(d) == 0) {
            if (!d->answered)
                break;
            poll(NULL, 0, (int)(REDIAL_PAUSE_S * 1000));
            dial_all(d);
            continue;
        }
        won = wait_for_attempts(d, deadline);
        if (won < 0)
            advance(d, fb_now());
    }
    for (int i = 0; i < d->n; i++)
        if (i != won)
            close_line(&d->a[i].l);
    if (d->why[0] == '\0')
        snprintf(d->why, sizeof d->why, "%s", d->n ? "no answer" : "no address to try");
    return won;
}

int fb_wd_dial(const struct sockaddr_in *addrs, int n, const uint8_t secret[FB_WD_KEY_LEN], int32_t rank,
               double seconds, uint8_t key[FB_WD_KEY_LEN], char *why, size_t why_len)
{
    struct dial d = {.rank = rank, .n = n < MAX_CANDIDATES ? n : MAX_CANDIDATES, .sa = addrs, .secret = secret};
    int won = dial_rank0(&d, fb_now() + seconds), fd = -1;
    snprintf(why, why_len, "%s", d.why);
    if (won >= 0) {
        fd = d.a[won].l.fd;
        memcpy(key, d.a[won].l.key, FB_WD_KEY_LEN);
    }
    explicit_bzero(&d, sizeof d);
    return fd;
}

static enum fb_status connect_to_rank0(struct fb_wd_channel *ch, const struct contact *c, struct fb_err *err)
{
    const struct fb_world *w = ch->w;
    struct candidates k = {0};
    if (c->host[0] != '\0' && resolve_override(w, c, &k, err) != FB_OK)
        return err->code;
    if (c->host[0] == '\0')
        default_candidates(w, c, &k);
    struct line *l = &ch->lines[0];
    char why[160], first[32];
    *l = (struct line){.sent = 1, .received = 1};
    l->fd = fb_wd_dial(k.sa, k.n, c->secret, w->rank, FB_WD_CONNECT_S, l->key, why, sizeof why);
    if (l->fd < 0)
        return fb_fail(err, FB_ERR_RUNTIME,
                       "rank %d on %s cannot reach rank 0's watchdog channel on %s at %s%s within %.0f s (%s); set "
                       "%s=HOST[:PORT] to an address of %s this host reaches, or run with --no-watchdog",
                       w->rank, w->host, w->hosts[0], k.n ? addr_text(&k.sa[0], first, sizeof first) : "no address",
                       k.n > 1 ? " and others" : "", FB_WD_CONNECT_S, why, FB_WD_ADDR_ENV, w->hosts[0]);
    int one = 1;
    setsockopt(l->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return FB_OK;
}

/* ---- rank 0: taking the ranks' connections ---- */

/* A connection that has not proven itself yet. */
struct caller {
    struct line l;
    double until; /* dropped then */
    uint8_t nonce0[FB_WD_NONCE_LEN];
};

struct pending {
    int n, cap;
    struct caller *c;
};

static void drop_caller(struct pending *p, int i)
{
    close_line(&p->c[i].l);
    p->c[i] = p->c[--p->n];
}

static int oldest_caller(const struct pending *p)
{
    int o = 0;
    for (int i = 1; i < p->n; i++)
        if (p->c[i].until < p->c[o].until)
            o = i;
    return o;
}

/* Rank 0 speaks first: a nonce of its own for this connection, so that no
 * greeting recorded elsewhere can be played back on it. */
static int send_challenge(struct caller *c)
{
    struct fb_wd_frame f = {.magic = FB_WD_MAGIC, .dir = FB_WD_FROM_RANK0};
    if (fb_random_bytes(c->nonce0, sizeof c->nonce0) != 0)
        return 0;
    memcpy(f.nonce, c->nonce0, sizeof f.nonce);
    f.m.kind = FB_WD_CHALLENGE;
    return send_frame(c->l.fd, &f);
}

/* Takes what waits on the listener, at most a table's worth per call so
 * that a flood cannot keep rank 0 from reading greetings. When the table is
 * full the oldest caller goes: a rank answers within a round trip, a
 * stranger's connection waits to the end of its bound. */
static void take_new(int lfd, struct pending *p, double now)
{
    for (int taken = 0; taken < p->cap; taken++) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        if (p->n == p->cap)
            drop_caller(p, oldest_caller(p));
        struct caller *c = &p->c[p->n];
        *c = (struct caller){.l.fd = fd, .until = now + FB_WD_HANDSHAKE_S};
        if (send_challenge(c))
            p->n++;
        else
            close_line(&c->l);
    }
}

/* A HELLO in c->l.in: the line becomes its rank's when its MAC proves the
 * secret under this connection's nonces, and rank 0 proves it back. An
 * earlier proven line of that rank is one it gave up on: the new one
 * replaces it. Returns 1 when the line was taken (the caller keeps no fd). */
static int admit(struct fb_wd_channel *ch, struct caller *c, const uint8_t *secret)
{
    const struct fb_wd_frame *f = &c->l.in;
    int r = f->m.rank;
    uint8_t key[FB_WD_KEY_LEN];
    if (f->m.kind != FB_WD_HELLO || r <= 0 || r >= ch->nlines)
        return 0;
    fb_wd_session_key(secret, c->nonce0, f->nonce, r, key);
    struct fb_wd_frame welcome = {0};
    welcome.m.kind = FB_WD_WELCOME;
    welcome.m.rank = r;
    fb_wd_seal(&welcome, key, FB_WD_FROM_RANK0, 0);
    int proven = fb_wd_unseal(f, key, FB_WD_TO_RANK0, 0) && send_frame(c->l.fd, &welcome);
    if (proven) {
        struct line *l = &ch->lines[r];
        close_line(l);
        *l = (struct line){.fd = c->l.fd, .sent = 1, .received = 1};
        memcpy(l->key, key, sizeof key);
        c->l.fd = -1;
    }
    explicit_bzero(key, sizeof key);
    explicit_bzero(&welcome, sizeof welcome);
    return proven;
}

/* Reads greetings on the callers poll saw; each one that is whole is
 * admitted or dropped, and the caller leaves the table either way. From the
 * end, so that the caller moved into a freed place was already seen. */
static void take_greetings(struct fb_wd_channel *ch, struct pending *p, const struct pollfd *pf, const uint8_t *secret)
{
    for (int i = p->n - 1; i >= 0; i--) {
        if (pf[i].revents == 0)
            continue;
        int closed;
        if (read_frame(&p->c[i].l, &closed)) {
            admit(ch, &p->c[i], secret);
            closed = 1;
        }
        if (closed)
            drop_caller(p, i);
    }
}

static void drop_expired(struct pending *p, double now)
{
    for (int i = p->n - 1; i >= 0; i--)
        if (now > p->c[i].until)
            drop_caller(p, i);
}

static int ranks_missing(const struct fb_wd_channel *ch)
{
    int n = 0;
    for (int r = 1; r < ch->nlines; r++)
        n += ch->lines[r].fd < 0;
    return n;
}

/* Rank 0: takes connections until every rank proved who it is, or the
 * ranks agreed (req) that one cannot, or the bound passes. Without req
 * (the env launch: NCCL has no test for a pending reduction) until every
 * rank is in or the bound passes. */
static void accept_ranks(struct fb_wd_channel *ch, int lfd, const uint8_t *secret, MPI_Request *req, const int *worst,
                         double deadline)
{
    int agreed = 0;
    struct pending p = {.cap = ch->nlines + FB_WD_PENDING_SPARE};
    p.c = calloc((size_t)p.cap, sizeof *p.c);
    struct pollfd *pf = calloc((size_t)p.cap + 1, sizeof *pf);
    if (p.c == NULL || pf == NULL)
        deadline = 0; /* out of memory: the ranks are reported missing */
    while (fb_now() < deadline) {
        for (int i = 0; i < p.n; i++)
            pf[i] = (struct pollfd){.fd = p.c[i].l.fd, .events = POLLIN};
        pf[p.n] = (struct pollfd){.fd = lfd, .events = POLLIN};
        if (poll(pf, (nfds_t)p.n + 1, 50) > 0) {
            int listener = pf[p.n].revents != 0;
            take_greetings(ch, &p, pf, secret);
            if (listener)
                take_new(lfd, &p, fb_now());
        }
        drop_expired(&p, fb_now());
        if (!agreed && req != NULL)
            MPI_Test(req, &agreed, MPI_STATUS_IGNORE);
        if ((agreed && *worst != FB_OK) || ((agreed || req == NULL) && ranks_missing(ch) == 0))
            break;
    }
    while (p.n > 0)
        drop_caller(&p, p.n - 1);
    free(p.c);
    free(pf);
    if (!agreed && req != NULL)
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

struct fb_wd_channel *fb_wd_roll_take(int lfd, int size, const uint8_t secret[FB_WD_KEY_LEN], double deadline)
{
    struct fb_wd_channel *ch = calloc(1, sizeof *ch);
    if (ch == NULL || (ch->lines = calloc((size_t)size, sizeof *ch->lines)) == NULL) {
        free(ch);
        return NULL;
    }
    ch->nlines = size;
    for (int i = 0; i < size; i++)
        ch->lines[i].fd = -1;
    accept_ranks(ch, lfd, secret, NULL, NULL, deadline);
    return ch;
}

int fb_wd_channel_has(const struct fb_wd_channel *ch, int r) { return r == 0 || ch->lines[r].fd >= 0; }

int fb_wd_hear(int fd, const uint8_t key[FB_WD_KEY_LEN], double deadline, struct fb_wd_msg *m)
{
    struct line l = {.fd = fd};
    int closed = 0, got = 0;
    while (!got && !closed) {
        double left = deadline - fb_now();
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (left <= 0 || poll(&p, 1, (int)(left * 1000) + 1) <= 0)
            break;
        got = read_frame(&l, &closed);
    }
    close_line(&l);
    if (!got)
        return closed ? -1 : 0;
    if (!fb_wd_unseal(&l.in, key, FB_WD_FROM_RANK0, 1))
        return -1;
    fb_wd_msg_clean(&l.in.m);
    *m = l.in.m;
    return 1;
}

/* The env launch: rank 0's contact (its secret wiped) to every rank, and
 * each rank's own copy of the secret from the launcher. */
static void open_env_contact(const struct fb_world *w, struct contact *c, struct fb_err *err)
{
    uint8_t secret[FB_WD_KEY_LEN];
    memcpy(secret, c->secret, sizeof secret);
    explicit_bzero(c->secret, sizeof c->secret);
    fb_coord_bcast(w, c, sizeof *c, 0);
    if (w->rank == 0)
        memcpy(c->secret, secret, sizeof secret);
    else if (c->status == FB_OK && err->code == FB_OK)
        fb_job_secret(c->secret, err);
    explicit_bzero(secret, sizeof secret);
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
        c.status = (int32_t)rank0_listen(w, &c, &lfd, err);
    if (w->nccl != NULL) /* the env launch: each rank has the secret from the launcher; it never travels */
        open_env_contact(w, &c, err);
    else
        MPI_Bcast(&c, sizeof c, MPI_BYTE, 0, w->comm);
    if (c.status == FB_OK) {
        int mine = (int)err->code, worst = 0;
        if (mine == FB_OK && w->rank != 0)
            mine = (int)connect_to_rank0(ch, &c, err);
        MPI_Request req;
        if (w->nccl == NULL)
            MPI_Iallreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, w->comm, &req);
        if (w->rank == 0 && ch != NULL)
            accept_ranks(ch, lfd, c.secret, w->nccl ? NULL : &req, &worst,
                         fb_now() + FB_WD_CONNECT_S + ACCEPT_MARGIN_S);
        else if (w->nccl == NULL)
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (w->nccl != NULL) {
            worst = mine;
            fb_coord_allreduce(w, &worst, 1, FB_CDT_INT, FB_COP_MAX);
        }
        if (w->rank == 0 && ch != NULL && worst == FB_OK)
            report_missing(ch, err);
    }
    /* Every line has its own key now: the secret is of no further use, and
     * the listener closes, so no connection is taken from now on. */
    explicit_bzero(&c, sizeof c);
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
        close_line(&ch->lines[i]);
    free(ch->lines);
    free(ch);
}

/* 1: all of the queued record has left; 0: some is still to go. */
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
    struct line *l = &ch->lines[0];
    if (!flush_out(ch))
        return 0;
    memset(&ch->out, 0, sizeof ch->out);
    ch->out.m = *m;
    fb_wd_seal(&ch->out, l->key, FB_WD_TO_RANK0, l->sent++);
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
    for (int r = 1; r < ch->nlines; r++) {
        struct line *l = &ch->lines[r];
        if (l->fd < 0)
            continue;
        struct fb_wd_frame f = {.m = *m};
        fb_wd_seal(&f, l->key, FB_WD_FROM_RANK0, l->sent++);
        if (!send_frame(l->fd, &f))
            continue; /* that rank's line is full or gone: it ends on its own bound */
    }
}

/* What a proven peer may send: heartbeats and its last word to rank 0,
 * the order to end to the others. */
static int kind_expected(const struct fb_wd_channel *ch, int32_t kind)
{
    if (ch->w->rank == 0)
        return kind == FB_WD_HEARTBEAT || kind == FB_WD_DONE;
    return kind == FB_WD_ABORT;
}

/* The record in l->in: 1 to hand on, 0 to pass over (a kind that does not
 * travel this way), -1 when it fails its check: the line is then closed,
 * since only something other than the peer wrote it. */
static int check_record(struct fb_wd_channel *ch, struct line *l)
{
    enum fb_wd_dir dir = ch->w->rank == 0 ? FB_WD_TO_RANK0 : FB_WD_FROM_RANK0;
    if (!fb_wd_unseal(&l->in, l->key, dir, l->received)) {
        close_line(l);
        return -1;
    }
    l->received++;
    fb_wd_msg_clean(&l->in.m);
    return kind_expected(ch, l->in.m.kind);
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
            struct line *l = &ch->lines[i];
            int from = ch->w->rank == 0 ? i : 0, closed = 0, v = 0;
            if (pf[i].revents == 0 || l->fd < 0)
                continue;
            while (v >= 0 && read_frame(l, &closed))
                if ((v = check_record(ch, l)) > 0)
                    on_msg(ctx, from, &l->in.m);
            if (closed || v < 0)
                on_msg(ctx, from, NULL);
        }
    }
    if (pf != stack)
        free(pf);
}
