/*
 * The richer topology keys (docs/topology.md): NIC rails, per-link
 * efficiency, the "links" fabric (uneven meshes with multiplicities and
 * relay routes), NICs under a PCIe switch and fat trees of several tiers.
 * Each test times transfers in the engine and compares them with closed forms worked out by hand from
 * the figures of the file: a transfer of S bytes alone on its route takes
 * lat + S / B; k transfers sharing a link of bandwidth B take lat + k S / B.
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
#include "test_topo_load.h"

#define S 8e6                   /* bytes per transfer */
#define MAXT 8                  /* transfers per test */

static hccn_sim_topo_t *load(const char *json)
{
    return test_topo_load(json, "rich");
}

static void assert_time(double got, double want, const char *what)
{
    if (!(fabs(got - want) <= 1e-12 * fabs(want)))
        fail_msg("%s: %.17g s, want %.17g s", what, got, want);
}

/* Runs n transfers src[i] -> dst[i] of S bytes, all ready at 0, and writes
 * when each arrives to end[i]. Each NPU takes part in at most MAXT. */
static void run(const hccn_sim_topo_t *topo, int n, const int *src,
                const int *dst, double *end)
{
    hccn_sim_engine_t *eng = hccn_sim_engine_create(topo, 0.0);
    hccn_sim_task_t tasks[64][MAXT];
    int ntask[64] = {0}, at[MAXT];
    hccn_sim_batch_t *batch[64] = {0};
    assert_non_null(eng);
    assert_true(topo->nnpus <= 64);
    for (int i = 0; i < n; i++) {
        hccn_sim_task_t x = {.bytes = (uint64_t)S, .key = {1, 0, (uint64_t)i}};
        x.kind = HCCN_SIM_TASK_SEND;
        x.peer = dst[i];
        tasks[src[i]][ntask[src[i]]++] = x;
        x.kind = HCCN_SIM_TASK_RECV;
        x.peer = src[i];
        at[i] = ntask[dst[i]];
        tasks[dst[i]][ntask[dst[i]]++] = x;
    }
    for (int r = 0; r < topo->nnpus; r++)
        if (ntask[r] > 0)
            assert_non_null(batch[r] = hccn_sim_post(eng, r, tasks[r],
                                                     ntask[r], NULL, NULL));
    hccn_sim_finish_all(eng);
    for (int i = 0; i < n; i++)
        end[i] = hccn_sim_task_end(batch[dst[i]], at[i]);
    hccn_sim_engine_destroy(eng);
}

static double route_lat(const hccn_sim_topo_t *t, int a, int b, int *len)
{
    int links[HCCN_SIM_ROUTE_MAX];
    double lat;
    *len = hccn_sim_topo_route(t, a, b, links, &lat);
    return lat;
}

/* Two one-NPU nodes, NICs of 10 GB/s (x rails x efficiency). */
#define TWO_NODES(nics)                                                       \
    "{\"version\":1,\"node_types\":[{\"count\":2,\"npu\":{\"count\":1,"      \
    "\"arena_MiB\":1,\"reduce_bw_GBps\":100},\"nics\":" nics "}],"           \
    "\"network\":{\"type\":\"switch\",\"lat_us\":1}}"

/* A rail doubles the NIC's bandwidth exactly; efficiency scales it. */
static void test_rails_and_efficiency(void **state)
{
    (void)state;
    static const char *const files[] = {
        TWO_NODES("{\"count\":1,\"bw_GBps\":10,\"lat_us\":2}"),
        TWO_NODES("{\"count\":1,\"bw_GBps\":10,\"lat_us\":2,\"rails\":2}"),
        TWO_NODES("[{\"npus\":[0],\"bw_GBps\":10,\"lat_us\":2,\"rails\":4,"
                  "\"efficiency\":0.75}]"),
    };
    static const double bw[] = {10e9, 20e9, 30e9};
    int src[] = {0}, dst[] = {1}, len;
    for (int k = 0; k < 3; k++) {
        hccn_sim_topo_t *t = load(files[k]);
        double end[1], lat = route_lat(t, 0, 1, &len);
        assert_int_equal(len, 4);
        assert_time(lat, 3e-6, "NIC + switch latency");
        run(t, 1, src, dst, end);
        assert_time(end[0], lat + S / bw[k], "rails x efficiency");
        hccn_sim_topo_free(t);
    }
}

