/*
 * The pipeline of hier_sharp's in-network level (docs/algorithms.md,
 * hier_sharp): each chunk's allreduce across nodes runs as its reduction
 * and its multicast, chunk k+1's reduction while chunk k's multicast
 * runs. The arithmetic of the closed form (hccn_hier_cm_two_part) against
 * formulas worked out by hand, and the closed form against the engine
 * over several chunks, without and with a software stack (whose in-switch
 * transfers run under the bulk protocol, each paying its step).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "device_sim/topo.h"
#include "hierarchy/coll.h"
#include "hierarchy/cost.h"
#include "hierarchy/cost_internal.h"
#include "test_engine.h"
#include "test_topo_load.h"

/* 4 nodes of 2 NPUs (a switch fabric of 100 GB/s, 1 us), one NIC per
 * NPU of 25 GB/s (2 us), a switch network of 1 us that reduces at 400
 * GB/s (0.5 us); STACK: "" or a "stack" key. */
#define NET(STACK)                                                            \
    "{\"version\": 1, " STACK "\"node_types\": [{\"count\": 4, \"npu\": {"  \
    "\"count\": 2, \"arena_MiB\": 64, \"reduce_bw_GBps\": 50, "              \
    "\"mem_bw_GBps\": 200}, \"fabric\": {\"type\": \"switch\", "             \
    "\"bw_GBps\": 100, \"lat_us\": 1}, \"nics\": {\"count\": 2, "            \
    "\"bw_GBps\": 25, \"lat_us\": 2}}], \"network\": {\"type\": "            \
    "\"switch\", \"lat_us\": 1, \"reduce\": {\"bw_GBps\": 400, "             \
    "\"lat_us\": 0.5}}}"

#define P 8

/* Parts x = {reduction, multicast, reduction overlapped, multicast
 * overlapped}, all chunks alike. */
static double two_part(const double *in, uint64_t K, const double x[4])
{
    double out[16];
    assert_true(K <= 16);
    hccn_hier_cm_two_part(in, K, x, x, out);
    for (uint64_t k = 1; k < K; k++)
        assert_true(out[k] >= out[k - 1]);
    return out[K - 1];
}

/* Inputs all ready at once: the first reduction alone, K-1 steady stages
 * of the overlapped parts, the last multicast alone:
 * T = red + (K-1) max(red_o, mc_o) + mc. Inputs far apart (D): nothing
 * overlaps, T = (K-1) D + red + mc. One chunk: red + mc. */
static void test_two_part_formulas(void **state)
{
    (void)state;
    const double x[4] = {3.0, 2.0, 4.0, 4.0}, y[4] = {3.0, 2.0, 5.0, 3.5};
    const double z[4] = {3.0, 2.0, 3.5, 5.0};
    double in[16] = {0};
    for (uint64_t K = 1; K <= 16; K++) {
        assert_true(two_part(in, K, x) == 3.0 + 4.0 * (K - 1) + 2.0);
        assert_true(two_part(in, K, y) == 3.0 + 5.0 * (K - 1) + 2.0);
        assert_true(two_part(in, K, z) == 3.0 + 5.0 * (K - 1) + 2.0);
    }
    for (int k = 0; k < 16; k++)
        in[k] = 100.0 * k;
    for (uint64_t K = 1; K <= 16; K++)
        assert_true(two_part(in, K, x) == 100.0 * (K - 1) + 3.0 + 2.0);
    /* inputs 1 apart, faster than a stage: the pipeline sets the pace */
    for (int k = 0; k < 16; k++)
        in[k] = 1.0 * k;
    assert_true(two_part(in, 8, x) == 3.0 + 4.0 * 7 + 2.0);
}

/* hier_sharp's allreduce in K chunks: the closed form against the engine
 * (which shares the links between a chunk's reduction and the previous
 * chunk's multicast as it goes), to within tol. */
static void check_chunks(const char *json, uint64_t count, uint64_t chunk,
                         double tol)
{
    hccn_sim_topo_t *t = test_topo_load(json, "sharp-pipe");
    int world[P], node[P], local[P];
    for (int r = 0; r < P; r++)
        world[r] = r;
    hccn_cost_place_t pl = {t, world};
    hccn_hier_view_t view;
    assert_int_equal(hccn_hier_cost_view(&pl, P, node, local, &view), 0);
    const hccn_algo_t *hs = hccn_hier_algo_find("hier_sharp");
    assert_non_null(hs);
    hccn_coll_args_t a = {.coll = HCCN_COLL_ALLREDUCE, .nranks = P,
                          .count = count, .esize = 4, .view = &view,
                          .in_switch = HCCN_IN_SWITCH_NET,
                          .chunk_bytes = chunk};
    double eng = hccn_hier_cost(hs, &a, &pl, HCCN_COST_ENGINE, NULL);
    double form = hccn_hier_cost(hs, &a, &pl, HCCN_COST_MODEL, NULL);
    print_message("%llu B in chunks of %llu: engine %.3f us, form %.3f us "
                  "(%+.2f %%)\n", (unsigned long long)(count * 4),
                  (unsigned long long)chunk, eng * 1e6, form * 1e6,
                  100 * (form - eng) / eng);
    test_assert_rel(form, eng, tol, "hier_sharp in chunks, closed form");
    hccn_sim_topo_free(t);
}

static void test_engine_chunks(void **state)
{
    (void)state;
    check_chunks(NET(""), 1 << 20, 0, 1e-9);          /* one chunk */
    check_chunks(NET(""), 1 << 22, 1 << 20, 0.06);    /* 16 MiB, 4 */
    check_chunks(NET(""), 1 << 22, 1 << 18, 0.06);    /* 16 */
    check_chunks(NET("\"stack\": \"nccl-2.2x\", "), 1 << 20, 0, 1e-9);
    check_chunks(NET("\"stack\": \"nccl-2.2x\", "), 1 << 22, 1 << 20, 0.06);
    check_chunks(NET("\"stack\": \"nccl-2.2x\", "), 1 << 22, 1 << 18, 0.06);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_part_formulas),
        cmocka_unit_test(test_engine_chunks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
