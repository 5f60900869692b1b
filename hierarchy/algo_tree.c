/*
 * "tree": binary trees, pipelined in chunks.
 *
 * allreduce  NCCL-style double binary tree: the message is cut in two
 *            halves; tree A (a balanced in-order tree over ranks 0..p-1:
 *            the root of a range is its middle, rounded down) carries the
 *            first, tree B (the same shape over ranks relabelled i ->
 *            p-1-i for even p, i -> i+1 mod p for odd p, so that most
 *            inner ranks of one tree are leaves of the other) the second.
 *            In each tree every chunk is reduced up to the root and
 *            broadcast back down, chunk after chunk.
 *            Across three nodes or more (the view's: tree.h) the
 *            libraries' shape instead: channels, each a chain inside
 *            every node whose head joins one of the double binary trees
 *            over the nodes, each with its part of the message in
 *            chunks cut to 8 per hop of depth (tree_shape.c).
 * broadcast  a binary heap tree rooted at root (position q = r - root has
 *            children 2q+1, 2q+2): chunks flow down
 * reduce     the same tree: chunks are reduced up into the root
 *
 * Chunks are args->chunk_bytes (default 1 MiB) of a tree's data. A rank
 * reduces its children's chunk in a fixed order (the child with the
 * shallower subtree first): the first with a RECV_REDUCE against its own
 * SEND chunk, the second lands in SCRATCH and a REDUCE adds it (so no
 * receive waits for a reduction). Every SEND on a link waits for the
 * previous SEND on that link, so chunks follow each other; a rank
 * overwrites a chunk it sent up only after that SEND. Broadcast's root
 * COPYs SEND to RECV (nothing waits for it); reduce keeps the partial sums
 * of inner ranks in SCRATCH too (whole-message regions, so a chunk never
 * waits for a slot). docs/algorithms.md gives bytes, times and reduction
 * orders.
 */
#include <stdlib.h>

#include "device_sim/alloc.h"
#include "hierarchy/algo_util.h"
#include "hierarchy/tree.h"


enum { PHASE_UP = 1, PHASE_DOWN = 2 };

/* One rank's place in a tree; children in reduction order. A rank has
 * at most two children in a binary tree, three as the head of a node in
 * the tree across nodes (its chain's next rank, two child nodes). */
typedef struct {
    int parent; /* -1 at the root */
    int child[3];
    int nchild;
    int depth;  /* of the subtree below (a leaf: 0) */
} tnode_t;

typedef struct {
    int p, root;
    tnode_t *node; /* per rank */
    int *order;    /* ranks, children before parents (tree_order) */
    int *dist;     /* per rank: edges to the root */
    /* Per rank, for the chunk being built and across chunks: */
    uint32_t *acc;      /* last step that wrote the chunk's sum */
    uint32_t *up;       /* SEND of the chunk to the parent */
    uint32_t *last_up;  /* previous chunk's SEND to the parent */
    uint32_t *last_dn;  /* [3r + i]: previous SEND to child i */
    uint32_t *got;      /* receive of the chunk from the parent */
    int first_chunk;
} tree_t;

/* ------------------------------------------------------------ shapes --- */

static int subtree_depth(const tree_t *t, int r)
{
    return r < 0 ? -1 : t->node[r].depth;
}

/* Orders the children of r: the shallower subtree first, ties in the
 * order they were added. */
static void order_children(tree_t *t, int r)
{
    tnode_t *n = &t->node[r];
    for (int i = 1; i < n->nchild; i++)
        for (int j = i; j > 0 && subtree_depth(t, n->child[j - 1]) >
                                     subtree_depth(t, n->child[j]); j--) {
            int c = n->child[j];
            n->child[j] = n->child[j - 1];
            n->child[j - 1] = c;
        }
}

static void add_child(tree_t *t, int parent, int child)
{
    t->node[child].parent = parent;
    if (parent >= 0)
        t->node[parent].child[t->node[parent].nchild++] = child;
}

