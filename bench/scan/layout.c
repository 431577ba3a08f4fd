#include "scan/layout.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "core/files.h"
#include "core/gather.h"
#include "core/jsonio.h"
#include "core/text.h"

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

/* Rank 0 keeps each node's first rank's $FABRIC_NODE_NAME. */
static enum fb_status gather_node_names(const struct fb_world *w, struct scan_layout *l, struct fb_err *err)
{
    const char *mine = getenv("FABRIC_NODE_NAME");
    char **all = NULL;
    if (fb_gather_strings(w, mine != NULL ? mine : "", &all, err) != FB_OK)
        return err->code;
    if (w->rank != 0)
        return FB_OK;
    l->node_name = calloc((size_t)l->nnodes, sizeof *l->node_name);
    for (int x = 0; x < l->nnodes && l->node_name != NULL; x++) {
        const char *name = all[l->ranks[x * l->per_node]];
        l->node_name[x] = name[0] != '\0' ? strdup(name) : NULL;
    }
    fb_gather_free(w, all);
    return l->node_name != NULL ? FB_OK : fb_fail(err, FB_ERR_MEMORY, "out of memory");
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
