/*
 * The cost model (see cost.h and docs/selection.md).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "device_sim/alloc.h"
#include "device_sim/engine.h"
#include "device_sim/software.h"
#include "hierarchy/cost_internal.h"
#include "hierarchy/rings.h"

/* ------------------------------------------------------------ placement --- */

int hccn_hier_cost_view(const hccn_cost_place_t *pl, int nranks, int *node,
                        int *local, hccn_hier_view_t *view)
{
    const hccn_sim_topo_t *topo = pl->topo;
    int *map = hccn_sim_malloc((size_t)topo->nnodes * sizeof(int));
    int *count = hccn_sim_calloc((size_t)topo->nnodes, sizeof(int));
    if (map == NULL || count == NULL) {
        hccn_sim_free(map);
        hccn_sim_free(count);
        return -1;
    }
    for (int n = 0; n < topo->nnodes; n++)
        map[n] = -1;
    int nnodes = 0;
    for (int r = 0; r < nranks; r++) {
        int wn = topo->npus[pl->world[r]].node;
        if (map[wn] < 0)
            map[wn] = nnodes++;
        node[r] = map[wn];
        local[r] = count[wn]++;
    }
    *view = (hccn_hier_view_t){nranks, node, local, nnodes, NULL, 0, 0, 1};
    view->channels = hccn_hier_rings_channels(topo, pl->world, nranks, view);
    if (topo->sw != NULL && topo->sw->slots > 1)
        view->slots = topo->sw->slots;
    hccn_sim_free(map);
    hccn_sim_free(count);
    return 0;
}

int hccn_hier_cost_pods(const hccn_cost_place_t *pl, int *pod,
                        hccn_hier_view_t *view)
{
    const hccn_sim_topo_t *topo = pl->topo;
    int nleaves = 0;
    view->pod = NULL;
    view->npods = 0;
    for (int n = 0; n < topo->nnodes; n++) {
        if (topo->nodes[n].leaf < 0)
            return 0;
        if (topo->nodes[n].leaf >= nleaves)
            nleaves = topo->nodes[n].leaf + 1;
    }
    int *map = hccn_sim_malloc((size_t)(nleaves > 0 ? nleaves : 1) * sizeof(int));
    if (map == NULL)
        return -1;
    for (int l = 0; l < nleaves; l++)
        map[l] = -1;
    int npods = 0;
    for (int r = 0; r < view->nranks; r++) {
        int leaf = topo->nodes[topo->npus[pl->world[r]].node].leaf;
        if (map[leaf] < 0)
            map[leaf] = npods++;
        pod[r] = map[leaf];
    }
    hccn_sim_free(map);
    view->pod = pod;
    view->npods = npods;
    return 0;
}

/* ------------------------------------------------------------- engine --- */

/* Posts rank r's steps as one batch, as the runtime's executor does: the
 * ranks' batches start together, after the call's launch. */
static hccn_sim_batch_t *post_rank(hccn_sim_engine_t *eng,
                                   const hccn_sched_t *s, int r,
                                   const hccn_cost_place_t *pl,
                                   hccn_sim_task_t *tasks)
{
    const hccn_sched_rank_t *rk = &s->ranks[r];
    const hccn_sim_npu_t *npu = &pl->topo->npus[pl->world[r]];
    for (uint32_t i = 0; i < rk->nsteps; i++) {
        hccn_sched_step_task(&rk->steps[i], npu, pl->world, &tasks[i]);
        if (tasks[i].kind != HCCN_SIM_TASK_LOCAL)
            tasks[i].key = (hccn_sim_key_t){0, 0, rk->steps[i].xfer};
    }
    hccn_sim_call_t call = hccn_hier_sched_call(s);
    return hccn_sim_post_hinted(eng, pl->world[r], tasks, (int)rk->nsteps,
                                rk->deps, NULL, (hccn_sim_key_t){0, 0, 0},
                                s->nranks, 0, NULL, &call);
}

