/*
 * In-switch reduction (docs/topology.md "In-switch reduction",
 * docs/algorithms.md "nvls"): the fabric.reduce key and its errors, the
 * nvls schedules' bytes on every link (each NPU's link carries S up and S
 * down for an allreduce) and their times in the engine against formulas
 * worked out by hand from the file's figures, and the closed form of the
 * cost model against the engine.
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
#include "device_sim/software.h"
#include "device_sim/topo.h"
#include "hierarchy/coll.h"
#include "hierarchy/cost.h"
#include "sched_interp.h"
#include "test_engine.h"
#include "test_topo_load.h"

hccn_sched_t *hccn_hier_nvls_build(const hccn_coll_args_t *args);

/* One node of 8 NPUs on a switch of 100 GB/s links (2 us), NPUs reducing
 * at 50 GB/s, copying at 200 GB/s; the switch's unit: REDUCE. */
#define NODE(REDUCE)                                                          \
    "{\"version\": 1, \"node_types\": [{\"count\": 1, \"npu\": {\"count\": " \
    "8, \"arena_MiB\": 64, \"reduce_bw_GBps\": 50, \"mem_bw_GBps\": 200}, " \
    "\"fabric\": {\"type\": \"switch\", \"bw_GBps\": 100, \"lat_us\": 2" \
    REDUCE "}}]}"

#define P 8
#define B 100e9
#define ALPHA 2e-6
#define R 50e9
#define M 200e9

static hccn_sim_topo_t *load(const char *json)
{
    return test_topo_load(json, "nvls");
}

static void expect_error(const char *json, const char *msg)
{
    test_topo_refused(json, "bad", msg);
}

/* The unit is one more link, after the others, from the switch to itself;
 * the defaults are fp32/fp16/bf16 and sum/max/min. */
static void test_parse(void **state)
{
    (void)state;
    hccn_sim_topo_t *plain = load(NODE(""));
    hccn_sim_topo_t *t = load(NODE(", \"reduce\": {\"bw_GBps\": 300}"));
    assert_int_equal(t->nlinks, plain->nlinks + 1);
    assert_int_equal(plain->nodes[0].reduce_link, -1);
    int u = t->nodes[0].reduce_link;
    assert_int_equal(u, t->nlinks - 1);
    assert_int_equal(t->links[u].src, t->links[u].dst);
    assert_string_equal(t->devs[t->links[u].src].name, "node0.nvswitch");
    assert_true(t->links[u].bw == 300e9);
    assert_int_equal(hccn_sim_topo_reduce_node(t, 0, HCCN_FP32, HCCN_SUM), u);
    assert_int_equal(hccn_sim_topo_reduce_node(t, 0, HCCN_BF16, HCCN_MAX), u);
    assert_int_equal(hccn_sim_topo_reduce_node(t, 0, HCCN_INT32, HCCN_SUM), -1);
    assert_int_equal(hccn_sim_topo_reduce_node(t, 0, HCCN_FP32, HCCN_PROD), -1);
    for (int l = 0; l < plain->nlinks; l++)   /* the rest is as it was */
        assert_true(t->links[l].src == plain->links[l].src &&
                    t->links[l].bw == plain->links[l].bw);
    hccn_sim_topo_free(t);
    t = load(NODE(", \"reduce\": {\"bw_GBps\": 300, \"dtypes\": [\"int32\"],"
                  " \"ops\": [\"prod\"]}"));
    assert_int_equal(hccn_sim_topo_reduce_node(t, 0, HCCN_INT32, HCCN_PROD),
                     t->nlinks - 1);
    assert_int_equal(hccn_sim_topo_reduce_node(t, 0, HCCN_FP32, HCCN_SUM), -1);
    hccn_sim_topo_free(t);
    hccn_sim_topo_free(plain);
}

