/*
 * The composed and logarithmic algorithms (hier, hier_rr, hier_mh, hd,
 * rdouble, tree, bruck, pairwise) and schedule composition: every algorithm
 * x collective over rank counts and node shapes (even, uneven, not
 * node-major), in and out of place, int32 sums checked bit for bit against
 * a reference computed here by the serial interpreter (races checked);
 * schedule validity, phases and bytes on the wire. Their closed-form times
 * are checked in test_algos_hier_time.c.
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
#include "hierarchy/algo_util.h"
#include "hierarchy/compose.h"
#include "sched_interp.h"
#include "test_util.h"
#include "test_views.h"

#define MAXP 32

static const int rank_counts[] = {2, 3, 6, 8, 12, 16, 24};

static void failf(const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fail_msg("%s", msg);
}


/* -------------------------------------------------------- reference --- */

static uint32_t input(int q, uint64_t i)
{
    unsigned long long st = ((unsigned long long)q << 40) ^ (i * 7 + 3);
    return (uint32_t)test_rand_next(&st);
}

static uint32_t sum_at(int p, uint64_t i)
{
    uint32_t s = 0;
    for (int q = 0; q < p; q++)
        s += input(q, i);
    return s;
}

/* Expected RECV element i on rank r. */
static uint32_t expected(const hccn_coll_args_t *a, int r, uint64_t i)
{
    uint64_t c = a->count;
    switch (a->coll) {
    case HCCN_COLL_ALLREDUCE:
    case HCCN_COLL_REDUCE:
        return sum_at(a->nranks, i);
    case HCCN_COLL_REDUCE_SCATTER:
        return sum_at(a->nranks, (uint64_t)r * c + i);
    case HCCN_COLL_ALLGATHER:
        return input((int)(i / c), i % c);
    case HCCN_COLL_BROADCAST:
        return input(a->root, i);
    default: /* alltoall */
        return input((int)(i / c), (uint64_t)r * c + i % c);
    }
}

/* The fixed-size collective a v-collective without count arrays is
 * (hierarchy/coll.h); the references here are written for those. */
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
    return c != HCCN_COLL_ALLTOALL && c != HCCN_COLL_ALLTOALLV;
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

static void check_results(const sched_interp_host_t *B, const hccn_coll_args_t *a,
                          int inplace, const char *name)
{
    for (int r = 0; r < a->nranks; r++) {
        const uint32_t *recv = B->b[r].recv, *send = B->b[r].send;
        for (uint64_t i = 0; i < B->rb[r] / 4; i++)
            if (recv[i] != expected(a, r, i))
                failf("%s: rank %d RECV[%llu] = %u, expected %u", name, r,
                      (unsigned long long)i, recv[i], expected(a, r, i));
        if (inplace && B->rb[r] > 0)
            continue;
        for (uint64_t i = 0; i < B->sb[r] / 4; i++)
            if (send[i] != input(r, i))
                failf("%s: rank %d SEND[%llu] was modified", name, r,
                      (unsigned long long)i);
    }
}

static void check_shape(const hccn_sched_t *s, const hccn_coll_args_t *a,
                        const char *name)
{
    char why[256];
    if (hccn_sched_validate(s, why, sizeof(why)) != 0)
        failf("%s: invalid schedule: %s", name, why);
    for (int r = 0; r < s->nranks; r++) {
        for (uint32_t i = 0; i < s->ranks[r].nsteps; i++)
            if (s->ranks[r].steps[i].phase == 0)
                failf("%s: rank %d step %u has no phase", name, r, i);
        if (a->count == 0 && s->ranks[r].nsteps != 0)
            failf("%s: count 0 but rank %d has steps", name, r);
    }
}

static int is_pow2(int p)
{
    return (p & (p - 1)) == 0;
}

/* Bytes rank r sends (docs/algorithms.md) where the formula is simple; -1
 * where this file does not check it. */
