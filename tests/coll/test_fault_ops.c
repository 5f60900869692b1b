/* Faults: every operation of an NPU that the fault plan has failed
 * reports HCCN_ERR_FAULT naming the NPU and the operation (compute,
 * allocation, send, receive, collective), and its peers get
 * HCCN_ERR_REMOTE; and a plan of 10^5 faults loads whole and right. */
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

#define N 4
#define MSG 2048

/* Four NPUs on a mesh; NPU 1 fails at 10 us. */
static const char *quad_fail =
    "{\"version\":1,\"node_types\":[{\"count\":1,"
    "\"npu\":{\"count\":4,\"arena_MiB\":16,\"reduce_bw_GBps\":100},"
    "\"fabric\":{\"type\":\"mesh\",\"bw_GBps\":10,\"lat_us\":2}}],"
    "\"faults\":[{\"kind\":\"npu_fail\",\"npu\":1,\"at_us\":10}]}";

enum { OP_COMPUTE, OP_MALLOC, OP_SEND, OP_RECV, OP_ALLREDUCE, OP_COUNT };

typedef struct {
    hccn_status_t rc[N][OP_COUNT];
    char msg[N][OP_COUNT][MSG];
} res_t;

static void note(res_t *r, int rank, int op, hccn_status_t rc)
{
    r->rc[rank][op] = rc;
    snprintf(r->msg[rank][op], MSG, "%s", rc == HCCN_OK ? "" : hccn_last_error());
}

/* Before 10 us every rank allocates; then NPU 1 computes past its failure
 * and tries every operation; rank 0 waits for a message from it, and all
 * but NPU 1 call an allreduce that needs it. */
static hccn_status_t fail_rank(hccn_ctx_t *ctx, void *arg)
{
    res_t *r = arg;
    int me = hccn_rank(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx);
    float *b = NULL, *c = NULL;
    assert_int_equal(hccn_malloc(ctx, 4096, (void **)&b), HCCN_OK);
    memset(b, 0, 4096);
    if (me == 1) {
        note(r, me, OP_COMPUTE, hccn_compute(ctx, 20e-6));
        note(r, me, OP_MALLOC, hccn_malloc(ctx, 4096, (void **)&c));
        note(r, me, OP_SEND, hccn_send(w, b, 16, HCCN_FP32, 0));
        note(r, me, OP_RECV, hccn_recv(w, b, 16, HCCN_FP32, 2));
        note(r, me, OP_ALLREDUCE,
             hccn_allreduce(w, b, b, 64, HCCN_FP32, HCCN_SUM));
    } else {
        note(r, me, OP_COMPUTE, hccn_compute(ctx, 20e-6));
        if (me == 0)
            note(r, me, OP_RECV, hccn_recv(w, b, 16, HCCN_FP32, 1));
        note(r, me, OP_ALLREDUCE,
             hccn_allreduce(w, b, b, 64, HCCN_FP32, HCCN_SUM));
    }
    hccn_free(ctx, b);
    return HCCN_OK;
}

static void expect(const res_t *r, int rank, int op, hccn_status_t rc,
                   const char *a, const char *b)
{
    const char *m = r->msg[rank][op];
    if (r->rc[rank][op] != rc || strstr(m, a) == NULL || strstr(m, b) == NULL)
        print_error("rank %d op %d: got %s [%s], expected %s with [%s] [%s]\n",
                    rank, op, hccn_status_name(r->rc[rank][op]), m,
                    hccn_status_name(rc), a, b);
    assert_int_equal(r->rc[rank][op], rc);
    assert_non_null(strstr(m, a));
    assert_non_null(strstr(m, b));
}

