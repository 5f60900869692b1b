/*
 * The executor's data plane (exec.c): a step runs once its dependencies
 * are done; the receiver pulls (a RECV copies or reduces straight from
 * the sender's published buffer into its own, then marks it consumed);
 * neighbouring steps that read one source are fused into one pass.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>

#include "device_sim/alloc.h"
#include "runtime/kernels.h"
#include "runtime/rt.h"

int hccn_rt_deps_done(const rt_op_t *op, const hccn_sched_rank_t *rk,
                     const hccn_step_t *st)
{
    for (uint32_t k = 0; k < st->ndeps; k++)
        if (op->step_state[rk->deps[st->dep_off + k]] != ST_DONE)
            return 0;
    return 1;
}

/* base + off, without arithmetic on NULL (unused buffers of rooted calls
 * and zero-byte steps may name a NULL buffer). */
static char *buf_at(char *base, uint64_t off)
{
    return base != NULL ? base + off : NULL;
}

/* The wire type of op's compression. */
static int wire_type(const rt_op_t *op)
{
    return op->compress == HCCN_COMPRESS_BF16 ? HCCN_BF16 : HCCN_FP16;
}

/* Where the sender (comm rank peer) of xfer x keeps its bytes, read from
 * the sender's own schedule: an alltoallv or allgatherv schedule knows
 * only its own rank's displacements (hierarchy/coll.h). Schedules of one
 * call share their xfer numbering; should the sender's lack x (ranks that
 * forced different algorithms, a caller's error), the own one is read. */
static const char *peer_src(const rt_op_t *op, int peer, uint32_t x)
{
    const hccn_sched_t *ss = op->slot->scheds[peer];
    if (ss == NULL || x >= ss->nxfers)
        ss = op->sched;
    hccn_sched_ref_t ref = ss->xfer_send[x];
    const hccn_step_t *snd = &ss->ranks[ref.rank].steps[ref.step];
    return buf_at(op->slot->bufs[ref.rank * 3 + snd->src_buf], snd->src_off);
}

/* 1 if the dependencies of st other than step skip are done. */
static int deps_done_but(const rt_op_t *op, const hccn_sched_rank_t *rk,
                         const hccn_step_t *st, uint32_t skip)
{
    for (uint32_t k = 0; k < st->ndeps; k++) {
        uint32_t d = rk->deps[st->dep_off + k];
        if (d != skip && op->step_state[d] != ST_DONE)
            return 0;
    }
    return 1;
}

/* The bytes step i of op's rank moves, uncompressed, as one move: with
 * fused a REDUCE, the one that alone reads receive i's bytes, done in the
 * same pass from the sender's buffer (UINT32_MAX: none). 0 if it moves
 * nothing: a SEND, a zero-byte step, a copy onto itself. */
int hccn_rt_step_move(const rt_op_t *op, uint32_t i, uint32_t fused,
                     rt_move_t *m)
{
    const hccn_step_t *steps = op->sched->ranks[op->comm->rank].steps;
    const hccn_step_t *st = &steps[i];
    size_t esize = hccn_dtype_size(op->dtype);
    char *dst = buf_at(op->bufs[st->dst_buf], st->dst_off);
    char *src = buf_at(op->bufs[st->src_buf], st->src_off);
    if (fused != UINT32_MAX) {
        const hccn_step_t *red = &steps[fused];
        *m = (rt_move_t){.kind = RT_MOVE_REDUCE,
                         .dst = buf_at(op->bufs[red->dst_buf], red->dst_off),
                         .a = peer_src(op, st->peer, st->xfer),
                         .n = red->bytes / esize};
        return 1;
    }
    if (st->bytes == 0)
        return 0;   /* a zero-byte message only synchronises */
    switch (st->kind) {
    case HCCN_STEP_SEND:
        return 0;
    case HCCN_STEP_RECV:
        *m = (rt_move_t){.kind = RT_MOVE_COPY, .dst = dst,
                         .a = peer_src(op, st->peer, st->xfer),
                         .n = st->bytes};
        return 1;
    case HCCN_STEP_RECV_REDUCE:
        *m = (rt_move_t){.kind = RT_MOVE_REDUCE3, .dst = dst, .a = src,
                         .b = peer_src(op, st->peer, st->xfer),
                         .n = st->bytes / esize};
        return 1;
    case HCCN_STEP_COPY:
        *m = (rt_move_t){.kind = RT_MOVE_COPY, .dst = dst, .a = src,
                         .n = st->bytes};
        return dst != src;
    case HCCN_STEP_REDUCE:
        *m = (rt_move_t){.kind = RT_MOVE_REDUCE, .dst = dst, .a = src,
                         .n = st->bytes / esize};
        return 1;
    }
    return 0;
}

