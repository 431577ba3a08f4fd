#include "probe/results.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/envelope.h"
#include "core/host.h"
#include "core/jsonio.h"
#include "core/units.h"
#include "core/version.h"

void probe_results_init(struct probe_results *r, const struct probe_opts *o,
                        const struct fb_world *w, const struct probe_schedule *s,
                        const struct probe_endpoint *ep, const char *path, const char *cluster)
{
    memset(r, 0, sizeof *r);
    r->o = o;
    r->nranks = w->size;
    r->nnodes = w->nodes;
    r->hosts = (const char (*)[FB_HOST_MAX])w->hosts;
    r->sched = s;
    r->ep = ep;
    snprintf(r->path, sizeof r->path, "%s", path);
    snprintf(r->cluster, sizeof r->cluster, "%s", cluster);
    fb_utc_iso(r->start_time, sizeof r->start_time);
    int len = 0;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, ",\n")] = '\0';
    snprintf(r->mpi_version, sizeof r->mpi_version, "%s", lib);
    r->warnings = json_object_new_array();
    r->fault_rank = -1;
}

enum fb_status probe_results_add(struct probe_results *r, const struct probe_row *row,
                                 struct fb_err *err)
{
    if (r->nrows == r->cap) {
        int cap = r->cap ? r->cap * 2 : 64;
        struct probe_row *grown = realloc(r->rows, (size_t)cap * sizeof *grown);
        if (grown == NULL)
            return fb_fail(err, FB_ERR_INTERNAL, "out of memory for %d result rows", cap);
        r->rows = grown;
        r->cap = cap;
    }
    r->rows[r->nrows++] = *row;
    return FB_OK;
}

void probe_results_warn(struct probe_results *r, const char *text)
{
    json_object_array_add(r->warnings, json_object_new_string(text));
}

void probe_results_fault(struct probe_results *r, enum fb_status code, const char *msg, int rank)
{
    r->fault_code = (int)code;
    r->fault_rank = rank;
    snprintf(r->fault_msg, sizeof r->fault_msg, "%s", msg);
}

void probe_results_free(struct probe_results *r)
{
    free(r->rows);
    json_object_put(r->warnings);
    memset(r, 0, sizeof *r);
}

void probe_endpoint_label(const struct probe_results *r, int rank, char *buf, size_t len)
{
    snprintf(buf, len, "%s:%s[%d]", r->hosts[rank], r->ep[rank].device, rank);
}

static double line_rate_of(const struct probe_results *r, const struct probe_row *row)
{
    double a = r->ep[row->src].line_rate_gbps, b = r->ep[row->dst].line_rate_gbps;
    if (a <= 0 || b <= 0)
        return 0;
    return a < b ? a : b;
}

static double avg_gbps(const struct probe_measure *m) { return probe_gbps(m->bytes, m->seconds); }

/* ---- analysis ------------------------------------------------------------- */

int probe_analyze(const struct probe_results *r, struct probe_analysis *a)
{
    memset(a, 0, sizeof *a);
    a->median_gbps = NAN;
    if (r->o->latency || r->nrows == 0)
        return 0;
    for (int i = 0; i < r->nrows; i++)
        if (r->rows[i].m.size > a->size)
            a->size = r->rows[i].m.size;
    a->scores = calloc((size_t)r->nrows, sizeof *a->scores);
    a->row = calloc((size_t)r->nrows, sizeof *a->row);
    a->flags = calloc((size_t)r->nrows, sizeof *a->flags);
    a->suspects = calloc((size_t)r->nranks, sizeof *a->suspects);
    if (!a->scores || !a->row || !a->flags || !a->suspects) {
        probe_analysis_free(a);
        return -1;
    }
    double *avg = calloc((size_t)r->nrows, sizeof *avg);
    for (int i = 0; i < r->nrows; i++) {
        const struct probe_row *row = &r->rows[i];
        if (row->m.size != a->size)
            continue;
        a->scores[a->n] = (struct probe_link_score){row->src, row->dst, avg_gbps(&row->m),
                                                    line_rate_of(r, row)};
        if (avg != NULL)
            avg[a->n] = a->scores[a->n].avg_gbps;
        a->row[a->n++] = i;
    }
    if (avg != NULL)
        a->median_gbps = probe_median(avg, a->n);
    free(avg);
    a->nsuspects = probe_suspects(a->scores, a->n, r->o->threshold, r->nranks, a->suspects);
    a->nflags = probe_flag_links(a->scores, a->n, r->o->threshold, a->suspects, a->nsuspects,
                                 a->flags);
    return 0;
}

