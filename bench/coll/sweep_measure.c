/* The measurements: one size at a time, each placement bounded by the
 * watchdog, each row printed and saved as soon as it is known. */
#include <time.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/sweep.h"
#include "core/coord.h"
#include "coll/table.h"
#include "core/clock.h"
#include "core/units.h"

void sweep_arm(struct sweep *r, double seconds, const char *what)
{
    fb_watchdog_arm(r->wd, seconds, r->step++, what);
}

/* A failure on this rank alone, mid-sweep: peers may be waiting inside a
 * collective, so the only clean end is to say where and abort the job. */
void sweep_abort(struct sweep *r, struct fb_err *err)
{
    fb_watchdog_let_end(r->wd);
    fprintf(stderr, "fabric-coll: rank %d on %s: %s\n", r->world.rank, r->world.host, err->msg);
    if (r->world.rank == 0 && r->rec.doc != NULL) {
        struct fb_err ignored = {0};
        pthread_mutex_lock(&r->rec_lock);
        fb_record_fault(&r->rec, err->code, err->msg, r->world.rank, r->world.host);
        fb_record_save(&r->rec, 0, &ignored);
        sweep_save_ntjson(r);
        pthread_mutex_unlock(&r->rec_lock);
    }
    if (r->be.state != NULL)
        r->be.ops->fini(&r->be, 1);
    fb_coord_abort(&r->world, (int)err->code);
}

/* A full disk or a read-only results directory must not cost the
 * measurement: the table on stdout goes on, the failure is said once, and the
 * exit code tells at the end. Caller holds rec_lock. */
void sweep_save(struct sweep *r, int complete)
{
    struct fb_err err = {0};
    enum fb_status st = fb_record_save(&r->rec, complete, &err);
    sweep_save_ntjson(r); /* a view of the record as just saved */
    if (st == FB_OK || r->save_err.code != FB_OK)
        return;
    r->save_err = err;
    fprintf(stderr, "fabric-coll: %s; measuring on: the table on stdout is the record\n", err.msg);
}

/* The slowest transfer seen so far sets how long the next may take. */
static void note_bandwidth(struct sweep *r, const struct fb_call *c, const struct fb_measurement *res)
{
    if (c->counts.bytes < (1u << 20))
        return;
    for (int i = 0; i < 2; i++) {
        double bps = res[i].algbw_GBps * 1e9;
        if (bps > 0 && (r->slowest_Bps == 0 || bps < r->slowest_Bps))
            r->slowest_Bps = bps;
    }
}

static double step_bound(struct sweep *r, const struct fb_call *c)
{
    if (r->cfg.timeout > 0)
        return (double)r->cfg.timeout;
    double floor = r->slowest_Bps > 0 ? r->slowest_Bps / 4 : SLOWEST_BPS;
    if (floor < SLOWEST_BPS)
        floor = SLOWEST_BPS;
    double ops = (double)(r->cfg.warmup + r->cfg.iters * (r->cfg.graph > 0 ? r->cfg.graph : 1) + r->cfg.check) *
                 (double)r->cfg.agg;
    return fb_watchdog_bound(ops, (double)c->counts.bytes, floor);
}

static void arm_call(struct sweep *r, const struct fb_call *c)
{
    char size[32], what[96];
    fb_format_size(c->counts.bytes, size, sizeof size);
    snprintf(what, sizeof what, "%s %s %s", c->coll->name, size, c->in_place ? "in-place" : "out-of-place");
    sweep_arm(r, step_bound(r, c), what);
}

/* Under --time-budget, this size's share of what is left decides its
 * timed iterations; a cap of -n when given. */
static void pace(struct sweep *r, const struct fb_call *oop /* one per local rank */)
{
    if (r->cfg.time_budget <= 0)
        return;
    struct fb_err err = {0};
    double per_op = 0;
    if (fb_calibrate(&r->be, &r->group, oop, &per_op, &err) != FB_OK)
        sweep_abort(r, &err);
    double left = r->cfg.time_budget - (fb_now() - r->sweep_start);
    int sizes_left = sweep_sizes_planned(r) - r->sizes_done;
    long cap = r->cfg.iters_given ? r->cfg.iters : 1000;
    long iters = fb_budget_iterations(left, sizes_left, per_op * (double)r->cfg.agg, 2, cap);
    /* Clocks differ by rank: rank 0's count is everyone's, or the ranks
     * would run different numbers of collectives. */
    fb_coord_bcast(&r->world, &iters, sizeof iters, 0);
    r->timing.iters = iters;
}

