#include "report/import_figures.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Slack on top of the printed rounding, one part in a million: the edges
 * of a range computed in doubles may differ in the last bits, and files
 * written by hand round their six-decimal JSON figures once more. Damage
 * is orders of magnitude larger. */
#define SLACK 1e-6

static size_t digits_at(const char *s)
{
    size_t n = 0;
    while (isdigit((unsigned char)s[n]))
        n++;
    return n;
}

bool fb_printed_parse(const char *tok, struct fb_printed *out)
{
    if (tok == NULL)
        return false;
    const char *p = tok;
    size_t whole = digits_at(p), decimals = 0;
    if (whole == 0)
        return false;
    p += whole;
    if (*p == '.') {
        decimals = digits_at(p + 1);
        if (decimals == 0)
            return false;
        p += 1 + decimals;
    }
    long exponent = 0;
    if (*p == 'e' || *p == 'E') {
        const char *e = p + 1 + (p[1] == '+' || p[1] == '-');
        size_t n = digits_at(e);
        if (n == 0 || n > 4)
            return false;
        exponent = strtol(p + 1, NULL, 10);
        p = e + n;
    }
    if (*p != '\0')
        return false;
    errno = 0;
    double v = strtod(tok, NULL);
    if (errno != 0 || !isfinite(v))
        return false;
    out->v = v;
    /* "93.64": 0.005; "11061": 0.5; "1e+06": 5e5; "1.2e+07": 5e5. */
    out->half = 0.5 * pow(10.0, (double)(exponent - (long)decimals));
    return true;
}

bool fb_printed_json(json_object *v, struct fb_printed *out)
{
    if (json_object_is_type(v, json_type_string)) {
        const char *s = json_object_get_string(v);
        while (*s == ' ')
            s++;
        return fb_printed_parse(s, out);
    }
    if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
        return false;
    /* json-c keeps a parsed number's text: its digits are the precision. */
    if (fb_printed_parse(json_object_to_json_string(v), out))
        return true;
    out->v = json_object_get_double(v);
    out->half = 0;
    return isfinite(out->v) && out->v >= 0;
}

static bool printed(const struct fb_printed *f)
{
    return !isnan(f->v);
}

/* A share that differs between 2 and 3 ranks needs the rank count. */
static bool needs_ranks(double (*share)(const struct fb_collective *, enum fb_bw_rule, int),
                        const struct fb_figures_rule *r)
{
    double two = share(r->coll, r->rule, 2), three = share(r->coll, r->rule, 3);
    return !(two == three || (isnan(two) && isnan(three)));
}

static bool overlaps(double lo, double hi, const struct fb_printed *f)
{
    return f->v + f->half >= lo * (1 - SLACK) && f->v - f->half <= hi * (1 + SLACK);
}

static enum fb_figures_fault fault(struct fb_figures_why *why, enum fb_figures_fault f, double lo, double hi,
                                   double share)
{
    *why = (struct fb_figures_why){f, lo, hi, share};
    return f;
}

/* The algBW range the size and the printed time allow: [0, inf] when they
 * cannot say (unknown ranks, -C, alltoallv, a figure not printed). */
static void algbw_from_time(const struct fb_figures_rule *r, unsigned long long bytes, const struct fb_printed_place *p,
                            double *lo, double *hi, double *share)
{
    *lo = 0, *hi = INFINITY, *share = NAN;
    if (r->time_is_cpu || !printed(&p->time_us) || (r->nranks <= 0 && needs_ranks(fb_coll_alg_share, r)))
        return;
    *share = fb_coll_alg_share(r->coll, r->rule, r->nranks > 0 ? (int)r->nranks : 2);
    if (isnan(*share))
        return;
    double moved = (double)bytes * *share;
    double t = p->time_us.v * r->time_scale, ht = p->time_us.half * r->time_scale;
    double t_lo = t - ht > 0 ? t - ht : 0, t_hi = t + ht;
    /* bytes / microseconds / 1e3 = GB/s (1e9 bytes). */
    *lo = moved == 0 ? 0 : moved / (t_hi * 1e3);
    *hi = moved == 0 ? 0 : t_lo > 0 ? moved / (t_lo * 1e3) : INFINITY;
}

enum fb_figures_fault fb_figures_check(const struct fb_figures_rule *r, unsigned long long bytes,
                                       const struct fb_printed_place *p, struct fb_figures_why *why)
{
    *why = (struct fb_figures_why){FB_FIGURES_OK, 0, 0, NAN};
    if (!p->present)
        return FB_FIGURES_OK;
    if (p->algbw.v > FB_FIGURE_ABSURD_GBPS || p->busbw.v > FB_FIGURE_ABSURD_GBPS)
        return fault(why, FB_FIGURES_ABSURD, 0, FB_FIGURE_ABSURD_GBPS, NAN);
    double lo, hi, share;
    algbw_from_time(r, bytes, p, &lo, &hi, &share);
    if (printed(&p->algbw) && !overlaps(lo, hi, &p->algbw))
        return fault(why, FB_FIGURES_ALGBW, lo, hi, share);
    if (!printed(&p->algbw) || !printed(&p->busbw) || (r->nranks <= 0 && needs_ranks(fb_coll_bus_share, r)))
        return FB_FIGURES_OK;
    /* The true algBW lies in both its printed range and the time's. */
    double a_lo = fmax(p->algbw.v - p->algbw.half, lo), a_hi = fmin(p->algbw.v + p->algbw.half, hi);
    double f = fb_coll_bus_share(r->coll, r->rule, r->nranks > 0 ? (int)r->nranks : 2);
    if (!overlaps(fmax(a_lo, 0) * f, a_hi * f, &p->busbw))
        return fault(why, FB_FIGURES_BUSBW, fmax(a_lo, 0) * f, a_hi * f, f);
    return FB_FIGURES_OK;
}