void probe_analysis_free(struct probe_analysis *a)
{
    free(a->scores);
    free(a->row);
    free(a->flags);
    free(a->suspects);
    memset(a, 0, sizeof *a);
}

static int is_flagged(const struct probe_analysis *a, int row)
{
    for (int f = 0; f < a->nflags; f++)
        if (a->row[a->flags[f].index] == row)
            return 1;
    return 0;
}

/* Distinct hosts in order of first rank; returns the count. */
static int distinct_hosts(const struct probe_results *r, int *first_rank)
{
    int n = 0;
    for (int k = 0; k < r->nranks; k++) {
        int seen = 0;
        for (int j = 0; j < n && !seen; j++)
            seen = strcmp(r->hosts[first_rank[j]], r->hosts[k]) == 0;
        if (!seen)
            first_rank[n++] = k;
    }
    return n;
}

static int host_index(const struct probe_results *r, const int *first_rank, int nh, int rank)
{
    for (int j = 0; j < nh; j++)
        if (strcmp(r->hosts[first_rank[j]], r->hosts[rank]) == 0)
            return j;
    return -1;
}

/* Slowest link from host i to host j at the analysed size; NAN if none. */
static double *host_matrix(const struct probe_results *r, const struct probe_analysis *a,
                           const int *first_rank, int nh)
{
    double *m = malloc((size_t)nh * (size_t)nh * sizeof *m);
    if (m == NULL)
        return NULL;
    for (int i = 0; i < nh * nh; i++)
        m[i] = NAN;
    for (int i = 0; i < a->n; i++) {
        int s = host_index(r, first_rank, nh, a->scores[i].src);
        int d = host_index(r, first_rank, nh, a->scores[i].dst);
        double v = a->scores[i].avg_gbps;
        if (s >= 0 && d >= 0 && isfinite(v) && (isnan(m[s * nh + d]) || v < m[s * nh + d]))
            m[s * nh + d] = v;
    }
    return m;
}

/* ---- JSON --------------------------------------------------------------- */

static json_object *str_or_null(const char *s)
{
    return s && *s ? json_object_new_string(s) : NULL;
}

static json_object *int_or_null(int v) { return v >= 0 ? json_object_new_int(v) : NULL; }

/* What libfabric chose for this rank (ofi transport only). */
static json_object *ofi_json(const struct probe_endpoint *e)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "provider", json_object_new_string(e->provider));
    json_object_object_add(o, "provider_version", str_or_null(e->provider_version));
    json_object_object_add(o, "libfabric", str_or_null(e->libfabric));
    json_object_object_add(o, "fabric", str_or_null(e->fabric));
    json_object_object_add(o, "domain", str_or_null(e->device));
    json_object_object_add(o, "ep_type", str_or_null(e->ep_type));
    json_object *modes = json_object_new_array();
    for (const char *p = e->mr_mode; *p != '\0' && strcmp(e->mr_mode, "none") != 0;) {
        size_t n = strcspn(p, "|");
        json_object_array_add(modes, json_object_new_string_len(p, (int)n));
        p += n + (p[n] == '|');
    }
    json_object_object_add(o, "mr_mode", modes);
    json_object_object_add(o, "hmem", str_or_null(e->hmem));
    return o;
}

