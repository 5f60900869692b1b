/*
 * Futures: the non-blocking collectives (hccn_i*) give the same bits and
 * the same simulated times as the blocking ones; hccn_test says pending,
 * then done, exactly when the time model says so; operations on one
 * communicator run in call order; several communicators in flight at once
 * stay correct and deterministic; compute overlaps communication as the
 * model predicts; misuse of futures and communicators gives clear errors.
 *
 * Exact times come from docs/timing.md and the closed forms of
 * docs/algorithms.md on configs/default.json (2 nodes x 8 NPUs; inside a
 * node a full mesh of 56 GB/s, 1.5 us links; reduce_bw 200 GB/s; no
 * mem_bw, so copies are free). A communicator of the 8 NPUs of one node,
 * running the ring algorithm, uses the links r -> r+1 of the mesh, one per
 * pair, so nothing is shared and the textbook formula holds:
 *
 *     ring allreduce: T = 2(p-1)(alpha + b_max/B) + (p-1) b_max/R
 *
 * Posting costs no simulated time (docs/timing.md: the tasks of an
 * operation start no earlier than the clock when it was called; nothing
 * else is added), so an operation posted at T0 on an idle communicator ends
 * at exactly T0 + T. Times are compared to a relative 1e-12: the engine
 * sums the same terms in its own order, so the last bit may differ.
 *
 * cmocka asserts are not thread-safe: rank functions only record into
 * shared arrays, and the main thread asserts.
 */
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

#define NR 16                  /* ranks of configs/default.json */
#define NODE 8                 /* NPUs per node */
#define TIME_TOL 1e-12

/* The intra-node figures of configs/default.json. */
static const double node_alpha = 1.5e-6, node_bw = 56e9, reduce_bw = 200e9;

/* docs/algorithms.md, ring allreduce, uncontended. */
static double ring_allreduce_time(int p, size_t count, size_t esize,
                                  double alpha, double bw, double rbw)
{
    double bmax = (double)((count + (size_t)p - 1) / (size_t)p * esize);
    return 2.0 * (p - 1) * (alpha + bmax / bw) + (p - 1) * bmax / rbw;
}

static double node_allreduce_time(size_t count)
{
    return ring_allreduce_time(NODE, count, sizeof(float), node_alpha,
                               node_bw, reduce_bw);
}

static hccn_cluster_t *make_cluster(void)
{
    hccn_cluster_t *cl = NULL;
    hccn_status_t rc = hccn_cluster_create(test_path("configs/default.json"),
                                           NULL, &cl);
    if (rc != HCCN_OK)
        fail_msg("cluster: %s", hccn_last_error());
    assert_int_equal(hccn_cluster_size(cl), NR);
    return cl;
}

static void run_ok(hccn_cluster_t *cl, hccn_rank_fn fn, void *arg)
{
    hccn_status_t st[NR];
    hccn_status_t rc = hccn_cluster_run(cl, fn, arg, st);
    if (rc != HCCN_OK) {
        for (int r = 0; r < NR; r++)
            fprintf(stderr, "rank %d: %s\n", r, hccn_status_name(st[r]));
        fail_msg("run: %s: %s", hccn_status_name(rc), hccn_last_error());
    }
}

static void assert_time(double got, double want, const char *what, int rank)
{
    if (!(test_rel_diff(got, want) <= TIME_TOL))
        fail_msg("rank %d: %s: %.17g s, expected %.17g s", rank, what, got,
                 want);
}

/* The calling rank's node communicator (comm rank = local index), on the
 * ring algorithm whatever HCCN_ALGO says. */
static hccn_status_t node_comm(hccn_ctx_t *ctx, hccn_comm_t **out)
{
    hccn_status_t rc = hccn_comm_split(hccn_comm_world(ctx), hccn_node(ctx),
                                       hccn_local_rank(ctx), out);
    if (rc != HCCN_OK)
        return rc;
    return hccn_comm_set_algo(*out, "ring");
}

/* Integer-valued floats: sums are exact in any order. */
static float ival(int rank, size_t i, int salt)
{
    return (float)((int)((i * 2654435761u + (size_t)rank * 40503u +
                          (size_t)salt * 977u) % 201u) - 100);
}

/* ======================================= async equals sync, every coll */

enum { C_ALLREDUCE, C_REDUCE_SCATTER, C_ALLGATHER, C_BROADCAST, C_REDUCE,
       C_ALLTOALL, C_BARRIER, NCOLL };

static const char *const coll_names[NCOLL] = {
    "allreduce", "reduce_scatter", "allgather", "broadcast", "reduce",
    "alltoall", "barrier"};

#define CNT 1003               /* not a multiple of 16: uneven blocks */
#define ROOT 5

enum { M_SYNC, M_ASYNC, M_ALL };

typedef struct {
    int mode;
    int only;                  /* M_SYNC, M_ASYNC: the one collective run */
    float *out[NR][NCOLL];     /* host copies of each RECV, per rank */
    double t_call[NR][NCOLL], t_end[NR][NCOLL], dur[NR][NCOLL];
    double fut_start[NR][NCOLL];
    int check_fail[NR];
} eq_t;

static size_t send_elems(int c)
{
    if (c == C_REDUCE_SCATTER || c == C_ALLTOALL)
        return (size_t)CNT * NR;
    return c == C_BARRIER ? 0 : CNT;
}

static size_t recv_elems(int c)
{
    switch (c) {
    case C_ALLGATHER:
    case C_ALLTOALL:
        return (size_t)CNT * NR;
    case C_BARRIER:
        return 0;
    default:
        return CNT;
    }
}

/* Random fp32 data: the reductions are then sensitive to the order of the
 * additions, so equal bits mean the same algorithm ran the same way. */
static float rval(int rank, int c, size_t i)
{
    unsigned long long s = ((unsigned long long)rank << 40) ^
                           ((unsigned long long)c << 32) ^ i;
    return (float)((double)(test_rand_next(&s) >> 11) * 0x1p-53 * 2.0 - 1.0);
}

