/* A broken communicator's message gives advice a program can follow, and
 * following it works: a broken world cannot be destroyed, but the next
 * hccn_cluster_run has a working one; a broken sub-communicator is
 * destroyed and made again from the world. Results are checked against the
 * closed form 1 + 2 + ... + N. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "hccn/hccn.h"

#define N 4
#define COUNT 16
#define MSG 2048

static const char *quad =
    "{\"version\":1,\"node_types\":[{\"count\":1,"
    "\"npu\":{\"count\":4,\"arena_MiB\":16,\"reduce_bw_GBps\":100},"
    "\"fabric\":{\"type\":\"mesh\",\"bw_GBps\":10,\"lat_us\":2}}]}";

static const char *world_advice =
    "the world communicator cannot be destroyed or repaired during this "
    "run: return from the rank function, and call hccn_cluster_run again "
    "for a working one";
static const char *sub_advice =
    "destroy it (hccn_comm_destroy) and make a new one (hccn_comm_split or "
    "hccn_comm_create) from a communicator that works";

typedef struct {
    hccn_status_t first[N], later[N], destroy[N], redo[N];
    char msg[N][MSG];
    float sum[N];
} res_t;

/* An allreduce of rank + 1 on comm; the sum lands in *sum. */
static hccn_status_t sum_ranks(hccn_ctx_t *ctx, hccn_comm_t *comm, float *b,
                               float *sum)
{
    for (int i = 0; i < COUNT; i++)
        b[i] = (float)(hccn_rank(ctx) + 1);
    hccn_status_t rc = hccn_allreduce(comm, b, b, COUNT, HCCN_FP32, HCCN_SUM);
    *sum = b[COUNT - 1];
    return rc;
}

/* Breaks comm by a count mismatch (rank 2 differs), then calls it again. */
static void break_and_retry(hccn_ctx_t *ctx, hccn_comm_t *comm, float *b,
                            res_t *r)
{
    int me = hccn_rank(ctx);
    r->first[me] = hccn_allreduce(comm, b, b, me == 2 ? 2 * COUNT : COUNT,
                                  HCCN_FP32, HCCN_SUM);
    r->later[me] = hccn_allreduce(comm, b, b, COUNT, HCCN_FP32, HCCN_SUM);
    snprintf(r->msg[me], MSG, "%s", hccn_last_error());
}

static hccn_status_t world_rank(hccn_ctx_t *ctx, void *arg)
{
    res_t *r = arg;
    int me = hccn_rank(ctx);
    float *b;
    if (hccn_malloc(ctx, 2 * COUNT * sizeof(float), (void **)&b) != HCCN_OK)
        return HCCN_ERR_NOMEM;
    break_and_retry(ctx, hccn_comm_world(ctx), b, r);
    r->destroy[me] = hccn_comm_destroy(hccn_comm_world(ctx));
    hccn_free(ctx, b);
    return HCCN_OK;
}

static hccn_status_t sum_rank(hccn_ctx_t *ctx, void *arg)
{
    res_t *r = arg;
    float *b;
    if (hccn_malloc(ctx, COUNT * sizeof(float), (void **)&b) != HCCN_OK)
        return HCCN_ERR_NOMEM;
    int me = hccn_rank(ctx);
    r->redo[me] = sum_ranks(ctx, hccn_comm_world(ctx), b, &r->sum[me]);
    hccn_free(ctx, b);
    return HCCN_OK;
}

static hccn_status_t sub_rank(hccn_ctx_t *ctx, void *arg)
{
    res_t *r = arg;
    int me = hccn_rank(ctx);
    hccn_comm_t *world = hccn_comm_world(ctx), *sub = NULL, *again = NULL;
    float *b;
    if (hccn_malloc(ctx, 2 * COUNT * sizeof(float), (void **)&b) != HCCN_OK)
        return HCCN_ERR_NOMEM;
    if (hccn_comm_split(world, 0, me, &sub) != HCCN_OK)
        return HCCN_ERR_INTERNAL;
    break_and_retry(ctx, sub, b, r);
    /* The advice: destroy it, make a new one from the world. */
    r->destroy[me] = hccn_comm_destroy(sub);
    if (hccn_comm_split(world, 0, me, &again) != HCCN_OK)
        return HCCN_ERR_INTERNAL;
    r->redo[me] = sum_ranks(ctx, again, b, &r->sum[me]);
    hccn_comm_destroy(again);
    hccn_free(ctx, b);
    return HCCN_OK;
}

static void check_broken(const res_t *r, const char *advice, const char *not)
{
    for (int k = 0; k < N; k++) {
        assert_int_equal(r->first[k], HCCN_ERR_MISMATCH);
        assert_int_equal(r->later[k], HCCN_ERR_MISMATCH);
        assert_non_null(strstr(r->msg[k], "is broken by an earlier error"));
        if (strstr(r->msg[k], advice) == NULL)
            fail_msg("rank %d: no advice '%s' in: %s", k, advice, r->msg[k]);
        assert_null(strstr(r->msg[k], not));
    }
}

static void check_sums(const res_t *r)
{
    for (int k = 0; k < N; k++) {
        assert_int_equal(r->redo[k], HCCN_OK);
        assert_true(r->sum[k] == (float)(N * (N + 1) / 2));
    }
}

static void test_world(void **state)
{
    (void)state;
    hccn_cluster_t *cl = NULL;
    assert_int_equal(hccn_cluster_create_json(quad, "quad", NULL, &cl), HCCN_OK);
    res_t r = {0};
    assert_int_equal(hccn_cluster_run(cl, world_rank, &r, NULL), HCCN_OK);
    check_broken(&r, world_advice, "hccn_comm_destroy)");
    for (int k = 0; k < N; k++)   /* what the old advice asked: impossible */
        assert_int_equal(r.destroy[k], HCCN_ERR_INVALID);
    res_t again = {0};
    assert_int_equal(hccn_cluster_run(cl, sum_rank, &again, NULL), HCCN_OK);
    check_sums(&again);
    hccn_cluster_destroy(cl);
}

static void test_sub(void **state)
{
    (void)state;
    hccn_cluster_t *cl = NULL;
    assert_int_equal(hccn_cluster_create_json(quad, "quad", NULL, &cl), HCCN_OK);
    res_t r = {0};
    assert_int_equal(hccn_cluster_run(cl, sub_rank, &r, NULL), HCCN_OK);
    check_broken(&r, sub_advice, "world communicator");
    for (int k = 0; k < N; k++)
        assert_int_equal(r.destroy[k], HCCN_OK);
    check_sums(&r);
    hccn_cluster_destroy(cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_world),
        cmocka_unit_test(test_sub),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
