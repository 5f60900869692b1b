/*
 * Allreduce over any number of levels (levels.h): per chunk a reduce-
 * scatter up every level below the top, an allreduce at the top, and
 * allgathers back down; each level runs its phases in chunk order, so the
 * levels overlap, with up to lv->slots chunks of every level in flight (a
 * SCRATCH set and a frontier of sinks per slot; below the top a second
 * set of each for the allgathers, which then run beside the
 * reduce-scatters). Two levels give "hier", three "hier3".
 */
#include <stdlib.h>

#include "device_sim/alloc.h"
#include "device_sim/fail.h"
#include "hierarchy/algo_util.h"
#include "hierarchy/levels.h"

typedef struct {
    int top;                        /* the top level, k - 1 */
    uint64_t unit;                  /* n0 ... n(top-1): a chunk's multiple */
    uint64_t blk[HCCN_LEVELS_MAX];  /* bytes of a level's block, one chunk */
    int split;                      /* the top reduces in a switch: its
                                       allreduce runs as two parts */
    hccn_frontier_t **fred;         /* fred[s]: the sinks of the top's
                                       last reduction part in set s */
    int D[HCCN_LEVELS_MAX];         /* a level's slots: chunks in flight
                                       (slots_init) */
    int dmax;                       /* the most of D */
    int inorder[HCCN_LEVELS_MAX];   /* below the top, with D > 1: its
                                       climbs one after another
                                       (climb_after) */
    uint64_t base[HCCN_LEVELS_MAX]; /* a level's SCRATCH, set 0 */
    uint64_t w[HCCN_LEVELS_MAX];    /* bytes of one of its sets */
    hccn_frontier_t **fs;           /* fs[i dmax + s]: the sinks of level
                                       i's last phase in set s; set 0 is
                                       h->f[i] */
    hccn_frontier_t **fdn;          /* fdn[i dmax + s], below the top:
                                       the sinks of level i's last
                                       allgather in set s (its descent
                                       runs beside its climb) */
} ar_t;

#define SLOTS_MAX 64

/* Place digits: the index at level j of the places below level i of g. */
static uint64_t base(const hccn_hier_comp_t *h, const ar_t *c, int i, uint64_t g)
{
    uint64_t off = 0, rest = g;
    for (int j = 0; j < i; j++) {
        off += rest % (uint64_t)h->lv->n[j] * c->blk[j];
        rest /= (uint64_t)h->lv->n[j];
    }
    return off;
}

/* The groups of level i a phase is appended on: all, or level-0 group 0
 * alone when folded. */
static uint64_t groups(const hccn_hier_comp_t *h, int i)
{
    return h->keep != NULL && i == 0 ? 1 : hccn_hier_levels_ngroups(h, i);
}

/* Level i runs coll on count elements in every group: SEND (sbuf) and
 * RECV at byte o plus the group's base, member strides ss and rs, SCRATCH
 * at sc; after `after`, sinks into last. */
static void run_to(hccn_hier_comp_t *h, const ar_t *c, int i,
                   hccn_coll_t coll, uint64_t count, hccn_buf_t sbuf,
                   uint64_t o, uint64_t ss, uint64_t rs, uint64_t sc,
                   const hccn_frontier_t *after, hccn_frontier_t *last,
                   int phase)
{
    const hccn_sched_t *sub = hccn_hier_levels_flat(h, h->lv->algo[i], coll,
                                               h->lv->n[i], count, 0);
    for (uint64_t g = 0; g < groups(h, i) && !h->s->failed; g++) {
        uint64_t at = o + base(h, c, i, g);
        hccn_hier_levels_put(h, sub, hccn_hier_levels_group(h, i, g),
                        (hccn_bufmap_t){sbuf, at, ss},
                        (hccn_bufmap_t){HCCN_BUF_RECV, at, rs}, sc,
                        after, last, phase);
    }
}

