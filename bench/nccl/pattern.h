/* The data a validated call is filled with and the results it must give,
 * element by element: one home for the formulas, compiled as C for the
 * host (dtype.c, collective.c, coll/validate.c) and as CUDA for the device
 * kernels that fill and check GPU buffers where they are (coll/
 * validate_kernels.cu), so both always agree. Everything is a small
 * integer (or its wrap-around) held exactly in every type.
 *
 * Static inline functions only: FB_HD marks them for the host and, under
 * nvcc, the device. */
#ifndef FB_NCCL_PATTERN_H
#define FB_NCCL_PATTERN_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "nccl/collective.h"
#include "nccl/dtype.h"

#ifdef __CUDACC__
#define FB_HD __host__ __device__
#else
#define FB_HD
#endif

/* One rank's view of one call, as the formulas need it. */
struct fb_pattern {
    int coll;   /* enum fb_coll_id */
    int dtype;  /* enum fb_dtype */
    int op;     /* enum fb_redop */
    int nranks, rank, root;
    uint64_t send, recv, param; /* struct fb_counts */
    uint64_t sum_cap;           /* fb_sum_value_cap for sums */
};

FB_HD static inline int fb_pat_size(int t)
{
    switch (t) {
    case FB_INT8: case FB_UINT8: case FB_F8E4M3: case FB_F8E5M2: return 1;
    case FB_HALF: case FB_BFLOAT16: return 2;
    case FB_INT32: case FB_UINT32: case FB_FLOAT: return 4;
    default: return 8;
    }
}

FB_HD static inline int fb_pat_is_float(int t)
{
    return t == FB_HALF || t == FB_FLOAT || t == FB_DOUBLE || t == FB_BFLOAT16 || t == FB_F8E4M3 || t == FB_F8E5M2;
}

FB_HD static inline int fb_pat_is_fp8(int t) { return t == FB_F8E4M3 || t == FB_F8E5M2; }

/* --- values -------------------------------------------------------------- */

FB_HD static inline double fb_pat_mulsum_scalar(int r) { return r % 2 == 0 ? 1 : 2; }

/* Distinct per rank, period 64. */
FB_HD static inline double fb_pat_move_base(int r, uint64_t i)
{
    return (double)(((uint64_t)r * 17 + (i % 64) * 3) % 64);
}

/* The data of the collectives that move data: the base pattern offset by
 * a hash of the 64-element stretch an element is in, so that a block
 * delivered to another place (blocks are mostly multiples of 64 elements:
 * a scatter's to another rank) reads wrong too. A stretch of rank r's data
 * is one of 64 rows, (c + 3 x column) mod 64 with c = fb_pat_move_row: a
 * host fills and checks whole stretches from one 64 x 64 table. */
FB_HD static inline unsigned fb_pat_move_row(int r, uint64_t i)
{
    uint64_t stretch = ((i / 64) * 0x9E3779B97F4A7C15ull) >> 58;
    return (unsigned)(((uint64_t)r * 17 + stretch) % 64);
}

FB_HD static inline double fb_pat_move_cell(unsigned row, unsigned column) { return (double)((row + 3 * column) % 64); }

FB_HD static inline double fb_pat_move(int r, uint64_t i)
{
    return fb_pat_move_cell(fb_pat_move_row(r, i), (unsigned)(i % 64));
}

/* A reduction's input, chosen so that sum, prod, max, min and avg are
 * exact in every type and order. */
FB_HD static inline double fb_pat_reduce_input(int op, uint64_t sum_cap, int nranks, int r, uint64_t i)
{
    switch (op) {
    case FB_SUM:
    case FB_MULSUM: return (double)(((uint64_t)r * 17 + (i % 4096) * 3) % (sum_cap + 1));
    case FB_PROD:
        /* Exactly one rank contributes a factor > 1 per element: the product
         * is 1, 2 or 3 in every type and order. */
        return ((i + (uint64_t)r) % (uint64_t)nranks == 0) ? (double)(1 + i % 3) : 1;
    case FB_MAX:
    case FB_MIN: return fb_pat_move_base(r, i);
    case FB_AVG: return (double)(i % 4); /* the same on every rank: the average is the value */
    default: return 0;
    }
}

