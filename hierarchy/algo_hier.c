/*
 * "hier", "hier_rr", "hier_mh": hierarchical collectives composed from flat
 * schedules as two levels (hierarchy/levels.h), following HCCL's
 * level0/level1 split.
 * Level 0 is the ranks of one node, level 1 the ranks with the same local
 * index across nodes (args->view says which is which). The rows differ in
 * the flat algorithms of the two levels: hier = mesh inside nodes and ring
 * across, hier_rr = ring and ring, hier_mh = mesh and halving-doubling.
 * With N nodes of L ranks, q = count / L (rounded down):
 *
 * allreduce       per chunk of the message (a multiple of L elements,
 *                 args->chunk_bytes, default 4 MiB): P1 intra-node
 *                 reduce-scatter into L blocks of RECV -> P2 inter-node
 *                 allreduce of each rank's block among its level-1 group
 *                 -> P3 intra-node allgather. Inside a node the P1s of all
 *                 chunks run first, then the P3s; across nodes the P2s run
 *                 in chunk order; so chunk c+1's P1 overlaps chunk c's P2
 *                 and each level's links carry one phase at a time.
 * reduce_scatter  intra-node reduce-scatter of all the data (one flat
 *                 sub-collective per node-sized slice) into SCRATCH ->
 *                 inter-node reduce-scatter of the 1/L that is the rank's
 *                 into RECV (levels.h)
 * allgather       inter-node allgather of the rank's own block into
 *                 SCRATCH -> intra-node allgather of what it brought into
 *                 RECV (levels.h)
 * broadcast       scatter of the root's SEND in the root's node -> inter-
 *                 node broadcast of each block from the root's node ->
 *                 intra-node allgather
 * reduce          intra-node reduce-scatter into SCRATCH -> inter-node
 *                 reduce of each block to the root's node -> gather to the
 *                 root
 *
 * The count % L elements left over (fewer than L) are done last, after
 * everything else on the rank: allreduce = intra allreduce -> inter
 * allreduce, broadcast = inter broadcast from the root -> intra broadcast,
 * reduce = intra reduce -> inter reduce to the root.
 *
 * Not applicable (NULL): no view, one node, or one rank per node. Nodes of
 * different sizes (uneven shapes), and reduce_scatter/allgather on a
 * communicator whose ranks are not node-major (rank = node * L + local),
 * fall back to the flat ring (for allreduce, broadcast and reduce on the
 * ranks ordered by node), named "hier(ring)". docs/algorithms.md gives
 * bytes, times and reduction orders.
 */
#include <stdlib.h>
#include <string.h>

#include "device_sim/alloc.h"
#include "device_sim/fail.h"
#include "hierarchy/algo_util.h"
#include "hierarchy/levels.h"

enum { PHASE_1 = 1, PHASE_2 = 2, PHASE_3 = 3, PHASE_TAIL = 4 };

typedef struct {
    const char *sched;     /* schedule name */
    const char *l0, *l1;   /* flat algorithms of level 0 and level 1 */
} variant_t;

static const variant_t HIER = {"hier(mesh,ring)", "mesh", "ring"};
static const variant_t HIER_RR = {"hier(ring,ring)", "ring", "ring"};
static const variant_t HIER_MH = {"hier(mesh,hd)", "mesh", "hd"};

/* A two-level composition (levels.h): level 0 the ranks of a node, level
 * 1 the ranks with one local index; the rank of node n, local l is at
 * at[n * L + l]. */
typedef struct {
    hccn_hier_comp_t lv;
    hccn_hier_levels_t spec;
    const hccn_coll_args_t *a;
    int N, L;
    int *at;
} hier_t;

/* ------------------------------------------------------------ shape --- */

/* 1 if every node of v has a distinct local index 0..size-1 per rank; 0
 * with the reason recorded. */
