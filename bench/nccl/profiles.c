#include "nccl/profiles.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/array.h"
#include "core/files.h"
#include "core/jsonio.h"
#include "nccl/collective.h"
#include "nccl/nccl_log.h"
#include "core/text.h"

#define DIRS_MAX 32

static enum fb_status get_text(json_object *obj, const char *key, bool required, char *out,
                               size_t len, const char *path, const char *where, struct fb_err *err)
{
    json_object *v = fb_json_member(obj, key);
    out[0] = '\0';
    if (v == NULL) {
        if (required)
            return fb_fail(err, FB_ERR_INPUT, "profile %s: %s%s is missing", path, where, key);
        return FB_OK;
    }
    if (!json_object_is_type(v, json_type_string))
        return fb_fail(err, FB_ERR_INPUT, "profile %s: %s%s must be a string", path, where, key);
    const char *s = json_object_get_string(v);
    if (strlen(s) >= len)
        return fb_fail(err, FB_ERR_INPUT, "profile %s: %s%s is longer than %zu characters", path, where, key, len - 1);
    fb_copy(out, len, s, strlen(s));
    return FB_OK;
}

static enum fb_status get_count(json_object *obj, const char *key, long *out, const char *path,
                                const char *where, struct fb_err *err)
{
    *out = 0;
    if (fb_json_get_ranged(obj, key, 1, 10000000, out) == FB_JSON_WRONG)
        return fb_fail(err, FB_ERR_INPUT, "profile %s: %s%s must be an integer >= 1", path, where, key);
    return FB_OK;
}

static enum fb_status get_gbps(json_object *obj, const char *key, bool required, double *out,
                               const char *path, const char *where, struct fb_err *err)
{
    json_object *v = fb_json_member(obj, key);
    *out = NAN;
    if (v == NULL) {
        if (required)
            return fb_fail(err, FB_ERR_INPUT, "profile %s: %s%s is missing", path, where, key);
        return FB_OK;
    }
    /* 0 is no figure: a ratio against it is NaN and every run would pass. */
    bool num = json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int);
    if (!num || !isfinite(json_object_get_double(v)) || json_object_get_double(v) <= 0)
        return fb_fail(err, FB_ERR_INPUT, "profile %s: %s%s must be a number > 0 (GB/s); fix the profile or remove it", path, where, key);
    *out = json_object_get_double(v);
    return FB_OK;
}

/* A target needs a floor to be checked against; a symptom (what a broken
 * cluster measures) needs only its typical figure. */
static enum fb_status parse_expect(json_object *o, const char *coll, bool target, struct fb_expect *e,
                                   const char *path, struct fb_err *err)
{
    char where[64];
    snprintf(where, sizeof where, "collectives.%s.", coll);
    if (!fb_collective_known(coll))
        return fb_fail(err, FB_ERR_INPUT, "profile %s: collectives.%s is not a known collective", path, coll);
    if (!json_object_is_type(o, json_type_object))
        return fb_fail(err, FB_ERR_INPUT, "profile %s: collectives.%s must be an object", path, coll);
    fb_copy(e->collective, sizeof e->collective, coll, strlen(coll));
    int64_t at = 0;
    if (!fb_json_get_int64(o, "at_bytes", &at) || at < 1)
        return fb_fail(err, FB_ERR_INPUT, "profile %s: %sat_bytes must be an integer >= 1", path, where);
    e->at_bytes = (unsigned long long)at;
    enum fb_status st = get_gbps(o, "busbw_GBps", !target, &e->busbw, path, where, err);
    if (st == FB_OK)
        st = get_gbps(o, "floor_GBps", target, &e->floor, path, where, err);
    if (st == FB_OK)
        st = get_gbps(o, "fail_below_GBps", false, &e->fail_below, path, where, err);
    if (st == FB_OK)
        st = get_gbps(o, "avg_busbw_GBps", false, &e->avg_busbw, path, where, err);
    if (st == FB_OK)
        st = get_text(o, "avg_range", false, e->avg_range, sizeof e->avg_range, path, where, err);
    if (st == FB_OK)
        st = get_gbps(o, "avg_floor_GBps", false, &e->avg_floor, path, where, err);
    if (st != FB_OK)
        return st;
    /* An average means nothing without the sweep it covers. */
    if ((!isnan(e->avg_busbw) || !isnan(e->avg_floor)) && e->avg_range[0] == '\0')
        return fb_fail(err, FB_ERR_INPUT, "profile %s: %savg_range must give the sweep its average covers (e.g. \"1K-16G\")", path, where);
    /* "Far below" is half the floor unless the profile says otherwise. */
    if (isnan(e->fail_below))
        e->fail_below = e->floor / 2;
    /* The floor is the least a healthy run gets: above the typical figure,
     * the profile contradicts itself. */
    if (!isnan(e->floor) && !isnan(e->busbw) && e->floor > e->busbw)
        return fb_fail(err, FB_ERR_INPUT, "profile %s: %sfloor_GBps (%g) is above busbw_GBps (%g); a floor is below the typical figure",
                       path, where, e->floor, e->busbw);
    if (!isnan(e->floor) && e->fail_below > e->floor)
        return fb_fail(err, FB_ERR_INPUT, "profile %s: %sfail_below_GBps is above floor_GBps", path, where);
    return FB_OK;
}

