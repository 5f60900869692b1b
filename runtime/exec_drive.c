/*
 * Driving collectives (exec.c): a call whose ranks all run one schedule is
 * driven by whichever rank gets there first, from a plan of its moves
 * worked out once per schedule and kept per communicator; otherwise each
 * rank progresses its own steps, and point-to-point operations theirs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>

#include "device_sim/alloc.h"
#include "runtime/kernels.h"
#include "runtime/rt.h"

/* The plan-cache entry every rank of slot s runs and its compression,
 * when a plan can describe the call: one entry for all (plans are kept in
 * it: plan_cache.c) and one compression (a plan made without it may fuse
 * receives with reductions, which a compressed call must not: its bytes
 * are rounded on the way). 0 if not. Plans are never changed or dropped
 * while a call is in flight, so a driver reads one without a lock. */
static int plan_key(const rt_slot_t *s, int size, const rt_entry_t **entry,
                    int *compress)
{
    *entry = s->ops[0]->entry;
    *compress = s->ops[0]->compress;
    for (int r = 0; r < size; r++)
        if (s->ops[r]->entry != *entry || *entry == NULL ||
            s->ops[r]->compress != *compress)
            return 0;
    return 1;
}

/* c's moves for plan p and the call at s, worked out again unless they
 * were for the same plan and buffers; NULL if they cannot be (no memory,
 * or compressed calls, whose steps round on the way). */
static const rt_moves_t *moves_for(rt_comm_t *c, rt_slot_t *s,
                                   const rt_plan_t *p)
{
    rt_moves_t *mv = &c->moves;
    size_t nb = 3 * (size_t)c->size;
    if (p->compress)
        return NULL;
    if (mv->plan == p && memcmp(mv->bufs, s->bufs, nb * sizeof(*s->bufs)) == 0)
        return mv;
    mv->plan = NULL;
    if (mv->bufs == NULL && (mv->bufs = hccn_sim_malloc(nb * sizeof(*mv->bufs))) == NULL)
        return NULL;
    rt_move_t *m = hccn_sim_realloc(mv->moves, (p->n + 1) * sizeof(*m));
    if (m == NULL)
        return NULL;
    mv->moves = m;
    mv->n = 0;
    for (uint32_t k = 0; k < p->n; k++) {
        const rt_plan_step_t *e = &p->steps[k];
        mv->n += (uint32_t)hccn_rt_step_move(s->ops[e->rank], e->step, e->fused,
                                     &m[mv->n]);
    }
    memcpy(mv->bufs, s->bufs, nb * sizeof(*s->bufs));
    mv->plan = p;
    return mv;
}

/* Moves the call's bytes in the plan's order, then marks every step done. */
static void plan_run(rt_slot_t *s, int size, const rt_plan_t *p)
{
    const rt_moves_t *mv = moves_for(s->ops[0]->comm->sh, s, p);
    if (mv != NULL) {
        for (uint32_t k = 0; k < mv->n; k++)
            hccn_rt_move_run(s->ops[0]->ctx->cl, &mv->moves[k],
                             s->ops[0]->dtype, s->ops[0]->op);
    } else {
        for (uint32_t k = 0; k < p->n; k++) {
            const rt_plan_step_t *e = &p->steps[k];
            if (e->fused != UINT32_MAX)
                hccn_rt_fused_data(s->ops[e->rank], e->step, e->fused);
            else
                hccn_rt_step_data(s->ops[e->rank], e->step);
        }
    }
    for (int r = 0; r < size; r++) {
        rt_op_t *op = s->ops[r];
        memset(op->step_state, ST_DONE, op->nsteps);
        op->cursor = op->nsteps;
    }
}

/* Every rank's steps, rank after rank, until all are done (or none can
 * move); recorded in s->rec if set. 1 if all are done. */
static int run_all(rt_slot_t *s, int size)
{
    for (;;) {
        int moved = 0, open = 0;
        for (int r = 0; r < size; r++) {
            rt_op_t *op = s->ops[r];
            moved |= hccn_rt_run_steps(op);
            open |= op->cursor < op->nsteps;
        }
        if (!open)
            return 1;
        if (!moved)
            return 0;
    }
}

/* The driver's pass: every rank's steps on this thread. The owners sleep
 * meanwhile and touch nothing of their operations but the stage; the
 * release of RT_DRIVE_DONE hands the operations back. Any order that
 * respects the dependencies gives the same bytes (a step's operands are
 * fixed by the schedule), and the times come from the engine, as always.
 * The first driver of a schedule tries the steps rank after rank until
 * all are done and records the order in which they moved bytes; later
 * ones follow that order (plan_run). */
