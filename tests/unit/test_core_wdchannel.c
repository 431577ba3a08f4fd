/* The watchdog channel's authentication: SHA-256 and HMAC-SHA256 against
 * the published vectors (FIPS 180-2 appendix B, RFC 4231 section 4), the
 * frame check (a changed byte, another key, another sequence number or
 * direction fails it), the per-connection key, the cleaning of every
 * received string before it is printed, and a rank's side of the handshake
 * against listeners that are not rank 0 (fb_wd_dial). */
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "core/watchdog_channel.h"
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

/* ---- listeners in front of a rank ---- */

enum listener_kind {
    RANK0,           /* follows the protocol with the job's secret */
    OTHER_SECRET,    /* follows it with another secret */
    CHALLENGE_ONLY,  /* challenges, then says nothing */
    SILENT,          /* takes the connection, says nothing */
    NOT_THE_CHANNEL, /* another service on the port */
};

struct listener {
    enum listener_kind kind;
    int lfd;
    struct sockaddr_in sa;
    pthread_t thread;
    uint8_t key[FB_WD_KEY_LEN]; /* RANK0: the key of the line it admitted */
    int admitted;
};

static const uint8_t job_secret[FB_WD_KEY_LEN] = "the job's secret, 32 bytes long";

static int wait_in(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, ms) == 1;
}

static int recv_frame(int fd, struct fb_wd_frame *f)
{
    size_t have = 0;
    while (have < sizeof *f && wait_in(fd, 5000)) {
        ssize_t n = recv(fd, (char *)f + have, sizeof *f - have, 0);
        if (n <= 0)
            return 0;
        have += (size_t)n;
    }
    return have == sizeof *f;
}

/* What RANK0 and OTHER_SECRET do after their challenge: read the HELLO,
 * answer it under the secret they hold. */
static void answer_hello(struct listener *l, int fd, const uint8_t challenge_nonce[FB_WD_NONCE_LEN])
{
    struct fb_wd_frame hello, welcome = {0};
    uint8_t other[FB_WD_KEY_LEN] = "not the job's secret, 32 bytes";
    if (!recv_frame(fd, &hello))
        return;
    fb_wd_session_key(l->kind == RANK0 ? job_secret : other, challenge_nonce, hello.nonce, hello.m.rank, l->key);
    if (l->kind == RANK0 && !fb_wd_unseal(&hello, l->key, FB_WD_TO_RANK0, 0))
        return;
    welcome.m.kind = FB_WD_WELCOME;
    welcome.m.rank = hello.m.rank;
    fb_wd_seal(&welcome, l->key, FB_WD_FROM_RANK0, 0);
    l->admitted = send(fd, &welcome, sizeof welcome, 0) == (ssize_t)sizeof welcome && l->kind == RANK0;
}

static void *serve_one(void *arg)
{
    struct listener *l = arg;
    if (!wait_in(l->lfd, 5000))
        return NULL;
    int fd = accept(l->lfd, NULL, NULL);
    if (fd < 0)
        return NULL;
    struct fb_wd_frame challenge = {.magic = FB_WD_MAGIC, .dir = FB_WD_FROM_RANK0};
    challenge.m.kind = FB_WD_CHALLENGE;
    fb_random_bytes(challenge.nonce, sizeof challenge.nonce);
    if (l->kind == NOT_THE_CHANNEL)
        memcpy(&challenge, "SSH-2.0-OpenSSH_9.2\r\n", 21);
    if (l->kind != SILENT)
        send(fd, &challenge, sizeof challenge, 0);
    if (l->kind == RANK0 || l->kind == OTHER_SECRET)
        answer_hello(l, fd, challenge.nonce);
    char sink[256];
    while (wait_in(fd, 5000) && recv(fd, sink, sizeof sink, 0) > 0)
        continue; /* until the rank closes its end */
    close(fd);
    return NULL;
}

