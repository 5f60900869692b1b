/*
 * Data-parallel training on a simulated cluster: linear regression,
 * y = x . w, trained by gradient descent on a sum-of-squares loss.
 *
 * Every rank holds a shard of the samples and a copy of the weights. Per
 * step it computes the residuals of its samples (the forward pass), then
 * the gradient bucket by bucket, last bucket first (the backward pass),
 * with OpenMP on the host; the gradient buckets are summed over the ranks
 * by allreduce, and every rank applies the same update. The simulated
 * compute time of each pass is charged with hccn_compute.
 *
 * Four ways to run a step, each for STEPS steps:
 * - no overlap: the whole backward pass, then one blocking allreduce per
 *   bucket;
 * - overlap: hccn_iallreduce of each bucket as soon as it is computed,
 *   while the next bucket is computed; then wait for all of them;
 * - each of the two with the gradient sent as fp16 (HCCN_COMPRESS_FP16).
 * It prints the simulated step time of each, and verifies the weights:
 * - uncompressed, they equal a serial run on all the data, bit for bit.
 *   The data make every sum exact: x is -1, 0 or 1, the residuals are
 *   rounded to multiples of 2^-QBITS (a deterministic per-sample step, the
 *   same in the serial run), and the program checks that sum_s |r_s| <
 *   2^(24-QBITS), so every partial sum of the gradient is an fp32 value
 *   whatever the order of the additions (ranks, threads, the ring);
 * - compressed, at every step the allreduced gradient is within the bound
 *   of docs/compression.md of the exact sum of the ranks' gradients
 *   computed serially from the same weights, |g - S| <= (p+1) u sum_r |g_r|
 *   + p 2^-25 with u = 2^-11, and the update applied is exactly
 *   w - 2^-LR_SHIFT g.
 * Exit status 0 only if every check passes.
 *
 * Usage: example_data_parallel [TOPOLOGY.json]   (default: configs/
 * default.json under $HCCN_SOURCE_DIR, or the current directory)
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hccn/hccn.h"

#define SAMPLES 32                  /* in all; a multiple of the ranks */
#define DIM (1 << 18)               /* weights */
#define BUCKETS 4
#define BUCKET (DIM / BUCKETS)
#define STEPS 6
#define QBITS 8                     /* residuals are multiples of 2^-8 */
#define LR_SHIFT 17                 /* w -= 2^-17 * sum_s x_s r_s */
/* Simulated NPU speed for this example. The model is tiny, so a real
 * NPU's peak would make its compute vanish next to its communication; at
 * this rate the two are comparable and the overlap shows. */
#define SIM_FLOPS 2.5e9

enum { RUN_PLAIN, RUN_OVERLAP, RUN_FP16, RUN_FP16_OVERLAP, NRUNS };

static const char *const run_names[NRUNS] = {
    "no overlap, fp32 gradients", "overlap,    fp32 gradients",
    "no overlap, fp16 on the wire", "overlap,    fp16 on the wire"};

/* ------------------------------------------------------------ the data */

static int8_t *xs;                  /* [SAMPLES][DIM], -1, 0 or 1 */
static float *ys;                   /* [SAMPLES] */

static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Sample s's inputs, and targets from true weights that are multiples of
 * 1/16 in [-1/4, 1/4]: every target is exact in fp32. */
static int make_data(void)
{
    xs = malloc((size_t)SAMPLES * DIM);
    ys = malloc(SAMPLES * sizeof(float));
    float *wt = malloc(DIM * sizeof(float));
    if (xs == NULL || ys == NULL || wt == NULL) {
        free(wt);
        return -1;
    }
    for (size_t d = 0; d < DIM; d++)
        wt[d] = (float)((int)(mix(d + 77) % 9) - 4) / 16.0f;
#pragma omp parallel for
    for (int s = 0; s < SAMPLES; s++) {
        double y = 0.0;
        for (size_t d = 0; d < DIM; d++) {
            int8_t x = (int8_t)((int)(mix(((uint64_t)s << 32) | d) % 3) - 1);
            xs[(size_t)s * DIM + d] = x;
            y += x * (double)wt[d];
        }
        ys[s] = (float)y;            /* a multiple of 1/16 below 2^17 */
    }
    free(wt);
    return 0;
}

