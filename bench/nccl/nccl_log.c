#include "nccl/nccl_log.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sys/stat.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/files.h"
#include "core/jsonio.h"
#include "core/host.h"
#include "core/text.h"

#define NAME_MAX_LEN 48
#define IFACE_MAX_LEN 64
#define NETS_MAX 4
#define LINE_MAX_LEN 4096

enum intra_bit {
    INTRA_P2P = 1u << 0,
    INTRA_CUMEM = 1u << 1,
    INTRA_SHM = 1u << 2,
    INTRA_NVLS = 1u << 3,
    INTRA_COLLNET = 1u << 4,
};

static const struct {
    unsigned bit;
    const char *name;
} intra_names[] = {
    {INTRA_P2P, "P2P"}, {INTRA_CUMEM, "CUMEM"}, {INTRA_SHM, "SHM"},
    {INTRA_NVLS, "NVLS"}, {INTRA_COLLNET, "CollNet"},
};

struct iface {
    char net[NAME_MAX_LEN];
    char name[IFACE_MAX_LEN];
};

/* One GPU of one process: the unit a "host:pid:tid [dev]" prefix names. */
struct endpoint {
    char host[FB_HOST_MAX]; /* "" when the lines carry no prefix */
    long pid;
    int dev;
    size_t source; /* index in fb_nccl_log.sources */
    long rank, nranks;
    char nets[NETS_MAX][NAME_MAX_LEN]; /* networks its channels went over */
    int nnets;
    unsigned gdr_yes, gdr_no;
    unsigned intra;
    char chosen[NAME_MAX_LEN]; /* "Using network X" */
    struct iface *ifaces;
    size_t nifaces;
};

/* A line worth quoting back to the user, with where it stands. */
struct quoted {
    char text[256];
    char where[PATH_MAX + 32]; /* "FILE:LINE" */
};

/* Facts of the whole run, whichever rank printed them first. */
struct run_facts {
    char nccl_version[32];  /* "NCCL version 2.20.5+cuda12.4" */
    char net_plugin[96];    /* "NET/Plugin: Loaded net plugin AWS Libfabric (v6)" */
    char plugin_version[64]; /* "NET/OFI Using aws-ofi-nccl 1.6.0" */
    char provider[32];      /* "NET/OFI Selected Provider is cxi" */
    char coll_plugin[64];   /* "Loaded coll plugin SHARP (v6)" */
    struct quoted warn;     /* the first NCCL WARN line */
    struct quoted fallback; /* why NCCL gave up a network: "NET/IB : No device found." */
    struct quoted no_gdr;   /* a network channel without GPUDirect RDMA */
};

struct fb_nccl_log {
    struct endpoint *ep;
    size_t nep, cap;
    char **sources;
    size_t nsources;
    size_t info_lines;
    size_t last; /* endpoint of the previous line: lines come in runs */
    struct run_facts facts;
};

const char *fb_net_canonical(const char *name)
{
    if (strcasecmp(name, "IB") == 0)
        return "IB";
    if (strcasecmp(name, "Socket") == 0)
        return "Socket";
    if (strcasecmp(name, "FasTrak") == 0)
        return "FasTrak";
    if (strcasecmp(name, "OFI") == 0 || strcasecmp(name, "AWS Libfabric") == 0 ||
        strcasecmp(name, "Libfabric") == 0 || strcasecmp(name, "AWS OFI") == 0)
        return "OFI";
    /* GKE A3 High: "Using network GPUDirectTCPX_v7", the plugin's ABI. */
    if (strncasecmp(name, "GPUDirectTCPX", strlen("GPUDirectTCPX")) == 0)
        return "GPUDirectTCPX";
    return name;
}

struct fb_nccl_log *fb_nccl_log_new(void)
{
    return calloc(1, sizeof(struct fb_nccl_log));
}

void fb_nccl_log_free(struct fb_nccl_log *log)
{
    if (log == NULL)
        return;
    for (size_t i = 0; i < log->nep; i++)
        free(log->ep[i].ifaces);
    for (size_t i = 0; i < log->nsources; i++)
        free(log->sources[i]);
    free(log->ep);
    free(log->sources);
    free(log);
}

size_t fb_nccl_log_info_lines(const struct fb_nccl_log *log)
{
    return log->info_lines;
}

