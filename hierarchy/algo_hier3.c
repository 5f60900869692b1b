/*
 * "hier3", "hier3_hd": three-level hierarchical collectives for networks
 * with a leaf/spine tier (HCCL's level0/level1/level2). A pod is the nodes
 * under one leaf switch (args->view->pod). Level 0 is the ranks of one
 * node (mesh), level 1 the ranks with the same local index on the nodes of
 * one pod (ring, through the leaf), level 2 the ranks with the same local
 * index and the same position in their pod across pods (through the
 * spine): ring for hier3, halving-doubling for hier3_hd. With P pods of M
 * nodes of L ranks:
 *
 * allreduce       per chunk of the message (a multiple of L * M elements,
 *                 args->chunk_bytes, default 4 MiB), q = chunk / L:
 *                 P1 intra-node reduce-scatter into L blocks of q ->
 *                 P2 intra-pod reduce-scatter of each block into M pieces
 *                 of q / M -> P3 inter-pod allreduce of each piece ->
 *                 P4 intra-pod allgather -> P5 intra-node allgather. Each
 *                 level runs its phases one at a time (level 0: every P1,
 *                 then the P5s; level 1: every P2, then the P4s; level 2:
 *                 the P3s), in chunk order, so the levels overlap: chunk
 *                 c+1 climbs while chunk c crosses the spine. The count %
 *                 (L * M) elements left over go last: intra-node, intra-
 *                 pod, then inter-pod allreduce.
 * reduce_scatter  intra-node reduce-scatter of all the data -> intra-pod
 *                 reduce-scatter of the rank's 1/L -> inter-pod reduce-
 *                 scatter of its 1/(L M) into RECV (levels.h)
 * allgather       the reverse: inter-pod allgather of the rank's own
 *                 block, intra-pod allgather of those, intra-node
 *                 allgather into RECV
 *
 * A trivial level degrades to two (never a rejection): one pod, one node
 * per pod, pods of different node counts, no pods in the view, or
 * reduce_scatter/allgather on ranks that are not pod-, node-major give
 * hier's schedule (mesh inside nodes, ring across); one rank per node
 * gives hier's schedule with pods in the role of nodes. Not applicable
 * (NULL) where hier is not. docs/algorithms.md gives bytes and times.
 */
#include <stdlib.h>

#include "device_sim/alloc.h"
#include "device_sim/fail.h"
#include "hierarchy/algo_util.h"
#include "hierarchy/levels.h"

hccn_sched_t *hccn_hier_hier_build(const hccn_coll_args_t *args);

typedef struct {
    const char *sched;        /* schedule name */
    const char *l[3];         /* flat algorithms of levels 0, 1 and 2 */
} variant3_t;

static const variant3_t HIER3 = {"hier3(mesh,ring,ring)",
                                 {"mesh", "ring", "ring"}};
static const variant3_t HIER3_HD = {"hier3(mesh,ring,hd)",
                                    {"mesh", "ring", "hd"}};

/* ------------------------------------------------------------ shape --- */

/* The shape of a pod-structured view: P pods of M nodes of L ranks, and
 * pos[n], node n's position among its pod's nodes (by node index). */
typedef struct {
    int P, M, L;
    int *pos;
} shape3_t;

/* Counts ranks per node and nodes per pod. Returns 1 for an even shape
 * (every node L ranks, every pod M nodes), 0 otherwise or when the view
 * has no usable pods; -1 on no memory. */