static json_object *endpoint_json(const struct probe_endpoint *e)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "rank", json_object_new_int(e->rank));
    json_object_object_add(o, "host", json_object_new_string(e->host));
    json_object_object_add(o, "local_rank", json_object_new_int(e->local_rank));
    json_object_object_add(o, "device", str_or_null(e->device));
    json_object_object_add(o, "port", int_or_null(e->port));
    json_object_object_add(o, "firmware", str_or_null(e->firmware));
    json_object_object_add(o, "link_layer", str_or_null(e->link_layer));
    json_object_object_add(o, "port_state", str_or_null(e->port_state));
    json_object_object_add(o, "mtu_bytes", int_or_null(e->mtu));
    json_object_object_add(o, "active_mtu_bytes", int_or_null(e->active_mtu));
    json_object_object_add(o, "rate", str_or_null(e->rate));
    json_object_object_add(o, "line_rate_Gbps",
                           e->line_rate_gbps > 0 ? json_object_new_double(e->line_rate_gbps) : NULL);
    json_object_object_add(o, "lid", int_or_null(e->lid));
    json_object *gid = NULL;
    if (e->gid[0]) {
        gid = json_object_new_object();
        json_object_object_add(gid, "index", json_object_new_int(e->gid_index));
        json_object_object_add(gid, "address", json_object_new_string(e->gid));
        json_object_object_add(gid, "type", json_object_new_string(e->gid_type));
        json_object_object_add(gid, "automatic", json_object_new_boolean(e->gid_auto));
        json_object_object_add(gid, "rule", str_or_null(e->gid_rule));
    }
    json_object_object_add(o, "gid", gid);
    json_object_object_add(o, "address", str_or_null(e->address));
    json_object_object_add(o, "numa_node", int_or_null(e->numa_node));
    json_object_object_add(o, "pci_bus_id", str_or_null(e->pci_bus_id));
    json_object *mem = json_object_new_object();
    json_object_object_add(mem, "kind", json_object_new_string(e->mem_kind));
    json_object_object_add(mem, "registration", str_or_null(e->mem_reg));
    json_object_object_add(mem, "numa_node", int_or_null(e->mem_numa_node));
    json_object_object_add(mem, "gpu", int_or_null(e->gpu));
    json_object_object_add(mem, "gpu_bus_id", str_or_null(e->gpu_bus_id));
    json_object_object_add(mem, "gpu_name", str_or_null(e->gpu_name));
    json_object_object_add(o, "memory", mem);
    json_object_object_add(o, "ofi", e->provider[0] ? ofi_json(e) : NULL);
    return o;
}

static json_object *end_json(const struct probe_results *r, int rank)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "rank", json_object_new_int(rank));
    json_object_object_add(o, "host", json_object_new_string(r->hosts[rank]));
    json_object_object_add(o, "device", str_or_null(r->ep[rank].device));
    return o;
}

static json_object *samples_json(const struct probe_samples *s)
{
    json_object *a = json_object_new_array();
    for (int i = 0; i < s->n; i++) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "t_s", fb_json_number(s->start_s[i]));
        json_object_object_add(o, "dur_s", fb_json_number(s->dur_s[i]));
        json_object_object_add(o, "bytes", fb_json_number(s->bytes[i]));
        json_object_object_add(o, "Gbps", fb_json_number(probe_gbps(s->bytes[i], s->dur_s[i])));
        json_object_array_add(a, o);
    }
    return a;
}

static json_object *latency_json(const struct probe_latency *l)
{
    if (!l->valid)
        return NULL;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "min_us", fb_json_number(l->min_us));
    json_object_object_add(o, "p50_us", fb_json_number(l->p50_us));
    json_object_object_add(o, "avg_us", fb_json_number(l->avg_us));
    json_object_object_add(o, "p99_us", fb_json_number(l->p99_us));
    json_object_object_add(o, "max_us", fb_json_number(l->max_us));
    return o;
}

static json_object *row_json(const struct probe_results *r, const struct probe_row *row,
                             int flagged)
{
    const struct probe_measure *m = &row->m;
    double avg = avg_gbps(m), line = line_rate_of(r, row);
    double peak = r->o->latency ? NAN : probe_samples_peak_gbps(&m->samples, avg);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "round", json_object_new_int(row->round));
    json_object_object_add(o, "link", json_object_new_int(m->link));
    json_object_object_add(o, "size_bytes", json_object_new_uint64(m->size));
    json_object_object_add(o, "src", end_json(r, row->src));
    json_object_object_add(o, "dst", end_json(r, row->dst));
    json_object_object_add(o, "messages", json_object_new_uint64(m->messages));
    json_object_object_add(o, "bytes", fb_json_number(m->bytes));
    json_object_object_add(o, "time_s", fb_json_number(m->seconds));
    json_object_object_add(o, "avg_Gbps", fb_json_number(avg));
    json_object_object_add(o, "avg_GBps", fb_json_number(avg / 8));
    json_object_object_add(o, "peak_Gbps", fb_json_number(peak));
    json_object_object_add(o, "peak_GBps", fb_json_number(peak / 8));
    json_object_object_add(o, "msg_rate_Mpps", fb_json_number(probe_mpps((double)m->messages, m->seconds)));
    json_object_object_add(o, "line_rate_Gbps", line > 0 ? json_object_new_double(line) : NULL);
    json_object_object_add(o, "line_rate_share", line > 0 ? fb_json_number(avg / line) : NULL);
    json_object_object_add(o, "samples", r->o->latency ? json_object_new_array() : samples_json(&m->samples));
    json_object_object_add(o, "latency", latency_json(&m->lat));
    json_object_object_add(o, "flagged", json_object_new_boolean(flagged));
    return o;
}

