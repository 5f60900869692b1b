/* Recovery: hccn_comm_revoke releases every rank blocked in any kind of
 * operation; hccn_comm_shrink after 1, 2 and 15 failures of 16 ranks and
 * after a whole node fails gives the survivors in order, and an allreduce
 * on the new communicator is exact; hccn_comm_agree survives a failure
 * during the agreement; hccn_comm_grow adds a spare NPU. All under the
 * host-load jitter. The costs: tests/coll/test_recovery_time.c. */
#include <math.h>
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

#define MAXR 17
#define LEN 64

/* nodes x per NPUs on one mesh per node, the nodes joined by a switch;
 * the faults given are appended. */
static hccn_cluster_t *make(int nodes, int per, const char *faults)
{
    char json[2048];
    snprintf(json, sizeof(json),
             "{\"version\":1,\"node_types\":[{\"count\":%d,"
             "\"npu\":{\"count\":%d,\"arena_MiB\":4,\"reduce_bw_GBps\":100},"
             "\"fabric\":{\"type\":\"mesh\",\"bw_GBps\":10,\"lat_us\":2},"
             "\"nics\":{\"count\":1,\"bw_GBps\":25,\"lat_us\":1}}],"
             "\"network\":{\"type\":\"switch\",\"lat_us\":1}%s%s%s}",
             nodes, per, faults ? ",\"faults\":[" : "", faults ? faults : "",
             faults ? "]" : "");
    hccn_cluster_opts_t o = {.struct_size = sizeof(o), .jitter_us = 300};
    hccn_cluster_t *cl = NULL;
    if (hccn_cluster_create_json(json, "recovery", &o, &cl) != HCCN_OK)
        fail_msg("%s", hccn_last_error());
    return cl;
}

/* ---------------------------------------------------------------- revoke */

typedef struct {
    hccn_status_t rc[MAXR];
    hccn_status_t later[MAXR];    /* an operation after the revoke */
} revoke_res_t;

/* Rank 0 computes, then revokes the world; every other rank is blocked
 * in an operation that needs rank 0 (a different kind each). */
static hccn_status_t revoke_rank(hccn_ctx_t *ctx, void *arg)
{
    revoke_res_t *r = arg;
    int me = hccn_rank(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx);
    float *b = NULL;
    hccn_future_t *f = NULL;
    hccn_status_t rc = HCCN_OK;
    assert_int_equal(hccn_malloc(ctx, 4096, (void **)&b), HCCN_OK);
    memset(b, 0, 4096);
    switch (me) {
    case 0:
        hccn_compute(ctx, 50e-6);
        rc = hccn_comm_revoke(w);
        break;
    case 1: rc = hccn_allreduce(w, b, b, 16, HCCN_FP32, HCCN_SUM); break;
    case 2: rc = hccn_recv(w, b, 16, HCCN_FP32, 0); break;
    case 3:
        rc = hccn_irecv(w, b, 16, HCCN_FP32, 0, &f);
        if (rc == HCCN_OK)
            rc = hccn_wait(f);
        break;
    case 4:
        hccn_group_start(ctx);
        hccn_send(w, b, 16, HCCN_FP32, 0);
        hccn_recv(w, b + 16, 16, HCCN_FP32, 0);
        rc = hccn_group_end(ctx);
        break;
    case 5:
        rc = hccn_iallreduce(w, b, b, 16, HCCN_FP32, HCCN_SUM, &f);
        if (rc == HCCN_OK)
            rc = hccn_wait(f);
        break;
    case 6: rc = hccn_send(w, b, 1 << 10, HCCN_FP32, 0); break;
    default: rc = hccn_barrier(w); break;
    }
    r->rc[me] = rc;
    r->later[me] = hccn_broadcast(w, b, b, 4, HCCN_FP32, 0);
    if (f != NULL)
        hccn_future_free(f);
    hccn_free(ctx, b);
    return HCCN_OK;
}

static void test_revoke_any_kind(void **state)
{
    (void)state;
    hccn_cluster_t *cl = make(1, 8, NULL);
    revoke_res_t r;
    memset(&r, 0, sizeof(r));
    assert_int_equal(hccn_cluster_run(cl, revoke_rank, &r, NULL), HCCN_OK);
    assert_int_equal(r.rc[0], HCCN_OK);
    for (int q = 1; q < 8; q++) {
        if (r.rc[q] != HCCN_ERR_REVOKED)
            fail_msg("rank %d: %s", q, hccn_status_name(r.rc[q]));
    }
    for (int q = 0; q < 8; q++)
        assert_int_equal(r.later[q], HCCN_ERR_REVOKED);
    hccn_cluster_destroy(cl);
}

/* ---------------------------------------------------------------- shrink */

typedef struct {
    int nranks;
    int dead[MAXR];               /* 1: its NPU fails at 20 us */
    int size[MAXR], rank[MAXR];   /* on the shrunk communicator */
    int nfailed[MAXR], failed[MAXR][MAXR];
    double sum[MAXR];             /* the allreduce on it, element 3 */
    hccn_status_t rc[MAXR];
} shrink_res_t;

