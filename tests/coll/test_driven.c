/*
 * Driven collectives (runtime/exec.c): a small blocking collective runs
 * every rank's steps on the thread of the last rank to call it. The same
 * program runs on two clusters of the same topology, one that drives (the
 * default limit) and one that never does (drive_bytes < 0); every rank's
 * output bytes and its clock after every call must be identical, and the
 * first cluster must really have driven the calls it was meant to (its
 * count of driven collectives), the second none. Sums are also checked
 * against a closed form, so that two equally wrong paths cannot pass.
 * The threaded cluster runs under host-load stress (jitter_us): its ranks
 * sleep at random in their waits, between finding nothing to do and
 * judging their peers, which is where a rank that just returned must not
 * be taken for one that deserted the call.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hccn/hccn.h"
#include "hierarchy/coll.h"
#include "runtime/rt.h"
#include "test_util.h"

#define NR 16            /* ranks of default.json */
#define CNT 37           /* elements per block: does not divide by 16 */
#define MAXCALLS 8
#define JITTER_US 300   /* the threaded cluster's host-load stress */

typedef struct {
    hccn_coll_t coll;
    const char *spec;    /* forced algorithm, or NULL */
    int async_before;    /* an iallreduce still in flight at the call */
    int32_t out[NR][NR * CNT];
    double ends[NR][MAXCALLS];
} prog_t;

static int32_t input(int rank, size_t i)
{
    return (int32_t)(rank * 1000 + (int)i % 97 - 40);
}

static hccn_status_t call(hccn_comm_t *w, hccn_coll_t c, const int32_t *sb,
                          int32_t *rb, const size_t *counts,
                          const size_t *displs)
{
    switch (c) {
    case HCCN_COLL_ALLREDUCE:
        return hccn_allreduce(w, sb, rb, CNT, HCCN_INT32, HCCN_SUM);
    case HCCN_COLL_REDUCE_SCATTER:
        return hccn_reduce_scatter(w, sb, rb, CNT, HCCN_INT32, HCCN_SUM);
    case HCCN_COLL_ALLGATHER:
        return hccn_allgather(w, sb, rb, CNT, HCCN_INT32);
    case HCCN_COLL_BROADCAST:
        return hccn_broadcast(w, sb, rb, CNT, HCCN_INT32, 3);
    case HCCN_COLL_REDUCE:
        return hccn_reduce(w, sb, rb, CNT, HCCN_INT32, HCCN_MAX, 5);
    case HCCN_COLL_ALLTOALL:
        return hccn_alltoall(w, sb, rb, CNT, HCCN_INT32);
    case HCCN_COLL_SCATTER:
        return hccn_scatter(w, sb, rb, CNT, HCCN_INT32, 2);
    case HCCN_COLL_GATHER:
        return hccn_gather(w, sb, rb, CNT, HCCN_INT32, 7);
    case HCCN_COLL_ALLGATHERV:
        return hccn_allgatherv(w, sb, counts[hccn_comm_rank(w)], rb, counts,
                               displs, HCCN_INT32);
    case HCCN_COLL_REDUCE_SCATTERV:
        return hccn_reduce_scatterv(w, sb, rb, counts, HCCN_INT32, HCCN_SUM);
    case HCCN_COLL_ALLTOALLV:
        return hccn_alltoallv(w, sb, counts, displs, rb, counts, displs,
                              HCCN_INT32);
    default:
        return hccn_barrier(w);
    }
}

/* Three calls of p->coll (the second and third in stream order after the
 * first, rewriting the send buffer in between), with an iallreduce in
 * flight around the second when p->async_before is set. */
