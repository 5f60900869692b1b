/*
 * Every collective on simulated clusters, bit for bit against a serial
 * reference computed here, with guard zones around every device buffer.
 *
 * What is swept, and why. The budget is the whole program well under 90 s
 * on a 2-core CI machine in a Release build (about 30 s when measured on 2
 * cores). A collective call costs a rendezvous of every rank thread, so
 * calls are what we budget; the inputs and references of a case are made
 * once and shared by every algorithm that runs it.
 *
 * - Topologies: 1 node x p NPUs on a switch fabric for p in {1, 2, 3, 5, 8,
 *   16}, and 2 nodes x p/2 NPUs (mesh inside a node, one NIC per NPU, one
 *   network switch, like configs/default.json) for p in {8, 16}, so routes
 *   between nodes, and the hierarchical algorithms, are used.
 * - Algorithms: the default selection (HCCN_ALGO unset), then every row of
 *   the table hccn_hier_algos() forced through HCCN_ALGO (so algorithms
 *   added later are tested without editing this file), for the collectives
 *   its row claims. A call that returns HCCN_ERR_UNSUPPORTED on every rank
 *   is counted as skipped; on some ranks only, it is a failure.
 * - Small counts {0, 1, 7}, in place and out of place for every collective
 *   with an in-place form, and barrier. The default selection runs the full
 *   product (12 dtypes x 5 ops for allreduce, reduce_scatter and reduce; 12
 *   dtypes for the others) on 1, 3, 5, 2x4 and 2x8 ranks. Forced
 *   algorithms, and every algorithm on 2, 8 and 16 ranks of one node, run
 *   a rotating subset: per (collective, in place, count) 6 dtypes with all
 *   5 ops among them (reducing) or 4 dtypes (moving data), so that every
 *   dtype still meets every collective.
 * - Large counts: 100003 (prime: uneven blocks everywhere) for every
 *   collective, in and out of place, on 3, 5, 2x4 and 2x8 ranks; 1048576
 *   (several 1 MiB pipeline chunks) out of place on 2x4 ranks, with 1- or
 *   2-byte elements where a buffer holds p blocks. One dtype/op pair per
 *   call, rotating over all float types and several integer ones.
 * - Roots rotate over the ranks. On non-roots the buffer the call ignores
 *   (broadcast/scatter sendbuf, reduce/gather recvbuf) is NULL in every
 *   other case, otherwise a patterned buffer that must stay intact; every
 *   device buffer has guard zones that must stay intact, and SEND must be
 *   unchanged (in place: everything outside the rank's result).
 * - Count-0 calls sit between the others, so a rank may enter one while
 *   a peer still waits for the end of the previous call (the case of
 *   test_count_zero_after_uneven_ends, which once deadlocked).
 *
 * The file is long because it carries its own reference (conversions,
 * data, reductions) and buffer checks, independent of the runtime's code.
 *
 * Data is chosen so that the result does not depend on the order of the
 * reduction: integers are random (wrap-around arithmetic is associative);
 * float SUM/AVG use small multiples of 1/2 (whole numbers for bf16) so every
 * partial sum is exact; PROD uses +-1 and powers of two (at most 8 factors of
 * 2 and 8 of 1/2) so every partial product is exact; MAX/MIN use quarters,
 * signed zeros, infinities and NaN (a NaN result must be a NaN, any
 * payload). AVG is the exact sum divided as runtime/kernels.h documents.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "hccn/hccn.h"
#include "hierarchy/coll.h"
#include "test_half.h"
#include "test_util.h"

#define GUARD 256               /* pattern bytes before and after buffers */
#define MAX_FAIL_REPORTS 20
#define RAW_OP HCCN_REDOP_COUNT /* data for collectives that only move it */

/* ------------------------------------------------------ data generation */

typedef struct {
    uint64_t u;     /* integers: sign- or zero-extended; raw: bits */
    double d;       /* floats */
} tval_t;

static int is_float(hccn_dtype_t dt)
{
    return dt == HCCN_FP16 || dt == HCCN_BF16 || dt == HCCN_FP32 ||
           dt == HCCN_FP64;
}

static int is_signed_int(hccn_dtype_t dt)
{
    return dt == HCCN_INT8 || dt == HCCN_INT16 || dt == HCCN_INT32 ||
           dt == HCCN_INT64;
}

/* Sign- or zero-extends the low bits of u as dt does. */
static uint64_t int_extend(hccn_dtype_t dt, uint64_t u)
{
    switch (dt) {
    case HCCN_INT8: return (uint64_t)(int64_t)(int8_t)u;
    case HCCN_UINT8: return (uint8_t)u;
    case HCCN_INT16: return (uint64_t)(int64_t)(int16_t)u;
    case HCCN_UINT16: return (uint16_t)u;
    case HCCN_INT32: return (uint64_t)(int64_t)(int32_t)u;
    case HCCN_UINT32: return (uint32_t)u;
    default: return u;
    }
}

/* Float values for op (see the comment at the top): exact in every float
 * dtype, and every partial result of the reduction exact too. */
static double gen_float(hccn_dtype_t dt, hccn_redop_t op, int rank,
                        uint64_t h)
{
    double sign = (h >> 40) & 1 ? -1.0 : 1.0;
    switch (op) {
    case HCCN_SUM:
    case HCCN_AVG:
        if (dt == HCCN_BF16)
            return (double)((int)(h % 17) - 8);
        return 0.5 * (double)((int)(h % 33) - 16);
    case HCCN_PROD:
        if ((h >> 8) % 16 == 0)
            return sign * 0.0;
        if ((h >> 12) & 1)
            return sign * (rank % 2 == 0 ? 2.0 : 0.5);
        return sign;
    default: /* MAX, MIN */
        switch ((h >> 16) % 64) {
        case 0: return NAN;
        case 1: return sign * INFINITY;
        case 2: return sign * 0.0;
        default: return 0.25 * (double)((int)(h % 65) - 32);
        }
    }
}