/* ------------------------------------------------ the model, on a host */

/* x_s . w - y_s, summed in index order (the same bits in every run),
 * rounded to a multiple of 2^-QBITS. */
static float residual(int s, const float *w)
{
    const int8_t *x = xs + (size_t)s * DIM;
    double e = -(double)ys[s];
    for (size_t d = 0; d < DIM; d++)
        e += x[d] * (double)w[d];
    return (float)(nearbyint(ldexp(e, QBITS)) / (double)(1 << QBITS));
}

/* g[d] = sum over samples s0..s1-1 of x_sd r_s, for d in [d0, d1). */
static void gradient(float *g, const float *r, int s0, int s1, size_t d0,
                     size_t d1)
{
#pragma omp parallel for
    for (size_t d = d0; d < d1; d++) {
        float acc = 0.0f;
        for (int s = s0; s < s1; s++)
            acc += xs[(size_t)s * DIM + d] * r[s - s0];
        g[d - d0] = acc;
    }
}

static void update(float *w, const float *g)
{
    const float step = ldexpf(1.0f, -LR_SHIFT);
#pragma omp parallel for
    for (size_t d = 0; d < DIM; d++)
        w[d] -= step * g[d];
}

/* Half the sum of squared residuals; 1 in *exact_ok if the residuals keep
 * the gradient sums exact (sum_s |r_s| < 2^(24-QBITS)). */
static double loss(const float *r, int *exact_ok)
{
    double l = 0.0, abs = 0.0;
    for (int s = 0; s < SAMPLES; s++) {
        l += 0.5 * (double)r[s] * r[s];
        abs += fabs(r[s]);
    }
    *exact_ok = abs < ldexp(1.0, 24 - QBITS);
    return l;
}

/* ------------------------------------------------- the distributed run */

typedef struct {
    int overlap, compress;
    float *w[64];                   /* per rank: its weights */
    float *hist;                    /* [STEPS][DIM] rank 0's gradients */
    double clock[64];               /* per rank: simulated time at the end */
    hccn_status_t rc[64];
} run_t;

/* One backward bucket: its gradient into g, its compute charged. */
static void backward_bucket(hccn_ctx_t *ctx, float *g, const float *r,
                            int s0, int nl, int k)
{
    gradient(g + (size_t)k * BUCKET, r, s0, s0 + nl, (size_t)k * BUCKET,
             (size_t)(k + 1) * BUCKET);
    hccn_compute(ctx, 2.0 * nl * BUCKET / SIM_FLOPS);
}

static hccn_status_t train_step(hccn_ctx_t *ctx, run_t *run, float *w,
                                float *g, int step)
{
    hccn_comm_t *world = hccn_comm_world(ctx);
    int p = hccn_nranks(ctx), nl = SAMPLES / p;
    int s0 = hccn_rank(ctx) * nl;
    hccn_coll_opts_t opts = {sizeof(opts), run->compress, NULL};
    hccn_future_t *fut[BUCKETS];
    hccn_status_t rc = HCCN_OK;
    float r[SAMPLES];

    for (int s = 0; s < nl; s++)
        r[s] = residual(s0 + s, w);
    hccn_compute(ctx, 2.0 * nl * DIM / SIM_FLOPS);
    for (int k = BUCKETS - 1; k >= 0; k--) {
        backward_bucket(ctx, g, r, s0, nl, k);
        if (run->overlap &&
            (rc = hccn_allreduce_opts(world, g + (size_t)k * BUCKET,
                                      g + (size_t)k * BUCKET, BUCKET,
                                      HCCN_FP32, HCCN_SUM, &opts,
                                      &fut[k])) != HCCN_OK)
            return rc;
    }
    for (int k = BUCKETS - 1; k >= 0; k--) {
        if (run->overlap)
            rc = hccn_wait(fut[k]);
        else
            rc = hccn_allreduce_opts(world, g + (size_t)k * BUCKET,
                                     g + (size_t)k * BUCKET, BUCKET,
                                     HCCN_FP32, HCCN_SUM, &opts, NULL);
        if (rc != HCCN_OK)
            return rc;
        if (run->overlap)
            hccn_future_free(fut[k]);
    }
    if (hccn_rank(ctx) == 0 && run->hist != NULL)
        memcpy(run->hist + (size_t)step * DIM, g, DIM * sizeof(float));
    update(w, g);
    return HCCN_OK;
}

