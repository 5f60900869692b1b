/* Reliability: mismatched calls, deadlocks, ranks that leave early, aborts
 * and planned faults. Every case asserts the status on every rank and the
 * key facts of the messages; none may hang. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "device_sim/topo.h"
#include "hccn/hccn.h"
#include "test_util.h"

#define N 4
#define MSG 4096

static const char *quad =
    "{\"version\":1,\"node_types\":[{\"count\":1,"
    "\"npu\":{\"count\":4,\"arena_MiB\":16,\"reduce_bw_GBps\":100},"
    "\"fabric\":{\"type\":\"mesh\",\"bw_GBps\":10,\"lat_us\":2}}]}";

typedef struct {
    int scenario;
    hccn_status_t rc[16];
    char msg[16][MSG];
    double t[16];
    float out[16];
} res_t;

static hccn_status_t note(res_t *r, int rank, hccn_status_t rc)
{
    r->rc[rank] = rc;
    snprintf(r->msg[rank], MSG, "%s", rc == HCCN_OK ? "" : hccn_last_error());
    return HCCN_OK;   /* the test judges; the run itself succeeds */
}

/* Every cluster here runs under host-load stress (jitter_us): ranks sleep
 * at random in their waits, so that each report below must come out the
 * same whichever rank the host runs first (an aborting rank that then
 * returns is reported as the abort, not as a rank that left). */
static hccn_cluster_t *make(const char *json)
{
    hccn_cluster_t *cl = NULL;
    hccn_cluster_opts_t o = {.struct_size = sizeof(o), .jitter_us = 500};
    assert_int_equal(hccn_cluster_create_json(json, "quad", &o, &cl), HCCN_OK);
    return cl;
}

/* --------------------------------------------------------------- mismatch */

enum { MM_COUNT, MM_DTYPE, MM_OP, MM_ROOT, MM_KIND };

static hccn_status_t mismatch_rank(hccn_ctx_t *ctx, void *arg)
{
    res_t *r = arg;
    int me = hccn_rank(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx);
    float *b;
    hccn_malloc(ctx, 4096, (void **)&b);
    for (int i = 0; i < 64; i++)
        b[i] = 7.0f;
    int odd = me == 2;   /* rank 2 disagrees */
    hccn_status_t rc = HCCN_OK;
    switch (r->scenario) {
    case MM_COUNT:
        rc = hccn_allreduce(w, b, b, odd ? 32 : 16, HCCN_FP32, HCCN_SUM);
        break;
    case MM_DTYPE:
        rc = hccn_allreduce(w, b, b, 16, odd ? HCCN_INT32 : HCCN_FP32, HCCN_SUM);
        break;
    case MM_OP:
        rc = hccn_allreduce(w, b, b, 16, HCCN_FP32, odd ? HCCN_MAX : HCCN_SUM);
        break;
    case MM_ROOT:
        rc = hccn_broadcast(w, b, b, 16, HCCN_FP32, odd ? 1 : 0);
        break;
    case MM_KIND:
        rc = odd ? hccn_allgather(w, b, b + 16 * me, 16, HCCN_FP32)
                 : hccn_allreduce(w, b, b, 16, HCCN_FP32, HCCN_SUM);
        break;
    }
    r->out[me] = b[0];
    note(r, me, rc);
    /* The communicator is broken now: the next call fails at once. */
    if (hccn_allreduce(w, b, b, 16, HCCN_FP32, HCCN_SUM) != HCCN_ERR_MISMATCH)
        r->rc[me] = HCCN_ERR_INTERNAL;
    return HCCN_OK;
}

enum { MM_REPEAT = 40 };

