/* fabric-topo: GPU <-> NIC affinity from hwloc, live or from an XML export. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "core/status.h"
#include "doctor/affinity.h"
#include "doctor/topo.h"
#include "doctor/topo_out.h"

struct topo_opts {
    const char *xml;
    const char *nics;
    const char *json_path; /* "-" with --json */
    const char *cluster;
    bool help;
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: fabric-topo [--topology FILE.xml] [--nics LIST] [--json | -J FILE]\n"
            "                   [--cluster NAME]\n"
            "GPUs and NICs with PCI bus id, socket and NUMA node; for each GPU the nearest\n"
            "NIC(s) and the PCIe path (PIX/PXB/PHB/NODE/SYS); a NIC and CPU set per local\n"
            "rank; a suggested NCCL_IB_HCA; warnings for layouts that cost bandwidth.\n"
            "  --topology FILE  an hwloc XML export (lstopo --of xml FILE) instead of this machine\n"
            "  --nics LIST      which NICs carry the fabric, NCCL_IB_HCA syntax ([^][=]name,...)\n"
            "                   matched against RDMA device and interface names\n"
            "                   (default: every RDMA NIC, else every NIC)\n"
            "  --json           the kind \"topology\" document on stdout instead of the table\n"
            "  -J FILE          also write that document to FILE (atomically)\n"
            "  --cluster NAME   cluster label in the document (default $FABRIC_CLUSTER, else host)\n"
            "exit: 0 analysed (warnings are in the output), 2 usage, 10 unreadable topology\n");
}

static enum fb_status parse(int argc, char **argv, struct topo_opts *o, struct fb_err *err)
{
    static const struct option longopts[] = {
        {"topology", required_argument, 0, 't'}, {"nics", required_argument, 0, 'n'},
        {"json", no_argument, 0, 'j'},           {"cluster", required_argument, 0, 'c'},
        {"help", no_argument, 0, 'h'},           {0, 0, 0, 0},
    };
    memset(o, 0, sizeof *o);
    const char *file = NULL;
    bool to_stdout = false;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, ":J:h", longopts, NULL)) != -1) {
        switch (ch) {
        case 't': o->xml = optarg; break;
        case 'n': o->nics = optarg; break;
        case 'j': to_stdout = true; break;
        case 'J': file = optarg; break;
        case 'c': o->cluster = optarg; break;
        case 'h': o->help = true; break;
        case ':':
            return fb_fail(err, FB_ERR_USAGE, "option %s needs a value; see fabric-topo --help",
                           argv[optind - 1]);
        default:
            return fb_fail(err, FB_ERR_USAGE, "unknown option '%s'; see fabric-topo --help",
                           argv[optind - 1]);
        }
    }
    if (optind < argc)
        return fb_fail(err, FB_ERR_USAGE, "unexpected argument '%s'; see fabric-topo --help",
                       argv[optind]);
    o->json_path = to_stdout ? "-" : NULL;
    if (file != NULL && to_stdout)
        return fb_fail(err, FB_ERR_USAGE, "--json and -J FILE are exclusive; pick one");
    if (file != NULL)
        o->json_path = file;
    return FB_OK;
}

static enum fb_status run(const struct topo_opts *o, const char *argv0, struct fb_err *err)
{
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
