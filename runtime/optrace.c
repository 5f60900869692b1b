/*
 * Operations and compute in the cluster's trace (device_sim/trace.h), when
 * one is attached to its engine: a collective is one slice, its phases
 * (hccn_step_t.phase, named by hccn_sched_phase_name) slices inside it and
 * its steps slices inside their phases, all from the engine's simulated
 * times. Without a trace these functions return at once. Operations
 * marked HCCN_MARK_SYNC are left out; HCCN_MARK_WARMUP ones are named
 * "NAME (warm-up)" with "warmup":1 in their arguments.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "device_sim/alloc.h"
#include "device_sim/software.h"
#include "device_sim/trace.h"
#include "hccn/hccn_sim.h"
#include "runtime/rt.h"

#define ARGS_MAX 160
#define PHASES 256

static const char *step_name(int kind)
{
    switch (kind) {
    case HCCN_STEP_SEND: return "send";
    case HCCN_STEP_RECV: return "recv";
    case HCCN_STEP_RECV_REDUCE: return "recv+reduce";
    case HCCN_STEP_COPY: return "copy";
    default: return "reduce";
    }
}

/* Slices of one collective: [0] the operation, then its phases in phase
 * order, then its steps. */
typedef struct {
    hccn_sim_trace_slice_t *s;
    char (*args)[ARGS_MAX];
    char (*names)[32];
    int n;
} group_t;

static int group_alloc(group_t *g, uint32_t nsteps)
{
    size_t m = (size_t)nsteps + PHASES + 1;
    g->s = hccn_sim_calloc(m, sizeof(*g->s));
    g->args = hccn_sim_calloc(m, sizeof(*g->args));
    g->names = hccn_sim_calloc(PHASES, sizeof(*g->names));
    g->n = 0;
    return g->s != NULL && g->args != NULL && g->names != NULL ? 0 : -1;
}

static void group_free(group_t *g)
{
    hccn_sim_free(g->s);
    hccn_sim_free(g->args);
    hccn_sim_free(g->names);
}

/* Gives each phase the rank's steps use a slice, in phase order after
 * the operation: slot[ph] is its index in g; slot[0] = 0, so steps without
 * a phase hang under the operation. A phase spans its steps. */
static void add_phases(group_t *g, const rt_op_t *op, int *slot)
{
    const hccn_sched_rank_t *rk = &op->sched->ranks[op->comm->rank];
    unsigned char used[PHASES] = {0};
    for (uint32_t i = 0; i < rk->nsteps; i++)
        used[rk->steps[i].phase] = 1;
    slot[0] = 0;
    for (int ph = 1; ph < PHASES; ph++) {
        slot[ph] = -1;
        if (!used[ph])
            continue;
        const char *name = hccn_sched_phase_name(op->sched->algo,
                                                 (hccn_coll_t)op->fp.coll, ph);
        if (name == NULL) {
            snprintf(g->names[ph], sizeof(g->names[ph]), "phase %d", ph);
            name = g->names[ph];
        }
        int k = slot[ph] = g->n++;
        g->s[k] = (hccn_sim_trace_slice_t){
            .depth = HCCN_SIM_TRACE_PHASE, .parent = 0, .begin = INFINITY,
            .end = -INFINITY, .name = name, .args = g->args[k]};
        snprintf(g->args[k], ARGS_MAX, "\"phase\":%d", ph);
    }
    for (uint32_t i = 0; i < rk->nsteps; i++) {
        int k = slot[rk->steps[i].phase];
        if (k <= 0)
            continue;
        g->s[k].begin = fmin(g->s[k].begin,
                             hccn_sim_task_begin(op->batch, (int)i));
        g->s[k].end = fmax(g->s[k].end, hccn_sim_task_end(op->batch, (int)i));
    }
}

/* The protocol the engine runs transfer step st of bytes under (on the
 * sender's route, for the block it is a slice of, or the call's own:
 * software.h), -1 without a software model. */
static int step_proto(const rt_op_t *op, const hccn_step_t *st,
                      uint64_t bytes)
{
    const int *world = op->comm->sh->world;
    int me = world[op->comm->rank], peer = world[st->peer];
    int send = st->kind == HCCN_STEP_SEND;
    uint32_t scale = op->sched->proto_scale > 1 ? op->sched->proto_scale : 1;
    const hccn_sim_topo_t *topo = op->ctx->cl->topo;
    int p = hccn_sim_sw_route_pick(topo, send ? me : peer, send ? peer : me,
                                   bytes * scale, NULL);
    int q = p >= 0 ? hccn_sim_sw_call_proto(topo->sw, op->sched->nvswitch)
                   : -1;
    return q >= 0 ? q : p;
}

