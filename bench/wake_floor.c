/*
 * The least a blocking collective of THREADS NPU threads can cost on this
 * host, whatever it moves: in each round every thread arrives, all but the
 * last go to sleep on a futex, and the last wakes them all (one sleep and
 * one wake per thread, no data, no timing engine). bench/compare.sh prints
 * it next to the 8-byte figures: a driven collective (runtime/exec.c) does
 * this much thread switching and no more.
 *
 * With "yield" the waiting threads do not sleep: they give the processor
 * up (sched_yield) until the round ends. That is cheaper per round when
 * nothing else needs the processors, and is not what the runtime does for
 * a driven collective: the waiters would then share the cores with the
 * one thread that does the call's work (docs/performance.md).
 *
 *   bench_wake_floor [THREADS] [ROUNDS] [sleep|yield]
 *                                    (default 16 threads, 20000, sleep)
 *   -> wake_floor_us 74.1 threads 16 rounds 20000
 *   -> yield_floor_us 18.5 threads 16 rounds 20000
 */
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int nthreads = 16;
static long rounds = 20000;
static int yield;
static _Atomic int arrived;
static _Atomic uint32_t generation;

static void *member(void *arg)
{
    (void)arg;
    for (long i = 0; i < rounds; i++) {
        uint32_t g = atomic_load(&generation);
        if (atomic_fetch_add(&arrived, 1) == nthreads - 1) {
            atomic_store(&arrived, 0);
            atomic_fetch_add(&generation, 1);
            if (!yield)
                syscall(SYS_futex, &generation, FUTEX_WAKE_PRIVATE,
                        INT32_MAX, NULL, NULL, 0);
            continue;
        }
        while (atomic_load(&generation) == g)
            if (yield)
                sched_yield();
            else
                syscall(SYS_futex, &generation, FUTEX_WAIT_PRIVATE, g, NULL,
                        NULL, 0);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        nthreads = atoi(argv[1]);
    if (argc > 2)
        rounds = atol(argv[2]);
    if (argc > 3)
        yield = strcmp(argv[3], "yield") == 0 ? 1
                : strcmp(argv[3], "sleep") == 0 ? 0 : -1;
    if (nthreads < 1 || nthreads > 4096 || rounds < 1 || yield < 0) {
        fprintf(stderr, "usage: bench_wake_floor [THREADS] [ROUNDS] "
                        "[sleep|yield]\n");
        return 2;
    }
    pthread_t *t = malloc((size_t)nthreads * sizeof(*t));
    if (t == NULL)
        return 1;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < nthreads; i++)
        if (pthread_create(&t[i], NULL, member, NULL) != 0) {
            fprintf(stderr, "bench_wake_floor: cannot start thread %d\n", i);
            return 1;
        }
    for (int i = 0; i < nthreads; i++)
        pthread_join(t[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double us = ((double)(b.tv_sec - a.tv_sec) * 1e9 +
                 (double)(b.tv_nsec - a.tv_nsec)) / 1e3 / (double)rounds;
    printf("%s_floor_us %.1f threads %d rounds %ld\n",
           yield ? "yield" : "wake", us, nthreads, rounds);
    free(t);
    return 0;
}
