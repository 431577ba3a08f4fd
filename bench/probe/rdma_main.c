/* fabric-rdma: raw link probes across every pair of an MPI job, over RDMA
 * verbs (ib_write_bw / ib_write_lat style, optionally GPUDirect) or TCP.
 *
 * Every rank runs the same schedule in lockstep. After each set-up and each
 * size, all ranks report to rank 0, which records the rows, rewrites the
 * results file and broadcasts the verdict; a failure anywhere therefore ends
 * the job everywhere with one message. Every wait is bounded: a rank that
 * stops answering is named, and the job ends with exit 8. */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/envelope.h"
#include "core/clock.h"
#include "core/jsonio.h"
#include "core/version.h"
#include "core/world.h"
#include "probe/comm.h"
#include "probe/mem.h"
#include "probe/opts.h"
#include "probe/results.h"
#include "probe/rounds.h"

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig) { stop_signal = sig; }

/* What every rank sends rank 0 after a step: its status, and the
 * measurements it owns. Same binary on every rank (checked by the option
 * hash and the wire records), so the struct travels as bytes. */
struct report {
    int32_t code, rank;
    char msg[FB_ERR_MSG_MAX];
    int32_t n;
    struct probe_measure m[PROBE_ENDS_MAX];
};

/* Rank 0's decision after a step. `abort_job` is set when some rank timed
 * out: a rank may be unresponsive, so MPI_Finalize could hang. */
struct verdict {
    int32_t code, rank, abort_job;
    char msg[FB_ERR_MSG_MAX];
};

struct app {
    struct probe_opts o;
    struct fb_world w;
    struct probe_ctx c;
    struct probe_schedule sched;
    struct probe_endpoint me, *all_eps;
    struct probe_rank_env env;
    struct probe_mem mem;
    struct probe_round round;
    struct probe_results res;
    int have_results;
    int *node_of, *local_of;
};

/* ---- agreement before measuring -------------------------------------- */

/* Rank 0 prints the agreed error; every rank returns the agreed code. */
static enum fb_status agreed(struct app *a, struct fb_err *err)
{
    enum fb_status st = fb_world_agree(&a->w, err);
    if (st != FB_OK && a->w.rank == 0)
        fprintf(stderr, "fabric-rdma: %s\n", err->msg);
    return st;
}

