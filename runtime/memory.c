/*
 * Device memory of a rank: allocation in its NPU's arena, the arena's
 * figures, which rank's arena holds a pointer, and the check every call
 * makes of the buffers it is given (hccn.h, "Device memory"). A process
 * of a multi-process cluster forwards these calls to the host process
 * (proc.h).
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "runtime/proc.h"
#include "runtime/rt.h"

hccn_status_t hccn_malloc(hccn_ctx_t *ctx, size_t bytes, void **ptr)
{
    if (hccn_rt_proc_fwd())
        return hccn_rt_fwd_malloc(ctx, bytes, ptr);
    hccn_status_t rc0 = hccn_rt_ctx_check("hccn_malloc", ctx);
    if (rc0 != HCCN_OK)
        return rc0;
    if (ptr == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_malloc: rank %d: ptr is "
                             "NULL", ctx->rank);
    double now = hccn_sim_clock(ctx->cl->eng, ctx->rank);
    double fail = hccn_sim_fail_at(ctx->cl->eng, ctx->rank);
    if (fail <= now)
        return hccn_rt_error(HCCN_ERR_FAULT,
                             "hccn_malloc: rank %d: NPU %d failed at %.3f us "
                             "(fault plan); its clock is at %.3f us",
                             ctx->rank, ctx->rank, fail * 1e6, now * 1e6);
    hccn_sim_arena_t *a = &ctx->cl->arenas[ctx->rank];
    hccn_status_t rc = hccn_sim_arena_alloc(a, bytes, ptr);
    if (rc != HCCN_OK) {
        hccn_mem_info_t info;
        hccn_sim_arena_info(a, &info);
        return hccn_rt_error(rc,
                             "hccn_malloc: rank %d: %zu bytes do not fit "
                             "(arena %zu bytes, %zu used, largest free %zu)",
                             ctx->rank, bytes, info.total, info.used,
                             info.largest_free);
    }
    return HCCN_OK;
}

hccn_status_t hccn_free(hccn_ctx_t *ctx, void *ptr)
{
    if (hccn_rt_proc_fwd())
        return hccn_rt_fwd_free(ctx, ptr);
    hccn_status_t rc = hccn_rt_ctx_check("hccn_free", ctx);
    if (rc != HCCN_OK)
        return rc;
    if (ptr == NULL)
        return HCCN_OK;
    if ((rc = hccn_rt_check_inflight(ctx, ptr)) != HCCN_OK)
        return rc;
    rc = hccn_sim_arena_free(&ctx->cl->arenas[ctx->rank], ptr);
    if (rc != HCCN_OK)
        return hccn_rt_error(rc,
                             "hccn_free: rank %d: %p is not the start of a "
                             "live allocation in this rank's arena",
                             ctx->rank, ptr);
    return HCCN_OK;
}

hccn_status_t hccn_mem_info(hccn_ctx_t *ctx, hccn_mem_info_t *info)
{
    if (hccn_rt_proc_fwd())
        return hccn_rt_fwd_mem_info(ctx, info);
    hccn_status_t rc = hccn_rt_ctx_check("hccn_mem_info", ctx);
    if (rc != HCCN_OK)
        return rc;
    if (info == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_mem_info: rank %d: info "
                             "is NULL", ctx->rank);
    hccn_sim_arena_info(&ctx->cl->arenas[ctx->rank], info);
    return HCCN_OK;
}

hccn_status_t hccn_ptr_info(const hccn_cluster_t *cl, const void *ptr,
                            int *rank, size_t *offset)
{
    if (rank != NULL)
        *rank = -1;
    hccn_status_t rc0 = hccn_rt_cluster_check("hccn_ptr_info", cl);
    if (rc0 != HCCN_OK)
        return rc0;
    for (int r = 0; r < cl->nranks; r++) {
        const hccn_sim_arena_t *a = &cl->arenas[r];
        if (hccn_sim_arena_contains(a, ptr, 1)) {
            if (rank != NULL)
                *rank = r;
            if (offset != NULL)
                *offset = (size_t)((const char *)ptr - a->base);
            return HCCN_OK;
        }
    }
    return hccn_rt_error(HCCN_ERR_INVALID,
                         "hccn_ptr_info: %p is in no NPU's arena", ptr);
}

hccn_status_t hccn_rt_check_buf(hccn_ctx_t *ctx, const void *ptr,
                                uint64_t bytes, const char *opname,
                                const char *what)
{
    if (ptr == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID, "%s: rank %d: %s is NULL",
                             opname, ctx->rank, what);
    hccn_sim_arena_t *a = &ctx->cl->arenas[ctx->rank];
    void *start;
    size_t len;
    if (hccn_sim_arena_find(a, ptr, &start, &len)) {
        size_t off = (size_t)((const char *)ptr - (char *)start);
        if (bytes <= len - off)
            return HCCN_OK;
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "%s: rank %d: %s %p needs %llu bytes but its "
                             "allocation (%zu bytes at %p) has %zu from there",
                             opname, ctx->rank, what, ptr,
                             (unsigned long long)bytes, len, start, len - off);
    }
    if (hccn_sim_arena_contains(a, ptr, 1))
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "%s: rank %d: %s %p is in the rank's arena but in "
                             "no live allocation (freed, or never allocated)",
                             opname, ctx->rank, what, ptr);
    for (int r = 0; r < ctx->cl->nranks; r++)
        if (hccn_sim_arena_contains(&ctx->cl->arenas[r], ptr, 1))
            return hccn_rt_error(HCCN_ERR_INVALID,
                                 "%s: rank %d: %s %p is in the arena of rank "
                                 "%d, not the caller's",
                                 opname, ctx->rank, what, ptr, r);
    return hccn_rt_error(HCCN_ERR_INVALID,
                         "%s: rank %d: %s %p is not device memory (not in "
                         "the rank's arena; allocate it with hccn_malloc)",
                         opname, ctx->rank, what, ptr);
}
