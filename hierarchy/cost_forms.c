/*
 * The cost model's closed forms, one per algorithm of the table (see
 * docs/selection.md for the formulas and docs/algorithms.md for the
 * schedules they price): the flat algorithms here, tree in cost_tree.c,
 * the hierarchical rows in cost_hier.c, and the table of all of them. A
 * form prices one collective run by every group of a team at the same
 * time; a->nranks is the group size and a->root a member index.
 *
 * Each form mirrors its schedule's structure: rounds whose transfers run
 * together (priced by hccn_hier_cm_flows, links shared), phases, chains
 * and pipelines. A round ends when its slowest transfer (and reduction)
 * does, the next one starts then.
 */
#include <stdlib.h>
#include <string.h>

#include "device_sim/alloc.h"
#include "hierarchy/algo_util.h"
#include "hierarchy/cost_internal.h"

/* The default chunk of ring's pipelined chains (docs/algorithms.md). */

static uint64_t whole(const hccn_coll_args_t *a)
{
    return a->count * a->esize;
}

static uint64_t block(const hccn_coll_args_t *a, int i)
{
    return hccn_hier_block(a->count, a->esize, a->nranks, i).len;
}

static double copy_time(const hccn_cm_t *m, uint64_t bytes)
{
    return (double)bytes * m->m;
}

/* The slowest of the n priced transfers of x; done, if not NULL, gives the
 * time each sender (communicator rank) starts. */
static double slowest(const hccn_cm_xf_t *x, size_t n, const double *done)
{
    double end = 0.0;
    for (size_t i = 0; i < n; i++)
        end = hccn_hier_cm_max(end, hccn_hier_cm_time(&x[i]) +
                                        (done ? done[x[i].src] : 0.0));
    return end;
}

hccn_cm_xf_t hccn_hier_cm_xf(int src, int dst, uint64_t bytes)
{
    return (hccn_cm_xf_t){src, dst, bytes, 0.0, 0.0, 1.0};
}

static hccn_cm_xf_t xf(int src, int dst, uint64_t bytes)
{
    return hccn_hier_cm_xf(src, dst, bytes);
}

/* One round: in every group member i sends bytes to member i + k. */
static double shift_round(hccn_cm_t *m, const hccn_cm_team_t *t, int k,
                          uint64_t bytes)
{
    size_t n = 0;
    for (int g = 0; g < t->ngroups; g++)
        for (int i = 0; i < t->size; i++)
            m->x[n++] = xf(hccn_hier_cm_member(t, g, i),
                           hccn_hier_cm_member(t, g, i + k), bytes);
    hccn_hier_cm_flows(m, m->x, n, 1.0);
    return slowest(m->x, n, NULL);
}

/* Per communicator rank, when it is done with the rounds so far. */
typedef struct {
    double *ready, *next;
} clocks_t;

static int clocks_init(hccn_cm_t *m, clocks_t *c)
{
    c->ready = hccn_sim_calloc(2 * (size_t)m->p, sizeof(double));
    c->next = c->ready + m->p;
    m->failed |= c->ready == NULL;
    return c->ready != NULL ? 0 : -1;
}

static double clocks_end(hccn_cm_t *m, clocks_t *c)
{
    double end = 0.0;
    for (int r = 0; r < m->p; r++)
        end = hccn_hier_cm_max(end, c->ready[r]);
    hccn_sim_free(c->ready);
    return end;
}

/* One round of the n transfers in m->x, priced as running together: each
 * starts when its sender is done with the previous rounds (and, with
 * recv_waits, its receiver too); the sender is done when it has drained,
 * the receiver when it has arrived and, with reduce, been reduced. Ranks
 * of a round can be far apart in time, so its rounds overlap as they do
 * in the schedule; only the sharing of links is per round. */
static void round_step(hccn_cm_t *m, size_t n, clocks_t *c, int recv_waits,
                       int reduce)
{
    hccn_hier_cm_flows(m, m->x, n, 1.0);
    memcpy(c->next, c->ready, (size_t)m->p * sizeof(double));
    for (size_t i = 0; i < n; i++) {
        const hccn_cm_xf_t *x = &m->x[i];
        double go = recv_waits ? hccn_hier_cm_max(c->ready[x->src],
                                                  c->ready[x->dst])
                               : c->ready[x->src];
        double drained = go + (double)x->bytes * x->w;
        double done = drained + x->lat +
                      (reduce ? (double)x->bytes * m->r : 0.0);
        c->next[x->src] = hccn_hier_cm_max(c->next[x->src], drained);
        c->next[x->dst] = hccn_hier_cm_max(c->next[x->dst], done);
    }
    memcpy(c->ready, c->next, (size_t)m->p * sizeof(double));
}

