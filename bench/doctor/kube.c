#include "doctor/kube.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/files.h"
#include "core/jsonio.h"
#include "core/outfile.h"

struct list_spec {
    enum fb_kube_list which;
    const char *file;
    const char *resource;
    bool all_namespaces;
    bool custom;        /* a CRD the cluster may not serve: empty, with a note */
    bool optional_file; /* absent from a saved directory: empty, with a note */
};

static const struct list_spec lists[] = {
    {FB_KUBE_NETWORKS, "networks.json", "networks.networking.gke.io", false, true, false},
    {FB_KUBE_NODES, "nodes.json", "nodes", false, false, false},
    {FB_KUBE_PODS, "pods.json", "pods", true, false, false},
    {FB_KUBE_DAEMONSETS, "daemonsets.json", "daemonsets", true, false, true},
    {FB_KUBE_SRIOV_STATES, "sriovnetworknodestates.json",
     "sriovnetworknodestates.sriovnetwork.openshift.io", true, true, true},
    {FB_KUBE_NIC_POLICIES, "nicclusterpolicies.json", "nicclusterpolicies.mellanox.com", false,
     true, true},
    {FB_KUBE_NADS, "netattachdefs.json", "network-attachment-definitions.k8s.cni.cncf.io", true,
     true, true},
};
_Static_assert(sizeof lists / sizeof lists[0] == FB_KUBE_NLISTS, "one row per list");

static json_object *const *list_of(const struct fb_kube_data *d, enum fb_kube_list which)
{
    switch (which) {
    case FB_KUBE_NETWORKS: return &d->networks;
    case FB_KUBE_NODES: return &d->nodes;
    case FB_KUBE_PODS: return &d->pods;
    case FB_KUBE_DAEMONSETS: return &d->daemonsets;
    case FB_KUBE_SRIOV_STATES: return &d->sriov_states;
    case FB_KUBE_NIC_POLICIES: return &d->nic_policies;
    case FB_KUBE_NADS: return &d->nads;
    }
    return &d->nodes;
}

/* list_of for filling: d is the caller's to change, so dropping the const
 * list_of adds is sound (as strchr does). */
static json_object **slot(struct fb_kube_data *d, enum fb_kube_list which)
{
    return (json_object **)list_of(d, which);
}

static size_t bit_index(enum fb_kube_list which)
{
    size_t i = 0;
    while (i + 1 < FB_KUBE_NLISTS && !((unsigned)which & (1u << i)))
        i++;
    return i;
}

const char *fb_kube_note(const struct fb_kube_data *d, enum fb_kube_list which)
{
    return d->notes[bit_index(which)];
}

/* An empty list standing for one that could not be had, and why. */
static void set_empty(struct fb_kube_data *d, const struct list_spec *s, const char *why)
{
    snprintf(d->notes[bit_index(s->which)], sizeof d->notes[0], "%s %s", s->resource, why);
    *slot(d, s->which) = json_tokener_parse("{\"items\": []}");
}


static void command_for(const struct list_spec *s, char *buf, size_t len)
{
    snprintf(buf, len, "kubectl get %s%s -o json", s->resource, s->all_namespaces ? " -A" : "");
}

static const struct list_spec *spec_of(enum fb_kube_list which)
{
    return &lists[bit_index(which)];
}

const char *fb_kube_file(enum fb_kube_list which)
{
    return spec_of(which)->file;
}

void fb_kube_save_command(const struct fb_kube_data *d, enum fb_kube_list which, char *buf,
                          size_t len)
{
    const struct list_spec *s = spec_of(which);
    char cmd[160];
    command_for(s, cmd, sizeof cmd);
    snprintf(buf, len, "%s > %s/%s", cmd, d->dir ? d->dir : "DIR", s->file);
}

/* The namespace of every pod when they share one; "" for none; NULL when
 * the pods are of several. */
static const char *only_namespace(json_object *pods)
{
    const char *only = "";
    for (size_t i = 0; pods && i < json_object_array_length(pods); i++) {
        const char *ns = fb_kube_namespace(json_object_array_get_idx(pods, i));
        if (only[0] != '\0' && strcmp(ns, only) != 0)
            return NULL;
        only = ns;
    }
    return only;
}

