/*
 * Flat algorithms (ring, mesh, linear): every algorithm x collective of the
 * table, over rank counts, element counts, roots, in and out of place, run
 * by the serial interpreter and compared with a reference computed here;
 * schedule validity, bytes on the wire per rank, and the closed-form times
 * of docs/algorithms.md against an uncontended event-driven evaluation.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hierarchy/coll.h"
#include "sched_interp.h"
#include "test_util.h"

#define BIG_COUNT 100003u

static const int rank_counts[] = {1, 2, 3, 5, 8, 16};

/* ---------------------------------------------------------- helpers --- */

static void failf(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fail_msg("%s", msg);
}

static const char *case_name(const char *algo, const hccn_coll_args_t *a,
                             int inplace, unsigned long long seed)
{
    static char buf[160];
    snprintf(buf, sizeof(buf),
             "%s %s p=%d count=%llu esize=%zu root=%d chunk=%llu %s seed=%llu",
             algo, hccn_coll_name(a->coll), a->nranks,
             (unsigned long long)a->count, a->esize, a->root,
             (unsigned long long)a->chunk_bytes,
             inplace ? "in-place" : "out-of-place", seed);
    return buf;
}

static int is_rooted(hccn_coll_t c)
{
    return c == HCCN_COLL_BROADCAST || c == HCCN_COLL_REDUCE ||
           c == HCCN_COLL_SCATTER || c == HCCN_COLL_GATHER;
}

/* The fixed-size collective a v-collective without count arrays is
 * (hierarchy/coll.h); the references below are written for those. */
static hccn_coll_args_t as_fixed(const hccn_coll_args_t *a)
{
    hccn_coll_args_t f = *a;
    if (a->coll == HCCN_COLL_ALLTOALLV)
        f.coll = HCCN_COLL_ALLTOALL;
    else if (a->coll == HCCN_COLL_ALLGATHERV)
        f.coll = HCCN_COLL_ALLGATHER;
    else if (a->coll == HCCN_COLL_REDUCE_SCATTERV)
        f.coll = HCCN_COLL_REDUCE_SCATTER;
    return f;
}

static int has_inplace(hccn_coll_t c)
{
    hccn_coll_args_t a = {.coll = c};
    c = as_fixed(&a).coll;
    return c == HCCN_COLL_ALLREDUCE || c == HCCN_COLL_BROADCAST ||
           c == HCCN_COLL_REDUCE || c == HCCN_COLL_REDUCE_SCATTER ||
           c == HCCN_COLL_ALLGATHER;
}

/* Elementwise wrapping integer sum of 1- or 4-byte elements. */
static void reduce_sum(void *dst, const void *a, const void *b, size_t bytes,
                       void *ctx)
{
    size_t e = *(const size_t *)ctx;
    unsigned char *d = dst;
    const unsigned char *x = a, *y = b;
    for (size_t i = 0; i < bytes; i += e) {
        if (e == 1) {
            d[i] = (unsigned char)(x[i] + y[i]);
        } else {
            uint32_t u, v;
            memcpy(&u, x + i, 4);
            memcpy(&v, y + i, 4);
            u += v;
            memcpy(d + i, &u, 4);
        }
    }
}

/* Element i of rank q's SEND: random int32, or int8 in [100, 127] so that
 * sums wrap around. */
static uint32_t input(size_t esize, int q, uint64_t i)
{
    unsigned long long st = ((unsigned long long)q << 40) ^ i;
    uint32_t v = (uint32_t)test_rand_next(&st);
    return esize == 1 ? 100u + v % 28u : v;
}

static uint32_t get(const unsigned char *p, size_t esize, uint64_t i)
{
    if (esize == 1)
        return p[i];
    uint32_t v;
    memcpy(&v, p + 4 * i, 4);
    return v;
}

static void put(unsigned char *p, size_t esize, uint64_t i, uint32_t v)
{
    if (esize == 1)
        p[i] = (unsigned char)v;
    else
        memcpy(p + 4 * i, &v, 4);
}

static uint32_t sum_at(const hccn_coll_args_t *a, uint64_t i)
{
    uint32_t s = 0;
    for (int q = 0; q < a->nranks; q++)
        s += input(a->esize, q, i);
    return a->esize == 1 ? (s & 0xffu) : s;
}

