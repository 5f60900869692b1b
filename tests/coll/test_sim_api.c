/* The public simulation API (include/hccn/hccn_sim.h), through public
 * headers only, against independent values: a prediction equals the time
 * of the same call run with data; per-link bytes of a ring allreduce on a
 * ring equal the closed form; topology queries equal the file's figures;
 * edits name what is wrong; the choice of a call is what ran; a trace
 * file marks warm-up calls and leaves synchronising ones out; and a rank's
 * communication summary on a known overlap case equals the times worked
 * out by hand from the topology. */
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

#define N 8                       /* NPUs of configs/ring-8.json */
#define RING_BW 25e9              /* its links' bytes/s */
#define RING_LAT 1e-6

/* ---------------------------------------------------- predict vs a run --- */

typedef struct {
    size_t count;
    double end[N];
    hccn_choice_t choice;         /* rank 0's, after the call */
    int mark;                     /* calls before the measured one */
} ar_t;

static hccn_status_t ring_allreduce(hccn_ctx_t *ctx, void *arg)
{
    ar_t *a = arg;
    float *buf;
    hccn_coll_opts_t o = {.struct_size = sizeof(o), .compress = -1,
                          .algo = "ring"};
    hccn_status_t rc = hccn_malloc(ctx, a->count * sizeof(float),
                                   (void **)&buf);
    if (rc != HCCN_OK)
        return rc;
    for (size_t i = 0; i < a->count; i++)
        buf[i] = (float)(hccn_rank(ctx) + 1);
    rc = hccn_allreduce_opts(hccn_comm_world(ctx), buf, buf, a->count,
                             HCCN_FP32, HCCN_SUM, &o, NULL);
    a->end[hccn_rank(ctx)] = hccn_time(ctx);
    if (rc == HCCN_OK && buf[a->count - 1] != (float)(N * (N + 1) / 2))
        rc = HCCN_ERR_INTERNAL;
    if (rc == HCCN_OK && hccn_rank(ctx) == 0) {
        a->choice.struct_size = sizeof(a->choice);
        rc = hccn_comm_last_choice(hccn_comm_world(ctx), &a->choice);
    }
    hccn_free(ctx, buf);
    return rc;
}

static void test_predict_equals_run(void **state)
{
    (void)state;
    const size_t count = 1 << 18;        /* 1 MiB of fp32 */
    hccn_topo_t *topo;
    assert_int_equal(hccn_topo_load(test_path("configs/ring-8.json"), NULL, 0,
                                    &topo), HCCN_OK);
    hccn_call_t call = {.struct_size = sizeof(call),
                        .coll = HCCN_COLL_ALLREDUCE, .count = count,
                        .dtype = HCCN_FP32, .inplace = 1, .algo = "ring"};
    double predicted;
    hccn_predict_opts_t po = {.struct_size = sizeof(po)};
    assert_int_equal(hccn_predict(topo, &call, 1, &predicted, &po), HCCN_OK);

    hccn_cluster_t *cl;
    assert_int_equal(hccn_cluster_create(test_path("configs/ring-8.json"),
                                         NULL, &cl), HCCN_OK);
    ar_t a = {.count = count};
    assert_int_equal(hccn_cluster_run(cl, ring_allreduce, &a, NULL), HCCN_OK);
    double ran = 0.0;
    for (int r = 0; r < N; r++)
        ran = fmax(ran, a.end[r]);
    assert_true(predicted > 0.0);
    assert_true(predicted == ran);

    /* What ran: the forced ring, and the selection's line says so. */
    assert_string_equal(a.choice.algo, "ring");
    assert_string_equal(a.choice.schedule, "ring");
    assert_string_equal(po.schedule, "ring");
    assert_non_null(strstr(a.choice.why, "forced by spec"));

    /* Ring allreduce of S bytes: each rank sends 2(N-1)/N x S to the
     * next one, over the one link between them; no other link carries a
     * byte. Busy time is bytes / 25 GB/s, utilisation busy / the run. */
    double S = (double)(count * sizeof(float)), want = 2.0 * (N - 1) * S / N;
    int carrying = 0;
    const hccn_topo_t *ct = hccn_cluster_topo(cl);
    for (int l = 0; l < hccn_topo_links(ct); l++) {
        hccn_link_stats_t st = {.struct_size = sizeof(st)};
        assert_int_equal(hccn_cluster_link_stats(cl, l, &st), HCCN_OK);
        assert_true(st.span_s == ran);
        if (st.bytes == 0.0)
            continue;
        carrying++;
        assert_true(st.bytes == want);
        assert_true(fabs(st.busy_s - want / RING_BW) <= 1e-18);
        assert_true(fabs(st.utilisation - st.busy_s / ran) <= 1e-15);
        assert_true(st.active_s > st.busy_s * 0.99 && st.active_s <= ran);
    }
    assert_int_equal(carrying, N);
    hccn_link_stats_t bad = {.struct_size = sizeof(bad)};
    assert_int_equal(hccn_cluster_link_stats(cl, hccn_topo_links(ct), &bad),
                     HCCN_ERR_INVALID);
    assert_non_null(strstr(hccn_last_error(), "out of range"));
    hccn_cluster_destroy(cl);
    hccn_topo_free(topo);
}

