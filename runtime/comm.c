/*
 * Communicators: the shared object every member rank sees (rendezvous slots,
 * schedule cache, point-to-point mailboxes) and each rank's handle on it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hierarchy/cost.h"
#include "runtime/proc.h"
#include "runtime/rt.h"

#define CACHE_MAX 128

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
        free(h->algo_spec);
        free(h->scratch);
        hccn_rt_picks_clear(h);
        free(h);
    }
    free(c->handles);
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
    return h->token != NULL ? HCCN_OK : HCCN_ERR_NOMEM;
}

rt_comm_t *hccn_rt_comm_new(hccn_cluster_t *cl, int size, const int *world)
{
    rt_comm_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->cl = cl;
    c->size = size;
    c->uid = atomic_fetch_add(&cl->next_comm_uid, 1) + 1;
    hccn_sim_lock_init(&c->lock);
    c->world = malloc((size_t)size * sizeof(int));
    c->node = malloc((size_t)size * sizeof(int));
    c->local = malloc((size_t)size * sizeof(int));
    c->pod = malloc((size_t)size * sizeof(int));
    c->handles = calloc((size_t)size, sizeof(*c->handles));
    if (!c->world || !c->node || !c->local || !c->pod || !c->handles)
        goto fail;
    memcpy(c->world, world, (size_t)size * sizeof(int));
    if (comm_view(c) != 0)
        goto fail;
    for (int i = 0; i < RT_SPLITS; i++) {
        rt_split_t *sp = &c->splits[i];
        sp->color = calloc((size_t)size, sizeof(int));
        sp->key = calloc((size_t)size, sizeof(int));
        sp->result = calloc((size_t)size, sizeof(rt_comm_t *));
        if (sp->color == NULL || sp->key == NULL || sp->result == NULL)
            goto fail;
    }
    for (int i = 0; i < RT_SLOTS; i++) {
        c->slots[i].fp = calloc((size_t)size, sizeof(rt_fp_t));
        c->slots[i].bufs = calloc((size_t)size * 3, sizeof(char *));
        c->slots[i].here = calloc((size_t)size, 1);
        c->slots[i].scheds = calloc((size_t)size, sizeof(hccn_sched_t *));
        c->slots[i].ops = calloc((size_t)size, sizeof(rt_op_t *));
        if (c->slots[i].fp == NULL || c->slots[i].bufs == NULL ||
            c->slots[i].here == NULL || c->slots[i].scheds == NULL ||
            c->slots[i].ops == NULL)
            goto fail;
    }
    for (int r = 0; r < size; r++) {
        hccn_comm_t *h = calloc(1, sizeof(*h));
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
    free((void *)s->xstate);
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
        free(h->algo_spec);
        h->algo_spec = NULL;
        hccn_rt_picks_clear(h);
    }
    atomic_store(&c->broken, 0);
    atomic_store(&c->aborted, 0);
    c->broken_msg[0] = '\0';
}

void hccn_rt_comm_free(rt_comm_t *c)
{
    if (c == NULL)
        return;
    for (int i = 0; i < RT_SLOTS; i++) {
        free((void *)c->slots[i].xstate);
        free(c->slots[i].fp);
        free(c->slots[i].bufs);
        free(c->slots[i].here);
        free(c->slots[i].scheds);
        free(c->slots[i].ops);
    }
    for (int i = 0; i < RT_SPLITS; i++) {
        free(c->splits[i].color);
        free(c->splits[i].key);
        free(c->splits[i].result);
    }
    hccn_rt_pairs_clear(c);
    free(c->moves.bufs);
    free(c->moves.moves);
    while (c->plans != NULL) {
        rt_plan_t *p = c->plans;
        c->plans = p->next;
        free(p->steps);
        free(p);
    }
    for (int i = 0; i < c->ncache; i++) {
        hccn_sched_free(c->cache[i].sched);
        free(c->cache[i].v);
    }
    free(c->cache);
    comm_free_handles(c);
    free(c->world);
    free(c->node);
    free(c->local);
    free(c->pod);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* The v-arrays of a (hccn_coll_args_t order: vcounts, vrcounts,
 * vsdispls, vrdispls); NULL where a has none. */
