/*
 * The cost model's forms for the three-level rows "hier3" and "hier3_hd"
 * (docs/selection.md): each level's phases priced with the flat forms on
 * teams (every node, every pod's same-index ranks, every same-place rank
 * across pods) and put together as the schedule composes them, levels
 * running side by side. Where the schedule degrades to two levels, so
 * does the form (hier's).
 */
#include <stdlib.h>

#include "device_sim/alloc.h"
#include "hierarchy/algo_util.h"
#include "hierarchy/cost_internal.h"
#include "hierarchy/levels.h"


/* P pods of M nodes of L ranks; mem holds the members of the three teams:
 * t[0] a group per node (by local index), t[1] a group per (pod, local)
 * (by position), t[2] a group per (position, local) (by pod). */
typedef struct {
    int P, M, L;
    int *mem;
    hccn_cm_team_t t[3];
    const char *algo[3];
} h3_t;

/* Node n's position in its pod, or -1 when the view has no even pod
 * shape; fills h. Returns 1 (three levels), 0 (two levels), -1 (no
 * memory). */
static int h3_shape(const hccn_hier_view_t *v, h3_t *h)
{
    int N = v->nnodes, p = v->nranks, rc = v->pod != NULL && v->npods > 1;
    int *cnt = hccn_sim_calloc((size_t)N + (size_t)v->npods + 1, sizeof(int));
    int *pos = hccn_sim_malloc(((size_t)N + 1) * sizeof(int));
    int *npod = hccn_sim_malloc(((size_t)N + 1) * sizeof(int));
    if (cnt == NULL || pos == NULL || npod == NULL) {
        rc = -1;
        goto out;
    }
    int *pn = cnt + N;
    for (int n = 0; n < N; n++)
        npod[n] = -1;
    for (int r = 0; r < p && rc > 0; r++) {
        int n = v->node[r];
        rc = npod[n] < 0 || npod[n] == v->pod[r];
        npod[n] = v->pod[r];
        cnt[n]++;
    }
    for (int n = 0; n < N && rc > 0; n++)
        if ((rc = cnt[n] == cnt[0] && npod[n] >= 0) > 0)
            pos[n] = pn[npod[n]]++;
    for (int q = 0; q < v->npods && rc > 0; q++)
        rc = pn[q] == pn[0];
    if (rc > 0) {
        h->P = v->npods;
        h->M = pn[0];
        h->L = cnt[0];
        rc = h->M > 1 && h->L > 1;
    }
    if (rc > 0 && (h->mem = hccn_sim_malloc(3 * (size_t)p * sizeof(int))) == NULL)
        rc = -1;
    for (int r = 0; rc > 0 && r < p; r++) {
        int q = v->pod[r], m = pos[v->node[r]], l = v->local[r];
        h->mem[(q * h->M + m) * h->L + l] = r;
        h->mem[p + (q * h->L + l) * h->M + m] = r;
        h->mem[2 * p + (m * h->L + l) * h->P + q] = r;
    }
    if (rc > 0) {
        h->t[0] = (hccn_cm_team_t){h->P * h->M, h->L, h->mem};
        h->t[1] = (hccn_cm_team_t){h->P * h->L, h->M, h->mem + p};
        h->t[2] = (hccn_cm_team_t){h->M * h->L, h->P, h->mem + 2 * p};
    }
out:
    hccn_sim_free(cnt);
    hccn_sim_free(pos);
    hccn_sim_free(npod);
    return rc;
}

/* Level l's flat algorithm running coll on count elements in every group
 * of its team at once. */
static double level(hccn_cm_t *m, const h3_t *h, int l,
                    const hccn_coll_args_t *a, hccn_coll_t coll,
                    uint64_t count)
{
    hccn_cm_form_fn fn = hccn_hier_cm_form(h->algo[l]);
    hccn_coll_args_t sub = {.coll = coll, .nranks = h->t[l].size,
                            .count = count, .esize = a->esize,
                            .chunk_bytes = a->chunk_bytes};
    if (count == 0)
        return 0.0;
    double time = fn != NULL ? fn(m, &h->t[l], &sub) : HCCN_COST_NONE;
    m->failed |= time < 0.0;
    return time;
}

