/* Memory the fabric needs from the process: pinnable memory for RDMA
 * registration (RLIMIT_MEMLOCK, CAP_IPC_LOCK) and /dev/shm for NCCL's
 * intra-node shared-memory segments. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor/node.h"
#include "core/rootfs.h"

#define CAP_IPC_LOCK_BIT 14
#define GIB (1ULL << 30)
#define MIB (1ULL << 20)

/* Below this a finite limit fails outright: queue pairs, completion queues
 * and NCCL's host buffers alone pin more. At or above it, large user
 * registrations may still hit it, so it warns. */
#define MEMLOCK_FAIL_BELOW GIB

/* The 64 MiB container default is what NCCL's SHM transport exhausts with a
 * few GPUs; NCCL's own container advice is --shm-size=1g. */
#define SHM_FAIL_BELOW (256 * MIB)
#define SHM_WARN_BELOW GIB

/* Blanks as sscanf's %s sees them. */
#define BLANKS " \t\n\v\f\r"
#define PROC_PATH_MAX 128

/* Reads FILE of the judged process; path gets the name messages quote. */
static enum fb_status read_proc_file(const struct fb_node_ctx *ctx, const char *file,
                                     char path[PROC_PATH_MAX], char **text, struct fb_err *err)
{
    fb_node_proc_path(ctx, file, path, PROC_PATH_MAX);
    return fb_rootfs_read(ctx->root, path, text, err);
}

/* The first word after `key` in FILE of the judged process, at most len-1
 * characters; "" when the key or its word is missing. */
static enum fb_status read_proc_word(const struct fb_node_ctx *ctx, const char *file,
                                     const char *key, char *word, size_t len,
                                     char path[PROC_PATH_MAX], struct fb_err *err)
{
    char *text = NULL;
    enum fb_status st = read_proc_file(ctx, file, path, &text, err);
    if (st != FB_OK)
        return st;
    word[0] = '\0';
    const char *at = strstr(text, key);
    if (at != NULL) {
        at += strlen(key);
        at += strspn(at, BLANKS);
        fb_copy(word, len, at, strcspn(at, BLANKS));
    }
    free(text);
    return FB_OK;
}

enum fb_status fb_node_memlock(const struct fb_node_ctx *ctx, unsigned long long *bytes,
                               struct fb_err *err)
{
    char path[PROC_PATH_MAX], soft[64];
    enum fb_status st = read_proc_word(ctx, "limits", "Max locked memory", soft, sizeof soft,
                                       path, err);
    if (st != FB_OK)
        return st;
    if (strcmp(soft, "unlimited") == 0) {
        *bytes = UINT64_MAX;
        return FB_OK;
    }
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(soft, &end, 10);
    if (soft[0] == '\0' || *end != '\0' || errno != 0)
        return fb_fail(err, FB_ERR_INPUT, "%s%s has no readable 'Max locked memory' line",
                       ctx->root, path);
    *bytes = v;
    return FB_OK;
}

enum fb_status fb_node_has_ipc_lock(const struct fb_node_ctx *ctx, bool *held, char *capeff,
                                    size_t len, struct fb_err *err)
{
    char path[PROC_PATH_MAX], hex[32];
    enum fb_status st = read_proc_word(ctx, "status", "\nCapEff:", hex, sizeof hex, path, err);
    if (st != FB_OK)
        return st;
    unsigned long long caps = 0;
    if (hex[0] == '\0' || sscanf(hex, "%llx", &caps) != 1)
        return fb_fail(err, FB_ERR_INPUT, "%s%s has no readable CapEff line", ctx->root, path);
    *held = (caps >> CAP_IPC_LOCK_BIT) & 1ULL;
    snprintf(capeff, len, "%s", hex);
    return FB_OK;
}

/* The judged process's /proc could not be read: the check fails, and says
 * where it can be. */
static bool fails_without_proc(struct fb_check *c, enum fb_status st, const struct fb_err *err)
{
    if (!fb_check_fails_on(c, st, err))
        return false;
    fb_check_fix(c, "run where /proc is mounted, or pass --root with a copy of it");
    return true;
}

static const char *memlock_fix =
    "raise it to unlimited: ulimit -l unlimited, LimitMEMLOCK=infinity (systemd), memlock "
    "unlimited in /etc/security/limits.conf, docker --ulimit memlock=-1; or add IPC_LOCK to "
    "the container's capabilities";