/* run_to into level i's own SCRATCH and frontier f[i]. */
static void run(hccn_hier_comp_t *h, const ar_t *c, int i, hccn_coll_t coll,
                uint64_t count, hccn_buf_t sbuf, uint64_t o, uint64_t ss,
                uint64_t rs, const hccn_frontier_t *after, int phase)
{
    run_to(h, c, i, coll, count, sbuf, o, ss, rs, h->sbase[i], after,
           h->f[i], phase);
}

/* SCRATCH bytes of a flat schedule (0 if none or it cannot be built). */
static uint64_t probe(hccn_hier_comp_t *h, int i, hccn_coll_t coll,
                      uint64_t count)
{
    const hccn_sched_t *s = count > 0 ? hccn_hier_levels_flat(
        h, h->lv->algo[i], coll, h->lv->n[i], count, 0) : NULL;
    return s != NULL ? s->scratch_bytes : 0;
}

/* The top's allreduce of chunk k at byte o (q elements in every top
 * group) where its switch reduces and q splits evenly: the reduction
 * part (a reduce-scatter in place, blocks at the members' places) after
 * the level below and the reduction part of the chunk D before (of the
 * previous one with one slot), then the multicast part (an allgather in
 * place) after it and that chunk's multicast part, in the set's SCRATCH.
 * So chunk k+1's reduction overlaps chunk k's multicast, and D chunks
 * are in the switch's pipeline at once, as the library keeps its
 * connections' slots full; the data and its order of reduction are the
 * allreduce's. 1 when done, 0 when it does not apply. */
static int top_split(hccn_hier_comp_t *h, const ar_t *c, uint64_t k,
                     uint64_t o, uint64_t q)
{
    const int t = c->top, n = h->lv->n[t];
    const size_t e = h->a->esize;
    if (!c->split || q % (uint64_t)n != 0 || q == 0)
        return 0;
    hccn_frontier_t *fred = c->fred[k % (uint64_t)c->D[t]];
    uint64_t b = q / (uint64_t)n, bb = b * e;
    uint64_t sc = h->sbase[t] + probe(h, t, HCCN_COLL_REDUCE_SCATTER, b);
    run_to(h, c, t, HCCN_COLL_REDUCE_SCATTER, b, HCCN_BUF_RECV, o, 0, bb,
           h->sbase[t], hccn_hier_levels_both(h, h->f[t - 1], fred), fred,
           t + 1);
    run_to(h, c, t, HCCN_COLL_ALLGATHER, b, HCCN_BUF_RECV, o, bb, 0, sc,
           hccn_hier_levels_both(h, fred, h->f[t]), h->f[t], t + 1);
    return 1;
}

/* Level i starts after its own last phase and, above level 0, the one
 * below it. */
static const hccn_frontier_t *up_after(hccn_hier_comp_t *h, int i)
{
    return i == 0 ? h->f[0] : hccn_hier_levels_both(h, h->f[i - 1], h->f[i]);
}

/* What level i's (below the top) reduce-scatter of chunk k starts after:
 * up_after, and with D > 1 slots the first D chunks one after another
 * (chunk k < D also after chunk k-1). Chunks all ready at once would
 * otherwise start together, share the links and end together, and so
 * would every D of them after: the library fills its slots in order.
 * Where the level's switch reduces (c->inorder) every chunk waits for
 * the one before: the switch takes the chunks through its pipeline in
 * order (nvls's stage), and with only chunk k-D to wait for, chunk k+D
 * would start beside chunk k and hold back the first D, whose tops then
 * fill their slots late (four 8-GPU NVLS nodes, a ring at the top,
 * 256 MiB: 1830 us this way, 1570 in order). Elsewhere the D chunks'
 * latencies overlap as point-to-point transfers' do. */
static const hccn_frontier_t *climb_after(hccn_hier_comp_t *h, const ar_t *c,
                                          int i, uint64_t k)
{
    const hccn_frontier_t *after = up_after(h, i);
    if (c->D[i] == 1 || k == 0 ||
        (k >= (uint64_t)c->D[i] && !c->inorder[i]))
        return after;
    int x = (int)((k - 1) % (uint64_t)c->D[i]);
    if ((after != h->tmp && hccn_frontier_copy(h->tmp, after) != 0) ||
        hccn_frontier_merge(h->tmp, c->fs[i * c->dmax + x]) != 0)
        h->s->failed = 1;
    return h->tmp;
}

