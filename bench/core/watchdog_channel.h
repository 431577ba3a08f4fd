/* The watchdog's own line between every rank and rank 0: plain TCP, set up
 * once before the sweep, so that heartbeats and the order to stop never go
 * through MPI. MPI then runs at MPI_THREAD_SINGLE, where Open MPI takes no
 * locks on the path of each operation.
 *
 * Rank 0 draws the job's secret (getrandom(2)) and listens on an ephemeral
 * port of every IPv4 address; the secret, the port and rank 0's addresses
 * go to the other ranks with MPI_Bcast, never through the command line or
 * the environment. Each rank connects (rank 0's host: loopback first; else
 * the address on a subnet of its own first; all tried at once) and proves
 * it holds the secret (core/watchdog_wire.h); rank 0 proves it back. Only
 * a proven connection takes a rank's line, and every record on it is
 * checked (MAC, sequence number) before it counts. A connection that has
 * not proven itself within FB_WD_HANDSHAKE_S is dropped, and at most
 * size + FB_WD_PENDING_SPARE of them wait at once (the oldest goes first),
 * so a stranger's connections, silent or not, change nothing. The listener
 * closes once every rank is in; the secret is wiped then.
 *
 * FB_WATCHDOG_ADDR=HOST[:PORT] names the address (and port) to connect to
 * instead, for hosts whose own addresses are not the ones the others reach.
 * IPv4 only (see fb_wd_parse_addr). Records are fixed-size frames between
 * builds of the same program (a job's ranks run one binary). */
#ifndef FB_CORE_WATCHDOG_CHANNEL_H
#define FB_CORE_WATCHDOG_CHANNEL_H

#include <netinet/in.h>
#include <stdint.h>

#include "core/watchdog_wire.h"
#include "core/world.h"

#define FB_WD_CONNECT_S 10.0  /* bound on reaching rank 0 at start */
#define FB_WD_HANDSHAKE_S 2.0 /* bound on a connection's proof, each side */
#define FB_WD_PENDING_SPARE 128 /* unproven connections rank 0 holds beyond one per rank */
#define FB_WD_ADDR_ENV "FB_WATCHDOG_ADDR"

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

/* Waits up to `seconds` for input and hands every whole message that
 * passes its check to `on_msg` (`from`: the sender's rank, 0 on the other
 * ranks), its strings cleaned (fb_wd_msg_clean). A peer whose line closed,
 * or on whose line a record failed its check (only something other than the
 * peer writes such a record), is reported once with a NULL message. */
void fb_wd_channel_poll(struct fb_wd_channel *ch, double seconds, fb_wd_on_msg on_msg, void *ctx);

/* A rank's side of the handshake, without MPI: connects to the `n`
 * addresses at once and keeps the first connection whose peer proves it
 * holds `secret` (a listener that does not is dropped, whatever it says).
 * Returns the connection with its key in `key`, or -1 after `seconds` or
 * as soon as no address takes a connection, with the last reason in `why`.
 * The line's own sequence numbers start at 1 each way. */
int fb_wd_dial(const struct sockaddr_in *addrs, int n, const uint8_t secret[FB_WD_KEY_LEN], int32_t rank,
               double seconds, uint8_t key[FB_WD_KEY_LEN], char *why, size_t why_len);

/* The env launch's roll call before NCCL's set-up (core/world_env.h),
 * on the same handshake. Rank 0: takes connections on the listening
 * socket `lfd` until ranks 1..size-1 have each proven they hold `secret`,
 * or `deadline` (fb_now) passes; NULL when out of memory. The channel's
 * lines are the proven ranks' (fb_wd_channel_has); fb_wd_channel_tell_all
 * then tells them the count, fb_wd_channel_close ends it. */
struct fb_wd_channel *fb_wd_roll_take(int lfd, int size, const uint8_t secret[FB_WD_KEY_LEN], double deadline);

/* Rank 0: whether rank r's line is open (rank 0's own: always). */
int fb_wd_channel_has(const struct fb_wd_channel *ch, int r);

/* A rank, on the connection fb_wd_dial returned: rank 0's first record
 * after its WELCOME, by `deadline`; the connection is closed then. 1 with
 * it in `m` (cleaned), 0 when none came in time, -1 when the line closed
 * or the record failed its check. */
int fb_wd_hear(int fd, const uint8_t key[FB_WD_KEY_LEN], double deadline, struct fb_wd_msg *m);

/* Parses HOST[:PORT] (PORT 1-65535; 0 when absent). IPv6 addresses are
 * refused with a usage error that says so: the channel is IPv4 only, since
 * rank 0 offers its addresses in a fixed IPv4 record (address and netmask,
 * for the ranks to pick one on a subnet of their own) and the clusters it
 * serves carry MPI's own TCP traffic over IPv4 (Open MPI builds without
 * IPv6 unless configured with it). */
enum fb_status fb_wd_parse_addr(const char *value, char *host, size_t host_len, int *port,
                                struct fb_err *err);

#endif
