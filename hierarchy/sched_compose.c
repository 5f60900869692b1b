/*
 * Schedule composition and frontiers (see compose.h).
 */
#include <stdlib.h>
#include <string.h>

#include "device_sim/alloc.h"
#include "device_sim/fail.h"
#include "hierarchy/compose.h"

#define ELIDED UINT32_MAX

/* ------------------------------------------------------- step sets --- */

static int set_reserve(hccn_stepset_t *s, uint32_t need)
{
    if (need <= s->cap)
        return 0;
    uint32_t cap = s->cap ? s->cap : 8;
    while (cap < need)
        cap *= 2;
    uint32_t *v = hccn_sim_realloc(s->idx, cap * sizeof(*v));
    if (v == NULL)
        return -1;
    s->idx = v;
    s->cap = cap;
    return 0;
}

static int set_has(const hccn_stepset_t *s, uint32_t x)
{
    for (uint32_t i = 0; i < s->n; i++)
        if (s->idx[i] == x)
            return 1;
    return 0;
}

/* Adds x unless present. */
static int set_add(hccn_stepset_t *s, uint32_t x)
{
    if (set_has(s, x))
        return 0;
    if (set_reserve(s, s->n + 1) != 0)
        return -1;
    s->idx[s->n++] = x;
    return 0;
}

/* Adds what of v is not in s yet, in v's order, through a hash of s: for
 * the large sets of mesh steps, where a search per element would cost
 * |s| |v|. */
static int set_add_hashed(hccn_stepset_t *s, const uint32_t *v, uint32_t n)
{
    uint32_t size = 64;
    while (size < 2 * (s->n + n))
        size *= 2;
    uint32_t *h = hccn_sim_malloc(size * sizeof(*h));
    if (h == NULL || set_reserve(s, s->n + n) != 0) {
        hccn_sim_free(h);
        return -1;
    }
    memset(h, 0xff, size * sizeof(*h));     /* UINT32_MAX: empty */
    uint32_t m = s->n;
    for (uint32_t i = 0; i < m + n; i++) {
        uint32_t x = i < m ? s->idx[i] : v[i - m];
        uint32_t k = (x * 2654435761u) & (size - 1);
        while (h[k] != UINT32_MAX && h[k] != x)
            k = (k + 1) & (size - 1);
        if (h[k] == x)
            continue;
        h[k] = x;
        if (i >= m)
            s->idx[s->n++] = x;
    }
    hccn_sim_free(h);
    return 0;
}

/* Adds the elements of v (distinct: a step set's) not yet in s, in v's
 * order; the same set, in the same order, as adding them one by one. */
static int set_add_all(hccn_stepset_t *s, const uint32_t *v, uint32_t n)
{
    if (s->n == 0 && n > 0) {
        if (set_reserve(s, n) != 0)
            return -1;
        memcpy(s->idx, v, n * sizeof(*v));
        s->n = n;
        return 0;
    }
    if ((uint64_t)s->n * n > 4096)
        return set_add_hashed(s, v, n);
    for (uint32_t i = 0; i < n; i++)
        if (set_add(s, v[i]) != 0)
            return -1;
    return 0;
}

/* ------------------------------------------------------- frontiers --- */

hccn_frontier_t *hccn_frontier_new(int nranks)
{
    if (nranks <= 0) {
        hccn_sim_fail(HCCN_ERR_INTERNAL, "a frontier of %d ranks", nranks);
        return NULL;
    }
    hccn_frontier_t *f = hccn_sim_calloc(1, sizeof(*f));
    if (f == NULL)
        return NULL;
    f->rank = hccn_sim_calloc((size_t)nranks, sizeof(*f->rank));
    if (f->rank == NULL) {
        hccn_sim_free(f);
        return NULL;
    }
    f->nranks = nranks;
    return f;
}

void hccn_frontier_free(hccn_frontier_t *f)
{
    if (f == NULL)
        return;
    for (int r = 0; r < f->nranks; r++)
        hccn_sim_free(f->rank[r].idx);
    hccn_sim_free(f->rank);
    hccn_sim_free(f);
}

