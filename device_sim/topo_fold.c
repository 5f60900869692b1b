/*
 * Whether a topology is node 0 copied: every node the same NPUs and links
 * as node 0, reached through the network the same way, so that what node
 * n's NPUs do over their links can be played by node 0's over its own
 * (hccn_sim_engine_set_fold). Checked on the routes themselves: every
 * route inside a node, and every NPU's way out and in, is compared link by
 * link with its copy in node 0.
 *
 * Nodes on several leaves (a leaf/spine network or a fat tree) fold too
 * when the tree is the same seen from every node: every switch of a tier
 * holds as many nodes as node 0's and has the same uplink. A switch's
 * uplink then maps onto node 0's switch's of the same tier, and each of
 * node 0's flows on it stands for those of the nodes under it (link_div:
 * the engine counts it as that many flows, flow.c). Every node running as
 * node 0 does, the rates of the whole tree are those of the copies (the
 * max-min fair rates are unique, so as symmetric as the problem). The
 * network switch's reduction unit (network.reduce), which every node's
 * contributions cross, is shared the same way: link_div nnodes.
 *
 * Where the leaves or the tree above them differ, the nodes may still be
 * copies of the first node of their leaf (hccn_sim_topo_fold_leaves):
 * every leaf then stands for itself, each of its first node's flows on a
 * link above the nodes for those of the leaf's m nodes.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "device_sim/alloc.h"
#include "device_sim/topo_internal.h"

static int refuse(char *why, size_t len, const char *fmt, ...)
{
    if (why != NULL && len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, len, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int same_link(const hccn_sim_link_t *x, const hccn_sim_link_t *y)
{
    return x->bw == y->bw && x->lat == y->lat && x->level == y->level;
}

typedef struct {
    const hccn_sim_topo_t *topo;
    int *link_map;
    unsigned char *set;         /* per link: link_map holds a copy */
    char *why;
    size_t len;
} fold_t;

/* Maps links [from, to) (to < 0: to the end) of the route a -> b (a or b
 * in node n) onto those of a0 -> b0, their copies in node n0's place:
 * the routes must have the same shape and latency, and each link one
 * copy, like it. */
static int map_route(fold_t *f, int n, int n0, int a, int b, int a0, int b0,
                     int from, int to)
{
    const hccn_sim_topo_t *topo = f->topo;
    int r[HCCN_SIM_ROUTE_MAX], r0[HCCN_SIM_ROUTE_MAX];
    double lat, lat0;
    int len = hccn_sim_topo_route(topo, a, b, r, &lat);
    int len0 = hccn_sim_topo_route(topo, a0, b0, r0, &lat0);
    if (to < 0)
        to = len;
    if (len <= 0 || len != len0 || lat != lat0 || to > len)
        return refuse(f->why, f->len, "the route %s -> %s is not shaped "
                      "like %s -> %s", topo->devs[topo->npus[a].dev].name,
                      topo->devs[topo->npus[b].dev].name,
                      topo->devs[topo->npus[a0].dev].name,
                      topo->devs[topo->npus[b0].dev].name);
    for (int k = from; k < to; k++) {
        const hccn_sim_link_t *l = &topo->links[r[k]];
        if (topo->devs[l->src].node != n && topo->devs[l->dst].node != n)
            return refuse(f->why, f->len, "link %s->%s is shared by nodes",
                          topo->devs[l->src].name, topo->devs[l->dst].name);
        if (!same_link(l, &topo->links[r0[k]]) ||
            (f->set[r[k]] && f->link_map[r[k]] != r0[k]))
            return refuse(f->why, f->len, "link %s->%s has no copy in "
                          "node %d", topo->devs[l->src].name,
                          topo->devs[l->dst].name, n0);
        f->link_map[r[k]] = r0[k];
        f->set[r[k]] = 1;
    }
    return 0;
}

/* How many links of the route a -> b (a in node n) start in node n: its
 * way out (-1 when there is no route). */
static int leaving(const hccn_sim_topo_t *topo, int a, int b, int n)
{
    int r[HCCN_SIM_ROUTE_MAX], k = 0;
    int len = hccn_sim_topo_route(topo, a, b, r, NULL);
    while (k < len && topo->devs[topo->links[r[k]].src].node == n)
        k++;
    return len < 0 ? -1 : k;
}

/* The index of the first link of the route a -> b (b in node n) that
 * ends in node n: its way in starts there (-1 when there is no route). */
static int entering(const hccn_sim_topo_t *topo, int a, int b, int n)
{
    int r[HCCN_SIM_ROUTE_MAX], k = 0;
    int len = hccn_sim_topo_route(topo, a, b, r, NULL);
    while (k < len && topo->devs[topo->links[r[k]].dst].node != n)
        k++;
    return len < 0 ? -1 : k;
}

