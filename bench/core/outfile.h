/* Output files that never destroy what is not theirs: a regular file is
 * replaced atomically (a temporary file created exclusively beside it, then
 * renamed over it), a character device or FIFO (/dev/null, /dev/stdout, a
 * pipe) is written into and stays what it is, and anything else (a
 * directory, a block device, a socket, a symbolic link to nothing) is
 * refused with FB_ERR_IO. A symbolic link to a regular file is followed
 * when it is yours or root's: the file it names is replaced and the link
 * kept. New results are created exclusively, so a run never lands on an
 * existing result.
 *
 * Where results go (docs/results-schema.md, Where results are written):
 * the results root is --results-dir DIR for a name a run makes up
 * (DIR/LABEL/NAME), and the directory of a file the user names (-J FILE,
 * -o FILE). What is above the root is resolved as written. The root and
 * every directory below it is opened with O_NOFOLLOW one at a time
 * (mkdirat when missing) and must belong to the effective uid or to root:
 * a symbolic link there, or a directory of another user, is FB_ERR_IO
 * naming it, before anything is written.
 *
 * Temporary files are named .NAME@HOST.PIDNS.PID.TAG.tmp (fb_out_tmp_name):
 * hidden from shell globs and from every directory walk (files.h), and
 * removed by the next write into their directory once their writer is
 * gone (killed by SIGKILL mid-write): only regular files of the effective
 * uid, named by a writer of this host and PID namespace whose PID is no
 * longer alive. */
#ifndef FB_CORE_OUTFILE_H
#define FB_CORE_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

/* mkdir -p for the directory part of `path` (the file itself not created),
 * the file's directory being the results root. */
enum fb_status fb_make_parent_dirs(const char *path, struct fb_err *err);

/* What writing `path` meets. */
enum fb_out_kind {
    FB_OUT_NEW,    /* nothing yet: created */
    FB_OUT_FILE,   /* a regular file, perhaps through symbolic links: replaced */
    FB_OUT_STREAM, /* a character device or FIFO: written into, never replaced */
};

/* The kind of `path`, and in `real` the path a replacement renames onto
 * (the file a symbolic link names; `path` itself otherwise). FB_ERR_IO
 * naming the path and the fix for an empty path and for what is refused. */
enum fb_status fb_out_kind_of(const char *path, enum fb_out_kind *kind, char *real, size_t len,
                              struct fb_err *err);

/* True when `path` is a character device or FIFO (written into). */
bool fb_out_is_stream(const char *path);

/* Proves, before any measurement is spent, that `path` can be written:
 * its directories created and a file created there, or the stream open to
 * writing. */
enum fb_status fb_probe_writable(const char *path, struct fb_err *err);

/* Writes `len` bytes of text to `path` as its kind says: created or
 * replaced atomically, or written into a stream. */
enum fb_status fb_out_write(const char *path, const char *text, size_t len, struct fb_err *err);

/* Creates a file that did not exist, never replacing one: `path`
 * (DIR/LABEL/NAME as fb_results_path makes it: DIR is the results root), else
 * the first free of its name with -2, -3, ... before the extension
 * (RUN.json, RUN-2.json). The whole text appears at once (linked from an
 * exclusive temporary file). `path` (of capacity `cap`) becomes the name
 * taken. */
enum fb_status fb_out_create(char *path, size_t cap, const char *text, size_t len,
                             struct fb_err *err);

/* Messages here name -J FILE, the measuring tools' option; a command
 * whose path came from another option (`flag`, "-o FILE") names that. */
void fb_out_name_option(struct fb_err *err, const char *flag);

/* The temporary name a writer with PID `pid` on this host uses beside the
 * file `name` (at most 96 bytes of it repeated), `tag` telling its tries
 * apart; false when it does not fit `cap`. */
bool fb_out_tmp_name(const char *name, long pid, unsigned tag, char *out, size_t cap);

/* `path` with -N before its extension (N > 1), or as given for N = 1;
 * false when it does not fit. */
bool fb_out_numbered(const char *path, int n, char *out, size_t cap);

#endif
