/*
 * Pipeline slots of the two-level allreduce (levels.h, docs/software.md
 * "Pipeline slots"): with D slots every level's phase of chunk k waits
 * for its own of chunk k-D, not k-1, and level 0's allgathers run beside
 * its reduce-scatters (nodes of up to 16 ranks).
 *
 *   - data: D changes only the dependencies and the SCRATCH sets; the
 *     schedule has the same steps, the interpreter finds no race, the
 *     result is the serial sum (32-bit integers) and, in fp32, bit for
 *     bit the result with one slot (hier, hier_rr, and hier_nvls with the
 *     nodes' switches reducing);
 *   - time where the NICs bind (the nodes' fabric and the reductions
 *     nearly free, the bulk protocol alone, 14 us a network step): K
 *     chunks take K (l + b) with one slot, l = 2 (route + step) the
 *     latency of a chunk's two-step ring across 2 nodes and b = q / B its
 *     bytes on the NIC; with D = K slots the latencies overlap: l + K b
 *     (fill, then the NIC's pace). The engine follows both hand formulas,
 *     and the closed form the engine, for D = 1, 2, 4, 8;
 *   - time where the nodes' reducing switch binds (hier_nvls, the NICs
 *     nearly free): with one slot a chunk's reduce-scatter and allgather
 *     take their turns, (p-1) b up then (p-1) b down, blocks of b; with 8
 *     slots one chunk's allgather comes down while later chunks'
 *     reduce-scatters go up, p b each way a chunk: K p b / F and a fill
 *     of one chunk at most. The engine follows both, and the closed form
 *     the engine. On nodes of more than 16 NPUs eight slots still take
 *     the turns of one (levels.h);
 *   - order: where the nodes' switches reduce, level 0's reduce-scatters
 *     go one after another in chunk order; with a mesh the first D do,
 *     the others after chunk k-D's.
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
#include "hierarchy/coll.h"
#include "hierarchy/cost.h"
#include "hierarchy/levels.h"
#include "sched_interp.h"
#include "test_engine.h"
#include "test_topo_load.h"
#include "test_views.h"

/* ----------------------------------------------------------------- data --- */

