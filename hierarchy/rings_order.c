/*
 * The ring of each channel of the "rings" row (algo_rings.c). On one node,
 * channel c is the c-th of the directed Hamiltonian cycles of a full mesh
 * that share no link (Walecki's decomposition, both directions: 2 floor(
 * (p-1)/2) of them; channels beyond repeat them). On several nodes, the
 * nodes in view order, and inside each node of L ranks the node's c-th
 * such cycle (over local indices) from the rank of NIC c (local c L/C),
 * with the rank of NIC c+1 (local (c+1) L/C) moved to the end: channel c
 * enters every node through NIC c, leaves it through NIC c+1, and spreads
 * over the node's links much as on one node; with a channel per NPU of an
 * even node, the node's L link-disjoint Hamiltonian paths (mesh_path),
 * each from an NPU of its own to another. On a switch every order
 * costs the same. One channel keeps rank (local) order.
 */
#include <string.h>

#include "device_sim/alloc.h"
#include "hierarchy/rings.h"

/* The directed Hamiltonian cycles of a full mesh of n members that share
 * no link: Walecki's decomposition of the complete graph (members n-1 and
 * the zigzags j, j+1, j-1, j+2, j-2, ... over 0..n-2, for j = 0 ..
 * (n-1)/2 - 1), each cycle in both directions. */
int hccn_hier_rings_mesh_cycles(int n)
{
    return n < 3 ? 1 : 2 * ((n - 1) / 2);
}

/* Cycle d (d mod hccn_hier_rings_mesh_cycles(n)) of n members: position
 * i holds member o[i]; o[0] = n - 1. */
static void mesh_cycle(int n, int d, int *o)
{
    if (n < 3) {
        for (int i = 0; i < n; i++)
            o[i] = i;
        return;
    }
    const int M = n - 1;
    d %= hccn_hier_rings_mesh_cycles(n);
    int j = d / 2, len = 1;
    o[0] = M;
    o[len++] = j;
    for (int t = 1; len < n; t++) {
        o[len++] = (j + t) % M;
        if (len < n)
            o[len++] = ((j - t) % M + M) % M;
    }
    if (d % 2 == 1)   /* the same cycle the other way round */
        for (int i = 1; i < n - i; i++) {
            int x = o[i];
            o[i] = o[n - i];
            o[n - i] = x;
        }
}

/* Directed Hamiltonian path d of a decomposition of the complete
 * symmetric digraph on n members (n even) into n paths: Walecki's zigzag
 * j, j+1, j-1, j+2, j-2, ..., j+n/2 (mod n) for j = d/2, the other way
 * round for odd d. Every member starts one path and ends one. */
static void mesh_path(int n, int d, int *o)
{
    int j = (d % n) / 2;
    for (int i = 0; i < n; i++) {
        int t = (i + 1) / 2;
        o[i] = ((j + (i % 2 ? t : -t)) % n + n) % n;
    }
    if (d % 2 == 1)
        for (int i = 0; i < n - 1 - i; i++) {
            int x = o[i];
            o[i] = o[n - 1 - i];
            o[n - 1 - i] = x;
        }
}

/* The C channels' paths through one node of L ranks (rk, local order),
 * written at o[c p + i] for i from 0. With a channel per NPU (C == L, L
 * even; each NPU its own NIC), channel c follows path c of mesh_path:
 * the channels share no link inside the node and enter and leave it by
 * NPUs (NICs) of their own. Otherwise channel c enters at local e = c L/C
 * (the NPU of NIC c) and leaves by local x = (c+1) L/C (of NIC c+1): the
 * node's mesh cycle c (local order for one channel, or nodes beyond
 * HCCN_RINGS_SEG_MAX) from e, without x, then x. */
static void node_paths(const int *rk, int L, int C, int p, int *o)
{
    int cyc[HCCN_RINGS_SEG_MAX] = {0};
    for (int c = 0; c < C; c++) {
        int e = (int)((long long)c * L / C);
        int x = (int)((long long)((c + 1) % C) * L / C);
        int *oc = o + (size_t)c * p, n = 0, at = 0;
        if (C == L && L % 2 == 0 && L > 1 && L <= HCCN_RINGS_SEG_MAX) {
            mesh_path(L, c, cyc);
            for (int i = 0; i < L; i++)
                oc[i] = rk[cyc[i]];
            continue;
        }
        if (C == 1 || L > HCCN_RINGS_SEG_MAX)
            for (int i = 0; i < L; i++)
                cyc[i] = i;
        else
            mesh_cycle(L, c, cyc);
        while (cyc[at] != e)
            at++;
        for (int j = 0; j < L; j++) {
            int l = cyc[(at + j) % L];
            if (l != x || x == e)
                oc[n++] = rk[l];
        }
        if (x != e)
            oc[n++] = rk[x];
    }
}

/* The ranks of each node in local order: rk[first[n] + local]. */
static int by_node(const hccn_hier_view_t *v, int p, int *first, int *rk)
{
    memset(first, 0, ((size_t)v->nnodes + 1) * sizeof(int));
    for (int r = 0; r < p; r++)
        first[v->node[r] + 1]++;
    for (int n = 0; n < v->nnodes; n++)
        first[n + 1] += first[n];
    for (int r = 0; r < p; r++)
        rk[first[v->node[r]] + v->local[r]] = r;
    return 0;
}

void hccn_hier_rings_orders(const hccn_coll_args_t *a, int C, int *order)
{
    const int p = a->nranks;
    const hccn_hier_view_t *v = a->view;
    int *first = NULL, *rk = NULL;
    if (v != NULL && v->nnodes > 1) {
        first = hccn_sim_malloc(((size_t)v->nnodes + 1) * sizeof(int));
        rk = hccn_sim_malloc((size_t)p * sizeof(int));
    }
    if (first == NULL || rk == NULL) {
        for (int c = 0; c < C; c++) {
            int *o = order + (size_t)c * p;
            if (C > 1 && p <= HCCN_RINGS_SEG_MAX)
                mesh_cycle(p, c, o);
            else
                for (int i = 0; i < p; i++)
                    o[i] = i;
        }
    } else {
        by_node(v, p, first, rk);
        for (int node = 0; node < v->nnodes; node++)
            node_paths(rk + first[node], first[node + 1] - first[node], C,
                       p, order + first[node]);
    }
    hccn_sim_free(first);
    hccn_sim_free(rk);
}
