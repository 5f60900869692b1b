/*
 * The three-level rows hier3 and hier3_hd: int32 sums bit for bit and
 * float sums against the serial interpreter's (same reduction order, any
 * execution order), for rank counts {8, 12, 16, 24, 32} on even pod
 * shapes and on shapes where a level is trivial or uneven (which degrade
 * to two levels); schedule names, bytes on the wire per rank and level;
 * closed-form times against the uncontended evaluation of the schedule
 * and against the timing engine on a leaf/spine cluster.
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
#include "hierarchy/cost.h"
#include "sched_interp.h"
#include "test_util.h"

#define MAXP 32

static void failf(const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fail_msg("%s", msg);
}

/* ------------------------------------------------------------ views --- */

/* A placement with pods: pod p holds npn[p] nodes; node n holds
 * size[n] ranks (nodes numbered pod by pod). Ranks are pod- and
 * node-major, or dealt round-robin over the nodes. */
typedef struct {
    int node[MAXP], local[MAXP], pod[MAXP];
    hccn_hier_view_t v;
    char name[96];
} pview_t;

static void make_pview(pview_t *w, const int *npn, int npods,
                       const int *size, int dealt)
{
    int nnodes = 0, p = 0, podof[MAXP], used[MAXP] = {0};
    for (int q = 0; q < npods; q++)
        for (int k = 0; k < npn[q]; k++)
            podof[nnodes++] = q;
    for (int n = 0; n < nnodes; n++)
        p += size[n];
    assert_true(p <= MAXP);
    for (int r = 0, n = 0; r < p; r++) {
        if (dealt) {
            while (used[n % nnodes] == size[n % nnodes])
                n++;
        } else {
            while (used[n] == size[n])
                n++;
        }
        int nd = dealt ? n++ % nnodes : n;
        w->node[r] = nd;
        w->local[r] = used[nd]++;
        w->pod[r] = podof[nd];
    }
    w->v = (hccn_hier_view_t){p, w->node, w->local, nnodes, w->pod, npods, 0, 0};
    int len = snprintf(w->name, sizeof(w->name), "%spods", dealt ? "dealt " : "");
    for (int n = 0, q = -1; n < nnodes; n++) {
        len += snprintf(w->name + len, sizeof(w->name) - (size_t)len, "%s%d",
                        podof[n] != q ? " | " : "+", size[n]);
        q = podof[n];
    }
}

/* P pods of M nodes of L ranks, pod-major. */
static void even_pview(pview_t *w, int P, int M, int L)
{
    int npn[MAXP], size[MAXP];
    for (int q = 0; q < P; q++)
        npn[q] = M;
    for (int n = 0; n < P * M; n++)
        size[n] = L;
    make_pview(w, npn, P, size, 0);
}

/* ------------------------------------------------------- reference --- */

static uint32_t input(int q, uint64_t i)
{
    unsigned long long st = ((unsigned long long)q << 40) ^ (i * 7 + 3);
    return (uint32_t)test_rand_next(&st);
}

/* A float input whose sums round: a random mantissa at scales 2^-10..2^10. */
static uint32_t finput(int q, uint64_t i)
{
    uint32_t u = input(q, i);
    float f = ldexpf((float)(u & 0xffffff) / 16777216.0f + 1.0f,
                     (int)((u >> 24) % 21) - 10);
    memcpy(&u, &f, 4);
    return u;
}

static uint32_t expected(const hccn_coll_args_t *a, int r, uint64_t i)
{
    uint64_t c = a->count;
    uint32_t s = 0;
    switch (a->coll) {
    case HCCN_COLL_ALLREDUCE:
        for (int q = 0; q < a->nranks; q++)
            s += input(q, i);
        return s;
    case HCCN_COLL_REDUCE_SCATTER:
        for (int q = 0; q < a->nranks; q++)
            s += input(q, (uint64_t)r * c + i);
        return s;
    default: /* allgather */
        return input((int)(i / c), i % c);
    }
}

