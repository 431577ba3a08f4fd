/* The option parser every fabric-bench binary uses: spellings, repeatable
 * values, choices, subcommands and the one wording of its usage errors. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/options.h"

#define DIRS_MAX 3

struct demo {
    const char *name;
    const char *dirs[DIRS_MAX];
    int ndirs;
    int fabric;
    long count;
    int json, verbose, help;
};

static const char *const fabrics[] = {"auto", "rdma", "tcpxo", NULL};

#define OFF(f) offsetof(struct demo, f)

static const struct fb_opt demo_options[] = {
    {'n', "name", FB_OPT_STRING, OFF(name), "NAME", "a name"},
    {'d', "dir", FB_OPT_STRING, OFF(dirs), "DIR", "a directory", .max_count = DIRS_MAX,
     .count_offset = OFF(ndirs)},
    {0, "fabric", FB_OPT_CHOICE, OFF(fabric), NULL, "which fabric", .choices = fabrics},
    {'c', "count", FB_OPT_INT, OFF(count), "N", "how many", 1, 9},
    {'j', "json", FB_OPT_FLAG, OFF(json), NULL, "a document"},
    {'v', NULL, FB_OPT_FLAG, OFF(verbose), NULL, "more"},
    {'h', "help", FB_OPT_FLAG, OFF(help), NULL, "this help", .ends_parse = 1},
    FB_OPT_END,
};

/* A command line split at spaces; the strings parsed into a struct demo
 * point into it, so it lives as long as the test's result. */
struct words {
    char buf[512];
    char *argv[32];
    int argc;
};

static void split(struct words *w, const char *line)
{
    snprintf(w->buf, sizeof w->buf, "%s", line);
    w->argc = 0;
    for (char *tok = strtok(w->buf, " "); tok && w->argc < 31; tok = strtok(NULL, " "))
        w->argv[w->argc++] = tok;
    w->argv[w->argc] = NULL;
}

/* One parse of a struct demo: the words, what they set, the result. A
 * parse frees the result of the one before. */
struct parsed {
    struct words w;
    struct demo d;
    struct fb_opts_result res;
    struct fb_err err;
};

static enum fb_status parse(struct parsed *p, const char *line)
{
    static const struct fb_opts_ctx ctx = {"fabric-demo run", demo_options, NULL};
    fb_opts_result_free(&p->res);
    split(&p->w, line);
    memset(&p->d, 0, sizeof p->d);
    fb_err_clear(&p->err);
    return fb_opts_parse_ctx(&ctx, p->w.argc, p->w.argv, &p->d, &p->res, &p->err);
}

static void test_every_spelling_of_a_value(void)
{
    const char *lines[] = {"run -n x", "run -nx", "run --name x", "run --name=x"};
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
        struct parsed p = {0};
        CHECK_INT(parse(&p, lines[i]), FB_OK);
        CHECK_STR(p.d.name, "x");
        CHECK(p.res.given[fb_opts_find(demo_options, "name")]);
        CHECK(!p.res.given[fb_opts_find(demo_options, "json")]);
        fb_opts_result_free(&p.res);
    }
}

/* Integers as C's strtol(s, NULL, 0) reads nccl-tests' flags: 0x hex and
 * 0 octal; what strtol would stop short at is refused here. */
static void test_integers_in_hex_and_octal(void)
{
    struct parsed p = {0};
    CHECK_INT(parse(&p, "run -c 0x9"), FB_OK);
    CHECK_INT(p.d.count, 9);
    CHECK_INT(parse(&p, "run -c 010"), FB_OK);
    CHECK_INT(p.d.count, 8);
    CHECK_INT(parse(&p, "run -c 09"), FB_ERR_USAGE);
    CHECK(strstr(p.err.msg, "'09' is not a whole number") != NULL);
    CHECK_INT(parse(&p, "run -c 0x"), FB_ERR_USAGE);
    CHECK_INT(parse(&p, "run -c 0xA"), FB_ERR_USAGE); /* 10: out of the row's range */
    fb_opts_result_free(&p.res);
}

static void test_positionals_before_between_and_after_options(void)
{
    struct parsed p = {0};
    CHECK_INT(parse(&p, "run a.json --json b.json -c 3 c.json - -- -n --json"), FB_OK);
    CHECK_INT(p.d.json, 1);
    CHECK_INT(p.d.count, 3);
    CHECK(p.d.name == NULL);
    CHECK_INT(p.res.npositional, 6);
    const char *want[] = {"a.json", "b.json", "c.json", "-", "-n", "--json"};
    for (int i = 0; i < p.res.npositional && i < 6; i++)
        CHECK_STR(p.res.positional[i], want[i]);
    fb_opts_result_free(&p.res);
}

