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
 * paths to the root, or the whole tree when that is cheaper: on a fabric
 * of thousands of links (a fat tree) a round no longer scans every link.
 * It picks the link a scan in order would (the scan, `pick_scan`, is
 * kept for the reference solver, hccn_sim_engine_set_reference).
 */
#include <math.h>
#include <stdlib.h>

#include "device_sim/engine_internal.h"

/* By the link's canonically first flow, then by its place in that flow's
 * route. */
static int order_cmp(const void *pa, const void *pb)
{
    const link_order_t *a = pa, *b = pb;
    int c = a->f == b->f ? 0 : hccn_sim_flow_cmp(a->f, b->f);
    if (c != 0)
        return c;
    return (a->k > b->k) - (a->k < b->k);
}

/* Counts flows[0..n) on their links, marks them unfixed, and writes their
 * links to eng->touched in the order described above. Returns how many. */
static int links_order(hccn_sim_engine_t *eng, flow_t **flows, int n)
{
    const hccn_sim_link_t *links = eng->topo->links;
    link_order_t *ord = eng->link_order;
    int m = 0;

    for (int i = 0; i < n; i++) {
        flow_t *f = flows[i];
        f->was = f->rate;
        f->rate = -1.0;
        for (int k = 0; k < f->nlinks; k++) {
            int l = f->links[k];
            if (eng->link_cnt[l]++ == 0) {
                eng->link_cap[l] = links[l].bw * eng->link_factor[l];
                eng->link_pos[l] = m;
                ord[m++] = (link_order_t){f, k, l};
            } else if (hccn_sim_flow_cmp(f, ord[eng->link_pos[l]].f) < 0) {
                ord[eng->link_pos[l]].f = f;
                ord[eng->link_pos[l]].k = k;
            }
        }
    }
    if (m > 1)
        qsort(ord, (size_t)m, sizeof(*ord), order_cmp);
    for (int j = 0; j < m; j++) {
        eng->touched[j] = ord[j].l;
        eng->link_pos[ord[j].l] = j;
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
        if (eng->link_cnt[l] == 0)
            continue;
        double s = eng->link_cap[l] / eng->link_cnt[l];
        if (s < *share) {
            *share = s;
            best = l;
        }
    }
    return best;
}

/* ---------------------------------------------------- the tournament --- */


/* Leaf j's entry: place j if its link still has unfixed flows and a finite
 * share (the only links the scan can pick), else -1. */
static int leaf(hccn_sim_engine_t *eng, int j)
{
    int l = eng->touched[j], cnt = eng->link_cnt[l];
    double s = cnt > 0 ? eng->link_cap[l] / cnt : INFINITY;
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
    if (m > 1)
        qsort(v, (size_t)m, sizeof(*v), int_cmp);
    for (int d = 0; d < m; d++) {
        t[size + v[d]] = leaf(eng, v[d]);
        v[d] += size;
    }
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

/* Fixes the unfixed flows on link best at share; with a tree, marks the
 * places of the links they cross. */
static void fix_link(hccn_sim_engine_t *eng, int best, double share,
                     int tree, int *ndirty)
{
    flow_t **on = eng->link_flows[best];
    for (int i = 0; i < eng->link_active[best]; i++) {
        flow_t *f = on[i];
        if (f->rate >= 0.0)
            continue;
        f->rate = share;
        for (int k = 0; k < f->nlinks; k++) {
            int l = f->links[k];
            eng->link_cap[l] -= share;
            eng->link_cnt[l]--;
            int j = eng->link_pos[l];
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
    int tree = !eng->no_bursts && ntouched >= eng->tree_links, size = 1;
    int ndirty = 0, best;
    double share;

    while (size < ntouched)
        size *= 2;
    if (tree)
        tree_build(eng, ntouched, size);
    for (;;) {
        if (tree) {
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
        if (flows[i]->rate < 0.0)
            flows[i]->rate = INFINITY;
    for (int j = 0; j < ntouched; j++)
        eng->link_cnt[eng->touched[j]] = 0;
}