static const char *case_name(const char *algo, const hccn_coll_args_t *a,
                             const char *shape, int inplace)
{
    static char buf[240];
    snprintf(buf, sizeof(buf), "%s %s p=%d [%s] count=%llu chunk=%llu %s",
             algo, hccn_coll_name(a->coll), a->nranks, shape,
             (unsigned long long)a->count,
             (unsigned long long)a->chunk_bytes,
             inplace ? "in-place" : "out-of-place");
    return buf;
}

/* Bytes rank r sends in a three-level schedule (docs/algorithms.md), when
 * every block splits evenly: allreduce per chunk of C elements with
 * q = C / L and r = q / M: 2 (L-1) q + 2 (M-1) r + 2 (P-1) r / P elements
 * (one chunk here); reduce_scatter and allgather: (P-1) M L c + (M-1) L c
 * + (L-1) c. -1 when not checked. */
static long long wire_bytes(const char *row, const hccn_coll_args_t *a,
                            int P, int M, int L)
{
    long long c = (long long)a->count;
    if (P * M * L == 0 || (strcmp(row, "hier3_hd") == 0 && (P & (P - 1))))
        return -1;   /* hd folds the extra pods: see hd */
    if (a->coll == HCCN_COLL_ALLREDUCE) {
        if (c % ((long long)P * M * L) != 0 || a->chunk_bytes != 0 ||
            c * 4 > (4 << 20))
            return -1;
        long long q = c / L, r = q / M;
        return 4 * (2 * (L - 1) * q + 2 * (M - 1) * r + 2 * (P - 1) * r / P);
    }
    return 4 * c * ((long long)(P - 1) * M * L + (M - 1) * L + (L - 1));
}

/* Runs one case in the interpreter; returns the schedule's name (static). */
static const char *run_case(const hccn_algo_t *al, const hccn_coll_args_t *a,
                            const char *shape, int inplace, int P, int M,
                            int L)
{
    static char algo[48];
    const char *name = case_name(al->name, a, shape, inplace);
    hccn_sched_t *s = al->build(a);
    char why[512];
    if (s == NULL)
        failf("%s: declined", name);
    if (hccn_sched_validate(s, why, sizeof(why)) != 0)
        failf("%s: invalid schedule: %s", name, why);
    int three = strncmp(s->algo, "hier3(", 6) == 0;
    for (int r = 0; three && r < a->nranks; r++) {
        long long want = wire_bytes(al->name, a, P, M, L);
        long long got = (long long)sched_interp_bytes_sent(s, r);
        if (want >= 0 && got != want)
            failf("%s: rank %d sends %lld bytes, expected %lld", name, r,
                  got, want);
    }
    sched_interp_host_t B;
    sched_interp_host_setup(&B, a, inplace, input);
    sched_interp_opts_t o = {sched_interp_sum_u32, NULL, a->count < 64 ? 7 : 0, 1};
    if (sched_interp_run(s, B.b, &o, why, sizeof(why)) != 0)
        failf("%s: %s", name, why);
    for (int r = 0; r < a->nranks; r++)
        for (uint64_t i = 0; i < B.rb[r] / 4; i++)
            if (((uint32_t *)B.b[r].recv)[i] != expected(a, r, i))
                failf("%s: rank %d RECV[%llu] = %u, expected %u", name, r,
                      (unsigned long long)i,
                      ((uint32_t *)B.b[r].recv)[i], expected(a, r, i));
    sched_interp_host_free(&B, a->nranks);
    snprintf(algo, sizeof(algo), "%s", s->algo);
    hccn_sched_free(s);
    return algo;
}

/* Floats: the result of a shuffled execution must equal, bit for bit, the
 * reference run in index order (the schedule fixes the reduction order)
 * and every rank must hold the same bits. */
