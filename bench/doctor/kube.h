/* The cluster state fabric-doctor judges: kubectl lists, read from files
 * saved earlier (`--from DIR`) or fetched by running kubectl.
 *
 *   networks.json                kubectl get networks.networking.gke.io -o json
 *   nodes.json                   kubectl get nodes -o json
 *   pods.json                    kubectl get pods -A -o json
 *   daemonsets.json              kubectl get daemonsets -A -o json
 *   sriovnetworknodestates.json  kubectl get sriovnetworknodestates.sriovnetwork.openshift.io -A -o json
 *   nicclusterpolicies.json      kubectl get nicclusterpolicies.mellanox.com -o json
 *   netattachdefs.json           kubectl get network-attachment-definitions.k8s.cni.cncf.io -A -o json
 *
 * Lists of custom resources a cluster may not serve (the CRD absent) read
 * as empty with a note; so do the lists a saved directory lacks (a save
 * from an older fabric-doctor, or one made by hand). Such a list is
 * "unsaved": the checks that need one of the first three skip, naming the
 * command that saves it, and --save never writes it. Only a directory
 * that holds none of the first three lists a run needs is an error.
 *
 * A pods list saved by hand may hold one namespace's pods (kubectl get
 * pods without -A) or none at all: fb_kube_pods_partial says so, for the
 * checks whose verdict rests on pods of other namespaces.
 *
 * Beside the lists, the logs of the GKE RxDM sidecars (FB_KUBE_LOGS: every
 * running pod's tcpxo-daemon or tcpx-daemon container, or one running a
 * tcpgpudmarxd image): `kubectl logs -n NS POD -c CONTAINER --tail=2000`,
 * read from and saved to DIR/logs/NS.POD.CONTAINER.log. A log that could
 * not be had is absent, with the reason (fb_kube_log_error), never an
 * error of the whole run. */
#ifndef FB_DOCTOR_KUBE_H
#define FB_DOCTOR_KUBE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

/* One bit per list; a check names the lists it needs. */
enum fb_kube_list {
    FB_KUBE_NETWORKS = 1 << 0,
    FB_KUBE_NODES = 1 << 1,
    FB_KUBE_PODS = 1 << 2,
    FB_KUBE_DAEMONSETS = 1 << 3,
    FB_KUBE_SRIOV_STATES = 1 << 4,
    FB_KUBE_NIC_POLICIES = 1 << 5,
    FB_KUBE_NADS = 1 << 6,
};
#define FB_KUBE_NLISTS 7
/* Not a list: the sidecars' logs (needs FB_KUBE_PODS to find them). */
#define FB_KUBE_LOGS (1u << 15)

struct fb_kube_data {
    json_object *networks, *nodes, *pods; /* NULL when not asked for */
    json_object *daemonsets, *sriov_states, *nic_policies, *nads;
    /* Per list (bit index): why it is empty, e.g. "... not served by this
     * cluster"; "" when it was read. */
    char notes[FB_KUBE_NLISTS][256];
    /* The lists --from DIR does not hold (FB_KUBE_* bits), and DIR (NULL
     * when the lists came from kubectl). */
    unsigned unsaved;
    const char *dir;
    /* "NS/POD/CONTAINER" -> log text, and -> why it is absent; NULL when
     * FB_KUBE_LOGS was not asked for. */
    json_object *logs, *log_errors;
};

/* The tail of one sidecar's log, or NULL when it was not had. */
const char *fb_kube_log(const struct fb_kube_data *d, const char *ns, const char *pod,
                        const char *container);
/* Why that log is absent ("" when it is there or was never looked for). */
const char *fb_kube_log_error(const struct fb_kube_data *d, const char *ns, const char *pod,
                              const char *container);
/* The RxDM sidecar container of a pod (by name or image), or NULL. */
const char *fb_kube_rxdm_container(json_object *pod);

/* The note for one list ("" when none). */
const char *fb_kube_note(const struct fb_kube_data *d, enum fb_kube_list which);

/* The file of a list in a saved directory ("nodes.json"). */
const char *fb_kube_file(enum fb_kube_list which);

/* The command that saves the whole list where --from reads it:
 * "kubectl get pods -A -o json > DIR/pods.json". */
void fb_kube_save_command(const struct fb_kube_data *d, enum fb_kube_list which, char *buf,
                          size_t len);

/* Whether the pods list, saved in a directory, may lack pods of namespace
 * `ns` (NULL: of any namespace but the one it holds), and why in `why`
 * ("pods.json holds no pod at all", "... pods of namespace bench only",
 * "... no kube-system pod"). A list fetched with kubectl never does: it
 * is read with -A. A list with pods of several namespaces may lack only
 * namespaces asked by name; every cluster runs pods in kube-system. */
bool fb_kube_pods_partial(const struct fb_kube_data *d, const char *ns, char *why, size_t len);

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
