/*
 * In-network reduction (docs/topology.md "In-network reduction",
 * docs/algorithms.md "sharp"): the network.reduce key and its errors, the
 * sharp schedules' bytes on every NIC link (each NIC sends S and receives
 * S for an allreduce) and their times in the engine against formulas
 * worked out by hand, the closed form against the engine, hier_sharp's
 * results in the serial interpreter, and the selection: sharp where it is
 * cheaper, never where the network does not reduce.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "device_sim/engine.h"
#include "device_sim/topo.h"
#include "hierarchy/coll.h"
#include "hierarchy/cost.h"
#include "hierarchy/select.h"
#include "sched_interp.h"
#include "test_engine.h"
#include "test_topo_load.h"

/* N nodes of K NPUs (a switch fabric of 100 GB/s, 1 us, when K > 1), one
 * NIC per NPU of 25 GB/s (2 us), a switch network of 1 us whose unit is
 * REDUCE; NPUs reduce at 50 GB/s and copy at 200 GB/s. */
#define NET(N, K, FABRIC, REDUCE)                                             \
    "{\"version\": 1, \"node_types\": [{\"count\": " #N ", \"npu\": {"      \
    "\"count\": " #K ", \"arena_MiB\": 64, \"reduce_bw_GBps\": 50, "         \
    "\"mem_bw_GBps\": 200}, " FABRIC "\"nics\": {\"count\": " #K ", "        \
    "\"bw_GBps\": 25, \"lat_us\": 2}}], \"network\": {\"type\": "            \
    "\"switch\", \"lat_us\": 1" REDUCE "}}"
#define FAB "\"fabric\": {\"type\": \"switch\", \"bw_GBps\": 100, " \
            "\"lat_us\": 1}, "
#define RED(X) ", \"reduce\": {\"bw_GBps\": " #X ", \"lat_us\": 0.5}"

#define P 4
#define B 25e9
#define R 50e9
#define ALPHA 3e-6       /* NIC lat_us + network lat_us */
#define ULAT 0.5e-6      /* the unit's lat_us */

static hccn_sim_topo_t *load(const char *json)
{
    return test_topo_load(json, "sharp");
}

static void expect_error(const char *json, const char *msg)
{
    test_topo_refused(json, "bad", msg);
}

/* The unit is one more link, after all others, from the network switch to
 * itself, with the object's bandwidth and latency; folding is refused. */
static void test_parse(void **state)
{
    (void)state;
    hccn_sim_topo_t *plain = load(NET(4, 1, "", ""));
    hccn_sim_topo_t *t = load(NET(4, 1, "", RED(400)));
    assert_int_equal(t->nlinks, plain->nlinks + 1);
    assert_int_equal(plain->net_reduce_link, -1);
    int u = t->net_reduce_link;
    assert_int_equal(u, t->nlinks - 1);
    assert_int_equal(t->links[u].src, t->links[u].dst);
    assert_string_equal(t->devs[t->links[u].src].name, "net");
    assert_true(t->links[u].bw == 400e9 && t->links[u].lat == 0.5e-6);
    assert_int_equal(hccn_sim_topo_reduce_net(t, HCCN_FP32, HCCN_SUM), u);
    assert_int_equal(hccn_sim_topo_reduce_net(t, HCCN_INT32, HCCN_SUM), -1);
    assert_int_equal(hccn_sim_topo_reduce_net(plain, HCCN_FP32, HCCN_SUM),
                     -1);
    for (int l = 0; l < plain->nlinks; l++)   /* the rest is as it was */
        assert_true(t->links[l].src == plain->links[l].src &&
                    t->links[l].bw == plain->links[l].bw);
    int rep[P], *map = test_calloc((size_t)t->nlinks, sizeof(int));
    double *div = test_calloc((size_t)t->nlinks, sizeof(double));
    char why[256];
    assert_int_equal(hccn_sim_topo_fold(plain, rep, map, div, why,
                                        sizeof(why)), 0);
    /* Folded, node 0 has one node's share of the one unit (4 nodes). */
    assert_int_equal(hccn_sim_topo_fold(t, rep, map, div, why, sizeof(why)),
                     0);
    assert_int_equal(map[u], u);
    assert_true(div[u] == 4.0);
    for (int l = 0; l < plain->nlinks; l++)
        assert_true(div[l] == 1.0);
    test_free(map);
    test_free(div);
    hccn_sim_topo_free(t);
    t = load(NET(2, 1, "", ", \"reduce\": {\"bw_GBps\": 9, \"lat_us\": 0, "
                           "\"dtypes\": [\"int32\"], \"ops\": [\"max\"]}"));
    assert_int_equal(hccn_sim_topo_reduce_net(t, HCCN_INT32, HCCN_MAX),
                     t->nlinks - 1);
    assert_int_equal(hccn_sim_topo_reduce_net(t, HCCN_FP32, HCCN_SUM), -1);
    hccn_sim_topo_free(t);
    hccn_sim_topo_free(plain);
}