/* Whether the sweep should end here: a multi-node run whose busBW at
 * >= 64M is in the TCP-fallback band, or whose NCCL log shows sockets. */
static int fallback_stop(struct sweep *r, const struct fb_call *c, const struct fb_measurement *res)
{
    if (r->fallback.nodes < 2 || c->counts.bytes < FB_FALLBACK_MIN_BYTES)
        return 0;
    int socket = r->nccl_log.active && fb_log_shows_socket(r->nccl_log.path);
    fb_coord_allreduce(&r->world, &socket, 1, FB_CDT_INT, FB_COP_MAX);
    double bw = res[0].busbw_GBps > res[1].busbw_GBps ? res[0].busbw_GBps : res[1].busbw_GBps;
    struct fb_fallback_rule rule = r->fallback;
    if (rule.band_GBps <= 0 && !socket)
        return 0;
    char reason[256];
    const char *net = strcmp(r->be.ops->name, "nccl") == 0 ? "NCCL's network" : "the MPI path";
    if (!fb_fallback_suspected(&rule, c->counts.bytes, bw, socket, net, reason, sizeof reason))
        return 0;
    if (r->cfg.full) {
        if (r->world.rank == 0 && !r->fallback_said++)
            printf("# Note: %s (--full: measuring on)\n", reason);
        return 0;
    }
    if (r->world.rank == 0)
        sweep_record_early_stop(r, c, bw, reason);
    return 1;
}

/* One call per local rank of this process, for one size and placement,
 * numbered within the rank group (the whole job without a split). */
static void make_calls(struct sweep *r, const struct sweep_combo *k, uint64_t size, int in_place,
                       struct fb_call *calls)
{
    int n = fb_total_ranks(&r->be, &r->group);
    for (int i = 0; i < r->be.local_ranks; i++) {
        calls[i] = fb_make_call(r->cfg.coll, k->dtype, k->op, k->root, size, in_place,
                                r->group.rank * r->be.local_ranks + i, n, r->be.ops->inplace_style);
        fb_call_unalign(&calls[i], (size_t)r->cfg.unalign);
    }
}

/* Rank groups measure side by side: they start each placement together
 * (nccl-tests' barriers are over the whole job), each times its own calls,
 * and the table gets the figure nccl-tests prints (coll_split_combine). */
static enum fb_status measure_placement(struct sweep *r, uint64_t size, const struct fb_call *calls,
                                        struct fb_measurement *res, struct fb_mismatch *mm, struct fb_err *err)
{
    if (!r->split.active)
        return fb_measure(&r->be, &r->group, &r->timing, &r->checker, calls, res, mm, err);
    fb_coord_barrier(&r->world);
    struct fb_measurement mine;
    enum fb_status st = fb_measure(&r->be, &r->group, &r->timing, &r->checker, calls, &mine, mm, err);
    if (st == FB_OK)
        coll_split_combine(&r->split, &r->world, size, &calls[0], r->timing.reduction, &mine, res,
                           r->group_res + (calls[0].in_place ? r->split.ngroups : 0));
    return st;
}

/* Rank 0: every group's row, with the call sizes of its own rank count. */
static void record_group_rows(struct sweep *r, const struct sweep_combo *k, uint64_t size, int cycle)
{
    for (int g = 0; r->split.active && g < r->split.ngroups; g++) {
        struct fb_call c = fb_make_call(r->cfg.coll, k->dtype, k->op, k->root, size, 0, 0,
                                        r->split.group_size[g], r->be.ops->inplace_style);
        fb_record_add_group_row(&r->rec, g, &c, cycle, r->timing.iters * r->timing.agg, &r->group_res[g],
                                &r->group_res[r->split.ngroups + g]);
    }
}

