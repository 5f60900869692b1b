/*
 * The closed form of the "rings" row (hccn_hier_cm_rings; the schedule is
 * built in algo_rings.c, docs/algorithms.md rings): every channel's sends
 * of every position priced at once, repriced to the pipeline's steady
 * state, then every slice walked through the schedule's dependencies in
 * the order of arrivals.
 */
#include <math.h>
#include <stdlib.h>

#include "device_sim/alloc.h"
#include "hierarchy/algo_util.h"
#include "hierarchy/cost_internal.h"
#include "hierarchy/rings.h"

/* The closed form of the schedule above: every channel's sends of every
 * position priced as running at once (links shared as in the steady state
 * of the pipeline), then every slice walked through the schedule's
 * dependencies in the order of arrivals: a send starts when the
 * position's previous send has drained and its input has arrived and been
 * reduced; a rank's reductions queue on its reduce unit in the order
 * their data arrives, as the engine's local work does. */

typedef struct {
    hccn_cm_t *m;
    const hccn_coll_args_t *a;
    const hccn_rings_shape_t *sh;
    int p, Q;            /* ranks; sends per position (steps x K) */
    uint32_t *cur;       /* per position: its next send (the heap's
                            walk only, as are in and heap) */
    double *free;        /* per position: its last send drained */
    double *in;          /* per position: its next send's input ready,
                            < 0 unknown. One figure is enough: a
                            position's sends arrive in the order it
                            issues them (each leaves after the one before
                            it drained, on the same route; ties go by q),
                            so its successor learns its inputs in send
                            order, and issues each send as soon as its
                            input is known. */
    double *unit;        /* per rank: its reduce unit free */
    double *len;         /* [(c p + j) K + s]: the bytes of slice s of
                            channel c's block j (hccn_hier_rings_piece,
                            worked out once: the walk asks for each
                            C p Q times) */
    hccn_cm_evq_t heap;  /* arrivals not yet taken (at: the sender
                            position c p + i; q: its send k K + s) */
    double end;
} rc_walk_t;

/* 1 when send q (step q / K) reduces at its receiver. */
static int rc_reduces(const rc_walk_t *w, int q)
{
    int k = q / w->sh->K;
    return w->a->coll == HCCN_COLL_REDUCE_SCATTER ||
           (w->a->coll == HCCN_COLL_ALLREDUCE && k < w->p - 1);
}

/* Issues send q of position at, its input ready at ready (k > 0):
 * returns its arrival at the receiver; *bytes its size. */
static double rc_send(rc_walk_t *w, uint32_t at, int q, double ready,
                      double *bytes)
{
    const int p = w->p, K = w->sh->K;
    const int c = (int)(at / (uint32_t)p), i = (int)(at % (uint32_t)p);
    const hccn_cm_xf_t *x = &w->m->x[at];
    int k = q / K, s = q % K;
    int kp = w->a->coll == HCCN_COLL_ALLREDUCE && k >= p - 1 ? k - (p - 1)
                                                           : k;
    int j = rc_reduces(w, q) ? hccn_hier_mod(i - kp, p)
                             : hccn_hier_mod(i + 1 - kp, p);
    *bytes = w->len[((size_t)c * p + (size_t)j) * K + (size_t)s];
    double go = q > 0 ? w->free[at] : 0.0;
    if (k > 0)
        go = hccn_hier_cm_max(go, ready);
    w->free[at] = go + *bytes * x->w;
    return w->free[at] + x->lat;
}

/* Send q of position at has arrived at t: its reduction queued on the
 * receiver's unit; returns when its data is ready there. */
static double rc_arrive(rc_walk_t *w, uint32_t at, int q, double t,
                        double bytes)
{
    double done = t;
    if (rc_reduces(w, q)) {
        int dst = w->m->x[at].dst;
        done = hccn_hier_cm_max(done, w->unit[dst]) + bytes * w->m->r;
        w->unit[dst] = done;
    }
    w->end = hccn_hier_cm_max(w->end, done);
    return done;
}

/* Issues the sends of position at whose inputs are known, in order. */
static void rc_issue(rc_walk_t *w, uint32_t at)
{
    const int K = w->sh->K;
    while (w->cur[at] < (uint32_t)w->Q) {
        int q = (int)w->cur[at];
        double ready = w->in[at], bytes;
        if (q >= K && ready < 0.0)
            return;
        w->in[at] = -1.0;
        double t = rc_send(w, at, q, ready, &bytes);
        hccn_hier_cm_ev_push(&w->heap,
                             (hccn_cm_ev_t){t, bytes, at, (uint32_t)q});
        w->cur[at]++;
    }
}

