/*
 * Groups: between hccn_group_start and hccn_group_end, blocking calls only
 * post their operation; the end waits for all of them in posting order.
 * This is what lets a rank post a send and a receive that depend on each
 * other's peers (a ring exchange) without deadlock.
 */
#include <stdio.h>
#include <stdlib.h>

#include "runtime/proc.h"
#include "runtime/rt.h"

hccn_status_t hccn_group_start(hccn_ctx_t *ctx)
{
    if (hccn_rt_proc_fwd())
        return hccn_rt_fwd_ctx(RT_FWD_GROUP_START, ctx, 0.0, 0);
    hccn_status_t rc = hccn_rt_ctx_check("hccn_group_start", ctx);
    if (rc != HCCN_OK)
        return rc;
    ctx->group_depth++;
    return HCCN_OK;
}

hccn_status_t hccn_rt_complete(rt_op_t *op)
{
    hccn_ctx_t *ctx = op->ctx;
    if (ctx->group_depth == 0) {
        hccn_status_t rc = hccn_rt_op_wait(op);
        hccn_rt_op_free(op);
        return rc;
    }
    if (ctx->ngroup == ctx->capgroup) {
        int cap = ctx->capgroup ? 2 * ctx->capgroup : 16;
        rt_op_t **g = realloc(ctx->group_ops, (size_t)cap * sizeof(*g));
        if (g == NULL) {
            hccn_status_t rc = hccn_rt_op_wait(op);
            hccn_rt_op_free(op);
            return rc != HCCN_OK ? rc
                                 : hccn_rt_error(HCCN_ERR_NOMEM,
                                                 "rank %d: out of memory in "
                                                 "a group (the call was "
                                                 "completed at once)",
                                                 ctx->rank);
        }
        ctx->group_ops = g;
        ctx->capgroup = cap;
    }
    ctx->group_ops[ctx->ngroup++] = op;
    return HCCN_OK;
}

hccn_status_t hccn_group_end(hccn_ctx_t *ctx)
{
    if (hccn_rt_proc_fwd())
        return hccn_rt_fwd_ctx(RT_FWD_GROUP_END, ctx, 0.0, 0);
    hccn_status_t rc0 = hccn_rt_ctx_check("hccn_group_end", ctx);
    if (rc0 != HCCN_OK)
        return rc0;
    if (ctx->group_depth == 0)
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "hccn_group_end: rank %d: no hccn_group_start "
                             "is open",
                             ctx->rank);
    if (--ctx->group_depth > 0)
        return HCCN_OK;
    hccn_status_t first = HCCN_OK;
    char msg[RT_ERR_MAX] = "";
    for (int i = 0; i < ctx->ngroup; i++) {
        hccn_status_t rc = hccn_rt_op_wait(ctx->group_ops[i]);
        if (rc != HCCN_OK && first == HCCN_OK) {
            first = rc;
            snprintf(msg, sizeof(msg), "%s", hccn_last_error());
        }
        hccn_rt_op_free(ctx->group_ops[i]);
    }
    ctx->ngroup = 0;
    if (first != HCCN_OK)
        return hccn_rt_error(first, "hccn_group_end: %s", msg);
    return HCCN_OK;
}

int hccn_rt_group_forget(hccn_ctx_t *ctx)
{
    int n = ctx->ngroup;
    for (int i = 0; i < ctx->ngroup; i++)
        hccn_rt_op_free(ctx->group_ops[i]);
    free(ctx->group_ops);
    ctx->group_ops = NULL;
    ctx->ngroup = ctx->capgroup = ctx->group_depth = 0;
    return n;
}
