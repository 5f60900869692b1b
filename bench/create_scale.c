/*
 * bench_create_scale: what creating (and optionally running) a large
 * cluster costs. Makes a cluster of NPUS NPUs (nodes of 8 on a switch
 * fabric, 1 MiB arenas, one switch network), runs an empty rank function
 * RUNS times, destroys it, and prints the wall time of each step. Read
 * the peak memory with /usr/bin/time -v (docs/performance.md).
 *
 *   bench_create_scale [NPUS] [RUNS]     defaults: 16384 0
 *
 * A benchmark: it reports, it never decides pass or fail.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "hccn/hccn.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static hccn_status_t empty_rank(hccn_ctx_t *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    return HCCN_OK;
}

int main(int argc, char **argv)
{
    long npus = argc > 1 ? strtol(argv[1], NULL, 10) : 16384;
    int runs = argc > 2 ? atoi(argv[2]) : 0;
    if (npus < 8 || npus % 8 != 0) {
        fprintf(stderr, "bench_create_scale: NPUS must be a multiple of 8\n");
        return 2;
    }
    char json[1024];
    snprintf(json, sizeof(json),
             "{\"version\": 1, \"node_types\": [{\"count\": %ld, "
             "\"npu\": {\"count\": 8, \"arena_MiB\": 1, \"reduce_bw_GBps\": 100},"
             " \"fabric\": {\"type\": \"switch\", \"bw_GBps\": 50, \"lat_us\": 1},"
             " \"nics\": {\"count\": 1, \"bw_GBps\": 25, \"lat_us\": 1}}],"
             " \"network\": {\"type\": \"switch\", \"lat_us\": 1}}",
             npus / 8);
    hccn_cluster_t *cl = NULL;
    double t0 = now();
    hccn_status_t rc = hccn_cluster_create_json(json, "create_scale", NULL, &cl);
    double t1 = now();
    if (rc != HCCN_OK) {
        printf("create %ld NPUs: %s: %s (%.3f s)\n", npus, hccn_status_name(rc),
               hccn_last_error(), t1 - t0);
        return 1;
    }
    printf("create %ld NPUs: %.3f s\n", npus, t1 - t0);
    for (int i = 0; i < runs; i++) {
        double r0 = now();
        rc = hccn_cluster_run(cl, empty_rank, NULL, NULL);
        printf("run %d: %s (%.3f s)%s%s\n", i, hccn_status_name(rc),
               now() - r0, rc != HCCN_OK ? ": " : "",
               rc != HCCN_OK ? hccn_last_error() : "");
    }
    double d0 = now();
    hccn_cluster_destroy(cl);
    printf("destroy: %.3f s\n", now() - d0);
    return rc == HCCN_OK ? 0 : 1;
}