/* Takes the arrivals in time order: reduces them on the receiver's unit,
 * hands them to the receiver's next step. */
static void rc_walk(rc_walk_t *w)
{
    const int p = w->p, K = w->sh->K;
    size_t cp = (size_t)w->sh->C * (size_t)p;
    for (size_t at = 0; at < cp; at++)
        w->in[at] = -1.0;
    for (size_t at = 0; at < cp; at++)
        rc_issue(w, (uint32_t)at);
    while (w->heap.n > 0) {
        hccn_cm_ev_t e = hccn_hier_cm_ev_pop(&w->heap);
        uint32_t c = e.at / (uint32_t)p, i = e.at % (uint32_t)p;
        uint32_t to = c * (uint32_t)p + (i + 1) % (uint32_t)p;
        double done = rc_arrive(w, e.at, (int)e.q, e.t, e.bytes);
        if ((int)e.q + K < w->Q) {
            w->in[to] = done;
            rc_issue(w, to);
        }
    }
}

/* The walk without its heap, where no reduce unit hears two positions
 * (one channel: a rank follows one position; or nothing reduces). Then
 * the order of arrivals decides nothing the times depend on: a unit
 * takes its one sender's reductions in send order, which is their order
 * of arrival (rc_walk_t.in), and the end is a maximum. So the sends can
 * be taken send number by send number, each position's after its
 * predecessor's send K before it, with the same operations on the same
 * operands. done[s cp + at]: when position at's last send of slice s is
 * ready at its receiver. */
static void rc_sweep(rc_walk_t *w, double *done)
{
    const int p = w->p, K = w->sh->K;
    const size_t cp = (size_t)w->sh->C * (size_t)p;
    for (int q = 0; q < w->Q; q++) {
        double *d = done + (size_t)(q % K) * cp;
        for (size_t c0 = 0; c0 < cp; c0 += (size_t)p) {
            /* Position i - 1's send q - K, read before i - 1 overwrites
             * it with send q. */
            double carry = d[c0 + (size_t)p - 1];
            for (size_t at = c0; at < c0 + (size_t)p; at++) {
                double ready = carry, bytes;
                carry = d[at];
                double t = rc_send(w, (uint32_t)at, q, ready, &bytes);
                d[at] = rc_arrive(w, (uint32_t)at, q, t, bytes);
            }
        }
    }
}

static int rc_heap_only;

void hccn_hier_rings_cost_heap(int on)
{
    rc_heap_only = on;
}

/* 1 when a reduce unit hears two positions (rc_sweep). */
static int rc_units_shared(const rc_walk_t *w)
{
    return w->sh->C > 1 && w->a->coll != HCCN_COLL_ALLGATHER;
}

/* Prices the C p sends of one step of slices of size bytes. */
static void rc_price(hccn_cm_t *m, const hccn_cm_team_t *t,
                     const hccn_rings_shape_t *sh, int p, uint64_t bytes)
{
    size_t n = 0;
    for (int c = 0; c < sh->C; c++)
        for (int i = 0; i < p; i++) {
            const int *o = sh->order + (size_t)c * p;
            int to = hccn_hier_cm_member(t, 0, o[(i + 1) % p]);
            m->x[n++] = hccn_hier_cm_xf(hccn_hier_cm_member(t, 0, o[i]), to,
                                        bytes);
        }
    hccn_hier_cm_flows(m, m->x, n, 1.0);
}

/* The finite links of position at's send (world NPUs), in links. */
static int rc_links(const hccn_cm_t *m, const hccn_cm_xf_t *x, int *links)
{
    const hccn_sim_topo_t *topo = m->pl->topo;
    double lat;
    int n = hccn_sim_topo_route(topo, m->pl->world[x->src],
                                m->pl->world[x->dst], links, &lat), kept = 0;
    for (int k = 0; k < n; k++)
        if (isfinite(topo->links[links[k]].bw))
            links[kept++] = links[k];
    return kept;
}

/* The pipeline's steady state: each channel runs at the rate of its
 * slowest send (links shared equally, rc_price); a send then drains at
 * what its links leave over from the other channels' rates, never slower
 * than the equal share. */
