#include "core/host.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

void fb_hostname(char *buf, size_t len)
{
    if (gethostname(buf, len) != 0 || buf[0] == '\0')
        snprintf(buf, len, "unknown-host");
    buf[len - 1] = '\0';
}

enum fb_status fb_mem_available(const char *root, uint64_t *bytes, struct fb_err *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/proc/meminfo", root ? root : "");
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return fb_fail(err, FB_ERR_RUNTIME, "cannot read %s: %s", path, strerror(errno));
    char line[256];
    unsigned long long kib = 0;
    int found = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1) {
            found = 1;
            break;
        }
    }
    fclose(f);
    if (!found)
        return fb_fail(err, FB_ERR_RUNTIME, "%s has no MemAvailable line", path);
    *bytes = (uint64_t)kib * 1024;
    return FB_OK;
}

static int first_int_env(const char *const names[], const char **source)
{
    for (int i = 0; names[i] != NULL; i++) {
        const char *v = getenv(names[i]);
        char *end = NULL;
        if (v == NULL || *v == '\0')
            continue;
        long n = strtol(v, &end, 10);
        if (*end == '\0' && n >= 0 && n < 1 << 24) {
            if (source)
                *source = names[i];
            return (int)n;
        }
    }
    if (source)
        *source = NULL;
    return -1;
}

int fb_launcher_local_rank(const char **source)
{
    static const char *const names[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID",
                                        "MPI_LOCALRANKID", "PMI_LOCAL_RANK",
                                        "MV2_COMM_WORLD_LOCAL_RANK", NULL};
    return first_int_env(names, source);
}

int fb_launcher_world_size(const char **source)
{
    static const char *const names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                        "SLURM_STEP_NUM_TASKS", "MV2_COMM_WORLD_SIZE", NULL};
    return first_int_env(names, source);
}

int fb_env_is_relevant(const char *name)
{
    /* Open MPI's own launch plumbing (orte_*, ess_*, pmix, a job key) is
     * noise at best; keep only the transport choices a user makes. */
    static const char *const prefixes[] = {"NCCL_", "FI_", "UCX_", "TORCH_NCCL_", "FABRIC_",
                                           "OMPI_MCA_btl", "OMPI_MCA_pml", "OMPI_MCA_mtl",
                                           "OMPI_MCA_coll", "OMPI_MCA_op", "OMPI_MCA_osc",
                                           "OMPI_MCA_oob", NULL};
    static const char *const exact[] = {"CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH",
                                        "CUDA_DEVICE_MAX_CONNECTIONS", NULL};
    for (int i = 0; prefixes[i]; i++)
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
            return 1;
    for (int i = 0; exact[i]; i++)
        if (strcmp(name, exact[i]) == 0)
            return 1;
    return 0;
}

json_object *fb_env_capture(void)
{
    json_object *env = json_object_new_object();
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (eq == NULL)
            continue;
        char name[256];
        size_t n = (size_t)(eq - *e);
        if (n >= sizeof name)
            continue;
        memcpy(name, *e, n);
        name[n] = '\0';
        if (fb_env_is_relevant(name))
            json_object_object_add(env, name, json_object_new_string(eq + 1));
    }
    return env;
}
