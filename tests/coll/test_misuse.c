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
    if (getenv("MISUSE_SHOW") != NULL)
        printf("rank %d case %d: %s\n", rank, k, m);
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
    /* So do the cluster itself and its contexts. */
    assert_int_equal(hccn_rank(r.ctx[2]), -1);
    assert_non_null(strstr(hccn_last_error(), "hccn_rank"));
    assert_non_null(strstr(hccn_last_error(), "no context of a live cluster"));
    assert_int_equal(hccn_cluster_size(cl), 0);
    assert_non_null(strstr(hccn_last_error(), "no live cluster"));
    assert_int_equal(hccn_cluster_run(cl, keep_rank, &r, NULL),
                     HCCN_ERR_INVALID);
    assert_non_null(strstr(hccn_last_error(), "hccn_cluster_run"));
    assert_non_null(strstr(hccn_last_error(), "destroyed"));
    hccn_cluster_destroy(cl);   /* twice: refused, not a double free */
    assert_non_null(strstr(hccn_last_error(), "hccn_cluster_destroy"));
    assert_non_null(strstr(hccn_last_error(), "no live cluster"));
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
    hccn_cluster_destroy(cl);
}

/* Stray values: a context, a host pointer or a handle of the wrong kind
 * where a handle belongs. */
static hccn_status_t stray_rank(hccn_ctx_t *ctx, void *arg)
{
    res_t *r = arg;
    int me = hccn_rank(ctx), host = 0;
    hccn_comm_t *w = hccn_comm_world(ctx);
    float *b = fill(ctx, 1.0f);
    note(r, me, 0, hccn_allreduce((hccn_comm_t *)ctx, b, b, CNT, HCCN_FP32,
                                  HCCN_SUM));
    note(r, me, 1, hccn_barrier((hccn_comm_t *)&host));
    note(r, me, 2, hccn_wait((hccn_future_t *)w));
    hccn_future_t *f = NULL;
    expect(r, me, 0, hccn_ibarrier(w, &f) == HCCN_OK);
    note(r, me, 3, hccn_barrier((hccn_comm_t *)f));
    expect(r, me, 1, hccn_wait(f) == HCCN_OK);
    expect(r, me, 2, hccn_future_free(f) == HCCN_OK);
    note(r, me, 4, hccn_future_free(f));
    /* Long after: its slot has been reused by one of thousands of futures
     * since (the table reuses slots once 4096 exist), and the token is
     * still told apart from the one that holds the slot now. */
    hccn_future_t *g = NULL;
    for (int i = 0; i < 2500; i++) {
        expect(r, me, 4, hccn_ibarrier(w, &g) == HCCN_OK && g != f);
        expect(r, me, 5, hccn_wait(g) == HCCN_OK);
        expect(r, me, 6, hccn_future_free(g) == HCCN_OK);
    }
    note(r, me, 6, hccn_wait(f));
    /* Destroying the cluster from inside its run destroys nothing. */
    if (me == 0) {
        hccn_cluster_destroy(hccn_ctx_cluster(ctx));
        note(r, me, 5, HCCN_ERR_INVALID);
    }
    expect(r, me, 3, hccn_allreduce(w, b, b, CNT, HCCN_FP32, HCCN_SUM) ==
                         HCCN_OK && b[0] == 4.0f);
    hccn_free(ctx, b);
    return HCCN_OK;
}

static void test_stray(void **state)
{
    (void)state;
    hccn_cluster_t *cl = make();
    static res_t r;
    memset(&r, 0, sizeof(r));
    run(cl, stray_rank, &r, NULL);
    char who[16];
    for (int k = 0; k < N; k++) {
        snprintf(who, sizeof(who), "rank %d", k);
        expect_err(&r, k, 0, HCCN_ERR_INVALID, "hccn_allreduce", who,
                   "not a communicator handle made by hccn", NULL);
        expect_err(&r, k, 1, HCCN_ERR_INVALID, "hccn_barrier", who,
                   "not a communicator handle", NULL);
        expect_err(&r, k, 2, HCCN_ERR_INVALID, "hccn_wait", who,
                   "passed a communicator handle where a future was "
                   "expected", NULL);
        expect_err(&r, k, 3, HCCN_ERR_INVALID, "hccn_barrier", who,
                   "passed a future where a communicator handle", NULL);
        expect_err(&r, k, 4, HCCN_ERR_INVALID, "hccn_future_free", who,
                   "stale future", "barrier #0",
                   "freed by hccn_future_free", NULL);
    }
    for (int k = 0; k < N; k++) {
        snprintf(who, sizeof(who), "rank %d", k);
        expect_err(&r, k, 6, HCCN_ERR_INVALID, "hccn_wait", who,
                   "stale future", "its record is gone", NULL);
    }
    expect_err(&r, 0, 5, HCCN_ERR_INVALID, "hccn_cluster_destroy",
               "is running", "nothing was destroyed", NULL);
    hccn_cluster_destroy(cl);
}

/* ==================================== settings that differ between ranks */

enum { S_COMPRESS, S_COMPRESS_OPTS, S_ALGO, S_ALGO_OPTS, NSET };

