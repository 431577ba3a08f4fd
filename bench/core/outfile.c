#include "core/outfile.h"

#include "core/text.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Numbered names tried before giving up: a thousand runs of one collective
 * started in one second is not a results directory any more. */
#define NUMBERED_MAX 1000
/* Temporary names tried: each taken one was made by someone else. */
#define TMP_TRIES 100
/* Directories below the results root: a results path deeper than this is
 * no results path. */
#define MAX_DEPTH 256
/* How many of a path's last directories are its results root and below
 * (outfile.h): the file's own directory, or DIR/LABEL of a made-up name. */
#define ROOT_IS_PARENT 1
#define ROOT_IS_GRANDPARENT 2
/* The most of a file's name a temporary name repeats: enough to tell whose
 * it is, short enough that the host, namespace and numbers still fit. */
#define TMP_BASE_MAX 96
#define TMP_HOST_MAX 64
#define TMP_SUFFIX ".tmp"

/* ---- directories on the way to an output file ------------------------- */

/* An open directory a file is written in, and its path for messages. */
struct out_dir {
    int fd;
    char shown[PATH_MAX];
};

/* Root owns the system and can replace anything anyway: a directory of
 * root's (/tmp, a shared results root an administrator made) gives no one
 * a power they lack. Any other owner could swap what is in it. */
static bool trusted_owner(uid_t uid)
{
    return uid == geteuid() || uid == 0;
}

static enum fb_status refuse_owner(const char *shown, uid_t uid, struct fb_err *err)
{
    return fb_fail(err, FB_ERR_IO,
                   "%s belongs to uid %u, not to you (uid %u) or root, so results are not written there; "
                   "choose a directory of your own (-J FILE)",
                   shown, (unsigned)uid, (unsigned)geteuid());
}

static enum fb_status refuse_link(const char *shown, struct fb_err *err)
{
    return fb_fail(err, FB_ERR_IO,
                   "%s is a symbolic link, and results are written only through real directories; "
                   "remove the link or choose another results path (-J FILE)",
                   shown);
}

static enum fb_status check_owner(int fd, const char *shown, struct fb_err *err)
{
    struct stat sb;
    if (fstat(fd, &sb) != 0)
        return fb_fail(err, FB_ERR_IO, "cannot inspect %s: %s; choose a writable results path (-J FILE)", shown,
                       strerror(errno));
    return trusted_owner(sb.st_uid) ? FB_OK : refuse_owner(shown, sb.st_uid, err);
}

/* What goes between a directory as shown and a name in it. */
static const char *separator_after(const char *shown)
{
    size_t n = strlen(shown);
    return n == 0 || shown[n - 1] == '/' ? "" : "/";
}

static void add_to_shown(char *shown, size_t len, const char *name)
{
    size_t n = strlen(shown);
    snprintf(shown + n, len - n, "%s%s", separator_after(shown), name);
}

/* Why `name` in `parent` could not be opened as a directory, in words. */
static enum fb_status refuse_step(int parent, const char *name, const char *shown, int e, struct fb_err *err)
{
    struct stat sb;
    if (fstatat(parent, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(sb.st_mode))
        return refuse_link(shown, err);
    if (e == ENOTDIR)
        return fb_fail(err, FB_ERR_IO, "%s is not a directory; choose another results path (-J FILE)", shown);
    return fb_fail(err, FB_ERR_IO, "cannot open directory %s: %s; choose a writable results path (-J FILE)", shown,
                   strerror(e));
}

/* One directory below the results root: never through a symbolic link
 * (O_NOFOLLOW), created when missing, and yours or root's. */
static enum fb_status step_into(int parent, const char *name, const char *shown, int *fd, struct fb_err *err)
{
    const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    *fd = openat(parent, name, flags);
    if (*fd < 0 && errno == ENOENT) {
        if (mkdirat(parent, name, 0777) != 0 && errno != EEXIST)
            return fb_fail(err, FB_ERR_IO, "cannot create directory %s: %s; choose a writable results path (-J FILE)",
                           shown, strerror(errno));
        *fd = openat(parent, name, flags);
    }
    if (*fd < 0)
        return refuse_step(parent, name, shown, errno, err);
    enum fb_status st = check_owner(*fd, shown, err);
    if (st != FB_OK) {
        close(*fd);
        *fd = -1;
    }
    return st;
}

/* mkdir -p above the results root, where the path is yours to choose and
 * links are followed as you wrote them (/scratch -> /mnt/scratch). */
static enum fb_status make_dirs(char *dir, struct fb_err *err)
{
    for (char *p = dir + 1; ; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(dir, 0777) != 0 && errno != EEXIST)
            return fb_fail(err, FB_ERR_IO, "cannot create directory %s: %s; choose a writable results path (-J FILE)",
                           dir, strerror(errno));
        *p = saved;
        if (saved == '\0')
            return FB_OK;
    }
}

