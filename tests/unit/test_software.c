/*
 * The software model (device_sim/software.h, docs/timing.md, Software):
 * the "stack" and "software" keys and their errors, the protocol switch
 * points (thresholds, and the crossover of the per-step costs), and the
 * time of transfers under each protocol, in the engine and in the cost
 * model's closed forms, against the formula
 *     launch + route latency + step + bytes / (efficiency x bandwidth).
 * A model of no cost gives the times of a file without one, bit for bit.
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

#include "device_sim/software.h"
#include "device_sim/topo.h"
#include "hierarchy/coll.h"
#include "hierarchy/cost.h"
#include "hierarchy/select.h"
#include "test_topo_load.h"
#include "test_engine.h"
#include "test_util.h"
#include "test_views.h"

/* The software tests' two nodes of two NPUs (test_topo_load.h). */
#define BASE TEST_TOPO_2X2

#define SW                                                                  \
    ", \"software\": {\"launch_us\": 5,"                                    \
    " \"ll\": {\"step_us\": {\"intra\": 0.5, \"net\": 2}, \"efficiency\": 0.5},"\
    " \"ll128\": {\"step_us\": {\"intra\": 1, \"net\": 3}, "                 \
    "\"efficiency\": 0.9},"                                                 \
    " \"simple\": {\"step_us\": {\"intra\": 3, \"net\": 10}}}"

static hccn_sim_topo_t *load(const char *json)
{
    return test_topo_load(json, "sw-test");
}

static void expect_error(const char *json, const char *msg)
{
    test_topo_refused(json, "bad.json", msg);
}

static void test_presets(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load("{" BASE ", \"stack\": \"nccl-2.2x\"}");
    const hccn_sim_sw_t *sw = t->sw;
    assert_non_null(sw);
    assert_string_equal(sw->stack, "nccl-2.2x");
    assert_true(sw->launch_s == 6.6e-6);
    assert_true(sw->proto[HCCN_SIM_PROTO_LL].step_s[0] == 0.6 * 1e-6);
    assert_true(sw->proto[HCCN_SIM_PROTO_SIMPLE].step_s[1] == 14.0 * 1e-6);
    assert_true(sw->proto[HCCN_SIM_PROTO_LL128].eff[0] == 0.92);
    assert_int_equal(sw->slots, 8);   /* NCCL_STEPS */
    /* NVLS: its launch is its whole latency in a node (no step there). */
    assert_true(sw->nvls_launch_s == 25e-6);
    assert_true(sw->nvls_step_on && sw->nvls_step_s == 0.0);
    hccn_sim_topo_free(t);
    t = load("{" BASE ", \"stack\": \"nccl-2.2x\", \"software\": "
             "{\"nvls_step_us\": 2.5}}");
    assert_true(t->sw->nvls_step_on && t->sw->nvls_step_s == 2.5 * 1e-6);
    hccn_sim_topo_free(t);
    t = load("{" BASE ", \"stack\": \"rccl-2.x\"}");
    assert_int_equal(t->sw->nvls_step_on, 0);
    hccn_sim_topo_free(t);
    expect_error("{" BASE ", \"software\": {\"nvls_step_us\": -1}}",
                 "bad.json: software.nvls_step_us");
    t = load("{" BASE ", \"stack\": \"none\"}");
    assert_int_equal(t->sw->slots, 1);
    hccn_sim_topo_free(t);
    t = load("{" BASE ", \"software\": {\"slots\": 3}}");
    assert_int_equal(t->sw->slots, 3);
    hccn_sim_topo_free(t);
    /* Overrides replace one field, of one class. */
    t = load("{" BASE ", \"stack\": \"rccl-2.x\", \"software\": {\"ll\": "
             "{\"step_us\": {\"net\": 3}}, \"ll128\": {\"enabled\": true}}}");
    assert_true(t->sw->proto[0].step_s[0] == 2.3 * 1e-6);
    assert_true(t->sw->proto[0].step_s[1] == 3 * 1e-6);
    assert_true(t->sw->proto[1].on && t->sw->launch_s == 12e-6);
    assert_int_equal(t->sw->slots, 8);
    hccn_sim_topo_free(t);
    t = load("{" BASE "}");
    assert_null(t->sw);
    hccn_sim_topo_free(t);
    for (const char *const *n = hccn_sim_sw_presets(); *n != NULL; n++)
        assert_non_null(hccn_sim_sw_preset(*n));
}

/* The least bandwidth on the route src -> dst, bytes/s. */
static double route_bw(const hccn_sim_topo_t *t, int src, int dst)
{
    int links[HCCN_SIM_ROUTE_MAX];
    double lat, bw = INFINITY;
    int n = hccn_sim_topo_route(t, src, dst, links, &lat);
    for (int k = 0; k < n; k++)
        bw = fmin(bw, t->links[links[k]].bw);
    return bw;
}

static void expect_bws(const char *json, double fabric, double nic)
{
    hccn_sim_topo_t *t = load(json);
    if (fabs(route_bw(t, 0, 1) - fabric) > 1e-12 * fabric ||
        fabs(route_bw(t, 0, 2) - nic) > 1e-12 * nic)
        fail_msg("%s: fabric %.17g, NIC %.17g B/s; want %.17g, %.17g", json,
                 route_bw(t, 0, 1), route_bw(t, 0, 2), fabric, nic);
    hccn_sim_topo_free(t);
}

/* A stack's link_efficiency is the efficiency of a fabric or NIC whose
 * file gives none (BASE: a 100 GB/s mesh, 10 GB/s NICs): nccl-2.2x 0.80
 * and 0.99, rccl-2.x 0.83 and 0.89, a pcie fabric 256 / 280 under both;
 * the file's own efficiency, a software override, no stack or mpi keep
 * theirs; a broken link_efficiency is refused at its path. */
static void test_link_efficiency(void **state)
{
    (void)state;
    expect_bws("{" BASE "}", 100e9, 10e9);
    expect_bws("{" BASE ", \"software\": {}}", 100e9, 10e9);
    expect_bws("{" BASE ", \"stack\": \"mpi\"}", 100e9, 10e9);
    expect_bws("{" BASE ", \"stack\": \"nccl-2.2x\"}", 100e9 * 0.80,
               10e9 * 0.99);
    expect_bws("{" BASE ", \"stack\": \"rccl-2.x\"}", 100e9 * 0.83,
               10e9 * 0.89);
    expect_bws("{" BASE ", \"stack\": \"nccl-2.2x\", \"software\": "
               "{\"link_efficiency\": {\"fabric\": 0.5}}}", 50e9,
               10e9 * 0.99);
    expect_bws("{" BASE ", \"stack\": \"rccl-2.x\", \"software\": "
               "{\"link_efficiency\": 1}}", 100e9, 10e9);
    expect_bws("{" BASE ", \"software\": {\"link_efficiency\": "
               "{\"nic\": 0.5}}}", 100e9, 5e9);
    /* The file's own efficiency wins, on the fabric and on the NICs
     * (rails multiply after it). */
    expect_bws("{\"version\": 1, \"stack\": \"nccl-2.2x\", "
               "\"node_types\": [{\"count\": 2, \"npu\": {\"count\": 2, "
               "\"arena_MiB\": 16, \"reduce_bw_GBps\": 100}, \"fabric\": "
               "{\"type\": \"mesh\", \"bw_GBps\": 100, \"lat_us\": 1, "
               "\"efficiency\": 1}, \"nics\": {\"count\": 2, \"rails\": 2, "
               "\"bw_GBps\": 10, \"lat_us\": 2, \"efficiency\": 0.5}}], "
               "\"network\": {\"type\": \"switch\", \"lat_us\": 1}}",
               100e9, 10e9);
    /* A pcie fabric: 31.5 GB/s on the wire, 28.8 carried. */
    hccn_sim_topo_t *t = load(
        "{\"version\": 1, \"stack\": \"nccl-2.2x\", \"node_types\": "
        "[{\"count\": 1, \"npu\": {\"count\": 2, \"arena_MiB\": 4, "
        "\"reduce_bw_GBps\": 100}, \"fabric\": {\"type\": \"pcie\", "
        "\"bw_GBps\": 31.5, \"lat_us\": 1, \"groups\": [[0], [1]], "
        "\"host_bw_GBps\": 31.5, \"host_lat_us\": 2, \"p2p\": true}}]}");
    assert_true(t->sw->link_eff[HCCN_SIM_LINK_PCIE] == 256.0 / 280.0);
    assert_true(fabs(route_bw(t, 0, 1) - 28.8e9) <= 1e-12 * 28.8e9);
    hccn_sim_topo_free(t);
    expect_error("{" BASE ", \"stack\": \"nccl-2.2x\", \"software\": "
                 "{\"link_efficiency\": {}}}",
                 "bad.json: software.link_efficiency: must give one or more "
                 "of fabric, pcie, nic (got an empty object)");
    expect_error("{" BASE ", \"software\": {\"link_efficiency\": "
                 "{\"fabric\": 0}}}",
                 "bad.json: software.link_efficiency.fabric");
    expect_error("{" BASE ", \"software\": {\"link_efficiency\": "
                 "{\"gpu\": 0.5}}}",
                 "bad.json: software.link_efficiency");
    expect_error("{" BASE ", \"software\": {\"link_efficiency\": 1.5}}",
                 "bad.json: software.link_efficiency");
}

