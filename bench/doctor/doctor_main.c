/* fabric-doctor: node and cluster preflight checks for GPU fabrics. Parses
 * options, runs the named (or all) checks, prints the checklist and maps
 * the verdicts to an exit code: 0 all OK, 30 warnings, 31 failures. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/host.h"
#include "core/options.h"
#include "core/status.h"
#include "core/units.h"
#include "doctor/checklist.h"
#include "doctor/cluster.h"
#include "doctor/kube.h"
#include "doctor/node.h"
#include "core/rootfs.h"
#include "doctor/topo.h"

#define MAX_NAMED 32

struct common_opts {
    int help;
    int json;              /* --json */
    const char *json_file; /* -J FILE */
    const char *json_path; /* "-" for --json, else the -J file or NULL */
    const char *cluster;
    const char *named[MAX_NAMED];
    size_t nnamed;
};

struct node_opts {
    struct common_opts c;
    const char *root;
    const char *pid;
    const char *topology;
    int fabric; /* index in fabric_words */
};

struct cluster_opts {
    struct common_opts c;
    const char *from;
    const char *save;
    struct fb_kubectl kubectl;
    long timeout;
    const char *pairs[FB_PAIRS_MAX];
    int npairs;
    const char *gpu_nics; /* --gpu-nics FILE */
    long gpus_per_node; /* 0: not given */
};

static const char *const fabric_words[] = {"auto", "rdma", "tcpxo", NULL};
static const enum fb_fabric fabric_of_word[] = {FB_FABRIC_AUTO, FB_FABRIC_RDMA, FB_FABRIC_TCPXO};

/* The options both modes take, into the mode struct's common part. */
#define COMMON_OPTIONS(T)                                                                      \
    {0, "json", FB_OPT_FLAG, offsetof(T, c.json), NULL,                                        \
     "the kind \"doctor\" document on stdout instead of the checklist"},                       \
    {'J', NULL, FB_OPT_STRING, offsetof(T, c.json_file), "FILE",                               \
     "also write that document to FILE (atomically)"},                                         \
    {0, "cluster", FB_OPT_STRING, offsetof(T, c.cluster), "NAME",                              \
     "cluster label in the document (default $FABRIC_CLUSTER, else host)"},                    \
    {'h', "help", FB_OPT_FLAG, offsetof(T, c.help), NULL, "this help"}

#define NODE(f) offsetof(struct node_opts, f)

static const struct fb_opt node_options[] = {
    {0, "root", FB_OPT_STRING, NODE(root), "DIR", "read /proc, /sys and /dev under DIR (a copy taken from a node)"},
    {0, "pid", FB_OPT_STRING, NODE(pid), "PID", "judge that process (limits, capabilities, mounts, environment) instead of fabric-doctor itself"},
    {0, "fabric", FB_OPT_CHOICE, NODE(fabric), NULL, "rdma (InfiniBand, RoCE, EFA) or tcpxo (GKE); default: detected",
     .choices = fabric_words},
    {0, "topology", FB_OPT_STRING, NODE(topology), "FILE", "hwloc XML for gpu-nic-affinity (lstopo --of xml on the node)"},
    COMMON_OPTIONS(struct node_opts),
    FB_OPT_END,
};

#define CLUSTER(f) offsetof(struct cluster_opts, f)