/* Heap tree rooted at root: position q = r - root, children 2q+1, 2q+2. */
static void heap(tree_t *t)
{
    const int p = t->p;
    for (int q = p - 1; q >= 0; q--) {
        int r = (t->root + q) % p;
        t->node[r].nchild = 0;
        t->node[r].parent = -1;
        int d = -1;
        for (int c = 2 * q + 1; c <= 2 * q + 2 && c < p; c++) {
            int cr = (t->root + c) % p;
            add_child(t, r, cr);
            if (t->node[cr].depth > d)
                d = t->node[cr].depth;
        }
        t->node[r].depth = d + 1;
        order_children(t, r);
    }
}

/* Ranks ordered by their distance from the root, farthest first, so a
 * rank's children come before it. */
static void tree_order(tree_t *t)
{
    int *dist = t->dist, maxd = 0;
    for (int r = 0; r < t->p; r++) {
        for (int u = r; t->node[u].parent >= 0; u = t->node[u].parent)
            dist[r]++;
        maxd = dist[r] > maxd ? dist[r] : maxd;
    }
    int n = 0;
    for (int d = maxd; d >= 0; d--)
        for (int r = 0; r < t->p; r++)
            if (dist[r] == d)
                t->order[n++] = r;
}

/* The tree of parent[] (per rank, -1 at the root): children in the order
 * of seq (the ranks in some order; NULL: rank order), then ordered by
 * subtree depth; the ranks' order and distances. */
static void tree_adopt(tree_t *t, const int *parent, const int *seq)
{
    for (int r = 0; r < t->p; r++) {
        t->node[r].nchild = 0;
        t->node[r].depth = 0;
    }
    for (int i = 0; i < t->p; i++) {
        int r = seq != NULL ? seq[i] : i;
        add_child(t, parent[r], r);
        if (parent[r] < 0)
            t->root = r;
    }
    tree_order(t);
    for (int i = 0; i < t->p; i++) {   /* children before parents */
        int r = t->order[i], d = 0;
        for (int k = 0; k < t->node[r].nchild; k++)
            if (t->node[t->node[r].child[k]].depth + 1 > d)
                d = t->node[t->node[r].child[k]].depth + 1;
        t->node[r].depth = d;
        order_children(t, r);
    }
}

static int tree_init(tree_t *t, int p)
{
    t->p = p;
    t->node = hccn_sim_calloc((size_t)p, sizeof(*t->node));
    t->order = hccn_sim_calloc(2 * (size_t)p, sizeof(int));
    t->acc = hccn_sim_calloc(8 * (size_t)p, sizeof(uint32_t));
    if (t->node == NULL || t->order == NULL || t->acc == NULL)
        return -1;
    t->dist = t->order + p;
    t->up = t->acc + p;
    t->last_up = t->up + p;
    t->got = t->last_up + p;
    t->last_dn = t->got + p;
    t->first_chunk = 1;
    return 0;
}

static void tree_free(tree_t *t)
{
    hccn_sim_free(t->node);
    hccn_sim_free(t->order);
    hccn_sim_free(t->acc);
}

/* ------------------------------------------------------------ chunks --- */

/* Where a chunk lives on rank r: its SEND bytes, and the buffer its sum is
 * built in (and, for broadcast, received into). */
typedef struct {
    hccn_sched_t *s;
    uint64_t off, len;
    hccn_buf_t acc_buf;      /* inner ranks */
    hccn_buf_t root_buf;     /* the root */
    uint64_t tmp;            /* SCRATCH offset of second children's data */
    uint64_t stride;         /* from there to third children's */
} chunk_t;

static hccn_buf_t acc_buf(const tree_t *t, const chunk_t *c, int r)
{
    return r == t->root ? c->root_buf : c->acc_buf;
}