static void test_errors(void **state)
{
    (void)state;
    expect_error(NET(2, 1, "", ", \"reduce\": {\"lat_us\": 1}"),
                 "bad: network.reduce.bw_GBps: required");
    expect_error(NET(2, 1, "", ", \"reduce\": {\"bw_GBps\": 1}"),
                 "bad: network.reduce.lat_us: required");
    expect_error(NET(2, 1, "", ", \"reduce\": {\"bw_GBps\": 1, \"lat_us\": "
                               "1, \"tier\": 2}"),
                 "network.reduce.tier: unknown key");
    expect_error(NET(2, 1, "", ", \"reduce\": {\"bw_GBps\": 0, \"lat_us\": "
                               "1}"),
                 "network.reduce.bw_GBps: ");
    expect_error(NET(2, 1, "", ", \"reduce\": {\"bw_GBps\": 1, \"lat_us\": "
                               "-1}"),
                 "network.reduce.lat_us: ");
    expect_error(NET(2, 1, "", ", \"reduce\": {\"bw_GBps\": 1, \"lat_us\": "
                               "1, \"ops\": [\"max\", \"max\"]}"),
                 "network.reduce.ops[1]: \"max\" is listed twice");
    expect_error(NET(2, 1, "", ", \"reduce\": true"),
                 "network.reduce: must be an object");
    expect_error("{\"version\": 1, \"node_types\": [{\"count\": 2, \"npu\": "
                 "{\"count\": 1, \"arena_MiB\": 64, \"reduce_bw_GBps\": 50},"
                 " \"nics\": {\"count\": 1, \"bw_GBps\": 25, \"lat_us\": 2}}]"
                 ", \"network\": {\"type\": \"leaf_spine\", \"lat_us\": 1, "
                 "\"nodes_per_leaf\": 1, \"reduce\": {\"bw_GBps\": 1, "
                 "\"lat_us\": 1}}}",
                 "network.reduce: only allowed when type is \"switch\"");
}

/* The runtime's in_switch: the network's bits where it reduces the
 * dtype and operator and the ranks span nodes; _FLAT only with one rank
 * per node. */
static void test_in_switch(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load(NET(2, 2, FAB, RED(400)));
    hccn_sim_topo_t *plain = load(NET(2, 2, FAB, ""));
    int all[4] = {0, 1, 2, 3}, flat[2] = {1, 3}, one[2] = {0, 1};
    hccn_coll_t ar = HCCN_COLL_ALLREDUCE;
    assert_int_equal(hccn_hier_in_switch(t, all, 4, ar, HCCN_FP32, HCCN_SUM),
                     HCCN_IN_SWITCH_NET);
    assert_int_equal(hccn_hier_in_switch(t, flat, 2, ar, HCCN_BF16, HCCN_MAX),
                     HCCN_IN_SWITCH_NET | HCCN_IN_SWITCH_NET_FLAT);
    assert_int_equal(hccn_hier_in_switch(t, one, 2, ar, HCCN_FP32, HCCN_SUM),
                     0);
    assert_int_equal(hccn_hier_in_switch(t, all, 4, ar, HCCN_INT32, HCCN_SUM),
                     0);
    assert_int_equal(hccn_hier_in_switch(t, all, 4, HCCN_COLL_ALLGATHER,
                                         HCCN_INT32, HCCN_SUM),
                     HCCN_IN_SWITCH_NET);
    assert_int_equal(hccn_hier_in_switch(plain, flat, 2, ar, HCCN_FP32,
                                         HCCN_SUM), 0);
    hccn_sim_topo_free(plain);
    hccn_sim_topo_free(t);
}

