/* Point-to-point on the simulated cluster: bytes arrive exactly, simulated
 * time equals latency + bytes / bandwidth on an idle route, shared links
 * divide their bandwidth max-min fairly, and times are deterministic. */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "device_sim/topo.h"
#include "hccn/hccn.h"
#include "test_util.h"

#define MAXR 64

/* Route latency and bottleneck bandwidth from the topology, the reference
 * for an idle transfer. */
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

/* ---------------------------------------------------- every pair, idle */

typedef struct {
    int src, dst;
    size_t bytes;
    int ok;                  /* payload verified */
    double send_dur, recv_dur;
    hccn_status_t rc[MAXR];
} pair_t;

static hccn_status_t pair_rank(hccn_ctx_t *ctx, void *arg)
{
    pair_t *p = arg;
    int r = hccn_rank(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx);
    if (r != p->src && r != p->dst)
        return HCCN_OK;
    uint8_t *buf;
    hccn_status_t rc = hccn_malloc(ctx, p->bytes, (void **)&buf);
    if (rc != HCCN_OK)
        return rc;
    if (r == p->src) {
        for (size_t i = 0; i < p->bytes; i++)
            buf[i] = (uint8_t)(i * 7 + (size_t)p->src * 13);
        rc = hccn_send(w, buf, p->bytes, HCCN_UINT8, p->dst);
        p->send_dur = hccn_last_duration(ctx);
    } else {
        memset(buf, 0, p->bytes);
        rc = hccn_recv(w, buf, p->bytes, HCCN_UINT8, p->src);
        p->recv_dur = hccn_last_duration(ctx);
        p->ok = 1;
        for (size_t i = 0; i < p->bytes; i++)
            if (buf[i] != (uint8_t)(i * 7 + (size_t)p->src * 13))
                p->ok = 0;
    }
    hccn_free(ctx, buf);
    return rc;
}

/* Under host-load stress (jitter_us), which must change no time: the
 * receiver may return as soon as it has the bytes, while the sender
 * sleeps between finding its send unconsumed and judging the receiver. */
static void test_every_pair_default(void **state)
{
    (void)state;
    const char *path = test_path("configs/default.json");
    hccn_cluster_t *cl;
    hccn_sim_topo_t *topo;
    char err[512];
    hccn_cluster_opts_t o = {.struct_size = sizeof(o), .jitter_us = 300};
    assert_int_equal(hccn_cluster_create(path, &o, &cl), HCCN_OK);
    assert_int_equal(hccn_sim_topo_load_file(path, &topo, err, sizeof(err)),
                     HCCN_OK);
    int n = hccn_cluster_size(cl);
    assert_int_equal(n, 16);
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            if (a == b)
                continue;
            pair_t p = {.src = a, .dst = b, .bytes = 1 << 20};
            if (hccn_cluster_run(cl, pair_rank, &p, NULL) != HCCN_OK)
                fail_msg("%d->%d: %s", a, b, hccn_last_error());
            assert_true(p.ok);
            double lat, bw;
            route_ref(topo, a, b, &lat, &bw);
            double expect = lat + (double)p.bytes / bw;
            if (test_rel_diff(p.recv_dur, expect) > 1e-9)
                fail_msg("%d->%d: recv took %.12g s, expected %.12g", a, b,
                         p.recv_dur, expect);
            assert_true(test_rel_diff(p.send_dur, (double)p.bytes / bw) < 1e-9);
        }
    hccn_sim_topo_free(topo);
    hccn_cluster_destroy(cl);
}

/* ------------------------------------------------ shared NIC, 8 flows */

static const char *shared_nic_json =
    "{\"version\":1,\"node_types\":[{\"count\":2,"
    "\"npu\":{\"count\":8,\"arena_MiB\":64,\"reduce_bw_GBps\":100},"
    "\"fabric\":{\"type\":\"mesh\",\"bw_GBps\":50,\"lat_us\":1},"
    "\"nics\":{\"count\":1,\"bw_GBps\":10,\"lat_us\":2}}],"
    "\"network\":{\"type\":\"switch\",\"lat_us\":0.5}}";

typedef struct {
    size_t bytes[8];
    double dur[16];
    int ok[16];
} shared_t;

