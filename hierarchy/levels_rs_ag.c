/*
 * Reduce-scatter and allgather over any number of levels (levels.h): each
 * level moves every byte once, the outermost the least.
 */
#include <stdlib.h>

#include "hierarchy/levels.h"

/* Instances per group in phase i: the combinations of places above i. */
static uint64_t above(const hccn_hier_levels_t *lv, int i)
{
    uint64_t x = 1;
    for (int j = i + 1; j < lv->k; j++)
        x *= (uint64_t)lv->n[j];
    return x;
}

typedef struct {
    hccn_frontier_t *prev, *cur;  /* the last phase's sinks; this one's */
    uint64_t scratch;             /* where the subs' own SCRATCH starts */
    int stamp;                    /* the phase number of the next phase */
} phases_t;

/* One phase: level i's flat schedule on every group and every instance z,
 * reading in at in_off + z * in_z, writing out at out_off + z * out_z. */
static int phase(hccn_hier_comp_t *h, phases_t *ph, int i, hccn_buf_t in,
                 uint64_t in_off, uint64_t in_z, hccn_buf_t out,
                 uint64_t out_off, uint64_t out_z)
{
    const hccn_hier_levels_t *lv = h->lv;
    const hccn_sched_t *sub = hccn_hier_levels_flat(h, lv->algo[i], h->a->coll,
                                               lv->n[i], h->a->count, 0);
    uint64_t X = above(lv, i);
    if (sub == NULL) {
        h->s->failed = 1;
        return -1;
    }
    for (uint64_t g = 0; g < hccn_hier_levels_ngroups(h, i); g++) {
        const int *grp = hccn_hier_levels_group(h, i, g);
        for (uint64_t z = 0; z < X; z++) {
            /* Concurrent instances: a SCRATCH of their own each. */
            if (hccn_hier_levels_put(h, sub, grp,
                                (hccn_bufmap_t){in, in_off + z * in_z, 0},
                                (hccn_bufmap_t){out, out_off + z * out_z, 0},
                                ph->scratch + z * sub->scratch_bytes,
                                ph->prev, h->one, ph->stamp) != 0 ||
                hccn_frontier_merge_ranks(ph->cur, h->one, grp,
                                          lv->n[i]) != 0)
                return -1;
        }
    }
    /* This phase's sinks are the next one's start. */
    ph->stamp++;
    hccn_frontier_t *t = ph->prev;
    ph->prev = ph->cur;
    ph->cur = t;
    for (int r = 0; r < t->nranks; r++)
        t->rank[r].n = 0;
    return 0;
}

/* Reduce-scatter: phase i reads X(i-1) blocks (SEND, or phase i-1's
 * region) and leaves X(i) in its region (the last phase in RECV). */
static int reduce_scatter(hccn_hier_comp_t *h, phases_t *ph,
                          const uint64_t *region, int first, int last)
{
    const hccn_hier_levels_t *lv = h->lv;
    uint64_t b = h->a->count * h->a->esize;
    hccn_buf_t in = HCCN_BUF_SEND;
    uint64_t in_off = 0;
    for (int i = first; i <= last; i++) {
        hccn_buf_t out = i == last ? HCCN_BUF_RECV : HCCN_BUF_SCRATCH;
        uint64_t out_off = i == last ? 0 : region[i];
        if (lv->n[i] < 2)
            continue;
        if (phase(h, ph, i, in, in_off, (uint64_t)lv->n[i] * b, out, out_off,
                  b) != 0)
            return -1;
        in = out;
        in_off = out_off;
    }
    return 0;
}

/* Allgather: phase i reads X(i) blocks (SEND for the outermost) and
 * writes X(i) n[i] into its region (RECV for the innermost). */
static int allgather(hccn_hier_comp_t *h, phases_t *ph, const uint64_t *region,
                     int first, int last)
{
    const hccn_hier_levels_t *lv = h->lv;
    uint64_t b = h->a->count * h->a->esize;
    hccn_buf_t in = HCCN_BUF_SEND;
    uint64_t in_off = 0;
    for (int i = last; i >= first; i--) {
        hccn_buf_t out = i == first ? HCCN_BUF_RECV : HCCN_BUF_SCRATCH;
        uint64_t out_off = i == first ? 0 : region[i];
        if (lv->n[i] < 2)
            continue;
        if (phase(h, ph, i, in, in_off, b, out, out_off,
                  (uint64_t)lv->n[i] * b) != 0)
            return -1;
        in = out;
        in_off = out_off;
    }
    return 0;
}

int hccn_hier_levels_rs_ag(hccn_hier_comp_t *h)
{
    const hccn_hier_levels_t *lv = h->lv;
    int rs = h->a->coll == HCCN_COLL_REDUCE_SCATTER, first = 0, last;
    uint64_t region[HCCN_LEVELS_MAX], end = 0;
    for (last = lv->k - 1; last > 0 && lv->n[last] < 2; last--)
        ;
    while (first < last && lv->n[first] < 2)
        first++;
    /* SCRATCH: a region for each phase that does not write RECV, for the
     * blocks it writes (reduce-scatter: X(i); allgather: X(i) n[i]); then
     * the subs' own, one per concurrent instance of a phase (phases
     * follow each other on a rank, so they share it). */
    for (int i = 0; i < lv->k; i++) {
        uint64_t blocks = above(lv, i) * (uint64_t)(rs ? 1 : lv->n[i]);
        region[i] = end;
        if (i != (rs ? last : first) && lv->n[i] > 1)
            end += h->a->count * h->a->esize * blocks;
    }
    phases_t ph = {hccn_frontier_new(h->a->nranks),
                   hccn_frontier_new(h->a->nranks), end, 1};
    int rc = ph.prev != NULL && ph.cur != NULL ? 0 : -1;
    if (rc == 0)
        rc = rs ? reduce_scatter(h, &ph, region, first, last)
                : allgather(h, &ph, region, first, last);
    hccn_frontier_free(ph.prev);
    hccn_frontier_free(ph.cur);
    if (rc != 0)
        h->s->failed = 1;
    return rc;
}
