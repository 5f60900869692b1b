/*
 * Simulated time of ring and mesh allreduce, reduce_scatter and allgather
 * on topologies where the closed forms of docs/algorithms.md hold exactly:
 * configs/ring-8.json for ring (links r -> r+1 only) and a one-node full
 * mesh for mesh. alpha, B, R and M are read from the topology (routes and
 * NPU figures), not written here. Each call runs in a fresh
 * hccn_cluster_run, so every rank calls it at simulated time 0 and its
 * hccn_last_duration() is the collective's time on that rank; the largest
 * over the ranks must equal the formula to 1e-9. Counts include ones that
 * p does not divide (uneven allreduce blocks) and 0-byte blocks.
 *
 * Also: the same program twice gives the same times, bit for bit.
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

#include "device_sim/topo.h"
#include "hccn/hccn.h"
#include "hierarchy/coll.h"
#include "test_util.h"

#define MAXR 16

/* One node of 8 NPUs, every ordered pair its own link. Local copies are
 * slower than links (mem_bw 20 < bw 50 GB/s), so allgather's own-block
 * COPY is the longer branch of max(..., copy) for large blocks when out
 * of place. */
static const char *mesh8_json =
    "{\"version\":1,\"name\":\"mesh-8\",\"node_types\":[{\"count\":1,"
    "\"npu\":{\"count\":8,\"arena_MiB\":64,\"reduce_bw_GBps\":80,"
    "\"mem_bw_GBps\":20},"
    "\"fabric\":{\"type\":\"mesh\",\"bw_GBps\":50,\"lat_us\":2}}]}";

/* The figures of the formulas: alpha (s), B, R, M (bytes/s; M = 0: copies
 * are free). */
typedef struct {
    int p;
    double alpha, B, R, M;
} figures_t;

/* Reads the figures for an algorithm whose transfers go r -> r + step
 * (ring: step 1) or to every peer (mesh: step 0), and checks that every
 * such route has the same latency and bottleneck bandwidth. */
static figures_t read_figures(const hccn_sim_topo_t *t, int ring)
{
    figures_t f = {.p = t->nnpus, .alpha = -1.0};
    for (int a = 0; a < t->nnpus; a++)
        for (int b = 0; b < t->nnpus; b++) {
            if (a == b || (ring && b != (a + 1) % t->nnpus))
                continue;
            int links[HCCN_SIM_ROUTE_MAX];
            double lat, bw = INFINITY;
            int n = hccn_sim_topo_route(t, a, b, links, &lat);
            assert_true(n >= 1);
            for (int i = 0; i < n; i++)
                bw = fmin(bw, t->links[links[i]].bw);
            if (f.alpha < 0.0) {
                f.alpha = lat;
                f.B = bw;
            }
            assert_true(lat == f.alpha && bw == f.B);
        }
    f.R = t->npus[0].reduce_bw;
    f.M = t->npus[0].mem_bw;
    for (int a = 1; a < t->nnpus; a++)
        assert_true(t->npus[a].reduce_bw == f.R && t->npus[a].mem_bw == f.M);
    return f;
}

/* ------------------------------------------------------ closed forms */

static double copy_time(const figures_t *f, double bytes, int inplace)
{
    return inplace || f->M <= 0.0 ? 0.0 : bytes / f->M;
}

/* docs/algorithms.md, "ring". count is the allreduce message or the
 * per-rank block of reduce_scatter / allgather. */
static double ring_formula(const figures_t *f, hccn_coll_t coll,
                           size_t count, size_t es, int inplace)
{
    double p = f->p, b = (double)(count * es);
    double q = (double)(count / (size_t)f->p * es);
    double tb = (double)(count % (size_t)f->p * es);
    switch (coll) {
    case HCCN_COLL_ALLREDUCE:   /* equal blocks; the tail beside the
                                 * allgather's, then a copy and p - 1
                                 * reductions of it */
        return (q > 0 ? (p - 1) * (f->alpha + q / f->B + q / f->R) : 0.0) +
               (p - 1) * (f->alpha + (q + tb) / f->B) +
               copy_time(f, tb, 0) + (p - 1) * tb / f->R;
    case HCCN_COLL_REDUCE_SCATTER:
        return (p - 1) * (f->alpha + b / f->B + b / f->R);
    default:
        return fmax((p - 1) * (f->alpha + b / f->B),
                    copy_time(f, b, inplace));
    }
}