/* The bytes of receive i and of REDUCE j, its fuse partner, in one pass
 * from the sender's buffer. */
void hccn_rt_fused_data(rt_op_t *op, uint32_t i, uint32_t j)
{
    rt_move_t m = {0};
    hccn_rt_step_move(op, i, j, &m);
    hccn_rt_move_run(op->ctx->cl, &m, op->dtype, op->op);
}

static void plan_note(rt_op_t *op, uint32_t i, uint32_t fused);

/* Receive step i (its bytes published) and the REDUCE that alone reads
 * them, in one pass from the sender's buffer, when that REDUCE could run
 * right after it anyway; 1 if done so (the REDUCE is then done too). */
static int try_fused(rt_op_t *op, uint32_t i)
{
    /* Made on first use: a driver following a plan never needs it. */
    if (!op->fuse_made && op->sched->scratch_bytes > 0 && !op->compress)
        op->fuse = hccn_rt_fuse_plan(&op->sched->ranks[op->comm->rank]);
    op->fuse_made = 1;
    if (op->fuse == NULL || op->fuse[i] == UINT32_MAX)
        return 0;
    const hccn_sched_rank_t *rk = &op->sched->ranks[op->comm->rank];
    uint32_t j = op->fuse[i];
    const hccn_step_t *red = &rk->steps[j];
    if (op->step_state[j] != ST_IDLE || !deps_done_but(op, rk, red, i))
        return 0;
    hccn_rt_fused_data(op, i, j);
    plan_note(op, i, j);
    op->step_state[j] = ST_DONE;
    return 1;
}

/* The bytes step i moves: a receive's copy or reduction, a COPY, a
 * REDUCE (nothing for a SEND or a zero-byte step). Nothing is checked:
 * the caller knows the step may run. */
void hccn_rt_step_data(rt_op_t *op, uint32_t i)
{
    const hccn_step_t *st = &op->sched->ranks[op->comm->rank].steps[i];
    rt_move_t m = {0};
    if (!op->compress || st->bytes == 0 || st->kind == HCCN_STEP_SEND ||
        st->kind == HCCN_STEP_COPY) {
        if (hccn_rt_step_move(op, i, UINT32_MAX, &m))
            hccn_rt_move_run(op->ctx->cl, &m, op->dtype, op->op);
        return;
    }
    /* Compressed: the wire's bytes are rounded to its type on the way. */
    char *src = buf_at(op->bufs[st->src_buf], st->src_off);
    m = (rt_move_t){.kind = RT_MOVE_WIRE,
                    .dst = buf_at(op->bufs[st->dst_buf], st->dst_off),
                    .n = st->bytes / sizeof(float), .aux = wire_type(op)};
    if (st->kind == HCCN_STEP_REDUCE) {
        m.kind = RT_MOVE_WIRE_REDUCE;
        m.a = src;
    } else {
        m.a = st->kind == HCCN_STEP_RECV ? NULL : src;
        m.b = peer_src(op, st->peer, st->xfer);
    }
    hccn_rt_move_run(op->ctx->cl, &m, op->dtype, op->op);
}

/* Adds step i of op's rank (with the REDUCE fused into it, or UINT32_MAX)
 * to the driver's recording, if one is under way and the step moved
 * bytes. */