static void drive(rt_op_t *me)
{
    rt_slot_t *s = me->slot;
    rt_comm_t *c = me->comm->sh;
    atomic_fetch_add_explicit(&c->cl->ndriven, 1, memory_order_relaxed);
    for (int r = 0; r < c->size; r++)
        s->ops[r]->driven = 1;
    const rt_entry_t *entry;
    int compress, room = 0;
    int keyed = plan_key(s, c->size, &entry, &compress);
    const rt_plan_t *plan =
        keyed ? hccn_rt_plan_find(c, entry, compress, &room) : NULL;
    if (plan != NULL) {
        plan_run(s, c->size, plan);
    } else {
        s->rec = room ? hccn_sim_calloc(1, sizeof(*s->rec)) : NULL;
        if (s->rec != NULL)
            s->rec->compress = compress;
        int all = run_all(s, c->size);
        if (s->rec != NULL && all && !s->rec->failed) {
            hccn_rt_plan_keep(c, entry, s->rec);
        } else if (s->rec != NULL) {
            hccn_sim_free(s->rec->steps);
            hccn_sim_free(s->rec);
        }
        s->rec = NULL;
    }
    /* Stuck with steps open cannot happen for a schedule whose steps pair
     * up; should it, the owners go on from here on their own threads. */
    int devs[c->size];
    hccn_sim_batch_t *bs[c->size];
    for (int r = 0; r < c->size; r++) {
        s->ops[r]->driven = 0;
        s->ops[r]->time_begun = 1;
        devs[r] = c->world[r];
        bs[r] = s->ops[r]->batch;
    }
    /* Every owner is blocked in hccn_rt_op_wait for its operation, held
     * there until RT_DRIVE_DONE: declare their engine waits at once, so
     * that one settling computes the times, then hand the operations back
     * and wake each owner once, to both its bytes and its time. */
    hccn_sim_wait_begin_many(me->ctx->cl->eng, devs, bs, c->size);
    atomic_store_explicit(&s->drive, RT_DRIVE_DONE, memory_order_release);
    hccn_rt_ring_members(c);
}

static int progress_coll(rt_op_t *op)
{
    int moved = 0;
    if (op->stage == RT_STAGE_ARRIVE) {
        if (!hccn_rt_slot_arrive(op))
            return 0;
        op->stage = RT_STAGE_READY;
        moved = 1;
    }
    if (op->stage == RT_STAGE_READY) {
        if (!atomic_load_explicit(&op->slot->ready, memory_order_acquire))
            return moved;
        /* Stream order holds for the bytes too: a collective may read what
         * the previous one on this communicator wrote. */
        if (op->comm->data_seq != op->seq)
            return moved;
        if (op->slot->status != HCCN_OK) {
            op->status = op->slot->status;
            snprintf(op->ctx->errmsg, sizeof(op->ctx->errmsg), "%s",
                     op->slot->msg);
            hccn_rt_coll_finish(op);
            return 1;
        }
        if (op->driver)
            drive(op);
        else if (atomic_load_explicit(&op->slot->drive, memory_order_acquire) ==
                 RT_DRIVE_ON)
            return moved;   /* the driver moves this rank's bytes */
        op->stage = RT_STAGE_RUN;
        moved = 1;
    }
    if (op->stage != RT_STAGE_RUN)
        return moved;
    moved |= hccn_rt_run_steps(op);
    if (op->cursor == op->nsteps) {
        hccn_rt_coll_finish(op);
        moved = 1;
    }
    return moved;
}

static int progress_send(rt_op_t *op)
{
    rt_comm_t *c = op->comm->sh;
    if (op->stage == RT_STAGE_ARRIVE) {
        rt_box_ent_t *e = op->ent;
        if (atomic_load_explicit(&e->state, memory_order_acquire) != 0)
            return 0;
        e->seq = op->pseq;
        e->buf = op->buf;
        e->bytes = op->bytes;
        e->status = HCCN_OK;
        atomic_store_explicit(&e->state, 1, memory_order_release);
        hccn_sim_bell_ring(&c->cl->ctxs[c->world[op->peer]].bell);
        op->stage = RT_STAGE_RUN;
        return 1;
    }
    if (op->stage != RT_STAGE_RUN ||
        atomic_load_explicit(&op->ent->state, memory_order_acquire) != 2)
        return 0;
    op->status = op->ent->status;
    if (op->status != HCCN_OK)
        snprintf(op->ctx->errmsg, sizeof(op->ctx->errmsg),
                 "send #%llu from rank %d to rank %d: %zu bytes sent but the "
                 "matching receive expects a different size",
                 (unsigned long long)op->pseq, op->comm->rank, op->peer,
                 op->bytes);
    atomic_store_explicit(&op->ent->state, 0, memory_order_release);
    op->stage = RT_STAGE_DONE;
    return 1;
}

static int progress_recv(rt_op_t *op)
{
    rt_comm_t *c = op->comm->sh;
    rt_box_ent_t *e = op->ent;
    if (atomic_load_explicit(&e->state, memory_order_acquire) != 1 ||
        e->seq != op->pseq)
        return 0;
    if (e->bytes != op->bytes) {
        op->status = e->status = HCCN_ERR_MISMATCH;
        snprintf(op->ctx->errmsg, sizeof(op->ctx->errmsg),
                 "recv #%llu on rank %d from rank %d: expects %zu bytes but "
                 "the matching send has %zu",
                 (unsigned long long)op->pseq, op->comm->rank, op->peer,
                 op->bytes, e->bytes);
    } else {
        rt_move_t m = {.kind = RT_MOVE_COPY, .dst = op->buf, .a = e->buf,
                       .n = op->bytes};
        hccn_rt_move_run(c->cl, &m, HCCN_UINT8, HCCN_SUM);
    }
    atomic_store_explicit(&e->state, 2, memory_order_release);
    hccn_sim_bell_ring(&c->cl->ctxs[c->world[op->peer]].bell);
    op->stage = RT_STAGE_DONE;
    return 1;
}

int hccn_rt_progress(hccn_ctx_t *ctx)
{
    int moved = 0;
    rt_op_t *op = ctx->ops_head;
    while (op != NULL) {
        rt_op_t *next = op->next;
        switch (op->kind) {
        case RT_OP_COLL:
            moved |= progress_coll(op);
            break;
        case RT_OP_SEND:
            moved |= progress_send(op);
            break;
        case RT_OP_RECV:
            moved |= progress_recv(op);
            break;
        }
        if (op->stage == RT_STAGE_DONE)
            hccn_rt_list_remove(ctx, op);
        op = next;
    }
    return moved;
}

