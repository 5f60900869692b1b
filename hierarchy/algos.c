/*
 * The algorithm table, collective names and buffer sizes (see coll.h).
 *
 * Adding an algorithm is one file with its builder (taking
 * hccn_coll_args_t, returning a schedule or NULL) and, if it has one, its
 * closed form for the cost model, plus their prototypes and one row below
 * (docs/algorithms.md, "Adding an algorithm"). The table is data only;
 * selection (select.c) prices the rows it may choose and needs no change.
 */
#include <string.h>

#include "device_sim/fail.h"
#include "device_sim/software.h"
#include "hierarchy/coll.h"
#include "hierarchy/cost_internal.h"
#include "hierarchy/rings.h"
#include "hierarchy/tree.h"

/* Builders, one per algorithm file. */
hccn_sched_t *hccn_hier_ring_build(const hccn_coll_args_t *args);
hccn_sched_t *hccn_hier_mesh_build(const hccn_coll_args_t *args);
hccn_sched_t *hccn_hier_linear_build(const hccn_coll_args_t *args);
hccn_sched_t *hccn_hier_bruck_build(const hccn_coll_args_t *args);
hccn_sched_t *hccn_hier_hd_build(const hccn_coll_args_t *args);
hccn_sched_t *hccn_hier_rdouble_build(const hccn_coll_args_t *args);
hccn_sched_t *hccn_hier_tree_build(const hccn_coll_args_t *args);
hccn_sched_t *hccn_hier_hier_build(const hccn_coll_args_t *args);
hccn_sched_t *hccn_hier_hier_rr_build(const hccn_coll_args_t *args);
hccn_sched_t *hccn_hier_hier_mh_build(const hccn_coll_args_t *args);
hccn_sched_t *hccn_hier_pairwise_build(const hccn_coll_args_t *args);
hccn_sched_t *hccn_hier_hier3_build(const hccn_coll_args_t *args);
hccn_sched_t *hccn_hier_hier3_hd_build(const hccn_coll_args_t *args);
hccn_sched_t *hccn_hier_torus_build(const hccn_coll_args_t *args);
hccn_sched_t *hccn_hier_nvls_build(const hccn_coll_args_t *args);
hccn_sched_t *hccn_hier_hier_nvls_build(const hccn_coll_args_t *args);
hccn_sched_t *hccn_hier_sharp_build(const hccn_coll_args_t *args);
hccn_sched_t *hccn_hier_hier_sharp_build(const hccn_coll_args_t *args);
hccn_sched_t *hccn_hier_hier_nvls_sharp_build(const hccn_coll_args_t *args);
hccn_sched_t *hccn_hier_rings_build(const hccn_coll_args_t *args);

/* The composition rows (algo_levels.c) by name. */
const hccn_algo_t *hccn_hier_combo_find(const char *name);

#define C(x) (1u << HCCN_COLL_##x)

