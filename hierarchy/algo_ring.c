/*
 * "ring": rank r only ever sends to r+1 and receives from r-1 (mod p).
 *
 * allreduce       ring reduce-scatter of p equal blocks into RECV, then
 *                 ring allgather of the reduced blocks (2(p-1) rounds);
 *                 the count mod p leftover elements (the tail) travel
 *                 raw along the allgather's rounds and every rank sums
 *                 them in rank order
 * reduce_scatter  p-1 rounds; partial sums travel in two SCRATCH slots
 * allgather       p-1 rounds, plus a COPY of the rank's own block
 * broadcast       pipelined chain root -> root+1 -> ... -> root-1, chunked
 * reduce          pipelined chain root+1 -> ... -> root-1 -> root, chunked,
 *                 each hop reducing its own data into the passing chunk
 * allgatherv      as allgather, block i of vcounts[i] elements
 * reduce_scatterv as reduce_scatter, block i of vcounts[i] elements; the
 *                 SCRATCH slots hold the largest block
 *
 * In the round-based collectives every step of round k+1 depends on both
 * steps of round k of the same rank, which orders every overwrite after the
 * sends that read the old bytes. docs/algorithms.md gives bytes and times.
 */
#include <stdlib.h>
#include <string.h>

#include "device_sim/alloc.h"
#include "hierarchy/algo_util.h"
#include "hierarchy/cost_internal.h"


enum { PHASE_RS = 1, PHASE_AG = 2, PHASE_CHAIN = 1 };

/* ------------------------------------------------------------ rounds --- */

/* The steps of the last round of every rank, SLOTS places a rank: a
 * transfer's SEND in place 2m and its RECV in place 2m+1 of the receiver,
 * for move m of the round (allreduce's allgather rounds make two, a block
 * and a tail). The current round is collected in cur and then becomes
 * prev. */
enum { SLOTS = 4 };

typedef struct {
    hccn_sched_t *s;
    const hccn_coll_args_t *a;
    int p;
    int nkeep;      /* ranks 0 .. nkeep-1 get steps: p, or node 0's ranks
                       in a folded build (ring_keep) */
    uint32_t *mem, *prev, *cur;
    uint32_t nprev; /* steps of the last round per rank: 0 before the first */
    uint32_t ncur;  /* steps of the current round per rank */
} ring_t;

/* Node 0's part alone (coll.h, fold_rep): where every rank's copy in node
 * 0 is its index modulo node 0's ranks (nodes of n ranks, in ring order),
 * rank r does in every round what its copy r mod n does, so only ranks
 * 0 .. n-1 need steps. Returns n then, else p (every rank). */
static int ring_keep(const hccn_coll_args_t *a)
{
    const int p = a->nranks, n = a->fold_nrep;
    if (a->fold_rep == NULL || n <= 0 || n >= p || p % n != 0)
        return p;
    for (int r = 0; r < p; r++)
        if (a->fold_rep[r] != r % n)
            return p;
    return n;
}

static int ring_init(ring_t *g, hccn_sched_t *s, const hccn_coll_args_t *a)
{
    g->s = s;
    g->a = a;
    g->p = a->nranks;
    g->nkeep = a->coll == HCCN_COLL_ALLREDUCE ||
               a->coll == HCCN_COLL_REDUCE_SCATTER ||
               a->coll == HCCN_COLL_ALLGATHER ? ring_keep(a) : a->nranks;
    s->folded = g->nkeep < g->p;
    g->nprev = g->ncur = 0;
    g->mem = hccn_sim_calloc(2 * SLOTS * (size_t)g->p, sizeof(uint32_t));
    if (g->mem == NULL)
        return -1;
    g->prev = g->mem;
    g->cur = g->mem + SLOTS * (size_t)g->p;
    return 0;
}

/* Move m of the round: rank r sends bytes at (sbuf, soff) to r+1, which
 * receives them at (dbuf, doff), reducing with its own (lbuf, loff) when
 * reduce is set. Both sides depend on every step of their previous
 * round. */
