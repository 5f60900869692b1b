/*
 * Timing-only runs (see predict.h). Every rank posts call i + 1 with call
 * i as its stream predecessor, so it starts at the end of call i on that
 * rank, which is the clock a blocking call would have left; the ranks of
 * one call join as in the runtime. After each call is posted every rank
 * waits for its part, which lets the engine run the call as far as it may
 * before the next is posted; at the end every device finishes and the
 * engine runs the rest.
 *
 * Folded (predict.h), only node 0's ranks post; their transfers name the
 * real peers (for the routes) and are keyed by the sending copy's rank and
 * step in node 0, so that the two halves of a transfer between copies
 * pair up as the real transfer's halves do.
 *
 * Blocks: where the topology folds, the calls are cut where no later call
 * could replay an earlier one (pred_cuts), and each block runs on an
 * engine of its own from the end of the block before, folded if all its
 * schedules fold (docs/performance.md, "Folding block by block", says
 * why the times are those of one engine).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_sim/alloc.h"
#include "device_sim/engine.h"
#include "hierarchy/cost.h"
#include "hierarchy/select.h"
#include "hierarchy/fold.h"
#include "runtime/predict.h"
#include "runtime/rt.h"

/* Distinct virtual addresses of the three buffers of a rank (only their
 * equality matters: a copy onto itself is free, as in runtime/exec.c). */
#define VBASE ((uintptr_t)1 << 44)

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
    int nrun;                   /* ranks that post: n, or node 0's */
    int *fold_rep;              /* the topology's copies: per rank, its */
    int *fold_link;             /*   copy in node 0, and per link; NULL
                                     if the nodes are not copies */
    int *rep;                   /* this block folded: fold_rep, */
    int *link_map;              /*   fold_link; NULL unfolded */
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
    /* Per rank: the engine's answer for its part of the last call, which
     * the next call brings back if its tasks are the same (the same
     * schedule, buffers and compression): then, while the answer stands,
     * the rank's part is posted hollow without making its tasks. */
    hccn_sim_replay_hint_t *hints;
    const hccn_rt_pcall_t *hinted;  /* the call they were made for */
} pred_t;

/* The rank's SEND, RECV and SCRATCH addresses for call c. */
static void vbufs(const hccn_rt_pcall_t *c, int r, uintptr_t b[3])
{
    uintptr_t blk = (uintptr_t)r * (uintptr_t)c->count *
                    hccn_dtype_size(c->dtype);
    b[HCCN_BUF_SEND] = VBASE;
    b[HCCN_BUF_RECV] = 2 * VBASE;
    b[HCCN_BUF_SCRATCH] = 3 * VBASE;
    if (!c->inplace)
        return;
    if (c->coll == HCCN_COLL_REDUCE_SCATTER)
        b[HCCN_BUF_RECV] = b[HCCN_BUF_SEND] + blk;
    else if (c->coll == HCCN_COLL_ALLGATHER)
        b[HCCN_BUF_SEND] = b[HCCN_BUF_RECV] + blk;
    else
        b[HCCN_BUF_SEND] = b[HCCN_BUF_RECV];
}

static int inplace_ok(hccn_coll_t coll)
{
    return coll == HCCN_COLL_ALLREDUCE || coll == HCCN_COLL_REDUCE_SCATTER ||
           coll == HCCN_COLL_ALLGATHER || coll == HCCN_COLL_BROADCAST ||
           coll == HCCN_COLL_REDUCE;
}

static int rooted(hccn_coll_t coll)
{
    return coll == HCCN_COLL_BROADCAST || coll == HCCN_COLL_REDUCE ||
           coll == HCCN_COLL_SCATTER || coll == HCCN_COLL_GATHER;
}

/* Rank r's tasks for call i, as runtime/exec.c's post_steps makes them. */
static void plain_tasks(const pred_t *p, const hccn_rt_pcall_t *c,
                        uint64_t i, int r, hccn_sim_task_t *tasks)
{
    const hccn_sched_rank_t *rk = &p->sched->ranks[r];
    const hccn_sim_npu_t *npu = &p->topo->npus[r];
    uintptr_t b[3];
    vbufs(c, r, b);
    hccn_rt_rank_tasks(rk, npu, p->world, b, c->compress, 0, i, tasks);
}