/* Two's complement wrap-around is independent of summation order, so a
 * wrapped exact sum is still the one right answer; a saturating adder
 * (Open MPI's op/avx on int8) gets caught. */
FB_HD static inline double fb_pat_wrap(int t, double v)
{
    switch (t) {
    case FB_INT8: return (double)(int8_t)(uint8_t)(int64_t)v;
    case FB_UINT8: return (double)(uint8_t)(int64_t)v;
    case FB_INT32: return (double)(int32_t)(uint32_t)(int64_t)v;
    case FB_UINT32: return (double)(uint32_t)(int64_t)v;
    default: return v;
    }
}

/* The reduction of every rank's input at i, folded in rank order. */
FB_HD static inline double fb_pat_reduce_expected(int t, int op, uint64_t sum_cap, int nranks, uint64_t i)
{
    if (op == FB_AVG)
        return fb_pat_reduce_input(op, sum_cap, nranks, 0, i);
    double acc = fb_pat_reduce_input(op, sum_cap, nranks, 0, i) * (op == FB_MULSUM ? fb_pat_mulsum_scalar(0) : 1);
    for (int r = 1; r < nranks; r++) {
        double v = fb_pat_reduce_input(op, sum_cap, nranks, r, i);
        switch (op) {
        case FB_SUM: acc += v; break;
        case FB_MULSUM: acc += fb_pat_mulsum_scalar(r) * v; break;
        case FB_PROD: acc *= v; break;
        case FB_MAX: acc = v > acc ? v : acc; break;
        case FB_MIN: acc = v < acc ? v : acc; break;
        default: break;
        }
    }
    return fb_pat_wrap(t, acc);
}

/* A value no correct result holds: negative for signed types, all-ones for
 * unsigned, NaN-free so float comparisons stay exact. */
FB_HD static inline double fb_pat_poison(int t)
{
    switch (t) {
    case FB_UINT8: return 255;
    case FB_UINT32: return 4294967295.0;
    case FB_UINT64: return 18446744073709549568.0;
    default: return -99;
    }
}

/* Element i of this rank's input. */
FB_HD static inline double fb_pat_input(const struct fb_pattern *p, uint64_t i)
{
    int reduces = p->coll == FB_ALL_REDUCE || p->coll == FB_REDUCE || p->coll == FB_REDUCE_SCATTER;
    return reduces ? fb_pat_reduce_input(p->op, p->sum_cap, p->nranks, p->rank, i) : fb_pat_move(p->rank, i);
}

/* alltoallv's uneven exchange: of `param` elements per peer (param x
 * nranks in all), rank `from` sends rank `to` a share growing with their
 * distance (to - from) mod nranks, nothing to itself, rounded down to 16
 * bytes. */
FB_HD static inline uint64_t fb_pat_alltoallv_count(uint64_t param, int esz, int nranks, int from, int to)
{
    uint64_t total = param * (uint64_t)nranks * (uint64_t)esz;
    if (nranks == 1)
        return (total & ~(uint64_t)15) / (uint64_t)esz;
    int distance = ((to - from) % nranks + nranks) % nranks;
    uint64_t distances = (uint64_t)nranks * (uint64_t)(nranks - 1) / 2;
    double share = (double)distance * (double)total / (double)distances;
    return ((uint64_t)share & ~(uint64_t)15) / (uint64_t)esz;
}

/* Lookup tables a checker may hand the expectation (each NULL: computed
 * from the formulas, which is slower). */
struct fb_pat_tables {
    const double *reduce; /* one period (FB_EXPECT_PERIOD) of the reduction */
    /* alltoallv: the share from rank b starts at share_start[b] of my
     * receive buffer (nranks + 1 entries, the last one the total) and at
     * share_from[b] of b's send buffer */
    const uint64_t *share_start, *share_from;
};

