/*
 * Routing around a downed link through a relay NPU (docs/faults.md,
 * "Re-routing").
 *
 * When neither the structural route of a transfer nor the ring's other way
 * round is whole, the transfer may go through another NPU that forwards
 * it: a peer in the sender's node (in a mesh, the link to it and its link
 * on; between nodes, its own NIC: another rail), else a peer in the
 * receiver's node. The relay is the first NPU, in that order and by
 * index, whose two routes are whole at that moment, so the choice is a
 * function of the fault plan and the simulated time only. The relayed
 * transfer is one flow over the links of both routes: it gets the
 * smallest rate any of them grants, and its latency is both routes'
 * plus the relay's own.
 */
#include "device_sim/engine_internal.h"

#include <string.h>

/* The route from a to b as it is now (folded: node 0's copies), if every
 * link of it is up; else -1. */
static int whole_route(const hccn_sim_engine_t *eng, int a, int b, int *links,
                       double *lat)
{
    int n = hccn_sim_topo_route(eng->topo, a, b, links, lat);
    for (int k = 0; k < n; k++) {
        if (eng->fold_link != NULL)
            links[k] = eng->fold_link[links[k]];
        if (eng->link_factor[links[k]] <= 0.0)
            return -1;
    }
    return n;
}

/* The relayed route through k, or -1. */
static int via(const hccn_sim_engine_t *eng, int src, int dst, int k,
               int *links, double *lat)
{
    int first[HCCN_SIM_ROUTE_MAX], second[HCCN_SIM_ROUTE_MAX];
    double l1, l2;
    if (k == src || k == dst || eng->devs[k].failed)
        return -1;
    int n1 = whole_route(eng, src, k, first, &l1);
    int n2 = n1 > 0 ? whole_route(eng, k, dst, second, &l2) : -1;
    if (n2 <= 0 || n1 + n2 > HCCN_SIM_ROUTE_MAX)
        return -1;
    memcpy(links, first, (size_t)n1 * sizeof(*links));
    memcpy(links + n1, second, (size_t)n2 * sizeof(*links));
    *lat = l1 + eng->topo->devs[k].lat + l2;
    return n1 + n2;
}

int hccn_sim_flow_relay(const hccn_sim_engine_t *eng, int src, int dst,
                        int *links, double *lat)
{
    const hccn_sim_topo_t *t = eng->topo;
    int nodes[2] = {t->npus[src].node, t->npus[dst].node};
    for (int s = 0; s < 2; s++) {
        if (s == 1 && nodes[1] == nodes[0])
            break;
        const hccn_sim_node_t *nd = &t->nodes[nodes[s]];
        for (int j = 0; j < nd->nnpus; j++) {
            int n = via(eng, src, dst, nd->first_npu + j, links, lat);
            if (n > 0)
                return n;
        }
    }
    return -1;
}
