/*
 * Buffers in flight: hccn_free refuses an allocation that an operation of
 * the rank still reads or writes.
 *
 * An operation stops touching its rank's buffers when its data plane is
 * done (every step run; a SEND only once its receiver has consumed the
 * bytes), which is when it leaves the rank's outstanding list. Until then,
 * freeing one of its buffers would let the next hccn_malloc hand the same
 * bytes out again, and the operation would overwrite the new data. So
 * hccn_free fails with HCCN_ERR_INPROGRESS and frees nothing; the program
 * waits for the operation (hccn_wait, hccn_group_end) and frees then.
 */
#include <stdio.h>

#include "runtime/rt.h"

/* 1 if n > 0 bytes at base + off begin in [start, start+len) (as
 * integers: an unused buffer may be NULL). */
static int inside(const void *base, uint64_t off, uint64_t n,
                  const void *start, size_t len)
{
    uintptr_t p = (uintptr_t)base + (uintptr_t)off, s = (uintptr_t)start;
    return n > 0 && p >= s && p - s < len;
}

/* Which of op's buffers lies in [start, start+len): "sendbuf", "recvbuf",
 * "buf", or NULL for none. Only the buffers its steps touch count: an
 * argument the collective ignores (a non-root's broadcast sendbuf) is not
 * in use. */
static const char *op_uses(const rt_op_t *op, const void *start, size_t len)
{
    if (op->kind != RT_OP_COLL)
        return inside(op->buf, 0, op->bytes, start, len) ? "buf" : NULL;
    static const char *const names[] = {"sendbuf", "recvbuf", NULL};
    const hccn_sched_rank_t *rk = &op->sched->ranks[op->comm->rank];
    for (uint32_t i = 0; i < rk->nsteps; i++) {
        const hccn_step_t *st = &rk->steps[i];
        int src = st->kind != HCCN_STEP_RECV;
        int dst = st->kind != HCCN_STEP_SEND;
        if (src && st->src_buf != HCCN_BUF_SCRATCH &&
            inside(op->bufs[st->src_buf], st->src_off, st->bytes, start, len))
            return names[st->src_buf];
        if (dst && st->dst_buf != HCCN_BUF_SCRATCH &&
            inside(op->bufs[st->dst_buf], st->dst_off, st->bytes, start, len))
            return names[st->dst_buf];
    }
    return NULL;
}

hccn_status_t hccn_rt_check_inflight(hccn_ctx_t *ctx, const void *ptr)
{
    void *start;
    size_t len;
    /* Not the start of a live allocation: hccn_free reports that. */
    if (!hccn_sim_arena_find(&ctx->cl->arenas[ctx->rank], ptr, &start, &len) ||
        start != ptr)
        return HCCN_OK;
    for (const rt_op_t *op = ctx->ops_head; op != NULL; op = op->next) {
        if (op->stage == RT_STAGE_DONE)
            continue;
        const char *what = op_uses(op, start, len);
        if (what == NULL)
            continue;
        char desc[160];
        hccn_rt_op_describe(op, desc, sizeof(desc));
        return hccn_rt_error(HCCN_ERR_INPROGRESS,
                             "hccn_free: rank %d: %p (%zu bytes) is the %s "
                             "of %s, which has not completed; nothing was "
                             "freed: wait for the operation (hccn_wait, "
                             "hccn_group_end) before freeing its buffers",
                             ctx->rank, ptr, len, what, desc);
    }
    return HCCN_OK;
}