/* The climb of chunk k, at byte o: reduce-scatters, then the top's
 * allreduce, whose sinks are kept in ftop for the chunk's descent. */
static void up(hccn_hier_comp_t *h, const ar_t *c, uint64_t k, uint64_t o,
               hccn_frontier_t *ftop)
{
    const size_t e = h->a->esize;
    for (int i = 0; i < c->top; i++)
        run(h, c, i, HCCN_COLL_REDUCE_SCATTER, c->blk[i] / e,
            i == 0 ? HCCN_BUF_SEND : HCCN_BUF_RECV, o, 0, c->blk[i],
            climb_after(h, c, i, k), i + 1);
    uint64_t q = c->blk[c->top - 1] / e;
    if (!top_split(h, c, k, o, q)) {
        run(h, c, c->top, HCCN_COLL_ALLREDUCE, q, HCCN_BUF_RECV, o, 0, 0,
            up_after(h, c->top), c->top + 1);
        /* a later chunk's reduction part reuses this one's SCRATCH */
        if (c->split &&
            hccn_frontier_copy(c->fred[k % (uint64_t)c->D[c->top]],
                               h->f[c->top]) != 0)
            h->s->failed = 1;
    }
    if (hccn_frontier_copy(ftop, h->f[c->top]) != 0)
        h->s->failed = 1;
}

/* Level i's descent set of chunk k: with one slot the climb's (its
 * frontier and SCRATCH), with D its own set k % D beside the climb's. */
static hccn_frontier_t *down_set(hccn_hier_comp_t *h, const ar_t *c, int i,
                                 uint64_t k, uint64_t *sc)
{
    if (c->D[i] == 1) {
        *sc = h->sbase[i];
        return h->f[i];
    }
    int x = (int)(k % (uint64_t)c->D[i]);
    *sc = c->base[i] + (uint64_t)(c->D[i] + x) * c->w[i];
    return c->fdn[i * c->dmax + x];
}

/* The descent of chunk k, at byte o, once its top (ftop) is done. */
static void down(hccn_hier_comp_t *h, const ar_t *c, uint64_t k, uint64_t o,
                 const hccn_frontier_t *ftop)
{
    const size_t e = h->a->esize;
    hccn_frontier_t *above = NULL;
    for (int i = c->top - 1; i >= 0; i--) {
        uint64_t sc;
        hccn_frontier_t *fd = down_set(h, c, i, k, &sc);
        const hccn_frontier_t *after = hccn_hier_levels_both(
            h, fd, i == c->top - 1 ? ftop : above);
        run_to(h, c, i, HCCN_COLL_ALLGATHER, c->blk[i] / e, HCCN_BUF_RECV,
               o, c->blk[i], 0, sc, after, fd, 2 * c->top + 1 - i);
        above = fd;
    }
}

/* The flat allgather of the tail's t elements across the top where the
 * tail gathers (hccn_hier_levels_tail_algo); else NULL. */
static const hccn_sched_t *tail_gather(hccn_hier_comp_t *h, const ar_t *c,
                                       uint64_t t)
{
    const int n = h->lv->n[c->top];
    const char *algo = hccn_hier_levels_tail_algo(n, t);
    return algo != NULL ? hccn_hier_levels_flat(h, algo, HCCN_COLL_ALLGATHER,
                                                n, t, 0)
                        : NULL;
}

/* The top's part of the tail (t elements at byte o of RECV) where they do
 * not split evenly over its members: an allgather into SCRATCH (the
 * mesh's, every member sending its t elements to every other at once, or
 * on a large top the ring's: hccn_hier_levels_tail_algo), then every member
 * adds the n blocks in member order into RECV (a COPY of block 0, then
 * n - 1 REDUCEs). The top's own allreduce would give its members blocks
 * an element apart (a ring's, halving-doubling's pieces), so that no
 * node's part would be node 0's and the run could not fold onto node 0
 * (hierarchy/fold.h); here every member does the same steps, and all
 * compute the same sum in the same order. 1 when done, 0 when it does not
 * apply. */
