/* Traces of runs on the simulated cluster (device_sim/trace.h): link
 * segments against the max-min example of docs/timing.md, slices of
 * point-to-point messages, compute and a collective at their closed-form
 * times, runs laid one after another, identical files for identical runs,
 * and times that do not change when a trace is attached, and each transfer
 * step's protocol. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <json-c/json.h>

#include "device_sim/trace.h"
#include "hccn/hccn.h"
#include "runtime/rt.h"
#include "test_util.h"

/* Two nodes of 8 NPUs, one 10 GB/s NIC each (as in test_p2p.c). */
static const char *shared_nic_json =
    "{\"version\":1,\"node_types\":[{\"count\":2,"
    "\"npu\":{\"count\":8,\"arena_MiB\":64,\"reduce_bw_GBps\":100},"
    "\"fabric\":{\"type\":\"mesh\",\"bw_GBps\":50,\"lat_us\":1},"
    "\"nics\":{\"count\":1,\"bw_GBps\":10,\"lat_us\":2}}],"
    "\"network\":{\"type\":\"switch\",\"lat_us\":0.5}}";

/* The trace written to a string, parsed; *text keeps the string. */
static json_object *trace_json(hccn_sim_trace_t *tr, char **text)
{
    size_t len;
    FILE *f = open_memstream(text, &len);
    assert_non_null(f);
    assert_int_equal(hccn_sim_trace_write(tr, f), 0);
    fclose(f);
    json_object *doc = json_tokener_parse(*text);
    assert_non_null(doc);
    return doc;
}

static json_object *events(json_object *doc)
{
    json_object *ev;
    assert_true(json_object_object_get_ex(doc, "traceEvents", &ev));
    return ev;
}

static const char *str(json_object *o, const char *key)
{
    json_object *v;
    return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v)
                                                 : "";
}

static double num(json_object *o, const char *key)
{
    json_object *v;
    return json_object_object_get_ex(o, key, &v) ? json_object_get_double(v)
                                                 : NAN;
}

static json_object *args(json_object *o)
{
    json_object *v = NULL;
    json_object_object_get_ex(o, "args", &v);
    return v;
}

/* The tid the trace gave thread `name` of process pid, or -1. */
static int tid_of(json_object *ev, int pid, const char *name)
{
    for (size_t i = 0; i < json_object_array_length(ev); i++) {
        json_object *e = json_object_array_get_idx(ev, i);
        if (strcmp(str(e, "ph"), "M") == 0 &&
            strcmp(str(e, "name"), "thread_name") == 0 &&
            (int)num(e, "pid") == pid &&
            strcmp(str(args(e), "name"), name) == 0)
            return (int)num(e, "tid");
    }
    return -1;
}

/* The n-th "X" event of (pid, tid), in file order; NULL if none. */
static json_object *slice(json_object *ev, int pid, int tid, int n)
{
    for (size_t i = 0; i < json_object_array_length(ev); i++) {
        json_object *e = json_object_array_get_idx(ev, i);
        if (strcmp(str(e, "ph"), "X") == 0 && (int)num(e, "pid") == pid &&
            (int)num(e, "tid") == tid && n-- == 0)
            return e;
    }
    return NULL;
}

static void near(double got, double want, double tol, const char *what)
{
    if (!(fabs(got - want) <= tol))
        fail_msg("%s: %.12g, expected %.12g", what, got, want);
}

/* ------------------------------------------------ shared NIC, 8 flows */

typedef struct {
    size_t bytes[8];
} shared_t;

/* Rank i < 8 sends bytes[i] to rank 8 + i, all at time 0. */
static hccn_status_t shared_rank(hccn_ctx_t *ctx, void *arg)
{
    shared_t *s = arg;
    int r = hccn_rank(ctx);
    size_t n = s->bytes[r % 8];
    void *buf;
    hccn_status_t rc = hccn_malloc(ctx, n, &buf);
    if (rc != HCCN_OK)
        return rc;
    if (r < 8)
        rc = hccn_send(hccn_comm_world(ctx), buf, n, HCCN_UINT8, r + 8);
    else
        rc = hccn_recv(hccn_comm_world(ctx), buf, n, HCCN_UINT8, r - 8);
    hccn_free(ctx, buf);
    return rc;
}

/* Four messages of n and four of 2n through one 10 GB/s NIC: the uplink's
 * total rate is B from 0 to 12n/B, one segment of 12n bytes; rank 0's send
 * (n) drains at 8n/B, rank 15's receive (2n) arrives at lat + 12n/B. A
 * second run follows the first on the timeline. */
