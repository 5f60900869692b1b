/*
 * What recovery costs in simulated time (docs/faults.md, "Recovery"): the
 * stretches a participant's clock moves on by (failure detection, a new
 * communicator's set-up), the votes' exchange over the real links, and
 * the meetings in the timing engine, where a waiting rank holds nobody's
 * simulated time back (runtime/recover.h says what a call is).
 */
#include <stdio.h>
#include <stdlib.h>

#include "device_sim/trace.h"
#include "runtime/recover.h"

#define VOTE_INTS 2   /* a vote: the flag and the participant's index */

void hccn_rt_ft_clock_to(hccn_ctx_t *ctx, double t, const char *name)
{
    hccn_sim_engine_t *eng = ctx->cl->eng;
    double t0 = hccn_sim_clock(eng, ctx->rank);
    if (!(t > t0))
        return;
    hccn_sim_advance(eng, ctx->rank, t - t0);
    hccn_sim_trace_t *tr = hccn_sim_engine_trace(eng);
    if (tr == NULL)
        return;
    char args[64];
    snprintf(args, sizeof(args), "\"seconds\":%.17g", t - t0);
    hccn_sim_trace_slice_t s = {.depth = HCCN_SIM_TRACE_OP, .parent = -1,
                                .begin = t0, .end = t, .name = name,
                                .args = args};
    hccn_sim_trace_record(tr, ctx->rank, &s, 1);
}

typedef struct {
    hccn_sim_engine_t *eng;
    hccn_sim_batch_t *b;
    rt_comm_t *c;                 /* the record's (a grow gate), or NULL */
    hccn_cluster_t *eng_cl;
    int peer;                     /* the other rank of a pair, or -1 */
} join_wait_t;

static int join_done(void *arg)
{
    join_wait_t *w = arg;
    return hccn_sim_batch_done(w->eng, w->b);
}

/* A participant of a grow gate that returned without arriving; *who is
 * its rank of the cluster (the wait has no communicator to name it in). */
static int join_gone(void *arg, int *who)
{
    join_wait_t *w = arg;
    if (w->peer >= 0 && atomic_load(&w->eng_cl->ctxs[w->peer].finished)) {
        *who = w->peer;
        return 1;
    }
    if (w->c == NULL)
        return 0;
    int gone = 0;
    pthread_mutex_lock(&w->c->lock);
    rt_ft_t *ft = w->c->ft;
    for (int i = 0; i < ft->np && !gone; i++)
        if (ft->state[i] == RT_FT_NONE &&
            atomic_load(&w->c->cl->ctxs[ft->who[i]].finished)) {
            gone = 1;
            *who = ft->who[i];
        }
    pthread_mutex_unlock(&w->c->lock);
    return gone;
}

/* Posts an empty batch of ctx's NPU joined with count - 1 others under
 * key, and waits in the engine until it starts: every joiner's clock
 * becomes the latest of theirs (no simulated time passes otherwise, and
 * a rank waiting here holds nobody's time back). gone_c: the record
 * whose participants' leaving ends the wait (NULL: none); peer: a rank
 * whose leaving does (-1: none). */
static hccn_status_t clock_join(hccn_ctx_t *ctx, hccn_sim_key_t key,
                                int count, rt_comm_t *gone_c, int peer,
                                const char *fn)
{
    hccn_sim_engine_t *eng = ctx->cl->eng;
    hccn_sim_batch_t *b =
        hccn_sim_post_joined(eng, ctx->rank, NULL, 0, NULL, NULL, key, count, 0);
    if (b == NULL)
        return hccn_rt_error(HCCN_ERR_NOMEM, "%s: rank %d: out of memory",
                             fn, ctx->rank);
    hccn_sim_wait_begin(eng, ctx->rank, b);
    join_wait_t w = {eng, b, gone_c, ctx->cl, peer};
    atomic_store(&ctx->time_wait, 1);
    hccn_status_t rc = hccn_rt_block(ctx, NULL, join_done, join_gone, &w, fn);
    atomic_store(&ctx->time_wait, 0);
    if (rc != HCCN_OK) {
        hccn_sim_batch_abandon(eng, ctx->rank, b);
    } else {
        hccn_sim_wait_finish(eng, ctx->rank, b);
        char why[160];
        rc = hccn_sim_batch_status(eng, b, why, sizeof(why));
        if (rc != HCCN_OK)
            rc = hccn_rt_error(rc, "%s: rank %d: %s", fn, ctx->rank, why);
    }
    hccn_sim_batch_release(eng, b);
    return rc;
}

