/* The verdict on one launch of fabric-coll --split intra-inter: its
 * inter-node result (one group per rail) against its intra-node result
 * (one group per node), per GPU, at the large sizes (docs/report.md,
 * "check: the intra-node / inter-node pair"). */
#ifndef FB_REPORT_SPLIT_VERDICT_H
#define FB_REPORT_SPLIT_VERDICT_H

#include "core/status.h"
#include "core/text.h"
#include "report/result.h"

/* Healthy fabrics keep the node's inter-node busBW within this factor of
 * its intra-node busBW per GPU; at FB_SPLIT_APART times or more the
 * inter-node path is not the fabric. The figures behind both are in
 * split_verdict.c. */
#define FB_SPLIT_BALLPARK 3.0
#define FB_SPLIT_APART 10.0

/* The pair's verdict paragraph into `text`, its exit code (FB_OK,
 * FB_VERDICT_DEGRADED, FB_VERDICT_FAIL or FB_VERDICT_INCOMPLETE) into
 * *verdict. FB_ERR_USAGE when the two are not the intra-node and inter-node
 * results of one collective. */
enum fb_status fb_split_judge(const struct fb_result *a, const struct fb_result *b, struct fb_str *text,
                              enum fb_status *verdict, struct fb_err *err);

#endif
