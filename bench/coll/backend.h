/* Where the bytes live and who moves them: a backend owns the buffers and
 * runs one collective call. The sweep driver, validation and output are the
 * same for every backend. */
#ifndef FB_COLL_BACKEND_H
#define FB_COLL_BACKEND_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "nccl/collective.h"
#include "nccl/pattern.h"
#include "core/status.h"
#include "core/world.h"

enum fb_buf { FB_BUF_SEND, FB_BUF_RECV };

/* A backend's two buffers (host or device addresses) and their sizes. */
struct fb_buffers {
    char *send, *recv;
    size_t send_bytes, recv_bytes;
};

/* The address of bytes [off, off + n) of one buffer, for the backends'
 * write and read; NULL and FB_ERR_INTERNAL (`verb`: "write", "read") when
 * the span runs past the buffer's end. */
char *fb_buffer_span(const struct fb_buffers *b, enum fb_buf which, size_t off, size_t n,
                     const char *verb, struct fb_err *err);

/* One call. Offsets are in elements; for in-place calls both point into
 * the receive buffer. */
struct fb_call {
    const struct fb_collective *coll;
    struct fb_counts counts;
    enum fb_dtype dtype;
    enum fb_redop op;
    int root;
    int in_place;
    size_t send_off, recv_off;
};

struct fb_backend;

/* At most this many ranks in one process (-t x -g). */
#define FB_LOCAL_RANKS_MAX 64

/* nccl-tests' NCCL-only flags, as the backend is to apply them. A process
 * holds threads x gpus ranks (one per GPU); check_flags may lower -R and -x
 * to what the NCCL it runs with has, as nccl-tests does. */
struct fb_backend_flags {
    int threads, gpus;  /* -t, -g */
    int parallel_init;  /* -p 1: each thread's communicators set up by a thread of their own */
    int null_stream;    /* -y 1: calls on the NULL stream */
    int register_mode;  /* -R: 0 none, 1 ncclCommRegister, 2 symmetric windows */
    int cta_policy;     /* -x, -1 when not given */
    int device_impl;    /* -D, 0: NCCL's own implementation */
    int device_impl_given;
    int device_ctas;    /* -V */
    int device_ctas_given;
};

