/*
 * The cost model's form for "tree" (docs/selection.md): a double binary
 * tree (allreduce; across nodes the channels of chains and trees of
 * tree.h) or a heap tree (broadcast, reduce) pipelined in chunks, timed
 * chunk by chunk per tree member and as a pipeline of tree levels.
 */
#include <stdlib.h>
#include <string.h>

#include "device_sim/alloc.h"
#include "hierarchy/algo_util.h"
#include "hierarchy/cost_internal.h"
#include "hierarchy/tree.h"


/* A binary tree over members 0..p-1: parent (-1 at the root), distance to
 * the root and height of the subtree below each member. */
typedef struct {
    int p;
    int *parent, *depth, *height;
} tree_t;

/* tree's heap tree at root: position q = member - root, children 2q+1 and
 * 2q+2. */
static void tree_heap(tree_t *t, int root)
{
    for (int q = 0; q < t->p; q++)
        t->parent[(root + q) % t->p] =
            q == 0 ? -1 : (root + (q - 1) / 2) % t->p;
}

/* Fills depth and height from parent. */
static void tree_levels(tree_t *t)
{
    int maxd = 0;
    for (int u = 0; u < t->p; u++) {
        t->depth[u] = 0;
        t->height[u] = 0;
        for (int v = u; t->parent[v] >= 0; v = t->parent[v])
            t->depth[u]++;
        maxd = t->depth[u] > maxd ? t->depth[u] : maxd;
    }
    for (int d = maxd; d > 0; d--)
        for (int u = 0; u < t->p; u++)
            if (t->depth[u] == d &&
                t->height[t->parent[u]] < t->height[u] + 1)
                t->height[t->parent[u]] = t->height[u] + 1;
}

static int tree_new(tree_t *t, int p)
{
    t->p = p;
    t->parent = hccn_sim_malloc(3 * (size_t)p * sizeof(int));
    t->depth = t->parent + p;
    t->height = t->depth + p;
    for (int u = 0; t->parent != NULL && u < p; u++)
        t->parent[u] = -1;
    return t->parent != NULL ? 0 : -1;
}

/* Trees pipelined in chunks, walked chunk by chunk (docs/selection.md):
 * every chunk's way up at once, in the order of the reductions' data,
 * then each chunk's way down. A slot is one member of one tree of one
 * group, s = (g * nt + k) * p + u; every slot but a root has an edge to
 * its parent, priced once for the first chunk (only the edges of its
 * level busy) and once for the others (every edge busy, both ways for
 * allreduce). */
typedef struct {
    hccn_cm_t *m;
    const hccn_cm_team_t *t;
    const tree_t *trees;
    int nt, p, nslots;
    int *order_up, *order_dn;      /* slots by height, by depth */
    int *kids;                     /* [KIDS s + i]: child slots, shallower
                                      first, -1 past the last */
    double *lat, *w;               /* [4 s + d]: d = up, down, per regime */
    double *got, *up_free, *dn_free, *red_free;
    int R;                         /* chunks walked */
    int *kidx;                     /* a slot's index among its parent's */
    int *jcur, *nk;                /* up: the chunk a slot reduces, and
                                      how many of its kids it has */
    double *acc;                   /* up: the last of them reduced */
    double *sent;                  /* [R s + j]: chunk j of slot s arrived
                                      at its parent (a root: its sum
                                      ready), < 0 not yet */
    hccn_cm_evq_t evq;             /* reductions waiting (at: the slot) */
} tsim_t;

enum { W_UP, W_DN, W_UP_FILL, W_DN_FILL };
/* Children a member may have: two in a binary tree, three at a node's
 * head across nodes (tree.h). */
enum { KIDS = 3 };

static int tslot_rank(const tsim_t *ts, int s)
{
    int u = s % ts->p, g = s / ts->p / ts->nt;
    return hccn_hier_cm_member(ts->t, g, u);
}

