/*
 * Handles: what the API hands out for communicator handles and futures, and
 * who may use them.
 *
 * A handle is not a pointer but a token: a tag, a slot of a process-wide
 * table and the slot's generation. Freeing a handle bumps its slot's
 * generation, so a token kept after its handle went (a sub-communicator
 * handle kept from one hccn_cluster_run for the next, a future used after
 * hccn_future_free) no longer matches and is reported as what it was and
 * how it went; nothing it pointed to is read. The slot keeps that record
 * until it is reused, and freed slots are reused oldest first.
 *
 * Every handle belongs to one rank (its context). Each rank's thread knows
 * its context (rt_self, set by the run), so a handle used on another rank's
 * thread is refused with the name of the rank that used it, not the one
 * that owns it.
 *
 * Threads: slots are made and freed under table_lock; a lookup reads the
 * generation (acquire) and then the slot, without the lock. A handle is
 * freed by its owner or after the run's threads have joined, so a lookup
 * never races with the free of the handle it looks up, unless a program
 * shares handles across threads, which the ownership check then reports.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "device_sim/alloc.h"
#include "runtime/rt.h"

#define CHUNK_BITS 12
#define CHUNK (1u << CHUNK_BITS)
#define CHUNKS 4096                  /* 16M handles at once */
#define TAG 0xA5ULL                  /* top byte of every token */
#define GEN_MASK 0xFFFFFFu           /* 24 bits of generation in a token */
#define KEEP_FRESH CHUNK             /* slots made before any is reused */

typedef struct {
    _Atomic uint32_t gen;            /* bumped when freed */
    int kind;                        /* RT_H_*; kept when freed */
    int why;                         /* RT_GONE_*: how it was freed */
    int live;
    uint32_t next_free;              /* FIFO of freed slots */
    void *obj;
    const hccn_ctx_t *owner;         /* compared, never read */
    rt_handle_info_t info;
} slot_t;

static slot_t *_Atomic chunks[CHUNKS];
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t nslots;              /* slots made (under table_lock) */
static uint32_t free_head = UINT32_MAX, free_tail = UINT32_MAX;

static _Thread_local hccn_ctx_t *rt_self;

void hccn_rt_set_self(hccn_ctx_t *ctx)
{
    rt_self = ctx;
}

hccn_ctx_t *hccn_rt_self(void)
{
    return rt_self;
}

static slot_t *slot_at(uint32_t i)
{
    slot_t *c = atomic_load_explicit(&chunks[i >> CHUNK_BITS],
                                     memory_order_acquire);
    return c != NULL ? &c[i & (CHUNK - 1)] : NULL;
}

/* A slot for a new handle (table_lock held): a fresh one while fewer than
 * KEEP_FRESH exist or none is free, else the oldest freed one. */
static int slot_take(uint32_t *idx)
{
    if (free_head != UINT32_MAX && nslots >= KEEP_FRESH) {
        *idx = free_head;
        free_head = slot_at(*idx)->next_free;
        if (free_head == UINT32_MAX)
            free_tail = UINT32_MAX;
        return 0;
    }
    if (nslots >= (uint32_t)CHUNKS * CHUNK) {
        hccn_sim_fail(HCCN_ERR_NOMEM, "the handle table is full: %u "
                      "communicator and future handles live",
                      (unsigned)CHUNKS * CHUNK);
        return -1;
    }
    uint32_t c = nslots >> CHUNK_BITS;
    if (atomic_load_explicit(&chunks[c], memory_order_relaxed) == NULL) {
        slot_t *n = hccn_sim_calloc(CHUNK, sizeof(*n));
        if (n == NULL)
            return -1;
        for (uint32_t k = 0; k < CHUNK; k++)
            atomic_init(&n[k].gen, 1);
        hccn_sim_alloc_keep(n);   /* the table outlives every cluster */
        atomic_store_explicit(&chunks[c], n, memory_order_release);
    }
    *idx = nslots++;
    return 0;
}

static void *token_of(uint32_t idx, uint32_t gen)
{
    uintptr_t t = (uintptr_t)(TAG << 56) |
                  ((uintptr_t)(gen & GEN_MASK) << 32) | idx;
    return (void *)t;
}

void *hccn_rt_handle_new(int kind, void *obj, const hccn_ctx_t *owner,
                         const rt_handle_info_t *info)
{
    uint32_t idx;
    pthread_mutex_lock(&table_lock);
    if (slot_take(&idx) != 0) {
        pthread_mutex_unlock(&table_lock);
        return NULL;
    }
    slot_t *s = slot_at(idx);
    s->kind = kind;
    s->why = RT_GONE_NONE;
    s->live = 1;
    s->obj = obj;
    s->owner = owner;
    s->info = *info;
    void *t = token_of(idx, atomic_load_explicit(&s->gen, memory_order_relaxed));
    pthread_mutex_unlock(&table_lock);
    return t;
}