static tval_t gen_val(hccn_dtype_t dt, hccn_redop_t op, uint64_t seed,
                      int rank, uint64_t idx)
{
    uint64_t h = test_rand_at(seed, rank, idx);
    tval_t v = {0, 0.0};
    if (is_float(dt)) {
        v.d = gen_float(dt, op, rank, h);
    } else {
        /* PROD: mostly odd factors, so products do not collapse to 0. */
        v.u = int_extend(dt, op == HCCN_PROD && (h >> 60) != 0 ? h | 1 : h);
    }
    return v;
}

/* Writes the low bytes of u as an unsigned integer of es bytes. */
static void put_bits(size_t es, uint64_t u, void *dst)
{
    uint8_t b1 = (uint8_t)u;
    uint16_t b2 = (uint16_t)u;
    uint32_t b4 = (uint32_t)u;
    switch (es) {
    case 1: memcpy(dst, &b1, 1); break;
    case 2: memcpy(dst, &b2, 2); break;
    case 4: memcpy(dst, &b4, 4); break;
    default: memcpy(dst, &u, 8); break;
    }
}

static uint64_t get_bits(size_t es, const void *src)
{
    uint8_t b1;
    uint16_t b2;
    uint32_t b4;
    uint64_t u;
    switch (es) {
    case 1: memcpy(&b1, src, 1); return b1;
    case 2: memcpy(&b2, src, 2); return b2;
    case 4: memcpy(&b4, src, 4); return b4;
    default: memcpy(&u, src, 8); return u;
    }
}

/* Writes v as one element of dt at dst. */
static void put_val(hccn_dtype_t dt, tval_t v, void *dst)
{
    if (!is_float(dt)) {
        put_bits(hccn_dtype_size(dt), v.u, dst);
        return;
    }
    if (dt == HCCN_FP64) {
        memcpy(dst, &v.d, 8);
    } else if (dt == HCCN_FP32) {
        float f = (float)v.d;
        memcpy(dst, &f, 4);
    } else {
        uint16_t h = dt == HCCN_FP16 ? test_f32_to_f16((float)v.d)
                                     : test_f32_to_bf16((float)v.d);
        memcpy(dst, &h, 2);
    }
}

/* The element of dt at src, as gen_val made it (not for raw data). */
static tval_t get_val(hccn_dtype_t dt, const void *src)
{
    uint64_t u = get_bits(hccn_dtype_size(dt), src);
    tval_t v = {int_extend(dt, u), 0.0};
    uint32_t b4 = (uint32_t)u;
    float f;
    switch (dt) {
    case HCCN_FP16:
        v.d = test_f16_to_f32((uint16_t)u);
        break;
    case HCCN_BF16:
        b4 <<= 16;
        /* fall through */
    case HCCN_FP32:
        memcpy(&f, &b4, 4);
        v.d = f;
        break;
    case HCCN_FP64:
        memcpy(&v.d, &u, 8);
        break;
    default:
        break;
    }
    return v;
}

/* The n elements of rank's data, into dst. Raw data is random bytes,
 * made 8 at a time. */
static void fill_data(hccn_dtype_t dt, hccn_redop_t op, uint64_t seed,
                      int rank, size_t n, uint8_t *dst)
{
    size_t es = hccn_dtype_size(dt);
    if (op == RAW_OP) {
        size_t bytes = n * es, i;
        for (i = 0; i + 8 <= bytes; i += 8)
            put_bits(8, test_rand_at(seed, rank, i), dst + i);
        for (; i < bytes; i++)
            dst[i] = (uint8_t)test_rand_at(seed, rank, i);
        return;
    }
    for (size_t i = 0; i < n; i++)
        put_val(dt, gen_val(dt, op, seed, rank, i), dst + i * es);
}

/* ------------------------------------------------------- the reference */

static double fold_float(hccn_redop_t op, double a, double b)
{
    switch (op) {
    case HCCN_PROD:
        return a * b;
    case HCCN_MAX:
    case HCCN_MIN:
        if (isnan(a) || isnan(b))
            return NAN;
        if (a == 0.0 && b == 0.0) { /* +0 wins MAX, -0 wins MIN */
            if (op == HCCN_MAX)
                return signbit(a) && signbit(b) ? -0.0 : 0.0;
            return signbit(a) || signbit(b) ? -0.0 : 0.0;
        }
        return (op == HCCN_MAX) == (a > b) ? a : b;
    default:
        return a + b;
    }
}

static uint64_t fold_int(hccn_dtype_t dt, hccn_redop_t op, uint64_t a,
                         uint64_t b)
{
    int lt = is_signed_int(dt) ? (int64_t)a < (int64_t)b : a < b;
    switch (op) {
    case HCCN_PROD: return a * b;
    case HCCN_MAX: return lt ? b : a;
    case HCCN_MIN: return lt ? a : b;
    default: return a + b;
    }
}

/* C division of the wrapped sum, in dt (kernels.h). */
static uint64_t avg_int(hccn_dtype_t dt, uint64_t s, int p)
{
    switch (dt) {
    case HCCN_INT8: return (uint64_t)(int64_t)((int8_t)s / p);
    case HCCN_UINT8: return (uint8_t)s / (unsigned)p;
    case HCCN_INT16: return (uint64_t)(int64_t)((int16_t)s / p);
    case HCCN_UINT16: return (uint16_t)s / (unsigned)p;
    case HCCN_INT32: return (uint64_t)(int64_t)((int32_t)s / p);
    case HCCN_UINT32: return (uint32_t)s / (unsigned)p;
    case HCCN_INT64: return (uint64_t)((int64_t)s / p);
    default: return s / (uint64_t)p;
    }
}

