/* The verdict on one collective run: PASS, DEGRADED, TCP-FALLBACK, FAIL or
 * INCOMPLETE, with the reasons in one short paragraph. The rules, in order
 * (docs/report.md):
 *   1. any wrong element                        FAIL
 *   2. more than one node and NET/Socket        TCP-FALLBACK, whatever the numbers
 *   3. the run did not finish                   INCOMPLETE
 *   4. busBW at the profile's size >= floor      PASS
 *      >= fail_below (default floor/2)           DEGRADED
 *      below                                     FAIL
 * Only rule 4 needs a reference profile; docs/report.md lists the rules
 * that judge a run no profile describes (the GPU family, physics from the
 * atlas's NICs and GPU links, the same GPUs on one node), summary-only
 * blocks, and those that cap a PASS at DEGRADED. */
#ifndef FB_REPORT_VERDICT_H
#define FB_REPORT_VERDICT_H

#include <json-c/json.h>

#include "core/status.h"
#include "report/physics.h"
#include "report/profile_match.h"
#include "report/result.h"
#include "core/text.h"

struct fb_verdict {
    enum fb_status code; /* the exit code: FB_OK or an FB_VERDICT_* */
    const char *name;    /* "PASS", "DEGRADED", "TCP-FALLBACK", "FAIL", "INCOMPLETE" */
    const struct fb_profile *profile; /* NULL when none applied */
    struct fb_profile *own;           /* the result's own profile (fb_profile_beside), owned */
    bool auto_picked;
    bool family;       /* the profile was assumed from the GPU family */
    char profile_how[256];
    const struct fb_expect *expect;
    unsigned long long measured_bytes;
    double measured; /* best busBW at the compared size; NAN when none */
    double ratio;    /* measured / typical figure (the floor when none is given) */
    long nodes;
    bool fallback;     /* rule 2 holds, whatever verdict came first */
    long socket_ranks; /* ranks whose inter-node channels used NET/Socket */
    struct fb_summary summary;
    struct fb_physics physics; /* the hardware's bound for the run (physics.h) */
    bool by_physics;           /* the bound, not a profile, gave the verdict */
    struct fb_str reasons;
    struct fb_str chain;       /* how the verdict was reached, a line a step (check --explain) */
};

/* "PASS", "DEGRADED", "TCP-FALLBACK", "FAIL"; "INCOMPLETE" for any other
 * code: the one spelling of a verdict, for collective and probe results. */
const char *fb_verdict_name(enum fb_status code);

/* What the user gave besides the run: a profile to judge against (NULL:
 * picked automatically) and a single-node run of the same GPUs to hold a
 * multi-node run against (NULL: the GPU family's single-node profile). */
struct fb_verdict_ask {
    const char *profile_name;
    const struct fb_result *single_node;
};

/* Judges `r`. Without a profile named, the result's own profile kept
 * beside it (fb_profile_beside) comes first, then the one picked for it.
 * Errors (usage): an unknown or symptom profile named, a profile without
 * figures for the collective, and no rule able to judge the run (one node,
 * no profile); (input) an own profile that does not read. Free `v` either
 * way. */
enum fb_status fb_verdict_judge_with(const struct fb_result *r, const struct fb_profiles *ps,
                                     const struct fb_verdict_ask *ask, struct fb_verdict *v,
                                     struct fb_err *err);

/* The same with only a profile name. */
enum fb_status fb_verdict_judge(const struct fb_result *r, const struct fb_profiles *ps,
                                const char *profile_name, struct fb_verdict *v, struct fb_err *err);

void fb_verdict_free(struct fb_verdict *v);

/* The headline and the paragraph, for people. */
void fb_verdict_text(const struct fb_verdict *v, const struct fb_result *r, struct fb_str *out);

/* The chain that decided the verdict: the run's facts, the profile picked
 * and why (or why none), the physics rule and its inputs, the sources. */
void fb_verdict_explain(const struct fb_verdict *v, const struct fb_result *r, const struct fb_profiles *ps,
                        struct fb_str *out);

/* docs/schema/report-check.schema.json */
json_object *fb_verdict_json(const struct fb_verdict *v, const struct fb_result *r);

#endif