static hccn_status_t rank_fn(hccn_ctx_t *ctx, void *arg)
{
    prog_t *p = arg;
    int r = hccn_rank(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx);
    size_t bytes = (size_t)NR * CNT * sizeof(int32_t);
    int32_t *sb, *rb, *ab;
    size_t counts[NR], displs[NR], off = 0;
    for (int q = 0; q < NR; q++) {
        /* Uneven, with zeros; alltoallv's are symmetric in (r, q), so
         * that what r sends q is what q expects from r. */
        counts[q] = p->coll == HCCN_COLL_ALLTOALLV ? (size_t)((r + q) * 3 % 11)
                                                   : (size_t)(q * 5 % CNT);
        displs[q] = off;
        off += counts[q];
    }
    hccn_status_t rc;
    if ((rc = hccn_comm_set_algo(w, p->spec)) != HCCN_OK ||
        (rc = hccn_malloc(ctx, bytes, (void **)&sb)) != HCCN_OK ||
        (rc = hccn_malloc(ctx, bytes, (void **)&rb)) != HCCN_OK ||
        (rc = hccn_malloc(ctx, 4096 * sizeof(int32_t), (void **)&ab)) != HCCN_OK)
        return rc;
    for (int k = 0; k < 3 && rc == HCCN_OK; k++) {
        for (size_t i = 0; i < (size_t)NR * CNT; i++)
            sb[i] = input(r, i) + k;
        memset(rb, 0, bytes);
        hccn_future_t *f = NULL;
        if (p->async_before && k == 1) {
            for (int i = 0; i < 4096; i++)
                ab[i] = r + i;
            rc = hccn_iallreduce(w, ab, ab, 4096, HCCN_INT32, HCCN_SUM, &f);
        }
        if (rc == HCCN_OK)
            rc = call(w, p->coll, sb, rb, counts, displs);
        p->ends[r][k] = hccn_time(ctx);
        if (f != NULL) {
            hccn_status_t fr = hccn_wait(f);
            if (fr == HCCN_OK)
                fr = hccn_future_free(f);
            if (rc == HCCN_OK)
                rc = fr;
            for (int i = 0; rc == HCCN_OK && i < 4096; i++)
                if (ab[i] != NR * (NR - 1) / 2 + NR * i)
                    rc = HCCN_ERR_INTERNAL;
        }
    }
    memcpy(p->out[r], rb, bytes);
    return rc;
}

static const char *config(void)
{
    static char *text;
    if (text == NULL)
        text = test_read_file(test_path("configs/default.json"));
    assert_non_null(text);
    return text;
}

/* Runs fn(arg) on a default.json cluster with drive_bytes and jitter_us
 * (what: the program, for a failure's message); returns the collectives
 * driven. */
static uint64_t run_cluster(hccn_rank_fn fn, void *arg, const char *what,
                            long long drive_bytes, int jitter_us)
{
    hccn_cluster_opts_t o = {.struct_size = sizeof(o),
                             .drive_bytes = drive_bytes,
                             .jitter_us = jitter_us};
    hccn_cluster_t *cl;
    assert_int_equal(hccn_cluster_create_json(config(), "default.json", &o,
                                              &cl), HCCN_OK);
    assert_int_equal(hccn_cluster_size(cl), NR);
    hccn_status_t rc = hccn_cluster_run(cl, fn, arg, NULL);
    if (rc != HCCN_OK)
        fail_msg("%s: %s: %s", what, hccn_status_name(rc), hccn_last_error());
    uint64_t n = atomic_load(&cl->ndriven);
    hccn_cluster_destroy(cl);
    return n;
}

/* Runs p with drive_bytes and jitter_us; returns the collectives driven. */
static uint64_t run(prog_t *p, long long drive_bytes, int jitter_us)
{
    char what[96];
    snprintf(what, sizeof(what), "%s spec %s", hccn_coll_name(p->coll),
             p->spec ? p->spec : "(auto)");
    memset(p->out, 0, sizeof(p->out));
    return run_cluster(rank_fn, p, what, drive_bytes, jitter_us);
}

/* The allreduce's third result in closed form: sum over ranks of
 * input(r, i) + 2. */
static void check_allreduce_sums(const prog_t *p)
{
    for (int r = 0; r < NR; r++)
        for (size_t i = 0; i < CNT; i++) {
            int32_t want = 0;
            for (int q = 0; q < NR; q++)
                want += input(q, i) + 2;
            assert_int_equal(p->out[r][i], want);
        }
}

