/* Ranks that go different ways. The siblings of one split differ in size,
 * so a forced algorithm can be refused on one and run on another: the
 * verdict is the same on every rank of one communicator, and a program
 * that posts its next call whatever the verdict stays in step. A program
 * that lets the verdict decide what it calls next (the soak benchmark's
 * old bug) deadlocks or mismatches, and the report then says which ranks
 * called what: every group of ranks in the same state on one line, with
 * the operation, its sequence number, the communicator and the ranks it
 * still waits for (as comm ranks and as ranks of the cluster). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hccn/hccn.h"

#define N 7      /* odd: the two parity siblings have 4 and 3 ranks */
#define COUNT 64
#define MSG 4096

static const char *seven =
    "{\"version\":1,\"node_types\":[{\"count\":1,"
    "\"npu\":{\"count\":7,\"arena_MiB\":8,\"reduce_bw_GBps\":100},"
    "\"fabric\":{\"type\":\"mesh\",\"bw_GBps\":10,\"lat_us\":2}}]}";

enum { STEADY, DIVERGE, MISMATCH };

typedef struct {
    int scenario;
    hccn_status_t sib[N], world[N];  /* the sibling's call, the next one */
    char sib_msg[N][MSG], msg[N][MSG];
    float sib_out[N], world_out[N];
} res_t;

static float value(int rank, int i)
{
    return (float)(rank * 3 + i % 5);
}

static void note(char *dst, hccn_status_t rc)
{
    snprintf(dst, MSG, "%s", rc == HCCN_OK ? "" : hccn_last_error());
}

/* The sibling's allreduce, torus2d forced: 4 ranks make a 2 x 2 grid,
 * 3 (a prime) make none. */
static hccn_status_t sibling_call(hccn_comm_t *sub, float *b, hccn_future_t **f)
{
    hccn_status_t rc = hccn_comm_set_algo(sub, "torus2d");
    if (rc == HCCN_OK)
        rc = hccn_iallreduce(sub, b, b, COUNT, HCCN_FP32, HCCN_SUM, f);
    hccn_comm_set_algo(sub, NULL);
    return rc;
}

/* What the rank calls after the sibling's call: in STEADY always the
 * world allreduce; in DIVERGE the refused ranks go to another
 * communicator instead (comm ranks reversed); in MISMATCH they call an
 * allgather on the world where the others call an allreduce. */
static hccn_status_t next_call(hccn_ctx_t *ctx, res_t *r, hccn_comm_t *other,
                               int refused, float *b, float *g,
                               hccn_future_t **f)
{
    hccn_comm_t *w = hccn_comm_world(ctx);
    if (!refused || r->scenario == STEADY)
        return hccn_iallreduce(w, b, b, COUNT, HCCN_FP32, HCCN_SUM, f);
    if (r->scenario == DIVERGE)
        return hccn_allreduce(other, b, b, COUNT, HCCN_FP32, HCCN_SUM);
    return hccn_allgather(w, b, g, COUNT, HCCN_FP32);
}

static hccn_status_t diverge_rank(hccn_ctx_t *ctx, void *arg)
{
    res_t *r = arg;
    int me = hccn_rank(ctx);
    hccn_comm_t *sub = NULL, *other = NULL;
    float *a, *b, *g;
    if (hccn_comm_split(hccn_comm_world(ctx), me % 2, me, &sub) != HCCN_OK ||
        hccn_comm_split(hccn_comm_world(ctx), 0, -me, &other) != HCCN_OK ||
        hccn_malloc(ctx, COUNT * 4, (void **)&a) != HCCN_OK ||
        hccn_malloc(ctx, COUNT * 4, (void **)&b) != HCCN_OK ||
        hccn_malloc(ctx, COUNT * 4 * N, (void **)&g) != HCCN_OK)
        return HCCN_ERR_INTERNAL;
    for (int i = 0; i < COUNT; i++)
        a[i] = b[i] = value(me, i);
    hccn_future_t *f[2] = {NULL, NULL};
    r->sib[me] = sibling_call(sub, a, &f[0]);
    note(r->sib_msg[me], r->sib[me]);
    r->world[me] = next_call(ctx, r, other, r->sib[me] != HCCN_OK, b, g, &f[1]);
    for (int j = 0; j < 2; j++)
        if (f[j] != NULL) {
            hccn_status_t rc = hccn_wait(f[j]);
            hccn_future_free(f[j]);
            *(j ? &r->world[me] : &r->sib[me]) = rc;
        }
    note(r->msg[me], r->world[me]);
    r->sib_out[me] = a[1];
    r->world_out[me] = b[1];
    hccn_comm_destroy(sub);
    hccn_comm_destroy(other);
    return HCCN_OK;
}

