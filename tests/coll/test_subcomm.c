/*
 * Sub-communicators on configs/default.json (16 ranks, 2 nodes x 8):
 *
 * - hccn_comm_split by node (color = hccn_node), by index in the node
 *   (color = hccn_local_rank), by parity with keys that reverse the order,
 *   with some ranks passing HCCN_SPLIT_NOCOLOR (they get NULL);
 * - hccn_comm_create with an explicit list, in an order that is not the
 *   rank order: comm rank = position in the list; non-members get NULL;
 * - on every new communicator, every collective gives the result of a
 *   serial reference computed here from the membership the split rules
 *   imply (ranks with one color, ordered by (key, parent rank));
 * - collectives in flight on two sub-communicators at once: right results
 *   and the same simulated times, bit for bit, on 10 runs;
 * - a comm_split on one rank against a collective on the others is
 *   HCCN_ERR_MISMATCH on every rank (with HCCN_TIMEOUT small as a safety
 *   net), as is comm_create with lists that differ; bad arguments are
 *   HCCN_ERR_INVALID.
 *
 * Each cluster run makes its communicators and runs one collective on
 * them, so that every case starts from clean clocks.
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
#include "test_util.h"

#define NR 16
#define NODE 8
#define CNT 1000

static hccn_cluster_t *make_cluster(void)
{
    hccn_cluster_t *cl = NULL;
    if (hccn_cluster_create(test_path("configs/default.json"), NULL, &cl) !=
        HCCN_OK)
        fail_msg("cluster: %s", hccn_last_error());
    assert_int_equal(hccn_cluster_size(cl), NR);
    return cl;
}

static void run_ok(hccn_cluster_t *cl, hccn_rank_fn fn, void *arg)
{
    hccn_status_t rc = hccn_cluster_run(cl, fn, arg, NULL);
    if (rc != HCCN_OK)
        fail_msg("run: %s: %s", hccn_status_name(rc), hccn_last_error());
}

/* Integer-valued floats: sums are exact in any order. */
static float val(int world_rank, size_t i)
{
    return (float)((int)((i * 7919u + (size_t)world_rank * 104729u) % 1999u) -
                   999);
}

/* ------------------------------------------------- how communicators form */

enum { S_NODE, S_LOCAL, S_PARITY_REV, S_NOCOLOR, S_CREATE, NSPLIT };

static const char *const split_names[NSPLIT] = {
    "by node", "by local index", "by parity, keys reversed",
    "with HCCN_SPLIT_NOCOLOR", "comm_create"};

/* hccn_comm_create's list: not in rank order, across both nodes. */
static const int create_list[] = {5, 3, 12, 0, 9, 14};
#define NCREATE ((int)(sizeof(create_list) / sizeof(create_list[0])))

/* The (color, key) each world rank passes; node and local index follow
 * configs/default.json (rank = 8 * node + local). */
static void split_args(int how, int r, int *color, int *key)
{
    switch (how) {
    case S_NODE:
        *color = r / NODE;
        *key = r % NODE;
        break;
    case S_LOCAL:
        *color = r % NODE;
        *key = r / NODE;
        break;
    case S_PARITY_REV:
        *color = r % 2;
        *key = -r;
        break;
    default:
        *color = r % 4 == 3 ? HCCN_SPLIT_NOCOLOR : 0;
        *key = 0;
        break;
    }
}

/* The reference: world ranks of r's new communicator in comm-rank order;
 * returns the size (0: r gets NULL). */
static int members(int how, int r, int *list)
{
    int m = 0;
    if (how == S_CREATE) {
        int in = 0;
        for (int k = 0; k < NCREATE; k++)
            in |= create_list[k] == r;
        if (!in)
            return 0;
        memcpy(list, create_list, sizeof(create_list));
        return NCREATE;
    }
    int color, key, c, k;
    split_args(how, r, &color, &key);
    if (color < 0)
        return 0;
    for (int q = 0; q < NR; q++) {
        split_args(how, q, &c, &k);
        if (c != color)
            continue;
        /* Insert by (key, rank). */
        int j = m++;
        while (j > 0) {
            int pc, pk;
            split_args(how, list[j - 1], &pc, &pk);
            if (pk < k || (pk == k && list[j - 1] < q))
                break;
            list[j] = list[j - 1];
            j--;
        }
        list[j] = q;
    }
    return m;
}

static hccn_status_t make_comm(hccn_ctx_t *ctx, int how, hccn_comm_t **out)
{
    hccn_comm_t *w = hccn_comm_world(ctx);
    if (how == S_CREATE)
        return hccn_comm_create(w, create_list, NCREATE, out);
    int color, key;
    split_args(how, hccn_rank(ctx), &color, &key);
    return hccn_comm_split(w, color, key, out);
}

