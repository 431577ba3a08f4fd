/* The watchdog's own line between every rank and rank 0: plain TCP, set up
 * once before the sweep, so that heartbeats and the order to stop never go
 * through MPI. MPI then runs at MPI_THREAD_SINGLE, where Open MPI takes no
 * locks on the path of each operation.
 *
 * Rank 0 listens on an ephemeral port of every address; the port and rank
 * 0's IPv4 addresses go to the other ranks with MPI_Bcast; each rank
 * connects once (rank 0's host: loopback first; else the address on a
 * subnet of its own first; all tried at once, the first to answer kept)
 * and says who it is. FB_WATCHDOG_ADDR=HOST[:PORT] names the address (and
 * port) to connect to instead, for hosts whose own addresses are not the
 * ones the others reach. Messages are fixed-size records between builds of
 * the same program (a job's ranks run one binary). */
#ifndef FB_CORE_WATCHDOG_CHANNEL_H
#define FB_CORE_WATCHDOG_CHANNEL_H

#include <stdint.h>

#include "core/world.h"

#define FB_WD_CONNECT_S 10.0 /* bound on reaching rank 0 at start */
#define FB_WD_ADDR_ENV "FB_WATCHDOG_ADDR"

enum fb_wd_kind {
    FB_WD_HELLO = 1,     /* rank -> 0, once, on connecting */
    FB_WD_HEARTBEAT = 2, /* rank -> 0, every second */
    FB_WD_DONE = 3,      /* rank -> 0, last: the rank ended normally */
    FB_WD_ABORT = 4,     /* 0 -> rank: the job ends now (timeout) */
};

struct fb_wd_msg {
    uint32_t magic;
    int32_t kind, rank, expired;
    int64_t step, iteration;
    int64_t ticks;  /* fb_watchdog_tick calls since the step was armed */
    double elapsed; /* seconds since the step was armed */
    char phase[16];
    char what[96];
};

struct fb_wd_channel;

/* Collective; every rank returns the same status (rank 0's err holds the
 * message of the lowest failing rank): FB_ERR_USAGE for a malformed
 * FB_WATCHDOG_ADDR, FB_ERR_RUNTIME when a rank cannot reach rank 0 within
 * FB_WD_CONNECT_S or a socket call fails. */
enum fb_status fb_wd_channel_open(struct fb_wd_channel **ch, const struct fb_world *w, struct fb_err *err);
void fb_wd_channel_close(struct fb_wd_channel *ch);

/* Rank != 0: queues one message to rank 0 without blocking. Returns 0 when
 * the previous one has not left yet (rank 0 is not reading: that is news
 * the silence carries) and nothing was queued. */
int fb_wd_channel_send(struct fb_wd_channel *ch, const struct fb_wd_msg *m);

/* Rank != 0: sends what is queued and `m`, waiting at most `seconds`. */
void fb_wd_channel_send_last(struct fb_wd_channel *ch, const struct fb_wd_msg *m, double seconds);

/* Rank 0: `m` to every connected rank, best effort, without blocking. */
void fb_wd_channel_tell_all(struct fb_wd_channel *ch, const struct fb_wd_msg *m);

typedef void (*fb_wd_on_msg)(void *ctx, int from, const struct fb_wd_msg *m);

/* Waits up to `seconds` for input and hands every whole message in to
 * `on_msg` (`from`: the sender's rank, 0 on the other ranks). A peer whose
 * line closed is reported once with a NULL message. */
void fb_wd_channel_poll(struct fb_wd_channel *ch, double seconds, fb_wd_on_msg on_msg, void *ctx);

/* Parses HOST[:PORT] (PORT 1-65535; 0 when absent). */
enum fb_status fb_wd_parse_addr(const char *value, char *host, size_t host_len, int *port,
                                struct fb_err *err);

#endif
