/*
 * The three-level rows through the public API on leaf/spine clusters:
 * HCCN_ALGO's level2 forms force them; allreduce, reduce_scatter and
 * allgather give the serial reference's integers bit for bit; the time
 * each call reports is the one the cost model's engine gives the forced
 * row (so the schedule that ran is the row's), and on even pods it is not
 * hier's (so it is three levels). Pods of different sizes run too (two
 * levels).
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
#include "hierarchy/coll.h"
#include "hierarchy/cost.h"
#include "test_util.h"

#define MAXR 16

/* nodes nodes of npn NPUs, nodes_per_leaf per leaf, uplinks 2:1. */
static void cluster_json(char *buf, size_t len, int nodes, int npn,
                         int per_leaf)
{
    snprintf(buf, len,
             "{\"version\": 1, \"node_types\": [{\"count\": %d,"
             " \"npu\": {\"count\": %d, \"arena_MiB\": 8,"
             " \"reduce_bw_GBps\": 100}, \"fabric\": {\"type\": \"mesh\","
             " \"bw_GBps\": 50, \"lat_us\": 1.5}, \"nics\": {\"count\": %d,"
             " \"bw_GBps\": 20, \"lat_us\": 2}}], \"network\": {\"type\":"
             " \"leaf_spine\", \"lat_us\": 1, \"nodes_per_leaf\": %d,"
             " \"oversubscription\": 2}}",
             nodes, npn, npn, per_leaf);
}

typedef struct {
    hccn_coll_t coll;
    size_t count;
    hccn_status_t rc[MAXR];
    double dur[MAXR];
    int bad[MAXR];
    char err[MAXR][256];
} call_t;

static uint32_t input(int r, size_t i)
{
    unsigned long long st = ((unsigned long long)r << 32) ^ (i * 2654435761u);
    return (uint32_t)test_rand_next(&st);
}

/* What RECV element i of rank r must hold. */
static uint32_t expected(const call_t *c, int r, int p, size_t i)
{
    uint32_t s = 0;
    switch (c->coll) {
    case HCCN_COLL_ALLREDUCE:
        for (int q = 0; q < p; q++)
            s += input(q, i);
        return s;
    case HCCN_COLL_REDUCE_SCATTER:
        for (int q = 0; q < p; q++)
            s += input(q, (size_t)r * c->count + i);
        return s;
    default:
        return input((int)(i / c->count), i % c->count);
    }
}

static hccn_status_t call_rank(hccn_ctx_t *ctx, void *arg)
{
    call_t *c = arg;
    int r = hccn_rank(ctx), p = hccn_nranks(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx);
    size_t sn = c->coll == HCCN_COLL_REDUCE_SCATTER ? c->count * p : c->count;
    size_t rn = c->coll == HCCN_COLL_ALLGATHER ? c->count * p : c->count;
    uint32_t *mem;
    hccn_status_t rc = hccn_malloc(ctx, 4 * (sn + rn), (void **)&mem);
    if (rc != HCCN_OK)
        return rc;
    uint32_t *s = mem, *rv = mem + sn;
    for (size_t i = 0; i < sn; i++)
        s[i] = input(r, i);
    if (c->coll == HCCN_COLL_ALLREDUCE)
        rc = hccn_allreduce(w, s, rv, c->count, HCCN_INT32, HCCN_SUM);
    else if (c->coll == HCCN_COLL_REDUCE_SCATTER)
        rc = hccn_reduce_scatter(w, s, rv, c->count, HCCN_INT32, HCCN_SUM);
    else
        rc = hccn_allgather(w, s, rv, c->count, HCCN_INT32);
    c->rc[r] = rc;
    c->dur[r] = hccn_last_duration(ctx);
    snprintf(c->err[r], sizeof(c->err[r]), "%s",
             rc != HCCN_OK ? hccn_last_error() : "");
    c->bad[r] = 0;
    for (size_t i = 0; rc == HCCN_OK && i < rn; i++)
        c->bad[r] |= rv[i] != expected(c, r, p, i);
    hccn_free(ctx, mem);
    return HCCN_OK;
}

