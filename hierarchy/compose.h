/*
 * Schedule composition: a bigger schedule built from sub-schedules that
 * flat algorithms built for subgroups of its ranks (the ranks of one node,
 * the ranks with one local index across nodes). This is how hierarchical
 * algorithms are made from flat ones.
 *
 * A sub-schedule is appended with a map: sub rank i is rank ranks[i] of the
 * bigger schedule; each of its buffers (SEND, RECV, SCRATCH) lives in some
 * buffer of the bigger one at base + i * stride (so a sub-collective can
 * work on a slice, possibly of SCRATCH, and a rank's own block can sit at
 * its own offset); its transfers get fresh xfer ids. Phases are ordered by
 * frontiers: per rank, the set of step indices a later phase must wait for.
 * Every root step (one without dependencies) of the sub-schedule on rank r
 * additionally depends on the steps of r in the `after` frontier, and the
 * call returns, per rank, the steps nothing else of the sub-schedule waits
 * for (its sinks), which together depend on every appended step of r.
 *
 * A COPY whose source and destination map to the same bytes (a
 * sub-collective run in place on a slice) is dropped; steps that depended
 * on it depend on its dependencies instead.
 *
 * Where many root steps of a rank would each wait for many steps of
 * `after` (the sends of a mesh phase after the last phase's sinks), one
 * *join* step is appended first: a COPY of zero bytes from SEND to RECV at
 * offset 0 that waits for r's `after` steps, and the roots wait for it
 * alone (n + m dependency entries instead of n x m). It costs no time in
 * the engine and moves nothing, so every simulated time is the same
 * (tests/unit/test_compose_join.c).
 */
#ifndef HCCN_HIERARCHY_COMPOSE_H
#define HCCN_HIERARCHY_COMPOSE_H

#include <stdint.h>

#include "hierarchy/fold.h"
#include "hierarchy/sched.h"

/* A set of step indices of one rank. */
typedef struct {
    uint32_t *idx;
    uint32_t n, cap;
} hccn_stepset_t;

/* Per rank of a schedule, a set of its steps. */
typedef struct {
    int nranks;
    hccn_stepset_t *rank;
} hccn_frontier_t;

/* An empty frontier for nranks ranks; NULL on no memory. */
hccn_frontier_t *hccn_frontier_new(int nranks);
void hccn_frontier_free(hccn_frontier_t *f);

/* dst = src, rank by rank (same nranks). 0, or -1 on no memory. */
int hccn_frontier_copy(hccn_frontier_t *dst, const hccn_frontier_t *src);

/* dst |= src, rank by rank (same nranks). 0, or -1 on no memory. */
int hccn_frontier_merge(hccn_frontier_t *dst, const hccn_frontier_t *src);

/* dst |= src on the n ranks listed only. 0, or -1 on no memory. */
int hccn_frontier_merge_ranks(hccn_frontier_t *dst, const hccn_frontier_t *src,
                              const int *ranks, int n);

/* Where a sub-schedule's buffer lives in the bigger schedule: sub rank i's
 * byte x is byte base + i * stride + x of buf. */
typedef struct {
    hccn_buf_t buf;
    uint64_t base, stride;
} hccn_bufmap_t;

typedef struct {
    const int *ranks;         /* sub rank -> rank, sub->nranks entries */
    hccn_bufmap_t map[3];     /* for the sub's SEND, RECV, SCRATCH */
    const hccn_frontier_t *after; /* NULL: root steps get no extra deps */
    int phase;                /* phase of the appended steps; 0 keeps them */
    /* Folded builds (coll.h, fold_rep): NULL, or per rank of dst whether
     * its steps are kept; the others' are left out. A transfer into a kept
     * rank from one left out is then named by its SEND's copy: fold says,
     * for the sub's ranks 0 .. fold->nrep-1, each RECV's SEND copy, which
     * must be a step of the receiving sub rank itself. */
    const unsigned char *keep;
    const hccn_sched_fold_t *fold;
} hccn_compose_t;

/* An identity map for sub's buffers: SEND->SEND, RECV->RECV,
 * SCRATCH->SCRATCH, all at offset 0; ranks, after and phase unset. */
hccn_compose_t hccn_compose_identity(void);

/* Appends sub to dst as how says and grows dst->scratch_bytes to cover
 * every SCRATCH byte the appended steps touch. If last is not NULL (it may
 * be how->after), last's entry of each rank of the sub-schedule becomes the
 * sinks of its appended steps, or how->after's entry when nothing was
 * appended on it; other ranks' entries are left alone. Returns 0, or -1
 * with dst->failed set (on no memory, a failed sub, or a bad map). */
int hccn_sched_compose(hccn_sched_t *dst, const hccn_sched_t *sub,
                       const hccn_compose_t *how, hccn_frontier_t *last);

#endif /* HCCN_HIERARCHY_COMPOSE_H */
