/*
 * Routes between NPUs and the summary figures of a topology.
 *
 * Routes are computed structurally from the tables topo_build.c fills: a
 * handful of array reads per link, no per-pair table, so a route costs
 * O(route length) and the tables cost O(nnpus) memory.
 */
#include "device_sim/alloc.h"
#include "device_sim/topo_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PRIV(topo) ((const hccn_sim_topo_priv_t *)(topo)->priv)

/* The ring's route from a to b in one direction: forward (link i -> i+1 is
 * base + i) or back (link i+1 -> i is back + i). */
static int ring_walk(const hccn_sim_node_tab_t *tab, int n, int a, int b,
                     int forward, int *out)
{
    int fwd = (b - a + n) % n, len = 0;
    if (forward) {
        for (int k = 0; k < fwd; k++)
            out[len++] = tab->base + (a + k) % n;
        return len;
    }
    for (int cur = a, k = 0; k < n - fwd; k++) {
        cur = (cur - 1 + n) % n;             /* link cur+1 -> cur */
        out[len++] = tab->back + cur;
    }
    return len;
}

/* The shorter way round; ties go forward; one way only without back links. */
static int ring_forward(const hccn_sim_node_tab_t *tab, int n, int a, int b)
{
    int fwd = (b - a + n) % n;
    return tab->back < 0 || fwd <= n - fwd;
}

static int route_ring(const hccn_sim_node_tab_t *tab, int n, int a, int b,
                      int *out)
{
    return ring_walk(tab, n, a, b, ring_forward(tab, n, a, b), out);
}

static int route_intra(const hccn_sim_topo_t *topo, int a, int b, int *out)
{
    const hccn_sim_topo_priv_t *p = PRIV(topo);
    const hccn_sim_node_t *nd = &topo->nodes[topo->npus[a].node];
    const hccn_sim_node_tab_t *tab = &p->node[topo->npus[a].node];
    const hccn_sim_npu_tab_t *ta = &p->npu[a], *tb = &p->npu[b];
    int la = a - nd->first_npu, lb = b - nd->first_npu, n = nd->nnpus;
    switch (nd->fabric) {
    case HCCN_SIM_FABRIC_MESH:
        out[0] = tab->base + la * (n - 1) + (lb < la ? lb : lb - 1);
        return 1;
    case HCCN_SIM_FABRIC_SWITCH:
        out[0] = ta->fab_up;
        out[1] = tb->fab_down;
        return 2;
    case HCCN_SIM_FABRIC_RING:
        return route_ring(tab, n, la, lb, out);
    case HCCN_SIM_FABRIC_PCIE:
        if (!tab->p2p)   /* staged through host memory (topo_staged.c) */
            return hccn_sim_route_staged(p, a, b, out);
        out[0] = ta->fab_up;
        if (ta->group == tb->group && tab->p2p) {
            out[1] = tb->fab_down;
            return 2;
        }
        out[1] = p->groups[ta->group].up;
        out[2] = p->groups[tb->group].down;
        out[3] = tb->fab_down;
        return 4;
    case HCCN_SIM_FABRIC_LINKS:
        return hccn_sim_route_links(tab, n, la, lb, out);
    case HCCN_SIM_FABRIC_NONE:
        break;
    }
    return -1;
}

/* From NPU a to its NIC (up) or back (!up), appended at out: the attach
 * link, or through the PCIe tree when the NIC sits under a PCIe switch
 * (a -> its switch [-> host -> the NIC's switch] -> NIC). */
static int route_nic(const hccn_sim_topo_priv_t *p, int a, int up, int *out)
{
    const hccn_sim_npu_tab_t *ta = &p->npu[a];
    const hccn_sim_nic_tab_t *nc = &p->nics[ta->nic];
    int len = 0;
    if (nc->group < 0) {
        out[0] = up ? ta->nic_up : ta->nic_down;
        return 1;
    }
    int cross = ta->group != nc->group;
    if (up) {
        out[len++] = ta->fab_up;
        if (cross) {
            out[len++] = p->groups[ta->group].up;
            out[len++] = p->groups[nc->group].down;
        }
        out[len++] = nc->sw_down;
        return len;
    }
    out[len++] = nc->sw_up;
    if (cross) {
        out[len++] = p->groups[nc->group].up;
        out[len++] = p->groups[ta->group].down;
    }
    out[len++] = ta->fab_down;
    return len;
}

