/* Network interfaces NCCL is told to use: they must exist and be up, and
 * carry frames large enough for RDMA over Ethernet. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor/devspec.h"
#include "doctor/inventory.h"
#include "doctor/node.h"
#include "core/rootfs.h"

/* RoCE needs a netdev MTU of at least 4200 to run 4096-byte RDMA frames
 * (4096 payload plus RoCE, UDP, IP and Ethernet headers). */
#define ROCE_MIN_MTU 4200

static void check_included(const struct fb_node_ctx *ctx, const struct fb_devspec *spec,
                           char **ifs, size_t nifs, const char *all, struct fb_check *c)
{
    char picked[512];
    size_t used = 0, npicked = 0;
    picked[0] = '\0';
    for (size_t e = 0; e < spec->n; e++) {
        bool matched = false;
        for (size_t i = 0; i < nifs; i++) {
            if (!fb_devspec_entry_matches(spec, e, ifs[i], -1))
                continue;
            matched = true;
            struct fb_inv_netdev nd;
            fb_inv_netdev_read(ctx->root, ifs[i], &nd);
            fb_strbuf_append(picked, sizeof picked, &used, "%s%s (%s, MTU %ld)",
                             npicked++ ? ", " : "", ifs[i],
                             nd.operstate[0] ? nd.operstate : "state unknown", nd.mtu);
            if (strcmp(nd.operstate, "down") == 0) {
                fb_check_set(c, FB_CHECK_WARN, "NCCL_SOCKET_IFNAME selects %s, which is down",
                             ifs[i]);
                fb_check_culprit(c, "%s", ifs[i]);
                fb_check_fix(c, "bring it up (ip link set %s up) or name the interface that "
                                "reaches the other nodes", ifs[i]);
            }
            if (strcmp(ifs[i], "lo") == 0) {
                fb_check_set(c, FB_CHECK_WARN, "NCCL_SOCKET_IFNAME selects lo: other nodes "
                                               "cannot reach a loopback address");
                fb_check_culprit(c, "lo");
                fb_check_fix(c, "name the interface that reaches the other nodes (eth0, "
                                "ib0, ...)");
            }
        }
        if (!matched) {
            fb_check_set(c, FB_CHECK_FAIL, "NCCL_SOCKET_IFNAME entry '%s' matches no interface "
                                           "(have %s): NCCL cannot bootstrap",
                         spec->entry[e].name, all);
            fb_check_culprit(c, "%s", spec->entry[e].name);
            fb_check_fix(c, "name an interface from ip link (prefix match; start with '=' for "
                            "exact names)");
        }
    }
    fb_check_set(c, FB_CHECK_OK, "NCCL_SOCKET_IFNAME='%s' selects %s", ctx->env.socket_ifname,
                 npicked ? picked : "nothing");
}

static void check_excluded(const struct fb_node_ctx *ctx, const struct fb_devspec *spec,
                           char **ifs, size_t nifs, const char *all, struct fb_check *c)
{
    char left[512];
    size_t used = 0, nleft = 0;
    bool lo_left = false;
    left[0] = '\0';
    for (size_t i = 0; i < nifs; i++) {
        if (!fb_devspec_selects(spec, ifs[i], -1))
            continue;
        fb_strbuf_append(left, sizeof left, &used, "%s%s", nleft++ ? ", " : "", ifs[i]);
        lo_left |= strcmp(ifs[i], "lo") == 0;
    }
    if (nleft == 0) {
        fb_check_set(c, FB_CHECK_FAIL, "NCCL_SOCKET_IFNAME='%s' excludes every interface (have "
                                       "%s)", ctx->env.socket_ifname, all);
        fb_check_culprit(c, "NCCL_SOCKET_IFNAME");
        fb_check_fix(c, "exclude less, or name the interface to use");
        return;
    }
    /* NCCL's own default excludes docker* and lo; a user list replaces that
     * default, so "^docker0" leaves loopback as a candidate. */
    if (lo_left) {
        fb_check_set(c, FB_CHECK_WARN, "NCCL_SOCKET_IFNAME='%s' leaves lo selectable (left: "
                                       "%s): NCCL may bind loopback and peers cannot connect",
                     ctx->env.socket_ifname, left);
        fb_check_culprit(c, "lo");
        fb_check_fix(c, "exclude loopback too (NCCL_SOCKET_IFNAME=^docker,lo) or name the "
                        "interface to use");
        return;
    }
    fb_check_set(c, FB_CHECK_OK, "NCCL_SOCKET_IFNAME='%s' leaves %s", ctx->env.socket_ifname,
                 left);
}

