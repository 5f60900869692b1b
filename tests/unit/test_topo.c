/*
 * Topology loader: every shipped config loads; routes, latencies, link
 * bandwidths and bisection figures equal values computed by hand from the
 * rules of docs/topology.md; every file of tests/data/topo_invalid fails with
 * its expected JSON path; random corruptions never crash the loader.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_sim/topo.h"
#include "test_util.h"

#define GB 1e9
#define US 1e-6

#define assert_close(a, b)                                                    \
    do {                                                                      \
        double a_ = (a), b_ = (b);                                            \
        if (!(test_rel_diff(a_, b_) < 1e-12)) {                               \
            print_error("%s = %.17g, expected %.17g\n", #a, a_, b_);          \
            fail();                                                           \
        }                                                                     \
    } while (0)

static hccn_sim_topo_t *load_config(const char *name)
{
    char rel[256], err[512];
    hccn_sim_topo_t *t = NULL;
    snprintf(rel, sizeof(rel), "configs/%s", name);
    hccn_status_t st = hccn_sim_topo_load_file(test_path(rel), &t, err,
                                               sizeof(err));
    if (st != HCCN_OK)
        print_error("%s\n", err);
    assert_int_equal(st, HCCN_OK);
    assert_non_null(t);
    return t;
}

static hccn_sim_topo_t *load_text(const char *json)
{
    char err[512];
    hccn_sim_topo_t *t = NULL;
    hccn_status_t st = hccn_sim_topo_load_string(json, "inline.json", &t, err,
                                                 sizeof(err));
    if (st != HCCN_OK)
        print_error("%s\n", err);
    assert_int_equal(st, HCCN_OK);
    return t;
}

/* The route from a to b: its links chain from a's device to b's, no link
 * repeats, and its latency is the sum of link and intermediate device
 * latencies. Returns the length; links[] receives the route. */
static int checked_route(const hccn_sim_topo_t *t, int a, int b, int *links,
                         double *lat)
{
    int n = hccn_sim_topo_route(t, a, b, links, lat);
    double sum = 0.0;
    assert_true(n >= 1 && n <= HCCN_SIM_ROUTE_MAX);
    assert_int_equal(t->links[links[0]].src, t->npus[a].dev);
    assert_int_equal(t->links[links[n - 1]].dst, t->npus[b].dev);
    for (int i = 0; i < n; i++) {
        assert_true(links[i] >= 0 && links[i] < t->nlinks);
        sum += t->links[links[i]].lat;
        if (i + 1 < n) {
            assert_int_equal(t->links[links[i]].dst,
                             t->links[links[i + 1]].src);
            sum += t->devs[t->links[links[i]].dst].lat;
        }
        for (int j = 0; j < i; j++)
            assert_int_not_equal(links[i], links[j]);
    }
    assert_close(*lat, sum);
    return n;
}

/* Link idx goes from device named src to device named dst with bw, lat. */
static void assert_link(const hccn_sim_topo_t *t, int idx, const char *src,
                        const char *dst, double bw, double lat)
{
    const hccn_sim_link_t *l = &t->links[idx];
    assert_string_equal(t->devs[l->src].name, src);
    assert_string_equal(t->devs[l->dst].name, dst);
    if (isinf(bw))
        assert_true(isinf(l->bw));
    else
        assert_close(l->bw, bw);
    assert_close(l->lat, lat);
}

static hccn_sim_topo_summary_t summary(const hccn_sim_topo_t *t)
{
    hccn_sim_topo_summary_t s;
    hccn_sim_topo_summarize(t, &s);
    return s;
}

/* ------------------------------------------------------------------------ */
/* Shipped configs                                                          */

static void test_every_config_loads(void **state)
{
    (void)state;
    DIR *d = opendir(test_path("configs"));
    struct dirent *e;
    int n = 0, links[HCCN_SIM_ROUTE_MAX];
    double lat;
    assert_non_null(d);
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 5, ".json") != 0)
            continue;
        hccn_sim_topo_t *t = load_config(e->d_name);
        assert_true(t->nnpus > 0 && t->nnodes > 0);
        for (int a = 0; a < t->nnpus && t->nnpus <= 64; a++)
            for (int b = 0; b < t->nnpus; b++)
                if (a != b)
                    checked_route(t, a, b, links, &lat);
        for (int i = 0; i < t->nnpus; i++)
            assert_int_equal(t->npus[i].dev, i);
        hccn_sim_topo_free(t);
        n++;
    }
    closedir(d);
    assert_true(n >= 5);
}