static void test_errors(void **state)
{
    (void)state;
    expect_error(NODE(", \"reduce\": {}"),
                 "bad: node_types[0].fabric.reduce.bw_GBps: required");
    expect_error(NODE(", \"reduce\": {\"bw_GBps\": 1, \"speed\": 2}"),
                 "node_types[0].fabric.reduce.speed: unknown key");
    expect_error(NODE(", \"reduce\": {\"bw_GBps\": 1, \"dtypes\": "
                      "[\"fp32\", \"fp8\"]}"),
                 "node_types[0].fabric.reduce.dtypes[1]: must be one of");
    expect_error(NODE(", \"reduce\": {\"bw_GBps\": 1, \"ops\": [\"sum\", "
                      "\"sum\"]}"),
                 "node_types[0].fabric.reduce.ops[1]: \"sum\" is listed "
                 "twice");
    expect_error(NODE(", \"reduce\": {\"bw_GBps\": 1, \"ops\": []}"),
                 "node_types[0].fabric.reduce.ops: must not be empty");
    expect_error(NODE(", \"reduce\": 5"),
                 "node_types[0].fabric.reduce: must be an object");
    expect_error("{\"version\": 1, \"node_types\": [{\"count\": 1, \"npu\": "
                 "{\"count\": 4, \"arena_MiB\": 64, \"reduce_bw_GBps\": 50},"
                 " \"fabric\": {\"type\": \"mesh\", \"bw_GBps\": 100, "
                 "\"lat_us\": 2, \"reduce\": {\"bw_GBps\": 1}}}]}",
                 "node_types[0].fabric.reduce: only allowed when type is "
                 "\"switch\"");
}

/* Runs s on topo from clock 0 (as the cost model's engine does) and
 * returns the end; per-link bytes into bytes[]. */
static double run(const hccn_sim_topo_t *topo, const hccn_sched_t *s,
                  double *bytes)
{
    int world[P];
    for (int r = 0; r < P; r++)
        world[r] = r;
    hccn_sim_engine_t *eng = hccn_sim_engine_create(topo, 0.0);
    hccn_sim_batch_t *b[P];
    for (int r = 0; r < P; r++) {
        const hccn_sched_rank_t *rk = &s->ranks[r];
        hccn_sim_task_t *t = test_calloc(rk->nsteps + 1, sizeof(*t));
        for (uint32_t i = 0; i < rk->nsteps; i++) {
            hccn_sched_step_task(&rk->steps[i], &topo->npus[r], world, &t[i]);
            if (t[i].kind != HCCN_SIM_TASK_LOCAL)
                t[i].key = (hccn_sim_key_t){0, 0, rk->steps[i].xfer};
        }
        assert_non_null(b[r] = hccn_sim_post(eng, r, t, (int)rk->nsteps,
                                             rk->deps, NULL));
        test_free(t);
    }
    hccn_sim_finish_all(eng);
    double end = 0.0;
    for (int r = 0; r < P; r++)
        end = fmax(end, hccn_sim_batch_end(b[r]));
    for (int l = 0; l < topo->nlinks; l++) {
        double busy;
        hccn_sim_link_stats(eng, l, &bytes[l], &busy);
    }
    hccn_sim_engine_destroy(eng);
    return end;
}

static hccn_coll_args_t args(hccn_coll_t coll, uint64_t count)
{
    return (hccn_coll_args_t){.coll = coll, .nranks = P, .count = count,
                              .esize = 4, .in_switch = 1};
}

/* One chunk of an allreduce of S bytes: every NPU's link up carries
 * (p-1) S/p of contributions and S/p of its multicast, S in all; its link
 * down S/p of its reduced block and (p-1) S/p of the others' multicasts;
 * the unit the p(p-1) contributions of S/p. The time:
 * alpha + (p-1)(S/p)/B (reduction), + (S/p)/R (the owner's add), +
 * alpha + (p-1)(S/p)/B (multicast); with a slow unit X the reduction
 * drains at p(p-1)(S/p)/X instead. */