static bool all_digits(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

/* Parses "…host:pid:tid [dev]…" in the text before "NCCL INFO". Launchers
 * may put their own tag in front ("[1,0]<stdout>:host:…") and newer NCCL a
 * time stamp after the device; both are skipped. */
static bool parse_prefix(const char *p, size_t n, char *host, size_t hostlen, long *pid, int *dev)
{
    size_t close = n;
    while (close > 0 && p[close - 1] != ']')
        close--;
    if (close == 0)
        return false;
    close--; /* at ']' */
    size_t open = close;
    while (open > 0 && p[open] != '[')
        open--;
    if (p[open] != '[' || !all_digits(p + open + 1, close - open - 1) || close - open - 1 > 6)
        return false;
    *dev = atoi(p + open + 1);
    size_t end = open;
    while (end > 0 && (p[end - 1] == ' ' || p[end - 1] == '\t'))
        end--;
    size_t start = end;
    while (start > 0 && p[start - 1] != ' ' && p[start - 1] != '\t')
        start--;
    /* token p[start..end) = [junk:]host:pid:tid */
    size_t c2 = end;
    while (c2 > start && p[c2 - 1] != ':')
        c2--;
    if (c2 == start || !all_digits(p + c2, end - c2))
        return false;
    size_t c1 = c2 - 1;
    while (c1 > start && p[c1 - 1] != ':')
        c1--;
    if (c1 == start || !all_digits(p + c1, c2 - 1 - c1) || c2 - 1 - c1 > 9)
        return false;
    *pid = atol(p + c1);
    size_t h = c1 - 1;
    while (h > start && p[h - 1] != ':')
        h--;
    if (c1 - 1 == h)
        return false;
    fb_copy(host, hostlen, p + h, c1 - 1 - h);
    return true;
}

static bool endpoint_is(const struct endpoint *e, const char *host, long pid, int dev, size_t source)
{
    return e->pid == pid && e->dev == dev && strcmp(e->host, host) == 0 &&
           (host[0] != '\0' || e->source == source);
}

/* "x3006c0s25b0x3006c0s25b0n0": a line start cut short ("x3006c0s25b0")
 * with a whole one ("x3006c0s25b0n0") written after it. */
static bool glued(const char *damaged, const char *host)
{
    size_t d = strlen(damaged), h = strlen(host);
    return h > 0 && d > h && strcmp(damaged + d - h, host) == 0 && strncmp(damaged, host, d - h) == 0;
}

/* A whole host name seen: endpoints first seen under its glued form take it. */
static void repair_glued_hosts(struct fb_nccl_log *log, const char *host)
{
    for (size_t i = 0; i < log->nep; i++)
        if (glued(log->ep[i].host, host))
            fb_copy(log->ep[i].host, sizeof log->ep[i].host, host, strlen(host));
}

static struct endpoint *endpoint_for(struct fb_nccl_log *log, const char *host, long pid, int dev,
                                     size_t source)
{
    if (log->last < log->nep && endpoint_is(&log->ep[log->last], host, pid, dev, source))
        return &log->ep[log->last];
    for (size_t i = 0; i < log->nep; i++) {
        if (endpoint_is(&log->ep[i], host, pid, dev, source)) {
            log->last = i;
            return &log->ep[i];
        }
    }
    /* Two processes writing one file can cut a line's start off: the host
     * "x3006c0s1b1n0" then reads "06c0s1b1n0". Same pid and device, and a
     * host that ends the known one: the same GPU, not a new rank. */
    for (size_t i = 0; host[0] != '\0' && i < log->nep; i++) {
        struct endpoint *e = &log->ep[i];
        if (e->pid != pid || e->dev != dev || !(fb_has_suffix(e->host, host) || fb_has_suffix(host, e->host)))
            continue;
        if (glued(e->host, host))
            fb_copy(e->host, sizeof e->host, host, strlen(host));
        log->last = i;
        return e;
    }
    if (log->nep == log->cap) {
        size_t cap = log->cap ? log->cap * 2 : 16;
        struct endpoint *ep = realloc(log->ep, cap * sizeof *ep);
        if (ep == NULL)
            return NULL;
        log->ep = ep;
        log->cap = cap;
    }
    repair_glued_hosts(log, host);
    log->last = log->nep;
    struct endpoint *e = &log->ep[log->nep++];
    memset(e, 0, sizeof *e);
    fb_copy(e->host, sizeof e->host, host, strlen(host));
    e->pid = pid;
    e->dev = dev;
    e->source = source;
    e->rank = -1;
    e->nranks = -1;
    return e;
}

/* Reads the number after `key` (e.g. " rank "); false when absent. */
static bool number_after(const char *msg, const char *key, bool nocase, long *out)
{
    const char *p = nocase ? strcasestr(msg, key) : strstr(msg, key);
    if (p == NULL)
        return false;
    p += strlen(key);
    if (*p < '0' || *p > '9')
        return false;
    char *end = NULL;
    long v = strtol(p, &end, 10);
    if (v < 0 || v > 100000000)
        return false;
    *out = v;
    return true;
}

static void add_net(struct endpoint *e, const char *name)
{
    for (int i = 0; i < e->nnets; i++)
        if (strcmp(e->nets[i], name) == 0)
            return;
    if (e->nnets < NETS_MAX) {
        fb_copy(e->nets[e->nnets], NAME_MAX_LEN, name, strlen(name));
        e->nnets++;
    }
}

static bool add_iface(struct endpoint *e, const char *net, const char *name, size_t n)
{
    char nm[IFACE_MAX_LEN];
    fb_copy(nm, sizeof nm, name, n);
    for (size_t i = 0; i < e->nifaces; i++)
        if (strcmp(e->ifaces[i].net, net) == 0 && strcmp(e->ifaces[i].name, nm) == 0)
            return true;
    struct iface *f = realloc(e->ifaces, (e->nifaces + 1) * sizeof *f);
    if (f == NULL)
        return false;
    e->ifaces = f;
    fb_copy(f[e->nifaces].net, NAME_MAX_LEN, net, strlen(net));
    memcpy(f[e->nifaces].name, nm, sizeof nm);
    e->nifaces++;
    return true;
}

/* "via NET/IB/0/GDRDMA", "via NET/AWS Libfabric/1/GDRDMA", "via P2P/CUMEM/read",
 * "via SHM/direct/direct", "via NVLS", "via CollNet/..." */
static void on_channel(struct endpoint *e, const char *via)
{
    if (fb_starts_with(via, "NET/")) {
        const char *name = via + 4;
        const char *slash = strchr(name, '/');
        size_t n = slash ? (size_t)(slash - name) : strcspn(name, " \t");
        char raw[NAME_MAX_LEN];
        fb_copy(raw, sizeof raw, name, n);
        if (raw[0] == '\0')
            return;
        add_net(e, fb_net_canonical(raw));
        if (slash != NULL && strstr(slash, "GDRDMA") != NULL)
            e->gdr_yes++;
        else
            e->gdr_no++;
    } else if (fb_starts_with(via, "P2P")) {
        e->intra |= INTRA_P2P;
        if (strstr(via, "CUMEM") != NULL)
            e->intra |= INTRA_CUMEM;
    } else if (fb_starts_with(via, "SHM") || fb_starts_with(via, "direct shared memory") ||
               fb_starts_with(via, "shared memory")) {
        /* "via direct shared memory" is NCCL 2.7's and older's SHM. */
        e->intra |= INTRA_SHM;
    } else if (fb_starts_with(via, "NVLS")) {
        e->intra |= INTRA_NVLS;
    } else if (fb_starts_with(via, "CollNet")) {
        e->intra |= INTRA_COLLNET;
    }
}

/* "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.1<0>"
 * "NET/Socket : Using [0]eth0:10.0.0.2<0> [1]eth1:10.0.1.2<0>"
 * An RDMA device keeps its port and link layer (mlx5_0:1/RoCE); a socket
 * interface is cut before its address (eth0). */
static bool on_using_list(struct endpoint *e, const char *net, const char *list)
{
    const char *p = list;
    while (*p != '\0' && *p != ';') {
        while (*p == ' ' || *p == '\t')
            p++;
        size_t n = strcspn(p, " \t;");
        if (n == 0)
            break;
        if (p[0] == '[') {
            const char *close = memchr(p, ']', n);
            if (close != NULL && close + 1 < p + n && all_digits(p + 1, (size_t)(close - p - 1))) {
                const char *name = close + 1;
                size_t len = (size_t)(p + n - name);
                const char *colon = memchr(name, ':', len);
                if (colon != NULL && memchr(colon, '/', (size_t)(name + len - colon)) == NULL)
                    len = (size_t)(colon - name);
                if (!add_iface(e, net, name, len))
                    return false;
            }
        }
        p += n;
    }
    return true;
}

static void quote(struct quoted *q, const char *text, const char *source, long lineno)
{
    if (q->text[0] != '\0')
        return; /* the first one says it */
    fb_copy(q->text, sizeof q->text, text, strlen(text));
    snprintf(q->where, sizeof q->where, "%s:%ld", source, lineno);
}

static void copy_word_after(char *dst, size_t len, const char *msg, const char *key, const char *stop)
{
    const char *p = strstr(msg, key);
    if (p == NULL || dst[0] != '\0')
        return;
    p += strlen(key);
    fb_copy(dst, len, p, strcspn(p, stop));
}

/* Why NCCL gave up a network, in an INFO line or a WARN one (NCCL 2.7 and
 * older warn "Failed to open libibverbs.so[.1]" and go on with sockets). */
static void note_fallback(struct run_facts *f, const char *msg, const char *source, long lineno)
{
    if (strstr(msg, "No device found") != NULL || strstr(msg, "Failed to initialize NET plugin") != NULL ||
        strstr(msg, "Failed to open libibverbs") != NULL)
        quote(&f->fallback, msg, source, lineno);
}

/* "RCCL version : 2.26.6-HEAD:f224e2c" (as INFO) or "RCCL version 2.18.3+hip6.0"
 * (bare): ROCm's NCCL, kept with its name so that it is not read as NCCL's. */
static void rccl_version(struct run_facts *f, const char *msg)
{
    const char *p = strstr(msg, "RCCL version ");
    if (p == NULL || f->nccl_version[0] != '\0')
        return;
    p += strlen("RCCL version ");
    p += strspn(p, " \t:");
    size_t n = strcspn(p, " \t");
    if (n > 0)
        snprintf(f->nccl_version, sizeof f->nccl_version, "RCCL %.*s", (int)n, p);
}

/* Versions, plugins and why a network was given up: said once per process,
 * they describe the run. */
static void on_run_fact(struct run_facts *f, const char *msg, const char *source, long lineno)
{
    copy_word_after(f->nccl_version, sizeof f->nccl_version, msg, "NCCL version ", " \t");
    rccl_version(f, msg);
    copy_word_after(f->net_plugin, sizeof f->net_plugin, msg, "Loaded net plugin ", "");
    copy_word_after(f->coll_plugin, sizeof f->coll_plugin, msg, "Loaded coll plugin ", "");
    copy_word_after(f->plugin_version, sizeof f->plugin_version, msg, "NET/OFI Using ", "");
    copy_word_after(f->plugin_version, sizeof f->plugin_version, msg, "NET/OFI Initializing ", "");
    copy_word_after(f->provider, sizeof f->provider, msg, "Selected Provider is ", " ,;(");
    note_fallback(f, msg, source, lineno);
    const char *via = strstr(msg, " via NET/");
    if (via != NULL && strstr(via, "GDRDMA") == NULL && strstr(via, "NET/Socket") == NULL)
        quote(&f->no_gdr, msg, source, lineno);
}

static bool on_message(struct endpoint *e, const char *msg)
{
    long v = 0;
    if (strstr(msg, "comm 0x") != NULL && number_after(msg, " rank ", false, &v)) {
        long nranks = -1;
        if (number_after(msg, " nranks ", true, &nranks) && nranks > e->nranks && v < nranks) {
            e->nranks = nranks;
            e->rank = v;
        }
    }
    const char *via = strstr(msg, " via ");
    if (via != NULL && strstr(msg, "->") != NULL)
        on_channel(e, via + 5);
    if (strstr(msg, "NVLS comm") != NULL || strstr(msg, "Connected NVLS") != NULL)
        e->intra |= INTRA_NVLS;
    if (fb_starts_with(msg, "Using network ") || fb_starts_with(msg, "Assigned NET plugin ")) {
        /* "Using network X" (NCCL 2.x), "Assigned NET plugin X to comm"
         * (2.27 and later, after it tried the others). */
        const char *name = msg + (msg[0] == 'U' ? strlen("Using network ") : strlen("Assigned NET plugin "));
        const char *end = strstr(name, " to comm");
        char raw[NAME_MAX_LEN];
        fb_copy(raw, sizeof raw, name, end ? (size_t)(end - name) : strlen(name));
        const char *canon = fb_net_canonical(raw);
        fb_copy(e->chosen, sizeof e->chosen, canon, strlen(canon));
    }
    if (fb_starts_with(msg, "NET/")) {
        const char *name = msg + 4;
        size_t n = strcspn(name, " :");
        char raw[NAME_MAX_LEN];
        fb_copy(raw, sizeof raw, name, n);
        const char *canon = fb_net_canonical(raw);
        const char *using = strstr(name, ": Using ");
        if (using != NULL && !on_using_list(e, canon, using + strlen(": Using ")))
            return false;
        const char *prov = strcasestr(name, "selected provider is ");
        if (prov != NULL) {
            prov += strlen("selected provider is ");
            if (!add_iface(e, "OFI", prov, strcspn(prov, " ,;(")))
                return false;
        }
    }
    return true;
}

static size_t add_source(struct fb_nccl_log *log, const char *source)
{
    char **s = realloc(log->sources, (log->nsources + 1) * sizeof *s);
    if (s == NULL)
        return (size_t)-1;
    log->sources = s;
    s[log->nsources] = strdup(source ? source : "(text)");
    if (s[log->nsources] == NULL)
        return (size_t)-1;
    return log->nsources++;
}

enum fb_status fb_nccl_log_feed(struct fb_nccl_log *log, const char *source, const char *text,
                                size_t len, struct fb_err *err)
{
    size_t src = add_source(log, source);
    if (src == (size_t)-1)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory reading NCCL log %s", source);
    static const char tag[] = "NCCL INFO ", warn[] = "NCCL WARN ";
    size_t pos = 0, n = 0;
    const char *line = NULL;
    char buf[LINE_MAX_LEN];
    long lineno = 0;
    while (fb_next_line(text, len, &pos, &line, &n)) {
        lineno++;
        const char *w = memmem(line, n, warn, sizeof warn - 1);
        if (w != NULL) {
            fb_copy(buf, sizeof buf, w + sizeof warn - 1, n - (size_t)(w - line) - (sizeof warn - 1));
            quote(&log->facts.warn, buf, log->sources[src], lineno);
            note_fallback(&log->facts, buf, log->sources[src], lineno);
            continue;
        }
        const char *at = memmem(line, n, tag, sizeof tag - 1);
        if (at == NULL) {
            /* rank 0 prints "NCCL version 2.20.5+cuda12.4" bare on stdout */
            fb_copy(buf, sizeof buf, line, n);
            char *bare = fb_strip_launcher_prefixes(buf);
            if (fb_starts_with(bare, "NCCL version ") || fb_starts_with(bare, "RCCL version "))
                on_run_fact(&log->facts, bare, log->sources[src], lineno);
            continue;
        }
        log->info_lines++;
        fb_copy(buf, sizeof buf, line, n);
        size_t off = (size_t)(at - line);
        if (off + sizeof tag - 1 > strlen(buf))
            continue; /* the tag itself was cut by the line limit */
        char host[FB_HOST_MAX] = "";
        long pid = -1;
        int dev = -1;
        if (!parse_prefix(buf, off, host, sizeof host, &pid, &dev)) {
            host[0] = '\0';
            pid = -1;
            dev = -1;
        }
        on_run_fact(&log->facts, buf + off + sizeof tag - 1, log->sources[src], lineno);
        struct endpoint *e = endpoint_for(log, host, pid, dev, src);
        if (e == NULL || !on_message(e, buf + off + sizeof tag - 1))
            return fb_fail(err, FB_ERR_INTERNAL, "out of memory reading NCCL log %s", log->sources[src]);
    }
    return FB_OK;
}

static bool has_facts(const struct endpoint *e)
{
    return e->nnets > 0 || e->intra != 0 || e->chosen[0] != '\0' || e->nifaces > 0;
}

static int endpoint_order(const void *a, const void *b)
{
    const struct endpoint *x = *(const struct endpoint *const *)a;
    const struct endpoint *y = *(const struct endpoint *const *)b;
    if ((x->rank < 0) != (y->rank < 0))
        return x->rank < 0 ? 1 : -1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    int c = strcmp(x->host, y->host);
    if (c != 0)
        return c;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return x->dev - y->dev;
}

/* A rank whose channels crossed more than one network reports the TCP one
 * if any: that is the one that limits it. */
/* The one network whose devices this rank listed ("NET/IB : Using ..."),
 * or NULL when it listed none or several. */
static const char *listed_net(const struct endpoint *e)
{
    const char *net = NULL;
    for (size_t i = 0; i < e->nifaces; i++) {
        if (net != NULL && strcmp(net, e->ifaces[i].net) != 0)
            return NULL;
        net = e->ifaces[i].net;
    }
    return net;
}

/* The network a rank used: what its channels went over (TCP on any of them
 * makes it TCP; channels all inside the node mean none). Without channel
 * lines (a log cut short, or NCCL_DEBUG_SUBSYS without them), the network
 * NCCL said it chose ("Using network X", "Assigned NET plugin X"), else the
 * only one whose devices it listed. */
static const char *endpoint_net(const struct endpoint *e)
{
    for (int i = 0; i < e->nnets; i++)
        if (strcmp(e->nets[i], "Socket") == 0)
            return "Socket";
    if (e->nnets > 0)
        return e->nets[0];
    if (e->intra != 0)
        return NULL;
    if (e->chosen[0] != '\0')
        return e->chosen;
    return listed_net(e);
}

static json_object *endpoint_gdr(const struct endpoint *e)
{
    if (e->nnets == 0)
        return NULL;
    return json_object_new_boolean(e->gdr_no == 0 && e->gdr_yes > 0);
}

static void describe(const struct fb_nccl_log *log, const struct endpoint *e, char *buf, size_t len)
{
    if (e->host[0] != '\0')
        snprintf(buf, len, "%s (host %s pid %ld)", log->sources[e->source], e->host, e->pid);
    else
        snprintf(buf, len, "%s", log->sources[e->source]);
}

static enum fb_status check_consistent(const struct fb_nccl_log *log, struct fb_err *err)
{
    for (size_t i = 0; i < log->nep; i++) {
        const struct endpoint *a = &log->ep[i];
        if (a->nranks < 0)
            continue;
        for (size_t j = i + 1; j < log->nep; j++) {
            const struct endpoint *b = &log->ep[j];
            if (b->nranks < 0)
                continue;
            if (a->pid == b->pid && strcmp(a->host, b->host) == 0)
                continue; /* one process: its GPUs or communicators, one run */
            char da[FB_HOST_MAX + 512], db[FB_HOST_MAX + 512];
            describe(log, a, da, sizeof da);
            describe(log, b, db, sizeof db);
            if (a->nranks != b->nranks)
                return fb_fail(err, FB_ERR_INPUT,
                               "NCCL logs of different runs are mixed: %s has %ld ranks, %s has %ld; give the logs of one run only",
                               da, a->nranks, db, b->nranks);
            if (a->rank == b->rank)
                return fb_fail(err, FB_ERR_INPUT,
                               "NCCL logs of different runs are mixed: rank %ld appears in %s and in %s; give the logs of one run only",
                               a->rank, da, db);
        }
    }
    return FB_OK;
}

/* Interfaces of the network this rank used, looked up on every GPU of its
 * process: NCCL prints the device list once per process. */
static json_object *rank_interfaces(const struct fb_nccl_log *log, const struct endpoint *e,
                                    const char *net)
{
    json_object *arr = json_object_new_array();
    for (size_t i = 0; i < log->nep; i++) {
        const struct endpoint *o = &log->ep[i];
        bool same = o == e || (e->host[0] != '\0' && o->pid == e->pid && strcmp(o->host, e->host) == 0);
        if (!same)
            continue;
        for (size_t k = 0; k < o->nifaces; k++) {
            if (net != NULL && strcmp(o->ifaces[k].net, net) != 0)
                continue;
            bool dup = false;
            for (size_t m = 0; m < json_object_array_length(arr); m++)
                if (strcmp(json_object_get_string(json_object_array_get_idx(arr, m)), o->ifaces[k].name) == 0)
                    dup = true;
            if (!dup)
                json_object_array_add(arr, json_object_new_string(o->ifaces[k].name));
        }
    }
    return arr;
}

static json_object *rank_json(const struct fb_nccl_log *log, const struct endpoint *e)
{
    json_object *r = json_object_new_object();
    json_object_object_add(r, "rank", e->rank >= 0 ? json_object_new_int64(e->rank) : NULL);
    json_object_object_add(r, "host", e->host[0] ? json_object_new_string(e->host) : NULL);
    const char *net = endpoint_net(e);
    json_object_object_add(r, "net", net ? json_object_new_string(net) : NULL);
    json_object_object_add(r, "gdr", endpoint_gdr(e));
    const char *iface_net = net ? net : (e->chosen[0] ? e->chosen : NULL);
    json_object_object_add(r, "interfaces", rank_interfaces(log, e, iface_net));
    json_object *intra = json_object_new_array();
    for (size_t i = 0; i < sizeof intra_names / sizeof *intra_names; i++)
        if (e->intra & intra_names[i].bit)
            json_object_array_add(intra, json_object_new_string(intra_names[i].name));
    json_object_object_add(r, "intra", intra);
    return r;
}

/* One rank of one process logged under two device tags (its threads print
 * their own): one entry, the one whose channels were seen. `ep` is sorted
 * by rank, host and pid, so such entries are neighbours. */
static size_t drop_relogged_ranks(const struct endpoint **ep, size_t n)
{
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        const struct endpoint *e = ep[i];
        const struct endpoint *prev = kept > 0 ? ep[kept - 1] : NULL;
        if (prev != NULL && e->rank >= 0 && e->rank == prev->rank && e->pid == prev->pid &&
            strcmp(e->host, prev->host) == 0) {
            if (e->nnets > prev->nnets)
                ep[kept - 1] = e;
            continue;
        }
        ep[kept++] = e;
    }
    return kept;
}

