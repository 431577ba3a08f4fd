/* Rank-group expressions (coll/split.h). The expected colors follow
 * nccl-tests 2.19.6's rule in src/common.cu, run(): NCCL_TESTS_SPLIT_MASK is
 * read with strtoul base 16 and gives rank & mask; NCCL_TESTS_SPLIT matches
 * AND/&, OR/|, MOD/%, DIV// case-insensitively at its start, then parseInt
 * skips spaces and reads 0b binary or strtoul base 0 (decimal, 0x hex), and
 * the color is rank OP value. The refusals are the values that rule would
 * silently read as something else. */
#include <stdlib.h>

#include "check.h"
#include "coll/split.h"

static struct coll_split_spec parse_ok(const char *text)
{
    struct coll_split_spec s;
    struct fb_err err = {0};
    CHECK_INT(coll_split_parse(text, "NCCL_TESTS_SPLIT", &s, &err), FB_OK);
    CHECK_STR(err.msg, "");
    return s;
}

/* The colors of ranks 0..n-1 under `text`, as "c0 c1 ..." (two buffers
 * in turn, so one check can compare two expressions). */
static const char *colors_of(const char *text, int n)
{
    static char bufs[2][256];
    static int turn;
    char *buf = bufs[turn++ % 2];
    size_t len = sizeof bufs[0];
    struct coll_split_spec s = parse_ok(text);
    size_t used = 0;
    buf[0] = '\0';
    for (int r = 0; r < n && used < len; r++)
        used += (size_t)snprintf(buf + used, len - used, "%s%d", r ? " " : "", coll_split_color(&s, r, 0, 0));
    return buf;
}

static void refused(const char *text, const char *why)
{
    struct coll_split_spec s;
    struct fb_err err = {0};
    CHECK_INT(coll_split_parse(text, "NCCL_TESTS_SPLIT", &s, &err), FB_ERR_USAGE);
    CHECK_CONTAINS(err.msg, why);
    CHECK_CONTAINS(err.msg, "NCCL_TESTS_SPLIT=");
    CHECK(strchr(err.msg, '\n') == NULL);
}

static void test_every_operator_word(void)
{
    CHECK_STR(colors_of("AND 1", 8), "0 1 0 1 0 1 0 1");  /* rank & 1 */
    CHECK_STR(colors_of("OR 1", 8), "1 1 3 3 5 5 7 7");   /* rank | 1 */
    CHECK_STR(colors_of("MOD 3", 8), "0 1 2 0 1 2 0 1");  /* rank % 3 */
    CHECK_STR(colors_of("DIV 4", 8), "0 0 0 0 1 1 1 1");  /* rank / 4 */
}

static void test_every_symbol(void)
{
    CHECK_STR(colors_of("&1", 4), "0 1 0 1");
    CHECK_STR(colors_of("|2", 4), "2 3 2 3");
    CHECK_STR(colors_of("%2", 4), "0 1 0 1");
    CHECK_STR(colors_of("/2", 4), "0 0 1 1");
}

/* ANCHORS: on 8-GPU nodes "AND 0x7" / "MOD 8" give one group per local
 * GPU across nodes, "OR 0x7" / "DIV 8" one group per node. */
static void test_eight_gpu_node_recipes(void)
{
    CHECK_STR(colors_of("AND 0x7", 16), colors_of("MOD 8", 16));
    CHECK_STR(colors_of("MOD 8", 16), "0 1 2 3 4 5 6 7 0 1 2 3 4 5 6 7");
    CHECK_STR(colors_of("OR 0x7", 16), "7 7 7 7 7 7 7 7 15 15 15 15 15 15 15 15");
    CHECK_STR(colors_of("DIV 8", 16), "0 0 0 0 0 0 0 0 1 1 1 1 1 1 1 1");
}

static void test_case_does_not_matter(void)
{
    CHECK_STR(colors_of("mod 2", 4), "0 1 0 1");
    CHECK_STR(colors_of("Mod 2", 4), "0 1 0 1");
    CHECK_STR(colors_of("dIv 2", 4), "0 0 1 1");
    CHECK_STR(colors_of("and 0X1", 4), "0 1 0 1");
    CHECK_STR(colors_of("or 0B1", 4), "1 1 3 3");
}

static void test_number_bases(void)
{
    CHECK_STR(colors_of("AND 0x2", 4), "0 0 2 2");
    CHECK_STR(colors_of("AND 0b10", 4), "0 0 2 2");
    CHECK_STR(colors_of("AND 2", 4), "0 0 2 2");
    CHECK_STR(colors_of("MOD 0xA", 12), "0 1 2 3 4 5 6 7 8 9 0 1");
    CHECK_STR(colors_of("AND 0", 3), "0 0 0");    /* one group */
    CHECK_STR(colors_of("MOD 07", 8), colors_of("MOD 7", 8)); /* octal 07 is 7 */
}

static void test_spaces(void)
{
    CHECK_STR(colors_of("MOD2", 4), "0 1 0 1");     /* none needed */
    CHECK_STR(colors_of("MOD   2", 4), "0 1 0 1");  /* parseInt skips them */
    CHECK_STR(colors_of("MOD\t2", 4), "0 1 0 1");
    CHECK_STR(colors_of("MOD 2  ", 4), "0 1 0 1");  /* strtoul stops there: same value */
}

