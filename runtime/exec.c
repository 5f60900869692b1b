/*
 * The executor: runs a rank's part of a schedule on real bytes (the data
 * plane) and posts the same steps to the timing engine (the time plane).
 *
 * Data plane. The receiver pulls: a SEND publishes its bytes (xstate 1) once
 * its dependencies are done, the matching RECV copies or reduces straight
 * from the sender's buffer into its own and marks it consumed (xstate 2),
 * and only then is the SEND complete. Nothing is staged. Every rank first
 * registers at the collective's rendezvous slot; bytes move only after all
 * ranks have arrived with matching fingerprints, so a mismatched call never
 * writes into a user buffer.
 *
 * Time plane. Each step becomes one engine task with the same dependencies;
 * the engine decides every simulated time, so the order in which threads
 * move bytes never shows in the results.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>

#include "runtime/kernels.h"
#include "runtime/rt.h"

enum { ST_IDLE, ST_PUBLISHED, ST_DONE };

/* --------------------------------------------------------------- posting */

static void list_append(hccn_ctx_t *ctx, rt_op_t *op)
{
    op->next = NULL;
    op->listed = 1;
    if (ctx->ops_tail != NULL)
        ctx->ops_tail->next = op;
    else
        ctx->ops_head = op;
    ctx->ops_tail = op;
}

static void list_remove(hccn_ctx_t *ctx, rt_op_t *op)
{
    rt_op_t *prev = NULL;
    for (rt_op_t *o = ctx->ops_head; o != NULL; prev = o, o = o->next) {
        if (o != op)
            continue;
        if (prev != NULL)
            prev->next = o->next;
        else
            ctx->ops_head = o->next;
        if (ctx->ops_tail == o)
            ctx->ops_tail = prev;
        break;
    }
    op->listed = 0;
    op->next = NULL;
}

/* The engine tasks of one rank's steps (shared with the timing-only runs
 * of predict.c, so both post the same). A copy onto itself (an in-place
 * call) costs nothing: compared as addresses (bufs: the rank's buffers as
 * integers), no pointer arithmetic on unused NULL buffers. Compressed
 * transfers carry 2-byte values instead of fp32. */
void hccn_rt_rank_tasks(const hccn_sched_rank_t *rk, const hccn_sim_npu_t *npu,
                        const int *world, const uintptr_t bufs[3],
                        int compress, uint64_t uid, uint64_t seq,
                        hccn_sim_task_t *tasks)
{
    for (uint32_t i = 0; i < rk->nsteps; i++) {
        const hccn_step_t *st = &rk->steps[i];
        hccn_sim_task_t *t = &tasks[i];
        hccn_sched_step_task(st, npu, world, t);
        if (st->kind == HCCN_STEP_COPY &&
            bufs[st->src_buf] + st->src_off == bufs[st->dst_buf] + st->dst_off)
            t->cost = 0.0;
        if (t->kind != HCCN_SIM_TASK_LOCAL) {
            if (compress)
                t->bytes = st->bytes / 2;
            t->key = (hccn_sim_key_t){uid, seq, st->xfer};
        }
    }
}

/* The rank's part kept with pick if it was made for op's schedule and
 * buffers, its keys set for op; else NULL. */
static rt_part_t *part_reuse(const rt_op_t *op, rt_pick_t *pick,
                             const uintptr_t bufs[3])
{
    if (pick == NULL || pick->sched != op->sched)
        return NULL;
    rt_part_t *p = &pick->part;
    if (p->tasks == NULL || p->compress != op->compress ||
        memcmp(p->bufs, bufs, sizeof(p->bufs)) != 0)
        return NULL;
    for (uint32_t i = 0; i < p->ntasks; i++)
        if (p->tasks[i].kind != HCCN_SIM_TASK_LOCAL)
            p->tasks[i].key.b = op->seq;
    return p;
}

/* Keeps tasks (made for op) with pick, in place of what it kept; NULL if
 * there is nowhere to keep them (the caller frees them). */