/* Where element i of this rank's receive buffer comes from, and how many
 * elements from i on come from the same place in order. */
enum fb_pat_kind { FB_SRC_NONE, FB_SRC_MOVE, FB_SRC_REDUCE };
struct fb_pat_src {
    int kind;     /* enum fb_pat_kind; NONE: nothing defined (reduce and gather off the root) */
    int rank;     /* MOVE: whose data (fb_pat_move) */
    uint64_t j;   /* MOVE: its index; REDUCE: the index of the reduction */
    uint64_t len; /* elements i, i + 1, ... that follow on from j */
};

FB_HD static inline struct fb_pat_src fb_pat_from(int kind, int rank, uint64_t j, uint64_t len)
{
    struct fb_pat_src s = {kind, rank, j, len};
    return s;
}

/* alltoallv's share that element i falls in (the last one starting at or
 * before i), from the tables or, without them, by walking every share. */
FB_HD static inline struct fb_pat_src fb_pat_alltoallv_source(const struct fb_pattern *p, const struct fb_pat_tables *t,
                                                              uint64_t i)
{
    int n = p->nranks;
    if (t != NULL && t->share_start != NULL) {
        int lo = 0, hi = n; /* share_start[lo] <= i always; find the largest such */
        if (i >= t->share_start[n])
            return fb_pat_from(FB_SRC_NONE, 0, 0, ~0ull);
        while (lo + 1 < hi) {
            int mid = (lo + hi) / 2;
            if (t->share_start[mid] <= i)
                lo = mid;
            else
                hi = mid;
        }
        while (t->share_start[lo + 1] <= i)
            lo++; /* empty shares after it */
        return fb_pat_from(FB_SRC_MOVE, lo, t->share_from[lo] + (i - t->share_start[lo]), t->share_start[lo + 1] - i);
    }
    int esz = fb_pat_size(p->dtype);
    for (int from = 0; from < n; from++) {
        uint64_t k = fb_pat_alltoallv_count(p->param, esz, n, from, p->rank);
        if (i < k) {
            uint64_t off = 0;
            for (int to = 0; to < p->rank; to++)
                off += fb_pat_alltoallv_count(p->param, esz, n, from, to);
            return fb_pat_from(FB_SRC_MOVE, from, off + i, k - i);
        }
        i -= k;
    }
    return fb_pat_from(FB_SRC_NONE, 0, 0, ~0ull);
}

FB_HD static inline struct fb_pat_src fb_pat_source(const struct fb_pattern *p, const struct fb_pat_tables *t, uint64_t i)
{
    int n = p->nranks, rank = p->rank;
    const uint64_t all = ~0ull;
    switch (p->coll) {
    case FB_REDUCE:
    case FB_GATHER:
        if (rank != p->root)
            return fb_pat_from(FB_SRC_NONE, 0, 0, all);
        break;
    default: break;
    }
    switch (p->coll) {
    case FB_REDUCE:
    case FB_ALL_REDUCE: return fb_pat_from(FB_SRC_REDUCE, 0, i, all);
    case FB_REDUCE_SCATTER: return fb_pat_from(FB_SRC_REDUCE, 0, (uint64_t)rank * p->recv + i, all);
    case FB_GATHER:
    case FB_ALL_GATHER:
    case FB_HYPERCUBE: return fb_pat_from(FB_SRC_MOVE, (int)(i / p->send), i % p->send, p->send - i % p->send);
    case FB_BROADCAST: return fb_pat_from(FB_SRC_MOVE, p->root, i, all);
    case FB_SCATTER: return fb_pat_from(FB_SRC_MOVE, p->root, (uint64_t)rank * p->recv + i, all);
    case FB_ALLTOALL:
        /* Block b of my receive buffer is block `rank` of rank b's send buffer. */
        return fb_pat_from(FB_SRC_MOVE, (int)(i / p->param), (uint64_t)rank * p->param + i % p->param,
                           p->param - i % p->param);
    case FB_SENDRECV: return fb_pat_from(FB_SRC_MOVE, (rank - 1 + n) % n, i, all); /* a ring: from rank - 1 */
    case FB_ALLTOALLV: return fb_pat_alltoallv_source(p, t, i);
    default: return fb_pat_from(FB_SRC_NONE, 0, 0, all);
    }
}

