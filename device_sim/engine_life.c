/*
 * The timing engine's lifetime (engine.h): creation for a topology, reset
 * between runs, the fault plan it applies and the fold it runs (timing-
 * only runs on node 0's devices, docs/performance.md).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <time.h>

#include "device_sim/alloc.h"
#include "device_sim/engine_internal.h"
#include "device_sim/trace.h"
/* ------------------------------------------------------------ lifetime --- */

static void drop_all(hccn_sim_engine_t *eng)
{
    /* The unmatched halves' table is cleared as a whole below, so the
     * batches' tasks are not read again on their way out (they are most
     * of the engine's memory). */
    while (eng->batches != NULL)
        hccn_sim_batch_free(eng, eng->batches);
    eng->nheap = 0;
    memset(eng->match, 0, eng->nmatch_buckets * sizeof(*eng->match));
    eng->nmatch_waiting = 0;
    eng->nopen = 0;
    hccn_sim_replay_reset(eng);
    for (int h = 0; h < JOIN_BUCKETS; h++)
        while (eng->joins[h] != NULL) {
            ejoin_t *j = eng->joins[h];
            eng->joins[h] = j->next;
            hccn_sim_free(j->members);
            hccn_sim_free(j);
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
        hccn_sim_set_state(eng, d, DEV_RUNNING);
        d->waiting_on = NULL;
        d->nbatches = 0;
        d->local_free = 0.0;
        d->host_free = 0.0;
        d->failed = 0;
    }
    for (int i = 0; i < eng->nfaults; i++)
        hccn_sim_heap_push_fault(eng, i);
    pthread_mutex_unlock(&eng->lock);
}

int hccn_sim_engine_set_faults(hccn_sim_engine_t *eng,
                               const hccn_sim_fault_t *faults, int n)
{
    hccn_sim_fault_t *copy = NULL;
    hccn_sim_fplan_t fp;
    if (n > 0 && (copy = hccn_sim_malloc((size_t)n * sizeof(*copy))) == NULL)
        return -1;
    if (hccn_sim_fplan_build(&fp, faults, n, eng->ndev) != 0) {
        hccn_sim_free(copy);
        return -1;
    }
    if (n > 0)
        memcpy(copy, faults, (size_t)n * sizeof(*copy));
    pthread_mutex_lock(&eng->lock);
    hccn_sim_free(eng->faults);
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
    hccn_sim_engine_t *eng = hccn_sim_calloc(1, sizeof(*eng));
    if (eng == NULL)
        return NULL;
    eng->topo = topo;
    eng->timeout_s = timeout_s > 0.0 ? timeout_s : 300.0;
    eng->ndev = eng->nlive = topo->nnpus;
    eng->nmatch_buckets = MATCH_BUCKETS;
    eng->match = hccn_sim_calloc(MATCH_BUCKETS, sizeof(*eng->match));
    eng->joins = hccn_sim_calloc(JOIN_BUCKETS, sizeof(*eng->joins));
    eng->devs = hccn_sim_calloc((size_t)eng->ndev, sizeof(*eng->devs));
    eng->hz = hccn_sim_malloc((2 * (size_t)eng->ndev + 1) * sizeof(int));
    eng->hz_pos = eng->hz != NULL ? eng->hz + eng->ndev : NULL;
    hccn_sim_lock_init(&eng->lock);
    if (eng->match == NULL || eng->joins == NULL || eng->devs == NULL ||
        eng->hz == NULL || hccn_sim_flow_init(eng) != 0) {
        hccn_sim_flow_free(eng);
        hccn_sim_free(eng->hz);
        hccn_sim_free(eng->match);
        hccn_sim_free(eng->joins);
        hccn_sim_free(eng->devs);
        pthread_mutex_destroy(&eng->lock);
        hccn_sim_free(eng);
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
    hccn_sim_free(eng->heap);
    hccn_sim_free(eng->faults);
    hccn_sim_fplan_free(&eng->fplan);
    hccn_sim_free(eng->fold_rep);
    hccn_sim_free(eng->fold_link);
    hccn_sim_free(eng->fold_div);
    hccn_sim_free(eng->live_slot);
    hccn_sim_free(eng->match);
    hccn_sim_free(eng->joins);
    hccn_sim_free(eng->devs);
    hccn_sim_free(eng->hz);
    pthread_mutex_destroy(&eng->lock);
    hccn_sim_free(eng);
}

int hccn_sim_engine_set_fold(hccn_sim_engine_t *eng, const int *rep,
                             const int *link_map, const double *link_div)
{
    int *r = NULL, *l = NULL, *slot = NULL, live = eng->ndev;
    double *dv = NULL;
    size_t nd = (size_t)eng->ndev, nl = (size_t)eng->topo->nlinks;
    if (rep != NULL && link_map != NULL) {
        /* The devices that are their own copy run; every other stands
         * for one of them. */
        live = 0;
        for (int d = 0; d < eng->ndev; d++) {
            if (rep[d] == d) {
                live++;
                continue;
            }
            if (rep[d] < 0 || rep[d] >= eng->ndev || rep[rep[d]] != rep[d]) {
                hccn_sim_fail(HCCN_ERR_INTERNAL, "fold: device %d stands "
                              "for %d, not a simulated device", d, rep[d]);
                return -1;
            }
        }
        r = hccn_sim_malloc(nd * sizeof(*r));
        l = hccn_sim_malloc(nl * sizeof(*l));
        slot = hccn_sim_malloc(nd * sizeof(*slot));
        dv = link_div != NULL ? hccn_sim_malloc(nl * sizeof(*dv)) : NULL;
        if (r == NULL || l == NULL || slot == NULL ||
            (link_div != NULL && dv == NULL)) {
            hccn_sim_free(r);
            hccn_sim_free(l);
            hccn_sim_free(slot);
            hccn_sim_free(dv);
            return -1;
        }
        for (int d = 0, k = 0; d < eng->ndev; d++)
            slot[d] = rep[d] == d ? k++ : -1;
        memcpy(r, rep, nd * sizeof(*r));
        memcpy(l, link_map, nl * sizeof(*l));
        if (dv != NULL)
            memcpy(dv, link_div, nl * sizeof(*dv));
    }
    pthread_mutex_lock(&eng->lock);
    hccn_sim_free(eng->fold_rep);
    hccn_sim_free(eng->fold_link);
    hccn_sim_free(eng->fold_div);
    hccn_sim_free(eng->live_slot);
    eng->live_slot = slot;
    eng->fold_rep = r;
    eng->fold_link = l;
    eng->fold_div = dv;
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

