/* fabric-report: verdicts, comparisons, imports and plots for fabric-bench
 * results. Each subcommand parses its options, calls into the report
 * modules and returns one status; main prints the one-line error, if any,
 * and exits with the status (docs/exit-codes.md, docs/report.md). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/files.h"
#include "core/jsonio.h"
#include "core/options.h"
#include "core/units.h"
#include "core/version.h"
#include "report/compare.h"
#include "report/history.h"
#include "report/html.h"
#include "report/export.h"
#include "report/import.h"
#include "nccl/nccl_log.h"
#include "nccl/collective.h"
#include "report/plot.h"
#include "report/atlas.h"
#include "report/probe_verdict.h"
#include "report/profile_match.h"
#include "report/result.h"
#include "report/split_verdict.h"
#include "core/text.h"
#include "report/verdict.h"

#define PROFILE_DIRS_MAX 8

static const char usage_text[] =
    "usage: fabric-report COMMAND [ARGS]   (fabric-report COMMAND --help for details)\n"
    "  check RESULT.json [--profile NAME] [--json]     verdict: PASS, DEGRADED, TCP-FALLBACK, FAIL, INCOMPLETE\n"    "  check INTRA-NODE.json INTER-NODE.json           the pair of fabric-coll --split intra-inter\n"
    "  compare RESULT.json...|DIR... [--markdown|--csv|--json] [--baseline N|NAME|FILE]\n"
    "  import FILE... [-o OUT.json|DIR/]               nccl-tests text/-J JSON, perftest text/--out_json\n"
    "  plot RESULT.json...|DIR... -o FILE.png|FILE.svg busBW vs size with reference lines (gnuplot)\n"
    "  baseline RESULT.json... --name NAME             save a profile from a known-good run\n"
    "  transport LOG...|DIR [--json]                   which network NCCL used, from NCCL_DEBUG=INFO logs\n"
    "  profiles [--json]                               list the reference profiles found\n"
    "  export --format FMT FILE...|DIR... [-o FILE]    for dashboards and CI: openmetrics, prometheus, junit, ctrf\n"
    "  history DIR... [--size S] [--k K] [--json]      busBW over time per series, outliers flagged\n"
    "  html DIR... -o REPORT.html                      one self-contained page: verdicts, comparisons, history\n"
    "Exit codes: 0 PASS/success, 20 DEGRADED, 21 TCP-FALLBACK, 22 FAIL, 23 INCOMPLETE,\n"
    "            1 internal error, 2 usage error, 5 gnuplot not installed, 7 output not\n"
    "            writable, 8 gnuplot timed out, 9 gnuplot failed, 10 input error\n"
    "            (docs/exit-codes.md).\n";

#define LOG_ARGS_MAX 64
#define PLOT_PROFILES_MAX 16

/* Rows several subcommands share; T names the struct with their fields. */
#define PROFILES_OPTION(T)                                                                     \
    {'P', "profiles", FB_OPT_STRING, offsetof(T, profile_dirs), "DIR",                         \
     "also look for reference profiles in DIR", .max_count = PROFILE_DIRS_MAX,                 \
     .count_offset = offsetof(T, nprofile_dirs)}
#define NCCL_LOG_OPTION(T)                                                                     \
    {'L', "nccl-log", FB_OPT_STRING, offsetof(T, logs), "FILE|DIR",                            \
     "an NCCL_DEBUG=INFO log of the run, or a directory holding all of them",                 \
     .max_count = LOG_ARGS_MAX, .count_offset = offsetof(T, nlogs)}
/* --help answers whatever follows it on the command line. */
#define HELP_OPTION(T)                                                                         \
    {'h', "help", FB_OPT_FLAG, offsetof(T, help), NULL, "this help", .ends_parse = 1}

/* What a subcommand does once its options are parsed into args. */
typedef enum fb_status (*cmd_body)(const void *args, int npaths, char **paths,
                                   struct fb_err *err);

/* Parses the subcommand's words into args, then answers --help or runs
 * body with the positional arguments. */
static enum fb_status parse_and_run(const struct fb_opts_ctx *ctx, int argc, char **argv,
                                    void *args, const int *help, cmd_body body,
                                    struct fb_err *err)
{
    struct fb_opts_result res;
    enum fb_status st = fb_opts_parse_ctx(ctx, argc, argv, args, &res, err);
    if (st == FB_OK && *help)
        fb_opts_usage(stdout, ctx);
    else if (st == FB_OK)
        st = body(args, res.npositional, res.positional, err);
    fb_opts_result_free(&res);
    return st;
}

/* A document on stdout through the one serialiser (valid UTF-8 whatever
 * an input's strings held). */
static void print_json(json_object *doc)
{
    struct fb_err ignored = {0};
    fb_json_print(stdout, doc, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE, &ignored);
}

static void print_str(FILE *f, const struct fb_str *s)
{
    fputs(fb_str_get(s), f);
    fflush(f);
}

/* A result given separately captured NCCL logs: their transport replaces
 * whatever the file says (the file is not changed). `doc` is the file
 * already parsed (taken), or NULL to read it here, where a file that is not
 * JSON gets the reader's pointer to `import`. */
static enum fb_status load_with_logs(const char *path, json_object *doc, const char *const *logs,
                                     int nlogs, struct fb_result *r, struct fb_err *err)
{
    if (doc == NULL && nlogs == 0)
        return fb_result_load(path, r, err);
    json_object *t = NULL;
    enum fb_status st = nlogs > 0 ? fb_transport_from_args(logs, nlogs, &t, err) : FB_OK;
    if (st == FB_OK && doc == NULL)
        st = fb_json_read_file(path, &doc, err);
    if (st != FB_OK) {
        json_object_put(t);
        json_object_put(doc);
        return st;
    }
    if (t != NULL && json_object_is_type(doc, json_type_object))
        json_object_object_add(doc, "transport", t);
    else
        json_object_put(t);
    return fb_result_from_json(doc, path, r, err);
}

static enum fb_status fail_collective_option(const char *given, struct fb_err *err)
{
    char names[FB_COLL_NAMES_MAX];
    fb_collective_names(names, sizeof names, " or ");
    return fb_fail(err, FB_ERR_USAGE, "--collective %s: use %s", given, names);
}

/* ---- check ---- */

static const char check_help[] =
    "usage: fabric-report check RESULT.json [--profile NAME] [--profiles DIR] [--json] [--explain]\n"
    "       fabric-report check INTRA-NODE.json INTER-NODE.json\n"
    "         [--nccl-log FILE|DIR]... [--single-node ONE-NODE.json]\n"
    "Judges one collective result against a reference profile: the one --profile names,\n"
    "else its own kept beside it (RESULT.profile.json, as make demo writes), else one picked\n"
    "from the GPU model, node count and network (the atlas: fabric-report profiles); a run\n"
    "no profile describes is judged by its GPU family, then by physics: the TCP-fallback band,\n"
    "the bound its NICs or GPU links allow, Tree/NVLS inflation across nodes.\n"
    "--nccl-log reads the run's NCCL_DEBUG=INFO logs for its transport; --single-node\n"
    "holds a multi-node run against a run of the same GPUs on one node; --explain prints\n"
    "the chain that decided the verdict (profile or physics rule, inputs, sources).\n"
    "Two results, the intra-node and inter-node files of one fabric-coll --split intra-inter\n"
    "launch, are judged against each other: per-GPU busBW across nodes vs inside a node.\n"
    "Exit code = verdict: 0 PASS, 20 DEGRADED, 21 TCP-FALLBACK, 22 FAIL, 23 INCOMPLETE\n"
    "(docs/report.md); else 1 internal error, 2 usage (or no profile applies: name one),\n"
    "10 input error.\n";

