/*
 * "hier", "hier_rr", "hier_mh": hierarchical collectives composed from flat
 * schedules (hierarchy/compose.h), following HCCL's level0/level1 split.
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
 *                 into RECV (hier_levels.h)
 * allgather       inter-node allgather of the rank's own block into
 *                 SCRATCH -> intra-node allgather of what it brought into
 *                 RECV (hier_levels.h)
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

#include "hierarchy/algo_util.h"
#include "hierarchy/compose.h"
#include "hierarchy/fold.h"
#include "hierarchy/hier_levels.h"

#define HIER_DEFAULT_CHUNK ((uint64_t)4 << 20)

enum { PHASE_1 = 1, PHASE_2 = 2, PHASE_3 = 3, PHASE_TAIL = 4 };

enum { HIER_MEMO = 8 };

typedef struct {
    const char *sched;     /* schedule name */
    const char *l0, *l1;   /* flat algorithms of level 0 and level 1 */
} variant_t;

static const variant_t HIER = {"hier(mesh,ring)", "mesh", "ring"};
static const variant_t HIER_RR = {"hier(ring,ring)", "ring", "ring"};
static const variant_t HIER_MH = {"hier(mesh,hd)", "mesh", "hd"};

typedef struct {
    hccn_sched_t *s;
    const hccn_coll_args_t *a;
    const variant_t *v;
    int N, L;
    int *at;                  /* [n * L + l]: the rank at node n, local l */
    int *grp;                 /* a group's ranks, max(N, L) entries */
    hccn_frontier_t *intra;   /* last steps of each rank's level-0 phase */
    hccn_frontier_t *inter;   /* last steps of each rank's level-1 phase */
    hccn_frontier_t *tmp;
    /* The flat schedules built so far, most of them appended many times
     * (once per node or level-1 group of every chunk): built once each. */
    struct {
        const char *algo;
        hccn_coll_t coll;
        int n, root;
        uint64_t count;
        hccn_sched_t *s;
        int folds;            /* folded builds: 0 not known, 1, -1 no */
        hccn_sched_fold_t fold;   /* when it folds */
    } memo[HIER_MEMO];
    int memo_next;            /* the entry to replace next */
    /* Folded builds (coll.h, fold_rep): per rank, whether it is in node 0
     * (its steps are kept); NULL for a whole build. */
    unsigned char *keep;
    int unfoldable;           /* a level-1 schedule does not fold */
} hier_t;

/* ------------------------------------------------------------ shape --- */

/* 1 if every node of v has a distinct local index 0..size-1 per rank. */
static int places_ok(const hccn_hier_view_t *v, const int *size)
{
    int *first = calloc((size_t)v->nnodes + 1, sizeof(int));
    unsigned char *seen = calloc((size_t)v->nranks + 1, 1);
    int ok = first != NULL && seen != NULL;
    for (int n = 0; ok && n < v->nnodes; n++)
        first[n + 1] = first[n] + size[n];
    for (int r = 0; ok && r < v->nranks; r++) {
        int nd = v->node[r], l = v->local[r];
        ok = l < size[nd] && !seen[first[nd] + l];
        if (ok)
            seen[first[nd] + l] = 1;
    }
    free(first);
    free(seen);
    return ok;
}

/* Checks args->view. Returns -1 when hier does not apply (no view, one
 * node, one rank per node, or a view that does not describe the ranks), 0
 * for nodes of different sizes, else 1 with *L ranks on every node. */