static void check_allreduce(const char *reduce, double x)
{
    hccn_sim_topo_t *t = load(reduce);
    const uint64_t count = 8 << 18;             /* 8 MiB: one chunk */
    const double S = count * 4.0, b = S / P;
    hccn_coll_args_t a = args(HCCN_COLL_ALLREDUCE, count);
    const hccn_algo_t *al = hccn_hier_algo_find("nvls");
    assert_non_null(al);
    hccn_sched_t *s = hccn_hier_build(al, &a);
    assert_non_null(s);
    double *bytes = test_calloc((size_t)t->nlinks, sizeof(double));
    double end = run(t, s, bytes);
    double up = fmax((P - 1) * b / B, P * (P - 1) * b / x);
    double want = ALPHA + up + b / R + ALPHA + (P - 1) * b / B;
    test_assert_rel(end, want, 1e-12, "nvls allreduce, engine");
    int world[P];
    for (int r = 0; r < P; r++)
        world[r] = r;
    hccn_cost_place_t pl = {t, world};
    test_assert_rel(hccn_hier_cost(al, &a, &pl, HCCN_COST_MODEL, NULL), end,
                    1e-12, "nvls allreduce, closed form");
    for (int l = 0; l < t->nlinks; l++) {
        const hccn_sim_link_t *k = &t->links[l];
        double wantb = k->src == k->dst ? P * (P - 1) * b : S;
        test_assert_rel(bytes[l], wantb, 1e-12, "bytes on a link");
    }
    test_free(bytes);
    hccn_sched_free(s);
    hccn_sim_topo_free(t);
}

static void test_allreduce(void **state)
{
    (void)state;
    check_allreduce(NODE(", \"reduce\": {\"bw_GBps\": 10000}"), 10000e9);
    check_allreduce(NODE(", \"reduce\": {\"bw_GBps\": 200}"), 200e9);
}

/* reduce_scatter: the reduction part (block b = count*4); allgather: the
 * multicast, the own block COPYed at M meanwhile. Closed form == engine. */
static void test_rs_ag(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load(NODE(", \"reduce\": {\"bw_GBps\": 10000}"));
    const double b = 1 << 20;
    const hccn_algo_t *al = hccn_hier_algo_find("nvls");
    int world[P];
    for (int r = 0; r < P; r++)
        world[r] = r;
    hccn_cost_place_t pl = {t, world};
    double *bytes = test_calloc((size_t)t->nlinks, sizeof(double));
    hccn_coll_t colls[2] = {HCCN_COLL_REDUCE_SCATTER, HCCN_COLL_ALLGATHER};
    double want[2] = {ALPHA + (P - 1) * b / B + b / R,
                      ALPHA + (P - 1) * b / B};
    for (int k = 0; k < 2; k++) {
        hccn_coll_args_t a = args(colls[k], (uint64_t)b / 4);
        hccn_sched_t *s = hccn_hier_build(al, &a);
        assert_non_null(s);
        double end = run(t, s, bytes);
        test_assert_rel(end, want[k], 1e-12, hccn_coll_name(colls[k]));
        test_assert_rel(hccn_hier_cost(al, &a, &pl, HCCN_COST_MODEL, NULL), end,
                        1e-12, "closed form");
        hccn_sched_free(s);
    }
    test_free(bytes);
    hccn_sim_topo_free(t);
}

