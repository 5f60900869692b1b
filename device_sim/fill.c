/*
 * Max-min fair rates by progressive filling (docs/timing.md): the link
 * whose remaining capacity divided by its unfixed flows is smallest gives
 * that share to each of them; they are fixed and their rates taken off
 * every link they cross; repeat.
 *
 * The rates depend on the order only where links tie for the smallest
 * share (the first one in the order is picked, and which is picked first
 * changes the rounding of what is left of the other). That order is the
 * one in which a pass over the flows in canonical order would first meet
 * the links, so the rates are a function of the set of flows. It is found
 * from each link's canonically first flow, without sorting the flows.
 *
 * Only the flows on the picked link are visited each round (through the
 * per-link lists), not all of them, and each flow is fixed once. The flows
 * fixed in one round all subtract the same share, so the order in which
 * they do it does not matter.
 *
 * The picked link is the winner of a tournament over the links in that
 * order (a binary tree whose leaves are the links' shares; a node holds
 * the better of its children: the smaller share, the earlier link on a
 * tie), so a round redoes only the leaves whose links changed and their
 * paths to the root (not those of leaves whose share came out as it was:
 * on a symmetric fabric most rounds fix a link at the share of the round
 * before and leave its neighbours at that share too), or the whole tree
 * when that is cheaper: on a fabric of thousands of links (a fat tree) a
 * round no longer scans every link, nor on a component of a few hundred
 * bound together (every NIC of a tree across nodes a bottleneck). It
 * picks the link a scan in order would (the scan, `pick_scan`, is kept
 * for the reference solver, hccn_sim_engine_set_reference). Components
 * of fewer than 64 links are scanned, but each link's share is kept from the
 * round that last changed it and the links used up leave the scan (the
 * live scan below): the same pick without a division per link and round.
 *
 * Slack links (flow_comp.c) are left out: not counted, not ordered, not
 * subtracted from. A flow that crosses only such links comes out with an
 * infinite rate, which the check there refuses.
 */
#include <math.h>
#include <stdlib.h>

#include "device_sim/engine_internal.h"

/* By the link's canonically first flow, then by its place in that flow's
 * route: (dev, seq, idx, k), as hccn_sim_flow_cmp orders flows. */
static int order_cmp(const void *pa, const void *pb)
{
    const link_order_t *a = pa, *b = pb;
    if (a->dev != b->dev)
        return a->dev < b->dev ? -1 : 1;
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    return (a->idx_k > b->idx_k) - (a->idx_k < b->idx_k);
}

/* v << s, 0 past 63 (a field of no bits at the top of a full key). */
static uint64_t put(uint64_t v, int s)
{
    return s < 64 ? v << s : 0;
}

static int bits(uint64_t v)
{
    int b = 0;
    while (v != 0) {
        b++;
        v >>= 1;
    }
    return b;
}

/* The order of link_order[0..m) by order_cmp, without comparisons where
 * its entries' keys, less the least of each field, fit in 64 bits (they
 * do but for runs of billions of batches or tasks): packed
 * (dev, seq, idx, k) keep the order, and a radix sort over 8-bit digits
 * sorts them. Writes touched and each link's pos; 0 if the keys do not
 * fit, and for the reference solver, which sorts by comparisons (so that
 * tests/unit/test_solver_ref.c checks one order against the other). */
