/*
 * One call of a timing-only run (predict.c) posted on its engine: the
 * algorithm the runtime would pick, its schedule (built for node 0 alone
 * where the run is folded, with the keys that pair a transfer's halves
 * between copies), and every posting rank's tasks, or a hollow part where
 * the engine's answer for the rank's last call still stands.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_sim/alloc.h"
#include "device_sim/software.h"
#include "runtime/predict_int.h"
#include "runtime/rt.h"

typedef hccn_rt_pred_t pred_t;

/* Distinct virtual addresses of the three buffers of a rank (only their
 * equality matters: a copy onto itself is free, as in runtime/exec.c). */
#define VBASE ((uintptr_t)1 << 44)

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
    int rc = hccn_sched_fold_check(p->sched, p->topo->npus, p->topo,
                                   p->rep,
                                   hccn_sim_sw_host_order(p->topo->sw),
                                   check_tasks, p, &p->fold, why,
                                   sizeof(why));
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
    /* Folded, an algorithm that can builds node 0's part alone: not
     * where nodes share network links, as a part alone does not show how
     * far apart its peers are (hccn_sched_fold_check). */
    hccn_coll_args_t b = a;
    if (p->rep != NULL && p->rep == p->fold_rep && !p->fold_shared) {
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

hccn_status_t hccn_rt_pred_post(hccn_rt_pred_t *p, const hccn_rt_pcall_t *c,
                               int i)
{
    hccn_status_t rc = schedule(p, c, i);
    if (rc == HCCN_OK && p->sched != NULL)
        snprintf(p->last_sched, sizeof(p->last_sched), "%s", p->sched->algo);
    if (rc != HCCN_OK || p->unfold)
        return rc;
    /* Schedule, buffers (in place or not) and compression: the tasks. */
    if (p->hinted == NULL || p->hinted->inplace != c->inplace ||
        p->hinted->compress != c->compress || p->hinted->dtype != c->dtype)
        memset(p->hints, 0, (size_t)p->n * sizeof(*p->hints));
    p->hinted = c;
    p->call_tasks[i] = 0;
    for (int j = 0; j < p->nrun; j++)
        p->call_tasks[i] += p->sched->ranks[p->run[j]].nsteps;
    if (p->sched->folded)       /* every node has node 0's part */
        p->call_tasks[i] *= p->n / p->nrun;
    for (int j = 0; j < p->nrun; j++) {
        int r = p->run[j];
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
        hccn_sim_call_t call = hccn_hier_sched_call(p->sched);
        hccn_sim_batch_t *b = hccn_sim_post_hinted(
            p->eng, r, hollow ? NULL : p->tasks, (int)rk->nsteps, rk->deps,
            p->tail[r], join, p->nrun, 1, &p->hints[r], &call);
        if (b == NULL)
            return hccn_sim_fail_context("predict");
        hccn_sim_batch_release(p->eng, p->tail[r]);
        p->tail[r] = b;
    }
    return HCCN_OK;
}
