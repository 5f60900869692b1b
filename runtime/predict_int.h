/*
 * The state of a timing-only run (predict.c) and the posting of one call
 * on it (predict_post.c): the call's algorithm, schedule and tasks.
 */
#ifndef HCCN_RT_PREDICT_INT_H
#define HCCN_RT_PREDICT_INT_H

#include "device_sim/engine.h"
#include "hierarchy/cost.h"
#include "hierarchy/fold.h"
#include "hierarchy/select.h"
#include "runtime/predict.h"

typedef struct {
    const hccn_sim_topo_t *topo;
    int n;
    int *world;                 /* identity: rank r is NPU r */
    hccn_hier_cache_t *select_cache;
    hccn_sim_topo_t *sel_topo;    /* what selection sees under the file's
                                     faults, or NULL (fault_view.c) */
    hccn_hier_view_t view;
    int *node_local;            /* view's arrays: node, local, pod */
    hccn_sim_engine_t *eng;
    int nrun;                   /* ranks that post: n, or those played */
    int *run;                   /*   (rep[r] == r): run[0 .. nrun) */
    int *fold_rep;              /* the topology's copies: per rank, its */
    int *fold_link;             /*   copy in node 0, and per link; NULL
                                     if the nodes are not copies */
    double *fold_div;           /* per link: the nodes that share it */
    int *leaf_rep;              /* the same onto the first node of every */
    int *leaf_link;             /*   leaf (hccn_sim_topo_fold_leaves), */
    double *leaf_div;           /*   tried where node 0's does not fold */
    int fold_shared;            /* a network link is shared by nodes:
                                   schedules are built whole and checked */
    int *rep;                   /* this block folded: fold_rep, */
    int *link_map;              /*   fold_link, fold_div (or the leaf_ */
    double *div;                /*   ones); NULL unfolded */
    hccn_sched_fold_t fold;     /*   the keys of the schedule's RECVs */
    int fold_keys;              /* fold holds the keys of sched */
    long *call_tasks;           /* per call: its tasks on every rank */
    const hccn_rt_pcall_t *call;    /* the call the check makes tasks of */
    int unfold;                 /* a schedule does not fold: run again */
    int built_folded;           /* schedules built for node 0 alone */
    char why[256];              /*   why the run is not folded */
    hccn_sim_batch_t **tail;    /* per rank: its latest batch */
    hccn_sim_task_t *tasks;     /* scratch for the largest rank's steps */
    uint32_t captasks;
    const hccn_algo_t *algo;    /* the last schedule, kept for the next */
    hccn_coll_args_t args;
    hccn_sched_t *sched;
    char last_sched[64];        /* the name of the last call's schedule */
    /* Per rank: the engine's answer for its part of the last call, which
     * the next call brings back if its tasks are the same (the same
     * schedule, buffers and compression): then, while the answer stands,
     * the rank's part is posted hollow without making its tasks. */
    hccn_sim_replay_hint_t *hints;
    const hccn_rt_pcall_t *hinted;  /* the call they were made for */
} hccn_rt_pred_t;

/* Picks call i's algorithm as the runtime would, builds (or reuses) its
 * schedule and posts it on every rank that posts, after the rank's
 * previous call; sets p->unfold when the schedule does not fold. */
hccn_status_t hccn_rt_pred_post(hccn_rt_pred_t *p, const hccn_rt_pcall_t *c,
                               int i);

#endif
