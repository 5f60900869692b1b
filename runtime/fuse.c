/*
 * Fusing a staged receive with the reduction that consumes it.
 *
 * Several algorithms receive a peer's block into SCRATCH and then reduce
 * SCRATCH into the result: RECV(peer, x, scratch) -> REDUCE(scratch, dst).
 * The data plane may instead reduce straight from the sender's buffer into
 * dst, in one pass, and never write SCRATCH: the same operands in the same
 * order, so the same bits, with a third less memory traffic. The time plane
 * is untouched (the engine still times both steps).
 *
 * This is sound only when nothing else reads what the RECV wrote. The plan
 * below is therefore all or nothing for a rank: every read of SCRATCH must
 * be a REDUCE whose source is exactly the block of one RECV it depends on
 * directly; a rank whose schedule reads SCRATCH in any other way (sends
 * from it, copies from it, reduces into it) gets no plan.
 */
#include <stdlib.h>

#include "device_sim/alloc.h"
#include "runtime/rt.h"

/* 1 if step st reads SCRATCH (as a source, or as a REDUCE's destination,
 * which it reads too). */
static int reads_scratch(const hccn_step_t *st)
{
    switch (st->kind) {
    case HCCN_STEP_SEND:
    case HCCN_STEP_COPY:
    case HCCN_STEP_RECV_REDUCE:
        return st->src_buf == HCCN_BUF_SCRATCH && st->bytes > 0;
    case HCCN_STEP_REDUCE:
        return (st->src_buf == HCCN_BUF_SCRATCH ||
                st->dst_buf == HCCN_BUF_SCRATCH) && st->bytes > 0;
    default:
        return 0;
    }
}

/* The RECV among r's direct dependencies that wrote exactly r's source,
 * or UINT32_MAX when there is none or more than one. */
static uint32_t staged_recv(const hccn_sched_rank_t *rk, const hccn_step_t *r)
{
    uint32_t found = UINT32_MAX;
    for (uint32_t k = 0; k < r->ndeps; k++) {
        uint32_t d = rk->deps[r->dep_off + k];
        const hccn_step_t *st = &rk->steps[d];
        if (st->kind != HCCN_STEP_RECV || st->dst_buf != HCCN_BUF_SCRATCH ||
            st->dst_off != r->src_off || st->bytes != r->bytes)
            continue;
        if (found != UINT32_MAX)
            return UINT32_MAX;
        found = d;
    }
    return found;
}

/* Pairs every SCRATCH-reading step with its RECV; 0 if one cannot be. */
static int pair_all(const hccn_sched_rank_t *rk, uint32_t *partner)
{
    for (uint32_t j = 0; j < rk->nsteps; j++) {
        const hccn_step_t *st = &rk->steps[j];
        if (!reads_scratch(st))
            continue;
        if (st->kind != HCCN_STEP_REDUCE || st->dst_buf == HCCN_BUF_SCRATCH)
            return 0;
        uint32_t i = staged_recv(rk, st);
        if (i == UINT32_MAX || partner[i] != UINT32_MAX)
            return 0;
        partner[i] = j;
    }
    return 1;
}

uint32_t *hccn_rt_fuse_plan(const hccn_sched_rank_t *rk)
{
    uint32_t *partner = hccn_sim_malloc((rk->nsteps + 1) * sizeof(*partner));
    int any = 0;
    if (partner == NULL)
        return NULL;
    for (uint32_t i = 0; i < rk->nsteps; i++)
        partner[i] = UINT32_MAX;
    if (pair_all(rk, partner))
        for (uint32_t i = 0; i < rk->nsteps && !any; i++)
            any = partner[i] != UINT32_MAX;
    if (!any) {
        hccn_sim_free(partner);
        return NULL;
    }
    return partner;
}