/* Expected RECV element i on rank r; 0 when r has no RECV. */
static uint32_t expected(const hccn_coll_args_t *a, int r, uint64_t i)
{
    uint64_t c = a->count;
    switch (a->coll) {
    case HCCN_COLL_ALLREDUCE:
    case HCCN_COLL_REDUCE:
        return sum_at(a, i);
    case HCCN_COLL_REDUCE_SCATTER:
        return sum_at(a, (uint64_t)r * c + i);
    case HCCN_COLL_ALLGATHER:
    case HCCN_COLL_GATHER:
        return input(a->esize, (int)(i / c), i % c);
    case HCCN_COLL_BROADCAST:
        return input(a->esize, a->root, i);
    case HCCN_COLL_ALLTOALL:
        return input(a->esize, (int)(i / c), (uint64_t)r * c + i % c);
    case HCCN_COLL_SCATTER:
        return input(a->esize, a->root, (uint64_t)r * c + i);
    default:
        return 0;
    }
}

/* The algorithms whose formulas this file knows; rows added to the table
 * later are still run and checked against the reference. */
static int is_flat(const char *algo)
{
    return strcmp(algo, "ring") == 0 || strcmp(algo, "mesh") == 0 ||
           strcmp(algo, "linear") == 0;
}

/* ------------------------------------------------------ one run case --- */

typedef struct {
    sched_interp_bufs_t *b;
    unsigned char **mem;  /* per rank: SEND (or the in-place buffer) */
    unsigned char **mem2; /* per rank: RECV out of place */
    uint64_t *sb, *rb;    /* per rank: SEND and RECV bytes */
    uint64_t *soff;       /* in place: where SEND lies in mem */
} bufs_t;

static void bufs_free(bufs_t *B, int p)
{
    for (int r = 0; r < p; r++) {
        free(B->mem[r]);
        free(B->mem2[r]);
    }
    free(B->b);
    free(B->mem);
    free(B->mem2);
    free(B->sb);
    free(B->rb);
    free(B->soff);
}

/* Lays out rank r's buffers: out of place, SEND and RECV apart; in place,
 * one buffer holding both as the collective's in-place form says. SEND is
 * filled with the rank's input, everything else with 0xEE. */
static void bufs_setup_rank(bufs_t *B, const hccn_coll_args_t *a, int r,
                            int inplace)
{
    uint64_t sb, rb, one = a->count * a->esize;
    hccn_coll_buf_bytes(a, r, &sb, &rb);
    B->sb[r] = sb;
    B->rb[r] = rb;
    uint64_t size = inplace ? (sb > rb ? sb : rb) : sb;
    if (inplace && a->coll != HCCN_COLL_REDUCE_SCATTER &&
        a->coll != HCCN_COLL_ALLGATHER && size < one)
        size = one; /* broadcast non-root, reduce non-root */
    B->mem[r] = malloc(size + 1);
    memset(B->mem[r], 0xEE, size + 1);
    unsigned char *recv = B->mem[r], *send = B->mem[r];
    if (!inplace) {
        B->mem2[r] = malloc(rb + 1);
        memset(B->mem2[r], 0xEE, rb + 1);
        recv = B->mem2[r];
    } else if (a->coll == HCCN_COLL_REDUCE_SCATTER) {
        recv = B->mem[r] + (uint64_t)r * one;
    } else if (a->coll == HCCN_COLL_ALLGATHER) {
        send = B->mem[r] + (uint64_t)r * one;
    }
    B->soff[r] = (uint64_t)(send - B->mem[r]);
    for (uint64_t i = 0; i < sb / a->esize; i++)
        put(send, a->esize, i, input(a->esize, r, i));
    B->b[r] = (sched_interp_bufs_t){sb ? send : NULL, sb, rb ? recv : NULL,
                                    rb};
}

static void bufs_setup(bufs_t *B, const hccn_coll_args_t *a, int inplace)
{
    size_t p = (size_t)a->nranks;
    B->b = calloc(p, sizeof(*B->b));
    B->mem = calloc(p, sizeof(*B->mem));
    B->mem2 = calloc(p, sizeof(*B->mem2));
    B->sb = calloc(p, sizeof(*B->sb));
    B->rb = calloc(p, sizeof(*B->rb));
    B->soff = calloc(p, sizeof(*B->soff));
    for (int r = 0; r < a->nranks; r++)
        bufs_setup_rank(B, a, r, inplace);
}

