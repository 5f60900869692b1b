/*
 * Wrong arguments to the collectives return a clear error on the calling
 * rank: the status code, and a message (hccn_last_error()) that names the
 * rank, the function and what was wrong.
 *
 * A rank that rejects its arguments never joins the collective, so a peer
 * that called it correctly would wait for it. Every case here therefore
 * has every rank make the same bad call, and then the same good call
 * (an allreduce of one element), which must succeed on every rank: an
 * argument error must neither hang the others nor break the communicator.
 * Messages are read inside the rank function into shared arrays and
 * checked in the main thread (cmocka's assertions are not thread-safe).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hccn/hccn.h"

#define NRANKS 4
#define ARENA_MIB 4
#define COUNT 64                /* elements of the good buffers */

/* Bad arguments, each applied the same way on every rank. */
typedef enum {
    BAD_NULL_SEND,
    BAD_NULL_RECV,
    BAD_COUNT_MAX,              /* SIZE_MAX elements */
    BAD_HOST_SEND,              /* a host (stack) pointer */
    BAD_FOREIGN_RECV,           /* the next rank's device pointer */
    BAD_PAST_END,               /* runs past the end of the arena */
    BAD_DTYPE,
    BAD_OP,
    BAD_ROOT_HIGH,              /* root == nranks */
    BAD_ROOT_NEG,
    BAD_OVERLAP,                /* overlapping, not the in-place form */
    BAD_SAME,                   /* sendbuf == recvbuf without that form */
    BAD_NULL_COMM,
    BAD_ALGO,                   /* HCCN_ALGO names no algorithm */
    BAD_ALGO_COLL,              /* HCCN_ALGO=ring, which lacks the coll */
} bad_t;

typedef enum {
    F_ALLREDUCE,
    F_REDUCE_SCATTER,
    F_ALLGATHER,
    F_BROADCAST,
    F_REDUCE,
    F_ALLTOALL,
    F_SCATTER,
    F_GATHER,
} fn_t;

static const char *const fn_names[] = {
    "hccn_allreduce", "hccn_reduce_scatter", "hccn_allgather",
    "hccn_broadcast", "hccn_reduce",         "hccn_alltoall",
    "hccn_scatter",   "hccn_gather",
};

typedef struct {
    fn_t fn;
    bad_t bad;
    hccn_status_t want;         /* expected status */
    const char *what[3];        /* words the message must contain */
    int blocked;                /* 1: skipped, see the comment at it */
} case_t;

typedef struct {
    const case_t *c;
    void *ptr[NRANKS];          /* each rank's good RECV, for BAD_FOREIGN */
    hccn_status_t rc[NRANKS];
    char msg[NRANKS][512];
    hccn_status_t after[NRANKS];  /* the good call that follows */
    char after_msg[NRANKS][512];
} shared_t;

/* ---------------------------------------------------------- the call */

typedef struct {
    hccn_comm_t *comm;
    const void *send;
    void *recv;
    size_t count;
    hccn_dtype_t dtype;
    hccn_redop_t op;
    int root;
} args_t;

static hccn_status_t call(fn_t fn, const args_t *a)
{
    switch (fn) {
    case F_ALLREDUCE:
        return hccn_allreduce(a->comm, a->send, a->recv, a->count, a->dtype,
                              a->op);
    case F_REDUCE_SCATTER:
        return hccn_reduce_scatter(a->comm, a->send, a->recv, a->count,
                                   a->dtype, a->op);
    case F_ALLGATHER:
        return hccn_allgather(a->comm, a->send, a->recv, a->count, a->dtype);
    case F_BROADCAST:
        return hccn_broadcast(a->comm, a->send, a->recv, a->count, a->dtype,
                              a->root);
    case F_REDUCE:
        return hccn_reduce(a->comm, a->send, a->recv, a->count, a->dtype,
                           a->op, a->root);
    case F_ALLTOALL:
        return hccn_alltoall(a->comm, a->send, a->recv, a->count, a->dtype);
    case F_SCATTER:
        return hccn_scatter(a->comm, a->send, a->recv, a->count, a->dtype,
                            a->root);
    default:
        return hccn_gather(a->comm, a->send, a->recv, a->count, a->dtype,
                           a->root);
    }
}