static int radix_order(hccn_sim_engine_t *eng, int m)
{
    const link_order_t *ord = eng->link_order;
    if (eng->no_bursts)
        return 0;
    uint64_t lo[3] = {UINT64_MAX, UINT64_MAX, UINT64_MAX}, hi[3] = {0, 0, 0};
    for (int j = 0; j < m; j++) {
        uint64_t v[3] = {ord[j].dev, ord[j].seq, ord[j].idx_k >> 32};
        for (int x = 0; x < 3; x++) {
            lo[x] = v[x] < lo[x] ? v[x] : lo[x];
            hi[x] = v[x] > hi[x] ? v[x] : hi[x];
        }
    }
    int bk = bits(HCCN_SIM_ROUTE_MAX - 1), bi = bits(hi[2] - lo[2]);
    int bs = bits(hi[1] - lo[1]), bd = bits(hi[0] - lo[0]);
    if (bd + bs + bi + bk > 64)
        return 0;
    /* key, link pairs in a, sorted into b and back, digit by digit. */
    uint64_t *a = eng->link_sort, *b = a + 2 * (size_t)m;
    for (int j = 0; j < m; j++) {
        uint64_t key = put(ord[j].dev - lo[0], bs + bi + bk) |
                       put(ord[j].seq - lo[1], bi + bk) |
                       put((ord[j].idx_k >> 32) - lo[2], bk) |
                       (ord[j].idx_k & 0xffffffffu);
        a[2 * j] = key;
        a[2 * j + 1] = (uint64_t)ord[j].l;
    }
    int nbits = bd + bs + bi + bk;
    for (int shift = 0; shift < nbits; shift += 8) {
        int count[257] = {0};
        for (int j = 0; j < m; j++)
            count[((a[2 * j] >> shift) & 0xff) + 1]++;
        for (int d = 0; d < 256; d++)
            count[d + 1] += count[d];
        for (int j = 0; j < m; j++) {
            int at = count[(a[2 * j] >> shift) & 0xff]++;
            b[2 * at] = a[2 * j];
            b[2 * at + 1] = a[2 * j + 1];
        }
        uint64_t *t = a;
        a = b;
        b = t;
    }
    for (int j = 0; j < m; j++) {
        int l = (int)a[2 * j + 1];
        eng->touched[j] = l;
        eng->lk[l].pos = j;
    }
    eng->radix_sorts++;
    return 1;
}

/* Up to this many links a component's are put in order by insertion (a
 * radix pass costs its 256 counters whatever the count); not for the
 * reference solver, which sorts by comparisons (radix_order). */
#define INSERTION_MAX 16

/* link_order[0..m) in order by order_cmp, by insertion (m small). */
static void insertion_order(link_order_t *ord, int m)
{
    for (int j = 1; j < m; j++) {
        link_order_t key = ord[j];
        int i = j;
        while (i > 0 && order_cmp(&ord[i - 1], &key) > 0) {
            ord[i] = ord[i - 1];
            i--;
        }
        ord[i] = key;
    }
}

/* Counts flows[0..n) on their links, marks them unfixed, and writes their
 * links to eng->touched in the order described above. Returns how many. */
static int links_order(hccn_sim_engine_t *eng, flow_t **flows, int n)
{
    link_order_t *ord = eng->link_order;
    int m = 0;

    for (int i = 0; i < n; i++) {
        flow_t *f = flows[i];
        /* Canonical keys are never negative: dev and idx fit as they are. */
        link_order_t key = {(uint64_t)f->dev, f->seq,
                            (uint64_t)f->idx << 32, 0};
        f->was = f->rate;
        f->rate = -1.0;
        for (unsigned r = f->res; r != 0; r &= r - 1) {
            int k = __builtin_ctz(r), l = f->links[k];
            key.idx_k = (uint64_t)f->idx << 32 | (uint64_t)k;
            key.l = l;
            elink_t *e = &eng->lk[l];
            int first = e->cnt == 0;
            e->cnt += e->w;
            if (first) {
                e->cap = e->bw;
                e->pos = m;
                ord[m++] = key;
            } else {
                /* f before the link's first so far (a later place of the
                 * same flow is not). */
                link_order_t *o = &ord[e->pos];
                if (key.dev < o->dev ||
                    (key.dev == o->dev && (key.seq < o->seq ||
                     (key.seq == o->seq && key.idx_k >> 32 < o->idx_k >> 32))))
                    *o = key;
            }
        }
    }
    if (m <= INSERTION_MAX && !eng->no_bursts)
        insertion_order(ord, m);
    else if (!radix_order(eng, m))
        qsort(ord, (size_t)m, sizeof(*ord), order_cmp);
    else
        return m;               /* radix_order wrote touched */
    for (int j = 0; j < m; j++) {
        eng->touched[j] = ord[j].l;
        eng->lk[ord[j].l].pos = j;
    }
    return m;
}

