/*
 * Staged PCIe traffic without peer-to-peer (device_sim/topo_staged.c),
 * checked against the arithmetic of docs/topology.md worked out by hand.
 *
 * Two GPUs, each alone under its PCIe switch: wire W = 10 GB/s per
 * direction (GPU links and switch uplinks), GPU link latency 1 us, host
 * 2 us, so every route's latency is 3 us. With p2p false and
 * "staged": {"efficiency": E, "duplex": F} a transfer alone drains at
 * E x W; two opposite transfers at once share each GPU's budget
 * E x F x W, so each drains at min(E x W, E x F x W / 2). With p2p true
 * the two directions are independent wires at W each.
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
#include "test_topo_load.h"

#define W 10e9                  /* wire, bytes/s per direction */
#define LAT 3e-6                /* GPU link 1 us + host 2 us */
#define NB 1000000.0            /* bytes of each transfer */

/* The 2-GPU file: p2p as given, then the rest of the fabric (staged). */
static char *two_gpus(char *buf, size_t len, const char *p2p,
                      const char *staged)
{
    snprintf(buf, len,
             "{\"version\": 1, \"node_types\": [{\"count\": 1,"
             " \"npu\": {\"count\": 2, \"arena_MiB\": 4, \"reduce_bw_GBps\": 100},"
             " \"fabric\": {\"type\": \"pcie\", \"bw_GBps\": 10, \"lat_us\": 1,"
             " \"groups\": [[0], [1]], \"host_bw_GBps\": 10, \"host_lat_us\": 2,"
             " \"p2p\": %s%s}}]}", p2p, staged);
    return buf;
}

static hccn_sim_task_t xfer(hccn_sim_task_kind_t kind, int peer, uint64_t id)
{
    return (hccn_sim_task_t){.kind = kind, .peer = peer,
                             .bytes = (uint64_t)NB, .key = {1, 0, id}};
}

static void assert_time(double got, double want, const char *what)
{
    if (!(fabs(got - want) <= 1e-12 * fabs(want)))
        fail_msg("%s: %.17g s, want %.17g s", what, got, want);
}

/* Runs 0 -> 1 (and 1 -> 0 at the same time when both) on topo and checks
 * every transfer drains after NB / rate and arrives LAT later. */
static void run(const hccn_sim_topo_t *topo, int both, double rate,
                const char *what)
{
    hccn_sim_engine_t *eng = hccn_sim_engine_create(topo, 0.0);
    assert_non_null(eng);
    hccn_sim_task_t t0[] = {xfer(HCCN_SIM_TASK_SEND, 1, 'A'),
                            xfer(HCCN_SIM_TASK_RECV, 1, 'B')};
    hccn_sim_task_t t1[] = {xfer(HCCN_SIM_TASK_RECV, 0, 'A'),
                            xfer(HCCN_SIM_TASK_SEND, 0, 'B')};
    hccn_sim_batch_t *b0 = hccn_sim_post(eng, 0, t0, both ? 2 : 1, NULL,
                                         NULL);
    hccn_sim_batch_t *b1 = hccn_sim_post(eng, 1, t1, both ? 2 : 1, NULL,
                                         NULL);
    assert_true(b0 != NULL && b1 != NULL);
    hccn_sim_finish_all(eng);
    assert_time(hccn_sim_task_end(b0, 0), NB / rate, what);
    assert_time(hccn_sim_task_end(b1, 0), NB / rate + LAT, what);
    if (both) {
        assert_time(hccn_sim_task_end(b1, 1), NB / rate, what);
        assert_time(hccn_sim_task_end(b0, 1), NB / rate + LAT, what);
    }
    hccn_sim_engine_destroy(eng);
}

static void test_given_figures(void **state)
{
    (void)state;
    char buf[1024];
    hccn_sim_topo_t *t = test_topo_load(
        two_gpus(buf, sizeof(buf), "false",
                 ", \"staged\": {\"efficiency\": 0.5, \"duplex\": 1.5}"),
        "staged");
    double e, f;
    assert_int_equal(hccn_sim_topo_staged(t, 0, &e, &f), 1);
    assert_true(e == 0.5 && f == 1.5);
    run(t, 0, 0.5 * W, "alone: E x W");
    run(t, 1, fmin(0.5 * W, 0.5 * 1.5 * W / 2), "both: E x F x W / 2");
    hccn_sim_topo_free(t);
}

