/* The coordination verbs (core/coord.h): MPI here, NCCL in world_nccl.c
 * (built with NCCL only; without it no world has an NCCL engine). */
#include "core/coord.h"

#include <stdio.h>
#include <stdlib.h>

#include "core/world_env.h"

static MPI_Datatype mpi_type(enum fb_cdt dt)
{
    switch (dt) {
    case FB_CDT_INT: return MPI_INT;
    case FB_CDT_LONG: return MPI_LONG;
    case FB_CDT_UNSIGNED: return MPI_UNSIGNED;
    case FB_CDT_I64: return MPI_INT64_T;
    case FB_CDT_U64: return MPI_UINT64_T;
    case FB_CDT_DOUBLE: break;
    }
    return MPI_DOUBLE;
}

static MPI_Op mpi_op(enum fb_cop op)
{
    switch (op) {
    case FB_COP_SUM: return MPI_SUM;
    case FB_COP_MIN: return MPI_MIN;
    case FB_COP_MAX: return MPI_MAX;
    case FB_COP_BAND: break;
    }
    return MPI_BAND;
}

size_t fb_cdt_size(enum fb_cdt dt)
{
    switch (dt) {
    case FB_CDT_INT: return sizeof(int);
    case FB_CDT_LONG: return sizeof(long);
    case FB_CDT_UNSIGNED: return sizeof(unsigned);
    case FB_CDT_I64:
    case FB_CDT_U64:
    case FB_CDT_DOUBLE: break;
    }
    return 8;
}

#ifdef HAVE_NCCL
#define NCCL_OR(w, call)                                                                                      \
    do {                                                                                                      \
        if ((w)->nccl != NULL) {                                                                              \
            call;                                                                                             \
            return;                                                                                           \
        }                                                                                                     \
    } while (0)
#else
#define NCCL_OR(w, call) (void)0
#endif

void fb_coord_barrier(const struct fb_world *w)
{
    NCCL_OR(w, fb_wn_barrier(w->nccl));
    MPI_Barrier(w->comm);
}

void fb_coord_allreduce(const struct fb_world *w, void *buf, int n, enum fb_cdt dt, enum fb_cop op)
{
    NCCL_OR(w, fb_wn_allreduce(w->nccl, buf, n, dt, op));
    MPI_Allreduce(MPI_IN_PLACE, buf, n, mpi_type(dt), mpi_op(op), w->comm);
}

void fb_coord_reduce(const struct fb_world *w, const void *in, void *out, int n, enum fb_cdt dt, enum fb_cop op,
                     int root)
{
    NCCL_OR(w, fb_wn_reduce(w->nccl, in, out, n, dt, op, root));
    MPI_Reduce(in, out, n, mpi_type(dt), mpi_op(op), root, w->comm);
}

void fb_coord_bcast(const struct fb_world *w, void *buf, size_t bytes, int root)
{
    NCCL_OR(w, fb_wn_bcast(w->nccl, buf, bytes, root));
    MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, w->comm);
}

void fb_coord_allgather(const struct fb_world *w, const void *mine, void *all, size_t bytes)
{
    NCCL_OR(w, fb_wn_allgather(w->nccl, mine, all, bytes));
    MPI_Allgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, w->comm);
}

void fb_coord_gather(const struct fb_world *w, const void *mine, void *all, size_t bytes, int root)
{
    NCCL_OR(w, fb_wn_gather(w->nccl, mine, all, bytes, root));
    MPI_Gather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, root, w->comm);
}

void fb_coord_gatherv(const struct fb_world *w, const void *mine, int len, void *buf, const int *lens,
                      const int *displs)
{
    NCCL_OR(w, fb_wn_gatherv(w->nccl, mine, len, buf, lens, displs));
    MPI_Gatherv(mine, len, MPI_CHAR, buf, lens, displs, MPI_CHAR, 0, w->comm);
}

void fb_coord_to_rank0(const struct fb_world *w, void *buf, size_t bytes, int teller)
{
    NCCL_OR(w, fb_wn_to_rank0(w->nccl, buf, bytes, teller));
    if (w->rank == teller)
        MPI_Send(buf, (int)bytes, MPI_BYTE, 0, 0, w->comm);
    else if (w->rank == 0)
        MPI_Recv(buf, (int)bytes, MPI_BYTE, teller, 0, w->comm, MPI_STATUS_IGNORE);
}

enum fb_status fb_coord_split(const struct fb_world *parent, int color, int key, struct fb_world *group,
                              struct fb_err *err)
{
#ifdef HAVE_NCCL
    if (parent->nccl != NULL)
        return fb_wn_split(parent->nccl, color, key, &group->nccl, &group->rank, &group->size, err);
#endif
    if (MPI_Comm_split(parent->comm, color, key, &group->comm) != MPI_SUCCESS)
        return fb_fail(err, FB_ERR_RUNTIME, "MPI_Comm_split into rank groups failed");
    MPI_Comm_rank(group->comm, &group->rank);
    MPI_Comm_size(group->comm, &group->size);
    return FB_OK;
}

void fb_coord_free(struct fb_world *w)
{
#ifdef HAVE_NCCL
    fb_wn_free(w->nccl);
#endif
    w->nccl = NULL;
}

_Noreturn void fb_coord_abort(const struct fb_world *w, int code)
{
#ifdef HAVE_NCCL
    if (w->nccl != NULL)
        fb_wn_abort(w->nccl, code);
#endif
    MPI_Abort(w->comm, code);
    exit(code); /* MPI_Abort does not return; the compiler cannot know */
}
