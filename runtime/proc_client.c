/*
 * The client's side of forwarding (proc.h): every ctx/comm/future call of
 * a rank that runs in a client process travels to the host, where the
 * rank's thread makes the real call (proc_serve.c). A request is the
 * call's id and arguments; the reply is the status, the host's last error
 * (unchanged) and the results. Handles travel as the host's tokens, which
 * the host checks as it checks any; contexts as rank numbers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/proc.h"
#include "runtime/rt.h"

static const char *const names[RT_FWD_COUNT] = {
    [RT_FWD_END] = "hccn_cluster_run", [RT_FWD_MALLOC] = "hccn_malloc",
    [RT_FWD_FREE] = "hccn_free", [RT_FWD_MEM_INFO] = "hccn_mem_info",
    [RT_FWD_TIME] = "hccn_time", [RT_FWD_LAST_DURATION] = "hccn_last_duration",
    [RT_FWD_COMPUTE] = "hccn_compute", [RT_FWD_FLOPS] = "hccn_compute_flops",
    [RT_FWD_FLOPS_DTYPE] = "hccn_compute_flops_dtype",
    [RT_FWD_WORLD] = "hccn_comm_world", [RT_FWD_COMM_RANK] = "hccn_comm_rank",
    [RT_FWD_COMM_SIZE] = "hccn_comm_size", [RT_FWD_SPLIT] = "hccn_comm_split",
    [RT_FWD_CREATE] = "hccn_comm_create", [RT_FWD_DESTROY] = "hccn_comm_destroy",
    [RT_FWD_ABORT] = "hccn_comm_abort", [RT_FWD_SET_ALGO] = "hccn_comm_set_algo",
    [RT_FWD_SET_COMPRESSION] = "hccn_comm_set_compression",
    [RT_FWD_P2P] = "a send or receive", [RT_FWD_WAIT] = "hccn_wait",
    [RT_FWD_TEST] = "hccn_test", [RT_FWD_TIMES] = "hccn_future_times",
    [RT_FWD_FUT_FREE] = "hccn_future_free",
    [RT_FWD_GROUP_START] = "hccn_group_start",
    [RT_FWD_GROUP_END] = "hccn_group_end", [RT_FWD_COLL] = "a collective",
    [RT_FWD_VCOLL] = "a v-collective",
    [RT_FWD_LAST_CHOICE] = "hccn_comm_last_choice", [RT_FWD_MARK] = "hccn_mark",
    [RT_FWD_SUMMARY_MARK] = "hccn_summary_mark", [RT_FWD_SUMMARY] = "hccn_summary",
};

const char *hccn_rt_fwd_name(int fn)
{
    return fn > 0 && fn < RT_FWD_COUNT && names[fn] ? names[fn] : "a call";
}

int hccn_rt_proc_fwd(void)
{
    return hccn_rt_fwd_self() != NULL;
}

/* A new request for fn on the calling thread's line. */
static rt_wire_t *begin(int fn)
{
    rt_wire_t *m = &hccn_rt_fwd_self()->req;
    hccn_rt_wire_reset(m);
    hccn_rt_wire_u64(m, (uint64_t)fn);
    return m;
}

/* Sends the request, waits for the reply, and makes the host's status and
 * last error the caller's; the reply's results follow in self->rep. name:
 * the call, for the message when the host is gone. */
static hccn_status_t roundtrip_as(const char *name)
{
    rt_fwd_self_t *s = hccn_rt_fwd_self();
    /* The rank's bytes written before the call are read, and those the
     * call writes are written, by this process's data server (proc_data.c). */
    hccn_rt_proc_sync_release(s->p);
    if (!s->dead && (hccn_rt_wire_send(s->fd, &s->req) != 0 ||
                     hccn_rt_wire_recv(s->fd, &s->rep) != 0))
        s->dead = 1;
    hccn_rt_proc_sync_acquire(s->p);
    if (s->dead) {
        hccn_rt_wire_reset(&s->rep);
        return hccn_rt_error(HCCN_ERR_REMOTE, "%s: rank %d (process %d): the "
                             "host process (process 0) was lost: its "
                             "connection closed", name, s->rank, s->p->rank);
    }
    hccn_status_t rc = (hccn_status_t)(int64_t)hccn_rt_wire_get_u64(&s->rep);
    const char *msg = hccn_rt_wire_get_str(&s->rep);
    hccn_rt_error(rc, "%s", msg != NULL ? msg : "");
    return rc;
}