/* The interfaces both checks judge; false when sysfs could not be read, and
 * the check has failed saying so. */
static bool list_interfaces(const struct fb_node_ctx *ctx, char ***ifs, size_t *nifs,
                            struct fb_check *c)
{
    struct fb_err err = {FB_OK, ""};
    return !fb_check_fails_on(c, fb_inv_net_list(ctx->root, ifs, nifs, &err), &err);
}

void fb_node_check_socket_ifname(const struct fb_node_ctx *ctx, struct fb_check *c)
{
    char **ifs = NULL;
    size_t nifs = 0;
    if (!list_interfaces(ctx, &ifs, &nifs, c))
        return;
    char all[512];
    fb_join_names((const char *const *)ifs, nifs, "none", all, sizeof all);
    const char *value = ctx->env.socket_ifname;
    if (value == NULL || value[0] == '\0') {
        fb_check_set(c, FB_CHECK_OK, "NCCL_SOCKET_IFNAME unset: NCCL tries ib* first, then any "
                                     "interface but docker* and lo (have %s)", all);
    } else {
        struct fb_devspec spec;
        struct fb_err err = {FB_OK, ""};
        if (fb_check_fails_on(c, fb_devspec_parse(value, "NCCL_SOCKET_IFNAME", &spec, &err),
                              &err)) {
            fb_check_culprit(c, "NCCL_SOCKET_IFNAME");
            fb_check_fix(c, "write it as [^][=]name[,name...], e.g. NCCL_SOCKET_IFNAME=eth0");
        } else if (spec.exclude) {
            check_excluded(ctx, &spec, ifs, nifs, all, c);
        } else {
            check_included(ctx, &spec, ifs, nifs, all, c);
        }
    }
    fb_rootfs_free_list(ifs, nifs);
}

/* One set of interfaces that should agree on MTU. */
struct mtu_set {
    const char *label;
    size_t n;
    struct fb_inv_netdev dev[64];
    bool roce[64];
};

static void set_add(struct mtu_set *s, const char *root, const char *name, bool roce)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->dev[i].name, name) == 0)
            return;
    if (s->n == sizeof s->dev / sizeof s->dev[0])
        return;
    fb_inv_netdev_read(root, name, &s->dev[s->n]);
    s->roce[s->n] = roce;
    if (s->dev[s->n].exists && s->dev[s->n].mtu > 0)
        s->n++;
}

/* Interfaces an include list selects; exclusion lists say nothing definite. */
static void set_from_spec(struct mtu_set *s, const char *root, const char *value, char **ifs,
                          size_t nifs)
{
    struct fb_devspec spec;
    struct fb_err ignored = {FB_OK, ""};
    if (value == NULL || fb_devspec_parse(value, "", &spec, &ignored) != FB_OK || spec.exclude)
        return;
    for (size_t i = 0; i < nifs; i++)
        if (fb_devspec_selects(&spec, ifs[i], -1))
            set_add(s, root, ifs[i], false);
}

/* The most common MTU of a set: the odd ones out are the culprits. */
static long majority_mtu(const struct mtu_set *s)
{
    long best = -1;
    size_t best_count = 0;
    for (size_t i = 0; i < s->n; i++) {
        size_t count = 0;
        for (size_t j = 0; j < s->n; j++)
            count += s->dev[j].mtu == s->dev[i].mtu;
        if (count > best_count || (count == best_count && s->dev[i].mtu > best)) {
            best = s->dev[i].mtu;
            best_count = count;
        }
    }
    return best;
}

