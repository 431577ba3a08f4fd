/* Facts about this process's host that need no MPI: name, free memory, the
 * launcher's view of rank placement, and the environment worth recording. */
#ifndef FB_CORE_HOST_H
#define FB_CORE_HOST_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

#define FB_HOST_MAX 256

void fb_hostname(char *buf, size_t len);

/* MemAvailable from <root>/proc/meminfo (root "" for the live system). */
enum fb_status fb_mem_available(const char *root, uint64_t *bytes, struct fb_err *err);

/* Local rank as the launcher tells it (Open MPI, Slurm, MPICH/Hydra, PMI).
 * Returns the variable's name in *source, or -1 when no launcher says. */
int fb_launcher_local_rank(const char **source);

/* World size the launcher intended, or -1; *source names the variable. A
 * value above MPI's own size means the binary's MPI is not the launcher's. */
int fb_launcher_world_size(const char **source);

/* NCCL_*, FI_*, UCX_*, CUDA_VISIBLE_DEVICES and a few more: what explains a
 * fabric result, never the whole environment (which holds secrets). */
json_object *fb_env_capture(void);

/* True for the variable names fb_env_capture keeps. */
int fb_env_is_relevant(const char *name);

#endif