/* Up: every rank, children before parents, reduces its children's chunk
 * and sends the result to its parent; leaves send their SEND chunk. The
 * first child's chunk is a RECV_REDUCE with the rank's own SEND chunk; the
 * second's lands in SCRATCH (at tmp + offset, so no receive ever waits)
 * and a REDUCE adds it once both are there; a third's lands at stride
 * beyond and is added after. */
static void chunk_up(tree_t *t, const chunk_t *c)
{
    for (int i = 0; i < t->p; i++) {
        int r = t->order[i];
        const tnode_t *n = &t->node[r];
        hccn_buf_t dst = acc_buf(t, c, r);
        uint32_t got[3] = {0, 0, 0};
        for (int k = 0; k < n->nchild; k++) {
            int ch = n->child[k];
            uint32_t sdeps[2], nsd = 0;
            if (t->node[ch].nchild > 0)
                sdeps[nsd++] = t->acc[ch];
            if (!t->first_chunk)
                sdeps[nsd++] = t->last_up[ch];
            hccn_buf_t src = t->node[ch].nchild > 0 ? acc_buf(t, c, ch)
                                                     : HCCN_BUF_SEND;
            uint64_t at = k == 0 ? c->off
                                 : c->tmp + (uint64_t)(k - 1) * c->stride +
                                       c->off;
            hccn_sched_xfer(c->s, ch, src, c->off, sdeps, nsd, r,
                            k == 0 ? dst : HCCN_BUF_SCRATCH, at, NULL, 0,
                            c->len, k == 0, HCCN_BUF_SEND, c->off,
                            &t->up[ch], &got[k]);
            t->last_up[ch] = t->up[ch];
        }
        t->acc[r] = got[0];
        for (int k = 1; k < n->nchild; k++) {
            uint32_t deps[2] = {t->acc[r], got[k]};
            t->acc[r] = hccn_sched_local(
                c->s, r, 1, HCCN_BUF_SCRATCH,
                c->tmp + (uint64_t)(k - 1) * c->stride + c->off, dst,
                c->off, c->len, deps, 2);
        }
    }
}

/* Down: every rank, parents before children, sends the chunk's result to
 * its children; a child's receive overwrites the chunk it sent up, so it
 * waits for that SEND. The root sends from src_root (its sum, or SEND for
 * a broadcast). */
static void chunk_down(tree_t *t, const chunk_t *c, hccn_buf_t src_root,
                       int waits_up)
{
    for (int i = t->p - 1; i >= 0; i--) {
        int r = t->order[i];
        const tnode_t *n = &t->node[r];
        for (int k = 0; k < n->nchild; k++) {
            int ch = n->child[k];
            uint32_t sdeps[2], nsd = 0;
            if (r != t->root || waits_up)
                sdeps[nsd++] = r == t->root ? t->acc[r] : t->got[r];
            if (!t->first_chunk)
                sdeps[nsd++] = t->last_dn[3 * r + k];
            hccn_sched_xfer(c->s, r, r == t->root ? src_root : HCCN_BUF_RECV,
                            c->off, sdeps, nsd, ch, HCCN_BUF_RECV, c->off,
                            &t->up[ch], waits_up, c->len, 0, HCCN_BUF_SEND,
                            0, &t->last_dn[3 * r + k], &t->got[ch]);
        }
    }
}

/* Gives the steps added since mark (per rank) the phase ph; moves mark. */
static void stamp_new(hccn_sched_t *s, uint32_t *mark, int ph)
{
    for (int r = 0; !s->failed && r < s->nranks; r++) {
        for (uint32_t i = mark[r]; i < s->ranks[r].nsteps; i++)
            s->ranks[r].steps[i].phase = (uint8_t)ph;
        mark[r] = s->ranks[r].nsteps;
    }
}

/* The chunks of c bytes of [off, off + len), one after another through
 * tree t; up steps get phase 1, down steps phase 2 (mark: see
 * stamp_new). */
