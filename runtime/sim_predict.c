/*
 * The simulation API's predictions (include/hccn/hccn_sim.h): timing-only
 * runs of a call sequence (runtime/predict.c), the selection's choice and
 * its reasons, the algorithm table and each algorithm's predicted time by
 * the cost model, and the choice a rank's last collective was given.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_sim/alloc.h"
#include "hccn/hccn_sim.h"
#include "hierarchy/cost.h"
#include "hierarchy/select.h"
#include "runtime/predict.h"
#include "runtime/proc.h"
#include "runtime/rt.h"

static int rooted(hccn_coll_t c)
{
    return c == HCCN_COLL_BROADCAST || c == HCCN_COLL_REDUCE ||
           c == HCCN_COLL_SCATTER || c == HCCN_COLL_GATHER;
}

static hccn_status_t check_call(const char *fn, const hccn_topo_t *topo,
                                const hccn_call_t *c, int i)
{
    if (topo == NULL || c == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID, "%s: %s is NULL", fn,
                             topo == NULL ? "topology" : "call");
    if (c->struct_size < sizeof(*c))
        return hccn_rt_error(HCCN_ERR_INVALID, "%s: call %d: struct_size "
                             "%zu, expected %zu", fn, i, c->struct_size,
                             sizeof(*c));
    if ((unsigned)c->coll >= HCCN_COLL_COUNT ||
        hccn_dtype_size(c->dtype) == 0)
        return hccn_rt_error(HCCN_ERR_INVALID, "%s: call %d: unknown "
                             "collective %d or dtype %d", fn, i, (int)c->coll,
                             (int)c->dtype);
    if (c->nranks < 0 || c->nranks > topo->nnpus)
        return hccn_rt_error(HCCN_ERR_INVALID, "%s: call %d: %d ranks on "
                             "%d NPUs", fn, i, c->nranks, topo->nnpus);
    int n = c->nranks ? c->nranks : topo->nnpus;
    if (rooted(c->coll) && (c->root < 0 || c->root >= n))
        return hccn_rt_error(HCCN_ERR_INVALID, "%s: call %d: root %d out of "
                             "range [0, %d)", fn, i, c->root, n);
    return HCCN_OK;
}

hccn_status_t hccn_predict(const hccn_topo_t *topo, const hccn_call_t *calls,
                           int ncalls, double *ends, hccn_predict_opts_t *o)
{
    if (ncalls < 1 || calls == NULL || ends == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_predict: no calls or "
                             "ends is NULL");
    if (o != NULL && o->struct_size < offsetof(hccn_predict_opts_t, schedule))
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_predict: opts."
                             "struct_size %zu is too small: set it to "
                             "sizeof(hccn_predict_opts_t)", o->struct_size);
    hccn_rt_pcall_t *pc = hccn_sim_malloc((size_t)ncalls * sizeof(*pc));
    if (pc == NULL)
        return hccn_sim_fail_context("hccn_predict");
    hccn_status_t rc = HCCN_OK;
    for (int i = 0; i < ncalls && rc == HCCN_OK; i++) {
        const hccn_call_t *c = &calls[i];
        rc = check_call("hccn_predict", topo, c, i);
        if (rc == HCCN_OK && c->nranks != 0 && c->nranks != topo->nnpus)
            rc = hccn_rt_error(HCCN_ERR_UNSUPPORTED, "hccn_predict: call %d:"
                               " runs on every NPU (nranks 0)", i);
        pc[i] = (hccn_rt_pcall_t){.coll = c->coll, .count = c->count,
                                  .dtype = c->dtype, .root = c->root,
                                  .inplace = c->inplace,
                                  .compress = c->compress, .spec = c->algo};
    }
    hccn_rt_popts_t po = {.no_fold = o != NULL && o->no_fold};
    if (rc == HCCN_OK)
        rc = hccn_rt_predict_opts(topo, pc, ncalls, ends, &po);
    if (rc == HCCN_OK && o != NULL) {
        o->folded = po.folded;
        snprintf(o->why, sizeof(o->why), "%s", po.folded ? "" : po.why);
        if (o->struct_size >= sizeof(*o))
            snprintf(o->schedule, sizeof(o->schedule), "%s", po.schedule);
    }
    hccn_sim_free(pc);
    return rc;
}

/* Where the first n NPUs of topo sit, as a communicator of them sees it. */
typedef struct {
    int *mem;               /* world, node, local, pod: n ints each */
    hccn_cost_place_t pl;
    hccn_hier_view_t view;
} place_t;