static void test_mismatch(void **state)
{
    (void)state;
    hccn_cluster_t *cl = make(quad);
    const char *what[] = {"count=32", "int32", "max", "root=1", "allgather"};
    /* Repeated: a rank told of the mismatch calls again at once, and must
     * find the communicator broken whichever rank arrived last. */
    for (int i = 0; i < MM_REPEAT * (MM_KIND - MM_COUNT + 1); i++) {
        int s = MM_COUNT + i % (MM_KIND - MM_COUNT + 1);
        res_t r = {.scenario = s};
        assert_int_equal(hccn_cluster_run(cl, mismatch_rank, &r, NULL), HCCN_OK);
        for (int k = 0; k < N; k++) {
            assert_int_equal(r.rc[k], HCCN_ERR_MISMATCH);
            /* Names the disagreeing rank and both calls. */
            assert_non_null(strstr(r.msg[k], "rank 2"));
            assert_non_null(strstr(r.msg[k], what[s]));
            /* No partial write: buffers keep their input. */
            assert_true(r.out[k] == 7.0f);
        }
    }
    hccn_cluster_destroy(cl);
}

/* ----------------------------------------------- deadlock, early leavers */

static hccn_status_t deadlock_rank(hccn_ctx_t *ctx, void *arg)
{
    res_t *r = arg;
    int me = hccn_rank(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx);
    float *b;
    hccn_malloc(ctx, 4096, (void **)&b);
    hccn_status_t rc;
    if (r->scenario == 0) {
        /* Everyone receives first: nobody ever sends. */
        rc = hccn_recv(w, b, 16, HCCN_FP32, (me + 1) % N);
    } else {
        /* Rank 3 returns without joining the barrier. */
        rc = me == 3 ? HCCN_OK : hccn_barrier(w);
    }
    return note(r, me, rc);
}

static void test_deadlock_and_leaver(void **state)
{
    (void)state;
    /* A long timeout: both must be reported long before it. */
    setenv("HCCN_TIMEOUT", "120", 1);
    hccn_cluster_t *cl = make(quad);
    unsetenv("HCCN_TIMEOUT");
    res_t r = {.scenario = 0};
    assert_int_equal(hccn_cluster_run(cl, deadlock_rank, &r, NULL), HCCN_OK);
    for (int k = 0; k < N; k++) {
        assert_int_equal(r.rc[k], HCCN_ERR_TIMEOUT);
        assert_non_null(strstr(r.msg[k], "deadlock"));
        /* The report lists every rank's state. */
        assert_non_null(strstr(r.msg[k], "rank 0 waits in recv #0 from comm rank 1"));
        assert_non_null(strstr(r.msg[k], "rank 3 waits in recv #0 from comm rank 0"));
    }
    memset(&r, 0, sizeof(r));
    r.scenario = 1;
    assert_int_equal(hccn_cluster_run(cl, deadlock_rank, &r, NULL), HCCN_OK);
    assert_int_equal(r.rc[3], HCCN_OK);
    for (int k = 0; k < 3; k++) {
        /* Blames a rank that left (3, or one that left after failing
         * because of 3); the report shows 3 gone and who never arrived. */
        assert_int_equal(r.rc[k], HCCN_ERR_REMOTE);
        /* A rank that calls after the communicator broke quotes the error
         * that broke it. */
        assert_non_null(strstr(r.msg[k], "returned from its function without"));
        assert_non_null(strstr(r.msg[k], "rank 3 returned from its function"));
        assert_non_null(strstr(r.msg[k], "not arrived:"));
    }
    hccn_cluster_destroy(cl);
}

/* ------------------------------------------------------------------ abort */

static hccn_status_t abort_rank(hccn_ctx_t *ctx, void *arg)
{
    res_t *r = arg;
    int me = hccn_rank(ctx);
    hccn_comm_t *sub;
    hccn_status_t rc = hccn_comm_split(hccn_comm_world(ctx), 0, me, &sub);
    if (rc != HCCN_OK)
        return note(r, me, rc);
    float *b;
    hccn_malloc(ctx, 4096, (void **)&b);
    if (me == 0) {
        hccn_compute(ctx, 1e-3);
        rc = hccn_comm_abort(sub);
        note(r, me, rc);
        /* Later calls on it fail at once too. */
        if (hccn_allreduce(sub, b, b, 16, HCCN_FP32, HCCN_SUM) == HCCN_OK)
            r->rc[me] = HCCN_ERR_INTERNAL;
        return HCCN_OK;
    }
    return note(r, me, hccn_allreduce(sub, b, b, 16, HCCN_FP32, HCCN_SUM));
}

