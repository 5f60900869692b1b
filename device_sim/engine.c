/*
 * The timing engine: batches, task dependencies, the event queue, device
 * states and the horizon rule (see engine.h). Link sharing is in flow.c.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <time.h>

#include "device_sim/engine_internal.h"
#include "device_sim/trace.h"

enum { EV_READY, EV_DONE, EV_DELIVER, EV_FAULT };

#define MATCH_BUCKETS 4096
#define JOIN_BUCKETS 1024

/* ---------------------------------------------------------------- heap --- */

static int ev_less(const event_t *x, const event_t *y)
{
    if (x->t != y->t)
        return x->t < y->t;
    if (x->cls != y->cls)
        return x->cls < y->cls;
    if (x->dev != y->dev)
        return x->dev < y->dev;
    if (x->bseq != y->bseq)
        return x->bseq < y->bseq;
    if (x->idx != y->idx)
        return x->idx < y->idx;
    return x->type < y->type;
}

static int heap_insert(hccn_sim_engine_t *eng, event_t ev)
{
    if (eng->nheap == eng->capheap) {
        size_t cap = eng->capheap ? 2 * eng->capheap : 256;
        event_t *h = realloc(eng->heap, cap * sizeof(*h));
        if (h == NULL)
            return -1;
        eng->heap = h;
        eng->capheap = cap;
    }
    size_t i = eng->nheap++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!ev_less(&ev, &eng->heap[p]))
            break;
        eng->heap[i] = eng->heap[p];
        i = p;
    }
    eng->heap[i] = ev;
    return 0;
}

static int heap_push(hccn_sim_engine_t *eng, double t, int type, etask_t *task)
{
    event_t ev = {.t = t, .cls = type == EV_READY ? 1 : 0, .dev = task->dev,
                  .bseq = task->batch->seq, .idx = task->idx, .type = type,
                  .task = task};
    return heap_insert(eng, ev);
}

/* A fault of the plan takes effect at its time, before anything else that
 * happens then (device -1 sorts first). */
static int heap_push_fault(hccn_sim_engine_t *eng, int i)
{
    event_t ev = {.t = eng->faults[i].at, .cls = 0, .dev = -1, .idx = i,
                  .type = EV_FAULT, .task = NULL};
    return heap_insert(eng, ev);
}

static event_t heap_pop(hccn_sim_engine_t *eng)
{
    event_t top = eng->heap[0];
    event_t last = eng->heap[--eng->nheap];
    size_t i = 0, n = eng->nheap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && ev_less(&eng->heap[c + 1], &eng->heap[c]))
            c++;
        if (!ev_less(&eng->heap[c], &last))
            break;
        eng->heap[i] = eng->heap[c];
        i = c;
    }
    if (n > 0)
        eng->heap[i] = last;
    return top;
}

/* ------------------------------------------------------------- matching --- */

