/*
 * The public collective API: argument checks, in-place rules, algorithm
 * selection, and the blocking forms as post + wait.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_sim/fail.h"
#include "hierarchy/select.h"
#include "runtime/proc.h"
#include "runtime/rt.h"

typedef struct {
    const char *name;        /* "hccn_allreduce" */
    hccn_coll_t coll;
    const void *sendbuf;
    void *recvbuf;
    size_t count;
    hccn_dtype_t dtype;
    hccn_redop_t op;
    int root;
    const hccn_coll_opts_t *opts;
    int blocking;            /* coll_run: waited for at once */
} call_t;

/* Resolves the caller's handle *comm and checks its communicator. */
static hccn_status_t check_comm(const call_t *c, hccn_comm_t **comm)
{
    hccn_status_t rc = hccn_rt_comm_resolve(c->name, comm);
    if (rc != HCCN_OK)
        return rc;
    return hccn_rt_comm_check(c->name, *comm);
}

static int has_reduction(hccn_coll_t coll)
{
    return coll == HCCN_COLL_ALLREDUCE || coll == HCCN_COLL_REDUCE_SCATTER ||
           coll == HCCN_COLL_REDUCE;
}

static int is_rooted(hccn_coll_t coll)
{
    return coll == HCCN_COLL_BROADCAST || coll == HCCN_COLL_REDUCE ||
           coll == HCCN_COLL_SCATTER || coll == HCCN_COLL_GATHER;
}

/* Checks dtype, op, root and sizes; fills the buffer sizes in bytes. */
static hccn_status_t check_args(const call_t *c, hccn_comm_t *comm,
                                uint64_t *sbytes, uint64_t *rbytes)
{
    int rank = comm->ctx->rank, n = comm->sh->size;
    size_t es = hccn_dtype_size(c->dtype);
    if (es == 0)
        return hccn_rt_error(HCCN_ERR_INVALID, "%s: rank %d: invalid dtype %d",
                             c->name, rank, (int)c->dtype);
    if (has_reduction(c->coll) && ((int)c->op < 0 || c->op >= HCCN_REDOP_COUNT))
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "%s: rank %d: invalid reduction op %d", c->name,
                             rank, (int)c->op);
    if (is_rooted(c->coll) && (c->root < 0 || c->root >= n))
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "%s: rank %d: root %d is out of range [0, %d)",
                             c->name, rank, c->root, n);
    uint64_t bytes, all;
    if (__builtin_mul_overflow((uint64_t)c->count, (uint64_t)es, &bytes) ||
        __builtin_mul_overflow(bytes, (uint64_t)n, &all) ||
        all > ((uint64_t)1 << 62))
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "%s: rank %d: count %zu of %s overflows", c->name,
                             rank, c->count, hccn_dtype_name(c->dtype));
    hccn_coll_args_t a = {.coll = c->coll, .nranks = n, .count = c->count,
                          .esize = es, .root = c->root};
    hccn_coll_buf_bytes(&a, comm->rank, sbytes, rbytes);
    return HCCN_OK;
}

static int overlaps(const void *a, uint64_t na, const void *b, uint64_t nb)
{
    const char *x = a, *y = b;
    return na > 0 && nb > 0 && x < y + nb && y < x + na;
}

/* NCCL's in-place forms, per collective. */
static int in_place_ok(const call_t *c, int rank, size_t es)
{
    const char *s = c->sendbuf, *r = c->recvbuf;
    switch (c->coll) {
    case HCCN_COLL_REDUCE_SCATTER:
        return r == s + (size_t)rank * c->count * es;
    case HCCN_COLL_ALLGATHER:
        return s == r + (size_t)rank * c->count * es;
    case HCCN_COLL_ALLREDUCE:
    case HCCN_COLL_BROADCAST:
    case HCCN_COLL_REDUCE:
        return s == r;
    default:
        return 0;
    }
}

