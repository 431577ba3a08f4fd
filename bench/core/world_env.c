/* The env launch's choices (core/world_env.h) that need no NCCL: which
 * launch this is, the launcher's variables, the job's secret. */
#include "core/world_env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/files.h"
#include "core/watchdog_mac.h"

const char *fb_argv_value(int argc, char **argv, const char *flag)
{
    size_t n = strlen(flag);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], flag) == 0)
            return i + 1 < argc ? argv[i + 1] : "";
        if (strncmp(argv[i], flag, n) == 0 && argv[i][n] == '=')
            return argv[i] + n + 1;
    }
    return NULL;
}

/* Set by mpirun (Open MPI), Hydra and PMI launchers, srun --mpi=pmix. */
static int mpi_launched(void)
{
    static const char *const names[] = {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMI_SIZE",
                                        "PMIX_RANK", NULL};
    for (int i = 0; names[i] != NULL; i++)
        if (getenv(names[i]) != NULL)
            return 1;
    return 0;
}

enum fb_status fb_launcher_pick(int argc, char **argv, enum fb_launcher *mode, struct fb_err *err)
{
    const char *given = fb_argv_value(argc, argv, "--launcher");
    *mode = !mpi_launched() && getenv("WORLD_SIZE") != NULL ? FB_LAUNCH_ENV : FB_LAUNCH_MPI;
    if (given == NULL)
        return FB_OK;
    if (strcmp(given, "env") == 0)
        *mode = FB_LAUNCH_ENV;
    else if (strcmp(given, "mpi") == 0)
        *mode = FB_LAUNCH_MPI;
    else
        return fb_fail(err, FB_ERR_USAGE, "--launcher '%s': use env (rank and size from the environment, NCCL "
                       "bootstraps the job) or mpi (mpirun, srun --mpi)", given);
    return FB_OK;
}

/* The first of `names` that is set, as a number in [0, limit). 0: none set;
 * 1: read; -1: malformed (err names it). */
static int env_number(const char *const *names, int limit, int *value, const char **which, struct fb_err *err)
{
    for (int i = 0; names[i] != NULL; i++) {
        const char *v = getenv(names[i]);
        char *end = NULL;
        if (v == NULL)
            continue;
        long n = strtol(v, &end, 10);
        *which = names[i];
        if (*v == '\0' || *end != '\0' || n < 0 || n >= limit) {
            fb_fail(err, FB_ERR_USAGE, "%s='%s' is not a number from 0 to %d; the launcher sets it (torchrun, "
                    "an Indexed Job, srun)", names[i], v, limit - 1);
            return -1;
        }
        *value = (int)n;
        return 1;
    }
    return 0;
}

static enum fb_status read_bootstrap(struct fb_env_launch *l, struct fb_err *err)
{
    const char *id = getenv("NCCL_COMM_ID"), *addr = getenv("MASTER_ADDR"), *port = getenv("MASTER_PORT");
    if (id != NULL && *id != '\0') {
        if (strchr(id, ':') == NULL || strlen(id) >= sizeof l->bootstrap)
            return fb_fail(err, FB_ERR_USAGE, "NCCL_COMM_ID='%.80s' is not HOST:PORT; give rank 0's address and a "
                           "free port, or MASTER_ADDR and MASTER_PORT", id);
        snprintf(l->bootstrap, sizeof l->bootstrap, "%s", id);
        return FB_OK;
    }
    if (addr == NULL || *addr == '\0')
        return fb_fail(err, FB_ERR_USAGE, "the env launch needs rank 0's address: set MASTER_ADDR and MASTER_PORT "
                       "(torchrun, PyTorchJob and the launchers in launch/ do) or NCCL_COMM_ID=HOST:PORT");
    char *end = NULL;
    long p = port ? strtol(port, &end, 10) : 0;
    if (port == NULL || *port == '\0' || *end != '\0' || p < 1 || p > 65535)
        return fb_fail(err, FB_ERR_USAGE, "MASTER_PORT='%s' is not a port (1-65535); set the port rank 0 serves "
                       "the bootstrap on", port ? port : "");
    if (strlen(addr) + 7 > sizeof l->bootstrap)
        return fb_fail(err, FB_ERR_USAGE, "MASTER_ADDR is too long (%zu characters)", strlen(addr));
    snprintf(l->bootstrap, sizeof l->bootstrap, "%s:%ld", addr, p);
    setenv("NCCL_COMM_ID", l->bootstrap, 1);
    return FB_OK;
}