/* Element idx of the reduction over the p inputs at in (stride bytes
 * apart), written to dst. */
static void ref_elem(hccn_dtype_t dt, hccn_redop_t op, const uint8_t *in,
                     size_t stride, int p, size_t idx, void *dst)
{
    size_t es = hccn_dtype_size(dt);
    tval_t acc = get_val(dt, in + idx * es);
    for (int r = 1; r < p; r++) {
        tval_t v = get_val(dt, in + (size_t)r * stride + idx * es);
        if (is_float(dt))
            acc.d = fold_float(op, acc.d, v.d);
        else
            acc.u = fold_int(dt, op, acc.u, v.u);
    }
    if (op == HCCN_AVG && p > 1) {
        if (!is_float(dt))
            acc.u = avg_int(dt, acc.u, p);
        else if (dt == HCCN_FP64)
            acc.d = acc.d / p;
        else /* fp32, and fp16/bf16 through fp32: the sum is exact */
            acc.d = (double)((float)acc.d / (float)p);
    }
    put_val(dt, acc, dst);
}

/* -------------------------------------------------------------- cases */

typedef struct {
    hccn_coll_t coll;
    hccn_dtype_t dtype;
    hccn_redop_t op;            /* RAW_OP for the data-moving collectives */
    size_t count;
    int inplace;
    int root;
    int null_unused;            /* non-roots pass NULL for unused buffers */
    uint64_t seed;
    uint8_t *in;                /* every rank's SEND, in_bytes each */
    size_t in_bytes;
    void *ref;                  /* host reference of a reduction, or NULL */
} tcase_t;

typedef struct {
    hccn_status_t rc;
    int bad;                    /* 1: wrong bytes (msg says where) */
    char msg[320];
} tres_t;

typedef struct {
    tcase_t *cases;
    int ncases, cap;
} tlist_t;

static int reduces(hccn_coll_t c)
{
    return c == HCCN_COLL_ALLREDUCE || c == HCCN_COLL_REDUCE_SCATTER ||
           c == HCCN_COLL_REDUCE;
}

static int has_inplace(hccn_coll_t c)
{
    return reduces(c) || c == HCCN_COLL_ALLGATHER ||
           c == HCCN_COLL_BROADCAST;
}

static int is_rooted(hccn_coll_t c)
{
    return c == HCCN_COLL_BROADCAST || c == HCCN_COLL_REDUCE ||
           c == HCCN_COLL_SCATTER || c == HCCN_COLL_GATHER;
}

/* Elements of SEND and RECV of c (root-sized where the root differs). */
static size_t send_elems(const tcase_t *c, int p)
{
    int blocks = c->coll == HCCN_COLL_REDUCE_SCATTER ||
                 c->coll == HCCN_COLL_ALLTOALL || c->coll == HCCN_COLL_SCATTER;
    return c->count * (size_t)(blocks ? p : 1);
}

static size_t recv_elems(const tcase_t *c, int p)
{
    int blocks = c->coll == HCCN_COLL_ALLGATHER ||
                 c->coll == HCCN_COLL_ALLTOALL || c->coll == HCCN_COLL_GATHER;
    return c->count * (size_t)(blocks ? p : 1);
}

static void add_case(tlist_t *l, hccn_coll_t coll, hccn_dtype_t dt,
                     hccn_redop_t op, size_t count, int inplace, int p)
{
    static unsigned long long seeds = 20240611;
    if (l->ncases == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 256;
        l->cases = realloc(l->cases, (size_t)l->cap * sizeof(*l->cases));
        assert_non_null(l->cases);
    }
    int k = l->ncases++;
    l->cases[k] = (tcase_t){
        .coll = coll, .dtype = dt, .op = reduces(coll) ? op : RAW_OP,
        .count = count, .inplace = inplace,
        .root = is_rooted(coll) ? (k * 7 + 3) % p : 0,
        .null_unused = k % 2, .seed = test_rand_next(&seeds)};
}

/* Host bytes make_inputs() needs for case c. */
static size_t case_host_bytes(const tcase_t *c, int p)
{
    size_t es = hccn_dtype_size(c->dtype);
    return (size_t)p * send_elems(c, p) * es + recv_elems(c, p) * es;
}

/* Generates every rank's input of cases [first, last) and the references
 * of their reductions. */
static void make_inputs(tlist_t *l, int first, int last, int p)
{
    for (int k = first; k < last; k++) {
        tcase_t *c = &l->cases[k];
        size_t es = hccn_dtype_size(c->dtype), ns = send_elems(c, p);
        c->in_bytes = ns * es;
        c->in = malloc((size_t)p * c->in_bytes + 1);
        assert_non_null(c->in);
        for (int r = 0; r < p; r++)
            fill_data(c->dtype, c->op, c->seed, r, ns,
                      c->in + (size_t)r * c->in_bytes);
        if (!reduces(c->coll))
            continue;
        c->ref = malloc(ns * es + 1);
        assert_non_null(c->ref);
        for (size_t i = 0; i < ns; i++)
            ref_elem(c->dtype, c->op, c->in, c->in_bytes, p, i,
                     (char *)c->ref + i * es);
    }
}

static void free_inputs(tlist_t *l, int first, int last)
{
    for (int k = first; k < last; k++) {
        free(l->cases[k].in);
        free(l->cases[k].ref);
        l->cases[k].in = NULL;
        l->cases[k].ref = NULL;
    }
}

