/*
 * Graph construction: a validated spec -> devices, directed links and the
 * per-NPU / per-node tables that hccn_sim_topo_route reads.
 *
 * Layout (docs/topology.md, "The graph"):
 *   devices: NPUs 0..nnpus-1 in rank order (device index == rank); then per
 *            node its switch or PCIe switches and host bridge, then its NICs;
 *            then the network devices ("net", or "leaf<l>"... and "spine").
 *   links:   per node its fabric links, its NIC attach links (NPU order),
 *            its NIC <-> network links (NIC order); then leaf <-> spine.
 * Sizes are counted first, so every array is allocated once.
 */
#include "device_sim/alloc.h"
#include "device_sim/topo_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    hccn_sim_topo_t *t;
    hccn_sim_topo_priv_t *p;
    const hccn_sim_spec_t *spec;
    int ndev, nlink;          /* filled so far */
    int nic, group;           /* NICs and PCIe switches filled so far */
    int net_base;             /* device index of the first network device */
} bctx_t;

long long hccn_sim_type_links(const hccn_sim_type_spec_t *t, int has_net)
{
    long long n = t->nnpus, links = 0;
    switch (t->fabric) {
    case HCCN_SIM_FABRIC_MESH:   links = n * (n - 1); break;
    case HCCN_SIM_FABRIC_SWITCH: links = 2 * n; break;
    case HCCN_SIM_FABRIC_RING:
        links = n == 2 ? 2 : t->bidirectional ? 2 * n : n;
        break;
    case HCCN_SIM_FABRIC_PCIE:
        links = (t->p2p ? 2 : 5) * n + 2LL * t->ngroups;  /* topo_staged.c */
        break;
    case HCCN_SIM_FABRIC_LINKS:  links = 2LL * t->nconns; break;
    case HCCN_SIM_FABRIC_NONE:   break;
    }
    for (int j = 0; j < t->nnpus && t->nnics > 0; j++)
        links += t->nic_of[j] >= 0 && t->nic_group[t->nic_of[j]] < 0 ? 2 : 0;
    for (int k = 0; k < t->nnics; k++)
        links += t->nic_group[k] >= 0 ? 2 : 0;
    return links + (has_net ? 2LL * t->nnics : 0);
}

int hccn_sim_spec_leaves(const hccn_sim_spec_t *spec)
{
    if (spec->net.kind != HCCN_SIM_NET_LEAF_SPINE &&
        spec->net.kind != HCCN_SIM_NET_FAT_TREE)
        return 0;
    return (spec->nnodes + spec->net.nodes_per_leaf - 1) /
           spec->net.nodes_per_leaf;
}

/* Switches of a fat tree above its leaves (0 for other networks). */
static int tree_upper(const hccn_sim_spec_t *spec)
{
    int per[HCCN_SIM_MAX_TIERS];
    if (spec->net.kind != HCCN_SIM_NET_FAT_TREE)
        return 0;
    return hccn_sim_tree_switches(spec, per) - hccn_sim_spec_leaves(spec);
}

static int net_devices(const hccn_sim_spec_t *spec)
{
    switch (spec->net.kind) {
    case HCCN_SIM_NET_FAT_TREE:
        return hccn_sim_spec_leaves(spec) + tree_upper(spec) + 1;
    case HCCN_SIM_NET_SWITCH:     return 1;
    case HCCN_SIM_NET_LEAF_SPINE: return hccn_sim_spec_leaves(spec) + 1;
    default:                      return 0;
    }
}

