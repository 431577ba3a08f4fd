/* Text helpers for every module: a growable string, bounded one-line
 * building, joined name lists, version-ordered names, line walking and
 * whitespace tokens. */
#ifndef FB_CORE_TEXT_H
#define FB_CORE_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

/* Growable NUL-terminated string. On allocation failure it stays valid
 * (truncated) and `oom` is set, so writers need no error path per append. */
struct fb_str {
    char *s;
    size_t len, cap;
    bool oom;
};

void fb_str_addf(struct fb_str *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fb_str_addn(struct fb_str *b, const char *text, size_t n);
const char *fb_str_get(const struct fb_str *b); /* "" when empty */
void fb_str_free(struct fb_str *b);

/* Appends at *used to a fixed buffer, truncating with "..." when it is
 * full, so a long list stays one line and is never mistaken for complete. */
void fb_strbuf_append(char *buf, size_t len, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* "a, b, c" into buf (truncated with "..."), `empty` when n is 0. */
void fb_join_names(const char *const *names, size_t n, const char *empty, char *buf, size_t len);

/* Device names in the order a person counts them: mlx5_2 before mlx5_10,
 * eth2 before eth10 (strverscmp). For qsort over char * / const char *. */
int fb_name_order(const void *a, const void *b);

/* Walks `text` line by line: returns false at the end, else sets *line and
 * *n (without the newline or a trailing '\r'). */
bool fb_next_line(const char *text, size_t len, size_t *pos, const char **line, size_t *n);

/* fb_next_line into a copy: the line cut to `size` bytes in buf, and *start
 * at its first character that is not a blank or tab. */
bool fb_next_line_copy(const char *text, size_t len, size_t *pos, char *buf, size_t size, char **start);

/* Removes, in place, what launchers add to a program's lines, so readers
 * see the program's own text: Open MPI's --tag-output tags ("[1,0]<stdout>:",
 * also where they land inside a line when ranks' output interleaves),
 * Slurm's `srun -l` rank ("12: "), kubectl --timestamps' RFC 3339 stamp,
 * ANSI colour anywhere, and the blanks before them. Returns the new start
 * of the line. */
char *fb_strip_launcher_prefixes(char *line);

/* The rank a launcher's prefix names at the start of a line: N of Open
 * MPI's "[1,N]<stdout>:" or of srun -l's "N: " (after a kubectl stamp or
 * blanks); -1 when the line has neither. */
long fb_launcher_rank(const char *line);

/* Splits a line copy in place on blanks; returns the number of tokens
 * stored (at most max). */
int fb_tokens(char *line, char **tok, int max);

bool fb_starts_with(const char *s, const char *prefix);

/* Parses a whole token as a number; false on junk, empty or overflow. */
bool fb_parse_u64_token(const char *tok, unsigned long long *out);
bool fb_parse_double_token(const char *tok, double *out);

/* Copies at most size-1 bytes and always terminates. */
void fb_copy(char *dst, size_t size, const char *src, size_t n);

/* A NUL-terminated copy of `len` bytes of text in which every byte that
 * does not start a well-formed UTF-8 sequence (stray continuation bytes,
 * overlong forms, surrogates, code points past U+10FFFF, a cut sequence)
 * becomes U+FFFD, so strict readers (Python's json) accept it. *out_len
 * (when given) is its length; NULL when out of memory. Free it. */
char *fb_utf8_sanitize(const char *text, size_t len, size_t *out_len);

/* Length of the well-formed UTF-8 sequence of at most `left` bytes at p
 * (RFC 3629, Table 3-7 of Unicode: no overlong forms, no surrogates,
 * nothing past U+10FFFF), or 0. */
size_t fb_utf8_len(const unsigned char *p, size_t left);

/* `s` as a one-line message shows it: bytes outside printable ASCII as
 * '?', cut to fit `len` (out may be s itself). */
void fb_ascii_printable(const char *s, char *out, size_t len);

#endif