static int shape(const hccn_coll_args_t *a, int *L)
{
    const hccn_hier_view_t *v = a->view;
    if (v == NULL || v->nranks != a->nranks || v->nnodes < 2 ||
        v->node == NULL || v->local == NULL)
        return -1;
    int *size = calloc((size_t)v->nnodes, sizeof(int));
    if (size == NULL)
        return -1;
    int rc = 1;
    for (int r = 0; r < a->nranks && rc > 0; r++) {
        if (v->node[r] < 0 || v->node[r] >= v->nnodes || v->local[r] < 0)
            rc = -1;
        else
            size[v->node[r]]++;
    }
    for (int n = 0; n < v->nnodes && rc > 0; n++)
        if (size[n] == 0)
            rc = -1;
    if (rc > 0 && !places_ok(v, size))
        rc = -1;
    *L = rc > 0 ? size[0] : 0;
    for (int n = 1; n < v->nnodes && rc > 0; n++)
        if (size[n] != size[0])
            rc = 0;
    free(size);
    if (rc > 0 && *L == 1)
        rc = -1;
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
    h->s = s;
    h->a = a;
    h->v = v;
    h->N = a->view->nnodes;
    h->L = L;
    h->at = malloc((size_t)a->nranks * sizeof(int));
    h->grp = malloc((size_t)(h->N > L ? h->N : L) * sizeof(int));
    h->intra = hccn_frontier_new(a->nranks);
    h->inter = hccn_frontier_new(a->nranks);
    h->tmp = hccn_frontier_new(a->nranks);
    if (!h->at || !h->grp || !h->intra || !h->inter || !h->tmp)
        return -1;
    for (int r = 0; r < a->nranks; r++)
        h->at[a->view->node[r] * L + a->view->local[r]] = r;
    return 0;
}

static void hier_free(hier_t *h)
{
    for (int i = 0; i < HIER_MEMO; i++) {
        hccn_sched_free(h->memo[i].s);
        hccn_sched_fold_free(&h->memo[i].fold);
    }
    free(h->keep);
    free(h->at);
    free(h->grp);
    hccn_frontier_free(h->intra);
    hccn_frontier_free(h->inter);
    hccn_frontier_free(h->tmp);
}

/* The ranks of node n (by local index), or of level-1 group l (by node). */
static const int *node_group(hier_t *h, int n)
{
    for (int l = 0; l < h->L; l++)
        h->grp[l] = h->at[n * h->L + l];
    return h->grp;
}

static const int *local_group(hier_t *h, int l)
{
    for (int n = 0; n < h->N; n++)
        h->grp[n] = h->at[n * h->L + l];
    return h->grp;
}

/* ------------------------------------------------------ composition --- */

/* The flat schedule of algo for a subgroup of n ranks (owned by h; NULL
 * if it cannot be built). */
static const hccn_sched_t *flat(hier_t *h, const char *algo,
                                hccn_coll_t coll, int n, uint64_t count,
                                int root)
{
    for (int i = 0; i < HIER_MEMO; i++)
        if (h->memo[i].s != NULL && strcmp(h->memo[i].algo, algo) == 0 &&
            h->memo[i].coll == coll && h->memo[i].n == n &&
            h->memo[i].count == count && h->memo[i].root == root)
            return h->memo[i].s;
    const hccn_algo_t *al = hccn_hier_algo_find(algo);
    hccn_coll_args_t sa = {.coll = coll, .nranks = n, .count = count,
                           .esize = h->a->esize, .root = root,
                           .chunk_bytes = h->a->chunk_bytes};
    hccn_sched_t *s = al != NULL ? al->build(&sa) : NULL;
    if (s == NULL)
        return NULL;
    int i = h->memo_next;
    h->memo_next = (i + 1) % HIER_MEMO;
    hccn_sched_free(h->memo[i].s);
    hccn_sched_fold_free(&h->memo[i].fold);
    h->memo[i].folds = 0;
    h->memo[i].algo = algo;
    h->memo[i].coll = coll;
    h->memo[i].n = n;
    h->memo[i].root = root;
    h->memo[i].count = count;
    h->memo[i].s = s;
    return s;
}

static hccn_bufmap_t at(hccn_buf_t buf, uint64_t base, uint64_t stride)
{
    return (hccn_bufmap_t){buf, base, stride};
}

/* Folded builds: whether level-1 schedule sub (an entry of the memo) runs
 * alike on every node: every member's part is member 0's, up to the order
 * of its steps (hierarchy/fold.h); then the entry's fold says how member
 * 0's receives pair. The members' NPUs are alike here (the run checked
 * the topology), so bytes stand for costs. */
