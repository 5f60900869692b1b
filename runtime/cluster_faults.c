/*
 * The fault plan of a cluster between runs: hccn_cluster_add_fault checks a
 * fault against the topology and the ranges of docs/topology.md (the same a
 * file's "faults" must keep), hccn_cluster_clear_faults forgets the added
 * ones. Every run replays the plan (hccn_cluster_run hands it to the
 * engine).
 */
#include <math.h>
#include <stdlib.h>

#include "device_sim/alloc.h"
#include "runtime/rt.h"

static hccn_status_t fault_check(hccn_cluster_t *cl, const hccn_fault_t *f,
                                 hccn_sim_fault_t *out)
{
    const char *fn = "hccn_cluster_add_fault";
    if (f->struct_size < sizeof(*f))
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "%s: struct_size must be sizeof(hccn_fault_t)", fn);
    if (!(f->at_s >= 0.0 && f->at_s <= 1e9))
        return hccn_rt_error(HCCN_ERR_INVALID, "%s: at_s must be in [0, 1e9] "
                             "(got %g)", fn, f->at_s);
    *out = (hccn_sim_fault_t){.kind = (hccn_sim_fault_kind_t)f->kind,
                              .link = -1, .npu = -1, .at = f->at_s,
                              .factor = 1.0};
    switch (f->kind) {
    case HCCN_FAULT_LINK_DOWN:
    case HCCN_FAULT_LINK_SLOW:
        /* An index, so that n faults cost O(n log n), not n link scans. */
        if (cl->links == NULL && f->link != NULL &&
            (cl->links = hccn_sim_link_index_new(cl->topo)) == NULL)
            return hccn_sim_fail_context("%s", fn);
        if (f->link == NULL ||
            (out->link = hccn_sim_link_index_find(cl->links, f->link)) < 0)
            return hccn_rt_error(HCCN_ERR_INVALID,
                                 "%s: no link \"%s\" in %s (name it SRC->DST "
                                 "by device names; hccn-topo -v lists them)",
                                 fn, f->link ? f->link : "(null)",
                                 cl->topo->source);
        /* At least 1e-6, as in a file (docs/topology.md, Limits): a
         * smaller one makes a transfer's time infinite. */
        if (f->kind == HCCN_FAULT_LINK_SLOW &&
            !(f->factor >= 1e-6 && f->factor <= 1.0))
            return hccn_rt_error(HCCN_ERR_INVALID,
                                 "%s: a slow link's factor must be in "
                                 "[1e-06, 1] (got %g)", fn, f->factor);
        out->factor = f->kind == HCCN_FAULT_LINK_SLOW ? f->factor : 0.0;
        return HCCN_OK;
    case HCCN_FAULT_NPU_SLOW:
    case HCCN_FAULT_NPU_FAIL:
        if (f->npu < 0 || f->npu >= cl->nranks)
            return hccn_rt_error(HCCN_ERR_INVALID,
                                 "%s: npu %d is out of range [0, %d)", fn,
                                 f->npu, cl->nranks);
        if (f->kind == HCCN_FAULT_NPU_SLOW && !(f->factor >= 1.0 && f->factor <= 1e6))
            return hccn_rt_error(HCCN_ERR_INVALID,
                                 "%s: a slow NPU's factor must be in [1, 1e6] "
                                 "(got %g)", fn, f->factor);
        out->npu = f->npu;
        if (f->kind == HCCN_FAULT_NPU_SLOW)
            out->factor = f->factor;
        return HCCN_OK;
    }
    return hccn_rt_error(HCCN_ERR_INVALID, "%s: invalid kind %d", fn,
                         (int)f->kind);
}

hccn_status_t hccn_cluster_add_fault(hccn_cluster_t *cl, const hccn_fault_t *f)
{
    hccn_status_t rc0 = hccn_rt_cluster_check("hccn_cluster_add_fault", cl);
    if (rc0 != HCCN_OK)
        return rc0;
    if (f == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "hccn_cluster_add_fault: fault is NULL");
    if (atomic_load(&cl->running))
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "hccn_cluster_add_fault: the cluster is running");
    hccn_sim_fault_t sf;
    hccn_status_t rc = fault_check(cl, f, &sf);
    if (rc != HCCN_OK)
        return rc;
    if (cl->nfaults == cl->capfaults) {
        int cap = cl->capfaults > 0 ? 2 * cl->capfaults : cl->nfaults + 16;
        hccn_sim_fault_t *n = hccn_sim_realloc(cl->faults, (size_t)cap * sizeof(*n));
        if (n == NULL)
            return hccn_sim_fail_context("hccn_cluster_add_fault");
        cl->faults = n;
        cl->capfaults = cap;
    }
    cl->faults[cl->nfaults++] = sf;
    hccn_rt_plans_clear(cl->world);   /* made under the old fault plan */
    return HCCN_OK;
}

hccn_status_t hccn_cluster_clear_faults(hccn_cluster_t *cl)
{
    hccn_status_t rc0 = hccn_rt_cluster_check("hccn_cluster_clear_faults", cl);
    if (rc0 != HCCN_OK)
        return rc0;
    if (atomic_load(&cl->running))
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "hccn_cluster_clear_faults: the cluster is running");
    cl->nfaults = cl->nfile_faults;
    hccn_rt_plans_clear(cl->world);
    return HCCN_OK;
}

