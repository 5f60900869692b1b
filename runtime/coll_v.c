/*
 * The v-collectives (alltoallv, allgatherv, reduce_scatterv): argument
 * checks on the calling rank's blocks, the count arrays the rendezvous
 * compares (runtime/exec.c, v_check), and posting.
 *
 * Counts and displacements arrive as size_t elements; they are copied into
 * one uint64_t block per call (owned by the operation), which holds the
 * builder's arrays and the arrays the fingerprint points to.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/proc.h"
#include "runtime/rt.h"

#define V_LIMIT ((uint64_t)1 << 62)   /* bytes any block may reach */

typedef struct {
    const char *name;          /* "hccn_alltoallv" */
    hccn_coll_t coll;
    const void *sendbuf;
    void *recvbuf;
    size_t sendcount;          /* allgatherv */
    const size_t *scounts, *sdispls, *rcounts, *rdispls;
    hccn_dtype_t dtype;
    hccn_redop_t op;
} vcall_t;

/* A block of a buffer: bytes [off, off + len) from base; idx its rank. */
typedef struct {
    uint64_t off, len;
    int idx;
} vblk_t;

/* ---------------------------------------------------------- checks --- */

static hccn_status_t need(const vcall_t *c, int rank, const void *p,
                          const char *what)
{
    if (p != NULL)
        return HCCN_OK;
    return hccn_rt_error(HCCN_ERR_INVALID, "%s: rank %d: %s is NULL", c->name,
                         rank, what);
}

/* dtype, op and the arrays the collective reads. */
static hccn_status_t check_scalars(const vcall_t *c, int rank)
{
    hccn_status_t rc = HCCN_OK;
    if (hccn_dtype_size(c->dtype) == 0)
        return hccn_rt_error(HCCN_ERR_INVALID, "%s: rank %d: invalid dtype %d",
                             c->name, rank, (int)c->dtype);
    if (c->coll == HCCN_COLL_REDUCE_SCATTERV &&
        ((int)c->op < 0 || c->op >= HCCN_REDOP_COUNT))
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "%s: rank %d: invalid reduction op %d", c->name,
                             rank, (int)c->op);
    if (c->coll == HCCN_COLL_ALLTOALLV &&
        ((rc = need(c, rank, c->scounts, "sendcounts")) ||
         (rc = need(c, rank, c->sdispls, "sdispls"))))
        return rc;
    if ((rc = need(c, rank, c->rcounts, "recvcounts")) != HCCN_OK)
        return rc;
    if (c->coll != HCCN_COLL_REDUCE_SCATTERV)
        rc = need(c, rank, c->rdispls,
                  c->coll == HCCN_COLL_ALLGATHERV ? "displs" : "rdispls");
    return rc;
}

/* Block i in bytes from count and displacement (elements); -1 when it
 * overflows, with the error set. */
static int make_block(const vcall_t *c, int rank, const char *cname,
                      const char *dname, int i, uint64_t count, uint64_t displ,
                      vblk_t *b)
{
    uint64_t es = hccn_dtype_size(c->dtype), end;
    if (__builtin_add_overflow(count, displ, &end) ||
        __builtin_mul_overflow(end, es, &end) || end > V_LIMIT) {
        hccn_rt_error(HCCN_ERR_INVALID,
                      "%s: rank %d: block %d (%s[%d] = %llu, %s[%d] = %llu "
                      "elements of %s) overflows",
                      c->name, rank, i, cname, i, (unsigned long long)count,
                      dname, i, (unsigned long long)displ,
                      hccn_dtype_name(c->dtype));
        return -1;
    }
    *b = (vblk_t){displ * es, count * es, i};
    return 0;
}

/* Each non-empty block lies in one live allocation of the caller. */
static hccn_status_t check_inside(const vcall_t *c, hccn_ctx_t *ctx,
                                  const void *base, const vblk_t *b, int n,
                                  const char *what)
{
    char label[64];
    for (int k = 0; k < n; k++) {
        if (b[k].len == 0)
            continue;
        snprintf(label, sizeof(label), "%s block %d", what, b[k].idx);
        if (base == NULL)
            return hccn_rt_error(HCCN_ERR_INVALID, "%s: rank %d: %s is NULL",
                                 c->name, ctx->rank, what);
        const void *p = (const void *)((uintptr_t)base + b[k].off);
        hccn_status_t rc = hccn_rt_check_buf(ctx, p, b[k].len, c->name, label);
        if (rc != HCCN_OK)
            return rc;
    }
    return HCCN_OK;
}

