/*
 * Waiting, and diagnosing waits that will never end.
 *
 * Every blocking wait of a rank goes through hccn_rt_block. While it waits
 * the rank keeps moving its other operations. It stops waiting, with a
 * report of every rank's state, when:
 * - the communicator is aborted (HCCN_ERR_ABORTED) or revoked
 *   (HCCN_ERR_REVOKED; not a collective every member had joined:
 *   revoke_spares);
 * - a rank it needs has returned from its function (HCCN_ERR_REMOTE): a
 *   finished rank has drained its own operations, so whatever it has not
 *   delivered by then it never will;
 * - every live rank is asleep in a wait and nobody has made progress since
 *   they fell asleep: a deadlock, reported at once (HCCN_ERR_TIMEOUT);
 * - the wall-clock timeout passes (HCCN_ERR_TIMEOUT).
 *
 * Deadlock rule: the cluster keeps an epoch that any rank bumps when it
 * moves anything. A rank going to sleep records the epoch; if all live
 * ranks are asleep with the current epoch, no one can change anything that
 * would wake another, so the wait can never end.
 */
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "runtime/proc.h"
#include "runtime/rt.h"

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void ring_all(hccn_cluster_t *cl)
{
    for (int r = 0; r < cl->nranks; r++)
        hccn_sim_bell_ring(&cl->ctxs[r].bell);
}

void hccn_rt_progressed(hccn_ctx_t *ctx)
{
    atomic_fetch_add(&ctx->cl->epoch, 1);
}

void hccn_rt_rank_finished(hccn_ctx_t *ctx)
{
    hccn_cluster_t *cl = ctx->cl;
    pthread_mutex_lock(&cl->state_lock);
    atomic_store(&ctx->finished, 1);
    cl->nlive--;
    pthread_mutex_unlock(&cl->state_lock);
    hccn_rt_progressed(ctx);
    ring_all(cl);
}

static rt_op_desc_t op_desc(const rt_op_t *op)
{
    int coll = op->kind == RT_OP_COLL;
    return (rt_op_desc_t){op->kind, op->fp.coll, coll ? op->seq : op->pseq,
                          op->peer, op->comm->sh->uid};
}

static int desc_format(const rt_op_desc_t *d, char *buf, size_t len)
{
    if (d->kind == RT_OP_COLL)
        return snprintf(buf, len, "%s #%llu on comm %llu",
                        hccn_rt_fp_name(d->coll), (unsigned long long)d->seq,
                        (unsigned long long)d->uid);
    return snprintf(buf, len, "%s #%llu %s comm rank %d on comm %llu",
                    d->kind == RT_OP_SEND ? "send" : "recv",
                    (unsigned long long)d->seq,
                    d->kind == RT_OP_SEND ? "to" : "from", d->peer,
                    (unsigned long long)d->uid);
}

void hccn_rt_set_current(hccn_ctx_t *ctx, rt_op_t *op)
{
    pthread_mutex_lock(&ctx->cur_lock);
    if (op == NULL && ctx->cur != NULL)
        ctx->last = op_desc(ctx->cur);
    ctx->cur = op;
    pthread_mutex_unlock(&ctx->cur_lock);
}

int hccn_rt_op_describe(const rt_op_t *op, char *buf, size_t len)
{
    rt_op_desc_t d = op_desc(op);
    return desc_format(&d, buf, len);
}

/* A list of ranks written as ranges ("0-2, 5"), built in increasing
 * order: a run is written out when a rank breaks it. */
typedef struct {
    char *buf;
    size_t len, used;
    int first, last, count;
} ranks_t;

static void ranks_flush(ranks_t *l)
{
    if (l->count == 0 || l->used >= l->len)
        return;
    const char *sep = l->used > 0 ? ", " : "";
    l->used += (size_t)(l->first == l->last
                            ? snprintf(l->buf + l->used, l->len - l->used,
                                       "%s%d", sep, l->first)
                            : snprintf(l->buf + l->used, l->len - l->used,
                                       "%s%d-%d", sep, l->first, l->last));
}

static void ranks_add(ranks_t *l, int r)
{
    if (l->count > 0 && r == l->last + 1) {
        l->last = r;
    } else {
        ranks_flush(l);
        l->first = l->last = r;
    }
    l->count++;
}

