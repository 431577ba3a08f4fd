/* The watchdog channel's authentication: SHA-256 and HMAC-SHA256 against
 * the published vectors (FIPS 180-2 appendix B, RFC 4231 section 4), the
 * frame check (a changed byte, another key, another sequence number or
 * direction fails it), the per-connection key, and the cleaning of every
 * received string before it is printed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/watchdog_wire.h"

static void hex(const uint8_t *b, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", b[i]);
}

static void check_sha256(const void *data, size_t len, const char *want)
{
    uint8_t d[FB_SHA256_LEN];
    char got[2 * FB_SHA256_LEN + 1];
    fb_sha256(data, len, d);
    hex(d, sizeof d, got);
    CHECK_STR(got, want);
}

static void test_sha256_matches_the_fips_vectors(void)
{
    check_sha256("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    check_sha256("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    check_sha256(two_blocks, strlen(two_blocks), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    char *million = malloc(1000000);
    CHECK(million != NULL);
    if (million == NULL)
        return;
    memset(million, 'a', 1000000);
    check_sha256(million, 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    /* The same million bytes in uneven pieces: the buffering across blocks. */
    struct fb_sha256 s;
    uint8_t d[FB_SHA256_LEN];
    char got[2 * FB_SHA256_LEN + 1];
    fb_sha256_init(&s);
    for (size_t off = 0, step = 1; off < 1000000; off += step, step = step % 131 + 7)
        fb_sha256_update(&s, million + off, off + step > 1000000 ? 1000000 - off : step);
    fb_sha256_final(&s, d);
    hex(d, sizeof d, got);
    CHECK_STR(got, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(million);
}

static void check_hmac(const uint8_t *key, size_t key_len, const void *data, size_t len, const char *want)
{
    uint8_t mac[FB_SHA256_LEN];
    char got[2 * FB_SHA256_LEN + 1];
    fb_hmac_sha256(key, key_len, data, len, mac);
    hex(mac, sizeof mac, got);
    CHECK_STR(got, want);
}