/* ---------------------------------------------------------------- ring --- */

static double ring_rounds(hccn_cm_t *m, const hccn_cm_team_t *t, int rounds,
                          uint64_t bytes, int reduce)
{
    double round = shift_round(m, t, 1, bytes);
    return rounds * (round + (reduce ? (double)bytes * m->r : 0.0));
}

hccn_cm_chunks_t hccn_hier_cm_chunks(const hccn_coll_args_t *a, uint64_t n,
                                     uint64_t chk)
{
    uint64_t c = hccn_hier_chunk(a, chk);
    c = c > n ? n : c;
    hccn_cm_chunks_t ck = {c, (n + c - 1) / c, 0};
    ck.last = n - (ck.n - 1) * c;
    return ck;
}

double hccn_hier_cm_staged(hccn_cm_t *m, int h, const int *size,
                           const hccn_cm_chunks_t *ck, const double *r)
{
    int *off = hccn_sim_malloc(((size_t)h + 1) * sizeof(int));
    if (off == NULL) {
        m->failed = 1;
        return 0.0;
    }
    off[0] = 0;
    for (int i = 0; i < h; i++)
        off[i + 1] = off[i] + size[i];
    double t = hccn_hier_cm_pipeline(m, m->x, h, off, ck, r);
    hccn_sim_free(off);
    return t;
}

/* The pipelined chain member first -> first+1 -> ... of every group. */
static double chain(hccn_cm_t *m, const hccn_cm_team_t *t,
                    const hccn_coll_args_t *a, int first, int reduce)
{
    hccn_cm_chunks_t ck = hccn_hier_cm_chunks(a, whole(a), HCCN_RING_CHUNK);
    int h = t->size - 1, w = t->ngroups;
    int *size = hccn_sim_malloc((size_t)h * sizeof(int));
    double *r = hccn_sim_malloc((size_t)h * sizeof(double)), time = 0.0;
    if (size != NULL && r != NULL) {
        for (int i = 0; i < h; i++) {
            size[i] = w;
            r[i] = reduce ? m->r : 0.0;
            for (int g = 0; g < w; g++)
                m->x[i * w + g] =
                    xf(hccn_hier_cm_member(t, g, first + i),
                       hccn_hier_cm_member(t, g, first + i + 1), ck.c);
        }
        time = hccn_hier_cm_staged(m, h, size, &ck, r);
    } else {
        m->failed = 1;
    }
    hccn_sim_free(size);
    hccn_sim_free(r);
    return time;
}

double hccn_hier_cm_ring(hccn_cm_t *m, const hccn_cm_team_t *t,
                         const hccn_coll_args_t *a)
{
    const int p = a->nranks;
    uint64_t b = whole(a);
    switch (a->coll) {
    case HCCN_COLL_ALLREDUCE:
        return ring_rounds(m, t, p - 1, block(a, 0), 1) +
               ring_rounds(m, t, p - 1, block(a, 0), 0);
    case HCCN_COLL_REDUCE_SCATTER:
        return ring_rounds(m, t, p - 1, b, 1);
    case HCCN_COLL_ALLGATHER:
        return hccn_hier_cm_max(ring_rounds(m, t, p - 1, b, 0),
                                copy_time(m, b));
    case HCCN_COLL_BROADCAST:
        return hccn_hier_cm_max(chain(m, t, a, a->root, 0), copy_time(m, b));
    case HCCN_COLL_REDUCE:
        return chain(m, t, a, a->root + 1, 1);
    default:
        return HCCN_COST_NONE;
    }
}

/* ---------------------------------------------------------------- mesh --- */

/* The all-pairs phase of every group, priced from the shifts ks[0..ns):
 * x[(s * ngroups + g) * size + j] joins member j of group g and member
 * j + ks[s], from that peer to j when into is set, else from j to it; it
 * carries block j (blocks) or bytes. Returns the number of transfers. */
