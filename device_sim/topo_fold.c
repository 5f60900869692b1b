/*
 * Whether a topology is node 0 copied: every node the same NPUs and links
 * as node 0, reached through the network the same way, so that what node
 * n's NPUs do over their links can be played by node 0's over its own
 * (hccn_sim_engine_set_fold). Checked on the routes themselves: every
 * route inside a node, and every NPU's way out and in, is compared link by
 * link with its copy in node 0.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "device_sim/alloc.h"
#include "device_sim/topo.h"

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
 * in node n > 0) onto those of a0 -> b0, their copies in node 0's place:
 * the routes must have the same shape and latency, and each link one
 * copy, like it. */
static int map_route(fold_t *f, int n, int a, int b, int a0, int b0,
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
                          "node 0", topo->devs[l->src].name,
                          topo->devs[l->dst].name);
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

/* Node n's routes inside it and its NPUs' ways out and in. */
static int map_node(fold_t *f, int n)
{
    const hccn_sim_topo_t *topo = f->topo;
    const hccn_sim_node_t *nd = &topo->nodes[n], *n0 = &topo->nodes[0];
    const hccn_sim_npu_t *npus = topo->npus;
    for (int i = 0; i < nd->nnpus; i++) {
        int a = nd->first_npu + i, a0 = n0->first_npu + i;
        if (npus[a].reduce_bw != npus[a0].reduce_bw ||
            npus[a].mem_bw != npus[a0].mem_bw)
            return refuse(f->why, f->len, "%s is not like %s",
                          topo->devs[npus[a].dev].name,
                          topo->devs[npus[a0].dev].name);
        for (int j = 0; j < nd->nnpus; j++)
            if (j != i && map_route(f, n, a, nd->first_npu + j, a0,
                                    n0->first_npu + j, 0, -1) != 0)
                return -1;
        /* Out to node 0's first NPU, as a0 goes out to node 1's; in from
         * there, as a0 comes in from node 1: the links up to the switch
         * (all share one leaf) each way. */
        int x = n0->first_npu, x1 = topo->nodes[1].first_npu;
        int out = leaving(topo, a, x, n), in = entering(topo, x, a, n);
        if (out < 0 || in < 0 || map_route(f, n, a, x, a0, x1, 0, out) != 0 ||
            map_route(f, n, x, a, x1, a0, in, -1) != 0)
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
    if (topo->net_reduce_link >= 0)
        return refuse(why, len, "the network switch reduces (one unit "
                      "that every node's traffic shares)");
    const hccn_sim_node_t *n0 = &topo->nodes[0];
    for (int n = 1; n < topo->nnodes; n++) {
        const hccn_sim_node_t *nd = &topo->nodes[n];
        if (nd->nnpus != n0->nnpus || nd->fabric != n0->fabric ||
            nd->type != n0->type)
            return refuse(why, len, "node %d is not like node 0", n);
        if (nd->leaf != n0->leaf)
            return refuse(why, len, "nodes on different leaves");
    }
    for (int r = 0; r < topo->nnpus; r++)
        if (topo->npus[r].node < 0 || topo->npus[r].local < 0 ||
            topo->npus[r].local >= n0->nnpus ||
            topo->nodes[topo->npus[r].node].first_npu + topo->npus[r].local
                != r)
            return refuse(why, len, "NPU %d is out of order", r);
    return 0;
}

int hccn_sim_topo_fold(const hccn_sim_topo_t *topo, int *rep, int *link_map,
                       char *why, size_t len)
{
    if (check_nodes(topo, why, len) != 0)
        return -1;
    fold_t f = {topo, link_map, hccn_sim_calloc((size_t)topo->nlinks, 1), why, len};
    if (f.set == NULL)
        return refuse(why, len, "%s", hccn_sim_nomem_msg());
    for (int l = 0; l < topo->nlinks; l++)
        link_map[l] = l;
    int rc = 0;
    for (int n = 1; n < topo->nnodes && rc == 0; n++)
        rc = map_node(&f, n);
    hccn_sim_free(f.set);
    if (rc != 0)
        return -1;
    for (int r = 0; r < topo->nnpus; r++)
        rep[r] = topo->nodes[0].first_npu + topo->npus[r].local;
    return 0;
}
