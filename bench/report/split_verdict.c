#include "report/split_verdict.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonio.h"
#include "core/units.h"

/* Why 3x and 10x, from published per-GPU figures:
 *  - inside one node each GPU reaches ~370 GB/s busBW over NVLink with a
 *    ring, ~480 GB/s with NVLS (8 x H100; 8 x H200 ~475 GB/s);
 *  - across nodes each GPU has its own NIC: IB NDR 400 gives 46-48 GB/s
 *    busBW per NIC, so a node's eight rails carry ~370-390 GB/s together,
 *    what a full multi-node all_reduce reaches (GKE a3-mega TCPXO ~340).
 * Compared as the node's rails together against one GPU inside the node, a
 * healthy fabric is 1.0-1.4x apart; 3x leaves room for a fabric slower
 * than those references without coming near a broken one. The TCP fallback
 * gives ~4 GB/s for the whole job (~85x), and every rail squeezed through
 * one NIC leaves a node ~47 GB/s (~8-10x): an order of magnitude, 10x, is
 * what no working fabric shows. */

/* Large sizes: the top three doublings of the largest size both results
 * measured. Below them busBW is still climbing on any fabric. */
#define LARGE_FRACTION 8

struct phase {
    const struct fb_result *r;
    json_object *groups;
    size_t n;
};

static int find_phase(const struct fb_result *r, const char *kind, struct phase *p)
{
    json_object *split = fb_json_member(r->doc, "split");
    const char *k = fb_json_get_string(split, "kind");
    json_object *groups = fb_json_member(split, "groups");
    if (k == NULL || strcmp(k, kind) != 0 || groups == NULL || !json_object_is_type(groups, json_type_array))
        return 0;
    *p = (struct phase){r, groups, json_object_array_length(groups)};
    return 1;
}

static json_object *group_rows(const struct phase *p, size_t g)
{
    json_object *rows = fb_json_member(json_object_array_get_idx(p->groups, g), "rows");
    return rows != NULL && json_object_is_type(rows, json_type_array) ? rows : NULL;
}

static double placement_busbw(json_object *row, const char *key, long long *wrong)
{
    json_object *pl = fb_json_member(row, key);
    double bw = NAN;
    int64_t w = 0;
    if (fb_json_get_int64(pl, "wrong", &w) && w > 0)
        *wrong += w;
    if (!fb_json_get_double(pl, "busbw_GBps", &bw))
        bw = NAN;
    return bw;
}

/* The largest size any group of the phase measured. */
static unsigned long long phase_largest(const struct phase *p)
{
    unsigned long long largest = 0;
    for (size_t g = 0; g < p->n; g++) {
        json_object *rows = group_rows(p, g);
        for (size_t i = 0; rows != NULL && i < json_object_array_length(rows); i++) {
            int64_t b = 0;
            if (fb_json_get_int64(json_object_array_get_idx(rows, i), "bytes", &b) && (unsigned long long)b > largest)
                largest = (unsigned long long)b;
        }
    }
    return largest;
}

/* A group's best busBW at `min_bytes` and above; NAN when none. */
static double group_best(const struct phase *p, size_t g, unsigned long long min_bytes, long long *wrong)
{
    json_object *rows = group_rows(p, g);
    double best = NAN;
    for (size_t i = 0; rows != NULL && i < json_object_array_length(rows); i++) {
        json_object *row = json_object_array_get_idx(rows, i);
        int64_t b = 0;
        fb_json_get_int64(row, "bytes", &b);
        double oop = placement_busbw(row, "out_of_place", wrong), ip = placement_busbw(row, "in_place", wrong);
        if ((unsigned long long)b < min_bytes)
            continue;
        if (!isnan(oop) && (isnan(best) || oop > best))
            best = oop;
        if (!isnan(ip) && (isnan(best) || ip > best))
            best = ip;
    }
    return best;
}

static int group_color(const struct phase *p, size_t g)
{
    int64_t c = 0;
    fb_json_get_int64(json_object_array_get_idx(p->groups, g), "color", &c);
    return (int)c;
}