/* Twenty runs: whether the waiting ranks see the abort before or after
 * rank 0 has returned is up to the host (and the jitter). */
static void test_abort(void **state)
{
    (void)state;
    hccn_cluster_t *cl = make(quad);
    for (int run = 0; run < 20; run++) {
        res_t r = {0};
        assert_int_equal(hccn_cluster_run(cl, abort_rank, &r, NULL), HCCN_OK);
        assert_int_equal(r.rc[0], HCCN_OK);
        for (int k = 1; k < N; k++) {
            if (r.rc[k] != HCCN_ERR_ABORTED)
                fail_msg("run %d rank %d: %s", run, k, r.msg[k]);
            assert_non_null(strstr(r.msg[k], "aborted"));
        }
    }
    hccn_cluster_destroy(cl);
}

/* ------------------------------------------------------------------ faults */

static hccn_status_t send01_rank(hccn_ctx_t *ctx, void *arg)
{
    res_t *r = arg;
    int me = hccn_rank(ctx);
    if (me > 1)
        return HCCN_OK;
    char *b;
    hccn_malloc(ctx, 1 << 20, (void **)&b);
    hccn_comm_t *w = hccn_comm_world(ctx);
    hccn_status_t rc = me == 0 ? hccn_send(w, b, 1 << 20, HCCN_UINT8, 1)
                               : hccn_recv(w, b, 1 << 20, HCCN_UINT8, 0);
    r->t[me] = hccn_time(ctx);
    return note(r, me, rc);
}

static void test_link_faults(void **state)
{
    (void)state;
    const double B = 10e9, lat = 2e-6, n = 1 << 20;
    hccn_cluster_t *cl = make(quad);
    hccn_fault_t f = {sizeof(f), HCCN_FAULT_LINK_SLOW, "node0.npu0->node0.npu1",
                      0, 0.0, 0.5};
    /* Half the bandwidth from the start. */
    assert_int_equal(hccn_cluster_add_fault(cl, &f), HCCN_OK);
    res_t r = {0};
    assert_int_equal(hccn_cluster_run(cl, send01_rank, &r, NULL), HCCN_OK);
    assert_int_equal(r.rc[1], HCCN_OK);
    assert_true(test_rel_diff(r.t[1], lat + n / (0.5 * B)) < 1e-9);

    /* Slowed half way through the drain: n/2 at B, then n/2 at B/2. */
    hccn_cluster_clear_faults(cl);
    f.at_s = 0.5 * n / B;
    assert_int_equal(hccn_cluster_add_fault(cl, &f), HCCN_OK);
    res_t r2 = {0};
    assert_int_equal(hccn_cluster_run(cl, send01_rank, &r2, NULL), HCCN_OK);
    assert_true(test_rel_diff(r2.t[1], lat + 0.5 * n / B + 0.5 * n / (0.5 * B)) < 1e-9);
    /* Same plan, same times. */
    res_t r3 = {0};
    assert_int_equal(hccn_cluster_run(cl, send01_rank, &r3, NULL), HCCN_OK);
    assert_memory_equal(&r3.t[1], &r2.t[1], sizeof(double));

    /* Down, and so are NPU 0's links to the NPUs that could relay
     * (tests/coll/test_fault_route.c): the transfer fails on both sides,
     * naming the link. */
    hccn_cluster_clear_faults(cl);
    f.kind = HCCN_FAULT_LINK_DOWN;
    f.at_s = 0.0;
    const char *relays[] = {"node0.npu0->node0.npu2", "node0.npu0->node0.npu3"};
    for (int k = 0; k < 2; k++) {
        hccn_fault_t g = f;
        g.link = relays[k];
        assert_int_equal(hccn_cluster_add_fault(cl, &g), HCCN_OK);
    }
    assert_int_equal(hccn_cluster_add_fault(cl, &f), HCCN_OK);
    res_t r4 = {0};
    assert_int_equal(hccn_cluster_run(cl, send01_rank, &r4, NULL), HCCN_OK);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(r4.rc[k], HCCN_ERR_FAULT);
        assert_non_null(strstr(r4.msg[k], "node0.npu0->node0.npu1"));
    }
    /* Bad plans are refused with the reason. */
    f.link = "node0.npu0->nowhere";
    assert_int_equal(hccn_cluster_add_fault(cl, &f), HCCN_ERR_INVALID);
    assert_non_null(strstr(hccn_last_error(), "no link"));
    hccn_cluster_destroy(cl);
}