/* The run's network: TCP on any rank makes the run a TCP run; otherwise the
 * network most ranks used. */
static const char *overall_net(const struct endpoint *const *ep, size_t n)
{
    const char *best = NULL;
    size_t best_count = 0;
    for (size_t i = 0; i < n; i++) {
        const char *net = endpoint_net(ep[i]);
        if (net == NULL)
            continue;
        if (strcmp(net, "Socket") == 0)
            return "Socket";
        size_t count = 0;
        for (size_t j = 0; j < n; j++) {
            const char *other = endpoint_net(ep[j]);
            if (other != NULL && strcmp(other, net) == 0)
                count++;
        }
        if (count > best_count) {
            best = net;
            best_count = count;
        }
    }
    return best;
}

static json_object *overall_gdr(const struct endpoint *const *ep, size_t n)
{
    bool any = false, all = true;
    for (size_t i = 0; i < n; i++) {
        if (ep[i]->nnets == 0)
            continue;
        any = true;
        if (!(ep[i]->gdr_no == 0 && ep[i]->gdr_yes > 0))
            all = false;
    }
    return any ? json_object_new_boolean(all) : NULL;
}

static json_object *string_or_null(const char *s)
{
    return s[0] != '\0' ? json_object_new_string(s) : NULL;
}

static json_object *quoted_json(const struct quoted *q)
{
    if (q->text[0] == '\0')
        return NULL;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "text", json_object_new_string(q->text));
    json_object_object_add(o, "where", json_object_new_string(q->where));
    return o;
}