/* p both ways: same bytes, same clocks; driven as expected. */
static void compare(prog_t *p, uint64_t want_driven)
{
    static prog_t threaded;
    threaded = *p;
    uint64_t nt = run(&threaded, -1, JITTER_US);
    uint64_t nd = run(p, 0, -1);
    assert_int_equal(nt, 0);
    if (nd != want_driven)
        fail_msg("%s spec %s: %llu collectives driven, expected %llu",
                 hccn_coll_name(p->coll), p->spec ? p->spec : "(auto)",
                 (unsigned long long)nd, (unsigned long long)want_driven);
    assert_memory_equal(p->out, threaded.out, sizeof(p->out));
    for (int r = 0; r < NR; r++)
        for (int k = 0; k < 3; k++)
            if (p->ends[r][k] != threaded.ends[r][k])
                fail_msg("%s spec %s: rank %d call %d ends at %.17g s "
                         "driven, %.17g s threaded", hccn_coll_name(p->coll),
                         p->spec ? p->spec : "(auto)", r, k, p->ends[r][k],
                         threaded.ends[r][k]);
    if (p->coll == HCCN_COLL_ALLREDUCE)
        check_allreduce_sums(p);
}

/* Every collective with the cost model's choice and every algorithm of
 * the table that implements it: 3 calls, all driven. */
static void test_every_algorithm(void **state)
{
    (void)state;
    static prog_t p;
    const hccn_algo_t *algos = hccn_hier_algos();
    int ran = 0;
    for (int c = 0; c < HCCN_COLL_COUNT; c++)
        for (int a = -1; a < 0 || algos[a].name != NULL; a++) {
            if (a >= 0 && !(algos[a].colls & 1u << c))
                continue;
            memset(&p, 0, sizeof(p));
            p.coll = (hccn_coll_t)c;
            p.spec = a >= 0 ? algos[a].name : NULL;
            compare(&p, 3);
            ran++;
        }
    printf("%d programs: driven and threaded runs agree\n", ran);
}

/* A blocking collective called while an iallreduce is in flight is not
 * driven (its bytes must follow the iallreduce's, which its own thread
 * moves); the others still are. The iallreduce's sums are checked in the
 * rank function, the allreduce's here. */
static void test_async_in_flight(void **state)
{
    (void)state;
    static prog_t p;
    memset(&p, 0, sizeof(p));
    p.coll = HCCN_COLL_ALLREDUCE;
    p.async_before = 1;
    compare(&p, 2);
}

/* Driven calls of one schedule follow the order the first one recorded
 * (exec.c, plans); a plan made without compression may fuse a receive with
 * its reduction, which a compressed call must not do (its bytes are
 * rounded to the wire type on the way). fp32 allreduces, uncompressed,
 * bf16, uncompressed, fp16, with every allreduce algorithm: each call's
 * bytes and clocks equal a threaded cluster's, and the compressed results
 * differ from the uncompressed ones (the rounding happened). */
#define NCMP 4
static const int cmp_modes[NCMP] = {HCCN_COMPRESS_NONE, HCCN_COMPRESS_BF16,
                                    HCCN_COMPRESS_NONE, HCCN_COMPRESS_FP16};
typedef struct {
    const char *spec;
    float out[NCMP][NR][CNT];
    double ends[NR][NCMP];
} cmp_prog_t;

static hccn_status_t cmp_rank_fn(hccn_ctx_t *ctx, void *arg)
{
    cmp_prog_t *p = arg;
    int r = hccn_rank(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx);
    float *sb, *rb;
    hccn_status_t rc;
    if ((rc = hccn_comm_set_algo(w, p->spec)) != HCCN_OK ||
        (rc = hccn_malloc(ctx, CNT * sizeof(float), (void **)&sb)) != HCCN_OK ||
        (rc = hccn_malloc(ctx, CNT * sizeof(float), (void **)&rb)) != HCCN_OK)
        return rc;
    for (int k = 0; k < NCMP && rc == HCCN_OK; k++) {
        for (int i = 0; i < CNT; i++)
            sb[i] = 1.0f + (float)(r * 37 + i) * 1.3e-3f;
        hccn_coll_opts_t o = {.struct_size = sizeof(o),
                              .compress = cmp_modes[k]};
        rc = hccn_allreduce_opts(w, sb, rb, CNT, HCCN_FP32, HCCN_SUM, &o,
                                 NULL);
        p->ends[r][k] = hccn_time(ctx);
        memcpy(p->out[k][r], rb, sizeof(p->out[k][r]));
    }
    return rc;
}

