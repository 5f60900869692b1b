/*
 * Hierarchical reduce-scatter and allgather over any number of levels,
 * composed from flat schedules (hierarchy/compose.h).
 *
 * A level is a way of grouping the ranks: level 0 the ranks of one node,
 * level 1 the ranks with the same local index on the nodes of one pod (or
 * of the whole cluster), level 2 the same across pods, and so on. With
 * sizes n[0], n[1], ..., n[k-1] the ranks must be numbered level-major:
 * rank = x0 + n0 * (x1 + n1 * (x2 + ...)), xi the rank's place at level i.
 *
 * The phases move every byte over each level once and no more, so the
 * slowest, outermost level carries the least (docs/algorithms.md):
 *
 * reduce_scatter  level 0 first, on all the data: inside each node, every
 *                 rank ends with the node's sum of the blocks whose place
 *                 at level 0 is its own; then level 1 on those (1/n0 of
 *                 the data), and so on outwards; the last level writes
 *                 RECV.
 * allgather       the outermost level first, on the rank's own block: it
 *                 gathers the blocks of its level-(k-1) group; then each
 *                 inner level gathers what the outer ones brought; level
 *                 0 writes RECV.
 *
 * Phase i runs one flat sub-collective of count elements per group and
 * per combination of the places at the levels above i (the blocks of one
 * such combination are contiguous, those of one rank are not); the
 * instances of a phase run concurrently, each phase after the last on
 * every rank. Intermediate results live in SCRATCH, one region a phase.
 */
#ifndef HCCN_HIERARCHY_HIER_LEVELS_H
#define HCCN_HIERARCHY_HIER_LEVELS_H

#include "hierarchy/coll.h"

#define HCCN_HIER_MAX_LEVELS 8

typedef struct {
    int k;                                   /* levels, 1..MAX */
    int n[HCCN_HIER_MAX_LEVELS];             /* group size of each level */
    const char *algo[HCCN_HIER_MAX_LEVELS];  /* its flat algorithm */
    int phase[HCCN_HIER_MAX_LEVELS];         /* phase stamp of each level */
} hccn_hier_levels_t;

/* Appends the reduce-scatter (a->coll REDUCE_SCATTER) or allgather
 * (ALLGATHER) of a->count elements per block to s, whose ranks are
 * numbered level-major as lv says (prod n == s->nranks). Returns 0, or -1
 * with s->failed set (no memory, or a flat algorithm that cannot serve a
 * level). */
int hccn_hier_levels_rs_ag(hccn_sched_t *s, const hccn_coll_args_t *a,
                           const hccn_hier_levels_t *lv);

#endif /* HCCN_HIERARCHY_HIER_LEVELS_H */
