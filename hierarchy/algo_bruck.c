/*
 * "bruck": Bruck's allgather and alltoall, ceil(log2 p) steps whatever p,
 * for small messages where latency dominates.
 *
 * Positions: on rank r, position i stands for block (r+i) mod p. Neither
 * schedule rotates data at the end: every transfer lands where its bytes
 * belong (RECV at their final offset, or a SCRATCH slot), so there are no
 * copies besides the own block's, which nothing waits for.
 *
 * allgather  step k (d = 2^k): rank r sends positions [0, c), c = min(d,
 *            p-d), to r-d, which stores them as its positions [d, d+c).
 *            Both sides name the same blocks, so the bytes go from RECV
 *            to RECV at the block's own offset (the sender's own block
 *            straight from SEND).
 * alltoall   position j starts on rank r as SEND block r+j (the block for
 *            rank r+j); in step k every position with bit k set moves to
 *            the rank 2^k further on, keeping its position. After the step
 *            of j's highest bit it has arrived (at r+j) and goes to RECV
 *            block (receiver - j); before that it waits in SCRATCH slot
 *            (j, parity of the bits of j below k), so an arrival never
 *            overwrites a block that still has to leave.
 *
 * One step may need several transfers to the same peer (a range that
 * wraps around, or one block per position): each SEND of a step waits for
 * the previous one, so they follow each other on the link and the step
 * costs one latency. A step's SENDs (and, for alltoall, its receives) wait
 * for every receive and the last SEND of the previous step.
 */
#include <stdlib.h>

#include "device_sim/alloc.h"
#include "hierarchy/algo_util.h"
#include "hierarchy/cost_internal.h"

/* The steps of the previous round of one rank that the next round waits
 * for: its receives and its last SEND. */
typedef struct {
    uint32_t *v;
    uint32_t n;
} prev_t;

typedef struct {
    hccn_sched_t *s;
    int p;
    uint64_t b;
    prev_t *prev, *cur; /* per rank; they swap places every round */
    prev_t *sets;       /* the memory of both */
    uint32_t *mem;
} bruck_t;

static int bruck_init(bruck_t *g, hccn_sched_t *s, const hccn_coll_args_t *a)
{
    g->s = s;
    g->p = a->nranks;
    g->b = a->count * a->esize;
    size_t p = (size_t)g->p;
    g->sets = g->prev = hccn_sim_calloc(2 * p, sizeof(prev_t));
    g->mem = hccn_sim_calloc(2 * p * (p + 1), sizeof(uint32_t));
    if (g->prev == NULL || g->mem == NULL)
        return -1;
    g->cur = g->prev + p;
    for (size_t r = 0; r < 2 * p; r++)
        g->prev[r].v = g->mem + r * (p + 1);
    return 0;
}

static void bruck_free(bruck_t *g)
{
    hccn_sim_free(g->sets);
    hccn_sim_free(g->mem);
}

static void next_round(bruck_t *g)
{
    prev_t *t = g->prev;
    g->prev = g->cur;
    g->cur = t;
    for (int r = 0; r < g->p; r++)
        g->cur[r].n = 0;
}

/* One transfer of a step from rank `from` to rank `to`. The SEND waits for
 * the previous SEND of this step (last_send, or the previous round when
 * first is set); the receive waits for the receiver's previous round when
 * recv_waits is set. Records the receive and the last SEND in cur. */
static void part(bruck_t *g, int from, hccn_buf_t sbuf, uint64_t soff,
                 int to, hccn_buf_t dbuf, uint64_t doff, uint64_t bytes,
                 int first, int recv_waits, uint32_t *last_send)
{
    uint32_t ri = UINT32_MAX;
    const prev_t *ps = &g->prev[from], *pr = &g->prev[to];
    hccn_sched_xfer(g->s, from, sbuf, soff, first ? ps->v : last_send,
                    first ? ps->n : 1, to, dbuf, doff,
                    recv_waits ? pr->v : NULL, recv_waits ? pr->n : 0, bytes,
                    0, HCCN_BUF_SEND, 0, last_send, &ri);
    prev_t *c = &g->cur[to];
    if (ri != UINT32_MAX)
        c->v[c->n++] = ri;
}

static void close_sends(bruck_t *g, const uint32_t *last_send)
{
    for (int r = 0; r < g->p; r++) {
        prev_t *c = &g->cur[r];
        c->v[c->n++] = last_send[r];
    }
}

/* The own block: a COPY into RECV that nothing waits for (allgather's is
 * all of SEND, alltoall's is SEND block r). */
static void own_blocks(bruck_t *g, int alltoall)
{
    for (int r = 0; r < g->p; r++)
        hccn_sched_local(g->s, r, 0, HCCN_BUF_SEND,
                         alltoall ? (uint64_t)r * g->b : 0, HCCN_BUF_RECV,
                         (uint64_t)r * g->b, g->b, NULL, 0);
}

/* ------------------------------------------------------- allgather --- */

/* Rank `from` sends its positions [0, c) to `to`: the own block from SEND,
 * then blocks from+1 .. from+c-1 from RECV in up to two ranges (split where
 * block numbers wrap around). */
