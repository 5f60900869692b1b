/*
 * A composition of levels (levels.h): the groups of each level, the flat
 * schedules they run, and how those are appended, folded builds included.
 */
#include <stdlib.h>
#include <string.h>

#include "device_sim/alloc.h"
#include "device_sim/fail.h"
#include "hierarchy/algo_util.h"
#include "hierarchy/levels.h"

/* A place's stride at level i: the product of the group sizes below. */
static uint64_t stride(const hccn_hier_levels_t *lv, int i)
{
    uint64_t st = 1;
    for (int j = 0; j < i; j++)
        st *= (uint64_t)lv->n[j];
    return st;
}

int hccn_hier_levels_init(hccn_hier_comp_t *h, hccn_sched_t *s,
                     const hccn_coll_args_t *a, const hccn_hier_levels_t *lv,
                     const int *at)
{
    int most = 1;
    memset(h, 0, sizeof(*h));
    h->s = s;
    h->a = a;
    h->lv = lv;
    h->at = at;
    for (int i = 0; i < lv->k; i++)
        most = lv->n[i] > most ? lv->n[i] : most;
    h->grp = hccn_sim_malloc((size_t)most * sizeof(int));
    h->tmp = hccn_frontier_new(a->nranks);
    h->one = hccn_frontier_new(a->nranks);
    int ok = h->grp != NULL && h->tmp != NULL && h->one != NULL;
    for (int i = 0; i < lv->k && ok; i++)
        ok = (h->f[i] = hccn_frontier_new(a->nranks)) != NULL;
    if (!ok)
        return -1;   /* the allocation recorded why */
    if (lv->k < 1 || lv->k > HCCN_LEVELS_MAX ||
        stride(lv, lv->k) != (uint64_t)a->nranks)
        return hccn_sim_fail(HCCN_ERR_INTERNAL, "%s: %d level(s) do not "
                             "multiply to its %d ranks", lv->name, lv->k,
                             a->nranks);
    return 0;
}

void hccn_hier_levels_fini(hccn_hier_comp_t *h)
{
    for (int i = 0; i < HCCN_LEVELS_MEMO; i++) {
        hccn_sched_free(h->memo[i].s);
        hccn_sched_fold_free(&h->memo[i].fold);
    }
    for (int i = 0; i < HCCN_LEVELS_MAX; i++)
        hccn_frontier_free(h->f[i]);
    hccn_frontier_free(h->tmp);
    hccn_frontier_free(h->one);
    hccn_sim_free(h->keep);
    hccn_sim_free(h->grp);
}

int hccn_hier_levels_fold(hccn_hier_comp_t *h)
{
    const hccn_coll_args_t *a = h->a;
    int n0 = h->lv->n[0];
    if (a->fold_rep == NULL || h->lv->k != 2 || a->nranks <= 0)
        return 0;
    for (int x = 0; x < a->nranks; x++) {
        int r = h->at[x];
        if ((x < n0) != (r < a->fold_nrep) || a->fold_rep[r] != h->at[x % n0])
            return 0;
    }
    h->keep = hccn_sim_malloc((size_t)a->nranks);
    if (h->keep == NULL)
        return -1;
    for (int x = 0; x < a->nranks; x++)
        h->keep[h->at[x]] = x < n0;
    h->s->folded = 1;
    return 0;
}

const hccn_sched_t *hccn_hier_levels_flat(hccn_hier_comp_t *h, const char *algo,
                                     hccn_coll_t coll, int n, uint64_t count,
                                     int root)
{
    for (int i = 0; i < HCCN_LEVELS_MEMO; i++)
        if (h->memo[i].s != NULL && strcmp(h->memo[i].algo, algo) == 0 &&
            h->memo[i].coll == coll && h->memo[i].n == n &&
            h->memo[i].count == count && h->memo[i].root == root)
            return h->memo[i].s;
    const hccn_algo_t *al = hccn_hier_algo_find(algo);
    hccn_coll_args_t sa = {.coll = coll, .nranks = n, .count = count,
                           .esize = h->a->esize, .root = root,
                           .chunk_bytes = h->a->chunk_bytes,
                           .in_switch = hccn_hier_level_switch(h->a, algo)};
    if (al == NULL) {
        hccn_sim_fail(HCCN_ERR_INTERNAL, "level algorithm '%s' is not in "
                      "the table", algo);
        return NULL;
    }
    hccn_sched_t *s = al->build(&sa);
    if (s == NULL)
        return NULL;
    int i = h->memo_next;
    h->memo_next = (i + 1) % HCCN_LEVELS_MEMO;
    hccn_sched_free(h->memo[i].s);
    hccn_sched_fold_free(&h->memo[i].fold);
    h->memo[i].folds = 0;
    h->memo[i].algo = algo;
    h->memo[i].coll = coll;
    h->memo[i].n = n;
    h->memo[i].root = root;
    h->memo[i].count = count;
    h->memo[i].s = s;
    return s;
}

uint64_t hccn_hier_levels_ngroups(const hccn_hier_comp_t *h, int i)
{
    return (uint64_t)h->a->nranks / (uint64_t)h->lv->n[i];
}

int hccn_hier_levels_top_peers_slots(int d, const char *algo, int n)
{
    int peers = 1;
    if (d > 1 && algo != NULL && strcmp(algo, "hd") == 0 && n > 1)
        peers = hccn_hier_log2(hccn_hier_pow2_floor(n));
    return d * peers < 64 ? d * peers : 64;
}