static const hccn_sched_fold_t *level1_fold(hier_t *h, const hccn_sched_t *sub)
{
    int i = 0;
    while (i < HIER_MEMO && h->memo[i].s != sub)
        i++;
    if (i == HIER_MEMO)
        return NULL;
    if (h->memo[i].folds == 0) {
        /* Members in node order, each its own node and its own rank. */
        int n = sub->nranks;
        hccn_sim_npu_t *npus = calloc((size_t)n, sizeof(*npus));
        int *world = calloc((size_t)n, sizeof(int));
        int *rep = calloc((size_t)n, sizeof(int));
        int rc = -1;
        if (npus != NULL && world != NULL && rep != NULL) {
            for (int j = 0; j < n; j++) {
                npus[j] = (hccn_sim_npu_t){.reduce_bw = 1e9, .mem_bw = 1e9,
                                           .node = j};
                world[j] = j;
            }
            hccn_sched_npus_t x = {sub, npus, world};
            rc = hccn_sched_fold_check(sub, npus, rep, 1,
                                       hccn_sched_npu_tasks, &x,
                                       &h->memo[i].fold, NULL, 0);
        }
        h->memo[i].folds = rc == 0 ? 1 : -1;
        free(npus);
        free(world);
        free(rep);
    }
    return h->memo[i].folds > 0 ? &h->memo[i].fold : NULL;
}

/* Appends sub for the ranks of grp, its SEND, RECV and SCRATCH mapped as
 * given; its roots wait for after, its sinks go to last. Folded, only
 * node 0's ranks are appended. */
static int put(hier_t *h, const hccn_sched_t *sub, const int *grp,
               hccn_bufmap_t send, hccn_bufmap_t recv, uint64_t scratch,
               const hccn_frontier_t *after, hccn_frontier_t *last,
               int phase)
{
    hccn_compose_t how = {.ranks = grp, .after = after, .phase = phase,
                          .map = {send, recv,
                                  at(HCCN_BUF_SCRATCH, scratch, 0)},
                          .keep = h->keep};
    if (h->keep != NULL && sub != NULL && sub->nranks > 1 &&
        !h->keep[grp[1]]) {
        how.fold = level1_fold(h, sub);
        if (how.fold == NULL) {
            h->unfoldable = 1;
            h->s->failed = 1;
            return -1;
        }
    }
    return hccn_sched_compose(h->s, sub, &how, last);
}

/* The node groups a phase of level 0 is appended on: all, or node 0's
 * alone when folded. */
static int node_puts(const hier_t *h)
{
    return h->keep != NULL ? 1 : h->N;
}

/* tmp = a | b. */
static const hccn_frontier_t *both(hier_t *h, const hccn_frontier_t *a,
                                   const hccn_frontier_t *b)
{
    if (hccn_frontier_copy(h->tmp, a) != 0 ||
        hccn_frontier_merge(h->tmp, b) != 0)
        h->s->failed = 1;
    return h->tmp;
}

/* SCRATCH bytes a flat schedule needs (0 if it cannot be built). */
static uint64_t probe(hier_t *h, const char *algo, hccn_coll_t coll,
                      int n, uint64_t count)
{
    const hccn_sched_t *s = flat(h, algo, coll, n, count, 0);
    return s != NULL ? s->scratch_bytes : 0;
}

/* -------------------------------------------------------- allreduce --- */

/* The chunk in elements: a multiple of L, at least L. */
static uint64_t chunk_elems(const hier_t *h)
{
    uint64_t c = hccn_hier_chunk(h->a, HIER_DEFAULT_CHUNK) / h->a->esize;
    c -= c % (uint64_t)h->L;
    return c < (uint64_t)h->L ? (uint64_t)h->L : c;
}

/* P1 and P2 of the chunk at element off with q elements per block; P2's
 * sinks are kept in f2 for the chunk's P3. */
static void ar_chunk_up(hier_t *h, uint64_t off, uint64_t q, uint64_t s2,
                        hccn_frontier_t *f2)
{
    const size_t e = h->a->esize;
    uint64_t o = off * e, b = q * e;
    for (int n = 0; n < node_puts(h); n++)
        put(h, flat(h, h->v->l0, HCCN_COLL_REDUCE_SCATTER, h->L, q, 0),
            node_group(h, n), at(HCCN_BUF_SEND, o, 0),
            at(HCCN_BUF_RECV, o, b), 0, h->intra, h->intra, PHASE_1);
    const hccn_frontier_t *after = both(h, h->intra, h->inter);
    for (int l = 0; l < h->L; l++)
        put(h, flat(h, h->v->l1, HCCN_COLL_ALLREDUCE, h->N, q, 0),
            local_group(h, l), at(HCCN_BUF_RECV, o + l * b, 0),
            at(HCCN_BUF_RECV, o + l * b, 0), s2, after, h->inter, PHASE_2);
    if (hccn_frontier_copy(f2, h->inter) != 0)
        h->s->failed = 1;
}

