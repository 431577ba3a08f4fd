#include "doctor/smi_topo.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "core/text.h"

#define CELLS_MAX (2 * FB_SMI_MAX + 8)

/* "GPU3" or "NIC12": the kind letter ('G', 'N') and index, else 0. */
static char device_label(const char *s, int *index)
{
    char kind = strncmp(s, "GPU", 3) == 0 ? 'G' : strncmp(s, "NIC", 3) == 0 ? 'N' : 0;
    if (kind == 0 || !isdigit((unsigned char)s[3]))
        return 0;
    char *end = NULL;
    long v = strtol(s + 3, &end, 10);
    if (*end != '\0' || v < 0 || v >= FB_SMI_MAX)
        return 0;
    *index = (int)v;
    return kind;
}

static char *trim(char *s)
{
    while (*s == ' ')
        s++;
    size_t n = strlen(s);
    while (n > 0 && s[n - 1] == ' ')
        s[--n] = '\0';
    return s;
}

/* Cells separated by one tab each, empty cells kept. */
static int split_tabs(char *line, char **cell, int max)
{
    int n = 0;
    for (char *p = line; n < max;) {
        char *tab = strchr(p, '\t');
        if (tab != NULL)
            *tab = '\0';
        cell[n++] = trim(p);
        if (tab == NULL)
            break;
        p = tab + 1;
    }
    return n;
}

/* nvidia-smi's own form: one tab between cells, so every matrix cell of a
 * row holds a code. */
static bool single_tabs(const char *line, int ncols)
{
    char copy[2048], *cell[CELLS_MAX];
    snprintf(copy, sizeof copy, "%s", line);
    int n = split_tabs(copy, cell, CELLS_MAX);
    if (n < ncols + 1)
        return true; /* too short either way: read_gpu_row says so */
    for (int j = 1; j <= ncols; j++)
        if (cell[j][0] == '\0')
            return false;
    return true;
}

/* Cells of a GPU row: nvidia-smi separates them by one tab each and leaves
 * an affinity cell empty where it has nothing to say (kept, so the NUMA
 * node stays in its column). A copy aligned by hand pads with more tabs
 * or blanks, and a blank-separated paste has no empty cell: there any run
 * of white space separates two cells. */
static int split_cells(char *line, int ncols, char **cell, int max)
{
    if (strchr(line, '\t') != NULL && single_tabs(line, ncols))
        return split_tabs(line, cell, max);
    return fb_tokens(line, cell, max);
}

/* A copy quoted as comments ("# GPU0 ...", as a shell script or a
 * configuration file keeps it) reads as the lines without their marks. */
static char *unquoted(char *s, bool quoted)
{
    if (quoted && *s == '#') {
        s++;
        while (*s == ' ' || *s == '\t')
            s++;
    }
    return s;
}

static enum fb_link level_of(const char *cell)
{
    static const struct {
        const char *name;
        enum fb_link link;
    } levels[] = {{"PIX", FB_LINK_PIX}, {"PXB", FB_LINK_PXB}, {"PHB", FB_LINK_PHB},
                  {"NODE", FB_LINK_NODE}, {"SYS", FB_LINK_SYS}};
    for (size_t i = 0; i < sizeof levels / sizeof *levels; i++)
        if (strcmp(cell, levels[i].name) == 0)
            return levels[i].link;
    return FB_LINK_NONE;
}

/* The header starts with GPU0 as GPU0's row does; only the row has its
 * self cell "X". */
static bool is_header(const char *s)
{
    return fb_starts_with(s, "GPU0") && strchr(s, 'X') == NULL;
}

static bool detect_form(const char *text, size_t len, bool quoted)
{
    size_t pos = 0;
    char buf[1024], *s = NULL;
    bool header = false;
    for (int lines = 0; lines < 64 && fb_next_line_copy(text, len, &pos, buf, sizeof buf, &s); lines++) {
        s = unquoted(s, quoted);
        if (header && fb_starts_with(s, "GPU0"))
            return true;
        header = header || is_header(s);
    }
    return false;
}

