/*
 * Algorithm selection (see select.h and docs/selection.md): an override
 * from the spec, else the candidate the cost model predicts to be fastest,
 * ties going to the earlier row of the table.
 *
 * Predictions are kept in a cache keyed by everything they depend on: the
 * topology (by content, see topo_print), the collective, count, element
 * size, root, chunk size, the communicator's NPUs and, for allgatherv and
 * reduce_scatterv, the block counts (hashed, then compared in full). An
 * entry holds the rows priced so far: a choice prices only the rows it
 * may take (pick_default), a report every row.
 * Displacements are left out: they move bytes, not time. Selection runs on
 * every call of every rank; the first rank to ask computes, under the
 * cache's lock, and the others find the answer. Only deterministic inputs
 * go in, so every rank chooses the same. The cache belongs to one cluster
 * (or one timing-only predictor): two clusters in one process neither
 * share answers nor wait for each other's lock.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_sim/alloc.h"
#include "device_sim/fail.h"
#include "device_sim/software.h"
#include "hierarchy/algo_spec.h"
#include "hierarchy/cost.h"
#include "hierarchy/select.h"

#define MAX_ALGOS 32        /* rows of the table priced (the rest: n/a) */
#define UNPRICED (-3.0)     /* a row not priced yet (only asked rows are) */
#define CACHE_SLOTS 512
#define PRINT_ITEMS 65536   /* topology items hashed (sampled beyond) */

typedef struct {
    uint64_t topo;          /* topo_print */
    hccn_coll_t coll;
    uint64_t count, chunk;
    size_t esize;
    int root, nranks;
    int in_switch;          /* hccn_coll_args_t.in_switch */
    uint64_t world_hash;
    int *world;             /* NULL: slot unused */
    uint64_t vhash;         /* v-collectives: hash of vcounts */
    uint64_t *vcounts;      /* nranks entries, or NULL */
    unsigned long used;     /* for eviction: the least recently used goes */
    double t[MAX_ALGOS];    /* per table row; HCCN_COST_NONE = n/a,
                               UNPRICED */
} slot_t;

struct hccn_hier_cache {
    pthread_mutex_t lock;
    slot_t slot[CACHE_SLOTS];
    unsigned long clock;
    hccn_spec_cache_t specs;
};

/* ------------------------------------------------------------- hashing --- */

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

static uint64_t mix_str(uint64_t h, const char *s)
{
    return s != NULL ? mix(h, s, strlen(s) + 1) : mix(h, "", 1);
}

/* A fingerprint of what the predictions read from the topology: sizes,
 * names, every link's ends, bandwidth and latency, every device's latency
 * and every NPU's speeds (an even sample of PRINT_ITEMS of each beyond).
 * Content, not address: a topology freed and another loaded in its place
 * must not inherit its predictions. */
static uint64_t topo_print(const hccn_sim_topo_t *t)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    int sizes[4] = {t->nnodes, t->nnpus, t->ndevs, t->nlinks};
    h = mix_str(mix_str(mix(h, sizes, sizeof(sizes)), t->name), t->source);
    for (long k = 0; k < PRINT_ITEMS && k < t->nlinks; k++) {
        const hccn_sim_link_t *l =
            &t->links[t->nlinks <= PRINT_ITEMS ? k : k * t->nlinks / PRINT_ITEMS];
        double v[2] = {l->bw, l->lat};
        h = mix(mix(h, &l->src, sizeof(int) * 2), v, sizeof(v));
    }
    for (long k = 0; k < PRINT_ITEMS && k < t->ndevs; k++)
        h = mix(h, &t->devs[t->ndevs <= PRINT_ITEMS ? k
                                                    : k * t->ndevs / PRINT_ITEMS]
                        .lat,
                sizeof(double));
    for (long k = 0; k < PRINT_ITEMS && k < t->nnpus; k++) {
        const hccn_sim_npu_t *u =
            &t->npus[t->nnpus <= PRINT_ITEMS ? k : k * t->nnpus / PRINT_ITEMS];
        double v[2] = {u->reduce_bw, u->mem_bw};
        h = mix(h, v, sizeof(v));
    }
    return h;
}

