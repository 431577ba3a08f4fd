/* Baseline for `make bench`: the least code that times MPI_Allreduce the
 * way fabric-coll does (buffers touched once, warm-up, barrier, wall clock
 * around the timed loop, mean across ranks), so the ratio isolates the
 * harness's own overhead. Prints "bytes time_us" per size. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc != 5) {
        fprintf(stderr, "usage: %s MINBYTES MAXBYTES ITERS WARMUP\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    size_t minb = strtoull(argv[1], NULL, 10), maxb = strtoull(argv[2], NULL, 10);
    int iters = atoi(argv[3]), warmup = atoi(argv[4]), rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    float *send = aligned_alloc(4096, maxb), *recv = aligned_alloc(4096, maxb);
    memset(send, 0, maxb);
    memset(recv, 0, maxb);
    for (size_t bytes = minb; bytes <= maxb; bytes *= 2) {
        int count = (int)(bytes / sizeof(float));
        for (int i = 0; i < warmup; i++)
            MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now();
        for (int i = 0; i < iters; i++)
            MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double t = (now() - t0) / iters, sum = 0;
        MPI_Reduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0)
            printf("%zu %.3f\n", bytes, sum / size * 1e6);
    }
    free(send);
    free(recv);
    MPI_Finalize();
    return 0;
}
