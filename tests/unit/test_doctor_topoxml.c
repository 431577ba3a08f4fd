/* hwloc exports as people keep them (topo_xml.h): annotated with comments
 * and processing instructions wherever XML allows them, re-indented,
 * quoted with ', carrying entities and CDATA, with CR line ends. The rule:
 * such an export reads exactly as the export without them; what XML
 * forbids is refused with its line. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/files.h"
#include "doctor/topo.h"
#include "doctor/topo_xml.h"

static const char *fixture(const char *name)
{
    static char buf[1024];
    const char *root = getenv("FB_ROOT");
    snprintf(buf, sizeof buf, "%s/tests/fixtures/doctor/topo/%s", root ? root : ".", name);
    return buf;
}

static char *read_fixture(const char *name, size_t *len)
{
    char *text = NULL;
    struct fb_err err = {0};
    if (fb_read_file(fixture(name), &text, len, &err) != FB_OK) {
        printf("#   %s\n", err.msg);
        return NULL;
    }
    return text;
}

/* The rewrite of text, or NULL with the error in err. */
static char *rewrite(const char *text, struct fb_err *err)
{
    struct fb_str out = {0};
    fb_err_clear(err);
    if (fb_topo_xml_for_hwloc(text, strlen(text), "t.xml", &out, err) != FB_OK) {
        fb_str_free(&out);
        return NULL;
    }
    return out.s ? out.s : strdup("");
}

/* White space between tags, which hwloc passes over, as nothing: an
 * annotation on a line of its own leaves its line break behind. */
