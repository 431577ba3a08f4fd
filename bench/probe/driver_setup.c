/* Everything before the first round, each step agreed by all ranks so that
 * a failure anywhere ends the job everywhere with one message: options,
 * this rank's device and memory, the schedule, the results file, the
 * endpoint table on rank 0. And the release of all of it. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/envelope.h"
#include "core/jsonio.h"
#include "probe/driver.h"

/* Rank 0 prints the agreed error; every rank returns the agreed code. */
static enum fb_status agreed(struct probe_driver *d, struct fb_err *err)
{
    enum fb_status st = fb_world_agree(&d->w, err);
    if (st != FB_OK && d->w.rank == 0)
        fprintf(stderr, "fabric-rdma: %s\n", err->msg);
    return st;
}

static enum fb_status build_schedule(struct probe_driver *d, struct fb_err *err)
{
    d->node_of = calloc((size_t)d->w.size, sizeof *d->node_of);
    d->local_of = calloc((size_t)d->w.size, sizeof *d->local_of);
    if (d->node_of == NULL || d->local_of == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    /* Node numbering and local ranks exactly as world.c assigns them: by
     * first appearance of the host name, in rank order. */
    for (int r = 0, nodes = 0; r < d->w.size; r++) {
        int q = 0;
        while (strcmp(d->w.hosts[q], d->w.hosts[r]) != 0)
            q++;
        d->node_of[r] = q == r ? nodes++ : d->node_of[q];
        for (int p = 0; p < r; p++)
            d->local_of[r] += d->node_of[p] == d->node_of[r];
    }
    struct probe_layout lay = {d->w.size, d->w.nodes, d->node_of, d->local_of};
    return probe_schedule_build(d->o.pattern, d->o.bidirectional, &lay, &d->sched, err);
}

static void init_endpoint(struct probe_driver *d)
{
    struct probe_endpoint *e = &d->me;
    memset(e, 0, sizeof *e);
    e->rank = d->w.rank;
    e->local_rank = d->w.local_rank;
    snprintf(e->host, sizeof e->host, "%s", d->w.host);
    e->port = e->lid = e->gid_index = e->mtu = e->active_mtu = -1;
    e->numa_node = e->mem_numa_node = e->gpu = -1;
}

static void describe_memory(const struct probe_mem *m, struct probe_endpoint *e)
{
    snprintf(e->mem_kind, sizeof e->mem_kind, "%s", m->backend->kind);
    snprintf(e->mem_reg, sizeof e->mem_reg, "%s", m->reg_path);
    e->mem_numa_node = m->numa_node;
    e->gpu = m->gpu;
    snprintf(e->gpu_bus_id, sizeof e->gpu_bus_id, "%s", m->gpu_bus_id);
    snprintf(e->gpu_name, sizeof e->gpu_name, "%s", m->gpu_name);
}

/* The transport's device and the memory back-end's buffer, in the order
 * the back-end asks for (GPU memory first, host memory on the device's
 * NUMA node), then the buffer registered with the device. */
static enum fb_status open_devices(struct probe_driver *d, struct fb_err *err)
{
    const struct probe_opts *o = &d->o;
    struct probe_rank_env *env = &d->env;
    struct probe_endpoint *e = &d->me;
    init_endpoint(d);
    env->o = o;
    env->c = &d->c;
    env->slot_len = probe_slot_len(o);
    env->nslots = probe_pattern_max_ends(o->pattern, o->bidirectional);
    const struct probe_mem_backend *mb = probe_mem_backend_for(o->use_cuda);
    struct probe_mem_request rq = {(size_t)(env->slot_len * (uint64_t)env->nslots), -1,
                                   (int)o->cuda_device, d->w.local_rank};
    if (mb->before_device && probe_mem_alloc(mb, &d->mem, &rq, err) != FB_OK)
        return err->code;
    if (o->tp->open(env, e, err) != FB_OK)
        return err->code;
    rq.numa_node = e->numa_node;
    if (!mb->before_device && probe_mem_alloc(mb, &d->mem, &rq, err) != FB_OK)
        return err->code;
    if (o->tp->register_memory != NULL && o->tp->register_memory(env, &d->mem, err) != FB_OK)
        return err->code;
    env->buf = d->mem.addr;
    env->host_memory = mb->cpu_visible;
    describe_memory(&d->mem, e);
    snprintf(env->me, sizeof env->me, "rank %d (%s %s)", d->w.rank, d->w.host, e->device);
    return FB_OK;
}

static enum fb_status results_path(struct probe_driver *d, char *path, size_t len, char *cluster,
                                   size_t clen, struct fb_err *err)
{
    enum fb_status st = fb_cluster_label_checked(d->o.cluster, d->w.hosts[0], cluster, clen, err);
    if (st != FB_OK)
        return st;
    char what[64];
    snprintf(what, sizeof what, "probe-%s", d->o.tp->name);
    struct fb_results_name n = {d->o.json_path, d->o.results_dir, cluster, what};
    return fb_results_path(&n, path, len, err);
}

static int never_failed(const void *rec)
{
    (void)rec;
    return 0;
}

static enum fb_status gather_endpoints(struct probe_driver *d, struct fb_err *err)
{
    struct probe_gather_spec g = {sizeof d->me, 4 * d->o.timeout, 4 * d->o.timeout, never_failed,
                                  "collecting device descriptions"};
    unsigned char *arrived = NULL;
    if (d->w.rank == 0) {
        d->all_eps = calloc((size_t)d->w.size, sizeof *d->all_eps);
        arrived = calloc((size_t)d->w.size, 1);
        if (d->all_eps == NULL || arrived == NULL) {
            free(arrived);
            return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
        }
    }
    enum fb_status st = probe_gather(&d->c, &g, &d->me, d->all_eps, arrived, err);
    free(arrived);
    return st;
}

/* Rank 0: the record, its header on stdout and its first version on disk. */
static void start_results(struct probe_driver *d, const char *path, const char *cluster)
{
    struct fb_err err = {0};
    probe_results_init(&d->res, &d->o, &d->w, &d->sched, d->all_eps, path, cluster);
    d->have_results = 1;
    if (d->o.use_cuda && strcmp(d->me.mem_reg, "peermem") == 0)
        probe_results_warn(&d->res, "GPU memory registered through nvidia-peermem: dma-buf was refused");
    probe_print_header(stdout, &d->res);
    if (probe_results_start(&d->res, d->o.json_path == NULL, &err) != FB_OK) {
        fprintf(stderr, "fabric-rdma: %s\n", err.msg);
        MPI_Abort(d->w.comm, err.code);
    }
}

/* The options, the launcher and the same arguments everywhere. */
static int check_invocation(struct probe_driver *d, int argc, char **argv)
{
    struct fb_err err = {0};
    probe_opts_parse(&d->o, argc, argv, &err);
    if (err.code == FB_OK && (d->o.help || d->o.version))
        return -1;
    if (err.code == FB_OK)
        fb_world_check_launcher(&d->w, &err);
    if (agreed(d, &err) != FB_OK)
        return err.code;
    fb_world_check_same(&d->w, probe_opts_hash(&d->o), "arguments", &err);
    return agreed(d, &err) != FB_OK ? err.code : FB_OK;
}

int probe_driver_prepare(struct probe_driver *d, int argc, char **argv,
                         const volatile sig_atomic_t *stop)
{
    int rc = check_invocation(d, argc, argv);
    if (rc != FB_OK)
        return rc;
    struct fb_err err = {0};
    d->alive = (struct probe_alive){.period = d->o.timeout / 4};
    d->c = (struct probe_ctx){&d->w, MPI_COMM_NULL, d->o.timeout, stop, &d->alive};
    MPI_Comm_dup(d->w.comm, &d->c.comm);
    MPI_Comm_set_errhandler(d->c.comm, MPI_ERRORS_RETURN);
    /* The label and the results path first: a mistake there costs no
     * device set-up, and nothing is measured that cannot be kept. */
    char path[PATH_MAX], cluster[128];
    if (results_path(d, path, sizeof path, cluster, sizeof cluster, &err) == FB_OK && d->w.rank == 0)
        fb_probe_writable(path, &err);
    if (agreed(d, &err) != FB_OK)
        return err.code;
    open_devices(d, &err);
    if (agreed(d, &err) != FB_OK)
        return err.code;
    build_schedule(d, &err);
    if (agreed(d, &err) != FB_OK)
        return err.code;
    if (gather_endpoints(d, &err) != FB_OK) {
        struct probe_verdict v = probe_verdict_of(&err, d->w.rank, 1);
        return probe_driver_end(d, &v, 0);
    }
    if (d->w.rank == 0)
        start_results(d, path, cluster);
    return FB_OK;
}

void probe_driver_release(struct probe_driver *d)
{
    probe_round_teardown(&d->round);
    if (d->env.o != NULL) /* open_devices ran */
        d->env.o->tp->close(&d->env);
    probe_mem_free(&d->mem);
    if (d->have_results)
        probe_results_free(&d->res);
    probe_schedule_free(&d->sched);
    free(d->all_eps);
    free(d->node_of);
    free(d->local_of);
    if (d->c.comm != MPI_COMM_NULL)
        MPI_Comm_free(&d->c.comm);
}