/* Without the capability (or across nodes) the switch does not reduce. */
static void test_not_applicable(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load(NODE(""));
    int world[P];
    for (int r = 0; r < P; r++)
        world[r] = r;
    assert_int_equal(hccn_hier_in_switch(t, world, P, HCCN_COLL_ALLREDUCE,
                                         HCCN_FP32, HCCN_SUM), 0);
    hccn_sim_topo_free(t);
    t = load(NODE(", \"reduce\": {\"bw_GBps\": 10}"));
    assert_int_equal(hccn_hier_in_switch(t, world, P, HCCN_COLL_ALLREDUCE,
                                         HCCN_FP32, HCCN_SUM), 1);
    assert_int_equal(hccn_hier_in_switch(t, world, P, HCCN_COLL_ALLREDUCE,
                                         HCCN_INT32, HCCN_SUM), 0);
    assert_int_equal(hccn_hier_in_switch(t, world, P, HCCN_COLL_ALLGATHER,
                                         HCCN_INT32, HCCN_PROD), 1);
    assert_int_equal(hccn_hier_in_switch(t, world, P, HCCN_COLL_BROADCAST,
                                         HCCN_FP32, HCCN_SUM), 0);
    /* Elsewhere the row is mesh's schedule and priced as mesh, which
     * wins the tie (earlier in the table). */
    hccn_coll_args_t a = args(HCCN_COLL_ALLREDUCE, 1024);
    a.in_switch = 0;
    hccn_sched_t *s = hccn_hier_nvls_build(&a);
    assert_non_null(s);
    assert_string_equal(s->algo, "nvls");
    hccn_sched_t *ms = hccn_hier_algo_find("mesh")->build(&a);
    for (int r = 0; r < P; r++) {   /* mesh's steps */
        assert_int_equal(s->ranks[r].nsteps, ms->ranks[r].nsteps);
        for (uint32_t i = 0; i < s->ranks[r].nsteps; i++) {
            const hccn_step_t *x = &s->ranks[r].steps[i],
                              *y = &ms->ranks[r].steps[i];
            assert_true(x->kind == y->kind && x->peer == y->peer &&
                        x->bytes == y->bytes && x->src_off == y->src_off &&
                        x->dst_off == y->dst_off && x->via == 0);
        }
    }
    hccn_sched_free(ms);
    hccn_cost_place_t pl = {t, world};
    const hccn_algo_t *nv = hccn_hier_algo_find("nvls");
    const hccn_algo_t *mesh = hccn_hier_algo_find("mesh");
    for (int mode = HCCN_COST_ENGINE; mode <= HCCN_COST_MODEL; mode++)
        assert_true(hccn_hier_cost(nv, &a, &pl, mode, NULL) ==
                    hccn_hier_cost(mesh, &a, &pl, mode, NULL));
    hccn_sched_free(s);
    hccn_sim_topo_free(t);
}

static uint32_t val(int r, uint64_t i)
{
    return (uint32_t)(r * 1000003u + i * 7919u + 1u);
}

/* Runs one in-switch schedule in the serial interpreter (races checked,
 * shuffled) and compares every rank's RECV with the sums. */
static void interp_case(hccn_coll_t coll, int p, uint64_t count,
                        uint64_t chunk, int inplace, unsigned long long seed)
{
    hccn_coll_args_t a = {.coll = coll, .nranks = p, .count = count,
                          .esize = 4, .chunk_bytes = chunk, .in_switch = 1};
    hccn_sched_t *s = hccn_hier_nvls_build(&a);
    assert_non_null(s);
    char why[256];
    if (hccn_sched_validate(s, why, sizeof(why)) != 0)
        fail_msg("invalid schedule: %s", why);
    uint64_t sn = coll == HCCN_COLL_REDUCE_SCATTER ? count * p : count;
    uint64_t rn = coll == HCCN_COLL_ALLGATHER ? count * p : count;
    sched_interp_bufs_t b[8];
    uint32_t *mem[8];
    for (int r = 0; r < p; r++) {
        uint64_t big = sn > rn ? sn : rn;
        mem[r] = test_calloc(2 * big + 1, 4);
        uint32_t *send = mem[r], *recv = inplace ? mem[r] : mem[r] + big;
        if (inplace && coll == HCCN_COLL_REDUCE_SCATTER)
            recv = mem[r] + (uint64_t)r * count;
        if (inplace && coll == HCCN_COLL_ALLGATHER)
            send = mem[r] + (uint64_t)r * count;
        for (uint64_t i = 0; i < sn; i++)
            send[i] = val(r, i);
        b[r] = (sched_interp_bufs_t){send, sn * 4, recv, rn * 4};
    }
    sched_interp_opts_t o = {.reduce = sched_interp_sum_u32, .seed = seed,
                             .check_races = 1};
    if (sched_interp_run(s, b, &o, why, sizeof(why)) != 0)
        fail_msg("%s p=%d count=%llu: %s", hccn_coll_name(coll), p,
                 (unsigned long long)count, why);
    for (int r = 0; r < p; r++)
        for (uint64_t i = 0; i < rn; i++) {
            uint32_t want = 0, got;
            if (coll == HCCN_COLL_ALLGATHER)
                want = val((int)(i / count), i % count);
            else
                for (int q = 0; q < p; q++)
                    want += val(q, coll == HCCN_COLL_ALLREDUCE
                                       ? i : (uint64_t)r * count + i);
            memcpy(&got, (const char *)b[r].recv + 4 * i, 4);
            if (got != want)
                fail_msg("%s p=%d count=%llu%s: rank %d [%llu] = %u, want %u",
                         hccn_coll_name(coll), p, (unsigned long long)count,
                         inplace ? " in place" : "", r,
                         (unsigned long long)i, got, want);
        }
    for (int r = 0; r < p; r++)
        test_free(mem[r]);
    hccn_sched_free(s);
}

