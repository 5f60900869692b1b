/*
 * The "rings" row (hierarchy/algo_rings.c): its channel rule, its results
 * (every channel count, slices, in place and out, with the race check;
 * fp32 bits against a serial fold in each channel's ring order), and its
 * times against hand formulas: one channel is ring, C channels on
 * disjoint links are ring on 1/C of the data, and the pipeline's fill.
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
#include "hierarchy/rings.h"
#include "hierarchy/cost.h"
#include "hierarchy/select.h"
#include "sched_interp.h"
#include "test_engine.h"
#include "test_topo_load.h"
#include "test_util.h"
#include "test_views.h"

#define MIB ((uint64_t)1 << 20)

static const hccn_algo_t *rings(void)
{
    const hccn_algo_t *al = hccn_hier_algo_find("rings");
    assert_non_null(al);
    return al;
}

static hccn_sim_topo_t *load_config(const char *name)
{
    hccn_sim_topo_t *t = NULL;
    char err[512], path[512];
    snprintf(path, sizeof(path), "configs/%s", name);
    if (hccn_sim_topo_load_file(test_path(path), &t, err, sizeof(err)) != 0)
        fail_msg("%s: %s", name, err);
    return t;
}

/* The channels hccn_hier_cost_view derives for NPUs first..first+n-1. */
static int channels_of(const hccn_sim_topo_t *t, int first, int n)
{
    int world[64], node[64], local[64];
    for (int r = 0; r < n; r++)
        world[r] = first + r;
    hccn_cost_place_t pl = {t, world};
    hccn_hier_view_t v;
    assert_int_equal(hccn_hier_cost_view(&pl, n, node, local, &v), 0);
    return v.channels;
}

/* One channel per NIC of a node across nodes; the strides coprime to p on
 * a full mesh; one on a switch; the software section's "channels" wins. */
static void test_channel_rule(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load_config("hgx-a100.json");
    assert_int_equal(channels_of(t, 0, 16), 8);   /* 8 NICs a node */
    assert_int_equal(channels_of(t, 0, 8), 1);    /* NVSwitch: one link */
    hccn_sim_topo_free(t);
    t = load_config("mi300x-8.json");
    assert_int_equal(channels_of(t, 0, 8), 6);    /* 3 cycles, both ways */
    assert_int_equal(channels_of(t, 0, 7), 6);
    hccn_sim_topo_free(t);
    t = test_topo_load(
        "{\"version\": 1, \"stack\": \"nccl-2.2x\","
        " \"software\": {\"channels\": 3},"
        " \"node_types\": [{\"count\": 2, \"npu\": {\"count\": 4,"
        " \"arena_MiB\": 1, \"reduce_bw_GBps\": 100},"
        " \"fabric\": {\"type\": \"switch\","
        " \"bw_GBps\": 100, \"lat_us\": 1}, \"nics\": {\"count\": 1,"
        " \"bw_GBps\": 10, \"lat_us\": 1}}],"
        " \"network\": {\"type\": \"switch\", \"lat_us\": 1}}",
        "channels");
    assert_int_equal(channels_of(t, 0, 8), 3);
    hccn_sim_topo_free(t);
    test_topo_refused(
        "{\"version\": 1, \"software\": {\"channels\": 0},"
        " \"node_types\": [{\"count\": 1, \"npu\": {\"count\": 2,"
        " \"arena_MiB\": 1, \"reduce_bw_GBps\": 100},"
        " \"fabric\": {\"type\": \"switch\","
        " \"bw_GBps\": 100, \"lat_us\": 1}}]}",
        "channels0", "channels");
}

/* With a channel per NPU of an even node (mi300x-8 across nodes: 8 NICs,
 * one per NPU), the channels' paths through a node share no directed
 * link, each NPU starts one channel's path and ends one (its NIC carries
 * one channel in and one out), and every ring visits every rank once;
 * the rings cross from a node's last position to the next node's first. */