/* RECV holds the reference; out of place, SEND is untouched. */
static void check_results(const bufs_t *B, const hccn_coll_args_t *a,
                          int inplace, const char *name)
{
    for (int r = 0; r < a->nranks; r++) {
        const sched_interp_bufs_t *b = &B->b[r];
        for (uint64_t i = 0; i < B->rb[r] / a->esize; i++) {
            uint32_t got = get(b->recv, a->esize, i);
            uint32_t want = expected(a, r, i);
            if (got != want)
                failf("%s: rank %d RECV[%llu] = %u, expected %u", name, r,
                      (unsigned long long)i, got, want);
        }
        if (inplace && B->rb[r] > 0)
            continue;
        for (uint64_t i = 0; i < B->sb[r] / a->esize; i++)
            if (get(b->send, a->esize, i) != input(a->esize, r, i))
                failf("%s: rank %d SEND[%llu] was modified", name, r,
                      (unsigned long long)i);
    }
}

/* Bytes rank r sends, per algorithm (docs/algorithms.md); -1: unknown. */
static long long wire_bytes(const char *algo, const hccn_coll_args_t *a,
                            int r)
{
    int p = a->nranks, root = a->root;
    long long n = (long long)(a->count * a->esize), e = (long long)a->esize;
    long long q = (long long)a->count / p, rem = (long long)a->count % p;
#define BLK(i) ((q + ((i) % p < rem ? 1 : 0)) * e)
    if (!is_flat(algo))
        return -1;
    if (p == 1 || a->count == 0)
        return 0;
    switch (a->coll) {
    case HCCN_COLL_ALLREDUCE:
        if (strcmp(algo, "ring") == 0)     /* equal blocks, the tail raw */
            return (2 * q + rem) * (p - 1) * e;
        return n - BLK(r) + (p - 1) * BLK(r);
    case HCCN_COLL_REDUCE_SCATTER:
    case HCCN_COLL_ALLGATHER:
    case HCCN_COLL_ALLTOALL:
        return (p - 1) * n;
    case HCCN_COLL_BROADCAST:
        if (strcmp(algo, "ring") == 0)
            return r == (root + p - 1) % p ? 0 : n;
        return r == root ? (p - 1) * n : 0;
    case HCCN_COLL_SCATTER:
        return r == root ? (p - 1) * n : 0;
    case HCCN_COLL_REDUCE:
    case HCCN_COLL_GATHER:
        return r == root ? 0 : n;
    default:
        return 0;
    }
#undef BLK
}

/* Every step has a phase, every rank's bytes sent match the formula. */
static void check_shape(const hccn_sched_t *s, const char *algo,
                        const hccn_coll_args_t *a, const char *name)
{
    char why[256];
    if (hccn_sched_validate(s, why, sizeof(why)) != 0)
        failf("%s: invalid schedule: %s", name, why);
    if (strcmp(s->algo, algo) != 0)
        failf("%s: schedule names algorithm '%s'", name, s->algo);
    for (int r = 0; r < s->nranks; r++) {
        for (uint32_t i = 0; i < s->ranks[r].nsteps; i++)
            if (s->ranks[r].steps[i].phase == 0)
                failf("%s: rank %d step %u has no phase", name, r, i);
        if (a->count == 0 && a->coll != HCCN_COLL_BARRIER &&
            s->ranks[r].nsteps != 0)
            failf("%s: count 0 but rank %d has steps", name, r);
        long long want = wire_bytes(algo, a, r);
        long long got = (long long)sched_interp_bytes_sent(s, r);
        if (want >= 0 && got != want)
            failf("%s: rank %d sends %lld bytes, expected %lld", name, r,
                  got, want);
    }
}

/* Builds, checks and runs one case; returns 0, or 1 when the algorithm
 * (not one of the three specified here) declined the arguments. */
static int run_case(const hccn_algo_t *algo, const hccn_coll_args_t *a,
                    int inplace, unsigned long long seed)
{
    const char *name = case_name(algo->name, a, inplace, seed);
    hccn_sched_t *s = algo->build(a);
    if (s == NULL) {
        if (is_flat(algo->name))
            failf("%s: builder returned NULL", name);
        return 1;
    }
    hccn_coll_args_t fixed = as_fixed(a);
    check_shape(s, algo->name, &fixed, name);
    bufs_t B;
    bufs_setup(&B, &fixed, inplace);
    size_t esize = a->esize;
    sched_interp_opts_t o = {reduce_sum, &esize, seed, 1};
    char why[512];
    if (sched_interp_run(s, B.b, &o, why, sizeof(why)) != 0)
        failf("%s: %s", name, why);
    check_results(&B, &fixed, inplace, name);
    bufs_free(&B, a->nranks);
    hccn_sched_free(s);
    return 0;
}

