/* The nccl-tests text table (2.19.6), column for column, so existing
 * parsers and habits keep working. Only rank 0 prints. */
#ifndef FB_COLL_TABLE_H
#define FB_COLL_TABLE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "coll/config.h"
#include "coll/measure.h"

/* nccl-tests' number cell: the most decimals (2, 1, 0) that fit `width`,
 * else exponent notation. buf holds width + 1 bytes. */
void fb_table_number(double v, int width, char *buf);

void fb_table_preamble(FILE *out, const struct coll_config *cfg, uint64_t minb, uint64_t maxb);

/* The column titles; "cputime" for the time columns with -C 1, a
 * timestamp column with -S 1. */
void fb_table_header(FILE *out, const struct coll_config *cfg);
/* With -I 1: each placement also gets i_min, i_max, i_p99 and i_cv%
 * ("cputime" for the time with -C 1; no timestamp column, as nccl-tests). */
void fb_table_header_per_iter(FILE *out, const struct coll_config *cfg);

/* One data row: size, count, type, redop, root, then both placements (the
 * time columns CPU time with -C 1), then the local time with -S 1. */
void fb_table_row(FILE *out, const struct coll_config *cfg, const struct fb_call *call,
                  const struct fb_measurement *oop, const struct fb_measurement *ip);

struct fb_table_totals {
    int64_t out_of_bounds; /* checks that found wrong elements, summed over ranks */
    double avg_busbw;      /* over every size and placement */
    bool min_bw_set;       /* NCCL_TESTS_MIN_BW given */
    double min_bw;
    const char *perf_name;
};

/* Whether the average passes NCCL_TESTS_MIN_BW as nccl-tests judges it
 * (at least 90 % of it); true when it is not set. */
bool fb_table_min_bw_ok(const struct fb_table_totals *t);

/* "# Out of bounds values", "# Avg bus bandwidth" (with OK or FAILED
 * against NCCL_TESTS_MIN_BW), "#", "# Collective test concluded". */
void fb_table_footer(FILE *out, const struct fb_table_totals *t);

/* -M 1: one line "# TITLE : NAME AMOUNT | ... | Total  AMOUNT", amounts as
 * nccl-tests writes them (B, KB, MB, GB of 1024; "n/a" when not known). */
#define FB_TABLE_MEM_PARTS 3
struct fb_table_memory {
    const char *title;
    const char *names[FB_TABLE_MEM_PARTS];
    uint64_t bytes[FB_TABLE_MEM_PARTS];
    bool known[FB_TABLE_MEM_PARTS];
};
void fb_table_memory(FILE *out, const struct fb_table_memory *m);

/* "1.50 GB", "12.3 MB", "512 KB", "8.00 B": nccl-tests' amounts. */
void fb_table_mem_string(uint64_t bytes, char *buf, size_t len);

/* The table's last line, "#". */
void fb_table_close(FILE *out);

#endif