static void test_hmac_matches_rfc4231(void)
{
    uint8_t k[131], d[50];
    memset(k, 0x0b, 20);
    check_hmac(k, 20, "Hi There", 8, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    check_hmac((const uint8_t *)"Jefe", 4, "what do ya want for nothing?", 28,
               "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    memset(k, 0xaa, 20);
    memset(d, 0xdd, 50);
    check_hmac(k, 20, d, 50, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
    for (int i = 0; i < 25; i++)
        k[i] = (uint8_t)(i + 1);
    memset(d, 0xcd, 50);
    check_hmac(k, 25, d, 50, "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
    /* Keys longer than a block are hashed first. */
    memset(k, 0xaa, 131);
    const char *t6 = "Test Using Larger Than Block-Size Key - Hash Key First";
    check_hmac(k, 131, t6, strlen(t6), "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    const char *t7 = "This is a test using a larger than block-size key and a larger than block-size data. The key "
                     "needs to be hashed before being used by the HMAC algorithm.";
    check_hmac(k, 131, t7, strlen(t7), "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

static void test_hmac_of_parts_is_hmac_of_the_whole(void)
{
    const uint8_t key[] = "a key";
    const char *whole = "one two three";
    const void *parts[] = {"one ", "two", " three"};
    const size_t lens[] = {4, 3, 6};
    uint8_t a[FB_SHA256_LEN], b[FB_SHA256_LEN];
    fb_hmac_sha256(key, 5, whole, strlen(whole), a);
    fb_hmac_sha256_parts(key, 5, 3, parts, lens, b);
    CHECK(memcmp(a, b, sizeof a) == 0);
}

static void test_random_bytes_differ(void)
{
    uint8_t a[32] = {0}, b[32] = {0}, zero[32] = {0};
    CHECK_INT(fb_random_bytes(a, sizeof a), 0);
    CHECK_INT(fb_random_bytes(b, sizeof b), 0);
    CHECK(memcmp(a, b, sizeof a) != 0);
    CHECK(memcmp(a, zero, sizeof a) != 0);
}

static void test_equal_ct(void)
{
    CHECK(fb_equal_ct("abcd", "abcd", 4));
    CHECK(!fb_equal_ct("abcd", "abce", 4));
    CHECK(!fb_equal_ct("xbcd", "abcd", 4));
    CHECK(fb_equal_ct("", "", 0));
}

static const uint8_t secret[FB_WD_KEY_LEN] = "0123456789abcdef0123456789abcde";
static const uint8_t nonce0[FB_WD_NONCE_LEN] = "rank zero nonce";
static const uint8_t nonce1[FB_WD_NONCE_LEN] = "rank one nonce.";

static void heartbeat(struct fb_wd_frame *f)
{
    memset(f, 0, sizeof *f);
    f->m.kind = FB_WD_HEARTBEAT;
    f->m.rank = 1;
    f->m.step = 7;
    snprintf(f->m.what, sizeof f->m.what, "all_reduce 1M out-of-place");
}

static void test_a_sealed_frame_passes_only_as_sent(void)
{
    uint8_t key[FB_WD_KEY_LEN], other[FB_WD_KEY_LEN];
    fb_wd_session_key(secret, nonce0, nonce1, 1, key);
    struct fb_wd_frame f, g;
    heartbeat(&f);
    fb_wd_seal(&f, key, FB_WD_TO_RANK0, 5);
    CHECK_INT(f.magic, FB_WD_MAGIC);
    CHECK(fb_wd_unseal(&f, key, FB_WD_TO_RANK0, 5));
    /* Replayed (an earlier or later number), reflected, or under another
     * connection's key: refused. */
    CHECK(!fb_wd_unseal(&f, key, FB_WD_TO_RANK0, 4));
    CHECK(!fb_wd_unseal(&f, key, FB_WD_TO_RANK0, 6));
    CHECK(!fb_wd_unseal(&f, key, FB_WD_FROM_RANK0, 5));
    fb_wd_session_key(secret, nonce1, nonce1, 1, other);
    CHECK(!fb_wd_unseal(&f, other, FB_WD_TO_RANK0, 5));
    /* Any byte changed, MAC included: refused. */
    int refused = 0;
    for (size_t i = 0; i < sizeof f; i++) {
        g = f;
        ((uint8_t *)&g)[i] ^= 0x01;
        refused += !fb_wd_unseal(&g, key, FB_WD_TO_RANK0, 5);
    }
    CHECK_INT(refused, sizeof f);
}

static void test_the_key_depends_on_every_input(void)
{
    uint8_t base[FB_WD_KEY_LEN], k[FB_WD_KEY_LEN], secret2[FB_WD_KEY_LEN];
    fb_wd_session_key(secret, nonce0, nonce1, 1, base);
    fb_wd_session_key(secret, nonce0, nonce1, 1, k);
    CHECK(memcmp(base, k, sizeof k) == 0);
    fb_wd_session_key(secret, nonce0, nonce1, 2, k);
    CHECK(memcmp(base, k, sizeof k) != 0);
    fb_wd_session_key(secret, nonce1, nonce1, 1, k);
    CHECK(memcmp(base, k, sizeof k) != 0);
    fb_wd_session_key(secret, nonce0, nonce0, 1, k);
    CHECK(memcmp(base, k, sizeof k) != 0);
    memcpy(secret2, secret, sizeof secret2);
    secret2[31] ^= 1;
    fb_wd_session_key(secret2, nonce0, nonce1, 1, k);
    CHECK(memcmp(base, k, sizeof k) != 0);
}

/* A forger's record: both strings fill their fields without a NUL, with a
 * terminal escape sequence, a C1 control and a bell in them. */
static void test_received_strings_are_terminated_and_printable(void)
{
    struct fb_wd_msg m;
    memset(&m, 'A', sizeof m);
    memcpy(m.phase, "\x1b[2J", 4);
    const char *escapes = "ok \x9b" "31m\a\x7f tab\there";
    memcpy(m.what, escapes, strlen(escapes));
    fb_wd_msg_clean(&m);
    CHECK_INT(strlen(m.phase), sizeof m.phase - 1);
    CHECK_INT(strlen(m.what), sizeof m.what - 1);
    CHECK(strncmp(m.phase, "?[2JAAAA", 8) == 0);
    CHECK(strncmp(m.what, "ok ?31m?? tab?hereAAA", 21) == 0);
    for (size_t i = 0; i < strlen(m.what); i++)
        CHECK(m.what[i] >= 0x20 && m.what[i] < 0x7f);
    /* What a rank really sends passes unchanged. */
    struct fb_wd_msg n = {0};
    snprintf(n.phase, sizeof n.phase, "timed");
    snprintf(n.what, sizeof n.what, "all_reduce 64M out-of-place");
    fb_wd_msg_clean(&n);
    CHECK_STR(n.phase, "timed");
    CHECK_STR(n.what, "all_reduce 64M out-of-place");
}

int main(void)
{
    RUN(test_sha256_matches_the_fips_vectors);
    RUN(test_hmac_matches_rfc4231);
    RUN(test_hmac_of_parts_is_hmac_of_the_whole);
    RUN(test_random_bytes_differ);
    RUN(test_equal_ct);
    RUN(test_a_sealed_frame_passes_only_as_sent);
    RUN(test_the_key_depends_on_every_input);
    RUN(test_received_strings_are_terminated_and_printable);
    return fbt_done();
}