/* As plain_tasks, keyed for the fold if the run is folded. */
static void rank_tasks(const pred_t *p, const hccn_rt_pcall_t *c,
                       uint64_t i, int r, hccn_sim_task_t *tasks)
{
    plain_tasks(p, c, i, r, tasks);
    if (p->rep == NULL)
        return;
    for (uint32_t k = 0; k < p->sched->ranks[r].nsteps; k++) {
        if (tasks[k].kind == HCCN_SIM_TASK_SEND)
            tasks[k].key.c = hccn_sched_fold_key(r, k);
        else if (tasks[k].kind == HCCN_SIM_TASK_RECV)
            tasks[k].key.c = p->fold.recv_key[r][k];
    }
}

static int same_args(const hccn_coll_args_t *x, const hccn_coll_args_t *y)
{
    return x->coll == y->coll && x->count == y->count &&
           x->esize == y->esize && x->root == y->root;
}

/* hccn_sched_tasks_fn for the fold check: rank r's tasks for call p->call. */
static void check_tasks(void *arg, int r, hccn_sim_task_t *out)
{
    const pred_t *p = arg;
    plain_tasks(p, p->call, 0, r, out);
}

/* Checks that call i's schedule folds; if it does not, sets p->unfold
 * (the run starts again unfolded). */
static hccn_status_t sched_folds(pred_t *p, const hccn_rt_pcall_t *c, int i)
{
    char why[128];
    hccn_sched_fold_free(&p->fold);
    p->call = c;
    int rc = hccn_sched_fold_check(p->sched, p->topo->npus, p->rep, p->nrun,
                                check_tasks, p, &p->fold, why, sizeof(why));
    if (rc < 0)
        return hccn_sim_fail_context("predict");
    if (rc > 0) {
        p->unfold = 1;
        snprintf(p->why, sizeof(p->why), "call %d (%s): %s", i,
                 p->sched->algo, why);
    }
    p->fold_keys = rc == 0;
    return HCCN_OK;
}

/* Whether step k of node-0 rank r of a folded schedule pairs as
 * hierarchy/sched.h says: a RECV with a SEND of node 0 of the same bytes
 * whose peer's copy is r, a SEND with a RECV of node 0 or none. */
static int folded_pairs(const pred_t *p, int r, uint32_t k)
{
    const hccn_sched_t *s = p->sched;
    const hccn_step_t *st = &s->ranks[r].steps[k];
    if (st->kind != HCCN_STEP_SEND && st->kind != HCCN_STEP_RECV &&
        st->kind != HCCN_STEP_RECV_REDUCE)
        return 1;
    if (st->xfer >= s->nxfers)
        return 0;
    int send = st->kind == HCCN_STEP_SEND;
    hccn_sched_ref_t o = send ? s->xfer_recv[st->xfer]
                              : s->xfer_send[st->xfer];
    if (send && o.rank == -1)
        return 1;               /* to a rank left out */
    if (o.rank < 0 || o.rank >= p->nrun || o.step >= s->ranks[o.rank].nsteps)
        return 0;
    const hccn_step_t *x = &s->ranks[o.rank].steps[o.step];
    if (send)
        return x->kind != HCCN_STEP_SEND && x->xfer == st->xfer;
    return x->kind == HCCN_STEP_SEND && x->bytes == st->bytes &&
           p->rep[p->world[x->peer]] == r;
}

/* The RECV keys of a schedule built folded (hierarchy/sched.h): its
 * transfers from ranks left out name their SEND's copy. */
static hccn_status_t folded_keys(pred_t *p, int i)
{
    const hccn_sched_t *s = p->sched;
    hccn_sched_fold_free(&p->fold);
    p->fold.nrep = p->nrun;
    p->fold.recv_key = hccn_sim_calloc((size_t)p->nrun, sizeof(*p->fold.recv_key));
    if (p->fold.recv_key == NULL)
        return hccn_sim_fail_context("predict");
    for (int r = 0; r < p->nrun; r++) {
        const hccn_sched_rank_t *rk = &s->ranks[r];
        p->fold.recv_key[r] = hccn_sim_calloc((size_t)rk->nsteps + 1, sizeof(uint64_t));
        if (p->fold.recv_key[r] == NULL)
            return hccn_sim_fail_context("predict");
        for (uint32_t k = 0; k < rk->nsteps; k++) {
            if (!folded_pairs(p, r, k))
                return hccn_rt_error(HCCN_ERR_INTERNAL, "predict: call %d: "
                                     "algorithm '%s' built a folded "
                                     "schedule whose step %u on rank %d "
                                     "does not pair", i, s->algo, k, r);
            hccn_sched_ref_t a = s->xfer_send[rk->steps[k].xfer];
            if (rk->steps[k].kind != HCCN_STEP_SEND &&
                rk->steps[k].kind != HCCN_STEP_COPY &&
                rk->steps[k].kind != HCCN_STEP_REDUCE)
                p->fold.recv_key[r][k] = hccn_sched_fold_key(a.rank, a.step);
        }
    }
    p->fold_keys = 1;
    return HCCN_OK;
}