/* fabric.efficiency: a switch fabric of 50 GB/s at 0.8 carries 40. */
static void test_fabric_efficiency(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load(
        "{\"version\":1,\"node_types\":[{\"count\":1,\"npu\":{\"count\":4,"
        "\"arena_MiB\":1,\"reduce_bw_GBps\":100},\"fabric\":{\"type\":"
        "\"switch\",\"bw_GBps\":50,\"lat_us\":1,\"efficiency\":0.8}}]}");
    int src[] = {0, 1}, dst[] = {2, 2}, len;
    double end[2], lat = route_lat(t, 0, 2, &len);
    run(t, 2, src, dst, end);
    /* two flows into NPU 2 share its 40 GB/s downlink */
    assert_time(end[0], lat + 2 * S / 40e9, "shared downlink");
    assert_time(end[1], end[0], "both");
    hccn_sim_topo_free(t);
}

/* An 8-NPU hybrid cube mesh: quads 0-3 and 4-7 fully connected, i <-> i+4,
 * some connections doubled; links of 25 GB/s x multiplicity. */
static const char *const cube =
    "{\"version\":1,\"node_types\":[{\"count\":1,\"npu\":{\"count\":8,"
    "\"arena_MiB\":1,\"reduce_bw_GBps\":100},\"fabric\":{\"type\":\"links\","
    "\"bw_GBps\":25,\"lat_us\":1.5,\"links\":[[0,1],[0,2],[0,3,2],[1,2,2],"
    "[1,3],[2,3],[4,5],[4,6],[4,7,2],[5,6,2],[5,7],[6,7],[0,4,2],[1,5,2],"
    "[2,6],[3,7]]}}]}";

static void test_links_routes(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load(cube);
    int links[HCCN_SIM_ROUTE_MAX];
    double lat;
    /* direct, doubled: one link of 50 GB/s */
    assert_int_equal(hccn_sim_topo_route(t, 0, 3, links, &lat), 1);
    assert_true(t->links[links[0]].bw == 50e9);
    assert_time(lat, 1.5e-6, "one hop");
    /* 0 -> 5: no link; relays 1 (0-1 x1, 1-5 x2) and 4 (0-4 x2, 4-5 x1)
     * both have a thinner side of x1: the lower index, 1, wins */
    assert_int_equal(hccn_sim_topo_route(t, 0, 5, links, &lat), 2);
    assert_int_equal(t->links[links[0]].dst, 1);
    assert_int_equal(t->links[links[1]].src, 1);
    assert_time(lat, 3e-6, "two hops");
    /* 3 -> 4: relays 0 (3-0 x2, 0-4 x2) and 7 (3-7 x1, 4-7 x2): 0 */
    assert_int_equal(hccn_sim_topo_route(t, 3, 4, links, &lat), 2);
    assert_int_equal(t->links[links[0]].dst, 0);
    /* every pair has a route; the summary's cut: 0-4, 1-5 doubled, 2-6,
     * 3-7 single: 6 x 25 GB/s */
    for (int a = 0; a < 8; a++)
        for (int b = 0; b < 8; b++)
            if (a != b)
                assert_in_range(hccn_sim_topo_route(t, a, b, NULL, NULL), 1,
                                2);
    hccn_sim_topo_summary_t sum;
    hccn_sim_topo_summarize(t, &sum);
    assert_time(sum.bisection_bw, 150e9, "bisection");
    assert_int_equal(sum.links_per_level[0], 32);

    /* times: 0->3 alone at 50 GB/s; 0->5 through the relay at 25 GB/s
     * (2 x lat); 0->5 and 1->5 together share link 1->5 (50 GB/s) while
     * 0->5 also crosses 0->1 (25): max-min gives each 25 */
    int src[] = {0, 0}, dst[] = {3, 5};
    double end[2];
    run(t, 2, src, dst, end);
    assert_time(end[0], 1.5e-6 + S / 50e9, "doubled link");
    assert_time(end[1], 3e-6 + S / 25e9, "relay route");
    int src2[] = {0, 1}, dst2[] = {5, 5};
    run(t, 2, src2, dst2, end);
    assert_time(end[0], 3e-6 + S / 25e9, "relayed flow");
    assert_time(end[1], 1.5e-6 + S / 25e9, "direct flow sharing");
    hccn_sim_topo_free(t);
}

