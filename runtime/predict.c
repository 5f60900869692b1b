/*
 * Timing-only runs (see predict.h). Every rank posts call i + 1 with call
 * i as its stream predecessor, so it starts at the end of call i on that
 * rank, which is the clock a blocking call would have left; the ranks of
 * one call join as in the runtime. After each call is posted every rank
 * waits for its part, which lets the engine run the call as far as it may
 * before the next is posted; at the end every device finishes and the
 * engine runs the rest.
 *
 * Folded (predict.h), only the ranks played post (node 0's, or those of
 * every leaf's first node); their transfers name the real peers (for the
 * routes) and are keyed by the sending copy's rank and step, so that the
 * two halves of a transfer between copies pair up as the real transfer's
 * halves do.
 *
 * Blocks: where the topology folds, the calls are cut where no later call
 * could replay an earlier one (pred_cuts), and each block runs on an
 * engine of its own from the end of the block before, folded if all its
 * schedules fold (docs/performance.md, "Folding block by block", says
 * why the times are those of one engine). predict_post.c makes and posts
 * each call's tasks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_sim/alloc.h"
#include "runtime/predict_int.h"
#include "runtime/rt.h"

typedef hccn_rt_pred_t pred_t;

/* The next block runs unfolded (the topology's copies are kept). */
static void pred_unfold(pred_t *p)
{
    p->rep = p->link_map = NULL;
    p->div = NULL;
    hccn_sched_fold_free(&p->fold);
    p->fold_keys = 0;
    p->unfold = 0;
}

/* A new engine for a block of calls that starts at t0 (the end of the
 * block before, 0 for the first): lean, with the file's faults; folded
 * (only the devices played run: node 0's, or every leaf's first node's)
 * if p->rep is set. */
static hccn_status_t pred_engine(pred_t *p, double t0)
{
    hccn_sim_engine_destroy(p->eng);   /* frees the batches too */
    memset(p->tail, 0, (size_t)p->n * sizeof(*p->tail));
    memset(p->hints, 0, (size_t)p->n * sizeof(*p->hints));
    p->hinted = NULL;
    p->eng = hccn_sim_engine_create(p->topo, 0.0);
    if (p->eng == NULL)
        return hccn_sim_fail_context("predict");
    /* Only batch ends are read: tasks go as their batch completes. */
    hccn_sim_engine_set_lean(p->eng, 1);
    /* The file's faults, replayed as a cluster run replays them. */
    if (hccn_sim_engine_set_faults(p->eng, p->topo->faults,
                                   p->topo->nfaults) != 0 ||
        hccn_sim_engine_set_fold(p->eng, p->rep, p->link_map, p->div) != 0)
        return hccn_sim_fail_context("predict");
    hccn_sim_engine_reset(p->eng);
    p->nrun = 0;
    for (int r = 0; r < p->n; r++) {
        if (p->rep == NULL || p->rep[r] == r)
            p->run[p->nrun++] = r;
        else
            hccn_sim_finish(p->eng, r);
    }
    /* Every rank's clock at t0 (0 + t0 is t0: no fault plan slows a
     * device, or the run is a single block starting at 0). */
    for (int j = 0; j < p->nrun && t0 > 0.0; j++)
        hccn_sim_advance(p->eng, p->run[j], t0);
    return HCCN_OK;
}

typedef int topo_fold_fn(const hccn_sim_topo_t *topo, int *rep,
                         int *link_map, double *link_div, char *why,
                         size_t len);

/* The topology's copies by fold (hccn_sim_topo_fold or _leaves) in *rep,
 * *link and *div, or NULLs there if it does not fold (why says why). */