int hccn_frontier_copy(hccn_frontier_t *dst, const hccn_frontier_t *src)
{
    if (dst == src)
        return 0;
    for (int r = 0; r < dst->nranks && r < src->nranks; r++) {
        dst->rank[r].n = 0;
        if (set_add_all(&dst->rank[r], src->rank[r].idx, src->rank[r].n))
            return -1;
    }
    return 0;
}

int hccn_frontier_merge(hccn_frontier_t *dst, const hccn_frontier_t *src)
{
    for (int r = 0; r < dst->nranks && r < src->nranks; r++)
        if (set_add_all(&dst->rank[r], src->rank[r].idx, src->rank[r].n))
            return -1;
    return 0;
}

int hccn_frontier_merge_ranks(hccn_frontier_t *dst, const hccn_frontier_t *src,
                              const int *ranks, int n)
{
    for (int i = 0; i < n; i++) {
        const hccn_stepset_t *from = &src->rank[ranks[i]];
        if (set_add_all(&dst->rank[ranks[i]], from->idx, from->n))
            return -1;
    }
    return 0;
}

/* ----------------------------------------------------- composition --- */

hccn_compose_t hccn_compose_identity(void)
{
    hccn_compose_t c;
    memset(&c, 0, sizeof(c));
    for (int b = 0; b < 3; b++)
        c.map[b].buf = (hccn_buf_t)b;
    return c;
}

/* Per-rank working state while one rank's steps are appended. */
typedef struct {
    uint32_t *map;        /* sub step -> dst step, or ELIDED */
    hccn_stepset_t *res;  /* for an elided step: the dst steps it stood for */
    unsigned char *succ;  /* 1 if some later sub step depends on it */
    hccn_stepset_t deps;  /* dependencies of the step being appended */
    hccn_stepset_t join;  /* {the join step} when there is one (below) */
    uint32_t n;
} rank_work_t;

static void work_free(rank_work_t *w)
{
    if (w->res != NULL)
        for (uint32_t i = 0; i < w->n; i++)
            hccn_sim_free(w->res[i].idx);
    hccn_sim_free(w->map);
    hccn_sim_free(w->res);
    hccn_sim_free(w->succ);
    hccn_sim_free(w->deps.idx);
    hccn_sim_free(w->join.idx);
}

static int work_init(rank_work_t *w, uint32_t n)
{
    memset(w, 0, sizeof(*w));
    w->n = n;
    w->map = hccn_sim_calloc(n + 1, sizeof(*w->map));
    w->res = hccn_sim_calloc(n + 1, sizeof(*w->res));
    w->succ = hccn_sim_calloc(n + 1, 1);
    return w->map && w->res && w->succ ? 0 : -1;
}

static void map_buf(const hccn_compose_t *how, int i, uint8_t *buf,
                    uint64_t *off)
{
    const hccn_bufmap_t *m = &how->map[*buf];
    *off += m->base + (uint64_t)i * m->stride;
    *buf = (uint8_t)m->buf;
}

/* The step of sub rank i mapped into dst's terms (deps not yet set). */
static hccn_step_t map_step(const hccn_compose_t *how, int i,
                            const hccn_step_t *st, uint32_t xfer0)
{
    hccn_step_t m = *st;
    int ranked = st->kind == HCCN_STEP_SEND || st->kind == HCCN_STEP_RECV ||
                 st->kind == HCCN_STEP_RECV_REDUCE;
    m.peer = ranked ? how->ranks[st->peer] : how->ranks[i];
    if (ranked)
        m.xfer = xfer0 + st->xfer;
    if (st->kind != HCCN_STEP_RECV)
        map_buf(how, i, &m.src_buf, &m.src_off);
    if (st->kind != HCCN_STEP_SEND)
        map_buf(how, i, &m.dst_buf, &m.dst_off);
    if (how->phase != 0)
        m.phase = (uint8_t)how->phase;
    return m;
}

