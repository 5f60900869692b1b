/*
 * Compressed transfers (HCCN_COMPRESS_FP16 / BF16): fp32 allreduce,
 * reduce_scatter and allgather whose values cross every link as 16-bit
 * floats. Checked against docs/compression.md:
 *
 * - the error bound, elementwise, against a double-precision serial
 *   reference, on random fp32 data in [-1, 1) on configs/default.json
 *   (16 ranks), for the default algorithm (set per call, hccn_*_opts, and
 *   per communicator, hccn_comm_set_compression) and for every algorithm
 *   of the table that implements the collective, forced per call:
 *       |result - exact| <= gamma * sum_i |x_i| + h * eta,
 *       gamma = (1+u)^h (1+2^-24)^a - 1,
 *   h roundings to the wire type and a fp32 additions on the longest
 *   path (ring and mesh: h = p, a = p-1), u = 2^-11 (fp16) or
 *   2^-8 (bf16), eta = 2^-25 (fp16 subnormals) or 0; for the other
 *   algorithms the simple form C = p + 1, gamma <= (p+1) u;
 * - allgather returns exactly each value rounded to the wire type, and
 *   MAX exactly the rounded maximum (rounding is monotonic);
 * - allreduce results are the same bits on every rank, for every
 *   algorithm;
 * - simulated time: on configs/ring-8.json with HCCN_ALGO=ring, the ring
 *   closed forms of docs/algorithms.md with b replaced by b/2 in the
 *   bandwidth terms only (reductions still run on fp32 data);
 * - wrong use: fp64 or int32 data, PROD, an unknown mode.
 *
 * cmocka asserts are not thread-safe: rank functions record, the main
 * thread asserts.
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

#include "hccn/hccn.h"
#include "hierarchy/coll.h"
#include "test_util.h"

#define MAXR 16

static hccn_cluster_t *make_cluster(const char *cfg)
{
    hccn_cluster_t *cl = NULL;
    if (hccn_cluster_create(test_path(cfg), NULL, &cl) != HCCN_OK)
        fail_msg("cluster %s: %s", cfg, hccn_last_error());
    return cl;
}

static void run_ok(hccn_cluster_t *cl, hccn_rank_fn fn, void *arg)
{
    hccn_status_t rc = hccn_cluster_run(cl, fn, arg, NULL);
    if (rc != HCCN_OK)
        fail_msg("run: %s: %s", hccn_status_name(rc), hccn_last_error());
}

/* ------------------------------------------------ reference rounding */

/* x rounded to fp16 (bf16 when bf16 is set), to nearest, ties to even,
 * and widened back: an implementation independent of the runtime's. */
static double wire_round(float x, int bf16)
{
    double a = fabs((double)x);
    int sig = bf16 ? 8 : 11;               /* significant bits */
    int emin = bf16 ? -126 : -14;          /* least normal exponent */
    if (a == 0.0 || isnan(a))
        return x;
    if (!bf16 && a >= 65520.0)
        return copysign(INFINITY, x);
    int e;
    frexp(a, &e);                          /* a in [2^(e-1), 2^e) */
    int q = e - 1 < emin ? emin : e - 1;   /* subnormals: a fixed step */
    double step = ldexp(1.0, q - (sig - 1));
    return copysign(nearbyint(a / step) * step, x);
}

static double unit_roundoff(int bf16)
{
    return bf16 ? 0x1p-8 : 0x1p-11;
}

/* gamma for h wire roundings and a fp32 additions (docs/compression.md). */
static double gamma_of(int h, int a, int bf16)
{
    return pow(1.0 + unit_roundoff(bf16), h) * pow(1.0 + 0x1p-24, a) - 1.0;
}

/* --------------------------------------------------------------- data */

static float xval(int rank, size_t i, int salt)
{
    unsigned long long s = ((unsigned long long)rank << 40) ^
                           ((unsigned long long)salt << 32) ^ i;
    return (float)((double)(test_rand_next(&s) >> 11) * 0x1p-53 * 2.0 - 1.0);
}

/* ============================================== errors against the bound */

enum { AR, RS, AG };
enum { PER_CALL, PER_COMM };