/* The reduction at index j of the reduced vector. */
FB_HD static inline double fb_pat_reduced(const struct fb_pattern *p, const struct fb_pat_tables *t, uint64_t j)
{
    if (t != NULL && t->reduce != NULL)
        return t->reduce[j % FB_EXPECT_PERIOD];
    return fb_pat_reduce_expected(p->dtype, p->op, p->sum_cap, p->nranks, j);
}

/* Expected element i of this rank's receive buffer; 0 when it holds
 * nothing defined (reduce and gather off the root). */
FB_HD static inline int fb_pat_expected(const struct fb_pattern *p, const struct fb_pat_tables *t, uint64_t i,
                                        double *want)
{
    struct fb_pat_src s = fb_pat_source(p, t, i);
    if (s.kind == FB_SRC_NONE)
        return 0;
    *want = s.kind == FB_SRC_REDUCE ? fb_pat_reduced(p, t, s.j) : fb_pat_move(s.rank, s.j);
    return 1;
}

#ifndef __CUDACC__
/* The pattern of one rank's part of a call (host side). */
static inline struct fb_pattern fb_pattern_make(const struct fb_collective *c, const struct fb_counts *k,
                                                enum fb_dtype t, enum fb_redop op, int nranks, int rank, int root)
{
    struct fb_pattern p = {(int)c->id, (int)t, (int)op, nranks, rank, root, k->send, k->recv, k->param,
                           fb_sum_value_cap(t, op, nranks)};
    return p;
}
#endif

/* --- the types' bits ------------------------------------------------------ */

/* IEEE half from a float that is exactly representable (all values used
 * here are small integers); rounds to nearest-even otherwise. */
FB_HD static inline uint16_t fb_pat_float_to_half(float f)
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

FB_HD static inline float fb_pat_half_to_float(uint16_t h)
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

FB_HD static inline uint16_t fb_pat_float_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t rounding = 0x7fffu + ((x >> 16) & 1);
    return (uint16_t)((x + rounding) >> 16);
}