/* The dst steps step st of the sub must wait for, into w->deps. */
static int collect_deps(rank_work_t *w, const hccn_sched_rank_t *rk,
                        const hccn_step_t *st, const hccn_stepset_t *after)
{
    w->deps.n = 0;
    if (st->ndeps == 0 && w->join.n > 0)
        return set_add_all(&w->deps, w->join.idx, w->join.n);
    if (st->ndeps == 0)
        return after != NULL ? set_add_all(&w->deps, after->idx, after->n)
                             : 0;
    for (uint32_t k = 0; k < st->ndeps; k++) {
        uint32_t d = rk->deps[st->dep_off + k];
        w->succ[d] = 1;
        int rc = w->map[d] != ELIDED
                     ? set_add(&w->deps, w->map[d])
                     : set_add_all(&w->deps, w->res[d].idx, w->res[d].n);
        if (rc != 0)
            return -1;
    }
    return 0;
}

static uint64_t scratch_end(const hccn_step_t *m)
{
    uint64_t end = 0;
    if (m->kind != HCCN_STEP_RECV && m->src_buf == HCCN_BUF_SCRATCH)
        end = m->src_off + m->bytes;
    if (m->kind != HCCN_STEP_SEND && m->dst_buf == HCCN_BUF_SCRATCH &&
        m->dst_off + m->bytes > end)
        end = m->dst_off + m->bytes;
    return end;
}

/* A COPY onto its own bytes (a sub-collective run in place on a slice):
 * dropped (compose.h). */
static int elided(const hccn_step_t *m)
{
    return m->kind == HCCN_STEP_COPY && m->src_buf == m->dst_buf &&
           m->src_off == m->dst_off;
}

/* A join pays when the entries it saves (every appended root waiting for
 * every step of `after`) outnumber what it costs (a step of its own) by
 * this much. */
#define JOIN_SAVES 64

/* The root steps of sub rank i that are appended, not dropped. */
static uint64_t appended_roots(const hccn_sched_rank_t *rk,
                               const hccn_compose_t *how, int i)
{
    uint64_t n = 0;
    for (uint32_t j = 0; j < rk->nsteps; j++) {
        if (rk->steps[j].ndeps > 0)
            continue;
        hccn_step_t m = map_step(how, i, &rk->steps[j], 0);
        n += !elided(&m);
    }
    return n;
}

/* When many roots would each wait for many steps of `after`, appends one
 * zero-byte COPY (SEND to RECV, offset 0) that waits for `after`, and the
 * roots wait for it instead: n + m dependency entries instead of n x m. It
 * moves nothing and costs no time, so it is ready and complete the
 * instant the last step of `after` is (the engine ends a local task of no
 * cost as it starts, and orders events by their tasks, not by when they
 * were queued: the roots start at the same instant, in the same order). */
static int add_join(hccn_sched_t *dst, int r, const hccn_compose_t *how,
                    const hccn_sched_rank_t *rk, int i,
                    const hccn_stepset_t *after, rank_work_t *w)
{
    if (after == NULL || after->n < 2)
        return 0;
    uint64_t roots = appended_roots(rk, how, i);
    if (roots * after->n < roots + after->n + JOIN_SAVES)
        return 0;
    hccn_step_t j = {.kind = HCCN_STEP_COPY, .src_buf = HCCN_BUF_SEND,
                     .dst_buf = HCCN_BUF_RECV, .phase = (uint8_t)how->phase,
                     .peer = r};
    uint32_t x = hccn_sched_add(dst, r, &j, after->idx, after->n);
    if (dst->failed)
        return -1;
    return set_add(&w->join, x);
}