/* The directory above the results root, opened as the system resolves it. */
static enum fb_status open_above_root(char *prefix, int *fd, struct fb_err *err)
{
    const int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
    *fd = open(prefix, flags);
    if (*fd < 0 && errno == ENOENT) {
        enum fb_status st = make_dirs(prefix, err);
        if (st != FB_OK)
            return st;
        *fd = open(prefix, flags);
    }
    if (*fd < 0)
        return fb_fail(err, FB_ERR_IO, "cannot open directory %s: %s; choose a writable results path (-J FILE)",
                       prefix, strerror(errno));
    return FB_OK;
}

/* The directory part of `path` as its non-empty components other than
 * "." (in `buf`), and the file name. */
struct dir_parts {
    char buf[PATH_MAX];
    char *name[MAX_DEPTH];
    size_t at[MAX_DEPTH]; /* where each starts in the path */
    int n;
    bool absolute;
    const char *base;
};

static enum fb_status split_dirs(const char *path, struct dir_parts *p, struct fb_err *err)
{
    const char *slash = strrchr(path, '/');
    size_t dlen = slash != NULL ? (size_t)(slash - path) : 0;
    if (dlen >= sizeof p->buf)
        return fb_fail(err, FB_ERR_IO, "path too long: %s", path);
    memcpy(p->buf, path, dlen);
    p->buf[dlen] = '\0';
    p->base = slash != NULL ? slash + 1 : path;
    p->absolute = path[0] == '/';
    p->n = 0;
    for (size_t i = 0; i < dlen;) {
        size_t j = i;
        while (j < dlen && p->buf[j] != '/')
            j++;
        p->buf[j] = '\0';
        bool skip = j == i || strcmp(p->buf + i, ".") == 0;
        if (!skip && p->n == MAX_DEPTH)
            return fb_fail(err, FB_ERR_IO, "path too deep: %s", path);
        if (!skip) {
            p->name[p->n] = p->buf + i;
            p->at[p->n++] = i;
        }
        i = j + 1;
    }
    return FB_OK;
}

/* Opens where the walk down starts: the directory above the results root,
 * resolved as written, or, when the path names fewer directories than the
 * root and below take (RUN.json, DIR/NAME of a made-up name), the working
 * directory or / as the root itself, which must then be yours or root's. */
static enum fb_status open_start(const char *path, const struct dir_parts *p, int first, int root_depth,
                                 struct out_dir *d, struct fb_err *err)
{
    char prefix[PATH_MAX];
    if (first > 0)
        snprintf(prefix, sizeof prefix, "%.*s", (int)p->at[first], path);
    else
        snprintf(prefix, sizeof prefix, "%s", p->absolute ? "/" : ".");
    snprintf(d->shown, sizeof d->shown, "%s", first > 0 || p->absolute ? prefix : "");
    enum fb_status st = open_above_root(prefix, &d->fd, err);
    if (st == FB_OK && first == 0 && p->n < root_depth)
        st = check_owner(d->fd, p->absolute ? "/" : "the working directory", err);
    return st;
}

/* Opens the directory `path` is written in. The last `root_depth` of its
 * directories are the results root and what is below it: each opened
 * without following a link, created when missing, and yours or root's. */