static void test_default(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load_config("default.json");
    int l[HCCN_SIM_ROUTE_MAX];
    double lat;
    assert_string_equal(t->name, "default");
    assert_int_equal(t->nnodes, 2);
    assert_int_equal(t->nnpus, 16);
    assert_int_equal(t->ndevs, 16 + 16 + 1);
    assert_int_equal(t->npus[9].node, 1);
    assert_int_equal(t->npus[9].local, 1);
    assert_true(t->npus[9].arena_bytes == (size_t)1024 << 20);
    assert_close(t->npus[9].reduce_bw, 200 * GB);
    assert_true(t->npus[9].mem_bw == 0.0);
    assert_string_equal(t->devs[t->npus[9].nic].name, "node1.nic1");

    assert_int_equal(checked_route(t, 0, 1, l, &lat), 1);
    assert_link(t, l[0], "node0.npu0", "node0.npu1", 56 * GB, 1.5 * US);
    assert_close(lat, 1.5 * US);
    assert_int_equal(checked_route(t, 15, 9, l, &lat), 1);
    assert_link(t, l[0], "node1.npu7", "node1.npu1", 56 * GB, 1.5 * US);

    assert_int_equal(checked_route(t, 0, 8, l, &lat), 4);
    assert_link(t, l[0], "node0.npu0", "node0.nic0", INFINITY, 0);
    assert_link(t, l[1], "node0.nic0", "net", 25 * GB, 2 * US);
    assert_link(t, l[2], "net", "node1.nic0", 25 * GB, 0);
    assert_link(t, l[3], "node1.nic0", "node1.npu0", INFINITY, 0);
    assert_close(lat, 3 * US);  /* NIC 2 us + network switch 1 us */
    assert_int_equal(checked_route(t, 13, 2, l, &lat), 4);
    assert_link(t, l[1], "node1.nic5", "net", 25 * GB, 2 * US);

    hccn_sim_topo_summary_t s = summary(t);
    assert_int_equal(s.links_per_level[0], 2 * 8 * 7);
    assert_int_equal(s.links_per_level[1], 16 * 2 + 16 * 2);
    assert_int_equal(s.links_per_level[2], 0);
    assert_close(s.bw_per_level[0], 56 * GB);
    assert_close(s.bw_per_level[1], 25 * GB);
    assert_close(s.bisection_bw, 8 * 25 * GB);  /* node 0's 8 NICs */
    hccn_sim_topo_free(t);
}

static void test_laptop(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load_config("laptop-4.json");
    int l[HCCN_SIM_ROUTE_MAX];
    double lat;
    assert_int_equal(t->nnpus, 4);
    assert_int_equal(t->nlinks, 8);
    assert_true(t->npus[0].arena_bytes == (size_t)256 << 20);
    assert_int_equal(t->npus[0].nic, -1);
    assert_int_equal(checked_route(t, 3, 0, l, &lat), 2);
    assert_link(t, l[0], "node0.npu3", "node0.nvswitch", 50 * GB, 1.0 * US);
    assert_link(t, l[1], "node0.nvswitch", "node0.npu0", 50 * GB, 0);
    assert_close(lat, 1.0 * US);  /* fabric latency once */
    hccn_sim_topo_summary_t s = summary(t);
    assert_close(s.bisection_bw, 2 * 50 * GB);  /* n/2 uplinks */
    hccn_sim_topo_free(t);
}