static void v_arrays(const hccn_coll_args_t *a, const uint64_t *arr[4])
{
    arr[0] = a->vcounts;
    arr[1] = a->vrcounts;
    arr[2] = a->vsdispls;
    arr[3] = a->vrdispls;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v;
    h *= 1099511628211ULL;
    return h ^ (h >> 31);
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
            pick_spec_equal(p, spec))
            return p;
    }
    return NULL;
}

void hccn_rt_picks_clear(hccn_comm_t *comm)
{
    for (int i = 0; i < RT_PICKS; i++)
        free(comm->picks[i].part.tasks);
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
    free(p->part.tasks);
    *p = (rt_pick_t){.used = 1, .coll = (int)a->coll, .root = a->root,
                     .has_spec = spec != NULL, .count = a->count,
                     .esize = a->esize, .algo = algo};
    if (spec != NULL)
        strcpy(p->spec, spec);
    return p;
}

/* A hash of everything a schedule's builder reads (a first filter only:
 * same_key decides). */
static uint64_t sched_key(const hccn_coll_args_t *a, const hccn_algo_t *algo)
{
    uint64_t h = 1469598103934665603ULL;
    uint64_t parts[] = {(uint64_t)a->coll, a->count, (uint64_t)a->esize,
                        (uint64_t)(int64_t)a->root, a->chunk_bytes,
                        (uint64_t)(uintptr_t)algo, (uint64_t)a->me};
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
        h = mix(h, parts[i]);
    const uint64_t *arr[4];
    v_arrays(a, arr);
    for (int k = 0; k < 4; k++)
        for (int r = 0; arr[k] != NULL && r < a->nranks; r++)
            h = mix(h, arr[k][r] + (uint64_t)k);
    return h;
}

/* 1 if entry e was built from exactly a and algo. */
static int same_key(const rt_sched_entry_t *e, uint64_t hash,
                    const hccn_coll_args_t *a, const hccn_algo_t *algo)
{
    const hccn_coll_args_t *b = &e->args;
    if (e->hash != hash || e->algo != algo || b->coll != a->coll ||
        b->nranks != a->nranks || b->count != a->count ||
        b->esize != a->esize || b->root != a->root ||
        b->chunk_bytes != a->chunk_bytes || b->me != a->me)
        return 0;
    const uint64_t *x[4], *y[4];
    v_arrays(a, x);
    v_arrays(b, y);
    size_t n = (size_t)a->nranks * sizeof(uint64_t);
    for (int k = 0; k < 4; k++)
        if ((x[k] == NULL) != (y[k] == NULL) ||
            (x[k] != NULL && memcmp(x[k], y[k], n) != 0))
            return 0;
    return 1;
}

/* Fills e with sched and a copy of a (its arrays copied into e->v);
 * -1 on no memory. */
static int entry_make(rt_sched_entry_t *e, uint64_t hash,
                      const hccn_coll_args_t *a, const hccn_algo_t *algo,
                      hccn_sched_t *sched)
{
    const uint64_t *arr[4];
    uint64_t **dst[4] = {(uint64_t **)&e->args.vcounts,
                         (uint64_t **)&e->args.vrcounts,
                         (uint64_t **)&e->args.vsdispls,
                         (uint64_t **)&e->args.vrdispls};
    size_t n = (size_t)a->nranks, used = 0;
    v_arrays(a, arr);
    int narr = 0;
    for (int k = 0; k < 4; k++)
        narr += arr[k] != NULL;
    *e = (rt_sched_entry_t){hash, *a, algo, NULL, sched};
    e->args.view = NULL;
    if (narr == 0)
        return 0;
    e->v = malloc((size_t)narr * n * sizeof(uint64_t));
    if (e->v == NULL)
        return -1;
    for (int k = 0; k < 4; k++) {
        if (arr[k] == NULL)
            continue;
        memcpy(e->v + used, arr[k], n * sizeof(uint64_t));
        *dst[k] = e->v + used;
        used += n;
    }
    return 0;
}