static hccn_status_t check_bufs(const call_t *c, hccn_comm_t *comm,
                                uint64_t sbytes, uint64_t rbytes)
{
    hccn_ctx_t *ctx = comm->ctx;
    hccn_status_t rc;
    if (sbytes > 0 &&
        (rc = hccn_rt_check_buf(ctx, c->sendbuf, sbytes, c->name, "sendbuf")))
        return rc;
    if (rbytes > 0 &&
        (rc = hccn_rt_check_buf(ctx, c->recvbuf, rbytes, c->name, "recvbuf")))
        return rc;
    if (overlaps(c->sendbuf, sbytes, c->recvbuf, rbytes) &&
        !in_place_ok(c, comm->rank, hccn_dtype_size(c->dtype)))
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "%s: rank %d: sendbuf %p (%llu bytes) and recvbuf "
                             "%p (%llu bytes) overlap but are not the "
                             "in-place form of this collective",
                             c->name, ctx->rank, c->sendbuf,
                             (unsigned long long)sbytes, c->recvbuf,
                             (unsigned long long)rbytes);
    return HCCN_OK;
}

/* Elements of RECV that hold this rank's result (0 where it has none). */
static uint64_t out_elems(const call_t *c, int rank, int n)
{
    switch (c->coll) {
    case HCCN_COLL_ALLREDUCE:
    case HCCN_COLL_REDUCE_SCATTER:
    case HCCN_COLL_BROADCAST:
    case HCCN_COLL_SCATTER:
        return c->count;
    case HCCN_COLL_REDUCE:
        return rank == c->root ? c->count : 0;
    case HCCN_COLL_ALLGATHER:
    case HCCN_COLL_ALLTOALL:
        return c->count * (uint64_t)n;
    case HCCN_COLL_GATHER:
        return rank == c->root ? c->count * (uint64_t)n : 0;
    default:
        return 0;
    }
}

/* The compression the call asks for: its option, else the comm's. */
static hccn_status_t call_compress(const call_t *c, hccn_comm_t *comm,
                                   int *compress)
{
    int z = comm->compress;
    if (c->opts != NULL && c->opts->compress >= 0)
        z = c->opts->compress;
    *compress = 0;
    if (z == HCCN_COMPRESS_NONE)
        return HCCN_OK;
    int rank = comm->ctx->rank;
    if (z != HCCN_COMPRESS_FP16 && z != HCCN_COMPRESS_BF16)
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "%s: rank %d: invalid compression %d", c->name,
                             rank, z);
    int coll_ok = c->coll == HCCN_COLL_ALLREDUCE ||
                  c->coll == HCCN_COLL_REDUCE_SCATTER ||
                  c->coll == HCCN_COLL_ALLGATHER;
    if (!coll_ok)
        return HCCN_OK;   /* a comm-wide setting leaves the others alone */
    if (c->dtype != HCCN_FP32 || c->op == HCCN_PROD)
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "%s: rank %d: compressed transfers need fp32 data "
                             "and sum, avg, max or min (got %s, %s)",
                             c->name, rank, hccn_dtype_name(c->dtype),
                             hccn_redop_name(c->op));
    *compress = z;
    return HCCN_OK;
}

/* The override in force: the call's, else the communicator's, else
 * HCCN_ALGO's; NULL for none. */
static const char *algo_spec(const hccn_comm_t *comm, const char *call_spec)
{
    return call_spec != NULL ? call_spec
           : comm->algo_spec != NULL ? comm->algo_spec
                                     : getenv("HCCN_ALGO");
}

hccn_status_t hccn_rt_coll_pick(hccn_comm_t *comm, const hccn_coll_args_t *a,
                                const char *call_spec, const char *name,
                                const hccn_algo_t **algo)
{
    const char *spec = algo_spec(comm, call_spec);
    hccn_hier_select_in_t in = {hccn_rt_sel_topo(comm->ctx->cl),
                                comm->sh->world, spec,
                                hccn_rt_sel_cache(comm->ctx->cl)};
    char why[256], report[1024];
    int log = comm->rank == 0 && hccn_rt_log_on(HCCN_LOG_INFO);
    *algo = hccn_hier_select(a, &in, why, sizeof(why), log ? report : NULL,
                             sizeof(report));
    if (*algo == NULL)   /* selection recorded why (and the status) */
        return hccn_sim_fail_context("%s: rank %d", name, comm->ctx->rank);
    if (log)
        hccn_rt_log(HCCN_LOG_INFO, "comm %llu: %s",
                    (unsigned long long)comm->sh->uid, report);
    return HCCN_OK;
}

/* On a client process's rank the call goes to the host (runtime/proc.h),
 * which makes it in the same form. */