static hccn_status_t post_coll(hccn_comm_t *w, int c, float *s, float *r,
                               hccn_future_t **f)
{
    switch (c) {
    case C_ALLREDUCE:
        return hccn_iallreduce(w, s, r, CNT, HCCN_FP32, HCCN_SUM, f);
    case C_REDUCE_SCATTER:
        return hccn_ireduce_scatter(w, s, r, CNT, HCCN_FP32, HCCN_SUM, f);
    case C_ALLGATHER:
        return hccn_iallgather(w, s, r, CNT, HCCN_FP32, f);
    case C_BROADCAST:
        return hccn_ibroadcast(w, s, r, CNT, HCCN_FP32, ROOT, f);
    case C_REDUCE:
        return hccn_ireduce(w, s, r, CNT, HCCN_FP32, HCCN_SUM, ROOT, f);
    case C_ALLTOALL:
        return hccn_ialltoall(w, s, r, CNT, HCCN_FP32, f);
    default:
        return hccn_ibarrier(w, f);
    }
}

static hccn_status_t run_coll(hccn_comm_t *w, int c, float *s, float *r)
{
    switch (c) {
    case C_ALLREDUCE:
        return hccn_allreduce(w, s, r, CNT, HCCN_FP32, HCCN_SUM);
    case C_REDUCE_SCATTER:
        return hccn_reduce_scatter(w, s, r, CNT, HCCN_FP32, HCCN_SUM);
    case C_ALLGATHER:
        return hccn_allgather(w, s, r, CNT, HCCN_FP32);
    case C_BROADCAST:
        return hccn_broadcast(w, s, r, CNT, HCCN_FP32, ROOT);
    case C_REDUCE:
        return hccn_reduce(w, s, r, CNT, HCCN_FP32, HCCN_SUM, ROOT);
    case C_ALLTOALL:
        return hccn_alltoall(w, s, r, CNT, HCCN_FP32);
    default:
        return hccn_barrier(w);
    }
}

/* Waits for f and records its times; frees it. */
static hccn_status_t finish_fut(hccn_ctx_t *ctx, eq_t *e, int c,
                                hccn_future_t *f)
{
    int r = hccn_rank(ctx);
    hccn_status_t rc = hccn_wait(f);
    if (rc != HCCN_OK)
        return rc;
    e->dur[r][c] = hccn_last_duration(ctx);
    rc = hccn_future_times(f, &e->fut_start[r][c], &e->t_end[r][c]);
    if (rc != HCCN_OK)
        return rc;
    return hccn_future_free(f);
}

static hccn_status_t eq_rank(hccn_ctx_t *ctx, void *arg)
{
    eq_t *e = arg;
    int r = hccn_rank(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx);
    float *sb[NCOLL], *rb[NCOLL];
    hccn_future_t *f[NCOLL];
    hccn_status_t rc;
    for (int c = 0; c < NCOLL; c++) {
        size_t ns = send_elems(c), nr = recv_elems(c);
        sb[c] = rb[c] = NULL;
        if (ns > 0 && (rc = hccn_malloc(ctx, ns * 4, (void **)&sb[c])))
            return rc;
        if (nr > 0 && (rc = hccn_malloc(ctx, nr * 4, (void **)&rb[c])))
            return rc;
        for (size_t i = 0; i < ns; i++)
            sb[c][i] = rval(r, c, i);
        for (size_t i = 0; i < nr; i++)
            rb[c][i] = -7.0f;
    }
    for (int c = 0; c < NCOLL; c++) {
        if (e->mode != M_ALL && c != e->only)
            continue;
        e->t_call[r][c] = hccn_time(ctx);
        if (e->mode == M_SYNC) {
            if ((rc = run_coll(w, c, sb[c], rb[c])) != HCCN_OK)
                return rc;
            e->dur[r][c] = hccn_last_duration(ctx);
            e->t_end[r][c] = hccn_time(ctx);
            continue;
        }
        if ((rc = post_coll(w, c, sb[c], rb[c], &f[c])) != HCCN_OK)
            return rc;
        if (e->mode == M_ASYNC &&
            (rc = finish_fut(ctx, e, c, f[c])) != HCCN_OK)
            return rc;
    }
    for (int c = 0; e->mode == M_ALL && c < NCOLL; c++)
        if ((rc = finish_fut(ctx, e, c, f[c])) != HCCN_OK)
            return rc;
    for (int c = 0; c < NCOLL; c++) {
        if (recv_elems(c) > 0 && (e->mode == M_ALL || c == e->only))
            memcpy(e->out[r][c], rb[c], recv_elems(c) * 4);
        hccn_free(ctx, sb[c]);
        hccn_free(ctx, rb[c]);
    }
    return HCCN_OK;
}

static void eq_alloc(eq_t *e, int mode)
{
    memset(e, 0, sizeof(*e));
    e->mode = mode;
    e->only = -1;
    for (int r = 0; r < NR; r++)
        for (int c = 0; c < NCOLL; c++)
            e->out[r][c] = calloc(recv_elems(c) + 1, sizeof(float));
}

static void eq_free(eq_t *e)
{
    for (int r = 0; r < NR; r++)
        for (int c = 0; c < NCOLL; c++)
            free(e->out[r][c]);
}

/* The blocking results are right (a double-precision reference; the sums
 * of random data are only close), so that "equal" below means "right". */
static void check_sync_results(const eq_t *e)
{
    for (size_t i = 0; i < CNT; i++) {
        double sum = 0.0, abs = 0.0;
        for (int q = 0; q < NR; q++) {
            sum += rval(q, C_ALLREDUCE, i);
            abs += fabs(rval(q, C_ALLREDUCE, i));
        }
        for (int r = 0; r < NR; r++)
            assert_true(fabs(e->out[r][C_ALLREDUCE][i] - sum) <= 1e-5 * abs);
        double rs = 0.0;
        for (int q = 0; q < NR; q++)
            rs += rval(q, C_REDUCE, i);
        assert_true(fabs(e->out[ROOT][C_REDUCE][i] - rs) <= 1e-5 * abs + 1e-5);
    }
    for (int r = 0; r < NR; r++)
        for (size_t i = 0; i < CNT; i++) {
            double rs = 0.0;
            for (int q = 0; q < NR; q++)
                rs += rval(q, C_REDUCE_SCATTER, (size_t)r * CNT + i);
            assert_true(fabs(e->out[r][C_REDUCE_SCATTER][i] - rs) <= 1e-4);
            assert_true(e->out[r][C_BROADCAST][i] == rval(ROOT, C_BROADCAST, i));
            for (int q = 0; q < NR; q++) {
                size_t k = (size_t)q * CNT + i;
                assert_true(e->out[r][C_ALLGATHER][k] ==
                            rval(q, C_ALLGATHER, i));
                assert_true(e->out[r][C_ALLTOALL][k] ==
                            rval(q, C_ALLTOALL, (size_t)r * CNT + i));
            }
        }
}