static enum fb_status parse_match(json_object *m, struct fb_match *match, const char *path,
                                  struct fb_err *err)
{
    memset(match, 0, sizeof *match);
    if (m == NULL)
        return FB_OK;
    if (!json_object_is_type(m, json_type_object))
        return fb_fail(err, FB_ERR_INPUT, "profile %s: \"match\" must be an object", path);
    enum fb_status st = get_text(m, "gpu", false, match->gpu, sizeof match->gpu, path, "match.", err);
    if (st == FB_OK)
        st = get_text(m, "backend", false, match->backend, sizeof match->backend, path, "match.", err);
    if (st == FB_OK)
        st = get_text(m, "net", false, match->net, sizeof match->net, path, "match.", err);
    if (st == FB_OK)
        st = get_text(m, "intra", false, match->intra, sizeof match->intra, path, "match.", err);
    if (st == FB_OK)
        st = get_count(m, "nodes_min", &match->nodes_min, path, "match.", err);
    if (st == FB_OK)
        st = get_count(m, "nodes_max", &match->nodes_max, path, "match.", err);
    if (st == FB_OK)
        st = get_count(m, "ranks", &match->ranks, path, "match.", err);
    if (st == FB_OK)
        st = get_count(m, "ranks_per_node", &match->ranks_per_node, path, "match.", err);
    if (st == FB_OK && match->nodes_max > 0 && match->nodes_min > match->nodes_max)
        st = fb_fail(err, FB_ERR_INPUT, "profile %s: match.nodes_min is above match.nodes_max", path);
    return st;
}

/* "nics": {"per_node": 8, "Gbps": 400, "kind": "RoCE"} */
static enum fb_status parse_nics(json_object *o, struct fb_nics *n, const char *path, struct fb_err *err)
{
    memset(n, 0, sizeof *n);
    if (o == NULL)
        return FB_OK;
    if (!json_object_is_type(o, json_type_object))
        return fb_fail(err, FB_ERR_INPUT, "profile %s: \"nics\" must be an object", path);
    enum fb_status st = get_count(o, "per_node", &n->per_node, path, "nics.", err);
    if (st == FB_OK && n->per_node == 0)
        st = fb_fail(err, FB_ERR_INPUT, "profile %s: nics.per_node is missing", path);
    if (st == FB_OK)
        st = get_gbps(o, "Gbps", true, &n->gbps, path, "nics.", err);
    if (st == FB_OK)
        st = get_text(o, "kind", false, n->kind, sizeof n->kind, path, "nics.", err);
    return st;
}

/* "probes": {"rdma_write": {"line_rate_Gbps": 400, "floor_Gbps": 380, "gpu_memory": true}} */
static enum fb_status parse_probes(json_object *o, struct fb_profile *p, const char *path, struct fb_err *err)
{
    if (o == NULL)
        return FB_OK;
    if (!json_object_is_type(o, json_type_object))
        return fb_fail(err, FB_ERR_INPUT, "profile %s: \"probes\" must be an object", path);
    json_object_object_foreach(o, key, val) {
        if (p->nprobe == FB_PROFILE_PROBES_MAX)
            return fb_fail(err, FB_ERR_INPUT, "profile %s: more than %d probes", path, FB_PROFILE_PROBES_MAX);
        struct fb_probe_expect *e = &p->probe[p->nprobe];
        char where[64];
        snprintf(where, sizeof where, "probes.%s.", key);
        if (strcmp(key, "rdma_write") != 0)
            return fb_fail(err, FB_ERR_INPUT, "profile %s: probes.%s is not a known probe (rdma_write)", path, key);
        if (!json_object_is_type(val, json_type_object))
            return fb_fail(err, FB_ERR_INPUT, "profile %s: probes.%s must be an object", path, key);
        fb_copy(e->test, sizeof e->test, key, strlen(key));
        enum fb_status st = get_gbps(val, "line_rate_Gbps", true, &e->line_rate, path, where, err);
        if (st == FB_OK)
            st = get_gbps(val, "floor_Gbps", true, &e->floor, path, where, err);
        if (st != FB_OK)
            return st;
        if (e->floor > e->line_rate)
            return fb_fail(err, FB_ERR_INPUT, "profile %s: %sfloor_Gbps is above line_rate_Gbps", path, where);
        json_object *gpu = fb_json_member(val, "gpu_memory");
        if (gpu != NULL && !json_object_is_type(gpu, json_type_boolean))
            return fb_fail(err, FB_ERR_INPUT, "profile %s: %sgpu_memory must be true or false", path, where);
        e->gpu_memory = gpu != NULL && json_object_get_boolean(gpu);
        p->nprobe++;
    }
    return FB_OK;
}

