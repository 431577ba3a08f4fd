#include "report/physics.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/jsonio.h"
#include "core/text.h"
#include "nccl/profiles.h"

/* Longer names first: "GB200" holds "B200", "L40S" holds "L40" and "L4". */
static const char *const gpu_models[] = {
    "GB300", "GB200", "B300", "B200", "H200", "H100", "H800", "H20", "A100", "A800", "A40", "A30", "A10",
    "L40S", "L40", "L4", "V100", "MI355X", "MI350X", "MI325X", "MI300X", "MI300A", "MI250X", "MI250", "MI210",
};

/* `token` in `name` as a word of its own, not inside a longer one: "B200"
 * is not in "NVIDIA GB200", "H100" is in "NVIDIA H100 80GB HBM3". */
const char *fb_gpu_token(const char *name, const char *token)
{
    size_t n = strlen(token);
    for (const char *at = strcasestr(name, token); at != NULL; at = strcasestr(at + 1, token)) {
        bool starts = at == name || !isalnum((unsigned char)at[-1]);
        if (starts && !isalnum((unsigned char)at[n]))
            return at;
    }
    return NULL;
}

const char *fb_gpu_model(const char *name, char *buf, size_t len)
{
    for (size_t i = 0; i < sizeof gpu_models / sizeof *gpu_models; i++)
        if (fb_gpu_token(name, gpu_models[i]) != NULL) {
            snprintf(buf, len, "%s", gpu_models[i]);
            return buf;
        }
    snprintf(buf, len, "%s", name);
    return buf;
}

const char *fb_gpu_vendor(const char *name)
{
    if (name == NULL)
        return NULL;
    if (strcasestr(name, "NVIDIA") != NULL || strcasestr(name, "Tesla") != NULL || strcasestr(name, "GeForce") != NULL)
        return "NVIDIA";
    if (strcasestr(name, "AMD") != NULL || strcasestr(name, "Instinct") != NULL || strcasestr(name, "Radeon") != NULL)
        return "AMD";
    char model[32];
    fb_gpu_model(name, model, sizeof model);
    if (strcmp(model, name) == 0)
        return NULL;
    return strncmp(model, "MI", 2) == 0 ? "AMD" : "NVIDIA";
}

/* Collectives whose busBW a ring bounds by its slowest link: nccl-tests
 * scales each so that busBW is what that link carries. Alltoall and its kin
 * spread over every pair and have no such bound. */
static bool ring_bounded(const char *collective)
{
    static const char *const rings[] = {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "sendrecv"};
    for (size_t i = 0; i < sizeof rings / sizeof *rings; i++)
        if (strcmp(collective, rings[i]) == 0)
            return true;
    return false;
}

static bool gpu_on(const struct fb_result *r)
{
    return r->device_kind != NULL && strcmp(r->device_kind, "gpu") == 0 && r->device_name != NULL;
}

/* NVL72 racks (GB200, GB300): NVLink joins the trays of a rack, so a run's
 * nodes share one NVLink domain and no NIC bound holds. */
static bool nvlink_domain_spans(const char *model)
{
    return strcmp(model, "GB200") == 0 || strcmp(model, "GB300") == 0;
}

/* The NICs NCCL listed on the host with the most: each process prints the
 * devices its network uses (per_rank[].interfaces). 0 when not logged. */
static long logged_nics_per_node(const struct fb_result *r)
{
    json_object *pr = fb_json_member(r->transport, "per_rank");
    long best = 0;
    for (size_t i = 0; pr != NULL && json_object_is_type(pr, json_type_array) && i < json_object_array_length(pr); i++) {
        json_object *e = json_object_array_get_idx(pr, i);
        json_object *ifs = fb_json_member(e, "interfaces");
        const char *net = fb_json_get_string(e, "net");
        if (ifs == NULL || !json_object_is_type(ifs, json_type_array) || (net != NULL && strcmp(net, "Socket") == 0))
            continue;
        long n = (long)json_object_array_length(ifs);
        if (n > best)
            best = n;
    }
    return best;
}

/* The families of a GPU model that say what their NICs are: multi-node
 * target profiles naming the model, on the network the run used when it
 * says (any, when none of them uses it). */
struct nic_families {
    double least, most;     /* per-GPU share, Gb/s */
    struct fb_str names, sources;
    int n;
    bool on_net;            /* they were chosen by the run's network */
};