static void assert_same_result(const eq_t *x, const eq_t *y, int c,
                               const char *what)
{
    for (int r = 0; r < NR; r++) {
        size_t n = recv_elems(c) * 4;
        if (r != ROOT && c == C_REDUCE)
            n = 0;             /* reduce writes RECV only on the root */
        if (n > 0 && memcmp(x->out[r][c], y->out[r][c], n) != 0)
            fail_msg("%s: rank %d %s: results differ", what, r,
                     coll_names[c]);
    }
}

#define ALL_RUNS 3

/* Each collective alone, blocking and as post + wait, from clock 0 in its
 * own run: the same bits and the same times, bit for bit (the same
 * schedule posted at the same clock). Then all seven posted at once and
 * waited in order, three times: the same bits again, ends in call order,
 * and the same times on every run. (All seven blocking in one run:
 * test_blocking_sequence.) */
static void test_async_equals_sync(void **state)
{
    (void)state;
    hccn_cluster_t *cl = make_cluster();
    static eq_t sync, async, all[ALL_RUNS];
    eq_alloc(&sync, M_SYNC);
    eq_alloc(&async, M_ASYNC);
    for (int c = 0; c < NCOLL; c++) {
        sync.only = async.only = c;
        run_ok(cl, eq_rank, &sync);
        run_ok(cl, eq_rank, &async);
    }
    for (int k = 0; k < ALL_RUNS; k++) {
        eq_alloc(&all[k], M_ALL);
        run_ok(cl, eq_rank, &all[k]);
    }
    check_sync_results(&sync);
    for (int c = 0; c < NCOLL; c++) {
        assert_same_result(&async, &sync, c, "post + wait vs blocking");
        assert_same_result(&all[0], &sync, c, "all posted vs blocking");
        for (int r = 0; r < NR; r++) {
            if (memcmp(&async.t_end[r][c], &sync.t_end[r][c],
                       sizeof(double)) != 0)
                fail_msg("rank %d %s: post + wait ends at %.17g, blocking "
                         "at %.17g", r, coll_names[c], async.t_end[r][c],
                         sync.t_end[r][c]);
            assert_true(sync.t_call[r][c] == 0.0);
            assert_true(async.fut_start[r][c] == 0.0);
            assert_true(async.dur[r][c] == sync.dur[r][c]);
            assert_true(sync.dur[r][c] == sync.t_end[r][c]);
            assert_true(all[0].fut_start[r][c] == 0.0);
            assert_true(all[0].dur[r][c] == all[0].t_end[r][c]);
            /* Call order on one communicator: each ends no earlier than
             * the one before; the first runs as if alone. */
            if (c == 0)
                assert_true(all[0].t_end[r][c] == sync.t_end[r][c]);
            else
                assert_true(all[0].t_end[r][c] >= all[0].t_end[r][c - 1]);
        }
    }
    for (int k = 1; k < ALL_RUNS; k++) {
        assert_memory_equal(all[k].t_end, all[0].t_end, sizeof(all[0].t_end));
        for (int c = 0; c < NCOLL; c++)
            assert_same_result(&all[k], &all[0], c, "all posted, rerun");
    }
    /* The world barrier on default.json (mesh, 0-byte messages) ends when
     * the slowest message has arrived: the inter-node route, NIC 2 us +
     * switch 1 us. */
    for (int r = 0; r < NR; r++)
        assert_time(sync.t_end[r][C_BARRIER], 3e-6, "barrier", r);
    eq_free(&sync);
    eq_free(&async);
    for (int k = 0; k < ALL_RUNS; k++)
        eq_free(&all[k]);
    hccn_cluster_destroy(cl);
}

/* ============================================= hccn_test: pending, done */

#define TCNT 131072            /* 512 KiB of fp32; b = 64 KiB per block */

typedef struct {
    double t0[NR], start[NR], end[NR], after_wait[NR], last_dur[NR];
    int done_post[NR], done_half[NR], done_before[NR], done_after[NR];
    int done_waited[NR], test_moved[NR];
    int ok_data[NR];
} pend_t;

