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
#include "core/coord.h"
#include "coll/table.h"
#include "core/gather.h"
#include "core/jsonio.h"
#include "core/units.h"
#include "core/version.h"

/* Local rank `local` of this process: its global rank and its place on
 * the host, counted over every rank there (nccl-tests' numbering). */
static json_object *device_json(struct sweep *r, int local)
{
    int per = r->be.local_ranks;
    json_object *d = json_object_new_object();
    json_object_object_add(d, "rank", json_object_new_int(r->world.rank * per + local));
    json_object_object_add(d, "host", json_object_new_string(r->world.host));
    json_object_object_add(d, "local_rank", json_object_new_int(r->world.local_rank * per + local));
    json_object_object_add(d, "group", json_object_new_int(r->split.colors ? r->split.colors[r->world.rank] : 0));
    r->be.ops->describe(&r->be, local, d);
    json_object_object_add(d, "pid", json_object_new_int((int)getpid()));
    return d;
}

/* nccl-tests prints the bus as domain:bus:device ([0000:1b:00], util.cu
 * writeDeviceReport); the record keeps the full id with its function. */
static void format_bus(const char *id, char *buf, size_t len)
{
    unsigned domain = 0, bus = 0, dev = 0;
    if (id == NULL)
        snprintf(buf, len, "host");
    else if (sscanf(id, "%x:%x:%x", &domain, &bus, &dev) == 3)
        snprintf(buf, len, "%04x:%02x:%02x", domain, bus, dev);
    else
        snprintf(buf, len, "%.12s", id);
}

/* One line per rank in nccl-tests' layout; Group is the rank's color. */
static void print_rank_lines(json_object *devices)
{
    printf("# Using devices\n");
    for (int i = 0; i < (int)json_object_array_length(devices); i++) {
        json_object *d = json_object_array_get_idx(devices, (size_t)i);
        const char *host = fb_json_get_string(d, "host"), *name = fb_json_get_string(d, "name");
        int64_t dev = -1, pid = 0, group = 0;
        fb_json_get_int64(d, "cuda_device", &dev);
        fb_json_get_int64(d, "pid", &pid);
        fb_json_get_int64(d, "group", &group);
        char devstr[24] = " -", bus[32];
        if (dev >= 0)
            snprintf(devstr, sizeof devstr, "%2lld", (long long)dev);
        format_bus(fb_json_get_string(d, "pci_bus_id"), bus, sizeof bus);
        printf("#  Rank %2d Group %2lld Pid %6lld on %10s device %s [%s] %s\n", i, (long long)group,
               (long long)pid, host ? host : "?", devstr, bus, name ? name : "?");
    }
}

/* Per-rank device records into the results file and the table preamble. */
enum fb_status sweep_describe_devices(struct sweep *r, struct fb_err *err)
{
    /* One array per process, its ranks in order: in rank order once joined. */
    json_object *mine = json_object_new_array();
    for (int i = 0; i < r->be.local_ranks; i++)
        json_object_array_add(mine, device_json(r, i));
    char **all = NULL;
    enum fb_status st = fb_gather_strings(&r->world, json_object_to_json_string(mine), &all, err);
    json_object_put(mine);
    if (st != FB_OK || r->world.rank != 0)
        return st;
    json_object *devices = json_object_new_array();
    for (int p = 0; p < r->world.size; p++) {
        json_object *part = json_tokener_parse(all[p]);
        for (size_t i = 0; i < json_object_array_length(part); i++)
            json_object_array_add(devices, json_object_get(json_object_array_get_idx(part, i)));
        json_object_put(part);
    }
    json_object_object_add(r->rec.doc, "devices", devices);
    print_rank_lines(devices);
    fb_gather_free(&r->world, all);
    return FB_OK;
}

/* Memory in use where the buffers live, at its highest: sampled after the
 * allocation and after every size (NCCL allocates its own as it connects). */
void sweep_sample_memory(struct sweep *r)
{
    for (int i = 0; i < r->be.local_ranks; i++) {
        struct fb_err err = {0};
        uint64_t bytes = 0;
        if (r->be.ops->peak_memory(&r->be, i, &bytes, &err) == FB_OK && bytes > r->peak_memory[i])
            r->peak_memory[i] = bytes;
    }
}