/* docs/algorithms.md, "mesh". */
static double mesh_formula(const figures_t *f, hccn_coll_t coll,
                           size_t count, size_t es, int inplace)
{
    double p = f->p, b = (double)(count * es);
    double bmax = (double)((count + (size_t)f->p - 1) / (size_t)f->p * es);
    switch (coll) {
    case HCCN_COLL_ALLREDUCE:
        return 2 * f->alpha + 2 * bmax / f->B + (p - 1) * bmax / f->R;
    case HCCN_COLL_REDUCE_SCATTER:
        return f->alpha + b / f->B + (p - 1) * b / f->R;
    default:
        return fmax(f->alpha + b / f->B, copy_time(f, b, inplace));
    }
}

/* ------------------------------------------------------- one call */

typedef struct {
    hccn_coll_t coll;
    size_t count;
    hccn_dtype_t dtype;
    int inplace;
    hccn_status_t rc[MAXR];
    double dur[MAXR];
    char err[MAXR][256];
} call_t;

static hccn_status_t call_rank(hccn_ctx_t *ctx, void *arg)
{
    call_t *c = arg;
    int r = hccn_rank(ctx), p = hccn_nranks(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx);
    size_t es = hccn_dtype_size(c->dtype), blk = c->count * es;
    size_t sbytes = c->coll == HCCN_COLL_REDUCE_SCATTER ? blk * p : blk;
    size_t rbytes = c->coll == HCCN_COLL_ALLGATHER ? blk * p : blk;
    char *mem;
    hccn_status_t rc = hccn_malloc(ctx, sbytes + rbytes + 1, (void **)&mem);
    if (rc != HCCN_OK)
        return rc;
    /* The bytes do not matter for the time; zeros keep the reductions
     * free of NaN and subnormal operands. */
    memset(mem, 0, sbytes + rbytes + 1);
    /* Out of place: SEND then RECV. In place (allgather): RECV, with SEND
     * the rank's own block of it. */
    char *s = mem, *rv = mem + sbytes;
    if (c->inplace && c->coll == HCCN_COLL_ALLGATHER) {
        rv = mem;
        s = mem + (size_t)r * blk;
    }
    switch (c->coll) {
    case HCCN_COLL_ALLREDUCE:
        rc = hccn_allreduce(w, s, rv, c->count, c->dtype, HCCN_SUM);
        break;
    case HCCN_COLL_REDUCE_SCATTER:
        rc = hccn_reduce_scatter(w, s, rv, c->count, c->dtype, HCCN_SUM);
        break;
    default:
        rc = hccn_allgather(w, s, rv, c->count, c->dtype);
        break;
    }
    c->rc[r] = rc;
    c->dur[r] = hccn_last_duration(ctx);
    snprintf(c->err[r], sizeof(c->err[r]), "%s",
             rc != HCCN_OK ? hccn_last_error() : "");
    hccn_free(ctx, mem);
    return HCCN_OK;
}

/* Runs one call with HCCN_ALGO = algo on cl and returns the largest
 * duration over the ranks; *spread gets largest minus smallest. */
static double run_call(hccn_cluster_t *cl, const char *algo, call_t *c,
                       double *spread)
{
    int p = hccn_cluster_size(cl);
    setenv("HCCN_ALGO", algo, 1);
    hccn_status_t rc = hccn_cluster_run(cl, call_rank, c, NULL);
    unsetenv("HCCN_ALGO");
    assert_int_equal(rc, HCCN_OK);
    double hi = -INFINITY, lo = INFINITY;
    for (int r = 0; r < p; r++) {
        if (c->rc[r] != HCCN_OK)
            fail_msg("%s %s count=%zu: rank %d: %s", algo,
                     hccn_coll_name(c->coll), c->count, r, c->err[r]);
        hi = fmax(hi, c->dur[r]);
        lo = fmin(lo, c->dur[r]);
    }
    *spread = hi - lo;
    return hi;
}