static json_object *path_json(const struct probe_path *p)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "links", json_object_new_int(p->links));
    json_object_object_add(o, "slow_links", json_object_new_int(p->slow));
    json_object_object_add(o, "ratio", fb_json_number(p->ratio));
    json_object_object_add(o, "slow", json_object_new_boolean(p->suspect));
    return o;
}

/* ["send"], ["receive"] or both: the paths this suspect's slow links share. */
static json_object *slow_paths_json(const struct probe_suspect *su)
{
    json_object *a = json_object_new_array();
    if (su->send.suspect)
        json_object_array_add(a, json_object_new_string("send"));
    if (su->recv.suspect)
        json_object_array_add(a, json_object_new_string("receive"));
    return a;
}

/* The paths no link of the schedule measured: [{rank, host, device,
 * direction}], empty when every endpoint sent and received. */
static json_object *unmeasured_json(const struct probe_results *r)
{
    json_object *a = json_object_new_array();
    int *sends = calloc((size_t)r->nranks * 2, sizeof *sends);
    if (sends == NULL)
        return a;
    int *recvs = sends + r->nranks;
    probe_schedule_paths(r->sched, r->nranks, sends, recvs);
    for (int k = 0; k < r->nranks; k++) {
        for (int dir = 0; dir < 2; dir++) {
            if ((dir == 0 ? sends : recvs)[k] > 0)
                continue;
            json_object *o = end_json(r, k);
            json_object_object_add(o, "direction", json_object_new_string(dir == 0 ? "send" : "receive"));
            json_object_array_add(a, o);
        }
    }
    free(sends);
    return a;
}

static json_object *analysis_json(const struct probe_results *r, const struct probe_analysis *a,
                                  json_object *doc)
{
    json_object *flags = json_object_new_array();
    for (int f = 0; f < a->nflags; f++) {
        const struct probe_flag *fl = &a->flags[f];
        const struct probe_link_score *s = &a->scores[fl->index];
        json_object *o = json_object_new_object();
        json_object_object_add(o, "link", json_object_new_int(r->rows[a->row[fl->index]].m.link));
        json_object_object_add(o, "size_bytes", json_object_new_uint64(a->size));
        json_object_object_add(o, "src", end_json(r, s->src));
        json_object_object_add(o, "dst", end_json(r, s->dst));
        json_object_object_add(o, "avg_Gbps", fb_json_number(s->avg_gbps));
        json_object_object_add(o, "reference_Gbps", fb_json_number(fl->reference_gbps));
        json_object_object_add(o, "reference", json_object_new_string(fl->by_line_rate ? "line-rate" : "median"));
        json_object_object_add(o, "threshold_Gbps", fb_json_number(fl->threshold_gbps));
        json_object_array_add(flags, o);
    }
    json_object_object_add(doc, "flags", flags);
    json_object *sus = json_object_new_array();
    for (int i = 0; i < a->nsuspects; i++) {
        const struct probe_suspect *su = &a->suspects[i];
        json_object *o = end_json(r, su->endpoint);
        json_object_object_add(o, "slow_links", json_object_new_int(su->flagged));
        json_object_object_add(o, "links", json_object_new_int(su->links));
        json_object_object_add(o, "paths", slow_paths_json(su));
        json_object_object_add(o, "send", path_json(&su->send));
        json_object_object_add(o, "receive", path_json(&su->recv));
        json_object_object_add(o, "reference", json_object_new_string(su->by_line_rate ? "line-rate" : "median-of-others"));
        json_object_object_add(o, "reference_Gbps", su->by_line_rate ? NULL : fb_json_number(su->reference_gbps));
        json_object_array_add(sus, o);
    }
    json_object_object_add(doc, "suspects", sus);

    int *first = malloc((size_t)r->nranks * sizeof *first);
    json_object *matrix = NULL;
    if (first != NULL && a->n > 0) {
        int nh = distinct_hosts(r, first);
        double *m = host_matrix(r, a, first, nh);
        matrix = json_object_new_object();
        json_object_object_add(matrix, "size_bytes", json_object_new_uint64(a->size));
        json_object_object_add(matrix, "reduce", json_object_new_string("min"));
        json_object *hosts = json_object_new_array(), *rows = json_object_new_array();
        for (int i = 0; i < nh; i++) {
            json_object_array_add(hosts, json_object_new_string(r->hosts[first[i]]));
            json_object *line = json_object_new_array();
            for (int j = 0; j < nh && m != NULL; j++)
                json_object_array_add(line, fb_json_number(m[i * nh + j]));
            json_object_array_add(rows, line);
        }
        json_object_object_add(matrix, "hosts", hosts);
        json_object_object_add(matrix, "avg_Gbps", rows);
        free(m);
    }
    free(first);
    return matrix;
}