/* The slot a token names, or NULL when it names none. */
static slot_t *token_slot(const void *token, uint32_t *gen)
{
    uintptr_t t = (uintptr_t)token;
    if (sizeof(uintptr_t) < 8 || (uint64_t)t >> 56 != TAG)
        return NULL;
    uint32_t idx = (uint32_t)(t & 0xFFFFFFFFu);
    if (idx >= (uint32_t)CHUNKS * CHUNK)
        return NULL;
    *gen = (uint32_t)((uint64_t)t >> 32) & GEN_MASK;
    return slot_at(idx);
}

void hccn_rt_handle_free(void *token, int why)
{
    uint32_t gen = 0;
    slot_t *s = token_slot(token, &gen);
    if (s == NULL)
        return;
    pthread_mutex_lock(&table_lock);
    uint32_t g = atomic_load_explicit(&s->gen, memory_order_relaxed);
    if (s->live && (g & GEN_MASK) == gen) {
        s->live = 0;
        s->why = why;
        s->obj = NULL;
        uint32_t next = g + 1;
        if ((next & GEN_MASK) == 0)
            next++;
        atomic_store_explicit(&s->gen, next, memory_order_release);
        uint32_t idx = (uint32_t)((uintptr_t)token & 0xFFFFFFFFu);
        s->next_free = UINT32_MAX;
        if (free_tail != UINT32_MAX)
            slot_at(free_tail)->next_free = idx;
        else
            free_head = idx;
        free_tail = idx;
    }
    pthread_mutex_unlock(&table_lock);
}

static const char *kind_word(int kind)
{
    return kind == RT_H_COMM ? "communicator handle" : "future";
}

/* "rank 3's handle on communicator 5 (4 ranks)", "rank 2's future of
 * allreduce #7 on communicator 1" */
static void describe(const slot_t *s, char *buf, size_t len)
{
    const rt_handle_info_t *in = &s->info;
    if (s->kind == RT_H_COMM && in->world)
        snprintf(buf, len, "rank %d's handle on the world communicator",
                 in->rank);
    else if (s->kind == RT_H_COMM)
        snprintf(buf, len, "rank %d's handle on communicator %llu (%d ranks)",
                 in->rank, (unsigned long long)in->uid, in->size);
    else
        snprintf(buf, len, "rank %d's future of %s #%llu on communicator %llu",
                 in->rank, in->name, (unsigned long long)in->seq,
                 (unsigned long long)in->uid);
}

static const char *gone_word(int why)
{
    switch (why) {
    case RT_GONE_DESTROYED:
        return "it was already destroyed by hccn_comm_destroy";
    case RT_GONE_RUN_END:
        return "it was freed when the hccn_cluster_run that made it ended "
               "(handles and futures live for one run)";
    case RT_GONE_CLUSTER:
        return "its cluster was destroyed";
    case RT_GONE_FUTURE_FREE:
        return "it was freed by hccn_future_free";
    default:
        return "it was freed";
    }
}

/* "rank 2" or "a thread that is no rank" for the caller. */
static void caller_word(char *buf, size_t len)
{
    if (rt_self != NULL)
        snprintf(buf, len, "rank %d", rt_self->rank);
    else
        snprintf(buf, len, "a thread outside any rank's function");
}

/* The error for a token that resolves to nothing usable (table_lock held
 * while the slot is read). */
static hccn_status_t refuse(const char *fn, int kind, const void *token,
                            slot_t *s, uint32_t gen)
{
    char who[64], what[160];
    caller_word(who, sizeof(who));
    if (s == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "%s: %s passed %p, which is not a %s made by "
                             "hccn (a stray or corrupted value)",
                             fn, who, token, kind_word(kind));
    pthread_mutex_lock(&table_lock);
    uint32_t g = atomic_load_explicit(&s->gen, memory_order_relaxed);
    uint32_t after = gen + 1;
    if ((after & GEN_MASK) == 0)
        after++;
    int known = s->kind != 0 && !s->live && (g & GEN_MASK) == (after & GEN_MASK);
    int skind = s->kind, why = s->why;
    describe(s, what, sizeof(what));
    pthread_mutex_unlock(&table_lock);
    if (!known)
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "%s: %s used a stale %s %p: it was freed long "
                             "ago and its record is gone",
                             fn, who, kind_word(kind), token);
    if (skind != kind)
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "%s: %s passed a %s where a %s was expected",
                             fn, who, kind_word(skind), kind_word(kind));
    return hccn_rt_error(HCCN_ERR_INVALID,
                         "%s: %s used a stale %s: %s; %s", fn, who,
                         kind_word(kind), what, gone_word(why));
}

hccn_status_t hccn_rt_handle_get(const char *fn, int kind, const void *token,
                                 int own, void **obj)
{
    *obj = NULL;
    if (token == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID, "%s: %s is NULL", fn,
                             kind == RT_H_COMM ? "comm" : "future");
    uint32_t gen = 0;
    slot_t *s = token_slot(token, &gen);
    if (s == NULL ||
        (atomic_load_explicit(&s->gen, memory_order_acquire) & GEN_MASK) != gen)
        return refuse(fn, kind, token, s, gen);
    if (s->kind != kind) {
        char who[64];
        caller_word(who, sizeof(who));
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "%s: %s passed a %s where a %s was expected", fn,
                             who, kind_word(s->kind), kind_word(kind));
    }
    if (own && s->owner != rt_self) {
        char who[64], what[160];
        caller_word(who, sizeof(who));
        describe(s, what, sizeof(what));
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "%s: %s used %s: a %s is used only by its own "
                             "rank, on that rank's thread, during the run",
                             fn, who, what, kind_word(kind));
    }
    *obj = s->obj;
    return HCCN_OK;
}

