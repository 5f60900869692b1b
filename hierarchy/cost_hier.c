/*
 * The cost model's forms for the hierarchical rows "hier", "hier_rr" and
 * "hier_mh" (docs/selection.md): level-0 and level-1 phases priced with
 * the flat forms on teams (every node's ranks, every local index's ranks)
 * and put together as the schedules compose them.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "device_sim/alloc.h"
#include "hierarchy/algo_util.h"
#include "hierarchy/cost_internal.h"
#include "hierarchy/levels.h"


/* A hierarchical algorithm's shape (docs/algorithms.md, hier): N nodes of
 * L ranks; at[n * L + l] is the rank at node n, local index l. intra has
 * a group per node (members by local index), inter a group per local
 * index (members by node). */
typedef struct {
    int N, L;
    int *at, *by_local;
    hccn_cm_team_t intra, inter;
    const char *l0, *l1;     /* the flat algorithms of the two levels */
} hier_t;

/* Reads a->view: 1 with the shape filled in, 0 when the algorithm falls
 * back to a flat ring (nodes of different sizes), -1 when it does not
 * apply (one node, one rank per node, no view). */
static int hier_shape(hccn_cm_t *m, const hccn_coll_args_t *a, hier_t *h)
{
    const hccn_hier_view_t *v = a->view;
    int p = a->nranks, *size;
    if (v == NULL || v->nranks != p || v->nnodes < 2)
        return -1;
    if ((size = hccn_sim_calloc((size_t)v->nnodes, sizeof(int))) == NULL) {
        m->failed = 1;
        return -1;
    }
    for (int r = 0; r < p; r++)
        size[v->node[r]]++;
    int even = 1;
    for (int n = 1; n < v->nnodes; n++)
        even &= size[n] == size[0];
    h->N = v->nnodes;
    h->L = size[0];
    hccn_sim_free(size);
    if (!even)
        return 0;
    if (h->L < 2)
        return -1;
    h->at = hccn_sim_malloc(2 * (size_t)p * sizeof(int));
    if (h->at == NULL) {
        m->failed = 1;
        return -1;
    }
    h->by_local = h->at + p;
    for (int r = 0; r < p; r++) {
        h->at[v->node[r] * h->L + v->local[r]] = r;
        h->by_local[v->local[r] * h->N + v->node[r]] = r;
    }
    h->intra = (hccn_cm_team_t){h->N, h->L, h->at};
    h->inter = (hccn_cm_team_t){h->L, h->N, h->by_local};
    return 1;
}

/* Level l's flat algorithm running coll on count elements in every group
 * of team t at once (root: a member index). */
static double level(hccn_cm_t *m, const hier_t *h, int l,
                    const hccn_cm_team_t *t, const hccn_coll_args_t *a,
                    hccn_coll_t coll, uint64_t count, int root)
{
    hccn_cm_form_fn fn = hccn_hier_cm_form(l == 0 ? h->l0 : h->l1);
    hccn_coll_args_t sub = {.coll = coll, .nranks = t->size, .count = count,
                            .esize = a->esize, .root = root,
                            .chunk_bytes = a->chunk_bytes,
                            .in_switch = hccn_hier_level_switch(
                                a, l == 0 ? h->l0 : h->l1)};
    if (count == 0)
        return 0.0;
    double time = fn != NULL ? fn(m, t, &sub) : HCCN_COST_NONE;
    m->failed |= time < 0.0;
    return time;
}

double hccn_hier_cm_instances(hccn_cm_t *m, const char *algo,
                              const hccn_cm_team_t *t,
                              const hccn_coll_args_t *sub, int X)
{
    hccn_cm_form_fn fn = hccn_hier_cm_form(algo);
    hccn_coll_args_t all = *sub;
    all.count = (uint64_t)X * sub->count;
    if (fn == NULL || sub->count == 0) {
        m->failed |= fn == NULL && sub->count > 0;
        return 0.0;
    }
    int ring = X > 1 && strcmp(algo, "ring") == 0;
    double r = m->r, b = (double)(sub->count * sub->esize);
    m->r = ring ? 0.0 : r;
    m->proto_div = (uint64_t)X;   /* each instance's transfers: 1/X */
    double tx = fn(m, t, &all);
    m->proto_div = 0;
    m->r = r;
    m->failed |= tx < 0.0;
    if (!ring || sub->coll != HCCN_COLL_REDUCE_SCATTER)
        return tx;
    double red = (double)(t->size - 1) * X * b * r;
    return hccn_hier_cm_max(tx, red) + b * r;
}

