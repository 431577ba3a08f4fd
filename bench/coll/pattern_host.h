/* A call's data written into host memory and its results checked there at
 * memory speed: every value comes from tables of one period held in the
 * type's own bytes, copied and compared a stretch at a time; the formulas
 * (nccl/pattern.h) are evaluated only for the elements that differ. */
#ifndef FB_COLL_PATTERN_HOST_H
#define FB_COLL_PATTERN_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "nccl/pattern.h"

/* The tables, each rebuilt only when what it depends on changes. */
struct fb_host_tables {
    int esz;                   /* bytes per element of the tabulated type, 0: none yet */
    int type;                  /* move and poison: per type */
    unsigned char *move;       /* 64 rows x 64 elements: fb_pat_move_cell(row, column) */
    unsigned char *poison;     /* 64 elements */
    int in_type, in_op, in_ranks, in_rank;
    size_t in_period;          /* elements of `input`, a multiple of its period */
    unsigned char *input;      /* one rank's reduction input */
    int red_type, red_op, red_ranks;
    double *reduce;            /* FB_EXPECT_PERIOD expected reductions ... */
    unsigned char *reduce_bytes; /* ... and in the type's bytes */
    int sh_type, sh_ranks, sh_rank;
    uint64_t sh_param;
    uint64_t *share_start, *share_from; /* alltoallv (struct fb_pat_tables) */
    size_t share_cap;
    /* Changes whenever `reduce` or the shares do: a device copy of them is
     * current while it holds the same key. */
    uint64_t key;
};

void fb_host_tables_init(struct fb_host_tables *ht);
void fb_host_tables_free(struct fb_host_tables *ht);

/* Brings every table the pattern's call needs up to date. */
enum fb_status fb_host_tables_prepare(struct fb_host_tables *ht, const struct fb_pattern *p, struct fb_err *err);

/* The lookup tables for fb_pat_expected (after prepare). */
struct fb_pat_tables fb_host_tables_view(const struct fb_host_tables *ht, const struct fb_pattern *p);

/* Elements [i0, i0 + n) of the pattern's input (poison: of the poison) into
 * buf, which holds element i0 first. */
void fb_host_fill(const struct fb_host_tables *ht, const struct fb_pattern *p, void *buf, uint64_t i0, uint64_t n,
                  int poison);

/* The wrong elements among [i0, i0 + n) of the receive buffer, buf holding
 * element i0 first; *first (left alone when none) gets the least wrong
 * index if it is below *first. */
uint64_t fb_host_check(const struct fb_host_tables *ht, const struct fb_pattern *p, const void *buf, uint64_t i0,
                       uint64_t n, uint64_t *first);

#endif