/* fp32 values whose sums round differently in different orders. */
static uint32_t gen_f32(int rank, uint64_t i)
{
    float x = 1.0f / (float)(1 + rank) + (float)(i % 97) * 1e-3f +
              (float)(i % 13) * 1e3f;
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

static uint32_t gen_u32(int rank, uint64_t i)
{
    return (uint32_t)(rank * 2654435761u) ^ (uint32_t)(i * 40503u);
}

/* The switches that reduce for algo: the nodes' for the nvls rows, the
 * network's for the sharp ones. */
static int in_switch(const char *algo)
{
    return (strstr(algo, "nvls") != NULL ? HCCN_IN_SWITCH_NODES : 0) |
           (strstr(algo, "sharp") != NULL ? HCCN_IN_SWITCH_NET : 0);
}

/* Runs algo's allreduce on view w with D slots: checks it is race-free,
 * then copies rank r's RECV into out[r]. */
static hccn_sched_t *run(const char *algo, test_view_t *w, int D,
                         uint64_t count, int inplace, int f32,
                         uint32_t **out)
{
    int p = w->v.nranks;
    w->v.slots = D;
    hccn_coll_args_t a = {.coll = HCCN_COLL_ALLREDUCE, .nranks = p,
                          .count = count, .esize = 4, .view = &w->v,
                          .chunk_bytes = 1024,
                          .in_switch = in_switch(algo)};
    hccn_sched_t *s = hccn_hier_build(hccn_hier_algo_find(algo), &a);
    assert_non_null(s);
    sched_interp_host_t h;
    sched_interp_host_setup(&h, &a, inplace, f32 ? gen_f32 : gen_u32);
    sched_interp_opts_t o = {.reduce = f32 ? sched_interp_sum_f32
                                           : sched_interp_sum_u32,
                             .check_races = 1};
    char why[256] = "";
    if (sched_interp_run(s, h.b, &o, why, sizeof(why)) != 0)
        fail_msg("%s, %d slots: %s", algo, D, why);
    for (int r = 0; r < p; r++) {
        out[r] = malloc(count * 4);
        assert_non_null(out[r]);
        memcpy(out[r], h.b[r].recv, count * 4);
    }
    sched_interp_host_free(&h, p);
    return s;
}

/* algo's allreduce with 8 slots on view w: race free, the steps and the
 * fp32 bits of one slot, in place and out. */
static void same_as_one_slot(const char *algo, test_view_t *w,
                             uint64_t count)
{
    int p = w->v.nranks;
    uint32_t *one[TEST_VIEW_MAXP], *many[TEST_VIEW_MAXP];
    for (int inplace = 0; inplace < 2; inplace++) {
        hccn_sched_t *s1 = run(algo, w, 1, count, inplace, 1, one);
        hccn_sched_t *s8 = run(algo, w, 8, count, inplace, 1, many);
        for (int r = 0; r < p; r++) {
            assert_int_equal(s8->ranks[r].nsteps, s1->ranks[r].nsteps);
            assert_memory_equal(many[r], one[r], count * 4);
            free(one[r]);
            free(many[r]);
        }
        hccn_sched_free(s1);
        hccn_sched_free(s8);
    }
}

static void test_slots_keep_bits(void **state)
{
    (void)state;
    static const char *const algos[] = {"hier", "hier_rr", "hier_nvls",
                                        "hier_sharp", "hier_nvls_sharp"};
    const uint64_t count = 16 * 256 + 3;   /* 16 chunks and a tail */
    test_view_t w;
    test_even_view(&w, 2, 4);
    for (int al = 0; al < 5; al++) {
        same_as_one_slot(algos[al], &w, count);
        /* integers: the serial sum */
        for (int inplace = 0; inplace < 2; inplace++) {
            uint32_t *many[8];
            hccn_sched_free(run(algos[al], &w, 4, count, inplace, 0, many));
            for (int r = 0; r < 8; r++) {
                for (uint64_t i = 0; i < count; i++) {
                    uint32_t want = 0;
                    for (int q = 0; q < 8; q++)
                        want += gen_u32(q, i);
                    assert_int_equal(many[r][i], want);
                }
                free(many[r]);
            }
        }
    }
}

/* Rank 0's first K runs of steps of `phase`, one a chunk: chunk j's
 * are its steps from[j] .. to[j] - 1. */
static void phase_runs(const hccn_sched_t *s, int phase, int K,
                       uint32_t *from, uint32_t *to)
{
    int n = 0;
    const hccn_sched_rank_t *rk = &s->ranks[0];
    for (uint32_t i = 0; i < rk->nsteps; i++) {
        int in = rk->steps[i].phase == phase,
            was = i > 0 && rk->steps[i - 1].phase == phase;
        if (in && !was && n < K)
            from[n] = i;
        if (!in && was && n < K)
            to[n++] = i;
    }
    assert_int_equal(n, K);
}

/* The chunk whose run (phase_runs) the one of chunk k waits for, on
 * rank 0: the latest earlier chunk one of its steps depends on directly;
 * -1 for none. */
static int runs_after(const hccn_sched_t *s, const uint32_t *from,
                      const uint32_t *to, int k)
{
    const hccn_sched_rank_t *rk = &s->ranks[0];
    int latest = -1;
    for (uint32_t i = from[k]; i < to[k]; i++)
        for (uint32_t d = 0; d < rk->steps[i].ndeps; d++) {
            uint32_t x = rk->deps[rk->steps[i].dep_off + d];
            for (int j = 0; j < k; j++)
                if (x >= from[j] && x < to[j] && j > latest)
                    latest = j;
        }
    return latest;
}

/* The order of level 0's climbs with 8 slots (levels_allreduce.c,
 * climb_after), 16 chunks on 2 nodes of 4: where the nodes' switches
 * reduce (hier_nvls, hier_nvls_sharp) every reduce-scatter waits for the
 * chunk before's, the switch's pipeline taking them in order; with a
 * mesh (hier, and hier_sharp below its reducing network) the first 8
 * wait for the one before, the others for chunk k-8's, their transfers'
 * latencies overlapping. */
static void test_slots_climb_order(void **state)
{
    (void)state;
    static const char *const algos[] = {"hier_nvls", "hier_nvls_sharp",
                                        "hier", "hier_sharp"};
    test_view_t w;
    test_even_view(&w, 2, 4);
    const int K = 16, D = 8;
    for (int al = 0; al < 4; al++) {
        uint32_t *out[8];
        hccn_sched_t *s = run(algos[al], &w, D, (uint64_t)K * 256, 0, 0,
                              out);
        for (int r = 0; r < 8; r++)
            free(out[r]);
        /* chunk k's climb: the k-th run of phase-1 steps */
        uint32_t from[16], to[16];
        phase_runs(s, 1, K, from, to);
        for (int k = 1; k < K; k++) {
            int want = al < 2 || k < D ? k - 1 : k - D;
            int got = runs_after(s, from, to, k);
            if (got != want)
                fail_msg("%s: chunk %d's climb waits for chunk %d's, want "
                         "%d", algos[al], k, got, want);
        }
        hccn_sched_free(s);
    }
}

/* The top's slots (levels_allreduce.c, slots_init): with 8 slots, the
 * top's allreduce of chunk k (the k-th run of phase-2 steps on rank 0)
 * waits for chunk k-D's, none of the first D for another's; with one
 * slot, for chunk k-1's. D is 8 for every peer a member sends to in
 * turn: one next rank on a ring (hier), log2 N partners of
 * halving-doubling (hier_mh: 24 on 8 nodes); a top whose switch reduces
 * (hier_sharp, hier_nvls_sharp: reduction, then multicast) keeps 8 on
 * 2 nodes. 32 chunks. */
static void test_slots_top_order(void **state)
{
    (void)state;
    static const struct {
        const char *algo;
        int N, L, D;
    } cases[] = {
        {"hier_sharp", 2, 4, 8}, {"hier_nvls_sharp", 2, 4, 8},
        {"hier", 8, 2, 8},       {"hier_mh", 8, 2, 24},
        {"hier_mh", 2, 4, 8},
    };
    const int K = 32;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        test_view_t w;
        test_even_view(&w, cases[c].N, cases[c].L);
        int p = cases[c].N * cases[c].L;
        for (int one = 0; one < 2; one++) {
            int D = one ? 1 : cases[c].D;
            uint32_t *out[TEST_VIEW_MAXP], from[32], to[32];
            hccn_sched_t *s = run(cases[c].algo, &w, one ? 1 : 8,
                                  (uint64_t)K * 256, 0, 0, out);
            for (int r = 0; r < p; r++)
                free(out[r]);
            phase_runs(s, 2, K, from, to);
            for (int k = 1; k < K; k++) {
                int want = k < D ? -1 : k - D;
                int got = runs_after(s, from, to, k);
                if (got != want)
                    fail_msg("%s on %d x %d, %d slot(s): chunk %d's top "
                             "waits for chunk %d's, want %d", cases[c].algo,
                             cases[c].N, cases[c].L, one ? 1 : 8, k, got,
                             want);
            }
            hccn_sched_free(s);
        }
    }
}