struct check_args {
    const char *profile;
    const char *single_node;
    const char *profile_dirs[PROFILE_DIRS_MAX];
    int nprofile_dirs;
    const char *logs[LOG_ARGS_MAX];
    int nlogs;
    int json, explain, help;
};

#define CHECK_ARG(f) offsetof(struct check_args, f)

static const struct fb_opt check_options[] = {
    {'p', "profile", FB_OPT_STRING, CHECK_ARG(profile), "NAME", "judge against this profile instead of the one picked for the run"},
    PROFILES_OPTION(struct check_args),
    {'j', "json", FB_OPT_FLAG, CHECK_ARG(json), NULL, "the verdict as a document (docs/schema/report-check.schema.json)"},
    NCCL_LOG_OPTION(struct check_args),
    {0, "single-node", FB_OPT_STRING, CHECK_ARG(single_node), "FILE", "a run of the same GPUs on one node: the figure each GPU should get across nodes"},
    {0, "explain", FB_OPT_FLAG, CHECK_ARG(explain), NULL, "after the verdict, the chain that decided it: the profile picked and why, or the physics rule and its inputs, and the sources"},
    HELP_OPTION(struct check_args),
    FB_OPT_END,
};

/* A fabric-rdma result is judged by its flags (an imported perftest run
 * by the atlas's figure for its link); takes `doc`. */
static enum fb_status judge_probe(const struct check_args *a, json_object *doc, const char *path, struct fb_err *err)
{
    enum fb_status verdict = FB_OK;
    struct fb_str text = {0};
    struct fb_profiles ps = {0};
    enum fb_status st = a->json ? fb_fail(err, FB_ERR_USAGE, "check --json describes collective verdicts; a probe result's verdict is text (its flags are in the file)")
                                : fb_profiles_load_default(a->profile_dirs, a->nprofile_dirs, &ps, err);
    if (st == FB_OK)
        st = fb_probe_judge(doc, path, &ps, &text, &verdict, err);
    if (st == FB_OK)
        print_str(stdout, &text);
    fb_str_free(&text);
    fb_profiles_free(&ps);
    json_object_put(doc);
    return st == FB_OK ? verdict : st;
}

/* The two results of fabric-coll --split intra-inter, judged together. */
static enum fb_status judge_split_pair(const struct check_args *a, char **paths, struct fb_err *err)
{
    if (a->json || a->profile != NULL || a->single_node != NULL || a->nlogs > 0)
        return fb_fail(err, FB_ERR_USAGE, "an intra-node/inter-node pair is judged against itself, as text: drop "
                       "--json, --profile, --single-node and --nccl-log (check each file alone for those)");
    struct fb_result one = {0}, two = {0};
    enum fb_status st = fb_result_load(paths[0], &one, err);
    if (st == FB_OK)
        st = fb_result_load(paths[1], &two, err);
    struct fb_str text = {0};
    enum fb_status verdict = FB_OK;
    if (st == FB_OK)
        st = fb_split_judge(&one, &two, &text, &verdict, err);
    if (st == FB_OK)
        print_str(stdout, &text);
    fb_str_free(&text);
    fb_result_free(&one);
    fb_result_free(&two);
    return st == FB_OK ? verdict : st;
}

static enum fb_status judge_one(const void *args, int npaths, char **paths, struct fb_err *err)
{
    const struct check_args *a = args;
    if (npaths == 2)
        return judge_split_pair(a, paths, err);
    if (npaths != 1)
        return fb_fail(err, FB_ERR_USAGE, "check takes one RESULT.json, or the two of a --split intra-inter launch "
                       "(got %d); see fabric-report check --help", npaths);
    /* The file is parsed once: its kind picks the verdict. When it does not
     * parse, the collective reader reads it again for its own message. */
    json_object *doc = NULL;
    struct fb_err unread = {0};
    if (fb_json_read_file(paths[0], &doc, &unread) == FB_OK && fb_is_probe_doc(doc))
        return judge_probe(a, doc, paths[0], err);
    struct fb_profiles ps = {0};
    enum fb_status st = fb_profiles_load_default(a->profile_dirs, a->nprofile_dirs, &ps, err);
    struct fb_result r;
    if (st == FB_OK)
        st = load_with_logs(paths[0], doc, a->logs, a->nlogs, &r, err);
    else
        json_object_put(doc);
    if (st != FB_OK) {
        fb_profiles_free(&ps);
        return st;
    }
    struct fb_result one = {0};
    struct fb_verdict_ask ask = {.profile_name = a->profile};
    if (a->single_node != NULL) {
        st = fb_result_load(a->single_node, &one, err);
        if (st == FB_OK && one.nodes != 1)
            st = fb_fail(err, FB_ERR_USAGE, "--single-node %s ran on %ld nodes; give a run on one node of the same GPUs", a->single_node, one.nodes);
        if (st == FB_OK && strcmp(one.collective, r.collective) != 0)
            st = fb_fail(err, FB_ERR_USAGE, "--single-node %s is %s, the run is %s; give a single-node run of the same collective", a->single_node, one.collective, r.collective);
        ask.single_node = &one;
    }
    struct fb_verdict v = {0};
    if (st == FB_OK)
        st = fb_verdict_judge_with(&r, &ps, &ask, &v, err);
    if (st == FB_OK) {
        if (a->json) {
            json_object *o = fb_verdict_json(&v, &r);
            print_json(o);
            json_object_put(o);
        } else {
            struct fb_str text = {0};
            fb_verdict_text(&v, &r, &text);
            if (a->explain)
                fb_verdict_explain(&v, &r, &ps, &text);
            print_str(stdout, &text);
            fb_str_free(&text);
        }
        st = v.code;
    }
    fb_verdict_free(&v);
    fb_result_free(&one);
    fb_result_free(&r);
    fb_profiles_free(&ps);
    return st;
}

static enum fb_status cmd_check(const struct fb_opts_ctx *ctx, int argc, char **argv, struct fb_err *err)
{
    struct check_args a = {0};
    return parse_and_run(ctx, argc, argv, &a, &a.help, judge_one, err);
}

/* ---- compare ---- */

static const char compare_help[] =
    "usage: fabric-report compare RESULT.json...|DIR... [--markdown|--csv|--json]\n"
    "         [--baseline N|CLUSTER|FILE] [--noise PCT] [--collective NAME] [--latest] [--allow-mixed]\n"
    "busBW per size side by side (best of out-of-place and in-place), ratios against the\n"
    "first result or --baseline, '-'/'+' where a result leaves the noise band (default 5 %,\n"
    "wider where repetitions spread more). Directories are searched for collective results;\n"
    "--latest keeps the newest result of each cluster and collective.\n"
    "Exit codes: 0 success, 1 internal error, 2 usage, 10 input error.\n";

struct compare_args {
    int markdown, csv, json;
    const char *baseline;
    double noise; /* percent */
    const char *collective;
    int latest, allow_mixed, help;
};

#define COMPARE_ARG(f) offsetof(struct compare_args, f)

static const struct fb_opt compare_options[] = {
    {0, "markdown", FB_OPT_FLAG, COMPARE_ARG(markdown), NULL, "a list of the results, then a Markdown table"},
    {0, "csv", FB_OPT_FLAG, COMPARE_ARG(csv), NULL, "one CSV row per size and result"},
    {0, "json", FB_OPT_FLAG, COMPARE_ARG(json), NULL, "a document (docs/schema/report-compare.schema.json)"},
    {'b', "baseline", FB_OPT_STRING, COMPARE_ARG(baseline), "N|CLUSTER|FILE", "the result the ratios are against: its position (from 1), cluster or file (default: the first)"},
    {'n', "noise", FB_OPT_DOUBLE, COMPARE_ARG(noise), "PCT", "half-width of the noise band in percent (default 5)", 0, 99.999},
    {'C', "collective", FB_OPT_STRING, COMPARE_ARG(collective), "NAME", "only the results of this collective"},
    {0, "latest", FB_OPT_FLAG, COMPARE_ARG(latest), NULL, "only the newest result of each cluster and collective"},
    {0, "allow-mixed", FB_OPT_FLAG, COMPARE_ARG(allow_mixed), NULL, "compare different collectives anyway, under a warning"},
    HELP_OPTION(struct compare_args),
    FB_OPT_END,
};