static hccn_status_t forward(const call_t *c, hccn_comm_t *comm, int form,
                             hccn_future_t **fut)
{
    rt_fwd_coll_t f = {.form = form, .coll = (int)c->coll,
                       .sendbuf = c->sendbuf, .recvbuf = c->recvbuf,
                       .count = c->count, .dtype = c->dtype, .op = c->op,
                       .root = c->root, .opts = c->opts};
    return hccn_rt_fwd_coll(comm, &f, fut);
}

static hccn_status_t coll_post(const call_t *c, hccn_comm_t *comm,
                               hccn_future_t **fut)
{
    if (hccn_rt_proc_fwd())
        return forward(c, comm, RT_FORM_POST, fut);
    if (fut != NULL)
        *fut = NULL;
    hccn_status_t rc = check_comm(c, &comm);
    if (rc != HCCN_OK)
        return rc;
    if (fut == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID, "%s: rank %d: future is NULL",
                             c->name, comm->ctx->rank);
    *fut = NULL;
    uint64_t sbytes, rbytes;
    int compress;
    if ((rc = check_args(c, comm, &sbytes, &rbytes)) != HCCN_OK ||
        (rc = check_bufs(c, comm, sbytes, rbytes)) != HCCN_OK ||
        (rc = call_compress(c, comm, &compress)) != HCCN_OK)
        return rc;
    int n = comm->sh->size, rank = comm->rank;
    hccn_coll_args_t a = {.coll = c->coll, .nranks = n, .count = c->count,
                          .esize = hccn_dtype_size(c->dtype),
                          .root = is_rooted(c->coll) ? c->root : 0,
                          .view = &comm->sh->view};
    a.in_switch = hccn_hier_in_switch(hccn_rt_sel_topo(comm->ctx->cl),
                                      comm->sh->world, n, c->coll,
                                      (int)c->dtype, (int)c->op);
    const char *spec = algo_spec(comm, c->opts ? c->opts->algo : NULL);
    /* With INFO logging rank 0 selects (and logs) on every call. */
    int logs = rank == 0 && hccn_rt_log_on(HCCN_LOG_INFO);
    rt_pick_t *pick = logs ? NULL : hccn_rt_pick_find(comm, &a, spec);
    const hccn_algo_t *algo = pick != NULL ? pick->algo : NULL;
    if (algo == NULL) {
        if ((rc = hccn_rt_coll_pick(comm, &a, spec, c->name, &algo)) !=
            HCCN_OK)
            return rc;
        pick = logs ? NULL : hccn_rt_pick_store(comm, &a, spec, algo);
    }
    uint64_t out = out_elems(c, rank, n);
    rt_coll_call_t call = {
        .sendbuf = c->sendbuf, .recvbuf = c->recvbuf, .dtype = c->dtype,
        .op = c->op, .compress = compress, .fp_kind = (int)c->coll,
        .avg_elems = c->op == HCCN_AVG && has_reduction(c->coll) ? out : 0,
        .out_elems = out, .pick = pick, .blocking = c->blocking};
    /* Unused buffers are passed on as given; schedules never touch them. */
    if ((rc = hccn_rt_coll_post(comm, &a, algo, &call, fut)) != HCCN_OK)
        return rc;
    hccn_rt_note_post(*fut, &a, algo, spec);
    return c->blocking ? rc : hccn_rt_future_publish(fut);
}

/* A blocking call: post, then wait — or, inside a group, leave the wait to
 * hccn_group_end. */
static hccn_status_t coll_run(const call_t *c, hccn_comm_t *comm)
{
    if (hccn_rt_proc_fwd())
        return forward(c, comm, RT_FORM_BLOCK, NULL);
    hccn_future_t *f;
    call_t b = *c;
    b.blocking = 1;
    hccn_status_t rc = coll_post(&b, comm, &f);
    if (rc != HCCN_OK)
        return rc;
    return hccn_rt_complete(f);
}

#define CALL(fn, kind, sb, rb, cnt, dt, rop, rt)                              \
    ((call_t){.name = fn, .coll = kind, .sendbuf = sb, .recvbuf = rb,         \
              .count = cnt, .dtype = dt, .op = rop, .root = rt, .opts = NULL})