static int by_off(const void *x, const void *y)
{
    const vblk_t *a = x, *b = y;
    return a->off < b->off ? -1 : a->off > b->off ? 1 : a->idx - b->idx;
}

/* Sorts the non-empty blocks of b by offset into out (returns how many)
 * and fails if two of them overlap. */
static int sort_disjoint(const vcall_t *c, int rank, const vblk_t *b, int n,
                         vblk_t *out, const char *what)
{
    int m = 0;
    for (int k = 0; k < n; k++)
        if (b[k].len > 0)
            out[m++] = b[k];
    qsort(out, (size_t)m, sizeof(*out), by_off);
    uint64_t es = hccn_dtype_size(c->dtype);
    for (int k = 0; k + 1 < m; k++)
        if (out[k].off + out[k].len > out[k + 1].off) {
            hccn_rt_error(HCCN_ERR_INVALID,
                          "%s: rank %d: %s blocks %d (elements [%llu, %llu)) "
                          "and %d (elements [%llu, %llu)) overlap",
                          c->name, rank, what, out[k].idx,
                          (unsigned long long)(out[k].off / es),
                          (unsigned long long)((out[k].off + out[k].len) / es),
                          out[k + 1].idx,
                          (unsigned long long)(out[k + 1].off / es),
                          (unsigned long long)((out[k + 1].off +
                                                out[k + 1].len) / es));
            return -1;
        }
    return m;
}

/* The first of the m sorted disjoint blocks (base rb) that meets bytes
 * [lo, hi) of memory, or -1. */
static int meets(uintptr_t rb, const vblk_t *sorted, int m, uintptr_t lo,
                 uintptr_t hi)
{
    int a = 0, z = m;   /* first block that ends after lo */
    while (a < z) {
        int mid = a + (z - a) / 2;
        if (rb + sorted[mid].off + sorted[mid].len <= lo)
            a = mid + 1;
        else
            z = mid;
    }
    return a < m && rb + sorted[a].off < hi ? a : -1;
}

/* No send block may share a byte with a receive block (sorted, m). */
static hccn_status_t check_apart(const vcall_t *c, int rank, const vblk_t *sb,
                                 int n, const vblk_t *sorted, int m)
{
    uintptr_t sbase = (uintptr_t)c->sendbuf, rbase = (uintptr_t)c->recvbuf;
    for (int k = 0; k < n; k++) {
        if (sb[k].len == 0)
            continue;
        int hit = meets(rbase, sorted, m, sbase + sb[k].off,
                        sbase + sb[k].off + sb[k].len);
        if (hit >= 0)
            return hccn_rt_error(
                HCCN_ERR_INVALID,
                "%s: rank %d: send block %d (%llu bytes at %p) overlaps "
                "receive block %d (%llu bytes at %p) and the call is not "
                "the in-place form of %s",
                c->name, rank, sb[k].idx, (unsigned long long)sb[k].len,
                (void *)(sbase + sb[k].off), sorted[hit].idx,
                (unsigned long long)sorted[hit].len,
                (void *)(rbase + sorted[hit].off), hccn_coll_name(c->coll));
    }
    return HCCN_OK;
}

/* ----------------------------------------------------------- arrays --- */

/* What a call hands on: the builder's arguments and the fingerprint's
 * arrays, all in one block v (4 arrays of n entries). */
typedef struct {
    uint64_t *v;
    hccn_coll_args_t a;
    rt_coll_call_t call;
} vpost_t;

static void copy_counts(uint64_t *dst, const size_t *src, int n)
{
    for (int i = 0; i < n; i++)
        dst[i] = src[i];
}

static uint64_t hash_counts(const uint64_t *v, int n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (int i = 0; i < n; i++) {
        h = (h ^ v[i]) * 0x100000001b3ULL;
        h ^= h >> 29;
    }
    return h;
}

/* The largest end of blocks b (elements). */
static uint64_t extent(const vblk_t *b, int n, size_t es)
{
    uint64_t e = 0;
    for (int k = 0; k < n; k++)
        if (b[k].len > 0 && b[k].off + b[k].len > e)
            e = b[k].off + b[k].len;
    return e / es;
}

/* Fills p from the checked call: arrays as uint64_t, reduce_scatterv's
 * packed send displacements, the fingerprint's parts. */
