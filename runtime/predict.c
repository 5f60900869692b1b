/*
 * Timing-only runs (see predict.h). Every rank posts call i + 1 with call
 * i as its stream predecessor, so it starts at the end of call i on that
 * rank, which is the clock a blocking call would have left; the ranks of
 * one call join as in the runtime. After each call is posted every rank
 * waits for its part, which lets the engine run the call as far as it may
 * before the next is posted; at the end every device finishes and the
 * engine runs the rest.
 */
#include <stdlib.h>
#include <string.h>

#include "device_sim/engine.h"
#include "hierarchy/cost.h"
#include "hierarchy/select.h"
#include "runtime/predict.h"
#include "runtime/rt.h"

/* Distinct virtual addresses of the three buffers of a rank (only their
 * equality matters: a copy onto itself is free, as in runtime/exec.c). */
#define VBASE ((uintptr_t)1 << 44)

typedef struct {
    const hccn_sim_topo_t *topo;
    int n;
    int *world;                 /* identity: rank r is NPU r */
    hccn_hier_view_t view;
    int *node_local;            /* view's arrays: node, local, pod */
    hccn_sim_engine_t *eng;
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

static int same_args(const hccn_coll_args_t *x, const hccn_coll_args_t *y)
{
    return x->coll == y->coll && x->count == y->count &&
           x->esize == y->esize && x->root == y->root;
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
    hccn_hier_select_in_t in = {p->topo, p->world, c->spec};
    char why[256];
    const hccn_algo_t *algo = hccn_hier_select(&a, &in, why, sizeof(why),
                                               NULL, 0);
    if (algo == NULL)
        return hccn_rt_error(hccn_hier_algo_find(c->spec) != NULL
                                 ? HCCN_ERR_UNSUPPORTED : HCCN_ERR_INVALID,
                             "predict: call %d: %s: algorithm: %s", i,
                             hccn_coll_name(c->coll), why);
    if (p->sched != NULL && p->algo == algo && same_args(&p->args, &a))
        return HCCN_OK;
    hccn_sched_free(p->sched);
    p->hinted = NULL;           /* the hints were for that schedule */
    p->algo = algo;
    p->args = a;
    p->sched = algo->build(&a);
    if (p->sched == NULL)
        return hccn_rt_error(HCCN_ERR_UNSUPPORTED, "predict: call %d: %s: "
                             "algorithm '%s' does not support %d ranks, "
                             "count %llu", i, hccn_coll_name(c->coll),
                             algo->name, p->n, (unsigned long long)c->count);
    if (hccn_sched_validate(p->sched, why, sizeof(why)) != 0)
        return hccn_rt_error(HCCN_ERR_INTERNAL, "predict: call %d: algorithm "
                             "'%s' built an invalid schedule: %s", i,
                             algo->name, why);
    return HCCN_OK;
}

/* Rank r's tasks for call i, as runtime/exec.c's post_steps makes them. */
static void rank_tasks(pred_t *p, const hccn_rt_pcall_t *c, uint64_t i, int r)
{
    const hccn_sched_rank_t *rk = &p->sched->ranks[r];
    const hccn_sim_npu_t *npu = &p->topo->npus[r];
    uintptr_t b[3];
    vbufs(c, r, b);
    hccn_rt_rank_tasks(rk, npu, p->world, b, c->compress, 0, i, p->tasks);
}

/* Posts call i on every rank, after the rank's previous call. */
static hccn_status_t post_call(pred_t *p, const hccn_rt_pcall_t *c, int i)
{
    hccn_status_t rc = schedule(p, c, i);
    if (rc != HCCN_OK)
        return rc;
    /* Schedule, buffers (in place or not) and compression: the tasks. */
    if (p->hinted == NULL || p->hinted->inplace != c->inplace ||
        p->hinted->compress != c->compress || p->hinted->dtype != c->dtype)
        memset(p->hints, 0, (size_t)p->n * sizeof(*p->hints));
    p->hinted = c;
    for (int r = 0; r < p->n; r++) {
        const hccn_sched_rank_t *rk = &p->sched->ranks[r];
        if (rk->nsteps > p->captasks) {
            free(p->tasks);
            p->captasks = rk->nsteps;
            p->tasks = malloc(p->captasks * sizeof(*p->tasks));
            if (p->tasks == NULL)
                return hccn_rt_error(HCCN_ERR_NOMEM, "predict: out of memory");
        }
        /* Nothing changes the engine between this question and the post. */
        int hollow = hccn_sim_hint_stands(p->eng, &p->hints[r]);
        if (!hollow)
            rank_tasks(p, c, (uint64_t)i, r);
        hccn_sim_key_t join = {0, (uint64_t)i, UINT64_MAX};
        hccn_sim_batch_t *b = hccn_sim_post_hinted(
            p->eng, r, hollow ? NULL : p->tasks, (int)rk->nsteps, rk->deps,
            p->tail[r], join, p->n, 1, &p->hints[r]);
        if (b == NULL)
            return hccn_rt_error(HCCN_ERR_NOMEM, "predict: out of memory");
        hccn_sim_batch_release(p->eng, p->tail[r]);
        p->tail[r] = b;
    }
    return HCCN_OK;
}

static hccn_status_t pred_init(pred_t *p, const hccn_sim_topo_t *topo)
{
    memset(p, 0, sizeof(*p));
    p->topo = topo;
    p->n = topo->nnpus;
    p->world = malloc((size_t)p->n * sizeof(int));
    p->node_local = malloc(3 * (size_t)p->n * sizeof(int));
    p->tail = calloc((size_t)p->n, sizeof(*p->tail));
    p->hints = calloc((size_t)p->n, sizeof(*p->hints));
    p->eng = hccn_sim_engine_create(topo, 0.0);
    if (p->world == NULL || p->node_local == NULL || p->tail == NULL ||
        p->hints == NULL || p->eng == NULL)
        return hccn_rt_error(HCCN_ERR_NOMEM, "predict: out of memory");
    /* Only batch ends are read: tasks go as their batch completes. */
    hccn_sim_engine_set_lean(p->eng, 1);
    /* The file's faults, replayed as a cluster run replays them. */
    if (hccn_sim_engine_set_faults(p->eng, topo->faults, topo->nfaults) != 0)
        return hccn_rt_error(HCCN_ERR_NOMEM, "predict: out of memory");
    hccn_sim_engine_reset(p->eng);
    for (int r = 0; r < p->n; r++)
        p->world[r] = r;
    hccn_cost_place_t pl = {topo, p->world};
    if (hccn_hier_cost_view(&pl, p->n, p->node_local, p->node_local + p->n,
                            &p->view) != 0 ||
        hccn_hier_cost_pods(&pl, p->node_local + 2 * p->n, &p->view) != 0)
        return hccn_rt_error(HCCN_ERR_NOMEM, "predict: out of memory");
    return HCCN_OK;
}

static void pred_free(pred_t *p)
{
    hccn_sim_engine_destroy(p->eng);   /* frees the batches too */
    hccn_sched_free(p->sched);
    free(p->tasks);
    free(p->hints);
    free(p->tail);
    free(p->node_local);
    free(p->world);
}

/* A fault of the plan fails a call, as it does with data: the error of
 * the first rank whose own NPU or link failed (HCCN_ERR_FAULT), else of
 * the first that failed because of another (HCCN_ERR_REMOTE). */
static hccn_status_t call_status(pred_t *p, hccn_sim_batch_t *const *bs,
                                 const hccn_rt_pcall_t *c, int i)
{
    char why[160];
    int first = -1;
    for (int r = 0; r < p->n; r++) {
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

hccn_status_t hccn_rt_predict(const hccn_sim_topo_t *topo,
                              const hccn_rt_pcall_t *calls, int ncalls,
                              double *ends)
{
    pred_t p;
    hccn_status_t rc = pred_init(&p, topo);
    hccn_sim_batch_t **all = NULL;
    if (rc == HCCN_OK && ncalls > 0 &&
        (all = calloc((size_t)ncalls * (size_t)p.n, sizeof(*all))) == NULL)
        rc = hccn_rt_error(HCCN_ERR_NOMEM, "predict: out of memory");
    int *devs = NULL;
    if (rc == HCCN_OK && (devs = malloc((size_t)p.n * sizeof(int))) == NULL)
        rc = hccn_rt_error(HCCN_ERR_NOMEM, "predict: out of memory");
    for (int r = 0; rc == HCCN_OK && r < p.n; r++)
        devs[r] = r;
    for (int i = 0; i < ncalls && rc == HCCN_OK; i++) {
        /* No later call can replay the last: its recording would only
         * cost memory (a what-if study's one call on 65 536 ranks). */
        if (i == ncalls - 1)
            hccn_sim_engine_set_recording(p.eng, 0);
        rc = post_call(&p, &calls[i], i);
        /* Held until the run ends, to read their end times. */
        for (int r = 0; r < p.n && rc == HCCN_OK; r++) {
            all[(size_t)i * p.n + r] = p.tail[r];
            hccn_sim_batch_retain(p.eng, p.tail[r]);
        }
        /* Every rank waits for its part, as a blocking call does, so the
         * engine runs the call as far as it can before the next is posted
         * (no further than the first rank to finish: it could post) and
         * the lean engine frees the tasks of the parts that are done. */
        if (rc == HCCN_OK)
            hccn_sim_wait_begin_many(p.eng, devs, p.tail, p.n);
    }
    free(devs);
    if (rc == HCCN_OK) {
        hccn_sim_finish_all(p.eng);
        for (int i = 0; i < ncalls && rc == HCCN_OK; i++) {
            ends[i] = 0.0;
            for (int r = 0; r < p.n; r++) {
                const hccn_sim_batch_t *b = all[(size_t)i * p.n + r];
                if (!hccn_sim_batch_done(p.eng, b)) {
                    rc = hccn_rt_error(HCCN_ERR_INTERNAL, "predict: call %d "
                                       "never completed on rank %d", i, r);
                    break;
                }
                if (hccn_sim_batch_end(b) > ends[i])
                    ends[i] = hccn_sim_batch_end(b);
            }
            if (rc == HCCN_OK)
                rc = call_status(&p, all + (size_t)i * p.n, &calls[i], i);
        }
    }
    free(all);
    pred_free(&p);
    return rc;
}