static size_t all_pairs(hccn_cm_t *m, const hccn_cm_team_t *t,
                        const hccn_coll_args_t *a, const int *ks, int ns,
                        int into, int blocks, uint64_t bytes)
{
    size_t n = 0;
    for (int s = 0; s < ns; s++)
        for (int g = 0; g < t->ngroups; g++)
            for (int j = 0; j < t->size; j++) {
                int me = hccn_hier_cm_member(t, g, j);
                int peer = hccn_hier_cm_member(t, g, j + ks[s]);
                uint64_t b = blocks ? block(a, j) : bytes;
                m->x[n++] = into ? xf(peer, me, b) : xf(me, peer, b);
            }
    hccn_hier_cm_flows(m, m->x, n, (double)(t->size - 1) / ns);
    return n;
}

/* Member j of group g reduces what member j+k sends in the order k = 1,
 * 2, ..., one reduction after another: the last one ends at the latest,
 * over k, arrival of k plus the size-k reductions from k on. */
static double reduce_chain(const hccn_cm_t *m, const hccn_cm_team_t *t,
                           const int *ks, int ns, int g, int j)
{
    double end = 0.0;
    for (int s = 0; s < ns; s++) {
        const hccn_cm_xf_t *x =
            &m->x[((size_t)s * t->ngroups + g) * t->size + j];
        end = hccn_hier_cm_max(end, hccn_hier_cm_time(x) +
                                        (double)(t->size - ks[s]) *
                                            (double)x->bytes * m->r);
    }
    return end;
}

/* Phase 1 reduces block j at member j; phase 2 sends it from there to
 * every other member as soon as it is reduced. */
static double mesh_allreduce(hccn_cm_t *m, const hccn_cm_team_t *t,
                             const hccn_coll_args_t *a, const int *ks, int ns)
{
    double *done = hccn_sim_calloc((size_t)m->p, sizeof(double));
    if (done == NULL) {
        m->failed = 1;
        return 0.0;
    }
    all_pairs(m, t, a, ks, ns, 1, 1, 0);
    for (int g = 0; g < t->ngroups; g++)
        for (int j = 0; j < t->size; j++)
            done[hccn_hier_cm_member(t, g, j)] =
                reduce_chain(m, t, ks, ns, g, j);
    size_t n = all_pairs(m, t, a, ks, ns, 0, 1, 0);
    double end = slowest(m->x, n, done);
    hccn_sim_free(done);
    return end;
}

/* Every group's root and its other members, all at once (x[(k-1) *
 * ngroups + g] joins the root and member root+k); with reduce the root
 * reduces them in the order k = 1, 2, ... */
static double star(hccn_cm_t *m, const hccn_cm_team_t *t, int root, int into,
                   uint64_t bytes, int reduce)
{
    const int w = t->ngroups;
    size_t n = 0;
    for (int k = 1; k < t->size; k++)
        for (int g = 0; g < w; g++) {
            int r = hccn_hier_cm_member(t, g, root);
            int peer = hccn_hier_cm_member(t, g, root + k);
            m->x[n++] = into ? xf(peer, r, bytes) : xf(r, peer, bytes);
        }
    hccn_hier_cm_flows(m, m->x, n, 1.0);
    if (!reduce)
        return slowest(m->x, n, NULL);
    double end = 0.0;
    for (int k = 1; k < t->size; k++)
        for (int g = 0; g < w; g++)
            end = hccn_hier_cm_max(
                end, hccn_hier_cm_time(&m->x[(size_t)(k - 1) * w + g]) +
                         (double)(t->size - k) * (double)bytes * m->r);
    return end;
}

