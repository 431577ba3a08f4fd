/* The env launch's roll call (core/world_env.h): before NCCL's set-up,
 * rank 0 listens at the bootstrap address itself and counts the ranks
 * that prove they hold the job's secret (the watchdog channel's handshake,
 * core/watchdog_wire.h, so a stranger's connections count for nothing);
 * then it tells each of them how many joined. NCCL says nothing of who
 * joined its bootstrap, so this is how every process that started can say
 * "k of N ranks joined". When all did, rank 0 closes the port and NCCL's
 * root takes it (SO_REUSEADDR on both sides: the roll call's connections
 * may linger in TIME_WAIT); the others' NCCL retries until it listens. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/watchdog_channel.h"
#include "core/world_env.h"

#define REDIAL_S 0.2 /* between a rank's tries to reach rank 0 */

struct roll {
    const struct fb_env_launch *l;
    double deadline;
    char host[FB_HOST_MAX]; /* the bootstrap's host, IPv4 */
    int port;
    uint8_t secret[FB_WD_KEY_LEN];
    char who[160]; /* "rank 1 of 3 (RANK=1, WORLD_SIZE=3)" */
};

/* HOST:PORT of an IPv4 host or a name; 0 when it is not (an IPv6 address:
 * NCCL alone then, as the channel is IPv4 only). */
static int split_bootstrap(struct roll *r)
{
    const char *b = r->l->bootstrap, *colon = strrchr(b, ':');
    size_t n = colon ? (size_t)(colon - b) : 0;
    if (n == 0 || n >= sizeof r->host || memchr(b, ':', n) != NULL || b[0] == '[')
        return 0;
    memcpy(r->host, b, n);
    r->host[n] = '\0';
    r->port = atoi(colon + 1);
    return r->port > 0 && r->port < 65536;
}

/* The bootstrap host's IPv4 addresses; the count, 0 with `why` set. */
static int resolve(const struct roll *r, struct sockaddr_in *sa, int max, char *why, size_t why_len)
{
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = getaddrinfo(r->host, NULL, &hints, &res), n = 0;
    if (rc != 0) {
        snprintf(why, why_len, "cannot resolve '%.80s': %s", r->host, gai_strerror(rc));
        return 0;
    }
    for (struct addrinfo *a = res; a != NULL && n < max; a = a->ai_next) {
        sa[n] = *(struct sockaddr_in *)a->ai_addr;
        sa[n++].sin_port = htons((uint16_t)r->port);
    }
    freeaddrinfo(res);
    return n;
}

/* "rank 2", "ranks 2, 5 and 3 more": the ranks not in, in at most `len`
 * bytes. */
static void list_missing(const struct fb_wd_channel *ch, int size, int missing, char *out, size_t len)
{
    size_t used = (size_t)snprintf(out, len, "%s ", missing == 1 ? "rank" : "ranks");
    int listed = 0, left = 0;
    for (int r = 1; r < size; r++) {
        if (fb_wd_channel_has(ch, r))
            continue;
        char one[16];
        int n = snprintf(one, sizeof one, "%s%d", listed ? ", " : "", r);
        if (left == 0 && used + (size_t)n + 16 < len) {
            memcpy(out + used, one, (size_t)n + 1);
            used += (size_t)n;
            listed++;
        } else
            left++;
    }
    if (left > 0)
        snprintf(out + used, len - used, " and %d more", left);
}

static enum fb_status listen_failed(const struct roll *r, int e, struct fb_err *err)
{
    if (e == EADDRINUSE)
        return fb_fail(err, FB_ERR_LAUNCH,
                       "set-up failed: 1 of %d ranks joined (this one): %s cannot serve the bootstrap at %s:%d, "
                       "its port is taken on this host (%s); give MASTER_PORT (or NCCL_COMM_ID) a free port",
                       r->l->size, r->who, r->host, r->port, strerror(e));
    return fb_fail(err, FB_ERR_LAUNCH,
                   "set-up failed: 1 of %d ranks joined (this one): %s cannot serve the bootstrap at %s:%d (%s); "
                   "MASTER_ADDR (or NCCL_COMM_ID) must be an address of rank 0's host that every rank reaches",
                   r->l->size, r->who, r->host, r->port, strerror(e));
}

