/* What a run prints and records about itself: preamble, device lines,
 * the run's description in the results file, warnings, mismatches, the
 * transport NCCL used and the closing summary. */
#include <limits.h>
#include <stdbool.h>
#include <unistd.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/sweep.h"
#include "coll/table.h"
#include "core/gather.h"
#include "core/jsonio.h"
#include "core/units.h"
#include "core/version.h"

static json_object *device_json(struct sweep *r)
{
    json_object *d = json_object_new_object();
    json_object_object_add(d, "rank", json_object_new_int(r->world.rank));
    json_object_object_add(d, "host", json_object_new_string(r->world.host));
    json_object_object_add(d, "local_rank", json_object_new_int(r->world.local_rank));
    r->be.ops->describe(&r->be, d);
    return d;
}

static void print_rank_lines(char **devices, int n)
{
    printf("# Using devices\n");
    for (int i = 0; i < n; i++) {
        json_object *d = json_tokener_parse(devices[i]);
        const char *host = fb_json_get_string(d, "host"), *name = fb_json_get_string(d, "name");
        const char *bus = fb_json_get_string(d, "pci_bus_id");
        int64_t dev = -1, pid = 0;
        fb_json_get_int64(d, "cuda_device", &dev);
        fb_json_get_int64(d, "pid", &pid);
        char devstr[24] = " -";
        if (dev >= 0)
            snprintf(devstr, sizeof devstr, "%2lld", (long long)dev);
        printf("#  Rank %2d Group  0 Pid %6lld on %10s device %s [%.12s] %s\n", i, (long long)pid,
               host ? host : "?", devstr, bus ? bus : "host", name ? name : "?");
        json_object_put(d);
    }
}

/* Per-rank device records into the results file and the table preamble. */
enum fb_status sweep_describe_devices(struct sweep *r, struct fb_err *err)
{
    json_object *mine = device_json(r);
    json_object_object_add(mine, "pid", json_object_new_int((int)getpid()));
    char **all = NULL;
    enum fb_status st = fb_gather_strings(&r->world, json_object_to_json_string(mine), &all, err);
    json_object_put(mine);
    if (st != FB_OK || r->world.rank != 0)
        return st;
    json_object *devices = json_object_new_array();
    for (int i = 0; i < r->world.size; i++)
        json_object_array_add(devices, json_tokener_parse(all[i]));
    json_object_object_add(r->rec.doc, "devices", devices);
    print_rank_lines(all, r->world.size);
    fb_gather_free(&r->world, all);
    return FB_OK;
}

/* Memory in use where the buffers live, at its highest: sampled after the
 * allocation and after every size (NCCL allocates its own as it connects). */
void sweep_sample_memory(struct sweep *r)
{
    struct fb_err err = {0};
    uint64_t bytes = 0;
    if (r->be.ops->peak_memory(&r->be, &bytes, &err) == FB_OK && bytes > r->peak_memory)
        r->peak_memory = bytes;
}

/* Every rank's peak into its device record, for the memory a sweep to -e
 * really takes (0 when it could not be sampled: recorded as null). */
void sweep_record_memory(struct sweep *r)
{
    sweep_sample_memory(r);
    uint64_t *all = r->world.rank == 0 ? calloc((size_t)r->world.size, sizeof *all) : NULL;
    MPI_Gather(&r->peak_memory, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, 0, r->world.comm);
    json_object *devices = NULL;
    if (all == NULL || r->rec.doc == NULL || !json_object_object_get_ex(r->rec.doc, "devices", &devices)) {
        free(all);
        return;
    }
    pthread_mutex_lock(&r->rec_lock);
    for (int i = 0; i < r->world.size && i < (int)json_object_array_length(devices); i++)
        json_object_object_add(json_object_array_get_idx(devices, (size_t)i), "peak_memory_bytes",
                               all[i] ? json_object_new_uint64(all[i]) : NULL);
    pthread_mutex_unlock(&r->rec_lock);
    free(all);
}

