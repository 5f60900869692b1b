/*
 * Hierarchical reduce-scatter and allgather over any number of levels
 * (see hier_levels.h for the phases and the rank numbering).
 */
#include <stdlib.h>

#include "hierarchy/compose.h"
#include "hierarchy/hier_levels.h"

typedef struct {
    hccn_sched_t *s;
    const hccn_coll_args_t *a;
    const hccn_hier_levels_t *lv;
    hccn_sched_t *sub[HCCN_HIER_MAX_LEVELS];  /* each level's flat schedule */
    int *grp;                                 /* one group's ranks */
    hccn_frontier_t *prev, *cur, *one;        /* phase sinks; one instance's */
    uint64_t scratch;                         /* where the subs' SCRATCH goes */
} levels_t;

/* Groups of level i: a rank's stride at level i, and how many ranks lie
 * inside one step of the level above (the block of ranks a group spans). */
static uint64_t stride(const hccn_hier_levels_t *lv, int i)
{
    uint64_t st = 1;
    for (int j = 0; j < i; j++)
        st *= (uint64_t)lv->n[j];
    return st;
}

/* Instances per group in phase i: the combinations of places above i. */
static uint64_t above(const hccn_hier_levels_t *lv, int i)
{
    uint64_t x = 1;
    for (int j = i + 1; j < lv->k; j++)
        x *= (uint64_t)lv->n[j];
    return x;
}

static int levels_init(levels_t *w, hccn_sched_t *s, const hccn_coll_args_t *a,
                       const hccn_hier_levels_t *lv)
{
    int most = 1;
    *w = (levels_t){.s = s, .a = a, .lv = lv};
    for (int i = 0; i < lv->k; i++) {
        const hccn_algo_t *al = hccn_hier_algo_find(lv->algo[i]);
        hccn_coll_args_t sa = {.coll = a->coll, .nranks = lv->n[i],
                               .count = a->count, .esize = a->esize,
                               .chunk_bytes = a->chunk_bytes};
        w->sub[i] = al != NULL && lv->n[i] > 1 ? al->build(&sa) : NULL;
        if (lv->n[i] > 1 && w->sub[i] == NULL)
            return -1;
        most = lv->n[i] > most ? lv->n[i] : most;
    }
    w->grp = malloc((size_t)most * sizeof(int));
    w->prev = hccn_frontier_new(a->nranks);
    w->cur = hccn_frontier_new(a->nranks);
    w->one = hccn_frontier_new(a->nranks);
    return w->grp && w->prev && w->cur && w->one ? 0 : -1;
}

static void levels_free(levels_t *w)
{
    for (int i = 0; i < HCCN_HIER_MAX_LEVELS; i++)
        hccn_sched_free(w->sub[i]);
    free(w->grp);
    hccn_frontier_free(w->prev);
    hccn_frontier_free(w->cur);
    hccn_frontier_free(w->one);
}

/* One phase: level i's flat schedule on every group and every instance z,
 * reading block z * in_z of in, writing block z * out_z of out (bytes). */
static int phase(levels_t *w, int i, hccn_buf_t in, uint64_t in_off,
                 uint64_t in_z, hccn_buf_t out, uint64_t out_off,
                 uint64_t out_z)
{
    const hccn_hier_levels_t *lv = w->lv;
    uint64_t st = stride(lv, i), span = st * (uint64_t)lv->n[i];
    uint64_t X = above(lv, i);
    hccn_frontier_t *after = w->prev;
    if (lv->n[i] < 2)
        return 0;
    for (uint64_t r0 = 0; r0 < (uint64_t)w->a->nranks; r0 += span)
        for (uint64_t l = 0; l < st; l++) {
            for (int y = 0; y < lv->n[i]; y++)
                w->grp[y] = (int)(r0 + l + (uint64_t)y * st);
            for (uint64_t z = 0; z < X; z++) {
                hccn_compose_t how = hccn_compose_identity();
                how.ranks = w->grp;
                how.after = after;
                how.phase = lv->phase[i];
                how.map[HCCN_BUF_SEND] = (hccn_bufmap_t){in, in_off +
                                                         z * in_z, 0};
                how.map[HCCN_BUF_RECV] = (hccn_bufmap_t){out, out_off +
                                                         z * out_z, 0};
                /* Concurrent instances: a SCRATCH of its own each. */
                how.map[HCCN_BUF_SCRATCH].base =
                    w->scratch + z * w->sub[i]->scratch_bytes;
                if (hccn_sched_compose(w->s, w->sub[i], &how, w->one) != 0 ||
                    hccn_frontier_merge_ranks(w->cur, w->one, w->grp,
                                              lv->n[i]) != 0)
                    return -1;
            }
        }
    /* This phase's sinks become the next one's start. */
    hccn_frontier_t *t = w->prev;
    w->prev = w->cur;
    w->cur = t;
    for (int r = 0; r < w->cur->nranks; r++)
        w->cur->rank[r].n = 0;
    return 0;
}