static int tslot_parent(const tsim_t *ts, int s)
{
    int par = ts->trees[s / ts->p % ts->nt].parent[s % ts->p];
    return par < 0 ? -1 : s - s % ts->p + par;
}

/* Prices the edges of the slots in list[0..n) going up or down, all at
 * once; writes w[4 s + col] (and the latencies). */
static void tsim_price(tsim_t *ts, const int *list, int n, int both,
                       int col)
{
    hccn_cm_xf_t *x = ts->m->x;
    int k = 0;
    for (int i = 0; i < n; i++) {
        int s = list[i], par = tslot_parent(ts, s);
        if (par < 0)
            continue;
        int a = tslot_rank(ts, s), b = tslot_rank(ts, par);
        if (col == W_UP || col == W_UP_FILL || both)
            x[k++] = hccn_hier_cm_xf(a, b, 1);
        if (col == W_DN || col == W_DN_FILL || both)
            x[k++] = hccn_hier_cm_xf(b, a, 1);
    }
    hccn_hier_cm_flows(ts->m, x, (size_t)k, 1.0);
    k = 0;
    for (int i = 0; i < n; i++) {
        int s = list[i];
        if (tslot_parent(ts, s) < 0)
            continue;
        if (col == W_UP || col == W_UP_FILL || both) {
            ts->lat[2 * s] = x[k].lat;
            ts->w[4 * s + (both ? W_UP : col)] = x[k++].w;
        }
        if (col == W_DN || col == W_DN_FILL || both) {
            ts->lat[2 * s + 1] = x[k].lat;
            ts->w[4 * s + (both ? W_DN : col)] = x[k++].w;
        }
    }
}

/* The level at which the first chunk crosses the edge of slot s: going
 * up, its height; going down, its depth. -1 for a root. */
static int tsim_level(const tsim_t *ts, int s, int down)
{
    const tree_t *tk = &ts->trees[s / ts->p % ts->nt];
    int u = s % ts->p;
    return tk->parent[u] < 0 ? -1 : down ? tk->depth[u] : tk->height[u];
}

/* Prices every regime: steady (every edge at once), then the first
 * chunk's, level by level. */
static void tsim_prices(tsim_t *ts, int up, int down)
{
    int *list = hccn_sim_malloc((size_t)ts->nslots * sizeof(int));
    if (list == NULL) {
        ts->m->failed = 1;
        return;
    }
    tsim_price(ts, ts->order_up, ts->nslots, up && down,
               up ? W_UP : W_DN);
    for (int d = 0; d < 2; d++) {
        if (!(d == 0 ? up : down))
            continue;
        for (int lvl = 0; lvl <= ts->p; lvl++) {
            int n = 0;
            for (int s = 0; s < ts->nslots; s++)
                if (tsim_level(ts, s, d) == lvl)
                    list[n++] = s;
            if (n > 0)
                tsim_price(ts, list, n, 0, d == 0 ? W_UP_FILL : W_DN_FILL);
            else if (lvl > 0)
                break;   /* levels are contiguous */
        }
    }
    hccn_sim_free(list);
}

static double tsim_bytes(const hccn_cm_chunks_t *ck, int j)
{
    return (double)((uint64_t)j + 1 == ck->n ? ck->last : ck->c);
}

/* Queues slot s's next reduction if its data is there: its kid nk[s]'s
 * chunk jcur[s], once the reduction before it is done. A slot is woken
 * when its own reduction ends and when the kid it waits for sends, so it
 * is never queued twice. */
static void tsim_wake(tsim_t *ts, int s)
{
    if (ts->jcur[s] >= ts->R)
        return;
    int ch = ts->kids[KIDS * s + ts->nk[s]];
    double arrived = ts->sent[(size_t)ts->R * ch + ts->jcur[s]];
    if (arrived >= 0.0)
        hccn_hier_cm_ev_push(&ts->evq, (hccn_cm_ev_t){
            hccn_hier_cm_max(arrived, ts->acc[s]), 0.0, (uint32_t)s, 0});
}

