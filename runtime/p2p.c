/*
 * Point-to-point messages and futures.
 *
 * A send and a receive match by (communicator, source, destination, order
 * of posting), as in NCCL. In simulated time a message starts when both
 * sides have posted it (at the later of the two clocks) and is not ordered
 * after other operations of the communicator, as MPI's isend/irecv.
 */
#include "runtime/proc.h"
#include "runtime/rt.h"

static hccn_status_t p2p_post(const char *name, hccn_comm_t *comm, int is_send,
                              const void *buf, size_t count,
                              hccn_dtype_t dtype, int peer,
                              hccn_future_t **fut)
{
    if (fut != NULL)
        *fut = NULL;
    hccn_status_t rc = hccn_rt_comm_resolve(name, &comm);
    if (rc != HCCN_OK)
        return rc;
    int rank = comm->ctx->rank;
    if (comm->destroyed)
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "%s: rank %d: the communicator was destroyed",
                             name, rank);
    if (fut == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID, "%s: rank %d: future is NULL",
                             name, rank);
    *fut = NULL;
    size_t es = hccn_dtype_size(dtype);
    if (es == 0)
        return hccn_rt_error(HCCN_ERR_INVALID, "%s: rank %d: invalid dtype %d",
                             name, rank, (int)dtype);
    if (peer < 0 || peer >= comm->sh->size)
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "%s: rank %d: peer %d is out of range [0, %d)",
                             name, rank, peer, comm->sh->size);
    uint64_t bytes;
    if (__builtin_mul_overflow((uint64_t)count, (uint64_t)es, &bytes) ||
        bytes > ((uint64_t)1 << 62))
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "%s: rank %d: count %zu overflows", name, rank,
                             count);
    if (bytes > 0 &&
        (rc = hccn_rt_check_buf(comm->ctx, buf, bytes, name, "buf")) != HCCN_OK)
        return rc;
    rc = hccn_rt_p2p_post(comm, is_send, (void *)buf, (size_t)bytes, peer,
                          fut);
    if (rc == HCCN_OK)
        (*fut)->mark = comm->ctx->mark;
    return rc;
}


hccn_status_t hccn_send(hccn_comm_t *comm, const void *buf, size_t count,
                        hccn_dtype_t dtype, int peer)
{
    if (hccn_rt_proc_fwd())
        return hccn_rt_fwd_p2p(comm, 1, 1, buf, count, dtype, peer, NULL);
    hccn_future_t *f = NULL;
    hccn_status_t rc = p2p_post("hccn_send", comm, 1, buf, count, dtype, peer, &f);
    return rc != HCCN_OK ? rc : hccn_rt_complete(f);
}

hccn_status_t hccn_recv(hccn_comm_t *comm, void *buf, size_t count,
                        hccn_dtype_t dtype, int peer)
{
    if (hccn_rt_proc_fwd())
        return hccn_rt_fwd_p2p(comm, 0, 1, buf, count, dtype, peer, NULL);
    hccn_future_t *f = NULL;
    hccn_status_t rc = p2p_post("hccn_recv", comm, 0, buf, count, dtype, peer, &f);
    return rc != HCCN_OK ? rc : hccn_rt_complete(f);
}

hccn_status_t hccn_isend(hccn_comm_t *comm, const void *buf, size_t count,
                         hccn_dtype_t dtype, int peer, hccn_future_t **fut)
{
    if (hccn_rt_proc_fwd())
        return hccn_rt_fwd_p2p(comm, 1, 0, buf, count, dtype, peer, fut);
    hccn_status_t rc = p2p_post("hccn_isend", comm, 1, buf, count, dtype,
                                peer, fut);
    return rc != HCCN_OK ? rc : hccn_rt_future_publish(fut);
}

hccn_status_t hccn_irecv(hccn_comm_t *comm, void *buf, size_t count,
                         hccn_dtype_t dtype, int peer, hccn_future_t **fut)
{
    if (hccn_rt_proc_fwd())
        return hccn_rt_fwd_p2p(comm, 0, 0, buf, count, dtype, peer, fut);
    hccn_status_t rc = p2p_post("hccn_irecv", comm, 0, buf, count, dtype,
                                peer, fut);
    return rc != HCCN_OK ? rc : hccn_rt_future_publish(fut);
}

/* --------------------------------------------------------------- futures */

static void futures_unlink(rt_op_t *op)
{
    if (op->fprev != NULL)
        op->fprev->fnext = op->fnext;
    else
        op->ctx->futures = op->fnext;
    if (op->fnext != NULL)
        op->fnext->fprev = op->fprev;
    op->fprev = op->fnext = NULL;
}

hccn_status_t hccn_rt_future_publish(hccn_future_t **fut)
{
    rt_op_t *op = *fut;
    hccn_ctx_t *ctx = op->ctx;
    rt_handle_info_t in = {.rank = ctx->rank, .uid = op->comm->sh->uid,
                           .seq = op->kind == RT_OP_COLL ? op->seq : op->pseq,
                           .name = hccn_rt_op_name(op)};
    op->token = hccn_rt_handle_new(RT_H_FUTURE, op, ctx, &in);
    if (op->token == NULL) {
        *fut = NULL;
        hccn_rt_op_wait(op);
        hccn_rt_op_free(op);
        return hccn_rt_error(HCCN_ERR_NOMEM,
                             "rank %d: %s: out of memory for its future (the "
                             "call was completed at once)",
                             ctx->rank, in.name);
    }
    op->fnext = ctx->futures;
    if (ctx->futures != NULL)
        ctx->futures->fprev = op;
    ctx->futures = op;
    *fut = op->token;
    return HCCN_OK;
}