/* Turns good arguments into the bad ones of case bad. send and recv are
 * separate device buffers of NRANKS * COUNT floats each. */
static void make_bad(bad_t bad, shared_t *s, int r, args_t *a, void *host)
{
    switch (bad) {
    case BAD_NULL_SEND:
        a->send = NULL;
        break;
    case BAD_NULL_RECV:
        a->recv = NULL;
        break;
    case BAD_COUNT_MAX:
        a->count = SIZE_MAX;
        break;
    case BAD_HOST_SEND:
        a->send = host;
        break;
    case BAD_FOREIGN_RECV:
        a->recv = s->ptr[(r + 1) % NRANKS];
        break;
    case BAD_PAST_END:
        /* More elements than the whole arena holds, but far from any
         * overflow. */
        a->count = (size_t)ARENA_MIB << 20;
        break;
    case BAD_DTYPE:
        a->dtype = (hccn_dtype_t)HCCN_DTYPE_COUNT;
        break;
    case BAD_OP:
        a->op = (hccn_redop_t)42;
        break;
    case BAD_ROOT_HIGH:
        a->root = NRANKS;
        break;
    case BAD_ROOT_NEG:
        a->root = -1;
        break;
    case BAD_OVERLAP:
        /* One element apart: never an in-place form. */
        a->recv = (char *)a->send + sizeof(float);
        break;
    case BAD_SAME:
        a->recv = (void *)a->send;
        break;
    case BAD_NULL_COMM:
        a->comm = NULL;
        break;
    default:
        break;
    }
}

static int forced_algo(bad_t bad)
{
    return bad == BAD_ALGO || bad == BAD_ALGO_COLL;
}

static hccn_status_t rank_main(hccn_ctx_t *ctx, void *arg)
{
    shared_t *s = arg;
    int r = hccn_rank(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx);
    float *send, *recv, host[8] = {0};
    /* Twice what any call needs, so that the overlapping buffers of
     * BAD_OVERLAP stay inside their allocation. */
    const size_t bytes = 2 * NRANKS * COUNT * sizeof(float);
    hccn_status_t rc;
    if ((rc = hccn_malloc(ctx, bytes, (void **)&send)) != HCCN_OK ||
        (rc = hccn_malloc(ctx, bytes, (void **)&recv)) != HCCN_OK)
        return rc;
    memset(send, 0, bytes);
    s->ptr[r] = recv;
    /* Every rank's pointer is published before anyone uses its peer's. */
    if (s->c->bad == BAD_FOREIGN_RECV && (rc = hccn_barrier(w)) != HCCN_OK)
        return rc;
    args_t a = {w, send, recv, COUNT, HCCN_FP32, HCCN_SUM, 0};
    make_bad(s->c->bad, s, r, &a, host);
    s->rc[r] = call(s->c->fn, &a);
    snprintf(s->msg[r], sizeof(s->msg[r]), "%s", hccn_last_error());
    /* HCCN_ALGO stays set through the run: no good call after those. */
    if (!forced_algo(s->c->bad)) {
        s->after[r] = hccn_allreduce(w, send, recv, 1, HCCN_FP32, HCCN_SUM);
        snprintf(s->after_msg[r], sizeof(s->after_msg[r]), "%s",
                 s->after[r] != HCCN_OK ? hccn_last_error() : "");
    }
    hccn_free(ctx, send);
    hccn_free(ctx, recv);
    return HCCN_OK;
}

/* ------------------------------------------------------------ checks */