static void test_plans_and_compression(void **state)
{
    (void)state;
    static cmp_prog_t d, t;
    const hccn_algo_t *algos = hccn_hier_algos();
    for (int a = -1; a < 0 || algos[a].name != NULL; a++) {
        if (a >= 0 && !(algos[a].colls & 1u << HCCN_COLL_ALLREDUCE))
            continue;
        memset(&d, 0, sizeof(d));
        d.spec = a >= 0 ? algos[a].name : NULL;
        t = d;
        const char *name = d.spec ? d.spec : "(auto)";
        assert_int_equal(run_cluster(cmp_rank_fn, &d, name, 0, -1), NCMP);
        assert_int_equal(run_cluster(cmp_rank_fn, &t, name, -1, -1), 0);
        for (int k = 0; k < NCMP; k++)
            for (int r = 0; r < NR; r++) {
                if (memcmp(d.out[k][r], t.out[k][r], sizeof(d.out[k][r])))
                    fail_msg("%s: call %d (compression %d), rank %d: driven "
                             "bytes differ from threaded", name, k,
                             cmp_modes[k], r);
                if (d.ends[r][k] != t.ends[r][k])
                    fail_msg("%s: call %d, rank %d ends at %.17g s driven, "
                             "%.17g s threaded", name, k, r, d.ends[r][k],
                             t.ends[r][k]);
            }
        if (!memcmp(d.out[0], d.out[1], sizeof(d.out[0])) ||
            !memcmp(d.out[0], d.out[3], sizeof(d.out[0])))
            fail_msg("%s: compressed results equal uncompressed ones", name);
        if (memcmp(d.out[0], d.out[2], sizeof(d.out[0])))
            fail_msg("%s: calls 0 and 2 differ", name);
    }
}

/* The plan cache (runtime/plan_cache.c): one entry per kind of call,
 * made once for all ranks and kept across runs; a change of the fault
 * plan empties it (its one invalidation rule), and the next run makes it
 * again with the same bytes, in the times of a fresh cluster with that
 * fault. Two allreduces and an allgather of CNT int32 per run. */
typedef struct {
    int32_t ar[NR][CNT], ag[NR][NR * CNT];
    double ends[NR][3];
} pc_prog_t;

static hccn_status_t pc_rank_fn(hccn_ctx_t *ctx, void *arg)
{
    pc_prog_t *p = arg;
    int r = hccn_rank(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx);
    int32_t *sb, *rb;
    hccn_status_t rc;
    if ((rc = hccn_malloc(ctx, CNT * sizeof(int32_t), (void **)&sb)) != HCCN_OK ||
        (rc = hccn_malloc(ctx, NR * CNT * sizeof(int32_t), (void **)&rb)) !=
            HCCN_OK)
        return rc;
    for (int i = 0; i < CNT; i++)
        sb[i] = input(r, (size_t)i);
    for (int k = 0; k < 2 && rc == HCCN_OK; k++) {
        rc = hccn_allreduce(w, sb, rb, CNT, HCCN_INT32, HCCN_SUM);
        p->ends[r][k] = hccn_time(ctx);
    }
    memcpy(p->ar[r], rb, sizeof(p->ar[r]));
    if (rc == HCCN_OK)
        rc = hccn_allgather(w, sb, rb, CNT, HCCN_INT32);
    p->ends[r][2] = hccn_time(ctx);
    memcpy(p->ag[r], rb, sizeof(p->ag[r]));
    return rc;
}

