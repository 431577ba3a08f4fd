/* fabric-report: verdicts, comparisons, imports and plots for fabric-bench
 * results. Each subcommand parses its options, calls into the report
 * modules and returns one status; main prints the one-line error, if any,
 * and exits with the status (docs/exit-codes.md, docs/report.md). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/files.h"
#include "core/jsonio.h"
#include "core/units.h"
#include "core/version.h"
#include "report/compare.h"
#include "report/import.h"
#include "nccl/nccl_log.h"
#include "nccl/collective.h"
#include "report/plot.h"
#include "report/profile_match.h"
#include "report/result.h"
#include "core/text.h"
#include "report/verdict.h"

#define PROFILE_DIRS_MAX 8

static const char usage_text[] =
    "usage: fabric-report COMMAND [ARGS]   (fabric-report COMMAND --help for details)\n"
    "  check RESULT.json [--profile NAME] [--json]     verdict: PASS, DEGRADED, TCP-FALLBACK, FAIL, INCOMPLETE\n"
    "  compare RESULT.json...|DIR... [--markdown|--csv|--json] [--baseline N|NAME|FILE]\n"
    "  import FILE... [-o OUT.json|DIR/]               nccl-tests text/-J JSON, perftest text/--out_json\n"
    "  plot RESULT.json...|DIR... -o FILE.png|FILE.svg busBW vs size with reference lines (gnuplot)\n"
    "  baseline RESULT.json... --name NAME             save a profile from a known-good run\n"
    "  transport LOG...|DIR [--json]                   which network NCCL used, from NCCL_DEBUG=INFO logs\n"
    "  profiles [--json]                               list the reference profiles found\n"
    "Exit codes: 0 PASS/success, 20 DEGRADED, 21 TCP-FALLBACK, 22 FAIL, 23 INCOMPLETE,\n"
    "            10 input error, 2 usage error (docs/exit-codes.md).\n";

/* Options every subcommand may take. */
struct common {
    const char *profile_dirs[PROFILE_DIRS_MAX];
    int nprofile_dirs;
};

static enum fb_status add_profile_dir(struct common *c, const char *dir, struct fb_err *err)
{
    if (c->nprofile_dirs == PROFILE_DIRS_MAX)
        return fb_fail(err, FB_ERR_USAGE, "--profiles given more than %d times", PROFILE_DIRS_MAX);
    c->profile_dirs[c->nprofile_dirs++] = dir;
    return FB_OK;
}

/* getopt_long with our own one-line errors instead of getopt's. */
static int next_opt(int argc, char **argv, const char *shortopts, const struct option *longopts,
                    const char *cmd, struct fb_err *err)
{
    opterr = 0;
    int c = getopt_long(argc, argv, shortopts, longopts, NULL);
    if (c == '?' || c == ':') {
        const char *bad = argv[optind - 1];
        if (optopt != 0 && c == ':')
            fb_fail(err, FB_ERR_USAGE, "option -%c needs a value; see fabric-report %s --help", optopt, cmd);
        else if (optopt != 0 && strchr(shortopts, optopt) != NULL)
            fb_fail(err, FB_ERR_USAGE, "option %s needs a value; see fabric-report %s --help", bad, cmd);
        else
            fb_fail(err, FB_ERR_USAGE, "unknown option %s; see fabric-report %s --help", bad, cmd);
        return -2;
    }
    return c;
}

static enum fb_status parse_percent(const char *text, const char *what, double *out, struct fb_err *err)
{
    double v = 0;
    enum fb_status st = fb_parse_double(text, what, 0, 99.999, &v, err);
    if (st == FB_OK)
        *out = v / 100;
    return st;
}

static void print_str(FILE *f, const struct fb_str *s)
{
    fputs(fb_str_get(s), f);
    fflush(f);
}

/* NCCL log arguments (--nccl-log, repeatable): files or directories. */
#define LOG_ARGS_MAX 64

struct log_args {
    const char *a[LOG_ARGS_MAX];
    int n;
};