static int places_ok(const hccn_hier_view_t *v, const int *size)
{
    int *first = hccn_sim_calloc((size_t)v->nnodes + 1, sizeof(int));
    unsigned char *seen = hccn_sim_calloc((size_t)v->nranks + 1, 1);
    int ok = first != NULL && seen != NULL, r = 0;
    for (int n = 0; ok && n < v->nnodes; n++)
        first[n + 1] = first[n] + size[n];
    for (; ok && r < v->nranks; r++) {
        int nd = v->node[r], l = v->local[r];
        ok = l < size[nd] && !seen[first[nd] + l];
        if (ok)
            seen[first[nd] + l] = 1;
    }
    if (!ok && first != NULL && seen != NULL)
        hccn_sim_fail(HCCN_ERR_UNSUPPORTED, "rank %d's place in node %d "
                      "(local %d) is out of range or taken", r - 1,
                      v->node[r - 1], v->local[r - 1]);
    hccn_sim_free(first);
    hccn_sim_free(seen);
    return ok;
}

/* Records why hier does not apply; -1. */
static int not_hier(const char *why, int n)
{
    hccn_sim_fail(HCCN_ERR_UNSUPPORTED, why, n);
    return -1;
}

/* Checks args->view. Returns -1 when hier does not apply (no view, one
 * node, one rank per node, or a view that does not describe the ranks),
 * with the reason recorded, 0 for nodes of different sizes, else 1 with
 * *L ranks on every node. */
static int shape(const hccn_coll_args_t *a, int *L)
{
    const hccn_hier_view_t *v = a->view;
    if (v == NULL || v->nranks != a->nranks || v->node == NULL ||
        v->local == NULL)
        return not_hier("no view of the nodes of the %d ranks", a->nranks);
    if (v->nnodes < 2)
        return not_hier("%d node: it needs two or more", v->nnodes);
    int *size = hccn_sim_calloc((size_t)v->nnodes, sizeof(int));
    if (size == NULL)
        return -1;
    int rc = 1;
    for (int r = 0; r < a->nranks && rc > 0; r++) {
        if (v->node[r] < 0 || v->node[r] >= v->nnodes || v->local[r] < 0)
            rc = not_hier("rank %d has no place on a node", r);
        else
            size[v->node[r]]++;
    }
    for (int n = 0; n < v->nnodes && rc > 0; n++)
        if (size[n] == 0)
            rc = not_hier("node %d holds none of the ranks", n);
    if (rc > 0 && !places_ok(v, size))
        rc = -1;
    *L = rc > 0 ? size[0] : 0;
    for (int n = 1; n < v->nnodes && rc > 0; n++)
        if (size[n] != size[0])
            rc = 0;
    hccn_sim_free(size);
    if (rc > 0 && *L == 1)
        rc = not_hier("%d rank per node: it needs two or more", 1);
    return rc;
}

/* 1 if rank r is node * L + local for every r. */
static int node_major(const hccn_hier_view_t *v, int L)
{
    for (int r = 0; r < v->nranks; r++)
        if (r != v->node[r] * L + v->local[r])
            return 0;
    return 1;
}

static int hier_init(hier_t *h, hccn_sched_t *s, const hccn_coll_args_t *a,
                     const variant_t *v, int L)
{
    memset(h, 0, sizeof(*h));
    h->a = a;
    h->N = a->view->nnodes;
    h->L = L;
    h->spec = (hccn_hier_levels_t){.k = 2, .n = {L, h->N},
                                   .algo = {v->l0, v->l1}, .name = v->sched,
                                   .slots = a->view->slots};
    h->at = hccn_sim_malloc((size_t)a->nranks * sizeof(int));
    if (h->at == NULL)
        return -1;
    for (int r = 0; r < a->nranks; r++)
        h->at[a->view->node[r] * L + a->view->local[r]] = r;
    return hccn_hier_levels_init(&h->lv, s, a, &h->spec, h->at);
}

static void hier_free(hier_t *h)
{
    hccn_hier_levels_fini(&h->lv);
    hccn_sim_free(h->at);
}

/* The ranks of node n (by local index), or of level-1 group l (by node). */
static const int *node_group(hier_t *h, int n)
{
    return hccn_hier_levels_group(&h->lv, 0, (uint64_t)n);
}