static const char *case_str(const tcase_t *c, const char *algo, int p)
{
    static char buf[200];
    snprintf(buf, sizeof(buf), "%s p=%d algo=%s %s %s count=%zu %s root=%d%s",
             hccn_coll_name(c->coll), p, algo, hccn_dtype_name(c->dtype),
             c->op == RAW_OP ? "-" : hccn_redop_name(c->op), c->count,
             c->inplace ? "in-place" : "out-of-place", c->root,
             c->null_unused ? " (NULL unused)" : "");
    return buf;
}

/* ------------------------------------------------- one case on one rank */

/* A device buffer with guards, and the host copy of what it must hold
 * after the call. */
typedef struct {
    uint8_t *dev;               /* GUARD + bytes + GUARD, or NULL */
    uint8_t *want;
    size_t bytes;
} gbuf_t;

static hccn_status_t gbuf_alloc(hccn_ctx_t *ctx, gbuf_t *g, size_t bytes)
{
    g->bytes = bytes;
    g->want = malloc(bytes + 2 * GUARD);
    hccn_status_t rc = hccn_malloc(ctx, bytes + 2 * GUARD, (void **)&g->dev);
    if (rc != HCCN_OK || g->want == NULL)
        return rc != HCCN_OK ? rc : HCCN_ERR_NOMEM;
    for (size_t i = 0; i < bytes + 2 * GUARD; i++)
        g->dev[i] = (uint8_t)(i * 131u + 0x5bu);
    return HCCN_OK;
}

static void gbuf_free(hccn_ctx_t *ctx, gbuf_t *g)
{
    if (g->dev != NULL)
        hccn_free(ctx, g->dev);
    free(g->want);
}

static void *gbuf_data(gbuf_t *g)
{
    return g->dev != NULL ? g->dev + GUARD : NULL;
}

static int both_nan(hccn_dtype_t dt, const uint8_t *a, const uint8_t *b)
{
    uint16_t h1, h2;
    switch (dt) {
    case HCCN_FP16:
    case HCCN_BF16: {
        uint16_t m = dt == HCCN_FP16 ? 0x7c00u : 0x7f80u;
        memcpy(&h1, a, 2);
        memcpy(&h2, b, 2);
        return (h1 & m) == m && (h1 & ~m & 0x7fffu) && (h2 & m) == m &&
               (h2 & ~m & 0x7fffu);
    }
    case HCCN_FP32: {
        float x, y;
        memcpy(&x, a, 4);
        memcpy(&y, b, 4);
        return isnan(x) && isnan(y);
    }
    case HCCN_FP64: {
        double x, y;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        return isnan(x) && isnan(y);
    }
    default:
        return 0;
    }
}

/* Compares g's device bytes with what they must be; 0 if equal. In a
 * MAX/MIN result a NaN matches any NaN. */
static int gbuf_check(const gbuf_t *g, const tcase_t *c, const char *name,
                      tres_t *res)
{
    size_t total = g->bytes + 2 * GUARD, es = hccn_dtype_size(c->dtype);
    if (g->dev == NULL || memcmp(g->dev, g->want, total) == 0)
        return 0;
    int nan_ok = c->op == HCCN_MAX || c->op == HCCN_MIN;
    for (size_t i = 0; i < total; i++) {
        if (g->dev[i] == g->want[i])
            continue;
        size_t e = i < GUARD ? 0 : (i - GUARD) / es;
        size_t at = GUARD + e * es;
        if (nan_ok && i >= GUARD && i < GUARD + g->bytes &&
            both_nan(c->dtype, g->dev + at, g->want + at)) {
            i = at + es - 1;
            continue;
        }
        const char *where = i < GUARD ? "guard before"
                            : i >= GUARD + g->bytes ? "guard after" : "data";
        snprintf(res->msg, sizeof(res->msg),
                 "%s: byte %td (%s, element %zu) is 0x%02x, expected 0x%02x",
                 name, (ptrdiff_t)i - GUARD, where, e, g->dev[i], g->want[i]);
        res->bad = 1;
        return 1;
    }
    return 0;
}

typedef struct {
    gbuf_t a, b;                /* a: SEND (or the in-place buffer), b: RECV */
    const void *send;
    void *recv;
} bufs_t;

/* Sets up the buffers of one case: the rank's own data in SEND, the guard
 * pattern everywhere else. On non-roots, the buffer the call ignores is
 * NULL when null_unused, else a patterned buffer that must survive. */
static hccn_status_t setup(hccn_ctx_t *ctx, const tcase_t *c, bufs_t *b)
{
    int r = hccn_rank(ctx), p = hccn_nranks(ctx), root = r == c->root;
    size_t es = hccn_dtype_size(c->dtype);
    size_t ns = send_elems(c, p), nr = recv_elems(c, p);
    const uint8_t *mine = c->in + (size_t)r * c->in_bytes;
    int skip_send = !root && (c->coll == HCCN_COLL_BROADCAST ||
                              c->coll == HCCN_COLL_SCATTER);
    int skip_recv = !root && (c->coll == HCCN_COLL_REDUCE ||
                              c->coll == HCCN_COLL_GATHER);
    hccn_status_t rc;
    if (c->inplace) {
        if ((rc = gbuf_alloc(ctx, &b->a, (ns > nr ? ns : nr) * es)))
            return rc;
        char *d = gbuf_data(&b->a);
        b->send = d;
        b->recv = d;
        if (c->coll == HCCN_COLL_ALLGATHER)
            b->send = d + (size_t)r * c->count * es;
        if (c->coll == HCCN_COLL_REDUCE_SCATTER)
            b->recv = d + (size_t)r * c->count * es;
        if (!skip_send)
            memcpy((void *)b->send, mine, ns * es);
        return HCCN_OK;
    }
    if (!(skip_send && c->null_unused)) {
        if ((rc = gbuf_alloc(ctx, &b->a, ns * es)))
            return rc;
        b->send = gbuf_data(&b->a);
        if (!skip_send)
            memcpy(gbuf_data(&b->a), mine, ns * es);
    }
    if (!(skip_recv && c->null_unused)) {
        if ((rc = gbuf_alloc(ctx, &b->b, nr * es)))
            return rc;
        b->recv = gbuf_data(&b->b);
    }
    return HCCN_OK;
}

