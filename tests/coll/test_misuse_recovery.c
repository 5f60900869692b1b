/* Misuse of the recovery API, as a hostile program would write it: NULL
 * and out-of-range arguments, a grow that lists a rank twice, a member or
 * no rank of the cluster, a revoke repeated, shrink/agree/revoke/failed on
 * a destroyed communicator, recovery costs of NaN, inf or 1e300,
 * settings changed while the cluster runs, and grows that cannot
 * complete. Every case ends with the exact status and a message that
 * names the function, the rank and the argument at fault; none crashes,
 * hangs or is silently accepted. */
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

#define N 4
#define CASES 24
#define MSG 512

static const char *quad =
    "{\"version\":1,\"node_types\":[{\"count\":1,"
    "\"npu\":{\"count\":4,\"arena_MiB\":16,\"reduce_bw_GBps\":100},"
    "\"fabric\":{\"type\":\"mesh\",\"bw_GBps\":10,\"lat_us\":2}}]}";

typedef struct {
    hccn_status_t rc[N][CASES];
    char msg[N][CASES][MSG];
} res_t;

static void note(res_t *r, int rank, int k, hccn_status_t rc)
{
    r->rc[rank][k] = rc;
    snprintf(r->msg[rank][k], MSG, "%s", rc == HCCN_OK ? "" : hccn_last_error());
}

/* Case numbers, in the order the rank function makes them. */
enum {
    C_REVOKE_NULL, C_AGREE_NULL, C_AGREE_FLAG, C_FAILED_N, C_FAILED_MAX,
    C_FAILED_RANKS, C_SHRINK_OUT, C_GROW_NULL_LIST, C_GROW_N, C_GROW_OUT,
    C_GROW_RANGE, C_GROW_NEG, C_GROW_MEMBER, C_GROW_TWICE, C_REVOKE,
    C_REVOKE_AGAIN, C_SHRINK_DEAD, C_AGREE_DEAD, C_REVOKE_DEAD, C_FAILED_DEAD,
    C_RECOVERY_RUNNING, C_ALLOCATOR_RUNNING, C_AFTER,
};

static void bad_arguments(res_t *r, int me, hccn_comm_t *w)
{
    int flag = 1, n = 0, ranks[N];
    hccn_comm_t *o = NULL;
    note(r, me, C_REVOKE_NULL, hccn_comm_revoke(NULL));
    note(r, me, C_AGREE_NULL, hccn_comm_agree(NULL, &flag));
    note(r, me, C_AGREE_FLAG, hccn_comm_agree(w, NULL));
    note(r, me, C_FAILED_N, hccn_comm_failed(w, ranks, N, NULL));
    note(r, me, C_FAILED_MAX, hccn_comm_failed(w, ranks, -1, &n));
    note(r, me, C_FAILED_RANKS, hccn_comm_failed(w, NULL, 5, &n));
    note(r, me, C_SHRINK_OUT, hccn_comm_shrink(w, NULL));
    note(r, me, C_GROW_NULL_LIST, hccn_comm_grow(w, NULL, 1, &o));
    note(r, me, C_GROW_N, hccn_comm_grow(w, ranks, -1, &o));
    note(r, me, C_GROW_OUT, hccn_comm_grow(w, ranks, 1, NULL));
}

/* Ranks 0-2 form sub, rank 3 is the spare; every bad list is refused on
 * every rank that passes it, before any rendezvous. */
static void bad_grows(res_t *r, int me, hccn_comm_t *sub)
{
    hccn_comm_t *o = NULL;
    const int twice[2] = {3, 3};
    if (me < 3) {
        note(r, me, C_GROW_RANGE, hccn_comm_grow(sub, (const int[]){99}, 1, &o));
        note(r, me, C_GROW_NEG, hccn_comm_grow(sub, (const int[]){-1}, 1, &o));
        note(r, me, C_GROW_MEMBER, hccn_comm_grow(sub, (const int[]){0}, 1, &o));
        note(r, me, C_GROW_TWICE, hccn_comm_grow(sub, twice, 2, &o));
    } else {
        note(r, me, C_GROW_TWICE, hccn_comm_grow(NULL, twice, 2, &o));
    }
}