/* ------------------------------------------- levels chosen by spec --- */

#define LV_RANKS 16               /* configs/default.json: 2 nodes of 8 */

typedef struct {
    const char *spec;
    hccn_coll_t coll;
    size_t count;                 /* elements of each rank's result */
    double end[LV_RANKS];
    hccn_choice_t choice;         /* rank 0's */
} lv_t;

/* Rank r's element i: small integers, so any order of fp32 sums is exact. */
static float lv_in(int r, size_t i)
{
    return (float)((r * 7 + (int)(i % 13)) % 17);
}

static hccn_status_t lv_run(hccn_ctx_t *ctx, void *arg)
{
    lv_t *a = arg;
    int r = hccn_rank(ctx), ag = a->coll == HCCN_COLL_ALLGATHER;
    int rs = a->coll == HCCN_COLL_REDUCE_SCATTER;
    size_t nin = rs ? a->count * LV_RANKS : a->count;
    size_t nout = ag ? a->count * LV_RANKS : a->count;
    float *in, *out;
    hccn_coll_opts_t o = {.struct_size = sizeof(o), .compress = -1,
                          .algo = a->spec};
    hccn_status_t rc = hccn_malloc(ctx, nin * sizeof(float), (void **)&in);
    if (rc == HCCN_OK)
        rc = hccn_malloc(ctx, nout * sizeof(float), (void **)&out);
    if (rc != HCCN_OK)
        return rc;
    for (size_t i = 0; i < nin; i++)
        in[i] = lv_in(r, i);
    hccn_comm_t *w = hccn_comm_world(ctx);
    if (ag)
        rc = hccn_allgather_opts(w, in, out, a->count, HCCN_FP32, &o, NULL);
    else if (rs)
        rc = hccn_reduce_scatter_opts(w, in, out, a->count, HCCN_FP32,
                                      HCCN_SUM, &o, NULL);
    else
        rc = hccn_allreduce_opts(w, in, out, a->count, HCCN_FP32, HCCN_SUM,
                                 &o, NULL);
    a->end[r] = hccn_time(ctx);
    for (size_t i = 0; rc == HCCN_OK && i < nout; i++) {
        float want = 0.0f;   /* the serial reference */
        if (ag)
            want = lv_in((int)(i / a->count), i % a->count);
        for (int q = 0; !ag && q < LV_RANKS; q++)
            want += lv_in(q, rs ? (size_t)r * a->count + i : i);
        if (out[i] != want)
            rc = HCCN_ERR_INTERNAL;
    }
    if (rc == HCCN_OK && r == 0) {
        a->choice.struct_size = sizeof(a->choice);
        rc = hccn_comm_last_choice(w, &a->choice);
    }
    hccn_free(ctx, in);
    hccn_free(ctx, out);
    return rc;
}

