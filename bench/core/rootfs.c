#include "core/files.h"
#include "core/rootfs.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/jsonio.h"
#include "core/text.h"

bool fb_rootfs_path(const char *root, const char *path, char *buf, size_t len)
{
    /* "/" and "" both mean the live system; a trailing slash on the root
     * must not double up with the path's leading one. */
    size_t rl = root ? strlen(root) : 0;
    while (rl > 0 && root[rl - 1] == '/')
        rl--;
    int n = snprintf(buf, len, "%.*s%s", (int)rl, rl ? root : "", path);
    return n >= 0 && (size_t)n < len;
}

static bool stat_root(const char *root, const char *path, struct stat *st)
{
    char full[FB_ROOTFS_PATH_MAX];
    return fb_rootfs_path(root, path, full, sizeof full) && stat(full, st) == 0;
}

bool fb_rootfs_exists(const char *root, const char *path)
{
    struct stat st;
    return stat_root(root, path, &st);
}

bool fb_rootfs_is_dir(const char *root, const char *path)
{
    struct stat st;
    return stat_root(root, path, &st) && S_ISDIR(st.st_mode);
}

enum fb_status fb_rootfs_read(const char *root, const char *path, char **out,
                              struct fb_err *err)
{
    size_t len = 0;
    return fb_rootfs_read_bytes(root, path, out, &len, err);
}

enum fb_status fb_rootfs_read_bytes(const char *root, const char *path, char **out,
                                    size_t *out_len, struct fb_err *err)
{
    char full[FB_ROOTFS_PATH_MAX];
    if (!fb_rootfs_path(root, path, full, sizeof full))
        return fb_fail(err, FB_ERR_INPUT, "path too long: %s%s", root, path);
    return fb_read_file(full, out, out_len, err);
}

enum fb_status fb_rootfs_read_line(const char *root, const char *path, char *buf,
                                   size_t len, struct fb_err *err)
{
    char *text = NULL;
    enum fb_status st = fb_rootfs_read(root, path, &text, err);
    if (st != FB_OK)
        return st;
    size_t n = strcspn(text, "\n");
    if (n >= len)
        n = len - 1;
    memcpy(buf, text, n);
    buf[n] = '\0';
    free(text);
    return FB_OK;
}

enum fb_status fb_rootfs_read_long(const char *root, const char *path, long *out,
                                   struct fb_err *err)
{
    char line[64];
    enum fb_status st = fb_rootfs_read_line(root, path, line, sizeof line, err);
    if (st != FB_OK)
        return st;
    char *end = NULL;
    errno = 0;
    long v = strtol(line, &end, 10);
    if (end == line || errno != 0 || (*end != '\0' && *end != ' '))
        return fb_fail(err, FB_ERR_INPUT, "%s%s holds '%s', not an integer", root, path, line);
    *out = v;
    return FB_OK;
}

enum fb_status fb_rootfs_readlink(const char *root, const char *path, char *buf, size_t len,
                                  struct fb_err *err)
{
    char full[FB_ROOTFS_PATH_MAX];
    if (!fb_rootfs_path(root, path, full, sizeof full))
        return fb_fail(err, FB_ERR_INPUT, "path too long: %s%s", root, path);
    ssize_t n = readlink(full, buf, len);
    if (n < 0)
        return fb_fail(err, FB_ERR_INPUT, "cannot read link %s: %s", full, strerror(errno));
    /* readlink neither terminates nor says it truncated: a full buffer may
     * have been cut. */
    if ((size_t)n >= len)
        return fb_fail(err, FB_ERR_INPUT, "link %s is longer than %zu bytes", full, len - 1);
    buf[n] = '\0';
    return FB_OK;
}

void fb_rootfs_free_list(char **names, size_t count)
{
    for (size_t i = 0; i < count; i++)
        free(names[i]);
    free(names);
}

enum fb_status fb_rootfs_list(const char *root, const char *path, char ***out,
                              size_t *count, struct fb_err *err)
{
    char full[FB_ROOTFS_PATH_MAX];
    if (!fb_rootfs_path(root, path, full, sizeof full))
        return fb_fail(err, FB_ERR_INPUT, "path too long: %s%s", root, path);
    DIR *d = opendir(full);
    if (d == NULL)
        return fb_fail(err, FB_ERR_INPUT, "cannot list %s: %s", full, strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    enum fb_status st = FB_OK;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            char **bigger = realloc(names, ncap * sizeof *names);
            if (bigger == NULL) {
                st = fb_fail(err, FB_ERR_INTERNAL, "out of memory listing %s", full);
                break;
            }
            names = bigger;
            cap = ncap;
        }
        names[n] = strdup(e->d_name);
        if (names[n] == NULL) {
            st = fb_fail(err, FB_ERR_INTERNAL, "out of memory listing %s", full);
            break;
        }
        n++;
    }
    closedir(d);
    if (st != FB_OK) {
        fb_rootfs_free_list(names, n);
        return st;
    }
    if (n > 1)
        qsort(names, n, sizeof *names, fb_name_order);
    *out = names;
    *count = n;
    return FB_OK;
}
