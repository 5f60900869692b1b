/*
 * Serial schedule interpreter for tests (see sched_interp.h).
 */
#include "sched_interp.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

enum { IDLE = 0, OFFERED = 1, DONE = 2 };

/* Past this many steps on one rank the race check is skipped (its memory
 * grows with the square of the step count). */
#define RACE_MAX_STEPS 8192u

typedef struct {
    const hccn_sched_t *s;
    const sched_interp_bufs_t *bufs;
    const sched_interp_opts_t *opts;
    unsigned char **scratch;  /* per rank, s->scratch_bytes */
    unsigned char **state;    /* per rank, per step */
    unsigned char *tmp;       /* incoming data of a RECV_REDUCE */
    size_t tmpcap;
    uint64_t ndone, total;
    char *why;
    size_t len;
} interp_t;

typedef struct {
    int32_t rank;
    uint32_t step;
} ref_t;

static const char *kind_name(int kind)
{
    static const char *const names[] = {"SEND", "RECV", "RECV_REDUCE", "COPY",
                                        "REDUCE"};
    return kind >= 0 && kind <= HCCN_STEP_REDUCE ? names[kind] : "?";
}

static const char *buf_name(int buf)
{
    static const char *const names[] = {"SEND", "RECV", "SCRATCH"};
    return buf >= 0 && buf <= HCCN_BUF_SCRATCH ? names[buf] : "?";
}