/* A spec naming any flat algorithm per level (level0:ring;level1:hd, not
 * one of the named rows) runs that composition with exact results, in the
 * time the prediction API gives for the same spec; a level left as NA is
 * the composition the cost model prices lowest. */
static void test_levels_by_spec(void **state)
{
    (void)state;
    static const hccn_coll_t colls[] = {HCCN_COLL_ALLREDUCE,
                                        HCCN_COLL_REDUCE_SCATTER,
                                        HCCN_COLL_ALLGATHER};
    hccn_topo_t *topo;
    hccn_cluster_t *cl;
    assert_int_equal(hccn_topo_load(test_path("configs/default.json"), NULL,
                                    0, &topo), HCCN_OK);
    assert_int_equal(hccn_cluster_create(test_path("configs/default.json"),
                                         NULL, &cl), HCCN_OK);
    for (int c = 0; c < 3; c++) {
        lv_t a = {.spec = "level0:ring;level1:hd", .coll = colls[c],
                  .count = 3000};
        assert_int_equal(hccn_cluster_run(cl, lv_run, &a, NULL), HCCN_OK);
        assert_string_equal(a.choice.algo, "hier(ring,hd)");
        assert_string_equal(a.choice.schedule, "hier(ring,hd)");
        hccn_call_t call = {.struct_size = sizeof(call), .coll = colls[c],
                            .count = a.count, .dtype = HCCN_FP32,
                            .algo = a.spec};
        double predicted, ran = 0.0;
        hccn_predict_opts_t po = {.struct_size = sizeof(po)};
        assert_int_equal(hccn_predict(topo, &call, 1, &predicted, &po),
                         HCCN_OK);
        for (int r = 0; r < LV_RANKS; r++)
            ran = fmax(ran, a.end[r]);
        assert_true(predicted == ran);
        assert_string_equal(po.schedule, a.choice.schedule);

        /* level1 NA: the cheapest of hier(hd,ring|mesh|hd). */
        lv_t b = {.spec = "level0:hd", .coll = colls[c], .count = 3000};
        assert_int_equal(hccn_cluster_run(cl, lv_run, &b, NULL), HCCN_OK);
        static const char *const rows[] = {"hier(hd,ring)", "hier(hd,mesh)",
                                           "hier(hd,hd)"};
        double best = INFINITY;
        const char *want = NULL;
        for (int k = 0; k < 3; k++) {
            double t;
            assert_int_equal(hccn_predict_algo(topo, &call, rows[k],
                                               HCCN_PREDICT_AUTO, &t, NULL),
                             HCCN_OK);
            if (t >= 0.0 && t < best) {
                best = t;
                want = rows[k];
            }
        }
        assert_non_null(want);
        assert_string_equal(b.choice.algo, want);
        assert_non_null(strstr(b.choice.why, "left as NA"));
    }
    /* A level algorithm no composition runs is refused, naming the spec. */
    lv_t bad = {.spec = "level0:tree;level1:ring", .coll = colls[0],
                .count = 16};
    assert_int_equal(hccn_cluster_run(cl, lv_run, &bad, NULL),
                     HCCN_ERR_INVALID);
    assert_non_null(strstr(hccn_last_error(), "level0:tree;level1:ring"));
    hccn_cluster_destroy(cl);
    hccn_topo_free(topo);
}

/* The choice for a call equals the cheapest of the cost model's figures
 * for the rows it may take, and a hierarchical one names its levels'
 * algorithms. */