static const hccn_algo_t algos[] = {
    {"ring", "neighbour ring; rooted collectives as a pipelined chain",
     C(ALLREDUCE) | C(REDUCE_SCATTER) | C(ALLGATHER) | C(BROADCAST) |
         C(REDUCE) | C(ALLGATHERV) | C(REDUCE_SCATTERV),
     hccn_hier_ring_build, 0, hccn_hier_cm_ring, 0, 0},
    {"mesh", "every pair talks directly, in one step",
     C(ALLREDUCE) | C(REDUCE_SCATTER) | C(ALLGATHER) | C(BROADCAST) |
         C(REDUCE) | C(ALLTOALL) | C(SCATTER) | C(GATHER) | C(BARRIER) |
         C(ALLTOALLV) | C(ALLGATHERV) | C(REDUCE_SCATTERV),
     hccn_hier_mesh_build,
     C(ALLREDUCE) | C(REDUCE_SCATTER) | C(ALLGATHER) | C(BARRIER) |
         C(ALLGATHERV) | C(REDUCE_SCATTERV),
     hccn_hier_cm_mesh, 0, 0},
    {"linear", "root talks to one peer after another; pairwise alltoall",
     C(BROADCAST) | C(REDUCE) | C(ALLTOALL) | C(SCATTER) | C(GATHER) |
         C(BARRIER) | C(ALLTOALLV),
     hccn_hier_linear_build, 0, hccn_hier_cm_linear, 0, 0},
    {"hd", "recursive halving-doubling (Rabenseifner); extra ranks fold in",
     C(ALLREDUCE) | C(REDUCE_SCATTER) | C(ALLGATHER), hccn_hier_hd_build, 0,
     hccn_hier_cm_hd, 0, 0},
    {"rdouble", "recursive doubling: log2 p whole-message exchanges, for "
                "tiny messages",
     C(ALLREDUCE), hccn_hier_rdouble_build, 0, hccn_hier_cm_rdouble, 0, 0},
    {"tree", "double binary tree allreduce (from three nodes: chains in "
             "the nodes, trees over them, in channels); binary tree "
             "broadcast and reduce; pipelined in chunks",
     C(ALLREDUCE) | C(BROADCAST) | C(REDUCE), hccn_hier_tree_build, 0,
     hccn_hier_cm_tree, 0, 0},
    {"bruck", "Bruck: ceil(log2 p) steps for any p, for small messages",
     C(ALLGATHER) | C(ALLTOALL), hccn_hier_bruck_build, 0, hccn_hier_cm_bruck,
     0, 0},
    {"pairwise", "pairwise exchange (r XOR k for power-of-two p), steps "
                 "independent",
     C(ALLTOALL) | C(ALLTOALLV), hccn_hier_pairwise_build, 0,
     hccn_hier_cm_pairwise, 0, 0},
    {"hier", "hierarchical: mesh inside nodes, ring across; allreduce "
             "pipelined in chunks",
     C(ALLREDUCE) | C(REDUCE_SCATTER) | C(ALLGATHER) | C(BROADCAST) |
         C(REDUCE),
     hccn_hier_hier_build, 0, hccn_hier_cm_hier, 0,
     C(ALLREDUCE) | C(REDUCE_SCATTER) | C(ALLGATHER) | C(BROADCAST) |
         C(REDUCE)},
    {"hier_rr", "hierarchical: ring inside nodes and across",
     C(ALLREDUCE) | C(REDUCE_SCATTER) | C(ALLGATHER), hccn_hier_hier_rr_build, 0,
     hccn_hier_cm_hier_rr, 0, 0},
    {"hier_mh", "hierarchical: mesh inside nodes, halving-doubling across",
     C(ALLREDUCE) | C(REDUCE_SCATTER) | C(ALLGATHER), hccn_hier_hier_mh_build, 0,
     hccn_hier_cm_hier_mh, 0, C(ALLREDUCE) | C(REDUCE_SCATTER) | C(ALLGATHER)},
    {"hier3", "three levels: mesh inside nodes, ring inside pods (leaf), "
              "ring across pods (spine); pipelined",
     C(ALLREDUCE) | C(REDUCE_SCATTER) | C(ALLGATHER), hccn_hier_hier3_build, 0,
     hccn_hier_cm_hier3, 0, C(ALLREDUCE) | C(REDUCE_SCATTER) | C(ALLGATHER)},
    {"hier3_hd", "three levels as hier3, halving-doubling across pods",
     C(ALLREDUCE) | C(REDUCE_SCATTER) | C(ALLGATHER),
     hccn_hier_hier3_hd_build, 0, hccn_hier_cm_hier3_hd, 0,
     C(ALLREDUCE) | C(REDUCE_SCATTER) | C(ALLGATHER)},
    {"torus2d", "rings along the rows and the columns of a grid of the "
                "ranks: 2(X-1) + 2(Y-1) latencies instead of 2(p-1)",
     C(ALLREDUCE) | C(REDUCE_SCATTER) | C(ALLGATHER), hccn_hier_torus_build, 0,
     hccn_hier_cm_torus, 1, 0},
    {"nvls", "in-switch reduction and multicast inside one node (NVLink "
             "SHARP-like): each NPU's link carries S up and S down",
     C(ALLREDUCE) | C(REDUCE_SCATTER) | C(ALLGATHER), hccn_hier_nvls_build,
     C(ALLREDUCE) | C(REDUCE_SCATTER) | C(ALLGATHER), hccn_hier_cm_nvls, 0, 0},
    {"hier_nvls", "hierarchical: nvls inside nodes whose switch reduces, "
                  "halving-doubling across a power of two of nodes, else "
                  "ring; allreduce pipelined in chunks",
     C(ALLREDUCE) | C(REDUCE_SCATTER) | C(ALLGATHER),
     hccn_hier_hier_nvls_build, 0, hccn_hier_cm_hier_nvls, 0,
     C(ALLREDUCE) | C(REDUCE_SCATTER) | C(ALLGATHER)},
    {"sharp", "in-network reduction across nodes, one rank per node "
              "(InfiniBand SHARP-like): each NIC carries S up and S down",
     C(ALLREDUCE) | C(REDUCE_SCATTER) | C(ALLGATHER), hccn_hier_sharp_build,
     C(ALLREDUCE) | C(REDUCE_SCATTER) | C(ALLGATHER), hccn_hier_cm_sharp, 0, 0},
    {"hier_sharp", "hierarchical: mesh inside nodes, sharp across where "
                   "the network switch reduces",
     C(ALLREDUCE) | C(REDUCE_SCATTER) | C(ALLGATHER),
     hccn_hier_hier_sharp_build, 0, hccn_hier_cm_hier_sharp, 0,
     C(ALLREDUCE) | C(REDUCE_SCATTER) | C(ALLGATHER)},
    {"hier_nvls_sharp", "hierarchical: nvls inside nodes, sharp across: "
                        "reduced in the node's and the network's switches",
     C(ALLREDUCE) | C(REDUCE_SCATTER) | C(ALLGATHER),
     hccn_hier_hier_nvls_sharp_build, 0, hccn_hier_cm_hier_nvls_sharp, 0,
     C(ALLREDUCE) | C(REDUCE_SCATTER) | C(ALLGATHER)},
    {"rings", "the libraries' ring: one ring per channel (per NIC of a node, "
              "per link set of a mesh), each pipelined in slices",
     C(ALLREDUCE) | C(REDUCE_SCATTER) | C(ALLGATHER), hccn_hier_rings_build,
     0, hccn_hier_cm_rings, 1, 0},
    {NULL, NULL, 0, NULL, 0, NULL, 0, 0},
};