double hccn_hier_cm_mesh(hccn_cm_t *m, const hccn_cm_team_t *t,
                         const hccn_coll_args_t *a)
{
    int ks[HCCN_CM_SAMPLE], ns = hccn_hier_cm_shifts(t->size, ks);
    uint64_t b = whole(a);
    double end = 0.0;
    switch (a->coll) {
    case HCCN_COLL_ALLREDUCE:
        return mesh_allreduce(m, t, a, ks, ns);
    case HCCN_COLL_REDUCE_SCATTER:
        all_pairs(m, t, a, ks, ns, 1, 0, b);
        for (int g = 0; g < t->ngroups; g++)
            for (int j = 0; j < t->size; j++)
                end = hccn_hier_cm_max(end, reduce_chain(m, t, ks, ns, g, j));
        return end;
    case HCCN_COLL_ALLGATHER:
    case HCCN_COLL_ALLTOALL:
        end = slowest(m->x, all_pairs(m, t, a, ks, ns, 0, 0, b), NULL);
        return hccn_hier_cm_max(end, copy_time(m, b));
    case HCCN_COLL_BARRIER:
        return slowest(m->x, all_pairs(m, t, a, ks, ns, 0, 0, 0), NULL);
    case HCCN_COLL_BROADCAST:
    case HCCN_COLL_SCATTER:
        return hccn_hier_cm_max(star(m, t, a->root, 0, b, 0),
                                copy_time(m, b));
    case HCCN_COLL_GATHER:
        return hccn_hier_cm_max(star(m, t, a->root, 1, b, 0),
                                copy_time(m, b));
    case HCCN_COLL_REDUCE:
        return star(m, t, a->root, 1, b, 1);
    default:
        return HCCN_COST_NONE;
    }
}

/* -------------------------------------------------------------- linear --- */

/* Each group's root talks to member root+1, root+2, ... in turn. Sends go
 * back to back (a send is done when it has drained); a receive waits for
 * the previous one to arrive (and be reduced). */
static double one_by_one(hccn_cm_t *m, const hccn_cm_team_t *t, int root,
                         int into, uint64_t bytes, int reduce)
{
    const int w = t->ngroups;
    double drained = 0.0, end = 0.0, step;
    for (int k = 1; k < t->size; k++) {
        for (int g = 0; g < w; g++) {
            int r = hccn_hier_cm_member(t, g, root);
            int peer = hccn_hier_cm_member(t, g, root + k);
            m->x[g] = into ? xf(peer, r, bytes) : xf(r, peer, bytes);
        }
        hccn_hier_cm_flows(m, m->x, (size_t)w, 1.0);
        if (into) {
            end += slowest(m->x, (size_t)w, NULL) +
                   (reduce ? (double)bytes * m->r : 0.0);
            continue;
        }
        step = 0.0;
        for (int g = 0; g < w; g++)
            step = hccn_hier_cm_max(step, (double)bytes * m->x[g].w);
        drained += step;
        for (int g = 0; g < w; g++)
            end = hccn_hier_cm_max(end, drained + m->x[g].lat);
    }
    return end;
}

/* Rounds k = 1, 2, ... of a shift pattern, each member's round after its
 * previous one (both sides): round by round as in round_step, or, beyond
 * ROUNDS_EXACT rounds, a sample of the rounds, each as long as its slowest
 * transfer, standing for all. */
#define ROUNDS_EXACT 256

static double shift_rounds(hccn_cm_t *m, const hccn_cm_team_t *t,
                           uint64_t bytes)
{
    int ks[HCCN_CM_SAMPLE], ns = hccn_hier_cm_shifts(t->size, ks);
    size_t n = (size_t)t->ngroups * t->size;
    double sum = 0.0;
    clocks_t c;
    if (t->size - 1 <= ROUNDS_EXACT) {
        if (clocks_init(m, &c) != 0)
            return 0.0;
        for (int k = 1; k < t->size; k++) {
            for (size_t i = 0; i < n; i++)
                m->x[i] = xf(t->rank[i],
                             hccn_hier_cm_member(t, (int)(i / t->size),
                                                 (int)(i % t->size) + k),
                             bytes);
            round_step(m, n, &c, 1, 0);
        }
        return clocks_end(m, &c);
    }
    for (int s = 0; s < ns; s++)
        sum += shift_round(m, t, ks[s], bytes);
    return sum * (t->size - 1) / ns;
}

/* Member 0 hears from 1, 2, ... in turn (0-byte messages: a latency
 * each), then releases them all at once. */
static double linear_barrier(hccn_cm_t *m, const hccn_cm_team_t *t)
{
    double in = 0.0;
    star(m, t, 0, 1, 0, 0);   /* prices member k -> 0 at x[(k-1)*ngroups+g] */
    for (int k = 1; k < t->size; k++) {
        double step = 0.0;
        for (int g = 0; g < t->ngroups; g++)
            step = hccn_hier_cm_max(
                step, m->x[(size_t)(k - 1) * t->ngroups + g].lat);
        in += step;
    }
    return in + star(m, t, 0, 0, 0, 0);
}