static void dead_handle(res_t *r, int me, hccn_comm_t *sub)
{
    int flag = 1, n = 0, ranks[N];
    hccn_comm_t *o = NULL;
    note(r, me, C_REVOKE, hccn_comm_revoke(sub));
    note(r, me, C_REVOKE_AGAIN, hccn_comm_revoke(sub));
    if (hccn_comm_destroy(sub) != HCCN_OK)
        note(r, me, C_AFTER, HCCN_ERR_INTERNAL);
    note(r, me, C_SHRINK_DEAD, hccn_comm_shrink(sub, &o));
    note(r, me, C_AGREE_DEAD, hccn_comm_agree(sub, &flag));
    note(r, me, C_REVOKE_DEAD, hccn_comm_revoke(sub));
    note(r, me, C_FAILED_DEAD, hccn_comm_failed(sub, ranks, N, &n));
}

static hccn_status_t misuse_rank(hccn_ctx_t *ctx, void *arg)
{
    res_t *r = arg;
    int me = hccn_rank(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx), *sub = NULL;
    bad_arguments(r, me, w);
    if (hccn_comm_split(w, me < 3 ? 0 : 1, me, &sub) != HCCN_OK)
        return HCCN_ERR_INTERNAL;
    bad_grows(r, me, sub);
    dead_handle(r, me, sub);
    if (me == 0) {
        hccn_recovery_opts_t ro = {.struct_size = sizeof(ro), .detect_s = 1e-3,
                                   .init_s = 1e-4};
        note(r, me, C_RECOVERY_RUNNING,
             hccn_cluster_set_recovery(hccn_ctx_cluster(ctx), &ro));
        note(r, me, C_ALLOCATOR_RUNNING, hccn_set_allocator(NULL));
    }
    /* After all of it the world still works. */
    note(r, me, C_AFTER, hccn_barrier(w));
    return HCCN_OK;
}

static void expect(const res_t *r, int rank, int k, hccn_status_t rc,
                   const char *a, const char *b)
{
    const char *m = r->msg[rank][k];
    if (r->rc[rank][k] != rc || (a && !strstr(m, a)) || (b && !strstr(m, b)))
        print_error("rank %d case %d: got %s [%s], expected %s [%s] [%s]\n",
                    rank, k, hccn_status_name(r->rc[rank][k]), m,
                    hccn_status_name(rc), a ? a : "", b ? b : "");
    assert_int_equal(r->rc[rank][k], rc);
    assert_true(a == NULL || strstr(m, a) != NULL);
    assert_true(b == NULL || strstr(m, b) != NULL);
}

static void check_arguments(const res_t *r, int k)
{
    char who[64];
    snprintf(who, sizeof(who), "rank %d", k);
    expect(r, k, C_REVOKE_NULL, HCCN_ERR_INVALID, "hccn_comm_revoke", "comm is NULL");
    expect(r, k, C_AGREE_NULL, HCCN_ERR_INVALID, "hccn_comm_agree", "comm is NULL");
    expect(r, k, C_AGREE_FLAG, HCCN_ERR_INVALID, who, "flag is NULL");
    expect(r, k, C_FAILED_N, HCCN_ERR_INVALID, "hccn_comm_failed", "n is NULL");
    expect(r, k, C_FAILED_MAX, HCCN_ERR_INVALID, who, "max < 0");
    expect(r, k, C_FAILED_RANKS, HCCN_ERR_INVALID, who, "ranks NULL with max > 0");
    expect(r, k, C_SHRINK_OUT, HCCN_ERR_INVALID, who, "out is NULL");
    expect(r, k, C_GROW_NULL_LIST, HCCN_ERR_INVALID, who, "ranks is NULL (n = 1)");
    expect(r, k, C_GROW_N, HCCN_ERR_INVALID, who, "n = -1 is not in [1, 4]");
    expect(r, k, C_GROW_OUT, HCCN_ERR_INVALID, "hccn_comm_grow", "out is NULL");
}

