/*
 * Folding onto node 0 (docs/performance.md): the topology's copies
 * (hccn_sim_topo_fold), a folded engine against the same transfers run on
 * every node, and the schedule check (hierarchy/fold.h) on schedules built by
 * hand: ones that fold although their steps come in another order, and
 * ones that must not (a step the copy lacks, work in another order, a
 * transfer that joins other steps).
 *
 * Three nodes of two NPUs; each NPU has its own NIC of B = 1 GB/s to one
 * switch, so a transfer between nodes crosses the sender's NIC uplink and
 * the receiver's NIC downlink.
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

#include "device_sim/engine.h"
#include "hierarchy/coll.h"
#include "hierarchy/fold.h"

#define NB 1000000.0            /* bytes of one transfer */

static const char *const three =
    "{\"version\": 1, \"node_types\": [{\"count\": 3,"
    " \"npu\": {\"count\": 2, \"arena_MiB\": 16, \"reduce_bw_GBps\": 100},"
    " \"fabric\": {\"type\": \"mesh\", \"bw_GBps\": 50, \"lat_us\": 1},"
    " \"nics\": {\"count\": 2, \"bw_GBps\": 1, \"lat_us\": 2}}],"
    " \"network\": {\"type\": \"switch\", \"lat_us\": 1}}";

static hccn_sim_topo_t *load(void)
{
    hccn_sim_topo_t *topo = NULL;
    char err[512];
    if (hccn_sim_topo_load_string(three, "three", &topo, err,
                                  sizeof(err)) != 0)
        fail_msg("%s", err);
    return topo;
}

/* s with every "node<n>." made "node0.". */
static void to_node0(const char *s, char *out, size_t len)
{
    size_t o = 0;
    while (*s != '\0' && o + 1 < len) {
        if (strncmp(s, "node", 4) == 0 && s[4] >= '0' && s[4] <= '9') {
            const char *p = s + 4;
            while (*p >= '0' && *p <= '9')
                p++;
            if (*p == '.' && o + 6 < len) {
                memcpy(out + o, "node0", 5);
                o += 5;
                s = p;
                continue;
            }
        }
        out[o++] = *s++;
    }
    out[o] = '\0';
}

/* Every NPU's copy is the NPU of its local index in node 0; every link of
 * a node, the link of node 0 between the same devices' copies; the
 * network's links map to themselves. */
static void test_topo_copies(void **state)
{
    (void)state;
    hccn_sim_topo_t *topo = load();
    int rep[6], *map = malloc((size_t)topo->nlinks * sizeof(int));
    double *div = malloc((size_t)topo->nlinks * sizeof(double));
    char why[128];
    assert_non_null(map);
    assert_non_null(div);
    assert_int_equal(hccn_sim_topo_fold(topo, rep, map, div, why,
                                        sizeof(why)), 0);
    for (int r = 0; r < 6; r++)
        assert_int_equal(rep[r], r % 2);
    int mapped = 0;
    for (int l = 0; l < topo->nlinks; l++) {
        const hccn_sim_link_t *k = &topo->links[l];
        char name[256], want[256];
        snprintf(name, sizeof(name), "%s->%s", topo->devs[k->src].name,
                 topo->devs[k->dst].name);
        to_node0(name, want, sizeof(want));
        int w = hccn_sim_topo_find_link(topo, want);
        if (w < 0)
            fail_msg("%s: no link %s", name, want);
        if (map[l] != w)
            fail_msg("%s maps to link %d, want %s (%d)", name, map[l], want,
                     w);
        mapped += map[l] != l;
        assert_true(div[l] == 1.0);     /* one switch: no link shared */
    }
    /* Nodes 1 and 2: 2 mesh links, 2 x 2 NPU-NIC links, 2 x 2 NIC-switch
     * links each. */
    assert_int_equal(mapped, 2 * (2 + 4 + 4));
    free(map);
    free(div);
    hccn_sim_topo_free(topo);
}