/* Returns 1 when the sweep must stop after this size. */
static int measure_size(struct sweep *r, const struct sweep_combo *k, uint64_t size, int cycle)
{
    struct fb_measurement res[2];
    struct fb_call calls[2][FB_LOCAL_RANKS_MAX];
    for (int in_place = 0; in_place < 2; in_place++) {
        struct fb_err err = {0};
        struct fb_mismatch mm;
        make_calls(r, k, size, in_place, calls[in_place]);
        arm_call(r, &calls[in_place][0]);
        if (in_place == 0)
            pace(r, calls[0]);
        if (measure_placement(r, size, calls[in_place], &res[in_place], &mm, &err) != FB_OK)
            sweep_abort(r, &err);
        sweep_print_mismatch(r, &calls[in_place][0], &mm);
        r->oob_checks += mm.wrong > 0;
        if (res[in_place].wrong > 0)
            r->wrong_total += (uint64_t)res[in_place].wrong;
        r->busbw_sum += res[in_place].busbw_GBps;
        r->busbw_n++;
    }
    note_bandwidth(r, &calls[0][0], res);
    sweep_sample_memory(r);
    r->sizes_done++;
    if (r->world.rank == 0) {
        fb_table_row(stdout, &r->cfg, &calls[0][0], &res[0], &res[1]);
        pthread_mutex_lock(&r->rec_lock);
        fb_record_add_row(&r->rec, &calls[0][0], cycle, r->timing.iters * r->timing.agg, &res[0], &res[1]);
        record_group_rows(r, k, size, cycle);
        sweep_save(r, 0);
        pthread_mutex_unlock(&r->rec_lock);
    }
    fb_measurement_free(&res[0]);
    fb_measurement_free(&res[1]);
    return fallback_stop(r, &calls[0][0], res);
}

/* One (type, operator, root): every size, -N times or, with -N 0, until a
 * signal ends the run, as nccl-tests repeats inside each (TimeTest). */
static int sweep_combo(struct sweep *r, const struct sweep_combo *k)
{
    int stop = 0;
    int endless = r->cfg.run_cycles == COLL_CYCLES_ENDLESS;
    r->cycles_done = 0;
    for (long cycle = 0; !stop && (endless || cycle < r->cfg.run_cycles); cycle++) {
        for (int i = 0; i < r->plan.count && !stop; i++)
            stop = measure_size(r, k, r->plan.sizes[i], (int)cycle);
        pthread_mutex_lock(&r->rec_lock); /* the signal path reads it */
        r->cycles_done += !stop;
        pthread_mutex_unlock(&r->rec_lock);
    }
    return stop;
}

int sweep_sizes_planned(const struct sweep *r)
{
    if (r->cfg.run_cycles == COLL_CYCLES_ENDLESS)
        return -1;
    return r->plan.count * (int)r->cfg.run_cycles * (r->ncombos > 0 ? r->ncombos : 1);
}

/* What this backend runs of every type (or operator) on this rank: bit i
 * for type (operator) i, checked with the run's operator (type). */
static unsigned local_support(const struct sweep *r, int types)
{
    unsigned mask = 0;
    for (int i = 0; i < (types ? FB_NDTYPES : FB_NREDOPS); i++) {
        struct fb_err ignored = {0};
        enum fb_dtype t = types ? (enum fb_dtype)i : r->cfg.dtype;
        enum fb_redop op = types ? r->cfg.op : (enum fb_redop)i;
        if (r->be.ops->supports(r->cfg.coll, t, op, &ignored) == FB_OK)
            mask |= 1u << i;
    }
    return mask;
}

/* "-d all on the mpi backend leaves out half, bfloat16 (...)" when the
 * agreed support lacks some of the list. */
static void note_left_out(struct sweep *r, int types, unsigned mask)
{
    char *note = r->combo_note[types ? 0 : 1];
    size_t len = sizeof r->combo_note[0], used = 0;
    int n = types ? FB_NDTYPES : FB_NREDOPS;
    for (int i = 0; i < n && used < len; i++)
        if (!(mask & (1u << i)))
            used += (size_t)snprintf(note + used, len - used, "%s%s", used ? ", " : "",
                                     types ? fb_dtype_info((enum fb_dtype)i)->name : fb_redop_name((enum fb_redop)i));
    if (used == 0 || used >= len)
        return;
    char names[200];
    if (used >= sizeof names)
        return;
    memcpy(names, note, used + 1);
    snprintf(note, len, "%s all on the %s backend leaves out %s: %s", types ? "-d" : "-o", r->be.ops->name, names,
             types ? "types it cannot carry here" : "reductions it does not have");
}

