/*
 * Posting work to the timing engine (engine.h): a device's batch of tasks
 * is checked and built, its dependencies become successor lists, its
 * transfers are matched with the other side's by key (a SEND and its RECV
 * may be posted in either order, by either device), and gates open a
 * batch's roots when its device reaches the post time. A fault of the
 * plan fails the batches whose tasks it touches. Called with the engine's
 * lock held unless a function says otherwise.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <time.h>

#include "device_sim/alloc.h"
#include "device_sim/engine_internal.h"
#include "device_sim/software.h"
#include "device_sim/trace.h"

/* ------------------------------------------------------------- matching --- */

/* A 64-bit finalizer: every input bit moves every output bit. */
static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* The buckets are the hash's low bits, so every part of the key must
 * reach them: a folded run's keys are (rank << 32 | step) in c
 * (hierarchy/fold.h), whose rank a weaker mix left in the high bits,
 * chaining some 70 halves per bucket on a 72-rank node. */
static size_t key_hash(const hccn_sim_key_t *k)
{
    return (size_t)mix64(k->a ^ mix64(k->b ^ mix64(k->c)));
}

static int key_eq(const hccn_sim_key_t *x, const hccn_sim_key_t *y)
{
    return x->a == y->a && x->b == y->b && x->c == y->c;
}

/* Doubles the buckets of the unmatched halves when they hold two per
 * bucket on average (a whole schedule posted before anything runs). A
 * half has at most one partner, so the chains' order does not matter.
 * Stays as it is on no memory (only slower). */
static void match_grow(hccn_sim_engine_t *eng)
{
    size_t n = 2 * eng->nmatch_buckets;
    etask_t **m = hccn_sim_calloc(n, sizeof(*m));
    if (m == NULL)
        return;
    for (size_t b = 0; b < eng->nmatch_buckets; b++)
        while (eng->match[b] != NULL) {
            etask_t *t = eng->match[b];
            size_t h = key_hash(&t->key) & (n - 1);
            eng->match[b] = t->hash_next;
            t->hash_next = m[h];
            m[h] = t;
        }
    hccn_sim_free(eng->match);
    eng->match = m;
    eng->nmatch_buckets = n;
}

/* Whether halves o and t (of one key) name each other, as devices or,
 * folded, as copies in node 0. */
static int pairs(const hccn_sim_engine_t *eng, const etask_t *o,
                 const etask_t *t)
{
    const int *rep = eng->fold_rep;
    if (rep == NULL)
        return o->dev == t->peer && o->peer == t->dev;
    return rep[o->dev] == rep[t->peer] && rep[o->peer] == rep[t->dev];
}

/* Pairs t with a waiting half of the same key, or leaves t waiting. */
void hccn_sim_match_half(hccn_sim_engine_t *eng, etask_t *t)
{
    if (eng->nmatch_waiting > 2 * eng->nmatch_buckets)
        match_grow(eng);
    size_t h = key_hash(&t->key) & (eng->nmatch_buckets - 1);
    etask_t **pp = &eng->match[h];
    for (; *pp != NULL; pp = &(*pp)->hash_next) {
        etask_t *o = *pp;
        if (key_eq(&o->key, &t->key) && o->kind != t->kind &&
            pairs(eng, o, t)) {
            *pp = o->hash_next;
            o->hash_next = NULL;
            o->mate = t;
            t->mate = o;
            eng->nmatch_waiting--;
            return;
        }
    }
    t->hash_next = eng->match[h];
    eng->match[h] = t;
    eng->nmatch_waiting++;
}

/* ------------------------------------------------------------- batches --- */

/* Memory for a batch's tasks and successors: from the engine's pool in
 * lean mode (pool.c), else malloc. */
void *hccn_sim_batch_mem(const hccn_sim_batch_t *b, size_t n)
{
    return b->pool != NULL ? hccn_sim_pool_alloc(b->pool, n) : hccn_sim_malloc(n);
}

static void batch_drop_tasks(hccn_sim_batch_t *b)
{
    if (b->pool != NULL) {
        hccn_sim_pool_free(b->pool, b->tasks);
        hccn_sim_pool_free(b->pool, b->succ);
    } else {
        hccn_sim_free(b->tasks);
        hccn_sim_free(b->succ);
    }
    b->tasks = NULL;
    b->succ = NULL;
}

void hccn_sim_batch_free(hccn_sim_engine_t *eng, hccn_sim_batch_t *b)
{
    if (b->all_prev != NULL)
        b->all_prev->all_next = b->all_next;
    else
        eng->batches = b->all_next;
    if (b->all_next != NULL)
        b->all_next->all_prev = b->all_prev;
    hccn_sim_replay_unhollow(eng, b);
    batch_drop_tasks(b);
    hccn_sim_free(b);
}

