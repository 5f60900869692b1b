/*
 * Closed-form times of the composed and logarithmic algorithms (hier,
 * hier_rr, hier_mh, hd, rdouble, tree, bruck, pairwise), as given in
 * docs/algorithms.md: against the uncontended event-driven evaluation of
 * each schedule (sched_interp_time), and for the hierarchical ones with
 * each level's own latency and bandwidth against the timing engine on a
 * two-level cluster (N nodes of L NPUs, a mesh inside, a NIC per NPU).
 * Results and schedule shapes are checked in test_algos_hier.c.
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

#include "device_sim/engine.h"
#include "device_sim/topo.h"
#include "hierarchy/coll.h"
#include "sched_interp.h"
#include "test_engine.h"
#include "test_util.h"
#include "test_views.h"


static const char *const flat_algos[] = {"hd", "rdouble", "tree", "bruck",
                                         "pairwise"};
/* The named rows and every other two-level composition (algo_levels.c). */
static const char *const hier_algos[] = {
    "hier", "hier_rr", "hier_mh", "hier(ring,mesh)", "hier(ring,hd)",
    "hier(mesh,mesh)", "hier(hd,ring)", "hier(hd,mesh)", "hier(hd,hd)"};
#define NHIER (sizeof(hier_algos) / sizeof(hier_algos[0]))

static void failf(const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fail_msg("%s", msg);
}


static const char *case_name(const char *algo, const hccn_coll_args_t *a,
                             const char *shape, int inplace)
{
    static char buf[200];
    snprintf(buf, sizeof(buf),
             "%s %s p=%d [%s] count=%llu root=%d chunk=%llu %s", algo,
             hccn_coll_name(a->coll), a->nranks, shape,
             (unsigned long long)a->count, a->root,
             (unsigned long long)a->chunk_bytes,
             inplace ? "in-place" : "out-of-place");
    return buf;
}

/* ---------------------------------------------------- closed forms --- */

/* alpha (s) and B (bytes/s) of level 0 (inside a node) and level 1
 * (between nodes); R = reduce bandwidth, M = copy bandwidth (0: free). */
typedef struct {
    double al[2], B[2], R, M;
} tm_t;

static double copy_t(const tm_t *t, double bytes)
{
    return t->M > 0 ? bytes / t->M : 0.0;
}

static int log2i(int p)
{
    int k = 0;
    while ((2 << k) <= p)
        k++;
    return k;
}

/* Bytes of blocks [0, k) when count elements are split into parts. */
static double first_blocks(uint64_t count, int parts, int k)
{
    uint64_t q = count / (uint64_t)parts, rem = count % (uint64_t)parts;
    uint64_t uk = (uint64_t)k;
    return 4.0 * (double)(uk * q + (uk < rem ? uk : rem));
}

/* Ring and mesh (docs/algorithms.md) on level lv; b = one block. */
static double ring_chain(const tm_t *t, int lv, int p, double n,
                         uint64_t chunk, int reduce)
{
    double al = t->al[lv], B = t->B[lv], R = t->R;
    double c = chunk ? (double)(chunk - chunk % 4) : 1048576.0;
    c = c < 4 ? 4 : c;
    c = c < n ? c : n;
    double m = ceil(n / c), rest = n - (m - 1) * c;
    if (!reduce)
        return (p - 1) * al + (n + (p - 2) * c) / B;
    double w = fmax(1 / B, 1 / R);
    return (p - 1) * al + (p - 1) * c / B + (p - 2) * c / R +
           (m - 2) * c * w + rest / R + fmax(c / R, rest / B);
}

