/*
 * The rendezvous of a recovery call (runtime/recover.h says what it is).
 *
 * Steps of one participant: arrive (or, with its NPU failed, leave with
 * HCCN_ERR_FAULT at once); wait until every participant is settled; then
 * per round: move its clock to the round's detection time, exchange votes
 * and meet the others at the latest end (runtime/recover_time.c), report;
 * the last to report decides: done, a new round without the members that
 * failed by then, or an error for all.
 *
 * Determinism: who is alive is a matter of simulated clocks and the fault
 * plan, never of which thread got where first: a participant that arrives
 * did so at its clock, before its failure; one that cannot arrive any more
 * is known from its clock or its return.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_sim/alloc.h"
#include "runtime/recover.h"

/* ------------------------------------------------------------ the record */

static int ft_grow(rt_ft_t *ft, int np)
{
    if (np <= ft->capp)
        return 0;
    int **arr[] = {&ft->who, &ft->state, &ft->flag, &ft->rep, &ft->rep_ok};
    for (size_t i = 0; i < sizeof(arr) / sizeof(arr[0]); i++) {
        int *n = hccn_sim_realloc(*arr[i], (size_t)np * sizeof(int));
        if (n == NULL)
            return -1;
        *arr[i] = n;
    }
    double *e = hccn_sim_realloc(ft->rep_end, (size_t)np * sizeof(double));
    if (e == NULL)
        return -1;
    ft->rep_end = e;
    hccn_status_t *s = hccn_sim_realloc(ft->rep_st, (size_t)np * sizeof(*s));
    if (s == NULL)
        return -1;
    ft->rep_st = s;
    ft->capp = np;
    return 0;
}

/* c's record, made on first use (lock held); NULL on no memory. */
static rt_ft_t *ft_get(rt_comm_t *c)
{
    if (c->ft != NULL)
        return c->ft;
    rt_ft_t *ft = hccn_sim_calloc(1, sizeof(*ft));
    if (ft == NULL)
        return NULL;
    ft->nmem = c->size;
    ft->seqs = hccn_sim_calloc((size_t)c->size, sizeof(uint64_t));
    ft->known = hccn_sim_calloc((size_t)c->size, sizeof(int *));
    ft->nknown = hccn_sim_calloc((size_t)c->size, sizeof(int));
    if (ft->seqs == NULL || ft->known == NULL || ft->nknown == NULL ||
        ft_grow(ft, c->size) != 0) {
        hccn_rt_ft_free(ft);
        return NULL;
    }
    c->ft = ft;
    return ft;
}

void hccn_rt_ft_free(rt_ft_t *ft)
{
    if (ft == NULL)
        return;
    for (int i = 0; ft->known != NULL && i < ft->nmem; i++)
        hccn_sim_free(ft->known[i]);
    hccn_sim_free(ft->known);
    hccn_sim_free(ft->nknown);
    hccn_sim_free(ft->seqs);
    hccn_sim_free(ft->who);
    hccn_sim_free(ft->state);
    hccn_sim_free(ft->flag);
    hccn_sim_free(ft->rep);
    hccn_sim_free(ft->rep_ok);
    hccn_sim_free(ft->rep_end);
    hccn_sim_free(ft->rep_st);
    hccn_sim_free(ft);
}

/* Opens the record for call seq of kind on c (lock held). */
static int ft_open(rt_comm_t *c, rt_ft_t *ft, uint64_t seq, int kind,
                   uint64_t tag, const int *ranks, int n)
{
    if (ft_grow(ft, c->size + n) != 0)
        return -1;
    ft->open = 1;
    ft->seq = seq;
    ft->kind = kind;
    ft->tag = tag;
    ft->np = c->size + n;
    for (int i = 0; i < ft->np; i++) {
        ft->who[i] = i < c->size ? c->world[i] : ranks[i - c->size];
        ft->state[i] = RT_FT_NONE;
        ft->rep[i] = 0;
    }
    ft->inside = ft->started = ft->round = ft->nround = ft->nrep = 0;
    ft->final = 0;
    ft->status = HCCN_OK;
    ft->msg[0] = ft->rep_msg[0] = '\0';
    ft->rcomm = ft->result = NULL;
    ft->t_detect = 0.0;
    return 0;
}

/* A communicator of the participants alive now, in participant order, on
 * the cluster's list of those made in this run (lock of c held). */
