/*
 * Collective descriptions and the algorithm table (hierarchy layer).
 *
 * Buffer layouts follow NCCL; counts are in elements of esize bytes:
 *   ALLREDUCE       SEND[count]          -> RECV[count] on every rank
 *   REDUCE_SCATTER  SEND[n*count]        -> RECV[count]: block r on rank r
 *   ALLGATHER       SEND[count]          -> RECV[n*count]: block i from i
 *   BROADCAST       SEND[count] on root  -> RECV[count] on every rank
 *   REDUCE          SEND[count]          -> RECV[count] on root only
 *   ALLTOALL        SEND[n*count] block j for rank j -> RECV[n*count] block
 *                   i from rank i
 *   SCATTER         SEND[n*count] on root -> RECV[count]: block r on rank r
 *   GATHER          SEND[count]          -> RECV[n*count] on root
 *   BARRIER         no data
 *   ALLTOALLV       SEND block j (vcounts[j] at vsdispls[j]) for rank j ->
 *                   RECV block i (vrcounts[i] at vrdispls[i]) from rank i
 *   ALLGATHERV      SEND[vcounts[r]] on rank r -> RECV block i (vcounts[i]
 *                   at vrdispls[i]) from rank i
 *   REDUCE_SCATTERV SEND block i (vcounts[i] at vsdispls[i]) -> RECV[
 *                   vcounts[r]] on rank r: block r reduced
 * The v-collectives take per-rank block counts and element displacements
 * (below). ALLGATHERV and REDUCE_SCATTERV counts are the same on every
 * rank; ALLTOALLV's are known to one rank only (its own sendcounts and
 * recvcounts), so its schedule is that rank's view: the steps of rank me
 * are exact, transfers between two other ranks carry 0 bytes, and other
 * ranks' offsets use me's displacements. Displacements are assumed to be
 * the same on every rank; a rank only ever runs its own steps, and the
 * executor reads a sender's offsets from the sender's own schedule, so
 * ranks whose displacements differ still move the right bytes.
 * A schedule must not read SEND after writing the same bytes of RECV: the
 * runtime runs it with SEND == RECV for in-place calls (where the in-place
 * forms in hccn_coll.h place the rank's own block).
 * Reductions are written as RECV_REDUCE/REDUCE steps; the runtime applies
 * the operator (and the AVG division) itself.
 */
#ifndef HCCN_HIERARCHY_COLL_H
#define HCCN_HIERARCHY_COLL_H

#include <stddef.h>
#include <stdint.h>

#include "hccn/hccn_sim.h"
#include "hierarchy/sched.h"

/* hccn_coll_t (the collective kinds) is public: include/hccn/hccn_sim.h. */

/* Where each communicator rank sits: node and index inside the node, in the
 * world topology, and the pod (the nodes under one leaf switch) of its
 * node. Filled by the runtime from the topology. */
typedef struct {
    int nranks;
    const int *node;        /* per comm rank: node index (dense, 0..nnodes-1) */
    const int *local;       /* per comm rank: index among the comm's ranks on
                               that node, 0..node_size-1 */
    int nnodes;
    const int *pod;         /* per comm rank: pod index (dense, 0..npods-1);
                               NULL when the network has no leaf tier */
    int npods;
    int channels;           /* the "rings" row's channels (rings.h,
                               hccn_hier_rings_channels); 0 = 1 */
    int slots;              /* chunks a two-level row's top keeps in
                               flight (the software model's slots,
                               levels.h); 0 = 1 */
} hccn_hier_view_t;