static void test_ring8(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load_config("ring-8.json");
    int l[HCCN_SIM_ROUTE_MAX];
    double lat;
    assert_int_equal(t->nlinks, 16);
    assert_int_equal(checked_route(t, 0, 3, l, &lat), 3);
    assert_link(t, l[2], "node0.npu2", "node0.npu3", 25 * GB, 1.0 * US);
    assert_close(lat, 3 * 1.0 * US);
    assert_int_equal(checked_route(t, 0, 5, l, &lat), 3);  /* backwards */
    assert_link(t, l[0], "node0.npu0", "node0.npu7", 25 * GB, 1.0 * US);
    assert_link(t, l[1], "node0.npu7", "node0.npu6", 25 * GB, 1.0 * US);
    assert_link(t, l[2], "node0.npu6", "node0.npu5", 25 * GB, 1.0 * US);
    assert_close(lat, 3 * US);
    assert_int_equal(checked_route(t, 0, 4, l, &lat), 4);  /* tie: forward */
    assert_link(t, l[0], "node0.npu0", "node0.npu1", 25 * GB, 1.0 * US);
    assert_int_equal(checked_route(t, 6, 1, l, &lat), 3);  /* forward, wraps */
    assert_link(t, l[1], "node0.npu7", "node0.npu0", 25 * GB, 1.0 * US);
    for (int a = 0; a < 8; a++)
        for (int b = 0; b < 8; b++) {
            int d = abs(a - b) < 8 - abs(a - b) ? abs(a - b) : 8 - abs(a - b);
            assert_int_equal(hccn_sim_topo_route(t, a, b, l, &lat), d);
            assert_close(lat, d * US);
        }
    assert_close(summary(t).bisection_bw, 2 * 25 * GB);

    /* The other way round: 8 - d hops, sharing no link with the route. */
    for (int a = 0; a < 8; a++)
        for (int b = 0; b < 8; b++) {
            int alt[HCCN_SIM_ROUTE_MAX], d = hccn_sim_topo_route(t, a, b, l, NULL);
            int m = hccn_sim_topo_route_alt(t, a, b, alt, &lat);
            if (a == b) {
                assert_int_equal(m, -1);
                continue;
            }
            assert_int_equal(m, 8 - d);
            assert_close(lat, m * US);
            assert_int_equal(t->links[alt[0]].src, t->npus[a].dev);
            assert_int_equal(t->links[alt[m - 1]].dst, t->npus[b].dev);
            for (int i = 0; i < m; i++) {
                if (i > 0)
                    assert_int_equal(t->links[alt[i]].src,
                                     t->links[alt[i - 1]].dst);
                for (int j = 0; j < d; j++)
                    assert_int_not_equal(alt[i], l[j]);
            }
        }
    hccn_sim_topo_free(t);

    /* Nowhere else is there a second route. */
    t = load_config("default.json");
    assert_int_equal(hccn_sim_topo_route_alt(t, 0, 1, l, &lat), -1);
    assert_int_equal(hccn_sim_topo_route_alt(t, 0, 9, l, &lat), -1);
    hccn_sim_topo_free(t);
}

static void test_pcie8(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load_config("pcie-8.json");
    int l[HCCN_SIM_ROUTE_MAX];
    double lat;
    assert_int_equal(t->ndevs, 8 + 2 + 1);
    /* No peer-to-peer: 3 stage links per NPU (topo_staged.c). */
    assert_int_equal(t->nlinks, 2 * 8 + 2 * 2 + 3 * 8);
    assert_int_equal(checked_route(t, 0, 5, l, &lat), 8);
    assert_link(t, l[0], "node0.npu0", "node0.npu0", 0.8 * 32 * GB, 0);
    assert_link(t, l[1], "node0.npu0", "node0.npu0", 0.96 * 32 * GB, 0);
    assert_link(t, l[2], "node0.npu0", "node0.pcie0", 32 * GB, 0.5 * US);
    assert_link(t, l[3], "node0.pcie0", "node0.host", 32 * GB, 0.5 * US);
    assert_link(t, l[4], "node0.host", "node0.pcie1", 32 * GB, 0);
    assert_link(t, l[5], "node0.pcie1", "node0.npu5", 32 * GB, 0);
    assert_link(t, l[6], "node0.npu5", "node0.npu5", 0.96 * 32 * GB, 0);
    assert_link(t, l[7], "node0.npu5", "node0.npu5", 0.8 * 32 * GB, 0);
    assert_close(lat, 1.0 * US);
    /* No peer-to-peer: same switch still goes up to the host and back. */
    assert_int_equal(checked_route(t, 0, 1, l, &lat), 8);
    assert_link(t, l[4], "node0.host", "node0.pcie0", 32 * GB, 0);
    assert_close(lat, 1.0 * US);
    /* Halves = the two switches; each side has one 32 GB/s uplink. */
    assert_close(summary(t).bisection_bw, 32 * GB);
    hccn_sim_topo_free(t);
}

