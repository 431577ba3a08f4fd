/* Whether an nccl-tests (or rccl-tests) text output is one run at all.
 *
 * nccl-tests built without MPI and started by mpirun or srun (or built
 * with MPI and started by an srun without PMI) runs every process as its
 * own job: each prints its own header, lists its own GPUs from "Rank 0",
 * times its own sweep and prints its own footer, busBW 0 at every size
 * when it has one GPU. The launcher writes them into one stream, line by
 * line, block by block or anything between. No row of such a file
 * measures the fabric the launch meant to test, and a reader that takes
 * it for one run (or refuses it as damaged) hides what went wrong. What
 * gives it away, whatever the interleaving:
 *   - a second "# nThread" header before the first table ended;
 *   - a rank listed twice under one header ("Rank 0" of every process);
 *   - a second footer for one header;
 *   - a header, row or footer tagged by the launcher with a rank other
 *     than 0 ("[1,3]<stdout>:", srun -l's "3: "): a build with MPI prints
 *     them only from rank 0 (device lines are left out: how they reach
 *     the output has changed between versions);
 *   - the same size twice in a row in a sweep whose header steps by a
 *     factor, or a size that goes back in a table whose busBW is 0
 *     everywhere (two one-rank sweeps, row by row);
 *   - consecutive one-rank tables of one header, each a lone "Rank 0"
 *     with busBW 0 (the processes' outputs one after the other).
 * Consecutive tables of several ranks each, untagged, are not told apart
 * from a loop that ran the test on each node in turn, and are read as
 * separate runs. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/text.h"
#include "report/import_ncclt_record.h"

#define TOK_MAX 64
#define RANKS_TRACKED 4096

struct scan {
    const char *name;
    long lineno;
    /* the table being read: since its header */
    bool open, ended;           /* a header seen; its footer seen */
    bool factor_step;           /* its header steps sizes by a factor */
    char header[512];           /* its "nThread" line */
    long ranks_listed;          /* device lines under it */
    long max_rank;              /* the highest rank they list */
    bool rank0_only;            /* its device lines list rank 0 alone */
    char rank_host[RANKS_TRACKED][24]; /* host that listed each rank ("" none) */
    unsigned long long first_size, last_size;
    long rows;
    bool busbw_zero, algbw_moved; /* busBW 0 at every size, algBW not */
    bool went_back;             /* a size below the one before, not a restart */
    long footers;               /* "Avg bus bandwidth" lines under it */
    /* the file */
    long headers;
    long lone_tables;           /* consecutive one-rank tables of one header */
    char lone_header[512];
    long rank0_lines;           /* "Rank 0" device lines */
    long launcher_ranks;        /* highest launcher rank on a table line, plus one */
    char why[320];              /* the first sign found, "" none */
};

static void sign(struct scan *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sign(struct scan *s, const char *fmt, ...)
{
    if (s->why[0] != '\0')
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->why, sizeof s->why, fmt, ap);
    va_end(ap);
}

/* A table that ended: a one-rank table after another of the same header
 * extends the sequence, anything else ends it. */
static void table_done(struct scan *s)
{
    if (!s->open)
        return;
    bool lone = s->rank0_only && s->busbw_zero && s->algbw_moved;
    if (lone && s->lone_tables > 0 && strcmp(s->lone_header, s->header) == 0)
        s->lone_tables++;
    else
        s->lone_tables = lone ? 1 : 0;
    snprintf(s->lone_header, sizeof s->lone_header, "%s", s->header);
    if (s->lone_tables >= 2)
        sign(s, "%ld one-rank tables of one header in a row, busBW 0 at every size (line %ld)", s->lone_tables,
             s->lineno);
    if (s->went_back && s->busbw_zero && s->algbw_moved)
        sign(s, "sizes that go back in a table whose busBW is 0 everywhere: one-rank sweeps interleaved row by row");
}

static void on_header(struct scan *s, const char *body)
{
    s->headers++;
    if (s->open && !s->ended)
        sign(s, "a second \"# nThread\" header at line %ld before the first table ended", s->lineno);
    table_done(s);
    s->open = true;
    s->ended = false;
    s->factor_step = strstr(body, "(factor)") != NULL;
    snprintf(s->header, sizeof s->header, "%s", body);
    s->ranks_listed = s->rows = s->footers = 0;
    s->max_rank = -1;
    s->rank0_only = false;
    s->busbw_zero = true;
    s->algbw_moved = s->went_back = false;
    memset(s->rank_host, 0, sizeof s->rank_host);
}

/* "Rank N ... on HOST device ...": a rank listed twice under one header is
 * two processes' "Rank N". */
static void on_rank(struct scan *s, char *body)
{
    char *tok[TOK_MAX];
    int n = fb_tokens(body, tok, TOK_MAX);
    long rank = -1;
    const char *host = "?";
    for (int i = 0; i + 1 < n; i++) {
        if (strcmp(tok[i], "Rank") == 0)
            rank = strtol(tok[i + 1], NULL, 10);
        else if (strcmp(tok[i], "on") == 0)
            host = tok[i + 1];
    }
    if (rank < 0)
        return;
    s->rank0_lines += rank == 0;
    s->ranks_listed++;
    if (rank > s->max_rank)
        s->max_rank = rank;
    s->rank0_only = s->max_rank == 0;
    if (rank >= RANKS_TRACKED)
        return;
    if (s->rank_host[rank][0] != '\0')
        sign(s, "rank %ld listed twice under one header, on %s and on %s (line %ld)", rank, s->rank_host[rank], host,
             s->lineno);
    else
        snprintf(s->rank_host[rank], sizeof s->rank_host[rank], "%s", host);
}

