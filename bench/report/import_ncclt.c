/* nccl-tests text output. Facts the parser relies on:
 *   "# Collective test starting: all_reduce_perf"   (2.19 and later; older
 *   "# Collective test concluded: all_reduce_perf"   versions print neither)
 *   "# nccl-tests version 2.13.9 nccl-headers=22105 nccl-library=22105"
 *   "# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0"
 *   "#  Rank  0 Group  0 Pid  1234 on  host-a device  0 [0000:1b:00] NVIDIA H100 80GB HBM3"
 *   a column header naming size, count, type, redop, [root], then per
 *   placement time, algbw, busbw and #wrong (older: "error", a float), with
 *   -I four more per placement;
 *   data lines "%12li  %12li  %8s  %6s  %6s" then per placement
 *   "  %7s  %6s  %6s  %6g" (#wrong "N/A" when -c 0);
 *   "# Out of bounds values : 0 OK" and "# Avg bus bandwidth    : 12.34" last.
 * NCCL INFO lines between them (NCCL_DEBUG=INFO) give the transport. Copies
 * in notes and markdown add or drop a "#" (rows behind one, device lines
 * without), and keep the shell's echo of the command before the output. */
#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/import.h"
#include "nccl/dtype.h"
#include "nccl/nccl_log.h"
#include "report/import_figures.h"
#include "report/import_ncclt_record.h"
#include "core/files.h"
#include "core/text.h"

#define TOK_MAX 64

/* Where the numbers of a data line are, from the column header. */
struct layout {
    bool known;
    int pre;      /* size, count, type, then redop and root where printed */
    int op_col, root_col; /* -1 where the layout has none */
    int per;      /* columns per placement: 4, or 8 with -I */
    bool wrong_is_error; /* old "error" / "res" column: a max deviation, not a count */
    bool timestamp;      /* -S 1: each row ends with "YYYY-MM-DD HH:MM:SS" */
    bool one_is_oop;     /* one placement printed, and it is out-of-place (2017 broadcast) */
};

struct parser {
    const char *name;
    const struct fb_import_opts *opts;
    struct fb_import_out *out;
    struct fb_nccl_log *log;
    struct ncclt_record run;
    bool open;       /* a run is being read */
    bool saw_header; /* "# nThread" of the open run */
    struct layout lay;
    int runs_emitted;
    int fault_weight; /* of the run's recorded failure line (failure_weight) */
    long lineno;      /* of the line being read, from 1 */
    /* Said once per run, not per row (run_end): */
    long error_places;   /* placements whose old "error" column is not 0 */
    double error_max;    /* the largest of those deviations */
    long commented_rows; /* rows printed behind a "#" */
    /* The nccl-tests command line seen before the next run's header (the
     * shell's echo of it), "" when none: it names the collective. */
    char command[512];
};

/* The command line seen goes to the run it started: the next one, or
 * the open one while it holds nothing but comment lines. */
static void take_command(struct parser *p)
{
    if (p->command[0] == '\0' || !p->open || p->saw_header || p->run.nrows > 0)
        return;
    fb_copy(p->run.invoked_as, sizeof p->run.invoked_as, p->command, strlen(p->command));
    ncclt_collective_in(p->command, p->run.command_collective, sizeof p->run.command_collective);
    p->command[0] = '\0';
}

static void run_begin(struct parser *p)
{
    ncclt_record_init(&p->run, "nccl-tests-text");
    p->open = true;
    p->saw_header = false;
    p->fault_weight = 0;
    p->error_places = p->commented_rows = 0;
    p->error_max = 0;
    memset(&p->lay, 0, sizeof p->lay);
    take_command(p);
}

/* What every row of the run showed, said once. */
static void run_notes(struct parser *p)
{
    if (p->error_places > 0)
        ncclt_warn(&p->run, "old-format error column shows a deviation of up to %g (%ld placement%s); its wrong-element count is unknown",
                   p->error_max, p->error_places, p->error_places == 1 ? "" : "s");
    if (p->commented_rows > 0)
        ncclt_warn(&p->run, "%ld table row%s printed behind \"#\" (commented out where the output was copied): read as rows",
                   p->commented_rows, p->commented_rows == 1 ? "" : "s");
}

