/*
 * Core wall-clock figures (not tests):
 *   1. create a 16-NPU cluster, run an empty function on every rank,
 *      destroy it: mean wall milliseconds per cycle;
 *   2. 1 MiB point-to-point copy throughput between two ranks against a
 *      plain memcpy of the same bytes on the same host.
 *
 *   bench_core [CONFIG] [CYCLES] [MESSAGES]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hccn/hccn.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static hccn_status_t empty(hccn_ctx_t *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    return HCCN_OK;
}

typedef struct {
    int messages;
    size_t bytes;
    double wall;
} p2p_t;

static hccn_status_t pingpong(hccn_ctx_t *ctx, void *arg)
{
    p2p_t *p = arg;
    int r = hccn_rank(ctx);
    if (r > 1)
        return HCCN_OK;
    char *buf;
    hccn_status_t rc = hccn_malloc(ctx, p->bytes, (void **)&buf);
    if (rc != HCCN_OK)
        return rc;
    memset(buf, r, p->bytes);
    hccn_comm_t *w = hccn_comm_world(ctx);
    enum { WINDOW = 8 };
    hccn_future_t *f[WINDOW];
    double t0 = now();
    /* Windows of non-blocking messages, as a streaming copy would post. */
    for (int i = 0; i < p->messages && rc == HCCN_OK; i += WINDOW) {
        for (int k = 0; k < WINDOW && rc == HCCN_OK; k++)
            rc = r == 0 ? hccn_isend(w, buf, p->bytes, HCCN_UINT8, 1, &f[k])
                        : hccn_irecv(w, buf, p->bytes, HCCN_UINT8, 0, &f[k]);
        for (int k = 0; k < WINDOW && rc == HCCN_OK; k++) {
            rc = hccn_wait(f[k]);
            hccn_future_free(f[k]);
        }
    }
    if (r == 1)
        p->wall = now() - t0;
    hccn_free(ctx, buf);
    return rc;
}

int main(int argc, char **argv)
{
    const char *cfg = argc > 1 ? argv[1] : "configs/default.json";
    int cycles = argc > 2 ? atoi(argv[2]) : 50;
    p2p_t p = {.messages = argc > 3 ? atoi(argv[3]) : 2000, .bytes = 1 << 20};

    double t0 = now();
    for (int i = 0; i < cycles; i++) {
        hccn_cluster_t *cl;
        if (hccn_cluster_create(cfg, NULL, &cl) != HCCN_OK ||
            hccn_cluster_run(cl, empty, NULL, NULL) != HCCN_OK) {
            fprintf(stderr, "bench_core: %s\n", hccn_last_error());
            return 1;
        }
        hccn_cluster_destroy(cl);
    }
    double cycle_ms = (now() - t0) / cycles * 1e3;

    hccn_cluster_t *cl;
    if (hccn_cluster_create(cfg, NULL, &cl) != HCCN_OK ||
        hccn_cluster_run(cl, pingpong, &p, NULL) != HCCN_OK) {
        fprintf(stderr, "bench_core: %s\n", hccn_last_error());
        return 1;
    }
    hccn_cluster_destroy(cl);

    char *a = malloc(p.bytes), *b = malloc(p.bytes);
    memset(a, 1, p.bytes);
    memset(b, 2, p.bytes);
    double m0 = now();
    for (int i = 0; i < p.messages; i++) {
        memcpy(i % 2 ? a : b, i % 2 ? b : a, p.bytes);
        __asm__ volatile("" ::: "memory");
    }
    double mwall = now() - m0;
    free(a);
    free(b);

    double gbs = (double)p.bytes * p.messages / p.wall / 1e9;
    double mgbs = (double)p.bytes * p.messages / mwall / 1e9;
    printf("cluster create+run+destroy (%s): %.2f ms per cycle\n", cfg,
           cycle_ms);
    printf("1 MiB send/recv: %.2f GB/s; memcpy: %.2f GB/s; ratio %.2f\n", gbs,
           mgbs, gbs / mgbs);
    return 0;
}