static void pc_check_sums(const pc_prog_t *p)
{
    for (int r = 0; r < NR; r++)
        for (int i = 0; i < CNT; i++) {
            int32_t want = 0;
            for (int q = 0; q < NR; q++) {
                want += input(q, (size_t)i);
                assert_int_equal(p->ag[r][q * CNT + i], input(q, (size_t)i));
            }
            assert_int_equal(p->ar[r][i], want);
        }
}

static void test_plan_cache(void **state)
{
    (void)state;
    static pc_prog_t a, b, c;
    hccn_cluster_t *cl, *fresh;
    hccn_fault_t slow = {.struct_size = sizeof(slow),
                         .kind = HCCN_FAULT_NPU_SLOW, .npu = 3, .factor = 4};
    assert_int_equal(hccn_cluster_create(test_path("configs/default.json"),
                                         NULL, &cl), HCCN_OK);
    rt_comm_t *w = cl->world;
    assert_int_equal(hccn_cluster_run(cl, pc_rank_fn, &a, NULL), HCCN_OK);
    pc_check_sums(&a);
    assert_int_equal(w->nentries, 2);   /* the allreduce, the allgather */
    for (int i = 0; i < w->nentries; i++)
        assert_non_null(w->entries[i]->sched);
    int plans = w->nplans;
    assert_true(plans >= 1);            /* small calls are driven */
    assert_int_equal(hccn_cluster_run(cl, pc_rank_fn, &b, NULL), HCCN_OK);
    assert_int_equal(w->nentries, 2);   /* found again, not made again */
    assert_int_equal(w->nplans, plans);
    assert_memory_equal(&a, &b, sizeof(a));

    assert_int_equal(hccn_cluster_add_fault(cl, &slow), HCCN_OK);
    assert_int_equal(w->nentries, 0);
    assert_int_equal(w->nplans, 0);
    assert_int_equal(hccn_cluster_run(cl, pc_rank_fn, &b, NULL), HCCN_OK);
    assert_int_equal(w->nentries, 2);
    assert_memory_equal(a.ar, b.ar, sizeof(a.ar));
    assert_memory_equal(a.ag, b.ag, sizeof(a.ag));
    assert_true(b.ends[3][2] > a.ends[3][2]);   /* the slow NPU shows */

    assert_int_equal(hccn_cluster_create(test_path("configs/default.json"),
                                         NULL, &fresh), HCCN_OK);
    assert_int_equal(hccn_cluster_add_fault(fresh, &slow), HCCN_OK);
    assert_int_equal(hccn_cluster_run(fresh, pc_rank_fn, &c, NULL), HCCN_OK);
    assert_memory_equal(&b, &c, sizeof(b));
    assert_int_equal(hccn_cluster_clear_faults(cl), HCCN_OK);
    assert_int_equal(w->nentries, 0);
    hccn_cluster_destroy(fresh);
    hccn_cluster_destroy(cl);
}

/* Only calls within the limit are driven, also when a call repeats (a
 * rank remembers what its steps move with the schedule): small and large
 * allreduces alternate three times under a 4 KiB limit; each rank moves
 * far more than that in the large one. Sums against the closed form. */
#define BIG 4096
typedef struct {
    int32_t small[NR][CNT], big[NR][BIG];
} limit_prog_t;

static hccn_status_t limit_rank_fn(hccn_ctx_t *ctx, void *arg)
{
    limit_prog_t *p = arg;
    int r = hccn_rank(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx);
    int32_t *sb, *rb;
    hccn_status_t rc;
    if ((rc = hccn_malloc(ctx, BIG * sizeof(int32_t), (void **)&sb)) != HCCN_OK ||
        (rc = hccn_malloc(ctx, BIG * sizeof(int32_t), (void **)&rb)) != HCCN_OK)
        return rc;
    for (int i = 0; i < BIG; i++)
        sb[i] = input(r, (size_t)i);
    for (int k = 0; k < 3 && rc == HCCN_OK; k++) {
        rc = hccn_allreduce(w, sb, rb, CNT, HCCN_INT32, HCCN_SUM);
        memcpy(p->small[r], rb, sizeof(p->small[r]));
        if (rc == HCCN_OK)
            rc = hccn_allreduce(w, sb, rb, BIG, HCCN_INT32, HCCN_SUM);
        memcpy(p->big[r], rb, sizeof(p->big[r]));
    }
    return rc;
}