static enum fb_status run_end(struct parser *p, struct fb_err *err)
{
    if (!p->open)
        return FB_OK;
    p->open = false;
    run_notes(p);
    if (!p->saw_header && p->run.nrows == 0) {
        ncclt_record_free(&p->run);
        return FB_OK;
    }
    json_object *doc = NULL;
    enum fb_status st = ncclt_build_doc(&p->run, p->name, p->opts, &doc, err);
    ncclt_record_free(&p->run);
    if (st == FB_OK) {
        st = fb_import_out_add(p->out, doc, err);
        p->runs_emitted++;
    }
    return st;
}

static const char *after(const char *s, const char *key)
{
    const char *at = strstr(s, key);
    return at ? at + strlen(key) : NULL;
}

static long long_after(const char *s, const char *key, long dflt)
{
    const char *v = after(s, key);
    return v ? strtol(v, NULL, 10) : dflt;
}

static void on_config(struct parser *p, const char *line)
{
    struct ncclt_record *r = &p->run;
    r->have_config = true;
    r->nthreads = long_after(line, "nThread ", 1);
    r->ngpus = long_after(line, "nGpus ", 1);
    const char *v = after(line, "minBytes ");
    r->minbytes = v ? strtoull(v, NULL, 10) : 0;
    v = after(line, "maxBytes ");
    r->maxbytes = v ? strtoull(v, NULL, 10) : 0;
    v = after(line, "step: ");
    r->step = v ? strtoull(v, NULL, 10) : 0;
    r->step_is_factor = v != NULL && strstr(v, "(factor)") != NULL;
    /* "warmup iters: 5 iters: 20 agg iters: 1": which count an "iters:"
     * is depends on the word before it. */
    char buf[512];
    fb_copy(buf, sizeof buf, line, strlen(line));
    char *tok[TOK_MAX];
    int n = fb_tokens(buf, tok, TOK_MAX);
    r->agg = 1;
    for (int i = 0; i + 1 < n; i++) {
        if (strcmp(tok[i], "iters:") != 0)
            continue;
        long count = strtol(tok[i + 1], NULL, 10);
        if (i > 0 && strcmp(tok[i - 1], "warmup") == 0)
            r->warmup = count;
        else if (i > 0 && strcmp(tok[i - 1], "agg") == 0)
            r->agg = count;
        else
            r->iters = count;
    }
    r->validation = long_after(line, "validation: ", 0);
    r->graph = long_after(line, "graph: ", 0);
    ncclt_bound_counts(r);
}

static void on_version(struct parser *p, const char *line)
{
    const char *v = after(line, "nccl-tests version ");
    if (v != NULL)
        sscanf(v, "%31s", p->run.tool_version);
    v = after(line, "nccl-library=");
    if (v != NULL)
        ncclt_version_from_code(strtol(v, NULL, 10), p->run.nccl_version, sizeof p->run.nccl_version);
}

/* Version lines printed without "#": rccl-tests' "rccl-tests: Version
 * develop:448c4c7" after the header, and after the device list "RCCL
 * version : 2.22.3-develop:f5b15f2", "HIP version  : 6.3.42131-fa1d09cbd",
 * "ROCm version : 6.3.0.0-39-ce2be3b" (newer releases); the library's own
 * "RCCL version 2.18.3+hip6.0 ..." or "NCCL version 2.27.5+cuda12.8" under
 * NCCL_DEBUG=VERSION. True when the line was one of them. */
