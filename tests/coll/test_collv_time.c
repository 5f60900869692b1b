/*
 * Simulated time of ring allgatherv and reduce_scatterv on
 * configs/ring-8.json (links r -> r+1 only, so each ring hop has its own
 * link and no two transfers ever share one), against a recurrence over
 * the rounds computed here from the topology's figures:
 *
 *   S_k(r)  = max(D_{k-1}(r), D_{k-1}(r+1))      transfer r -> r+1 starts
 *   send    = S_k(r) + b / B_r                   drained
 *   recv    = S_k(r) + b / B_r + lat_r (+ b / R for reduce_scatterv)
 *   D_k(r)  = max(send of r, recv at r)          both steps of round k
 *
 * with D_{-1} = 0, b the bytes of the block rank r passes in round k
 * (allgatherv: block r-k; reduce_scatterv: block r-k-1), B_r and lat_r the
 * bottleneck bandwidth and latency of the route r -> r+1, R the NPU's
 * reduction bandwidth. Allgatherv's own-block copy runs beside the ring
 * (bytes / mem_bw, free without one). The call's time is the largest
 * hccn_last_duration() over the ranks, each call in a fresh
 * hccn_cluster_run, so every rank calls it at 0. Relative tolerance 1e-9.
 *
 * With equal counts the v-forms must take exactly the time of allgather
 * and reduce_scatter, which the same program measures.
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

#include "device_sim/topo.h"
#include "hccn/hccn.h"
#include "test_util.h"

#define MAXR 8

typedef enum { C_AGV, C_RSV, C_AG, C_RS } coll_t;

/* ------------------------------------------------------ the reference */

typedef struct {
    int p;
    double lat[MAXR], bw[MAXR];   /* route r -> r+1 */
    double R, M;                  /* reduce_bw, mem_bw (0: copies free) */
} figs_t;

static figs_t read_figs(const hccn_sim_topo_t *t)
{
    figs_t f = {.p = t->nnpus};
    assert_true(f.p <= MAXR);
    for (int r = 0; r < f.p; r++) {
        int links[HCCN_SIM_ROUTE_MAX];
        int n = hccn_sim_topo_route(t, r, (r + 1) % f.p, links, &f.lat[r]);
        assert_true(n >= 1);
        f.bw[r] = INFINITY;
        for (int i = 0; i < n; i++)
            f.bw[r] = fmin(f.bw[r], t->links[links[i]].bw);
    }
    f.R = t->npus[0].reduce_bw;
    f.M = t->npus[0].mem_bw;
    return f;
}

/* The recurrence at the top of the file for blocks of cnt elements of es
 * bytes; rs: reduce_scatterv. */
static double ring_ref(const figs_t *f, const size_t *cnt, size_t es, int rs)
{
    int p = f->p;
    double D[MAXR] = {0}, N[MAXR], snd[MAXR], rcv[MAXR];
    size_t total = 0;
    for (int i = 0; i < p; i++)
        total += cnt[i];
    if (total == 0)
        return 0.0;   /* nothing to do: an empty schedule */
    for (int k = 0; k < p - 1; k++) {
        for (int r = 0; r < p; r++) {
            int to = (r + 1) % p, blk = ((r - k - rs) % p + p) % p;
            double b = (double)(cnt[blk] * es);
            double s = fmax(D[r], D[to]);
            snd[r] = s + b / f->bw[r];
            rcv[to] = snd[r] + f->lat[r] + (rs ? b / f->R : 0.0);
        }
        for (int r = 0; r < p; r++)
            N[r] = fmax(snd[r], rcv[r]);
        memcpy(D, N, sizeof(D));
    }
    double end = 0.0;
    for (int r = 0; r < p; r++) {
        double copy = !rs && f->M > 0.0 ? (double)(cnt[r] * es) / f->M : 0.0;
        end = fmax(end, fmax(D[r], copy));
    }
    return end;
}

/* ------------------------------------------------------- one call */

typedef struct {
    coll_t coll;
    size_t cnt[MAXR];
    hccn_dtype_t dtype;
    int inplace;
    hccn_status_t rc[MAXR];
    double dur[MAXR];
    char err[MAXR][256];
} call_t;

static hccn_status_t post(call_t *c, hccn_comm_t *w, int r, int p,
                          char *mem, size_t es)
{
    size_t total = 0, before = 0, displs[MAXR];
    for (int i = 0; i < p; i++) {
        if (i < r)
            before += c->cnt[i];
        displs[i] = total;
        total += c->cnt[i];
    }
    char *send = mem, *recv = mem + total * es;
    switch (c->coll) {
    case C_AGV:
        if (c->inplace)
            send = recv + before * es;
        return hccn_allgatherv(w, send, c->cnt[r], recv, c->cnt, displs,
                               c->dtype);
    case C_RSV:
        return hccn_reduce_scatterv(w, send, recv, c->cnt, c->dtype,
                                    HCCN_SUM);
    case C_AG:
        return hccn_allgather(w, send, recv, c->cnt[0], c->dtype);
    default:
        return hccn_reduce_scatter(w, send, recv, c->cnt[0], c->dtype,
                                   HCCN_SUM);
    }
}

