/*
 * hccn-perf: the measured calls (included by hccn-perf.c only): the
 * options they depend on, each collective's call and buffers as
 * nccl-tests lays them out, nccl-tests' point-to-point tests (sendrecv,
 * hypercube), and the non-blocking loop of -z 0.
 */
#ifndef HCCN_TOOLS_PERF_CALLS_H
#define HCCN_TOOLS_PERF_CALLS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hccn/hccn.h"
#include "hccn/hccn_sim.h"
#include "tools/perf_data.h"

enum { V_OOP = 1, V_IP = 2 };

/* The library's kind of each (-1: point-to-point, no timing-only run). */
static const int lib_coll[C_COUNT] = {
    HCCN_COLL_ALLREDUCE, HCCN_COLL_REDUCE_SCATTER, HCCN_COLL_ALLGATHER,
    HCCN_COLL_BROADCAST, HCCN_COLL_REDUCE, HCCN_COLL_ALLTOALL, -1,
    HCCN_COLL_SCATTER, HCCN_COLL_GATHER, -1};

typedef struct {
    int colls[C_COUNT], ncolls;
    size_t min_bytes, max_bytes, step;
    double factor;
    int iters, warmup, check, root, variants;
    int nodata;             /* --no-data: timing only */
    int average;            /* -a, as nccl-tests: the ranks' own times,
                               0 rank 0's, 1 mean, 2 min, 3 max; -1: the
                               span (latest start to latest end), the
                               default */
    int cputime;            /* -C 1: the time column is the host's */
    int nonblocking;        /* -z 0: the timed calls are posted as futures
                               and waited for at the end */
    int all_dtypes, all_ops;    /* -d all, -o all: a table each */
    int agg;                /* -m: calls per timed iteration (a group) */
    int gpus, threads;      /* -g, -t N: must multiply to the ranks */
    int nofold;             /* --no-fold: timing only, never folded */
    hccn_dtype_t dtype;
    hccn_redop_t op;
    const char *json, *csv, *trace;
} opts_t;

/* One variant of one size, shared between the rank threads. */
typedef struct {
    const opts_t *o;
    coll_t coll;
    int inplace;
    size_t bytes;
    double *start, *end;    /* per rank: clock before and after the loop */
    long *wrong;            /* per rank; -1 when not checked */
    double wall;            /* rank 0's wall seconds for the loop */
    hccn_choice_t choice;   /* rank 0's: what the timed calls ran */
} run_t;

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Elements per rank passed to the call for a total size of bytes. */
static size_t call_count(coll_t c, size_t bytes, size_t es, int n)
{
    size_t count = bytes / es;
    if (c == C_REDUCE_SCATTER || c == C_ALLGATHER || c == C_ALLTOALL ||
        c == C_SCATTER || c == C_GATHER || c == C_HYPERCUBE)
        count /= (size_t)n;
    return count;
}

/* nccl-tests' sendrecv: every rank sends to the next rank of the ring and
 * receives from the previous one, both posted before either is waited. */
static hccn_status_t sendrecv(hccn_comm_t *w, const void *sb, void *rb,
                              size_t cnt, hccn_dtype_t dt)
{
    int r = hccn_comm_rank(w), n = hccn_comm_size(w);
    hccn_future_t *fs = NULL, *fr = NULL;
    hccn_status_t rc = hccn_isend(w, sb, cnt, dt, (r + 1) % n, &fs);
    if (rc == HCCN_OK)
        rc = hccn_irecv(w, rb, cnt, dt, (r + n - 1) % n, &fr);
    hccn_status_t ws = fs != NULL ? hccn_wait(fs) : HCCN_OK;
    hccn_status_t wr = fr != NULL ? hccn_wait(fr) : HCCN_OK;
    hccn_future_free(fs);
    hccn_future_free(fr);
    return rc != HCCN_OK ? rc : ws != HCCN_OK ? ws : wr;
}

/* nccl-tests' hypercube: an allgather in log2(n) exchanges; in step k
 * rank r swaps the 2^k blocks it holds with rank r ^ 2^k. Its own block
 * is put in place first by a host copy (no simulated time). n must be a
 * power of two. */