/* ============================================ collectives on new comms */

enum { C_ALLREDUCE, C_REDUCE_SCATTER, C_ALLGATHER, C_BROADCAST, C_REDUCE,
       C_ALLTOALL, C_BARRIER, NCOLL };

static const char *const coll_names[NCOLL] = {
    "allreduce", "reduce_scatter", "allgather", "broadcast", "reduce",
    "alltoall", "barrier"};

typedef struct {
    int how, coll;
    int is_null[NR], rank[NR], size[NR];
    float *out[NR];            /* NR * CNT floats per rank */
} sub_t;

static hccn_status_t run_coll(hccn_comm_t *c, int coll, float *s, float *r)
{
    int m = hccn_comm_size(c);
    switch (coll) {
    case C_ALLREDUCE:
        return hccn_allreduce(c, s, r, CNT, HCCN_FP32, HCCN_SUM);
    case C_REDUCE_SCATTER:
        return hccn_reduce_scatter(c, s, r, CNT, HCCN_FP32, HCCN_SUM);
    case C_ALLGATHER:
        return hccn_allgather(c, s, r, CNT, HCCN_FP32);
    case C_BROADCAST:
        return hccn_broadcast(c, s, r, CNT, HCCN_FP32, m - 1);
    case C_REDUCE:
        return hccn_reduce(c, s, r, CNT, HCCN_FP32, HCCN_SUM, 0);
    case C_ALLTOALL:
        return hccn_alltoall(c, s, r, CNT, HCCN_FP32);
    default:
        return hccn_barrier(c);
    }
}

static hccn_status_t sub_rank(hccn_ctx_t *ctx, void *arg)
{
    sub_t *t = arg;
    int r = hccn_rank(ctx);
    hccn_comm_t *c = (hccn_comm_t *)ctx;   /* must be overwritten */
    hccn_status_t rc = make_comm(ctx, t->how, &c);
    if (rc != HCCN_OK)
        return rc;
    t->is_null[r] = c == NULL;
    if (c == NULL)
        return HCCN_OK;
    t->rank[r] = hccn_comm_rank(c);
    t->size[r] = hccn_comm_size(c);
    size_t all = (size_t)t->size[r] * CNT;
    float *sb, *rb;
    if ((rc = hccn_malloc(ctx, all * 4, (void **)&sb)) != HCCN_OK ||
        (rc = hccn_malloc(ctx, all * 4, (void **)&rb)) != HCCN_OK)
        return rc;
    for (size_t i = 0; i < all; i++) {
        sb[i] = val(r, i);
        rb[i] = -12345.0f;
    }
    if ((rc = run_coll(c, t->coll, sb, rb)) != HCCN_OK)
        return rc;
    memcpy(t->out[r], rb, all * 4);
    hccn_free(ctx, sb);
    hccn_free(ctx, rb);
    return hccn_comm_destroy(c);
}

/* The value rank r must hold at RECV[i] (NAN: no requirement). */
static float expected(int coll, const int *list, int m, int me, size_t i)
{
    size_t blk = i / CNT, off = i % CNT;
    float s = 0.0f;
    switch (coll) {
    case C_ALLREDUCE:
        if (blk > 0)
            return NAN;
        for (int k = 0; k < m; k++)
            s += val(list[k], i);
        return s;
    case C_REDUCE_SCATTER:
        if (blk > 0)
            return NAN;
        for (int k = 0; k < m; k++)
            s += val(list[k], (size_t)me * CNT + i);
        return s;
    case C_ALLGATHER:
        return val(list[blk], off);
    case C_BROADCAST:
        return blk > 0 ? NAN : val(list[m - 1], i);
    case C_REDUCE:
        if (blk > 0 || me != 0)
            return NAN;
        for (int k = 0; k < m; k++)
            s += val(list[k], i);
        return s;
    case C_ALLTOALL:
        return val(list[blk], (size_t)me * CNT + off);
    default:
        return NAN;
    }
}

static void check_sub(const sub_t *t)
{
    int list[NR];
    for (int r = 0; r < NR; r++) {
        int m = members(t->how, r, list);
        if (m == 0) {
            if (!t->is_null[r])
                fail_msg("%s: rank %d should get NULL", split_names[t->how],
                         r);
            continue;
        }
        int me = -1;
        for (int k = 0; k < m; k++)
            if (list[k] == r)
                me = k;
        if (t->is_null[r] || t->size[r] != m || t->rank[r] != me)
            fail_msg("%s: rank %d: comm rank %d of %d (null %d), expected "
                     "%d of %d", split_names[t->how], r, t->rank[r],
                     t->size[r], t->is_null[r], me, m);
        for (size_t i = 0; i < (size_t)m * CNT; i++) {
            float want = expected(t->coll, list, m, me, i);
            if (!isnan(want) && t->out[r][i] != want)
                fail_msg("%s, %s: rank %d (comm rank %d) element %zu: %g, "
                         "expected %g", split_names[t->how],
                         coll_names[t->coll], r, me, i, t->out[r][i], want);
        }
    }
}

