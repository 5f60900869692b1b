/*
 * Host memory bandwidth for bench/compare.sh's roofline: THREADS threads
 * (default: one per online CPU) each memcpy their own BYTES buffer (default
 * 64 MiB, larger than the caches) REPS times at once; prints the median of
 * the aggregate rates, in bytes copied per second (a copy of n bytes reads
 * n and writes n: twice that crosses the memory bus).
 *
 *   bench_memcpy_bw [THREADS] [BYTES] [REPS]
 *   -> memcpy_GBps 14.52 threads 2 bytes 67108864
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    size_t bytes;
    char *src, *dst;
    pthread_barrier_t *start;
} worker_t;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *copy_once(void *p)
{
    worker_t *w = p;
    pthread_barrier_wait(w->start);
    memcpy(w->dst, w->src, w->bytes);
    return NULL;
}

/* One round: every thread copies its buffer once; returns the seconds from
 * the common start to the last thread's end. */
static double round_time(worker_t *w, int threads)
{
    pthread_t *th = malloc((size_t)threads * sizeof(*th));
    double t0 = now();
    for (int i = 0; i < threads; i++)
        pthread_create(&th[i], NULL, copy_once, &w[i]);
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    double t = now() - t0;
    free(th);
    return t;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = argc > 1 ? atoi(argv[1]) : (int)(cpus > 0 ? cpus : 1);
    size_t bytes = argc > 2 ? strtoull(argv[2], NULL, 0) : 64u << 20;
    int reps = argc > 3 ? atoi(argv[3]) : 7;
    if (threads < 1 || bytes == 0 || reps < 1) {
        fprintf(stderr, "usage: bench_memcpy_bw [THREADS] [BYTES] [REPS]\n");
        return 2;
    }
    pthread_barrier_t start;
    worker_t *w = calloc((size_t)threads, sizeof(*w));
    double *rate = calloc((size_t)reps, sizeof(*rate));
    for (int i = 0; i < threads; i++) {
        w[i] = (worker_t){bytes, malloc(bytes), malloc(bytes), &start};
        if (w[i].src == NULL || w[i].dst == NULL) {
            fprintf(stderr, "bench_memcpy_bw: out of memory\n");
            return 1;
        }
        memset(w[i].src, i + 1, bytes);   /* fault the pages in first */
        memset(w[i].dst, 0, bytes);
    }
    for (int r = 0; r < reps; r++) {
        pthread_barrier_init(&start, NULL, (unsigned)threads);
        rate[r] = (double)bytes * threads / round_time(w, threads) / 1e9;
        pthread_barrier_destroy(&start);
    }
    qsort(rate, (size_t)reps, sizeof(*rate), cmp_double);
    printf("memcpy_GBps %.2f threads %d bytes %zu\n", rate[reps / 2], threads,
           bytes);
    for (int i = 0; i < threads; i++) {
        free(w[i].src);
        free(w[i].dst);
    }
    free(w);
    free(rate);
    return 0;
}