double hccn_hier_cm_linear(hccn_cm_t *m, const hccn_cm_team_t *t,
                           const hccn_coll_args_t *a)
{
    uint64_t b = whole(a);
    switch (a->coll) {
    case HCCN_COLL_BROADCAST:
    case HCCN_COLL_SCATTER:
        return hccn_hier_cm_max(one_by_one(m, t, a->root, 0, b, 0),
                                copy_time(m, b));
    case HCCN_COLL_GATHER:
        return hccn_hier_cm_max(one_by_one(m, t, a->root, 1, b, 0),
                                copy_time(m, b));
    case HCCN_COLL_REDUCE:
        return one_by_one(m, t, a->root, 1, b, 1);
    case HCCN_COLL_ALLTOALL:
        return hccn_hier_cm_max(shift_rounds(m, t, b), copy_time(m, b));
    case HCCN_COLL_BARRIER:
        return linear_barrier(m, t);
    default:
        return HCCN_COST_NONE;
    }
}

/* ---------------------------------------------------- bruck, pairwise --- */

/* Step d = 1, 2, 4, ...: allgather sends min(d, p-d) blocks to member
 * i - d; alltoall sends the blocks of the positions with bit d set to
 * member i + d. A step's transfers to one peer go back to back (one
 * latency, the drain of all its bytes). A member starts step d+1 when its
 * sends of step d have drained and its receives have arrived (alltoall's
 * receives also wait for the receiver's previous step), so the steps of
 * different members overlap: priced member by member, each step's
 * transfers sharing links as if they ran together. */
double hccn_hier_cm_bruck(hccn_cm_t *m, const hccn_cm_team_t *t,
                          const hccn_coll_args_t *a)
{
    const int p = a->nranks, ag = a->coll == HCCN_COLL_ALLGATHER;
    uint64_t b = whole(a);
    if (!ag && a->coll != HCCN_COLL_ALLTOALL)
        return HCCN_COST_NONE;
    double *start = hccn_sim_calloc(2 * (size_t)m->p, sizeof(double)), end = 0.0;
    if (start == NULL) {
        m->failed = 1;
        return 0.0;
    }
    double *next = start + m->p;
    for (int d = 1; d < p; d *= 2) {
        uint64_t blocks = 0;
        if (ag)
            blocks = (uint64_t)(d < p - d ? d : p - d);
        else
            for (int j = d; j < p; j++)
                blocks += (j & d) != 0;
        shift_round(m, t, ag ? -d : d, blocks * b);
        for (size_t i = 0; i < (size_t)m->p; i++)
            next[i] = start[i];
        for (size_t i = 0; i < (size_t)t->ngroups * t->size; i++) {
            const hccn_cm_xf_t *x = &m->x[i];
            double go = ag ? start[x->src]
                           : hccn_hier_cm_max(start[x->src], start[x->dst]);
            double drained = go + (double)x->bytes * x->w;
            next[x->src] = hccn_hier_cm_max(next[x->src], drained);
            next[x->dst] = hccn_hier_cm_max(next[x->dst], drained + x->lat);
        }
        for (size_t i = 0; i < (size_t)m->p; i++)
            end = hccn_hier_cm_max(end, start[i] = next[i]);
    }
    hccn_sim_free(start);
    return hccn_hier_cm_max(end, copy_time(m, b));
}

/* Every block is its own transfer and none waits for another: all of them
 * run at once, as mesh's alltoall. */
double hccn_hier_cm_pairwise(hccn_cm_t *m, const hccn_cm_team_t *t,
                             const hccn_coll_args_t *a)
{
    return a->coll == HCCN_COLL_ALLTOALL ? hccn_hier_cm_mesh(m, t, a)
                                         : HCCN_COST_NONE;
}

/* ----------------------------------------------- halving-doubling --- */

/* The power-of-two core of p ranks (docs/algorithms.md, hd): pp virtual
 * ranks, the first `extra` of which stand for a folded pair (2v, 2v+1). */
typedef struct {
    int p, pp, extra, levels;
    const hccn_coll_args_t *a;
} hd_shape_t;

static hd_shape_t hd_shape(const hccn_coll_args_t *a)
{
    hd_shape_t h = {a->nranks, hccn_hier_pow2_floor(a->nranks), 0, 0, a};
    h.extra = h.p - h.pp;
    h.levels = hccn_hier_log2(h.pp);
    return h;
}