static hccn_status_t settings_rank(hccn_ctx_t *ctx, void *arg)
{
    res_t *r = arg;
    int me = hccn_rank(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx);
    float *b = fill(ctx, (float)(me + 1));
    hccn_coll_opts_t o = {.struct_size = sizeof(o), .compress = -1};
    hccn_status_t rc = HCCN_OK;
    switch (r->scenario) {
    case S_COMPRESS:
        if (me < 2)
            hccn_comm_set_compression(w, HCCN_COMPRESS_FP16);
        rc = hccn_allreduce(w, b, b, CNT, HCCN_FP32, HCCN_SUM);
        break;
    case S_COMPRESS_OPTS:
        o.compress = me == 3 ? HCCN_COMPRESS_BF16 : -1;
        rc = hccn_allreduce_opts(w, b, b, CNT, HCCN_FP32, HCCN_SUM, &o, NULL);
        break;
    case S_ALGO:
        hccn_comm_set_algo(w, me == 2 ? "ring" : "mesh");
        rc = hccn_allreduce(w, b, b, CNT, HCCN_FP32, HCCN_SUM);
        break;
    case S_ALGO_OPTS:
        o.algo = me == 0 ? "ring" : "mesh";
        rc = hccn_allgather_opts(w, b, b + me * 16, 16, HCCN_FP32, &o, NULL);
        break;
    }
    note(r, me, 0, rc);
    r->got[me][0] = b[0];
    r->got[me][1] = b[CNT - 1];
    /* The communicator is broken now: the next call says why. */
    note(r, me, 1, hccn_barrier(w));
    hccn_free(ctx, b);
    return HCCN_OK;
}

static void test_settings(void **state)
{
    (void)state;
    /* Each value with the ranks that use it. */
    static const char *const words[NSET][4] = {
        {"allreduce", "'wire compression'", "ranks 0-1 use fp16",
         "ranks 2-3 use none"},
        {"allreduce", "'wire compression'", "ranks 0-2 use none",
         "rank 3 uses bf16"},
        {"allreduce", "'algorithm'", "ranks 0-1, 3 use mesh",
         "rank 2 uses ring"},
        {"allgather", "'algorithm'", "rank 0 uses ring",
         "ranks 1-3 use mesh"},
    };
    hccn_cluster_t *cl = make();
    static res_t r;
    for (int sc = 0; sc < NSET; sc++) {
        memset(&r, 0, sizeof(r));
        r.scenario = sc;
        run(cl, settings_rank, &r, NULL);
        for (int k = 0; k < N; k++) {
            expect_err(&r, k, 0, HCCN_ERR_MISMATCH, words[sc][0], words[sc][1],
                       words[sc][2], words[sc][3], "collective #0", NULL);
            expect_err(&r, k, 1, HCCN_ERR_MISMATCH, "hccn_barrier",
                       words[sc][1], NULL);
            /* Nothing moved: every buffer keeps its input. */
            assert_true(r.got[k][0] == (float)(k + 1));
            assert_true(r.got[k][1] == (float)(k + 1));
        }
    }
    hccn_cluster_destroy(cl);
}

/* ============================================= buffers in flight */

/* Rank 0 frees the buffers of an iallreduce its peers have not joined
 * yet, rank 1 the buffer of an irecv not yet matched, rank 3 the buffer of
 * an allreduce posted in a group. Each free fails; the memory stays with
 * the operation, so a new allocation gets other bytes that the operation
 * never writes. */
static hccn_status_t inflight_rank(hccn_ctx_t *ctx, void *arg)
{
    res_t *r = arg;
    int me = hccn_rank(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx);
    float *b = fill(ctx, (float)(me + 1)), *msg = fill(ctx, 0.0f), *c = NULL;
    hccn_future_t *f = NULL, *rf = NULL;
    if (me == 0) {
        expect(r, me, 0, hccn_iallreduce(w, b, b, CNT, HCCN_FP32, HCCN_SUM,
                                         &f) == HCCN_OK);
        note(r, me, 0, hccn_free(ctx, b));
        c = fill(ctx, 42.0f);
        expect(r, me, 1, c != NULL && c != b);
        atomic_store(&r->flag, 1);
        expect(r, me, 2, hccn_wait(f) == HCCN_OK);
        expect(r, me, 3, hccn_future_free(f) == HCCN_OK);
    } else if (me == 3) {
        expect(r, me, 0, hccn_group_start(ctx) == HCCN_OK);
        expect(r, me, 1, hccn_allreduce(w, b, b, CNT, HCCN_FP32, HCCN_SUM) ==
                             HCCN_OK);
        note(r, me, 0, hccn_free(ctx, b));
        expect(r, me, 2, hccn_group_end(ctx) == HCCN_OK);
    } else {
        if (me == 1) {
            expect(r, me, 0, hccn_irecv(w, msg, CNT, HCCN_FP32, 2, &rf) ==
                                 HCCN_OK);
            note(r, me, 0, hccn_free(ctx, msg));
        }
        while (atomic_load(&r->flag) == 0)
            sched_yield();
        expect(r, me, 1, hccn_allreduce(w, b, b, CNT, HCCN_FP32, HCCN_SUM) ==
                             HCCN_OK);
        if (me == 2) {
            for (int i = 0; i < CNT; i++)
                msg[i] = (float)i;
            expect(r, me, 2, hccn_send(w, msg, CNT, HCCN_FP32, 1) == HCCN_OK);
        } else {
            expect(r, me, 2, hccn_wait(rf) == HCCN_OK);
            expect(r, me, 3, hccn_future_free(rf) == HCCN_OK);
            expect(r, me, 4, msg[CNT - 1] == (float)(CNT - 1));
        }
    }
    r->got[me][0] = b[0];
    r->got[me][1] = b[CNT - 1];
    if (c != NULL) {
        int intact = 1;
        for (int i = 0; i < CNT; i++)
            intact &= c[i] == 42.0f;
        expect(r, me, 5, intact);
        expect(r, me, 6, hccn_free(ctx, c) == HCCN_OK);
    }
    /* Now that the operations are done, the frees go through. */
    expect(r, me, 7, hccn_free(ctx, b) == HCCN_OK);
    expect(r, me, 8, hccn_free(ctx, msg) == HCCN_OK);
    return HCCN_OK;
}