/* --------------------------------------------------------------- cache --- */

static int slot_matches(const slot_t *s, const slot_t *key)
{
    return s->world != NULL && s->topo == key->topo &&
           s->coll == key->coll && s->count == key->count &&
           s->chunk == key->chunk && s->esize == key->esize &&
           s->root == key->root && s->nranks == key->nranks &&
           s->in_switch == key->in_switch &&
           s->world_hash == key->world_hash && s->vhash == key->vhash &&
           (s->vcounts == NULL) == (key->vcounts == NULL) &&
           memcmp(s->world, key->world, (size_t)key->nranks * sizeof(int)) ==
               0 &&
           (key->vcounts == NULL ||
            memcmp(s->vcounts, key->vcounts,
                   (size_t)key->nranks * sizeof(uint64_t)) == 0);
}

/* Keeps key in victim, with copies of its arrays; 0, or -1 on no memory
 * (victim unchanged). */
static int slot_store(slot_t *victim, const slot_t *key)
{
    size_t n = (size_t)key->nranks;
    int *world = hccn_sim_malloc(n * sizeof(int));
    uint64_t *vc = key->vcounts ? hccn_sim_malloc(n * sizeof(uint64_t)) : NULL;
    if (world == NULL || (key->vcounts != NULL && vc == NULL)) {
        hccn_sim_free(world);
        hccn_sim_free(vc);
        return -1;
    }
    memcpy(world, key->world, n * sizeof(int));
    if (vc != NULL)
        memcpy(vc, key->vcounts, n * sizeof(uint64_t));
    hccn_sim_free(victim->world);
    hccn_sim_free(victim->vcounts);
    *victim = *key;
    victim->world = world;
    victim->vcounts = vc;
    return 0;
}

/* The predictions for a of the rows asked for (want[i]; every row when
 * want is NULL) not priced yet in t. */
static void price(double *t, const hccn_coll_args_t *a,
                  const hccn_cost_place_t *pl, const int *want)
{
    int i = 0;
    for (const hccn_algo_t *al = hccn_hier_algos(); al->name; al++, i++)
        if (i < MAX_ALGOS && t[i] == UNPRICED && (want == NULL || want[i]))
            t[i] = hccn_hier_cost(al, a, pl, HCCN_COST_AUTO, NULL);
    for (; i < MAX_ALGOS; i++)
        t[i] = HCCN_COST_NONE;
}

/* The predictions for key of the rows asked for, computed into its slot,
 * or into a free (or the least recently used) one on a miss. Called with
 * the lock held; copies the slot's (rows not asked for may be UNPRICED)
 * to t. */
static void predictions(hccn_hier_cache_t *c, slot_t *key,
                        const hccn_coll_args_t *a,
                        const hccn_cost_place_t *pl, const int *want,
                        double *t)
{
    slot_t *s = NULL, *victim = &c->slot[0];
    for (int i = 0; i < CACHE_SLOTS && s == NULL; i++) {
        if (slot_matches(&c->slot[i], key))
            s = &c->slot[i];
        else if (c->slot[i].used < victim->used)
            victim = &c->slot[i];
    }
    if (s == NULL) {
        price(key->t, a, pl, want);
        s = slot_store(victim, key) == 0 ? victim
                                         : key;   /* answer, keep nothing */
    } else {
        price(s->t, a, pl, want);
    }
    s->used = ++c->clock;
    memcpy(t, s->t, sizeof(s->t));
}

/* Predicted seconds for a of the rows of the table asked for (want[i];
 * every row when want is NULL) into t, HCCN_COST_NONE where there is
 * none: from the cache when it has them, else those t does not hold yet
 * (UNPRICED). Rows not asked for may be UNPRICED. */