/* "sources": [{"what": "...", "ref": "..."}] joined into one line. */
static enum fb_status parse_sources(json_object *s, char *out, size_t len, const char *path,
                                    struct fb_err *err)
{
    if (s == NULL || !json_object_is_type(s, json_type_array) || json_object_array_length(s) == 0)
        return fb_fail(err, FB_ERR_INPUT, "profile %s: \"sources\" must list where its figures come from", path);
    out[0] = '\0';
    for (size_t i = 0; i < json_object_array_length(s); i++) {
        json_object *e = json_object_array_get_idx(s, i);
        const char *ref = fb_json_get_string(e, "ref");
        if (!json_object_is_type(e, json_type_object) || ref == NULL || ref[0] == '\0')
            return fb_fail(err, FB_ERR_INPUT, "profile %s: sources[%zu] needs a \"ref\" string", path, i);
        size_t used = strlen(out);
        snprintf(out + used, len - used, "%s%s", i ? "; " : "", ref);
    }
    return FB_OK;
}

bool fb_profile_name_ok(const char *name)
{
    if (name == NULL || name[0] == '\0' || name[0] == '.' || strlen(name) >= FB_PROFILE_NAME_MAX)
        return false;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '.' || *c == '_' || *c == '-'))
            return false;
    return true;
}