static hccn_status_t pend_rank(hccn_ctx_t *ctx, void *arg)
{
    pend_t *p = arg;
    int r = hccn_rank(ctx);
    const double T = node_allreduce_time(TCNT);
    hccn_comm_t *nc;
    float *buf;
    hccn_future_t *f;
    hccn_status_t rc;
    if ((rc = node_comm(ctx, &nc)) != HCCN_OK ||
        (rc = hccn_malloc(ctx, TCNT * 4, (void **)&buf)) != HCCN_OK)
        return rc;
    for (size_t i = 0; i < TCNT; i++)
        buf[i] = ival(r, i, 1);
    p->t0[r] = hccn_time(ctx);
    if ((rc = hccn_iallreduce(nc, buf, buf, TCNT, HCCN_FP32, HCCN_SUM, &f)))
        return rc;
    /* At T0 the operation has just started: not done. */
    if ((rc = hccn_test(f, &p->done_post[r])) != HCCN_OK)
        return rc;
    hccn_compute(ctx, 0.5 * T);
    if ((rc = hccn_test(f, &p->done_half[r])) != HCCN_OK)
        return rc;
    /* Just short of T0 + T: still not done ... */
    hccn_compute(ctx, (0.5 - 1e-6) * T);
    if ((rc = hccn_test(f, &p->done_before[r])) != HCCN_OK)
        return rc;
    /* ... and just past it: done, without waiting.
     * fixed, once: hccn_test answers 0 while the data plane of the
     * operation has not finished, even when its simulated end has passed
     * (runtime/p2p.c, hccn_test; see test_poll_loop), so the first answer
     * here depends on how far the host threads got. Each call moves data,
     * so we poll; the clock must not move while we do. */
    hccn_compute(ctx, 2e-6 * T);
    double before = hccn_time(ctx);
    for (long k = 0; k < 100000000L && !p->done_after[r]; k++)
        if ((rc = hccn_test(f, &p->done_after[r])) != HCCN_OK)
            return rc;
    p->test_moved[r] = hccn_time(ctx) != before;
    double clock = hccn_time(ctx);
    if ((rc = hccn_wait(f)) != HCCN_OK)
        return rc;
    p->after_wait[r] = hccn_time(ctx) - clock; /* 0: wait does not move it */
    p->last_dur[r] = hccn_last_duration(ctx);
    if ((rc = hccn_future_times(f, &p->start[r], &p->end[r])) != HCCN_OK)
        return rc;
    if ((rc = hccn_test(f, &p->done_waited[r])) != HCCN_OK)
        return rc;
    hccn_future_free(f);
    p->ok_data[r] = 1;
    for (size_t i = 0; i < TCNT; i++) {
        float want = 0.0f;
        for (int q = 0; q < NODE; q++)
            want += ival(hccn_node(ctx) * NODE + q, i, 1);
        if (buf[i] != want)
            p->ok_data[r] = 0;
    }
    hccn_free(ctx, buf);
    return hccn_comm_destroy(nc);
}

static void test_pending_then_done(void **state)
{
    (void)state;
    hccn_cluster_t *cl = make_cluster();
    pend_t p = {0};
    run_ok(cl, pend_rank, &p);
    const double T = node_allreduce_time(TCNT);
    for (int r = 0; r < NR; r++) {
        assert_int_equal(p.done_post[r], 0);
        assert_int_equal(p.done_half[r], 0);
        assert_int_equal(p.done_before[r], 0);
        assert_int_equal(p.done_after[r], 1);
        assert_int_equal(p.test_moved[r], 0);
        assert_int_equal(p.done_waited[r], 1);
        assert_true(p.after_wait[r] == 0.0);
        assert_true(p.start[r] == p.t0[r]);
        assert_time(p.end[r], p.t0[r] + T, "end of the allreduce", r);
        assert_time(p.last_dur[r], T, "last duration", r);
        assert_true(p.ok_data[r]);
    }
    hccn_cluster_destroy(cl);
}

/* ============================================ order on one communicator */

#define OC1 65536
#define OC2 24000

typedef struct {
    double t0[NR], s1[NR], e1[NR], s2[NR], e2[NR];
    int ok[NR];
} order_t;

static hccn_status_t order_rank(hccn_ctx_t *ctx, void *arg)
{
    order_t *o = arg;
    int r = hccn_rank(ctx);
    hccn_comm_t *nc;
    float *a, *b;
    hccn_future_t *f1, *f2;
    hccn_status_t rc;
    if ((rc = node_comm(ctx, &nc)) != HCCN_OK ||
        (rc = hccn_malloc(ctx, OC1 * 4, (void **)&a)) != HCCN_OK ||
        (rc = hccn_malloc(ctx, OC2 * 4, (void **)&b)) != HCCN_OK)
        return rc;
    for (size_t i = 0; i < OC1; i++)
        a[i] = ival(r, i, 2);
    for (size_t i = 0; i < OC2; i++)
        b[i] = ival(r, i, 3);
    o->t0[r] = hccn_time(ctx);
    if ((rc = hccn_iallreduce(nc, a, a, OC1, HCCN_FP32, HCCN_SUM, &f1)) ||
        (rc = hccn_iallreduce(nc, b, b, OC2, HCCN_FP32, HCCN_SUM, &f2)))
        return rc;
    /* Waiting for the second first is allowed; it ends after the first. */
    if ((rc = hccn_wait(f2)) != HCCN_OK || (rc = hccn_wait(f1)) != HCCN_OK ||
        (rc = hccn_future_times(f1, &o->s1[r], &o->e1[r])) != HCCN_OK ||
        (rc = hccn_future_times(f2, &o->s2[r], &o->e2[r])) != HCCN_OK)
        return rc;
    hccn_future_free(f1);
    hccn_future_free(f2);
    o->ok[r] = 1;
    int base = hccn_node(ctx) * NODE;
    for (size_t i = 0; i < OC1; i++) {
        float want = 0.0f;
        for (int q = 0; q < NODE; q++)
            want += ival(base + q, i, 2);
        o->ok[r] &= a[i] == want;
    }
    for (size_t i = 0; i < OC2; i++) {
        float want = 0.0f;
        for (int q = 0; q < NODE; q++)
            want += ival(base + q, i, 3);
        o->ok[r] &= b[i] == want;
    }
    hccn_free(ctx, a);
    hccn_free(ctx, b);
    return hccn_comm_destroy(nc);
}

/* Two allreduces posted back to back at T0 on one communicator: the first
 * ends at T0 + T(c1); the second's tasks start no earlier than that (call
 * order), so it ends at exactly T0 + T(c1) + T(c2), its call time still
 * T0. */
static void test_order_one_comm(void **state)
{
    (void)state;
    hccn_cluster_t *cl = make_cluster();
    order_t o = {0};
    run_ok(cl, order_rank, &o);
    const double t1 = node_allreduce_time(OC1), t2 = node_allreduce_time(OC2);
    for (int r = 0; r < NR; r++) {
        assert_true(o.ok[r]);
        assert_true(o.s1[r] == o.t0[r] && o.s2[r] == o.t0[r]);
        assert_time(o.e1[r], o.t0[r] + t1, "first end", r);
        assert_time(o.e2[r] - o.e1[r], t2, "second end - first end", r);
        assert_true(o.e2[r] >= o.e1[r] + t2 * (1.0 - TIME_TOL));
    }
    hccn_cluster_destroy(cl);
}