static void run_float(const hccn_algo_t *al, const hccn_coll_args_t *a,
                      const char *shape)
{
    const char *name = case_name(al->name, a, shape, 0);
    hccn_sched_t *s = al->build(a);
    sched_interp_host_t ref, got;
    char why[512];
    assert_non_null(s);
    sched_interp_host_setup(&ref, a, 0, finput);
    sched_interp_host_setup(&got, a, 0, finput);
    sched_interp_opts_t o1 = {sched_interp_sum_f32, NULL, 0, 0},
                        o2 = {sched_interp_sum_f32, NULL, 99, 0};
    if (sched_interp_run(s, ref.b, &o1, why, sizeof(why)) != 0 ||
        sched_interp_run(s, got.b, &o2, why, sizeof(why)) != 0)
        failf("%s: %s", name, why);
    for (int r = 0; r < a->nranks; r++)
        if (memcmp(ref.b[r].recv, got.b[r].recv, ref.rb[r]) != 0 ||
            memcmp(ref.b[0].recv, got.b[r].recv, ref.rb[r]) != 0)
            failf("%s: float result of rank %d differs", name, r);
    sched_interp_host_free(&ref, a->nranks);
    sched_interp_host_free(&got, a->nranks);
    hccn_sched_free(s);
}

static const char *const rows[] = {"hier3", "hier3_hd"};

/* Every collective of the row on w, in and out of place, a few counts. */
static void sweep(const hccn_algo_t *al, const pview_t *w, const char *want,
                  int P, int M, int L, const uint64_t *counts, int ncounts,
                  uint64_t chunk)
{
    for (int c = 0; c < HCCN_COLL_COUNT; c++)
        for (int ci = 0; (al->colls & 1u << c) && ci < ncounts; ci++)
            for (int ip = 0; ip <= 1; ip++) {
                hccn_coll_args_t a = {.coll = (hccn_coll_t)c,
                                      .nranks = w->v.nranks,
                                      .count = counts[ci], .esize = 4,
                                      .view = &w->v, .chunk_bytes = chunk};
                const char *got = run_case(al, &a, w->name, ip, P, M, L);
                if (counts[ci] > 0 && want != NULL &&
                    strncmp(got, want, strlen(want)) != 0)
                    failf("%s: schedule %s, expected %s",
                          case_name(al->name, &a, w->name, ip), got, want);
            }
}

static void test_even_shapes(void **state)
{
    (void)state;
    static const int shapes[][3] = {{2, 2, 2}, {2, 2, 3}, {3, 2, 2},
                                    {2, 2, 4}, {2, 4, 2}, {4, 2, 2},
                                    {2, 3, 4}, {3, 2, 4}, {2, 2, 8},
                                    {4, 2, 4}, {2, 4, 4}};
    const int quick = getenv("HCCN_TEST_QUICK") != NULL;
    for (size_t ri = 0; ri < 2; ri++) {
        const hccn_algo_t *al = hccn_hier_algo_find(rows[ri]);
        assert_non_null(al);
        for (size_t si = 0; si < sizeof(shapes) / sizeof(shapes[0]); si++) {
            int P = shapes[si][0], M = shapes[si][1], L = shapes[si][2];
            int p = P * M * L;
            if (quick && si % 3 != 0)
                continue;
            pview_t w;
            even_pview(&w, P, M, L);
            uint64_t counts[] = {0, 1, 7, (uint64_t)p + 5, 3 * (uint64_t)p,
                                 1003};
            sweep(al, &w, "hier3(", P, M, L, counts, 6, 0);
            /* Many chunks, a ragged last one and a tail. */
            uint64_t big[] = {(uint64_t)p * 40 + 3};
            hccn_coll_args_t a = {.coll = HCCN_COLL_ALLREDUCE, .nranks = p,
                                  .count = big[0], .esize = 4, .view = &w.v,
                                  .chunk_bytes = (uint64_t)M * L * 4 * 3};
            for (int ip = 0; ip <= 1; ip++)
                run_case(al, &a, w.name, ip, P, M, L);
            run_float(al, &a, w.name);
        }
    }
}

