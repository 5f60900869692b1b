/*
 * The rate solver against its reference (hccn_sim_engine_set_reference):
 * bursts of starts re-rated once (device_sim/flow_comp.c) against a
 * re-rating after every start. The times must be the same bits.
 *
 * Random sets of transfers on two topologies of two nodes of 8 NPUs:
 * a switch fabric with four NPUs behind each of two NICs, so that flows
 * share links in long chains (one component per node and across them);
 * and a full mesh (a link per NPU pair) with a NIC per NPU, many links
 * of one flow or a few, so that progressive filling takes many rounds.
 * Sizes and delays come from a few values, so that many transfers start
 * at one instant (bursts), drain at one instant, tie for the smallest
 * share, and start while others are in flight (bursts that reach a flow
 * last brought up to date earlier and must close). Every task's end is
 * compared with ==. The solver runs twice: as it comes (these components
 * are small enough to be scanned for their bottleneck link, by the live
 * scan of kept shares) and with the tournament that larger components
 * use (device_sim/fill.c) on every component; the reference always scans
 * afresh, a division per link and round. The solver orders each
 * component's links by a radix sort of packed keys (from 17 links; by
 * insertion below), the reference by comparisons (fill.c, radix_order):
 * the same order or the ties break differently. The reference also
 * keeps every link a resource, where the solver leaves links with room
 * out of its searches and fillings until a re-rating finds them bound
 * (flow_comp.c, Slack links): both must be taken many times.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "device_sim/engine.h"
#include "device_sim/engine_internal.h"

#define NDEV 16
#define MAXT 24                 /* transfers per device, at most */

static const char *const topos[2] = {
    "{\"version\": 1, \"node_types\": [{\"count\": 2,"
    " \"npu\": {\"count\": 8, \"arena_MiB\": 16, \"reduce_bw_GBps\": 3},"
    " \"fabric\": {\"type\": \"switch\", \"bw_GBps\": 1, \"lat_us\": 1},"
    " \"nics\": {\"count\": 2, \"bw_GBps\": 0.75, \"lat_us\": 2}}],"
    " \"network\": {\"type\": \"switch\", \"lat_us\": 0.5}}",
    "{\"version\": 1, \"node_types\": [{\"count\": 2,"
    " \"npu\": {\"count\": 8, \"arena_MiB\": 16, \"reduce_bw_GBps\": 3},"
    " \"fabric\": {\"type\": \"mesh\", \"bw_GBps\": 1, \"lat_us\": 1},"
    " \"nics\": {\"count\": 8, \"bw_GBps\": 0.5, \"lat_us\": 2}}],"
    " \"network\": {\"type\": \"switch\", \"lat_us\": 0.5}}",
};

typedef struct {
    hccn_sim_task_t t[NDEV][2 * MAXT];
    uint32_t deps[NDEV][2 * MAXT];
    int n[NDEV];
} plan_t;

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Appends a task of dev; a transfer may wait for a local task of its own
 * device placed just before it (a delay of u/2 or u). */
static void add(plan_t *p, int dev, hccn_sim_task_t t, uint64_t *s)
{
    int i = p->n[dev];
    double u = 1e-3;
    if (rng_next(s) % 3 == 0) {
        p->t[dev][i] = (hccn_sim_task_t){.kind = HCCN_SIM_TASK_LOCAL,
                                         .cost = (1 + rng_next(s) % 2) * u / 2};
        p->deps[dev][i + 1] = (uint32_t)i;
        t.dep_off = (uint32_t)(i + 1);
        t.ndeps = 1;
        i++;
    }
    p->t[dev][i] = t;
    p->n[dev] = i + 1;
}

static void make_plan(plan_t *p, uint64_t seed, int ntransfers)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int d = 0; d < NDEV; d++)
        p->n[d] = 0;
    for (int x = 0; x < ntransfers; x++) {
        int a = (int)(rng_next(&s) % NDEV), b = (int)(rng_next(&s) % NDEV);
        if (a == b || p->n[a] + 2 > 2 * MAXT || p->n[b] + 2 > 2 * MAXT)
            continue;
        uint64_t bytes = (1 + rng_next(&s) % 4) * 250000;
        hccn_sim_key_t key = {7, 0, (uint64_t)x};
        add(p, a, (hccn_sim_task_t){.kind = HCCN_SIM_TASK_SEND, .peer = b,
                                    .bytes = bytes, .key = key}, &s);
        add(p, b, (hccn_sim_task_t){.kind = HCCN_SIM_TASK_RECV, .peer = a,
                                    .bytes = bytes, .key = key,
                                    .cost = rng_next(&s) % 2 ? 1e-4 : 0.0},
            &s);
    }
}

