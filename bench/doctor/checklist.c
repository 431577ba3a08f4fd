#include "doctor/checklist.h"

#include <string.h>

#include "core/jsonio.h"

void fb_checklist_print(FILE *out, const struct fb_checklist *list)
{
    fprintf(out, "fabric-doctor %s:", list->mode);
    for (size_t i = 0; i < list->ntarget; i++)
        fprintf(out, "%s %s %s", i ? ";" : "", list->target[i].key, list->target[i].value);
    fputc('\n', out);
    /* One column for the names, as wide as the longest (17 at least, so
     * lists of short names keep their old layout). */
    int width = 17;
    for (size_t i = 0; i < list->nchecks; i++) {
        int len = (int)strlen(list->checks[i].name);
        width = len > width ? len : width;
    }
    for (size_t i = 0; i < list->nchecks; i++) {
        const struct fb_check *c = &list->checks[i];
        fprintf(out, "%-5s %-*s %s\n", fb_verdict_label(c->verdict), width, c->name, c->evidence);
        /* A SKIP's fix is what lets the check judge (a list to save). */
        if (c->fix[0] && c->verdict != FB_CHECK_OK)
            fprintf(out, "%-5s %-*s fix: %s\n", "", width, "", c->fix);
    }
    struct fb_check_counts k = fb_check_count(list->checks, list->nchecks);
    enum fb_status st = fb_check_exit_status(list->checks, list->nchecks);
    fprintf(out, "summary: %zu OK, %zu WARN, %zu FAIL, %zu SKIP: exit %d (%s)\n", k.ok, k.warn,
            k.fail, k.skip, (int)st, fb_status_name(st));
}

static json_object *check_json(const struct fb_check *c)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "name", json_object_new_string(c->name));
    json_object_object_add(o, "verdict", json_object_new_string(fb_verdict_name(c->verdict)));
    json_object_object_add(o, "evidence", json_object_new_string(c->evidence));
    json_object_object_add(o, "fix", fb_json_string_or_null(c->fix));
    json_object *culprits = json_object_new_array();
    for (size_t i = 0; i < c->nculprits; i++)
        json_object_array_add(culprits, json_object_new_string(c->culprits[i]));
    json_object_object_add(o, "culprits", culprits);
    return o;
}

json_object *fb_checklist_json(const struct fb_checklist *list,
                               const struct fb_envelope_info *info)
{
    json_object *d = fb_envelope_new(info);
    json_object_object_add(d, "mode", json_object_new_string(list->mode));
    json_object *target = json_object_new_object();
    for (size_t i = 0; i < list->ntarget; i++)
        json_object_object_add(target, list->target[i].key,
                               json_object_new_string(list->target[i].value));
    json_object_object_add(d, "target", target);
    json_object *checks = json_object_new_array();
    for (size_t i = 0; i < list->nchecks; i++) {
        const struct fb_check *c = &list->checks[i];
        json_object_array_add(checks, check_json(c));
        if (c->verdict == FB_CHECK_WARN || c->verdict == FB_CHECK_FAIL) {
            char line[FB_CHECK_NAME_MAX + FB_CHECK_TEXT_MAX + 16];
            snprintf(line, sizeof line, "%s %s: %s", fb_verdict_label(c->verdict), c->name,
                     c->evidence);
            fb_envelope_warn(d, line);
        }
    }
    json_object_object_add(d, "checks", checks);
    struct fb_check_counts k = fb_check_count(list->checks, list->nchecks);
    enum fb_status st = fb_check_exit_status(list->checks, list->nchecks);
    json_object *s = json_object_new_object();
    json_object_object_add(s, "ok", json_object_new_int((int)k.ok));
    json_object_object_add(s, "warn", json_object_new_int((int)k.warn));
    json_object_object_add(s, "fail", json_object_new_int((int)k.fail));
    json_object_object_add(s, "skip", json_object_new_int((int)k.skip));
    json_object_object_add(s, "verdict", json_object_new_string(
        k.fail ? "fail" : k.warn ? "warn" : "ok"));
    json_object_object_add(s, "exit_code", json_object_new_int((int)st));
    json_object_object_add(d, "summary", s);
    return d;
}
