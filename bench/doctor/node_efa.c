/* AWS EFA as NCCL reaches it: the EFA devices, the instance family (does
 * its EFA do RDMA?), the OFI plugin library NCCL must load, and the
 * settings that keep NCCL and libfabric on EFA. Each of them can send NCCL
 * to TCP sockets alone, so every finding is kept and the worst decides. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor/efa.h"
#include "doctor/node.h"
#include "core/rootfs.h"
#include "core/text.h"

#define FINDINGS_MAX 8
#define FINDING_MAX 512
#define DIRS_MAX 48
#define DIR_MAX 256

struct finding {
    enum fb_check_outcome v;
    char culprit[FB_CHECK_CULPRIT_LEN]; /* the variable or file at fault */
    char text[FINDING_MAX];
    char fix[FINDING_MAX];
};

struct findings {
    size_t n;
    struct finding f[FINDINGS_MAX];
};

static void add(struct findings *fs, enum fb_check_outcome v, const char *culprit,
                const char *fix, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void add(struct findings *fs, enum fb_check_outcome v, const char *culprit,
                const char *fix, const char *fmt, ...)
{
    if (fs->n == FINDINGS_MAX)
        return;
    struct finding *f = &fs->f[fs->n++];
    f->v = v;
    snprintf(f->culprit, sizeof f->culprit, "%s", culprit);
    snprintf(f->fix, sizeof f->fix, "%s", fix);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->text, sizeof f->text, fmt, ap);
    va_end(ap);
}

/* What is right, for the evidence of a pass and after any finding. */
struct facts {
    char text[FB_CHECK_TEXT_MAX];
    size_t used;
};

static void fact(struct facts *ft, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fact(struct facts *ft, const char *fmt, ...)
{
    char one[FB_CHECK_TEXT_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(one, sizeof one, fmt, ap);
    va_end(ap);
    fb_strbuf_append(ft->text, sizeof ft->text, &ft->used, "%s%s", ft->used ? "; " : "", one);
}

/* Blanks off both ends, in place. */
static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        s[--n] = '\0';
    return s;
}

/* ---- the instance ---- */

struct instance {
    char type[64];   /* "p5.48xlarge", or "" when unknown */
    char family[32]; /* "p5" */
    bool rdma;       /* the family's EFA does RDMA read/write */
};

/* EC2 writes the instance type into DMI product_name; /sys/class/dmi/id
 * links to the same directory, and a copied tree may hold only that one. */
static void read_instance(const char *root, struct instance *in)
{
    static const char *const paths[] = {"/sys/devices/virtual/dmi/id/product_name",
                                        "/sys/class/dmi/id/product_name"};
    memset(in, 0, sizeof *in);
    char line[128];
    struct fb_err ignored = {FB_OK, ""};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        if (fb_rootfs_read_line(root, paths[i], line, sizeof line, &ignored) != FB_OK)
            continue;
        const char *type = trim(line);
        if (fb_efa_instance_family(type, in->family, sizeof in->family)) {
            snprintf(in->type, sizeof in->type, "%s", type);
            in->rdma = fb_efa_family_has_rdma(in->family);
        }
        return;
    }
}

/* ---- where NCCL's dlopen looks for the plugin ---- */

struct lib_dirs {
    size_t n;
    struct {
        char path[DIR_MAX];
        bool loader; /* dlopen searches it; else only a known install place */
    } d[DIRS_MAX];
};

static void add_dir(struct lib_dirs *ds, const char *path, size_t len, bool loader)
{
    while (len > 1 && path[len - 1] == '/')
        len--;
    if (len == 0 || path[0] != '/' || len >= DIR_MAX || ds->n == DIRS_MAX)
        return;
    for (size_t i = 0; i < ds->n; i++)
        if (strlen(ds->d[i].path) == len && strncmp(ds->d[i].path, path, len) == 0)
            return;
    fb_copy(ds->d[ds->n].path, DIR_MAX, path, len);
    ds->d[ds->n++].loader = loader;
}

static void dirs_from_search_path(struct lib_dirs *ds, const char *list)
{
    for (const char *p = list; p && *p;) {
        size_t n = strcspn(p, ":");
        add_dir(ds, p, n, true);
        p += n;
        if (*p == ':')
            p++;
    }
}

/* Directory lines of an ld.so.conf file ("include" lines are the conf.d
 * files, read on their own; comments after '#'). */
