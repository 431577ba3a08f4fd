#include "doctor/topo_xml.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define FIX "export the topology again with lstopo --of xml FILE"

/* An element open at the reading point: its name (an offset into the
 * text), where text other than blanks first stood in it, if any child. */
struct open_el {
    size_t name_at, len;
    size_t text_at; /* NO_TEXT when none */
    bool has_child;
};
#define NO_TEXT ((size_t)-1)

/* The document being read (line ends already LF), where reading is, and
 * the elements open at that point. */
struct xml {
    const char *s;
    size_t n, p;
    const char *what;
    struct fb_str *out;
    struct fb_err *err;
    struct open_el *open;
    size_t depth, cap;
    bool root_seen, root_closed;
    bool v3;             /* the root says version 3.x: hwloc 3.0's forms rewritten */
    size_t root_obj_end; /* in out: just past the root object's start tag (0: none yet) */
    struct fb_str moved; /* 3.x: the topology's own infos, for the root object */
};

static int line_at(const struct xml *x, size_t at)
{
    int line = 1;
    for (size_t i = 0; i < at && i < x->n; i++)
        line += x->s[i] == '\n';
    return line;
}

/* The one error of a malformed export: the file, the line, the problem. */
__attribute__((format(printf, 3, 4)))
static enum fb_status bad(struct xml *x, size_t at, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return fb_fail(x->err, FB_ERR_INPUT, "%s line %d: %s", x->what, line_at(x, at), msg);
}