static rt_comm_t *alive_comm(rt_comm_t *c, rt_ft_t *ft)
{
    int *world = hccn_sim_malloc((size_t)ft->np * sizeof(int)), m = 0;
    if (world == NULL)
        return NULL;
    for (int i = 0; i < ft->np; i++)
        if (ft->state[i] == RT_FT_ALIVE)
            world[m++] = ft->who[i];
    rt_comm_t *nc = hccn_rt_comm_new(c->cl, m, world);
    hccn_sim_free(world);
    if (nc == NULL)
        return NULL;
    nc->live_handles = m;
    pthread_mutex_lock(&c->cl->comms_lock);
    nc->next_sub = c->cl->subcomms;
    c->cl->subcomms = nc;
    pthread_mutex_unlock(&c->cl->comms_lock);
    return nc;
}

/* ------------------------------------------------------------- settling */

/* When participant world rank w failed, if it has (INFINITY if not): its
 * NPU's failure once its clock has passed it, or its return. */
static double failed_at(hccn_cluster_t *cl, int w)
{
    double f = hccn_sim_fail_at(cl->eng, w);
    double clock = hccn_sim_clock(cl->eng, w);
    if (f <= clock)
        return f;
    if (atomic_load(&cl->ctxs[w].finished))
        return clock;
    return INFINITY;
}

typedef struct {
    rt_comm_t *c;
    rt_ft_t *ft;
    uint64_t seq;
    int round;
} ft_wait_t;

/* Every participant is settled, or the call is decided (done callback). */
static int all_settled(void *arg)
{
    ft_wait_t *w = arg;
    hccn_cluster_t *cl = w->c->cl;
    pthread_mutex_lock(&w->c->lock);
    int ok = w->ft->final || w->ft->started;
    for (int i = 0; !ok && i < w->ft->np; i++) {
        if (w->ft->state[i] == RT_FT_NONE &&
            isinf(failed_at(cl, w->ft->who[i])))
            break;
        ok = i == w->ft->np - 1;
    }
    pthread_mutex_unlock(&w->c->lock);
    return ok;
}

/* The record is free for call seq (done callback). */
static int ft_free_for(void *arg)
{
    ft_wait_t *w = arg;
    pthread_mutex_lock(&w->c->lock);
    int ok = !w->ft->open || w->ft->seq == w->seq;
    pthread_mutex_unlock(&w->c->lock);
    return ok;
}

/* The round after w->round has been set up, or the call decided. */
static int round_moved(void *arg)
{
    ft_wait_t *w = arg;
    pthread_mutex_lock(&w->c->lock);
    int ok = w->ft->final || w->ft->round > w->round;
    pthread_mutex_unlock(&w->c->lock);
    return ok;
}

static void ring_participants(rt_comm_t *c, rt_ft_t *ft)
{
    hccn_rt_progressed(&c->cl->ctxs[0]);
    /* Under the lock: the next call may be opening the record. */
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < ft->np; i++)
        hccn_sim_bell_ring(&c->cl->ctxs[ft->who[i]].bell);
    pthread_mutex_unlock(&c->lock);
}

/* Ends the call for everyone with status (lock held). */
static void decide_fail(rt_ft_t *ft, hccn_status_t st, const char *msg)
{
    ft->final = 1;
    ft->status = st;
    snprintf(ft->msg, sizeof(ft->msg), "%s", msg);
}

/* The latest time at which a participant not alive failed, plus the
 * detection delay (0 when none failed) (lock held). */
static double detect_time(hccn_cluster_t *cl, rt_ft_t *ft)
{
    double t = 0.0;
    for (int i = 0; i < ft->np; i++) {
        if (ft->state[i] == RT_FT_ALIVE)
            continue;
        double f = failed_at(cl, ft->who[i]) + hccn_rt_ft_detect_s(cl);
        if (f > t)
            t = f;
    }
    return t;
}

/* Sets up the next round among the participants alive (lock held). */
static void round_setup(rt_comm_t *c, rt_ft_t *ft)
{
    ft->nround = 0;
    for (int i = 0; i < ft->np; i++) {
        if (ft->state[i] == RT_FT_NONE)
            ft->state[i] = RT_FT_DEAD;
        ft->nround += ft->state[i] == RT_FT_ALIVE;
    }
    ft->t_detect = detect_time(c->cl, ft);
    ft->nrep = 0;
    ft->rep_msg[0] = '\0';
    if (ft->nround == 0)
        decide_fail(ft, HCCN_ERR_FAULT, "every participant failed");
    else if ((ft->rcomm = alive_comm(c, ft)) == NULL)
        decide_fail(ft, HCCN_ERR_NOMEM, "out of memory for a round");
}

/* The last report of a round is in: done, another round, or an error for
 * every participant (lock held). */