double hccn_hier_cost_engine(const hccn_sched_t *s,
                             const hccn_cost_place_t *pl)
{
    uint32_t most = 1;
    for (int r = 0; r < s->nranks; r++)
        if (s->ranks[r].nsteps > most)
            most = s->ranks[r].nsteps;
    hccn_sim_task_t *tasks = hccn_sim_malloc(most * sizeof(*tasks));
    hccn_sim_batch_t **b = hccn_sim_calloc((size_t)s->nranks, sizeof(*b));
    hccn_sim_engine_t *eng = hccn_sim_engine_create(pl->topo, 0.0);
    double t = HCCN_COST_NONE;
    if (tasks == NULL || b == NULL || eng == NULL)
        goto out_free;
    /* Every device stays RUNNING at clock 0 until all ranks have posted,
     * so the engine settles nothing early (a device that is DONE may not
     * post: its work would start in the engine's past). Finishing them all
     * then lets the engine run the schedule to its end. */
    int ok = 1;
    for (int r = 0; r < s->nranks && ok; r++)
        ok = (b[r] = post_rank(eng, s, r, pl, tasks)) != NULL;
    hccn_sim_finish_all(eng);
    if (ok) {
        t = 0.0;
        for (int r = 0; r < s->nranks; r++)
            if (!hccn_sim_batch_done(eng, b[r]))
                t = HCCN_COST_NONE;   /* an unpaired transfer: not a schedule */
            else if (t >= 0.0 && hccn_sim_batch_end(b[r]) > t)
                t = hccn_sim_batch_end(b[r]);
    }
out_free:
    hccn_sim_engine_destroy(eng);  /* frees the batches too */
    hccn_sim_free(b);
    hccn_sim_free(tasks);
    return t;
}

/* -------------------------------------------------------------- levels --- */

/* Latency and bottleneck bandwidth of the route from NPU x to NPU y. */
static void route_figs(const hccn_sim_topo_t *topo, int x, int y,
                       double *lat, double *bw)
{
    int links[HCCN_SIM_ROUTE_MAX];
    int n = hccn_sim_topo_route(topo, x, y, links, lat);
    *bw = INFINITY;
    for (int k = 0; k < n; k++)
        if (topo->links[links[k]].bw < *bw)
            *bw = topo->links[links[k]].bw;
}

/* Keeps the worst figures of level l: the largest latency, the smallest
 * bandwidth (bw 0 = nothing seen yet). */
static void level_worst(hccn_cost_levels_t *lv, int l, double lat, double bw)
{
    if (lat > lv->alpha[l])
        lv->alpha[l] = lat;
    if (lv->bw[l] == 0.0 || bw < lv->bw[l])
        lv->bw[l] = bw;
}

/* Level 0 pairs each rank with the next rank of its node, level 1 with the
 * rank of the same local index on the next node (at[] lists the ranks by
 * node, then local index; first[n] is where node n starts). */
static void level_pairs(const hccn_cost_place_t *pl, const hccn_hier_view_t *v,
                        const int *at, const int *first,
                        hccn_cost_levels_t *lv)
{
    for (int n = 0; n < v->nnodes; n++) {
        int size = first[n + 1] - first[n];
        int next = n + 1 < v->nnodes ? first[n + 2] - first[n + 1] : 0;
        for (int i = 0; i < size; i++) {
            double lat, bw;
            int r = pl->world[at[first[n] + i]];
            if (i + 1 < size) {
                route_figs(pl->topo, r, pl->world[at[first[n] + i + 1]],
                           &lat, &bw);
                level_worst(lv, 0, lat, bw);
            }
            if (i < next) {
                route_figs(pl->topo, r, pl->world[at[first[n + 1] + i]],
                           &lat, &bw);
                level_worst(lv, 1, lat, bw);
            }
        }
    }
}