/* Whether the kept schedule serves this block: built whole for an
 * unfolded one; folded-built or checked (its keys made) for a folded one
 * (a block runs folded or not, hccn_rt_predict_opts). */
static int sched_fits(const pred_t *p)
{
    return p->rep == NULL ? !p->sched->folded : p->fold_keys;
}

/* Picks the algorithm of call i as the runtime would and builds (or
 * reuses) its schedule. */
static hccn_status_t schedule(pred_t *p, const hccn_rt_pcall_t *c, int i)
{
    hccn_coll_args_t a = {.coll = c->coll, .nranks = p->n, .count = c->count,
                          .esize = hccn_dtype_size(c->dtype),
                          .root = rooted(c->coll) ? c->root : 0,
                          .view = &p->view};
    if (a.esize == 0 || (rooted(c->coll) && (c->root < 0 || c->root >= p->n)))
        return hccn_rt_error(HCCN_ERR_INVALID, "predict: call %d: %s: bad "
                             "dtype or root", i, hccn_coll_name(c->coll));
    if (hccn_coll_is_v(c->coll))
        return hccn_rt_error(HCCN_ERR_UNSUPPORTED, "predict: call %d: %s: "
                             "timing-only runs take no count arrays", i,
                             hccn_coll_name(c->coll));
    if (c->inplace && !inplace_ok(c->coll))
        return hccn_rt_error(HCCN_ERR_INVALID, "predict: call %d: %s has no "
                             "in-place form", i, hccn_coll_name(c->coll));
    hccn_hier_select_in_t in = {p->sel_topo ? p->sel_topo : p->topo, p->world,
                                c->spec, p->select_cache};
    /* Predictions take no operator: they price a sum. */
    a.in_switch = hccn_hier_in_switch(in.topo, p->world, p->n, c->coll,
                                      (int)c->dtype, HCCN_SUM);
    char why[256], report[1024];
    /* HCCN_DEBUG=INFO: the choice of every call, as a run with data logs
     * it on rank 0. */
    int log = hccn_rt_log_on(HCCN_LOG_INFO);
    const hccn_algo_t *algo = hccn_hier_select(&a, &in, why, sizeof(why),
                                               log ? report : NULL,
                                               sizeof(report));
    if (algo != NULL && log)
        hccn_rt_log(HCCN_LOG_INFO, "timing only: call %d: %s", i, report);
    if (algo == NULL)   /* selection recorded why (and the status) */
        return hccn_sim_fail_context("predict: call %d: %s", i,
                                     hccn_coll_name(c->coll));
    if (p->sched != NULL && p->algo == algo && same_args(&p->args, &a) &&
        sched_fits(p))
        return HCCN_OK;
    hccn_sched_free(p->sched);
    hccn_sched_fold_free(&p->fold);
    p->fold_keys = 0;
    p->hinted = NULL;           /* the hints were for that schedule */
    p->algo = algo;
    p->args = a;
    /* Folded, an algorithm that can builds node 0's part alone. */
    hccn_coll_args_t b = a;
    if (p->rep != NULL) {
        b.fold_rep = p->rep;
        b.fold_nrep = p->nrun;
    }
    p->sched = hccn_hier_build(algo, &b);
    if (p->sched == NULL)
        return hccn_sim_fail_context("predict: call %d", i);
    if (p->sched->folded) {
        p->built_folded++;
        return folded_keys(p, i);
    }
    if (hccn_sched_validate(p->sched, NULL, 0) != 0)
        return hccn_sim_fail_context("predict: call %d: algorithm '%s'", i,
                                     algo->name);
    if (p->rep != NULL)
        return sched_folds(p, c, i);
    return HCCN_OK;
}

