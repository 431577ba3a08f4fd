#include "core/watchdog_wire.h"

#include <stddef.h>
#include <string.h>

#include "core/text.h"

/* Frames are sent and MACed as raw bytes: no padding may hide in them. */
_Static_assert(sizeof(struct fb_wd_msg) == 160, "fb_wd_msg has no padding");
_Static_assert(sizeof(struct fb_wd_frame) == 32 + sizeof(struct fb_wd_msg) + FB_SHA256_LEN,
               "fb_wd_frame has no padding");

/* Keys derived for the watchdog channel and nothing else. */
static const char key_label[] = "fabric-bench watchdog channel v2";

void fb_wd_session_key(const uint8_t secret[FB_WD_KEY_LEN], const uint8_t nonce0[FB_WD_NONCE_LEN],
                       const uint8_t nonce_rank[FB_WD_NONCE_LEN], int32_t rank, uint8_t key[FB_WD_KEY_LEN])
{
    uint32_t r = (uint32_t)rank;
    uint8_t rank_le[4] = {(uint8_t)r, (uint8_t)(r >> 8), (uint8_t)(r >> 16), (uint8_t)(r >> 24)};
    const void *parts[] = {key_label, nonce0, nonce_rank, rank_le};
    const size_t lens[] = {sizeof key_label - 1, FB_WD_NONCE_LEN, FB_WD_NONCE_LEN, sizeof rank_le};
    fb_hmac_sha256_parts(secret, FB_WD_KEY_LEN, 4, parts, lens, key);
}

static void frame_mac(const struct fb_wd_frame *f, const uint8_t key[FB_WD_KEY_LEN], uint8_t mac[FB_SHA256_LEN])
{
    fb_hmac_sha256(key, FB_WD_KEY_LEN, f, offsetof(struct fb_wd_frame, mac), mac);
}

void fb_wd_seal(struct fb_wd_frame *f, const uint8_t key[FB_WD_KEY_LEN], enum fb_wd_dir dir, uint64_t seq)
{
    f->magic = FB_WD_MAGIC;
    f->dir = (uint32_t)dir;
    f->seq = seq;
    frame_mac(f, key, f->mac);
}

int fb_wd_unseal(const struct fb_wd_frame *f, const uint8_t key[FB_WD_KEY_LEN], enum fb_wd_dir dir, uint64_t seq)
{
    uint8_t mac[FB_SHA256_LEN];
    frame_mac(f, key, mac);
    /* Every check is made whatever the others say: the answer's timing
     * tells nothing about which failed. */
    int ok = fb_equal_ct(mac, f->mac, sizeof mac);
    ok &= f->magic == FB_WD_MAGIC;
    ok &= f->dir == (uint32_t)dir;
    ok &= f->seq == seq;
    return ok;
}

void fb_wd_msg_clean(struct fb_wd_msg *m)
{
    /* In place: the fields came off the wire with no NUL of their own. */
    fb_ascii_printable(m->phase, m->phase, sizeof m->phase);
    fb_ascii_printable(m->what, m->what, sizeof m->what);
}