static hccn_status_t roundtrip(int fn)
{
    return roundtrip_as(hccn_rt_fwd_name(fn));
}

static rt_wire_t *rep(void)
{
    return &hccn_rt_fwd_self()->rep;
}

static const rt_proc_t *proc(void)
{
    return hccn_rt_fwd_self()->p;
}

/* A context as its rank; -1 for NULL; -2 and the value for a stray one. */
static void put_ctx(rt_wire_t *m, const hccn_ctx_t *ctx)
{
    const hccn_cluster_t *cl = hccn_rt_fwd_self()->cl;
    ptrdiff_t i = ctx - cl->ctxs;
    int own = ctx != NULL && ctx >= cl->ctxs && i < cl->nranks;
    hccn_rt_wire_u64(m, ctx == NULL ? (uint64_t)-1 : own ? (uint64_t)i
                                                         : (uint64_t)-2);
    hccn_rt_wire_u64(m, (uint64_t)(uintptr_t)ctx);
}

static void put_tok(rt_wire_t *m, const void *tok)
{
    hccn_rt_wire_u64(m, (uint64_t)(uintptr_t)tok);
}

static void *get_tok(void)
{
    return (void *)(uintptr_t)hccn_rt_wire_get_u64(rep());
}

hccn_status_t hccn_rt_fwd_ctx(int fn, hccn_ctx_t *ctx, double x, int i)
{
    rt_wire_t *m = begin(fn);
    put_ctx(m, ctx);
    hccn_rt_wire_f64(m, x);
    hccn_rt_wire_u64(m, (uint64_t)(int64_t)i);
    return roundtrip(fn);
}

hccn_status_t hccn_rt_fwd_malloc(hccn_ctx_t *ctx, size_t bytes, void **ptr)
{
    rt_wire_t *m = begin(RT_FWD_MALLOC);
    put_ctx(m, ctx);
    hccn_rt_wire_u64(m, bytes);
    hccn_rt_wire_u64(m, ptr != NULL);
    hccn_status_t rc = roundtrip(RT_FWD_MALLOC);
    void *p = hccn_rt_wire_get_ptr(rep(), proc());
    if (ptr != NULL && !hccn_rt_fwd_self()->dead)
        *ptr = p;
    return rc;
}

hccn_status_t hccn_rt_fwd_free(hccn_ctx_t *ctx, void *ptr)
{
    rt_wire_t *m = begin(RT_FWD_FREE);
    put_ctx(m, ctx);
    hccn_rt_wire_ptr(m, proc(), ptr);
    return roundtrip(RT_FWD_FREE);
}

hccn_status_t hccn_rt_fwd_mem_info(hccn_ctx_t *ctx, hccn_mem_info_t *info)
{
    rt_wire_t *m = begin(RT_FWD_MEM_INFO);
    put_ctx(m, ctx);
    hccn_rt_wire_u64(m, info != NULL);
    hccn_status_t rc = roundtrip(RT_FWD_MEM_INFO);
    size_t n;
    const void *b = hccn_rt_wire_get_bytes(rep(), &n);
    if (info != NULL && b != NULL && n == sizeof(*info))
        memcpy(info, b, n);
    return rc;
}

double hccn_rt_fwd_clock(int fn, hccn_ctx_t *ctx)
{
    rt_wire_t *m = begin(fn);
    put_ctx(m, ctx);
    roundtrip(fn);
    return hccn_rt_wire_get_f64(rep());
}

