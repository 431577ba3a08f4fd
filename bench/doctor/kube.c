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

#include "core/jsonio.h"

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

enum fb_status fb_kube_from_dir(const char *dir, unsigned need, struct fb_kube_data *d,
                                struct fb_err *err)
{
    memset(d, 0, sizeof *d);
    struct stat sb;
    if (stat(dir, &sb) == 0 && !S_ISDIR(sb.st_mode))
        return fb_fail(err, FB_ERR_INPUT, "--from %s is not a directory; give the directory holding the kubectl lists "
                                          "networks.json, nodes.json and pods.json (cluster --save DIR writes them)", dir);
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
        const struct list_spec *s = &lists[i];
        if (!(need & s->which))
            continue;
        char path[4096], cmd[128];
        snprintf(path, sizeof path, "%s/%s", dir, s->file);
        struct stat st;
        if (stat(path, &st) != 0 && errno == ENOENT && s->optional_file) {
            set_empty(d, s, "not saved in --from DIR");
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
    return FB_OK;
}

enum fb_status fb_kube_save(const char *dir, const struct fb_kube_data *d, struct fb_err *err)
{
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
        json_object *list = *list_of(d, lists[i].which);
        if (list == NULL)
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, lists[i].file);
        enum fb_status st = fb_json_write_atomic_for(path, list, "--save DIR", err);
        if (st != FB_OK)
            return st;
    }
    return FB_OK;
}

void fb_kube_free(struct fb_kube_data *d)
{
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
        json_object **l = slot(d, lists[i].which);
        json_object_put(*l);
        *l = NULL;
    }
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
