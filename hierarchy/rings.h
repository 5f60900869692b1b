/*
 * The "rings" row's shape (hierarchy/algo_rings.c, docs/algorithms.md
 * rings): its channels, their ring orders and its slices, shared by its
 * builder, its closed form and the placement (hccn_hier_cost_view).
 * Internal to hierarchy/.
 */
#ifndef HCCN_HIERARCHY_RINGS_H
#define HCCN_HIERARCHY_RINGS_H

#include <stdint.h>

#include "device_sim/topo.h"
#include "hierarchy/algo_util.h"

/* NCCL's MAXCHANNELS. */
#define HCCN_RINGS_MAX_CHANNELS 32
/* The default slice: NCCL's Simple step (a 4 MiB buffer in NCCL_STEPS = 8
 * steps). */
#define HCCN_RINGS_SLICE ((uint64_t)512 << 10)
/* Full meshes are looked for up to this many NPUs (p^2 route queries). */
#define HCCN_RINGS_MESH_MAX 64
/* Ring orders follow mesh cycles up to this many ranks (a node's or the
 * communicator's); beyond, rank order. */
#define HCCN_RINGS_SEG_MAX 1024
/* Transfers a schedule may have: channels, then slices, are cut to fit. */
#define HCCN_RINGS_XFERS_MAX ((uint64_t)1 << 20)

typedef struct {
    int C, K;            /* channels; slices per step of a channel */
    int *order;          /* order[c p + i]: the rank at position i of
                            channel c's ring (hccn_sim_malloc'd) */
} hccn_rings_shape_t;

/* The channels of the ranks world[0..n) of topo whose view is v: the
 * software model's "channels" when given, else the fewest NICs of a node
 * on several nodes, the directed link-disjoint Hamiltonian cycles of a
 * full mesh (hccn_hier_rings_mesh_cycles) on one node whose NPUs are one,
 * else 1; at most HCCN_RINGS_MAX_CHANNELS. */
int hccn_hier_rings_channels(const hccn_sim_topo_t *topo, const int *world,
                             int n, const hccn_hier_view_t *v);

/* a's channels (a->view->channels, cut so the schedule stays within
 * HCCN_RINGS_XFERS_MAX transfers), slices and ring orders in sh; 0, or
 * -1 on no memory. The caller frees sh->order. */
int hccn_hier_rings_shape(const hccn_coll_args_t *a, hccn_rings_shape_t *sh);

/* The channels and the slices per step of a's rings (as
 * hccn_hier_rings_shape finds them, without the orders). */
void hccn_hier_rings_size(const hccn_coll_args_t *a, int *channels,
                          int *slices);

/* Writes the ring of each of C channels of a to order[c p + i]
 * (algo_rings.c's top comment says which). */
void hccn_hier_rings_orders(const hccn_coll_args_t *a, int C, int *order);

/* The directed Hamiltonian cycles of a full mesh of n NPUs that share no
 * link (rings_order.c): 2 floor((n-1)/2), 1 below 3. */
int hccn_hier_rings_mesh_cycles(int n);

/* Slice s of block j of channel c (see algo_rings.c): offset inside a
 * block-sized region, and length, in bytes. */
hccn_span_t hccn_hier_rings_piece(const hccn_coll_args_t *a,
                                  const hccn_rings_shape_t *sh, int c, int j,
                                  int s);

/* With on, the closed form (rings_cost.c) walks every shape with its
 * heap, even where its sweep gives the same times: tests compare the two.
 * Not thread-safe: set it while no cost is being computed. */
void hccn_hier_rings_cost_heap(int on);

#endif /* HCCN_HIERARCHY_RINGS_H */
