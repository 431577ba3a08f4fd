/* JUnit XML: one <testsuite> per document, one <testcase> per doctor check,
 * verdict or probed link. A failed case carries the evidence as its
 * message and the fix (or the verdict's reasons) as its text; a skipped
 * one says why. The attributes are those Jenkins, GitLab and
 * junit-to-ctrf read. */
#include "report/export.h"

#include <string.h>

struct tally {
    size_t tests, failures, skipped;
    double seconds;
};

static struct tally count_cases(const struct fb_export *x, size_t from, size_t to)
{
    struct tally t = {0};
    for (size_t i = from; i < to; i++) {
        t.tests++;
        t.failures += x->cases[i].outcome == FB_CASE_FAILED;
        t.skipped += x->cases[i].outcome == FB_CASE_SKIPPED;
        t.seconds += x->cases[i].seconds;
    }
    return t;
}

static void attr(struct fb_str *out, const char *name, const char *value)
{
    fb_str_addf(out, " %s=\"", name);
    fb_export_xml_escape(out, value);
    fb_str_addn(out, "\"", 1);
}

static void write_case(const struct fb_export_case *c, struct fb_str *out)
{
    fb_str_addf(out, "    <testcase");
    attr(out, "name", c->name);
    attr(out, "classname", c->suite);
    fb_str_addf(out, " time=\"%.6f\"", c->seconds);
    if (c->outcome == FB_CASE_PASSED) {
        fb_str_addf(out, "/>\n");
        return;
    }
    const char *tag = c->outcome == FB_CASE_FAILED ? "failure" : "skipped";
    fb_str_addf(out, ">\n      <%s", tag);
    attr(out, "message", c->message != NULL ? c->message : c->kind);
    if (c->outcome == FB_CASE_FAILED)
        attr(out, "type", c->kind);
    if (c->text != NULL && c->outcome == FB_CASE_FAILED) {
        fb_str_addn(out, ">", 1);
        fb_export_xml_escape(out, c->text);
        fb_str_addf(out, "</%s>\n", tag);
    } else {
        fb_str_addf(out, "/>\n");
    }
    fb_str_addf(out, "    </testcase>\n");
}

static void write_suite(const struct fb_export *x, size_t from, size_t to, struct fb_str *out)
{
    struct tally t = count_cases(x, from, to);
    fb_str_addf(out, "  <testsuite");
    attr(out, "name", x->cases[from].suite);
    fb_str_addf(out, " tests=\"%zu\" failures=\"%zu\" errors=\"0\" skipped=\"%zu\" time=\"%.6f\">\n", t.tests,
                t.failures, t.skipped, t.seconds);
    for (size_t i = from; i < to; i++)
        write_case(&x->cases[i], out);
    fb_str_addf(out, "  </testsuite>\n");
}

void fb_export_write_junit(const struct fb_export *x, struct fb_str *out)
{
    struct tally t = count_cases(x, 0, x->ncases);
    fb_str_addf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fb_str_addf(out, "<testsuites name=\"fabric-bench\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" skipped=\"%zu\" "
                     "time=\"%.6f\">\n", t.tests, t.failures, t.skipped, t.seconds);
    /* The cases of one document are contiguous: each run is a suite. */
    for (size_t from = 0, to; from < x->ncases; from = to) {
        to = from + 1;
        while (to < x->ncases && strcmp(x->cases[to].suite, x->cases[from].suite) == 0)
            to++;
        write_suite(x, from, to, out);
    }
    fb_str_addf(out, "</testsuites>\n");
}