/* Counts devices, links, NICs and PCIe switches of the whole cluster. */
static void count_graph(const hccn_sim_spec_t *spec, long long *ndevs,
                        long long *nlinks, long long *nnics,
                        long long *ngroups)
{
    int has_net = spec->net.kind != HCCN_SIM_NET_NONE;
    *ndevs = spec->nnpus + net_devices(spec);
    *nlinks = 2LL * (hccn_sim_spec_leaves(spec) + tree_upper(spec)) +
              hccn_sim_reduce_units(spec);
    *nnics = *ngroups = 0;
    for (int i = 0; i < spec->ntypes; i++) {
        const hccn_sim_type_spec_t *t = &spec->types[i];
        long long fab = t->fabric == HCCN_SIM_FABRIC_SWITCH ? 1
                      : t->fabric == HCCN_SIM_FABRIC_PCIE ? t->ngroups + 1
                      : 0;
        long long groups = t->fabric == HCCN_SIM_FABRIC_PCIE ? t->ngroups : 0;
        *ndevs += t->nnodes * (fab + t->nnics);
        *nlinks += t->nnodes * hccn_sim_type_links(t, has_net);
        *nnics += (long long)t->nnodes * t->nnics;
        *ngroups += t->nnodes * groups;
    }
}

static int add_dev(bctx_t *b, hccn_sim_dev_kind_t kind, int node, double lat,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int add_dev(bctx_t *b, hccn_sim_dev_kind_t kind, int node, double lat,
                   const char *fmt, ...)
{
    hccn_sim_dev_t *d = &b->t->devs[b->ndev];
    va_list ap;
    d->kind = kind;
    d->node = node;
    d->lat = lat;
    va_start(ap, fmt);
    vsnprintf(d->name, sizeof(d->name), fmt, ap);
    va_end(ap);
    return b->ndev++;
}

static int add_link(bctx_t *b, int src, int dst, double bw, double lat,
                    int level)
{
    hccn_sim_link_t *l = &b->t->links[b->nlink];
    l->src = src;
    l->dst = dst;
    l->bw = bw;
    l->lat = lat;
    l->level = level;
    return b->nlink++;
}

/* ------------------------------------------------------------------------ */
/* One node: fabric, NICs.                                                  */

static void build_mesh(bctx_t *b, const hccn_sim_node_t *nd,
                       const hccn_sim_type_spec_t *t, hccn_sim_node_tab_t *tab)
{
    int f = nd->first_npu, n = nd->nnpus;
    tab->base = b->nlink;
    for (int x = 0; x < n; x++)
        for (int y = 0; y < n; y++)
            if (x != y)
                add_link(b, f + x, f + y, t->fab_bw, t->fab_lat, 0);
}

static void build_switch(bctx_t *b, int node, const hccn_sim_node_t *nd,
                         const hccn_sim_type_spec_t *t)
{
    int sw = add_dev(b, HCCN_SIM_DEV_SWITCH, node, 0.0, "node%d.nvswitch",
                     node);
    for (int j = 0; j < nd->nnpus; j++) {
        hccn_sim_npu_tab_t *nt = &b->p->npu[nd->first_npu + j];
        nt->fab_up = add_link(b, nd->first_npu + j, sw, t->fab_bw,
                              t->fab_lat, 0);
        nt->fab_down = add_link(b, sw, nd->first_npu + j, t->fab_bw, 0.0, 0);
    }
}

static void build_ring(bctx_t *b, const hccn_sim_node_t *nd,
                       const hccn_sim_type_spec_t *t, hccn_sim_node_tab_t *tab)
{
    int f = nd->first_npu, n = nd->nnpus;
    tab->base = b->nlink;
    tab->back = -1;
    for (int i = 0; i < n; i++)
        add_link(b, f + i, f + (i + 1) % n, t->fab_bw, t->fab_lat, 0);
    if (n == 2 || !t->bidirectional)
        return;  /* with two NPUs the forward links are the whole ring */
    tab->back = b->nlink;
    for (int i = 0; i < n; i++)
        add_link(b, f + (i + 1) % n, f + i, t->fab_bw, t->fab_lat, 0);
}

static void build_pcie(bctx_t *b, int node, const hccn_sim_node_t *nd,
                       const hccn_sim_type_spec_t *t, hccn_sim_node_tab_t *tab)
{
    int g0 = b->group, dev0 = b->ndev;
    for (int g = 0; g < t->ngroups; g++)
        add_dev(b, HCCN_SIM_DEV_BRIDGE, node, 0.0, "node%d.pcie%d", node, g);
    int host = add_dev(b, HCCN_SIM_DEV_BRIDGE, node, 0.0, "node%d.host",
                       node);
    for (int g = 0; g < t->ngroups; g++) {
        hccn_sim_uplink_t *u = &b->p->groups[g0 + g];
        u->up = add_link(b, dev0 + g, host, t->host_bw, t->host_lat, 0);
        u->down = add_link(b, host, dev0 + g, t->host_bw, 0.0, 0);
    }
    for (int j = 0; j < nd->nnpus; j++) {
        hccn_sim_npu_tab_t *nt = &b->p->npu[nd->first_npu + j];
        int sw = dev0 + t->group_of[j];
        nt->group = g0 + t->group_of[j];
        nt->fab_up = add_link(b, nd->first_npu + j, sw, t->fab_bw,
                              t->fab_lat, 0);
        nt->fab_down = add_link(b, sw, nd->first_npu + j, t->fab_bw, 0.0, 0);
    }
    tab->p2p = t->p2p;
    if (!t->p2p)
        hccn_sim_build_staged(b->t, b->p, &b->nlink, nd, t, tab);
    b->group += t->ngroups;
}

/* NICs under a PCIe switch (pcie_group): NIC <-> switch links, in NIC
 * order. The node's PCIe switches are the devices just before its host
 * bridge, which is just before its first NIC (build_pcie). */
static void build_nic_groups(bctx_t *b, const hccn_sim_type_spec_t *t,
                             int dev0, int g0)
{
    int sw0 = dev0 - 1 - t->ngroups;
    for (int k = 0; k < t->nnics; k++) {
        hccn_sim_nic_tab_t *nc = &b->p->nics[b->nic + k];
        int g = t->nic_group[k];
        nc->group = g < 0 ? -1 : g0 + g;
        nc->sw_up = nc->sw_down = -1;
        if (g < 0)
            continue;
        nc->sw_down = add_link(b, sw0 + g, dev0 + k, t->nic_attach_bw[k],
                               0.0, 1);
        nc->sw_up = add_link(b, dev0 + k, sw0 + g, t->nic_attach_bw[k], 0.0,
                             1);
    }
}

static void build_nics(bctx_t *b, int node, const hccn_sim_node_t *nd,
                       const hccn_sim_type_spec_t *t)
{
    int dev0 = b->ndev;
    for (int k = 0; k < t->nnics; k++)
        add_dev(b, HCCN_SIM_DEV_NIC, node, 0.0, "node%d.nic%d", node, k);
    for (int j = 0; j < nd->nnpus && t->nnics > 0; j++) {
        int k = t->nic_of[j], r = nd->first_npu + j;
        if (k < 0)
            continue;
        hccn_sim_npu_tab_t *nt = &b->p->npu[r];
        nt->nic = b->nic + k;
        b->t->npus[r].nic = dev0 + k;
        if (t->nic_group[k] >= 0)
            continue;
        nt->nic_up = add_link(b, r, dev0 + k, t->nic_attach_bw[k], 0.0, 1);
        nt->nic_down = add_link(b, dev0 + k, r, t->nic_attach_bw[k], 0.0, 1);
    }
    build_nic_groups(b, t, dev0, b->group - t->ngroups);
    for (int k = 0; k < t->nnics; k++) {
        hccn_sim_nic_tab_t *nc = &b->p->nics[b->nic + k];
        nc->out = nc->in = -1;
        if (b->spec->net.kind == HCCN_SIM_NET_NONE)
            continue;
        b->t->nodes[node].nic_bw += t->nic_bw[k];
        int sw = b->net_base + (nd->leaf >= 0 ? nd->leaf : 0);
        nc->out = add_link(b, dev0 + k, sw, t->nic_bw[k], t->nic_lat[k], 1);
        nc->in = add_link(b, sw, dev0 + k, t->nic_bw[k], 0.0, 1);
    }
    b->nic += t->nnics;
}

static void build_node(bctx_t *b, int node)
{
    const hccn_sim_node_t *nd = &b->t->nodes[node];
    const hccn_sim_type_spec_t *t = &b->spec->types[nd->type];
    hccn_sim_node_tab_t *tab = &b->p->node[node];
    tab->base = tab->back = -1;
    switch (t->fabric) {
    case HCCN_SIM_FABRIC_MESH:   build_mesh(b, nd, t, tab); break;
    case HCCN_SIM_FABRIC_SWITCH: build_switch(b, node, nd, t); break;
    case HCCN_SIM_FABRIC_RING:   build_ring(b, nd, t, tab); break;
    case HCCN_SIM_FABRIC_PCIE:   build_pcie(b, node, nd, t, tab); break;
    case HCCN_SIM_FABRIC_LINKS:
        hccn_sim_build_links(b->t, &b->nlink, nd, t, tab);
        tab->pair = b->p->pairs[nd->type];
        break;
    case HCCN_SIM_FABRIC_NONE:   break;
    }
    build_nics(b, node, nd, t);
}

/* ------------------------------------------------------------------------ */
/* NPUs, the network, the whole graph.                                      */

static void build_npus(bctx_t *b)
{
    const hccn_sim_spec_t *spec = b->spec;
    int node = 0, rank = 0, per = spec->net.nodes_per_leaf;
    for (int ti = 0; ti < spec->ntypes; ti++) {
        const hccn_sim_type_spec_t *t = &spec->types[ti];
        for (int k = 0; k < t->nnodes; k++, node++) {
            hccn_sim_node_t *nd = &b->t->nodes[node];
            nd->first_npu = rank;
            nd->nnpus = t->nnpus;
            nd->type = ti;
            nd->fabric = t->fabric;
            nd->reduce_link = -1;
            nd->leaf = spec->net.kind == HCCN_SIM_NET_LEAF_SPINE ||
                               spec->net.kind == HCCN_SIM_NET_FAT_TREE
                           ? node / per : -1;
            for (int j = 0; j < t->nnpus; j++, rank++) {
                hccn_sim_npu_t *u = &b->t->npus[rank];
                u->arena_bytes = t->arena_bytes;
                u->reduce_bw = t->reduce_bw;
                u->mem_bw = t->mem_bw;
                u->peak_flops = t->peak_flops;
                memcpy(u->peak_flops_of, t->peak_flops_of,
                       sizeof(u->peak_flops_of));
                u->node = node;
                u->local = j;
                u->dev = add_dev(b, HCCN_SIM_DEV_NPU, node, 0.0,
                                 "node%d.npu%d", node, j);
                u->nic = -1;
                b->p->npu[rank] = (hccn_sim_npu_tab_t){
                    -1, -1, -1, -1, -1, -1, -1, -1, -1};
            }
        }
    }
}

/* Leaf l's uplink: the NIC bandwidth of its nodes over the oversubscription. */
static double leaf_uplink_bw(const bctx_t *b, int leaf)
{
    const hccn_sim_spec_t *spec = b->spec;
    int per = spec->net.nodes_per_leaf, end = (leaf + 1) * per;
    double sum = 0.0;
    for (int n = leaf * per; n < end && n < spec->nnodes; n++) {
        const hccn_sim_type_spec_t *t = &spec->types[b->t->nodes[n].type];
        for (int k = 0; k < t->nnics; k++)
            sum += t->nic_bw[k];
    }
    return sum / spec->net.oversub;
}

/* Returns -1 when out of memory. */
static int build_network(bctx_t *b)
{
    const hccn_sim_net_spec_t *net = &b->spec->net;
    if (net->kind == HCCN_SIM_NET_FAT_TREE) {
        double *bw = hccn_sim_calloc((size_t)(b->p->nleaves > 0 ? b->p->nleaves : 1),
                            sizeof(double));
        if (bw == NULL)
            return -1;
        for (int l = 0; l < b->p->nleaves; l++)
            bw[l] = leaf_uplink_bw(b, l);   /* oversub is 1: the NICs' sum */
        int rc = hccn_sim_build_tree(b->t, b->p, b->spec, bw, b->net_base,
                                     &b->ndev, &b->nlink);
        hccn_sim_free(bw);
        return rc;
    } else if (net->kind == HCCN_SIM_NET_SWITCH) {
        add_dev(b, HCCN_SIM_DEV_SWITCH, -1, net->lat, "net");
    } else if (net->kind == HCCN_SIM_NET_LEAF_SPINE) {
        for (int l = 0; l < b->p->nleaves; l++)
            add_dev(b, HCCN_SIM_DEV_SWITCH, -1, net->lat, "leaf%d", l);
        int spine = add_dev(b, HCCN_SIM_DEV_SWITCH, -1, net->spine_lat,
                            "spine");
        for (int l = 0; l < b->p->nleaves; l++) {
            double bw = leaf_uplink_bw(b, l);
            b->p->leaves[l].up = add_link(b, b->net_base + l, spine, bw, 0.0,
                                          2);
            b->p->leaves[l].down = add_link(b, spine, b->net_base + l, bw,
                                            0.0, 2);
        }
    }
    return 0;
}

/* Each reducing switch's unit, after every other link, in node order,
 * then the network switch's. */
static void build_reduce_units(bctx_t *b)
{
    for (int n = 0; n < b->t->nnodes; n++) {
        hccn_sim_node_t *nd = &b->t->nodes[n];
        const hccn_sim_type_spec_t *t = &b->spec->types[nd->type];
        if (t->red_bw <= 0.0 || nd->fabric != HCCN_SIM_FABRIC_SWITCH)
            continue;
        int sw = b->t->links[b->p->npu[nd->first_npu].fab_up].dst;
        nd->reduce_link = add_link(b, sw, sw, t->red_bw, 0.0, 0);
        nd->reduce_dtypes = t->red_dtypes;
        nd->reduce_ops = t->red_ops;
    }
    const hccn_sim_net_spec_t *net = &b->spec->net;
    if (net->red_bw > 0.0 && net->kind == HCCN_SIM_NET_SWITCH &&
        b->t->nnodes > 1) {
        b->t->net_reduce_link = add_link(b, b->net_base, b->net_base,
                                         net->red_bw, net->red_lat, 2);
        b->t->net_reduce_dtypes = net->red_dtypes;
        b->t->net_reduce_ops = net->red_ops;
    }
}

/* calloc that never returns NULL for a zero count (so NULL means failure). */
static void *alloc(long long n, size_t size)
{
    return hccn_sim_calloc(n > 0 ? (size_t)n : 1, size);
}

/* A fat tree's tiers, as the router reads them. */
static void tree_tiers(hccn_sim_topo_priv_t *p, const hccn_sim_spec_t *spec)
{
    int per[HCCN_SIM_MAX_TIERS], base = 0;
    if (spec->net.kind != HCCN_SIM_NET_FAT_TREE)
        return;
    hccn_sim_tree_switches(spec, per);
    p->ntiers = spec->net.ntiers;
    for (int k = 0; k < p->ntiers; k++) {
        p->tier_children[k] = spec->net.tier_children[k];
        p->tier_base[k] = k == 0 ? 0 : base;
        base += k == 0 ? 0 : per[k];
    }
}

/* The links fabrics' pair tables, owned by the topology. */
static int copy_pairs(hccn_sim_topo_priv_t *p, const hccn_sim_spec_t *spec)
{
    for (int i = 0; i < spec->ntypes; i++) {
        const hccn_sim_type_spec_t *t = &spec->types[i];
        if (t->fabric != HCCN_SIM_FABRIC_LINKS)
            continue;
        size_t bytes = (size_t)t->nnpus * (size_t)t->nnpus * sizeof(int);
        if ((p->pairs[i] = hccn_sim_malloc(bytes)) == NULL)
            return 0;
        memcpy(p->pairs[i], t->pair, bytes);
    }
    return 1;
}

static int alloc_graph(hccn_sim_topo_t *t, hccn_sim_topo_priv_t *p,
                       const hccn_sim_spec_t *spec)
{
    long long ndevs, nlinks, nnics, ngroups;
    count_graph(spec, &ndevs, &nlinks, &nnics, &ngroups);
    t->nnodes = spec->nnodes;
    t->nnpus = spec->nnpus;
    t->ndevs = (int)ndevs;
    t->nlinks = (int)nlinks;
    p->nnics = (int)nnics;
    p->ngroups = (int)ngroups;
    p->nleaves = hccn_sim_spec_leaves(spec);
    p->net = spec->net.kind;
    t->nodes = alloc(t->nnodes, sizeof(*t->nodes));
    t->npus = alloc(t->nnpus, sizeof(*t->npus));
    t->devs = alloc(ndevs, sizeof(*t->devs));
    t->links = alloc(nlinks, sizeof(*t->links));
    p->npu = alloc(t->nnpus, sizeof(*p->npu));
    p->nics = alloc(nnics, sizeof(*p->nics));
    p->node = alloc(t->nnodes, sizeof(*p->node));
    p->groups = alloc(ngroups, sizeof(*p->groups));
    p->leaves = alloc(p->nleaves, sizeof(*p->leaves));
    p->nupper = tree_upper(spec);
    p->upper = alloc(p->nupper, sizeof(*p->upper));
    tree_tiers(p, spec);
    p->ntypes = spec->ntypes;
    p->pairs = alloc(spec->ntypes, sizeof(*p->pairs));
    return t->nodes && t->npus && t->devs && t->links && p->npu && p->nics &&
           p->node && p->groups && p->leaves && p->upper && p->pairs &&
           copy_pairs(p, spec);
}

hccn_status_t hccn_sim_topo_build(const hccn_sim_spec_t *spec,
                                  hccn_sim_topo_t **out)
{
    hccn_sim_topo_t *t = hccn_sim_calloc(1, sizeof(*t));
    hccn_sim_topo_priv_t *p = hccn_sim_calloc(1, sizeof(*p));
    *out = NULL;
    if (t == NULL || p == NULL) {
        hccn_sim_free(t);
        hccn_sim_free(p);
        return HCCN_ERR_NOMEM;
    }
    t->priv = p;
    t->net_reduce_link = -1;
    if (!alloc_graph(t, p, spec)) {
        hccn_sim_topo_free(t);
        return HCCN_ERR_NOMEM;
    }
    bctx_t b = {.t = t, .p = p, .spec = spec};
    b.net_base = t->ndevs - net_devices(spec);
    build_npus(&b);
    for (int n = 0; n < t->nnodes; n++)
        build_node(&b, n);
    if (build_network(&b) != 0) {
        hccn_sim_topo_free(t);
        return HCCN_ERR_NOMEM;
    }
    build_reduce_units(&b);
    if (b.ndev != t->ndevs || b.nlink != t->nlinks) {
        hccn_status_t st = hccn_sim_fail(
            HCCN_ERR_INTERNAL, "building the graph: %d devices and %d links "
            "made where %d and %d were counted", b.ndev, b.nlink, t->ndevs,
            t->nlinks);
        hccn_sim_topo_free(t);
        return st;
    }
    *out = t;
    return HCCN_OK;
}
