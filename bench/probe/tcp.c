/* TCP set-up: interfaces, listeners, connections and their greeting. */
#include "probe/tcp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/rootfs.h"
#include "core/text.h"
#include "probe/devsel.h"
#include "probe/sysfs.h"

#define IFACES_MAX 64

/* One route of /proc/net/route: 1 when it is the default route and up. */
static int is_default_route(const char *line, size_t n, char *ifname, size_t len)
{
    char copy[512], name[IF_NAMESIZE + 1];
    unsigned long dest = 1, mask = 1;
    unsigned flags = 0;
    fb_copy(copy, sizeof copy, line, n);
    /* Iface Destination Gateway Flags RefCnt Use Metric Mask ... (hex) */
    if (sscanf(copy, "%16s %lx %*x %x %*d %*d %*d %lx", name, &dest, &flags, &mask) != 4)
        return 0;
    if (dest != 0 || mask != 0 || !(flags & 0x1) /* RTF_UP */)
        return 0;
    snprintf(ifname, len, "%s", name);
    return 1;
}

int probe_tcp_default_route_iface(const char *root, char *name, size_t len)
{
    char *text = NULL;
    struct fb_err ignored = {0};
    if (fb_rootfs_read(root, "/proc/net/route", &text, &ignored) != FB_OK)
        return -1;
    int found = -1;
    size_t pos = 0, n = 0, tlen = strlen(text);
    const char *line = NULL;
    while (found != 0 && fb_next_line(text, tlen, &pos, &line, &n))
        if (is_default_route(line, n, name, len))
            found = 0;
    free(text);
    return found;
}

struct iface {
    char name[IF_NAMESIZE + 1];
    struct in_addr addr;
    int loopback;
};

/* Up interfaces with an IPv4 address (the first address of each). */
static int list_ifaces(struct iface *out, int cap)
{
    struct ifaddrs *all = NULL;
    if (getifaddrs(&all) != 0)
        return -1;
    int n = 0;
    for (struct ifaddrs *a = all; a != NULL && n < cap; a = a->ifa_next) {
        if (a->ifa_addr == NULL || a->ifa_addr->sa_family != AF_INET || !(a->ifa_flags & IFF_UP))
            continue;
        int dup = 0;
        for (int i = 0; i < n; i++)
            dup |= strcmp(out[i].name, a->ifa_name) == 0;
        if (dup)
            continue;
        snprintf(out[n].name, sizeof out[n].name, "%s", a->ifa_name);
        out[n].addr = ((struct sockaddr_in *)a->ifa_addr)->sin_addr;
        out[n].loopback = (a->ifa_flags & IFF_LOOPBACK) != 0;
        n++;
    }
    freeifaddrs(all);
    return n;
}

static const struct iface *find_iface(const struct iface *v, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(v[i].name, name) == 0)
            return &v[i];
    return NULL;
}

static const struct iface *default_iface(const struct iface *v, int n, int single_host)
{
    const struct iface *best = NULL;
    char route[IF_NAMESIZE + 1];
    if (single_host)
        for (int i = 0; i < n; i++)
            if (v[i].loopback)
                return &v[i];
    if (probe_tcp_default_route_iface("", route, sizeof route) == 0 &&
        (best = find_iface(v, n, route)) != NULL)
        return best;
    /* The first by name in version order (eth2 before eth10), as devices
     * are ordered everywhere else. */
    for (int i = 0; i < n; i++)
        if (!v[i].loopback && (best == NULL || strverscmp(v[i].name, best->name) < 0))
            best = &v[i];
    return best;
}

static void fill_endpoint(const struct iface *i, struct probe_endpoint *ep)
{
    snprintf(ep->device, sizeof ep->device, "%.*s", IF_NAMESIZE, i->name);
    inet_ntop(AF_INET, &i->addr, ep->address, sizeof ep->address);
    snprintf(ep->link_layer, sizeof ep->link_layer, "%s", i->loopback ? "loopback" : "Ethernet");
    snprintf(ep->port_state, sizeof ep->port_state, "UP");
    ep->mtu = (int)probe_sysfs_net_mtu("", i->name);
    long mbps = probe_sysfs_net_speed_mbps("", i->name);
    ep->line_rate_gbps = mbps > 0 ? (double)mbps / 1000.0 : 0.0;
    if (mbps > 0)
        snprintf(ep->rate, sizeof ep->rate, "%ld Mb/s", mbps);
    ep->numa_node = probe_sysfs_numa_node("", "net", i->name);
    probe_sysfs_pci_address("", "net", i->name, ep->pci_bus_id, sizeof ep->pci_bus_id);
}