typedef double (*formula_fn)(const figures_t *f, hccn_coll_t coll,
                             size_t count, size_t es, int inplace);

static const hccn_coll_t colls[] = {HCCN_COLL_ALLREDUCE,
                                    HCCN_COLL_REDUCE_SCATTER,
                                    HCCN_COLL_ALLGATHER};

/* Counts of allreduce: 1 (a tail alone on 8 ranks), small odd, divisible by
 * 8, and large ones that 8 does not divide. Of reduce_scatter and
 * allgather (per-rank blocks): about an eighth of those, so that the
 * buffers stay alike in size. */
static const size_t ar_counts[] = {1, 7, 4096, 100003, 262147};
static const size_t block_counts[] = {1, 7, 512, 12503, 32771};
#define NCOUNTS (sizeof(ar_counts) / sizeof(ar_counts[0]))

static void check_algo(hccn_cluster_t *cl, const hccn_sim_topo_t *topo,
                       const char *algo, formula_fn formula)
{
    figures_t f = read_figures(topo, strcmp(algo, "ring") == 0);
    assert_int_equal(f.p, hccn_cluster_size(cl));
    const hccn_dtype_t dtypes[] = {HCCN_FP32, HCCN_FP16};
    for (size_t ci = 0; ci < sizeof(colls) / sizeof(colls[0]); ci++)
        for (size_t k = 0; k < NCOUNTS; k++)
            for (int v = 0; v < 2; v++) {
                /* v = 1: fp16, and in place where the collective has a
                 * form whose time differs (allgather's copy). */
                call_t c = {.coll = colls[ci],
                            .count = colls[ci] == HCCN_COLL_ALLREDUCE
                                         ? ar_counts[k]
                                         : block_counts[k],
                            .dtype = dtypes[v], .inplace = v};
                size_t es = hccn_dtype_size(c.dtype);
                double spread;
                double got = run_call(cl, algo, &c, &spread);
                double want = formula(&f, c.coll, c.count, es, c.inplace);
                if (test_rel_diff(got, want) > 1e-9)
                    fail_msg("%s %s %s count=%zu%s: %.15g s, formula %.15g",
                             algo, hccn_coll_name(c.coll),
                             hccn_dtype_name(c.dtype), c.count,
                             c.inplace ? " in place" : "", got, want);
                /* Symmetric when every rank's blocks are alike: the
                 * ring's always are (its tail goes to every rank). */
                int even = c.coll != HCCN_COLL_ALLREDUCE ||
                           c.count % (size_t)f.p == 0 ||
                           strcmp(algo, "ring") == 0;
                if (even && spread > 1e-9 * want)
                    fail_msg("%s %s count=%zu: ranks disagree by %.3g s",
                             algo, hccn_coll_name(c.coll), c.count, spread);
            }
}

static void test_ring(void **state)
{
    (void)state;
    const char *path = test_path("configs/ring-8.json");
    char err[512];
    hccn_sim_topo_t *topo;
    hccn_cluster_t *cl;
    assert_int_equal(hccn_sim_topo_load_file(path, &topo, err, sizeof(err)),
                     HCCN_OK);
    assert_int_equal(hccn_cluster_create(path, NULL, &cl), HCCN_OK);
    check_algo(cl, topo, "ring", ring_formula);
    hccn_cluster_destroy(cl);
    hccn_sim_topo_free(topo);
}

static void test_mesh(void **state)
{
    (void)state;
    char err[512];
    hccn_sim_topo_t *topo;
    hccn_cluster_t *cl;
    assert_int_equal(hccn_sim_topo_load_string(mesh8_json, "mesh-8", &topo,
                                               err, sizeof(err)),
                     HCCN_OK);
    assert_int_equal(hccn_cluster_create_json(mesh8_json, "mesh-8", NULL, &cl),
                     HCCN_OK);
    check_algo(cl, topo, "mesh", mesh_formula);
    hccn_cluster_destroy(cl);
    hccn_sim_topo_free(topo);
}

/* A hand check of one formula, so that a figure read wrongly from the
 * topology cannot hide behind the same mistake in the formula: ring-8 is
 * 1 us and 25 GB/s per hop, 100 GB/s reduction. */