static void test_errors(void **state)
{
    (void)state;
    expect_error("{" BASE ", \"stack\": \"nccl-9\"}",
                 "bad.json: stack: unknown stack \"nccl-9\" (known: "
                 "none, nccl-2.2x, rccl-2.x, mpi)");
    expect_error("{" BASE ", \"software\": {\"ll\": {\"efficiency\": 0}}}",
                 "bad.json: software.ll.efficiency");
    expect_error("{" BASE ", \"software\": {\"ll\": {\"efficiency\": "
                 "{\"net\": 1.5}}}}",
                 "bad.json: software.ll.efficiency.net");
    expect_error("{" BASE ", \"software\": {\"lll\": {}}}",
                 "bad.json: software.lll");
    expect_error("{" BASE ", \"software\": {\"simple\": {\"enabled\": "
                 "false}}}",
                 "bad.json: software: no protocol is enabled");
    expect_error("{" BASE ", \"software\": {\"launch_us\": -1}}",
                 "bad.json: software.launch_us");
    expect_error("{" BASE ", \"software\": 3}", "bad.json: software: must "
                 "be an object");
    expect_error("{" BASE ", \"software\": {\"slots\": 0}}",
                 "bad.json: software.slots");
    expect_error("{" BASE ", \"software\": {\"slots\": 65}}",
                 "bad.json: software.slots");
    expect_error("{" BASE ", \"software\": {\"slots\": 2.5}}",
                 "bad.json: software.slots");
    expect_error("{" BASE ", \"software\": {\"ll\": {\"tree_bw\": []}}}",
                 "bad.json: software.ll.tree_bw: must have 1 to 23 numbers");
    expect_error("{" BASE ", \"software\": {\"ll\": {\"tree_bw\": [1, 0]}}}",
                 "bad.json: software.ll.tree_bw[1]: must be a number in "
                 "(0, 1] (got 0)");
    expect_error("{" BASE ", \"software\": {\"simple\": {\"tree_bw\": "
                 "[0.5, \"x\"]}}}",
                 "bad.json: software.simple.tree_bw[1]");
    expect_error("{" BASE ", \"software\": {\"simple\": {\"tree_bw\": "
                 "0.5}}}",
                 "bad.json: software.simple.tree_bw");
    expect_error("{" BASE ", \"software\": {\"ring_plateau\": 0.5}}",
                 "bad.json: software.ring_plateau");
}

/* Where the per-step times of protocols a and b cross, for bw. */
static double crossover(const hccn_sim_sw_t *sw, int a, int b, int cls,
                        double bw)
{
    const hccn_sim_proto_t *p = &sw->proto[a], *q = &sw->proto[b];
    return (q->step_s[cls] - p->step_s[cls]) /
           (1.0 / (p->eff[cls] * bw) - 1.0 / (q->eff[cls] * bw));
}

static void test_switch_points(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load("{" BASE SW "}");
    const hccn_sim_sw_t *sw = t->sw;
    for (int cls = 0; cls < HCCN_SIM_NCLS; cls++) {
        double bw = cls == 0 ? 100e9 : 10e9;
        double x1 = crossover(sw, 0, 1, cls, bw);
        double x2 = crossover(sw, 1, 2, cls, bw);
        /* intra: 56250 B and 1.8 MB (below); net: 2 us / 0.0889 ns and
         * 7 us / 0.0111 ns at 10 GB/s: 22500 B and 630 kB. */
        assert_true(x1 > 1000.0 && x2 > x1);
        /* A tie goes to the earlier protocol. */
        assert_int_equal(hccn_sim_sw_pick(sw, (uint64_t)floor(x1) - 1, cls,
                                          bw), 0);
        assert_int_equal(hccn_sim_sw_pick(sw, (uint64_t)ceil(x1) + 1, cls,
                                          bw), 1);
        assert_int_equal(hccn_sim_sw_pick(sw, (uint64_t)floor(x2) - 1, cls,
                                          bw), 1);
        assert_int_equal(hccn_sim_sw_pick(sw, (uint64_t)ceil(x2) + 1, cls,
                                          bw), 2);
    }
    assert_true(fabs(crossover(sw, 0, 1, 0, 100e9) - 56250.0) < 1e-6);
    assert_true(fabs(crossover(sw, 1, 2, 0, 100e9) - 1.8e6) < 1e-3);
    hccn_sim_topo_free(t);
    /* Thresholds, where given, decide instead; a protocol without one is
     * only the last resort. */
    t = load("{" BASE SW ", \"stack\": \"nccl-2.2x\"}");
    hccn_sim_sw_t th = *t->sw;
    th.proto[0].max_bytes[0] = 4096;
    th.proto[1].max_bytes[0] = 65536;
    assert_int_equal(hccn_sim_sw_pick(&th, 4096, 0, 100e9), 0);
    assert_int_equal(hccn_sim_sw_pick(&th, 4097, 0, 100e9), 1);
    assert_int_equal(hccn_sim_sw_pick(&th, 65536, 0, 100e9), 1);
    assert_int_equal(hccn_sim_sw_pick(&th, 65537, 0, 100e9), 2);
    th.proto[1].on = 0;
    assert_int_equal(hccn_sim_sw_pick(&th, 4097, 0, 100e9), 2);
    hccn_sim_topo_free(t);
}

/* A mesh allgather of `bytes` per rank between NPUs a and b, priced by
 * the engine and by the closed form, against the formula (with the hosts'
 * time for each rank's one message out and one in, where the model has
 * it). */
static void check_pair(const hccn_sim_topo_t *t, int a, int b, uint64_t bytes,
                       int want_proto)
{
    int world[2] = {a, b}, links[HCCN_SIM_ROUTE_MAX];
    double lat, bw = INFINITY;
    int n = hccn_sim_topo_route(t, a, b, links, &lat);
    for (int k = 0; k < n; k++)
        bw = fmin(bw, t->links[links[k]].bw);
    int cls = n > 0 && t->links[links[0]].level != 0;
    assert_int_equal(hccn_sim_sw_pick_at(t, a, bytes, cls, bw), want_proto);
    const hccn_sim_proto_t *p = &t->sw->proto[want_proto];
    double want = t->sw->launch_s + t->sw->send_s + lat + p->step_s[cls] +
                  (double)bytes / (hccn_sim_sw_eff(t, want_proto, cls, a) *
                                   bw) +
                  t->sw->recv_s;
    hccn_coll_args_t args = {.coll = HCCN_COLL_ALLGATHER, .nranks = 2,
                             .count = bytes / 4, .esize = 4};
    const hccn_algo_t *mesh = hccn_hier_algo_find("mesh");
    hccn_sched_t *s = mesh->build(&args);
    assert_non_null(s);
    double eng = test_engine_time(t, s, world, NULL);
    hccn_sched_free(s);
    hccn_cost_place_t pl = {t, world};
    double model = hccn_hier_cost(mesh, &args, &pl, HCCN_COST_MODEL, NULL);
    if (!(fabs(eng - want) <= 1e-12 * want) ||
        !(fabs(model - want) <= 1e-12 * want))
        fail_msg("%llu B %s: engine %.6f us, model %.6f us, formula %.6f us",
                 (unsigned long long)bytes, hccn_sim_proto_name(want_proto),
                 eng * 1e6, model * 1e6, want * 1e6);
}