static bool holds_namespace(json_object *pods, const char *ns)
{
    for (size_t i = 0; pods && i < json_object_array_length(pods); i++)
        if (strcmp(fb_kube_namespace(json_object_array_get_idx(pods, i)), ns) == 0)
            return true;
    return false;
}

bool fb_kube_pods_partial(const struct fb_kube_data *d, const char *ns, char *why, size_t len)
{
    json_object *pods = fb_kube_items(d->pods);
    if (d->dir == NULL || d->pods == NULL || (d->unsaved & FB_KUBE_PODS))
        return false;
    const char *only = only_namespace(pods);
    if (only != NULL && only[0] == '\0')
        snprintf(why, len, "pods.json holds no pod at all");
    else if (only != NULL && (ns == NULL || strcmp(only, ns) != 0))
        snprintf(why, len, "pods.json holds pods of namespace %s only", only);
    else if (ns != NULL && !holds_namespace(pods, ns))
        snprintf(why, len, "pods.json holds no %s pod", ns);
    else
        return false;
    return true;
}

/* A list has an items array; a single object (kubectl get node X -o json)
 * is accepted as a list of one. */
static enum fb_status as_list(json_object *doc, const char *what, const struct list_spec *s,
                              json_object **out, struct fb_err *err)
{
    json_object *items = NULL;
    char cmd[128];
    command_for(s, cmd, sizeof cmd);
    if (json_object_is_type(doc, json_type_object) &&
        json_object_object_get_ex(doc, "items", &items) &&
        json_object_is_type(items, json_type_array)) {
        *out = doc;
        return FB_OK;
    }
    if (json_object_is_type(doc, json_type_object) && fb_json_get_string(doc, "kind") != NULL &&
        json_object_object_get_ex(doc, "metadata", NULL)) {
        json_object *list = json_object_new_object();
        json_object *arr = json_object_new_array();
        json_object_array_add(arr, doc);
        json_object_object_add(list, "items", arr);
        *out = list;
        return FB_OK;
    }
    enum fb_status st = fb_fail(err, FB_ERR_INPUT, "%s is %s; expected a kubectl list (an items array): produce it with %s",
                                what, fb_json_doc_kind(doc), cmd);
    json_object_put(doc);
    return st;
}


/* ---- the RxDM sidecars' logs ---- */

#define LOG_TAIL "--tail=2000"

static json_object *spec_array(json_object *pod, const char *which)
{
    const char *const keys[] = {"spec", which, NULL};
    json_object *arr = fb_kube_path(pod, keys);
    return arr && json_object_is_type(arr, json_type_array) ? arr : NULL;
}

/* Native sidecars are init containers; older manifests list the daemon
 * among the containers. */
const char *fb_kube_rxdm_container(json_object *pod)
{
    static const char *const which[] = {"initContainers", "containers"};
    for (int w = 0; w < 2; w++) {
        json_object *ctrs = spec_array(pod, which[w]);
        for (size_t i = 0; ctrs && i < json_object_array_length(ctrs); i++) {
            json_object *ctr = json_object_array_get_idx(ctrs, i);
            const char *name = fb_json_get_string(ctr, "name");
            const char *image = fb_json_get_string(ctr, "image");
            if (name && (strcmp(name, "tcpxo-daemon") == 0 || strcmp(name, "tcpx-daemon") == 0))
                return name;
            if (name && image && strstr(image, "tcpgpudmarxd") != NULL)
                return name;
        }
    }
    return NULL;
}

static bool pod_running(json_object *pod)
{
    static const char *const keys[] = {"status", "phase", NULL};
    json_object *phase = fb_kube_path(pod, keys);
    return phase && strcmp(json_object_get_string(phase), "Running") == 0;
}

static void log_key(const char *ns, const char *pod, const char *ctr, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s/%s", ns, pod, ctr);
}

/* DIR/logs/NS.POD.CONTAINER.log, where --save writes and --from reads. */
static void log_file(const char *dir, const char *ns, const char *pod, const char *ctr,
                     char *buf, size_t len)
{
    snprintf(buf, len, "%s/logs/%s.%s.%s.log", dir, ns, pod, ctr);
}

static void log_put(json_object *map, const char *key, const char *text)
{
    json_object_object_add(map, key, json_object_new_string(text));
}

static void logs_init(struct fb_kube_data *d)
{
    d->logs = json_object_new_object();
    d->log_errors = json_object_new_object();
}

