/*
 * Pipeline slots at the top of the two-level allreduce (levels.h,
 * docs/software.md "Pipeline slots"): with D slots the top's allreduce
 * of chunk k waits for its own of chunk k-D, not k-1.
 *
 *   - data: D changes only the dependencies and the SCRATCH sets; the
 *     schedule has the same steps, the interpreter finds no race, the
 *     result is the serial sum (32-bit integers) and, in fp32, bit for
 *     bit the result with one slot;
 *   - time: on a cluster whose NICs bind (the nodes' fabric and the
 *     reductions nearly free, the bulk protocol alone, 14 us a network
 *     step), K chunks take K (l + b) with one slot, l = 2 (route + step)
 *     the latency of a chunk's two-step ring across 2 nodes and b =
 *     q / B its bytes on the NIC; with D = K slots the latencies overlap:
 *     l + K b (fill, then the NIC's pace). The engine follows both hand
 *     formulas, and the closed form the engine, for D = 1, 2, 4, 8.
 */
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
#include "sched_interp.h"
#include "test_engine.h"
#include "test_topo_load.h"
#include "test_views.h"

/* ----------------------------------------------------------------- data --- */

static void sum_f32(void *dst, const void *a, const void *b, size_t bytes,
                    void *ctx)
{
    (void)ctx;
    for (size_t i = 0; i < bytes / 4; i++) {
        float x, y;
        memcpy(&x, (const char *)a + 4 * i, 4);
        memcpy(&y, (const char *)b + 4 * i, 4);
        x += y;
        memcpy((char *)dst + 4 * i, &x, 4);
    }
}

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
                          .chunk_bytes = 1024};
    hccn_sched_t *s = hccn_hier_build(hccn_hier_algo_find(algo), &a);
    assert_non_null(s);
    sched_interp_host_t h;
    sched_interp_host_setup(&h, &a, inplace, f32 ? gen_f32 : gen_u32);
    sched_interp_opts_t o = {.reduce = f32 ? sum_f32 : sched_interp_sum_u32,
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

static void test_slots_keep_bits(void **state)
{
    (void)state;
    static const char *const algos[] = {"hier", "hier_rr"};
    const uint64_t count = 16 * 256 + 3;   /* 16 chunks and a tail */
    test_view_t w;
    test_even_view(&w, 2, 4);
    for (int al = 0; al < 2; al++)
        for (int inplace = 0; inplace < 2; inplace++) {
            uint32_t *one[8], *many[8];
            hccn_sched_t *s1 = run(algos[al], &w, 1, count, inplace, 1, one);
            hccn_sched_t *s8 = run(algos[al], &w, 8, count, inplace, 1, many);
            for (int r = 0; r < 8; r++) {
                assert_int_equal(s8->ranks[r].nsteps, s1->ranks[r].nsteps);
                assert_memory_equal(many[r], one[r], count * 4);
                free(one[r]);
                free(many[r]);
            }
            hccn_sched_free(s1);
            hccn_sched_free(s8);
            /* integers: the serial sum */
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

/* ----------------------------------------------------------------- time --- */

/* 2 nodes of 2 NPUs: a fabric of 10 TB/s, 0.01 us; one NIC per NPU of
 * 25 GB/s, 1 us; a switch network of 1 us. NCCL's preset with the bulk
 * protocol alone, no step inside a node, no launch; D slots. */
#define CFG                                                                   \
    "{\"version\": 1, \"stack\": \"nccl-2.2x\", \"software\": {"             \
    "\"launch_us\": 0, \"ll\": {\"enabled\": false}, \"ll128\": "            \
    "{\"enabled\": false}, \"simple\": {\"step_us\": {\"intra\": 0, "        \
    "\"net\": 14}}, \"slots\": %d}, \"node_types\": [{\"count\": 2, "        \
    "\"npu\": {\"count\": 2, \"arena_MiB\": 64, \"reduce_bw_GBps\": "        \
    "100000, \"mem_bw_GBps\": 100000}, \"fabric\": {\"type\": \"switch\", " \
    "\"bw_GBps\": 10000, \"lat_us\": 0.01}, \"nics\": {\"count\": 2, "       \
    "\"bw_GBps\": 25, \"lat_us\": 1}}], \"network\": {\"type\": "            \
    "\"switch\", \"lat_us\": 1}}"

#define K 8                      /* chunks */
#define CHUNK (1 << 20)          /* bytes of a chunk, both ranks' */

/* Engine and closed form of hier_rr's allreduce of K chunks, D slots;
 * *route the latency of NPU 0 -> NPU 2 (node 1). */
static void times(int D, double *eng, double *form, double *route)
{
    char json[2048];
    snprintf(json, sizeof(json), CFG, D);
    hccn_sim_topo_t *t = test_topo_load(json, "slots");
    int world[4] = {0, 1, 2, 3}, node[4], local[4], links[16];
    hccn_cost_place_t pl = {t, world};
    hccn_hier_view_t view;
    assert_int_equal(hccn_hier_cost_view(&pl, 4, node, local, &view), 0);
    assert_int_equal(view.slots, D);
    hccn_coll_args_t a = {.coll = HCCN_COLL_ALLREDUCE, .nranks = 4,
                          .count = (uint64_t)K * CHUNK / 4, .esize = 4,
                          .view = &view, .chunk_bytes = CHUNK};
    const hccn_algo_t *rr = hccn_hier_algo_find("hier_rr");
    *eng = hccn_hier_cost(rr, &a, &pl, HCCN_COST_ENGINE, NULL);
    *form = hccn_hier_cost(rr, &a, &pl, HCCN_COST_MODEL, NULL);
    assert_true(hccn_sim_topo_route(t, 0, 2, links, route) > 0);
    hccn_sim_topo_free(t);
}

static void test_slots_time(void **state)
{
    (void)state;
    double eng[9], form[9], lat;
    const double step = 14e-6, q = CHUNK / 2, B = 25e9;
    for (int D = 1; D <= K; D *= 2) {
        times(D, &eng[D], &form[D], &lat);
        print_message("%d slot(s): engine %.3f us, form %.3f us (%+.2f %%)\n",
                      D, eng[D] * 1e6, form[D] * 1e6,
                      100 * (form[D] - eng[D]) / eng[D]);
        test_assert_rel(form[D], eng[D], 0.03, "closed form with slots");
        if (D > 1)
            assert_true(eng[D] < eng[D / 2]);
    }
    /* a chunk's ring across 2 nodes: two steps of q/2 bytes each */
    double l = 2.0 * (lat + step), b = q / B;
    test_assert_rel(eng[1], K * (l + b), 0.02, "one slot: K (l + b)");
    test_assert_rel(eng[K], l + K * b, 0.02, "K slots: l + K b");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slots_keep_bits),
        cmocka_unit_test(test_slots_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