static enum fb_status open_out_dir(const char *path, int root_depth, struct out_dir *d, const char **base,
                                   struct fb_err *err)
{
    struct dir_parts p;
    d->fd = -1;
    enum fb_status st = split_dirs(path, &p, err);
    if (st != FB_OK)
        return st;
    *base = p.base;
    int first = p.n > root_depth ? p.n - root_depth : 0;
    st = open_start(path, &p, first, root_depth, d, err);
    for (int i = first; st == FB_OK && i < p.n; i++) {
        int next = -1;
        add_to_shown(d->shown, sizeof d->shown, p.name[i]);
        st = step_into(d->fd, p.name[i], d->shown, &next, err);
        close(d->fd);
        d->fd = next;
    }
    if (st != FB_OK && d->fd >= 0)
        close(d->fd);
    if (st != FB_OK)
        d->fd = -1;
    if (d->shown[0] == '\0')
        snprintf(d->shown, sizeof d->shown, ".");
    return st;
}

enum fb_status fb_make_parent_dirs(const char *path, struct fb_err *err)
{
    struct out_dir d;
    const char *base;
    enum fb_status st = open_out_dir(path, ROOT_IS_PARENT, &d, &base, err);
    if (st == FB_OK)
        close(d.fd);
    return st;
}

/* ---- temporary files and the ones a killed writer left ---------------- */

/* This host as temporary names spell it: letters, digits, '.' and '-'
 * kept, any other byte '_', at most TMP_HOST_MAX bytes. */
static void tmp_host(char *out, size_t len)
{
    char host[256] = "localhost";
    if (gethostname(host, sizeof host) != 0 || host[0] == '\0')
        snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = '\0';
    size_t i = 0;
    for (; host[i] != '\0' && i < TMP_HOST_MAX && i + 1 < len; i++)
        out[i] = isalnum((unsigned char)host[i]) || host[i] == '.' || host[i] == '-' ? host[i] : '_';
    out[i] = '\0';
}

/* The PID namespace this process sees PIDs in: containers on one host
 * sharing a volume have their own, and a PID means nothing outside it. */
static unsigned long pid_namespace(void)
{
    struct stat sb;
    return stat("/proc/self/ns/pid", &sb) == 0 ? (unsigned long)sb.st_ino : 0;
}

bool fb_out_tmp_name(const char *name, long pid, unsigned tag, char *out, size_t cap)
{
    char host[TMP_HOST_MAX + 1];
    tmp_host(host, sizeof host);
    int n = snprintf(out, cap, ".%.*s@%s.%lu.%ld.%08x" TMP_SUFFIX, TMP_BASE_MAX, name, host, pid_namespace(), pid,
                     tag);
    return n > 0 && (size_t)n < cap;
}

/* Digits only, as many as a PID has: what strtol would also take (signs,
 * spaces) is not a name this writer made. */
static bool parse_number(const char *s, size_t len, unsigned long long max, unsigned long long *out)
{
    if (len == 0 || len > 20)
        return false;
    unsigned long long v = 0;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i]) || v > (max - (unsigned)(s[i] - '0')) / 10)
            return false;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    *out = v;
    return true;
}

/* The start of the '.'-separated field that ends at `end` (exclusive). */
static size_t field_start(const char *s, size_t from, size_t end)
{
    size_t i = end;
    while (i > from && s[i - 1] != '.')
        i--;
    return i;
}

/* What a temporary name says of its writer: .NAME@HOST.NS.PID.TAG.tmp,
 * read from the right (NAME may hold '@' and '.', HOST holds no '@'). */
struct tmp_owner {
    char host[TMP_HOST_MAX + 1];
    unsigned long long ns, pid;
};

static bool parse_tmp_name(const char *name, struct tmp_owner *o)
{
    size_t len = strlen(name), sfx = strlen(TMP_SUFFIX);
    if (name[0] != '.' || len < sfx + 16 || strcmp(name + len - sfx, TMP_SUFFIX) != 0)
        return false;
    const char *at = strrchr(name, '@');
    if (at == NULL)
        return false;
    size_t from = (size_t)(at - name) + 1, end = len - sfx;
    size_t tag = field_start(name, from, end);
    if (end - tag != 8 || tag <= from)
        return false;
    for (size_t i = tag; i < end; i++)
        if (!isxdigit((unsigned char)name[i]))
            return false;
    size_t pid = field_start(name, from, tag - 1), ns = pid > from ? field_start(name, from, pid - 1) : from;
    size_t hlen = ns > from ? ns - 1 - from : 0;
    if (hlen == 0 || hlen > TMP_HOST_MAX || !parse_number(name + pid, tag - 1 - pid, INT_MAX, &o->pid) ||
        !parse_number(name + ns, pid - 1 - ns, ULLONG_MAX, &o->ns))
        return false;
    memcpy(o->host, name + from, hlen);
    o->host[hlen] = '\0';
    return true;
}