static int route_inter(const hccn_sim_topo_t *topo, int a, int b, int *out)
{
    const hccn_sim_topo_priv_t *p = PRIV(topo);
    const hccn_sim_npu_tab_t *ta = &p->npu[a], *tb = &p->npu[b];
    int leaf_a = topo->nodes[topo->npus[a].node].leaf;
    int leaf_b = topo->nodes[topo->npus[b].node].leaf;
    int len = 0;
    if (ta->nic < 0 || tb->nic < 0 || p->nics[ta->nic].out < 0 ||
        p->nics[tb->nic].in < 0)
        return -1;  /* not reachable; validation rules this out */
    len += route_nic(p, a, 1, out + len);
    out[len++] = p->nics[ta->nic].out;
    if (leaf_a != leaf_b && p->ntiers > 0) {
        len += hccn_sim_route_tree(p, leaf_a, leaf_b, out + len);
    } else if (leaf_a != leaf_b) {
        out[len++] = p->leaves[leaf_a].up;
        out[len++] = p->leaves[leaf_b].down;
    }
    out[len++] = p->nics[tb->nic].in;
    return len + route_nic(p, b, 0, out + len);
}

int hccn_sim_topo_apart(const hccn_sim_topo_t *topo, int a, int b)
{
    const hccn_sim_topo_priv_t *p = PRIV(topo);
    int na = topo->npus[a].node, nb = topo->npus[b].node;
    if (na == nb)
        return 0;
    int la = topo->nodes[na].leaf, lb = topo->nodes[nb].leaf;
    if (la < 0 || lb < 0 || la == lb)
        return 1;
    if (p->ntiers == 0)                 /* leaf, spine, leaf */
        return 2;
    int links[2 * HCCN_SIM_MAX_TIERS];  /* a tier's uplink up and down */
    return 1 + hccn_sim_route_tree(p, la, lb, links) / 2;
}

/* Sum of the links' latencies plus the latency of every device between two
 * consecutive links (switches, leaves, the spine; NPUs and NICs add 0). */
static double route_latency(const hccn_sim_topo_t *topo, const int *links,
                            int n)
{
    double lat = 0.0;
    for (int i = 0; i < n; i++) {
        lat += topo->links[links[i]].lat;
        if (i + 1 < n)
            lat += topo->devs[topo->links[links[i]].dst].lat;
    }
    return lat;
}

/* The structural route between two NPUs of different nodes, or of one node
 * (alt: the ring's other way round, -1 where there is none). */
static int route_any(const hccn_sim_topo_t *topo, int a, int b, int alt,
                     int *out)
{
    if (topo->npus[a].node != topo->npus[b].node)
        return alt ? -1 : route_inter(topo, a, b, out);
    if (!alt)
        return route_intra(topo, a, b, out);
    const hccn_sim_node_t *nd = &topo->nodes[topo->npus[a].node];
    const hccn_sim_node_tab_t *tab = &PRIV(topo)->node[topo->npus[a].node];
    int la = a - nd->first_npu, lb = b - nd->first_npu, n = nd->nnpus;
    if (nd->fabric != HCCN_SIM_FABRIC_RING || tab->back < 0)
        return -1;
    return ring_walk(tab, n, la, lb, !ring_forward(tab, n, la, lb), out);
}

static int route_checked(const hccn_sim_topo_t *topo, int a, int b, int alt,
                         int *links, double *lat)
{
    int buf[HCCN_SIM_ROUTE_MAX], *out = links != NULL ? links : buf, n;
    if (lat != NULL)
        *lat = 0.0;
    if (topo == NULL || topo->priv == NULL || a < 0 || b < 0 ||
        a >= topo->nnpus || b >= topo->nnpus)
        return -1;
    if (a == b)
        return alt ? -1 : 0;
    n = route_any(topo, a, b, alt, out);
    if (n > 0 && lat != NULL)
        *lat = route_latency(topo, out, n);
    return n;
}

