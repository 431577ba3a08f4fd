/* Options described once, in a table, and used for parsing, --help and the
 * JSON echo of the configuration, so the three can never disagree.
 *
 * Accepted spellings: -b 1K, -b1K, --minbytes 1K, --minbytes=1K. Values are
 * stored at `offset` in the caller's config struct. */
#ifndef FB_CORE_OPTIONS_H
#define FB_CORE_OPTIONS_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/status.h"

enum fb_opt_type {
    FB_OPT_SIZE,   /* uint64_t, K/M/G binary suffixes */
    FB_OPT_INT,    /* long within [min, max] */
    FB_OPT_DOUBLE, /* double within [min, max] */
    FB_OPT_STRING, /* const char *, points into argv */
    FB_OPT_FLAG,   /* int set to 1, takes no value */
};

struct fb_opt {
    char short_name; /* 0 when there is none */
    const char *long_name;
    enum fb_opt_type type;
    size_t offset;
    const char *arg_name; /* shown in --help: BYTES, N, NAME */
    const char *help;
    double min, max; /* INT and DOUBLE */
    /* Accepted for nccl-tests compatibility but without effect here: the
     * parser reports it so the caller can say so instead of silently
     * ignoring it. */
    int no_effect;
};

#define FB_OPT_END {0, NULL, FB_OPT_FLAG, 0, NULL, NULL, 0, 0, 0}

struct fb_opts_result {
    int npositional;
    char **positional;   /* points into argv */
    unsigned char *given; /* per table row: set on the command line */
};

/* Parses argv[1..argc-1]. Positional arguments are collected in order; "--"
 * ends options. The result's arrays are allocated; free with
 * fb_opts_result_free. */
enum fb_status fb_opts_parse(const struct fb_opt *table, int argc, char **argv, void *cfg,
                             struct fb_opts_result *res, struct fb_err *err);
void fb_opts_result_free(struct fb_opts_result *res);

/* Index of the row with this long name, or -1. */
int fb_opts_find(const struct fb_opt *table, const char *long_name);

void fb_opts_help(FILE *out, const struct fb_opt *table);

/* {long_name: value} for every row, in table order. */
json_object *fb_opts_to_json(const struct fb_opt *table, const void *cfg);

/* Hash of the parsed values (not the spelling), to compare ranks. */
uint64_t fb_opts_hash(const struct fb_opt *table, const void *cfg);

#endif