/* All counts, roots, placements and (for small counts) shuffled orders of
 * one algorithm and collective at p ranks. */
static void sweep(const hccn_algo_t *algo, hccn_coll_t coll, int p,
                  size_t esize)
{
    uint64_t counts[] = {0, 1, 7, p <= 5 ? BIG_COUNT : 1003};
    int roots[] = {0, p - 1, p / 2};
    int nroots = is_rooted(coll) ? (p > 2 ? 3 : p) : 1;
    for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
        for (int ri = 0; ri < nroots; ri++) {
            hccn_coll_args_t a = {.coll = coll, .nranks = p,
                                  .count = counts[ci], .esize = esize,
                                  .root = roots[ri]};
            int nseeds = counts[ci] <= 7 ? 3 : 1;
            for (int inplace = 0; inplace <= has_inplace(coll); inplace++)
                for (int sd = 0; sd < nseeds; sd++)
                    run_case(algo, &a, inplace, (unsigned long long)sd);
        }
    }
}

typedef struct {
    const hccn_algo_t *algo;
    hccn_coll_t coll;
} pair_t;

static void test_algo_coll(void **state)
{
    const pair_t *pc = *state;
    for (size_t i = 0; i < sizeof(rank_counts) / sizeof(int); i++)
        sweep(pc->algo, pc->coll, rank_counts[i], 4);
}

/* Reductions of int8 data whose sums wrap around. */
static void test_int8_wraparound(void **state)
{
    (void)state;
    const hccn_coll_t colls[] = {HCCN_COLL_ALLREDUCE,
                                 HCCN_COLL_REDUCE_SCATTER, HCCN_COLL_REDUCE};
    for (const hccn_algo_t *al = hccn_hier_algos(); al->name; al++)
        for (size_t c = 0; c < 3; c++) {
            if (!(al->colls & 1u << colls[c]))
                continue;
            for (int p = 2; p <= 16; p *= 2) {
                hccn_coll_args_t a = {.coll = colls[c], .nranks = p,
                                      .count = 37, .esize = 1, .root = 1};
                run_case(al, &a, 0, 0);
                run_case(al, &a, 1, 1);
            }
        }
}

static uint32_t count_kind(const hccn_sched_t *s, int rank, int kind)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->ranks[rank].nsteps; i++)
        n += s->ranks[rank].steps[i].kind == kind;
    return n;
}

/* Ring broadcast and reduce: chunk sizes round down to whole elements (at
 * least one), 0 means 1 MiB, and the data survives any chunking. */
static void test_ring_chunks(void **state)
{
    (void)state;
    const hccn_algo_t *ring = hccn_hier_algo_find("ring");
    assert_non_null(ring);
    const struct {
        uint64_t count, chunk;
        uint32_t nchunks;
    } cases[] = {
        {100, 12, 34}, {100, 10, 50}, {100, 1, 100}, {100, 400, 1},
        {100, 0, 1},   {300000, 0, 2}, {5, 4096, 1},
    };
    const hccn_coll_t colls[] = {HCCN_COLL_BROADCAST, HCCN_COLL_REDUCE};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        for (int c = 0; c < 2; c++)
            for (int p = 2; p <= 5; p++) {
                hccn_coll_args_t a = {.coll = colls[c], .nranks = p,
                                      .count = cases[i].count, .esize = 4,
                                      .root = p - 2,
                                      .chunk_bytes = cases[i].chunk};
                run_case(ring, &a, 0, 0);
                run_case(ring, &a, 1, (unsigned long long)p);
                hccn_sched_t *s = ring->build(&a);
                int first = c == 0 ? a.root : (a.root + 1) % p;
                assert_int_equal(count_kind(s, first, HCCN_STEP_SEND),
                                 cases[i].nchunks);
                hccn_sched_free(s);
            }
}

/* ----------------------------------------------------- timing model --- */

/* ------------------------------------------------ ring float order --- */

/* Floats of exponents -10 .. 10, so that the order of a sum shows. */
static float fval(int r, uint64_t i)
{
    uint32_t u = input(4, r, i);
    return ldexpf((float)(u & 0xffffff) / 16777216.0f + 1.0f,
                  (int)((u >> 24) % 21) - 10) * ((u >> 23) & 1 ? -1 : 1);
}