bool fb_smi_topo_detect(const char *text, size_t len)
{
    return detect_form(text, len, false) || detect_form(text, len, true);
}

struct columns {
    int n;                   /* matrix columns */
    char kind[CELLS_MAX];    /* 'G' or 'N' */
    int index[CELLS_MAX];
};

/* Where the matrix ends: "CPU Affinity", "NUMA Affinity", "GPU NUMA ID". */
static bool affinity_word(const char *s)
{
    return strcmp(s, "CPU") == 0 || strcmp(s, "NUMA") == 0 || strcmp(s, "Affinity") == 0 ||
           strcmp(s, "GPU") == 0;
}

/* A NIC column the old layout (drivers up to R470) names by its RDMA
 * device, "mlx5_0", where newer ones write "NIC0" and a NIC Legend. */
static bool device_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= sizeof ((struct fb_smi_topo *)0)->nic_name[0] || !isalpha((unsigned char)s[0]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && strchr("_-.", s[i]) == NULL)
            return false;
    return true;
}

/* The header's matrix columns: GPUn, NICn, or a NIC named by its device. */
static void read_header(char *line, struct columns *c, struct fb_smi_topo *t)
{
    char *tok[CELLS_MAX];
    int n = fb_tokens(line, tok, CELLS_MAX);
    c->n = 0;
    for (int i = 0; i < n && !affinity_word(tok[i]); i++) {
        int idx = 0;
        char kind = device_label(tok[i], &idx);
        if (kind == 0 && device_name(tok[i]) && t->nnics < FB_SMI_MAX) {
            kind = 'N';
            idx = t->nnics;
            fb_copy(t->nic_name[idx], sizeof t->nic_name[idx], tok[i], strlen(tok[i]));
        }
        if (kind == 0)
            break;
        c->kind[c->n] = kind;
        c->index[c->n++] = idx;
        if (kind == 'G' && idx + 1 > t->ngpus)
            t->ngpus = idx + 1;
        if (kind == 'N' && idx + 1 > t->nnics)
            t->nnics = idx + 1;
    }
}

static enum fb_status read_gpu_row(const char *name, long lineno, char **cell, int n, int gpu,
                                   const struct columns *c, struct fb_smi_topo *t, struct fb_err *err)
{
    if (n < c->n + 1)
        return fb_fail(err, FB_ERR_INPUT, "%s, line %ld: GPU%d has %d cells for %d columns; the matrix is cut", name,
                       lineno, gpu, n - 1, c->n);
    for (int j = 0; j < c->n; j++)
        if (c->kind[j] == 'N')
            t->link[gpu][c->index[j]] = level_of(cell[1 + j]);
    if (n > c->n + 1)
        fb_copy(t->cpus[gpu], sizeof t->cpus[gpu], cell[c->n + 1], strlen(cell[c->n + 1]));
    if (n > c->n + 2)
        fb_copy(t->numa[gpu], sizeof t->numa[gpu], cell[c->n + 2], strlen(cell[c->n + 2]));
    return FB_OK;
}

/* "NIC0: mlx5_0" of the NIC Legend. */
static void read_legend(const char *s, struct fb_smi_topo *t)
{
    char label[16];
    int idx = 0;
    const char *colon = strchr(s, ':');
    if (colon == NULL || (size_t)(colon - s) >= sizeof label)
        return;
    fb_copy(label, sizeof label, s, (size_t)(colon - s));
    if (device_label(label, &idx) != 'N')
        return;
    const char *dev = colon + 1;
    while (*dev == ' ')
        dev++;
    fb_copy(t->nic_name[idx], sizeof t->nic_name[idx], dev, strcspn(dev, " \t"));
}

