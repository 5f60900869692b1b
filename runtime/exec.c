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
 *
 * This file posts: hccn_rt_coll_post is the one way a schedule is put to
 * work with data (collectives and v-collectives, blocking, in groups or as
 * futures, the split's exchange, and their replays all come through it;
 * timing-only runs post from runtime/predict.c), and point-to-point
 * operations are posted beside it. The rendezvous is in
 * exec_slot.c, the data plane in exec_data.c, driving and progress in
 * exec_drive.c, waiting and completion in exec_wait.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>

#include "device_sim/alloc.h"
#include "runtime/kernels.h"
#include "runtime/rt.h"

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

void hccn_rt_list_remove(hccn_ctx_t *ctx, rt_op_t *op)
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
    if (pick == NULL || pick->entry == NULL || pick->entry != op->entry)
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
    if (pick == NULL || pick->entry == NULL || pick->entry != op->entry)
        return NULL;
    rt_part_t *p = &pick->part;
    hccn_sim_free(p->tasks);
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
        tasks = hccn_sim_malloc((rk->nsteps + 1) * sizeof(*tasks));
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
    hccn_sim_call_t call = hccn_hier_sched_call(op->sched);
    op->batch = hccn_sim_post_hinted(cl->eng, op->ctx->rank, tasks,
                                     (int)rk->nsteps, rk->deps,
                                     comm->stream_tail, join, c->size, sole,
                                     part != NULL ? &part->hint : NULL,
                                     &call);
    if (part == NULL)
        hccn_sim_free(tasks);
    if (op->batch == NULL)   /* the engine recorded why */
        return hccn_sim_failed("posting a collective's steps");
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
    op->scratch = hccn_rt_scratch_alloc(op->ctx->cl, op->ctx->rank, bytes);
    op->scratch_len = bytes;
}

/* Keeps op's SCRATCH as the handle's spare (the larger of the two). */
void hccn_rt_scratch_give_back(rt_op_t *op)
{
    hccn_comm_t *comm = op->comm;
    hccn_cluster_t *cl = op->ctx->cl;
    int r = op->ctx->rank;
    if (op->scratch == NULL || comm == NULL) {
        hccn_rt_scratch_free(cl, r, op->scratch);
    } else if (comm->scratch == NULL || comm->scratch_bytes < op->scratch_len) {
        hccn_rt_scratch_free(cl, r, comm->scratch);
        comm->scratch = op->scratch;
        comm->scratch_bytes = op->scratch_len;
    } else {
        hccn_rt_scratch_free(cl, r, op->scratch);
    }
    op->scratch = NULL;
}

/* A rank that could not post an operation on comm for want of memory
 * breaks comm with that error: its peers may be in the operation already,
 * and its next calls on comm would pair with the wrong ones of theirs. */
static hccn_status_t post_failed(hccn_comm_t *comm, hccn_status_t rc)
{
    if (rc == HCCN_ERR_NOMEM)
        hccn_rt_comm_break(comm->sh, rc, hccn_sim_fail_msg());
    return rc;
}

hccn_status_t hccn_rt_coll_post(hccn_comm_t *comm, const hccn_coll_args_t *a,
                                const hccn_algo_t *algo,
                                const rt_coll_call_t *call, rt_op_t **out)
{
    hccn_ctx_t *ctx = comm->ctx;
    const char *name = hccn_rt_fp_name(call->fp_kind);
    rt_op_t *op = hccn_sim_calloc(1, sizeof(*op));
    if (op == NULL) {
        hccn_sim_free(call->vmem);
        return post_failed(comm, hccn_sim_fail_context("%s: rank %d",
                             name, ctx->rank));
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
    /* The rank's pick brings the entry; else the communicator's cache. */
    op->entry = call->pick != NULL ? call->pick->entry : NULL;
    hccn_sched_t *own = NULL;
    if (op->entry == NULL)
        op->entry = hccn_rt_plan_entry(comm->sh, a, algo, &own);
    op->sched = op->entry != NULL ? op->entry->sched : own;
    op->sched_owned = own != NULL;
    if (op->sched == NULL) {
        hccn_sim_free(op->vmem);
        hccn_sim_free(op);
        return post_failed(comm, hccn_sim_fail_context("%s: rank %d", name,
                                                       ctx->rank));
    }
    op->fp.compress = call->compress;
    op->fp.algo = op->sched->algo;
    const hccn_sched_rank_t *rk = &op->sched->ranks[comm->rank];
    rt_pick_t *pick = op->sched_owned ? NULL : call->pick;
    if (pick != NULL && pick->entry != op->entry) {
        pick->entry = op->entry;
        pick->moves = rank_moves(rk);
    }
    op->nsteps = rk->nsteps;
    op->moves = pick != NULL ? pick->moves : rank_moves(rk);
    op->step_state = hccn_sim_calloc(op->nsteps + 1, 1);
    if (op->sched->scratch_bytes > 0)
        scratch_take(op, op->sched->scratch_bytes);
    op->bufs[HCCN_BUF_SEND] = (char *)call->sendbuf;
    op->bufs[HCCN_BUF_RECV] = call->recvbuf;
    op->bufs[HCCN_BUF_SCRATCH] = op->scratch;
    if (op->step_state == NULL ||
        (op->sched->scratch_bytes > 0 && op->scratch == NULL)) {
        op->waited = 1;   /* never counted as pending */
        hccn_rt_op_free(op);
        return post_failed(comm, hccn_sim_fail_context("%s: rank %d",
                             name, ctx->rank));
    }
    op->seq = comm->coll_seq++;
    hccn_status_t rc = post_steps(op, call->pick, call->blocking);
    if (rc != HCCN_OK) {
        op->waited = 1;   /* never counted as pending */
        hccn_rt_op_free(op);
        return post_failed(comm, hccn_sim_fail_context("%s: rank %d", name,
                             ctx->rank));
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
    rt_op_t *op = hccn_sim_calloc(1, sizeof(*op));
    if (op == NULL)
        return post_failed(comm, hccn_sim_fail_context("%s: rank %d",
                             is_send ? "send" : "recv", ctx->rank));
    op->kind = is_send ? RT_OP_SEND : RT_OP_RECV;
    op->ctx = ctx;
    op->comm = comm;
    op->peer = peer;
    op->buf = buf;
    op->bytes = bytes;
    int src = is_send ? comm->rank : peer, dst = is_send ? peer : comm->rank;
    op->ent = hccn_rt_pair_next(c, src, dst, is_send, &op->pseq);
    if (op->ent == NULL) {
        hccn_sim_free(op);
        return post_failed(comm, hccn_sim_fail_context("%s: rank %d",
                             is_send ? "send" : "recv", ctx->rank));
    }
    hccn_sim_task_t t = {
        .kind = is_send ? HCCN_SIM_TASK_SEND : HCCN_SIM_TASK_RECV,
        .peer = c->world[peer],
        .bytes = bytes,
        .key = {c->uid | (1ULL << 63), ((uint64_t)src << 32) | (uint32_t)dst,
                op->pseq}};
    op->batch = hccn_sim_post(ctx->cl->eng, ctx->rank, &t, 1, NULL, NULL);
    if (op->batch == NULL) {
        hccn_sim_free(op);
        return post_failed(comm, hccn_sim_fail_context("%s: rank %d",
                             is_send ? "send" : "recv", ctx->rank));
    }
    op->t_call = hccn_sim_batch_posted(op->batch);
    list_append(ctx, op);
    comm->pending++;
    ctx->inflight++;
    *out = op;
    return HCCN_OK;
}