int hccn_hier_levels_top_slots(int d, int n, uint64_t groups)
{
    uint64_t per = groups * (uint64_t)n * (uint64_t)(n - 1);
    uint64_t most = per > 0 ? HCCN_LEVELS_TOP_FLIGHT / per : (uint64_t)d;
    return most < 1 ? 1 : most < (uint64_t)d ? (int)most : d;
}

const char *hccn_hier_levels_tail_algo(int n, uint64_t t)
{
    if (n <= 1 || t % (uint64_t)n == 0)
        return NULL;
    return n <= HCCN_LEVELS_TAIL_MESH_MAX ? "mesh" : "ring";
}

uint64_t hccn_hier_levels_ring_chunk(const char *algo, int n, uint64_t unit,
                                     uint64_t dflt)
{
    if (algo == NULL || strcmp(algo, "ring") != 0 || n <= 2)
        return dflt;
    uint64_t need = unit * (uint64_t)n * HCCN_LEVELS_RING_BLOCK;
    return need > dflt ? need : dflt;
}

uint64_t hccn_hier_levels_first_chunk(const hccn_coll_args_t *a,
                                      const char *algo0, int n0,
                                      uint64_t dflt)
{
    uint64_t need = 0;
    if (n0 >= 2 && hccn_hier_level_switch(a, algo0) != 0)
        need = (uint64_t)n0 * HCCN_LEVELS_SWITCH_BLOCK;
    else
        need = hccn_hier_levels_ring_chunk(algo0, n0, 1, 0);
    return need > dflt ? need : dflt;
}

uint64_t hccn_hier_levels_top_chunk(int slots, int n, uint64_t groups,
                                    uint64_t dflt)
{
    int d = slots > 1 ? (slots < 64 ? slots : 64) : 1;
    return dflt * (uint64_t)(d / hccn_hier_levels_top_slots(d, n, groups));
}

const int *hccn_hier_levels_group(hccn_hier_comp_t *h, int i, uint64_t g)
{
    uint64_t st = stride(h->lv, i), span = st * (uint64_t)h->lv->n[i];
    uint64_t first = g / st * span + g % st;
    for (int y = 0; y < h->lv->n[i]; y++)
        h->grp[y] = h->at[first + (uint64_t)y * st];
    return h->grp;
}

/* Folded builds: whether the outer-level schedule sub (an entry of the
 * memo) runs alike on every node: every member's part is member 0's, up
 * to the order of its steps (hierarchy/fold.h); then the entry's fold
 * says how member 0's receives pair. The members' NPUs are alike here
 * (the run checked the topology), so bytes stand for costs. */
static const hccn_sched_fold_t *outer_fold(hccn_hier_comp_t *h,
                                           const hccn_sched_t *sub)
{
    int i = 0;
    while (i < HCCN_LEVELS_MEMO && h->memo[i].s != sub)
        i++;
    if (i == HCCN_LEVELS_MEMO)
        return NULL;
    if (h->memo[i].folds == 0) {
        /* Members in node order, each its own node and its own rank. */
        int n = sub->nranks;
        hccn_sim_npu_t *npus = hccn_sim_calloc((size_t)n, sizeof(*npus));
        int *world = hccn_sim_calloc((size_t)n, sizeof(int));
        int *rep = hccn_sim_calloc((size_t)n, sizeof(int));
        int rc = -1;
        if (npus != NULL && world != NULL && rep != NULL) {
            for (int j = 0; j < n; j++) {
                npus[j] = (hccn_sim_npu_t){.reduce_bw = 1e9, .mem_bw = 1e9,
                                           .node = j};
                world[j] = j;
            }
            hccn_sched_npus_t x = {sub, npus, world};
            rc = hccn_sched_fold_check(sub, npus, NULL, rep, 0,
                                       hccn_sched_npu_tasks, &x,
                                       &h->memo[i].fold, NULL, 0);
        }
        h->memo[i].folds = rc == 0 ? 1 : -1;
        hccn_sim_free(npus);
        hccn_sim_free(world);
        hccn_sim_free(rep);
    }
    return h->memo[i].folds > 0 ? &h->memo[i].fold : NULL;
}

int hccn_hier_levels_put(hccn_hier_comp_t *h, const hccn_sched_t *sub,
                    const int *grp, hccn_bufmap_t send, hccn_bufmap_t recv,
                    uint64_t scratch, const hccn_frontier_t *after,
                    hccn_frontier_t *last, int phase)
{
    hccn_compose_t how = {.ranks = grp, .after = after, .phase = phase,
                          .map = {send, recv,
                                  {HCCN_BUF_SCRATCH, scratch, 0}},
                          .keep = h->keep};
    if (h->keep != NULL && sub != NULL && sub->nranks > 1 &&
        !h->keep[grp[1]]) {
        how.fold = outer_fold(h, sub);
        if (how.fold == NULL) {
            h->unfoldable = 1;
            h->s->failed = 1;
            return -1;
        }
    }
    return hccn_sched_compose(h->s, sub, &how, last);
}

const hccn_frontier_t *hccn_hier_levels_both(hccn_hier_comp_t *h,
                                        const hccn_frontier_t *a,
                                        const hccn_frontier_t *b)
{
    if (hccn_frontier_copy(h->tmp, a) != 0 ||
        hccn_frontier_merge(h->tmp, b) != 0)
        h->s->failed = 1;
    return h->tmp;
}