/* The in-network top's transfers in flight stay within
 * HCCN_LEVELS_TOP_FLIGHT (levels.h): with 8 slots, L ranks a node and N
 * nodes, a chunk puts L N (N-1) of them through the switch's unit, so
 * the top keeps D' = 2048 / (L N (N-1)) chunks (at least 1, at most 8)
 * and the default chunk (4 MiB) grows 8 / D' times. The helpers'
 * arithmetic, then the schedule of hier_sharp on N x L ranks with 16
 * default chunks' worth of data: 16 runs of the top on rank 0, chunk k's
 * after chunk k-D''s. */
static void test_slots_top_flight(void **state)
{
    (void)state;
    static const struct {
        int N, L, D, grow;
    } cases[] = {
        {2, 4, 8, 1},       /* 8 a chunk */
        {8, 8, 4, 2},       /* 448 */
        {16, 4, 2, 4},      /* 960 */
        {32, 2, 1, 8},      /* 1984 */
    };
    const uint64_t MiB = 1 << 20;
    assert_int_equal(hccn_hier_levels_top_slots(1, 32, 2), 1);
    assert_int_equal(hccn_hier_levels_top_chunk(1, 32, 2, 4 * MiB), 4 * MiB);
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const int N = cases[c].N, L = cases[c].L, D = cases[c].D;
        assert_int_equal(hccn_hier_levels_top_slots(8, N, (uint64_t)L), D);
        uint64_t chunk = hccn_hier_levels_top_chunk(8, N, (uint64_t)L,
                                                    4 * MiB);
        assert_true(chunk == (uint64_t)cases[c].grow * 4 * MiB);
        test_view_t w;
        test_even_view(&w, N, L);
        w.v.slots = 8;
        const int K = 16;
        hccn_coll_args_t a = {.coll = HCCN_COLL_ALLREDUCE,
                              .nranks = N * L,
                              .count = (uint64_t)K * chunk / 4, .esize = 4,
                              .view = &w.v,
                              .in_switch = in_switch("hier_sharp")};
        hccn_sched_t *s = hccn_hier_build(hccn_hier_algo_find("hier_sharp"),
                                          &a);
        assert_non_null(s);
        uint32_t from[16], to[16];
        phase_runs(s, 2, K, from, to);
        for (int k = 1; k < K; k++) {
            int want = k < D ? -1 : k - D;
            int got = runs_after(s, from, to, k);
            if (got != want)
                fail_msg("%d x %d: chunk %d's top waits for chunk %d's, "
                         "want %d", N, L, k, got, want);
        }
        hccn_sched_free(s);
    }
}

