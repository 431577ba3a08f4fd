/* Rank groups: nccl-tests' NCCL_TESTS_SPLIT and NCCL_TESTS_SPLIT_MASK, and
 * fabric-coll's --split. Every rank gets a color; ranks of one color form a
 * group with its own communicator, and the groups measure side by side
 * (docs/coll.md, "Rank groups").
 *
 * The rule is nccl-tests 2.19.6's (src/common.cu, run()):
 *   NCCL_TESTS_SPLIT_MASK=V      color = rank & V, V read as hex
 *   NCCL_TESTS_SPLIT="OP V"      OP one of AND OR MOD DIV or & | % / (any
 *                                case, spaces optional), V decimal, 0x hex
 *                                or 0b binary; color = rank OP V
 * The mask wins when both are set. Where nccl-tests silently reads a value
 * other than what was written (junk after the number, octal from a leading
 * zero, an unknown operator it treats as "no split", MOD 0 that crashes it),
 * the parser refuses it with a one-line usage error instead.
 *
 * Beyond nccl-tests, the words intra-node (color = node index), inter-node
 * (color = local rank: one group per rail) and intra-inter (both, one after
 * the other in one launch) are accepted by --split and NCCL_TESTS_SPLIT. */
#ifndef FB_COLL_SPLIT_H
#define FB_COLL_SPLIT_H

#include <json-c/json.h>

#include "coll/backend.h"
#include "coll/measure.h"
#include "core/status.h"
#include "core/world.h"

enum coll_split_kind {
    COLL_SPLIT_NONE,  /* one group: the whole job */
    COLL_SPLIT_EXPR,  /* NCCL_TESTS_SPLIT's "OP VALUE" */
    COLL_SPLIT_MASK,  /* NCCL_TESTS_SPLIT_MASK: rank & VALUE */
    COLL_SPLIT_INTRA, /* one group per node */
    COLL_SPLIT_INTER, /* one group per local rank (rail) */
    COLL_SPLIT_LOOP,  /* inter-node, then intra-node, in one launch */
};

enum coll_split_op { COLL_SPLIT_AND, COLL_SPLIT_OR, COLL_SPLIT_MOD, COLL_SPLIT_DIV };

#define COLL_SPLIT_TEXT_MAX 96

struct coll_split_spec {
    enum coll_split_kind kind;
    enum coll_split_op op;      /* EXPR; MASK is AND */
    unsigned long value;        /* EXPR and MASK */
    const char *source;         /* "--split", "NCCL_TESTS_SPLIT", "NCCL_TESTS_SPLIT_MASK" */
    char text[COLL_SPLIT_TEXT_MAX]; /* as given */
    char note[256];             /* a "# Note:" to print, or "" */
};

/* NCCL_TESTS_SPLIT's syntax (and the three words); `source` names the
 * variable or option in messages. An empty text is no split. Local. */
enum fb_status coll_split_parse(const char *text, const char *source, struct coll_split_spec *s,
                                struct fb_err *err);

/* NCCL_TESTS_SPLIT_MASK's syntax: hex, with or without 0x. Local. */
enum fb_status coll_split_parse_mask(const char *text, struct coll_split_spec *s, struct fb_err *err);

/* The spec in force: --split (option, NULL when not given), else
 * NCCL_TESTS_SPLIT_MASK, else NCCL_TESTS_SPLIT. Local. */
enum fb_status coll_split_from_env(const char *option, struct coll_split_spec *s, struct fb_err *err);

/* The color of a rank (world rank, node index, local rank on its node);
 * for LOOP, of its first phase. */
int coll_split_color(const struct coll_split_spec *s, int rank, int node, int local_rank);

/* Phases of one launch: 2 for intra-inter, else 1; the spec of phase i. */
int coll_split_phases(const struct coll_split_spec *s);
struct coll_split_spec coll_split_phase(const struct coll_split_spec *s, int phase);

/* "intra-node", "inter-node", "expression", "mask", "none". */
const char *coll_split_kind_name(enum coll_split_kind k);

/* The groups of one phase, known on every rank. */
struct coll_split {
    struct coll_split_spec spec;
    int active;          /* spec.kind != NONE */
    int nranks;          /* the job's */
    int *colors;         /* per world rank */
    int ngroups;
    int *group_color;    /* per group, in order of the group's first rank */
    int *group_size;
    int *group_nodes;
    int mine;            /* this rank's group */
    int rank0_group;     /* the group whose figures the table shows */
    int smallest;        /* fewest ranks in a group */
};

/* Colors every rank, splits the job into `group` (the rank's part of the
 * world, see fb_world_split) and tells every rank about every group.
 * Without a split, `group` is the whole job. Collective. */
enum fb_status coll_split_setup(struct coll_split *sp, const struct coll_split_spec *spec,
                                const struct fb_world *w, struct fb_world *group, struct fb_err *err);
void coll_split_free(struct coll_split *sp);

/* For LOOP's phases: ranks per node equal and at least two, two nodes or
 * more, so every group has two ranks or more. Local (every rank decides the
 * same from the world's host list). */
enum fb_status coll_split_check_loop(const struct coll_split_spec *spec, const struct fb_world *w,
                                     struct fb_err *err);

/* After a measurement on the rank's group: every group's figures on every
 * rank (`per_group`, ngroups entries) and the figure nccl-tests prints
 * (`table`): the time reduced over the whole job as -a says, the bus factor
 * of rank 0's group, wrong elements summed over all groups. `size` is the
 * row's size; the groups' call sizes follow from their rank counts.
 * Collective over the world. */
void coll_split_combine(const struct coll_split *sp, const struct fb_world *w, uint64_t size,
                        const struct fb_call *call, enum fb_time_reduction how,
                        const struct fb_measurement *mine, struct fb_measurement *table,
                        struct fb_measurement *per_group);

/* The record's "split" object, rows still empty (docs/results-schema.md). */
json_object *coll_split_json(const struct coll_split *sp, const struct fb_world *w, int phase,
                             int phases, const char *launch);

/* "2 groups of 2 ranks (colors 0, 1)" for the preamble. */
void coll_split_describe(const struct coll_split *sp, char *buf, size_t len);

#endif