/* ============================== several communicators in flight at once */

#define MCNT 65536
#define MRUNS 5

typedef struct {
    double end[NR][2];
    float *res[NR][2];
} multi_t;

/* The world split in two by parity (each half spans both nodes), and by
 * node: every rank posts an allreduce on its parity communicator and one
 * on its node communicator, both at once, so four communicators are in
 * flight in the cluster and each rank has two; it waits for the node one
 * first. */
static hccn_status_t multi_rank(hccn_ctx_t *ctx, void *arg)
{
    multi_t *m = arg;
    int r = hccn_rank(ctx);
    hccn_comm_t *comms[2];
    float *buf[2];
    hccn_future_t *f[2];
    hccn_status_t rc;
    if ((rc = hccn_comm_split(hccn_comm_world(ctx), r % 2, r, &comms[0])) ||
        (rc = node_comm(ctx, &comms[1])))
        return rc;
    for (int k = 0; k < 2; k++) {
        if ((rc = hccn_malloc(ctx, MCNT * 4, (void **)&buf[k])) != HCCN_OK)
            return rc;
        for (size_t i = 0; i < MCNT; i++)
            buf[k][i] = ival(r, i, 10 + k);
    }
    for (int k = 0; k < 2; k++)
        if ((rc = hccn_iallreduce(comms[k], buf[k], buf[k], MCNT, HCCN_FP32,
                                  HCCN_SUM, &f[k])) != HCCN_OK)
            return rc;
    for (int k = 1; k >= 0; k--) {
        if ((rc = hccn_wait(f[k])) != HCCN_OK ||
            (rc = hccn_future_times(f[k], NULL, &m->end[r][k])) != HCCN_OK)
            return rc;
        hccn_future_free(f[k]);
    }
    for (int k = 0; k < 2; k++) {
        memcpy(m->res[r][k], buf[k], MCNT * 4);
        hccn_free(ctx, buf[k]);
        if ((rc = hccn_comm_destroy(comms[k])) != HCCN_OK)
            return rc;
    }
    return HCCN_OK;
}

static int multi_member(int r, int q, int k)
{
    return k == 0 ? q % 2 == r % 2 : q / NODE == r / NODE;
}

static void test_multi_comm_in_flight(void **state)
{
    (void)state;
    hccn_cluster_t *cl = make_cluster();
    static multi_t m[MRUNS];
    for (int run = 0; run < MRUNS; run++) {
        for (int r = 0; r < NR; r++)
            for (int k = 0; k < 2; k++)
                m[run].res[r][k] = calloc(MCNT, sizeof(float));
        run_ok(cl, multi_rank, &m[run]);
    }
    for (int r = 0; r < NR; r++)
        for (int k = 0; k < 2; k++) {
            for (size_t i = 0; i < MCNT; i++) {
                float want = 0.0f;
                for (int q = 0; q < NR; q++)
                    if (multi_member(r, q, k))
                        want += ival(q, i, 10 + k);
                if (m[0].res[r][k][i] != want)
                    fail_msg("rank %d comm %d element %zu: %g, expected %g",
                             r, k, i, m[0].res[r][k][i], want);
            }
            assert_true(m[0].end[r][k] > 0.0);
        }
    for (int run = 1; run < MRUNS; run++) {
        assert_memory_equal(m[run].end, m[0].end, sizeof(m[0].end));
        for (int r = 0; r < NR; r++)
            for (int k = 0; k < 2; k++)
                assert_memory_equal(m[run].res[r][k], m[0].res[r][k],
                                    MCNT * sizeof(float));
    }
    for (int run = 0; run < MRUNS; run++)
        for (int r = 0; r < NR; r++)
            for (int k = 0; k < 2; k++)
                free(m[run].res[r][k]);
    hccn_cluster_destroy(cl);
}

/* ================================================ compute/comm overlap */

#define VCNT 65536

typedef struct {
    double step[NR][3];
    int ok[NR];
} overlap_t;

/* Three steps on the node communicator, each from an idle communicator at
 * a clock T0 shared by the node's ranks:
 *   0: post, compute t = c/2, wait   -> T0 + max(t, c) = T0 + c
 *   1: post, compute t = 2c,  wait   -> T0 + max(t, c) = T0 + 2c
 *   2: blocking allreduce, compute c/2 -> T0 + c + c/2 (no overlap)
 * where c is the allreduce's closed-form time. */
static hccn_status_t overlap_rank(hccn_ctx_t *ctx, void *arg)
{
    overlap_t *o = arg;
    int r = hccn_rank(ctx);
    const double c = node_allreduce_time(VCNT);
    const double t[3] = {0.5 * c, 2.0 * c, 0.5 * c};
    hccn_comm_t *nc;
    float *buf;
    hccn_status_t rc;
    if ((rc = node_comm(ctx, &nc)) != HCCN_OK ||
        (rc = hccn_malloc(ctx, VCNT * 4, (void **)&buf)) != HCCN_OK)
        return rc;
    o->ok[r] = 1;
    for (int s = 0; s < 3; s++) {
        for (size_t i = 0; i < VCNT; i++)
            buf[i] = ival(r, i, 20 + s);
        double t0 = hccn_time(ctx);
        if (s < 2) {
            hccn_future_t *f;
            if ((rc = hccn_iallreduce(nc, buf, buf, VCNT, HCCN_FP32, HCCN_SUM,
                                      &f)) != HCCN_OK)
                return rc;
            hccn_compute(ctx, t[s]);
            if ((rc = hccn_wait(f)) != HCCN_OK)
                return rc;
            hccn_future_free(f);
        } else {
            if ((rc = hccn_allreduce(nc, buf, buf, VCNT, HCCN_FP32,
                                     HCCN_SUM)) != HCCN_OK)
                return rc;
            hccn_compute(ctx, t[s]);
        }
        o->step[r][s] = hccn_time(ctx) - t0;
        for (size_t i = 0; i < VCNT; i++) {
            float want = 0.0f;
            for (int q = 0; q < NODE; q++)
                want += ival(hccn_node(ctx) * NODE + q, i, 20 + s);
            o->ok[r] &= buf[i] == want;
        }
    }
    hccn_free(ctx, buf);
    return hccn_comm_destroy(nc);
}