static int hd_real(const hd_shape_t *h, int v)
{
    return v < h->extra ? 2 * v + 1 : v + h->extra;
}

/* Bytes of virtual blocks [v0, v1): allreduce splits the message into pp
 * blocks; reduce_scatter and allgather use whole real blocks (two for a
 * folded pair). */
static uint64_t hd_span(const hd_shape_t *h, int v0, int v1)
{
    const hccn_coll_args_t *a = h->a;
    if (a->coll == HCCN_COLL_ALLREDUCE) {
        uint64_t lo = hccn_hier_block(a->count, a->esize, h->pp, v0).off;
        uint64_t hi = v1 < h->pp
                          ? hccn_hier_block(a->count, a->esize, h->pp, v1).off
                          : whole(a);
        return hi - lo;
    }
    int f0 = v0 < h->extra ? 2 * v0 : v0 + h->extra;
    int f1 = v1 < h->extra ? 2 * v1 : v1 + h->extra;
    return (uint64_t)(f1 - f0) * whole(a);
}

/* The folds: 2i -> 2i+1 before (out == 0) or 2i+1 -> 2i after. */
static void hd_fold(hccn_cm_t *m, const hccn_cm_team_t *t,
                    const hd_shape_t *h, clocks_t *c, int out,
                    uint64_t bytes, int reduce)
{
    size_t n = 0;
    for (int g = 0; g < t->ngroups; g++)
        for (int i = 0; i < h->extra; i++) {
            int lo = hccn_hier_cm_member(t, g, 2 * i);
            int hi = hccn_hier_cm_member(t, g, 2 * i + 1);
            m->x[n++] = out ? xf(hi, lo, bytes) : xf(lo, hi, bytes);
        }
    if (n > 0)
        round_step(m, n, c, out, reduce);
}

/* Exchange k of the halving (halve set) or the doubling: virtual v sends
 * to v ^ d the half it gives up (halving, reduced there) or its range
 * (doubling). */
static void hd_exchange(hccn_cm_t *m, const hccn_cm_team_t *t,
                        const hd_shape_t *h, clocks_t *c, int k, int halve,
                        int rdouble)
{
    const int d = halve ? h->pp >> (k + 1) : 1 << k;
    size_t n = 0;
    for (int g = 0; g < t->ngroups; g++)
        for (int v = 0; v < h->pp; v++) {
            int w = v ^ d, lo = (halve ? w : v) & ~(d - 1);
            uint64_t b = rdouble ? whole(h->a) : hd_span(h, lo, lo + d);
            m->x[n++] = xf(hccn_hier_cm_member(t, g, hd_real(h, v)),
                           hccn_hier_cm_member(t, g, hd_real(h, w)), b);
        }
    round_step(m, n, c, 1, halve || rdouble);
}

/* Part `part` (0 below v, 1 v's own block, 2 above v) of the range an
 * allgather's virtual v sends in exchange k: the schedule sends an
 * unfolded rank's range as up to three chained transfers (algo_hd.c),
 * each with its own protocol; a folded pair's in one (part 0). */
static uint64_t ag_part(const hd_shape_t *h, int v, int k, int part)
{
    int lo = v & ~((1 << k) - 1), hi = lo + (1 << k);
    if (v < h->extra)
        return part == 0 ? hd_span(h, lo, hi) : 0;
    return part == 0 ? hd_span(h, lo, v)
           : part == 1 ? hd_span(h, v, v + 1) : hd_span(h, v + 1, hi);
}

/* Exchange k of an allgather's doubling, part by part: a sender starts
 * when both sides are ready and drains its parts one after the other, so
 * on the links its parts are one flow of their bytes on the wire (each
 * part's bytes / its protocol's eff); a part arrives when the flow has
 * drained up to it, plus the route's latency and its protocol's step. Its
 * receiver is done when the last part has arrived. */