static void test_choice_is_cheapest(void **state)
{
    (void)state;
    hccn_topo_t *topo;
    assert_int_equal(hccn_topo_load(test_path("configs/default.json"), NULL,
                                    0, &topo), HCCN_OK);
    hccn_call_t call = {.struct_size = sizeof(call),
                        .coll = HCCN_COLL_ALLREDUCE, .count = 16 << 20,
                        .dtype = HCCN_FP32};
    const char *best = NULL;
    double bt = INFINITY;
    for (int i = 0; i < hccn_algo_count(); i++) {
        hccn_algo_info_t al = {.struct_size = sizeof(al)};
        assert_int_equal(hccn_algo_info(i, &al), HCCN_OK);
        double t;
        assert_int_equal(hccn_predict_algo(topo, &call, al.name,
                                           HCCN_PREDICT_AUTO, &t, NULL),
                         HCCN_OK);
        if (strcmp(al.name, "rings") == 0 || strcmp(al.name, "torus2d") == 0)
            continue;   /* by name only (hierarchy/algos.c): never chosen */
        if ((al.colls & 1u << HCCN_COLL_ALLREDUCE) && t >= 0.0 && t < bt) {
            bt = t;
            best = al.name;
        }
    }
    hccn_choice_t ch = {.struct_size = sizeof(ch)};
    assert_int_equal(hccn_predict_choice(topo, &call, &ch), HCCN_OK);
    assert_non_null(best);
    assert_string_equal(ch.algo, best);
    assert_non_null(strstr(ch.why, "cheapest"));
    if (strncmp(ch.algo, "hier", 4) == 0)
        assert_non_null(strchr(ch.schedule, '('));   /* per level */
    /* A prediction's last call names what it ran, as the choice does
     * (folded here: node 0's part has the whole schedule's name); opts
     * from before the field (struct_size ending at why) still do, without
     * it. */
    hccn_call_t calls[2] = {call, call};
    calls[0].count = 1;
    double ends[2];
    hccn_predict_opts_t po = {.struct_size = sizeof(po)};
    assert_int_equal(hccn_predict(topo, calls, 2, ends, &po), HCCN_OK);
    assert_true(po.folded);
    assert_string_equal(po.schedule, ch.schedule);
    memset(po.schedule, 'x', sizeof(po.schedule));
    po.struct_size = offsetof(hccn_predict_opts_t, schedule);
    assert_int_equal(hccn_predict(topo, calls, 2, ends, &po), HCCN_OK);
    assert_int_equal(po.schedule[0], 'x');
    po.struct_size = offsetof(hccn_predict_opts_t, why);
    assert_int_equal(hccn_predict(topo, calls, 2, ends, &po),
                     HCCN_ERR_INVALID);
    call.algo = "nosuch";
    assert_int_equal(hccn_predict_choice(topo, &call, &ch), HCCN_ERR_INVALID);
    assert_non_null(strstr(hccn_last_error(), "nosuch"));
    hccn_topo_free(topo);
}

/* ---------------------------------------------------------- topologies --- */