enum fb_status fb_env_launch_read(struct fb_env_launch *l, double setup_s, struct fb_err *err)
{
    static const char *const size_vars[] = {"WORLD_SIZE", "SLURM_NTASKS", NULL};
    static const char *const rank_vars[] = {"RANK", "JOB_COMPLETION_INDEX", "SLURM_PROCID", NULL};
    static const char *const local_vars[] = {"LOCAL_RANK", "SLURM_LOCALID", NULL};
    const char *local_var = NULL;
    memset(l, 0, sizeof *l);
    l->setup_s = setup_s > 0 ? setup_s : FB_SETUP_DEFAULT_S;
    int got = env_number(size_vars, 1 << 24, &l->size, &l->size_var, err);
    if (got < 0)
        return err->code;
    if (got == 0 || l->size < 1)
        return fb_fail(err, FB_ERR_USAGE, "the env launch needs the job's size: set WORLD_SIZE (or run under srun, "
                       "which sets SLURM_NTASKS)");
    if ((got = env_number(rank_vars, l->size, &l->rank, &l->rank_var, err)) < 0)
        return err->code;
    if (got == 0)
        return fb_fail(err, FB_ERR_USAGE, "the env launch needs this process's rank: set RANK (torchrun does), or "
                       "run as an Indexed Job pod (JOB_COMPLETION_INDEX) or under srun (SLURM_PROCID)");
    if (env_number(local_vars, 1 << 16, &l->local_rank, &local_var, err) < 0)
        return err->code;
    return read_bootstrap(l, err);
}

enum fb_status fb_job_secret(uint8_t out[32], struct fb_err *err)
{
    const char *file = getenv("FB_JOB_SECRET_FILE"), *value = getenv("FB_JOB_SECRET");
    char *text = NULL;
    size_t len = 0;
    const char *fix = "the launcher gives each job its own: a Secret mounted as a file (FB_JOB_SECRET_FILE) or "
                      "FB_JOB_SECRET; or run with --no-watchdog";
    if (file != NULL && *file != '\0') {
        if (fb_read_file(file, &text, &len, err) != FB_OK)
            return fb_fail(err, FB_ERR_USAGE, "FB_JOB_SECRET_FILE=%s cannot be read; %s", file, fix);
    } else if (value != NULL) {
        text = strdup(value);
        len = text ? strlen(text) : 0;
    }
    if (text == NULL)
        return fb_fail(err, FB_ERR_USAGE, "the env launch's watchdog needs the job's secret; %s", fix);
    while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r'))
        len--;
    enum fb_status st = FB_OK;
    if (len < 16)
        st = fb_fail(err, FB_ERR_USAGE, "the job's secret has %zu bytes; give at least 16 random ones (%s)", len,
                     "openssl rand -hex 32");
    else
        fb_sha256(text, len, out);
    explicit_bzero(text, len);
    free(text);
    return st;
}

#ifndef HAVE_NCCL
enum fb_status fb_world_init_env(struct fb_world *w, const struct fb_env_launch *l, struct fb_err *err)
{
    (void)w;
    (void)l;
    return fb_fail(err, FB_ERR_UNAVAIL, "the env launch needs NCCL, and this build has none (no CUDA/NCCL at build "
                   "time); launch with mpirun, or rebuild where NCCL is installed");
}

/* Without NCCL no world has an NCCL engine: these are never reached, and
 * are here so that callers need no build conditions of their own. */
int fb_wn_send(struct fb_world_nccl *n, const void *buf, size_t bytes, int peer, double deadline)
{
    (void)n, (void)buf, (void)bytes, (void)peer, (void)deadline;
    return -1;
}

int fb_wn_recv(struct fb_world_nccl *n, void *buf, size_t bytes, int peer, double deadline)
{
    (void)n, (void)buf, (void)bytes, (void)peer, (void)deadline;
    return -1;
}

void fb_wn_on_fatal(struct fb_world_nccl *n, void (*hook)(void *ctx), void *ctx)
{
    (void)n, (void)hook, (void)ctx;
}
#endif