void sweep_describe(struct sweep *r)
{
    json_object *d = r->rec.doc;
    const struct coll_config *c = &r->cfg;
    json_object_object_add(d, "collective", json_object_new_string(c->coll->name));
    json_object_object_add(d, "backend", json_object_new_string(r->be.ops->name));
    /* -d all, -o all, -r all: each row says its own (type, redop, root). */
    json_object_object_add(d, "dtype", json_object_new_string(c->dtype_all ? FB_ALL_NAME : fb_dtype_info(c->dtype)->name));
    json_object_object_add(d, "op", json_object_new_string(!c->coll->reduces ? "none" : c->op_all ? FB_ALL_NAME : fb_redop_name(c->op)));
    json_object_object_add(d, "root", json_object_new_int(c->coll->rooted && !c->root_all ? (int)c->root : -1));
    json_object_object_add(d, "time_reduction",
                           json_object_new_string(fb_time_reduction_name((enum fb_time_reduction)c->average)));
    json_object_object_add(d, "config", fb_opts_to_json(coll_options, c));
    json_object *hosts = json_object_new_array();
    int per_node_max = 0;
    for (int i = 0; i < r->world.size; i++) {
        int first = 1, on_host = 0;
        for (int j = 0; j < r->world.size; j++) {
            int same = strcmp(r->world.hosts[j], r->world.hosts[i]) == 0;
            on_host += same;
            if (same && j < i)
                first = 0;
        }
        if (first)
            json_object_array_add(hosts, json_object_new_string(r->world.hosts[i]));
        per_node_max = on_host > per_node_max ? on_host : per_node_max;
    }
    json_object_object_add(d, "hosts", hosts);
    json_object *topo = json_object_new_object();
    json_object_object_add(topo, "ranks", json_object_new_int(r->world.size));
    json_object_object_add(topo, "nodes", json_object_new_int(r->world.nodes));
    json_object_object_add(topo, "ranks_per_node", json_object_new_int(per_node_max));
    json_object_object_add(d, "topology", topo);
    json_object *versions = json_object_new_object();
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, ",\n")] = '\0';
    json_object_object_add(versions, "mpi", json_object_new_string(lib));
    json_object_object_add(versions, "nccl", NULL);
    json_object_object_add(versions, "cuda_runtime", NULL);
    json_object_object_add(versions, "cuda_driver", NULL);
    r->be.ops->versions(&r->be, versions);
    json_object_object_add(d, "versions", versions);
    json_object_object_add(d, "transport", NULL);
    json_object_object_add(d, "time_budget_s", c->time_budget > 0 ? fb_json_number(c->time_budget) : NULL);
    json_object_object_add(d, "early_stop", NULL);
    json_object_object_add(d, "stability", NULL);
}

/* Warnings go to the table (as # lines) and into the results file. */
void sweep_warn(struct sweep *r, const char *text)
{
    printf("# Warning: %s\n", text);
    fb_record_warn(&r->rec, text);
}

/* After the sweep (NCCL connects lazily, so the log is complete only now):
 * the transport into the results, a copy of the logs beside them. */
