/*
 * "linear": the simplest schedules. A root talks to its peers one after
 * another, in the order root+1, root+2, ..., root-1: each transfer at the
 * root depends on the previous one there (a SEND on the previous SEND, a
 * receive on the previous receive).
 *
 * broadcast  root sends the whole message to each peer in turn
 * reduce     root receives each peer's message in turn, RECV_REDUCE into
 *            RECV (the first one adds root's own SEND)
 * scatter    root sends block i to rank i in turn
 * gather     root receives block i from rank i in turn
 * alltoall   pairwise: in round k = 1..p-1 rank r sends block r+k to r+k
 *            and receives block r-k from r-k; round k waits for round k-1
 *            (alltoallv: the same rounds with each pair's own block, in
 *            rank me's view, coll.h)
 * barrier    rank 0 gathers a 0-byte message from each rank in turn, then
 *            releases each in turn
 *
 * Own blocks are COPY steps nothing waits for. docs/algorithms.md gives
 * bytes and times.
 */
#include <stdlib.h>

#include "device_sim/alloc.h"
#include "hierarchy/algo_util.h"
#include "hierarchy/cost_internal.h"

enum { PHASE_GATHER = 1, PHASE_RELEASE = 2 };

/* ----------------------------------------------------- root to peers --- */

/* Broadcast (blocks == 0: the whole SEND to every rank) or scatter (block
 * i of SEND to rank i): SENDs chained at the root, receives independent. */
static void build_from_root(hccn_sched_t *s, const hccn_coll_args_t *a,
                            int blocks)
{
    const int p = s->nranks, root = a->root;
    uint64_t b = a->count * a->esize;
    hccn_sched_local(s, root, 0, HCCN_BUF_SEND,
                     blocks ? (uint64_t)root * b : 0, HCCN_BUF_RECV, 0, b,
                     NULL, 0);
    uint32_t prev = 0;
    for (int k = 1; k < p; k++) {
        int i = hccn_hier_mod(root + k, p);
        hccn_sched_xfer(s, root, HCCN_BUF_SEND, blocks ? (uint64_t)i * b : 0,
                        &prev, k > 1, i, HCCN_BUF_RECV, 0, NULL, 0, b, 0,
                        HCCN_BUF_SEND, 0, &prev, NULL);
    }
}

/* Reduce (blocks == 0) or gather (block i of RECV from rank i): receives
 * chained at the root, SENDs independent. */
static void build_to_root(hccn_sched_t *s, const hccn_coll_args_t *a,
                          int blocks)
{
    const int p = s->nranks, root = a->root;
    uint64_t b = a->count * a->esize;
    if (blocks)
        hccn_sched_local(s, root, 0, HCCN_BUF_SEND, 0, HCCN_BUF_RECV,
                         (uint64_t)root * b, b, NULL, 0);
    uint32_t prev = 0;
    for (int k = 1; k < p; k++) {
        int i = hccn_hier_mod(root + k, p);
        hccn_sched_xfer(s, i, HCCN_BUF_SEND, 0, NULL, 0, root, HCCN_BUF_RECV,
                        blocks ? (uint64_t)i * b : 0, &prev, k > 1, b, !blocks,
                        k == 1 ? HCCN_BUF_SEND : HCCN_BUF_RECV, 0, NULL,
                        &prev);
    }
}

/* ---------------------------------------------------------- pairwise --- */

/* Round k's SEND and receive on each rank depend on both of round k-1's.
 * No in-place form: the receive of block r-k overwrites SEND block r-k,
 * which rank r sends only in round p-k. */
static int build_alltoall(hccn_sched_t *s, const hccn_coll_args_t *a)
{
    const int p = s->nranks;
    uint64_t b = a->count * a->esize;
    uint32_t *mem = hccn_sim_calloc(4 * (size_t)p, sizeof(uint32_t));
    if (mem == NULL)
        return -1;
    uint32_t *prev = mem, *cur = mem + 2 * (size_t)p;

    int v = a->coll == HCCN_COLL_ALLTOALLV;
    for (int r = 0; r < p; r++)
        if (v)
            hccn_hier_vown(s, a, r);
        else
            hccn_sched_local(s, r, 0, HCCN_BUF_SEND, (uint64_t)r * b,
                             HCCN_BUF_RECV, (uint64_t)r * b, b, NULL, 0);
    for (int k = 1; k < p; k++) {
        uint32_t nd = k > 1 ? 2 : 0;
        for (int r = 0; r < p; r++) {
            int to = hccn_hier_mod(r + k, p);
            uint64_t so = (uint64_t)to * b, ro = (uint64_t)r * b, n = b;
            if (v) {
                so = hccn_hier_vblock(a, a->vcounts, a->vsdispls, to).off;
                ro = hccn_hier_vblock(a, a->vrcounts, a->vrdispls, r).off;
                n = hccn_hier_a2av_bytes(a, r, to);
            }
            hccn_sched_xfer(s, r, HCCN_BUF_SEND, so, &prev[2 * r], nd, to,
                            HCCN_BUF_RECV, ro, &prev[2 * to], nd, n, 0,
                            HCCN_BUF_SEND, 0, &cur[2 * r], &cur[2 * to + 1]);
        }
        uint32_t *t = prev;
        prev = cur;
        cur = t;
    }
    hccn_sim_free(mem);
    return 0;
}

/* ----------------------------------------------------------- barrier --- */

/* Rank 0 receives from 1, 2, ..., p-1 in turn, then sends to 1, ..., p-1
 * in turn; every other rank sends, then waits for its release. */
