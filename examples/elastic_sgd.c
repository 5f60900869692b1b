/*
 * Elastic data-parallel SGD: an NPU fails part-way and training goes on
 * without it.
 *
 * Linear regression, y = x . w, on 16 ranks (the topology's NPUs). Every
 * step each rank takes BATCH samples of its own (which ones follows from
 * the step and its rank in the current communicator), computes the
 * gradient of the squared error, charges the step's compute with
 * hccn_compute, and the gradients are summed by allreduce; every rank
 * applies w -= LR / B * g with B the global batch (BATCH x ranks).
 *
 * The fault plan fails one NPU in the middle of step K. Its compute fails
 * (HCCN_ERR_FAULT) and it leaves; the survivors' allreduce fails, and they
 * revoke the communicator, shrink it to themselves, rescale the global
 * batch to BATCH x 15 and do step K again. At the end every survivor's
 * weights must equal, bit for bit, a serial run of the same steps with the
 * same membership change (16 ranks for steps 0..K-1, 15 from K on). The
 * data make every sum exact, so that the order of the allreduce's
 * additions cannot matter: x is -1, 0 or 1 and residuals are rounded to
 * multiples of 2^-QBITS, well inside fp64's 53 bits.
 *
 * It prints the simulated cost of the failure: the lost work (step K up
 * to the error), the detection (hccn_recovery_opts_t.detect_s after the
 * failure) and the recovery (agreement rounds and the new communicator).
 *
 * Usage: example_elastic_sgd [TOPOLOGY.json [K [NPU]]]   (default:
 * configs/default.json under $HCCN_SOURCE_DIR or here, K = 4, NPU = 5)
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hccn/hccn.h"

#define MAXP 64
#define DIM 4096
#define BATCH 4                  /* samples per rank per step */
#define STEPS 10
#define QBITS 20                 /* residuals are multiples of 2^-20 */
#define LR 0.0625
#define T_COMPUTE 200e-6         /* simulated compute of one step */
#define DETECT_S 1e-3            /* the heartbeat timeout */
#define INIT_S 100e-6            /* making a communicator */

typedef struct {
    int fail_npu, fail_step;     /* -1: no failure */
    double fail_at;              /* its simulated time */
    double w[MAXP][DIM];         /* each rank's weights at the end */
    int done[MAXP];              /* it finished every step */
    int seen_step;               /* the step at which the error came */
    double t_step, t_err, t_shrunk, t_end;   /* rank 0's clocks */
} job_t;

/* Entry j of sample s: -1, 0 or 1, and its target (of a hidden model). */
static double x_at(uint64_t s, int j)
{
    uint64_t h = (s * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)j * 0xBF58476D1CE4E5B9ull);
    h ^= h >> 29;
    h *= 0x94D049BB133111EBull;
    h ^= h >> 32;
    return (double)(int)(h % 3) - 1.0;
}

static double y_at(uint64_t s)
{
    double y = 0.0;
    for (int j = 0; j < DIM; j++)
        y += x_at(s, j) * (double)((j % 7) - 3) / 8.0;
    return y;
}

/* The gradient of the samples of comm rank pos at step, into g. */
static void local_grad(const double *w, int step, int pos, double *g)
{
    memset(g, 0, DIM * sizeof(double));
    for (int k = 0; k < BATCH; k++) {
        uint64_t s = (uint64_t)step * 1000 + (uint64_t)pos * BATCH + (uint64_t)k;
        double r = -y_at(s);
        for (int j = 0; j < DIM; j++)
            r += x_at(s, j) * w[j];
        r = ldexp(nearbyint(ldexp(r, QBITS)), -QBITS);
        for (int j = 0; j < DIM; j++)
            g[j] += x_at(s, j) * r;
    }
}

static void update(double *w, const double *g, int p)
{
    double scale = LR / (double)(BATCH * p);
    for (int j = 0; j < DIM; j++)
        w[j] -= scale * g[j];
}

