/*
 * The ring of each channel of the "rings" row (algo_rings.c): on one node,
 * channel c steps through the ranks with the c-th stride coprime to p
 * (strides repeat when there are more channels than strides); on several
 * nodes, the nodes in view order, and inside node n its ranks in local
 * order rotated to start at the rank of NIC c (local c L/C) and with the
 * rank of NIC c+1 (local (c+1) L/C) moved to the end, so channel c enters
 * every node through NIC c and leaves it through NIC c+1.
 */
#include <string.h>

#include "device_sim/alloc.h"
#include "hierarchy/rings.h"

/* The ring of stride k over p ranks: position i holds rank i k mod p. */
static void stride_ring(int p, int k, int *o)
{
    for (int i = 0; i < p; i++)
        o[i] = (int)(((long long)i * k) % p);
}

/* The c-th stride (mod the number of strides) in 1..p-1 coprime to p. */
static int nth_stride(int p, int c)
{
    int n = 0;
    for (int k = 1; k < p; k++) {
        int a = k, b = p;
        while (b != 0) {
            int t = a % b;
            a = b;
            b = t;
        }
        n += a == 1;
    }
    if (n == 0)
        return 1;
    c %= n;
    for (int k = 1; k < p; k++) {
        int a = k, b = p;
        while (b != 0) {
            int t = a % b;
            a = b;
            b = t;
        }
        if (a == 1 && c-- == 0)
            return k;
    }
    return 1;
}

/* Node n's L ranks (rk, in local order) as channel c of C visits them. */
static int node_segment(const int *rk, int L, int c, int C, int *o)
{
    int e = (int)((long long)(c % C) * L / C);
    int x = (int)((long long)((c + 1) % C) * L / C);
    int n = 0;
    for (int j = 0; j < L; j++) {
        int l = (e + j) % L;
        if (l != x || x == e)
            o[n++] = rk[l];
    }
    if (x != e)
        o[n++] = rk[x];
    return n;
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
    for (int c = 0; c < C; c++) {
        int *o = order + (size_t)c * p;
        if (first == NULL || rk == NULL) {
            stride_ring(p, C > 1 ? nth_stride(p, c) : 1, o);
            continue;
        }
        if (c == 0)
            by_node(v, p, first, rk);
        int n = 0;
        for (int node = 0; node < v->nnodes; node++)
            n += node_segment(rk + first[node], first[node + 1] - first[node],
                              c, C, o + n);
    }
    hccn_sim_free(first);
    hccn_sim_free(rk);
}
