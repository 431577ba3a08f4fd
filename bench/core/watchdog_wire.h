/* What travels on the watchdog's channel (core/watchdog_channel.h), and the
 * checks that make a record count only when it comes from a rank of this
 * job.
 *
 * Every record is one fixed-size frame: a header, the message, and an
 * HMAC-SHA256 (core/watchdog_mac.h) over both under the connection's key.
 * That key is derived from the job's secret (32 bytes from getrandom(2) on
 * rank 0, sent to the other ranks with MPI_Bcast), rank 0's nonce for the
 * connection, the rank's own nonce and the rank it says it is: a frame
 * recorded on one connection is worth nothing on another, and a connection
 * claiming another rank has another key. Frames carry a sequence number per
 * connection and direction and the direction itself, so one cannot be
 * replayed, dropped from the middle or reflected back without failing its
 * check.
 *
 * The handshake, rank 0 <-> a rank:
 *   rank 0: CHALLENGE (its nonce; no MAC: it proves nothing, asks for proof)
 *   rank:   HELLO (its nonce and rank; seq 0; MAC under the derived key)
 *   rank 0: WELCOME (seq 0; MAC: proves rank 0 knows the secret too)
 * then HEARTBEAT and DONE from the rank, ABORT from rank 0, seq 1, 2, ... */
#ifndef FB_CORE_WATCHDOG_WIRE_H
#define FB_CORE_WATCHDOG_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "core/watchdog_mac.h"

#define FB_WD_MAGIC 0x32574246u /* "FBW2" in memory on little-endian hosts */
#define FB_WD_KEY_LEN FB_SHA256_LEN
#define FB_WD_NONCE_LEN 16

enum fb_wd_kind {
    FB_WD_HELLO = 1,     /* rank -> 0, once, on connecting */
    FB_WD_HEARTBEAT = 2, /* rank -> 0, every second */
    FB_WD_DONE = 3,      /* rank -> 0, last: the rank ended normally */
    FB_WD_ABORT = 4,     /* 0 -> rank: the job ends now (timeout) */
    FB_WD_CHALLENGE = 5, /* 0 -> rank, first on every connection */
    FB_WD_WELCOME = 6,   /* 0 -> rank: the HELLO was proven, the line is the rank's */
    FB_WD_ROLL = 7,      /* 0 -> rank: the env launch's roll call, how many joined (core/world_env.h) */
};

enum fb_wd_dir {
    FB_WD_TO_RANK0 = 0x52,   /* 'R': a rank's frame */
    FB_WD_FROM_RANK0 = 0x5a, /* 'Z': rank 0's frame */
};

struct fb_wd_msg {
    int32_t kind, rank, expired, pad;
    int64_t step, iteration;
    int64_t ticks;  /* fb_watchdog_tick calls since the step was armed */
    double elapsed; /* seconds since the step was armed */
    char phase[16];
    char what[96];
};

struct fb_wd_frame {
    uint32_t magic; /* FB_WD_MAGIC */
    uint32_t dir;   /* enum fb_wd_dir */
    uint64_t seq;   /* per connection and direction, from 0 */
    uint8_t nonce[FB_WD_NONCE_LEN]; /* CHALLENGE: rank 0's; HELLO: the rank's; else zero */
    struct fb_wd_msg m;
    uint8_t mac[FB_SHA256_LEN]; /* over every byte above */
};

/* The connection's key: HMAC(secret, label, rank 0's nonce, the rank's
 * nonce, the rank). */
void fb_wd_session_key(const uint8_t secret[FB_WD_KEY_LEN], const uint8_t nonce0[FB_WD_NONCE_LEN],
                       const uint8_t nonce_rank[FB_WD_NONCE_LEN], int32_t rank, uint8_t key[FB_WD_KEY_LEN]);

/* Fills the header of `f` (whose message and nonce are set) and its MAC. */
void fb_wd_seal(struct fb_wd_frame *f, const uint8_t key[FB_WD_KEY_LEN], enum fb_wd_dir dir, uint64_t seq);

/* 1 when `f` is a frame of this protocol going `dir`, numbered `seq`, whose
 * MAC is right under `key`; 0 otherwise. */
int fb_wd_unseal(const struct fb_wd_frame *f, const uint8_t key[FB_WD_KEY_LEN], enum fb_wd_dir dir, uint64_t seq);

/* Makes the message's strings safe to print and to write: each ends with a
 * NUL within its field, and every byte that is not printable ASCII (control
 * characters, terminal escapes, bytes >= 0x7f) becomes '?'. For every
 * message received, authenticated or not: what a peer sends is data. */
void fb_wd_msg_clean(struct fb_wd_msg *m);

#endif