static void gate_start(hccn_sim_engine_t *eng, hccn_sim_batch_t *b, double t);

/* b's own start time is known: start it, or wait for its join's members. */
void hccn_sim_gate_open(hccn_sim_engine_t *eng, hccn_sim_batch_t *b, double t)
{
    ejoin_t *j = b->join;
    if (j == NULL) {
        gate_start(eng, b, t + b->launch);   /* the call's launch */
        return;
    }
    b->join = NULL;
    b->joining = 1;
    j->members[j->arrived++] = b;
    if (t > j->tmax)
        j->tmax = t;
    if (b->launch > j->lmax)
        j->lmax = b->launch;
    if (j->arrived < j->count)
        return;
    /* The call's launch, the largest of its members' (software.h): as
     * adding it to each member's time (rounding is monotonic) when they
     * are all one. */
    j->tmax += j->lmax;
    size_t h = key_hash(&j->key) & (JOIN_BUCKETS - 1);
    for (ejoin_t **pp = &eng->joins[h]; *pp != NULL; pp = &(*pp)->next)
        if (*pp == j) {
            *pp = j->next;
            break;
        }
    /* Every member starts at tmax before any is started: a failure of one
     * (a failed NPU's) ends the others there too, whatever their order. */
    for (int i = 0; i < j->count; i++) {
        j->members[i]->joining = 0;
        j->members[i]->start = j->tmax;
    }
    int replayed = hccn_sim_replay_join(eng, j->members, j->count, j->tmax,
                                        j->key);
    for (int i = 0; i < j->count && replayed <= 0; i++)
        if (replayed == 0)
            gate_start(eng, j->members[i], j->tmax);
        else
            hccn_sim_batch_fail(eng, j->members[i], HCCN_ERR_NOMEM,
                                HCCN_ERR_NOMEM, hccn_sim_fail_msg());
    hccn_sim_free(j->members);
    hccn_sim_free(j);
}

static void gate_start(hccn_sim_engine_t *eng, hccn_sim_batch_t *b, double t)
{
    b->gated = 0;
    b->joining = 0;
    b->start = t;
    edev_t *d = &eng->devs[b->dev];
    if (b->deferred != HCCN_OK) {
        char why[sizeof(b->reason)];
        snprintf(why, sizeof(why), "%s", b->reason);
        hccn_sim_batch_fail(eng, b, b->deferred, b->deferred_mates, why);
        return;
    }
    if (d->failed) {
        char why[160];
        snprintf(why, sizeof(why), "NPU %d failed at %.3f us", b->dev,
                 d->failed_at * 1e6);
        hccn_sim_batch_fail(eng, b, HCCN_ERR_FAULT, HCCN_ERR_REMOTE, why);
        return;
    }
    if (b->ntasks == 0) {
        b->end = t;
        hccn_sim_batch_complete(eng, b);
        return;
    }
    for (int i = 0; i < b->ntasks; i++) {
        etask_t *task = &b->tasks[i];
        if (task->npending == 0) {
            task->ready = t;
            hccn_sim_heap_push(eng, t, EV_READY, task);
        } else {
            task->ready = t;
        }
    }
}

void hccn_sim_batch_complete(hccn_sim_engine_t *eng, hccn_sim_batch_t *b)
{
    eng->nopen--;
    if (b->end < b->start)
        b->end = b->start;
    /* The host's issue of the call (software.h): it ends no sooner. */
    if (eng->topo->sw != NULL && !hccn_sim_batch_failed(b) &&
        b->end < b->start + hccn_sim_sw_floor(eng->topo->sw, b->launch))
        b->end = b->start + hccn_sim_sw_floor(eng->topo->sw, b->launch);
    edev_t *d = &eng->devs[b->dev];
    int waited = d->state == DEV_WAITING && d->waiting_on == b;
    /* A sole batch's device posts nothing before it ends, and then goes on
     * from its end: it may be moved there now, waiting or not (a replayed
     * call completes before its ranks wait for it). */
    b->resumed = waited || (b->sole && d->state == DEV_RUNNING);
    /* Released: a reader of done (hccn_sim_batch_done, without the lock)
     * then sees the end, the status and resumed. */
    __atomic_store_n(&b->done, 1, __ATOMIC_RELEASE);
    if (b->rec != NULL)
        hccn_sim_replay_member_done(eng, b);
    if (waited) {
        d->waiting_on = NULL;
        if (b->end > d->clock)
            d->clock = b->end;
        hccn_sim_set_state(eng, d, DEV_RUNNING);     /* places it by its clock */
        hccn_sim_wake(eng, b->dev);
    } else if (b->resumed && b->end > d->clock) {
        hccn_sim_set_clock(eng, d, b->end);
    }
    hccn_sim_batch_t *next = b->stream_next;
    b->stream_next = NULL;
    if (next != NULL)
        hccn_sim_gate_open(eng, next, next->t0 > b->end ? next->t0 : b->end);
    if (__atomic_load_n(&b->refs, __ATOMIC_RELAXED) == 0 && !b->abandoned) {
        hccn_sim_batch_free(eng, b);
    } else if (eng->lean && !b->abandoned && eng->trace == NULL) {
        /* Every task is done: no event, flow or unmatched half names one,
         * and no partner does (task_done). */
        batch_drop_tasks(b);
    }
}

