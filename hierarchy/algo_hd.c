/*
 * "hd": recursive halving-doubling (Rabenseifner) for any rank count, and
 * "rdouble": recursive-doubling allreduce for tiny messages.
 *
 * The exchanges run on p' = the largest power of two <= p virtual ranks.
 * With e = p - p' extra ranks, the first 2e ranks pair up (2i, 2i+1): 2i
 * folds into 2i+1 before (sends it all its data, which 2i+1 reduces or
 * stores) and gets the result from it after; 2i+1 is virtual rank i. Ranks
 * r >= 2e are virtual rank r - e.
 *
 * hd allreduce       halving reduce-scatter of p' near-equal blocks: in
 *                    step k (distance d = p'/2^(k+1)) virtual v keeps the
 *                    half of its range that holds block v, sends the other
 *                    half to v^d and reduces v^d's copy of its own half
 *                    into RECV; then doubling allgather: in step k (d =
 *                    2^k) v swaps its range with v^d, in RECV
 * hd reduce_scatter  the same halving over virtual blocks (a folded pair's
 *                    virtual block is its two real blocks) in SCRATCH, the
 *                    last step into RECV (a folded pair's result stays in
 *                    SCRATCH, one half goes to 2i, the other to RECV)
 * hd allgather       the same doubling over virtual blocks, in RECV
 * rdouble allreduce  in step k (d = 2^k) v swaps its whole partial sum with
 *                    v^d and adds the two; partial sums alternate between
 *                    two SCRATCH copies, the last step lands in RECV
 *
 * Every step of a rank waits for both steps of its previous exchange.
 * docs/algorithms.md gives bytes, times and the reduction order.
 */
#include <stdlib.h>
#include <string.h>

#include "device_sim/alloc.h"
#include "hierarchy/algo_util.h"
#include "hierarchy/cost_internal.h"

enum { PHASE_FOLD = 1, PHASE_RS = 2, PHASE_AG = 3, PHASE_UNFOLD = 4 };

typedef struct {
    hccn_sched_t *s;
    const hccn_coll_args_t *a;
    int p, pp, extra, levels;
    uint64_t b;        /* RS/AG: one real block; allreduce: the message */
    /* Per virtual rank v, at [NDEP * v ..]: the steps its next exchange
     * waits for (prev), and those of the exchange being built (next): its
     * last SEND first, then its receives (or local steps). */
    uint32_t *prev, *next;
    uint32_t *nprev, *nnext;
    uint32_t *mem;     /* prev and next (they swap every exchange) */
} hd_t;

enum { NDEP = 4 };

static int real_of(const hd_t *h, int v)
{
    return v < h->extra ? 2 * v + 1 : v + h->extra;
}

static int folded(const hd_t *h, int v)
{
    return v < h->extra;
}

/* First real block of virtual block v (v == p' gives p). */
static int first_block(const hd_t *h, int v)
{
    return v < h->extra ? 2 * v : v + h->extra;
}

/* The bytes that virtual blocks [v0, v1) cover: allreduce splits the
 * message into p' near-equal blocks, RS/AG use whole real blocks. */
static hccn_span_t vspan(const hd_t *h, int v0, int v1)
{
    uint64_t lo, hi;
    if (h->a->coll == HCCN_COLL_ALLREDUCE) {
        lo = hccn_hier_block(h->a->count, h->a->esize, h->pp, v0).off;
        hi = v1 < h->pp
                 ? hccn_hier_block(h->a->count, h->a->esize, h->pp, v1).off
                 : h->b;
    } else {
        lo = (uint64_t)first_block(h, v0) * h->b;
        hi = (uint64_t)first_block(h, v1) * h->b;
    }
    return (hccn_span_t){lo, hi - lo};
}

static int hd_init(hd_t *h, hccn_sched_t *s, const hccn_coll_args_t *a)
{
    h->s = s;
    h->a = a;
    h->p = a->nranks;
    h->pp = hccn_hier_pow2_floor(h->p);
    h->extra = h->p - h->pp;
    h->levels = hccn_hier_log2(h->pp);
    h->b = a->count * a->esize;
    h->mem = hccn_sim_calloc(2 * NDEP * (size_t)h->pp, sizeof(uint32_t));
    h->nprev = hccn_sim_calloc(2 * (size_t)h->pp, sizeof(uint32_t));
    if (h->mem == NULL || h->nprev == NULL)
        return -1;
    h->prev = h->mem;
    h->next = h->mem + NDEP * (size_t)h->pp;
    h->nnext = h->nprev + h->pp;
    return 0;
}