static void test_topo_queries(void **state)
{
    (void)state;
    hccn_topo_t *t;
    assert_int_equal(hccn_topo_load(test_path("configs/ring-8.json"), NULL, 0,
                                    &t), HCCN_OK);
    assert_string_equal(hccn_topo_name(t), "ring-8");
    assert_int_equal(hccn_topo_npus(t), 8);
    assert_int_equal(hccn_topo_nodes(t), 1);
    assert_int_equal(hccn_topo_links(t), 16);    /* 8 edges, both ways */
    hccn_topo_summary_t s = {.struct_size = sizeof(s)};
    assert_int_equal(hccn_topo_summary(t, &s), HCCN_OK);
    assert_int_equal(s.links_per_level[0], 16);
    assert_true(s.bw_per_level[0] == RING_BW);
    /* Cutting a ring in two halves cuts two edges. */
    assert_true(s.bisection_Bps == 2 * RING_BW);
    int links[HCCN_ROUTE_MAX], n;
    double lat;
    assert_int_equal(hccn_topo_route(t, 0, 3, links, &n, &lat), HCCN_OK);
    assert_int_equal(n, 3);
    assert_true(fabs(lat - 3 * RING_LAT) < 1e-18);
    hccn_link_info_t li = {.struct_size = sizeof(li)};
    assert_int_equal(hccn_topo_link(t, links[0], &li), HCCN_OK);
    hccn_device_info_t d = {.struct_size = sizeof(d)};
    assert_int_equal(hccn_topo_device(t, li.src, &d), HCCN_OK);
    assert_int_equal(d.kind, HCCN_DEVICE_NPU);
    char want[160];
    hccn_device_info_t d2 = {.struct_size = sizeof(d2)};
    assert_int_equal(hccn_topo_device(t, li.dst, &d2), HCCN_OK);
    snprintf(want, sizeof(want), "%s->%s", d.name, d2.name);
    assert_string_equal(li.name, want);
    assert_true(li.bw_Bps == RING_BW && li.level == 0);
    hccn_levels_t lv = {.struct_size = sizeof(lv)};
    assert_int_equal(hccn_topo_levels(t, 8, &lv), HCCN_OK);
    assert_int_equal(lv.nnodes, 1);
    assert_int_equal(lv.ppn, 8);
    assert_int_equal(lv.nlevels, 2);
    hccn_device_info_t small = {.struct_size = 4};
    assert_int_equal(hccn_topo_device(t, 0, &small), HCCN_ERR_INVALID);
    hccn_topo_free(t);
}

static void test_topo_edits(void **state)
{
    (void)state;
    const char *edits[] = {"node_types[0].npu.count=4",
                           "node_types[0].fabric.bw_GBps=50"};
    hccn_topo_t *t;
    assert_int_equal(hccn_topo_load(test_path("configs/ring-8.json"), edits,
                                    2, &t), HCCN_OK);
    assert_int_equal(hccn_topo_npus(t), 4);
    hccn_topo_summary_t s = {.struct_size = sizeof(s)};
    assert_int_equal(hccn_topo_summary(t, &s), HCCN_OK);
    assert_true(s.bw_per_level[0] == 50e9);
    hccn_topo_free(t);
    const char *bad[] = {"node_types[0].npu.speed=2"};
    assert_int_equal(hccn_topo_load(test_path("configs/ring-8.json"), bad, 1,
                                    &t), HCCN_ERR_TOPOLOGY);
    assert_null(t);
    assert_non_null(strstr(hccn_last_error(), "node_types[0].npu.speed"));
    const char *noeq[] = {"network.lat_us"};
    hccn_cluster_t *cl;
    assert_int_not_equal(hccn_cluster_create_edited(
                             test_path("configs/ring-8.json"), noeq, 1, NULL,
                             &cl), HCCN_OK);
    assert_non_null(strstr(hccn_last_error(), "edit network.lat_us"));
    assert_int_equal(hccn_cluster_create_edited(
                         test_path("configs/ring-8.json"), edits, 1, NULL,
                         &cl), HCCN_OK);
    assert_int_equal(hccn_cluster_size(cl), 4);
    hccn_cluster_destroy(cl);
}

/* -------------------------------------------------------------- traces --- */

static hccn_status_t marked_calls(hccn_ctx_t *ctx, void *arg)
{
    (void)arg;
    int32_t *x;
    hccn_comm_t *w = hccn_comm_world(ctx);
    hccn_status_t rc = hccn_malloc(ctx, 64, (void **)&x);
    if (rc != HCCN_OK)
        return rc;
    *x = 1;
    if ((rc = hccn_mark(ctx, HCCN_MARK_SYNC)) == HCCN_OK &&
        (rc = hccn_barrier(w)) == HCCN_OK &&
        (rc = hccn_mark(ctx, HCCN_MARK_WARMUP)) == HCCN_OK &&
        (rc = hccn_allreduce(w, x, x, 1, HCCN_INT32, HCCN_SUM)) == HCCN_OK &&
        (rc = hccn_mark(ctx, HCCN_MARK_USER)) == HCCN_OK)
        for (int i = 0; i < 3 && rc == HCCN_OK; i++)
            rc = hccn_allreduce(w, x, x, 1, HCCN_INT32, HCCN_SUM);
    hccn_free(ctx, x);
    return rc;
}