/* Rank 0's runs of steps of `phase`. */
static int count_runs(const hccn_sched_t *s, int phase)
{
    int n = 0;
    const hccn_sched_rank_t *rk = &s->ranks[0];
    for (uint32_t i = 0; i < rk->nsteps; i++)
        n += rk->steps[i].phase == phase &&
             (i == 0 || rk->steps[i - 1].phase != phase);
    return n;
}

/* A ring top of N members under U ranks each moves at least 256 KiB a
 * step: the default chunk is max(4 MiB, U N 256 KiB)
 * (hccn_hier_levels_ring_chunk); a halving-doubling top keeps 4 MiB.
 * The helper's arithmetic, the schedules (one run of the top on rank 0
 * a chunk: two chunks' worth of data makes two runs), and the closed
 * form, which takes the same chunk as when it is given. */
#define CFG6                                                                  \
    "{\"version\": 1, \"stack\": \"nccl-2.2x\", \"node_types\": [{"           \
    "\"count\": 6, \"npu\": {\"count\": %d, \"arena_MiB\": 64, "               \
    "\"reduce_bw_GBps\": 1000}, "                                                  \
    "\"fabric\": {\"type\": \"switch\", \"bw_GBps\": 100, \"lat_us\": 1}, "   \
    "\"nics\": {\"count\": %d, \"bw_GBps\": 25, \"lat_us\": 1}}], "           \
    "\"network\": {\"type\": \"switch\", \"lat_us\": 1}}"
static void test_ring_top_chunk(void **state)
{
    (void)state;
    const uint64_t MiB = 1 << 20;
    const uint64_t KiB = 1 << 10;
    static const struct {
        const char *top;
        int n, unit;
        uint64_t KiB;
    } cases[] = {{"ring", 1, 8, 4096}, {"ring", 2, 8, 4096},
                 {"ring", 3, 8, 6144}, {"ring", 20, 8, 40960},
                 {"ring", 6, 2, 4096}, {"ring", 9, 2, 4608},
                 {"hd", 20, 8, 4096}, {"mesh", 6, 8, 4096}};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
        assert_true(hccn_hier_levels_ring_chunk(cases[c].top, cases[c].n,
                                                (uint64_t)cases[c].unit,
                                                4 * MiB) ==
                    cases[c].KiB * KiB);
    static const struct {
        const char *algo;
        int N, L;
        uint64_t KiB;   /* the default chunk */
    } rows[] = {{"hier", 6, 8, 12288}, {"hier", 2, 8, 4096},
                {"hier", 6, 2, 4096}, {"hier_mh", 8, 8, 4096},
                {"hier_rr", 5, 4, 5120}};
    for (size_t c = 0; c < sizeof(rows) / sizeof(rows[0]); c++) {
        test_view_t w;
        test_even_view(&w, rows[c].N, rows[c].L);
        hccn_coll_args_t a = {.coll = HCCN_COLL_ALLREDUCE,
                              .nranks = rows[c].N * rows[c].L,
                              .count = 2 * rows[c].KiB * KiB / 4,
                              .esize = 4, .view = &w.v};
        hccn_sched_t *s = hccn_hier_build(hccn_hier_algo_find(rows[c].algo),
                                          &a);
        assert_non_null(s);
        if (count_runs(s, 2) != 2)
            fail_msg("%s on %d nodes, two default chunks: %d runs of the "
                     "top", rows[c].algo, rows[c].N, count_runs(s, 2));
        hccn_sched_free(s);
    }
    /* 6 nodes of 8: 12 MiB chunks; of 2: 4 MiB */
    static const struct {
        int L;
        uint64_t MiB;
    } cfgs[] = {{8, 12}, {2, 4}};
    for (size_t c = 0; c < sizeof(cfgs) / sizeof(cfgs[0]); c++) {
        char json[1024];
        snprintf(json, sizeof(json), CFG6, cfgs[c].L, cfgs[c].L);
        hccn_sim_topo_t *t = test_topo_load(json, "six");
        const int p = 6 * cfgs[c].L;
        test_place_t pt;
        test_place(&pt, t, p);
        hccn_coll_args_t a = {.coll = HCCN_COLL_ALLREDUCE, .nranks = p,
                              .count = 64 * MiB / 4, .esize = 4,
                              .view = &pt.v};
        const hccn_algo_t *hier = hccn_hier_algo_find("hier");
        double dflt = hccn_hier_cost(hier, &a, &pt.pl, HCCN_COST_MODEL,
                                     NULL);
        a.chunk_bytes = cfgs[c].MiB * MiB;
        test_assert_rel(dflt,
                        hccn_hier_cost(hier, &a, &pt.pl, HCCN_COST_MODEL,
                                       NULL),
                        0.0, "the closed form's default chunk");
        hccn_sim_topo_free(t);
    }
}

