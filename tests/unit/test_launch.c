/*
 * A call's launch follows its protocols (device_sim/software.h,
 * docs/timing.md, Software): a call pays the largest launch among the
 * protocols its transfers run (the library's baseLat per protocol), or
 * the in-switch launch where it reduces in a node's switch; a protocol
 * without its own launch takes the stack's launch_us. Checked in the
 * engine, in the cost model's closed form and in its engine run, against
 * the formula launch + route latency + step + bytes / (eff x bandwidth),
 * or against the same call with no launch at all.
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
#include "test_topo_load.h"
#include "test_engine.h"
#include "test_util.h"

/* The software tests' two nodes of two NPUs (test_topo_load.h). */
#define BASE TEST_TOPO_2X2

/* Protocol costs of test_software.c, with launches ll, ll128, simple
 * (us) and no stack launch: LL below 56250 B inside a node and 22500 B
 * through a NIC, then LL128. */
#define SW_FMT                                                              \
    "{" BASE ", \"software\": {\"launch_us\": 0,"                           \
    " \"ll\": {\"step_us\": {\"intra\": 0.5, \"net\": 2}, \"efficiency\": 0.5,"\
    " \"launch_us\": %g},"                                                  \
    " \"ll128\": {\"step_us\": {\"intra\": 1, \"net\": 3}, "                 \
    "\"efficiency\": 0.9, \"launch_us\": %g},"                              \
    " \"simple\": {\"step_us\": {\"intra\": 3, \"net\": 10}, "               \
    "\"launch_us\": %g}}}"

static hccn_sim_topo_t *load(const char *json)
{
    return test_topo_load(json, "launch-test");
}

static hccn_sim_topo_t *load_launches(double ll, double ll128, double simple)
{
    char json[2048];
    snprintf(json, sizeof(json), SW_FMT, ll, ll128, simple);
    return load(json);
}

/* A mesh allgather of bytes per rank on world[0..n): the engine's time,
 * the closed form's and the cost model's engine run's. */
static void allgather(const hccn_sim_topo_t *t, int *world, int n,
                      uint64_t bytes, double out[3])
{
    hccn_coll_args_t args = {.coll = HCCN_COLL_ALLGATHER, .nranks = n,
                             .count = bytes / 4, .esize = 4};
    const hccn_algo_t *mesh = hccn_hier_algo_find("mesh");
    hccn_sched_t *s = mesh->build(&args);
    assert_non_null(s);
    out[0] = test_engine_time(t, s, world, NULL);
    hccn_sched_free(s);
    hccn_cost_place_t pl = {t, world};
    out[1] = hccn_hier_cost(mesh, &args, &pl, HCCN_COST_MODEL, NULL);
    out[2] = hccn_hier_cost(mesh, &args, &pl, HCCN_COST_ENGINE, NULL);
}

static const char *const how[3] = {"engine", "closed form", "cost engine"};

/* A pair's allgather of bytes runs protocol want_proto and takes the
 * formula with launch (seconds), in all three. */
static void check_pair(const hccn_sim_topo_t *t, int a, int b, uint64_t bytes,
                       int want_proto, double launch)
{
    int world[2] = {a, b}, links[HCCN_SIM_ROUTE_MAX];
    double lat, bw = INFINITY, got[3];
    int n = hccn_sim_topo_route(t, a, b, links, &lat);
    for (int k = 0; k < n; k++)
        bw = fmin(bw, t->links[links[k]].bw);
    int cls = hccn_sim_sw_class(t, links, n);
    assert_int_equal(hccn_sim_sw_pick(t->sw, bytes, cls, bw), want_proto);
    const hccn_sim_proto_t *p = &t->sw->proto[want_proto];
    double want = launch + lat + p->step_s[cls] +
                  (double)bytes / (p->eff[cls] * bw);
    allgather(t, world, 2, bytes, got);
    for (int i = 0; i < 3; i++)
        if (!(fabs(got[i] - want) <= 1e-12 * want))
            fail_msg("%llu B %s, %s: %.6f us, formula %.6f us",
                     (unsigned long long)bytes,
                     hccn_sim_proto_name(want_proto), how[i], got[i] * 1e6,
                     want * 1e6);
}

/* NCCL's ring baseLat per protocol: a call whose transfers all run one
 * protocol pays its launch. */
static void test_one_protocol(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load("{" BASE ", \"stack\": \"nccl-2.2x\"}");
    const hccn_sim_sw_t *sw = t->sw;
    assert_true(sw->launch_s == 6.6e-6);
    assert_true(hccn_sim_sw_proto_launch(sw, HCCN_SIM_PROTO_LL) == 6.6e-6);
    assert_true(hccn_sim_sw_proto_launch(sw, HCCN_SIM_PROTO_LL128) ==
                14.0e-6);
    assert_true(hccn_sim_sw_proto_launch(sw, HCCN_SIM_PROTO_SIMPLE) ==
                8.4e-6);
    assert_false(hccn_sim_sw_launch_uniform(sw));
    check_pair(t, 0, 1, 4096, HCCN_SIM_PROTO_LL, 6.6e-6);
    check_pair(t, 0, 1, 1 << 20, HCCN_SIM_PROTO_LL128, 14.0e-6);
    check_pair(t, 0, 1, 4 << 20, HCCN_SIM_PROTO_SIMPLE, 8.4e-6);
    check_pair(t, 0, 2, 256 << 10, HCCN_SIM_PROTO_LL128, 14.0e-6);
    check_pair(t, 0, 2, 64 << 20, HCCN_SIM_PROTO_SIMPLE, 8.4e-6);
    /* In the switch: the NVLS launch, whatever the protocols. */
    assert_true(hccn_sim_sw_launch(sw, 1u << HCCN_SIM_PROTO_LL128, 1) ==
                25e-6);
    assert_true(hccn_sim_sw_launch(sw, 0, 0) == 6.6e-6);
    hccn_sim_topo_free(t);
    /* RCCL's table (ROCm/rccl src/graph/tuning.cc): 12, 12, 17 us. */
    t = load("{" BASE ", \"stack\": \"rccl-2.x\"}");
    assert_true(hccn_sim_sw_launch(t->sw, 1u << HCCN_SIM_PROTO_LL, 1) ==
                12.0e-6);
    assert_true(hccn_sim_sw_launch(t->sw, 7u, 0) == 17.0e-6);
    check_pair(t, 0, 1, 4 << 20, HCCN_SIM_PROTO_SIMPLE, 17.0e-6);
    hccn_sim_topo_free(t);
}

