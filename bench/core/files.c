#include "core/files.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum fb_status fb_read_file(const char *path, char **out, size_t *out_len, struct fb_err *err)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return fb_fail(err, FB_ERR_INPUT, "cannot open %s: %s", path, strerror(errno));
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    while (buf != NULL) {
        size_t n = fread(buf + len, 1, cap - len - 1, f);
        len += n;
        if (n == 0)
            break;
        if (len + 1 == cap) {
            char *bigger = realloc(buf, cap * 2);
            if (bigger == NULL) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
    }
    int read_error = ferror(f);
    fclose(f);
    if (buf == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory reading %s", path);
    if (read_error) {
        free(buf);
        return fb_fail(err, FB_ERR_INPUT, "cannot read %s (is it a directory?)", path);
    }
    buf[len] = '\0';
    *out = buf;
    *out_len = len;
    return FB_OK;
}

enum fb_status fb_read_text_file(const char *path, char **out, size_t *len, struct fb_err *err)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return fb_fail(err, FB_ERR_INPUT, "cannot open %s: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode))
        return fb_fail(err, FB_ERR_INPUT, "%s is a directory; give a file", path);
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

static enum fb_status visit_entry(const char *dir, const char *name, int depth, fb_json_visit visit,
                                  void *ctx, struct fb_err *err)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return fb_fail(err, FB_ERR_INPUT, "path too long under %s", dir);
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return depth > 0 ? fb_walk_json_files(path, depth - 1, false, visit, ctx, err) : FB_OK;
    return fb_has_suffix(name, ".json") ? visit(path, ctx, err) : FB_OK;
}

enum fb_status fb_walk_json_files(const char *dir, int depth, bool missing_ok, fb_json_visit visit,
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
            st = visit_entry(dir, names[i]->d_name, depth, visit, ctx, err);
        free(names[i]);
    }
    free(names);
    return st;
}