static rt_part_t *part_keep(const rt_op_t *op, rt_pick_t *pick,
                            const uintptr_t bufs[3], hccn_sim_task_t *tasks)
{
    if (pick == NULL || pick->sched != op->sched)
        return NULL;
    rt_part_t *p = &pick->part;
    free(p->tasks);
    *p = (rt_part_t){.tasks = tasks, .ntasks = op->nsteps,
                     .compress = op->compress};
    memcpy(p->bufs, bufs, sizeof(p->bufs));
    return p;
}

/* Posts op's steps to the engine. A blocking call on the whole cluster,
 * with nothing else of its rank in flight, is posted sole: the rank posts
 * nothing more before it completes (lets the engine replay a repeated
 * call, device_sim/replay.c). The tasks are kept with the selection's
 * entry (pick, may be NULL) for the next call with the same buffers. */
static hccn_status_t post_steps(rt_op_t *op, rt_pick_t *pick, int blocking)
{
    hccn_comm_t *comm = op->comm;
    rt_comm_t *c = comm->sh;
    hccn_cluster_t *cl = op->ctx->cl;
    const hccn_sched_rank_t *rk = &op->sched->ranks[comm->rank];
    const uintptr_t bufs[3] = {(uintptr_t)op->bufs[0], (uintptr_t)op->bufs[1],
                               (uintptr_t)op->bufs[2]};
    rt_part_t *part = part_reuse(op, pick, bufs);
    hccn_sim_task_t *tasks = part != NULL ? part->tasks : NULL;
    if (tasks == NULL) {
        tasks = malloc((rk->nsteps + 1) * sizeof(*tasks));
        if (tasks == NULL)
            return HCCN_ERR_NOMEM;
        hccn_rt_rank_tasks(rk, &cl->topo->npus[op->ctx->rank], c->world,
                           bufs, op->compress, c->uid, op->seq, tasks);
        part = part_keep(op, pick, bufs, tasks);
    }
    /* Every rank's part of a collective starts at the same simulated time:
     * when the last rank has called it. */
    hccn_sim_key_t join = {c->uid, op->seq, UINT64_MAX};
    int sole = blocking && op->ctx->group_depth == 0 &&
               op->ctx->inflight == 0 && c->size == cl->nranks;
    op->batch = hccn_sim_post_hinted(cl->eng, op->ctx->rank, tasks,
                                     (int)rk->nsteps, rk->deps,
                                     comm->stream_tail, join, c->size, sole,
                                     part != NULL ? &part->hint : NULL);
    if (part == NULL)
        free(tasks);
    if (op->batch == NULL)
        return HCCN_ERR_NOMEM;
    if (comm->stream_tail != NULL)
        hccn_sim_batch_release(cl->eng, comm->stream_tail);
    hccn_sim_batch_retain(cl->eng, op->batch);
    comm->stream_tail = op->batch;
    return HCCN_OK;
}

/* Bytes a rank's steps copy or reduce (what a driven run would move for
 * it on the driver's thread). */
static uint64_t rank_moves(const hccn_sched_rank_t *rk)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < rk->nsteps; i++)
        if (rk->steps[i].kind != HCCN_STEP_SEND)
            n += rk->steps[i].bytes;
    return n;
}

/* Gives op a SCRATCH buffer of at least bytes: the handle's spare one if
 * it is large enough (no fresh pages to fault in on every call), else a new
 * one. op->scratch stays NULL on no memory. */
static void scratch_take(rt_op_t *op, size_t bytes)
{
    hccn_comm_t *comm = op->comm;
    if (comm->scratch != NULL && comm->scratch_bytes >= bytes) {
        op->scratch = comm->scratch;
        op->scratch_len = comm->scratch_bytes;
        comm->scratch = NULL;
        return;
    }
    op->scratch = malloc(bytes);
    op->scratch_len = bytes;
}

/* Keeps op's SCRATCH as the handle's spare (the larger of the two). */
static void scratch_give_back(rt_op_t *op)
{
    hccn_comm_t *comm = op->comm;
    if (op->scratch == NULL || comm == NULL) {
        free(op->scratch);
    } else if (comm->scratch == NULL || comm->scratch_bytes < op->scratch_len) {
        free(comm->scratch);
        comm->scratch = op->scratch;
        comm->scratch_bytes = op->scratch_len;
    } else {
        free(op->scratch);
    }
    op->scratch = NULL;
}

