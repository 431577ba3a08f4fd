/* SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), small and self-contained,
 * for the watchdog channel's authentication (core/watchdog_wire.h). The
 * project links no cryptographic library; these are the only primitives the
 * channel needs, and tests/unit/test_core_wdchannel.c checks them against
 * the published test vectors. Not a general-purpose library: no streaming
 * interface beyond what HMAC needs, no other hashes. */
#ifndef FB_CORE_WATCHDOG_MAC_H
#define FB_CORE_WATCHDOG_MAC_H

#include <stddef.h>
#include <stdint.h>

#define FB_SHA256_LEN 32
#define FB_SHA256_BLOCK 64

struct fb_sha256 {
    uint32_t h[8];
    uint64_t bytes; /* message length so far */
    uint8_t block[FB_SHA256_BLOCK];
    size_t used; /* bytes of `block` filled */
};

void fb_sha256_init(struct fb_sha256 *s);
void fb_sha256_update(struct fb_sha256 *s, const void *data, size_t len);
void fb_sha256_final(struct fb_sha256 *s, uint8_t out[FB_SHA256_LEN]);
void fb_sha256(const void *data, size_t len, uint8_t out[FB_SHA256_LEN]);

/* HMAC-SHA256 of the concatenation of `n` parts (data[i], len[i]): a key
 * and a record's fields without copying them into one buffer first. */
void fb_hmac_sha256_parts(const uint8_t *key, size_t key_len, int n, const void *const *data, const size_t *len,
                          uint8_t out[FB_SHA256_LEN]);
void fb_hmac_sha256(const uint8_t *key, size_t key_len, const void *data, size_t len, uint8_t out[FB_SHA256_LEN]);

/* 1 when the `len` bytes are equal, in a time that does not depend on where
 * they differ (a MAC check must not tell a forger how much of it was right). */
int fb_equal_ct(const void *a, const void *b, size_t len);

/* Fills `buf` from the kernel's CSPRNG (getrandom(2)). 0, or -1 with errno
 * set when the kernel has none to give. */
int fb_random_bytes(void *buf, size_t len);

#endif