static bool family_of(const struct fb_profile *p, const char *model, const char *net, bool with_net)
{
    if (!p->target || p->nics.per_node == 0 || p->match.gpu[0] == '\0' || p->match.nodes_max == 1 ||
        strcasecmp(p->match.gpu, model) != 0)
        return false;
    return !with_net || net == NULL || strcmp(p->fabric, net) == 0;
}

static void add_source(struct fb_str *sources, const struct fb_profile *p)
{
    if (strstr(fb_str_get(sources), p->source) == NULL)
        fb_str_addf(sources, "%s%s: %s", sources->len ? "; " : "", p->name, p->source);
}

/* A profile a bound is read from: its name in the list, its source beside
 * the others (each once). */
static void note_family(struct fb_str *names, struct fb_str *sources, const struct fb_profile *p)
{
    if (strstr(fb_str_get(names), p->name) == NULL)
        fb_str_addf(names, "%s%s", names->len ? ", " : "", p->name);
    add_source(sources, p);
}

static void read_nic_families(const struct fb_profiles *ps, const char *model, const char *net, struct nic_families *f)
{
    memset(f, 0, sizeof *f);
    for (int pass = 0; pass < 2 && f->n == 0; pass++)
        for (size_t i = 0; i < ps->n; i++) {
            const struct fb_profile *p = &ps->p[i];
            if (!family_of(p, model, net, pass == 0))
                continue;
            f->on_net = pass == 0;
            double share = fb_profile_nic_per_gpu(p);
            if (f->n == 0 || share < f->least)
                f->least = share;
            if (f->n == 0 || share > f->most)
                f->most = share;
            note_family(&f->names, &f->sources, p);
            f->n++;
        }
}

static void free_nic_families(struct nic_families *f)
{
    fb_str_free(&f->names);
    fb_str_free(&f->sources);
}

/* The floor of `nics` NICs of one family's kind and speed: the per-NIC
 * profile of that kind, speed and network (what one healthy NIC carries,
 * from its sources) times the NICs, else FB_PHYSICS_NIC_SHARE of their
 * line rate. `rule` says which. */
static double family_floor(const struct fb_result *r, const struct fb_profiles *ps, const struct fb_profile *fam,
                           long nics, char *rule, size_t len, const struct fb_profile **from)
{
    *from = NULL;
    for (size_t i = 0; i < ps->n; i++) {
        const struct fb_profile *p = &ps->p[i];
        const struct fb_expect *e = p->per_nic ? fb_profile_expect(p, r->collective) : NULL;
        if (e == NULL && p->per_nic)
            e = fb_profile_expect(p, "all_reduce"); /* busBW is one link's figure in every ring */
        if (e == NULL || fabs(p->nics.gbps - fam->nics.gbps) > 0.5 || strcasecmp(p->nics.kind, fam->nics.kind) != 0)
            continue;
        *from = p;
        snprintf(rule, len, "%ld x %.1f GB/s, the floor of one %.0f Gb/s %s NIC (profile %s)", nics, e->floor,
                 p->nics.gbps, p->nics.kind, p->name);
        return e->floor * (double)nics;
    }
    snprintf(rule, len, "%.0f %% of %ld x %.0f Gb/s %s (healthy rings reach 80-97 %%)", 100 * FB_PHYSICS_NIC_SHARE, nics,
             fam->nics.gbps, fam->nics.kind[0] ? fam->nics.kind : "NICs");
    return FB_PHYSICS_NIC_SHARE * (double)nics * fam->nics.gbps / 8.0;
}

/* The families that give the least NIC per GPU may still differ in their
 * NICs (two 200 Gb/s EFA or one 400 Gb/s RoCE NIC a GPU): the floor is the
 * most lenient of theirs, as the bound is the least of their shares. */
static void nic_floor(const struct fb_result *r, const struct fb_profiles *ps, const char *model, const char *net,
                      struct nic_families *f, struct fb_physics *ph)
{
    for (size_t i = 0; i < ps->n; i++) {
        const struct fb_profile *p = &ps->p[i];
        if (!family_of(p, model, net, f->on_net) || fabs(fb_profile_nic_per_gpu(p) - f->least) > 0.5)
            continue;
        long nics = (long)lround(f->least * (double)ph->gpus_per_node / p->nics.gbps);
        if (nics < 1)
            nics = 1;
        char rule[sizeof ph->floor_rule];
        const struct fb_profile *from = NULL;
        double floor = family_floor(r, ps, p, nics, rule, sizeof rule, &from);
        if (isnan(ph->floor) || floor < ph->floor) {
            ph->floor = floor;
            ph->nics = nics;
            ph->nic_gbps = p->nics.gbps;
            snprintf(ph->floor_rule, sizeof ph->floor_rule, "%s", rule);
            if (from != NULL)
                add_source(&f->sources, from);
        }
    }
}