/* Level l's part of a reduce-scatter or allgather: X instances. */
static double instances(hccn_cm_t *m, const hier_t *h, int l,
                        const hccn_cm_team_t *t, const hccn_coll_args_t *a,
                        int X)
{
    hccn_coll_args_t sub = {.coll = a->coll, .nranks = t->size,
                            .count = a->count, .esize = a->esize,
                            .chunk_bytes = a->chunk_bytes,
                            .in_switch = hccn_hier_level_switch(
                                a, l == 0 ? h->l0 : h->l1)};
    return hccn_hier_cm_instances(m, l == 0 ? h->l0 : h->l1, t, &sub, X);
}

void hccn_hier_cm_two_part(const double *in, uint64_t K,
                           const double full[4], const double last[4],
                           double *out)
{
    double er = 0.0, ea = 0.0;
    for (uint64_t k = 0; k < K; k++) {
        const double *x = k + 1 == K ? last : full;
        double start = hccn_hier_cm_max(in[k], er);
        er = start + (k > 0 && start < ea ? x[2] : x[0]);
        double from = hccn_hier_cm_max(er, ea);
        double next = k + 1 < K ? hccn_hier_cm_max(in[k + 1], er) : INFINITY;
        ea = from + (next < from + x[1] ? x[3] : x[1]);
        out[k] = ea;
    }
}

/* What a phase holds its level's links for: level() without latencies
 * and steps. */
static double busy(hccn_cm_t *m, const hier_t *h, int l,
                   const hccn_cm_team_t *t, const hccn_coll_args_t *a,
                   hccn_coll_t coll, uint64_t count)
{
    m->lat_off = 1;
    double time = level(m, h, l, t, a, coll, count, 0);
    m->lat_off = 0;
    return time;
}

/* The top's allreduce of q elements per block in its two parts where
 * the schedule splits it (levels_allreduce.c: the level-1 switch reduces
 * and N divides q): x = {reduction, multicast, each while the other
 * chunk's runs, the links' time of a chunk while chunks follow each
 * other}; 0 when it does not split. While they overlap, a chunk's
 * reduction and the previous chunk's multicast share the links: p b
 * instead of (p-1) b up for the reduction, p b instead of (p-1) b down
 * for the multicast, so a chunk holds the links p b each way (sharp's
 * figures; for other rows the whole allreduce's links' time). */
static int split_parts(hccn_cm_t *m, const hier_t *h,
                       const hccn_coll_args_t *a, uint64_t q, double x[5])
{
    const int N = h->N;
    if (!hccn_hier_level_switch(a, h->l1) || q % (uint64_t)N != 0 || q == 0)
        return 0;
    uint64_t bq = q / (uint64_t)N;
    double b = (double)(bq * a->esize);
    x[0] = level(m, h, 1, &h->inter, a, HCCN_COLL_REDUCE_SCATTER, bq, 0);
    x[1] = level(m, h, 1, &h->inter, a, HCCN_COLL_ALLGATHER, bq, 0);
    x[2] = x[0];
    x[3] = x[1];
    hccn_hier_nv_form_t f;
    if (strcmp(h->l1, "sharp") != 0 ||
        hccn_hier_cm_sharp_form(m, &h->inter, bq * a->esize, &f) != 0) {
        x[4] = busy(m, h, 1, &h->inter, a, HCCN_COLL_ALLREDUCE, q);
    } else {
        double unit = (double)N * (N - 1) * b * f.unit;
        x[2] += hccn_hier_cm_max(N * b * f.up, unit) -
                hccn_hier_cm_max((N - 1) * b * f.up, unit);
        x[3] += b * f.down;
        x[4] = hccn_hier_cm_max(hccn_hier_cm_max(N * b * f.up, N * b * f.down),
                                hccn_hier_cm_max(unit, b * m->r));
    }
    return 1;
}

