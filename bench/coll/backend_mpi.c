/* Host-memory backend: MPI collectives on malloc'd, pre-touched buffers.
 * What every CPU-only machine runs, and the reference the NCCL numbers of
 * the same job can be read against. */
#include <limits.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>

#include "coll/backend.h"
#include "core/host.h"

struct mpi_state {
    MPI_Comm comm;
    int rank, size;
    struct fb_buffers buf;
    /* alltoallv's per-peer counts and displacements, `size` each */
    int *send_counts, *send_displs, *recv_counts, *recv_displs;
};

int fb_mpi_dtype(enum fb_dtype t, MPI_Datatype *out)
{
    switch (t) {
    case FB_INT8: *out = MPI_INT8_T; return 1;
    case FB_UINT8: *out = MPI_UINT8_T; return 1;
    case FB_INT32: *out = MPI_INT32_T; return 1;
    case FB_UINT32: *out = MPI_UINT32_T; return 1;
    case FB_INT64: *out = MPI_INT64_T; return 1;
    case FB_UINT64: *out = MPI_UINT64_T; return 1;
    case FB_FLOAT: *out = MPI_FLOAT; return 1;
    case FB_DOUBLE: *out = MPI_DOUBLE; return 1;
    default: return 0;
    }
}

int fb_mpi_op(enum fb_redop op, MPI_Op *out)
{
    switch (op) {
    case FB_SUM: *out = MPI_SUM; return 1;
    case FB_PROD: *out = MPI_PROD; return 1;
    case FB_MAX: *out = MPI_MAX; return 1;
    case FB_MIN: *out = MPI_MIN; return 1;
    default: return 0;
    }
}

static enum fb_status mpi_available(struct fb_err *err)
{
    (void)err;
    return FB_OK;
}

static enum fb_status mpi_init(struct fb_backend *be, const struct fb_world *w, struct fb_err *err)
{
    struct mpi_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    s->comm = w->comm;
    s->rank = w->rank;
    s->size = w->size;
    be->state = s;
    size_t n = (size_t)w->size;
    s->send_counts = calloc(n, sizeof *s->send_counts);
    s->send_displs = calloc(n, sizeof *s->send_displs);
    s->recv_counts = calloc(n, sizeof *s->recv_counts);
    s->recv_displs = calloc(n, sizeof *s->recv_displs);
    if (!s->send_counts || !s->send_displs || !s->recv_counts || !s->recv_displs)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    return FB_OK;
}

static enum fb_status mpi_free_memory(struct fb_backend *be, uint64_t *bytes, struct fb_err *err)
{
    (void)be;
    return fb_mem_available("", bytes, err);
}

/* First touch of fresh pages costs ~10 us per 4 KiB page on some machines:
 * pay it here, once, never inside a timed loop. */
static char *alloc_touched(size_t bytes)
{
    char *p = NULL;
    if (posix_memalign((void **)&p, 4096, bytes ? bytes : 1) != 0)
        return NULL;
    memset(p, 0, bytes);
    return p;
}

static enum fb_status mpi_alloc(struct fb_backend *be, size_t send_bytes, size_t recv_bytes,
                                struct fb_err *err)
{
    struct mpi_state *s = be->state;
    s->buf.send = alloc_touched(send_bytes);
    s->buf.recv = alloc_touched(recv_bytes);
    if (s->buf.send == NULL || s->buf.recv == NULL)
        return fb_fail(err, FB_ERR_MEMORY, "cannot allocate %zu + %zu bytes of host memory",
                       send_bytes, recv_bytes);
    s->buf.send_bytes = send_bytes;
    s->buf.recv_bytes = recv_bytes;
    return FB_OK;
}

static enum fb_status check_mpi(int rc, const char *what, struct fb_err *err)
{
    if (rc == MPI_SUCCESS)
        return FB_OK;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    return fb_fail(err, FB_ERR_RUNTIME, "%s failed: %s", what, text);
}

/* nccl-tests' uneven shares (fb_alltoallv_count), laid out in rank order
 * on both sides. In place the sends and receives overlap in one buffer;
 * no result is defined there (the table marks it unchecked), and the
 * call still moves the same bytes. */
static int run_alltoallv(struct mpi_state *s, const struct fb_call *c, const char *send, char *recv,
                         MPI_Datatype dt)
{
    size_t esz = fb_dtype_info(c->dtype)->size, p = c->counts.param, sent = 0, got = 0;
    for (int r = 0; r < s->size; r++) {
        size_t out = fb_alltoallv_count(p, esz, s->size, s->rank, r);
        size_t in = fb_alltoallv_count(p, esz, s->size, r, s->rank);
        s->send_counts[r] = (int)out, s->send_displs[r] = (int)sent;
        s->recv_counts[r] = (int)in, s->recv_displs[r] = (int)got;
        sent += out, got += in;
    }
    return MPI_Alltoallv(send, s->send_counts, s->send_displs, dt, recv, s->recv_counts, s->recv_displs,
                         dt, s->comm);
}

/* Only the root's receive buffer is written; in place its own block is
 * already where the gathered result keeps it. */
