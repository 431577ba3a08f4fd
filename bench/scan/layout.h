/* Nodes as the scan sees them: the job's ranks grouped by host, each node
 * with its ranks in rank order, its Kubernetes node name when the pod was
 * given one ($FABRIC_NODE_NAME, from the downward API) and its rack. */
#ifndef FB_SCAN_LAYOUT_H
#define FB_SCAN_LAYOUT_H

#include <stdbool.h>

#include "core/status.h"
#include "core/world.h"

struct scan_layout {
    int nnodes, per_node;   /* ranks per node: the same on every node */
    const char **host;      /* per node, into the world's host table */
    char **node_name;       /* per node: $FABRIC_NODE_NAME or NULL */
    int *ranks;             /* node x's ranks: ranks[x * per_node + l] */
    int *node_of;           /* per rank: its node */
    int *rack;              /* per node: rack index, or NULL (no topology) */
    char **rack_name;       /* per rack index */
    int nracks;
};

/* Collective: gathers every rank's $FABRIC_NODE_NAME. FB_ERR_LAUNCH when
 * nodes hold different numbers of ranks; on rank 0, what
 * scan_layout_name_nodes refuses. */
enum fb_status scan_layout_build(const struct fb_world *w, struct scan_layout *l, struct fb_err *err);

/* A Kubernetes node name: an RFC 1123 subdomain (lower-case letters,
 * digits, '-' and '.', each dot-separated label starting and ending with a
 * letter or digit), at most 253 characters. */
bool scan_node_name_ok(const char *name);

/* Sets node_name[] of a grouped layout from every rank's FABRIC_NODE_NAME
 * (rank_names[r], "" when unset): the scan's verdicts land on those nodes,
 * so a name that is not a node name is FB_ERR_USAGE, and FB_ERR_LAUNCH when
 * the ranks of one host give different names or two hosts give the same. */
enum fb_status scan_layout_name_nodes(struct scan_layout *l, char *const *rank_names, struct fb_err *err);

/* Reads the rack of each node from FILE: lines "HOST RACK" (blank lines and
 * '#' comments ignored), or a kubectl node list (JSON, `kubectl get nodes
 * -o json`) whose label `rack_label` names the rack; a node is matched by
 * its Kubernetes node name, else its host name. FB_ERR_INPUT naming the
 * file for what it cannot read, or a node it does not place. */
enum fb_status scan_layout_racks(struct scan_layout *l, const char *path, const char *rack_label,
                                 struct fb_err *err);

void scan_layout_free(struct scan_layout *l);

#endif
