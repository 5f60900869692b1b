/*
 * Communicators: the shared object every member rank sees (rendezvous slots,
 * schedule cache, point-to-point mailboxes) and each rank's handle on it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_sim/alloc.h"
#include "hierarchy/cost.h"
#include "runtime/recover.h"
#include "runtime/proc.h"
#include "runtime/rt.h"


static void comm_free_handles(rt_comm_t *c)
{
    if (c->handles == NULL)
        return;
    /* Sub-communicators go when their run ends, the world with its
     * cluster: their tokens say so from now on. */
    int why = c == c->cl->world ? RT_GONE_CLUSTER : RT_GONE_RUN_END;
    for (int r = 0; r < c->size; r++) {
        hccn_comm_t *h = c->handles[r];
        if (h == NULL)
            continue;
        if (h->token != NULL)
            hccn_rt_handle_free(h->token, why);
        hccn_sim_free(h->algo_spec);
        hccn_rt_scratch_free(c->cl, c->world[r], h->scratch);
        hccn_rt_picks_clear(h);
        hccn_sim_free(h);
    }
    hccn_sim_free(c->handles);
    c->handles = NULL;
}

/* Node, local index and pod of each member, from the topology: the placement
 * the cost model assumes too (hccn_hier_cost_view). */
static int comm_view(rt_comm_t *c)
{
    hccn_cost_place_t pl = {.topo = c->cl->topo, .world = c->world};
    if (hccn_hier_cost_view(&pl, c->size, c->node, c->local, &c->view) != 0)
        return -1;
    return hccn_hier_cost_pods(&pl, c->pod, &c->view);
}

/* Gives handle h its token (what the API hands out). The world's handles
 * get theirs when their rank first asks (hccn_comm_world): a cluster of a
 * million ranks that never runs them costs no table entries. */
static hccn_status_t comm_token(hccn_comm_t *h)
{
    rt_comm_t *c = h->sh;
    rt_handle_info_t in = {.world = c == c->cl->world, .rank = h->ctx->rank,
                           .size = c->size, .uid = c->uid};
    h->token = hccn_rt_handle_new(RT_H_COMM, h, h->ctx, &in);
    return h->token != NULL ? HCCN_OK : hccn_sim_failed("comm_token");
}

rt_comm_t *hccn_rt_comm_new(hccn_cluster_t *cl, int size, const int *world)
{
    rt_comm_t *c = hccn_sim_calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->cl = cl;
    c->size = size;
    c->uid = atomic_fetch_add(&cl->next_comm_uid, 1) + 1;
    hccn_sim_lock_init(&c->lock);
    c->world = hccn_sim_malloc((size_t)size * sizeof(int));
    c->node = hccn_sim_malloc((size_t)size * sizeof(int));
    c->local = hccn_sim_malloc((size_t)size * sizeof(int));
    c->pod = hccn_sim_malloc((size_t)size * sizeof(int));
    c->handles = hccn_sim_calloc((size_t)size, sizeof(*c->handles));
    if (!c->world || !c->node || !c->local || !c->pod || !c->handles)
        goto fail;
    memcpy(c->world, world, (size_t)size * sizeof(int));
    if (comm_view(c) != 0)
        goto fail;
    for (int i = 0; i < RT_SPLITS; i++) {
        rt_split_t *sp = &c->splits[i];
        sp->color = hccn_sim_calloc((size_t)size, sizeof(int));
        sp->key = hccn_sim_calloc((size_t)size, sizeof(int));
        sp->result = hccn_sim_calloc((size_t)size, sizeof(rt_comm_t *));
        if (sp->color == NULL || sp->key == NULL || sp->result == NULL)
            goto fail;
    }
    for (int i = 0; i < RT_SLOTS; i++) {
        c->slots[i].fp = hccn_sim_calloc((size_t)size, sizeof(rt_fp_t));
        c->slots[i].bufs = hccn_sim_calloc((size_t)size * 3, sizeof(char *));
        c->slots[i].here = hccn_sim_calloc((size_t)size, 1);
        c->slots[i].scheds = hccn_sim_calloc((size_t)size, sizeof(hccn_sched_t *));
        c->slots[i].ops = hccn_sim_calloc((size_t)size, sizeof(rt_op_t *));
        if (c->slots[i].fp == NULL || c->slots[i].bufs == NULL ||
            c->slots[i].here == NULL || c->slots[i].scheds == NULL ||
            c->slots[i].ops == NULL)
            goto fail;
    }
    for (int r = 0; r < size; r++) {
        hccn_comm_t *h = hccn_sim_calloc(1, sizeof(*h));
        if (h == NULL)
            goto fail;
        c->handles[r] = h;
        h->sh = c;
        h->rank = r;
        h->ctx = &cl->ctxs[world[r]];
        if (cl->world != NULL && comm_token(h) != HCCN_OK)
            goto fail;
    }
    return c;
fail:
    hccn_rt_comm_free(c);
    return NULL;
}