static void ar_chunk_down(hier_t *h, uint64_t off, uint64_t q,
                          const hccn_frontier_t *f2)
{
    const size_t e = h->a->esize;
    uint64_t o = off * e, b = q * e;
    const hccn_frontier_t *after = both(h, h->intra, f2);
    for (int n = 0; n < node_puts(h); n++)
        put(h, flat(h, h->v->l0, HCCN_COLL_ALLGATHER, h->L, q, 0),
            node_group(h, n), at(HCCN_BUF_RECV, o, b),
            at(HCCN_BUF_RECV, o, 0), 0, after, h->intra, PHASE_3);
}

/* The last count % L elements: intra allreduce, then inter allreduce (in
 * every level-1 group, so every rank ends with the sum). */
static void ar_tail(hier_t *h, uint64_t off, uint64_t t, uint64_t s2)
{
    uint64_t o = off * h->a->esize;
    for (int n = 0; n < node_puts(h); n++)
        put(h, flat(h, h->v->l0, HCCN_COLL_ALLREDUCE, h->L, t, 0),
            node_group(h, n), at(HCCN_BUF_SEND, o, 0),
            at(HCCN_BUF_RECV, o, 0), 0, h->intra, h->intra, PHASE_TAIL);
    const hccn_frontier_t *after = both(h, h->intra, h->inter);
    for (int l = 0; l < h->L; l++)
        put(h, flat(h, h->v->l1, HCCN_COLL_ALLREDUCE, h->N, t, 0),
            local_group(h, l), at(HCCN_BUF_RECV, o, 0),
            at(HCCN_BUF_RECV, o, 0), s2, after, h->inter, PHASE_TAIL);
}

/* Steps and dependencies of sub's rank i, or 0 when there is none. */
static void sub_size(const hccn_sched_t *sub, int i, uint64_t *steps,
                     uint64_t *deps)
{
    if (sub != NULL && i < sub->nranks) {
        *steps += sub->ranks[i].nsteps;
        *deps += sub->ranks[i].ndeps + sub->ranks[i].nsteps;
    }
}

/* Room for K chunks of q elements per block and the tail on every rank.
 * Each phase's first steps also wait for the last phase's: the room
 * allows one dependency more a step, an estimate (what goes beyond it is
 * grown into, as without room). The flat schedules stay in the memo (at
 * most five of its entries) while they are read. */
static void reserve_chunks(hier_t *h, size_t K, uint64_t q, uint64_t tail)
{
    const char *l0 = h->v->l0, *l1 = h->v->l1;
    const hccn_sched_t *p1 = flat(h, l0, HCCN_COLL_REDUCE_SCATTER, h->L, q, 0);
    const hccn_sched_t *p2 = flat(h, l1, HCCN_COLL_ALLREDUCE, h->N, q, 0);
    const hccn_sched_t *p3 = flat(h, l0, HCCN_COLL_ALLGATHER, h->L, q, 0);
    const hccn_sched_t *t1 = tail > 0 ? flat(h, l0, HCCN_COLL_ALLREDUCE,
                                             h->L, tail, 0) : NULL;
    const hccn_sched_t *t2 = tail > 0 ? flat(h, l1, HCCN_COLL_ALLREDUCE,
                                             h->N, tail, 0) : NULL;
    int n = h->a->nranks;
    uint32_t *room = calloc(2 * (size_t)n, sizeof(*room));
    if (room == NULL)
        return;                 /* only room: the build goes on without */
    uint64_t xf = 0;
    const hccn_sched_t *subs[] = {p1, p2, p3};
    for (int k = 0; k < 3; k++)
        xf += subs[k] != NULL ? (uint64_t)subs[k]->nxfers *
                                    (uint64_t)(k == 1 ? h->L : h->N) : 0;
    xf = xf * K + (t1 ? (uint64_t)t1->nxfers * h->N : 0) +
         (t2 ? (uint64_t)t2->nxfers * h->L : 0);
    int ok = xf < UINT32_MAX;
    for (int nd = 0; nd < h->N; nd++)
        for (int l = 0; l < h->L; l++) {
            uint64_t st = 0, dp = 0, st1 = 0, dp1 = 0;
            sub_size(p1, l, &st, &dp);
            sub_size(p2, nd, &st, &dp);
            sub_size(p3, l, &st, &dp);
            sub_size(t1, l, &st1, &dp1);
            sub_size(t2, nd, &st1, &dp1);
            st = st * K + st1;
            dp = dp * K + dp1;
            int r = h->at[nd * h->L + l];
            ok &= st < UINT32_MAX && dp < UINT32_MAX;
            room[r] = (uint32_t)st;
            room[n + r] = (uint32_t)dp;
        }
    if (ok)
        hccn_sched_reserve(h->s, room, room + n, (uint32_t)xf);
    free(room);
}

