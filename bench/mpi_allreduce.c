/*
 * Baseline for bench/compare.sh: wall time per MPI_Allreduce (fp32 sum) at
 * a list of sizes, measured like hccn-perf's wall column (warm-up, then the
 * mean of N timed iterations, the slowest rank's time).
 *
 *   mpirun -np 16 --oversubscribe ./mpi_allreduce ITERS BYTES...
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iters = argc > 1 ? atoi(argv[1]) : 5;
    for (int a = 2; a < argc; a++) {
        long bytes = atol(argv[a]);
        long n = bytes / (long)sizeof(float);
        if (n < 1)
            n = 1;
        float *s = malloc((size_t)n * sizeof(float));
        float *r = malloc((size_t)n * sizeof(float));
        for (long i = 0; i < n; i++)
            s[i] = (float)((i + rank) % 7);
        MPI_Allreduce(s, r, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++)
            MPI_Allreduce(s, r, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double dt = (MPI_Wtime() - t0) / iters, worst;
        MPI_Reduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0)
            printf("mpi %ld %.1f\n", n * (long)sizeof(float), worst * 1e6);
        free(s);
        free(r);
    }
    MPI_Finalize();
    return 0;
}