typedef struct {
    int coll, how, compress;
    const char *algo;          /* NULL: the default selection */
    hccn_redop_t op;
    size_t count;              /* allreduce count, or the per-rank block */
    int salt;
    float *out[MAXR];
} cz_t;

static size_t out_count(const cz_t *z, int n)
{
    return z->coll == AG ? z->count * (size_t)n : z->count;
}

static size_t in_count(const cz_t *z, int n)
{
    return z->coll == RS ? z->count * (size_t)n : z->count;
}

static hccn_status_t cz_rank(hccn_ctx_t *ctx, void *arg)
{
    cz_t *z = arg;
    int r = hccn_rank(ctx), n = hccn_nranks(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx);
    size_t ni = in_count(z, n), no = out_count(z, n);
    float *sb, *rb;
    hccn_status_t rc;
    if ((rc = hccn_malloc(ctx, ni * 4, (void **)&sb)) != HCCN_OK ||
        (rc = hccn_malloc(ctx, no * 4, (void **)&rb)) != HCCN_OK)
        return rc;
    for (size_t i = 0; i < ni; i++)
        sb[i] = xval(r, i, z->salt);
    hccn_coll_opts_t o = {sizeof(o), z->compress, z->algo};
    if (z->how == PER_COMM) {
        o.compress = -1;       /* the communicator's */
        if ((rc = hccn_comm_set_compression(w, z->compress)) != HCCN_OK)
            return rc;
    }
    switch (z->coll) {
    case AR:
        rc = hccn_allreduce_opts(w, sb, rb, z->count, HCCN_FP32, z->op, &o,
                                 NULL);
        break;
    case RS:
        rc = hccn_reduce_scatter_opts(w, sb, rb, z->count, HCCN_FP32, z->op,
                                      &o, NULL);
        break;
    default:
        rc = hccn_allgather_opts(w, sb, rb, z->count, HCCN_FP32, &o, NULL);
        break;
    }
    if (rc != HCCN_OK)
        return rc;
    memcpy(z->out[r], rb, no * 4);
    hccn_free(ctx, sb);
    hccn_free(ctx, rb);
    return hccn_comm_set_compression(w, HCCN_COMPRESS_NONE);
}

static void cz_alloc(cz_t *z, int n)
{
    for (int r = 0; r < n; r++)
        z->out[r] = calloc(out_count(z, n), sizeof(float));
}

static void cz_free(cz_t *z, int n)
{
    for (int r = 0; r < n; r++)
        free(z->out[r]);
}

/* The bound's (h, a) for the algorithm that ran; the simple C = p + 1 when
 * the algorithm is not named. */
static double bound_gamma(const char *algo, int p, int bf16)
{
    if (algo != NULL && strcmp(algo, "ring") == 0)
        return gamma_of(p, p - 1, bf16);
    if (algo != NULL && strcmp(algo, "mesh") == 0)
        return gamma_of(p, p - 1, bf16);
    return (p + 1) * unit_roundoff(bf16);
}

/* Sum or max of element i of block `blk` (allreduce: blk 0) over ranks;
 * abs gets sum |x|. */
static double reference(const cz_t *z, int n, size_t idx, double *abs)
{
    double s = 0.0, m = -INFINITY;
    *abs = 0.0;
    for (int q = 0; q < n; q++) {
        double x = xval(q, idx, z->salt);
        s += x;
        m = fmax(m, x);
        *abs += fabs(x);
    }
    return z->op == HCCN_MAX ? m : z->op == HCCN_AVG ? s / n : s;
}