static const struct fb_opt cluster_options[] = {
    {0, "from", FB_OPT_STRING, CLUSTER(from), "DIR", "read DIR/networks.json, nodes.json, pods.json instead of kubectl"},
    {0, "kubectl", FB_OPT_STRING, CLUSTER(kubectl.path), "PATH", "kubectl to run (default kubectl on PATH)"},
    {0, "context", FB_OPT_STRING, CLUSTER(kubectl.context), "CTX", "kubeconfig context"},
    {0, "timeout", FB_OPT_INT, CLUSTER(timeout), "S", "seconds per kubectl call (default 30)", 1, 3600},
    {0, "save", FB_OPT_STRING, CLUSTER(save), "DIR", "keep the fetched lists in DIR for later --from"},
    {0, "pair", FB_OPT_STRING, CLUSTER(pairs), "P=D", "also accept nccl-plugin P with tcpxo-daemon D as a released pair",
     .max_count = FB_PAIRS_MAX, .count_offset = CLUSTER(npairs)},
    {0, "gpu-nics", FB_OPT_STRING, CLUSTER(gpu_nics), "FILE", "the GPU NIC mapping fabric-bench was given (gpu-nics ConfigMap or JSON interfaces): pod-interfaces compares the deployed one"},
    {0, "gpus-per-node", FB_OPT_INT, CLUSTER(gpus_per_node), "N", "gpu-capacity: GPUs a node must have free (default 1); its skip then exits 11", 1, 1024},
    COMMON_OPTIONS(struct cluster_opts),
    FB_OPT_END,
};

#define NODE_SYNOPSIS                                                                          \
    "fabric-doctor node [--root DIR] [--pid PID] [--fabric auto|rdma|tcpxo]\n"                 \
    "                          [--topology FILE.xml] [--json | -J FILE] [CHECK...]\n"
#define CLUSTER_SYNOPSIS                                                                       \
    "fabric-doctor cluster [--from DIR | --kubectl PATH [--context CTX]]\n"                    \
    "                          [--timeout S] [--save DIR] [--pair PLUGIN=DAEMON]...\n"         \
    "                          [--gpu-nics FILE] [--gpus-per-node N]\n"                     \
    "                          [--json | -J FILE] [CHECK...]\n"
#define ABOUT                                                                                  \
    "Each check prints OK, WARN, FAIL or SKIP (does not apply), one line of evidence\n"        \
    "and, when something is wrong, the fix. Without CHECK names every check runs.\n"

static const char exit_text[] =
    "exit: 0 all OK, 30 warnings, 31 failures, 1 internal error, 2 usage, 5 no kubectl,\n"
    "      7 -J FILE or --save DIR not writable, 8 kubectl did not answer in time,\n"
    "      9 kubectl failed, 10 unreadable input, 11 cluster: fewer than two free GPU nodes\n"  \
    "      (docs/exit-codes.md)\n";

/* A mode's --help: its usage, its options, the exit codes. */
static void mode_usage(FILE *out, const struct fb_opts_ctx *ctx)
{
    fb_opts_usage(out, ctx);
    fputs(exit_text, out);
}

static void list_checks(FILE *out)
{
    size_t n = 0;
    const struct fb_node_check_def *nd = fb_node_checks(&n);
    fprintf(out, "node checks:\n");
    for (size_t i = 0; i < n; i++)
        fprintf(out, "  %-17s %s\n", nd[i].name, nd[i].about);
    const struct fb_cluster_check_def *cd = fb_cluster_checks(&n);
    fprintf(out, "cluster checks:\n");
    for (size_t i = 0; i < n; i++)
        fprintf(out, "  %-17s %s\n", cd[i].name, cd[i].about);
}

/* "peermem, memlock, ..." for the unknown-check message. */
static void check_names(const char *mode, char *buf, size_t len)
{
    size_t used = 0, n = 0;
    buf[0] = '\0';
    if (strcmp(mode, "node") == 0) {
        const struct fb_node_check_def *d = fb_node_checks(&n);
        for (size_t k = 0; k < n; k++)
            fb_strbuf_append(buf, len, &used, "%s%s", k ? ", " : "", d[k].name);
    } else {
        const struct fb_cluster_check_def *d = fb_cluster_checks(&n);
        for (size_t k = 0; k < n; k++)
            fb_strbuf_append(buf, len, &used, "%s%s", k ? ", " : "", d[k].name);
    }
}