static void predict_all(const hccn_coll_args_t *a,
                        const hccn_hier_select_in_t *in, const int *want,
                        double *t)
{
    int rooted = a->coll == HCCN_COLL_BROADCAST ||
                 a->coll == HCCN_COLL_REDUCE ||
                 a->coll == HCCN_COLL_SCATTER || a->coll == HCCN_COLL_GATHER;
    slot_t key = {
        .topo = topo_print(in->topo), .coll = a->coll, .count = a->count,
        .chunk = a->chunk_bytes, .esize = a->esize,
        .root = rooted ? a->root : 0, .nranks = a->nranks,
        .in_switch = a->in_switch,
        .world_hash = mix(0xcbf29ce484222325ULL, in->world,
                          (size_t)a->nranks * sizeof(int)),
        .world = (int *)in->world};
    /* Alltoallv has no predictions (cost.h), so its counts need no key. */
    if (hccn_coll_is_v(a->coll) && a->coll != HCCN_COLL_ALLTOALLV &&
        a->vcounts != NULL) {
        key.vcounts = (uint64_t *)a->vcounts;
        key.vhash = mix(0xcbf29ce484222325ULL, a->vcounts,
                        (size_t)a->nranks * sizeof(uint64_t));
    }
    hccn_cost_place_t pl = {in->topo, in->world};
    if (in->cache == NULL) {
        price(t, a, &pl, want);
        return;
    }
    for (int i = 0; i < MAX_ALGOS; i++)
        key.t[i] = UNPRICED;
    pthread_mutex_lock(&in->cache->lock);
    predictions(in->cache, &key, a, &pl, want, t);
    pthread_mutex_unlock(&in->cache->lock);
}

hccn_hier_cache_t *hccn_hier_cache_new(void)
{
    hccn_hier_cache_t *c = hccn_sim_calloc(1, sizeof(*c));
    if (c != NULL && pthread_mutex_init(&c->lock, NULL) != 0) {
        hccn_sim_free(c);
        c = NULL;
    }
    return c;
}

void hccn_hier_cache_free(hccn_hier_cache_t *c)
{
    if (c == NULL)
        return;
    for (int i = 0; i < CACHE_SLOTS; i++) {
        hccn_sim_free(c->slot[i].world);
        hccn_sim_free(c->slot[i].vcounts);
    }
    hccn_hier_spec_cache_clear(&c->specs);
    pthread_mutex_destroy(&c->lock);
    hccn_sim_free(c);
}

/* The parsed override of in, through its cache when it has one. */
static int spec_get(const hccn_hier_select_in_t *in, hccn_algo_spec_t *spec,
                    char *why, size_t len)
{
    if (in->cache == NULL)
        return hccn_hier_spec_get(NULL, in->spec, spec, why, len);
    pthread_mutex_lock(&in->cache->lock);
    int rc = hccn_hier_spec_get(&in->cache->specs, in->spec, spec, why, len);
    pthread_mutex_unlock(&in->cache->lock);
    return rc;
}

/* ----------------------------------------------------------- selection --- */

/* The most ranks of in's communicator (a->nranks of them) on one node:
 * from the call's view where it has one (a rank's index on its node), else
 * counted over the topology's nodes; a->nranks when neither is known. */
static int node_most(const hccn_coll_args_t *a,
                     const hccn_hier_select_in_t *in)
{
    const hccn_sim_topo_t *topo = in->topo;
    int most = 0;
    if (a->view != NULL && a->view->local != NULL) {
        for (int r = 0; r < a->nranks; r++)
            most = a->view->local[r] >= most ? a->view->local[r] + 1 : most;
        return most;
    }
    int *on = in->world != NULL && topo != NULL
                  ? hccn_sim_calloc((size_t)topo->nnodes, sizeof(int))
                  : NULL;
    if (on == NULL)
        return a->nranks;
    for (int r = 0; r < a->nranks; r++) {
        int k = ++on[topo->npus[in->world[r]].node];
        most = k > most ? k : most;
    }
    hccn_sim_free(on);
    return most;
}

/* Whether the default selection may pick al for a, most of whose ranks
 * on one node are most (see all_pairs and node_pairs). */