static double value(int rank, int i) { return (double)(rank * 100 + i); }

/* Every rank computes 30 us, then an allreduce on the world; the dead
 * fail, the survivors revoke, shrink and allreduce again. */
static hccn_status_t shrink_rank(hccn_ctx_t *ctx, void *arg)
{
    shrink_res_t *r = arg;
    int me = hccn_rank(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx), *nc = NULL;
    double *b = NULL;
    if (hccn_malloc(ctx, LEN * sizeof(double), (void **)&b) != HCCN_OK)
        return HCCN_ERR_NOMEM;
    for (int i = 0; i < LEN; i++)
        b[i] = value(me, i);
    hccn_status_t rc = hccn_compute(ctx, 30e-6);
    if (rc == HCCN_OK)
        rc = hccn_allreduce(w, b, b, LEN, HCCN_FP64, HCCN_SUM);
    if (rc == HCCN_OK)
        fail_msg("rank %d: the allreduce did not fail", me);
    if (r->dead[me]) {
        r->rc[me] = rc;
        hccn_free(ctx, b);
        return rc;
    }
    assert_int_equal(hccn_comm_revoke(w), HCCN_OK);
    r->rc[me] = hccn_comm_shrink(w, &nc);
    if (r->rc[me] != HCCN_OK)
        fail_msg("rank %d: %s", me, hccn_last_error());
    r->size[me] = hccn_comm_size(nc);
    r->rank[me] = hccn_comm_rank(nc);
    assert_int_equal(hccn_comm_failed(w, r->failed[me], MAXR,
                                      &r->nfailed[me]), HCCN_OK);
    for (int i = 0; i < LEN; i++)
        b[i] = value(me, i);
    assert_int_equal(hccn_allreduce(nc, b, b, LEN, HCCN_FP64, HCCN_SUM),
                     HCCN_OK);
    r->sum[me] = b[3];
    assert_int_equal(hccn_comm_destroy(nc), HCCN_OK);
    hccn_free(ctx, b);
    return HCCN_OK;
}

/* Shrinks a 16-rank cluster (nodes x per) after the listed NPUs fail. */
static void shrink_case(int nodes, int per, const int *dead, int ndead)
{
    char faults[1024] = "";
    size_t n = 0;
    shrink_res_t r;
    memset(&r, 0, sizeof(r));
    r.nranks = nodes * per;
    for (int i = 0; i < ndead; i++) {
        n += (size_t)snprintf(faults + n, sizeof(faults) - n,
                              "%s{\"kind\":\"npu_fail\",\"npu\":%d,"
                              "\"at_us\":20}", i ? "," : "", dead[i]);
        r.dead[dead[i]] = 1;
    }
    hccn_cluster_t *cl = make(nodes, per, faults);
    hccn_status_t st[MAXR];
    hccn_cluster_run(cl, shrink_rank, &r, st);
    double want = 0.0;
    int survivors = 0;
    for (int q = 0; q < r.nranks; q++)
        if (!r.dead[q]) {
            want += value(q, 3);
            survivors++;
        }
    int next = 0;
    for (int q = 0; q < r.nranks; q++) {
        if (r.dead[q]) {
            assert_int_equal(st[q], HCCN_ERR_FAULT);
            continue;
        }
        assert_int_equal(st[q], HCCN_OK);
        assert_int_equal(r.size[q], survivors);
        assert_int_equal(r.rank[q], next++);
        assert_true(r.sum[q] == want);
        assert_int_equal(r.nfailed[q], ndead);
        for (int i = 0; i < ndead; i++)
            assert_int_equal(r.failed[q][i], dead[i]);
    }
    hccn_cluster_destroy(cl);
}

static void test_shrink_one(void **state)
{
    (void)state;
    int dead[] = {5};
    shrink_case(2, 8, dead, 1);
}

static void test_shrink_two(void **state)
{
    (void)state;
    int dead[] = {0, 13};
    shrink_case(2, 8, dead, 2);
}

static void test_shrink_fifteen(void **state)
{
    (void)state;
    int dead[15];
    for (int i = 0; i < 15; i++)
        dead[i] = i + 1;
    shrink_case(2, 8, dead, 15);
}

static void test_shrink_node(void **state)
{
    (void)state;
    int dead[] = {8, 9, 10, 11, 12, 13, 14, 15};
    shrink_case(2, 8, dead, 8);
}

/* ----------------------------------------------------------------- agree */

typedef struct {
    int flag[MAXR];
    hccn_status_t rc[MAXR];
    int nfailed[MAXR], failed[MAXR][4];
} agree_res_t;

/* Every rank votes all bits but its own; rank 7 fails at 3 us, during the
 * first round of the agreement. */