hccn_status_t hccn_rt_ft_vote(hccn_ctx_t *ctx, rt_comm_t *rc, int idx,
                              int flag, int *and_out)
{
    int m = rc->size, pos = 0;
    while (pos < m && rc->world[pos] != ctx->rank)
        pos++;
    int32_t *buf;
    size_t bytes = (size_t)(m + 1) * VOTE_INTS * sizeof(int32_t);
    hccn_sim_arena_t *a = &ctx->cl->arenas[ctx->rank];
    if (pos == m || hccn_sim_arena_alloc(a, bytes, (void **)&buf) != HCCN_OK)
        return hccn_rt_error(HCCN_ERR_NOMEM, "rank %d: no device memory for "
                             "%zu bytes of votes", ctx->rank, bytes);
    /* The rank's arena may be another process's (proc.h): its bytes are
     * written and read through the data seam (move.c). */
    int32_t mine[VOTE_INTS] = {flag, idx};
    hccn_status_t st = hccn_rt_data_put(ctx->cl, buf, mine, sizeof(mine));
    hccn_coll_opts_t o = {sizeof(o), -1, "bruck"};
    if (st == HCCN_OK)
        st = hccn_allgather_opts(rc->handles[pos]->token, buf, buf + VOTE_INTS,
                                 VOTE_INTS, HCCN_INT32, &o, NULL);
    int v = ~0;
    for (int j = 0; st == HCCN_OK && j < m; j++) {
        st = hccn_rt_data_get(ctx->cl, mine, buf + VOTE_INTS * (j + 1),
                              sizeof(mine));
        v &= mine[0];
    }
    *and_out = v;
    hccn_sim_arena_free(a, buf);
    return st;
}

hccn_status_t hccn_rt_ft_pair_join(hccn_ctx_t *ctx, uint64_t tag, int j,
                                   int peer, const char *fn)
{
    hccn_sim_key_t key = {tag, UINT64_MAX - 3, (uint64_t)j};
    return clock_join(ctx, key, 2, NULL, peer, fn);
}

hccn_status_t hccn_rt_ft_grow_gate(hccn_ctx_t *ctx, rt_comm_t *c, int i,
                                   uint64_t seq, uint64_t tag, int n,
                                   const char *fn)
{
    hccn_status_t rc = HCCN_OK;
    for (int j = 0; i == 0 && j < n && rc == HCCN_OK; j++) {
        pthread_mutex_lock(&c->lock);
        int joiner = c->ft->who[c->ft->nmem + j];   /* participants: members,
                                                       then joiners */
        pthread_mutex_unlock(&c->lock);
        rc = hccn_rt_ft_pair_join(ctx, tag, j, joiner, fn);
    }
    if (rc != HCCN_OK)
        return rc;
    hccn_sim_key_t key = {c->uid, UINT64_MAX - 4 - seq, UINT64_MAX};
    pthread_mutex_lock(&c->lock);
    int np = c->ft->np;
    pthread_mutex_unlock(&c->lock);
    return clock_join(ctx, key, np, c, -1, fn);
}

hccn_status_t hccn_rt_ft_round_sync(hccn_ctx_t *ctx, rt_comm_t *rc,
                                    const char *fn)
{
    hccn_sim_key_t key = {rc->uid, UINT64_MAX, UINT64_MAX};
    return clock_join(ctx, key, rc->size, NULL, -1, fn);
}