static void check_case(hccn_cluster_t *cl, const case_t *c)
{
    if (c->blocked) {
        print_message("skipped (blocked): %s case %d\n", fn_names[c->fn],
                      (int)c->bad);
        return;
    }
    shared_t *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    s->c = c;
    if (c->bad == BAD_ALGO)
        setenv("HCCN_ALGO", "no_such_algo", 1);
    if (c->bad == BAD_ALGO_COLL)
        setenv("HCCN_ALGO", "ring", 1);
    hccn_status_t rc = hccn_cluster_run(cl, rank_main, s, NULL);
    unsetenv("HCCN_ALGO");
    if (rc != HCCN_OK)
        fail_msg("%s case %d: run failed: %s", fn_names[c->fn], (int)c->bad,
                 hccn_last_error());
    for (int r = 0; r < NRANKS; r++) {
        const char *m = s->msg[r];
        char rank_word[16];
        snprintf(rank_word, sizeof(rank_word), "rank %d", r);
        if (s->rc[r] != c->want)
            fail_msg("%s case %d, rank %d: got %s, expected %s (\"%s\")",
                     fn_names[c->fn], (int)c->bad, r,
                     hccn_status_name(s->rc[r]), hccn_status_name(c->want), m);
        /* A NULL comm carries no rank: the message cannot name it. */
        int need_rank = c->bad != BAD_NULL_COMM;
        if (strstr(m, fn_names[c->fn]) == NULL ||
            (need_rank && strstr(m, rank_word) == NULL))
            fail_msg("%s case %d, rank %d: message lacks the function or "
                     "the rank: \"%s\"", fn_names[c->fn], (int)c->bad, r, m);
        for (int k = 0; k < 3 && c->what[k] != NULL; k++)
            if (strstr(m, c->what[k]) == NULL)
                fail_msg("%s case %d, rank %d: message lacks \"%s\": \"%s\"",
                         fn_names[c->fn], (int)c->bad, r, c->what[k], m);
        if (!forced_algo(c->bad) && s->after[r] != HCCN_OK)
            fail_msg("%s case %d, rank %d: the good call after it failed: %s",
                     fn_names[c->fn], (int)c->bad, r, s->after_msg[r]);
    }
    free(s);
}

static hccn_cluster_t *make_cluster(void)
{
    char json[512];
    snprintf(json, sizeof(json),
             "{\"version\":1,\"node_types\":[{\"count\":1,"
             "\"npu\":{\"count\":%d,\"arena_MiB\":%d,\"reduce_bw_GBps\":100},"
             "\"fabric\":{\"type\":\"switch\",\"bw_GBps\":50,"
             "\"lat_us\":1}}]}",
             NRANKS, ARENA_MIB);
    /* A hang shows up as a timeout within seconds, not minutes. */
    hccn_cluster_opts_t opts = {.struct_size = sizeof(opts),
                                .timeout_s = 20.0};
    hccn_cluster_t *cl = NULL;
    assert_int_equal(hccn_cluster_create_json(json, "args", &opts, &cl),
                     HCCN_OK);
    return cl;
}

#define INV HCCN_ERR_INVALID

/* Buffers every rank needs (so that all ranks fail alike): SEND of all but
 * broadcast and scatter, RECV of all but reduce and gather. */