static void test_leafspine(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load_config("leafspine-4x8.json");
    int l[HCCN_SIM_ROUTE_MAX];
    double lat;
    assert_int_equal(t->nnodes, 4);
    assert_int_equal(t->nnpus, 32);
    assert_int_equal(t->nodes[1].leaf, 0);
    assert_int_equal(t->nodes[2].leaf, 1);
    assert_int_equal(checked_route(t, 0, 9, l, &lat), 4);   /* same leaf */
    assert_link(t, l[1], "node0.nic0", "leaf0", 25 * GB, 2 * US);
    assert_link(t, l[2], "leaf0", "node1.nic1", 25 * GB, 0);
    assert_close(lat, 2 * US + 1 * US);
    assert_int_equal(checked_route(t, 0, 16, l, &lat), 6);  /* via spine */
    /* uplink = 2 nodes x 8 NICs x 25 GB/s / oversubscription 2 */
    assert_link(t, l[2], "leaf0", "spine", 2 * 8 * 25 * GB / 2, 0);
    assert_link(t, l[3], "spine", "leaf1", 200 * GB, 0);
    assert_link(t, l[4], "leaf1", "node2.nic0", 25 * GB, 0);
    assert_close(lat, 2 * US + 3 * 1 * US);  /* NIC + leaf, spine, leaf */
    for (int a = 0; a < 32; a++)
        for (int b = 0; b < 32; b++) {
            int n = hccn_sim_topo_route(t, a, b, l, &lat), spine = 0;
            for (int i = 0; i < n; i++)
                spine += t->links[l[i]].level == HCCN_SIM_LEVEL_NET;
            assert_int_equal(spine, t->nodes[a / 8].leaf == t->nodes[b / 8].leaf
                                        ? 0 : 2);
        }
    hccn_sim_topo_summary_t s = summary(t);
    assert_int_equal(s.links_per_level[2], 4);
    assert_close(s.bw_per_level[2], 200 * GB);
    assert_close(s.bisection_bw, 200 * GB);  /* leaf0's uplink */
    hccn_sim_topo_free(t);
}

/* ------------------------------------------------------------------------ */
/* Inline variants                                                          */

#define NODE1(npus, fabric)                                                   \
    "{\"version\":1,\"node_types\":[{\"count\":1,\"npu\":{\"count\":" npus    \
    ",\"arena_MiB\":1,\"reduce_bw_GBps\":1},\"fabric\":" fabric "}]}"

static void test_ring_variants(void **state)
{
    (void)state;
    int l[HCCN_SIM_ROUTE_MAX];
    double lat;
    hccn_sim_topo_t *t = load_text(NODE1("5", "{\"type\":\"ring\",\"bw_GBps\""
        ":10,\"lat_us\":2,\"bidirectional\":false}"));
    assert_int_equal(t->nlinks, 5);
    assert_int_equal(checked_route(t, 0, 4, l, &lat), 4);  /* one way only */
    assert_close(lat, 8 * US);
    assert_int_equal(checked_route(t, 4, 0, l, &lat), 1);
    assert_close(summary(t).bisection_bw, 10 * GB);
    hccn_sim_topo_free(t);

    t = load_text(NODE1("2", "{\"type\":\"ring\",\"bw_GBps\":10,\"lat_us\":2}"));
    assert_int_equal(t->nlinks, 2);  /* one connection, not two */
    assert_int_equal(checked_route(t, 1, 0, l, &lat), 1);
    assert_close(summary(t).bisection_bw, 10 * GB);
    hccn_sim_topo_free(t);
}

static void test_mesh_switch_bisection(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load_text(NODE1("5", "{\"type\":\"mesh\",\"bw_GBps\""
                                              ":10,\"lat_us\":1}"));
    assert_int_equal(t->nlinks, 20);
    assert_close(summary(t).bisection_bw, 2 * 3 * 10 * GB);  /* 2 x 3 pairs */
    hccn_sim_topo_free(t);
    t = load_text(NODE1("5", "{\"type\":\"switch\",\"bw_GBps\":10,\"lat_us\":1}"));
    assert_close(summary(t).bisection_bw, 2 * 10 * GB);
    hccn_sim_topo_free(t);
    t = load_text(NODE1("1", "{\"type\":\"switch\",\"bw_GBps\":10,\"lat_us\":1}"));
    assert_int_equal(t->nlinks, 0);  /* one NPU: fabric ignored */
    assert_int_equal(t->nodes[0].fabric, HCCN_SIM_FABRIC_NONE);
    assert_true(summary(t).bisection_bw == 0.0);
    hccn_sim_topo_free(t);
}