hccn_comm_t *hccn_rt_fwd_world(hccn_ctx_t *ctx)
{
    rt_wire_t *m = begin(RT_FWD_WORLD);
    put_ctx(m, ctx);
    roundtrip(RT_FWD_WORLD);
    return get_tok();
}

int hccn_rt_fwd_comm_int(int fn, const hccn_comm_t *comm)
{
    put_tok(begin(fn), comm);
    roundtrip(fn);
    return (int)(int64_t)hccn_rt_wire_get_u64(rep());
}

hccn_status_t hccn_rt_fwd_comm_new(int fn, hccn_comm_t *comm, int a, int b,
                                   const int *ranks, hccn_comm_t **out)
{
    rt_wire_t *m = begin(fn);
    put_tok(m, comm);
    hccn_rt_wire_u64(m, (uint64_t)(int64_t)a);
    hccn_rt_wire_u64(m, (uint64_t)(int64_t)b);
    hccn_rt_wire_u64(m, out != NULL);
    /* hccn_comm_create: the list (a entries), or none for NULL */
    int n = fn == RT_FWD_CREATE && ranks != NULL && a > 0 ? a : 0;
    hccn_rt_wire_u64(m, ranks != NULL);
    hccn_rt_wire_bytes(m, ranks, (size_t)n * sizeof(int));
    hccn_status_t rc = roundtrip(fn);
    void *tok = get_tok();
    if (out != NULL && !hccn_rt_fwd_self()->dead)
        *out = tok;
    return rc;
}

hccn_status_t hccn_rt_fwd_comm_set(int fn, hccn_comm_t *comm, int i,
                                   const char *s)
{
    rt_wire_t *m = begin(fn);
    put_tok(m, comm);
    hccn_rt_wire_u64(m, (uint64_t)(int64_t)i);
    hccn_rt_wire_str(m, s);
    return roundtrip(fn);
}

hccn_status_t hccn_rt_fwd_future(int fn, const hccn_future_t *fut, int *done,
                                 double *start, double *end)
{
    rt_wire_t *m = begin(fn);
    put_tok(m, fut);
    hccn_rt_wire_u64(m, (done != NULL) | (start != NULL) << 1 |
                            (end != NULL) << 2);
    hccn_status_t rc = roundtrip(fn);
    int d = (int)hccn_rt_wire_get_u64(rep());
    double t0 = hccn_rt_wire_get_f64(rep()), t1 = hccn_rt_wire_get_f64(rep());
    if (hccn_rt_fwd_self()->dead)
        return rc;
    if (done != NULL)
        *done = d;
    if (start != NULL && fn == RT_FWD_TIMES && rc == HCCN_OK)
        *start = t0;
    if (end != NULL && fn == RT_FWD_TIMES && rc == HCCN_OK)
        *end = t1;
    return rc;
}

hccn_status_t hccn_rt_fwd_p2p(hccn_comm_t *comm, int is_send, int blocking,
                              const void *buf, size_t count,
                              hccn_dtype_t dtype, int peer,
                              hccn_future_t **fut)
{
    rt_wire_t *m = begin(RT_FWD_P2P);
    put_tok(m, comm);
    hccn_rt_wire_u64(m, (uint64_t)is_send);
    hccn_rt_wire_u64(m, (uint64_t)blocking);
    hccn_rt_wire_ptr(m, proc(), buf);
    hccn_rt_wire_u64(m, count);
    hccn_rt_wire_u64(m, (uint64_t)(int64_t)dtype);
    hccn_rt_wire_u64(m, (uint64_t)(int64_t)peer);
    hccn_rt_wire_u64(m, fut != NULL);
    hccn_status_t rc = roundtrip(RT_FWD_P2P);
    void *tok = get_tok();
    if (fut != NULL)
        *fut = hccn_rt_fwd_self()->dead ? NULL : tok;
    return rc;
}

/* The v-arrays: each present one with n entries. */
static void put_varrays(rt_wire_t *m, const rt_fwd_coll_t *c, int n)
{
    for (int k = 0; k < 4; k++) {
        hccn_rt_wire_u64(m, c->v[k] != NULL);
        size_t len = c->v[k] != NULL && n > 0 ? (size_t)n : 0;
        hccn_rt_wire_bytes(m, c->v[k], len * sizeof(size_t));
    }
}

