/*
 * Schedule construction and validation (see sched.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "device_sim/alloc.h"
#include "device_sim/fail.h"
#include "hierarchy/sched.h"

static int in_slab(const hccn_sched_t *s, const void *p)
{
    return s->slab != NULL && (const char *)p >= (const char *)s->slab &&
           (const char *)p < (const char *)s->slab + s->slab_len;
}

/* Gives *p room for exactly n elements of elem bytes (*cap of them now):
 * realloc, or a copy out of the slab. */
static int resize(hccn_sched_t *s, void *pp, uint32_t *cap, uint32_t n,
                  size_t elem)
{
    void **p = pp;
    void *q;
    if (in_slab(s, *p)) {
        q = hccn_sim_malloc((size_t)n * elem);
        if (q != NULL)
            memcpy(q, *p, (size_t)*cap * elem);
    } else {
        q = hccn_sim_realloc(*p, (size_t)n * elem);
    }
    if (q == NULL)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

/* Room for need elements, doubling. */
static int grow(hccn_sched_t *s, void *p, uint32_t *cap, uint32_t need,
                size_t elem)
{
    if (need <= *cap)
        return 0;
    uint32_t n = *cap ? *cap : 8;
    while (n < need)
        n *= 2;
    return resize(s, p, cap, n, elem);
}

static void free_array(const hccn_sched_t *s, void *p)
{
    if (!in_slab(s, p))
        hccn_sim_free(p);
}

hccn_sched_t *hccn_sched_new(int nranks, const char *algo)
{
    if (nranks <= 0) {
        hccn_sim_fail(HCCN_ERR_INTERNAL, "schedule '%s' for %d ranks",
                      algo ? algo : "", nranks);
        return NULL;
    }
    hccn_sched_t *s = hccn_sim_calloc(1, sizeof(*s));
    if (s == NULL)
        return NULL;
    s->nranks = nranks;
    snprintf(s->algo, sizeof(s->algo), "%s", algo ? algo : "");
    s->ranks = hccn_sim_calloc((size_t)nranks, sizeof(*s->ranks));
    if (s->ranks == NULL) {
        hccn_sim_free(s);
        return NULL;
    }
    return s;
}

void hccn_sched_free(hccn_sched_t *s)
{
    if (s == NULL)
        return;
    for (int r = 0; r < s->nranks; r++) {
        free_array(s, s->ranks[r].steps);
        free_array(s, s->ranks[r].deps);
    }
    hccn_sim_free(s->ranks);
    free_array(s, s->xfer_send);
    free_array(s, s->xfer_recv);
    if (s->slab != NULL)
        munmap(s->slab, s->slab_len);
    hccn_sim_free(s);
}

uint32_t hccn_sched_add(hccn_sched_t *s, int rank, const hccn_step_t *step,
                        const uint32_t *deps, uint32_t ndeps)
{
    if (s->failed)
        return UINT32_MAX;   /* recorded where it failed */
    if (rank < 0 || rank >= s->nranks) {
        s->failed = 1;
        hccn_sim_fail(HCCN_ERR_INTERNAL, "schedule '%s': a step for rank %d "
                      "of %d", s->algo, rank, s->nranks);
        return UINT32_MAX;
    }
    hccn_sched_rank_t *r = &s->ranks[rank];
    if (grow(s, &r->steps, &r->capsteps, r->nsteps + 1,
             sizeof(*r->steps)) != 0 ||
        grow(s, &r->deps, &r->capdeps, r->ndeps + ndeps,
             sizeof(*r->deps)) != 0) {
        s->failed = 1;
        return UINT32_MAX;
    }
    hccn_step_t *st = &r->steps[r->nsteps];
    *st = *step;
    st->dep_off = r->ndeps;
    st->ndeps = ndeps;
    for (uint32_t i = 0; i < ndeps; i++) {
        if (deps[i] >= r->nsteps && !s->failed) {
            s->failed = 1;
            hccn_sim_fail(HCCN_ERR_INTERNAL, "schedule '%s': rank %d step "
                          "%u depends on step %u, not before it", s->algo,
                          rank, r->nsteps, deps[i]);
        }
        r->deps[r->ndeps++] = deps[i];
    }
    return r->nsteps++;
}

void hccn_sched_xfer_kept(hccn_sched_t *s, int nkeep, hccn_sched_ref_t copy,
                          int src_rank, hccn_buf_t sbuf, uint64_t soff,
                          const uint32_t *sdeps, uint32_t nsdeps,
                          int dst_rank, hccn_buf_t dbuf, uint64_t doff,
                          const uint32_t *ddeps, uint32_t nddeps,
                          uint64_t bytes, int reduce, hccn_buf_t lbuf,
                          uint64_t loff, uint32_t *send_step,
                          uint32_t *recv_step)
{
    int ks = src_rank < nkeep, kd = dst_rank < nkeep;
    uint32_t x = s->nxfers;
    if ((!ks && !kd) || hccn_sched_xfer_room(s, 1) != 0)
        return;

    hccn_step_t snd = {.kind = HCCN_STEP_SEND, .src_buf = (uint8_t)sbuf,
                       .peer = dst_rank, .xfer = x, .src_off = soff,
                       .bytes = bytes};
    hccn_step_t rcv = {.kind = reduce ? HCCN_STEP_RECV_REDUCE : HCCN_STEP_RECV,
                       .src_buf = (uint8_t)lbuf, .dst_buf = (uint8_t)dbuf,
                       .peer = src_rank, .xfer = x, .src_off = loff,
                       .dst_off = doff, .bytes = bytes};
    uint32_t si = ks ? hccn_sched_add(s, src_rank, &snd, sdeps, nsdeps)
                     : UINT32_MAX;
    uint32_t ri = kd ? hccn_sched_add(s, dst_rank, &rcv, ddeps, nddeps)
                     : UINT32_MAX;
    if (s->failed)
        return;
    s->xfer_send[x] = ks ? (hccn_sched_ref_t){src_rank, si} : copy;
    s->xfer_recv[x] = kd ? (hccn_sched_ref_t){dst_rank, ri}
                         : (hccn_sched_ref_t){-1, UINT32_MAX};
    s->nxfers = x + 1;
    if (send_step != NULL && ks)
        *send_step = si;
    if (recv_step != NULL && kd)
        *recv_step = ri;
}

void hccn_sched_xfer(hccn_sched_t *s, int src_rank, hccn_buf_t sbuf,
                     uint64_t soff, const uint32_t *sdeps, uint32_t nsdeps,
                     int dst_rank, hccn_buf_t dbuf, uint64_t doff,
                     const uint32_t *ddeps, uint32_t nddeps, uint64_t bytes,
                     int reduce, hccn_buf_t lbuf, uint64_t loff,
                     uint32_t *send_step, uint32_t *recv_step)
{
    hccn_sched_xfer_kept(s, s->nranks, (hccn_sched_ref_t){-1, UINT32_MAX},
                         src_rank, sbuf, soff, sdeps, nsdeps, dst_rank, dbuf,
                         doff, ddeps, nddeps, bytes, reduce, lbuf, loff,
                         send_step, recv_step);
}

uint32_t hccn_sched_local(hccn_sched_t *s, int rank, int reduce,
                          hccn_buf_t sbuf, uint64_t soff, hccn_buf_t dbuf,
                          uint64_t doff, uint64_t bytes, const uint32_t *deps,
                          uint32_t ndeps)
{
    hccn_step_t st = {.kind = reduce ? HCCN_STEP_REDUCE : HCCN_STEP_COPY,
                      .src_buf = (uint8_t)sbuf, .dst_buf = (uint8_t)dbuf,
                      .peer = rank, .src_off = soff, .dst_off = doff,
                      .bytes = bytes};
    return hccn_sched_add(s, rank, &st, deps, ndeps);
}

int hccn_sched_xfer_room(hccn_sched_t *s, uint32_t n)
{
    uint32_t need = s->nxfers + n, cap = s->capxfers;
    if (need <= cap)
        return 0;
    uint32_t c = cap ? cap : 8;
    while (c < need)
        c *= 2;
    uint32_t c2 = cap;
    if (resize(s, &s->xfer_send, &cap, c, sizeof(*s->xfer_send)) != 0 ||
        resize(s, &s->xfer_recv, &c2, c, sizeof(*s->xfer_recv)) != 0) {
        s->failed = 1;
        return -1;
    }
    s->capxfers = c;
    return 0;
}

#define SLAB_MIN ((size_t)1 << 20)   /* smaller: malloc does as well */
#define SLAB_ALIGN ((size_t)64)

static size_t slab_round(size_t n)
{
    return (n + SLAB_ALIGN - 1) / SLAB_ALIGN * SLAB_ALIGN;
}

/* Moves *p (cap elements, n in use) to room for want at *at in the slab. */
static void slab_move(hccn_sched_t *s, void *pp, uint32_t *cap, uint32_t n,
                      uint32_t want, size_t elem, char **at)
{
    void **p = pp;
    if (n > 0)
        memcpy(*at, *p, (size_t)n * elem);
    free_array(s, *p);
    *p = *at;
    *cap = want;
    *at += slab_round((size_t)want * elem);
}

void hccn_sched_reserve(hccn_sched_t *s, const uint32_t *steps,
                        const uint32_t *deps, uint32_t nxfers)
{
    if (s->failed)
        return;
    size_t len = 2 * slab_round(((size_t)s->nxfers + nxfers) *
                                sizeof(hccn_sched_ref_t));
    for (int r = 0; r < s->nranks; r++)
        len += slab_round(((size_t)s->ranks[r].nsteps + steps[r]) *
                          sizeof(hccn_step_t)) +
               slab_round(((size_t)s->ranks[r].ndeps + deps[r]) *
                          sizeof(uint32_t));
    void *m = MAP_FAILED;
    if (len >= SLAB_MIN && s->slab == NULL)
        m = mmap(NULL, len, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        /* Small, or already given one mapping: room array by array. */
        for (int r = 0; r < s->nranks && !s->failed; r++) {
            hccn_sched_rank_t *k = &s->ranks[r];
            if ((k->nsteps + steps[r] > k->capsteps &&
                 resize(s, &k->steps, &k->capsteps, k->nsteps + steps[r],
                        sizeof(*k->steps)) != 0) ||
                (k->ndeps + deps[r] > k->capdeps &&
                 resize(s, &k->deps, &k->capdeps, k->ndeps + deps[r],
                        sizeof(*k->deps)) != 0))
                s->failed = 1;
        }
        if (!s->failed)
            hccn_sched_xfer_room(s, nxfers);
        return;
    }
    char *at = m;
    for (int r = 0; r < s->nranks; r++) {
        hccn_sched_rank_t *k = &s->ranks[r];
        slab_move(s, &k->steps, &k->capsteps, k->nsteps, k->nsteps + steps[r],
                  sizeof(*k->steps), &at);
        slab_move(s, &k->deps, &k->capdeps, k->ndeps, k->ndeps + deps[r],
                  sizeof(*k->deps), &at);
    }
    uint32_t c2 = s->capxfers, want = s->nxfers + nxfers;
    slab_move(s, &s->xfer_send, &s->capxfers, s->nxfers, want,
              sizeof(*s->xfer_send), &at);
    slab_move(s, &s->xfer_recv, &c2, s->nxfers, want, sizeof(*s->xfer_recv),
              &at);
    s->slab = m;
    s->slab_len = len;
}

uint32_t hccn_sched_nsteps(const hccn_sched_t *s, int rank)
{
    return rank >= 0 && rank < s->nranks ? s->ranks[rank].nsteps : 0;
}

void hccn_sched_step_task(const hccn_step_t *st, const hccn_sim_npu_t *npu,
                          const int *world, hccn_sim_task_t *t)
{
    memset(t, 0, sizeof(*t));
    t->dep_off = st->dep_off;
    t->ndeps = st->ndeps;
    switch (st->kind) {
    case HCCN_STEP_SEND:
    case HCCN_STEP_RECV:
    case HCCN_STEP_RECV_REDUCE:
        t->kind = st->kind == HCCN_STEP_SEND ? HCCN_SIM_TASK_SEND
                                             : HCCN_SIM_TASK_RECV;
        t->peer = world[st->peer];
        t->bytes = st->bytes;
        t->via = st->via;
        if (st->kind == HCCN_STEP_RECV_REDUCE)
            t->cost = (double)st->bytes / npu->reduce_bw;
        break;
    case HCCN_STEP_REDUCE:
        t->kind = HCCN_SIM_TASK_LOCAL;
        t->cost = st->via ? 0.0 : (double)st->bytes / npu->reduce_bw;
        break;
    default:
        t->kind = HCCN_SIM_TASK_LOCAL;
        t->cost = npu->mem_bw > 0.0 ? (double)st->bytes / npu->mem_bw : 0.0;
        break;
    }
}

/* Writes why and records it (HCCN_ERR_INTERNAL, "invalid schedule"). */
static int fail(char *why, size_t len, const char *fmt, int a, int b)
{
    char msg[256];
    snprintf(msg, sizeof(msg), fmt, a, b);
    if (why != NULL && len > 0)
        snprintf(why, len, "%s", msg);
    hccn_sim_fail(HCCN_ERR_INTERNAL, "built an invalid schedule: %s", msg);
    return -1;
}

int hccn_sched_validate(const hccn_sched_t *s, char *why, size_t len)
{
    if (s->failed)
        return fail(why, len, "construction failed (%d/%d)", 0, 0);
    for (uint32_t x = 0; x < s->nxfers; x++) {
        hccn_sched_ref_t a = s->xfer_send[x], b = s->xfer_recv[x];
        const hccn_step_t *sa = &s->ranks[a.rank].steps[a.step];
        const hccn_step_t *sb = &s->ranks[b.rank].steps[b.step];
        if (sa->kind != HCCN_STEP_SEND || sa->xfer != x ||
            sb->xfer != x || sa->peer != b.rank || sb->peer != a.rank)
            return fail(why, len, "xfer %d between ranks %d is not paired",
                        (int)x, a.rank);
        if (sa->bytes != sb->bytes)
            return fail(why, len, "xfer %d: sizes differ (rank %d)", (int)x,
                        a.rank);
        if (sa->via != sb->via)
            return fail(why, len, "xfer %d: its sides cross different parts "
                        "of the route (rank %d)", (int)x, a.rank);
    }
    for (int r = 0; r < s->nranks; r++) {
        const hccn_sched_rank_t *rk = &s->ranks[r];
        for (uint32_t i = 0; i < rk->nsteps; i++) {
            const hccn_step_t *st = &rk->steps[i];
            if (st->src_buf > HCCN_BUF_SCRATCH || st->dst_buf > HCCN_BUF_SCRATCH)
                return fail(why, len, "rank %d step %d names no buffer", r,
                            (int)i);
            if ((st->src_buf == HCCN_BUF_SCRATCH &&
                 st->src_off + st->bytes > s->scratch_bytes &&
                 st->kind != HCCN_STEP_RECV) ||
                (st->dst_buf == HCCN_BUF_SCRATCH &&
                 st->dst_off + st->bytes > s->scratch_bytes &&
                 st->kind != HCCN_STEP_SEND))
                return fail(why, len, "rank %d step %d overruns scratch", r,
                            (int)i);
            for (uint32_t k = 0; k < st->ndeps; k++)
                if (rk->deps[st->dep_off + k] >= i)
                    return fail(why, len, "rank %d step %d depends forward",
                                r, (int)i);
        }
    }
    return 0;
}