void hccn_rt_future_forget(rt_op_t *op, int why)
{
    if (op->token == NULL)
        return;
    hccn_rt_handle_free(op->token, why);
    op->token = NULL;
    futures_unlink(op);
}

void hccn_rt_futures_free(hccn_ctx_t *ctx)
{
    while (ctx->futures != NULL) {
        rt_op_t *op = ctx->futures;
        hccn_rt_future_forget(op, RT_GONE_RUN_END);
        hccn_rt_op_free(op);
    }
}

/* The caller's own operation behind the future token fut. */
static hccn_status_t future_get(const char *fn, const hccn_future_t *fut,
                                rt_op_t **op)
{
    void *obj;
    hccn_status_t rc = hccn_rt_handle_get(fn, RT_H_FUTURE, fut, 1, &obj);
    *op = obj;
    return rc;
}

hccn_status_t hccn_wait(hccn_future_t *fut)
{
    if (hccn_rt_proc_fwd())
        return hccn_rt_fwd_future(RT_FWD_WAIT, fut, NULL, NULL, NULL);
    rt_op_t *op;
    hccn_status_t rc = future_get("hccn_wait", fut, &op);
    return rc != HCCN_OK ? rc : hccn_rt_op_wait(op);
}

typedef struct {
    hccn_future_t *fut;
    int answer;
} test_wait_t;

static int test_known(void *arg)
{
    test_wait_t *tw = arg;
    hccn_ctx_t *ctx = tw->fut->ctx;
    tw->answer = hccn_sim_test_try(ctx->cl->eng, ctx->rank, tw->fut->batch);
    return tw->answer >= 0;
}

hccn_status_t hccn_test(hccn_future_t *fut, int *done)
{
    if (hccn_rt_proc_fwd())
        return hccn_rt_fwd_future(RT_FWD_TEST, fut, done, NULL, NULL);
    if (fut == NULL || done == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_test: %s is NULL",
                             fut == NULL ? "future" : "done");
    *done = 0;
    hccn_status_t rc = future_get("hccn_test", fut, &fut);
    if (rc != HCCN_OK)
        return rc;
    if (fut->waited) {
        *done = 1;
        return fut->status;
    }
    /* The answer is a matter of simulated time only: done iff the end is
     * at or before the rank's clock (once every event up to the clock is
     * settled). Data plane progress never changes it; when the answer is
     * yes, the bytes are moved before returning, so the result is there. */
    test_wait_t tw = {fut, -1};
    atomic_store(&fut->ctx->time_wait, 1);
    rc = hccn_rt_block(fut->ctx, fut->comm->sh, test_known, NULL, &tw,
                       "hccn_test");
    atomic_store(&fut->ctx->time_wait, 0);
    if (rc != HCCN_OK)
        return rc;
    if (tw.answer == 0)
        return HCCN_OK;
    if ((rc = hccn_rt_op_finish_data(fut)) != HCCN_OK)
        return rc;
    *done = 1;
    return HCCN_OK;
}

hccn_status_t hccn_future_times(const hccn_future_t *fut, double *start,
                                double *end)
{
    if (hccn_rt_proc_fwd())
        return hccn_rt_fwd_future(RT_FWD_TIMES, fut, NULL, start, end);
    rt_op_t *op;
    hccn_status_t rc = future_get("hccn_future_times", fut, &op);
    if (rc != HCCN_OK)
        return rc;
    if (!hccn_sim_batch_done(op->ctx->cl->eng, op->batch))
        return hccn_rt_error(HCCN_ERR_INPROGRESS,
                             "hccn_future_times: rank %d: the operation has "
                             "not completed",
                             op->ctx->rank);
    if (start != NULL)
        *start = op->t_call;
    if (end != NULL)
        *end = hccn_sim_batch_end(op->batch);
    return HCCN_OK;
}

hccn_status_t hccn_future_free(hccn_future_t *fut)
{
    if (hccn_rt_proc_fwd())
        return hccn_rt_fwd_future(RT_FWD_FUT_FREE, fut, NULL, NULL, NULL);
    if (fut == NULL)
        return HCCN_OK;
    rt_op_t *op;
    hccn_status_t rc = future_get("hccn_future_free", fut, &op);
    if (rc != HCCN_OK)
        return rc;
    if (op->stage != RT_STAGE_DONE && !op->waited)
        return hccn_rt_error(HCCN_ERR_INPROGRESS,
                             "hccn_future_free: rank %d: the operation is "
                             "still pending; wait for it first",
                             op->ctx->rank);
    hccn_rt_future_forget(op, RT_GONE_FUTURE_FREE);
    hccn_rt_op_free(op);
    return HCCN_OK;
}