/* Slot s's chunk j is summed at t: it leaves for the parent once the
 * chunk before it has left. */
static void tsim_send(tsim_t *ts, int s, int j, double t,
                      const hccn_cm_chunks_t *ck)
{
    int par = tslot_parent(ts, s);
    double *sent = &ts->sent[(size_t)ts->R * s + j];
    if (par < 0) {
        *sent = t;
        return;
    }
    double c = tsim_bytes(ck, j);
    double w = ts->w[4 * s + (j == 0 ? W_UP_FILL : W_UP)];
    double go = hccn_hier_cm_max(t, ts->up_free[s]);
    ts->up_free[s] = go + c * w;
    *sent = go + c * w + ts->lat[2 * s];
    if (ts->jcur[par] == j && ts->nk[par] == ts->kidx[s])
        tsim_wake(ts, par);
}

/* Up, every chunk at once: every slot reduces its children's chunk (one
 * after the other, shallower first) and sends the sum to its parent;
 * leaves send their own. A rank's reductions run one at a time on its
 * reduce unit in the order their data is there, over every slot of every
 * tree and every chunk, as the engine's local work does (first come,
 * first served). */
static void tsim_up(tsim_t *ts, const hccn_cm_chunks_t *ck)
{
    for (int i = 0; i < ts->nslots; i++) {
        int s = ts->order_up[i];
        if (ts->kids[KIDS * s] >= 0)
            continue;
        for (int j = 0; j < ts->R; j++)
            tsim_send(ts, s, j, 0.0, ck);
    }
    while (ts->evq.n > 0) {
        hccn_cm_ev_t e = hccn_hier_cm_ev_pop(&ts->evq);
        int s = (int)e.at, r = tslot_rank(ts, s), j = ts->jcur[s];
        double t = hccn_hier_cm_max(e.t, ts->red_free[r]) +
                   tsim_bytes(ck, j) * ts->m->r;
        ts->red_free[r] = t;
        ts->acc[s] = t;
        if (++ts->nk[s] == KIDS || ts->kids[KIDS * s + ts->nk[s]] < 0) {
            ts->nk[s] = 0;
            ts->jcur[s]++;
            tsim_send(ts, s, j, t, ck);
        }
        tsim_wake(ts, s);
    }
}

/* Down: every slot, parents first, sends chunk j on to each child once it
 * has it and the child's previous chunk has left. */
static void tsim_down(tsim_t *ts, uint64_t j, double c, int after_up)
{
    int fill = j == 0;
    for (int i = 0; i < ts->nslots; i++) {
        int s = ts->order_dn[i], par = tslot_parent(ts, s);
        if (par < 0) {
            ts->got[s] = after_up ? ts->sent[(size_t)ts->R * s + j] : 0.0;
            continue;
        }
        double w = ts->w[4 * s + (fill ? W_DN_FILL : W_DN)];
        double go = hccn_hier_cm_max(ts->got[par], ts->dn_free[s]);
        ts->dn_free[s] = go + c * w;
        ts->got[s] = go + c * w + ts->lat[2 * s + 1];
    }
}
/* Chunks walked one by one; beyond, the last increment repeats. The walk
 * keeps a time per slot and chunk: at most TREE_WALK_MAX of them. */
#define TREE_CHUNKS_EXACT 64
#define TREE_WALK_MAX ((size_t)1 << 22)