hccn_status_t hccn_rt_ctx_check(const char *fn, const hccn_ctx_t *ctx)
{
    if (ctx == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID, "%s: ctx is NULL", fn);
    hccn_ctx_t *self = rt_self;
    if (ctx == self)
        return HCCN_OK;
    if (self == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "%s: called with a context on a thread that is "
                             "no rank's: a context is used only by its rank, "
                             "inside hccn_cluster_run",
                             fn);
    uintptr_t p = (uintptr_t)ctx, lo = (uintptr_t)self->cl->ctxs;
    uintptr_t hi = lo + (uintptr_t)self->cl->nranks * sizeof(*self->cl->ctxs);
    if (p >= lo && p < hi && (p - lo) % sizeof(*self->cl->ctxs) == 0)
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "%s: rank %d passed the context of rank %d: a "
                             "context is used only by its own rank",
                             fn, self->rank,
                             (int)((p - lo) / sizeof(*self->cl->ctxs)));
    return hccn_rt_error(HCCN_ERR_INVALID,
                         "%s: rank %d passed a context that is not one of its "
                         "cluster's",
                         fn, self->rank);
}

/* ---------------------------------------------------------------- clusters */

/* Clusters are plain pointers (their contexts are arrays inside them), so
 * they are checked against the list of live ones: a destroyed cluster, or
 * a context of one, is refused instead of read. A new cluster may reuse a
 * destroyed one's address; that case is not told apart. */
static const hccn_cluster_t **clusters;
static int nclusters, capclusters;

int hccn_rt_cluster_register(const hccn_cluster_t *cl)
{
    int rc = 0;
    pthread_mutex_lock(&table_lock);
    if (nclusters == capclusters) {
        int cap = capclusters ? 2 * capclusters : 8;
        const hccn_cluster_t **n =
            hccn_sim_realloc(clusters, (size_t)cap * sizeof(*n));
        if (n == NULL)
            rc = -1;
        else {
            clusters = n;
            capclusters = cap;
        }
    }
    if (rc == 0)
        clusters[nclusters++] = cl;
    pthread_mutex_unlock(&table_lock);
    return rc;
}

int hccn_rt_cluster_forget(const hccn_cluster_t *cl)
{
    int found = 0;
    pthread_mutex_lock(&table_lock);
    for (int i = 0; i < nclusters && !found; i++)
        if (clusters[i] == cl) {
            clusters[i] = clusters[--nclusters];
            found = 1;
        }
    if (nclusters == 0) {
        hccn_sim_free(clusters);
        clusters = NULL;
        capclusters = 0;
    }
    pthread_mutex_unlock(&table_lock);
    return found;
}

/* 1 if cl is live (table_lock held). */
static int cluster_live(const hccn_cluster_t *cl)
{
    for (int i = 0; i < nclusters; i++)
        if (clusters[i] == cl)
            return 1;
    return 0;
}

/* The error for a pointer p that is no live what: names the caller (its
 * rank, or "the main thread") and the pointer. */
static hccn_status_t not_live(const char *fn, const void *p, const char *what)
{
    char who[64];
    caller_word(who, sizeof(who));
    return hccn_rt_error(HCCN_ERR_INVALID, "%s: %s passed %p, which is %s",
                         fn, who, p, what);
}

hccn_status_t hccn_rt_cluster_check(const char *fn, const hccn_cluster_t *cl)
{
    if (cl == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID, "%s: cluster is NULL", fn);
    if (rt_self != NULL && rt_self->cl == cl)
        return HCCN_OK;
    pthread_mutex_lock(&table_lock);
    int live = cluster_live(cl);
    pthread_mutex_unlock(&table_lock);
    return live ? HCCN_OK
                : not_live(fn, cl, "no live cluster (it was destroyed, or "
                                   "never created)");
}

hccn_status_t hccn_rt_ctx_query(const char *fn, const hccn_ctx_t *ctx)
{
    if (ctx == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID, "%s: ctx is NULL", fn);
    if (ctx == rt_self)
        return HCCN_OK;
    int live = 0;
    uintptr_t p = (uintptr_t)ctx;
    pthread_mutex_lock(&table_lock);
    for (int i = 0; i < nclusters && !live; i++) {
        uintptr_t lo = (uintptr_t)clusters[i]->ctxs;
        uintptr_t n = (uintptr_t)clusters[i]->nranks;
        live = lo != 0 && p >= lo && p < lo + n * sizeof(hccn_ctx_t) &&
               (p - lo) % sizeof(hccn_ctx_t) == 0;
    }
    pthread_mutex_unlock(&table_lock);
    return live ? HCCN_OK
                : not_live(fn, ctx, "no context of a live cluster (its "
                                    "cluster was destroyed?)");
}