/* Odd rank counts, uneven and empty blocks, several chunks (chunk_bytes
 * 64: up to 6 of them), in place and out, shuffled orders. */
static void test_interp(void **state)
{
    (void)state;
    const int ps[] = {2, 3, 5, 7, 8};
    const uint64_t counts[] = {1, 13, 90};
    const hccn_coll_t colls[] = {HCCN_COLL_ALLREDUCE,
                                 HCCN_COLL_REDUCE_SCATTER,
                                 HCCN_COLL_ALLGATHER};
    for (int c = 0; c < 3; c++)
        for (int pi = 0; pi < 5; pi++)
            for (int ci = 0; ci < 3; ci++)
                for (int ip = 0; ip < 2; ip++)
                    for (unsigned long long seed = 0; seed < 3; seed++)
                        interp_case(colls[c], ps[pi], counts[ci],
                                    seed == 2 ? 0 : 64, ip, seed);
}

/* Two nodes of 4 NPUs on reducing switches, one 25 GB/s NIC each. */
/* N nodes of 4 NPUs whose switches reduce, 25 GB/s NICs. */
#define NODES_JSON                                                            \
    "{\"version\": 1, \"node_types\": [{\"count\": %d, \"npu\": "          \
    "{\"count\": 4, \"arena_MiB\": 64, \"reduce_bw_GBps\": 50, "           \
    "\"mem_bw_GBps\": 200}, \"fabric\": {\"type\": \"switch\", "           \
    "\"bw_GBps\": 100, \"lat_us\": 2, \"reduce\": {\"bw_GBps\": 1000}}, "   \
    "\"nics\": {\"count\": 4, \"bw_GBps\": 25, \"lat_us\": 1}}], "          \
    "\"network\": {\"type\": \"switch\", \"lat_us\": 1}}"
#define NMAX 16

/* The SENDs to another node on rank 0 of s (ranks node-major, 4 a
 * node). */
static int sends_across(const hccn_sched_t *s)
{
    int n = 0;
    for (uint32_t i = 0; i < s->ranks[0].nsteps; i++)
        n += s->ranks[0].steps[i].kind == HCCN_STEP_SEND &&
             s->ranks[0].steps[i].peer / 4 != 0;
    return n;
}

/* hier_nvls: nvls inside each node, recursive halving-doubling (hd)
 * across a power of two of nodes, else a ring, on N nodes of 4. Where the
 * switches reduce it runs through them (results in the interpreter
 * against the serial sums; the engine's time of one chunk equals the
 * closed form; on two nodes it beats hier's), and a chunk crosses the
 * network in 2 log2 N steps a rank, the depth of the library's NVLS tree
 * (a ring: 2 (N - 1)); without reduction it is hier_mh's schedule (mesh
 * and hd; hier's, mesh and ring, on other counts) and price. */