static void test_pcie_p2p(void **state)
{
    (void)state;
    int l[HCCN_SIM_ROUTE_MAX];
    double lat;
    /* Interleaved groups: halves {0,1} | {2,3} each meet inside a switch. */
    hccn_sim_topo_t *t = load_text(NODE1("4", "{\"type\":\"pcie\",\"bw_GBps\""
        ":10,\"lat_us\":1,\"groups\":[[0,2],[1,3]],\"host_bw_GBps\":4,"
        "\"host_lat_us\":3,\"p2p\":true}"));
    assert_int_equal(checked_route(t, 0, 2, l, &lat), 2);
    assert_link(t, l[0], "node0.npu0", "node0.pcie0", 10 * GB, 1 * US);
    assert_close(lat, 1 * US);
    assert_int_equal(checked_route(t, 0, 1, l, &lat), 4);
    assert_link(t, l[2], "node0.host", "node0.pcie1", 4 * GB, 0);
    assert_close(lat, 4 * US);
    assert_close(summary(t).bisection_bw, 2 * 10 * GB);  /* all local */
    hccn_sim_topo_free(t);
    t = load_text(NODE1("4", "{\"type\":\"pcie\",\"bw_GBps\":10,\"lat_us\":1,"
        "\"groups\":[[0,2],[1,3]],\"host_bw_GBps\":4,\"p2p\":false}"));
    assert_int_equal(checked_route(t, 0, 2, l, &lat), 8);  /* staged */
    assert_close(summary(t).bisection_bw, 2 * 4 * GB);  /* two uplinks */
    hccn_sim_topo_free(t);
}

static void test_mixed_nodes(void **state)
{
    (void)state;
    int l[HCCN_SIM_ROUTE_MAX];
    double lat;
    hccn_sim_topo_t *t = load_text("{\"version\":1,\"node_types\":["
        "{\"count\":1,\"npu\":{\"count\":4,\"arena_MiB\":2,\"reduce_bw_GBps\":1,"
        "\"mem_bw_GBps\":3,\"peak_TFLOPS\":5},"
        "\"fabric\":{\"type\":\"mesh\",\"bw_GBps\":10,\"lat_us\":1},"
        "\"nics\":{\"count\":2,\"bw_GBps\":10,\"lat_us\":2,\"attach_bw_GBps\":3}},"
        "{\"count\":2,\"npu\":{\"count\":1,\"arena_MiB\":1,\"reduce_bw_GBps\":1},"
        "\"nics\":[{\"npus\":[0],\"bw_GBps\":7,\"lat_us\":1}]}],"
        "\"network\":{\"type\":\"switch\",\"lat_us\":0.5}}");
    assert_string_equal(t->name, "inline");
    assert_int_equal(t->nnodes, 3);
    assert_int_equal(t->nnpus, 6);
    assert_int_equal(t->npus[4].node, 1);
    assert_int_equal(t->nodes[2].first_npu, 5);
    assert_int_equal(t->nodes[2].type, 1);
    assert_close(t->npus[0].mem_bw, 3 * GB);
    assert_close(t->npus[0].peak_flops, 5e12);
    assert_string_equal(t->devs[t->npus[3].nic].name, "node0.nic1");
    assert_int_equal(checked_route(t, 3, 4, l, &lat), 4);
    assert_link(t, l[0], "node0.npu3", "node0.nic1", 3 * GB, 0);
    assert_link(t, l[2], "net", "node1.nic0", 7 * GB, 0);
    assert_close(lat, 2.5 * US);
    /* Node 0 | nodes 1, 2: per NIC min(10, 2 NPUs x 3 attach) = 6. */
    assert_close(summary(t).bisection_bw, 12 * GB);
    hccn_sim_topo_free(t);
}

#define LEAF_NODES(count, per, extra)                                         \
    "{\"version\":1,\"node_types\":[{\"count\":" count ",\"npu\":{\"count\":1,"\
    "\"arena_MiB\":1,\"reduce_bw_GBps\":1},\"nics\":{\"count\":1,"            \
    "\"bw_GBps\":10,\"lat_us\":2}}],\"network\":{\"type\":\"leaf_spine\","    \
    "\"lat_us\":1,\"nodes_per_leaf\":" per extra "}}"

