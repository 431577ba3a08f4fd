/* The env launch: a process started as training jobs start theirs (torchrun,
 * a Kubernetes Indexed Job, JobSet, PyTorchJob, srun without --mpi) is one
 * rank of a job whose rank, size and bootstrap address come from the
 * environment, and whose ranks talk through NCCL alone: no MPI_Init, no
 * mpirun, no ssh.
 *
 *   rank        RANK, else JOB_COMPLETION_INDEX, else SLURM_PROCID
 *   size        WORLD_SIZE, else SLURM_NTASKS
 *   local rank  LOCAL_RANK, else SLURM_LOCALID, else 0
 *   bootstrap   NCCL_COMM_ID as given, else MASTER_ADDR:MASTER_PORT (it is
 *               then set as NCCL_COMM_ID): rank 0 serves NCCL's bootstrap
 *               root there, the others connect to it
 *
 * Which launch a process is in: `--launcher env|mpi` when given; else MPI
 * when an MPI launcher's variables are set (OMPI_COMM_WORLD_*, PMI_*,
 * PMIX_RANK), env when WORLD_SIZE is, MPI otherwise.
 *
 * Set-up is bounded: on every process that started it ends within the
 * bound, each saying how many ranks joined of how many and which address
 * it waited on. NCCL does not say who joined its bootstrap, so when the
 * job's secret is given (fb_job_secret) a roll call comes first, at the
 * bootstrap address itself (world_rollcall.c): rank 0 counts the ranks
 * that prove they hold the secret and tells each the count; a rank that
 * cannot reach rank 0 says so, naming the address. Then the world's
 * communicator is made without blocking and given up when the bound
 * passes. Without a secret NCCL alone sets up, and the message says the
 * count is not known. */
#ifndef FB_CORE_WORLD_ENV_H
#define FB_CORE_WORLD_ENV_H

#include "core/coord.h"
#include "core/world.h"

enum fb_launcher { FB_LAUNCH_MPI, FB_LAUNCH_ENV };

#define FB_SETUP_DEFAULT_S 120.0 /* the set-up bound when the program gives none */

/* Which launch this process is in (see above): FB_ERR_USAGE for a
 * malformed --launcher. Reads argv and the environment only. */
enum fb_status fb_launcher_pick(int argc, char **argv, enum fb_launcher *mode, struct fb_err *err);

/* The value after `flag` (or `flag=`) in argv, or NULL: for the few
 * choices made before the option table runs. */
const char *fb_argv_value(int argc, char **argv, const char *flag);

struct fb_env_launch {
    int rank, size, local_rank;
    const char *rank_var, *size_var;
    char bootstrap[FB_HOST_MAX + 8]; /* host:port, NCCL_COMM_ID */
    double setup_s;                  /* the bound on set-up */
};

/* Reads rank, size, local rank and the bootstrap address; FB_ERR_USAGE
 * naming the variable when one is missing or malformed. */
enum fb_status fb_env_launch_read(struct fb_env_launch *l, double setup_s, struct fb_err *err);

/* Makes the world of the env launch: the NCCL communicator (bounded by
 * l->setup_s), every rank's host. FB_ERR_LAUNCH when set-up does not
 * complete (the message counts the ranks and names the address),
 * FB_ERR_UNAVAIL when this build has no NCCL or no GPU is visible. Not
 * collective in the MPI sense: each process returns on its own. */
enum fb_status fb_world_init_env(struct fb_world *w, const struct fb_env_launch *l, struct fb_err *err);

/* The roll call (see above), by `deadline` (fb_now). FB_OK with *counted
 * set when every rank joined, or with *counted 0 when it was not held (no
 * job secret, one rank, an IPv6 bootstrap); FB_ERR_LAUNCH saying how many
 * joined, or which address was not reached, otherwise. */
enum fb_status fb_env_roll_call(const struct fb_env_launch *l, double deadline, int *counted, struct fb_err *err);

/* The job's secret under the env launch (the watchdog's key): the bytes of
 * the file FB_JOB_SECRET_FILE names, else FB_JOB_SECRET, hashed into `out`.
 * FB_ERR_USAGE when neither is set or the secret is shorter than 16 bytes. */
enum fb_status fb_job_secret(uint8_t out[32], struct fb_err *err);

/* The NCCL engine of core/coord.h (world_nccl.c). */
struct fb_world_nccl;
void fb_wn_barrier(struct fb_world_nccl *n);
void fb_wn_allreduce(struct fb_world_nccl *n, void *buf, int count, enum fb_cdt dt, enum fb_cop op);
void fb_wn_reduce(struct fb_world_nccl *n, const void *in, void *out, int count, enum fb_cdt dt, enum fb_cop op,
                  int root);
void fb_wn_bcast(struct fb_world_nccl *n, void *buf, size_t bytes, int root);
void fb_wn_allgather(struct fb_world_nccl *n, const void *mine, void *all, size_t bytes);
void fb_wn_gather(struct fb_world_nccl *n, const void *mine, void *all, size_t bytes, int root);
void fb_wn_gatherv(struct fb_world_nccl *n, const void *mine, int len, void *buf, const int *lens,
                   const int *displs);
void fb_wn_to_rank0(struct fb_world_nccl *n, void *buf, size_t bytes, int teller);
enum fb_status fb_wn_split(struct fb_world_nccl *parent, int color, int key, struct fb_world_nccl **group,
                           int *rank, int *size, struct fb_err *err);
void fb_wn_free(struct fb_world_nccl *n);
/* Called before a failed coordination call ends the process (NULL: none):
 * the watchdog, when it is the one ending the job, keeps its own code.
 * The rank groups split from `n` (fb_wn_split) call it too, so a group
 * must not outlive the world it was split from. */
void fb_wn_on_fatal(struct fb_world_nccl *n, void (*hook)(void *ctx), void *ctx);
_Noreturn void fb_wn_abort(struct fb_world_nccl *n, int code);
/* Point to point with a deadline (fb_now): 1 done, 0 timed out (the
 * communicator is then of no further use), -1 failed. */
int fb_wn_send(struct fb_world_nccl *n, const void *buf, size_t bytes, int peer, double deadline);
int fb_wn_recv(struct fb_world_nccl *n, void *buf, size_t bytes, int peer, double deadline);
/* The communicator itself (an ncclComm_t), for ncclCommSplit by callers. */
void *fb_wn_comm(struct fb_world_nccl *n);

#endif
