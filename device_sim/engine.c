/*
 * The timing engine's event loop (see engine.h for the contract and
 * docs/timing.md for the model): the event queue, what each event does to
 * its task (ready, done, delivered, a fault), the devices' states and
 * clocks, and the horizon rule that settles events in canonical order
 * only once no device can post anything earlier. Posting and matching are
 * in engine_post.c, waiting and queries in engine_wait.c, the engine's
 * lifetime in engine_life.c, link sharing (the rate solver) in flow.c,
 * replays in replay.c.
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
        event_t *h = hccn_sim_realloc(eng->heap, cap * sizeof(*h));
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

int hccn_sim_heap_push(hccn_sim_engine_t *eng, double t, int type, etask_t *task)
{
    event_t ev = {.t = t, .cls = type == EV_READY ? 1 : 0, .dev = task->dev,
                  .bseq = task->batch->seq, .idx = task->idx, .type = type,
                  .task = task};
    return heap_insert(eng, ev);
}

/* A fault of the plan takes effect at its time, before anything else that
 * happens then (device -1 sorts first). */
int hccn_sim_heap_push_fault(hccn_sim_engine_t *eng, int i)
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

/* --------------------------------------------------------------- tasks --- */

void hccn_sim_wake(hccn_sim_engine_t *eng, int dev)
{
    pthread_cond_signal(&eng->devs[dev].cv);
    if (eng->wake != NULL && !eng->devs[dev].muted)
        eng->wake(eng->wake_arg, dev);
}


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
        etask_t *s = &b->tasks[i < 2 ? t->succ_in[i]
                                     : b->succ[t->succ_off + i]];
        if (when > s->ready)
            s->ready = when;
        if (--s->npending == 0)
            hccn_sim_heap_push(eng, s->ready, EV_READY, s);
    }
    if (when > b->end)
        b->end = when;
    if (--b->left == 0)
        hccn_sim_batch_complete(eng, b);
}

/* The time factor of dev's local work and compute at time t: the plan's
 * latest npu_slow for dev that has begun by t. Read from the plan, not from
 * settled events, so it does not depend on how far the engine has got. */
double hccn_sim_slowdown(const hccn_sim_engine_t *eng, int dev, double t)
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
    d->local_free = start + t->cost * hccn_sim_slowdown(eng, t->dev, start);
    hccn_sim_heap_push(eng, d->local_free, EV_DONE, t);
}

static void flow_drained(hccn_sim_engine_t *eng, flow_t *f)
{
    if (eng->rec != NULL)
        hccn_sim_replay_flow(eng, f->send, 1);
    hccn_sim_heap_push(eng, eng->now, EV_DONE, f->send);
    hccn_sim_heap_push(eng, eng->now + f->lat + f->sw_lat, EV_DELIVER, f->recv);
}


int hccn_sim_batch_failed(const hccn_sim_batch_t *b)
{
    return b->status != HCCN_OK;
}

/* The host's time for message t (software.h): its device's host takes it
 * up first come, first served, no sooner than when, and the event of
 * type is queued again at its end. 1 if so, 0 when t owes nothing (no
 * such time, or paid already). */
static int host_message(hccn_sim_engine_t *eng, etask_t *t, double when,
                        int type)
{
    const hccn_sim_sw_t *sw = eng->topo->sw;
    if (sw == NULL)
        return 0;
    double o = t->kind == HCCN_SIM_TASK_SEND ? sw->send_s : sw->recv_s;
    if (o <= 0.0 || t->host_paid)
        return 0;
    edev_t *d = &eng->devs[t->dev];
    d->host_free = (when > d->host_free ? when : d->host_free) + o;
    t->host_paid = 1;
    hccn_sim_heap_push(eng, d->host_free, type, t);
    return 1;
}