static void test_times(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load("{" BASE SW "}");
    check_pair(t, 0, 1, 4096, HCCN_SIM_PROTO_LL);
    check_pair(t, 0, 1, 56248, HCCN_SIM_PROTO_LL);
    check_pair(t, 0, 1, 56256, HCCN_SIM_PROTO_LL128);
    check_pair(t, 0, 1, 1 << 20, HCCN_SIM_PROTO_LL128);
    check_pair(t, 0, 1, 4 << 20, HCCN_SIM_PROTO_SIMPLE);
    /* Across nodes: the NIC's costs and 10 GB/s. */
    check_pair(t, 0, 2, 4096, HCCN_SIM_PROTO_LL);
    check_pair(t, 0, 2, 256 << 10, HCCN_SIM_PROTO_LL128);
    check_pair(t, 0, 2, 64 << 20, HCCN_SIM_PROTO_SIMPLE);
    hccn_sim_topo_free(t);
}

/* A protocol's bound on a call's bus bandwidth across nodes (max_GBps,
 * NCCL's llMaxBw): through a NIC, its efficiency is at most the bound over
 * the node's NICs together (2 x 10 GB/s here); inside a node, and on one
 * node, it is its own. The switch point moves with it, and the engine and
 * the closed form run the bounded efficiency. */
#define CAPPED(n)                                                           \
    "{\"version\": 1, \"node_types\": [{\"count\": " #n ","               \
    " \"npu\": {\"count\": 2, \"arena_MiB\": 16, \"reduce_bw_GBps\": 100},"  \
    " \"fabric\": {\"type\": \"mesh\", \"bw_GBps\": 100, \"lat_us\": 1},"    \
    " \"nics\": {\"count\": 2, \"bw_GBps\": 10, \"lat_us\": 2}}],"           \
    " \"network\": {\"type\": \"switch\", \"lat_us\": 1}" SW_CAPPED "}"
#define SW_RING(us)                                                         \
    ", \"software\": {\"launch_us\": 5,"                                    \
    " \"ll\": {\"step_us\": {\"intra\": 0.5, \"net\": 2}, \"efficiency\": 0.5,"\
    " \"ring_step_us\": " #us "},"                                         \
    " \"ll128\": {\"enabled\": false},"                                    \
    " \"simple\": {\"step_us\": {\"intra\": 3, \"net\": 10}, "              \
    "\"ring_step_us\": " #us "}}"
#define SW_TREE                                                             \
    ", \"software\": {\"launch_us\": 5,"                                    \
    " \"ll\": {\"step_us\": {\"intra\": 0.5, \"net\": 2}, \"efficiency\": 0.5,"\
    " \"tree_step_us\": {\"net\": 9}},"                                     \
    " \"ll128\": {\"step_us\": {\"intra\": 1, \"net\": 3}, "                 \
    "\"efficiency\": 0.9},"                                                 \
    " \"simple\": {\"step_us\": {\"intra\": 3, \"net\": 10}}}"
#define SW_NVLS                                                             \
    ", \"software\": {\"launch_us\": 5, \"nvls_net_step_us\": 12,"          \
    " \"ll\": {\"step_us\": {\"intra\": 0.5, \"net\": 2}, \"efficiency\": 0.5},"\
    " \"ll128\": {\"enabled\": false},"                                    \
    " \"simple\": {\"step_us\": {\"intra\": 3, \"net\": 10}}}"
#define SW_CAPPED_BAD                                                       \
    ", \"software\": {\"ll\": {\"max_GBps\": {\"three_nodes\": 4}}}"
#define SW_CAPPED                                                           \
    ", \"software\": {\"launch_us\": 5,"                                    \
    " \"ll\": {\"step_us\": {\"intra\": 0.5, \"net\": 2}, \"efficiency\": 0.5,"\
    " \"max_GBps\": {\"two_nodes\": 4, \"more_nodes\": 3}},"               \
    " \"ll128\": {\"step_us\": {\"intra\": 1, \"net\": 3}, "                 \
    "\"efficiency\": 0.9},"                                                 \
    " \"simple\": {\"step_us\": {\"intra\": 3, \"net\": 10}}}"

static void test_bus_bound(void **state)
{
    (void)state;
    const int LL = HCCN_SIM_PROTO_LL, NET = HCCN_SIM_CLS_NET;
    hccn_sim_topo_t *t = load(CAPPED(2));
    assert_true(t->nodes[0].nic_bw == 20e9 && t->nodes[1].nic_bw == 20e9);
    assert_true(hccn_sim_sw_eff(t, LL, NET, 0) == 4e9 / 20e9);
    assert_true(hccn_sim_sw_eff(t, LL, NET, 3) == 4e9 / 20e9);
    assert_true(hccn_sim_sw_eff(t, LL, HCCN_SIM_CLS_INTRA, 0) == 0.5);
    assert_true(hccn_sim_sw_eff(t, HCCN_SIM_PROTO_LL128, NET, 0) == 0.9);
    /* LL across nodes: step 2 + b / (0.2 x 10e9) against LL128's
     * 3 + b / (0.9 x 10e9): LL128 from 2571 B (unbounded: from 23143). */
    assert_int_equal(hccn_sim_sw_pick(t->sw, 4096, NET, 10e9), LL);
    assert_int_equal(hccn_sim_sw_pick_at(t, 0, 2560, NET, 10e9), LL);
    assert_int_equal(hccn_sim_sw_pick_at(t, 0, 2600, NET, 10e9),
                     HCCN_SIM_PROTO_LL128);
    check_pair(t, 0, 2, 2048, LL);
    check_pair(t, 0, 2, 4096, HCCN_SIM_PROTO_LL128);
    check_pair(t, 0, 1, 4096, LL);   /* inside a node: unbounded */
    hccn_sim_topo_free(t);
    /* More than two nodes take the other bound. */
    t = load(CAPPED(3));
    assert_true(hccn_sim_sw_eff(t, LL, NET, 5) == 3e9 / 20e9);
    check_pair(t, 1, 4, 1024, LL);
    hccn_sim_topo_free(t);
    /* A bound above eff x the NICs' bandwidth changes nothing; on one
     * node there is no network to bound. */
    t = load("{" BASE ", \"stack\": \"nccl-2.2x\", \"software\": {\"ll\": "
             "{\"max_GBps\": 10}}}");
    assert_true(hccn_sim_sw_eff(t, LL, NET, 0) == 0.5);
    hccn_sim_topo_free(t);
    t = load("{" BASE ", \"stack\": \"nccl-2.2x\"}");
    assert_true(t->sw->proto[LL].max_bw[HCCN_SIM_SPAN_TWO] == 39e9);
    assert_true(t->sw->proto[LL].max_bw[HCCN_SIM_SPAN_MORE] == 20.4e9);
    assert_true(hccn_sim_sw_eff(t, LL, NET, 0) == 0.5);   /* 39 > 0.5 x 20 */
    hccn_sim_topo_free(t);
    expect_error("{" BASE SW_CAPPED_BAD "}",
                 "software.ll.max_GBps.three_nodes: unknown key (allowed: "
                 "two_nodes, more_nodes)");
}

/* rings' allgather of 4 KiB blocks on world (n ranks), in the engine
 * (its family as built, or forced to force when force >= 0) and in the
 * closed form. */
static double rings_small(const hccn_sim_topo_t *t, const int *world, int n,
                          int force, int *family, double *form)
{
    int node[4], local[4];
    hccn_cost_place_t pl = {t, world};
    hccn_hier_view_t v;
    assert_int_equal(hccn_hier_cost_view(&pl, n, node, local, &v), 0);
    hccn_coll_args_t a = {.coll = HCCN_COLL_ALLGATHER, .nranks = n,
                          .count = 1024, .esize = 4, .view = &v};
    const hccn_algo_t *al = hccn_hier_algo_find("rings");
    hccn_sched_t *s = hccn_hier_build(al, &a);
    assert_non_null(s);
    *family = s->family;
    assert_int_equal(hccn_hier_family(al, &a), s->family);
    assert_int_equal(hccn_hier_sched_call(s).family, s->family);
    if (force >= 0)
        s->family = force;
    double e = test_engine_time(t, s, world, NULL);
    hccn_sched_free(s);
    *form = hccn_hier_cost(al, &a, &pl, HCCN_COST_MODEL, NULL);
    return e;
}