static void test_inflight(void **state)
{
    (void)state;
    hccn_cluster_t *cl = make();
    static res_t r;
    memset(&r, 0, sizeof(r));
    run(cl, inflight_rank, &r, NULL);
    expect_err(&r, 0, 0, HCCN_ERR_INPROGRESS, "hccn_free: rank 0",
               "allreduce #0 on comm", "has not completed",
               "nothing was freed", NULL);
    assert_true(strstr(r.msg[0][0], "sendbuf") != NULL ||
                strstr(r.msg[0][0], "recvbuf") != NULL);
    expect_err(&r, 1, 0, HCCN_ERR_INPROGRESS, "hccn_free: rank 1",
               "the buf of recv", "has not completed", NULL);
    expect_err(&r, 3, 0, HCCN_ERR_INPROGRESS, "hccn_free: rank 3",
               "allreduce #0", NULL);
    for (int k = 0; k < N; k++) {
        assert_true(r.got[k][0] == 10.0f);
        assert_true(r.got[k][1] == 10.0f);
    }
    hccn_cluster_destroy(cl);
}

/* ======================================= what a returning rank leaves */

/* Every rank opens a group with an allreduce in it; rank 2 returns without
 * ending it. Every rank also leaves a future it never waits for or frees.
 * The run reports rank 2; nothing leaks (LeakSanitizer). */
static hccn_status_t leave_rank(hccn_ctx_t *ctx, void *arg)
{
    res_t *r = arg;
    int me = hccn_rank(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx), *half = NULL;
    float *b = fill(ctx, (float)(me + 1)), *x = fill(ctx, 1.0f);
    hccn_future_t *f;
    expect(r, me, 0, hccn_comm_split(w, me % 2, me, &half) == HCCN_OK);
    expect(r, me, 1, hccn_group_start(ctx) == HCCN_OK);
    expect(r, me, 2, hccn_allreduce(w, b, b, CNT, HCCN_FP32, HCCN_SUM) ==
                         HCCN_OK);
    if (me == 2)
        return HCCN_OK;
    expect(r, me, 3, hccn_group_end(ctx) == HCCN_OK);
    r->got[me][0] = b[0];
    if (me % 2 == 1)   /* rank 2 is gone: only 1 and 3 can still meet */
        expect(r, me, 4, hccn_iallreduce(half, x, x, CNT, HCCN_FP32, HCCN_SUM,
                                         &f) == HCCN_OK);
    return HCCN_OK;
}

static void test_leftovers(void **state)
{
    (void)state;
    hccn_cluster_t *cl = make();
    static res_t r;
    hccn_status_t st[N];
    memset(&r, 0, sizeof(r));
    assert_int_equal(hccn_cluster_run(cl, leave_rank, &r, st),
                     HCCN_ERR_INVALID);
    assert_non_null(strstr(hccn_last_error(), "rank 2 returned"));
    assert_non_null(strstr(hccn_last_error(), "inside a group"));
    assert_non_null(strstr(hccn_last_error(), "1 operation(s)"));
    for (int k = 0; k < N; k++) {
        assert_int_equal(st[k], k == 2 ? HCCN_ERR_INVALID : HCCN_OK);
        assert_int_equal(r.bad[k], 0);
        if (k != 2)
            assert_true(r.got[k][0] == 10.0f);
    }
    /* The cluster runs again, clean. */
    memset(&r, 0, sizeof(r));
    r.scenario = S_COMPRESS;
    run(cl, settings_rank, &r, NULL);
    hccn_cluster_destroy(cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kept_handles),
        cmocka_unit_test(test_lent),
        cmocka_unit_test(test_stray),
        cmocka_unit_test(test_settings),
        cmocka_unit_test(test_inflight),
        cmocka_unit_test(test_leftovers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