/* A call whose transfers run several protocols pays the largest of their
 * launches, and no launch of a protocol it does not run: the time less
 * that of the same call with every launch 0. */
static void check_mixed(double ll, double ll128, double simple, int *world,
                        int n, uint64_t bytes, double want)
{
    hccn_sim_topo_t *t = load_launches(ll, ll128, simple);
    hccn_sim_topo_t *z = load_launches(0, 0, 0);
    double got[3], base[3];
    allgather(t, world, n, bytes, got);
    allgather(z, world, n, bytes, base);
    for (int i = 0; i < 3; i++)
        if (!(fabs(got[i] - base[i] - want * 1e-6) <= 1e-9 * want * 1e-6))
            fail_msg("launches %g/%g/%g, %d ranks, %llu B, %s: %.6f us "
                     "more than with none, want %g", ll, ll128, simple, n,
                     (unsigned long long)bytes, how[i],
                     (got[i] - base[i]) * 1e6, want);
    hccn_sim_topo_free(t);
    hccn_sim_topo_free(z);
}

static void test_mixed(void **state)
{
    (void)state;
    /* 32 KiB: LL between NPUs 0 and 1 (one node), LL128 to and from NPU 2
     * (through the NICs); simple runs nothing. */
    int three[3] = {0, 1, 2}, pair[2] = {0, 1};
    check_mixed(2, 3, 9, three, 3, 32768, 3);
    check_mixed(7, 3, 9, three, 3, 32768, 7);
    check_mixed(2, 3, 9, pair, 2, 32768, 2);
    check_mixed(7, 3, 9, pair, 2, 32768, 7);
    /* 4 MiB: simple everywhere. */
    check_mixed(2, 3, 9, three, 3, 4 << 20, 9);
}

/* Without a protocol's own launch, the stack's launch_us: a file that
 * gives only launch_us keeps its one launch for every call. */
static void test_default(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load("{" BASE ", \"stack\": \"nccl-2.2x\", "
                              "\"software\": {\"launch_us\": 6.6}}");
    for (int p = 0; p < HCCN_SIM_NPROTO; p++)
        assert_true(t->sw->proto[p].launch_s == 0.0 &&
                    hccn_sim_sw_proto_launch(t->sw, p) == t->sw->launch_s);
    assert_true(fabs(t->sw->launch_s - 6.6e-6) < 1e-18);
    assert_true(hccn_sim_sw_launch_uniform(t->sw));
    check_pair(t, 0, 1, 4096, HCCN_SIM_PROTO_LL, 6.6e-6);
    check_pair(t, 0, 1, 1 << 20, HCCN_SIM_PROTO_LL128, 6.6e-6);
    check_pair(t, 0, 1, 4 << 20, HCCN_SIM_PROTO_SIMPLE, 6.6e-6);
    hccn_sim_topo_free(t);
    /* A protocol's own, given with it, stays; the others take 5. */
    t = load("{" BASE ", \"stack\": \"nccl-2.2x\", \"software\": "
             "{\"launch_us\": 5, \"simple\": {\"launch_us\": 9}}}");
    assert_true(hccn_sim_sw_proto_launch(t->sw, 0) == 5 * 1e-6);
    assert_true(hccn_sim_sw_proto_launch(t->sw, 1) == 5 * 1e-6);
    assert_true(hccn_sim_sw_proto_launch(t->sw, 2) == 9 * 1e-6);
    check_pair(t, 0, 1, 1 << 20, HCCN_SIM_PROTO_LL128, 5e-6);
    check_pair(t, 0, 1, 4 << 20, HCCN_SIM_PROTO_SIMPLE, 9e-6);
    hccn_sim_topo_free(t);
    /* Without "launch_us", a preset's per protocol stay. */
    t = load("{" BASE ", \"stack\": \"nccl-2.2x\", \"software\": "
             "{\"ll128\": {\"launch_us\": 20}}}");
    assert_true(hccn_sim_sw_proto_launch(t->sw, 0) == 6.6e-6);
    assert_true(hccn_sim_sw_proto_launch(t->sw, 1) == 20 * 1e-6);
    assert_true(hccn_sim_sw_proto_launch(t->sw, 2) == 8.4e-6);
    hccn_sim_topo_free(t);
}

static void test_errors(void **state)
{
    (void)state;
    test_topo_refused("{" BASE ", \"software\": {\"ll128\": "
                      "{\"launch_us\": -1}}}", "bad.json",
                      "bad.json: software.ll128.launch_us");
    test_topo_refused("{" BASE ", \"stack\": \"nccl-2.2x\", \"software\": "
                      "{\"simple\": {\"launch_us\": \"x\"}}}", "bad.json",
                      "bad.json: software.simple.launch_us");
    test_topo_refused("{" BASE ", \"software\": {\"ll\": "
                      "{\"launch_us\": 2e6}}}", "bad.json",
                      "bad.json: software.ll.launch_us");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_protocol),
        cmocka_unit_test(test_mixed),
        cmocka_unit_test(test_default),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