/* A top of 8 nodes by halving-doubling keeps 24 chunks in flight, each
 * in a SCRATCH set of its own: still the same bits as one slot, race
 * free, the same steps. */
static void test_slots_wide_top(void **state)
{
    (void)state;
    test_view_t w;
    test_even_view(&w, 8, 2);
    same_as_one_slot("hier_mh", &w, 32 * 256 + 1);   /* 32 chunks, a tail */
}

/* Nodes of more than HCCN_LEVELS_BESIDE_MAX ranks keep one chunk at a
 * time below the top (levels.h): still the same bits as one slot, race
 * free, the same steps. */
static void test_slots_big_nodes(void **state)
{
    (void)state;
    test_view_t w;
    test_even_view(&w, 2, HCCN_LEVELS_BESIDE_MAX + 1);
    same_as_one_slot("hier", &w, 16 * 256 + 5);   /* 16 chunks, a tail */
}

/* ----------------------------------------------------------------- time --- */

/* 2 nodes of 2 NPUs: a fabric of 10 TB/s, 0.01 us; one NIC per NPU of
 * 25 GB/s, 1 us; a switch network of 1 us (NET: its other keys). NCCL's
 * preset with the bulk protocol alone, no step inside a node, no launch;
 * D slots. */
#define CFG_NET(NET)                                                          \
    "{\"version\": 1, \"stack\": \"nccl-2.2x\", \"software\": {"             \
    "\"launch_us\": 0, \"ll\": {\"enabled\": false}, \"ll128\": "            \
    "{\"enabled\": false}, \"simple\": {\"step_us\": {\"intra\": 0, "        \
    "\"net\": 14}}, \"slots\": %d}, \"node_types\": [{\"count\": 2, "        \
    "\"npu\": {\"count\": 2, \"arena_MiB\": 64, \"reduce_bw_GBps\": "        \
    "100000, \"mem_bw_GBps\": 100000}, \"fabric\": {\"type\": \"switch\", " \
    "\"bw_GBps\": 10000, \"lat_us\": 0.01}, \"nics\": {\"count\": 2, "       \
    "\"bw_GBps\": 25, \"lat_us\": 1}}], \"network\": {\"type\": "            \
    "\"switch\", \"lat_us\": 1" NET "}}"
#define CFG CFG_NET("")
/* CFG on a network switch that reduces (at 100 TB/s, no latency of its
 * own). */
#define CFG_SHARP                                                             \
    CFG_NET(", \"reduce\": {\"bw_GBps\": 100000, \"lat_us\": 0}")

#define K 8                      /* chunks */
#define CHUNK (1 << 20)          /* bytes of a chunk, both ranks' */

/* Engine and closed form of algo's allreduce of K chunks on cfg with D
 * slots; *route the latency of NPU 0 -> NPU 2 (node 1). */
static void times_of(const char *cfg, const char *algo, int D, double *eng,
                     double *form, double *route)
{
    char json[2048];
    snprintf(json, sizeof(json), cfg, D);
    hccn_sim_topo_t *t = test_topo_load(json, "slots");
    int world[4] = {0, 1, 2, 3}, node[4], local[4], links[16];
    hccn_cost_place_t pl = {t, world};
    hccn_hier_view_t view;
    assert_int_equal(hccn_hier_cost_view(&pl, 4, node, local, &view), 0);
    assert_int_equal(view.slots, D);
    hccn_coll_args_t a = {.coll = HCCN_COLL_ALLREDUCE, .nranks = 4,
                          .count = (uint64_t)K * CHUNK / 4, .esize = 4,
                          .view = &view, .chunk_bytes = CHUNK};
    a.in_switch = hccn_hier_in_switch(t, world, 4, a.coll, HCCN_FP32,
                                      HCCN_SUM);
    const hccn_algo_t *al = hccn_hier_algo_find(algo);
    *eng = hccn_hier_cost(al, &a, &pl, HCCN_COST_ENGINE, NULL);
    *form = hccn_hier_cost(al, &a, &pl, HCCN_COST_MODEL, NULL);
    assert_true(hccn_sim_topo_route(t, 0, 2, links, route) > 0);
    hccn_sim_topo_free(t);
}