static void test_short_flags_share_a_word(void)
{
    struct parsed p = {0};
    CHECK_INT(parse(&p, "run -jvc4"), FB_OK);
    CHECK_INT(p.d.json, 1);
    CHECK_INT(p.d.verbose, 1);
    CHECK_INT(p.d.count, 4);
    fb_opts_result_free(&p.res);
}

static void test_repeatable_values_fill_the_array(void)
{
    struct parsed p = {0};
    CHECK_INT(parse(&p, "run --dir a x -d b --dir=c"), FB_OK);
    CHECK_INT(p.d.ndirs, 3);
    CHECK_STR(p.d.dirs[0], "a");
    CHECK_STR(p.d.dirs[1], "b");
    CHECK_STR(p.d.dirs[2], "c");
    CHECK_INT(p.res.npositional, 1);
    json_object *j = fb_opts_to_json(demo_options, &p.d);
    json_object *dirs = NULL;
    CHECK(json_object_object_get_ex(j, "dir", &dirs) && json_object_array_length(dirs) == 3);
    json_object_put(j);
    fb_opts_result_free(&p.res);
}

static void test_choices_store_the_index(void)
{
    struct parsed p = {0};
    CHECK_INT(parse(&p, "run --fabric tcpxo"), FB_OK);
    CHECK_INT(p.d.fabric, 2);
    json_object *j = fb_opts_to_json(demo_options, &p.d);
    CHECK_STR(json_object_get_string(json_object_object_get(j, "fabric")), "tcpxo");
    json_object_put(j);
    CHECK_INT(parse(&p, "run --fabric=rdma"), FB_OK);
    CHECK_INT(p.d.fabric, 1);
    fb_opts_result_free(&p.res);
}

/* Refusals of unknown options, missing and unwanted values, one value too
 * many and a word outside the choices. */