/* Returns -1 (and *lat 0) for a NULL or unbuilt topo or an NPU out of range;
 * links and lat may be NULL. */
int hccn_sim_topo_route(const hccn_sim_topo_t *topo, int a, int b,
                        int *links, double *lat)
{
    return route_checked(topo, a, b, 0, links, lat);
}

int hccn_sim_topo_route_alt(const hccn_sim_topo_t *topo, int a, int b,
                            int *links, double *lat)
{
    return route_checked(topo, a, b, 1, links, lat);
}

/* ------------------------------------------------------------------------ */
/* Bisection bandwidth (docs/topology.md, "Bisection bandwidth").           */

/* Maximum flow from side A to side B through a two-tier tree: members sit
 * under domain switches (leaves, PCIe switches) joined by one top switch
 * (spine, host bridge). Each domain adds its own A->B flow (when its switch
 * may forward locally) and offers what remains to the top through its
 * uplink; the top carries min(total offered up, total accepted down). */
typedef struct {
    double local, up, down;
} flow_t;

static void flow_add(flow_t *f, double a, double b, double up, double down,
                     int local_ok)
{
    double local = local_ok ? fmin(a, b) : 0.0;
    f->local += local;
    f->up += fmin(a - local, up);
    f->down += fmin(b - local, down);
}

static double flow_total(const flow_t *f)
{
    return f->local + fmin(f->up, f->down);
}

/* What node's NICs can carry out of (or into) it: per NIC, the smaller of
 * its network link and the sum of its attach links (or its link to its PCIe
 * switch, for a NIC under one). */
static double node_nic_capacity(const hccn_sim_topo_t *topo, int node)
{
    const hccn_sim_topo_priv_t *p = PRIV(topo);
    const hccn_sim_node_t *nd = &topo->nodes[node];
    double attach[HCCN_SIM_MAX_NPUS_PER_NODE] = {0}, cap = 0.0;
    int k0 = p->nnics;
    for (int j = 0; j < nd->nnpus; j++) {
        int k = p->npu[nd->first_npu + j].nic;
        if (k >= 0 && k < k0)
            k0 = k;
    }
    for (int j = 0; j < nd->nnpus; j++) {
        const hccn_sim_npu_tab_t *u = &p->npu[nd->first_npu + j];
        if (u->nic < 0 || u->nic - k0 >= HCCN_SIM_MAX_NPUS_PER_NODE)
            continue;
        if (p->nics[u->nic].group >= 0)   /* its link to its PCIe switch */
            attach[u->nic - k0] = topo->links[p->nics[u->nic].sw_down].bw;
        else
            attach[u->nic - k0] += topo->links[u->nic_up].bw;
    }
    for (int k = 0; k < nd->nnpus && k0 + k < p->nnics; k++)
        if (attach[k] > 0.0 && p->nics[k0 + k].out >= 0)
            cap += fmin(attach[k], topo->links[p->nics[k0 + k].out].bw);
    return cap;
}

/* A fat tree: each leaf's halves' NIC capacities, then the tiers. */
static double bisection_tree(const hccn_sim_topo_t *topo)
{
    const hccn_sim_topo_priv_t *p = PRIV(topo);
    double *a = hccn_sim_calloc((size_t)p->nleaves, sizeof(double));
    double *b = hccn_sim_calloc((size_t)p->nleaves, sizeof(double));
    double total = 0.0;
    if (a != NULL && b != NULL) {
        for (int node = 0; node < topo->nnodes; node++) {
            double cap = node_nic_capacity(topo, node);
            int l = topo->nodes[node].leaf;
            *(node < topo->nnodes / 2 ? &a[l] : &b[l]) += cap;
        }
        total = hccn_sim_tree_bisection(topo, a, b);
    }
    hccn_sim_free(a);
    hccn_sim_free(b);
    return total;
}

