/*
 * The simulation API's measurements (include/hccn/hccn_sim.h): per-link
 * statistics of a cluster's last run, the marks a rank puts on the
 * operations it posts, and a rank's communication summary.
 *
 * The summary is kept only between hccn_summary_mark and the end of the
 * run: every completed operation of the rank (its call to its simulated
 * end) and every stretch of declared compute, in simulated seconds. The
 * figures are measures of unions of intervals, so overlapping operations
 * count once. Only the rank's own thread touches its record.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hccn/hccn_sim.h"
#include "runtime/proc.h"
#include "runtime/rt.h"

hccn_status_t hccn_cluster_link_stats(const hccn_cluster_t *cl, int link,
                                      hccn_link_stats_t *st)
{
    hccn_status_t rc0 = hccn_rt_cluster_check("hccn_cluster_link_stats", cl);
    if (rc0 != HCCN_OK)
        return rc0;
    if (st == NULL || st->struct_size < sizeof(*st))
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_cluster_link_stats: "
                             "st is NULL, or its struct_size is too small");
    if (link < 0 || link >= cl->topo->nlinks)
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_cluster_link_stats: "
                             "link %d out of range [0, %d)", link,
                             cl->topo->nlinks);
    if (atomic_load(&cl->running))
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_cluster_link_stats: "
                             "the cluster is running");
    hccn_sim_engine_t *eng = cl->eng;
    double bw = cl->topo->links[link].bw, span = 0.0;
    for (int d = 0; d < cl->topo->nnpus; d++)
        span = fmax(span, hccn_sim_clock(eng, d));
    hccn_sim_link_stats(eng, link, &st->bytes, &st->active_s);
    st->busy_s = isfinite(bw) && bw > 0.0 ? st->bytes / bw : 0.0;
    st->span_s = span;
    st->utilisation = span > 0.0 ? st->busy_s / span : 0.0;
    return HCCN_OK;
}

hccn_status_t hccn_mark(hccn_ctx_t *ctx, int mark)
{
    if (hccn_rt_proc_fwd())
        return hccn_rt_fwd_ctx(RT_FWD_MARK, ctx, 0.0, mark);
    hccn_status_t rc0 = hccn_rt_ctx_check("hccn_mark", ctx);
    if (rc0 != HCCN_OK)
        return rc0;
    if (mark < HCCN_MARK_USER || mark > HCCN_MARK_SYNC)
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_mark: rank %d: mark %d "
                             "is not HCCN_MARK_USER, _WARMUP or _SYNC",
                             ctx->rank, mark);
    ctx->mark = mark;
    return HCCN_OK;
}

/* ----------------------------------------------------------- summary --- */

typedef struct {
    double t0, t1;
    int kind;                 /* hccn_coll_t or HCCN_SUMMARY_P2P */
    uint64_t comm;            /* the communicator's uid */
} sum_op_t;

typedef struct {
    double t0, t1;
} span_t;

struct rt_summary {
    double since;
    sum_op_t *ops;
    int nops, capops;
    span_t *cmp;              /* compute, in time order */
    int ncmp, capcmp;
};

/* Appends *item (size bytes) to *v, growing it; 0, or -1 on no memory. */
static int push(void **v, int *n, int *cap, const void *item, size_t size)
{
    if (*n == *cap) {
        int c = *cap ? 2 * *cap : 64;
        void *nv = realloc(*v, (size_t)c * size);
        if (nv == NULL)
            return -1;
        *v = nv;
        *cap = c;
    }
    memcpy((char *)*v + (size_t)(*n)++ * size, item, size);
    return 0;
}

hccn_status_t hccn_summary_mark(hccn_ctx_t *ctx)
{
    if (hccn_rt_proc_fwd())
        return hccn_rt_fwd_ctx(RT_FWD_SUMMARY_MARK, ctx, 0.0, 0);
    hccn_status_t rc0 = hccn_rt_ctx_check("hccn_summary_mark", ctx);
    if (rc0 != HCCN_OK)
        return rc0;
    if (ctx->sum == NULL && (ctx->sum = calloc(1, sizeof(*ctx->sum))) == NULL)
        return hccn_rt_error(HCCN_ERR_NOMEM, "hccn_summary_mark: rank %d: "
                             "no memory", ctx->rank);
    ctx->sum->since = hccn_time(ctx);
    ctx->sum->nops = ctx->sum->ncmp = 0;
    return HCCN_OK;
}

void hccn_rt_summary_op(rt_op_t *op)
{
    struct rt_summary *s = op->ctx->sum;
    if (s == NULL || op->summed || op->mark == HCCN_MARK_SYNC ||
        op->batch == NULL || op->status != HCCN_OK ||
        !hccn_sim_batch_done(op->ctx->cl->eng, op->batch) ||
        hccn_sim_batch_status(op->ctx->cl->eng, op->batch, NULL, 0) !=
            HCCN_OK)
        return;
    int kind = op->kind == RT_OP_COLL ? op->fp.coll : HCCN_SUMMARY_P2P;
    if (kind >= HCCN_COLL_COUNT)
        return;                /* the runtime's own (a split) */
    op->summed = 1;
    sum_op_t o = {fmax(op->t_call, s->since), hccn_sim_batch_end(op->batch),
                  kind, op->comm->sh->uid};
    if (o.t1 > o.t0 || (o.t1 == o.t0 && op->t_call >= s->since))
        push((void **)&s->ops, &s->nops, &s->capops, &o, sizeof(o));
}

