/* The rounds of the schedule: set up, agree, then each size measured and
 * agreed, then torn down; the first failed step ends the job. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/driver.h"

/* How long rank 0 waits for everyone's measurement of one size: the
 * slowest believable run of every lane of every end, plus the silence a
 * peer is allowed. */
static double size_limit(const struct probe_driver *d, uint64_t size)
{
    struct probe_size_spec spec;
    probe_size_spec_for(&d->o, size, NULL, &spec);
    int lanes = (int)d->o.tp->lanes(&d->o);
    return d->o.timeout + probe_size_spec_bound_s(&spec, lanes * PROBE_ENDS_MAX);
}

static void report_error(struct probe_report *rep, const struct fb_err *err)
{
    rep->code = err->code;
    snprintf(rep->msg, sizeof rep->msg, "%s", err->msg);
}

/* One step each: the round's connections, then every size. */
static int run_round(struct probe_driver *d, int round, struct probe_report *rep)
{
    struct probe_verdict v;
    struct fb_err err = {0};
    memset(rep, 0, sizeof *rep);
    probe_round_setup(&d->env, &d->sched, round, &d->round, &err);
    report_error(rep, &err);
    int shared = probe_driver_step(d, rep, -1, 4 * d->o.timeout, &v);
    if (v.code != FB_OK)
        return probe_driver_end(d, &v, shared);
    for (int s = 0; s < d->o.nsizes; s++) {
        fb_err_clear(&err);
        memset(rep, 0, sizeof *rep);
        int n = 0;
        probe_round_measure(&d->env, &d->round, d->o.sizes[s], rep->m, &n, &err);
        rep->n = n;
        report_error(rep, &err);
        shared = probe_driver_step(d, rep, round, size_limit(d, d->o.sizes[s]), &v);
        if (v.code != FB_OK)
            return probe_driver_end(d, &v, shared);
    }
    return FB_OK;
}

int probe_driver_rounds(struct probe_driver *d)
{
    struct probe_report *rep = calloc(1, sizeof *rep);
    if (rep == NULL)
        return FB_ERR_INTERNAL;
    int rc = FB_OK;
    for (int round = 0; round < d->sched.nrounds && rc == FB_OK; round++) {
        rc = run_round(d, round, rep);
        probe_round_teardown(&d->round);
    }
    free(rep);
    return rc;
}

int probe_driver_finish(struct probe_driver *d)
{
    struct fb_err err = {0};
    if (d->w.rank != 0)
        return FB_OK;
    probe_print_summary(stdout, &d->res);
    if (probe_results_save(&d->res, 1, &err) != FB_OK) {
        fprintf(stderr, "fabric-rdma: %s\n", err.msg);
        return err.code;
    }
    printf("# results: %s\n", d->res.path);
    return FB_OK;
}
