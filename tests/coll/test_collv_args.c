/*
 * Argument errors and count mismatches of alltoallv, allgatherv and
 * reduce_scatterv on 4 ranks. Each case is one cluster run:
 *
 * - argument errors: every rank makes the same bad call and must get
 *   HCCN_ERR_INVALID (HCCN_ERR_UNSUPPORTED for a forced algorithm that
 *   lacks the collective) with a message naming the function, the rank
 *   and what is wrong; a good call on the same communicator then works (a
 *   refused call breaks nothing);
 * - mismatches: one rank's counts disagree; every rank must get
 *   HCCN_ERR_MISMATCH with a message naming the ranks and the counts, and
 *   no receive buffer may change.
 *
 * Rank threads record status and message; the main thread asserts.
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
#include "test_util.h"

#define P 4
#define ELEMS 64           /* int32 elements of each device buffer */
#define PATTERN 0x5A

typedef enum {
    A2AV_NULL_SENDCOUNTS,
    A2AV_NULL_RDISPLS,
    AGV_NULL_DISPLS,
    RSV_NULL_RECVCOUNTS,
    A2AV_OVERFLOW,
    AGV_PAST_END,
    RSV_HOST_RECV,
    AGV_RECV_OVERLAP,
    A2AV_SEND_RECV_OVERLAP,
    AGV_NOT_IN_PLACE,
    RSV_NOT_IN_PLACE,
    A2AV_BAD_DTYPE,
    RSV_BAD_OP,
    A2AV_NULL_FUTURE,
    A2AV_RING_FORCED,
    MM_AGV_RECVCOUNTS,
    MM_AGV_SENDCOUNT,
    MM_RSV_RECVCOUNTS,
    MM_A2AV_PAIR,
    NCASES
} case_id_t;

typedef struct {
    case_id_t id;
    hccn_status_t want;
    const char *facts[3];   /* substrings of every rank's message */
} case_t;

static const case_t cases[] = {
    {A2AV_NULL_SENDCOUNTS, HCCN_ERR_INVALID,
     {"hccn_alltoallv", "sendcounts is NULL", NULL}},
    {A2AV_NULL_RDISPLS, HCCN_ERR_INVALID,
     {"hccn_alltoallv", "rdispls is NULL", NULL}},
    {AGV_NULL_DISPLS, HCCN_ERR_INVALID,
     {"hccn_allgatherv", "displs is NULL", NULL}},
    {RSV_NULL_RECVCOUNTS, HCCN_ERR_INVALID,
     {"hccn_reduce_scatterv", "recvcounts is NULL", NULL}},
    {A2AV_OVERFLOW, HCCN_ERR_INVALID,
     {"hccn_alltoallv", "sendcounts[1]", "overflows"}},
    {AGV_PAST_END, HCCN_ERR_INVALID,
     {"hccn_allgatherv", "recvbuf block 2", "needs 16 bytes"}},
    {RSV_HOST_RECV, HCCN_ERR_INVALID,
     {"hccn_reduce_scatterv", "recvbuf", "not device memory"}},
    {AGV_RECV_OVERLAP, HCCN_ERR_INVALID,
     {"hccn_allgatherv", "recvbuf blocks 0", "overlap"}},
    {A2AV_SEND_RECV_OVERLAP, HCCN_ERR_INVALID,
     {"hccn_alltoallv", "overlaps receive block", "in-place"}},
    {AGV_NOT_IN_PLACE, HCCN_ERR_INVALID,
     {"hccn_allgatherv", "overlaps receive block", "in-place"}},
    {RSV_NOT_IN_PLACE, HCCN_ERR_INVALID,
     {"hccn_reduce_scatterv", "overlaps receive block", "in-place"}},
    {A2AV_BAD_DTYPE, HCCN_ERR_INVALID, {"hccn_alltoallv", "invalid dtype", NULL}},
    {RSV_BAD_OP, HCCN_ERR_INVALID,
     {"hccn_reduce_scatterv", "invalid reduction op", NULL}},
    {A2AV_NULL_FUTURE, HCCN_ERR_INVALID,
     {"hccn_ialltoallv", "future is NULL", NULL}},
    {A2AV_RING_FORCED, HCCN_ERR_UNSUPPORTED,
     {"hccn_alltoallv", "'ring' does not implement alltoallv", NULL}},
    {MM_AGV_RECVCOUNTS, HCCN_ERR_MISMATCH,
     {"allgatherv", "rank 0 passed recvcounts[3] = 4",
      "rank 2 passed recvcounts[3] = 6"}},
    {MM_AGV_SENDCOUNT, HCCN_ERR_MISMATCH,
     {"allgatherv", "rank 1 passed sendcount = 5",
      "every rank passed recvcounts[1] = 4"}},
    {MM_RSV_RECVCOUNTS, HCCN_ERR_MISMATCH,
     {"reduce_scatterv", "rank 0 passed recvcounts[0] = 4",
      "rank 3 passed recvcounts[0] = 2"}},
    {MM_A2AV_PAIR, HCCN_ERR_MISMATCH,
     {"alltoallv", "rank 1 sends 9 elements to rank 2",
      "rank 2 expects 4 from rank 1"}},
};