static void dirs_from_ld_conf(struct lib_dirs *ds, const char *root, const char *file)
{
    char *text = NULL;
    struct fb_err ignored = {FB_OK, ""};
    if (fb_rootfs_read(root, file, &text, &ignored) != FB_OK)
        return;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        line[strcspn(line, "#")] = '\0';
        const char *dir = trim(line);
        add_dir(ds, dir, strlen(dir), true);
    }
    free(text);
}

static void dirs_from_ld_conf_d(struct lib_dirs *ds, const char *root)
{
    char **names = NULL;
    size_t n = 0;
    struct fb_err ignored = {FB_OK, ""};
    if (fb_rootfs_list(root, "/etc/ld.so.conf.d", &names, &n, &ignored) != FB_OK)
        return;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(names[i]);
        if (len <= 5 || strcmp(names[i] + len - 5, ".conf") != 0)
            continue;
        char path[FB_ROOTFS_PATH_MAX];
        snprintf(path, sizeof path, "/etc/ld.so.conf.d/%s", names[i]);
        dirs_from_ld_conf(ds, root, path);
    }
    fb_rootfs_free_list(names, n);
}

/* dlopen's order: LD_LIBRARY_PATH, the ld.so.conf directories (the loader's
 * cache), the default ones; then where aws-ofi-nccl installs itself, which
 * the loader knows only through one of those. */
static void collect_dirs(const struct fb_node_ctx *ctx, struct lib_dirs *ds)
{
    static const char *const defaults[] = {"/lib64", "/usr/lib64", "/lib", "/usr/lib"};
    static const char *const installs[] = {
        "/opt/amazon/ofi-nccl/lib",
        "/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu",
        "/opt/amazon/ofi-nccl/lib/aarch64-linux-gnu",
        "/opt/amazon/ofi-nccl/lib64",
        "/opt/aws-ofi-nccl/lib",
    };
    memset(ds, 0, sizeof *ds);
    dirs_from_search_path(ds, ctx->env.ld_library_path);
    dirs_from_ld_conf(ds, ctx->root, "/etc/ld.so.conf");
    dirs_from_ld_conf_d(ds, ctx->root);
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
        add_dir(ds, defaults[i], strlen(defaults[i]), true);
    for (size_t i = 0; i < sizeof installs / sizeof installs[0]; i++)
        add_dir(ds, installs[i], strlen(installs[i]), false);
}

struct found {
    bool any;
    bool loader;
    char dir[DIR_MAX];
    char path[FB_ROOTFS_PATH_MAX];
};

/* The first directory holding `file`, one dlopen searches before the rest. */
static void find_lib(const struct fb_node_ctx *ctx, const struct lib_dirs *ds, const char *file,
                     struct found *out)
{
    memset(out, 0, sizeof *out);
    for (int pass = 0; pass < 2 && !out->any; pass++) {
        for (size_t i = 0; i < ds->n && !out->any; i++) {
            if (ds->d[i].loader != (pass == 0))
                continue;
            snprintf(out->path, sizeof out->path, "%s/%s", ds->d[i].path, file);
            if (!fb_rootfs_exists(ctx->root, out->path))
                continue;
            out->any = true;
            out->loader = ds->d[i].loader;
            snprintf(out->dir, sizeof out->dir, "%s", ds->d[i].path);
        }
    }
}

/* ---- the judgements ---- */

#define FIX_PLUGIN_VAR \
    "unset NCCL_NET_PLUGIN (NCCL then loads libnccl-net.so), or NCCL_NET_PLUGIN=ofi"

static void judge_found(const struct found *f, const char *via, struct findings *fs,
                        struct facts *ft)
{
    if (f->loader) {
        fact(ft, "plugin %s%s", f->path, via);
        return;
    }
    char fix[FINDING_MAX];
    snprintf(fix, sizeof fix, "export LD_LIBRARY_PATH=%s:$LD_LIBRARY_PATH (or list it in "
                              "/etc/ld.so.conf.d/ and run ldconfig)", f->dir);
    add(fs, FB_CHECK_WARN, f->path, fix,
        "%s is in %s, which neither LD_LIBRARY_PATH nor ld.so.conf lists: NCCL's dlopen will not "
        "find it", f->path, f->dir);
}

/* NCCL_NET_PLUGIN unset: NCCL loads libnccl-net.so alone, so a plugin
 * installed only as libnccl-net-ofi.so is missed. */