static void read_across(const struct fb_result *r, const struct fb_profiles *ps, const char *model,
                        struct fb_physics *ph)
{
    const char *net = r->net != NULL && strcmp(r->net, "Socket") != 0 ? r->net : NULL;
    if (net != NULL && strcmp(net, "IBext") == 0)
        net = "IB";
    struct nic_families f;
    read_nic_families(ps, model, net, &f);
    if (f.n == 0) {
        free_nic_families(&f);
        return;
    }
    long rpn = r->ranks_per_node;
    if (rpn <= 0) {
        rpn = 8;
        ph->rpn_assumed = true;
    }
    ph->gpus_per_node = rpn;
    ph->across = true;
    /* Each GPU drives its own share of the node's NICs; fewer GPUs than a
     * node has use fewer NICs (one rail each). */
    ph->bound = f.least * (double)rpn / 8.0;
    ph->bound_most = f.most * (double)rpn / 8.0;
    long logged = logged_nics_per_node(r);
    ph->logged_nics = logged;
    char logged_note[96] = "";
    if (logged > 0)
        snprintf(logged_note, sizeof logged_note, "; NCCL's log lists %ld NIC%s per node", logged, logged == 1 ? "" : "s");
    char spread[96] = "";
    if (f.most > f.least)
        snprintf(spread, sizeof spread, " (the least of its families, which give %.0f to %.0f)", f.least, f.most);
    else if (f.n > 1)
        snprintf(spread, sizeof spread, " (every family of it does)");
    snprintf(ph->inputs, sizeof ph->inputs,
             "%s with %.0f Gb/s of NIC per GPU%s [%s]; %ld GPU%s per node%s: %.0f Gb/s per node = %.1f GB/s%s",
             model, f.least, spread, fb_str_get(&f.names), rpn, rpn == 1 ? "" : "s",
             ph->rpn_assumed ? " (assumed: the output does not show the nodes)" : "", f.least * (double)rpn,
             ph->bound, logged_note);
    nic_floor(r, ps, model, net, &f, ph);
    snprintf(ph->source, sizeof ph->source, "%s", fb_str_get(&f.sources));
    free_nic_families(&f);
}

static void read_within(const struct fb_profiles *ps, const char *model, struct fb_physics *ph)
{
    struct fb_str names = {0}, sources = {0};
    for (size_t i = 0; i < ps->n; i++) {
        const struct fb_profile *p = &ps->p[i];
        if (!p->target || isnan(p->intra_GBps) || strcasecmp(p->match.gpu, model) != 0)
            continue;
        if (isnan(ph->bound) || p->intra_GBps < ph->bound)
            ph->bound = p->intra_GBps;
        note_family(&names, &sources, p);
    }
    if (!isnan(ph->bound)) {
        snprintf(ph->inputs, sizeof ph->inputs, "%s links of %.0f GB/s per GPU in one direction [%s]", model,
                 ph->bound, fb_str_get(&names));
        snprintf(ph->source, sizeof ph->source, "%s", fb_str_get(&sources));
        ph->floor = FB_PHYSICS_INTRA_SHARE * ph->bound;
        snprintf(ph->floor_rule, sizeof ph->floor_rule, "%.0f %% of the bound (healthy rings reach 70-85 %%)", 100 * FB_PHYSICS_INTRA_SHARE);
    }
    fb_str_free(&names);
    fb_str_free(&sources);
}

void fb_physics_read(const struct fb_result *r, const struct fb_profiles *ps, long nodes, struct fb_physics *ph)
{
    memset(ph, 0, sizeof *ph);
    ph->bound = ph->bound_most = ph->floor = NAN;
    if (!gpu_on(r) || !ring_bounded(r->collective) || r->ranks < 2)
        return;
    char model[32];
    fb_gpu_model(r->device_name, model, sizeof model);
    bool across = nodes > 1 || (nodes == 0 && r->ranks > 8);
    if (across && nvlink_domain_spans(model)) {
        ph->nvlink_spans = true;
        snprintf(ph->inputs, sizeof ph->inputs, "%s: NVLink spans the nodes of a rack (MNNVL), so no NIC bound applies", model);
        return;
    }
    if (across)
        read_across(r, ps, model, ph);
    else if (nodes == 1)
        read_within(ps, model, ph);
}