static void check_grows_and_dead(const res_t *r, int k)
{
    char who[64], dead[96];
    snprintf(who, sizeof(who), "hccn_comm_grow: rank %d", k);
    if (k < 3) {
        expect(r, k, C_GROW_RANGE, HCCN_ERR_INVALID, who,
               "ranks[0] = 99 is not a rank of the cluster [0, 4)");
        expect(r, k, C_GROW_NEG, HCCN_ERR_INVALID, who,
               "ranks[0] = -1 is not a rank of the cluster");
        expect(r, k, C_GROW_MEMBER, HCCN_ERR_INVALID, who,
               "ranks[0] = 0 is already comm rank 0");
    }
    expect(r, k, C_GROW_TWICE, HCCN_ERR_INVALID, who, "rank 3 is listed twice");
    /* Revoking twice is allowed (any member, any number of times). */
    expect(r, k, C_REVOKE, HCCN_OK, NULL, NULL);
    expect(r, k, C_REVOKE_AGAIN, HCCN_OK, NULL, NULL);
    snprintf(dead, sizeof(dead), "rank %d used a stale communicator handle", k);
    expect(r, k, C_SHRINK_DEAD, HCCN_ERR_INVALID, "hccn_comm_shrink", dead);
    expect(r, k, C_AGREE_DEAD, HCCN_ERR_INVALID, "hccn_comm_agree", dead);
    expect(r, k, C_REVOKE_DEAD, HCCN_ERR_INVALID, "hccn_comm_revoke", dead);
    expect(r, k, C_FAILED_DEAD, HCCN_ERR_INVALID, "hccn_comm_failed",
           "already destroyed by hccn_comm_destroy");
    expect(r, k, C_AFTER, HCCN_OK, NULL, NULL);
}

static void test_recovery_misuse(void **state)
{
    (void)state;
    hccn_cluster_t *cl = NULL;
    assert_int_equal(hccn_cluster_create_json(quad, "quad", NULL, &cl), HCCN_OK);
    static res_t r;
    assert_int_equal(hccn_cluster_run(cl, misuse_rank, &r, NULL), HCCN_OK);
    for (int k = 0; k < N; k++) {
        check_arguments(&r, k);
        check_grows_and_dead(&r, k);
    }
    expect(&r, 0, C_RECOVERY_RUNNING, HCCN_ERR_INVALID,
           "hccn_cluster_set_recovery", "the cluster is running");
    expect(&r, 0, C_ALLOCATOR_RUNNING, HCCN_ERR_INVALID, "hccn_set_allocator",
           "live");
    hccn_cluster_destroy(cl);
}

/* Recovery costs: NaN, infinities and absurd values are refused naming
 * the field; negative values (and -inf) keep the current one, as
 * documented; the cluster's own checks come first. */
static void test_recovery_costs(void **state)
{
    (void)state;
    hccn_cluster_t *cl = NULL;
    hccn_recovery_opts_t o = {.struct_size = sizeof(o), .detect_s = -1,
                              .init_s = -1};
    assert_int_equal(hccn_cluster_set_recovery(NULL, &o), HCCN_ERR_INVALID);
    assert_non_null(strstr(hccn_last_error(), "cluster is NULL"));
    assert_int_equal(hccn_cluster_create_json(quad, "quad", NULL, &cl), HCCN_OK);
    assert_int_equal(hccn_cluster_set_recovery(cl, NULL), HCCN_ERR_INVALID);
    assert_non_null(strstr(hccn_last_error(), "opts is NULL"));
    o.struct_size = 1;
    assert_int_equal(hccn_cluster_set_recovery(cl, &o), HCCN_ERR_INVALID);
    assert_non_null(strstr(hccn_last_error(), "struct_size"));
    o.struct_size = sizeof(o);
    const double bad[] = {NAN, INFINITY, 1e300, 1e6 * 1.0000001};
    const char *shown[] = {"(got nan)", "(got inf)", "(got 1e+300)",
                           "(got 1e+06)"};
    for (int i = 0; i < 4; i++) {
        o.detect_s = bad[i];
        o.init_s = -1;
        assert_int_equal(hccn_cluster_set_recovery(cl, &o), HCCN_ERR_INVALID);
        assert_non_null(strstr(hccn_last_error(), "opts.detect_s must be at most 1e6 s"));
        assert_non_null(strstr(hccn_last_error(), shown[i]));
        o.detect_s = -1;
        o.init_s = bad[i];
        assert_int_equal(hccn_cluster_set_recovery(cl, &o), HCCN_ERR_INVALID);
        assert_non_null(strstr(hccn_last_error(), "opts.init_s must be at most 1e6 s"));
    }
    o.detect_s = -INFINITY;
    o.init_s = 1e-300;   /* tiny but a time: taken */
    assert_int_equal(hccn_cluster_set_recovery(cl, &o), HCCN_OK);
    hccn_cluster_destroy(cl);
}

