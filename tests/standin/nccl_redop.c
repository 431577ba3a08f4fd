/* NCCL stand-in, element values and PreMulSum: every type read and
 * written as a double (the 8-bit floats by their bit layout, decoded
 * independently of fabric-coll's own conversion so a mistake in one is
 * caught by the other), and the operators ncclRedOpCreatePreMulSum makes. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_internal.h"

/* --- 8-bit floats: e4m3 (bias 7, no infinities, 448 the largest) and
 * e5m2 (bias 15, IEEE-like) -------------------------------------------------- */

static double fp8_decode(uint8_t code, int e4m3)
{
    int mbits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
    int exp = (code & 0x7f) >> mbits, mant = code & ((1 << mbits) - 1);
    double mag = exp == 0 ? ldexp(mant, 1 - bias - mbits) : ldexp(1.0 + ldexp(mant, -mbits), exp - bias);
    return code & 0x80 ? -mag : mag;
}

/* Every code's value, decoded once: a sweep of every type converts
 * millions of elements. [1] is e4m3, [0] e5m2. */
static double fp8_values[2][256];
static pthread_once_t fp8_once = PTHREAD_ONCE_INIT;

static void fp8_fill(void)
{
    for (int f = 0; f < 2; f++)
        for (int c = 0; c < 256; c++)
            fp8_values[f][c] = fp8_decode((uint8_t)c, f);
}

static double fp8_value(uint8_t code, int e4m3)
{
    pthread_once(&fp8_once, fp8_fill);
    return fp8_values[e4m3 != 0][code];
}

/* The nearest code (ties to the even one), saturating at the largest
 * finite value: a search of the 126 or 123 finite magnitudes, which grow
 * with the code, for the two that bracket the value. */
static uint8_t fp8_code(double v, int e4m3)
{
    int last = e4m3 ? 0x7e : 0x7b, lo = 0, hi = last;
    uint8_t sign = signbit(v) ? 0x80 : 0;
    double a = fabs(v);
    if (isnan(a))
        return sign;
    if (a >= fp8_value((uint8_t)last, e4m3))
        return (uint8_t)(last | sign);
    while (hi - lo > 1) { /* fp8_value(lo) <= a < fp8_value(hi) */
        int mid = (lo + hi) / 2;
        if (fp8_value((uint8_t)mid, e4m3) <= a)
            lo = mid;
        else
            hi = mid;
    }
    double below = a - fp8_value((uint8_t)lo, e4m3), above = fp8_value((uint8_t)hi, e4m3) - a;
    int best = above < below || (above == below && (hi & 1) == 0) ? hi : lo;
    return (uint8_t)(best | sign);
}

double fbsi_elem_load(ncclDataType_t t, const void *buf, size_t i)
{
    switch (t) {
    case ncclInt8: return ((const int8_t *)buf)[i];
    case ncclUint8: return ((const uint8_t *)buf)[i];
    case ncclInt32: return ((const int32_t *)buf)[i];
    case ncclUint32: return ((const uint32_t *)buf)[i];
    case ncclInt64: return (double)((const int64_t *)buf)[i];
    case ncclUint64: return (double)((const uint64_t *)buf)[i];
    case ncclFloat16: {
        _Float16 h;
        memcpy(&h, (const char *)buf + 2 * i, 2);
        return (double)h;
    }
    case ncclFloat32: return ((const float *)buf)[i];
    case ncclFloat64: return ((const double *)buf)[i];
    case ncclBfloat16: return fbsi_bf16_load(((const uint16_t *)buf)[i]);
    case ncclFloat8e4m3: return fp8_value(((const uint8_t *)buf)[i], 1);
    case ncclFloat8e5m2: return fp8_value(((const uint8_t *)buf)[i], 0);
    default: return 0;
    }
}

