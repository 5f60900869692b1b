/*
 * Timing-only runs: the simulated time of a sequence of collectives on the
 * world communicator of a topology, without data, arenas or NPU threads
 * (docs/performance.md). Every rank makes the calls back to back from
 * clock 0, as blocking calls in one thread per rank would; the schedules,
 * the algorithm choice and the engine tasks are those of the real runtime
 * (runtime/exec.c), so the times are the ones a real-data run reports.
 * Used by hccn-perf --no-data. Not installed.
 */
#ifndef HCCN_RUNTIME_PREDICT_H
#define HCCN_RUNTIME_PREDICT_H

#include <stdint.h>

#include "device_sim/topo.h"
#include "hccn/hccn.h"
#include "hierarchy/coll.h"

/* Timing-only runs and the cost model's predictions (hccn-info) take at
 * most this many NPUs (docs/topology.md, Limits): measured, a 1 GiB
 * allreduce on 131072 ranks takes 24.5 s and 1.0 GB; beyond, time and
 * memory grow faster than the ranks. */
#define HCCN_MAX_TIMING_NPUS 131072

/* One call of the sequence, with the arguments every rank passes. */
typedef struct {
    hccn_coll_t coll;
    uint64_t count;         /* elements, as the call's count argument */
    hccn_dtype_t dtype;
    int root;               /* rooted collectives */
    int inplace;            /* the call uses NCCL's in-place form */
    int compress;           /* HCCN_COMPRESS_*: bytes on the wire halve */
    const char *spec;       /* algorithm override (HCCN_ALGO grammar), or
                               NULL / "" for the cost model's choice */
} hccn_rt_pcall_t;

/* Times calls[0..ncalls) in order on every NPU of topo, as blocking calls
 * on the world communicator that each rank makes with nothing else in
 * flight (so a repeated call is replayed where a run with data replays
 * it: device_sim/replay.c). ends[i] receives
 * the latest end over the ranks of call i (simulated seconds from 0).
 * The v-collectives (per-rank count arrays) are not taken:
 * HCCN_ERR_UNSUPPORTED. Returns HCCN_OK, or an error (a spec that does
 * not apply, no memory)
 * with hccn_last_error() saying which call and why. */
hccn_status_t hccn_rt_predict(const hccn_sim_topo_t *topo,
                              const hccn_rt_pcall_t *calls, int ncalls,
                              double *ends);

/* Folding (docs/performance.md): where every node of topo is a copy of
 * node 0 (hccn_sim_topo_fold) and every call's schedule gives each rank
 * the part of its copy in node 0, with each transfer between copies of
 * the same steps, every node runs as node 0 does; then only node 0's
 * ranks are simulated, and the times are the same. Where that does not
 * hold, the same with every node a copy of its leaf's first node
 * (hccn_sim_topo_fold_leaves): only those nodes' ranks are simulated. A
 * run folds block by block: calls that fold after calls that do not
 * still may. */
typedef struct {
    int no_fold;            /* in: 1 = never fold */
    int folded;             /* out: 1 if every call ran folded */
    int folded_calls;       /* out: how many calls ran folded (a run
                               folds block by block: predict.c) */
    int built_folded;       /* out: schedules built for node 0 alone
                               (coll.h, fold_rep) */
    char why[256];          /* out: when not, why not */
    char schedule[64];      /* out: the last call's schedule's name */
} hccn_rt_popts_t;

/* As hccn_rt_predict (which folds where it may), not folding if
 * o->no_fold; o may be NULL. */
hccn_status_t hccn_rt_predict_opts(const hccn_sim_topo_t *topo,
                                   const hccn_rt_pcall_t *calls, int ncalls,
                                   double *ends, hccn_rt_popts_t *o);

#endif /* HCCN_RUNTIME_PREDICT_H */