/* Writes into dst (host) the RECV contents rank r must end with; nothing
 * where the call must leave RECV alone (non-root reduce/gather). */
static void expected(const tcase_t *c, int r, int p, uint8_t *dst)
{
    size_t es = hccn_dtype_size(c->dtype), blk = c->count * es;
    const uint8_t *root_in = c->in + (size_t)c->root * c->in_bytes;
    switch (c->coll) {
    case HCCN_COLL_ALLREDUCE:
        memcpy(dst, c->ref, blk);
        break;
    case HCCN_COLL_REDUCE:
        if (r == c->root)
            memcpy(dst, c->ref, blk);
        break;
    case HCCN_COLL_REDUCE_SCATTER:
        memcpy(dst, (char *)c->ref + (size_t)r * blk, blk);
        break;
    case HCCN_COLL_BROADCAST:
        memcpy(dst, root_in, blk);
        break;
    case HCCN_COLL_SCATTER:
        memcpy(dst, root_in + (size_t)r * blk, blk);
        break;
    case HCCN_COLL_GATHER:
    case HCCN_COLL_ALLGATHER:
        if (c->coll == HCCN_COLL_GATHER && r != c->root)
            break;
        for (int i = 0; i < p; i++)
            memcpy(dst + (size_t)i * blk, c->in + (size_t)i * c->in_bytes,
                   blk);
        break;
    case HCCN_COLL_ALLTOALL:
        for (int i = 0; i < p; i++)
            memcpy(dst + (size_t)i * blk,
                   c->in + (size_t)i * c->in_bytes + (size_t)r * blk, blk);
        break;
    default:
        break;
    }
}

static hccn_status_t call(hccn_comm_t *w, const tcase_t *c, const bufs_t *b)
{
    switch (c->coll) {
    case HCCN_COLL_ALLREDUCE:
        return hccn_allreduce(w, b->send, b->recv, c->count, c->dtype, c->op);
    case HCCN_COLL_REDUCE_SCATTER:
        return hccn_reduce_scatter(w, b->send, b->recv, c->count, c->dtype,
                                   c->op);
    case HCCN_COLL_ALLGATHER:
        return hccn_allgather(w, b->send, b->recv, c->count, c->dtype);
    case HCCN_COLL_BROADCAST:
        return hccn_broadcast(w, b->send, b->recv, c->count, c->dtype,
                              c->root);
    case HCCN_COLL_REDUCE:
        return hccn_reduce(w, b->send, b->recv, c->count, c->dtype, c->op,
                           c->root);
    case HCCN_COLL_ALLTOALL:
        return hccn_alltoall(w, b->send, b->recv, c->count, c->dtype);
    case HCCN_COLL_SCATTER:
        return hccn_scatter(w, b->send, b->recv, c->count, c->dtype, c->root);
    case HCCN_COLL_GATHER:
        return hccn_gather(w, b->send, b->recv, c->count, c->dtype, c->root);
    default:
        return hccn_barrier(w);
    }
}

static void run_case(hccn_ctx_t *ctx, const tcase_t *c, tres_t *res)
{
    int r = hccn_rank(ctx), p = hccn_nranks(ctx);
    bufs_t b = {0};
    res->bad = 0;
    res->msg[0] = '\0';
    res->rc = c->coll == HCCN_COLL_BARRIER ? HCCN_OK : setup(ctx, c, &b);
    if (res->rc != HCCN_OK) {
        snprintf(res->msg, sizeof(res->msg), "setup: %s", hccn_last_error());
        goto free_bufs;
    }
    /* What every byte must be afterwards: as now, except the result. */
    if (b.a.dev != NULL)
        memcpy(b.a.want, b.a.dev, b.a.bytes + 2 * GUARD);
    if (b.b.dev != NULL)
        memcpy(b.b.want, b.b.dev, b.b.bytes + 2 * GUARD);
    gbuf_t *rg = c->inplace ? &b.a : &b.b;
    if (rg->dev != NULL)
        expected(c, r, p, rg->want + ((uint8_t *)b.recv - rg->dev));
    res->rc = call(hccn_comm_world(ctx), c, &b);
    if (res->rc != HCCN_OK) {
        snprintf(res->msg, sizeof(res->msg), "%s", hccn_last_error());
        goto free_bufs;
    }
    if (!gbuf_check(&b.a, c, c->inplace ? "buffer" : "sendbuf", res))
        gbuf_check(&b.b, c, "recvbuf", res);
free_bufs:
    gbuf_free(ctx, &b.a);
    gbuf_free(ctx, &b.b);
}

/* ----------------------------------------------------------- the runs */

typedef struct {
    const tcase_t *cases;
    const int *idx;             /* the cases of this run, in call order */
    int n;
    tres_t *res;                /* n x nranks */
} run_t;

static hccn_status_t rank_main(hccn_ctx_t *ctx, void *arg)
{
    run_t *run = arg;
    int r = hccn_rank(ctx), p = hccn_nranks(ctx);
    for (int k = 0; k < run->n; k++)
        run_case(ctx, &run->cases[run->idx[k]], &run->res[(size_t)k * p + r]);
    return HCCN_OK;
}

typedef struct {
    int calls, skipped, failures;
} tally_t;