static void hier_nvls_on(int N)
{
    char json[1024];
    snprintf(json, sizeof(json), NODES_JSON, N);
    hccn_sim_topo_t *t = load(json);
    const int p = 4 * N;
    int world[NMAX], node[NMAX], local[NMAX];
    for (int r = 0; r < p; r++)
        world[r] = r;
    hccn_cost_place_t pl = {t, world};
    hccn_hier_view_t view;
    assert_int_equal(hccn_hier_cost_view(&pl, p, node, local, &view), 0);
    assert_int_equal(hccn_hier_in_switch(t, world, p, HCCN_COLL_ALLREDUCE,
                                         HCCN_FP32, HCCN_SUM),
                     HCCN_IN_SWITCH_NODES);
    const hccn_algo_t *hn = hccn_hier_algo_find("hier_nvls"),
                      *hier = hccn_hier_algo_find("hier"),
                      *mh = hccn_hier_algo_find("hier_mh");
    assert_non_null(hn);
    hccn_coll_args_t a = {.coll = HCCN_COLL_ALLREDUCE, .nranks = p,
                          .count = 1 << 18, .esize = 4, .view = &view,
                          .in_switch = HCCN_IN_SWITCH_NODES};
    double eng = hccn_hier_cost(hn, &a, &pl, HCCN_COST_ENGINE, NULL);
    test_assert_rel(hccn_hier_cost(hn, &a, &pl, HCCN_COST_MODEL, NULL), eng,
                    1e-9, "hier_nvls allreduce, closed form");
    if (N == 2)
        assert_true(eng < hccn_hier_cost(hier, &a, &pl, HCCN_COST_ENGINE,
                                         NULL));
    /* A count whose chunks and tail split over the N nodes (no gathered
     * tail, levels_allreduce.c): the top's own sends alone. */
    hccn_coll_args_t even = a;
    even.count = 3 << 16;
    hccn_sched_t *one = hccn_hier_build(hn, &even);
    assert_non_null(one);
    int depth = 0;
    for (int n = N; n > 1; n /= 2)
        depth++;
    const int pow2 = (N & (N - 1)) == 0;
    assert_int_equal(sends_across(one), pow2 ? 2 * depth : 2 * (N - 1));
    hccn_sched_free(one);
    for (int c = 0; c < 3; c++) {
        hccn_coll_t coll = c == 0 ? HCCN_COLL_ALLREDUCE
                           : c == 1 ? HCCN_COLL_REDUCE_SCATTER
                                    : HCCN_COLL_ALLGATHER;
        hccn_coll_args_t x = a;
        x.coll = coll;
        x.count = 1000;
        hccn_sched_t *s = hccn_hier_build(hn, &x);
        assert_non_null(s);
        uint64_t sn = coll == HCCN_COLL_REDUCE_SCATTER ? x.count * p : x.count;
        uint64_t rn = coll == HCCN_COLL_ALLGATHER ? x.count * p : x.count;
        sched_interp_bufs_t b[NMAX];
        uint32_t *mem[NMAX];
        for (int r = 0; r < p; r++) {
            mem[r] = test_calloc(sn + rn, 4);
            for (uint64_t i = 0; i < sn; i++)
                mem[r][i] = val(r, i);
            b[r] = (sched_interp_bufs_t){mem[r], sn * 4, mem[r] + sn, rn * 4};
        }
        sched_interp_opts_t o = {.reduce = sched_interp_sum_u32,
                                 .check_races = 1};
        char why[256];
        if (sched_interp_run(s, b, &o, why, sizeof(why)) != 0)
            fail_msg("hier_nvls %s: %s", hccn_coll_name(coll), why);
        for (int r = 0; r < p; r++)
            for (uint64_t i = 0; i < rn; i++) {
                uint32_t want = 0;
                if (coll == HCCN_COLL_ALLGATHER)
                    want = val((int)(i / x.count), i % x.count);
                else
                    for (int q = 0; q < p; q++)
                        want += val(q, coll == HCCN_COLL_ALLREDUCE
                                           ? i : (uint64_t)r * x.count + i);
                if (mem[r][sn + i] != want)
                    fail_msg("hier_nvls %s on %d nodes: rank %d [%llu]",
                             hccn_coll_name(coll), N, r,
                             (unsigned long long)i);
            }
        for (int r = 0; r < p; r++)
            test_free(mem[r]);
        hccn_sched_free(s);
    }
    a.in_switch = 0;
    for (int mode = HCCN_COST_ENGINE; mode <= HCCN_COST_MODEL; mode++)
        assert_true(hccn_hier_cost(hn, &a, &pl, mode, NULL) ==
                    hccn_hier_cost(pow2 ? mh : hier, &a, &pl, mode, NULL));
    hccn_sim_topo_free(t);
}