/* A temporary of a writer that is gone: named by a writer of this host
 * and PID namespace whose process no longer exists, and a regular file of
 * yours. Anything else (another host's writer, a live one, a PID we cannot
 * see, another user's file) is left alone. */
static bool stale_tmp(int dfd, const char *name, const char *host, unsigned long ns)
{
    struct tmp_owner o;
    if (name[0] != '.' || !parse_tmp_name(name, &o) || strcmp(o.host, host) != 0 || o.ns != ns)
        return false;
    if ((pid_t)o.pid == getpid() || kill((pid_t)o.pid, 0) == 0 || errno != ESRCH)
        return false;
    struct stat sb;
    return fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode) && sb.st_uid == geteuid();
}

/* Removes what writers killed mid-write (SIGKILL, a node lost) left in the
 * directory. Best effort: a leftover that stays is hidden from readers by
 * its name, so a failure here is no reason to fail the write. */
static void remove_stale_tmps(int dfd)
{
    int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
    if (dir == NULL) {
        if (fd >= 0)
            close(fd);
        return;
    }
    char host[TMP_HOST_MAX + 1];
    tmp_host(host, sizeof host);
    unsigned long ns = pid_namespace();
    for (struct dirent *e = readdir(dir); e != NULL; e = readdir(dir))
        if (stale_tmp(dfd, e->d_name, host, ns))
            unlinkat(dfd, e->d_name, 0);
    closedir(dir);
}

/* A temporary file beside `base` in `d`, created exclusively: a name
 * someone else made (a link planted in a shared directory) is never
 * opened. */
static enum fb_status open_tmp(const struct out_dir *d, const char *base, char *tmp, size_t len, int *fd,
                               struct fb_err *err)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    for (unsigned attempt = 0; attempt < TMP_TRIES; attempt++) {
        unsigned tag = (unsigned)now.tv_nsec ^ (attempt * 2654435761u);
        if (!fb_out_tmp_name(base, (long)getpid(), tag, tmp, len))
            return fb_fail(err, FB_ERR_IO, "path too long: %s%s%s", d->shown, separator_after(d->shown), base);
        *fd = openat(d->fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (*fd >= 0)
            return FB_OK;
        if (errno != EEXIST)
            return fb_fail(err, FB_ERR_IO, "cannot create %s%s%s: %s; choose a writable results path (-J FILE)",
                           d->shown, separator_after(d->shown), base, strerror(errno));
    }
    return fb_fail(err, FB_ERR_IO, "cannot create a temporary file in %s: %d names are taken; remove the .%s@*.tmp files",
                   d->shown, TMP_TRIES, base);
}

/* ---- what a path is ---------------------------------------------------- */

static enum fb_status refuse_kind(const char *path, const struct stat *st, struct fb_err *err)
{
    if (S_ISDIR(st->st_mode))
        return fb_fail(err, FB_ERR_IO, "%s is a directory; name a file in it (e.g. %s/run.json)", path, path);
    const char *what = S_ISBLK(st->st_mode) ? "a block device" : S_ISSOCK(st->st_mode) ? "a socket" : "not a regular file";
    return fb_fail(err, FB_ERR_IO, "%s is %s and is not written over; name a regular file (or /dev/null to discard)",
                   path, what);
}

static enum fb_status copy_path(const char *path, char *out, size_t len, struct fb_err *err)
{
    if (snprintf(out, len, "%s", path) >= (int)len)
        return fb_fail(err, FB_ERR_IO, "path too long: %s", path);
    return FB_OK;
}

/* A symbolic link to a regular file: the file itself, so that the
 * replacement lands there and the link stays a link. */