static double check_reduced(const cz_t *z, int n)
{
    int bf16 = z->compress == HCCN_COMPRESS_BF16;
    double g = bound_gamma(z->algo, n, bf16);
    double eta = bf16 ? 0.0 : 0x1p-25;
    double worst = 0.0;        /* largest |error| / (u sum|x|) seen */
    for (int r = 0; r < n; r++)
        for (size_t i = 0; i < z->count; i++) {
            size_t idx = z->coll == RS ? (size_t)r * z->count + i : i;
            double abs, want = reference(z, n, idx, &abs);
            double got = z->out[r][i];
            if (z->op == HCCN_MAX) {
                /* max of rounded values, rounded: the rounded max. */
                float mx = (float)want;
                if (got != wire_round(mx, bf16))
                    fail_msg("rank %d element %zu: max %.9g, expected %.9g",
                             r, i, got, wire_round(mx, bf16));
                continue;
            }
            double scale = z->op == HCCN_AVG ? 1.0 / n : 1.0;
            double lim = scale * (g * abs + n * eta);
            double err = fabs(got - want);
            if (!(err <= lim))
                fail_msg("%s compress %d rank %d element %zu: %.9g, exact "
                         "%.9g, error %.3g > bound %.3g",
                         z->algo ? z->algo : "default", z->compress, r, i,
                         got, want, err, lim);
            worst = fmax(worst, err / (scale * abs * unit_roundoff(bf16)));
        }
    return worst;
}

static void check_allgather(const cz_t *z, int n)
{
    int bf16 = z->compress == HCCN_COMPRESS_BF16;
    for (int r = 0; r < n; r++)
        for (int q = 0; q < n; q++)
            for (size_t i = 0; i < z->count; i++) {
                double want = wire_round(xval(q, i, z->salt), bf16);
                double got = z->out[r][(size_t)q * z->count + i];
                if (got != want)
                    fail_msg("rank %d block %d element %zu: %.9g, expected "
                             "%.9g", r, q, i, got, want);
            }
}

static void assert_same_on_all_ranks(const cz_t *z, int n)
{
    for (int r = 1; r < n; r++)
        for (size_t i = 0; i < z->count; i++)
            if (memcmp(&z->out[r][i], &z->out[0][i], sizeof(float)) != 0)
                fail_msg("%s, compress %d: element %zu is %.9g on rank %d "
                         "but %.9g on rank 0", z->algo ? z->algo : "default",
                         z->compress, i, z->out[r][i], r, z->out[0][i]);
}

#define ECNT 100003            /* prime: uneven blocks */
#define RSCNT 4099

static void error_bounds_case(hccn_cluster_t *cl, int coll, int mode,
                              const char *algo)
{
    int n = hccn_cluster_size(cl);
    cz_t z = {.coll = coll, .how = PER_CALL, .compress = mode, .algo = algo,
              .op = HCCN_SUM, .count = coll == AR ? ECNT : RSCNT,
              .salt = 10 * mode + coll};
    cz_alloc(&z, n);
    run_ok(cl, cz_rank, &z);
    if (coll == AG)
        check_allgather(&z, n);
    else
        assert_true(check_reduced(&z, n) > 0.0);   /* it did compress */
    /* Every operand and result of a compressed reduction is a wire-type
     * value (runtime/exec.c), so ranks that combine the same values get
     * the same bits, whatever the algorithm. */
    if (coll == AR)
        assert_same_on_all_ranks(&z, n);
    if (algo == NULL) {
        /* The communicator-wide setting gives the same bits. */
        cz_t c = z;
        c.how = PER_COMM;
        cz_alloc(&c, n);
        run_ok(cl, cz_rank, &c);
        for (int r = 0; r < n; r++)
            assert_memory_equal(c.out[r], z.out[r],
                                out_count(&z, n) * sizeof(float));
        cz_free(&c, n);
    }
    cz_free(&z, n);
}

/* The default selection, then every algorithm of the table that
 * implements the collective, forced per call. */
static void test_error_bounds(void **state)
{
    (void)state;
    hccn_cluster_t *cl = make_cluster("configs/default.json");
    const hccn_coll_t kinds[] = {HCCN_COLL_ALLREDUCE,
                                 HCCN_COLL_REDUCE_SCATTER,
                                 HCCN_COLL_ALLGATHER};
    for (int mode = HCCN_COMPRESS_FP16; mode <= HCCN_COMPRESS_BF16; mode++)
        for (int coll = AR; coll <= AG; coll++) {
            error_bounds_case(cl, coll, mode, NULL);
            for (const hccn_algo_t *a = hccn_hier_algos(); a->name; a++)
                if (a->colls & (1u << kinds[coll]))
                    error_bounds_case(cl, coll, mode, a->name);
        }
    hccn_cluster_destroy(cl);
}

/* AVG divides the bounded sum by p (exact for p = 16); MAX is exact up to
 * the one rounding of the maximum. */