/* Appends the ranks that have not arrived at op's rendezvous, if any, as
 * comm ranks and, where they differ, as ranks of the cluster. Read from
 * the rendezvous, under its lock: op's stage belongs to its owner's
 * thread, which may be moving it on. */
static size_t missing_ranks(const rt_op_t *op, char *buf, size_t len)
{
    rt_comm_t *c = op->comm->sh;
    rt_slot_t *s = &c->slots[op->seq % RT_SLOTS];
    char cr[256] = "", wr[256] = "";
    ranks_t lc = {cr, sizeof(cr), 0, 0, 0, 0};
    ranks_t lw = {wr, sizeof(wr), 0, 0, 0, 0};
    int same = 1;
    pthread_mutex_lock(&c->lock);
    if (s->in_use && s->seq == op->seq && s->arrived < c->size)
        for (int r = 0; r < c->size; r++)
            if (!s->here[r]) {
                ranks_add(&lc, r);
                ranks_add(&lw, c->world[r]);
                same = same && c->world[r] == r;
            }
    pthread_mutex_unlock(&c->lock);
    if (lc.count == 0)
        return 0;
    ranks_flush(&lc);
    ranks_flush(&lw);
    int n = same ? snprintf(buf, len, "; not arrived: %s %s",
                            lc.count > 1 ? "ranks" : "rank", cr)
                 : snprintf(buf, len, "; not arrived: comm %s %s (%s %s)",
                            lc.count > 1 ? "ranks" : "rank", cr,
                            lw.count > 1 ? "ranks" : "rank", wr);
    return (size_t)n < len ? (size_t)n : len;
}

/* One rank's line of a state report. */
static void rank_state(hccn_ctx_t *x, char *what, size_t len)
{
    pthread_mutex_lock(&x->cur_lock);
    if (atomic_load(&x->finished)) {
        snprintf(what, len, "returned from its function");
    } else if (x->cur != NULL) {
        size_t k = (size_t)snprintf(what, len, "waits in ");
        k += (size_t)hccn_rt_op_describe(x->cur, what + k, len - k);
        if (x->cur->kind == RT_OP_COLL && k < len)
            missing_ranks(x->cur, what + k, len - k);
    } else if (x->cur_call != NULL) {
        snprintf(what, len, "waits in %s", x->cur_call);
    } else {
        char last[128] = "nothing";
        if (x->last.kind >= 0)
            desc_format(&x->last, last, sizeof(last));
        snprintf(what, len, "runs its own code; last completed: %s", last);
    }
    pthread_mutex_unlock(&x->cur_lock);
}

void hccn_rt_rank_state(hccn_ctx_t *ctx, char *buf, size_t len)
{
    rank_state(ctx, buf, len);
}

/* Ranks waiting in the same state share one line of a report (the first
 * STATES_SHOWN such states); any other rank has a line of its own. */
enum { STATES_SHOWN = 12 };

typedef struct {
    char what[256];
    char list[256];
    ranks_t ranks;
} state_group_t;

/* Puts rank r, whose state is what, in a group of waiting ranks; 0 if it
 * does not wait or the groups are full and none matches. */
static int group_rank(state_group_t *g, int *ng, int r, const char *what)
{
    if (strncmp(what, "waits in ", 9) != 0)
        return 0;
    int k = 0;
    while (k < *ng && strcmp(g[k].what, what) != 0)
        k++;
    if (k == *ng) {
        if (*ng == STATES_SHOWN)
            return 0;
        snprintf(g[k].what, sizeof(g[k].what), "%s", what);
        g[k].list[0] = '\0';
        g[k].ranks = (ranks_t){g[k].list, sizeof(g[k].list), 0, 0, 0, 0};
        (*ng)++;
    }
    ranks_add(&g[k].ranks, r);
    return 1;
}