static void fill_post(const vcall_t *c, hccn_comm_t *comm, const vblk_t *sb,
                      const vblk_t *rb, vpost_t *p)
{
    int n = comm->sh->size, rank = comm->rank;
    size_t es = hccn_dtype_size(c->dtype);
    uint64_t *cnt = p->v, *rcnt = p->v + n, *sd = p->v + 2 * n,
             *rd = p->v + 3 * n;
    p->a = (hccn_coll_args_t){.coll = c->coll, .nranks = n, .esize = es,
                              .view = &comm->sh->view, .me = 0};
    p->call = (rt_coll_call_t){.sendbuf = c->sendbuf, .recvbuf = c->recvbuf,
                               .dtype = c->dtype, .op = c->op,
                               .fp_kind = (int)c->coll, .vmem = p->v};
    copy_counts(rcnt, c->rcounts, n);
    p->call.vrecv = rcnt;
    if (c->coll == HCCN_COLL_ALLTOALLV) {
        copy_counts(cnt, c->scounts, n);
        copy_counts(sd, c->sdispls, n);
        copy_counts(rd, c->rdispls, n);
        p->a.vcounts = cnt;
        p->a.vrcounts = rcnt;
        p->a.vsdispls = sd;
        p->a.vrdispls = rd;
        p->a.me = rank;
        uint64_t se = extent(sb, n, es), re = extent(rb, n, es);
        p->a.count = se > re ? se : re;
        p->call.vsend = cnt;
        return;
    }
    p->a.vcounts = rcnt;
    p->call.vhash = hash_counts(rcnt, n);
    if (c->coll == HCCN_COLL_ALLGATHERV) {
        copy_counts(rd, c->rdispls, n);
        p->a.vrdispls = rd;
        p->a.count = extent(rb, n, es);
        p->call.fp_extra = c->sendcount;
        return;
    }
    uint64_t off = 0;   /* reduce_scatterv: blocks packed in SEND */
    for (int i = 0; i < n; i++) {
        sd[i] = off;
        off += rcnt[i];
    }
    p->a.vsdispls = sd;
    p->a.count = off;
    p->call.out_elems = rcnt[rank];
    p->call.avg_elems = c->op == HCCN_AVG ? rcnt[rank] : 0;
}

/* --------------------------------------------------------- per coll --- */

/* The blocks of each buffer: sb gets the send blocks (n for alltoallv
 * and reduce_scatterv, 1 for allgatherv), rb the receive blocks (n, or 1
 * for reduce_scatterv). me is the comm rank, rank the one messages name. */
static hccn_status_t make_blocks(const vcall_t *c, int me, int rank, int n,
                                 vblk_t *sb, vblk_t *rb)
{
    uint64_t sum = 0, es = hccn_dtype_size(c->dtype);
    const char *rd = c->coll == HCCN_COLL_ALLGATHERV ? "displs" : "rdispls";
    for (int i = 0; i < n; i++) {
        sb[i] = rb[i] = (vblk_t){0, 0, i};
        if (c->coll == HCCN_COLL_ALLTOALLV &&
            make_block(c, rank, "sendcounts", "sdispls", i, c->scounts[i],
                       c->sdispls[i], &sb[i]) != 0)
            return HCCN_ERR_INVALID;
        if (c->coll != HCCN_COLL_REDUCE_SCATTERV &&
            make_block(c, rank, "recvcounts", rd, i, c->rcounts[i],
                       c->rdispls[i], &rb[i]) != 0)
            return HCCN_ERR_INVALID;
        if (c->coll == HCCN_COLL_REDUCE_SCATTERV &&
            make_block(c, rank, "recvcounts", "offset", i,
                       c->rcounts[i], sum, &sb[i]) != 0)
            return HCCN_ERR_INVALID;
        sum += c->rcounts[i];   /* cannot wrap: each block end fits */
    }
    if (c->coll == HCCN_COLL_ALLGATHERV &&
        make_block(c, rank, "sendcount", "offset", 0, c->sendcount, 0,
                   &sb[0]) != 0)
        return HCCN_ERR_INVALID;
    if (c->coll == HCCN_COLL_REDUCE_SCATTERV)
        rb[0] = (vblk_t){0, c->rcounts[me] * es, me};
    return HCCN_OK;
}

/* The in-place forms (hccn_coll.h): allgatherv's sendbuf is its own
 * receive block, reduce_scatterv's recvbuf its own send block. */
static int in_place(const vcall_t *c, int me, const vblk_t *sb,
                    const vblk_t *rb)
{
    uintptr_t s = (uintptr_t)c->sendbuf, r = (uintptr_t)c->recvbuf;
    if (c->coll == HCCN_COLL_ALLGATHERV)
        return s == r + rb[me].off;
    if (c->coll == HCCN_COLL_REDUCE_SCATTERV)
        return r == s + sb[me].off;
    return 0;
}

