#include "scan/layout.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "core/files.h"
#include "core/gather.h"
#include "core/jsonio.h"
#include "core/text.h"

/* Kubernetes' limit on a node name (a DNS subdomain). */
#define NODE_NAME_MAX 253

static int node_of_host(const struct scan_layout *l, const char *host)
{
    for (int x = 0; x < l->nnodes; x++)
        if (strcmp(l->host[x], host) == 0)
            return x;
    return -1;
}

/* Nodes in order of their first rank, so rank 0's host is node 0. */
static enum fb_status group_ranks(const struct fb_world *w, struct scan_layout *l, struct fb_err *err)
{
    int *count = calloc((size_t)w->size, sizeof *count);
    l->host = calloc((size_t)w->size, sizeof *l->host);
    l->ranks = malloc((size_t)w->size * sizeof *l->ranks);
    l->node_of = malloc((size_t)w->size * sizeof *l->node_of);
    if (count == NULL || l->host == NULL || l->ranks == NULL || l->node_of == NULL) {
        free(count);
        return fb_fail(err, FB_ERR_MEMORY, "out of memory for %d ranks", w->size);
    }
    for (int r = 0; r < w->size; r++) {
        int x = node_of_host(l, w->hosts[r]);
        if (x < 0)
            l->host[x = l->nnodes++] = w->hosts[r];
        count[x]++;
    }
    l->per_node = count[0];
    for (int x = 1; x < l->nnodes; x++)
        if (count[x] != l->per_node) {
            enum fb_status st = fb_fail(err, FB_ERR_LAUNCH,
                                        "%s has %d ranks and %s %d: fabric-scan needs the same number on "
                                        "every node (mpirun --map-by ppr:N:node)",
                                        l->host[0], l->per_node, l->host[x], count[x]);
            free(count);
            return st;
        }
    memset(count, 0, (size_t)w->size * sizeof *count);
    for (int r = 0; r < w->size; r++) {
        int x = node_of_host(l, w->hosts[r]);
        l->ranks[x * l->per_node + count[x]++] = r;
        l->node_of[r] = x;
    }
    free(count);
    return FB_OK;
}

static bool lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

bool scan_node_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > NODE_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        bool starts = i == 0 || name[i - 1] == '.', ends = i + 1 == n || name[i + 1] == '.';
        if (name[i] == '.') {
            if (starts || ends) /* an empty label */
                return false;
        } else if (!lower_alnum(name[i]) && (name[i] != '-' || starts || ends)) {
            return false;
        }
    }
    return true;
}

/* A name as a message shows it: bytes outside printable ASCII as '?' (the
 * message stays one line), cut with "..." past the buffer. */
static void shown(const char *s, char *out, size_t len)
{
    fb_ascii_printable(s, out, len);
    if (strlen(s) >= len && len >= 4)
        memcpy(out + len - 4, "...", 4);
}

static enum fb_status check_names_valid(const struct scan_layout *l, char *const *names, struct fb_err *err)
{
    for (int r = 0; r < l->nnodes * l->per_node; r++) {
        if (names[r][0] == '\0' || scan_node_name_ok(names[r]))
            continue;
        char v[80];
        shown(names[r], v, sizeof v);
        return fb_fail(err, FB_ERR_USAGE,
                       "FABRIC_NODE_NAME '%s' (rank %d on %s) is not a Kubernetes node name (an RFC 1123 "
                       "subdomain: lower-case letters, digits, '-' and '.', at most %d characters): set it to the "
                       "pod's spec.nodeName (the downward API), or leave it unset outside Kubernetes",
                       v, r, l->host[l->node_of[r]], NODE_NAME_MAX);
    }
    return FB_OK;
}

/* Every rank of a host runs on that host's node: one name per host. */
static enum fb_status check_hosts_agree(const struct scan_layout *l, char *const *names, struct fb_err *err)
{
    for (int x = 0; x < l->nnodes; x++) {
        int first = l->ranks[x * l->per_node];
        for (int k = 1; k < l->per_node; k++) {
            int r = l->ranks[x * l->per_node + k];
            if (strcmp(names[r], names[first]) == 0)
                continue;
            char a[80], b[80];
            shown(names[first], a, sizeof a);
            shown(names[r], b, sizeof b);
            return fb_fail(err, FB_ERR_LAUNCH,
                           "the ranks of host %s give different FABRIC_NODE_NAMEs ('%s' for rank %d, '%s' for rank "
                           "%d): a host runs on one node; give all its ranks that node's name (spec.nodeName)",
                           l->host[x], a, first, b, r);
        }
    }
    return FB_OK;
}