/* Ends b at the current time with status, and the batches on the other
 * side of its unfinished transfers with `mates` (HCCN_ERR_REMOTE when the
 * cause is b's NPU, HCCN_ERR_FAULT when it is a link both share); they
 * pass HCCN_ERR_REMOTE on. Queued events of its tasks become void; the
 * batch stays in memory until the next reset. */
void hccn_sim_batch_fail(hccn_sim_engine_t *eng, hccn_sim_batch_t *b,
                       hccn_status_t status, hccn_status_t mates,
                       const char *reason)
{
    if (b->done || hccn_sim_batch_failed(b))
        return;
    if (b->join != NULL || b->joining) {
        /* Not started: it fails when its join completes, at its start. Its
         * device waits for it until then, as its peers do, so a failure
         * does not let some members of a call end before others have
         * called it (their clocks would hold the horizon at the failure
         * while the late member waits for a time beyond it). */
        if (b->deferred == HCCN_OK) {
            b->deferred = status;
            b->deferred_mates = mates;
            snprintf(b->reason, sizeof(b->reason), "%s", reason);
        }
        return;
    }
    b->status = status;
    snprintf(b->reason, sizeof(b->reason), "%s", reason);
    b->abandoned = 1;
    for (int i = 0; b->tasks != NULL && i < b->ntasks; i++) {
        etask_t *t = &b->tasks[i];
        if (t->state == T_DONE)
            continue;
        if (t->state == T_FLOW)
            hccn_sim_flow_drop(eng, t);
        if (t->mate != NULL && t->mate->state != T_DONE)
            hccn_sim_batch_fail(eng, t->mate->batch, mates, HCCN_ERR_REMOTE, reason);
        t->state = T_DONE;
        t->end = eng->now;
    }
    b->left = 0;
    if (b->start > b->end)
        b->end = b->start;
    if (eng->now > b->end)
        b->end = eng->now;
    if (b->gated)
        b->gated = 0;
    hccn_sim_batch_complete(eng, b);
}

static void flow_cut(hccn_sim_engine_t *eng, flow_t *f)
{
    char why[160];
    (void)f;
    snprintf(why, sizeof(why), "a link on the route from NPU %d to NPU %d "
             "went down", f->send->dev, f->recv->dev);
    f->send->state = f->recv->state = T_READY;  /* not in a flow any more */
    hccn_sim_batch_fail(eng, f->send->batch, HCCN_ERR_FAULT, HCCN_ERR_FAULT, why);
}

void hccn_sim_apply_fault(hccn_sim_engine_t *eng, int i)
{
    const hccn_sim_fault_t *f = &eng->faults[i];
    hccn_sim_flow_advance(eng, f->at);
    switch (f->kind) {
    case HCCN_SIM_FAULT_LINK_SLOW:
        hccn_sim_link_scale(eng, f->link, f->factor);
        hccn_sim_flow_rerate(eng);
        break;
    case HCCN_SIM_FAULT_LINK_DOWN:
        hccn_sim_link_scale(eng, f->link, 0.0);
        hccn_sim_flow_cut(eng, f->link, flow_cut);
        break;
    case HCCN_SIM_FAULT_NPU_SLOW:
        break;   /* read from the plan by hccn_sim_slowdown() */
    case HCCN_SIM_FAULT_NPU_FAIL: {
        edev_t *d = &eng->devs[f->npu];
        char why[160];
        d->failed = 1;
        d->failed_at = f->at;
        snprintf(why, sizeof(why), "NPU %d failed at %.3f us", f->npu,
                 f->at * 1e6);
        for (hccn_sim_batch_t *b = eng->batches; b != NULL; b = b->all_next)
            if (b->dev == f->npu && !b->done)
                hccn_sim_batch_fail(eng, b, HCCN_ERR_FAULT, HCCN_ERR_REMOTE, why);
        break;
    }
    }
}