static json_object *summary_json(const struct probe_results *r, const struct probe_analysis *a)
{
    json_object *s = json_object_new_object();
    int planned = r->sched->nlinks * r->o->nsizes;
    json_object_object_add(s, "links_planned", json_object_new_int(r->sched->nlinks));
    json_object_object_add(s, "rounds_planned", json_object_new_int(r->sched->nrounds));
    json_object_object_add(s, "measurements_planned", json_object_new_int(planned));
    json_object_object_add(s, "measurements_done", json_object_new_int(r->nrows));
    json_object_object_add(s, "reference_size_bytes", a->n ? json_object_new_uint64(a->size) : NULL);
    double lo = NAN, hi = NAN;
    for (int i = 0; i < a->n; i++) {
        double v = a->scores[i].avg_gbps;
        lo = isnan(lo) || v < lo ? v : lo;
        hi = isnan(hi) || v > hi ? v : hi;
    }
    json_object_object_add(s, "min_avg_Gbps", fb_json_number(lo));
    json_object_object_add(s, "median_avg_Gbps", fb_json_number(a->median_gbps));
    json_object_object_add(s, "max_avg_Gbps", fb_json_number(hi));
    json_object_object_add(s, "flagged", json_object_new_int(a->nflags));
    json_object_object_add(s, "paths_unmeasured", unmeasured_json(r));
    return s;
}

json_object *probe_results_json(const struct probe_results *r, int complete)
{
    const struct probe_opts *o = r->o;
    struct fb_envelope_info info = {.kind = "probe", .tool = "fabric-rdma", .invoked_as = o->invoked_as,
                                    .cluster = r->cluster, .running = 1};
    json_object *d = fb_envelope_new(&info);
    json_object_object_add(d, "start_time", json_object_new_string(r->start_time));
    if (r->fault_code != 0)
        fb_envelope_fault(d, r->fault_code, r->fault_msg, r->fault_rank,
                          r->fault_rank >= 0 && r->fault_rank < r->nranks ? r->hosts[r->fault_rank] : NULL);
    /* A run that ended on a fault has ended too, complete or not. */
    fb_envelope_finish(d, complete || r->fault_code != 0);
    json_object_object_add(d, "complete", json_object_new_boolean(complete));
    int *first = malloc((size_t)r->nranks * sizeof *first);
    json_object *hosts = json_object_new_array();
    int nh = first ? distinct_hosts(r, first) : 0;
    for (int i = 0; i < nh; i++)
        json_object_array_add(hosts, json_object_new_string(r->hosts[first[i]]));
    free(first);
    json_object_object_add(d, "hosts", hosts);
    json_object_get(r->warnings);
    json_object_object_add(d, "warnings", r->warnings);

    json_object_object_add(d, "transport", json_object_new_string(o->tp->name));
    json_object_object_add(d, "pattern", json_object_new_string(probe_pattern_name(o->pattern)));
    json_object_object_add(d, "mode", json_object_new_string(o->latency ? "latency" : "bandwidth"));
    json_object_object_add(d, "bidirectional", json_object_new_boolean(o->bidirectional));
    json_object *config = fb_opts_to_json(probe_options, o);
    if (o->layout[0] != '\0') /* how --nccl-like chose -P and --threads */
        json_object_object_add(config, "nccl_layout", json_object_new_string(o->layout));
    json_object_object_add(d, "config", config);
    json_object *topo = json_object_new_object();
    json_object_object_add(topo, "ranks", json_object_new_int(r->nranks));
    json_object_object_add(topo, "nodes", json_object_new_int(r->nnodes));
    json_object_object_add(topo, "rounds", json_object_new_int(r->sched->nrounds));
    json_object_object_add(topo, "links", json_object_new_int(r->sched->nlinks));
    json_object_object_add(d, "topology", topo);
    json_object *versions = json_object_new_object();
    json_object_object_add(versions, "mpi", json_object_new_string(r->mpi_version));
    json_object_object_add(d, "versions", versions);
    json_object *eps = json_object_new_array();
    for (int k = 0; k < r->nranks; k++)
        json_object_array_add(eps, endpoint_json(&r->ep[k]));
    json_object_object_add(d, "endpoints", eps);

    struct probe_analysis a;
    probe_analyze(r, &a);
    json_object *links = json_object_new_array();
    for (int i = 0; i < r->nrows; i++)
        json_object_array_add(links, row_json(r, &r->rows[i], is_flagged(&a, i)));
    json_object_object_add(d, "links", links);
    json_object *matrix = analysis_json(r, &a, d);
    json_object_object_add(d, "matrix", matrix);
    json_object_object_add(d, "summary", summary_json(r, &a));
    probe_analysis_free(&a);
    return d;
}