static int gather_tail(hccn_hier_comp_t *h, const ar_t *c, uint64_t o,
                       uint64_t t, int phase)
{
    const int i = c->top, n = h->lv->n[i];
    const hccn_sched_t *sub = tail_gather(h, c, t);
    if (sub == NULL)
        return 0;
    const uint64_t bb = t * h->a->esize;
    const uint64_t at = h->sbase[i] + sub->scratch_bytes;  /* the blocks */
    for (uint64_t g = 0; g < groups(h, i) && !h->s->failed; g++) {
        const int *grp = hccn_hier_levels_group(h, i, g);
        hccn_bufmap_t in = {HCCN_BUF_RECV, o, 0},
                      out = {HCCN_BUF_SCRATCH, at, 0};
        if (hccn_hier_levels_put(h, sub, grp, in, out, h->sbase[i],
                                 up_after(h, i), h->f[i], phase) != 0)
            return 1;
        for (int y = 0; y < n; y++) {
            int r = grp[y];
            hccn_stepset_t *sk = &h->f[i]->rank[r];
            if ((h->keep != NULL && !h->keep[r]) || sk->n == 0)
                continue;
            uint32_t x = UINT32_MAX;
            for (int j = 0; j < n && !h->s->failed; j++) {
                x = hccn_sched_local(h->s, r, j > 0, HCCN_BUF_SCRATCH,
                                     at + (uint64_t)j * bb, HCCN_BUF_RECV, o,
                                     bb, j > 0 ? &x : sk->idx,
                                     j > 0 ? 1 : sk->n);
                if (x != UINT32_MAX)
                    h->s->ranks[r].steps[x].phase = (uint8_t)phase;
            }
            if (h->s->failed)
                return 1;
            sk->idx[0] = x;
            sk->n = 1;
        }
    }
    return 1;
}

/* The last t elements at byte o (fewer than the chunks' multiple): an
 * allreduce at every level, in place on RECV above level 0; at the top,
 * gather_tail where it applies. */
static void tail(hccn_hier_comp_t *h, const ar_t *c, uint64_t o, uint64_t t)
{
    const int phase = 2 * c->top + 2;
    for (int i = 0; i <= c->top; i++) {
        if (i == c->top && gather_tail(h, c, o, t, phase))
            break;
        const hccn_sched_t *sub = hccn_hier_levels_flat(
            h, h->lv->algo[i], HCCN_COLL_ALLREDUCE, h->lv->n[i], t, 0);
        for (uint64_t g = 0; g < groups(h, i) && !h->s->failed; g++)
            hccn_hier_levels_put(h, sub, hccn_hier_levels_group(h, i, g),
                            (hccn_bufmap_t){i == 0 ? HCCN_BUF_SEND
                                                   : HCCN_BUF_RECV, o, 0},
                            (hccn_bufmap_t){HCCN_BUF_RECV, o, 0},
                            h->sbase[i], up_after(h, i), h->f[i], phase);
    }
}

/* Levels overlap in time, so each gets its own SCRATCH range: D sets of
 * w bytes each (the top's set 0 is left to grow, as the last range). */
