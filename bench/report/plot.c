#include "report/plot.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/files.h"
#include "core/jsonio.h"
#include "core/outfile.h"
#include "core/units.h"

#define GNUPLOT_TIMEOUT_S 60
#define GNUPLOT_TIMEOUT_MAX_S 3600

static bool ends_with_nocase(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcasecmp(s + a - b, suffix) == 0;
}

/* Single-quoted gnuplot string: a quote is written twice. */
static void quoted(struct fb_str *out, const char *s)
{
    fb_str_addf(out, "'");
    for (const char *c = s; *c; c++) {
        if (*c == '\'')
            fb_str_addf(out, "''");
        else if (*c != '\n' && *c != '\r')
            fb_str_addf(out, "%c", *c);
    }
    fb_str_addf(out, "'");
}

static void size_range(const struct fb_result_set *set, unsigned long long *lo, unsigned long long *hi)
{
    *lo = ULLONG_MAX;
    *hi = 0;
    for (size_t i = 0; i < set->n; i++)
        for (size_t k = 0; k < set->r[i].nrows; k++) {
            unsigned long long b = set->r[i].rows[k].bytes;
            if (b == 0)
                continue;
            *lo = b < *lo ? b : *lo;
            *hi = b > *hi ? b : *hi;
        }
    if (*hi == 0)
        *lo = *hi = 1;
}

/* Tics on powers of two, labelled 1K, 16M, 4G, at most about a dozen. */
static void xtics(struct fb_str *out, unsigned long long lo, unsigned long long hi)
{
    int a = (int)floor(log2((double)lo)), b = (int)ceil(log2((double)hi));
    int step = (b - a) / 12 + 1;
    fb_str_addf(out, "set xtics (");
    for (int e = a; e <= b && e < 63; e += step) {
        char label[32];
        fb_format_size(1ULL << e, label, sizeof label);
        fb_str_addf(out, "%s\"%s\" %llu", e == a ? "" : ", ", label, 1ULL << e);
    }
    fb_str_addf(out, ")\n");
}

static void default_title(const struct fb_result_set *set, struct fb_str *out)
{
    struct fb_str t = {0};
    fb_str_addf(&t, "%s busBW vs message size: ", set->n ? set->r[0].collective : "");
    for (size_t i = 0; i < set->n; i++) {
        if (t.len > 140) {
            fb_str_addf(&t, ", ...");
            break;
        }
        fb_str_addf(&t, "%s%s", i ? ", " : "", set->r[i].cluster);
    }
    quoted(out, fb_str_get(&t));
    fb_str_free(&t);
}