static void round_decide(rt_comm_t *c, rt_ft_t *ft)
{
    double tmax = 0.0;
    int all_ok = 1, dead = 0;
    hccn_status_t first = HCCN_OK;
    for (int i = 0; i < ft->np; i++) {
        if (ft->state[i] != RT_FT_ALIVE)
            continue;
        all_ok &= ft->rep_ok[i];
        if (!ft->rep_ok[i] && first == HCCN_OK)
            first = ft->rep_st[i];
        if (ft->rep_end[i] > tmax)
            tmax = ft->rep_end[i];
    }
    if (all_ok) {
        ft->final = 1;
        if (ft->kind != RT_FT_AGREE && (ft->result = alive_comm(c, ft)) == NULL)
            decide_fail(ft, HCCN_ERR_NOMEM, "out of memory for the new "
                        "communicator");
        return;
    }
    for (int i = 0; i < ft->np; i++)
        if (ft->state[i] == RT_FT_ALIVE &&
            hccn_sim_fail_at(c->cl->eng, ft->who[i]) <= tmax) {
            ft->state[i] = RT_FT_DEAD;
            dead++;
        }
    if (dead == 0) {
        decide_fail(ft, first, ft->rep_msg);
        return;
    }
    ft->round++;
    round_setup(c, ft);
}

/* ------------------------------------------------------- one participant */

/* Registers participant i of ft (lock held); HCCN_OK, or why not. */
static hccn_status_t arrive(rt_comm_t *c, rt_ft_t *ft, int i, int kind,
                            uint64_t tag, const int *ranks, int n,
                            uint64_t seq, int flag)
{
    if (!ft->open && ft_open(c, ft, seq, kind, tag, ranks, n) != 0)
        return HCCN_ERR_NOMEM;
    if (!ft->final && (ft->kind != kind || ft->tag != tag)) {
        static const char *names[] = {"hccn_comm_agree", "hccn_comm_shrink",
                                      "hccn_comm_grow"};
        char msg[256];
        snprintf(msg, sizeof(msg), "recovery call #%llu on communicator "
                 "%llu: rank %d called %s but another member called %s%s",
                 (unsigned long long)seq, (unsigned long long)c->uid,
                 ft->who[i], names[kind], names[ft->kind],
                 ft->kind == kind ? " with another list of ranks" : "");
        decide_fail(ft, HCCN_ERR_MISMATCH, msg);
    }
    ft->state[i] = RT_FT_ALIVE;
    ft->flag[i] = flag;
    ft->inside++;
    return HCCN_OK;
}

/* Runs the rounds in which participant i takes part; *and_out is the
 * last round's AND. Returns 1 if it failed in one (it is dead). */
static int rounds(hccn_ctx_t *ctx, rt_comm_t *c, rt_ft_t *ft, int i,
                  const char *fn, int *and_out)
{
    for (;;) {
        pthread_mutex_lock(&c->lock);
        int r = ft->round, fin = ft->final, alive = ft->state[i] == RT_FT_ALIVE;
        rt_comm_t *rc = ft->rcomm;
        double tdet = ft->t_detect;
        int flag = ft->flag[i];
        pthread_mutex_unlock(&c->lock);
        if (fin || !alive)
            return !alive;
        hccn_rt_ft_clock_to(ctx, tdet, "failure_detect");
        hccn_status_t st = hccn_rt_ft_vote(ctx, rc, i, flag, and_out);
        /* Every member of the round learns its outcome at the latest end:
         * the simulated time of the decision. */
        hccn_status_t sync = hccn_rt_ft_round_sync(ctx, rc, fn);
        if (st == HCCN_OK && sync != HCCN_OK)
            st = sync;
        pthread_mutex_lock(&c->lock);
        ft->rep[i] = r + 1;
        ft->rep_ok[i] = st == HCCN_OK;
        ft->rep_st[i] = st;
        ft->rep_end[i] = hccn_sim_clock(ctx->cl->eng, ctx->rank);
        if (st != HCCN_OK && ft->rep_msg[0] == '\0')
            snprintf(ft->rep_msg, sizeof(ft->rep_msg), "%s", hccn_last_error());
        if (++ft->nrep == ft->nround)
            round_decide(c, ft);
        pthread_mutex_unlock(&c->lock);
        ring_participants(c, ft);
        ft_wait_t w = {c, ft, 0, r};
        if (hccn_rt_block(ctx, NULL, round_moved, NULL, &w, fn) != HCCN_OK)
            return 1;
    }
}

/* Leaves the record: what participant i (member index < nmem) learnt
 * failed, and the record freed for the next call once all have left
 * (lock held). */