void hccn_rt_state_report(hccn_cluster_t *cl, char *buf, size_t len)
{
    /* Static under the lock: a report is rare, and the groups are too big
     * for a rank thread's stack. */
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static state_group_t g[STATES_SHOWN];
    static char alone[RT_ERR_MAX];
    int ng = 0;
    size_t n = 0, na = 0;
    pthread_mutex_lock(&lock);
    alone[0] = '\0';
    for (int r = 0; r < cl->nranks; r++) {
        char what[256];
        rank_state(&cl->ctxs[r], what, sizeof(what));
        if (!group_rank(g, &ng, r, what) && na < sizeof(alone))
            na += (size_t)snprintf(alone + na, sizeof(alone) - na,
                                   "\n  rank %d %s", r, what);
    }
    buf[0] = '\0';
    for (int k = 0; k < ng && n < len; k++) {
        ranks_flush(&g[k].ranks);
        int many = g[k].ranks.count > 1;
        n += (size_t)snprintf(buf + n, len - n, "\n  %s %s%s %s",
                              many ? "ranks" : "rank", g[k].list,
                              many ? " each" : "", g[k].what);
    }
    if (n < len)
        snprintf(buf + n, len - n, "%s", alone);
    pthread_mutex_unlock(&lock);
}

/* Why a rank's wait ends when every live rank waits and none can move. */
static const char DEADLOCK[] =
    "deadlock: every live rank waits and none can move";

/* Falls asleep on the books; detects the deadlock if this is the last
 * live rank to do so. Returns 1 on deadlock. Only the first rank to see
 * it takes the snapshot every rank reports: a rank that comes back to
 * sleep before it has read the flag (its peers may have reported and
 * returned meanwhile, leaving it the one live rank) sees a deadlock
 * again, and must not overwrite the states as they were. */
static int sleep_begin(hccn_ctx_t *ctx, uint64_t e)
{
    hccn_cluster_t *cl = ctx->cl;
    int dead = 0, first = 0;
    pthread_mutex_lock(&cl->state_lock);
    ctx->waiting = 1;
    ctx->wait_epoch = e;
    cl->nwaiting++;
    if (cl->nwaiting == cl->nlive) {
        dead = 1;
        for (int r = 0; r < cl->nranks && dead; r++) {
            hccn_ctx_t *x = &cl->ctxs[r];
            if (!atomic_load(&x->finished) && (!x->waiting || x->wait_epoch != e))
                dead = 0;
        }
        dead = dead && atomic_load(&cl->epoch) == e;
        first = dead && !cl->deadlock_seen;
        cl->deadlock_seen |= dead;
    }
    pthread_mutex_unlock(&cl->state_lock);
    if (first) {
        /* One snapshot for every rank's message: the states as they were
         * when the deadlock was seen, before any rank gives up. */
        hccn_rt_state_report(cl, cl->deadlock_report, sizeof(cl->deadlock_report));
        atomic_store(&cl->deadlock, 1);
        ring_all(cl);
    }
    return dead;
}

static void sleep_end(hccn_ctx_t *ctx)
{
    pthread_mutex_lock(&ctx->cl->state_lock);
    ctx->waiting = 0;
    ctx->cl->nwaiting--;
    pthread_mutex_unlock(&ctx->cl->state_lock);
}

static hccn_status_t fail(hccn_ctx_t *ctx, rt_comm_t *comm, hccn_status_t rc,
                          const char *what, const char *why)
{
    char report[RT_ERR_MAX];
    if (atomic_load(&ctx->cl->deadlock))
        snprintf(report, sizeof(report), "%s", ctx->cl->deadlock_report);
    else
        hccn_rt_state_report(ctx->cl, report, sizeof(report));
    hccn_rt_error(rc, "rank %d: %s: %s; ranks:%s", ctx->rank, what, why,
                  report);
    if (comm != NULL && rc != HCCN_ERR_ABORTED && rc != HCCN_ERR_REVOKED)
        hccn_rt_comm_break(comm, rc, hccn_last_error());
    return rc;
}

/* What a wait is for: a fixed text, or an operation described on demand
 * (formatting it on every wait would cost more than a short wait). */
typedef struct {
    const char *text;
    const rt_op_t *op;
    char buf[192];
} wait_what_t;

static const char *what_str(wait_what_t *w)
{
    if (w->op == NULL)
        return w->text;
    size_t n = 0;
    if (w->text != NULL)
        n = (size_t)snprintf(w->buf, sizeof(w->buf), "%s ", w->text);
    if (n < sizeof(w->buf))
        hccn_rt_op_describe(w->op, w->buf + n, sizeof(w->buf) - n);
    return w->buf;
}

