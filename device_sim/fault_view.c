/*
 * The topology as selection should see it under a fault plan (docs/
 * faults.md, "Selection under faults"): the faults in effect when a run
 * starts (at <= 0) applied to a copy of the figures the cost model reads.
 * A downed link is seen at half its bandwidth: its traffic goes round
 * through a relay NPU (flow_relay.c) over two links that carry traffic of
 * their own, a route the cost model does not follow, so the detour is
 * priced as the link at half speed (an approximation; where no relay
 * exists the transfer fails whatever the algorithm). A slow link is seen
 * at its factor, a slow NPU reduces factor times slower. Later faults are not seen: every rank of a call must choose
 * alike, and ranks reach a call at different simulated times.
 */
#include <stdlib.h>
#include <string.h>

#include "device_sim/alloc.h"
#include "device_sim/topo.h"

#define DOWN_FACTOR 0.5

/* 1 if f changes what the cost model reads from the start of a run. */
static int seen(const hccn_sim_fault_t *f)
{
    return f->at <= 0.0 && (f->kind == HCCN_SIM_FAULT_LINK_DOWN ||
                            f->kind == HCCN_SIM_FAULT_LINK_SLOW ||
                            f->kind == HCCN_SIM_FAULT_NPU_SLOW);
}

hccn_sim_topo_t *hccn_sim_topo_fault_view(const hccn_sim_topo_t *topo,
                                          const hccn_sim_fault_t *faults,
                                          int n, int *nomem)
{
    int any = 0;
    *nomem = 0;
    for (int i = 0; i < n && !any; i++)
        any = seen(&faults[i]);
    if (!any)
        return NULL;
    hccn_sim_topo_t *v = hccn_sim_malloc(sizeof(*v));
    hccn_sim_link_t *links = hccn_sim_malloc((size_t)topo->nlinks * sizeof(*links) + 1);
    hccn_sim_npu_t *npus = hccn_sim_malloc((size_t)topo->nnpus * sizeof(*npus) + 1);
    if (v == NULL || links == NULL || npus == NULL) {
        hccn_sim_free(v);
        hccn_sim_free(links);
        hccn_sim_free(npus);
        *nomem = 1;
        return NULL;
    }
    *v = *topo;       /* names, tables and faults stay the topology's */
    memcpy(links, topo->links, (size_t)topo->nlinks * sizeof(*links));
    memcpy(npus, topo->npus, (size_t)topo->nnpus * sizeof(*npus));
    for (int i = 0; i < n; i++) {
        const hccn_sim_fault_t *f = &faults[i];
        if (!seen(f))
            continue;
        if (f->kind == HCCN_SIM_FAULT_NPU_SLOW && f->npu >= 0 &&
            f->npu < topo->nnpus)
            npus[f->npu].reduce_bw /= f->factor;
        else if (f->kind != HCCN_SIM_FAULT_NPU_SLOW && f->link >= 0 &&
                 f->link < topo->nlinks)
            links[f->link].bw *= f->kind == HCCN_SIM_FAULT_LINK_DOWN
                                     ? DOWN_FACTOR : f->factor;
    }
    v->links = links;
    v->npus = npus;
    return v;
}

void hccn_sim_topo_fault_view_free(hccn_sim_topo_t *view)
{
    if (view == NULL)
        return;
    hccn_sim_free(view->links);
    hccn_sim_free(view->npus);
    hccn_sim_free(view);
}