static void test_avg_max(void **state)
{
    (void)state;
    hccn_cluster_t *cl = make_cluster("configs/default.json");
    int n = hccn_cluster_size(cl);
    const hccn_redop_t ops[] = {HCCN_AVG, HCCN_MAX};
    for (int m = 1; m <= 2; m++)
        for (int k = 0; k < 2; k++)
            for (int coll = AR; coll <= RS; coll++) {
                cz_t z = {.coll = coll, .how = PER_CALL, .compress = m,
                          .algo = NULL, .op = ops[k],
                          .count = coll == AR ? 20011 : 1009,
                          .salt = 40 + 4 * m + 2 * k + coll};
                cz_alloc(&z, n);
                run_ok(cl, cz_rank, &z);
                check_reduced(&z, n);
                if (coll == AR)
                    assert_same_on_all_ranks(&z, n);
                cz_free(&z, n);
            }
    hccn_cluster_destroy(cl);
}

/* ======================================================= simulated time */

/* configs/ring-8.json: links r -> r+1 of 25 GB/s and 1 us; reduce_bw 100
 * GB/s; no mem_bw (copies free). The ring uses each link once per round,
 * so the closed forms of docs/algorithms.md hold; with compression the
 * bytes on the wire are halved, the reductions are not:
 *   allreduce       2(p-1)(alpha + w b_max/B) + (p-1) b_max/R
 *   reduce_scatter  (p-1)(alpha + w b/B + b/R)
 *   allgather       (p-1)(alpha + w b/B)
 * with w = 1 uncompressed, 1/2 compressed. */
static const double r8_alpha = 1e-6, r8_bw = 25e9, r8_rbw = 100e9;

static double ring_time(int coll, int p, size_t count, double w)
{
    double b = (double)(count / (size_t)(coll == AR ? p : 1) * 4);
    double tb = coll == AR ? (double)(count % (size_t)p * 4) : 0.0;
    switch (coll) {
    case AR:    /* equal blocks; a tail beside the allgather, then summed
                 * (copies are free without a mem_bw) */
        return (p - 1) * (r8_alpha + w * b / r8_bw + b / r8_rbw) +
               (p - 1) * (r8_alpha + w * (b + tb) / r8_bw) +
               (p - 1) * tb / r8_rbw;
    case RS:
        return (p - 1) * (r8_alpha + w * b / r8_bw + b / r8_rbw);
    default:
        return (p - 1) * (r8_alpha + w * b / r8_bw);
    }
}

typedef struct {
    int coll, compress;
    size_t count;
    double end[MAXR];
} tz_t;

static hccn_status_t tz_rank(hccn_ctx_t *ctx, void *arg)
{
    tz_t *t = arg;
    int r = hccn_rank(ctx), n = hccn_nranks(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx);
    size_t ni = t->coll == RS ? t->count * n : t->count;
    size_t no = t->coll == AG ? t->count * n : t->count;
    float *sb, *rb;
    hccn_status_t rc;
    if ((rc = hccn_malloc(ctx, ni * 4, (void **)&sb)) != HCCN_OK ||
        (rc = hccn_malloc(ctx, no * 4, (void **)&rb)) != HCCN_OK)
        return rc;
    for (size_t i = 0; i < ni; i++)
        sb[i] = xval(r, i, 99);
    hccn_coll_opts_t o = {sizeof(o), t->compress, NULL};
    hccn_future_t *f;
    if (t->coll == AR)
        rc = hccn_allreduce_opts(w, sb, rb, t->count, HCCN_FP32, HCCN_SUM,
                                 &o, &f);
    else if (t->coll == RS)
        rc = hccn_reduce_scatter_opts(w, sb, rb, t->count, HCCN_FP32,
                                      HCCN_SUM, &o, &f);
    else
        rc = hccn_allgather_opts(w, sb, rb, t->count, HCCN_FP32, &o, &f);
    if (rc != HCCN_OK || (rc = hccn_wait(f)) != HCCN_OK ||
        (rc = hccn_future_times(f, NULL, &t->end[r])) != HCCN_OK)
        return rc;
    hccn_future_free(f);
    hccn_free(ctx, sb);
    hccn_free(ctx, rb);
    return HCCN_OK;
}