struct fb_backend_ops {
    const char *name;
    enum fb_inplace_style inplace_style;
    /* FB_OK when this backend can run here; FB_ERR_UNAVAIL with the reason
     * (no GPU, not compiled in) otherwise. Local, no communication. */
    enum fb_status (*available)(struct fb_err *err);
    /* FB_ERR_USAGE naming the fix when this backend cannot run the
     * collective with this type and operator. Local, no communication. */
    enum fb_status (*supports)(const struct fb_collective *c, enum fb_dtype t, enum fb_redop op,
                               struct fb_err *err);
    /* Collective over the world: communicators, device selection. */
    enum fb_status (*init)(struct fb_backend *be, const struct fb_world *w, struct fb_err *err);
    /* Optional (NULL: the flags need nothing): checks be->flags against the
     * library this process runs with, before init. FB_ERR_USAGE for a flag
     * it cannot take, FB_ERR_UNAVAIL for one it cannot carry out; a flag
     * lowered instead leaves one line for a "# Note:" in `notes`. Local. */
    enum fb_status (*check_flags)(struct fb_backend *be, char *notes, size_t len, struct fb_err *err);
    /* Bytes each of this process's ranks can allocate for buffers (host or
     * device memory): the least over its devices. */
    enum fb_status (*free_memory)(struct fb_backend *be, uint64_t *bytes, struct fb_err *err);
    /* Allocates and touches both buffers once, at the largest size. */
    enum fb_status (*alloc)(struct fb_backend *be, size_t send_bytes, size_t recv_bytes,
                            struct fb_err *err);
    /* Issues one call on every rank of this process, calls[i] being local
     * rank i's (be->local_ranks of them, one group); may return before
     * they complete (NCCL). */
    enum fb_status (*run)(struct fb_backend *be, const struct fb_call *calls, struct fb_err *err);
    /* Optional (NULL when unsupported), for -G as nccl-tests runs it:
     * graph_begin starts capturing every local rank's stream, so that the
     * calls issued until graph_end are recorded instead of run; graph_end
     * ends every capture that began (after a failed call too, so that no
     * stream is left capturing) and instantiates one graph per stream;
     * graph_launch enqueues them `launches` times without waiting (wait()
     * does); graph_free releases them. Local, no communication. */
    enum fb_status (*graph_begin)(struct fb_backend *be, struct fb_err *err);
    enum fb_status (*graph_end)(struct fb_backend *be, struct fb_err *err);
    enum fb_status (*graph_launch)(struct fb_backend *be, int launches, struct fb_err *err);
    void (*graph_free)(struct fb_backend *be);
    /* Optional (NULL: nothing to do): -m's calls of one iteration issued
     * between batch_begin and batch_end go to the library as one batch
     * (ncclGroupStart/End), as nccl-tests aggregates them. */
    enum fb_status (*batch_begin)(struct fb_backend *be, const struct fb_call *calls, struct fb_err *err);
    enum fb_status (*batch_end)(struct fb_backend *be, struct fb_err *err);
    /* Optional (NULL: -I 1 waits for each iteration instead): timing each
     * iteration on the backend's own clock (CUDA events on the stream), so
     * the iterations still overlap as without -I. marks(n) readies marks
     * 0..n (marks(0) releases them); mark(i) records mark i in order with
     * the calls: 0 before the first iteration, i after the i-th; spans,
     * once the calls are waited for, gives the n seconds between marks. */
    enum fb_status (*marks)(struct fb_backend *be, long n, struct fb_err *err);
    enum fb_status (*mark)(struct fb_backend *be, long i, struct fb_err *err);
    enum fb_status (*spans)(struct fb_backend *be, double *seconds, long n, struct fb_err *err);
    /* Waits until every issued call has completed, or a call failed on the
     * way (a peer lost: NCCL's asynchronous error, FB_ERR_RUNTIME). */
    enum fb_status (*wait)(struct fb_backend *be, struct fb_err *err);
    /* Copies between a buffer of local rank `local` and host memory (for
     * data set-up and checks). */
    enum fb_status (*write)(struct fb_backend *be, int local, enum fb_buf which, size_t byte_off,
                            const void *src, size_t bytes, struct fb_err *err);
    enum fb_status (*read)(struct fb_backend *be, int local, enum fb_buf which, size_t byte_off,
                           void *dst, size_t bytes, struct fb_err *err);
    /* Optional, for validation where the buffers are (all NULL: validate.c
     * stages the data through write and read). host_span gives the host
     * address of bytes [off, off + n) of a buffer in host memory. fill
     * writes n elements of the pattern's input (poison: the poison) from
     * element `elem_off` of a buffer on, on the device, in order with the
     * calls. check counts the wrong elements among the n of the receive
     * buffer from `elem_off` on, where they are: only the count and the
     * least wrong index (left alone when none) come back; `t` are host
     * copies of the lookup tables, the same while `t_key` is. */
    enum fb_status (*host_span)(struct fb_backend *be, int local, enum fb_buf which, size_t byte_off,
                                size_t bytes, char **at, struct fb_err *err);
    enum fb_status (*fill)(struct fb_backend *be, int local, enum fb_buf which, size_t elem_off, uint64_t n,
                           const struct fb_pattern *p, int poison, struct fb_err *err);
    enum fb_status (*check)(struct fb_backend *be, int local, size_t elem_off, uint64_t n,
                            const struct fb_pattern *p, const struct fb_pat_tables *t, uint64_t t_key,
                            uint64_t *wrong, uint64_t *first, struct fb_err *err);
    /* Fills local rank `local`'s device record {kind, name, pci_bus_id,
     * memory_bytes}. */
    void (*describe)(struct fb_backend *be, int local, json_object *device);
    /* Adds library versions to the versions object. */
    void (*versions)(struct fb_backend *be, json_object *versions);
    /* The most memory in use seen so far where the buffers live, sampling
     * now: GPU memory in use on local rank `local`'s device (NCCL), the
     * process's peak resident size (MPI). */
    enum fb_status (*peak_memory)(struct fb_backend *be, int local, uint64_t *bytes, struct fb_err *err);
    /* Optional (NULL: nothing to do): from another thread, as the job ends
     * on a fault, stops calls that may never complete (ncclCommAbort). The
     * backend only takes fini(abort = 1) after it. */
    void (*cancel)(struct fb_backend *be);
    /* Releases everything; `abort` after a failure (ncclCommAbort), when
     * the process is about to end (memory may be left to the exit). */
    void (*fini)(struct fb_backend *be, int abort);
};

struct fb_backend {
    const struct fb_backend_ops *ops;
    void *state;
    int graph_launches; /* -G: CUDA graph replays, 0 = off (NCCL only) */
    /* Bytes of each buffer as allocated (fb_backend_ops.alloc): the room
     * the per-iteration buffer shift moves the calls in (measure.c). */
    size_t send_cap, recv_cap;
    struct fb_backend_flags flags;
    /* Ranks this process holds, local ranks 0 .. local_ranks-1: global
     * rank = process rank x local_ranks + local rank (nccl-tests' order);
     * the collective's rank count is processes x local_ranks. */
    int local_ranks;
};

extern const struct fb_backend_ops fb_backend_mpi;

/* NULL when the name is unknown; `compiled` tells apart "nccl, not built". */
const struct fb_backend_ops *fb_backend_find(const char *name, int *compiled);

/* The default: nccl when compiled in and a GPU is visible, else mpi, with
 * why mpi was chosen in `why` ("" for nccl). */
const struct fb_backend_ops *fb_backend_default(char *why, size_t len);

/* Under an nccl-tests name (all_reduce_perf): nccl when compiled in, and
 * then a GPU must be visible (FB_ERR_UNAVAIL naming `prog`, CUDA's error
 * and the fixes otherwise: nccl-tests fails there too); mpi on a build
 * without NCCL, with why in `why`. */
const struct fb_backend_ops *fb_backend_for_perf_name(const char *prog, char *why, size_t len,
                                                      struct fb_err *err);

/* Element buffers are typed by the call; this maps our dtypes and ops to
 * MPI's, returning 0 when MPI has no equivalent. */
int fb_mpi_dtype(enum fb_dtype t, MPI_Datatype *out);
int fb_mpi_op(enum fb_redop op, MPI_Op *out);

#endif
