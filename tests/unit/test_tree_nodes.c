/*
 * The tree across nodes (hierarchy/tree.h, docs/algorithms.md tree): its
 * shape against trees written out by hand, its chunks against the rule
 * worked by hand, and each rank's bytes sent against the count the shape
 * implies. Results are checked in test_algos_hier.c (tree on views of
 * several nodes); engine against closed form in test_cost.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "device_sim/alloc.h"
#include "hierarchy/coll.h"
#include "hierarchy/tree.h"
#include "sched_interp.h"
#include "test_views.h"

enum { N = 5, L = 4, P = N * L };

/* The double binary tree over 5 nodes, by hand: tree A is the bit tree
 * over positions 0..4 (root 0 over 4; 4 over 2, whose 4 + 2 = 6 and
 * 4 + 1 = 5 fall past 4; 2 over 1 and 3), tree B the same over positions
 * shifted by one (position i is node i+1 mod 5: root 1 over 0; 0 over 3;
 * 3 over 2 and 4). */
static const int node_up[2][N] = {{-1, 2, 4, 2, 0}, {1, -1, 3, 0, 3}};

static hccn_coll_args_t args(const test_view_t *w, uint64_t count)
{
    return (hccn_coll_args_t){.coll = HCCN_COLL_ALLREDUCE,
                              .nranks = w->v.nranks, .count = count,
                              .esize = 4, .view = &w->v};
}

/* Which rank of node n has local index l, in view w. */
static int rank_at(const test_view_t *w, int n, int l)
{
    for (int r = 0; r < w->v.nranks; r++)
        if (w->node[r] == n && w->local[r] == l)
            return r;
    fail_msg("no rank %d on node %d", l, n);
    return -1;
}

/* Two chain orders over nodes of 4 (channels = 2, not one per NPU): the
 * rings' channel c enters a node at local c L / 2, its head. Every other
 * rank's parent is in its own node and its chain reaches the head in at
 * most L - 1 steps; a head's parent is the head of its node's parent in
 * tree t mod 2. Dealt placements too: the shape follows the view. */
static void check_shape(const test_view_t *w)
{
    hccn_coll_args_t a = args(w, 1 << 20);
    hccn_tree_shape_t sh;
    assert_true(hccn_hier_tree_nodes(&a));
    assert_int_equal(hccn_hier_tree_shape(&a, &sh), 0);
    assert_int_equal(sh.T, 4);
    assert_int_equal(sh.depth, (L - 1) + 2);
    for (int t = 0; t < sh.T; t++) {
        const int *par = sh.parent + (size_t)t * P;
        int roots = 0;
        for (int n = 0; n < N; n++) {
            int head = rank_at(w, n, (t / 2) * L / 2);
            int up = node_up[t % 2][n];
            int want = up < 0 ? -1 : rank_at(w, up, (t / 2) * L / 2);
            if (par[head] != want)
                fail_msg("%s channel %d: node %d's head %d has parent %d, "
                         "expected %d", w->name, t, n, head, par[head], want);
            roots += up < 0;
            for (int l = 0; l < L; l++) {
                int r = rank_at(w, n, l), hops = 0;
                while (r != head && hops < L) {
                    r = par[r];
                    if (r < 0 || w->node[r] != n)
                        fail_msg("%s channel %d: a chain of node %d leaves "
                                 "it", w->name, t, n);
                    hops++;
                }
                assert_true(hops < L);
            }
        }
        assert_int_equal(roots, 1);
        /* A chain: no rank has two children inside its node. */
        for (int r = 0; r < P; r++) {
            int kids = 0;
            for (int u = 0; u < P; u++)
                kids += par[u] == r && w->node[u] == w->node[r];
            assert_true(kids <= 1);
        }
    }
    hccn_sim_free(sh.parent);
}

static void test_shape(void **state)
{
    (void)state;
    test_view_t w;
    int sizes[N] = {L, L, L, L, L};
    test_make_view(&w, sizes, N, 0);
    w.v.channels = 2;
    check_shape(&w);
    test_make_view(&w, sizes, N, 1);
    w.v.channels = 2;
    check_shape(&w);
    /* Another collective, one node or two: the flat double binary
     * tree. */
    hccn_coll_args_t a = args(&w, 100);
    a.coll = HCCN_COLL_BROADCAST;
    assert_false(hccn_hier_tree_nodes(&a));
    test_even_view(&w, 1, 8);
    a = args(&w, 100);
    assert_false(hccn_hier_tree_nodes(&a));
    test_even_view(&w, 2, 4);
    a = args(&w, 100);
    assert_false(hccn_hier_tree_nodes(&a));
    test_even_view(&w, 3, 1);
    a = args(&w, 100);
    assert_true(hccn_hier_tree_nodes(&a));
}

/* The chunk a channel's part is cut in: 1 MiB halved while the part is
 * under 8 chunks per hop of depth, down to 8 KiB; at most 2^20 transfers
 * (T channels x K chunks x 2 (p-1) edges). Worked by hand for 5 nodes of
 * 4, channels 2 (T = 4, depth 5: 40 chunks a channel). */
