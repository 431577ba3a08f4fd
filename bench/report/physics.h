/* What the hardware lets a run reach, when no profile describes it: the
 * bound a ring can reach from the facts the run carries (GPU model, nodes,
 * ranks per node, the NICs NCCL's log lists) and the NIC and GPU-link
 * figures of the known families in the atlas (the profiles). A verdict
 * from physics names its inputs and where each came from. */
#ifndef FB_REPORT_PHYSICS_H
#define FB_REPORT_PHYSICS_H

#include <stdbool.h>
#include <stddef.h>

#include "nccl/profiles.h"
#include "report/result.h"

/* Healthy rings reach 80-97 % of their NIC aggregate (IB NDR 8 x 400:
 * 370-390 GB/s; HDR 8 x 200: ~194; a3-ultra all_gather: 41 GB/s a NIC)
 * and about 70-85 % of one GPU's links inside a node. Below these shares a
 * run is DEGRADED by physics; it never FAILs by physics alone. */
#define FB_PHYSICS_NIC_SHARE 0.75
#define FB_PHYSICS_INTRA_SHARE 0.6

struct fb_physics {
    double bound;       /* GB/s of busBW a ring can reach; NAN when unknown */
    double bound_most;  /* the most generous family's bound: above it no ring of NICs carries the figure */
    double floor;       /* PASS at or above: a per-NIC profile's floor x the NICs, else the share above */
    char floor_rule[160]; /* where the floor comes from, for the paragraph */
    bool across;        /* the bound is the NICs' (across nodes), else the GPU links' */
    bool nvlink_spans;  /* NVLink spans the nodes (MNNVL): no NIC bound applies */
    long nics;          /* NICs counted per node (across) */
    long logged_nics;   /* the NICs NCCL's log lists on a node; 0 when not logged */
    double nic_gbps;    /* line rate of each, Gb/s (across) */
    long gpus_per_node; /* the ranks per node the bound is for */
    bool rpn_assumed;   /* ranks per node assumed (8), not shown by the run */
    char inputs[512];   /* the inputs and where each came from, one sentence */
    char source[1024];  /* the atlas profiles (and their sources) the figures came from */
};

/* Reads the bound for `r` on `nodes` nodes (0: not shown). Sets
 * ph->bound to NAN when the facts do not give one: a collective without a
 * ring bound (alltoall and its kin), a GPU no family names, a network no
 * family uses. */
void fb_physics_read(const struct fb_result *r, const struct fb_profiles *ps, long nodes,
                     struct fb_physics *ph);

/* The model token of a GPU name: "NVIDIA H100 80GB HBM3" -> "H100",
 * "AMD Instinct MI300X" -> "MI300X"; the name itself when no token is
 * known. */
const char *fb_gpu_model(const char *name, char *buf, size_t len);

/* Where `token` (a model, e.g. "B200") stands in a GPU name as a word of
 * its own: "B200" is not in "NVIDIA GB200", "H100" is in "NVIDIA H100
 * 80GB HBM3". NULL when it does not. */
const char *fb_gpu_token(const char *name, const char *token);

/* "NVIDIA" or "AMD" from a GPU name; NULL when it says neither. */
const char *fb_gpu_vendor(const char *name);

#endif