static hccn_status_t place_make(const hccn_topo_t *topo, int n, place_t *p)
{
    if (n > HCCN_MAX_TIMING_NPUS)
        return hccn_rt_error(HCCN_ERR_UNSUPPORTED,
                             "%s: %d NPUs: predictions take at most %d "
                             "(docs/topology.md, Limits)",
                             topo->source, n, HCCN_MAX_TIMING_NPUS);
    p->mem = hccn_sim_malloc(4 * (size_t)n * sizeof(int));
    if (p->mem == NULL)
        return hccn_sim_fail_context("%s: %d ranks", topo->source, n);
    for (int r = 0; r < n; r++)
        p->mem[r] = r;
    p->pl = (hccn_cost_place_t){topo, p->mem};
    if (hccn_hier_cost_view(&p->pl, n, p->mem + n, p->mem + 2 * n,
                            &p->view) != 0 ||
        hccn_hier_cost_pods(&p->pl, p->mem + 3 * n, &p->view) != 0) {
        hccn_sim_free(p->mem);
        return hccn_sim_fail_context("%s: %d ranks", topo->source, n);
    }
    return HCCN_OK;
}

static hccn_coll_args_t call_args(const hccn_call_t *c, int n,
                                  const place_t *p)
{
    return (hccn_coll_args_t){.coll = c->coll, .nranks = n, .count = c->count,
                              .esize = hccn_dtype_size(c->dtype),
                              .root = rooted(c->coll) ? c->root : 0,
                              .view = &p->view,
                              /* Predictions take no operator: a sum. */
                              .in_switch = hccn_hier_in_switch(
                                  p->pl.topo, p->pl.world, n, c->coll,
                                  (int)c->dtype, HCCN_SUM)};
}

/* Fills out from a selection: the row, the schedule it builds for a (its
 * per-level name), the report. */
static hccn_status_t choice_fill(const hccn_algo_t *algo,
                                 const hccn_coll_args_t *a,
                                 const char *sched_name, const char *report,
                                 hccn_choice_t *out)
{
    snprintf(out->algo, sizeof(out->algo), "%s", algo->name);
    snprintf(out->why, sizeof(out->why), "%s", report);
    if (sched_name != NULL) {
        snprintf(out->schedule, sizeof(out->schedule), "%s", sched_name);
        return HCCN_OK;
    }
    hccn_sched_t *s = hccn_hier_build(algo, a);
    if (s == NULL)
        return hccn_sim_failed("hccn_predict");
    snprintf(out->schedule, sizeof(out->schedule), "%s", s->algo);
    hccn_sched_free(s);
    return HCCN_OK;
}

/* Selects for a under spec as the runtime does and fills out. */
static hccn_status_t choose(const hccn_coll_args_t *a,
                            const hccn_hier_select_in_t *in,
                            const char *sched_name, hccn_choice_t *out)
{
    char why[256], report[1024];
    const hccn_algo_t *algo = hccn_hier_select(a, in, why, sizeof(why),
                                               report, sizeof(report));
    if (algo == NULL)   /* selection recorded why (and the status) */
        return hccn_sim_fail_context("%s", hccn_coll_name(a->coll));
    return choice_fill(algo, a, sched_name, report, out);
}

hccn_status_t hccn_predict_choice(const hccn_topo_t *topo,
                                  const hccn_call_t *call, hccn_choice_t *out)
{
    hccn_status_t rc = check_call("hccn_predict_choice", topo, call, 0);
    if (rc != HCCN_OK)
        return rc;
    if (out == NULL || out->struct_size < sizeof(*out))
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_predict_choice: out is "
                             "NULL or its struct_size is too small");
    int n = call->nranks ? call->nranks : topo->nnpus;
    place_t p;
    if ((rc = place_make(topo, n, &p)) != HCCN_OK)
        return rc;
    hccn_coll_args_t a = call_args(call, n, &p);
    int nomem;
    hccn_sim_topo_t *view = hccn_sim_topo_fault_view(topo, topo->faults,
                                                     topo->nfaults, &nomem);
    if (nomem) {
        hccn_sim_free(p.mem);
        return hccn_sim_fail_context("hccn_predict_choice");
    }
    hccn_hier_select_in_t in = {view != NULL ? view : topo, p.mem,
                                call->algo && *call->algo ? call->algo : NULL,
                                NULL};
    rc = choose(&a, &in, NULL, out);
    hccn_sim_topo_fault_view_free(view);
    hccn_sim_free(p.mem);
    return rc;
}

