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
 * per-link lists), not all of them: a round costs what the links cost,
 * and each flow is fixed once. The flows fixed in one round all subtract
 * the same share, so the order in which they do it does not matter.
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
    for (int j = 0; j < m; j++)
        eng->touched[j] = ord[j].l;
    return m;
}

/* The first link, in order, with the smallest share; -1 if none is left. */
static int pick(const hccn_sim_engine_t *eng, int ntouched, double *share)
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

void hccn_sim_fill(hccn_sim_engine_t *eng, flow_t **flows, int n)
{
    int ntouched = links_order(eng, flows, n);
    int best;
    double share;

    while ((best = pick(eng, ntouched, &share)) >= 0) {
        if (share < 0.0)
            share = 0.0;
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
            }
        }
    }
    /* Flows that cross only free links drain at once. */
    for (int i = 0; i < n; i++)
        if (flows[i]->rate < 0.0)
            flows[i]->rate = INFINITY;
    for (int j = 0; j < ntouched; j++)
        eng->link_cnt[eng->touched[j]] = 0;
}
