/* Options described once, in a table, and used for parsing, --help and the
 * JSON echo of the configuration, so the three can never disagree.
 *
 * Accepted spellings: -b 1K, -b1K, --minbytes 1K, --minbytes=1K, short flags
 * sharing one word (-jh), options before, between and after positional
 * arguments, "--" before arguments that start with '-'. A value is the next
 * word unless that word spells one of the table's options ("-b --backend
 * mpi" lacks -b's value). Values are stored at
 * `offset` in the caller's config struct.
 *
 * Every usage error has one wording, naming the option as typed and the
 * program: "unknown option '--x' for fabric-report check; see fabric-report
 * check --help". */
#ifndef FB_CORE_OPTIONS_H
#define FB_CORE_OPTIONS_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/status.h"

enum fb_opt_type {
    FB_OPT_SIZE,   /* uint64_t, K/M/G binary suffixes */
    FB_OPT_INT,    /* long within [min, max]: decimal, 0x hex or 0 octal, as C's strtol
                      reads them (nccl-tests' flags); nothing may follow the digits */
    FB_OPT_DOUBLE, /* double within [min, max] */
    FB_OPT_STRING, /* const char *, points into argv */
    FB_OPT_FLAG,   /* int set to 1, takes no value */
    FB_OPT_CHOICE, /* int: the index in `choices` of the word given */
};

struct fb_opt {
    char short_name; /* 0 when there is none */
    const char *long_name; /* NULL for a short-only option (-J FILE) */
    enum fb_opt_type type;
    size_t offset;
    const char *arg_name; /* shown in --help: BYTES, N, NAME; a CHOICE's
                             default is its words joined by '|' */
    const char *help;
    double min, max; /* INT and DOUBLE */
    /* Accepted for nccl-tests compatibility but without effect here: the
     * parser reports it so the caller can say so instead of silently
     * ignoring it. */
    int no_effect;
    /* Repeatable when above 0: the values fill an array of this many
     * elements at `offset` and the int at `count_offset` counts them; one
     * more is a usage error. Otherwise a later value replaces an earlier. */
    int max_count;
    size_t count_offset;
    const char *const *choices; /* FB_OPT_CHOICE: the accepted words, NULL-terminated */
    /* Once seen, the rest of the command line is not parsed: a --help that
     * answers whatever follows it. */
    int ends_parse;
};

/* Ends a table (no short and no long name). */
#define FB_OPT_END {0, NULL, FB_OPT_FLAG, 0, NULL, NULL, 0, 0, 0}

struct fb_opts_result {
    int npositional;
    char **positional;   /* points into argv */
    unsigned char *given; /* per table row: set on the command line */
};

/* What a parse needs besides argv. */
struct fb_opts_ctx {
    const char *prog;           /* named in usage errors: "fabric-report check" */
    const struct fb_opt *table;
    const char *usage;          /* usage line and description that --help prints
                                   before the options (fb_opts_usage); may be NULL */
    const char *argv0;          /* main's argv[0], which documents record as
                                   invoked_as; set by fb_subcmd_run */
};

/* Parses argv[1..argc-1] (argv[0] is the program or subcommand name).
 * Positional arguments are collected in order; "--" ends options. The
 * result's arrays are allocated, also on failure; free with
 * fb_opts_result_free. */
enum fb_status fb_opts_parse_ctx(const struct fb_opts_ctx *ctx, int argc, char **argv, void *cfg,
                                 struct fb_opts_result *res, struct fb_err *err);

/* fb_opts_parse_ctx with the program named by argv[0]'s last component,
 * which is how fabric-coll answers to all_reduce_perf. */
enum fb_status fb_opts_parse(const struct fb_opt *table, int argc, char **argv, void *cfg,
                             struct fb_opts_result *res, struct fb_err *err);
void fb_opts_result_free(struct fb_opts_result *res);

/* Index of the row with this long name, or -1. */
int fb_opts_find(const struct fb_opt *table, const char *long_name);

/* One line per option: spellings, value, help. */
void fb_opts_help(FILE *out, const struct fb_opt *table);

/* ctx->usage, then "options:" and fb_opts_help. */
void fb_opts_usage(FILE *out, const struct fb_opts_ctx *ctx);

/* {long_name: value} for every row, in table order; a repeatable row's value
 * is an array, a CHOICE's the word. Short-only rows are keyed "-J". */
json_object *fb_opts_to_json(const struct fb_opt *table, const void *cfg);

/* Hash of the parsed values (not the spelling), to compare ranks. */
uint64_t fb_opts_hash(const struct fb_opt *table, const void *cfg);

/* One subcommand of a program such as fabric-report (check, compare, ...).
 * Its run function parses argv against ctx (whose prog is "PROGRAM NAME"
 * and table `opts`) and prints fb_opts_usage(ctx) for --help. */
struct fb_subcmd {
    const char *name;
    const struct fb_opt *opts;
    const char *help; /* usage line and description */
    enum fb_status (*run)(const struct fb_opts_ctx *ctx, int argc, char **argv,
                          struct fb_err *err);
};

/* The entry of a {NULL}-terminated table with this name, or NULL. */
const struct fb_subcmd *fb_subcmd_find(const struct fb_subcmd *cmds, const char *name);

/* Runs cmd, the subcommand argv[1] of main's command line names, of program
 * `prog`: its run gets the words from that name on. */
enum fb_status fb_subcmd_run(const char *prog, const struct fb_subcmd *cmd, int argc,
                             char **argv, struct fb_err *err);

#endif