static hccn_status_t rank_main(hccn_ctx_t *ctx, void *arg)
{
    run_t *run = arg;
    int me = hccn_rank(ctx);
    float *w = run->w[me], *g;
    hccn_status_t rc = hccn_malloc(ctx, DIM * sizeof(float), (void **)&g);
    if (rc != HCCN_OK)
        return rc;
    memset(w, 0, DIM * sizeof(float));
    for (int step = 0; step < STEPS && rc == HCCN_OK; step++)
        rc = train_step(ctx, run, w, g, step);
    run->clock[me] = hccn_time(ctx);
    hccn_free(ctx, g);
    return rc;
}

/* ------------------------------------------------------ the references */

/* The serial run on all the data; returns the loss before and after. */
static int serial_train(float *w, double *loss0, double *loss1)
{
    float r[SAMPLES], *g = malloc(DIM * sizeof(float));
    int exact = 1, ok;
    if (g == NULL)
        return -1;
    memset(w, 0, DIM * sizeof(float));
    for (int step = 0; step <= STEPS; step++) {
        for (int s = 0; s < SAMPLES; s++)
            r[s] = residual(s, w);
        double l = loss(r, &ok);
        exact &= ok;
        if (step == 0)
            *loss0 = l;
        if (step == STEPS) {
            *loss1 = l;
            break;
        }
        gradient(g, r, 0, SAMPLES, 0, DIM);
        update(w, g);
    }
    free(g);
    return exact ? 0 : -1;
}

/* Replays a compressed run from its gradients: at each step, the exact
 * sum S of the ranks' gradients and A = sum_r |g_r| from the same weights;
 * checks |g - S| <= (p+1) u A + p 2^-25 elementwise; applies g. Returns
 * the worst |g - S| / (u A) seen, or -1 with a message on failure. */
static double replay_compressed(const run_t *run, int p, float *w,
                                double *loss1)
{
    const double u = 0x1p-11;
    float r[SAMPLES];
    int nl = SAMPLES / p, ok;
    double worst = 0.0;
    float *gr = malloc((size_t)DIM * sizeof(float));
    double *sum = malloc((size_t)DIM * sizeof(double));
    double *abs = malloc((size_t)DIM * sizeof(double));
    if (gr == NULL || sum == NULL || abs == NULL) {
        worst = -1.0;
        goto out;
    }
    memset(w, 0, DIM * sizeof(float));
    for (int step = 0; step < STEPS; step++) {
        for (int s = 0; s < SAMPLES; s++)
            r[s] = residual(s, w);
        memset(sum, 0, DIM * sizeof(double));
        memset(abs, 0, DIM * sizeof(double));
        for (int q = 0; q < p; q++) {
            gradient(gr, r + q * nl, q * nl, (q + 1) * nl, 0, DIM);
            for (size_t d = 0; d < DIM; d++) {
                sum[d] += gr[d];
                abs[d] += fabs(gr[d]);
            }
        }
        const float *g = run->hist + (size_t)step * DIM;
        for (size_t d = 0; d < DIM; d++) {
            double err = fabs(g[d] - sum[d]);
            if (!(err <= (p + 1) * u * abs[d] + p * 0x1p-25)) {
                fprintf(stderr, "step %d weight %zu: gradient %.9g, exact "
                        "%.9g, error %.3g over the bound\n", step, d, g[d],
                        sum[d], err);
                worst = -1.0;
                goto out;
            }
            if (abs[d] > 0.0)
                worst = fmax(worst, err / (u * abs[d]));
        }
        update(w, g);
    }
    for (int s = 0; s < SAMPLES; s++)
        r[s] = residual(s, w);
    *loss1 = loss(r, &ok);
out:
    free(gr);
    free(sum);
    free(abs);
    return worst;
}

/* -------------------------------------------------------------- main */

static const char *topology_path(int argc, char **argv, char *buf,
                                 size_t len)
{
    if (argc > 1)
        return argv[1];
    const char *root = getenv("HCCN_SOURCE_DIR");
    snprintf(buf, len, "%s/configs/default.json", root ? root : ".");
    return buf;
}