/* Runs s on topo's NPUs world[0..n) from clock 0 and returns the end;
 * per-link bytes into bytes[]. */
static double run(const hccn_sim_topo_t *topo, const hccn_sched_t *s,
                  const int *world, int n, double *bytes)
{
    hccn_sim_engine_t *eng = hccn_sim_engine_create(topo, 0.0);
    hccn_sim_batch_t **b = test_calloc((size_t)n, sizeof(*b));
    for (int r = 0; r < n; r++) {
        const hccn_sched_rank_t *rk = &s->ranks[r];
        hccn_sim_task_t *t = test_calloc(rk->nsteps + 1, sizeof(*t));
        for (uint32_t i = 0; i < rk->nsteps; i++) {
            hccn_sched_step_task(&rk->steps[i], &topo->npus[world[r]], world,
                                 &t[i]);
            if (t[i].kind != HCCN_SIM_TASK_LOCAL)
                t[i].key = (hccn_sim_key_t){0, 0, rk->steps[i].xfer};
        }
        assert_non_null(b[r] = hccn_sim_post(eng, world[r], t,
                                             (int)rk->nsteps, rk->deps,
                                             NULL));
        test_free(t);
    }
    hccn_sim_finish_all(eng);
    double end = 0.0;
    for (int r = 0; r < n; r++)
        end = fmax(end, hccn_sim_batch_end(b[r]));
    for (int l = 0; l < topo->nlinks; l++) {
        double busy;
        hccn_sim_link_stats(eng, l, &bytes[l], &busy);
    }
    test_free(b);
    hccn_sim_engine_destroy(eng);
    return end;
}

static hccn_coll_args_t flat_args(hccn_coll_t coll, uint64_t count)
{
    return (hccn_coll_args_t){
        .coll = coll, .nranks = P, .count = count, .esize = 4,
        .in_switch = HCCN_IN_SWITCH_NET | HCCN_IN_SWITCH_NET_FLAT};
}

/* One chunk of an allreduce of S bytes on 4 nodes (blocks b = S/4): every
 * NIC's network link sends (p-1) b of contributions and b of its
 * multicast, S in all, and receives b of its reduced block and (p-1) b
 * of the others' multicasts; the unit carries the p(p-1) contributions. Time:
 * ALPHA + ULAT + max((p-1) b/B, p(p-1) b/X) (reduction, the last
 * contribution carrying the sum down), + b/R (the owner's add), +
 * ALPHA + (p-1) b/B (multicast). */
static void check_allreduce(double x, const char *json)
{
    hccn_sim_topo_t *t = load(json);
    const uint64_t count = 1 << 20;             /* 4 MiB: one chunk */
    const double S = count * 4.0, b = S / P;
    int world[P] = {0, 1, 2, 3};
    hccn_coll_args_t a = flat_args(HCCN_COLL_ALLREDUCE, count);
    const hccn_algo_t *al = hccn_hier_algo_find("sharp");
    hccn_sched_t *s = hccn_hier_build(al, &a);
    assert_non_null(s);
    assert_string_equal(s->algo, "sharp");
    double *bytes = test_calloc((size_t)t->nlinks, sizeof(double));
    double end = run(t, s, world, P, bytes);
    double up = fmax((P - 1) * b / B, P * (P - 1) * b / x);
    double want = ALPHA + ULAT + up + b / R + ALPHA + (P - 1) * b / B;
    test_assert_rel(end, want, 1e-12, "sharp allreduce, engine");
    hccn_cost_place_t pl = {t, world};
    test_assert_rel(hccn_hier_cost(al, &a, &pl, HCCN_COST_MODEL, NULL), end,
                    1e-12, "sharp allreduce, closed form");
    for (int l = 0; l < t->nlinks; l++) {
        const hccn_sim_link_t *k = &t->links[l];
        double wantb = k->src == k->dst ? P * (P - 1) * b
                       : isinf(k->bw)   ? 0.0   /* NPU <-> NIC: free */
                                        : S;
        test_assert_rel(bytes[l], wantb, 1e-12, "bytes on a link");
    }
    test_free(bytes);
    hccn_sched_free(s);
    hccn_sim_topo_free(t);
}