static void test_every_op_on_failed_npu(void **state)
{
    (void)state;
    hccn_cluster_t *cl = NULL;
    /* Under host-load stress: the reports must not depend on which rank
     * the host runs first. */
    hccn_cluster_opts_t o = {.struct_size = sizeof(o), .jitter_us = 300};
    assert_int_equal(hccn_cluster_create_json(quad_fail, "quad", &o, &cl),
                     HCCN_OK);
    res_t *r = calloc(1, sizeof(*r));
    assert_int_equal(hccn_cluster_run(cl, fail_rank, r, NULL), HCCN_OK);
    const char *npu = "NPU 1 failed at 10.000 us";
    expect(r, 1, OP_COMPUTE, HCCN_ERR_FAULT, "hccn_compute: rank 1", npu);
    expect(r, 1, OP_MALLOC, HCCN_ERR_FAULT, "hccn_malloc: rank 1", npu);
    expect(r, 1, OP_SEND, HCCN_ERR_FAULT, "rank 1: send #0 to comm rank 0", npu);
    expect(r, 1, OP_RECV, HCCN_ERR_FAULT, "rank 1: recv #0 from comm rank 2", npu);
    expect(r, 1, OP_ALLREDUCE, HCCN_ERR_FAULT, "rank 1: allreduce #0", npu);
    /* The others' compute is theirs: it succeeds. What needs NPU 1 fails
     * as the peer's failure. */
    for (int k = 0; k < N; k++) {
        if (k == 1)
            continue;
        assert_int_equal(r->rc[k][OP_COMPUTE], HCCN_OK);
        expect(r, k, OP_ALLREDUCE, HCCN_ERR_REMOTE, "allreduce", npu);
    }
    expect(r, 0, OP_RECV, HCCN_ERR_REMOTE, "recv", npu);
    free(r);
    hccn_cluster_destroy(cl);
}

/* ------------------------------------------------------- 10^5 faults */

#define NF 100000
#define NSTEP 4
#define STEP_S 40e-6

typedef struct {
    int kind, npu;
    double at_us, factor;
    char link[64];
} plan_t;

/* Fault i of the generated plan on configs/default.json (2 nodes x 8). */
static void plan_make(int i, plan_t *f)
{
    int node = i % 2, a = (i / 2) % 8;
    memset(f, 0, sizeof(*f));
    f->kind = i % 4;
    f->npu = -1;
    switch (f->kind) {
    case HCCN_FAULT_LINK_SLOW:
        snprintf(f->link, sizeof(f->link), "node%d.nic%d->net", node, a);
        f->at_us = i;
        f->factor = (double)(i % 7 + 1) / 8.0;
        break;
    case HCCN_FAULT_LINK_DOWN:
        snprintf(f->link, sizeof(f->link), "node%d.npu%d->node%d.npu%d",
                 node, a, node, (a + 1 + i % 7) % 8);
        f->at_us = 1e6 + i;
        break;
    case HCCN_FAULT_NPU_SLOW:
        f->npu = (i * 7) % 16;
        f->at_us = (i * 13) % 200;
        f->factor = 1 + i % 5;
        break;
    default:
        f->npu = i % 16;
        f->at_us = 1e9 + i;
    }
}

static const char *const kind_names[] = {"link_down", "link_slow", "npu_slow",
                                         "npu_fail"};

/* configs/default.json with the plan's NF faults as its "faults". */
static char *plan_json(void)
{
    char *base = test_read_file(test_path("configs/default.json"));
    assert_non_null(base);
    size_t len = strlen(base), cap = len + (size_t)NF * 128;
    char *s = malloc(cap);
    assert_non_null(s);
    char *end = strrchr(base, '}');
    assert_non_null(end);
    size_t n = (size_t)(end - base);
    memcpy(s, base, n);
    n += (size_t)snprintf(s + n, cap - n, ",\"faults\":[");
    for (int i = 0; i < NF; i++) {
        plan_t f;
        plan_make(i, &f);
        n += (size_t)snprintf(s + n, cap - n, "%s{\"kind\":\"%s\",\"at_us\":%.17g",
                              i ? "," : "", kind_names[f.kind], f.at_us);
        if (f.npu >= 0)
            n += (size_t)snprintf(s + n, cap - n, ",\"npu\":%d", f.npu);
        else
            n += (size_t)snprintf(s + n, cap - n, ",\"link\":\"%s\"", f.link);
        if (f.kind == HCCN_FAULT_LINK_SLOW || f.kind == HCCN_FAULT_NPU_SLOW)
            n += (size_t)snprintf(s + n, cap - n, ",\"factor\":%.17g", f.factor);
        n += (size_t)snprintf(s + n, cap - n, "}");
    }
    snprintf(s + n, cap - n, "]}");
    free(base);
    return s;
}