static bool judge_other_names(const struct fb_node_ctx *ctx, const struct lib_dirs *ds,
                              struct findings *fs)
{
    for (size_t i = 1; fb_efa_plugin_name(i) != NULL; i++) {
        const char *name = fb_efa_plugin_name(i);
        struct found f;
        find_lib(ctx, ds, name, &f);
        if (!f.any)
            continue;
        /* "libnccl-net-ofi.so" is NCCL_NET_PLUGIN=ofi */
        char fix[FINDING_MAX];
        int suffix = (int)(strlen(name) - strlen("libnccl-net-") - strlen(".so"));
        snprintf(fix, sizeof fix, "NCCL_NET_PLUGIN=%.*s%s", suffix, name + strlen("libnccl-net-"),
                 f.loader ? "" : ", and its directory in LD_LIBRARY_PATH");
        add(fs, FB_CHECK_WARN, "NCCL_NET_PLUGIN", fix,
            "no libnccl-net.so, only %s: NCCL loads libnccl-net.so while NCCL_NET_PLUGIN is "
            "unset", f.path);
        return true;
    }
    return false;
}

static void judge_plugin(const struct fb_node_ctx *ctx, struct findings *fs, struct facts *ft)
{
    const char *var = ctx->env.nccl_net_plugin;
    char file[FB_ROOTFS_PATH_MAX];
    enum fb_efa_plugin kind = fb_efa_plugin_wanted(var, file, sizeof file);
    if (kind == FB_EFA_PLUGIN_NONE) {
        add(fs, FB_CHECK_FAIL, "NCCL_NET_PLUGIN", FIX_PLUGIN_VAR,
            "NCCL_NET_PLUGIN=%s: NCCL loads no network plugin and runs over TCP sockets", var);
        return;
    }
    if (!fb_efa_plugin_is_ofi(file)) {
        add(fs, FB_CHECK_FAIL, "NCCL_NET_PLUGIN", FIX_PLUGIN_VAR,
            "NCCL_NET_PLUGIN=%s loads %s, not the OFI plugin: NCCL does not reach EFA", var,
            file);
        return;
    }
    if (kind == FB_EFA_PLUGIN_PATH) {
        if (fb_rootfs_exists(ctx->root, file))
            fact(ft, "plugin %s (NCCL_NET_PLUGIN)", file);
        else
            add(fs, FB_CHECK_FAIL, "NCCL_NET_PLUGIN",
                "point NCCL_NET_PLUGIN at the installed plugin, or unset it",
                "NCCL_NET_PLUGIN=%s: no such file", file);
        return;
    }
    struct lib_dirs ds;
    collect_dirs(ctx, &ds);
    struct found f;
    find_lib(ctx, &ds, file, &f);
    if (f.any) {
        judge_found(&f, kind == FB_EFA_PLUGIN_FILE ? " (NCCL_NET_PLUGIN)" : "", fs, ft);
        return;
    }
    if (kind == FB_EFA_PLUGIN_DEFAULT && judge_other_names(ctx, &ds, fs))
        return;
    add(fs, FB_CHECK_FAIL, file,
        "install aws-ofi-nccl (the EFA installer puts it in /opt/amazon/ofi-nccl; in a container, "
        "use an image that has it) and add its lib directory to LD_LIBRARY_PATH",
        "no NCCL OFI plugin: %s is in no LD_LIBRARY_PATH or ld.so.conf directory, nor in "
        "/opt/amazon/ofi-nccl or /opt/aws-ofi-nccl: NCCL runs over TCP sockets", file);
}

static void judge_provider(const struct fb_node_ctx *ctx, struct findings *fs, struct facts *ft)
{
    const char *v = ctx->env.fi_provider;
    if (!fb_efa_fi_provider_ok(v)) {
        add(fs, FB_CHECK_FAIL, "FI_PROVIDER", "unset FI_PROVIDER, or set FI_PROVIDER=efa",
            "FI_PROVIDER=%s keeps libfabric off EFA: the OFI plugin gets that provider or none",
            v);
        return;
    }
    fact(ft, "FI_PROVIDER %s", v && v[0] ? v : "unset");
}

static void judge_nccl_net(const struct fb_node_ctx *ctx, struct findings *fs)
{
    if (fb_efa_nccl_net_kind(ctx->env.nccl_net) != FB_EFA_NET_OTHER)
        return;
    add(fs, FB_CHECK_FAIL, "NCCL_NET",
        "unset NCCL_NET (NCCL then uses the OFI plugin it loaded), or give the plugin's name "
        "(NCCL_NET='AWS Libfabric', 'Libfabric' or 'OFI', as its version calls itself)",
        "NCCL_NET=%s is not the OFI plugin's network: NCCL will not use EFA",
        ctx->env.nccl_net);
}