static int build_allreduce(hier_t *h)
{
    const uint64_t L = (uint64_t)h->L, ce = chunk_elems(h);
    uint64_t main = h->a->count / L * L, tail = h->a->count - main;
    size_t K = (size_t)((main + ce - 1) / ce);
    uint64_t q0 = (main < ce ? main : ce) / L;
    /* Level-1 phases overlap level-0 ones: their SCRATCH comes after the
     * largest level-0 need. */
    uint64_t s2 = probe(h, h->v->l0, HCCN_COLL_REDUCE_SCATTER, h->L, q0);
    uint64_t s1t = probe(h, h->v->l0, HCCN_COLL_ALLREDUCE, h->L, tail);
    s2 = s1t > s2 ? s1t : s2;
    hccn_frontier_t **f2 = calloc(K + 1, sizeof(*f2));
    if (f2 == NULL)
        return -1;
    if (h->keep == NULL)
        reserve_chunks(h, K, q0, tail);
    for (size_t k = 0; k < K && !h->s->failed; k++) {
        uint64_t off = k * ce, len = main - off < ce ? main - off : ce;
        f2[k] = hccn_frontier_new(h->a->nranks);
        if (f2[k] == NULL)
            h->s->failed = 1;
        else
            ar_chunk_up(h, off, len / L, s2, f2[k]);
    }
    for (size_t k = 0; k < K && !h->s->failed; k++) {
        uint64_t off = k * ce, len = main - off < ce ? main - off : ce;
        ar_chunk_down(h, off, len / L, f2[k]);
    }
    if (tail > 0 && !h->s->failed)
        ar_tail(h, main, tail, s2);
    for (size_t k = 0; k < K; k++)
        hccn_frontier_free(f2[k]);
    free(f2);
    return 0;
}

/* ------------------------------------------ reduce_scatter, allgather --- */

/* Reduce-scatter inside nodes first, then across nodes on 1/L of the
 * data; allgather across nodes first on the rank's own block, then inside
 * nodes (hier_levels.h): each NIC carries (N-1)/N of its rank's share. */