void sweep_finish_log_capture(struct sweep *r)
{
    if (!r->nccl_log.active && r->log_note[0] == '\0')
        return;
    char saved[PATH_MAX];
    snprintf(saved, sizeof saved, "%s", r->rec.path);
    char *dot = strrchr(saved, '.');
    if (dot != NULL && strcmp(dot, ".json") == 0)
        *dot = '\0';
    strncat(saved, ".nccl.log", sizeof saved - strlen(saved) - 1);
    json_object *transport = NULL;
    struct fb_err err = {0};
    /* Beside a device or FIFO there is no place of ours for the copy (only
     * rank 0 keeps it, so only its record counts). */
    bool keep = !r->rec.stream;
    if (!keep)
        snprintf(saved, sizeof saved, "not kept: the results go to a stream");
    if (r->nccl_log.active &&
        fb_nccl_capture_finish(&r->nccl_log, &r->world, keep ? saved : NULL, &transport, &err) != FB_OK &&
        r->world.rank == 0) {
        char text[FB_ERR_MSG_MAX + 32];
        snprintf(text, sizeof text, "transport not recorded: %s", err.msg);
        sweep_warn(r, text);
    }
    if (r->world.rank != 0)
        return;
    if (r->log_note[0])
        sweep_warn(r, r->log_note);
    if (transport != NULL) {
        char text[256];
        fb_transport_describe(transport, text, sizeof text);
        printf("# Transport: %s (NCCL INFO logs: %s)\n", text, saved);
        json_object_object_add(r->rec.doc, "transport", transport);
    }
}

/* A few lines per rank say where; more would bury the table. */
#define MISMATCH_LINES_PER_RANK 2

void sweep_print_mismatch(struct sweep *r, const struct fb_call *c, const struct fb_mismatch *mm)
{
    if (mm->wrong == 0 || r->mismatch_lines > MISMATCH_LINES_PER_RANK)
        return;
    if (r->mismatch_lines++ == MISMATCH_LINES_PER_RANK) {
        fprintf(stderr, "fabric-coll: rank %d on %s: more wrong results; not shown\n", r->world.rank,
                r->world.host);
        return;
    }
    char size[32];
    fb_format_size(c->counts.bytes, size, sizeof size);
    fprintf(stderr,
            "fabric-coll: rank %d on %s: %s %s %s %s: %llu wrong element%s, first at [%zu]: got %g, want %g\n",
            r->world.rank, r->world.host, r->cfg.coll->name, size, fb_dtype_info(c->dtype)->name,
            c->in_place ? "in-place" : "out-of-place", (unsigned long long)mm->wrong,
            mm->wrong == 1 ? "" : "s", mm->first_index, mm->got, mm->want);
}

void sweep_print_summary(struct sweep *r)
{
    json_object *s = fb_summary_of_rows(r->rec.rows, r->rec.sizes_planned);
    double peak = 0, at_largest = 0, avg1m = -1;
    int64_t peak_bytes = 0, largest = 0;
    fb_json_get_double(s, "peak_busbw_GBps", &peak);
    fb_json_get_int64(s, "peak_busbw_bytes", &peak_bytes);
    fb_json_get_double(s, "busbw_at_largest_GBps", &at_largest);
    fb_json_get_int64(s, "largest_bytes", &largest);
    fb_json_get_double(s, "avg_busbw_ge_1MiB_GBps", &avg1m);
    char a[32], b[32];
    fb_format_size((uint64_t)peak_bytes, a, sizeof a);
    fb_format_size((uint64_t)largest, b, sizeof b);
    printf("# busBW peak %.2f GB/s at %s, %.2f GB/s at the largest size %s", peak, a, at_largest, b);
    if (avg1m >= 0)
        printf(", average over sizes >= 1M %.2f GB/s", avg1m);
    printf("\n");
    json_object_put(s);
}