typedef struct {
    const case_t *c;
    hccn_status_t rc[P], after[P];
    char msg[P][1024];
    char after_msg[P][512];
    int recv_changed[P];
} run_t;

/* The call of case id on rank r, on buffers send and recv (ELEMS int32
 * each, recv patterned). */
static hccn_status_t bad_call(case_id_t id, hccn_comm_t *w, int r,
                              int32_t *send, int32_t *recv)
{
    size_t four[P] = {4, 4, 4, 4}, three[P] = {3, 3, 3, 3};
    size_t d[P] = {0, 4, 8, 12}, cnt[P] = {4, 4, 4, 4};
    hccn_future_t *f = NULL;
    static int32_t host[ELEMS];
    switch (id) {
    case A2AV_NULL_SENDCOUNTS:
        return hccn_alltoallv(w, send, NULL, d, recv, four, d, HCCN_INT32);
    case A2AV_NULL_RDISPLS:
        return hccn_alltoallv(w, send, four, d, recv, four, NULL, HCCN_INT32);
    case AGV_NULL_DISPLS:
        return hccn_allgatherv(w, send, 4, recv, four, NULL, HCCN_INT32);
    case RSV_NULL_RECVCOUNTS:
        return hccn_reduce_scatterv(w, send, recv, NULL, HCCN_INT32,
                                    HCCN_SUM);
    case A2AV_OVERFLOW:
        cnt[1] = SIZE_MAX / 2;
        return hccn_alltoallv(w, send, cnt, d, recv, four, d, HCCN_INT32);
    case AGV_PAST_END:
        d[2] = ELEMS - 2;   /* 4 elements from 2 before the end */
        return hccn_allgatherv(w, send, 4, recv, four, d, HCCN_INT32);
    case RSV_HOST_RECV:
        return hccn_reduce_scatterv(w, send, host, four, HCCN_INT32,
                                    HCCN_SUM);
    case AGV_RECV_OVERLAP:
        d[1] = 2;
        return hccn_allgatherv(w, send, 4, recv, four, d, HCCN_INT32);
    case A2AV_SEND_RECV_OVERLAP:
        return hccn_alltoallv(w, recv, four, d, recv, four, d, HCCN_INT32);
    case AGV_NOT_IN_PLACE:
        return hccn_allgatherv(w, recv + d[r] + 1, 4, recv, four, d,
                               HCCN_INT32);
    case RSV_NOT_IN_PLACE:
        return hccn_reduce_scatterv(w, send, send + 1, three, HCCN_INT32,
                                    HCCN_SUM);
    case A2AV_BAD_DTYPE:
        return hccn_alltoallv(w, send, four, d, recv, four, d,
                              (hccn_dtype_t)99);
    case RSV_BAD_OP:
        return hccn_reduce_scatterv(w, send, recv, four, HCCN_INT32,
                                    (hccn_redop_t)42);
    case A2AV_NULL_FUTURE:
        return hccn_ialltoallv(w, send, four, d, recv, four, d, HCCN_INT32,
                               NULL);
    case A2AV_RING_FORCED: {
        hccn_status_t rc = hccn_comm_set_algo(w, "ring");
        if (rc == HCCN_OK)   /* rank_main sets it back */
            rc = hccn_alltoallv(w, send, four, d, recv, four, d, HCCN_INT32);
        return rc;
    }
    case MM_AGV_RECVCOUNTS:
        if (r == 2)
            cnt[3] = 6;
        return hccn_allgatherv(w, send, 4, recv, cnt, d, HCCN_INT32);
    case MM_AGV_SENDCOUNT:
        return hccn_allgatherv(w, send, r == 1 ? 5 : 4, recv, four, d,
                               HCCN_INT32);
    case MM_RSV_RECVCOUNTS:
        if (r == 3)
            cnt[0] = 2;
        return hccn_reduce_scatterv(w, send, recv, cnt, HCCN_INT32, HCCN_SUM);
    default: {
        /* MM_A2AV_PAIR: rank 1 sends 9 elements to rank 2, which expects
         * the agreed 4. */
        size_t sd[P] = {0, 4, 8, 17};
        if (r == 1)
            cnt[2] = 9;
        hccn_status_t rc = hccn_ialltoallv(w, send, cnt, r == 1 ? sd : d,
                                           recv, four, d, HCCN_INT32, &f);
        if (rc != HCCN_OK)
            return rc;
        rc = hccn_wait(f);
        hccn_future_free(f);
        return rc;
    }
    }
}