static int run_gather(struct mpi_state *s, const struct fb_call *c, const char *send, char *recv,
                      MPI_Datatype dt)
{
    int n = (int)c->counts.param;
    if (c->in_place && s->rank == c->root)
        return MPI_Gather(MPI_IN_PLACE, n, dt, recv, n, dt, c->root, s->comm);
    return MPI_Gather(send, n, dt, recv, n, dt, c->root, s->comm);
}

static int run_scatter(struct mpi_state *s, const struct fb_call *c, const char *send, char *recv,
                       MPI_Datatype dt)
{
    int n = (int)c->counts.param;
    if (c->in_place && s->rank == c->root)
        return MPI_Scatter(send, n, dt, MPI_IN_PLACE, n, dt, c->root, s->comm);
    return MPI_Scatter(send, n, dt, recv, n, dt, c->root, s->comm);
}

/* nccl-tests' hypercube all-gather: this rank's block in place, then at
 * step k an exchange with rank ^ 2^k of the 2^k blocks each side holds. */
static int run_hypercube(struct mpi_state *s, const struct fb_call *c, const char *send, char *recv,
                         MPI_Datatype dt)
{
    size_t block = c->counts.param * fb_dtype_info(c->dtype)->size;
    char *mine = recv + (size_t)s->rank * block;
    if (mine != send)
        memcpy(mine, send, block);
    int rc = MPI_SUCCESS;
    for (int mask = 1; mask < s->size && rc == MPI_SUCCESS; mask <<= 1) {
        int held = s->rank & ~(mask - 1), peer = s->rank ^ mask, n = (int)c->counts.param * mask;
        rc = MPI_Sendrecv(recv + (size_t)held * block, n, dt, peer, 0, recv + (size_t)(held ^ mask) * block, n,
                          dt, peer, 0, s->comm, MPI_STATUS_IGNORE);
    }
    return rc;
}

static int run_call(struct mpi_state *s, const struct fb_call *c, MPI_Datatype dt, MPI_Op op)
{
    size_t esz = fb_dtype_info(c->dtype)->size;
    char *send = (c->in_place ? s->buf.recv : s->buf.send) + c->send_off * esz;
    char *recv = s->buf.recv + c->recv_off * esz;
    char *whole = s->buf.recv + c->send_off * esz; /* the single buffer of an in-place call (-u: offset) */
    int n = (int)c->counts.param;
    switch (c->coll->id) {
    case FB_ALL_REDUCE:
        return MPI_Allreduce(c->in_place ? MPI_IN_PLACE : send, recv, n, dt, op, s->comm);
    case FB_ALL_GATHER:
        return MPI_Allgather(c->in_place ? MPI_IN_PLACE : send, n, dt, recv, n, dt, s->comm);
    case FB_REDUCE_SCATTER:
        if (c->in_place)
            return MPI_Reduce_scatter_block(MPI_IN_PLACE, whole, n, dt, op, s->comm);
        return MPI_Reduce_scatter_block(send, recv, n, dt, op, s->comm);
    case FB_BROADCAST:
        /* Out-of-place broadcast delivers into the root's own receive buffer
         * too, as NCCL does: that copy is part of the operation. */
        if (!c->in_place && s->rank == c->root)
            memcpy(recv, send, c->counts.recv * esz);
        return MPI_Bcast(recv, n, dt, c->root, s->comm);
    case FB_REDUCE:
        if (c->in_place)
            return MPI_Reduce(s->rank == c->root ? MPI_IN_PLACE : recv, recv, n, dt, op, c->root,
                              s->comm);
        return MPI_Reduce(send, recv, n, dt, op, c->root, s->comm);
    case FB_ALLTOALL:
        return MPI_Alltoall(c->in_place ? MPI_IN_PLACE : send, n, dt, recv, n, dt, s->comm);
    case FB_SENDRECV: {
        int next = (s->rank + 1) % s->size, prev = (s->rank - 1 + s->size) % s->size;
        if (c->in_place)
            return MPI_Sendrecv_replace(recv, n, dt, next, 0, prev, 0, s->comm, MPI_STATUS_IGNORE);
        return MPI_Sendrecv(send, n, dt, next, 0, recv, n, dt, prev, 0, s->comm,
                            MPI_STATUS_IGNORE);
    }
    case FB_ALLTOALLV: return run_alltoallv(s, c, send, recv, dt);
    case FB_GATHER: return run_gather(s, c, send, recv, dt);
    case FB_SCATTER: return run_scatter(s, c, send, recv, dt);
    case FB_HYPERCUBE: return run_hypercube(s, c, send, recv, dt);
    case FB_NCOLLS: break;
    }
    return MPI_ERR_OTHER;
}