static void test_splits_and_collectives(void **state)
{
    (void)state;
    hccn_cluster_t *cl = make_cluster();
    static sub_t t;
    for (int r = 0; r < NR; r++)
        t.out[r] = calloc((size_t)NR * CNT, sizeof(float));
    for (int how = 0; how < NSPLIT; how++)
        for (int coll = 0; coll < NCOLL; coll++) {
            t.how = how;
            t.coll = coll;
            memset(t.is_null, 0, sizeof(t.is_null));
            memset(t.rank, -1, sizeof(t.rank));
            memset(t.size, 0, sizeof(t.size));
            run_ok(cl, sub_rank, &t);
            check_sub(&t);
        }
    for (int r = 0; r < NR; r++)
        free(t.out[r]);
    hccn_cluster_destroy(cl);
}

/* The reference itself, spelled out for the cases the task names. */
static void test_reference_membership(void **state)
{
    (void)state;
    int list[NR];
    assert_int_equal(members(S_NODE, 11, list), 8);
    assert_int_equal(list[0], 8);
    assert_int_equal(list[7], 15);
    assert_int_equal(members(S_LOCAL, 11, list), 2);
    assert_int_equal(list[0], 3);
    assert_int_equal(list[1], 11);
    assert_int_equal(members(S_PARITY_REV, 4, list), 8);
    assert_int_equal(list[0], 14);     /* key -14 is the smallest */
    assert_int_equal(list[7], 0);
    assert_int_equal(members(S_NOCOLOR, 7, list), 0);
    assert_int_equal(members(S_NOCOLOR, 8, list), 12);
    assert_int_equal(members(S_CREATE, 12, list), NCREATE);
    assert_int_equal(list[2], 12);
    assert_int_equal(members(S_CREATE, 1, list), 0);
}

/* ===================================== two sub-communicators in flight */

#define FCNT 65536
#define FRUNS 10

typedef struct {
    double end[NR][2];
    float *out[NR][2];
} flight_t;

/* Each rank posts an allreduce on its parity communicator (keys reversed)
 * and an allgather on its node communicator, then waits for both. */
static hccn_status_t flight_rank(hccn_ctx_t *ctx, void *arg)
{
    flight_t *t = arg;
    int r = hccn_rank(ctx);
    hccn_comm_t *par, *node;
    float *a, *gs, *gr;
    hccn_future_t *fa, *fg;
    hccn_status_t rc;
    if ((rc = make_comm(ctx, S_PARITY_REV, &par)) != HCCN_OK ||
        (rc = make_comm(ctx, S_NODE, &node)) != HCCN_OK ||
        (rc = hccn_malloc(ctx, FCNT * 4, (void **)&a)) != HCCN_OK ||
        (rc = hccn_malloc(ctx, FCNT * 4, (void **)&gs)) != HCCN_OK ||
        (rc = hccn_malloc(ctx, FCNT * 4 * NODE, (void **)&gr)) != HCCN_OK)
        return rc;
    for (size_t i = 0; i < FCNT; i++) {
        a[i] = val(r, i);
        gs[i] = val(r, i + 1);
    }
    if ((rc = hccn_iallreduce(par, a, a, FCNT, HCCN_FP32, HCCN_SUM, &fa)) ||
        (rc = hccn_iallgather(node, gs, gr, FCNT, HCCN_FP32, &fg)) ||
        (rc = hccn_wait(fg)) || (rc = hccn_wait(fa)) ||
        (rc = hccn_future_times(fa, NULL, &t->end[r][0])) ||
        (rc = hccn_future_times(fg, NULL, &t->end[r][1])))
        return rc;
    hccn_future_free(fa);
    hccn_future_free(fg);
    memcpy(t->out[r][0], a, FCNT * 4);
    memcpy(t->out[r][1], gr, FCNT * 4 * NODE);
    hccn_free(ctx, a);
    hccn_free(ctx, gs);
    hccn_free(ctx, gr);
    if ((rc = hccn_comm_destroy(par)) != HCCN_OK)
        return rc;
    return hccn_comm_destroy(node);
}