static void scratch(hccn_hier_comp_t *h, ar_t *c, uint64_t t)
{
    const size_t e = h->a->esize;
    c->base[0] = 0;
    for (int i = 0; i <= c->top; i++) {
        c->w[i] = 0;
        h->sbase[i] = c->base[i];
        if (i == c->top && c->D[i] == 1)
            break;
        uint64_t n = c->blk[i < c->top ? i : i - 1] / e, most, x;
        if (i < c->top) {
            most = probe(h, i, HCCN_COLL_REDUCE_SCATTER, n);
            x = probe(h, i, HCCN_COLL_ALLGATHER, n);
            most = x > most ? x : most;
        } else {
            most = probe(h, i, HCCN_COLL_ALLREDUCE, n);
            if (c->split) {                             /* top_split's */
                uint64_t b = n / (uint64_t)h->lv->n[i];
                x = probe(h, i, HCCN_COLL_REDUCE_SCATTER, b) +
                    probe(h, i, HCCN_COLL_ALLGATHER, b);
                most = x > most ? x : most;
            }
        }
        x = probe(h, i, HCCN_COLL_ALLREDUCE, t);
        const hccn_sched_t *g = i == c->top ? tail_gather(h, c, t) : NULL;
        if (g != NULL)      /* gather_tail's: its allgather, then n blocks */
            x = g->scratch_bytes + (uint64_t)h->lv->n[i] * t * e;
        c->w[i] = x > most ? x : most;
        if (i < c->top)     /* D climb sets, and D descent sets if D > 1 */
            c->base[i + 1] = c->base[i] + (uint64_t)c->D[i] *
                                              (c->D[i] > 1 ? 2 : 1) * c->w[i];
    }
}

/* Slots: D chunks of every level in flight, D from lv->slots (at most
 * 64 and K), and their frontiers: fs for the climbs, fdn for the descents
 * below the top, fred for the reduction parts of a top whose switch
 * reduces (top_split). A level below whose groups are larger than
 * HCCN_LEVELS_BESIDE_MAX keeps one; under a top whose switch reduces
 * every level keeps at most HCCN_LEVELS_TOP_FLIGHT transfers' worth of
 * the top; another top keeps D for each peer its members send to in
 * turn (levels.h). 0, or -1 on no memory. */
static int slots_init(hccn_hier_comp_t *h, ar_t *c, uint64_t K)
{
    int d = h->lv->slots > 1 ? h->lv->slots : 1;
    d = d < SLOTS_MAX ? d : SLOTS_MAX;
    d = (uint64_t)d < K ? d : (int)(K > 0 ? K : 1);
    if (c->split)
        d = hccn_hier_levels_top_slots(d, h->lv->n[c->top],
                                       hccn_hier_levels_ngroups(h, c->top));
    int dt = c->split ? d : hccn_hier_levels_top_peers_slots(
                                d, h->lv->algo[c->top], h->lv->n[c->top]);
    dt = (uint64_t)dt < K ? dt : (int)(K > 0 ? K : 1);
    c->dmax = dt > d ? dt : d;
    for (int i = 0; i <= c->top; i++) {
        c->D[i] = i == c->top ? dt
                  : h->lv->n[i] > HCCN_LEVELS_BESIDE_MAX ? 1 : d;
        c->inorder[i] = i < c->top &&
                        hccn_hier_level_switch(h->a, h->lv->algo[i]) != 0;
    }
    const size_t m = (size_t)c->dmax;
    c->fs = hccn_sim_calloc((2 * (size_t)(c->top + 1) + 1) * m,
                            sizeof(*c->fs));
    if (c->fs == NULL)
        return -1;
    c->fdn = c->fs + (size_t)(c->top + 1) * m;
    c->fred = c->fdn + (size_t)(c->top + 1) * m;
    for (int x = 0; c->split && x < c->D[c->top]; x++)
        if ((c->fred[x] = hccn_frontier_new(h->a->nranks)) == NULL)
            return -1;
    for (int i = 0; i <= c->top; i++)
        c->fs[i * c->dmax] = h->f[i];
    for (int i = 0; i <= c->top; i++) {
        hccn_frontier_t **fs = c->fs + i * c->dmax;
        hccn_frontier_t **fdn = c->fdn + i * c->dmax;
        for (int x = 1; x < c->D[i]; x++)
            if ((fs[x] = hccn_frontier_new(h->a->nranks)) == NULL)
                return -1;
        for (int x = 0; i < c->top && c->D[i] > 1 && x < c->D[i]; x++)
            if ((fdn[x] = hccn_frontier_new(h->a->nranks)) == NULL)
                return -1;
    }
    return 0;
}