static double level_time(const tm_t *t, int lv, const char *algo,
                         hccn_coll_t coll, int p, uint64_t count,
                         uint64_t chunk, double copy)
{
    double al = t->al[lv], B = t->B[lv], R = t->R, b = 4.0 * (double)count;
    double bm = 4.0 * (double)((count + (uint64_t)p - 1) / (uint64_t)p);
    int mesh = strcmp(algo, "mesh") == 0;
    if (count == 0)
        return 0;
    switch (coll) {
    case HCCN_COLL_ALLREDUCE:
        if (strcmp(algo, "hd") == 0) {
            double S = 0;
            for (int j = 0; j < log2i(p); j++)
                S += first_blocks(count, p, 1 << j);
            return 2 * log2i(p) * al + S * (2 / B + 1 / R);
        }
        if (mesh || count % (uint64_t)p == 0)
            return mesh ? 2 * al + 2 * bm / B + (p - 1) * bm / R
                        : 2 * (p - 1) * (al + bm / B) + (p - 1) * bm / R;
        {   /* the ring's equal blocks, its tail beside the allgather's */
            double q = 4.0 * (double)(count / (uint64_t)p);
            double tb = 4.0 * (double)(count % (uint64_t)p);
            return (q > 0 ? (p - 1) * (al + q / B + q / R) : 0.0) +
                   (p - 1) * (al + (q + tb) / B) + copy_t(t, tb) +
                   (p - 1) * tb / R;
        }
    case HCCN_COLL_REDUCE_SCATTER:
        if (strcmp(algo, "hd") == 0)
            return log2i(p) * al + (p - 1) * b * (1 / B + 1 / R);
        return mesh ? al + b / B + (p - 1) * b / R
                    : (p - 1) * (al + b / B + b / R);
    case HCCN_COLL_ALLGATHER:
        if (strcmp(algo, "hd") == 0)
            return fmax(log2i(p) * al + (p - 1) * b / B, copy);
        return fmax(mesh ? al + b / B : (p - 1) * (al + b / B), copy);
    case HCCN_COLL_BROADCAST:
        return fmax(mesh ? al + b / B : ring_chain(t, lv, p, b, chunk, 0),
                    copy);
    case HCCN_COLL_REDUCE:
        return mesh ? al + b / B + (p - 1) * b / R
                    : ring_chain(t, lv, p, b, chunk, 1);
    default: /* mesh scatter, gather */
        return fmax(al + b / B, copy);
    }
}

typedef struct {
    const char *l0, *l1;
} levels_t;

static levels_t levels_of(const char *algo)
{
    const hccn_level_choice_t *c =
        hccn_hier_algo_levels(hccn_hier_algo_find(algo));
    if (c != NULL)
        return (levels_t){c->algo[0], c->algo[1]};
    if (strcmp(algo, "hier_rr") == 0)
        return (levels_t){"ring", "ring"};
    if (strcmp(algo, "hier_mh") == 0)
        return (levels_t){"mesh", "hd"};
    return (levels_t){"mesh", "ring"};
}

/* Hierarchical allreduce: per chunk (a multiple of L N elements) P1 =
 * level-0 reduce-scatter, P2 = level-1 allreduce, P3 = level-0 allgather;
 * level-0 phases in the order P1(0..K-1), P3(0..K-1), level-1 phases in
 * chunk order; the tail last: a level-0 allreduce, then a level-1
 * allreduce, or, where the tail does not split evenly over the N nodes,
 * an allgather across them (the mesh's on up to 16 nodes, else the
 * ring's), a copy and N - 1 reductions. */
static double hier_allreduce_time(const tm_t *t, levels_t lv,
                                  const hccn_coll_args_t *a, int N, int L)
{
    const uint64_t LN = (uint64_t)L * (uint64_t)N;
    uint64_t ce = (a->chunk_bytes ? a->chunk_bytes : 4u << 20) / 4;
    ce -= ce % LN;
    ce = ce < LN ? LN : ce;
    uint64_t main = a->count / LN * LN;
    uint64_t tail = a->count - main;
    double e1 = 0, e2 = 0, e3, t2[4096];
    size_t K = 0;
    for (uint64_t off = 0; off < main; off += ce, K++) {
        uint64_t q = (main - off < ce ? main - off : ce) / (uint64_t)L;
        e1 += level_time(t, 0, lv.l0, HCCN_COLL_REDUCE_SCATTER, L, q, 0, 0);
        e2 = fmax(e1, e2) +
             level_time(t, 1, lv.l1, HCCN_COLL_ALLREDUCE, N, q, 0, 0);
        t2[K] = e2;
    }
    e3 = e1;
    for (size_t k = 0; k < K; k++) {
        uint64_t off = k * ce;
        uint64_t q = (main - off < ce ? main - off : ce) / (uint64_t)L;
        e3 = fmax(e3, t2[k]) +
             level_time(t, 0, lv.l0, HCCN_COLL_ALLGATHER, L, q, 0, 0);
    }
    double tb = 4.0 * (double)tail;
    double top = tail % (uint64_t)N != 0
        ? level_time(t, 1, N <= 16 ? "mesh" : "ring", HCCN_COLL_ALLGATHER,
                     N, tail, 0,
                     copy_t(t, tb)) +
              copy_t(t, tb) + (N - 1) * tb / t->R
        : level_time(t, 1, lv.l1, HCCN_COLL_ALLREDUCE, N, tail, 0, 0);
    return e3 + level_time(t, 0, lv.l0, HCCN_COLL_ALLREDUCE, L, tail, 0, 0) +
           top;
}