static const case_t buffer_cases[] = {
    {F_ALLREDUCE, BAD_NULL_SEND, INV, {"sendbuf", "NULL"}, 0},
    {F_ALLREDUCE, BAD_NULL_RECV, INV, {"recvbuf", "NULL"}, 0},
    {F_REDUCE_SCATTER, BAD_NULL_SEND, INV, {"sendbuf", "NULL"}, 0},
    {F_REDUCE_SCATTER, BAD_NULL_RECV, INV, {"recvbuf", "NULL"}, 0},
    {F_ALLGATHER, BAD_NULL_SEND, INV, {"sendbuf", "NULL"}, 0},
    {F_ALLGATHER, BAD_NULL_RECV, INV, {"recvbuf", "NULL"}, 0},
    {F_BROADCAST, BAD_NULL_RECV, INV, {"recvbuf", "NULL"}, 0},
    {F_REDUCE, BAD_NULL_SEND, INV, {"sendbuf", "NULL"}, 0},
    {F_ALLTOALL, BAD_NULL_SEND, INV, {"sendbuf", "NULL"}, 0},
    {F_ALLTOALL, BAD_NULL_RECV, INV, {"recvbuf", "NULL"}, 0},
    {F_SCATTER, BAD_NULL_RECV, INV, {"recvbuf", "NULL"}, 0},
    {F_GATHER, BAD_NULL_SEND, INV, {"sendbuf", "NULL"}, 0},
    {F_ALLREDUCE, BAD_HOST_SEND, INV, {"sendbuf", "not device memory"}, 0},
    {F_ALLTOALL, BAD_HOST_SEND, INV, {"sendbuf", "not device memory"}, 0},
    {F_GATHER, BAD_HOST_SEND, INV, {"sendbuf", "not device memory"}, 0},
    {F_ALLREDUCE, BAD_FOREIGN_RECV, INV, {"recvbuf", "arena of rank"}, 0},
    {F_ALLGATHER, BAD_FOREIGN_RECV, INV, {"recvbuf", "arena of rank"}, 0},
    {F_BROADCAST, BAD_FOREIGN_RECV, INV, {"recvbuf", "arena of rank"}, 0},
    /* The bytes the call needs: count x 4 (x 4 ranks for SEND of
     * reduce_scatter). */
    {F_ALLREDUCE, BAD_PAST_END, INV, {"sendbuf", "16777216"}, 0},
    {F_REDUCE_SCATTER, BAD_PAST_END, INV, {"sendbuf", "67108864"}, 0},
    {F_ALLGATHER, BAD_PAST_END, INV, {"sendbuf", "16777216"}, 0},
    {F_ALLREDUCE, BAD_OVERLAP, INV, {"overlap", "in-place"}, 0},
    {F_REDUCE_SCATTER, BAD_OVERLAP, INV, {"overlap", "in-place"}, 0},
    {F_ALLGATHER, BAD_OVERLAP, INV, {"overlap", "in-place"}, 0},
    {F_ALLTOALL, BAD_OVERLAP, INV, {"overlap", "in-place"}, 0},
    {F_ALLTOALL, BAD_SAME, INV, {"overlap", "in-place"}, 0},
};

static const case_t value_cases[] = {
    {F_ALLREDUCE, BAD_COUNT_MAX, INV, {"count", "overflows"}, 0},
    {F_ALLGATHER, BAD_COUNT_MAX, INV, {"count", "overflows"}, 0},
    {F_GATHER, BAD_COUNT_MAX, INV, {"count", "overflows"}, 0},
    {F_ALLREDUCE, BAD_DTYPE, INV, {"dtype"}, 0},
    {F_BROADCAST, BAD_DTYPE, INV, {"dtype"}, 0},
    {F_ALLTOALL, BAD_DTYPE, INV, {"dtype"}, 0},
    {F_ALLREDUCE, BAD_OP, INV, {"op", "42"}, 0},
    {F_REDUCE_SCATTER, BAD_OP, INV, {"op", "42"}, 0},
    {F_REDUCE, BAD_OP, INV, {"op", "42"}, 0},
    {F_BROADCAST, BAD_ROOT_HIGH, INV, {"root 4", "out of range"}, 0},
    {F_REDUCE, BAD_ROOT_HIGH, INV, {"root 4", "out of range"}, 0},
    {F_SCATTER, BAD_ROOT_NEG, INV, {"root -1", "out of range"}, 0},
    {F_GATHER, BAD_ROOT_NEG, INV, {"root -1", "out of range"}, 0},
    {F_ALLREDUCE, BAD_NULL_COMM, INV, {"comm", "NULL"}, 0},
    {F_GATHER, BAD_NULL_COMM, INV, {"comm", "NULL"}, 0},
    {F_ALLREDUCE, BAD_ALGO, INV, {"no_such_algo"}, 0},
    {F_ALLTOALL, BAD_ALGO, INV, {"no_such_algo"}, 0},
    /* A known algorithm that lacks the collective: unsupported. */
    {F_ALLTOALL, BAD_ALGO_COLL, HCCN_ERR_UNSUPPORTED, {"ring", "alltoall"},
     0},
    {F_SCATTER, BAD_ALGO_COLL, HCCN_ERR_UNSUPPORTED, {"ring", "scatter"}, 0},
};