/* Rank i < 8 sends bytes[i] to rank 8 + i, all at time 0. */
static hccn_status_t shared_rank(hccn_ctx_t *ctx, void *arg)
{
    shared_t *s = arg;
    int r = hccn_rank(ctx);
    int i = r % 8;
    size_t n = s->bytes[i];
    uint32_t *buf;
    hccn_status_t rc = hccn_malloc(ctx, n, (void **)&buf);
    if (rc != HCCN_OK)
        return rc;
    if (r < 8) {
        for (size_t k = 0; k < n / 4; k++)
            buf[k] = (uint32_t)(k ^ (size_t)r << 24);
        rc = hccn_send(hccn_comm_world(ctx), buf, n / 4, HCCN_UINT32, r + 8);
    } else {
        rc = hccn_recv(hccn_comm_world(ctx), buf, n / 4, HCCN_UINT32, i);
        s->ok[r] = 1;
        for (size_t k = 0; k < n / 4; k++)
            s->ok[r] &= buf[k] == (uint32_t)(k ^ (size_t)i << 24);
    }
    s->dur[r] = hccn_last_duration(ctx);
    hccn_free(ctx, buf);
    return rc;
}

static void test_shared_link(void **state)
{
    (void)state;
    hccn_cluster_t *cl;
    assert_int_equal(hccn_cluster_create_json(shared_nic_json, "shared", NULL,
                                              &cl), HCCN_OK);
    const double B = 10e9, lat = 2e-6 + 0.5e-6;
    const size_t n = 4 << 20;

    /* Eight equal flows: each gets B/8 on the NIC uplink. */
    shared_t s = {0};
    for (int i = 0; i < 8; i++)
        s.bytes[i] = n;
    assert_int_equal(hccn_cluster_run(cl, shared_rank, &s, NULL), HCCN_OK);
    for (int r = 8; r < 16; r++) {
        assert_true(s.ok[r]);
        assert_true(test_rel_diff(s.dur[r], lat + 8.0 * n / B) < 1e-9);
    }

    /* Four of n and four of 2n: all share B/8 until the small ones drain at
     * 8n/B; the big ones then share B/4 for their last n: 12n/B in all. */
    for (int i = 0; i < 8; i++)
        s.bytes[i] = i < 4 ? n : 2 * n;
    assert_int_equal(hccn_cluster_run(cl, shared_rank, &s, NULL), HCCN_OK);
    for (int r = 8; r < 16; r++) {
        double expect = lat + (r < 12 ? 8.0 : 12.0) * n / B;
        assert_true(s.ok[r]);
        if (test_rel_diff(s.dur[r], expect) > 1e-9)
            fail_msg("rank %d: %.12g s, expected %.12g", r, s.dur[r], expect);
    }
    hccn_cluster_destroy(cl);
}

/* ---------------------------------------------------------- determinism */

typedef struct {
    double t[MAXR];
    uint64_t sum[MAXR];
} det_t;

/* A mixed program: unequal compute, non-blocking sends in a pattern that
 * crosses the network, receives posted late, and more compute. */
static hccn_status_t det_rank(hccn_ctx_t *ctx, void *arg)
{
    det_t *d = arg;
    int r = hccn_rank(ctx), n = hccn_nranks(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx);
    const size_t cnt = 1 << 16;
    uint32_t *sb, *rb;
    hccn_status_t rc;
    if ((rc = hccn_malloc(ctx, 4 * cnt, (void **)&sb)) != HCCN_OK ||
        (rc = hccn_malloc(ctx, 4 * cnt, (void **)&rb)) != HCCN_OK)
        return rc;
    for (size_t i = 0; i < cnt; i++)
        sb[i] = (uint32_t)(r * 1000003 + (int)i);
    uint64_t acc = 0;
    for (int round = 1; round <= 3; round++) {
        int to = (r + round * 5) % n, from = (r - round * 5 + 4 * n) % n;
        hccn_future_t *fs, *fr;
        hccn_compute(ctx, 1e-6 * ((r * 7 + round) % 5));
        if ((rc = hccn_isend(w, sb, cnt, HCCN_UINT32, to, &fs)) != HCCN_OK)
            return rc;
        hccn_compute(ctx, 2e-6 * ((r + round) % 3));
        if ((rc = hccn_irecv(w, rb, cnt, HCCN_UINT32, from, &fr)) != HCCN_OK)
            return rc;
        if ((rc = hccn_wait(fr)) != HCCN_OK || (rc = hccn_wait(fs)) != HCCN_OK)
            return rc;
        hccn_future_free(fr);
        hccn_future_free(fs);
        for (size_t i = 0; i < cnt; i++)
            acc += rb[i];
    }
    d->t[r] = hccn_time(ctx);
    d->sum[r] = acc;
    hccn_free(ctx, sb);
    hccn_free(ctx, rb);
    return HCCN_OK;
}

static atomic_int busy_stop;

static void *busy_main(void *arg)
{
    (void)arg;
    volatile unsigned long x = 0;
    while (!atomic_load(&busy_stop))
        x++;
    return NULL;
}