/* The five phases of one chunk of q elements per level-0 block. */
typedef struct {
    double p[5];
} phases_t;

static phases_t chunk_phases(hccn_cm_t *m, const h3_t *h,
                             const hccn_coll_args_t *a, uint64_t q)
{
    uint64_t r = q / (uint64_t)h->M;
    phases_t ph = {{level(m, h, 0, a, HCCN_COLL_REDUCE_SCATTER, q),
                    level(m, h, 1, a, HCCN_COLL_REDUCE_SCATTER, r),
                    level(m, h, 2, a, HCCN_COLL_ALLREDUCE, r),
                    level(m, h, 1, a, HCCN_COLL_ALLGATHER, r),
                    level(m, h, 0, a, HCCN_COLL_ALLGATHER, q)}};
    return ph;
}

/* Seconds per byte of the slowest transfer when every member of every
 * group of t sends to the next member at once. */
static double shift_w(hccn_cm_t *m, const hccn_cm_team_t *t)
{
    size_t n = 0;
    double w = 0.0;
    for (int g = 0; g < t->ngroups; g++)
        for (int i = 0; i < t->size; i++)
            m->x[n++] = hccn_hier_cm_xf(hccn_hier_cm_member(t, g, i),
                                        hccn_hier_cm_member(t, g, i + 1), 1);
    hccn_hier_cm_flows(m, m->x, n, 1.0);
    for (size_t i = 0; i < n; i++)
        w = hccn_hier_cm_max(w, m->x[i].w);
    return w;
}

/* Levels 1 and 2 leave a rank through the same NIC. While level 2 runs,
 * its flow holds the share f of the NIC (its rate over the NIC's, at most
 * half: links are shared max-min fairly), and level 1 runs at 1 - f. A
 * level-1 phase of d seconds alone that starts at s while level 2 is busy
 * until busy ends at: */
static double shared_end(double s, double d, double busy, double f)
{
    double w = busy - s;
    if (w <= 0.0 || f <= 0.0)
        return s + d;
    if (d <= w * (1.0 - f))
        return s + d / (1.0 - f);
    return busy + (d - w * (1.0 - f));
}

/* Level 2's part of the allreduce's tail of t elements (cost_hier.c's
 * top_tail). */
static double top_tail(hccn_cm_t *m, const h3_t *h,
                       const hccn_coll_args_t *a, uint64_t t)
{
    const char *algo = hccn_hier_levels_tail_algo(h->P, t);
    if (algo == NULL)
        return level(m, h, 2, a, HCCN_COLL_ALLREDUCE, t);
    h3_t g = *h;
    g.algo[2] = algo;
    return level(m, &g, 2, a, HCCN_COLL_ALLGATHER, t) +
           hccn_hier_cm_tail_sum(m, t * a->esize, h->P);
}

/* Allreduce: each level's clock runs its phases in the schedule's order
 * (level 0: P1 of every chunk, then P5; level 1: P2, then P4; level 2:
 * P3), a phase of chunk k starting when its level is free and chunk k's
 * previous phase is done; then the leftover elements level by level. */