static int fail(interp_t *in, const char *fmt, ...)
{
    if (in->why != NULL && in->len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(in->why, in->len, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static const hccn_step_t *step_at(const interp_t *in, int r, uint32_t i)
{
    return &in->s->ranks[r].steps[i];
}

/* ----------------------------------------------------------- memory --- */

/* Host address of bytes [off, off + bytes) of buffer buf on rank r through
 * *p (NULL for an empty range of an absent buffer); -1 if out of range. */
static int locate(const interp_t *in, int r, int buf, uint64_t off,
                  uint64_t bytes, unsigned char **p)
{
    const sched_interp_bufs_t *b = &in->bufs[r];
    unsigned char *base;
    uint64_t size;
    switch (buf) {
    case HCCN_BUF_SEND:
        base = b->send;
        size = b->send_bytes;
        break;
    case HCCN_BUF_RECV:
        base = b->recv;
        size = b->recv_bytes;
        break;
    case HCCN_BUF_SCRATCH:
        base = in->scratch[r];
        size = in->s->scratch_bytes;
        break;
    default:
        return -1;
    }
    if (off > size || bytes > size - off)
        return -1;
    *p = base != NULL ? base + off : NULL;
    return 0;
}

static int out_of_range(interp_t *in, int r, uint32_t i, int buf,
                        uint64_t off, uint64_t bytes)
{
    return fail(in,
                "rank %d step %u (%s): %s bytes [%llu, %llu) out of range", r,
                i, kind_name(step_at(in, r, i)->kind), buf_name(buf),
                (unsigned long long)off, (unsigned long long)(off + bytes));
}

/* The source and destination of step i on rank r (NULL where unused). */
static int operands(interp_t *in, int r, uint32_t i, unsigned char **src,
                    unsigned char **dst)
{
    const hccn_step_t *st = step_at(in, r, i);
    *src = *dst = NULL;
    if (st->kind != HCCN_STEP_RECV &&
        locate(in, r, st->src_buf, st->src_off, st->bytes, src) != 0)
        return out_of_range(in, r, i, st->src_buf, st->src_off, st->bytes);
    if (st->kind == HCCN_STEP_SEND)
        return 0;
    if (st->dst_buf == HCCN_BUF_SEND)
        return fail(in, "rank %d step %u (%s) writes its SEND buffer", r, i,
                    kind_name(st->kind));
    if (locate(in, r, st->dst_buf, st->dst_off, st->bytes, dst) != 0)
        return out_of_range(in, r, i, st->dst_buf, st->dst_off, st->bytes);
    return 0;
}

/* ---------------------------------------------------------- running --- */

static void set_done(interp_t *in, int r, uint32_t i)
{
    in->state[r][i] = DONE;
    in->ndone++;
}

static int deps_done(const interp_t *in, int r, uint32_t i)
{
    const hccn_sched_rank_t *rk = &in->s->ranks[r];
    const hccn_step_t *st = &rk->steps[i];
    for (uint32_t k = 0; k < st->ndeps; k++)
        if (in->state[r][rk->deps[st->dep_off + k]] != DONE)
            return 0;
    return 1;
}

static int runnable(const interp_t *in, int r, uint32_t i)
{
    if (in->state[r][i] != IDLE || !deps_done(in, r, i))
        return 0;
    const hccn_step_t *st = step_at(in, r, i);
    if (st->kind == HCCN_STEP_RECV || st->kind == HCCN_STEP_RECV_REDUCE) {
        hccn_sched_ref_t snd = in->s->xfer_send[st->xfer];
        return in->state[snd.rank][snd.step] == OFFERED;
    }
    return 1;
}

/* Pulls the bytes of the SEND paired with step i of rank r into the
 * destination (RECV) or combines them with the local operand (RECV_REDUCE),
 * and completes both sides. */
static int run_recv(interp_t *in, int r, uint32_t i, unsigned char *local,
                    unsigned char *dst)
{
    const hccn_step_t *st = step_at(in, r, i);
    hccn_sched_ref_t snd = in->s->xfer_send[st->xfer];
    const hccn_step_t *ss = step_at(in, snd.rank, snd.step);
    unsigned char *from;
    if (locate(in, snd.rank, ss->src_buf, ss->src_off, ss->bytes, &from) != 0)
        return out_of_range(in, snd.rank, snd.step, ss->src_buf, ss->src_off,
                            ss->bytes);
    if (st->bytes > 0 && st->kind == HCCN_STEP_RECV) {
        memmove(dst, from, st->bytes);
    } else if (st->bytes > 0) {
        if (st->bytes > in->tmpcap) {
            unsigned char *t = realloc(in->tmp, st->bytes);
            if (t == NULL)
                return fail(in, "out of memory");
            in->tmp = t;
            in->tmpcap = st->bytes;
        }
        memcpy(in->tmp, from, st->bytes);
        in->opts->reduce(dst, local, in->tmp, st->bytes,
                         in->opts->reduce_ctx);
    }
    set_done(in, snd.rank, snd.step);
    set_done(in, r, i);
    return 0;
}

static int run_step(interp_t *in, int r, uint32_t i)
{
    const hccn_step_t *st = step_at(in, r, i);
    unsigned char *src, *dst;
    if (operands(in, r, i, &src, &dst) != 0)
        return -1;
    switch (st->kind) {
    case HCCN_STEP_SEND:
        in->state[r][i] = OFFERED;
        return 0;
    case HCCN_STEP_RECV:
    case HCCN_STEP_RECV_REDUCE:
        return run_recv(in, r, i, src, dst);
    case HCCN_STEP_COPY:
        if (st->bytes > 0 && src != dst)
            memmove(dst, src, st->bytes);
        break;
    case HCCN_STEP_REDUCE:
        if (st->bytes > 0)
            in->opts->reduce(dst, src, dst, st->bytes, in->opts->reduce_ctx);
        break;
    default:
        return fail(in, "rank %d step %u: unknown kind %d", r, i, st->kind);
    }
    set_done(in, r, i);
    return 0;
}

/* Names why the first unfinished step of the schedule cannot finish. */
static int stuck(interp_t *in)
{
    for (int r = 0; r < in->s->nranks; r++) {
        const hccn_sched_rank_t *rk = &in->s->ranks[r];
        for (uint32_t i = 0; i < rk->nsteps; i++) {
            const hccn_step_t *st = &rk->steps[i];
            if (in->state[r][i] == DONE)
                continue;
            for (uint32_t k = 0; k < st->ndeps; k++) {
                uint32_t d = rk->deps[st->dep_off + k];
                if (in->state[r][d] != DONE)
                    return fail(in,
                                "stuck: %llu of %llu steps done; rank %d "
                                "step %u (%s) waits for its step %u",
                                (unsigned long long)in->ndone,
                                (unsigned long long)in->total, r, i,
                                kind_name(st->kind), d);
            }
            hccn_sched_ref_t o = st->kind == HCCN_STEP_SEND
                                     ? in->s->xfer_recv[st->xfer]
                                     : in->s->xfer_send[st->xfer];
            return fail(in,
                        "stuck: %llu of %llu steps done; rank %d step %u "
                        "(%s) waits for rank %d step %u (xfer %u)",
                        (unsigned long long)in->ndone,
                        (unsigned long long)in->total, r, i,
                        kind_name(st->kind), o.rank, o.step, st->xfer);
        }
    }
    return fail(in, "stuck for no visible reason");
}

static void shuffle(ref_t *v, size_t n, unsigned long long *rng)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(test_rand_next(rng) % i);
        ref_t t = v[i - 1];
        v[i - 1] = v[j];
        v[j] = t;
    }
}

/* Sweeps until every step is done or a sweep finds nothing to run. */
static int execute(interp_t *in)
{
    ref_t *ready = malloc((size_t)(in->total > 0 ? in->total : 1) *
                          sizeof(*ready));
    if (ready == NULL)
        return fail(in, "out of memory");
    unsigned long long rng = in->opts->seed;
    int rc = 0;
    while (rc == 0 && in->ndone < in->total) {
        size_t n = 0;
        for (int r = 0; r < in->s->nranks; r++)
            for (uint32_t i = 0; i < in->s->ranks[r].nsteps; i++)
                if (runnable(in, r, i))
                    ready[n++] = (ref_t){r, i};
        if (n == 0) {
            rc = stuck(in);
            break;
        }
        if (in->opts->seed != 0)
            shuffle(ready, n, &rng);
        for (size_t k = 0; k < n && rc == 0; k++)
            rc = run_step(in, ready[k].rank, ready[k].step);
    }
    free(ready);
    return rc;
}

/* ------------------------------------------------------------ races --- */

typedef struct {
    uintptr_t r0, r1; /* bytes read */
    uintptr_t w0, w1; /* bytes written */
} footprint_t;

static int overlap(uintptr_t a0, uintptr_t a1, uintptr_t b0, uintptr_t b1)
{
    return a0 < a1 && b0 < b1 && a0 < b1 && b0 < a1;
}

static footprint_t footprint(interp_t *in, int r, uint32_t i)
{
    const hccn_step_t *st = step_at(in, r, i);
    footprint_t f = {0, 0, 0, 0};
    unsigned char *src, *dst;
    if (operands(in, r, i, &src, &dst) != 0 || st->bytes == 0)
        return f;
    if (st->kind == HCCN_STEP_COPY && src == dst)
        return f; /* skipped */
    if (src != NULL) {
        f.r0 = (uintptr_t)src;
        f.r1 = f.r0 + st->bytes;
    }
    if (dst != NULL) {
        f.w0 = (uintptr_t)dst;
        f.w1 = f.w0 + st->bytes;
    }
    return f;
}

static int conflict(const footprint_t *a, const footprint_t *b)
{
    return overlap(a->w0, a->w1, b->w0, b->w1) ||
           overlap(a->w0, a->w1, b->r0, b->r1) ||
           overlap(a->r0, a->r1, b->w0, b->w1);
}

/* anc[i * words ..]: the set of steps that step i transitively depends on. */
static uint64_t *ancestors(const hccn_sched_rank_t *rk, size_t words)
{
    uint64_t *anc = calloc((size_t)rk->nsteps * words + 1, sizeof(uint64_t));
    if (anc == NULL)
        return NULL;
    for (uint32_t i = 0; i < rk->nsteps; i++) {
        const hccn_step_t *st = &rk->steps[i];
        uint64_t *mine = &anc[(size_t)i * words];
        for (uint32_t k = 0; k < st->ndeps; k++) {
            uint32_t d = rk->deps[st->dep_off + k];
            const uint64_t *theirs = &anc[(size_t)d * words];
            for (size_t w = 0; w < words; w++)
                mine[w] |= theirs[w];
            mine[d / 64] |= (uint64_t)1 << (d % 64);
        }
    }
    return anc;
}

static int check_rank_races(interp_t *in, int r)
{
    const hccn_sched_rank_t *rk = &in->s->ranks[r];
    uint32_t n = rk->nsteps;
    if (n < 2 || n > RACE_MAX_STEPS)
        return 0;
    size_t words = (n + 63) / 64;
    uint64_t *anc = ancestors(rk, words);
    footprint_t *fp = malloc(n * sizeof(*fp));
    int rc = anc == NULL || fp == NULL ? fail(in, "out of memory") : 0;
    for (uint32_t i = 0; rc == 0 && i < n; i++)
        fp[i] = footprint(in, r, i);
    for (uint32_t j = 1; rc == 0 && j < n; j++) {
        const uint64_t *aj = &anc[(size_t)j * words];
        for (uint32_t i = 0; rc == 0 && i < j; i++)
            if (conflict(&fp[i], &fp[j]) &&
                !(aj[i / 64] >> (i % 64) & 1))
                rc = fail(in,
                          "race on rank %d: steps %u (%s) and %u (%s) touch "
                          "the same bytes and neither depends on the other",
                          r, i, kind_name(rk->steps[i].kind), j,
                          kind_name(rk->steps[j].kind));
    }
    free(anc);
    free(fp);
    return rc;
}

/* ------------------------------------------------------------ entry --- */

/* Every SEND/RECV step of rank r names an xfer that names it back. */
static int check_pairing(interp_t *in, int r)
{
    const hccn_sched_rank_t *rk = &in->s->ranks[r];
    for (uint32_t i = 0; i < rk->nsteps; i++) {
        const hccn_step_t *st = &rk->steps[i];
        if (st->kind != HCCN_STEP_SEND && st->kind != HCCN_STEP_RECV &&
            st->kind != HCCN_STEP_RECV_REDUCE)
            continue;
        hccn_sched_ref_t me = {0, 0};
        if (st->xfer < in->s->nxfers)
            me = st->kind == HCCN_STEP_SEND ? in->s->xfer_send[st->xfer]
                                            : in->s->xfer_recv[st->xfer];
        if (st->xfer >= in->s->nxfers || me.rank != r || me.step != i)
            return fail(in, "rank %d step %u (%s): xfer %u is not its own",
                        r, i, kind_name(st->kind), st->xfer);
    }
    return 0;
}

static int setup(interp_t *in)
{
    int p = in->s->nranks;
    in->scratch = calloc((size_t)p, sizeof(*in->scratch));
    in->state = calloc((size_t)p, sizeof(*in->state));
    if (in->scratch == NULL || in->state == NULL)
        return fail(in, "out of memory");
    for (int r = 0; r < p; r++) {
        if (check_pairing(in, r) != 0)
            return -1;
        uint32_t n = in->s->ranks[r].nsteps;
        in->total += n;
        in->state[r] = calloc(n + 1, 1);
        if (in->s->scratch_bytes > 0)
            in->scratch[r] = malloc(in->s->scratch_bytes);
        if (in->state[r] == NULL ||
            (in->s->scratch_bytes > 0 && in->scratch[r] == NULL))
            return fail(in, "out of memory");
        if (in->scratch[r] != NULL)
            memset(in->scratch[r], 0xCD, in->s->scratch_bytes);
    }
    return 0;
}

static void teardown(interp_t *in)
{
    for (int r = 0; r < in->s->nranks; r++) {
        if (in->scratch != NULL)
            free(in->scratch[r]);
        if (in->state != NULL)
            free(in->state[r]);
    }
    free(in->scratch);
    free(in->state);
    free(in->tmp);
}

int sched_interp_run(const hccn_sched_t *s, const sched_interp_bufs_t *bufs,
                     const sched_interp_opts_t *opts, char *why, size_t len)
{
    interp_t in = {.s = s, .bufs = bufs, .opts = opts, .why = why,
                   .len = len};
    char reason[256];
    if (hccn_sched_validate(s, reason, sizeof(reason)) != 0)
        return fail(&in, "invalid schedule: %s", reason);
    int rc = setup(&in);
    for (int r = 0; rc == 0 && opts->check_races && r < s->nranks; r++)
        rc = check_rank_races(&in, r);
    if (rc == 0)
        rc = execute(&in);
    teardown(&in);
    return rc;
}

unsigned long long sched_interp_bytes_sent(const hccn_sched_t *s, int rank)
{
    unsigned long long n = 0;
    const hccn_sched_rank_t *rk = &s->ranks[rank];
    for (uint32_t i = 0; i < rk->nsteps; i++)
        if (rk->steps[i].kind == HCCN_STEP_SEND)
            n += rk->steps[i].bytes;
    return n;
}

/* ----------------------------------------------------------- timing --- */

/* Events in the engine's order: by time, completions before starts, then
 * by rank and step. */
enum { EV_DONE, EV_DELIVER, EV_READY };

typedef struct {
    double t;
    int cls, type, rank;
    uint32_t step;
} tev_t;

typedef struct {
    const hccn_sched_t *s;
    sched_interp_timing_t tp;
    tev_t *heap;
    size_t nheap;
    uint32_t **npend, **succ, **succ_off;
    double **ready;
    unsigned char **isready;
    double *local_free, *link_free, end;
    double *link_start;     /* when the link's transfers last began */
    int shared_link;
} tsim_t;

static int tev_less(const tev_t *x, const tev_t *y)
{
    if (x->t != y->t)
        return x->t < y->t;
    if (x->cls != y->cls)
        return x->cls < y->cls;
    if (x->rank != y->rank)
        return x->rank < y->rank;
    return x->step < y->step;
}

static void tpush(tsim_t *m, double t, int type, int rank, uint32_t step)
{
    tev_t ev = {t, type == EV_READY ? 1 : 0, type, rank, step};
    size_t i = m->nheap++;
    m->heap[i] = ev;
    while (i > 0 && tev_less(&m->heap[i], &m->heap[(i - 1) / 2])) {
        tev_t x = m->heap[i];
        m->heap[i] = m->heap[(i - 1) / 2];
        m->heap[(i - 1) / 2] = x;
        i = (i - 1) / 2;
    }
}

static tev_t tpop(tsim_t *m)
{
    tev_t top = m->heap[0];
    m->heap[0] = m->heap[--m->nheap];
    for (size_t i = 0;;) {
        size_t l = 2 * i + 1, r = l + 1, b = i;
        if (l < m->nheap && tev_less(&m->heap[l], &m->heap[b]))
            b = l;
        if (r < m->nheap && tev_less(&m->heap[r], &m->heap[b]))
            b = r;
        if (b == i)
            break;
        tev_t x = m->heap[i];
        m->heap[i] = m->heap[b];
        m->heap[b] = x;
        i = b;
    }
    return top;
}

static void tdone(tsim_t *m, int r, uint32_t i, double t)
{
    if (t > m->end)
        m->end = t;
    for (uint32_t k = m->succ_off[r][i]; k < m->succ_off[r][i + 1]; k++) {
        uint32_t j = m->succ[r][k];
        if (t > m->ready[r][j])
            m->ready[r][j] = t;
        if (--m->npend[r][j] == 0)
            tpush(m, m->ready[r][j], EV_READY, r, j);
    }
}

static void tlocal(tsim_t *m, int r, uint32_t i, double t, double cost)
{
    if (cost <= 0.0) {
        tdone(m, r, i, t);
        return;
    }
    double start = t > m->local_free[r] ? t : m->local_free[r];
    m->local_free[r] = start + cost;
    tpush(m, m->local_free[r], EV_DONE, r, i);
}

/* Both sides of a transfer are ready at t: it drains for bytes/B. A
 * transfer that becomes ready at the same instant as one before it on
 * its link drains after it (the pair's bytes take the same time as two
 * flows sharing the link from that instant); one that finds its link
 * busy from an earlier instant is outside the model. */
static void tflow(tsim_t *m, hccn_sched_ref_t snd, double t)
{
    const hccn_step_t *st = &m->s->ranks[snd.rank].steps[snd.step];
    size_t l = (size_t)snd.rank * m->s->nranks + st->peer;
    double *lf = &m->link_free[l], start = t;
    if (*lf > t * (1 + 1e-12)) {
        if (m->link_start[l] != t)
            m->shared_link = 1;
        start = *lf;
    } else {
        m->link_start[l] = t;
    }
    *lf = start + (double)st->bytes / m->tp.bw;
    tpush(m, *lf, EV_DONE, snd.rank, snd.step);
}

static void tready(tsim_t *m, int r, uint32_t i, double t)
{
    const hccn_step_t *st = &m->s->ranks[r].steps[i];
    if (st->kind == HCCN_STEP_COPY || st->kind == HCCN_STEP_REDUCE) {
        double bw = st->kind == HCCN_STEP_COPY ? m->tp.mem_bw : m->tp.reduce_bw;
        tlocal(m, r, i, t, bw > 0 ? (double)st->bytes / bw : 0.0);
        return;
    }
    m->isready[r][i] = 1;
    hccn_sched_ref_t snd = m->s->xfer_send[st->xfer];
    hccn_sched_ref_t rcv = m->s->xfer_recv[st->xfer];
    if (m->isready[snd.rank][snd.step] && m->isready[rcv.rank][rcv.step])
        tflow(m, snd, t);
}

static void tevent(tsim_t *m, const tev_t *ev)
{
    const hccn_step_t *st = &m->s->ranks[ev->rank].steps[ev->step];
    if (ev->type == EV_READY) {
        tready(m, ev->rank, ev->step, ev->t);
    } else if (ev->type == EV_DELIVER) {
        double cost = st->kind == HCCN_STEP_RECV_REDUCE
                          ? (double)st->bytes / m->tp.reduce_bw
                          : 0.0;
        tlocal(m, ev->rank, ev->step, ev->t, cost);
    } else if (st->kind == HCCN_STEP_SEND) {
        hccn_sched_ref_t rcv = m->s->xfer_recv[st->xfer];
        tpush(m, ev->t + m->tp.alpha, EV_DELIVER, rcv.rank, rcv.step);
        tdone(m, ev->rank, ev->step, ev->t);
    } else {
        tdone(m, ev->rank, ev->step, ev->t);
    }
}

static int tsim_rank_init(tsim_t *m, int r)
{
    const hccn_sched_rank_t *rk = &m->s->ranks[r];
    uint32_t n = rk->nsteps;
    m->npend[r] = calloc(n + 1, sizeof(uint32_t));
    m->succ_off[r] = calloc(n + 2, sizeof(uint32_t));
    m->succ[r] = calloc(rk->ndeps + 1, sizeof(uint32_t));
    m->ready[r] = calloc(n + 1, sizeof(double));
    m->isready[r] = calloc(n + 1, 1);
    if (!m->npend[r] || !m->succ_off[r] || !m->succ[r] || !m->ready[r] ||
        !m->isready[r])
        return -1;
    for (uint32_t j = 0; j < n; j++) {
        m->npend[r][j] = rk->steps[j].ndeps;
        for (uint32_t k = 0; k < rk->steps[j].ndeps; k++)
            m->succ_off[r][rk->deps[rk->steps[j].dep_off + k] + 2]++;
    }
    for (uint32_t j = 0; j < n; j++)
        m->succ_off[r][j + 2] += m->succ_off[r][j + 1];
    for (uint32_t j = 0; j < n; j++)
        for (uint32_t k = 0; k < rk->steps[j].ndeps; k++) {
            uint32_t d = rk->deps[rk->steps[j].dep_off + k];
            m->succ[r][m->succ_off[r][d + 1]++] = j;
        }
    for (uint32_t j = 0; j < n; j++)
        if (m->npend[r][j] == 0)
            tpush(m, 0.0, EV_READY, r, j);
    return 0;
}

static void tsim_free(tsim_t *m, int p)
{
    for (int r = 0; r < p; r++) {
        free(m->npend ? m->npend[r] : NULL);
        free(m->succ ? m->succ[r] : NULL);
        free(m->succ_off ? m->succ_off[r] : NULL);
        free(m->ready ? m->ready[r] : NULL);
        free(m->isready ? m->isready[r] : NULL);
    }
    free(m->heap);
    free(m->npend);
    free(m->succ);
    free(m->succ_off);
    free(m->ready);
    free(m->isready);
    free(m->local_free);
    free(m->link_free);
    free(m->link_start);
}

double sched_interp_time(const hccn_sched_t *s,
                         const sched_interp_timing_t *tp)
{
    int p = s->nranks;
    size_t total = 1, np = (size_t)p;
    for (int r = 0; r < p; r++)
        total += 3 * (size_t)s->ranks[r].nsteps; /* pushes per step <= 3 */
    tsim_t m = {.s = s, .tp = *tp};
    m.heap = calloc(total, sizeof(tev_t));
    m.npend = calloc(np, sizeof(void *));
    m.succ = calloc(np, sizeof(void *));
    m.succ_off = calloc(np, sizeof(void *));
    m.ready = calloc(np, sizeof(void *));
    m.isready = calloc(np, sizeof(void *));
    m.local_free = calloc(np, sizeof(double));
    m.link_free = calloc(np * np, sizeof(double));
    m.link_start = calloc(np * np, sizeof(double));
    int rc = m.heap && m.npend && m.succ && m.succ_off && m.ready &&
                     m.isready && m.local_free && m.link_free && m.link_start
                 ? 0
                 : -1;
    for (int r = 0; rc == 0 && r < p; r++)
        rc = tsim_rank_init(&m, r);
    while (rc == 0 && m.nheap > 0) {
        tev_t ev = tpop(&m);
        tevent(&m, &ev);
    }
    tsim_free(&m, p);
    if (rc != 0)
        return -2.0;
    return m.shared_link ? -1.0 : m.end;
}

void sched_interp_sum_u32(void *dst, const void *a, const void *b,
                          size_t bytes, void *ctx)
{
    (void)ctx;
    for (size_t i = 0; i + 4 <= bytes; i += 4) {
        uint32_t u, v;
        memcpy(&u, (const char *)a + i, 4);
        memcpy(&v, (const char *)b + i, 4);
        u += v;
        memcpy((char *)dst + i, &u, 4);
    }
}

void sched_interp_sum_f32(void *dst, const void *a, const void *b,
                          size_t bytes, void *ctx)
{
    (void)ctx;
    for (size_t i = 0; i + 4 <= bytes; i += 4) {
        float u, v;
        memcpy(&u, (const char *)a + i, 4);
        memcpy(&v, (const char *)b + i, 4);
        u += v;
        memcpy((char *)dst + i, &u, 4);
    }
}

void sched_interp_host_setup(sched_interp_host_t *h, const hccn_coll_args_t *a,
                             int inplace, uint32_t (*gen)(int, uint64_t))
{
    uint64_t one = a->count * 4;
    for (int r = 0; r < a->nranks; r++) {
        uint64_t sb, rb;
        hccn_coll_buf_bytes(a, r, &sb, &rb);
        uint64_t size = sb > rb ? sb : rb;
        size = size > one ? size : one;
        h->mem[r] = malloc(size + 4);
        h->mem2[r] = inplace ? NULL : malloc(rb + 4);
        memset(h->mem[r], 0xEE, size + 4);
        if (h->mem2[r] != NULL)
            memset(h->mem2[r], 0xEE, rb + 4);
        uint32_t *send = h->mem[r], *recv = inplace ? h->mem[r] : h->mem2[r];
        if (inplace && a->coll == HCCN_COLL_REDUCE_SCATTER)
            recv = h->mem[r] + (uint64_t)r * a->count;
        if (inplace && a->coll == HCCN_COLL_ALLGATHER)
            send = h->mem[r] + (uint64_t)r * a->count;
        for (uint64_t i = 0; i < sb / 4; i++)
            send[i] = gen(r, i);
        h->sb[r] = sb;
        h->rb[r] = rb;
        h->b[r] = (sched_interp_bufs_t){send, sb, recv, rb};
    }
}

void sched_interp_host_free(sched_interp_host_t *h, int nranks)
{
    for (int r = 0; r < nranks; r++) {
        free(h->mem[r]);
        free(h->mem2[r]);
    }
}