/* The hierarchical collectives (docs/algorithms.md); for broadcast and
 * reduce only when L divides count (no tail). */
static double hier_time(const tm_t *t, const char *algo,
                        const hccn_coll_args_t *a, int N, int L)
{
    levels_t lv = levels_of(algo);
    uint64_t c = a->count, q = c / (uint64_t)L;
    double b = 4.0 * (double)c, qb = 4.0 * (double)q;
    switch (a->coll) {
    case HCCN_COLL_ALLREDUCE:
        return hier_allreduce_time(t, lv, a, N, L);
    case HCCN_COLL_REDUCE_SCATTER:
        return level_time(t, 0, lv.l0, a->coll, L, (uint64_t)N * c, 0, 0) +
               level_time(t, 1, lv.l1, a->coll, N, c, 0, 0);
    case HCCN_COLL_ALLGATHER:
        return level_time(t, 1, lv.l1, a->coll, N, c, 0, copy_t(t, b)) +
               level_time(t, 0, lv.l0, a->coll, L, (uint64_t)N * c, 0, 0);
    case HCCN_COLL_BROADCAST:
        return level_time(t, 0, "mesh", HCCN_COLL_SCATTER, L, q, 0,
                          copy_t(t, qb)) +
               level_time(t, 1, lv.l1, a->coll, N, q, a->chunk_bytes, 0) +
               level_time(t, 0, lv.l0, HCCN_COLL_ALLGATHER, L, q, 0, 0);
    default: /* reduce */
        return level_time(t, 0, lv.l0, HCCN_COLL_REDUCE_SCATTER, L, q, 0,
                          0) +
               level_time(t, 1, lv.l1, a->coll, N, q, a->chunk_bytes, 0) +
               level_time(t, 0, "mesh", HCCN_COLL_GATHER, L, q, 0,
                          copy_t(t, qb));
    }
}

/* The flat algorithms' closed forms. *exact says whether the formula is
 * the time (1), an upper bound of it (0) or not a prediction here (-1). */