void sweep_print_preamble(struct sweep *r)
{
    printf("# fabric-coll %s: %s on %d rank%s, %d node%s, backend %s (%s); results %s\n",
           FB_VERSION, r->cfg.coll->name, r->world.size, r->world.size == 1 ? "" : "s",
           r->world.nodes, r->world.nodes == 1 ? "" : "s", r->be.ops->name,
           strcmp(r->be.ops->name, "nccl") == 0 ? "GPU memory" : "host memory", r->rec.path);
    fb_table_preamble(stdout, &r->cfg, r->plan.sizes[0], r->plan.sizes[r->plan.count - 1]);
    coll_config_notes(&r->cfg, stdout);
    if (r->plan.merged > 0)
        printf("# Note: %d size%s round%s to the bytes of the size before (whole elements, 16-byte blocks); "
               "each is measured once\n",
               r->plan.merged, r->plan.merged == 1 ? "" : "s", r->plan.merged == 1 ? "s" : "");
    if (r->cap_note[0])
        sweep_warn(r, r->cap_note);
    if (r->wd_note[0])
        sweep_warn(r, r->wd_note);
    if (r->fallback_note[0])
        sweep_warn(r, r->fallback_note);
    if (r->cfg.time_budget > 0)
        printf("# Time budget %.0f s: timed iterations per size from a one-call calibration (at least %d)\n",
               r->cfg.time_budget, FB_BUDGET_MIN_ITERS);
    if (r->plan.linear_warning) {
        char text[160];
        snprintf(text, sizeof text, "no -f given: %d sizes stepping linearly by %llu bytes (add -f 2 for a doubling sweep)",
                 r->plan.count, (unsigned long long)r->cfg.stepbytes);
        sweep_warn(r, text);
    }
}

void sweep_record_early_stop(struct sweep *r, const struct fb_call *c, double busbw, const char *reason)
{
    int planned = sweep_sizes_planned(r), skipped = planned > r->sizes_done ? planned - r->sizes_done : 0;
    printf("# Early stop: %s; %d larger size%s not measured (--full measures them anyway)\n", reason,
           skipped, skipped == 1 ? "" : "s");
    json_object *e = json_object_new_object();
    json_object_object_add(e, "at_bytes", json_object_new_uint64(c->counts.bytes));
    json_object_object_add(e, "busbw_GBps", fb_json_number(busbw));
    json_object_object_add(e, "band_GBps", fb_json_number(r->fallback.band_GBps));
    json_object_object_add(e, "reason", json_object_new_string(reason));
    json_object_object_add(e, "sizes_skipped", json_object_new_int(skipped));
    pthread_mutex_lock(&r->rec_lock);
    json_object_object_add(r->rec.doc, "early_stop", e);
    pthread_mutex_unlock(&r->rec_lock);
}

void sweep_print_stability(struct sweep *r)
{
    /* Only repeats (-N) measure a size more than once. */
    if (r->cfg.run_cycles < 2)
        return;
    json_object *st = fb_stability_of_rows(r->rec.rows, r->cfg.cv_threshold);
    if (st == NULL)
        return;
    json_object *sizes = NULL;
    json_object_object_get_ex(st, "sizes", &sizes);
    char line[1024] = "";
    size_t used = 0;
    int unstable = 0;
    for (size_t i = 0; i < json_object_array_length(sizes); i++) {
        json_object *e = json_object_array_get_idx(sizes, i);
        bool flag = false;
        int64_t bytes = 0;
        double cv = 0;
        fb_json_get_bool(e, "unstable", &flag);
        fb_json_get_int64(e, "bytes", &bytes);
        fb_json_get_double(e, "time_cv_pct", &cv);
        if (!flag)
            continue;
        char size[32];
        fb_format_size((uint64_t)bytes, size, sizeof size);
        if (used < sizeof line)
            used += (size_t)snprintf(line + used, sizeof line - used, "%s%s (%.1f%%)", unstable ? ", " : "", size, cv);
        unstable++;
    }
    int64_t runs = 0;
    json_object *runs_obj = NULL;
    if (json_object_object_get_ex(st, "runs", &runs_obj))
        runs = json_object_get_int64(runs_obj);
    if (unstable)
        printf("# Unstable sizes (time varies > %.0f%% across %lld runs): %s\n", r->cfg.cv_threshold,
               (long long)runs, line);
    else
        printf("# Stable: every size's time varies <= %.0f%% across %lld runs\n", r->cfg.cv_threshold,
               (long long)runs);
    pthread_mutex_lock(&r->rec_lock);
    json_object_object_add(r->rec.doc, "stability", st);
    pthread_mutex_unlock(&r->rec_lock);
}