/* The output choice and the check names (the positional arguments). */
static enum fb_status finish_common(const struct fb_opts_result *res, const char *mode,
                                    struct common_opts *c, bool (*known)(const char *),
                                    struct fb_err *err)
{
    if (c->json && c->json_file)
        return fb_fail(err, FB_ERR_USAGE, "--json and -J FILE are exclusive; pick one");
    c->json_path = c->json ? "-" : c->json_file;
    for (int i = 0; i < res->npositional; i++) {
        const char *name = res->positional[i];
        if (!known(name)) {
            char names[512];
            check_names(mode, names, sizeof names);
            return fb_fail(err, FB_ERR_USAGE, "unknown %s check '%s'; known: %s", mode, name,
                           names);
        }
        bool dup = false;
        for (size_t k = 0; k < c->nnamed; k++)
            dup |= strcmp(c->named[k], name) == 0;
        if (!dup && c->nnamed < MAX_NAMED)
            c->named[c->nnamed++] = name;
    }
    return FB_OK;
}

static bool known_node(const char *name) { return fb_node_check_find(name) != NULL; }
static bool known_cluster(const char *name) { return fb_cluster_check_find(name) != NULL; }

/* Everything is checked before --help is answered: a wrong command line is
 * an error even when it also asks for help. */
static enum fb_status parse_node(const struct fb_opts_ctx *ctx, int argc, char **argv,
                                 struct node_opts *o, struct fb_err *err)
{
    memset(o, 0, sizeof *o);
    o->root = "";
    struct fb_opts_result res;
    enum fb_status st = fb_opts_parse_ctx(ctx, argc, argv, o, &res, err);
    long pid = 0;
    if (st == FB_OK && o->pid)
        st = fb_parse_int(o->pid, "--pid", 1, 1L << 30, &pid, err);
    if (st == FB_OK)
        st = finish_common(&res, "node", &o->c, known_node, err);
    fb_opts_result_free(&res);
    return st;
}

static enum fb_status parse_cluster(const struct fb_opts_ctx *ctx, int argc, char **argv,
                                    struct cluster_opts *o, struct fb_err *err)
{
    memset(o, 0, sizeof *o);
    o->kubectl.path = "kubectl";
    o->timeout = 30;
    struct fb_opts_result res;
    enum fb_status st = fb_opts_parse_ctx(ctx, argc, argv, o, &res, err);
    o->kubectl.timeout_s = (int)o->timeout;
    if (st == FB_OK)
        st = finish_common(&res, "cluster", &o->c, known_cluster, err);
    fb_opts_result_free(&res);
    return st;
}

static bool selected(const struct common_opts *c, const char *name)
{
    if (c->nnamed == 0)
        return true;
    for (size_t i = 0; i < c->nnamed; i++)
        if (strcmp(c->named[i], name) == 0)
            return true;
    return false;
}

/* Text unless --json; the document too with --json or -J. */
static enum fb_status emit(const struct fb_checklist *list, const struct common_opts *c,
                           const char *argv0, struct fb_err *err)
{
    bool json_stdout = c->json_path && strcmp(c->json_path, "-") == 0;
    if (!json_stdout) {
        fb_checklist_print(stdout, list);
        fflush(stdout);
    }
    if (c->json_path != NULL) {
        struct fb_envelope_info info = {"doctor", "fabric-doctor", argv0, c->cluster, NULL};
        json_object *doc = fb_checklist_json(list, &info);
        enum fb_status st = fb_envelope_write(doc, c->json_path, err);
        json_object_put(doc);
        if (st != FB_OK)
            return st;
    }
    return fb_check_exit_status(list->checks, list->nchecks);
}

static enum fb_status load_pid_env(struct fb_node_ctx *ctx, const char *pid, char **block,
                                   struct fb_err *err)
{
    char path[sizeof ctx->proc + 16];
    snprintf(ctx->proc, sizeof ctx->proc, "/proc/%s", pid);
    if (!fb_rootfs_is_dir(ctx->root, ctx->proc))
        return fb_fail(err, FB_ERR_INPUT, "no process %s (%s%s missing); pass a running "
                                          "workload's PID", pid, ctx->root, ctx->proc);
    snprintf(path, sizeof path, "%s/environ", ctx->proc);
    size_t len = 0;
    enum fb_status st = fb_rootfs_read_bytes(ctx->root, path, block, &len, err);
    if (st != FB_OK)
        return st;
    fb_node_env_from_block(*block, len, &ctx->env);
    return FB_OK;
}