static void test_node_paths_disjoint(void **state)
{
    (void)state;
    enum { N = 2, L = 8, P = N * L };
    test_view_t w;
    test_even_view(&w, N, L);
    hccn_coll_args_t a = {.coll = HCCN_COLL_ALLREDUCE, .nranks = P,
                          .count = 1024, .esize = 4, .view = &w.v};
    int order[L * P];
    hccn_hier_rings_orders(&a, L, order);
    for (int node = 0; node < N; node++) {
        int used[L][L] = {{0}}, starts[L] = {0}, ends[L] = {0};
        for (int c = 0; c < L; c++) {
            const int *o = order + c * P + node * L;
            int seen[L] = {0};
            for (int i = 0; i < L; i++) {
                assert_int_equal(w.node[o[i]], node);
                seen[w.local[o[i]]]++;
                if (i > 0)
                    used[w.local[o[i - 1]]][w.local[o[i]]]++;
            }
            for (int l = 0; l < L; l++)
                assert_int_equal(seen[l], 1);
            starts[w.local[o[0]]]++;
            ends[w.local[o[L - 1]]]++;
        }
        for (int i = 0; i < L; i++) {
            assert_int_equal(starts[i], 1);
            assert_int_equal(ends[i], 1);
            for (int j = 0; j < L; j++)
                assert_int_equal(used[i][j], i != j);
        }
    }
}

/* ------------------------------------------------------------ results --- */

static uint32_t gen(int rank, uint64_t i)
{
    return (uint32_t)(rank * 1000003u + i * 7919u + 11u);
}

/* Runs a on view w with C channels and chunk bytes, in place and out,
 * shuffled, races checked; compares with the serial sum. */
static void check_sum(hccn_coll_t coll, test_view_t *w, int C,
                      uint64_t count, uint64_t chunk)
{
    const int p = w->v.nranks;
    w->v.channels = C;
    hccn_coll_args_t a = {.coll = coll, .nranks = p, .count = count,
                          .esize = 4, .view = &w->v, .chunk_bytes = chunk};
    hccn_sched_t *s = hccn_hier_build(rings(), &a);
    assert_non_null(s);
    for (int inplace = 0; inplace < 2; inplace++) {
        sched_interp_host_t h;
        sched_interp_host_setup(&h, &a, inplace, gen);
        sched_interp_opts_t o = {sched_interp_sum_u32, NULL, 7, 1};
        char why[256];
        if (sched_interp_run(s, h.b, &o, why, sizeof(why)) != 0)
            fail_msg("rings %s %s C=%d: %s", hccn_coll_name(coll), w->name,
                     C, why);
        for (int r = 0; r < p; r++) {
            const uint32_t *got = h.b[r].recv;
            uint64_t n = coll == HCCN_COLL_ALLGATHER ? count * p : count;
            for (uint64_t i = 0; i < n; i++) {
                uint32_t want = 0;
                if (coll == HCCN_COLL_ALLGATHER)
                    want = gen((int)(i / count), i % count);
                else
                    for (int q = 0; q < p; q++)
                        want += gen(q, coll == HCCN_COLL_ALLREDUCE
                                           ? i
                                           : (uint64_t)r * count + i);
                if (got[i] != want)
                    fail_msg("rings %s %s C=%d rank %d element %llu: %u, "
                             "want %u", hccn_coll_name(coll), w->name, C, r,
                             (unsigned long long)i, got[i], want);
            }
        }
        sched_interp_host_free(&h, p);
    }
    hccn_sched_free(s);
}

static void test_results(void **state)
{
    (void)state;
    static const int uneven[] = {3, 2, 3};
    test_view_t w;
    for (int c = 0; c < 3; c++) {
        hccn_coll_t coll = (hccn_coll_t)c;   /* allreduce, rs, allgather */
        test_even_view(&w, 1, 8);
        check_sum(coll, &w, 6, 1001, 0);
        check_sum(coll, &w, 6, 1001, 8);      /* many slices */
        check_sum(coll, &w, 8, 1001, 40);     /* cycles repeat */
        check_sum(coll, &w, 3, 5, 4);         /* empty blocks */
        test_even_view(&w, 2, 4);
        check_sum(coll, &w, 4, 777, 12);
        check_sum(coll, &w, 2, 64, 0);
        test_make_view(&w, uneven, 3, 0);
        check_sum(coll, &w, 2, 333, 16);
        test_even_view(&w, 1, 2);
        check_sum(coll, &w, 1, 9, 4);
    }
}