static void listener_start(struct listener *l, enum listener_kind kind)
{
    socklen_t len = sizeof l->sa;
    *l = (struct listener){.kind = kind, .lfd = socket(AF_INET, SOCK_STREAM, 0)};
    l->sa = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    CHECK(bind(l->lfd, (struct sockaddr *)&l->sa, sizeof l->sa) == 0);
    CHECK(listen(l->lfd, 4) == 0);
    CHECK(getsockname(l->lfd, (struct sockaddr *)&l->sa, &len) == 0);
    CHECK(pthread_create(&l->thread, NULL, serve_one, l) == 0);
}

static void listener_end(struct listener *l)
{
    pthread_join(l->thread, NULL);
    close(l->lfd);
}

/* fb_wd_dial to the listeners' addresses in order; the connection, or -1. */
static int dial(struct listener *ls, int n, double seconds, uint8_t key[FB_WD_KEY_LEN], char *why, size_t why_len)
{
    struct sockaddr_in sa[4];
    for (int i = 0; i < n; i++)
        sa[i] = ls[i].sa;
    return fb_wd_dial(sa, n, job_secret, 3, seconds, key, why, why_len);
}

static void test_a_rank_takes_rank0s_proof(void)
{
    struct listener l;
    uint8_t key[FB_WD_KEY_LEN];
    char why[160];
    listener_start(&l, RANK0);
    int fd = dial(&l, 1, 10, key, why, sizeof why);
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
    listener_end(&l);
    CHECK(l.admitted);
    CHECK(memcmp(key, l.key, sizeof key) == 0);
}

/* What does not prove the secret is dropped, whatever it answered, and
 * the try ends with a reason that says so. */
static void test_a_rank_trusts_no_other_listener(void)
{
    const struct {
        enum listener_kind kind;
        const char *why;
    } cases[] = {
        {OTHER_SECRET, "did not prove it is rank 0 of this job"},
        {NOT_THE_CHANNEL, "is not a fabric-bench watchdog channel"},
        {SILENT, "no answer"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct listener l;
        uint8_t key[FB_WD_KEY_LEN];
        char why[160];
        listener_start(&l, cases[i].kind);
        CHECK_INT(dial(&l, 1, 1.0, key, why, sizeof why), -1);
        CHECK_CONTAINS(why, cases[i].why);
        listener_end(&l);
    }
}

/* A stranger's listener on one of the addresses tried costs the rank its
 * answer's time, never its line: rank 0 on the other address wins. */
static void test_rank0_wins_over_a_stranger_tried_first(void)
{
    enum listener_kind strangers[] = {OTHER_SECRET, SILENT, CHALLENGE_ONLY, NOT_THE_CHANNEL};
    for (size_t i = 0; i < sizeof strangers / sizeof *strangers; i++) {
        struct listener l[2];
        uint8_t key[FB_WD_KEY_LEN];
        char why[160];
        listener_start(&l[0], strangers[i]);
        listener_start(&l[1], RANK0);
        int fd = dial(l, 2, 10, key, why, sizeof why);
        CHECK(fd >= 0);
        if (fd >= 0)
            close(fd);
        listener_end(&l[0]);
        listener_end(&l[1]);
        CHECK(l[1].admitted);
        CHECK(memcmp(key, l[1].key, sizeof key) == 0);
    }
}

static void test_nothing_listening_ends_the_try_at_once(void)
{
    struct listener l;
    uint8_t key[FB_WD_KEY_LEN];
    char why[160];
    socklen_t len = sizeof l.sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    l.sa = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    CHECK(bind(fd, (struct sockaddr *)&l.sa, sizeof l.sa) == 0);
    CHECK(getsockname(fd, (struct sockaddr *)&l.sa, &len) == 0);
    close(fd); /* a port nobody listens on */
    CHECK_INT(dial(&l, 1, 600, key, why, sizeof why), -1);
    CHECK_CONTAINS(why, "refused");
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
    RUN(test_a_rank_takes_rank0s_proof);
    RUN(test_a_rank_trusts_no_other_listener);
    RUN(test_rank0_wins_over_a_stranger_tried_first);
    RUN(test_nothing_listening_ends_the_try_at_once);
    return fbt_done();
}
