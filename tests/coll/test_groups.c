/*
 * Groups (hccn_group_start / hccn_group_end, NCCL's ncclGroupStart/End):
 * blocking sends and receives inside a group only post, so patterns that
 * would deadlock one call at a time complete; the end waits for all of
 * them. Checked on configs/default.json (16 ranks, 2 nodes):
 *
 * - a ring exchange (send to r+1, receive from r-1) completes with the
 *   right bytes, in the simulated time the model gives for two independent
 *   transfers: max(b/B_out, lat_in + b/B_in) (the send is done when its
 *   bytes have drained, the receive when they have arrived; the routes
 *   r -> r+1 share no link);
 * - an alltoallv from grouped sends and receives (counts per pair from a
 *   formula, some zero, a rank's own block included) equals a serial
 *   reference, and an alltoall from grouped sends and receives equals
 *   hccn_alltoall bit for bit;
 * - groups nest (only the outermost end waits) and may hold collectives;
 * - errors: hccn_group_end with no group open, a bad call inside a group,
 *   a size mismatch reported by the end.
 *
 * Groups post in both orders (sends first, receives first): the end must
 * not depend on it.
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

#include "device_sim/topo.h"
#include "hccn/hccn.h"
#include "test_util.h"

#define NR 16

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

/* Route latency and bottleneck bandwidth from the topology: the reference
 * for a transfer alone on its route. */
static void route_ref(const hccn_sim_topo_t *t, int a, int b, double *lat,
                      double *bw)
{
    int links[HCCN_SIM_ROUTE_MAX];
    int n = hccn_sim_topo_route(t, a, b, links, lat);
    *bw = INFINITY;
    for (int i = 0; i < n; i++)
        if (t->links[links[i]].bw < *bw)
            *bw = t->links[links[i]].bw;
}

static uint32_t pattern(int src, int dst, size_t k)
{
    return (uint32_t)src * 100000007u + (uint32_t)dst * 1000003u +
           (uint32_t)k;
}

/* ============================================================ ring */

#define RCNT 100000            /* uint32: 400 kB per message */

typedef struct {
    int send_first;            /* post the send before the receive */
    int ok[NR];
    double dur[NR];
} ring_t;

static hccn_status_t ring_rank(hccn_ctx_t *ctx, void *arg)
{
    ring_t *g = arg;
    int r = hccn_rank(ctx), n = hccn_nranks(ctx);
    int to = (r + 1) % n, from = (r + n - 1) % n;
    hccn_comm_t *w = hccn_comm_world(ctx);
    uint32_t *sb, *rb;
    hccn_status_t rc;
    if ((rc = hccn_malloc(ctx, RCNT * 4, (void **)&sb)) != HCCN_OK ||
        (rc = hccn_malloc(ctx, RCNT * 4, (void **)&rb)) != HCCN_OK)
        return rc;
    for (size_t k = 0; k < RCNT; k++) {
        sb[k] = pattern(r, to, k);
        rb[k] = 0;
    }
    double t0 = hccn_time(ctx);
    /* Without the group, every rank would block in its first call while
     * its peer blocks in its own first call. */
    if ((rc = hccn_group_start(ctx)) != HCCN_OK)
        return rc;
    if (g->send_first)
        rc = hccn_send(w, sb, RCNT, HCCN_UINT32, to);
    if (rc == HCCN_OK)
        rc = hccn_recv(w, rb, RCNT, HCCN_UINT32, from);
    if (rc == HCCN_OK && !g->send_first)
        rc = hccn_send(w, sb, RCNT, HCCN_UINT32, to);
    if (rc != HCCN_OK || (rc = hccn_group_end(ctx)) != HCCN_OK)
        return rc;
    g->dur[r] = hccn_time(ctx) - t0;
    g->ok[r] = 1;
    for (size_t k = 0; k < RCNT; k++)
        g->ok[r] &= rb[k] == pattern(from, r, k);
    hccn_free(ctx, sb);
    hccn_free(ctx, rb);
    return HCCN_OK;
}