static hccn_status_t hypercube(hccn_comm_t *w, const void *sb, void *rb,
                               size_t cnt, hccn_dtype_t dt)
{
    int r = hccn_comm_rank(w), n = hccn_comm_size(w);
    size_t blk = cnt * hccn_dtype_size(dt);
    char *out = rb;
    if (out + (size_t)r * blk != (const char *)sb)
        memcpy(out + (size_t)r * blk, sb, blk);
    hccn_status_t rc = HCCN_OK;
    for (int mask = 1; mask < n && rc == HCCN_OK; mask <<= 1) {
        int mine = r & ~(mask - 1), theirs = mine ^ mask;
        hccn_future_t *fs = NULL, *fr = NULL;
        rc = hccn_isend(w, out + (size_t)mine * blk, cnt * (size_t)mask, dt,
                        r ^ mask, &fs);
        if (rc == HCCN_OK)
            rc = hccn_irecv(w, out + (size_t)theirs * blk,
                            cnt * (size_t)mask, dt, r ^ mask, &fr);
        hccn_status_t ws = fs != NULL ? hccn_wait(fs) : HCCN_OK;
        hccn_status_t wr = fr != NULL ? hccn_wait(fr) : HCCN_OK;
        hccn_future_free(fs);
        hccn_future_free(fr);
        rc = rc != HCCN_OK ? rc : ws != HCCN_OK ? ws : wr;
    }
    return rc;
}

/* The non-blocking form of the call, where there is one (the first six
 * collectives); HCCN_ERR_UNSUPPORTED otherwise. */
static hccn_status_t call_async(const run_t *run, hccn_comm_t *w, void *sb,
                                void *rb, size_t cnt, hccn_future_t **f)
{
    const opts_t *o = run->o;
    switch (run->coll) {
    case C_ALLREDUCE:
        return hccn_iallreduce(w, sb, rb, cnt, o->dtype, o->op, f);
    case C_REDUCE_SCATTER:
        return hccn_ireduce_scatter(w, sb, rb, cnt, o->dtype, o->op, f);
    case C_ALLGATHER:
        return hccn_iallgather(w, sb, rb, cnt, o->dtype, f);
    case C_BROADCAST:
        return hccn_ibroadcast(w, sb, rb, cnt, o->dtype, o->root, f);
    case C_REDUCE:
        return hccn_ireduce(w, sb, rb, cnt, o->dtype, o->op, o->root, f);
    case C_ALLTOALL:
        return hccn_ialltoall(w, sb, rb, cnt, o->dtype, f);
    default:
        return HCCN_ERR_UNSUPPORTED;
    }
}

/* Waits for and frees futures[0..n); the first error. */
static hccn_status_t wait_all(hccn_future_t **futs, int n)
{
    hccn_status_t rc = HCCN_OK;
    for (int i = 0; i < n; i++) {
        hccn_status_t w = hccn_wait(futs[i]);
        hccn_future_free(futs[i]);
        rc = rc != HCCN_OK ? rc : w;
    }
    return rc;
}

#define INFLIGHT 32   /* -z 0: futures posted before the oldest is waited */

/* -z 0: iters calls posted as futures, at most INFLIGHT at a time, all
 * waited for at the end (nccl-tests' non-blocking loop). */
static hccn_status_t timed_async(const run_t *run, hccn_comm_t *w, void *sb,
                                 void *rb, size_t cnt)
{
    hccn_future_t *futs[INFLIGHT];
    int n = 0;
    hccn_status_t rc = HCCN_OK;
    for (int i = 0; i < run->o->iters && rc == HCCN_OK; i++) {
        if (n == INFLIGHT) {
            rc = wait_all(futs, 1);
            memmove(futs, futs + 1, (size_t)(--n) * sizeof(*futs));
        }
        if (rc == HCCN_OK &&
            (rc = call_async(run, w, sb, rb, cnt, &futs[n])) == HCCN_OK)
            n++;
    }
    hccn_status_t wr = wait_all(futs, n);
    return rc != HCCN_OK ? rc : wr;
}