static void test_hier_nvls(void **state)
{
    (void)state;
    hier_nvls_on(2);
    hier_nvls_on(3);
    hier_nvls_on(4);
}

/* The launch of a call that reduces in the switch (software.h,
 * nvls_launch_us): NODE with a stack of launch 5 us, NVLS launch 20 us
 * and no other cost. nvls on the reducing switch costs its body (the
 * allreduce of check_allreduce) plus 20 us, in the engine and the closed
 * form; mesh, and nvls where the call does not reduce in the switch
 * (in_switch 0: mesh's schedule), 5 us plus their body. */
#define STACKED                                                               \
    "{\"version\": 1, \"software\": {\"launch_us\": 5, "                  \
    "\"nvls_launch_us\": 20}, \"node_types\": [{\"count\": 1, \"npu\": " \
    "{\"count\": 8, \"arena_MiB\": 64, \"reduce_bw_GBps\": 50, "          \
    "\"mem_bw_GBps\": 200}, \"fabric\": {\"type\": \"switch\", "          \
    "\"bw_GBps\": 100, \"lat_us\": 2, \"reduce\": {\"bw_GBps\": "        \
    "10000}}}]}"

static void test_nvls_launch(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load(STACKED), *bare = load(NODE(
        ", \"reduce\": {\"bw_GBps\": 10000}"));
    int world[P];
    for (int r = 0; r < P; r++)
        world[r] = r;
    hccn_cost_place_t pl = {t, world}, pb = {bare, world};
    const hccn_algo_t *nv = hccn_hier_algo_find("nvls"),
                      *mesh = hccn_hier_algo_find("mesh");
    const uint64_t count = 8 << 18;
    const double S = count * 4.0, b = S / P;
    hccn_coll_args_t a = args(HCCN_COLL_ALLREDUCE, count), off = a;
    off.in_switch = 0;
    assert_int_equal(hccn_hier_nvswitch_call(nv, &a), 1);
    assert_int_equal(hccn_hier_nvswitch_call(nv, &off), 0);
    assert_int_equal(hccn_hier_nvswitch_call(mesh, &a), 0);
    double body = ALPHA + (P - 1) * b / B + b / R + ALPHA + (P - 1) * b / B;
    for (int m = 0; m < 2; m++) {
        hccn_cost_mode_t mode = m ? HCCN_COST_MODEL : HCCN_COST_ENGINE;
        test_assert_rel(hccn_hier_cost(nv, &a, &pl, mode, NULL),
                        20e-6 + body, 1e-12, "nvls, its launch");
        test_assert_rel(hccn_hier_cost(nv, &off, &pl, mode, NULL),
                        5e-6 + hccn_hier_cost(nv, &off, &pb, mode, NULL),
                        1e-12, "nvls off the switch, the stack's launch");
        test_assert_rel(hccn_hier_cost(mesh, &a, &pl, mode, NULL),
                        5e-6 + hccn_hier_cost(mesh, &a, &pb, mode, NULL),
                        1e-12, "mesh, the stack's launch");
    }
    hccn_sim_topo_free(t);
    hccn_sim_topo_free(bare);
}

/* NCCL runs NVLS under Simple alone (nccl-2.2x: nvls_simple): a call
 * that reduces in the switch runs every transfer under the bulk
 * protocol, even where its blocks (128 KiB here) would each take ll
 * (half rate). And its latency in the node is its launch alone (NCCL's
 * hwLat[NVLINK][NVLS], not times its steps): inside the node its steps
 * cost nvls_step_us, the preset's 0, in place of simple's 3 us. Engine
 * and closed form: 20 us + the body of test_nvls_launch with each
 * phase's latency 2 us + the step (the links at their rate:
 * link_efficiency 1 in place of the preset's); with the file's
 * nvls_step_us of 1.5 us, that step. */