static enum fb_compare_format compare_format(const struct compare_args *a)
{
    if (a->markdown)
        return FB_CMP_MARKDOWN;
    if (a->csv)
        return FB_CMP_CSV;
    return a->json ? FB_CMP_JSON : FB_CMP_TEXT;
}

/* Results that measured nothing are said on stderr and left out, so
 * one interrupted run does not fail a whole results tree. When nothing is
 * left, the one error line says so instead. */
static enum fb_status pass_over_unmeasured(struct fb_result_set *set, const char *cmd, struct fb_err *err)
{
    struct fb_str notes = {0};
    size_t given = set->n;
    fb_result_set_drop_unmeasured(set, &notes);
    const char *text = set->n > 0 ? fb_str_get(&notes) : "";
    for (const char *line = text; *line != '\0';) {
        const char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        fprintf(stderr, "fabric-report %s: note: %.*s\n", cmd, (int)n, line);
        line += n + (nl != NULL);
    }
    fb_str_free(&notes);
    if (set->n == 0)
        return fb_fail(err, FB_ERR_INPUT, "nothing to %s: no result with a measured size among the inputs (%zu stopped before their first size)",
                       cmd, given);
    return FB_OK;
}

static enum fb_status compare_results(const void *args, int npaths, char **paths, struct fb_err *err)
{
    const struct compare_args *a = args;
    if (a->markdown + a->csv + a->json > 1)
        return fb_fail(err, FB_ERR_USAGE, "give one of --markdown, --csv, --json");
    if (npaths == 0)
        return fb_fail(err, FB_ERR_USAGE, "compare needs result files or directories; see fabric-report compare --help");
    struct fb_compare_opts o = {.format = compare_format(a), .baseline = a->baseline,
                                .noise = a->noise / 100, .allow_mixed = a->allow_mixed};
    struct fb_result_set set;
    enum fb_status st = fb_result_set_load((const char *const *)paths, npaths, &set, err);
    if (st != FB_OK)
        return st;
    st = pass_over_unmeasured(&set, "compare", err);
    if (st == FB_OK && a->collective != NULL)
        st = fb_result_set_filter(&set, a->collective, err);
    if (a->latest)
        fb_result_set_latest(&set);
    struct fb_str out = {0};
    if (st == FB_OK)
        st = fb_compare(&set, &o, &out, err);
    if (st == FB_OK)
        print_str(stdout, &out);
    fb_str_free(&out);
    fb_result_set_free(&set);
    return st;
}

static enum fb_status cmd_compare(const struct fb_opts_ctx *ctx, int argc, char **argv, struct fb_err *err)
{
    struct compare_args a = {.noise = 5};
    return parse_and_run(ctx, argc, argv, &a, &a.help, compare_results, err);
}

/* ---- import ---- */

static const char import_help[] =
    "usage: fabric-report import FILE... [-o OUT.json|DIR/] [--cluster NAME] [--collective NAME]\n"
    "         [--format auto|nccl-tests-text|nccl-tests-json|rccl-tests-json|perftest-text|perftest-json]\n"
    "         [--units Gbps|MBps] [--nccl-log FILE|DIR]... [--force]\n"
    "Converts nccl-tests and rccl-tests output (text tables old and new, -J JSON,\n"
    "rccl-tests -Z json) and perftest\n"
    "ib_*_bw output (text, --out_json) into fabric-bench results JSON. One result goes\n"
    "to stdout unless -o names a file; several need -o DIR/ (one file each, named after\n"
    "its input, -2, -3 added where two inputs share a name; a file already there is\n"
    "replaced only with --force).\n"
    "--nccl-log adds the transport from the run's separate NCCL_DEBUG=INFO logs.\n"
    "Exit codes: 0 success, 1 internal error, 2 usage, 7 -o not writable, 10 input error,\n"
    "25 INVALID: not one run's measurement (independent runs in one output: nccl-tests\n"
    "built without MPI under mpirun/srun; rank counts that disagree)\n"
    "(nothing is written unless every input converts).\n";