/* Checks the results of one run in the main thread. */
static void judge(const run_t *run, int p, const char *algo, tally_t *t)
{
    for (int k = 0; k < run->n; k++) {
        const tcase_t *c = &run->cases[run->idx[k]];
        const tres_t *res = &run->res[(size_t)k * p];
        int unsupported = 0;
        for (int r = 0; r < p; r++)
            unsupported += res[r].rc == HCCN_ERR_UNSUPPORTED;
        t->calls++;
        if (unsupported == p) {
            t->skipped++;
            continue;
        }
        for (int r = 0; r < p; r++) {
            if (res[r].rc == HCCN_OK && !res[r].bad)
                continue;
            if (t->failures++ < MAX_FAIL_REPORTS)
                print_message("FAIL %s: rank %d: %s: %s\n",
                              case_str(c, algo, p), r,
                              hccn_status_name(res[r].rc), res[r].msg);
            break;
        }
    }
}

static int algo_claims(const hccn_algo_t *a, hccn_coll_t coll)
{
    return a == NULL || (a->colls & (1u << coll));
}

/* Runs cases [first, last) of l that algorithm a (NULL: the default
 * selection) claims, on cluster cl. */
static void run_algo(hccn_cluster_t *cl, const tlist_t *l, int first,
                     int last, const hccn_algo_t *a, tally_t *t)
{
    int p = hccn_cluster_size(cl);
    const char *name = a != NULL ? a->name : "default";
    if (a != NULL)
        setenv("HCCN_ALGO", a->name, 1);
    else
        unsetenv("HCCN_ALGO");
    int *idx = malloc((size_t)(last - first) * sizeof(*idx));
    tres_t *res = calloc((size_t)(last - first) * (size_t)p, sizeof(*res));
    assert_non_null(idx);
    assert_non_null(res);
    int n = 0;
    for (int k = first; k < last; k++)
        if (algo_claims(a, l->cases[k].coll))
            idx[n++] = k;
    run_t run = {l->cases, idx, n, res};
    hccn_status_t rc = hccn_cluster_run(cl, rank_main, &run, NULL);
    if (rc != HCCN_OK)
        fail_msg("p=%d algo=%s: run failed: %s", p, name, hccn_last_error());
    judge(&run, p, name, t);
    free(res);
    free(idx);
    unsetenv("HCCN_ALGO");
}

enum { ALGO_DEFAULT = 1, ALGO_FORCED = 2 };

/* Runs l with the default selection and/or every algorithm of the table,
 * in batches whose inputs and references stay under a memory budget. */
static void run_list(hccn_cluster_t *cl, tlist_t *l, int which, tally_t *t)
{
    const size_t budget = (size_t)256 << 20;
    int p = hccn_cluster_size(cl);
    for (int first = 0, last; first < l->ncases; first = last) {
        size_t mem = 0;
        for (last = first; last < l->ncases; last++) {
            size_t m = case_host_bytes(&l->cases[last], p);
            if (last > first && mem + m > budget)
                break;
            mem += m;
        }
        make_inputs(l, first, last, p);
        if (which & ALGO_DEFAULT)
            run_algo(cl, l, first, last, NULL, t);
        if (which & ALGO_FORCED)
            for (const hccn_algo_t *a = hccn_hier_algos(); a->name; a++)
                run_algo(cl, l, first, last, a, t);
        free_inputs(l, first, last);
    }
}

/* ------------------------------------------------------- topologies */

/* 1 node x p NPUs on a switch, or 2 nodes x p/2 (mesh + a NIC per NPU). */
static hccn_cluster_t *make_cluster(int nodes, int p, size_t arena_bytes,
                                    double timeout_s)
{
    char json[1024];
    int mib = (int)(arena_bytes >> 20) + 2;
    if (nodes == 1)
        snprintf(json, sizeof(json),
                 "{\"version\":1,\"node_types\":[{\"count\":1,"
                 "\"npu\":{\"count\":%d,\"arena_MiB\":%d,"
                 "\"reduce_bw_GBps\":100},"
                 "\"fabric\":{\"type\":\"switch\",\"bw_GBps\":50,"
                 "\"lat_us\":1}}]}",
                 p, mib);
    else
        snprintf(json, sizeof(json),
                 "{\"version\":1,\"node_types\":[{\"count\":2,"
                 "\"npu\":{\"count\":%d,\"arena_MiB\":%d,"
                 "\"reduce_bw_GBps\":200},"
                 "\"fabric\":{\"type\":\"mesh\",\"bw_GBps\":56,"
                 "\"lat_us\":1.5},"
                 "\"nics\":{\"count\":%d,\"bw_GBps\":25,\"lat_us\":2}}],"
                 "\"network\":{\"type\":\"switch\",\"lat_us\":1}}",
                 p / 2, mib, p / 2);
    hccn_cluster_opts_t opts = {.struct_size = sizeof(opts),
                                .timeout_s = timeout_s};
    hccn_cluster_t *cl = NULL;
    if (hccn_cluster_create_json(json, "test_collectives", &opts, &cl) !=
        HCCN_OK)
        fail_msg("cluster %dx%d: %s", nodes, p / nodes, hccn_last_error());
    return cl;
}

/* Device bytes one rank needs for the largest case of l. */
static size_t arena_need(const tlist_t *l, int p)
{
    size_t need = 0;
    for (int k = 0; k < l->ncases; k++) {
        const tcase_t *c = &l->cases[k];
        size_t es = hccn_dtype_size(c->dtype);
        size_t bytes = (send_elems(c, p) + recv_elems(c, p)) * es +
                       8 * GUARD;
        if (bytes > need)
            need = bytes;
    }
    return need;
}

/* ------------------------------------------------------------ sweeps */

static const hccn_coll_t all_colls[] = {
    HCCN_COLL_ALLREDUCE, HCCN_COLL_REDUCE_SCATTER, HCCN_COLL_ALLGATHER,
    HCCN_COLL_BROADCAST, HCCN_COLL_REDUCE,         HCCN_COLL_ALLTOALL,
    HCCN_COLL_SCATTER,   HCCN_COLL_GATHER,
};
#define NCOLLS (sizeof(all_colls) / sizeof(all_colls[0]))

