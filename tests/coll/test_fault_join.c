/* An NPU fails while a collective that needs it waits for a late member.
 *
 * Ranks 0 and 1 call a world allreduce at once; ranks 2 and 3 first run a
 * long allreduce of their own, which ends at T, well after NPU 0 fails at
 * F. The world call cannot start before T (its members start together).
 * Its failure is therefore reported at T, when the last member arrives:
 * rank 0 gets HCCN_ERR_FAULT, the others HCCN_ERR_REMOTE, every clock
 * stands at T, and the late pair's own allreduce is exact.
 *
 * The bug this pins (found by the soak benchmark's fault run): the failure
 * ended the early members' share of the call at F, before the late pair
 * had called it. Their clocks then held the engine's horizon at F, the
 * late pair could never learn that its allreduce had ended at T > F, and
 * every rank reported a deadlock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hccn/hccn.h"

#define N 4
#define BIG (1u << 20)      /* floats: 4 MiB, some 400 us at 10 GB/s */
#define SMALL 64
#define MSG 2048
#define FAIL_S 100e-6

static const char *quad =
    "{\"version\":1,\"node_types\":[{\"count\":1,"
    "\"npu\":{\"count\":4,\"arena_MiB\":16,\"reduce_bw_GBps\":100},"
    "\"fabric\":{\"type\":\"mesh\",\"bw_GBps\":10,\"lat_us\":2}}]}";

typedef struct {
    hccn_status_t pair[N], world[N];
    char msg[N][MSG];
    double t_pair[N], t_world[N];
    long wrong[N];
} res_t;

/* The late pair's allreduce: ranks 2 and 3 add 2 + 3 in every element. */
static hccn_status_t pair_call(hccn_ctx_t *ctx, res_t *r, hccn_comm_t *pair)
{
    int me = hccn_rank(ctx);
    float *b;
    hccn_status_t rc = hccn_malloc(ctx, BIG * sizeof(float), (void **)&b);
    if (rc != HCCN_OK)
        return rc;
    for (uint32_t i = 0; i < BIG; i++)
        b[i] = (float)me;
    rc = hccn_allreduce(pair, b, b, BIG, HCCN_FP32, HCCN_SUM);
    for (uint32_t i = 0; rc == HCCN_OK && i < BIG; i++)
        r->wrong[me] += b[i] != 5.0f;
    r->t_pair[me] = hccn_time(ctx);
    hccn_free(ctx, b);
    return rc;
}

static hccn_status_t join_rank(hccn_ctx_t *ctx, void *arg)
{
    res_t *r = arg;
    int me = hccn_rank(ctx);
    hccn_comm_t *pair;
    float *s;
    if (hccn_comm_split(hccn_comm_world(ctx), me >= 2, me, &pair) != HCCN_OK ||
        hccn_malloc(ctx, SMALL * sizeof(float), (void **)&s) != HCCN_OK)
        return HCCN_ERR_INTERNAL;
    if (me >= 2)
        r->pair[me] = pair_call(ctx, r, pair);
    r->world[me] = hccn_allreduce(hccn_comm_world(ctx), s, s, SMALL,
                                  HCCN_FP32, HCCN_SUM);
    snprintf(r->msg[me], MSG, "%s",
             r->world[me] == HCCN_OK ? "" : hccn_last_error());
    r->t_world[me] = hccn_time(ctx);
    hccn_free(ctx, s);
    hccn_comm_destroy(pair);
    return HCCN_OK;
}

static void test_failure_waits_for_the_join(void **state)
{
    (void)state;
    hccn_cluster_t *cl = NULL;
    hccn_cluster_opts_t o = {.struct_size = sizeof(o), .jitter_us = 200};
    assert_int_equal(hccn_cluster_create_json(quad, "quad", &o, &cl), HCCN_OK);
    hccn_fault_t f = {.struct_size = sizeof(f), .kind = HCCN_FAULT_NPU_FAIL,
                      .npu = 0, .at_s = FAIL_S};
    assert_int_equal(hccn_cluster_add_fault(cl, &f), HCCN_OK);
    static res_t r;
    assert_int_equal(hccn_cluster_run(cl, join_rank, &r, NULL), HCCN_OK);
    hccn_cluster_destroy(cl);

    /* The pair's call is unaffected and long: it ends at T > F. */
    double t_end = r.t_pair[2];
    for (int k = 2; k < N; k++) {
        assert_int_equal(r.pair[k], HCCN_OK);
        assert_int_equal(r.wrong[k], 0);
        assert_true(r.t_pair[k] == t_end);
    }
    assert_true(t_end > 2 * FAIL_S);
    /* The world call fails, not deadlocks: the failed NPU says so, its
     * peers name it. */
    assert_int_equal(r.world[0], HCCN_ERR_FAULT);
    assert_non_null(strstr(r.msg[0], "NPU 0 failed at 100.000 us"));
    for (int k = 1; k < N; k++) {
        assert_int_equal(r.world[k], HCCN_ERR_REMOTE);
        assert_non_null(strstr(r.msg[k], "allreduce #"));
        assert_null(strstr(r.msg[k], "deadlock"));
    }
    /* At T, when its last member called it, on every rank. */
    for (int k = 0; k < N; k++) {
        assert_true(r.t_world[k] == t_end);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_failure_waits_for_the_join),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
