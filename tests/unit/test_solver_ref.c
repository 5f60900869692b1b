/*
 * The rate solver against its reference (hccn_sim_engine_set_reference):
 * the changes of one instant (drains, starts) re-rated once, when the
 * instant's events are done (device_sim/flow_comp.c, Bursts), against a
 * re-rating after every change. The times must be the same bits: a
 * flow's rate changed by one re-rating and given back by a later one at
 * the same instant must keep its bytes left and drain time as they were
 * (flow.c), which the reference must do often.
 *
 * Random sets of transfers on two topologies of two nodes of 8 NPUs:
 * a switch fabric with four NPUs behind each of two NICs, so that flows
 * share links in long chains (one component per node and across them);
 * and a full mesh (a link per NPU pair) with a NIC per NPU, many links
 * of one flow or a few, so that progressive filling takes many rounds.
 * Sizes and delays come from a few values, so that many transfers start
 * at one instant (bursts), drain at one instant, tie for the smallest
 * share, and start and drain while others are in flight (a drain and
 * the starts it lets go at one instant, each changing the rates of the
 * flows around them). Every task's end is
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
 * (flow_comp.c, Slack links): both must be taken many times. Pipelines
 * (chunk after chunk between pairs of NPUs) make bursts whose starts take
 * the places of their drains, which the solver re-rates by keeping the
 * drains' rates (device_sim/flow_swap.c) where that keeps the links'
 * order; test_swap_keeps_order builds the case where it does not.
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

/* Pipelines: a few pairs, each sending chunk after chunk (a chunk's
 * send waits for the one before; its receive is posted up front), in
 * turn, so that a chunk starts at the instant the one before it drains,
 * on the same links into the same NPU (a swap: device_sim/flow_swap.c),
 * and where pairs into one NPU interleave their receives, a swap would
 * change the order of that NPU's flows (refilled instead). */
static void make_pipes(plan_t *p, uint64_t seed)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 7;
    int np = 3 + (int)(rng_next(&s) % 6), k = 3 + (int)(rng_next(&s) % 4);
    int pa[8], pb[8], last[8];
    uint64_t bytes[8], x = 0;
    for (int d = 0; d < NDEV; d++)
        p->n[d] = 0;
    for (int q = 0; q < np; q++) {
        pa[q] = (int)(rng_next(&s) % NDEV);
        pb[q] = (pa[q] + 1 + (int)(rng_next(&s) % (NDEV - 1))) % NDEV;
        bytes[q] = (1 + rng_next(&s) % 2) * 250000;
        last[q] = -1;
    }
    for (int j = 0; j < k; j++)
        for (int q = 0; q < np; q++) {
            int a = pa[q], b = pb[q], i = p->n[a];
            if (i + 1 > 2 * MAXT || p->n[b] + 1 > 2 * MAXT)
                continue;
            hccn_sim_key_t key = {7, 0, x++};
            hccn_sim_task_t t = {.kind = HCCN_SIM_TASK_SEND, .peer = b,
                                 .bytes = bytes[q], .key = key};
            if (last[q] >= 0) {
                p->deps[a][i] = (uint32_t)last[q];
                t.dep_off = (uint32_t)i;
                t.ndeps = 1;
            }
            p->t[a][i] = t;
            p->n[a] = i + 1;
            last[q] = i;
            p->t[b][p->n[b]++] = (hccn_sim_task_t){
                .kind = HCCN_SIM_TASK_RECV, .peer = a, .bytes = bytes[q],
                .key = key};
        }
}

/* Runs plan p with the solver (mode 0; mode 2: the tournament on every
 * component) or its reference (mode 1); every task's end into ends.
 * Counts into c the engine's deferred starts and drains, rates given
 * back within an instant, links made slack and found bound again, radix
 * sorts, bursts re-rated as swaps, and bursts of drains that re-rated
 * no one. */
enum { C_STARTS, C_REAPS, C_RESTORES, C_SLACK, C_BOUND, C_RADIX, C_SWAPS,
       C_FREES, NC };