static int auto_ok(const hccn_algo_t *al, const hccn_coll_args_t *a,
                   int most)
{
    if ((al->all_pairs & 1u << a->coll) && a->nranks > HCCN_SELECT_PAIRS_MAX)
        return 0;
    return !(al->node_pairs & 1u << a->coll) ||
           most <= HCCN_SELECT_PAIRS_MAX || hccn_hier_nvswitch_call(al, a);
}

/* Under a library's stack (the topology names a preset), the default
 * choice of allreduce, reduce_scatter and allgather keeps to the
 * library's own algorithms (docs/software.md, docs/selection.md): its
 * multi-channel ring (rings), its tree, and the in-switch rows where a
 * switch reduces the call; a stack whose library has most of the table
 * (all_algorithms: mpi) is not restricted. 1 when the choice is so
 * restricted. */
static int library_only(const hccn_coll_args_t *a, const hccn_sim_topo_t *topo)
{
    const hccn_sim_sw_t *sw = topo != NULL ? topo->sw : NULL;
    return sw != NULL && sw->stack[0] != '\0' && !sw->all_algorithms &&
           strcmp(sw->stack, "none") != 0 &&
           (a->coll == HCCN_COLL_ALLREDUCE ||
            a->coll == HCCN_COLL_REDUCE_SCATTER ||
            a->coll == HCCN_COLL_ALLGATHER);
}

/* 1 when the library runs a's allreduce with its all-pairs schedule:
 * no larger than the stack's allpairs_max_bytes, on one node whose NPUs
 * are all linked pairwise (RCCL's MSCCL on MI300X: docs/software.md). */
static int library_allpairs(const hccn_coll_args_t *a,
                            const hccn_hier_select_in_t *in)
{
    const hccn_sim_topo_t *topo = in->topo;
    if (a->coll != HCCN_COLL_ALLREDUCE || in->world == NULL ||
        (double)(a->count * a->esize) > topo->sw->allpairs_max_bytes)
        return 0;
    int node = topo->npus[in->world[0]].node;
    for (int r = 1; r < a->nranks; r++)
        if (topo->npus[in->world[r]].node != node)
            return 0;
    return topo->nodes[node].fabric == HCCN_SIM_FABRIC_MESH;
}

/* may[i]: 1 when the default choice may take row i (not by name only;
 * under library_only, one of the library's algorithms that applies, and
 * "mesh" where allpairs). */
static void default_rows(const hccn_coll_args_t *a, int library,
                         int allpairs, int *may)
{
    static const struct {
        const char *name;
        int need;           /* in_switch bits that must all be set */
    } family[] = {
        {"rings", 0}, {"tree", 0}, {"nvls", HCCN_IN_SWITCH_ONE},
        {"hier_nvls", HCCN_IN_SWITCH_NODES},
        {"sharp", HCCN_IN_SWITCH_NET_FLAT}, {"hier_sharp", HCCN_IN_SWITCH_NET},
        {"hier_nvls_sharp", HCCN_IN_SWITCH_NODES | HCCN_IN_SWITCH_NET},
    };
    int i = 0;
    for (const hccn_algo_t *al = hccn_hier_algos(); al->name && i < MAX_ALGOS;
         al++, i++) {
        may[i] = !library;
        for (size_t k = 0; library && k < sizeof(family) / sizeof(family[0]);
             k++)
            if (strcmp(al->name, family[k].name) == 0)
                may[i] = (a->in_switch & family[k].need) == family[k].need;
        if (library && allpairs && strcmp(al->name, "mesh") == 0)
            may[i] = 1;
        if (!library && al->by_name_only)
            may[i] = 0;
    }
}

/* The cheapest row that implements a->coll, has a prediction and may be
 * picked by default (may), the earliest on ties; NULL if none. */
static const hccn_algo_t *cheapest(const hccn_coll_args_t *a, const double *t,
                                   const int *may, int most, int *passed)
{
    const hccn_algo_t *best = NULL;
    double bt = INFINITY;
    int i = 0;
    *passed = 0;
    for (const hccn_algo_t *al = hccn_hier_algos(); al->name; al++, i++)
        if (i >= MAX_ALGOS || !may[i])
            continue;   /* a spec must name it */
        else if (i < MAX_ALGOS && (al->colls & 1u << a->coll) && t[i] >= 0.0 &&
                 !auto_ok(al, a, most))
            *passed = 1;
        else if (i < MAX_ALGOS && (al->colls & 1u << a->coll) && t[i] >= 0.0 &&
                 t[i] < bt) {
            best = al;
            bt = t[i];
        }
    return best;
}

