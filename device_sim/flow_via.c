/*
 * Transfers through a reducing switch (engine.h, hccn_sim_via_t;
 * docs/timing.md, In-switch reduction): the part of the route a transfer
 * crosses, and the switch's reduction unit when the switch reduces it.
 *
 * A reduction of p-1 contributions is p-1 transfers to the rank that
 * gets the result: each contribution crosses its sender's way up to the
 * switch and the unit, and one of them also the way down, so the way
 * down carries the result once. A multicast is p-1 transfers from one
 * rank: one crosses the whole route, the others only their way down, so
 * the sender's way up carries the data once. Every part that touches the
 * switch counts its latency; a transfer through the unit also the
 * unit's (a network switch's reduce.lat_us; 0 for a node's switch).
 */
#include "device_sim/engine_internal.h"

/* Latency of links[lo..hi) and of the devices between them, with the
 * device at the start (from_dev) and end (to_dev) counted when asked. */
static double part_lat(const hccn_sim_topo_t *topo, const int *links, int lo,
                       int hi, int from_dev, int to_dev)
{
    double lat = 0.0;
    if (from_dev && lo < hi)
        lat += topo->devs[topo->links[links[lo]].src].lat;
    for (int k = lo; k < hi; k++) {
        lat += topo->links[links[k]].lat;
        if (k + 1 < hi || to_dev)
            lat += topo->devs[topo->links[links[k]].dst].lat;
    }
    return lat;
}

int hccn_sim_flow_via(const hccn_sim_engine_t *eng, int via, int src,
                      int *links, int n, double *lat)
{
    const hccn_sim_topo_t *topo = eng->topo;
    int unit = -1, k = hccn_sim_topo_reduce_split(topo, src, links, n, &unit);
    if (k < 0 || via == HCCN_SIM_VIA_ROUTE)
        return n;
    if (eng->fold_link != NULL)
        unit = eng->fold_link[unit];
    switch (via) {
    case HCCN_SIM_VIA_UP:
        *lat = part_lat(topo, links, 0, k + 1, 0, 1) + topo->links[unit].lat;
        links[k + 1] = unit;
        return k + 2;
    case HCCN_SIM_VIA_UP_DOWN:
        *lat += topo->links[unit].lat;
        if (n < HCCN_SIM_ROUTE_MAX)
            links[n++] = unit;
        return n;
    case HCCN_SIM_VIA_DOWN:
        *lat = part_lat(topo, links, k + 1, n, 1, 0);
        for (int i = k + 1; i < n; i++)
            links[i - k - 1] = links[i];
        return n - k - 1;
    default:
        return n;
    }
}