/* Calls visit for every running pod with an RxDM sidecar. */
static void each_rxdm_pod(const struct fb_kube_data *d,
                          void (*visit)(json_object *pod, const char *ctr, void *arg), void *arg)
{
    json_object *items = fb_kube_items(d->pods);
    for (size_t i = 0; items && i < json_object_array_length(items); i++) {
        json_object *pod = json_object_array_get_idx(items, i);
        const char *ctr = fb_kube_rxdm_container(pod);
        if (ctr && pod_running(pod))
            visit(pod, ctr, arg);
    }
}

struct dir_visit {
    const char *dir;
    struct fb_kube_data *d;
};

static void read_one_log(json_object *pod, const char *ctr, void *arg)
{
    struct dir_visit *v = arg;
    char path[4096], key[512];
    log_file(v->dir, fb_kube_namespace(pod), fb_kube_name(pod), ctr, path, sizeof path);
    log_key(fb_kube_namespace(pod), fb_kube_name(pod), ctr, key, sizeof key);
    char *text = NULL;
    size_t len = 0;
    struct fb_err err = {FB_OK, ""};
    struct stat st;
    if (stat(path, &st) != 0) {
        log_put(v->d->log_errors, key, "not saved in --from DIR (logs/NS.POD.CONTAINER.log)");
        return;
    }
    if (fb_read_text_file(path, &text, &len, &err) != FB_OK) {
        log_put(v->d->log_errors, key, err.msg);
        return;
    }
    log_put(v->d->logs, key, text);
    free(text);
}

static void logs_from_dir(const char *dir, struct fb_kube_data *d)
{
    logs_init(d);
    struct dir_visit v = {dir, d};
    each_rxdm_pod(d, read_one_log, &v);
}

static const char *map_get(json_object *map, const char *ns, const char *pod, const char *ctr)
{
    char key[512];
    json_object *v = NULL;
    log_key(ns, pod, ctr, key, sizeof key);
    return map && json_object_object_get_ex(map, key, &v) ? json_object_get_string(v) : NULL;
}

const char *fb_kube_log(const struct fb_kube_data *d, const char *ns, const char *pod,
                        const char *container)
{
    return map_get(d->logs, ns, pod, container);
}

const char *fb_kube_log_error(const struct fb_kube_data *d, const char *ns, const char *pod,
                              const char *container)
{
    const char *why = map_get(d->log_errors, ns, pod, container);
    return why ? why : "";
}

/* Whether DIR holds one of the lists a run needs that every save has
 * (networks, nodes, pods): a directory holding none of them is not a
 * saved cluster, or not the one meant. */
static bool holds_a_main_list(const char *dir, unsigned need)
{
    bool needed = false;
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
        char path[4096];
        struct stat st;
        if (!(need & lists[i].which) || lists[i].optional_file)
            continue;
        needed = true;
        snprintf(path, sizeof path, "%s/%s", dir, lists[i].file);
        if (stat(path, &st) == 0 || errno != ENOENT)
            return true;
    }
    return !needed;
}

enum fb_status fb_kube_from_dir(const char *dir, unsigned need, struct fb_kube_data *d,
                                struct fb_err *err)
{
    memset(d, 0, sizeof *d);
    d->dir = dir;
    struct stat sb;
    if (stat(dir, &sb) == 0 && !S_ISDIR(sb.st_mode))
        return fb_fail(err, FB_ERR_INPUT, "--from %s is not a directory; give the directory holding the kubectl lists "
                                          "networks.json, nodes.json and pods.json (cluster --save DIR writes them)", dir);
    bool some = holds_a_main_list(dir, need);
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
        const struct list_spec *s = &lists[i];
        if (!(need & s->which))
            continue;
        char path[4096], cmd[128];
        snprintf(path, sizeof path, "%s/%s", dir, s->file);
        struct stat st;
        if (stat(path, &st) != 0 && errno == ENOENT && (s->optional_file || some)) {
            set_empty(d, s, "not saved in --from DIR");
            d->unsaved |= s->which;
            continue;
        }
        if (stat(path, &st) != 0) {
            command_for(s, cmd, sizeof cmd);
            fb_kube_free(d);
            return fb_fail(err, FB_ERR_INPUT, "cannot read %s: %s; save it with %s > %s", path,
                           strerror(errno), cmd, path);
        }
        json_object *doc = NULL;
        enum fb_status rc = fb_json_read_file(path, &doc, err);
        if (rc == FB_OK)
            rc = as_list(doc, path, s, slot(d, s->which), err);
        if (rc != FB_OK) {
            fb_kube_free(d);
            return rc;
        }
    }
    if (need & FB_KUBE_LOGS)
        logs_from_dir(dir, d);
    return FB_OK;
}

