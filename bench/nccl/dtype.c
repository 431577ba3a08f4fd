#include "nccl/dtype.h"

#include <math.h>
#include <string.h>

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

double fb_mulsum_scalar(int r) { return r % 2 == 0 ? 1 : 2; }

/* IEEE half from a float that is exactly representable (all values used
 * here are small integers); rounds to nearest-even otherwise. */
static uint16_t float_to_half(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t sign = (x >> 16) & 0x8000u;
    int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    uint32_t mant = x & 0x7fffffu;
    if (((x >> 23) & 0xff) == 0xff)
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
    if (exp >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (exp <= 0) {
        if (exp < -10)
            return (uint16_t)sign;
        mant |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t half = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t h = sign | ((uint32_t)exp << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
        h++;
    return (uint16_t)h;
}

static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ffu;
    uint32_t x;
    if (exp == 0x1f) {
        x = sign | 0x7f800000u | (mant << 13);
    } else if (exp == 0) {
        if (mant == 0) {
            x = sign;
        } else {
            int e = -1;
            do {
                e++;
                mant <<= 1;
            } while ((mant & 0x400u) == 0);
            x = sign | ((uint32_t)(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
        }
    } else {
        x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

static uint16_t float_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t rounding = 0x7fffu + ((x >> 16) & 1);
    return (uint16_t)((x + rounding) >> 16);
}

static float bf16_to_float(uint16_t b)
{
    uint32_t x = (uint32_t)b << 16;
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

/* The two 8-bit float layouts: exponent bits, mantissa bits, bias, and the
 * largest finite code (e4m3 has no infinities and saturates at 448; e5m2
 * is IEEE-like). Conversions saturate to the largest finite value, as
 * CUDA's __nv_fp8 constructors do by default. */
struct fp8_format {
    int mbits, bias;
    uint8_t max_code;
};

static const struct fp8_format E4M3 = {3, 7, 0x7e}, E5M2 = {2, 15, 0x7b};

static double fp8_decode(const struct fp8_format *f, uint8_t code)
{
    int expfield = (code & 0x7f) >> f->mbits;
    int mant = code & ((1 << f->mbits) - 1);
    double sign = (code & 0x80) ? -1 : 1;
    if ((code & 0x7f) > f->max_code)
        return NAN; /* NaN or infinity: never produced by the data used here */
    if (expfield == 0)
        return sign * ldexp(mant, 1 - f->bias - f->mbits);
    return sign * ldexp((1 << f->mbits) + mant, expfield - f->bias - f->mbits);
}

static uint8_t fp8_encode(const struct fp8_format *f, double v)
{
    uint8_t sign = signbit(v) ? 0x80 : 0;
    double a = fabs(v);
    if (isnan(v))
        return 0x7f;
    if (a == 0)
        return sign;
    int e = ilogb(a);
    if (e < 1 - f->bias)
        e = 1 - f->bias; /* subnormal: the smallest exponent, no implicit bit */
    /* Units of the last place at this exponent, rounded to nearest-even;
     * a carry into the next exponent is the next code, so it stays right. */
    double units = nearbyint(ldexp(a, f->mbits - e));
    int top = 1 << f->mbits;
    long code = units < top ? (long)units : (long)((e + f->bias) << f->mbits) + (long)units - top;
    if (code > f->max_code)
        code = f->max_code;
    return (uint8_t)(sign | code);
}

void fb_store(enum fb_dtype t, void *buf, size_t idx, double v)
{
    switch (t) {
    case FB_INT8: ((int8_t *)buf)[idx] = (int8_t)v; break;
    case FB_UINT8: ((uint8_t *)buf)[idx] = (uint8_t)v; break;
    case FB_INT32: ((int32_t *)buf)[idx] = (int32_t)v; break;
    case FB_UINT32: ((uint32_t *)buf)[idx] = (uint32_t)v; break;
    case FB_INT64: ((int64_t *)buf)[idx] = (int64_t)v; break;
    case FB_UINT64: ((uint64_t *)buf)[idx] = (uint64_t)v; break;
    case FB_HALF: ((uint16_t *)buf)[idx] = float_to_half((float)v); break;
    case FB_FLOAT: ((float *)buf)[idx] = (float)v; break;
    case FB_DOUBLE: ((double *)buf)[idx] = v; break;
    case FB_BFLOAT16: ((uint16_t *)buf)[idx] = float_to_bf16((float)v); break;
    case FB_F8E4M3: ((uint8_t *)buf)[idx] = fp8_encode(&E4M3, v); break;
    case FB_F8E5M2: ((uint8_t *)buf)[idx] = fp8_encode(&E5M2, v); break;
    case FB_NDTYPES: break;
    }
}

double fb_load(enum fb_dtype t, const void *buf, size_t idx)
{
    switch (t) {
    case FB_INT8: return ((const int8_t *)buf)[idx];
    case FB_UINT8: return ((const uint8_t *)buf)[idx];
    case FB_INT32: return ((const int32_t *)buf)[idx];
    case FB_UINT32: return ((const uint32_t *)buf)[idx];
    case FB_INT64: return (double)((const int64_t *)buf)[idx];
    case FB_UINT64: return (double)((const uint64_t *)buf)[idx];
    case FB_HALF: return half_to_float(((const uint16_t *)buf)[idx]);
    case FB_FLOAT: return ((const float *)buf)[idx];
    case FB_DOUBLE: return ((const double *)buf)[idx];
    case FB_BFLOAT16: return bf16_to_float(((const uint16_t *)buf)[idx]);
    case FB_F8E4M3: return fp8_decode(&E4M3, ((const uint8_t *)buf)[idx]);
    case FB_F8E5M2: return fp8_decode(&E5M2, ((const uint8_t *)buf)[idx]);
    case FB_NDTYPES: break;
    }
    return NAN;
}

double fb_wrap(enum fb_dtype t, double v)
{
    /* Two's complement wrap-around is independent of summation order, so a
     * wrapped exact sum is still the one right answer; a saturating adder
     * (Open MPI's op/avx on int8) gets caught. */
    switch (t) {
    case FB_INT8: return (double)(int8_t)(uint8_t)(int64_t)v;
    case FB_UINT8: return (double)(uint8_t)(int64_t)v;
    case FB_INT32: return (double)(int32_t)(uint32_t)(int64_t)v;
    case FB_UINT32: return (double)(uint32_t)(int64_t)v;
    default: return v;
    }
}

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

double fb_move_value(int r, size_t i)
{
    return (double)(((uint64_t)r * 17 + (i % 64) * 3) % 64);
}

double fb_input_value(enum fb_dtype t, enum fb_redop op, int nranks, int r, size_t i)
{
    switch (op) {
    case FB_SUM:
    case FB_MULSUM: {
        uint64_t cap = (uint64_t)sum_value_cap(t, op, nranks);
        return (double)(((uint64_t)r * 17 + (i % 4096) * 3) % (cap + 1));
    }
    case FB_PROD:
        /* Exactly one rank contributes a factor > 1 per element: the product
         * is 1, 2 or 3 in every type and order. */
        return ((i + (size_t)r) % (size_t)nranks == 0) ? (double)(1 + i % 3) : 1;
    case FB_MAX:
    case FB_MIN:
        return fb_move_value(r, i);
    case FB_AVG:
        /* Same on every rank, so the average is the value itself. */
        return (double)(i % 4);
    case FB_NREDOPS: break;
    }
    return 0;
}

double fb_expected_reduce(enum fb_dtype t, enum fb_redop op, int nranks, size_t i)
{
    if (op == FB_AVG)
        return fb_input_value(t, op, nranks, 0, i);
    double acc = fb_input_value(t, op, nranks, 0, i) * (op == FB_MULSUM ? fb_mulsum_scalar(0) : 1);
    for (int r = 1; r < nranks; r++) {
        double v = fb_input_value(t, op, nranks, r, i);
        switch (op) {
        case FB_SUM: acc += v; break;
        case FB_MULSUM: acc += fb_mulsum_scalar(r) * v; break;
        case FB_PROD: acc *= v; break;
        case FB_MAX: acc = v > acc ? v : acc; break;
        case FB_MIN: acc = v < acc ? v : acc; break;
        default: break;
        }
    }
    return fb_wrap(t, acc);
}

int fb_value_matches(enum fb_dtype t, enum fb_redop op, double got, double want)
{
    if (fb_dtype_info(t)->is_fp8) {
        uint8_t stored;
        fb_store(t, &stored, 0, want);
        want = fb_load(t, &stored, 0);
    }
    if (op == FB_AVG && fb_dtype_info(t)->is_float) {
        double tol = fb_dtype_info(t)->is_fp8 ? 0.125 : (t == FB_HALF || t == FB_BFLOAT16) ? 1e-2 : 1e-6;
        return fabs(got - want) <= tol * fmax(1.0, fabs(want));
    }
    return got == want;
}