enum fb_status probe_tcp_pick_iface(const struct probe_tcp_cfg *cfg, int local_rank,
                                    int local_size, int single_host, const char *host,
                                    struct in_addr *addr, struct probe_endpoint *ep,
                                    struct fb_err *err)
{
    struct iface v[IFACES_MAX];
    int n = list_ifaces(v, IFACES_MAX);
    if (n < 0)
        return fb_fail(err, FB_ERR_RUNTIME, "cannot list network interfaces: %s", strerror(errno));
    const struct iface *pick = NULL;
    if (cfg->ifaces != NULL && *cfg->ifaces != '\0') {
        const char *names[IFACES_MAX];
        char described[IFACES_MAX][IF_NAMESIZE + 24];
        for (int i = 0; i < n; i++)
            names[i] = v[i].name;
        char name[IF_NAMESIZE + 1];
        if (probe_pick_device(names, n, cfg->ifaces, local_rank, local_size, "interface",
                              "--iface", host, name, sizeof name, err) != FB_OK) {
            /* Rephrase with addresses: the list is what the user needs. */
            const char *desc[IFACES_MAX];
            for (int i = 0; i < n; i++) {
                char a[INET_ADDRSTRLEN];
                inet_ntop(AF_INET, &v[i].addr, a, sizeof a);
                snprintf(described[i], sizeof described[i], "%s (%s)", v[i].name, a);
                desc[i] = described[i];
            }
            char have[1024];
            fb_join_names(desc, (size_t)n, "none", have, sizeof have);
            char why[FB_ERR_MSG_MAX];
            snprintf(why, sizeof why, "%.500s; interfaces with an IPv4 address: %.480s", err->msg, have);
            snprintf(err->msg, sizeof err->msg, "%s", why);
            return err->code;
        }
        pick = find_iface(v, n, name);
    } else {
        pick = default_iface(v, n, single_host);
        if (pick == NULL)
            return fb_fail(err, FB_ERR_USAGE,
                           "%s has no network interface with an IPv4 address that is up; bring "
                           "one up or name it with --iface", host);
    }
    *addr = pick->addr;
    fill_endpoint(pick, ep);
    return FB_OK;
}

static void set_buffers(int fd, const struct probe_tcp_cfg *cfg)
{
    if (cfg->sock_buf > 0) {
        int v = (int)cfg->sock_buf;
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof v);
    }
}

static void set_nonblocking_nodelay(int fd, int nodelay)
{
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    int one = 1;
    if (nodelay)
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

enum fb_status probe_tcp_listen(struct in_addr addr, const struct probe_tcp_cfg *cfg, int *fd,
                                uint16_t *port, struct fb_err *err)
{
    *fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (*fd < 0)
        return fb_fail(err, FB_ERR_RUNTIME, "socket() failed: %s", strerror(errno));
    set_buffers(*fd, cfg); /* inherited by accepted sockets, before the window is set */
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr = addr, .sin_port = 0};
    socklen_t sl = sizeof sa;
    if (bind(*fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(*fd, cfg->streams + 8) != 0 ||
        getsockname(*fd, (struct sockaddr *)&sa, &sl) != 0) {
        char a[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &addr, a, sizeof a);
        int e = errno;
        close(*fd);
        *fd = -1;
        return fb_fail(err, FB_ERR_RUNTIME, "cannot listen on %s: %s", a, strerror(e));
    }
    *port = ntohs(sa.sin_port);
    return FB_OK;
}

/* poll() one fd for `events` until the deadline; 0 ready, -1 timeout. The
 * progress hook runs every millisecond meanwhile: MPI messages other ranks
 * are waiting for must keep moving while this rank waits on a socket. */
static int wait_fd(const struct probe_tcp_cfg *cfg, int fd, short events, double deadline)
{
    for (;;) {
        double left = deadline - fb_now();
        if (left <= 0)
            return -1;
        if (cfg->progress != NULL)
            cfg->progress(cfg->progress_arg);
        struct pollfd p = {.fd = fd, .events = events};
        int rc = poll(&p, 1, cfg->progress != NULL ? 1 : left > 0.1 ? 100 : (int)(left * 1000) + 1);
        if (rc > 0)
            return 0;
        if (rc < 0 && errno != EINTR)
            return 0; /* let the following call report the error */
    }
}

static enum fb_status connect_one(struct in_addr local, const struct probe_tcpinfo *peer,
                                  const struct probe_tcp_cfg *cfg, double deadline,
                                  const char *peer_name, int *out, struct fb_err *err)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return fb_fail(err, FB_ERR_RUNTIME, "socket() failed: %s", strerror(errno));
    set_buffers(fd, cfg);
    struct sockaddr_in src = {.sin_family = AF_INET, .sin_addr = local, .sin_port = 0};
    struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons(peer->port)};
    memcpy(&dst.sin_addr, peer->ipv4, 4);
    char a[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &dst.sin_addr, a, sizeof a);
    int rc = bind(fd, (struct sockaddr *)&src, sizeof src);
    if (rc == 0)
        rc = connect(fd, (struct sockaddr *)&dst, sizeof dst);
    if (rc != 0 && errno == EINPROGRESS) {
        if (wait_fd(cfg, fd, POLLOUT, deadline) != 0) {
            close(fd);
            return fb_fail(err, FB_ERR_TIMEOUT,
                           "connecting to %s at %s:%u timed out; is that address reachable from "
                           "here (routing, firewall)? choose another with --iface", peer_name, a,
                           peer->port);
        }
        socklen_t el = sizeof rc;
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &rc, &el);
        errno = rc;
    }
    if (rc != 0) {
        int e = errno;
        close(fd);
        return fb_fail(err, FB_ERR_RUNTIME, "cannot connect to %s at %s:%u: %s; choose a reachable "
                       "interface with --iface", peer_name, a, peer->port, strerror(e));
    }
    *out = fd;
    return FB_OK;
}