static enum fb_status parse_form(const char *name, const char *text, size_t len, bool quoted,
                                 struct fb_smi_topo *t, struct columns *c, struct fb_err *err)
{
    size_t pos = 0;
    char buf[2048], *s = NULL;
    long lineno = 0;
    while (fb_next_line_copy(text, len, &pos, buf, sizeof buf, &s)) {
        lineno++;
        s = unquoted(s, quoted);
        int idx = 0;
        char first[16];
        fb_copy(first, sizeof first, s, strcspn(s, " \t:"));
        char kind = device_label(first, &idx);
        if (c->n == 0 && is_header(s)) {
            read_header(s, c, t);
            continue;
        }
        if (c->n > 0 && kind == 'G' && strchr(s, ':') == NULL) {
            char *cell[CELLS_MAX];
            int n = split_cells(s, c->n, cell, CELLS_MAX);
            enum fb_status st = read_gpu_row(name, lineno, cell, n, idx, c, t, err);
            if (st != FB_OK)
                return st;
        } else if (kind == 'N' && strchr(s, ':') != NULL) {
            read_legend(s, t);
        }
    }
    return FB_OK;
}

enum fb_status fb_smi_topo_parse(const char *name, const char *text, size_t len, struct fb_smi_topo *t,
                                 struct fb_err *err)
{
    memset(t, 0, sizeof *t);
    struct columns c = {0};
    bool quoted = !detect_form(text, len, false) && detect_form(text, len, true);
    enum fb_status st = parse_form(name, text, len, quoted, t, &c, err);
    if (st != FB_OK)
        return st;
    if (c.n == 0 || t->ngpus == 0)
        return fb_fail(err, FB_ERR_INPUT, "%s: no GPU0 header row; paste the whole output of nvidia-smi topo -m", name);
    for (int n = 0; n < t->nnics; n++)
        if (t->nic_name[n][0] == '\0')
            snprintf(t->nic_name[n], sizeof t->nic_name[n], "NIC%d", n);
    return FB_OK;
}

static enum fb_link best_level(const struct fb_smi_topo *t, int gpu)
{
    enum fb_link best = FB_LINK_NONE;
    for (int n = 0; n < t->nnics; n++)
        if (t->link[gpu][n] != FB_LINK_NONE && (best == FB_LINK_NONE || t->link[gpu][n] < best))
            best = t->link[gpu][n];
    return best;
}

void fb_smi_topo_print(FILE *out, const char *source, const struct fb_smi_topo *t)
{
    fprintf(out, "fabric-topo: %s (nvidia-smi topo -m: GPU-to-NIC closeness only; an hwloc export says more)\n", source);
    fprintf(out, "machine: %d GPUs, %d NICs\n\n", t->ngpus, t->nnics);
    fprintf(out, "%-6s %-40s %-5s %-5s %s\n", "GPU", "nearest NIC", "path", "NUMA", "CPUs");
    int far = 0;
    for (int g = 0; g < t->ngpus; g++) {
        enum fb_link best = best_level(t, g);
        char nics[256] = "";
        size_t used = 0;
        for (int n = 0; best != FB_LINK_NONE && n < t->nnics; n++)
            if (t->link[g][n] == best)
                fb_strbuf_append(nics, sizeof nics, &used, "%s%s", used ? "," : "", t->nic_name[n]);
        fprintf(out, "GPU%-3d %-40s %-5s %-5s %s\n", g, nics[0] ? nics : "-", fb_link_name(best),
                t->numa[g][0] ? t->numa[g] : "-", t->cpus[g][0] ? t->cpus[g] : "-");
        far += best >= FB_LINK_NODE;
    }
    fprintf(out, "\n");
    if (t->nnics == 0) {
        fprintf(out, "findings: no NIC in the matrix: nothing to pair with GPUs\n");
        return;
    }
    if (far == 0) {
        fprintf(out, "findings: none\n");
        return;
    }
    fprintf(out, "findings:\n");
    for (int g = 0; g < t->ngpus; g++)
        if (best_level(t, g) >= FB_LINK_NODE)
            fprintf(out, "WARN far-nic    GPU%d: no NIC closer than %s; its traffic crosses host bridges (give it a NIC on its PCIe switch, or accept the cost)\n",
                    g, fb_link_name(best_level(t, g)));
}