static void test_allreduce(void **state)
{
    (void)state;
    check_allreduce(400e9, NET(4, 1, "", RED(400)));   /* the NICs limit */
    check_allreduce(50e9, NET(4, 1, "", RED(50)));     /* the unit does */
}

/* reduce_scatter: the reduction part (block b = count*4): each NIC sends
 * p-1 blocks up and receives its sum once; allgather: the multicast, each
 * NIC sends its block up once and receives p-1 blocks. Engine == hand
 * formula == closed form. */
static void test_rs_ag(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load(NET(4, 1, "", RED(400)));
    const double b = 1 << 20;
    const hccn_algo_t *al = hccn_hier_algo_find("sharp");
    int world[P] = {0, 1, 2, 3};
    hccn_cost_place_t pl = {t, world};
    double *bytes = test_calloc((size_t)t->nlinks, sizeof(double));
    hccn_coll_t colls[2] = {HCCN_COLL_REDUCE_SCATTER, HCCN_COLL_ALLGATHER};
    double want[2] = {ALPHA + ULAT + (P - 1) * b / B + b / R,
                      ALPHA + (P - 1) * b / B};
    for (int k = 0; k < 2; k++) {
        hccn_coll_args_t a = flat_args(colls[k], (uint64_t)b / 4);
        hccn_sched_t *s = hccn_hier_build(al, &a);
        assert_non_null(s);
        double end = run(t, s, world, P, bytes);
        test_assert_rel(end, want[k], 1e-12, hccn_coll_name(colls[k]));
        test_assert_rel(hccn_hier_cost(al, &a, &pl, HCCN_COST_MODEL, NULL), end,
                        1e-12, "closed form");
        for (int n = 0; n < P; n++) {
            char name[64];
            snprintf(name, sizeof(name), "node%d.nic0->net", n);
            int up = hccn_sim_topo_find_link(t, name);
            snprintf(name, sizeof(name), "net->node%d.nic0", n);
            int down = hccn_sim_topo_find_link(t, name);
            assert_true(up >= 0 && down >= 0);
            test_assert_rel(bytes[up], k == 0 ? (P - 1) * b : b, 1e-12,
                            "NIC up");
            test_assert_rel(bytes[down], k == 0 ? b : (P - 1) * b, 1e-12,
                            "NIC down");
        }
        hccn_sched_free(s);
    }
    test_free(bytes);
    hccn_sim_topo_free(t);
}

static uint32_t val(int r, uint64_t i)
{
    return (uint32_t)(r * 1000003u + i * 7919u + 1u);
}

/* Runs s (n ranks) in the serial interpreter, races checked, and compares
 * every rank's RECV with the serial sums (uint32: exact in any order). */
static void interp_check(const hccn_sched_t *s, const hccn_coll_args_t *x,
                         int n)
{
    hccn_coll_t coll = x->coll;
    uint64_t sn = coll == HCCN_COLL_REDUCE_SCATTER ? x->count * n : x->count;
    uint64_t rn = coll == HCCN_COLL_ALLGATHER ? x->count * n : x->count;
    sched_interp_bufs_t *b = test_calloc((size_t)n, sizeof(*b));
    uint32_t **mem = test_calloc((size_t)n, sizeof(*mem));
    for (int r = 0; r < n; r++) {
        mem[r] = test_calloc(sn + rn, 4);
        for (uint64_t i = 0; i < sn; i++)
            mem[r][i] = val(r, i);
        b[r] = (sched_interp_bufs_t){mem[r], sn * 4, mem[r] + sn, rn * 4};
    }
    sched_interp_opts_t o = {.reduce = sched_interp_sum_u32, .check_races = 1};
    char why[256];
    if (sched_interp_run(s, b, &o, why, sizeof(why)) != 0)
        fail_msg("%s %s: %s", s->algo, hccn_coll_name(coll), why);
    for (int r = 0; r < n; r++)
        for (uint64_t i = 0; i < rn; i++) {
            uint32_t want = 0;
            if (coll == HCCN_COLL_ALLGATHER)
                want = val((int)(i / x->count), i % x->count);
            else
                for (int q = 0; q < n; q++)
                    want += val(q, coll == HCCN_COLL_ALLREDUCE
                                       ? i : (uint64_t)r * x->count + i);
            if (mem[r][sn + i] != want)
                fail_msg("%s %s: rank %d [%llu]", s->algo,
                         hccn_coll_name(coll), r, (unsigned long long)i);
        }
    for (int r = 0; r < n; r++)
        test_free(mem[r]);
    test_free(mem);
    test_free(b);
}