static double h3_allreduce(hccn_cm_t *m, const h3_t *h,
                           const hccn_coll_args_t *a)
{
    const uint64_t lm = (uint64_t)h->L * (uint64_t)h->M;
    const uint64_t lmp = lm * (uint64_t)h->P;   /* the chunks' multiple */
    uint64_t ce = hccn_hier_chunk(
                      a, hccn_hier_levels_first_chunk(
                             a, h->algo[0], h->L,
                             hccn_hier_levels_ring_chunk(h->algo[2], h->P, lm,
                                                         HCCN_HIER3_CHUNK))) /
                  a->esize;
    ce = ce - ce % lmp < lmp ? lmp : ce - ce % lmp;
    uint64_t main = a->count / lmp * lmp, tail = a->count - main;
    uint64_t K = (main + ce - 1) / ce;
    phases_t ph[2] = {{{0}}, {{0}}};
    for (int i = 0; i < 2 && K > 0; i++)
        ph[i] = chunk_phases(m, h, a, (i == 0 ? ce : main - (K - 1) * ce) /
                                          (uint64_t)h->L);
    double *g = hccn_sim_malloc((size_t)(K > 0 ? K : 1) * sizeof(double));
    if (g == NULL) {
        m->failed = 1;
        return 0.0;
    }
    /* A rank's reductions run one at a time: P1 of chunk k also waits
     * for the reductions of P2 and P3 of chunk k-1. */
    double pb = (double)(ce / lm * a->esize);
    double red = ((h->M - 1) + (double)(h->P - 1) / h->P) * pb * m->r;
    /* f: level 2's share of the NIC while it sends, times the part of P3
     * it spends sending (2 (P-1) / P pieces, between latencies and
     * reductions). */
    double w2 = shift_w(m, &h->t[2]);
    double f = w2 > 0.0 ? shift_w(m, &h->t[1]) / w2 : 0.0;
    double busy = ph[0].p[2] > 0.0
                      ? 2.0 * (h->P - 1) / h->P * pb * w2 / ph[0].p[2]
                      : 0.0;
    f = (f < 0.5 ? f : 0.5) * (busy < 1.0 ? busy : 1.0);
    double e0 = 0.0, e1 = 0.0, e2 = 0.0;
    for (uint64_t k = 0; k < K; k++) {
        const double *p = ph[k + 1 == K].p;
        e0 += p[0] + (k > 0 ? red : 0.0);
        e1 = shared_end(hccn_hier_cm_max(e0, e1), p[1], e2, f);
        e2 = hccn_hier_cm_max(e1, e2) + p[2];
        g[k] = e2;
    }
    for (uint64_t k = 0; k < K; k++) {
        const double *p = ph[k + 1 == K].p;
        e1 = shared_end(hccn_hier_cm_max(e1, g[k]), p[3], e2, f);
        e0 = hccn_hier_cm_max(e0, e1) + p[4];
    }
    hccn_sim_free(g);
    if (tail > 0) {
        e0 += level(m, h, 0, a, HCCN_COLL_ALLREDUCE, tail);
        e1 = hccn_hier_cm_max(e0, e1) +
             level(m, h, 1, a, HCCN_COLL_ALLREDUCE, tail);
        e2 = hccn_hier_cm_max(e1, e2) +
             top_tail(m, h, a, tail);
    }
    return hccn_hier_cm_max(e0, hccn_hier_cm_max(e1, e2));
}

/* 1 if rank r is (pod * M + position) * L + local for every r. */
static int pod_major(const h3_t *h, int p)
{
    for (int i = 0; i < p; i++)
        if (h->mem[i] != i)
            return 0;
    return 1;
}

/* hier's form on the view with pods as nodes (one rank per node). */
static double pods_as_nodes(hccn_cm_t *m, const hccn_cm_team_t *t,
                            const hccn_coll_args_t *a)
{
    const hccn_hier_view_t *v = a->view;
    int *mem = hccn_sim_calloc(2 * (size_t)a->nranks + (size_t)v->npods, sizeof(int));
    if (mem == NULL) {
        m->failed = 1;
        return 0.0;
    }
    int *local = mem + a->nranks, *seen = mem + 2 * a->nranks;
    for (int r = 0; r < a->nranks; r++) {
        mem[r] = v->pod[r];
        local[r] = seen[v->pod[r]]++;
    }
    hccn_hier_view_t pv = {a->nranks, mem, local, v->npods, NULL, 0, 0,
                          v->slots};
    hccn_coll_args_t sa = *a;
    sa.view = &pv;
    double time = hccn_hier_cm_hier(m, t, &sa);
    hccn_sim_free(mem);
    return time;
}