/* The serial reference: p ranks' gradients summed, 16 - 1 from step k. */
static void reference(const job_t *job, int p, double *w)
{
    double *g = malloc(DIM * sizeof(double)), *sum = malloc(DIM * sizeof(double));
    memset(w, 0, DIM * sizeof(double));
    for (int step = 0; step < STEPS; step++) {
        int n = job->fail_step >= 0 && step >= job->fail_step ? p - 1 : p;
        memset(sum, 0, DIM * sizeof(double));
        for (int pos = 0; pos < n; pos++) {
            local_grad(w, step, pos, g);
            for (int j = 0; j < DIM; j++)
                sum[j] += g[j];
        }
        update(w, sum, n);
    }
    free(g);
    free(sum);
}

/* After the allreduce of step failed: revoke, shrink, and carry on with
 * the survivors (rank 0 notes the clocks). */
static hccn_status_t recover(hccn_ctx_t *ctx, job_t *job, hccn_comm_t **comm,
                             int step)
{
    hccn_comm_t *nc = NULL;
    if (hccn_rank(ctx) == 0) {
        job->t_err = hccn_time(ctx);
        job->seen_step = step;
    }
    hccn_comm_revoke(*comm);
    hccn_status_t rc = hccn_comm_shrink(*comm, &nc);
    if (rc != HCCN_OK)
        return rc;
    if (hccn_rank(ctx) == 0)
        job->t_shrunk = hccn_time(ctx);
    if (*comm != hccn_comm_world(ctx))
        hccn_comm_destroy(*comm);
    *comm = nc;
    return HCCN_OK;
}

static hccn_status_t train(hccn_ctx_t *ctx, void *arg)
{
    job_t *job = arg;
    int me = hccn_rank(ctx);
    hccn_comm_t *comm = hccn_comm_world(ctx);
    double *w = job->w[me], *g = NULL;
    hccn_status_t rc = hccn_malloc(ctx, DIM * sizeof(double), (void **)&g);
    if (rc != HCCN_OK)
        return rc;
    memset(w, 0, DIM * sizeof(double));
    for (int step = 0; step < STEPS;) {
        int p = hccn_comm_size(comm);
        double t0 = hccn_time(ctx);
        local_grad(w, step, hccn_comm_rank(comm), g);
        if ((rc = hccn_compute(ctx, T_COMPUTE)) != HCCN_OK)
            break;        /* this NPU failed: it leaves */
        rc = hccn_allreduce(comm, g, g, DIM, HCCN_FP64, HCCN_SUM);
        if (rc != HCCN_OK) {
            if ((rc = recover(ctx, job, &comm, step)) != HCCN_OK)
                break;
            continue;     /* the step again, with the survivors */
        }
        update(w, g, p);
        if (me == 0 && step == 0)
            job->t_step = hccn_time(ctx) - t0;
        step++;
    }
    job->done[me] = rc == HCCN_OK;
    if (me == 0)
        job->t_end = hccn_time(ctx);
    hccn_free(ctx, g);
    return rc;
}

static const char *topology_path(int argc, char **argv, char *buf, size_t len)
{
    if (argc > 1)
        return argv[1];
    const char *root = getenv("HCCN_SOURCE_DIR");
    snprintf(buf, len, "%s/configs/default.json", root ? root : ".");
    return buf;
}

/* One run of the training; 0, or -1 with a message. */
static int run(hccn_cluster_t *cl, job_t *job)
{
    hccn_status_t st[MAXP];
    hccn_cluster_run(cl, train, job, st);
    int p = hccn_cluster_size(cl);
    for (int q = 0; q < p; q++)
        if (q != job->fail_npu && !job->done[q]) {
            fprintf(stderr, "elastic_sgd: rank %d: %s\n", q,
                    hccn_status_name(st[q]));
            return -1;
        }
    return 0;
}