/* times_of for D = 1, 2, 4 .. K into eng[D]: the closed form within 3 %
 * of the engine, and each doubling of D faster. */
static void slot_sweep(const char *cfg, const char *algo, double *eng,
                       double *route)
{
    double form;
    for (int D = 1; D <= K; D *= 2) {
        times_of(cfg, algo, D, &eng[D], &form, route);
        print_message("%s, %d slot(s): engine %.3f us, form %.3f us "
                      "(%+.2f %%)\n", algo, D, eng[D] * 1e6, form * 1e6,
                      100 * (form - eng[D]) / eng[D]);
        test_assert_rel(form, eng[D], 0.03, "closed form with slots");
        if (D > 1)
            assert_true(eng[D] < eng[D / 2]);
    }
}

static void test_slots_time(void **state)
{
    (void)state;
    double eng[K + 1], lat;
    const double step = 14e-6, q = CHUNK / 2, B = 25e9;
    slot_sweep(CFG, "hier_rr", eng, &lat);
    /* a chunk's ring across 2 nodes: two steps of q/2 bytes each */
    double l = 2.0 * (lat + step), b = q / B;
    test_assert_rel(eng[1], K * (l + b), 0.02, "one slot: K (l + b)");
    test_assert_rel(eng[K], l + K * b, 0.02, "K slots: l + K b");
}

/* The same where the network reduces, hier_sharp: a chunk's allreduce
 * across the 2 nodes is a reduction (q/2 up a NIC, through the switch's
 * unit, to the block's owner) and a multicast (the owner's q/2 up, then
 * down to the other), each of one route and one network step (l/2), and
 * its NICs carry q each way as the ring's do (b). One slot: chunk k+1's
 * reduction beside chunk k's multicast, the pipeline of two parts,
 * (K+1) l/2 + K b (latency-bound at 14 us a step); K slots: l + K b, the
 * ring's. */
static void test_slots_time_sharp(void **state)
{
    (void)state;
    double eng[K + 1], lat;
    const double step = 14e-6, q = CHUNK / 2, B = 25e9;
    slot_sweep(CFG_SHARP, "hier_sharp", eng, &lat);
    double l = 2.0 * (lat + step), b = q / B;
    test_assert_rel(eng[1], (K + 1) * l / 2 + K * b, 0.02,
                    "one slot: (K+1) l/2 + K b");
    test_assert_rel(eng[K], l + K * b, 0.02, "K slots: l + K b");
}

/* 2 nodes of L NPUs on a switch of 100 GB/s a port each way that reduces
 * at 400 GB/s of contributions, 0.01 us; NICs of 10 TB/s; the bulk
 * protocol alone, no step, no launch; D slots. */
#define CFG_NV                                                                \
    "{\"version\": 1, \"stack\": \"nccl-2.2x\", \"software\": {"             \
    "\"launch_us\": 0, \"nvls_launch_us\": 0, \"ll\": {\"enabled\": "         \
    "false}, \"ll128\": {\"enabled\": false}, \"simple\": {\"step_us\": "      \
    "{\"intra\": 0, \"net\": 0}}, \"link_efficiency\": 1, \"slots\": %d}, "   \
    "\"node_types\": [{\"count\": 2, \"npu\": {\"count\": %d, \"arena_MiB\": " \
    "64, \"reduce_bw_GBps\": 100000, \"mem_bw_GBps\": 100000}, "            \
    "\"fabric\": {\"type\": \"switch\", \"bw_GBps\": 100, \"lat_us\": 0.01, " \
    "\"reduce\": {\"bw_GBps\": 400}}, \"nics\": {\"count\": %d, "             \
    "\"bw_GBps\": 10000, \"lat_us\": 0.01}}], \"network\": {\"type\": "       \
    "\"switch\", \"lat_us\": 0.01}}"

#define KN 16                    /* chunks */
#define CHUNK_NV (4 << 20)       /* hier's own chunk (chunk_bytes 0) */

/* Engine and closed form of hier_nvls's allreduce of about KN chunks of
 * CHUNK_NV bytes (KN times CHUNK_NV in all), nodes of L NPUs, D slots. */
