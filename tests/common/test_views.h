/* Communicator placements (views) for the hierarchy tests. */
#ifndef HCCN_TEST_VIEWS_H
#define HCCN_TEST_VIEWS_H

#include "hierarchy/coll.h"

#define TEST_VIEW_MAXP 64

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

#endif
