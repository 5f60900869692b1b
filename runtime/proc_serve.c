/*
 * The host's side of forwarding (proc.h): on the thread of a rank that a
 * client runs, each request is made as the public call it stands for,
 * with the host's pointers and tokens, so every check, message, time and
 * byte is the one-process run's. The reply carries the status, the last
 * error and the results.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "device_sim/alloc.h"
#include "runtime/proc.h"
#include "runtime/rt.h"

typedef struct {
    hccn_ctx_t *ctx;              /* the rank's own */
    rt_proc_t *p;
    rt_wire_t *in;
    rt_wire_t out;                /* the results */
} srv_t;

static uint64_t u64(srv_t *s)
{
    return hccn_rt_wire_get_u64(s->in);
}

static int i32(srv_t *s)
{
    return (int)(int64_t)u64(s);
}

static hccn_ctx_t *get_ctx(srv_t *s)
{
    int64_t k = (int64_t)u64(s);
    uint64_t raw = u64(s);
    hccn_cluster_t *cl = s->ctx->cl;
    if (k == -1)
        return NULL;
    if (k >= 0 && k < cl->nranks)
        return &cl->ctxs[k];
    return (hccn_ctx_t *)(uintptr_t)raw;
}

static void *get_tok(srv_t *s)
{
    return (void *)(uintptr_t)u64(s);
}

static void put_tok(srv_t *s, const void *tok)
{
    hccn_rt_wire_u64(&s->out, (uint64_t)(uintptr_t)tok);
}

static hccn_status_t h_ctx(srv_t *s, int fn)
{
    hccn_ctx_t *ctx = get_ctx(s);
    double x = hccn_rt_wire_get_f64(s->in);
    int i = i32(s);
    switch (fn) {
    case RT_FWD_COMPUTE: return hccn_compute(ctx, x);
    case RT_FWD_FLOPS: return hccn_compute_flops(ctx, x);
    case RT_FWD_FLOPS_DTYPE: return hccn_compute_flops_dtype(ctx, x, i);
    case RT_FWD_GROUP_START: return hccn_group_start(ctx);
    case RT_FWD_GROUP_END: return hccn_group_end(ctx);
    case RT_FWD_MARK: return hccn_mark(ctx, i);
    default: return hccn_summary_mark(ctx);
    }
}

static hccn_status_t h_mem(srv_t *s, int fn)
{
    hccn_ctx_t *ctx = get_ctx(s);
    if (fn == RT_FWD_FREE)
        return hccn_free(ctx, hccn_rt_wire_get_ptr(s->in, s->p));
    if (fn == RT_FWD_MEM_INFO) {
        hccn_mem_info_t info;
        memset(&info, 0, sizeof(info));
        hccn_status_t rc = hccn_mem_info(ctx, u64(s) ? &info : NULL);
        hccn_rt_wire_bytes(&s->out, &info, sizeof(info));
        return rc;
    }
    size_t bytes = (size_t)u64(s);
    void *ptr = NULL;
    hccn_status_t rc = hccn_malloc(ctx, bytes, u64(s) ? &ptr : NULL);
    hccn_rt_wire_ptr(&s->out, s->p, ptr);
    return rc;
}

static hccn_status_t h_query(srv_t *s, int fn)
{
    if (fn == RT_FWD_TIME || fn == RT_FWD_LAST_DURATION) {
        hccn_ctx_t *ctx = get_ctx(s);
        hccn_rt_wire_f64(&s->out, fn == RT_FWD_TIME ? hccn_time(ctx)
                                                    : hccn_last_duration(ctx));
    } else if (fn == RT_FWD_WORLD) {
        put_tok(s, hccn_comm_world(get_ctx(s)));
    } else {
        hccn_comm_t *c = get_tok(s);
        int v = fn == RT_FWD_COMM_RANK ? hccn_comm_rank(c) : hccn_comm_size(c);
        hccn_rt_wire_u64(&s->out, (uint64_t)(int64_t)v);
    }
    return HCCN_OK;
}

static hccn_status_t h_comm_new(srv_t *s, int fn)
{
    hccn_comm_t *c = get_tok(s), *out = NULL;
    int a = i32(s), b = i32(s), want = (int)u64(s), have = (int)u64(s);
    size_t n;
    const void *ranks = hccn_rt_wire_get_bytes(s->in, &n);
    int *copy = NULL;
    if (have && n > 0 && (copy = hccn_sim_malloc(n)) != NULL)
        memcpy(copy, ranks, n);
    static int none;   /* a list of no entries that is not NULL */
    hccn_status_t rc =
        fn == RT_FWD_SPLIT
            ? hccn_comm_split(c, a, b, want ? &out : NULL)
            : hccn_comm_create(c, have ? (copy ? copy : &none) : NULL, a,
                               want ? &out : NULL);
    hccn_sim_free(copy);
    put_tok(s, out);
    return rc;
}