/* Posts call i on every rank that posts, after the rank's previous call. */
static hccn_status_t post_call(pred_t *p, const hccn_rt_pcall_t *c, int i)
{
    hccn_status_t rc = schedule(p, c, i);
    if (rc != HCCN_OK || p->unfold)
        return rc;
    /* Schedule, buffers (in place or not) and compression: the tasks. */
    if (p->hinted == NULL || p->hinted->inplace != c->inplace ||
        p->hinted->compress != c->compress || p->hinted->dtype != c->dtype)
        memset(p->hints, 0, (size_t)p->n * sizeof(*p->hints));
    p->hinted = c;
    p->call_tasks[i] = 0;
    for (int r = 0; r < p->nrun; r++)
        p->call_tasks[i] += p->sched->ranks[r].nsteps;
    if (p->sched->folded)       /* every node has node 0's part */
        p->call_tasks[i] *= p->n / p->nrun;
    for (int r = 0; r < p->nrun; r++) {
        const hccn_sched_rank_t *rk = &p->sched->ranks[r];
        if (rk->nsteps > p->captasks) {
            hccn_sim_free(p->tasks);
            p->captasks = rk->nsteps;
            p->tasks = hccn_sim_malloc(p->captasks * sizeof(*p->tasks));
            if (p->tasks == NULL)
                return hccn_sim_fail_context("predict");
        }
        /* Nothing changes the engine between this question and the post. */
        int hollow = hccn_sim_hint_stands(p->eng, &p->hints[r]);
        if (!hollow)
            rank_tasks(p, c, (uint64_t)i, r, p->tasks);
        hccn_sim_key_t join = {0, (uint64_t)i, UINT64_MAX};
        hccn_sim_batch_t *b = hccn_sim_post_hinted(
            p->eng, r, hollow ? NULL : p->tasks, (int)rk->nsteps, rk->deps,
            p->tail[r], join, p->nrun, 1, &p->hints[r]);
        if (b == NULL)
            return hccn_sim_fail_context("predict");
        hccn_sim_batch_release(p->eng, p->tail[r]);
        p->tail[r] = b;
    }
    return HCCN_OK;
}

/* The next block runs unfolded (the topology's copies are kept). */
static void pred_unfold(pred_t *p)
{
    p->rep = p->link_map = NULL;
    hccn_sched_fold_free(&p->fold);
    p->fold_keys = 0;
    p->unfold = 0;
}

/* A new engine for a block of calls that starts at t0 (the end of the
 * block before, 0 for the first): lean, with the file's faults; folded
 * (only node 0's devices run) if p->rep is set. */
static hccn_status_t pred_engine(pred_t *p, double t0)
{
    hccn_sim_engine_destroy(p->eng);   /* frees the batches too */
    memset(p->tail, 0, (size_t)p->n * sizeof(*p->tail));
    memset(p->hints, 0, (size_t)p->n * sizeof(*p->hints));
    p->hinted = NULL;
    p->eng = hccn_sim_engine_create(p->topo, 0.0);
    if (p->eng == NULL)
        return hccn_sim_fail_context("predict");
    /* Only batch ends are read: tasks go as their batch completes. */
    hccn_sim_engine_set_lean(p->eng, 1);
    /* The file's faults, replayed as a cluster run replays them. */
    if (hccn_sim_engine_set_faults(p->eng, p->topo->faults,
                                   p->topo->nfaults) != 0 ||
        hccn_sim_engine_set_fold(p->eng, p->rep, p->link_map) != 0)
        return hccn_sim_fail_context("predict");
    hccn_sim_engine_reset(p->eng);
    p->nrun = p->rep != NULL ? p->topo->nodes[0].nnpus : p->n;
    for (int r = p->nrun; r < p->n; r++)
        hccn_sim_finish(p->eng, r);
    /* Every rank's clock at t0 (0 + t0 is t0: no fault plan slows a
     * device, or the run is a single block starting at 0). */
    for (int r = 0; r < p->nrun && t0 > 0.0; r++)
        hccn_sim_advance(p->eng, r, t0);
    return HCCN_OK;
}

/* Folds the run if the topology allows it (the schedules are checked as
 * they are built). */
static hccn_status_t pred_fold(pred_t *p)
{
    p->fold_rep = hccn_sim_malloc((size_t)p->n * sizeof(*p->fold_rep));
    p->fold_link = hccn_sim_malloc(((size_t)p->topo->nlinks + 1) *
                                   sizeof(*p->fold_link));
    if (p->fold_rep == NULL || p->fold_link == NULL)
        return hccn_sim_fail_context("predict");
    if (hccn_sim_topo_fold(p->topo, p->fold_rep, p->fold_link, p->why,
                           sizeof(p->why)) != 0) {
        hccn_sim_free(p->fold_rep);
        hccn_sim_free(p->fold_link);
        p->fold_rep = p->fold_link = NULL;
    }
    return HCCN_OK;
}