/* Ranks (the communicator's size) and hosts (distinct prefixes) of the run;
 * NVLS on any rank. */
static void add_run_facts(json_object *t, const struct fb_nccl_log *log, const struct endpoint *const *ep, size_t n)
{
    const struct run_facts *f = &log->facts;
    long nranks = -1, hosts = 0;
    bool nvls = false;
    for (size_t i = 0; i < n; i++) {
        if (ep[i]->nranks > nranks)
            nranks = ep[i]->nranks;
        nvls = nvls || (ep[i]->intra & INTRA_NVLS) != 0;
        bool seen = ep[i]->host[0] == '\0';
        for (size_t k = 0; !seen && k < i; k++)
            seen = strcmp(ep[k]->host, ep[i]->host) == 0;
        hosts += !seen;
    }
    json_object_object_add(t, "ranks", nranks > 0 ? json_object_new_int64(nranks) : NULL);
    json_object_object_add(t, "hosts", hosts > 0 ? json_object_new_int64(hosts) : NULL);
    json_object_object_add(t, "nvls", json_object_new_boolean(nvls));
    json_object_object_add(t, "nccl_version", string_or_null(f->nccl_version));
    json_object_object_add(t, "net_plugin", string_or_null(f->net_plugin));
    json_object_object_add(t, "plugin_version", string_or_null(f->plugin_version));
    json_object_object_add(t, "provider", string_or_null(f->provider));
    json_object_object_add(t, "coll_plugin", string_or_null(f->coll_plugin));
    json_object_object_add(t, "warn", quoted_json(&f->warn));
    json_object_object_add(t, "fallback_reason", quoted_json(&f->fallback));
    json_object_object_add(t, "no_gdr_channel", quoted_json(&f->no_gdr));
}

