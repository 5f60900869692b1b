/*
 * Timelines of simulated runs (trace.h), the recording side: device slices
 * from the rank threads, link rate segments from the engine's hooks, and
 * attaching a trace to an engine. The writer is trace_write.c.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "device_sim/alloc.h"
#include "device_sim/engine_internal.h"
#include "device_sim/trace_internal.h"

void *hccn_sim_trace_grow(void *p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return p;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *q = hccn_sim_realloc(p, c * size);
    if (q != NULL)
        *cap = c;
    return q;
}


hccn_sim_trace_t *hccn_sim_trace_create(void)
{
    hccn_sim_trace_t *tr = hccn_sim_calloc(1, sizeof(*tr));
    if (tr != NULL)
        pthread_mutex_init(&tr->lock, NULL);
    return tr;
}

static void links_free(hccn_sim_trace_t *tr)
{
    hccn_sim_free(tr->track_of);
    hccn_sim_free(tr->bw);
    hccn_sim_free(tr->rate);
    hccn_sim_free(tr->since);
    hccn_sim_free(tr->sum);
    hccn_sim_free(tr->listed);
    hccn_sim_free(tr->touched);
    tr->track_of = tr->listed = tr->touched = NULL;
    tr->bw = tr->rate = tr->since = tr->sum = NULL;
    tr->nlinks = 0;
}

void hccn_sim_trace_destroy(hccn_sim_trace_t *tr)
{
    if (tr == NULL)
        return;
    for (size_t i = 0; i < tr->nslices; i++) {
        hccn_sim_free(tr->slices[i].name);
        hccn_sim_free(tr->slices[i].args);
    }
    hccn_sim_free(tr->slices);
    hccn_sim_free(tr->next_op);
    hccn_sim_free(tr->devname);
    hccn_sim_free(tr->tracks);
    hccn_sim_free(tr->segs);
    links_free(tr);
    pthread_mutex_destroy(&tr->lock);
    hccn_sim_free(tr);
}

/* --------------------------------------------------------- link segments */

static void seg_close(hccn_sim_trace_t *tr, int l, double now)
{
    if (!(now > tr->since[l]))
        return;
    size_t cap = tr->capsegs;
    seg_t *s = hccn_sim_trace_grow(tr->segs, &cap, tr->nsegs + 1,
                                   sizeof(*s));
    if (s == NULL) {
        tr->dropped++;
        return;
    }
    tr->segs = s;
    tr->capsegs = cap;
    s[tr->nsegs++] = (seg_t){tr->track_of[l], tr->offset + tr->since[l],
                             tr->offset + now, tr->rate[l], tr->bw[l]};
    tr->tracks[tr->track_of[l]].nsegs++;
}

/* Link l carries `rate` from now on. */
static void seg_update(hccn_sim_trace_t *tr, int l, double rate, double now)
{
    if (rate == tr->rate[l])
        return;
    if (tr->rate[l] > 0.0)
        seg_close(tr, l, now);
    tr->rate[l] = rate;
    tr->since[l] = now;
}

static void touch(hccn_sim_trace_t *tr, int l, int *n)
{
    if (!tr->listed[l]) {
        tr->listed[l] = 1;
        tr->touched[(*n)++] = l;
    }
}

void hccn_sim_trace_rates(hccn_sim_engine_t *eng, flow_t *const *flows,
                          int n, const int *links, int nlinks)
{
    hccn_sim_trace_t *tr = eng->trace;
    int m = 0;
    if (links == NULL) {
        for (int l = 0; l < tr->nlinks; l++)
            if (tr->rate[l] > 0.0)
                touch(tr, l, &m);
    }
    for (int i = 0; links != NULL && i < nlinks; i++)
        touch(tr, links[i], &m);
    /* A link's total adds its flows' rates in canonical order, so it is
     * the same sum whichever refill computes it. */
    for (int i = 0; i < n; i++) {
        const flow_t *f = flows[i];
        if (!(f->rate > 0.0) || isinf(f->rate))
            continue;
        for (int k = 0; k < f->nlinks; k++) {
            touch(tr, f->links[k], &m);
            tr->sum[f->links[k]] += f->rate;
        }
    }
    for (int i = 0; i < m; i++) {
        int l = tr->touched[i];
        seg_update(tr, l, tr->sum[l], eng->now);
        tr->sum[l] = 0.0;
        tr->listed[l] = 0;
    }
}

/* Closes the open segments at eng->now and moves the timeline on by the
 * length of the run (its latest clock). */
static void run_end(hccn_sim_engine_t *eng, hccn_sim_trace_t *tr)
{
    for (int l = 0; l < tr->nlinks; l++)
        if (tr->rate[l] > 0.0) {
            seg_close(tr, l, eng->now);
            tr->rate[l] = 0.0;
        }
    double span = eng->now;
    for (int d = 0; d < eng->ndev; d++)
        if (eng->devs[d].clock > span)
            span = eng->devs[d].clock;
    pthread_mutex_lock(&tr->lock);
    tr->offset += span;
    pthread_mutex_unlock(&tr->lock);
}

void hccn_sim_trace_run_end(hccn_sim_engine_t *eng)
{
    run_end(eng, eng->trace);
}

/* ------------------------------------------------------------- attaching */

/* The track of the link named name, added if new; -1 on no memory. */
static int track_get(hccn_sim_trace_t *tr, const char *name, int level)
{
    for (int i = 0; i < tr->ntracks; i++)
        if (strcmp(tr->tracks[i].name, name) == 0)
            return i;
    size_t cap = (size_t)tr->captracks;
    ltrack_t *t = hccn_sim_trace_grow(tr->tracks, &cap,
                                      (size_t)tr->ntracks + 1, sizeof(*t));
    if (t == NULL)
        return -1;
    tr->tracks = t;
    tr->captracks = (int)cap;
    ltrack_t *k = &t[tr->ntracks];
    memset(k, 0, sizeof(*k));
    snprintf(k->name, sizeof(k->name), "%s", name);
    k->level = level;
    return tr->ntracks++;
}