typedef struct {
    hccn_coll_t coll;
    int nranks;
    uint64_t count;         /* elements, as in the table above */
    size_t esize;           /* bytes per element (> 0) */
    int root;               /* BROADCAST, REDUCE, SCATTER, GATHER */
    const hccn_hier_view_t *view;   /* may be NULL for flat algorithms */
    uint64_t chunk_bytes;   /* pipelining chunk for algorithms that use it;
                               0 = the algorithm's default */
    /* Timing-only runs folded onto node 0 (docs/performance.md): NULL, or
     * per rank its copy in node 0 (node 0's ranks are 0 .. fold_nrep-1,
     * their own copies). An algorithm that can build node 0's part alone
     * then builds only that and sets the schedule's `folded`; the others
     * ignore it. */
    const int *fold_rep;
    int fold_nrep;
    /* v-collectives only (NULL / 0 for the others), nranks entries each,
     * in elements: see the table above. count is then the most elements
     * any buffer spans (for size checks only). Without arrays a
     * v-collective has uniform blocks of count elements, packed: the same
     * schedule as its fixed-size counterpart, with every pair's block in
     * an alltoallv (not a one-rank view). */
    const uint64_t *vcounts, *vrcounts;
    const uint64_t *vsdispls, *vrdispls;
    int me;                 /* ALLTOALLV: the rank whose view is built */
    /* Hierarchical rows made of any flat algorithm per level
     * (algo_levels.c): the row's choice, set by hccn_hier_build and
     * the cost model from the row; NULL for every other row. */
    const struct hccn_level_choice *levels;
    /* Where switches reduce this call's dtype with its operator
     * (allgather: where they reduce at all), set by the runtime with
     * hccn_hier_in_switch, 0 everywhere else: HCCN_IN_SWITCH_ONE when
     * every rank is an NPU of one such node (nvls applies),
     * HCCN_IN_SWITCH_NODES when the ranks span several nodes, each such a
     * node (nvls applies inside nodes: hier_nvls); HCCN_IN_SWITCH_NET(_FLAT)
     * where the network switch reduces across nodes (sharp). */
    int in_switch;
} hccn_coll_args_t;

/* The flat algorithm of every level of a hierarchical composition. */
typedef struct hccn_level_choice {
    const char *name;       /* the row's and its schedule's name */
    int k;                  /* levels: 2 (node, across nodes) or 3 (node,
                               pod, across pods) */
    const char *algo[3];    /* table names of flat rows */
} hccn_level_choice_t;

/* 1 for ALLTOALLV, ALLGATHERV and REDUCE_SCATTERV. */
int hccn_coll_is_v(hccn_coll_t coll);

/* Builds the schedule of one algorithm; NULL when the algorithm does not
 * support these arguments (or on no memory). */
typedef hccn_sched_t *(*hccn_algo_build_fn)(const hccn_coll_args_t *args);

/* An algorithm's closed form for the cost model (hierarchy/cost_internal.h
 * has the types): seconds for every group of t to run a at once, or
 * HCCN_COST_NONE when the algorithm does not do a->coll. */
struct hccn_cm;
struct hccn_cm_team;
typedef double (*hccn_algo_cost_fn)(struct hccn_cm *m,
                                    const struct hccn_cm_team *t,
                                    const hccn_coll_args_t *a);

typedef struct {
    const char *name;        /* "ring", "mesh", ... as used by HCCN_ALGO */
    const char *description; /* one line */
    unsigned colls;          /* bit (1u << hccn_coll_t) per supported coll */
    hccn_algo_build_fn build;
    /* Collectives for which its schedule has a transfer between every pair
     * of ranks where others need O(p log p): the cost model, which has no
     * per-message overhead, prices p(p-1) concurrent messages at a few
     * latencies, so beyond HCCN_SELECT_PAIRS_MAX ranks the default
     * selection passes it over for them (a spec may still force it). */
    unsigned all_pairs;
    /* Its closed form, priced by the cost model beyond the sizes the
     * timing engine prices (docs/selection.md); NULL: the engine only. */
    hccn_algo_cost_fn cost;
    /* 1: run only when a spec names it, never chosen by the cost model
     * (a row whose closed form is not trusted on every topology). */
    int by_name_only;
    /* Collectives for which its schedule has a transfer between every pair
     * of the ranks of a node (a composition whose first level is all_pairs
     * for them): beyond HCCN_SELECT_PAIRS_MAX ranks on one node the
     * default selection passes it over, as all_pairs (a row that reduces
     * in the nodes' switch, hccn_hier_nvswitch_call, has no such level). */
    unsigned node_pairs;
} hccn_algo_t;

#define HCCN_SELECT_PAIRS_MAX 256

/* The table of algorithms, terminated by an entry with name == NULL. */
const hccn_algo_t *hccn_hier_algos(void);

/* Looks an algorithm up by name, in the table or among the level
 * compositions (algo_levels.c); NULL if unknown. */
const hccn_algo_t *hccn_hier_algo_find(const char *name);

/* algo's schedule for a: the one way to run a row's builder (a
 * composition row gets its levels through a->levels). NULL with the
 * failure recorded (device_sim/fail.h): HCCN_ERR_UNSUPPORTED when algo
 * cannot run a, else what its builder found (HCCN_ERR_NOMEM naming the
 * allocation), after the collective and the algorithm. */
/* 1 when algo's schedule for a reduces in a node's switch: nvls on one
 * reducing node, hier_nvls or hier_nvls_sharp on reducing nodes (the
 * library's NVLS algorithms, whose launch the stack may price apart). */