static long long wire_bytes(const char *algo, const hccn_sched_t *s,
                            const hccn_coll_args_t *a, int r)
{
    const int p = a->nranks;
    long long b = (long long)(a->count * 4), lg = 0;
    while ((2 << lg) <= p)
        lg++;
    if (p == 1 || a->count == 0)
        return 0;
    int all = a->coll == HCCN_COLL_REDUCE_SCATTER ||
              a->coll == HCCN_COLL_ALLGATHER;
    if (strcmp(algo, "pairwise") == 0 ||
        (strcmp(algo, "bruck") == 0 && a->coll == HCCN_COLL_ALLGATHER) ||
        (strcmp(algo, "hd") == 0 && all && is_pow2(p)))
        return (p - 1) * b;
    if (strcmp(algo, "bruck") == 0) {
        long long n = 0;
        for (int d = 1; d < p; d *= 2)
            for (int j = 1; j < p; j++)
                n += (j & d) != 0;
        return n * b;
    }
    if (strcmp(algo, "hd") == 0 && is_pow2(p) && a->count % (uint64_t)p == 0)
        return 2 * (p - 1) * (b / p);
    if (strcmp(algo, "rdouble") == 0 && is_pow2(p))
        return lg * b;
    if (strcmp(algo, "tree") == 0 && a->coll == HCCN_COLL_REDUCE)
        return r == a->root ? 0 : b;
    const hccn_hier_view_t *v = a->view;
    if (strncmp(s->algo, "hier(", 5) == 0 && strcmp(s->algo, "hier(ring)") &&
        all) {
        long long L = p / v->nnodes, N = v->nnodes;
        char l0[8] = "", l1[8] = "";
        if (sscanf(s->algo, "hier(%7[^,],%7[^)])", l0, l1) != 2 ||
            (strcmp(l0, "hd") == 0 && !is_pow2((int)L)) ||
            (strcmp(l1, "hd") == 0 && !is_pow2(v->nnodes)))
            return -1; /* folds: see hd */
        return (L - 1) * b + (N - 1) * L * b;
    }
    return -1;
}

/* Builds and runs one case; returns the schedule's algorithm name (in a
 * static buffer), or NULL when the builder declined. */
static const char *run_case(const hccn_algo_t *al, const hccn_coll_args_t *a,
                            const char *shape, int inplace,
                            unsigned long long seed)
{
    static char algo[48];
    const char *name = case_name(al->name, a, shape, inplace);
    hccn_sched_t *s = hccn_hier_build(al, a);
    if (s == NULL)
        return NULL;
    hccn_coll_args_t fixed = as_fixed(a);
    a = &fixed;
    check_shape(s, a, name);
    for (int r = 0; r < a->nranks; r++) {
        long long want = wire_bytes(al->name, s, a, r);
        long long got = (long long)sched_interp_bytes_sent(s, r);
        if (want >= 0 && got != want)
            failf("%s: rank %d sends %lld bytes, expected %lld", name, r,
                  got, want);
    }
    sched_interp_host_t B;
    sched_interp_host_setup(&B, a, inplace, input);
    sched_interp_opts_t o = {sched_interp_sum_u32, NULL, seed, 1};
    char why[512];
    if (sched_interp_run(s, B.b, &o, why, sizeof(why)) != 0)
        failf("%s: %s", name, why);
    check_results(&B, a, inplace, name);
    sched_interp_host_free(&B, a->nranks);
    snprintf(algo, sizeof(algo), "%s", s->algo);
    hccn_sched_free(s);
    return algo;
}

/* Every count, root and placement of one algorithm and collective on one
 * view; the builder must not decline. */
static void sweep_view(const hccn_algo_t *al, hccn_coll_t coll,
                       const test_view_t *w, const uint64_t *counts, int ncounts,
                       uint64_t chunk)
{
    int p = w->v.nranks;
    int roots[] = {0, p - 1, p / 2 + 1 < p ? p / 2 + 1 : 0};
    int nroots = coll == HCCN_COLL_BROADCAST || coll == HCCN_COLL_REDUCE
                     ? 3
                     : 1;
    for (int ci = 0; ci < ncounts; ci++)
        for (int ri = 0; ri < nroots; ri++)
            for (int ip = 0; ip <= has_inplace(coll); ip++) {
                hccn_coll_args_t a = {.coll = coll, .nranks = p,
                                      .count = counts[ci], .esize = 4,
                                      .root = roots[ri], .view = &w->v,
                                      .chunk_bytes = chunk};
                unsigned long long seed = counts[ci] < 64 ? 1 + ri : 0;
                if (run_case(al, &a, w->name, ip, seed) == NULL)
                    failf("%s: declined",
                          case_name(al->name, &a, w->name, ip));
            }
}