static hccn_status_t pred_init(pred_t *p, const hccn_sim_topo_t *topo,
                               int fold)
{
    memset(p, 0, sizeof(*p));
    p->topo = topo;
    p->n = topo->nnpus;
    p->world = hccn_sim_malloc((size_t)p->n * sizeof(int));
    p->node_local = hccn_sim_malloc(3 * (size_t)p->n * sizeof(int));
    p->tail = hccn_sim_calloc((size_t)p->n, sizeof(*p->tail));
    p->hints = hccn_sim_calloc((size_t)p->n, sizeof(*p->hints));
    p->select_cache = hccn_hier_cache_new();
    int nomem;
    p->sel_topo = hccn_sim_topo_fault_view(topo, topo->faults, topo->nfaults,
                                           &nomem);
    if (p->world == NULL || p->node_local == NULL || p->tail == NULL ||
        p->hints == NULL || p->select_cache == NULL || nomem)
        return hccn_sim_fail_context("predict");
    snprintf(p->why, sizeof(p->why), "not asked to");
    hccn_status_t rc = fold ? pred_fold(p) : HCCN_OK;
    if (rc != HCCN_OK)
        return rc;
    for (int r = 0; r < p->n; r++)
        p->world[r] = r;
    hccn_cost_place_t pl = {topo, p->world};
    if (hccn_hier_cost_view(&pl, p->n, p->node_local, p->node_local + p->n,
                            &p->view) != 0 ||
        hccn_hier_cost_pods(&pl, p->node_local + 2 * p->n, &p->view) != 0)
        return hccn_sim_fail_context("predict");
    return HCCN_OK;
}

static void pred_free(pred_t *p)
{
    hccn_sim_engine_destroy(p->eng);   /* frees the batches too */
    hccn_sched_free(p->sched);
    pred_unfold(p);
    hccn_sim_free(p->fold_rep);
    hccn_sim_free(p->fold_link);
    hccn_sim_free(p->call_tasks);
    hccn_sim_free(p->tasks);
    hccn_sim_free(p->hints);
    hccn_sim_free(p->tail);
    hccn_sim_free(p->node_local);
    hccn_sim_free(p->world);
    hccn_hier_cache_free(p->select_cache);
    hccn_sim_topo_fault_view_free(p->sel_topo);
}

/* A fault of the plan fails a call, as it does with data: the error of
 * the first rank whose own NPU or link failed (HCCN_ERR_FAULT), else of
 * the first that failed because of another (HCCN_ERR_REMOTE). */
static hccn_status_t call_status(pred_t *p, hccn_sim_batch_t *const *bs,
                                 const hccn_rt_pcall_t *c, int i)
{
    char why[160];
    int first = -1;
    for (int r = 0; r < p->nrun; r++) {
        hccn_status_t st = hccn_sim_batch_status(p->eng, bs[r], NULL, 0);
        if (st == HCCN_ERR_FAULT || (st != HCCN_OK && first < 0))
            first = r;
        if (st == HCCN_ERR_FAULT)
            break;
    }
    if (first < 0)
        return HCCN_OK;
    hccn_status_t st = hccn_sim_batch_status(p->eng, bs[first], why,
                                             sizeof(why));
    return hccn_rt_error(st, "predict: call %d (%s) on rank %d: %s", i,
                         hccn_coll_name(c->coll), first, why);
}