static void hd_free(hd_t *h)
{
    hccn_sim_free(h->mem);
    hccn_sim_free(h->nprev);
}

/* Adds step x of virtual v to the exchange being built (SEND first). */
static void note(hd_t *h, int v, uint32_t x, int is_send)
{
    uint32_t *n = &h->nnext[v];
    if (*n == 0)
        *n = 1; /* slot 0 is for the SEND */
    if (is_send)
        h->next[NDEP * v] = x;
    else if (*n < NDEP)
        h->next[NDEP * v + (*n)++] = x;
}

/* Virtual `from` sends (sbuf, soff) to virtual `to`, which stores it at
 * (dbuf, doff) or, with reduce, reduces it with (lbuf, loff) into there.
 * The receive waits for `to`'s previous exchange; the SEND for `from`'s,
 * or, when chained is set, for from's SEND just before it. */
static void vmove(hd_t *h, int from, hccn_buf_t sbuf, uint64_t soff, int to,
                  hccn_buf_t dbuf, uint64_t doff, uint64_t bytes, int reduce,
                  hccn_buf_t lbuf, uint64_t loff, int chained)
{
    uint32_t si = UINT32_MAX, ri = UINT32_MAX;
    const uint32_t *sdeps = chained ? &h->next[NDEP * from]
                                    : &h->prev[NDEP * from];
    hccn_sched_xfer(h->s, real_of(h, from), sbuf, soff, sdeps,
                    chained ? 1 : h->nprev[from], real_of(h, to), dbuf, doff,
                    &h->prev[NDEP * to], h->nprev[to], bytes, reduce, lbuf,
                    loff, &si, &ri);
    note(h, from, si, 1);
    note(h, to, ri, 0);
}

/* The exchange just built becomes what the next one waits for. */
static void next_exchange(hd_t *h)
{
    uint32_t *t = h->prev;
    h->prev = h->next;
    h->next = t;
    for (int v = 0; v < h->pp; v++) {
        h->nprev[v] = h->nnext[v];
        h->nnext[v] = 0;
    }
}

/* ------------------------------------------------------------ folds --- */

/* Before: 2i sends its SEND (bytes) to 2i+1, which reduces it with its own
 * SEND into (dbuf, 0) or, for allgather, stores it as block 2i of RECV and
 * copies its own block beside it. */
static void fold_in(hd_t *h, uint64_t bytes, hccn_buf_t dbuf, int reduce)
{
    for (int i = 0; i < h->extra; i++) {
        uint64_t doff = reduce ? 0 : (uint64_t)(2 * i) * h->b;
        hccn_sched_xfer(h->s, 2 * i, HCCN_BUF_SEND, 0, NULL, 0, 2 * i + 1,
                        dbuf, doff, NULL, 0, bytes, reduce, HCCN_BUF_SEND, 0,
                        NULL, &h->prev[NDEP * i]);
        h->nprev[i] = 1;
        if (!reduce)
            h->prev[NDEP * i + h->nprev[i]++] = hccn_sched_local(
                h->s, 2 * i + 1, 0, HCCN_BUF_SEND, 0, HCCN_BUF_RECV,
                doff + h->b, h->b, NULL, 0);
    }
    hccn_hier_stamp(h->s, PHASE_FOLD);
}

/* After: 2i+1 sends bytes at (sbuf, soff + 2i * sstride) to 2i's RECV.
 * 2i's receive waits for its fold SEND (its step 0), whose bytes it may
 * overwrite in place. */
static void fold_out(hd_t *h, hccn_buf_t sbuf, uint64_t soff,
                     uint64_t sstride, uint64_t bytes)
{
    for (int i = 0; i < h->extra; i++) {
        uint32_t mine = 0;
        hccn_sched_xfer(h->s, 2 * i + 1, sbuf,
                        soff + (uint64_t)(2 * i) * sstride, &h->prev[NDEP * i],
                        h->nprev[i], 2 * i, HCCN_BUF_RECV, 0, &mine, 1, bytes,
                        0, HCCN_BUF_SEND, 0, NULL, NULL);
    }
    hccn_hier_stamp(h->s, PHASE_UNFOLD);
}

