/* Reference profiles: what a healthy cluster of a given kind measures, as
 * data files (the *.json files of results/reference/, schema docs/schema/profile.schema.json)
 * that cite their sources. Users add their own from a known-good run
 * (`fabric-report baseline`). */
#ifndef FB_NCCL_PROFILES_H
#define FB_NCCL_PROFILES_H

#include <json-c/json.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

#define FB_PROFILE_NAME_MAX 64
#define FB_PROFILE_EXPECT_MAX 8

/* One collective's figures in a profile (GB/s busBW). */
struct fb_expect {
    char collective[32];
    unsigned long long at_bytes; /* the size the figures are quoted at */
    double busbw;                /* typical; NAN when the source gives none */
    double floor;                /* PASS at or above */
    double fail_below;           /* FAIL under this; DEGRADED between */
    double avg_busbw;            /* an average quoted by the source; NAN when none */
    char avg_range[32];          /* the sweep that average covers, e.g. "1K-16G" */
    double avg_floor;            /* a pass line on that average (a health check's); NAN when none */
};

/* What a run must look like for a profile to apply; empty/zero = any. */
struct fb_match {
    char gpu[64];     /* substring of rank 0's GPU name, e.g. "H100" */
    char backend[16]; /* "nccl" or "mpi" */
    long nodes_min, nodes_max, ranks, ranks_per_node;
    char net[32];     /* transport.net, or the fabric the environment asks for */
    char intra[16];   /* an intra-node transport some rank used, e.g. "NVLS" */
};

/* The NICs a node of this kind has for GPU traffic (the figures physics
 * builds its bound from when no profile fits a run exactly). */
struct fb_nics {
    long per_node;  /* 0 when the profile says nothing of its NICs */
    double gbps;    /* line rate of each, Gb/s */
    char kind[16];  /* "IB", "RoCE", "EFA", "TCPXO", ... */
};

/* A probe figure: what one link of a given line rate carries (Gb/s). */
struct fb_probe_expect {
    char test[32];        /* "rdma_write" */
    double line_rate;     /* the port speed it applies to, Gb/s */
    double floor;         /* PASS at or above */
    bool gpu_memory;      /* the figure is for GPU memory (GPUDirect) */
};

#define FB_PROFILE_PROBES_MAX 4

struct fb_profile {
    char name[FB_PROFILE_NAME_MAX];
    long revision;
    bool target;       /* false: a symptom (e.g. TCP fallback) drawn, never checked against */
    char description[256];
    char fabric[32];   /* the network this kind of cluster is meant to use */
    char family[32];   /* the group it is listed under ("GKE", "single node", ...) */
    struct fb_nics nics;
    double intra_GBps; /* one GPU's links inside a node, one direction; NAN when not given */
    bool per_nic;      /* figures for one NIC (nics.Gbps): physics scales them, no run picks it */
    char source[1024]; /* citations, one line */
    char path[PATH_MAX];
    struct fb_match match;
    struct fb_expect expect[FB_PROFILE_EXPECT_MAX];
    int nexpect;
    struct fb_probe_expect probe[FB_PROFILE_PROBES_MAX];
    int nprobe;
};

struct fb_profiles {
    struct fb_profile *p;
    size_t n;
};

/* Profile directories in search order: `extra` (command line), the
 * colon-separated FABRIC_PROFILE_PATH, the user directory
 * ($XDG_CONFIG_HOME or ~/.config)/fabric-bench/profiles, then the shipped
 * reference directory (FABRIC_REFERENCE_DIR, else results/reference of the
 * source tree the binary was built in, else ../share/fabric-bench/reference
 * beside the binary). A name found twice keeps its first definition. */
enum fb_status fb_profiles_load_default(const char *const *extra, int nextra, struct fb_profiles *ps,
                                        struct fb_err *err);

/* Loads every *.json profile of the given directories (missing ones are
 * skipped). A malformed profile is an error naming its file. */
enum fb_status fb_profiles_load(const char *const *dirs, int ndirs, struct fb_profiles *ps,
                                struct fb_err *err);

/* Parses one profile document; `path` names it in messages. */
enum fb_status fb_profile_parse(json_object *doc, const char *path, struct fb_profile *p,
                                struct fb_err *err);

void fb_profiles_free(struct fb_profiles *ps);

const struct fb_profile *fb_profile_find(const struct fb_profiles *ps, const char *name);

/* "a, b, c" of every profile (target ones first), for error messages. */
void fb_profiles_names(const struct fb_profiles *ps, char *buf, size_t len);

const struct fb_expect *fb_profile_expect(const struct fb_profile *p, const char *collective);

/* The line rate each GPU of a node of this kind has to itself (Gb/s): the
 * node's NICs over its GPUs (the profile's ranks_per_node, else 8). NAN
 * when the profile gives no NICs. */
double fb_profile_nic_per_gpu(const struct fb_profile *p);

/* Profile names are file names too: letters, digits, '.', '_', '-'. */
bool fb_profile_name_ok(const char *name);

/* ($XDG_CONFIG_HOME or ~/.config)/fabric-bench/profiles */
enum fb_status fb_profile_user_dir(char *buf, size_t len, struct fb_err *err);

#endif