hccn_status_t hccn_rt_coll_post(hccn_comm_t *comm, const hccn_coll_args_t *a,
                                const hccn_algo_t *algo,
                                const rt_coll_call_t *call, rt_op_t **out)
{
    hccn_ctx_t *ctx = comm->ctx;
    const char *name = hccn_rt_fp_name(call->fp_kind);
    rt_op_t *op = calloc(1, sizeof(*op));
    if (op == NULL) {
        free(call->vmem);
        return hccn_rt_error(HCCN_ERR_NOMEM, "%s: rank %d: out of memory",
                             name, ctx->rank);
    }
    op->kind = RT_OP_COLL;
    op->vmem = call->vmem;
    op->ctx = ctx;
    op->comm = comm;
    op->dtype = call->dtype;
    op->op = call->op;
    op->compress = call->compress;
    op->avg_elems = call->avg_elems;
    op->out_elems = call->out_elems;
    op->fp = (rt_fp_t){.coll = call->fp_kind,
                       .count = a->count ^ call->fp_extra,
                       .dtype = call->dtype, .op = call->op, .root = a->root,
                       .vsend = call->vsend, .vrecv = call->vrecv,
                       .vhash = call->vhash};
    if (hccn_coll_is_v(a->coll))
        op->fp.count = call->fp_extra;
    op->count = a->count;
    op->sched = call->pick != NULL ? call->pick->sched : NULL;
    if (op->sched == NULL)
        op->sched = hccn_rt_comm_sched(comm->sh, a, algo, &op->sched_owned);
    if (op->sched == NULL) {
        free(op->vmem);
        free(op);
        return HCCN_ERR_UNSUPPORTED;
    }
    op->fp.compress = call->compress;
    op->fp.algo = op->sched->algo;
    const hccn_sched_rank_t *rk = &op->sched->ranks[comm->rank];
    rt_pick_t *pick = op->sched_owned ? NULL : call->pick;
    if (pick != NULL && pick->sched != op->sched) {
        pick->sched = op->sched;
        pick->moves = rank_moves(rk);
    }
    op->nsteps = rk->nsteps;
    op->moves = pick != NULL ? pick->moves : rank_moves(rk);
    op->step_state = calloc(op->nsteps + 1, 1);
    if (op->sched->scratch_bytes > 0)
        scratch_take(op, op->sched->scratch_bytes);
    op->bufs[HCCN_BUF_SEND] = (char *)call->sendbuf;
    op->bufs[HCCN_BUF_RECV] = call->recvbuf;
    op->bufs[HCCN_BUF_SCRATCH] = op->scratch;
    if (op->step_state == NULL ||
        (op->sched->scratch_bytes > 0 && op->scratch == NULL)) {
        op->waited = 1;   /* never counted as pending */
        hccn_rt_op_free(op);
        return hccn_rt_error(HCCN_ERR_NOMEM, "%s: rank %d: out of memory",
                             name, ctx->rank);
    }
    op->seq = comm->coll_seq++;
    hccn_status_t rc = post_steps(op, call->pick, call->blocking);
    if (rc != HCCN_OK) {
        op->waited = 1;   /* never counted as pending */
        hccn_rt_op_free(op);
        return hccn_rt_error(rc, "%s: rank %d: out of memory", name,
                             ctx->rank);
    }
    op->t_call = hccn_sim_batch_posted(op->batch);
    list_append(ctx, op);
    comm->pending++;
    ctx->inflight++;
    *out = op;
    return HCCN_OK;
}