static bool on_version_line(struct parser *p, const char *s)
{
    static const struct {
        const char *prefix;
        size_t offset, cap;
        bool rccl;
    } keys[] = {
        {"rccl-tests: Version", offsetof(struct ncclt_record, tool_version), sizeof p->run.tool_version, true},
        {"RCCL version", offsetof(struct ncclt_record, rccl_version), sizeof p->run.rccl_version, true},
        {"HIP version", offsetof(struct ncclt_record, hip_version), sizeof p->run.hip_version, true},
        {"ROCm version", offsetof(struct ncclt_record, rocm_version), sizeof p->run.rocm_version, true},
        {"NCCL version ", offsetof(struct ncclt_record, nccl_version), sizeof p->run.nccl_version, false},
    };
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
        if (!fb_starts_with(s, keys[k].prefix))
            continue;
        if (!p->open)
            run_begin(p);
        const char *v = s + strlen(keys[k].prefix);
        v += strspn(v, " \t:");
        char *field = (char *)&p->run + keys[k].offset;
        if (field[0] == '\0')
            fb_import_printable(field, keys[k].cap, v, strcspn(v, " \t"));
        p->run.rccl = p->run.rccl || keys[k].rccl;
        return true;
    }
    return false;
}

/* "#  Rank  0 Group  0 Pid 1234 on host device  0 [0000:1b:00] NVIDIA H100"
 * (older versions have no Group, fabric-coll prints "device - [host]"). */
static enum fb_status on_rank(struct parser *p, const char *line, struct fb_err *err)
{
    char buf[1024];
    fb_copy(buf, sizeof buf, line, strlen(line));
    char *tok[TOK_MAX];
    int n = fb_tokens(buf, tok, TOK_MAX);
    struct ncclt_device d = {0};
    d.rank = -1;
    int i = 0;
    for (; i < n; i++) {
        if (strcmp(tok[i], "Rank") == 0 && i + 1 < n)
            d.rank = strtol(tok[i + 1], NULL, 10);
        else if (strcmp(tok[i], "Group") == 0 && i + 1 < n)
            d.group = strtol(tok[i + 1], NULL, 10);
        else if (strcmp(tok[i], "on") == 0 && i + 1 < n)
            fb_copy(d.host, sizeof d.host, tok[i + 1], strlen(tok[i + 1]));
        else if (strcmp(tok[i], "device") == 0 && i + 2 < n)
            break;
    }
    if (d.rank < 0 || d.host[0] == '\0') {
        char quoted[256];
        ncclt_warn(&p->run, "device line not understood: %s", fb_import_printable(quoted, sizeof quoted, line, 200));
        return FB_OK;
    }
    if (i + 2 < n && tok[i + 2][0] == '[') {
        char *bus = tok[i + 2] + 1;
        size_t len = strcspn(bus, "]");
        fb_copy(d.bus, sizeof d.bus, bus, len);
        d.host_memory = strcmp(d.bus, "host") == 0;
        /* The name is the rest of the line after the bus token (buf is a
         * copy of line, so offsets carry over). */
        const char *rest = line + (tok[i + 2] - buf) + strlen(tok[i + 2]);
        while (*rest == ' ')
            rest++;
        fb_copy(d.name, sizeof d.name, rest, strlen(rest));
    }
    return ncclt_add_device(&p->run, &d, err);
}

/* The header's era (import_ncclt_record.h): 2017's names its first
 * columns "bytes N" and its last "res"; 2019's "size count" and "error";
 * 2022's and later "#wrong". */
static enum ncclt_layout header_era(char **tok, int n, int first)
{
    if (strcmp(tok[0], "bytes") == 0)
        return NCCLT_LAYOUT_2017;
    return first + 3 < n && strcmp(tok[first + 3], "error") == 0 ? NCCLT_LAYOUT_ERROR : NCCLT_LAYOUT_WRONG;
}

/* "#  size  count  type  redop  root  time  algbw  busbw  #wrong  time ..."
 * (2017: "#  bytes  N  type  op  root  time  algbw  busbw  res ..."). */
