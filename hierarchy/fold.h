/*
 * Whether a schedule folds onto node 0 (docs/performance.md, Folding):
 * whether every rank's part is that of its copy in node 0 up to the order
 * of its steps, so that on a topology whose nodes are copies of node 0
 * every node runs as node 0 does. Used by the timing-only runs
 * (runtime/predict.c, hierarchy/algo_hier.c). Not installed.
 */
#ifndef HCCN_HIERARCHY_FOLD_H
#define HCCN_HIERARCHY_FOLD_H

#include <stddef.h>
#include <stdint.h>

#include "device_sim/engine.h"
#include "device_sim/topo.h"
#include "hierarchy/sched.h"

/* A transfer of a folded run is keyed by its SEND's copy in node 0:
 * (rank << 32 | step). */
static inline uint64_t hccn_sched_fold_key(int rank, uint32_t step)
{
    return (uint64_t)rank << 32 | step;
}

/* What a folded run posts its RECVs with. */
typedef struct {
    int nrep;                   /* recv_key's entries: ranks 0 .. nrep-1 */
    uint64_t **recv_key;        /* per rank that is its own copy (NULL for
                                   the others) and RECV step: the key of
                                   its transfer's SEND */
} hccn_sched_fold_t;

/* Makes rank r's engine tasks for the call (as the run would post them). */
typedef void hccn_sched_tasks_fn(void *arg, int r, hccn_sim_task_t *out);

/* A hccn_sched_tasks_fn's arg for tasks made straight from the steps
 * (hccn_sched_step_task): rank r on npus[r], peers named through world. */
typedef struct {
    const hccn_sched_t *s;
    const hccn_sim_npu_t *npus;
    const int *world;
} hccn_sched_npus_t;

/* hccn_sched_tasks_fn over a hccn_sched_npus_t. */
void hccn_sched_npu_tasks(void *arg, int r, hccn_sim_task_t *out);

/* Checks s against rep (per rank, its copy: a rank that is its own copy
 * is played, the others are copies of one; node 0's ranks, or the first
 * node of every leaf's) and npus (whose node says which ranks share one). s folds if, for every rank r with copy r0, there is a
 * one-to-one map m of r's steps onto r0's such that
 *   - step k and m(k) make the same task (kind, bytes, cost, and for a
 *     transfer the part of its route it crosses, via), a transfer's
 *     peer being a copy of the other's, as far from r as the other is
 *     from r0 (topo: hccn_sim_topo_apart; NULL: in r's node iff the other
 *     is in r0's);
 *   - m maps k's dependencies onto m(k)'s;
 *   - m keeps the order of the steps that occupy the NPU (cost > 0): the
 *     engine runs those first come, first served, ties by step index;
 *   - with host_order, m keeps the order of the SENDs, and that of the
 *     RECVs: each host takes its messages in turn (the software model's
 *     time per message, device_sim/software.h), a send when it is ready,
 *     a receive when it arrives, ties by step index;
 *   - every transfer joins the copies of the steps its copy joins: the
 *     SEND of step s of rank a pairs with the RECV of step t of rank b only
 *     if the SEND of m(s) of a's copy pairs with the RECV of m(t) of b's.
 * Then returns 0 and fills *f (free with hccn_sched_fold_free). Returns 1 if
 * s does not fold (why says where), -1 on no memory. */
int hccn_sched_fold_check(const hccn_sched_t *s, const hccn_sim_npu_t *npus,
                       const hccn_sim_topo_t *topo,
                       const int *rep, int host_order,
                       hccn_sched_tasks_fn *tasks, void *arg,
                       hccn_sched_fold_t *f, char *why, size_t len);

void hccn_sched_fold_free(hccn_sched_fold_t *f);

#endif /* HCCN_HIERARCHY_FOLD_H */