static double flat_time(const char *algo, const hccn_coll_args_t *a,
                        const tm_t *t, int *exact)
{
    const int p = a->nranks, pp = 1 << log2i(p), L = log2i(p);
    const int ex = p - pp;
    double al = t->al[0], B = t->B[0], R = t->R;
    double n = 4.0 * (double)a->count, b = n, copy = copy_t(t, n);
    hccn_coll_t c = a->coll;
    *exact = 1;
    if (a->count == 0)
        return 0;
    if (p == 1)
        return copy;
    if (strcmp(algo, "pairwise") == 0)
        return fmax(al + b / B, copy);
    if (strcmp(algo, "bruck") == 0) {
        double s = 0;
        for (int d = 1; d < p; d *= 2) {
            int k = 0;
            for (int j = 1; j < p; j++)
                k += c == HCCN_COLL_ALLTOALL ? (j & d) != 0 : 0;
            if (c == HCCN_COLL_ALLGATHER)
                k = d < p - d ? d : p - d;
            s += al + k * b / B;
        }
        return fmax(s, copy);
    }
    if (strcmp(algo, "rdouble") == 0) {
        double step = al + n / B + n / R, tf = ex ? step : 0;
        if (L >= 2)
            return tf + L * step + (ex ? al + n / B : 0);
        if (p == 2)
            return fmax(al + n / B, copy) + n / R;
        return fmax(tf + step + al + n / B,
                    fmax(tf + al + n / B, copy) + n / R);
    }
    if (strcmp(algo, "hd") == 0 && c == HCCN_COLL_ALLREDUCE) {
        double s = 0;
        for (int j = 0; j < L; j++)
            s += first_blocks(a->count, pp, 1 << j);
        *exact = ex == 0 || a->count % (uint64_t)pp == 0;
        return 2 * L * al + s * (2 / B + 1 / R) +
               (ex ? 2 * al + 2 * n / B + n / R : 0);
    }
    if (strcmp(algo, "hd") == 0) {
        int rs = c == HCCN_COLL_REDUCE_SCATTER;
        double s = 0;
        for (int k = 0; k < L; k++) {
            int d = rs ? pp >> (k + 1) : 1 << k;
            double h = (d + (d < ex ? d : ex)) * b;
            s += al + h / B + (rs ? h / R : 0);
        }
        *exact = rs || ex == 0;
        if (rs)
            return s + (ex ? al + p * b / B + p * b / R +
                                 fmax(al + b / B, copy)
                           : 0);
        return fmax(s + (ex ? fmax(al + b / B, copy) + al + p * b / B : 0),
                    copy);
    }
    /* tree */
    uint64_t ck = a->chunk_bytes ? a->chunk_bytes : 1u << 20;
    double h = c == HCCN_COLL_ALLREDUCE ? 4.0 * (double)((a->count + 1) / 2)
                                        : n;
    double cb = fmin((double)ck, h), D = L;
    int perfect = ((p + 1) & p) == 0, one = cb >= h;
    if (c == HCCN_COLL_BROADCAST)
        return fmax(D * al + (n + (D - 1) * cb) / B, copy);
    if (isinf(R) && c == HCCN_COLL_REDUCE)
        return D * al + (n + (D - 1) * cb) / B;
    *exact = perfect && one ? 1 : -1;
    if (c == HCCN_COLL_REDUCE)
        return D * (al + n / B + 2 * n / R);
    return 2 * D * al + 2 * D * h / B + 2 * D * h / R;
}

static const tm_t flat_params[] = {
    {{1.5e-6, 1.5e-6}, {2.0e10, 2.0e10}, 5.0e10, 1.0e11},
    {{3.0e-6, 3.0e-6}, {4.0e10, 4.0e10}, 1.0e10, 0.0},
    {{1.0e-6, 1.0e-6}, {1.0e10, 1.0e10}, 2.0e10, 1.0e8},
    {{2.0e-6, 2.0e-6}, {2.5e10, 2.5e10}, INFINITY, 0.0},
};

/* Simulated (uncontended) time of s against a formula: equal when exact,
 * not above it when a bound. */
static void check_time(const hccn_sched_t *s, double want, int exact,
                       const tm_t *t, const char *name)
{
    sched_interp_timing_t tp = {t->al[0], t->B[0], t->R, t->M};
    double got = sched_interp_time(s, &tp);
    if (exact < 0)
        return;
    if (got < 0)
        failf("%s: links shared or no memory (%g)", name, got);
    if (exact && test_rel_diff(got, want) > 1e-9)
        failf("%s: simulated %.12g s, closed form %.12g s", name, got, want);
    if (!exact && got > want * (1 + 1e-9))
        failf("%s: simulated %.12g s above the bound %.12g s", name, got,
              want);
}

static void test_time_flat(void **state)
{
    (void)state;
    const uint64_t counts[] = {0, 1, 7, 1000, 1024, 100003};
    const uint64_t chunks[] = {0, 4096};
    for (size_t ai = 0; ai < sizeof(flat_algos) / sizeof(flat_algos[0]);
         ai++) {
        const hccn_algo_t *al = hccn_hier_algo_find(flat_algos[ai]);
        for (int c = 0; c < HCCN_COLL_COUNT; c++) {
            if (!(al->colls & 1u << c))
                continue;
            for (int p = 1; p <= 16; p++)
                for (size_t ci = 0; ci < 6; ci++)
                    for (size_t k = 0; k < 2; k++) {
                        hccn_coll_args_t a = {.coll = (hccn_coll_t)c,
                                              .nranks = p,
                                              .count = counts[ci],
                                              .esize = 4, .root = p / 2,
                                              .chunk_bytes = chunks[k]};
                        hccn_sched_t *s = hccn_hier_build(al, &a);
                        assert_non_null(s);
                        for (size_t i = 0; i < 4; i++) {
                            int exact;
                            double f = flat_time(al->name, &a,
                                                 &flat_params[i], &exact);
                            check_time(s, f, exact, &flat_params[i],
                                       case_name(al->name, &a, "flat", 0));
                        }
                        hccn_sched_free(s);
                    }
        }
    }
}