/* ------------------------------------------- halving reduce-scatter --- */

/* Where virtual v's partial sums live before exchange k (SEND before the
 * first one, unless a fold put them in the working buffer). */
static hccn_buf_t rs_src(const hd_t *h, int v, int k, hccn_buf_t work)
{
    return k == 0 && !folded(h, v) ? HCCN_BUF_SEND : work;
}

/* Exchange k of the halving: v sends the half of its range it gives up
 * and reduces its partner's copy of the half it keeps. The last exchange
 * of a reduce_scatter writes an unfolded rank's block into RECV. */
static void rs_exchange(hd_t *h, int k, hccn_buf_t work)
{
    const int d = h->pp >> (k + 1);
    const int last = k == h->levels - 1;
    const int rs = h->a->coll == HCCN_COLL_REDUCE_SCATTER;
    for (int v = 0; v < h->pp; v++) {
        int w = v ^ d, lo = w & ~(d - 1);
        hccn_span_t give = vspan(h, lo, lo + d);
        hccn_buf_t dbuf = work;
        uint64_t doff = give.off;
        if (rs && last && !folded(h, w)) {
            dbuf = HCCN_BUF_RECV;
            doff = 0;
        }
        vmove(h, v, rs_src(h, v, k, work), give.off, w, dbuf, doff, give.len,
              1, rs_src(h, w, k, work), give.off, 0);
    }
    next_exchange(h);
}

/* ------------------------------------------------ doubling allgather --- */

/* Exchange k of the doubling: v sends its range of 2^k virtual blocks to
 * v^2^k, which stores it in RECV. An unfolded allgather rank sends its own
 * block from SEND (its COPY into RECV waits for nothing), so its range
 * goes in up to three chained parts: below it, it, above it. */
static void ag_exchange(hd_t *h, int k)
{
    const int d = 1 << k;
    const int ag = h->a->coll == HCCN_COLL_ALLGATHER;
    for (int v = 0; v < h->pp; v++) {
        int lo = v & ~(d - 1), w = v ^ d, n = 0;
        if (!ag || folded(h, v)) {
            hccn_span_t all = vspan(h, lo, lo + d);
            vmove(h, v, HCCN_BUF_RECV, all.off, w, HCCN_BUF_RECV, all.off,
                  all.len, 0, HCCN_BUF_RECV, 0, 0);
            continue;
        }
        hccn_span_t below = vspan(h, lo, v), own = vspan(h, v, v + 1);
        hccn_span_t above = vspan(h, v + 1, lo + d);
        if (below.len > 0)
            vmove(h, v, HCCN_BUF_RECV, below.off, w, HCCN_BUF_RECV,
                  below.off, below.len, 0, HCCN_BUF_RECV, 0, n++ > 0);
        vmove(h, v, HCCN_BUF_SEND, 0, w, HCCN_BUF_RECV, own.off, own.len, 0,
              HCCN_BUF_RECV, 0, n++ > 0);
        if (above.len > 0)
            vmove(h, v, HCCN_BUF_RECV, above.off, w, HCCN_BUF_RECV,
                  above.off, above.len, 0, HCCN_BUF_RECV, 0, n++ > 0);
    }
    next_exchange(h);
}

/* ---------------------------------------------------- collectives --- */

static void build_allreduce(hd_t *h)
{
    fold_in(h, h->b, HCCN_BUF_RECV, 1);
    for (int k = 0; k < h->levels; k++)
        rs_exchange(h, k, HCCN_BUF_RECV);
    hccn_hier_stamp(h->s, PHASE_RS);
    for (int k = 0; k < h->levels; k++)
        ag_exchange(h, k);
    hccn_hier_stamp(h->s, PHASE_AG);
    fold_out(h, HCCN_BUF_RECV, 0, 0, h->b);
}

/* A folded pair ends with both blocks in SCRATCH: 2i's goes to 2i, 2i+1
 * copies its own into RECV. */
