/* `nvidia-smi topo -m` as people paste it: the GPU and NIC matrix (tab or
 * space separated, with or without the prompt line, NIC rows, legends and
 * the affinity columns), read into the closeness of every GPU to every NIC
 * and each GPU's NUMA affinity. It is what most users have at hand when no
 * hwloc export is; it says less (no PCI ids, no bridges, no link speeds),
 * so fabric-topo answers from it only which NIC each GPU should use. */
#ifndef FB_DOCTOR_SMI_TOPO_H
#define FB_DOCTOR_SMI_TOPO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "core/status.h"
#include "doctor/topo.h"

#define FB_SMI_MAX 64

struct fb_smi_topo {
    int ngpus, nnics;
    char nic_name[FB_SMI_MAX][32];        /* "mlx5_0" from the NIC Legend, else "NIC0" */
    enum fb_link link[FB_SMI_MAX][FB_SMI_MAX]; /* [gpu][nic] */
    char numa[FB_SMI_MAX][16];            /* the NUMA Affinity cell, "" when empty */
    char cpus[FB_SMI_MAX][64];            /* the CPU Affinity cell, "" when empty */
};

/* True when `text` looks like nvidia-smi topo -m output (a header row of
 * GPU0 ... and a GPU0 row). */
bool fb_smi_topo_detect(const char *text, size_t len);

/* Parses the matrix; FB_ERR_INPUT naming `name` and the line when a row
 * does not fit its header. */
enum fb_status fb_smi_topo_parse(const char *name, const char *text, size_t len, struct fb_smi_topo *t,
                                 struct fb_err *err);

/* Per GPU: the closest NIC(s) and the level, then findings: a GPU whose
 * best NIC is no closer than NODE (its traffic crosses host bridges). */
void fb_smi_topo_print(FILE *out, const char *source, const struct fb_smi_topo *t);

#endif