/* 0 where a level runs halving-doubling on a group that is not a power
 * of two (extra ranks fold in: level_time does not cover it). */
static int hd_exact(const char *algo, int N, int L)
{
    levels_t lv = levels_of(algo);
    return (strcmp(lv.l0, "hd") != 0 || (L & (L - 1)) == 0) &&
           (strcmp(lv.l1, "hd") != 0 || (N & (N - 1)) == 0);
}

/* Chunks of a hierarchical allreduce. */
static uint64_t hier_chunks(const hccn_coll_args_t *a, int N, int L)
{
    const uint64_t LN = (uint64_t)L * (uint64_t)N;
    uint64_t ce = (a->chunk_bytes ? a->chunk_bytes : 4u << 20) / 4;
    ce -= ce % LN;
    ce = ce < LN ? LN : ce;
    return (a->count / LN * LN + ce - 1) / ce;
}

/* How far hier_time can be trusted: 1 exact, 0 an upper bound, 2 a lower
 * bound, -1 neither. Reduce-scatter and allgather run one level-0 sub-
 * collective per node at once (levels.h), sharing links: the
 * uncontended evaluation does not apply; in the engine the closed form of
 * one sub-collective of N blocks each is exact for a mesh inside nodes and
 * an upper bound for a ring (the instances' steps interleave). Broadcast
 * and reduce: exact without a tail. Allreduce:
 * exact with one chunk or free reductions (else the P1 of chunk c+1 and
 * the P2 of chunk c queue their reductions on one NPU, which the formula
 * leaves out: it is then a lower bound). */
static int hier_exact_uncontended(const hccn_coll_args_t *a, const tm_t *t,
                                  int N, int L, const char *algo, int engine);

static int hier_exact(const hccn_coll_args_t *a, const tm_t *t, int N,
                      int L, const char *algo, int engine)
{
    /* A mesh across nodes sends N-1 blocks at once through each NIC: the
     * formula, which prices one, is then a lower bound in the engine
     * where it would be exact, and no bound where it is an upper one. */
    int contended = engine && strcmp(levels_of(algo).l1, "mesh") == 0;
    int rc = hier_exact_uncontended(a, t, N, L, algo, engine);
    return !contended ? rc : rc == 1 || rc == 2 ? 2 : -1;
}

static int hier_exact_uncontended(const hccn_coll_args_t *a, const tm_t *t,
                                  int N, int L, const char *algo, int engine)
{
    if (a->coll == HCCN_COLL_REDUCE_SCATTER ||
        a->coll == HCCN_COLL_ALLGATHER)
        return !engine ? -1 : strcmp(levels_of(algo).l0, "mesh") == 0;
    if (a->coll == HCCN_COLL_ALLREDUCE) {
        /* Every level-1 block of a chunk has the same size (chunks are a
         * multiple of L N elements), and the tail's last part is the same
         * on every node, so all nodes end each phase together. */
        int serial = hier_chunks(a, N, L) <= 1 || isinf(t->R);
        return serial ? 1 : 2;
    }
    if (a->coll == HCCN_COLL_BROADCAST || a->coll == HCCN_COLL_REDUCE)
        return a->count % (uint64_t)L == 0 ? 1 : -1;
    return 1;
}