static void ring_move_m(ring_t *g, int m, int r, hccn_buf_t sbuf,
                        uint64_t soff, hccn_buf_t dbuf, uint64_t doff,
                        uint64_t bytes, int reduce, hccn_buf_t lbuf,
                        uint64_t loff)
{
    int to = hccn_hier_mod(r + 1, g->p), copy = r % g->nkeep;
    if ((uint32_t)(2 * m + 2) > g->ncur)
        g->ncur = (uint32_t)(2 * m + 2);
    /* Folded, rank p - 1 is left out and sends to 0: its SEND's copy is
     * node 0's last rank's in this round, made already (it comes first). */
    hccn_sched_ref_t c = {copy, g->cur[SLOTS * copy + 2 * m]};
    hccn_sched_xfer_kept(g->s, g->nkeep, c, r, sbuf, soff,
                         &g->prev[SLOTS * r], g->nprev, to, dbuf, doff,
                         &g->prev[SLOTS * to], g->nprev, bytes, reduce, lbuf,
                         loff, &g->cur[SLOTS * r + 2 * m],
                         &g->cur[SLOTS * to + 2 * m + 1]);
}

static void ring_move(ring_t *g, int r, hccn_buf_t sbuf, uint64_t soff,
                      hccn_buf_t dbuf, uint64_t doff, uint64_t bytes,
                      int reduce, hccn_buf_t lbuf, uint64_t loff)
{
    ring_move_m(g, 0, r, sbuf, soff, dbuf, doff, bytes, reduce, lbuf, loff);
}

static void ring_next_round(ring_t *g)
{
    uint32_t *t = g->prev;
    g->prev = g->cur;
    g->cur = t;
    g->nprev = g->ncur;
    g->ncur = 0;
}

/* ------------------------------------------------------- collectives --- */

/* The count splits into p blocks of q elements and a tail of t = count
 * mod p. Reduce-scatter: in round k rank r passes block r-k to r+1, which
 * adds its own SEND block into RECV; rank r ends with block r+1 complete.
 * Allgather: in round k rank r passes block r+1-k on. The tail: every
 * rank COPYs its own t elements into its slot of SCRATCH (p slots of t),
 * and in allgather round k rank r also passes member r-k's on (round 0
 * straight from SEND), so each rank ends with every member's; then it
 * COPYs slot 0 into RECV and REDUCEs slots 1 .. p-1 into it in that
 * order. So every rank does the same steps (blocks an element apart would
 * give rank 1 other sizes than rank 0's, and a timing-only run could not
 * fold onto node 0: hierarchy/fold.h), and all sum the tail in the same
 * order. With q = 0 the rounds carry the tail alone. */