static hccn_status_t call_rank(hccn_ctx_t *ctx, void *arg)
{
    call_t *c = arg;
    int r = hccn_rank(ctx), p = hccn_nranks(ctx);
    size_t es = hccn_dtype_size(c->dtype), total = 0;
    for (int i = 0; i < p; i++)
        total += c->cnt[i];
    char *mem;
    hccn_status_t rc = hccn_malloc(ctx, 2 * total * es + 1, (void **)&mem);
    if (rc == HCCN_OK) {
        memset(mem, 0, 2 * total * es + 1);
        rc = post(c, hccn_comm_world(ctx), r, p, mem, es);
        hccn_free(ctx, mem);
    }
    c->rc[r] = rc;
    c->dur[r] = hccn_last_duration(ctx);
    snprintf(c->err[r], sizeof(c->err[r]), "%s",
             rc != HCCN_OK ? hccn_last_error() : "");
    return HCCN_OK;
}

static double run_call(hccn_cluster_t *cl, call_t *c)
{
    int p = hccn_cluster_size(cl);
    setenv("HCCN_ALGO", "ring", 1);
    hccn_status_t rc = hccn_cluster_run(cl, call_rank, c, NULL);
    unsetenv("HCCN_ALGO");
    assert_int_equal(rc, HCCN_OK);
    double hi = 0.0;
    for (int r = 0; r < p; r++) {
        if (c->rc[r] != HCCN_OK)
            fail_msg("rank %d: %s", r, c->err[r]);
        hi = fmax(hi, c->dur[r]);
    }
    return hi;
}

/* ------------------------------------------------------------ tests */

typedef struct {
    hccn_sim_topo_t *topo;
    hccn_cluster_t *cl;
    figs_t f;
} fix_t;

static int setup(void **state)
{
    const char *path = test_path("configs/ring-8.json");
    char err[512];
    fix_t *x = calloc(1, sizeof(*x));
    if (x == NULL ||
        hccn_sim_topo_load_file(path, &x->topo, err, sizeof(err)) != HCCN_OK ||
        hccn_cluster_create(path, NULL, &x->cl) != HCCN_OK)
        return -1;
    x->f = read_figs(x->topo);
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    fix_t *x = *state;
    hccn_cluster_destroy(x->cl);
    hccn_sim_topo_free(x->topo);
    free(x);
    return 0;
}

/* Uneven counts with zeros (one all-zero row, large and small blocks). */
static const size_t shapes[][MAXR] = {
    {1000, 0, 7, 250000, 3, 0, 40000, 12345},
    {0, 0, 0, 65536, 0, 0, 0, 0},
    {5, 100003, 0, 0, 1, 2, 3, 70000},
    {0, 0, 0, 0, 0, 0, 0, 0},
};

static void test_uneven(void **state)
{
    fix_t *x = *state;
    int p = x->f.p;
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
        for (int coll = C_AGV; coll <= C_RSV; coll++)
            for (int v = 0; v < 2; v++) {
                call_t c = {.coll = (coll_t)coll,
                            .dtype = v ? HCCN_FP16 : HCCN_FP32,
                            .inplace = v && coll == C_AGV};
                memcpy(c.cnt, shapes[s], sizeof(size_t) * (size_t)p);
                double got = run_call(x->cl, &c);
                double want = ring_ref(&x->f, c.cnt, hccn_dtype_size(c.dtype),
                                       coll == C_RSV);
                if (test_rel_diff(got, want) > 1e-9)
                    fail_msg("%s shape %zu %s%s: %.15g s, reference %.15g s",
                             coll == C_AGV ? "allgatherv" : "reduce_scatterv",
                             s, hccn_dtype_name(c.dtype),
                             c.inplace ? " in place" : "", got, want);
            }
}

/* Equal counts: the fixed-size collective's time, and the reference's. */
static void test_equal_counts(void **state)
{
    fix_t *x = *state;
    int p = x->f.p;
    static const size_t counts[] = {1, 7, 512, 32771};
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++)
        for (int coll = C_AGV; coll <= C_RSV; coll++) {
            call_t v = {.coll = (coll_t)coll, .dtype = HCCN_FP32};
            for (int i = 0; i < p; i++)
                v.cnt[i] = counts[k];
            call_t fixed = v;
            fixed.coll = coll == C_AGV ? C_AG : C_RS;
            double tv = run_call(x->cl, &v), tf = run_call(x->cl, &fixed);
            double want = ring_ref(&x->f, v.cnt, 4, coll == C_RSV);
            if (test_rel_diff(tv, tf) > 1e-9 || test_rel_diff(tv, want) > 1e-9)
                fail_msg("%s count %zu: %.15g s, fixed-size form %.15g s, "
                         "reference %.15g s",
                         coll == C_AGV ? "allgatherv" : "reduce_scatterv",
                         counts[k], tv, tf, want);
        }
}

/* The same call twice gives the same time, bit for bit. */
static void test_deterministic(void **state)
{
    fix_t *x = *state;
    call_t c = {.coll = C_RSV, .dtype = HCCN_FP32};
    memcpy(c.cnt, shapes[0], sizeof(size_t) * (size_t)x->f.p);
    double a = run_call(x->cl, &c), b = run_call(x->cl, &c);
    assert_true(a > 0.0);
    assert_memory_equal(&a, &b, sizeof(a));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uneven),
        cmocka_unit_test(test_equal_counts),
        cmocka_unit_test(test_deterministic),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