/* The reference: scanning the whole plan (its faults in plan), the factor
 * of dev's latest npu_slow begun by t (the later in the plan on a tie). */
static double ref_slowdown(const plan_t *plan, int dev, double t)
{
    double f = 1.0, since = -1.0;
    for (int i = 0; i < NF; i++) {
        const plan_t *p = &plan[i];
        double at = p->at_us * 1e-6;
        if (p->kind == HCCN_FAULT_NPU_SLOW && p->npu == dev && at <= t &&
            at >= since) {
            f = p->factor;
            since = at;
        }
    }
    return f;
}

static hccn_status_t steps_rank(hccn_ctx_t *ctx, void *arg)
{
    double *clock = arg;
    for (int k = 0; k < NSTEP; k++) {
        hccn_status_t rc = hccn_compute(ctx, STEP_S);
        if (rc != HCCN_OK)
            return rc;
    }
    clock[hccn_rank(ctx)] = hccn_time(ctx);
    return HCCN_OK;
}

static void test_load_many_faults(void **state)
{
    (void)state;
    char *json = plan_json(), err[1024];
    hccn_sim_topo_t *t = NULL;
    assert_int_equal(hccn_sim_topo_load_string(json, "many", &t, err,
                                               sizeof(err)), HCCN_OK);
    assert_int_equal(t->nfaults, NF);
    /* Every fault as written, each link the one the linear search names. */
    for (int i = 0; i < NF; i++) {
        plan_t p;
        plan_make(i, &p);
        const hccn_sim_fault_t *f = &t->faults[i];
        assert_int_equal((int)f->kind, p.kind);
        assert_true(f->at == p.at_us * 1e-6);
        if (p.npu >= 0) {
            assert_int_equal(f->npu, p.npu);
        } else {
            int l = hccn_sim_topo_find_link(t, p.link);
            assert_true(l >= 0);
            assert_int_equal(f->link, l);
        }
        if (p.kind == HCCN_FAULT_LINK_SLOW || p.kind == HCCN_FAULT_NPU_SLOW)
            assert_true(f->factor == p.factor);
    }
    /* Spot checks against names written here, not looked up. */
    const hccn_sim_link_t *l0 = &t->links[t->faults[0].link];
    assert_string_equal(t->devs[l0->src].name, "node0.npu0");
    assert_string_equal(t->devs[l0->dst].name, "node0.npu1");
    const hccn_sim_link_t *l1 = &t->links[t->faults[NF - 3].link];
    assert_string_equal(t->devs[l1->src].name, "node1.nic6");
    assert_string_equal(t->devs[l1->dst].name, "net");
    hccn_sim_topo_free(t);

    /* A run under the plan: each rank's compute is slowed by its latest
     * npu_slow, read from the index, as the whole-plan scan says. */
    hccn_cluster_t *cl = NULL;
    assert_int_equal(hccn_cluster_create_json(json, "many", NULL, &cl), HCCN_OK);
    free(json);
    double *clock = calloc(16, sizeof(double));
    assert_int_equal(hccn_cluster_run(cl, steps_rank, clock, NULL), HCCN_OK);
    plan_t *plan = malloc(NF * sizeof(*plan));
    for (int i = 0; i < NF; i++)
        plan_make(i, &plan[i]);
    for (int r = 0; r < 16; r++) {
        double c = 0.0;
        for (int k = 0; k < NSTEP; k++)
            c = c + STEP_S * ref_slowdown(plan, r, c);
        if (clock[r] != c)
            print_error("rank %d: clock %.17g, expected %.17g\n", r, clock[r], c);
        assert_true(clock[r] == c);
    }
    free(plan);
    free(clock);
    hccn_cluster_destroy(cl);
}

/* The same plan added through hccn_cluster_add_fault, one fault at a
 * time (link names looked up in an index, the array grown geometrically):
 * the run gives the times the whole-plan scan predicts. */