static uint32_t fbits(int r, uint64_t i)
{
    float f = fval(r, i);
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* Ring allreduce of floats, counts that p divides and counts that leave a
 * tail: every rank gets the same bits, and they are docs/algorithms.md's
 * reduction orders, summed here serially: block j's element as
 * ((x_j + x_{j+1}) + ...) + x_{j-1}, a tail element as ((x_0 + x_1) +
 * ...) + x_{p-1}. Shuffled execution order, in and out of place. */
static void test_ring_float_order(void **state)
{
    (void)state;
    const hccn_algo_t *ring = hccn_hier_algo_find("ring");
    const int ps[] = {2, 3, 5, 8};
    const uint64_t counts[] = {1, 7, 24, 1003};
    for (size_t pi = 0; pi < 4; pi++)
        for (size_t ci = 0; ci < 4; ci++)
            for (int inplace = 0; inplace <= 1; inplace++) {
                int p = ps[pi];
                hccn_coll_args_t a = {.coll = HCCN_COLL_ALLREDUCE,
                                      .nranks = p, .count = counts[ci],
                                      .esize = 4};
                const char *name = case_name("ring", &a, inplace, 7);
                uint64_t q = a.count / (uint64_t)p;
                hccn_sched_t *sch = ring->build(&a);
                assert_non_null(sch);
                sched_interp_host_t h;
                sched_interp_host_setup(&h, &a, inplace, fbits);
                sched_interp_opts_t o = {sched_interp_sum_f32, NULL, 7, 1};
                char why[256];
                if (sched_interp_run(sch, h.b, &o, why, sizeof(why)) != 0)
                    failf("%s: %s", name, why);
                for (uint64_t i = 0; i < a.count; i++) {
                    int j = q > 0 && i < q * (uint64_t)p ? (int)(i / q) : 0;
                    float want = fval(j, i);
                    for (int k = 1; k < p; k++)
                        want += fval((j + k) % p, i);
                    for (int r = 0; r < p; r++) {
                        float got;
                        memcpy(&got, (const char *)h.b[r].recv + 4 * i, 4);
                        if (memcmp(&got, &want, 4) != 0)
                            failf("%s: rank %d element %llu is %a, the "
                                  "order gives %a", name, r,
                                  (unsigned long long)i, (double)got,
                                  (double)want);
                    }
                }
                sched_interp_host_free(&h, p);
                hccn_sched_free(sch);
            }
}

typedef sched_interp_timing_t timing_t;

/* The closed forms of docs/algorithms.md (B = bw, R = reduce_bw, M =
 * mem_bw; copy = the own-block COPY, n/M). */
static double ring_chain_time(const hccn_coll_args_t *a, const timing_t *t,
                              double n, double copy)
{
    double p = a->nranks;
    double c = a->chunk_bytes ? (double)a->chunk_bytes : 1048576.0;
    c -= fmod(c, (double)a->esize);
    c = c < (double)a->esize ? (double)a->esize : c;
    c = c < n ? c : n;
    double m = ceil(n / c), rest = n - (m - 1) * c;
    if (a->coll == HCCN_COLL_BROADCAST)
        return fmax((p - 1) * t->alpha + (n + (p - 2) * c) / t->bw, copy);
    double B = t->bw, R = t->reduce_bw, w = fmax(1 / B, 1 / R);
    return (p - 1) * t->alpha + (p - 1) * c / B + (p - 2) * c / R +
           (m - 2) * c * w + rest / R + fmax(c / R, rest / B);
}

static double closed_form(const char *algo, const hccn_coll_args_t *a,
                          const timing_t *t)
{
    double al = t->alpha, B = t->bw, R = t->reduce_bw, p = a->nranks;
    double n = (double)(a->count * a->esize);
    double bm = (double)((a->count + a->nranks - 1) / a->nranks * a->esize);
    double copy = t->mem_bw > 0 ? n / t->mem_bw : 0.0;
    hccn_coll_t c = a->coll;
    if (a->nranks == 1 || (a->count == 0 && c != HCCN_COLL_BARRIER))
        return c == HCCN_COLL_BARRIER || a->count == 0 ? 0.0 : copy;
    if (strcmp(algo, "ring") == 0) {
        if (c == HCCN_COLL_ALLREDUCE && a->count % a->nranks == 0)
            return 2 * (p - 1) * (al + bm / B) + (p - 1) * bm / R;
        if (c == HCCN_COLL_ALLREDUCE) {     /* equal blocks and a tail */
            double q = (double)(a->count / a->nranks * a->esize);
            double tb = (double)(a->count % a->nranks * a->esize);
            double rs = q > 0 ? (p - 1) * (al + q / B + q / R) : 0.0;
            double m = t->mem_bw > 0 ? tb / t->mem_bw : 0.0;
            return rs + (p - 1) * (al + (q + tb) / B) + m + (p - 1) * tb / R;
        }
        if (c == HCCN_COLL_REDUCE_SCATTER)
            return (p - 1) * (al + n / B + n / R);
        if (c == HCCN_COLL_ALLGATHER)
            return fmax((p - 1) * (al + n / B), copy);
        return ring_chain_time(a, t, n, copy);
    }
    if (strcmp(algo, "mesh") == 0) {
        if (c == HCCN_COLL_ALLREDUCE)
            return 2 * al + 2 * bm / B + (p - 1) * bm / R;
        if (c == HCCN_COLL_REDUCE_SCATTER || c == HCCN_COLL_REDUCE)
            return al + n / B + (p - 1) * n / R;
        if (c == HCCN_COLL_BARRIER)
            return al;
        return fmax(al + n / B, copy);
    }
    /* linear */
    if (c == HCCN_COLL_BROADCAST || c == HCCN_COLL_SCATTER)
        return fmax(al + (p - 1) * n / B, copy);
    if (c == HCCN_COLL_REDUCE)
        return (p - 1) * (al + n / B + n / R);
    if (c == HCCN_COLL_BARRIER)
        return p * al;
    return fmax((p - 1) * (al + n / B), copy);
}

/* One schedule, evaluated in the timing model, against its closed form
 * under parameter sets where links, reductions or copies dominate. */
static void time_case(const hccn_algo_t *al, const hccn_coll_args_t *a)
{
    static const timing_t params[] = {
        {1.5e-6, 2.0e10, 5.0e10, 1.0e11}, /* links are the bottleneck */
        {3.0e-6, 4.0e10, 1.0e10, 0.0},    /* reductions are, copies free */
        {1.0e-6, 1.0e10, 2.0e10, 1.0e8},  /* copies are slow */
    };
    hccn_sched_t *s = al->build(a);
    assert_non_null(s);
    for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++) {
        double got = sched_interp_time(s, &params[i]);
        hccn_coll_args_t fixed = as_fixed(a);
        double want = closed_form(al->name, &fixed, &params[i]);
        if (got < 0 || test_rel_diff(got, want) > 1e-9)
            failf("%s: simulated %.12g s, closed form %.12g s (params %zu)",
                  case_name(al->name, a, 0, 0), got, want, i);
    }
    hccn_sched_free(s);
}