void hccn_hier_cost_levels(const hccn_cost_place_t *pl, int nranks,
                           hccn_cost_levels_t *lv)
{
    size_t n = (size_t)(nranks > 0 ? nranks : 1);
    int *mem = hccn_sim_malloc((4 * n + 2) * sizeof(int));
    memset(lv, 0, sizeof(*lv));
    hccn_hier_view_t v;
    if (mem == NULL ||
        hccn_hier_cost_view(pl, nranks, mem, mem + n, &v) != 0) {
        hccn_sim_free(mem);
        return;
    }
    int *at = mem + 2 * n, *first = mem + 3 * n;
    memset(first, 0, (n + 2) * sizeof(int));
    lv->nnodes = v.nnodes;
    lv->reduce_bw = INFINITY;
    for (int r = 0; r < nranks; r++) {
        const hccn_sim_npu_t *u = &pl->topo->npus[pl->world[r]];
        first[v.node[r] + 1]++;
        if (u->reduce_bw < lv->reduce_bw)
            lv->reduce_bw = u->reduce_bw;
        if (u->mem_bw > 0.0 && (lv->mem_bw == 0.0 || u->mem_bw < lv->mem_bw))
            lv->mem_bw = u->mem_bw;
    }
    for (int k = 0; k < v.nnodes; k++) {
        if (first[k + 1] > lv->ppn)
            lv->ppn = first[k + 1];
        first[k + 1] += first[k];
    }
    for (int r = 0; r < nranks; r++)
        at[first[v.node[r]] + v.local[r]] = r;
    level_pairs(pl, &v, at, first, lv);
    hccn_sim_free(mem);
}

/* -------------------------------------------------------------- models --- */

int hccn_hier_cost_known(const char *name)
{
    return name != NULL && hccn_hier_cm_form(name) != NULL;
}

/* The closed form of fn for a, with every rank in one group; call: what
 * the schedule would post (hccn_hier_sched_call: its launch and its
 * protocols, software.h). */
static double run_model(hccn_cm_form_fn fn, const hccn_coll_args_t *a,
                        const hccn_cost_place_t *pl, hccn_sim_call_t call)
{
    hccn_cost_levels_t lv;
    hccn_cm_t m;
    int *ident = hccn_sim_malloc((size_t)a->nranks * sizeof(int));
    double t = HCCN_COST_NONE;
    hccn_hier_cost_levels(pl, a->nranks, &lv);
    if (hccn_hier_cm_init(&m, pl, a->nranks) != 0 || ident == NULL ||
        !(lv.reduce_bw > 0.0))
        goto out;
    m.r = 1.0 / lv.reduce_bw;
    m.proto_mul = call.proto_scale;
    m.nvswitch = call.nvswitch;
    m.family = call.family;
    m.tree_bytes = call.tree_bytes;
    m.m = lv.mem_bw > 0.0 ? 1.0 / lv.mem_bw : 0.0;
    for (int r = 0; r < a->nranks; r++)
        ident[r] = r;
    hccn_cm_team_t all = {1, a->nranks, ident};
    if (a->count == 0 && a->coll != HCCN_COLL_BARRIER)
        t = 0.0; /* an empty schedule */
    else if (a->nranks == 1)
        t = a->coll == HCCN_COLL_BARRIER ? 0.0
                                         : (double)(a->count * a->esize) * m.m;
    else
        t = fn(&m, &all, a);
    if (m.failed)
        t = HCCN_COST_NONE;
    else if (pl->topo->sw != NULL && t >= 0.0) {
        /* every call's (software.h); "none" stays none */
        double l = hccn_sim_sw_launch(pl->topo->sw, m.protos,
                                      call.nvswitch);
        t = l + fmax(t, hccn_sim_sw_floor(pl->topo->sw, l));
    }
out:
    hccn_hier_cm_free(&m);
    hccn_sim_free(ident);
    return t;
}

/* What the engine would cost: steps times the transfers that can start at
 * once (flows in flight are what makes the engine slow). */