static enum fb_status add_log_arg(struct log_args *l, const char *arg, struct fb_err *err)
{
    if (l->n == LOG_ARGS_MAX)
        return fb_fail(err, FB_ERR_USAGE, "--nccl-log given more than %d times; give directories instead", LOG_ARGS_MAX);
    l->a[l->n++] = arg;
    return FB_OK;
}

/* A result given separately captured NCCL logs: their transport replaces
 * whatever the file says (the file is not changed). */
static enum fb_status load_with_logs(const char *path, const struct log_args *logs, struct fb_result *r,
                                     struct fb_err *err)
{
    if (logs->n == 0)
        return fb_result_load(path, r, err);
    json_object *t = NULL;
    enum fb_status st = fb_transport_from_args(logs->a, logs->n, &t, err);
    if (st != FB_OK)
        return st;
    json_object *doc = NULL;
    st = fb_json_read_file(path, &doc, err);
    if (st != FB_OK) {
        json_object_put(t);
        return st;
    }
    if (json_object_is_type(doc, json_type_object))
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
    "usage: fabric-report check RESULT.json [--profile NAME] [--profiles DIR] [--json]\n"
    "         [--nccl-log FILE|DIR]...\n"
    "Judges one collective result against a reference profile, picked from the GPU model,\n"
    "node count and network unless --profile names one. Exit code = verdict:\n"
    "0 PASS, 20 DEGRADED, 21 TCP-FALLBACK, 22 FAIL, 23 INCOMPLETE (docs/report.md).\n"
    "--nccl-log reads the run's NCCL_DEBUG=INFO logs for its transport.\n";

static enum fb_status cmd_check(int argc, char **argv, struct fb_err *err)
{
    static const struct option longopts[] = {
        {"profile", required_argument, NULL, 'p'}, {"profiles", required_argument, NULL, 'P'},
        {"json", no_argument, NULL, 'j'}, {"nccl-log", required_argument, NULL, 'L'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    struct common com = {0};
    struct log_args logs = {0};
    const char *profile = NULL;
    bool json = false;
    int c;
    enum fb_status st = FB_OK;
    while (st == FB_OK && (c = next_opt(argc, argv, ":p:P:L:jh", longopts, "check", err)) != -1) {
        switch (c) {
        case 'L': st = add_log_arg(&logs, optarg, err); break;
        case 'p': profile = optarg; break;
        case 'P': if (add_profile_dir(&com, optarg, err) != FB_OK) return err->code; break;
        case 'j': json = true; break;
        case 'h': fputs(check_help, stdout); return FB_OK;
        default: st = err->code; break;
        }
    }
    if (st == FB_OK && argc - optind != 1)
        st = fb_fail(err, FB_ERR_USAGE, "check takes exactly one RESULT.json (got %d); see fabric-report check --help", argc - optind);
    struct fb_profiles ps = {0};
    if (st == FB_OK)
        st = fb_profiles_load_default(com.profile_dirs, com.nprofile_dirs, &ps, err);
    struct fb_result r;
    if (st == FB_OK)
        st = load_with_logs(argv[optind], &logs, &r, err);
    if (st != FB_OK) {
        fb_profiles_free(&ps);
        return st;
    }
    struct fb_verdict v;
    st = fb_verdict_judge(&r, &ps, profile, &v, err);
    if (st == FB_OK) {
        if (json) {
            json_object *o = fb_verdict_json(&v, &r);
            printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
            json_object_put(o);
        } else {
            struct fb_str text = {0};
            fb_verdict_text(&v, &r, &text);
            print_str(stdout, &text);
            fb_str_free(&text);
        }
        st = v.code;
    }
    fb_verdict_free(&v);
    fb_result_free(&r);
    fb_profiles_free(&ps);
    return st;
}

/* ---- compare ---- */

static const char compare_help[] =
    "usage: fabric-report compare RESULT.json...|DIR... [--markdown|--csv|--json]\n"
    "         [--baseline N|CLUSTER|FILE] [--noise PCT] [--collective NAME] [--latest] [--allow-mixed]\n"
    "busBW per size side by side (best of out-of-place and in-place), ratios against the\n"
    "first result or --baseline, '-'/'+' where a result leaves the noise band (default 5 %,\n"
    "wider where repetitions spread more). Directories are searched for collective results;\n"
    "--latest keeps the newest result of each cluster and collective.\n";

static enum fb_status cmd_compare(int argc, char **argv, struct fb_err *err)
{
    static const struct option longopts[] = {
        {"markdown", no_argument, NULL, 'm'}, {"csv", no_argument, NULL, 'c'},
        {"json", no_argument, NULL, 'j'}, {"baseline", required_argument, NULL, 'b'},
        {"noise", required_argument, NULL, 'n'}, {"collective", required_argument, NULL, 'C'},
        {"allow-mixed", no_argument, NULL, 'x'}, {"latest", no_argument, NULL, 'l'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    struct fb_compare_opts o = {.format = FB_CMP_TEXT, .noise = 0.05};
    const char *collective = NULL;
    bool latest = false;
    int c, formats = 0;
    while ((c = next_opt(argc, argv, ":b:n:C:h", longopts, "compare", err)) != -1) {
        switch (c) {
        case 'm': o.format = FB_CMP_MARKDOWN; formats++; break;
        case 'c': o.format = FB_CMP_CSV; formats++; break;
        case 'j': o.format = FB_CMP_JSON; formats++; break;
        case 'b': o.baseline = optarg; break;
        case 'n': if (parse_percent(optarg, "--noise", &o.noise, err) != FB_OK) return err->code; break;
        case 'C': collective = optarg; break;
        case 'x': o.allow_mixed = true; break;
        case 'l': latest = true; break;
        case 'h': fputs(compare_help, stdout); return FB_OK;
        default: return err->code;
        }
    }
    if (formats > 1)
        return fb_fail(err, FB_ERR_USAGE, "give one of --markdown, --csv, --json");
    if (optind == argc)
        return fb_fail(err, FB_ERR_USAGE, "compare needs result files or directories; see fabric-report compare --help");
    struct fb_result_set set;
    enum fb_status st = fb_result_set_load((const char *const *)argv + optind, argc - optind, &set, err);
    if (st != FB_OK)
        return st;
    if (collective != NULL)
        st = fb_result_set_filter(&set, collective, err);
    if (latest)
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

/* ---- import ---- */

static const char import_help[] =
    "usage: fabric-report import FILE... [-o OUT.json|DIR/] [--cluster NAME] [--collective NAME]\n"
    "         [--format auto|nccl-tests-text|nccl-tests-json|perftest-text|perftest-json]\n"
    "         [--units Gbps|MBps] [--nccl-log FILE|DIR]...\n"
    "Converts nccl-tests output (text tables old and new, -J JSON) and perftest\n"
    "ib_*_bw output (text, --out_json) into fabric-bench results JSON. One result goes\n"
    "to stdout unless -o names a file; several need -o DIR/ (one file each).\n"
    "--nccl-log adds the transport from the run's separate NCCL_DEBUG=INFO logs.\n";

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
    const char *what = fb_json_get_string(doc, "collective");
    bool probe = what == NULL;
    if (probe)
        what = "probe";
    size_t n = 0;
    if (json_object_object_get_ex(doc, probe ? "links" : "rows", &rows) && json_object_is_type(rows, json_type_array))
        n = json_object_array_length(rows);
    printf("imported %s -> %s (%s, %zu %s%s%s)\n", input, target, what, n, probe ? "measurement" : "row",
           n == 1 ? "" : "s", complete ? "" : ", incomplete");
}

static enum fb_status cmd_import(int argc, char **argv, struct fb_err *err)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'}, {"cluster", required_argument, NULL, 'c'},
        {"collective", required_argument, NULL, 'C'}, {"format", required_argument, NULL, 'f'},
        {"units", required_argument, NULL, 'u'}, {"nccl-log", required_argument, NULL, 'L'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    struct fb_import_opts o = {.mtime = -1};
    enum fb_import_format f = FB_IMPORT_AUTO;
    const char *output = NULL;
    struct log_args logs = {0};
    json_object *transport = NULL;
    int c;
    while ((c = next_opt(argc, argv, ":o:c:C:f:u:L:h", longopts, "import", err)) != -1) {
        switch (c) {
        case 'L': if (add_log_arg(&logs, optarg, err) != FB_OK) return err->code; break;
        case 'o': output = optarg; break;
        case 'c': o.cluster = optarg; break;
        case 'C': o.collective = optarg; break;
        case 'f': if (fb_import_format_parse(optarg, &f, err) != FB_OK) return err->code; break;
        case 'u': o.units = optarg; break;
        case 'h': fputs(import_help, stdout); return FB_OK;
        default: return err->code;
        }
    }
    enum fb_status st = FB_OK;
    if (optind == argc)
        st = fb_fail(err, FB_ERR_USAGE, "import needs at least one FILE; see fabric-report import --help");
    else if (o.collective != NULL && !fb_collective_known(o.collective))
        st = fail_collective_option(o.collective, err);
    else if (logs.n > 0)
        st = fb_transport_from_args(logs.a, logs.n, &transport, err);
    if (st != FB_OK)
        return st;
    bool to_dir = output != NULL && (is_dir(output) || output[strlen(output) - 1] == '/');
    /* Convert everything first: a bad input writes nothing. */
    struct fb_import_out *outs = calloc((size_t)(argc - optind), sizeof *outs);
    if (outs == NULL) {
        if (transport != NULL)
            json_object_put(transport);
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory importing");
    }
    size_t total = 0;
    for (int i = optind; i < argc && st == FB_OK; i++) {
        st = import_one(argv[i], f, &o, &outs[i - optind], err);
        total += outs[i - optind].n;
        for (size_t k = 0; st == FB_OK && transport != NULL && k < outs[i - optind].n; k++) {
            json_object *doc = outs[i - optind].docs[k];
            const char *kind = fb_json_get_string(doc, "kind");
            if (kind != NULL && strcmp(kind, "collective") == 0)
                json_object_object_add(doc, "transport", json_object_get(transport));
        }
    }
    if (transport != NULL)
        json_object_put(transport);
    if (st == FB_OK && total > 1 && !to_dir)
        st = fb_fail(err, FB_ERR_USAGE, "the inputs hold %zu results; write them to a directory with -o DIR/", total);
    for (int i = optind; i < argc && st == FB_OK; i++) {
        const struct fb_import_out *out = &outs[i - optind];
        for (size_t k = 0; k < out->n && st == FB_OK; k++) {
            if (output == NULL) {
                printf("%s\n", json_object_to_json_string_ext(out->docs[k], JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
                continue;
            }
            char target[PATH_MAX];
            if (to_dir)
                import_target(output, argv[i], out->docs[k], out->n > 1, target, sizeof target);
            else
                snprintf(target, sizeof target, "%s", output);
            st = fb_json_write_atomic(target, out->docs[k], err);
            if (st == FB_OK)
                import_note(argv[i], target, out->docs[k]);
        }
    }
    for (int i = optind; i < argc; i++)
        fb_import_out_free(&outs[i - optind]);
    free(outs);
    return st;
}

/* ---- plot ---- */

static const char plot_help[] =
    "usage: fabric-report plot RESULT.json...|DIR... -o FILE.png|FILE.svg [--profile NAME]...\n"
    "         [--no-auto-profile] [--size WxH] [--title TEXT] [--logy] [--script FILE.gp]\n"
    "         [--collective NAME] [--latest] [--profiles DIR]\n"
    "busBW vs message size (log2 x axis), one curve per result, the typical (dashed) and\n"
    "floor (dotted) lines of each named or auto-picked profile. Needs gnuplot.\n";

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

static enum fb_status cmd_plot(int argc, char **argv, struct fb_err *err)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'}, {"profile", required_argument, NULL, 'p'},
        {"profiles", required_argument, NULL, 'P'}, {"no-auto-profile", no_argument, NULL, 'N'},
        {"size", required_argument, NULL, 's'}, {"title", required_argument, NULL, 't'},
        {"logy", no_argument, NULL, 'l'}, {"script", required_argument, NULL, 'S'},
        {"collective", required_argument, NULL, 'C'}, {"latest", no_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    struct fb_plot_opts o = {.width = 1200, .height = 700};
    bool latest = false;
    struct common com = {0};
    const char *named[16];
    int nnamed = 0;
    bool auto_profiles = true;
    const char *collective = NULL;
    int c;
    while ((c = next_opt(argc, argv, ":o:p:P:s:t:S:C:h", longopts, "plot", err)) != -1) {
        switch (c) {
        case 'o': o.out = optarg; break;
        case 'p':
            if (nnamed == 16)
                return fb_fail(err, FB_ERR_USAGE, "at most 16 --profile options");
            named[nnamed++] = optarg;
            break;
        case 'P': if (add_profile_dir(&com, optarg, err) != FB_OK) return err->code; break;
        case 'N': auto_profiles = false; break;
        case 's': if (parse_size_opt(optarg, &o, err) != FB_OK) return err->code; break;
        case 't': o.title = optarg; break;
        case 'l': o.logy = true; break;
        case 'S': o.script = optarg; break;
        case 'C': collective = optarg; break;
        case 'T': latest = true; break;
        case 'h': fputs(plot_help, stdout); return FB_OK;
        default: return err->code;
        }
    }
    if (o.out == NULL)
        return fb_fail(err, FB_ERR_USAGE, "plot needs -o FILE.png or -o FILE.svg");
    if (optind == argc)
        return fb_fail(err, FB_ERR_USAGE, "plot needs result files or directories; see fabric-report plot --help");
    struct fb_profiles ps;
    enum fb_status st = fb_profiles_load_default(com.profile_dirs, com.nprofile_dirs, &ps, err);
    if (st != FB_OK)
        return st;
    struct fb_result_set set;
    st = fb_result_set_load((const char *const *)argv + optind, argc - optind, &set, err);
    if (st != FB_OK) {
        fb_profiles_free(&ps);
        return st;
    }
    if (collective != NULL)
        st = fb_result_set_filter(&set, collective, err);
    if (latest)
        fb_result_set_latest(&set);
    if (st == FB_OK)
        st = fb_result_set_same_collective(&set, err);
    struct fb_plot_line lines[48];
    size_t nlines = 0;
    char known[1024];
    fb_profiles_names(&ps, known, sizeof known);
    for (int i = 0; st == FB_OK && i < nnamed; i++) {
        const struct fb_profile *p = fb_profile_find(&ps, named[i]);
        if (p == NULL)
            st = fb_fail(err, FB_ERR_USAGE, "unknown profile '%s'; known: %s", named[i], known);
        else if (fb_profile_expect(p, set.r[0].collective) == NULL)
            st = fb_fail(err, FB_ERR_USAGE, "profile '%s' has no figures for %s", named[i], set.r[0].collective);
        else
            add_lines(p, set.r[0].collective, lines, &nlines, 48);
    }
    for (size_t i = 0; st == FB_OK && auto_profiles && i < set.n; i++) {
        char why[256];
        const struct fb_profile *p = fb_profile_pick(&ps, &set.r[i], why, sizeof why);
        if (p != NULL)
            add_lines(p, set.r[0].collective, lines, &nlines, 48);
    }
    if (st == FB_OK)
        st = fb_plot(&set, lines, nlines, &o, err);
    if (st == FB_OK)
        printf("wrote %s (%zu result%s, %zu reference line%s)\n", o.out, set.n, set.n == 1 ? "" : "s", nlines, nlines == 1 ? "" : "s");
    fb_result_set_free(&set);
    fb_profiles_free(&ps);
    return st;
}

/* ---- baseline ---- */

static const char baseline_help[] =
    "usage: fabric-report baseline RESULT.json... --name NAME [-o FILE] [--tolerance PCT] [--force]\n"
    "Saves a reference profile from known-good runs of one cluster (one per collective):\n"
    "typical = busBW at the largest size, floor = typical minus the tolerance (default 10 %).\n"
    "Written to ~/.config/fabric-bench/profiles/NAME.json (XDG_CONFIG_HOME honoured) unless -o;\n"
    "commit it under results/reference/ to share it.\n";

static enum fb_status cmd_baseline(int argc, char **argv, struct fb_err *err)
{
    static const struct option longopts[] = {
        {"name", required_argument, NULL, 'n'}, {"output", required_argument, NULL, 'o'},
        {"tolerance", required_argument, NULL, 't'}, {"force", no_argument, NULL, 'f'},
        {"profiles", required_argument, NULL, 'P'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    struct common com = {0};
    const char *name = NULL, *output = NULL;
    double tolerance = 0.10;
    bool force = false;
    int c;
    while ((c = next_opt(argc, argv, ":n:o:t:P:fh", longopts, "baseline", err)) != -1) {
        switch (c) {
        case 'n': name = optarg; break;
        case 'o': output = optarg; break;
        case 't': if (parse_percent(optarg, "--tolerance", &tolerance, err) != FB_OK) return err->code; break;
        case 'f': force = true; break;
        case 'P': if (add_profile_dir(&com, optarg, err) != FB_OK) return err->code; break;
        case 'h': fputs(baseline_help, stdout); return FB_OK;
        default: return err->code;
        }
    }
    if (name == NULL)
        return fb_fail(err, FB_ERR_USAGE, "baseline needs --name NAME for the new profile");
    if (!fb_profile_name_ok(name))
        return fb_fail(err, FB_ERR_USAGE, "--name %s: use letters, digits, '.', '_' and '-' only", name);
    if (optind == argc)
        return fb_fail(err, FB_ERR_USAGE, "baseline needs at least one RESULT.json of a known-good run");
    char target[PATH_MAX];
    if (output != NULL) {
        snprintf(target, sizeof target, "%s", output);
    } else {
        char dir[PATH_MAX - 80];
        enum fb_status st = fb_profile_user_dir(dir, sizeof dir, err);
        if (st != FB_OK)
            return st;
        snprintf(target, sizeof target, "%s/%s.json", dir, name);
    }
    struct fb_profiles ps;
    enum fb_status st = fb_profiles_load_default(com.profile_dirs, com.nprofile_dirs, &ps, err);
    if (st != FB_OK)
        return st;
    const struct fb_profile *clash = fb_profile_find(&ps, name);
    if (clash != NULL && !force)
        st = fb_fail(err, FB_ERR_USAGE, "profile '%s' already exists (%s); choose another --name or add --force to replace it", name, clash->path);
    else if (access(target, F_OK) == 0 && !force)
        st = fb_fail(err, FB_ERR_USAGE, "%s already exists; add --force to replace it", target);
    fb_profiles_free(&ps);
    if (st != FB_OK)
        return st;
    struct fb_result_set set;
    st = fb_result_set_load((const char *const *)argv + optind, argc - optind, &set, err);
    if (st != FB_OK)
        return st;
    const struct fb_result **runs = calloc(set.n, sizeof *runs);
    json_object *doc = NULL;
    if (runs == NULL)
        st = fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    for (size_t i = 0; st == FB_OK && i < set.n; i++)
        runs[i] = &set.r[i];
    if (st == FB_OK)
        st = fb_profile_from_results(runs, set.n, name, tolerance, &doc, err);
    if (st == FB_OK)
        st = fb_json_write_atomic(target, doc, err);
    if (st == FB_OK)
        printf("saved profile %s to %s; check runs against it: fabric-report check RESULT.json --profile %s\n", name, target, name);
    if (doc != NULL)
        json_object_put(doc);
    free(runs);
    fb_result_set_free(&set);
    return st;
}

/* ---- transport ---- */

static const char transport_help[] =
    "usage: fabric-report transport LOG...|DIR [--json]\n"
    "Which network NCCL used, per rank, from its NCCL_DEBUG=INFO logs (one file per\n"
    "process as NCCL_DEBUG_FILE=DIR/nccl.%h.%p writes them, or any output holding the\n"
    "INFO lines). --json prints the results-schema \"transport\" object.\n";

static enum fb_status cmd_transport(int argc, char **argv, struct fb_err *err)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    bool json = false;
    int c;
    while ((c = next_opt(argc, argv, ":jh", longopts, "transport", err)) != -1) {
        switch (c) {
        case 'j': json = true; break;
        case 'h': fputs(transport_help, stdout); return FB_OK;
        default: return err->code;
        }
    }
    if (optind == argc)
        return fb_fail(err, FB_ERR_USAGE, "transport needs NCCL log files or a directory of them; see fabric-report transport --help");
    json_object *t = NULL;
    enum fb_status st = fb_transport_from_args((const char *const *)argv + optind, argc - optind, &t, err);
    if (st != FB_OK)
        return st;
    if (json) {
        printf("%s\n", json_object_to_json_string_ext(t, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
    } else {
        struct fb_str text = {0};
        fb_transport_text(t, &text);
        print_str(stdout, &text);
        fb_str_free(&text);
    }
    json_object_put(t);
    return FB_OK;
}

/* ---- profiles ---- */

static enum fb_status cmd_profiles(int argc, char **argv, struct fb_err *err)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'}, {"profiles", required_argument, NULL, 'P'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    struct common com = {0};
    bool json = false;
    int c;
    while ((c = next_opt(argc, argv, ":P:jh", longopts, "profiles", err)) != -1) {
        switch (c) {
        case 'j': json = true; break;
        case 'P': if (add_profile_dir(&com, optarg, err) != FB_OK) return err->code; break;
        case 'h': fputs("usage: fabric-report profiles [--json] [--profiles DIR]\nLists the reference profiles found and their files.\n", stdout); return FB_OK;
        default: return err->code;
        }
    }
    if (optind != argc)
        return fb_fail(err, FB_ERR_USAGE, "profiles takes no arguments");
    struct fb_profiles ps;
    enum fb_status st = fb_profiles_load_default(com.profile_dirs, com.nprofile_dirs, &ps, err);
    if (st != FB_OK)
        return st;
    json_object *arr = json_object_new_array();
    for (size_t i = 0; i < ps.n; i++) {
        const struct fb_profile *p = &ps.p[i];
        if (!json) {
            printf("%-22s r%-2ld %-7s %s\n%-30s%s\n", p->name, p->revision, p->target ? "target" : "symptom",
                   p->description, "", p->path);
            continue;
        }
        json_object *o = json_object_new_object();
        json_object_object_add(o, "name", json_object_new_string(p->name));
        json_object_object_add(o, "revision", json_object_new_int64(p->revision));
        json_object_object_add(o, "role", json_object_new_string(p->target ? "target" : "symptom"));
        json_object_object_add(o, "description", json_object_new_string(p->description));
        json_object_object_add(o, "file", json_object_new_string(p->path));
        json_object_array_add(arr, o);
    }
    if (json)
        printf("%s\n", json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(arr);
    fb_profiles_free(&ps);
    return FB_OK;
}

static const struct {
    const char *name;
    enum fb_status (*run)(int argc, char **argv, struct fb_err *err);
} commands[] = {
    {"check", cmd_check}, {"compare", cmd_compare}, {"import", cmd_import},
    {"plot", cmd_plot}, {"baseline", cmd_baseline}, {"transport", cmd_transport},
    {"profiles", cmd_profiles},
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
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) {
        if (strcmp(argv[1], commands[i].name) != 0)
            continue;
        struct fb_err err = {0};
        enum fb_status st = commands[i].run(argc - 1, argv + 1, &err);
        if (err.code != FB_OK)
            fprintf(stderr, "fabric-report %s: %s\n", commands[i].name, err.msg);
        return (int)st;
    }
    fprintf(stderr, "fabric-report: unknown command '%s'; use check, compare, import, plot, baseline, transport or profiles (fabric-report --help)\n", argv[1]);
    return FB_ERR_USAGE;
}