/* Learns the names of topo's NPUs (the latest attach wins). */
static int names_learn(hccn_sim_trace_t *tr, const hccn_sim_topo_t *topo)
{
    int n = topo->nnpus;
    pthread_mutex_lock(&tr->lock);
    if (n > tr->ndevs) {
        void *names = hccn_sim_realloc(tr->devname, (size_t)n * sizeof(*tr->devname));
        uint64_t *ops = hccn_sim_realloc(tr->next_op, (size_t)n * sizeof(*ops));
        if (names != NULL)
            tr->devname = names;
        if (ops != NULL)
            tr->next_op = ops;
        if (names == NULL || ops == NULL) {
            pthread_mutex_unlock(&tr->lock);
            return -1;
        }
        memset(ops + tr->ndevs, 0, (size_t)(n - tr->ndevs) * sizeof(*ops));
        tr->ndevs = n;
    }
    for (int r = 0; r < n; r++)
        snprintf(tr->devname[r], HCCN_SIM_NAME_MAX, "%s",
                 topo->devs[topo->npus[r].dev].name);
    pthread_mutex_unlock(&tr->lock);
    return 0;
}

static int links_attach(hccn_sim_trace_t *tr, const hccn_sim_topo_t *topo)
{
    size_t m = (size_t)(topo->nlinks > 0 ? topo->nlinks : 1);
    tr->track_of = hccn_sim_calloc(m, sizeof(int));
    tr->bw = hccn_sim_calloc(m, sizeof(double));
    tr->rate = hccn_sim_calloc(m, sizeof(double));
    tr->since = hccn_sim_calloc(m, sizeof(double));
    tr->sum = hccn_sim_calloc(m, sizeof(double));
    tr->listed = hccn_sim_calloc(m, sizeof(int));
    tr->touched = hccn_sim_calloc(m, sizeof(int));
    if (!tr->track_of || !tr->bw || !tr->rate || !tr->since || !tr->sum ||
        !tr->listed || !tr->touched)
        return -1;
    tr->nlinks = topo->nlinks;
    for (int l = 0; l < topo->nlinks; l++) {
        const hccn_sim_link_t *k = &topo->links[l];
        tr->bw[l] = k->bw;
        char name[LINK_NAME_MAX];
        snprintf(name, sizeof(name), "%s->%s", topo->devs[k->src].name,
                 topo->devs[k->dst].name);
        if ((tr->track_of[l] = track_get(tr, name, k->level)) < 0)
            return -1;
    }
    return 0;
}

int hccn_sim_engine_set_trace(hccn_sim_engine_t *eng, hccn_sim_trace_t *tr)
{
    int rc = 0;
    pthread_mutex_lock(&eng->lock);
    if (eng->trace != NULL) {
        run_end(eng, eng->trace);
        links_free(eng->trace);
        eng->trace = NULL;
    }
    if (tr != NULL && tr->track_of != NULL) {
        rc = -1;                        /* attached to another engine */
    } else if (tr != NULL) {
        rc = names_learn(tr, eng->topo);
        if (rc == 0)
            rc = links_attach(tr, eng->topo);
        if (rc == 0) {
            eng->trace = tr;
            hccn_sim_slack_clear(eng);  /* every link's rates recorded */
        }
        else
            links_free(tr);
    }
    pthread_mutex_unlock(&eng->lock);
    return rc;
}

hccn_sim_trace_t *hccn_sim_engine_trace(const hccn_sim_engine_t *eng)
{
    return eng->trace;
}

/* ------------------------------------------------------------- recording */

static char *dup_or_null(const char *s)
{
    return s != NULL ? hccn_sim_strdup(s) : NULL;
}

int hccn_sim_trace_record(hccn_sim_trace_t *tr, int dev,
                          const hccn_sim_trace_slice_t *slices, int n)
{
    pthread_mutex_lock(&tr->lock);
    size_t cap = tr->capslices;
    slice_t *s = hccn_sim_trace_grow(tr->slices, &cap,
                                     tr->nslices + (size_t)n, sizeof(*s));
    int ok = s != NULL && dev >= 0 && dev < tr->ndevs;
    if (s != NULL) {
        tr->slices = s;
        tr->capslices = cap;
    }
    for (int i = 0; ok && i < n; i++) {
        const hccn_sim_trace_slice_t *in = &slices[i];
        slice_t *o = &s[tr->nslices + (size_t)i];
        *o = (slice_t){.dev = dev, .depth = in->depth, .idx = i,
                       .parent = in->parent, .group = tr->next_op[dev],
                       .rec = tr->nrec++,
                       .begin = tr->offset + in->begin,
                       .end = tr->offset + in->end,
                       .name = dup_or_null(in->name),
                       .args = dup_or_null(in->args)};
        if (o->name == NULL || (in->args != NULL && o->args == NULL)) {
            for (int j = 0; j <= i; j++) {
                hccn_sim_free(s[tr->nslices + (size_t)j].name);
                hccn_sim_free(s[tr->nslices + (size_t)j].args);
            }
            ok = 0;
        }
    }
    if (ok) {
        tr->nslices += (size_t)n;
        tr->next_op[dev]++;
    } else {
        tr->dropped++;
    }
    pthread_mutex_unlock(&tr->lock);
    return ok ? 0 : -1;
}