/* The buffer checks: blocks inside live allocations, receive blocks
 * disjoint, send and receive blocks apart unless in place. */
static hccn_status_t check_blocks(const vcall_t *c, hccn_comm_t *comm,
                                  const vblk_t *sb, const vblk_t *rb,
                                  vblk_t *sorted)
{
    hccn_ctx_t *ctx = comm->ctx;
    int n = comm->sh->size;
    int nsb = c->coll == HCCN_COLL_ALLGATHERV ? 1 : n;
    int nrb = c->coll == HCCN_COLL_REDUCE_SCATTERV ? 1 : n;
    hccn_status_t rc;
    if ((rc = check_inside(c, ctx, c->sendbuf, sb, nsb, "sendbuf")) ||
        (rc = check_inside(c, ctx, c->recvbuf, rb, nrb, "recvbuf")))
        return rc;
    int m = sort_disjoint(c, ctx->rank, rb, nrb, sorted, "recvbuf");
    if (m < 0)
        return HCCN_ERR_INVALID;
    if (in_place(c, comm->rank, sb, rb))
        return HCCN_OK;
    return check_apart(c, ctx->rank, sb, nsb, sorted, m);
}

/* Every argument check of the calling rank; fills p on success. */
static hccn_status_t check_call(const vcall_t *c, hccn_comm_t *comm,
                                vpost_t *p)
{
    int n = comm->sh->size, rank = comm->ctx->rank;
    hccn_status_t rc = check_scalars(c, rank);
    if (rc != HCCN_OK)
        return rc;
    vblk_t *blk = malloc(3 * (size_t)n * sizeof(*blk));
    p->v = malloc(4 * (size_t)n * sizeof(uint64_t));
    if (blk == NULL || p->v == NULL) {
        rc = hccn_rt_error(HCCN_ERR_NOMEM, "%s: rank %d: out of memory",
                           c->name, rank);
        goto out;
    }
    vblk_t *sb = blk, *rb = blk + n;
    if ((rc = make_blocks(c, comm->rank, rank, n, sb, rb)) == HCCN_OK &&
        (rc = check_blocks(c, comm, sb, rb, blk + 2 * n)) == HCCN_OK)
        fill_post(c, comm, sb, rb, p);
out:
    free(blk);
    if (rc != HCCN_OK) {
        free(p->v);
        p->v = NULL;
    }
    return rc;
}

/* Checks, picks the algorithm and posts; blocking when fut is NULL. */
static hccn_status_t vcall(const vcall_t *c, hccn_comm_t *comm,
                           hccn_future_t **fut, int blocking)
{
    if (hccn_rt_proc_fwd()) {   /* a client process's rank (proc.h) */
        rt_fwd_coll_t f = {
            .form = blocking ? RT_FORM_BLOCK : RT_FORM_POST,
            .coll = (int)c->coll, .sendbuf = c->sendbuf,
            .recvbuf = c->recvbuf, .count = c->sendcount, .dtype = c->dtype,
            .op = c->op, .v = {c->scounts, c->sdispls, c->rcounts, c->rdispls}};
        return hccn_rt_fwd_coll(comm, &f, fut);
    }
    if (fut != NULL)
        *fut = NULL;
    hccn_status_t rc = hccn_rt_comm_resolve(c->name, &comm);
    if (rc != HCCN_OK || (rc = hccn_rt_comm_check(c->name, comm)) != HCCN_OK)
        return rc;
    if (!blocking && fut == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID, "%s: rank %d: future is NULL",
                             c->name, comm->ctx->rank);
    vpost_t p = {0};
    const hccn_algo_t *algo;
    hccn_future_t *f;
    if ((rc = check_call(c, comm, &p)) != HCCN_OK)
        return rc;
    if ((rc = hccn_rt_coll_pick(comm, &p.a, NULL, c->name, &algo)) !=
        HCCN_OK) {
        free(p.v);
        return rc;
    }
    p.call.blocking = blocking;
    if ((rc = hccn_rt_coll_post(comm, &p.a, algo, &p.call, &f)) != HCCN_OK)
        return rc;   /* p.v went with the call */
    hccn_rt_note_post(f, &p.a, algo, NULL);
    if (!blocking) {
        *fut = f;
        return hccn_rt_future_publish(fut);
    }
    return hccn_rt_complete(f);
}

/* ------------------------------------------------------------- API --- */