/* A ring of four NPUs, links both ways unless one_way. */
static hccn_cluster_t *make_ring(int one_way)
{
    char json[512];
    snprintf(json, sizeof(json),
             "{\"version\":1,\"node_types\":[{\"count\":1,"
             "\"npu\":{\"count\":4,\"arena_MiB\":16,\"reduce_bw_GBps\":100},"
             "\"fabric\":{\"type\":\"ring\",\"bw_GBps\":10,\"lat_us\":2,"
             "\"bidirectional\":%s}}]}", one_way ? "false" : "true");
    return make(json);
}

static hccn_status_t ring_allreduce_rank(hccn_ctx_t *ctx, void *arg)
{
    res_t *r = arg;
    int me = hccn_rank(ctx);
    float *b;
    hccn_malloc(ctx, 1 << 20, (void **)&b);
    for (int i = 0; i < 1024; i++)
        b[i] = (float)(me + 1);
    hccn_status_t rc = hccn_allreduce(hccn_comm_world(ctx), b, b, 1024,
                                      HCCN_FP32, HCCN_SUM);
    r->t[me] = hccn_time(ctx);
    r->out[me] = b[1023];
    return note(r, me, rc);
}

static void test_link_reroute(void **state)
{
    (void)state;
    /* The other way round the ring: 0 -> 3 -> 2 -> 1, three hops. */
    const double B = 10e9, hop = 2e-6, n = 1 << 20;
    hccn_cluster_t *cl = make_ring(0);
    hccn_fault_t f = {sizeof(f), HCCN_FAULT_LINK_DOWN, "node0.npu0->node0.npu1",
                      0, 0.0, 0.0};
    assert_int_equal(hccn_cluster_add_fault(cl, &f), HCCN_OK);
    res_t r = {0};
    assert_int_equal(hccn_cluster_run(cl, send01_rank, &r, NULL), HCCN_OK);
    assert_int_equal(r.rc[0], HCCN_OK);
    assert_int_equal(r.rc[1], HCCN_OK);
    assert_true(test_rel_diff(r.t[1], 3 * hop + n / B) < 1e-9);

    /* Down half way through the drain: the rest goes round, and arrives
     * the long way's latency after the last byte left. */
    hccn_cluster_clear_faults(cl);
    f.at_s = 0.5 * n / B;
    assert_int_equal(hccn_cluster_add_fault(cl, &f), HCCN_OK);
    res_t r2 = {0};
    assert_int_equal(hccn_cluster_run(cl, send01_rank, &r2, NULL), HCCN_OK);
    assert_int_equal(r2.rc[1], HCCN_OK);
    assert_true(test_rel_diff(r2.t[1], 3 * hop + n / B) < 1e-9);

    /* A whole collective goes round too: right sums, later than without. */
    res_t ok = {0}, late = {0};
    hccn_cluster_clear_faults(cl);
    assert_int_equal(hccn_cluster_run(cl, ring_allreduce_rank, &ok, NULL),
                     HCCN_OK);
    f.at_s = 0.0;
    assert_int_equal(hccn_cluster_add_fault(cl, &f), HCCN_OK);
    assert_int_equal(hccn_cluster_run(cl, ring_allreduce_rank, &late, NULL),
                     HCCN_OK);
    for (int k = 0; k < N; k++) {
        assert_int_equal(late.rc[k], HCCN_OK);
        assert_true(late.out[k] == 10.0f);
        assert_true(late.t[k] >= ok.t[k]);
    }
    assert_true(late.t[1] > ok.t[1]);   /* rank 1 receives the long way */
    hccn_cluster_destroy(cl);

    /* A one-way ring has no other route: the transfer fails. */
    cl = make_ring(1);
    f.at_s = 0.0;
    assert_int_equal(hccn_cluster_add_fault(cl, &f), HCCN_OK);
    res_t r3 = {0};
    assert_int_equal(hccn_cluster_run(cl, send01_rank, &r3, NULL), HCCN_OK);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(r3.rc[k], HCCN_ERR_FAULT);
        assert_non_null(strstr(r3.msg[k], "node0.npu0->node0.npu1"));
    }
    hccn_cluster_destroy(cl);
}