static void run(const hccn_sim_topo_t *topo, const plan_t *p, int mode,
                double ends[NDEV][2 * MAXT], long c[NC])
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
    c[C_STARTS] = eng->burst_starts;
    c[C_REAPS] = eng->burst_reaps;
    c[C_RESTORES] = eng->rate_restores;
    c[C_SLACK] = eng->slack_made;
    c[C_BOUND] = eng->slack_undone;
    c[C_RADIX] = eng->radix_sorts;
    c[C_SWAPS] = eng->swaps;
    c[C_FREES] = eng->frees;
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
    long sum[NC] = {0}, ref_restores = 0;
    for (uint64_t seed = 1; seed <= 700; seed++) {
        if (seed <= 500)
            make_plan(&p, seed, 20 + (int)(seed % 6) * 30);
        else
            make_pipes(&p, seed);
        long c[NC], c0[NC], c2[NC];
        run(topo, &p, 0, on, c);
        run(topo, &p, 1, off, c0);
        run(topo, &p, 2, tree, c2);
        /* The reference defers nothing and keeps no link slack; the
         * tournament defers what the scan does. */
        assert_true(c0[C_STARTS] == 0 && c0[C_REAPS] == 0);
        assert_true(c0[C_SLACK] == 0 && c0[C_BOUND] == 0 &&
                    c0[C_RADIX] == 0 && c0[C_SWAPS] == 0 &&
                    c0[C_FREES] == 0);
        assert_true(c2[C_STARTS] == c[C_STARTS] &&
                    c2[C_REAPS] == c[C_REAPS]);
        for (int k = 0; k < NC; k++)
            sum[k] += c[k];
        ref_restores += c0[C_RESTORES];
        for (int d = 0; d < NDEV; d++)
            for (int i = 0; i < p.n[d]; i++)
                if (!(on[d][i] == off[d][i]) || !(tree[d][i] == off[d][i]))
                    fail_msg("%s, seed %llu: NPU %d task %d ends at %.17g "
                             "s (%.17g s with the tournament), %.17g s with "
                             "the reference solver", name,
                             (unsigned long long)seed, d, i, on[d][i],
                             tree[d][i], off[d][i]);
    }
    /* Every path was taken, many times. */
    if (sum[C_STARTS] < 1000 || sum[C_REAPS] < 1000 || ref_restores < 100)
        fail_msg("%s: instants barely exercised: %ld starts and %ld drains "
                 "deferred, %ld rates given back by the reference", name,
                 sum[C_STARTS], sum[C_REAPS], ref_restores);
    if (sum[C_SLACK] < 1000 || sum[C_BOUND] < 100)
        fail_msg("%s: slack links barely exercised: %ld made slack, %ld "
                 "found bound again", name, sum[C_SLACK], sum[C_BOUND]);
    if (sum[C_RADIX] < 100)
        fail_msg("%s: the radix sort barely exercised: %ld components",
                 name, sum[C_RADIX]);
    if (sum[C_SWAPS] < 500)
        fail_msg("%s: swaps barely exercised: %ld bursts", name,
                 sum[C_SWAPS]);
    if (sum[C_FREES] < 500)
        fail_msg("%s: drains that free no one barely exercised: %ld bursts",
                 name, sum[C_FREES]);
    hccn_sim_topo_free(topo);
}

static void test_equals_reference(void **state)
{
    (void)state;
    for (int t = 0; t < 2; t++)
        compare(topos[t], t ? "mesh" : "switch");
}