/* ------------------------------------------------ flat sweeps (no view) --- */

typedef struct {
    const hccn_algo_t *algo;
    hccn_coll_t coll;
} pair_t;

static const char *const flat_algos[] = {"hd", "rdouble", "tree", "bruck",
                                         "pairwise"};

static void test_flat_coll(void **state)
{
    const pair_t *pc = *state;
    for (size_t i = 0; i < sizeof(rank_counts) / sizeof(int); i++) {
        int p = rank_counts[i];
        test_view_t w;
        test_even_view(&w, 1, p);
        uint64_t counts[] = {0, 1, 5, (uint64_t)p + 3, p <= 8 ? 3001 : 301};
        sweep_view(pc->algo, pc->coll, &w, counts, 5, 0);
    }
    if (pc->algo->build == hccn_hier_algo_find("tree")->build) {
        /* Pipelining: many chunks, a ragged last one. */
        test_view_t w;
        test_even_view(&w, 1, 7);
        uint64_t counts[] = {250};
        sweep_view(pc->algo, pc->coll, &w, counts, 1, 64);
        test_even_view(&w, 1, 2);
        sweep_view(pc->algo, pc->coll, &w, counts, 1, 100);
        /* Across nodes (tree.h): chains and trees over the nodes, node
         * by node and dealt, even and uneven; channels of their own. */
        static const int shapes[][4] = {{4, 4, 4, 0}, {3, 5, 2, 0},
                                        {2, 3, 1, 4}, {1, 1, 1, 0},
                                        {4, 4, 0, 0}};
        for (int i = 0; i < 5; i++)
            for (int dealt = 0; dealt <= 1; dealt++) {
                int nn = shapes[i][3] ? 4 : shapes[i][2] ? 3 : 2;
                test_make_view(&w, shapes[i], nn, dealt);
                w.v.channels = 1 + i % 3;
                uint64_t many[] = {1, 5, 1003, 4099};
                sweep_view(pc->algo, pc->coll, &w, many, 4, 0);
                sweep_view(pc->algo, pc->coll, &w, many + 2, 1, 64);
            }
    }
}

/* ------------------------------------------------------ hier sweeps --- */

/* The named rows and every other two-level composition (algo_levels.c). */
static const char *const hier_algos[] = {
    "hier", "hier_rr", "hier_mh", "hier(ring,mesh)", "hier(ring,hd)",
    "hier(mesh,mesh)", "hier(hd,ring)", "hier(hd,mesh)", "hier(hd,hd)"};

/* Even shapes give the hierarchical schedule; uneven shapes (and, for
 * reduce_scatter/allgather, ranks not in node-major order) fall back to
 * the flat ring. */
static void test_hier_coll(void **state)
{
    const pair_t *pc = *state;
    static const int even[][2] = {{2, 4}, {3, 4}, {2, 8}, {3, 8},
                                  {4, 4}, {2, 3}, {6, 2}, {4, 6}};
    static const int uneven[][3] = {{3, 5, 0}, {2, 3, 3}, {5, 1, 2}};
    for (size_t i = 0; i < sizeof(even) / sizeof(even[0]); i++) {
        test_view_t w;
        int L = even[i][1];
        test_even_view(&w, even[i][0], L);
        uint64_t counts[] = {0, 1, (uint64_t)L, (uint64_t)3 * L + 1, 1003};
        sweep_view(pc->algo, pc->coll, &w, counts, 5, 0);
    }
    for (size_t i = 0; i < sizeof(uneven) / sizeof(uneven[0]); i++) {
        test_view_t w;
        int nn = uneven[i][2] ? 3 : 2;
        test_make_view(&w, uneven[i], nn, 0);
        uint64_t counts[] = {1, 9, 301};
        sweep_view(pc->algo, pc->coll, &w, counts, 3, 0);
        test_make_view(&w, uneven[i], nn, 1);
        sweep_view(pc->algo, pc->coll, &w, counts, 3, 0);
    }
    /* Ranks dealt round-robin over 3 nodes of 4, and pipelined chunks. */
    test_view_t w;
    int sizes[] = {4, 4, 4};
    test_make_view(&w, sizes, 3, 1);
    uint64_t counts[] = {1, 14, 1003};
    sweep_view(pc->algo, pc->coll, &w, counts, 3, 0);
    if (pc->coll == HCCN_COLL_ALLREDUCE) {
        uint64_t c2[] = {250, 41};
        sweep_view(pc->algo, pc->coll, &w, c2, 2, 64);
        test_even_view(&w, 2, 4);
        sweep_view(pc->algo, pc->coll, &w, c2, 2, 40);
    }
}

