/*
 * Staged PCIe traffic (docs/topology.md, "Staged traffic without
 * peer-to-peer"): on a "pcie" fabric with "p2p": false, every message
 * between two NPUs is staged through host memory (the sender writes it
 * over its PCIe link into a host buffer, the receiver reads it back over
 * its own). Two figures describe such a copy:
 *
 *   efficiency E  what one staged copy reaches, as a share of the wire
 *                 rate of one direction of the NPU's link (fabric.bw_GBps)
 *   duplex F      what both directions of one NPU's link carry together
 *                 when staged, as a multiple of E x wire (1: the two
 *                 directions share one E x wire budget; 2: they are
 *                 independent, as the wire itself is; never below 1,
 *                 which would cap one direction alone under E x wire)
 *
 * In the graph each NPU of such a fabric gets three more links, each from
 * the NPU to itself (resources, like a switch's reduction unit) and with
 * no latency: "stage out" (E x wire) that its staged sends cross,
 * "stage in" (E x wire) that its staged receives cross, and "stage"
 * (E x F x wire) that both cross, so the engine's max-min rate solver and
 * the closed forms (which read the same routes) share that one budget
 * between the NPU's sends and receives. A route stays a chain of links
 * from the sender to the receiver, and its latency is unchanged. A file
 * with p2p true (or without a pcie fabric) has the graph it always had.
 */
#include <math.h>

#include "device_sim/topo_internal.h"

typedef hccn_sim_jctx_t jctx_t;

/* Defaults: CUDA samples' p2pBandwidthLatencyTest with P2P=Disabled (its
 * copies fall back to staging through host memory) on PCIe 4.0 x16-class
 * links, against the 28.8 GB/s payload rate of one direction
 * (docs/topology.md gives the published outputs). */
#define STAGED_EFFICIENCY 0.8
#define STAGED_DUPLEX 1.2

hccn_status_t hccn_sim_parse_staged(hccn_sim_jctx_t *c, json_object *f,
                                    hccn_sim_type_spec_t *t)
{
    static const char *const keys[] = {"efficiency", "duplex", NULL};
    json_object *s = NULL;
    int has = 0;
    hccn_status_t st = hccn_sim_jtyped(c, f, "staged", json_type_object,
                                       "an object", &s, &has);
    t->stage_eff = t->stage_duplex = 0.0;
    if (st)
        return st;
    if (has && t->p2p)
        return hccn_sim_jfail_key(c, "staged", "only allowed when p2p is "
                                  "false (staged copies go through host "
                                  "memory)");
    if (t->p2p)
        return HCCN_OK;
    t->stage_eff = STAGED_EFFICIENCY;
    t->stage_duplex = STAGED_DUPLEX;
    if (!has)
        return HCCN_OK;
    size_t old = hccn_sim_jkey(c, "staged");
    int he, hd;   /* each key is optional: absent keeps its default */
    if ((st = hccn_sim_jkeys(c, s, keys)) == HCCN_OK &&
        (st = hccn_sim_jnum(c, s, "efficiency", 0.001, 0, 1.0, &t->stage_eff,
                            &he)) == HCCN_OK)
        st = hccn_sim_jnum(c, s, "duplex", 1.0, 0, 2.0, &t->stage_duplex,
                           &hd);
    hccn_sim_jpop(c, old);
    return st;
}

/* Link *nlink: from NPU r to itself, bw, no latency, level 0. */
static int add_self(hccn_sim_topo_t *topo, int *nlink, int r, double bw)
{
    hccn_sim_link_t *l = &topo->links[*nlink];
    l->src = l->dst = r;
    l->bw = bw;
    l->lat = 0.0;
    l->level = 0;
    return (*nlink)++;
}

void hccn_sim_build_staged(hccn_sim_topo_t *topo, hccn_sim_topo_priv_t *p,
                           int *nlink, const hccn_sim_node_t *nd,
                           const hccn_sim_type_spec_t *t,
                           hccn_sim_node_tab_t *tab)
{
    double one = t->stage_eff * t->fab_bw;
    tab->stage_eff = t->stage_eff;
    tab->stage_duplex = t->stage_duplex;
    for (int j = 0; j < nd->nnpus; j++) {
        int r = nd->first_npu + j;   /* NPU device index == rank */
        hccn_sim_npu_tab_t *nt = &p->npu[r];
        nt->stage_out = add_self(topo, nlink, r, one);
        nt->stage_in = add_self(topo, nlink, r, one);
        nt->stage = add_self(topo, nlink, r, one * t->stage_duplex);
    }
}

int hccn_sim_topo_staged(const hccn_sim_topo_t *topo, int node,
                         double *efficiency, double *duplex)
{
    const hccn_sim_topo_priv_t *p;
    if (efficiency != NULL)
        *efficiency = 0.0;
    if (duplex != NULL)
        *duplex = 0.0;
    if (topo == NULL || topo->priv == NULL || node < 0 ||
        node >= topo->nnodes)
        return 0;
    p = topo->priv;
    if (p->node[node].stage_eff <= 0.0)
        return 0;
    if (efficiency != NULL)
        *efficiency = p->node[node].stage_eff;
    if (duplex != NULL)
        *duplex = p->node[node].stage_duplex;
    return 1;
}

int hccn_sim_route_staged(const hccn_sim_topo_priv_t *p, int a, int b,
                          int *out)
{
    const hccn_sim_npu_tab_t *ta = &p->npu[a], *tb = &p->npu[b];
    out[0] = ta->stage_out;
    out[1] = ta->stage;
    out[2] = ta->fab_up;
    out[3] = p->groups[ta->group].up;
    out[4] = p->groups[tb->group].down;
    out[5] = tb->fab_down;
    out[6] = tb->stage;
    out[7] = tb->stage_in;
    return 8;
}