static void test_ring_exchange(void **state)
{
    (void)state;
    hccn_cluster_t *cl = make_cluster();
    hccn_sim_topo_t *topo;
    char err[512];
    assert_int_equal(hccn_sim_topo_load_file(test_path("configs/default.json"),
                                             &topo, err, sizeof(err)),
                     HCCN_OK);
    ring_t g, h;
    memset(&g, 0, sizeof(g));
    memset(&h, 0, sizeof(h));
    g.send_first = 1;
    run_ok(cl, ring_rank, &g);
    run_ok(cl, ring_rank, &h);
    const double b = RCNT * 4.0;
    for (int r = 0; r < NR; r++) {
        assert_true(h.ok[r]);
        assert_memory_equal(&h.dur[r], &g.dur[r], sizeof(double));
        double lat_out, bw_out, lat_in, bw_in;
        route_ref(topo, r, (r + 1) % NR, &lat_out, &bw_out);
        route_ref(topo, (r + NR - 1) % NR, r, &lat_in, &bw_in);
        double want = fmax(b / bw_out, lat_in + b / bw_in);
        assert_true(g.ok[r]);
        if (test_rel_diff(g.dur[r], want) > 1e-12)
            fail_msg("rank %d: group took %.17g s, expected %.17g", r,
                     g.dur[r], want);
    }
    /* Inside a node the message crosses one 56 GB/s, 1.5 us HCCS link;
     * 7 -> 8 and 15 -> 0 cross the NICs (25 GB/s, 2 us + 1 us switch). */
    assert_true(test_rel_diff(g.dur[1], 1.5e-6 + b / 56e9) < 1e-12);
    assert_true(test_rel_diff(g.dur[8], 3e-6 + b / 25e9) < 1e-12);
    hccn_sim_topo_free(topo);
    hccn_cluster_destroy(cl);
}

/* ======================================================= alltoallv */

/* Elements rank i sends to rank j: 0 .. 6 times 37, zero for some pairs. */
static size_t vcount(int i, int j)
{
    return (size_t)((i * 5 + j * 3 + (i * j) % 4) % 7) * 37;
}

typedef struct {
    int recv_first;            /* all receives, then all sends */
    uint32_t *out[NR];         /* host copies of each rank's RECV */
    size_t outn[NR];
} a2av_t;

static hccn_status_t a2av_rank(hccn_ctx_t *ctx, void *arg)
{
    a2av_t *v = arg;
    int r = hccn_rank(ctx), n = hccn_nranks(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx);
    size_t sn = 0, rn = 0;
    for (int j = 0; j < n; j++) {
        sn += vcount(r, j);
        rn += vcount(j, r);
    }
    uint32_t *sb, *rb;
    hccn_status_t rc;
    if ((rc = hccn_malloc(ctx, sn * 4 + 4, (void **)&sb)) != HCCN_OK ||
        (rc = hccn_malloc(ctx, rn * 4 + 4, (void **)&rb)) != HCCN_OK)
        return rc;
    for (size_t j = 0, off = 0; j < (size_t)n; off += vcount(r, (int)j++))
        for (size_t k = 0; k < vcount(r, (int)j); k++)
            sb[off + k] = pattern(r, (int)j, k);
    memset(rb, 0xee, rn * 4 + 4);
    if ((rc = hccn_group_start(ctx)) != HCCN_OK)
        return rc;
    size_t soff = 0, roff = 0;
    for (int j = 0; j < n && v->recv_first; roff += vcount(j++, r))
        if ((rc = hccn_recv(w, rb + roff, vcount(j, r), HCCN_UINT32, j)))
            return rc;
    for (int j = 0; j < n; soff += vcount(r, j++)) {
        if ((rc = hccn_send(w, sb + soff, vcount(r, j), HCCN_UINT32, j)))
            return rc;
        if (!v->recv_first &&
            (rc = hccn_recv(w, rb + roff, vcount(j, r), HCCN_UINT32, j)))
            return rc;
        roff += v->recv_first ? 0 : vcount(j, r);
    }
    if ((rc = hccn_group_end(ctx)) != HCCN_OK)
        return rc;
    v->outn[r] = rn + 1;       /* one guard element past the end */
    memcpy(v->out[r], rb, (rn + 1) * 4);
    hccn_free(ctx, sb);
    hccn_free(ctx, rb);
    return HCCN_OK;
}

/* Checks every rank's RECV against the serial reference: block i of rank
 * j's RECV is what rank i sent to j, blocks in rank order. */