/* The slots for K chunks (levels_allreduce.c, slots_init) of the levels
 * below the top (*below) and of the top (returned): the software
 * model's, at most 64 and K; at a top whose switch reduces, at most
 * HCCN_LEVELS_TOP_FLIGHT transfers' worth, every level the same;
 * elsewhere the top's for each peer its members send to in turn. */
static uint64_t top_slots(const hccn_coll_args_t *a, const hier_t *h,
                          uint64_t K, uint64_t *below)
{
    uint64_t d = a->view->slots > 1 ? (uint64_t)a->view->slots : 1;
    d = d < 64 ? d : 64;
    d = d < K ? d : (K > 0 ? K : 1);
    int split = hccn_hier_level_switch(a, h->l1) != 0;
    if (split)
        d = (uint64_t)hccn_hier_levels_top_slots((int)d, h->N,
                                                 (uint64_t)h->L);
    *below = d;
    uint64_t t = split ? d
                       : (uint64_t)hccn_hier_levels_top_peers_slots(
                             (int)d, h->l1, h->N);
    return t < K ? t : (K > 0 ? K : 1);
}

/* Slots that start together share the links alike and end together:
 * chunk k of D slots, which started at s[k] and ends at end, takes along
 * each chunk j still in flight that started less than b (a chunk's time
 * on the links) before it: j ends at end less its head start. */
static void together(const double *s, double *e, uint64_t k, uint64_t D,
                     double b, double end)
{
    for (uint64_t j = k > D - 1 ? k - D + 1 : 0; j < k; j++)
        if (s[k] - s[j] < b && e[j] < end - (s[k] - s[j]))
            e[j] = end - (s[k] - s[j]);
}

/* One phase of chunk k on a level that keeps D chunks in flight: it
 * starts at `start` and ends at the later of start + d (its time alone)
 * and the level's previous phase of its kind + b (its links' time); with
 * `step`, chunks that start less than b apart run in step and end
 * together (together). s[k] and e[k] take its start and end, *last the
 * end. */
static void slotted_phase(double *s, double *e, uint64_t k, uint64_t D,
                          double start, double d, double b, double *last,
                          int step)
{
    s[k] = start;
    *last = hccn_hier_cm_max(start + d, *last + b);
    if (step)
        together(s, e, k, D, b, *last);
    e[k] = *last;
}

/* What level 0 spends on one chunk's P1 and P3 (blocks of q elements)
 * running at once, P1's links taking b1 alone: where the nodes' switches
 * reduce, nvls's pipeline stage (the reduction goes up while the
 * multicast comes down); elsewhere both use every link both ways: the
 * sum of their links' times, P1's reductions overlapping P3's
 * transfers. */
static double level0_work(hccn_cm_t *m, const hier_t *h,
                          const hccn_coll_args_t *a, uint64_t q, double b1)
{
    if (hccn_hier_level_switch(a, h->l0)) {
        double w = hccn_hier_cm_nvls_stage(m, &h->intra, q * a->esize);
        if (w >= 0.0)
            return w;
    }
    double r = m->r;
    m->r = 0.0;
    double links = busy(m, h, 0, &h->intra, a, HCCN_COLL_REDUCE_SCATTER, q) +
                   busy(m, h, 0, &h->intra, a, HCCN_COLL_ALLGATHER, q);
    m->r = r;
    return hccn_hier_cm_max(links, b1);
}