/* The library's ring across nodes posts every step to the network: its
 * steps inside a node cost at least ring_step_us (NCCL's network
 * overhead). One node's rings do not; a ring across nodes does, in the
 * engine and the closed form; forced on a one-node ring, one LL step of
 * a 4 KiB block takes launch + link latency + 7 us + 4 KiB / (0.5 B). */
static void test_ring_step(void **state)
{
    (void)state;
    const char *bump = "{" BASE SW_RING(7) "}", *flat = "{" BASE SW_RING(0) "}";
    hccn_sim_topo_t *t = load(bump), *t0 = load(flat);
    const hccn_sim_sw_t *sw = t->sw;
    const int RING = HCCN_SIM_FAM_NET_RING;
    assert_true(hccn_sim_sw_step(sw, HCCN_SIM_PROTO_LL, 0, RING) == 7e-6);
    assert_true(hccn_sim_sw_step(sw, HCCN_SIM_PROTO_LL, 0, 0) == 0.5e-6);
    assert_true(hccn_sim_sw_step(sw, HCCN_SIM_PROTO_LL, 1, RING) == 2e-6);
    assert_true(hccn_sim_sw_step(sw, HCCN_SIM_PROTO_SIMPLE, 0, RING) ==
                7e-6);
    int one[2] = {0, 1}, two[4] = {0, 1, 2, 3}, flag;
    double f, f0;
    double e = rings_small(t, one, 2, -1, &flag, &f);
    assert_int_equal(flag, 0);
    test_assert_rel(e, rings_small(t0, one, 2, -1, &flag, &f0), 0.0,
                    "a one-node ring pays its own steps");
    e = rings_small(t, one, 2, HCCN_SIM_FAM_NET_RING, &flag, &f);
    test_assert_rel(e, 5e-6 + 1e-6 + 7e-6 + 4096 / (0.5 * 100e9), 1e-12,
                    "a forced ring step");
    double e0 = rings_small(t0, two, 4, -1, &flag, &f0);
    e = rings_small(t, two, 4, -1, &flag, &f);
    assert_int_equal(flag, HCCN_SIM_FAM_NET_RING);
    if (!(e > e0 + 6e-6) || !(f > f0 + 6e-6))
        fail_msg("ring across nodes: engine %.3f us (%.3f without the ring "
                 "step), closed form %.3f us (%.3f)", e * 1e6, e0 * 1e6,
                 f * 1e6, f0 * 1e6);
    hccn_sim_topo_free(t);
    hccn_sim_topo_free(t0);
}

/* A 4 KiB transfer from NPU 0 to NPU 2 (across the 2 x 2 topology's
 * nodes, under a protocol of efficiency eff of 10 GB/s) in a call of
 * family fam takes launch (5 us) + route latency + step in the engine. */
static void cross_node_step_at(const hccn_sim_topo_t *t, int fam,
                               double step, double eff)
{
    int world[2] = {0, 2}, links[HCCN_SIM_ROUTE_MAX];
    double lat;
    hccn_sim_topo_route(t, 0, 2, links, &lat);
    hccn_coll_args_t a = {.coll = HCCN_COLL_ALLGATHER, .nranks = 2,
                          .count = 1024, .esize = 4};
    hccn_sched_t *s = hccn_hier_algo_find("mesh")->build(&a);
    assert_non_null(s);
    s->family = fam;
    test_assert_rel(test_engine_time(t, s, world, NULL),
                    5e-6 + lat + step + 4096 / (eff * 10e9), 1e-12,
                    "a step across nodes");
    hccn_sched_free(s);
}

/* The same under LL (0.5). */
static void cross_node_step(const hccn_sim_topo_t *t, int fam, double step)
{
    cross_node_step_at(t, fam, step, 0.5);
}

/* The library's tree takes its own step costs (NCCL's hwLat tree row)
 * where the stack gives them: a transfer across nodes priced as the
 * tree's takes launch + route latency + the tree's LL step (9 us here, the
 * ring's 2) + 4 KiB / (0.5 x 10 GB/s); the tree row is of that family, in
 * the engine and the closed form, and the nccl-2.2x preset carries NCCL's
 * tree row. */
static void test_tree_step(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load("{" BASE SW_TREE "}");
    const int LL = HCCN_SIM_PROTO_LL, TREE = HCCN_SIM_FAM_TREE;
    assert_true(hccn_sim_sw_step(t->sw, LL, 1, TREE) == 9e-6);
    assert_true(hccn_sim_sw_step(t->sw, LL, 0, TREE) == 0.5e-6);   /* left out */
    assert_true(hccn_sim_sw_step(t->sw, LL, 1, 0) == 2e-6);
    assert_true(hccn_sim_sw_step(t->sw, HCCN_SIM_PROTO_SIMPLE, 1, TREE) ==
                t->sw->proto[HCCN_SIM_PROTO_SIMPLE].step_s[1]);   /* its own */
    cross_node_step(t, TREE, 9e-6);
    hccn_sched_t *s;
    const hccn_algo_t *tree = hccn_hier_algo_find("tree");
    hccn_coll_args_t r = {.coll = HCCN_COLL_ALLREDUCE, .nranks = 4,
                          .count = 1024, .esize = 4};
    int four[4] = {0, 1, 2, 3}, node[4], local[4];
    hccn_cost_place_t pl = {t, four};
    hccn_hier_view_t v;
    assert_int_equal(hccn_hier_cost_view(&pl, 4, node, local, &v), 0);
    r.view = &v;
    assert_int_equal(hccn_hier_family(tree, &r), TREE);
    hccn_sim_topo_t *t0 = load("{" BASE SW "}");
    hccn_cost_place_t pl0 = {t0, four};
    s = hccn_hier_build(tree, &r);
    assert_non_null(s);
    assert_int_equal(s->family, TREE);
    double e = test_engine_time(t, s, four, NULL);
    double e0 = test_engine_time(t0, s, four, NULL);
    hccn_sched_free(s);
    double f = hccn_hier_cost(tree, &r, &pl, HCCN_COST_MODEL, NULL);
    double f0 = hccn_hier_cost(tree, &r, &pl0, HCCN_COST_MODEL, NULL);
    if (!(e >= e0 + 7e-6) || !(f >= f0 + 7e-6))
        fail_msg("tree across nodes: engine %.3f us (%.3f with the ring's "
                 "steps), closed form %.3f us (%.3f)", e * 1e6, e0 * 1e6,
                 f * 1e6, f0 * 1e6);
    hccn_sim_topo_free(t0);
    hccn_sim_topo_free(t);
    t = load("{" BASE ", \"stack\": \"nccl-2.2x\"}");
    assert_true(hccn_sim_sw_step(t->sw, LL, 1, TREE) == 5.0 * 1e-6);
    assert_true(hccn_sim_sw_step(t->sw, HCCN_SIM_PROTO_LL128, 1, TREE) ==
                8.5 * 1e-6);
    assert_true(hccn_sim_sw_step(t->sw, HCCN_SIM_PROTO_SIMPLE, 0, TREE) ==
                4.0 * 1e-6);
    hccn_sim_topo_free(t);
}

/* The library's ring across nodes under the bulk protocol pays
 * ring_plateau times its steps (NCCL's "plateau effect of ring", 1.4 on
 * Ampere and later): inside a node and through a NIC, and in no other
 * family or protocol. A transfer across nodes of such a call takes
 * launch + route latency + 2 x 10 us + 4 KiB / 10 GB/s. */
#define SW_PLATEAU                                                          \
    ", \"software\": {\"launch_us\": 5, \"ring_plateau\": 2,"              \
    " \"ll\": {\"enabled\": false}, \"ll128\": {\"enabled\": false},"       \
    " \"simple\": {\"step_us\": {\"intra\": 3, \"net\": 10}}}"