#define NCCL_STACKED(extra)                                                   \
    "{\"version\": 1, \"stack\": \"nccl-2.2x\", \"software\": "              \
    "{\"launch_us\": 5, \"nvls_launch_us\": 20, \"link_efficiency\": 1, "  \
    extra "\"ll\": {\"step_us\": 0, "                                       \
    "\"efficiency\": 0.5}, \"ll128\": {\"enabled\": false}, \"simple\": "    \
    "{\"step_us\": 3}}, \"node_types\": [{\"count\": 1, \"npu\": "         \
    "{\"count\": 8, \"arena_MiB\": 64, \"reduce_bw_GBps\": 50, "          \
    "\"mem_bw_GBps\": 200}, \"fabric\": {\"type\": \"switch\", "          \
    "\"bw_GBps\": 100, \"lat_us\": 2, \"reduce\": {\"bw_GBps\": "        \
    "10000}}}]}"

static void test_nvls_simple(void **state)
{
    (void)state;
    const int SIMPLE = HCCN_SIM_PROTO_SIMPLE, IN = HCCN_SIM_CLS_INTRA,
              NV = HCCN_SIM_FAM_NVLS;
    hccn_sim_topo_t *own = load(STACKED);
    assert_int_equal(hccn_sim_sw_call_proto(own->sw, 1), -1);
    /* No stack: an NVLS call's steps are its protocol's. */
    assert_int_equal(own->sw->nvls_step_on, 0);
    assert_true(hccn_sim_sw_step(own->sw, SIMPLE, IN, NV) ==
                own->sw->proto[SIMPLE].step_s[IN]);
    hccn_sim_topo_free(own);
    const char *files[2] = {NCCL_STACKED(""),
                            NCCL_STACKED("\"nvls_step_us\": 1.5, ")};
    const double steps[2] = {0.0, 1.5e-6};
    int world[P];
    for (int r = 0; r < P; r++)
        world[r] = r;
    const hccn_algo_t *nv = hccn_hier_algo_find("nvls");
    const uint64_t count = 8 << 15;
    const double S = count * 4.0, b = S / P;
    hccn_coll_args_t a = args(HCCN_COLL_ALLREDUCE, count);
    for (int f = 0; f < 2; f++) {
        hccn_sim_topo_t *t = load(files[f]);
        assert_int_equal(hccn_sim_sw_call_proto(t->sw, 1), SIMPLE);
        assert_int_equal(hccn_sim_sw_call_proto(t->sw, 0), -1);
        assert_true(hccn_sim_sw_step(t->sw, SIMPLE, IN, NV) == steps[f]);
        /* Other calls keep the protocol's step. */
        assert_true(hccn_sim_sw_step(t->sw, SIMPLE, IN, HCCN_SIM_FAM_OTHER)
                    == 3e-6);
        hccn_cost_place_t pl = {t, world};
        double step = steps[f];
        double body = ALPHA + step + (P - 1) * b / B + b / R + ALPHA + step +
                      (P - 1) * b / B;
        for (int m = 0; m < 2; m++) {
            hccn_cost_mode_t mode = m ? HCCN_COST_MODEL : HCCN_COST_ENGINE;
            test_assert_rel(hccn_hier_cost(nv, &a, &pl, mode, NULL),
                            20e-6 + body, 1e-12, "nvls under simple alone");
        }
        hccn_sim_topo_free(t);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_allreduce),
        cmocka_unit_test(test_rs_ag),
        cmocka_unit_test(test_not_applicable),
        cmocka_unit_test(test_interp),
        cmocka_unit_test(test_hier_nvls),
        cmocka_unit_test(test_nvls_launch),
        cmocka_unit_test(test_nvls_simple),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