static hccn_status_t rank_main(hccn_ctx_t *ctx, void *arg)
{
    run_t *run = arg;
    int r = hccn_rank(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx);
    int32_t *send, *recv;
    if (hccn_malloc(ctx, ELEMS * 4, (void **)&send) != HCCN_OK ||
        hccn_malloc(ctx, ELEMS * 4, (void **)&recv) != HCCN_OK)
        return HCCN_ERR_NOMEM;
    for (int i = 0; i < ELEMS; i++)
        send[i] = r * 1000 + i;
    memset(recv, PATTERN, ELEMS * 4);
    run->rc[r] = bad_call(run->c->id, w, r, send, recv);
    snprintf(run->msg[r], sizeof(run->msg[r]), "%s", hccn_last_error());
    if (run->c->id == A2AV_RING_FORCED)
        hccn_comm_set_algo(w, NULL);
    for (int i = 0; i < ELEMS * 4; i++)
        if (((unsigned char *)recv)[i] != PATTERN)
            run->recv_changed[r] = 1;
    /* A refused call leaves the communicator usable. */
    size_t four[P] = {4, 4, 4, 4}, d[P] = {0, 4, 8, 12};
    run->after[r] = HCCN_OK;
    if (run->c->want != HCCN_ERR_MISMATCH) {
        run->after[r] = hccn_alltoallv(w, send, four, d, recv, four, d,
                                       HCCN_INT32);
        for (int j = 0; run->after[r] == HCCN_OK && j < P; j++)
            for (int e = 0; e < 4; e++)
                if (recv[j * 4 + e] != j * 1000 + r * 4 + e)
                    run->after[r] = HCCN_ERR_INTERNAL;
        snprintf(run->after_msg[r], sizeof(run->after_msg[r]), "%s",
                 run->after[r] == HCCN_ERR_INTERNAL ? "wrong data"
                                                    : hccn_last_error());
    }
    hccn_free(ctx, send);
    hccn_free(ctx, recv);
    return HCCN_OK;
}

static void test_cases(void **state)
{
    (void)state;
    hccn_cluster_t *cl = NULL;
    const char *json =
        "{\"version\":1,\"node_types\":[{\"count\":1,\"npu\":{\"count\":4,"
        "\"arena_MiB\":1,\"reduce_bw_GBps\":100},\"fabric\":{\"type\":"
        "\"switch\",\"bw_GBps\":50,\"lat_us\":1}}]}";
    assert_int_equal(hccn_cluster_create_json(json, "collv_args", NULL, &cl),
                     HCCN_OK);
    assert_int_equal(sizeof(cases) / sizeof(cases[0]), NCASES);
    run_t *run = calloc(1, sizeof(*run));
    assert_non_null(run);
    int bad = 0;
    for (size_t k = 0; k < NCASES; k++) {
        memset(run, 0, sizeof(*run));
        run->c = &cases[k];
        assert_int_equal(hccn_cluster_run(cl, rank_main, run, NULL), HCCN_OK);
        for (int r = 0; r < P; r++) {
            char rank_s[16];
            snprintf(rank_s, sizeof(rank_s), "rank %d", r);
            int ok = run->rc[r] == cases[k].want &&
                     strstr(run->msg[r], rank_s) != NULL &&
                     !run->recv_changed[r] && run->after[r] == HCCN_OK;
            for (int f = 0; f < 3 && cases[k].facts[f]; f++)
                ok = ok && strstr(run->msg[r], cases[k].facts[f]) != NULL;
            if (!ok) {
                print_error("case %zu rank %d: %s (want %s), recv %s, "
                            "good call after: %s %s\n  message: %s\n",
                            k, r, hccn_status_name(run->rc[r]),
                            hccn_status_name(cases[k].want),
                            run->recv_changed[r] ? "changed" : "intact",
                            hccn_status_name(run->after[r]),
                            run->after_msg[r], run->msg[r]);
                bad = 1;
            }
        }
    }
    free(run);
    hccn_cluster_destroy(cl);
    if (bad)
        fail_msg("some cases failed");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