static void pipeline(tree_t *t, hccn_sched_t *s, const hccn_coll_args_t *a,
                     uint64_t off, uint64_t len, uint64_t c, int up,
                     int down, uint32_t *mark)
{
    chunk_t ch = {s, 0, 0, HCCN_BUF_RECV, HCCN_BUF_RECV, 0,
                  a->count * a->esize};
    if (a->coll == HCCN_COLL_REDUCE) {
        ch.acc_buf = HCCN_BUF_SCRATCH;
        ch.tmp = a->count * a->esize;
    }
    for (uint64_t o = 0; o < len; o += c) {
        ch.off = off + o;
        ch.len = len - o < c ? len - o : c;
        if (up)
            chunk_up(t, &ch);
        stamp_new(s, mark, PHASE_UP);
        if (down)
            chunk_down(t, &ch, up ? HCCN_BUF_RECV : HCCN_BUF_SEND, up);
        stamp_new(s, mark, PHASE_DOWN);
        t->first_chunk = 0;
    }
}

/* ------------------------------------------------------- collectives --- */

/* Tree k of the double binary tree over t's ranks (k = 0: A, 1: B; tree.h,
 * hccn_hier_tree_inorder), each rank's children in position order (the
 * left one first) before they are ordered by depth; parent and seq are p
 * ints of room. */
static void double_tree(tree_t *t, int k, int *parent, int *seq)
{
    const int p = t->p, mirror = k == 1 && p % 2 == 0;
    const int shift = k == 1 ? p % 2 : 0;
    for (int i = 0; i < p; i++) {
        parent[i] = -1;
        seq[i] = mirror ? p - 1 - i : (i + shift) % p;
    }
    hccn_hier_tree_inorder(p, 0, p - 1, mirror, shift, parent);
    tree_adopt(t, parent, seq);
}

/* Tree A carries the first ceil(count/2) elements, tree B the rest; their
 * chunks are interleaved in the schedule (A's chunk j, then B's). */
static int build_allreduce(hccn_sched_t *s, const hccn_coll_args_t *a)
{
    tree_t ta, tb;
    uint32_t *mark = hccn_sim_calloc((size_t)a->nranks, sizeof(uint32_t));
    int *room = hccn_sim_malloc(2 * (size_t)a->nranks * sizeof(int));
    int rc = tree_init(&ta, a->nranks) | tree_init(&tb, a->nranks);
    if (rc == 0 && mark != NULL && room != NULL) {
        const int p = a->nranks;
        double_tree(&ta, 0, room, room + p);
        double_tree(&tb, 1, room, room + p);
        uint64_t half = (a->count + 1) / 2 * a->esize;
        uint64_t n = a->count * a->esize;
        if (p > 2)
            s->scratch_bytes = (size_t)n;
        uint64_t c = hccn_hier_chunk(a, HCCN_TREE_CHUNK);
        for (uint64_t o = 0; o < half || o < n - half; o += c) {
            if (o < half)
                pipeline(&ta, s, a, o, half - o < c ? half - o : c, c, 1, 1,
                         mark);
            if (o < n - half)
                pipeline(&tb, s, a, half + o,
                         n - half - o < c ? n - half - o : c, c, 1, 1, mark);
        }
    }
    tree_free(&ta);
    tree_free(&tb);
    hccn_sim_free(mark);
    hccn_sim_free(room);
    return rc != 0 || mark == NULL || room == NULL ? -1 : 0;
}

/* The tree across nodes (tree.h): chunk j of every channel in turn, each
 * channel's part of the message through its own tree. */