#define P8 8

/* hier_sharp on 4 nodes of 2: mesh inside, sharp across. Results in the
 * interpreter (all three collectives, flat sharp's too); one chunk's
 * engine time equals the closed form and beats hier's; where the network
 * does not reduce it is hier's schedule and price. */
static void test_hier_sharp(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load(NET(4, 2, FAB, RED(400)));
    int world[P8], node[P8], local[P8];
    for (int r = 0; r < P8; r++)
        world[r] = r;
    hccn_cost_place_t pl = {t, world};
    hccn_hier_view_t view;
    assert_int_equal(hccn_hier_cost_view(&pl, P8, node, local, &view), 0);
    const hccn_algo_t *hs = hccn_hier_algo_find("hier_sharp"),
                      *hier = hccn_hier_algo_find("hier"),
                      *flat = hccn_hier_algo_find("sharp");
    assert_non_null(hs);
    hccn_coll_args_t a = {.coll = HCCN_COLL_ALLREDUCE, .nranks = P8,
                          .count = 1 << 18, .esize = 4, .view = &view,
                          .in_switch = HCCN_IN_SWITCH_NET};
    double eng = hccn_hier_cost(hs, &a, &pl, HCCN_COST_ENGINE, NULL);
    test_assert_rel(hccn_hier_cost(hs, &a, &pl, HCCN_COST_MODEL, NULL), eng,
                    1e-9, "hier_sharp allreduce, closed form");
    assert_true(eng < hccn_hier_cost(hier, &a, &pl, HCCN_COST_ENGINE, NULL));
    for (int c = 0; c < 3; c++) {
        hccn_coll_args_t x = a;
        x.coll = c == 0 ? HCCN_COLL_ALLREDUCE
                 : c == 1 ? HCCN_COLL_REDUCE_SCATTER : HCCN_COLL_ALLGATHER;
        x.count = 1000;
        hccn_sched_t *s = hccn_hier_build(hs, &x);
        assert_non_null(s);
        interp_check(s, &x, P8);
        hccn_sched_free(s);
        /* allreduce in chunks (levels_allreduce.c, top_split): of 64
         * elements, 32 per node block, every top allreduce in its two
         * parts (1000), the last one whole (1002: 21 per block), with a
         * tail (1003); of 66, the last one alone in two parts (140) */
        static const uint64_t ck[4][2] = {{256, 1000}, {256, 1002},
                                          {256, 1003}, {264, 140}};
        for (int k = 0; c == 0 && k < 4; k++) {
            hccn_coll_args_t y = x;
            y.chunk_bytes = ck[k][0];
            y.count = ck[k][1];
            assert_non_null(s = hccn_hier_build(hs, &y));
            interp_check(s, &y, P8);
            hccn_sched_free(s);
        }
        x.nranks = P;
        x.view = NULL;
        x.in_switch |= HCCN_IN_SWITCH_NET_FLAT;
        x.count = 1001;          /* uneven blocks */
        assert_non_null(s = hccn_hier_build(flat, &x));
        interp_check(s, &x, P);
        hccn_sched_free(s);
    }
    a.in_switch = 0;
    for (int mode = HCCN_COST_ENGINE; mode <= HCCN_COST_MODEL; mode++)
        assert_true(hccn_hier_cost(hs, &a, &pl, mode, NULL) ==
                    hccn_hier_cost(hier, &a, &pl, mode, NULL));
    hccn_sim_topo_free(t);
}

/* hier_nvls_sharp on 2 nodes of 4 whose switches reduce too: both
 * switches reduce (in_switch has both bits), results in the interpreter,
 * one chunk's engine time equals the closed form and beats hier_sharp's
 * (mesh inside the nodes). */