static void test_malformed_values_are_refused(void)
{
    refused(" MOD 2", "starts with a space");          /* nccl-tests: no prefix matches, no groups */
    refused("MODULO 2", "is not a number");            /* MOD, then parseInt("ULO 2") fails */
    refused("XOR 1", "unknown operator");
    refused("2", "unknown operator");
    refused("MOD", "no number after the operator");
    refused("MOD ", "no number after the operator");
    refused("MOD 0", "divides by zero");                /* nccl-tests: SIGFPE */
    refused("DIV 0x0", "divides by zero");
    refused("MOD 2x", "'x' after the number");          /* nccl-tests reads 2 and drops x */
    refused("AND 0x", "'x' after the number");          /* strtoul reads the 0 only */
    refused("AND 0b", "binary digits");                 /* nccl-tests reads 0 */
    refused("AND 0b2", "binary digits");
    refused("MOD 010", "octal (8)");                    /* base 0 reads 010 as 8 */
    refused("DIV 08", "octal (0)");                     /* and 08 as 0: a division by zero */
    refused("MOD -2", "negative");
    refused("OR 4294967296", "over 2147483647");        /* (int) would wrap */
    refused("MOD 2 3", "'3' after the number");
}

static void test_our_words(void)
{
    struct coll_split_spec s = parse_ok("intra-node");
    CHECK_INT(s.kind, COLL_SPLIT_INTRA);
    CHECK_INT(coll_split_color(&s, 5, 2, 1), 2);        /* the node */
    s = parse_ok("INTER-NODE");
    CHECK_INT(s.kind, COLL_SPLIT_INTER);
    CHECK_INT(coll_split_color(&s, 5, 2, 1), 1);        /* the local rank: its rail */
    s = parse_ok("intra-inter");
    CHECK_INT(coll_split_phases(&s), 2);
    CHECK_INT(coll_split_phase(&s, 0).kind, COLL_SPLIT_INTER);
    CHECK_INT(coll_split_phase(&s, 1).kind, COLL_SPLIT_INTRA);
    CHECK_INT(coll_split_phases(&(struct coll_split_spec){.kind = COLL_SPLIT_EXPR}), 1);
    s = parse_ok("");
    CHECK_INT(s.kind, COLL_SPLIT_NONE);
    CHECK_INT(coll_split_color(&s, 7, 1, 3), 0);
}

static void mask_colors(const char *mask, int n, const char *want)
{
    struct coll_split_spec s;
    struct fb_err err = {0};
    CHECK_INT(coll_split_parse_mask(mask, &s, &err), FB_OK);
    char buf[128] = "";
    size_t used = 0;
    for (int r = 0; r < n && used < sizeof buf; r++)
        used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%d", r ? " " : "", coll_split_color(&s, r, 0, 0));
    CHECK_STR(buf, want);
}

static void mask_refused(const char *mask, const char *why)
{
    struct coll_split_spec s;
    struct fb_err err = {0};
    CHECK_INT(coll_split_parse_mask(mask, &s, &err), FB_ERR_USAGE);
    CHECK_CONTAINS(err.msg, why);
    CHECK_CONTAINS(err.msg, "NCCL_TESTS_SPLIT_MASK=");
}

static void test_mask_is_hex(void)
{
    mask_colors("0x2", 4, "0 0 2 2");
    mask_colors("2", 4, "0 0 2 2");
    mask_colors("10", 20, "0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 16 16 16 16"); /* hex 10 = 16 */
    mask_colors("0X3", 4, "0 1 2 3");
    mask_colors("  f", 4, "0 1 2 3");   /* strtoul skips leading spaces */
    mask_colors("7 ", 9, "0 1 2 3 4 5 6 7 0");
    mask_refused("0b11", "hex");         /* nccl-tests: 0xb11 */
    mask_refused("zz", "not a hex number");
    mask_refused("0x2g", "'g' after the hex number");
    mask_refused("-1", "negative");
}

static void test_environment_precedence(void)
{
    struct coll_split_spec s;
    struct fb_err err = {0};
    setenv("NCCL_TESTS_SPLIT", "MOD 2", 1);
    setenv("NCCL_TESTS_SPLIT_MASK", "0x1", 1);
    CHECK_INT(coll_split_from_env(NULL, &s, &err), FB_OK);
    CHECK_INT(s.kind, COLL_SPLIT_MASK);                 /* the mask wins, as in run() */
    CHECK_CONTAINS(s.note, "NCCL_TESTS_SPLIT=MOD 2 is ignored");
    CHECK_INT(coll_split_from_env("DIV 2", &s, &err), FB_OK);
    CHECK_INT(s.kind, COLL_SPLIT_EXPR);
    CHECK_STR(s.source, "--split");
    CHECK_CONTAINS(s.note, "--split DIV 2 replaces");
    setenv("NCCL_TESTS_SPLIT_MASK", "", 1);
    CHECK_INT(coll_split_from_env(NULL, &s, &err), FB_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "NCCL_TESTS_SPLIT_MASK is set but empty");
    unsetenv("NCCL_TESTS_SPLIT_MASK");
    err = (struct fb_err){0};
    CHECK_INT(coll_split_from_env(NULL, &s, &err), FB_OK);
    CHECK_INT(s.kind, COLL_SPLIT_EXPR);
    CHECK_STR(s.source, "NCCL_TESTS_SPLIT");
    unsetenv("NCCL_TESTS_SPLIT");
    CHECK_INT(coll_split_from_env(NULL, &s, &err), FB_OK);
    CHECK_INT(s.kind, COLL_SPLIT_NONE);
}

int main(void)
{
    RUN(test_every_operator_word);
    RUN(test_every_symbol);
    RUN(test_eight_gpu_node_recipes);
    RUN(test_case_does_not_matter);
    RUN(test_number_bases);
    RUN(test_spaces);
    RUN(test_malformed_values_are_refused);
    RUN(test_our_words);
    RUN(test_mask_is_hex);
    RUN(test_environment_precedence);
    return fbt_done();
}