static const size_t small_counts[] = {0, 1, 7};

/* Small counts, in and out of place. dense: every dtype x op. Otherwise
 * each (collective, in-place, count) gets 6 dtypes (reducing; with every
 * op among them) or 4 (moving data), rotating so that over the counts
 * every dtype appears for every collective. */
static void small_cases(tlist_t *l, int p, int dense)
{
    for (size_t ci = 0; ci < NCOLLS; ci++) {
        hccn_coll_t coll = all_colls[ci];
        for (int ip = 0; ip <= has_inplace(coll); ip++)
            for (int n = 0; n < 3; n++)
                for (int dt = 0; dt < HCCN_DTYPE_COUNT; dt++) {
                    int turn = dt + n + ip + (int)ci;
                    if (!dense && turn % (reduces(coll) ? 2 : 3) != 0)
                        continue;
                    int op0 = (dt + 3 * n + ip) % HCCN_REDOP_COUNT;
                    int nops = dense && reduces(coll) ? HCCN_REDOP_COUNT : 1;
                    for (int k = 0; k < nops; k++)
                        add_case(l, coll, (hccn_dtype_t)dt,
                                 (hccn_redop_t)((op0 + k) % HCCN_REDOP_COUNT),
                                 small_counts[n], ip, p);
                }
    }
    add_case(l, HCCN_COLL_BARRIER, HCCN_UINT8, HCCN_SUM, 0, 0, p);
}

/* Large counts: every collective, in and out of place, one dtype/op pair
 * per (collective, count, in-place), rotating with salt. 1048576 only
 * where with_1m, out of place, and with 1- or 2-byte elements where SEND
 * or RECV holds p blocks. */
static void large_cases(tlist_t *l, int p, int with_1m, int salt)
{
    static const struct {
        hccn_dtype_t dt;
        hccn_redop_t op;
    } pairs[] = {
        {HCCN_FP16, HCCN_SUM},  {HCCN_BF16, HCCN_AVG},
        {HCCN_FP32, HCCN_MAX},  {HCCN_INT32, HCCN_PROD},
        {HCCN_FP64, HCCN_MIN},  {HCCN_UINT8, HCCN_SUM},
        {HCCN_INT64, HCCN_AVG}, {HCCN_FP32, HCCN_SUM},
        {HCCN_INT8, HCCN_PROD}, {HCCN_BF16, HCCN_MAX},
    };
    const int npairs = (int)(sizeof(pairs) / sizeof(pairs[0]));
    for (size_t ci = 0; ci < NCOLLS; ci++) {
        hccn_coll_t coll = all_colls[ci];
        tcase_t probe = {.coll = coll, .count = 1};
        int blocks = send_elems(&probe, p) + recv_elems(&probe, p) > 2;
        for (int ip = 0; ip <= has_inplace(coll); ip++) {
            int k = ((int)ci * 3 + ip + salt) % npairs;
            add_case(l, coll, pairs[k].dt, pairs[k].op, 100003, ip, p);
            if (!with_1m || ip)
                continue;
            k = ((int)ci * 5 + ip + salt + 1) % npairs;
            while (blocks && hccn_dtype_size(pairs[k].dt) > 2)
                k = (k + 1) % npairs;
            add_case(l, coll, pairs[k].dt, pairs[k].op, 1048576, ip, p);
        }
    }
}

typedef struct {
    int nodes, p;
    int dense;                  /* small counts: every dtype x op */
    int large, with_1m;         /* large counts on this topology */
} tsweep_t;

static const tsweep_t sweeps[] = {
    {1, 1, 1, 0, 0}, {1, 2, 0, 0, 0},  {1, 3, 1, 1, 0}, {1, 5, 1, 1, 0},
    {1, 8, 0, 0, 0}, {1, 16, 0, 0, 0}, {2, 8, 1, 1, 1}, {2, 16, 1, 1, 0},
};

/* HCCN_TEST_QUICK (set by scripts/test.sh for the sanitizer passes):
 * the rotating subsets only, no 16-rank node, one large sweep without the
 * 1 MiB counts. Every collective, dtype and algorithm still runs. */
static int quick(void)
{
    const char *q = getenv("HCCN_TEST_QUICK");
    return q != NULL && *q != '\0' && strcmp(q, "0") != 0;
}

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void run_sweep(const tsweep_t *full, int large)
{
    tsweep_t q = *full;
    const tsweep_t *s = &q;
    if (quick()) {
        q.dense = 0;
        q.with_1m = 0;
    }
    double t0 = wall();
    tally_t t = {0};
    tlist_t main_list = {0}, forced = {0};
    if (large) {
        large_cases(&main_list, s->p, s->with_1m, s->p);
    } else {
        small_cases(&main_list, s->p, s->dense);
        if (s->dense)
            small_cases(&forced, s->p, 0);
    }
    size_t need = arena_need(&main_list, s->p);
    hccn_cluster_t *cl = make_cluster(s->nodes, s->p, need, 120.0);
    if (forced.ncases > 0) {
        run_list(cl, &main_list, ALGO_DEFAULT, &t);
        run_list(cl, &forced, ALGO_FORCED, &t);
    } else {
        run_list(cl, &main_list, ALGO_DEFAULT | ALGO_FORCED, &t);
    }
    hccn_cluster_destroy(cl);
    free(main_list.cases);
    free(forced.cases);
    print_message("%s %dx%d: %d calls, %d unsupported (skipped), %d failed, "
                  "%.1f s\n",
                  large ? "large" : "small", s->nodes, s->p / s->nodes,
                  t.calls, t.skipped, t.failures, wall() - t0);
    assert_int_equal(t.failures, 0);
}