static enum fb_status resolve_link(const char *path, char *real, size_t len, struct fb_err *err)
{
    char buf[PATH_MAX];
    if (realpath(path, buf) == NULL)
        return fb_fail(err, FB_ERR_IO, "cannot resolve the symbolic link %s: %s; choose another output file",
                       path, strerror(errno));
    return copy_path(buf, real, len, err);
}

enum fb_status fb_out_kind_of(const char *path, enum fb_out_kind *kind, char *real, size_t len,
                              struct fb_err *err)
{
    size_t n = strlen(path);
    if (n == 0)
        return fb_fail(err, FB_ERR_IO, "the output path is empty; name a file (-J FILE)");
    if (path[n - 1] == '/')
        return fb_fail(err, FB_ERR_IO, "%s names a directory; name a file in it (e.g. %srun.json)", path, path);
    struct stat ls, st;
    if (lstat(path, &ls) != 0) {
        if (errno != ENOENT)
            return fb_fail(err, FB_ERR_IO, "cannot use %s: %s; choose another output file", path, strerror(errno));
        *kind = FB_OUT_NEW;
        return copy_path(path, real, len, err);
    }
    st = ls;
    if (S_ISLNK(ls.st_mode) && stat(path, &st) != 0)
        return fb_fail(err, FB_ERR_IO, "%s is a symbolic link to a missing or unreachable file (%s); remove the link or choose another output file",
                       path, strerror(errno));
    if (S_ISREG(st.st_mode)) {
        *kind = FB_OUT_FILE;
        return S_ISLNK(ls.st_mode) ? resolve_link(path, real, len, err) : copy_path(path, real, len, err);
    }
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
        *kind = FB_OUT_STREAM;
        return copy_path(path, real, len, err);
    }
    return refuse_kind(path, &st, err);
}

bool fb_out_is_stream(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode));
}

/* ---- writing ------------------------------------------------------------ */

static enum fb_status write_all(int fd, const char *data, size_t len, const char *path,
                                struct fb_err *err)
{
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return fb_fail(err, FB_ERR_IO, "cannot write %s: %s; free space or choose another path (-J FILE)",
                           path, strerror(errno));
        data += n;
        len -= (size_t)n;
    }
    return FB_OK;
}

/* Writes, flushes to disk and closes; the first failure is kept. */
static enum fb_status write_and_close(int fd, const char *text, size_t len, const char *path,
                                      struct fb_err *err)
{
    enum fb_status st = write_all(fd, text, len, path, err);
    if (st == FB_OK && fsync(fd) != 0)
        st = fb_fail(err, FB_ERR_IO, "cannot flush %s: %s", path, strerror(errno));
    if (close(fd) != 0 && st == FB_OK)
        st = fb_fail(err, FB_ERR_IO, "cannot close %s: %s", path, strerror(errno));
    return st;
}

/* The temporary file in `d`, whole and on disk, its name in `tmp`. Stale
 * temporaries of killed writers go first: this is the next write into
 * their directory. */
static enum fb_status write_tmp(const struct out_dir *d, const char *base, char *tmp, size_t tlen, const char *text,
                                size_t len, struct fb_err *err)
{
    remove_stale_tmps(d->fd);
    int fd = -1;
    enum fb_status st = open_tmp(d, base, tmp, tlen, &fd, err);
    struct fb_str shown = {0};
    fb_str_addf(&shown, "%s%s%s", d->shown, separator_after(d->shown), base);
    if (st == FB_OK)
        st = write_and_close(fd, text, len, fb_str_get(&shown), err);
    fb_str_free(&shown);
    if (st != FB_OK && fd >= 0)
        unlinkat(d->fd, tmp, 0);
    return st;
}

/* The directory a file named `path` is written in, and its name there.
 * A symbolic link to a regular file is followed (the file it names is
 * replaced, the link kept) when it is yours or root's, and the directory
 * of that file meets the same rule. On an error d->fd is closed (-1). */
