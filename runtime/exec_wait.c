/*
 * Waiting for the executor's operations (exec.c): a rank waits until its
 * part of the data has moved and the timing engine has settled its
 * batch, with the other ranks' failures and departures reported by name;
 * then the operation is freed, or kept for a future.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>

#include "device_sim/alloc.h"
#include "runtime/kernels.h"
#include "runtime/rt.h"

const char *hccn_rt_op_name(const rt_op_t *op)
{
    if (op->kind == RT_OP_SEND)
        return "send";
    if (op->kind == RT_OP_RECV)
        return "recv";
    return hccn_rt_fp_name(op->fp.coll);
}

static int op_data_done(void *arg)
{
    rt_op_t *op = arg;
    if (op->stage == RT_STAGE_DONE)
        return 1;
    /* A message whose simulated transfer failed (its NPU or its peer's,
     * a link) moves no bytes anyone may read: a receive need not wait for
     * a send that may never come. A send first leaves its bytes in the
     * mailbox, so that a waiting receiver is not left without them. */
    hccn_sim_engine_t *eng = op->ctx->cl->eng;
    int gone = op->kind == RT_OP_RECV ||
               (op->kind == RT_OP_SEND && op->stage == RT_STAGE_RUN);
    return gone && hccn_sim_batch_done(eng, op->batch) &&
           hccn_sim_batch_status(eng, op->batch, NULL, 0) != HCCN_OK;
}

static int finished(const rt_op_t *op, int comm_rank)
{
    rt_comm_t *c = op->comm->sh;
    return atomic_load(&c->cl->ctxs[c->world[comm_rank]].finished);
}

/* 1 if op waits for a comm rank that has returned from its function (and
 * so will never deliver): one that has not arrived at the rendezvous, or
 * the peer of a step that is ready to run but cannot. */
static int op_peer_gone(void *arg, int *who)
{
    rt_op_t *op = arg;
    rt_comm_t *c = op->comm->sh;
    if (op->kind != RT_OP_COLL) {
        *who = op->peer;
        return finished(op, op->peer);
    }
    if (op->stage == RT_STAGE_ARRIVE || op->stage == RT_STAGE_READY) {
        rt_slot_t *s = &c->slots[op->seq % RT_SLOTS];
        int gone = 0;
        pthread_mutex_lock(&c->lock);
        for (int q = 0; q < c->size && !gone; q++)
            if ((!s->in_use || s->seq != op->seq || !s->here[q]) &&
                finished(op, q)) {
                *who = q;
                gone = 1;
            }
        pthread_mutex_unlock(&c->lock);
        return gone;
    }
    const hccn_sched_rank_t *rk = &op->sched->ranks[op->comm->rank];
    for (uint32_t i = op->cursor; i < op->nsteps; i++) {
        const hccn_step_t *st = &rk->steps[i];
        if (op->step_state[i] == ST_DONE || !hccn_rt_deps_done(op, rk, st))
            continue;
        if ((st->kind == HCCN_STEP_SEND || st->kind == HCCN_STEP_RECV ||
             st->kind == HCCN_STEP_RECV_REDUCE) && finished(op, st->peer)) {
            *who = st->peer;
            return 1;
        }
    }
    return 0;
}

int hccn_rt_op_held(const rt_op_t *op)
{
    return op->kind == RT_OP_COLL && op->slot != NULL && !op->driver &&
           op->stage == RT_STAGE_READY &&
           atomic_load_explicit(&op->slot->drive, memory_order_acquire) ==
               RT_DRIVE_ON;
}

int hccn_rt_op_committed(const rt_op_t *op)
{
    if (op->kind != RT_OP_COLL)
        return 0;
    if (op->stage == RT_STAGE_DONE)
        return op->status == HCCN_OK;
    return op->slot != NULL &&
           atomic_load_explicit(&op->slot->ready, memory_order_acquire) &&
           op->slot->status == HCCN_OK;
}

void hccn_rt_op_idle(rt_op_t *op)
{
    if (op->in_wait && !op->own_begun) {
        hccn_sim_wait_begin(op->ctx->cl->eng, op->ctx->rank, op->batch);
        op->own_begun = 1;
    }
}

/* Moves data until op's data plane is done (see hccn_rt_block). */
static hccn_status_t data_wait(rt_op_t *op)
{
    return hccn_rt_block_op(op, op_data_done, op_peer_gone, op, NULL);
}

hccn_status_t hccn_rt_op_finish_data(rt_op_t *op)
{
    hccn_status_t rc = data_wait(op);
    if (rc == HCCN_OK && op->status != HCCN_OK)
        rc = hccn_rt_error(op->status, "rank %d: %s", op->ctx->rank,
                           op->ctx->errmsg);
    return rc;
}