static void test_two_in_flight(void **state)
{
    (void)state;
    hccn_cluster_t *cl = make_cluster();
    static flight_t t[FRUNS];
    for (int run = 0; run < FRUNS; run++) {
        for (int r = 0; r < NR; r++) {
            t[run].out[r][0] = calloc(FCNT, 4);
            t[run].out[r][1] = calloc((size_t)FCNT * NODE, 4);
        }
        run_ok(cl, flight_rank, &t[run]);
    }
    for (int r = 0; r < NR; r++) {
        int node0 = r / NODE * NODE;
        for (size_t i = 0; i < FCNT; i++) {
            float s = 0.0f;
            for (int q = r % 2; q < NR; q += 2)
                s += val(q, i);
            if (t[0].out[r][0][i] != s)
                fail_msg("rank %d parity allreduce element %zu: %g, expected "
                         "%g", r, i, t[0].out[r][0][i], s);
            for (int k = 0; k < NODE; k++)
                assert_true(t[0].out[r][1][(size_t)k * FCNT + i] ==
                            val(node0 + k, i + 1));
        }
        assert_true(t[0].end[r][0] > 0.0 && t[0].end[r][1] > 0.0);
    }
    for (int run = 1; run < FRUNS; run++) {
        assert_memory_equal(t[run].end, t[0].end, sizeof(t[0].end));
        for (int r = 0; r < NR; r++) {
            assert_memory_equal(t[run].out[r][0], t[0].out[r][0], FCNT * 4);
            assert_memory_equal(t[run].out[r][1], t[0].out[r][1],
                                FCNT * 4 * NODE);
        }
    }
    for (int run = 0; run < FRUNS; run++)
        for (int r = 0; r < NR; r++) {
            free(t[run].out[r][0]);
            free(t[run].out[r][1]);
        }
    hccn_cluster_destroy(cl);
}

/* =========================================================== mismatch */

enum { M_SPLIT_VS_ALLREDUCE, M_CREATE_LISTS, M_NODE_SPLIT_VS_BARRIER,
       NMISMATCH };

typedef struct {
    int kind;
    int involved[NR];          /* the rank took part in the mismatch */
    hccn_status_t rc[NR], after[NR];
    char msg[NR][400];
    int bystander_ok[NR];      /* node 0, beside node 1's mismatch */
} mm_t;

/* The mismatched call of each case on rank r, on communicator c (the
 * world, or r's node communicator). */
static hccn_status_t mm_call(int kind, int r, hccn_comm_t *c, float *buf)
{
    hccn_comm_t *out = NULL;
    const int even[] = {0, 1, 2, 3}, odd[] = {3, 2, 1, 0};
    switch (kind) {
    case M_SPLIT_VS_ALLREDUCE:      /* rank 0 splits, the others reduce */
        return r == 0 ? hccn_comm_split(c, 0, 0, &out)
                      : hccn_allreduce(c, buf, buf, 64, HCCN_FP32, HCCN_SUM);
    case M_CREATE_LISTS:            /* the same ranks, another order */
        return hccn_comm_create(c, r % 2 ? odd : even, 4, &out);
    default:                        /* node 1: local 0 splits, others wait */
        return r == NODE ? hccn_comm_split(c, 0, 0, &out) : hccn_barrier(c);
    }
}

static hccn_status_t mm_rank(hccn_ctx_t *ctx, void *arg)
{
    mm_t *m = arg;
    int r = hccn_rank(ctx);
    hccn_comm_t *c = hccn_comm_world(ctx), *node = NULL;
    float *buf;
    hccn_status_t rc;
    if ((rc = hccn_malloc(ctx, 64 * 4, (void **)&buf)) != HCCN_OK)
        return rc;
    memset(buf, 0, 64 * 4);
    if (m->kind == M_NODE_SPLIT_VS_BARRIER) {
        if ((rc = make_comm(ctx, S_NODE, &node)) != HCCN_OK)
            return rc;
        c = node;
    }
    m->involved[r] = m->kind != M_NODE_SPLIT_VS_BARRIER || r >= NODE;
    if (!m->involved[r]) {
        m->bystander_ok[r] =
            hccn_allreduce(c, buf, buf, 64, HCCN_FP32, HCCN_SUM) == HCCN_OK;
    } else {
        m->rc[r] = mm_call(m->kind, r, c, buf);
        snprintf(m->msg[r], sizeof(m->msg[r]), "%s", hccn_last_error());
        /* The communicator is broken now: the next call fails at once
         * with the same code instead of hanging. */
        m->after[r] = hccn_allreduce(c, buf, buf, 64, HCCN_FP32, HCCN_SUM);
    }
    hccn_free(ctx, buf);
    return hccn_comm_destroy(node);
}