/* 1 if every rank holds the same weights as rank 0. */
static int same_weights(const run_t *run, int p)
{
    for (int q = 1; q < p; q++)
        if (memcmp(run->w[q], run->w[0], DIM * sizeof(float)) != 0)
            return 0;
    return 1;
}

int main(int argc, char **argv)
{
    char buf[4096];
    const char *path = topology_path(argc, argv, buf, sizeof(buf));
    hccn_cluster_t *cl;
    if (hccn_cluster_create(path, NULL, &cl) != HCCN_OK) {
        fprintf(stderr, "%s\n", hccn_last_error());
        return 1;
    }
    int p = hccn_cluster_size(cl), fails = 0;
    if (p > 64 || SAMPLES % p != 0 || make_data() != 0) {
        fprintf(stderr, "data_parallel: needs at most 64 ranks dividing %d "
                "(got %d), and memory\n", SAMPLES, p);
        hccn_cluster_destroy(cl);
        return 1;
    }
    printf("data_parallel: %d ranks (%s), %d samples, %d weights in %d "
           "buckets, %d steps\n", p, path, SAMPLES, DIM, BUCKETS, STEPS);

    float *ref = malloc(DIM * sizeof(float));
    float *rep = malloc(DIM * sizeof(float));
    double loss0 = 0.0, loss1 = 0.0;
    if (ref == NULL || rep == NULL || serial_train(ref, &loss0, &loss1)) {
        fprintf(stderr, "serial run: out of memory, or the residuals grew "
                "too large for exact sums\n");
        return 1;
    }
    printf("serial run: loss %.6g -> %.6g\n", loss0, loss1);

    static run_t runs[NRUNS];
    for (int k = 0; k < NRUNS; k++) {
        run_t *run = &runs[k];
        run->overlap = k == RUN_OVERLAP || k == RUN_FP16_OVERLAP;
        run->compress = k >= RUN_FP16 ? HCCN_COMPRESS_FP16 : HCCN_COMPRESS_NONE;
        for (int q = 0; q < p; q++)
            run->w[q] = malloc(DIM * sizeof(float));
        if (run->compress)
            run->hist = malloc((size_t)STEPS * DIM * sizeof(float));
        hccn_status_t rc = hccn_cluster_run(cl, rank_main, run, NULL);
        if (rc != HCCN_OK) {
            fprintf(stderr, "%s: %s\n", run_names[k], hccn_last_error());
            return 1;
        }
    }

    printf("simulated step time:\n");
    for (int k = 0; k < NRUNS; k++) {
        double end = 0.0;
        for (int q = 0; q < p; q++)
            end = fmax(end, runs[k].clock[q]);
        printf("  %-30s %10.3f us\n", run_names[k], end / STEPS * 1e6);
    }

    for (int k = 0; k < NRUNS; k++) {
        run_t *run = &runs[k];
        int same = same_weights(run, p);
        if (!run->compress) {
            int exact = same &&
                        memcmp(run->w[0], ref, DIM * sizeof(float)) == 0;
            printf("verify %s: weights %s the serial run bit for bit\n",
                   run_names[k], exact ? "equal" : "DIFFER FROM");
            fails += !exact;
            continue;
        }
        double l1 = 0.0;
        double worst = replay_compressed(run, p, rep, &l1);
        int applied = same && memcmp(run->w[0], rep, DIM * sizeof(float)) == 0;
        int ok = worst >= 0.0 && applied && l1 < loss0;
        printf("verify %s: %s (gradient error <= %.2f u sum|g_r|, bound "
               "%d u; loss %.6g -> %.6g)\n", run_names[k],
               ok ? "within the bound of docs/compression.md" : "FAILED",
               worst, p + 1, loss0, l1);
        fails += !ok;
    }
    printf("%s\n", fails == 0 ? "PASS" : "FAIL");

    for (int k = 0; k < NRUNS; k++) {
        for (int q = 0; q < p; q++)
            free(runs[k].w[q]);
        free(runs[k].hist);
    }
    free(ref);
    free(rep);
    free(xs);
    free(ys);
    hccn_cluster_destroy(cl);
    return fails == 0 ? 0 : 1;
}
