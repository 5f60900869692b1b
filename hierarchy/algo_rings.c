/*
 * "rings": the multi-channel pipelined ring of the vendor libraries
 * (NCCL's and RCCL's ring algorithm): the data is split into C channels,
 * each channel runs one ring over all ranks, and inside a channel every
 * ring step moves its block in slices, pipelined step-wise.
 *
 * allreduce       per channel: ring reduce-scatter then ring allgather of
 *                 p blocks of the channel's part (2(p-1) steps)
 * reduce_scatter  per channel: p-1 steps; partial sums in SCRATCH, one slot
 *                 per step ((p-2) blocks)
 * allgather       per channel: p-1 steps, plus a COPY of the own block
 *
 * Channels (hccn_hier_view_t.channels, set from the topology by
 * hccn_hier_rings_channels): ranks on several nodes take one channel per
 * NIC of a node, and channel c enters each node at the NPU of NIC c and
 * leaves it by the NPU of NIC c+1 (NIC q taken to be that of the node's
 * local rank q L/C, as the block form of "nics" assigns them), so
 * channels cross the network through NICs of their own, and inside a node
 * follows the node's c-th mesh cycle (with a channel per NPU of an even
 * node, path c of a decomposition of the node's links into Hamiltonian
 * paths, rings_order.c); on one node whose NPUs are a full
 * mesh one channel per directed Hamiltonian cycle of a set that shares no
 * link (2 floor((p-1)/2), rings_order.c); elsewhere one channel.
 * "software": {"channels": C} overrides.
 *
 * Pipelining (docs/algorithms.md, rings): a step's block goes in K slices
 * of at most chunk_bytes (default HCCN_RINGS_SLICE); slice s of step k of
 * a rank leaves once slice s-1 of step k (slice K-1 of step k-1 for s = 0)
 * has left that rank in the same channel and its own input, slice s of step
 * k-1, has arrived (and been reduced): per-step latencies overlap the
 * transfers once the pipeline is full. Reduction order: block j of a
 * channel is a left fold along that channel's ring from the position that
 * starts it.
 */
#include <stdlib.h>

#include "device_sim/alloc.h"
#include "device_sim/software.h"
#include "hierarchy/algo_util.h"
#include "hierarchy/cost_internal.h"
#include "hierarchy/rings.h"

enum { PHASE_RS = 1, PHASE_AG = 2 };

/* ------------------------------------------------------------- channels --- */

/* 1 when every two of the n NPUs of world share a direct link. */
static int full_mesh(const hccn_sim_topo_t *topo, const int *world, int n)
{
    int links[HCCN_SIM_ROUTE_MAX];
    double lat;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (i != j && hccn_sim_topo_route(topo, world[i], world[j],
                                              links, &lat) != 1)
                return 0;
    return 1;
}

/* The fewest distinct NICs the communicator's ranks use on any node (at
 * most HCCN_RINGS_MAX_CHANNELS counted); 1 on no memory. */
static int nics_per_node(const hccn_sim_topo_t *topo, const int *world, int n,
                         const hccn_hier_view_t *v)
{
    const int W = HCCN_RINGS_MAX_CHANNELS + 1;
    int *seen = hccn_sim_calloc((size_t)v->nnodes * (size_t)W, sizeof(int));
    if (seen == NULL)
        return 1;
    for (int r = 0; r < n; r++) {
        int *sn = seen + (size_t)v->node[r] * W, nic = topo->npus[world[r]].nic;
        int k = 0;
        while (k < sn[0] && sn[1 + k] != nic)
            k++;
        if (k == sn[0] && sn[0] < W - 1)
            sn[1 + sn[0]++] = nic;
    }
    int best = W;
    for (int node = 0; node < v->nnodes; node++)
        best = seen[(size_t)node * W] < best ? seen[(size_t)node * W] : best;
    hccn_sim_free(seen);
    return best > 0 ? best : 1;
}

int hccn_hier_rings_channels(const hccn_sim_topo_t *topo, const int *world,
                             int n, const hccn_hier_view_t *v)
{
    int c = 1;
    if (topo->sw != NULL && topo->sw->channels > 0)
        c = topo->sw->channels;
    else if (v->nnodes > 1)
        c = nics_per_node(topo, world, n, v);
    else if (n > 2 && n <= HCCN_RINGS_MESH_MAX && full_mesh(topo, world, n))
        c = hccn_hier_rings_mesh_cycles(n);
    return c < HCCN_RINGS_MAX_CHANNELS ? c : HCCN_RINGS_MAX_CHANNELS;
}

/* ---------------------------------------------------------------- shape --- */

int hccn_hier_rings_shape(const hccn_coll_args_t *a, hccn_rings_shape_t *sh)
{
    hccn_hier_rings_size(a, &sh->C, &sh->K);
    sh->order = hccn_sim_malloc((size_t)sh->C * (size_t)a->nranks *
                                sizeof(int));
    if (sh->order == NULL)
        return -1;
    hccn_hier_rings_orders(a, sh->C, sh->order);
    return 0;
}

