/*
 * The cost model: the predicted time of one algorithm for one collective,
 * with the communicator's ranks placed on the NPUs of a topology.
 *
 * Two ways to predict (docs/selection.md):
 * - ENGINE: build the algorithm's schedule and time it in a private timing
 *   engine (timing only, no data). Exact by construction: it is the time
 *   the runtime would report for the call (out of place).
 * - MODEL: closed alpha-beta-gamma forms per algorithm, where alpha and the
 *   bandwidth of each communication pattern come from the routes of the
 *   topology, with the flows that share a link dividing its bandwidth.
 *   Cost O(transfers of one round), whatever the message size.
 * AUTO uses the engine for small schedules and the model beyond.
 *
 * Everything here is a pure function of its arguments (no global state),
 * so every rank that asks gets the same answer.
 */
#ifndef HCCN_HIERARCHY_COST_H
#define HCCN_HIERARCHY_COST_H

#include "device_sim/topo.h"
#include "hierarchy/coll.h"

/* "No prediction": the model does not know the algorithm, or the algorithm
 * cannot run these arguments. */
#define HCCN_COST_NONE (-1.0)

typedef enum {
    HCCN_COST_AUTO,
    HCCN_COST_ENGINE,
    HCCN_COST_MODEL,
} hccn_cost_mode_t;

/* AUTO times a schedule in the engine when the communicator has at most
 * this many ranks and (steps x transfers ready at the start) is at most
 * HCCN_COST_ENGINE_MAX_WORK. */
#define HCCN_COST_ENGINE_MAX_RANKS 64
#define HCCN_COST_ENGINE_MAX_WORK 1e6

/* Where the communicator's ranks are: rank r is NPU world[r] of topo. */
typedef struct {
    const hccn_sim_topo_t *topo;
    const int *world;
} hccn_cost_place_t;

/* The figures of the two levels, for reports (docs/selection.md): level 0
 * is the route between two ranks of one node, level 1 the route between
 * same-index ranks of two nodes; alpha is the route's latency (s) and bw
 * its bottleneck bandwidth (bytes/s), the worst over the communicator's
 * consecutive pairs; 0 when the level does not occur. */
typedef struct {
    int nnodes;             /* nodes holding ranks of the communicator */
    int ppn;                /* most ranks on one node */
    double alpha[2], bw[2];
    double reduce_bw;       /* the slowest rank's, bytes/s */
    double mem_bw;          /* the slowest rank's; 0 = copies are free */
} hccn_cost_levels_t;

void hccn_hier_cost_levels(const hccn_cost_place_t *pl, int nranks,
                           hccn_cost_levels_t *lv);

/* Fills view (with node[] and local[] of nranks entries each, owned by the
 * caller) as the runtime does: nodes numbered densely in order of first
 * appearance, local = index among the communicator's ranks on that node.
 * Returns 0, or -1 on no memory. */
int hccn_hier_cost_view(const hccn_cost_place_t *pl, int nranks, int *node,
                        int *local, hccn_hier_view_t *view);

/* Adds the pods to a view filled by hccn_hier_cost_view: pod (nranks
 * entries, owned by the caller) numbers the leaf switches of the ranks'
 * nodes densely in order of first appearance, and view->pod points to it;
 * view->pod stays NULL (npods 0) when a node has no leaf switch. Returns 0,
 * or -1 on no memory. */
int hccn_hier_cost_pods(const hccn_cost_place_t *pl, int *pod,
                        hccn_hier_view_t *view);

/* 1 if the model has closed forms for the algorithm named name. */
int hccn_hier_cost_known(const char *name);

/* Predicted seconds of algo on a (a->view must describe the placement when
 * the algorithm is hierarchical; NULL is fine for flat ones), or
 * HCCN_COST_NONE. *engine_used, if not NULL, says whether the engine gave
 * the figure. Thread-safe; may allocate and time a whole schedule. */
double hccn_hier_cost(const hccn_algo_t *algo, const hccn_coll_args_t *a,
                      const hccn_cost_place_t *pl, hccn_cost_mode_t mode,
                      int *engine_used);

/* Seconds the timing engine gives schedule s (all ranks starting at 0,
 * copies charged as out of place), or HCCN_COST_NONE on no memory. */
double hccn_hier_cost_engine(const hccn_sched_t *s,
                             const hccn_cost_place_t *pl);

#endif /* HCCN_HIERARCHY_COST_H */
