/*
 * Selection under the fault plan (docs/faults.md, "Selection under
 * faults"): what the cost model sees in a run is the topology with the
 * faults in effect when the run starts (device_sim/fault_view.c), made
 * again at the start of every run, since the plan changes only between
 * runs. Its predictions are remembered apart from the fault-free ones.
 */
#include "runtime/rt.h"

hccn_status_t hccn_rt_sel_prepare(hccn_cluster_t *cl)
{
    int nomem;
    hccn_rt_sel_free(cl);
    cl->sel_topo = hccn_sim_topo_fault_view(cl->topo, cl->faults, cl->nfaults,
                                            &nomem);
    if (nomem)
        return HCCN_ERR_NOMEM;
    if (cl->sel_topo != NULL && (cl->sel_cache = hccn_hier_cache_new()) == NULL) {
        hccn_rt_sel_free(cl);
        return HCCN_ERR_NOMEM;
    }
    return HCCN_OK;
}

void hccn_rt_sel_free(hccn_cluster_t *cl)
{
    hccn_sim_topo_fault_view_free(cl->sel_topo);
    hccn_hier_cache_free(cl->sel_cache);
    cl->sel_topo = NULL;
    cl->sel_cache = NULL;
}

const hccn_sim_topo_t *hccn_rt_sel_topo(const hccn_cluster_t *cl)
{
    return cl->sel_topo != NULL ? cl->sel_topo : cl->topo;
}

hccn_hier_cache_t *hccn_rt_sel_cache(const hccn_cluster_t *cl)
{
    return cl->sel_topo != NULL ? cl->sel_cache : cl->select_cache;
}