static void test_ring_plateau(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load("{" BASE SW_PLATEAU "}");
    const int S = HCCN_SIM_PROTO_SIMPLE, RING = HCCN_SIM_FAM_NET_RING;
    const double net = 10 * 1e-6;   /* the file's step, as read */
    assert_true(hccn_sim_sw_step(t->sw, S, 0, RING) == 2 * (3 * 1e-6));
    assert_true(hccn_sim_sw_step(t->sw, S, 1, RING) == 2 * net);
    assert_true(hccn_sim_sw_step(t->sw, S, 1, 0) == net);
    assert_true(hccn_sim_sw_step(t->sw, S, 1, HCCN_SIM_FAM_TREE) == net);
    cross_node_step_at(t, RING, 20e-6, 1.0);
    cross_node_step_at(t, 0, 10e-6, 1.0);
    hccn_sim_topo_free(t);
    t = load("{" BASE ", \"stack\": \"nccl-2.2x\"}");
    const hccn_sim_sw_t *sw = t->sw;
    assert_true(sw->ring_plateau == 1.4);
    assert_true(hccn_sim_sw_step(sw, S, 1, RING) == (14.0 * 1e-6) * 1.4);
    /* inside a node: the larger of step_s (3.4) and ring_step_s (3) */
    assert_true(hccn_sim_sw_step(sw, S, 0, RING) == (3.4 * 1e-6) * 1.4);
    assert_true(hccn_sim_sw_step(sw, HCCN_SIM_PROTO_LL, 1, RING) ==
                2.7 * 1e-6);
    hccn_sim_topo_free(t);
    t = load("{" BASE ", \"stack\": \"rccl-2.x\"}");
    assert_true(hccn_sim_sw_step(t->sw, S, 1, RING) ==
                t->sw->proto[S].step_s[1]);
    hccn_sim_topo_free(t);
}

/* The library's tree reaches tree_bw of its bandwidth by the call's size,
 * column floor(log2(bytes / 64)) as NCCL's treeCorrectionFactor. */
static void test_tree_bw_columns(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load("{" BASE ", \"stack\": \"nccl-2.2x\"}");
    const hccn_sim_sw_t *sw = t->sw;
    const int LL = HCCN_SIM_PROTO_LL, LL128 = HCCN_SIM_PROTO_LL128,
              S = HCCN_SIM_PROTO_SIMPLE;
    const uint64_t MiB = 1 << 20;
    assert_true(hccn_sim_sw_tree_bw(sw, LL, 0) == 1.0);   /* not a tree */
    assert_true(hccn_sim_sw_tree_bw(sw, S, 8) == 0.9);    /* column 0 */
    assert_true(hccn_sim_sw_tree_bw(sw, S, 127) == 0.9);
    assert_true(hccn_sim_sw_tree_bw(sw, LL, 1023) == 1.0);   /* column 3 */
    assert_true(hccn_sim_sw_tree_bw(sw, LL, 1024) == 0.9);   /* column 4 */
    assert_true(hccn_sim_sw_tree_bw(sw, LL, MiB) == 0.5);    /* 14 */
    assert_true(hccn_sim_sw_tree_bw(sw, LL128, MiB) == 0.6);
    assert_true(hccn_sim_sw_tree_bw(sw, S, 64 << 10) == 0.6); /* 10 */
    assert_true(hccn_sim_sw_tree_bw(sw, S, 256 * MiB - 1) == 0.9); /* 21 */
    assert_true(hccn_sim_sw_tree_bw(sw, S, 256 * MiB) == 0.9);     /* 22 */
    assert_true(hccn_sim_sw_tree_bw(sw, S, 512 * MiB) == 1.0);   /* past */
    hccn_sim_topo_free(t);
    /* A shorter array: the sizes past it take all of the bandwidth. */
    t = load("{" BASE ", \"software\": {\"simple\": {\"tree_bw\": "
             "[0.25, 0.5]}}}");
    assert_true(hccn_sim_sw_tree_bw(t->sw, S, 64) == 0.25);
    assert_true(hccn_sim_sw_tree_bw(t->sw, S, 128) == 0.5);
    assert_true(hccn_sim_sw_tree_bw(t->sw, S, 256) == 1.0);
    hccn_sim_topo_free(t);
    t = load("{" BASE ", \"stack\": \"rccl-2.x\"}");
    assert_true(hccn_sim_sw_tree_bw(t->sw, S, MiB) == 1.0);
    hccn_sim_topo_free(t);
}

/* Four nodes of two NPUs (fabric and NIC bandwidths given), the bulk
 * protocol alone, with the tree's share of its bandwidth TB (a JSON
 * array) or none. */
#define T4L(fabric, nic, flat, nlat, wlat)                                   \
    "\"version\": 1, \"node_types\": [{\"count\": 4,"                       \
    " \"npu\": {\"count\": 2, \"arena_MiB\": 16, \"reduce_bw_GBps\": 100},"  \
    " \"fabric\": {\"type\": \"mesh\", \"bw_GBps\": " #fabric ","          \
    " \"lat_us\": " #flat "},"                                              \
    " \"nics\": {\"count\": 2, \"bw_GBps\": " #nic ", \"lat_us\": " #nlat  \
    "}}], \"network\": {\"type\": \"switch\", \"lat_us\": " #wlat "}"
#define T4(fabric, nic) T4L(fabric, nic, 1, 2, 1)
#define SW_TB(tb)                                                           \
    ", \"software\": {\"launch_us\": 5,"                                    \
    " \"ll\": {\"enabled\": false}, \"ll128\": {\"enabled\": false},"       \
    " \"simple\": {\"step_us\": {\"intra\": 3, \"net\": 10}" tb "}}"
#define HALVES                                                              \
    ", \"tree_bw\": [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5,"  \
    " 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]"

/* The time of algo's coll of count floats on every NPU of t: the
 * engine's, and the closed form's in *form. */
static double coll_time(const hccn_sim_topo_t *t, const char *algo,
                        int coll, uint64_t count, double *form)
{
    test_place_t pt;
    const int n = t->nnpus;
    test_place(&pt, t, n);
    hccn_coll_args_t a = {.coll = coll, .nranks = n, .count = count,
                          .esize = 4, .view = &pt.v};
    const hccn_algo_t *al = hccn_hier_algo_find(algo);
    hccn_sched_t *s = hccn_hier_build(al, &a);
    assert_non_null(s);
    hccn_sim_call_t call = hccn_hier_algo_call(al, &a);
    assert_true(hccn_hier_sched_call(s).tree_bytes == call.tree_bytes);
    double e = test_engine_time(t, s, pt.world, NULL);
    hccn_sched_free(s);
    *form = hccn_hier_cost(al, &a, &pt.pl, HCCN_COST_MODEL, NULL);
    return e;
}

/* A tree allreduce across four nodes whose transfers reach half of their
 * bandwidth takes what it takes on links of half the bandwidth, in the
 * engine and in the closed form (each transfer's bytes over efficiency
 * x bandwidth); rings, broadcast's tree and the two-node tree (not the
 * library's shape: tree.h) take no share. */