void hccn_rt_summary_compute(hccn_ctx_t *ctx, double t0, double t1)
{
    struct rt_summary *s = ctx->sum;
    span_t c = {fmax(t0, s != NULL ? s->since : t0), t1};
    if (s != NULL && c.t1 > c.t0)
        push((void **)&s->cmp, &s->ncmp, &s->capcmp, &c, sizeof(c));
}

void hccn_rt_summary_end(hccn_ctx_t *ctx)
{
    if (ctx->sum != NULL) {
        free(ctx->sum->ops);
        free(ctx->sum->cmp);
        free(ctx->sum);
        ctx->sum = NULL;
    }
    ctx->mark = HCCN_MARK_USER;
}

static int span_cmp(const void *pa, const void *pb)
{
    const span_t *a = pa, *b = pb;
    return a->t0 < b->t0 ? -1 : a->t0 > b->t0 ? 1 : 0;
}

/* Sorts v[0..n) and merges it into disjoint spans in time order; returns
 * their number and adds their total length to *len. */
static int merge(span_t *v, int n, double *len)
{
    qsort(v, (size_t)n, sizeof(*v), span_cmp);
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (m > 0 && v[i].t0 <= v[m - 1].t1)
            v[m - 1].t1 = fmax(v[m - 1].t1, v[i].t1);
        else
            v[m++] = v[i];
    }
    for (int i = 0; i < m; i++)
        *len += v[i].t1 - v[i].t0;
    return m;
}

/* Total length of the intersection of two lists of disjoint sorted spans. */
static double overlap(const span_t *a, int na, const span_t *b, int nb)
{
    double t = 0.0;
    for (int i = 0, j = 0; i < na && j < nb;) {
        double lo = fmax(a[i].t0, b[j].t0), hi = fmin(a[i].t1, b[j].t1);
        if (hi > lo)
            t += hi - lo;
        if (a[i].t1 < b[j].t1)
            i++;
        else
            j++;
    }
    return t;
}

hccn_status_t hccn_summary(hccn_ctx_t *ctx, const hccn_comm_t *comm, int kind,
                           hccn_comm_summary_t *out)
{
    if (hccn_rt_proc_fwd())
        return hccn_rt_fwd_summary(ctx, comm, kind, out);
    void *h = NULL;
    hccn_status_t rc0 = hccn_rt_ctx_check("hccn_summary", ctx);
    if (rc0 == HCCN_OK && comm != NULL)
        rc0 = hccn_rt_handle_get("hccn_summary", RT_H_COMM, comm, 0, &h);
    if (rc0 != HCCN_OK)
        return rc0;
    comm = h;
    if (out == NULL || out->struct_size < sizeof(*out))
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_summary: rank %d: out "
                             "is NULL, or its struct_size is too small",
                             ctx->rank);
    if (kind < HCCN_SUMMARY_P2P || kind >= HCCN_COLL_COUNT)
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_summary: rank %d: kind "
                             "%d is not a hccn_coll_t, HCCN_SUMMARY_P2P or "
                             "HCCN_SUMMARY_ALL", ctx->rank, kind);
    const struct rt_summary *s = ctx->sum;
    if (s == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_summary: rank %d: no "
                             "hccn_summary_mark in this run", ctx->rank);
    span_t *v = malloc(((size_t)s->nops + (size_t)s->ncmp + 1) * sizeof(*v));
    if (v == NULL)
        return hccn_rt_error(HCCN_ERR_NOMEM, "hccn_summary: rank %d: no "
                             "memory", ctx->rank);
    size_t size = out->struct_size;
    memset(out, 0, sizeof(*out));
    out->struct_size = size;
    int n = 0;
    for (int i = 0; i < s->nops; i++) {
        const sum_op_t *o = &s->ops[i];
        if ((comm == NULL || o->comm == comm->sh->uid) &&
            (kind == HCCN_SUMMARY_ALL || kind == o->kind)) {
            v[n++] = (span_t){o->t0, o->t1};
            out->ops++;
        }
    }
    span_t *c = v + n;
    memcpy(c, s->cmp, (size_t)s->ncmp * sizeof(*c));
    int nv = merge(v, n, &out->comm_s);
    int nc = merge(c, s->ncmp, &out->compute_s);
    out->hidden_s = overlap(v, nv, c, nc);
    out->exposed_s = out->comm_s - out->hidden_s;
    out->since_s = s->since;
    out->until_s = hccn_time(ctx);
    free(v);
    return HCCN_OK;
}