/* Host-load stress (hccn_cluster_opts_t.jitter_us): the rank is
 * descheduled for a pseudo-random while, between finding nothing to do
 * and drawing conclusions from its peers' state. */
static void jitter(hccn_ctx_t *ctx)
{
    uint64_t x = ctx->jitter_rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    ctx->jitter_rng = x;
    long us = (long)(x % ((uint64_t)ctx->cl->jitter_us + 1));
    if (us > 0) {
        struct timespec ts = {us / 1000000, us % 1000000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* Yields of a waiting rank before it sleeps: a small collective's (whose
 * wait is a few microseconds of a peer's work) and any other wait's.
 * With 32 (also while a driver moves the rank's bytes), a 2000-call 8 B
 * allreduce takes about half the wall time of sleeping at once on a quiet
 * 2-core host (docs/performance.md). */
enum { SMALL_YIELDS = 32, YIELDS = 4 };

static int comm_aborted(rt_comm_t *comm)
{
    return comm != NULL && atomic_load(&comm->aborted);
}

/* 1 if a revoke of comm leaves the wait w alone: a collective that every
 * member joined before the revoke ran (the revoker, a member, revokes once
 * its own call returned) completes as it would have. Whether a call fails
 * must not depend on how far its rank's thread got by then (the host's
 * scheduling): a rank still moving, or waiting for the simulated end of,
 * the step before the failed one would fail it and redo the wrong step.
 * hccn_comm_abort, the way out of a hang, fails every wait at once. */
static int revoke_spares(rt_comm_t *comm, const wait_what_t *w)
{
    return w->op != NULL && atomic_load(&comm->revoked) &&
           !(atomic_load(&comm->aborted) & RT_ABORT_USER) &&
           hccn_rt_op_committed(w->op);
}

static hccn_status_t aborted(hccn_ctx_t *ctx, rt_comm_t *comm, wait_what_t *w)
{
    if (atomic_load(&comm->revoked))
        return hccn_rt_error(HCCN_ERR_REVOKED,
                             "rank %d: %s: communicator %llu was revoked "
                             "(hccn_comm_revoke)",
                             ctx->rank, what_str(w),
                             (unsigned long long)comm->uid);
    return hccn_rt_error(HCCN_ERR_ABORTED,
                         "rank %d: %s: communicator %llu was aborted",
                         ctx->rank, what_str(w), (unsigned long long)comm->uid);
}

static hccn_status_t block(hccn_ctx_t *ctx, rt_comm_t *comm,
                           int (*done)(void *), int (*gone)(void *, int *),
                           void *arg, wait_what_t *w)
{
    hccn_cluster_t *cl = ctx->cl;
    double start = -1.0;
    int idle = 0;
    char why[160];
    /* On an oversubscribed host the peer we wait for needs our core:
     * yield a few times, then sleep until a peer rings. A small
     * collective's wait is short (its bytes are moved by the last rank
     * to arrive, exec.c), and a sleep costs more than the wait: a
     * futex wake-up, and on a virtual machine an idle core's wake-up
     * too. It yields longer before it sleeps. */
    int yields = w->op != NULL && hccn_rt_op_small(w->op) ? SMALL_YIELDS
                                                          : YIELDS;
    while (!done(arg)) {
        /* Before a pass that may end in a sleep, the epoch and the bell
         * are read before looking for work: progress made by anyone
         * after this point shows as a newer epoch, a ring as a newer
         * bell. (Others write both all the time: reading them on every
         * pass would fetch their lines for nothing.) */
        uint64_t epoch = 0;
        uint32_t seen = 0;
        if (idle + 1 >= yields) {
            epoch = atomic_load(&cl->epoch);
            seen = hccn_sim_bell_read(&ctx->bell);
        }
        if (hccn_rt_progress(ctx)) {
            hccn_rt_progressed(ctx);
            idle = 0;
            continue;
        }
        if (done(arg))
            break;
        /* Held: a driver moves this rank's bytes (a small call, a few
         * microseconds of work), and will declare its engine wait. */
        int held = w->op != NULL && hccn_rt_op_held(w->op);
        if (!held && comm_aborted(comm) && !revoke_spares(comm, w))
            return aborted(ctx, comm, w);
        /* A process of the cluster was lost (runtime/proc.h): the wait
         * may need its ranks, and they will never come. */
        const char *lost = held ? NULL : hccn_rt_proc_lost(cl);
        if (lost != NULL)
            return fail(ctx, comm, HCCN_ERR_REMOTE, what_str(w), lost);
        if (++idle < yields) {
            sched_yield();
            continue;
        }
        if (held) {
            hccn_rt_op_idle((rt_op_t *)w->op);
            hccn_sim_bell_wait(&ctx->bell, seen, 100);
            continue;
        }
        if (start < 0)
            start = wall_now();
        if (cl->jitter_us > 0)
            jitter(ctx);
        /* A deadlock first: ranks that report it return, and must not
         * make the others report a remote failure instead. */
        if (atomic_load(&cl->deadlock))
            return fail(ctx, comm, HCCN_ERR_TIMEOUT, what_str(w), DEADLOCK);
        /* A peer seen finished has made every move it will make, and
         * all of them are visible from here on: one more pass of
         * progress tells a step it unblocked just before it returned
         * (a receive that took our bytes) from one it never will. */
        int who;
        if (gone != NULL && gone(arg, &who)) {
            if (hccn_rt_progress(ctx)) {
                hccn_rt_progressed(ctx);
                idle = 0;
                continue;
            }
            /* What ended the wait may be the engine's, not the peer's
             * (a message whose transfer failed needs no bytes). */
            if (done(arg))
                break;
            /* The peer may have left on the deadlock, seen since the
             * check above: its flag was set before the peer could see
             * it, so it is visible here, and it is the cause. */
            if (atomic_load(&cl->deadlock))
                return fail(ctx, comm, HCCN_ERR_TIMEOUT, what_str(w),
                            DEADLOCK);
            /* It may have aborted the communicator before it left: that
             * is the cause to report. */
            if (comm_aborted(comm))
                return aborted(ctx, comm, w);
            /* Without a communicator (a grow's gate), who is a rank of
             * the cluster. */
            if (comm != NULL)
                snprintf(why, sizeof(why),
                         "comm rank %d (rank %d) returned from its function "
                         "without completing its part",
                         who, comm->world[who]);
            else
                snprintf(why, sizeof(why),
                         "rank %d returned from its function without "
                         "completing its part", who);
            return fail(ctx, comm, HCCN_ERR_REMOTE, what_str(w), why);
        }
        if (wall_now() - start > cl->timeout_s) {
            snprintf(why, sizeof(why), "timed out after %.0f s", cl->timeout_s);
            return fail(ctx, comm, HCCN_ERR_TIMEOUT, what_str(w), why);
        }
        if (w->op != NULL)
            hccn_rt_op_idle((rt_op_t *)w->op);
        if (sleep_begin(ctx, epoch)) {
            sleep_end(ctx);
            continue;   /* reported through cl->deadlock above */
        }
        hccn_sim_bell_wait(&ctx->bell, seen, 100);
        sleep_end(ctx);
    }
    return HCCN_OK;
}

/* Names the call a rank without an operation waits in, for the reports
 * of the others (what is a literal: read by their threads). */
static void set_call(hccn_ctx_t *ctx, const char *what)
{
    pthread_mutex_lock(&ctx->cur_lock);
    ctx->cur_call = what;
    pthread_mutex_unlock(&ctx->cur_lock);
}

hccn_status_t hccn_rt_block(hccn_ctx_t *ctx, rt_comm_t *comm,
                            int (*done)(void *), int (*gone)(void *, int *),
                            void *arg, const char *what)
{
    wait_what_t w = {.text = what};
    int own = ctx->cur == NULL && what != NULL;   /* cur: this thread's */
    if (own)
        set_call(ctx, what);
    hccn_status_t rc = block(ctx, comm, done, gone, arg, &w);
    if (own)
        set_call(ctx, NULL);
    return rc;
}

hccn_status_t hccn_rt_block_op(const rt_op_t *op, int (*done)(void *),
                               int (*gone)(void *, int *), void *arg,
                               const char *what)
{
    wait_what_t w = {.text = what, .op = op};
    return block(op->ctx, op->comm->sh, done, gone, arg, &w);
}
