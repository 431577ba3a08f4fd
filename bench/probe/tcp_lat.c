/* TCP ping-pong latency on stream 0 of a link: the initiator times the
 * round trips, busy polling like ib_write_lat. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "core/clock.h"
#include "probe/tcp.h"

/* First byte of a ping: 0 for a measured one, 1 ends a duration run. */
enum { PING = 0, STOP = 1 };

static enum fb_status move_all(struct probe_tcp_flow *f, int writing, size_t len, double timeout,
                               const volatile sig_atomic_t *stop, struct fb_err *err)
{
    size_t done = 0;
    double last = fb_now();
    while (done < len) {
        ssize_t n = writing ? send(f->fds[0], f->buf + done, len - done, MSG_NOSIGNAL)
                            : recv(f->fds[0], f->buf + done, len - done, 0);
        if (n > 0) {
            done += (size_t)n;
            last = fb_now();
            continue;
        }
        if (n == 0)
            return fb_fail(err, FB_ERR_RUNTIME, "%s closed the connection of link %d",
                           f->peer_name, f->link);
        if (errno != EAGAIN && errno != EINTR)
            return fb_fail(err, FB_ERR_RUNTIME, "%s on link %d with %s failed: %s",
                           writing ? "send" : "recv", f->link, f->peer_name, strerror(errno));
        /* Busy polling like ib_write_lat; time checked now and then. */
        double now = fb_now();
        if (now - last > timeout)
            return fb_fail(err, FB_ERR_TIMEOUT,
                           "%s stopped answering for %.0f s on link %d; check that host or raise "
                           "--timeout", f->peer_name, timeout, f->link);
        enum fb_status st = probe_stopped(stop, err);
        if (st != FB_OK)
            return st;
    }
    return FB_OK;
}

enum fb_status probe_tcp_lat(struct probe_tcp_flow *f, const struct probe_size_spec *r,
                             int initiator, struct probe_measure *out, struct fb_err *err)
{
    memset(out, 0, sizeof *out);
    out->link = f->link;
    out->size = r->size;
    long total = r->iters ? r->warmup + r->iters : -1;
    struct probe_rtt_log log = {0};
    if (initiator && probe_rtt_reserve(&log, r->iters ? r->iters : 1 << 16) != 0)
        return fb_fail(err, FB_ERR_MEMORY, "out of memory for latency samples");
    double t_first = fb_now(), t_last = t_first, stop_at = INFINITY;
    enum fb_status st = FB_OK;
    for (long i = 0; st == FB_OK && (total < 0 || i < total); i++) {
        if (!initiator) {
            st = move_all(f, 0, r->size, r->timeout, r->stop, err);
            if (st == FB_OK && f->buf[0] == STOP)
                break;
            if (st == FB_OK)
                st = move_all(f, 1, r->size, r->timeout, r->stop, err);
            continue;
        }
        if (i == r->warmup) {
            t_first = fb_now();
            if (!r->iters)
                stop_at = t_first + r->duration;
        }
        double t0 = fb_now();
        if (t0 >= stop_at) {
            f->buf[0] = STOP;
            st = move_all(f, 1, r->size, r->timeout, r->stop, err);
            break;
        }
        f->buf[0] = PING;
        st = move_all(f, 1, r->size, r->timeout, r->stop, err);
        if (st == FB_OK)
            st = move_all(f, 0, r->size, r->timeout, r->stop, err);
        t_last = fb_now();
        if (st == FB_OK && i >= r->warmup && probe_rtt_push(&log, t_last - t0) != 0) {
            st = fb_fail(err, FB_ERR_MEMORY, "out of memory for latency samples; use -n");
            break;
        }
    }
    if (st == FB_OK && initiator)
        probe_latency_finish(out, &log, r->size, t_first, t_last, r->interval);
    probe_rtt_free(&log);
    return st;
}
