/*
 * The shapes the cost model's closed forms are made of: rounds of
 * transfers that run together (links shared, hccn_hier_cm_flows), per-rank
 * clocks across rounds, pipelined stages of chunks, a root and its peers.
 * Each algorithm's own form is in its file (algo_NAME.c, "Cost"), priced
 * with these; tree's in cost_tree.c and the hierarchical rows' in
 * cost_hier.c and cost_hier3.c. A form prices one collective run by every
 * group of a team at the same time; a->nranks is the group size and
 * a->root a member index. A round ends when its slowest transfer (and
 * reduction) does, the next one starts then.
 */
#include <stdlib.h>
#include <string.h>

#include "device_sim/alloc.h"
#include "hierarchy/algo_util.h"
#include "hierarchy/cost_internal.h"

uint64_t hccn_hier_cm_whole(const hccn_coll_args_t *a)
{
    return a->count * a->esize;
}

uint64_t hccn_hier_cm_block(const hccn_coll_args_t *a, int i)
{
    return hccn_hier_block(a->count, a->esize, a->nranks, i).len;
}

double hccn_hier_cm_copy(const hccn_cm_t *m, uint64_t bytes)
{
    return (double)bytes * m->m;
}

/* The slowest of the n priced transfers of x; done, if not NULL, gives the
 * time each sender (communicator rank) starts. */
double hccn_hier_cm_slowest(const hccn_cm_xf_t *x, size_t n, const double *done)
{
    double end = 0.0;
    for (size_t i = 0; i < n; i++)
        end = hccn_hier_cm_max(end, hccn_hier_cm_time(&x[i]) +
                                        (done ? done[x[i].src] : 0.0));
    return end;
}

hccn_cm_xf_t hccn_hier_cm_xf(int src, int dst, uint64_t bytes)
{
    return (hccn_cm_xf_t){src, dst, bytes, 0.0, 0.0, 1.0};
}

/* One round: in every group member i sends bytes to member i + k. */
double hccn_hier_cm_shift_round(hccn_cm_t *m, const hccn_cm_team_t *t, int k,
                                uint64_t bytes)
{
    size_t n = 0;
    for (int g = 0; g < t->ngroups; g++)
        for (int i = 0; i < t->size; i++)
            m->x[n++] =
                hccn_hier_cm_xf(hccn_hier_cm_member(t, g, i),
                                hccn_hier_cm_member(t, g, i + k), bytes);
    hccn_hier_cm_flows(m, m->x, n, 1.0);
    return hccn_hier_cm_slowest(m->x, n, NULL);
}

int hccn_hier_cm_clocks_init(hccn_cm_t *m, hccn_cm_clocks_t *c)
{
    c->ready = hccn_sim_calloc(2 * (size_t)m->p, sizeof(double));
    c->next = c->ready + m->p;
    m->failed |= c->ready == NULL;
    return c->ready != NULL ? 0 : -1;
}

double hccn_hier_cm_clocks_end(hccn_cm_t *m, hccn_cm_clocks_t *c)
{
    double end = 0.0;
    for (int r = 0; r < m->p; r++)
        end = hccn_hier_cm_max(end, c->ready[r]);
    hccn_sim_free(c->ready);
    return end;
}

/* One round of the n transfers in m->x, priced as running together: each
 * starts when its sender is done with the previous rounds (and, with
 * recv_waits, its receiver too); the sender is done when it has drained,
 * the receiver when it has arrived and, with reduce, been reduced. Ranks
 * of a round can be far apart in time, so its rounds overlap as they do
 * in the schedule; only the sharing of links is per round. */
void hccn_hier_cm_round_step(hccn_cm_t *m, size_t n, hccn_cm_clocks_t *c,
                             int recv_waits, int reduce)
{
    hccn_hier_cm_flows(m, m->x, n, 1.0);
    memcpy(c->next, c->ready, (size_t)m->p * sizeof(double));
    for (size_t i = 0; i < n; i++) {
        const hccn_cm_xf_t *x = &m->x[i];
        double go = recv_waits
                        ? hccn_hier_cm_max(c->ready[x->src], c->ready[x->dst])
                        : c->ready[x->src];
        double drained = go + (double)x->bytes * x->w;
        double done =
            drained + x->lat + (reduce ? (double)x->bytes * m->r : 0.0);
        c->next[x->src] = hccn_hier_cm_max(c->next[x->src], drained);
        c->next[x->dst] = hccn_hier_cm_max(c->next[x->dst], done);
    }
    memcpy(c->ready, c->next, (size_t)m->p * sizeof(double));
}

hccn_cm_chunks_t hccn_hier_cm_chunks(const hccn_coll_args_t *a, uint64_t n,
                                     uint64_t chk)
{
    uint64_t c = hccn_hier_chunk(a, chk);
    c = c > n ? n : c;
    hccn_cm_chunks_t ck = {c, (n + c - 1) / c, 0};
    ck.last = n - (ck.n - 1) * c;
    return ck;
}

double hccn_hier_cm_staged(hccn_cm_t *m, int h, const int *size,
                           const hccn_cm_chunks_t *ck, const double *r)
{
    int *off = hccn_sim_malloc(((size_t)h + 1) * sizeof(int));
    if (off == NULL) {
        m->failed = 1;
        return 0.0;
    }
    off[0] = 0;
    for (int i = 0; i < h; i++)
        off[i + 1] = off[i] + size[i];
    double t = hccn_hier_cm_pipeline(m, m->x, h, off, ck, r);
    hccn_sim_free(off);
    return t;
}

/* Every group's root and its other members, all at once (x[(k-1) *
 * ngroups + g] joins the root and member root+k); with reduce the root
 * reduces them in the order k = 1, 2, ... */
double hccn_hier_cm_star(hccn_cm_t *m, const hccn_cm_team_t *t, int root,
                         int into, uint64_t bytes, int reduce)
{
    const int w = t->ngroups;
    size_t n = 0;
    for (int k = 1; k < t->size; k++)
        for (int g = 0; g < w; g++) {
            int r = hccn_hier_cm_member(t, g, root);
            int peer = hccn_hier_cm_member(t, g, root + k);
            m->x[n++] = into ? hccn_hier_cm_xf(peer, r, bytes)
                             : hccn_hier_cm_xf(r, peer, bytes);
        }
    hccn_hier_cm_flows(m, m->x, n, 1.0);
    if (!reduce)
        return hccn_hier_cm_slowest(m->x, n, NULL);
    double end = 0.0;
    for (int k = 1; k < t->size; k++)
        for (int g = 0; g < w; g++)
            end = hccn_hier_cm_max(
                end, hccn_hier_cm_time(&m->x[(size_t)(k - 1) * w + g]) +
                         (double)(t->size - k) * (double)bytes * m->r);
    return end;
}

/* --------------------------------------------------------------- table --- */

hccn_cm_form_fn hccn_hier_cm_form(const char *name)
{
    const hccn_algo_t *al = hccn_hier_algo_find(name);
    return al != NULL ? al->cost : NULL;
}