/* Two hosts under one node name would put two verdicts on one node, the
 * last one winning wherever the results are acted on. */
static enum fb_status check_names_unique(const struct scan_layout *l, char *const *names, struct fb_err *err)
{
    for (int x = 0; x < l->nnodes; x++) {
        const char *nx = names[l->ranks[x * l->per_node]];
        for (int y = x + 1; y < l->nnodes && nx[0] != '\0'; y++) {
            if (strcmp(nx, names[l->ranks[y * l->per_node]]) != 0)
                continue;
            char v[80];
            shown(nx, v, sizeof v);
            return fb_fail(err, FB_ERR_LAUNCH,
                           "hosts %s and %s both give FABRIC_NODE_NAME '%s': the scan would judge one node twice; "
                           "give each pod its own node's name (spec.nodeName) and run one pod per node",
                           l->host[x], l->host[y], v);
        }
    }
    return FB_OK;
}

enum fb_status scan_layout_name_nodes(struct scan_layout *l, char *const *rank_names, struct fb_err *err)
{
    int nnodes = l->nnodes;
    if (nnodes < 1)
        return fb_fail(err, FB_ERR_INTERNAL, "no nodes to name");
    if (check_names_valid(l, rank_names, err) != FB_OK || check_hosts_agree(l, rank_names, err) != FB_OK ||
        check_names_unique(l, rank_names, err) != FB_OK)
        return err->code;
    l->node_name = calloc((size_t)nnodes, sizeof *l->node_name);
    if (l->node_name == NULL)
        return fb_fail(err, FB_ERR_MEMORY, "out of memory");
    for (int x = 0; x < nnodes; x++) {
        const char *name = rank_names[l->ranks[x * l->per_node]];
        if (name[0] != '\0' && (l->node_name[x] = strdup(name)) == NULL)
            return fb_fail(err, FB_ERR_MEMORY, "out of memory");
    }
    return FB_OK;
}

/* Rank 0 names each node after its ranks' $FABRIC_NODE_NAME. */
static enum fb_status gather_node_names(const struct fb_world *w, struct scan_layout *l, struct fb_err *err)
{
    const char *mine = getenv("FABRIC_NODE_NAME");
    char **all = NULL;
    if (fb_gather_strings(w, mine != NULL ? mine : "", &all, err) != FB_OK)
        return err->code;
    if (w->rank != 0)
        return FB_OK;
    enum fb_status st = scan_layout_name_nodes(l, all, err);
    fb_gather_free(w, all);
    return st;
}

enum fb_status scan_layout_build(const struct fb_world *w, struct scan_layout *l, struct fb_err *err)
{
    memset(l, 0, sizeof *l);
    if (group_ranks(w, l, err) != FB_OK)
        return err->code;
    return gather_node_names(w, l, err);
}

static int rack_index(struct scan_layout *l, const char *name)
{
    for (int i = 0; i < l->nracks; i++)
        if (strcmp(l->rack_name[i], name) == 0)
            return i;
    char **grown = realloc(l->rack_name, (size_t)(l->nracks + 1) * sizeof *grown);
    if (grown == NULL)
        return -1;
    l->rack_name = grown;
    if ((l->rack_name[l->nracks] = strdup(name)) == NULL)
        return -1;
    return l->nracks++;
}

/* The node a topology entry names: by Kubernetes node name, else host. */
static int node_named(const struct scan_layout *l, const char *name)
{
    for (int x = 0; x < l->nnodes; x++)
        if (l->node_name != NULL && l->node_name[x] != NULL && strcmp(l->node_name[x], name) == 0)
            return x;
    return node_of_host(l, name);
}

static enum fb_status place(struct scan_layout *l, const char *node, const char *rack, struct fb_err *err)
{
    int x = node_named(l, node);
    if (x < 0)
        return FB_OK; /* a node of the pool this job does not run on */
    int r = rack_index(l, rack);
    if (r < 0)
        return fb_fail(err, FB_ERR_MEMORY, "out of memory");
    l->rack[x] = r;
    return FB_OK;
}

