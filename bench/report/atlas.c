#include "report/atlas.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/units.h"

/* The order families are listed in; any other family (a user's own
 * profiles) follows in name order, and a profile with none is "own". */
static const char *const family_order[] = {
    "single node", "NVL72 racks", "GKE", "AWS", "Azure", "OCI", "AMD", "fabric", "fabric per NIC", "probe", "symptom",
};

#define FAMILIES_KNOWN (sizeof family_order / sizeof *family_order)

static const char *family_of(const struct fb_profile *p)
{
    return p->family[0] != '\0' ? p->family : "own";
}

static size_t family_rank(const char *family)
{
    for (size_t i = 0; i < FAMILIES_KNOWN; i++)
        if (strcmp(family_order[i], family) == 0)
            return i;
    return FAMILIES_KNOWN;
}

static int by_family_then_name(const void *a, const void *b)
{
    const struct fb_profile *const *pa = a, *const *pb = b;
    const char *fa = family_of(*pa), *fb = family_of(*pb);
    size_t ra = family_rank(fa), rb = family_rank(fb);
    if (ra != rb)
        return ra < rb ? -1 : 1;
    int c = strcmp(fa, fb);
    return c != 0 ? c : strcmp((*pa)->name, (*pb)->name);
}

/* The profiles in listing order; NULL when out of memory. */
static const struct fb_profile **sorted(const struct fb_profiles *ps)
{
    const struct fb_profile **list = calloc(ps->n + 1, sizeof *list);
    if (list == NULL)
        return NULL;
    for (size_t i = 0; i < ps->n; i++)
        list[i] = &ps->p[i];
    qsort(list, ps->n, sizeof *list, by_family_then_name);
    return list;
}

static void figure(double v, struct fb_str *out)
{
    fb_str_addf(out, "%.*f", v == floor(v) ? 0 : (v * 10 == floor(v * 10) ? 1 : 2), v);
}

void fb_atlas_figures(const struct fb_profile *p, struct fb_str *out)
{
    size_t start = out->len;
    for (int i = 0; i < p->nexpect; i++) {
        const struct fb_expect *e = &p->expect[i];
        char at[32];
        fb_format_size(e->at_bytes, at, sizeof at);
        fb_str_addf(out, "%s%s ", out->len > start ? "; " : "", e->collective);
        if (!isnan(e->busbw)) {
            figure(e->busbw, out);
            fb_str_addf(out, p->target ? " / " : "");
        }
        if (p->target) {
            fb_str_addf(out, ">= ");
            figure(e->floor, out);
        }
        fb_str_addf(out, " GB/s at %s", at);
        if (!isnan(e->avg_busbw) || !isnan(e->avg_floor)) {
            fb_str_addf(out, " (average ");
            if (!isnan(e->avg_busbw))
                figure(e->avg_busbw, out);
            if (!isnan(e->avg_floor)) {
                fb_str_addf(out, "%s>= ", isnan(e->avg_busbw) ? "" : " / ");
                figure(e->avg_floor, out);
            }
            fb_str_addf(out, " over %s)", e->avg_range);
        }
    }
    for (int i = 0; i < p->nprobe; i++) {
        const struct fb_probe_expect *e = &p->probe[i];
        fb_str_addf(out, "%s%s >= ", out->len > start ? "; " : "", e->test);
        figure(e->floor, out);
        fb_str_addf(out, " Gb/s on a ");
        figure(e->line_rate, out);
        fb_str_addf(out, " Gb/s link, %s memory", e->gpu_memory ? "GPU" : "host");
    }
    if (p->nics.per_node > 0) {
        fb_str_addf(out, "%sNIC%s %ld x ", out->len > start ? "; " : "", p->per_nic ? "" : "s", p->nics.per_node);
        figure(p->nics.gbps, out);
        fb_str_addf(out, " Gb/s%s%s", p->nics.kind[0] ? " " : "", p->nics.kind);
    }
    if (!isnan(p->intra_GBps)) {
        fb_str_addf(out, "%sGPU links ", out->len > start ? "; " : "");
        figure(p->intra_GBps, out);
        fb_str_addf(out, " GB/s one way");
    }
}

void fb_atlas_text(const struct fb_profiles *ps, struct fb_str *out)
{
    const struct fb_profile **list = sorted(ps);
    const char *current = NULL;
    for (size_t i = 0; list != NULL && i < ps->n; i++) {
        const struct fb_profile *p = list[i];
        if (current == NULL || strcmp(current, family_of(p)) != 0) {
            current = family_of(p);
            fb_str_addf(out, "%s%s\n", i ? "\n" : "", current);
        }
        fb_str_addf(out, "  %-24s r%-2ld %s\n  %-28s", p->name, p->revision, p->description, "");
        fb_atlas_figures(p, out);
        fb_str_addf(out, "\n  %-28s%s\n", "", p->path);
    }
    free(list);
}

/* A cell may not hold '|' or a line break. */
static void cell(const char *text, struct fb_str *out)
{
    for (const char *c = text; *c != '\0'; c++)
        fb_str_addf(out, "%s", *c == '|' ? "\\|" : *c == '\n' ? " " : (char[2]){*c, '\0'});
}

void fb_atlas_markdown(const struct fb_profiles *ps, struct fb_str *out)
{
    const struct fb_profile **list = sorted(ps);
    fb_str_addf(out, "| family | profile | figures | source |\n| --- | --- | --- | --- |\n");
    for (size_t i = 0; list != NULL && i < ps->n; i++) {
        const struct fb_profile *p = list[i];
        struct fb_str figures = {0};
        fb_atlas_figures(p, &figures);
        fb_str_addf(out, "| %s | `%s` r%ld | ", family_of(p), p->name, p->revision);
        cell(fb_str_get(&figures), out);
        fb_str_addf(out, " | ");
        cell(p->source, out);
        fb_str_addf(out, " |\n");
        fb_str_free(&figures);
    }
    free(list);
}
