/* One fabric-coll run: the state every stage shares, and the stages.
 * coll_main.c strings them together; run_setup.c does everything before the
 * first measurement, run_sweep.c the measurements and their bounds,
 * run_report.c what is printed and recorded about them. */
#ifndef FB_COLL_RUN_H
#define FB_COLL_RUN_H

#include <limits.h>
#include <pthread.h>

#include "coll/backend.h"
#include "coll/config.h"
#include "coll/measure.h"
#include "coll/pacing.h"
#include "coll/plan.h"
#include "coll/record.h"
#include "coll/transport.h"
#include "coll/validate.h"
#include "core/watchdog.h"
#include "core/world.h"

#define STAGE_BYTES (16u << 20)
#define HOST_RESERVE_BYTES (256ULL << 20)
#define GPU_RESERVE_BYTES (1ULL << 30)
#define SETUP_BOUND_S 120.0
#define SLOWEST_BPS 1e7 /* 10 MB/s: no fabric worth measuring is slower */

struct run {
    struct coll_config cfg;
    struct fb_world world;
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
};

/* Everything before the first measurement, agreed by all ranks. Returns 0
 * to go on, -1 for --help/--version, else the exit code (rank 0 has said
 * why). */
int run_prepare(struct run *r, int argc, char **argv);

/* The early-stop band, from the tcp-fallback reference profile unless
 * --fallback-band says. Collective (rank 0 reads, all learn). */
void run_setup_fallback(struct run *r);

/* The sweep; returns the exit code. */
int run_sweep(struct run *r);

/* The next wait must end within `seconds` (watchdog). */
void run_arm(struct run *r, double seconds, const char *what);

/* A failure on this rank alone: say where, keep the results, end the job. */
void run_abort(struct run *r, struct fb_err *err) __attribute__((noreturn));

/* Rank 0, caller holds rec_lock: writes the results file, keeping the
 * first failure to do so for the exit code. */
void run_save(struct run *r, int complete);

/* Watchdog fault hook (see fb_fault_hook). */
void run_record_fault(void *ctx, enum fb_status code, const char *message);

/* Output and record (rank 0 unless said otherwise). */
void run_warn(struct run *r, const char *text);
void run_print_preamble(struct run *r);
void run_describe(struct run *r);
enum fb_status run_describe_devices(struct run *r, struct fb_err *err); /* collective */
void run_print_mismatch(struct run *r, const struct fb_call *c, const struct fb_mismatch *mm); /* any rank */
void run_finish_log_capture(struct run *r); /* collective */
void run_print_summary(struct run *r);
void run_record_early_stop(struct run *r, const struct fb_call *c, double busbw, const char *reason);
void run_print_stability(struct run *r);

#endif