/* Calls [s, e) on p's engine; p->unfold if a schedule did not fold. */
static hccn_status_t pred_run(pred_t *p, const hccn_rt_pcall_t *calls,
                              int s, int e, double *ends)
{
    int k = p->nrun, ncalls = e - s;
    hccn_sim_batch_t **all = NULL;
    int *devs = hccn_sim_malloc((size_t)k * sizeof(int));
    hccn_status_t rc = HCCN_OK;
    if (devs == NULL || (ncalls > 0 && (all = hccn_sim_calloc((size_t)ncalls * k,
                                                     sizeof(*all))) == NULL))
        rc = hccn_sim_fail_context("predict");
    for (int r = 0; rc == HCCN_OK && r < k; r++)
        devs[r] = r;
    for (int j = 0; j < ncalls && rc == HCCN_OK; j++) {
        /* No later call can replay the block's last (blocks end where
         * none can: pred_cuts): its recording would only cost memory (a
         * what-if study's one call on 65 536 ranks). */
        if (j == ncalls - 1)
            hccn_sim_engine_set_recording(p->eng, 0);
        rc = post_call(p, &calls[s + j], s + j);
        if (p->unfold)
            break;
        /* Held until the run ends, to read their end times. */
        for (int r = 0; r < k && rc == HCCN_OK; r++) {
            all[(size_t)j * k + r] = p->tail[r];
            hccn_sim_batch_retain(p->eng, p->tail[r]);
        }
        /* Every rank waits for its part, as a blocking call does, so the
         * engine runs the call as far as it can before the next is posted
         * (no further than the first rank to finish: it could post) and
         * the lean engine frees the tasks of the parts that are done. */
        if (rc == HCCN_OK)
            hccn_sim_wait_begin_many(p->eng, devs, p->tail, k);
    }
    hccn_sim_free(devs);
    if (rc == HCCN_OK && !p->unfold) {
        hccn_sim_finish_all(p->eng);
        for (int j = 0; j < ncalls && rc == HCCN_OK; j++) {
            int i = s + j;
            ends[i] = 0.0;
            for (int r = 0; r < k; r++) {
                const hccn_sim_batch_t *b = all[(size_t)j * k + r];
                if (!hccn_sim_batch_done(p->eng, b)) {
                    rc = hccn_rt_error(HCCN_ERR_INTERNAL, "predict: call %d "
                                       "never completed on rank %d", i, r);
                    break;
                }
                if (hccn_sim_batch_end(b) > ends[i])
                    ends[i] = hccn_sim_batch_end(b);
            }
            if (rc == HCCN_OK)
                rc = call_status(p, all + (size_t)j * k, &calls[i], i);
        }
    }
    hccn_sim_free(all);
    return rc;
}

/* Where the run may start a new engine (a block) before call k: where no
 * call from k on has the size in bytes (count x element size) of a call
 * before k, so none could have been replayed from a call before k (a
 * replay needs the same tasks, and every task's bytes are a share of the
 * call's). cut[k] = 1 for those k in 1 .. n-1 (cut has n + 1 entries);
 * none with compression (it changes the bytes on the wire) or past
 * PRED_CLASSES sizes. */
#define PRED_CLASSES 64
static void pred_cuts(const hccn_rt_pcall_t *calls, int n, int *cut)
{
    uint64_t size[PRED_CLASSES];
    int first[PRED_CLASSES], last[PRED_CLASSES], nc = 0;
    memset(cut, 0, (size_t)(n + 1) * sizeof(*cut));
    for (int i = 0; i < n; i++) {
        uint64_t b = calls[i].count * hccn_dtype_size(calls[i].dtype);
        int c = 0;
        while (c < nc && size[c] != b)
            c++;
        if (c == PRED_CLASSES || calls[i].compress != 0)
            return;             /* one block */
        if (c == nc) {
            size[nc] = b;
            first[nc++] = i;
        }
        last[c] = i;
    }
    /* open: the sizes met before k and again from k on. */
    for (int c = 0; c < nc; c++) {
        cut[first[c] + 1]++;
        cut[last[c] + 1]--;
    }
    for (int k = 1, open = 0; k <= n; k++) {
        open += cut[k];
        cut[k] = k < n && open == 0;
    }
}

/* Calls [s, e), starting at t0: folded where the topology and every
 * schedule of the block allow, else again unfolded. Counts the block's
 * calls run folded in *nfolded; the first reason not to goes to *why. */
static hccn_status_t pred_block(pred_t *p, const hccn_rt_pcall_t *calls,
                                int s, int e, double t0, double *ends,
                                int *nfolded, char *why, size_t len)
{
    p->rep = p->fold_rep;
    p->link_map = p->fold_link;
    hccn_status_t rc = pred_engine(p, t0);
    if (rc == HCCN_OK)
        rc = pred_run(p, calls, s, e, ends);
    if (rc == HCCN_OK && p->unfold) {
        /* The schedule that did not fold is kept: the next run builds
         * it first. */
        if (why[0] == '\0')
            snprintf(why, len, "%s", p->why);
        pred_unfold(p);
        rc = pred_engine(p, t0);
        if (rc == HCCN_OK)
            rc = pred_run(p, calls, s, e, ends);
    }
    if (p->rep != NULL)
        *nfolded += e - s;
    pred_unfold(p);
    return rc;
}