void hccn_rt_slot_clear(rt_comm_t *c, rt_slot_t *s)
{
    s->in_use = 0;
    s->arrived = 0;
    atomic_store(&s->finished, 0);
    atomic_store(&s->ready, 0);
    s->status = HCCN_OK;
    s->msg[0] = '\0';
    s->nxfers = 0;
    hccn_sim_free((void *)s->xstate);
    s->xstate = NULL;
    memset(s->here, 0, (size_t)c->size);
    memset(s->scheds, 0, (size_t)c->size * sizeof(*s->scheds));
    memset(s->ops, 0, (size_t)c->size * sizeof(*s->ops));
    s->ndrivable = s->refused = 0;
    atomic_store(&s->drive, RT_DRIVE_OFF);
}

void hccn_rt_comm_reset(rt_comm_t *c)
{
    for (int i = 0; i < RT_SLOTS; i++)
        hccn_rt_slot_clear(c, &c->slots[i]);
    hccn_rt_pairs_clear(c);
    for (int i = 0; i < RT_SPLITS; i++) {
        rt_split_t *sp = &c->splits[i];
        sp->in_use = sp->arrived = sp->picked = sp->built = 0;
    }
    for (int r = 0; r < c->size; r++) {
        hccn_comm_t *h = c->handles[r];
        h->coll_seq = 0;
        h->stream_tail = NULL;   /* the engine reset dropped every batch */
        h->split_seq = 0;
        h->data_seq = 0;
        h->pending = 0;
        h->compress = HCCN_COMPRESS_NONE;
        hccn_sim_free(h->algo_spec);
        h->algo_spec = NULL;
        hccn_rt_picks_clear(h);
    }
    atomic_store(&c->broken, 0);
    atomic_store(&c->aborted, 0);
    atomic_store(&c->revoked, 0);
    c->broken_msg[0] = '\0';
    hccn_rt_ft_free(c->ft);
    c->ft = NULL;
}

void hccn_rt_comm_free(rt_comm_t *c)
{
    if (c == NULL)
        return;
    for (int i = 0; i < RT_SLOTS; i++) {
        hccn_sim_free((void *)c->slots[i].xstate);
        hccn_sim_free(c->slots[i].fp);
        hccn_sim_free(c->slots[i].bufs);
        hccn_sim_free(c->slots[i].here);
        hccn_sim_free(c->slots[i].scheds);
        hccn_sim_free(c->slots[i].ops);
    }
    for (int i = 0; i < RT_SPLITS; i++) {
        hccn_sim_free(c->splits[i].color);
        hccn_sim_free(c->splits[i].key);
        hccn_sim_free(c->splits[i].result);
    }
    hccn_rt_pairs_clear(c);
    hccn_sim_free(c->moves.bufs);
    hccn_sim_free(c->moves.moves);
    hccn_rt_plans_clear(c);
    hccn_sim_free(c->entries);
    hccn_rt_ft_free(c->ft);
    comm_free_handles(c);
    hccn_sim_free(c->world);
    hccn_sim_free(c->node);
    hccn_sim_free(c->local);
    hccn_sim_free(c->pod);
    pthread_mutex_destroy(&c->lock);
    hccn_sim_free(c);
}

static int pick_spec_equal(const rt_pick_t *p, const char *spec)
{
    if (spec == NULL)
        return !p->has_spec;
    return p->has_spec && strcmp(p->spec, spec) == 0;
}

rt_pick_t *hccn_rt_pick_find(hccn_comm_t *comm, const hccn_coll_args_t *a,
                             const char *spec)
{
    for (int i = 0; i < RT_PICKS; i++) {
        rt_pick_t *p = &comm->picks[i];
        if (p->used && p->coll == (int)a->coll && p->count == a->count &&
            p->esize == a->esize && p->root == a->root &&
            p->in_switch == a->in_switch && pick_spec_equal(p, spec))
            return p;
    }
    return NULL;
}

void hccn_rt_picks_clear(hccn_comm_t *comm)
{
    for (int i = 0; i < RT_PICKS; i++)
        hccn_sim_free(comm->picks[i].part.tasks);
    memset(comm->picks, 0, sizeof(comm->picks));
    comm->next_pick = 0;
}

rt_pick_t *hccn_rt_pick_store(hccn_comm_t *comm, const hccn_coll_args_t *a,
                              const char *spec, const hccn_algo_t *algo)
{
    if (spec != NULL && strlen(spec) >= RT_PICK_SPEC)
        return NULL;
    rt_pick_t *p = &comm->picks[comm->next_pick];
    comm->next_pick = (comm->next_pick + 1) % RT_PICKS;
    hccn_sim_free(p->part.tasks);
    *p = (rt_pick_t){.used = 1, .coll = (int)a->coll, .root = a->root,
                     .has_spec = spec != NULL, .count = a->count,
                     .esize = a->esize, .algo = algo,
                     .in_switch = a->in_switch};
    if (spec != NULL)
        strcpy(p->spec, spec);
    return p;
}

/* --------------------------------------------------------- public queries */