void fb_node_check_memlock(const struct fb_node_ctx *ctx, struct fb_check *c)
{
    struct fb_err err = {FB_OK, ""};
    unsigned long long limit = 0;
    if (fails_without_proc(c, fb_node_memlock(ctx, &limit, &err), &err))
        return;
    if (limit == UINT64_MAX) {
        fb_check_set(c, FB_CHECK_OK, "RLIMIT_MEMLOCK unlimited (%s/limits)", ctx->proc);
        return;
    }
    char size[32], capeff[32];
    fb_node_format_bytes(limit, size, sizeof size);
    bool cap = false;
    struct fb_err cap_err = {FB_OK, ""};
    if (fb_node_has_ipc_lock(ctx, &cap, capeff, sizeof capeff, &cap_err) == FB_OK && cap) {
        fb_check_set(c, FB_CHECK_OK,
                     "RLIMIT_MEMLOCK %s, but CAP_IPC_LOCK lets RDMA pin past it", size);
        return;
    }
    enum fb_check_outcome v = limit < MEMLOCK_FAIL_BELOW ? FB_CHECK_FAIL : FB_CHECK_WARN;
    fb_check_set(c, v, "RLIMIT_MEMLOCK %s without CAP_IPC_LOCK (%s/limits): RDMA memory "
                       "registration (ibv_reg_mr) fails beyond it", size, ctx->proc);
    fb_check_fix(c, "%s", memlock_fix);
}

void fb_node_check_ipc_lock(const struct fb_node_ctx *ctx, struct fb_check *c)
{
    struct fb_err err = {FB_OK, ""};
    bool cap = false;
    char capeff[32];
    if (fails_without_proc(c, fb_node_has_ipc_lock(ctx, &cap, capeff, sizeof capeff, &err), &err))
        return;
    if (cap) {
        fb_check_set(c, FB_CHECK_OK, "CAP_IPC_LOCK held (CapEff %s)", capeff);
        return;
    }
    unsigned long long limit = 0;
    struct fb_err lim_err = {FB_OK, ""};
    bool limit_known = fb_node_memlock(ctx, &limit, &lim_err) == FB_OK;
    if (limit_known && limit == UINT64_MAX) {
        fb_check_set(c, FB_CHECK_OK,
                     "CAP_IPC_LOCK not held (CapEff %s); not needed while RLIMIT_MEMLOCK is "
                     "unlimited", capeff);
        return;
    }
    char size[32] = "unknown";
    if (limit_known)
        fb_node_format_bytes(limit, size, sizeof size);
    enum fb_check_outcome v = limit_known && limit >= MEMLOCK_FAIL_BELOW ? FB_CHECK_WARN
                                                                     : FB_CHECK_FAIL;
    fb_check_set(c, v, "CAP_IPC_LOCK not held (CapEff %s) and RLIMIT_MEMLOCK is %s", capeff,
                 size);
    fb_check_culprit(c, "IPC_LOCK");
    fb_check_fix(c, "add IPC_LOCK (Kubernetes: securityContext.capabilities.add: [IPC_LOCK]) "
                    "or raise RLIMIT_MEMLOCK to unlimited");
}

/* tmpfs size= option: bytes with k/m/g/t suffix, or a percentage of RAM. */
static bool parse_tmpfs_size(const char *opt, unsigned long long mem_total,
                             unsigned long long *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(opt, &end);
    if (end == opt || errno != 0 || v < 0)
        return false;
    unsigned long long mult = 1;
    switch (*end) {
    case '\0': break;
    case 'k': case 'K': mult = 1ULL << 10; end++; break;
    case 'm': case 'M': mult = 1ULL << 20; end++; break;
    case 'g': case 'G': mult = 1ULL << 30; end++; break;
    case 't': case 'T': mult = 1ULL << 40; end++; break;
    case '%':
        if (mem_total == 0)
            return false;
        *out = (unsigned long long)((double)mem_total * v / 100.0);
        return end[1] == '\0';
    default: return false;
    }
    if (*end != '\0')
        return false;
    *out = (unsigned long long)(v * (double)mult);
    return true;
}