static hccn_status_t call(const run_t *run, hccn_comm_t *w, void *sb,
                          void *rb, size_t cnt)
{
    const opts_t *o = run->o;
    switch (run->coll) {
    case C_ALLREDUCE:
        return hccn_allreduce(w, sb, rb, cnt, o->dtype, o->op);
    case C_REDUCE_SCATTER:
        return hccn_reduce_scatter(w, sb, rb, cnt, o->dtype, o->op);
    case C_ALLGATHER:
        return hccn_allgather(w, sb, rb, cnt, o->dtype);
    case C_BROADCAST:
        return hccn_broadcast(w, sb, rb, cnt, o->dtype, o->root);
    case C_REDUCE:
        return hccn_reduce(w, sb, rb, cnt, o->dtype, o->op, o->root);
    case C_ALLTOALL:
        return hccn_alltoall(w, sb, rb, cnt, o->dtype);
    case C_SCATTER:
        return hccn_scatter(w, sb, rb, cnt, o->dtype, o->root);
    case C_GATHER:
        return hccn_gather(w, sb, rb, cnt, o->dtype, o->root);
    case C_SENDRECV:
        return sendrecv(w, sb, rb, cnt, o->dtype);
    case C_HYPERCUBE:
        return hypercube(w, sb, rb, cnt, o->dtype);
    default:
        return HCCN_ERR_INVALID;
    }
}

typedef struct {
    char *sb, *rb;          /* SEND and RECV as passed to the call */
    char *own[2];           /* allocations to free */
    size_t sn, rn;          /* elements of SEND and RECV */
} bufs_t;

/* Allocates the buffers of rank r: separate SEND and RECV out of place;
 * one buffer laid out as NCCL's in-place rules say in place. */
static hccn_status_t bufs_alloc(hccn_ctx_t *ctx, const run_t *run, size_t cnt,
                                bufs_t *b)
{
    int r = hccn_rank(ctx), n = hccn_nranks(ctx);
    size_t es = hccn_dtype_size(run->o->dtype);
    coll_t c = run->coll;
    memset(b, 0, sizeof(*b));
    b->sn = b->rn = cnt;
    if (c == C_REDUCE_SCATTER || c == C_ALLTOALL || c == C_SCATTER)
        b->sn = cnt * (size_t)n;
    if (c == C_ALLGATHER || c == C_ALLTOALL || c == C_GATHER ||
        c == C_HYPERCUBE)
        b->rn = cnt * (size_t)n;
    hccn_status_t rc;
    if (!run->inplace) {
        if ((rc = hccn_malloc(ctx, (b->sn ? b->sn : 1) * es,
                              (void **)&b->own[0])) != HCCN_OK ||
            (rc = hccn_malloc(ctx, (b->rn ? b->rn : 1) * es,
                              (void **)&b->own[1])) != HCCN_OK)
            return rc;
        b->sb = b->own[0];
        b->rb = b->own[1];
        return HCCN_OK;
    }
    size_t total = b->sn > b->rn ? b->sn : b->rn;
    if ((rc = hccn_malloc(ctx, (total ? total : 1) * es,
                          (void **)&b->own[0])) != HCCN_OK)
        return rc;
    b->sb = b->rb = b->own[0];
    if (c == C_REDUCE_SCATTER)
        b->rb = b->sb + (size_t)r * cnt * es;
    else if (c == C_ALLGATHER || c == C_HYPERCUBE)
        b->sb = b->rb + (size_t)r * cnt * es;
    return HCCN_OK;
}

static void bufs_free(hccn_ctx_t *ctx, bufs_t *b)
{
    for (int i = 0; i < 2; i++)
        if (b->own[i] != NULL)
            hccn_free(ctx, b->own[i]);
}

static void fill_send(const run_t *run, const bufs_t *b, int r)
{
    fill(b->sb, run->o->dtype, b->sn, r);
}

#endif /* HCCN_TOOLS_PERF_CALLS_H */