static void time_algo(const char *name)
{
    const hccn_algo_t *al = hccn_hier_algo_find(name);
    assert_non_null(al);
    const uint64_t counts[] = {0, 1, 7, 1000, 100003, 1 << 20};
    const uint64_t chunks[] = {0, 4096, 12};
    for (int c = 0; c < HCCN_COLL_COUNT; c++) {
        if (!(al->colls & 1u << c))
            continue;
        int chained = strcmp(name, "ring") == 0 &&
                      (c == HCCN_COLL_BROADCAST || c == HCCN_COLL_REDUCE);
        for (int p = 1; p <= 8; p++)
            for (size_t ci = 0; ci < 6; ci++)
                for (size_t k = 0; k < (chained ? 3u : 1u); k++) {
                    if (chunks[k] && counts[ci] * 4 / chunks[k] > 4096)
                        continue; /* too many chunks to be quick */
                    hccn_coll_args_t a = {.coll = (hccn_coll_t)c,
                                          .nranks = p, .count = counts[ci],
                                          .esize = 4, .root = p / 2,
                                          .chunk_bytes = chunks[k]};
                    time_case(al, &a);
                }
    }
}

static void test_time_ring(void **state)
{
    (void)state;
    time_algo("ring");
}

static void test_time_mesh(void **state)
{
    (void)state;
    time_algo("mesh");
}

static void test_time_linear(void **state)
{
    (void)state;
    time_algo("linear");
}

/* ------------------------------------------------ interpreter checks --- */

static int run_raw(const hccn_sched_t *s, sched_interp_bufs_t *b,
                   int races, char *why, size_t len)
{
    size_t esize = 4;
    sched_interp_opts_t o = {reduce_sum, &esize, 0, races};
    return sched_interp_run(s, b, &o, why, len);
}

/* Two ranks that each wait for the other's message before sending theirs
 * (built by hand: the builder API cannot express a cycle). */