#undef C

const hccn_algo_t *hccn_hier_algos(void)
{
    return algos;
}

const hccn_algo_t *hccn_hier_algo_find(const char *name)
{
    if (name == NULL)
        return NULL;
    for (const hccn_algo_t *a = algos; a->name != NULL; a++)
        if (strcmp(a->name, name) == 0)
            return a;
    return hccn_hier_combo_find(name);
}

int hccn_hier_nvswitch_call(const hccn_algo_t *algo, const hccn_coll_args_t *a)
{
    if (strcmp(algo->name, "nvls") == 0)
        return (a->in_switch & HCCN_IN_SWITCH_ONE) != 0;
    if (strcmp(algo->name, "hier_nvls") == 0 ||
        strcmp(algo->name, "hier_nvls_sharp") == 0)
        return (a->in_switch & HCCN_IN_SWITCH_NODES) != 0;
    return 0;
}

uint32_t hccn_hier_proto_scale(const hccn_algo_t *algo,
                               const hccn_coll_args_t *a)
{
    int channels, slices;
    if (strcmp(algo->name, "tree") == 0 && hccn_hier_tree_nodes(a)) {
        hccn_tree_shape_t sh;
        hccn_hier_tree_size(a, &sh);
        return sh.K < UINT32_MAX ? (uint32_t)sh.K : UINT32_MAX;
    }
    if (strcmp(algo->name, "rings") != 0 || a->nranks < 2)
        return 1;
    hccn_hier_rings_size(a, &channels, &slices);
    return (uint32_t)slices;
}

int hccn_hier_family(const hccn_algo_t *algo, const hccn_coll_args_t *a)
{
    if (hccn_hier_nvswitch_call(algo, a))
        return HCCN_SIM_FAM_NVLS;
    if (strcmp(algo->name, "tree") == 0)
        return HCCN_SIM_FAM_TREE;
    if (strcmp(algo->name, "rings") == 0 && a->view != NULL &&
        a->view->nnodes > 1)
        return HCCN_SIM_FAM_NET_RING;
    return HCCN_SIM_FAM_OTHER;
}

hccn_sim_call_t hccn_hier_sched_call(const hccn_sched_t *s)
{
    return (hccn_sim_call_t){s->nvswitch, s->proto_scale, s->family,
                             s->tree_bytes};
}

hccn_sim_call_t hccn_hier_algo_call(const hccn_algo_t *algo,
                                    const hccn_coll_args_t *a)
{
    int family = hccn_hier_family(algo, a);
    return (hccn_sim_call_t){
        hccn_hier_nvswitch_call(algo, a), hccn_hier_proto_scale(algo, a),
        family,
        family == HCCN_SIM_FAM_TREE && hccn_hier_tree_nodes(a)
            ? a->count * a->esize : 0};
}

hccn_sched_t *hccn_hier_build(const hccn_algo_t *algo,
                              const hccn_coll_args_t *a)
{
    hccn_coll_args_t args = *a;
    args.levels = hccn_hier_algo_levels(algo);
    hccn_sim_fail_clear();
    hccn_sched_t *s = algo->build(&args);
    if (s != NULL) {
        hccn_sim_call_t call = hccn_hier_algo_call(algo, &args);
        s->nvswitch = call.nvswitch;
        s->proto_scale = call.proto_scale;
        s->family = call.family;
        s->tree_bytes = call.tree_bytes;
        return s;
    }
    /* The builder recorded why (a builder that did not is a bug, which
     * hccn_sim_fail_context reports as such). */
    hccn_sim_fail_context("%s: algorithm '%s'", hccn_coll_name(a->coll),
                          algo->name);
    return NULL;
}