static const int *local_group(hier_t *h, int l)
{
    return hccn_hier_levels_group(&h->lv, 1, (uint64_t)l);
}

static const hccn_sched_t *flat(hier_t *h, const char *algo,
                                hccn_coll_t coll, int n, uint64_t count,
                                int root)
{
    return hccn_hier_levels_flat(&h->lv, algo, coll, n, count, root);
}

static hccn_bufmap_t at(hccn_buf_t buf, uint64_t base, uint64_t stride)
{
    return (hccn_bufmap_t){buf, base, stride};
}

/* Appends sub for the ranks of grp (levels.h). */
static int put(hier_t *h, const hccn_sched_t *sub, const int *grp,
               hccn_bufmap_t send, hccn_bufmap_t recv, uint64_t scratch,
               const hccn_frontier_t *after, hccn_frontier_t *last,
               int phase)
{
    return hccn_hier_levels_put(&h->lv, sub, grp, send, recv, scratch, after,
                           last, phase);
}

static const hccn_frontier_t *both(hier_t *h, const hccn_frontier_t *a,
                                   const hccn_frontier_t *b)
{
    return hccn_hier_levels_both(&h->lv, a, b);
}

/* -------------------------------------------------- broadcast, reduce --- */

static int root_node(const hier_t *h)
{
    return h->a->view->node[h->a->root];
}

static int root_local(const hier_t *h)
{
    return h->a->view->local[h->a->root];
}

static void bcast_tail(hier_t *h, uint64_t off, uint64_t t)
{
    uint64_t o = off * h->a->esize;
    int n0 = root_node(h), l0 = root_local(h);
    put(h, flat(h, h->spec.algo[1], HCCN_COLL_BROADCAST, h->N, t, n0),
        local_group(h, l0), at(HCCN_BUF_SEND, o, 0), at(HCCN_BUF_RECV, o, 0),
        0, both(h, h->lv.f[0], h->lv.f[1]), h->lv.f[1], PHASE_TAIL);
    const hccn_frontier_t *after = both(h, h->lv.f[0], h->lv.f[1]);
    for (int n = 0; n < h->N; n++)
        put(h, flat(h, h->spec.algo[0], HCCN_COLL_BROADCAST, h->L, t, l0),
            node_group(h, n), at(HCCN_BUF_RECV, o, 0),
            at(HCCN_BUF_RECV, o, 0), 0, after, h->lv.f[0], PHASE_TAIL);
}

/* Scatter in the root's node, inter-node broadcast of each block from the
 * root's node, intra-node allgather; then the tail. */
static int build_broadcast(hier_t *h)
{
    uint64_t q = h->a->count / (uint64_t)h->L, b = q * h->a->esize;
    int n0 = root_node(h), l0 = root_local(h);
    if (q > 0) {
        put(h, flat(h, "mesh", HCCN_COLL_SCATTER, h->L, q, l0),
            node_group(h, n0), at(HCCN_BUF_SEND, 0, 0),
            at(HCCN_BUF_RECV, 0, b), 0, NULL, h->lv.f[0], PHASE_1);
        for (int l = 0; l < h->L; l++)
            put(h, flat(h, h->spec.algo[1], HCCN_COLL_BROADCAST, h->N, q, n0),
                local_group(h, l), at(HCCN_BUF_RECV, l * b, 0),
                at(HCCN_BUF_RECV, l * b, 0), 0, h->lv.f[0], h->lv.f[1],
                PHASE_2);
        for (int n = 0; n < h->N; n++)
            put(h, flat(h, h->spec.algo[0], HCCN_COLL_ALLGATHER, h->L, q, 0),
                node_group(h, n), at(HCCN_BUF_RECV, 0, b),
                at(HCCN_BUF_RECV, 0, 0), 0, h->lv.f[1], h->lv.f[0], PHASE_3);
    }
    if (h->a->count % (uint64_t)h->L)
        bcast_tail(h, q * (uint64_t)h->L, h->a->count % (uint64_t)h->L);
    return 0;
}