static void times_nvls(int L, int D, double *eng, double *form)
{
    char json[2048];
    snprintf(json, sizeof(json), CFG_NV, D, L, L);
    hccn_sim_topo_t *t = test_topo_load(json, "slots-nvls");
    int world[2 * TEST_VIEW_MAXP], node[2 * TEST_VIEW_MAXP],
        local[2 * TEST_VIEW_MAXP];
    for (int r = 0; r < 2 * L; r++)
        world[r] = r;
    hccn_cost_place_t pl = {t, world};
    hccn_hier_view_t view;
    assert_int_equal(hccn_hier_cost_view(&pl, 2 * L, node, local, &view), 0);
    hccn_coll_args_t a = {.coll = HCCN_COLL_ALLREDUCE, .nranks = 2 * L,
                          .count = (uint64_t)KN * CHUNK_NV / 4, .esize = 4,
                          .view = &view};
    a.in_switch = hccn_hier_in_switch(t, world, 2 * L, a.coll, HCCN_FP32,
                                      HCCN_SUM);
    assert_true(a.in_switch & HCCN_IN_SWITCH_NODES);
    const hccn_algo_t *nv = hccn_hier_algo_find("hier_nvls");
    *eng = hccn_hier_cost(nv, &a, &pl, HCCN_COST_ENGINE, NULL);
    *form = hccn_hier_cost(nv, &a, &pl, HCCN_COST_MODEL, NULL);
    hccn_sim_topo_free(t);
}

static void test_slots_time_switch(void **state)
{
    (void)state;
    double eng[2], form[2];
    const double F = 100e9, b = CHUNK_NV / 4.0;   /* a rank's block */
    const int p = 4;
    times_nvls(p, 1, &eng[0], &form[0]);
    times_nvls(p, 8, &eng[1], &form[1]);
    print_message("one slot: engine %.3f us, form %.3f us; 8 slots: engine "
                  "%.3f us, form %.3f us\n", eng[0] * 1e6, form[0] * 1e6,
                  eng[1] * 1e6, form[1] * 1e6);
    /* one slot: (p-1) b up, then (p-1) b down, a chunk */
    test_assert_rel(eng[0], KN * 2.0 * (p - 1) * b / F, 0.03,
                    "one slot: K 2 (p-1) b / F");
    /* eight: p b each way a chunk, and at most one chunk's fill */
    double pace = KN * p * b / F, fill = 2.0 * (p - 1) * b / F;
    if (eng[1] < pace * (1 - 1e-9) || eng[1] > (pace + fill) * 1.01)
        fail_msg("8 slots: engine %.3f us outside [%.3f, %.3f] us",
                 eng[1] * 1e6, pace * 1e6, (pace + fill) * 1e6);
    test_assert_rel(form[0], eng[0], 0.03, "closed form, one slot");
    test_assert_rel(form[1], eng[1], 0.05, "closed form, 8 slots");
}

/* algo's default chunk for a (two chunks' worth of data) is mib MiB: two
 * runs of the top on rank 0, and the closed form's price as with that
 * chunk given, not as with 4 MiB. */
static void default_chunk(const hccn_algo_t *algo, hccn_coll_args_t *a,
                          const hccn_cost_place_t *pl, uint64_t mib)
{
    const uint64_t MiB = 1 << 20;
    a->chunk_bytes = 0;
    hccn_sched_t *s = hccn_hier_build(algo, a);
    assert_non_null(s);
    if (count_runs(s, 2) != 2)
        fail_msg("%s, %llu MiB: %d runs of the top, want 2 chunks of %llu "
                 "MiB", algo->name,
                 (unsigned long long)(a->count * a->esize / MiB),
                 count_runs(s, 2), (unsigned long long)mib);
    hccn_sched_free(s);
    double dflt = hccn_hier_cost(algo, a, pl, HCCN_COST_MODEL, NULL);
    a->chunk_bytes = mib * MiB;
    test_assert_rel(dflt, hccn_hier_cost(algo, a, pl, HCCN_COST_MODEL, NULL),
                    0.0, "the closed form's default chunk");
    a->chunk_bytes = 4 * MiB;
    if (hccn_hier_cost(algo, a, pl, HCCN_COST_MODEL, NULL) == dflt)
        fail_msg("%s: 4 MiB chunks cost the same as the default: the test "
                 "cannot tell the chunks apart", algo->name);
    a->chunk_bytes = 0;
}

/* A level 0 that reduces in its switch moves each member's block of a
 * chunk in 128 KiB at least: the default chunk is max(4 MiB, L 128 KiB);
 * a ring level 0, 256 KiB (hccn_hier_levels_first_chunk). The helper's
 * arithmetic; on two nodes of 40, hier_nvls's schedule, whose default
 * chunk is 5 MiB (two chunks' worth of data makes two runs of the top on
 * rank 0, where 4 MiB chunks would make three), and hier_rr's, 10 MiB;
 * and the closed forms, which take the same chunks as when given. */
