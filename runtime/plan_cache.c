/*
 * A communicator's plan cache (rt.h, rt_entry_t): everything worked out
 * once for one kind of call. The key is what the schedule's builder reads
 * (collective, count, element size, root, chunk, v-arrays) and the
 * algorithm selected for it (selection itself is the cluster's, cached by
 * topology content: hierarchy/select.c); the entry holds the schedule and
 * the orders in which drivers moved its bytes (exec_drive.c). Each rank
 * keeps a few pointers into it (its picks, comm.c), so a repeated call
 * finds its selection, schedule, engine tasks and plan without a lock.
 *
 * One invalidation rule: hccn_rt_plans_clear drops it all when what it
 * was made from changes (the cluster's fault plan: cluster_faults.c) and
 * when the communicator goes; a split makes a communicator with a cache
 * of its own. docs/performance.md says what it costs and saves.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "device_sim/alloc.h"
#include "runtime/rt.h"

#define ENTRIES_MAX 128   /* beyond: a schedule per call, freed with it */
#define PLANS_MAX 32      /* beyond: calls are driven step by step */

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

/* A hash of everything a schedule's builder reads (a first filter only:
 * same_key decides). */
static uint64_t sched_key(const hccn_coll_args_t *a, const hccn_algo_t *algo)
{
    uint64_t h = 1469598103934665603ULL;
    uint64_t parts[] = {(uint64_t)a->coll, a->count, (uint64_t)a->esize,
                        (uint64_t)(int64_t)a->root, a->chunk_bytes,
                        (uint64_t)(uintptr_t)algo, (uint64_t)a->me,
                        (uint64_t)a->in_switch};
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
static int same_key(const rt_entry_t *e, uint64_t hash,
                    const hccn_coll_args_t *a, const hccn_algo_t *algo)
{
    const hccn_coll_args_t *b = &e->args;
    if (e->hash != hash || e->algo != algo || b->coll != a->coll ||
        b->nranks != a->nranks || b->count != a->count ||
        b->esize != a->esize || b->root != a->root ||
        b->chunk_bytes != a->chunk_bytes || b->me != a->me ||
        b->in_switch != a->in_switch)
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

/* A new entry holding sched and a copy of a (its arrays copied into
 * e->v); NULL on no memory (sched is then still the caller's). */
static rt_entry_t *entry_make(uint64_t hash, const hccn_coll_args_t *a,
                              const hccn_algo_t *algo, hccn_sched_t *sched)
{
    const uint64_t *arr[4];
    size_t n = (size_t)a->nranks, used = 0;
    v_arrays(a, arr);
    int narr = 0;
    for (int k = 0; k < 4; k++)
        narr += arr[k] != NULL;
    rt_entry_t *e = hccn_sim_calloc(1, sizeof(*e));
    if (e == NULL)
        return NULL;
    *e = (rt_entry_t){hash, *a, algo, NULL, sched, NULL};
    e->args.view = NULL;
    e->args.levels = NULL;   /* the algorithm's, given again when built */
    if (narr == 0)
        return e;
    if ((e->v = hccn_sim_malloc((size_t)narr * n * sizeof(uint64_t))) == NULL) {
        hccn_sim_free(e);
        return NULL;
    }
    uint64_t **dst[4] = {(uint64_t **)&e->args.vcounts,
                         (uint64_t **)&e->args.vrcounts,
                         (uint64_t **)&e->args.vsdispls,
                         (uint64_t **)&e->args.vrdispls};
    for (int k = 0; k < 4; k++) {
        if (arr[k] == NULL)
            continue;
        memcpy(e->v + used, arr[k], n * sizeof(uint64_t));
        *dst[k] = e->v + used;
        used += n;
    }
    return e;
}

/* The entry for (a, algo), or NULL (lock held). */
static const rt_entry_t *find(const rt_comm_t *c, uint64_t key,
                              const hccn_coll_args_t *a,
                              const hccn_algo_t *algo)
{
    for (int i = 0; i < c->nentries; i++)
        if (same_key(c->entries[i], key, a, algo))
            return c->entries[i];
    return NULL;
}

/* Publishes a new entry for sched (lock held): the entry, or NULL when
 * the cache is full or out of memory (sched stays the caller's). */
static const rt_entry_t *publish(rt_comm_t *c, uint64_t key,
                                 const hccn_coll_args_t *a,
                                 const hccn_algo_t *algo, hccn_sched_t *sched)
{
    if (c->nentries == c->capentries && c->capentries < ENTRIES_MAX) {
        int cap = c->capentries ? 2 * c->capentries : 16;
        rt_entry_t **n = hccn_sim_realloc(c->entries, (size_t)cap * sizeof(*n));
        if (n == NULL)
            return NULL;
        c->entries = n;
        c->capentries = cap;
    }
    if (c->nentries == c->capentries)
        return NULL;
    rt_entry_t *e = entry_make(key, a, algo, sched);
    if (e != NULL)
        c->entries[c->nentries++] = e;
    return e;
}

/* Builds and checks the schedule of algo for a; NULL with the last error
 * set. */
static hccn_sched_t *sched_build(const hccn_coll_args_t *a,
                                 const hccn_algo_t *algo)
{
    hccn_sched_t *s = hccn_hier_build(algo, a);
    if (s == NULL)
        return NULL;
    if (hccn_sched_validate(s, NULL, 0) != 0) {
        hccn_sim_fail_context("%s: algorithm '%s'", hccn_coll_name(a->coll),
                              algo->name);
        hccn_sched_free(s);
        return NULL;
    }
    return s;
}

const rt_entry_t *hccn_rt_plan_entry(rt_comm_t *c, const hccn_coll_args_t *a,
                                     const hccn_algo_t *algo,
                                     hccn_sched_t **owned)
{
    *owned = NULL;
    uint64_t key = sched_key(a, algo);
    pthread_mutex_lock(&c->lock);
    const rt_entry_t *e = find(c, key, a, algo);
    pthread_mutex_unlock(&c->lock);
    if (e != NULL)
        return e;

    hccn_sched_t *s = sched_build(a, algo);
    if (s == NULL)
        return NULL;
    pthread_mutex_lock(&c->lock);
    /* Another rank may have made the same one meanwhile. */
    e = find(c, key, a, algo);
    int mine = e == NULL && (e = publish(c, key, a, algo, s)) != NULL;
    pthread_mutex_unlock(&c->lock);
    if (e == NULL)
        *owned = s;   /* the cache is full: this call's own */
    else if (!mine)
        hccn_sched_free(s);
    return e;
}

const rt_plan_t *hccn_rt_plan_find(rt_comm_t *c, const rt_entry_t *e,
                                   int compress, int *room)
{
    pthread_mutex_lock(&c->lock);
    const rt_plan_t *p = e->plans;
    while (p != NULL && p->compress != compress)
        p = p->next;
    *room = c->nplans < PLANS_MAX;
    pthread_mutex_unlock(&c->lock);
    return p;
}

void hccn_rt_plan_keep(rt_comm_t *c, const rt_entry_t *e, rt_plan_t *p)
{
    rt_entry_t *w = (rt_entry_t *)e;   /* plans grows under the lock */
    pthread_mutex_lock(&c->lock);
    if (c->nplans < PLANS_MAX) {
        p->next = w->plans;
        w->plans = p;
        c->nplans++;
        p = NULL;
    }
    pthread_mutex_unlock(&c->lock);
    if (p != NULL) {
        hccn_sim_free(p->steps);
        hccn_sim_free(p);
    }
}

void hccn_rt_plans_clear(rt_comm_t *c)
{
    for (int i = 0; i < c->nentries; i++) {
        rt_entry_t *e = c->entries[i];
        while (e->plans != NULL) {
            rt_plan_t *p = e->plans;
            e->plans = p->next;
            hccn_sim_free(p->steps);
            hccn_sim_free(p);
        }
        hccn_sched_free(e->sched);
        hccn_sim_free(e->v);
        hccn_sim_free(e);
    }
    c->nentries = 0;
    c->nplans = 0;
    c->moves.plan = NULL;
    for (int r = 0; c->handles != NULL && r < c->size; r++)
        if (c->handles[r] != NULL)
            hccn_rt_picks_clear(c->handles[r]);
}