enum fb_status fb_profile_parse(json_object *doc, const char *path, struct fb_profile *p,
                                struct fb_err *err)
{
    memset(p, 0, sizeof *p);
    p->intra_GBps = NAN;
    fb_copy(p->path, sizeof p->path, path, strlen(path));
    if (!json_object_is_type(doc, json_type_object))
        return fb_fail(err, FB_ERR_INPUT, "profile %s: the top level is %s, not a JSON object", path, fb_json_doc_kind(doc));
    const char *schema = fb_json_get_string(doc, "schema");
    if (schema == NULL || strcmp(schema, "fabric-bench.profile") != 0)
        return fb_fail(err, FB_ERR_INPUT, "profile %s is %s, not a profile (\"schema\" is not \"fabric-bench.profile\"); move it out of the profile directory",
                       path, fb_json_doc_kind(doc));
    int64_t v = 0;
    if (!fb_json_get_int64(doc, "schema_version", &v) || v != 1)
        return fb_fail(err, FB_ERR_INPUT, "profile %s: schema_version must be 1", path);
    enum fb_status st = get_text(doc, "name", true, p->name, sizeof p->name, path, "", err);
    if (st != FB_OK)
        return st;
    if (!fb_profile_name_ok(p->name))
        return fb_fail(err, FB_ERR_INPUT, "profile %s: name \"%s\" may hold only letters, digits, '.', '_' and '-'", path, p->name);
    if (!fb_json_get_int64(doc, "revision", &v) || v < 1)
        return fb_fail(err, FB_ERR_INPUT, "profile %s: \"revision\" must be an integer >= 1", path);
    p->revision = (long)v;
    char role[16];
    st = get_text(doc, "role", true, role, sizeof role, path, "", err);
    if (st != FB_OK)
        return st;
    if (strcmp(role, "target") != 0 && strcmp(role, "symptom") != 0)
        return fb_fail(err, FB_ERR_INPUT, "profile %s: \"role\" must be \"target\" or \"symptom\"", path);
    p->target = strcmp(role, "target") == 0;
    st = get_text(doc, "description", true, p->description, sizeof p->description, path, "", err);
    if (st == FB_OK)
        st = get_text(doc, "fabric", false, p->fabric, sizeof p->fabric, path, "", err);
    if (st == FB_OK)
        st = get_text(doc, "family", false, p->family, sizeof p->family, path, "", err);
    if (st == FB_OK)
        st = parse_match(fb_json_member(doc, "match"), &p->match, path, err);
    if (st == FB_OK)
        st = parse_nics(fb_json_member(doc, "nics"), &p->nics, path, err);
    if (st == FB_OK)
        st = get_gbps(doc, "intra_GBps", false, &p->intra_GBps, path, "", err);
    if (st == FB_OK)
        st = parse_probes(fb_json_member(doc, "probes"), p, path, err);
    json_object *per_nic = fb_json_member(doc, "per_nic");
    if (st == FB_OK && per_nic != NULL && !json_object_is_type(per_nic, json_type_boolean))
        st = fb_fail(err, FB_ERR_INPUT, "profile %s: \"per_nic\" must be true or false", path);
    p->per_nic = per_nic != NULL && json_object_get_boolean(per_nic);
    if (st == FB_OK && p->per_nic && p->nics.per_node != 1)
        st = fb_fail(err, FB_ERR_INPUT, "profile %s: a per_nic profile describes one NIC: give \"nics\": {\"per_node\": 1, \"Gbps\": ...}", path);
    if (st == FB_OK)
        st = parse_sources(fb_json_member(doc, "sources"), p->source, sizeof p->source, path, err);
    if (st != FB_OK)
        return st;
    json_object *colls = fb_json_member(doc, "collectives");
    /* A probe profile has only link figures; a family whose source gives
     * its NICs but no measured figure still gives physics its bound. */
    if (colls == NULL && (p->nprobe > 0 || (p->nics.per_node > 0 && !p->per_nic)))
        return FB_OK;
    if (colls == NULL || !json_object_is_type(colls, json_type_object) || json_object_object_length(colls) == 0)
        return fb_fail(err, FB_ERR_INPUT, "profile %s: \"collectives\" must give figures for at least one collective (or \"probes\" for a link, or \"nics\" for a family's hardware)", path);
    json_object_object_foreach(colls, key, val) {
        if (p->nexpect == FB_PROFILE_EXPECT_MAX)
            return fb_fail(err, FB_ERR_INPUT, "profile %s: more than %d collectives", path, FB_PROFILE_EXPECT_MAX);
        st = parse_expect(val, key, p->target, &p->expect[p->nexpect], path, err);
        if (st != FB_OK)
            return st;
        p->nexpect++;
    }
    return FB_OK;
}

static enum fb_status add_profile(struct fb_profiles *ps, const struct fb_profile *p, struct fb_err *err)
{
    if (fb_profile_find(ps, p->name) != NULL)
        return FB_OK; /* an earlier directory overrides */
    return fb_array_append(&ps->p, &ps->n, sizeof *p, p, "loading profiles", err);
}

static enum fb_status load_profile_file(const char *path, void *ctx, struct fb_err *err)
{
    struct fb_profiles *ps = ctx;
    json_object *doc = NULL;
    enum fb_status st = fb_json_read_file(path, &doc, err);
    if (st != FB_OK)
        return st;
    struct fb_profile *p = malloc(sizeof *p);
    if (p == NULL)
        st = fb_fail(err, FB_ERR_INTERNAL, "out of memory loading profiles");
    else
        st = fb_profile_parse(doc, path, p, err);
    if (st == FB_OK)
        st = add_profile(ps, p, err);
    free(p);
    json_object_put(doc);
    return st;
}

/* An absent directory on the search path is normal. */
static enum fb_status load_dir(struct fb_profiles *ps, const char *dir, struct fb_err *err)
{
    return fb_walk_json_files(dir, 0, true, load_profile_file, ps, err);
}

enum fb_status fb_profiles_load(const char *const *dirs, int ndirs, struct fb_profiles *ps,
                                struct fb_err *err)
{
    memset(ps, 0, sizeof *ps);
    enum fb_status st = FB_OK;
    for (int i = 0; i < ndirs && st == FB_OK; i++)
        st = load_dir(ps, dirs[i], err);
    if (st != FB_OK)
        fb_profiles_free(ps);
    return st;
}