/* Allreduce with D > 1 slots at the top (levels_allreduce.c) and D0 at
 * level 0: D0 where a node has at most HCCN_LEVELS_BESIDE_MAX ranks
 * (`beside`), else 1. P1 of chunk k starts after P1 of chunk k-D0 (of
 * k-1 for the first D0, and for every chunk where level 0's switch
 * reduces: `inorder`), P2 after its P1 and P2 of chunk k-D, P3 after its
 * P2 and P3 of chunk k-D0, beside the P1s; with D0 = 1 the P1s run back
 * to back and the P3s one after another after the last P1. x[i] = {P1,
 * P2, P3} of a full chunk (i = 0) and of the last, b[i] their links'
 * times, red a P1's wait for the previous chunk's reductions (as below).
 * A phase of d seconds alone that starts at s ends at the later of s + d
 * and the previous one's end + b (slotted_phase): the links carry one
 * chunk's bytes at a time while the latencies and steps of D chunks
 * overlap (fill, then the busier of b and d / D a chunk); P2s that start
 * together run in step and end together (together: D of them take d +
 * (D-1) b), the P1s starting apart. Beside the P1s, the P3s share level 0 with them, so the call
 * ends no sooner than the first P1, level 0's work on every chunk (w0)
 * and the last P3. A top whose switch reduces (sp, split_parts) runs P2
 * as its two parts, each after its own of chunk k-D: the reductions at
 * the pace of a chunk's links (sp[4]), each beside a multicast (the
 * overlapped times, sp[2] and sp[3], but for the first reduction and the
 * last multicast). */
static double slotted(hccn_cm_t *m, uint64_t K, uint64_t D, uint64_t D0,
                      const double x[2][3], const double b[2][3],
                      const double w0[2], double red, int beside,
                      int inorder, const double (*sp)[5])
{
    double *t = hccn_sim_malloc(8 * (size_t)K * sizeof(double));
    if (t == NULL) {
        m->failed = 1;
        return 0.0;
    }
    double *s1 = t, *e1 = t + K, *s2 = t + 2 * K, *e2 = t + 3 * K,
           *s3 = t + 4 * K, *e3 = t + 5 * K, *sr = t + 6 * K, *er = t + 7 * K;
    double l1 = 0.0, l2 = 0.0, l3 = 0.0, lr = 0.0, work = 0.0;
    for (uint64_t k = 0; k < K; k++) {
        int i = k + 1 == K;
        double start = k >= D0 && !inorder ? e1[k - D0]
                       : k > 0 ? e1[k - 1] : 0.0;
        slotted_phase(s1, e1, k, D0, start, x[i][0],
                      (beside ? b[i][0] : x[i][0]) + (k > 0 ? red : 0.0),
                      &l1, 0);
        work += w0[i];
    }
    for (uint64_t k = 0; k < K; k++) {
        int i = k + 1 == K;
        double start = hccn_hier_cm_max(e1[k], k >= D ? e2[k - D] : 0.0);
        if (sp == NULL) {
            slotted_phase(s2, e2, k, D, start, x[i][1], b[i][1], &l2, 1);
            continue;
        }
        /* a split top: the reduction part after chunk k-D's, holding the
         * links for the chunk (sp[i][4]); the multicast after it and
         * chunk k-D's multicast, at the reductions' pace */
        start = hccn_hier_cm_max(e1[k], k >= D ? er[k - D] : 0.0);
        slotted_phase(sr, er, k, D, start, sp[i][k > 0 ? 2 : 0], sp[i][4],
                      &lr, 1);
        start = hccn_hier_cm_max(er[k], k >= D ? e2[k - D] : 0.0);
        slotted_phase(s2, e2, k, D, start, sp[i][k + 1 < K ? 3 : 1], 0.0,
                      &l2, 0);
    }
    l3 = beside ? 0.0 : l1;
    for (uint64_t k = 0; k < K; k++) {
        int i = k + 1 == K;
        double start = hccn_hier_cm_max(e2[k], k >= D0 ? e3[k - D0] : 0.0);
        slotted_phase(s3, e3, k, D0, start, x[i][2],
                      beside ? b[i][2] : x[i][2], &l3, 0);
    }
    hccn_sim_free(t);
    return beside ? hccn_hier_cm_max(l3, x[0][0] + work + x[1][2]) : l3;
}

/* Level 1's part of the allreduce's tail of t elements: its allreduce,
 * or where the tail gathers (levels_allreduce.c, gather_tail) its
 * allgather across it, then a copy and N - 1 reductions of t elements. */