/* Two nodes of a PCIe box: groups {0,1} and {2,3} of 32 GB/s links and
 * uplinks; one NIC of 100 GB/s under PCIe switch 0 whose own PCIe link is
 * 32 GB/s. NPUs 0 and 1 sending out share that link: 16 GB/s each. NPU 2
 * goes through the host bridge to reach it. */
static const char *const pcie_nic =
    "{\"version\":1,\"node_types\":[{\"count\":2,\"npu\":{\"count\":4,"
    "\"arena_MiB\":1,\"reduce_bw_GBps\":100},\"fabric\":{\"type\":\"pcie\","
    "\"bw_GBps\":32,\"lat_us\":0.5,\"groups\":[[0,1],[2,3]],"
    "\"host_bw_GBps\":32,\"host_lat_us\":0.25},\"nics\":{\"count\":1,"
    "\"bw_GBps\":100,\"lat_us\":2,\"attach_bw_GBps\":32,\"pcie_group\":0}}],"
    "\"network\":{\"type\":\"switch\",\"lat_us\":1}}";

static void test_nic_under_pcie_switch(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load(pcie_nic);
    int len;
    double lat = route_lat(t, 0, 4, &len);
    /* npu -> pcie0 -> nic -> net -> nic -> pcie0 -> npu */
    assert_int_equal(len, 6);
    assert_time(lat, 0.5e-6 + 2e-6 + 1e-6, "same switch");
    double lat2 = route_lat(t, 2, 6, &len);
    /* + pcie1 -> host -> pcie0 out, pcie0 -> host -> pcie1 in */
    assert_int_equal(len, 10);
    assert_time(lat2, 0.5e-6 + 0.25e-6 + 2e-6 + 1e-6 + 0.25e-6, "via host");
    int src[] = {0, 1}, dst[] = {4, 5};
    double end[2];
    run(t, 2, src, dst, end);
    assert_time(end[0], lat + 2 * S / 32e9, "shared PCIe link, first");
    assert_time(end[1], lat + 2 * S / 32e9, "shared PCIe link, second");
    /* alone, NPU 2's transfer crosses the 32 GB/s uplinks: S / 32 */
    int src2[] = {2}, dst2[] = {6};
    run(t, 1, src2, dst2, end);
    assert_time(end[0], lat2 + S / 32e9, "through the host");
    /* NICs under a switch fold like any copy of node 0 */
    int rep[8], map[256];
    double div[256];
    char why[128];
    assert_true(t->nlinks <= 256);
    assert_int_equal(hccn_sim_topo_fold(t, rep, map, div, why, sizeof(why)),
                     0);
    hccn_sim_topo_summary_t sum;
    hccn_sim_topo_summarize(t, &sum);
    assert_time(sum.bisection_bw, 32e9, "bisection: one NIC's PCIe link");
    hccn_sim_topo_free(t);
}

/* 16 one-NPU nodes with 10 GB/s NICs under a three-tier fat tree of
 * fan-in 2: leaf uplinks 2 x 10 / 2 = 10 GB/s, tier 1 (20 / 1) = 20, tier 2
 * (40 / 2) = 20 GB/s into the core. Latencies: NIC 2 us, leaves 0.5,
 * tier 1 1 (the network's lat_us), tier 2 0.25, core 1. */
#define TREE(levels)                                                          \
    "{\"version\":1,\"node_types\":[{\"count\":16,\"npu\":{\"count\":1,"     \
    "\"arena_MiB\":1,\"reduce_bw_GBps\":100},\"nics\":{\"count\":1,"         \
    "\"bw_GBps\":10,\"lat_us\":2}}],\"network\":" levels "}"

