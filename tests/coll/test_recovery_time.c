/* Recovery's costs in simulated time against their closed forms on a
 * uniform mesh (every pair of NPUs linked, alpha = 2 us, beta = 10 GB/s):
 * an agreement is a Bruck allgather of 8-byte votes,
 *   T(p) = sum over k with 2^k < p of (alpha + 8 min(2^k, p - 2^k) / beta),
 * that starts once every failure is detected (failure time + detect_s);
 * a round in which a member fails ends at the failure and is run again
 * without it (twice for two failures in two rounds); a shrink adds
 * init_s. And each stretch is in the trace. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "hccn/hccn.h"
#include "hccn/hccn_sim.h"
#include "test_util.h"

#define P 16
#define ALPHA 2e-6
#define BETA 10e9
#define DETECT 40e-6
#define INIT 5e-6

static double bruck(int p)
{
    double t = 0.0;
    for (int k = 1; k < p; k *= 2)
        t += ALPHA + 8.0 * (k < p - k ? k : p - k) / BETA;
    return t;
}

static hccn_cluster_t *make(const char *faults)
{
    char json[1024];
    snprintf(json, sizeof(json),
             "{\"version\":1,\"node_types\":[{\"count\":1,"
             "\"npu\":{\"count\":%d,\"arena_MiB\":4,\"reduce_bw_GBps\":100},"
             "\"fabric\":{\"type\":\"mesh\",\"bw_GBps\":10,\"lat_us\":2}}]"
             "%s%s%s}",
             P, faults ? ",\"faults\":[" : "", faults ? faults : "",
             faults ? "]" : "");
    hccn_cluster_opts_t o = {.struct_size = sizeof(o), .jitter_us = 100};
    hccn_cluster_t *cl = NULL;
    if (hccn_cluster_create_json(json, "uniform", &o, &cl) != HCCN_OK)
        fail_msg("%s", hccn_last_error());
    hccn_recovery_opts_t ro = {sizeof(ro), DETECT, INIT};
    assert_int_equal(hccn_cluster_set_recovery(cl, &ro), HCCN_OK);
    return cl;
}

static void expect_time(double got, double want, int rank)
{
    if (!(fabs(got - want) <= 1e-12 * want))
        fail_msg("rank %d: %.9f us, expected %.9f us", rank, got * 1e6,
                 want * 1e6);
}

typedef struct {
    int dead, dead2;              /* the NPUs that fail, or -1 */
    int shrink;                   /* shrink (else agree) */
    double compute;               /* seconds before the call */
    double t[P];                  /* clocks after it */
    hccn_status_t rc[P];
} time_res_t;

static hccn_status_t time_rank(hccn_ctx_t *ctx, void *arg)
{
    time_res_t *r = arg;
    int me = hccn_rank(ctx), flag = 1;
    hccn_comm_t *w = hccn_comm_world(ctx), *nc = NULL;
    hccn_status_t rc = hccn_compute(ctx, r->compute);
    if (rc == HCCN_OK)
        rc = r->shrink ? hccn_comm_shrink(w, &nc) : hccn_comm_agree(w, &flag);
    r->rc[me] = rc;
    r->t[me] = hccn_time(ctx);
    if (nc != NULL)
        hccn_comm_destroy(nc);
    return me == r->dead || me == r->dead2 ? HCCN_OK : rc;
}

static void run(hccn_cluster_t *cl, time_res_t *r)
{
    assert_int_equal(hccn_cluster_run(cl, time_rank, r, NULL), HCCN_OK);
    for (int q = 0; q < P; q++)
        assert_int_equal(r->rc[q], q == r->dead || q == r->dead2
                                       ? HCCN_ERR_FAULT : HCCN_OK);
}

