/* NCCL stand-in, the collectives: each is a few steps of transfers between
 * the ranks (nccl_net.c), and the reductions are computed here, on the
 * host, in rank order, so every rank holds the same bits. Large buffers go
 * in chunks: receive space stays (ranks - 1) chunks whatever the size. */
#include <stdlib.h>
#include <string.h>

#include "nccl_internal.h"

#define CHUNK (2u << 20)

size_t fbsi_type_size(ncclDataType_t t)
{
    switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
    }
}

/* --- reductions: acc[i] = acc[i] op in[i] -------------------------------- */

/* Integers wrap as the hardware's do: arithmetic in the unsigned type. */
#define INT_REDUCE(T, U)                                                                     \
    do {                                                                                     \
        T *a = acc;                                                                          \
        const T *b = in;                                                                     \
        for (size_t i = 0; i < n; i++) {                                                     \
            switch (op) {                                                                    \
            case ncclProd: a[i] = (T)((U)a[i] * (U)b[i]); break;                              \
            case ncclMax: a[i] = b[i] > a[i] ? b[i] : a[i]; break;                           \
            case ncclMin: a[i] = b[i] < a[i] ? b[i] : a[i]; break;                           \
            default: a[i] = (T)((U)a[i] + (U)b[i]); break; /* sum, and avg before dividing */ \
            }                                                                                \
        }                                                                                    \
    } while (0)

static float apply(float x, float y, ncclRedOp_t op)
{
    switch (op) {
    case ncclProd: return x * y;
    case ncclMax: return y > x ? y : x;
    case ncclMin: return y < x ? y : x;
    default: return x + y;
    }
}

#define FLOAT_REDUCE(T)                                                                   \
    do {                                                                                  \
        T *a = acc;                                                                       \
        const T *b = in;                                                                  \
        for (size_t i = 0; i < n; i++)                                                    \
            a[i] = op == ncclProd ? a[i] * b[i] : op == ncclMax ? (b[i] > a[i] ? b[i] : a[i]) \
                   : op == ncclMin ? (b[i] < a[i] ? b[i] : a[i]) : a[i] + b[i];           \
    } while (0)

float fbsi_bf16_load(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

uint16_t fbsi_bf16_store(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16); /* nearest, ties to even */
}

static void reduce16(void *acc, const void *in, size_t n, ncclDataType_t t, ncclRedOp_t op)
{
    uint16_t *a = acc;
    const uint16_t *b = in;
    for (size_t i = 0; i < n; i++) {
        if (t == ncclFloat16) {
            _Float16 x, y;
            memcpy(&x, &a[i], 2);
            memcpy(&y, &b[i], 2);
            x = (_Float16)apply((float)x, (float)y, op);
            memcpy(&a[i], &x, 2);
        } else {
            a[i] = fbsi_bf16_store(apply(fbsi_bf16_load(a[i]), fbsi_bf16_load(b[i]), op));
        }
    }
}

/* 8-bit floats: combined in float, each result rounded back. */
static void reduce8(void *acc, const void *in, size_t n, ncclDataType_t t, ncclRedOp_t op)
{
    for (size_t i = 0; i < n; i++)
        fbsi_elem_store(t, acc, i, apply((float)fbsi_elem_load(t, acc, i), (float)fbsi_elem_load(t, in, i), op));
}

static void reduce(void *acc, const void *in, size_t n, ncclDataType_t t, ncclRedOp_t op)
{
    switch (t) {
    case ncclInt8: INT_REDUCE(int8_t, uint8_t); break;
    case ncclUint8: INT_REDUCE(uint8_t, uint8_t); break;
    case ncclInt32: INT_REDUCE(int32_t, uint32_t); break;
    case ncclUint32: INT_REDUCE(uint32_t, uint32_t); break;
    case ncclInt64: INT_REDUCE(int64_t, uint64_t); break;
    case ncclUint64: INT_REDUCE(uint64_t, uint64_t); break;
    case ncclFloat32: FLOAT_REDUCE(float); break;
    case ncclFloat64: FLOAT_REDUCE(double); break;
    case ncclFloat16: case ncclBfloat16: reduce16(acc, in, n, t, op); break;
    case ncclFloat8e4m3: case ncclFloat8e5m2: reduce8(acc, in, n, t, op); break;
    default: break;
    }
}

#define DIVIDE(T)                        \
    do {                                 \
        T *a = acc;                      \
        for (size_t i = 0; i < n; i++)   \
            a[i] = (T)(a[i] / (T)k);     \
    } while (0)