typedef struct {
    hccn_sim_engine_t *eng;
    hccn_sim_batch_t *b;
} time_wait_t;

static int batch_done(void *arg)
{
    time_wait_t *tw = arg;
    return hccn_sim_batch_done(tw->eng, tw->b);
}

hccn_status_t hccn_rt_op_wait(rt_op_t *op)
{
    hccn_ctx_t *ctx = op->ctx;
    hccn_sim_engine_t *eng = ctx->cl->eng;
    if (op->waited)
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "rank %d: %s: this future was already waited for",
                             ctx->rank, hccn_rt_op_name(op));
    op->waited = 1;
    op->comm->pending--;
    ctx->inflight--;
    hccn_rt_set_current(ctx, op);
    /* A small collective may be driven (see drive()): then the driver
     * declares this rank's engine wait. Else it is declared when the rank
     * first goes to sleep (hccn_rt_op_idle) or once its bytes have moved,
     * whichever comes first: its data plane never waits for simulated
     * time, and a sleeping rank must not hold the horizon back. */
    int small = hccn_rt_op_small(op);
    op->in_wait = small;
    if (!small)
        hccn_sim_wait_begin(eng, ctx->rank, op->batch);
    hccn_status_t rc = data_wait(op);
    op->in_wait = 0;
    if (small && rc == HCCN_OK && !op->time_begun && !op->own_begun)
        hccn_sim_wait_begin(eng, ctx->rank, op->batch);
    if (rc == HCCN_OK && op->status != HCCN_OK)
        rc = hccn_rt_error(op->status, "rank %d: %s", ctx->rank, ctx->errmsg);
    if (rc != HCCN_OK) {
        hccn_rt_set_current(ctx, NULL);
        op->status = rc;
        if (op->listed)
            hccn_rt_list_remove(ctx, op);
        hccn_sim_batch_abandon(eng, ctx->rank, op->batch);
        return rc;
    }
    /* Waiting for the simulated end, keep moving data: a peer may need
     * this rank's bytes before it can post what settles this time. The
     * rank still waits for op (its current operation). */
    time_wait_t tw = {eng, op->batch};
    atomic_store(&ctx->time_wait, 1);
    rc = hccn_rt_block_op(op, batch_done, NULL, &tw, "the simulated end of");
    atomic_store(&ctx->time_wait, 0);
    hccn_rt_set_current(ctx, NULL);
    if (rc != HCCN_OK) {
        op->status = rc;
        if (hccn_rt_log_on(HCCN_LOG_WARN))
            hccn_sim_engine_dump(eng, stderr);
        hccn_sim_batch_abandon(eng, ctx->rank, op->batch);
        return rc;
    }
    hccn_sim_wait_finish(eng, ctx->rank, op->batch);
    rc = hccn_sim_batch_status(eng, op->batch, NULL, 0);
    if (rc != HCCN_OK) {
        char what[128], reason[160];
        hccn_sim_batch_status(eng, op->batch, reason, sizeof(reason));
        op->status = rc;
        if (op->listed)
            hccn_rt_list_remove(ctx, op);       /* its bytes will never move */
        hccn_rt_op_describe(op, what, sizeof(what));
        return hccn_rt_error(rc, "rank %d: %s: %s", ctx->rank, what, reason);
    }
    ctx->last_duration = hccn_sim_batch_end(op->batch) - op->t_call;
    hccn_rt_summary_op(op);             /* no-op unless summarising */
    return HCCN_OK;
}

void hccn_rt_op_free(rt_op_t *op)
{
    if (op == NULL)
        return;
    hccn_rt_trace_op(op);               /* no-op unless tracing */
    hccn_rt_summary_op(op);             /* once: it may have been waited */
    if (op->listed)
        hccn_rt_list_remove(op->ctx, op);
    if (!op->waited && op->comm != NULL) {
        op->comm->pending--;   /* completed through hccn_test */
        op->ctx->inflight--;
    }
    if (op->batch != NULL)
        hccn_sim_batch_release(op->ctx->cl->eng, op->batch);
    if (op->sched_owned)
        hccn_sched_free((hccn_sched_t *)op->sched);
    hccn_sim_free(op->vmem);
    hccn_rt_scratch_give_back(op);
    hccn_sim_free(op->step_state);
    hccn_sim_free(op->fuse);
    hccn_sim_free(op);
}

void hccn_rt_drain(hccn_ctx_t *ctx)
{
    while (ctx->ops_head != NULL) {
        rt_op_t *op = ctx->ops_head;
        if ((data_wait(op) != HCCN_OK || op->stage != RT_STAGE_DONE) &&
            op->listed)
            hccn_rt_list_remove(ctx, op);
    }
}