static hccn_status_t h_comm_set(srv_t *s, int fn)
{
    hccn_comm_t *c = get_tok(s);
    int i = i32(s);
    const char *str = hccn_rt_wire_get_str(s->in);
    switch (fn) {
    case RT_FWD_DESTROY: return hccn_comm_destroy(c);
    case RT_FWD_ABORT: return hccn_comm_abort(c);
    case RT_FWD_SET_ALGO: return hccn_comm_set_algo(c, str);
    default: return hccn_comm_set_compression(c, i);
    }
}

static hccn_status_t h_future(srv_t *s, int fn)
{
    hccn_future_t *f = get_tok(s);
    int want = (int)u64(s), done = 0;
    double t0 = 0.0, t1 = 0.0;
    hccn_status_t rc;
    if (fn == RT_FWD_WAIT)
        rc = hccn_wait(f);
    else if (fn == RT_FWD_TEST)
        rc = hccn_test(f, want & 1 ? &done : NULL);
    else if (fn == RT_FWD_TIMES)
        rc = hccn_future_times(f, want & 2 ? &t0 : NULL, want & 4 ? &t1 : NULL);
    else
        rc = hccn_future_free(f);
    hccn_rt_wire_u64(&s->out, (uint64_t)done);
    hccn_rt_wire_f64(&s->out, t0);
    hccn_rt_wire_f64(&s->out, t1);
    return rc;
}

static hccn_status_t h_p2p(srv_t *s)
{
    hccn_comm_t *c = get_tok(s);
    int is_send = (int)u64(s), blocking = (int)u64(s);
    void *buf = hccn_rt_wire_get_ptr(s->in, s->p);
    size_t count = (size_t)u64(s);
    hccn_dtype_t dt = (hccn_dtype_t)i32(s);
    int peer = i32(s), want = (int)u64(s);
    hccn_future_t *f = NULL, **fp = want ? &f : NULL;
    hccn_status_t rc =
        blocking ? (is_send ? hccn_send(c, buf, count, dt, peer)
                            : hccn_recv(c, buf, count, dt, peer))
                 : (is_send ? hccn_isend(c, buf, count, dt, peer, fp)
                            : hccn_irecv(c, buf, count, dt, peer, fp));
    put_tok(s, f);
    return rc;
}

/* A collective with options (RT_FORM_OPTS). */
static hccn_status_t coll_opts(hccn_comm_t *m, const rt_fwd_coll_t *c,
                               hccn_future_t **f)
{
    const void *sb = c->sendbuf;
    void *rb = c->recvbuf;
    switch (c->coll) {
    case HCCN_COLL_ALLREDUCE:
        return hccn_allreduce_opts(m, sb, rb, c->count, c->dtype, c->op,
                                   c->opts, f);
    case HCCN_COLL_REDUCE_SCATTER:
        return hccn_reduce_scatter_opts(m, sb, rb, c->count, c->dtype, c->op,
                                        c->opts, f);
    default:
        return hccn_allgather_opts(m, sb, rb, c->count, c->dtype, c->opts, f);
    }
}

/* A blocking collective (RT_FORM_BLOCK). */
static hccn_status_t coll_block(hccn_comm_t *m, const rt_fwd_coll_t *c)
{
    const void *sb = c->sendbuf;
    void *rb = c->recvbuf;
    size_t n = c->count;
    const size_t *const *v = c->v;
    switch (c->coll) {
    case HCCN_COLL_ALLREDUCE: return hccn_allreduce(m, sb, rb, n, c->dtype, c->op);
    case HCCN_COLL_REDUCE_SCATTER:
        return hccn_reduce_scatter(m, sb, rb, n, c->dtype, c->op);
    case HCCN_COLL_ALLGATHER: return hccn_allgather(m, sb, rb, n, c->dtype);
    case HCCN_COLL_BROADCAST: return hccn_broadcast(m, sb, rb, n, c->dtype, c->root);
    case HCCN_COLL_REDUCE: return hccn_reduce(m, sb, rb, n, c->dtype, c->op, c->root);
    case HCCN_COLL_ALLTOALL: return hccn_alltoall(m, sb, rb, n, c->dtype);
    case HCCN_COLL_SCATTER: return hccn_scatter(m, sb, rb, n, c->dtype, c->root);
    case HCCN_COLL_GATHER: return hccn_gather(m, sb, rb, n, c->dtype, c->root);
    case HCCN_COLL_ALLTOALLV:
        return hccn_alltoallv(m, sb, v[0], v[1], rb, v[2], v[3], c->dtype);
    case HCCN_COLL_ALLGATHERV:
        return hccn_allgatherv(m, sb, n, rb, v[2], v[3], c->dtype);
    case HCCN_COLL_REDUCE_SCATTERV:
        return hccn_reduce_scatterv(m, sb, rb, v[2], c->dtype, c->op);
    default: return hccn_barrier(m);
    }
}

