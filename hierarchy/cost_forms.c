/*
 * The cost model's closed forms, one per algorithm of the table (see
 * docs/selection.md for the formulas and docs/algorithms.md for the
 * schedules they price). A form prices one collective run by every group
 * of a team at the same time; a->nranks is the group size and a->root a
 * member index.
 *
 * Each form mirrors its schedule's structure: rounds whose transfers run
 * together (priced by hccn_hier_cm_flows, links shared), phases, chains
 * and pipelines. A round ends when its slowest transfer (and reduction)
 * does, the next one starts then.
 */
#include <stdlib.h>
#include <string.h>

#include "hierarchy/algo_util.h"
#include "hierarchy/cost_internal.h"

/* The default chunk of ring's pipelined chains (docs/algorithms.md). */
#define RING_CHUNK ((uint64_t)1 << 20)

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

static hccn_cm_xf_t xf(int src, int dst, uint64_t bytes)
{
    return (hccn_cm_xf_t){src, dst, bytes, 0.0, 0.0};
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
    c->ready = calloc(2 * (size_t)m->p, sizeof(double));
    c->next = c->ready + m->p;
    m->failed |= c->ready == NULL;
    return c->ready != NULL ? 0 : -1;
}

static double clocks_end(hccn_cm_t *m, clocks_t *c)
{
    double end = 0.0;
    for (int r = 0; r < m->p; r++)
        end = hccn_hier_cm_max(end, c->ready[r]);
    free(c->ready);
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

/* Chunks of chk bytes (the algorithm's default when a->chunk_bytes is 0)
 * of a message of n bytes. */
static hccn_cm_chunks_t chunks(const hccn_coll_args_t *a, uint64_t n,
                               uint64_t chk)
{
    uint64_t c = hccn_hier_chunk(a, chk);
    c = c > n ? n : c;
    hccn_cm_chunks_t ck = {c, (n + c - 1) / c, 0};
    ck.last = n - (ck.n - 1) * c;
    return ck;
}

/* A pipeline whose stages are given by their sizes (stage i: the next
 * size[i] transfers of m->x), each reducing r[i] s/byte (r may be NULL). */
static double staged(hccn_cm_t *m, int h, const int *size,
                     const hccn_cm_chunks_t *ck, const double *r)
{
    int *off = malloc(((size_t)h + 1) * sizeof(int));
    if (off == NULL) {
        m->failed = 1;
        return 0.0;
    }
    off[0] = 0;
    for (int i = 0; i < h; i++)
        off[i + 1] = off[i] + size[i];
    double t = hccn_hier_cm_pipeline(m, m->x, h, off, ck, r);
    free(off);
    return t;
}

/* The pipelined chain member first -> first+1 -> ... of every group. */
static double chain(hccn_cm_t *m, const hccn_cm_team_t *t,
                    const hccn_coll_args_t *a, int first, int reduce)
{
    hccn_cm_chunks_t ck = chunks(a, whole(a), RING_CHUNK);
    int h = t->size - 1, w = t->ngroups;
    int *size = malloc((size_t)h * sizeof(int));
    double *r = malloc((size_t)h * sizeof(double)), time = 0.0;
    if (size != NULL && r != NULL) {
        for (int i = 0; i < h; i++) {
            size[i] = w;
            r[i] = reduce ? m->r : 0.0;
            for (int g = 0; g < w; g++)
                m->x[i * w + g] =
                    xf(hccn_hier_cm_member(t, g, first + i),
                       hccn_hier_cm_member(t, g, first + i + 1), ck.c);
        }
        time = staged(m, h, size, &ck, r);
    } else {
        m->failed = 1;
    }
    free(size);
    free(r);
    return time;
}

static double form_ring(hccn_cm_t *m, const hccn_cm_team_t *t,
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
    double *done = calloc((size_t)m->p, sizeof(double));
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
    free(done);
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

static double form_mesh(hccn_cm_t *m, const hccn_cm_team_t *t,
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

static double form_linear(hccn_cm_t *m, const hccn_cm_team_t *t,
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
static double form_bruck(hccn_cm_t *m, const hccn_cm_team_t *t,
                         const hccn_coll_args_t *a)
{
    const int p = a->nranks, ag = a->coll == HCCN_COLL_ALLGATHER;
    uint64_t b = whole(a);
    if (!ag && a->coll != HCCN_COLL_ALLTOALL)
        return HCCN_COST_NONE;
    double *start = calloc(2 * (size_t)m->p, sizeof(double)), end = 0.0;
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
    free(start);
    return hccn_hier_cm_max(end, copy_time(m, b));
}

/* Every block is its own transfer and none waits for another: all of them
 * run at once, as mesh's alltoall. */
static double form_pairwise(hccn_cm_t *m, const hccn_cm_team_t *t,
                            const hccn_coll_args_t *a)
{
    return a->coll == HCCN_COLL_ALLTOALL ? form_mesh(m, t, a)
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

static double form_hd(hccn_cm_t *m, const hccn_cm_team_t *t,
                      const hccn_coll_args_t *a)
{
    hd_shape_t h = hd_shape(a);
    uint64_t b = whole(a), all = b * (uint64_t)a->nranks;
    int ar = a->coll == HCCN_COLL_ALLREDUCE, ag = a->coll == HCCN_COLL_ALLGATHER;
    clocks_t c;
    if (!ar && !ag && a->coll != HCCN_COLL_REDUCE_SCATTER)
        return HCCN_COST_NONE;
    if (clocks_init(m, &c) != 0)
        return 0.0;
    hd_fold(m, t, &h, &c, 0, ar || ag ? b : all, !ag);
    for (int k = 0; k < h.levels && !ag; k++)
        hd_exchange(m, t, &h, &c, k, 1, 0);
    for (int k = 0; k < h.levels && (ar || ag); k++)
        hd_exchange(m, t, &h, &c, k, 0, 0);
    hd_fold(m, t, &h, &c, 1, ar || !ag ? b : all, 0);
    return hccn_hier_cm_max(clocks_end(m, &c), ag ? copy_time(m, b) : 0.0);
}

/* Recursive doubling: log2 p' whole-message exchanges, reduced. */
static double form_rdouble(hccn_cm_t *m, const hccn_cm_team_t *t,
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

/* ---------------------------------------------------------------- tree --- */

#define TREE_CHUNK ((uint64_t)1 << 20)   /* tree's default chunk */

/* A binary tree over members 0..p-1: parent (-1 at the root), distance to
 * the root and height of the subtree below each member. */
typedef struct {
    int p;
    int *parent, *depth, *height;
} tree_t;

/* tree's balanced in-order tree over positions lo..hi: the root of a range
 * is its middle, position i standing for member mirror ? p-1-i : i+shift;
 * returns the root's member (-1 for an empty range). */
static int tree_inorder(tree_t *t, int lo, int hi, int mirror, int shift)
{
    if (lo > hi)
        return -1;
    int mid = lo + (hi - lo) / 2;
    int r = mirror ? t->p - 1 - mid : (mid + shift) % t->p;
    int left = tree_inorder(t, lo, mid - 1, mirror, shift);
    int right = tree_inorder(t, mid + 1, hi, mirror, shift);
    if (left >= 0)
        t->parent[left] = r;
    if (right >= 0)
        t->parent[right] = r;
    return r;
}

/* tree's heap tree at root: position q = member - root, children 2q+1 and
 * 2q+2. */
static void tree_heap(tree_t *t, int root)
{
    for (int q = 0; q < t->p; q++)
        t->parent[(root + q) % t->p] =
            q == 0 ? -1 : (root + (q - 1) / 2) % t->p;
}

/* Fills depth and height from parent. */
static void tree_levels(tree_t *t)
{
    int maxd = 0;
    for (int u = 0; u < t->p; u++) {
        t->depth[u] = 0;
        t->height[u] = 0;
        for (int v = u; t->parent[v] >= 0; v = t->parent[v])
            t->depth[u]++;
        maxd = t->depth[u] > maxd ? t->depth[u] : maxd;
    }
    for (int d = maxd; d > 0; d--)
        for (int u = 0; u < t->p; u++)
            if (t->depth[u] == d &&
                t->height[t->parent[u]] < t->height[u] + 1)
                t->height[t->parent[u]] = t->height[u] + 1;
}

static int tree_new(tree_t *t, int p)
{
    t->p = p;
    t->parent = malloc(3 * (size_t)p * sizeof(int));
    t->depth = t->parent + p;
    t->height = t->depth + p;
    for (int u = 0; t->parent != NULL && u < p; u++)
        t->parent[u] = -1;
    return t->parent != NULL ? 0 : -1;
}

/* Trees pipelined in chunks, simulated chunk by chunk (docs/selection.md):
 * a slot is one member of one tree of one group, s = (g * nt + k) * p + u;
 * every slot but a root has an edge to its parent, priced once for the
 * first chunk (only the edges of its level busy) and once for the others
 * (every edge busy, both ways for allreduce). */
typedef struct {
    hccn_cm_t *m;
    const hccn_cm_team_t *t;
    const tree_t *trees;
    int nt, p, nslots;
    int *order_up, *order_dn;      /* slots by height, by depth */
    int *kids;                     /* [2 s + i]: child slots, shallower 1st */
    double *lat, *w;               /* [4 s + d]: d = up, down, per regime */
    double *ready, *got, *up_free, *dn_free, *red_free;
} tsim_t;

enum { W_UP, W_DN, W_UP_FILL, W_DN_FILL };

static int tslot_rank(const tsim_t *ts, int s)
{
    int u = s % ts->p, g = s / ts->p / ts->nt;
    return hccn_hier_cm_member(ts->t, g, u);
}

static int tslot_parent(const tsim_t *ts, int s)
{
    int par = ts->trees[s / ts->p % ts->nt].parent[s % ts->p];
    return par < 0 ? -1 : s - s % ts->p + par;
}

/* Prices the edges of the slots in list[0..n) going up or down, all at
 * once; writes w[4 s + col] (and the latencies). */
static void tsim_price(tsim_t *ts, const int *list, int n, int both,
                       int col)
{
    hccn_cm_xf_t *x = ts->m->x;
    int k = 0;
    for (int i = 0; i < n; i++) {
        int s = list[i], par = tslot_parent(ts, s);
        if (par < 0)
            continue;
        int a = tslot_rank(ts, s), b = tslot_rank(ts, par);
        if (col == W_UP || col == W_UP_FILL || both)
            x[k++] = xf(a, b, 1);
        if (col == W_DN || col == W_DN_FILL || both)
            x[k++] = xf(b, a, 1);
    }
    hccn_hier_cm_flows(ts->m, x, (size_t)k, 1.0);
    k = 0;
    for (int i = 0; i < n; i++) {
        int s = list[i];
        if (tslot_parent(ts, s) < 0)
            continue;
        if (col == W_UP || col == W_UP_FILL || both) {
            ts->lat[2 * s] = x[k].lat;
            ts->w[4 * s + (both ? W_UP : col)] = x[k++].w;
        }
        if (col == W_DN || col == W_DN_FILL || both) {
            ts->lat[2 * s + 1] = x[k].lat;
            ts->w[4 * s + (both ? W_DN : col)] = x[k++].w;
        }
    }
}

/* The level at which the first chunk crosses the edge of slot s: going
 * up, its height; going down, its depth. -1 for a root. */
static int tsim_level(const tsim_t *ts, int s, int down)
{
    const tree_t *tk = &ts->trees[s / ts->p % ts->nt];
    int u = s % ts->p;
    return tk->parent[u] < 0 ? -1 : down ? tk->depth[u] : tk->height[u];
}

/* Prices every regime: steady (every edge at once), then the first
 * chunk's, level by level. */
static void tsim_prices(tsim_t *ts, int up, int down)
{
    int *list = malloc((size_t)ts->nslots * sizeof(int));
    if (list == NULL) {
        ts->m->failed = 1;
        return;
    }
    tsim_price(ts, ts->order_up, ts->nslots, up && down,
               up ? W_UP : W_DN);
    for (int d = 0; d < 2; d++) {
        if (!(d == 0 ? up : down))
            continue;
        for (int lvl = 0; lvl <= ts->p; lvl++) {
            int n = 0;
            for (int s = 0; s < ts->nslots; s++)
                if (tsim_level(ts, s, d) == lvl)
                    list[n++] = s;
            if (n > 0)
                tsim_price(ts, list, n, 0, d == 0 ? W_UP_FILL : W_DN_FILL);
            else if (lvl > 0)
                break;   /* levels are contiguous */
        }
    }
    free(list);
}

/* Up: every slot, children first, reduces its children's chunk j (one
 * after the other, shallower first, on the rank's reduce unit) and sends
 * the sum to its parent once its previous chunk has left. */
static void tsim_up(tsim_t *ts, uint64_t j, double c)
{
    int fill = j == 0;
    for (int i = 0; i < ts->nslots; i++) {
        int s = ts->order_up[i], r = tslot_rank(ts, s);
        double t = 0.0;
        for (int k = 0; k < 2 && ts->kids[2 * s + k] >= 0; k++) {
            int ch = ts->kids[2 * s + k];
            double w = ts->w[4 * ch + (fill ? W_UP_FILL : W_UP)];
            double go = hccn_hier_cm_max(ts->ready[ch], ts->up_free[ch]);
            ts->up_free[ch] = go + c * w;
            double arrive = go + c * w + ts->lat[2 * ch];
            t = hccn_hier_cm_max(hccn_hier_cm_max(t, arrive),
                                 ts->red_free[r]) +
                c * ts->m->r;
            ts->red_free[r] = t;
        }
        ts->ready[s] = t;
    }
}

/* Down: every slot, parents first, sends chunk j on to each child once it
 * has it and the child's previous chunk has left. */
static void tsim_down(tsim_t *ts, uint64_t j, double c, int after_up)
{
    int fill = j == 0;
    for (int i = 0; i < ts->nslots; i++) {
        int s = ts->order_dn[i], par = tslot_parent(ts, s);
        if (par < 0) {
            ts->got[s] = after_up ? ts->ready[s] : 0.0;
            continue;
        }
        double w = ts->w[4 * s + (fill ? W_DN_FILL : W_DN)];
        double go = hccn_hier_cm_max(ts->got[par], ts->dn_free[s]);
        ts->dn_free[s] = go + c * w;
        ts->got[s] = go + c * w + ts->lat[2 * s + 1];
    }
}
/* Chunks simulated one by one; beyond, the last increment repeats. */
#define TREE_CHUNKS_EXACT 64

static int tsim_init(tsim_t *ts, hccn_cm_t *m, const hccn_cm_team_t *t,
                     const tree_t *trees, int nt)
{
    int p = trees[0].p, n = t->ngroups * nt * p;
    memset(ts, 0, sizeof(*ts));
    *ts = (tsim_t){.m = m, .t = t, .trees = trees, .nt = nt, .p = p,
                   .nslots = n};
    ts->order_up = malloc(4 * (size_t)n * sizeof(int));
    ts->lat = calloc(11 * (size_t)n + (size_t)m->p, sizeof(double));
    if (ts->order_up == NULL || ts->lat == NULL) {
        m->failed = 1;
        return -1;
    }
    ts->order_dn = ts->order_up + n;
    ts->kids = ts->order_dn + n;
    ts->w = ts->lat + 2 * (size_t)n;
    ts->ready = ts->w + 4 * (size_t)n;
    ts->got = ts->ready + n;
    ts->up_free = ts->got + n;
    ts->dn_free = ts->up_free + n;
    ts->red_free = ts->dn_free + n;
    int nu = 0, nd = 0;
    for (int lvl = 0; lvl < p; lvl++)
        for (int s = 0; s < n; s++) {
            const tree_t *tk = &trees[s / p % nt];
            if (tk->height[s % p] == lvl)
                ts->order_up[nu++] = s;
            if (tk->depth[s % p] == lvl)
                ts->order_dn[nd++] = s;
        }
    for (int s = 0; s < n; s++)
        ts->kids[2 * s] = ts->kids[2 * s + 1] = -1;
    for (int i = 0; i < n; i++) {   /* by height: shallower kids first */
        int s = ts->order_up[i], par = tslot_parent(ts, s);
        if (par >= 0)
            ts->kids[2 * par + (ts->kids[2 * par] >= 0)] = s;
    }
    return 0;
}

static void tsim_free(tsim_t *ts)
{
    free(ts->order_up);
    free(ts->lat);
}

/* The time the trees take to move the chunks of ck up (reduced) and/or
 * down. */
static double tree_run(hccn_cm_t *m, const hccn_cm_team_t *t,
                       const tree_t *trees, int nt, int up, int down,
                       const hccn_cm_chunks_t *ck)
{
    tsim_t ts;
    double end = 0.0, prev = 0.0;
    if (tsim_init(&ts, m, t, trees, nt) != 0) {
        tsim_free(&ts);
        return 0.0;
    }
    tsim_prices(&ts, up, down);
    uint64_t j, run = ck->n < TREE_CHUNKS_EXACT ? ck->n : TREE_CHUNKS_EXACT;
    for (j = 0; j < run; j++) {
        double c = (double)(j + 1 == ck->n ? ck->last : ck->c);
        if (up)
            tsim_up(&ts, j, c);
        if (down)
            tsim_down(&ts, j, c, up);
        prev = end;
        for (int s = 0; s < ts.nslots; s++)
            end = hccn_hier_cm_max(end, down ? ts.got[s] : ts.ready[s]);
    }
    if (j < ck->n)   /* the rest at the steady pace of the last chunk */
        end += (end - prev) * ((double)(ck->n - 1 - j) +
                               (double)ck->last / (double)ck->c);
    tsim_free(&ts);
    return end;
}

/* Appends to m->x, for every group and tree of trees[0..nt), the edges of
 * one stage: up, the members of height lvl to their parents; down, the
 * parents to the members of depth lvl. Returns how many. */
static int tree_stage(hccn_cm_t *m, const hccn_cm_team_t *t,
                      const tree_t *trees, int nt, int up, int lvl,
                      size_t at, uint64_t bytes)
{
    int n = 0;
    for (int g = 0; g < t->ngroups; g++)
        for (int k = 0; k < nt; k++)
            for (int u = 0; u < t->size; u++) {
                const tree_t *tr = &trees[k];
                int par = tr->parent[u];
                if (par < 0 || (up ? tr->height[u] : tr->depth[u]) != lvl)
                    continue;
                int a = hccn_hier_cm_member(t, g, u);
                int b = hccn_hier_cm_member(t, g, par);
                m->x[at + (size_t)n++] = up ? xf(a, b, bytes) : xf(b, a, bytes);
            }
    return n;
}

/* The most chunks one member reduces in up stage lvl (from its children
 * of height lvl, in every tree), one after the other. */
static int tree_reductions(const tree_t *trees, int nt, int lvl)
{
    int most = 0, p = trees[0].p;
    int *cnt = calloc((size_t)p, sizeof(int));
    for (int k = 0; cnt != NULL && k < nt; k++)
        for (int u = 0; u < p; u++)
            if (trees[k].parent[u] >= 0 && trees[k].height[u] == lvl &&
                ++cnt[trees[k].parent[u]] > most)
                most = cnt[trees[k].parent[u]];
    free(cnt);
    return cnt != NULL ? most : 2;
}

/* Double binary tree allreduce: chunks going up the trees (each parent
 * reducing its children's, one after the other) and back down, as one
 * pipeline whose stages are the levels of both trees. */
static double tree_pipeline(hccn_cm_t *m, const hccn_cm_team_t *t,
                            const tree_t *trees, int nt, int up, int down,
                            const hccn_cm_chunks_t *ck)
{
    int levels = 0, h = 0;
    for (int k = 0; k < nt; k++)
        for (int u = 0; u < t->size; u++)
            if (trees[k].depth[u] > levels)
                levels = trees[k].depth[u];
    int *size = malloc(2 * (size_t)levels * sizeof(int) + 1);
    double *r = malloc(2 * (size_t)levels * sizeof(double) + 1), time = 0.0;
    size_t at = 0;
    if (size == NULL || r == NULL) {
        m->failed = 1;
        goto out;
    }
    for (int l = 0; up && l < levels; l++, h++) {
        size[h] = tree_stage(m, t, trees, nt, 1, l, at, ck->c);
        r[h] = tree_reductions(trees, nt, l) * m->r;
        at += (size_t)size[h];
    }
    for (int l = 1; down && l <= levels; l++, h++) {
        size[h] = tree_stage(m, t, trees, nt, 0, l, at, ck->c);
        r[h] = 0.0;
        at += (size_t)size[h];
    }
    time = staged(m, h, size, ck, r);
out:
    free(size);
    free(r);
    return time;
}

/* One chunk per tree is no pipeline: it is timed member by member. With
 * more, the smaller of the two estimates, each of which errs high: the
 * chunk simulation (it prices every chunk but the first as if every edge
 * were busy) and the pipeline of levels (it moves the levels in step). */
static double tree_time(hccn_cm_t *m, const hccn_cm_team_t *t,
                        const tree_t *trees, int nt, int up, int down,
                        const hccn_cm_chunks_t *ck)
{
    double sim = tree_run(m, t, trees, nt, up, down, ck);
    if (ck->n == 1)
        return sim;
    double staged_t = tree_pipeline(m, t, trees, nt, up, down, ck);
    return staged_t < sim ? staged_t : sim;
}

static double form_tree(hccn_cm_t *m, const hccn_cm_team_t *t,
                        const hccn_coll_args_t *a)
{
    const int p = a->nranks;
    tree_t tr[2] = {{0}, {0}};
    double time = 0.0;
    if (a->coll != HCCN_COLL_ALLREDUCE && a->coll != HCCN_COLL_BROADCAST &&
        a->coll != HCCN_COLL_REDUCE)
        return HCCN_COST_NONE;
    if (tree_new(&tr[0], p) != 0 || tree_new(&tr[1], p) != 0) {
        m->failed = 1;
        goto out;
    }
    if (a->coll == HCCN_COLL_ALLREDUCE) {
        /* two trees, each with half of the message */
        tree_inorder(&tr[0], 0, p - 1, 0, 0);
        tree_inorder(&tr[1], 0, p - 1, p % 2 == 0, p % 2);
        tree_levels(&tr[0]);
        tree_levels(&tr[1]);
        hccn_cm_chunks_t ck =
            chunks(a, (a->count + 1) / 2 * a->esize, TREE_CHUNK);
        time = tree_time(m, t, tr, 2, 1, 1, &ck);
    } else {
        hccn_cm_chunks_t ck = chunks(a, whole(a), TREE_CHUNK);
        tree_heap(&tr[0], a->root);
        tree_levels(&tr[0]);
        time = tree_time(m, t, tr, 1, a->coll == HCCN_COLL_REDUCE,
                             a->coll == HCCN_COLL_BROADCAST, &ck);
        if (a->coll == HCCN_COLL_BROADCAST)
            time = hccn_hier_cm_max(time, copy_time(m, whole(a)));
    }
out:
    free(tr[0].parent);
    free(tr[1].parent);
    return time;
}

/* -------------------------------------------------------- hierarchical --- */

#define HIER_CHUNK ((uint64_t)4 << 20)   /* hier's default allreduce chunk */

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
    if ((size = calloc((size_t)v->nnodes, sizeof(int))) == NULL) {
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
    free(size);
    if (!even)
        return 0;
    if (h->L < 2)
        return -1;
    h->at = malloc(2 * (size_t)p * sizeof(int));
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
                            .chunk_bytes = a->chunk_bytes};
    if (count == 0)
        return 0.0;
    double time = fn != NULL ? fn(m, t, &sub) : HCCN_COST_NONE;
    m->failed |= time < 0.0;
    return time;
}

/* Allreduce in chunks of q elements per block: intra reduce-scatter (P1)
 * of every chunk back to back, inter allreduce (P2) of chunk k once its P1
 * and P2 of chunk k-1 are done, intra allgather (P3) of chunk k after all
 * P1s, P3 of k-1 and P2 of k; then the count % L leftover elements. A
 * rank's reductions run one at a time, so P1 of chunk k also waits for the
 * reductions of P2 of chunk k-1 ((N-1)/N of its block, the least any
 * allreduce reduces). */
static double hier_allreduce(hccn_cm_t *m, const hier_t *h,
                             const hccn_coll_args_t *a)
{
    const uint64_t L = (uint64_t)h->L;
    uint64_t ce = hccn_hier_chunk(a, HIER_CHUNK) / a->esize;
    ce = ce - ce % L < L ? L : ce - ce % L;
    uint64_t main = a->count / L * L, tail = a->count - main;
    uint64_t K = (main + ce - 1) / ce, ql = (main - (K - 1) * ce) / L;
    double p1[2], p2[2], p3[2], e1 = 0.0, e2 = 0.0, e3;
    for (int i = 0; i < 2 && K > 0; i++) {
        uint64_t q = i == 0 ? ce / L : ql;
        p1[i] = level(m, h, 0, &h->intra, a, HCCN_COLL_REDUCE_SCATTER, q, 0);
        p2[i] = level(m, h, 1, &h->inter, a, HCCN_COLL_ALLREDUCE, q, 0);
        p3[i] = level(m, h, 0, &h->intra, a, HCCN_COLL_ALLGATHER, q, 0);
    }
    double *e2k = malloc((size_t)(K > 0 ? K : 1) * sizeof(double));
    if (e2k == NULL) {
        m->failed = 1;
        return 0.0;
    }
    double red2 = (double)(h->N - 1) / h->N * (double)(ce / L * a->esize) *
                  m->r;
    for (uint64_t k = 0; k < K; k++) {
        int i = k + 1 == K;
        e1 += p1[i] + (k > 0 ? red2 : 0.0);
        e2 = hccn_hier_cm_max(e1, e2) + p2[i];
        e2k[k] = e2;
    }
    e3 = e1;
    for (uint64_t k = 0; k < K; k++)
        e3 = hccn_hier_cm_max(e3, e2k[k]) + p3[k + 1 == K];
    free(e2k);
    if (tail > 0)
        e3 = hccn_hier_cm_max(e3, e2) +
             level(m, h, 0, &h->intra, a, HCCN_COLL_ALLREDUCE, tail, 0) +
             level(m, h, 1, &h->inter, a, HCCN_COLL_ALLREDUCE, tail, 0);
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
    int *order = malloc((size_t)p * sizeof(int));
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
    double t = form_ring(m, &line, &sub);
    free(order);
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
    else if (shape > 0 && a->coll == HCCN_COLL_REDUCE_SCATTER)
        time = level(m, &h, 1, &h.inter, a, HCCN_COLL_REDUCE_SCATTER,
                     (uint64_t)h.L * a->count, 0) +
               level(m, &h, 0, &h.intra, a, HCCN_COLL_REDUCE_SCATTER,
                     a->count, 0);
    else if (shape > 0 && a->coll == HCCN_COLL_ALLGATHER)
        time = level(m, &h, 0, &h.intra, a, HCCN_COLL_ALLGATHER, a->count,
                     0) +
               level(m, &h, 1, &h.inter, a, HCCN_COLL_ALLGATHER,
                     (uint64_t)h.L * a->count, 0);
    else if (shape > 0)
        time = hier_rooted(m, &h, a);
    free(h.at);
    return time;
}

static double form_hier(hccn_cm_t *m, const hccn_cm_team_t *t,
                        const hccn_coll_args_t *a)
{
    return a->coll <= HCCN_COLL_REDUCE ? hier_form(m, t, a, "mesh", "ring")
                                       : HCCN_COST_NONE;
}

static double form_hier_rr(hccn_cm_t *m, const hccn_cm_team_t *t,
                           const hccn_coll_args_t *a)
{
    return a->coll <= HCCN_COLL_ALLGATHER ? hier_form(m, t, a, "ring", "ring")
                                          : HCCN_COST_NONE;
}

static double form_hier_mh(hccn_cm_t *m, const hccn_cm_team_t *t,
                           const hccn_coll_args_t *a)
{
    return a->coll <= HCCN_COLL_ALLGATHER ? hier_form(m, t, a, "mesh", "hd")
                                          : HCCN_COST_NONE;
}

/* --------------------------------------------------------------- table --- */

static const struct {
    const char *name;
    hccn_cm_form_fn fn;
} forms[] = {
    {"ring", form_ring},       {"mesh", form_mesh},
    {"linear", form_linear},   {"bruck", form_bruck},
    {"pairwise", form_pairwise}, {"hd", form_hd},
    {"rdouble", form_rdouble}, {"tree", form_tree},
    {"hier", form_hier},       {"hier_rr", form_hier_rr},
    {"hier_mh", form_hier_mh},
};

hccn_cm_form_fn hccn_hier_cm_form(const char *name)
{
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
        if (strcmp(forms[i].name, name) == 0)
            return forms[i].fn;
    return NULL;
}