static const hccn_algo_t *first_able(hccn_coll_t coll)
{
    for (const hccn_algo_t *al = hccn_hier_algos(); al->name; al++)
        if (al->colls & 1u << coll)
            return al;
    return NULL;
}

/* 1 when row i goes before row j in a report: rows with a prediction
 * first, of those the ones the default choice may take (may), then the
 * faster. */
static int report_before(int i, int j, const double *t, const int *may)
{
    if ((t[i] >= 0.0) != (t[j] >= 0.0))
        return t[i] >= 0.0;
    if (t[i] < 0.0)
        return 0;
    if (may[i] != may[j])
        return may[i];
    return t[i] < t[j];
}

/* "<coll> <bytes> B on <p> ranks: <algo> (<why>) — <algo> <t>us, ..., <algo>
 * n/a": candidates fastest first, those the default choice may not take
 * after them, those without a prediction last. */
static void write_report(const hccn_coll_args_t *a, const hccn_algo_t *pick,
                         const char *reason, const double *t, const int *may,
                         char *report, size_t rlen)
{
    int order[MAX_ALGOS], n = 0, i = 0;
    for (const hccn_algo_t *al = hccn_hier_algos(); al->name; al++, i++)
        if (i < MAX_ALGOS && (al->colls & 1u << a->coll)) {
            int k = n++;   /* insertion sort, stable */
            while (k > 0 && report_before(i, order[k - 1], t, may)) {
                order[k] = order[k - 1];
                k--;
            }
            order[k] = i;
        }
    size_t w = (size_t)snprintf(report, rlen, "%s %llu B on %d ranks: %s (%s) —",
                                hccn_coll_name(a->coll),
                                (unsigned long long)(a->count * a->esize),
                                a->nranks, pick->name, reason);
    for (int k = 0; k < n && w < rlen; k++) {
        const char *name = hccn_hier_algos()[order[k]].name;
        if (t[order[k]] >= 0.0)
            w += (size_t)snprintf(report + w, rlen - w, "%s %s %.1fus",
                                  k ? "," : "", name, t[order[k]] * 1e6);
        else
            w += (size_t)snprintf(report + w, rlen - w, "%s %s n/a",
                                  k ? "," : "", name);
    }
}

/* The default choice for a, from the predictions, into t: the cheapest
 * row it may take (under a library's stack, of the library's algorithms;
 * should none of them apply, of every row), else the first row able to
 * run a; NULL if none. may is left as the rows it could take, reason says
 * why. Under a library's stack only the library's rows are priced, unless
 * all (a report lists every row) or none of them applies. */
static const hccn_algo_t *pick_default(const hccn_coll_args_t *a,
                                       const hccn_hier_select_in_t *in,
                                       int all, double *t, int *may,
                                       char *reason, size_t rlen)
{
    const hccn_algo_t *algo;
    const hccn_sim_topo_t *topo = in->topo;
    int passed, library = library_only(a, topo), most = node_most(a, in);
    default_rows(a, library, library && library_allpairs(a, in), may);
    predict_all(a, in, library && !all ? may : NULL, t);
    if (library && (algo = cheapest(a, t, may, most, &passed)) != NULL) {
        snprintf(reason, rlen, "cheapest of the library's algorithms "
                 "(stack %s)", topo->sw->stack);
        return algo;
    }
    if (library) {
        default_rows(a, 0, 0, may);
        predict_all(a, in, NULL, t);
    }
    if ((algo = cheapest(a, t, may, most, &passed)) != NULL) {
        snprintf(reason, rlen, "cheapest");
        if (passed)
            snprintf(reason, rlen, "cheapest; algorithms with a message "
                     "between every pair of ranks are passed over beyond "
                     "%d ranks (in all, or on one node)",
                     HCCN_SELECT_PAIRS_MAX);
        return algo;
    }
    if ((algo = first_able(a->coll)) != NULL)
        snprintf(reason, rlen, "no prediction: first in the table");
    return algo;
}