static void test_hier_nvls_sharp(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load(NET(2, 4, "\"fabric\": {\"type\": "
                                  "\"switch\", \"bw_GBps\": 100, "
                                  "\"lat_us\": 1, \"reduce\": {"
                                  "\"bw_GBps\": 1000}}, ", RED(400)));
    int world[P8], node[P8], local[P8];
    for (int r = 0; r < P8; r++)
        world[r] = r;
    hccn_cost_place_t pl = {t, world};
    hccn_hier_view_t view;
    assert_int_equal(hccn_hier_cost_view(&pl, P8, node, local, &view), 0);
    int in = hccn_hier_in_switch(t, world, P8, HCCN_COLL_ALLREDUCE,
                                 HCCN_FP32, HCCN_SUM);
    assert_int_equal(in, HCCN_IN_SWITCH_NODES | HCCN_IN_SWITCH_NET);
    const hccn_algo_t *hns = hccn_hier_algo_find("hier_nvls_sharp"),
                      *hs = hccn_hier_algo_find("hier_sharp");
    assert_non_null(hns);
    hccn_coll_args_t a = {.coll = HCCN_COLL_ALLREDUCE, .nranks = P8,
                          .count = 1 << 18, .esize = 4, .view = &view,
                          .in_switch = in};
    double eng = hccn_hier_cost(hns, &a, &pl, HCCN_COST_ENGINE, NULL);
    test_assert_rel(hccn_hier_cost(hns, &a, &pl, HCCN_COST_MODEL, NULL), eng,
                    1e-9, "hier_nvls_sharp allreduce, closed form");
    assert_true(eng < hccn_hier_cost(hs, &a, &pl, HCCN_COST_ENGINE, NULL));
    for (int c = 0; c < 3; c++) {
        hccn_coll_args_t x = a;
        x.coll = c == 0 ? HCCN_COLL_ALLREDUCE
                 : c == 1 ? HCCN_COLL_REDUCE_SCATTER : HCCN_COLL_ALLGATHER;
        x.count = 999;
        hccn_sched_t *s = hccn_hier_build(hns, &x);
        assert_non_null(s);
        interp_check(s, &x, P8);
        hccn_sched_free(s);
    }
    hccn_sim_topo_free(t);
}

/* The default selection on the runtime's in_switch: sharp (flat, one rank
 * per node) or a hierarchical sharp row where the network reduces and it
 * is cheaper; no sharp row where it does not reduce. */
static const char *select_on(const char *json, int n, uint64_t bytes,
                             int dtype)
{
    static char name[64];
    hccn_sim_topo_t *t = load(json);
    int world[P8];
    for (int r = 0; r < n; r++)
        world[r] = r;
    hccn_coll_args_t a = {.coll = HCCN_COLL_ALLREDUCE, .nranks = n,
                          .count = bytes / 4, .esize = 4};
    a.in_switch = hccn_hier_in_switch(t, world, n, a.coll, dtype, HCCN_SUM);
    hccn_hier_select_in_t in = {t, world, NULL, NULL};
    char why[256];
    const hccn_algo_t *al = hccn_hier_select(&a, &in, why, sizeof(why), NULL,
                                             0);
    if (al == NULL)
        fail_msg("%s", why);
    snprintf(name, sizeof(name), "%s", al->name);
    hccn_sim_topo_free(t);
    return name;
}

static void test_select(void **state)
{
    (void)state;
    const uint64_t big = 64u << 20;
    assert_string_equal(select_on(NET(4, 1, "", RED(400)), P, big, HCCN_FP32),
                        "sharp");
    assert_string_equal(select_on(NET(4, 2, FAB, RED(400)), P8, big,
                                  HCCN_FP32),
                        "hier_sharp");
    assert_null(strstr(select_on(NET(4, 1, "", ""), P, big, HCCN_FP32),
                       "sharp"));
    assert_null(strstr(select_on(NET(4, 2, FAB, ""), P8, big, HCCN_FP32),
                       "sharp"));
    assert_null(strstr(select_on(NET(4, 1, "", RED(400)), P, big, HCCN_INT32),
                       "sharp"));   /* int32: the switch does not reduce */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_in_switch),
        cmocka_unit_test(test_allreduce),
        cmocka_unit_test(test_rs_ag),
        cmocka_unit_test(test_hier_sharp),
        cmocka_unit_test(test_hier_nvls_sharp),
        cmocka_unit_test(test_select),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