uint64_t sweep_peak_memory(const struct sweep *r)
{
    uint64_t most = 0;
    for (int i = 0; i < r->be.local_ranks; i++)
        most = r->peak_memory[i] > most ? r->peak_memory[i] : most;
    return most;
}

/* -M's three figures, each the most of any rank as nccl-tests reports
 * them: in use before the buffers, the buffers, and what the collectives
 * added (NCCL's own buffers, connected lazily). */
static void gather_memory_parts(struct sweep *r)
{
    /* The buffers are in use after allocation: a rank with nothing there
     * could not sample (the 4th figure, "unknown", then wins the max). */
    uint64_t mine[4] = {r->mem_before_alloc, 0, 0, r->mem_after_alloc == 0}, all[4] = {0};
    if (r->mem_after_alloc >= r->mem_before_alloc)
        mine[1] = r->mem_after_alloc - r->mem_before_alloc;
    uint64_t peak = sweep_peak_memory(r);
    if (peak >= r->mem_after_alloc)
        mine[2] = peak - r->mem_after_alloc;
    fb_coord_reduce(&r->world, mine, all, 4, FB_CDT_U64, FB_COP_MAX, 0);
    memcpy(r->mem_parts, all, sizeof r->mem_parts);
    r->mem_known = all[3] == 0;
}

/* Every rank's peak into its device record, for the memory a sweep to -e
 * really takes (0 when it could not be sampled: recorded as null). */
void sweep_record_memory(struct sweep *r)
{
    sweep_sample_memory(r);
    gather_memory_parts(r);
    int per = r->be.local_ranks, n = fb_total_ranks(&r->be, &r->world);
    uint64_t *all = r->world.rank == 0 ? calloc((size_t)n, sizeof *all) : NULL;
    fb_coord_gather(&r->world, r->peak_memory, all, (size_t)per * sizeof *all, 0);
    json_object *devices = NULL;
    if (all == NULL || r->rec.doc == NULL || !json_object_object_get_ex(r->rec.doc, "devices", &devices)) {
        free(all);
        return;
    }
    pthread_mutex_lock(&r->rec_lock);
    for (int i = 0; i < n && i < (int)json_object_array_length(devices); i++)
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
    fb_record_runtime_source(&r->rec, &c->runtime_source);
    json_object *args = json_object_new_array();
    for (int i = 0; i < c->argc; i++)
        json_object_array_add(args, json_object_new_string(c->argv[i]));
    json_object_object_add(d, "args", args);
    /* What the table's time columns show: -C 1 prints the host's time. */
    json_object_object_add(d, "time_column", json_object_new_string(c->cputime ? "cpu_time" : "time"));
    /* Where -c's checks run: what they cost depends on it. */
    json_object_object_add(d, "validation",
                           c->check > 0 ? json_object_new_string(fb_check_place_name(fb_check_place_of(&r->be))) : NULL);
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
    json_object_object_add(topo, "ranks", json_object_new_int(fb_total_ranks(&r->be, &r->world)));
    json_object_object_add(topo, "nodes", json_object_new_int(r->world.nodes));
    json_object_object_add(topo, "ranks_per_node", json_object_new_int(per_node_max * r->be.local_ranks));
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
    json_object_object_add(d, "split", coll_split_json(&r->split, &r->world, r->phase, r->phases, r->launch));
    json_object_object_add(d, "footer", NULL);
}

/* Rank groups: what the table shows, and each group's own figures. */
static void print_split_preamble(struct sweep *r)
{
    if (!r->split.active)
        return;
    char groups[512];
    coll_split_describe(&r->split, groups, sizeof groups);
    if (r->split_spec.note[0] && r->phase == 0)
        printf("# Note: %s\n", r->split_spec.note);
    printf("# Split %s=%s", r->split.spec.source, r->split.spec.text);
    if (r->phases > 1)
        printf(", phase %d of %d: %s", r->phase + 1, r->phases, coll_split_kind_name(r->split.spec.kind));
    printf(": %s, measured side by side; the table's time is reduced over all ranks (-a), its busBW uses "
           "group %d's %d ranks; each group's figures are in the results' split.groups\n", groups,
           r->split.group_color[r->split.rank0_group], r->split.group_size[r->split.rank0_group]);
}