int hccn_hier_nvswitch_call(const hccn_algo_t *algo, const hccn_coll_args_t *a);

/* The protocol scale of algo's schedule for a (hccn_sched_t.proto_scale):
 * rings' slices per step, and the chunks of a channel of the tree across
 * nodes (tree.h), whose block the library moves under one protocol
 * (docs/software.md, Protocols); 1 for every other row. */
uint32_t hccn_hier_proto_scale(const hccn_algo_t *algo,
                               const hccn_coll_args_t *a);

/* The library algorithm whose step costs algo's schedule for a takes
 * (hccn_sched_t.family, HCCN_SIM_FAM_*): NVLS (a call that reduces in a
 * node's switch: hccn_hier_nvswitch_call), the ring across nodes (rings
 * on a communicator of several nodes), the tree (tree), or none. */
int hccn_hier_family(const hccn_algo_t *algo, const hccn_coll_args_t *a);

/* The software model's view of schedule s as a posted call. */
hccn_sim_call_t hccn_hier_sched_call(const hccn_sched_t *s);

/* The same view of algo's schedule for a, without building it: the
 * fields above, and tree_bytes, a's bytes where the call is the tree's
 * allreduce (the library's tree: the stack's tree_bw applies). */
hccn_sim_call_t hccn_hier_algo_call(const hccn_algo_t *algo,
                                    const hccn_coll_args_t *a);

hccn_sched_t *hccn_hier_build(const hccn_algo_t *algo,
                              const hccn_coll_args_t *a);

/* The level choice of a composition row, NULL for any other row. */
const hccn_level_choice_t *hccn_hier_algo_levels(const hccn_algo_t *algo);

/* The composition row running level0..level2 (names of flat rows; level2
 * NULL or "" for two levels); NULL if there is none. */
const hccn_algo_t *hccn_hier_levels_row(const char *level0,
                                        const char *level1,
                                        const char *level2);

/* The flat rows a level of a composition may run, NULL-terminated. */
const char *const *hccn_hier_level_algos(void);

const char *hccn_coll_name(hccn_coll_t coll);

#define HCCN_IN_SWITCH_ONE 1
#define HCCN_IN_SWITCH_NODES 2
/* The ranks span several nodes and the network switch reduces (sharp's
 * hierarchical rows apply); _FLAT: and each rank is on a node of its own
 * (the flat sharp row applies). */
#define HCCN_IN_SWITCH_NET 4
#define HCCN_IN_SWITCH_NET_FLAT 8

/* hccn_coll_args_t.in_switch for coll on ranks world[0..n) of topo with
 * dtype and op (hccn_dtype_t, hccn_redop_t values): HCCN_IN_SWITCH_ONE
 * when they are all NPUs of one node whose switch reduces dtype with op
 * (for allgather: has a reduction unit), HCCN_IN_SWITCH_NODES when they
 * are on several nodes that all do, else 0 (algo_nvls.c); with the
 * network's bits (hccn_hier_net_switch) or'ed in for several nodes. */
int hccn_hier_in_switch(const hccn_sim_topo_t *topo, const int *world, int n,
                        hccn_coll_t coll, int dtype, int op);

/* The network's part of hccn_hier_in_switch (algo_sharp.c): 0, or
 * HCCN_IN_SWITCH_NET (| HCCN_IN_SWITCH_NET_FLAT when no two ranks share a
 * node) when world[0..n) spans several nodes and the network switch
 * reduces dtype with op (for allgather: has a reduction unit). */
int hccn_hier_net_switch(const hccn_sim_topo_t *topo, const int *world,
                         int n, hccn_coll_t coll, int dtype, int op);

/* The in_switch of a level's flat algorithm `algo` inside a composition
 * on a: HCCN_IN_SWITCH_ONE for nvls (only ever a level 0) when a's nodes
 * all reduce in their switches; HCCN_IN_SWITCH_NET | _FLAT for sharp
 * (only ever a level 1) when a's network reduces; else 0 (algo_nvls.c). */
int hccn_hier_level_switch(const hccn_coll_args_t *a, const char *algo);

/* What phase `phase` (hccn_step_t.phase) of a schedule named algo does
 * for coll ("intra reduce-scatter"), or NULL when it has no name. */
const char *hccn_sched_phase_name(const char *algo, hccn_coll_t coll,
                                  int phase);

/* Bytes of SEND and RECV each rank needs for args (0 where unused). */
void hccn_coll_buf_bytes(const hccn_coll_args_t *args, int rank,
                         uint64_t *send_bytes, uint64_t *recv_bytes);

#endif /* HCCN_HIERARCHY_COLL_H */