/* Every level to the set of chunk k: its frontier and its SCRATCH. */
static void slots_use(hccn_hier_comp_t *h, const ar_t *c, uint64_t k)
{
    for (int i = 0; c->fs != NULL && i <= c->top; i++) {
        int x = (int)(k % (uint64_t)c->D[i]);
        h->f[i] = c->fs[i * c->dmax + x];
        h->sbase[i] = c->base[i] + (uint64_t)x * c->w[i];
    }
}

/* Back to set 0, the sets beyond freed. */
static void slots_fini(hccn_hier_comp_t *h, ar_t *c)
{
    if (c->fs == NULL)
        return;
    slots_use(h, c, 0);
    for (int i = 0; i <= c->top; i++)
        for (int x = 1; x < c->D[i]; x++)
            hccn_frontier_free(c->fs[i * c->dmax + x]);
    for (int i = 0; i < c->top; i++)
        for (int x = 0; c->D[i] > 1 && x < c->D[i]; x++)
            hccn_frontier_free(c->fdn[i * c->dmax + x]);
    for (int x = 0; x < c->dmax; x++)
        hccn_frontier_free(c->fred[x]);
    hccn_sim_free(c->fs);
    c->fs = NULL;
}

/* Steps and dependencies of sub's member y added to rank r's room. */
static void room_add(const hccn_sched_t *sub, int y, uint64_t times,
                     uint64_t *st, uint64_t *dp)
{
    if (sub != NULL && y < sub->nranks) {
        *st += times * (sub->ranks[y].nsteps + 1);   /* + a join */
        *dp += times * (sub->ranks[y].ndeps + sub->ranks[y].nsteps);
    }
}

/* Room for K chunks and the tail on every rank, one flat schedule at a
 * time. Each phase's first steps also wait for the last phase's (or for a
 * join step, compose.h: one step more a phase): the room allows one
 * dependency more a step, an estimate (what goes beyond it is grown into,
 * as without room). */
static void reserve(hccn_hier_comp_t *h, const ar_t *c, uint64_t K, uint64_t t)
{
    const size_t e = h->a->esize;
    int n = h->a->nranks;
    uint64_t *st = hccn_sim_calloc(2 * (size_t)n, sizeof(*st)), *dp = st + n, xf = 0;
    uint32_t *room = hccn_sim_calloc(2 * (size_t)n, sizeof(*room));
    static const hccn_coll_t kind[3] = {HCCN_COLL_REDUCE_SCATTER,
                                        HCCN_COLL_ALLGATHER,
                                        HCCN_COLL_ALLREDUCE};
    int ok = st != NULL && room != NULL;
    for (int i = 0; ok && i <= c->top; i++)
        for (int w = 0; w < 4; w++) {
            int is_tail = w == 3, top = i == c->top;
            if ((top && w < 2) || (!top && w == 2) || (is_tail && t == 0))
                continue;
            uint64_t count = is_tail ? t : c->blk[top ? i - 1 : i] / e;
            const hccn_sched_t *sub = hccn_hier_levels_flat(
                h, h->lv->algo[i], is_tail ? HCCN_COLL_ALLREDUCE : kind[w],
                h->lv->n[i], count, 0);
            uint64_t times = is_tail ? 1 : K, stv = 1;
            for (int j = 0; j < i; j++)
                stv *= (uint64_t)h->lv->n[j];
            for (int x = 0; sub != NULL && x < n; x++)
                room_add(sub, (int)((uint64_t)x / stv % h->lv->n[i]), times,
                         &st[h->at[x]], &dp[h->at[x]]);
            xf += sub != NULL ? times * sub->nxfers *
                                    hccn_hier_levels_ngroups(h, i) : 0;
        }
    ok &= xf < UINT32_MAX;
    for (int r = 0; ok && r < n; r++) {
        ok = st[r] < UINT32_MAX && dp[r] < UINT32_MAX;
        room[r] = (uint32_t)st[r];
        room[n + r] = (uint32_t)dp[r];
    }
    if (ok)
        hccn_sched_reserve(h->s, room, room + n, (uint32_t)xf);
    hccn_sim_free(st);
    hccn_sim_free(room);
}