static bool on_path(const char *prog)
{
    if (strchr(prog, '/') != NULL)
        return access(prog, X_OK) == 0;
    const char *path = getenv("PATH");
    if (path == NULL)
        return false;
    char dir[4096];
    for (const char *p = path; *p; ) {
        size_t n = strcspn(p, ":");
        snprintf(dir, sizeof dir, "%.*s/%s", (int)n, p, prog);
        if (n > 0 && access(dir, X_OK) == 0)
            return true;
        p += n;
        if (*p == ':')
            p++;
    }
    return false;
}

struct buf {
    char *data;
    size_t len, cap;
};

/* 1: read some, 0: end of stream, -1: out of memory. */
static int buf_read(struct buf *b, int fd)
{
    if (b->cap - b->len < 4096) {
        size_t cap = b->cap ? b->cap * 2 : 65536;
        char *bigger = realloc(b->data, cap);
        if (bigger == NULL)
            return -1;
        b->data = bigger;
        b->cap = cap;
        b->data[b->len] = '\0'; /* a stream that ends empty still reads as "" */
    }
    ssize_t n;
    do
        n = read(fd, b->data + b->len, b->cap - b->len - 1);
    while (n < 0 && errno == EINTR);
    if (n <= 0)
        return 0;
    b->len += (size_t)n;
    b->data[b->len] = '\0';
    return 1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Runs argv, collecting stdout and stderr, within timeout_s. Returns the
 * exit status (or -1 when killed on timeout). */
static enum fb_status run_capture(char *const argv[], int timeout_s, struct buf *out,
                                  struct buf *errb, int *status, struct fb_err *err)
{
    int po[2], pe[2];
    if (pipe2(po, O_CLOEXEC) != 0)
        return fb_fail(err, FB_ERR_RUNTIME, "pipe: %s", strerror(errno));
    if (pipe2(pe, O_CLOEXEC) != 0) {
        close(po[0]);
        close(po[1]);
        return fb_fail(err, FB_ERR_RUNTIME, "pipe: %s", strerror(errno));
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(po[0]); close(po[1]); close(pe[0]); close(pe[1]);
        return fb_fail(err, FB_ERR_RUNTIME, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        dup2(po[1], STDOUT_FILENO);
        dup2(pe[1], STDERR_FILENO);
        execvp(argv[0], argv);
        dprintf(STDERR_FILENO, "cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    struct pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
    double deadline = now_s() + timeout_s;
    bool timed_out = false, oom = false;
    while (fds[0].fd >= 0 || fds[1].fd >= 0) {
        int left_ms = (int)((deadline - now_s()) * 1000);
        if (left_ms <= 0) {
            timed_out = true;
            break;
        }
        int r = poll(fds, 2, left_ms);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            break;
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || fds[i].revents == 0)
                continue;
            int r2 = buf_read(i == 0 ? out : errb, fds[i].fd);
            if (r2 <= 0) {
                oom |= r2 < 0;
                close(fds[i].fd);
                fds[i].fd = -1;
            }
        }
    }
    for (int i = 0; i < 2; i++)
        if (fds[i].fd >= 0)
            close(fds[i].fd);
    if (timed_out)
        kill(pid, SIGKILL);
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
    }
    if (timed_out)
        return fb_fail(err, FB_ERR_TIMEOUT, "%s did not answer within %d s; check the cluster "
                                            "context (kubectl cluster-info) or use --from DIR",
                       argv[0], timeout_s);
    if (oom)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory reading %s output", argv[0]);
    *status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + (WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
    return FB_OK;
}

/* kubectl logs client-side retries first and sums up on its last line
 * ("The connection to the server ... was refused"): that one is shown. */
static void last_line(const struct buf *b, char *line, size_t len)
{
    const char *text = b->data ? b->data : "";
    const char *end = text + strlen(text);
    while (end > text && (end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\r'))
        end--;
    const char *start = end;
    while (start > text && start[-1] != '\n')
        start--;
    snprintf(line, len, "%.*s", (int)(end - start), start);
}

static enum fb_status fetch_one(const struct fb_kubectl *k, const struct list_spec *s,
                                struct fb_kube_data *d, struct fb_err *err)
{
    char timeout_arg[64];
    snprintf(timeout_arg, sizeof timeout_arg, "--request-timeout=%ds", k->timeout_s);
    char *argv[12];
    int a = 0;
    argv[a++] = (char *)k->path;
    if (k->context != NULL) {
        argv[a++] = (char *)"--context";
        argv[a++] = (char *)k->context;
    }
    argv[a++] = (char *)"get";
    argv[a++] = (char *)s->resource;
    if (s->all_namespaces)
        argv[a++] = (char *)"-A";
    argv[a++] = (char *)"-o";
    argv[a++] = (char *)"json";
    argv[a++] = timeout_arg;
    argv[a] = NULL;

    struct buf out = {0}, errb = {0};
    int status = 0;
    /* kubectl bounds its API calls itself; the extra seconds are for an
     * auth plugin or a kubeconfig prompt that hangs before it gets there. */
    enum fb_status st = run_capture(argv, k->timeout_s + 5, &out, &errb, &status, err);
    char line[512];
    last_line(&errb, line, sizeof line);
    if (st == FB_OK && status != 0) {
        /* A cluster without GKE multi-networking does not serve the CRD:
         * an empty list, not an error. */
        if (s->custom && errb.data &&
            strstr(errb.data, "doesn't have a resource type") != NULL) {
            set_empty(d, s, "not served by this cluster");
        } else {
            char cmd[128];
            command_for(s, cmd, sizeof cmd);
            st = fb_fail(err, FB_ERR_RUNTIME, "%s failed (exit %d): %s", cmd, status,
                         line[0] ? line : "no message");
        }
    } else if (st == FB_OK) {
        enum json_tokener_error jerr = json_tokener_success;
        json_object *doc = json_tokener_parse_verbose(out.data ? out.data : "", &jerr);
        char what[160];
        snprintf(what, sizeof what, "output of kubectl get %s", s->resource);
        if (doc == NULL)
            st = fb_fail(err, FB_ERR_INPUT, "%s is not JSON: %s", what,
                         json_tokener_error_desc(jerr));
        else
            st = as_list(doc, what, s, slot(d, s->which), err);
    }
    free(out.data);
    free(errb.data);
    return st;
}


struct kubectl_visit {
    const struct fb_kubectl *k;
    struct fb_kube_data *d;
};

/* One sidecar's log; a failure is kept as the reason, not returned. */
static void fetch_one_log(json_object *pod, const char *ctr, void *arg)
{
    struct kubectl_visit *v = arg;
    const char *ns = fb_kube_namespace(pod), *name = fb_kube_name(pod);
    char timeout_arg[64], key[512];
    snprintf(timeout_arg, sizeof timeout_arg, "--request-timeout=%ds", v->k->timeout_s);
    log_key(ns, name, ctr, key, sizeof key);
    char *argv[16];
    int a = 0;
    argv[a++] = (char *)v->k->path;
    if (v->k->context != NULL) {
        argv[a++] = (char *)"--context";
        argv[a++] = (char *)v->k->context;
    }
    argv[a++] = (char *)"logs";
    argv[a++] = (char *)"-n";
    argv[a++] = (char *)ns;
    argv[a++] = (char *)name;
    argv[a++] = (char *)"-c";
    argv[a++] = (char *)ctr;
    argv[a++] = (char *)LOG_TAIL;
    argv[a++] = timeout_arg;
    argv[a] = NULL;
    struct buf out = {0}, errb = {0};
    int status = 0;
    struct fb_err err = {FB_OK, ""};
    enum fb_status st = run_capture(argv, v->k->timeout_s + 5, &out, &errb, &status, &err);
    char line[512], why[700];
    last_line(&errb, line, sizeof line);
    if (st != FB_OK) {
        log_put(v->d->log_errors, key, err.msg);
    } else if (status != 0) {
        snprintf(why, sizeof why, "kubectl logs -n %s %s -c %s failed (exit %d): %s", ns, name,
                 ctr, status, line[0] ? line : "no message");
        log_put(v->d->log_errors, key, why);
    } else {
        log_put(v->d->logs, key, out.data ? out.data : "");
    }
    free(out.data);
    free(errb.data);
}

static void logs_from_kubectl(const struct fb_kubectl *k, struct fb_kube_data *d)
{
    logs_init(d);
    struct kubectl_visit v = {k, d};
    each_rxdm_pod(d, fetch_one_log, &v);
}

struct save_visit {
    const char *dir;
    const struct fb_kube_data *d;
    enum fb_status st;
    struct fb_err *err;
};

static void save_one_log(json_object *pod, const char *ctr, void *arg)
{
    struct save_visit *v = arg;
    const char *text = fb_kube_log(v->d, fb_kube_namespace(pod), fb_kube_name(pod), ctr);
    if (text == NULL || v->st != FB_OK)
        return;
    char path[4096];
    log_file(v->dir, fb_kube_namespace(pod), fb_kube_name(pod), ctr, path, sizeof path);
    v->st = fb_make_parent_dirs(path, v->err);
    if (v->st == FB_OK)
        v->st = fb_out_write(path, text, strlen(text), v->err);
    if (v->st != FB_OK)
        fb_out_name_option(v->err, "--save DIR");
}

enum fb_status fb_kube_from_kubectl(const struct fb_kubectl *k, unsigned need,
                                    struct fb_kube_data *d, struct fb_err *err)
{
    memset(d, 0, sizeof *d);
    if (!on_path(k->path))
        return fb_fail(err, FB_ERR_UNAVAIL, "%s not found%s; install kubectl or read saved "
                                            "lists with --from DIR", k->path,
                       strchr(k->path, '/') ? "" : " on PATH");
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
        if (!(need & lists[i].which))
            continue;
        enum fb_status st = fetch_one(k, &lists[i], d, err);
        if (st != FB_OK) {
            fb_kube_free(d);
            return st;
        }
    }
    if (need & FB_KUBE_LOGS)
        logs_from_kubectl(k, d);
    return FB_OK;
}

enum fb_status fb_kube_save(const char *dir, const struct fb_kube_data *d, struct fb_err *err)
{
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
        json_object *list = *list_of(d, lists[i].which);
        /* An unsaved list's empty stand-in would read as the cluster's. */
        if (list == NULL || (d->unsaved & lists[i].which))
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, lists[i].file);
        enum fb_status st = fb_json_write_atomic_for(path, list, "--save DIR", err);
        if (st != FB_OK)
            return st;
    }
    struct save_visit v = {dir, d, FB_OK, err};
    if (d->logs != NULL)
        each_rxdm_pod(d, save_one_log, &v);
    return v.st;
}

void fb_kube_free(struct fb_kube_data *d)
{
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
        json_object **l = slot(d, lists[i].which);
        json_object_put(*l);
        *l = NULL;
    }
    json_object_put(d->logs);
    json_object_put(d->log_errors);
    d->logs = d->log_errors = NULL;
}