void hccn_hier_rings_size(const hccn_coll_args_t *a, int *channels,
                          int *slices)
{
    const int p = a->nranks;
    int c = a->view != NULL && a->view->channels > 0 ? a->view->channels : 1;
    uint64_t per_ch = (uint64_t)(p - 1) * (uint64_t)p *
                      (a->coll == HCCN_COLL_ALLREDUCE ? 2u : 1u);
    while (c > 1 && (uint64_t)c * per_ch > HCCN_RINGS_XFERS_MAX)
        c--;
    uint64_t elems = (a->count + (uint64_t)c - 1) / (uint64_t)c;
    if (a->coll == HCCN_COLL_ALLREDUCE)
        elems = (elems + (uint64_t)p - 1) / (uint64_t)p;
    uint64_t slice = a->chunk_bytes ? a->chunk_bytes : HCCN_RINGS_SLICE;
    slice = slice < a->esize ? a->esize : slice;
    uint64_t k = (elems * a->esize + slice - 1) / slice;
    uint64_t kmax = HCCN_RINGS_XFERS_MAX / ((uint64_t)c * per_ch);
    k = k > kmax ? kmax : k;
    *channels = c;
    *slices = (int)(k > 0 ? k : 1);
}

/* The piece of the channel's step data: slice s of block j (allreduce:
 * of the channel's part split in p blocks; otherwise of the channel's part
 * of a per-rank block), as an offset within a block-sized region (the
 * part's offset included) and its length. */
hccn_span_t hccn_hier_rings_piece(const hccn_coll_args_t *a,
                                  const hccn_rings_shape_t *sh, int c, int j,
                                  int s)
{
    hccn_span_t part = hccn_hier_block(a->count, a->esize, sh->C, c);
    hccn_span_t blk = part;
    if (a->coll == HCCN_COLL_ALLREDUCE) {
        hccn_span_t b = hccn_hier_block(part.len / a->esize, a->esize,
                                        a->nranks, j);
        blk = (hccn_span_t){part.off + b.off, b.len};
    }
    hccn_span_t sl = hccn_hier_block(blk.len / a->esize, a->esize, sh->K, s);
    return (hccn_span_t){blk.off + sl.off, sl.len};
}

/* ---------------------------------------------------------------- build --- */

typedef struct {
    hccn_sched_t *s;
    const hccn_coll_args_t *a;
    hccn_rings_shape_t sh;
    int p;
    uint32_t *last;      /* last[c p + i]: position i's last send */
    uint32_t *in, *out;  /* [(c p + i) K + s]: slice s received at i, last
                            step / this step */
    uint32_t *rs;        /* allreduce: [((c p + i)(p-1) + k) K + s]: the
                            reduce-scatter sends, which the allgather's
                            receives of the same bytes wait for */
} rg_t;

static int rg_init(rg_t *g, hccn_sched_t *s, const hccn_coll_args_t *a)
{
    g->s = s;
    g->a = a;
    g->p = a->nranks;
    g->last = NULL;
    g->rs = NULL;
    if (hccn_hier_rings_shape(a, &g->sh) != 0)
        return -1;
    size_t cp = (size_t)g->sh.C * (size_t)g->p;
    g->last = hccn_sim_calloc(cp * (1 + 2 * (size_t)g->sh.K),
                              sizeof(uint32_t));
    g->in = g->last + cp;
    g->out = g->in + cp * (size_t)g->sh.K;
    g->rs = NULL;
    if (g->last == NULL)
        return -1;
    if (a->coll == HCCN_COLL_ALLREDUCE)
        g->rs = hccn_sim_malloc(cp * (size_t)(g->p - 1) * (size_t)g->sh.K *
                                sizeof(uint32_t));
    return a->coll != HCCN_COLL_ALLREDUCE || g->rs != NULL ? 0 : -1;
}

static void rg_free(rg_t *g)
{
    hccn_sim_free(g->sh.order);
    hccn_sim_free(g->last);
    hccn_sim_free(g->rs);
}

/* The reduce-scatter send of slice s of step k at position at (c p + i). */
static uint32_t *rg_rs(rg_t *g, size_t at, int k, int s)
{
    return &g->rs[(at * (size_t)(g->p - 1) + (size_t)k) * (size_t)g->sh.K +
                  (size_t)s];
}

/* Position i of channel c sends slice s of step k to position i+1: bytes
 * at (sbuf, soff) into (dbuf, doff), reduced with SEND at loff when reduce
 * is set. The send waits for the position's previous send and, after step
 * 0, for the slice's own input; an allreduce's allgather receive waits for
 * the receiver's reduce-scatter send of the same bytes (step k - (p-1)). */
