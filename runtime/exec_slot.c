/*
 * The executor's rendezvous (exec.c): every rank of a collective first
 * registers its operation at the communicator's slot for the call's
 * sequence number; the last to arrive checks the fingerprints of all, so
 * that bytes move only once every rank has arrived with a matching call,
 * and a mismatch is reported to all without touching a user buffer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>

#include "device_sim/alloc.h"
#include "runtime/kernels.h"
#include "runtime/rt.h"

void hccn_rt_ring_members(rt_comm_t *c)
{
    for (int r = 0; r < c->size; r++)
        hccn_sim_bell_ring(&c->cl->ctxs[c->world[r]].bell);
}

/* Called with the lock held once every rank has arrived. */
static void slot_check(rt_comm_t *c, rt_slot_t *s)
{
    if (hccn_rt_fp_check(c, s) != 0) {
        s->status = HCCN_ERR_MISMATCH;   /* slot_arrive breaks the comm */
        return;
    }
    s->xstate = hccn_sim_calloc(s->nxfers + 1, sizeof(*s->xstate));
    if (s->xstate == NULL) {
        s->status = HCCN_ERR_NOMEM;
        snprintf(s->msg, sizeof(s->msg), "at the rendezvous: %s",
                 hccn_sim_fail_msg());
    }
}

int hccn_rt_op_small(const rt_op_t *op)
{
    uint64_t limit = op->ctx->cl->drive_bytes;
    return op->kind == RT_OP_COLL && limit > 0 && op->moves <= limit;
}

/* Whether op may be driven: its thread is blocked waiting for it (so the
 * driver may declare that thread's engine wait too), it is small, and this
 * rank's previous collectives on the communicator have moved all their
 * bytes (nothing of this rank's but op is left to order its bytes
 * against; data_seq changes only when op itself finishes). */
static int drivable(const rt_op_t *op)
{
    return op->in_wait && hccn_rt_op_small(op) &&
           op->comm->data_seq == op->seq;
}

/* Registers op at its slot; 0 if the slot is still busy with an older
 * collective (this rank is RT_SLOTS collectives ahead). */
int hccn_rt_slot_arrive(rt_op_t *op)
{
    rt_comm_t *c = op->comm->sh;
    rt_slot_t *s = &c->slots[op->seq % RT_SLOTS];
    int r = op->comm->rank;
    pthread_mutex_lock(&c->lock);
    if (s->in_use && s->seq != op->seq) {
        s->refused = 1;   /* slot_leave rings when the slot frees */
        pthread_mutex_unlock(&c->lock);
        return 0;
    }
    if (!s->in_use) {
        s->in_use = 1;
        s->seq = op->seq;
    }
    s->fp[r] = op->fp;
    s->here[r] = 1;
    for (int k = 0; k < 3; k++)
        s->bufs[r * 3 + k] = op->bufs[k];
    s->scheds[r] = op->sched;
    s->ops[r] = op;
    op->slot = s;
    s->ndrivable += drivable(op);
    if (op->sched->nxfers > s->nxfers)
        s->nxfers = op->sched->nxfers;
    int all = ++s->arrived == c->size;
    if (all)
        slot_check(c, s);
    /* Broken before any rank sees the slot ready: a rank that returns the
     * mismatch and calls again must find the communicator broken. */
    if (all && s->status == HCCN_ERR_MISMATCH)
        hccn_rt_comm_break_locked(c, HCCN_ERR_MISMATCH, s->msg);
    if (all && s->status == HCCN_OK && s->ndrivable == c->size && c->size > 1) {
        atomic_store_explicit(&s->drive, RT_DRIVE_ON, memory_order_relaxed);
        op->driver = 1;
    }
    if (all)
        atomic_store_explicit(&s->ready, 1, memory_order_release);
    pthread_mutex_unlock(&c->lock);
    if (all && !op->driver)
        hccn_rt_ring_members(c);
    return 1;
}

void hccn_rt_slot_leave(rt_op_t *op)
{
    rt_comm_t *c = op->comm->sh;
    rt_slot_t *s = op->slot;
    int refused;
    op->slot = NULL;
    /* The slot is cleared by the last to leave: until then no one may
     * take it, and the others need not lock. */
    if (atomic_fetch_add(&s->finished, 1) + 1 < c->size)
        return;
    pthread_mutex_lock(&c->lock);
    refused = s->refused;
    hccn_rt_slot_clear(c, s);
    pthread_mutex_unlock(&c->lock);
    /* Only a rank that found the slot busy waits for it to free. */
    if (refused)
        hccn_rt_ring_members(c);
}