/* Which schedule each shape gets, and NULL where hier does not apply. */
static void test_hier_applicability(void **state)
{
    (void)state;
    const hccn_algo_t *h = hccn_hier_algo_find("hier");
    assert_non_null(h);
    test_view_t w;
    hccn_coll_args_t a = {.coll = HCCN_COLL_ALLREDUCE, .nranks = 8,
                          .count = 100, .esize = 4};
    assert_null(h->build(&a)); /* no view */
    test_even_view(&w, 1, 8);
    a.view = &w.v;
    assert_null(h->build(&a)); /* one node */
    test_even_view(&w, 8, 1);
    assert_null(h->build(&a)); /* one rank per node */
    test_even_view(&w, 2, 4);
    w.local[1] = 0;            /* two ranks in one place */
    assert_null(h->build(&a));
    w.v.nranks = 7;            /* a view of another communicator */
    assert_null(h->build(&a));

    const struct {
        hccn_coll_t coll;
        int dealt;
        const char *want;
    } cases[] = {
        {HCCN_COLL_ALLREDUCE, 0, "hier(mesh,ring)"},
        {HCCN_COLL_ALLREDUCE, 1, "hier(mesh,ring)"},
        {HCCN_COLL_BROADCAST, 1, "hier(mesh,ring)"},
        {HCCN_COLL_REDUCE_SCATTER, 0, "hier(mesh,ring)"},
        {HCCN_COLL_REDUCE_SCATTER, 1, "hier(ring)"},
        {HCCN_COLL_ALLGATHER, 1, "hier(ring)"},
    };
    int sizes[] = {4, 4};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        test_make_view(&w, sizes, 2, cases[i].dealt);
        a.coll = cases[i].coll;
        a.view = &w.v;
        const char *got = run_case(h, &a, w.name, 0, 0);
        assert_non_null(got);
        assert_string_equal(got, cases[i].want);
    }
    int odd[] = {3, 5};
    test_make_view(&w, odd, 2, 0);
    a.coll = HCCN_COLL_ALLREDUCE;
    assert_string_equal(run_case(h, &a, w.name, 1, 0), "hier(ring)");
    assert_string_equal(
        run_case(hccn_hier_algo_find("hier_mh"), &a, w.name, 1, 0),
        "hier(ring)");
}

/* ------------------------------------------------------- composition --- */

static uint32_t count_kind(const hccn_sched_t *s, int rank, int kind)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->ranks[rank].nsteps; i++)
        n += s->ranks[rank].steps[i].kind == kind;
    return n;
}

/* A ring allreduce of 10 elements at element 2 and then a mesh allgather
 * of 2-element blocks into RECV elements 12..17, both on ranks {5, 1, 3}
 * of a 6-rank schedule; a third phase gathers the same blocks again in
 * place on RECV, so its own-block COPYs vanish. */