static void test_defaults(void **state)
{
    (void)state;
    char buf[1024];
    hccn_sim_topo_t *t = test_topo_load(two_gpus(buf, sizeof(buf), "false",
                                                 ""), "default");
    double e, f;
    assert_int_equal(hccn_sim_topo_staged(t, 0, &e, &f), 1);
    assert_true(e == 0.8 && f == 1.2);
    run(t, 0, 0.8 * W, "alone at the default efficiency");
    run(t, 1, 0.8 * 1.2 * W / 2, "both at the default duplex");
    hccn_sim_topo_free(t);
}

/* duplex 2: both directions run as if alone (the budget is twice one). */
static void test_full_duplex(void **state)
{
    (void)state;
    char buf[1024];
    hccn_sim_topo_t *t = test_topo_load(
        two_gpus(buf, sizeof(buf), "false",
                 ", \"staged\": {\"duplex\": 2}"), "duplex2");
    run(t, 1, 0.8 * W, "both with duplex 2");
    hccn_sim_topo_free(t);
}

static void test_p2p_unchanged(void **state)
{
    (void)state;
    char buf[1024];
    int links[HCCN_SIM_ROUTE_MAX];
    double lat;
    hccn_sim_topo_t *t = test_topo_load(two_gpus(buf, sizeof(buf), "true",
                                                 ""), "p2p");
    assert_int_equal(hccn_sim_topo_staged(t, 0, NULL, NULL), 0);
    assert_int_equal(t->nlinks, 2 * 2 + 2 * 2);
    assert_int_equal(hccn_sim_topo_route(t, 0, 1, links, &lat), 4);
    run(t, 0, W, "p2p alone: the wire");
    run(t, 1, W, "p2p both: independent directions");
    hccn_sim_topo_free(t);
}

/* The staged route: a chain from sender to receiver through the stage
 * links (NPU to itself), the latency of the wires alone. */
static void test_route(void **state)
{
    (void)state;
    char buf[1024];
    int l[HCCN_SIM_ROUTE_MAX];
    double lat;
    hccn_sim_topo_t *t = test_topo_load(two_gpus(buf, sizeof(buf), "false",
                                                 ""), "route");
    assert_int_equal(t->nlinks, 5 * 2 + 2 * 2);
    assert_int_equal(hccn_sim_topo_route(t, 0, 1, l, &lat), 8);
    assert_true(fabs(lat - LAT) < 1e-15);
    assert_int_equal(t->links[l[0]].src, t->npus[0].dev);
    assert_int_equal(t->links[l[7]].dst, t->npus[1].dev);
    for (int i = 0; i + 1 < 8; i++)
        assert_int_equal(t->links[l[i]].dst, t->links[l[i + 1]].src);
    assert_true(t->links[l[0]].bw == 0.8 * W);       /* stage out */
    assert_true(t->links[l[1]].bw == 0.8 * 1.2 * W); /* shared budget */
    assert_true(t->links[l[6]].bw == 0.8 * 1.2 * W);
    assert_true(t->links[l[7]].bw == 0.8 * W);       /* stage in */
    hccn_sim_topo_free(t);
}

static void test_bad_values(void **state)
{
    (void)state;
    static const struct {
        const char *p2p, *extra, *msg;
    } bad[] = {
        {"true", "{\"efficiency\": 0.5}",
         "staged: only allowed when p2p is false"},
        {"false", "{\"efficiency\": 0}", "staged.efficiency"},
        {"false", "{\"efficiency\": 1.5}", "staged.efficiency"},
        {"false", "{\"duplex\": 0.9}", "staged.duplex"},
        {"false", "{\"duplex\": 2.5}", "staged.duplex"},
        {"false", "{\"eff\": 0.5}", "staged.eff"},
        {"false", "0.5", "staged"},
    };
    char buf[1024], extra[128], msg[128];
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        snprintf(extra, sizeof(extra), ", \"staged\": %s", bad[k].extra);
        snprintf(msg, sizeof(msg), "node_types[0].fabric.%s", bad[k].msg);
        test_topo_refused(two_gpus(buf, sizeof(buf), bad[k].p2p, extra),
                          "bad", msg);
    }
    test_topo_refused(
        "{\"version\": 1, \"node_types\": [{\"count\": 1,"
        " \"npu\": {\"count\": 2, \"arena_MiB\": 4, \"reduce_bw_GBps\": 1},"
        " \"fabric\": {\"type\": \"switch\", \"bw_GBps\": 10, \"lat_us\": 1,"
        " \"staged\": {}}}]}", "bad",
        "node_types[0].fabric.staged: only allowed when type is \"pcie\"");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_given_figures),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_full_duplex),
        cmocka_unit_test(test_p2p_unchanged),
        cmocka_unit_test(test_route),
        cmocka_unit_test(test_bad_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
