/*
 * Recovery after a failure, in the manner of MPI's ULFM: revoke a
 * communicator, agree on a flag among its survivors, shrink it to them,
 * grow it by spare ranks; and what recovery costs in simulated time.
 * The rendezvous itself is runtime/recover_round.c.
 */
#include <stdio.h>
#include <stdlib.h>

#include "runtime/recover.h"

double hccn_rt_ft_detect_s(const hccn_cluster_t *cl)
{
    return cl->ft_set ? cl->ft_detect_s : RT_FT_DETECT_S;
}

double hccn_rt_ft_init_s(const hccn_cluster_t *cl)
{
    return cl->ft_set ? cl->ft_init_s : RT_FT_INIT_S;
}

hccn_status_t hccn_cluster_set_recovery(hccn_cluster_t *cl,
                                        const hccn_recovery_opts_t *o)
{
    const char *fn = "hccn_cluster_set_recovery";
    hccn_status_t rc = hccn_rt_cluster_check(fn, cl);
    if (rc != HCCN_OK)
        return rc;
    if (o == NULL || o->struct_size < sizeof(*o))
        return hccn_rt_error(HCCN_ERR_INVALID, "%s: opts is NULL or its "
                             "struct_size is not sizeof(hccn_recovery_opts_t)",
                             fn);
    if (atomic_load(&cl->running))
        return hccn_rt_error(HCCN_ERR_INVALID, "%s: the cluster is running", fn);
    /* NaN is neither a time nor "keep" (negative): refused, as too big. */
    const char *bad = !(o->detect_s <= 1e6) ? "detect_s"
                      : !(o->init_s <= 1e6) ? "init_s" : NULL;
    if (bad != NULL)
        return hccn_rt_error(HCCN_ERR_INVALID, "%s: opts.%s must be at most "
                             "1e6 s, or negative to keep the current value "
                             "(got %g)", fn, bad,
                             bad[0] == 'd' ? o->detect_s : o->init_s);
    double d = hccn_rt_ft_detect_s(cl), i = hccn_rt_ft_init_s(cl);
    cl->ft_detect_s = o->detect_s >= 0.0 ? o->detect_s : d;
    cl->ft_init_s = o->init_s >= 0.0 ? o->init_s : i;
    cl->ft_set = 1;
    return HCCN_OK;
}

hccn_status_t hccn_rt_ft_revoked_error(const char *fn, hccn_comm_t *comm)
{
    rt_comm_t *c = comm->sh;
    char msg[RT_ERR_MAX];
    pthread_mutex_lock(&c->lock);
    snprintf(msg, sizeof(msg), "%s", c->broken_msg);
    pthread_mutex_unlock(&c->lock);
    return hccn_rt_error(HCCN_ERR_REVOKED,
                         "%s: rank %d: communicator %llu was %s; its "
                         "survivors make a new one with hccn_comm_shrink",
                         fn, comm->ctx->rank, (unsigned long long)c->uid, msg);
}

hccn_status_t hccn_comm_revoke(hccn_comm_t *comm)
{
    /* Any thread may revoke (a watchdog, say), as it may abort. */
    void *h;
    hccn_status_t rc = hccn_rt_handle_get("hccn_comm_revoke", RT_H_COMM, comm,
                                          0, &h);
    if (rc != HCCN_OK)
        return rc;
    comm = h;
    rt_comm_t *c = comm->sh;
    char msg[96];
    snprintf(msg, sizeof(msg), "revoked by comm rank %d (rank %d)",
             comm->rank, comm->ctx->rank);
    /* The message first: a rank that sees the flag reads it. */
    hccn_rt_comm_break(c, HCCN_ERR_REVOKED, msg);
    atomic_store(&c->revoked, 1);
    atomic_fetch_or(&c->aborted, 1);
    hccn_rt_progressed(comm->ctx);
    for (int r = 0; r < c->size; r++)
        hccn_sim_bell_ring(&c->cl->ctxs[c->world[r]].bell);
    return HCCN_OK;
}

/* The caller's handle behind the token *comm, for a recovery call: a
 * revoked or broken communicator is fine, a destroyed one or a call in a
 * group is not. */