static void build_reduce_scatter(hd_t *h)
{
    h->s->scratch_bytes = (size_t)((uint64_t)h->p * h->b);
    fold_in(h, (uint64_t)h->p * h->b, HCCN_BUF_SCRATCH, 1);
    for (int k = 0; k < h->levels; k++)
        rs_exchange(h, k, HCCN_BUF_SCRATCH);
    hccn_hier_stamp(h->s, PHASE_RS);
    for (int i = 0; i < h->extra; i++)
        hccn_sched_local(h->s, 2 * i + 1, 0, HCCN_BUF_SCRATCH,
                         (uint64_t)(2 * i + 1) * h->b, HCCN_BUF_RECV, 0, h->b,
                         &h->prev[NDEP * i], h->nprev[i]);
    fold_out(h, HCCN_BUF_SCRATCH, 0, h->b, h->b);
}

/* Unfolded ranks copy their own block (nothing waits for it); a folded
 * pair's 2i gets the whole RECV at the end, own block included. */
static void build_allgather(hd_t *h)
{
    fold_in(h, h->b, HCCN_BUF_RECV, 0);
    for (int r = 2 * h->extra; r < h->p; r++)
        hccn_sched_local(h->s, r, 0, HCCN_BUF_SEND, 0, HCCN_BUF_RECV,
                         (uint64_t)r * h->b, h->b, NULL, 0);
    for (int k = 0; k < h->levels; k++)
        ag_exchange(h, k);
    hccn_hier_stamp(h->s, PHASE_AG);
    fold_out(h, HCCN_BUF_RECV, 0, 0, (uint64_t)h->p * h->b);
}

/* ------------------------------------------------ recursive doubling --- */

/* Where v's partial sum lives before step k: SEND (or the fold's SCRATCH
 * copy) at first, then SCRATCH copies k % 2; after the last step, RECV. */
static void rd_buf(const hd_t *h, int v, int k, hccn_buf_t *buf,
                   uint64_t *off)
{
    if (k == h->levels) {
        *buf = HCCN_BUF_RECV;
        *off = 0;
    } else if (k == 0 && !folded(h, v)) {
        *buf = HCCN_BUF_SEND;
        *off = 0;
    } else {
        *buf = HCCN_BUF_SCRATCH;
        *off = (uint64_t)(k % 2) * h->b;
    }
}

/* With a single exchange an unfolded rank would add into RECV while its
 * SEND (the same bytes in place) is still being read: it receives into
 * SCRATCH, copies SEND to RECV, and adds once its SEND has completed. */
static void rd_single(hd_t *h)
{
    for (int v = 0; v < h->pp; v++) {
        int w = v ^ 1;
        hccn_buf_t sb, lb, db = HCCN_BUF_SCRATCH;
        uint64_t so, lo, dofs = 0;
        rd_buf(h, v, 0, &sb, &so);
        rd_buf(h, w, 0, &lb, &lo);
        if (folded(h, w))
            rd_buf(h, w, 1, &db, &dofs);
        vmove(h, v, sb, so, w, db, dofs, h->b, folded(h, w), lb, lo, 0);
    }
    for (int v = 0; v < h->pp; v++) {
        if (folded(h, v))
            continue;
        int r = real_of(h, v);
        uint32_t deps[3] = {h->next[NDEP * v], h->next[NDEP * v + 1],
                            hccn_sched_local(h->s, r, 0, HCCN_BUF_SEND, 0,
                                             HCCN_BUF_RECV, 0, h->b, NULL, 0)};
        h->next[NDEP * v + 1] = hccn_sched_local(
            h->s, r, 1, HCCN_BUF_SCRATCH, 0, HCCN_BUF_RECV, 0, h->b, deps, 3);
    }
    next_exchange(h);
}

/* Step k: v sends its partial sum to v^2^k, which adds it to its own into
 * the next copy. */
static void rd_step(hd_t *h, int k)
{
    const int d = 1 << k;
    for (int v = 0; v < h->pp; v++) {
        int w = v ^ d;
        hccn_buf_t sb, lb, db;
        uint64_t so, lo, dofs;
        rd_buf(h, v, k, &sb, &so);
        rd_buf(h, w, k, &lb, &lo);
        rd_buf(h, w, k + 1, &db, &dofs);
        vmove(h, v, sb, so, w, db, dofs, h->b, 1, lb, lo, 0);
    }
    next_exchange(h);
}

