/*
 * Misuse: handles used after they went or by the wrong rank, settings that
 * differ between ranks, buffers freed while an operation uses them, and
 * state a rank leaves behind. Every case asserts the exact status and that
 * the message names the rank that misused something, the call, and what it
 * misused; none may crash, hang or read freed memory (run under ASan/LSan
 * and TSan too).
 *
 * cmocka asserts are not thread-safe: rank functions record, the main
 * thread asserts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <sched.h>

#include "hccn/hccn.h"
#include "test_util.h"

#define N 4
#define MSG 1024
#define CNT 256
#define CASES 8

static const char *quad =
    "{\"version\":1,\"node_types\":[{\"count\":1,"
    "\"npu\":{\"count\":4,\"arena_MiB\":16,\"reduce_bw_GBps\":100},"
    "\"fabric\":{\"type\":\"mesh\",\"bw_GBps\":10,\"lat_us\":2}}]}";

typedef struct {
    int scenario;
    hccn_status_t rc[N][CASES];
    char msg[N][CASES][MSG];
    int bad[N];                     /* valid calls around the misuse that
                                       failed (a bit per check) */
    /* Handed from one run to the next, or from rank to rank. */
    hccn_comm_t *sub[N], *world[N];
    hccn_future_t *fut[N];
    hccn_ctx_t *ctx[N];
    float *buf[N];
    _Atomic int flag, flag2;
    float got[N][2];
} res_t;

static void note(res_t *r, int rank, int k, hccn_status_t rc)
{
    r->rc[rank][k] = rc;
    snprintf(r->msg[rank][k], MSG, "%s", rc == HCCN_OK ? "" : hccn_last_error());
}

static void expect(res_t *r, int rank, int bit, int ok)
{
    if (!ok)
        r->bad[rank] |= 1 << bit;
}

/* The status of case k of rank is code and its message holds every one of
 * the NULL-terminated words. */
static void expect_err(const res_t *r, int rank, int k, hccn_status_t code,
                       ...)
{
    const char *m = r->msg[rank][k];
    if (r->rc[rank][k] != code)
        fail_msg("rank %d case %d: got %s \"%s\", expected %s", rank, k,
                 hccn_status_name(r->rc[rank][k]), m, hccn_status_name(code));
    va_list ap;
    va_start(ap, code);
    for (const char *w = va_arg(ap, const char *); w != NULL;
         w = va_arg(ap, const char *))
        if (strstr(m, w) == NULL)
            fail_msg("rank %d case %d: \"%s\" lacks \"%s\"", rank, k, m, w);
    va_end(ap);
}

static hccn_cluster_t *make(void)
{
    hccn_cluster_t *cl = NULL;
    assert_int_equal(hccn_cluster_create_json(quad, "quad", NULL, &cl),
                     HCCN_OK);
    return cl;
}

static void run(hccn_cluster_t *cl, hccn_rank_fn fn, res_t *r,
                hccn_status_t *st)
{
    hccn_status_t rc = hccn_cluster_run(cl, fn, r, st);
    if (st == NULL && rc != HCCN_OK)
        fail_msg("run: %s: %s", hccn_status_name(rc), hccn_last_error());
    for (int k = 0; k < N; k++)
        if (r->bad[k] != 0)
            fail_msg("rank %d: valid calls around the misuse failed: mask "
                     "0x%x", k, r->bad[k]);
}

static float *fill(hccn_ctx_t *ctx, float v)
{
    float *b = NULL;
    if (hccn_malloc(ctx, CNT * sizeof(float), (void **)&b) != HCCN_OK)
        return NULL;
    for (int i = 0; i < CNT; i++)
        b[i] = v;
    return b;
}

/* ============================== handles kept from one run to the next */

/* Run 1 makes a sub-communicator (ranks 0-1, 2-3) and a future it never
 * frees; run 2 uses both. */