void fb_plot_script(const struct fb_result_set *set, const char *const *data_files,
                    const struct fb_plot_line *lines, size_t nlines, const struct fb_plot_opts *o,
                    const char *output, struct fb_str *out)
{
    bool svg = ends_with_nocase(o->out, ".svg");
    fb_str_addf(out, "# fabric-report plot: gnuplot script, editable\n");
    if (svg)
        fb_str_addf(out, "set terminal svg size %d,%d dynamic noenhanced font 'Sans,12' background '#ffffff'\n", o->width, o->height);
    else
        fb_str_addf(out, "set terminal pngcairo size %d,%d noenhanced font 'Sans,11' background '#ffffff'\n", o->width, o->height);
    fb_str_addf(out, "set output ");
    quoted(out, output);
    fb_str_addf(out, "\nset title ");
    if (o->title != NULL)
        quoted(out, o->title);
    else
        default_title(set, out);
    fb_str_addf(out, "\nset xlabel 'message size (bytes, log2 scale)'\n");
    fb_str_addf(out, "set ylabel 'busBW (GB/s)'\n");
    fb_str_addf(out, "set logscale x 2\n");
    unsigned long long lo, hi;
    size_range(set, &lo, &hi);
    fb_str_addf(out, "set xrange [%llu:%llu]\n", lo, hi > lo ? hi : lo * 2);
    xtics(out, lo, hi > lo ? hi : lo * 2);
    if (o->logy)
        fb_str_addf(out, "set logscale y 10\n");
    else
        fb_str_addf(out, "set yrange [0:*]\n");
    /* Headroom above the highest curve or line keeps the key off them. */
    fb_str_addf(out, "set grid\nset key top left box opaque\nset offsets 0, 0, graph 0.35, 0\n");
    fb_str_addf(out, "plot ");
    for (size_t i = 0; i < set->n; i++) {
        const struct fb_result *r = &set->r[i];
        char label[256];
        snprintf(label, sizeof label, "%s (%ld rank%s, %ld node%s%s%s%s)", r->cluster, r->ranks,
                 r->ranks == 1 ? "" : "s", r->nodes, r->nodes == 1 ? "" : "s", r->net ? ", " : "",
                 r->net ? r->net : "", !r->complete ? ", INCOMPLETE" : r->early_stop ? ", stopped early" : "");
        fb_str_addf(out, "%s", i ? ", \\\n     " : "");
        quoted(out, data_files[i]);
        fb_str_addf(out, " using 1:2 with linespoints lw 2 pt 7 ps 0.6 title ");
        quoted(out, label);
    }
    /* One colour per profile, dashed for its typical figure, dotted for its floor. */
    static const char *const colours[] = {"#555555", "#c0392b", "#1f618d", "#7d3c98", "#b9770e", "#117a65"};
    size_t profile = 0;
    for (size_t i = 0; i < nlines; i++) {
        if (i > 0 && strncmp(lines[i].label, lines[i - 1].label, strcspn(lines[i].label, ":")) != 0)
            profile++;
        fb_str_addf(out, ", \\\n     %.6g with lines lw 1.5 dt %d lc rgb '%s' title ", lines[i].gbps,
                    lines[i].floor ? 3 : 2, colours[profile % (sizeof colours / sizeof *colours)]);
        quoted(out, lines[i].label);
    }
    fb_str_addf(out, "\n");
}

struct tmp {
    char dir[PATH_MAX];
    char **files;
    size_t nfiles;
};

static const char *tmp_path(struct tmp *t, const char *name)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", t->dir, name);
    char **files = realloc(t->files, (t->nfiles + 1) * sizeof *files);
    if (files == NULL)
        return NULL;
    t->files = files;
    t->files[t->nfiles] = strdup(path);
    return t->files[t->nfiles] ? t->files[t->nfiles++] : NULL;
}

static void tmp_cleanup(struct tmp *t)
{
    for (size_t i = 0; i < t->nfiles; i++) {
        unlink(t->files[i]);
        free(t->files[i]);
    }
    free(t->files);
    if (t->dir[0] != '\0')
        rmdir(t->dir);
}

/* Through core/outfile like every other writer: atomic, and never through
 * a symbolic link or a directory of another user below the results root. */
static enum fb_status write_text(const char *path, const char *text, struct fb_err *err)
{
    return fb_out_write(path, text, strlen(text), err);
}

static enum fb_status write_data(const struct fb_result *r, const char *path, struct fb_err *err)
{
    struct fb_point *pts = NULL;
    size_t n = 0;
    enum fb_status st = fb_result_points(r, &pts, &n, err);
    if (st != FB_OK)
        return st;
    struct fb_str text = {0};
    fb_str_addf(&text, "# %s: bytes, best busBW (GB/s)\n", r->path);
    for (size_t i = 0; i < n; i++)
        if (pts[i].bytes > 0)
            fb_str_addf(&text, "%llu %.6g\n", pts[i].bytes, pts[i].best);
    free(pts);
    st = text.oom ? fb_fail(err, FB_ERR_INTERNAL, "out of memory writing plot data") : write_text(path, fb_str_get(&text), err);
    fb_str_free(&text);
    return st;
}

