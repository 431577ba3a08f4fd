#include "nccl/dtype.h"

#include <math.h>
#include <string.h>

#include "nccl/pattern.h"

static const struct fb_dtype_info infos[FB_NDTYPES] = {
    [FB_INT8] = {"int8", "int8 char", 1, 0, 0, 127},
    [FB_UINT8] = {"uint8", "uint8", 1, 0, 0, 255},
    [FB_INT32] = {"int32", "int32 int", 4, 0, 0, 2147483647.0},
    [FB_UINT32] = {"uint32", "uint32", 4, 0, 0, 4294967295.0},
    [FB_INT64] = {"int64", "int64", 8, 0, 0, 9007199254740992.0},
    [FB_UINT64] = {"uint64", "uint64", 8, 0, 0, 9007199254740992.0},
    [FB_HALF] = {"half", "half float16 fp16", 2, 1, 0, 2048},
    [FB_FLOAT] = {"float", "float float32 fp32", 4, 1, 0, 16777216.0},
    [FB_DOUBLE] = {"double", "double float64 fp64", 8, 1, 0, 9007199254740992.0},
    [FB_BFLOAT16] = {"bfloat16", "bfloat16 bf16", 2, 1, 0, 256},
    /* 3 and 2 mantissa bits: every integer up to 16 and 8 is exact. */
    [FB_F8E4M3] = {"f8e4m3", "f8e4m3 fp8e4m3 e4m3", 1, 1, 1, 16},
    [FB_F8E5M2] = {"f8e5m2", "f8e5m2 fp8e5m2 e5m2", 1, 1, 1, 8},
};

static const char *const redop_names[FB_NREDOPS] = {"sum", "prod", "max", "min", "avg", "mulsum"};

const struct fb_dtype_info *fb_dtype_info(enum fb_dtype t) { return &infos[t]; }
const char *fb_redop_name(enum fb_redop op) { return redop_names[op]; }

static int word_in(const char *word, const char *list)
{
    size_t n = strlen(word);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ' ');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, word, n) == 0)
            return 1;
        p += len + (end != NULL);
    }
    return 0;
}

int fb_dtype_parse(const char *name)
{
    for (int t = 0; t < FB_NDTYPES; t++)
        if (word_in(name, infos[t].aliases))
            return t;
    return -1;
}

int fb_redop_parse(const char *name)
{
    for (int op = 0; op < FB_NREDOPS; op++)
        if (strcmp(name, redop_names[op]) == 0)
            return op;
    return -1;
}

const char *fb_dtype_choices(void)
{
    return "int8, uint8, int32, uint32, int64, uint64, half, float, double, bfloat16, f8e4m3, f8e5m2 "
           "or all";
}

const char *fb_redop_choices(void) { return "sum, prod, max, min, avg, mulsum or all"; }

double fb_mulsum_scalar(int r) { return fb_pat_mulsum_scalar(r); }

void fb_store(enum fb_dtype t, void *buf, size_t idx, double v) { fb_pat_store(t, buf, idx, v); }

double fb_load(enum fb_dtype t, const void *buf, size_t idx) { return fb_pat_load(t, buf, idx); }

double fb_wrap(enum fb_dtype t, double v) { return fb_pat_wrap(t, v); }

/* Sum of the ranks' weights: their number for a plain sum, their
 * PreMulSum scalars for mulsum. */
static double sum_weight(enum fb_redop op, int nranks)
{
    if (op != FB_MULSUM)
        return nranks;
    double w = 0;
    for (int r = 0; r < nranks; r++)
        w += fb_mulsum_scalar(r);
    return w;
}

/* Largest per-rank value m such that the weighted sum of m over the ranks
 * stays exact in the type. */
static double sum_value_cap(enum fb_dtype t, enum fb_redop op, int nranks)
{
    const struct fb_dtype_info *info = fb_dtype_info(t);
    if (!info->is_float)
        return 63; /* integers wrap exactly; keep magnitudes that exercise it */
    double cap = floor(info->exact_int_max / sum_weight(op, nranks));
    return cap > 63 ? 63 : cap;
}

uint64_t fb_sum_value_cap(enum fb_dtype t, enum fb_redop op, int nranks)
{
    return (uint64_t)sum_value_cap(t, op, nranks);
}

double fb_move_value(int r, size_t i) { return fb_pat_move_base(r, i); }

double fb_input_value(enum fb_dtype t, enum fb_redop op, int nranks, int r, size_t i)
{
    return fb_pat_reduce_input(op, fb_sum_value_cap(t, op, nranks), nranks, r, i);
}

double fb_expected_reduce(enum fb_dtype t, enum fb_redop op, int nranks, size_t i)
{
    return fb_pat_reduce_expected(t, op, fb_sum_value_cap(t, op, nranks), nranks, i);
}

int fb_value_matches(enum fb_dtype t, enum fb_redop op, double got, double want)
{
    return fb_pat_matches(t, op, got, want);
}
