/* The nccl-tests text table, column for column, so existing parsers and
 * habits keep working. Only rank 0 prints. */
#ifndef FB_COLL_TABLE_H
#define FB_COLL_TABLE_H

#include <stdio.h>

#include "coll/config.h"
#include "coll/measure.h"

/* nccl-tests' number cell: the most decimals (2, 1, 0) that fit `width`,
 * else exponent notation. buf holds width + 1 bytes. */
void fb_table_number(double v, int width, char *buf);

void fb_table_preamble(FILE *out, const struct coll_config *cfg, uint64_t minb, uint64_t maxb);
void fb_table_header(FILE *out);
/* With -I 1: each placement also gets i_min, i_max, i_p99 and i_cv%. */
void fb_table_header_per_iter(FILE *out);

/* One data row: size, count, type, redop, root, then both placements
 * (with their per-iteration cells when they were timed with -I 1). */
void fb_table_row(FILE *out, const struct fb_call *call, const struct fb_measurement *oop,
                  const struct fb_measurement *ip);

void fb_table_footer(FILE *out, uint64_t wrong_total, double avg_busbw);

#endif