static void test_switch_level_chunk(void **state)
{
    (void)state;
    const uint64_t MiB = 1 << 20;
    hccn_coll_args_t nodes = {.in_switch = HCCN_IN_SWITCH_NODES};
    hccn_coll_args_t none = {.in_switch = 0};
    static const struct {
        const char *algo;
        int n, in_switch;
        uint64_t MiB;
    } cases[] = {{"nvls", 72, 1, 9}, {"nvls", 40, 1, 5}, {"nvls", 32, 1, 4},
                 {"nvls", 8, 1, 4}, {"nvls", 72, 0, 4}, {"mesh", 72, 1, 4},
                 {"ring", 72, 0, 18}, {"ring", 40, 1, 10}, {"ring", 16, 0, 4},
                 {"ring", 2, 0, 4}, {"hd", 72, 0, 4}};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        uint64_t got = hccn_hier_levels_first_chunk(
            cases[c].in_switch ? &nodes : &none, cases[c].algo, cases[c].n,
            4 * MiB);
        if (got != cases[c].MiB * MiB)
            fail_msg("%s over %d (switch %d): %llu bytes, want %llu MiB",
                     cases[c].algo, cases[c].n, cases[c].in_switch,
                     (unsigned long long)got,
                     (unsigned long long)cases[c].MiB);
    }
    const int L = 40, p = 2 * L;
    char json[2048];
    snprintf(json, sizeof(json), CFG_NV, 1, L, L);
    hccn_sim_topo_t *t = test_topo_load(json, "forty");
    test_place_t pt;
    test_place(&pt, t, p);
    hccn_coll_args_t a = {.coll = HCCN_COLL_ALLREDUCE, .nranks = p,
                          .count = 2 * 5 * MiB / 4, .esize = 4,
                          .view = &pt.v};
    a.in_switch = hccn_hier_in_switch(t, pt.world, p, a.coll, HCCN_FP32,
                                      HCCN_SUM);
    assert_true(a.in_switch & HCCN_IN_SWITCH_NODES);
    const hccn_algo_t *nv = hccn_hier_algo_find("hier_nvls");
    default_chunk(nv, &a, &pt.pl, 5);
    /* A ring inside the nodes (hier_rr): 40 x 256 KiB = 10 MiB chunks. */
    a.count = 2 * 10 * MiB / 4;
    default_chunk(hccn_hier_algo_find("hier_rr"), &a, &pt.pl, 10);
    hccn_sim_topo_free(t);
}

/* Nodes of more than HCCN_LEVELS_BESIDE_MAX NPUs: with 8 slots level 0
 * still takes its turns, a reduce-scatter then an allgather a chunk. Of
 * a message of S bytes, the reduce-scatters send (p-1)/p S up each port
 * and put (p-1) S through the unit (X), the allgathers bring (p-1)/p S
 * down each port: the sum of the two, where beside it would be the most
 * of S / F each way and (p-1) S / X. In the engine and in the closed
 * form. */
static void test_slots_time_big_nodes(void **state)
{
    (void)state;
    const int p = HCCN_LEVELS_BESIDE_MAX + 1;
    const double F = 100e9, X = 400e9, S = (double)KN * CHUNK_NV;
    double turns = fmax((p - 1) * S / p / F, (p - 1) * S / X) +
                   (p - 1) * S / p / F;
    double beside = fmax(S / F, (p - 1) * S / X), eng, form;
    times_nvls(p, 8, &eng, &form);
    print_message("nodes of %d, 8 slots: engine %.3f us, form %.3f us "
                  "(turns %.3f us, beside %.3f us)\n", p, eng * 1e6,
                  form * 1e6, turns * 1e6, beside * 1e6);
    assert_true(turns > 1.2 * beside);
    test_assert_rel(eng, turns, 0.03, "8 slots, large nodes: in turns");
    test_assert_rel(form, eng, 0.03, "closed form, large nodes");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slots_keep_bits),
        cmocka_unit_test(test_slots_big_nodes),
        cmocka_unit_test(test_slots_wide_top),
        cmocka_unit_test(test_slots_climb_order),
        cmocka_unit_test(test_slots_top_order),
        cmocka_unit_test(test_slots_top_flight),
        cmocka_unit_test(test_slots_time),
        cmocka_unit_test(test_slots_time_sharp),
        cmocka_unit_test(test_ring_top_chunk),
        cmocka_unit_test(test_slots_time_switch),
        cmocka_unit_test(test_switch_level_chunk),
        cmocka_unit_test(test_slots_time_big_nodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