static hccn_status_t keep_rank(hccn_ctx_t *ctx, void *arg)
{
    res_t *r = arg;
    int me = hccn_rank(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx);
    float *b = fill(ctx, 1.0f);
    expect(r, me, 0, b != NULL);
    if (r->scenario == 0) {
        expect(r, me, 1, hccn_comm_split(w, me / 2, me, &r->sub[me]) == HCCN_OK);
        expect(r, me, 2, hccn_allreduce(r->sub[me], b, b, CNT, HCCN_FP32,
                                        HCCN_SUM) == HCCN_OK);
        expect(r, me, 3, b[0] == 2.0f);
        expect(r, me, 4, hccn_iallreduce(w, b, b, CNT, HCCN_FP32, HCCN_SUM,
                                         &r->fut[me]) == HCCN_OK);
        expect(r, me, 5, hccn_wait(r->fut[me]) == HCCN_OK);
        r->world[me] = w;
        r->ctx[me] = ctx;
    } else {
        /* The same split again: its handles are new ones. */
        hccn_comm_t *again;
        expect(r, me, 6, hccn_comm_split(w, me / 2, me, &again) == HCCN_OK);
        expect(r, me, 7, again != r->sub[me]);
        note(r, me, 0, hccn_allreduce(r->sub[me], b, b, CNT, HCCN_FP32,
                                      HCCN_SUM));
        note(r, me, 1, hccn_wait(r->fut[me]));
        expect(r, me, 8, hccn_comm_rank(r->sub[me]) == -1);
        note(r, me, 2, hccn_comm_destroy(r->sub[me]));
        /* The world handle lives as long as the cluster. */
        expect(r, me, 9, hccn_comm_world(ctx) == r->world[me]);
        expect(r, me, 10, hccn_allreduce(again, b, b, CNT, HCCN_FP32,
                                         HCCN_SUM) == HCCN_OK);
        expect(r, me, 11, b[0] == 2.0f);
        expect(r, me, 12, hccn_comm_destroy(again) == HCCN_OK);
    }
    hccn_free(ctx, b);
    return HCCN_OK;
}

static void test_kept_handles(void **state)
{
    (void)state;
    hccn_cluster_t *cl = make();
    static res_t r;
    memset(&r, 0, sizeof(r));
    run(cl, keep_rank, &r, NULL);
    r.scenario = 1;
    run(cl, keep_rank, &r, NULL);
    char who[16];
    for (int k = 0; k < N; k++) {
        snprintf(who, sizeof(who), "rank %d", k);
        expect_err(&r, k, 0, HCCN_ERR_INVALID, "hccn_allreduce", who,
                   "stale communicator handle", "communicator",
                   "(2 ranks)", "hccn_cluster_run that made it ended", NULL);
        expect_err(&r, k, 1, HCCN_ERR_INVALID, "hccn_wait", who,
                   "stale future", "future of allreduce #1 on communicator 1",
                   "run that made it ended", NULL);
        expect_err(&r, k, 2, HCCN_ERR_INVALID, "hccn_comm_destroy", who,
                   "stale", NULL);
    }
    /* Outside any run: the main thread is no rank. */
    float host[4] = {0};
    assert_int_equal(hccn_allreduce(r.world[1], host, host, 4, HCCN_FP32,
                                    HCCN_SUM), HCCN_ERR_INVALID);
    assert_non_null(strstr(hccn_last_error(), "a thread outside any rank"));
    assert_non_null(strstr(hccn_last_error(), "rank 1's handle on the world"));
    void *p = NULL;
    assert_int_equal(hccn_malloc(r.ctx[2], 64, &p), HCCN_ERR_INVALID);
    assert_non_null(strstr(hccn_last_error(), "hccn_malloc"));
    assert_non_null(strstr(hccn_last_error(), "no rank's"));
    assert_null(p);
    /* After the cluster went, its world handles say so. */
    hccn_cluster_destroy(cl);
    assert_int_equal(hccn_comm_size(r.world[3]), 0);
    assert_non_null(strstr(hccn_last_error(), "cluster was destroyed"));
    assert_int_equal(hccn_barrier(r.world[0]), HCCN_ERR_INVALID);
    assert_non_null(strstr(hccn_last_error(), "hccn_barrier"));
    assert_non_null(strstr(hccn_last_error(), "rank 0's handle on the world"));
}

/* ======================= handles, contexts and buffers lent to a rank */

/* Rank 0 lends rank 1 its world handle, a sub-communicator handle, its
 * context and a buffer, then returns; rank 1 uses them after that. Rank 2
 * lends rank 3 a future of a collective the two run. */