json_object *fb_kube_items(json_object *list)
{
    json_object *items = NULL;
    if (list && json_object_object_get_ex(list, "items", &items) &&
        json_object_is_type(items, json_type_array))
        return items;
    return NULL;
}

json_object *fb_kube_path(json_object *obj, const char *const *keys)
{
    for (; obj && *keys; keys++) {
        json_object *next = NULL;
        if (!json_object_is_type(obj, json_type_object) ||
            !json_object_object_get_ex(obj, *keys, &next))
            return NULL;
        obj = next;
    }
    return obj;
}

static const char *string_at(json_object *obj, const char *const *keys)
{
    json_object *v = fb_kube_path(obj, keys);
    return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

const char *fb_kube_name(json_object *obj)
{
    static const char *const keys[] = {"metadata", "name", NULL};
    const char *name = string_at(obj, keys);
    return name ? name : "(unnamed)";
}

const char *fb_kube_namespace(json_object *obj)
{
    static const char *const keys[] = {"metadata", "namespace", NULL};
    const char *ns = string_at(obj, keys);
    return ns ? ns : "default";
}

const char *fb_kube_annotation(json_object *obj, const char *key)
{
    const char *const keys[] = {"metadata", "annotations", key, NULL};
    return string_at(obj, keys);
}

const char *fb_kube_label(json_object *obj, const char *key)
{
    const char *const keys[] = {"metadata", "labels", key, NULL};
    return string_at(obj, keys);
}