/* Runs plan p with the solver (mode 0; mode 2: the tournament on every
 * component) or its reference (mode 1); every task's end into ends.
 * Returns the engine's count of deferred starts and of closed bursts,
 * of links made slack and found bound again, and of radix sorts. */
static void run(const hccn_sim_topo_t *topo, const plan_t *p, int mode,
                double ends[NDEV][2 * MAXT], long *joined, long *broken,
                long slack[3])
{
    hccn_sim_engine_t *eng = hccn_sim_engine_create(topo, 0.0);
    assert_non_null(eng);
    hccn_sim_engine_set_reference(eng, mode == 1);
    if (mode == 2)
        eng->tree_links = 2;
    hccn_sim_batch_t *b[NDEV];
    for (int d = 0; d < NDEV; d++) {
        b[d] = hccn_sim_post(eng, d, p->t[d], p->n[d], p->deps[d], NULL);
        assert_non_null(b[d]);
    }
    hccn_sim_finish_all(eng);
    for (int d = 0; d < NDEV; d++) {
        assert_true(hccn_sim_batch_done(eng, b[d]));
        for (int i = 0; i < p->n[d]; i++)
            ends[d][i] = hccn_sim_task_end(b[d], i);
    }
    *joined = eng->burst_starts;
    *broken = eng->burst_breaks;
    slack[0] = eng->slack_made;
    slack[1] = eng->slack_undone;
    slack[2] = eng->radix_sorts;
    hccn_sim_engine_destroy(eng);
}

static void compare(const char *json, const char *name)
{
    char err[512];
    hccn_sim_topo_t *topo = NULL;
    if (hccn_sim_topo_load_string(json, name, &topo, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    static plan_t p;
    static double on[NDEV][2 * MAXT], off[NDEV][2 * MAXT],
        tree[NDEV][2 * MAXT];
    long joined = 0, broken = 0, made = 0, undone = 0, radix = 0;
    for (uint64_t seed = 1; seed <= 500; seed++) {
        make_plan(&p, seed, 20 + (int)(seed % 6) * 30);
        long j, k, j0, k0, j2, k2, s[3], s0[3], s2[3];
        run(topo, &p, 0, on, &j, &k, s);
        run(topo, &p, 1, off, &j0, &k0, s0);
        run(topo, &p, 2, tree, &j2, &k2, s2);
        assert_true(j0 == 0 && k0 == 0 && j2 == j && k2 == k);
        assert_true(s0[0] == 0 && s0[1] == 0 && s0[2] == 0);
        joined += j;
        broken += k;
        made += s[0];
        undone += s[1];
        radix += s[2];
        for (int d = 0; d < NDEV; d++)
            for (int i = 0; i < p.n[d]; i++)
                if (!(on[d][i] == off[d][i]) || !(tree[d][i] == off[d][i]))
                    fail_msg("%s, seed %llu: NPU %d task %d ends at %.17g "
                             "s (%.17g s with the tournament), %.17g s with "
                             "the reference solver", name,
                             (unsigned long long)seed, d, i, on[d][i],
                             tree[d][i], off[d][i]);
    }
    /* Both paths were taken, many times. */
    if (joined < 1000 || broken < 20)
        fail_msg("%s: bursts barely exercised: %ld starts deferred, %ld "
                 "bursts closed early", name, joined, broken);
    if (made < 1000 || undone < 100)
        fail_msg("%s: slack links barely exercised: %ld made slack, %ld "
                 "found bound again", name, made, undone);
    if (radix < 100)
        fail_msg("%s: the radix sort barely exercised: %ld components",
                 name, radix);
    hccn_sim_topo_free(topo);
}

static void test_equals_reference(void **state)
{
    (void)state;
    for (int t = 0; t < 2; t++)
        compare(topos[t], t ? "mesh" : "switch");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equals_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