static hccn_status_t pred_copies(pred_t *p, topo_fold_fn *fold, int **rep,
                                 int **link, double **div, char *why,
                                 size_t len)
{
    size_t nl = (size_t)p->topo->nlinks + 1;
    *rep = hccn_sim_malloc((size_t)p->n * sizeof(**rep));
    *link = hccn_sim_malloc(nl * sizeof(**link));
    *div = hccn_sim_malloc(nl * sizeof(**div));
    if (*rep == NULL || *link == NULL || *div == NULL)
        return hccn_sim_fail_context("predict");
    if (fold(p->topo, *rep, *link, *div, why, len) != 0) {
        hccn_sim_free(*rep);
        hccn_sim_free(*link);
        hccn_sim_free(*div);
        *rep = *link = NULL;
        *div = NULL;
    }
    return HCCN_OK;
}

/* Folds the run if the topology allows it (the schedules are checked as
 * they are built): onto node 0, or for the blocks that do not fold so,
 * onto the first node of every leaf. */
static hccn_status_t pred_fold(pred_t *p)
{
    char why[160];
    hccn_status_t rc = pred_copies(p, hccn_sim_topo_fold, &p->fold_rep,
                                   &p->fold_link, &p->fold_div, p->why,
                                   sizeof(p->why));
    for (int l = 0; rc == HCCN_OK && p->fold_rep != NULL &&
                    l < p->topo->nlinks; l++)
        p->fold_shared |= p->fold_div[l] != 1.0;
    if (rc == HCCN_OK)
        rc = pred_copies(p, hccn_sim_topo_fold_leaves, &p->leaf_rep,
                         &p->leaf_link, &p->leaf_div, why, sizeof(why));
    return rc;
}

static hccn_status_t pred_init(pred_t *p, const hccn_sim_topo_t *topo,
                               int fold)
{
    memset(p, 0, sizeof(*p));
    p->topo = topo;
    p->n = topo->nnpus;
    p->world = hccn_sim_malloc((size_t)p->n * sizeof(int));
    p->node_local = hccn_sim_malloc(3 * (size_t)p->n * sizeof(int));
    p->tail = hccn_sim_calloc((size_t)p->n, sizeof(*p->tail));
    p->run = hccn_sim_malloc((size_t)p->n * sizeof(*p->run));
    p->hints = hccn_sim_calloc((size_t)p->n, sizeof(*p->hints));
    p->select_cache = hccn_hier_cache_new();
    int nomem;
    p->sel_topo = hccn_sim_topo_fault_view(topo, topo->faults, topo->nfaults,
                                           &nomem);
    if (p->world == NULL || p->node_local == NULL || p->tail == NULL ||
        p->run == NULL ||
        p->hints == NULL || p->select_cache == NULL || nomem)
        return hccn_sim_fail_context("predict");
    snprintf(p->why, sizeof(p->why), "not asked to");
    hccn_status_t rc = fold ? pred_fold(p) : HCCN_OK;
    if (rc != HCCN_OK)
        return rc;
    for (int r = 0; r < p->n; r++)
        p->world[r] = r;
    hccn_cost_place_t pl = {topo, p->world};
    if (hccn_hier_cost_view(&pl, p->n, p->node_local, p->node_local + p->n,
                            &p->view) != 0 ||
        hccn_hier_cost_pods(&pl, p->node_local + 2 * p->n, &p->view) != 0)
        return hccn_sim_fail_context("predict");
    return HCCN_OK;
}

static void pred_free(pred_t *p)
{
    hccn_sim_engine_destroy(p->eng);   /* frees the batches too */
    hccn_sched_free(p->sched);
    pred_unfold(p);
    hccn_sim_free(p->fold_rep);
    hccn_sim_free(p->fold_link);
    hccn_sim_free(p->fold_div);
    hccn_sim_free(p->leaf_rep);
    hccn_sim_free(p->leaf_link);
    hccn_sim_free(p->leaf_div);
    hccn_sim_free(p->run);
    hccn_sim_free(p->call_tasks);
    hccn_sim_free(p->tasks);
    hccn_sim_free(p->hints);
    hccn_sim_free(p->tail);
    hccn_sim_free(p->node_local);
    hccn_sim_free(p->world);
    hccn_hier_cache_free(p->select_cache);
    hccn_sim_topo_fault_view_free(p->sel_topo);
}