static double top_tail(hccn_cm_t *m, const hier_t *h,
                       const hccn_coll_args_t *a, uint64_t t)
{
    const char *algo = hccn_hier_levels_tail_algo(h->N, t);
    if (algo == NULL)
        return level(m, h, 1, &h->inter, a, HCCN_COLL_ALLREDUCE, t, 0);
    hier_t g = *h;
    g.l1 = algo;
    return level(m, &g, 1, &h->inter, a, HCCN_COLL_ALLGATHER, t, 0) +
           hccn_hier_cm_tail_sum(m, t * a->esize, h->N);
}

double hccn_hier_cm_tail_sum(const hccn_cm_t *m, uint64_t bytes, int n)
{
    return (double)bytes * (m->m + (n - 1) * m->r);
}

/* Allreduce in chunks of q elements per block, one slot (D = 1): intra
 * reduce-scatter (P1) of every chunk back to back, inter allreduce (P2)
 * of chunk k once its P1 and P2 of chunk k-1 are done, intra allgather
 * (P3) of chunk k after all P1s, P3 of k-1 and P2 of k; then the count %
 * (L N) leftover elements. With D > 1 slots, slotted() above. A rank's
 * reductions run one at a time, so P1 of chunk
 * k also waits for the reductions of P2 of chunk k-1 ((N-1)/N of its
 * block, the least any allreduce reduces). Where the level-1 switch
 * reduces, P2 is its two parts pipelined (hccn_hier_cm_two_part). */
static double hier_allreduce(hccn_cm_t *m, const hier_t *h,
                             const hccn_coll_args_t *a)
{
    const uint64_t L = (uint64_t)h->L;
    uint64_t dflt = hccn_hier_level_switch(a, h->l1)
        ? hccn_hier_levels_top_chunk(a->view->slots, h->N, L, HCCN_HIER_CHUNK)
        : hccn_hier_levels_ring_chunk(h->l1, h->N, L, HCCN_HIER_CHUNK);
    dflt = hccn_hier_levels_first_chunk(a, h->l0, h->L, dflt);
    uint64_t ce = hccn_hier_chunk(a, dflt) / a->esize;
    const uint64_t LN = L * (uint64_t)h->N;     /* the chunks' multiple */
    ce = ce - ce % LN < LN ? LN : ce - ce % LN;
    uint64_t main = a->count / LN * LN, tail = a->count - main;
    uint64_t K = (main + ce - 1) / ce, ql = (main - (K - 1) * ce) / L;
    uint64_t Dl;
    const uint64_t D = top_slots(a, h, K, &Dl);
    const int beside = h->L <= HCCN_LEVELS_BESIDE_MAX;   /* levels.h */
    /* x[i]: P1, P2, P3 of a full chunk (i = 0) and of the last; b[i]
     * their links' times and w0[i] level 0's work (D > 1; level 0's
     * only beside) */
    double x[2][3], b[2][3] = {{0.0}}, w0[2] = {0.0, 0.0}, sp[2][5];
    double e1 = 0.0, e2 = 0.0, e3;
    int split[2] = {0, 0};
    for (int i = 0; i < 2 && K > 0; i++) {
        uint64_t q = i == 0 ? ce / L : ql;
        x[i][0] = level(m, h, 0, &h->intra, a, HCCN_COLL_REDUCE_SCATTER, q, 0);
        split[i] = split_parts(m, h, a, q, sp[i]);
        x[i][1] = split[i] ? sp[i][0] + sp[i][1]
                           : level(m, h, 1, &h->inter, a, HCCN_COLL_ALLREDUCE,
                                   q, 0);
        x[i][2] = level(m, h, 0, &h->intra, a, HCCN_COLL_ALLGATHER, q, 0);
        if (D > 1)
            b[i][1] = busy(m, h, 1, &h->inter, a, HCCN_COLL_ALLREDUCE, q);
        if (D > 1 && beside) {
            b[i][0] = busy(m, h, 0, &h->intra, a, HCCN_COLL_REDUCE_SCATTER, q);
            b[i][2] = busy(m, h, 0, &h->intra, a, HCCN_COLL_ALLGATHER, q);
            w0[i] = level0_work(m, h, a, q, b[i][0]);
        }
    }
    double red2 = (double)(h->N - 1) / h->N * (double)(ce / L * a->esize) *
                  m->r;
    if (K > 0 && D > 1) {
        e3 = slotted(m, K, D, beside ? Dl : 1, x, b, w0, red2, beside,
                     hccn_hier_level_switch(a, h->l0) != 0,
                     split[0] && split[1] ? (const double (*)[5])sp : NULL);
        if (tail > 0)
            e3 += level(m, h, 0, &h->intra, a, HCCN_COLL_ALLREDUCE, tail, 0) +
                  top_tail(m, h, a, tail);
        return e3;
    }
    double *e2k = hccn_sim_malloc(2 * (size_t)(K > 0 ? K : 1) *
                                  sizeof(double));
    if (e2k == NULL) {
        m->failed = 1;
        return 0.0;
    }
    double *e1k = e2k + (K > 0 ? K : 1);
    for (uint64_t k = 0; k < K; k++) {
        e1 += x[k + 1 == K][0] + (k > 0 ? red2 : 0.0);
        e1k[k] = e1;
    }
    if (K > 0 && split[0] && split[1]) {
        hccn_hier_cm_two_part(e1k, K, sp[0], sp[1], e2k);
        e2 = e2k[K - 1];
    } else {        /* neither splits, or one of full and last chunks */
        double er = 0.0;
        for (uint64_t k = 0; k < K; k++) {
            int i = k + 1 == K;
            if (split[i]) {
                er = hccn_hier_cm_max(e1k[k], er) + sp[i][0];
                e2 = hccn_hier_cm_max(er, e2) + sp[i][1];
            } else {
                e2 = hccn_hier_cm_max(e1k[k], e2) + x[i][1];
                er = e2;
            }
            e2k[k] = e2;
        }
    }
    e3 = e1;
    for (uint64_t k = 0; k < K; k++)
        e3 = hccn_hier_cm_max(e3, e2k[k]) + x[k + 1 == K][2];
    hccn_sim_free(e2k);
    if (tail > 0)
        e3 = hccn_hier_cm_max(e3, e2) +
             level(m, h, 0, &h->intra, a, HCCN_COLL_ALLREDUCE, tail, 0) +
             top_tail(m, h, a, tail);
    return e3;
}

