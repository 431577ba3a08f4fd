/* The job as fabric-bench sees it: who this rank is, which host, how
 * ranks sit on nodes, and the checks that catch a mis-launched job before it
 * measures nonsense. The ranks talk through core/coord.h: MPI when MPI
 * launched the job, NCCL under the env launch (core/world_env.h). */
#ifndef FB_CORE_WORLD_H
#define FB_CORE_WORLD_H

#include <mpi.h>
#include <stdint.h>

#include "core/host.h"
#include "core/status.h"

struct fb_world {
    MPI_Comm comm;
    int rank, size;
    int local_rank, local_size; /* among ranks on this host */
    int node, nodes;            /* this host's index, distinct hosts */
    char host[FB_HOST_MAX];
    char (*hosts)[FB_HOST_MAX]; /* per rank, in rank order */
    int owns_comm;              /* a group's: freed with the world */
    struct fb_world_nccl *nccl; /* the env launch's communicator; NULL under MPI */
};

/* Call after MPI_Init. Collective. */
enum fb_status fb_world_init(struct fb_world *w, MPI_Comm comm, struct fb_err *err);
void fb_world_free(struct fb_world *w);

/* After rank and size are known (either engine): every rank's host name and
 * the node numbering. Collective. */
enum fb_status fb_world_init_hosts(struct fb_world *w, struct fb_err *err);

/* A part of the job: the ranks of `parent` passing the same color, ordered
 * by `key` (MPI_Comm_split). comm, rank, size, hosts, node and nodes are the
 * group's; local_rank and local_size stay the job's, since a host's GPUs and
 * memory are shared by every rank on it whatever its group. fb_world_free
 * frees its communicator. Collective over the parent. */
enum fb_status fb_world_split(const struct fb_world *parent, int color, int key, struct fb_world *group,
                              struct fb_err *err);

/* The classic trap: the launcher started N copies but each sees MPI size 1
 * (binary built against another MPI, or none). Local check, no MPI calls. */
enum fb_status fb_world_check_launcher(const struct fb_world *w, struct fb_err *err);

/* Every rank passes the hash of its parsed options; if they differ, the
 * error names the odd ranks and hosts. Collective. */
enum fb_status fb_world_check_same(const struct fb_world *w, uint64_t hash,
                                   const char *what, struct fb_err *err);

/* Collective agreement on failure: every rank learns the worst status and
 * rank 0 gets the message of the lowest failing rank, so one rank's bad
 * argument never leaves the others hanging. Returns the agreed status. */
enum fb_status fb_world_agree(const struct fb_world *w, struct fb_err *err);

/* For a rank other than 0 whose job rank 0 is ending with MPI_Abort: waits
 * for the abort (60 s at most), then exits with `code`. An abort that lands
 * while a rank is inside MPI_Finalize can bring mpirun itself down (exit
 * 139 or 137 seen on a busy machine) instead of giving the code. */
_Noreturn void fb_world_await_abort(int code);

/* The end of a job that went well, bounded: MPI_Finalize waits for every
 * rank, so one stopped after its last step (SIGSTOP, a hung driver) would
 * hold the job forever. Every rank tells rank 0 over `comm` that it is at
 * the end; rank 0 answers once all have, and only then do they enter
 * MPI_Finalize, each under a watchdog of limit_s + 1 s that ends the
 * process with `code` (a rank that stops inside MPI_Finalize: mpirun then
 * ends the rest). A rank not heard from within limit_s is named on stderr and rank
 * 0 ends the job with MPI_Abort (FB_ERR_TIMEOUT), which ends stopped ranks
 * too; ranks that hear no answer from rank 0 within 3 x limit_s abort the
 * same way. From the start of the end a stop signal ends the process
 * with the signal's default action: everything measured is saved by
 * then. A rank that stops once it is past MPI_Finalize's own exchange
 * is out of the job's reach: the others end, and only the launcher, which
 * waits for every process it started, still waits for it. Returns after
 * MPI_Finalize. */
void fb_world_end(const struct fb_world *w, MPI_Comm comm, double limit_s, int code);

/* FNV-1a, for option hashes. */
uint64_t fb_hash_bytes(uint64_t h, const void *data, size_t len);
#define FB_HASH_SEED 1469598103934665603ULL

#endif
