/* The cluster state fabric-doctor judges: three kubectl lists, read from
 * files saved earlier (`--from DIR`) or fetched by running kubectl.
 *
 *   networks.json  kubectl get networks.networking.gke.io -o json
 *   nodes.json     kubectl get nodes -o json
 *   pods.json      kubectl get pods -A -o json */
#ifndef FB_DOCTOR_KUBE_H
#define FB_DOCTOR_KUBE_H

#include <json-c/json.h>

#include "core/status.h"

enum fb_kube_list {
    FB_KUBE_NETWORKS = 1 << 0,
    FB_KUBE_NODES = 1 << 1,
    FB_KUBE_PODS = 1 << 2,
};

struct fb_kube_data {
    json_object *networks, *nodes, *pods; /* NULL when not asked for */
    char networks_note[256]; /* "not served by this cluster" when the CRD is absent */
};

struct fb_kubectl {
    const char *path;    /* "kubectl" (PATH search) or a path */
    const char *context; /* --context, or NULL */
    int timeout_s;       /* whole command, kubectl included */
};

/* Reads the lists in `need` from DIR. A missing file, non-JSON or a
 * document that is not a kubectl list is FB_ERR_INPUT naming the file and
 * the command that produces it. */
enum fb_status fb_kube_from_dir(const char *dir, unsigned need, struct fb_kube_data *d,
                                struct fb_err *err);

/* Runs kubectl for the lists in `need`. No kubectl is FB_ERR_UNAVAIL; a
 * failing one FB_ERR_RUNTIME with its last error line; a hung one
 * FB_ERR_TIMEOUT. A cluster without the Network CRD gives an empty
 * networks list and a note. */
enum fb_status fb_kube_from_kubectl(const struct fb_kubectl *k, unsigned need,
                                    struct fb_kube_data *d, struct fb_err *err);

/* Writes what was fetched to DIR under the names --from reads. */
enum fb_status fb_kube_save(const char *dir, const struct fb_kube_data *d, struct fb_err *err);

void fb_kube_free(struct fb_kube_data *d);

/* The items array of a list (never NULL for a loaded list). */
json_object *fb_kube_items(json_object *list);

/* Fields of Kubernetes objects; NULL when absent. */
const char *fb_kube_name(json_object *obj);
const char *fb_kube_namespace(json_object *obj);
const char *fb_kube_annotation(json_object *obj, const char *key);
const char *fb_kube_label(json_object *obj, const char *key);
json_object *fb_kube_path(json_object *obj, const char *const *keys);

#endif