static void check_alltoallv(const a2av_t *v)
{
    int zero_pairs = 0;
    for (int j = 0; j < NR; j++) {
        size_t off = 0;
        for (int i = 0; i < NR; i++) {
            zero_pairs += vcount(i, j) == 0;
            for (size_t k = 0; k < vcount(i, j); k++)
                if (v->out[j][off + k] != pattern(i, j, k))
                    fail_msg("rank %d, block from %d, element %zu: %u, "
                             "expected %u", j, i, k, v->out[j][off + k],
                             pattern(i, j, k));
            off += vcount(i, j);
        }
        assert_int_equal(v->outn[j], off + 1);
        assert_int_equal(v->out[j][off], 0xeeeeeeeeu);
    }
    assert_true(zero_pairs > 0);
}

static void run_alltoallv(hccn_cluster_t *cl, int recv_first)
{
    a2av_t v;
    memset(&v, 0, sizeof(v));
    v.recv_first = recv_first;
    for (int r = 0; r < NR; r++)
        v.out[r] = calloc(NR * 7 * 37 + 1, 4);
    run_ok(cl, a2av_rank, &v);
    check_alltoallv(&v);
    for (int r = 0; r < NR; r++)
        free(v.out[r]);
}

static void test_alltoallv(void **state)
{
    (void)state;
    hccn_cluster_t *cl = make_cluster();
    for (int k = 0; k < 3; k++) {
        run_alltoallv(cl, 0);
        run_alltoallv(cl, 1);
    }
    hccn_cluster_destroy(cl);
}

/* ================================================ alltoall, two ways */

#define ACNT 1001

typedef struct {
    int grouped;
    float *out[NR];
} a2a_t;

static float a2a_val(int src, size_t k)
{
    unsigned long long s = ((unsigned long long)src << 32) ^ k;
    return (float)((double)(test_rand_next(&s) >> 11) * 0x1p-53 - 0.5);
}

static hccn_status_t a2a_rank(hccn_ctx_t *ctx, void *arg)
{
    a2a_t *a = arg;
    int r = hccn_rank(ctx), n = hccn_nranks(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx);
    size_t all = (size_t)n * ACNT;
    float *sb, *rb;
    hccn_status_t rc;
    if ((rc = hccn_malloc(ctx, all * 4, (void **)&sb)) != HCCN_OK ||
        (rc = hccn_malloc(ctx, all * 4, (void **)&rb)) != HCCN_OK)
        return rc;
    for (size_t k = 0; k < all; k++) {
        sb[k] = a2a_val(r, k);
        rb[k] = NAN;
    }
    if (!a->grouped) {
        rc = hccn_alltoall(w, sb, rb, ACNT, HCCN_FP32);
    } else {
        if ((rc = hccn_group_start(ctx)) != HCCN_OK)
            return rc;
        for (int j = 0; j < n && rc == HCCN_OK; j++) {
            rc = hccn_send(w, sb + (size_t)j * ACNT, ACNT, HCCN_FP32, j);
            if (rc == HCCN_OK)
                rc = hccn_recv(w, rb + (size_t)j * ACNT, ACNT, HCCN_FP32, j);
        }
        hccn_status_t end = hccn_group_end(ctx);
        rc = rc != HCCN_OK ? rc : end;
    }
    if (rc != HCCN_OK)
        return rc;
    memcpy(a->out[r], rb, all * 4);
    hccn_free(ctx, sb);
    hccn_free(ctx, rb);
    return HCCN_OK;
}

static void test_alltoall_grouped(void **state)
{
    (void)state;
    hccn_cluster_t *cl = make_cluster();
    a2a_t lib, grp;
    memset(&lib, 0, sizeof(lib));
    memset(&grp, 0, sizeof(grp));
    grp.grouped = 1;
    for (int r = 0; r < NR; r++) {
        lib.out[r] = calloc((size_t)NR * ACNT, 4);
        grp.out[r] = calloc((size_t)NR * ACNT, 4);
    }
    run_ok(cl, a2a_rank, &lib);
    run_ok(cl, a2a_rank, &grp);
    for (int r = 0; r < NR; r++) {
        assert_memory_equal(grp.out[r], lib.out[r], (size_t)NR * ACNT * 4);
        for (int i = 0; i < NR; i++)
            assert_true(lib.out[r][(size_t)i * ACNT + 7] ==
                        a2a_val(i, (size_t)r * ACNT + 7));
        free(lib.out[r]);
        free(grp.out[r]);
    }
    hccn_cluster_destroy(cl);
}