static unsigned long long mem_total(const char *root)
{
    char *text = NULL;
    struct fb_err ignored = {FB_OK, ""};
    unsigned long long kib = 0;
    if (fb_rootfs_read(root, "/proc/meminfo", &text, &ignored) != FB_OK)
        return 0;
    const char *line = strstr(text, "MemTotal:");
    if (line == NULL || sscanf(line, "MemTotal: %llu kB", &kib) != 1)
        kib = 0;
    free(text);
    return kib * 1024ULL;
}

struct shm_mount {
    bool found;
    char fstype[32];
    char options[512];
};

/* The last /dev/shm line wins: a later mount hides an earlier one. */
static enum fb_status find_shm_mount(const struct fb_node_ctx *ctx, struct shm_mount *m,
                                     char *source, size_t source_len, struct fb_err *err)
{
    memset(m, 0, sizeof *m);
    char path[PROC_PATH_MAX];
    char *text = NULL;
    if (read_proc_file(ctx, "mounts", path, &text, err) != FB_OK) {
        fb_err_clear(err);
        snprintf(path, sizeof path, "/proc/mounts");
        enum fb_status st = fb_rootfs_read(ctx->root, path, &text, err);
        if (st != FB_OK)
            return st;
    }
    snprintf(source, source_len, "%s", path);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char dev[256], mnt[256], type[32], opts[512];
        if (sscanf(line, "%255s %255s %31s %511s", dev, mnt, type, opts) == 4 &&
            strcmp(mnt, "/dev/shm") == 0) {
            m->found = true;
            snprintf(m->fstype, sizeof m->fstype, "%s", type);
            snprintf(m->options, sizeof m->options, "%s", opts);
        }
    }
    free(text);
    return FB_OK;
}

static const char *shm_fix =
    "give the container a larger /dev/shm: Kubernetes emptyDir {medium: Memory} mounted at "
    "/dev/shm; docker --shm-size=1g (or --ipc=host)";

void fb_node_check_shm(const struct fb_node_ctx *ctx, struct fb_check *c)
{
    struct fb_err err = {FB_OK, ""};
    struct shm_mount m;
    char source[128];
    if (fails_without_proc(c, find_shm_mount(ctx, &m, source, sizeof source, &err), &err))
        return;
    if (!m.found) {
        if (!fb_rootfs_is_dir(ctx->root, "/dev/shm")) {
            fb_check_set(c, FB_CHECK_FAIL, "no /dev/shm: NCCL cannot create its shared-memory "
                                           "segments");
            fb_check_fix(c, "%s", shm_fix);
            return;
        }
        fb_check_set(c, FB_CHECK_WARN, "/dev/shm is not a mount of its own (%s): NCCL's "
                                       "segments land on the root filesystem", source);
        fb_check_fix(c, "%s", shm_fix);
        return;
    }
    unsigned long long total = mem_total(ctx->root);
    unsigned long long size = 0;
    const char *opt = strstr(m.options, "size=");
    char origin[96];
    if (opt != NULL) {
        char value[64];
        sscanf(opt + 5, "%63[^,]", value);
        if (!parse_tmpfs_size(value, total, &size)) {
            fb_check_set(c, FB_CHECK_WARN, "/dev/shm size option '%s' unreadable (%s)", value,
                         source);
            return;
        }
        snprintf(origin, sizeof origin, "size=%s", value);
    } else if (strcmp(m.fstype, "tmpfs") == 0 && total > 0) {
        size = total / 2; /* tmpfs default */
        snprintf(origin, sizeof origin, "tmpfs default: half of RAM");
    } else {
        fb_check_set(c, FB_CHECK_WARN, "/dev/shm is %s without a size option (%s): size unknown",
                     m.fstype, source);
        return;
    }
    char human[32];
    fb_node_format_bytes(size, human, sizeof human);
    if (size < SHM_FAIL_BELOW) {
        fb_check_set(c, FB_CHECK_FAIL, "/dev/shm is %s (%s, %s): NCCL's shared-memory "
                                       "transport runs out with a few GPUs", human, origin,
                     source);
        fb_check_fix(c, "%s", shm_fix);
    } else if (size < SHM_WARN_BELOW) {
        fb_check_set(c, FB_CHECK_WARN, "/dev/shm is %s (%s, %s), below the 1 GiB NCCL "
                                       "recommends", human, origin, source);
        fb_check_fix(c, "%s", shm_fix);
    } else {
        fb_check_set(c, FB_CHECK_OK, "/dev/shm is %s (%s)", human, origin);
    }
}