/* Shapes where a level is trivial or uneven: two levels, never declined. */
static void test_degraded_shapes(void **state)
{
    (void)state;
    static const struct {
        int npods, npn[4], size[8], dealt;
        const char *want;
    } cases[] = {
        {1, {4}, {2, 2, 2, 2}, 0, "hier(mesh,ring)"},         /* one pod */
        {4, {1, 1, 1, 1}, {3, 3, 3, 3}, 0, "hier(mesh,ring)"}, /* M = 1 */
        {2, {3, 1}, {2, 2, 2, 2}, 0, "hier(mesh,ring)"},      /* uneven pods */
        {2, {2, 2}, {4, 2, 3, 3}, 0, "hier(ring)"},           /* uneven nodes */
        {3, {2, 2, 2}, {1, 1, 1, 1, 1, 1}, 0, "hier(mesh,ring)"}, /* L = 1 */
        {2, {2, 2}, {3, 3, 3, 3}, 1, NULL},                   /* dealt */
        {2, {4, 4}, {1, 1, 1, 1, 1, 1, 1, 1}, 0, "hier(mesh,ring)"},
    };
    for (size_t ri = 0; ri < 2; ri++) {
        const hccn_algo_t *al = hccn_hier_algo_find(rows[ri]);
        for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
            pview_t w;
            make_pview(&w, cases[k].npn, cases[k].npods, cases[k].size,
                       cases[k].dealt);
            int p = w.v.nranks;
            uint64_t counts[] = {1, (uint64_t)p + 3, 1001};
            sweep(al, &w, cases[k].want, 0, 0, 0, counts, 3, 0);
        }
    }
    /* Dealt ranks: allreduce keeps three levels; reduce_scatter and
     * allgather, whose blocks follow rank order, take hier's. */
    pview_t w;
    int npn[] = {2, 2}, size[] = {3, 3, 3, 3};
    make_pview(&w, npn, 2, size, 1);
    hccn_coll_args_t a = {.coll = HCCN_COLL_ALLREDUCE, .nranks = 12,
                          .count = 100, .esize = 4, .view = &w.v};
    assert_string_equal(run_case(hccn_hier_algo_find("hier3"), &a, w.name, 0,
                                 2, 2, 3),
                        "hier3(mesh,ring,ring)");
    /* No pods in the view (a network without leaves): hier's schedule. */
    w.v.pod = NULL;
    w.v.npods = 0;
    assert_string_equal(run_case(hccn_hier_algo_find("hier3"), &a, w.name, 0,
                                 0, 0, 0),
                        "hier(mesh,ring)");
}

/* ------------------------------------------------------------ times --- */

typedef struct {
    double al, B, R;   /* latency, bandwidth and reduce bandwidth */
} tm_t;

/* Flat phases on p ranks, uncontended (docs/algorithms.md): b is the
 * bytes of one block. */
static double mesh_rs(const tm_t *t, int p, double b)
{
    return t->al + b / t->B + (p - 1) * b / t->R;
}

static double mesh_ag(const tm_t *t, double b)
{
    return t->al + b / t->B;
}

static double ring_rs(const tm_t *t, int p, double b)
{
    return (p - 1) * (t->al + b / t->B + b / t->R);
}

static double ring_ag(const tm_t *t, int p, double b)
{
    return (p - 1) * (t->al + b / t->B);
}

/* Allreduce of n bytes on p ranks (p divides n into 4-byte blocks; hd
 * for a power of two p). */
static double allreduce(const tm_t *t, const char *algo, int p, double n)
{
    int lg = 0;
    while ((2 << lg) <= p)
        lg++;
    if (strcmp(algo, "hd") == 0)
        return 2 * lg * t->al + (n - n / p) * (2 / t->B + 1 / t->R);
    return 2 * (p - 1) * (t->al + n / p / t->B) + (p - 1) * n / p / t->R;
}