/* A fault of the plan fails a call, as it does with data: the error of
 * the first rank whose own NPU or link failed (HCCN_ERR_FAULT), else of
 * the first that failed because of another (HCCN_ERR_REMOTE). */
static hccn_status_t call_status(pred_t *p, hccn_sim_batch_t *const *bs,
                                 const hccn_rt_pcall_t *c, int i)
{
    char why[160];
    int first = -1;
    for (int j = 0; j < p->nrun; j++) {
        hccn_status_t st = hccn_sim_batch_status(p->eng, bs[j], NULL, 0);
        if (st == HCCN_ERR_FAULT || (st != HCCN_OK && first < 0))
            first = j;
        if (st == HCCN_ERR_FAULT)
            break;
    }
    if (first < 0)
        return HCCN_OK;
    hccn_status_t st = hccn_sim_batch_status(p->eng, bs[first], why,
                                             sizeof(why));
    return hccn_rt_error(st, "predict: call %d (%s) on rank %d: %s", i,
                         hccn_coll_name(c->coll), p->run[first], why);
}

/* Calls [s, e) on p's engine; p->unfold if a schedule did not fold. */
static hccn_status_t pred_run(pred_t *p, const hccn_rt_pcall_t *calls,
                              int s, int e, double *ends)
{
    int k = p->nrun, ncalls = e - s;
    hccn_sim_batch_t **all = NULL;
    int *devs = hccn_sim_malloc((size_t)k * sizeof(int));
    hccn_status_t rc = HCCN_OK;
    if (devs == NULL || (ncalls > 0 && (all = hccn_sim_calloc((size_t)ncalls * k,
                                                     sizeof(*all))) == NULL))
        rc = hccn_sim_fail_context("predict");
    for (int j = 0; rc == HCCN_OK && j < k; j++)
        devs[j] = p->run[j];
    for (int j = 0; j < ncalls && rc == HCCN_OK; j++) {
        /* No later call can replay the block's last (blocks end where
         * none can: pred_cuts): its recording would only cost memory (a
         * what-if study's one call on 65 536 ranks). */
        if (j == ncalls - 1)
            hccn_sim_engine_set_recording(p->eng, 0);
        rc = hccn_rt_pred_post(p, &calls[s + j], s + j);
        if (p->unfold)
            break;
        /* Held until the run ends, to read their end times. */
        for (int x = 0; x < k && rc == HCCN_OK; x++) {
            all[(size_t)j * k + x] = p->tail[p->run[x]];
            hccn_sim_batch_retain(p->eng, p->tail[p->run[x]]);
        }
        /* Every rank waits for its part, as a blocking call does, so the
         * engine runs the call as far as it can before the next is posted
         * (no further than the first rank to finish: it could post) and
         * the lean engine frees the tasks of the parts that are done. */
        if (rc == HCCN_OK)
            hccn_sim_wait_begin_many(p->eng, devs, all + (size_t)j * k, k);
    }
    hccn_sim_free(devs);
    if (rc == HCCN_OK && !p->unfold) {
        hccn_sim_finish_all(p->eng);
        for (int j = 0; j < ncalls && rc == HCCN_OK; j++) {
            int i = s + j;
            ends[i] = 0.0;
            for (int x = 0; x < k; x++) {
                const hccn_sim_batch_t *b = all[(size_t)j * k + x];
                if (!hccn_sim_batch_done(p->eng, b)) {
                    rc = hccn_rt_error(HCCN_ERR_INTERNAL, "predict: call %d "
                                       "never completed on rank %d", i,
                                       p->run[x]);
                    break;
                }
                if (hccn_sim_batch_end(b) > ends[i])
                    ends[i] = hccn_sim_batch_end(b);
            }
            if (rc == HCCN_OK)
                rc = call_status(p, all + (size_t)j * k, &calls[i], i);
        }
    }
    hccn_sim_free(all);
    return rc;
}

