/* Element types and reduction operators, with nccl-tests' names, and the
 * deterministic data whose reductions are exact in every type regardless of
 * the order ranks are combined in. */
#ifndef FB_NCCL_DTYPE_H
#define FB_NCCL_DTYPE_H

#include <stddef.h>
#include <stdint.h>

enum fb_dtype {
    FB_INT8, FB_UINT8, FB_INT32, FB_UINT32, FB_INT64, FB_UINT64,
    FB_HALF, FB_FLOAT, FB_DOUBLE, FB_BFLOAT16, FB_F8E4M3, FB_F8E5M2, FB_NDTYPES
};

/* FB_MULSUM is NCCL's PreMulSum (ncclRedOpCreatePreMulSum): each rank's
 * input times its own scalar, then summed; the scalar is fb_mulsum_scalar. */
enum fb_redop { FB_SUM, FB_PROD, FB_MAX, FB_MIN, FB_AVG, FB_MULSUM, FB_NREDOPS };

/* -d all / -o all: every type or operator, in this enum's order, which is
 * nccl-tests' (src/common.cu test_types, test_opnames). */
#define FB_ALL_NAME "all"

struct fb_dtype_info {
    const char *name;     /* nccl-tests column name */
    const char *aliases;  /* space separated, accepted by -d */
    size_t size;
    int is_float;
    int is_fp8;           /* 8-bit float: NCCL 2.24+ on sm_90+ only */
    /* Largest integer n such that every integer 0..n is exact: bounds sums. */
    double exact_int_max;
};

const struct fb_dtype_info *fb_dtype_info(enum fb_dtype t);
const char *fb_redop_name(enum fb_redop op);

/* The scalar rank r multiplies its input by under FB_MULSUM: 1 on even
 * ranks, 2 on odd ones, as nccl-tests chooses it (verifiable.h). */
double fb_mulsum_scalar(int r);

/* -1 when unknown. */
int fb_dtype_parse(const char *name);
int fb_redop_parse(const char *name);

/* "int8 uint8 ..." for error messages. */
const char *fb_dtype_choices(void);
const char *fb_redop_choices(void);

/* Typed element access through doubles: every value used is a small integer
 * (or its wrap-around), exact in all types. */
void fb_store(enum fb_dtype t, void *buf, size_t idx, double v);
double fb_load(enum fb_dtype t, const void *buf, size_t idx);

/* Wraps an exact integer result the way the type's arithmetic would
 * (int8 sums wrap modulo 256); floats pass through. */
double fb_wrap(enum fb_dtype t, double v);

/* Input value of element i on rank r, for a reduction with `op` over
 * `nranks`. Chosen so that sum, prod, max, min and avg are exact. */
double fb_input_value(enum fb_dtype t, enum fb_redop op, int nranks, int r, size_t i);
/* The largest per-rank input of a sum (or mulsum) over `nranks` whose
 * total stays exact in the type (fb_input_value's modulus minus one). */
uint64_t fb_sum_value_cap(enum fb_dtype t, enum fb_redop op, int nranks);

/* Value of element i on rank r for data movement (no reduction): distinct
 * per rank so misplaced blocks are caught. */
double fb_move_value(int r, size_t i);

/* Expected reduction of fb_input_value over all ranks at index i. It is
 * periodic in i with period FB_EXPECT_PERIOD (sum repeats every 4096
 * elements, prod every 3, max/min every 64, avg every 4), so a checker can
 * tabulate one period instead of folding every rank for every element. */
#define FB_EXPECT_PERIOD 12288
double fb_expected_reduce(enum fb_dtype t, enum fb_redop op, int nranks, size_t i);

/* Whether got matches want: exact, except avg in float types, which NCCL
 * computes as a scaled sum. An 8-bit float compares with want rounded to
 * the type, since max, min and data movement hand on values as stored. */
int fb_value_matches(enum fb_dtype t, enum fb_redop op, double got, double want);

#endif
