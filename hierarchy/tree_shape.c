/*
 * The shape of the "tree" row's allreduce across nodes (tree.h): which
 * rank each rank sends its sums to, per channel, and how the channels'
 * data is cut.
 *
 * Channel t runs tree t mod 2 of NCCL's double binary tree over the
 * nodes (in view order; hccn_hier_dtree) and, inside every node, the
 * chain of the node's ranks in the order of the rings' channel t / 2
 * (rings_order.c): the chain enters the node at the rank of the
 * channel's NIC, its head, and every other rank's parent is the rank
 * before it in the chain. A head's parent is the head of its node's
 * parent node, the root node's head the channel's root. So a head
 * reduces its chain's sum and its child nodes' and sends one sum up
 * through its own NIC, as the libraries' tree does, and the channels
 * spread the nodes' traffic over their NICs.
 */
#include "device_sim/alloc.h"
#include "hierarchy/rings.h"
#include "hierarchy/tree.h"

int hccn_hier_tree_inorder(int n, int lo, int hi, int mirror, int shift,
                           int *parent)
{
    if (lo > hi)
        return -1;
    int mid = lo + (hi - lo) / 2;
    int r = mirror ? n - 1 - mid : (mid + shift) % n;
    int left = hccn_hier_tree_inorder(n, lo, mid - 1, mirror, shift, parent);
    int right = hccn_hier_tree_inorder(n, mid + 1, hi, mirror, shift, parent);
    if (left >= 0)
        parent[left] = r;
    if (right >= 0)
        parent[right] = r;
    return r;
}

/* The parent of position i in the bit tree over positions 0..n-1: i's
 * lowest set bit b names its level; its parent sets the bit above and
 * clears b, or only clears b where that falls past n - 1. */
static int bit_up(int n, int i)
{
    if (i == 0)
        return -1;
    int b = i & -i, up = (i ^ b) | (b << 1);
    return up < n ? up : i ^ b;
}

/* The member at position i of tree k over n (tree.h), and back. */
static int member_at(int n, int k, int i)
{
    return k == 0 ? i : n % 2 == 0 ? n - 1 - i : (i + 1) % n;
}

static int position_of(int n, int k, int m)
{
    return k == 0 ? m : n % 2 == 0 ? n - 1 - m : (m + n - 1) % n;
}

void hccn_hier_dtree(int n, int k, int *parent)
{
    for (int m = 0; m < n; m++) {
        int up = bit_up(n, position_of(n, k, m));
        parent[m] = up < 0 ? -1 : member_at(n, k, up);
    }
}

int hccn_hier_tree_nodes(const hccn_coll_args_t *a)
{
    return a->coll == HCCN_COLL_ALLREDUCE && a->view != NULL &&
           a->view->nranks == a->nranks && a->view->nnodes > 2;
}

void hccn_hier_tree_size(const hccn_coll_args_t *a, hccn_tree_shape_t *sh)
{
    const hccn_hier_view_t *v = a->view;
    const uint64_t p = (uint64_t)a->nranks, e = a->esize;
    int pairs = v->channels > 0 ? v->channels : 1;
    if (pairs > HCCN_TREE_MAX_CHANNELS / 2)
        pairs = HCCN_TREE_MAX_CHANNELS / 2;
    /* A chunk of a channel crosses its p - 1 edges up and down. */
    while (pairs > 1 &&
           (uint64_t)pairs * 2 * 2 * (p - 1) > HCCN_RINGS_XFERS_MAX)
        pairs--;
    int longest = 0;
    for (int r = 0; r < a->nranks; r++)
        longest = v->local[r] > longest ? v->local[r] : longest;
    sh->T = 2 * pairs;
    sh->depth = longest + hccn_hier_log2(v->nnodes);
    sh->parent = NULL;

    const uint64_t part =
        (a->count + (uint64_t)sh->T - 1) / (uint64_t)sh->T * e;
    sh->part = part;
    uint64_t c = a->chunk_bytes;
    if (c == 0) {
        c = HCCN_TREE_NODES_CHUNK;
        while (c > HCCN_TREE_MIN_CHUNK &&
               part < (uint64_t)HCCN_TREE_CHUNKS_PER_HOP *
                          (uint64_t)sh->depth * c)
            c /= 2;
    }
    c -= c % e;
    c = c < e ? e : c;
    uint64_t k = part > 0 ? (part + c - 1) / c : 1;
    uint64_t kmax = HCCN_RINGS_XFERS_MAX / ((uint64_t)sh->T * 2 * (p - 1));
    kmax = kmax > 0 ? kmax : 1;
    if (k > kmax) {
        c = (part + kmax - 1) / kmax;
        c += (e - c % e) % e;
        k = (part + c - 1) / c;
    }
    sh->chunk = c;
    sh->K = k;
}

int hccn_hier_tree_shape(const hccn_coll_args_t *a, hccn_tree_shape_t *sh)
{
    const hccn_hier_view_t *v = a->view;
    const int p = a->nranks, N = v->nnodes;
    hccn_hier_tree_size(a, sh);
    const int pairs = sh->T / 2;
    sh->parent = hccn_sim_malloc((size_t)sh->T * (size_t)p * sizeof(int));
    int *order = hccn_sim_malloc((size_t)pairs * (size_t)p * sizeof(int));
    int *up = hccn_sim_malloc((2 + (size_t)pairs) * (size_t)N * sizeof(int));
    if (sh->parent == NULL || order == NULL || up == NULL) {
        hccn_sim_free(order);
        hccn_sim_free(up);
        hccn_sim_free(sh->parent);
        sh->parent = NULL;
        return -1;
    }
    /* up[k N + n]: node n's parent in tree k; head[c N + n]: node n's head
     * in chain order c. */
    int *head = up + 2 * (size_t)N;
    hccn_hier_dtree(N, 0, up);
    hccn_hier_dtree(N, 1, up + N);
    hccn_hier_rings_orders(a, pairs, order);
    for (int c = 0; c < pairs; c++) {
        const int *o = order + (size_t)c * p;
        for (int i = 0; i < p; i++)
            if (i == 0 || v->node[o[i]] != v->node[o[i - 1]])
                head[(size_t)c * N + v->node[o[i]]] = o[i];
    }
    for (int t = 0; t < sh->T; t++) {
        const int c = t / 2, k = t % 2;
        const int *o = order + (size_t)c * p;
        int *par = sh->parent + (size_t)t * p;
        for (int i = 0; i < p; i++) {
            int n = v->node[o[i]];
            if (i > 0 && v->node[o[i - 1]] == n) {
                par[o[i]] = o[i - 1];
            } else {
                int pn = up[(size_t)k * N + n];
                par[o[i]] = pn < 0 ? -1 : head[(size_t)c * N + pn];
            }
        }
    }
    hccn_sim_free(order);
    hccn_sim_free(up);
    return 0;
}