static void hd_ag_exchange(hccn_cm_t *m, const hccn_cm_team_t *t,
                           const hd_shape_t *h, clocks_t *c, int k)
{
    size_t n = (size_t)t->ngroups * h->pp;
    double *wire = hccn_sim_malloc(8 * n * sizeof(double));
    double *step = wire + 3 * n, *at = step + 3 * n, *got = at + n;
    if (wire == NULL) {
        m->failed = 1;
        return;
    }
    memcpy(c->next, c->ready, (size_t)m->p * sizeof(double));
    for (size_t i = 0; i < n; i++) {
        int g = (int)(i / h->pp), v = (int)(i % h->pp);
        int src = hccn_hier_cm_member(t, g, hd_real(h, v));
        int dst = hccn_hier_cm_member(t, g, hd_real(h, v ^ (1 << k)));
        uint64_t all = 0;
        double on_wire = 0.0;
        for (int part = 0; part < 3; part++) {
            hccn_cm_xf_t x = xf(src, dst, ag_part(h, v, k, part));
            step[3 * i + part] = hccn_hier_cm_protocol(m, &x);
            on_wire += (double)x.bytes / x.eff;
            wire[3 * i + part] = on_wire;
            all += x.bytes;
        }
        m->x[i] = xf(src, dst, all);
        m->x[i].eff = all > 0 ? (double)all / on_wire : 1.0;
        at[i] = hccn_hier_cm_max(c->ready[src], c->ready[dst]);
    }
    m->eff_given = 1;
    hccn_hier_cm_flows(m, m->x, n, 1.0);
    m->eff_given = 0;
    for (size_t i = 0; i < n; i++) {
        const hccn_cm_xf_t *x = &m->x[i];
        double drain = (double)x->bytes * x->w, total = wire[3 * i + 2];
        got[i] = at[i];
        for (int part = 0; part < 3; part++) {
            double upto = wire[3 * i + part];
            if (upto > (part > 0 ? wire[3 * i + part - 1] : 0.0))
                got[i] = hccn_hier_cm_max(got[i], at[i] + drain * upto / total +
                                                      x->lat +
                                                      step[3 * i + part]);
        }
        c->next[x->src] = hccn_hier_cm_max(c->next[x->src], at[i] + drain);
        c->next[x->dst] = hccn_hier_cm_max(c->next[x->dst], got[i]);
    }
    memcpy(c->ready, c->next, (size_t)m->p * sizeof(double));
    hccn_sim_free(wire);
}

double hccn_hier_cm_hd(hccn_cm_t *m, const hccn_cm_team_t *t,
                       const hccn_coll_args_t *a)
{
    hd_shape_t h = hd_shape(a);
    uint64_t b = whole(a), all = b * (uint64_t)a->nranks;
    int ar = a->coll == HCCN_COLL_ALLREDUCE;
    int ag = a->coll == HCCN_COLL_ALLGATHER;
    clocks_t c;
    if (!ar && !ag && a->coll != HCCN_COLL_REDUCE_SCATTER)
        return HCCN_COST_NONE;
    if (clocks_init(m, &c) != 0)
        return 0.0;
    hd_fold(m, t, &h, &c, 0, ar || ag ? b : all, !ag);
    for (int k = 0; k < h.levels && !ag; k++)
        hd_exchange(m, t, &h, &c, k, 1, 0);
    for (int k = 0; k < h.levels && (ar || ag); k++)
        if (ag && m->pl->topo->sw != NULL)   /* parts' own protocols */
            hd_ag_exchange(m, t, &h, &c, k);
        else
            hd_exchange(m, t, &h, &c, k, 0, 0);
    hd_fold(m, t, &h, &c, 1, ar || !ag ? b : all, 0);
    return hccn_hier_cm_max(clocks_end(m, &c), ag ? copy_time(m, b) : 0.0);
}

/* Recursive doubling: log2 p' whole-message exchanges, reduced. */
double hccn_hier_cm_rdouble(hccn_cm_t *m, const hccn_cm_team_t *t,
                            const hccn_coll_args_t *a)
{
    hd_shape_t h = hd_shape(a);
    clocks_t c;
    if (a->coll != HCCN_COLL_ALLREDUCE)
        return HCCN_COST_NONE;
    if (clocks_init(m, &c) != 0)
        return 0.0;
    hd_fold(m, t, &h, &c, 0, whole(a), 1);
    for (int k = 0; k < h.levels; k++)
        hd_exchange(m, t, &h, &c, k, 0, 1);
    hd_fold(m, t, &h, &c, 1, whole(a), 0);
    return clocks_end(m, &c);
}

/* --------------------------------------------------------------- table --- */

hccn_cm_form_fn hccn_hier_cm_form(const char *name)
{
    const hccn_algo_t *al = hccn_hier_algo_find(name);
    return al != NULL ? al->cost : NULL;
}
