/* The sweep driver of fabric-coll: the state every stage shares, and the stages.
 * coll_main.c strings them together; sweep_setup.c does everything before the
 * first measurement, sweep_measure.c the measurements and their bounds,
 * sweep_report.c what is printed and recorded about them. */
#ifndef FB_COLL_SWEEP_H
#define FB_COLL_SWEEP_H

#include <limits.h>
#include <pthread.h>

#include "coll/backend.h"
#include "coll/config.h"
#include "coll/measure.h"
#include "coll/ntjson.h"
#include "coll/pacing.h"
#include "coll/plan.h"
#include "coll/record.h"
#include "coll/split.h"
#include "coll/transport.h"
#include "coll/validate.h"
#include "core/watchdog.h"
#include "core/world.h"

#define STAGE_BYTES (16u << 20)
#define HOST_RESERVE_BYTES (256ULL << 20)
#define GPU_RESERVE_BYTES (1ULL << 30)
#define SETUP_BOUND_S 120.0
#define SLOWEST_BPS 1e7 /* 10 MB/s: no fabric worth measuring is slower */

/* One (type, operator, root) of the run: -d all, -o all and -r all make
 * many, each swept over every size (and every -N cycle) in turn. */
struct sweep_combo {
    enum fb_dtype dtype;
    enum fb_redop op;
    int root;
};

struct sweep {
    struct coll_config cfg;
    struct fb_world world;
    /* Rank groups: the phase's split, this rank's group (the whole job
     * without a split) and every group's figures of the last size. */
    struct coll_split_spec split_spec; /* as given; intra-inter has two phases */
    struct coll_split split;
    struct fb_world group;
    struct fb_measurement *group_res; /* 2 x split.ngroups: out-of-place, then in-place */
    int phase, phases;
    char launch[128];                   /* the same in every phase's record */
    char phase_paths[2][PATH_MAX];      /* rank 0: each phase's results file */
    struct fb_backend be;
    struct fb_plan plan;
    struct fb_checker checker;
    struct fb_record rec;
    struct fb_timing timing;
    char cluster[128];
    uint64_t wrong_total;
    double busbw_sum;
    long busbw_n;
    int mismatch_lines;
    char cap_note[160]; /* set when --cap-memory lowered -e */
    struct fb_nccl_capture nccl_log;
    char log_note[PATH_MAX + 128]; /* why NCCL's log is not captured */
    struct fb_watchdog *wd;
    char wd_note[FB_ERR_MSG_MAX];     /* why waits are not bounded */
    pthread_mutex_t rec_lock;         /* the record, against the fault hook */
    double slowest_Bps;               /* lowest algBW seen at >= 1 MiB */
    long step;                        /* position in the run, for the watchdog */
    struct fb_err save_err;           /* first failure to update the file */
    double sweep_start;               /* for --time-budget */
    int sizes_done;
    struct fb_fallback_rule fallback; /* band_GBps 0: early stop off */
    char fallback_note[FB_ERR_MSG_MAX + 128];
    int fallback_said;                /* --full: the suspicion said once */
    uint64_t peak_memory[FB_LOCAL_RANKS_MAX]; /* per local rank: backend's peak_memory, 0 until sampled */
    char flag_notes[1024];            /* lines: flags the backend lowered (check_flags) */
    uint64_t mem_before_alloc;        /* the most of peak_memory[] before the buffers (after set-up) */
    uint64_t mem_after_alloc;         /* and after them */
    uint64_t mem_parts[3];            /* -M: set-up, buffers, collectives; max over ranks (rank 0) */
    int mem_known;                    /* every rank could sample them (rank 0) */
    int64_t oob_checks;               /* checks with wrong elements; this rank's, then the sum (rank 0) */
    struct fb_ntjson_file nt;         /* nccl-tests' JSON (-J under a *_perf name) */
    int nt_failed;                    /* its update failed once: said, not again */
    struct sweep_combo *combos;       /* sweep_plan_combos */
    int ncombos;
    char combo_note[2][320];          /* what -d all / -o all leave out */
    long cycles_done;                 /* full -N cycles of the current combo */
};

/* Collective: the types, operators and roots to run, every rank agreeing
 * on what the backend supports; FB_ERR_USAGE when a type or operator named
 * alone is not supported. Call on every rank whatever `err` holds. */
enum fb_status sweep_plan_combos(struct sweep *r, struct fb_err *err);

/* Sizes the results document plans: -1 (open-ended) for -N 0. */
int sweep_sizes_planned(const struct sweep *r);

/* Everything before the first measurement, agreed by all ranks. Returns 0
 * to go on, -1 for --help/--version, else the exit code (rank 0 has said
 * why). */
int sweep_prepare(struct sweep *r, int argc, char **argv);

/* Between the phases of one launch (--split intra-inter): releases the
 * phase's backend, buffers, groups and record, keeping the job's world,
 * watchdog and the phases' paths. Collective. */
void sweep_end_phase(struct sweep *r);
void sweep_next_phase(struct sweep *r);

/* Rank 0, after the last phase: the command that judges the pair. */
void sweep_print_phase_pair(struct sweep *r);

/* The early-stop band, from the tcp-fallback reference profile unless
 * --fallback-band says. Collective (rank 0 reads, all learn). */
void sweep_setup_fallback(struct sweep *r);

/* The sweep; returns the exit code. */
int sweep_execute(struct sweep *r);

/* The next wait must end within `seconds` (watchdog). */
void sweep_arm(struct sweep *r, double seconds, const char *what);

/* A failure on this rank alone: say where, keep the results, end the job. */
void sweep_abort(struct sweep *r, struct fb_err *err) __attribute__((noreturn));

/* Rank 0, caller holds rec_lock: writes the results file, keeping the
 * first failure to do so for the exit code. */
void sweep_save(struct sweep *r, int complete);

/* Watchdog fault hook (see fb_fault_hook). */
void sweep_record_fault(void *ctx, enum fb_status code, const char *message);

/* Output and record (rank 0 unless said otherwise). */
void sweep_warn(struct sweep *r, const char *text);
void sweep_print_preamble(struct sweep *r);
void sweep_describe(struct sweep *r);
enum fb_status sweep_describe_devices(struct sweep *r, struct fb_err *err); /* collective */
void sweep_print_mismatch(struct sweep *r, const struct fb_call *c, const struct fb_mismatch *mm); /* any rank */
void sweep_finish_log_capture(struct sweep *r); /* collective */
void sweep_print_summary(struct sweep *r);
void sweep_print_groups(struct sweep *r); /* rank 0: each group's busBW */
void sweep_record_early_stop(struct sweep *r, const struct fb_call *c, double busbw, const char *reason);
void sweep_print_stability(struct sweep *r);
void sweep_sample_memory(struct sweep *r); /* any rank, local */
uint64_t sweep_peak_memory(const struct sweep *r); /* the most of this process's local ranks */
void sweep_record_memory(struct sweep *r); /* collective: devices[].peak_memory_bytes */
void sweep_start_ntjson(struct sweep *r);  /* rank 0: nccl-tests' JSON file created */
void sweep_save_ntjson(struct sweep *r);   /* rank 0, caller holds rec_lock */
void sweep_count_checks(struct sweep *r);  /* collective: oob_checks summed to rank 0 */
/* Rank 0: the footer lines (and -M's), recorded in "footer"; every rank:
 * whether NCCL_TESTS_MIN_BW fails the run. */
int sweep_print_footer(struct sweep *r);

#endif