static uint32_t gen_f32(int rank, uint64_t i)
{
    float f = (float)(1.0 / (1.0 + rank * 3.0 + (double)(i % 17))) *
              (rank % 2 ? -1.0f : 1.0f) * (float)(1 + i % 5) * 1e3f;
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* Element e's part when n elements are split in parts near-equal
 * contiguous parts, the first n % parts one longer; *at: its index in it,
 * *len: the part's length. */
static uint64_t part_of(uint64_t e, uint64_t n, uint64_t parts, uint64_t *at,
                        uint64_t *len)
{
    uint64_t q = n / parts, rem = n % parts, k;
    k = e < rem * (q + 1) ? e / (q + 1) : rem + (e - rem * (q + 1)) / q;
    *at = e - (k * q + (k < rem ? k : rem));
    *len = q + (k < rem ? 1 : 0);
    return k;
}

/* On one node of 8 with 6 channels, channel c is Walecki's cycle c/2 of
 * K8, forwards for even c and backwards for odd c (the fixture below),
 * and block j of a channel is the left fold from position j along it.
 * Every rank gets those bits. */
static void test_fp32_order(void **state)
{
    (void)state;
    static const int ring[6][8] = {
        {7, 0, 1, 6, 2, 5, 3, 4}, {7, 4, 3, 5, 2, 6, 1, 0},
        {7, 1, 2, 0, 3, 6, 4, 5}, {7, 5, 4, 6, 3, 0, 2, 1},
        {7, 2, 3, 1, 4, 0, 5, 6}, {7, 6, 5, 0, 4, 1, 3, 2},
    };
    const int p = 8, C = 6;
    const uint64_t count = 999;
    test_view_t w;
    test_even_view(&w, 1, p);
    w.v.channels = C;
    hccn_coll_args_t a = {.coll = HCCN_COLL_ALLREDUCE, .nranks = p,
                          .count = count, .esize = 4, .view = &w.v,
                          .chunk_bytes = 8};
    hccn_sched_t *s = hccn_hier_build(rings(), &a);
    assert_non_null(s);
    sched_interp_host_t h;
    sched_interp_host_setup(&h, &a, 0, gen_f32);
    sched_interp_opts_t o = {sched_interp_sum_f32, NULL, 3, 1};
    char why[256];
    if (sched_interp_run(s, h.b, &o, why, sizeof(why)) != 0)
        fail_msg("%s", why);
    for (uint64_t e = 0; e < count; e++) {
        uint64_t in_c, len, in_j, blen;
        uint64_t c = part_of(e, count, C, &in_c, &len);
        uint64_t j = part_of(in_c, len, p, &in_j, &blen);
        float acc = 0.0f;
        for (int t = 0; t < p; t++) {
            uint32_t u = gen_f32(ring[c][(j + (uint64_t)t) % p], e);
            float x;
            memcpy(&x, &u, 4);
            acc = t == 0 ? x : acc + x;
        }
        for (int r = 0; r < p; r++) {
            const float *got = h.b[r].recv;
            if (memcmp(&got[e], &acc, 4) != 0)
                fail_msg("element %llu rank %d: %.9g, serial %.9g",
                         (unsigned long long)e, r, got[e], acc);
        }
    }
    sched_interp_host_free(&h, p);
    hccn_sched_free(s);
}

/* -------------------------------------------------------------- times --- */

/* Engine time and closed form of algo on NPUs 0..p-1 of t. */
static double engine(const hccn_sim_topo_t *t, const char *algo,
                     hccn_coll_t coll, int p, uint64_t count, uint64_t chunk,
                     double *form)
{
    test_place_t pt;
    test_place(&pt, t, p);
    hccn_coll_args_t a = {.coll = coll, .nranks = p, .count = count,
                          .esize = 4, .view = &pt.v, .chunk_bytes = chunk};
    const hccn_algo_t *al = hccn_hier_algo_find(algo);
    hccn_sched_t *s = hccn_hier_build(al, &a);
    assert_non_null(s);
    double e = test_engine_time(t, s, pt.world, NULL);
    hccn_sched_free(s);
    if (form != NULL)
        *form = hccn_hier_cost(al, &a, &pt.pl, HCCN_COST_MODEL, NULL);
    return e;
}

/* default.json's first node: 8 NPUs, every pair its own 56 GB/s, 1.5 us
 * link: 6 channels on disjoint directed links. */
static void test_disjoint_channels(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load_config("default.json");
    const int p = 8, C = 6;
    const double al = 1.5e-6, B = 56e9;
    uint64_t count = 6 * 131072;    /* 3 MiB a rank: 512 KiB a channel */
    double form;
    double e = engine(t, "rings", HCCN_COLL_ALLGATHER, p, count, 2 * MIB,
                      &form);
    double ring = engine(t, "ring", HCCN_COLL_ALLGATHER, p, count / C, 0,
                         NULL);
    double b = (double)(count * 4) / C;
    test_assert_rel(e, (p - 1) * (al + b / B), 1e-9, "allgather formula");
    test_assert_rel(e, ring, 1e-9, "rings == ring on 1/C");
    test_assert_rel(form, e, 1e-9, "allgather closed form");
    /* reduce_scatter: a rank's reductions of the C channels queue on its
     * one reduce unit (200 GB/s); the form walks the same queue */
    e = engine(t, "rings", HCCN_COLL_REDUCE_SCATTER, p, count, 2 * MIB,
               &form);
    test_assert_rel(form, e, 1e-9, "reduce_scatter closed form");
    e = engine(t, "rings", HCCN_COLL_ALLREDUCE, p, 8 * count, 2 * MIB,
               &form);
    test_assert_rel(form, e, 1e-9, "allreduce closed form");
    hccn_sim_topo_free(t);
}

/* K slices of d = slice / B each: slice s of step k starts at
 * max(k (alpha + d) + s d, (k K + s) d), so the allgather's p-1 steps end
 * at max((p-1)(alpha + d) + (K-1) d, (p-1) K d + alpha). Both regimes:
 * latency-bound (small slices) and bandwidth-bound. */
static void test_pipeline_fill(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load_config("default.json");
    const int p = 8, C = 6;
    const double al = 1.5e-6, B = 56e9;
    static const uint64_t slices[] = {4096, 65536, 262144};
    for (int i = 0; i < 3; i++) {
        const int K = 16;
        uint64_t sl = slices[i], count = sl * K * C / 4;
        double d = (double)sl / B, form;
        double e = engine(t, "rings", HCCN_COLL_ALLGATHER, p, count, sl,
                          &form);
        double want = fmax((p - 1) * (al + d) + (K - 1) * d,
                           (p - 1) * K * d + al);
        test_assert_rel(e, want, 1e-9, "pipeline fill formula");
        test_assert_rel(form, e, 1e-9, "pipeline closed form");
    }
    hccn_sim_topo_free(t);
}

/* One channel, one slice: ring's schedule time, on a switch
 * (laptop-4.json: one channel) and with reductions. */
static void test_one_channel_is_ring(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load_config("laptop-4.json");
    static const hccn_coll_t colls[] = {HCCN_COLL_ALLREDUCE,
                                        HCCN_COLL_REDUCE_SCATTER,
                                        HCCN_COLL_ALLGATHER};
    for (int c = 0; c < 3; c++) {
        uint64_t count = colls[c] == HCCN_COLL_ALLREDUCE ? 100000 : 25000;
        double form;
        double e = engine(t, "rings", colls[c], 4, count, 0, &form);
        double r = engine(t, "ring", colls[c], 4, count, 0, NULL);
        test_assert_rel(e, r, 1e-9, "one channel == ring");
        test_assert_rel(form, e, 1e-9, "one channel closed form");
    }
    hccn_sim_topo_free(t);
}

/* Where no reduce unit hears two positions (one channel, or an
 * allgather) the closed form takes the sends step by step instead of in
 * order of arrival (rings_cost.c, rc_sweep): the same times, bit for bit,
 * as its heap's walk. One channel over 4 nodes whose NICs are slower than
 * their switch (positions of two speeds), with several slices a step and
 * uneven or empty pieces; and hgx-a100's 8 channels for the allgather. */
static double form_of(const hccn_sim_topo_t *t, hccn_coll_t coll, int p,
                      uint64_t count, uint64_t chunk, int heap, int *C,
                      int *K)
{
    test_place_t pt;
    test_place(&pt, t, p);
    hccn_coll_args_t a = {.coll = coll, .nranks = p, .count = count,
                          .esize = 4, .view = &pt.v, .chunk_bytes = chunk};
    hccn_hier_rings_size(&a, C, K);
    hccn_hier_rings_cost_heap(heap);
    double f = hccn_hier_cost(hccn_hier_algo_find("rings"), &a, &pt.pl,
                              HCCN_COST_MODEL, NULL);
    hccn_hier_rings_cost_heap(0);
    return f;
}

static void test_sweep_is_walk(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = test_topo_load(
        "{\"version\": 1, \"stack\": \"nccl-2.2x\","
        " \"software\": {\"channels\": 1},"
        " \"node_types\": [{\"count\": 4, \"npu\": {\"count\": 8,"
        " \"arena_MiB\": 1, \"reduce_bw_GBps\": 100},"
        " \"fabric\": {\"type\": \"switch\","
        " \"bw_GBps\": 100, \"lat_us\": 1}, \"nics\": {\"count\": 1,"
        " \"bw_GBps\": 10, \"lat_us\": 2}}],"
        " \"network\": {\"type\": \"switch\", \"lat_us\": 1}}",
        "sweep");
    static const hccn_coll_t colls[] = {HCCN_COLL_ALLREDUCE,
                                        HCCN_COLL_REDUCE_SCATTER,
                                        HCCN_COLL_ALLGATHER};
    static const uint64_t counts[] = {5, 1000003, 4u << 20};
    const int p = 32;
    for (int c = 0; c < 3; c++)
        for (int k = 0; k < 3; k++) {
            int C, K;
            double sweep = form_of(t, colls[c], p, counts[k], 65536, 0, &C,
                                   &K);
            double heap = form_of(t, colls[c], p, counts[k], 65536, 1, &C,
                                  &K);
            assert_int_equal(C, 1);
            if (k == 2)
                assert_true(K > 1);
            if (!(sweep > 0.0 && sweep == heap))
                fail_msg("%s count %llu: sweep %a, heap %a",
                         hccn_coll_name(colls[c]),
                         (unsigned long long)counts[k], sweep, heap);
        }
    hccn_sim_topo_free(t);
    t = load_config("hgx-a100.json");
    for (int k = 0; k < 3; k++) {
        int C, K;
        double sweep = form_of(t, HCCN_COLL_ALLGATHER, 16, counts[k], 0, 0,
                               &C, &K);
        double heap = form_of(t, HCCN_COLL_ALLGATHER, 16, counts[k], 0, 1,
                              &C, &K);
        assert_int_equal(C, 8);
        if (!(sweep > 0.0 && sweep == heap))
            fail_msg("hgx-a100 allgather count %llu: sweep %a, heap %a",
                     (unsigned long long)counts[k], sweep, heap);
    }
    hccn_sim_topo_free(t);
}

/* ---------------------------------------------------------- selection --- */

/* The pick for allreduce, reduce_scatter, allgather of bytes on NPUs
 * 0..p-1 of t, under spec (NULL: the default choice). */
static const char *pick(const hccn_sim_topo_t *t, hccn_coll_t coll, int p,
                        uint64_t bytes, const char *spec)
{
    int world[64];
    for (int r = 0; r < p; r++)
        world[r] = r;
    hccn_coll_args_t a = {.coll = coll, .nranks = p, .count = bytes / 4,
                          .esize = 4};
    if (coll != HCCN_COLL_ALLREDUCE)
        a.count /= (uint64_t)p;
    hccn_hier_select_in_t in = {t, world, spec, NULL};
    char why[256];
    const hccn_algo_t *al = hccn_hier_select(&a, &in, why, sizeof(why),
                                             NULL, 0);
    if (al == NULL)
        fail_msg("%s", why);
    return al->name;
}

/* Without a stack (default.json) the row runs by name only: the default
 * choice never takes it, and a spec does. Under one (hgx-a100.json,
 * nccl-2.2x, no reducing switch) the default choice of the three
 * collectives keeps to the library's algorithms, rings and tree
 * (docs/selection.md), and a large message goes round the rings. */
static void test_selection(void **state)
{
    (void)state;
    static const uint64_t sizes[] = {8, 65536, 8 * MIB, 256 * MIB};
    hccn_sim_topo_t *plain = load_config("default.json");
    hccn_sim_topo_t *stack = load_config("hgx-a100.json");
    for (int c = 0; c < 3; c++) {
        for (int k = 0; k < 4; k++) {
            const char *mine = pick(stack, (hccn_coll_t)c, 16, sizes[k], NULL);
            if (strcmp(mine, "rings") != 0 && strcmp(mine, "tree") != 0)
                fail_msg("%s of %llu B under a stack: %s",
                         hccn_coll_name((hccn_coll_t)c),
                         (unsigned long long)sizes[k], mine);
            assert_string_not_equal(
                pick(plain, (hccn_coll_t)c, 16, sizes[k], NULL), "rings");
            assert_string_equal(
                pick(plain, (hccn_coll_t)c, 16, sizes[k], "rings"), "rings");
        }
        assert_string_equal(pick(stack, (hccn_coll_t)c, 16, 256 * MIB, NULL),
                            "rings");
    }
    hccn_sim_topo_free(plain);
    hccn_sim_topo_free(stack);
}

/* rccl-2.x on one MI300X node (mi300x-8.json, a full xGMI mesh): an
 * allreduce up to allpairs_max_bytes (16 MiB) may take the library's
 * all-pairs schedule, "mesh", and does where it is the cheapest; above it,
 * or on two nodes, or with allpairs_max_bytes 0, never; the other
 * collectives never. */
static void test_allpairs(void **state)
{
    (void)state;
    hccn_sim_topo_t *t = load_config("mi300x-8.json");
    assert_non_null(t->sw);
    assert_true(t->sw->allpairs_max_bytes == 16.0 * MIB);
    assert_string_equal(pick(t, HCCN_COLL_ALLREDUCE, 8, 8, NULL), "mesh");
    assert_string_equal(pick(t, HCCN_COLL_ALLREDUCE, 8, 16 * MIB, NULL),
                        "mesh");
    assert_string_not_equal(pick(t, HCCN_COLL_ALLREDUCE, 8, 32 * MIB, NULL),
                            "mesh");
    assert_string_not_equal(pick(t, HCCN_COLL_ALLGATHER, 8, MIB, NULL),
                            "mesh");
    assert_string_not_equal(pick(t, HCCN_COLL_ALLREDUCE, 16, MIB, NULL),
                            "mesh");
    t->sw->allpairs_max_bytes = 0.0;
    assert_string_not_equal(pick(t, HCCN_COLL_ALLREDUCE, 8, 8, NULL), "mesh");
    hccn_sim_topo_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_channel_rule),
        cmocka_unit_test(test_node_paths_disjoint),
        cmocka_unit_test(test_results),
        cmocka_unit_test(test_fp32_order),
        cmocka_unit_test(test_disjoint_channels),
        cmocka_unit_test(test_pipeline_fill),
        cmocka_unit_test(test_one_channel_is_ring),
        cmocka_unit_test(test_sweep_is_walk),
        cmocka_unit_test(test_selection),
        cmocka_unit_test(test_allpairs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