static void test_compose(void **state)
{
    (void)state;
    const int grp[3] = {5, 1, 3};
    hccn_sched_t *dst = hccn_sched_new(6, "composed");
    hccn_frontier_t *f = hccn_frontier_new(6), *g = hccn_frontier_new(6);
    assert_non_null(dst);
    assert_non_null(f);
    assert_non_null(g);
    hccn_coll_args_t ar = {.coll = HCCN_COLL_ALLREDUCE, .nranks = 3,
                           .count = 10, .esize = 4};
    hccn_compose_t how = hccn_compose_identity();
    how.ranks = grp;
    how.map[HCCN_BUF_SEND].base = how.map[HCCN_BUF_RECV].base = 8;
    how.phase = 1;
    hccn_sched_t *sub = hccn_hier_algo_find("ring")->build(&ar);
    assert_int_equal(hccn_sched_compose(dst, sub, &how, f), 0);
    hccn_sched_free(sub);
    /* 10 = 3 x 3 + 1: the ring's tail element, copied into SCRATCH and
     * its sum's first term copied back */
    uint32_t ring_copies = count_kind(dst, 5, HCCN_STEP_COPY);
    assert_int_equal(ring_copies, 2);

    hccn_coll_args_t ag = {.coll = HCCN_COLL_ALLGATHER, .nranks = 3,
                           .count = 2, .esize = 4};
    sub = hccn_hier_algo_find("mesh")->build(&ag);
    how.map[HCCN_BUF_SEND] = (hccn_bufmap_t){HCCN_BUF_SEND, 0, 8};
    how.map[HCCN_BUF_RECV] = (hccn_bufmap_t){HCCN_BUF_RECV, 48, 0};
    how.after = f;
    how.phase = 2;
    assert_int_equal(hccn_sched_compose(dst, sub, &how, f), 0);
    uint32_t copies = count_kind(dst, 5, HCCN_STEP_COPY);
    assert_int_equal(copies, ring_copies + 1);
    how.map[HCCN_BUF_SEND] = (hccn_bufmap_t){HCCN_BUF_RECV, 48, 8};
    how.phase = 3;
    assert_int_equal(hccn_sched_compose(dst, sub, &how, f), 0);
    assert_int_equal(count_kind(dst, 5, HCCN_STEP_COPY), copies);
    hccn_sched_free(sub);

    /* An empty sub-schedule leaves the frontier as it was. */
    ar.count = 0;
    sub = hccn_hier_algo_find("ring")->build(&ar);
    how.after = f;
    assert_int_equal(hccn_sched_compose(dst, sub, &how, g), 0);
    assert_int_equal(g->rank[5].n, f->rank[5].n);
    assert_int_equal(g->rank[0].n, 0);
    for (uint32_t i = 0; i < f->rank[5].n; i++)
        assert_int_equal(g->rank[5].idx[i], f->rank[5].idx[i]);
    hccn_sched_free(sub);

    char why[256];
    assert_int_equal(hccn_sched_validate(dst, why, sizeof(why)), 0);
    uint32_t mem[6][2][18];
    sched_interp_bufs_t b[6];
    for (int r = 0; r < 6; r++) {
        for (int i = 0; i < 18; i++) {
            mem[r][0][i] = input(r, (uint64_t)i);
            mem[r][1][i] = 0xEEEEEEEEu;
        }
        b[r] = (sched_interp_bufs_t){mem[r][0], 72, mem[r][1], 72};
    }
    sched_interp_opts_t o = {sched_interp_sum_u32, NULL, 7, 1};
    assert_int_equal(sched_interp_run(dst, b, &o, why, sizeof(why)), 0);
    for (int r = 0; r < 6; r++) {
        int in = r == 5 || r == 1 || r == 3;
        for (int i = 0; i < 18; i++) {
            uint32_t want = 0xEEEEEEEEu;
            if (in && i >= 2 && i < 12)
                want = input(5, (uint64_t)i) + input(1, (uint64_t)i) +
                       input(3, (uint64_t)i);
            else if (in && i >= 12)
                want = input(grp[(i - 12) / 2], (uint64_t)(i - 12));
            assert_int_equal(mem[r][1][i], want);
        }
    }
    /* A bad map fails and marks the schedule. */
    const int twice[3] = {0, 0, 1};
    how.ranks = twice;
    ar.count = 3;
    sub = hccn_hier_algo_find("ring")->build(&ar);
    assert_int_equal(hccn_sched_compose(dst, sub, &how, NULL), -1);
    assert_true(dst->failed);
    hccn_sched_free(sub);
    hccn_frontier_free(f);
    hccn_frontier_free(g);
    hccn_sched_free(dst);
}

/* ------------------------------------------------------------- main --- */

