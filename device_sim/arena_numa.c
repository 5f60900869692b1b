/*
 * NUMA placement of arenas: on a host with several NUMA nodes, each NPU's
 * arena is bound to the node of the core its thread runs on, so that the
 * bytes a rank reduces and copies are local to it. The thread placement
 * is hccn_sim_launch's (thread i on core i % cores); arenas follow it only
 * when threads are bound, since a floating thread has no home node. With
 * one node there is nothing to choose and nothing is done.
 */
#include <hwloc.h>
#include <stdlib.h>

#include "device_sim/alloc.h"
#include "device_sim/arena.h"

int hccn_sim_numa_pick(int rank, int ncores, const int *core_node, int nnodes)
{
    if (nnodes <= 1 || ncores <= 0 || rank < 0)
        return -1;
    int node = core_node[rank % ncores];
    return node >= 0 && node < nnodes ? node : -1;
}

/* Each core's NUMA node, as an index into the host's NUMA node objects
 * (-1 when it has none); NULL on no memory. */
static int *core_nodes(hwloc_topology_t topo, int ncores, int nnodes)
{
    int *map = hccn_sim_malloc((size_t)ncores * sizeof(*map));
    if (map == NULL)
        return NULL;
    for (int c = 0; c < ncores; c++) {
        hwloc_obj_t core = hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE,
                                                 (unsigned)c);
        map[c] = -1;
        for (int k = 0; k < nnodes && core != NULL; k++) {
            hwloc_obj_t node = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE,
                                                     (unsigned)k);
            if (node != NULL &&
                hwloc_bitmap_isincluded(core->cpuset, node->cpuset)) {
                map[c] = k;
                break;
            }
        }
    }
    return map;
}

/* Binds every arena whose rank has a home node; returns how many. */
static int bind_all(hwloc_topology_t topo, hccn_sim_arena_t *arenas, int n,
                    const int *map, int ncores, int nnodes)
{
    int bound = 0;
    for (int r = 0; r < n; r++) {
        int k = hccn_sim_numa_pick(r, ncores, map, nnodes);
        if (k < 0 || arenas[r].base == NULL)
            continue;
        hwloc_obj_t node = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE,
                                                 (unsigned)k);
        if (node != NULL &&
            hwloc_set_area_membind(topo, arenas[r].base, arenas[r].size,
                                   node->nodeset, HWLOC_MEMBIND_BIND,
                                   HWLOC_MEMBIND_BYNODESET) == 0)
            bound++;
    }
    return bound;
}

int hccn_sim_arena_place(hccn_sim_arena_t *arenas, int n)
{
    hwloc_topology_t topo;
    int bound = 0;
    if (hwloc_topology_init(&topo) != 0)
        return 0;
    if (hwloc_topology_load(topo) == 0) {
        int ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
        int nnodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
        if (nnodes > 1 && ncores > 0) {
            int *map = core_nodes(topo, ncores, nnodes);
            if (map != NULL)
                bound = bind_all(topo, arenas, n, map, ncores, nnodes);
            hccn_sim_free(map);
        }
    }
    hwloc_topology_destroy(topo);
    return bound;
}
