/* Files as wholes: read into memory (procfs and sysfs too), text checked to
 * be text, and the JSON files of a directory walked in name order. */
#ifndef FB_CORE_FILES_H
#define FB_CORE_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "core/status.h"

/* The largest file any reader takes (docs/exit-codes.md): results, logs,
 * profiles and topology exports are KiB to a few MiB, so this only stops
 * /dev/zero, a runaway log or a sparse file from exhausting memory. */
#define FB_INPUT_MAX_BYTES (256u << 20)

/* Reads a whole input into a NUL-terminated buffer (free it), growing as it
 * reads: procfs and sysfs files report size 0. FB_ERR_INPUT naming the file
 * when it is missing, not a regular file after following links (a FIFO,
 * device, directory or socket: refused without blocking or reading it) or
 * over FB_INPUT_MAX_BYTES. */
enum fb_status fb_read_file(const char *path, char **out, size_t *out_len, struct fb_err *err);

/* The same for a text a person gives: FB_ERR_INPUT naming the file when it
 * is missing, unreadable, not a regular file, too large or holds NUL bytes
 * (not text). */
enum fb_status fb_read_text_file(const char *path, char **out, size_t *len, struct fb_err *err);

bool fb_has_suffix(const char *s, const char *suffix);

/* Walks of results trees, profile directories and log directories: every
 * *.json file of `dir` in name order, going `depth` levels into
 * subdirectories; entries starting with '.' (hidden files, the temporaries
 * of writers, outfile.h) and entries that are neither regular files nor
 * directories (FIFOs, devices) skipped. A symbolic link inside the tree is
 * never followed, and a file or directory met before (by device and inode:
 * hard links, bind mounts, a directory given twice or inside another one
 * given) is not read again: each run is read once, and a loop cannot make
 * a walk longer than the tree. `dir` itself is followed like any path given.
 * Stops at the first error. A directory that cannot be read is
 * FB_ERR_INPUT, unless `missing_ok` (a search path, where absent
 * directories are normal). */
typedef enum fb_status (*fb_json_visit)(const char *path, void *ctx, struct fb_err *err);
enum fb_status fb_walk_json_files(const char *dir, int depth, bool missing_ok, fb_json_visit visit,
                                  void *ctx, struct fb_err *err);

/* What several walks share, so that nothing is read twice across them
 * (the directories of one command line): start it as {0}, free it with
 * fb_walk_free. `repeats` counts what was passed over as met before. */
struct fb_walk_id {
    dev_t dev;
    ino_t ino;
    bool used;
};
struct fb_walk {
    struct fb_walk_id *seen; /* open addressing, at most half full */
    size_t n, cap;
    size_t repeats;
};
enum fb_status fb_walk_tree(struct fb_walk *w, const char *dir, int depth, bool missing_ok, fb_json_visit visit,
                            void *ctx, struct fb_err *err);
/* A file named on its own, visited unless the walk met it already (named
 * twice, or inside a directory walked before); whatever its name. */
enum fb_status fb_walk_file(struct fb_walk *w, const char *path, fb_json_visit visit, void *ctx,
                            struct fb_err *err);
void fb_walk_free(struct fb_walk *w);

#endif