/* The group of t holding rank r, alone. */
static hccn_cm_team_t one_group(const hccn_cm_team_t *t, int g)
{
    return (hccn_cm_team_t){1, t->size, t->rank + (size_t)g * t->size};
}

/* Broadcast: scatter in the root's node, inter broadcast of every block
 * from there, intra allgather; then the leftover elements (inter broadcast
 * in the root's level-1 group, intra broadcast). Reduce, the other way. */
static double hier_rooted(hccn_cm_t *m, const hier_t *h,
                          const hccn_coll_args_t *a)
{
    const hccn_hier_view_t *v = a->view;
    int n0 = v->node[a->root], l0 = v->local[a->root];
    uint64_t q = a->count / (uint64_t)h->L, t = a->count % (uint64_t)h->L;
    hccn_cm_team_t node = one_group(&h->intra, n0);
    hccn_cm_team_t line = one_group(&h->inter, l0);
    hier_t mesh = *h;
    mesh.l0 = "mesh";
    if (a->coll == HCCN_COLL_BROADCAST)
        return level(m, &mesh, 0, &node, a, HCCN_COLL_SCATTER, q, l0) +
               level(m, h, 1, &h->inter, a, HCCN_COLL_BROADCAST, q, n0) +
               level(m, h, 0, &h->intra, a, HCCN_COLL_ALLGATHER, q, 0) +
               level(m, h, 1, &line, a, HCCN_COLL_BROADCAST, t, n0) +
               level(m, h, 0, &h->intra, a, HCCN_COLL_BROADCAST, t, l0);
    return level(m, h, 0, &h->intra, a, HCCN_COLL_REDUCE_SCATTER, q, 0) +
           level(m, h, 1, &h->inter, a, HCCN_COLL_REDUCE, q, n0) +
           level(m, &mesh, 0, &node, a, HCCN_COLL_GATHER, q, l0) +
           level(m, h, 0, &h->intra, a, HCCN_COLL_REDUCE, t, l0) +
           level(m, h, 1, &line, a, HCCN_COLL_REDUCE, t, n0);
}