static void test_limit(void **state)
{
    (void)state;
    static limit_prog_t p;
    memset(&p, 0, sizeof(p));
    assert_int_equal(run_cluster(limit_rank_fn, &p, "limit", 4096, -1), 3);
    for (int r = 0; r < NR; r++)
        for (size_t i = 0; i < BIG; i++) {
            int32_t want = 0;
            for (int q = 0; q < NR; q++)
                want += input(q, i);
            assert_int_equal(p.big[r][i], want);
            if (i < CNT)
                assert_int_equal(p.small[r][i], want);
        }
}

/* A driver that follows a plan works out where the bytes go once, and
 * again only when the buffers change (exec.c, moves_for); the type and
 * the operator are each call's own. Calls on one schedule that change
 * the buffers, the operator, the type (of the same size) in turn, then
 * one in place; every result against the closed form. */
#define NMOVES 6
static int moves_input(int rank, int k, int i)
{
    return (rank * 7 + k * 5 + i * 3) % 23 - 11;
}

typedef struct {
    int32_t out[NMOVES][NR][CNT];
} moves_prog_t;

static hccn_status_t moves_rank_fn(hccn_ctx_t *ctx, void *arg)
{
    moves_prog_t *p = arg;
    int r = hccn_rank(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx);
    int32_t *b[4];
    hccn_status_t rc = HCCN_OK;
    for (int i = 0; i < 4 && rc == HCCN_OK; i++)
        rc = hccn_malloc(ctx, CNT * sizeof(int32_t), (void **)&b[i]);
    /* send, recv, type, operator: the same twice, then one change each;
     * the last call is in place. */
    static const int sel[NMOVES][2] = {{0, 1}, {0, 1}, {2, 3}, {2, 3},
                                       {0, 1}, {1, 1}};
    for (int k = 0; k < NMOVES && rc == HCCN_OK; k++) {
        int32_t *sb = b[sel[k][0]], *rb = b[sel[k][1]];
        int fp = k == 4;
        for (int i = 0; i < CNT; i++) {
            if (fp)
                ((float *)sb)[i] = (float)moves_input(r, k, i) * 0.5f;
            else
                sb[i] = moves_input(r, k, i);
        }
        rc = hccn_allreduce(w, sb, rb, CNT, fp ? HCCN_FP32 : HCCN_INT32,
                            k == 3 ? HCCN_MAX : HCCN_SUM);
        memcpy(p->out[k][r], rb, sizeof(p->out[k][r]));
    }
    return rc;
}

static void test_moves(void **state)
{
    (void)state;
    static moves_prog_t p;
    memset(&p, 0, sizeof(p));
    assert_int_equal(run_cluster(moves_rank_fn, &p, "moves", 0, -1), NMOVES);
    for (int k = 0; k < NMOVES; k++)
        for (int r = 0; r < NR; r++)
            for (int i = 0; i < CNT; i++) {
                int32_t want = k == 3 ? INT32_MIN : 0;
                float fwant = 0.0f;
                for (int q = 0; q < NR; q++) {
                    int v = moves_input(q, k, i);
                    want = k == 3 ? (v > want ? v : want) : want + v;
                    fwant += (float)v * 0.5f;   /* exact: small halves */
                }
                if (k == 4) {
                    float got;
                    memcpy(&got, &p.out[k][r][i], sizeof(got));
                    if (got != fwant)
                        fail_msg("call %d rank %d [%d]: %g, expected %g", k,
                                 r, i, (double)got, (double)fwant);
                } else if (p.out[k][r][i] != want) {
                    fail_msg("call %d rank %d [%d]: %d, expected %d", k, r,
                             i, p.out[k][r][i], want);
                }
            }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_moves),
        cmocka_unit_test(test_plan_cache),
        cmocka_unit_test(test_limit),
        cmocka_unit_test(test_plans_and_compression),
        cmocka_unit_test(test_async_in_flight),
        cmocka_unit_test(test_every_algorithm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
