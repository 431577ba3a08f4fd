/* Host validation speed for `make bench`: fabric-coll's fill and check in
 * host memory (coll/pattern_host.h) on one large float call, against a
 * memcpy of the same bytes timed in the same run, the pace of anything that
 * streams through that much memory on this machine.
 *
 * usage: check_speed [MIB [REPS]]  (512 MiB, best of 3 by default)
 * Prints "# ..." then one "name GiB/s ratio-to-memcpy" line per operation.
 * Exits 1 when a fill writes the wrong values or the check of a correct
 * result finds wrong elements (or misses a planted one): that is a bug,
 * not slowness. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coll/pattern_host.h"

#define NRANKS 2
#define RANK 0

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One timed operation and what it needs. */
struct job {
    const struct fb_host_tables *ht;
    const struct fb_pattern *p;
    void *buf;       /* written (memcpy, fill) or read (check) */
    const void *src; /* memcpy only */
    uint64_t n;      /* elements (fill, check) */
    size_t bytes;    /* bytes the operation covers, for GiB/s */
    int poison;      /* fill: the poison instead of the input */
    uint64_t wrong;  /* check: summed over every repetition */
};

static void run_copy(struct job *j) { memcpy(j->buf, j->src, j->bytes); }

static void run_fill(struct job *j) { fb_host_fill(j->ht, j->p, j->buf, 0, j->n, j->poison); }

static void run_check(struct job *j)
{
    uint64_t first = UINT64_MAX;
    j->wrong += fb_host_check(j->ht, j->p, j->buf, 0, j->n, &first);
}

/* Best of reps: the least disturbed run of a shared machine is the one
 * closest to what the code itself costs. */
static double best_seconds(void (*fn)(struct job *), struct job *j, int reps)
{
    double best = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        fn(j);
        double t = now() - t0;
        if (r == 0 || t < best)
            best = t;
    }
    return best;
}

static double gib_per_s(size_t bytes, double seconds) { return (double)bytes / seconds / (1024.0 * 1024.0 * 1024.0); }

static void report(const char *name, double gibs, double base) { printf("%-18s %8.2f %6.3f\n", name, gibs, gibs / base); }

/* The values a fill wrote, sampled across the buffer: a fill that skipped
 * its work would otherwise look fast. */
static int fill_ok(const struct fb_pattern *p, const void *buf, uint64_t n, int poison)
{
    uint64_t step = n / 4096 + 1;
    for (uint64_t i = 0; i < n; i += step) {
        double want = poison ? fb_pat_poison(p->dtype) : fb_pat_input(p, i);
        if (fb_pat_load(p->dtype, buf, i) != want)
            return 0;
    }
    return 1;
}

/* The correct result of rank RANK's receive buffer, element by element from
 * the formulas (no tables), independently of the tables the checker
 * compares with. */
static void store_expected(const struct fb_pattern *p, void *buf)
{
    for (uint64_t i = 0; i < p->recv; i++) {
        double want;
        if (fb_pat_expected(p, NULL, i, &want))
            fb_pat_store(p->dtype, buf, i, want);
    }
}

/* One element made wrong must be counted, at its index: a checker that
 * always answered 0 would otherwise pass every result. */
static int catches_planted(const struct fb_host_tables *ht, const struct fb_pattern *p, void *buf)
{
    uint64_t n = p->recv < (1u << 20) ? p->recv : (1u << 20), at = n / 2 + 1, first = UINT64_MAX;
    double was = fb_pat_load(p->dtype, buf, at);
    fb_pat_store(p->dtype, buf, at, fb_pat_poison(p->dtype));
    uint64_t wrong = fb_host_check(ht, p, buf, 0, n, &first);
    fb_pat_store(p->dtype, buf, at, was);
    return wrong == 1 && first == at;
}

struct bench {
    size_t bytes;
    int reps;
    void *a, *b; /* the send and receive buffers, each `bytes` long */
    double copy;  /* memcpy's GiB/s */
};

/* Times and reports one fill of n elements of buf; 0 when it wrote wrong
 * values. */
static int time_fill(const struct bench *bn, const struct fb_host_tables *ht, const struct fb_pattern *p, void *buf,
                     uint64_t n, int poison)
{
    struct job j = {ht, p, buf, NULL, n, n * sizeof(float), poison, 0};
    char name[64];
    snprintf(name, sizeof name, "%s.%s", fb_collective((enum fb_coll_id)p->coll)->name, poison ? "poison" : "fill");
    report(name, gib_per_s(j.bytes, best_seconds(run_fill, &j, bn->reps)), bn->copy);
    return fill_ok(p, buf, n, poison);
}