static void test_time_hier(void **state)
{
    (void)state;
    static const int shapes[][2] = {{2, 4}, {3, 4}, {2, 8}, {4, 2}, {2, 3},
                                    {18, 2}};
    const uint64_t counts[] = {0, 1, 7, 96, 1000, 100003, 1 << 20};
    const uint64_t chunks[] = {0, 40000, 4096};
    for (size_t ai = 0; ai < NHIER; ai++) {
        const hccn_algo_t *al = hccn_hier_algo_find(hier_algos[ai]);
        assert_non_null(al);
        for (size_t si = 0; si < sizeof(shapes) / sizeof(shapes[0]); si++) {
            int N = shapes[si][0], L = shapes[si][1];
            if (!hd_exact(al->name, N, L))
                continue;
            test_view_t w;
            test_even_view(&w, N, L);
            for (int c = 0; c < HCCN_COLL_COUNT; c++)
                for (size_t ci = 0; al->colls & 1u << c && ci < 7; ci++)
                    for (size_t k = 0; k < 3; k++) {
                        hccn_coll_args_t a = {.coll = (hccn_coll_t)c,
                                              .nranks = N * L,
                                              .count = counts[ci],
                                              .esize = 4, .root = L + 1,
                                              .view = &w.v,
                                              .chunk_bytes = chunks[k]};
                        if (k > 0 && (counts[ci] < 1000 || (c != 0 &&
                                      c != HCCN_COLL_BROADCAST)))
                            continue;
                        if (k == 2 && counts[ci] > 100003)
                            continue; /* 1024 chunks: too slow */
                        hccn_sched_t *s = hccn_hier_build(al, &a);
                        assert_non_null(s);
                        for (size_t i = 0; i < 4; i++) {
                            const tm_t *t = &flat_params[i];
                            double f = hier_time(t, al->name, &a, N, L);
                            int exact = hier_exact(&a, t, N, L, al->name, 0);
                            const char *nm = case_name(al->name, &a,
                                                       w.name, 0);
                            if (exact == 2) {
                                sched_interp_timing_t tp = {t->al[0],
                                                            t->B[0], t->R,
                                                            t->M};
                                double got = sched_interp_time(s, &tp);
                                if (got < f * (1 - 1e-9))
                                    failf("%s: simulated %.12g s below "
                                          "%.12g s", nm, got, f);
                                continue;
                            }
                            check_time(s, f, exact, t, nm);
                        }
                        hccn_sched_free(s);
                    }
        }
    }
}

/* torus2d is hier_rr on a grid of Y rows of X (the largest divisor of p
 * not above sqrt(p)): its allreduce takes hier_rr's closed form with the
 * rows as nodes; reduce-scatter and allgather run concurrent instances
 * (levels.h), which the uncontended evaluation does not price. */
static void test_time_torus(void **state)
{
    (void)state;
    static const int ps[] = {4, 6, 8, 9, 12, 16};
    const uint64_t counts[] = {1, 7, 96, 1000, 100003};
    const hccn_algo_t *al = hccn_hier_algo_find("torus2d");
    int checked = 0;
    assert_non_null(al);
    for (size_t pi = 0; pi < sizeof(ps) / sizeof(ps[0]); pi++) {
        int p = ps[pi], X = 0;
        for (int d = 2; d * d <= p; d++)
            if (p % d == 0)
                X = d;
        for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
            hccn_coll_args_t a = {.coll = HCCN_COLL_ALLREDUCE, .nranks = p,
                                  .count = counts[ci], .esize = 4};
            hccn_sched_t *s = al->build(&a);
            assert_non_null(s);
            for (size_t i = 0; i < 4; i++) {
                const tm_t *t = &flat_params[i];
                double f = hier_time(t, "hier_rr", &a, p / X, X);
                int exact = hier_exact(&a, t, p / X, X, "hier_rr", 0);
                if (exact == 1) {
                    check_time(s, f, 1, t, case_name("torus2d", &a, "grid",
                                                     0));
                    checked++;
                }
            }
            hccn_sched_free(s);
        }
    }
    assert_true(checked >= 60);
    /* Prime counts have no grid. */
    hccn_coll_args_t a = {.coll = HCCN_COLL_ALLREDUCE, .nranks = 7,
                          .count = 70, .esize = 4};
    assert_null(al->build(&a));
}

/* ------------------------------------------------------------ engine --- */

/* N nodes of L NPUs: a full mesh inside (50 GB/s, 1.5 us), one 20 GB/s NIC
 * per NPU (2 us), one network switch (1 us); reduce 100 GB/s, copies
 * 200 GB/s. */
