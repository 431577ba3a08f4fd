#include "report/probe_profile.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/jsonio.h"
#include "core/text.h"
#include "report/physics.h"

/* "Ethernet" is RoCE, "InfiniBand" (or "IB") is InfiniBand: the NIC kinds
 * of the atlas. NULL when the result does not say. */
static const char *nic_kind(const char *link_layer)
{
    if (link_layer == NULL)
        return NULL;
    if (strcasecmp(link_layer, "Ethernet") == 0 || strcasecmp(link_layer, "RoCE") == 0)
        return "RoCE";
    if (strcasecmp(link_layer, "InfiniBand") == 0 || strcasecmp(link_layer, "IB") == 0)
        return "IB";
    return NULL;
}

struct endpoint_facts {
    double line_rate;       /* the first endpoint's that prints one */
    const char *gpu_name;   /* a GPU the result used, when it names one */
    const char *link_layer;
    bool gpu_memory;
};

static void read_endpoints(json_object *doc, struct endpoint_facts *f)
{
    memset(f, 0, sizeof *f);
    f->line_rate = NAN;
    json_object *eps = fb_json_member(doc, "endpoints");
    for (size_t i = 0; eps != NULL && json_object_is_type(eps, json_type_array) && i < json_object_array_length(eps); i++) {
        json_object *e = json_object_array_get_idx(eps, i);
        json_object *mem = fb_json_member(e, "memory");
        double rate = NAN;
        if (isnan(f->line_rate) && fb_json_get_double(e, "line_rate_Gbps", &rate) && rate > 0)
            f->line_rate = rate;
        const char *kind = fb_json_get_string(mem, "kind"), *gpu = fb_json_get_string(mem, "gpu_name");
        if (kind != NULL && strcmp(kind, "gpu") == 0)
            f->gpu_memory = true;
        if (f->gpu_name == NULL && gpu != NULL && gpu[0] != '\0')
            f->gpu_name = gpu;
        if (f->link_layer == NULL)
            f->link_layer = fb_json_get_string(e, "link_layer");
    }
}

/* The line rate of the NICs of every family of the GPU that has NICs of
 * this kind, when they all agree: H200 on RoCE is 400 Gb/s wherever it is
 * sold. NAN when they disagree or none says. */
static double family_line_rate(const struct fb_profiles *ps, const char *gpu_name, const char *kind, char *from,
                               size_t len)
{
    char model[32];
    fb_gpu_model(gpu_name, model, sizeof model);
    double rate = NAN;
    struct fb_str names = {0};
    for (size_t i = 0; i < ps->n; i++) {
        const struct fb_profile *p = &ps->p[i];
        if (!p->target || p->nics.per_node == 0 || strcasecmp(p->match.gpu, model) != 0 ||
            strcasecmp(p->nics.kind, kind) != 0)
            continue;
        if (!isnan(rate) && fabs(rate - p->nics.gbps) > 0.5) {
            fb_str_free(&names);
            return NAN;
        }
        rate = p->nics.gbps;
        fb_str_addf(&names, "%s%s", names.len ? ", " : "", p->name);
    }
    if (!isnan(rate))
        snprintf(from, len, "the %s NICs of every %s family in the atlas (%s)", kind, model, fb_str_get(&names));
    fb_str_free(&names);
    return rate;
}

void fb_probe_expectation_read(json_object *doc, const struct fb_profiles *ps, struct fb_probe_expectation *x)
{
    memset(x, 0, sizeof *x);
    struct endpoint_facts f;
    read_endpoints(doc, &f);
    x->gpu_memory = f.gpu_memory;
    x->line_rate = f.line_rate;
    if (!isnan(x->line_rate))
        snprintf(x->line_from, sizeof x->line_from, "the port's rate in the result");
    const char *kind = nic_kind(f.link_layer);
    if (isnan(x->line_rate) && f.gpu_name != NULL && kind != NULL)
        x->line_rate = family_line_rate(ps, f.gpu_name, kind, x->line_from, sizeof x->line_from);
    if (isnan(x->line_rate))
        return;
    for (size_t i = 0; i < ps->n && x->profile == NULL; i++) {
        const struct fb_profile *p = &ps->p[i];
        for (int k = 0; p->target && k < p->nprobe; k++) {
            const struct fb_probe_expect *e = &p->probe[k];
            if (strcmp(e->test, "rdma_write") == 0 && fabs(e->line_rate - x->line_rate) < 0.5 && e->gpu_memory == x->gpu_memory) {
                x->profile = p;
                x->expect = e;
                break;
            }
        }
    }
}