/* Reduce-scatter: phase i reads X(i-1) blocks (SEND, or phase i-1's
 * region) and leaves X(i) blocks in its region (the last one in RECV). */
static int reduce_scatter(levels_t *w, const uint64_t *region)
{
    const hccn_hier_levels_t *lv = w->lv;
    uint64_t b = w->a->count * w->a->esize;
    hccn_buf_t in = HCCN_BUF_SEND;
    uint64_t in_off = 0;
    int last = lv->k - 1;
    while (last > 0 && lv->n[last] < 2)
        last--;
    for (int i = 0; i <= last; i++) {
        hccn_buf_t out = i == last ? HCCN_BUF_RECV : HCCN_BUF_SCRATCH;
        uint64_t out_off = i == last ? 0 : region[i];
        if (lv->n[i] < 2)
            continue;
        if (phase(w, i, in, in_off, (uint64_t)lv->n[i] * b, out, out_off, b))
            return -1;
        in = out;
        in_off = out_off;
    }
    return 0;
}

/* Allgather: phase i reads X(i) blocks (SEND for the outermost) and
 * writes X(i) * n[i] blocks into its region (RECV for level 0). */
static int allgather(levels_t *w, const uint64_t *region)
{
    const hccn_hier_levels_t *lv = w->lv;
    uint64_t b = w->a->count * w->a->esize;
    hccn_buf_t in = HCCN_BUF_SEND;
    uint64_t in_off = 0;
    int first = 0;
    while (first < lv->k - 1 && lv->n[first] < 2)
        first++;
    for (int i = lv->k - 1; i >= first; i--) {
        hccn_buf_t out = i == first ? HCCN_BUF_RECV : HCCN_BUF_SCRATCH;
        uint64_t out_off = i == first ? 0 : region[i];
        if (lv->n[i] < 2)
            continue;
        if (phase(w, i, in, in_off, b, out, out_off, (uint64_t)lv->n[i] * b))
            return -1;
        in = out;
        in_off = out_off;
    }
    return 0;
}

int hccn_hier_levels_rs_ag(hccn_sched_t *s, const hccn_coll_args_t *a,
                           const hccn_hier_levels_t *lv)
{
    levels_t w;
    uint64_t region[HCCN_HIER_MAX_LEVELS], end = 0;
    int rs = a->coll == HCCN_COLL_REDUCE_SCATTER;
    if (lv->k < 1 || lv->k > HCCN_HIER_MAX_LEVELS ||
        (!rs && a->coll != HCCN_COLL_ALLGATHER) ||
        stride(lv, lv->k) != (uint64_t)s->nranks) {
        s->failed = 1;
        return -1;
    }
    /* SCRATCH: the region of each phase that does not write RECV holds
     * the blocks it writes (reduce-scatter: X(i), allgather: X(i) * n[i]);
     * the subs' own SCRATCH comes after them, one per concurrent instance
     * of a phase (phases follow each other on a rank, so they share it). */
    for (int i = 0; i < lv->k; i++) {
        uint64_t blocks = above(lv, i) * (uint64_t)(rs ? 1 : lv->n[i]);
        region[i] = end;
        if (blocks < (uint64_t)s->nranks && blocks > 1)
            end += a->count * a->esize * blocks;
    }
    int rc = levels_init(&w, s, a, lv);
    w.scratch = end;
    if (rc == 0)
        rc = rs ? reduce_scatter(&w, region) : allgather(&w, region);
    levels_free(&w);
    if (rc != 0)
        s->failed = 1;
    return rc;
}