/* ncclAvg: the sum over the ranks divided by their number. */
static void divide(void *acc, size_t n, ncclDataType_t t, int k)
{
    switch (t) {
    case ncclInt8: DIVIDE(int8_t); break;
    case ncclUint8: DIVIDE(uint8_t); break;
    case ncclInt32: DIVIDE(int32_t); break;
    case ncclUint32: DIVIDE(uint32_t); break;
    case ncclInt64: DIVIDE(int64_t); break;
    case ncclUint64: DIVIDE(uint64_t); break;
    case ncclFloat32: DIVIDE(float); break;
    case ncclFloat64: DIVIDE(double); break;
    case ncclFloat16:
    case ncclBfloat16: {
        uint16_t *a = acc;
        for (size_t i = 0; i < n; i++) {
            if (t == ncclFloat16) {
                _Float16 x;
                memcpy(&x, &a[i], 2);
                x = (_Float16)((float)x / (float)k);
                memcpy(&a[i], &x, 2);
            } else {
                a[i] = fbsi_bf16_store(fbsi_bf16_load(a[i]) / (float)k);
            }
        }
        break;
    }
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
        for (size_t i = 0; i < n; i++)
            fbsi_elem_store(t, acc, i, fbsi_elem_load(t, acc, i) / k);
        break;
    default: break;
    }
}

/* --- the steps ----------------------------------------------------------- */

static char *scratch(struct ncclComm *c, size_t bytes)
{
    if (c->scratch_size < bytes) {
        char *s = realloc(c->scratch, bytes);
        if (s == NULL)
            return NULL;
        c->scratch = s;
        c->scratch_size = bytes;
    }
    return c->scratch;
}

/* Receive space of peer `p` in the scratch (this rank has none). */
static char *slot(struct ncclComm *c, int p)
{
    return c->scratch + (size_t)(p < c->rank ? p : p - 1) * CHUNK;
}

static ncclResult_t oom(struct ncclComm *c)
{
    fbsi_set_error(c, "out of host memory");
    return ncclSystemError;
}

static ncclResult_t run_plan(struct plan *p, int ok)
{
    ncclResult_t r = ok ? fbsi_plan_run(p) : oom(p->c);
    fbsi_plan_free(p);
    return r;
}

/* Reduces one chunk of every rank's input into `out`: `mine` is this
 * rank's part, the others' are in their slots. */
static void combine(struct ncclComm *c, const struct call *k, const char *mine, char *out, size_t n)
{
    size_t esz = fbsi_type_size(k->dt);
    char *acc = c->scratch + (size_t)(c->nranks - 1) * CHUNK;
    memcpy(acc, c->rank == 0 ? mine : slot(c, 0), n * esz);
    for (int r = 1; r < c->nranks; r++)
        reduce(acc, r == c->rank ? mine : slot(c, r), n, k->dt, k->op);
    if (k->op == ncclAvg)
        divide(acc, n, k->dt, c->nranks);
    memcpy(out, acc, n * esz);
}

/* all_reduce, reduce and reduce_scatter: chunk by chunk, every rank that
 * needs a result receives the others' inputs and combines them.
 * `block(p)` is the element offset of what peer p reduces. */
static ncclResult_t reduction(struct ncclComm *c, const struct call *k, int everyone, int root,
                              size_t block_elems)
{
    size_t esz = fbsi_type_size(k->dt), per = CHUNK / esz;
    if (scratch(c, (size_t)c->nranks * CHUNK) == NULL)
        return oom(c);
    const char *send = k->send;
    for (size_t off = 0; off < k->count; off += per) {
        size_t n = k->count - off < per ? k->count - off : per;
        struct plan p;
        int ok = 1, me = c->rank;
        fbsi_plan_init(&p, c);
        for (int q = 0; q < c->nranks; q++) {
            if (q == me)
                continue;
            if (everyone || q == root)
                ok = ok && fbsi_plan_add(&p, q, 1, k->kind, send + ((size_t)q * block_elems + off) * esz, n * esz);
            if (everyone || me == root)
                ok = ok && fbsi_plan_add(&p, q, 0, k->kind, slot(c, q), n * esz);
        }
        ncclResult_t r = run_plan(&p, ok);
        if (r != ncclSuccess)
            return r;
        if (everyone || me == root)
            combine(c, k, send + ((size_t)me * block_elems + off) * esz, (char *)k->recv + off * esz, n);
    }
    return ncclSuccess;
}

/* Every rank sends `bytes` to every other, from send + q * send_step, and
 * receives theirs into recv + q * recv_step; to itself too with `self`. */
static ncclResult_t exchange(struct ncclComm *c, const struct call *k, size_t bytes, size_t send_step,
                             size_t recv_step, int self)
{
    struct plan p;
    int ok = 1;
    fbsi_plan_init(&p, c);
    for (int q = 0; q < c->nranks; q++) {
        if (q == c->rank && !self)
            continue;
        ok = ok && fbsi_plan_add(&p, q, 1, k->kind, (const char *)k->send + (size_t)q * send_step, bytes);
        ok = ok && fbsi_plan_add(&p, q, 0, k->kind, (char *)k->recv + (size_t)q * recv_step, bytes);
    }
    return run_plan(&p, ok);
}