static void test_overlap(void **state)
{
    (void)state;
    hccn_cluster_t *cl = make_cluster();
    overlap_t o = {0};
    run_ok(cl, overlap_rank, &o);
    const double c = node_allreduce_time(VCNT);
    for (int r = 0; r < NR; r++) {
        assert_true(o.ok[r]);
        assert_time(o.step[r][0], fmax(0.5 * c, c), "overlap, t = c/2", r);
        assert_time(o.step[r][1], fmax(2.0 * c, c), "overlap, t = 2c", r);
        assert_time(o.step[r][2], c + 0.5 * c, "no overlap", r);
    }
    hccn_cluster_destroy(cl);
}

/* ============================================================== misuse */

enum { U_WAIT_TWICE, U_FREE_PENDING, U_TIMES_PENDING, U_DESTROY_PENDING,
       U_USE_DESTROYED, U_POST_DESTROYED, U_SPLIT_DESTROYED,
       U_DESTROY_TWICE, U_DESTROY_WORLD, U_WAIT_NULL, U_TEST_NULL, NMIS };

typedef struct {
    hccn_status_t rc[NR][NMIS];
    char msg[NR][NMIS][160];
    unsigned bad[NR];          /* bit k: valid call k around the misuse failed */
} misuse_t;

static void note(misuse_t *u, int r, int k, hccn_status_t rc)
{
    u->rc[r][k] = rc;
    snprintf(u->msg[r][k], sizeof(u->msg[r][k]), "%s", hccn_last_error());
}

/* Records that the valid call number k did not do what it should. */
static void expect(misuse_t *u, int r, int k, int cond)
{
    if (!cond)
        u->bad[r] |= 1u << k;
}

static hccn_status_t misuse_rank(hccn_ctx_t *ctx, void *arg)
{
    misuse_t *u = arg;
    int r = hccn_rank(ctx), done;
    hccn_comm_t *w = hccn_comm_world(ctx), *nc, *sub;
    float *buf;
    hccn_future_t *f;
    hccn_status_t rc;
    if ((rc = hccn_malloc(ctx, 1024 * 4, (void **)&buf)) != HCCN_OK)
        return rc;
    for (int i = 0; i < 1024; i++)
        buf[i] = 1.0f;

    /* Waiting twice: the second wait is an error and changes nothing. */
    if ((rc = hccn_iallreduce(w, buf, buf, 1024, HCCN_FP32, HCCN_SUM, &f)))
        return rc;
    expect(u, r, 0, hccn_wait(f) == HCCN_OK);
    double clock = hccn_time(ctx);
    note(u, r, U_WAIT_TWICE, hccn_wait(f));
    expect(u, r, 1, hccn_time(ctx) == clock);
    expect(u, r, 2, hccn_future_free(f) == HCCN_OK);

    /* Freeing, or asking the times of, a future just posted. */
    if ((rc = hccn_iallreduce(w, buf, buf, 1024, HCCN_FP32, HCCN_SUM, &f)))
        return rc;
    note(u, r, U_FREE_PENDING, hccn_future_free(f));
    note(u, r, U_TIMES_PENDING, hccn_future_times(f, NULL, NULL));
    expect(u, r, 3, hccn_test(f, &done) == HCCN_OK && done == 0);
    expect(u, r, 4, hccn_wait(f) == HCCN_OK);
    expect(u, r, 5, hccn_future_free(f) == HCCN_OK);

    /* Destroying a communicator with a future not yet waited for. */
    if ((rc = node_comm(ctx, &nc)) != HCCN_OK)
        return rc;
    if ((rc = hccn_iallreduce(nc, buf, buf, 1024, HCCN_FP32, HCCN_SUM, &f)))
        return rc;
    note(u, r, U_DESTROY_PENDING, hccn_comm_destroy(nc));
    expect(u, r, 6, hccn_wait(f) == HCCN_OK);
    expect(u, r, 7, hccn_future_free(f) == HCCN_OK);
    expect(u, r, 8, buf[0] == 16.0f * 16.0f * 8.0f);

    /* Using a destroyed handle. Local rank 0 of each node destroys its
     * handle only after the others have misused theirs.
     * fixed, once: the last hccn_comm_destroy of a communicator frees every
     * member's handle (runtime/split.c hccn_comm_destroy -> runtime/comm.c
     * hccn_rt_comm_free -> comm_free_handles), so any call on a destroyed
     * handle after that reads freed memory (check_comm reads
     * comm->destroyed) instead of failing with HCCN_ERR_INVALID; the use of
     * a handle after the communicator is gone is not exercised here. */
    if (hccn_local_rank(ctx) != 0) {
        expect(u, r, 9, hccn_comm_destroy(nc) == HCCN_OK);
        note(u, r, U_USE_DESTROYED,
             hccn_allreduce(nc, buf, buf, 1024, HCCN_FP32, HCCN_SUM));
        note(u, r, U_POST_DESTROYED,
             hccn_iallreduce(nc, buf, buf, 1024, HCCN_FP32, HCCN_SUM, &f));
        note(u, r, U_SPLIT_DESTROYED, hccn_comm_split(nc, 0, 0, &sub));
        note(u, r, U_DESTROY_TWICE, hccn_comm_destroy(nc));
    }
    expect(u, r, 10, hccn_barrier(w) == HCCN_OK);
    if (hccn_local_rank(ctx) == 0)
        expect(u, r, 11, hccn_comm_destroy(nc) == HCCN_OK);
    note(u, r, U_DESTROY_WORLD, hccn_comm_destroy(w));
    note(u, r, U_WAIT_NULL, hccn_wait(NULL));
    note(u, r, U_TEST_NULL, hccn_test(NULL, &done));

    /* The world still works after all that. */
    for (int i = 0; i < 1024; i++)
        buf[i] = 2.0f;
    expect(u, r, 12,
           hccn_allreduce(w, buf, buf, 1024, HCCN_FP32, HCCN_SUM) == HCCN_OK);
    expect(u, r, 13, buf[1023] == 32.0f);
    hccn_free(ctx, buf);
    return HCCN_OK;
}