/* Blocking when fut is NULL, else non-blocking. */
static hccn_status_t run_opts(call_t *c, hccn_comm_t *comm,
                              const hccn_coll_opts_t *opts,
                              hccn_future_t **fut)
{
    if (hccn_rt_proc_fwd()) {
        c->opts = opts;
        return forward(c, comm, RT_FORM_OPTS, fut);
    }
    if (opts != NULL && opts->struct_size < sizeof(*opts))
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "%s: opts.struct_size must be "
                             "sizeof(hccn_coll_opts_t)",
                             c->name);
    c->opts = opts;
    return fut != NULL ? coll_post(c, comm, fut) : coll_run(c, comm);
}

hccn_status_t hccn_allreduce_opts(hccn_comm_t *comm, const void *sendbuf,
                                  void *recvbuf, size_t count,
                                  hccn_dtype_t dtype, hccn_redop_t op,
                                  const hccn_coll_opts_t *opts,
                                  hccn_future_t **fut)
{
    call_t c = CALL("hccn_allreduce_opts", HCCN_COLL_ALLREDUCE, sendbuf,
                    recvbuf, count, dtype, op, 0);
    return run_opts(&c, comm, opts, fut);
}

hccn_status_t hccn_reduce_scatter_opts(hccn_comm_t *comm, const void *sendbuf,
                                       void *recvbuf, size_t recvcount,
                                       hccn_dtype_t dtype, hccn_redop_t op,
                                       const hccn_coll_opts_t *opts,
                                       hccn_future_t **fut)
{
    call_t c = CALL("hccn_reduce_scatter_opts", HCCN_COLL_REDUCE_SCATTER,
                    sendbuf, recvbuf, recvcount, dtype, op, 0);
    return run_opts(&c, comm, opts, fut);
}

hccn_status_t hccn_allgather_opts(hccn_comm_t *comm, const void *sendbuf,
                                  void *recvbuf, size_t sendcount,
                                  hccn_dtype_t dtype,
                                  const hccn_coll_opts_t *opts,
                                  hccn_future_t **fut)
{
    call_t c = CALL("hccn_allgather_opts", HCCN_COLL_ALLGATHER, sendbuf,
                    recvbuf, sendcount, dtype, HCCN_SUM, 0);
    return run_opts(&c, comm, opts, fut);
}

hccn_status_t hccn_allreduce(hccn_comm_t *comm, const void *sendbuf,
                             void *recvbuf, size_t count, hccn_dtype_t dtype,
                             hccn_redop_t op)
{
    call_t c = CALL("hccn_allreduce", HCCN_COLL_ALLREDUCE, sendbuf, recvbuf,
                    count, dtype, op, 0);
    return coll_run(&c, comm);
}

hccn_status_t hccn_iallreduce(hccn_comm_t *comm, const void *sendbuf,
                              void *recvbuf, size_t count, hccn_dtype_t dtype,
                              hccn_redop_t op, hccn_future_t **fut)
{
    call_t c = CALL("hccn_iallreduce", HCCN_COLL_ALLREDUCE, sendbuf, recvbuf,
                    count, dtype, op, 0);
    return coll_post(&c, comm, fut);
}

hccn_status_t hccn_reduce_scatter(hccn_comm_t *comm, const void *sendbuf,
                                  void *recvbuf, size_t recvcount,
                                  hccn_dtype_t dtype, hccn_redop_t op)
{
    call_t c = CALL("hccn_reduce_scatter", HCCN_COLL_REDUCE_SCATTER, sendbuf,
                    recvbuf, recvcount, dtype, op, 0);
    return coll_run(&c, comm);
}

hccn_status_t hccn_ireduce_scatter(hccn_comm_t *comm, const void *sendbuf,
                                   void *recvbuf, size_t recvcount,
                                   hccn_dtype_t dtype, hccn_redop_t op,
                                   hccn_future_t **fut)
{
    call_t c = CALL("hccn_ireduce_scatter", HCCN_COLL_REDUCE_SCATTER, sendbuf,
                    recvbuf, recvcount, dtype, op, 0);
    return coll_post(&c, comm, fut);
}

hccn_status_t hccn_allgather(hccn_comm_t *comm, const void *sendbuf,
                             void *recvbuf, size_t sendcount,
                             hccn_dtype_t dtype)
{
    call_t c = CALL("hccn_allgather", HCCN_COLL_ALLGATHER, sendbuf, recvbuf,
                    sendcount, dtype, HCCN_SUM, 0);
    return coll_run(&c, comm);
}