static hccn_status_t agree_rank(hccn_ctx_t *ctx, void *arg)
{
    agree_res_t *r = arg;
    int me = hccn_rank(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx);
    int flag = ~(1 << me);
    r->rc[me] = hccn_comm_agree(w, &flag);
    r->flag[me] = flag;
    if (r->rc[me] == HCCN_OK)
        hccn_comm_failed(w, r->failed[me], 4, &r->nfailed[me]);
    return r->rc[me];
}

static void test_agree_failure_during(void **state)
{
    (void)state;
    hccn_cluster_t *cl =
        make(2, 8, "{\"kind\":\"npu_fail\",\"npu\":7,\"at_us\":3}");
    agree_res_t r;
    memset(&r, 0, sizeof(r));
    hccn_status_t st[MAXR];
    hccn_cluster_run(cl, agree_rank, &r, st);
    int want = ~0;
    for (int q = 0; q < 16; q++)
        if (q != 7)
            want &= ~(1 << q);
    for (int q = 0; q < 16; q++) {
        if (q == 7) {
            assert_int_equal(r.rc[q], HCCN_ERR_FAULT);
            continue;
        }
        if (r.rc[q] != HCCN_OK)
            fail_msg("rank %d: %s", q, hccn_status_name(r.rc[q]));
        assert_int_equal(r.flag[q], want);
        assert_int_equal(r.nfailed[q], 1);
        assert_int_equal(r.failed[q][0], 7);
    }
    hccn_cluster_destroy(cl);
}

/* ------------------------------------------------------------------ grow */

typedef struct {
    int size[MAXR], rank[MAXR];
    double sum[MAXR];
} grow_res_t;

/* 17 NPUs: ranks 0-15 work on a communicator, 16 is a spare. NPU 5 fails;
 * the survivors shrink, then grow by the spare, and allreduce. */
static hccn_status_t grow_rank(hccn_ctx_t *ctx, void *arg)
{
    grow_res_t *r = arg;
    int me = hccn_rank(ctx), spare[] = {16}, team[16];
    for (int i = 0; i < 16; i++)
        team[i] = i;
    hccn_comm_t *w = hccn_comm_world(ctx), *c = NULL, *s = NULL, *g = NULL;
    assert_int_equal(hccn_comm_create(w, team, 16, &c), HCCN_OK);
    double *b = NULL;
    if (hccn_malloc(ctx, LEN * sizeof(double), (void **)&b) != HCCN_OK)
        return HCCN_ERR_NOMEM;
    for (int i = 0; i < LEN; i++)
        b[i] = value(me, i);
    if (me == 16) {
        if (hccn_comm_grow(NULL, spare, 1, &g) != HCCN_OK)
            fail_msg("spare: %s", hccn_last_error());
    } else {
        hccn_status_t rc = hccn_compute(ctx, 30e-6);
        if (rc == HCCN_OK)
            rc = hccn_allreduce(c, b, b, LEN, HCCN_FP64, HCCN_SUM);
        assert_int_not_equal(rc, HCCN_OK);
        if (me == 5) {
            hccn_free(ctx, b);
            return rc;
        }
        hccn_comm_revoke(c);
        if (hccn_comm_shrink(c, &s) != HCCN_OK ||
            hccn_comm_grow(s, spare, 1, &g) != HCCN_OK)
            fail_msg("rank %d: %s", me, hccn_last_error());
    }
    r->size[me] = hccn_comm_size(g);
    r->rank[me] = hccn_comm_rank(g);
    for (int i = 0; i < LEN; i++)
        b[i] = value(me, i);
    assert_int_equal(hccn_allreduce(g, b, b, LEN, HCCN_FP64, HCCN_SUM),
                     HCCN_OK);
    r->sum[me] = b[3];
    hccn_free(ctx, b);
    return HCCN_OK;
}

static void test_grow_spare(void **state)
{
    (void)state;
    hccn_cluster_t *cl =
        make(1, 17, "{\"kind\":\"npu_fail\",\"npu\":5,\"at_us\":20}");
    grow_res_t r;
    memset(&r, 0, sizeof(r));
    hccn_status_t st[MAXR];
    hccn_cluster_run(cl, grow_rank, &r, st);
    double want = 0.0;
    for (int q = 0; q < 17; q++)
        if (q != 5)
            want += value(q, 3);
    for (int q = 0, next = 0; q < 17; q++) {
        if (q == 5) {
            assert_int_equal(st[q], HCCN_ERR_FAULT);
            continue;
        }
        assert_int_equal(st[q], HCCN_OK);
        assert_int_equal(r.size[q], 16);
        assert_int_equal(r.rank[q], next++);
        assert_true(r.sum[q] == want);
    }
    hccn_cluster_destroy(cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_revoke_any_kind),
        cmocka_unit_test(test_shrink_one),
        cmocka_unit_test(test_shrink_two),
        cmocka_unit_test(test_shrink_fifteen),
        cmocka_unit_test(test_shrink_node),
        cmocka_unit_test(test_agree_failure_during),
        cmocka_unit_test(test_grow_spare),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
