/* fabric-doctor: node and cluster preflight checks for GPU fabrics. Parses
 * options, runs the named (or all) checks, prints the checklist and maps
 * the verdicts to an exit code: 0 all OK, 30 warnings, 31 failures. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/host.h"
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
    bool help;
    const char *json_path; /* "-" for --json */
    const char *cluster;
    const char *named[MAX_NAMED];
    size_t nnamed;
};

struct node_opts {
    struct common_opts c;
    const char *root;
    const char *pid;
    const char *topology;
    enum fb_fabric fabric;
};

struct cluster_opts {
    struct common_opts c;
    const char *from;
    const char *save;
    struct fb_kubectl kubectl;
    const char *pairs[FB_PAIRS_MAX];
    size_t npairs;
};

static void usage(FILE *out)
{
    fprintf(out,
        "usage: fabric-doctor node [--root DIR] [--pid PID] [--fabric auto|rdma|tcpxo]\n"
        "                          [--topology FILE.xml] [--json | -J FILE] [CHECK...]\n"
        "       fabric-doctor cluster [--from DIR | --kubectl PATH [--context CTX]]\n"
        "                          [--timeout S] [--save DIR] [--pair PLUGIN=DAEMON]...\n"
        "                          [--json | -J FILE] [CHECK...]\n"
        "       fabric-doctor list\n"
        "Each check prints OK, WARN, FAIL or SKIP (does not apply), one line of evidence\n"
        "and, when something is wrong, the fix. Without CHECK names every check runs.\n"
        "node:\n"
        "  --root DIR       read /proc, /sys and /dev under DIR (a copy taken from a node)\n"
        "  --pid PID        judge that process (limits, capabilities, mounts, environment)\n"
        "                   instead of fabric-doctor itself\n"
        "  --fabric F       rdma (InfiniBand, RoCE, EFA) or tcpxo (GKE); default: detected\n"
        "  --topology FILE  hwloc XML for gpu-nic-affinity (lstopo --of xml on the node)\n"
        "cluster:\n"
        "  --from DIR       read DIR/networks.json, nodes.json, pods.json instead of kubectl\n"
        "  --kubectl PATH   kubectl to run (default kubectl on PATH)\n"
        "  --context CTX    kubeconfig context\n"
        "  --timeout S      seconds per kubectl call (default 30)\n"
        "  --save DIR       keep the fetched lists in DIR for later --from\n"
        "  --pair P=D       also accept nccl-plugin P with tcpxo-daemon D as a released pair\n"
        "both:\n"
        "  --json           the kind \"doctor\" document on stdout instead of the checklist\n"
        "  -J FILE          also write that document to FILE (atomically)\n"
        "  --cluster NAME   cluster label in the document (default $FABRIC_CLUSTER, else host)\n"
        "exit: 0 all OK, 30 warnings, 31 failures, 2 usage, 5 no kubectl, 9 kubectl failed,\n"
        "      10 unreadable input\n");
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

/* Options shared by both modes; returns 1 when `ch` was one of them. */
static int common_opt(int ch, struct common_opts *c, bool *to_stdout, const char **file)
{
    switch (ch) {
    case 'h': c->help = true; return 1;
    case 'j': *to_stdout = true; return 1;
    case 'J': *file = optarg; return 1;
    case 'C': c->cluster = optarg; return 1;
    default: return 0;
    }
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

static enum fb_status finish_common(int argc, char **argv, const char *mode,
                                    struct common_opts *c, bool to_stdout, const char *file,
                                    bool (*known)(const char *), struct fb_err *err)
{
    if (to_stdout && file)
        return fb_fail(err, FB_ERR_USAGE, "--json and -J FILE are exclusive; pick one");
    c->json_path = to_stdout ? "-" : file;
    for (int i = optind; i < argc; i++) {
        if (!known(argv[i])) {
            char names[512];
            check_names(mode, names, sizeof names);
            return fb_fail(err, FB_ERR_USAGE, "unknown %s check '%s'; known: %s", mode, argv[i],
                           names);
        }
        bool dup = false;
        for (size_t k = 0; k < c->nnamed; k++)
            dup |= strcmp(c->named[k], argv[i]) == 0;
        if (!dup && c->nnamed < MAX_NAMED)
            c->named[c->nnamed++] = argv[i];
    }
    return FB_OK;
}

static bool known_node(const char *name) { return fb_node_check_find(name) != NULL; }
static bool known_cluster(const char *name) { return fb_cluster_check_find(name) != NULL; }

static enum fb_status bad_option(int ch, char **argv, const char *mode, struct fb_err *err)
{
    if (ch == ':')
        return fb_fail(err, FB_ERR_USAGE, "option %s needs a value; see fabric-doctor --help",
                       argv[optind - 1]);
    return fb_fail(err, FB_ERR_USAGE, "unknown option '%s' for fabric-doctor %s; see "
                                      "fabric-doctor --help", argv[optind - 1], mode);
}

static enum fb_status parse_node(int argc, char **argv, struct node_opts *o, struct fb_err *err)
{
    static const struct option longopts[] = {
        {"root", required_argument, 0, 'r'},  {"pid", required_argument, 0, 'p'},
        {"fabric", required_argument, 0, 'f'}, {"topology", required_argument, 0, 't'},
        {"json", no_argument, 0, 'j'},         {"cluster", required_argument, 0, 'C'},
        {"help", no_argument, 0, 'h'},         {0, 0, 0, 0},
    };
    memset(o, 0, sizeof *o);
    o->root = "";
    bool to_stdout = false;
    const char *file = NULL;
    int ch;
    while ((ch = getopt_long(argc, argv, ":J:h", longopts, NULL)) != -1) {
        if (common_opt(ch, &o->c, &to_stdout, &file))
            continue;
        switch (ch) {
        case 'r': o->root = optarg; break;
        case 'p': o->pid = optarg; break;
        case 't': o->topology = optarg; break;
        case 'f':
            if (strcmp(optarg, "auto") == 0)
                o->fabric = FB_FABRIC_AUTO;
            else if (strcmp(optarg, "rdma") == 0)
                o->fabric = FB_FABRIC_RDMA;
            else if (strcmp(optarg, "tcpxo") == 0)
                o->fabric = FB_FABRIC_TCPXO;
            else
                return fb_fail(err, FB_ERR_USAGE, "--fabric '%s': use auto, rdma or tcpxo", optarg);
            break;
        default:
            return bad_option(ch, argv, "node", err);
        }
    }
    if (o->pid) {
        long pid = 0;
        enum fb_status st = fb_parse_int(o->pid, "--pid", 1, 1L << 30, &pid, err);
        if (st != FB_OK)
            return st;
    }
    return finish_common(argc, argv, "node", &o->c, to_stdout, file, known_node, err);
}

static enum fb_status parse_cluster(int argc, char **argv, struct cluster_opts *o,
                                    struct fb_err *err)
{
    static const struct option longopts[] = {
        {"from", required_argument, 0, 'F'},    {"kubectl", required_argument, 0, 'k'},
        {"context", required_argument, 0, 'x'}, {"timeout", required_argument, 0, 'T'},
        {"save", required_argument, 0, 's'},    {"pair", required_argument, 0, 'P'},
        {"json", no_argument, 0, 'j'},          {"cluster", required_argument, 0, 'C'},
        {"help", no_argument, 0, 'h'},          {0, 0, 0, 0},
    };
    memset(o, 0, sizeof *o);
    o->kubectl.path = "kubectl";
    o->kubectl.timeout_s = 30;
    bool to_stdout = false;
    const char *file = NULL;
    int ch;
    while ((ch = getopt_long(argc, argv, ":J:h", longopts, NULL)) != -1) {
        if (common_opt(ch, &o->c, &to_stdout, &file))
            continue;
        switch (ch) {
        case 'F': o->from = optarg; break;
        case 'k': o->kubectl.path = optarg; break;
        case 'x': o->kubectl.context = optarg; break;
        case 's': o->save = optarg; break;
        case 'T': {
            long t = 0;
            enum fb_status st = fb_parse_int(optarg, "--timeout", 1, 3600, &t, err);
            if (st != FB_OK)
                return st;
            o->kubectl.timeout_s = (int)t;
            break;
        }
        case 'P':
            if (o->npairs == FB_PAIRS_MAX)
                return fb_fail(err, FB_ERR_USAGE, "at most %d --pair options", FB_PAIRS_MAX);
            o->pairs[o->npairs++] = optarg;
            break;
        default:
            return bad_option(ch, argv, "cluster", err);
        }
    }
    return finish_common(argc, argv, "cluster", &o->c, to_stdout, file, known_cluster, err);
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

static enum fb_status run_node(int argc, char **argv, const char *argv0, struct fb_err *err)
{
    struct node_opts o;
    enum fb_status st = parse_node(argc, argv, &o, err);
    if (st != FB_OK || o.c.help) {
        if (st == FB_OK)
            usage(stdout);
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
    fb_node_resolve_fabric(&ctx, o.fabric);

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
    st = emit(&list, &o.c, argv0, err);
    free(checks);
    free(environ_block);
    if (have_topo)
        fb_topo_free(&topo);
    return st;
}

static enum fb_status run_cluster(int argc, char **argv, const char *argv0,
                                  struct fb_err *err)
{
    struct cluster_opts o;
    enum fb_status st = parse_cluster(argc, argv, &o, err);
    if (st != FB_OK || o.c.help) {
        if (st == FB_OK)
            usage(stdout);
        return st;
    }
    size_t ndefs = 0;
    const struct fb_cluster_check_def *defs = fb_cluster_checks(&ndefs);
    unsigned need = 0;
    for (size_t i = 0; i < ndefs; i++)
        if (selected(&o.c, defs[i].name))
            need |= defs[i].needs;

    struct fb_kube_data data;
    st = o.from ? fb_kube_from_dir(o.from, need, &data, err)
                : fb_kube_from_kubectl(&o.kubectl, need, &data, err);
    if (st != FB_OK)
        return st;
    if (o.save)
        st = fb_kube_save(o.save, &data, err);
    struct fb_cluster_ctx ctx;
    fb_cluster_ctx_init(&ctx, &data);
    for (size_t i = 0; st == FB_OK && i < o.npairs; i++)
        st = fb_cluster_add_pair(&ctx, o.pairs[i], err);
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
        defs[i].run(&ctx, &checks[n++]);
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
    st = emit(&list, &o.c, argv0, err);
    free(checks);
    fb_kube_free(&data);
    return st;
}

int main(int argc, char **argv)
{
    struct fb_err err = {FB_OK, ""};
    enum fb_status st;
    const char *mode = argc > 1 ? argv[1] : "";
    opterr = 0;
    if (strcmp(mode, "--help") == 0 || strcmp(mode, "-h") == 0 || strcmp(mode, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(mode, "list") == 0) {
        list_checks(stdout);
        return 0;
    }
    /* The mode is argv[1]; options and check names follow it. */
    if (strcmp(mode, "node") == 0)
        st = run_node(argc - 1, argv + 1, argv[0], &err);
    else if (strcmp(mode, "cluster") == 0)
        st = run_cluster(argc - 1, argv + 1, argv[0], &err);
    else
        st = fb_fail(&err, FB_ERR_USAGE, "%s%s%s: say fabric-doctor node, cluster or list (see "
                                         "--help)", mode[0] ? "unknown mode '" : "no mode given",
                     mode, mode[0] ? "'" : "");
    if (err.code != FB_OK)
        fprintf(stderr, "fabric-doctor: %s\n", err.msg);
    return (int)st;
}