static void build_rdouble(hd_t *h)
{
    h->s->scratch_bytes = (size_t)((h->levels > 1 ? 2 : 1) * h->b);
    fold_in(h, h->b, HCCN_BUF_SCRATCH, 1);
    if (h->levels == 1)
        rd_single(h);
    for (int k = 0; h->levels > 1 && k < h->levels; k++)
        rd_step(h, k);
    hccn_hier_stamp(h->s, PHASE_RS);
    fold_out(h, HCCN_BUF_RECV, 0, 0, h->b);
}

/* ----------------------------------------------------------- entry --- */

static hccn_sched_t *build(const hccn_coll_args_t *args, unsigned mine,
                           const char *name, int rdouble)
{
    if (!hccn_hier_args_ok(args, mine))
        return NULL;
    hccn_sched_t *s = hccn_sched_new(args->nranks, name);
    if (s == NULL || args->count == 0)
        return s;
    if (args->nranks == 1) {
        hccn_sched_local(s, 0, 0, HCCN_BUF_SEND, 0, HCCN_BUF_RECV, 0,
                         args->count * args->esize, NULL, 0);
        hccn_hier_stamp(s, PHASE_RS);
        return hccn_hier_finish(s, 0);
    }
    hd_t h;
    int rc = hd_init(&h, s, args);
    if (rc == 0 && rdouble)
        build_rdouble(&h);
    else if (rc == 0 && args->coll == HCCN_COLL_ALLREDUCE)
        build_allreduce(&h);
    else if (rc == 0 && args->coll == HCCN_COLL_REDUCE_SCATTER)
        build_reduce_scatter(&h);
    else if (rc == 0)
        build_allgather(&h);
    hd_free(&h);
    return hccn_hier_finish(s, rc);
}

/* Builds the halving-doubling schedule of args (allreduce, reduce_scatter
 * or allgather); NULL otherwise, on bad arguments or no memory. */
hccn_sched_t *hccn_hier_hd_build(const hccn_coll_args_t *args)
{
    return build(args,
                 1u << HCCN_COLL_ALLREDUCE | 1u << HCCN_COLL_REDUCE_SCATTER |
                     1u << HCCN_COLL_ALLGATHER,
                 "hd", 0);
}

/* Builds the recursive-doubling allreduce of args; NULL for any other
 * collective, bad arguments or no memory. */
hccn_sched_t *hccn_hier_rdouble_build(const hccn_coll_args_t *args)
{
    return build(args, 1u << HCCN_COLL_ALLREDUCE, "rdouble", 1);
}

/* ------------------------------------------------------------ cost --- */

/* The closed forms of hd and rdouble (docs/selection.md): the folds and
 * exchanges round by round, per-rank clocks. */

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
                          : hccn_hier_cm_whole(a);
        return hi - lo;
    }
    int f0 = v0 < h->extra ? 2 * v0 : v0 + h->extra;
    int f1 = v1 < h->extra ? 2 * v1 : v1 + h->extra;
    return (uint64_t)(f1 - f0) * hccn_hier_cm_whole(a);
}

/* The folds: 2i -> 2i+1 before (out == 0) or 2i+1 -> 2i after. */
static void hd_fold(hccn_cm_t *m, const hccn_cm_team_t *t, const hd_shape_t *h,
                    hccn_cm_clocks_t *c, int out, uint64_t bytes, int reduce)
{
    size_t n = 0;
    for (int g = 0; g < t->ngroups; g++)
        for (int i = 0; i < h->extra; i++) {
            int lo = hccn_hier_cm_member(t, g, 2 * i);
            int hi = hccn_hier_cm_member(t, g, 2 * i + 1);
            m->x[n++] = out ? hccn_hier_cm_xf(hi, lo, bytes)
                            : hccn_hier_cm_xf(lo, hi, bytes);
        }
    if (n > 0)
        hccn_hier_cm_round_step(m, n, c, out, reduce);
}

/* Exchange k of the halving (halve set) or the doubling: virtual v sends
 * to v ^ d the half it gives up (halving, reduced there) or its range
 * (doubling). */