static int tsim_init(tsim_t *ts, hccn_cm_t *m, const hccn_cm_team_t *t,
                     const tree_t *trees, int nt, uint64_t chunks)
{
    int p = trees[0].p, n = t->ngroups * nt * p;
    size_t R = chunks < TREE_CHUNKS_EXACT ? chunks : TREE_CHUNKS_EXACT;
    while (R > 2 && R * (size_t)n > TREE_WALK_MAX)
        R /= 2;
    memset(ts, 0, sizeof(*ts));
    *ts = (tsim_t){.m = m, .t = t, .trees = trees, .nt = nt, .p = p,
                   .nslots = n, .R = (int)R};
    ts->order_up = hccn_sim_calloc((5 + KIDS) * (size_t)n, sizeof(int));
    ts->lat = hccn_sim_calloc((11 + R) * (size_t)n + (size_t)m->p,
                              sizeof(double));
    ts->evq.ev = hccn_sim_malloc((size_t)(n + 1) * sizeof(hccn_cm_ev_t));
    if (ts->order_up == NULL || ts->lat == NULL || ts->evq.ev == NULL) {
        m->failed = 1;
        return -1;
    }
    ts->order_dn = ts->order_up + n;
    ts->kids = ts->order_dn + n;
    ts->kidx = ts->kids + KIDS * (size_t)n;
    ts->jcur = ts->kidx + n;
    ts->nk = ts->jcur + n;
    ts->w = ts->lat + 2 * (size_t)n;
    ts->got = ts->w + 4 * (size_t)n;
    ts->up_free = ts->got + n;
    ts->dn_free = ts->up_free + n;
    ts->acc = ts->dn_free + n;
    ts->sent = ts->acc + n;
    ts->red_free = ts->sent + R * (size_t)n;
    for (size_t i = 0; i < R * (size_t)n; i++)
        ts->sent[i] = -1.0;
    /* Levels run to the deepest member's depth (a tree of p members is
     * rarely p deep): slots in slot order within each level. */
    int nu = 0, nd = 0, top = 0;
    for (int k = 0; k < nt; k++)
        for (int u = 0; u < p; u++) {
            top = trees[k].height[u] > top ? trees[k].height[u] : top;
            top = trees[k].depth[u] > top ? trees[k].depth[u] : top;
        }
    for (int lvl = 0; lvl <= top; lvl++)
        for (int s = 0; s < n; s++) {
            const tree_t *tk = &trees[s / p % nt];
            if (tk->height[s % p] == lvl)
                ts->order_up[nu++] = s;
            if (tk->depth[s % p] == lvl)
                ts->order_dn[nd++] = s;
        }
    for (int s = 0; s < KIDS * n; s++)
        ts->kids[s] = -1;
    for (int i = 0; i < n; i++) {   /* by height: shallower kids first */
        int s = ts->order_up[i], par = tslot_parent(ts, s), k = 0;
        if (par < 0)
            continue;
        while (k < KIDS - 1 && ts->kids[KIDS * par + k] >= 0)
            k++;
        ts->kids[KIDS * par + k] = s;
        ts->kidx[s] = k;
    }
    return 0;
}

static void tsim_free(tsim_t *ts)
{
    hccn_sim_free(ts->order_up);
    hccn_sim_free(ts->lat);
    hccn_sim_free(ts->evq.ev);
}

/* The time the trees take to move the chunks of ck up (reduced) and/or
 * down. */
static double tree_run(hccn_cm_t *m, const hccn_cm_team_t *t,
                       const tree_t *trees, int nt, int up, int down,
                       const hccn_cm_chunks_t *ck)
{
    tsim_t ts;
    double end = 0.0, prev = 0.0;
    if (tsim_init(&ts, m, t, trees, nt, ck->n) != 0) {
        tsim_free(&ts);
        return 0.0;
    }
    m->proto_bytes = ck->c;   /* edges priced per byte, run in chunks */
    tsim_prices(&ts, up, down);
    m->proto_bytes = 0;
    if (up)
        tsim_up(&ts, ck);
    uint64_t j;
    for (j = 0; j < (uint64_t)ts.R; j++) {
        if (down)
            tsim_down(&ts, j, tsim_bytes(ck, (int)j), up);
        prev = end;
        for (int s = 0; s < ts.nslots; s++)
            end = hccn_hier_cm_max(end, down ? ts.got[s]
                                         : ts.sent[(size_t)ts.R * s + j]);
    }
    if (j < ck->n)   /* the rest at the steady pace of the last chunk */
        end += (end - prev) * ((double)(ck->n - 1 - j) +
                               (double)ck->last / (double)ck->c);
    tsim_free(&ts);
    return end;
}

