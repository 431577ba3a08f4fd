/* What the ranks of a job say to each other outside the measured calls:
 * barriers, reductions of times and counts, broadcasts, gathers. One
 * interface with two engines under it, chosen when the world is made:
 * MPI (a job mpirun, srun --mpi or an MPI operator started) or NCCL (the
 * env launch, core/world_env.h: a communicator of one rank per process,
 * made from the launcher's bootstrap address, with no MPI at all).
 *
 * Every call is collective over the world (or group) `w` and works in
 * host memory. Under MPI each is the MPI call it names, with MPI's default
 * handling of errors (the job ends). Under NCCL a failed call (a rank gone,
 * the network cut) says so in one line and ends this process with
 * FB_ERR_RUNTIME, as MPI's default would. */
#ifndef FB_CORE_COORD_H
#define FB_CORE_COORD_H

#include <stddef.h>

#include "core/world.h"

enum fb_cdt { FB_CDT_INT, FB_CDT_LONG, FB_CDT_UNSIGNED, FB_CDT_I64, FB_CDT_U64, FB_CDT_DOUBLE };
enum fb_cop { FB_COP_SUM, FB_COP_MIN, FB_COP_MAX, FB_COP_BAND };

void fb_coord_barrier(const struct fb_world *w);
/* In place: every rank ends with the reduction of `n` elements. */
void fb_coord_allreduce(const struct fb_world *w, void *buf, int n, enum fb_cdt dt, enum fb_cop op);
/* `out` (significant on `root` only) receives the reduction of `in`. */
void fb_coord_reduce(const struct fb_world *w, const void *in, void *out, int n, enum fb_cdt dt, enum fb_cop op,
                     int root);
void fb_coord_bcast(const struct fb_world *w, void *buf, size_t bytes, int root);
/* `all` receives w->size blocks of `bytes`, in rank order. */
void fb_coord_allgather(const struct fb_world *w, const void *mine, void *all, size_t bytes);
/* As fb_coord_allgather, `all` significant on `root` only. */
void fb_coord_gather(const struct fb_world *w, const void *mine, void *all, size_t bytes, int root);
/* Rank 0's `buf` receives each rank's `len` bytes at displs[r] (lens and
 * displs significant on rank 0 only). */
void fb_coord_gatherv(const struct fb_world *w, const void *mine, int len, void *buf, const int *lens,
                      const int *displs);
/* `teller`'s `bytes` at `buf` reach rank 0's `buf` (teller != 0). */
void fb_coord_to_rank0(const struct fb_world *w, void *buf, size_t bytes, int teller);
/* The ranks of `parent` passing the same colour, ordered by `key`: fills
 * group's engine, rank and size (MPI_Comm_split, ncclCommSplit). */
enum fb_status fb_coord_split(const struct fb_world *parent, int color, int key, struct fb_world *group,
                              struct fb_err *err);
/* Frees what fb_coord_split made under NCCL (MPI's is freed by the world). */
void fb_coord_free(struct fb_world *w);
/* Ends the whole job now with `code`: MPI_Abort under MPI; under NCCL the
 * world's communicator is aborted (the other ranks' next call fails) and
 * this process exits with `code`. */
_Noreturn void fb_coord_abort(const struct fb_world *w, int code);

/* The size in bytes of one element. */
size_t fb_cdt_size(enum fb_cdt dt);

#endif