/* FABRIC_PLOT_TIMEOUT (seconds) bounds gnuplot, GNUPLOT_TIMEOUT_S unless set. */
static enum fb_status plot_timeout(int *seconds, struct fb_err *err)
{
    const char *v = getenv("FABRIC_PLOT_TIMEOUT");
    *seconds = GNUPLOT_TIMEOUT_S;
    if (v == NULL || v[0] == '\0')
        return FB_OK;
    char *end = NULL;
    long n = strtol(v, &end, 10);
    if (*end != '\0' || n < 1 || n > GNUPLOT_TIMEOUT_MAX_S)
        return fb_fail(err, FB_ERR_USAGE, "FABRIC_PLOT_TIMEOUT=%s: give whole seconds from 1 to %d", v, GNUPLOT_TIMEOUT_MAX_S);
    *seconds = (int)n;
    return FB_OK;
}

/* gnuplot leads a process group of its own (setpgid in both processes, so
 * neither order of running leaves a window): a timeout kills whatever it
 * started too, not only gnuplot. */
static void exec_gnuplot(const char *gnuplot, const char *script, const char *log)
{
    setpgid(0, 0);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
    }
    execlp(gnuplot, gnuplot, script, (char *)NULL);
    _exit(127);
}

/* Waits for gnuplot at most `seconds`; on expiry kills its whole group. */
static enum fb_status wait_gnuplot(pid_t pid, int seconds, int *status, struct fb_err *err)
{
    for (long waited_ms = 0;; waited_ms += 10) {
        pid_t w = waitpid(pid, status, WNOHANG);
        if (w == pid)
            return FB_OK;
        if (w < 0 && errno != EINTR)
            return fb_fail(err, FB_ERR_RUNTIME, "waiting for gnuplot: %s", strerror(errno));
        if (waited_ms >= seconds * 1000L) {
            kill(-pid, SIGKILL);
            waitpid(pid, status, 0);
            return fb_fail(err, FB_ERR_TIMEOUT, "gnuplot did not finish within %d s; plot fewer results", seconds);
        }
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* Every result has a point to draw: gnuplot given an empty data file only
 * warns, in words about its data files rather than about the result. */
static enum fb_status check_drawable(const struct fb_result_set *set, struct fb_err *err)
{
    enum fb_status st = FB_OK;
    for (size_t i = 0; st == FB_OK && i < set->n; i++) {
        struct fb_point *pts = NULL;
        size_t n = 0, drawn = 0;
        st = fb_result_points(&set->r[i], &pts, &n, err);
        for (size_t k = 0; st == FB_OK && k < n; k++)
            drawn += pts[k].bytes > 0;
        free(pts);
        if (st == FB_OK && drawn == 0)
            st = fb_fail(err, FB_ERR_INPUT, "%s has no rows with a busBW figure: no rows to draw; leave it out of the plot",
                         set->r[i].path);
    }
    return st;
}

/* Runs gnuplot on the script with its output in `log`; bounded in time. */
static enum fb_status run_gnuplot(const char *script, const char *log, struct fb_err *err)
{
    const char *gnuplot = getenv("FABRIC_GNUPLOT");
    if (gnuplot == NULL || gnuplot[0] == '\0')
        gnuplot = "gnuplot";
    int seconds = 0;
    enum fb_status st = plot_timeout(&seconds, err);
    if (st != FB_OK)
        return st;
    pid_t pid = fork();
    if (pid < 0)
        return fb_fail(err, FB_ERR_RUNTIME, "cannot start gnuplot: %s", strerror(errno));
    if (pid == 0)
        exec_gnuplot(gnuplot, script, log);
    setpgid(pid, pid);
    int status = 0;
    st = wait_gnuplot(pid, seconds, &status, err);
    if (st != FB_OK)
        return st;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
        return fb_fail(err, FB_ERR_UNAVAIL, "%s not found; install gnuplot (Debian: gnuplot-nox, see scripts/install-deps.sh) or set FABRIC_GNUPLOT", gnuplot);
    char *text = NULL;
    size_t len = 0;
    struct fb_err ignore = {0};
    if (fb_read_text_file(log, &text, &len, &ignore) == FB_OK) {
        size_t i = 0;
        while (i < len && (text[i] == ' ' || text[i] == '\n'))
            i++;
        if (i < len) {
            char first[400];
            size_t n = strcspn(text + i, "\n");
            fb_copy(first, sizeof first, text + i, n);
            free(text);
            return fb_fail(err, FB_ERR_RUNTIME, "gnuplot reported: %s", first);
        }
        free(text);
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return fb_fail(err, FB_ERR_RUNTIME, "gnuplot failed (status %d) without a message", status);
    return FB_OK;
}

static enum fb_status check_opts(const struct fb_plot_opts *o, struct fb_err *err)
{
    if (o->out == NULL || (!ends_with_nocase(o->out, ".png") && !ends_with_nocase(o->out, ".svg")))
        return fb_fail(err, FB_ERR_USAGE, "-o FILE must end in .png or .svg");
    if (o->width < 200 || o->width > 10000 || o->height < 150 || o->height > 10000)
        return fb_fail(err, FB_ERR_USAGE, "--size must be between 200x150 and 10000x10000 pixels");
    return FB_OK;
}

/* The picture is drawn beside -o FILE under core/outfile's temporary name
 * (hidden, and cleaned by the next writer there should this process be
 * killed), then renamed onto it. gnuplot's terminal is set in the script,
 * so the name needs no extension. */
static bool staged_name(const char *out, char *staged, size_t cap)
{
    const char *slash = strrchr(out, '/');
    const char *base = slash ? slash + 1 : out;
    int dirlen = slash ? (int)(slash - out + 1) : 0;
    char tmp[NAME_MAX + 1];
    if (!fb_out_tmp_name(base, (long)getpid(), 0, tmp, sizeof tmp))
        return false;
    int n = snprintf(staged, cap, "%.*s%s", dirlen, out, tmp);
    return n > 0 && (size_t)n < cap;
}

/* Creates the staged picture before gnuplot runs: an output gnuplot cannot
 * open would only come back as one of its messages, this says which path
 * and which option to change. */
static enum fb_status claim_output(const char *staged, const char *out, struct fb_err *err)
{
    /* Exclusive and not through a link: the staged name is this process's
     * own, so anything already there is not ours to write over. */
    int fd = open(staged, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return fb_fail(err, FB_ERR_IO, "%s is not writable (%s); choose another -o FILE", out, strerror(errno));
    close(fd);
    return FB_OK;
}

/* The data file of each result: beside a kept script (--script), so that
 * the script alone redraws the picture, otherwise temporary. */
static enum fb_status write_all_data(const struct fb_result_set *set, const struct fb_plot_opts *o,
                                     struct tmp *t, const char **data, char (*kept)[PATH_MAX],
                                     struct fb_err *err)
{
    enum fb_status st = FB_OK;
    for (size_t i = 0; st == FB_OK && i < set->n; i++) {
        char name[32];
        snprintf(name, sizeof name, "result%zu.dat", i);
        if (kept != NULL) {
            snprintf(kept[i], PATH_MAX, "%.*s.%zu.dat", PATH_MAX - 32, o->script, i);
            data[i] = kept[i];
        } else {
            data[i] = tmp_path(t, name);
        }
        st = data[i] ? write_data(&set->r[i], data[i], err) : fb_fail(err, FB_ERR_INTERNAL, "out of memory plotting");
    }
    return st;
}

/* Writes the script gnuplot runs (into `staged`) and, with --script, the
 * one kept for the user (into the real output). */
static enum fb_status write_scripts(const struct fb_result_set *set, const char *const *data,
                                    const struct fb_plot_line *lines, size_t nlines,
                                    const struct fb_plot_opts *o, const char *staged,
                                    const char *script, bool *kept_written, struct fb_err *err)
{
    struct fb_str text = {0};
    fb_plot_script(set, data, lines, nlines, o, staged, &text);
    enum fb_status st = write_text(script, fb_str_get(&text), err);
    fb_str_free(&text);
    if (st == FB_OK && o->script != NULL) {
        *kept_written = true;
        fb_plot_script(set, data, lines, nlines, o, o->out, &text);
        st = write_text(o->script, fb_str_get(&text), err);
        fb_str_free(&text);
    }
    return st;
}

/* A failed plot leaves nothing behind: no staged picture, no kept script
 * or data that would draw a picture that was never made (only what this
 * run wrote: a script file given but not yet reached stays). */
static void remove_outputs(const char *staged, const struct fb_plot_opts *o, char (*kept)[PATH_MAX],
                           size_t n, bool kept_written)
{
    if (staged[0] != '\0')
        unlink(staged);
    if (kept_written)
        unlink(o->script);
    for (size_t i = 0; kept != NULL && i < n; i++)
        if (kept[i][0] != '\0')
            unlink(kept[i]);
}

enum fb_status fb_plot(const struct fb_result_set *set, const struct fb_plot_line *lines,
                       size_t nlines, const struct fb_plot_opts *o, struct fb_err *err)
{
    enum fb_status st = check_opts(o, err);
    if (st != FB_OK)
        return st;
    if (set->n == 0)
        return fb_fail(err, FB_ERR_INPUT, "nothing to plot: no results given");
    st = check_drawable(set, err);
    if (st != FB_OK)
        return st;
    st = fb_make_parent_dirs(o->out, err);
    if (st != FB_OK) {
        fb_out_name_option(err, "-o FILE");
        return st;
    }
    struct tmp t = {0};
    const char *base = getenv("TMPDIR");
    snprintf(t.dir, sizeof t.dir, "%s/fabric-plot.XXXXXX", base && base[0] ? base : "/tmp");
    if (mkdtemp(t.dir) == NULL) {
        t.dir[0] = '\0';
        return fb_fail(err, FB_ERR_IO, "cannot create a temporary directory: %s", strerror(errno));
    }
    const char **data = calloc(set->n, sizeof *data);
    char (*kept)[PATH_MAX] = o->script ? calloc(set->n, PATH_MAX) : NULL;
    char staged[PATH_MAX] = "";
    if (!staged_name(o->out, staged, sizeof staged))
        st = fb_fail(err, FB_ERR_USAGE, "-o %s: the path is too long; choose a shorter -o FILE", o->out);
    const char *script = tmp_path(&t, "plot.gp"), *log = tmp_path(&t, "gnuplot.log");
    if (st == FB_OK && (data == NULL || (o->script && kept == NULL) || script == NULL || log == NULL))
        st = fb_fail(err, FB_ERR_INTERNAL, "out of memory plotting");
    if (st == FB_OK)
        st = claim_output(staged, o->out, err);
    if (st == FB_OK)
        st = write_all_data(set, o, &t, data, kept, err);
    bool kept_written = false;
    if (st == FB_OK)
        st = write_scripts(set, data, lines, nlines, o, staged, script, &kept_written, err);
    if (st == FB_OK)
        st = run_gnuplot(script, log, err);
    struct stat sb;
    if (st == FB_OK && (stat(staged, &sb) != 0 || sb.st_size == 0))
        st = fb_fail(err, FB_ERR_RUNTIME, "gnuplot exited without writing %s", o->out);
    if (st == FB_OK && rename(staged, o->out) != 0)
        st = fb_fail(err, FB_ERR_IO, "cannot move the plot to %s: %s", o->out, strerror(errno));
    if (st != FB_OK)
        remove_outputs(staged, o, kept, set->n, kept_written);
    free(data);
    free(kept);
    tmp_cleanup(&t);
    return st;
}