/* Node n's routes inside it and its NPUs' ways out and in, onto those of
 * node k (its copy). */
static int map_node(fold_t *f, int n, int k)
{
    const hccn_sim_topo_t *topo = f->topo;
    const hccn_sim_node_t *nd = &topo->nodes[n], *n0 = &topo->nodes[k];
    const hccn_sim_npu_t *npus = topo->npus;
    for (int i = 0; i < nd->nnpus; i++) {
        int a = nd->first_npu + i, a0 = n0->first_npu + i;
        if (npus[a].reduce_bw != npus[a0].reduce_bw ||
            npus[a].mem_bw != npus[a0].mem_bw)
            return refuse(f->why, f->len, "%s is not like %s",
                          topo->devs[npus[a].dev].name,
                          topo->devs[npus[a0].dev].name);
        for (int j = 0; j < nd->nnpus; j++)
            if (j != i && map_route(f, n, k, a, nd->first_npu + j, a0,
                                    n0->first_npu + j, 0, -1) != 0)
                return -1;
        /* Out to node k's first NPU, as a0 goes out to node n's; in from
         * there, as a0 comes in from node n (as far apart): node n's links
         * each way, up to its leaf (the network's are map_net's). */
        int x = n0->first_npu, y = nd->first_npu;
        int out = leaving(topo, a, x, n), in = entering(topo, x, a, n);
        if (out < 0 || in < 0 ||
            map_route(f, n, k, a, x, a0, y, 0, out) != 0 ||
            map_route(f, n, k, x, a, y, a0, in, -1) != 0)
            return -1;
    }
    return 0;
}

static int check_nodes(const hccn_sim_topo_t *topo, char *why, size_t len)
{
    if (topo->nnodes < 2)
        return refuse(why, len, "one node");
    if (topo->nfaults > 0)
        return refuse(why, len, "a fault plan");
    const hccn_sim_node_t *n0 = &topo->nodes[0];
    for (int n = 1; n < topo->nnodes; n++) {
        const hccn_sim_node_t *nd = &topo->nodes[n];
        if (nd->nnpus != n0->nnpus || nd->fabric != n0->fabric ||
            nd->type != n0->type)
            return refuse(why, len, "node %d is not like node 0", n);
    }
    for (int r = 0; r < topo->nnpus; r++)
        if (topo->npus[r].node < 0 || topo->npus[r].local < 0 ||
            topo->npus[r].local >= n0->nnpus ||
            topo->nodes[topo->npus[r].node].first_npu + topo->npus[r].local
                != r)
            return refuse(why, len, "NPU %d is out of order", r);
    return 0;
}

/* Maps the uplinks of every switch of the network onto those of node 0's
 * switch of its tier, and gives each the share of one node of those under
 * it. Tier by tier: under[i] holds the nodes under switch i. */
static int map_net(fold_t *f, double *link_div)
{
    const hccn_sim_topo_t *topo = f->topo;
    const hccn_sim_topo_priv_t *p = topo->priv;
    int count = p->nleaves, at = topo->nodes[0].leaf;
    if (count <= 1)
        return 0;
    for (int n = 0; n < topo->nnodes; n++)
        if (topo->nodes[n].leaf < 0 || topo->nodes[n].leaf >= count)
            return refuse(f->why, f->len, "node %d is on no leaf", n);
    int *under = hccn_sim_calloc((size_t)count, sizeof(int));
    if (under == NULL)
        return refuse(f->why, f->len, "%s", hccn_sim_nomem_msg());
    for (int n = 0; n < topo->nnodes; n++)
        under[topo->nodes[n].leaf]++;
    int ntiers = p->ntiers > 0 ? p->ntiers : 1, rc = 0;
    for (int k = 0; k < ntiers && rc == 0; k++) {
        const hccn_sim_uplink_t *u0 = hccn_sim_tree_uplink(p, k, at);
        for (int i = 0; i < count && rc == 0; i++) {
            const hccn_sim_uplink_t *u = hccn_sim_tree_uplink(p, k, i);
            const hccn_sim_link_t *l = &topo->links[u->up];
            if (under[i] != under[at])
                rc = refuse(f->why, f->len, "%s: %d node%s below, %s: %d",
                            topo->devs[l->src].name, under[i],
                            under[i] == 1 ? "" : "s",
                            topo->devs[topo->links[u0->up].src].name,
                            under[at]);
            else if (!same_link(l, &topo->links[u0->up]) ||
                     !same_link(&topo->links[u->down], &topo->links[u0->down]))
                rc = refuse(f->why, f->len, "the uplink of %s is not like "
                            "that of %s", topo->devs[l->src].name,
                            topo->devs[topo->links[u0->up].src].name);
            f->link_map[u->up] = u0->up;
            f->link_map[u->down] = u0->down;
            link_div[u->up] = link_div[u->down] = under[i];
        }
        if (k + 1 < ntiers) {       /* the next tier's switches */
            int c = p->tier_children[k + 1], next = (count + c - 1) / c;
            for (int i = 0; i < count; i++) {
                int v = under[i];
                under[i] = 0;
                under[i / c] += v;  /* i / c <= i: already read */
            }
            count = next;
            at /= c;
        }
    }
    hccn_sim_free(under);
    return rc;
}