static enum fb_status run_node(const struct fb_opts_ctx *opts, int argc, char **argv,
                               struct fb_err *err)
{
    struct node_opts o;
    enum fb_status st = parse_node(opts, argc, argv, &o, err);
    if (st != FB_OK || o.c.help) {
        if (st == FB_OK)
            mode_usage(stdout, opts);
        return st;
    }
    bool live = o.root[0] == '\0' || strcmp(o.root, "/") == 0;
    if (!live && !fb_rootfs_is_dir("", o.root))
        return fb_fail(err, FB_ERR_INPUT, "--root %s is not a directory", o.root);
    struct fb_node_ctx ctx;
    fb_node_ctx_init(&ctx, live ? "" : o.root);
    char *environ_block = NULL;
    if (o.pid)
        st = load_pid_env(&ctx, o.pid, &environ_block, err);
    else
        fb_node_env_from_process(&ctx.env);
    struct fb_topo topo;
    bool have_topo = false;
    if (st == FB_OK && o.topology) {
        st = fb_topo_load(o.topology, &topo, err);
        have_topo = st == FB_OK;
        ctx.topo = have_topo ? &topo : NULL;
    }
    if (st != FB_OK) {
        free(environ_block);
        return st;
    }
    fb_node_resolve_fabric(&ctx, fabric_of_word[o.fabric]);

    size_t ndefs = 0, n = 0;
    const struct fb_node_check_def *defs = fb_node_checks(&ndefs);
    struct fb_check *checks = calloc(ndefs, sizeof *checks);
    if (checks == NULL) {
        free(environ_block);
        if (have_topo)
            fb_topo_free(&topo);
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    }
    for (size_t i = 0; i < ndefs; i++)
        if (selected(&o.c, defs[i].name))
            fb_node_run(&ctx, &defs[i], o.c.nnamed > 0, &checks[n++]);

    char host[FB_HOST_MAX], fabric[320];
    fb_hostname(host, sizeof host);
    snprintf(fabric, sizeof fabric, "%s (%s)", ctx.fabric == FB_FABRIC_TCPXO ? "tcpxo" : "rdma",
             ctx.fabric_why);
    struct fb_target_kv target[] = {
        {"host", live ? host : "(from --root)"},
        {"root", live ? "/" : o.root},
        {"process", ctx.proc},
        {"fabric", fabric},
    };
    struct fb_checklist list = {"node", target, sizeof target / sizeof target[0], checks, n};
    st = emit(&list, &o.c, opts->argv0, err);
    free(checks);
    free(environ_block);
    if (have_topo)
        fb_topo_free(&topo);
    return st;
}

static enum fb_status run_cluster(const struct fb_opts_ctx *opts, int argc, char **argv,
                                  struct fb_err *err)
{
    struct cluster_opts o;
    enum fb_status st = parse_cluster(opts, argc, argv, &o, err);
    if (st != FB_OK || o.c.help) {
        if (st == FB_OK)
            mode_usage(stdout, opts);
        return st;
    }
    size_t ndefs = 0;
    const struct fb_cluster_check_def *defs = fb_cluster_checks(&ndefs);
    unsigned need = 0;
    for (size_t i = 0; i < ndefs; i++)
        if (selected(&o.c, defs[i].name))
            need |= defs[i].needs;