/* The cached schedule for (a, algo), or NULL (lock held). */
static const hccn_sched_t *cache_find(rt_comm_t *c, uint64_t key,
                                      const hccn_coll_args_t *a,
                                      const hccn_algo_t *algo)
{
    for (int i = 0; i < c->ncache; i++)
        if (same_key(&c->cache[i], key, a, algo))
            return c->cache[i].sched;
    return NULL;
}

/* Builds and checks the schedule of algo for a; NULL with the last error
 * set. */
static hccn_sched_t *sched_build(const hccn_coll_args_t *a,
                                 const hccn_algo_t *algo)
{
    hccn_sched_t *s = algo->build(a);
    char why[256];
    if (s == NULL) {
        hccn_rt_error(HCCN_ERR_UNSUPPORTED,
                      "%s: algorithm '%s' does not support %d ranks, count "
                      "%llu",
                      hccn_coll_name(a->coll), algo->name, a->nranks,
                      (unsigned long long)a->count);
        return NULL;
    }
    if (hccn_sched_validate(s, why, sizeof(why)) != 0) {
        hccn_rt_error(HCCN_ERR_INTERNAL, "%s: algorithm '%s' built an invalid "
                      "schedule: %s",
                      hccn_coll_name(a->coll), algo->name, why);
        hccn_sched_free(s);
        return NULL;
    }
    return s;
}

const hccn_sched_t *hccn_rt_comm_sched(rt_comm_t *c, const hccn_coll_args_t *a,
                                       const hccn_algo_t *algo, int *owned)
{
    *owned = 0;
    uint64_t key = sched_key(a, algo);
    const hccn_sched_t *found;
    pthread_mutex_lock(&c->lock);
    found = cache_find(c, key, a, algo);
    pthread_mutex_unlock(&c->lock);
    if (found != NULL)
        return found;

    hccn_sched_t *s = sched_build(a, algo);
    if (s == NULL)
        return NULL;
    pthread_mutex_lock(&c->lock);
    /* Another rank may have built the same one meanwhile. */
    found = cache_find(c, key, a, algo);
    if (found == NULL && c->ncache == c->capcache && c->capcache < CACHE_MAX) {
        int cap = c->capcache ? 2 * c->capcache : 16;
        rt_sched_entry_t *n = realloc(c->cache, (size_t)cap * sizeof(*n));
        if (n != NULL) {
            c->cache = n;
            c->capcache = cap;
        }
    }
    if (found == NULL && c->ncache < c->capcache &&
        entry_make(&c->cache[c->ncache], key, a, algo, s) == 0) {
        c->ncache++;
        found = s;
        s = NULL;
    }
    pthread_mutex_unlock(&c->lock);
    if (s != NULL) {
        if (found != NULL) {
            hccn_sched_free(s);
        } else {
            /* The cache is full: the caller owns this one. */
            *owned = 1;
            found = s;
        }
    }
    return found;
}

/* --------------------------------------------------------- public queries */

hccn_comm_t *hccn_comm_world(hccn_ctx_t *ctx)
{
    if (hccn_rt_proc_fwd())
        return hccn_rt_fwd_world(ctx);
    if (hccn_rt_ctx_check("hccn_comm_world", ctx) != HCCN_OK)
        return NULL;
    if (ctx->world->token == NULL && comm_token(ctx->world) != HCCN_OK) {
        hccn_rt_error(HCCN_ERR_NOMEM, "hccn_comm_world: rank %d: out of "
                      "memory for its handle", ctx->rank);
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
    atomic_store(&c->aborted, 1);
    hccn_rt_comm_break(c, HCCN_ERR_ABORTED, "aborted by hccn_comm_abort");
    hccn_rt_progressed(comm->ctx);
    for (int r = 0; r < c->size; r++)
        hccn_sim_bell_ring(&c->cl->ctxs[c->world[r]].bell);
    return HCCN_OK;
}