static void build_allreduce(ring_t *g)
{
    const hccn_coll_args_t *a = g->a;
    const int p = g->p;
    const uint64_t q = a->count / (uint64_t)p, t = a->count % (uint64_t)p;
    const uint64_t bb = q * a->esize, tb = t * a->esize;
    const uint64_t at = (uint64_t)p * bb;   /* the tail, in SEND and RECV */
    uint32_t *own = NULL;
    if (t > 0) {
        g->s->scratch_bytes = (size_t)((uint64_t)p * tb);
        own = hccn_sim_malloc((size_t)g->nkeep * sizeof(*own));
        if (own == NULL) {
            g->s->failed = 1;
            return;
        }
        for (int r = 0; r < g->nkeep; r++)
            own[r] = hccn_sched_local(g->s, r, 0, HCCN_BUF_SEND, at,
                                      HCCN_BUF_SCRATCH, (uint64_t)r * tb, tb,
                                      NULL, 0);
    }
    for (int k = 0; q > 0 && k < p - 1; k++) {
        for (int r = 0; r < p; r++) {
            uint64_t o = (uint64_t)hccn_hier_mod(r - k, p) * bb;
            ring_move(g, r, k == 0 ? HCCN_BUF_SEND : HCCN_BUF_RECV, o,
                      HCCN_BUF_RECV, o, bb, 1, HCCN_BUF_SEND, o);
        }
        ring_next_round(g);
    }
    hccn_hier_stamp(g->s, PHASE_RS);
    for (int k = 0; k < p - 1; k++) {
        for (int r = 0; r < p; r++) {
            uint64_t o = (uint64_t)hccn_hier_mod(r + 1 - k, p) * bb;
            uint64_t m = (uint64_t)hccn_hier_mod(r - k, p) * tb;
            if (q > 0)
                ring_move(g, r, HCCN_BUF_RECV, o, HCCN_BUF_RECV, o, bb, 0,
                          HCCN_BUF_RECV, 0);
            if (t > 0)
                ring_move_m(g, q > 0, r,
                            k == 0 ? HCCN_BUF_SEND : HCCN_BUF_SCRATCH,
                            k == 0 ? at : m, HCCN_BUF_SCRATCH, m, tb, 0,
                            HCCN_BUF_RECV, 0);
        }
        ring_next_round(g);
    }
    for (int r = 0; t > 0 && r < g->nkeep && !g->s->failed; r++) {
        uint32_t deps[SLOTS + 1], n = g->nprev;
        memcpy(deps, &g->prev[SLOTS * r], n * sizeof(*deps));
        deps[n++] = own[r];
        uint32_t x = hccn_sched_local(g->s, r, 0, HCCN_BUF_SCRATCH, 0,
                                      HCCN_BUF_RECV, at, tb, deps, n);
        for (int j = 1; j < p; j++)
            x = hccn_sched_local(g->s, r, 1, HCCN_BUF_SCRATCH,
                                 (uint64_t)j * tb, HCCN_BUF_RECV, at, tb, &x,
                                 1);
    }
    hccn_sim_free(own);
    hccn_hier_stamp(g->s, PHASE_AG);
}

/* In round k rank r passes the partial sum of block r-k-1 to r+1, which
 * adds its SEND block into SCRATCH slot k%2 (into RECV in the last round,
 * where the block is r+1 itself). A slot is rewritten two rounds after it
 * was filled, by which time its SEND (one round later) has completed. */
static void build_reduce_scatter(ring_t *g)
{
    const int p = g->p;
    uint64_t b = g->a->count * g->a->esize;
    g->s->scratch_bytes = (size_t)((p > 3 ? 2 : p - 2) * b);
    for (int k = 0; k < p - 1; k++) {
        for (int r = 0; r < p; r++) {
            uint64_t blk = (uint64_t)hccn_hier_mod(r - k - 1, p) * b;
            int last = k == p - 2;
            ring_move(g, r, k == 0 ? HCCN_BUF_SEND : HCCN_BUF_SCRATCH,
                      k == 0 ? blk : (uint64_t)((k - 1) % 2) * b,
                      last ? HCCN_BUF_RECV : HCCN_BUF_SCRATCH,
                      last ? 0 : (uint64_t)(k % 2) * b, b, 1, HCCN_BUF_SEND,
                      blk);
        }
        ring_next_round(g);
    }
    hccn_hier_stamp(g->s, PHASE_RS);
}

/* The own block is a COPY that nothing waits for; in round k rank r passes
 * block r-k on (round 0 straight from SEND). */
static void build_allgather(ring_t *g)
{
    const int p = g->p;
    uint64_t b = g->a->count * g->a->esize;
    for (int r = 0; r < g->nkeep; r++)
        hccn_sched_local(g->s, r, 0, HCCN_BUF_SEND, 0, HCCN_BUF_RECV,
                         (uint64_t)r * b, b, NULL, 0);
    for (int k = 0; k < p - 1; k++) {
        for (int r = 0; r < p; r++) {
            uint64_t blk = (uint64_t)hccn_hier_mod(r - k, p) * b;
            ring_move(g, r, k == 0 ? HCCN_BUF_SEND : HCCN_BUF_RECV,
                      k == 0 ? 0 : blk, HCCN_BUF_RECV, blk, b, 0,
                      HCCN_BUF_RECV, 0);
        }
        ring_next_round(g);
    }
    hccn_hier_stamp(g->s, PHASE_AG);
}