static void test_tree_bw_times(void **state)
{
    (void)state;
    hccn_sim_topo_t *h = load("{" T4(100, 10) SW_TB(HALVES) "}");
    hccn_sim_topo_t *s = load("{" T4(50, 5) SW_TB("") "}");
    hccn_sim_topo_t *f = load("{" T4(100, 10) SW_TB("") "}");
    const uint64_t n = 1 << 18;   /* 1 MiB */
    double fh, fs, ff;
    double eh = coll_time(h, "tree", HCCN_COLL_ALLREDUCE, n, &fh);
    double es = coll_time(s, "tree", HCCN_COLL_ALLREDUCE, n, &fs);
    double ef = coll_time(f, "tree", HCCN_COLL_ALLREDUCE, n, &ff);
    test_assert_rel(eh, es, 1e-12, "engine: half the share = half the links");
    test_assert_rel(fh, fs, 1e-12, "closed form: the same");
    if (!(eh > ef * 1.2))
        fail_msg("the share slows the tree: %.3f us against %.3f", eh * 1e6,
                 ef * 1e6);
    eh = coll_time(h, "rings", HCCN_COLL_ALLREDUCE, n, &fh);
    ef = coll_time(f, "rings", HCCN_COLL_ALLREDUCE, n, &ff);
    test_assert_rel(eh, ef, 0.0, "rings take no share");
    test_assert_rel(fh, ff, 0.0, "rings' closed form takes no share");
    eh = coll_time(h, "tree", HCCN_COLL_BROADCAST, n, &fh);
    ef = coll_time(f, "tree", HCCN_COLL_BROADCAST, n, &ff);
    test_assert_rel(eh, ef, 0.0, "broadcast's tree takes no share");
    hccn_sim_topo_free(h);
    hccn_sim_topo_free(s);
    hccn_sim_topo_free(f);
    h = load("{" BASE SW_TB(HALVES) "}");
    f = load("{" BASE SW_TB("") "}");
    eh = coll_time(h, "tree", HCCN_COLL_ALLREDUCE, n, &fh);
    ef = coll_time(f, "tree", HCCN_COLL_ALLREDUCE, n, &ff);
    test_assert_rel(eh, ef, 0.0, "the two-node tree takes no share");
    test_assert_rel(fh, ff, 0.0, "nor its closed form");
    hccn_sim_topo_free(h);
    hccn_sim_topo_free(f);
}

/* A hop of the library's tree allreduce across nodes costs the larger of
 * its step and its route's latency (NCCL's tree row is a hop's whole
 * latency): with fabric links of 1 us and NIC routes of 2 + 1 + 2 us, a
 * tree whose steps are 0.5 us inside a node and 9 through a NIC takes
 * what it takes on links of no latency with steps of 1 and 9, in the
 * engine and the closed form; rings add the two, as do the tree's
 * broadcast and every transfer elsewhere. */
#define SW_HOP(intra, net)                                                  \
    ", \"software\": {\"launch_us\": 5,"                                    \
    " \"ll\": {\"enabled\": false}, \"ll128\": {\"enabled\": false},"       \
    " \"simple\": {\"step_us\": {\"intra\": 3, \"net\": 10},"              \
    " \"tree_step_us\": {\"intra\": " #intra ", \"net\": " #net "}}}"
static void test_tree_hop(void **state)
{
    (void)state;
    assert_true(hccn_sim_sw_hop_lat(1e-6, 3e-6, 0) == 1e-6 + 3e-6);
    assert_true(hccn_sim_sw_hop_lat(1e-6, 3e-6, 8) == 3e-6);
    assert_true(hccn_sim_sw_hop_lat(5e-6, 3e-6, 8) == 5e-6);
    hccn_sim_topo_t *a = load("{" T4(100, 10) SW_HOP(0.5, 9) "}");
    hccn_sim_topo_t *b = load("{" T4L(100, 10, 0, 0, 0) SW_HOP(1, 9) "}");
    const uint64_t n[] = {2, 1 << 14, 1 << 18};
    for (size_t i = 0; i < sizeof(n) / sizeof(*n); i++) {
        double fa, fb;
        double ea = coll_time(a, "tree", HCCN_COLL_ALLREDUCE, n[i], &fa);
        double eb = coll_time(b, "tree", HCCN_COLL_ALLREDUCE, n[i], &fb);
        test_assert_rel(ea, eb, 1e-12, "engine: a tree hop is the larger");
        test_assert_rel(fa, fb, 1e-12, "closed form: the same");
        ea = coll_time(a, "rings", HCCN_COLL_ALLREDUCE, n[i], &fa);
        eb = coll_time(b, "rings", HCCN_COLL_ALLREDUCE, n[i], &fb);
        if (!(ea > eb + 1e-6) || !(fa > fb + 1e-6))
            fail_msg("rings add the route's latency: engine %.3f us against "
                     "%.3f, closed form %.3f against %.3f", ea * 1e6,
                     eb * 1e6, fa * 1e6, fb * 1e6);
    }
    hccn_sim_topo_free(a);
    hccn_sim_topo_free(b);
}

/* A call that reduces in a node's switch takes the library's NVLS tree
 * step through a NIC (nvls_net_step_us; NCCL's hwLat[NET][NVLSTree]
 * Simple, 20.9 us in nccl-2.2x) in place of its protocol's; inside a node
 * its protocol's: a transfer across nodes of such a call takes launch +
 * route latency + 12 us + b / (0.5 x 10 GB/s) under LL. */
static void test_nvls_net_step(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load("{" BASE SW_NVLS "}");
    const int LL = HCCN_SIM_PROTO_LL, NVLS = HCCN_SIM_FAM_NVLS;
    assert_true(hccn_sim_sw_step(t->sw, LL, 1, NVLS) == 12 * 1e-6);
    assert_true(hccn_sim_sw_step(t->sw, LL, 0, NVLS) ==
                t->sw->proto[LL].step_s[0]);
    cross_node_step(t, NVLS, 12e-6);
    hccn_coll_args_t r = {.coll = HCCN_COLL_ALLREDUCE, .nranks = 4,
                          .count = 1024, .esize = 4,
                          .in_switch = HCCN_IN_SWITCH_NODES};
    assert_int_equal(hccn_hier_family(hccn_hier_algo_find("hier_nvls"), &r),
                     NVLS);
    hccn_sim_topo_free(t);
    t = load("{" BASE ", \"stack\": \"nccl-2.2x\"}");
    assert_true(t->sw->nvls_net_step_s == 20.9e-6);
    hccn_sim_topo_free(t);
}

/* rings' allgather of block bytes a rank on NPUs 0 and 1 (one node:
 * 100 GB/s, 1 us) in slices of 512 KiB: the engine's time of the
 * schedule as built, and as posted with each slice its own protocol
 * (proto_scale 1, *per_slice); the closed form in *form. */
static double rings_allgather(const hccn_sim_topo_t *t, uint64_t block,
                              double *per_slice, double *form)
{
    int world[2] = {0, 1}, node[2], local[2];
    hccn_cost_place_t pl = {t, world};
    hccn_hier_view_t v;
    assert_int_equal(hccn_hier_cost_view(&pl, 2, node, local, &v), 0);
    hccn_coll_args_t a = {.coll = HCCN_COLL_ALLGATHER, .nranks = 2,
                          .count = block / 4, .esize = 4, .view = &v,
                          .chunk_bytes = 512 << 10};
    const hccn_algo_t *al = hccn_hier_algo_find("rings");
    hccn_sched_t *s = hccn_hier_build(al, &a);
    assert_non_null(s);
    uint32_t k = (uint32_t)((block + (512 << 10) - 1) / (512 << 10));
    assert_int_equal(s->proto_scale, k);
    assert_int_equal(hccn_hier_proto_scale(al, &a), k);
    double e = test_engine_time(t, s, world, NULL);
    s->proto_scale = 1;
    *per_slice = test_engine_time(t, s, world, NULL);
    hccn_sched_free(s);
    *form = hccn_hier_cost(al, &a, &pl, HCCN_COST_MODEL, NULL);
    return e;
}

/* A library moves a call's data under one protocol, picked for the
 * call's blocks, not for the slices it pipelines them in (docs/timing.md,
 * Software): 8 MiB blocks in 16 slices of 512 KiB run Simple (3 us, full
 * rate), where a slice alone would take LL128 (1 us, 0.9). One step of
 * K = 16 slices of d: launch + link latency + step + K d. A 4 KiB block
 * is one slice: LL (0.5 us, half rate). */
static void test_block_protocol(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load("{" BASE SW "}");
    const double B = 100e9, launch = 5e-6, lat = 1e-6;
    double per_slice, form;
    double e = rings_allgather(t, 8 << 20, &per_slice, &form);
    check_pair(t, 0, 1, 512 << 10, HCCN_SIM_PROTO_LL128);
    check_pair(t, 0, 1, 8 << 20, HCCN_SIM_PROTO_SIMPLE);
    test_assert_rel(e, launch + lat + 3e-6 + (8 << 20) / B, 1e-9,
                    "8 MiB blocks under simple");
    test_assert_rel(per_slice,
                    launch + lat + 1e-6 + (8 << 20) / (0.9 * B), 1e-9,
                    "the slices each under ll128");
    test_assert_rel(form, e, 1e-9, "closed form, 8 MiB blocks");
    e = rings_allgather(t, 4096, &per_slice, &form);
    test_assert_rel(e, launch + lat + 0.5e-6 + 4096 / (0.5 * B), 1e-9,
                    "a 4 KiB block under ll");
    test_assert_rel(per_slice, e, 0.0, "one slice: its own protocol");
    test_assert_rel(form, e, 1e-9, "closed form, 4 KiB blocks");
    hccn_sim_topo_free(t);
}