/* ======================================================== nesting */

#define NCNT 4096

typedef struct {
    hccn_status_t inner_end[NR], outer_end[NR];
    int ok[NR];
    double dur_after[NR];      /* a blocking allreduce after the groups */
} nest_t;

/* A ring exchange split over two nested groups (the receive in the inner
 * one, the send after it): the inner end must not wait, or every rank
 * would block in it before any send is posted. An allreduce rides in
 * the outer group too. After the outermost end, calls block again. */
static hccn_status_t nest_rank(hccn_ctx_t *ctx, void *arg)
{
    nest_t *g = arg;
    int r = hccn_rank(ctx), n = hccn_nranks(ctx);
    int to = (r + 1) % n, from = (r + n - 1) % n;
    hccn_comm_t *w = hccn_comm_world(ctx);
    uint32_t *sb, *rb;
    float *x;
    hccn_status_t rc;
    if ((rc = hccn_malloc(ctx, NCNT * 4, (void **)&sb)) != HCCN_OK ||
        (rc = hccn_malloc(ctx, NCNT * 4, (void **)&rb)) != HCCN_OK ||
        (rc = hccn_malloc(ctx, NCNT * 4, (void **)&x)) != HCCN_OK)
        return rc;
    for (size_t k = 0; k < NCNT; k++) {
        sb[k] = pattern(r, to, k);
        rb[k] = 0;
        x[k] = (float)(r + 1);
    }
    if ((rc = hccn_group_start(ctx)) != HCCN_OK ||
        (rc = hccn_group_start(ctx)) != HCCN_OK ||
        (rc = hccn_recv(w, rb, NCNT, HCCN_UINT32, from)) != HCCN_OK)
        return rc;
    g->inner_end[r] = hccn_group_end(ctx);
    if ((rc = hccn_allreduce(w, x, x, NCNT, HCCN_FP32, HCCN_SUM)) ||
        (rc = hccn_send(w, sb, NCNT, HCCN_UINT32, to)))
        return rc;
    g->outer_end[r] = hccn_group_end(ctx);
    g->ok[r] = 1;
    for (size_t k = 0; k < NCNT; k++)
        g->ok[r] &= rb[k] == pattern(from, r, k) &&
                    x[k] == (float)(n * (n + 1) / 2);
    double t0 = hccn_time(ctx);
    if ((rc = hccn_allreduce(w, x, x, NCNT, HCCN_FP32, HCCN_SUM)) != HCCN_OK)
        return rc;
    g->dur_after[r] = hccn_time(ctx) - t0;
    g->ok[r] &= x[0] == (float)(n * n * (n + 1) / 2);
    hccn_free(ctx, sb);
    hccn_free(ctx, rb);
    hccn_free(ctx, x);
    return HCCN_OK;
}

static void test_nested(void **state)
{
    (void)state;
    hccn_cluster_t *cl = make_cluster();
    nest_t g;
    memset(&g, 0, sizeof(g));
    run_ok(cl, nest_rank, &g);
    for (int r = 0; r < NR; r++) {
        assert_int_equal(g.inner_end[r], HCCN_OK);
        assert_int_equal(g.outer_end[r], HCCN_OK);
        assert_true(g.ok[r]);
        assert_true(g.dur_after[r] > 0.0);
    }
    hccn_cluster_destroy(cl);
}

/* ========================================================== errors */

enum { E_END_NO_START, E_END_EXTRA, E_START_NULL, E_END_NULL, E_BAD_PEER,
       E_MISMATCH, NERR };

typedef struct {
    hccn_status_t rc[NR][NERR];
    char msg[NR][NERR][200];
    int ok[NR];
} gerr_t;

static void note(gerr_t *e, int r, int k, hccn_status_t rc)
{
    e->rc[r][k] = rc;
    snprintf(e->msg[r][k], sizeof(e->msg[r][k]), "%s", hccn_last_error());
}