static void run(res_t *r)
{
    hccn_cluster_t *cl = NULL;
    /* Host-load stress: the reports must not depend on who ran first. */
    hccn_cluster_opts_t o = {.struct_size = sizeof(o), .jitter_us = 300};
    assert_int_equal(hccn_cluster_create_json(seven, "seven", &o, &cl), HCCN_OK);
    assert_int_equal(hccn_cluster_run(cl, diverge_rank, r, NULL), HCCN_OK);
    hccn_cluster_destroy(cl);
}

/* Sum over the ranks of a parity (or all ranks: parity -1) of value(r, 1). */
static float expect(int parity)
{
    float s = 0;
    for (int k = 0; k < N; k++)
        if (parity < 0 || k % 2 == parity)
            s += value(k, 1);
    return s;
}

static void test_verdict_per_comm(void **state)
{
    (void)state;
    static res_t r = {.scenario = STEADY};
    run(&r);
    for (int k = 0; k < N; k++) {
        if (k % 2 == 0) {
            assert_int_equal(r.sib[k], HCCN_OK);
            assert_true(r.sib_out[k] == expect(0));
        } else {
            /* Every rank of the refused sibling gets the same verdict. */
            assert_int_equal(r.sib[k], HCCN_ERR_UNSUPPORTED);
            assert_non_null(strstr(r.sib_msg[k], "torus2d"));
            assert_non_null(strstr(r.sib_msg[k], "3 ranks"));
        }
        /* Posting the next call whatever the verdict keeps them in step. */
        assert_int_equal(r.world[k], HCCN_OK);
        assert_true(r.world_out[k] == expect(-1));
    }
}

static void test_divergence_report(void **state)
{
    (void)state;
    static res_t r = {.scenario = DIVERGE};
    run(&r);
    for (int k = 0; k < N; k++) {
        assert_int_equal(r.world[k], HCCN_ERR_TIMEOUT);
        assert_non_null(strstr(r.msg[k], "deadlock"));
        /* One line per group: who, in what, and whom it waits for. */
        assert_non_null(strstr(r.msg[k],
                               "\n  ranks 0, 2, 4, 6 each waits in allreduce "
                               "#2 on comm 1; not arrived: ranks 1, 3, 5\n"));
        assert_non_null(strstr(r.msg[k],
                               /* world 1, the siblings 2 and 3, other 4 */
                               "\n  ranks 1, 3, 5 each waits in allreduce #0 "
                               "on comm 4; not arrived: comm ranks 0, 2, 4, 6 "
                               "(ranks 6, 4, 2, 0)"));
    }
}

static void test_mismatch_names_ranks(void **state)
{
    (void)state;
    static res_t r = {.scenario = MISMATCH};
    run(&r);
    for (int k = 0; k < N; k++) {
        assert_int_equal(r.world[k], HCCN_ERR_MISMATCH);
        assert_non_null(strstr(r.msg[k],
                               "rank 0 called allreduce(count=64, fp32, sum, "
                               "root=0) but rank 1 called allgather"));
        assert_non_null(strstr(r.msg[k],
                               "(3 ranks disagree with rank 0: 1, 3, 5)"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verdict_per_comm),
        cmocka_unit_test(test_divergence_report),
        cmocka_unit_test(test_mismatch_names_ranks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