/* The default choice for an allreduce of bytes on the 4 NPUs of t, and
 * the least predicted time over every row it may take by default (not
 * by name only) in *best. */
static const hccn_algo_t *allreduce_pick(const hccn_sim_topo_t *t,
                                         uint64_t bytes, double *best)
{
    int world[4] = {0, 1, 2, 3}, node[4], local[4];
    hccn_cost_place_t pl = {t, world};
    hccn_hier_view_t v;
    assert_int_equal(hccn_hier_cost_view(&pl, 4, node, local, &v), 0);
    hccn_coll_args_t a = {.coll = HCCN_COLL_ALLREDUCE, .nranks = 4,
                          .count = bytes / 4, .esize = 4, .view = &v};
    *best = INFINITY;
    for (const hccn_algo_t *al = hccn_hier_algos(); al->name; al++) {
        if (al->by_name_only || !(al->colls & 1u << HCCN_COLL_ALLREDUCE))
            continue;
        double c = hccn_hier_cost(al, &a, &pl, HCCN_COST_AUTO, NULL);
        if (c >= 0.0 && c < *best)
            *best = c;
    }
    hccn_hier_select_in_t in = {t, world, NULL, NULL};
    char why[256];
    const hccn_algo_t *al = hccn_hier_select(&a, &in, why, sizeof(why),
                                             NULL, 0);
    if (al == NULL)
        fail_msg("%s", why);
    assert_true(hccn_hier_cost(al, &a, &pl, HCCN_COST_AUTO, NULL) >= *best);
    return al;
}

/* mpi (Open MPI 5): eager up to the BTL's eager limit (4 KiB inside a
 * node, 64 KiB across), rendezvous past it, in the engine and the closed
 * form alike; its default choice takes the cheapest of every row, where
 * "algorithms": "library" keeps it to rings and tree. */
static void test_mpi(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load("{" BASE ", \"stack\": \"mpi\"}");
    assert_true(t->sw->launch_s == 1e-6 && t->sw->all_algorithms);
    check_pair(t, 0, 1, 4096, HCCN_SIM_PROTO_LL);
    check_pair(t, 0, 1, 4100, HCCN_SIM_PROTO_SIMPLE);
    check_pair(t, 0, 2, 65536, HCCN_SIM_PROTO_LL);
    check_pair(t, 0, 2, 65540, HCCN_SIM_PROTO_SIMPLE);
    double best, lib_best;
    static const uint64_t sizes[] = {8, 65536, 16 << 20};
    for (int i = 0; i < 3; i++) {
        const hccn_algo_t *al = allreduce_pick(t, sizes[i], &best);
        int world[4] = {0, 1, 2, 3}, node[4], local[4];
        hccn_cost_place_t pl = {t, world};
        hccn_hier_view_t v;
        assert_int_equal(hccn_hier_cost_view(&pl, 4, node, local, &v), 0);
        hccn_coll_args_t a = {.coll = HCCN_COLL_ALLREDUCE, .nranks = 4,
                              .count = sizes[i] / 4, .esize = 4, .view = &v};
        test_assert_rel(hccn_hier_cost(al, &a, &pl, HCCN_COST_AUTO, NULL),
                        best, 0.0, "mpi: the cheapest of every row");
    }
    hccn_sim_topo_free(t);
    t = load("{" BASE ", \"stack\": \"mpi\", \"software\": "
             "{\"algorithms\": \"library\"}}");
    for (int i = 0; i < 3; i++) {
        const hccn_algo_t *al = allreduce_pick(t, sizes[i], &lib_best);
        assert_true(strcmp(al->name, "rings") == 0 ||
                    strcmp(al->name, "tree") == 0);
    }
    hccn_sim_topo_free(t);
    expect_error("{" BASE ", \"stack\": \"mpi\", \"software\": "
                 "{\"algorithms\": \"some\"}}",
                 "bad.json: software.algorithms: must be \"library\" or "
                 "\"all\" (got \"some\")");
}

/* The host's issue of a call (docs/timing.md, Software): a call driven
 * with 7 other NPUs by one thread at 3 us each takes max(launch +
 * transfer, 8 x 3 us), in the engine and the closed form alike. */
/* A row that does not apply (hier on the ranks of one node) has no
 * price under a software model either: neither the launch nor the
 * host's floor may turn "none" into a time the selection would pick. */
static int unpriced_stays(const hccn_cost_place_t *pl)
{
    hccn_coll_args_t args = {.coll = HCCN_COLL_ALLREDUCE, .nranks = 2,
                             .count = 1024, .esize = 4};
    return hccn_hier_cost(hccn_hier_algo_find("hier"), &args, pl,
                          HCCN_COST_MODEL, NULL) < 0.0;
}

static void test_host_floor(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load("{" BASE ", \"stack\": \"nccl-2.2x\", "
                              "\"software\": {\"host_us\": 3, "
                              "\"ranks_per_thread\": 8}}");
    assert_true(t->sw->host_s == 3e-6 && t->sw->per_thread == 8);
    assert_true(hccn_sim_sw_floor(t->sw, t->sw->launch_s) == 24e-6 - 6.6e-6);
    int world[2] = {0, 1};
    hccn_cost_place_t pl = {t, world};
    const hccn_algo_t *mesh = hccn_hier_algo_find("mesh");
    /* 4 KiB (LL, 0.6 us step): the floor, 24 us; 4 MiB (simple, 3.4 us,
     * 100 GB/s x the preset's fabric efficiency 0.80 = 80 GB/s): its
     * launch (simple's, 8.4 us) and transfer, 8.4 + 1 + 3.4 + 52.4288 us. */
    const uint64_t sizes[] = {4096, 4 << 20};
    const double want[] = {24e-6, 8.4e-6 + 1e-6 + 3.4e-6 + 4194304 / 80e9};
    for (int i = 0; i < 2; i++) {
        hccn_coll_args_t args = {.coll = HCCN_COLL_ALLGATHER, .nranks = 2,
                                 .count = sizes[i] / 4, .esize = 4};
        hccn_sched_t *s = mesh->build(&args);
        assert_non_null(s);
        double eng = test_engine_time(t, s, world, NULL);
        hccn_sched_free(s);
        double model = hccn_hier_cost(mesh, &args, &pl, HCCN_COST_MODEL,
                                      NULL);
        if (!(fabs(eng - want[i]) <= 1e-12 * want[i]) ||
            !(fabs(model - want[i]) <= 1e-12 * want[i]))
            fail_msg("%llu B: engine %.6f us, model %.6f us, formula "
                     "%.6f us", (unsigned long long)sizes[i], eng * 1e6,
                     model * 1e6, want[i] * 1e6);
    }
    assert_true(unpriced_stays(&pl));
    hccn_sim_topo_free(t);
    /* One NPU per thread: 4.6 us never exceeds NCCL's 6.6 us launch. */
    t = load("{" BASE ", \"stack\": \"nccl-2.2x\"}");
    assert_true(t->sw->host_s == 4.6e-6 && t->sw->per_thread == 1);
    assert_true(hccn_sim_sw_floor(t->sw, t->sw->launch_s) < 0.0);
    pl.topo = t;
    assert_true(unpriced_stays(&pl));
    hccn_sim_topo_free(t);
    expect_error("{" BASE ", \"software\": {\"ranks_per_thread\": 0}}",
                 "bad.json: software.ranks_per_thread");
    expect_error("{" BASE ", \"software\": {\"host_us\": -2}}",
                 "bad.json: software.host_us");
    /* The all-pairs size: rccl-2.x's, overridden, refused below 0. */
    t = load("{" BASE ", \"stack\": \"rccl-2.x\", \"software\": "
             "{\"allpairs_max_bytes\": 1024}}");
    assert_true(t->sw->allpairs_max_bytes == 1024.0);
    hccn_sim_topo_free(t);
    expect_error("{" BASE ", \"software\": {\"allpairs_max_bytes\": -1}}",
                 "bad.json: software.allpairs_max_bytes");
}