hccn_status_t hccn_rt_p2p_post(hccn_comm_t *comm, int is_send, void *buf,
                               size_t bytes, int peer, rt_op_t **out)
{
    hccn_ctx_t *ctx = comm->ctx;
    rt_comm_t *c = comm->sh;
    rt_op_t *op = calloc(1, sizeof(*op));
    if (op == NULL)
        return hccn_rt_error(HCCN_ERR_NOMEM, "%s: rank %d: out of memory",
                             is_send ? "send" : "recv", ctx->rank);
    op->kind = is_send ? RT_OP_SEND : RT_OP_RECV;
    op->ctx = ctx;
    op->comm = comm;
    op->peer = peer;
    op->buf = buf;
    op->bytes = bytes;
    int src = is_send ? comm->rank : peer, dst = is_send ? peer : comm->rank;
    op->ent = hccn_rt_pair_next(c, src, dst, is_send, &op->pseq);
    if (op->ent == NULL) {
        free(op);
        return hccn_rt_error(HCCN_ERR_NOMEM, "%s: rank %d: out of memory",
                             is_send ? "send" : "recv", ctx->rank);
    }
    hccn_sim_task_t t = {
        .kind = is_send ? HCCN_SIM_TASK_SEND : HCCN_SIM_TASK_RECV,
        .peer = c->world[peer],
        .bytes = bytes,
        .key = {c->uid | (1ULL << 63), ((uint64_t)src << 32) | (uint32_t)dst,
                op->pseq}};
    op->batch = hccn_sim_post(ctx->cl->eng, ctx->rank, &t, 1, NULL, NULL);
    if (op->batch == NULL) {
        free(op);
        return hccn_rt_error(HCCN_ERR_NOMEM, "%s: rank %d: out of memory",
                             is_send ? "send" : "recv", ctx->rank);
    }
    op->t_call = hccn_sim_batch_posted(op->batch);
    list_append(ctx, op);
    comm->pending++;
    ctx->inflight++;
    *out = op;
    return HCCN_OK;
}

/* ------------------------------------------------------- rendezvous slots */

static void ring_members(rt_comm_t *c)
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
    s->xstate = calloc(s->nxfers + 1, sizeof(*s->xstate));
    if (s->xstate == NULL) {
        s->status = HCCN_ERR_NOMEM;
        snprintf(s->msg, sizeof(s->msg), "out of memory at a rendezvous");
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
static int slot_arrive(rt_op_t *op)
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
        ring_members(c);
    return 1;
}

static void slot_leave(rt_op_t *op)
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
        ring_members(c);
}

/* ------------------------------------------------------------ data plane */

static int deps_done(const rt_op_t *op, const hccn_sched_rank_t *rk,
                     const hccn_step_t *st)
{
    for (uint32_t k = 0; k < st->ndeps; k++)
        if (op->step_state[rk->deps[st->dep_off + k]] != ST_DONE)
            return 0;
    return 1;
}

static hccn_redop_t kernel_op(hccn_redop_t op)
{
    return op == HCCN_AVG ? HCCN_SUM : op;
}

/* base + off, without arithmetic on NULL (unused buffers of rooted calls
 * and zero-byte steps may name a NULL buffer). */