static void add_steps(group_t *g, const rt_op_t *op, const int *slot)
{
    const hccn_sched_rank_t *rk = &op->sched->ranks[op->comm->rank];
    const int *world = op->comm->sh->world;
    for (uint32_t i = 0; i < rk->nsteps; i++) {
        const hccn_step_t *st = &rk->steps[i];
        int k = g->n++;
        uint64_t bytes = st->bytes;
        int xfer = st->kind == HCCN_STEP_SEND || st->kind == HCCN_STEP_RECV ||
                   st->kind == HCCN_STEP_RECV_REDUCE;
        if (xfer && op->compress)
            bytes /= 2;
        g->s[k] = (hccn_sim_trace_slice_t){
            .depth = HCCN_SIM_TRACE_STEP, .parent = slot[st->phase],
            .begin = hccn_sim_task_begin(op->batch, (int)i),
            .end = hccn_sim_task_end(op->batch, (int)i),
            .name = step_name(st->kind), .args = g->args[k]};
        int len = snprintf(g->args[k], ARGS_MAX,
                           "\"step\":%" PRIu32 ",\"phase\":%d,\"bytes\":%"
                           PRIu64, i, st->phase, bytes);
        if (xfer)
            len += snprintf(g->args[k] + len, ARGS_MAX - (size_t)len,
                            ",\"peer\":%d", world[st->peer]);
        int p = xfer ? step_proto(op, st, bytes) : -1;
        if (p >= 0 && len > 0 && len < ARGS_MAX)
            snprintf(g->args[k] + len, ARGS_MAX - (size_t)len,
                     ",\"proto\":\"%s\"", hccn_sim_proto_name(p));
    }
}

/* The operation's slice name: base, or "base (warm-up)" when marked so. */
static const char *op_name(const rt_op_t *op, const char *base, char buf[48])
{
    if (op->mark != HCCN_MARK_WARMUP)
        return base;
    snprintf(buf, 48, "%s (warm-up)", base);
    return buf;
}

static void trace_coll(hccn_sim_trace_t *tr, const rt_op_t *op)
{
    const hccn_sched_rank_t *rk = &op->sched->ranks[op->comm->rank];
    group_t g;
    int slot[PHASES];
    if (group_alloc(&g, rk->nsteps) != 0) {
        group_free(&g);
        return;
    }
    char name[48];
    g.n = 1;
    g.s[0] = (hccn_sim_trace_slice_t){
        .depth = HCCN_SIM_TRACE_OP, .parent = -1,
        .begin = hccn_sim_batch_start(op->batch),
        .end = hccn_sim_batch_end(op->batch),
        .name = op_name(op, hccn_rt_fp_name(op->fp.coll), name),
        .args = g.args[0]};
    snprintf(g.args[0], ARGS_MAX,
             "\"count\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"dtype\":\"%s\","
             "\"algorithm\":\"%s\",\"comm\":%" PRIu64 ",\"seq\":%" PRIu64
             "%s",
             op->count, op->count * hccn_dtype_size(op->dtype),
             hccn_dtype_name(op->dtype), op->sched->algo, op->comm->sh->uid,
             op->seq, op->mark == HCCN_MARK_WARMUP ? ",\"warmup\":1" : "");
    add_phases(&g, op, slot);
    add_steps(&g, op, slot);
    hccn_sim_trace_record(tr, op->ctx->rank, g.s, g.n);
    group_free(&g);
}

static void trace_p2p(hccn_sim_trace_t *tr, const rt_op_t *op)
{
    char args[ARGS_MAX], name[48];
    int send = op->kind == RT_OP_SEND;
    snprintf(args, sizeof(args), "\"peer\":%d,\"bytes\":%zu%s",
             op->comm->sh->world[op->peer], op->bytes,
             op->mark == HCCN_MARK_WARMUP ? ",\"warmup\":1" : "");
    hccn_sim_trace_slice_t s = {
        .depth = HCCN_SIM_TRACE_OP, .parent = -1,
        .begin = hccn_sim_batch_start(op->batch),
        .end = hccn_sim_batch_end(op->batch),
        .name = op_name(op, send ? "send" : "recv", name), .args = args};
    hccn_sim_trace_record(tr, op->ctx->rank, &s, 1);
}

void hccn_rt_trace_op(const rt_op_t *op)
{
    hccn_cluster_t *cl = op->ctx->cl;
    hccn_sim_trace_t *tr = hccn_sim_engine_trace(cl->eng);
    if (tr == NULL || op->batch == NULL || op->status != HCCN_OK ||
        op->mark == HCCN_MARK_SYNC ||
        !hccn_sim_batch_done(cl->eng, op->batch) ||
        hccn_sim_batch_status(cl->eng, op->batch, NULL, 0) != HCCN_OK)
        return;
    if (op->kind == RT_OP_COLL)
        trace_coll(tr, op);
    else
        trace_p2p(tr, op);
}

void hccn_rt_trace_compute(hccn_ctx_t *ctx, double t0, double t1)
{
    hccn_rt_summary_compute(ctx, t0, t1);
    hccn_sim_trace_t *tr = hccn_sim_engine_trace(ctx->cl->eng);
    if (tr == NULL || !(t1 > t0))
        return;
    char args[ARGS_MAX];
    snprintf(args, sizeof(args), "\"seconds\":%.17g", t1 - t0);
    hccn_sim_trace_slice_t s = {.depth = HCCN_SIM_TRACE_OP, .parent = -1,
                                .begin = t0, .end = t1, .name = "compute",
                                .args = args};
    hccn_sim_trace_record(tr, ctx->rank, &s, 1);
}