/* Grows that cannot complete. A: the members list rank 3, which returns
 * without calling (the members' wait once read a communicator it did not
 * have, and crashed). B: rank 3 joins a grow no member makes while they
 * wait in a barrier: a deadlock whose report says where rank 3 waits. */
static hccn_status_t lone_grow_rank(hccn_ctx_t *ctx, void *arg)
{
    res_t *r = arg;
    int me = hccn_rank(ctx), scenario = r->rc[0][CASES - 1];
    hccn_comm_t *w = hccn_comm_world(ctx), *sub = NULL, *o = NULL;
    const int spare[1] = {3};
    if (hccn_comm_split(w, me < 3 ? 0 : 1, me, &sub) != HCCN_OK)
        return HCCN_ERR_INTERNAL;
    if (scenario == 0 && me < 3)
        note(r, me, 0, hccn_comm_grow(sub, spare, 1, &o));
    else if (scenario == 1)
        note(r, me, 0, me < 3 ? hccn_barrier(w)
                              : hccn_comm_grow(NULL, spare, 1, &o));
    hccn_comm_destroy(sub);
    return HCCN_OK;
}

static void test_grow_left_alone(void **state)
{
    (void)state;
    hccn_cluster_t *cl = NULL;
    setenv("HCCN_TIMEOUT", "120", 1);   /* both are reported long before */
    assert_int_equal(hccn_cluster_create_json(quad, "quad", NULL, &cl), HCCN_OK);
    unsetenv("HCCN_TIMEOUT");
    static res_t r;
    r.rc[0][CASES - 1] = 0;
    assert_int_equal(hccn_cluster_run(cl, lone_grow_rank, &r, NULL), HCCN_OK);
    for (int k = 0; k < 3; k++)
        expect(&r, k, 0, HCCN_ERR_REMOTE, "hccn_comm_grow",
               "rank 3 returned from its function without completing its "
               "part");
    /* Every rank reports the states as they were when the deadlock was
     * seen, never a later snapshot (a rank that went back to sleep after
     * its peers had reported and returned once took one of its own):
     * repeated, since the window is a race. */
    for (int rep = 0; rep < 40; rep++) {
        memset(&r, 0, sizeof(r));
        r.rc[0][CASES - 1] = 1;
        assert_int_equal(hccn_cluster_run(cl, lone_grow_rank, &r, NULL),
                         HCCN_OK);
        for (int k = 0; k < N; k++) {
            expect(&r, k, 0, HCCN_ERR_TIMEOUT, "deadlock",
                   "\n  ranks 0-2 each waits in barrier #1 on comm 1; not "
                   "arrived: rank 3\n");
            expect(&r, k, 0, HCCN_ERR_TIMEOUT,
                   "\n  rank 3 waits in hccn_comm_grow", NULL);
        }
    }
    hccn_cluster_destroy(cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recovery_misuse),
        cmocka_unit_test(test_recovery_costs),
        cmocka_unit_test(test_grow_left_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