static hccn_status_t npu_rank(hccn_ctx_t *ctx, void *arg)
{
    res_t *r = arg;
    int me = hccn_rank(ctx);
    float *b;
    hccn_malloc(ctx, 4096, (void **)&b);
    hccn_compute(ctx, 1e-3);
    r->t[me] = hccn_time(ctx);
    hccn_status_t rc = hccn_allreduce(hccn_comm_world(ctx), b, b, 64, HCCN_FP32,
                                      HCCN_SUM);
    return note(r, me, rc);
}

static void test_npu_faults(void **state)
{
    (void)state;
    /* From the topology file: NPU 1 is 3x slower; NPU 2 fails at 0.5 ms. */
    char json[1024];
    snprintf(json, sizeof(json),
             "%.*s,\"faults\":[{\"kind\":\"npu_slow\",\"npu\":1,\"factor\":3},"
             "{\"kind\":\"npu_fail\",\"npu\":2,\"at_us\":500}]}",
             (int)strlen(quad) - 1, quad);
    hccn_cluster_t *cl = make(json);
    res_t r = {0};
    assert_int_equal(hccn_cluster_run(cl, npu_rank, &r, NULL), HCCN_OK);
    assert_true(test_rel_diff(r.t[0], 1e-3) < 1e-12);
    assert_true(test_rel_diff(r.t[1], 3e-3) < 1e-12);
    assert_int_equal(r.rc[2], HCCN_ERR_FAULT);
    assert_non_null(strstr(r.msg[2], "NPU 2 failed at 500.000 us"));
    for (int k = 0; k < N; k++) {
        if (k == 2)
            continue;
        assert_int_equal(r.rc[k], HCCN_ERR_REMOTE);
        assert_non_null(strstr(r.msg[k], "NPU 2 failed"));
    }
    hccn_cluster_destroy(cl);

    /* A fault naming what is not there is an error at load, with its path. */
    snprintf(json, sizeof(json),
             "%.*s,\"faults\":[{\"kind\":\"link_down\",\"link\":\"a->b\"}]}",
             (int)strlen(quad) - 1, quad);
    hccn_cluster_t *bad = NULL;
    assert_int_equal(hccn_cluster_create_json(json, "quad", NULL, &bad),
                     HCCN_ERR_TOPOLOGY);
    assert_null(bad);
    assert_non_null(strstr(hccn_last_error(), "faults[0].link"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mismatch),
        cmocka_unit_test(test_deadlock_and_leaver),
        cmocka_unit_test(test_abort),
        cmocka_unit_test(test_link_faults),
        cmocka_unit_test(test_link_reroute),
        cmocka_unit_test(test_npu_faults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