static void test_fat_tree(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load(TREE(
        "{\"type\":\"fat_tree\",\"lat_us\":1,\"levels\":[{\"children\":2,"
        "\"oversubscription\":2,\"lat_us\":0.5},{\"children\":2},"
        "{\"children\":2,\"oversubscription\":2,\"lat_us\":0.25}]}"));
    int len;
    assert_time(route_lat(t, 0, 1, &len), 2.5e-6, "same leaf");
    assert_int_equal(len, 4);
    assert_time(route_lat(t, 0, 2, &len), 4e-6, "via tier 1");
    assert_int_equal(len, 6);
    /* 2 + 0.5 + 1 + 0.25 + 1 + 0.5: leaf, tier 1, tier 2, tier 1, leaf */
    assert_time(route_lat(t, 0, 4, &len), 5.25e-6, "via tier 2");
    assert_int_equal(len, 8);
    assert_time(route_lat(t, 0, 15, &len), 6.5e-6, "via the core");
    assert_int_equal(len, 10);
    /* 0 and 1 (leaf 0) to 8 and 9: both cross leaf 0's 10 GB/s uplink */
    int src[] = {0, 1}, dst[] = {8, 9};
    double end[2];
    run(t, 2, src, dst, end);
    assert_time(end[0], 6.5e-6 + 2 * S / 10e9, "leaf uplink shared");
    assert_time(end[1], end[0], "leaf uplink shared, second");
    /* 0, 2, 4, 6 (four leaves, two tier-1 switches, one tier-2 switch) to
     * the other half: the tier-2 uplink (20 GB/s) carries all four */
    int src4[] = {0, 2, 4, 6}, dst4[] = {8, 10, 12, 14};
    double end4[4];
    run(t, 4, src4, dst4, end4);
    for (int i = 0; i < 4; i++)
        assert_time(end4[i], 6.5e-6 + 4 * S / 20e9, "tier 2 uplink shared");
    hccn_sim_topo_summary_t sum;
    hccn_sim_topo_summarize(t, &sum);
    assert_time(sum.bisection_bw, 20e9, "bisection: one tier-2 uplink");
    assert_int_equal(sum.links_per_level[2], 2 * (8 + 4 + 2));
    hccn_sim_topo_free(t);
}

/* A one-tier fat tree is a leaf/spine network: same routes, same times. */
static void test_fat_tree_one_tier(void **state)
{
    (void)state;
    hccn_sim_topo_t *ls = load(TREE(
        "{\"type\":\"leaf_spine\",\"lat_us\":0.5,\"nodes_per_leaf\":4,"
        "\"oversubscription\":3,\"spine_lat_us\":1.25}"));
    hccn_sim_topo_t *ft = load(TREE(
        "{\"type\":\"fat_tree\",\"lat_us\":1.25,\"levels\":[{\"children\":4,"
        "\"oversubscription\":3,\"lat_us\":0.5}]}"));
    assert_int_equal(ls->nlinks, ft->nlinks);
    assert_int_equal(ls->ndevs, ft->ndevs);
    for (int a = 0; a < 16; a++)
        for (int b = 0; b < 16; b++) {
            int la[HCCN_SIM_ROUTE_MAX], lf[HCCN_SIM_ROUTE_MAX];
            double lat_s, lat_f;
            int n = hccn_sim_topo_route(ls, a, b, la, &lat_s);
            assert_int_equal(hccn_sim_topo_route(ft, a, b, lf, &lat_f), n);
            assert_true(lat_s == lat_f);
            for (int k = 0; k < n; k++)
                assert_true(ls->links[la[k]].bw == ft->links[lf[k]].bw);
        }
    int src[] = {0, 1, 2, 5}, dst[] = {4, 8, 12, 6};
    double e1[4], e2[4];
    run(ls, 4, src, dst, e1);
    run(ft, 4, src, dst, e2);
    for (int i = 0; i < 4; i++)
        assert_true(e1[i] == e2[i]);
    hccn_sim_topo_summary_t s1, s2;
    hccn_sim_topo_summarize(ls, &s1);
    hccn_sim_topo_summarize(ft, &s2);
    assert_true(s1.bisection_bw == s2.bisection_bw);
    hccn_sim_topo_free(ls);
    hccn_sim_topo_free(ft);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rails_and_efficiency),
        cmocka_unit_test(test_fabric_efficiency),
        cmocka_unit_test(test_links_routes),
        cmocka_unit_test(test_nic_under_pcie_switch),
        cmocka_unit_test(test_fat_tree),
        cmocka_unit_test(test_fat_tree_one_tier),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