static enum fb_status build_schedule(struct app *a, struct fb_err *err)
{
    a->node_of = calloc((size_t)a->w.size, sizeof *a->node_of);
    a->local_of = calloc((size_t)a->w.size, sizeof *a->local_of);
    if (a->node_of == NULL || a->local_of == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    /* Node numbering and local ranks exactly as world.c assigns them: by
     * first appearance of the host name, in rank order. */
    for (int r = 0, nodes = 0; r < a->w.size; r++) {
        int q = 0;
        while (strcmp(a->w.hosts[q], a->w.hosts[r]) != 0)
            q++;
        a->node_of[r] = q == r ? nodes++ : a->node_of[q];
        for (int p = 0; p < r; p++)
            a->local_of[r] += a->node_of[p] == a->node_of[r];
    }
    struct probe_layout lay = {a->w.size, a->w.nodes, a->node_of, a->local_of};
    return probe_schedule_build(a->o.pattern, a->o.bidirectional, &lay, &a->sched, err);
}

static void init_endpoint(struct app *a)
{
    struct probe_endpoint *e = &a->me;
    memset(e, 0, sizeof *e);
    e->rank = a->w.rank;
    e->local_rank = a->w.local_rank;
    snprintf(e->host, sizeof e->host, "%s", a->w.host);
    e->port = e->lid = e->gid_index = e->mtu = e->active_mtu = -1;
    e->numa_node = e->mem_numa_node = e->gpu = -1;
}

/* GPU first: a node without CUDA says so before the HCA is looked at. */
static enum fb_status open_devices(struct app *a, struct fb_err *err)
{
    const struct probe_opts *o = &a->o;
    struct probe_rank_env *env = &a->env;
    struct probe_endpoint *e = &a->me;
    init_endpoint(a);
    env->o = o;
    env->c = &a->c;
    env->slot_len = probe_slot_len(o);
    env->nslots = probe_pattern_max_ends(o->pattern, o->bidirectional);
    size_t bytes = (size_t)(env->slot_len * (uint64_t)env->nslots);
    const struct probe_mem_backend *mb = probe_mem_backend_for(o->use_cuda);
    struct probe_mem_request rq = {bytes, -1, (int)o->cuda_device, a->w.local_rank};
    if (mb->before_device && probe_mem_alloc(mb, &a->mem, &rq, err) != FB_OK)
        return err->code;
    if (o->tp->open(env, e, err) != FB_OK)
        return err->code;
    rq.numa_node = e->numa_node;
    if (!mb->before_device && probe_mem_alloc(mb, &a->mem, &rq, err) != FB_OK)
        return err->code;
    if (o->tp->register_memory != NULL && o->tp->register_memory(env, &a->mem, err) != FB_OK)
        return err->code;
    env->buf = a->mem.addr;
    env->host_memory = mb->cpu_visible;
    snprintf(e->mem_kind, sizeof e->mem_kind, "%s", mb->kind);
    snprintf(e->mem_reg, sizeof e->mem_reg, "%s", a->mem.reg_path);
    e->mem_numa_node = a->mem.numa_node;
    e->gpu = a->mem.gpu;
    snprintf(e->gpu_bus_id, sizeof e->gpu_bus_id, "%s", a->mem.gpu_bus_id);
    snprintf(e->gpu_name, sizeof e->gpu_name, "%s", a->mem.gpu_name);
    snprintf(env->me, sizeof env->me, "rank %d (%s %s)", a->w.rank, a->w.host, e->device);
    return FB_OK;
}

static enum fb_status results_path(struct app *a, char *path, size_t len, char *cluster,
                                   size_t clen, struct fb_err *err)
{
    fb_cluster_label(a->o.cluster, a->w.hosts[0], cluster, clen);
    char what[64];
    snprintf(what, sizeof what, "probe-%s", a->o.tp->name);
    struct fb_results_name n = {a->o.json_path, a->o.results_dir, cluster, what};
    return fb_results_path(&n, path, len, err);
}

/* ---- lockstep steps ------------------------------------------------------ */

static int timed_out(int code) { return code == FB_ERR_TIMEOUT; }

/* Picks the report that explains the failure best: a named error beats a
 * timeout (the timeout is usually its consequence), then the lowest rank. */
static void decide(const struct report *all, int n, struct verdict *v)
{
    memset(v, 0, sizeof *v);
    v->rank = -1;
    for (int k = 0; k < n; k++) {
        const struct report *r = &all[k];
        if (r->code == FB_OK)
            continue;
        v->abort_job |= timed_out(r->code);
        int better = v->code == FB_OK || (timed_out(v->code) && !timed_out(r->code));
        if (better) {
            v->code = r->code;
            v->rank = r->rank;
            snprintf(v->msg, sizeof v->msg, "%s", r->msg);
        }
    }
}

static int by_link(const void *x, const void *y)
{
    const struct probe_row *a = x, *b = y;
    return a->m.link - b->m.link;
}

/* Rank 0: rows of this step into the record, in link order, and the file
 * rewritten. */
static enum fb_status record_rows(struct app *a, const struct report *all, int round,
                                  struct fb_err *err)
{
    int n = 0;
    for (int k = 0; k < a->w.size; k++)
        n += all[k].code == FB_OK ? all[k].n : 0;
    struct probe_row *rows = calloc((size_t)(n > 0 ? n : 1), sizeof *rows);
    if (rows == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory for %d result rows", n);
    n = 0;
    for (int k = 0; k < a->w.size; k++) {
        for (int i = 0; all[k].code == FB_OK && i < all[k].n; i++) {
            const struct probe_measure *m = &all[k].m[i];
            const struct probe_link *l = &a->sched.links[m->link];
            rows[n++] = (struct probe_row){round, l->src, l->dst, *m};
        }
    }
    qsort(rows, (size_t)n, sizeof *rows, by_link);
    enum fb_status st = FB_OK;
    for (int i = 0; i < n && st == FB_OK; i++) {
        st = probe_results_add(&a->res, &rows[i], err);
        if (st == FB_OK)
            probe_print_row(stdout, &a->res, &rows[i]);
    }
    free(rows);
    return st == FB_OK ? probe_results_save(&a->res, 0, err) : st;
}

static int report_failed(const void *rec) { return ((const struct report *)rec)->code != FB_OK; }

static int never_failed(const void *rec)
{
    (void)rec;
    return 0;
}

/* Rank 0: stands in for ranks that never reported, so the verdict can
 * weigh their silence against the errors others named. */
static void fill_silent(struct app *a, struct report *all, const unsigned char *arrived,
                        double limit_s)
{
    for (int r = 1; r < a->w.size; r++) {
        if (arrived[r])
            continue;
        all[r] = (struct report){.code = FB_ERR_TIMEOUT, .rank = r};
        snprintf(all[r].msg, sizeof all[r].msg,
                 "rank %d (%s) did not report within %.0f s; check that host (process alive? "
                 "network up?) or raise --timeout", r, a->w.hosts[r], limit_s);
    }
}

/* Rank 0: every failure besides the one the verdict names goes into the
 * record's warnings; the second error often explains the first. */
static void note_other_failures(struct app *a, const struct report *all, const struct verdict *v)
{
    for (int r = 0; a->have_results && r < a->w.size; r++) {
        if (all[r].code == FB_OK || r == v->rank)
            continue;
        char line[FB_ERR_MSG_MAX + FB_HOST_MAX + 32];
        snprintf(line, sizeof line, "rank %d (%s): %s", r, a->w.hosts[r], all[r].msg);
        probe_results_warn(&a->res, line);
    }
}

/* Everyone reports, rank 0 records and decides, everyone learns the
 * verdict. `limit_s` bounds the wait for the slowest rank. Returns 1 when
 * the verdict is shared by all ranks, 0 when it cannot be (this rank could
 * not reach rank 0, or rank 0 did not hear from everyone). */
static int step(struct app *a, struct report *mine, int round, double limit_s, struct verdict *v)
{
    struct fb_err err = {0};
    struct probe_gather_spec g = {sizeof *mine, limit_s, a->o.timeout, report_failed,
                                  "reporting to rank 0"};
    mine->rank = a->w.rank;
    memset(v, 0, sizeof *v);
    v->rank = -1;
    int shared = 1;
    if (a->w.rank != 0) {
        shared = probe_gather(&a->c, &g, mine, NULL, NULL, &err) == FB_OK;
    } else {
        struct report *all = calloc((size_t)a->w.size, sizeof *all);
        unsigned char *arrived = calloc((size_t)a->w.size, 1);
        if (all == NULL || arrived == NULL) {
            fprintf(stderr, "fabric-rdma: out of memory\n");
            MPI_Abort(a->w.comm, FB_ERR_INTERNAL);
        }
        shared = probe_gather(&a->c, &g, mine, all, arrived, &err) == FB_OK;
        fill_silent(a, all, arrived, limit_s);
        decide(all, a->w.size, v);
        note_other_failures(a, all, v);
        fb_err_clear(&err);
        if (round >= 0 && record_rows(a, all, round, &err) != FB_OK && v->code == FB_OK) {
            *v = (struct verdict){err.code, 0, 0, ""};
            snprintf(v->msg, sizeof v->msg, "%s", err.msg);
        }
        free(all);
        free(arrived);
        if (!shared)
            return 0;
    }
    if (shared && probe_bcast(&a->c, v, sizeof *v, 2 * limit_s, "waiting for rank 0's verdict",
                              &err) != FB_OK)
        shared = 0;
    if (!shared) {
        *v = (struct verdict){err.code, a->w.rank, 1, ""};
        snprintf(v->msg, sizeof v->msg, "%s", err.msg);
    }
    return shared;
}

/* Ends the job after a failed step: rank 0 keeps what was measured and
 * says why. A verdict not every rank could learn, or one involving a
 * silent rank, ends with MPI_Abort (MPI_Finalize could wait forever);
 * otherwise every rank leaves cleanly with the code. */
static int end_with(struct app *a, const struct verdict *v, int shared)
{
    char kept[PATH_MAX + 32] = "";
    if (a->w.rank == 0 && a->have_results) {
        struct fb_err ignored = {0};
        probe_results_fault(&a->res, (enum fb_status)v->code, v->msg, v->rank);
        if (probe_results_save(&a->res, 0, &ignored) == FB_OK)
            snprintf(kept, sizeof kept, " (measured so far: %s)", a->res.path);
    }
    if (a->w.rank == 0 && v->rank > 0)
        fprintf(stderr, "fabric-rdma: rank %d (%s): %s%s\n", v->rank, a->w.hosts[v->rank], v->msg,
                kept);
    else if (a->w.rank == 0)
        fprintf(stderr, "fabric-rdma: %s%s\n", v->msg, kept);
    else if (!shared && v->code != FB_EXIT_SIGINT && v->code != FB_EXIT_SIGTERM)
        /* A signal on another rank is the launcher tearing the job down:
         * rank 0 speaks for it. */
        fprintf(stderr, "fabric-rdma: rank %d (%s): %s\n", a->w.rank, a->w.host, v->msg);
    if (!shared || (v->abort_job && a->w.rank == 0)) {
        fflush(NULL);
        MPI_Abort(a->w.comm, v->code);
    }
    return v->code;
}

/* ---- the run ------------------------------------------------------------- */

static enum fb_status gather_endpoints(struct app *a, struct fb_err *err)
{
    struct probe_gather_spec g = {sizeof a->me, 4 * a->o.timeout, 4 * a->o.timeout, never_failed,
                                  "collecting device descriptions"};
    unsigned char *arrived = NULL;
    if (a->w.rank == 0) {
        a->all_eps = calloc((size_t)a->w.size, sizeof *a->all_eps);
        arrived = calloc((size_t)a->w.size, 1);
        if (a->all_eps == NULL || arrived == NULL) {
            free(arrived);
            return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
        }
    }
    enum fb_status st = probe_gather(&a->c, &g, &a->me, a->all_eps, arrived, err);
    free(arrived);
    return st;
}

static double size_limit(const struct app *a, uint64_t size)
{
    struct probe_size_spec r;
    probe_size_spec_for(&a->o, size, NULL, &r);
    int lanes = (int)a->o.tp->lanes(&a->o);
    return a->o.timeout + probe_size_spec_bound_s(&r, lanes * PROBE_ENDS_MAX);
}

static int run_rounds(struct app *a)
{
    struct verdict v;
    struct report *rep = calloc(1, sizeof *rep);
    if (rep == NULL)
        return FB_ERR_INTERNAL;
    int rc = FB_OK;
    for (int round = 0; round < a->sched.nrounds && rc == FB_OK; round++) {
        struct fb_err err = {0};
        memset(rep, 0, sizeof *rep);
        probe_round_setup(&a->env, &a->sched, round, &a->round, &err);
        rep->code = err.code;
        snprintf(rep->msg, sizeof rep->msg, "%s", err.msg);
        int shared = step(a, rep, -1, 4 * a->o.timeout, &v);
        if (v.code != FB_OK) {
            rc = end_with(a, &v, shared);
            break;
        }
        for (int s = 0; s < a->o.nsizes; s++) {
            fb_err_clear(&err);
            memset(rep, 0, sizeof *rep);
            int n = 0;
            probe_round_measure(&a->env, &a->round, a->o.sizes[s], rep->m, &n, &err);
            rep->n = n;
            rep->code = err.code;
            snprintf(rep->msg, sizeof rep->msg, "%s", err.msg);
            shared = step(a, rep, round, size_limit(a, a->o.sizes[s]), &v);
            if (v.code != FB_OK) {
                rc = end_with(a, &v, shared);
                break;
            }
        }
        probe_round_teardown(&a->round);
    }
    free(rep);
    return rc;
}

static int prepare(struct app *a, int argc, char **argv)
{
    struct fb_err err = {0};
    probe_opts_parse(&a->o, argc, argv, &err);
    if (err.code == FB_OK && (a->o.help || a->o.version)) {
        if (a->w.rank == 0 && a->o.help)
            probe_opts_help("fabric-rdma");
        if (a->w.rank == 0 && a->o.version)
            printf("fabric-rdma %s\n", FB_VERSION);
        return -1;
    }
    if (err.code == FB_OK)
        fb_world_check_launcher(&a->w, &err);
    if (agreed(a, &err) != FB_OK)
        return err.code;
    fb_world_check_same(&a->w, probe_opts_hash(&a->o), "arguments", &err);
    if (agreed(a, &err) != FB_OK)
        return err.code;
    a->c = (struct probe_ctx){&a->w, MPI_COMM_NULL, a->o.timeout, &stop_signal};
    MPI_Comm_dup(a->w.comm, &a->c.comm);
    MPI_Comm_set_errhandler(a->c.comm, MPI_ERRORS_RETURN);
    open_devices(a, &err);
    if (agreed(a, &err) != FB_OK)
        return err.code;
    build_schedule(a, &err);
    if (agreed(a, &err) != FB_OK)
        return err.code;
    char path[PATH_MAX], cluster[128];
    if (results_path(a, path, sizeof path, cluster, sizeof cluster, &err) == FB_OK && a->w.rank == 0)
        fb_probe_writable(path, &err);
    if (agreed(a, &err) != FB_OK)
        return err.code;
    if (gather_endpoints(a, &err) != FB_OK) {
        struct verdict v = {err.code, a->w.rank, 1, ""};
        snprintf(v.msg, sizeof v.msg, "%s", err.msg);
        return end_with(a, &v, 0);
    }
    if (a->w.rank == 0) {
        probe_results_init(&a->res, &a->o, &a->w, &a->sched, a->all_eps, path, cluster);
        a->have_results = 1;
        if (a->o.use_cuda && strcmp(a->me.mem_reg, "peermem") == 0)
            probe_results_warn(&a->res, "GPU memory registered through nvidia-peermem: dma-buf was refused");
        probe_print_header(stdout, &a->res);
        if (probe_results_save(&a->res, 0, &err) != FB_OK) {
            fprintf(stderr, "fabric-rdma: %s\n", err.msg);
            MPI_Abort(a->w.comm, err.code);
        }
    }
    return FB_OK;
}

static void release(struct app *a)
{
    probe_round_teardown(&a->round);
    if (a->env.o != NULL) /* the devices were opened */
        a->env.o->tp->close(&a->env);
    probe_mem_free(&a->mem);
    if (a->have_results)
        probe_results_free(&a->res);
    probe_schedule_free(&a->sched);
    free(a->all_eps);
    free(a->node_of);
    free(a->local_of);
    if (a->c.comm != MPI_COMM_NULL)
        MPI_Comm_free(&a->c.comm);
    fb_world_free(&a->w);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    static struct app a;
    a.c.comm = MPI_COMM_NULL;
    struct fb_err err = {0};
    if (fb_world_init(&a.w, MPI_COMM_WORLD, &err) != FB_OK) {
        fprintf(stderr, "fabric-rdma: %s\n", err.msg);
        MPI_Abort(MPI_COMM_WORLD, err.code);
    }
    int rc = prepare(&a, argc, argv);
    if (rc == FB_OK) {
        rc = run_rounds(&a);
        if (rc == FB_OK && a.w.rank == 0) {
            probe_print_summary(stdout, &a.res);
            if (probe_results_save(&a.res, 1, &err) != FB_OK) {
                fprintf(stderr, "fabric-rdma: %s\n", err.msg);
                rc = err.code;
            } else {
                printf("# results: %s\n", a.res.path);
            }
        }
    }
    if (rc < 0)
        rc = FB_OK;
    release(&a);
    MPI_Finalize();
    return rc;
}