static hccn_status_t lend_rank(hccn_ctx_t *ctx, void *arg)
{
    res_t *r = arg;
    int me = hccn_rank(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx), *half = NULL;
    float *b = fill(ctx, (float)(me + 1));
    expect(r, me, 0, b != NULL);
    expect(r, me, 1, hccn_comm_split(w, me / 2, me, &half) == HCCN_OK);
    if (me == 0) {
        r->world[0] = w;
        r->sub[0] = half;
        r->ctx[0] = ctx;
        r->buf[0] = b;
        atomic_store(&r->flag, 1);
        return HCCN_OK;              /* b stays: rank 1 tries to free it */
    }
    if (me == 1) {
        while (atomic_load(&r->flag) == 0)
            sched_yield();
        note(r, me, 0, hccn_allreduce(r->world[0], r->buf[0], r->buf[0], CNT,
                                      HCCN_FP32, HCCN_SUM));
        note(r, me, 1, hccn_barrier(r->sub[0]));
        void *p = NULL;
        note(r, me, 2, hccn_malloc(r->ctx[0], 64, &p));
        note(r, me, 3, hccn_free(r->ctx[0], r->buf[0]));
        note(r, me, 4, hccn_send(w, r->buf[0], CNT, HCCN_FP32, 2));
        note(r, me, 5, hccn_group_start(r->ctx[0]));
        note(r, me, 6, hccn_comm_set_compression(r->sub[0],
                                                 HCCN_COMPRESS_FP16));
        expect(r, me, 1, hccn_comm_destroy(half) == HCCN_OK);
    }
    if (me == 2) {
        expect(r, me, 2, hccn_iallreduce(half, b, b, CNT, HCCN_FP32, HCCN_SUM,
                                         &r->fut[2]) == HCCN_OK);
        atomic_store(&r->flag2, 2);
        while (atomic_load(&r->flag2) != 3)
            sched_yield();
        expect(r, me, 3, hccn_wait(r->fut[2]) == HCCN_OK);
        expect(r, me, 4, hccn_future_free(r->fut[2]) == HCCN_OK);
    }
    if (me == 3) {
        while (atomic_load(&r->flag2) != 2)
            sched_yield();
        note(r, me, 0, hccn_wait(r->fut[2]));
        note(r, me, 1, hccn_future_free(r->fut[2]));
        atomic_store(&r->flag2, 3);
        expect(r, me, 2, hccn_allreduce(half, b, b, CNT, HCCN_FP32,
                                        HCCN_SUM) == HCCN_OK);
    }
    if (me >= 2) {
        r->got[me][0] = b[0];
        expect(r, me, 5, hccn_comm_destroy(half) == HCCN_OK);
    }
    hccn_free(ctx, b);
    return HCCN_OK;
}

static void test_lent(void **state)
{
    (void)state;
    hccn_cluster_t *cl = make();
    static res_t r;
    memset(&r, 0, sizeof(r));
    run(cl, lend_rank, &r, NULL);
    /* Each message blames rank 1, the user, and names rank 0's thing. */
    expect_err(&r, 1, 0, HCCN_ERR_INVALID, "hccn_allreduce: rank 1 used",
               "rank 0's handle on the world communicator",
               "used only by its own rank", NULL);
    expect_err(&r, 1, 1, HCCN_ERR_INVALID, "hccn_barrier: rank 1 used",
               "rank 0's handle on communicator", "(2 ranks)", NULL);
    expect_err(&r, 1, 2, HCCN_ERR_INVALID, "hccn_malloc: rank 1",
               "the context of rank 0", NULL);
    expect_err(&r, 1, 3, HCCN_ERR_INVALID, "hccn_free: rank 1",
               "the context of rank 0", NULL);
    expect_err(&r, 1, 4, HCCN_ERR_INVALID, "hccn_send: rank 1",
               "in the arena of rank 0", NULL);
    expect_err(&r, 1, 5, HCCN_ERR_INVALID, "hccn_group_start: rank 1",
               "the context of rank 0", NULL);
    expect_err(&r, 1, 6, HCCN_ERR_INVALID, "hccn_comm_set_compression: rank 1",
               "rank 0's handle on communicator", NULL);
    expect_err(&r, 3, 0, HCCN_ERR_INVALID, "hccn_wait: rank 3 used",
               "rank 2's future of allreduce #0 on communicator", NULL);
    expect_err(&r, 3, 1, HCCN_ERR_INVALID, "hccn_future_free: rank 3 used",
               "rank 2's future", NULL);
    /* Rank 2's own future was untouched by rank 3's attempts. */
    assert_true(r.got[2][0] == 7.0f && r.got[3][0] == 7.0f);
    /* Stray values: a context or a future where a handle belongs. */
    hccn_cluster_destroy(cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kept_handles),
        cmocka_unit_test(test_lent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