static void drop_blanks_between_tags(char *s)
{
    char *w = s;
    for (char *r = s; *r;) {
        if (*r == '>' && r[strspn(r + 1, " \t\n") + 1] == '<') {
            *w++ = '>';
            r += strspn(r + 1, " \t\n") + 1;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
}

/* text with `insert` placed after its first `after` lines. */
static char *insert_after_line(const char *text, size_t after, const char *insert)
{
    const char *at = text;
    for (size_t i = 0; i < after && *at; i++)
        at += strcspn(at, "\n") + (at[strcspn(at, "\n")] == '\n');
    size_t head = (size_t)(at - text);
    char *out = malloc(strlen(text) + strlen(insert) + 2);
    memcpy(out, text, head);
    strcpy(out + head, insert);
    strcat(out, text + head);
    return out;
}

static size_t count_lines(const char *text)
{
    size_t n = 0;
    for (const char *p = text; *p; p++)
        n += *p == '\n';
    return n;
}

/* Loads text as an export file would be loaded. */
static enum fb_status load_text(const char *text, struct fb_topo *t, struct fb_err *err)
{
    char path[] = "/tmp/fbtopoxml.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return fb_fail(err, FB_ERR_INTERNAL, "mkstemp");
    size_t len = strlen(text);
    enum fb_status st = write(fd, text, len) == (ssize_t)len ? FB_OK : FB_ERR_INTERNAL;
    close(fd);
    if (st == FB_OK)
        st = fb_topo_load(path, t, err);
    unlink(path);
    return st;
}

/* Annotations of every kind a person adds; the last comments out a NIC,
 * which must then not be read. */
static const char *const annotations[] = {
    "<!-- checked by ops -->\n",
    "<!---->",
    "<!--\n  racked in row 4, slot 12\n  - a single dash, a -> and a < & > are comment text\n-->\n",
    "<!-- <object type=\"PCIDev\" pci_busid=\"0000:ee:00.0\" pci_type=\"0207 [15b3:1021] "
    "[15b3:0023] 00\"/> -->",
    "<?ops reviewed=\"yes\"?>\n",
    "  <!-- a --><!-- b -->  \n",
};

/* At every line boundary after the declaration (before the root, between
 * and inside objects, after the root), each annotation changes nothing. */
static void annotations_at_every_place(void)
{
    size_t len = 0;
    char *clean = read_fixture("2gpu-cross-socket.xml", &len);
    if (clean == NULL)
        return;
    struct fb_err err = {0};
    char *want = rewrite(clean, &err);
    CHECK(want != NULL);
    if (want)
        drop_blanks_between_tags(want);
    size_t lines = count_lines(clean), tried = 0, same = 0;
    for (size_t a = 0; want && a < sizeof annotations / sizeof annotations[0]; a++) {
        for (size_t k = 1; k <= lines; k++) {
            char *annotated = insert_after_line(clean, k, annotations[a]);
            char *got = rewrite(annotated, &err);
            tried++;
            if (got != NULL)
                drop_blanks_between_tags(got);
            if (got != NULL && strcmp(got, want) == 0)
                same++;
            else if (tried - same == 1)
                printf("#   annotation %zu after line %zu: %s\n", a, k, got ? "reads otherwise" : err.msg);
            free(got);
            free(annotated);
        }
    }
    CHECK_INT(same, tried);
    CHECK(tried > 500);
    free(want);
    free(clean);
}

/* All annotations at once, between every two lines, through hwloc: the same
 * machine, GPUs, NICs and paths. */
static void annotated_export_loads_the_same(void)
{
    size_t len = 0;
    char *clean = read_fixture("2gpu-cross-socket.xml", &len);
    if (clean == NULL)
        return;
    char *annotated = strdup(clean);
    for (size_t k = count_lines(clean); k >= 1; k--) {
        char *next = insert_after_line(annotated, k, annotations[k % 6]);
        free(annotated);
        annotated = next;
    }
    struct fb_topo a, b;
    struct fb_err err = {0};
    CHECK_INT(load_text(clean, &a, &err), FB_OK);
    CHECK_INT(load_text(annotated, &b, &err), FB_OK);
    if (err.code == FB_OK) {
        CHECK_STR(b.hostname, a.hostname);
        CHECK_INT(b.npus, a.npus);
        CHECK_INT(b.nnuma, a.nnuma);
        CHECK_INT(b.ngpus, a.ngpus);
        CHECK_INT(b.nnics, a.nnics);
        for (size_t g = 0; g < a.ngpus && g < b.ngpus; g++)
            for (size_t n = 0; n < a.nnics && n < b.nnics; n++)
                CHECK_INT(fb_topo_link(&b, g, n), fb_topo_link(&a, g, n));
        for (size_t n = 0; n < b.nnics; n++)
            CHECK(strcmp(b.nics[n].busid, "0000:ee:00.0") != 0);
        fb_topo_free(&b);
    } else {
        printf("#   %s\n", err.msg);
    }
    fb_topo_free(&a);
    free(annotated);
    free(clean);
}

/* The smallest export hwloc loads, with `info` among the Machine's infos. */
static char *machine_with(const char *info)
{
    const char *fmt =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
        "<topology version=\"2.0\">\n"
        "  <object type=\"Machine\" os_index=\"0\" cpuset=\"0x00000001\" complete_cpuset=\"0x00000001\" "
        "allowed_cpuset=\"0x00000001\" nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" "
        "allowed_nodeset=\"0x00000001\" gp_index=\"1\">\n"
        "    %s\n"
        "    <object type=\"NUMANode\" os_index=\"0\" cpuset=\"0x00000001\" complete_cpuset=\"0x00000001\" "
        "nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" gp_index=\"2\" local_memory=\"1073741824\"/>\n"
        "    <object type=\"PU\" os_index=\"0\" cpuset=\"0x00000001\" complete_cpuset=\"0x00000001\" "
        "nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" gp_index=\"3\"/>\n"
        "  </object>\n"
        "</topology>\n";
    size_t n = strlen(fmt) + strlen(info) + 1;
    char *out = malloc(n);
    snprintf(out, n, fmt, info);
    return out;
}

/* The host name hwloc reads from the export with this HostName info. */
static void check_hostname(const char *info, const char *want)
{
    char *text = machine_with(info);
    struct fb_topo t;
    struct fb_err err = {0};
    CHECK_INT(load_text(text, &t, &err), FB_OK);
    if (err.code == FB_OK) {
        CHECK_STR(t.hostname, want);
        fb_topo_free(&t);
    } else {
        printf("#   %s: %s\n", info, err.msg);
    }
    free(text);
}

/* What a tag holds is a value, never markup: '-->' and an escaped '<!--'
 * inside one are kept as written, quotes and references resolved. */
static void attribute_values_are_not_comments(void)
{
    check_hostname("<info name=\"HostName\" value=\"gpu --> node\"/>", "gpu --> node");
    check_hostname("<info name=\"HostName\" value=\"&lt;!-- not a comment --&gt;\"/>",
                   "<!-- not a comment -->");
    check_hostname("<info name='HostName' value='say \"hi\" &amp; &apos;bye&apos;'/>",
                   "say \"hi\" & 'bye'");
    check_hostname("<info name=\"HostName\" value=\"&#x67;pu&#45;&#49;\"/>", "gpu-1");
    check_hostname("<info\n      name = \"HostName\"\n      value=\"a\nb\tc&#10;d\" />", "a b c\nd");
    check_hostname("<info name=\"HostName\" value=\"n&#233;ud\"/>", "n\xc3\xa9ud");
}

/* CDATA is text; the root keeps only its version (3.x read as 2.0);
 * CR LF, lone CR and a byte order mark read as an XML parser reads them. */
static void forms_hwloc_does_not_write(void)
{
    struct fb_err err = {0};
    char *got = rewrite("<topology version='3.1' xmlns:x=\"u\"><indexes length=\"5\"><![CDATA[0 1 ]]>"
                        "2 <!-- x -->3</indexes></topology>", &err);
    CHECK_STR(got, "<topology version=\"2.0\"><indexes length=\"5\">0 1 2 3</indexes></topology>");
    free(got);
    got = rewrite("\xef\xbb\xbf<?xml version=\"1.0\"?>\r\n<topology>\r<object type=\"Machine\"\r\n"
                  "  os_index=\"0\"/></topology>\r\n", &err);
    CHECK_STR(got, "<topology>\n<object type=\"Machine\" os_index=\"0\"/></topology>");
    free(got);
    got = rewrite("<!DOCTYPE topology SYSTEM \"hwloc2.dtd\" [\n <!-- ] > -->\n <!ENTITY e \"]>\">\n]>\n"
                  "<topology version=\"2.0\"/>", &err);
    CHECK_STR(got, "<topology version=\"2.0\"/>");
    free(got);
}

/* hwloc 3.0 writes an OS device's kinds as a bitmask; the rewrite gives
 * each the one number hwloc 2.x reads, as 3.0 itself does for 2.x. */
static void check_osdev_type(const char *attrs, const char *want)
{
    char text[512], expect[512];
    struct fb_err err = {0};
    snprintf(text, sizeof text, "<topology version=\"3.0\"><object type=\"OSDev\" %s/></topology>",
             attrs);
    snprintf(expect, sizeof expect, "<topology version=\"2.0\"><object type=\"OSDev\"%s/></topology>",
             want);
    char *got = rewrite(text, &err);
    CHECK_STR(got, expect);
    free(got);
}

static void hwloc3_osdev_kinds(void)
{
    check_osdev_type("name=\"eth0\" osdev_type=\"16\"", " name=\"eth0\" osdev_type=\"2\"");
    check_osdev_type("name=\"mlx5_0\" osdev_type=\"48\"", " name=\"mlx5_0\" osdev_type=\"3\"");
    check_osdev_type("osdev_type=\"48\" name=\"usnic_0\"", " name=\"usnic_0\" osdev_type=\"3\"");
    check_osdev_type("name=\"bxi0\" subtype=\"BXI\" osdev_type=\"16\"",
                     " name=\"bxi0\" subtype=\"BXI\" osdev_type=\"3\"");
    check_osdev_type("name=\"cuda0\" subtype=\"CUDA\" osdev_type=\"12\"",
                     " name=\"cuda0\" subtype=\"CUDA\" osdev_type=\"5\"");
    check_osdev_type("name=\"nvml0\" osdev_type=\"12\"", " name=\"nvml0\" osdev_type=\"1\"");
    check_osdev_type("name=\"rsmi0\" osdev_type=\"12\"", " name=\"rsmi0\" osdev_type=\"1\"");
    check_osdev_type("name=\"card0\" osdev_type=\"4\"", " name=\"card0\" osdev_type=\"1\"");
    check_osdev_type("name=\"sda\" osdev_type=\"1\"", " name=\"sda\" osdev_type=\"0\"");
    check_osdev_type("name=\"dax0.0\" osdev_type=\"3\"", " name=\"dax0.0\" osdev_type=\"0\"");
    check_osdev_type("name=\"dma0chan0\" osdev_type=\"64\"", " name=\"dma0chan0\" osdev_type=\"4\"");
    check_osdev_type("name=\"x\" osdev_type=\"0\"", " name=\"x\"");
    /* A 2.x export's numbers are 2.x's own. */
    struct fb_err err = {0};
    char *got = rewrite("<topology version=\"2.0\"><object type=\"OSDev\" osdev_type=\"16\"/></topology>",
                        &err);
    CHECK_STR(got, "<topology version=\"2.0\"><object type=\"OSDev\" osdev_type=\"16\"/></topology>");
    free(got);
}

/* hwloc 3.0 writes the topology's infos after the root object; 2.x reads
 * them as the root object's first children. */
static void hwloc3_topology_infos(void)
{
    struct fb_err err = {0};
    char *got = rewrite("<topology version=\"3.0\">\n<object type=\"Machine\">\n<info name=\"DMIBoardVendor\" "
                        "value=\"HP\"/>\n</object>\n<support name=\"x\"/>\n<info name=\"HostName\" value=\"n7\"/>\n"
                        "<pci_locality domain=\"0x0\" bus_min=\"0x0\" bus_max=\"0xf\" cpuset=\"0x1\"/>\n</topology>",
                        &err);
    CHECK_STR(got, "<topology version=\"2.0\">\n<object type=\"Machine\"><info name=\"HostName\" value=\"n7\"/>\n"
                   "<info name=\"DMIBoardVendor\" value=\"HP\"/>\n</object>\n<support name=\"x\"/>\n\n"
                   "<pci_locality domain=\"0x0\" bus_min=\"0x0\" bus_max=\"0xf\" cpuset=\"0x1\"/>\n</topology>");
    free(got);
    char *text = machine_with("");
    char *v3 = malloc(strlen(text) + 64);
    const char *root_end = strstr(text, "  </object>\n</topology>");
    sprintf(v3, "%.*s  </object>\n  <info name=\"HostName\" value=\"gpu-3\"/>\n</topology>\n",
            (int)(root_end - text), text);
    char *version = strstr(v3, "version=\"2.0\"");
    version[9] = '3';
    struct fb_topo t;
    CHECK_INT(load_text(v3, &t, &err), FB_OK);
    if (err.code == FB_OK) {
        CHECK_STR(t.hostname, "gpu-3");
        fb_topo_free(&t);
    }
    free(v3);
    free(text);
}

/* A refusal names the line and the fix; each is what lstopo refuses too. */
static void refused(const char *text, const char *what)
{
    struct fb_err err = {0};
    char *got = rewrite(text, &err);
    CHECK(got == NULL);
    CHECK_INT(err.code, FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, what);
    CHECK(strchr(err.msg, '\n') == NULL);
    free(got);
}

static void what_xml_forbids(void)
{
    refused("<topology>\n<!-- a -- b -->\n</topology>", "t.xml line 2: a comment holds '--'");
    refused("<topology>\n<!-- a --->\n</topology>", "line 2: a comment holds '--'");
    refused("<topology>\n<!-- open\n</topology>", "line 2: a comment '<!--' is never closed");
    refused("<!-- first -->\n<?xml version=\"1.0\"?>\n<topology/>", "line 2: an XML declaration");
    refused("<topology>\n<info value=\"a<b\"/></topology>", "line 2: a '<' inside attribute value");
    refused("<topology>\n<info value=\"a & b\"/></topology>", "line 2: '&' is not a reference");
    refused("<topology>\n<info value=\"&nbsp;\"/></topology>", "'&nbsp;' is not a reference");
    refused("<topology><object>\n</info></topology>", "line 2: </info> closes <object> opened on line 1");
    refused("<topology version=\"2.0\">\n<object type=\"Machine\">",
            "line 2: the export ends inside <object> opened on line 2, cut short: not an hwloc XML topology");
    refused("<topology version=\"2.0\"><object", "ends inside the tag <object");
    refused("<topology/>\n<topology/>", "line 2: an element after the root element closed");
    refused("notes first\n<topology/>", "line 1: text outside the root element");
    refused("<topology>\n<object type=\"Machine\">\n  moved to rack 7\n  <object type=\"PU\"/>\n</object></topology>",
            "line 3: text inside <object> beside its child elements");
    refused("<topology>\n<object type=\"Machine\" os_index=0/></topology>", "line 2: attribute os_index's value is not quoted");
    refused("<topology/>\n<!DOCTYPE topology>", "line 2: a DOCTYPE after the root element");
    refused("", "holds no XML element: not an hwloc XML topology");
}

int main(void)
{
    RUN(annotations_at_every_place);
    RUN(annotated_export_loads_the_same);
    RUN(attribute_values_are_not_comments);
    RUN(forms_hwloc_does_not_write);
    RUN(hwloc3_osdev_kinds);
    RUN(hwloc3_topology_infos);
    RUN(what_xml_forbids);
    return fbt_done();
}