static void test_usage_errors_have_one_wording(void)
{
    struct {
        const char *line, *msg;
    } cases[] = {
        {"run --frobnicate", "unknown option '--frobnicate' for fabric-demo run; see fabric-demo run --help"},
        {"run --frobnicate=3 x", "unknown option '--frobnicate' for fabric-demo run; see fabric-demo run --help"},
        {"run -x", "unknown option '-x' for fabric-demo run; see fabric-demo run --help"},
        {"run -jz", "unknown option '-z' for fabric-demo run; see fabric-demo run --help"},
        {"run x --name", "option '--name' needs a value (NAME); see fabric-demo run --help"},
        {"run -n", "option '-n' needs a value (NAME); see fabric-demo run --help"},
        {"run --json=yes", "option '--json' takes no value; see fabric-demo run --help"},
        {"run --count 10", "--count: 10 is out of range; allowed 1 to 9"},
        {"run -c 10", "-c: 10 is out of range; allowed 1 to 9"},
        {"run -c10", "-c: 10 is out of range; allowed 1 to 9"},
        {"run --count --json", "option '--count' needs a value (N); see fabric-demo run --help"},
        {"run -n --json x", "option '-n' needs a value (NAME); see fabric-demo run --help"},
        {"run --name -j", "option '--name' needs a value (NAME); see fabric-demo run --help"},
        {"run --name --fabric=rdma", "option '--name' needs a value (NAME); see fabric-demo run --help"},
        {"run -n --", "option '-n' needs a value (NAME); see fabric-demo run --help"},
        {"run -d a -d b -d c --dir d", "option '--dir' given more than 3 times; see fabric-demo run --help"},
        {"run --fabric ib", "option '--fabric' does not accept 'ib'; use auto, rdma or tcpxo"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct parsed p = {0};
        CHECK_INT(parse(&p, cases[i].line), FB_ERR_USAGE);
        CHECK_STR(p.err.msg, cases[i].msg);
        fb_opts_result_free(&p.res);
    }
}

/* A word that is none of the table's options is a value, whatever it
 * looks like: a title "-x", a file "-", a name given in the same word. */
static void test_values_that_look_like_options(void)
{
    struct parsed p = {0};
    CHECK_INT(parse(&p, "run --name -x"), FB_OK);
    CHECK_STR(p.d.name, "-x");
    CHECK_INT(parse(&p, "run -n -"), FB_OK);
    CHECK_STR(p.d.name, "-");
    CHECK_INT(parse(&p, "run --name=--json"), FB_OK);
    CHECK_STR(p.d.name, "--json");
    CHECK_INT(parse(&p, "run -n--json"), FB_OK);
    CHECK_STR(p.d.name, "--json");
    CHECK_INT(parse(&p, "run --count -1"), FB_ERR_USAGE);
    CHECK_STR(p.err.msg, "--count: -1 is out of range; allowed 1 to 9");
    fb_opts_result_free(&p.res);
}

static void test_help_ends_the_parse(void)
{
    struct parsed p = {0};
    CHECK_INT(parse(&p, "run -j --help --frobnicate x"), FB_OK);
    CHECK_INT(p.d.help, 1);
    CHECK_INT(p.res.npositional, 0);
    CHECK_INT(parse(&p, "run --frobnicate --help"), FB_ERR_USAGE);
    fb_opts_result_free(&p.res);
}

static void test_help_lists_every_spelling(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    struct fb_opts_ctx ctx = {"fabric-demo run", demo_options, "usage: fabric-demo run [options]\n"};
    fb_opts_usage(f, &ctx);
    fclose(f);
    CHECK(strncmp(text, "usage: fabric-demo run [options]\noptions:\n", 42) == 0);
    CHECK_CONTAINS(text, "-n, --name NAME");
    CHECK_CONTAINS(text, "    --fabric auto|rdma|tcpxo");
    CHECK_CONTAINS(text, "a directory (repeatable, at most 3)");
    CHECK_CONTAINS(text, "\n  -v ");
    free(text);
}

static void test_the_hash_follows_values_not_spelling(void)
{
    struct parsed a = {0}, b = {0};
    CHECK_INT(parse(&a, "run -d x -d y --fabric rdma"), FB_OK);
    CHECK_INT(parse(&b, "run --dir=x --fabric=rdma --dir y"), FB_OK);
    CHECK(fb_opts_hash(demo_options, &a.d) == fb_opts_hash(demo_options, &b.d));
    CHECK_INT(parse(&b, "run -d x -d z --fabric rdma"), FB_OK);
    CHECK(fb_opts_hash(demo_options, &a.d) != fb_opts_hash(demo_options, &b.d));
    fb_opts_result_free(&a.res);
    fb_opts_result_free(&b.res);
}

static void test_the_plain_parse_names_the_program_from_argv0(void)
{
    struct parsed p = {0};
    split(&p.w, "/opt/bin/all_reduce_perf --frobnicate");
    CHECK_INT(fb_opts_parse(demo_options, p.w.argc, p.w.argv, &p.d, &p.res, &p.err), FB_ERR_USAGE);
    CHECK_STR(p.err.msg, "unknown option '--frobnicate' for all_reduce_perf; see all_reduce_perf --help");
    fb_opts_result_free(&p.res);
}

/* Reports what it was run with through the error, so the test sees it. */
static enum fb_status run_echo(const struct fb_opts_ctx *ctx, int argc, char **argv,
                               struct fb_err *err)
{
    struct demo d = {0};
    struct fb_opts_result res;
    enum fb_status st = fb_opts_parse_ctx(ctx, argc, argv, &d, &res, err);
    if (st == FB_OK)
        st = fb_fail(err, FB_ERR_WRONG, "%s (%s): %s, %d positional, name %s", ctx->prog,
                     ctx->argv0, argv[0], res.npositional, d.name ? d.name : "-");
    fb_opts_result_free(&res);
    return st;
}

static const struct fb_opt no_options[] = {FB_OPT_END};

static void test_subcommands_dispatch_by_name(void)
{
    static const struct fb_subcmd cmds[] = {
        {"first", no_options, "usage: fabric-demo first\n", run_echo},
        {"second", demo_options, "usage: fabric-demo second [-n NAME] FILE...\n", run_echo},
        {NULL},
    };
    CHECK(fb_subcmd_find(cmds, "third") == NULL);
    CHECK(fb_subcmd_find(cmds, "first") == &cmds[0]);
    const struct fb_subcmd *c = fb_subcmd_find(cmds, "second");
    CHECK(c == &cmds[1]);
    struct words w;
    struct fb_err err = {0};
    split(&w, "./fabric-demo second a -n x b");
    CHECK_INT(fb_subcmd_run("fabric-demo", c, w.argc, w.argv, &err), FB_ERR_WRONG);
    CHECK_STR(err.msg, "fabric-demo second (./fabric-demo): second, 2 positional, name x");
    fb_err_clear(&err);
    split(&w, "fabric-demo first -n x");
    CHECK_INT(fb_subcmd_run("fabric-demo", &cmds[0], w.argc, w.argv, &err), FB_ERR_USAGE);
    CHECK_STR(err.msg, "unknown option '-n' for fabric-demo first; see fabric-demo first --help");
}

int main(void)
{
    RUN(test_every_spelling_of_a_value);
    RUN(test_integers_in_hex_and_octal);
    RUN(test_positionals_before_between_and_after_options);
    RUN(test_short_flags_share_a_word);
    RUN(test_repeatable_values_fill_the_array);
    RUN(test_choices_store_the_index);
    RUN(test_usage_errors_have_one_wording);
    RUN(test_values_that_look_like_options);
    RUN(test_help_ends_the_parse);
    RUN(test_help_lists_every_spelling);
    RUN(test_the_hash_follows_values_not_spelling);
    RUN(test_the_plain_parse_names_the_program_from_argv0);
    RUN(test_subcommands_dispatch_by_name);
    return fbt_done();
}