FB_HD static inline float fb_pat_bf16_to_float(uint16_t b)
{
    uint32_t x = (uint32_t)b << 16;
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

/* The two 8-bit float layouts (e4m3: 3 mantissa bits, bias 7, largest
 * finite code 0x7e, no infinities; e5m2: 2, 15, 0x7b, IEEE-like).
 * Conversions saturate to the largest finite value, as CUDA's __nv_fp8
 * constructors do by default. */
FB_HD static inline double fb_pat_fp8_decode(int t, uint8_t code)
{
    int mbits = t == FB_F8E4M3 ? 3 : 2, bias = t == FB_F8E4M3 ? 7 : 15, max_code = t == FB_F8E4M3 ? 0x7e : 0x7b;
    int expfield = (code & 0x7f) >> mbits;
    int mant = code & ((1 << mbits) - 1);
    double sign = (code & 0x80) ? -1 : 1;
    if ((code & 0x7f) > max_code)
        return NAN; /* NaN or infinity: never produced by the data used here */
    if (expfield == 0)
        return sign * ldexp((double)mant, 1 - bias - mbits);
    return sign * ldexp((double)((1 << mbits) + mant), expfield - bias - mbits);
}

FB_HD static inline uint8_t fb_pat_fp8_encode(int t, double v)
{
    int mbits = t == FB_F8E4M3 ? 3 : 2, bias = t == FB_F8E4M3 ? 7 : 15, max_code = t == FB_F8E4M3 ? 0x7e : 0x7b;
    uint8_t sign = signbit(v) ? 0x80 : 0;
    double a = fabs(v);
    if (isnan(v))
        return 0x7f;
    if (a == 0)
        return sign;
    int e = ilogb(a);
    if (e < 1 - bias)
        e = 1 - bias; /* subnormal: the smallest exponent, no implicit bit */
    /* Units of the last place at this exponent, rounded to nearest-even;
     * a carry into the next exponent is the next code, so it stays right. */
    double units = nearbyint(ldexp(a, mbits - e));
    int top = 1 << mbits;
    long code = units < top ? (long)units : (long)((e + bias) << mbits) + (long)units - top;
    if (code > max_code)
        code = max_code;
    return (uint8_t)(sign | code);
}

FB_HD static inline void fb_pat_store(int t, void *buf, uint64_t idx, double v)
{
    switch (t) {
    case FB_INT8: ((int8_t *)buf)[idx] = (int8_t)v; break;
    case FB_UINT8: ((uint8_t *)buf)[idx] = (uint8_t)v; break;
    case FB_INT32: ((int32_t *)buf)[idx] = (int32_t)v; break;
    case FB_UINT32: ((uint32_t *)buf)[idx] = (uint32_t)v; break;
    case FB_INT64: ((int64_t *)buf)[idx] = (int64_t)v; break;
    case FB_UINT64: ((uint64_t *)buf)[idx] = (uint64_t)v; break;
    case FB_HALF: ((uint16_t *)buf)[idx] = fb_pat_float_to_half((float)v); break;
    case FB_FLOAT: ((float *)buf)[idx] = (float)v; break;
    case FB_DOUBLE: ((double *)buf)[idx] = v; break;
    case FB_BFLOAT16: ((uint16_t *)buf)[idx] = fb_pat_float_to_bf16((float)v); break;
    case FB_F8E4M3:
    case FB_F8E5M2: ((uint8_t *)buf)[idx] = fb_pat_fp8_encode(t, v); break;
    default: break;
    }
}

FB_HD static inline double fb_pat_load(int t, const void *buf, uint64_t idx)
{
    switch (t) {
    case FB_INT8: return ((const int8_t *)buf)[idx];
    case FB_UINT8: return ((const uint8_t *)buf)[idx];
    case FB_INT32: return ((const int32_t *)buf)[idx];
    case FB_UINT32: return ((const uint32_t *)buf)[idx];
    case FB_INT64: return (double)((const int64_t *)buf)[idx];
    case FB_UINT64: return (double)((const uint64_t *)buf)[idx];
    case FB_HALF: return fb_pat_half_to_float(((const uint16_t *)buf)[idx]);
    case FB_FLOAT: return ((const float *)buf)[idx];
    case FB_DOUBLE: return ((const double *)buf)[idx];
    case FB_BFLOAT16: return fb_pat_bf16_to_float(((const uint16_t *)buf)[idx]);
    case FB_F8E4M3:
    case FB_F8E5M2: return fb_pat_fp8_decode(t, ((const uint8_t *)buf)[idx]);
    default: return NAN;
    }
}

/* Whether got matches want: exact, except avg in float types, which NCCL
 * computes as a scaled sum. An 8-bit float compares with want rounded to
 * the type, since max, min and data movement hand on values as stored. */
FB_HD static inline int fb_pat_matches(int t, int op, double got, double want)
{
    if (fb_pat_is_fp8(t))
        want = fb_pat_fp8_decode(t, fb_pat_fp8_encode(t, want));
    if (op == FB_AVG && fb_pat_is_float(t)) {
        /* An 8-bit average is rounded twice (the scale 1/n and the sum),
         * each by up to half a step: 1/8 of the value with e4m3's 3
         * mantissa bits, 1/4 with e5m2's 2 (3 ranks: 9 x 0.3125 = 2.5). */
        double tol = t == FB_F8E5M2 ? 0.25 : t == FB_F8E4M3 ? 0.125 : (t == FB_HALF || t == FB_BFLOAT16) ? 1e-2 : 1e-6;
        return fabs(got - want) <= tol * fmax(1.0, fabs(want));
    }
    return got == want;
}

#endif