static void rc_reprice(hccn_cm_t *m, const hccn_rings_shape_t *sh, int p)
{
    const hccn_sim_link_t *tl = m->pl->topo->links;
    int links[HCCN_SIM_ROUTE_MAX];
    double *rate = hccn_sim_malloc((size_t)sh->C * sizeof(double));
    if (rate == NULL)
        return;
    for (int c = 0; c < sh->C; c++) {
        double w = 0.0;
        for (int i = 0; i < p; i++)
            w = hccn_hier_cm_max(w, m->x[(size_t)c * p + i].w);
        rate[c] = w > 0.0 ? 1.0 / w : 0.0;
    }
    size_t cp = (size_t)sh->C * (size_t)p;
    for (int pass = 0; pass < 3; pass++)
        for (size_t at = 0; at < cp; at++) {
            hccn_cm_xf_t *x = &m->x[at];
            double wire = rate[at / (size_t)p] / x->eff, w = 0.0;
            for (int k = rc_links(m, x, links); k-- > 0;)
                if (pass == 0)
                    m->load[links[k]] += wire;
                else if (pass == 1) {
                    double left = tl[links[k]].bw - m->load[links[k]] + wire;
                    w = hccn_hier_cm_max(w, 1.0 / (x->eff * left));
                } else
                    m->load[links[k]] = 0.0;
            if (pass == 1 && w > 0.0 && w < x->w)
                x->w = w;
        }
    hccn_sim_free(rate);
}

double hccn_hier_cm_rings(hccn_cm_t *m, const hccn_cm_team_t *t,
                          const hccn_coll_args_t *a)
{
    const int p = a->nranks;
    hccn_rings_shape_t sh;
    if (a->coll != HCCN_COLL_ALLREDUCE &&
        a->coll != HCCN_COLL_REDUCE_SCATTER && a->coll != HCCN_COLL_ALLGATHER)
        return HCCN_COST_NONE;
    if (hccn_hier_rings_shape(a, &sh) != 0 ||
        (size_t)sh.C * (size_t)p > (size_t)m->p * HCCN_CM_SAMPLE) {
        hccn_sim_free(sh.order);
        m->failed = 1;
        return 0.0;
    }
    size_t cp = (size_t)sh.C * (size_t)p;
    rc_walk_t w = {m, a, &sh, p, 0, NULL, NULL, NULL, NULL, NULL, {NULL, 0},
                   0.0};
    w.Q = (a->coll == HCCN_COLL_ALLREDUCE ? 2 : 1) * (p - 1) * sh.K;
    int sweep = !rc_heap_only && !rc_units_shared(&w);
    size_t n = sweep ? 0 : cp * (size_t)w.Q;
    double *done = NULL;
    w.free = hccn_sim_calloc(2 * cp + (size_t)m->p + cp * (size_t)sh.K,
                             sizeof(double));
    if (sweep) {
        done = hccn_sim_calloc((size_t)sh.K * cp, sizeof(double));
    } else {
        w.cur = hccn_sim_calloc(cp, sizeof(uint32_t));
        w.heap.ev = hccn_sim_malloc((n > 0 ? n : 1) * sizeof(hccn_cm_ev_t));
    }
    if (w.free == NULL || (sweep ? done == NULL
                                 : w.cur == NULL || w.heap.ev == NULL)) {
        hccn_sim_free(w.cur);
        hccn_sim_free(w.free);
        hccn_sim_free(w.heap.ev);
        hccn_sim_free(done);
        hccn_sim_free(sh.order);
        m->failed = 1;
        return 0.0;
    }
    w.in = w.free + cp;
    w.unit = w.in + cp;
    w.len = w.unit + m->p;
    for (int c = 0; c < sh.C; c++)
        for (int j = 0; j < p; j++)
            for (int s = 0; s < sh.K; s++)
                w.len[((size_t)c * p + (size_t)j) * sh.K + (size_t)s] =
                    (double)hccn_hier_rings_piece(a, &sh, c, j, s).len;
    rc_price(m, t, &sh, p, hccn_hier_rings_piece(a, &sh, 0, 0, 0).len);
    rc_reprice(m, &sh, p);
    if (sweep)
        rc_sweep(&w, done);
    else
        rc_walk(&w);
    double end = w.end;
    if (a->coll == HCCN_COLL_ALLGATHER)
        end = hccn_hier_cm_max(end,
                               hccn_hier_cm_copy(m, hccn_hier_cm_whole(a)));
    hccn_sim_free(w.cur);
    hccn_sim_free(w.free);
    hccn_sim_free(w.heap.ev);
    hccn_sim_free(done);
    hccn_sim_free(sh.order);
    return end;
}