static char *buf_at(char *base, uint64_t off)
{
    return base != NULL ? base + off : NULL;
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

/* Rounds n fp32 values through the wire type, in place. */
static void round_wire(const rt_op_t *op, float *buf, size_t n)
{
    hccn_dtype_t wt = op->compress == HCCN_COMPRESS_BF16 ? HCCN_BF16 : HCCN_FP16;
    uint16_t wire[2048];
    for (size_t i = 0; i < n; i += 2048) {
        size_t k = n - i < 2048 ? n - i : 2048;
        hccn_rt_fp32_to_half_array(wire, buf + i, k, wt);
        hccn_rt_half_to_fp32_array(buf + i, wire, k, wt);
    }
}

/* Receives n fp32 values that crossed the wire as fp16/bf16: each incoming
 * value is rounded to the wire type, then stored (local == NULL) or reduced
 * in fp32 with the local operand, itself rounded to the wire type first.
 * The result is rounded too. Every operand and result of a reduction is
 * then a wire-type value, so partial results cross later hops exactly and
 * two ranks that combine the same values (recursive doubling, composite
 * algorithms) get the same bits. */
static void recv_compressed(rt_op_t *op, float *dst, const float *local,
                            const float *in, size_t n)
{
    enum { BLOCK = 2048 };
    uint16_t wire[BLOCK];
    float val[BLOCK], mine[BLOCK];
    hccn_dtype_t wt = op->compress == HCCN_COMPRESS_BF16 ? HCCN_BF16 : HCCN_FP16;
    for (size_t i = 0; i < n; i += BLOCK) {
        size_t k = n - i < BLOCK ? n - i : BLOCK;
        hccn_rt_fp32_to_half_array(wire, in + i, k, wt);
        if (local == NULL) {
            hccn_rt_half_to_fp32_array(dst + i, wire, k, wt);
            continue;
        }
        hccn_rt_half_to_fp32_array(val, wire, k, wt);
        memcpy(mine, local + i, k * sizeof(float));
        round_wire(op, mine, k);
        hccn_rt_reduce3(dst + i, mine, val, k, HCCN_FP32,
                        op->op == HCCN_AVG ? HCCN_SUM : op->op);
        round_wire(op, dst + i, k);
    }
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
static int step_move(const rt_op_t *op, uint32_t i, uint32_t fused,
                     rt_move_t *m)
{
    const hccn_step_t *steps = op->sched->ranks[op->comm->rank].steps;
    const hccn_step_t *st = &steps[i];
    size_t esize = hccn_dtype_size(op->dtype);
    char *dst = buf_at(op->bufs[st->dst_buf], st->dst_off);
    char *src = buf_at(op->bufs[st->src_buf], st->src_off);
    if (fused != UINT32_MAX) {
        const hccn_step_t *red = &steps[fused];
        *m = (rt_move_t){RT_MOVE_REDUCE,
                         buf_at(op->bufs[red->dst_buf], red->dst_off),
                         peer_src(op, st->peer, st->xfer), NULL,
                         red->bytes / esize};
        return 1;
    }
    if (st->bytes == 0)
        return 0;   /* a zero-byte message only synchronises */
    switch (st->kind) {
    case HCCN_STEP_SEND:
        return 0;
    case HCCN_STEP_RECV:
        *m = (rt_move_t){RT_MOVE_COPY, dst, peer_src(op, st->peer, st->xfer),
                         NULL, st->bytes};
        return 1;
    case HCCN_STEP_RECV_REDUCE:
        *m = (rt_move_t){RT_MOVE_REDUCE3, dst, src,
                         peer_src(op, st->peer, st->xfer), st->bytes / esize};
        return 1;
    case HCCN_STEP_COPY:
        *m = (rt_move_t){RT_MOVE_COPY, dst, src, NULL, st->bytes};
        return dst != src;
    case HCCN_STEP_REDUCE:
        *m = (rt_move_t){RT_MOVE_REDUCE, dst, src, NULL, st->bytes / esize};
        return 1;
    }
    return 0;
}

/* Moves m's bytes (elements of type dt, combined with op). */
static void move_run(const rt_move_t *m, hccn_dtype_t dt, hccn_redop_t op)
{
    if (m->kind == RT_MOVE_COPY)
        memmove(m->dst, m->a, m->n);
    else if (m->kind == RT_MOVE_REDUCE)
        hccn_rt_reduce(m->dst, m->a, m->n, dt, kernel_op(op));
    else
        hccn_rt_reduce3(m->dst, m->a, m->b, m->n, dt, kernel_op(op));
}

/* The bytes of receive i and of REDUCE j, its fuse partner, in one pass
 * from the sender's buffer. */
static void fused_data(rt_op_t *op, uint32_t i, uint32_t j)
{
    rt_move_t m;
    step_move(op, i, j, &m);
    move_run(&m, op->dtype, op->op);
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
    fused_data(op, i, j);
    plan_note(op, i, j);
    op->step_state[j] = ST_DONE;
    return 1;
}

/* The bytes step i moves: a receive's copy or reduction, a COPY, a
 * REDUCE (nothing for a SEND or a zero-byte step). Nothing is checked:
 * the caller knows the step may run. */
static void step_data(rt_op_t *op, uint32_t i)
{
    const hccn_step_t *st = &op->sched->ranks[op->comm->rank].steps[i];
    rt_move_t m;
    if (!op->compress || st->bytes == 0 || st->kind == HCCN_STEP_SEND ||
        st->kind == HCCN_STEP_COPY) {
        if (step_move(op, i, UINT32_MAX, &m))
            move_run(&m, op->dtype, op->op);
        return;
    }
    /* Compressed: the wire's bytes are rounded to its type on the way. */
    float *dst = (float *)buf_at(op->bufs[st->dst_buf], st->dst_off);
    const float *src = (const float *)buf_at(op->bufs[st->src_buf],
                                             st->src_off);
    size_t n = st->bytes / sizeof(float);
    if (st->kind == HCCN_STEP_REDUCE) {
        round_wire(op, dst, n);
        hccn_rt_reduce(dst, src, n, op->dtype, kernel_op(op->op));
        round_wire(op, dst, n);
        return;
    }
    recv_compressed(op, dst, st->kind == HCCN_STEP_RECV ? NULL : src,
                    (const float *)peer_src(op, st->peer, st->xfer), n);
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
        rt_plan_step_t *n = realloc(p->steps, cap * sizeof(*n));
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

    if (op->step_state[i] == ST_IDLE && !deps_done(op, rk, st))
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
            step_data(op, i);
            plan_note(op, i, UINT32_MAX);
        }
        atomic_store_explicit(&s->xstate[st->xfer], 2, memory_order_release);
        if (!op->driven)
            hccn_sim_bell_ring(&c->cl->ctxs[c->world[st->peer]].bell);
        break;
    case HCCN_STEP_COPY:
    case HCCN_STEP_REDUCE:
        step_data(op, i);
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
    round_wire(op, (float *)op->bufs[HCCN_BUF_RECV], op->out_elems);
}

static void coll_finish(rt_op_t *op)
{
    op->comm->data_seq = op->seq + 1;
    if (op->status == HCCN_OK && op->compress && op->out_elems > 0)
        round_result(op);
    if (op->op == HCCN_AVG && op->status == HCCN_OK && op->avg_elems > 0)
        hccn_rt_avg_finish(op->bufs[HCCN_BUF_RECV], op->avg_elems, op->dtype,
                           op->comm->sh->size);
    slot_leave(op);
    op->stage = RT_STAGE_DONE;
}

/* Runs every step of op that can run now; 1 if any did. */
static int run_steps(rt_op_t *op)
{
    int moved = 0;
    for (uint32_t i = op->cursor; i < op->nsteps; i++)
        if (op->step_state[i] != ST_DONE)
            moved |= run_step(op, i);
    while (op->cursor < op->nsteps && op->step_state[op->cursor] == ST_DONE)
        op->cursor++;
    return moved;
}

/* Plans (rt_plan_t) are kept per communicator for up to this many
 * schedules; beyond, calls are driven step by step as before. */
#define RT_PLANS_MAX 32

/* The schedule every rank of slot s runs and its compression, when a plan
 * can describe the call: one schedule for all (a cached one: its address
 * stays its own) and one compression (a plan made without it may fuse
 * receives with reductions, which a compressed call must not: its bytes
 * are rounded on the way). 0 if not. */
static int plan_key(const rt_slot_t *s, int size, const hccn_sched_t **sched,
                    int *compress)
{
    *sched = s->ops[0]->sched;
    *compress = s->ops[0]->compress;
    for (int r = 0; r < size; r++)
        if (s->ops[r]->sched != *sched || s->ops[r]->sched_owned ||
            s->ops[r]->compress != *compress)
            return 0;
    return 1;
}

/* The plan kept for sched and compress, or NULL; *room: whether another
 * could be kept (else a recording would be made in vain). */
static const rt_plan_t *plan_find(rt_comm_t *c, const hccn_sched_t *sched,
                                  int compress, int *room)
{
    pthread_mutex_lock(&c->lock);
    const rt_plan_t *p = c->plans;
    while (p != NULL && (p->sched != sched || p->compress != compress))
        p = p->next;
    *room = c->nplans < RT_PLANS_MAX;
    pthread_mutex_unlock(&c->lock);
    return p;
}

/* Keeps a complete recording (plans are never changed or dropped before
 * the communicator is freed, so a driver may read one without a lock);
 * frees it if the table filled meanwhile. */
static void plan_keep(rt_comm_t *c, rt_plan_t *p)
{
    pthread_mutex_lock(&c->lock);
    if (c->nplans < RT_PLANS_MAX) {
        p->next = c->plans;
        c->plans = p;
        c->nplans++;
        p = NULL;
    }
    pthread_mutex_unlock(&c->lock);
    if (p != NULL) {
        free(p->steps);
        free(p);
    }
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
    if (mv->bufs == NULL && (mv->bufs = malloc(nb * sizeof(*mv->bufs))) == NULL)
        return NULL;
    rt_move_t *m = realloc(mv->moves, (p->n + 1) * sizeof(*m));
    if (m == NULL)
        return NULL;
    mv->moves = m;
    mv->n = 0;
    for (uint32_t k = 0; k < p->n; k++) {
        const rt_plan_step_t *e = &p->steps[k];
        mv->n += (uint32_t)step_move(s->ops[e->rank], e->step, e->fused,
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
            move_run(&mv->moves[k], s->ops[0]->dtype, s->ops[0]->op);
    } else {
        for (uint32_t k = 0; k < p->n; k++) {
            const rt_plan_step_t *e = &p->steps[k];
            if (e->fused != UINT32_MAX)
                fused_data(s->ops[e->rank], e->step, e->fused);
            else
                step_data(s->ops[e->rank], e->step);
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
            moved |= run_steps(op);
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
    const hccn_sched_t *sched;
    int compress, room = 0;
    int keyed = plan_key(s, c->size, &sched, &compress);
    const rt_plan_t *plan = keyed ? plan_find(c, sched, compress, &room)
                                  : NULL;
    if (plan != NULL) {
        plan_run(s, c->size, plan);
    } else {
        s->rec = room ? calloc(1, sizeof(*s->rec)) : NULL;
        if (s->rec != NULL) {
            s->rec->sched = sched;
            s->rec->compress = compress;
        }
        int all = run_all(s, c->size);
        if (s->rec != NULL && all && !s->rec->failed) {
            plan_keep(c, s->rec);
        } else if (s->rec != NULL) {
            free(s->rec->steps);
            free(s->rec);
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
    ring_members(c);
}

static int progress_coll(rt_op_t *op)
{
    int moved = 0;
    if (op->stage == RT_STAGE_ARRIVE) {
        if (!slot_arrive(op))
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
            coll_finish(op);
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
    moved |= run_steps(op);
    if (op->cursor == op->nsteps) {
        coll_finish(op);
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
        memcpy(op->buf, e->buf, op->bytes);
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
            list_remove(ctx, op);
        op = next;
    }
    return moved;
}

/* --------------------------------------------------------------- waiting */

static const char *op_name(const rt_op_t *op)
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
        if (op->step_state[i] == ST_DONE || !deps_done(op, rk, st))
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
                             ctx->rank, op_name(op));
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
            list_remove(ctx, op);
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
            list_remove(ctx, op);       /* its bytes will never move */
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
        list_remove(op->ctx, op);
    if (!op->waited && op->comm != NULL) {
        op->comm->pending--;   /* completed through hccn_test */
        op->ctx->inflight--;
    }
    if (op->batch != NULL)
        hccn_sim_batch_release(op->ctx->cl->eng, op->batch);
    if (op->sched_owned)
        hccn_sched_free((hccn_sched_t *)op->sched);
    free(op->vmem);
    scratch_give_back(op);
    free(op->step_state);
    free(op->fuse);
    free(op);
}

void hccn_rt_drain(hccn_ctx_t *ctx)
{
    while (ctx->ops_head != NULL) {
        rt_op_t *op = ctx->ops_head;
        if ((data_wait(op) != HCCN_OK || op->stage != RT_STAGE_DONE) &&
            op->listed)
            list_remove(ctx, op);
    }
}