/* No failure: one round of 16. */
static void test_agree_cost(void **state)
{
    (void)state;
    hccn_cluster_t *cl = make(NULL);
    time_res_t r = {.dead = -1, .dead2 = -1, .compute = 10e-6};
    run(cl, &r);
    for (int q = 0; q < P; q++)
        expect_time(r.t[q], 10e-6 + bruck(P), q);
    hccn_cluster_destroy(cl);
}

/* NPU 3 fails at 20 us, the others call shrink at 30 us: detection until
 * 60 us, a round of 15, the set-up. */
static void test_shrink_cost(void **state)
{
    (void)state;
    hccn_cluster_t *cl = make("{\"kind\":\"npu_fail\",\"npu\":3,\"at_us\":20}");
    time_res_t r = {.dead = 3, .dead2 = -1, .shrink = 1, .compute = 30e-6};
    run(cl, &r);
    for (int q = 0; q < P; q++)
        if (q != 3)
            expect_time(r.t[q], 20e-6 + DETECT + bruck(P - 1) + INIT, q);
    hccn_cluster_destroy(cl);
}

/* NPU 7 fails at 3 us, in the first round of an agreement called at 0:
 * that round ends at 3 us, the next starts when the failure is detected. */
static void test_agree_failure_cost(void **state)
{
    (void)state;
    hccn_cluster_t *cl = make("{\"kind\":\"npu_fail\",\"npu\":7,\"at_us\":3}");
    time_res_t r = {.dead = 7, .dead2 = -1, .compute = 0.0};
    run(cl, &r);
    for (int q = 0; q < P; q++)
        if (q != 7)
            expect_time(r.t[q], 3e-6 + DETECT + bruck(P - 1), q);
    hccn_cluster_destroy(cl);
}

/* A second failure in the second round: NPU 9 fails 1 us into it. That
 * round ends then, and a third, of 14, starts once it is detected. */
static void test_agree_two_failures_cost(void **state)
{
    (void)state;
    char faults[256];
    double t9 = 3e-6 + DETECT + 1e-6;
    snprintf(faults, sizeof(faults),
             "{\"kind\":\"npu_fail\",\"npu\":7,\"at_us\":3},"
             "{\"kind\":\"npu_fail\",\"npu\":9,\"at_us\":%.17g}", t9 * 1e6);
    hccn_cluster_t *cl = make(faults);
    time_res_t r = {.dead = 7, .dead2 = 9, .compute = 0.0};
    run(cl, &r);
    for (int q = 0; q < P; q++)
        if (q != 7 && q != 9)
            expect_time(r.t[q], t9 + DETECT + bruck(P - 2), q);
    hccn_cluster_destroy(cl);
}

/* The shrink's stretches are in the trace. */
static void test_trace(void **state)
{
    (void)state;
    hccn_cluster_t *cl = make("{\"kind\":\"npu_fail\",\"npu\":3,\"at_us\":20}");
    hccn_trace_t *tr = NULL;
    assert_int_equal(hccn_trace_create(&tr), HCCN_OK);
    assert_int_equal(hccn_trace_attach(cl, tr), HCCN_OK);
    time_res_t r = {.dead = 3, .dead2 = -1, .shrink = 1, .compute = 30e-6};
    run(cl, &r);
    assert_int_equal(hccn_trace_attach(cl, NULL), HCCN_OK);
    char path[] = "/tmp/hccn_recovery_traceXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(hccn_trace_write(tr, path), HCCN_OK);
    char *text = test_read_file(path);
    remove(path);
    assert_non_null(text);
    assert_non_null(strstr(text, "\"failure_detect\""));
    assert_non_null(strstr(text, "\"comm_init\""));
    assert_non_null(strstr(text, "\"allgather\""));
    free(text);
    hccn_trace_destroy(tr);
    hccn_cluster_destroy(cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_agree_cost),
        cmocka_unit_test(test_shrink_cost),
        cmocka_unit_test(test_agree_failure_cost),
        cmocka_unit_test(test_agree_two_failures_cost),
        cmocka_unit_test(test_trace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