/* The tail: intra reduce to local l0 into SCRATCH [x, x+t), then inter
 * reduce from there to the root's RECV. */
static void reduce_tail(hier_t *h, uint64_t off, uint64_t t, uint64_t x)
{
    uint64_t o = off * h->a->esize, tb = t * h->a->esize;
    int n0 = root_node(h), l0 = root_local(h);
    for (int n = 0; n < h->N; n++)
        put(h, flat(h, h->spec.algo[0], HCCN_COLL_REDUCE, h->L, t, l0),
            node_group(h, n), at(HCCN_BUF_SEND, o, 0),
            at(HCCN_BUF_SCRATCH, x, 0), x + tb, both(h, h->lv.f[0], h->lv.f[1]),
            h->lv.f[0], PHASE_TAIL);
    put(h, flat(h, h->spec.algo[1], HCCN_COLL_REDUCE, h->N, t, n0),
        local_group(h, l0), at(HCCN_BUF_SCRATCH, x, 0),
        at(HCCN_BUF_RECV, o, 0), x + tb, h->lv.f[0], h->lv.f[1], PHASE_TAIL);
}

/* Intra-node reduce-scatter into SCRATCH [0, b), inter-node reduce of it
 * (in place) to the root's node, gather to the root; then the tail. Each
 * phase's own SCRATCH comes after [0, b). */
static int build_reduce(hier_t *h)
{
    uint64_t q = h->a->count / (uint64_t)h->L, b = q * h->a->esize;
    int n0 = root_node(h), l0 = root_local(h);
    if (q > 0) {
        for (int n = 0; n < h->N; n++)
            put(h, flat(h, h->spec.algo[0], HCCN_COLL_REDUCE_SCATTER, h->L, q, 0),
                node_group(h, n), at(HCCN_BUF_SEND, 0, 0),
                at(HCCN_BUF_SCRATCH, 0, 0), b, NULL, h->lv.f[0], PHASE_1);
        for (int l = 0; l < h->L; l++)
            put(h, flat(h, h->spec.algo[1], HCCN_COLL_REDUCE, h->N, q, n0),
                local_group(h, l), at(HCCN_BUF_SCRATCH, 0, 0),
                at(HCCN_BUF_SCRATCH, 0, 0), b, h->lv.f[0], h->lv.f[1], PHASE_2);
        put(h, flat(h, "mesh", HCCN_COLL_GATHER, h->L, q, l0),
            node_group(h, n0), at(HCCN_BUF_SCRATCH, 0, 0),
            at(HCCN_BUF_RECV, 0, 0), b, h->lv.f[1], h->lv.f[0], PHASE_3);
    }
    if (h->a->count % (uint64_t)h->L)
        reduce_tail(h, q * (uint64_t)h->L, h->a->count % (uint64_t)h->L,
                    h->lv.s->scratch_bytes);
    return 0;
}

/* ---------------------------------------------------------- fallback --- */

/* The flat ring, on the ranks ordered by (node, local) for the
 * collectives whose buffers do not depend on rank order. */
static hccn_sched_t *fallback(const hccn_coll_args_t *a)
{
    const hccn_hier_view_t *v = a->view;
    int p = a->nranks, whole = a->coll != HCCN_COLL_REDUCE_SCATTER &&
                               a->coll != HCCN_COLL_ALLGATHER;
    int *order = hccn_sim_malloc((size_t)p * sizeof(int));
    hccn_sched_t *s = hccn_sched_new(p, "hier(ring)");
    if (order == NULL || s == NULL) {
        hccn_sim_free(order);
        return hccn_hier_finish(s, -1);
    }
    int n = 0, sub_root = a->root;
    for (int nd = 0; nd < (whole ? v->nnodes : 1); nd++)
        for (int r = 0; r < p; r++)
            if (!whole || v->node[r] == nd) {
                if (r == a->root)
                    sub_root = n;
                order[n++] = r; /* ranks of a node in rank order */
            }
    hccn_coll_args_t sa = *a;
    sa.root = sub_root;
    sa.view = NULL;
    const hccn_algo_t *ring = hccn_hier_algo_find("ring");
    hccn_compose_t how = hccn_compose_identity();
    how.ranks = order;
    hccn_sched_t *sub = ring != NULL ? ring->build(&sa) : NULL;
    int rc = hccn_sched_compose(s, sub, &how, NULL);
    hccn_sched_free(sub);
    hccn_sim_free(order);
    return hccn_hier_finish(s, rc);
}

