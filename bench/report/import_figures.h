/* Whether a row's printed figures can follow from each other. nccl-tests
 * computes a row's two bandwidths from its size and its unrounded time by
 * the collective's rule (nccl/collective.h), then prints all three rounded
 * (time "%7.2f" us, bandwidths "%6.2f" GB/s, fewer decimals or an exponent
 * where the number is too wide). So the printed figures only ever differ
 * from the rule by that rounding: a row that needs more was cut, merged or
 * edited, and a verdict on it would mislead. Every reader of measured rows
 * asks here, with the precision its format printed. */
#ifndef FB_REPORT_IMPORT_FIGURES_H
#define FB_REPORT_IMPORT_FIGURES_H

#include <json-c/json.h>
#include <stdbool.h>

#include "nccl/collective.h"

/* No fabric, bus or memory moves 1 EB/s. A larger bandwidth is not a
 * measurement (the 1e308 of an average that overflowed), and a few of them
 * summed would make every average inf. */
#define FB_FIGURE_ABSURD_GBPS 1e9

/* One printed number: its value, and half a unit of its last printed digit
 * (the rounding it may hide). v is NAN when the output printed none
 * ("N/A", "nan", null). */
struct fb_printed {
    double v;
    double half;
};

/* A number as printf writes one: digits, an optional fraction, an optional
 * exponent ("93.64", "1191.6", "11061", "1e+06", "1.2e+07"); its value must
 * be finite. False for anything else strtod would also take (a sign, hex,
 * "inf", "nan", blanks), so nothing but a printed measurement passes. */
bool fb_printed_parse(const char *tok, struct fb_printed *out);

/* The same for a JSON number as the file wrote it (json-c keeps the text
 * of a parsed number), or a numeric string. */
bool fb_printed_json(json_object *v, struct fb_printed *out);

/* One placement (out-of-place or in-place) of a row. */
struct fb_printed_place {
    bool present;
    struct fb_printed time_us, algbw, busbw;
};

/* How the figures of a run relate. */
struct fb_figures_rule {
    const struct fb_collective *coll;
    enum fb_bw_rule rule;
    long nranks;       /* 0 when unknown: what depends on it is not checked */
    double time_scale; /* printed time x this = microseconds (1000: printed in ms) */
    bool time_is_cpu;  /* -C: the time printed is not the one the bandwidths used */
};

enum fb_figures_fault {
    FB_FIGURES_OK,
    FB_FIGURES_ABSURD, /* a bandwidth beyond FB_FIGURE_ABSURD_GBPS */
    FB_FIGURES_ALGBW,  /* algBW is not size / time x the algorithm share */
    FB_FIGURES_BUSBW,  /* busBW is not algBW x the bus share */
};

/* What a check found: the fault, the figure's possible range [lo, hi] in
 * GB/s, and the share that range came from. */
struct fb_figures_why {
    enum fb_figures_fault fault;
    double lo, hi, share;
};

/* Checks one placement of a row of `bytes` (its size column). */
enum fb_figures_fault fb_figures_check(const struct fb_figures_rule *r, unsigned long long bytes,
                                       const struct fb_printed_place *p, struct fb_figures_why *why);

#endif