static void test_time(void **state)
{
    (void)state;
    setenv("HCCN_ALGO", "ring", 1);
    hccn_cluster_t *cl = make_cluster("configs/ring-8.json");
    int p = hccn_cluster_size(cl);
    assert_int_equal(p, 8);
    /* Counts: a multiple of p (every rank ends together) and, for
     * allreduce, a prime (its tail of 100003 mod 8 elements travels
     * beside the allgather's blocks and is summed on every rank). */
    const size_t counts[3][2] = {{262144, 100003}, {32768, 32768},
                                 {32768, 32768}};
    for (int coll = AR; coll <= AG; coll++)
        for (int k = 0; k < 2; k++)
            for (int c = 0; c <= HCCN_COMPRESS_BF16; c++) {
                tz_t t = {.coll = coll, .compress = c,
                          .count = counts[coll][k]};
                run_ok(cl, tz_rank, &t);
                double want = ring_time(coll, p, t.count, c ? 0.5 : 1.0);
                double last = 0.0;
                for (int r = 0; r < p; r++)
                    last = fmax(last, t.end[r]);
                if (test_rel_diff(last, want) > 1e-12)
                    fail_msg("coll %d count %zu compress %d: %.17g s, "
                             "expected %.17g", coll, t.count, c, last, want);
                for (int r = 0; t.count % p == 0 && r < p; r++)
                    assert_true(test_rel_diff(t.end[r], want) < 1e-12);
            }
    hccn_cluster_destroy(cl);
    unsetenv("HCCN_ALGO");
}

/* ============================================================ wrong use */

enum { W_FP64, W_INT32, W_PROD, W_RS_INT32, W_AG_FP64, W_BAD_MODE,
       W_SET_BAD_MODE, W_COMM_FP64, W_SIZE, NWRONG };

typedef struct {
    hccn_status_t rc[MAXR][NWRONG];
    char msg[MAXR][NWRONG][240];
    int ok[MAXR];
} wrong_t;

static void note(wrong_t *u, int r, int k, hccn_status_t rc)
{
    u->rc[r][k] = rc;
    snprintf(u->msg[r][k], sizeof(u->msg[r][k]), "%s", hccn_last_error());
}

static hccn_status_t wrong_rank(hccn_ctx_t *ctx, void *arg)
{
    wrong_t *u = arg;
    int r = hccn_rank(ctx), n = hccn_nranks(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx);
    void *sb, *rb;
    hccn_status_t rc;
    if ((rc = hccn_malloc(ctx, 1024 * 8 * n, &sb)) != HCCN_OK ||
        (rc = hccn_malloc(ctx, 1024 * 8 * n, &rb)) != HCCN_OK)
        return rc;
    memset(sb, 0, 1024 * 8 * n);
    hccn_coll_opts_t fp16 = {sizeof(fp16), HCCN_COMPRESS_FP16, NULL};
    hccn_coll_opts_t bad = {sizeof(bad), 7, NULL};
    hccn_coll_opts_t small = {4, HCCN_COMPRESS_FP16, NULL};
    note(u, r, W_FP64, hccn_allreduce_opts(w, sb, rb, 1024, HCCN_FP64,
                                           HCCN_SUM, &fp16, NULL));
    note(u, r, W_INT32, hccn_allreduce_opts(w, sb, rb, 1024, HCCN_INT32,
                                            HCCN_SUM, &fp16, NULL));
    note(u, r, W_PROD, hccn_allreduce_opts(w, sb, rb, 1024, HCCN_FP32,
                                           HCCN_PROD, &fp16, NULL));
    note(u, r, W_RS_INT32,
         hccn_reduce_scatter_opts(w, sb, rb, 64, HCCN_INT32, HCCN_SUM, &fp16,
                                  NULL));
    note(u, r, W_AG_FP64,
         hccn_allgather_opts(w, sb, rb, 64, HCCN_FP64, &fp16, NULL));
    note(u, r, W_BAD_MODE, hccn_allreduce_opts(w, sb, rb, 1024, HCCN_FP32,
                                               HCCN_SUM, &bad, NULL));
    note(u, r, W_SET_BAD_MODE, hccn_comm_set_compression(w, 9));
    note(u, r, W_SIZE, hccn_allreduce_opts(w, sb, rb, 1024, HCCN_FP32,
                                           HCCN_SUM, &small, NULL));
    /* A communicator-wide setting applies the same rule to the three
     * compressible collectives, and leaves the others alone. */
    u->ok[r] = hccn_comm_set_compression(w, HCCN_COMPRESS_BF16) == HCCN_OK;
    note(u, r, W_COMM_FP64,
         hccn_allreduce(w, sb, rb, 1024, HCCN_FP64, HCCN_SUM));
    float *f = sb;
    for (int i = 0; i < 1024; i++)
        f[i] = 1.0f + 0x1p-20f * (float)r;   /* not a bf16 value */
    u->ok[r] &= hccn_broadcast(w, sb, rb, 1024, HCCN_FP32, 3) == HCCN_OK &&
                ((float *)rb)[5] == 1.0f + 0x1p-20f * 3.0f;
    u->ok[r] &= hccn_comm_set_compression(w, HCCN_COMPRESS_NONE) == HCCN_OK;
    /* Nothing was posted by the failed calls: the world still works. */
    for (int i = 0; i < 1024; i++)
        f[i] = 1.0f;
    u->ok[r] &= hccn_allreduce(w, sb, rb, 1024, HCCN_FP32, HCCN_SUM) ==
                    HCCN_OK &&
                ((float *)rb)[1023] == (float)n;
    hccn_free(ctx, sb);
    hccn_free(ctx, rb);
    return HCCN_OK;
}

