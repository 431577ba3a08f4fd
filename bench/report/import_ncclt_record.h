/* What an nccl-tests output says about one run, whichever format it came in
 * (text table or -J JSON). Both importers fill this record; one builder
 * turns it into a results document, so the two formats cannot drift. */
#ifndef FB_REPORT_IMPORT_NCCLT_RECORD_H
#define FB_REPORT_IMPORT_NCCLT_RECORD_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/host.h"
#include "core/status.h"
#include "report/import.h"
#include "report/result.h"

struct ncclt_device {
    long rank;
    char host[FB_HOST_MAX];
    char bus[48];   /* "0000:1b:00" / "0x1b" as printed, without brackets */
    char name[96];  /* "NVIDIA H100 80GB HBM3" */
    bool host_memory; /* fabric-coll's MPI backend prints "[host] host memory" */
    long group;       /* "Group N": the rank's color under NCCL_TESTS_SPLIT (0 without) */
};

/* Which column header a run had, which says which nccl-tests versions
 * could have printed it (docs/report.md, "How nccl-tests computed its
 * bandwidths"). */
enum ncclt_layout {
    NCCLT_LAYOUT_NONE,  /* no column header: any version */
    NCCLT_LAYOUT_2017,  /* "bytes N type ... res", time in ms: before 2019-03 */
    NCCLT_LAYOUT_ERROR, /* "size count ... error": 2019-03 to 2022-08 */
    NCCLT_LAYOUT_WRONG, /* "size count ... #wrong": 2022-08 and later */
    NCCLT_LAYOUT_JSON,  /* -J output: 2025 and later */
};

/* The rounding a row's printed figures hide: half a unit of the last
 * digit of its time, algBW and busBW, per placement (import_figures.h). */
struct ncclt_halves {
    double time, algbw, busbw;
};
struct ncclt_row_halves {
    struct ncclt_halves oop, ip;
};

struct ncclt_record {
    const char *format; /* "nccl-tests-text", "nccl-tests-json" or "rccl-tests-json" */
    char collective[32];
    char command_collective[32]; /* named by the command line echoed before the run, "" if none */
    char tool_version[32];
    char nccl_version[32];
    /* rccl-tests: its "rccl-tests: Version" line, "RCCL version :", "HIP
     * version  :" and "ROCm version :" lines ("" where not printed). */
    bool rccl;
    char rccl_version[64], hip_version[64], rocm_version[64];
    /* What a results file without device lines says of the ranks (rccl-tests
     * -Z json), 0 where unknown. */
    long ranks_known, nodes_known, ranks_per_node_known;
    char dtype[16], op[16];
    long root;
    bool root_printed; /* the output has a root column (else root is unknown) */
    char time_reduction[8];
    char invoked_as[512];
    char started[32]; /* as the input wrote it, for the record */
    bool have_config;
    long nthreads, ngpus, warmup, iters, agg, validation, graph;
    unsigned long long minbytes, maxbytes, step;
    bool step_is_factor;
    struct ncclt_device *devs;
    size_t ndevs;
    enum ncclt_layout layout;
    bool time_is_cpu; /* -C: times are CPU times, not the ones the bandwidths used */
    struct fb_row *rows;
    long *row_iters;
    struct ncclt_row_halves *row_halves;
    size_t nrows, cap;
    bool finished;      /* the footer ("Avg bus bandwidth") was reached */
    long long oob;      /* "Out of bounds values", -1 when absent */
    double avg_footer;  /* "Avg bus bandwidth", NAN when absent */
    char fault[512];    /* the failure line that says most, "" when none */
    json_object *env;   /* relevant variables only (fb_env_is_relevant) */
    json_object *warnings;
    json_object *transport; /* from NCCL INFO lines in the output, or NULL */
};

void ncclt_record_init(struct ncclt_record *r, const char *format);
void ncclt_record_free(struct ncclt_record *r);

/* A row with the rounding of its printed figures (NULL: printed exactly). */
enum fb_status ncclt_add_row(struct ncclt_record *r, const struct fb_row *row, long iterations,
                             const struct ncclt_row_halves *halves, struct fb_err *err);
enum fb_status ncclt_add_device(struct ncclt_record *r, const struct ncclt_device *d, struct fb_err *err);
void ncclt_warn(struct ncclt_record *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The header's counts (threads, GPUs, iterations, ...) as read, bounded:
 * a count nccl-tests cannot have is unknown (0), so that products such as
 * iterations x aggregated ops cannot overflow. */
void ncclt_bound_counts(struct ncclt_record *r);

/* Finds a collective name in a program or file name ("all_reduce_perf",
 * "logs/allgather-16n.txt"); false when none is there. */
bool ncclt_collective_in(const char *s, char *out, size_t len);

/* NCCL_VERSION_CODE (22105, or 2708 before 2.9) as "2.21.5". */
void ncclt_version_from_code(long code, char *out, size_t len);

/* Where an output line's own text starts: launcher prefixes removed
 * (fb_strip_launcher_prefixes), and the note rccl-tests prints on gfx942
 * without a newline ("On gfx942 architecture, using FNUZ FP8 types"),
 * which glues itself to the line after it. */
char *ncclt_line_start(char *line);

/* FB_INVALID, with the diagnosis and its fix, when the text is several
 * independent runs written into one output (import_ncclt_invalid.c);
 * FB_OK otherwise. */
enum fb_status ncclt_check_one_launch(const char *name, const char *text, size_t len, struct fb_err *err);

/* Builds the results document; fails (FB_ERR_INPUT) when the collective
 * cannot be told. */
enum fb_status ncclt_build_doc(struct ncclt_record *r, const char *name, const struct fb_import_opts *o,
                               json_object **doc, struct fb_err *err);

#endif