int hccn_sim_succ_lists(const hccn_sim_task_t *tasks, int n,
                        const uint32_t *deps, uint32_t *nsucc,
                        uint32_t *succ_off, uint32_t *succ)
{
    for (int i = 0; i < n; i++)
        nsucc[i] = 0;
    for (int i = 0; i < n; i++)
        for (uint32_t k = 0; k < tasks[i].ndeps; k++) {
            uint32_t d = deps[tasks[i].dep_off + k];
            if (d >= (uint32_t)i)
                return -1;      /* deps must point backwards */
            nsucc[d]++;
        }
    uint32_t off = 0;
    for (int i = 0; i < n; i++) {
        succ_off[i] = off;
        off += nsucc[i];
        nsucc[i] = 0;
    }
    for (int i = 0; i < n; i++)
        for (uint32_t k = 0; k < tasks[i].ndeps; k++) {
            uint32_t d = deps[tasks[i].dep_off + k];
            succ[succ_off[d] + nsucc[d]++] = (uint32_t)i;
        }
    return 0;
}

static int batch_build(hccn_sim_batch_t *b, const hccn_sim_task_t *tasks,
                       int n, const uint32_t *deps)
{
    uint32_t ndeps = 0;
    for (int i = 0; i < n; i++)
        ndeps += tasks[i].ndeps;
    /* Not calloc: every task and successor is written below. Posting a
     * schedule is bound by touching its tasks' fresh memory, and clearing
     * it first touched it twice; so the successor lists are made in a
     * small array first and each task is written once. */
    b->tasks = hccn_sim_batch_mem(b, (size_t)(n > 0 ? n : 1) *
                                         sizeof(etask_t));
    b->succ = hccn_sim_batch_mem(b, (ndeps > 0 ? ndeps : 1) *
                                        sizeof(uint32_t));
    uint32_t *lists = hccn_sim_malloc((2 * (size_t)n + 1) * sizeof(uint32_t));
    if (b->tasks == NULL || b->succ == NULL || lists == NULL) {
        hccn_sim_free(lists);
        return -1;
    }
    uint32_t *nsucc = lists, *succ_off = lists + n;
    if (hccn_sim_succ_lists(tasks, n, deps, nsucc, succ_off, b->succ) != 0) {
        hccn_sim_free(lists);
        hccn_sim_fail(HCCN_ERR_INTERNAL, "device %d: a task depends on "
                      "itself or a later task (dependencies must point "
                      "backwards)", b->dev);
        return -2;
    }
    for (int i = 0; i < n; i++)
        b->tasks[i] = (etask_t){.kind = tasks[i].kind, .dev = b->dev,
                                .peer = tasks[i].peer, .idx = i,
                                .bytes = tasks[i].bytes,
                                .cost = tasks[i].cost, .key = tasks[i].key,
                                .via = tasks[i].via,
                                .npending = tasks[i].ndeps,
                                .succ_off = succ_off[i], .nsucc = nsucc[i],
                                .succ_in = SUCC_IN(b->succ, succ_off[i],
                                                   nsucc[i]),
                                .batch = b};
    hccn_sim_free(lists);
    return 0;
}

/* The open join of key, created for count members if new; NULL on no
 * memory. Lock held. */
static ejoin_t *join_get(hccn_sim_engine_t *eng, hccn_sim_key_t key, int count)
{
    size_t h = key_hash(&key) & (JOIN_BUCKETS - 1);
    for (ejoin_t *j = eng->joins[h]; j != NULL; j = j->next)
        if (key_eq(&j->key, &key))
            return j;
    ejoin_t *j = hccn_sim_calloc(1, sizeof(*j));
    if (j == NULL)
        return NULL;
    j->members = hccn_sim_calloc((size_t)count, sizeof(*j->members));
    if (j->members == NULL) {
        hccn_sim_free(j);
        return NULL;
    }
    j->key = key;
    j->count = count;
    j->tmax = -INFINITY;
    j->next = eng->joins[h];
    eng->joins[h] = j;
    return j;
}

static hccn_sim_batch_t *post(hccn_sim_engine_t *eng, int dev,
                              const hccn_sim_task_t *tasks, int ntasks,
                              const uint32_t *deps, hccn_sim_batch_t *after,
                              const hccn_sim_key_t *join, int count,
                              int sole, hccn_sim_replay_hint_t *hint,
                              const hccn_sim_call_t *call);