static int shape3(const hccn_hier_view_t *v, shape3_t *sh)
{
    int N = v->nnodes, rc = 1;
    int *size = hccn_sim_calloc((size_t)N, sizeof(int));
    int *npod = hccn_sim_calloc((size_t)N, sizeof(int));
    int *pnodes = hccn_sim_calloc((size_t)(v->npods > 0 ? v->npods : 1), sizeof(int));
    sh->pos = hccn_sim_malloc((size_t)N * sizeof(int));
    if (!size || !npod || !pnodes || !sh->pos) {
        rc = -1;
        goto out;
    }
    for (int n = 0; n < N; n++)
        npod[n] = -1;
    if (v->pod == NULL || v->npods < 1)
        rc = 0;
    for (int r = 0; r < v->nranks && rc > 0; r++) {
        int n = v->node[r], p = v->pod[r];
        if (n < 0 || n >= N || v->local[r] < 0 || p < 0 || p >= v->npods ||
            (npod[n] >= 0 && npod[n] != p)) {
            rc = 0;
        } else {
            size[n]++;
            npod[n] = p;
        }
    }
    for (int n = 0; n < N && rc > 0; n++) {
        rc = size[n] == size[0] && size[0] > 0;
        if (rc > 0)
            sh->pos[n] = pnodes[npod[n]]++;
    }
    for (int r = 0; r < v->nranks && rc > 0; r++)
        rc = v->local[r] < size[0];
    for (int p = 0; p < v->npods && rc > 0; p++)
        rc = pnodes[p] == pnodes[0];
    sh->P = v->npods;
    sh->M = rc > 0 ? pnodes[0] : 0;
    sh->L = rc > 0 ? size[0] : 0;
out:
    hccn_sim_free(size);
    hccn_sim_free(npod);
    hccn_sim_free(pnodes);
    return rc;
}

/* 1 if rank r is (pod * M + position) * L + local for every r. */
static int pod_major(const hccn_hier_view_t *v, const shape3_t *sh)
{
    for (int r = 0; r < v->nranks; r++)
        if (r != (v->pod[r] * sh->M + sh->pos[v->node[r]]) * sh->L +
                     v->local[r])
            return 0;
    return 1;
}

/* hier on the view with pods as nodes: node = pod, local = the rank's
 * position among the pod's ranks (one rank per node). */
static hccn_sched_t *pods_as_nodes(const hccn_coll_args_t *a)
{
    const hccn_hier_view_t *v = a->view;
    int *mem = hccn_sim_calloc(2 * (size_t)a->nranks + (size_t)v->npods, sizeof(int));
    if (mem == NULL)
        return NULL;
    int *local = mem + a->nranks, *seen = mem + 2 * a->nranks;
    for (int r = 0; r < a->nranks; r++) {
        mem[r] = v->pod[r];
        local[r] = seen[v->pod[r]]++;
    }
    hccn_hier_view_t pv = {a->nranks, mem, local, v->npods, NULL, 0, 0,
                          v->slots};
    hccn_coll_args_t sa = *a;
    sa.view = &pv;
    sa.fold_rep = NULL;         /* pods are not nodes: built whole */
    hccn_sched_t *s = hccn_hier_hier_build(&sa);
    hccn_sim_free(mem);
    return s;
}

/* ------------------------------------------------------------- entry --- */

static const unsigned AR_RS_AG = 1u << HCCN_COLL_ALLREDUCE |
                                 1u << HCCN_COLL_REDUCE_SCATTER |
                                 1u << HCCN_COLL_ALLGATHER;

/* The rank at each place (pod, position, local), as levels.h wants it;
 * NULL on no memory or when two ranks share a place. */
static int *places(const hccn_coll_args_t *a, const shape3_t *sh)
{
    const hccn_hier_view_t *vw = a->view;
    int *at = hccn_sim_malloc((size_t)a->nranks * sizeof(int));
    for (int r = 0; at != NULL && r < a->nranks; r++)
        at[r] = -1;
    for (int r = 0; at != NULL && r < a->nranks; r++)
        at[(vw->pod[r] * sh->M + sh->pos[vw->node[r]]) * sh->L +
           vw->local[r]] = r;
    for (int r = 0; at != NULL && r < a->nranks; r++)
        if (at[r] < 0) {
            hccn_sim_free(at);   /* two ranks in one place: not a placement */
            hccn_sim_fail(HCCN_ERR_UNSUPPORTED, "two ranks share a place "
                          "(pod, node, local): no rank is at place %d", r);
            return NULL;
        }
    return at;
}