static int add_combo(struct sweep *r, enum fb_dtype t, enum fb_redop op, int root)
{
    struct sweep_combo *grown = realloc(r->combos, (size_t)(r->ncombos + 1) * sizeof *grown);
    if (grown == NULL)
        return -1;
    r->combos = grown;
    r->combos[r->ncombos++] = (struct sweep_combo){t, op, root};
    return 0;
}

/* nccl-tests' loop (the collectives' RunTest functions): types outermost,
 * then operators (collectives that reduce), then roots (rooted ones). */
static enum fb_status list_combos(struct sweep *r, unsigned tmask, unsigned omask, struct fb_err *err)
{
    const struct coll_config *c = &r->cfg;
    int nroots = c->coll->rooted && c->root_all ? fb_total_ranks(&r->be, &r->group) : 1;
    int ops_all = c->op_all && c->coll->reduces;
    for (int t = 0; t < FB_NDTYPES; t++) {
        if (c->dtype_all ? !(tmask & (1u << t)) : t != (int)c->dtype)
            continue;
        for (int op = 0; op < FB_NREDOPS; op++) {
            if (ops_all ? !(omask & (1u << op)) : op != (int)c->op)
                continue;
            struct fb_err ignored = {0};
            if (r->be.ops->supports(c->coll, (enum fb_dtype)t, (enum fb_redop)op, &ignored) != FB_OK)
                continue; /* this pair only: a type and an operator that do not go together */
            for (int k = 0; k < nroots; k++)
                if (add_combo(r, (enum fb_dtype)t, (enum fb_redop)op, nroots > 1 ? k : (int)c->root) != 0)
                    return fb_fail(err, FB_ERR_INTERNAL, "out of memory listing the runs");
        }
    }
    return FB_OK;
}

enum fb_status sweep_plan_combos(struct sweep *r, struct fb_err *err)
{
    unsigned mask[2] = {local_support(r, 1), local_support(r, 0)};
    fb_coord_allreduce(&r->world, mask, 2, FB_CDT_UNSIGNED, FB_COP_BAND);
    if (err->code != FB_OK)
        return err->code;
    const struct coll_config *c = &r->cfg;
    int op_matters = c->coll->reduces && !c->op_all;
    if ((!c->dtype_all && !(mask[0] & (1u << c->dtype))) || (op_matters && !(mask[1] & (1u << c->op)))) {
        if (r->be.ops->supports(c->coll, c->dtype, c->op, err) != FB_OK)
            return err->code;
        return fb_fail(err, FB_ERR_USAGE, "-d %s -o %s cannot run on every rank's %s backend; choose another type or op",
                       c->dtype_name, c->op_name, r->be.ops->name);
    }
    if (c->dtype_all)
        note_left_out(r, 1, mask[0]);
    if (c->op_all && c->coll->reduces)
        note_left_out(r, 0, mask[1]);
    enum fb_status st = list_combos(r, mask[0], mask[1], err);
    if (st == FB_OK && r->ncombos == 0)
        st = fb_fail(err, FB_ERR_USAGE, "no type and op of -d %s -o %s run on the %s backend", c->dtype_name,
                     c->op_name, r->be.ops->name);
    return st;
}

/* Said before the table: what "all" left out, and how -I times. */
static void print_loop_notes(struct sweep *r)
{
    for (int i = 0; i < 2; i++)
        if (r->combo_note[i][0])
            printf("# Note: %s\n", r->combo_note[i]);
    if (!r->cfg.per_iter)
        return;
    int events = r->be.ops->mark != NULL && r->cfg.blocking != 3;
    printf("# Per-Iteration Report: %s; i_* uses the slowest rank per iteration",
           events ? "CUDA event timing" : "each iteration timed from its first call to its completion");
    if (r->cfg.per_iter_skip)
        printf("; summary skips first %ld iterations", r->cfg.per_iter_skip);
    printf("\n");
}

static void warn_if_over_budget(struct sweep *r)
{
    double took = fb_now() - r->sweep_start;
    if (r->world.rank != 0 || r->cfg.time_budget <= 0 || took <= r->cfg.time_budget * 1.1)
        return;
    char text[256];
    snprintf(text, sizeof text,
             "time budget %.0f s exceeded (%.0f s): at %d timed iterations the largest sizes alone take longer; "
             "lower -e or raise --time-budget",
             r->cfg.time_budget, took, FB_BUDGET_MIN_ITERS);
    sweep_warn(r, text);
}