hccn_sim_batch_t *hccn_sim_post(hccn_sim_engine_t *eng, int dev,
                                const hccn_sim_task_t *tasks, int ntasks,
                                const uint32_t *deps, hccn_sim_batch_t *after)
{
    return post(eng, dev, tasks, ntasks, deps, after, NULL, 0, 0, NULL, NULL);
}

hccn_sim_batch_t *hccn_sim_post_joined(hccn_sim_engine_t *eng, int dev,
                                       const hccn_sim_task_t *tasks,
                                       int ntasks, const uint32_t *deps,
                                       hccn_sim_batch_t *after,
                                       hccn_sim_key_t join, int count,
                                       int sole)
{
    return post(eng, dev, tasks, ntasks, deps, after, count > 1 ? &join : NULL,
                count, sole, NULL, NULL);
}

hccn_sim_batch_t *hccn_sim_post_hinted(hccn_sim_engine_t *eng, int dev,
                                       const hccn_sim_task_t *tasks,
                                       int ntasks, const uint32_t *deps,
                                       hccn_sim_batch_t *after,
                                       hccn_sim_key_t join, int count,
                                       int sole, hccn_sim_replay_hint_t *hint,
                                       const hccn_sim_call_t *call)
{
    return post(eng, dev, tasks, ntasks, deps, after, count > 1 ? &join : NULL,
                count, sole, hint, call);
}

static hccn_sim_batch_t *post(hccn_sim_engine_t *eng, int dev,
                              const hccn_sim_task_t *tasks, int ntasks,
                              const uint32_t *deps, hccn_sim_batch_t *after,
                              const hccn_sim_key_t *join, int count,
                              int sole, hccn_sim_replay_hint_t *hint,
                              const hccn_sim_call_t *call)
{
    hccn_sim_batch_t *b = hccn_sim_calloc(1, sizeof(*b));
    if (b == NULL)
        return NULL;
    b->dev = dev;
    if (eng->topo->sw != NULL)
        b->launch = hccn_sim_sw_post_launch(eng->topo, dev, tasks, ntasks,
                                            hint, call);
    b->proto_scale = call != NULL && call->proto_scale > 1
                         ? call->proto_scale : 1;
    b->family = call != NULL ? call->family : 0;
    b->tree_bytes = call != NULL ? call->tree_bytes : 0;
    b->proto = eng->topo->sw == NULL ? -1
               : hccn_sim_sw_call_proto(eng->topo->sw,
                                        call != NULL && call->nvswitch);
    b->sole = sole;
    b->refs = 1;
    b->ntasks = b->left = ntasks;
    b->pool = eng->pool;
    pthread_mutex_lock(&eng->lock);
    /* A member of a call the engine has recorded is posted hollow: no
     * tasks are built until the join shows they are needed (replay.c). */
    if (sole && join != NULL && count == eng->nlive)
        b->hollow = hccn_sim_replay_lookup(eng, dev, tasks, ntasks, deps,
                                           *join, hint);
    if (b->hollow == NULL) {
        pthread_mutex_unlock(&eng->lock);
        if ((tasks == NULL && ntasks > 0) ||
            batch_build(b, tasks, ntasks, deps) != 0) {
            batch_drop_tasks(b);
            hccn_sim_free(b);
            return NULL;
        }
        pthread_mutex_lock(&eng->lock);
    }
    if (join != NULL && (b->join = join_get(eng, *join, count)) == NULL) {
        hccn_sim_replay_unhollow(eng, b);
        pthread_mutex_unlock(&eng->lock);
        batch_drop_tasks(b);
        hccn_sim_free(b);
        return NULL;
    }
    edev_t *d = &eng->devs[dev];
    b->seq = d->nbatches++;
    b->t0 = d->clock;
    b->no_record = eng->no_recording;
    eng->nopen++;
    b->all_next = eng->batches;
    if (eng->batches != NULL)
        eng->batches->all_prev = b;
    eng->batches = b;
    for (int i = 0; b->tasks != NULL && i < ntasks; i++)
        if (b->tasks[i].kind != HCCN_SIM_TASK_LOCAL)
            hccn_sim_match_half(eng, &b->tasks[i]);
    if (after != NULL && !after->done) {
        b->gated = 1;
        after->stream_next = b;
    } else {
        double t = b->t0;
        if (after != NULL && after->end > t)
            t = after->end;
        hccn_sim_gate_open(eng, b, t);
    }
    hccn_sim_settle_locked(eng);
    pthread_mutex_unlock(&eng->lock);
    return b;
}