static void test_add_many_faults(void **state)
{
    (void)state;
    hccn_cluster_t *cl = NULL;
    assert_int_equal(hccn_cluster_create(test_path("configs/default.json"),
                                         NULL, &cl), HCCN_OK);
    plan_t *plan = malloc(NF * sizeof(*plan));
    for (int i = 0; i < NF; i++) {
        plan_make(i, &plan[i]);
        hccn_fault_t f = {.struct_size = sizeof(f),
                          .kind = (hccn_fault_kind_t)plan[i].kind,
                          .link = plan[i].npu < 0 ? plan[i].link : NULL,
                          .npu = plan[i].npu, .at_s = plan[i].at_us * 1e-6,
                          .factor = plan[i].factor};
        assert_int_equal(hccn_cluster_add_fault(cl, &f), HCCN_OK);
    }
    hccn_fault_t bad = {.struct_size = sizeof(bad),
                        .kind = HCCN_FAULT_LINK_DOWN,
                        .link = "node1.nic7->node0.nic0", .npu = -1};
    assert_int_equal(hccn_cluster_add_fault(cl, &bad), HCCN_ERR_INVALID);
    assert_non_null(strstr(hccn_last_error(), "no link \"node1.nic7->node0.nic0\""));
    double *clock = calloc(16, sizeof(double));
    assert_int_equal(hccn_cluster_run(cl, steps_rank, clock, NULL), HCCN_OK);
    for (int r = 0; r < 16; r++) {
        double c = 0.0;
        for (int k = 0; k < NSTEP; k++)
            c = c + STEP_S * ref_slowdown(plan, r, c);
        assert_true(clock[r] == c);
    }
    free(clock);
    free(plan);
    hccn_cluster_destroy(cl);
}

/* hccn_cluster_add_fault takes the ranges a file does, and says them. */
static void test_add_fault_ranges(void **state)
{
    (void)state;
    hccn_cluster_t *cl = NULL;
    assert_int_equal(hccn_cluster_create(test_path("configs/laptop-4.json"),
                                         NULL, &cl), HCCN_OK);
    const char *link = "node0.npu0->node0.nvswitch";
    hccn_fault_t f = {.struct_size = sizeof(f), .kind = HCCN_FAULT_LINK_SLOW,
                      .link = link, .npu = -1, .factor = 1e-300};
    assert_int_equal(hccn_cluster_add_fault(cl, &f), HCCN_ERR_INVALID);
    assert_non_null(strstr(hccn_last_error(), "factor must be in [1e-06, 1] "
                                              "(got 1e-300)"));
    f.factor = 1e-6;
    assert_int_equal(hccn_cluster_add_fault(cl, &f), HCCN_OK);
    f.at_s = 1e300;
    assert_int_equal(hccn_cluster_add_fault(cl, &f), HCCN_ERR_INVALID);
    assert_non_null(strstr(hccn_last_error(), "at_s must be in [0, 1e9] "
                                              "(got 1e+300)"));
    f = (hccn_fault_t){.struct_size = sizeof(f), .kind = HCCN_FAULT_NPU_SLOW,
                       .npu = 1, .factor = 1e7};
    assert_int_equal(hccn_cluster_add_fault(cl, &f), HCCN_ERR_INVALID);
    assert_non_null(strstr(hccn_last_error(), "must be in [1, 1e6] (got 1e+07)"));
    f.npu = 4;
    f.factor = 2;
    assert_int_equal(hccn_cluster_add_fault(cl, &f), HCCN_ERR_INVALID);
    assert_non_null(strstr(hccn_last_error(), "npu 4 is out of range [0, 4)"));
    /* A link name with an escape: the message carries no control byte. */
    f = (hccn_fault_t){.struct_size = sizeof(f), .kind = HCCN_FAULT_LINK_DOWN,
                       .link = "a\x1b[2J->b", .npu = -1};
    assert_int_equal(hccn_cluster_add_fault(cl, &f), HCCN_ERR_INVALID);
    assert_non_null(strstr(hccn_last_error(), "no link \"a?[2J->b\""));
    hccn_cluster_destroy(cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_op_on_failed_npu),
        cmocka_unit_test(test_load_many_faults),
        cmocka_unit_test(test_add_many_faults),
        cmocka_unit_test(test_add_fault_ranges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