static hccn_status_t alltoallv(const char *name, hccn_comm_t *comm,
                               const void *sendbuf, const size_t *sendcounts,
                               const size_t *sdispls, void *recvbuf,
                               const size_t *recvcounts, const size_t *rdispls,
                               hccn_dtype_t dtype, hccn_future_t **fut,
                               int blocking)
{
    vcall_t c = {.name = name, .coll = HCCN_COLL_ALLTOALLV,
                 .sendbuf = sendbuf, .recvbuf = recvbuf,
                 .scounts = sendcounts, .sdispls = sdispls,
                 .rcounts = recvcounts, .rdispls = rdispls, .dtype = dtype,
                 .op = HCCN_SUM};
    return vcall(&c, comm, fut, blocking);
}

hccn_status_t hccn_alltoallv(hccn_comm_t *comm, const void *sendbuf,
                             const size_t *sendcounts, const size_t *sdispls,
                             void *recvbuf, const size_t *recvcounts,
                             const size_t *rdispls, hccn_dtype_t dtype)
{
    return alltoallv("hccn_alltoallv", comm, sendbuf, sendcounts, sdispls,
                     recvbuf, recvcounts, rdispls, dtype, NULL, 1);
}

hccn_status_t hccn_ialltoallv(hccn_comm_t *comm, const void *sendbuf,
                              const size_t *sendcounts, const size_t *sdispls,
                              void *recvbuf, const size_t *recvcounts,
                              const size_t *rdispls, hccn_dtype_t dtype,
                              hccn_future_t **fut)
{
    return alltoallv("hccn_ialltoallv", comm, sendbuf, sendcounts, sdispls,
                     recvbuf, recvcounts, rdispls, dtype, fut, 0);
}

static hccn_status_t allgatherv(const char *name, hccn_comm_t *comm,
                                const void *sendbuf, size_t sendcount,
                                void *recvbuf, const size_t *recvcounts,
                                const size_t *displs, hccn_dtype_t dtype,
                                hccn_future_t **fut, int blocking)
{
    vcall_t c = {.name = name, .coll = HCCN_COLL_ALLGATHERV,
                 .sendbuf = sendbuf, .recvbuf = recvbuf,
                 .sendcount = sendcount, .rcounts = recvcounts,
                 .rdispls = displs, .dtype = dtype, .op = HCCN_SUM};
    return vcall(&c, comm, fut, blocking);
}

hccn_status_t hccn_allgatherv(hccn_comm_t *comm, const void *sendbuf,
                              size_t sendcount, void *recvbuf,
                              const size_t *recvcounts, const size_t *displs,
                              hccn_dtype_t dtype)
{
    return allgatherv("hccn_allgatherv", comm, sendbuf, sendcount, recvbuf,
                      recvcounts, displs, dtype, NULL, 1);
}

hccn_status_t hccn_iallgatherv(hccn_comm_t *comm, const void *sendbuf,
                               size_t sendcount, void *recvbuf,
                               const size_t *recvcounts, const size_t *displs,
                               hccn_dtype_t dtype, hccn_future_t **fut)
{
    return allgatherv("hccn_iallgatherv", comm, sendbuf, sendcount, recvbuf,
                      recvcounts, displs, dtype, fut, 0);
}

static hccn_status_t reduce_scatterv(const char *name, hccn_comm_t *comm,
                                     const void *sendbuf, void *recvbuf,
                                     const size_t *recvcounts,
                                     hccn_dtype_t dtype, hccn_redop_t op,
                                     hccn_future_t **fut, int blocking)
{
    vcall_t c = {.name = name, .coll = HCCN_COLL_REDUCE_SCATTERV,
                 .sendbuf = sendbuf, .recvbuf = recvbuf,
                 .rcounts = recvcounts, .dtype = dtype, .op = op};
    return vcall(&c, comm, fut, blocking);
}

hccn_status_t hccn_reduce_scatterv(hccn_comm_t *comm, const void *sendbuf,
                                   void *recvbuf, const size_t *recvcounts,
                                   hccn_dtype_t dtype, hccn_redop_t op)
{
    return reduce_scatterv("hccn_reduce_scatterv", comm, sendbuf, recvbuf,
                           recvcounts, dtype, op, NULL, 1);
}

hccn_status_t hccn_ireduce_scatterv(hccn_comm_t *comm, const void *sendbuf,
                                    void *recvbuf, const size_t *recvcounts,
                                    hccn_dtype_t dtype, hccn_redop_t op,
                                    hccn_future_t **fut)
{
    return reduce_scatterv("hccn_ireduce_scatterv", comm, sendbuf, recvbuf,
                           recvcounts, dtype, op, fut, 0);
}