static hccn_sim_topo_t *two_level(int N, int L)
{
    char json[1024], err[512];
    snprintf(json, sizeof(json),
             "{\"version\": 1, \"node_types\": [{\"name\": \"box\", "
             "\"count\": %d, \"npu\": {\"count\": %d, \"arena_MiB\": 64, "
             "\"reduce_bw_GBps\": 100, \"mem_bw_GBps\": 200}, "
             "\"fabric\": {\"type\": \"mesh\", \"bw_GBps\": 50, "
             "\"lat_us\": 1.5}, \"nics\": {\"count\": %d, \"bw_GBps\": 20, "
             "\"lat_us\": 2.0}}], \"network\": {\"type\": \"switch\", "
             "\"lat_us\": 1.0}}",
             N, L, L);
    hccn_sim_topo_t *topo = NULL;
    if (hccn_sim_topo_load_string(json, "two-level", &topo, err,
                                  sizeof(err)) != HCCN_OK)
        failf("topology: %s", err);
    return topo;
}

/* Latency and bottleneck bandwidth of the route a -> b. */
static void route(const hccn_sim_topo_t *t, int a, int b, double *lat,
                  double *bw)
{
    int links[HCCN_SIM_ROUTE_MAX];
    int n = hccn_sim_topo_route(t, a, b, links, lat);
    *bw = INFINITY;
    for (int i = 0; i < n; i++)
        *bw = fmin(*bw, t->links[links[i]].bw);
}

/* The closed forms with the two levels' own latency and bandwidth, against
 * the timing engine on a two-level cluster. */
static void test_time_hier_engine(void **state)
{
    (void)state;
    static const int shapes[][2] = {{2, 4}, {2, 8}, {4, 4}};
    const uint64_t counts[] = {64, 12000, 1 << 18};
    for (size_t si = 0; si < sizeof(shapes) / sizeof(shapes[0]); si++) {
        int N = shapes[si][0], L = shapes[si][1];
        hccn_sim_topo_t *topo = two_level(N, L);
        tm_t t = {{0, 0}, {0, 0}, topo->npus[0].reduce_bw,
                  topo->npus[0].mem_bw};
        route(topo, 0, 1, &t.al[0], &t.B[0]);
        route(topo, 0, L, &t.al[1], &t.B[1]);
        assert_true(t.al[1] > t.al[0] && t.B[1] < t.B[0]);
        test_view_t w;
        test_even_view(&w, N, L);
        for (size_t ai = 0; ai < NHIER; ai++) {
            const hccn_algo_t *al = hccn_hier_algo_find(hier_algos[ai]);
            if (!hd_exact(al->name, N, L))
                continue;
            for (int c = 0; c < HCCN_COLL_COUNT; c++)
                for (size_t ci = 0; al->colls & 1u << c && ci < 3; ci++) {
                    hccn_coll_args_t a = {.coll = (hccn_coll_t)c,
                                          .nranks = N * L,
                                          .count = counts[ci], .esize = 4,
                                          .root = N * L - 2, .view = &w.v,
                                          .chunk_bytes = 1 << 16};
                    hccn_sched_t *s = hccn_hier_build(al, &a);
                    assert_non_null(s);
                    double got = test_engine_time(topo, s, NULL, NULL);
                    double want = hier_time(&t, al->name, &a, N, L);
                    const char *nm = case_name(al->name, &a, w.name, 0);
                    int exact = hier_exact(&a, &t, N, L, al->name, 1);
                    if (exact == 1 && test_rel_diff(got, want) > 1e-9)
                        failf("%s: engine %.12g s, closed form %.12g s", nm,
                              got, want);
                    if (exact == 2 && got < want * (1 - 1e-9))
                        failf("%s: engine %.12g s below %.12g s", nm, got,
                              want);
                    if (exact == 0 && got > want * (1 + 1e-9))
                        failf("%s: engine %.12g s above %.12g s", nm, got,
                              want);
                    hccn_sched_free(s);
                }
        }
        hccn_sim_topo_free(topo);
    }
}

/* ------------------------------------------------------------- main --- */

int main(void)
{
    static const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_time_flat),
        cmocka_unit_test(test_time_hier),
        cmocka_unit_test(test_time_hier_engine),
        cmocka_unit_test(test_time_torus),
    };
    return cmocka_run_group_tests_name("algos_hier_time", tests, NULL, NULL);
}