enum fb_status probe_results_start(struct probe_results *r, bool exclusive, struct fb_err *err)
{
    r->stream = fb_out_is_stream(r->path);
    if (r->stream)
        return fb_probe_writable(r->path, err);
    json_object *d = probe_results_json(r, 0);
    enum fb_status st = exclusive ? fb_json_create(r->path, sizeof r->path, d, err)
                                  : fb_json_write_atomic(r->path, d, err);
    json_object_put(d);
    return st;
}

enum fb_status probe_results_save(struct probe_results *r, int complete, struct fb_err *err)
{
    /* A stream gets one document, when the run ends. */
    if (r->stream && !complete && r->fault_code == 0)
        return FB_OK;
    json_object *d = probe_results_json(r, complete);
    enum fb_status st = fb_json_write_atomic(r->path, d, err);
    json_object_put(d);
    return st;
}

/* ---- text --------------------------------------------------------------- */

static void size_text(uint64_t bytes, char *buf, size_t len) { fb_format_size(bytes, buf, len); }

void probe_print_header(FILE *out, const struct probe_results *r)
{
    const struct probe_opts *o = r->o;
    char sizes[128], first[32], last[32];
    size_text(o->sizes[0], first, sizeof first);
    size_text(o->sizes[o->nsizes - 1], last, sizeof last);
    if (o->nsizes == 1)
        snprintf(sizes, sizeof sizes, "size %s", first);
    else
        snprintf(sizes, sizeof sizes, "sizes %s..%s (%d)", first, last, o->nsizes);
    char amount[64];
    if (o->iters)
        snprintf(amount, sizeof amount, "%ld messages", o->iters);
    else
        snprintf(amount, sizeof amount, "%g s", o->duration);
    fprintf(out, "# fabric-rdma %s: %s %s%s %s, %d ranks on %d node%s, %d link%s in %d round%s\n",
            FB_VERSION, o->tp->name, probe_pattern_name(o->pattern),
            o->bidirectional ? " bidirectional" : "", o->latency ? "latency" : "bandwidth",
            r->nranks, r->nnodes, r->nnodes == 1 ? "" : "s", r->sched->nlinks, r->sched->nlinks == 1 ? "" : "s",
            r->sched->nrounds, r->sched->nrounds == 1 ? "" : "s");
    const struct probe_transport_ops *tp = o->tp;
    long lanes = tp->lanes(o);
    char settings[256] = "";
    if (tp->describe_options != NULL)
        tp->describe_options(o, settings, sizeof settings);
    fprintf(out, "# %s, %s per %s, %ld %s%s per link%s\n", sizes, amount, tp->lane, lanes, tp->lane,
            lanes == 1 ? "" : "s", settings);
    /* Device and port cells widen to their longest (libfabric domains and
     * providers run long: "rdmap16s27-rdm", "tcp;ofi_rxm 117.0"). */
    int dev_w = 10, port_w = 10;
    for (int k = 0; k < r->nranks; k++) {
        char port[48], addr[160];
        tp->describe_endpoint(&r->ep[k], port, sizeof port, addr, sizeof addr);
        dev_w = (int)strlen(r->ep[k].device) > dev_w ? (int)strlen(r->ep[k].device) : dev_w;
        port_w = (int)strlen(port) > port_w ? (int)strlen(port) : port_w;
    }
    fprintf(out, "# %4s %-16s %-*s %-*s %-22s %5s %-44s %4s %s\n", "rank", "host", dev_w, "device",
            port_w, tp->port_column, "rate", "MTU", tp->address_column, "NUMA", "memory");
    for (int k = 0; k < r->nranks; k++) {
        const struct probe_endpoint *e = &r->ep[k];
        char port[48], addr[160], mem[96];
        tp->describe_endpoint(e, port, sizeof port, addr, sizeof addr);
        if (e->gpu >= 0)
            snprintf(mem, sizeof mem, "gpu %d %s %s", e->gpu, e->gpu_bus_id, e->mem_reg);
        else
            snprintf(mem, sizeof mem, "host%s", e->mem_numa_node >= 0 ? " (NUMA-bound)" : "");
        fprintf(out, "# %4d %-16.16s %-*s %-*s %-22.22s %5d %-44s %4d %s\n", k, e->host, dev_w,
                e->device, port_w, port, e->rate[0] ? e->rate : "-", e->mtu, addr, e->numa_node,
                mem);
    }
    if (o->latency)
        fprintf(out, "#%5s %10s  %-44s %9s %9s %9s %9s %9s %9s\n", "round", "bytes",
                "source -> destination", "iters", "min[us]", "p50[us]", "avg[us]", "p99[us]", "max[us]");
    else
        fprintf(out, "#%5s %10s  %-44s %9s %10s %10s %9s %8s %6s\n", "round", "bytes",
                "source -> destination", "messages", "peak Gb/s", "avg Gb/s", "avg GB/s", "Mpps", "line%");
    fflush(out);
}