static void add_pairs(const char *const *names, size_t n,
                      void (*fn)(void **), pair_t *pairs,
                      struct CMUnitTest *tests, char (*tnames)[64],
                      size_t *k)
{
    for (size_t i = 0; i < n; i++) {
        const hccn_algo_t *al = hccn_hier_algo_find(names[i]);
        if (al == NULL)
            continue;
        for (int c = 0; c < HCCN_COLL_COUNT; c++) {
            if (!(al->colls & 1u << c))
                continue;
            pairs[*k] = (pair_t){al, (hccn_coll_t)c};
            snprintf(tnames[*k], sizeof(tnames[0]), "%s_%s", al->name,
                     hccn_coll_name((hccn_coll_t)c));
            tests[*k] = (struct CMUnitTest){tnames[*k], fn, NULL, NULL,
                                            &pairs[*k]};
            (*k)++;
        }
    }
}

/* The default pipelining chunk grows so that a message makes at most
 * max(1, HCCN_HIER_CHUNK_BUDGET / p) chunks; an explicit chunk stays. */
static void test_chunk_budget(void **state)
{
    (void)state;
    const uint64_t MiB = (uint64_t)1 << 20, GiB = (uint64_t)1 << 30;
    static const struct {
        int p;
        uint64_t bytes, esize, chunk, want;
    } cases[] = {
        {16, GiB, 4, 0, 4 * MiB},          /* 256 chunks <= 4096 */
        {4096, GiB, 4, 0, 64 * MiB},       /* 16 chunks */
        {4096, 48 * MiB, 4, 0, 4 * MiB},   /* 12 chunks: under the bound */
        {65536, GiB, 4, 0, GiB},           /* one chunk */
        {100000, 4096, 4, 0, 4 * MiB},     /* one chunk, smaller than dflt */
        {5000, 3 * GiB + 2, 2, 0, 0},      /* 13 chunks of whole elements */
        {4096, GiB, 4, 1 * MiB, 1 * MiB},  /* explicit: kept */
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        hccn_coll_args_t a = {.coll = HCCN_COLL_ALLREDUCE,
                              .nranks = cases[k].p,
                              .count = cases[k].bytes / cases[k].esize,
                              .esize = cases[k].esize,
                              .chunk_bytes = cases[k].chunk};
        uint64_t c = hccn_hier_chunk(&a, 4 * MiB);
        print_message("p %d, %llu B: chunk %llu B\n", cases[k].p,
                      (unsigned long long)cases[k].bytes,
                      (unsigned long long)c);
        uint64_t most = HCCN_HIER_CHUNK_BUDGET / (uint64_t)cases[k].p;
        uint64_t bytes = a.count * a.esize;
        most = most > 0 ? most : 1;
        /* Whole elements, the chunk bound kept, and no larger than it
         * must be: one element less would make one chunk too many. */
        assert_int_equal(c % a.esize, 0);
        if (cases[k].chunk == 0) {
            assert_true((bytes + c - 1) / c <= most);
            assert_true(c == 4 * MiB ||
                        (bytes + c - a.esize - 1) / (c - a.esize) > most);
        }
        if (cases[k].want != 0)
            assert_int_equal(c, cases[k].want);
    }
}

int main(void)
{
    static const struct CMUnitTest fixed[] = {
        cmocka_unit_test(test_compose),
        cmocka_unit_test(test_chunk_budget),
        cmocka_unit_test(test_hier_applicability),
    };
    enum { MAXT = 128 };
    static pair_t pairs[MAXT];
    static char tnames[MAXT][64];
    static struct CMUnitTest tests[MAXT];
    size_t nfixed = sizeof(fixed) / sizeof(fixed[0]), k = 0;
    add_pairs(flat_algos, sizeof(flat_algos) / sizeof(flat_algos[0]),
              test_flat_coll, pairs, tests, tnames, &k);
    add_pairs(hier_algos, sizeof(hier_algos) / sizeof(hier_algos[0]),
              test_hier_coll, pairs, tests, tnames, &k);
    memcpy(&tests[k], fixed, sizeof(fixed));
    if (getenv("HCCN_TEST_FILTER") != NULL) /* e.g. "hier_*" */
        cmocka_set_test_filter(getenv("HCCN_TEST_FILTER"));
    return _cmocka_run_group_tests("algos_hier", tests, k + nfixed, NULL,
                                   NULL);
}