static void task_ready(hccn_sim_engine_t *eng, etask_t *t, double when)
{
    /* A send is issued after its host's time for it; until then it is
     * not ready, and its receiver's side waits. */
    if (t->kind == HCCN_SIM_TASK_SEND && host_message(eng, t, when, EV_READY))
        return;
    t->state = T_READY;
    t->ready = when;
    if (t->kind == HCCN_SIM_TASK_LOCAL) {
        local_work(eng, t, when);
        return;
    }
    etask_t *m = t->mate;
    if (m != NULL && hccn_sim_batch_failed(m->batch)) {
        hccn_sim_batch_fail(eng, t->batch, HCCN_ERR_REMOTE, HCCN_ERR_REMOTE,
                   m->batch->reason);
        return;
    }
    if (m == NULL || m->state != T_READY)
        return;
    etask_t *send = t->kind == HCCN_SIM_TASK_SEND ? t : m;
    etask_t *recv = t->kind == HCCN_SIM_TASK_SEND ? m : t;
    int links[HCCN_SIM_ROUTE_MAX], down;
    double lat;
    int n = hccn_sim_flow_route(eng, send->dev, send->peer, links, &lat,
                                &down);
    if (n < 0 && down >= 0) {
        char why[160];
        const hccn_sim_link_t *l = &eng->topo->links[down];
        snprintf(why, sizeof(why), "link %s->%s is down",
                 eng->topo->devs[l->src].name, eng->topo->devs[l->dst].name);
        hccn_sim_batch_fail(eng, t->batch, HCCN_ERR_FAULT, HCCN_ERR_FAULT, why);
        return;
    }
    send->state = recv->state = T_FLOW;
    send->begin = recv->begin = when;   /* for traces */
    if (eng->rec != NULL)
        hccn_sim_replay_flow(eng, send, 0);
    hccn_sim_flow_advance(eng, when);
    if (hccn_sim_flow_start(eng, send, recv, n >= 0 ? links : NULL, n, lat,
                            down < 0 && eng->fold_link == NULL) != 0) {
        /* No memory for the flow: both sides fail with the cause. */
        send->state = recv->state = T_READY;
        hccn_sim_batch_fail(eng, t->batch, HCCN_ERR_NOMEM, HCCN_ERR_NOMEM,
                            hccn_sim_fail_msg());
    }
}


static void process(hccn_sim_engine_t *eng, const event_t *ev)
{
    if (ev->type == EV_FAULT) {
        hccn_sim_apply_fault(eng, ev->idx);
        return;
    }
    /* Events of a failed batch's tasks are void. */
    if (ev->task->state == T_DONE || hccn_sim_batch_failed(ev->task->batch))
        return;
    switch (ev->type) {
    case EV_READY:
        task_ready(eng, ev->task, ev->t);
        break;
    case EV_DONE:
        task_done(eng, ev->task, ev->t);
        break;
    case EV_DELIVER:    /* arrived: the host takes it in, then its work */
        if (!host_message(eng, ev->task, ev->t, EV_DELIVER))
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

void hccn_sim_set_clock(hccn_sim_engine_t *eng, edev_t *d, double clock)
{
    d->clock = clock;
    hz_fix(eng, d);
}

/* The least clock of a running device: no event at or after it is known. */
double hccn_sim_horizon(const hccn_sim_engine_t *eng)
{
    return eng->nhz > 0 ? eng->devs[eng->hz[0]].clock : INFINITY;
}

/* 1 if the horizon is below t (at or below t when at_too is set): a
 * running device may still post work that comes before an event at t. */
int hccn_sim_held_back(const hccn_sim_engine_t *eng, double t, int at_too)
{
    double h = hccn_sim_horizon(eng);
    return h < t || (at_too && h == t);
}

void hccn_sim_set_state(hccn_sim_engine_t *eng, edev_t *d, int state)
{
    eng->ntesting += (state == DEV_TESTING) - (d->state == DEV_TESTING);
    d->state = state;
    hz_fix(eng, d);
}

/* Earliest pending event: a flow draining (a completion) or the heap top. */
int hccn_sim_next_event(hccn_sim_engine_t *eng, double *t, int *cls)
{
    /* Another event at the burst's instant goes first: no flow drains
     * then (flow_comp.c, Bursts). A later one sees it re-rated. */
    if (eng->burst && eng->nheap > 0 && eng->heap[0].t == eng->now) {
        *t = eng->heap[0].t;
        *cls = eng->heap[0].cls;
        return 1;
    }
    hccn_sim_burst_flush(eng);
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

void hccn_sim_settle_locked(hccn_sim_engine_t *eng)
{
    for (;;) {
        double t;
        int cls;
        int from_heap = hccn_sim_next_event(eng, &t, &cls);
        if (isinf(t))
            break;
        /* A completion at the horizon is settled, a start is not. */
        if (hccn_sim_held_back(eng, t, cls == 1))
            break;
        if (from_heap) {
            event_t ev = heap_pop(eng);
            /* The next event's task is read next: fetch it while this
             * one is processed (a run of millions of tasks misses the
             * cache on each). */
            if (eng->nheap > 0 && eng->heap[0].task != NULL)
                __builtin_prefetch(eng->heap[0].task);
            process(eng, &ev);
        } else {
            hccn_sim_flow_advance(eng, t);
            hccn_sim_flow_reap(eng, flow_drained);
        }
    }
    hccn_sim_burst_flush(eng);
    /* Wake testers whose question may now be answered. */
    for (int i = 0; i < eng->ndev && eng->ntesting > 0; i++)
        if (eng->devs[i].state == DEV_TESTING)
            hccn_sim_wake(eng, i);
}