void hccn_rt_note_post(rt_op_t *op, const hccn_coll_args_t *a,
                       const hccn_algo_t *algo, const char *spec)
{
    hccn_comm_t *comm = op->comm;
    rt_last_choice_t *l = &comm->last;
    op->mark = comm->ctx->mark;
    l->args = *a;
    l->args.vcounts = l->args.vrcounts = NULL;   /* not kept by the call */
    l->args.vsdispls = l->args.vrdispls = NULL;
    l->args.view = &comm->sh->view;
    l->algo = algo;
    snprintf(l->sched, sizeof(l->sched), "%s", op->sched->algo);
    if (spec == NULL)
        spec = comm->algo_spec != NULL ? comm->algo_spec
                                       : getenv("HCCN_ALGO");
    snprintf(l->spec, sizeof(l->spec), "%s", spec != NULL ? spec : "");
}

hccn_status_t hccn_comm_last_choice(hccn_comm_t *comm, hccn_choice_t *out)
{
    if (hccn_rt_proc_fwd())
        return hccn_rt_fwd_last_choice(comm, out);
    hccn_status_t rc0 = hccn_rt_comm_resolve("hccn_comm_last_choice", &comm);
    if (rc0 != HCCN_OK)
        return rc0;
    if (out == NULL || out->struct_size < sizeof(*out))
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_comm_last_choice: out "
                             "is NULL, or its struct_size is too small");
    const rt_last_choice_t *l = &comm->last;
    if (l->algo == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_comm_last_choice: rank "
                             "%d has posted no collective on this "
                             "communicator", comm->rank);
    hccn_hier_select_in_t in = {hccn_rt_sel_topo(comm->ctx->cl),
                                comm->sh->world,
                                l->spec[0] ? l->spec : NULL,
                                hccn_rt_sel_cache(comm->ctx->cl)};
    hccn_status_t rc = choose(&l->args, &in, l->sched, out);
    /* The call ran what it ran, whatever the report says. */
    snprintf(out->algo, sizeof(out->algo), "%s", l->algo->name);
    return rc;
}

int hccn_algo_count(void)
{
    int n = 0;
    for (const hccn_algo_t *a = hccn_hier_algos(); a->name; a++)
        n++;
    return n;
}

hccn_status_t hccn_algo_info(int index, hccn_algo_info_t *info)
{
    if (info == NULL || info->struct_size < sizeof(*info))
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_algo_info: info is NULL "
                             "or its struct_size is too small");
    if (index < 0 || index >= hccn_algo_count())
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_algo_info: index %d out "
                             "of range [0, %d)", index, hccn_algo_count());
    const hccn_algo_t *a = &hccn_hier_algos()[index];
    info->name = a->name;
    info->description = a->description;
    info->colls = a->colls;
    info->cost_known = hccn_hier_cost_known(a->name);
    return HCCN_OK;
}

hccn_status_t hccn_predict_algo(const hccn_topo_t *topo,
                                const hccn_call_t *call, const char *algo,
                                int mode, double *seconds, int *by_engine)
{
    hccn_status_t rc = check_call("hccn_predict_algo", topo, call, 0);
    if (rc != HCCN_OK)
        return rc;
    const hccn_algo_t *al = algo != NULL ? hccn_hier_algo_find(algo) : NULL;
    if (al == NULL || seconds == NULL || mode < HCCN_PREDICT_AUTO ||
        mode > HCCN_PREDICT_MODEL)
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_predict_algo: unknown "
                             "algorithm '%s' or mode %d, or seconds is NULL",
                             algo ? algo : "(null)", mode);
    int n = call->nranks ? call->nranks : topo->nnpus, engine = 0;
    place_t p;
    if ((rc = place_make(topo, n, &p)) != HCCN_OK)
        return rc;
    hccn_coll_args_t a = call_args(call, n, &p);
    *seconds = (al->colls & 1u << call->coll)
                   ? hccn_hier_cost(al, &a, &p.pl, (hccn_cost_mode_t)mode,
                                    &engine)
                   : HCCN_COST_NONE;
    if (by_engine != NULL)
        *by_engine = engine;
    hccn_sim_free(p.mem);
    return HCCN_OK;
}
