/*
 * "torus2d": the ranks as a grid of Y rows of X (X the largest divisor of
 * p not above sqrt(p), at least 2), a ring along every row and a ring
 * along every column, composed as two levels (levels.h): rows are level 0,
 * columns level 1. With rank r at column r % X of row r / X:
 *
 * allreduce       per chunk (a multiple of X elements, 4 MiB by default):
 *                 ring reduce-scatter along the row, ring allreduce of the
 *                 rank's 1/X down its column, ring allgather along the row
 * reduce_scatter  along rows on all the data, then down columns on 1/X
 * allgather       down columns on the rank's block, then along rows
 *
 * A flat ring takes 2(p-1) steps of latency; this one 2(X-1) + 2(Y-1), for
 * the same bytes on each rank, so it wins mid-sized messages on 2D tori
 * and wherever every pair is one hop apart. Not applicable (NULL) for p
 * prime or below 4. Its closed form is hier_rr's on the grid as a view
 * (rows as nodes): the same composition.
 *
 * This file is the whole algorithm, as docs/algorithms.md ("Adding an
 * algorithm") describes: the builder, the cost form, the chunk.
 */
#include <stdlib.h>

#include "device_sim/alloc.h"
#include "device_sim/fail.h"
#include "hierarchy/algo_util.h"
#include "hierarchy/cost_internal.h"
#include "hierarchy/levels.h"

#define TORUS_CHUNK HCCN_HIER_CHUNK   /* the levels' pipelining chunk */

static const unsigned TORUS_COLLS = 1u << HCCN_COLL_ALLREDUCE |
                                    1u << HCCN_COLL_REDUCE_SCATTER |
                                    1u << HCCN_COLL_ALLGATHER;

/* Row length X for p ranks, or 0 when there is no grid. */
static int row_length(int p)
{
    int x = 0;
    for (int d = 2; (long)d * d <= p; d++)
        if (p % d == 0)
            x = d;
    return x;
}

/* Builds torus2d for args; NULL when it does not apply, on bad arguments
 * or no memory. */
hccn_sched_t *hccn_hier_torus_build(const hccn_coll_args_t *args)
{
    int X = args->nranks >= 4 ? row_length(args->nranks) : 0;
    if (!hccn_hier_args_ok(args, TORUS_COLLS))
        return NULL;
    if (X == 0) {
        hccn_sim_fail(HCCN_ERR_UNSUPPORTED, "%d ranks make no grid of two "
                      "or more rows of two or more", args->nranks);
        return NULL;
    }
    hccn_sched_t *s = hccn_sched_new(args->nranks, "torus2d");
    int *at = hccn_sim_malloc((size_t)args->nranks * sizeof(int));
    if (s == NULL || at == NULL || args->count == 0) {
        hccn_sim_free(at);
        return hccn_hier_finish(s, at == NULL);
    }
    for (int r = 0; r < args->nranks; r++)
        at[r] = r;
    hccn_hier_levels_t spec = {.k = 2, .n = {X, args->nranks / X},
                               .algo = {"ring", "ring"}, .name = "torus2d"};
    hccn_coll_args_t a = *args;
    a.view = NULL;
    a.fold_rep = NULL;
    hccn_hier_comp_t h;
    int rc = hccn_hier_levels_init(&h, s, &a, &spec, at);
    if (rc == 0)
        rc = a.coll == HCCN_COLL_ALLREDUCE
                 ? hccn_hier_levels_allreduce(&h, TORUS_CHUNK)
                 : hccn_hier_levels_rs_ag(&h);
    hccn_hier_levels_fini(&h);
    hccn_sim_free(at);
    return hccn_hier_finish(s, rc);
}

/* The cost form: hier_rr's with the grid's rows as the nodes. */
double hccn_hier_cm_torus(hccn_cm_t *m, const hccn_cm_team_t *t,
                          const hccn_coll_args_t *a)
{
    int p = a->nranks, X = p >= 4 ? row_length(p) : 0;
    if (X == 0 || !(TORUS_COLLS & 1u << a->coll) || t->ngroups != 1)
        return HCCN_COST_NONE;
    int *node = hccn_sim_malloc(2 * (size_t)p * sizeof(int));
    if (node == NULL) {
        m->failed = 1;
        return HCCN_COST_NONE;
    }
    for (int r = 0; r < p; r++) {
        node[r] = r / X;
        node[p + r] = r % X;
    }
    hccn_hier_view_t grid = {p, node, node + p, p / X, NULL, 0, 0, 0};
    hccn_coll_args_t g = *a;
    g.view = &grid;
    double time = hccn_hier_cm_hier_rr(m, t, &g);
    hccn_sim_free(node);
    return time;
}