const char *hccn_coll_name(hccn_coll_t coll)
{
    static const char *const names[HCCN_COLL_COUNT] = {
        [HCCN_COLL_ALLREDUCE] = "allreduce",
        [HCCN_COLL_REDUCE_SCATTER] = "reduce_scatter",
        [HCCN_COLL_ALLGATHER] = "allgather",
        [HCCN_COLL_BROADCAST] = "broadcast",
        [HCCN_COLL_REDUCE] = "reduce",
        [HCCN_COLL_ALLTOALL] = "alltoall",
        [HCCN_COLL_SCATTER] = "scatter",
        [HCCN_COLL_GATHER] = "gather",
        [HCCN_COLL_BARRIER] = "barrier",
        [HCCN_COLL_ALLTOALLV] = "alltoallv",
        [HCCN_COLL_ALLGATHERV] = "allgatherv",
        [HCCN_COLL_REDUCE_SCATTERV] = "reduce_scatterv",
    };
    if ((unsigned)coll >= HCCN_COLL_COUNT)
        return "unknown";
    return names[coll];
}

int hccn_coll_is_v(hccn_coll_t coll)
{
    return coll == HCCN_COLL_ALLTOALLV || coll == HCCN_COLL_ALLGATHERV ||
           coll == HCCN_COLL_REDUCE_SCATTERV;
}

/* The extent in bytes of nranks blocks counts[i] at displs[i] (elements):
 * the end of the block that ends last. */
static uint64_t v_extent(const uint64_t *counts, const uint64_t *displs,
                         int nranks, size_t esize)
{
    uint64_t end = 0;
    for (int i = 0; counts != NULL && displs != NULL && i < nranks; i++)
        if (counts[i] > 0 && displs[i] + counts[i] > end)
            end = displs[i] + counts[i];
    return end * esize;
}

/* SEND and RECV bytes of a v-collective on rank (extents of the blocks). */
static void v_buf_bytes(const hccn_coll_args_t *a, int rank, uint64_t *s,
                        uint64_t *r)
{
    int n = a->nranks;
    switch (a->coll) {
    case HCCN_COLL_ALLTOALLV:
        *s = v_extent(a->vcounts, a->vsdispls, n, a->esize);
        *r = v_extent(a->vrcounts, a->vrdispls, n, a->esize);
        break;
    case HCCN_COLL_ALLGATHERV:
        *s = a->vcounts[rank] * a->esize;
        *r = v_extent(a->vcounts, a->vrdispls, n, a->esize);
        break;
    default:
        *s = v_extent(a->vcounts, a->vsdispls, n, a->esize);
        *r = a->vcounts[rank] * a->esize;
        break;
    }
}

void hccn_coll_buf_bytes(const hccn_coll_args_t *args, int rank,
                         uint64_t *send_bytes, uint64_t *recv_bytes)
{
    uint64_t one = args->count * args->esize;
    uint64_t all = one * (uint64_t)(args->nranks > 0 ? args->nranks : 0);
    int root = rank == args->root;
    uint64_t s = 0, r = 0;

    switch (args->coll) {
    case HCCN_COLL_ALLREDUCE:
        s = r = one;
        break;
    case HCCN_COLL_REDUCE_SCATTER:
        s = all;
        r = one;
        break;
    case HCCN_COLL_ALLGATHER:
        s = one;
        r = all;
        break;
    case HCCN_COLL_BROADCAST:
        s = root ? one : 0;
        r = one;
        break;
    case HCCN_COLL_REDUCE:
        s = one;
        r = root ? one : 0;
        break;
    case HCCN_COLL_ALLTOALL:
        s = r = all;
        break;
    case HCCN_COLL_SCATTER:
        s = root ? all : 0;
        r = one;
        break;
    case HCCN_COLL_GATHER:
        s = one;
        r = root ? all : 0;
        break;
    case HCCN_COLL_ALLTOALLV:
    case HCCN_COLL_ALLGATHERV:
    case HCCN_COLL_REDUCE_SCATTERV:
        if (args->vcounts != NULL) {
            v_buf_bytes(args, rank, &s, &r);
        } else {   /* uniform blocks: the fixed-size counterpart's */
            s = args->coll == HCCN_COLL_ALLGATHERV ? one : all;
            r = args->coll == HCCN_COLL_REDUCE_SCATTERV ? one : all;
        }
        break;
    default:
        break;
    }
    if (send_bytes != NULL)
        *send_bytes = s;
    if (recv_bytes != NULL)
        *recv_bytes = r;
}