/* The first link, in order, with the smallest share; -1 if none is left. */
static int pick_scan(const hccn_sim_engine_t *eng, int ntouched,
                     double *share)
{
    int best = -1;
    *share = INFINITY;
    for (int j = 0; j < ntouched; j++) {
        int l = eng->touched[j];
        if (eng->lk[l].cnt == 0)
            continue;
        double s = eng->lk[l].cap / eng->lk[l].cnt;
        if (s < *share) {
            *share = s;
            best = l;
        }
    }
    return best;
}

/* ---------------------------------------------------- the live scan --- */

/* The scan without its waste, for components below the tournament's
 * size: each place's share is kept (pick_share, redone after a round that
 * changed its link: the same quotient the scan would compute), and the
 * places still to scan are a list in order (pick_tree) from which links
 * left without unfixed flows (share infinite, for good: a link's count
 * only falls) are dropped as the scan meets them. A share is redone once
 * per round, however many fixed flows cross its link. It picks what
 * pick_scan picks: the first place, in order, of the smallest finite
 * share. */
static void live_init(hccn_sim_engine_t *eng, int n)
{
    for (int j = 0; j < n; j++) {
        int l = eng->touched[j];
        eng->pick_share[j] = eng->lk[l].cap / eng->lk[l].cnt;
        eng->pick_tree[j] = j;
    }
}

/* Redoes the shares of the places marked since the last pick. */
static void live_update(hccn_sim_engine_t *eng, int *ndirty)
{
    for (int d = 0; d < *ndirty; d++) {
        int j = eng->pick_dirty[d], l = eng->touched[j];
        eng->pick_mark[j] = 0;
        eng->pick_share[j] = eng->lk[l].cnt > 0 ?
            eng->lk[l].cap / eng->lk[l].cnt : INFINITY;
    }
    *ndirty = 0;
}

/* The pick over the *nlive places listed, which it compacts; -1 if none
 * is left. */
static int live_pick(hccn_sim_engine_t *eng, int *nlive, double *share)
{
    int *live = eng->pick_tree, k = 0, best = -1;
    const double *sh = eng->pick_share;
    double min = INFINITY;
    for (int i = 0; i < *nlive; i++) {
        int j = live[i];
        double s = sh[j];
        if (s == INFINITY)
            continue;
        live[k++] = j;
        if (s < min) {
            min = s;
            best = j;
        }
    }
    *nlive = k;
    *share = min;
    return best >= 0 ? eng->touched[best] : -1;
}

/* ---------------------------------------------------- the tournament --- */


/* Leaf j's entry: place j if its link still has unfixed flows and a finite
 * share (the only links the scan can pick), else -1. */
static int leaf(hccn_sim_engine_t *eng, int j)
{
    int l = eng->touched[j], cnt = eng->lk[l].cnt;
    double s = cnt > 0 ? eng->lk[l].cap / cnt : INFINITY;
    eng->pick_share[j] = s;
    return s < INFINITY ? j : -1;
}

/* The better of places a < b (or -1s): the smaller share, a on a tie. */
static int better(const hccn_sim_engine_t *eng, int a, int b)
{
    if (a < 0 || b < 0)
        return a < 0 ? b : a;
    return eng->pick_share[b] < eng->pick_share[a] ? b : a;
}

/* Every node of the tree for places [0, n), leaves at size + j. */
static void tree_build(hccn_sim_engine_t *eng, int n, int size)
{
    int *t = eng->pick_tree;
    for (int j = 0; j < size; j++)
        t[size + j] = j < n ? leaf(eng, j) : -1;
    for (int i = size - 1; i >= 1; i--)
        t[i] = better(eng, t[2 * i], t[2 * i + 1]);
}

static int int_cmp(const void *pa, const void *pb)
{
    int a = *(const int *)pa, b = *(const int *)pb;
    return (a > b) - (a < b);
}

/* Redoes the leaves of the places marked since the last pick, then, level
 * by level, each node above one of them once; or the whole tree when a
 * quarter of the places changed. */
