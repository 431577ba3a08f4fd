/* A bound on every wait of an MPI job, and a report that says who is
 * missing when one expires.
 *
 * Each rank runs a watchdog thread. The main thread arms it with a deadline
 * and a description before anything that can block (a collective, a stream
 * synchronisation, a barrier) and ticks it as it goes. The thread sends rank
 * 0 a heartbeat every second with the rank's position, over the watchdog's
 * own TCP channel (core/watchdog_channel.h), never through MPI: MPI can run
 * at MPI_THREAD_SINGLE and its operations cost what they cost without a
 * watchdog. Rank 0 therefore knows which ranks stopped answering (killed,
 * SIGSTOPped, cut off) and which are merely behind. When a deadline passes,
 * rank 0 prints one block naming the operation, the iteration and the
 * missing ranks and hosts, lets the program record the fault in its
 * results, orders the other ranks over the channel to end (each runs the
 * hook too) and exits with the timeout code; the launcher ends what is left.
 * If rank 0 itself is the one that stopped, the other ranks do it after a
 * grace period.
 *
 * The thread also owns SIGINT and SIGTERM: the program's fault hook runs
 * (results flushed, marked incomplete) and the process exits 130 or 143. */
#ifndef FB_CORE_WATCHDOG_H
#define FB_CORE_WATCHDOG_H

#include "core/world.h"

struct fb_watchdog;

/* Called from the watchdog thread, at most once, before the process ends:
 * record the fault (code is FB_ERR_TIMEOUT, FB_EXIT_SIGINT or
 * FB_EXIT_SIGTERM), flush results. Must not call MPI. */
typedef void (*fb_fault_hook)(void *ctx, enum fb_status code, const char *message);

/* Blocks SIGINT and SIGTERM in the calling thread and every thread it
 * starts later. Call it first thing in main, before MPI_Init starts MPI's own
 * threads, so that only the watchdog ever receives them. */
void fb_signals_block(void);
void fb_signals_unblock(void);

/* Collective. Opens the channel (FB_ERR_USAGE for a malformed
 * FB_WATCHDOG_ADDR, FB_ERR_RUNTIME when a rank cannot reach rank 0; every
 * rank returns the same status) and starts the watchdog thread (see
 * fb_signals_block). */
enum fb_status fb_watchdog_start(struct fb_watchdog **wd, const struct fb_world *w,
                                 fb_fault_hook hook, void *ctx, struct fb_err *err);

/* Stops the thread and closes the channel; a rank other than 0 first says
 * it is done, so that rank 0, perhaps still writing results, does not take
 * its silence for a stop. Not collective. */
void fb_watchdog_stop(struct fb_watchdog *wd);

/* Main thread: the next wait must end within `seconds`. `step` is this
 * rank's position in the run (monotonic, the same numbering on every rank),
 * `what` describes it ("all_reduce 64M out-of-place"). NULL wd is a no-op. */
void fb_watchdog_arm(struct fb_watchdog *wd, double seconds, long step, const char *what);

/* Main thread: the iteration within the armed step (for the report).
 * `phase` must be a string literal: only the pointer is kept. Lock-free, so
 * it can sit inside a timed loop. Ticks are counted too: when a deadline
 * passes, the rank with the fewest ticks in the step (or the fewest steps)
 * is the one the others wait for, and the timeout is laid at it. */
void fb_watchdog_tick(struct fb_watchdog *wd, long iteration, const char *phase);

void fb_watchdog_disarm(struct fb_watchdog *wd);

/* Main thread, before it ends the job over a failure of its own: when the
 * watchdog is already ending it (a timeout, rank 0's order, a signal), the
 * failure may be that end's doing (its hook aborted a communicator the
 * main thread waited in), and the watchdog's exit code and report are the
 * ones to keep: waits for the thread to exit the process. Returns at once
 * otherwise, or with a NULL wd. */
void fb_watchdog_let_end(struct fb_watchdog *wd);

/* The bound for moving `bytes` `ops` times when the slowest plausible
 * bandwidth is `floor_Bps`: a fixed allowance for first contact (NCCL sets
 * up connections lazily) plus four times the transfer time. */
double fb_watchdog_bound(double ops, double bytes, double floor_Bps);

#endif