static void test_determinism(void **state)
{
    (void)state;
    hccn_cluster_t *cl;
    assert_int_equal(hccn_cluster_create(test_path("configs/default.json"),
                                         NULL, &cl), HCCN_OK);
    int n = hccn_cluster_size(cl);
    det_t first = {0};
    assert_int_equal(hccn_cluster_run(cl, det_rank, &first, NULL), HCCN_OK);
    for (int r = 0; r < n; r++)
        assert_true(first.t[r] > 0.0);
    pthread_t busy;
    for (int run = 1; run < 20; run++) {
        if (run == 10) {
            atomic_store(&busy_stop, 0);
            assert_int_equal(pthread_create(&busy, NULL, busy_main, NULL), 0);
        }
        det_t again = {0};
        assert_int_equal(hccn_cluster_run(cl, det_rank, &again, NULL), HCCN_OK);
        for (int r = 0; r < n; r++) {
            assert_memory_equal(&again.t[r], &first.t[r], sizeof(double));
            assert_int_equal(again.sum[r], first.sum[r]);
        }
    }
    atomic_store(&busy_stop, 1);
    pthread_join(busy, NULL);
    hccn_cluster_destroy(cl);

    /* Host-load stress inside the waits: ranks sleep at random between
     * finding nothing to do and judging their peers, where a receiver
     * that took the bytes and returned must not pass for a deserter. */
    hccn_cluster_opts_t o = {.struct_size = sizeof(o), .jitter_us = 300};
    assert_int_equal(hccn_cluster_create(test_path("configs/default.json"),
                                         &o, &cl), HCCN_OK);
    for (int run = 0; run < 5; run++) {
        det_t again = {0};
        hccn_status_t rc = hccn_cluster_run(cl, det_rank, &again, NULL);
        if (rc != HCCN_OK)
            fail_msg("run %d under jitter: %s", run, hccn_last_error());
        for (int r = 0; r < n; r++) {
            assert_memory_equal(&again.t[r], &first.t[r], sizeof(double));
            assert_int_equal(again.sum[r], first.sum[r]);
        }
    }
    hccn_cluster_destroy(cl);
}

/* ----------------------------------------------------------------- SPMD */

typedef struct {
    int seen[MAXR];
    int fail_rank;
} spmd_t;

static hccn_status_t spmd_rank(hccn_ctx_t *ctx, void *arg)
{
    spmd_t *s = arg;
    int r = hccn_rank(ctx);
    s->seen[r] = 1000 + r;
    if (hccn_nranks(ctx) != hccn_cluster_size(hccn_ctx_cluster(ctx)))
        return HCCN_ERR_INTERNAL;
    if (r == s->fail_rank) {
        hccn_status_t rc = hccn_send(hccn_comm_world(ctx), NULL, 1, HCCN_FP32, 0);
        return rc;
    }
    return HCCN_OK;
}

static void test_spmd_sizes(void **state)
{
    (void)state;
    const int sizes[] = {1, 2, 3, 16, 64};
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        char json[512];
        snprintf(json, sizeof(json),
                 "{\"version\":1,\"node_types\":[{\"count\":1,"
                 "\"npu\":{\"count\":%d,\"arena_MiB\":1,\"reduce_bw_GBps\":10},"
                 "\"fabric\":{\"type\":\"switch\",\"bw_GBps\":10,"
                 "\"lat_us\":1}}]}",
                 sizes[k]);
        hccn_cluster_t *cl;
        assert_int_equal(hccn_cluster_create_json(json, "spmd", NULL, &cl),
                         HCCN_OK);
        spmd_t s = {.fail_rank = -1};
        hccn_status_t st[MAXR];
        assert_int_equal(hccn_cluster_run(cl, spmd_rank, &s, st), HCCN_OK);
        for (int r = 0; r < sizes[k]; r++) {
            assert_int_equal(s.seen[r], 1000 + r);
            assert_int_equal(st[r], HCCN_OK);
        }
        /* A failing rank is reported with its rank and its message. */
        if (sizes[k] >= 3) {
            s.fail_rank = 2;
            assert_int_equal(hccn_cluster_run(cl, spmd_rank, &s, st),
                             HCCN_ERR_INVALID);
            assert_int_equal(st[2], HCCN_ERR_INVALID);
            assert_int_equal(st[0], HCCN_OK);
            assert_non_null(strstr(hccn_last_error(), "rank 2"));
            assert_non_null(strstr(hccn_last_error(), "buf is NULL"));
        }
        hccn_cluster_destroy(cl);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shared_link),
        cmocka_unit_test(test_every_pair_default),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_spmd_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