static void rg_move(rg_t *g, int c, int i, int k, int s, hccn_buf_t sbuf,
                    uint64_t soff, hccn_buf_t dbuf, uint64_t doff,
                    uint64_t bytes, int reduce, uint64_t loff)
{
    const int p = g->p, K = g->sh.K;
    size_t at = (size_t)c * p + i, to = (size_t)c * p + (i + 1) % p;
    uint32_t deps[2], nd = 0, rd = 0, send;
    if (k > 0 || s > 0)
        deps[nd++] = g->last[at];
    if (k > 0)
        deps[nd++] = g->in[at * K + s];
    if (g->rs != NULL && k >= p - 1)
        rd = 1;
    hccn_sched_xfer(g->s, g->sh.order[at], sbuf, soff, deps, nd,
                    g->sh.order[to], dbuf, doff,
                    rd ? rg_rs(g, to, k - (p - 1), s) : NULL, rd, bytes,
                    reduce, HCCN_BUF_SEND, loff, &send, &g->out[to * K + s]);
    g->last[at] = send;
    if (g->rs != NULL && k < p - 1)
        *rg_rs(g, at, k, s) = send;
}

static void rg_next_step(rg_t *g)
{
    uint32_t *t = g->in;
    g->in = g->out;
    g->out = t;
}

/* One step of every channel, position and slice: kind 0 allreduce's
 * reduce-scatter, 1 its allgather, 2 reduce_scatter, 3 allgather. */
static void rg_step(rg_t *g, int kind, int k)
{
    const hccn_coll_args_t *a = g->a;
    const int p = g->p;
    uint64_t b = a->count * a->esize;
    const int ks = k;                  /* the step's index in the channel */
    k = kind == 1 ? k - (p - 1) : k;   /* its index in its phase */
    for (int s = 0; s < g->sh.K; s++)
        for (int c = 0; c < g->sh.C; c++)
            for (int i = 0; i < p; i++) {
                const int *o = g->sh.order + (size_t)c * p;
                int j = kind == 0 ? hccn_hier_mod(i - k, p)
                        : kind == 1 ? hccn_hier_mod(i + 1 - k, p)
                        : kind == 2 ? o[hccn_hier_mod(i - k - 1, p)]
                                    : o[hccn_hier_mod(i - k, p)];
                hccn_span_t pc = hccn_hier_rings_piece(a, &g->sh, c, j, s);
                uint64_t blk = kind >= 2 ? (uint64_t)j * b : 0;
                if (kind == 0)
                    rg_move(g, c, i, ks, s, k ? HCCN_BUF_RECV : HCCN_BUF_SEND,
                            pc.off, HCCN_BUF_RECV, pc.off, pc.len, 1, pc.off);
                else if (kind == 1)
                    rg_move(g, c, i, ks, s, HCCN_BUF_RECV, pc.off,
                            HCCN_BUF_RECV, pc.off, pc.len, 0, 0);
                else if (kind == 2)
                    rg_move(g, c, i, ks, s,
                            k ? HCCN_BUF_SCRATCH : HCCN_BUF_SEND,
                            k ? (uint64_t)(k - 1) * b + pc.off : blk + pc.off,
                            k == p - 2 ? HCCN_BUF_RECV : HCCN_BUF_SCRATCH,
                            k == p - 2 ? pc.off : (uint64_t)k * b + pc.off,
                            pc.len, 1, blk + pc.off);
                else
                    rg_move(g, c, i, ks, s, k ? HCCN_BUF_RECV : HCCN_BUF_SEND,
                            k ? blk + pc.off : pc.off, HCCN_BUF_RECV,
                            blk + pc.off, pc.len, 0, 0);
            }
    rg_next_step(g);
}

static int build(hccn_sched_t *s, const hccn_coll_args_t *a)
{
    rg_t g;
    const int p = a->nranks;
    uint64_t b = a->count * a->esize;
    if (rg_init(&g, s, a) != 0) {
        rg_free(&g);
        return -1;
    }
    if (a->coll == HCCN_COLL_ALLREDUCE) {
        for (int k = 0; k < p - 1; k++)
            rg_step(&g, 0, k);
        hccn_hier_stamp(s, PHASE_RS);
        for (int k = p - 1; k < 2 * (p - 1); k++)
            rg_step(&g, 1, k);
        hccn_hier_stamp(s, PHASE_AG);
    } else if (a->coll == HCCN_COLL_REDUCE_SCATTER) {
        s->scratch_bytes = (size_t)((uint64_t)(p - 2) * b);
        for (int k = 0; k < p - 1; k++)
            rg_step(&g, 2, k);
        hccn_hier_stamp(s, PHASE_RS);
    } else {
        for (int r = 0; r < p; r++)
            hccn_sched_local(s, r, 0, HCCN_BUF_SEND, 0, HCCN_BUF_RECV,
                             (uint64_t)r * b, b, NULL, 0);
        for (int k = 0; k < p - 1; k++)
            rg_step(&g, 3, k);
        hccn_hier_stamp(s, PHASE_AG);
    }
    rg_free(&g);
    return 0;
}

/* Builds the rings schedule of args (see the top of this file); NULL when
 * the collective is not one of rings', on bad arguments or no memory. */
hccn_sched_t *hccn_hier_rings_build(const hccn_coll_args_t *args)
{
    const unsigned mine = 1u << HCCN_COLL_ALLREDUCE |
                          1u << HCCN_COLL_REDUCE_SCATTER |
                          1u << HCCN_COLL_ALLGATHER;
    if (!hccn_hier_args_ok(args, mine))
        return NULL;
    return hccn_hier_flat(args, "rings", build);
}