static void tree_update(hccn_sim_engine_t *eng, int n, int size, int *ndirty)
{
    int *t = eng->pick_tree, *v = eng->pick_dirty, m = *ndirty;
    for (int d = 0; d < m; d++)
        eng->pick_mark[v[d]] = 0;
    *ndirty = 0;
    if (m == 0)
        return;
    if ((long)m * 4 >= n) {
        tree_build(eng, n, size);
        return;
    }
    /* A leaf whose entry and share come out as they were (a link that
     * lost flows at its own share: the ties of a symmetric fabric) leaves
     * every node above it as it was. */
    int moved = 0;
    for (int d = 0; d < m; d++) {
        int j = v[d], was = t[size + j];
        double old = eng->pick_share[j];
        t[size + j] = leaf(eng, j);
        if (t[size + j] != was || eng->pick_share[j] != old)
            v[moved++] = size + j;
    }
    m = moved;
    if (m == 0)
        return;
    if (m > 1)
        qsort(v, (size_t)m, sizeof(*v), int_cmp);
    while (v[0] > 1) {
        int k = 0;
        for (int d = 0; d < m; d++) {
            int i = v[d] / 2;
            if (k > 0 && v[k - 1] == i)
                continue;
            t[i] = better(eng, t[2 * i], t[2 * i + 1]);
            v[k++] = i;
        }
        m = k;
    }
}

/* Fixes the unfixed flows on link best at share; with a tree or the live
 * scan (tree 1 or 2), marks the places of the links they cross. */
static void fix_link(hccn_sim_engine_t *eng, int best, double share,
                     int tree, int *ndirty)
{
    flow_t **on = eng->lk[best].flows;
    int folded = eng->link_w_on;
    for (int i = 0; i < eng->lk[best].active; i++) {
        flow_t *f = on[i];
        if (f->rate >= 0.0)
            continue;
        f->rate = share;
        f->fixed_by = best;
        for (unsigned r = f->res; r != 0; r &= r - 1) {
            elink_t *k = &eng->lk[f->links[__builtin_ctz(r)]];
            if (!folded) {
                k->cap -= share;
                k->cnt--;
            } else {
                /* one subtraction per flow it stands for, as unfolded */
                for (int c = 0; c < k->w; c++)
                    k->cap -= share;
                k->cnt -= k->w;
            }
            int j = k->pos;
            if (tree && !eng->pick_mark[j]) {
                eng->pick_mark[j] = 1;
                eng->pick_dirty[(*ndirty)++] = j;
            }
        }
    }
}

void hccn_sim_fill(hccn_sim_engine_t *eng, flow_t **flows, int n)
{
    int ntouched = links_order(eng, flows, n);
    /* 0: the reference's scan; 1: the tournament; 2: the live scan. */
    int tree = eng->no_bursts ? 0 : ntouched >= eng->tree_links ? 1 : 2;
    int ndirty = 0, best, size = 1, nlive = ntouched;
    double share;

    while (size < ntouched)
        size *= 2;
    if (tree == 1)
        tree_build(eng, ntouched, size);
    else if (tree == 2)
        live_init(eng, ntouched);
    for (;;) {
        if (tree == 2) {
            live_update(eng, &ndirty);
            best = live_pick(eng, &nlive, &share);
        } else if (tree) {
            tree_update(eng, ntouched, size, &ndirty);
            best = eng->pick_tree[1];
            share = best >= 0 ? eng->pick_share[best] : INFINITY;
            best = best >= 0 ? eng->touched[best] : -1;
        } else {
            best = pick_scan(eng, ntouched, &share);
        }
        if (best < 0)
            break;
        if (share < 0.0)
            share = 0.0;
        fix_link(eng, best, share, tree, &ndirty);
    }
    /* Flows that cross only free links drain at once. */
    for (int i = 0; i < n; i++)
        if (flows[i]->rate < 0.0) {
            flows[i]->rate = INFINITY;
            flows[i]->fixed_by = -1;
        }
    for (int j = 0; j < ntouched; j++)
        eng->lk[eng->touched[j]].cnt = 0;
    eng->ntouched = ntouched;   /* their capacity left stays in lk[].cap */
}