struct figures {
    unsigned long long from_bytes;
    double intra_gpu;            /* mean over nodes of one GPU's busBW inside its node */
    double rails_sum;            /* the node's rails together */
    double rail_min, rail_median;
    int weakest_rail;            /* its color: the local rank */
    size_t rails, nodes;
    long long wrong;
    double ratio;
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void measure_pair(const struct phase *intra, const struct phase *inter, struct figures *f)
{
    unsigned long long a = phase_largest(intra), b = phase_largest(inter);
    unsigned long long common = a < b ? a : b;
    f->from_bytes = common / LARGE_FRACTION;
    double sum = 0;
    size_t counted = 0;
    for (size_t g = 0; g < intra->n; g++) {
        double bw = group_best(intra, g, f->from_bytes, &f->wrong);
        if (!isnan(bw)) {
            sum += bw;
            counted++;
        }
    }
    f->nodes = intra->n;
    f->intra_gpu = counted ? sum / (double)counted : NAN;
    double *rails = calloc(inter->n ? inter->n : 1, sizeof *rails);
    f->rails = 0;
    f->rails_sum = 0;
    f->rail_min = NAN;
    for (size_t g = 0; rails != NULL && g < inter->n; g++) {
        double bw = group_best(inter, g, f->from_bytes, &f->wrong);
        if (isnan(bw))
            continue;
        rails[f->rails++] = bw;
        f->rails_sum += bw;
        if (isnan(f->rail_min) || bw < f->rail_min) {
            f->rail_min = bw;
            f->weakest_rail = group_color(inter, g);
        }
    }
    if (rails != NULL && f->rails > 0) {
        qsort(rails, f->rails, sizeof *rails, cmp_double);
        f->rail_median = rails[f->rails / 2];
    }
    free(rails);
    f->ratio = f->rails_sum > 0 ? f->intra_gpu / f->rails_sum : INFINITY;
}

static enum fb_status pick_phases(const struct fb_result *a, const struct fb_result *b, struct phase *intra,
                                  struct phase *inter, struct fb_err *err)
{
    int ok = (find_phase(a, "intra-node", intra) && find_phase(b, "inter-node", inter)) ||
             (find_phase(b, "intra-node", intra) && find_phase(a, "inter-node", inter));
    if (!ok)
        return fb_fail(err, FB_ERR_USAGE, "check with two results judges the intra-node and inter-node results "
                       "of one fabric-coll --split intra-inter launch; %s and %s are not such a pair (their "
                       "split.kind)", a->path, b->path);
    if (strcmp(intra->r->collective, inter->r->collective) != 0)
        return fb_fail(err, FB_ERR_USAGE, "%s is %s but %s is %s; give the pair of one launch", intra->r->path,
                       intra->r->collective, inter->r->path, inter->r->collective);
    return FB_OK;
}

/* A pair that cannot be read as a measurement, or NULL. */
static const struct fb_result *unfinished(const struct phase *intra, const struct phase *inter)
{
    if (!intra->r->complete || intra->r->nrows == 0)
        return intra->r;
    if (!inter->r->complete || inter->r->nrows == 0)
        return inter->r;
    return NULL;
}

static void say_figures(const struct figures *f, struct fb_str *out)
{
    char from[32];
    fb_format_size(f->from_bytes, from, sizeof from);
    fb_str_addf(out, "  intra-node: %.3g GB/s busBW per GPU (mean of %zu node%s)\n", f->intra_gpu, f->nodes,
                f->nodes == 1 ? "" : "s");
    fb_str_addf(out, "  inter-node: %.3g GB/s per node over its %zu rail%s at once (%.3g GB/s per GPU on "
                "each; weakest rail, local rank %d: %.3g GB/s)\n", f->rails_sum, f->rails,
                f->rails == 1 ? "" : "s", f->rails ? f->rails_sum / (double)f->rails : 0.0, f->weakest_rail,
                f->rail_min);
    fb_str_addf(out, "  ratio intra/inter %.1fx at sizes >= %s (same ballpark: %.0fx or less)\n", f->ratio, from,
                FB_SPLIT_BALLPARK);
}

static enum fb_status verdict_of(const struct figures *f, struct fb_str *out)
{
    if (f->ratio >= FB_SPLIT_APART) {
        fb_str_addf(out, "FAIL: inter-node busBW is %.0fx below intra-node, an order of magnitude: the second "
                    "interface is not attached as intended. Check the fabric NICs are attached to the pods "
                    "(Multus NetworkAttachmentDefinition, k8s.v1.cni.cncf.io/networks or GKE's "
                    "networking.gke.io/interfaces), NCCL_SOCKET_IFNAME and NCCL_IB_HCA naming those "
                    "interfaces, and the NCCL log of the inter-node run (fabric-report check it with "
                    "--nccl-log) for NET/Socket\n", f->ratio);
        return FB_VERDICT_FAIL;
    }
    if (f->ratio > FB_SPLIT_BALLPARK) {
        fb_str_addf(out, "DEGRADED: inter-node busBW is %.1fx below intra-node, more than a working fabric "
                    "shows (%.0fx): fewer fabric NICs than GPUs carrying the rails, a slow NIC, or no GPUDirect "
                    "RDMA; check NCCL_IB_HCA lists one NIC per GPU and the NCCL log of the inter-node run\n",
                    f->ratio, FB_SPLIT_BALLPARK);
        return FB_VERDICT_DEGRADED;
    }
    if (f->rails > 2 && f->rail_min * FB_SPLIT_BALLPARK < f->rail_median) {
        fb_str_addf(out, "DEGRADED: the node's rails together are in the intra-node ballpark (%.1fx), but "
                    "the rail of local rank %d is %.1fx below the median rail: check that GPU's NIC\n", f->ratio,
                    f->weakest_rail, f->rail_median / f->rail_min);
        return FB_VERDICT_DEGRADED;
    }
    fb_str_addf(out, "PASS: inter-node busBW is within %.0fx of intra-node (%.1fx): the fabric is used\n",
                FB_SPLIT_BALLPARK, f->ratio);
    return FB_OK;
}

enum fb_status fb_split_judge(const struct fb_result *a, const struct fb_result *b, struct fb_str *text,
                              enum fb_status *verdict, struct fb_err *err)
{
    struct phase intra, inter;
    enum fb_status st = pick_phases(a, b, &intra, &inter, err);
    if (st != FB_OK)
        return st;
    fb_str_addf(text, "%s: intra-node %s, inter-node %s\n", intra.r->collective, intra.r->path, inter.r->path);
    const char *launch_a = fb_json_get_string(fb_json_member(intra.r->doc, "split"), "launch");
    const char *launch_b = fb_json_get_string(fb_json_member(inter.r->doc, "split"), "launch");
    if (launch_a == NULL || launch_b == NULL || strcmp(launch_a, launch_b) != 0)
        fb_str_addf(text, "  note: the two come from different launches; the fabric may have changed between\n");
    const struct fb_result *cut = unfinished(&intra, &inter);
    if (cut != NULL) {
        fb_str_addf(text, "INCOMPLETE: %s did not finish; rerun the launch\n", cut->path);
        *verdict = FB_VERDICT_INCOMPLETE;
        return FB_OK;
    }
    struct figures f = {0};
    measure_pair(&intra, &inter, &f);
    if (f.wrong > 0) {
        fb_str_addf(text, "FAIL: %lld wrong elements in the groups' results: a data path that corrupts fails "
                    "whatever its bandwidth\n", f.wrong);
        *verdict = FB_VERDICT_FAIL;
        return FB_OK;
    }
    if (isnan(f.intra_gpu) || f.intra_gpu <= 0 || f.rails == 0) {
        fb_str_addf(text, "INCOMPLETE: no busBW to compare at the large sizes (one rank per group measures "
                    "nothing); rerun with two ranks or more per node\n");
        *verdict = FB_VERDICT_INCOMPLETE;
        return FB_OK;
    }
    say_figures(&f, text);
    *verdict = verdict_of(&f, text);
    return FB_OK;
}
