/*
 * The "tree" row's allreduce across nodes (hierarchy/algo_tree.c,
 * docs/algorithms.md tree): the libraries' tree, a chain inside each node
 * and a double binary tree over the nodes, in channels spread over the
 * nodes' NICs, pipelined in chunks small enough to stand for the
 * line-by-line forwarding of the low-latency protocols. Shared by its
 * builder, its closed form (cost_tree.c) and the protocol scale
 * (algos.c). Internal to hierarchy/.
 */
#ifndef HCCN_HIERARCHY_TREE_H
#define HCCN_HIERARCHY_TREE_H

#include <stdint.h>

#include "hierarchy/algo_util.h"

/* The largest chunk, and the least the pipeline is cut down to. */
#define HCCN_TREE_NODES_CHUNK ((uint64_t)1 << 20)
#define HCCN_TREE_MIN_CHUNK ((uint64_t)8 << 10)
/* Chunks a channel is cut into per hop of its depth, at least (NCCL
 * halves its tree's chunk until a channel has 8 per hop of depth). */
#define HCCN_TREE_CHUNKS_PER_HOP 8
/* Channels at most: two per channel of the rings, each of the double
 * binary tree's two trees taking half of them. */
#define HCCN_TREE_MAX_CHANNELS 32

typedef struct {
    int T;            /* channels: t runs tree t mod 2 (A, B) over the
                         nodes and the chains of the rings' channel t/2 */
    uint64_t part;    /* bytes of the longest channel's part */
    uint64_t K;       /* chunks of a channel (the last may be shorter) */
    uint64_t chunk;   /* bytes of a chunk */
    int depth;        /* edges from the farthest rank to its channel's root */
    int *parent;      /* parent[t p + r]: rank r's parent in channel t,
                         -1 at the root (hccn_sim_malloc'd; NULL from
                         hccn_hier_tree_size) */
} hccn_tree_shape_t;

/* 1 when a's allreduce runs the tree across nodes: a view of three
 * nodes or more over a's ranks. (On two, the double binary tree over the
 * nodes is one edge each way, which halves the traffic through the NICs
 * against a ring's; the libraries' own choice does not credit that, so
 * two nodes keep the flat tree: docs/algorithms.md, tree.) */
int hccn_hier_tree_nodes(const hccn_coll_args_t *a);

/* The channels, depth and chunks of a's tree across nodes, without the
 * parents (a: hccn_hier_tree_nodes). */
void hccn_hier_tree_size(const hccn_coll_args_t *a, hccn_tree_shape_t *sh);

/* hccn_hier_tree_size and every channel's parents; 0, or -1 on no memory.
 * The caller frees sh->parent. */
int hccn_hier_tree_shape(const hccn_coll_args_t *a, hccn_tree_shape_t *sh);

/* The balanced in-order binary tree over positions lo..hi, position i
 * standing for member mirror ? n-1-i : (i + shift) mod n: the root of a
 * range is its middle, rounded down. Writes parent[] of every member of
 * the range (the root's is left alone); returns the root's member, -1 for
 * an empty range. The flat double binary tree's two trees (over ranks,
 * algo_tree.c) are (mirror, shift) (0, 0) and, for even n, (1, 0), for
 * odd n, (0, 1). */
int hccn_hier_tree_inorder(int n, int lo, int hi, int mirror, int shift,
                           int *parent);

/* Tree k of the double binary tree over members 0..n-1, as NCCL builds
 * it: tree 0 is the bit tree over positions 0..n-1 (position i's parent
 * sets the bit above i's lowest set bit and clears that one, or only
 * clears it where that falls past n - 1; root 0, with one child; the odd
 * positions are its leaves), tree 1 the same over position i standing for
 * member n-1-i for even n (so every member is inner in one tree and a
 * leaf in the other), (i + 1) mod n for odd n. Writes parent[] of every
 * member, -1 for the root. */
void hccn_hier_dtree(int n, int k, int *parent);

#endif /* HCCN_HIERARCHY_TREE_H */