static void test_interp_stuck(void **state)
{
    (void)state;
    hccn_sched_t *s = hccn_sched_new(2, "cycle");
    assert_non_null(s);
    for (int r = 0; r < 2; r++) {
        hccn_step_t rcv = {.kind = HCCN_STEP_RECV, .dst_buf = HCCN_BUF_RECV,
                           .peer = 1 - r, .xfer = (uint32_t)(1 - r),
                           .bytes = 4};
        hccn_step_t snd = {.kind = HCCN_STEP_SEND, .peer = 1 - r,
                           .xfer = (uint32_t)r, .bytes = 4};
        uint32_t dep = hccn_sched_add(s, r, &rcv, NULL, 0);
        hccn_sched_add(s, r, &snd, &dep, 1);
    }
    s->xfer_send = malloc(2 * sizeof(hccn_sched_ref_t));
    s->xfer_recv = malloc(2 * sizeof(hccn_sched_ref_t));
    for (int x = 0; x < 2; x++) {
        s->xfer_send[x] = (hccn_sched_ref_t){x, 1};
        s->xfer_recv[x] = (hccn_sched_ref_t){1 - x, 0};
    }
    s->nxfers = s->capxfers = 2;
    assert_int_equal(hccn_sched_validate(s, NULL, 0), 0);
    int32_t v[2][2] = {{1, 2}, {3, 4}};
    sched_interp_bufs_t b[2] = {{v[0], 4, v[0] + 1, 4},
                                {v[1], 4, v[1] + 1, 4}};
    char why[256];
    assert_int_equal(run_raw(s, b, 1, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "stuck"));
    hccn_sched_free(s);
}

/* Ranks 0 and 1 swap their RECV words, each overwriting the word it sends
 * without waiting for its SEND: a race, and (as the receiver reads at run
 * time) the second receiver gets the already-overwritten word. */
static void test_interp_exchange_hazard(void **state)
{
    (void)state;
    hccn_sched_t *s = hccn_sched_new(2, "swap");
    assert_non_null(s);
    for (int r = 0; r < 2; r++)
        hccn_sched_xfer(s, r, HCCN_BUF_RECV, 0, NULL, 0, 1 - r,
                        HCCN_BUF_RECV, 0, NULL, 0, 4, 0, HCCN_BUF_SEND, 0,
                        NULL, NULL);
    int32_t v[2] = {10, 20};
    sched_interp_bufs_t b[2] = {{NULL, 0, &v[0], 4}, {NULL, 0, &v[1], 4}};
    char why[256];
    assert_int_equal(run_raw(s, b, 1, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "race on rank"));
    assert_int_equal(run_raw(s, b, 0, why, sizeof(why)), 0);
    assert_true(v[0] == v[1]); /* a correct swap would give 20, 10 */
    hccn_sched_free(s);
}

/* Out-of-range accesses and writes to SEND are reported. */
static void test_interp_bounds(void **state)
{
    (void)state;
    int32_t v[4] = {0};
    sched_interp_bufs_t b[1] = {{&v[0], 8, &v[2], 8}};
    char why[256];
    hccn_sched_t *s = hccn_sched_new(1, "oob");
    hccn_sched_local(s, 0, 0, HCCN_BUF_SEND, 4, HCCN_BUF_RECV, 0, 8, NULL, 0);
    assert_int_equal(run_raw(s, b, 0, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "out of range"));
    hccn_sched_free(s);
    s = hccn_sched_new(1, "wsend");
    hccn_sched_local(s, 0, 0, HCCN_BUF_RECV, 0, HCCN_BUF_SEND, 0, 4, NULL, 0);
    assert_int_equal(run_raw(s, b, 0, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "writes its SEND"));
    hccn_sched_free(s);
}

/* ---------------------------------------------------------- the table --- */