/* ----------------------------------------------------- v-collectives --- */

/* As build_allgather, with block i at vrdispls[i] of RECV. */
static void build_allgatherv(ring_t *g)
{
    const hccn_coll_args_t *a = g->a;
    const int p = g->p;
    for (int r = 0; r < p; r++)
        hccn_hier_vown(g->s, a, r);
    for (int k = 0; k < p - 1; k++) {
        for (int r = 0; r < p; r++) {
            hccn_span_t b = hccn_hier_vblock(a, a->vcounts, a->vrdispls,
                                             hccn_hier_mod(r - k, p));
            ring_move(g, r, k == 0 ? HCCN_BUF_SEND : HCCN_BUF_RECV,
                      k == 0 ? 0 : b.off, HCCN_BUF_RECV, b.off, b.len, 0,
                      HCCN_BUF_RECV, 0);
        }
        ring_next_round(g);
    }
    hccn_hier_stamp(g->s, PHASE_AG);
}

/* As build_reduce_scatter, block i at vsdispls[i] of SEND; each SCRATCH
 * slot has room for the largest block. */
static void build_reduce_scatterv(ring_t *g)
{
    const hccn_coll_args_t *a = g->a;
    const int p = g->p;
    uint64_t m = hccn_hier_vmax(a, a->vcounts);
    g->s->scratch_bytes = (size_t)((p > 3 ? 2 : p - 2) * m);
    for (int k = 0; k < p - 1; k++) {
        for (int r = 0; r < p; r++) {
            hccn_span_t b = hccn_hier_vblock(a, a->vcounts, a->vsdispls,
                                             hccn_hier_mod(r - k - 1, p));
            int last = k == p - 2;
            ring_move(g, r, k == 0 ? HCCN_BUF_SEND : HCCN_BUF_SCRATCH,
                      k == 0 ? b.off : (uint64_t)((k - 1) % 2) * m,
                      last ? HCCN_BUF_RECV : HCCN_BUF_SCRATCH,
                      last ? 0 : (uint64_t)(k % 2) * m, b.len, 1,
                      HCCN_BUF_SEND, b.off);
        }
        ring_next_round(g);
    }
    hccn_hier_stamp(g->s, PHASE_RS);
}

static int build_v(hccn_sched_t *s, const hccn_coll_args_t *a)
{
    ring_t g;
    if (ring_init(&g, s, a) != 0)
        return -1;
    if (a->coll == HCCN_COLL_ALLGATHERV)
        build_allgatherv(&g);
    else
        build_reduce_scatterv(&g);
    hccn_sim_free(g.mem);
    return 0;
}

/* ------------------------------------------------------------ chains --- */

/* A chain over positions 0..p-1 (rank first + i at position i): chunk j
 * leaves position 0 from SEND, and each later position receives it into
 * mid_buf (RECV at the last position) and, unless it is last, passes it on.
 * Each SEND waits for the previous SEND of its rank and for the chunk's
 * arrival; receives wait for nothing, so the pipeline runs at link speed.
 * With reduce set, every receive adds the position's own SEND chunk. */