void probe_print_row(FILE *out, const struct probe_results *r, const struct probe_row *row)
{
    char src[FB_HOST_MAX + 80], dst[FB_HOST_MAX + 80], pair[2 * FB_HOST_MAX + 200];
    probe_endpoint_label(r, row->src, src, sizeof src);
    probe_endpoint_label(r, row->dst, dst, sizeof dst);
    snprintf(pair, sizeof pair, "%s -> %s", src, dst);
    const struct probe_measure *m = &row->m;
    if (r->o->latency) {
        const struct probe_latency *l = &m->lat;
        fprintf(out, " %5d %10llu  %-44s %9llu %9.2f %9.2f %9.2f %9.2f %9.2f\n", row->round,
                (unsigned long long)m->size, pair, (unsigned long long)m->messages, l->min_us,
                l->p50_us, l->avg_us, l->p99_us, l->max_us);
    } else {
        double avg = avg_gbps(m), line = line_rate_of(r, row);
        char share[16] = "-";
        if (line > 0)
            snprintf(share, sizeof share, "%.1f", 100 * avg / line);
        fprintf(out, " %5d %10llu  %-44s %9llu %10.2f %10.2f %9.3f %8.3f %6s\n", row->round,
                (unsigned long long)m->size, pair, (unsigned long long)m->messages,
                probe_samples_peak_gbps(&m->samples, avg), avg, avg / 8,
                probe_mpps((double)m->messages, m->seconds), share);
    }
    fflush(out);
}

static void print_matrix(FILE *out, const struct probe_results *r, const struct probe_analysis *a)
{
    int *first = malloc((size_t)r->nranks * sizeof *first);
    if (first == NULL)
        return;
    int nh = distinct_hosts(r, first);
    double *m = host_matrix(r, a, first, nh);
    if (m != NULL && nh > 1) {
        char size[32];
        size_text(a->size, size, sizeof size);
        fprintf(out, "# host matrix at %s: slowest link in Gb/s, rows send, columns receive\n", size);
        fprintf(out, "# %-16s", "");
        for (int j = 0; j < nh; j++)
            fprintf(out, " %12.12s", r->hosts[first[j]]);
        fprintf(out, "\n");
        for (int i = 0; i < nh; i++) {
            fprintf(out, "# %-16.16s", r->hosts[first[i]]);
            for (int j = 0; j < nh; j++) {
                if (isnan(m[i * nh + j]))
                    fprintf(out, " %12s", "-");
                else
                    fprintf(out, " %12.2f", m[i * nh + j]);
            }
            fprintf(out, "\n");
        }
    }
    free(m);
    free(first);
}