/* A spec's levels with some left as NA: the cheapest composition row
 * that matches the others (the earliest on ties), or the first when none
 * has a prediction. Not cached: a rank remembers what it was given for a
 * spec (runtime picks), so this runs once per spec and size. */
static const hccn_algo_t *cheapest_levels(const hccn_coll_args_t *a,
                                          const hccn_hier_select_in_t *in,
                                          const char *const *lv,
                                          const hccn_algo_t *first)
{
    hccn_cost_place_t pl = {in->topo, in->world};
    const hccn_algo_t *best = first;
    double bt = INFINITY;
    for (const hccn_algo_t *row = first; row != NULL;
         row = hccn_hier_spec_levels_next(lv[0], lv[1], lv[2], row)) {
        double t = hccn_hier_cost(row, a, &pl, HCCN_COST_AUTO, NULL);
        if (t >= 0.0 && t < bt) {
            best = row;
            bt = t;
        }
    }
    return best;
}

/* Records why selection failed (as written in why), unless it was for
 * want of memory (already recorded): HCCN_ERR_UNSUPPORTED when the spec
 * names one known algorithm (it cannot run a), else HCCN_ERR_INVALID. */
static const hccn_algo_t *select_fail(const hccn_hier_select_in_t *in,
                                      const char *why)
{
    if (hccn_sim_fail_status() == HCCN_ERR_NOMEM)
        return NULL;
    hccn_sim_fail(hccn_hier_algo_find(in->spec) != NULL ? HCCN_ERR_UNSUPPORTED
                                                        : HCCN_ERR_INVALID,
                  "algorithm: %s", why);
    return NULL;
}

const hccn_algo_t *hccn_hier_select(const hccn_coll_args_t *a,
                                    const hccn_hier_select_in_t *in,
                                    char *why, size_t len, char *report,
                                    size_t rlen)
{
    hccn_algo_spec_t spec;
    const hccn_algo_t *algo = NULL;
    const char *part = NULL;
    double t[MAX_ALGOS];
    char reason[160];
    int may[MAX_ALGOS] = {0};
    for (int i = 0; i < MAX_ALGOS; i++)
        t[i] = UNPRICED;
    if (report != NULL && rlen > 0)
        report[0] = '\0';
    hccn_sim_fail_clear();
    if ((unsigned)a->coll >= HCCN_COLL_COUNT) {
        snprintf(why, len, "unknown collective %d", (int)a->coll);
        return select_fail(in, why);
    }
    if (spec_get(in, &spec, why, len) != 0 ||
        hccn_hier_spec_pick(&spec, a->coll, &algo, &part, why, len) != 0)
        return select_fail(in, why);
    const char *lv[3];
    int open = algo != NULL && hccn_hier_spec_open_levels(&spec, a->coll, lv);
    if (open)
        algo = cheapest_levels(a, in, lv, algo);
    if (algo != NULL && report == NULL)
        return algo;   /* forced, and nobody asks for the figures */
    if (algo != NULL)
        predict_all(a, in, NULL, t);
    if (algo != NULL && open) {
        default_rows(a, 0, 0, may);
        snprintf(reason, sizeof(reason), "levels forced by spec \"%s\", "
                 "the ones left as NA the cheapest", part);
    } else if (algo != NULL) {
        default_rows(a, 0, 0, may);
        snprintf(reason, sizeof(reason), "forced by spec \"%s\"", part);
    } else if ((algo = pick_default(a, in, report != NULL, t, may, reason,
                                    sizeof(reason))) == NULL) {
        snprintf(why, len, "no algorithm implements %s",
                 hccn_coll_name(a->coll));
        return select_fail(in, why);
    }
    if (report != NULL && rlen > 0)
        write_report(a, algo, reason, t, may, report, rlen);
    return algo;
}