static void test_chunks(void **state)
{
    (void)state;
    test_view_t w;
    test_even_view(&w, N, L);
    w.v.channels = 2;
    static const struct {
        uint64_t count, chunk, K;
    } cases[] = {
        /* part 64 MiB >= 40 x 1 MiB: 1 MiB chunks, 64 of them */
        {(uint64_t)64 << 20, 1 << 20, 64},
        /* part 4 MiB: 512 KiB would be 8, 128 KiB is 32, 64 KiB is 64 */
        {(uint64_t)4 << 20, 64 << 10, 64},
        /* part 40 KiB: down to the floor, 5 chunks */
        {40 << 10, 8 << 10, 5},
        /* part 4 bytes: one chunk of the floor */
        {4, 8 << 10, 1},
        /* part 64 GiB: 65536 chunks of 1 MiB is more than 2^20 / (4 x 2 x
         * 19) = 6898 a channel: ceil(2^36 / 6898) = 9962233 bytes, up
         * to whole elements 9962236, 6898 chunks */
        {(uint64_t)64 << 30, 9962236, 6898},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        hccn_coll_args_t a = args(&w, cases[i].count);
        hccn_tree_shape_t sh;
        hccn_hier_tree_size(&a, &sh);
        if (sh.chunk != cases[i].chunk || sh.K != cases[i].K)
            fail_msg("count %llu: chunk %llu x %llu, expected %llu x %llu",
                     (unsigned long long)cases[i].count,
                     (unsigned long long)sh.chunk, (unsigned long long)sh.K,
                     (unsigned long long)cases[i].chunk,
                     (unsigned long long)cases[i].K);
    }
    /* A given chunk is taken as it is. */
    hccn_coll_args_t a = args(&w, 1000);
    a.chunk_bytes = 64;
    hccn_tree_shape_t sh;
    hccn_hier_tree_size(&a, &sh);
    assert_int_equal(sh.chunk, 64);
    assert_int_equal(sh.K, 16);   /* part 250 elements, 1000 bytes */
}

/* Every rank sends each channel's part once up (but its root) and once
 * down to each child, in the shape's trees (checked above against the
 * hand trees): each rank's bytes sent by the schedule against that
 * count. */
static void test_bytes(void **state)
{
    (void)state;
    test_view_t w;
    test_even_view(&w, N, L);
    w.v.channels = 2;
    const uint64_t count = 4003;   /* parts of 1001, 1001, 1001, 1000 */
    hccn_coll_args_t a = args(&w, count);
    hccn_tree_shape_t sh;
    assert_int_equal(hccn_hier_tree_shape(&a, &sh), 0);
    hccn_sched_t *s = hccn_hier_build(hccn_hier_algo_find("tree"), &a);
    assert_non_null(s);
    for (int r = 0; r < P; r++) {
        unsigned long long want = 0;
        for (int t = 0; t < sh.T; t++) {
            const int *par = sh.parent + (size_t)t * P;
            unsigned long long part = 4 * (count / 4 + (t < (int)(count % 4)));
            int sends = par[r] >= 0;
            for (int u = 0; u < P; u++)
                sends += par[u] == r;
            want += part * (unsigned long long)sends;
        }
        unsigned long long got = sched_interp_bytes_sent(s, r);
        if (got != want)
            fail_msg("rank %d sends %llu bytes, expected %llu", r, got, want);
    }
    hccn_sched_free(s);
    hccn_sim_free(sh.parent);
}

/* The double binary tree itself (hccn_hier_dtree): over 6 members by
 * hand (tree A: 0 over 4; 4 over 2 and 5, 4 + 2 = 6 falling past 5; 2
 * over 1 and 3; tree B its mirror, m standing at 5 - m); and for every n
 * up to 200 two trees of one root whose every member reaches it, tree
 * A's depth ceil(log2 n), each inner member (odd positions are leaves)
 * with at most two children, and for even n every member inner in
 * exactly one of them (so a member's link carries one tree's three
 * edges and the other's one, at most four). */
static void test_dtree(void **state)
{
    (void)state;
    static const int six[2][6] = {{-1, 2, 4, 2, 0, 4}, {1, 5, 3, 1, 3, -1}};
    int up[2][200], kids[2][200];
    for (int k = 0; k < 2; k++) {
        hccn_hier_dtree(6, k, up[k]);
        for (int m = 0; m < 6; m++)
            if (up[k][m] != six[k][m])
                fail_msg("6 members, tree %d: %d's parent %d, expected %d",
                         k, m, up[k][m], six[k][m]);
    }
    for (int n = 1; n <= 200; n++) {
        int ceil_log2 = 0;
        while ((1 << ceil_log2) < n)
            ceil_log2++;
        for (int k = 0; k < 2; k++) {
            int roots = 0, deepest = 0;
            hccn_hier_dtree(n, k, up[k]);
            memset(kids[k], 0, sizeof(kids[k]));
            for (int m = 0; m < n; m++) {
                int d = 0;
                for (int u = m; up[k][u] >= 0 && d <= n; u = up[k][u])
                    d++;
                if (d > n)
                    fail_msg("%d members, tree %d: %d never reaches the "
                             "root", n, k, m);
                deepest = d > deepest ? d : deepest;
                roots += up[k][m] < 0;
                if (up[k][m] >= 0)
                    kids[k][up[k][m]]++;
            }
            assert_int_equal(roots, 1);
            if (k == 0)
                assert_int_equal(deepest, ceil_log2);
            for (int m = 0; m < n; m++)
                assert_true(kids[k][m] <= 2);
        }
        for (int m = 0; n % 2 == 0 && m < n; m++)
            if ((kids[0][m] > 0) == (kids[1][m] > 0))
                fail_msg("%d members: %d is inner in %s tree", n, m,
                         kids[0][m] > 0 ? "both" : "neither");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dtree),
        cmocka_unit_test(test_shape),
        cmocka_unit_test(test_chunks),
        cmocka_unit_test(test_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