static int build_allreduce_nodes(hccn_sched_t *s, const hccn_coll_args_t *a)
{
    hccn_tree_shape_t sh;
    if (hccn_hier_tree_shape(a, &sh) != 0)
        return -1;
    const int p = a->nranks;
    tree_t *tr = hccn_sim_calloc((size_t)sh.T, sizeof(*tr));
    uint32_t *mark = hccn_sim_calloc((size_t)p, sizeof(uint32_t));
    int rc = tr == NULL || mark == NULL ? -1 : 0, most = 0;
    for (int t = 0; rc == 0 && t < sh.T; t++) {
        rc = tree_init(&tr[t], p);
        if (rc == 0)
            tree_adopt(&tr[t], sh.parent + (size_t)t * p, NULL);
        for (int r = 0; rc == 0 && r < p; r++)
            most = tr[t].node[r].nchild > most ? tr[t].node[r].nchild : most;
    }
    if (rc == 0) {
        const uint64_t n = a->count * a->esize;
        s->scratch_bytes = most > 1 ? (size_t)(most - 1) * (size_t)n : 0;
        for (uint64_t j = 0; j < sh.K; j++)
            for (int t = 0; t < sh.T; t++) {
                hccn_span_t part = hccn_hier_block(a->count, a->esize, sh.T, t);
                uint64_t o = j * sh.chunk;
                if (o < part.len)
                    pipeline(&tr[t], s, a, part.off + o,
                             part.len - o < sh.chunk ? part.len - o : sh.chunk,
                             sh.chunk, 1, 1, mark);
            }
    }
    for (int t = 0; tr != NULL && t < sh.T; t++)
        tree_free(&tr[t]);
    hccn_sim_free(tr);
    hccn_sim_free(mark);
    hccn_sim_free(sh.parent);
    return rc;
}

static int build_rooted(hccn_sched_t *s, const hccn_coll_args_t *a)
{
    tree_t t;
    uint32_t *mark = hccn_sim_calloc((size_t)a->nranks, sizeof(uint32_t));
    int rc = tree_init(&t, a->nranks);
    if (rc == 0 && mark != NULL) {
        uint64_t n = a->count * a->esize;
        uint64_t c = hccn_hier_chunk(a, HCCN_TREE_CHUNK);
        t.root = a->root;
        heap(&t);
        tree_order(&t);
        if (a->coll == HCCN_COLL_BROADCAST) {
            hccn_sched_local(s, a->root, 0, HCCN_BUF_SEND, 0, HCCN_BUF_RECV,
                             0, n, NULL, 0);
            stamp_new(s, mark, PHASE_DOWN);
            pipeline(&t, s, a, 0, n, c, 0, 1, mark);
        } else {
            if (a->nranks > 2)
                s->scratch_bytes = (size_t)(2 * n);
            pipeline(&t, s, a, 0, n, c, 1, 0, mark);
        }
    }
    tree_free(&t);
    hccn_sim_free(mark);
    return rc != 0 || mark == NULL ? -1 : 0;
}

/* Builds the tree schedule of args (allreduce, broadcast or reduce); NULL
 * otherwise, on bad arguments or no memory. */
hccn_sched_t *hccn_hier_tree_build(const hccn_coll_args_t *args)
{
    const unsigned mine = 1u << HCCN_COLL_ALLREDUCE |
                          1u << HCCN_COLL_BROADCAST | 1u << HCCN_COLL_REDUCE;
    if (!hccn_hier_args_ok(args, mine))
        return NULL;
    hccn_sched_t *s = hccn_sched_new(args->nranks, "tree");
    if (s == NULL || args->count == 0)
        return s;
    if (args->nranks == 1) {
        hccn_sched_local(s, 0, 0, HCCN_BUF_SEND, 0, HCCN_BUF_RECV, 0,
                         args->count * args->esize, NULL, 0);
        hccn_hier_stamp(s, PHASE_UP);
        return hccn_hier_finish(s, 0);
    }
    int rc = hccn_hier_tree_nodes(args)      ? build_allreduce_nodes(s, args)
             : args->coll == HCCN_COLL_ALLREDUCE ? build_allreduce(s, args)
                                                 : build_rooted(s, args);
    return hccn_hier_finish(s, rc);
}