static void test_leaf_variants(void **state)
{
    (void)state;
    int l[HCCN_SIM_ROUTE_MAX];
    double lat;
    /* Three nodes, two per leaf: the last leaf holds one node. */
    hccn_sim_topo_t *t = load_text(LEAF_NODES("3", "2", ",\"oversubscription\""
                                              ":4,\"spine_lat_us\":3"));
    assert_int_equal(t->nodes[2].leaf, 1);
    assert_int_equal(checked_route(t, 0, 2, l, &lat), 6);
    assert_link(t, l[2], "leaf0", "spine", 20 * GB / 4, 0);
    assert_link(t, l[3], "spine", "leaf1", 10 * GB / 4, 0);
    assert_close(lat, 2 * US + 1 * US + 3 * US + 1 * US);
    /* node 0 | nodes 1, 2: node 0 sends 10 GB/s to node 1 inside leaf 0. */
    assert_close(summary(t).bisection_bw, 10 * GB);
    hccn_sim_topo_free(t);
    /* One node per leaf: the halves meet only through 5 GB/s uplinks. */
    t = load_text(LEAF_NODES("4", "1", ",\"oversubscription\":2"));
    assert_close(summary(t).bisection_bw, 2 * 5 * GB);
    hccn_sim_topo_free(t);
}

static void test_single_node_network_ignored(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load_text("{\"version\":1,\"name\":\"solo\","
        "\"description\":\"x\",\"sources\":{\"a\":\"b\"},\"node_types\":[{"
        "\"count\":1,\"npu\":{\"count\":2,\"arena_MiB\":1,\"reduce_bw_GBps\""
        ":1},\"fabric\":{\"type\":\"mesh\",\"bw_GBps\":1,\"lat_us\":0},"
        "\"nics\":[{\"npus\":[1],\"bw_GBps\":1,\"lat_us\":0}]}],"
        "\"network\":{\"type\":\"switch\",\"lat_us\":1}}");
    assert_string_equal(t->name, "solo");
    assert_int_equal(t->ndevs, 2 + 1);           /* NPUs and the NIC */
    assert_int_equal(t->nlinks, 2 + 2);          /* mesh, NIC attach */
    assert_int_equal(t->npus[0].nic, -1);
    assert_int_equal(t->npus[1].nic, 2);
    hccn_sim_topo_free(t);
}

static void test_large_cluster(void **state)
{
    (void)state;
    int l[HCCN_SIM_ROUTE_MAX];
    double lat;
    hccn_sim_topo_t *t = load_text("{\"version\":1,\"node_types\":[{\"count\""
        ":8192,\"npu\":{\"count\":8,\"arena_MiB\":1,\"reduce_bw_GBps\":1},"
        "\"fabric\":{\"type\":\"mesh\",\"bw_GBps\":56,\"lat_us\":1.5},"
        "\"nics\":{\"count\":8,\"bw_GBps\":25,\"lat_us\":2}}],\"network\":{"
        "\"type\":\"leaf_spine\",\"lat_us\":1,\"nodes_per_leaf\":32}}");
    assert_int_equal(t->nnpus, 65536);
    assert_int_equal(t->nlinks, 8192 * (56 + 16 + 16) + 2 * 256);
    assert_int_equal(t->nodes[8191].leaf, 255);
    assert_int_equal(checked_route(t, 0, 65535, l, &lat), 6);
    assert_link(t, l[1], "node0.nic0", "leaf0", 25 * GB, 2 * US);
    assert_link(t, l[4], "leaf255", "node8191.nic7", 25 * GB, 0);
    assert_close(lat, 5 * US);
    assert_int_equal(checked_route(t, 65535, 65528, l, &lat), 1);
    assert_link(t, l[0], "node8191.npu7", "node8191.npu0", 56 * GB, 1.5 * US);
    hccn_sim_topo_free(t);
}

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */

static void test_bad_arguments(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = (hccn_sim_topo_t *)&t;
    char err[64];
    int l[HCCN_SIM_ROUTE_MAX];
    double lat = 1.0;
    assert_int_equal(hccn_sim_topo_load_file(NULL, &t, err, sizeof(err)),
                     HCCN_ERR_INVALID);
    assert_null(t);
    assert_int_equal(hccn_sim_topo_load_file("x", NULL, NULL, 0),
                     HCCN_ERR_INVALID);
    assert_int_equal(hccn_sim_topo_load_string(NULL, "s", &t, NULL, 0),
                     HCCN_ERR_INVALID);
    assert_int_equal(hccn_sim_topo_load_json(NULL, "s", NULL, err, 1),
                     HCCN_ERR_INVALID);
    assert_int_equal(hccn_sim_topo_load_json(NULL, NULL, &t, err, sizeof(err)),
                     HCCN_ERR_TOPOLOGY);  /* a JSON null document */
    assert_string_equal(err, "<json>: $: must be a JSON object (got null)");
    hccn_sim_topo_free(NULL);
    assert_int_equal(hccn_sim_topo_route(NULL, 0, 1, l, &lat), -1);
    assert_true(lat == 0.0);
    t = load_config("laptop-4.json");
    assert_int_equal(hccn_sim_topo_route(t, 0, 4, l, &lat), -1);
    assert_int_equal(hccn_sim_topo_route(t, -1, 0, l, &lat), -1);
    assert_int_equal(hccn_sim_topo_route(t, 2, 2, l, &lat), 0);
    assert_int_equal(hccn_sim_topo_route(t, 2, 1, NULL, NULL), 2);
    hccn_sim_topo_summarize(t, NULL);
    hccn_sim_topo_free(t);
}

static void test_io_errors(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = NULL;
    char err[512];
    const char *missing = test_path("configs/no-such-file.json");
    assert_int_equal(hccn_sim_topo_load_file(missing, &t, err, sizeof(err)),
                     HCCN_ERR_IO);
    assert_null(t);
    assert_true(strncmp(err, missing, strlen(missing)) == 0);
    assert_non_null(strstr(err, "cannot open"));
    assert_int_equal(hccn_sim_topo_load_file(test_path("configs"), &t, err,
                                             sizeof(err)), HCCN_ERR_IO);
    /* A short buffer gets a truncated, terminated message; none is fine. */
    assert_int_equal(hccn_sim_topo_load_string("[]", "abc", &t, err, 6),
                     HCCN_ERR_TOPOLOGY);
    assert_string_equal(err, "abc: ");
    assert_int_equal(hccn_sim_topo_load_string("[]", "abc", &t, NULL, 0),
                     HCCN_ERR_TOPOLOGY);
}

static void test_load_json_keeps_doc(void **state)
{
    (void)state;
    char *text = test_read_file(test_path("configs/ring-8.json"));
    hccn_sim_topo_t *t = NULL;
    char err[256];
    assert_non_null(text);
    json_object *doc = json_tokener_parse(text);
    assert_int_equal(hccn_sim_topo_load_json(doc, "mem", &t, err, sizeof(err)),
                     HCCN_OK);
    assert_int_equal(t->nnpus, 8);
    assert_string_equal(t->source, "mem");
    assert_string_equal(t->name, "ring-8");
    assert_int_equal(json_object_put(doc), 1);  /* still ours, freed here */
    hccn_sim_topo_free(t);
    free(text);
}

/* One invalid file: fails from the file and from its text with the
 * expected message, on one line. */
static void check_invalid(const char *dir, const char *file,
                          const char *expected)
{
    char path[8192], err[1024];
    hccn_sim_topo_t *t = (hccn_sim_topo_t *)&t;
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    hccn_status_t st = hccn_sim_topo_load_file(path, &t, err, sizeof(err));
    if (st != HCCN_ERR_TOPOLOGY || strstr(err, expected) == NULL ||
        strncmp(err, path, strlen(path)) != 0 || strchr(err, '\n') != NULL)
        print_error("%s: got [%s] status %d, expected [%s]\n", file, err, st,
                    expected);
    assert_int_equal(st, HCCN_ERR_TOPOLOGY);
    assert_null(t);
    assert_non_null(strstr(err, expected));
    assert_true(strncmp(err, path, strlen(path)) == 0);
    assert_null(strchr(err, '\n'));

    char *text = test_read_file(path);
    assert_non_null(text);
    st = hccn_sim_topo_load_string(text, file, &t, err, sizeof(err));
    assert_int_equal(st, HCCN_ERR_TOPOLOGY);
    assert_true(strncmp(err, file, strlen(file)) == 0);
    if (strstr(expected, "NUL byte") == NULL)  /* a string ends at its NUL */
        assert_non_null(strstr(err, expected));
    free(text);
}

