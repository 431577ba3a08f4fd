#include "scan/pairing.h"

#include <stdlib.h>
#include <string.h>

int scan_all_pairs_rounds(int n)
{
    if (n < 2)
        return 0;
    return n % 2 == 0 ? n - 1 : n;
}

static struct scan_pair ordered(int a, int b)
{
    return a < b ? (struct scan_pair){a, b} : (struct scan_pair){b, a};
}

/* Circle method over m = n rounded up to even: position m-1 stays put, the
 * others rotate by one each round. With n odd, position m-1 is a dummy and
 * its partner sits the round out. */
int scan_all_pairs_round(int n, int r, struct scan_pair *out)
{
    int m = n + n % 2, np = 0;
    for (int i = 0; i < m / 2; i++) {
        int x = i == 0 ? m - 1 : (r + i) % (m - 1);
        int y = (r + m - 1 - i) % (m - 1);
        if (x < n && y < n)
            out[np++] = ordered(x, y);
    }
    return np;
}

/* splitmix64: a small generator whose stream is fixed by the seed, the same
 * on every rank and every libc. */
static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void shuffle(int *v, int n, uint64_t *state)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(next_random(state) % (uint64_t)(i + 1));
        int t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

/* Nodes in random order, stably grouped by rack: consecutive nodes then
 * share a rack wherever the rack has a partner to give. */
static void order_by_rack(int *order, int n, const int *rack)
{
    if (rack == NULL)
        return;
    for (int i = 1; i < n; i++) { /* insertion sort: stable, n is small per call */
        int v = order[i], j = i - 1;
        while (j >= 0 && rack[order[j]] > rack[v]) {
            order[j + 1] = order[j];
            j--;
        }
        order[j + 1] = v;
    }
}

/* Pairs consecutive nodes within a rack; the one left over of each odd rack
 * goes to a pool paired across racks. */
int scan_first_pass(int n, const int *rack, uint64_t seed, struct scan_pair *out, int *idle)
{
    int *order = malloc((size_t)(n > 0 ? n : 1) * sizeof *order);
    int *pool = malloc((size_t)(n > 0 ? n : 1) * sizeof *pool);
    int np = 0, npool = 0;
    uint64_t state = seed;
    *idle = -1;
    if (order == NULL || pool == NULL) {
        free(order);
        free(pool);
        return -1;
    }
    for (int i = 0; i < n; i++)
        order[i] = i;
    shuffle(order, n, &state);
    order_by_rack(order, n, rack);
    for (int i = 0; i < n;) {
        int same = i + 1 < n && (rack == NULL || rack[order[i]] == rack[order[i + 1]]);
        if (same) {
            out[np++] = ordered(order[i], order[i + 1]);
            i += 2;
        } else {
            pool[npool++] = order[i++];
        }
    }
    for (int i = 0; i + 1 < npool; i += 2)
        out[np++] = ordered(pool[i], pool[i + 1]);
    if (npool % 2 == 1)
        *idle = pool[npool - 1];
    free(order);
    free(pool);
    return np;
}

/* The good node for suspect s: unused this round, in s's rack if one is,
 * else the first unused. */
static int pick_good(int n, int s, const int *rack, const unsigned char *good,
                     const unsigned char *used)
{
    int any = -1;
    for (int g = 0; g < n; g++) {
        if (!good[g] || used[g] || g == s)
            continue;
        if (rack == NULL || rack[g] == rack[s])
            return g;
        if (any < 0)
            any = g;
    }
    return any;
}

int scan_second_pass_round(int n, const int *rack, const unsigned char *suspect,
                           const unsigned char *good, unsigned char *done, struct scan_pair *out)
{
    unsigned char *used = calloc((size_t)(n > 0 ? n : 1), 1);
    int np = 0;
    if (used == NULL)
        return -1;
    for (int s = 0; s < n; s++) {
        if (!suspect[s] || done[s])
            continue;
        int g = pick_good(n, s, rack, good, used);
        if (g < 0)
            break;
        used[g] = 1;
        done[s] = 1;
        out[np++] = ordered(s, g);
    }
    free(used);
    return np;
}

struct scan_estimate scan_estimate_exhaustive(int n)
{
    int rounds = scan_all_pairs_rounds(n);
    return (struct scan_estimate){rounds, n * (n - 1) / 2, n / 2};
}

/* One first-pass round of n/2 pairs; an odd node out joins the suspects.
 * Each second-pass round pairs up to (good nodes) suspects. */
struct scan_estimate scan_estimate_fast(int n, int suspects)
{
    struct scan_estimate e = {0, 0, 0};
    if (n < 2)
        return e;
    int s = suspects + n % 2;
    if (s > n - 1)
        s = n - 1;
    int good = n - s;
    e.rounds = 1;
    e.tests = n / 2;
    e.max_pairs = n / 2;
    if (s > 0 && good > 0) {
        e.rounds += (s + good - 1) / good;
        e.tests += s;
    }
    return e;
}
