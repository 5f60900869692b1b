/* Recovery, repeated: 16 ranks run steps of compute and an in-place fp64
 * allreduce; NPU 5 fails in the middle of step K's compute, and the
 * survivors revoke, shrink and redo step K. Under the host-load jitter,
 * many times over, every survivor must see the error in step K (not in
 * step K - 1, whose allreduce had succeeded everywhere before anyone
 * revoked), every successful allreduce must be exact, and the simulated
 * end must be the same in every run. A large allreduce (each rank moves
 * its own bytes) and a small one (driven). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hccn/hccn.h"
#include "test_util.h"

#define NR 16
#define DEAD 5
#define STEPS 6
#define K 3
#define T_COMPUTE 50e-6
#define RUNS 40

typedef struct {
    size_t len;                   /* doubles per allreduce */
    int fail;                     /* 1: the fault plan fails DEAD */
    double t_k;                   /* rank 0's time at the start of step K */
    double t_end[NR];             /* each rank's clock at the end */
    int err_step[NR];             /* the step of the first error, or -1 */
    int steps_done[NR];
    long bad[NR];                 /* elements that differ from the sum */
    int size[NR];                 /* the final communicator's size */
} redo_t;

/* Element i of comm rank pos's contribution at step: small integers, so
 * that every sum is exact in any order. */
static double value(int step, int pos, size_t i)
{
    return (double)((step * 7 + pos * 3 + (int)(i % 1024)) % 13) - 6.0;
}

static long check_sum(const double *b, size_t len, int step, int n)
{
    long bad = 0;
    for (size_t i = 0; i < len; i++) {
        double want = 0.0;
        for (int pos = 0; pos < n; pos++)
            want += value(step, pos, i);
        bad += b[i] != want;
    }
    return bad;
}

static hccn_status_t redo_rank(hccn_ctx_t *ctx, void *arg)
{
    redo_t *r = arg;
    int me = hccn_rank(ctx);
    hccn_comm_t *comm = hccn_comm_world(ctx);
    double *b = NULL;
    hccn_status_t rc = hccn_malloc(ctx, r->len * sizeof(double), (void **)&b);
    if (rc != HCCN_OK)
        return rc;
    r->err_step[me] = -1;
    for (int step = 0; step < STEPS;) {
        int pos = hccn_comm_rank(comm), n = hccn_comm_size(comm);
        if (me == 0 && step == K)
            r->t_k = hccn_time(ctx);
        for (size_t i = 0; i < r->len; i++)
            b[i] = value(step, pos, i);
        if ((rc = hccn_compute(ctx, T_COMPUTE)) != HCCN_OK)
            break;                /* this NPU failed: it leaves */
        rc = hccn_allreduce(comm, b, b, r->len, HCCN_FP64, HCCN_SUM);
        if (rc != HCCN_OK) {
            hccn_comm_t *nc = NULL;
            if (r->err_step[me] < 0)
                r->err_step[me] = step;
            hccn_comm_revoke(comm);
            if ((rc = hccn_comm_shrink(comm, &nc)) != HCCN_OK)
                break;
            if (comm != hccn_comm_world(ctx))
                hccn_comm_destroy(comm);
            comm = nc;
            continue;             /* the step again, with the survivors */
        }
        r->bad[me] += check_sum(b, r->len, step, n);
        r->steps_done[me] = ++step;
    }
    r->size[me] = hccn_comm_size(comm);
    r->t_end[me] = hccn_time(ctx);
    if (comm != hccn_comm_world(ctx))
        hccn_comm_destroy(comm);
    hccn_free(ctx, b);
    return rc;
}

static hccn_cluster_t *make(void)
{
    const char *json =
        "{\"version\":1,\"node_types\":[{\"count\":2,"
        "\"npu\":{\"count\":8,\"arena_MiB\":4,\"reduce_bw_GBps\":100},"
        "\"fabric\":{\"type\":\"mesh\",\"bw_GBps\":10,\"lat_us\":2},"
        "\"nics\":{\"count\":1,\"bw_GBps\":25,\"lat_us\":1}}],"
        "\"network\":{\"type\":\"switch\",\"lat_us\":1}}";
    hccn_cluster_opts_t o = {.struct_size = sizeof(o), .jitter_us = 300};
    hccn_cluster_t *cl = NULL;
    if (hccn_cluster_create_json(json, "recovery_redo", &o, &cl) != HCCN_OK)
        fail_msg("%s", hccn_last_error());
    return cl;
}

static void redo_case(size_t len)
{
    hccn_cluster_t *cl = make();
    redo_t *r = calloc(1, sizeof(*r));
    r->len = len;
    hccn_status_t st[NR];
    assert_int_equal(hccn_cluster_run(cl, redo_rank, r, st), HCCN_OK);
    hccn_fault_t f = {.struct_size = sizeof(f), .kind = HCCN_FAULT_NPU_FAIL,
                      .npu = DEAD, .at_s = r->t_k + T_COMPUTE / 2};
    assert_int_equal(hccn_cluster_add_fault(cl, &f), HCCN_OK);
    double t_end = -1.0;
    for (int run = 0; run < RUNS; run++) {
        memset(r, 0, sizeof(*r));
        r->len = len;
        hccn_cluster_run(cl, redo_rank, r, st);
        assert_int_equal(st[DEAD], HCCN_ERR_FAULT);
        for (int q = 0; q < NR; q++) {
            if (q == DEAD)
                continue;
            if (st[q] != HCCN_OK || r->err_step[q] != K ||
                r->steps_done[q] != STEPS || r->bad[q] != 0 ||
                r->size[q] != NR - 1)
                fail_msg("%zu doubles, run %d, rank %d: %s, error in step %d "
                         "(want %d), %d steps, %ld elements wrong, final "
                         "size %d", len, run, q, hccn_status_name(st[q]),
                         r->err_step[q], K, r->steps_done[q], r->bad[q],
                         r->size[q]);
        }
        if (t_end < 0.0)
            t_end = r->t_end[0];
        if (r->t_end[0] != t_end)
            fail_msg("%zu doubles, run %d: rank 0 ends at %.9g s, run 0 at "
                     "%.9g s", len, run, r->t_end[0], t_end);
    }
    free(r);
    hccn_cluster_destroy(cl);
}

static void test_redo_large(void **state)
{
    (void)state;
    redo_case(4096);
}

static void test_redo_small(void **state)
{
    (void)state;
    redo_case(8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_redo_large),
        cmocka_unit_test(test_redo_small),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
