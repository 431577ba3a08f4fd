/* Every wait between ranks is bounded. MPI's blocking calls are not, so the
 * probe talks through nonblocking requests polled against a deadline; a
 * deadline that passes names the rank and host that did not answer. All
 * probe traffic uses its own communicator. */
#ifndef FB_PROBE_COMM_H
#define FB_PROBE_COMM_H

#include <mpi.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "core/world.h"

/* Word that a measurement is moving: a slow link's run may take far longer
 * than any bound set in advance, so every wait on another rank's work ends
 * after --timeout of silence from the job instead. A rank whose transfers
 * complete tells rank 0 every quarter --timeout; rank 0 passes the word on
 * to every rank (its own progress too), so the ranks waiting for a verdict
 * or for a peer's word hear that the job is alive. */
struct probe_alive {
    double period, last_sent;
    int progressed;          /* since the last word sent */
    int32_t word;            /* what a word carries (its send buffer) */
};

struct probe_ctx {
    const struct fb_world *w;
    MPI_Comm comm;
    double timeout_s;                  /* --timeout: how long a silent peer is waited for */
    const volatile sig_atomic_t *stop; /* signal number once SIGINT/SIGTERM arrived */
    struct probe_alive *alive;         /* NULL: no word is sent or heard */
};

/* Message kinds, used as tags; ranks run rounds in lockstep, so a kind
 * between two ranks is unambiguous within a round. */
enum probe_tag {
    PROBE_TAG_QPINFO = 11,
    PROBE_TAG_TCPINFO,
    PROBE_TAG_TOTALS,
    PROBE_TAG_ACK,
    PROBE_TAG_REPORT,
    PROBE_TAG_LAT_GO,
    PROBE_TAG_OFIINFO,
    PROBE_TAG_OFI_DONE, /* ofi: the active end is through with a size (its status) */
    PROBE_TAG_VERDICT,  /* rank 0's verdict on a step */
    PROBE_TAG_ALIVE,    /* a measurement is moving (struct probe_alive) */
};

/* A measuring loop calls it when its transfers completed something: at most
 * every period it sends the word on (rank 0: to every rank; others: to
 * rank 0). Cheap enough to call on every completion. */
void probe_alive_progress(const struct probe_ctx *c);

/* Takes in the words that arrived; 1 when there was one (rank 0 then
 * passes it on). Waits call it and count a word as an answer. */
int probe_alive_heard(const struct probe_ctx *c);

/* The same as probe_alive_progress, for a spec's progress hook. */
void probe_alive_hook(void *ctx);

/* "rank 3 (host-b)" */
void probe_rank_name(const struct probe_ctx *c, int rank, char *buf, size_t len);

/* FB_EXIT_SIGINT/SIGTERM once a stop signal arrived (with a message), else
 * FB_OK. Long loops call it. */
enum fb_status probe_check_stop(const struct probe_ctx *c, struct fb_err *err);

/* Waits for `req` at most limit_s seconds, counted from the last word that
 * the job is alive. A timeout names `peer` and says what was awaited; the
 * request is left pending (the job is ending). */
enum fb_status probe_wait(const struct probe_ctx *c, MPI_Request *req, double limit_s, int peer,
                          const char *what, struct fb_err *err);

/* One MPI message each way with the peer, both bounded; *got is the length
 * received. */
enum fb_status probe_exchange(const struct probe_ctx *c, int peer, int tag, const void *out,
                              int len, void *in, int cap, int *got, double limit_s,
                              const char *what, struct fb_err *err);

/* One bounded receive from the peer; *got is the length received. */
enum fb_status probe_recv(const struct probe_ctx *c, int peer, int tag, void *in, int cap, int *got,
                          double limit_s, const char *what, struct fb_err *err);

/* A gather of fixed-size records to rank 0. Once a record (rank 0's own
 * included) says `failed`, the others get only `grace_s` more: a broken
 * link should end the job in seconds, not after the longest measurement. */
struct probe_gather_spec {
    size_t len;
    double limit_s, grace_s;
    int (*failed)(const void *record);
    const char *what; /* "reporting to rank 0" */
};

/* arrived[rank] of a rank whose connection broke before it reported. */
#define PROBE_LOST 2

/* Rank 0 receives a record from every rank into all[rank * len] (its own
 * copied from `mine`) and arrived[rank] says who answered (1) and who was
 * lost (PROBE_LOST: the gather stops there, naming it); on a timeout the
 * error names the first silent rank. Other ranks send theirs, bounded by
 * limit_s. */
enum fb_status probe_gather(const struct probe_ctx *c, const struct probe_gather_spec *g,
                            const void *mine, void *all, unsigned char *arrived,
                            struct fb_err *err);

/* Rank 0's `buf` reaches every rank, bounded by limit_s. On rank 0 a
 * timeout names the first rank that did not take it, in *silent (else -1);
 * the others name rank 0. */
enum fb_status probe_bcast(const struct probe_ctx *c, void *buf, int len, double limit_s,
                           const char *what, int *silent, struct fb_err *err);

#endif