/* The survivors' weights against the serial reference; 0 if all equal. */
static int verify(const job_t *job, int p)
{
    double *ref = malloc(DIM * sizeof(double));
    int bad = 0;
    reference(job, p, ref);
    for (int q = 0; q < p; q++)
        if (q != job->fail_npu && memcmp(job->w[q], ref, sizeof(job->w[q])) != 0)
            bad++;
    free(ref);
    return bad;
}

int main(int argc, char **argv)
{
    char buf[4096];
    const char *path = topology_path(argc, argv, buf, sizeof(buf));
    int k = argc > 2 ? atoi(argv[2]) : 4, npu = argc > 3 ? atoi(argv[3]) : 5;
    static job_t job;
    hccn_cluster_t *cl;
    if (hccn_cluster_create(path, NULL, &cl) != HCCN_OK) {
        fprintf(stderr, "%s\n", hccn_last_error());
        return 1;
    }
    int p = hccn_cluster_size(cl);
    if (p < 2 || p > MAXP || k < 0 || k >= STEPS || npu < 0 || npu >= p) {
        fprintf(stderr, "elastic_sgd: needs 2 to %d ranks (got %d), 0 <= K < "
                "%d, 0 <= NPU < ranks\n", MAXP, p, STEPS);
        hccn_cluster_destroy(cl);
        return 1;
    }
    hccn_recovery_opts_t ro = {sizeof(ro), DETECT_S, INIT_S};
    hccn_cluster_set_recovery(cl, &ro);
    /* A fault-free run first: the step time, which places the failure in
     * the middle of step K's compute. */
    job.fail_npu = job.fail_step = -1;
    if (run(cl, &job) != 0)
        return 1;
    double t_free = job.t_end, t_step = job.t_step;
    job.fail_npu = npu;
    job.fail_step = k;
    job.fail_at = k * t_step + T_COMPUTE / 2;
    hccn_fault_t f = {.struct_size = sizeof(f), .kind = HCCN_FAULT_NPU_FAIL,
                      .npu = npu, .at_s = job.fail_at};
    if (hccn_cluster_add_fault(cl, &f) != HCCN_OK || run(cl, &job) != 0) {
        fprintf(stderr, "%s\n", hccn_last_error());
        return 1;
    }
    printf("elastic_sgd: %d ranks (%s), %d weights, %d samples per rank, "
           "%d steps\n", p, path, DIM, BATCH, STEPS);
    printf("fault-free: step %.3f us, %d steps %.3f us\n", t_step * 1e6,
           STEPS, t_free * 1e6);
    printf("NPU %d fails at %.3f us, in step %d; the survivors see it in step "
           "%d at %.3f us\n", npu, job.fail_at * 1e6, k, job.seen_step,
           job.t_err * 1e6);
    double detected = job.fail_at + DETECT_S;
    double t_rec0 = detected > job.t_err ? detected : job.t_err;
    double lost = job.t_err - k * t_step;
    printf("cost of the failure (simulated):\n");
    printf("  lost work (step %d up to the error) %12.3f us\n", k, lost * 1e6);
    printf("  detection (timeout %.0f us)        %12.3f us\n", DETECT_S * 1e6,
           (t_rec0 - job.t_err) * 1e6);
    printf("  agreement and new communicator    %12.3f us\n",
           (job.t_shrunk - t_rec0) * 1e6);
    printf("  total                             %12.3f us\n",
           (job.t_shrunk - k * t_step) * 1e6);
    printf("global batch %d -> %d samples; run %.3f us\n", BATCH * p,
           BATCH * (p - 1), job.t_end * 1e6);
    int bad = job.seen_step != k ? -1 : verify(&job, p);
    hccn_cluster_destroy(cl);
    if (bad != 0) {
        printf("verify: %d survivor(s) differ from the serial reference "
               "(error seen in step %d)\nFAIL\n", bad, job.seen_step);
        return 1;
    }
    printf("verify: the %d survivors' weights equal the serial reference bit "
           "for bit\nPASS\n", p - 1);
    return 0;
}