    /* A malformed --gpu-nics file is an error before kubectl is asked. */
    struct fb_gke_nic_map given;
    if (o.gpu_nics) {
        st = fb_gke_read_nic_map(o.gpu_nics, &given, err);
        if (st != FB_OK)
            return st;
    }
    struct fb_kube_data data;
    st = o.from ? fb_kube_from_dir(o.from, need, &data, err)
                : fb_kube_from_kubectl(&o.kubectl, need, &data, err);
    if (st != FB_OK)
        return st;
    if (o.save)
        st = fb_kube_save(o.save, &data, err);
    struct fb_cluster_ctx ctx;
    fb_cluster_ctx_init(&ctx, &data);
    ctx.given_nics = o.gpu_nics ? &given : NULL;
    for (int i = 0; st == FB_OK && i < o.npairs; i++)
        st = fb_cluster_add_pair(&ctx, o.pairs[i], err);
    ctx.gpus_per_node = o.gpus_per_node;
    ctx.capacity_gates = o.gpus_per_node > 0 ||
                         (o.c.nnamed > 0 && selected(&o.c, "gpu-capacity"));
    struct fb_check *checks = st == FB_OK ? calloc(ndefs, sizeof *checks) : NULL;
    if (st == FB_OK && checks == NULL)
        st = fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    if (st != FB_OK) {
        fb_kube_free(&data);
        return st;
    }
    size_t n = 0;
    for (size_t i = 0; i < ndefs; i++) {
        if (!selected(&o.c, defs[i].name))
            continue;
        fb_check_init(&checks[n], defs[i].name);
        if (!fb_cluster_skip_unsaved(&ctx, &defs[i], &checks[n]))
            defs[i].run(&ctx, &checks[n]);
        n++;
    }
    char source[4200], counts[128];
    if (o.from)
        snprintf(source, sizeof source, "%s", o.from);
    else
        snprintf(source, sizeof source, "%s%s%s", o.kubectl.path,
                 o.kubectl.context ? " --context " : "", o.kubectl.context ? o.kubectl.context : "");
    json_object *ni = fb_kube_items(data.nodes), *pi = fb_kube_items(data.pods);
    json_object *wi = fb_kube_items(data.networks);
    snprintf(counts, sizeof counts, "%zu nodes, %zu pods, %zu networks",
             ni ? json_object_array_length(ni) : 0, pi ? json_object_array_length(pi) : 0,
             wi ? json_object_array_length(wi) : 0);
    struct fb_target_kv target[] = {
        {"source", o.from ? "dir" : "kubectl"},
        {"from", source},
        {"objects", counts},
    };
    struct fb_checklist list = {"cluster", target, sizeof target / sizeof target[0], checks, n};
    st = emit(&list, &o.c, opts->argv0, err);
    free(checks);
    fb_kube_free(&data);
    return st;
}

static const struct fb_subcmd modes[] = {
    {"node", node_options, "usage: " NODE_SYNOPSIS ABOUT, run_node},
    {"cluster", cluster_options, "usage: " CLUSTER_SYNOPSIS ABOUT, run_cluster},
    {NULL},
};

/* fabric-doctor --help: every mode with its options. */
static void usage(FILE *out)
{
    fputs("usage: " NODE_SYNOPSIS "       " CLUSTER_SYNOPSIS "       fabric-doctor list\n" ABOUT,
          out);
    for (const struct fb_subcmd *m = modes; m->name != NULL; m++) {
        fprintf(out, "%s:\n", m->name);
        fb_opts_help(out, m->opts);
    }
    fputs(exit_text, out);
}

int main(int argc, char **argv)
{
    struct fb_err err = {FB_OK, ""};
    enum fb_status st;
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "--help") == 0 || strcmp(mode, "-h") == 0 || strcmp(mode, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(mode, "list") == 0) {
        list_checks(stdout);
        return 0;
    }
    /* The mode is argv[1]; options and check names follow it. */
    const struct fb_subcmd *m = fb_subcmd_find(modes, mode);
    if (m != NULL)
        st = fb_subcmd_run("fabric-doctor", m, argc, argv, &err);
    else
        st = fb_fail(&err, FB_ERR_USAGE, "%s%s%s: say fabric-doctor node, cluster or list (see "
                                         "--help)", mode[0] ? "unknown mode '" : "no mode given",
                     mode, mode[0] ? "'" : "");
    if (err.code != FB_OK)
        fprintf(stderr, "fabric-doctor: %s\n", err.msg);
    return (int)st;
}