static bool on_columns(struct parser *p, const char *body)
{
    char buf[1024];
    fb_copy(buf, sizeof buf, body, strlen(body));
    char *tok[TOK_MAX];
    int n = fb_tokens(buf, tok, TOK_MAX);
    if (n < 6 || !((strcmp(tok[0], "size") == 0 && strcmp(tok[1], "count") == 0) ||
                   (strcmp(tok[0], "bytes") == 0 && strcmp(tok[1], "N") == 0)))
        return false;
    int first = -1, second = -1;
    p->lay.op_col = p->lay.root_col = -1;
    for (int i = 0; i < n; i++) {
        if (strcmp(tok[i], "time") == 0 || strcmp(tok[i], "cputime") == 0) {
            if (first < 0)
                first = i;
            else if (second < 0)
                second = i;
        }
        if (first < 0 && strcmp(tok[i], "root") == 0)
            p->lay.root_col = i;
        if (first < 0 && (strcmp(tok[i], "redop") == 0 || strcmp(tok[i], "op") == 0))
            p->lay.op_col = i;
    }
    if (first < 0)
        return false;
    p->lay.known = true;
    p->lay.pre = first;
    p->lay.per = second > first ? second - first : 4;
    p->run.layout = header_era(tok, n, first);
    p->run.time_is_cpu = strcmp(tok[first], "cputime") == 0;
    p->lay.wrong_is_error = p->run.layout != NCCLT_LAYOUT_WRONG;
    p->lay.one_is_oop = p->run.layout == NCCLT_LAYOUT_2017 && second < 0;
    p->lay.timestamp = strcmp(tok[n - 1], "timestamp") == 0;
    return true;
}

/* One placement's time, algBW, busBW and #wrong: the figures as printf
 * wrote them (import_figures.h), with the rounding each hides. */
static bool parse_place(struct parser *p, char **tok, struct fb_place *out, struct ncclt_halves *h)
{
    memset(out, 0, sizeof *out);
    out->present = true;
    out->wrong = -1;
    out->time_us = out->algbw_GBps = out->busbw_GBps = NAN;
    struct fb_printed t, a, b;
    if (!fb_printed_parse(tok[0], &t) || !fb_printed_parse(tok[1], &a) || !fb_printed_parse(tok[2], &b))
        return false;
    out->time_us = t.v, out->algbw_GBps = a.v, out->busbw_GBps = b.v;
    *h = (struct ncclt_halves){t.half, a.half, b.half};
    if (strcmp(tok[3], "N/A") == 0)
        return true;
    double w = 0;
    if (!fb_parse_double_token(tok[3], &w) || w < 0)
        return false;
    if (p->lay.wrong_is_error) {
        if (w > 0)
            p->error_places++;
        if (w > p->error_max)
            p->error_max = w;
    } else {
        out->wrong = w > 9e18 ? (long long)9e18 : (long long)w;
    }
    return true;
}

/* Without a header (a table cut from a larger log) the column count tells
 * the layout: 8 measured columns (4 when only in-place was printed) after
 * size, count, type and then redop (2.x) and root (2.x rooted and later). */
static void infer_layout(struct parser *p, int n)
{
    static const char *const names[] = {"size count type", "size count type redop",
                                        "size count type redop root"};
    p->lay.known = true;
    p->lay.per = 4;
    int pre = n >= 11 ? n - 8 : n - 4;
    p->lay.pre = pre < 3 ? 3 : pre > 5 ? 5 : pre;
    p->lay.op_col = p->lay.pre >= 4 ? 3 : -1;
    p->lay.root_col = p->lay.pre == 5 ? 4 : -1;
    ncclt_warn(&p->run, "no column header: %s layout assumed", names[p->lay.pre - 3]);
}

/* nccl-tests 2.0 printed the redop of a collective without one (alltoall)
 * as an empty "%6s": its rows are a column short of the header that names
 * redop, and a number stands where the operation would. That column is
 * put back as empty; the collective reduces nothing. */
static int fill_blank_redop(struct parser *p, char **tok, int n)
{
    int col = p->lay.op_col;
    double v = 0;
    if (col < 0 || n >= TOK_MAX || col >= n || !fb_parse_double_token(tok[col], &v) ||
        (n + 1 != p->lay.pre + 2 * p->lay.per && n + 1 != p->lay.pre + p->lay.per))
        return n;
    static char none[] = "none";
    for (int k = n; k > col; k--)
        tok[k] = tok[k - 1];
    tok[col] = none;
    return n + 1;
}

/* Whether a row of the size of the one before it continues the sweep: a
 * size printed rounded down to whole elements prints 0 for every size
 * below one element (-b 1 prints 0 twice), and the same figure for
 * several sizes of a linear sweep finer than an element. Only a sweep of
 * one size repeats by printing it again (-N). */