static void expect_err(const misuse_t *u, int r, int k, hccn_status_t code,
                       const char *w1, const char *w2)
{
    const char *m = u->msg[r][k];
    if (u->rc[r][k] != code || strstr(m, w1) == NULL ||
        (w2 != NULL && strstr(m, w2) == NULL))
        fail_msg("rank %d case %d: got %s \"%s\", expected %s with \"%s\"%s%s",
                 r, k, hccn_status_name(u->rc[r][k]), m,
                 hccn_status_name(code), w1, w2 ? " and " : "", w2 ? w2 : "");
}

static void test_misuse(void **state)
{
    (void)state;
    hccn_cluster_t *cl = make_cluster();
    misuse_t u;
    memset(&u, 0, sizeof(u));
    run_ok(cl, misuse_rank, &u);
    char rank_word[32];
    for (int r = 0; r < NR; r++) {
        if (u.bad[r] != 0)
            fail_msg("rank %d: valid calls around the misuse failed: mask "
                     "0x%x", r, u.bad[r]);
        snprintf(rank_word, sizeof(rank_word), "rank %d", r);
        expect_err(&u, r, U_WAIT_TWICE, HCCN_ERR_INVALID, "already waited",
                   rank_word);
        expect_err(&u, r, U_FREE_PENDING, HCCN_ERR_INPROGRESS, "pending",
                   "wait for it first");
        expect_err(&u, r, U_TIMES_PENDING, HCCN_ERR_INPROGRESS,
                   "not completed", rank_word);
        expect_err(&u, r, U_DESTROY_PENDING, HCCN_ERR_INPROGRESS,
                   "not yet waited", rank_word);
        if (r % NODE != 0) {
            expect_err(&u, r, U_USE_DESTROYED, HCCN_ERR_INVALID, "destroyed",
                       "hccn_allreduce");
            expect_err(&u, r, U_POST_DESTROYED, HCCN_ERR_INVALID, "destroyed",
                       "hccn_iallreduce");
            expect_err(&u, r, U_SPLIT_DESTROYED, HCCN_ERR_INVALID,
                       "destroyed", "hccn_comm_split");
            expect_err(&u, r, U_DESTROY_TWICE, HCCN_ERR_INVALID,
                       "already destroyed", rank_word);
        }
        expect_err(&u, r, U_DESTROY_WORLD, HCCN_ERR_INVALID, "world", NULL);
        expect_err(&u, r, U_WAIT_NULL, HCCN_ERR_INVALID, "NULL", NULL);
        expect_err(&u, r, U_TEST_NULL, HCCN_ERR_INVALID, "NULL", NULL);
    }
    hccn_cluster_destroy(cl);
}

/* ====================================== blocking collectives in a row */

static hccn_status_t seq_rank(hccn_ctx_t *ctx, void *arg)
{
    eq_t *e = arg;
    int r = hccn_rank(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx);
    hccn_status_t rc;
    for (int c = 0; c < NCOLL; c++) {
        float *sb = NULL, *rb = NULL;
        size_t ns = send_elems(c), nr = recv_elems(c);
        if ((ns > 0 && (rc = hccn_malloc(ctx, ns * 4, (void **)&sb))) ||
            (nr > 0 && (rc = hccn_malloc(ctx, nr * 4, (void **)&rb))))
            return rc;
        for (size_t i = 0; i < ns; i++)
            sb[i] = rval(r, c, i);
        if ((rc = run_coll(w, c, sb, rb)) != HCCN_OK)
            return rc;
        if (nr > 0)
            memcpy(e->out[r][c], rb, nr * 4);
        hccn_free(ctx, sb);
        hccn_free(ctx, rb);
    }
    return HCCN_OK;
}

/* All seven blocking, one after another in one run (ranks leave each one
 * at different times): the same bits as each one alone. */
static void test_blocking_sequence(void **state)
{
    (void)state;
    hccn_cluster_t *cl = make_cluster();
    static eq_t seq, one;
    eq_alloc(&seq, M_SYNC);
    eq_alloc(&one, M_SYNC);
    run_ok(cl, seq_rank, &seq);
    for (int c = 0; c < NCOLL; c++) {
        one.only = c;
        run_ok(cl, eq_rank, &one);
        assert_same_result(&seq, &one, c, "sequence vs alone");
    }
    eq_free(&seq);
    eq_free(&one);
    hccn_cluster_destroy(cl);
}

/* ============================ cases that once failed (runtime bugs) */

#define DCNT 65536

typedef struct {
    int ok[NR];
} chain_t;

/* Stream order applies to data too: an allreduce that reads the output of
 * the allreduce posted just before it on the same communicator sees that
 * output, as on one stream. */
static hccn_status_t chain_rank(hccn_ctx_t *ctx, void *arg)
{
    chain_t *d = arg;
    int r = hccn_rank(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx);
    float *x, *y, *z;
    hccn_future_t *f1, *f2;
    hccn_status_t rc;
    if ((rc = hccn_malloc(ctx, DCNT * 4, (void **)&x)) ||
        (rc = hccn_malloc(ctx, DCNT * 4, (void **)&y)) ||
        (rc = hccn_malloc(ctx, DCNT * 4, (void **)&z)))
        return rc;
    for (size_t i = 0; i < DCNT; i++) {
        x[i] = ival(r, i, 30);
        y[i] = -1.0f;
    }
    if ((rc = hccn_iallreduce(w, x, y, DCNT, HCCN_FP32, HCCN_SUM, &f1)) ||
        (rc = hccn_iallreduce(w, y, z, DCNT, HCCN_FP32, HCCN_SUM, &f2)) ||
        (rc = hccn_wait(f2)) || (rc = hccn_wait(f1)))
        return rc;
    hccn_future_free(f1);
    hccn_future_free(f2);
    d->ok[r] = 1;
    for (size_t i = 0; i < DCNT; i++) {
        float sum = 0.0f;
        for (int q = 0; q < NR; q++)
            sum += ival(q, i, 30);
        d->ok[r] &= y[i] == sum && z[i] == (float)NR * sum;
    }
    hccn_free(ctx, x);
    hccn_free(ctx, y);
    hccn_free(ctx, z);
    return HCCN_OK;
}