static enum fb_status mpi_supports(const struct fb_collective *c, enum fb_dtype t,
                                   enum fb_redop op, struct fb_err *err)
{
    MPI_Datatype dt;
    MPI_Op mop;
    if (!fb_mpi_dtype(t, &dt))
        return fb_fail(err, FB_ERR_USAGE, "the mpi backend has no %s type%s; use the nccl backend or -d float",
                       fb_dtype_info(t)->name, fb_dtype_info(t)->is_fp8 ? " (MPI has no 8-bit floats)" : "");
    if (c->reduces && !fb_mpi_op(op, &mop))
        return fb_fail(err, FB_ERR_USAGE, "MPI has no '%s' reduction; use the nccl backend or -o sum",
                       fb_redop_name(op));
    return FB_OK;
}

static enum fb_status mpi_run(struct fb_backend *be, const struct fb_call *c, struct fb_err *err)
{
    struct mpi_state *s = be->state;
    MPI_Datatype dt;
    MPI_Op op = MPI_SUM;
    /* The mapping is the check: its message comes only on the rare path
     * (the run's type and operator were checked before the sweep). */
    if (!fb_mpi_dtype(c->dtype, &dt) || (c->coll->reduces && !fb_mpi_op(c->op, &op)))
        return mpi_supports(c->coll, c->dtype, c->op, err);
    /* alltoallv's displacements and hypercube's last exchange reach the
     * whole buffer: for them the whole must fit an int too. */
    int whole = c->coll->id == FB_ALLTOALLV || c->coll->id == FB_HYPERCUBE;
    if ((whole ? c->counts.recv : c->counts.param) > INT_MAX)
        return fb_fail(err, FB_ERR_USAGE,
                       "the mpi backend takes at most %d elements per call (MPI int counts); "
                       "lower -e or use a larger -d", INT_MAX);
    return check_mpi(run_call(s, c, dt, op), c->coll->name, err);
}

static enum fb_status mpi_wait(struct fb_backend *be, struct fb_err *err)
{
    (void)be, (void)err;
    return FB_OK; /* blocking MPI collectives have completed on return */
}

static enum fb_status mpi_write(struct fb_backend *be, int local, enum fb_buf which, size_t off,
                                const void *src, size_t bytes, struct fb_err *err)
{
    (void)local; /* one rank per process */
    struct mpi_state *s = be->state;
    char *at = fb_buffer_span(&s->buf, which, off, bytes, "write", err);
    if (at == NULL)
        return err->code;
    memcpy(at, src, bytes);
    return FB_OK;
}

static enum fb_status mpi_read(struct fb_backend *be, int local, enum fb_buf which, size_t off, void *dst,
                               size_t bytes, struct fb_err *err)
{
    (void)local;
    struct mpi_state *s = be->state;
    const char *at = fb_buffer_span(&s->buf, which, off, bytes, "read", err);
    if (at == NULL)
        return err->code;
    memcpy(dst, at, bytes);
    return FB_OK;
}

/* Validation fills and checks the buffers where they are. */
static enum fb_status mpi_host_span(struct fb_backend *be, int local, enum fb_buf which, size_t off, size_t bytes,
                                    char **at, struct fb_err *err)
{
    (void)local;
    struct mpi_state *s = be->state;
    *at = fb_buffer_span(&s->buf, which, off, bytes, "validation", err);
    return *at == NULL ? err->code : FB_OK;
}

static void mpi_describe(struct fb_backend *be, int local, json_object *device)
{
    (void)be, (void)local;
    json_object_object_add(device, "kind", json_object_new_string("cpu"));
    json_object_object_add(device, "name", json_object_new_string("host memory"));
    json_object_object_add(device, "pci_bus_id", NULL);
    uint64_t avail = 0;
    struct fb_err err = {0};
    json_object_object_add(device, "memory_bytes",
                           fb_mem_available("", &avail, &err) == FB_OK ? json_object_new_uint64(avail) : NULL);
}

static void mpi_versions(struct fb_backend *be, json_object *versions)
{
    (void)be, (void)versions;
}

/* Host buffers: the process's high-water mark of resident memory. */
static enum fb_status mpi_peak_memory(struct fb_backend *be, int local, uint64_t *bytes, struct fb_err *err)
{
    (void)be, (void)local;
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return fb_fail(err, FB_ERR_RUNTIME, "getrusage failed");
    *bytes = (uint64_t)ru.ru_maxrss * 1024u;
    return FB_OK;
}

static void mpi_fini(struct fb_backend *be, int abort)
{
    (void)abort;
    struct mpi_state *s = be->state;
    if (s == NULL)
        return;
    free(s->buf.send);
    free(s->buf.recv);
    free(s->send_counts);
    free(s->send_displs);
    free(s->recv_counts);
    free(s->recv_displs);
    free(s);
    be->state = NULL;
}

const struct fb_backend_ops fb_backend_mpi = {
    .name = "mpi",
    .inplace_style = FB_INPLACE_MPI,
    .available = mpi_available,
    .supports = mpi_supports,
    .init = mpi_init,
    .free_memory = mpi_free_memory,
    .alloc = mpi_alloc,
    .run = mpi_run,
    .wait = mpi_wait,
    .write = mpi_write,
    .read = mpi_read,
    .host_span = mpi_host_span,
    .describe = mpi_describe,
    .versions = mpi_versions,
    .peak_memory = mpi_peak_memory,
    .fini = mpi_fini,
};