static void expect_err(const wrong_t *u, int r, int k, hccn_status_t code,
                       const char *w1, const char *w2)
{
    const char *m = u->msg[r][k];
    if (u->rc[r][k] != code || strstr(m, w1) == NULL ||
        (w2 != NULL && strstr(m, w2) == NULL))
        fail_msg("rank %d case %d: got %s \"%s\", expected %s with \"%s\"%s%s",
                 r, k, hccn_status_name(u->rc[r][k]), m,
                 hccn_status_name(code), w1, w2 ? " and " : "", w2 ? w2 : "");
}

static void test_wrong_use(void **state)
{
    (void)state;
    hccn_cluster_t *cl = make_cluster("configs/default.json");
    int n = hccn_cluster_size(cl);
    static wrong_t u;
    memset(&u, 0, sizeof(u));
    run_ok(cl, wrong_rank, &u);
    const char *need = "compressed transfers need fp32";
    for (int r = 0; r < n; r++) {
        assert_true(u.ok[r]);
        expect_err(&u, r, W_FP64, HCCN_ERR_INVALID, need,
                   hccn_dtype_name(HCCN_FP64));
        expect_err(&u, r, W_INT32, HCCN_ERR_INVALID, need,
                   hccn_dtype_name(HCCN_INT32));
        expect_err(&u, r, W_PROD, HCCN_ERR_INVALID, need,
                   hccn_redop_name(HCCN_PROD));
        expect_err(&u, r, W_RS_INT32, HCCN_ERR_INVALID, need,
                   "hccn_reduce_scatter_opts");
        expect_err(&u, r, W_AG_FP64, HCCN_ERR_INVALID, need,
                   "hccn_allgather_opts");
        expect_err(&u, r, W_BAD_MODE, HCCN_ERR_INVALID,
                   "invalid compression 7", NULL);
        expect_err(&u, r, W_SET_BAD_MODE, HCCN_ERR_INVALID,
                   "invalid compression 9", "hccn_comm_set_compression");
        expect_err(&u, r, W_SIZE, HCCN_ERR_INVALID, "struct_size", NULL);
        expect_err(&u, r, W_COMM_FP64, HCCN_ERR_INVALID, need,
                   hccn_dtype_name(HCCN_FP64));
    }
    hccn_cluster_destroy(cl);
}

int main(void)
{
    setenv("HCCN_TIMEOUT", "60", 0);   /* a hang fails, and says where */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_bounds),
        cmocka_unit_test(test_avg_max),
        cmocka_unit_test(test_time),
        cmocka_unit_test(test_wrong_use),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