static hccn_status_t ft_handle(const char *fn, hccn_comm_t **comm)
{
    hccn_status_t rc = hccn_rt_comm_resolve(fn, comm);
    if (rc != HCCN_OK)
        return rc;
    if ((*comm)->destroyed)
        return hccn_rt_error(HCCN_ERR_INVALID, "%s: rank %d: the "
                             "communicator was destroyed",
                             fn, (*comm)->ctx->rank);
    if ((*comm)->ctx->group_depth > 0)
        return hccn_rt_error(HCCN_ERR_INVALID, "%s: rank %d: not allowed "
                             "between hccn_group_start and hccn_group_end",
                             fn, (*comm)->ctx->rank);
    return HCCN_OK;
}

hccn_status_t hccn_comm_agree(hccn_comm_t *comm, int *flag)
{
    const char *fn = "hccn_comm_agree";
    hccn_status_t rc = ft_handle(fn, &comm);
    if (rc != HCCN_OK)
        return rc;
    if (flag == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID, "%s: rank %d: flag is NULL",
                             fn, comm->ctx->rank);
    return hccn_rt_ft_call(fn, comm->ctx, comm->sh, comm, RT_FT_AGREE, flag,
                           NULL, 0, NULL);
}

hccn_status_t hccn_comm_shrink(hccn_comm_t *comm, hccn_comm_t **out)
{
    const char *fn = "hccn_comm_shrink";
    hccn_status_t rc = ft_handle(fn, &comm);
    if (rc != HCCN_OK)
        return rc;
    if (out == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID, "%s: rank %d: out is NULL",
                             fn, comm->ctx->rank);
    *out = NULL;
    return hccn_rt_ft_call(fn, comm->ctx, comm->sh, comm, RT_FT_SHRINK, NULL,
                           NULL, 0, out);
}

hccn_status_t hccn_comm_failed(hccn_comm_t *comm, int *ranks, int max, int *n)
{
    const char *fn = "hccn_comm_failed";
    hccn_status_t rc = hccn_rt_comm_resolve(fn, &comm);
    if (rc != HCCN_OK)
        return rc;
    if (n == NULL || max < 0 || (ranks == NULL && max > 0))
        return hccn_rt_error(HCCN_ERR_INVALID, "%s: rank %d: n is NULL, max "
                             "< 0 or ranks NULL with max > 0",
                             fn, comm->ctx->rank);
    rt_comm_t *c = comm->sh;
    pthread_mutex_lock(&c->lock);
    *n = c->ft != NULL ? c->ft->nknown[comm->rank] : 0;
    for (int i = 0; i < *n && i < max; i++)
        ranks[i] = c->ft->known[comm->rank][i];
    pthread_mutex_unlock(&c->lock);
    return HCCN_OK;
}

/* 1 if c has an open grow of tag that waits for world rank me. */
static int grow_wants(rt_comm_t *c, int me, uint64_t tag)
{
    int yes = 0;
    pthread_mutex_lock(&c->lock);
    rt_ft_t *ft = c->ft;
    if (ft != NULL && ft->open && !ft->final && ft->kind == RT_FT_GROW &&
        ft->tag == tag)
        for (int i = ft->nmem; i < ft->np && !yes; i++)
            yes = ft->who[i] == me && ft->state[i] == RT_FT_NONE;
    pthread_mutex_unlock(&c->lock);
    return yes;
}

rt_comm_t *hccn_rt_ft_find_grow(hccn_cluster_t *cl, int me, uint64_t tag)
{
    /* Communicators live until the run ends: the list's head is taken
     * under its lock, each is then looked at under its own (a split
     * takes them in that order). */
    if (grow_wants(cl->world, me, tag))
        return cl->world;
    pthread_mutex_lock(&cl->comms_lock);
    rt_comm_t *c = cl->subcomms;
    pthread_mutex_unlock(&cl->comms_lock);
    for (; c != NULL; c = c->next_sub)
        if (grow_wants(c, me, tag))
            return c;
    return NULL;
}

uint64_t hccn_rt_ft_tag(int kind, const int *ranks, int n)
{
    uint64_t tag = 1469598103934665603ULL ^ (uint64_t)kind;
    for (int i = 0; i < n; i++)
        tag = (tag ^ (uint64_t)ranks[i]) * 1099511628211ULL;
    return tag;
}