static void ag_step_rank(bruck_t *g, int from, int to, int c,
                         uint32_t *last_send)
{
    const int p = g->p;
    part(g, from, HCCN_BUF_SEND, 0, to, HCCN_BUF_RECV, (uint64_t)from * g->b,
         g->b, 1, 0, last_send);
    int first = from + 1, left = c - 1;
    while (left > 0) {
        int blk = first % p;
        int run = p - blk < left ? p - blk : left;
        uint64_t off = (uint64_t)blk * g->b;
        part(g, from, HCCN_BUF_RECV, off, to, HCCN_BUF_RECV, off,
             (uint64_t)run * g->b, 0, 0, last_send);
        first += run;
        left -= run;
    }
}

static int build_allgather(bruck_t *g)
{
    const int p = g->p;
    uint32_t *last = hccn_sim_calloc((size_t)p, sizeof(uint32_t));
    if (last == NULL)
        return -1;
    own_blocks(g, 0);
    for (int d = 1; d < p; d *= 2) {
        int c = d < p - d ? d : p - d;
        for (int r = 0; r < p; r++)
            ag_step_rank(g, r, hccn_hier_mod(r - d, p), c, &last[r]);
        close_sends(g, last);
        next_round(g);
    }
    hccn_sim_free(last);
    return 0;
}

/* -------------------------------------------------------- alltoall --- */

static int parity_below(int j, int k)
{
    int x = j & ((1 << k) - 1), n = 0;
    for (; x; x &= x - 1)
        n++;
    return n & 1;
}

/* SCRATCH slot of position j with the given parity. */
static uint64_t slot(const bruck_t *g, int j, int parity)
{
    return ((uint64_t)parity * (uint64_t)g->p + (uint64_t)j) * g->b;
}

static void a2a_step_rank(bruck_t *g, int from, int k, uint32_t *last_send)
{
    const int p = g->p, d = 1 << k;
    int to = (from + d) % p, n = 0;
    for (int j = d; j < p; j++) {
        if (!(j & d))
            continue;
        int lowest = (j & (d - 1)) == 0, final = j < 2 * d;
        hccn_buf_t sbuf = lowest ? HCCN_BUF_SEND : HCCN_BUF_SCRATCH;
        uint64_t soff = lowest ? (uint64_t)((from + j) % p) * g->b
                               : slot(g, j, parity_below(j, k) ^ 1);
        hccn_buf_t dbuf = final ? HCCN_BUF_RECV : HCCN_BUF_SCRATCH;
        uint64_t doff = final ? (uint64_t)hccn_hier_mod(to - j, p) * g->b
                              : slot(g, j, parity_below(j, k));
        part(g, from, sbuf, soff, to, dbuf, doff, g->b, n++ == 0, 1,
             last_send);
    }
}

static int build_alltoall(bruck_t *g)
{
    const int p = g->p;
    uint32_t *last = hccn_sim_calloc((size_t)p, sizeof(uint32_t));
    if (last == NULL)
        return -1;
    if (p > 3) /* some position has two bits set */
        g->s->scratch_bytes = (size_t)(2 * (uint64_t)p * g->b);
    own_blocks(g, 1);
    for (int k = 0; (1 << k) < p; k++) {
        for (int r = 0; r < p; r++)
            a2a_step_rank(g, r, k, &last[r]);
        close_sends(g, last);
        next_round(g);
    }
    hccn_sim_free(last);
    return 0;
}

/* ----------------------------------------------------------- entry --- */

/* Builds the Bruck schedule of args (allgather or alltoall); NULL for any
 * other collective, bad arguments or no memory. */
hccn_sched_t *hccn_hier_bruck_build(const hccn_coll_args_t *args)
{
    const unsigned mine = 1u << HCCN_COLL_ALLGATHER | 1u << HCCN_COLL_ALLTOALL;
    if (!hccn_hier_args_ok(args, mine))
        return NULL;
    hccn_sched_t *s = hccn_sched_new(args->nranks, "bruck");
    if (s == NULL || args->count == 0)
        return s;
    bruck_t g;
    int rc = bruck_init(&g, s, args);
    if (rc == 0 && args->coll == HCCN_COLL_ALLGATHER)
        rc = build_allgather(&g);
    else if (rc == 0)
        rc = build_alltoall(&g);
    bruck_free(&g);
    hccn_hier_stamp(s, 1);
    return hccn_hier_finish(s, rc);
}

/* ------------------------------------------------------------ cost --- */

/* The closed form of the schedules above (docs/selection.md). */

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
    uint64_t b = hccn_hier_cm_whole(a);
    if (!ag && a->coll != HCCN_COLL_ALLTOALL)
        return HCCN_COST_NONE;
    double *start = hccn_sim_calloc(2 * (size_t)m->p, sizeof(double)),
           end = 0.0;
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
        hccn_hier_cm_shift_round(m, t, ag ? -d : d, blocks * b);
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
    return hccn_hier_cm_max(end, hccn_hier_cm_copy(m, b));
}