static int count_of(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)) != NULL; p++)
        n++;
    return n;
}

/* hccn_topo_software: a file without a stack gives the model of no cost,
 * unnamed and not present; hgx-a100 nccl-2.2x's figures, its link
 * efficiencies among them; a wrong struct_size is refused. */
static void test_topo_software(void **state)
{
    (void)state;
    hccn_topo_t *t = NULL;
    hccn_software_t sw = {.struct_size = sizeof(sw)};
    assert_int_equal(hccn_topo_load(test_path("configs/ring-8.json"), NULL, 0,
                                    &t),
                     HCCN_OK);
    assert_int_equal(hccn_topo_software(t, &sw), HCCN_OK);
    assert_int_equal(sw.present, 0);
    assert_string_equal(sw.stack, "");
    assert_true(sw.launch_us == 0.0 && sw.ranks_per_thread == 1 &&
                sw.slots == 1);
    for (int p = 0; p < HCCN_NPROTO; p++) {
        assert_int_equal(sw.enabled[p], p == HCCN_PROTO_SIMPLE);
        for (int c = 0; c < HCCN_NCLASS; c++)
            assert_true(sw.efficiency[p][c] == 1.0);
    }
    for (int k = 0; k < HCCN_NLINK; k++)
        assert_true(sw.link_efficiency[k] == 1.0);
    hccn_topo_free(t);
    assert_int_equal(hccn_topo_load(test_path("configs/hgx-a100.json"), NULL,
                                    0, &t),
                     HCCN_OK);
    assert_int_equal(hccn_topo_software(t, &sw), HCCN_OK);
    assert_int_equal(sw.present, 1);
    assert_string_equal(sw.stack, "nccl-2.2x");
    assert_true(fabs(sw.launch_us - 6.6) < 1e-9 && sw.slots == 8);
    assert_true(sw.link_efficiency[HCCN_LINK_FABRIC] == 0.80 &&
                sw.link_efficiency[HCCN_LINK_PCIE] == 256.0 / 280.0 &&
                sw.link_efficiency[HCCN_LINK_NIC] == 0.99);
    sw.struct_size = sizeof(sw) - 1;
    assert_int_equal(hccn_topo_software(t, &sw), HCCN_ERR_INVALID);
    hccn_topo_free(t);
}

static void test_trace_marks(void **state)
{
    (void)state;
    char path[] = "/tmp/hccn_sim_api_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    hccn_trace_t *tr;
    hccn_cluster_t *cl;
    assert_int_equal(hccn_trace_create(&tr), HCCN_OK);
    assert_int_equal(hccn_cluster_create(test_path("configs/laptop-4.json"),
                                         NULL, &cl), HCCN_OK);
    assert_int_equal(hccn_trace_attach(cl, tr), HCCN_OK);
    assert_int_equal(hccn_cluster_run(cl, marked_calls, NULL, NULL), HCCN_OK);
    hccn_cluster_destroy(cl);
    assert_int_equal(hccn_trace_write(tr, path), HCCN_OK);
    char *text = test_read_file(path);
    assert_non_null(text);
    /* 4 ranks: 3 user allreduces each, 1 warm-up each, no barrier. */
    assert_int_equal(count_of(text, "\"cat\":\"op\",\"name\":\"allreduce\""),
                     12);
    assert_int_equal(count_of(text, "\"name\":\"allreduce (warm-up)\""), 4);
    assert_int_equal(count_of(text, "\"name\":\"barrier\""), 0);
    free(text);
    hccn_trace_destroy(tr);
    unlink(path);
    close(fd);
}