static void test_small(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(sweeps) / sizeof(sweeps[0]); i++)
        if (!quick() || sweeps[i].p < 16 || sweeps[i].nodes > 1)
            run_sweep(&sweeps[i], 0);
}

static void test_large(void **state)
{
    (void)state;
    int done = 0;
    for (size_t i = 0; i < sizeof(sweeps) / sizeof(sweeps[0]); i++)
        if (sweeps[i].large && !(quick() && done++))
            run_sweep(&sweeps[i], 1);
}

/* ------------------------------------------------ count 0 after others */

typedef struct {
    hccn_status_t rc[2][4];
} zero_t;

/* Rank r of 2: an allreduce of 7 fp64 (ring blocks of 4 and 3 elements,
 * so the ranks end at different simulated times), then one of 0. */
static hccn_status_t zero_rank(hccn_ctx_t *ctx, void *arg)
{
    zero_t *z = arg;
    int r = hccn_rank(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx);
    double *a, *b;
    if (hccn_malloc(ctx, 64, (void **)&a) || hccn_malloc(ctx, 64, (void **)&b))
        return HCCN_ERR_NOMEM;
    memset(a, 0, 64);
    z->rc[r][0] = hccn_allreduce(w, a, b, 7, HCCN_FP64, HCCN_SUM);
    z->rc[r][1] = hccn_allreduce(w, a, b, 0, HCCN_FP64, HCCN_SUM);
    z->rc[r][2] = hccn_broadcast(w, a, a, 0, HCCN_INT8, 1);
    z->rc[r][3] = hccn_allreduce(w, a, b, 7, HCCN_FP64, HCCN_SUM);
    hccn_free(ctx, a);
    hccn_free(ctx, b);
    return HCCN_OK;
}

/* A count-0 call right after a call whose simulated end differs between
 * ranks: the rank that finishes first enters the empty collective while
 * its peer still waits for the previous one's end. */
static void test_count_zero_after_uneven_ends(void **state)
{
    (void)state;
    const char *algos[] = {NULL, "ring", "mesh"};
    for (size_t i = 0; i < sizeof(algos) / sizeof(algos[0]); i++) {
        if (algos[i] != NULL)
            setenv("HCCN_ALGO", algos[i], 1);
        hccn_cluster_t *cl = make_cluster(1, 2, 0, 10.0);
        zero_t z;
        memset(&z, 0xff, sizeof(z));
        assert_int_equal(hccn_cluster_run(cl, zero_rank, &z, NULL), HCCN_OK);
        hccn_cluster_destroy(cl);
        unsetenv("HCCN_ALGO");
        for (int r = 0; r < 2; r++)
            for (int k = 0; k < 4; k++)
                if (z.rc[r][k] != HCCN_OK)
                    fail_msg("algo %s: rank %d, call %d: %s",
                             algos[i] ? algos[i] : "default", r, k,
                             hccn_status_name(z.rc[r][k]));
    }
}

/* The reference's own conversions against hand-checked values. */
static void test_reference(void **state)
{
    (void)state;
    assert_int_equal(test_f32_to_f16(1.0f), 0x3c00);
    assert_int_equal(test_f32_to_f16(-2.5f), 0xc100);
    assert_int_equal(test_f32_to_f16(65504.0f), 0x7bff);
    assert_int_equal(test_f32_to_f16(65520.0f), 0x7c00);
    assert_int_equal(test_f32_to_f16(0x1p-24f), 0x0001);
    assert_int_equal(test_f32_to_f16(0x1p-25f), 0x0000);        /* tie */
    assert_int_equal(test_f32_to_f16(1023.5f * 0x1p-24f), 0x0400);
    assert_int_equal(test_f32_to_f16(1.0f + 0x1p-11f), 0x3c00); /* tie */
    assert_int_equal(test_f32_to_f16(1.0f + 0x3p-11f), 0x3c02); /* tie */
    assert_int_equal(test_f32_to_f16(1.0f / 3.0f), 0x3555);
    assert_int_equal(test_f32_to_bf16(1.0f / 3.0f), 0x3eab);
    assert_int_equal(test_f32_to_bf16(-1.0f), 0xbf80);
    assert_int_equal(test_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);  /* tie */
    assert_int_equal(test_f32_to_bf16(1.0f + 0x3p-8f), 0x3f82);  /* tie */
    /* int8 AVG of 100+100+100: wraps to 44, / 3 = 14. */
    uint64_t s = 0;
    for (int i = 0; i < 3; i++)
        s = fold_int(HCCN_INT8, HCCN_SUM, s, 100);
    assert_int_equal((int8_t)avg_int(HCCN_INT8, s, 3), 14);
    assert_int_equal((int8_t)avg_int(HCCN_INT8, (uint64_t)-7, 2), -3);
    assert_true(signbit(fold_float(HCCN_MIN, 0.0, -0.0)));
    assert_true(signbit(fold_float(HCCN_MIN, -0.0, 0.0)));
    assert_false(signbit(fold_float(HCCN_MIN, 0.0, 0.0)));
    assert_false(signbit(fold_float(HCCN_MAX, -0.0, 0.0)));
    assert_false(signbit(fold_float(HCCN_MAX, 0.0, -0.0)));
    assert_true(signbit(fold_float(HCCN_MAX, -0.0, -0.0)));
    assert_true(isnan(fold_float(HCCN_MAX, 1.0, NAN)));
    uint8_t out[8] = {0};
    put_val(HCCN_INT16, (tval_t){0x1234, 0}, out);
    assert_int_equal(out[0], 0x34);
    assert_int_equal(out[1], 0x12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference),
        cmocka_unit_test(test_count_zero_after_uneven_ends),
        cmocka_unit_test(test_small),
        cmocka_unit_test(test_large),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
