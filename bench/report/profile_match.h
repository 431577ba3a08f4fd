/* Matching results to reference profiles, and profiles made from results.
 * Loading profiles lives in nccl/profiles.h (fabric-coll needs it too); this
 * half needs the results reader and so belongs to the report. */
#ifndef FB_REPORT_PROFILE_MATCH_H
#define FB_REPORT_PROFILE_MATCH_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"
#include "nccl/profiles.h"
#include "report/result.h"

/* The network the run's environment asks NCCL for (NCCL_FASTRAK_* means
 * FasTrak, FI_PROVIDER=efa means OFI, NCCL_IB_HCA means IB, NCCL_NET names
 * one), or NULL. This is what a fallen-back run was meant to use. */
const char *fb_intended_net(const struct fb_result *r);

/* Picks the target profile that applies to the run: every criterion it
 * names must hold, and the one naming most criteria wins (ties: first by
 * name). `why` says what matched. Returns NULL when none applies. */
const struct fb_profile *fb_profile_pick(const struct fb_profiles *ps, const struct fb_result *r,
                                         char *why, size_t whylen);

/* When no profile applies exactly: the target profiles of the run's family.
 * The run's GPU model must be known and named by the profile, and every
 * criterion the run shows must hold; what it does not show (the network
 * without a log, the node count or ranks per node of an excerpt) is assumed
 * to be the profile's. Returns the most lenient such profile (lowest floor
 * for the collective), NULL when none; `assumed` says what was assumed and
 * which other profiles were candidates. */
const struct fb_profile *fb_profile_family(const struct fb_profiles *ps, const struct fb_result *r,
                                           char *assumed, size_t len);

/* Whether e gives an average (a typical figure or a pass line) over the
 * sweep lo..hi bytes, its avg_range: only then is it comparable with an
 * nccl-tests average of that sweep. */
bool fb_expect_covers_sweep(const struct fb_expect *e, unsigned long long lo, unsigned long long hi);

/* The least the average of an nccl-tests sweep must reach under profile
 * expectation e: its pass line on the average, else 90 % of its typical
 * average; NAN when it gives neither. */
double fb_expect_avg_floor(const struct fb_expect *e);

/* For a run of which only nccl-tests' average is known: the target profile
 * that applies to it, or else of its family, whose average for the
 * collective covers the same sweep (lo..hi bytes); the most lenient when
 * several do. NULL when none; `how` says how it was picked. */
const struct fb_profile *fb_profile_with_average(const struct fb_profiles *ps, const struct fb_result *r,
                                                 unsigned long long lo, unsigned long long hi, char *how, size_t len);

/* A result's own profile: the limit it was judged against when it was
 * measured (make demo measures one per run), kept beside it as
 * RESULT.profile.json for RESULT.json, so that every tool judging the file
 * later (check, html, export) uses the same limit. *p is NULL when there is
 * none; a file there that is not a target profile is FB_ERR_INPUT naming
 * it. The caller frees *p. */
enum fb_status fb_profile_beside(const char *result_path, struct fb_profile **p, struct fb_err *err);

/* Where the profile of `result_path` is kept (fb_profile_beside). */
void fb_profile_beside_path(const char *result_path, char *buf, size_t len);

/* True when the profile's criteria hold for the run; `why` names the first
 * that does not. */
bool fb_profile_applies(const struct fb_profile *p, const struct fb_result *r, char *why, size_t whylen);

/* A profile document made from known-good runs (one per collective) of one
 * cluster: floor = busBW at the largest size x (1 - tolerance). */
enum fb_status fb_profile_from_results(const struct fb_result *const *runs, size_t n,
                                       const char *name, double tolerance, json_object **out,
                                       struct fb_err *err);

#endif