/* Checks a grow's list: n ranks of the cluster, none twice, none a
 * member of c (c NULL: only the first two). */
static hccn_status_t grow_list_check(const char *fn, hccn_ctx_t *ctx,
                                     rt_comm_t *c, const int *ranks, int n)
{
    int me = ctx->rank, size = ctx->cl->nranks;
    if (n <= 0 || n > size)
        return hccn_rt_error(HCCN_ERR_INVALID, "%s: rank %d: n = %d is not "
                             "in [1, %d]", fn, me, n, size);
    if (ranks == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID, "%s: rank %d: ranks is NULL "
                             "(n = %d)", fn, me, n);
    for (int i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= size)
            return hccn_rt_error(HCCN_ERR_INVALID, "%s: rank %d: ranks[%d] = "
                                 "%d is not a rank of the cluster [0, %d)",
                                 fn, me, i, ranks[i], size);
        for (int j = 0; j < i; j++)
            if (ranks[j] == ranks[i])
                return hccn_rt_error(HCCN_ERR_INVALID, "%s: rank %d: rank %d "
                                     "is listed twice", fn, me, ranks[i]);
        for (int q = 0; c != NULL && q < c->size; q++)
            if (c->world[q] == ranks[i])
                return hccn_rt_error(HCCN_ERR_INVALID, "%s: rank %d: ranks[%d]"
                                     " = %d is already comm rank %d",
                                     fn, me, i, ranks[i], q);
    }
    return HCCN_OK;
}

typedef struct {
    hccn_cluster_t *cl;
    int me;
    uint64_t tag;
    rt_comm_t *found;
} join_wait_t;

static int grow_found(void *arg)
{
    join_wait_t *w = arg;
    w->found = hccn_rt_ft_find_grow(w->cl, w->me, w->tag);
    return w->found != NULL;
}

/* A listed rank joins the grow that lists it: once comm rank 0 has
 * opened it (they meet in the engine first), it finds the record. */
static hccn_status_t grow_join(const char *fn, const int *ranks, int n,
                               hccn_comm_t **out)
{
    hccn_ctx_t *ctx = hccn_rt_self();
    if (ctx == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID, "%s: comm is NULL and the "
                             "calling thread is no rank's", fn);
    hccn_status_t rc = grow_list_check(fn, ctx, NULL, ranks, n);
    int listed = 0;
    for (int i = 0; rc == HCCN_OK && i < n; i++)
        listed |= ranks[i] == ctx->rank;
    if (rc == HCCN_OK && !listed)
        rc = hccn_rt_error(HCCN_ERR_INVALID, "%s: rank %d: comm is NULL but "
                           "the rank is not in the list", fn, ctx->rank);
    if (rc != HCCN_OK)
        return rc;
    join_wait_t w = {ctx->cl, ctx->rank, hccn_rt_ft_tag(RT_FT_GROW, ranks, n),
                     NULL};
    int j = 0;
    while (ranks[j] != ctx->rank)
        j++;
    rc = hccn_rt_ft_pair_join(ctx, w.tag, j, -1, fn);
    if (rc == HCCN_OK)
        rc = hccn_rt_block(ctx, NULL, grow_found, NULL, &w, fn);
    if (rc != HCCN_OK)
        return rc;
    return hccn_rt_ft_call(fn, ctx, w.found, NULL, RT_FT_GROW, NULL, ranks, n,
                           out);
}

hccn_status_t hccn_comm_grow(hccn_comm_t *comm, const int *ranks, int n,
                             hccn_comm_t **out)
{
    const char *fn = "hccn_comm_grow";
    if (out == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID, "%s: out is NULL", fn);
    *out = NULL;
    if (comm == NULL)
        return grow_join(fn, ranks, n, out);
    hccn_status_t rc = ft_handle(fn, &comm);
    if (rc == HCCN_OK)
        rc = grow_list_check(fn, comm->ctx, comm->sh, ranks, n);
    if (rc != HCCN_OK)
        return rc;
    return hccn_rt_ft_call(fn, comm->ctx, comm->sh, comm, RT_FT_GROW, NULL,
                           ranks, n, out);
}
