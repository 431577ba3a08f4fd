#include "core/watchdog_mac.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

/* The first 32 bits of the fractional parts of the cube roots of the first
 * 64 primes (FIPS 180-4, 4.2.2). */
static const uint32_t round_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t rotr(uint32_t x, int n)
{
    return (x >> n) | (x << (32 - n));
}

static uint32_t load_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void store_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static void compress(uint32_t h[8], const uint8_t block[FB_SHA256_BLOCK])
{
    uint32_t w[64], v[8];
    for (int i = 0; i < 16; i++)
        w[i] = load_be32(block + 4 * i);
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    memcpy(v, h, sizeof v);
    for (int i = 0; i < 64; i++) {
        uint32_t s1 = rotr(v[4], 6) ^ rotr(v[4], 11) ^ rotr(v[4], 25);
        uint32_t ch = (v[4] & v[5]) ^ (~v[4] & v[6]);
        uint32_t t1 = v[7] + s1 + ch + round_k[i] + w[i];
        uint32_t s0 = rotr(v[0], 2) ^ rotr(v[0], 13) ^ rotr(v[0], 22);
        uint32_t maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
        memmove(v + 1, v, 7 * sizeof *v);
        v[4] += t1;
        v[0] = t1 + s0 + maj;
    }
    for (int i = 0; i < 8; i++)
        h[i] += v[i];
}

void fb_sha256_init(struct fb_sha256 *s)
{
    /* The first 32 bits of the fractional parts of the square roots of the
     * first 8 primes (FIPS 180-4, 5.3.3). */
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, iv, sizeof iv);
    s->bytes = 0;
    s->used = 0;
}

void fb_sha256_update(struct fb_sha256 *s, const void *data, size_t len)
{
    const uint8_t *p = data;
    s->bytes += len;
    while (len > 0) {
        size_t take = FB_SHA256_BLOCK - s->used < len ? FB_SHA256_BLOCK - s->used : len;
        memcpy(s->block + s->used, p, take);
        s->used += take;
        p += take;
        len -= take;
        if (s->used == FB_SHA256_BLOCK) {
            compress(s->h, s->block);
            s->used = 0;
        }
    }
}

void fb_sha256_final(struct fb_sha256 *s, uint8_t out[FB_SHA256_LEN])
{
    uint64_t bits = s->bytes * 8;
    uint8_t pad[FB_SHA256_BLOCK + 8] = {0x80};
    /* 0x80, zeros up to 56 bytes into a block, then the length in bits. */
    size_t n = s->used < 56 ? 56 - s->used : FB_SHA256_BLOCK + 56 - s->used;
    uint8_t len_be[8];
    for (int i = 0; i < 8; i++)
        len_be[i] = (uint8_t)(bits >> (56 - 8 * i));
    fb_sha256_update(s, pad, n);
    fb_sha256_update(s, len_be, sizeof len_be);
    for (int i = 0; i < 8; i++)
        store_be32(out + 4 * i, s->h[i]);
    memset(s, 0, sizeof *s);
}

void fb_sha256(const void *data, size_t len, uint8_t out[FB_SHA256_LEN])
{
    struct fb_sha256 s;
    fb_sha256_init(&s);
    fb_sha256_update(&s, data, len);
    fb_sha256_final(&s, out);
}

void fb_hmac_sha256_parts(const uint8_t *key, size_t key_len, int n, const void *const *data, const size_t *len,
                          uint8_t out[FB_SHA256_LEN])
{
    uint8_t k[FB_SHA256_BLOCK] = {0}, pad[FB_SHA256_BLOCK], inner[FB_SHA256_LEN];
    struct fb_sha256 s;
    /* A key longer than a block is hashed first (RFC 2104, 2). */
    if (key_len > FB_SHA256_BLOCK)
        fb_sha256(key, key_len, k);
    else if (key_len > 0)
        memcpy(k, key, key_len);
    for (int i = 0; i < FB_SHA256_BLOCK; i++)
        pad[i] = k[i] ^ 0x36;
    fb_sha256_init(&s);
    fb_sha256_update(&s, pad, sizeof pad);
    for (int i = 0; i < n; i++)
        fb_sha256_update(&s, data[i], len[i]);
    fb_sha256_final(&s, inner);
    for (int i = 0; i < FB_SHA256_BLOCK; i++)
        pad[i] = k[i] ^ 0x5c;
    fb_sha256_init(&s);
    fb_sha256_update(&s, pad, sizeof pad);
    fb_sha256_update(&s, inner, sizeof inner);
    fb_sha256_final(&s, out);
    /* The padded key is the secret itself: leave no copy on the stack. */
    explicit_bzero(k, sizeof k);
    explicit_bzero(pad, sizeof pad);
    explicit_bzero(inner, sizeof inner);
}

void fb_hmac_sha256(const uint8_t *key, size_t key_len, const void *data, size_t len, uint8_t out[FB_SHA256_LEN])
{
    fb_hmac_sha256_parts(key, key_len, 1, &data, &len, out);
}

int fb_equal_ct(const void *a, const void *b, size_t len)
{
    const volatile uint8_t *x = a, *y = b;
    uint8_t diff = 0;
    for (size_t i = 0; i < len; i++)
        diff |= x[i] ^ y[i];
    return diff == 0;
}

int fb_random_bytes(void *buf, size_t len)
{
    uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = getrandom(p, len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}