static void leave(rt_ft_t *ft, int i)
{
    if (i < ft->nmem && ft->final && ft->status == HCCN_OK) {
        int *k = hccn_sim_realloc(ft->known[i], (size_t)ft->nmem * sizeof(int) + 1);
        if (k != NULL) {
            ft->known[i] = k;
            ft->nknown[i] = 0;
            for (int q = 0; q < ft->nmem; q++)
                if (ft->state[q] != RT_FT_ALIVE)
                    k[ft->nknown[i]++] = q;
        }
    }
    if (--ft->inside == 0 && (ft->final || ft->started))
        ft->open = 0;
}

/* The token of world rank me's handle on nc. */
static hccn_comm_t *token_of(rt_comm_t *nc, int me)
{
    for (int q = 0; q < nc->size; q++)
        if (nc->world[q] == me)
            return nc->handles[q]->token;
    return NULL;
}

hccn_status_t hccn_rt_ft_call(const char *fn, hccn_ctx_t *ctx, rt_comm_t *c,
                              hccn_comm_t *comm, int kind, int *flag,
                              const int *ranks, int n, hccn_comm_t **out)
{
    hccn_sim_engine_t *eng = ctx->cl->eng;
    int i = comm != NULL ? comm->rank : c->size;
    for (int k = 0; comm == NULL && k < n && ranks[k] != ctx->rank; k++)
        i++;
    uint64_t tag = kind == RT_FT_GROW ? hccn_rt_ft_tag(kind, ranks, n) : 0;
    pthread_mutex_lock(&c->lock);
    rt_ft_t *ft = ft_get(c);
    uint64_t seq = 0;
    if (ft != NULL)
        seq = comm != NULL ? ft->seqs[i]++ : ft->seq;
    pthread_mutex_unlock(&c->lock);
    if (ft == NULL)
        return hccn_sim_fail_context("%s: rank %d", fn, ctx->rank);
    double now = hccn_sim_clock(eng, ctx->rank);
    double f = hccn_sim_fail_at(eng, ctx->rank);
    if (f <= now)
        return hccn_rt_error(HCCN_ERR_FAULT, "%s: rank %d: NPU %d failed at "
                             "%.3f us (fault plan); its clock is at %.3f us",
                             fn, ctx->rank, ctx->rank, f * 1e6, now * 1e6);
    ft_wait_t w = {c, ft, seq, 0};
    hccn_status_t rc = hccn_rt_block(ctx, NULL, ft_free_for, NULL, &w, fn);
    if (rc != HCCN_OK)
        return rc;
    pthread_mutex_lock(&c->lock);
    rc = arrive(c, ft, i, kind, tag, ranks, n, seq, flag ? *flag : ~0);
    pthread_mutex_unlock(&c->lock);
    if (rc != HCCN_OK)
        return hccn_sim_fail_context("%s: rank %d", fn, ctx->rank);
    ring_participants(c, ft);
    if (kind == RT_FT_GROW)
        rc = hccn_rt_ft_grow_gate(ctx, c, i, seq, tag, n, fn);
    if (rc == HCCN_OK)
        rc = hccn_rt_block(ctx, NULL, all_settled, NULL, &w, fn);
    pthread_mutex_lock(&c->lock);
    if (rc == HCCN_OK && !ft->started && !ft->final) {
        ft->started = 1;
        round_setup(c, ft);
    }
    pthread_mutex_unlock(&c->lock);
    ring_participants(c, ft);
    int and_v = ~0;
    int dead = rc == HCCN_OK && rounds(ctx, c, ft, i, fn, &and_v);
    pthread_mutex_lock(&c->lock);
    hccn_status_t st = rc != HCCN_OK ? rc : dead ? HCCN_ERR_FAULT : ft->status;
    char msg[RT_ERR_MAX];
    snprintf(msg, sizeof(msg), "%s", dead ? hccn_last_error() : ft->msg);
    rt_comm_t *nc = ft->result;
    leave(ft, i);
    pthread_mutex_unlock(&c->lock);
    ring_participants(c, ft);
    if (rc != HCCN_OK)
        return rc;     /* reported by the wait */
    if (st != HCCN_OK)
        return hccn_rt_error(st, "%s: rank %d: %s", fn, ctx->rank, msg);
    if (flag != NULL)
        *flag = and_v;
    if (nc != NULL) {
        hccn_rt_ft_clock_to(ctx, hccn_sim_clock(eng, ctx->rank) +
                                     hccn_rt_ft_init_s(ctx->cl), "comm_init");
        *out = token_of(nc, ctx->rank);
    }
    return HCCN_OK;
}
