/*
 * The cost model (hierarchy/cost.c): its predictions against the timing
 * engine's time for the same schedule, posted here independently of
 * cost.c (and once against a real run through the public API); the level
 * figures; the closed forms of docs/algorithms.md on an uncontended node;
 * link sharing at a NIC; "no prediction" for what it does not know; and a
 * 1024-NPU cluster priced without building schedules.
 *
 * The requirement checked on every config in configs/: for messages of
 * 1 MiB and more, the prediction for the algorithm the selector picks is
 * within 5 % of the engine's time, both as selection uses it (AUTO) and
 * from the closed forms alone (MODEL), which is what larger communicators
 * get; tree's closed form is held to 25 % and rings' to 35 %
 * (docs/selection.md says why).
 */
#include <dirent.h>
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
#include "device_sim/software.h"
#include "hccn/hccn.h"
#include "hccn/hccn_coll.h"
#include "hierarchy/cost.h"
#include "hierarchy/select.h"
#include "test_engine.h"
#include "test_util.h"

#define MIB ((uint64_t)1 << 20)

static hccn_sim_topo_t *load_text(const char *json, const char *name)
{
    char err[512];
    hccn_sim_topo_t *t = NULL;
    if (hccn_sim_topo_load_string(json, name, &t, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    return t;
}

static hccn_sim_topo_t *load(const char *rel)
{
    char err[512];
    hccn_sim_topo_t *t = NULL;
    if (hccn_sim_topo_load_file(test_path(rel), &t, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    return t;
}

static int *identity(int n, int first)
{
    int *w = malloc((size_t)n * sizeof(int));
    assert_non_null(w);
    for (int r = 0; r < n; r++)
        w[r] = first + r;
    return w;
}

/* ------------------------------------------------------- the reference --- */

static double reference(const hccn_algo_t *al, const hccn_coll_args_t *a,
                        const hccn_sim_topo_t *topo, const int *world)
{
    int node[64], local[64], pod[64];
    hccn_hier_view_t view;
    hccn_cost_place_t pl = {topo, world};
    hccn_coll_args_t args = *a;
    assert_true(a->nranks <= 64);
    assert_int_equal(hccn_hier_cost_view(&pl, a->nranks, node, local,
                                         &view),
                     0);
    assert_int_equal(hccn_hier_cost_pods(&pl, pod, &view), 0);
    args.view = &view;
    hccn_sched_t *s = hccn_hier_build(al, &args);
    assert_non_null(s);
    double t = test_engine_time(topo, s, world, NULL);
    hccn_sched_free(s);
    return t;
}

/* ---------------------------------------------- predictions vs engine --- */

static int is_block_coll(hccn_coll_t c)
{
    return c == HCCN_COLL_REDUCE_SCATTER || c == HCCN_COLL_ALLGATHER ||
           c == HCCN_COLL_ALLTOALL || c == HCCN_COLL_SCATTER ||
           c == HCCN_COLL_GATHER;
}

typedef struct {
    int cases;
    double worst_auto, worst_model;
    int failures;
} tally_t;

/* The selector's pick for bytes (hccn-perf's convention: the whole
 * message) on world[0..n), its predictions against the reference. */
static void check_case(const hccn_sim_topo_t *t, const int *world, int n,
                       hccn_coll_t coll, uint64_t bytes, tally_t *tl)
{
    hccn_coll_args_t a = {.coll = coll, .nranks = n, .count = bytes / 4,
                          .esize = 4, .root = n / 3};
    if (is_block_coll(coll))
        a.count /= (uint64_t)n;
    hccn_hier_select_in_t in = {t, world, NULL, NULL};
    hccn_cost_place_t pl = {t, world};
    char why[512];
    const hccn_algo_t *al = hccn_hier_select(&a, &in, why, sizeof(why),
                                             NULL, 0);
    if (al == NULL)
        fail_msg("%s %s: %s", t->name, hccn_coll_name(coll), why);
    int by_engine = 0;
    double ref = reference(al, &a, t, world);
    double pa = hccn_hier_cost(al, &a, &pl, HCCN_COST_AUTO, &by_engine);
    double pm = hccn_hier_cost(al, &a, &pl, HCCN_COST_MODEL, NULL);
    double ea = fabs(pa - ref) / ref, em = fabs(pm - ref) / ref;
    /* A host time per message (the mpi preset, docs/timing.md): the
     * forms approximate a root's staggered sends and leave it out where
     * they price a level's links apart from its latencies (hier_rr's
     * ring instances), 10 % off at 1 MiB. */
    double limit = strcmp(al->name, "tree") == 0    ? 0.25
                   : strcmp(al->name, "rings") == 0 ? 0.35
                   : hccn_sim_sw_host_order(t->sw)  ? 0.10
                                                    : 0.05;
    print_message("%-14s %3d ranks %-14s %10llu B  %-8s engine %11.2f us  "
                  "auto %+6.2f %%  model %+6.2f %%\n",
                  t->name, n, hccn_coll_name(coll),
                  (unsigned long long)bytes, al->name, ref * 1e6,
                  100 * (pa - ref) / ref, 100 * (pm - ref) / ref);
    tl->cases++;
    tl->worst_auto = ea > tl->worst_auto ? ea : tl->worst_auto;
    tl->worst_model = em > tl->worst_model ? em : tl->worst_model;
    if (!(ea <= 0.05) || !(em <= limit)) {
        print_error("FAIL: %s %s %llu B on %d ranks: %s predicted %.3f us "
                    "(auto), %.3f us (model); engine %.3f us\n",
                    t->name, hccn_coll_name(coll), (unsigned long long)bytes,
                    n, al->name, pa * 1e6, pm * 1e6, ref * 1e6);
        tl->failures++;
    }
}

static int json_name(const struct dirent *e)
{
    size_t len = strlen(e->d_name);
    return len > 5 && strcmp(e->d_name + len - 5, ".json") == 0;
}

/* Every config, every collective, 1, 16 and 64 MiB, on all its NPUs and
 * on the NPUs of its first node. */
static void test_predictions_within_5_percent(void **state)
{
    (void)state;
    static const uint64_t sizes[] = {MIB, 16 * MIB, 64 * MIB};
    struct dirent **list;
    tally_t tl = {0};
    int n = scandir(test_path("configs"), &list, json_name, alphasort);
    assert_true(n >= 5);
    for (int f = 0; f < n; f++) {
        char rel[512];
        snprintf(rel, sizeof(rel), "configs/%s", list[f]->d_name);
        free(list[f]);
        hccn_sim_topo_t *t = load(rel);
        int node0 = t->nodes[0].nnpus;
        for (int comm = 0; comm < 2; comm++) {
            int p = comm == 0 ? t->nnpus : node0;
            if (p < 2 || (comm == 1 && t->nnodes == 1) || p > 64)
                continue;
            int *world = identity(p, 0);
            for (int c = 0; c < HCCN_COLL_BARRIER; c++)
                for (size_t s = 0; s < 3; s++)
                    check_case(t, world, p, (hccn_coll_t)c, sizes[s], &tl);
            free(world);
        }
        hccn_sim_topo_free(t);
    }
    free(list);
    print_message("%d cases: worst error %.2f %% (auto), %.2f %% (model)\n",
                  tl.cases, 100 * tl.worst_auto, 100 * tl.worst_model);
    assert_int_equal(tl.failures, 0);
}

/* ------------------------------------------------- against a real run --- */

static const char *two_nodes =
    "{\"version\": 1, \"node_types\": [{\"count\": 2,"
    " \"npu\": {\"count\": 4, \"arena_MiB\": 32, \"reduce_bw_GBps\": 100},"
    " \"fabric\": {\"type\": \"mesh\", \"bw_GBps\": 40, \"lat_us\": 1},"
    " \"nics\": {\"count\": 2, \"bw_GBps\": 10, \"lat_us\": 2}}],"
    " \"network\": {\"type\": \"switch\", \"lat_us\": 1}}";

typedef struct {
    size_t count;
    double end[8];
} run_arg_t;

static hccn_status_t run_allreduce(hccn_ctx_t *ctx, void *arg)
{
    run_arg_t *ra = arg;
    void *buf;
    hccn_status_t rc = hccn_malloc(ctx, ra->count * 4, &buf);
    if (rc == HCCN_OK)
        rc = hccn_allreduce(hccn_comm_world(ctx), buf, buf, ra->count,
                            HCCN_FP32, HCCN_SUM);
    ra->end[hccn_rank(ctx)] = hccn_time(ctx);
    return rc;
}

/* The figure the selector predicts is the time the runtime then reports:
 * an allreduce run through the public API ends when the prediction says
 * (to rounding), for the default choice and a forced one. */
static void test_prediction_is_the_runtime_time(void **state)
{
    (void)state;
    hccn_cluster_t *cl;
    hccn_sim_topo_t *t = load_text(two_nodes, "two-nodes");
    int *world = identity(8, 0);
    hccn_cost_place_t pl = {t, world};
    assert_int_equal(hccn_cluster_create_json(two_nodes, "two-nodes", NULL,
                                              &cl),
                     HCCN_OK);
    static const char *specs[] = {NULL, "ring", "hd"};
    for (int k = 0; k < 3; k++) {
        run_arg_t ra = {.count = 300001};
        if (specs[k] != NULL)
            setenv("HCCN_ALGO", specs[k], 1);
        else
            unsetenv("HCCN_ALGO");
        if (hccn_cluster_run(cl, run_allreduce, &ra, NULL) != HCCN_OK)
            fail_msg("run: %s", hccn_last_error());
        double end = 0.0;
        for (int r = 0; r < 8; r++)
            end = ra.end[r] > end ? ra.end[r] : end;
        hccn_coll_args_t a = {.coll = HCCN_COLL_ALLREDUCE, .nranks = 8,
                              .count = ra.count, .esize = 4};
        hccn_hier_select_in_t in = {t, world, specs[k], NULL};
        char why[256];
        const hccn_algo_t *al = hccn_hier_select(&a, &in, why, sizeof(why),
                                                 NULL, 0);
        assert_non_null(al);
        double p = hccn_hier_cost(al, &a, &pl, HCCN_COST_AUTO, NULL);
        print_message("%s: runtime %.4f us, predicted %.4f us\n", al->name,
                      end * 1e6, p * 1e6);
        assert_true(fabs(p - end) <= 1e-9 * end);
    }
    unsetenv("HCCN_ALGO");
    hccn_cluster_destroy(cl);
    hccn_sim_topo_free(t);
    free(world);
}

/* ------------------------------------------------------------ figures --- */

static void test_levels(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load("configs/default.json");
    int *world = identity(16, 0);
    hccn_cost_place_t pl = {t, world};
    hccn_cost_levels_t lv;
    hccn_hier_cost_levels(&pl, 16, &lv);
    assert_int_equal(lv.nnodes, 2);
    assert_int_equal(lv.ppn, 8);
    assert_true(fabs(lv.alpha[0] - 1.5e-6) < 1e-15);
    assert_true(fabs(lv.bw[0] - 56e9) < 1.0);
    assert_true(fabs(lv.alpha[1] - 3e-6) < 1e-15);   /* NIC 2 + switch 1 */
    assert_true(fabs(lv.bw[1] - 25e9) < 1.0);
    assert_true(fabs(lv.reduce_bw - 200e9) < 1.0);
    assert_true(lv.mem_bw == 0.0);
    hccn_hier_cost_levels(&pl, 8, &lv);   /* one node */
    assert_int_equal(lv.nnodes, 1);
    assert_true(lv.bw[1] == 0.0);
    hccn_sim_topo_free(t);
    free(world);
}

static double model(const char *algo, hccn_coll_t coll, uint64_t count,
                    const hccn_sim_topo_t *t, const int *world, int n)
{
    hccn_coll_args_t a = {.coll = coll, .nranks = n, .count = count,
                          .esize = 4};
    hccn_cost_place_t pl = {t, world};
    return hccn_hier_cost(hccn_hier_algo_find(algo), &a, &pl,
                          HCCN_COST_MODEL, NULL);
}

static void assert_close(double got, double want, const char *what)
{
    if (!(fabs(got - want) <= 1e-9 * want))
        fail_msg("%s: model %.6f us, formula %.6f us", what, got * 1e6,
                 want * 1e6);
}

/* On one node of default.json (every pair its own 56 GB/s, 1.5 us link;
 * reductions at 200 GB/s) the forms are docs/algorithms.md's formulas. */
static void test_closed_forms_uncontended(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load("configs/default.json");
    int *world = identity(8, 0);
    const double al = 1.5e-6, B = 56e9, R = 200e9;
    const int p = 8;
    double b = 64.0 * MIB / p, n = 64.0 * MIB, c = MIB;
    uint64_t count = 64 * MIB / 4;
    assert_close(model("ring", HCCN_COLL_ALLREDUCE, count, t, world, p),
                 2 * (p - 1) * (al + b / B) + (p - 1) * b / R,
                 "ring allreduce");
    /* A count p does not divide: equal blocks, and the tail of 5
     * elements beside each allgather block, then summed (copies free);
     * the engine gives the same. */
    {
        double tb = 5 * 4.0, want = (p - 1) * (al + b / B + b / R) +
                                    (p - 1) * (al + (b + tb) / B) +
                                    (p - 1) * tb / R;
        hccn_coll_args_t a = {.coll = HCCN_COLL_ALLREDUCE, .nranks = p,
                              .count = count + 5, .esize = 4};
        assert_close(model("ring", HCCN_COLL_ALLREDUCE, count + 5, t, world,
                           p), want, "ring allreduce with a tail");
        assert_close(reference(hccn_hier_algo_find("ring"), &a, t, world),
                     want, "ring allreduce with a tail, engine");
    }
    assert_close(model("mesh", HCCN_COLL_ALLREDUCE, count, t, world, p),
                 2 * al + 2 * b / B + (p - 1) * b / R, "mesh allreduce");
    assert_close(model("ring", HCCN_COLL_REDUCE_SCATTER, count / p, t, world,
                       p),
                 (p - 1) * (al + b / B + b / R), "ring reduce_scatter");
    assert_close(model("mesh", HCCN_COLL_ALLGATHER, count / p, t, world, p),
                 al + b / B, "mesh allgather");
    assert_close(model("ring", HCCN_COLL_BROADCAST, count, t, world, p),
                 (p - 1) * al + (n + (p - 2) * c) / B, "ring broadcast");
    assert_close(model("linear", HCCN_COLL_GATHER, count / p, t, world, p),
                 (p - 1) * (al + b / B), "linear gather");
    hccn_sim_topo_free(t);
    free(world);
}

/* The flat double binary tree with one chunk per tree, on one and two
 * nodes of default.json: a rank's reductions of both trees queue on its
 * reduce unit in the order their data is there, as in the engine, and the
 * walk gives the engine's time. (Taken in the order of the trees' slots,
 * a reduction whose data came early waited for one whose data came late:
 * +1.2 % at 64 KiB and +3.1 % at 1 MiB on one node.) */
static void test_tree_one_chunk(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load("configs/default.json");
    static const uint64_t sizes[] = {64 << 10, MIB};
    for (int n = 8; n <= 16; n += 8) {
        int *world = identity(n, 0);
        for (size_t i = 0; i < 2; i++) {
            hccn_coll_args_t a = {.coll = HCCN_COLL_ALLREDUCE, .nranks = n,
                                  .count = sizes[i] / 4, .esize = 4};
            double ref = reference(hccn_hier_algo_find("tree"), &a, t, world);
            assert_close(model("tree", HCCN_COLL_ALLREDUCE, a.count, t, world,
                               n),
                         ref, n == 8 ? "tree, one node" : "tree, two nodes");
        }
        free(world);
    }
    hccn_sim_topo_free(t);
}

/* Four NPUs per node behind one 10 GB/s NIC: in mesh's allgather each NIC
 * carries 4 x 4 flows out of its node at once, so each gets 1/16 of it. */
static void test_nic_sharing(void **state)
{
    (void)state;
    const char *json =
        "{\"version\": 1, \"node_types\": [{\"count\": 2,"
        " \"npu\": {\"count\": 4, \"arena_MiB\": 16, \"reduce_bw_GBps\": "
        "100},"
        " \"fabric\": {\"type\": \"switch\", \"bw_GBps\": 1000, \"lat_us\": "
        "1},"
        " \"nics\": {\"count\": 1, \"bw_GBps\": 10, \"lat_us\": 2}}],"
        " \"network\": {\"type\": \"switch\", \"lat_us\": 1}}";
    hccn_sim_topo_t *t = load_text(json, "one-nic");
    int *world = identity(8, 0);
    uint64_t count = MIB / 4;
    double want = 3e-6 + 16.0 * MIB / 10e9;
    assert_close(model("mesh", HCCN_COLL_ALLGATHER, count, t, world, 8), want,
                 "mesh allgather through one NIC");
    hccn_coll_args_t a = {.coll = HCCN_COLL_ALLGATHER, .nranks = 8,
                          .count = count, .esize = 4};
    double ref = reference(hccn_hier_algo_find("mesh"), &a, t, world);
    assert_true(fabs(ref - want) <= 1e-9 * want);
    hccn_sim_topo_free(t);
    free(world);
}

/* ----------------------------------------------------- no prediction --- */

static hccn_sched_t *ring_build(const hccn_coll_args_t *a)
{
    return hccn_hier_algo_find("ring")->build(a);
}

/* An algorithm the model has no form for is not priced (AUTO, MODEL),
 * though the engine can time it; a collective an algorithm does not do
 * is never priced. */
static void test_no_prediction(void **state)
{
    (void)state;
    hccn_algo_t unknown = {"no-such-model", "a ring under another name",
                           1u << HCCN_COLL_ALLREDUCE, ring_build, 0, NULL, 0,
                           0};
    hccn_sim_topo_t *t = load("configs/laptop-4.json");
    int *world = identity(4, 0);
    hccn_cost_place_t pl = {t, world};
    hccn_coll_args_t a = {.coll = HCCN_COLL_ALLREDUCE, .nranks = 4,
                          .count = 1000, .esize = 4};
    assert_false(hccn_hier_cost_known(unknown.name));
    assert_true(hccn_hier_cost(&unknown, &a, &pl, HCCN_COST_AUTO, NULL) ==
                HCCN_COST_NONE);
    assert_true(hccn_hier_cost(&unknown, &a, &pl, HCCN_COST_MODEL, NULL) ==
                HCCN_COST_NONE);
    double e = hccn_hier_cost(&unknown, &a, &pl, HCCN_COST_ENGINE, NULL);
    assert_true(e > 0.0);
    assert_true(e == hccn_hier_cost(hccn_hier_algo_find("ring"), &a, &pl,
                                    HCCN_COST_ENGINE, NULL));
    a.coll = HCCN_COLL_ALLTOALL;
    assert_true(hccn_hier_cost(hccn_hier_algo_find("ring"), &a, &pl,
                               HCCN_COST_AUTO, NULL) == HCCN_COST_NONE);
    /* hierarchical rows on one node: they do not apply */
    a.coll = HCCN_COLL_ALLREDUCE;
    const hccn_algo_t *hier = hccn_hier_algo_find("hier");
    if (hier != NULL) {
        assert_true(hccn_hier_cost(hier, &a, &pl, HCCN_COST_AUTO, NULL) ==
                    HCCN_COST_NONE);
        assert_true(hccn_hier_cost(hier, &a, &pl, HCCN_COST_MODEL, NULL) ==
                    HCCN_COST_NONE);
    }
    /* count 0: an empty schedule takes no time */
    a.count = 0;
    assert_true(hccn_hier_cost(hccn_hier_algo_find("ring"), &a, &pl,
                               HCCN_COST_MODEL, NULL) == 0.0);
    hccn_sim_topo_free(t);
    free(world);
}

/* ----------------------------------------------------------- at scale --- */

/* n8 8-NPU nodes on a leaf/spine network. */
static char *cluster_json(int nodes)
{
    char *s = malloc(1024);
    assert_non_null(s);
    snprintf(s, 1024,
             "{\"version\": 1, \"node_types\": [{\"count\": %d,"
             " \"npu\": {\"count\": 8, \"arena_MiB\": 1, \"reduce_bw_GBps\": "
             "200},"
             " \"fabric\": {\"type\": \"mesh\", \"bw_GBps\": 56, \"lat_us\": "
             "1.5},"
             " \"nics\": {\"count\": 8, \"bw_GBps\": 25, \"lat_us\": 2}}],"
             " \"network\": {\"type\": \"leaf_spine\", \"lat_us\": 1,"
             " \"nodes_per_leaf\": 4, \"oversubscription\": 2}}",
             nodes);
    return s;
}

/* 64 ranks (8 nodes): the closed forms of the algorithms chosen for large
 * messages, against the engine. */
static void test_forms_at_64_ranks(void **state)
{
    (void)state;
    char *json = cluster_json(8);
    hccn_sim_topo_t *t = load_text(json, "leafspine-8x8");
    int *world = identity(64, 0);
    hccn_cost_place_t pl = {t, world};
    static const char *algos[] = {"ring", "hd", "hier", "hier_mh", "tree"};
    for (size_t i = 0; i < 5; i++) {
        const hccn_algo_t *al = hccn_hier_algo_find(algos[i]);
        if (al == NULL)
            continue;
        hccn_coll_args_t a = {.coll = HCCN_COLL_ALLREDUCE, .nranks = 64,
                              .count = 16 * MIB / 4, .esize = 4};
        double ref = reference(al, &a, t, world);
        double m = hccn_hier_cost(al, &a, &pl, HCCN_COST_MODEL, NULL);
        print_message("64 ranks, 16 MiB allreduce, %-8s engine %.2f us, "
                      "model %+.2f %%\n",
                      al->name, ref * 1e6, 100 * (m - ref) / ref);
        /* tree: the tree across nodes (tree.h), held to 25 % as on one
         * node (docs/selection.md) */
        assert_true(fabs(m - ref) <= (i == 4 ? 0.25 : 0.05) * ref);
    }
    hccn_sim_topo_free(t);
    free(world);
    free(json);
}

/* Pods under oversubscribed leaves (P pods of M nodes of L NPUs): the
 * three-level forms against the engine, 1 to 64 MiB, with several chunks
 * in flight (levels 1 and 2 then share the NICs, level 0 the reducer). */
static void test_forms_three_levels(void **state)
{
    (void)state;
    static const struct {
        int P, M, L;
        double os;
        unsigned sizes;   /* bit z: sizes[z] is checked */
    } shapes[] = {{2, 2, 8, 2, 7}, {4, 2, 8, 2, 2}, {2, 4, 8, 4, 2},
                  {4, 4, 4, 4, 2}, {3, 2, 4, 2, 3}};
    static const uint64_t sizes[] = {MIB, 16 * MIB, 64 * MIB};
    static const char *algos[] = {"hier3", "hier3_hd"};
    const int quick = getenv("HCCN_TEST_QUICK") != NULL;
    for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
        char json[1024], name[64];
        int p = shapes[k].P * shapes[k].M * shapes[k].L;
        snprintf(json, sizeof(json),
                 "{\"version\": 1, \"node_types\": [{\"count\": %d,"
                 " \"npu\": {\"count\": %d, \"arena_MiB\": 1,"
                 " \"reduce_bw_GBps\": 200}, \"fabric\": {\"type\": \"mesh\","
                 " \"bw_GBps\": 56, \"lat_us\": 1.5}, \"nics\": {\"count\": %d,"
                 " \"bw_GBps\": 25, \"lat_us\": 2}}], \"network\": {\"type\":"
                 " \"leaf_spine\", \"lat_us\": 1, \"nodes_per_leaf\": %d,"
                 " \"oversubscription\": %g}}",
                 shapes[k].P * shapes[k].M, shapes[k].L, shapes[k].L,
                 shapes[k].M, shapes[k].os);
        snprintf(name, sizeof(name), "pods-%dx%dx%d", shapes[k].P,
                 shapes[k].M, shapes[k].L);
        hccn_sim_topo_t *t = load_text(json, name);
        int *world = identity(p, 0);
        hccn_cost_place_t pl = {t, world};
        /* hd on 2 pods is the ring; quick: 16 MiB on every other shape. */
        for (size_t i = 0; i < (shapes[k].P > 2 ? 2u : 1u); i++)
            for (size_t z = 0; z < 3; z++) {
                const hccn_algo_t *al = hccn_hier_algo_find(algos[i]);
                if (!(shapes[k].sizes >> z & 1) ||
                    (quick && (k % 2 || z != 1)))
                    continue;
                hccn_coll_args_t a = {.coll = HCCN_COLL_ALLREDUCE,
                                      .nranks = p, .count = sizes[z] / 4,
                                      .esize = 4};
                double ref = reference(al, &a, t, world);
                double m = hccn_hier_cost(al, &a, &pl, HCCN_COST_MODEL, NULL);
                print_message("%s %2d ranks, %8llu B allreduce, %-8s engine "
                              "%9.2f us, model %+.2f %%\n",
                              name, p, (unsigned long long)sizes[z], al->name,
                              ref * 1e6, 100 * (m - ref) / ref);
                assert_true(fabs(m - ref) <= 0.05 * ref);
            }
        hccn_sim_topo_free(t);
        free(world);
    }
}

/* Every composition row (algo_levels.c: any of ring, mesh, hd per level)
 * on two levels (4 nodes of 4) and three (2 pods of 2 nodes of 4): the
 * cost model's closed form within 5 % of the engine for allreduce,
 * reduce-scatter and allgather at 1 and 16 MiB, as for the named rows
 * (reduce-scatter and allgather with ring or hd in nodes: below);
 * and a spec leaving a level as NA gets the cheapest row by that form. */
static void test_compositions(void **state)
{
    (void)state;
    const int quick = getenv("HCCN_TEST_QUICK") != NULL;
    static const uint64_t sizes[] = {MIB, 16 * MIB};
    const char *const *lv = hccn_hier_level_algos();
    for (int three = 0; three < 2; three++) {
        char *json = three ? NULL : cluster_json(4);
        char buf[1024];
        if (three)
            snprintf(buf, sizeof(buf),
                     "{\"version\": 1, \"node_types\": [{\"count\": 4,"
                     " \"npu\": {\"count\": 4, \"arena_MiB\": 1,"
                     " \"reduce_bw_GBps\": 200}, \"fabric\": {\"type\":"
                     " \"mesh\", \"bw_GBps\": 56, \"lat_us\": 1.5},"
                     " \"nics\": {\"count\": 4, \"bw_GBps\": 25,"
                     " \"lat_us\": 2}}], \"network\": {\"type\":"
                     " \"leaf_spine\", \"lat_us\": 1, \"nodes_per_leaf\": 2,"
                     " \"oversubscription\": 2}}");
        hccn_sim_topo_t *t = load_text(three ? buf : json,
                                       three ? "pods-2x2x4" : "leafspine-4x4");
        int p = t->nnpus, *world = identity(p, 0);
        hccn_cost_place_t pl = {t, world};
        int rows = 0;
        for (const char *const *x = lv; *x; x++)
            for (const char *const *y = lv; *y; y++)
                for (const char *const *z = three ? lv : NULL;
                     !three || *z; z = three ? z + 1 : NULL) {
                    const hccn_algo_t *al =
                        hccn_hier_levels_row(*x, *y, three ? *z : NULL);
                    assert_non_null(al);
                    rows++;
                    for (int c = 0; c <= HCCN_COLL_ALLGATHER; c++)
                        for (size_t k = 0; k < 2; k++) {
                            if (quick && (k == 1 || c != 0))
                                continue;
                            uint64_t n = sizes[k] / 4;
                            hccn_coll_args_t a = {
                                .coll = (hccn_coll_t)c, .nranks = p,
                                .count = c ? n / (uint64_t)p : n, .esize = 4};
                            double ref = reference(al, &a, t, world);
                            double m = hccn_hier_cost(al, &a, &pl,
                                                      HCCN_COST_MODEL, NULL);
                            /* Reduce-scatter and allgather with ring or
                             * hd inside nodes: the form prices each node's
                             * instance alone; in the engine their steps
                             * interleave and end sooner (as for hier_rr):
                             * an upper bound, within 25 %. */
                            int bound = c != 0 && strcmp(*x, "mesh") != 0;
                            double lo = 0.95 * ref,
                                   hi = (bound ? 1.25 : 1.05) * ref;
                            if (!(m >= lo && m <= hi))
                                fail_msg("%s %s %llu B on %d ranks: engine "
                                         "%.3f us, model %.3f us",
                                         al->name, hccn_coll_name(a.coll),
                                         (unsigned long long)sizes[k], p,
                                         ref * 1e6, m * 1e6);
                        }
                    if (!three)
                        break;
                }
        assert_int_equal(rows, three ? 27 : 9);
        /* level0 given, level1 NA: the cheapest of the three. */
        hccn_coll_args_t a = {.coll = HCCN_COLL_ALLREDUCE, .nranks = p,
                              .count = MIB / 4, .esize = 4};
        hccn_hier_select_in_t in = {t, world, "level0:hd", NULL};
        char why[512];
        const hccn_algo_t *got = hccn_hier_select(&a, &in, why, sizeof(why),
                                                  NULL, 0);
        assert_non_null(got);
        const hccn_algo_t *best = NULL;
        double bt = INFINITY;
        for (const char *const *y = lv; *y; y++) {
            const hccn_algo_t *al = hccn_hier_levels_row("hd", *y, NULL);
            double m = hccn_hier_cost(al, &a, &pl, HCCN_COST_AUTO, NULL);
            if (m < bt) {
                bt = m;
                best = al;
            }
        }
        assert_string_equal(got->name, best->name);
        hccn_sim_topo_free(t);
        free(world);
        free(json);
    }
}

/* 1024 NPUs: every candidate is priced from its closed form (no schedule
 * is built), the figures are positive, and a hierarchical algorithm wins
 * a large allreduce (tree across nodes is one: a chain in every node and
 * trees over the nodes). */
static void test_1024_npus(void **state)
{
    (void)state;
    char *json = cluster_json(128);
    hccn_sim_topo_t *t = load_text(json, "leafspine-128x8");
    int *world = identity(1024, 0);
    hccn_cost_place_t pl = {t, world};
    for (int c = 0; c < HCCN_COLL_BARRIER; c++) {
        hccn_coll_args_t a = {.coll = (hccn_coll_t)c, .nranks = 1024,
                              .count = 64 * MIB / 4, .esize = 4, .root = 5};
        if (is_block_coll(a.coll))
            a.count /= 1024;
        for (const hccn_algo_t *al = hccn_hier_algos(); al->name; al++) {
            if (!(al->colls & 1u << c))
                continue;
            int by_engine = 1;
            double p = hccn_hier_cost(al, &a, &pl, HCCN_COST_AUTO,
                                      &by_engine);
            assert_false(by_engine);
            if (!(p > 0.0 && isfinite(p)))
                fail_msg("%s %s: %g", al->name, hccn_coll_name(a.coll), p);
        }
    }
    hccn_coll_args_t a = {.coll = HCCN_COLL_ALLREDUCE, .nranks = 1024,
                          .count = 64 * MIB / 4, .esize = 4};
    hccn_hier_select_in_t in = {t, world, NULL, NULL};
    char why[256], report[2048];
    const hccn_algo_t *al = hccn_hier_select(&a, &in, why, sizeof(why),
                                             report, sizeof(report));
    assert_non_null(al);
    print_message("%s\n", report);
    assert_true(strncmp(al->name, "hier", 4) == 0 ||
                strcmp(al->name, "tree") == 0);
    hccn_sim_topo_free(t);
    free(world);
    free(json);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_levels),
        cmocka_unit_test(test_closed_forms_uncontended),
        cmocka_unit_test(test_tree_one_chunk),
        cmocka_unit_test(test_nic_sharing),
        cmocka_unit_test(test_no_prediction),
        cmocka_unit_test(test_prediction_is_the_runtime_time),
        cmocka_unit_test(test_predictions_within_5_percent),
        cmocka_unit_test(test_forms_at_64_ranks),
        cmocka_unit_test(test_forms_three_levels),
        cmocka_unit_test(test_compositions),
        cmocka_unit_test(test_1024_npus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