/* Appends to m->x, for every group and tree of trees[0..nt), the edges of
 * one stage: up, the members of height lvl to their parents; down, the
 * parents to the members of depth lvl. Returns how many. */
static int tree_stage(hccn_cm_t *m, const hccn_cm_team_t *t,
                      const tree_t *trees, int nt, int up, int lvl,
                      size_t at, uint64_t bytes)
{
    int n = 0;
    for (int g = 0; g < t->ngroups; g++)
        for (int k = 0; k < nt; k++)
            for (int u = 0; u < t->size; u++) {
                const tree_t *tr = &trees[k];
                int par = tr->parent[u];
                if (par < 0 || (up ? tr->height[u] : tr->depth[u]) != lvl)
                    continue;
                int a = hccn_hier_cm_member(t, g, u);
                int b = hccn_hier_cm_member(t, g, par);
                m->x[at + (size_t)n++] = up ? hccn_hier_cm_xf(a, b, bytes)
                                            : hccn_hier_cm_xf(b, a, bytes);
            }
    return n;
}

/* The most chunks one member reduces in up stage lvl (from its children
 * of height lvl, in every tree), one after the other. */
static int tree_reductions(const tree_t *trees, int nt, int lvl)
{
    int most = 0, p = trees[0].p;
    int *cnt = hccn_sim_calloc((size_t)p, sizeof(int));
    for (int k = 0; cnt != NULL && k < nt; k++)
        for (int u = 0; u < p; u++)
            if (trees[k].parent[u] >= 0 && trees[k].height[u] == lvl &&
                ++cnt[trees[k].parent[u]] > most)
                most = cnt[trees[k].parent[u]];
    hccn_sim_free(cnt);
    return cnt != NULL ? most : 2;
}

/* Double binary tree allreduce: chunks going up the trees (each parent
 * reducing its children's, one after the other) and back down, as one
 * pipeline whose stages are the levels of both trees. */
static double tree_pipeline(hccn_cm_t *m, const hccn_cm_team_t *t,
                            const tree_t *trees, int nt, int up, int down,
                            const hccn_cm_chunks_t *ck)
{
    int levels = 0, h = 0;
    for (int k = 0; k < nt; k++)
        for (int u = 0; u < t->size; u++)
            if (trees[k].depth[u] > levels)
                levels = trees[k].depth[u];
    int *size = hccn_sim_malloc(2 * (size_t)levels * sizeof(int) + 1);
    double *r = hccn_sim_malloc(2 * (size_t)levels * sizeof(double) + 1), time = 0.0;
    size_t at = 0;
    if (size == NULL || r == NULL) {
        m->failed = 1;
        goto out;
    }
    for (int l = 0; up && l < levels; l++, h++) {
        size[h] = tree_stage(m, t, trees, nt, 1, l, at, ck->c);
        r[h] = tree_reductions(trees, nt, l) * m->r;
        at += (size_t)size[h];
    }
    for (int l = 1; down && l <= levels; l++, h++) {
        size[h] = tree_stage(m, t, trees, nt, 0, l, at, ck->c);
        r[h] = 0.0;
        at += (size_t)size[h];
    }
    time = hccn_hier_cm_staged(m, h, size, ck, r);
out:
    hccn_sim_free(size);
    hccn_sim_free(r);
    return time;
}

/* One chunk per tree is no pipeline: it is timed member by member. With
 * more, the smaller of the two estimates, each of which errs high: the
 * chunk simulation (it prices every chunk but the first as if every edge
 * were busy) and the pipeline of levels (it moves the levels in step). */