static int build_chain(hccn_sched_t *s, const hccn_coll_args_t *a, int first,
                       hccn_buf_t mid_buf, int reduce)
{
    const int p = a->nranks;
    uint64_t n = a->count * a->esize;
    uint64_t c = hccn_hier_chunk(a, HCCN_RING_CHUNK);
    uint32_t *last_send = hccn_sim_calloc(2 * (size_t)p, sizeof(uint32_t));
    if (last_send == NULL)
        return -1;
    uint32_t *last_recv = last_send + p;

    for (uint64_t off = 0; off < n; off += c) {
        uint64_t len = n - off < c ? n - off : c;
        for (int i = 0; i + 1 < p; i++) {
            uint32_t deps[2], nd = 0;
            if (i > 0)
                deps[nd++] = last_recv[i];
            if (off > 0)
                deps[nd++] = last_send[i];
            hccn_sched_xfer(s, hccn_hier_mod(first + i, p),
                            i == 0 ? HCCN_BUF_SEND : mid_buf, off, deps, nd,
                            hccn_hier_mod(first + i + 1, p),
                            i + 2 == p ? HCCN_BUF_RECV : mid_buf, off, NULL, 0,
                            len, reduce, HCCN_BUF_SEND, off, &last_send[i],
                            &last_recv[i + 1]);
        }
    }
    hccn_sim_free(last_send);
    hccn_hier_stamp(s, PHASE_CHAIN);
    return 0;
}

/* Root copies SEND to RECV (nothing waits for it) and starts the chain;
 * every other rank receives into RECV and forwards from there. */
static int build_broadcast(hccn_sched_t *s, const hccn_coll_args_t *a)
{
    hccn_sched_local(s, a->root, 0, HCCN_BUF_SEND, 0, HCCN_BUF_RECV, 0,
                     a->count * a->esize, NULL, 0);
    return build_chain(s, a, a->root, HCCN_BUF_RECV, 0);
}

/* The chain starts at root+1 and ends at root; ranks in between hold the
 * running partial sums in SCRATCH (the whole message, so a chunk never
 * waits for a slot and the pipeline keeps its closed form). */
static int build_reduce(hccn_sched_t *s, const hccn_coll_args_t *a)
{
    if (a->nranks > 2)
        s->scratch_bytes = (size_t)(a->count * a->esize);
    return build_chain(s, a, a->root + 1, HCCN_BUF_SCRATCH, 1);
}

/* ------------------------------------------------------------- entry --- */

static void build_rounds(ring_t *g)
{
    switch (g->a->coll) {
    case HCCN_COLL_ALLREDUCE:
        build_allreduce(g);
        break;
    case HCCN_COLL_REDUCE_SCATTER:
        build_reduce_scatter(g);
        break;
    default:
        build_allgather(g);
        break;
    }
}

/* With one rank every collective is a COPY of SEND into RECV. */
static void build_single(hccn_sched_t *s, const hccn_coll_args_t *a)
{
    hccn_sched_local(s, 0, 0, HCCN_BUF_SEND, 0, HCCN_BUF_RECV, 0,
                     a->count * a->esize, NULL, 0);
    hccn_hier_stamp(s, 1);
}

/* Builds the ring schedule of args (see the top of this file); NULL when
 * the collective is not one of ring's, on bad arguments or no memory. */
hccn_sched_t *hccn_hier_ring_build(const hccn_coll_args_t *args)
{
    const unsigned mine = 1u << HCCN_COLL_ALLREDUCE |
                          1u << HCCN_COLL_REDUCE_SCATTER |
                          1u << HCCN_COLL_ALLGATHER |
                          1u << HCCN_COLL_BROADCAST | 1u << HCCN_COLL_REDUCE |
                          1u << HCCN_COLL_ALLGATHERV |
                          1u << HCCN_COLL_REDUCE_SCATTERV;
    if (!hccn_hier_args_ok(args, mine))
        return NULL;
    if (hccn_coll_is_v(args->coll))
        return hccn_hier_vflat(args, "ring", build_v);
    hccn_sched_t *s = hccn_sched_new(args->nranks, "ring");
    if (s == NULL || args->count == 0)
        return s;

    int rc = 0;
    if (args->nranks == 1) {
        build_single(s, args);
    } else if (args->coll == HCCN_COLL_BROADCAST) {
        rc = build_broadcast(s, args);
    } else if (args->coll == HCCN_COLL_REDUCE) {
        rc = build_reduce(s, args);
    } else {
        ring_t g;
        rc = ring_init(&g, s, args);
        if (rc == 0)
            build_rounds(&g);
        hccn_sim_free(g.mem);
    }
    return hccn_hier_finish(s, rc);
}