static bool same_size_continues(const struct ncclt_record *r, unsigned long long bytes)
{
    return bytes == 0 || (r->have_config && r->minbytes < r->maxbytes);
}

static enum fb_status on_data(struct parser *p, const char *line, struct fb_err *err)
{
    char buf[1024];
    fb_copy(buf, sizeof buf, line, strlen(line));
    char *tok[TOK_MAX];
    int n = fb_tokens(buf, tok, TOK_MAX);
    unsigned long long bytes = 0, count = 0;
    if (n < 2 || !fb_parse_u64_token(tok[0], &bytes) || !fb_parse_u64_token(tok[1], &count))
        return FB_OK; /* not a table line */
    if (!p->open)
        run_begin(p);
    if (!p->lay.known)
        infer_layout(p, n);
    struct fb_row row = {0};
    row.bytes = bytes;
    row.count = count;
    int pre = p->lay.pre, per = p->lay.per;
    /* -S 1's local time closes the row: two words, not measurements. */
    if (p->lay.timestamp && n >= 2 && strchr(tok[n - 1], ':') != NULL && strchr(tok[n - 2], '-') != NULL)
        n -= 2;
    n = fill_blank_redop(p, tok, n);
    char quoted[256];
    if (pre < 3 || n < pre + 4)
        return fb_fail(err, FB_ERR_INPUT, "%s, line %ld: table line cut short (%d columns): \"%s\"; the file is truncated or not an nccl-tests output",
                       p->name, p->lineno, n, fb_import_printable(quoted, sizeof quoted, line, 80));
    /* Both placements, or the in-place ones alone:
     * any other count means a column was lost or added, and reading on
     * would put numbers in the wrong placement. */
    bool both = n == pre + 2 * per, in_only = n == pre + per;
    if (!both && !in_only)
        return fb_fail(err, FB_ERR_INPUT, "%s, line %ld: %d columns where the table has %d: \"%s\"; the row is damaged",
                       p->name, p->lineno, n, pre + 2 * per, fb_import_printable(quoted, sizeof quoted, line, 80));
    struct ncclt_record *r = &p->run;
    if (r->nrows == 0) {
        fb_copy(r->dtype, sizeof r->dtype, tok[2], strlen(tok[2]));
        if (p->lay.op_col >= 0) /* the oldest layout has no redop column */
            fb_copy(r->op, sizeof r->op, tok[p->lay.op_col], strlen(tok[p->lay.op_col]));
        if (p->lay.root_col >= 0) {
            r->root = strtol(tok[p->lay.root_col], NULL, 10);
            r->root_printed = true;
        }
    }
    bool ok;
    struct ncclt_row_halves halves = {{0, 0, 0}, {0, 0, 0}};
    struct fb_place *absent = p->lay.one_is_oop ? &row.ip : &row.oop;
    if (both) {
        ok = parse_place(p, tok + pre, &row.oop, &halves.oop) && parse_place(p, tok + pre + per, &row.ip, &halves.ip);
    } else {
        /* One placement printed: in-place (replayed traces), or 2017's
         * broadcast, which timed only out-of-place. */
        absent->present = false;
        absent->wrong = -1;
        absent->time_us = absent->algbw_GBps = absent->busbw_GBps = NAN;
        ok = p->lay.one_is_oop ? parse_place(p, tok + pre, &row.oop, &halves.oop) : parse_place(p, tok + pre, &row.ip, &halves.ip);
    }
    if (!ok)
        return fb_fail(err, FB_ERR_INPUT, "%s, line %ld: a value that is not a number >= 0 as printf prints one (NaN, inf, negative or text): \"%s\"",
                       p->name, p->lineno, fb_import_printable(quoted, sizeof quoted, line, 80));
    row.run = 0;
    row.line = p->lineno;
    if (r->nrows > 0) {
        const struct fb_row *prev = &r->rows[r->nrows - 1];
        /* Sizes grow; a repetition (-N) starts again at the first size. */
        size_t first = r->nrows - 1;
        while (first > 0 && r->rows[first - 1].run == prev->run)
            first--;
        bool restart = bytes < prev->bytes || (bytes == prev->bytes && !same_size_continues(r, bytes));
        if (restart && bytes != r->rows[first].bytes)
            return fb_fail(err, FB_ERR_INPUT, "%s, line %ld: size %llu after %llu: sizes out of order (rows moved or merged); the table is damaged",
                           p->name, p->lineno, bytes, prev->bytes);
        row.run = prev->run + (restart ? 1 : 0);
    }
    return ncclt_add_row(r, &row, r->iters > 0 ? r->iters * (r->agg > 0 ? r->agg : 1) : 0, &halves, err);
}