static void test_mismatch(void **state)
{
    (void)state;
    hccn_cluster_t *cl = make_cluster();
    static mm_t m;
    for (int kind = 0; kind < NMISMATCH; kind++) {
        memset(&m, 0, sizeof(m));
        m.kind = kind;
        run_ok(cl, mm_rank, &m);
        for (int r = 0; r < NR; r++) {
            if (!m.involved[r]) {
                assert_true(m.bystander_ok[r]);
                continue;
            }
            if (m.rc[r] != HCCN_ERR_MISMATCH || m.after[r] != HCCN_ERR_MISMATCH)
                fail_msg("case %d rank %d: %s then %s: %s", kind, r,
                         hccn_status_name(m.rc[r]),
                         hccn_status_name(m.after[r]), m.msg[r]);
            assert_non_null(strstr(m.msg[r], "comm_split"));
            if (kind == M_SPLIT_VS_ALLREDUCE)
                assert_non_null(strstr(m.msg[r], "allreduce"));
            if (kind == M_NODE_SPLIT_VS_BARRIER)
                assert_non_null(strstr(m.msg[r], "barrier"));
        }
    }
    hccn_cluster_destroy(cl);
}

/* ====================================================== bad arguments */

enum { B_COLOR, B_NULL_OUT, B_CREATE_EMPTY, B_CREATE_DUP, B_CREATE_RANGE,
       B_CREATE_NULL, NBAD };

typedef struct {
    hccn_status_t rc[NR][NBAD];
    char msg[NR][NBAD][200];
    int ok[NR];
} bad_t;

static void note(bad_t *b, int r, int k, hccn_status_t rc)
{
    b->rc[r][k] = rc;
    snprintf(b->msg[r][k], sizeof(b->msg[r][k]), "%s", hccn_last_error());
}

static hccn_status_t bad_rank(hccn_ctx_t *ctx, void *arg)
{
    bad_t *b = arg;
    int r = hccn_rank(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx), *out;
    const int dup[] = {1, 2, 1}, range[] = {0, 16};
    note(b, r, B_COLOR, hccn_comm_split(w, -5, 0, &out));
    note(b, r, B_NULL_OUT, hccn_comm_split(w, 0, 0, NULL));
    note(b, r, B_CREATE_EMPTY, hccn_comm_create(w, dup, 0, &out));
    note(b, r, B_CREATE_DUP, hccn_comm_create(w, dup, 3, &out));
    note(b, r, B_CREATE_RANGE, hccn_comm_create(w, range, 2, &out));
    note(b, r, B_CREATE_NULL, hccn_comm_create(w, NULL, 2, &out));
    /* Nothing was posted: the world still splits. */
    hccn_status_t rc = hccn_comm_split(w, r / NODE, r, &out);
    b->ok[r] = rc == HCCN_OK && out != NULL && hccn_comm_size(out) == NODE &&
               hccn_comm_destroy(out) == HCCN_OK;
    return HCCN_OK;
}

static void test_bad_arguments(void **state)
{
    (void)state;
    hccn_cluster_t *cl = make_cluster();
    static bad_t b;
    memset(&b, 0, sizeof(b));
    run_ok(cl, bad_rank, &b);
    const struct {
        int k;
        const char *w1, *w2;
    } want[] = {
        {B_COLOR, "color -5", "HCCN_SPLIT_NOCOLOR"},
        {B_NULL_OUT, "hccn_comm_split", "NULL"},
        {B_CREATE_EMPTY, "hccn_comm_create", "n = 0"},
        {B_CREATE_DUP, "hccn_comm_create", "listed twice"},
        {B_CREATE_RANGE, "ranks[1] = 16", "out of range"},
        {B_CREATE_NULL, "hccn_comm_create", "NULL"},
    };
    for (int r = 0; r < NR; r++) {
        assert_true(b.ok[r]);
        for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
            const char *m = b.msg[r][want[i].k];
            if (b.rc[r][want[i].k] != HCCN_ERR_INVALID ||
                strstr(m, want[i].w1) == NULL || strstr(m, want[i].w2) == NULL)
                fail_msg("rank %d case %d: %s \"%s\"", r, want[i].k,
                         hccn_status_name(b.rc[r][want[i].k]), m);
        }
    }
    hccn_cluster_destroy(cl);
}

int main(void)
{
    setenv("HCCN_TIMEOUT", "20", 1);   /* a mismatch must not hang */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_membership),
        cmocka_unit_test(test_splits_and_collectives),
        cmocka_unit_test(test_two_in_flight),
        cmocka_unit_test(test_mismatch),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