static enum fb_status find_target(const char *path, struct out_dir *d, char *base, size_t blen, struct fb_err *err)
{
    const char *name;
    enum fb_status st = open_out_dir(path, ROOT_IS_PARENT, d, &name, err);
    struct stat ls;
    if (st != FB_OK || fstatat(d->fd, name, &ls, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISLNK(ls.st_mode))
        return st == FB_OK ? copy_path(name, base, blen, err) : st;
    close(d->fd);
    d->fd = -1;
    if (!trusted_owner(ls.st_uid))
        return fb_fail(err, FB_ERR_IO, "%s is a symbolic link of uid %u, not yours or root's, and is not followed; "
                       "remove it or choose another output file (-J FILE)", path, (unsigned)ls.st_uid);
    char real[PATH_MAX];
    st = resolve_link(path, real, sizeof real, err);
    if (st == FB_OK)
        st = open_out_dir(real, ROOT_IS_PARENT, d, &name, err);
    return st == FB_OK ? copy_path(name, base, blen, err) : st;
}

static enum fb_status open_target(const char *path, struct out_dir *d, char *base, size_t blen, struct fb_err *err)
{
    enum fb_status st = find_target(path, d, base, blen, err);
    if (st != FB_OK && d->fd >= 0) {
        close(d->fd); /* a name too long for copy_path, after the directory opened */
        d->fd = -1;
    }
    return st;
}

static enum fb_status replace_file(const char *path, const char *text, size_t len, struct fb_err *err)
{
    struct out_dir d;
    char base[NAME_MAX + 1], tmp[NAME_MAX + 1];
    enum fb_status st = open_target(path, &d, base, sizeof base, err);
    if (st != FB_OK)
        return st;
    st = write_tmp(&d, base, tmp, sizeof tmp, text, len, err);
    if (st == FB_OK && renameat(d.fd, tmp, d.fd, base) != 0) {
        st = fb_fail(err, FB_ERR_IO, "cannot rename %s%s%s to %s: %s", d.shown, separator_after(d.shown), tmp, base, strerror(errno));
        unlinkat(d.fd, tmp, 0);
    }
    close(d.fd);
    return st;
}

/* Into the device or FIFO as it is: no O_CREAT, no O_TRUNC, no rename.
 * Nothing is created beside it, so the directory it is in is not walked:
 * /dev/fd/63 of a shell's >(...) lies behind a link. */
static enum fb_status write_stream(const char *path, const char *text, size_t len, struct fb_err *err)
{
    int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return fb_fail(err, FB_ERR_IO, "cannot write to %s: %s; choose another output file", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        /* Became a regular file since it was looked at: replace it whole. */
        close(fd);
        return replace_file(path, text, len, err);
    }
    enum fb_status s = write_all(fd, text, len, path, err);
    if (close(fd) != 0 && s == FB_OK)
        s = fb_fail(err, FB_ERR_IO, "cannot close %s: %s", path, strerror(errno));
    return s;
}

enum fb_status fb_out_write(const char *path, const char *text, size_t len, struct fb_err *err)
{
    enum fb_out_kind kind;
    char real[PATH_MAX];
    enum fb_status st = fb_out_kind_of(path, &kind, real, sizeof real, err);
    if (st != FB_OK)
        return st;
    return kind == FB_OUT_STREAM ? write_stream(path, text, len, err) : replace_file(path, text, len, err);
}

enum fb_status fb_probe_writable(const char *path, struct fb_err *err)
{
    enum fb_out_kind kind;
    char real[PATH_MAX];
    enum fb_status st = fb_out_kind_of(path, &kind, real, sizeof real, err);
    if (st != FB_OK)
        return st;
    if (kind == FB_OUT_STREAM)
        return access(path, W_OK) == 0 ? FB_OK
                                       : fb_fail(err, FB_ERR_IO, "cannot write to %s: %s; choose another output file",
                                                 path, strerror(errno));
    struct out_dir d;
    char base[NAME_MAX + 1], tmp[NAME_MAX + 1];
    st = open_target(path, &d, base, sizeof base, err);
    int fd = -1;
    if (st == FB_OK) {
        remove_stale_tmps(d.fd);
        st = open_tmp(&d, base, tmp, sizeof tmp, &fd, err);
    }
    if (st == FB_OK) {
        close(fd);
        unlinkat(d.fd, tmp, 0);
    }
    if (d.fd >= 0)
        close(d.fd);
    return st;
}

/* ---- new results: created, never replacing ----------------------------- */

bool fb_out_numbered(const char *path, int n, char *out, size_t cap)
{
    if (n <= 1)
        return snprintf(out, cap, "%s", path) < (int)cap;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    size_t stem = dot != NULL && dot != base ? (size_t)(dot - path) : strlen(path);
    return snprintf(out, cap, "%.*s-%d%s", (int)stem, path, n, path + stem) < (int)cap;
}

/* Filesystems without hard links say so with these. */
static bool no_hard_links(int e)
{
    return e == EPERM || e == EOPNOTSUPP || e == EXDEV || e == EMLINK || e == ENOSYS;
}

/* Where hard links are not to be had: the name created exclusively and
 * written in place (a reader may see it grow for a moment). */
static enum fb_status create_in_place(const struct out_dir *d, const char *name, const char *text, size_t len,
                                      bool *taken, struct fb_err *err)
{
    int fd = openat(d->fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    *taken = fd < 0 && errno == EEXIST;
    if (fd < 0)
        return *taken ? FB_OK : fb_fail(err, FB_ERR_IO, "cannot create %s%s%s: %s", d->shown, separator_after(d->shown), name, strerror(errno));
    return write_and_close(fd, text, len, name, err);
}

/* Gives the whole temporary file the name, unless someone has it (*taken). */
static enum fb_status claim_name(const struct out_dir *d, const char *tmp, const char *name, const char *text,
                                 size_t len, bool *linkless, bool *taken, struct fb_err *err)
{
    *taken = false;
    if (!*linkless && linkat(d->fd, tmp, d->fd, name, 0) == 0)
        return FB_OK;
    if (!*linkless && errno == EEXIST) {
        *taken = true;
        return FB_OK;
    }
    if (!*linkless && !no_hard_links(errno))
        return fb_fail(err, FB_ERR_IO, "cannot create %s%s%s: %s", d->shown, separator_after(d->shown), name, strerror(errno));
    *linkless = true;
    return create_in_place(d, name, text, len, taken, err);
}

static const char *base_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash != NULL ? slash + 1 : path;
}

enum fb_status fb_out_create(char *path, size_t cap, const char *text, size_t len,
                             struct fb_err *err)
{
    struct out_dir d;
    const char *base;
    char tmp[NAME_MAX + 1], name[PATH_MAX];
    enum fb_status st = open_out_dir(path, ROOT_IS_GRANDPARENT, &d, &base, err);
    if (st != FB_OK)
        return st;
    st = write_tmp(&d, base, tmp, sizeof tmp, text, len, err);
    bool linkless = false, taken = true;
    for (int n = 1; st == FB_OK && taken && n <= NUMBERED_MAX; n++) {
        if (!fb_out_numbered(path, n, name, sizeof name))
            st = fb_fail(err, FB_ERR_IO, "path too long: %s", path);
        else
            st = claim_name(&d, tmp, base_of(name), text, len, &linkless, &taken, err);
    }
    unlinkat(d.fd, tmp, 0);
    close(d.fd);
    if (st == FB_OK && taken)
        st = fb_fail(err, FB_ERR_IO, "%s and %d numbered names beside it exist; choose another results directory",
                     path, NUMBERED_MAX - 1);
    if (st == FB_OK && snprintf(path, cap, "%s", name) >= (int)cap)
        st = fb_fail(err, FB_ERR_IO, "path too long: %s", name);
    return st;
}

/* The writers' messages name -J FILE, the option of the measuring tools;
 * a command whose path came from another option names that one. */
void fb_out_name_option(struct fb_err *err, const char *flag)
{
    char *at = strstr(err->msg, "-J FILE");
    struct fb_str msg = {0};
    if (at != NULL)
        fb_str_addf(&msg, "%.*s%s%s", (int)(at - err->msg), err->msg, flag, at + strlen("-J FILE"));
    else
        fb_str_addf(&msg, "%s (%s)", err->msg, flag);
    fb_copy(err->msg, sizeof err->msg, fb_str_get(&msg), msg.len);
    fb_str_free(&msg);
}