static void judge_set(const struct mtu_set *s, struct fb_check *c, char *summary,
                      size_t len, size_t *used)
{
    if (s->n == 0)
        return;
    long common = majority_mtu(s);
    char odd[256];
    size_t ou = 0, nodd = 0;
    odd[0] = '\0';
    for (size_t i = 0; i < s->n; i++) {
        if (s->roce[i] && s->dev[i].mtu < ROCE_MIN_MTU) {
            fb_check_set(c, FB_CHECK_FAIL, "RoCE netdev %s has MTU %ld < %d: RDMA runs with "
                                           "small frames", s->dev[i].name, s->dev[i].mtu,
                         ROCE_MIN_MTU);
            fb_check_culprit(c, "%s", s->dev[i].name);
            fb_check_fix(c, "set MTU 9000 (or 4200/4220 where the fabric uses that) on the "
                            "interface and every switch port on the path");
        }
        if (s->dev[i].mtu != common) {
            fb_strbuf_append(odd, sizeof odd, &ou, "%s%s %ld", nodd++ ? ", " : "",
                             s->dev[i].name, s->dev[i].mtu);
        }
    }
    if (nodd > 0) {
        fb_check_set(c, FB_CHECK_WARN, "MTU differs across %s: most have %ld, but %s", s->label,
                     common, odd);
        for (size_t i = 0; i < s->n; i++)
            if (s->dev[i].mtu != common)
                fb_check_culprit(c, "%s", s->dev[i].name);
        fb_check_fix(c, "make the MTU identical end to end (hosts and switches): a mismatch "
                        "drops large frames or stalls connections");
    }
    fb_strbuf_append(summary, len, used, "%s%s: %zu x %ld%s", *used ? "; " : "", s->label,
                     s->n - nodd, common, nodd ? " (+ odd ones)" : "");
}

void fb_node_check_mtu(const struct fb_node_ctx *ctx, struct fb_check *c)
{
    char **ifs = NULL;
    size_t nifs = 0;
    if (!list_interfaces(ctx, &ifs, &nifs, c))
        return;
    struct fb_inv_rdma *devs = NULL;
    size_t ndevs = 0;
    struct fb_err ignored = {FB_OK, ""};
    if (fb_inv_rdma_scan(ctx->root, &devs, &ndevs, &ignored) != FB_OK)
        ndevs = 0;

    struct mtu_set roce = {.label = "RoCE netdevs"};
    struct mtu_set ipoib = {.label = "IPoIB netdevs"};
    struct mtu_set sock = {.label = "NCCL_SOCKET_IFNAME interfaces"};
    struct mtu_set fastrak = {.label = "NCCL_FASTRAK_IFNAME interfaces"};
    for (size_t i = 0; i < ndevs; i++) {
        bool is_roce = fb_inv_rdma_is_roce(&devs[i]);
        for (size_t k = 0; k < devs[i].nnetdevs; k++)
            set_add(is_roce ? &roce : &ipoib, ctx->root, devs[i].netdev[k], is_roce);
    }
    set_from_spec(&sock, ctx->root, ctx->env.socket_ifname, ifs, nifs);
    set_from_spec(&fastrak, ctx->root, ctx->env.fastrak_ifname, ifs, nifs);
    free(devs);
    fb_rootfs_free_list(ifs, nifs);

    if (roce.n + ipoib.n + sock.n + fastrak.n == 0) {
        fb_check_set(c, FB_CHECK_SKIP, "no RDMA netdev and no interface named by "
                                       "NCCL_SOCKET_IFNAME or NCCL_FASTRAK_IFNAME");
        return;
    }
    char summary[FB_CHECK_TEXT_MAX];
    size_t used = 0;
    summary[0] = '\0';
    const struct mtu_set *sets[] = {&roce, &ipoib, &sock, &fastrak};
    for (size_t i = 0; i < 4; i++)
        judge_set(sets[i], c, summary, sizeof summary, &used);
    fb_check_set(c, FB_CHECK_OK, "%s", summary);
}