/* Appends the steps of sub rank i to rank r of dst. */
static int append_rank(hccn_sched_t *dst, const hccn_sched_t *sub, int i,
                       const hccn_compose_t *how, uint32_t xfer0,
                       rank_work_t *w, uint64_t *scratch)
{
    const hccn_sched_rank_t *rk = &sub->ranks[i];
    int r = how->ranks[i];
    const hccn_stepset_t *after =
        how->after != NULL ? &how->after->rank[r] : NULL;
    if (add_join(dst, r, how, rk, i, after, w) != 0)
        return -1;
    for (uint32_t j = 0; j < rk->nsteps; j++) {
        const hccn_step_t *st = &rk->steps[j];
        hccn_step_t m = map_step(how, i, st, xfer0);
        if (collect_deps(w, rk, st, after) != 0)
            return -1;
        if (elided(&m)) {
            w->map[j] = ELIDED;
            if (set_add_all(&w->res[j], w->deps.idx, w->deps.n) != 0)
                return -1;
            continue;
        }
        uint32_t x = hccn_sched_add(dst, r, &m, w->deps.idx, w->deps.n);
        if (dst->failed)
            return -1;
        w->map[j] = x;
        if (m.kind == HCCN_STEP_SEND)
            dst->xfer_send[m.xfer] = (hccn_sched_ref_t){r, x};
        else if (m.kind != HCCN_STEP_COPY && m.kind != HCCN_STEP_REDUCE)
            dst->xfer_recv[m.xfer] = (hccn_sched_ref_t){r, x};
        if (scratch_end(&m) > *scratch)
            *scratch = scratch_end(&m);
    }
    return 0;
}

/* Adds what elided sink j stood for, but not steps of `after` nor the
 * join: every appended step already waits for those. */
static int add_elided(hccn_stepset_t *out, const hccn_stepset_t *res,
                      const hccn_stepset_t *after, const hccn_stepset_t *join)
{
    for (uint32_t k = 0; k < res->n; k++)
        if ((after == NULL || !set_has(after, res->idx[k])) &&
            !set_has(join, res->idx[k]) && set_add(out, res->idx[k]) != 0)
            return -1;
    return 0;
}

/* The sinks of sub rank i's appended steps (after's set when none). */
static int sinks(const hccn_sched_rank_t *rk, const rank_work_t *w,
                 const hccn_stepset_t *after, hccn_stepset_t *out)
{
    out->n = 0;
    int any = 0;
    for (uint32_t j = 0; j < rk->nsteps; j++)
        any |= w->map[j] != ELIDED;
    if (!any)
        return after != NULL ? set_add_all(out, after->idx, after->n) : 0;
    for (uint32_t j = 0; j < rk->nsteps; j++) {
        if (w->succ[j])
            continue;
        int rc = w->map[j] != ELIDED ? set_add(out, w->map[j])
                                     : add_elided(out, &w->res[j], after,
                                                  &w->join);
        if (rc != 0)
            return -1;
    }
    return 0;
}

static int map_ok(const hccn_sched_t *dst, const hccn_sched_t *sub,
                  const hccn_compose_t *how)
{
    if (how->ranks == NULL ||
        (how->after != NULL && how->after->nranks != dst->nranks))
        return 0;
    for (int i = 0; i < sub->nranks; i++) {
        if (how->ranks[i] < 0 || how->ranks[i] >= dst->nranks)
            return 0;
        for (int j = 0; j < i; j++)
            if (how->ranks[j] == how->ranks[i])
                return 0;
    }
    for (int b = 0; b < 3; b++)
        if ((unsigned)how->map[b].buf > HCCN_BUF_SCRATCH)
            return 0;
    return 1;
}

/* Whether sub rank i's steps are appended (all but those a folded build
 * leaves out). */
static int kept(const hccn_compose_t *how, int i)
{
    return how->keep == NULL || how->keep[how->ranks[i]];
}

/* Folded: each RECV of kept sub rank i from a rank left out is named by
 * its SEND's copy, a step of i itself (compose.h). */
static int name_copies(hccn_sched_t *dst, const hccn_sched_t *sub, int i,
                       const hccn_compose_t *how, uint32_t xfer0,
                       const rank_work_t *w)
{
    const hccn_sched_rank_t *rk = &sub->ranks[i];
    for (uint32_t t = 0; t < rk->nsteps; t++) {
        const hccn_step_t *st = &rk->steps[t];
        if ((st->kind != HCCN_STEP_RECV &&
             st->kind != HCCN_STEP_RECV_REDUCE) ||
            kept(how, sub->xfer_send[st->xfer].rank))
            continue;
        if (how->fold == NULL || i >= how->fold->nrep ||
            how->fold->recv_key[i] == NULL)
            return hccn_sim_fail(HCCN_ERR_INTERNAL, "composing '%s': member "
                                 "%d step %u receives from a member left "
                                 "out, with no fold to name its sender",
                                 sub->algo, i, t);
        uint64_t key = how->fold->recv_key[i][t];
        uint32_t s0 = (uint32_t)key;
        if ((int)(key >> 32) != i || s0 >= rk->nsteps || w->map[s0] == ELIDED)
            return hccn_sim_fail(HCCN_ERR_INTERNAL, "composing '%s': member "
                                 "%d step %u: the fold names no kept "
                                 "send of its own", sub->algo, i, t);
        dst->xfer_send[xfer0 + st->xfer] =
            (hccn_sched_ref_t){how->ranks[i], w->map[s0]};
    }
    return 0;
}