static enum fb_status io_all(const struct probe_tcp_cfg *cfg, int fd, void *buf, size_t len,
                             int writing, double deadline, const char *peer_name, const char *what,
                             struct fb_err *err)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = writing ? send(fd, (char *)buf + done, len - done, MSG_NOSIGNAL)
                            : recv(fd, (char *)buf + done, len - done, 0);
        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (n == 0)
            return fb_fail(err, FB_ERR_RUNTIME, "%s closed the connection during %s", peer_name, what);
        if (errno != EAGAIN && errno != EINTR)
            return fb_fail(err, FB_ERR_RUNTIME, "%s with %s failed: %s", what, peer_name,
                           strerror(errno));
        if (wait_fd(cfg, fd, writing ? POLLOUT : POLLIN, deadline) != 0)
            return fb_fail(err, FB_ERR_TIMEOUT, "%s did not answer during %s; check that host or "
                           "raise --timeout", peer_name, what);
    }
    return FB_OK;
}

enum fb_status probe_tcp_connect(struct in_addr local, const struct probe_tcpinfo *peer,
                                 const struct probe_tcp_cfg *cfg, uint32_t link, double timeout,
                                 const char *peer_name, int *fds, struct fb_err *err)
{
    double deadline = fb_now() + timeout;
    for (int s = 0; s < cfg->streams; s++)
        fds[s] = -1;
    for (int s = 0; s < cfg->streams; s++) {
        uint8_t hello[PROBE_HELLO_LEN];
        probe_hello_encode(&(struct probe_hello){link, (uint16_t)s}, hello);
        if (connect_one(local, peer, cfg, deadline, peer_name, &fds[s], err) != FB_OK ||
            io_all(cfg, fds[s], hello, sizeof hello, 1, deadline, peer_name,
                   "the stream greeting", err) != FB_OK)
            return err->code;
        set_nonblocking_nodelay(fds[s], cfg->nodelay);
    }
    return FB_OK;
}

enum fb_status probe_tcp_accept(int lfd, const struct probe_tcp_cfg *cfg, uint32_t link,
                                double timeout, const char *peer_name, int *fds,
                                struct fb_err *err)
{
    double deadline = fb_now() + timeout;
    for (int s = 0; s < cfg->streams; s++)
        fds[s] = -1;
    for (int got = 0; got < cfg->streams; got++) {
        if (wait_fd(cfg, lfd, POLLIN, deadline) != 0)
            return fb_fail(err, FB_ERR_TIMEOUT,
                           "%s did not connect within %.0f s (%d of %d streams arrived); check "
                           "that host and that it can reach this one (--iface)", peer_name,
                           timeout, got, cfg->streams);
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
            return fb_fail(err, FB_ERR_RUNTIME, "accept() failed: %s", strerror(errno));
        uint8_t h[PROBE_HELLO_LEN];
        if (io_all(cfg, fd, h, sizeof h, 0, deadline, peer_name, "the stream greeting", err) != FB_OK) {
            close(fd);
            return err->code;
        }
        struct probe_hello hello;
        if (!probe_hello_decode(h, &hello) || hello.link != link ||
            hello.stream >= cfg->streams || fds[hello.stream] >= 0) {
            close(fd);
            return fb_fail(err, FB_ERR_LAUNCH,
                           "unexpected connection on the listener for link %u (greeting for link "
                           "%u stream %u); is another fabric-rdma using this host?", link,
                           hello.link, hello.stream);
        }
        set_nonblocking_nodelay(fd, cfg->nodelay);
        fds[hello.stream] = fd;
    }
    return FB_OK;
}

void probe_tcp_close_flow(struct probe_tcp_flow *f)
{
    for (int s = 0; s < f->nfd; s++)
        if (f->fds[s] >= 0)
            close(f->fds[s]);
    f->nfd = 0;
}