static void plan_note(rt_op_t *op, uint32_t i, uint32_t fused)
{
    rt_plan_t *p = op->driven ? op->slot->rec : NULL;
    const hccn_step_t *st = &op->sched->ranks[op->comm->rank].steps[i];
    if (p == NULL || p->failed ||
        (fused == UINT32_MAX && (st->kind == HCCN_STEP_SEND || st->bytes == 0)))
        return;
    if (p->n == p->cap) {
        uint32_t cap = p->cap ? 2 * p->cap : 256;
        rt_plan_step_t *n = hccn_sim_realloc(p->steps, cap * sizeof(*n));
        if (n == NULL) {
            p->failed = 1;
            return;
        }
        p->steps = n;
        p->cap = cap;
    }
    p->steps[p->n++] = (rt_plan_step_t){op->comm->rank, i, fused};
}

/* Tries one step; returns 1 if its state changed. */
static int run_step(rt_op_t *op, uint32_t i)
{
    const hccn_sched_rank_t *rk = &op->sched->ranks[op->comm->rank];
    const hccn_step_t *st = &rk->steps[i];
    rt_slot_t *s = op->slot;
    rt_comm_t *c = op->comm->sh;

    if (op->step_state[i] == ST_IDLE && !hccn_rt_deps_done(op, rk, st))
        return 0;
    switch (st->kind) {
    case HCCN_STEP_SEND:
        if (op->step_state[i] == ST_IDLE) {
            atomic_store_explicit(&s->xstate[st->xfer], 1,
                                  memory_order_release);
            op->step_state[i] = ST_PUBLISHED;
            if (!op->driven)
                hccn_sim_bell_ring(&c->cl->ctxs[c->world[st->peer]].bell);
            return 1;
        }
        if (atomic_load_explicit(&s->xstate[st->xfer], memory_order_acquire) != 2)
            return 0;
        break;
    case HCCN_STEP_RECV:
    case HCCN_STEP_RECV_REDUCE:
        if (atomic_load_explicit(&s->xstate[st->xfer], memory_order_acquire) != 1)
            return 0;
        if (!try_fused(op, i)) {
            hccn_rt_step_data(op, i);
            plan_note(op, i, UINT32_MAX);
        }
        atomic_store_explicit(&s->xstate[st->xfer], 2, memory_order_release);
        if (!op->driven)
            hccn_sim_bell_ring(&c->cl->ctxs[c->world[st->peer]].bell);
        break;
    case HCCN_STEP_COPY:
    case HCCN_STEP_REDUCE:
        hccn_rt_step_data(op, i);
        plan_note(op, i, UINT32_MAX);
        break;
    }
    op->step_state[i] = ST_DONE;
    return 1;
}

/* Rounds the rank's result through the wire type, so that every rank holds
 * what crossed the wire (the owner of a block would otherwise keep extra
 * precision that its peers never saw). */
static void round_result(rt_op_t *op)
{
    rt_move_t m = {.kind = RT_MOVE_ROUND, .dst = op->bufs[HCCN_BUF_RECV],
                   .n = op->out_elems, .aux = wire_type(op)};
    hccn_rt_move_run(op->ctx->cl, &m, HCCN_FP32, HCCN_SUM);
}

void hccn_rt_coll_finish(rt_op_t *op)
{
    op->comm->data_seq = op->seq + 1;
    if (op->status == HCCN_OK && op->compress && op->out_elems > 0)
        round_result(op);
    if (op->op == HCCN_AVG && op->status == HCCN_OK && op->avg_elems > 0 &&
        op->comm->sh->size > 1) {
        rt_move_t m = {.kind = RT_MOVE_AVG, .dst = op->bufs[HCCN_BUF_RECV],
                       .n = op->avg_elems, .aux = op->comm->sh->size};
        hccn_rt_move_run(op->ctx->cl, &m, op->dtype, op->op);
    }
    hccn_rt_slot_leave(op);
    op->stage = RT_STAGE_DONE;
}

/* Runs every step of op that can run now; 1 if any did. */
int hccn_rt_run_steps(rt_op_t *op)
{
    int moved = 0;
    for (uint32_t i = op->cursor; i < op->nsteps; i++)
        if (op->step_state[i] != ST_DONE)
            moved |= run_step(op, i);
    while (op->cursor < op->nsteps && op->step_state[op->cursor] == ST_DONE)
        op->cursor++;
    return moved;
}