static void run_cases(const case_t *cases, size_t n)
{
    hccn_cluster_t *cl = make_cluster();
    for (size_t i = 0; i < n; i++)
        check_case(cl, &cases[i]);
    hccn_cluster_destroy(cl);
}

static void test_bad_buffers(void **state)
{
    (void)state;
    run_cases(buffer_cases, sizeof(buffer_cases) / sizeof(buffer_cases[0]));
}

static void test_bad_values(void **state)
{
    (void)state;
    run_cases(value_cases, sizeof(value_cases) / sizeof(value_cases[0]));
}

/* ------------------------------------------------ the in-place forms */

typedef struct {
    hccn_status_t rc[NRANKS][5];
    char msg[NRANKS][512];
} inplace_t;

/* The exact in-place forms are accepted; the same buffers one block off
 * are not. */
static hccn_status_t inplace_rank(hccn_ctx_t *ctx, void *arg)
{
    inplace_t *s = arg;
    int r = hccn_rank(ctx), other = (r + 1) % NRANKS;
    hccn_comm_t *w = hccn_comm_world(ctx);
    float *buf;
    hccn_status_t rc = hccn_malloc(ctx, NRANKS * COUNT * sizeof(float),
                                   (void **)&buf);
    if (rc != HCCN_OK)
        return rc;
    memset(buf, 0, NRANKS * COUNT * sizeof(float));
    s->rc[r][0] = hccn_reduce_scatter(w, buf, buf + r * COUNT, COUNT,
                                      HCCN_FP32, HCCN_SUM);
    s->rc[r][1] = hccn_allgather(w, buf + r * COUNT, buf, COUNT, HCCN_FP32);
    s->rc[r][2] = hccn_reduce_scatter(w, buf, buf + other * COUNT, COUNT,
                                      HCCN_FP32, HCCN_SUM);
    snprintf(s->msg[r], sizeof(s->msg[r]), "%s", hccn_last_error());
    s->rc[r][3] = hccn_allgather(w, buf + other * COUNT, buf, COUNT,
                                 HCCN_FP32);
    s->rc[r][4] = hccn_reduce(w, buf, buf, COUNT, HCCN_FP32, HCCN_SUM, 1);
    hccn_free(ctx, buf);
    return HCCN_OK;
}

static void test_inplace_forms(void **state)
{
    (void)state;
    hccn_cluster_t *cl = make_cluster();
    inplace_t s;
    memset(&s, 0, sizeof(s));
    assert_int_equal(hccn_cluster_run(cl, inplace_rank, &s, NULL), HCCN_OK);
    for (int r = 0; r < NRANKS; r++) {
        assert_int_equal(s.rc[r][0], HCCN_OK);
        assert_int_equal(s.rc[r][1], HCCN_OK);
        assert_int_equal(s.rc[r][2], HCCN_ERR_INVALID);
        assert_non_null(strstr(s.msg[r], "hccn_reduce_scatter"));
        assert_non_null(strstr(s.msg[r], "overlap"));
        assert_int_equal(s.rc[r][3], HCCN_ERR_INVALID);
        assert_int_equal(s.rc[r][4], HCCN_OK);
    }
    hccn_cluster_destroy(cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_buffers),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_inplace_forms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
