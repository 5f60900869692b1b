/*
 * Two clusters in one process, run at the same time from two host
 * threads: each must give exactly the results and simulated times it
 * gives alone. Nothing of one (selection's predictions, parsed specs,
 * schedules, the timing engine) may be shared with or wait for the other.
 * Each cluster runs a mix of collectives and sizes (the hierarchical
 * ones included) on inputs every rank can recompute; the check compares
 * every rank's result bits and every call's simulated time with `==`.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hccn/hccn.h"
#include "test_util.h"

#define CALLS 9
#define MAXR 16

typedef struct {
    uint64_t sum[MAXR][CALLS];     /* FNV-1a of each rank's result */
    double time[MAXR][CALLS];      /* each call's simulated duration */
    hccn_status_t rc;
} record_t;

typedef struct {
    const char *config;
    char path[1024];               /* resolved before any thread starts */
    record_t rec;
} job_t;

static uint64_t fnv(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

/* Call k: a collective and a count (elements per block). */
static hccn_status_t call(hccn_comm_t *w, int k, float *send, float *recv,
                          uint64_t count, size_t *out_bytes)
{
    int p = hccn_comm_size(w);
    switch (k % 3) {
    case 0:
        *out_bytes = count * sizeof(float);
        return hccn_allreduce(w, send, recv, count, HCCN_FP32, HCCN_SUM);
    case 1:
        *out_bytes = count * sizeof(float);
        return hccn_reduce_scatter(w, send, recv, count, HCCN_FP32,
                                   HCCN_SUM);
    default:
        *out_bytes = (size_t)p * count * sizeof(float);
        return hccn_allgather(w, send, recv, count, HCCN_FP32);
    }
}

static hccn_status_t rank_main(hccn_ctx_t *ctx, void *arg)
{
    record_t *rec = arg;
    hccn_comm_t *w = hccn_comm_world(ctx);
    int r = hccn_rank(ctx), p = hccn_comm_size(w);
    static const uint64_t counts[CALLS] = {2,    96,    1000,  4096, 12288,
                                           30000, 65536, 98304, 200000};
    uint64_t most = (uint64_t)p * counts[CALLS - 1];
    float *send, *recv;
    hccn_status_t rc = hccn_malloc(ctx, most * sizeof(float), (void **)&send);
    if (rc == HCCN_OK)
        rc = hccn_malloc(ctx, most * sizeof(float), (void **)&recv);
    for (uint64_t i = 0; rc == HCCN_OK && i < most; i++)
        send[i] = (float)(test_rand_at(7, r, i) % 1000) / 8.0f;
    for (int k = 0; k < CALLS && rc == HCCN_OK; k++) {
        size_t bytes = 0;
        rc = call(w, k, send, recv, counts[k], &bytes);
        rec->sum[r][k] = fnv(recv, bytes);
        rec->time[r][k] = hccn_last_duration(ctx);
    }
    return rc;
}

static void *run_job(void *arg)
{
    job_t *j = arg;
    hccn_cluster_t *cl = NULL;
    memset(&j->rec, 0, sizeof(j->rec));
    j->rec.rc = hccn_cluster_create(j->path, NULL, &cl);
    if (j->rec.rc == HCCN_OK) {
        assert_true(hccn_cluster_size(cl) <= MAXR);
        j->rec.rc = hccn_cluster_run(cl, rank_main, &j->rec, NULL);
    }
    hccn_cluster_destroy(cl);
    return NULL;
}

static void test_two_clusters_at_once(void **state)
{
    (void)state;
    static job_t alone[2] = {{.config = "configs/default.json"},
                             {.config = "configs/hgx-h100.json"}};
    static job_t both[2] = {{.config = "configs/default.json"},
                            {.config = "configs/hgx-h100.json"}};
    for (int i = 0; i < 2; i++) {
        snprintf(alone[i].path, sizeof(alone[i].path), "%s",
                 test_path(alone[i].config));
        snprintf(both[i].path, sizeof(both[i].path), "%s", alone[i].path);
        run_job(&alone[i]);
        assert_int_equal(alone[i].rec.rc, HCCN_OK);
    }
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, run_job, &both[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(both[i].rec.rc, HCCN_OK);
        for (int r = 0; r < MAXR; r++)
            for (int k = 0; k < CALLS; k++) {
                assert_true(both[i].rec.sum[r][k] == alone[i].rec.sum[r][k]);
                assert_true(both[i].rec.time[r][k] ==
                            alone[i].rec.time[r][k]);
            }
    }
    /* The two clusters differ, so a shared answer would have shown. */
    assert_true(alone[0].rec.time[0][8] != alone[1].rec.time[0][8]);
}

int main(void)
{
    static const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_clusters_at_once),
    };
    return cmocka_run_group_tests_name("two_clusters", tests, NULL, NULL);
}