static void test_order_data(void **state)
{
    (void)state;
    /* fixed, once: runtime/exec.c progress_coll() runs the steps of every
     * posted collective as soon as their own dependencies allow, with no
     * dependency on the previous collective of the communicator, so the
     * second allreduce reads y before the first has written it: z is wrong
     * on every rank (every element, every run), although
     * include/hccn/hccn_coll.h and docs/api.md promise "operations on one
     * communicator complete in call order, as on one stream". */
    hccn_cluster_t *cl = make_cluster();
    chain_t d;
    memset(&d, 0, sizeof(d));
    run_ok(cl, chain_rank, &d);
    for (int r = 0; r < NR; r++)
        assert_true(d.ok[r]);
    hccn_cluster_destroy(cl);
}

typedef struct {
    hccn_status_t free_rc[NR], destroy_rc[NR];
} tested_t;

/* A future that hccn_test reported done, freed without hccn_wait: the
 * communicator has nothing left in flight and can be destroyed. */
static hccn_status_t tested_rank(hccn_ctx_t *ctx, void *arg)
{
    tested_t *t = arg;
    int r = hccn_rank(ctx), done = 0;
    hccn_comm_t *nc;
    float *buf;
    hccn_future_t *f;
    hccn_status_t rc;
    if ((rc = node_comm(ctx, &nc)) != HCCN_OK ||
        (rc = hccn_malloc(ctx, 1024 * 4, (void **)&buf)) != HCCN_OK)
        return rc;
    memset(buf, 0, 1024 * 4);
    if ((rc = hccn_iallreduce(nc, buf, buf, 1024, HCCN_FP32, HCCN_SUM, &f)))
        return rc;
    hccn_compute(ctx, 1.0);
    while (!done)
        if ((rc = hccn_test(f, &done)) != HCCN_OK)
            return rc;
    t->free_rc[r] = hccn_future_free(f);
    t->destroy_rc[r] = hccn_comm_destroy(nc);
    hccn_free(ctx, buf);
    return HCCN_OK;
}

static void test_free_after_test(void **state)
{
    (void)state;
    /* fixed, once: hccn_future_free (runtime/p2p.c) accepts a future whose
     * data has moved but that was never waited for, without decrementing
     * the communicator's count of futures not yet waited for
     * (comm->pending, decremented only in runtime/exec.c hccn_rt_op_wait),
     * so hccn_comm_destroy then fails forever with HCCN_ERR_INPROGRESS "1
     * operation(s) of this communicator not yet waited for". */
    hccn_cluster_t *cl = make_cluster();
    tested_t t;
    memset(&t, 0, sizeof(t));
    run_ok(cl, tested_rank, &t);
    for (int r = 0; r < NR; r++) {
        assert_int_equal(t.free_rc[r], HCCN_OK);
        assert_int_equal(t.destroy_rc[r], HCCN_OK);
    }
    hccn_cluster_destroy(cl);
}

#define PCNT 65536
#define PRUNS 4

typedef struct {
    double end[NR];
} poll_t;

/* The usual way to overlap without knowing the cost: compute in small
 * slices and test between them. */
static hccn_status_t poll_rank(hccn_ctx_t *ctx, void *arg)
{
    poll_t *t = arg;
    float *buf;
    hccn_future_t *f;
    int done = 0;
    hccn_status_t rc;
    if ((rc = hccn_malloc(ctx, PCNT * 4, (void **)&buf)) != HCCN_OK)
        return rc;
    memset(buf, 0, PCNT * 4);
    if ((rc = hccn_iallreduce(hccn_comm_world(ctx), buf, buf, PCNT,
                              HCCN_FP32, HCCN_SUM, &f)) != HCCN_OK)
        return rc;
    while (!done) {
        hccn_compute(ctx, 1e-6);
        if ((rc = hccn_test(f, &done)) != HCCN_OK)
            return rc;
    }
    if ((rc = hccn_wait(f)) != HCCN_OK)
        return rc;
    hccn_future_free(f);
    t->end[hccn_rank(ctx)] = hccn_time(ctx);
    hccn_free(ctx, buf);
    return HCCN_OK;
}

static void test_poll_loop(void **state)
{
    (void)state;
    /* fixed, once: hccn_test (runtime/p2p.c) moves data once and answers 0
     * while the operation's data plane is unfinished, even when its
     * simulated end has passed, so how many 1 us slices the loop above
     * computes depends on host scheduling: on configs/default.json a
     * 64 Ki-float allreduce of ~100 us ends the loop at 547 ms, 838 ms,
     * 712 ms, 315 ms, ... of simulated time on rank 0 in successive runs
     * (DESIGN.md: the same program gives the same times on every run).
     * Expected: the same end on every run, within a slice of the
     * operation's end. */
    hccn_cluster_t *cl = make_cluster();
    static poll_t t[PRUNS];
    for (int k = 0; k < PRUNS; k++) {
        run_ok(cl, poll_rank, &t[k]);
        if (k > 0)
            assert_memory_equal(t[k].end, t[0].end, sizeof(t[0].end));
    }
    for (int r = 0; r < NR; r++)
        assert_true(t[0].end[r] < 1e-3);
    hccn_cluster_destroy(cl);
}

int main(void)
{
    setenv("HCCN_TIMEOUT", "60", 0);   /* a hang fails, and says where */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_async_equals_sync),
        cmocka_unit_test(test_pending_then_done),
        cmocka_unit_test(test_order_one_comm),
        cmocka_unit_test(test_multi_comm_in_flight),
        cmocka_unit_test(test_overlap),
        cmocka_unit_test(test_misuse),
        cmocka_unit_test(test_blocking_sequence),
        cmocka_unit_test(test_order_data),
        cmocka_unit_test(test_free_after_test),
        cmocka_unit_test(test_poll_loop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
