/* The metrics writers: OpenMetrics 1.0 text (with # UNIT and the # EOF
 * terminator) and the Prometheus text format 0.0.4 that node-exporter's
 * textfile collector reads. Families come in the table's order, each
 * written once with its samples together, in the order the documents gave
 * them, so the same input gives the same text. No timestamps: the scrape
 * time stamps the samples, as the textfile collector requires. */
#include "report/export.h"

static void write_family(const struct fb_export *x, enum fb_export_family f, bool openmetrics, struct fb_str *out)
{
    const struct fb_export_family_desc *d = fb_export_family(f);
    bool any = false;
    for (size_t i = 0; i < x->nsamples && !any; i++)
        any = x->samples[i].family == f;
    if (!any)
        return;
    fb_str_addf(out, "# HELP %s %s\n# TYPE %s gauge\n", d->name, d->help, d->name);
    if (openmetrics && d->unit != NULL)
        fb_str_addf(out, "# UNIT %s %s\n", d->name, d->unit);
    for (size_t i = 0; i < x->nsamples; i++) {
        const struct fb_export_sample *s = &x->samples[i];
        if (s->family != f)
            continue;
        fb_str_addf(out, "%s{%s} ", d->name, s->labels);
        fb_export_number(out, s->value);
        fb_str_addn(out, "\n", 1);
    }
}

void fb_export_write_metrics(const struct fb_export *x, bool openmetrics, struct fb_str *out)
{
    for (int f = 0; f < FB_FAM_COUNT; f++)
        write_family(x, (enum fb_export_family)f, openmetrics, out);
    if (openmetrics)
        fb_str_addf(out, "# EOF\n");
}