hccn_status_t hccn_iallgather(hccn_comm_t *comm, const void *sendbuf,
                              void *recvbuf, size_t sendcount,
                              hccn_dtype_t dtype, hccn_future_t **fut)
{
    call_t c = CALL("hccn_iallgather", HCCN_COLL_ALLGATHER, sendbuf, recvbuf,
                    sendcount, dtype, HCCN_SUM, 0);
    return coll_post(&c, comm, fut);
}

hccn_status_t hccn_broadcast(hccn_comm_t *comm, const void *sendbuf,
                             void *recvbuf, size_t count, hccn_dtype_t dtype,
                             int root)
{
    call_t c = CALL("hccn_broadcast", HCCN_COLL_BROADCAST, sendbuf, recvbuf,
                    count, dtype, HCCN_SUM, root);
    return coll_run(&c, comm);
}

hccn_status_t hccn_ibroadcast(hccn_comm_t *comm, const void *sendbuf,
                              void *recvbuf, size_t count, hccn_dtype_t dtype,
                              int root, hccn_future_t **fut)
{
    call_t c = CALL("hccn_ibroadcast", HCCN_COLL_BROADCAST, sendbuf, recvbuf,
                    count, dtype, HCCN_SUM, root);
    return coll_post(&c, comm, fut);
}

hccn_status_t hccn_reduce(hccn_comm_t *comm, const void *sendbuf,
                          void *recvbuf, size_t count, hccn_dtype_t dtype,
                          hccn_redop_t op, int root)
{
    call_t c = CALL("hccn_reduce", HCCN_COLL_REDUCE, sendbuf, recvbuf, count,
                    dtype, op, root);
    return coll_run(&c, comm);
}

hccn_status_t hccn_ireduce(hccn_comm_t *comm, const void *sendbuf,
                           void *recvbuf, size_t count, hccn_dtype_t dtype,
                           hccn_redop_t op, int root, hccn_future_t **fut)
{
    call_t c = CALL("hccn_ireduce", HCCN_COLL_REDUCE, sendbuf, recvbuf, count,
                    dtype, op, root);
    return coll_post(&c, comm, fut);
}

hccn_status_t hccn_alltoall(hccn_comm_t *comm, const void *sendbuf,
                            void *recvbuf, size_t count, hccn_dtype_t dtype)
{
    call_t c = CALL("hccn_alltoall", HCCN_COLL_ALLTOALL, sendbuf, recvbuf,
                    count, dtype, HCCN_SUM, 0);
    return coll_run(&c, comm);
}

hccn_status_t hccn_ialltoall(hccn_comm_t *comm, const void *sendbuf,
                             void *recvbuf, size_t count, hccn_dtype_t dtype,
                             hccn_future_t **fut)
{
    call_t c = CALL("hccn_ialltoall", HCCN_COLL_ALLTOALL, sendbuf, recvbuf,
                    count, dtype, HCCN_SUM, 0);
    return coll_post(&c, comm, fut);
}

hccn_status_t hccn_scatter(hccn_comm_t *comm, const void *sendbuf,
                           void *recvbuf, size_t recvcount, hccn_dtype_t dtype,
                           int root)
{
    call_t c = CALL("hccn_scatter", HCCN_COLL_SCATTER, sendbuf, recvbuf,
                    recvcount, dtype, HCCN_SUM, root);
    return coll_run(&c, comm);
}

hccn_status_t hccn_gather(hccn_comm_t *comm, const void *sendbuf,
                          void *recvbuf, size_t sendcount, hccn_dtype_t dtype,
                          int root)
{
    call_t c = CALL("hccn_gather", HCCN_COLL_GATHER, sendbuf, recvbuf,
                    sendcount, dtype, HCCN_SUM, root);
    return coll_run(&c, comm);
}

hccn_status_t hccn_barrier(hccn_comm_t *comm)
{
    call_t c = CALL("hccn_barrier", HCCN_COLL_BARRIER, NULL, NULL, 0,
                    HCCN_UINT8, HCCN_SUM, 0);
    return coll_run(&c, comm);
}

hccn_status_t hccn_ibarrier(hccn_comm_t *comm, hccn_future_t **fut)
{
    call_t c = CALL("hccn_ibarrier", HCCN_COLL_BARRIER, NULL, NULL, 0,
                    HCCN_UINT8, HCCN_SUM, 0);
    return coll_post(&c, comm, fut);
}