static void judge_device_rdma(const struct fb_node_ctx *ctx, const struct instance *in,
                              struct findings *fs, struct facts *ft)
{
    const char *v = ctx->env.efa_device_rdma;
    if (v != NULL && v[0] == '\0')
        v = NULL; /* set but empty reads as unset */
    if (!in->rdma) {
        char families[256];
        fb_efa_rdma_families(families, sizeof families);
        fact(ft, "instance %s: FI_EFA_USE_DEVICE_RDMA not judged (RDMA families: %s)",
             in->type[0] ? in->type : "unknown", families);
        return;
    }
    if (fb_efa_flag_on(v)) {
        fact(ft, "instance %s (EFA with RDMA), FI_EFA_USE_DEVICE_RDMA=%s", in->type, v);
        return;
    }
    add(fs, FB_CHECK_WARN, "FI_EFA_USE_DEVICE_RDMA",
        "set FI_EFA_USE_DEVICE_RDMA=1 in the workload environment",
        "FI_EFA_USE_DEVICE_RDMA %s%s on %s, whose EFA does RDMA: GPUDirect RDMA may be off and "
        "GPU data copied through host memory", v ? "is " : "unset", v ? v : "", in->type);
}

static void judge_proto(const struct fb_node_ctx *ctx, struct findings *fs)
{
    if (!fb_efa_proto_excludes_simple(ctx->env.nccl_proto))
        return;
    add(fs, FB_CHECK_WARN, "NCCL_PROTO",
        "unset NCCL_PROTO, or keep Simple in it (NCCL_PROTO=simple is the long-standing EFA "
        "advice)",
        "NCCL_PROTO=%s leaves out Simple, the protocol the OFI plugin over EFA is run with",
        ctx->env.nccl_proto);
}

/* "4 EFA devices (rdmap16s27, rdmap32s27, rdmap48s27, rdmap64s27)", at
 * most four named. */
static void device_fact(const struct fb_efa_devices *d, struct facts *ft)
{
    char names[320];
    size_t used = 0;
    names[0] = '\0';
    for (size_t i = 0; i < d->n && i < 4; i++)
        fb_strbuf_append(names, sizeof names, &used, "%s%s", i ? ", " : "", d->name[i]);
    fact(ft, "%zu EFA device%s (%s%s)", d->n, d->n == 1 ? "" : "s", names,
         d->n > 4 ? ", ..." : "");
}

/* Failures first, then warnings, each with its fix; the facts last. */
static void report(const struct findings *fs, const struct facts *ft, struct fb_check *c)
{
    char text[FB_CHECK_TEXT_MAX], fix[FB_CHECK_TEXT_MAX];
    size_t tu = 0, fu = 0;
    enum fb_check_outcome worst = FB_CHECK_OK;
    text[0] = fix[0] = '\0';
    for (int v = FB_CHECK_FAIL; v >= FB_CHECK_WARN; v--) {
        for (size_t i = 0; i < fs->n; i++) {
            const struct finding *f = &fs->f[i];
            if ((int)f->v != v)
                continue;
            worst = f->v > worst ? f->v : worst;
            fb_strbuf_append(text, sizeof text, &tu, "%s%s", tu ? "; " : "", f->text);
            fb_strbuf_append(fix, sizeof fix, &fu, "%s%s", fu ? "; " : "", f->fix);
            fb_check_culprit(c, "%s", f->culprit);
        }
    }
    if (worst == FB_CHECK_OK) {
        fb_check_set(c, FB_CHECK_OK, "%s", ft->text);
        return;
    }
    fb_check_set(c, worst, "%s", text);
    fb_check_note(c, "%s", ft->text);
    fb_check_fix(c, "%s", fix);
}

void fb_node_check_efa(const struct fb_node_ctx *ctx, struct fb_check *c)
{
    struct fb_efa_devices devs;
    struct fb_err err = {FB_OK, ""};
    if (fb_check_fails_on(c, fb_efa_scan(ctx->root, &devs, &err), &err))
        return;
    struct instance in;
    read_instance(ctx->root, &in);
    if (devs.n == 0) {
        fb_check_set(c, FB_CHECK_SKIP, "no EFA devices: not an EFA node");
        if (in.rdma)
            fb_check_note(c, "but %s has EFA: in a pod, request vpc.amazonaws.com/efa (see "
                             "rdma-devices)", in.type);
        return;
    }
    struct findings fs = {0};
    struct facts ft = {{0}, 0};
    device_fact(&devs, &ft);
    judge_provider(ctx, &fs, &ft);
    judge_nccl_net(ctx, &fs);
    judge_plugin(ctx, &fs, &ft);
    judge_device_rdma(ctx, &in, &fs, &ft);
    judge_proto(ctx, &fs);
    report(&fs, &ft, c);
}