/* A non-blocking collective (RT_FORM_POST). */
static hccn_status_t coll_post(hccn_comm_t *m, const rt_fwd_coll_t *c,
                               hccn_future_t **f)
{
    const void *sb = c->sendbuf;
    void *rb = c->recvbuf;
    size_t n = c->count;
    const size_t *const *v = c->v;
    switch (c->coll) {
    case HCCN_COLL_ALLREDUCE:
        return hccn_iallreduce(m, sb, rb, n, c->dtype, c->op, f);
    case HCCN_COLL_REDUCE_SCATTER:
        return hccn_ireduce_scatter(m, sb, rb, n, c->dtype, c->op, f);
    case HCCN_COLL_ALLGATHER: return hccn_iallgather(m, sb, rb, n, c->dtype, f);
    case HCCN_COLL_BROADCAST:
        return hccn_ibroadcast(m, sb, rb, n, c->dtype, c->root, f);
    case HCCN_COLL_REDUCE:
        return hccn_ireduce(m, sb, rb, n, c->dtype, c->op, c->root, f);
    case HCCN_COLL_ALLTOALL: return hccn_ialltoall(m, sb, rb, n, c->dtype, f);
    case HCCN_COLL_ALLTOALLV:
        return hccn_ialltoallv(m, sb, v[0], v[1], rb, v[2], v[3], c->dtype, f);
    case HCCN_COLL_ALLGATHERV:
        return hccn_iallgatherv(m, sb, n, rb, v[2], v[3], c->dtype, f);
    case HCCN_COLL_REDUCE_SCATTERV:
        return hccn_ireduce_scatterv(m, sb, rb, v[2], c->dtype, c->op, f);
    default: return hccn_ibarrier(m, f);
    }
}

static hccn_status_t coll_serve(hccn_comm_t *comm,
                                        const rt_fwd_coll_t *c,
                                        hccn_future_t **fut)
{
    switch (c->form) {
    case RT_FORM_OPTS: return coll_opts(comm, c, fut);
    case RT_FORM_POST: return coll_post(comm, c, fut);
    default: return coll_block(comm, c);
    }
}

static hccn_status_t h_coll(srv_t *s, int fn)
{
    rt_fwd_coll_t c;
    memset(&c, 0, sizeof(c));
    hccn_comm_t *comm = get_tok(s);
    c.form = (int)u64(s);
    c.coll = (int)u64(s);
    c.sendbuf = hccn_rt_wire_get_ptr(s->in, s->p);
    c.recvbuf = hccn_rt_wire_get_ptr(s->in, s->p);
    c.count = (size_t)u64(s);
    c.dtype = (hccn_dtype_t)i32(s);
    c.op = (hccn_redop_t)i32(s);
    c.root = i32(s);
    int has_opts = (int)u64(s);
    hccn_coll_opts_t o = {.struct_size = (size_t)u64(s), .compress = i32(s)};
    o.algo = hccn_rt_wire_get_str(s->in);
    c.opts = has_opts ? &o : NULL;
    int want = (int)u64(s);
    size_t *copies[4] = {NULL, NULL, NULL, NULL};
    for (int k = 0; fn == RT_FWD_VCOLL && k < 4; k++) {
        int present = (int)u64(s);
        size_t n;
        const void *b = hccn_rt_wire_get_bytes(s->in, &n);
        copies[k] = present ? hccn_sim_calloc(n / sizeof(size_t) + 1, sizeof(size_t))
                            : NULL;
        if (copies[k] != NULL && n > 0)
            memcpy(copies[k], b, n);
        c.v[k] = copies[k];
    }
    hccn_future_t *f = NULL;
    hccn_status_t rc = coll_serve(comm, &c, want ? &f : NULL);
    for (int k = 0; k < 4; k++)
        hccn_sim_free(copies[k]);
    put_tok(s, f);
    return rc;
}