/* Eight NPUs of one node, every pair on a link of its own. */
#define MESH8                                                               \
    "\"version\": 1, \"node_types\": [{\"count\": 1,"                       \
    " \"npu\": {\"count\": 8, \"arena_MiB\": 16, \"reduce_bw_GBps\": 100},"  \
    " \"fabric\": {\"type\": \"mesh\", \"bw_GBps\": 100, \"lat_us\": 1}}]"

/* The hosts' time per message (LogGP's o; docs/timing.md, Software): a
 * pairwise alltoall of 8 ranks with small blocks. Every rank issues its 7
 * sends at o_s each, then takes in the 7 messages, which have all arrived
 * by then (arrival k o_s + D, D = 1 us + step + bytes / B <= 6 min(o_s,
 * o_r)), at o_r each: launch + 7 o_s + 7 o_r, in the engine and the
 * closed form. */
static void test_host_messages(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load("{" MESH8 ", \"software\": {\"launch_us\": 5,"
                              " \"send_overhead_us\": 1,"
                              " \"recv_overhead_us\": 2,"
                              " \"simple\": {\"step_us\": 0.5}}}");
    assert_true(t->sw->send_s == 1e-6 && t->sw->recv_s == 2e-6);
    int world[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    hccn_cost_place_t pl = {t, world};
    const hccn_algo_t *al = hccn_hier_algo_find("pairwise");
    const double want = 5e-6 + 7 * 1e-6 + 7 * 2e-6;
    for (uint64_t count = 1; count <= 1024; count *= 32) {
        hccn_coll_args_t args = {.coll = HCCN_COLL_ALLTOALL, .nranks = 8,
                                 .count = count, .esize = 4};
        hccn_sched_t *s = al->build(&args);
        assert_non_null(s);
        double eng = test_engine_time(t, s, world, NULL);
        hccn_sched_free(s);
        double model = hccn_hier_cost(al, &args, &pl, HCCN_COST_MODEL, NULL);
        if (!(fabs(eng - want) <= 1e-12 * want) ||
            !(fabs(model - want) <= 1e-12 * want))
            fail_msg("%llu B a peer: engine %.6f us, model %.6f us, formula "
                     "%.6f us", (unsigned long long)(count * 4), eng * 1e6,
                     model * 1e6, want * 1e6);
    }
    hccn_sim_topo_free(t);
    /* Negative times are refused. */
    expect_error("{" BASE ", \"software\": {\"send_overhead_us\": -1}}",
                 "bad.json: software.send_overhead_us");
    expect_error("{" BASE ", \"software\": {\"recv_overhead_us\": -1}}",
                 "bad.json: software.recv_overhead_us");
}

/* A time of 0 per message gives the times of a model without the fields,
 * bit for bit, engine and closed forms, for every collective of a few
 * rows on two nodes. */
static void test_host_messages_zero(void **state)
{
    (void)state;
    hccn_sim_topo_t *a = load("{" BASE SW "}");
    hccn_sim_topo_t *b = load("{" BASE ", \"software\": {\"launch_us\": 5,"
                              " \"send_overhead_us\": 0,"
                              " \"recv_overhead_us\": 0,"
                              " \"ll\": {\"step_us\": {\"intra\": 0.5, "
                              "\"net\": 2}, \"efficiency\": 0.5},"
                              " \"ll128\": {\"step_us\": {\"intra\": 1, "
                              "\"net\": 3}, \"efficiency\": 0.9},"
                              " \"simple\": {\"step_us\": {\"intra\": 3, "
                              "\"net\": 10}}}}");
    int world[4] = {0, 1, 2, 3};
    hccn_cost_place_t pa = {a, world}, pb = {b, world};
    const char *algos[] = {"ring", "mesh", "pairwise", "bruck", "hier"};
    const hccn_coll_t colls[] = {HCCN_COLL_ALLREDUCE, HCCN_COLL_ALLTOALL,
                                 HCCN_COLL_ALLGATHER};
    for (size_t i = 0; i < sizeof(algos) / sizeof(*algos); i++)
        for (size_t c = 0; c < sizeof(colls) / sizeof(*colls); c++)
            for (uint64_t count = 4; count <= (1u << 22); count *= 64)
                for (int mode = HCCN_COST_ENGINE; mode <= HCCN_COST_MODEL;
                     mode++) {
                    hccn_coll_args_t args = {.coll = colls[c], .nranks = 4,
                                             .count = count, .esize = 4};
                    const hccn_algo_t *al = hccn_hier_algo_find(algos[i]);
                    double x = hccn_hier_cost(al, &args, &pa,
                                              (hccn_cost_mode_t)mode, NULL);
                    double y = hccn_hier_cost(al, &args, &pb,
                                              (hccn_cost_mode_t)mode, NULL);
                    if (x != y)
                        fail_msg("%s %s %llu: %.17g s, with 0: %.17g s",
                                 algos[i], hccn_coll_name(colls[c]),
                                 (unsigned long long)count, x, y);
                }
    hccn_sim_topo_free(a);
    hccn_sim_topo_free(b);
}

/* "software": {} is a model of no cost: the times of no model, bit for
 * bit, in the engine and the cost model. */
static void test_none_is_identity(void **state)
{
    (void)state;
    hccn_sim_topo_t *a = load("{" BASE "}");
    hccn_sim_topo_t *b = load("{" BASE ", \"software\": {}}");
    assert_null(a->sw);
    assert_non_null(b->sw);
    int world[4] = {0, 1, 2, 3};
    hccn_cost_place_t pa = {a, world}, pb = {b, world};
    const char *algos[] = {"ring", "mesh", "hd", "hier"};
    for (size_t i = 0; i < sizeof(algos) / sizeof(*algos); i++) {
        const hccn_algo_t *al = hccn_hier_algo_find(algos[i]);
        for (uint64_t count = 1; count <= (1u << 22); count *= 64) {
            hccn_coll_args_t args = {.coll = HCCN_COLL_ALLREDUCE,
                                     .nranks = 4, .count = count,
                                     .esize = 4};
            for (int mode = HCCN_COST_ENGINE; mode <= HCCN_COST_MODEL;
                 mode++) {
                double x = hccn_hier_cost(al, &args, &pa,
                                          (hccn_cost_mode_t)mode, NULL);
                double y = hccn_hier_cost(al, &args, &pb,
                                          (hccn_cost_mode_t)mode, NULL);
                assert_true(x == y);
            }
        }
    }
    hccn_sim_topo_free(a);
    hccn_sim_topo_free(b);
    /* "stack": "none" takes a preset's costs away: the same bits. */
    a = load("{" BASE ", \"stack\": \"none\"}");
    b = load("{" BASE ", \"software\": {}}");
    assert_true(memcmp(a->sw->proto, b->sw->proto, sizeof(a->sw->proto)) ==
                    0 && a->sw->launch_s == b->sw->launch_s);
    hccn_sim_topo_free(a);
    hccn_sim_topo_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_presets),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_switch_points),
        cmocka_unit_test(test_times),
        cmocka_unit_test(test_bus_bound),
        cmocka_unit_test(test_ring_step),
        cmocka_unit_test(test_tree_step),
        cmocka_unit_test(test_ring_plateau),
        cmocka_unit_test(test_tree_bw_columns),
        cmocka_unit_test(test_tree_bw_times),
        cmocka_unit_test(test_tree_hop),
        cmocka_unit_test(test_nvls_net_step),
        cmocka_unit_test(test_block_protocol),
        cmocka_unit_test(test_mpi),
        cmocka_unit_test(test_host_floor),
        cmocka_unit_test(test_none_is_identity),
        cmocka_unit_test(test_host_messages),
        cmocka_unit_test(test_host_messages_zero),
        cmocka_unit_test(test_link_efficiency),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