enum fb_status fb_profile_user_dir(char *buf, size_t len, struct fb_err *err)
{
    const char *xdg = getenv("XDG_CONFIG_HOME");
    const char *home = getenv("HOME");
    int n;
    if (xdg != NULL && xdg[0] == '/')
        n = snprintf(buf, len, "%s/fabric-bench/profiles", xdg);
    else if (home != NULL && home[0] != '\0')
        n = snprintf(buf, len, "%s/.config/fabric-bench/profiles", home);
    else
        return fb_fail(err, FB_ERR_USAGE, "neither XDG_CONFIG_HOME nor HOME is set; give the profile file with -o FILE");
    if (n < 0 || (size_t)n >= len)
        return fb_fail(err, FB_ERR_USAGE, "profile directory path too long; give the profile file with -o FILE");
    return FB_OK;
}

static bool is_dir(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* results/reference of the tree the binary sits in (build/bin/fabric-report
 * -> ../../results/reference), or an installed share directory. */
static void shipped_dir(char *buf, size_t len)
{
    const char *env = getenv("FABRIC_REFERENCE_DIR");
    if (env != NULL && env[0] != '\0') {
        snprintf(buf, len, "%s", env);
        return;
    }
    buf[0] = '\0';
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash == NULL)
        return;
    *slash = '\0';
    const char *tails[] = {"/../../results/reference", "/../share/fabric-bench/reference"};
    for (size_t i = 0; i < sizeof tails / sizeof *tails; i++) {
        char cand[PATH_MAX + 64];
        snprintf(cand, sizeof cand, "%s%s", exe, tails[i]);
        char real[PATH_MAX];
        if (is_dir(cand) && realpath(cand, real) != NULL && strlen(real) < len) {
            memcpy(buf, real, strlen(real) + 1);
            return;
        }
    }
}

enum fb_status fb_profiles_load_default(const char *const *extra, int nextra, struct fb_profiles *ps,
                                        struct fb_err *err)
{
    memset(ps, 0, sizeof *ps);
    char (*store)[PATH_MAX] = calloc(DIRS_MAX, PATH_MAX);
    if (store == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory loading profiles");
    const char *dirs[DIRS_MAX];
    int n = 0;
    for (int i = 0; i < nextra && n < DIRS_MAX - 2; i++) {
        if (!is_dir(extra[i])) {
            free(store);
            return fb_fail(err, FB_ERR_USAGE, "--profiles %s is not a directory", extra[i]);
        }
        dirs[n++] = extra[i];
    }
    const char *path = getenv("FABRIC_PROFILE_PATH");
    char *copy = path ? strdup(path) : NULL;
    char *save = NULL;
    for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d != NULL && n < DIRS_MAX - 2;
         d = strtok_r(NULL, ":", &save)) {
        snprintf(store[n], PATH_MAX, "%s", d);
        dirs[n] = store[n];
        n++;
    }
    free(copy);
    struct fb_err ignore = {0};
    if (fb_profile_user_dir(store[n], PATH_MAX, &ignore) == FB_OK) {
        dirs[n] = store[n];
        n++;
    }
    shipped_dir(store[n], PATH_MAX);
    if (store[n][0] != '\0') {
        dirs[n] = store[n];
        n++;
    }
    enum fb_status st = fb_profiles_load(dirs, n, ps, err);
    free(store);
    return st;
}

void fb_profiles_free(struct fb_profiles *ps)
{
    free(ps->p);
    memset(ps, 0, sizeof *ps);
}

const struct fb_profile *fb_profile_find(const struct fb_profiles *ps, const char *name)
{
    for (size_t i = 0; i < ps->n; i++)
        if (strcmp(ps->p[i].name, name) == 0)
            return &ps->p[i];
    return NULL;
}

void fb_profiles_names(const struct fb_profiles *ps, char *buf, size_t len)
{
    buf[0] = '\0';
    if (ps->n == 0) {
        snprintf(buf, len, "none found");
        return;
    }
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < ps->n; i++) {
            if (ps->p[i].target != (pass == 0))
                continue;
            size_t used = strlen(buf);
            snprintf(buf + used, len - used, "%s%s", used ? ", " : "", ps->p[i].name);
        }
}

double fb_profile_nic_per_gpu(const struct fb_profile *p)
{
    if (p->nics.per_node == 0)
        return NAN;
    /* A profile of whole nodes names their GPUs; 8 is every family's
     * count that does not. */
    long gpus = p->match.ranks_per_node > 0 ? p->match.ranks_per_node : 8;
    return p->nics.gbps * (double)p->nics.per_node / (double)gpus;
}

const struct fb_expect *fb_profile_expect(const struct fb_profile *p, const char *collective)
{
    for (int i = 0; i < p->nexpect; i++)
        if (strcmp(p->expect[i].collective, collective) == 0)
            return &p->expect[i];
    return NULL;
}
