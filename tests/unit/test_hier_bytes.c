/*
 * Bytes over the NICs of the hierarchical collectives (levels.h and
 * the hierarchical allreduces): on N nodes, a reduce-scatter or allgather
 * of S bytes (the whole buffer) must send (N-1)/N x S out of every node and
 * receive as much into it, and an allreduce of S bytes twice that: the
 * least any algorithm can, since each node holds 1/N of the result and
 * needs the other nodes' contributions to it. Every hierarchical algorithm
 * is timed in the engine on clusters of two and three levels, and the
 * bytes each NIC carried are read from the engine's link statistics.
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

#include "hierarchy/coll.h"
#include "hierarchy/cost.h"
#include "test_engine.h"

typedef struct {
    const char *name;
    int nodes, npus, per_leaf;      /* per_leaf 0: one network switch */
    const char *algos[3];
    int levels;                     /* and every composition of so many
                                       levels (algo_levels.c), or 0 */
} cluster_t;

static const cluster_t clusters[] = {
    {"2x8", 2, 8, 0, {"hier", "hier_rr", "hier_mh"}, 0},
    {"4x4", 4, 4, 0, {"hier", "hier_rr", "hier_mh"}, 2},
    {"3x4", 3, 4, 0, {"hier", "hier_rr", NULL}, 0},
    {"2 pods x 2x4", 4, 4, 2, {"hier3", "hier", NULL}, 3},
    {"4 pods x 2x2", 8, 2, 2, {"hier3", "hier3_hd", NULL}, 0},
};

static hccn_sim_topo_t *load(const cluster_t *c)
{
    char json[1024], net[160], err[512];
    if (c->per_leaf > 0)
        snprintf(net, sizeof(net),
                 "{\"type\": \"leaf_spine\", \"lat_us\": 1, "
                 "\"nodes_per_leaf\": %d, \"oversubscription\": 2}",
                 c->per_leaf);
    else
        snprintf(net, sizeof(net), "{\"type\": \"switch\", \"lat_us\": 1}");
    snprintf(json, sizeof(json),
             "{\"version\": 1, \"node_types\": [{\"count\": %d, \"npu\": "
             "{\"count\": %d, \"arena_MiB\": 1, \"reduce_bw_GBps\": 200}, "
             "\"fabric\": {\"type\": \"mesh\", \"bw_GBps\": 56, \"lat_us\": "
             "1.5}, \"nics\": {\"count\": %d, \"bw_GBps\": 25, \"lat_us\": "
             "2}}], \"network\": %s}",
             c->nodes, c->npus, c->npus, net);
    hccn_sim_topo_t *t = NULL;
    if (hccn_sim_topo_load_string(json, c->name, &t, err, sizeof(err)) !=
        HCCN_OK)
        fail_msg("%s: %s", c->name, err);
    return t;
}

/* Bytes that left (out) and entered (in) node n through its NICs. */
static void nic_bytes(const hccn_sim_topo_t *t, hccn_sim_engine_t *eng,
                      int n, double *out, double *in)
{
    *out = *in = 0.0;
    for (int l = 0; l < t->nlinks; l++) {
        const hccn_sim_dev_t *s = &t->devs[t->links[l].src];
        const hccn_sim_dev_t *d = &t->devs[t->links[l].dst];
        double bytes, active;
        hccn_sim_link_stats(eng, l, &bytes, &active);
        if (s->kind == HCCN_SIM_DEV_NIC && s->node == n && d->node < 0)
            *out += bytes;
        if (d->kind == HCCN_SIM_DEV_NIC && d->node == n && s->node < 0)
            *in += bytes;
    }
}

/* Checks algorithm al's NIC bytes for reduce-scatter, allgather and
 * allreduce on cluster c (t, view). */
static void check_algo(const cluster_t *c, const hccn_sim_topo_t *t,
                       const hccn_hier_view_t *view, const hccn_algo_t *al)
{
    static const hccn_coll_t colls[] = {HCCN_COLL_REDUCE_SCATTER,
                                        HCCN_COLL_ALLGATHER,
                                        HCCN_COLL_ALLREDUCE};
    const double N = c->nodes;
    int p = t->nnpus;
    for (int ci = 0; ci < 3; ci++) {
        /* Whole blocks at every level, and no allreduce tail. */
        uint64_t count = (uint64_t)p * 96;
        hccn_coll_args_t a = {.coll = colls[ci], .nranks = p,
                              .count = count, .esize = 4, .view = view};
        hccn_sched_t *s = hccn_hier_build(al, &a);
        assert_non_null(s);
        hccn_sim_engine_t *eng = NULL;
        test_engine_time(t, s, NULL, &eng);
        double S = (double)count * 4 *
                   (colls[ci] == HCCN_COLL_ALLREDUCE ? 2.0 : (double)p);
        double want = (N - 1) / N * S;
        for (int n = 0; n < c->nodes; n++) {
            double out, in;
            nic_bytes(t, eng, n, &out, &in);
            if (out != want || in != want)
                fail_msg("%s %s %s node %d: %.0f B out, %.0f B in, "
                         "want %.0f", c->name, al->name,
                         hccn_coll_name(colls[ci]), n, out, in, want);
        }
        print_message("%-14s %-20s %-15s %.0f B per node each way\n",
                      c->name, s->algo, hccn_coll_name(colls[ci]), want);
        hccn_sim_engine_destroy(eng);
        hccn_sched_free(s);
    }
}

static void check_cluster(const cluster_t *c)
{
    hccn_sim_topo_t *t = load(c);
    int p = t->nnpus, *world = malloc((size_t)p * sizeof(int));
    int *node = malloc((size_t)p * sizeof(int));
    int *local = malloc((size_t)p * sizeof(int));
    int *pod = malloc((size_t)p * sizeof(int));
    for (int r = 0; r < p; r++)
        world[r] = r;
    hccn_cost_place_t pl = {t, world};
    hccn_hier_view_t view;
    assert_int_equal(hccn_hier_cost_view(&pl, p, node, local, &view), 0);
    assert_int_equal(hccn_hier_cost_pods(&pl, pod, &view), 0);
    for (int ai = 0; ai < 3 && c->algos[ai] != NULL; ai++) {
        const hccn_algo_t *al = hccn_hier_algo_find(c->algos[ai]);
        assert_non_null(al);
        check_algo(c, t, &view, al);
    }
    /* Every composition: its groups here are powers of two, so hd does
     * not fold extra ranks in. */
    const char *const *lv = hccn_hier_level_algos();
    for (const char *const *x = lv; c->levels && *x; x++)
        for (const char *const *y = lv; *y; y++)
            for (const char *const *z = lv; *z; z++) {
                const hccn_algo_t *al = hccn_hier_levels_row(
                    *x, *y, c->levels == 3 ? *z : NULL);
                assert_non_null(al);
                check_algo(c, t, &view, al);
                if (c->levels == 2)
                    break;
            }
    free(world);
    free(node);
    free(local);
    free(pod);
    hccn_sim_topo_free(t);
}

static void test_nic_bytes_are_the_least(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(clusters) / sizeof(clusters[0]); i++)
        check_cluster(&clusters[i]);
}

int main(void)
{
    static const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nic_bytes_are_the_least),
    };
    return cmocka_run_group_tests_name("hier_bytes", tests, NULL, NULL);
}