static hccn_status_t h_sim(srv_t *s, int fn)
{
    hccn_ctx_t *ctx = fn == RT_FWD_SUMMARY ? get_ctx(s) : NULL;
    hccn_comm_t *c = get_tok(s);
    int kind = fn == RT_FWD_SUMMARY ? i32(s) : 0, want = (int)u64(s);
    size_t n;
    const void *b = hccn_rt_wire_get_bytes(s->in, &n);
    union { hccn_choice_t ch; hccn_comm_summary_t sum; } u;
    size_t size = fn == RT_FWD_SUMMARY ? sizeof(u.sum) : sizeof(u.ch);
    memset(&u, 0, sizeof(u));
    if (b != NULL && n == size)
        memcpy(&u, b, n);
    hccn_status_t rc = fn == RT_FWD_SUMMARY
                           ? hccn_summary(ctx, c, kind, want ? &u.sum : NULL)
                           : hccn_comm_last_choice(c, want ? &u.ch : NULL);
    hccn_rt_wire_bytes(&s->out, &u, size);
    return rc;
}

static hccn_status_t dispatch(srv_t *s, int fn)
{
    switch (fn) {
    case RT_FWD_MALLOC: case RT_FWD_FREE: case RT_FWD_MEM_INFO:
        return h_mem(s, fn);
    case RT_FWD_TIME: case RT_FWD_LAST_DURATION: case RT_FWD_WORLD:
    case RT_FWD_COMM_RANK: case RT_FWD_COMM_SIZE:
        return h_query(s, fn);
    case RT_FWD_SPLIT: case RT_FWD_CREATE:
        return h_comm_new(s, fn);
    case RT_FWD_DESTROY: case RT_FWD_ABORT: case RT_FWD_SET_ALGO:
    case RT_FWD_SET_COMPRESSION:
        return h_comm_set(s, fn);
    case RT_FWD_WAIT: case RT_FWD_TEST: case RT_FWD_TIMES:
    case RT_FWD_FUT_FREE:
        return h_future(s, fn);
    case RT_FWD_P2P:
        return h_p2p(s);
    case RT_FWD_COLL: case RT_FWD_VCOLL:
        return h_coll(s, fn);
    case RT_FWD_LAST_CHOICE: case RT_FWD_SUMMARY:
        return h_sim(s, fn);
    default:
        return h_ctx(s, fn);
    }
}

/* The end of a lost client's rank: its function is over, with an error.
 * The watcher (proc_run.c) sees the same process go on its control line
 * and breaks every communicator naming it: that is waited for (a second
 * at most), so that the others' operations fail with the cause, not with
 * this rank's leaving a call it had in fact finished. */
static hccn_status_t lost_rank(rt_proc_t *p, hccn_ctx_t *ctx)
{
    int q = hccn_rt_proc_owner(p, ctx->rank);
    for (int i = 0; i < 1000 && !atomic_load(&p->lost); i++) {
        struct timespec ts = {0, 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return hccn_rt_error(HCCN_ERR_REMOTE, "rank %d: process %d, which ran "
                         "it, was lost (its connection closed: it exited "
                         "or was killed)", ctx->rank, q);
}

hccn_status_t hccn_rt_proc_serve(hccn_ctx_t *ctx)
{
    rt_proc_t *p = ctx->cl->proc;
    int fd = p->rank_fd[ctx->rank];
    rt_wire_t in = {0}, rep = {0};
    srv_t s = {.ctx = ctx, .p = p, .in = &in};
    hccn_status_t rc = HCCN_OK;
    for (;;) {
        if (hccn_rt_wire_recv(fd, &in) != 0) {
            rc = lost_rank(p, ctx);
            break;
        }
        int fn = (int)hccn_rt_wire_get_u64(&in);
        if (fn == RT_FWD_END) {
            rc = (hccn_status_t)(int64_t)hccn_rt_wire_get_u64(&in);
            const char *msg = hccn_rt_wire_get_str(&in);
            if (rc != HCCN_OK)
                hccn_rt_error(rc, "%s", msg != NULL ? msg : "");
            break;
        }
        hccn_rt_wire_reset(&s.out);
        hccn_status_t st = dispatch(&s, fn);
        hccn_rt_wire_reset(&rep);
        hccn_rt_wire_u64(&rep, (uint64_t)(int64_t)st);
        hccn_rt_wire_str(&rep, hccn_last_error());
        hccn_rt_wire_append(&rep, &s.out);
        if (hccn_rt_wire_send(fd, &rep) != 0) {
            rc = lost_rank(p, ctx);
            break;
        }
    }
    hccn_rt_wire_free(&in);
    hccn_rt_wire_free(&rep);
    hccn_rt_wire_free(&s.out);
    return rc;
}