static ncclResult_t all_gather(struct ncclComm *c, const struct call *k)
{
    size_t bytes = k->count * fbsi_type_size(k->dt);
    char *mine = (char *)k->recv + (size_t)c->rank * bytes;
    if (mine != (const char *)k->send)
        memmove(mine, k->send, bytes);
    return exchange(c, k, bytes, 0, bytes, 0);
}

static ncclResult_t broadcast(struct ncclComm *c, const struct call *k)
{
    size_t bytes = k->count * fbsi_type_size(k->dt);
    struct plan p;
    int ok = 1;
    fbsi_plan_init(&p, c);
    for (int q = 0; q < c->nranks && c->rank == k->root; q++)
        if (q != c->rank)
            ok = ok && fbsi_plan_add(&p, q, 1, k->kind, k->send, bytes);
    if (c->rank != k->root)
        ok = fbsi_plan_add(&p, k->root, 0, k->kind, k->recv, bytes);
    else if (k->recv != k->send)
        memmove(k->recv, k->send, bytes);
    return run_plan(&p, ok);
}

static ncclResult_t all_to_all(struct ncclComm *c, const struct call *k)
{
    size_t bytes = k->count * fbsi_type_size(k->dt);
    return exchange(c, k, bytes, bytes, bytes, 1);
}

ncclResult_t fbsi_run_collective(struct ncclComm *c, const struct call *k)
{
    switch (k->kind) {
    case C_ALLREDUCE: return reduction(c, k, 1, -1, 0);
    case C_REDUCE: return reduction(c, k, 0, k->root, 0);
    case C_REDUCESCATTER: return reduction(c, k, 1, -1, k->count);
    case C_ALLGATHER: return all_gather(c, k);
    case C_BROADCAST: return broadcast(c, k);
    case C_ALLTOALL: return all_to_all(c, k);
    default: break;
    }
    fbsi_set_error(c, "%s is not a collective", fbsi_call_name(k->kind));
    return ncclInternalError;
}

static int overlaps(const char *a, size_t na, const char *b, size_t nb)
{
    return na > 0 && nb > 0 && a < b + nb && b < a + na;
}

/* Whether a send's bytes are also received into by the same group. */
static int received_into(const struct call *k, size_t n, const char *buf, size_t bytes)
{
    for (size_t j = 0; j < n; j++)
        if (k[j].kind == C_RECV && overlaps(buf, bytes, k[j].recv, k[j].count * fbsi_type_size(k[j].dt)))
            return 1;
    return 0;
}

/* Sends and receives of one group: one step, all at once, as one fused
 * launch on a GPU. A send whose bytes the group also receives into reads
 * them as they were before the group, as a real launch may: so a caller
 * that puts dependent steps into one group (nested groups are one group)
 * sends what the earlier step has not received yet, every time. */
ncclResult_t fbsi_run_p2p(struct ncclComm *c, const struct call *k, size_t n)
{
    struct plan p;
    int ok = 1;
    char **before = calloc(n, sizeof *before);
    fbsi_plan_init(&p, c);
    for (size_t i = 0; i < n && (ok = ok && before != NULL); i++) {
        size_t bytes = k[i].count * fbsi_type_size(k[i].dt);
        int send = k[i].kind == C_SEND;
        const void *buf = send ? k[i].send : k[i].recv;
        if (send && received_into(k, n, buf, bytes)) {
            ok = (before[i] = malloc(bytes)) != NULL;
            buf = ok ? memcpy(before[i], buf, bytes) : buf;
        }
        ok = ok && fbsi_plan_add(&p, k[i].root, send, C_SEND, buf, bytes);
    }
    ncclResult_t r = run_plan(&p, ok);
    for (size_t i = 0; before != NULL && i < n; i++)
        free(before[i]);
    free(before);
    return r;
}

/* FB_STANDIN_CORRUPT_RANK: the first FB_STANDIN_CORRUPT_ELEMS elements
 * (default 1) this rank receives get a high bit flipped, so their values
 * are wrong in every type. */
void fbsi_corrupt(const struct ncclComm *c, const struct call *k)
{
    size_t esz = fbsi_type_size(k->dt);
    int has_output = k->kind != C_SEND && (k->kind != C_REDUCE || c->rank == k->root);
    if (!has_output || k->count == 0 || esz == 0)
        return;
    size_t n = c->faults.corrupt_elems < k->count ? c->faults.corrupt_elems : k->count;
    for (size_t i = 0; i < n; i++)
        ((unsigned char *)k->recv)[i * esz + esz - 1] ^= 0x40;
}