static bool at(const struct xml *x, const char *lit)
{
    return strncmp(x->s + x->p, lit, strlen(lit)) == 0;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void skip_space(struct xml *x)
{
    while (x->p < x->n && is_space(x->s[x->p]))
        x->p++;
}

/* A name runs to the first blank or markup character. */
static size_t name_len(const struct xml *x, size_t from)
{
    size_t k = from;
    while (k < x->n && !is_space(x->s[k]) && strchr("/>=<\"'?!&", x->s[k]) == NULL)
        k++;
    return k - from;
}

/* ---- what is dropped ---- */

/* "<!-- ... -->". XML forbids "--" inside, which also makes "--->" no end. */
static enum fb_status skip_comment(struct xml *x)
{
    size_t start = x->p, body = x->p + 4;
    const char *end = strstr(x->s + body, "-->");
    if (end == NULL)
        return bad(x, start, "a comment '<!--' is never closed by '-->': close it, or " FIX);
    const char *dashes = strstr(x->s + body, "--");
    if (dashes != end)
        return bad(x, (size_t)(dashes - x->s), "a comment holds '--', which XML does not allow "
                   "(lstopo refuses it too): remove the dashes or put a blank between them");
    x->p = (size_t)(end - x->s) + 3;
    return FB_OK;
}

/* "<?target ...?>"; the XML declaration only where the document opens. */
static enum fb_status skip_pi(struct xml *x, bool declaration_allowed)
{
    size_t start = x->p;
    size_t tl = name_len(x, x->p + 2);
    if (tl == 3 && strncasecmp(x->s + x->p + 2, "xml", 3) == 0 && !declaration_allowed)
        return bad(x, start, "an XML declaration '<?xml ...?>' that does not open the document "
                   "(lstopo refuses it too): remove it or move it to the first line");
    const char *end = strstr(x->s + x->p + 2, "?>");
    if (end == NULL)
        return bad(x, start, "a processing instruction '<?' is never closed by '?>': close it, "
                   "or " FIX);
    x->p = (size_t)(end - x->s) + 2;
    return FB_OK;
}

/* Past a quoted literal starting at x->p; false at the end of the text. */
static bool skip_quoted(struct xml *x)
{
    const char *close = strchr(x->s + x->p + 1, x->s[x->p]);
    if (close == NULL)
        return false;
    x->p = (size_t)(close - x->s) + 1;
    return true;
}

/* "<!DOCTYPE name SYSTEM "..." [ internal subset ]>": declarations in the
 * subset may hold '>' and ']' inside quotes and comments. */
static enum fb_status skip_doctype(struct xml *x)
{
    size_t start = x->p;
    if (x->root_seen)
        return bad(x, start, "a DOCTYPE after the root element opened: remove it");
    x->p += 9;
    bool subset = false;
    while (x->p < x->n) {
        char c = x->s[x->p];
        if (c == '"' || c == '\'') {
            if (!skip_quoted(x))
                break;
        } else if (subset && at(x, "<!--")) {
            enum fb_status st = skip_comment(x);
            if (st != FB_OK)
                return st;
        } else if (c == '[' && !subset) {
            subset = true;
            x->p++;
        } else if (c == ']' && subset) {
            subset = false;
            x->p++;
        } else if (c == '>' && !subset) {
            x->p++;
            return FB_OK;
        } else {
            x->p++;
        }
    }
    return bad(x, start, "the DOCTYPE is never closed by '>': close it, or " FIX);
}

/* ---- references and escapes ---- */

static void put_utf8(struct fb_str *o, unsigned long cp)
{
    char b[4];
    size_t n;
    if (cp < 0x80) {
        b[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        b[0] = (char)(0xc0 | (cp >> 6));
        b[1] = (char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        b[0] = (char)(0xe0 | (cp >> 12));
        b[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        b[2] = (char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        b[0] = (char)(0xf0 | (cp >> 18));
        b[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        b[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        b[3] = (char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    fb_str_addn(o, b, n);
}

/* The code point of the reference at x->p ("&lt;", "&#10;", "&#x2d;"),
 * x->p moved past it. */
static enum fb_status read_reference(struct xml *x, unsigned long *cp)
{
    static const struct {
        const char *name;
        char c;
    } named[] = {{"lt;", '<'}, {"gt;", '>'}, {"amp;", '&'}, {"quot;", '"'}, {"apos;", '\''}};
    size_t start = x->p;
    const char *r = x->s + x->p + 1;
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++) {
        if (strncmp(r, named[i].name, strlen(named[i].name)) == 0) {
            *cp = (unsigned char)named[i].c;
            x->p += 1 + strlen(named[i].name);
            return FB_OK;
        }
    }
    if (r[0] == '#') {
        bool hex = r[1] == 'x';
        char *end = NULL;
        const char *digits = r + 1 + hex;
        unsigned long v = strtoul(digits, &end, hex ? 16 : 10);
        if (end != digits && *end == ';' && strchr(" +-", *digits) == NULL && v > 0 &&
            v <= 0x10ffff && !(v >= 0xd800 && v <= 0xdfff)) {
            *cp = v;
            x->p = (size_t)(end - x->s) + 1;
            return FB_OK;
        }
    }
    size_t n = strcspn(r, "; \t\n<\"'");
    n += r[n] == ';';
    return bad(x, start, "'&%.*s' is not a reference XML defines (a bare '&' must be written "
               "&amp;): escape it", (int)(n < 40 ? n : 40), r);
}

/* A value character as hwloc's parser unescapes it. */
static void put_escaped(struct fb_str *o, unsigned long cp)
{
    switch (cp) {
    case '&': fb_str_addn(o, "&amp;", 5); break;
    case '<': fb_str_addn(o, "&lt;", 4); break;
    case '>': fb_str_addn(o, "&gt;", 4); break;
    case '"': fb_str_addn(o, "&quot;", 6); break;
    case '\n': fb_str_addn(o, "&#10;", 5); break;
    case '\r': fb_str_addn(o, "&#13;", 5); break;
    case '\t': fb_str_addn(o, "&#9;", 4); break;
    default: put_utf8(o, cp); break;
    }
}

/* ---- what is kept ---- */

/* name="value" or name='value', written as name="value". */
static enum fb_status copy_attribute(struct xml *x, bool keep)
{
    size_t start = x->p, nl = name_len(x, x->p);
    if (nl == 0)
        return bad(x, start, "'%c' where an attribute name should be: " FIX, x->s[x->p]);
    x->p += nl;
    skip_space(x);
    if (x->p >= x->n || x->s[x->p] != '=')
        return bad(x, start, "attribute %.*s has no '=\"value\"': " FIX, (int)nl, x->s + start);
    x->p++;
    skip_space(x);
    char quote = x->p < x->n ? x->s[x->p] : '\0';
    if (quote != '"' && quote != '\'')
        return bad(x, start, "attribute %.*s's value is not quoted: " FIX, (int)nl, x->s + start);
    if (keep) {
        fb_str_addn(x->out, " ", 1);
        fb_str_addn(x->out, x->s + start, nl);
        fb_str_addn(x->out, "=\"", 2);
    }
    x->p++;
    struct fb_str ignored = {0};
    struct fb_str *o = keep ? x->out : &ignored;
    while (x->p < x->n && x->s[x->p] != quote) {
        char c = x->s[x->p];
        unsigned long cp = (unsigned char)c;
        if (c == '<') {
            fb_str_free(&ignored);
            return bad(x, x->p, "a '<' inside attribute %.*s's value, which XML does not allow "
                       "(lstopo refuses it too): write it as &lt;", (int)nl, x->s + start);
        }
        if (c == '&') {
            enum fb_status st = read_reference(x, &cp);
            if (st != FB_OK) {
                fb_str_free(&ignored);
                return st;
            }
        } else {
            x->p++;
            if (is_space(c))
                cp = ' ';
        }
        put_escaped(o, cp);
    }
    fb_str_free(&ignored);
    if (x->p >= x->n)
        return bad(x, start, "attribute %.*s's value is never closed by %c: " FIX, (int)nl,
                   x->s + start, quote);
    x->p++;
    if (keep)
        fb_str_addn(x->out, "\"", 1);
    return FB_OK;
}

/* The root's version: hwloc 2.x reads "2.0" in place of "3.x". */
static void put_root_version(struct xml *x, size_t value_at)
{
    const char *v = x->s + value_at;
    char quote = v[-1];
    size_t len = strcspn(v, quote == '"' ? "\"" : "'");
    fb_str_addn(x->out, " version=\"", 10);
    x->v3 = len >= 3 && v[0] >= '3' && v[0] <= '9' && v[1] == '.';
    if (x->v3)
        fb_str_addn(x->out, "2.0", 3);
    else
        fb_str_addn(x->out, v, len);
    fb_str_addn(x->out, "\"", 1);
}

/* ---- hwloc 3.0's forms ---- */

/* What an object's attributes say about its OS device kind. */
struct osdev_notes {
    bool has_type;
    unsigned long types; /* hwloc 3.0's bitmask */
    bool gpu_name;       /* named nvml* or rsmi*: a GPU's management device */
    bool bxi;            /* subtype BXI */
};

#define OSDEV3_STORAGE 0x01ul
#define OSDEV3_MEMORY 0x02ul
#define OSDEV3_GPU 0x04ul
#define OSDEV3_COPROC 0x08ul
#define OSDEV3_NETWORK 0x10ul
#define OSDEV3_OPENFABRICS 0x20ul
#define OSDEV3_DMA 0x40ul

/* hwloc 3.0 writes an OS device's kinds as a bitmask (an RDMA port is
 * network + OpenFabrics, 48; a CUDA device GPU + co-processor, 12); 2.x
 * reads one number: block 0, GPU 1, network 2, OpenFabrics 3, DMA 4,
 * co-processor 5. The number chosen is the one hwloc 3.0 itself writes when
 * it exports for 2.x readers; -1 for a device of no known kind. */
static int osdev_type_v2(const struct osdev_notes *n)
{
    unsigned long t = n->types;
    if (t & (OSDEV3_STORAGE | OSDEV3_MEMORY))
        return 0;
    if (t & OSDEV3_OPENFABRICS)
        return 3;
    if (t & OSDEV3_NETWORK)
        return n->bxi ? 3 : 2;
    if (t & OSDEV3_DMA)
        return 4;
    if (t & OSDEV3_COPROC)
        return n->gpu_name ? 1 : 5;
    if (t & OSDEV3_GPU)
        return 1;
    return -1;
}

/* The value of an attribute as copy_attribute wrote it: ` name="value"`. */
static const char *written_value(const struct fb_str *attr)
{
    const char *q = attr->s ? strchr(attr->s, '"') : NULL;
    return q ? q + 1 : "";
}

static bool attr_is(const struct xml *x, size_t at, size_t len, const char *name)
{
    return len == strlen(name) && strncmp(x->s + at, name, len) == 0;
}

/* Notes what a 3.x object's attribute says of its OS device kind; true
 * when the attribute is osdev_type, which is written afterwards as 2.x
 * reads it, not as found. */
static bool note_osdev_attribute(const struct xml *x, size_t at, size_t len,
                                 const struct fb_str *attr, struct osdev_notes *n)
{
    const char *v = written_value(attr);
    if (attr_is(x, at, len, "osdev_type")) {
        char *end = NULL;
        n->types = strtoul(v, &end, 10);
        n->has_type = end != v && *end == '"';
        return true;
    }
    if (attr_is(x, at, len, "name"))
        n->gpu_name = strncmp(v, "nvml", 4) == 0 || strncmp(v, "rsmi", 4) == 0;
    else if (attr_is(x, at, len, "subtype"))
        n->bxi = strncmp(v, "BXI\"", 4) == 0;
    return false;
}

static void put_osdev_type(struct xml *x, const struct osdev_notes *n)
{
    int v2 = n->has_type ? osdev_type_v2(n) : -1;
    if (v2 >= 0)
        fb_str_addf(x->out, " osdev_type=\"%d\"", v2);
}

/* hwloc 3.0 keeps the topology's infos (HostName, OSName, Backend, ...)
 * after the root object; hwloc 2.x reads them as the root object's first
 * children. They go there. */
static enum fb_status put_moved_infos(struct xml *x)
{
    if (x->moved.len == 0 || x->root_obj_end == 0)
        return FB_OK;
    struct fb_str merged = {0};
    fb_str_addn(&merged, x->out->s, x->root_obj_end);
    fb_str_addn(&merged, x->moved.s, x->moved.len);
    fb_str_addn(&merged, x->out->s + x->root_obj_end, x->out->len - x->root_obj_end);
    if (merged.oom) {
        fb_str_free(&merged);
        return fb_fail(x->err, FB_ERR_INTERNAL, "out of memory reading %s", x->what);
    }
    fb_str_free(x->out);
    *x->out = merged;
    return FB_OK;
}

static bool push_open(struct xml *x, size_t name_at, size_t len)
{
    if (x->depth == x->cap) {
        size_t cap = x->cap ? 2 * x->cap : 64;
        struct open_el *o = realloc(x->open, cap * sizeof *o);
        if (o == NULL)
            return false;
        x->open = o;
        x->cap = cap;
    }
    x->open[x->depth++] = (struct open_el){name_at, len, NO_TEXT, false};
    return true;
}

/* hwloc reads text only in elements that hold nothing else (distances'
 * values, userdata): text beside child elements is a note someone wrote
 * without the comment markers, which hwloc's parser cannot pass over. */
static enum fb_status text_beside_children(struct xml *x, const struct open_el *e)
{
    return bad(x, e->text_at, "text inside <%.*s> beside its child elements, which an hwloc "
               "export never holds: remove it, or make it a comment <!-- ... -->", (int)e->len,
               x->s + e->name_at);
}

/* One attribute of a start tag, as written; a 3.x object's osdev_type
 * is held back in *n (put_osdev_type writes it). */
static enum fb_status copy_tag_attribute(struct xml *x, bool root, bool object,
                                         struct osdev_notes *n)
{
    size_t attr = x->p, al = name_len(x, attr);
    bool version = root && attr_is(x, attr, al, "version");
    struct fb_str one = {0}, *out = x->out;
    x->out = &one;
    enum fb_status st = copy_attribute(x, !root);
    x->out = out;
    bool held = st == FB_OK && x->v3 && object && note_osdev_attribute(x, attr, al, &one, n);
    if (st == FB_OK && !held && one.len > 0) /* the root's own attributes are dropped */
        fb_str_addn(x->out, one.s, one.len);
    fb_str_free(&one);
    if (st == FB_OK && version)
        put_root_version(x, attr + 7 + strspn(x->s + attr + 7, " \t\n=") + 1);
    return st;
}

/* Past the attributes of the tag opened at `start`, up to its '>' or '/>'. */
static enum fb_status copy_tag_attributes(struct xml *x, size_t start, size_t name_at, size_t nl,
                                          bool root, struct osdev_notes *n)
{
    bool object = attr_is(x, name_at, nl, "object");
    for (;;) {
        size_t before = x->p;
        skip_space(x);
        if (x->p >= x->n)
            return bad(x, start, "the export ends inside the tag <%.*s, cut short: not an hwloc "
                       "XML topology; " FIX, (int)nl, x->s + name_at);
        if (at(x, "/>") || x->s[x->p] == '>')
            return FB_OK;
        if (x->p == before)
            return bad(x, x->p, "no blank before attribute %.*s of <%.*s>: " FIX,
                       (int)name_len(x, x->p), x->s + x->p, (int)nl, x->s + name_at);
        enum fb_status st = copy_tag_attribute(x, root, object, n);
        if (st != FB_OK)
            return st;
    }
}

/* "<name attr="v" ...>" or "<name .../>". The root keeps only its version,
 * the one attribute hwloc reads there and the one form its parser takes.
 * In a 3.x export an OS device's kind is rewritten (osdev_type_v2) and the
 * topology's own infos are moved into the root object (put_moved_infos). */
static enum fb_status copy_start_tag(struct xml *x)
{
    size_t start = x->p, name_at = x->p + 1, nl = name_len(x, name_at);
    if (x->root_closed)
        return bad(x, start, "an element after the root element closed: an export holds one "
                   "<topology>; " FIX);
    bool root = !x->root_seen;
    x->root_seen = true;
    if (x->depth > 0) {
        struct open_el *parent = &x->open[x->depth - 1];
        parent->has_child = true;
        if (parent->text_at != NO_TEXT)
            return text_beside_children(x, parent);
    }
    bool topology_info = x->v3 && x->depth == 1 && attr_is(x, name_at, nl, "info");
    struct fb_str tag = {0}, *out = x->out;
    x->out = &tag;
    fb_str_addn(x->out, x->s + start, 1 + nl);
    x->p = name_at + nl;
    struct osdev_notes notes = {0};
    enum fb_status st = copy_tag_attributes(x, start, name_at, nl, root, &notes);
    if (st == FB_OK && notes.has_type)
        put_osdev_type(x, &notes);
    bool empty = st == FB_OK && x->s[x->p] == '/';
    if (st == FB_OK) {
        x->p += empty ? 2 : 1;
        fb_str_addn(x->out, empty ? "/>" : ">", empty ? 2 : 1);
    }
    x->out = out;
    fb_str_addn(topology_info && empty ? &x->moved : x->out, tag.s, tag.len);
    fb_str_free(&tag);
    if (st != FB_OK)
        return st;
    if (empty) {
        x->root_closed = x->depth == 0;
        return FB_OK;
    }
    if (x->depth == 1 && x->root_obj_end == 0 && attr_is(x, name_at, nl, "object"))
        x->root_obj_end = x->out->len;
    if (!push_open(x, name_at, nl))
        return fb_fail(x->err, FB_ERR_INTERNAL, "out of memory reading %s", x->what);
    return FB_OK;
}

static enum fb_status copy_end_tag(struct xml *x)
{
    size_t start = x->p, name_at = x->p + 2, nl = name_len(x, name_at);
    x->p = name_at + nl;
    skip_space(x);
    if (x->p >= x->n || x->s[x->p] != '>')
        return bad(x, start, "the end tag </%.*s is never closed by '>': " FIX, (int)nl,
                   x->s + name_at);
    x->p++;
    if (x->depth == 0)
        return bad(x, start, "</%.*s> closes nothing: " FIX, (int)nl, x->s + name_at);
    size_t want = x->open[x->depth - 1].name_at, wl = x->open[x->depth - 1].len;
    if (nl != wl || strncmp(x->s + name_at, x->s + want, nl) != 0)
        return bad(x, start, "</%.*s> closes <%.*s> opened on line %d: " FIX, (int)nl,
                   x->s + name_at, (int)wl, x->s + want, line_at(x, want));
    x->depth--;
    x->root_closed = x->depth == 0;
    fb_str_addn(x->out, x->s + start, x->p - start);
    return FB_OK;
}

/* Character data: references resolved, written as hwloc's parser takes
 * content (it unescapes nothing there; '<' and '&' stay escaped). Outside
 * the root only white space may stand. */
static enum fb_status copy_text(struct xml *x)
{
    bool inside = x->depth > 0;
    while (x->p < x->n && x->s[x->p] != '<') {
        char c = x->s[x->p];
        if (!inside && !is_space(c))
            return bad(x, x->p, "text outside the root element <topology>: remove it, or turn it "
                       "into a comment <!-- ... -->");
        if (inside && !is_space(c) && x->open[x->depth - 1].text_at == NO_TEXT) {
            struct open_el *e = &x->open[x->depth - 1];
            e->text_at = x->p;
            if (e->has_child)
                return text_beside_children(x, e);
        }
        unsigned long cp = (unsigned char)c;
        if (c == '&') {
            enum fb_status st = read_reference(x, &cp);
            if (st != FB_OK)
                return st;
        } else {
            x->p++;
        }
        if (cp == '<' || cp == '&')
            fb_str_addn(x->out, cp == '<' ? "&lt;" : "&amp;", cp == '<' ? 4 : 5);
        else if (inside)
            put_utf8(x->out, cp);
    }
    return FB_OK;
}

static enum fb_status copy_cdata(struct xml *x)
{
    size_t start = x->p;
    if (x->depth == 0)
        return bad(x, start, "a CDATA section outside the root element: remove it");
    const char *end = strstr(x->s + x->p + 9, "]]>");
    if (end == NULL)
        return bad(x, start, "a CDATA section '<![CDATA[' is never closed by ']]>': " FIX);
    struct open_el *e = &x->open[x->depth - 1];
    size_t body = x->p + 9, n = (size_t)(end - x->s) - body;
    if (e->text_at == NO_TEXT && strspn(x->s + body, " \t\n") < n)
        e->text_at = body;
    if (e->text_at != NO_TEXT && e->has_child)
        return text_beside_children(x, e);
    fb_str_addn(x->out, x->s + body, n);
    x->p = (size_t)(end - x->s) + 3;
    return FB_OK;
}

/* One step at x->p: markup, or the text up to the next. */
static enum fb_status step(struct xml *x, size_t declaration_at)
{
    if (x->s[x->p] != '<')
        return copy_text(x);
    if (at(x, "<!--"))
        return skip_comment(x);
    if (at(x, "<?"))
        return skip_pi(x, x->p == declaration_at);
    if (at(x, "<![CDATA["))
        return copy_cdata(x);
    if (at(x, "<!DOCTYPE"))
        return skip_doctype(x);
    if (at(x, "</"))
        return copy_end_tag(x);
    if (name_len(x, x->p + 1) > 0)
        return copy_start_tag(x);
    return bad(x, x->p, "'%.*s' is no XML markup: " FIX, (int)strcspn(x->s + x->p, " \t\n>"),
               x->s + x->p);
}

/* CR LF and lone CR as LF, as an XML parser reads line ends. */
static size_t unify_line_ends(char *t, size_t n)
{
    size_t w = 0;
    for (size_t r = 0; r < n; r++) {
        if (t[r] == '\r') {
            t[w++] = '\n';
            r += r + 1 < n && t[r + 1] == '\n';
        } else {
            t[w++] = t[r];
        }
    }
    t[w] = '\0';
    return w;
}

static enum fb_status walk(struct xml *x)
{
    static const char bom[] = "\xef\xbb\xbf";
    if (at(x, bom))
        x->p += 3;
    skip_space(x);
    size_t declaration_at = x->p; /* blank lines pasted above it are forgiven */
    while (x->p < x->n) {
        enum fb_status st = step(x, declaration_at);
        if (st != FB_OK)
            return st;
    }
    if (x->depth > 0) {
        const struct open_el *e = &x->open[x->depth - 1];
        return bad(x, x->n, "the export ends inside <%.*s> opened on line %d, cut short: not an "
                   "hwloc XML topology; " FIX, (int)e->len, x->s + e->name_at,
                   line_at(x, e->name_at));
    }
    if (!x->root_seen)
        return fb_fail(x->err, FB_ERR_INPUT, "%s holds no XML element: not an hwloc XML "
                       "topology; " FIX, x->what);
    return FB_OK;
}

enum fb_status fb_topo_xml_for_hwloc(const char *text, size_t len, const char *what,
                                     struct fb_str *out, struct fb_err *err)
{
    char *copy = malloc(len + 1);
    if (copy == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory reading %s", what);
    memcpy(copy, text, len);
    copy[len] = '\0';
    struct xml x = {.s = copy, .n = unify_line_ends(copy, len), .what = what, .out = out,
                    .err = err};
    enum fb_status st = walk(&x);
    if (st == FB_OK)
        st = put_moved_infos(&x);
    if (st == FB_OK && out->oom)
        st = fb_fail(err, FB_ERR_INTERNAL, "out of memory reading %s", what);
    fb_str_free(&x.moved);
    free(x.open);
    free(copy);
    return st;
}