hccn_status_t hccn_rt_fwd_coll(hccn_comm_t *comm, const rt_fwd_coll_t *c,
                               hccn_future_t **fut)
{
    int v = c->v[0] || c->v[1] || c->v[2] || c->v[3];
    /* The arrays have one entry per comm rank: the host says how many. */
    int n = v ? hccn_rt_fwd_comm_int(RT_FWD_COMM_SIZE, comm) : 0;
    int fn = v ? RT_FWD_VCOLL : RT_FWD_COLL;
    rt_wire_t *m = begin(fn);
    put_tok(m, comm);
    hccn_rt_wire_u64(m, (uint64_t)c->form);
    hccn_rt_wire_u64(m, (uint64_t)c->coll);
    hccn_rt_wire_ptr(m, proc(), c->sendbuf);
    hccn_rt_wire_ptr(m, proc(), c->recvbuf);
    hccn_rt_wire_u64(m, c->count);
    hccn_rt_wire_u64(m, (uint64_t)(int64_t)c->dtype);
    hccn_rt_wire_u64(m, (uint64_t)(int64_t)c->op);
    hccn_rt_wire_u64(m, (uint64_t)(int64_t)c->root);
    hccn_rt_wire_u64(m, c->opts != NULL);
    hccn_rt_wire_u64(m, c->opts != NULL ? c->opts->struct_size : 0);
    hccn_rt_wire_u64(m, (uint64_t)(int64_t)(c->opts != NULL ? c->opts->compress
                                                            : 0));
    hccn_rt_wire_str(m, c->opts != NULL ? c->opts->algo : NULL);
    hccn_rt_wire_u64(m, fut != NULL);
    if (v)
        put_varrays(m, c, n);
    char name[64];
    snprintf(name, sizeof(name), "hccn_%s%s", c->form == RT_FORM_POST ? "i" : "",
             hccn_coll_name((hccn_coll_t)c->coll));
    hccn_status_t rc = roundtrip_as(name);
    void *tok = get_tok();
    if (fut != NULL)
        *fut = hccn_rt_fwd_self()->dead ? NULL : tok;
    return rc;
}

/* Copies a reply's struct into out, within the caller's struct_size. */
static void get_struct(void *out, size_t size, size_t caller_size)
{
    size_t n;
    const void *b = hccn_rt_wire_get_bytes(rep(), &n);
    if (out == NULL || b == NULL || n != size)
        return;
    memcpy(out, b, caller_size < size ? caller_size : size);
}

hccn_status_t hccn_rt_fwd_last_choice(hccn_comm_t *comm, hccn_choice_t *out)
{
    rt_wire_t *m = begin(RT_FWD_LAST_CHOICE);
    put_tok(m, comm);
    hccn_rt_wire_u64(m, out != NULL);
    hccn_rt_wire_bytes(m, out, out != NULL ? sizeof(*out) : 0);
    hccn_status_t rc = roundtrip(RT_FWD_LAST_CHOICE);
    get_struct(out, sizeof(*out), out != NULL ? out->struct_size : 0);
    return rc;
}

hccn_status_t hccn_rt_fwd_summary(hccn_ctx_t *ctx, const hccn_comm_t *comm,
                                  int kind, hccn_comm_summary_t *out)
{
    rt_wire_t *m = begin(RT_FWD_SUMMARY);
    put_ctx(m, ctx);
    put_tok(m, comm);
    hccn_rt_wire_u64(m, (uint64_t)(int64_t)kind);
    hccn_rt_wire_u64(m, out != NULL);
    hccn_rt_wire_bytes(m, out, out != NULL ? sizeof(*out) : 0);
    hccn_status_t rc = roundtrip(RT_FWD_SUMMARY);
    get_struct(out, sizeof(*out), out != NULL ? out->struct_size : 0);
    return rc;
}