/* Where the run may start a new engine (a block) before call k: where no
 * call from k on has the size in bytes (count x element size) of a call
 * before k, so none could have been replayed from a call before k (a
 * replay needs the same tasks, and every task's bytes are a share of the
 * call's). cut[k] = 1 for those k in 1 .. n-1 (cut has n + 1 entries);
 * none with compression (it changes the bytes on the wire) or past
 * PRED_CLASSES sizes. */
#define PRED_CLASSES 64
static void pred_cuts(const hccn_rt_pcall_t *calls, int n, int *cut)
{
    uint64_t size[PRED_CLASSES];
    int first[PRED_CLASSES], last[PRED_CLASSES], nc = 0;
    memset(cut, 0, (size_t)(n + 1) * sizeof(*cut));
    for (int i = 0; i < n; i++) {
        uint64_t b = calls[i].count * hccn_dtype_size(calls[i].dtype);
        int c = 0;
        while (c < nc && size[c] != b)
            c++;
        if (c == PRED_CLASSES || calls[i].compress != 0)
            return;             /* one block */
        if (c == nc) {
            size[nc] = b;
            first[nc++] = i;
        }
        last[c] = i;
    }
    /* open: the sizes met before k and again from k on. */
    for (int c = 0; c < nc; c++) {
        cut[first[c] + 1]++;
        cut[last[c] + 1]--;
    }
    for (int k = 1, open = 0; k <= n; k++) {
        open += cut[k];
        cut[k] = k < n && open == 0;
    }
}

/* Calls [s, e), starting at t0: folded where the topology and every
 * schedule of the block allow, else again unfolded. Counts the block's
 * calls run folded in *nfolded; the first reason not to goes to *why. */
static hccn_status_t pred_block(pred_t *p, const hccn_rt_pcall_t *calls,
                                int s, int e, double t0, double *ends,
                                int *nfolded, char *why, size_t len)
{
    /* Onto node 0, else onto every leaf's first node, else unfolded. */
    int *reps[3] = {p->fold_rep, p->leaf_rep, NULL};
    int *links[3] = {p->fold_link, p->leaf_link, NULL};
    double *divs[3] = {p->fold_div, p->leaf_div, NULL};
    char first_why[sizeof(p->why)] = "";
    hccn_status_t rc = HCCN_OK;
    for (int k = 0; k < 3 && rc == HCCN_OK; k++) {
        if (k < 2 && reps[k] == NULL)
            continue;
        p->rep = reps[k];
        p->link_map = links[k];
        p->div = divs[k];
        /* The schedule that did not fold is kept: the next run builds
         * it first. */
        rc = pred_engine(p, t0);
        if (rc == HCCN_OK)
            rc = pred_run(p, calls, s, e, ends);
        if (rc != HCCN_OK || !p->unfold)
            break;
        if (first_why[0] == '\0')
            snprintf(first_why, sizeof(first_why), "%s", p->why);
        pred_unfold(p);
    }
    if (rc == HCCN_OK && p->rep == NULL && first_why[0] != '\0' &&
        why[0] == '\0')
        snprintf(why, len, "%s", first_why);
    if (p->rep != NULL)
        *nfolded += e - s;
    pred_unfold(p);
    return rc;
}

/* Calls [0, ncalls) in the blocks that cut (pred_cuts) marks. */
static hccn_status_t run_blocks(pred_t *p, const hccn_rt_pcall_t *calls,
                                int ncalls, const int *cut, double *ends,
                                int *nfolded, char *why, size_t len)
{
    hccn_status_t rc;
    int s = 0;
    do {                        /* once with no calls */
        int e = s + 1;
        while (e < ncalls && !cut[e])
            e++;
        if (e > ncalls)
            e = ncalls;
        rc = pred_block(p, calls, s, e, s > 0 ? ends[s - 1] : 0.0, ends,
                        nfolded, why, len);
        s = e;
    } while (rc == HCCN_OK && s < ncalls);
    return rc;
}