static size_t key_hash(const hccn_sim_key_t *k)
{
    uint64_t h = k->a * 0x9e3779b97f4a7c15ULL;
    h ^= k->b + 0x632be59bd9b4e019ULL + (h << 6) + (h >> 2);
    h ^= k->c + 0x85ebca6b0c2b2ae3ULL + (h << 6) + (h >> 2);
    return (size_t)(h ^ (h >> 29));
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
    etask_t **m = calloc(n, sizeof(*m));
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
    free(eng->match);
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

/* --------------------------------------------------------------- tasks --- */

static void wake(hccn_sim_engine_t *eng, int dev)
{
    pthread_cond_signal(&eng->devs[dev].cv);
    if (eng->wake != NULL && !eng->devs[dev].muted)
        eng->wake(eng->wake_arg, dev);
}

static void gate_open(hccn_sim_engine_t *eng, hccn_sim_batch_t *b, double t);

static void task_done(hccn_sim_engine_t *eng, etask_t *t, double when)
{
    hccn_sim_batch_t *b = t->batch;
    t->state = T_DONE;
    t->end = when;
    /* Lean: the partner forgets this half, whose batch may free it before
     * the partner ends (for the partner's checks a done mate and none are
     * the same: see task_ready, batch_fail). */
    if (eng->lean && t->mate != NULL) {
        t->mate->mate = NULL;
        t->mate = NULL;
    }
    for (uint32_t i = 0; i < t->nsucc; i++) {
        etask_t *s = &b->tasks[b->succ[t->succ_off + i]];
        if (when > s->ready)
            s->ready = when;
        if (--s->npending == 0)
            heap_push(eng, s->ready, EV_READY, s);
    }
    if (when > b->end)
        b->end = when;
    if (--b->left == 0)
        hccn_sim_batch_complete(eng, b);
}

/* The time factor of dev's local work and compute at time t: the plan's
 * latest npu_slow for dev that has begun by t. Read from the plan, not from
 * settled events, so it does not depend on how far the engine has got. */
static double slowdown(const hccn_sim_engine_t *eng, int dev, double t)
{
    return hccn_sim_fplan_slowdown(&eng->fplan, dev, t);
}

/* Local work runs first come, first served on its device. */
static void local_work(hccn_sim_engine_t *eng, etask_t *t, double when)
{
    edev_t *d = &eng->devs[t->dev];
    if (t->cost <= 0.0) {
        if (t->kind == HCCN_SIM_TASK_LOCAL)
            t->begin = when;            /* for traces */
        task_done(eng, t, when);
        return;
    }
    double start = when > d->local_free ? when : d->local_free;
    if (t->kind == HCCN_SIM_TASK_LOCAL)
        t->begin = start;               /* for traces */
    d->local_free = start + t->cost * slowdown(eng, t->dev, start);
    heap_push(eng, d->local_free, EV_DONE, t);
}

static void flow_drained(hccn_sim_engine_t *eng, flow_t *f)
{
    if (eng->rec != NULL)
        hccn_sim_replay_flow(eng, f->send, 1);
    heap_push(eng, eng->now, EV_DONE, f->send);
    heap_push(eng, eng->now + f->lat, EV_DELIVER, f->recv);
}

static void batch_fail(hccn_sim_engine_t *eng, hccn_sim_batch_t *b,
                       hccn_status_t status, hccn_status_t mates,
                       const char *reason);

static int failed(const hccn_sim_batch_t *b)
{
    return b->status != HCCN_OK;
}

static void task_ready(hccn_sim_engine_t *eng, etask_t *t, double when)
{
    t->state = T_READY;
    t->ready = when;
    if (t->kind == HCCN_SIM_TASK_LOCAL) {
        local_work(eng, t, when);
        return;
    }
    etask_t *m = t->mate;
    if (m != NULL && failed(m->batch)) {
        batch_fail(eng, t->batch, HCCN_ERR_REMOTE, HCCN_ERR_REMOTE,
                   m->batch->reason);
        return;
    }
    if (m == NULL || m->state != T_READY)
        return;
    etask_t *send = t->kind == HCCN_SIM_TASK_SEND ? t : m;
    etask_t *recv = t->kind == HCCN_SIM_TASK_SEND ? m : t;
    int links[HCCN_SIM_ROUTE_MAX], down;
    double lat;
    if (hccn_sim_flow_route(eng, send->dev, send->peer, links, &lat,
                            &down) < 0 && down >= 0) {
        char why[160];
        const hccn_sim_link_t *l = &eng->topo->links[down];
        snprintf(why, sizeof(why), "link %s->%s is down",
                 eng->topo->devs[l->src].name, eng->topo->devs[l->dst].name);
        batch_fail(eng, t->batch, HCCN_ERR_FAULT, HCCN_ERR_FAULT, why);
        return;
    }
    send->state = recv->state = T_FLOW;
    send->begin = recv->begin = when;   /* for traces */
    if (eng->rec != NULL)
        hccn_sim_replay_flow(eng, send, 0);
    hccn_sim_flow_advance(eng, when);
    hccn_sim_flow_start(eng, send, recv);
}

static void apply_fault(hccn_sim_engine_t *eng, int i);

static void process(hccn_sim_engine_t *eng, const event_t *ev)
{
    if (ev->type == EV_FAULT) {
        apply_fault(eng, ev->idx);
        return;
    }
    /* Events of a failed batch's tasks are void. */
    if (ev->task->state == T_DONE || failed(ev->task->batch))
        return;
    switch (ev->type) {
    case EV_READY:
        task_ready(eng, ev->task, ev->t);
        break;
    case EV_DONE:
        task_done(eng, ev->task, ev->t);
        break;
    case EV_DELIVER:
        local_work(eng, ev->task, ev->t);
        break;
    }
}

/* ------------------------------------------------------------- devices --- */

/* The running (or testing) devices are kept in a binary min-heap by
 * clock (eng->hz; hz_pos[dev] is a device's place, -1 when not running),
 * so the horizon is read, not searched for: a timing-only run of tens of
 * thousands of devices asks for it at every event. */
static int hz_running(const edev_t *d)
{
    return d->state == DEV_RUNNING || d->state == DEV_TESTING;
}

static void hz_put(hccn_sim_engine_t *eng, int i, int dev)
{
    eng->hz[i] = dev;
    eng->hz_pos[dev] = i;
}

static void hz_up(hccn_sim_engine_t *eng, int i)
{
    int dev = eng->hz[i];
    double c = eng->devs[dev].clock;
    while (i > 0 && eng->devs[eng->hz[(i - 1) / 2]].clock > c) {
        hz_put(eng, i, eng->hz[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    hz_put(eng, i, dev);
}

static void hz_down(hccn_sim_engine_t *eng, int i)
{
    int dev = eng->hz[i];
    double c = eng->devs[dev].clock;
    for (;;) {
        int k = 2 * i + 1;
        if (k >= eng->nhz)
            break;
        if (k + 1 < eng->nhz &&
            eng->devs[eng->hz[k + 1]].clock < eng->devs[eng->hz[k]].clock)
            k++;
        if (eng->devs[eng->hz[k]].clock >= c)
            break;
        hz_put(eng, i, eng->hz[k]);
        i = k;
    }
    hz_put(eng, i, dev);
}

/* Puts device d where its state and clock now place it. */
static void hz_fix(hccn_sim_engine_t *eng, const edev_t *d)
{
    int dev = (int)(d - eng->devs), i = eng->hz_pos[dev];
    if (hz_running(d) && i < 0) {
        hz_put(eng, eng->nhz++, dev);
        hz_up(eng, eng->nhz - 1);
    } else if (!hz_running(d) && i >= 0) {
        int last = eng->hz[--eng->nhz];
        eng->hz_pos[dev] = -1;
        if (i < eng->nhz) {
            hz_put(eng, i, last);
            hz_up(eng, i);
            hz_down(eng, eng->hz_pos[last]);
        }
    } else if (i >= 0) {
        hz_up(eng, i);
        hz_down(eng, eng->hz_pos[dev]);
    }
}

static void set_clock(hccn_sim_engine_t *eng, edev_t *d, double clock)
{
    d->clock = clock;
    hz_fix(eng, d);
}

/* The least clock of a running device: no event at or after it is known. */
static double horizon(const hccn_sim_engine_t *eng)
{
    return eng->nhz > 0 ? eng->devs[eng->hz[0]].clock : INFINITY;
}

/* 1 if the horizon is below t (at or below t when at_too is set): a
 * running device may still post work that comes before an event at t. */
static int held_back(const hccn_sim_engine_t *eng, double t, int at_too)
{
    double h = horizon(eng);
    return h < t || (at_too && h == t);
}

static void set_state(hccn_sim_engine_t *eng, edev_t *d, int state)
{
    eng->ntesting += (state == DEV_TESTING) - (d->state == DEV_TESTING);
    d->state = state;
    hz_fix(eng, d);
}

/* Earliest pending event: a flow draining (a completion) or the heap top. */
static int next_event(hccn_sim_engine_t *eng, double *t, int *cls)
{
    double drain = hccn_sim_flow_next(eng);
    /* At equal times a drain goes first: it is a completion, and drains are
     * ordered before the queue's completions. */
    if (eng->nheap > 0 && eng->heap[0].t < drain) {
        *t = eng->heap[0].t;
        *cls = eng->heap[0].cls;
        return 1;
    }
    if (isfinite(drain)) {
        *t = drain;
        *cls = 0;
        return 0;
    }
    *t = INFINITY;
    *cls = 1;
    return 1;
}

static void settle_locked(hccn_sim_engine_t *eng)
{
    for (;;) {
        double t;
        int cls;
        int from_heap = next_event(eng, &t, &cls);
        if (isinf(t))
            break;
        /* A completion at the horizon is settled, a start is not. */
        if (held_back(eng, t, cls == 1))
            break;
        if (from_heap) {
            event_t ev = heap_pop(eng);
            process(eng, &ev);
        } else {
            hccn_sim_flow_advance(eng, t);
            hccn_sim_flow_reap(eng, flow_drained);
        }
    }
    /* Wake testers whose question may now be answered. */
    for (int i = 0; i < eng->ndev && eng->ntesting > 0; i++)
        if (eng->devs[i].state == DEV_TESTING)
            wake(eng, i);
}

/* ------------------------------------------------------------- batches --- */

/* Memory for a batch's tasks and successors: from the engine's pool in
 * lean mode (pool.c), else malloc. */
void *hccn_sim_batch_mem(const hccn_sim_batch_t *b, size_t n)
{
    return b->pool != NULL ? hccn_sim_pool_alloc(b->pool, n) : malloc(n);
}

static void batch_drop_tasks(hccn_sim_batch_t *b)
{
    if (b->pool != NULL) {
        hccn_sim_pool_free(b->pool, b->tasks);
        hccn_sim_pool_free(b->pool, b->succ);
    } else {
        free(b->tasks);
        free(b->succ);
    }
    b->tasks = NULL;
    b->succ = NULL;
}

static void batch_free(hccn_sim_engine_t *eng, hccn_sim_batch_t *b)
{
    if (b->all_prev != NULL)
        b->all_prev->all_next = b->all_next;
    else
        eng->batches = b->all_next;
    if (b->all_next != NULL)
        b->all_next->all_prev = b->all_prev;
    hccn_sim_replay_unhollow(eng, b);
    batch_drop_tasks(b);
    free(b);
}

static void gate_start(hccn_sim_engine_t *eng, hccn_sim_batch_t *b, double t);

/* b's own start time is known: start it, or wait for its join's members. */
static void gate_open(hccn_sim_engine_t *eng, hccn_sim_batch_t *b, double t)
{
    ejoin_t *j = b->join;
    if (j == NULL) {
        gate_start(eng, b, t);
        return;
    }
    b->join = NULL;
    j->members[j->arrived++] = b;
    if (t > j->tmax)
        j->tmax = t;
    if (j->arrived < j->count)
        return;
    size_t h = key_hash(&j->key) & (JOIN_BUCKETS - 1);
    for (ejoin_t **pp = &eng->joins[h]; *pp != NULL; pp = &(*pp)->next)
        if (*pp == j) {
            *pp = j->next;
            break;
        }
    int replayed = hccn_sim_replay_join(eng, j->members, j->count, j->tmax,
                                        j->key);
    for (int i = 0; i < j->count && replayed <= 0; i++)
        if (replayed == 0)
            gate_start(eng, j->members[i], j->tmax);
        else
            batch_fail(eng, j->members[i], HCCN_ERR_NOMEM, HCCN_ERR_NOMEM,
                       "out of memory building a recorded call's tasks");
    free(j->members);
    free(j);
}

static void gate_start(hccn_sim_engine_t *eng, hccn_sim_batch_t *b, double t)
{
    b->gated = 0;
    b->start = t;
    edev_t *d = &eng->devs[b->dev];
    if (d->failed) {
        char why[160];
        snprintf(why, sizeof(why), "NPU %d failed at %.3f us", b->dev,
                 d->failed_at * 1e6);
        batch_fail(eng, b, HCCN_ERR_FAULT, HCCN_ERR_REMOTE, why);
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
            heap_push(eng, t, EV_READY, task);
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
        set_state(eng, d, DEV_RUNNING);     /* places it by its clock */
        wake(eng, b->dev);
    } else if (b->resumed && b->end > d->clock) {
        set_clock(eng, d, b->end);
    }
    hccn_sim_batch_t *next = b->stream_next;
    b->stream_next = NULL;
    if (next != NULL)
        gate_open(eng, next, next->t0 > b->end ? next->t0 : b->end);
    if (__atomic_load_n(&b->refs, __ATOMIC_RELAXED) == 0 && !b->abandoned) {
        batch_free(eng, b);
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
static void batch_fail(hccn_sim_engine_t *eng, hccn_sim_batch_t *b,
                       hccn_status_t status, hccn_status_t mates,
                       const char *reason)
{
    if (b->done || failed(b))
        return;
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
            batch_fail(eng, t->mate->batch, mates, HCCN_ERR_REMOTE, reason);
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
    batch_fail(eng, f->send->batch, HCCN_ERR_FAULT, HCCN_ERR_FAULT, why);
}

static void apply_fault(hccn_sim_engine_t *eng, int i)
{
    const hccn_sim_fault_t *f = &eng->faults[i];
    hccn_sim_flow_advance(eng, f->at);
    switch (f->kind) {
    case HCCN_SIM_FAULT_LINK_SLOW:
        eng->link_factor[f->link] = f->factor;
        hccn_sim_flow_rerate(eng);
        break;
    case HCCN_SIM_FAULT_LINK_DOWN:
        eng->link_factor[f->link] = 0.0;
        hccn_sim_flow_cut(eng, f->link, flow_cut);
        break;
    case HCCN_SIM_FAULT_NPU_SLOW:
        break;   /* read from the plan by slowdown() */
    case HCCN_SIM_FAULT_NPU_FAIL: {
        edev_t *d = &eng->devs[f->npu];
        char why[160];
        d->failed = 1;
        d->failed_at = f->at;
        snprintf(why, sizeof(why), "NPU %d failed at %.3f us", f->npu,
                 f->at * 1e6);
        for (hccn_sim_batch_t *b = eng->batches; b != NULL; b = b->all_next)
            if (b->dev == f->npu && !b->done)
                batch_fail(eng, b, HCCN_ERR_FAULT, HCCN_ERR_REMOTE, why);
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
    uint32_t *lists = malloc((2 * (size_t)n + 1) * sizeof(uint32_t));
    if (b->tasks == NULL || b->succ == NULL || lists == NULL) {
        free(lists);
        return -1;
    }
    uint32_t *nsucc = lists, *succ_off = lists + n;
    if (hccn_sim_succ_lists(tasks, n, deps, nsucc, succ_off, b->succ) != 0) {
        free(lists);
        return -2;
    }
    for (int i = 0; i < n; i++)
        b->tasks[i] = (etask_t){.kind = tasks[i].kind, .dev = b->dev,
                                .peer = tasks[i].peer, .idx = i,
                                .bytes = tasks[i].bytes,
                                .cost = tasks[i].cost, .key = tasks[i].key,
                                .npending = tasks[i].ndeps,
                                .succ_off = succ_off[i], .nsucc = nsucc[i],
                                .batch = b};
    free(lists);
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
    ejoin_t *j = calloc(1, sizeof(*j));
    if (j == NULL)
        return NULL;
    j->members = calloc((size_t)count, sizeof(*j->members));
    if (j->members == NULL) {
        free(j);
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
                              int sole, hccn_sim_replay_hint_t *hint);

hccn_sim_batch_t *hccn_sim_post(hccn_sim_engine_t *eng, int dev,
                                const hccn_sim_task_t *tasks, int ntasks,
                                const uint32_t *deps, hccn_sim_batch_t *after)
{
    return post(eng, dev, tasks, ntasks, deps, after, NULL, 0, 0, NULL);
}

hccn_sim_batch_t *hccn_sim_post_joined(hccn_sim_engine_t *eng, int dev,
                                       const hccn_sim_task_t *tasks,
                                       int ntasks, const uint32_t *deps,
                                       hccn_sim_batch_t *after,
                                       hccn_sim_key_t join, int count,
                                       int sole)
{
    return post(eng, dev, tasks, ntasks, deps, after, count > 1 ? &join : NULL,
                count, sole, NULL);
}

hccn_sim_batch_t *hccn_sim_post_hinted(hccn_sim_engine_t *eng, int dev,
                                       const hccn_sim_task_t *tasks,
                                       int ntasks, const uint32_t *deps,
                                       hccn_sim_batch_t *after,
                                       hccn_sim_key_t join, int count,
                                       int sole, hccn_sim_replay_hint_t *hint)
{
    return post(eng, dev, tasks, ntasks, deps, after, count > 1 ? &join : NULL,
                count, sole, hint);
}

static hccn_sim_batch_t *post(hccn_sim_engine_t *eng, int dev,
                              const hccn_sim_task_t *tasks, int ntasks,
                              const uint32_t *deps, hccn_sim_batch_t *after,
                              const hccn_sim_key_t *join, int count,
                              int sole, hccn_sim_replay_hint_t *hint)
{
    hccn_sim_batch_t *b = calloc(1, sizeof(*b));
    if (b == NULL)
        return NULL;
    b->dev = dev;
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
            free(b);
            return NULL;
        }
        pthread_mutex_lock(&eng->lock);
    }
    if (join != NULL && (b->join = join_get(eng, *join, count)) == NULL) {
        hccn_sim_replay_unhollow(eng, b);
        pthread_mutex_unlock(&eng->lock);
        batch_drop_tasks(b);
        free(b);
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
        gate_open(eng, b, t);
    }
    settle_locked(eng);
    pthread_mutex_unlock(&eng->lock);
    return b;
}

/* -------------------------------------------------------------- waiting --- */

static void deadline_after(struct timespec *ts, double seconds)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    double whole = floor(seconds);
    ts->tv_sec += (time_t)whole;
    ts->tv_nsec += (long)((seconds - whole) * 1e9);
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

void hccn_sim_wait_begin(hccn_sim_engine_t *eng, int dev,
                         hccn_sim_batch_t *b)
{
    pthread_mutex_lock(&eng->lock);
    edev_t *d = &eng->devs[dev];
    if (!b->done) {
        d->waiting_on = b;
        set_state(eng, d, DEV_WAITING);
        settle_locked(eng);
    }
    pthread_mutex_unlock(&eng->lock);
}

void hccn_sim_wait_begin_many(hccn_sim_engine_t *eng, const int *devs,
                              hccn_sim_batch_t *const *bs, int n)
{
    pthread_mutex_lock(&eng->lock);
    for (int i = 0; i < n; i++) {
        edev_t *d = &eng->devs[devs[i]];
        d->muted = 1;
        if (!bs[i]->done) {
            d->waiting_on = bs[i];
            set_state(eng, d, DEV_WAITING);
        }
    }
    settle_locked(eng);
    for (int i = 0; i < n; i++)
        eng->devs[devs[i]].muted = 0;
    pthread_mutex_unlock(&eng->lock);
}

hccn_status_t hccn_sim_wait_end(hccn_sim_engine_t *eng, int dev,
                                hccn_sim_batch_t *b)
{
    hccn_status_t rc = HCCN_OK;
    struct timespec ts;
    deadline_after(&ts, eng->timeout_s);
    pthread_mutex_lock(&eng->lock);
    edev_t *d = &eng->devs[dev];
    if (!b->done && d->state != DEV_WAITING) {
        d->waiting_on = b;
        set_state(eng, d, DEV_WAITING);
        settle_locked(eng);
    }
    while (!b->done) {
        if (pthread_cond_timedwait(&d->cv, &eng->lock, &ts) == ETIMEDOUT &&
            !b->done) {
            rc = HCCN_ERR_TIMEOUT;
            d->waiting_on = NULL;
            set_state(eng, d, DEV_RUNNING);
            break;
        }
    }
    if (rc == HCCN_OK && b->end > d->clock)
        set_clock(eng, d, b->end);
    pthread_mutex_unlock(&eng->lock);
    return rc;
}

void hccn_sim_wait_finish(hccn_sim_engine_t *eng, int dev,
                          hccn_sim_batch_t *b)
{
    /* Completed while dev waited for it, or sole: the engine has already
     * set dev running at the end (no one waits on a done batch again, and
     * clocks only move forward), so there is nothing left to do. */
    if (__atomic_load_n(&b->done, __ATOMIC_ACQUIRE) && b->resumed)
        return;
    pthread_mutex_lock(&eng->lock);
    edev_t *d = &eng->devs[dev];
    if (d->state == DEV_WAITING && d->waiting_on == b) {
        d->waiting_on = NULL;
        set_state(eng, d, DEV_RUNNING);
    }
    if (b->done && b->end > d->clock)
        set_clock(eng, d, b->end);
    pthread_mutex_unlock(&eng->lock);
}

/* 1 when every event at or before t is settled: none is queued (the next
 * is later, or a start at t), and no running device could still post one
 * (the horizon has reached t). */
static int settled_through(hccn_sim_engine_t *eng, double t)
{
    double next;
    int cls;
    if (held_back(eng, t, 0))
        return 0;
    next_event(eng, &next, &cls);
    return next > t || (next == t && cls == 1);
}

int hccn_sim_test_try(hccn_sim_engine_t *eng, int dev, hccn_sim_batch_t *b)
{
    pthread_mutex_lock(&eng->lock);
    edev_t *d = &eng->devs[dev];
    int answer = -1;
    if (b->done || settled_through(eng, d->clock))
        answer = b->done && b->end <= d->clock;
    if (answer < 0 && d->state == DEV_RUNNING)
        set_state(eng, d, DEV_TESTING);
    else if (answer >= 0 && d->state == DEV_TESTING)
        set_state(eng, d, DEV_RUNNING);
    pthread_mutex_unlock(&eng->lock);
    return answer;
}

int hccn_sim_test(hccn_sim_engine_t *eng, int dev, hccn_sim_batch_t *b)
{
    struct timespec ts;
    deadline_after(&ts, eng->timeout_s);
    pthread_mutex_lock(&eng->lock);
    edev_t *d = &eng->devs[dev];
    set_state(eng, d, DEV_TESTING);
    while (!b->done && !settled_through(eng, d->clock))
        if (pthread_cond_timedwait(&d->cv, &eng->lock, &ts) == ETIMEDOUT)
            break;
    set_state(eng, d, DEV_RUNNING);
    int done = b->done && b->end <= d->clock;
    pthread_mutex_unlock(&eng->lock);
    return done;
}

void hccn_sim_advance(hccn_sim_engine_t *eng, int dev, double dt)
{
    pthread_mutex_lock(&eng->lock);
    if (dt > 0.0) {
        edev_t *d = &eng->devs[dev];
        set_clock(eng, d, d->clock + dt * slowdown(eng, dev, d->clock));
        settle_locked(eng);
    }
    pthread_mutex_unlock(&eng->lock);
}

void hccn_sim_finish(hccn_sim_engine_t *eng, int dev)
{
    pthread_mutex_lock(&eng->lock);
    edev_t *d = &eng->devs[dev];
    d->waiting_on = NULL;
    set_state(eng, d, DEV_DONE);
    settle_locked(eng);
    pthread_mutex_unlock(&eng->lock);
}

void hccn_sim_finish_all(hccn_sim_engine_t *eng)
{
    pthread_mutex_lock(&eng->lock);
    for (int i = 0; i < eng->ndev; i++) {
        eng->devs[i].waiting_on = NULL;
        set_state(eng, &eng->devs[i], DEV_DONE);
    }
    settle_locked(eng);
    pthread_mutex_unlock(&eng->lock);
}

void hccn_sim_engine_set_wake(hccn_sim_engine_t *eng,
                              void (*fn)(void *arg, int dev), void *arg)
{
    pthread_mutex_lock(&eng->lock);
    eng->wake = fn;
    eng->wake_arg = arg;
    pthread_mutex_unlock(&eng->lock);
}

void hccn_sim_settle(hccn_sim_engine_t *eng)
{
    pthread_mutex_lock(&eng->lock);
    settle_locked(eng);
    pthread_mutex_unlock(&eng->lock);
}

double hccn_sim_clock(hccn_sim_engine_t *eng, int dev)
{
    pthread_mutex_lock(&eng->lock);
    double c = eng->devs[dev].clock;
    pthread_mutex_unlock(&eng->lock);
    return c;
}

int hccn_sim_batch_done(hccn_sim_engine_t *eng, const hccn_sim_batch_t *b)
{
    (void)eng;      /* no lock: ranks poll this while others post */
    return __atomic_load_n(&b->done, __ATOMIC_ACQUIRE);
}

double hccn_sim_batch_posted(const hccn_sim_batch_t *b)
{
    return b->t0;
}

double hccn_sim_batch_start(const hccn_sim_batch_t *b)
{
    return b->start;
}

double hccn_sim_batch_end(const hccn_sim_batch_t *b)
{
    return b->end;
}

double hccn_sim_task_end(const hccn_sim_batch_t *b, int i)
{
    if (b->tasks == NULL)
        return hccn_sim_replay_task_time(b, i, 1);
    return i >= 0 && i < b->ntasks ? b->tasks[i].end : NAN;
}

double hccn_sim_task_begin(const hccn_sim_batch_t *b, int i)
{
    if (b->tasks == NULL)
        return hccn_sim_replay_task_time(b, i, 0);
    return i >= 0 && i < b->ntasks ? b->tasks[i].begin : NAN;
}

void hccn_sim_engine_set_lean(hccn_sim_engine_t *eng, int lean)
{
    pthread_mutex_lock(&eng->lock);
    eng->lean = lean;
    hccn_sim_replay_changed(eng);   /* lean recordings may now apply */
    /* Kept once made: batches posted in lean mode hold pieces of it. */
    if (lean && eng->pool == NULL)
        eng->pool = hccn_sim_pool_create();   /* NULL: malloc, slower */
    pthread_mutex_unlock(&eng->lock);
}

int hccn_sim_hint_stands(hccn_sim_engine_t *eng,
                         const hccn_sim_replay_hint_t *hint)
{
    pthread_mutex_lock(&eng->lock);
    int ok = hccn_sim_replay_hint_ok(eng, hint);
    pthread_mutex_unlock(&eng->lock);
    return ok;
}

void hccn_sim_engine_set_recording(hccn_sim_engine_t *eng, int on)
{
    pthread_mutex_lock(&eng->lock);
    eng->no_recording = !on;
    pthread_mutex_unlock(&eng->lock);
}

long hccn_sim_engine_replays(hccn_sim_engine_t *eng)
{
    pthread_mutex_lock(&eng->lock);
    long n = eng->nreplays;
    pthread_mutex_unlock(&eng->lock);
    return n;
}

/* References are counted without the lock while they stay above zero:
 * the caller holds one, so the batch cannot be freed meanwhile. Only the
 * last release takes the lock, where completion reads the count. */
void hccn_sim_batch_retain(hccn_sim_engine_t *eng, hccn_sim_batch_t *b)
{
    (void)eng;
    __atomic_fetch_add(&b->refs, 1, __ATOMIC_RELAXED);
}

void hccn_sim_batch_release(hccn_sim_engine_t *eng, hccn_sim_batch_t *b)
{
    if (b == NULL)
        return;
    int r = __atomic_load_n(&b->refs, __ATOMIC_RELAXED);
    while (r > 1)
        if (__atomic_compare_exchange_n(&b->refs, &r, r - 1, 0,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            return;
    pthread_mutex_lock(&eng->lock);
    if (__atomic_sub_fetch(&b->refs, 1, __ATOMIC_RELAXED) == 0 && b->done &&
        !b->abandoned)
        batch_free(eng, b);
    pthread_mutex_unlock(&eng->lock);
}

void hccn_sim_batch_abandon(hccn_sim_engine_t *eng, int dev,
                            hccn_sim_batch_t *b)
{
    pthread_mutex_lock(&eng->lock);
    edev_t *d = &eng->devs[dev];
    b->abandoned = 1;
    if (d->state == DEV_WAITING && d->waiting_on == b) {
        d->waiting_on = NULL;
        set_state(eng, d, DEV_RUNNING);
    }
    settle_locked(eng);
    pthread_mutex_unlock(&eng->lock);
}

/* ----------------------------------------------------------------- debug --- */

static const char *state_names[] = {"RUNNING", "WAITING", "TESTING", "DONE"};

void hccn_sim_engine_dump(hccn_sim_engine_t *eng, FILE *out)
{
    pthread_mutex_lock(&eng->lock);
    fprintf(out, "engine: now %.9g s, %zu queued events, %d flows, horizon %g\n",
            eng->now, eng->nheap, eng->nflows, horizon(eng));
    for (int i = 0; i < eng->ndev; i++) {
        edev_t *d = &eng->devs[i];
        fprintf(out, "  dev %d %s clock %.9g\n", i, state_names[d->state],
                d->clock);
    }
    for (hccn_sim_batch_t *b = eng->batches; b != NULL; b = b->all_next) {
        if (b->done)
            continue;
        fprintf(out, "  batch dev %d #%llu: %d of %d tasks left%s\n", b->dev,
                (unsigned long long)b->seq, b->left, b->ntasks,
                b->gated ? " (gated)" : b->hollow ? " (not built: a recorded "
                "call's, waiting for its join)" : "");
        for (int i = 0; b->tasks != NULL && i < b->ntasks; i++) {
            etask_t *t = &b->tasks[i];
            if (t->state == T_DONE)
                continue;
            fprintf(out, "    task %d kind %d state %d peer %d pending %u "
                    "mate %s key %llu/%llu/%llu\n",
                    i, (int)t->kind, t->state, t->peer, t->npending,
                    t->mate ? "yes" : "no", (unsigned long long)t->key.a,
                    (unsigned long long)t->key.b, (unsigned long long)t->key.c);
        }
    }
    pthread_mutex_unlock(&eng->lock);
}

/* ------------------------------------------------------------ lifetime --- */

static void drop_all(hccn_sim_engine_t *eng)
{
    /* The unmatched halves' table is cleared as a whole below, so the
     * batches' tasks are not read again on their way out (they are most
     * of the engine's memory). */
    while (eng->batches != NULL)
        batch_free(eng, eng->batches);
    eng->nheap = 0;
    memset(eng->match, 0, eng->nmatch_buckets * sizeof(*eng->match));
    eng->nmatch_waiting = 0;
    eng->nopen = 0;
    hccn_sim_replay_reset(eng);
    for (int h = 0; h < JOIN_BUCKETS; h++)
        while (eng->joins[h] != NULL) {
            ejoin_t *j = eng->joins[h];
            eng->joins[h] = j->next;
            free(j->members);
            free(j);
        }
    hccn_sim_flow_reset(eng);
}

void hccn_sim_engine_reset(hccn_sim_engine_t *eng)
{
    pthread_mutex_lock(&eng->lock);
    if (eng->trace != NULL)             /* trace hook: the run is over */
        hccn_sim_trace_run_end(eng);
    drop_all(eng);
    eng->ntesting = 0;
    eng->nhz = 0;
    for (int i = 0; i < eng->ndev; i++)
        eng->hz_pos[i] = -1;
    for (int i = 0; i < eng->ndev; i++) {
        edev_t *d = &eng->devs[i];
        d->state = DEV_DONE;
        d->clock = 0.0;
        set_state(eng, d, DEV_RUNNING);
        d->waiting_on = NULL;
        d->nbatches = 0;
        d->local_free = 0.0;
        d->failed = 0;
    }
    for (int i = 0; i < eng->nfaults; i++)
        heap_push_fault(eng, i);
    pthread_mutex_unlock(&eng->lock);
}

int hccn_sim_engine_set_faults(hccn_sim_engine_t *eng,
                               const hccn_sim_fault_t *faults, int n)
{
    hccn_sim_fault_t *copy = NULL;
    hccn_sim_fplan_t fp;
    if (n > 0 && (copy = malloc((size_t)n * sizeof(*copy))) == NULL)
        return -1;
    if (hccn_sim_fplan_build(&fp, faults, n, eng->ndev) != 0) {
        free(copy);
        return -1;
    }
    if (n > 0)
        memcpy(copy, faults, (size_t)n * sizeof(*copy));
    pthread_mutex_lock(&eng->lock);
    free(eng->faults);
    hccn_sim_fplan_free(&eng->fplan);
    eng->faults = copy;
    eng->nfaults = n;
    eng->fplan = fp;
    pthread_mutex_unlock(&eng->lock);
    return 0;
}

double hccn_sim_fail_at(const hccn_sim_engine_t *eng, int dev)
{
    return hccn_sim_fplan_fail_at(&eng->fplan, dev);
}

hccn_status_t hccn_sim_batch_status(hccn_sim_engine_t *eng,
                                    const hccn_sim_batch_t *b, char *reason,
                                    size_t len)
{
    /* A completed batch's status and reason never change again. */
    int done = __atomic_load_n(&b->done, __ATOMIC_ACQUIRE);
    if (!done)
        pthread_mutex_lock(&eng->lock);
    hccn_status_t st = b->status;
    if (reason != NULL && len > 0)
        snprintf(reason, len, "%s", b->reason);
    if (!done)
        pthread_mutex_unlock(&eng->lock);
    return st;
}

hccn_sim_engine_t *hccn_sim_engine_create(const hccn_sim_topo_t *topo,
                                          double timeout_s)
{
    hccn_sim_engine_t *eng = calloc(1, sizeof(*eng));
    if (eng == NULL)
        return NULL;
    eng->topo = topo;
    eng->timeout_s = timeout_s > 0.0 ? timeout_s : 300.0;
    eng->ndev = eng->nlive = topo->nnpus;
    eng->nmatch_buckets = MATCH_BUCKETS;
    eng->match = calloc(MATCH_BUCKETS, sizeof(*eng->match));
    eng->joins = calloc(JOIN_BUCKETS, sizeof(*eng->joins));
    eng->devs = calloc((size_t)eng->ndev, sizeof(*eng->devs));
    eng->hz = malloc((2 * (size_t)eng->ndev + 1) * sizeof(int));
    eng->hz_pos = eng->hz != NULL ? eng->hz + eng->ndev : NULL;
    hccn_sim_lock_init(&eng->lock);
    if (eng->match == NULL || eng->joins == NULL || eng->devs == NULL ||
        eng->hz == NULL || hccn_sim_flow_init(eng) != 0) {
        hccn_sim_flow_free(eng);
        free(eng->hz);
        free(eng->match);
        free(eng->joins);
        free(eng->devs);
        pthread_mutex_destroy(&eng->lock);
        free(eng);
        return NULL;
    }
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    for (int i = 0; i < eng->ndev; i++)
        pthread_cond_init(&eng->devs[i].cv, &attr);
    pthread_condattr_destroy(&attr);
    hccn_sim_engine_reset(eng);
    return eng;
}

void hccn_sim_engine_destroy(hccn_sim_engine_t *eng)
{
    if (eng == NULL)
        return;
    if (eng->trace != NULL)             /* trace hook: end the last run */
        hccn_sim_engine_set_trace(eng, NULL);
    drop_all(eng);
    hccn_sim_pool_destroy(eng->pool);
    for (int i = 0; i < eng->ndev; i++)
        pthread_cond_destroy(&eng->devs[i].cv);
    hccn_sim_flow_free(eng);
    free(eng->heap);
    free(eng->faults);
    hccn_sim_fplan_free(&eng->fplan);
    free(eng->fold_rep);
    free(eng->fold_link);
    free(eng->match);
    free(eng->joins);
    free(eng->devs);
    free(eng->hz);
    pthread_mutex_destroy(&eng->lock);
    free(eng);
}

int hccn_sim_engine_set_fold(hccn_sim_engine_t *eng, const int *rep,
                             const int *link_map)
{
    int *r = NULL, *l = NULL, live = eng->ndev;
    size_t nd = (size_t)eng->ndev, nl = (size_t)eng->topo->nlinks;
    if (rep != NULL && link_map != NULL) {
        for (live = 0; live < eng->ndev && rep[live] == live; live++)
            ;
        for (int d = live; d < eng->ndev; d++)
            if (rep[d] < 0 || rep[d] >= live)
                return -1;
        r = malloc(nd * sizeof(*r));
        l = malloc(nl * sizeof(*l));
        if (r == NULL || l == NULL) {
            free(r);
            free(l);
            return -1;
        }
        memcpy(r, rep, nd * sizeof(*r));
        memcpy(l, link_map, nl * sizeof(*l));
    }
    pthread_mutex_lock(&eng->lock);
    free(eng->fold_rep);
    free(eng->fold_link);
    eng->fold_rep = r;
    eng->fold_link = l;
    eng->nlive = live;
    pthread_mutex_unlock(&eng->lock);
    return 0;
}

void hccn_sim_lock_init(pthread_mutex_t *m)
{
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_mutex_init(m, &attr);
    pthread_mutexattr_destroy(&attr);
}