static double bisection_nodes(const hccn_sim_topo_t *topo)
{
    const hccn_sim_topo_priv_t *p = PRIV(topo);
    if (p->ntiers > 0)
        return bisection_tree(topo);
    int half = topo->nnodes / 2, ndom = p->nleaves > 0 ? p->nleaves : 1;
    flow_t f = {0};
    for (int d = 0, node = 0; d < ndom; d++) {
        double a = 0.0, b = 0.0, up = 0.0, down = 0.0;
        for (; node < topo->nnodes && (p->nleaves == 0 ||
                                       topo->nodes[node].leaf == d); node++) {
            double cap = node_nic_capacity(topo, node);
            *(node < half ? &a : &b) += cap;
        }
        if (p->nleaves > 0) {
            up = topo->links[p->leaves[d].up].bw;
            down = topo->links[p->leaves[d].down].bw;
        }
        flow_add(&f, a, b, up, down, 1);
    }
    return flow_total(&f);
}

static double bisection_pcie(const hccn_sim_topo_t *topo)
{
    const hccn_sim_topo_priv_t *p = PRIV(topo);
    const hccn_sim_node_t *nd = &topo->nodes[0];
    int n = nd->nnpus, half = n / 2, g0 = p->ngroups;
    flow_t f = {0};
    for (int j = 0; j < n; j++)
        if (p->npu[j].group < g0)
            g0 = p->npu[j].group;
    for (int g = g0; g < p->ngroups; g++) {
        double a = 0.0, b = 0.0;
        for (int j = 0; j < n; j++) {
            if (p->npu[j].group != g)
                continue;
            if (j < half)
                a += topo->links[p->npu[j].fab_up].bw;
            else
                b += topo->links[p->npu[j].fab_down].bw;
        }
        flow_add(&f, a, b, topo->links[p->groups[g].up].bw,
                 topo->links[p->groups[g].down].bw, p->node[0].p2p);
    }
    return flow_total(&f);
}

/* One node: its NPUs split into [0, n/2) and [n/2, n). */
static double bisection_npus(const hccn_sim_topo_t *topo)
{
    const hccn_sim_topo_priv_t *p = PRIV(topo);
    const hccn_sim_node_tab_t *tab = &p->node[0];
    int n = topo->nodes[0].nnpus, half = n / 2;
    switch (topo->nodes[0].fabric) {
    case HCCN_SIM_FABRIC_MESH:
        return (double)half * (n - half) * topo->links[tab->base].bw;
    case HCCN_SIM_FABRIC_SWITCH:
        return half * topo->links[p->npu[0].fab_up].bw;
    case HCCN_SIM_FABRIC_RING:
        return (tab->back >= 0 ? 2 : 1) * topo->links[tab->base].bw;
    case HCCN_SIM_FABRIC_PCIE:
        return bisection_pcie(topo);
    case HCCN_SIM_FABRIC_LINKS:
        return hccn_sim_links_cut(topo, tab, &topo->nodes[0], half);
    case HCCN_SIM_FABRIC_NONE:
        break;
    }
    return 0.0;
}

void hccn_sim_topo_summarize(const hccn_sim_topo_t *topo,
                             hccn_sim_topo_summary_t *sum)
{
    if (sum == NULL)
        return;
    memset(sum, 0, sizeof(*sum));
    if (topo == NULL || topo->priv == NULL)
        return;
    for (int i = 0; i < topo->nlinks; i++) {
        const hccn_sim_link_t *l = &topo->links[i];
        if (l->level < 0 || l->level > 2)
            continue;
        if (l->src == l->dst && topo->devs[l->src].kind == HCCN_SIM_DEV_NPU)
            continue;   /* an NPU's stage link: not a wire (topo_staged.c) */
        double *min = &sum->bw_per_level[l->level];
        if (sum->links_per_level[l->level]++ == 0)
            *min = INFINITY;
        if (l->bw < *min)
            *min = l->bw;
    }
    sum->bisection_bw = topo->nnodes > 1 ? bisection_nodes(topo)
                                         : bisection_npus(topo);
}