/* HCCN_TRACE=FILE traces a program that makes no trace call: two clusters
 * one after the other, the file written when each goes, holding both. */
static void test_env_trace(void **state)
{
    (void)state;
    char path[] = "/tmp/hccn_env_trace_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(setenv("HCCN_TRACE", path, 1), 0);
    for (int k = 0; k < 2; k++) {
        hccn_cluster_t *cl;
        assert_int_equal(hccn_cluster_create(
                             test_path("configs/laptop-4.json"), NULL, &cl),
                         HCCN_OK);
        assert_int_equal(hccn_cluster_run(cl, marked_calls, NULL, NULL),
                         HCCN_OK);
        hccn_cluster_destroy(cl);
        char *text = test_read_file(path);
        assert_non_null(text);
        /* 4 ranks x 3 user allreduces per cluster so far. */
        assert_int_equal(
            count_of(text, "\"cat\":\"op\",\"name\":\"allreduce\""),
            12 * (k + 1));
        free(text);
    }
    unsetenv("HCCN_TRACE");
    unlink(path);
    close(fd);
}

/* ------------------------------------------------ communication summary --- */

/* Two NPUs joined by one 10 GB/s, 1 us link each way. */
static const char *pair_json =
    "{\"version\":1,\"node_types\":[{\"count\":1,"
    "\"npu\":{\"count\":2,\"arena_MiB\":16,\"reduce_bw_GBps\":100},"
    "\"fabric\":{\"type\":\"mesh\",\"bw_GBps\":10,\"lat_us\":1}}]}";

#define MSG 1000000               /* bytes of the message */
/* The send ends when the bytes have left (bytes / bandwidth), the receive
 * when they arrive, one latency later (docs/timing.md). */
#define T_SEND (MSG / 10e9)
#define T_RECV (1e-6 + MSG / 10e9)

typedef struct {
    hccn_comm_summary_t world[2], sub[2], all[2], p2p[2], later[2];
    double ar_time[2];
    double t0[2];                 /* the rank's clock at the mark */
} sum_t;

/* Rank 0 sends MSG bytes to rank 1 while both compute 40 us, then waits;
 * then both allreduce on a second communicator of the same two ranks,
 * with nothing to hide it. */
static hccn_status_t overlap(hccn_ctx_t *ctx, void *arg)
{
    sum_t *s = arg;
    int r = hccn_rank(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx), *sub = NULL;
    char *buf;
    hccn_future_t *f;
    hccn_status_t rc = hccn_malloc(ctx, MSG, (void **)&buf);
    if (rc != HCCN_OK)
        return rc;
    memset(buf, r, MSG);
    if ((rc = hccn_comm_split(w, 0, r, &sub)) != HCCN_OK)
        goto out;
    s->t0[r] = hccn_time(ctx);    /* after the split (a collective) */
    if ((rc = hccn_summary_mark(ctx)) != HCCN_OK)
        goto out;
    rc = r == 0 ? hccn_isend(w, buf, MSG, HCCN_UINT8, 1, &f)
                : hccn_irecv(w, buf, MSG, HCCN_UINT8, 0, &f);
    if (rc != HCCN_OK || (rc = hccn_compute(ctx, 40e-6)) != HCCN_OK ||
        (rc = hccn_wait(f)) != HCCN_OK || (rc = hccn_future_free(f)) != HCCN_OK)
        goto out;
    if ((rc = hccn_allreduce(sub, buf, buf, 1000, HCCN_FP32, HCCN_SUM)) !=
        HCCN_OK)
        goto out;
    s->ar_time[r] = hccn_last_duration(ctx);
    hccn_comm_summary_t *outs[] = {&s->world[r], &s->sub[r], &s->all[r],
                                   &s->p2p[r]};
    for (int i = 0; i < 4; i++)
        outs[i]->struct_size = sizeof(*outs[i]);
    if ((rc = hccn_summary(ctx, w, HCCN_SUMMARY_ALL, outs[0])) != HCCN_OK ||
        (rc = hccn_summary(ctx, sub, HCCN_SUMMARY_ALL, outs[1])) != HCCN_OK ||
        (rc = hccn_summary(ctx, NULL, HCCN_SUMMARY_ALL, outs[2])) != HCCN_OK ||
        (rc = hccn_summary(ctx, NULL, HCCN_SUMMARY_P2P, outs[3])) != HCCN_OK)
        goto out;
    /* A new mark forgets everything before it. */
    if ((rc = hccn_summary_mark(ctx)) != HCCN_OK ||
        (rc = hccn_compute(ctx, 5e-6)) != HCCN_OK)
        goto out;
    s->later[r].struct_size = sizeof(s->later[r]);
    rc = hccn_summary(ctx, NULL, HCCN_SUMMARY_ALL, &s->later[r]);
out:
    if (sub != NULL)
        hccn_comm_destroy(sub);
    hccn_free(ctx, buf);
    return rc;
}