static void build_barrier(hccn_sched_t *s)
{
    const int p = s->nranks;
    uint32_t prev = 0;
    for (int i = 1; i < p; i++)
        hccn_sched_xfer(s, i, HCCN_BUF_SEND, 0, NULL, 0, 0, HCCN_BUF_RECV, 0,
                        &prev, i > 1, 0, 0, HCCN_BUF_SEND, 0, NULL, &prev);
    hccn_hier_stamp(s, PHASE_GATHER);
    for (int i = 1; i < p; i++) {
        uint32_t mine = 0; /* i's SEND is its only step so far */
        hccn_sched_xfer(s, 0, HCCN_BUF_SEND, 0, &prev, 1, i, HCCN_BUF_RECV, 0,
                        &mine, 1, 0, 0, HCCN_BUF_SEND, 0, &prev, NULL);
    }
    hccn_hier_stamp(s, PHASE_RELEASE);
}

/* ------------------------------------------------------------- entry --- */

static int build(hccn_sched_t *s, const hccn_coll_args_t *a)
{
    int rc = 0;
    switch (a->coll) {
    case HCCN_COLL_BROADCAST:
    case HCCN_COLL_SCATTER:
        build_from_root(s, a, a->coll == HCCN_COLL_SCATTER);
        break;
    case HCCN_COLL_REDUCE:
    case HCCN_COLL_GATHER:
        build_to_root(s, a, a->coll == HCCN_COLL_GATHER);
        break;
    case HCCN_COLL_ALLTOALL:
    case HCCN_COLL_ALLTOALLV:
        rc = build_alltoall(s, a);
        break;
    default:
        build_barrier(s);
        break;
    }
    hccn_hier_stamp(s, PHASE_GATHER);
    return rc;
}

/* Builds the linear schedule of args (see the top of this file); NULL for
 * collectives linear does not do, bad arguments or no memory. */
hccn_sched_t *hccn_hier_linear_build(const hccn_coll_args_t *args)
{
    const unsigned mine = 1u << HCCN_COLL_BROADCAST | 1u << HCCN_COLL_REDUCE |
                          1u << HCCN_COLL_ALLTOALL | 1u << HCCN_COLL_SCATTER |
                          1u << HCCN_COLL_GATHER | 1u << HCCN_COLL_BARRIER |
                          1u << HCCN_COLL_ALLTOALLV;
    if (!hccn_hier_args_ok(args, mine))
        return NULL;
    if (args->coll == HCCN_COLL_ALLTOALLV)
        return hccn_hier_vflat(args, "linear", build);
    return hccn_hier_flat(args, "linear", build);
}

/* ------------------------------------------------------------ cost --- */

/* The closed form of the schedules above (docs/selection.md). */

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
            m->x[g] = into ? hccn_hier_cm_xf(peer, r, bytes)
                           : hccn_hier_cm_xf(r, peer, bytes);
        }
        hccn_hier_cm_flows(m, m->x, (size_t)w, 1.0);
        if (into) {
            end += hccn_hier_cm_slowest(m->x, (size_t)w, NULL) +
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
    hccn_cm_clocks_t c;
    if (t->size - 1 <= ROUNDS_EXACT) {
        if (hccn_hier_cm_clocks_init(m, &c) != 0)
            return 0.0;
        for (int k = 1; k < t->size; k++) {
            for (size_t i = 0; i < n; i++)
                m->x[i] =
                    hccn_hier_cm_xf(t->rank[i],
                                    hccn_hier_cm_member(t, (int)(i / t->size),
                                                        (int)(i % t->size) + k),
                                    bytes);
            hccn_hier_cm_round_step(m, n, &c, 1, 0);
        }
        return hccn_hier_cm_clocks_end(m, &c);
    }
    for (int s = 0; s < ns; s++)
        sum += hccn_hier_cm_shift_round(m, t, ks[s], bytes);
    return sum * (t->size - 1) / ns;
}

/* Member 0 hears from 1, 2, ... in turn (0-byte messages: a latency
 * each), then releases them all at once. */
static double linear_barrier(hccn_cm_t *m, const hccn_cm_team_t *t)
{
    double in = 0.0;
    hccn_hier_cm_star(m, t, 0, 1, 0,
                      0); /* prices member k -> 0 at x[(k-1)*ngroups+g] */
    for (int k = 1; k < t->size; k++) {
        double step = 0.0;
        for (int g = 0; g < t->ngroups; g++)
            step = hccn_hier_cm_max(step,
                                    m->x[(size_t)(k - 1) * t->ngroups + g].lat);
        in += step;
    }
    return in + hccn_hier_cm_star(m, t, 0, 0, 0, 0);
}

double hccn_hier_cm_linear(hccn_cm_t *m, const hccn_cm_team_t *t,
                           const hccn_coll_args_t *a)
{
    uint64_t b = hccn_hier_cm_whole(a);
    switch (a->coll) {
    case HCCN_COLL_BROADCAST:
    case HCCN_COLL_SCATTER:
        return hccn_hier_cm_max(one_by_one(m, t, a->root, 0, b, 0),
                                hccn_hier_cm_copy(m, b));
    case HCCN_COLL_GATHER:
        return hccn_hier_cm_max(one_by_one(m, t, a->root, 1, b, 0),
                                hccn_hier_cm_copy(m, b));
    case HCCN_COLL_REDUCE:
        return one_by_one(m, t, a->root, 1, b, 1);
    case HCCN_COLL_ALLTOALL:
        return hccn_hier_cm_max(shift_rounds(m, t, b), hccn_hier_cm_copy(m, b));
    case HCCN_COLL_BARRIER:
        return linear_barrier(m, t);
    default:
        return HCCN_COST_NONE;
    }
}