/* How much a line says about why a run failed: the NCCL or CUDA error
 * itself (3) names the cause; a WARN (2) is often its symptom; the
 * ".. Test failure common.cu:N" lines (1) every rank prints after it say
 * only that it failed. 0: not a failure line. */
static int failure_weight(const char *line)
{
    if (strstr(line, "NCCL failure") != NULL || strstr(line, "CUDA failure") != NULL ||
        strstr(line, "HIP failure") != NULL)
        return 3;
    if (strstr(line, "NCCL WARN") != NULL)
        return 2;
    return strstr(line, "Test failure") != NULL ? 1 : 0;
}

/* What a launcher or the shell prints when a process of the run died
 * (mpirun/prterun, Open MPI's abort, srun and slurmstepd, a signal): the
 * abort itself, said once the table stopped, when nothing names a cause. */
static bool abort_line(const char *line)
{
    static const char *const signs[] = {
        "exited on signal", "noticed that process rank", "MPI_ABORT was invoked", "BAD TERMINATION", "Job step aborted",
        "srun: error:", "slurmstepd: error:", "*** Process received signal ***", "Segmentation fault",
        "returned a non-zero exit code",
    };
    for (size_t k = 0; k < sizeof signs / sizeof *signs; k++)
        if (strstr(line, signs[k]) != NULL)
            return true;
    return false;
}

/* The run's fault is the first of its most telling failure lines; an
 * abort line counts as a WARN does, and only before the table ended. */
static void note_failure(struct parser *p, const char *line)
{
    int w = failure_weight(line);
    if (w == 0 && p->open && !p->run.finished && abort_line(line))
        w = 2;
    if (w > p->fault_weight && p->open) {
        fb_import_printable(p->run.fault, sizeof p->run.fault, line, sizeof p->run.fault - 1);
        p->fault_weight = w;
    }
}

/* Size, count and a type name: a table row, even behind a "#". */
static bool row_shaped(const char *s)
{
    char buf[256];
    fb_copy(buf, sizeof buf, s, strlen(s));
    char *tok[4];
    unsigned long long a, b;
    return fb_tokens(buf, tok, 4) >= 3 && fb_parse_u64_token(tok[0], &a) && fb_parse_u64_token(tok[1], &b) &&
           fb_dtype_parse(tok[2]) >= 0;
}

/* A "#" line's text after the "#" and its blanks; or one of the lines the
 * 2017 layout printed without "#" (its nThread header and its footer). */