/* ------------------------------------------------------------- entry --- */

static hccn_sched_t *build(const hccn_coll_args_t *a, const variant_t *v,
                           unsigned mine)
{
    int L = 0;
    if (!hccn_hier_args_ok(a, mine) || !hccn_hier_count_fits(a, 4))
        return NULL;
    int sh = shape(a, &L);
    if (sh < 0)
        return NULL;
    if (sh == 0 || ((a->coll == HCCN_COLL_REDUCE_SCATTER ||
                     a->coll == HCCN_COLL_ALLGATHER) &&
                    !node_major(a->view, L)))
        return fallback(a);
    hier_t h;
    hccn_sched_t *s = hccn_sched_new(a->nranks, v->sched);
    if (s == NULL || a->count == 0)
        return s;
    int rc = hier_init(&h, s, a, v, L);
    if (rc == 0 && a->coll == HCCN_COLL_ALLREDUCE)
        rc = hccn_hier_levels_fold(&h.lv);
    if (rc == 0 && a->coll == HCCN_COLL_ALLREDUCE)
        rc = hccn_hier_levels_allreduce(&h.lv, HCCN_HIER_CHUNK);
    else if (rc == 0 && (a->coll == HCCN_COLL_REDUCE_SCATTER ||
                         a->coll == HCCN_COLL_ALLGATHER))
        rc = hccn_hier_levels_rs_ag(&h.lv);
    else if (rc == 0 && a->coll == HCCN_COLL_BROADCAST)
        rc = build_broadcast(&h);
    else if (rc == 0)
        rc = build_reduce(&h);
    int again = h.lv.unfoldable;
    hier_free(&h);
    if (again) {
        /* A level-1 schedule that does not fold: the whole schedule. */
        hccn_sched_free(s);
        hccn_coll_args_t whole = *a;
        whole.fold_rep = NULL;
        return build(&whole, v, mine);
    }
    return hccn_hier_finish(s, rc);
}

static const unsigned AR_RS_AG = 1u << HCCN_COLL_ALLREDUCE |
                                 1u << HCCN_COLL_REDUCE_SCATTER |
                                 1u << HCCN_COLL_ALLGATHER;

/* Builds hier (mesh inside nodes, ring across) for args; NULL when it does
 * not apply (see the top of this file), on bad arguments or no memory. */
hccn_sched_t *hccn_hier_hier_build(const hccn_coll_args_t *args)
{
    return build(args, &HIER,
                 AR_RS_AG | 1u << HCCN_COLL_BROADCAST |
                     1u << HCCN_COLL_REDUCE);
}

/* As hccn_hier_hier_build with ring at both levels. */
hccn_sched_t *hccn_hier_hier_rr_build(const hccn_coll_args_t *args)
{
    return build(args, &HIER_RR, AR_RS_AG);
}

/* As hccn_hier_hier_build with halving-doubling across nodes. */
hccn_sched_t *hccn_hier_hier_mh_build(const hccn_coll_args_t *args)
{
    return build(args, &HIER_MH, AR_RS_AG);
}

/* As hccn_hier_hier_build with the two levels of args->levels
 * (algo_levels.c), for allreduce, reduce-scatter and allgather. */
hccn_sched_t *hccn_hier_hier_build_levels(const hccn_coll_args_t *args)
{
    const hccn_level_choice_t *lv = args->levels;
    if (lv == NULL)
        return hccn_hier_no_levels();
    variant_t v = {lv->name, lv->algo[0], lv->algo[1]};
    return build(args, &v, AR_RS_AG);
}