/* Calls [0, ncalls) in the blocks that cut (pred_cuts) marks. */
static hccn_status_t run_blocks(pred_t *p, const hccn_rt_pcall_t *calls,
                                int ncalls, const int *cut, double *ends,
                                int *nfolded, char *why, size_t len)
{
    hccn_status_t rc;
    int s = 0;
    do {                        /* once with no calls */
        int e = s + 1;
        while (e < ncalls && !cut[e])
            e++;
        if (e > ncalls)
            e = ncalls;
        rc = pred_block(p, calls, s, e, s > 0 ? ends[s - 1] : 0.0, ends,
                        nfolded, why, len);
        s = e;
    } while (rc == HCCN_OK && s < ncalls);
    return rc;
}

/* The blocks of the run, one after another, each starting when the one
 * before ended (on every rank: a collective starts when its last rank
 * calls it). Unfolded runs are one block. Where the calls that could be
 * recorded (all but the last) hold more tasks than the engine keeps
 * recorded, the run is done again as one block: a recording made before
 * a cut could then have pushed out one made after it. */
static hccn_status_t pred_blocks(pred_t *p, const hccn_rt_pcall_t *calls,
                                 int ncalls, double *ends, int *nfolded,
                                 char *why, size_t len)
{
    int *cut = hccn_sim_calloc((size_t)ncalls + 1, sizeof(*cut));
    p->call_tasks = hccn_sim_calloc((size_t)ncalls + 1, sizeof(long));
    if (cut == NULL || p->call_tasks == NULL) {
        hccn_sim_free(cut);
        return hccn_sim_fail_context("predict");
    }
    int cuts = 0;
    if (p->fold_rep != NULL)
        pred_cuts(calls, ncalls, cut);
    for (int k = 1; k < ncalls; k++)
        cuts += cut[k];
    hccn_status_t rc = run_blocks(p, calls, ncalls, cut, ends, nfolded, why,
                                  len);
    long held = 0;
    for (int i = 0; i + 1 < ncalls; i++)
        held += p->call_tasks[i];
    if (rc == HCCN_OK && cuts > 0 && held > HCCN_SIM_REPLAY_MAX) {
        memset(cut, 0, (size_t)(ncalls + 1) * sizeof(*cut));
        *nfolded = 0;
        why[0] = '\0';
        rc = run_blocks(p, calls, ncalls, cut, ends, nfolded, why, len);
    }
    hccn_sim_free(cut);
    return rc;
}

hccn_status_t hccn_rt_predict_opts(const hccn_sim_topo_t *topo,
                                   const hccn_rt_pcall_t *calls, int ncalls,
                                   double *ends, hccn_rt_popts_t *o)
{
    int fold = o == NULL || !o->no_fold, nfolded = 0;
    char why[sizeof(o->why)] = "";
    pred_t p;
    if (topo->nnpus > HCCN_MAX_TIMING_NPUS)
        return hccn_rt_error(HCCN_ERR_UNSUPPORTED,
                             "%s: %d NPUs: timing-only runs take at most %d "
                             "(docs/topology.md, Limits)", topo->source,
                             topo->nnpus, HCCN_MAX_TIMING_NPUS);
    hccn_status_t rc = pred_init(&p, topo, fold);
    if (rc == HCCN_OK)
        rc = pred_blocks(&p, calls, ncalls, ends, &nfolded, why, sizeof(why));
    if (o != NULL) {
        o->folded = p.fold_rep != NULL && why[0] == '\0';
        o->folded_calls = nfolded;
        o->built_folded = p.built_folded;
        if (p.fold_rep == NULL)
            snprintf(o->why, sizeof(o->why), "%s", p.why);
        else if (why[0] != '\0' && nfolded > 0)
            snprintf(o->why, sizeof(o->why), "%.200s (%d of %d calls "
                     "folded)", why, nfolded, ncalls);
        else
            snprintf(o->why, sizeof(o->why), "%s", why);
    }
    pred_free(&p);
    return rc;
}

hccn_status_t hccn_rt_predict(const hccn_sim_topo_t *topo,
                              const hccn_rt_pcall_t *calls, int ncalls,
                              double *ends)
{
    return hccn_rt_predict_opts(topo, calls, ncalls, ends, NULL);
}