/* Rank 0: listens at the bootstrap address, counts, tells. */
static enum fb_status call_roll(struct roll *r, struct fb_err *err)
{
    struct sockaddr_in sa;
    char why[160];
    if (resolve(r, &sa, 1, why, sizeof why) == 0)
        return fb_fail(err, FB_ERR_LAUNCH, "set-up failed: %s %s (MASTER_ADDR or NCCL_COMM_ID); give rank 0's "
                       "address", r->who, why);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
    if (fd < 0)
        return fb_fail(err, FB_ERR_RUNTIME, "set-up: socket: %s", strerror(errno));
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 256) != 0) {
        int e = errno;
        close(fd);
        return listen_failed(r, e, err);
    }
    struct fb_wd_channel *ch = fb_wd_roll_take(fd, r->l->size, r->secret, r->deadline);
    close(fd);
    if (ch == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory for the roll call of %d ranks", r->l->size);
    struct fb_wd_msg m = {.kind = FB_WD_ROLL, .iteration = r->l->size};
    for (int i = 0; i < r->l->size; i++)
        m.step += fb_wd_channel_has(ch, i);
    list_missing(ch, r->l->size, r->l->size - (int)m.step, m.what, sizeof m.what);
    fb_wd_channel_tell_all(ch, &m);
    fb_wd_channel_close(ch);
    if (m.step == r->l->size)
        return FB_OK;
    return fb_fail(err, FB_ERR_LAUNCH,
                   "set-up did not complete within %.0f s: %ld of %d ranks joined (missing: %s); %s waited at "
                   "%s:%d; start every rank, and check that each reaches that address", r->l->setup_s, (long)m.step,
                   r->l->size, m.what, r->who, r->host, r->port);
}

/* Another rank: reaches rank 0 by the deadline and hears the count. */
static enum fb_status answer_roll(struct roll *r, struct fb_err *err)
{
    struct sockaddr_in sa[8];
    uint8_t key[FB_WD_KEY_LEN];
    char why[160] = "no answer";
    int fd = -1;
    while (fd < 0 && fb_now() < r->deadline) {
        int n = resolve(r, sa, 8, why, sizeof why);
        if (n > 0)
            fd = fb_wd_dial(sa, n, r->secret, r->l->rank, r->deadline - fb_now(), key, why, sizeof why);
        if (fd < 0)
            poll(NULL, 0, (int)(REDIAL_S * 1000));
    }
    if (fd < 0)
        return fb_fail(err, FB_ERR_LAUNCH,
                       "set-up did not complete within %.0f s: rank 0 was not reached at %s:%d (%s), so how many of "
                       "%d ranks joined is not known; %s: check that rank 0 started and that MASTER_ADDR (or "
                       "NCCL_COMM_ID) is its address", r->l->setup_s, r->host, r->port, why, r->l->size, r->who);
    struct fb_wd_msg m;
    /* Rank 0 counts until its own deadline, a little after this one. */
    int got = fb_wd_hear(fd, key, r->deadline + FB_WD_HANDSHAKE_S, &m);
    explicit_bzero(key, sizeof key);
    if (got != 1 || m.kind != FB_WD_ROLL)
        return fb_fail(err, FB_ERR_LAUNCH,
                       "set-up did not complete within %.0f s: rank 0 at %s:%d took this rank but gave no count "
                       "(%s); %s: rank 0's output says why", r->l->setup_s, r->host, r->port,
                       got == 0 ? "none came in time" : "its line closed", r->who);
    if (m.step == r->l->size)
        return FB_OK;
    return fb_fail(err, FB_ERR_LAUNCH,
                   "set-up did not complete within %.0f s: %ld of %d ranks joined (missing: %s), rank 0 at "
                   "%s:%d says; %s: start every rank, and check that each reaches that address", r->l->setup_s,
                   (long)m.step, r->l->size, m.what, r->host, r->port, r->who);
}

enum fb_status fb_env_roll_call(const struct fb_env_launch *l, double deadline, int *counted, struct fb_err *err)
{
    struct roll r = {.l = l, .deadline = deadline};
    struct fb_err quiet = {0};
    *counted = 0;
    if (l->size == 1 || !split_bootstrap(&r) || fb_job_secret(r.secret, &quiet) != FB_OK)
        return FB_OK; /* NCCL alone; the watchdog says what its secret lacks */
    snprintf(r.who, sizeof r.who, "rank %d of %d (%s=%d, %s=%d)", l->rank, l->size, l->rank_var, l->rank,
             l->size_var, l->size);
    enum fb_status st = l->rank == 0 ? call_roll(&r, err) : answer_roll(&r, err);
    explicit_bzero(r.secret, sizeof r.secret);
    *counted = st == FB_OK;
    return st;
}