int hccn_sim_topo_fold(const hccn_sim_topo_t *topo, int *rep, int *link_map,
                       double *link_div, char *why, size_t len)
{
    if (check_nodes(topo, why, len) != 0)
        return -1;
    fold_t f = {topo, link_map, hccn_sim_calloc((size_t)topo->nlinks, 1), why, len};
    if (f.set == NULL)
        return refuse(why, len, "%s", hccn_sim_nomem_msg());
    for (int l = 0; l < topo->nlinks; l++) {
        link_map[l] = l;
        link_div[l] = 1.0;
    }
    /* The network switch's reduction unit: one, every node's share. */
    if (topo->net_reduce_link >= 0)
        link_div[topo->net_reduce_link] = topo->nnodes;
    int rc = map_net(&f, link_div);
    for (int n = 1; n < topo->nnodes && rc == 0; n++)
        rc = map_node(&f, n, 0);
    hccn_sim_free(f.set);
    if (rc != 0)
        return -1;
    for (int r = 0; r < topo->nnpus; r++)
        rep[r] = topo->nodes[0].first_npu + topo->npus[r].local;
    return 0;
}

int hccn_sim_topo_fold_leaves(const hccn_sim_topo_t *topo, int *rep,
                              int *link_map, double *link_div, char *why,
                              size_t len)
{
    const hccn_sim_topo_priv_t *p = topo->priv;
    int nleaves = p->nleaves;
    if (check_nodes(topo, why, len) != 0)
        return -1;
    if (nleaves < 2)
        return refuse(why, len, "one leaf");
    int *first = hccn_sim_malloc((size_t)nleaves * sizeof(int));
    int *under = hccn_sim_calloc((size_t)nleaves, sizeof(int));
    fold_t f = {topo, link_map, hccn_sim_calloc((size_t)topo->nlinks, 1),
                why, len};
    int rc = 0, m = 0;
    if (first == NULL || under == NULL || f.set == NULL)
        rc = refuse(why, len, "%s", hccn_sim_nomem_msg());
    for (int i = 0; rc == 0 && i < nleaves; i++)
        first[i] = -1;
    for (int n = 0; rc == 0 && n < topo->nnodes; n++) {
        int leaf = topo->nodes[n].leaf;
        if (leaf < 0 || leaf >= nleaves) {
            rc = refuse(why, len, "node %d is on no leaf", n);
            break;
        }
        if (first[leaf] < 0)
            first[leaf] = n;
        under[leaf]++;
    }
    /* Every leaf that holds nodes holds m of them. */
    for (int i = 0; rc == 0 && i < nleaves; i++) {
        if (under[i] == 0)
            continue;
        if (m == 0)
            m = under[i];
        if (under[i] != m)
            rc = refuse(why, len, "leaf %d holds %d node%s, leaf %d %d", i,
                        under[i], under[i] == 1 ? "" : "s",
                        topo->nodes[0].leaf, m);
    }
    if (rc == 0 && m < 2)
        rc = refuse(why, len, "one node per leaf");
    for (int l = 0; rc == 0 && l < topo->nlinks; l++) {
        const hccn_sim_link_t *k = &topo->links[l];
        link_map[l] = l;
        /* A link of no node (above the leaves, or the network switch's
         * reduction unit) carries the traffic of m nodes for each node
         * played. */
        link_div[l] = topo->devs[k->src].node < 0 &&
                      topo->devs[k->dst].node < 0 ? m : 1.0;
    }
    for (int n = 0; rc == 0 && n < topo->nnodes; n++) {
        int k = first[topo->nodes[n].leaf];
        if (k != n)
            rc = map_node(&f, n, k);
    }
    for (int r = 0; rc == 0 && r < topo->nnpus; r++) {
        int k = first[topo->nodes[topo->npus[r].node].leaf];
        rep[r] = topo->nodes[k].first_npu + topo->npus[r].local;
    }
    hccn_sim_free(first);
    hccn_sim_free(under);
    hccn_sim_free(f.set);
    return rc != 0 ? -1 : 0;
}