/* ------------------------------------------------------------ cost --- */

/* The closed form of the schedules above (the cost model's price of a row,
 * docs/selection.md): rounds of neighbour transfers; rooted collectives as a
 * pipelined chain of chunks. */

static double ring_rounds(hccn_cm_t *m, const hccn_cm_team_t *t, int rounds,
                          uint64_t bytes, int reduce)
{
    double round = hccn_hier_cm_shift_round(m, t, 1, bytes);
    return rounds * (round + (reduce ? (double)bytes * m->r : 0.0));
}

/* Allreduce's allgather rounds where a tail of tb bytes travels beside
 * each block of bb: the 2 n transfers of a round priced together. */
static double ring_tail_rounds(hccn_cm_t *m, const hccn_cm_team_t *t,
                               int rounds, uint64_t bb, uint64_t tb)
{
    size_t n = 0;
    for (int g = 0; g < t->ngroups; g++)
        for (int i = 0; i < t->size; i++) {
            int src = hccn_hier_cm_member(t, g, i);
            int dst = hccn_hier_cm_member(t, g, i + 1);
            if (bb > 0)
                m->x[n++] = hccn_hier_cm_xf(src, dst, bb);
            m->x[n++] = hccn_hier_cm_xf(src, dst, tb);
        }
    hccn_hier_cm_flows(m, m->x, n, 1.0);
    return rounds * hccn_hier_cm_slowest(m->x, n, NULL);
}

/* The pipelined chain member first -> first+1 -> ... of every group. */
static double ring_chain_cost(hccn_cm_t *m, const hccn_cm_team_t *t,
                              const hccn_coll_args_t *a, int first, int reduce)
{
    hccn_cm_chunks_t ck =
        hccn_hier_cm_chunks(a, hccn_hier_cm_whole(a), HCCN_RING_CHUNK);
    int h = t->size - 1, w = t->ngroups;
    int *size = hccn_sim_malloc((size_t)h * sizeof(int));
    double *r = hccn_sim_malloc((size_t)h * sizeof(double)), time = 0.0;
    if (size != NULL && r != NULL) {
        for (int i = 0; i < h; i++) {
            size[i] = w;
            r[i] = reduce ? m->r : 0.0;
            for (int g = 0; g < w; g++)
                m->x[i * w + g] = hccn_hier_cm_xf(
                    hccn_hier_cm_member(t, g, first + i),
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
    uint64_t b = hccn_hier_cm_whole(a);
    switch (a->coll) {
    case HCCN_COLL_ALLREDUCE: {
        uint64_t bb = a->count / (uint64_t)p * a->esize;
        uint64_t tb = a->count % (uint64_t)p * a->esize;
        double rs = bb > 0 ? ring_rounds(m, t, p - 1, bb, 1) : 0.0;
        if (tb == 0)
            return rs + ring_rounds(m, t, p - 1, bb, 0);
        return rs + ring_tail_rounds(m, t, p - 1, bb, tb) +
               hccn_hier_cm_tail_sum(m, tb, p);
    }
    case HCCN_COLL_REDUCE_SCATTER:
        return ring_rounds(m, t, p - 1, b, 1);
    case HCCN_COLL_ALLGATHER:
        return hccn_hier_cm_max(ring_rounds(m, t, p - 1, b, 0),
                                hccn_hier_cm_copy(m, b));
    case HCCN_COLL_BROADCAST:
        return hccn_hier_cm_max(ring_chain_cost(m, t, a, a->root, 0),
                                hccn_hier_cm_copy(m, b));
    case HCCN_COLL_REDUCE:
        return ring_chain_cost(m, t, a, a->root + 1, 1);
    default:
        return HCCN_COST_NONE;
    }
}