static enum fb_status on_meta(struct parser *p, const char *body, struct fb_err *err)
{
    if (fb_starts_with(body, "Collective test starting:")) {
        /* The version line comes just before: keep a run that holds nothing else. */
        if (!p->open || p->saw_header || p->run.nrows > 0) {
            enum fb_status st = run_end(p, err);
            if (st != FB_OK)
                return st;
            run_begin(p);
        }
        ncclt_collective_in(body + strlen("Collective test starting:"), p->run.collective, sizeof p->run.collective);
        return FB_OK;
    }
    if (fb_starts_with(body, "Collective test concluded:")) {
        /* A log's tail may keep only this line's name. */
        if (p->open && p->run.collective[0] == '\0')
            ncclt_collective_in(body + strlen("Collective test concluded:"), p->run.collective, sizeof p->run.collective);
        return run_end(p, err);
    }
    if (fb_starts_with(body, "nThread ")) {
        if (p->open && p->saw_header) {
            if (!p->run.finished) /* ncclt_check_one_launch refused these first */
                return fb_fail(err, FB_INVALID, "INVALID: %s holds a second nccl-tests header before the first table ended", p->name);
            enum fb_status st = run_end(p, err);
            if (st != FB_OK)
                return st;
        }
        if (!p->open)
            run_begin(p);
        p->saw_header = true;
        on_config(p, body);
        return FB_OK;
    }
    if (!p->open)
        run_begin(p);
    if (fb_starts_with(body, "nccl-tests version"))
        on_version(p, body);
    else if (fb_starts_with(body, "Rank "))
        return on_rank(p, body, err);
    else if ((fb_starts_with(body, "size") && (body[4] == ' ' || body[4] == '\t')) ||
             (fb_starts_with(body, "bytes") && (body[5] == ' ' || body[5] == '\t')))
        on_columns(p, body);
    else if (isdigit((unsigned char)body[0]) && row_shaped(body)) {
        /* nccl-tests prints no row behind "#": whoever copied the output
         * commented it out. */
        p->commented_rows++;
        return on_data(p, body, err);
    } else if (fb_starts_with(body, "Out of bounds values")) {
        const char *v = strchr(body, ':');
        p->run.oob = v ? strtoll(v + 1, NULL, 10) : -1;
        p->run.finished = true; /* the footer's first line: the table ended */
    } else if (fb_starts_with(body, "Avg bus bandwidth")) {
        const char *v = strchr(body, ':');
        p->run.avg_footer = v ? strtod(v + 1, NULL) : NAN;
        p->run.finished = true;
    }
    return FB_OK;
}

/* "#   Rank  0 Group  0 Pid 1234 on host device  0 [...] NAME" with its "#"
 * taken off, as markdown copies of an output often have it. */
static bool is_device_line(const char *s)
{
    return fb_starts_with(s, "Rank ") && isdigit((unsigned char)s[5 + strspn(s + 5, " ")]) &&
           strstr(s, " on ") != NULL && strstr(s, " device ") != NULL;
}

/* The shell's echo of the command ("$ mpirun -np 16 ./build/all_reduce_perf
 * -b 8 -e 8G"): an nccl-tests binary, "*_perf" or "*_perf_mpi", followed
 * by its options or nothing (prose naming one is not a command). Kept for
 * the next run from the binary on. */
static void note_command(struct parser *p, const char *s)
{
    char buf[1024];
    fb_copy(buf, sizeof buf, s, strlen(s));
    char *tok[TOK_MAX];
    int n = fb_tokens(buf, tok, TOK_MAX);
    for (int i = 0; i < n; i++) {
        const char *base = strrchr(tok[i], '/');
        base = base ? base + 1 : tok[i];
        bool binary = fb_has_suffix(base, "_perf") || fb_has_suffix(base, "_perf_mpi");
        char coll[32];
        if (!binary || (i + 1 < n && tok[i + 1][0] != '-') || !ncclt_collective_in(base, coll, sizeof coll))
            continue;
        fb_import_printable(p->command, sizeof p->command, s + (tok[i] - buf), sizeof p->command - 1);
        take_command(p);
        return;
    }
}

static enum fb_status parse_lines(struct parser *p, const char *text, size_t len, struct fb_err *err)
{
    size_t pos = 0;
    char buf[2048], *s = NULL;
    enum fb_status st = FB_OK;
    while (st == FB_OK && fb_next_line_copy(text, len, &pos, buf, sizeof buf, &s)) {
        p->lineno++;
        s = ncclt_line_start(s);
        if (strstr(s, "NCCL INFO ") != NULL)
            continue; /* fed to the log reader as a whole */
        note_failure(p, s);
        if (s[0] == '#')
            st = on_meta(p, s + 1 + strspn(s + 1, " \t"), err);
        else if (fb_starts_with(s, "nThread ") || fb_starts_with(s, "Out of bounds values") ||
                 fb_starts_with(s, "Avg bus bandwidth") || is_device_line(s))
            st = on_meta(p, s, err);
        else if (isdigit((unsigned char)s[0]))
            st = on_data(p, s, err);
        else if (!on_version_line(p, s))
            note_command(p, s);
    }
    return st;
}

