#include "core/files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *file_kind(mode_t mode)
{
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO (named pipe)";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISSOCK(mode))
        return "a socket";
    return "not a regular file";
}

/* Opens an input for reading without blocking; what is not a regular file
 * within the limit is refused. */
static enum fb_status open_input(const char *path, int *fd_out, struct fb_err *err)
{
    /* O_NONBLOCK: opening a FIFO for reading otherwise waits for a writer
     * forever; fstat on what was opened (links followed) then decides, so
     * nothing can swap the file between the check and the read. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return fb_fail(err, FB_ERR_INPUT, "cannot open %s: %s", path, strerror(errno));
    struct stat sb;
    enum fb_status st = FB_OK;
    if (fstat(fd, &sb) != 0)
        st = fb_fail(err, FB_ERR_INPUT, "cannot read %s: %s", path, strerror(errno));
    else if (!S_ISREG(sb.st_mode))
        st = fb_fail(err, FB_ERR_INPUT, "%s is %s, not a regular file; give a file", path,
                     file_kind(sb.st_mode));
    else if (sb.st_size > (off_t)FB_INPUT_MAX_BYTES)
        st = fb_fail(err, FB_ERR_INPUT, "%s is %lld bytes, over the %d MiB limit for an input file (results, logs, profiles and topologies are far smaller); give the right file",
                     path, (long long)sb.st_size, FB_INPUT_MAX_BYTES >> 20);
    if (st != FB_OK) {
        close(fd);
        return st;
    }
    *fd_out = fd;
    return FB_OK;
}

/* Doubles the buffer, never past one byte over the limit (and its NUL):
 * enough to tell that a file is over it. */
static enum fb_status grow(char **buf, size_t *cap, const char *path, struct fb_err *err)
{
    size_t want = *cap * 2 > (size_t)FB_INPUT_MAX_BYTES + 2 ? (size_t)FB_INPUT_MAX_BYTES + 2 : *cap * 2;
    char *bigger = realloc(*buf, want);
    if (bigger == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory reading %s", path);
    *buf = bigger;
    *cap = want;
    return FB_OK;
}

/* Reads to the end, at most FB_INPUT_MAX_BYTES: procfs and sysfs files say
 * size 0, and a file may grow while it is read. */
static enum fb_status read_all(int fd, const char *path, char **out, size_t *out_len,
                               struct fb_err *err)
{
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    enum fb_status st = buf != NULL ? FB_OK : fb_fail(err, FB_ERR_INTERNAL, "out of memory reading %s", path);
    while (st == FB_OK) {
        if (len > FB_INPUT_MAX_BYTES) {
            st = fb_fail(err, FB_ERR_INPUT, "%s grew past the %d MiB limit for an input file while it was read; give a finished file",
                         path, FB_INPUT_MAX_BYTES >> 20);
            break;
        }
        if (len + 1 == cap && (st = grow(&buf, &cap, path, err)) != FB_OK)
            break;
        ssize_t n = read(fd, buf + len, cap - len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            st = fb_fail(err, FB_ERR_INPUT, "cannot read %s: %s", path, strerror(errno));
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    if (st != FB_OK) {
        free(buf);
        return st;
    }
    buf[len] = '\0';
    *out = buf;
    *out_len = len;
    return FB_OK;
}

enum fb_status fb_read_file(const char *path, char **out, size_t *out_len, struct fb_err *err)
{
    int fd = -1;
    enum fb_status st = open_input(path, &fd, err);
    if (st != FB_OK)
        return st;
    st = read_all(fd, path, out, out_len, err);
    close(fd);
    return st;
}

enum fb_status fb_read_text_file(const char *path, char **out, size_t *len, struct fb_err *err)
{
    char *text = NULL;
    enum fb_status st = fb_read_file(path, &text, len, err);
    if (st != FB_OK)
        return st;
    if (memchr(text, '\0', *len) != NULL) {
        free(text);
        return fb_fail(err, FB_ERR_INPUT, "%s contains NUL bytes; it is not a text file", path);
    }
    *out = text;
    return FB_OK;
}

bool fb_has_suffix(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a > b && strcmp(s + a - b, suffix) == 0;
}

/* ---- walks: every file once ------------------------------------------ */

static size_t id_hash(dev_t dev, ino_t ino, size_t cap)
{
    unsigned long long h = (unsigned long long)ino * 0x9e3779b97f4a7c15ull ^ (unsigned long long)dev;
    h ^= h >> 29;
    return (size_t)h & (cap - 1);
}

/* The slot of (dev, ino): where it is, or the free one where it goes. */
static struct fb_walk_id *id_slot(struct fb_walk_id *ids, size_t cap, dev_t dev, ino_t ino)
{
    size_t i = id_hash(dev, ino, cap);
    while (ids[i].used && (ids[i].dev != dev || ids[i].ino != ino))
        i = (i + 1) & (cap - 1);
    return &ids[i];
}

/* Doubles the table (kept at most half full, so probes stay short). */
static enum fb_status grow_ids(struct fb_walk *w, struct fb_err *err)
{
    size_t cap = w->cap ? w->cap * 2 : 256;
    struct fb_walk_id *ids = calloc(cap, sizeof *ids);
    if (ids == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory walking a directory tree");
    for (size_t i = 0; i < w->cap; i++)
        if (w->seen[i].used)
            *id_slot(ids, cap, w->seen[i].dev, w->seen[i].ino) = w->seen[i];
    free(w->seen);
    w->seen = ids;
    w->cap = cap;
    return FB_OK;
}

/* True in *first when `sb` is met for the first time (and remembers it). */
static enum fb_status first_visit(struct fb_walk *w, const struct stat *sb, bool *first, struct fb_err *err)
{
    if ((w->n + 1) * 2 > w->cap) {
        enum fb_status st = grow_ids(w, err);
        if (st != FB_OK)
            return st;
    }
    struct fb_walk_id *slot = id_slot(w->seen, w->cap, sb->st_dev, sb->st_ino);
    *first = !slot->used;
    if (*first) {
        *slot = (struct fb_walk_id){sb->st_dev, sb->st_ino, true};
        w->n++;
    } else {
        w->repeats++;
    }
    return FB_OK;
}

void fb_walk_free(struct fb_walk *w)
{
    free(w->seen);
    memset(w, 0, sizeof *w);
}

static enum fb_status walk_dir(struct fb_walk *w, const char *dir, int depth, bool missing_ok, fb_json_visit visit,
                               void *ctx, struct fb_err *err);

/* One entry of a walked directory. lstat, not stat: a symbolic link in a
 * tree is never followed, so a link to a sibling run or to a directory
 * above (a loop) reads nothing twice; device and inode catch what links
 * cannot (hard links, bind mounts, directories given twice). */
static enum fb_status visit_entry(struct fb_walk *w, const char *dir, const char *name, int depth,
                                  fb_json_visit visit, void *ctx, struct fb_err *err)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return fb_fail(err, FB_ERR_INPUT, "path too long under %s", dir);
    struct stat sb;
    if (lstat(path, &sb) != 0) /* gone or unreadable: a *.json says so when read */
        return fb_has_suffix(name, ".json") ? visit(path, ctx, err) : FB_OK;
    bool dir_entry = S_ISDIR(sb.st_mode);
    /* A FIFO or device named *.json is no file anyone wrote: reading it
     * would block or never end. */
    if ((!dir_entry && !S_ISREG(sb.st_mode)) || (dir_entry && depth <= 0) ||
        (!dir_entry && !fb_has_suffix(name, ".json")))
        return FB_OK;
    bool first = false;
    enum fb_status st = first_visit(w, &sb, &first, err);
    if (st != FB_OK || !first)
        return st;
    return dir_entry ? walk_dir(w, path, depth - 1, false, visit, ctx, err) : visit(path, ctx, err);
}

static enum fb_status walk_dir(struct fb_walk *w, const char *dir, int depth, bool missing_ok, fb_json_visit visit,
                               void *ctx, struct fb_err *err)
{
    struct dirent **names = NULL;
    int n = scandir(dir, &names, NULL, alphasort);
    if (n < 0 && missing_ok)
        return FB_OK;
    if (n < 0)
        return fb_fail(err, FB_ERR_INPUT, "cannot read directory %s: %s", dir, strerror(errno));
    enum fb_status st = FB_OK;
    for (int i = 0; i < n; i++) {
        if (st == FB_OK && names[i]->d_name[0] != '.')
            st = visit_entry(w, dir, names[i]->d_name, depth, visit, ctx, err);
        free(names[i]);
    }
    free(names);
    return st;
}

enum fb_status fb_walk_tree(struct fb_walk *w, const char *dir, int depth, bool missing_ok, fb_json_visit visit,
                            void *ctx, struct fb_err *err)
{
    /* The directory named is followed like any path a user gives; a
     * directory met already (given twice, or inside one given before) is
     * not read again. */
    struct stat sb;
    bool first = true;
    if (stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        enum fb_status st = first_visit(w, &sb, &first, err);
        if (st != FB_OK)
            return st;
    }
    return first ? walk_dir(w, dir, depth, missing_ok, visit, ctx, err) : FB_OK;
}

enum fb_status fb_walk_file(struct fb_walk *w, const char *path, fb_json_visit visit, void *ctx,
                            struct fb_err *err)
{
    struct stat sb;
    bool first = true;
    if (stat(path, &sb) == 0) {
        enum fb_status st = first_visit(w, &sb, &first, err);
        if (st != FB_OK)
            return st;
    }
    return first ? visit(path, ctx, err) : FB_OK;
}

enum fb_status fb_walk_json_files(const char *dir, int depth, bool missing_ok, fb_json_visit visit,
                                  void *ctx, struct fb_err *err)
{
    struct fb_walk w = {0};
    enum fb_status st = fb_walk_tree(&w, dir, depth, missing_ok, visit, ctx, err);
    fb_walk_free(&w);
    return st;
}