static enum fb_status read_rack_lines(struct scan_layout *l, const char *path, const char *text, size_t len,
                                      struct fb_err *err)
{
    size_t pos = 0;
    char buf[512], *start;
    int lineno = 0;
    while (fb_next_line_copy(text, len, &pos, buf, sizeof buf, &start)) {
        char *tok[3];
        lineno++;
        char *hash = strchr(start, '#');
        if (hash != NULL)
            *hash = '\0';
        int n = fb_tokens(start, tok, 3);
        if (n == 0)
            continue;
        if (n != 2)
            return fb_fail(err, FB_ERR_INPUT, "%s line %d: want 'HOST RACK', got %d words", path, lineno, n);
        if (place(l, tok[0], tok[1], err) != FB_OK)
            return err->code;
    }
    return FB_OK;
}

static enum fb_status read_node_list(struct scan_layout *l, const char *path, json_object *doc,
                                     const char *rack_label, struct fb_err *err)
{
    json_object *items = fb_json_member(doc, "items");
    if (!json_object_is_type(items, json_type_array))
        return fb_fail(err, FB_ERR_INPUT, "%s: not a node list (no items array): give `kubectl get nodes -o json`",
                       path);
    if (rack_label == NULL)
        return fb_fail(err, FB_ERR_USAGE, "%s is a node list: name the label that holds the rack with "
                       "--rack-label KEY", path);
    for (size_t i = 0; i < json_object_array_length(items); i++) {
        json_object *meta = fb_json_member(json_object_array_get_idx(items, i), "metadata");
        const char *name = fb_json_get_string(meta, "name");
        const char *rack = fb_json_get_string(fb_json_member(meta, "labels"), rack_label);
        if (name != NULL && rack != NULL && place(l, name, rack, err) != FB_OK)
            return err->code;
    }
    return FB_OK;
}

static enum fb_status check_placed(const struct scan_layout *l, const char *path, const char *rack_label,
                                   struct fb_err *err)
{
    for (int x = 0; x < l->nnodes; x++)
        if (l->rack[x] < 0)
            return fb_fail(err, FB_ERR_INPUT, "%s does not place %s%s%s%s: add it, or drop --topology", path,
                           l->node_name != NULL && l->node_name[x] != NULL ? l->node_name[x] : l->host[x],
                           rack_label != NULL ? " (no label " : "", rack_label != NULL ? rack_label : "",
                           rack_label != NULL ? ")" : "");
    return FB_OK;
}

enum fb_status scan_layout_racks(struct scan_layout *l, const char *path, const char *rack_label,
                                 struct fb_err *err)
{
    char *text = NULL;
    size_t len = 0;
    json_object *doc = NULL;
    struct fb_json_syntax why;
    enum fb_status st = fb_read_text_file(path, &text, &len, err);
    if (st != FB_OK)
        return st;
    l->rack = malloc((size_t)l->nnodes * sizeof *l->rack);
    if (l->rack == NULL) {
        free(text);
        return fb_fail(err, FB_ERR_MEMORY, "out of memory");
    }
    for (int x = 0; x < l->nnodes; x++)
        l->rack[x] = -1;
    size_t skip = strspn(text, " \t\r\n");
    if (text[skip] == '{')
        st = fb_json_parse_text(path, text, len, &doc, &why, err) == FB_OK
                 ? read_node_list(l, path, doc, rack_label, err)
                 : err->code;
    else
        st = read_rack_lines(l, path, text, len, err);
    json_object_put(doc);
    free(text);
    return st == FB_OK ? check_placed(l, path, rack_label, err) : st;
}

void scan_layout_free(struct scan_layout *l)
{
    for (int x = 0; l->node_name != NULL && x < l->nnodes; x++)
        free(l->node_name[x]);
    for (int i = 0; i < l->nracks; i++)
        free(l->rack_name[i]);
    free(l->node_name);
    free(l->rack_name);
    free(l->host);
    free(l->ranks);
    free(l->node_of);
    free(l->rack);
    memset(l, 0, sizeof *l);
}