/* Times and reports the check of a correct receive buffer; 0 when it
 * found wrong elements or missed a planted one. */
static int time_check(const struct bench *bn, const struct fb_host_tables *ht, const struct fb_pattern *p, void *buf)
{
    struct job j = {ht, p, buf, NULL, p->recv, p->recv * sizeof(float), 0, 0};
    const char *coll = fb_collective((enum fb_coll_id)p->coll)->name;
    char name[64];
    store_expected(p, buf);
    snprintf(name, sizeof name, "%s.check", coll);
    report(name, gib_per_s(j.bytes, best_seconds(run_check, &j, bn->reps)), bn->copy);
    int caught = catches_planted(ht, p, buf);
    if (j.wrong != 0)
        fprintf(stderr, "check_speed: %s: %llu wrong over %d checks of a correct result\n", coll,
                (unsigned long long)j.wrong, bn->reps);
    if (!caught)
        fprintf(stderr, "check_speed: %s: a wrong element planted in the result was not reported\n", coll);
    return j.wrong == 0 && caught;
}

/* Fills, checks and reports one collective (rank RANK's input in the send
 * buffer, its result in the receive buffer); 0 when something was wrong. */
static int bench_coll(const struct bench *bn, enum fb_coll_id id, int poison_too)
{
    const struct fb_collective *c = fb_collective(id);
    struct fb_counts k = c->counts(bn->bytes, sizeof(float), NRANKS);
    struct fb_pattern p = fb_pattern_make(c, &k, FB_FLOAT, FB_SUM, NRANKS, RANK, 0);
    struct fb_host_tables ht;
    struct fb_err err = {0};
    fb_host_tables_init(&ht);
    if (fb_host_tables_prepare(&ht, &p, &err) != FB_OK) {
        fprintf(stderr, "check_speed: %s: %s\n", c->name, err.msg);
        return 0;
    }
    int ok = time_fill(bn, &ht, &p, bn->a, p.send, 0);
    if (!ok)
        fprintf(stderr, "check_speed: %s: the fill wrote wrong values\n", c->name);
    if (poison_too && !time_fill(bn, &ht, &p, bn->b, p.recv, 1)) {
        fprintf(stderr, "check_speed: %s: the poison fill wrote wrong values\n", c->name);
        ok = 0;
    }
    ok &= time_check(bn, &ht, &p, bn->b);
    fb_host_tables_free(&ht);
    return ok;
}

/* argv[i] as a whole number in [1, max], def when absent, -1 when bad. */
static long arg_or(int argc, char **argv, int i, long def, long max)
{
    if (i >= argc)
        return def;
    char *end = NULL;
    long v = strtol(argv[i], &end, 10);
    return end != argv[i] && *end == '\0' && v >= 1 && v <= max ? v : -1;
}

int main(int argc, char **argv)
{
    long mib = arg_or(argc, argv, 1, 512, 1L << 20), reps = arg_or(argc, argv, 2, 3, 1000);
    if (argc > 3 || mib < 0 || reps < 0) {
        fprintf(stderr, "usage: %s [MIB [REPS]]\n", argv[0]);
        return 2;
    }
    struct bench bn = {(size_t)mib << 20, (int)reps, NULL, NULL, 0};
    bn.a = aligned_alloc(4096, bn.bytes);
    bn.b = aligned_alloc(4096, bn.bytes);
    if (bn.a == NULL || bn.b == NULL) {
        fprintf(stderr, "check_speed: cannot allocate 2 x %ld MiB\n", mib);
        return 4;
    }
    /* Touched first, so that no timing pays for the kernel's first-touch
     * page faults. */
    memset(bn.a, 1, bn.bytes);
    memset(bn.b, 2, bn.bytes);
    printf("# %ld MiB, float, sum, %d ranks, rank %d, best of %d: name GiB/s ratio-to-memcpy\n", mib, NRANKS, RANK,
           bn.reps);
    struct job copy = {NULL, NULL, bn.b, bn.a, 0, bn.bytes, 0, 0};
    bn.copy = gib_per_s(bn.bytes, best_seconds(run_copy, &copy, bn.reps));
    report("memcpy", bn.copy, bn.copy);
    int ok = bench_coll(&bn, FB_ALL_REDUCE, 1);
    ok &= bench_coll(&bn, FB_ALL_GATHER, 0);
    free(bn.a);
    free(bn.b);
    return ok ? 0 : 1;
}