enum fb_status fb_nccl_log_transport(const struct fb_nccl_log *log, json_object **transport_out,
                                     struct fb_err *err)
{
    if (log->info_lines == 0)
        return fb_fail(err, FB_ERR_INPUT,
                       "%s holds no 'NCCL INFO' lines; rerun with NCCL_DEBUG=INFO (and NCCL_DEBUG_FILE=DIR/nccl.%%h.%%p)",
                       log->nsources ? log->sources[0] : "the NCCL log");
    enum fb_status st = check_consistent(log, err);
    if (st != FB_OK)
        return st;
    long nranks = -1;
    bool any_facts = false;
    for (size_t i = 0; i < log->nep; i++) {
        if (log->ep[i].nranks > nranks)
            nranks = log->ep[i].nranks;
        any_facts = any_facts || has_facts(&log->ep[i]);
    }
    if (nranks > 1 && !any_facts)
        return fb_fail(err, FB_ERR_INPUT,
                       "%s ends before NCCL chose its transports (no 'via' or 'Using network' lines): truncated log, or NCCL_DEBUG_SUBSYS hides INIT; rerun with NCCL_DEBUG=INFO",
                       log->sources[0]);
    const struct endpoint **ep = calloc(log->nep ? log->nep : 1, sizeof *ep);
    if (ep == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory reading NCCL logs");
    size_t n = 0;
    /* Where ranks are named, an entry without a rank that saw no network
     * is a fragment of an interleaved line or a helper thread: not a rank. */
    bool ranked = false;
    for (size_t i = 0; i < log->nep; i++)
        ranked = ranked || log->ep[i].rank >= 0;
    for (size_t i = 0; i < log->nep; i++) {
        const struct endpoint *e = &log->ep[i];
        bool fragment = ranked && e->rank < 0 && e->nnets == 0 && e->nifaces == 0 && e->chosen[0] == '\0';
        if (e->rank >= 0 || (has_facts(e) && !fragment))
            ep[n++] = e;
    }
    qsort(ep, n, sizeof *ep, endpoint_order);
    n = drop_relogged_ranks(ep, n);

    json_object *t = json_object_new_object();
    const char *net = overall_net(ep, n);
    json_object_object_add(t, "net", net ? json_object_new_string(net) : NULL);
    json_object_object_add(t, "gdr", overall_gdr(ep, n));
    json_object *per_rank = json_object_new_array();
    for (size_t i = 0; i < n; i++)
        json_object_array_add(per_rank, rank_json(log, ep[i]));
    json_object_object_add(t, "per_rank", per_rank);
    json_object_object_add(t, "source", json_object_new_string("nccl-log"));
    add_run_facts(t, log, ep, n);
    free(ep);
    *transport_out = t;
    return FB_OK;
}

enum fb_status fb_transport_from_logs(const char *const *paths, int npaths,
                                      json_object **transport_out, struct fb_err *err)
{
    if (paths == NULL || npaths <= 0)
        return fb_fail(err, FB_ERR_USAGE, "no NCCL log files given; pass the files NCCL_DEBUG_FILE wrote");
    struct fb_nccl_log *log = fb_nccl_log_new();
    if (log == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory reading NCCL logs");
    enum fb_status st = FB_OK;
    for (int i = 0; i < npaths && st == FB_OK; i++) {
        char *text = NULL;
        size_t len = 0;
        st = fb_read_text_file(paths[i], &text, &len, err);
        if (st != FB_OK)
            break;
        size_t before = log->info_lines;
        st = fb_nccl_log_feed(log, paths[i], text, len, err);
        free(text);
        if (st == FB_OK && log->info_lines == before)
            st = fb_fail(err, FB_ERR_INPUT,
                         "%s holds no 'NCCL INFO' lines; is it an NCCL_DEBUG=INFO log? (rerun with NCCL_DEBUG=INFO)",
                         paths[i]);
    }
    if (st == FB_OK)
        st = fb_nccl_log_transport(log, transport_out, err);
    fb_nccl_log_free(log);
    return st;
}

/* Paths of the arguments, directories expanded to their regular files. */
struct paths {
    char **p;
    int n;
};

static void paths_free(struct paths *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->p[i]);
    free(l->p);
}

static enum fb_status paths_add(struct paths *l, const char *path, struct fb_err *err)
{
    char **p = realloc(l->p, (size_t)(l->n + 1) * sizeof *p);
    if (p == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory listing NCCL logs");
    l->p = p;
    if ((l->p[l->n] = strdup(path)) == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory listing NCCL logs");
    l->n++;
    return FB_OK;
}

static enum fb_status paths_expand(struct paths *l, const char *arg, struct fb_err *err)
{
    struct stat sb;
    if (stat(arg, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return paths_add(l, arg, err); /* a missing file is reported when read */
    struct dirent **names = NULL;
    int n = scandir(arg, &names, NULL, alphasort);
    if (n < 0)
        return fb_fail(err, FB_ERR_INPUT, "cannot read directory %s: %s", arg, strerror(errno));
    enum fb_status st = FB_OK;
    int before = l->n;
    for (int i = 0; i < n; i++) {
        char path[PATH_MAX];
        int len = snprintf(path, sizeof path, "%s/%s", arg, names[i]->d_name);
        /* lstat: a link inside the directory is not followed, so a log
         * linked in twice (or a link out of the tree) is not read as
         * another rank's. */
        if (st == FB_OK && names[i]->d_name[0] != '.' && len < (int)sizeof path && lstat(path, &sb) == 0 &&
            S_ISREG(sb.st_mode))
            st = paths_add(l, path, err);
        free(names[i]);
    }
    free(names);
    if (st == FB_OK && l->n == before)
        st = fb_fail(err, FB_ERR_INPUT, "%s holds no files; give the NCCL_DEBUG_FILE logs of the run", arg);
    return st;
}

enum fb_status fb_transport_from_args(const char *const *args, int nargs,
                                      json_object **transport_out, struct fb_err *err)
{
    struct paths l = {0};
    enum fb_status st = FB_OK;
    for (int i = 0; i < nargs && st == FB_OK; i++)
        st = paths_expand(&l, args[i], err);
    if (st == FB_OK)
        st = fb_transport_from_logs((const char *const *)l.p, l.n, transport_out, err);
    paths_free(&l);
    return st;
}

static const char *joined(json_object *arr, struct fb_str *out)
{
    size_t n = arr && json_object_is_type(arr, json_type_array) ? json_object_array_length(arr) : 0;
    for (size_t i = 0; i < n; i++)
        fb_str_addf(out, "%s%s", i ? "," : "", json_object_get_string(json_object_array_get_idx(arr, i)));
    return n ? fb_str_get(out) : "-";
}

/* "yes", "no" or "-" for a boolean-or-null member. */
static const char *yes_no(json_object *o, const char *key)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_boolean))
        return "-";
    return json_object_get_boolean(v) ? "yes" : "no";
}

static void quoted_text(json_object *t, const char *key, const char *label, struct fb_str *out)
{
    json_object *q = NULL;
    if (!json_object_object_get_ex(t, key, &q) || !json_object_is_type(q, json_type_object))
        return;
    const char *text = fb_json_get_string(q, "text"), *where = fb_json_get_string(q, "where");
    fb_str_addf(out, "%s: %s (%s)\n", label, text ? text : "?", where ? where : "?");
}

/* The run's own lines: who ran, which plugin carried it, what went wrong. */
static void run_facts_text(json_object *t, struct fb_str *out)
{
    int64_t ranks = 0, hosts = 0;
    const char *version = fb_json_get_string(t, "nccl_version");
    bool has_ranks = fb_json_get_int64(t, "ranks", &ranks), has_hosts = fb_json_get_int64(t, "hosts", &hosts);
    if (has_ranks || has_hosts || version != NULL) {
        fb_str_addf(out, "run:");
        if (has_ranks)
            fb_str_addf(out, " %lld rank%s", (long long)ranks, ranks == 1 ? "" : "s");
        if (has_hosts)
            fb_str_addf(out, "%s %lld host%s", has_ranks ? " on" : "", (long long)hosts, hosts == 1 ? "" : "s");
        if (version != NULL) /* "RCCL 2.26.6" names itself */
            fb_str_addf(out, "%s%s%s", has_ranks || has_hosts ? ", " : " ",
                        version[0] >= '0' && version[0] <= '9' ? "NCCL " : "", version);
        fb_str_addf(out, "\n");
    }
    static const struct {
        const char *key, *label;
    } plain[] = {
        {"net_plugin", "net plugin"}, {"plugin_version", "plugin"},
        {"provider", "libfabric provider"}, {"coll_plugin", "collective plugin (CollNet/SHARP)"},
    };
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++) {
        const char *v = fb_json_get_string(t, plain[i].key);
        if (v != NULL)
            fb_str_addf(out, "%s: %s\n", plain[i].label, v);
    }
    bool nvls = false;
    if (fb_json_get_bool(t, "nvls", &nvls) && nvls)
        fb_str_addf(out, "NVLS: NVLink SHARP in use inside the node\n");
    quoted_text(t, "fallback_reason", "a network NCCL gave up", out);
    quoted_text(t, "no_gdr_channel", "a channel without GPUDirect RDMA", out);
    quoted_text(t, "warn", "NCCL WARN", out);
}

void fb_transport_text(json_object *t, struct fb_str *out)
{
    const char *net = fb_json_get_string(t, "net");
    json_object *pr = NULL;
    json_object_object_get_ex(t, "per_rank", &pr);
    size_t n = pr && json_object_is_type(pr, json_type_array) ? json_object_array_length(pr) : 0;
    bool socket = net != NULL && strcmp(net, "Socket") == 0;
    const char *gdr = yes_no(t, "gdr");
    if (net == NULL)
        fb_str_addf(out, "no network channel: NCCL kept every connection inside a node (%zu rank%s logged)\n", n, n == 1 ? "" : "s");
    else
        fb_str_addf(out, "NET/%s%s across %zu logged rank%s%s\n", net,
                    socket ? " (TCP sockets)" : strcmp(gdr, "yes") == 0 ? " with GPUDirect RDMA"
                                              : strcmp(gdr, "no") == 0  ? " without GPUDirect RDMA" : "",
                    n, n == 1 ? "" : "s", socket ? ": on several nodes this is the TCP fallback" : "");
    run_facts_text(t, out);
    fb_str_addf(out, "%-5s %-20s %-8s %-4s %-40s %s\n", "rank", "host", "net", "gdr", "interfaces", "intra-node");
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(pr, i), *rank = NULL, *ifaces = NULL, *intra = NULL;
        json_object_object_get_ex(e, "rank", &rank);
        json_object_object_get_ex(e, "interfaces", &ifaces);
        json_object_object_get_ex(e, "intra", &intra);
        const char *host = fb_json_get_string(e, "host"), *rnet = fb_json_get_string(e, "net");
        struct fb_str a = {0}, b = {0};
        fb_str_addf(out, "%-5s %-20s %-8s %-4s %-40s %s\n", rank ? json_object_get_string(rank) : "?",
                    host ? host : "?", rnet ? rnet : "-", yes_no(e, "gdr"), joined(ifaces, &a), joined(intra, &b));
        fb_str_free(&a);
        fb_str_free(&b);
    }
}