static double engine_work(const hccn_sched_t *s)
{
    double steps = 0.0, ready = 0.0;
    for (int r = 0; r < s->nranks; r++)
        steps += s->ranks[r].nsteps;
    for (uint32_t x = 0; x < s->nxfers; x++) {
        hccn_sched_ref_t snd = s->xfer_send[x], rcv = s->xfer_recv[x];
        if (s->ranks[snd.rank].steps[snd.step].ndeps == 0 &&
            s->ranks[rcv.rank].steps[rcv.step].ndeps == 0)
            ready += 1.0;
    }
    return steps * (1.0 + ready);
}

/* Builds and times the schedule: HCCN_COST_NONE when the algorithm cannot
 * run a (or no memory), TOO_BIG when limit is set and timing it would cost
 * more than HCCN_COST_ENGINE_MAX_WORK. */
#define TOO_BIG (-2.0)

static double run_engine(const hccn_algo_t *algo, const hccn_coll_args_t *a,
                         const hccn_cost_place_t *pl, int limit)
{
    double t = HCCN_COST_NONE;
    hccn_sched_t *s = hccn_hier_build(algo, a);
    if (s != NULL && limit && engine_work(s) > HCCN_COST_ENGINE_MAX_WORK)
        t = TOO_BIG;
    else if (s != NULL)
        t = hccn_hier_cost_engine(s, pl);
    hccn_sched_free(s);
    return t;
}

static double predict(const hccn_algo_t *algo, hccn_cm_form_fn fn,
                      const hccn_coll_args_t *a, const hccn_cost_place_t *pl,
                      hccn_cost_mode_t mode, int *engine_used)
{
    double t = TOO_BIG;
    if (mode == HCCN_COST_ENGINE ||
        (mode == HCCN_COST_AUTO && a->nranks <= HCCN_COST_ENGINE_MAX_RANKS))
        t = run_engine(algo, a, pl, mode == HCCN_COST_AUTO);
    *engine_used = t >= 0.0;
    /* The v-collectives have no closed forms: the engine or nothing. */
    if (hccn_coll_is_v(a->coll))
        return t == TOO_BIG ? HCCN_COST_NONE : t;
    hccn_sim_call_t call = hccn_hier_algo_call(algo, a);
    return t == TOO_BIG ? run_model(fn, a, pl, call) : t;
}

double hccn_hier_cost(const hccn_algo_t *algo, const hccn_coll_args_t *a,
                      const hccn_cost_place_t *pl, hccn_cost_mode_t mode,
                      int *engine_used)
{
    hccn_cm_form_fn fn = algo->cost;
    int used = 0;
    /* An alltoallv schedule is one rank's view (coll.h): no rank can
     * predict the whole call, so none does and every rank chooses alike. */
    if ((unsigned)a->coll >= HCCN_COLL_COUNT ||
        !(algo->colls & 1u << a->coll) || a->nranks < 1 ||
        (fn == NULL && mode != HCCN_COST_ENGINE) ||
        a->coll == HCCN_COLL_ALLTOALLV)
        return HCCN_COST_NONE;
    hccn_coll_args_t args = *a;
    args.levels = hccn_hier_algo_levels(algo);   /* for fn */
    hccn_hier_view_t view;
    int *mem = NULL;
    if (args.view == NULL) {   /* hierarchical algorithms need one */
        mem = hccn_sim_malloc(3 * (size_t)a->nranks * sizeof(int));
        if (mem == NULL ||
            hccn_hier_cost_view(pl, a->nranks, mem, mem + a->nranks,
                                &view) != 0 ||
            hccn_hier_cost_pods(pl, mem + 2 * a->nranks, &view) != 0) {
            hccn_sim_free(mem);
            return HCCN_COST_NONE;
        }
        args.view = &view;
    }
    double t = predict(algo, fn, &args, pl, mode, &used);
    if (engine_used != NULL)
        *engine_used = used;
    hccn_sim_free(mem);
    return t;
}