/* The blocks of the run, one after another, each starting when the one
 * before ended (on every rank: a collective starts when its last rank
 * calls it). Unfolded runs are one block. Where the calls that could be
 * recorded (all but the last) hold more tasks than the engine keeps
 * recorded, the run is done again as one block: a recording made before
 * a cut could then have pushed out one made after it. */
static hccn_status_t pred_blocks(pred_t *p, const hccn_rt_pcall_t *calls,
                                 int ncalls, double *ends, int *nfolded,
                                 char *why, size_t len)
{
    int *cut = hccn_sim_calloc((size_t)ncalls + 1, sizeof(*cut));
    p->call_tasks = hccn_sim_calloc((size_t)ncalls + 1, sizeof(long));
    if (cut == NULL || p->call_tasks == NULL) {
        hccn_sim_free(cut);
        return hccn_sim_fail_context("predict");
    }
    int cuts = 0;
    if (p->fold_rep != NULL || p->leaf_rep != NULL)
        pred_cuts(calls, ncalls, cut);
    for (int k = 1; k < ncalls; k++)
        cuts += cut[k];
    hccn_status_t rc = run_blocks(p, calls, ncalls, cut, ends, nfolded, why,
                                  len);
    long held = 0;
    for (int i = 0; i + 1 < ncalls; i++)
        held += p->call_tasks[i];
    if (rc == HCCN_OK && cuts > 0 && held > HCCN_SIM_REPLAY_MAX) {
        memset(cut, 0, (size_t)(ncalls + 1) * sizeof(*cut));
        *nfolded = 0;
        why[0] = '\0';
        rc = run_blocks(p, calls, ncalls, cut, ends, nfolded, why, len);
    }
    hccn_sim_free(cut);
    return rc;
}

hccn_status_t hccn_rt_predict_opts(const hccn_sim_topo_t *topo,
                                   const hccn_rt_pcall_t *calls, int ncalls,
                                   double *ends, hccn_rt_popts_t *o)
{
    int fold = o == NULL || !o->no_fold, nfolded = 0;
    char why[sizeof(o->why)] = "";
    pred_t p;
    if (topo->nnpus > HCCN_MAX_TIMING_NPUS)
        return hccn_rt_error(HCCN_ERR_UNSUPPORTED,
                             "%s: %d NPUs: timing-only runs take at most %d "
                             "(docs/topology.md, Limits)", topo->source,
                             topo->nnpus, HCCN_MAX_TIMING_NPUS);
    hccn_status_t rc = pred_init(&p, topo, fold);
    if (rc == HCCN_OK)
        rc = pred_blocks(&p, calls, ncalls, ends, &nfolded, why, sizeof(why));
    if (o != NULL) {
        o->folded = (p.fold_rep != NULL || p.leaf_rep != NULL) &&
                    why[0] == '\0';
        o->folded_calls = nfolded;
        o->built_folded = p.built_folded;
        if (p.fold_rep == NULL && p.leaf_rep == NULL)
            snprintf(o->why, sizeof(o->why), "%s", p.why);
        else if (why[0] != '\0' && nfolded > 0)
            snprintf(o->why, sizeof(o->why), "%.200s (%d of %d calls "
                     "folded)", why, nfolded, ncalls);
        else
            snprintf(o->why, sizeof(o->why), "%s", why);
        snprintf(o->schedule, sizeof(o->schedule), "%s", p.last_sched);
    }
    pred_free(&p);
    return rc;
}

hccn_status_t hccn_rt_predict(const hccn_sim_topo_t *topo,
                              const hccn_rt_pcall_t *calls, int ncalls,
                              double *ends)
{
    return hccn_rt_predict_opts(topo, calls, ncalls, ends, NULL);
}