/* "# SUSPECT h:dev[k] (host h, device dev): send path slow (2 of 2 links
 * from it at 0.03x the median of the links not touching it, 11.20 Gb/s)",
 * one line per slow path. */
static void print_suspect(FILE *out, const struct probe_results *r, const struct probe_suspect *su)
{
    char who[FB_HOST_MAX + 80], ref[96];
    probe_endpoint_label(r, su->endpoint, who, sizeof who);
    if (su->by_line_rate)
        snprintf(ref, sizeof ref, "the line rate");
    else
        snprintf(ref, sizeof ref, "the median of the links not touching it, %.2f Gb/s",
                 su->reference_gbps);
    for (int dir = 0; dir < 2; dir++) {
        const struct probe_path *p = dir == 0 ? &su->send : &su->recv;
        if (!p->suspect)
            continue;
        fprintf(out, "# SUSPECT %s (host %s, device %s): %s path slow (%d of %d link%s %s it at "
                "%.2fx %s)\n", who, r->hosts[su->endpoint], r->ep[su->endpoint].device,
                dir == 0 ? "send" : "receive", p->slow, p->links, p->links == 1 ? "" : "s",
                dir == 0 ? "from" : "to", p->ratio, ref);
    }
}

/* Which paths the pattern left out (pairs: the sources' receive paths and
 * the destinations' send paths; all-pairs of 2 nodes likewise). */
static void print_unmeasured(FILE *out, const struct probe_results *r)
{
    int *sends = calloc((size_t)r->nranks * 2, sizeof *sends);
    if (sends == NULL)
        return;
    int *recvs = sends + r->nranks, missing = 0;
    probe_schedule_paths(r->sched, r->nranks, sends, recvs);
    for (int k = 0; k < r->nranks; k++)
        missing += (sends[k] == 0) + (recvs[k] == 0);
    if (missing == 0) {
        fprintf(out, "# paths: every endpoint's send and receive path measured\n");
    } else {
        fprintf(out, "# paths not measured (%s):", r->o->bidirectional
                ? "the pattern has no link there" : "one direction per link; -b measures both");
        for (int k = 0; k < r->nranks; k++) {
            char who[FB_HOST_MAX + 80];
            probe_endpoint_label(r, k, who, sizeof who);
            if (sends[k] == 0)
                fprintf(out, " %s send", who);
            if (recvs[k] == 0)
                fprintf(out, " %s receive", who);
        }
        fprintf(out, "\n");
    }
    free(sends);
}

void probe_print_summary(FILE *out, const struct probe_results *r)
{
    struct probe_analysis a;
    if (probe_analyze(r, &a) != 0 || a.n == 0) {
        probe_analysis_free(&a);
        return;
    }
    print_matrix(out, r, &a);
    char size[32];
    size_text(a.size, size, sizeof size);
    if (a.nflags == 0)
        fprintf(out, "# all %d link%s at %s within %.0f%% of their reference (median %.2f Gb/s)\n",
                a.n, a.n == 1 ? "" : "s", size, 100 * r->o->threshold, a.median_gbps);
    for (int f = 0; f < a.nflags; f++) {
        const struct probe_flag *fl = &a.flags[f];
        const struct probe_link_score *s = &a.scores[fl->index];
        char src[FB_HOST_MAX + 80], dst[FB_HOST_MAX + 80];
        probe_endpoint_label(r, s->src, src, sizeof src);
        probe_endpoint_label(r, s->dst, dst, sizeof dst);
        fprintf(out, "# SLOW %s -> %s at %s: %.2f Gb/s, %.0f%% of the %s (%.2f Gb/s)\n", src, dst,
                size, s->avg_gbps, 100 * s->avg_gbps / fl->reference_gbps,
                fl->by_line_rate ? "line rate" : "median link", fl->reference_gbps);
    }
    for (int i = 0; i < a.nsuspects; i++)
        print_suspect(out, r, &a.suspects[i]);
    print_unmeasured(out, r);
    probe_analysis_free(&a);
    fflush(out);
}
