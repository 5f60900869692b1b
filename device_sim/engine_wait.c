/*
 * Waiting on the timing engine (engine.h): a device blocks until its batch
 * is settled (the horizon has passed its end) or the wall-clock timeout
 * expires; devices advance their clocks, finish, and ask for their times.
 * Also the batches' reference counts and the debug dump.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <time.h>

#include "device_sim/engine_internal.h"
#include "device_sim/trace.h"
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
        hccn_sim_set_state(eng, d, DEV_WAITING);
        hccn_sim_settle_locked(eng);
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
            hccn_sim_set_state(eng, d, DEV_WAITING);
        }
    }
    hccn_sim_settle_locked(eng);
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
        hccn_sim_set_state(eng, d, DEV_WAITING);
        hccn_sim_settle_locked(eng);
    }
    while (!b->done) {
        if (pthread_cond_timedwait(&d->cv, &eng->lock, &ts) == ETIMEDOUT &&
            !b->done) {
            rc = HCCN_ERR_TIMEOUT;
            d->waiting_on = NULL;
            hccn_sim_set_state(eng, d, DEV_RUNNING);
            break;
        }
    }
    if (rc == HCCN_OK && b->end > d->clock)
        hccn_sim_set_clock(eng, d, b->end);
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
        hccn_sim_set_state(eng, d, DEV_RUNNING);
    }
    if (b->done && b->end > d->clock)
        hccn_sim_set_clock(eng, d, b->end);
    pthread_mutex_unlock(&eng->lock);
}

/* 1 when every event at or before t is settled: none is queued (the next
 * is later, or a start at t), and no running device could still post one
 * (the horizon has reached t). */
static int settled_through(hccn_sim_engine_t *eng, double t)
{
    double next;
    int cls;
    if (hccn_sim_held_back(eng, t, 0))
        return 0;
    hccn_sim_next_event(eng, &next, &cls);
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
        hccn_sim_set_state(eng, d, DEV_TESTING);
    else if (answer >= 0 && d->state == DEV_TESTING)
        hccn_sim_set_state(eng, d, DEV_RUNNING);
    pthread_mutex_unlock(&eng->lock);
    return answer;
}

int hccn_sim_test(hccn_sim_engine_t *eng, int dev, hccn_sim_batch_t *b)
{
    struct timespec ts;
    deadline_after(&ts, eng->timeout_s);
    pthread_mutex_lock(&eng->lock);
    edev_t *d = &eng->devs[dev];
    hccn_sim_set_state(eng, d, DEV_TESTING);
    while (!b->done && !settled_through(eng, d->clock))
        if (pthread_cond_timedwait(&d->cv, &eng->lock, &ts) == ETIMEDOUT)
            break;
    hccn_sim_set_state(eng, d, DEV_RUNNING);
    int done = b->done && b->end <= d->clock;
    pthread_mutex_unlock(&eng->lock);
    return done;
}

void hccn_sim_advance(hccn_sim_engine_t *eng, int dev, double dt)
{
    pthread_mutex_lock(&eng->lock);
    if (dt > 0.0) {
        edev_t *d = &eng->devs[dev];
        hccn_sim_set_clock(eng, d, d->clock + dt * hccn_sim_slowdown(eng, dev, d->clock));
        hccn_sim_settle_locked(eng);
    }
    pthread_mutex_unlock(&eng->lock);
}

void hccn_sim_finish(hccn_sim_engine_t *eng, int dev)
{
    pthread_mutex_lock(&eng->lock);
    edev_t *d = &eng->devs[dev];
    d->waiting_on = NULL;
    hccn_sim_set_state(eng, d, DEV_DONE);
    hccn_sim_settle_locked(eng);
    pthread_mutex_unlock(&eng->lock);
}

void hccn_sim_finish_all(hccn_sim_engine_t *eng)
{
    pthread_mutex_lock(&eng->lock);
    for (int i = 0; i < eng->ndev; i++) {
        eng->devs[i].waiting_on = NULL;
        hccn_sim_set_state(eng, &eng->devs[i], DEV_DONE);
    }
    hccn_sim_settle_locked(eng);
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
    hccn_sim_settle_locked(eng);
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
        hccn_sim_batch_free(eng, b);
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
        hccn_sim_set_state(eng, d, DEV_RUNNING);
    }
    hccn_sim_settle_locked(eng);
    pthread_mutex_unlock(&eng->lock);
}

/* ----------------------------------------------------------------- debug --- */

static const char *state_names[] = {"RUNNING", "WAITING", "TESTING", "DONE"};

void hccn_sim_engine_dump(hccn_sim_engine_t *eng, FILE *out)
{
    pthread_mutex_lock(&eng->lock);
    fprintf(out, "engine: now %.9g s, %zu queued events, %d flows, horizon %g\n",
            eng->now, eng->nheap, eng->nflows, hccn_sim_horizon(eng));
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

