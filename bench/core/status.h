/* Status codes and the error record every fabric-bench function returns.
 *
 * Functions return an fb_status and fill a struct fb_err with one line that
 * names the problem and the fix; only a program's main prints it and turns
 * it into an exit code. The numbers are the documented exit codes
 * (docs/exit-codes.md), shared by every binary so scripts learn them once. */
#ifndef FB_CORE_STATUS_H
#define FB_CORE_STATUS_H

enum fb_status {
    FB_OK = 0,
    FB_ERR_INTERNAL = 1,   /* a bug or an unexpected library failure */
    FB_ERR_USAGE = 2,      /* bad flag or value */
    FB_ERR_WRONG = 3,      /* validation found wrong elements */
    FB_ERR_MEMORY = 4,     /* sizes do not fit host or GPU memory */
    FB_ERR_UNAVAIL = 5,    /* backend or hardware absent here: skip, not fail */
    FB_ERR_LAUNCH = 6,     /* ranks disagree or launcher/MPI mismatch */
    FB_ERR_IO = 7,         /* results path not writable, disk full */
    FB_ERR_TIMEOUT = 8,    /* a bounded wait expired */
    FB_ERR_RUNTIME = 9,    /* MPI, NCCL, CUDA, verbs or socket failure */
    FB_ERR_INPUT = 10,     /* an input file is missing, unreadable or malformed */
    FB_ERR_SKIPPED = 11,   /* the cluster lacks what the run needs (two free GPU nodes) */
    FB_ERR_MISMATCH = 12,  /* delivered wiring differs from the wiring fabric-bench was given */
    /* fabric-report check verdicts (PASS is FB_OK) */
    FB_VERDICT_DEGRADED = 20,
    FB_VERDICT_TCP_FALLBACK = 21,
    FB_VERDICT_FAIL = 22,
    FB_VERDICT_INCOMPLETE = 23,
    /* fabric-scan */
    FB_SCAN_SUSPECTS = 24, /* the scan named slow or failed nodes or links */
    /* fabric-report import */
    FB_INVALID = 25, /* the output is not one run's measurement (independent runs mixed, ranks that disagree) */
    /* fabric-doctor */
    FB_DOCTOR_WARN = 30,
    FB_DOCTOR_FAIL = 31,
    /* signals, shell convention */
    FB_EXIT_SIGINT = 130,
    FB_EXIT_SIGTERM = 143,
};

#define FB_ERR_MSG_MAX 1024

struct fb_err {
    enum fb_status code;
    char msg[FB_ERR_MSG_MAX];
};

/* Records the first error only: a later failure while cleaning up must not
 * hide the cause. Returns code so callers can write `return fb_fail(...)`. */
enum fb_status fb_fail(struct fb_err *err, enum fb_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

void fb_err_clear(struct fb_err *err);

/* Short stable name ("usage", "timeout", ...) for JSON and messages. */
const char *fb_status_name(enum fb_status code);

#endif