static hccn_status_t gerr_rank(hccn_ctx_t *ctx, void *arg)
{
    gerr_t *e = arg;
    int r = hccn_rank(ctx), n = hccn_nranks(ctx);
    int to = (r + 1) % n, from = (r + n - 1) % n;
    hccn_comm_t *w = hccn_comm_world(ctx);
    uint32_t *sb, *rb;
    hccn_status_t rc;
    if ((rc = hccn_malloc(ctx, 64 * 4, (void **)&sb)) != HCCN_OK ||
        (rc = hccn_malloc(ctx, 64 * 4, (void **)&rb)) != HCCN_OK)
        return rc;
    for (size_t k = 0; k < 64; k++)
        sb[k] = pattern(r, to, k);

    note(e, r, E_END_NO_START, hccn_group_end(ctx));
    e->ok[r] = hccn_group_start(ctx) == HCCN_OK &&
               hccn_group_end(ctx) == HCCN_OK;
    note(e, r, E_END_EXTRA, hccn_group_end(ctx));
    note(e, r, E_START_NULL, hccn_group_start(NULL));
    note(e, r, E_END_NULL, hccn_group_end(NULL));

    /* A bad call inside a group fails at once; the rest of the group
     * still completes. */
    e->ok[r] &= hccn_group_start(ctx) == HCCN_OK;
    note(e, r, E_BAD_PEER, hccn_send(w, sb, 64, HCCN_UINT32, n));
    e->ok[r] &= hccn_recv(w, rb, 64, HCCN_UINT32, from) == HCCN_OK &&
                hccn_send(w, sb, 64, HCCN_UINT32, to) == HCCN_OK &&
                hccn_group_end(ctx) == HCCN_OK;
    for (size_t k = 0; k < 64; k++)
        e->ok[r] &= rb[k] == pattern(from, r, k);

    /* Sizes that disagree: the end reports it, on both sides. */
    e->ok[r] &= hccn_group_start(ctx) == HCCN_OK;
    e->ok[r] &= hccn_recv(w, rb, 64, HCCN_UINT32, from) == HCCN_OK &&
                hccn_send(w, sb, 32, HCCN_UINT32, to) == HCCN_OK;
    note(e, r, E_MISMATCH, hccn_group_end(ctx));
    hccn_free(ctx, sb);
    hccn_free(ctx, rb);
    return HCCN_OK;
}

static void expect_err(const gerr_t *e, int r, int k, hccn_status_t code,
                       const char *w1, const char *w2)
{
    const char *m = e->msg[r][k];
    if (e->rc[r][k] != code || strstr(m, w1) == NULL ||
        (w2 != NULL && strstr(m, w2) == NULL))
        fail_msg("rank %d case %d: got %s \"%s\", expected %s with \"%s\"",
                 r, k, hccn_status_name(e->rc[r][k]), m,
                 hccn_status_name(code), w1);
}

static void test_errors(void **state)
{
    (void)state;
    hccn_cluster_t *cl = make_cluster();
    gerr_t e;
    memset(&e, 0, sizeof(e));
    run_ok(cl, gerr_rank, &e);
    char rank_word[32];
    for (int r = 0; r < NR; r++) {
        snprintf(rank_word, sizeof(rank_word), "rank %d", r);
        assert_true(e.ok[r]);
        expect_err(&e, r, E_END_NO_START, HCCN_ERR_INVALID,
                   "no hccn_group_start", rank_word);
        expect_err(&e, r, E_END_EXTRA, HCCN_ERR_INVALID,
                   "no hccn_group_start", rank_word);
        expect_err(&e, r, E_START_NULL, HCCN_ERR_INVALID, "hccn_group_start",
                   "NULL");
        expect_err(&e, r, E_END_NULL, HCCN_ERR_INVALID, "hccn_group_end",
                   "NULL");
        expect_err(&e, r, E_BAD_PEER, HCCN_ERR_INVALID, "peer 16",
                   "out of range");
        /* Rank r's send carries 128 bytes; the receive from r-1 expects
         * 256: every rank's first failure is its receive or its send. */
        expect_err(&e, r, E_MISMATCH, HCCN_ERR_MISMATCH, "hccn_group_end",
                   "bytes");
    }
    hccn_cluster_destroy(cl);
}

int main(void)
{
    setenv("HCCN_TIMEOUT", "30", 0);   /* a deadlock fails, not hangs */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_exchange),
        cmocka_unit_test(test_alltoallv),
        cmocka_unit_test(test_alltoall_grouped),
        cmocka_unit_test(test_nested),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