static int compose_ranks(hccn_sched_t *dst, const hccn_sched_t *sub,
                         const hccn_compose_t *how, hccn_stepset_t *out,
                         uint64_t *scratch)
{
    uint32_t xfer0 = dst->nxfers;
    if (how->keep != NULL)
        for (uint32_t x = 0; x < sub->nxfers; x++)
            dst->xfer_send[xfer0 + x] = dst->xfer_recv[xfer0 + x] =
                (hccn_sched_ref_t){-1, UINT32_MAX};
    for (int i = 0; i < sub->nranks; i++) {
        if (!kept(how, i))
            continue;
        rank_work_t w;
        int r = how->ranks[i];
        int rc = work_init(&w, sub->ranks[i].nsteps);
        if (rc == 0)
            rc = append_rank(dst, sub, i, how, xfer0, &w, scratch);
        if (rc == 0 && how->keep != NULL)
            rc = name_copies(dst, sub, i, how, xfer0, &w);
        if (rc == 0)
            rc = sinks(&sub->ranks[i], &w,
                       how->after != NULL ? &how->after->rank[r] : NULL,
                       &out[i]);
        work_free(&w);
        if (rc != 0)
            return -1;
    }
    return 0;
}

int hccn_sched_compose(hccn_sched_t *dst, const hccn_sched_t *sub,
                       const hccn_compose_t *how, hccn_frontier_t *last)
{
    if (dst->failed)
        return -1;
    if (sub == NULL || sub->failed) {
        dst->failed = 1;   /* its builder recorded why */
        return -1;
    }
    if (!map_ok(dst, sub, how) ||
        (last != NULL && last->nranks != dst->nranks)) {
        dst->failed = 1;
        hccn_sim_fail(HCCN_ERR_INTERNAL, "composing '%s' (%d ranks) into "
                      "'%s' (%d ranks): the rank map, buffers or frontiers "
                      "do not fit", sub->algo, sub->nranks, dst->algo,
                      dst->nranks);
        return -1;
    }
    if (hccn_sched_xfer_room(dst, sub->nxfers) != 0) {
        dst->failed = 1;
        return -1;
    }
    hccn_stepset_t *out = hccn_sim_calloc((size_t)sub->nranks, sizeof(*out));
    uint64_t scratch = 0;
    int rc = out != NULL ? compose_ranks(dst, sub, how, out, &scratch) : -1;
    if (rc == 0) {
        dst->nxfers += sub->nxfers;
        const hccn_bufmap_t *sm = &how->map[HCCN_BUF_SCRATCH];
        if (sm->buf == HCCN_BUF_SCRATCH && sub->scratch_bytes > 0) {
            uint64_t end = sm->base + sm->stride * (uint64_t)(sub->nranks - 1) +
                           sub->scratch_bytes;
            scratch = end > scratch ? end : scratch;
        }
        if (scratch > dst->scratch_bytes)
            dst->scratch_bytes = (size_t)scratch;
    }
    for (int i = 0; rc == 0 && last != NULL && i < sub->nranks; i++) {
        if (!kept(how, i))
            continue;
        hccn_stepset_t *dstset = &last->rank[how->ranks[i]];
        dstset->n = 0;
        rc = set_add_all(dstset, out[i].idx, out[i].n);
    }
    for (int i = 0; out != NULL && i < sub->nranks; i++)
        hccn_sim_free(out[i].idx);
    hccn_sim_free(out);
    if (rc != 0)
        dst->failed = 1;
    return rc;
}