/* A fat tree of 8 one-NPU nodes (NICs 10 GB/s), 2 per leaf (uplinks
 * 2:1), 2 leaves per tier-1 switch, under the core; or n nodes, 3 per
 * leaf. */
static hccn_sim_topo_t *load_tree(int n, int per_leaf)
{
    char json[1024], err[512];
    hccn_sim_topo_t *topo = NULL;
    snprintf(json, sizeof(json),
             "{\"version\": 1, \"node_types\": [{\"count\": %d,"
             " \"npu\": {\"count\": 1, \"arena_MiB\": 16,"
             " \"reduce_bw_GBps\": 100},"
             " \"nics\": {\"count\": 1, \"bw_GBps\": 10, \"lat_us\": 2}}],"
             " \"network\": {\"type\": \"fat_tree\", \"lat_us\": 1,"
             " \"levels\": [{\"children\": %d, \"oversubscription\": 2},"
             " {\"children\": 2}]}}", n, per_leaf);
    if (hccn_sim_topo_load_string(json, "tree", &topo, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    return topo;
}

/* Link SRC->DST's copy and share. */
static void assert_copy(const hccn_sim_topo_t *t, const int *map,
                        const double *div, const char *link,
                        const char *copy, double share)
{
    int l = hccn_sim_topo_find_link(t, link);
    int c = hccn_sim_topo_find_link(t, copy);
    assert_true(l >= 0 && c >= 0);
    if (map[l] != c || div[l] != share)
        fail_msg("%s: copy %d (want %s, %d), shared by %g (want %g)", link,
                 map[l], copy, c, div[l], share);
}

/* Every uplink of the tree maps onto that of node 0's switch of its tier,
 * shared by the nodes under it; how far apart NPUs are counts the tiers
 * climbed; a leaf that holds fewer nodes is refused, named. Then the fold
 * onto every leaf's first node, on a tree that node 0's does not fold. */
static void test_topo_tree(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load_tree(8, 2);
    int nlinks = t->nlinks;
    int rep[8], *map = malloc((size_t)t->nlinks * sizeof(int));
    double *div = malloc((size_t)t->nlinks * sizeof(double));
    char why[128];
    assert_true(map != NULL && div != NULL);
    assert_int_equal(hccn_sim_topo_fold(t, rep, map, div, why, sizeof(why)),
                     0);
    for (int r = 0; r < 8; r++)
        assert_int_equal(rep[r], 0);
    assert_copy(t, map, div, "node5.nic0->leaf2", "node0.nic0->leaf0", 1.0);
    assert_copy(t, map, div, "leaf0->node0.nic0", "leaf0->node0.nic0", 1.0);
    assert_copy(t, map, div, "leaf0->tier1.0", "leaf0->tier1.0", 2.0);
    assert_copy(t, map, div, "leaf3->tier1.1", "leaf0->tier1.0", 2.0);
    assert_copy(t, map, div, "tier1.1->leaf2", "tier1.0->leaf0", 2.0);
    assert_copy(t, map, div, "tier1.1->core", "tier1.0->core", 4.0);
    assert_copy(t, map, div, "core->tier1.1", "core->tier1.0", 4.0);
    static const int apart[8] = {0, 1, 2, 2, 3, 3, 3, 3};
    for (int b = 0; b < 8; b++) {
        assert_int_equal(hccn_sim_topo_apart(t, 0, b), apart[b]);
        assert_int_equal(hccn_sim_topo_apart(t, 7, 7 ^ b), apart[b]);
    }
    hccn_sim_topo_free(t);
    t = load_tree(5, 3);    /* leaf1 holds 2 */
    assert_int_equal(hccn_sim_topo_fold(t, rep, map, div, why, sizeof(why)),
                     -1);
    assert_string_equal(why, "leaf1: 2 nodes below, leaf0: 3");
    hccn_sim_topo_free(t);
    /* Six nodes, 2 per leaf: the tier-1 switches hold 4 nodes and 2, so
     * node 0 is no copy of every node; each node is one of its leaf's
     * first (hccn_sim_topo_fold_leaves): its own links map onto that
     * node's, every link above the nodes onto itself, shared by the 2
     * nodes of a leaf. Leaves that hold different counts are refused. */
    t = load_tree(6, 2);
    assert_true(t->nlinks <= nlinks);
    assert_int_equal(hccn_sim_topo_fold(t, rep, map, div, why, sizeof(why)),
                     -1);
    assert_int_equal(hccn_sim_topo_fold_leaves(t, rep, map, div, why,
                                               sizeof(why)), 0);
    static const int want[6] = {0, 0, 2, 2, 4, 4};
    for (int r = 0; r < 6; r++)
        assert_int_equal(rep[r], want[r]);
    assert_copy(t, map, div, "node1.nic0->leaf0", "node0.nic0->leaf0", 1.0);
    assert_copy(t, map, div, "leaf0->node1.nic0", "leaf0->node0.nic0", 1.0);
    assert_copy(t, map, div, "node5.nic0->leaf2", "node4.nic0->leaf2", 1.0);
    assert_copy(t, map, div, "node4.nic0->leaf2", "node4.nic0->leaf2", 1.0);
    assert_copy(t, map, div, "leaf1->tier1.0", "leaf1->tier1.0", 2.0);
    assert_copy(t, map, div, "tier1.0->leaf1", "tier1.0->leaf1", 2.0);
    assert_copy(t, map, div, "tier1.1->core", "tier1.1->core", 2.0);
    assert_copy(t, map, div, "core->tier1.0", "core->tier1.0", 2.0);
    hccn_sim_topo_free(t);
    t = load_tree(5, 2);    /* leaf2 holds 1 */
    assert_int_equal(hccn_sim_topo_fold_leaves(t, rep, map, div, why,
                                               sizeof(why)), -1);
    assert_string_equal(why, "leaf 2 holds 1 node, leaf 0 2");
    hccn_sim_topo_free(t);
    free(map);
    free(div);
}

static hccn_sim_task_t xfer(hccn_sim_task_kind_t kind, int peer, uint64_t id)
{
    return (hccn_sim_task_t){.kind = kind, .peer = peer,
                             .bytes = (uint64_t)NB, .key = {1, 0, id}};
}

/* On every node n: (n,0) sends to (n+1,1) and (n,1) to (n+2,1), so the
 * NIC downlink of every (m,1) carries two transfers at B/2 each. Folded,
 * node 0 sends its two, and receives them as their copies: from (2,0) and
 * from (1,1); both receives must share (0,1)'s downlink as the real ones
 * share theirs, and end when the run on all nodes ends them. */
static void test_engine(void **state)
{
    (void)state;
    hccn_sim_topo_t *topo = load();
    int rep[6], *map = malloc((size_t)topo->nlinks * sizeof(int));
    double *div = malloc((size_t)topo->nlinks * sizeof(double));
    assert_non_null(map);
    assert_non_null(div);
    assert_int_equal(hccn_sim_topo_fold(topo, rep, map, div, NULL, 0), 0);
    double end[2][6];
    for (int fold = 0; fold < 2; fold++) {
        hccn_sim_engine_t *eng = hccn_sim_engine_create(topo, 0.0);
        assert_non_null(eng);
        if (fold) {
            assert_int_equal(hccn_sim_engine_set_fold(eng, rep, map, div), 0);
            for (int d = 2; d < 6; d++)
                hccn_sim_finish(eng, d);
        }
        hccn_sim_batch_t *b[6] = {0};
        for (int n = 0; n < (fold ? 1 : 3); n++) {
            int a = 2 * n, c = 2 * n + 1;
            int to0 = 2 * ((n + 1) % 3) + 1, to1 = 2 * ((n + 2) % 3) + 1;
            int from0 = 2 * ((n + 2) % 3), from1 = 2 * ((n + 1) % 3) + 1;
            /* Keys: folded, the sender's copy and step; else the sender. */
            uint64_t k0 = fold ? 0 : (uint64_t)a, k1 = fold ? 1 : (uint64_t)c;
            uint64_t j0 = fold ? 0 : (uint64_t)from0;
            uint64_t j1 = fold ? 1 : (uint64_t)from1;
            hccn_sim_task_t ta[] = {xfer(HCCN_SIM_TASK_SEND, to0, k0)};
            hccn_sim_task_t tc[] = {xfer(HCCN_SIM_TASK_SEND, to1, k1),
                                    xfer(HCCN_SIM_TASK_RECV, from0, j0),
                                    xfer(HCCN_SIM_TASK_RECV, from1, j1)};
            b[a] = hccn_sim_post(eng, a, ta, 1, NULL, NULL);
            b[c] = hccn_sim_post(eng, c, tc, 3, NULL, NULL);
            assert_true(b[a] != NULL && b[c] != NULL);
        }
        hccn_sim_finish_all(eng);
        for (int d = 0; d < (fold ? 2 : 6); d++) {
            assert_true(hccn_sim_batch_done(eng, b[d]));
            end[fold][d] = hccn_sim_batch_end(b[d]);
        }
        hccn_sim_engine_destroy(eng);
    }
    double lat;
    int links[HCCN_SIM_ROUTE_MAX];
    assert_int_equal(hccn_sim_topo_route(topo, 0, 3, links, &lat), 4);
    /* Two transfers share each downlink: 2 NB at B; a SEND ends when its
     * bytes have left, the RECV the route's latency later. */
    for (int d = 0; d < 6; d++) {
        double want = 2.0 * NB / 1e9 + (d % 2 ? lat : 0.0);
        if (fabs(end[0][d] - want) > 1e-12 * want)
            fail_msg("device %d: %.17g s, want %.17g s", d, end[0][d], want);
    }
    for (int d = 0; d < 2; d++)
        if (end[1][d] != end[0][d])
            fail_msg("folded device %d: %.17g s, all nodes %.17g s", d,
                     end[1][d], end[0][d]);
    free(map);
    free(div);
    hccn_sim_topo_free(topo);
}

/* ---------------------------------------------------- the schedule check */

/* 0: s folds; 1: it does not, why holding `want` (host_order: as
 * hccn_sched_fold_check's). */
static void check_order(const hccn_sched_t *s, int host_order, int folds,
                        const char *want);

static void check(const hccn_sched_t *s, int folds, const char *want)
{
    check_order(s, 0, folds, want);
}

static void check_order(const hccn_sched_t *s, int host_order, int folds,
                        const char *want)
{
    hccn_sim_topo_t *topo = load();
    int world[6] = {0, 1, 2, 3, 4, 5}, rep[6] = {0, 1, 0, 1, 0, 1};
    hccn_sched_npus_t arg = {s, topo->npus, world};
    hccn_sched_fold_t f;
    char why[128] = "";
    int rc = hccn_sched_fold_check(s, topo->npus, NULL, rep, host_order,
                                   hccn_sched_npu_tasks, &arg, &f, why,
                                   sizeof(why));
    if (folds) {
        if (rc != 0)
            fail_msg("does not fold: %s", why);
        /* Node 0's RECVs are keyed by their transfer's SEND's copy. */
        for (uint32_t x = 0; x < s->nxfers; x++) {
            hccn_sched_ref_t a = s->xfer_send[x], b = s->xfer_recv[x];
            if (a.rank < 2 && b.rank < 2)
                assert_true(f.recv_key[b.rank][b.step] ==
                            hccn_sched_fold_key(a.rank, a.step));
        }
        hccn_sched_fold_free(&f);
    } else {
        assert_int_equal(rc, 1);
        if (strstr(why, want) == NULL)
            fail_msg("'%s' does not say '%s'", why, want);
    }
    hccn_sim_topo_free(topo);
}

static void step(hccn_sched_t *s, int rank, int kind, uint64_t bytes,
                 const uint32_t *deps, uint32_t ndeps)
{
    hccn_sched_local(s, rank, kind == HCCN_STEP_REDUCE, HCCN_BUF_SEND, 0,
                     HCCN_BUF_RECV, 0, bytes, deps, ndeps);
}

/* A ring across the nodes on each local index, built node by node: node
 * 0's NPUs get their SEND first, the others their RECV first; then each
 * NPU reduces what it received. Folds. Then with node 2's reduction of a
 * different size: a step its copy has not. */
static void test_ring_folds(void **state)
{
    (void)state;
    for (int broken = 0; broken < 2; broken++) {
        hccn_sched_t *s = hccn_sched_new(6, "ring");
        uint32_t sent[6], got[6];
        for (int n = 0; n < 3; n++)
            for (int l = 0; l < 2; l++) {
                int a = 2 * n + l, b = 2 * ((n + 1) % 3) + l;
                hccn_sched_xfer(s, a, HCCN_BUF_SEND, 0, NULL, 0, b,
                                HCCN_BUF_SCRATCH, 0, NULL, 0, 4096, 0,
                                HCCN_BUF_SEND, 0, &sent[a], &got[b]);
            }
        for (int r = 0; r < 6; r++) {
            uint32_t deps[] = {sent[r], got[r]};
            step(s, r, HCCN_STEP_REDUCE, broken && r >= 4 ? 2048 : 4096,
                 deps, 2);
        }
        assert_false(s->failed);
        check(s, !broken, "a step its copy has not");
        hccn_sched_free(s);
    }
}

/* Two reductions nothing orders, of different sizes: node 0 queues the
 * big one first, node 1 the small one. The NPU runs them first come, first
 * served (ties by step index), so node 1 does not run as node 0. */
static void test_work_order(void **state)
{
    (void)state;
    hccn_sched_t *s = hccn_sched_new(6, "work");
    for (int r = 0; r < 6; r++) {
        int swap = r == 2 || r == 3;
        step(s, r, HCCN_STEP_REDUCE, swap ? 1024 : 8192, NULL, 0);
        step(s, r, HCCN_STEP_REDUCE, swap ? 8192 : 1024, NULL, 0);
    }
    check(s, 0, "the order of its work");
    hccn_sched_free(s);
}

/* Three reductions a rank: 1 KiB and 8 KiB, then 2 KiB after some of
 * them. Node 1's third waits for the same steps listed in another order:
 * it folds (a step's dependencies are a set). Then it waits for the 8 KiB
 * one where the others wait for the 1 KiB one: refused. */
static void test_dependencies(void **state)
{
    (void)state;
    static const uint32_t both[] = {0, 1}, swapped[] = {1, 0};
    static const uint32_t first[] = {0}, second[] = {1};
    for (int broken = 0; broken < 2; broken++) {
        hccn_sched_t *s = hccn_sched_new(6, "deps");
        for (int r = 0; r < 6; r++) {
            int odd = r / 2 == 1;
            step(s, r, HCCN_STEP_REDUCE, 1024, NULL, 0);
            step(s, r, HCCN_STEP_REDUCE, 8192, NULL, 0);
            if (broken)
                step(s, r, HCCN_STEP_REDUCE, 2048, odd ? second : first, 1);
            else
                step(s, r, HCCN_STEP_REDUCE, 2048, odd ? swapped : both, 2);
        }
        assert_false(s->failed);
        check(s, !broken, "dependencies");
        hccn_sched_free(s);
    }
}

/* Every NPU of local index 0 sends 4 KiB to the next node and 8 KiB to
 * the one after; node 1's NPU posts the 8 KiB one first. It folds, but
 * not where each host takes its messages in turn (a time per message,
 * device_sim/software.h): node 1's would leave in the other order. */
static void test_message_order(void **state)
{
    (void)state;
    hccn_sched_t *s = hccn_sched_new(6, "messages");
    for (int n = 0; n < 3; n++)
        for (int j = 0; j < 2; j++) {
            int k = n == 1 ? 2 - j : 1 + j;
            hccn_sched_xfer(s, 2 * n, HCCN_BUF_SEND, 0, NULL, 0,
                            2 * ((n + k) % 3), HCCN_BUF_SCRATCH,
                            (uint64_t)(k - 1) * 4096, NULL, 0,
                            (uint64_t)k * 4096, 0, HCCN_BUF_SEND, 0, NULL,
                            NULL);
        }
    assert_false(s->failed);
    check_order(s, 0, 1, NULL);
    check_order(s, 1, 0, "the order of its messages");
    hccn_sched_free(s);
}

/* Every NPU of local index 0 sends one message to each of the next two
 * nodes and receives one from each; node 0's and node 2's receives come
 * in the order of their senders, node 1's the other way round, so node 1's
 * first SEND joins a RECV whose copy in node 0 is joined by the other
 * SEND. */
static void test_pairing(void **state)
{
    (void)state;
    hccn_sched_t *s = hccn_sched_new(6, "pairs");
    /* Sends first (their RECVs are set below, by hand). */
    s->xfer_send = calloc(6, sizeof(*s->xfer_send));
    s->xfer_recv = calloc(6, sizeof(*s->xfer_recv));
    assert_true(s->xfer_send != NULL && s->xfer_recv != NULL);
    s->capxfers = s->nxfers = 6;
    s->scratch_bytes = 4096;
    for (int n = 0; n < 3; n++)
        for (int k = 1; k <= 2; k++) {
            uint32_t x = (uint32_t)(2 * n + k - 1);
            int to = 2 * ((n + k) % 3);
            hccn_step_t st = {.kind = HCCN_STEP_SEND, .peer = to, .xfer = x,
                              .bytes = 4096};
            uint32_t i = hccn_sched_add(s, 2 * n, &st, NULL, 0);
            s->xfer_send[x] = (hccn_sched_ref_t){2 * n, i};
        }
    for (int n = 0; n < 3; n++)
        for (int j = 0; j < 2; j++) {
            /* From the node k back: k = 1 then 2, except on node 1. */
            int k = n == 1 ? 2 - j : 1 + j;
            int from = (n - k + 3) % 3;
            uint32_t x = (uint32_t)(2 * from + k - 1);
            hccn_step_t st = {.kind = HCCN_STEP_RECV, .dst_buf =
                              HCCN_BUF_SCRATCH, .peer = 2 * from, .xfer = x,
                              .bytes = 4096};
            uint32_t i = hccn_sched_add(s, 2 * n, &st, NULL, 0);
            s->xfer_recv[x] = (hccn_sched_ref_t){2 * n, i};
        }
    char why[128];
    if (hccn_sched_validate(s, why, sizeof(why)) != 0)
        fail_msg("%s", why);
    check(s, 0, "joins steps its copy does not");
    hccn_sched_free(s);
}

/* The hierarchical allreduces built for node 0 alone (coll.h, fold_rep):
 * node 0's steps are those of the whole schedule, field by field, and a
 * transfer from another node names the SEND the fold check of the whole
 * schedule finds as its copy. 8 nodes of 4 NPUs; counts with a tail that
 * does not split over the nodes, one that does, and several chunks. */
static void test_built_folded(void **state)
{
    (void)state;
    enum { N = 8, L = 4, P = N * L };
    int node[P], local[P], rep[P], world[P];
    hccn_sim_npu_t npus[P];
    for (int r = 0; r < P; r++) {
        node[r] = r / L;
        local[r] = r % L;
        rep[r] = r % L;
        world[r] = r;
        npus[r] = (hccn_sim_npu_t){.reduce_bw = 1e9, .mem_bw = 1e9,
                                   .node = r / L, .local = r % L};
    }
    hccn_hier_view_t view = {P, node, local, N, NULL, 0, 0, 0};
    const char *algos[] = {"hier", "hier_rr", "hier_mh"};
    const uint64_t counts[] = {4096 * 3 + 2, 4096 * 3 + 16, 1 << 20};
    int folded = 0;
    for (size_t k = 0; k < sizeof(algos) / sizeof(algos[0]); k++)
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
            hccn_coll_args_t a = {.coll = HCCN_COLL_ALLREDUCE, .nranks = P,
                                  .count = counts[c], .esize = 4,
                                  .view = &view, .chunk_bytes = 1 << 16};
            const hccn_algo_t *al = hccn_hier_algo_find(algos[k]);
            assert_non_null(al);
            hccn_sched_t *whole = al->build(&a);
            a.fold_rep = rep;
            a.fold_nrep = L;
            hccn_sched_t *part = al->build(&a);
            assert_true(whole != NULL && part != NULL);
            assert_false(whole->folded);
            /* Chunks are a multiple of L N elements, and a tail that does
             * not split over the N nodes is gathered (levels_allreduce.c):
             * every node's part is node 0's whatever the count. */
            if (!part->folded)
                fail_msg("%s count %llu was built whole", algos[k],
                         (unsigned long long)counts[c]);
            folded++;
            hccn_sched_fold_t f;
            char why[128];
            hccn_sched_npus_t x = {whole, npus, world};
            assert_int_equal(hccn_sched_fold_check(whole, npus, NULL, rep, 0,
                                                   hccn_sched_npu_tasks, &x,
                                                   &f, why, sizeof(why)), 0);
            for (int r = 0; r < L; r++) {
                const hccn_sched_rank_t *w = &whole->ranks[r];
                const hccn_sched_rank_t *q = &part->ranks[r];
                assert_int_equal(w->nsteps, q->nsteps);
                assert_int_equal(w->ndeps, q->ndeps);
                assert_memory_equal(w->deps, q->deps,
                                    w->ndeps * sizeof(*w->deps));
                for (uint32_t i = 0; i < w->nsteps; i++) {
                    hccn_step_t ws = w->steps[i], qs = q->steps[i];
                    assert_int_equal(ws.kind, qs.kind);
                    assert_int_equal(ws.peer, qs.peer);
                    assert_true(ws.bytes == qs.bytes &&
                                ws.src_off == qs.src_off &&
                                ws.dst_off == qs.dst_off &&
                                ws.src_buf == qs.src_buf &&
                                ws.dst_buf == qs.dst_buf &&
                                ws.dep_off == qs.dep_off &&
                                ws.ndeps == qs.ndeps);
                    if (qs.kind != HCCN_STEP_RECV &&
                        qs.kind != HCCN_STEP_RECV_REDUCE)
                        continue;
                    hccn_sched_ref_t s0 = part->xfer_send[qs.xfer];
                    if (hccn_sched_fold_key(s0.rank, s0.step) !=
                        f.recv_key[r][i])
                        fail_msg("%s count %llu: rank %d step %u names "
                                 "SEND %d/%u", algos[k],
                                 (unsigned long long)counts[c], r, i,
                                 s0.rank, s0.step);
                }
            }
            for (int r = L; r < P; r++)
                assert_int_equal(part->ranks[r].nsteps, 0);
            hccn_sched_fold_free(&f);
            hccn_sched_free(whole);
            hccn_sched_free(part);
        }
    assert_int_equal(folded, 9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_topo_copies),
        cmocka_unit_test(test_topo_tree),
        cmocka_unit_test(test_engine),
        cmocka_unit_test(test_ring_folds),
        cmocka_unit_test(test_work_order),
        cmocka_unit_test(test_dependencies),
        cmocka_unit_test(test_message_order),
        cmocka_unit_test(test_pairing),
        cmocka_unit_test(test_built_folded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