static void test_table(void **state)
{
    (void)state;
    const char *names[] = {"allreduce", "reduce_scatter", "allgather",
                           "broadcast", "reduce",         "alltoall",
                           "scatter",   "gather",         "barrier",
                           "alltoallv", "allgatherv",     "reduce_scatterv"};
    for (int c = 0; c < HCCN_COLL_COUNT; c++)
        assert_string_equal(hccn_coll_name((hccn_coll_t)c), names[c]);
    for (const hccn_algo_t *a = hccn_hier_algos(); a->name; a++) {
        assert_ptr_equal(hccn_hier_algo_find(a->name), a);
        assert_non_null(a->description);
        assert_non_null(a->build);
        assert_int_equal(a->colls >> HCCN_COLL_COUNT, 0);
    }
    assert_null(hccn_hier_algo_find("no-such-algorithm"));
    assert_null(hccn_hier_algo_find(NULL));
    assert_non_null(hccn_hier_algo_find("ring"));
    assert_non_null(hccn_hier_algo_find("mesh"));
    assert_non_null(hccn_hier_algo_find("linear"));

    hccn_coll_args_t a = {.coll = HCCN_COLL_GATHER, .nranks = 4, .count = 5,
                          .esize = 2, .root = 1};
    uint64_t sb, rb;
    hccn_coll_buf_bytes(&a, 1, &sb, &rb);
    assert_true(sb == 10 && rb == 40);
    hccn_coll_buf_bytes(&a, 2, &sb, &rb);
    assert_true(sb == 10 && rb == 0);
    a.coll = HCCN_COLL_REDUCE_SCATTER;
    hccn_coll_buf_bytes(&a, 3, &sb, &rb);
    assert_true(sb == 40 && rb == 10);
    a.coll = HCCN_COLL_BARRIER;
    hccn_coll_buf_bytes(&a, 0, &sb, &rb);
    assert_true(sb == 0 && rb == 0);
}

/* Builders decline what they do not do and bad arguments. */
static void test_unsupported(void **state)
{
    (void)state;
    for (const hccn_algo_t *al = hccn_hier_algos(); al->name; al++) {
        for (int c = 0; c < HCCN_COLL_COUNT; c++) {
            hccn_coll_args_t a = {.coll = (hccn_coll_t)c, .nranks = 4,
                                  .count = 8, .esize = 4, .root = 0};
            hccn_sched_t *s = al->build(&a);
            if (!(al->colls & 1u << c))
                assert_null(s);
            hccn_sched_free(s);
            if (!(al->colls & 1u << c))
                continue;
            a.esize = 0;
            assert_null(al->build(&a));
            a.esize = 4;
            a.nranks = 0;
            assert_null(al->build(&a));
            a.nranks = 4;
            a.count = UINT64_MAX / 2;
            assert_null(al->build(&a));
            a.count = 8;
            if (is_rooted((hccn_coll_t)c)) {
                a.root = 4;
                assert_null(al->build(&a));
                a.root = -1;
                assert_null(al->build(&a));
            }
        }
    }
}

/* ------------------------------------------------------------- main --- */

int main(void)
{
    size_t npairs = 0;
    for (const hccn_algo_t *a = hccn_hier_algos(); a->name; a++)
        for (int c = 0; c < HCCN_COLL_COUNT; c++)
            npairs += (a->colls >> c) & 1u;
    pair_t *pairs = calloc(npairs, sizeof(*pairs));
    char (*names)[64] = calloc(npairs, sizeof(*names));
    static const struct CMUnitTest fixed[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_unsupported),
        cmocka_unit_test(test_interp_stuck),
        cmocka_unit_test(test_interp_exchange_hazard),
        cmocka_unit_test(test_interp_bounds),
        cmocka_unit_test(test_int8_wraparound),
        cmocka_unit_test(test_ring_chunks),
        cmocka_unit_test(test_ring_float_order),
        cmocka_unit_test(test_time_ring),
        cmocka_unit_test(test_time_mesh),
        cmocka_unit_test(test_time_linear),
    };
    size_t nfixed = sizeof(fixed) / sizeof(fixed[0]);
    struct CMUnitTest *tests = calloc(npairs + nfixed, sizeof(*tests));
    if (pairs == NULL || names == NULL || tests == NULL)
        return 1;
    memcpy(tests, fixed, sizeof(fixed));
    size_t n = nfixed;
    for (const hccn_algo_t *a = hccn_hier_algos(); a->name; a++)
        for (int c = 0; c < HCCN_COLL_COUNT; c++) {
            if (!((a->colls >> c) & 1u))
                continue;
            size_t k = n - nfixed;
            pairs[k] = (pair_t){a, (hccn_coll_t)c};
            snprintf(names[k], sizeof(names[k]), "%s_%s", a->name,
                     hccn_coll_name((hccn_coll_t)c));
            tests[n] = (struct CMUnitTest){names[k], test_algo_coll, NULL,
                                           NULL, &pairs[k]};
            n++;
        }
    int rc = _cmocka_run_group_tests("algos", tests, n, NULL, NULL);
    free(tests);
    free(names);
    free(pairs);
    return rc;
}