static int build_rs_ag(hier_t *h)
{
    int rs = h->a->coll == HCCN_COLL_REDUCE_SCATTER;
    hccn_hier_levels_t lv = {.k = 2, .n = {h->L, h->N},
                             .algo = {h->v->l0, h->v->l1},
                             .phase = {rs ? PHASE_1 : PHASE_2,
                                       rs ? PHASE_2 : PHASE_1}};
    return hccn_hier_levels_rs_ag(h->s, h->a, &lv);
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
    put(h, flat(h, h->v->l1, HCCN_COLL_BROADCAST, h->N, t, n0),
        local_group(h, l0), at(HCCN_BUF_SEND, o, 0), at(HCCN_BUF_RECV, o, 0),
        0, both(h, h->intra, h->inter), h->inter, PHASE_TAIL);
    const hccn_frontier_t *after = both(h, h->intra, h->inter);
    for (int n = 0; n < h->N; n++)
        put(h, flat(h, h->v->l0, HCCN_COLL_BROADCAST, h->L, t, l0),
            node_group(h, n), at(HCCN_BUF_RECV, o, 0),
            at(HCCN_BUF_RECV, o, 0), 0, after, h->intra, PHASE_TAIL);
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
            at(HCCN_BUF_RECV, 0, b), 0, NULL, h->intra, PHASE_1);
        for (int l = 0; l < h->L; l++)
            put(h, flat(h, h->v->l1, HCCN_COLL_BROADCAST, h->N, q, n0),
                local_group(h, l), at(HCCN_BUF_RECV, l * b, 0),
                at(HCCN_BUF_RECV, l * b, 0), 0, h->intra, h->inter,
                PHASE_2);
        for (int n = 0; n < h->N; n++)
            put(h, flat(h, h->v->l0, HCCN_COLL_ALLGATHER, h->L, q, 0),
                node_group(h, n), at(HCCN_BUF_RECV, 0, b),
                at(HCCN_BUF_RECV, 0, 0), 0, h->inter, h->intra, PHASE_3);
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
        put(h, flat(h, h->v->l0, HCCN_COLL_REDUCE, h->L, t, l0),
            node_group(h, n), at(HCCN_BUF_SEND, o, 0),
            at(HCCN_BUF_SCRATCH, x, 0), x + tb, both(h, h->intra, h->inter),
            h->intra, PHASE_TAIL);
    put(h, flat(h, h->v->l1, HCCN_COLL_REDUCE, h->N, t, n0),
        local_group(h, l0), at(HCCN_BUF_SCRATCH, x, 0),
        at(HCCN_BUF_RECV, o, 0), x + tb, h->intra, h->inter, PHASE_TAIL);
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
            put(h, flat(h, h->v->l0, HCCN_COLL_REDUCE_SCATTER, h->L, q, 0),
                node_group(h, n), at(HCCN_BUF_SEND, 0, 0),
                at(HCCN_BUF_SCRATCH, 0, 0), b, NULL, h->intra, PHASE_1);
        for (int l = 0; l < h->L; l++)
            put(h, flat(h, h->v->l1, HCCN_COLL_REDUCE, h->N, q, n0),
                local_group(h, l), at(HCCN_BUF_SCRATCH, 0, 0),
                at(HCCN_BUF_SCRATCH, 0, 0), b, h->intra, h->inter, PHASE_2);
        put(h, flat(h, "mesh", HCCN_COLL_GATHER, h->L, q, l0),
            node_group(h, n0), at(HCCN_BUF_SCRATCH, 0, 0),
            at(HCCN_BUF_RECV, 0, 0), b, h->inter, h->intra, PHASE_3);
    }
    if (h->a->count % (uint64_t)h->L)
        reduce_tail(h, q * (uint64_t)h->L, h->a->count % (uint64_t)h->L,
                    h->s->scratch_bytes);
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
    int *order = malloc((size_t)p * sizeof(int));
    hccn_sched_t *s = hccn_sched_new(p, "hier(ring)");
    if (order == NULL || s == NULL) {
        free(order);
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
    free(order);
    return hccn_hier_finish(s, rc);
}

/* ------------------------------------------------------------- entry --- */

/* A folded build (coll.h, fold_rep) keeps node 0's ranks, if they are the
 * ranks 0 .. fold_nrep-1 and each rank's copy is the rank of node 0 with
 * its local index; else the build is whole. */
static int fold_init(hier_t *h)
{
    const hccn_coll_args_t *a = h->a;
    const hccn_hier_view_t *v = a->view;
    if (a->nranks <= 0)
        return 0;
    for (int r = 0; r < a->nranks; r++)
        if ((v->node[r] == 0) != (r < a->fold_nrep) ||
            a->fold_rep[r] != h->at[v->local[r]])
            return 0;
    h->keep = malloc((size_t)a->nranks);
    if (h->keep == NULL)
        return -1;
    for (int r = 0; r < a->nranks; r++)
        h->keep[r] = v->node[r] == 0;
    h->s->folded = 1;
    return 0;
}

static hccn_sched_t *build(const hccn_coll_args_t *a, const variant_t *v,
                           unsigned mine)
{
    int L = 0;
    if (!hccn_hier_args_ok(a, mine) ||
        a->count > (UINT64_MAX >> 4) / a->esize / (uint64_t)a->nranks)
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
    if (rc == 0 && a->coll == HCCN_COLL_ALLREDUCE && a->fold_rep != NULL)
        rc = fold_init(&h);
    if (rc == 0 && a->coll == HCCN_COLL_ALLREDUCE)
        rc = build_allreduce(&h);
    else if (rc == 0 && (a->coll == HCCN_COLL_REDUCE_SCATTER ||
                         a->coll == HCCN_COLL_ALLGATHER))
        rc = build_rs_ag(&h);
    else if (rc == 0 && a->coll == HCCN_COLL_BROADCAST)
        rc = build_broadcast(&h);
    else if (rc == 0)
        rc = build_reduce(&h);
    int again = h.unfoldable;
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