hccn_comm_t *hccn_comm_world(hccn_ctx_t *ctx)
{
    if (hccn_rt_proc_fwd())
        return hccn_rt_fwd_world(ctx);
    if (hccn_rt_ctx_check("hccn_comm_world", ctx) != HCCN_OK)
        return NULL;
    if (ctx->world->token == NULL && comm_token(ctx->world) != HCCN_OK) {
        hccn_sim_fail_context("hccn_comm_world: rank %d: its handle",
                              ctx->rank);
        return NULL;
    }
    return ctx->world->token;
}

/* Queries may come from any thread; a stale or stray handle gives -1 / 0
 * and sets the last error. */
int hccn_comm_rank(const hccn_comm_t *comm)
{
    if (hccn_rt_proc_fwd())
        return hccn_rt_fwd_comm_int(RT_FWD_COMM_RANK, comm);
    void *h;
    if (hccn_rt_handle_get("hccn_comm_rank", RT_H_COMM, comm, 0, &h) != HCCN_OK)
        return -1;
    return ((hccn_comm_t *)h)->rank;
}

int hccn_comm_size(const hccn_comm_t *comm)
{
    if (hccn_rt_proc_fwd())
        return hccn_rt_fwd_comm_int(RT_FWD_COMM_SIZE, comm);
    void *h;
    if (hccn_rt_handle_get("hccn_comm_size", RT_H_COMM, comm, 0, &h) != HCCN_OK)
        return 0;
    return ((hccn_comm_t *)h)->sh->size;
}

hccn_status_t hccn_rt_comm_resolve(const char *fn, hccn_comm_t **comm)
{
    void *h;
    hccn_status_t rc = hccn_rt_handle_get(fn, RT_H_COMM, *comm, 1, &h);
    *comm = h;
    return rc;
}

void hccn_rt_comm_break_locked(rt_comm_t *c, hccn_status_t status,
                               const char *msg)
{
    if (atomic_load(&c->broken) == 0) {
        snprintf(c->broken_msg, sizeof(c->broken_msg), "%s", msg);
        atomic_store(&c->broken, (int)status);
    }
}

void hccn_rt_comm_break(rt_comm_t *c, hccn_status_t status, const char *msg)
{
    pthread_mutex_lock(&c->lock);
    hccn_rt_comm_break_locked(c, status, msg);
    pthread_mutex_unlock(&c->lock);
}

hccn_status_t hccn_rt_comm_check(const char *fn, hccn_comm_t *comm)
{
    rt_comm_t *c = comm->sh;
    if (comm->destroyed)
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "%s: rank %d: the communicator was destroyed", fn,
                             comm->ctx->rank);
    if (atomic_load(&c->revoked))
        return hccn_rt_ft_revoked_error(fn, comm);
    if (atomic_load(&c->aborted))
        return hccn_rt_error(HCCN_ERR_ABORTED,
                             "%s: rank %d: communicator %llu was aborted", fn,
                             comm->ctx->rank, (unsigned long long)c->uid);
    int broken = atomic_load(&c->broken);
    if (broken == 0)
        return HCCN_OK;
    char msg[RT_ERR_MAX];
    pthread_mutex_lock(&c->lock);
    snprintf(msg, sizeof(msg), "%s", c->broken_msg);
    pthread_mutex_unlock(&c->lock);
    /* Advice a program can follow: a sub-communicator can be destroyed and
     * made again; the world cannot, but the next run starts with a new one
     * (hccn_cluster_run resets it). */
    const char *advice =
        c == c->cl->world
            ? "the world communicator cannot be destroyed or repaired "
              "during this run: return from the rank function, and call "
              "hccn_cluster_run again for a working one"
            : "destroy it (hccn_comm_destroy) and make a new one "
              "(hccn_comm_split or hccn_comm_create) from a communicator "
              "that works";
    return hccn_rt_error((hccn_status_t)broken,
                         "%s: rank %d: communicator %llu is broken by an "
                         "earlier error; %s. The error: %s",
                         fn, comm->ctx->rank, (unsigned long long)c->uid,
                         advice, msg);
}

hccn_status_t hccn_comm_abort(hccn_comm_t *comm)
{
    if (hccn_rt_proc_fwd())
        return hccn_rt_fwd_comm_set(RT_FWD_ABORT, comm, 0, NULL);
    /* Any thread may abort (a watchdog, say): no owner check. */
    void *h;
    hccn_status_t rc = hccn_rt_handle_get("hccn_comm_abort", RT_H_COMM, comm,
                                          0, &h);
    if (rc != HCCN_OK)
        return rc;
    comm = h;
    rt_comm_t *c = comm->sh;
    atomic_fetch_or(&c->aborted, 1 | RT_ABORT_USER);
    hccn_rt_comm_break(c, HCCN_ERR_ABORTED, "aborted by hccn_comm_abort");
    hccn_rt_progressed(comm->ctx);
    for (int r = 0; r < c->size; r++)
        hccn_sim_bell_ring(&c->cl->ctxs[c->world[r]].bell);
    return HCCN_OK;
}
