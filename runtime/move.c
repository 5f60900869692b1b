/*
 * The one seam through which the executor changes arena bytes (rt.h,
 * rt_move_t): every copy, reduction, wire rounding and AVG division of a
 * collective or a point-to-point receive is a move, run here. In one
 * process, or when every operand lives in this process, the move runs in
 * place, as it always did. In a cluster whose data is partitioned across
 * processes (docs/processes.md) the process owning the destination runs
 * it, fetching the other operands from their owners (proc_data.c).
 *
 * Scratch buffers of a multi-process cluster live in the window of their
 * rank's owner too, so that a rank's intermediate results stay with it.
 */
#include <string.h>

#include "device_sim/alloc.h"
#include "runtime/kernels.h"
#include "runtime/proc.h"
#include "runtime/rt.h"

/* Rounds n fp32 values through the wire type wt, in place. */
static void round_wire(hccn_dtype_t wt, float *buf, size_t n)
{
    uint16_t wire[2048];
    for (size_t i = 0; i < n; i += 2048) {
        size_t k = n - i < 2048 ? n - i : 2048;
        hccn_rt_fp32_to_half_array(wire, buf + i, k, wt);
        hccn_rt_half_to_fp32_array(buf + i, wire, k, wt);
    }
}

/* Receives n fp32 values that crossed the wire as wt: each incoming value
 * is rounded to the wire type, then stored (local == NULL) or reduced in
 * fp32 with the local operand, itself rounded to the wire type first. The
 * result is rounded too. Every operand and result of a reduction is then a
 * wire-type value, so partial results cross later hops exactly and two
 * ranks that combine the same values (recursive doubling, composite
 * algorithms) get the same bits. */
static void recv_wire(hccn_dtype_t wt, hccn_redop_t op, float *dst,
                      const float *local, const float *in, size_t n)
{
    enum { BLOCK = 2048 };
    uint16_t wire[BLOCK];
    float val[BLOCK], mine[BLOCK];
    for (size_t i = 0; i < n; i += BLOCK) {
        size_t k = n - i < BLOCK ? n - i : BLOCK;
        hccn_rt_fp32_to_half_array(wire, in + i, k, wt);
        if (local == NULL) {
            hccn_rt_half_to_fp32_array(dst + i, wire, k, wt);
            continue;
        }
        hccn_rt_half_to_fp32_array(val, wire, k, wt);
        memcpy(mine, local + i, k * sizeof(float));
        round_wire(wt, mine, k);
        hccn_rt_reduce3(dst + i, mine, val, k, HCCN_FP32, op);
        round_wire(wt, dst + i, k);
    }
}

static hccn_redop_t kernel_op(hccn_redop_t op)
{
    return op == HCCN_AVG ? HCCN_SUM : op;
}

size_t hccn_rt_move_esize(const rt_move_t *m, hccn_dtype_t dt)
{
    switch (m->kind) {
    case RT_MOVE_COPY:
        return 1;
    case RT_MOVE_WIRE:
    case RT_MOVE_WIRE_REDUCE:
    case RT_MOVE_ROUND:
        return sizeof(float);
    default:
        return hccn_dtype_size(dt);
    }
}

void hccn_rt_move_apply(const rt_move_t *m, hccn_dtype_t dt, hccn_redop_t op)
{
    hccn_dtype_t wt = (hccn_dtype_t)m->aux;
    switch (m->kind) {
    case RT_MOVE_COPY:
        memmove(m->dst, m->a, m->n);
        break;
    case RT_MOVE_REDUCE:
        hccn_rt_reduce(m->dst, m->a, m->n, dt, kernel_op(op));
        break;
    case RT_MOVE_REDUCE3:
        hccn_rt_reduce3(m->dst, m->a, m->b, m->n, dt, kernel_op(op));
        break;
    case RT_MOVE_WIRE:
        recv_wire(wt, kernel_op(op), (float *)m->dst, (const float *)m->a,
                  (const float *)m->b, m->n);
        break;
    case RT_MOVE_WIRE_REDUCE:   /* dst op a, both rounded, and the result */
        recv_wire(wt, kernel_op(op), (float *)m->dst, (const float *)m->dst,
                  (const float *)m->a, m->n);
        break;
    case RT_MOVE_ROUND:
        round_wire(wt, (float *)m->dst, m->n);
        break;
    case RT_MOVE_AVG:
        hccn_rt_avg_finish(m->dst, m->n, dt, m->aux);
        break;
    }
}

void hccn_rt_move_run(hccn_cluster_t *cl, const rt_move_t *m, hccn_dtype_t dt,
                      hccn_redop_t op)
{
    rt_proc_t *p = cl->proc;
    if (p == NULL || hccn_rt_proc_move_local(p, m))
        hccn_rt_move_apply(m, dt, op);
    else
        hccn_rt_proc_move(p, m, dt, op);
}

hccn_status_t hccn_rt_data_put(hccn_cluster_t *cl, void *dev, const void *src,
                               size_t n)
{
    rt_proc_t *p = cl->proc;
    if (p == NULL || hccn_rt_proc_ptr_local(p, dev))
        memcpy(dev, src, n);
    else
        return hccn_rt_proc_xfer(p, dev, (void *)src, n, 1);
    return HCCN_OK;
}

hccn_status_t hccn_rt_data_get(hccn_cluster_t *cl, void *dst, const void *dev,
                               size_t n)
{
    rt_proc_t *p = cl->proc;
    if (p == NULL || hccn_rt_proc_ptr_local(p, dev))
        memcpy(dst, dev, n);
    else
        return hccn_rt_proc_xfer(p, (void *)dev, dst, n, 0);
    return HCCN_OK;
}

void *hccn_rt_scratch_alloc(hccn_cluster_t *cl, int rank, size_t bytes)
{
    void *ptr = NULL;
    if (cl->proc == NULL)
        return hccn_sim_malloc(bytes);
    if (hccn_sim_arena_alloc(&cl->proc->scratch[rank], bytes, &ptr) != HCCN_OK)
        return NULL;
    return ptr;
}

void hccn_rt_scratch_free(hccn_cluster_t *cl, int rank, void *ptr)
{
    if (cl->proc == NULL || ptr == NULL)
        hccn_sim_free(ptr);
    else
        hccn_sim_arena_free(&cl->proc->scratch[rank], ptr);
}