static double tree_time(hccn_cm_t *m, const hccn_cm_team_t *t,
                        const tree_t *trees, int nt, int up, int down,
                        const hccn_cm_chunks_t *ck)
{
    double sim = tree_run(m, t, trees, nt, up, down, ck);
    if (ck->n == 1)
        return sim;
    double staged_t = tree_pipeline(m, t, trees, nt, up, down, ck);
    return staged_t < sim ? staged_t : sim;
}

/* The tree across nodes (tree.h): each channel a tree with its part of
 * the message, in the shape's chunks. */
static double tree_nodes_time(hccn_cm_t *m, const hccn_cm_team_t *t,
                              const hccn_coll_args_t *a)
{
    hccn_tree_shape_t sh;
    double time = 0.0;
    if (hccn_hier_tree_shape(a, &sh) != 0) {
        m->failed = 1;
        return 0.0;
    }
    const int p = a->nranks;
    tree_t *tr = hccn_sim_calloc((size_t)sh.T, sizeof(*tr));
    int ok = tr != NULL;
    for (int k = 0; ok && k < sh.T; k++) {
        ok = tree_new(&tr[k], p) == 0;
        for (int u = 0; ok && u < p; u++)
            tr[k].parent[u] = sh.parent[(size_t)k * p + u];
        if (ok)
            tree_levels(&tr[k]);
    }
    if (ok) {
        uint64_t c = sh.chunk < sh.part ? sh.chunk : sh.part;
        hccn_cm_chunks_t ck = {c, sh.K, sh.part - (sh.K - 1) * c};
        time = tree_time(m, t, tr, sh.T, 1, 1, &ck);
    } else {
        m->failed = 1;
    }
    for (int k = 0; tr != NULL && k < sh.T; k++)
        hccn_sim_free(tr[k].parent);
    hccn_sim_free(tr);
    hccn_sim_free(sh.parent);
    return time;
}

double hccn_hier_cm_tree(hccn_cm_t *m, const hccn_cm_team_t *t,
                         const hccn_coll_args_t *a)
{
    const int p = a->nranks;
    tree_t tr[2] = {{0}, {0}};
    double time = 0.0;
    if (a->coll != HCCN_COLL_ALLREDUCE && a->coll != HCCN_COLL_BROADCAST &&
        a->coll != HCCN_COLL_REDUCE)
        return HCCN_COST_NONE;
    if (hccn_hier_tree_nodes(a))
        return tree_nodes_time(m, t, a);
    if (tree_new(&tr[0], p) != 0 || tree_new(&tr[1], p) != 0) {
        m->failed = 1;
        goto out;
    }
    if (a->coll == HCCN_COLL_ALLREDUCE) {
        /* two trees, each with half of the message */
        hccn_hier_tree_inorder(p, 0, p - 1, 0, 0, tr[0].parent);
        hccn_hier_tree_inorder(p, 0, p - 1, p % 2 == 0, p % 2, tr[1].parent);
        tree_levels(&tr[0]);
        tree_levels(&tr[1]);
        hccn_cm_chunks_t ck =
            hccn_hier_cm_chunks(a, (a->count + 1) / 2 * a->esize, HCCN_TREE_CHUNK);
        time = tree_time(m, t, tr, 2, 1, 1, &ck);
    } else {
        hccn_cm_chunks_t ck =
            hccn_hier_cm_chunks(a, a->count * a->esize, HCCN_TREE_CHUNK);
        tree_heap(&tr[0], a->root);
        tree_levels(&tr[0]);
        time = tree_time(m, t, tr, 1, a->coll == HCCN_COLL_REDUCE,
                             a->coll == HCCN_COLL_BROADCAST, &ck);
        if (a->coll == HCCN_COLL_BROADCAST)
            time = hccn_hier_cm_max(time, (double)(a->count * a->esize) * m->m);
    }
out:
    hccn_sim_free(tr[0].parent);
    hccn_sim_free(tr[1].parent);
    return time;
}