/* The flat ring hier falls back to: over the ranks ordered by node (rank
 * order for reduce_scatter and allgather, whose blocks follow it). */
static double hier_fallback(hccn_cm_t *m, const hccn_coll_args_t *a)
{
    const hccn_hier_view_t *v = a->view;
    int p = a->nranks, n = 0, whole_msg = a->coll != HCCN_COLL_REDUCE_SCATTER &&
                                           a->coll != HCCN_COLL_ALLGATHER;
    int *order = hccn_sim_malloc((size_t)p * sizeof(int));
    hccn_coll_args_t sub = *a;
    if (order == NULL) {
        m->failed = 1;
        return 0.0;
    }
    for (int nd = 0; nd < (whole_msg ? v->nnodes : 1); nd++)
        for (int r = 0; r < p; r++)
            if (!whole_msg || v->node[r] == nd) {
                if (r == a->root)
                    sub.root = n;
                order[n++] = r;
            }
    hccn_cm_team_t line = {1, p, order};
    double t = hccn_hier_cm_ring(m, &line, &sub);
    hccn_sim_free(order);
    return t;
}

/* 1 if rank r is node * L + local for every r. */
static int node_major(const hccn_hier_view_t *v, int L)
{
    for (int r = 0; r < v->nranks; r++)
        if (r != v->node[r] * L + v->local[r])
            return 0;
    return 1;
}

static double hier_form(hccn_cm_t *m, const hccn_cm_team_t *t,
                        const hccn_coll_args_t *a, const char *l0,
                        const char *l1)
{
    hier_t h = {0};
    h.l0 = l0;
    h.l1 = l1;
    double time = HCCN_COST_NONE;
    int shape = t->ngroups == 1 ? hier_shape(m, a, &h) : -1;
    int rs_ag = a->coll == HCCN_COLL_REDUCE_SCATTER ||
                a->coll == HCCN_COLL_ALLGATHER;
    if (shape == 0 || (shape > 0 && rs_ag && !node_major(a->view, h.L)))
        time = hier_fallback(m, a);
    else if (shape > 0 && a->coll == HCCN_COLL_ALLREDUCE)
        time = hier_allreduce(m, &h, a);
    else if (shape > 0 && rs_ag)
        time = instances(m, &h, 0, &h.intra, a, h.N) +
               instances(m, &h, 1, &h.inter, a, 1);
    else if (shape > 0)
        time = hier_rooted(m, &h, a);
    hccn_sim_free(h.at);
    return time;
}

double hccn_hier_cm_hier(hccn_cm_t *m, const hccn_cm_team_t *t,
                         const hccn_coll_args_t *a)
{
    return a->coll <= HCCN_COLL_REDUCE ? hier_form(m, t, a, "mesh", "ring")
                                       : HCCN_COST_NONE;
}

double hccn_hier_cm_hier_rr(hccn_cm_t *m, const hccn_cm_team_t *t,
                            const hccn_coll_args_t *a)
{
    return a->coll <= HCCN_COLL_ALLGATHER ? hier_form(m, t, a, "ring", "ring")
                                          : HCCN_COST_NONE;
}

double hccn_hier_cm_hier_levels(hccn_cm_t *m, const hccn_cm_team_t *t,
                                const hccn_coll_args_t *a)
{
    const hccn_level_choice_t *lv = a->levels;
    return a->coll <= HCCN_COLL_ALLGATHER && lv != NULL
               ? hier_form(m, t, a, lv->algo[0], lv->algo[1])
               : HCCN_COST_NONE;
}

double hccn_hier_cm_hier_mh(hccn_cm_t *m, const hccn_cm_team_t *t,
                            const hccn_coll_args_t *a)
{
    return a->coll <= HCCN_COLL_ALLGATHER ? hier_form(m, t, a, "mesh", "hd")
                                          : HCCN_COST_NONE;
}