static void near_at(double got, double want, int line)
{
    if (fabs(got - want) > 1e-15) {
        print_error("line %d: got %.17g, want %.17g\n", line, got, want);
        fail();
    }
}
#define near(got, want) near_at(got, want, __LINE__)

static void test_summary_overlap(void **state)
{
    (void)state;
    hccn_cluster_t *cl;
    assert_int_equal(hccn_cluster_create_json(pair_json, "pair", NULL, &cl),
                     HCCN_OK);
    sum_t s;
    memset(&s, 0, sizeof(s));
    assert_int_equal(hccn_cluster_run(cl, overlap, &s, NULL), HCCN_OK);
    for (int r = 0; r < 2; r++) {
        /* The message is in flight from 0 to T_MSG; compute covers the
         * first 40 us of it. */
        double T_MSG = r == 0 ? T_SEND : T_RECV;
        const hccn_comm_summary_t *w = &s.world[r];
        assert_int_equal(w->ops, 1);
        near(w->comm_s, T_MSG);
        near(w->hidden_s, 40e-6);
        near(w->exposed_s, T_MSG - 40e-6);
        near(w->compute_s, 40e-6);
        near(w->since_s, s.t0[r]);
        near(s.t0[r], s.t0[1 - r]);     /* the message starts at t0 */
        near(s.p2p[r].comm_s, T_MSG);
        /* The allreduce follows at once (its time counts from the call,
         * waiting for the other rank included), and nothing hides it. */
        const hccn_comm_summary_t *sub = &s.sub[r];
        assert_int_equal(sub->ops, 1);
        assert_true(s.ar_time[r] > 0.0);
        near(sub->comm_s, s.ar_time[r]);
        near(sub->hidden_s, 0.0);
        near(sub->exposed_s, s.ar_time[r]);
        const hccn_comm_summary_t *all = &s.all[r];
        assert_int_equal(all->ops, 2);
        near(all->comm_s, T_MSG + s.ar_time[r]);
        near(all->hidden_s, 40e-6);
        near(all->until_s, s.t0[r] + T_MSG + s.ar_time[r]);
        const hccn_comm_summary_t *l = &s.later[r];
        assert_int_equal(l->ops, 0);
        near(l->since_s, s.t0[r] + T_MSG + s.ar_time[r]);
        near(l->compute_s, 5e-6);
        near(l->comm_s, 0.0);
    }
    hccn_cluster_destroy(cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_predict_equals_run),
        cmocka_unit_test(test_choice_is_cheapest),
        cmocka_unit_test(test_levels_by_spec),
        cmocka_unit_test(test_topo_queries),
        cmocka_unit_test(test_topo_edits),
        cmocka_unit_test(test_topo_software),
        cmocka_unit_test(test_trace_marks),
        cmocka_unit_test(test_env_trace),
        cmocka_unit_test(test_summary_overlap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