static hccn_sched_t *build3(const hccn_coll_args_t *a, const variant3_t *v,
                            const shape3_t *sh)
{
    hccn_sched_t *s = hccn_sched_new(a->nranks, v->sched);
    if (s == NULL || a->count == 0)
        return s;
    hccn_hier_levels_t spec = {.k = 3, .n = {sh->L, sh->M, sh->P},
                               .algo = {v->l[0], v->l[1], v->l[2]},
                               .name = v->sched};
    hccn_hier_comp_t h;
    int *at = places(a, sh);
    int rc = at != NULL ? hccn_hier_levels_init(&h, s, a, &spec, at) : -1;
    if (rc == 0 && a->coll == HCCN_COLL_ALLREDUCE)
        rc = hccn_hier_levels_allreduce(&h, HCCN_HIER3_CHUNK);
    else if (rc == 0)
        rc = hccn_hier_levels_rs_ag(&h);
    if (at != NULL)
        hccn_hier_levels_fini(&h);
    hccn_sim_free(at);
    return hccn_hier_finish(s, rc);
}

/* Where three levels do not apply: hier with levels 0 and 1. */
static hccn_sched_t *two_levels(const hccn_coll_args_t *a,
                                const variant3_t *v)
{
    const hccn_algo_t *row = hccn_hier_levels_row(v->l[0], v->l[1], NULL);
    if (row == NULL)
        hccn_sim_fail(HCCN_ERR_INTERNAL, "no two-level row runs %s inside "
                      "nodes and %s across", v->l[0], v->l[1]);
    return row != NULL ? hccn_hier_build(row, a) : NULL;
}

static hccn_sched_t *build(const hccn_coll_args_t *a, const variant3_t *v)
{
    const hccn_hier_view_t *vw = a->view;
    if (!hccn_hier_args_ok(a, AR_RS_AG) || !hccn_hier_count_fits(a, 4))
        return NULL;
    if (vw == NULL || vw->nranks != a->nranks || vw->nnodes < 1) {
        hccn_sim_fail(HCCN_ERR_UNSUPPORTED, "no view of the nodes of the %d "
                      "ranks", a->nranks);
        return NULL;
    }
    shape3_t sh = {0, 0, 0, NULL};
    int even = shape3(vw, &sh);
    int three = even > 0 && sh.P > 1 && sh.M > 1 && sh.L > 1 &&
                (a->coll == HCCN_COLL_ALLREDUCE || pod_major(vw, &sh));
    hccn_sched_t *s = NULL;
    if (three)
        s = build3(a, v, &sh);
    else if (even > 0 && sh.L == 1 && sh.P > 1 && sh.M > 1)
        s = pods_as_nodes(a);
    else if (even >= 0)
        s = two_levels(a, v);
    hccn_sim_free(sh.pos);
    return s;
}

/* Builds hier3 (mesh inside nodes, ring inside pods, ring across pods)
 * for args; NULL when it does not apply (where hier does not), on bad
 * arguments or no memory. */
hccn_sched_t *hccn_hier_hier3_build(const hccn_coll_args_t *args)
{
    return build(args, &HIER3);
}

/* As hccn_hier_hier3_build with halving-doubling across pods. */
hccn_sched_t *hccn_hier_hier3_hd_build(const hccn_coll_args_t *args)
{
    return build(args, &HIER3_HD);
}

/* As hccn_hier_hier3_build with the three levels of args->levels
 * (algo_levels.c). */
hccn_sched_t *hccn_hier_hier3_build_levels(const hccn_coll_args_t *args)
{
    const hccn_level_choice_t *lv = args->levels;
    if (lv == NULL || lv->k != 3)
        return hccn_hier_no_levels();
    variant3_t v = {lv->name, {lv->algo[0], lv->algo[1], lv->algo[2]}};
    return build(args, &v);
}