void fbsi_elem_store(ncclDataType_t t, void *buf, size_t i, double v)
{
    switch (t) {
    case ncclInt8: ((int8_t *)buf)[i] = (int8_t)(int64_t)v; break;
    case ncclUint8: ((uint8_t *)buf)[i] = (uint8_t)(int64_t)v; break;
    case ncclInt32: ((int32_t *)buf)[i] = (int32_t)(int64_t)v; break;
    case ncclUint32: ((uint32_t *)buf)[i] = (uint32_t)(int64_t)v; break;
    case ncclInt64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case ncclUint64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
    case ncclFloat16: {
        _Float16 h = (_Float16)v;
        memcpy((char *)buf + 2 * i, &h, 2);
        break;
    }
    case ncclFloat32: ((float *)buf)[i] = (float)v; break;
    case ncclFloat64: ((double *)buf)[i] = v; break;
    case ncclBfloat16: ((uint16_t *)buf)[i] = fbsi_bf16_store((float)v); break;
    case ncclFloat8e4m3: ((uint8_t *)buf)[i] = fp8_code(v, 1); break;
    case ncclFloat8e5m2: ((uint8_t *)buf)[i] = fp8_code(v, 0); break;
    default: break;
    }
}

/* --- PreMulSum -------------------------------------------------------------- */

/* Operators in use, process-wide: ncclNumOps + slot, as NCCL numbers the
 * operators it creates from ncclNumOps up. */
#define PREMUL_SLOTS 64

static struct {
    const struct ncclComm *comm; /* NULL: free */
    double scalar;
} premul[PREMUL_SLOTS];
static pthread_mutex_t premul_lock = PTHREAD_MUTEX_INITIALIZER;

ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm)
{
    if (op == NULL || scalar == NULL || comm == NULL || fbsi_type_size(datatype) == 0) {
        fbsi_set_error(comm, "ncclRedOpCreatePreMulSum: an argument is NULL or the datatype is not carried");
        return ncclInvalidArgument;
    }
    if (residence != ncclScalarHostImmediate) {
        fbsi_set_error(comm, "ncclRedOpCreatePreMulSum: the stand-in takes host-immediate scalars only");
        return ncclInvalidArgument;
    }
    pthread_mutex_lock(&premul_lock);
    int slot = 0;
    while (slot < PREMUL_SLOTS && premul[slot].comm != NULL)
        slot++;
    if (slot < PREMUL_SLOTS) {
        premul[slot].comm = comm;
        premul[slot].scalar = fbsi_elem_load(datatype, scalar, 0);
    }
    pthread_mutex_unlock(&premul_lock);
    if (slot == PREMUL_SLOTS) {
        fbsi_set_error(comm, "ncclRedOpCreatePreMulSum: more than %d operators in use", PREMUL_SLOTS);
        return ncclInvalidUsage;
    }
    *op = (ncclRedOp_t)((int)ncclNumOps + slot);
    return ncclSuccess;
}

ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm)
{
    int slot = (int)op - (int)ncclNumOps;
    ncclResult_t r = ncclInvalidArgument;
    pthread_mutex_lock(&premul_lock);
    if (slot >= 0 && slot < PREMUL_SLOTS && premul[slot].comm == comm && comm != NULL) {
        premul[slot].comm = NULL;
        r = ncclSuccess;
    }
    pthread_mutex_unlock(&premul_lock);
    if (r != ncclSuccess)
        fbsi_set_error(comm, "ncclRedOpDestroy: operator %d was not created on this communicator", (int)op);
    return r;
}

int fbsi_premulsum_scalar(const struct ncclComm *c, ncclRedOp_t op, double *scalar)
{
    int slot = (int)op - (int)ncclNumOps, found = 0;
    pthread_mutex_lock(&premul_lock);
    if (slot >= 0 && slot < PREMUL_SLOTS && premul[slot].comm == c) {
        *scalar = premul[slot].scalar;
        found = 1;
    }
    pthread_mutex_unlock(&premul_lock);
    return found;
}

/* This rank's input scaled into a copy, then summed as usual: each rank
 * applies its own scalar, as NCCL does before the sum. */
ncclResult_t fbsi_run_premulsum(struct ncclComm *c, const struct call *k)
{
    size_t n = k->kind == C_REDUCESCATTER ? k->count * (size_t)c->nranks : k->count;
    size_t esz = fbsi_type_size(k->dt);
    char *scaled = malloc(n * esz + 1);
    if (scaled == NULL) {
        fbsi_set_error(c, "out of host memory");
        return ncclSystemError;
    }
    for (size_t i = 0; i < n; i++)
        fbsi_elem_store(k->dt, scaled, i, fbsi_elem_load(k->dt, k->send, i) * k->scalar);
    struct call sum = *k;
    sum.send = scaled;
    sum.premul = 0;
    ncclResult_t r = fbsi_run_collective(c, &sum);
    free(scaled);
    return r;
}