/* Transport from the NCCL INFO lines, given to every run of the file. */
static enum fb_status attach_transport(struct parser *p, struct fb_import_out *out, size_t first,
                                       struct fb_err *err)
{
    if (fb_nccl_log_info_lines(p->log) == 0)
        return FB_OK;
    json_object *t = NULL;
    struct fb_err local = {0};
    if (fb_nccl_log_transport(p->log, &t, &local) != FB_OK) {
        /* A log too short to tell is a warning here, not a failed import. */
        for (size_t i = first; i < out->n; i++) {
            json_object *w = NULL;
            if (json_object_object_get_ex(out->docs[i], "warnings", &w))
                json_object_array_add(w, json_object_new_string(local.msg));
        }
        return FB_OK;
    }
    for (size_t i = first; i < out->n; i++)
        json_object_object_add(out->docs[i], "transport", json_object_get(t));
    json_object_put(t);
    (void)err;
    return FB_OK;
}

enum fb_status fb_import_ncclt_text(const char *name, const char *text, size_t len,
                                    const struct fb_import_opts *o, struct fb_import_out *out,
                                    struct fb_err *err)
{
    struct parser p = {.name = name, .opts = o, .out = out};
    p.log = fb_nccl_log_new();
    if (p.log == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory importing %s", name);
    size_t first = out->n;
    enum fb_status st = ncclt_check_one_launch(name, text, len, err);
    if (st == FB_OK)
        st = fb_nccl_log_feed(p.log, name, text, len, err);
    if (st == FB_OK)
        st = parse_lines(&p, text, len, err);
    if (st == FB_OK)
        st = run_end(&p, err);
    else if (p.open)
        ncclt_record_free(&p.run);
    if (st == FB_OK && p.runs_emitted == 0)
        st = fb_fail(err, FB_ERR_INPUT, "%s holds no nccl-tests table (no \"# nThread\" header or size/count lines)", name);
    if (st == FB_OK)
        st = attach_transport(&p, out, first, err);
    fb_nccl_log_free(p.log);
    return st;
}

/* Whether tokens are a table row of some layout: size, count, a type of
 * the type table nccl-tests names its column from (fp8 and NCCL 1's "char"
 * and "int" included), a reduction where printed, then numbers only (root,
 * times, bandwidths, #wrong or "N/A"), one placement's four at least: the
 * oldest layout's 11 columns as well as the root form's 13. */
static bool table_row_tokens(char **tok, int n)
{
    unsigned long long a, b;
    if (n < 7 || !fb_parse_u64_token(tok[0], &a) || !fb_parse_u64_token(tok[1], &b) || fb_dtype_parse(tok[2]) < 0)
        return false;
    int k = 3;
    double v = 0;
    if (!fb_parse_double_token(tok[k], &v))
        k++; /* the reduction's name */
    if (n - k < 4)
        return false;
    for (; k < n; k++)
        if (strcmp(tok[k], "N/A") != 0 && !fb_parse_double_token(tok[k], &v))
            return false;
    return true;
}

/* "  1048576  262144  float  sum  -1  93.64 ...": a table cut out of its
 * header still reads as nccl-tests. */
static bool has_table_line(const char *text, size_t len)
{
    size_t pos = 0, n = 0;
    const char *line = NULL;
    for (int lines = 0; lines < 200 && fb_next_line(text, len, &pos, &line, &n); lines++) {
        char buf[512];
        fb_copy(buf, sizeof buf, line, n);
        char *tok[TOK_MAX];
        int ntok = fb_tokens(fb_strip_launcher_prefixes(buf), tok, TOK_MAX);
        if (table_row_tokens(tok, ntok))
            return true;
    }
    return false;
}

bool fb_detect_ncclt_text(const char *text, size_t len)
{
    if (fb_import_looks_json(text, len) || fb_detect_perftest_text(text, len))
        return false;
    return fb_import_contains(text, len, "# nThread") || fb_import_contains(text, len, "Avg bus bandwidth") ||
           fb_import_contains(text, len, "Collective test starting") || fb_import_contains(text, len, "busbw") ||
           has_table_line(text, len);
}
