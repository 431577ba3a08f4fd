/* What the fabric-doctor cluster unit tests share: a saved cluster from
 * tests/fixtures/doctor/cluster loaded into one fixture per test program,
 * running one check on it, and finding its objects by name. Each test
 * program includes this once (the state is the program's own). */
#ifndef FB_TESTS_CLUSTER_FIXTURE_H
#define FB_TESTS_CLUSTER_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor/cluster.h"
#include "doctor/kube.h"

#include "check.h"

static struct fb_kube_data data;
static struct fb_cluster_ctx ctx;
static struct fb_check c;

static inline const char *fixture_dir(const char *name)
{
    static char buf[1024];
    const char *root = getenv("FB_ROOT");
    snprintf(buf, sizeof buf, "%s/tests/fixtures/doctor/cluster/%s", root ? root : ".", name);
    return buf;
}

/* Replaces the fixture with the saved cluster NAME's lists; a fixture
 * that does not load ends the program. */
static inline void load_lists(const char *name, unsigned lists)
{
    struct fb_err err = {FB_OK, ""};
    fb_kube_free(&data);
    if (fb_kube_from_dir(fixture_dir(name), lists, &data, &err) != FB_OK) {
        printf("not ok - fixture %s: %s\n", name, err.msg);
        exit(1);
    }
    fb_cluster_ctx_init(&ctx, &data);
}

static inline void run_check(void (*fn)(const struct fb_cluster_ctx *, struct fb_check *),
                             const char *name)
{
    fb_check_init(&c, name);
    fn(&ctx, &c);
}

#define EXPECT(want, text)                                       \
    do {                                                         \
        CHECK_STR(fb_verdict_name(c.verdict), want);             \
        CHECK_CONTAINS(c.evidence, text);                        \
    } while (0)

/* The object of a list with this name; none ends the program. */
static inline json_object *named(json_object *list, const char *name)
{
    json_object *items = fb_kube_items(list);
    for (size_t i = 0; i < json_object_array_length(items); i++)
        if (strcmp(fb_kube_name(json_object_array_get_idx(items, i)), name) == 0)
            return json_object_array_get_idx(items, i);
    printf("# no object %s\n", name);
    exit(1);
}

/* obj.a.b.d, or fewer keys ending in NULL; NULL when absent. */
static inline json_object *at(json_object *obj, const char *a, const char *b, const char *d)
{
    const char *const keys[] = {a, b, d, NULL};
    return fb_kube_path(obj, keys);
}

#endif