/* hier3's allreduce: the five phases of each chunk on the three level
 * clocks (level 0: P1 of every chunk, then P5; level 1: P2, then P4;
 * level 2: P3), for count a multiple of the chunk, itself of P * M * L. */
static double hier3_time(const tm_t *t, const char *l2,
                         const hccn_coll_args_t *a, int P, int M, int L)
{
    uint64_t ce = a->chunk_bytes ? a->chunk_bytes / 4 : a->count;
    size_t K = (size_t)(a->count / ce);
    double q = 4.0 * (double)(ce / (uint64_t)L), r = q / M;
    double e0 = 0, e1 = 0, e2 = 0, g[256];
    assert_true(K <= 256 && a->count % ce == 0);
    for (size_t k = 0; k < K; k++) {
        e0 += mesh_rs(t, L, q);
        e1 = fmax(e0, e1) + ring_rs(t, M, r);
        e2 = fmax(e1, e2) + allreduce(t, l2, P, r);
        g[k] = e2;
    }
    for (size_t k = 0; k < K; k++) {
        e1 = fmax(e1, g[k]) + ring_ag(t, M, r);
        e0 = fmax(e0, e1) + mesh_ag(t, q);
    }
    return e0;
}

/* The schedules' uncontended time (one link per pair of ranks) equals the
 * closed form: one chunk with reductions, several with free ones (then the
 * levels run side by side and nothing else queues). */
static void test_time_uncontended(void **state)
{
    (void)state;
    static const int shapes[][3] = {{2, 2, 4}, {2, 3, 2}, {4, 2, 2},
                                    {3, 2, 2}, {2, 4, 4}};
    static const tm_t params[] = {{2e-6, 2e10, 5e10}, {1e-6, 1e10, INFINITY}};
    for (size_t ri = 0; ri < 2; ri++) {
        const hccn_algo_t *al = hccn_hier_algo_find(rows[ri]);
        const char *l2 = ri == 0 ? "ring" : "hd";
        for (size_t si = 0; si < sizeof(shapes) / sizeof(shapes[0]); si++) {
            int P = shapes[si][0], M = shapes[si][1], L = shapes[si][2];
            if (ri == 1 && (P & (P - 1)) != 0)
                continue; /* hd folds the extra pods: see hd */
            pview_t w;
            even_pview(&w, P, M, L);
            uint64_t unit = (uint64_t)P * M * L;
            for (size_t k = 0; k < 2; k++) {
                const tm_t *t = &params[k];
                hccn_coll_args_t a = {.coll = HCCN_COLL_ALLREDUCE,
                                      .nranks = (int)unit,
                                      .count = unit * (k ? 600 : 2500),
                                      .esize = 4, .view = &w.v,
                                      .chunk_bytes = k ? unit * 4 * 100 : 0};
                hccn_sched_t *s = al->build(&a);
                assert_non_null(s);
                sched_interp_timing_t tp = {t->al, t->B, t->R, 0.0};
                double got = sched_interp_time(s, &tp);
                double want = hier3_time(t, l2, &a, P, M, L);
                const char *nm = case_name(al->name, &a, w.name, 0);
                if (got < 0)
                    failf("%s: links shared (%g)", nm, got);
                if (test_rel_diff(got, want) > 1e-9)
                    failf("%s: simulated %.12g s, closed form %.12g s", nm,
                          got, want);
                hccn_sched_free(s);
            }
        }
    }
}

int main(void)
{
    static const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_even_shapes),
        cmocka_unit_test(test_degraded_shapes),
        cmocka_unit_test(test_time_uncontended),
    };
    return cmocka_run_group_tests_name("algos_hier3", tests, NULL, NULL);
}
