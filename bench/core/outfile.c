#include "core/outfile.h"

#include "core/text.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

enum fb_status fb_make_parent_dirs(const char *path, struct fb_err *err)
{
    char dir[PATH_MAX];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir)
        return fb_fail(err, FB_ERR_IO, "path too long: %s", path);
    char *slash = strrchr(dir, '/');
    if (slash == NULL || slash == dir)
        return FB_OK;
    *slash = '\0';
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
            break;
    }
    return FB_OK;
}

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

/* A temporary file beside `target`, created exclusively: a name someone
 * else made (a link planted in a shared directory) is never opened. */
static enum fb_status open_tmp(const char *target, char *tmp, size_t len, int *fd, struct fb_err *err)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    for (unsigned attempt = 0; attempt < TMP_TRIES; attempt++) {
        unsigned tag = (unsigned)now.tv_nsec ^ (attempt * 2654435761u);
        if (snprintf(tmp, len, "%s.tmp.%ld.%08x", target, (long)getpid(), tag) >= (int)len)
            return fb_fail(err, FB_ERR_IO, "path too long: %s", target);
        *fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (*fd >= 0)
            return FB_OK;
        if (errno != EEXIST)
            return fb_fail(err, FB_ERR_IO, "cannot create %s: %s; choose a writable results path (-J FILE)",
                           tmp, strerror(errno));
    }
    return fb_fail(err, FB_ERR_IO, "cannot create a temporary file beside %s: %d names are taken; remove the %s.tmp.* files",
                   target, TMP_TRIES, target);
}

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

/* The temporary file, whole and on disk, its name in `tmp`. */
static enum fb_status write_tmp(const char *target, char *tmp, size_t tlen, const char *text, size_t len,
                                struct fb_err *err)
{
    int fd = -1;
    enum fb_status st = open_tmp(target, tmp, tlen, &fd, err);
    if (st == FB_OK)
        st = write_and_close(fd, text, len, tmp, err);
    if (st != FB_OK && fd >= 0)
        unlink(tmp);
    return st;
}

static enum fb_status replace_file(const char *real, const char *text, size_t len, struct fb_err *err)
{
    char tmp[PATH_MAX];
    enum fb_status st = fb_make_parent_dirs(real, err);
    if (st == FB_OK)
        st = write_tmp(real, tmp, sizeof tmp, text, len, err);
    if (st != FB_OK)
        return st;
    if (rename(tmp, real) != 0) {
        st = fb_fail(err, FB_ERR_IO, "cannot rename %s to %s: %s", tmp, real, strerror(errno));
        unlink(tmp);
    }
    return st;
}

/* Into the device or FIFO as it is: no O_CREAT, no O_TRUNC, no rename. */
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
    return kind == FB_OUT_STREAM ? write_stream(path, text, len, err) : replace_file(real, text, len, err);
}

enum fb_status fb_probe_writable(const char *path, struct fb_err *err)
{
    enum fb_out_kind kind;
    char real[PATH_MAX], tmp[PATH_MAX];
    enum fb_status st = fb_out_kind_of(path, &kind, real, sizeof real, err);
    if (st != FB_OK)
        return st;
    if (kind == FB_OUT_STREAM)
        return access(path, W_OK) == 0 ? FB_OK
                                       : fb_fail(err, FB_ERR_IO, "cannot write to %s: %s; choose another output file",
                                                 path, strerror(errno));
    st = fb_make_parent_dirs(real, err);
    int fd = -1;
    if (st == FB_OK)
        st = open_tmp(real, tmp, sizeof tmp, &fd, err);
    if (st == FB_OK) {
        close(fd);
        unlink(tmp);
    }
    return st;
}

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
static enum fb_status create_in_place(const char *name, const char *text, size_t len, bool *taken,
                                      struct fb_err *err)
{
    int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    *taken = fd < 0 && errno == EEXIST;
    if (fd < 0)
        return *taken ? FB_OK : fb_fail(err, FB_ERR_IO, "cannot create %s: %s", name, strerror(errno));
    return write_and_close(fd, text, len, name, err);
}

/* Gives the whole temporary file the name, unless someone has it (*taken). */
static enum fb_status claim_name(const char *tmp, const char *name, const char *text, size_t len,
                                 bool *linkless, bool *taken, struct fb_err *err)
{
    *taken = false;
    if (!*linkless && link(tmp, name) == 0)
        return FB_OK;
    if (!*linkless && errno == EEXIST) {
        *taken = true;
        return FB_OK;
    }
    if (!*linkless && !no_hard_links(errno))
        return fb_fail(err, FB_ERR_IO, "cannot create %s: %s", name, strerror(errno));
    *linkless = true;
    return create_in_place(name, text, len, taken, err);
}

enum fb_status fb_out_create(char *path, size_t cap, const char *text, size_t len,
                             struct fb_err *err)
{
    char tmp[PATH_MAX], name[PATH_MAX];
    enum fb_status st = fb_make_parent_dirs(path, err);
    if (st == FB_OK)
        st = write_tmp(path, tmp, sizeof tmp, text, len, err);
    if (st != FB_OK)
        return st;
    bool linkless = false, taken = true;
    for (int n = 1; st == FB_OK && taken && n <= NUMBERED_MAX; n++) {
        if (!fb_out_numbered(path, n, name, sizeof name))
            st = fb_fail(err, FB_ERR_IO, "path too long: %s", path);
        else
            st = claim_name(tmp, name, text, len, &linkless, &taken, err);
    }
    unlink(tmp);
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