void sweep_print_groups(struct sweep *r)
{
    json_object *split = NULL, *groups = NULL;
    if (!r->split.active || !json_object_object_get_ex(r->rec.doc, "split", &split) ||
        !json_object_object_get_ex(split, "groups", &groups))
        return;
    for (int g = 0; g < r->split.ngroups; g++) {
        json_object *rows = NULL, *e = json_object_array_get_idx(groups, (size_t)g);
        json_object_object_get_ex(e, "rows", &rows);
        json_object *s = fb_summary_of_rows(rows, r->rec.sizes_planned);
        double peak = 0, at_largest = 0;
        int64_t largest = 0;
        fb_json_get_double(s, "peak_busbw_GBps", &peak);
        fb_json_get_double(s, "busbw_at_largest_GBps", &at_largest);
        fb_json_get_int64(s, "largest_bytes", &largest);
        char size[32];
        fb_format_size((uint64_t)largest, size, sizeof size);
        printf("# Group %2d: %d rank%s on %d node%s, busBW peak %.2f GB/s, %.2f GB/s at %s\n",
               r->split.group_color[g], r->split.group_size[g], r->split.group_size[g] == 1 ? "" : "s",
               r->split.group_nodes[g], r->split.group_nodes[g] == 1 ? "" : "s", peak, at_largest, size);
        json_object_put(s);
    }
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
            mm->rank, r->world.host, r->cfg.coll->name, size, fb_dtype_info(c->dtype)->name,
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

/* nccl-tests' alltoallv reads a spread and a traffic matrix from its
 * environment; fabric-coll always sends its default shares, and says so
 * rather than measure another pattern than the one asked for. */
static void warn_alltoallv_env(struct sweep *r)
{
    static const char *const vars[] = {"NCCL_TESTS_ALLTOALLV_SPREAD", "NCCL_TESTS_ALLTOALLV_MATRIX_FILE",
                                       "NCCL_TESTS_ALLTOALLV_MATRIX_SCALE"};
    for (size_t i = 0; r->cfg.coll->id == FB_ALLTOALLV && i < sizeof vars / sizeof vars[0]; i++) {
        if (getenv(vars[i]) == NULL)
            continue;
        char text[192];
        snprintf(text, sizeof text, "%s is not read: alltoallv sends nccl-tests' default shares "
                 "(distance-weighted, spread 1)", vars[i]);
        sweep_warn(r, text);
    }
}

void sweep_print_preamble(struct sweep *r)
{
    int ranks = fb_total_ranks(&r->be, &r->world);
    printf("# fabric-coll %s: %s on %d rank%s, %d node%s, backend %s (%s)%s%s; %s; results %s\n",
           FB_VERSION, r->cfg.coll->name, ranks, ranks == 1 ? "" : "s",
           r->world.nodes, r->world.nodes == 1 ? "" : "s", r->be.ops->name,
           strcmp(r->be.ops->name, "nccl") == 0 ? "GPU memory" : "host memory",
           r->cfg.backend_why[0] ? ", chosen: " : "", r->cfg.backend_why,
           r->cfg.check > 0 ? fb_check_place_text(fb_check_place_of(&r->be)) : "no checks (-c 0)", r->rec.path);
    fb_table_preamble(stdout, &r->cfg, r->plan.sizes[0], r->plan.sizes[r->plan.count - 1]);
    coll_config_notes(&r->cfg, stdout);
    for (const char *l = r->flag_notes; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != '\0'))
        printf("# Note: %.*s\n", (int)strcspn(l, "\n"), l);
    print_split_preamble(r);
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
    warn_alltoallv_env(r);
    if (r->cfg.time_budget > 0)
        printf("# Time budget %.0f s: timed iterations per size from a calibration (the quickest of up to 3 calls; at least %d)\n",
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

/* nccl-tests writes its JSON only to a .json name (silently otherwise);
 * here a note says so. */
void sweep_start_ntjson(struct sweep *r)
{
    const char *path = r->cfg.ntjson_path;
    if (path == NULL)
        return;
    if (!r->cfg.ntjson_any_name && !fb_ntjson_name_is_json(path)) {
        printf("# Note: -J %s: nccl-tests writes its JSON only to a name ending in .json; nothing written\n", path);
        return;
    }
    char line[PATH_MAX + 64];
    fb_ntjson_open(&r->nt, path, r->rec.doc, line, sizeof line);
    printf("%s\n", line);
}

void sweep_save_ntjson(struct sweep *r)
{
    struct fb_err err = {0};
    if (r->nt_failed || fb_ntjson_save(&r->nt, r->rec.doc, &err) == FB_OK)
        return;
    r->nt_failed = 1;
    fprintf(stderr, "fabric-coll: nccl-tests JSON not updated: %s\n", err.msg);
}

void sweep_count_checks(struct sweep *r)
{
    int64_t all = 0;
    fb_coord_reduce(&r->world, &r->oob_checks, &all, 1, FB_CDT_I64, FB_COP_SUM, 0);
    if (r->world.rank == 0)
        r->oob_checks = all;
}

/* NCCL_TESTS_MIN_BW as nccl-tests reads it (atof: a word that is no number
 * is 0, so it checks against 0). */
static bool min_bw_from_env(double *gbps)
{
    const char *v = getenv("NCCL_TESTS_MIN_BW");
    if (v == NULL)
        return false;
    *gbps = atof(v);
    return true;
}

static void print_memory_line(struct sweep *r)
{
    int gpu = strcmp(r->be.ops->name, "nccl") == 0;
    /* Host memory has no communicator set-up of its own to tell apart:
     * the first figure is the whole process before its buffers. */
    struct fb_table_memory m = {
        .title = gpu ? "GPU memory usage" : "Host memory usage",
        .names = {gpu ? "Initialization" : "Process", "User-Allocated", "Collective"},
    };
    for (int i = 0; i < FB_TABLE_MEM_PARTS; i++) {
        m.bytes[i] = r->mem_parts[i];
        m.known[i] = r->mem_known;
    }
    fb_table_memory(stdout, &m);
}

static json_object *footer_json(const struct sweep *r, const struct fb_table_totals *t)
{
    json_object *f = json_object_new_object(), *mem = json_object_new_object();
    json_object_object_add(f, "out_of_bounds", json_object_new_int64(t->out_of_bounds));
    json_object_object_add(f, "avg_busbw_GBps", fb_json_number(t->avg_busbw));
    json_object_object_add(f, "min_bw_GBps", t->min_bw_set ? fb_json_number(t->min_bw) : NULL);
    json_object_object_add(f, "min_bw_ok", t->min_bw_set ? json_object_new_boolean(fb_table_min_bw_ok(t)) : NULL);
    static const char *const keys[] = {"setup_bytes", "buffers_bytes", "collective_bytes"};
    for (int i = 0; i < 3; i++)
        json_object_object_add(mem, keys[i], r->mem_known ? json_object_new_uint64(r->mem_parts[i]) : NULL);
    json_object_object_add(f, "memory", mem);
    return f;
}

int sweep_print_footer(struct sweep *r)
{
    struct fb_table_totals t = {
        .out_of_bounds = r->oob_checks,
        .avg_busbw = r->busbw_n ? r->busbw_sum / (double)r->busbw_n : 0,
        .perf_name = r->cfg.coll->perf_name,
    };
    t.min_bw_set = min_bw_from_env(&t.min_bw);
    int below = !fb_table_min_bw_ok(&t);
    if (r->world.rank != 0)
        return below;
    fb_table_footer(stdout, &t);
    if (r->cfg.memory_report)
        print_memory_line(r);
    fb_table_close(stdout);
    pthread_mutex_lock(&r->rec_lock);
    json_object_object_add(r->rec.doc, "footer", footer_json(r, &t));
    pthread_mutex_unlock(&r->rec_lock);
    if (below)
        fprintf(stderr,
                "fabric-coll: average bus bandwidth %g GB/s is below 90%% of NCCL_TESTS_MIN_BW=%g; "
                "the results are written (unset NCCL_TESTS_MIN_BW or lower it to pass)\n",
                t.avg_busbw, t.min_bw);
    return below;
}
