/* Communicator placements (views) for the hierarchy tests. */
#ifndef HCCN_TEST_VIEWS_H
#define HCCN_TEST_VIEWS_H

#include "hierarchy/coll.h"
#include "hierarchy/cost.h"

#define TEST_VIEW_MAXP 128

/* A communicator's placement: nodes of the given sizes; ranks node by node
 * (node-major) or dealt round-robin over the nodes that still have room. */
typedef struct {
    int node[TEST_VIEW_MAXP], local[TEST_VIEW_MAXP];
    hccn_hier_view_t v;
    char name[64];
} test_view_t;

void test_make_view(test_view_t *w, const int *sizes, int nnodes, int dealt);

/* N nodes of L ranks, node-major. */
void test_even_view(test_view_t *w, int N, int L);

/* NPUs 0..p-1 of a topology as a communicator's ranks 0..p-1: the world,
 * the cost model's placement over it and its view (hccn_hier_cost_view).
 * pl points into the struct: fill it where it stays. */
typedef struct {
    int world[TEST_VIEW_MAXP], node[TEST_VIEW_MAXP], local[TEST_VIEW_MAXP];
    hccn_cost_place_t pl;
    hccn_hier_view_t v;
} test_place_t;

/* Fills t for NPUs 0..p-1 of topo (p <= TEST_VIEW_MAXP); fails the test
 * where the view cannot be made. */
void test_place(test_place_t *t, const hccn_sim_topo_t *topo, int p);

#endif