/* The engine's time for row on the whole cluster, as selection prices it. */
static double engine_time(const hccn_sim_topo_t *t, const char *row,
                          const call_t *c)
{
    int world[MAXR];
    for (int r = 0; r < t->nnpus; r++)
        world[r] = r;
    hccn_cost_place_t pl = {t, world};
    hccn_coll_args_t a = {.coll = c->coll, .nranks = t->nnpus,
                          .count = c->count, .esize = 4};
    return hccn_hier_cost(hccn_hier_algo_find(row), &a, &pl,
                          HCCN_COST_ENGINE, NULL);
}

/* The first ncolls collectives (allreduce, reduce_scatter, allgather) of
 * the first nspecs specs on one cluster. */
static void check_cluster(int nodes, int npn, int per_leaf, int three,
                          size_t nspecs, size_t ncolls)
{
    static const struct {
        const char *spec, *row;
    } specs[] = {{"level2:ring", "hier3"},
                 {"level0:mesh;level1:ring;level2:H-D_R", "hier3_hd"}};
    static const hccn_coll_t colls[] = {HCCN_COLL_ALLREDUCE,
                                        HCCN_COLL_REDUCE_SCATTER,
                                        HCCN_COLL_ALLGATHER};
    static const size_t counts[] = {1003, 37, 37};
    char json[1024], err[512];
    hccn_sim_topo_t *t;
    hccn_cluster_t *cl;
    cluster_json(json, sizeof(json), nodes, npn, per_leaf);
    assert_int_equal(hccn_sim_topo_load_string(json, "pods", &t, err,
                                               sizeof(err)),
                     HCCN_OK);
    assert_int_equal(hccn_cluster_create_json(json, "pods", NULL, &cl),
                     HCCN_OK);
    int p = nodes * npn;
    for (size_t si = 0; si < nspecs; si++)
        for (size_t ci = 0; ci < ncolls; ci++) {
            call_t c = {.coll = colls[ci], .count = counts[ci]};
            setenv("HCCN_ALGO", specs[si].spec, 1);
            assert_int_equal(hccn_cluster_run(cl, call_rank, &c, NULL),
                             HCCN_OK);
            unsetenv("HCCN_ALGO");
            double want = engine_time(t, specs[si].row, &c), got = 0;
            for (int r = 0; r < p; r++) {
                if (c.rc[r] != HCCN_OK || c.bad[r])
                    fail_msg("%d x %d, %d per leaf, %s %s: rank %d: %s", nodes,
                             npn, per_leaf, specs[si].spec,
                             hccn_coll_name(c.coll), r,
                             c.rc[r] != HCCN_OK ? c.err[r] : "wrong data");
                got = fmax(got, c.dur[r]);
            }
            if (test_rel_diff(got, want) > 1e-9)
                fail_msg("%s %s: %.12g s, the row's engine time %.12g s",
                         specs[si].spec, hccn_coll_name(c.coll), got, want);
            double two = engine_time(t, "hier", &c);
            if (three && test_rel_diff(got, two) < 1e-6)
                fail_msg("%s %s: took hier's time %.12g s", specs[si].spec,
                         hccn_coll_name(c.coll), two);
            if (!three && test_rel_diff(got, two) > 1e-9)
                fail_msg("%s %s: %.12g s, not hier's %.12g s",
                         specs[si].spec, hccn_coll_name(c.coll), got, two);
        }
    hccn_cluster_destroy(cl);
    hccn_sim_topo_free(t);
}

/* 2 pods of 2 nodes of 2 NPUs, and 3 pods of 2 nodes of 2 NPUs. */
static void test_even_pods(void **state)
{
    (void)state;
    check_cluster(4, 2, 2, 1, 2, 3);
    check_cluster(6, 2, 2, 1, 2, 3);
}

/* 4 nodes under leaves of 3: pods of 3 and 1 nodes, two levels. */
static void test_uneven_pods(void **state)
{
    (void)state;
    check_cluster(4, 2, 3, 0, 2, 3);
}

int main(void)
{
    static const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_even_pods),
        cmocka_unit_test(test_uneven_pods),
    };
    return cmocka_run_group_tests_name("hier3", tests, NULL, NULL);
}