/* A swap that would reorder the links (device_sim/flow_swap.c). Inside
 * node 1 (a switch, 1 GB/s each way per NPU), NPU 8 receives a pipeline
 * from NPU 10 (chunk 1 small; chunk 2 sent when it has drained) and, at
 * once, flows from NPUs 9 and 11, while NPU 9 sends to NPUs 12 and 13
 * too. NPU 8's link from the switch and NPU 9's to it carry three flows
 * each, 9 -> 8 on both: they tie at a third of 1e9, and the one picked
 * first gives its flows 1e9 / 3 and leaves the other's two
 * (1e9 - 1e9 / 3) / 2, a unit in the last place more. Which is first
 * follows the links' first flows (device_sim/fill.c): NPU 8's link while
 * chunk 1, received before 9 -> 8, is on it. Where chunk 2 is received
 * after 9 -> 8 (pos 2), 9 -> 8 is the first flow of both links once chunk
 * 1 has drained, and NPU 9's link, earlier on its route, is first: chunk 2
 * and 11 -> 8 take the larger share, as a refill gives, not a swap.
 * Where chunk 2 is received before 9 -> 8 (pos 0), the order stays and
 * chunk 2 takes chunk 1's rate: a swap. */
static void pipe_past(plan_t *p, int pos)
{
    static const int from[4] = {10, 9, 10, 11};
    static const uint64_t bytes[4] = {10000, 4000000, 4000000, 4000000};
    int order[4] = {0, 1, 2, 3};
    for (int d = 0; d < NDEV; d++)
        p->n[d] = 0;
    if (pos == 0) {             /* chunk 2's receive before 9 -> 8's */
        order[1] = 2;
        order[2] = 1;
    }
    for (int j = 0; j < 4; j++) {
        int x = order[j], a = from[x];
        hccn_sim_key_t key = {9, 0, (uint64_t)x};
        hccn_sim_task_t t = {.kind = HCCN_SIM_TASK_SEND, .peer = 8,
                             .bytes = bytes[x], .key = key};
        if (x == 2) {           /* chunk 2 waits for chunk 1's send */
            p->deps[a][p->n[a]] = 0;
            t.dep_off = (uint32_t)p->n[a];
            t.ndeps = 1;
        }
        p->t[a][p->n[a]++] = t;
        p->t[8][p->n[8]++] = (hccn_sim_task_t){
            .kind = HCCN_SIM_TASK_RECV, .peer = a, .bytes = bytes[x],
            .key = key};
    }
    for (int b = 12; b <= 13; b++) {    /* NPU 9's other two flows */
        hccn_sim_key_t key = {9, 1, (uint64_t)b};
        p->t[9][p->n[9]++] = (hccn_sim_task_t){
            .kind = HCCN_SIM_TASK_SEND, .peer = b, .bytes = 4000000,
            .key = key};
        p->t[b][p->n[b]++] = (hccn_sim_task_t){
            .kind = HCCN_SIM_TASK_RECV, .peer = 9, .bytes = 4000000,
            .key = key};
    }
}

static void test_swap_keeps_order(void **state)
{
    (void)state;
    char err[512];
    hccn_sim_topo_t *topo = NULL;
    if (hccn_sim_topo_load_string(topos[0], "switch", &topo, err,
                                  sizeof(err)) != 0)
        fail_msg("%s", err);
    static plan_t p;
    static double on[NDEV][2 * MAXT], off[NDEV][2 * MAXT];
    double chunk2[2];
    for (int pos = 0; pos <= 2; pos += 2) {
        long c[NC], c0[NC];
        pipe_past(&p, pos);
        run(topo, &p, 0, on, c);
        run(topo, &p, 1, off, c0);
        for (int d = 0; d < NDEV; d++)
            for (int i = 0; i < p.n[d]; i++)
                if (!(on[d][i] == off[d][i]))
                    fail_msg("pos %d: NPU %d task %d ends at %.17g s, "
                             "%.17g s with the reference", pos, d, i,
                             on[d][i], off[d][i]);
        assert_int_equal(c[C_SWAPS], pos == 0 ? 1 : 0);
        chunk2[pos / 2] = off[8][pos == 0 ? 1 : 2];   /* its receive */
    }
    /* The tie broke the other way: chunk 2 took the larger share. */
    assert_true(chunk2[1] < chunk2[0]);
    hccn_sim_topo_free(topo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equals_reference),
        cmocka_unit_test(test_swap_keeps_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