static int listed(char **names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return 1;
    return 0;
}

static void test_invalid_corpus(void **state)
{
    (void)state;
    char dir[4096], line[1024], *names[512];
    int n = 0;
    snprintf(dir, sizeof(dir), "%s", test_path("tests/data/topo_invalid"));
    FILE *f = fopen(test_path("tests/data/topo_invalid/EXPECTED"), "r");
    assert_non_null(f);
    while (fgets(line, sizeof(line), f) != NULL && n < 512) {
        line[strcspn(line, "\r\n")] = '\0';
        char *sp = strchr(line, ' ');
        if (line[0] == '#' || line[0] == '\0' || sp == NULL)
            continue;
        *sp = '\0';
        check_invalid(dir, line, sp + 1);
        names[n++] = strcpy(malloc(strlen(line) + 1), line);
    }
    fclose(f);
    assert_true(n >= 30);
    DIR *d = opendir(dir);
    struct dirent *e;
    assert_non_null(d);
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len > 5 && strcmp(e->d_name + len - 5, ".json") == 0 &&
            !listed(names, n, e->d_name)) {
            print_error("%s is not listed in EXPECTED\n", e->d_name);
            fail();
        }
    }
    closedir(d);
    for (int i = 0; i < n; i++)
        free(names[i]);
}

/* Every prefix and many random corruptions of every config: the loader
 * accepts or rejects with one line, never crashes; what it accepts routes. */
static void fuzz_one(const char *text, const char *source)
{
    hccn_sim_topo_t *t = NULL;
    char err[1024];
    int l[HCCN_SIM_ROUTE_MAX];
    double lat;
    hccn_status_t st = hccn_sim_topo_load_string(text, source, &t, err,
                                                 sizeof(err));
    assert_true(st == HCCN_OK || st == HCCN_ERR_TOPOLOGY);
    if (st != HCCN_OK) {
        assert_null(t);
        assert_true(strncmp(err, source, strlen(source)) == 0);
        assert_null(strchr(err, '\n'));
        return;
    }
    for (int a = 0; a < t->nnpus && a < 16; a++) {
        int b = (7 * a + 1) % t->nnpus;
        if (b != a)
            checked_route(t, a, b, l, &lat);
    }
    summary(t);
    hccn_sim_topo_free(t);
}

static void test_fuzz_configs(void **state)
{
    (void)state;
    static const char *const files[] = {"default.json", "laptop-4.json",
                                        "ring-8.json", "leafspine-4x8.json",
                                        "pcie-8.json"};
    static const char junk[] = "0-9\"{}[],: e1.x\\";
    unsigned long long seed = 42;
    for (size_t k = 0; k < sizeof(files) / sizeof(files[0]); k++) {
        char rel[256];
        snprintf(rel, sizeof(rel), "configs/%s", files[k]);
        char *text = test_read_file(test_path(rel));
        assert_non_null(text);
        size_t len = strlen(text);
        char *buf = malloc(len + 1);
        for (size_t cut = 0; cut < len; cut++) {
            memcpy(buf, text, cut);
            buf[cut] = '\0';
            fuzz_one(buf, "prefix");
        }
        for (int i = 0; i < 2000; i++) {
            memcpy(buf, text, len + 1);
            for (int m = 0; m < 1 + i % 3; m++) {
                size_t at = test_rand_next(&seed) % len;
                buf[at] = junk[test_rand_next(&seed) % (sizeof(junk) - 1)];
            }
            fuzz_one(buf, "mutant");
        }
        free(buf);
        free(text);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_config_loads),
        cmocka_unit_test(test_default),
        cmocka_unit_test(test_laptop),
        cmocka_unit_test(test_ring8),
        cmocka_unit_test(test_pcie8),
        cmocka_unit_test(test_leafspine),
        cmocka_unit_test(test_ring_variants),
        cmocka_unit_test(test_mesh_switch_bisection),
        cmocka_unit_test(test_pcie_p2p),
        cmocka_unit_test(test_mixed_nodes),
        cmocka_unit_test(test_leaf_variants),
        cmocka_unit_test(test_single_node_network_ignored),
        cmocka_unit_test(test_large_cluster),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_io_errors),
        cmocka_unit_test(test_load_json_keeps_doc),
        cmocka_unit_test(test_invalid_corpus),
        cmocka_unit_test(test_fuzz_configs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