int sweep_execute(struct sweep *r)
{
    if (r->world.rank == 0)
        sweep_print_preamble(r);
    struct fb_err err = {0};
    sweep_arm(r, SETUP_BOUND_S, "device census");
    if (sweep_describe_devices(r, &err) != FB_OK)
        sweep_abort(r, &err);
    if (r->world.rank == 0) {
        print_loop_notes(r);
        if (r->cfg.per_iter)
            fb_table_header_per_iter(stdout, &r->cfg);
        else
            fb_table_header(stdout, &r->cfg);
    }
    r->sweep_start = fb_now();
    int stop = 0;
    for (int k = 0; k < r->ncombos && !stop; k++)
        stop = sweep_combo(r, &r->combos[k]);
    warn_if_over_budget(r);
    sweep_arm(r, SETUP_BOUND_S, "NCCL log collection");
    sweep_record_memory(r);
    sweep_count_checks(r);
    sweep_finish_log_capture(r);
    fb_watchdog_disarm(r->wd);
    int below_min_bw = sweep_print_footer(r);
    if (r->world.rank == 0) {
        sweep_print_summary(r);
        sweep_print_groups(r);
        sweep_print_stability(r);
        pthread_mutex_lock(&r->rec_lock);
        sweep_save(r, 1);
        pthread_mutex_unlock(&r->rec_lock);
        if (r->save_err.code == FB_OK)
            printf("# Results: %s\n", r->rec.path);
    }
    if (r->save_err.code != FB_OK) {
        if (r->world.rank == 0)
            fprintf(stderr, "fabric-coll: results file not updated: %s\n", r->save_err.msg);
        return r->save_err.code;
    }
    if (r->wrong_total > 0) {
        if (r->world.rank == 0)
            fprintf(stderr,
                    "fabric-coll: %llu wrong elements: this %s path computes wrong results; see the rank "
                    "lines above (with Open MPI, try --mca op ^avx)\n",
                    (unsigned long long)r->wrong_total, r->be.ops->name);
        return FB_ERR_WRONG;
    }
    if (below_min_bw)
        return FB_ERR_WRONG;
    return 0;
}

/* -N 0 runs until a signal: that signal is its normal end, so the
 * document is complete (no fault), with a warning that says how it ended.
 * The exit code stays the signal's (130, 143). */
static int endless_run_ends(const struct sweep *r, enum fb_status code)
{
    return r->cfg.run_cycles == COLL_CYCLES_ENDLESS && (code == FB_EXIT_SIGINT || code == FB_EXIT_SIGTERM);
}

static void record_fault_now(struct sweep *r, enum fb_status code, const char *message)
{
    struct timespec limit;
    clock_gettime(CLOCK_REALTIME, &limit);
    limit.tv_sec += 3;
    if (pthread_mutex_timedlock(&r->rec_lock, &limit) != 0)
        return; /* the main thread is stuck holding it: the file is as last saved */
    int endless = endless_run_ends(r, code);
    if (endless) {
        char text[FB_ERR_MSG_MAX + 96];
        snprintf(text, sizeof text, "-N 0 ended: %s after %ld full cycle%s", message, r->cycles_done,
                 r->cycles_done == 1 ? "" : "s");
        fb_record_warn(&r->rec, text);
    } else {
        fb_record_fault(&r->rec, code, message, r->world.rank, r->world.host);
    }
    struct fb_err err = {0};
    if (fb_record_save(&r->rec, endless, &err) == FB_OK)
        fprintf(stderr, "fabric-coll: results so far: %s (%zu sizes, marked %s)\n", r->rec.path,
                json_object_array_length(r->rec.rows), endless ? "complete" : "incomplete");
    sweep_save_ntjson(r);
    pthread_mutex_unlock(&r->rec_lock);
}

/* From the watchdog thread, before the process ends: the results file
 * keeps what was measured and says why it stops there; then the backend's
 * calls that may never complete are stopped (ncclCommAbort). */
void sweep_record_fault(void *ctx, enum fb_status code, const char *message)
{
    struct sweep *r = ctx;
    if (r->world.rank == 0 && r->rec.doc != NULL)
        record_fault_now(r, code, message);
    if (r->be.ops != NULL && r->be.ops->cancel != NULL && r->be.state != NULL)
        r->be.ops->cancel(&r->be);
}