static void test_shared_link(void **state)
{
    (void)state;
    hccn_cluster_t *cl;
    assert_int_equal(hccn_cluster_create_json(shared_nic_json, "shared", NULL,
                                              &cl), HCCN_OK);
    hccn_sim_trace_t *tr = hccn_sim_trace_create();
    assert_non_null(tr);
    assert_int_equal(hccn_sim_engine_set_trace(cl->eng, tr), 0);
    const double B = 10e9, lat = 2e-6 + 0.5e-6, n = 1 << 20;
    shared_t s;
    for (int i = 0; i < 8; i++)
        s.bytes[i] = i < 4 ? (size_t)n : 2 * (size_t)n;
    for (int run = 0; run < 2; run++)
        assert_int_equal(hccn_cluster_run(cl, shared_rank, &s, NULL), HCCN_OK);
    hccn_cluster_destroy(cl);   /* ends the last run on the timeline */

    char *text;
    json_object *doc = trace_json(tr, &text), *ev = events(doc);
    double span = lat + 12 * n / B;   /* one run: the last arrival */
    int up = tid_of(ev, 2, "node0.nic0->net");
    assert_true(up > 0);
    for (int run = 0; run < 2; run++) {
        json_object *seg = slice(ev, 2, up, run);
        assert_non_null(seg);
        near(num(seg, "ts"), run * span * 1e6, 1e-6, "segment start");
        near(num(seg, "dur"), 12 * n / B * 1e6, 1e-6, "segment length");
        near(num(args(seg), "bytes"), 12 * n, 1e-6 * n, "segment bytes");
        near(num(args(seg), "rate_GBps"), B / 1e9, 1e-9, "segment rate");
        near(num(args(seg), "util"), 1.0, 1e-12, "segment util");
    }
    assert_null(slice(ev, 2, up, 2));

    json_object *send = slice(ev, 1, tid_of(ev, 1, "npu 0 (node0.npu0)"), 0);
    assert_string_equal(str(send, "name"), "send");
    near(num(send, "ts"), 0.0, 1e-6, "send start");
    near(num(send, "dur"), 8 * n / B * 1e6, 1e-6, "send length");
    near(num(args(send), "peer"), 8, 0, "send peer");
    json_object *recv = slice(ev, 1, tid_of(ev, 1, "npu 15 (node1.npu7)"), 1);
    assert_string_equal(str(recv, "name"), "recv");
    near(num(recv, "ts"), span * 1e6, 1e-6, "second run's recv start");
    near(num(recv, "dur"), span * 1e6, 1e-6, "recv length");
    json_object_put(doc);
    free(text);
    hccn_sim_trace_destroy(tr);
}

/* -------------------------------------------- compute, then allreduce */

typedef struct {
    double end[4];
} comp_t;

/* Rank r computes (r + 1) us, then allreduces 1 MiB with the ring. */
static hccn_status_t comp_rank(hccn_ctx_t *ctx, void *arg)
{
    comp_t *c = arg;
    int r = hccn_rank(ctx);
    const size_t cnt = 1 << 18;
    float *buf;
    hccn_status_t rc = hccn_malloc(ctx, cnt * sizeof(float), (void **)&buf);
    if (rc != HCCN_OK)
        return rc;
    for (size_t i = 0; i < cnt; i++)
        buf[i] = (float)r;
    hccn_compute(ctx, (r + 1) * 1e-6);
    rc = hccn_allreduce(hccn_comm_world(ctx), buf, buf, cnt, HCCN_FP32,
                        HCCN_SUM);
    c->end[r] = hccn_time(ctx);
    hccn_free(ctx, buf);
    return rc;
}

/* Runs comp_rank on laptop-4 with the ring, traced when tr is not NULL. */
static void comp_run(hccn_sim_trace_t *tr, comp_t *c)
{
    hccn_cluster_t *cl;
    assert_int_equal(hccn_cluster_create(test_path("configs/laptop-4.json"),
                                         NULL, &cl), HCCN_OK);
    if (tr != NULL)
        assert_int_equal(hccn_sim_engine_set_trace(cl->eng, tr), 0);
    assert_int_equal(hccn_cluster_run(cl, comp_rank, c, NULL), HCCN_OK);
    hccn_cluster_destroy(cl);
}

/* Compute slices of (r + 1) us from 0; the allreduce starts when the last
 * rank calls it (4 us) and ends at the rank's clock; its two ring phases
 * lie inside it, 3 sends of 256 KiB to the next rank in each; the same
 * times without a trace; the same file from a second traced run. */
