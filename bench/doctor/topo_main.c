/* fabric-topo: GPU <-> NIC affinity from hwloc, live or from an XML export. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/files.h"
#include "core/options.h"
#include "core/status.h"
#include "doctor/affinity.h"
#include "doctor/smi_topo.h"
#include "doctor/topo.h"
#include "doctor/topo_out.h"

struct topo_opts {
    const char *xml;
    const char *nics;
    int json;              /* --json: the document on stdout */
    const char *json_file; /* -J FILE */
    const char *json_path; /* "-" with --json, else the -J file or NULL */
    const char *cluster;
    int help;
};

#define OFF(f) offsetof(struct topo_opts, f)

static const struct fb_opt topo_options[] = {
    {0, "topology", FB_OPT_STRING, OFF(xml), "FILE", "an hwloc XML export (lstopo --of xml FILE) instead of this machine, or nvidia-smi topo -m output (the GPU-to-NIC table only)"},
    {0, "nics", FB_OPT_STRING, OFF(nics), "LIST", "which NICs carry the fabric, NCCL_IB_HCA syntax ([^][=]name,...) "
                                                  "matched against RDMA device and interface names (default: every "
                                                  "RDMA NIC, else every NIC)"},
    {0, "json", FB_OPT_FLAG, OFF(json), NULL, "the kind \"topology\" document on stdout instead of the table"},
    {'J', NULL, FB_OPT_STRING, OFF(json_file), "FILE", "also write that document to FILE (atomically)"},
    {0, "cluster", FB_OPT_STRING, OFF(cluster), "NAME", "cluster label in the document (default $FABRIC_CLUSTER, else host)"},
    {'h', "help", FB_OPT_FLAG, OFF(help), NULL, "this help"},
    FB_OPT_END,
};

static const struct fb_opts_ctx topo_ctx = {
    "fabric-topo", topo_options,
    "usage: fabric-topo [--topology FILE.xml] [--nics LIST] [--json | -J FILE]\n"
    "                   [--cluster NAME]\n"
    "GPUs and NICs with PCI bus id, socket and NUMA node; for each GPU the nearest\n"
    "NIC(s) and the PCIe path (PIX/PXB/PHB/NODE/SYS); a NIC and CPU set per local\n"
    "rank; a suggested NCCL_IB_HCA; warnings for layouts that cost bandwidth.\n",
};

static void usage(FILE *out)
{
    fb_opts_usage(out, &topo_ctx);
    fputs("exit: 0 analysed (warnings are in the output), 1 internal error, 2 usage,\n"
          "      7 -J FILE not writable, 9 hwloc cannot read this machine, 10 unreadable topology\n"
          "      (docs/exit-codes.md)\n", out);
}

/* Everything is checked, --help or not: a bad command line is an error
 * even when it asks for help. */
static enum fb_status check_args(const struct fb_opts_result *res, struct topo_opts *o,
                                 struct fb_err *err)
{
    if (res->npositional > 0)
        return fb_fail(err, FB_ERR_USAGE, "unexpected argument '%s'; see fabric-topo --help",
                       res->positional[0]);
    if (o->json_file != NULL && o->json)
        return fb_fail(err, FB_ERR_USAGE, "--json and -J FILE are exclusive; pick one");
    o->json_path = o->json ? "-" : o->json_file;
    return FB_OK;
}

static enum fb_status parse(int argc, char **argv, struct topo_opts *o, struct fb_err *err)
{
    memset(o, 0, sizeof *o);
    struct fb_opts_result res;
    enum fb_status st = fb_opts_parse_ctx(&topo_ctx, argc, argv, o, &res, err);
    if (st == FB_OK)
        st = check_args(&res, o, err);
    fb_opts_result_free(&res);
    return st;
}

/* A pasted `nvidia-smi topo -m` instead of an hwloc export: the closeness
 * table only. *handled says whether the file was one. */
static enum fb_status run_smi(const struct topo_opts *o, bool *handled, struct fb_err *err)
{
    char *text = NULL;
    size_t len = 0;
    *handled = false;
    if (fb_read_text_file(o->xml, &text, &len, err) != FB_OK || !fb_smi_topo_detect(text, len)) {
        free(text);
        fb_err_clear(err);
        return FB_OK;
    }
    *handled = true;
    enum fb_status st = FB_OK;
    struct fb_smi_topo *t = malloc(sizeof *t);
    if (o->json_path != NULL)
        st = fb_fail(err, FB_ERR_USAGE, "%s is nvidia-smi topo -m output: the topology document (--json, -J) needs an hwloc export (lstopo --of xml FILE)", o->xml);
    else if (t == NULL)
        st = fb_fail(err, FB_ERR_INTERNAL, "out of memory reading %s", o->xml);
    else
        st = fb_smi_topo_parse(o->xml, text, len, t, err);
    if (st == FB_OK)
        fb_smi_topo_print(stdout, o->xml, t);
    free(t);
    free(text);
    return st;
}

static enum fb_status run(const struct topo_opts *o, const char *argv0, struct fb_err *err)
{
    if (o->xml != NULL) {
        bool handled = false;
        enum fb_status smi = run_smi(o, &handled, err);
        if (handled)
            return smi;
    }
    struct fb_topo t;
    enum fb_status st = fb_topo_load(o->xml, &t, err);
    if (st != FB_OK)
        return st;
    struct fb_affinity a;
    st = fb_affinity_analyse(&t, o->nics, &a, err);
    if (st != FB_OK) {
        fb_topo_free(&t);
        return st;
    }
    bool json_stdout = o->json_path && strcmp(o->json_path, "-") == 0;
    if (!json_stdout)
        fb_topo_print(stdout, &t, &a);
    if (o->json_path != NULL) {
        struct fb_envelope_info info = {"topology", "fabric-topo", argv0, o->cluster,
                                        t.hostname[0] ? t.hostname : NULL};
        json_object *doc = fb_topo_json(&t, &a, &info);
        st = fb_envelope_write(doc, o->json_path, err);
        json_object_put(doc);
    }
    fb_affinity_free(&a);
    fb_topo_free(&t);
    return st;
}

int main(int argc, char **argv)
{
    struct fb_err err = {FB_OK, ""};
    struct topo_opts o;
    enum fb_status st = parse(argc, argv, &o, &err);
    if (st == FB_OK && o.help) {
        usage(stdout);
        return 0;
    }
    if (st == FB_OK)
        st = run(&o, argv[0], &err);
    if (st != FB_OK)
        fprintf(stderr, "fabric-topo: %s\n", err.msg);
    return (int)st;
}