static void test_ring_by_hand(void **state)
{
    (void)state;
    hccn_cluster_t *cl;
    assert_int_equal(hccn_cluster_create(test_path("configs/ring-8.json"),
                                         NULL, &cl), HCCN_OK);
    call_t c = {.coll = HCCN_COLL_REDUCE_SCATTER, .count = 1 << 17,
                .dtype = HCCN_FP32};
    double spread, b = 4.0 * (1 << 17);
    double got = run_call(cl, "ring", &c, &spread);
    assert_true(test_rel_diff(got, 7 * (1e-6 + b / 25e9 + b / 100e9)) < 1e-9);
    hccn_cluster_destroy(cl);
}

/* --------------------------------------------------------- determinism */

typedef struct {
    double t[MAXR][8];        /* clock after each call */
    double d[MAXR][8];        /* its duration */
    hccn_status_t rc[MAXR];
} prog_t;

/* A program mixing collectives and sizes, with compute between calls that
 * differs by rank, so ranks arrive at different simulated times. */
static hccn_status_t prog_rank(hccn_ctx_t *ctx, void *arg)
{
    prog_t *pr = arg;
    int r = hccn_rank(ctx), p = hccn_nranks(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx);
    const size_t n = 100003;
    float *s, *rv;
    hccn_status_t rc;
    if ((rc = hccn_malloc(ctx, n * 4 * (size_t)p, (void **)&s)) ||
        (rc = hccn_malloc(ctx, n * 4 * (size_t)p, (void **)&rv)))
        return rc;
    memset(s, 0, n * 4 * (size_t)p);
    for (int k = 0; k < 8 && rc == HCCN_OK; k++) {
        hccn_compute(ctx, 1e-6 * ((r * 3 + k) % 5));
        switch (k % 4) {
        case 0:
            rc = hccn_allreduce(w, s, rv, n - (size_t)k, HCCN_FP32, HCCN_SUM);
            break;
        case 1:
            rc = hccn_reduce_scatter(w, s, rv, n / 8, HCCN_FP32, HCCN_MAX);
            break;
        case 2:
            rc = hccn_allgather(w, s, rv, 777 * (size_t)k, HCCN_FP32);
            break;
        default:
            rc = hccn_broadcast(w, s, s, n, HCCN_FP32, k % p);
            break;
        }
        pr->t[r][k] = hccn_time(ctx);
        pr->d[r][k] = hccn_last_duration(ctx);
    }
    pr->rc[r] = rc;
    hccn_free(ctx, s);
    hccn_free(ctx, rv);
    return rc;
}

static void test_same_program_same_times(void **state)
{
    (void)state;
    const char *cfgs[] = {"configs/ring-8.json", "configs/default.json"};
    for (size_t i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
        hccn_cluster_t *cl;
        assert_int_equal(hccn_cluster_create(test_path(cfgs[i]), NULL, &cl),
                         HCCN_OK);
        prog_t *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
        assert_non_null(a);
        assert_non_null(b);
        assert_int_equal(hccn_cluster_run(cl, prog_rank, a, NULL), HCCN_OK);
        hccn_cluster_destroy(cl);
        /* A new cluster from the same file, so nothing is carried over. */
        assert_int_equal(hccn_cluster_create(test_path(cfgs[i]), NULL, &cl),
                         HCCN_OK);
        assert_int_equal(hccn_cluster_run(cl, prog_rank, b, NULL), HCCN_OK);
        assert_true(a->t[0][7] > 0.0);
        assert_memory_equal(a->t, b->t, sizeof(a->t));
        assert_memory_equal(a->d, b->d, sizeof(a->d));
        /* And a third time on the same cluster. */
        memset(b, 0, sizeof(*b));
        assert_int_equal(hccn_cluster_run(cl, prog_rank, b, NULL), HCCN_OK);
        assert_memory_equal(a->t, b->t, sizeof(a->t));
        assert_memory_equal(a->d, b->d, sizeof(a->d));
        hccn_cluster_destroy(cl);
        free(a);
        free(b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_by_hand),
        cmocka_unit_test(test_ring),
        cmocka_unit_test(test_mesh),
        cmocka_unit_test(test_same_program_same_times),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