static bool is_dir(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static enum fb_status import_one(const char *path, enum fb_import_format f, struct fb_import_opts *o,
                                 struct fb_import_out *out, struct fb_err *err)
{
    struct stat sb;
    o->mtime = stat(path, &sb) == 0 ? (long long)sb.st_mtime : -1;
    char *text = NULL;
    size_t len = 0;
    enum fb_status st = fb_read_text_file(path, &text, &len, err);
    if (st != FB_OK)
        return st;
    if (len == 0)
        st = fb_fail(err, FB_ERR_INPUT, "%s is empty; nothing to import", path);
    else
        st = fb_import_text(path, text, len, f, o, out, err);
    free(text);
    return st;
}

/* DIR/<input name without extension>[-<collective>].json */
static void import_target(const char *dir, const char *input, json_object *doc, bool with_kind, char *buf, size_t len)
{
    const char *base = strrchr(input, '/');
    base = base ? base + 1 : input;
    char stem[256];
    snprintf(stem, sizeof stem, "%s", base);
    char *dot = strrchr(stem, '.');
    if (dot != NULL && dot != stem)
        *dot = '\0';
    const char *coll = fb_json_get_string(doc, "collective");
    size_t dl = strlen(dir);
    snprintf(buf, len, "%s%s%s%s%s.json", dir, dl && dir[dl - 1] == '/' ? "" : "/", stem,
             with_kind && coll ? "-" : "", with_kind && coll ? coll : "");
}

static void import_note(const char *input, const char *target, json_object *doc)
{
    json_object *rows = NULL;
    bool complete = false;
    fb_json_get_bool(doc, "complete", &complete);
    const char *kind = fb_json_get_string(doc, "kind"), *what = fb_json_get_string(doc, "collective");
    bool probe = kind != NULL && strcmp(kind, "probe") == 0;
    if (probe)
        what = "probe";
    else if (what == NULL)
        what = "collective not named";
    size_t n = 0, unknown = 0;
    if (json_object_object_get_ex(doc, probe ? "links" : "rows", &rows) && json_object_is_type(rows, json_type_array))
        n = json_object_array_length(rows);
    /* A size the tool printed but did not measure (perftest's zeros after a
     * failed clock calibration) is said here, not only in `warnings`. */
    for (size_t i = 0; probe && i < n; i++) {
        json_object *avg = NULL;
        json_object_object_get_ex(json_object_array_get_idx(rows, i), "avg_Gbps", &avg);
        unknown += avg == NULL;
    }
    char unmeasured[64] = "";
    if (unknown > 0)
        snprintf(unmeasured, sizeof unmeasured, ", %zu not measured (see warnings)", unknown);
    printf("imported %s -> %s (%s, %zu %s%s%s%s)\n", input, target, what, n, probe ? "measurement" : "row",
           n == 1 ? "" : "s", unmeasured, complete ? "" : ", incomplete");
}

struct import_args {
    const char *output, *cluster, *collective, *format, *units;
    const char *logs[LOG_ARGS_MAX];
    int nlogs;
    int force, help;
};

#define IMPORT_ARG(f) offsetof(struct import_args, f)

static const struct fb_opt import_options[] = {
    {'o', "output", FB_OPT_STRING, IMPORT_ARG(output), "OUT.json|DIR/", "write the result to this file, or each result to a file in DIR/ (default: stdout)"},
    {'c', "cluster", FB_OPT_STRING, IMPORT_ARG(cluster), "NAME", "cluster label of the results (default: the first host, else the file name)"},
    {'C', "collective", FB_OPT_STRING, IMPORT_ARG(collective), "NAME", "the collective, when the input does not say"},
    {'f', "format", FB_OPT_STRING, IMPORT_ARG(format), "FORMAT", "auto (from the content, default), nccl-tests-text, nccl-tests-json, rccl-tests-json, perftest-text or perftest-json"},
    {'u', "units", FB_OPT_STRING, IMPORT_ARG(units), "Gbps|MBps", "perftest --out_json units, when they cannot be inferred"},
    NCCL_LOG_OPTION(struct import_args),
    {0, "force", FB_OPT_FLAG, IMPORT_ARG(force), NULL, "replace files that exist in -o DIR/"},
    HELP_OPTION(struct import_args),
    FB_OPT_END,
};

/* Converts every input before writing any: a bad input writes nothing. */
static enum fb_status import_all(int npaths, char **paths, enum fb_import_format f,
                                 const struct fb_import_opts *o, json_object *transport,
                                 struct fb_import_out *outs, struct fb_err *err)
{
    enum fb_status st = FB_OK;
    struct fb_import_opts one = *o;
    for (int i = 0; i < npaths && st == FB_OK; i++) {
        st = import_one(paths[i], f, &one, &outs[i], err);
        for (size_t k = 0; st == FB_OK && transport != NULL && k < outs[i].n; k++) {
            json_object *doc = outs[i].docs[k];
            const char *kind = fb_json_get_string(doc, "kind");
            if (kind != NULL && strcmp(kind, "collective") == 0)
                json_object_object_add(doc, "transport", json_object_get(transport));
        }
    }
    return st;
}

/* The name of each result written to DIR/: its own, or numbered (-2, -3)
 * when an earlier result of this import took it (a/log.txt and b/log.txt). */
static enum fb_status distinct_target(const char *dir, const char *input, json_object *doc, bool with_kind,
                                      char (*taken)[PATH_MAX], size_t ntaken, struct fb_err *err)
{
    char base[PATH_MAX];
    import_target(dir, input, doc, with_kind, base, sizeof base);
    for (int n = 1; n <= (int)ntaken + 1; n++) {
        if (!fb_out_numbered(base, n, taken[ntaken], sizeof taken[ntaken]))
            return fb_fail(err, FB_ERR_USAGE, "output path too long: %s; choose a shorter -o DIR/", base);
        bool used = false;
        for (size_t k = 0; k < ntaken && !used; k++)
            used = strcmp(taken[k], taken[ntaken]) == 0;
        if (!used)
            return FB_OK;
    }
    return fb_fail(err, FB_ERR_INTERNAL, "no free name for %s", base); /* ntaken + 1 names cannot all be taken */
}

/* Where each result goes, decided before anything is written: a name in
 * DIR/ is never over an existing file unless --force. */
static enum fb_status import_targets(int npaths, char **paths, const char *output, bool to_dir, bool force,
                                     const struct fb_import_out *outs, char (*targets)[PATH_MAX],
                                     struct fb_err *err)
{
    size_t t = 0;
    enum fb_status st = FB_OK;
    for (int i = 0; i < npaths && st == FB_OK; i++) {
        for (size_t k = 0; k < outs[i].n && st == FB_OK; k++, t++) {
            if (!to_dir) {
                snprintf(targets[t], sizeof targets[t], "%s", output);
                continue;
            }
            st = distinct_target(output, paths[i], outs[i].docs[k], outs[i].n > 1, targets, t, err);
            struct stat sb;
            if (st == FB_OK && !force && lstat(targets[t], &sb) == 0)
                st = fb_fail(err, FB_ERR_USAGE, "%s already exists; add --force to replace it, or choose another -o DIR/",
                             targets[t]);
        }
    }
    return st;
}

static enum fb_status write_imports(int npaths, char **paths, const char *output, bool force,
                                    const struct fb_import_out *outs, struct fb_err *err)
{
    bool to_dir = output != NULL && (is_dir(output) || output[strlen(output) - 1] == '/');
    size_t total = 0;
    for (int i = 0; i < npaths; i++)
        total += outs[i].n;
    if (total > 1 && !to_dir)
        return fb_fail(err, FB_ERR_USAGE, "the inputs hold %zu results; write them to a directory with -o DIR/", total);
    if (output == NULL) {
        for (int i = 0; i < npaths; i++)
            for (size_t k = 0; k < outs[i].n; k++)
                print_json(outs[i].docs[k]);
        return FB_OK;
    }
    char (*targets)[PATH_MAX] = calloc(total ? total : 1, sizeof *targets);
    if (targets == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory importing");
    enum fb_status st = import_targets(npaths, paths, output, to_dir, force, outs, targets, err);
    size_t t = 0;
    for (int i = 0; i < npaths && st == FB_OK; i++) {
        for (size_t k = 0; k < outs[i].n && st == FB_OK; k++, t++) {
            st = fb_json_write_atomic_for(targets[t], outs[i].docs[k], "-o OUT.json|DIR/", err);
            if (st == FB_OK)
                import_note(paths[i], targets[t], outs[i].docs[k]);
        }
    }
    free(targets);
    return st;
}

static enum fb_status import_files(const void *args, int npaths, char **paths, struct fb_err *err)
{
    const struct import_args *a = args;
    struct fb_import_opts o = {.cluster = a->cluster, .collective = a->collective,
                               .units = a->units, .mtime = -1};
    enum fb_import_format f = FB_IMPORT_AUTO;
    json_object *transport = NULL;
    enum fb_status st = a->format != NULL ? fb_import_format_parse(a->format, &f, err) : FB_OK;
    if (st != FB_OK)
        return st;
    if (npaths == 0)
        st = fb_fail(err, FB_ERR_USAGE, "import needs at least one FILE; see fabric-report import --help");
    else if (o.collective != NULL && !fb_collective_known(o.collective))
        st = fail_collective_option(o.collective, err);
    else if (a->nlogs > 0)
        st = fb_transport_from_args(a->logs, a->nlogs, &transport, err);
    if (st != FB_OK)
        return st;
    struct fb_import_out *outs = calloc((size_t)npaths, sizeof *outs);
    if (outs == NULL)
        st = fb_fail(err, FB_ERR_INTERNAL, "out of memory importing");
    else
        st = import_all(npaths, paths, f, &o, transport, outs, err);
    if (transport != NULL)
        json_object_put(transport);
    if (st == FB_OK)
        st = write_imports(npaths, paths, a->output, a->force, outs, err);
    for (int i = 0; outs != NULL && i < npaths; i++)
        fb_import_out_free(&outs[i]);
    free(outs);
    return st;
}

static enum fb_status cmd_import(const struct fb_opts_ctx *ctx, int argc, char **argv, struct fb_err *err)
{
    struct import_args a = {0};
    return parse_and_run(ctx, argc, argv, &a, &a.help, import_files, err);
}

/* ---- plot ---- */

static const char plot_help[] =
    "usage: fabric-report plot RESULT.json...|DIR... -o FILE.png|FILE.svg [--profile NAME]...\n"
    "         [--no-auto-profile] [--size WxH] [--title TEXT] [--logy] [--script FILE.gp]\n"
    "         [--collective NAME] [--latest] [--profiles DIR]\n"
    "busBW vs message size (log2 x axis), one curve per result, the typical (dashed) and\n"
    "floor (dotted) lines of each named profile, or of the one check judges each result by\n"
    "(its own, picked, its GPU family's, or the bound physics gives). Needs gnuplot.\n"
    "Exit codes: 0 written, 1 internal error, 2 usage, 5 gnuplot not installed, 7 -o not\n"
    "writable, 8 gnuplot timed out (FABRIC_PLOT_TIMEOUT, default 60 s), 9 gnuplot failed\n"
    "or warned, 10 input error (a result with no rows to draw, too).\n";

static void add_lines(const struct fb_profile *p, const char *collective, struct fb_plot_line *lines,
                      size_t *n, size_t max)
{
    const struct fb_expect *e = fb_profile_expect(p, collective);
    if (e == NULL)
        return;
    for (size_t i = 0; i < *n; i++)
        if (strncmp(lines[i].label, p->name, strlen(p->name)) == 0 && lines[i].label[strlen(p->name)] == ':')
            return;
    char at[32];
    fb_format_size(e->at_bytes, at, sizeof at);
    if (!isnan(e->busbw) && *n < max) {
        snprintf(lines[*n].label, sizeof lines[*n].label, "%s: typical %.3g GB/s at %s", p->name, e->busbw, at);
        lines[*n].gbps = e->busbw;
        lines[*n].floor = false;
        (*n)++;
    }
    if (!isnan(e->floor) && *n < max) {
        snprintf(lines[*n].label, sizeof lines[*n].label, "%s: floor %.3g GB/s", p->name, e->floor);
        lines[*n].gbps = e->floor;
        lines[*n].floor = true;
        (*n)++;
    }
}

/* The bound physics judged a run by, drawn as a profile's lines are: the
 * bound dashed, the floor dotted. */
static void add_physics_lines(const struct fb_physics *ph, struct fb_plot_line *lines, size_t *n, size_t max)
{
    const char *what = ph->across ? "NICs" : "GPU links";
    for (size_t i = 0; i < *n; i++)
        if (lines[i].gbps == ph->bound && strncmp(lines[i].label, "physics", 7) == 0)
            return;
    if (*n < max) {
        snprintf(lines[*n].label, sizeof lines[*n].label, "physics: %s bound %.3g GB/s", what, ph->bound);
        lines[*n].gbps = ph->bound;
        lines[*n].floor = false;
        (*n)++;
    }
    if (!isnan(ph->floor) && *n < max) {
        snprintf(lines[*n].label, sizeof lines[*n].label, "physics: floor %.3g GB/s", ph->floor);
        lines[*n].gbps = ph->floor;
        lines[*n].floor = true;
        (*n)++;
    }
}

/* The lines a result is judged against when none is named, as check
 * judges it: its own profile, kept beside it, else the one picked for it or
 * its GPU family, else the bound physics gives. A run check cannot judge
 * gets none. */
static enum fb_status add_judged_lines(const struct fb_profiles *ps, const struct fb_result *r, const char *collective,
                                       struct fb_plot_line *lines, size_t *n, size_t max, struct fb_err *err)
{
    (void)err;
    struct fb_verdict v;
    struct fb_err unjudged = {0};
    if (fb_verdict_judge(r, ps, NULL, &v, &unjudged) != FB_OK)
        return FB_OK;
    if (v.profile != NULL)
        add_lines(v.profile, collective, lines, n, max);
    else if (v.by_physics)
        add_physics_lines(&v.physics, lines, n, max);
    fb_verdict_free(&v);
    return FB_OK;
}

static enum fb_status parse_size_opt(const char *text, struct fb_plot_opts *o, struct fb_err *err)
{
    int w = 0, h = 0;
    char tail = 0;
    if (sscanf(text, "%dx%d%c", &w, &h, &tail) != 2)
        return fb_fail(err, FB_ERR_USAGE, "--size %s: give WIDTHxHEIGHT in pixels, e.g. 1200x700", text);
    o->width = w;
    o->height = h;
    return FB_OK;
}

struct plot_args {
    const char *output;
    const char *named[PLOT_PROFILES_MAX];
    int nnamed;
    const char *profile_dirs[PROFILE_DIRS_MAX];
    int nprofile_dirs;
    int no_auto_profile;
    const char *size, *title;
    int logy;
    const char *script, *collective;
    int latest, help;
};

#define PLOT_ARG(f) offsetof(struct plot_args, f)

static const struct fb_opt plot_options[] = {
    {'o', "output", FB_OPT_STRING, PLOT_ARG(output), "FILE.png|FILE.svg", "the picture to write"},
    {'p', "profile", FB_OPT_STRING, PLOT_ARG(named), "NAME", "also draw this profile's lines",
     .max_count = PLOT_PROFILES_MAX, .count_offset = PLOT_ARG(nnamed)},
    PROFILES_OPTION(struct plot_args),
    {0, "no-auto-profile", FB_OPT_FLAG, PLOT_ARG(no_auto_profile), NULL, "no lines of the profiles picked for each result"},
    {'s', "size", FB_OPT_STRING, PLOT_ARG(size), "WxH", "picture size in pixels (default 1200x700)"},
    {'t', "title", FB_OPT_STRING, PLOT_ARG(title), "TEXT", "the title (default: the collective and the clusters)"},
    {0, "logy", FB_OPT_FLAG, PLOT_ARG(logy), NULL, "logarithmic busBW axis"},
    {'S', "script", FB_OPT_STRING, PLOT_ARG(script), "FILE.gp", "keep the gnuplot script, its data beside it"},
    {'C', "collective", FB_OPT_STRING, PLOT_ARG(collective), "NAME", "only the results of this collective"},
    {0, "latest", FB_OPT_FLAG, PLOT_ARG(latest), NULL, "only the newest result of each cluster and collective"},
    HELP_OPTION(struct plot_args),
    FB_OPT_END,
};

static enum fb_status plot_results(const void *args, int npaths, char **paths, struct fb_err *err)
{
    const struct plot_args *a = args;
    struct fb_plot_opts o = {.out = a->output, .width = 1200, .height = 700, .title = a->title,
                             .logy = a->logy, .script = a->script};
    if (a->size != NULL && parse_size_opt(a->size, &o, err) != FB_OK)
        return err->code;
    if (o.out == NULL)
        return fb_fail(err, FB_ERR_USAGE, "plot needs -o FILE.png or -o FILE.svg");
    if (npaths == 0)
        return fb_fail(err, FB_ERR_USAGE, "plot needs result files or directories; see fabric-report plot --help");
    struct fb_profiles ps;
    enum fb_status st = fb_profiles_load_default(a->profile_dirs, a->nprofile_dirs, &ps, err);
    if (st != FB_OK)
        return st;
    struct fb_result_set set;
    st = fb_result_set_load((const char *const *)paths, npaths, &set, err);
    if (st != FB_OK) {
        fb_profiles_free(&ps);
        return st;
    }
    st = pass_over_unmeasured(&set, "plot", err);
    if (st == FB_OK && a->collective != NULL)
        st = fb_result_set_filter(&set, a->collective, err);
    if (a->latest)
        fb_result_set_latest(&set);
    if (st == FB_OK)
        st = fb_result_set_same_collective(&set, err);
    struct fb_plot_line lines[48];
    size_t nlines = 0;
    char known[1024];
    fb_profiles_names(&ps, known, sizeof known);
    for (int i = 0; st == FB_OK && i < a->nnamed; i++) {
        const struct fb_profile *p = fb_profile_find(&ps, a->named[i]);
        if (p == NULL)
            st = fb_fail(err, FB_ERR_USAGE, "unknown profile '%s'; known: %s", a->named[i], known);
        else if (fb_profile_expect(p, set.r[0].collective) == NULL)
            st = fb_fail(err, FB_ERR_USAGE, "profile '%s' has no figures for %s", a->named[i], set.r[0].collective);
        else
            add_lines(p, set.r[0].collective, lines, &nlines, 48);
    }
    for (size_t i = 0; st == FB_OK && !a->no_auto_profile && i < set.n; i++)
        st = add_judged_lines(&ps, &set.r[i], set.r[0].collective, lines, &nlines, 48, err);
    if (st == FB_OK)
        st = fb_plot(&set, lines, nlines, &o, err);
    if (st == FB_OK)
        printf("wrote %s (%zu result%s, %zu reference line%s)\n", o.out, set.n, set.n == 1 ? "" : "s", nlines, nlines == 1 ? "" : "s");
    fb_result_set_free(&set);
    fb_profiles_free(&ps);
    return st;
}

static enum fb_status cmd_plot(const struct fb_opts_ctx *ctx, int argc, char **argv, struct fb_err *err)
{
    struct plot_args a = {0};
    return parse_and_run(ctx, argc, argv, &a, &a.help, plot_results, err);
}

/* ---- baseline ---- */

static const char baseline_help[] =
    "usage: fabric-report baseline RESULT.json... --name NAME [-o FILE] [--tolerance PCT] [--force]\n"
    "         [--profiles DIR]\n"
    "Saves a reference profile from known-good runs of one cluster (one per collective):\n"
    "typical = busBW at the largest size, floor = typical minus the tolerance (default 10 %).\n"
    "Written to ~/.config/fabric-bench/profiles/NAME.json (XDG_CONFIG_HOME honoured) unless -o;\n"
    "commit it under results/reference/ to share it. A run with busBW 0 (one rank) is refused.\n"
    "Exit codes: 0 saved, 1 internal error, 2 usage (or the name exists), 7 not writable,\n"
    "10 input error (or a run that is no baseline).\n";

struct baseline_args {
    const char *name, *output;
    double tolerance; /* percent */
    int force;
    const char *profile_dirs[PROFILE_DIRS_MAX];
    int nprofile_dirs;
    int help;
};

#define BASELINE_ARG(f) offsetof(struct baseline_args, f)

static const struct fb_opt baseline_options[] = {
    {'n', "name", FB_OPT_STRING, BASELINE_ARG(name), "NAME", "the new profile's name: letters, digits, '.', '_' and '-'"},
    {'o', "output", FB_OPT_STRING, BASELINE_ARG(output), "FILE", "write the profile here instead of the user profile directory"},
    {'t', "tolerance", FB_OPT_DOUBLE, BASELINE_ARG(tolerance), "PCT", "floor = typical minus this percentage (default 10)", 0, 99.999},
    {'f', "force", FB_OPT_FLAG, BASELINE_ARG(force), NULL, "replace an existing profile or file"},
    PROFILES_OPTION(struct baseline_args),
    HELP_OPTION(struct baseline_args),
    FB_OPT_END,
};

static enum fb_status save_baseline(const void *args, int npaths, char **paths, struct fb_err *err)
{
    const struct baseline_args *a = args;
    if (a->name == NULL)
        return fb_fail(err, FB_ERR_USAGE, "baseline needs --name NAME for the new profile");
    if (!fb_profile_name_ok(a->name))
        return fb_fail(err, FB_ERR_USAGE, "--name %s: use letters, digits, '.', '_' and '-' only", a->name);
    if (npaths == 0)
        return fb_fail(err, FB_ERR_USAGE, "baseline needs at least one RESULT.json of a known-good run");
    char target[PATH_MAX];
    if (a->output != NULL) {
        snprintf(target, sizeof target, "%s", a->output);
    } else {
        char dir[PATH_MAX - 80];
        enum fb_status st = fb_profile_user_dir(dir, sizeof dir, err);
        if (st != FB_OK)
            return st;
        snprintf(target, sizeof target, "%s/%s.json", dir, a->name);
    }
    struct fb_profiles ps;
    enum fb_status st = fb_profiles_load_default(a->profile_dirs, a->nprofile_dirs, &ps, err);
    if (st != FB_OK)
        return st;
    const struct fb_profile *clash = fb_profile_find(&ps, a->name);
    if (clash != NULL && !a->force)
        st = fb_fail(err, FB_ERR_USAGE, "profile '%s' already exists (%s); choose another --name or add --force to replace it", a->name, clash->path);
    else if (access(target, F_OK) == 0 && !a->force)
        st = fb_fail(err, FB_ERR_USAGE, "%s already exists; add --force to replace it", target);
    fb_profiles_free(&ps);
    if (st != FB_OK)
        return st;
    struct fb_result_set set;
    st = fb_result_set_load((const char *const *)paths, npaths, &set, err);
    if (st != FB_OK)
        return st;
    const struct fb_result **runs = calloc(set.n, sizeof *runs);
    json_object *doc = NULL;
    if (runs == NULL)
        st = fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    for (size_t i = 0; st == FB_OK && i < set.n; i++)
        runs[i] = &set.r[i];
    if (st == FB_OK)
        st = fb_profile_from_results(runs, set.n, a->name, a->tolerance / 100, &doc, err);
    if (st == FB_OK)
        st = fb_json_write_atomic_for(target, doc, "-o FILE", err);
    if (st == FB_OK)
        printf("saved profile %s to %s; check runs against it: fabric-report check RESULT.json --profile %s\n", a->name, target, a->name);
    if (doc != NULL)
        json_object_put(doc);
    free(runs);
    fb_result_set_free(&set);
    return st;
}

static enum fb_status cmd_baseline(const struct fb_opts_ctx *ctx, int argc, char **argv, struct fb_err *err)
{
    struct baseline_args a = {.tolerance = 10};
    return parse_and_run(ctx, argc, argv, &a, &a.help, save_baseline, err);
}

/* ---- transport ---- */

static const char transport_help[] =
    "usage: fabric-report transport LOG...|DIR [--json]\n"
    "Which network NCCL used, per rank, from its NCCL_DEBUG=INFO logs (one file per\n"
    "process as NCCL_DEBUG_FILE=DIR/nccl.%h.%p writes them, or any output holding the\n"
    "INFO lines). --json prints the results-schema \"transport\" object.\n"
    "Exit codes: 0 success, 1 internal error, 2 usage, 10 input error.\n";

struct transport_args {
    int json, help;
};

static const struct fb_opt transport_options[] = {
    {'j', "json", FB_OPT_FLAG, offsetof(struct transport_args, json), NULL, "the results-schema \"transport\" object"},
    HELP_OPTION(struct transport_args),
    FB_OPT_END,
};

static enum fb_status show_transport(const void *args, int npaths, char **paths, struct fb_err *err)
{
    const struct transport_args *a = args;
    if (npaths == 0)
        return fb_fail(err, FB_ERR_USAGE, "transport needs NCCL log files or a directory of them; see fabric-report transport --help");
    json_object *t = NULL;
    enum fb_status st = fb_transport_from_args((const char *const *)paths, npaths, &t, err);
    if (st != FB_OK)
        return st;
    if (a->json) {
        print_json(t);
    } else {
        struct fb_str text = {0};
        fb_transport_text(t, &text);
        print_str(stdout, &text);
        fb_str_free(&text);
    }
    json_object_put(t);
    return FB_OK;
}

static enum fb_status cmd_transport(const struct fb_opts_ctx *ctx, int argc, char **argv, struct fb_err *err)
{
    struct transport_args a = {0};
    return parse_and_run(ctx, argc, argv, &a, &a.help, show_transport, err);
}

/* ---- profiles ---- */

static const char profiles_help[] =
    "usage: fabric-report profiles [--json|--markdown] [--profiles DIR]\n"
    "Lists the reference profiles found (the atlas) by family: what each says and its file;\n"
    "--markdown prints the atlas table of docs/report.md (family, figures, source).\n"
    "Exit codes: 0 success, 1 internal error, 2 usage, 10 a profile that does not read.\n";

struct profiles_args {
    int json, markdown;
    const char *profile_dirs[PROFILE_DIRS_MAX];
    int nprofile_dirs;
    int help;
};

static const struct fb_opt profiles_options[] = {
    {'j', "json", FB_OPT_FLAG, offsetof(struct profiles_args, json), NULL, "a list of name, revision, role, family, description and file"},
    {0, "markdown", FB_OPT_FLAG, offsetof(struct profiles_args, markdown), NULL, "the atlas as a Markdown table: family, profile, figures, source"},
    PROFILES_OPTION(struct profiles_args),
    HELP_OPTION(struct profiles_args),
    FB_OPT_END,
};

static enum fb_status list_profiles(const void *args, int npaths, char **paths, struct fb_err *err)
{
    const struct profiles_args *a = args;
    (void)paths;
    if (npaths != 0)
        return fb_fail(err, FB_ERR_USAGE, "profiles takes no arguments");
    if (a->json && a->markdown)
        return fb_fail(err, FB_ERR_USAGE, "profiles: give --json or --markdown, not both");
    struct fb_profiles ps;
    enum fb_status st = fb_profiles_load_default(a->profile_dirs, a->nprofile_dirs, &ps, err);
    if (st != FB_OK)
        return st;
    if (!a->json) {
        struct fb_str out = {0};
        if (a->markdown)
            fb_atlas_markdown(&ps, &out);
        else
            fb_atlas_text(&ps, &out);
        print_str(stdout, &out);
        fb_str_free(&out);
        fb_profiles_free(&ps);
        return FB_OK;
    }
    json_object *arr = json_object_new_array();
    for (size_t i = 0; i < ps.n; i++) {
        const struct fb_profile *p = &ps.p[i];
        json_object *o = json_object_new_object();
        json_object_object_add(o, "name", json_object_new_string(p->name));
        json_object_object_add(o, "revision", json_object_new_int64(p->revision));
        json_object_object_add(o, "role", json_object_new_string(p->target ? "target" : "symptom"));
        json_object_object_add(o, "family", p->family[0] ? json_object_new_string(p->family) : NULL);
        json_object_object_add(o, "description", json_object_new_string(p->description));
        json_object_object_add(o, "file", json_object_new_string(p->path));
        json_object_array_add(arr, o);
    }
    print_json(arr);
    json_object_put(arr);
    fb_profiles_free(&ps);
    return FB_OK;
}

static enum fb_status cmd_profiles(const struct fb_opts_ctx *ctx, int argc, char **argv, struct fb_err *err)
{
    struct profiles_args a = {0};
    return parse_and_run(ctx, argc, argv, &a, &a.help, list_profiles, err);
}

/* ---- export ---- */

static const char export_help[] =
    "usage: fabric-report export --format openmetrics|prometheus|junit|ctrf FILE...|DIR... [-o FILE]\n"
    "         [--profiles DIR]\n"
    "Results (fabric-coll), check (fabric-report check --json), probe (fabric-rdma), doctor\n"
    "(fabric-doctor -J) and scan (fabric-scan) documents as metrics or test reports: openmetrics (OpenMetrics 1.0 text,\n"
    "for a Prometheus scrape), prometheus (the text format node-exporter's textfile collector\n"
    "reads: write it to DIR/NAME.prom), junit (JUnit XML), ctrf (CTRF JSON). Directories are\n"
    "searched for *.json; other JSON there is passed over. Results are judged as check judges them.\n"
    "Exit codes: 0 written, 1 internal error, 2 usage, 7 -o not writable, 10 input error\n"
    "(a file of no known kind, a document that does not read, no documents at all).\n";

struct export_args {
    const char *format, *output;
    const char *profile_dirs[PROFILE_DIRS_MAX];
    int nprofile_dirs;
    int help;
};

static const struct fb_opt export_options[] = {
    {'f', "format", FB_OPT_STRING, offsetof(struct export_args, format), "FORMAT", "openmetrics, prometheus, junit or ctrf"},
    {'o', "output", FB_OPT_STRING, offsetof(struct export_args, output), "FILE", "write here (replaced atomically) instead of standard output"},
    PROFILES_OPTION(struct export_args),
    HELP_OPTION(struct export_args),
    FB_OPT_END,
};

static enum fb_status export_docs(const void *args, int npaths, char **paths, struct fb_err *err)
{
    const struct export_args *a = args;
    enum fb_export_format format;
    if (a->format == NULL || !fb_export_format_parse(a->format, &format))
        return fb_fail(err, FB_ERR_USAGE, "export needs --format openmetrics, prometheus, junit or ctrf%s%s",
                       a->format ? ", not " : "", a->format ? a->format : "");
    if (npaths == 0)
        return fb_fail(err, FB_ERR_USAGE, "export needs documents or directories of them; see fabric-report export --help");
    struct fb_profiles ps;
    enum fb_status st = fb_profiles_load_default(a->profile_dirs, a->nprofile_dirs, &ps, err);
    if (st != FB_OK)
        return st;
    struct fb_export x = {0};
    struct fb_str text = {0};
    st = fb_export_load((const char *const *)paths, npaths, &ps, &x, err);
    if (st == FB_OK)
        fb_export_write(&x, format, FB_VERSION, &text);
    if (st == FB_OK && text.oom)
        st = fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    if (st == FB_OK && a->output != NULL) {
        st = fb_out_write(a->output, fb_str_get(&text), text.len, err);
        if (st != FB_OK)
            fb_out_name_option(err, "-o FILE");
    } else if (st == FB_OK) {
        print_str(stdout, &text);
    }
    if (st == FB_OK && x.duplicates > 0 && (format == FB_EXPORT_OPENMETRICS || format == FB_EXPORT_PROMETHEUS))
        fprintf(stderr, "fabric-report export: %zu sample%s of a series given again: the last document in name order (the newest run) wins\n",
                x.duplicates, x.duplicates == 1 ? "" : "s");
    fb_str_free(&text);
    fb_export_free(&x);
    fb_profiles_free(&ps);
    return st;
}

static enum fb_status cmd_export(const struct fb_opts_ctx *ctx, int argc, char **argv, struct fb_err *err)
{
    struct export_args a = {0};
    return parse_and_run(ctx, argc, argv, &a, &a.help, export_docs, err);
}

/* ---- history ---- */

static const char history_help[] =
    "usage: fabric-report history DIR...|RESULT.json... [--size S] [--k K] [--floor PCT]\n"
    "         [--collective NAME] [--per-host] [--json]\n"
    "busBW over time at one size (the largest every complete run of a series measured,\n"
    "or --size) for each series of runs: cluster, collective, backend and rank count\n"
    "(--per-host: and the hosts the runs name), in start_time order. Each run is held\n"
    "against the complete runs before it: an outlier falls below median - K*MAD (default\n"
    "K 3) and below PCT % of the median (default 80); fewer than 3 earlier runs is not\n"
    "enough history. Incomplete runs are listed, never a baseline.\n"
    "Exit codes: 0 no series ends in an outlier, 20 the newest run of a series is an\n"
    "outlier, 1 internal error, 2 usage, 10 input error.\n";

struct history_args {
    const char *size, *collective;
    double k, floor; /* floor in percent */
    int per_host, json, help;
};

#define HISTORY_ARG(f) offsetof(struct history_args, f)

static const struct fb_opt history_options[] = {
    {'s', "size", FB_OPT_STRING, HISTORY_ARG(size), "S", "the reference size, e.g. 1M (default: the largest common size)"},
    {'k', "k", FB_OPT_DOUBLE, HISTORY_ARG(k), "K", "outlier below median - K*MAD of the earlier runs (default 3)", 0, 1000},
    {0, "floor", FB_OPT_DOUBLE, HISTORY_ARG(floor), "PCT", "... and below PCT % of their median (default 80)", 0, 100},
    {'C', "collective", FB_OPT_STRING, HISTORY_ARG(collective), "NAME", "only the results of this collective"},
    {0, "per-host", FB_OPT_FLAG, HISTORY_ARG(per_host), NULL, "a series per set of hosts the runs name (a slow node shows in its own series)"},
    {'j', "json", FB_OPT_FLAG, HISTORY_ARG(json), NULL, "a document of kind \"history\" (docs/schema/history.schema.json)"},
    HELP_OPTION(struct history_args),
    FB_OPT_END,
};

static enum fb_status history_opts(const struct history_args *a, struct fb_hist_opts *o, struct fb_err *err)
{
    *o = (struct fb_hist_opts){.k = a->k, .floor = a->floor / 100, .per_host = a->per_host};
    if (a->size == NULL)
        return FB_OK;
    uint64_t bytes = 0;
    enum fb_status st = fb_parse_size(a->size, "--size", &bytes, err);
    if (st == FB_OK && bytes == 0)
        st = fb_fail(err, FB_ERR_USAGE, "--size 0: give a size the runs measured, e.g. 1M");
    o->size = bytes;
    return st;
}

static enum fb_status show_history(const void *args, int npaths, char **paths, struct fb_err *err)
{
    const struct history_args *a = args;
    if (npaths == 0)
        return fb_fail(err, FB_ERR_USAGE, "history needs a results directory (results/) or result files; see fabric-report history --help");
    struct fb_hist_opts o;
    enum fb_status st = history_opts(a, &o, err);
    if (st != FB_OK)
        return st;
    struct fb_result_set set;
    st = fb_result_set_load((const char *const *)paths, npaths, &set, err);
    if (st != FB_OK)
        return st;
    if (a->collective != NULL)
        st = fb_result_set_filter(&set, a->collective, err);
    struct fb_history h = {0};
    if (st == FB_OK)
        st = fb_history_build(&set, &o, &h, err);
    if (st == FB_OK && a->json) {
        json_object *doc = fb_history_json(&h);
        print_json(doc);
        json_object_put(doc);
    } else if (st == FB_OK) {
        struct fb_str text = {0};
        fb_history_text(&h, &text);
        print_str(stdout, &text);
        fb_str_free(&text);
    }
    if (st == FB_OK && fb_history_latest_outlier(&h))
        st = FB_VERDICT_DEGRADED;
    fb_history_free(&h);
    fb_result_set_free(&set);
    return st;
}

static enum fb_status cmd_history(const struct fb_opts_ctx *ctx, int argc, char **argv, struct fb_err *err)
{
    struct history_args a = {.k = 3, .floor = 80};
    return parse_and_run(ctx, argc, argv, &a, &a.help, show_history, err);
}

/* ---- html ---- */

static const char html_help[] =
    "usage: fabric-report html DIR...|FILE.json... -o REPORT.html [--size S] [--k K] [--floor PCT]\n"
    "         [--per-host] [--noise PCT] [--profiles DIR]\n"
    "One self-contained page (inline CSS and SVG, nothing fetched; opens from a file):\n"
    "the verdict of every result (as check gives it), the newest run of each cluster\n"
    "compared at matching sizes with busBW-vs-size plots, the history of every series\n"
    "with its outliers (as history finds them), and the doctor, probe and scan documents\n"
    "found in the directories or named. A tree with none of these is an input error.\n"
    "Written atomically.\n"
    "Exit codes: 0 written, 1 internal error, 2 usage, 7 -o not writable, 10 input error.\n";

struct html_args {
    const char *output;
    struct history_args hist;
    double noise;
    const char *profile_dirs[PROFILE_DIRS_MAX];
    int nprofile_dirs;
    int help;
};

#define HTML_ARG(f) offsetof(struct html_args, f)

static const struct fb_opt html_options[] = {
    {'o', "output", FB_OPT_STRING, HTML_ARG(output), "REPORT.html", "the page to write"},
    {'s', "size", FB_OPT_STRING, HTML_ARG(hist.size), "S", "the history's reference size (default: the largest common size)"},
    {'k', "k", FB_OPT_DOUBLE, HTML_ARG(hist.k), "K", "history outlier below median - K*MAD (default 3)", 0, 1000},
    {0, "floor", FB_OPT_DOUBLE, HTML_ARG(hist.floor), "PCT", "... and below PCT % of the median (default 80)", 0, 100},
    {0, "per-host", FB_OPT_FLAG, HTML_ARG(hist.per_host), NULL, "a history series per set of hosts the runs name"},
    {'n', "noise", FB_OPT_DOUBLE, HTML_ARG(noise), "PCT", "the comparison's noise band in percent (default 5)", 0, 99.999},
    PROFILES_OPTION(struct html_args),
    HELP_OPTION(struct html_args),
    FB_OPT_END,
};

static enum fb_status write_html(const void *args, int npaths, char **paths, struct fb_err *err)
{
    const struct html_args *a = args;
    if (a->output == NULL)
        return fb_fail(err, FB_ERR_USAGE, "html needs -o REPORT.html");
    if (npaths == 0)
        return fb_fail(err, FB_ERR_USAGE, "html needs a results directory (results/) or result files; see fabric-report html --help");
    struct fb_html_opts o = {.out = a->output, .profile_dirs = a->profile_dirs, .nprofile_dirs = a->nprofile_dirs,
                             .noise = a->noise / 100};
    enum fb_status st = history_opts(&a->hist, &o.hist, err);
    if (st == FB_OK)
        st = fb_html_report((const char *const *)paths, npaths, &o, err);
    if (st == FB_OK)
        printf("wrote %s\n", a->output);
    return st;
}

static enum fb_status cmd_html(const struct fb_opts_ctx *ctx, int argc, char **argv, struct fb_err *err)
{
    struct html_args a = {.hist = {.k = 3, .floor = 80}, .noise = 5};
    return parse_and_run(ctx, argc, argv, &a, &a.help, write_html, err);
}

static const struct fb_subcmd commands[] = {
    {"check", check_options, check_help, cmd_check},
    {"compare", compare_options, compare_help, cmd_compare},
    {"import", import_options, import_help, cmd_import},
    {"plot", plot_options, plot_help, cmd_plot},
    {"baseline", baseline_options, baseline_help, cmd_baseline},
    {"transport", transport_options, transport_help, cmd_transport},
    {"profiles", profiles_options, profiles_help, cmd_profiles},
    {"export", export_options, export_help, cmd_export},
    {"history", history_options, history_help, cmd_history},
    {"html", html_options, html_help, cmd_html},
    {NULL},
};

int main(int argc, char **argv)
{
    /* Twelve significant digits: exact for every figure printed anywhere,
     * without the binary noise of %.17g (0.05 -> 0.050000000000000003). */
    json_c_set_serialization_double_format("%.12g", JSON_C_OPTION_GLOBAL);
    if (argc < 2) {
        fputs(usage_text, stderr);
        return FB_ERR_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        fputs(usage_text, stdout);
        return FB_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("fabric-report %s\n", FB_VERSION);
        return FB_OK;
    }
    const struct fb_subcmd *cmd = fb_subcmd_find(commands, argv[1]);
    if (cmd != NULL) {
        struct fb_err err = {0};
        enum fb_status st = fb_subcmd_run("fabric-report", cmd, argc, argv, &err);
        if (err.code != FB_OK)
            fprintf(stderr, "fabric-report %s: %s\n", cmd->name, err.msg);
        return (int)st;
    }
    fprintf(stderr, "fabric-report: unknown command '%s'; use check, compare, import, plot, baseline, transport, profiles, export, history or html (fabric-report --help)\n", argv[1]);
    return FB_ERR_USAGE;
}