static void test_compute_and_collective(void **state)
{
    (void)state;
    setenv("HCCN_ALGO", "ring", 1);
    comp_t plain, traced;
    comp_run(NULL, &plain);
    hccn_sim_trace_t *tr[2] = {hccn_sim_trace_create(),
                               hccn_sim_trace_create()};
    char *text[2];
    json_object *doc[2];
    for (int k = 0; k < 2; k++) {
        assert_non_null(tr[k]);
        comp_run(tr[k], &traced);
        for (int r = 0; r < 4; r++)
            assert_true(traced.end[r] == plain.end[r]);
        doc[k] = trace_json(tr[k], &text[k]);
    }
    unsetenv("HCCN_ALGO");
    assert_string_equal(text[0], text[1]);

    json_object *ev = events(doc[0]);
    for (int r = 0; r < 4; r++) {
        char name[64];
        snprintf(name, sizeof(name), "npu %d (node0.npu%d)", r, r);
        int tid = tid_of(ev, 1, name);
        assert_int_equal(tid, r);
        json_object *comp = slice(ev, 1, tid, 0);
        assert_string_equal(str(comp, "name"), "compute");
        near(num(comp, "ts"), 0.0, 1e-9, "compute start");
        near(num(comp, "dur"), r + 1.0, 1e-6, "compute length");
        json_object *op = slice(ev, 1, tid, 1);
        assert_string_equal(str(op, "name"), "allreduce");
        assert_string_equal(str(args(op), "algorithm"), "ring");
        near(num(args(op), "bytes"), 1 << 20, 0, "allreduce bytes");
        near(num(op, "ts"), 4.0, 1e-6, "allreduce start");
        near(num(op, "ts") + num(op, "dur"), plain.end[r] * 1e6, 1e-6,
             "allreduce end");
        int sends = 0;
        for (size_t i = 0; i < json_object_array_length(ev); i++) {
            json_object *s = json_object_array_get_idx(ev, i);
            if (strcmp(str(s, "cat"), "step") != 0 || num(s, "pid") != 1 ||
                (int)num(s, "tid") % HCCN_SIM_TRACE_LANE != r)
                continue;
            assert_true(num(s, "ts") >= num(op, "ts") - 1e-9);
            assert_true(num(s, "ts") + num(s, "dur") <=
                        num(op, "ts") + num(op, "dur") + 1e-6);
            if (strcmp(str(s, "name"), "send") == 0) {
                sends++;
                near(num(args(s), "peer"), (r + 1) % 4, 0, "send peer");
                near(num(args(s), "bytes"), 1 << 18, 0, "send bytes");
            }
        }
        assert_int_equal(sends, 6);
    }
    for (int k = 0; k < 2; k++) {
        json_object_put(doc[k]);
        free(text[k]);
        hccn_sim_trace_destroy(tr[k]);
    }
}

/* ----------------------------------------------- protocols of steps */

/* One node of 4 NPUs on a 50 GB/s mesh running NCCL's preset. */
static const char *stack_json =
    "{\"version\":1,\"stack\":\"nccl-2.2x\",\"node_types\":[{\"count\":1,"
    "\"npu\":{\"count\":4,\"arena_MiB\":16,\"reduce_bw_GBps\":100},"
    "\"fabric\":{\"type\":\"mesh\",\"bw_GBps\":50,\"lat_us\":1}}]}";

/* Ring allreduces of 4 KiB and of 1 MiB. */
static hccn_status_t proto_rank(hccn_ctx_t *ctx, void *arg)
{
    (void)arg;
    float *buf;
    hccn_status_t rc = hccn_malloc(ctx, 1 << 20, (void **)&buf);
    for (size_t cnt = 1 << 10; rc == HCCN_OK && cnt <= 1 << 18; cnt <<= 8)
        rc = hccn_allreduce(hccn_comm_world(ctx), buf, buf, cnt, HCCN_FP32,
                            HCCN_SUM);
    hccn_free(ctx, buf);
    return rc;
}

/* Each transfer step names the protocol the engine ran it under
 * (docs/timing.md, Software: least step + b / (eff B), B = 50 GB/s): a
 * 1 KiB step ll (0.6 + 0.04 us against 1.9 + 0.02 and 3.4 + 0.02), a
 * 256 KiB one ll128 (1.9 + 5.70 us against ll's 0.6 + 10.49 and
 * simple's 3.4 + 5.24). */
static void test_step_protocols(void **state)
{
    (void)state;
    hccn_cluster_t *cl;
    setenv("HCCN_ALGO", "ring", 1);
    assert_int_equal(hccn_cluster_create_json(stack_json, "stack", NULL, &cl),
                     HCCN_OK);
    hccn_sim_trace_t *tr = hccn_sim_trace_create();
    assert_non_null(tr);
    assert_int_equal(hccn_sim_engine_set_trace(cl->eng, tr), 0);
    assert_int_equal(hccn_cluster_run(cl, proto_rank, NULL, NULL), HCCN_OK);
    hccn_cluster_destroy(cl);
    unsetenv("HCCN_ALGO");
    char *text;
    json_object *doc = trace_json(tr, &text), *ev = events(doc);
    int seen[2] = {0, 0};
    for (size_t i = 0; i < json_object_array_length(ev); i++) {
        json_object *s = json_object_array_get_idx(ev, i);
        if (strcmp(str(s, "cat"), "step") != 0 ||
            (strcmp(str(s, "name"), "send") != 0 &&
             strcmp(str(s, "name"), "recv") != 0 &&
             strcmp(str(s, "name"), "recv+reduce") != 0))
            continue;
        int big = num(args(s), "bytes") == (1 << 18);
        assert_true(big || num(args(s), "bytes") == (1 << 10));
        assert_string_equal(str(args(s), "proto"), big ? "ll128" : "ll");
        seen[big]++;
    }
    /* per rank and allreduce: 6 sends, 3 recv+reduce, 3 recv */
    assert_int_equal(seen[0], 4 * 12);
    assert_int_equal(seen[1], 4 * 12);
    json_object_put(doc);
    free(text);
    hccn_sim_trace_destroy(tr);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shared_link),
        cmocka_unit_test(test_compute_and_collective),
        cmocka_unit_test(test_step_protocols),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