/* 1 if every node holds one rank and the pods are even with more than
 * one node each (hier3 then runs hier with pods as nodes). */
static int one_per_node_pods(const hccn_hier_view_t *v)
{
    if (v->pod == NULL || v->npods < 2 || v->nnodes != v->nranks)
        return 0;
    int *cnt = hccn_sim_calloc((size_t)v->npods, sizeof(int)), ok = cnt != NULL;
    for (int r = 0; ok && r < v->nranks; r++)
        cnt[v->pod[r]]++;
    for (int q = 0; ok && q < v->npods; q++)
        ok = cnt[q] == cnt[0] && cnt[0] > 1;
    hccn_sim_free(cnt);
    return ok;
}

/* The two-level form that stands in where three levels do not apply:
 * hier's with levels 0 and 1 (as the builder falls back). */
static double two_levels(hccn_cm_t *m, const hccn_cm_team_t *t,
                         const hccn_coll_args_t *a, const char *const *l)
{
    const hccn_algo_t *row = hccn_hier_levels_row(l[0], l[1], NULL);
    hccn_coll_args_t two = *a;
    two.levels = row != NULL ? hccn_hier_algo_levels(row) : NULL;
    if (row == NULL || row->cost == NULL) {
        m->failed = 1;
        return 0.0;
    }
    return row->cost(m, t, &two);
}

static double h3_form(hccn_cm_t *m, const hccn_cm_team_t *t,
                      const hccn_coll_args_t *a, const char *l0,
                      const char *l1, const char *l2)
{
    const hccn_hier_view_t *v = a->view;
    h3_t h = {.algo = {l0, l1, l2}};
    if (a->coll > HCCN_COLL_ALLGATHER)
        return HCCN_COST_NONE;
    if (t->ngroups != 1 || v == NULL || v->nranks != a->nranks)
        return two_levels(m, t, a, h.algo);
    int three = h3_shape(v, &h);
    double time;
    if (three < 0) {
        m->failed = 1;
        time = 0.0;
    } else if (three && a->coll == HCCN_COLL_ALLREDUCE) {
        time = h3_allreduce(m, &h, a);
    } else if (three && pod_major(&h, a->nranks)) {
        /* levels.h: level 0 runs an instance for every node of every
         * pod, level 1 for every pod, level 2 one; either order. */
        const int X[3] = {h.M * h.P, h.P, 1};
        time = 0.0;
        for (int l = 0; l < 3; l++) {
            hccn_coll_args_t sub = {.coll = a->coll, .nranks = h.t[l].size,
                                    .count = a->count, .esize = a->esize,
                                    .chunk_bytes = a->chunk_bytes};
            time += hccn_hier_cm_instances(m, h.algo[l], &h.t[l], &sub, X[l]);
        }
    } else if (one_per_node_pods(v)) {
        time = pods_as_nodes(m, t, a);
    } else {
        time = two_levels(m, t, a, h.algo);
    }
    hccn_sim_free(h.mem);
    return time;
}

double hccn_hier_cm_hier3(hccn_cm_t *m, const hccn_cm_team_t *t,
                          const hccn_coll_args_t *a)
{
    return h3_form(m, t, a, "mesh", "ring", "ring");
}

double hccn_hier_cm_hier3_hd(hccn_cm_t *m, const hccn_cm_team_t *t,
                             const hccn_coll_args_t *a)
{
    return h3_form(m, t, a, "mesh", "ring", "hd");
}

double hccn_hier_cm_hier3_levels(hccn_cm_t *m, const hccn_cm_team_t *t,
                                 const hccn_coll_args_t *a)
{
    const hccn_level_choice_t *lv = a->levels;
    return lv != NULL ? h3_form(m, t, a, lv->algo[0], lv->algo[1], lv->algo[2])
                      : HCCN_COST_NONE;
}