/* A table row: size order, and whether busBW is 0 where algBW is not (the
 * last eight columns are time, algBW, busBW and #wrong per placement). */
static void on_row(struct scan *s, char *line)
{
    char *tok[TOK_MAX];
    int n = fb_tokens(line, tok, TOK_MAX);
    unsigned long long size = 0, count = 0;
    if (n < 7 || !fb_parse_u64_token(tok[0], &size) || !fb_parse_u64_token(tok[1], &count))
        return;
    if (s->rows > 0) {
        if (size == s->last_size && size > 0 && s->factor_step)
            sign(s, "size %llu twice in a row at line %ld in a sweep that steps by a factor: two sweeps interleaved",
                 size, s->lineno);
        if (size < s->last_size && size != s->first_size)
            s->went_back = true;
    } else {
        s->first_size = size;
    }
    s->last_size = size;
    s->rows++;
    for (int k = n >= 11 ? n - 8 : n - 4; k + 2 < n; k += 4) {
        double alg = 0, bus = 0;
        if (!fb_parse_double_token(tok[k + 1], &alg) || !fb_parse_double_token(tok[k + 2], &bus))
            continue;
        s->busbw_zero = s->busbw_zero && bus == 0;
        s->algbw_moved = s->algbw_moved || alg > 0;
    }
}

static void on_footer(struct scan *s)
{
    if (++s->footers == 2)
        sign(s, "a second footer at line %ld for one header", s->lineno);
    s->ended = true;
}

/* What a line is to the scan, its launcher's prefix and a markdown "#"
 * taken off. A table line from a launcher rank other than 0 is a sign. */
static void scan_line(struct scan *s, char *raw)
{
    long launcher = fb_launcher_rank(raw);
    char *line = ncclt_line_start(raw);
    if (strstr(line, "NCCL INFO") != NULL || strstr(line, "NCCL WARN") != NULL)
        return;
    if (strstr(line, "Test failure") != NULL || strstr(line, " failure ") != NULL) {
        s->ended = true; /* the run died: the next header starts another */
        return;
    }
    char *body = line[0] == '#' ? line + 1 + strspn(line + 1, " \t") : line;
    if (fb_starts_with(body, "Out of bounds values") || fb_starts_with(body, "Collective test concluded")) {
        s->ended = true;
        return;
    }
    bool header = fb_starts_with(body, "nThread "), footer = fb_starts_with(body, "Avg bus bandwidth");
    bool rank = fb_starts_with(body, "Rank ") && strstr(body, " device ") != NULL;
    bool row = isdigit((unsigned char)body[0]) && s->open;
    if ((header || footer || row) && launcher > 0) {
        sign(s, "launcher rank %ld printed the table line %ld (a build with MPI prints only from rank 0)", launcher,
             s->lineno);
        if (launcher + 1 > s->launcher_ranks)
            s->launcher_ranks = launcher + 1;
    }
    if (header)
        on_header(s, body);
    else if (footer)
        on_footer(s);
    else if (rank)
        on_rank(s, body);
    else if (row)
        on_row(s, body);
}

/* How many processes printed: the most any sign counts. */
static long processes(const struct scan *s)
{
    long n = s->headers;
    if (s->rank0_lines > n)
        n = s->rank0_lines;
    if (s->launcher_ranks > n)
        n = s->launcher_ranks;
    return n;
}

enum fb_status ncclt_check_one_launch(const char *name, const char *text, size_t len, struct fb_err *err)
{
    struct scan *s = calloc(1, sizeof *s);
    if (s == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory importing %s", name);
    s->name = name;
    size_t pos = 0;
    char buf[2048], *line = NULL;
    while (fb_next_line_copy(text, len, &pos, buf, sizeof buf, &line)) {
        s->lineno++;
        scan_line(s, line);
    }
    table_done(s);
    enum fb_status st = FB_OK;
    if (s->why[0] != '\0') {
        long procs = processes(s), per = s->max_rank + 1;
        char what[96] = "several independent runs";
        if (procs >= 2 && per >= 1)
            snprintf(what, sizeof what, "%ld independent %ld-rank runs", procs, per);
        else if (procs >= 2)
            snprintf(what, sizeof what, "%ld independent runs", procs);
        st = fb_fail(err, FB_INVALID,
                     "INVALID: %s is %s written into one output, not one multi-rank run (%s): nccl-tests built "
                     "without MPI and started by mpirun or srun runs each process as its own job; rebuild it with "
                     "MPI (make MPI=1 MPI_HOME=...), or, if it was built with MPI, launch it with mpirun or "
                     "srun --mpi=pmix; nothing imported",
                     name, what, s->why);
    }
    free(s);
    return st;
}