int hccn_hier_levels_allreduce(hccn_hier_comp_t *h, uint64_t chunk)
{
    const size_t e = h->a->esize;
    ar_t c = {.top = h->lv->k - 1, .unit = 1};
    for (int i = 0; i < c.top; i++)
        c.unit *= (uint64_t)h->lv->n[i];
    c.split = c.top >= 1 &&
              hccn_hier_level_switch(h->a, h->lv->algo[c.top]) != 0;
    if (c.split)
        chunk = hccn_hier_levels_top_chunk(h->lv->slots, h->lv->n[c.top],
                                           hccn_hier_levels_ngroups(h, c.top),
                                           chunk);
    else if (c.top >= 1)
        chunk = hccn_hier_levels_ring_chunk(h->lv->algo[c.top],
                                            h->lv->n[c.top], c.unit, chunk);
    chunk = hccn_hier_levels_first_chunk(h->a, h->lv->algo[0], h->lv->n[0],
                                         chunk);
    /* Chunks are a multiple of the top's groups' elements (unit x its n):
     * every member of the top then has a block of the same size, as every
     * node's part is node 0's where the run folds (fold.h); the rest is
     * the tail. */
    const uint64_t whole = c.top >= 1 ? c.unit * (uint64_t)h->lv->n[c.top]
                                      : c.unit;
    uint64_t ce = hccn_hier_chunk(h->a, chunk) / e;
    ce -= ce % whole;
    ce = ce < whole ? whole : ce;
    uint64_t main = h->a->count / whole * whole, t = h->a->count - main;
    uint64_t K = (main + ce - 1) / ce, first = main < ce ? main : ce;
    if (c.top < 1) {
        h->s->failed = 1;
        return hccn_sim_fail(HCCN_ERR_INTERNAL, "%s: allreduce over %d "
                             "level(s): it needs two or more",
                             h->lv->name, h->lv->k);
    }
    /* Block sizes of a whole chunk (the last may be shorter). */
    c.blk[0] = first / (uint64_t)h->lv->n[0] * e;
    for (int i = 1; i < c.top; i++)
        c.blk[i] = c.blk[i - 1] / (uint64_t)h->lv->n[i];
    hccn_frontier_t **ftop = hccn_sim_calloc(K + 1, sizeof(*ftop));
    if (ftop == NULL || slots_init(h, &c, K) != 0) {
        slots_fini(h, &c);
        hccn_sim_free(ftop);
        h->s->failed = 1;
        return -1;
    }
    scratch(h, &c, t);
    if (h->keep == NULL)
        reserve(h, &c, K, t);
    for (int pass = 0; pass < 2; pass++)
        for (uint64_t k = 0; k < K && !h->s->failed; k++) {
            uint64_t off = k * ce, len = main - off < ce ? main - off : ce;
            ar_t ck = c;
            slots_use(h, &c, k);
            ck.blk[0] = len / (uint64_t)h->lv->n[0] * e;
            for (int i = 1; i < c.top; i++)
                ck.blk[i] = ck.blk[i - 1] / (uint64_t)h->lv->n[i];
            if (pass == 1) {
                down(h, &ck, k, off * e, ftop[k]);
                continue;
            }
            ftop[k] = hccn_frontier_new(h->a->nranks);
            if (ftop[k] == NULL)
                h->s->failed = 1;
            else
                up(h, &ck, k, off * e, ftop[k]);
        }
    slots_use(h, &c, 0);
    if (t > 0 && !h->s->failed)
        tail(h, &c, main * e, t);
    slots_fini(h, &c);
    for (uint64_t k = 0; k < K; k++)
        hccn_frontier_free(ftop[k]);
    hccn_sim_free(ftop);
    return h->s->failed ? -1 : 0;
}