static void hd_exchange(hccn_cm_t *m, const hccn_cm_team_t *t,
                        const hd_shape_t *h, hccn_cm_clocks_t *c, int k,
                        int halve, int rdouble)
{
    const int d = halve ? h->pp >> (k + 1) : 1 << k;
    size_t n = 0;
    for (int g = 0; g < t->ngroups; g++)
        for (int v = 0; v < h->pp; v++) {
            int w = v ^ d, lo = (halve ? w : v) & ~(d - 1);
            uint64_t b =
                rdouble ? hccn_hier_cm_whole(h->a) : hd_span(h, lo, lo + d);
            m->x[n++] =
                hccn_hier_cm_xf(hccn_hier_cm_member(t, g, hd_real(h, v)),
                                hccn_hier_cm_member(t, g, hd_real(h, w)), b);
        }
    hccn_hier_cm_round_step(m, n, c, 1, halve || rdouble);
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
    return part == 0   ? hd_span(h, lo, v)
           : part == 1 ? hd_span(h, v, v + 1)
                       : hd_span(h, v + 1, hi);
}

/* Exchange k of an allgather's doubling, part by part: a sender starts
 * when both sides are ready and drains its parts one after the other, so
 * on the links its parts are one flow of their bytes on the wire (each
 * part's bytes / its protocol's eff); a part arrives when the flow has
 * drained up to it, plus the route's latency and its protocol's step. Its
 * receiver is done when the last part has arrived. */
static void hd_ag_exchange(hccn_cm_t *m, const hccn_cm_team_t *t,
                           const hd_shape_t *h, hccn_cm_clocks_t *c, int k)
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
            hccn_cm_xf_t x = hccn_hier_cm_xf(src, dst, ag_part(h, v, k, part));
            step[3 * i + part] = hccn_hier_cm_protocol(m, &x);
            on_wire += (double)x.bytes / x.eff;
            wire[3 * i + part] = on_wire;
            all += x.bytes;
        }
        m->x[i] = hccn_hier_cm_xf(src, dst, all);
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
                got[i] =
                    hccn_hier_cm_max(got[i], at[i] + drain * upto / total +
                                                 x->lat + step[3 * i + part]);
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
    uint64_t b = hccn_hier_cm_whole(a), all = b * (uint64_t)a->nranks;
    int ar = a->coll == HCCN_COLL_ALLREDUCE;
    int ag = a->coll == HCCN_COLL_ALLGATHER;
    hccn_cm_clocks_t c;
    if (!ar && !ag && a->coll != HCCN_COLL_REDUCE_SCATTER)
        return HCCN_COST_NONE;
    if (hccn_hier_cm_clocks_init(m, &c) != 0)
        return 0.0;
    hd_fold(m, t, &h, &c, 0, ar || ag ? b : all, !ag);
    for (int k = 0; k < h.levels && !ag; k++)
        hd_exchange(m, t, &h, &c, k, 1, 0);
    for (int k = 0; k < h.levels && (ar || ag); k++)
        if (ag && m->pl->topo->sw != NULL) /* parts' own protocols */
            hd_ag_exchange(m, t, &h, &c, k);
        else
            hd_exchange(m, t, &h, &c, k, 0, 0);
    hd_fold(m, t, &h, &c, 1, ar || !ag ? b : all, 0);
    return hccn_hier_cm_max(hccn_hier_cm_clocks_end(m, &c),
                            ag ? hccn_hier_cm_copy(m, b) : 0.0);
}

/* Recursive doubling: log2 p' whole-message exchanges, reduced. */
double hccn_hier_cm_rdouble(hccn_cm_t *m, const hccn_cm_team_t *t,
                            const hccn_coll_args_t *a)
{
    hd_shape_t h = hd_shape(a);
    hccn_cm_clocks_t c;
    if (a->coll != HCCN_COLL_ALLREDUCE)
        return HCCN_COST_NONE;
    if (hccn_hier_cm_clocks_init(m, &c) != 0)
        return 0.0;
    hd_fold(m, t, &h, &c, 0, hccn_hier_cm_whole(a), 1);
    for (int k = 0; k < h.levels; k++)
        hd_exchange(m, t, &h, &c, k, 0, 1);
    hd_fold(m, t, &h, &c, 1, hccn_hier_cm_whole(a), 0);
    return hccn_hier_cm_clocks_end(m, &c);
}
