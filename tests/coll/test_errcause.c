/* Errors keep their cause: one failure per layer, provoked through the
 * public API, returns the status set where it was found and a public
 * message (hccn_last_error) that is the one written there, with only the
 * caller's context (the call, the NPU's rank) in front of it:
 *   - hierarchy: a schedule builder that cannot run (torus2d on 5 or 3
 *     ranks, hier on one node) names the algorithm and its reason, in a
 *     run with data and in a prediction;
 *   - hierarchy (selection): an algorithm spec that names nothing;
 *   - runtime: a trace written where it cannot be gives the system's
 *     reason; a bad environment count names the variable and its value;
 *   - device_sim (loader): a bad topology value names the file, the JSON
 *     path and the rule. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hccn/hccn.h"
#include "hccn/hccn_sim.h"
#include "test_util.h"

#define N 8                       /* NPUs of configs/ring-8.json */
#define MSG 1024

/* What each rank saw. */
typedef struct {
    const char *algo;             /* forced on every rank */
    hccn_status_t st[N];
    char msg[N][MSG];
    int size[N];                  /* its communicator's ranks */
} seen_t;

/* Splits the world into ranks 0..4 and 5..7 and runs an allreduce with
 * s->algo forced on each part; keeps each rank's status and message. */
static hccn_status_t split_allreduce(hccn_ctx_t *ctx, void *arg)
{
    seen_t *s = arg;
    int r = hccn_rank(ctx);
    hccn_comm_t *part;
    float *buf;
    hccn_status_t rc = hccn_comm_split(hccn_comm_world(ctx), r < 5, r, &part);
    if (rc != HCCN_OK)
        return rc;
    s->size[r] = hccn_comm_size(part);
    if ((rc = hccn_malloc(ctx, 64 * sizeof(float), (void **)&buf)) != HCCN_OK)
        return rc;
    for (int i = 0; i < 64; i++)
        buf[i] = 1.0f;
    hccn_coll_opts_t o = {.struct_size = sizeof(o), .compress = -1,
                          .algo = s->algo};
    s->st[r] = hccn_allreduce_opts(part, buf, buf, 64, HCCN_FP32, HCCN_SUM, &o,
                                   NULL);
    snprintf(s->msg[r], MSG, "%s", hccn_last_error());
    hccn_free(ctx, buf);
    return HCCN_OK;
}

static void run_split(seen_t *s)
{
    hccn_cluster_t *cl;
    assert_int_equal(hccn_cluster_create(test_path("configs/ring-8.json"),
                                         NULL, &cl), HCCN_OK);
    assert_int_equal(hccn_cluster_run(cl, split_allreduce, s, NULL), HCCN_OK);
    hccn_cluster_destroy(cl);
}

/* hierarchy, builder: torus2d needs a grid; 5 and 3 ranks make none. */
static void test_builder_reason_in_a_run(void **state)
{
    (void)state;
    seen_t s = {.algo = "torus2d"};
    run_split(&s);
    for (int r = 0; r < N; r++) {
        char want[MSG];
        snprintf(want, sizeof(want), "allreduce: rank %d: allreduce: "
                 "algorithm 'torus2d': %d ranks make no grid of two or more "
                 "rows of two or more", r, s.size[r]);
        assert_int_equal(s.size[r], r < 5 ? 5 : 3);
        assert_int_equal(s.st[r], HCCN_ERR_UNSUPPORTED);
        assert_string_equal(s.msg[r], want);
    }
}

/* hierarchy, selection: a spec that names no algorithm. */
static void test_selection_reason_in_a_run(void **state)
{
    (void)state;
    seen_t s = {.algo = "nosuch"};
    run_split(&s);
    for (int r = 0; r < N; r++) {
        char want[MSG];
        snprintf(want, sizeof(want), "hccn_allreduce_opts: rank %d: "
                 "algorithm: spec \"nosuch\": unknown algorithm (known: ring, ",
                 r);
        assert_int_equal(s.st[r], HCCN_ERR_INVALID);
        if (strncmp(s.msg[r], want, strlen(want)) != 0)
            fail_msg("rank %d: \"%s\" does not start \"%s\"", r, s.msg[r],
                     want);
    }
}

/* hierarchy, builder, without a run: the prediction API gets the same
 * cause (hier needs two nodes; torus2d a grid). */
static void test_builder_reason_in_a_prediction(void **state)
{
    (void)state;
    static const struct {
        const char *algo;
        int nranks;
        const char *want;
    } cases[] = {
        {"hier", 0, "allreduce: algorithm 'hier': 1 node: it needs two or "
                    "more"},
        {"torus2d", 5, "allreduce: algorithm 'torus2d': 5 ranks make no "
                       "grid of two or more rows of two or more"},
        {"torus2d", 8, NULL},     /* 2 x 4: builds */
    };
    hccn_topo_t *topo;
    assert_int_equal(hccn_topo_load(test_path("configs/ring-8.json"), NULL, 0,
                                    &topo), HCCN_OK);
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        hccn_call_t call = {.struct_size = sizeof(call),
                            .coll = HCCN_COLL_ALLREDUCE, .count = 1024,
                            .dtype = HCCN_FP32, .algo = cases[i].algo,
                            .nranks = cases[i].nranks};
        hccn_choice_t ch = {.struct_size = sizeof(ch)};
        hccn_status_t rc = hccn_predict_choice(topo, &call, &ch);
        if (cases[i].want == NULL) {
            assert_int_equal(rc, HCCN_OK);
            assert_string_equal(ch.algo, "torus2d");
            continue;
        }
        assert_int_equal(rc, HCCN_ERR_UNSUPPORTED);
        assert_string_equal(hccn_last_error(), cases[i].want);
    }
    hccn_topo_free(topo);
}

/* runtime: the system's reason for a trace that cannot be written. */
static void test_trace_write_reason(void **state)
{
    (void)state;
    hccn_trace_t *tr;
    const char *path = "/nonexistent-dir-of-hccn-tests/t.json";
    char want[MSG];
    assert_int_equal(hccn_trace_create(&tr), HCCN_OK);
    snprintf(want, sizeof(want), "hccn_trace_write: cannot write %s: %s",
             path, strerror(ENOENT));
    assert_int_equal(hccn_trace_write(tr, path), HCCN_ERR_IO);
    assert_string_equal(hccn_last_error(), want);
    hccn_trace_destroy(tr);
}

/* runtime: a bad process count in the environment, named with its value. */
static void test_env_reason(void **state)
{
    (void)state;
    hccn_cluster_t *cl = NULL;
    setenv("HCCN_PROC_WORLD", "two", 1);
    hccn_status_t rc = hccn_cluster_create(test_path("configs/ring-8.json"),
                                           NULL, &cl);
    unsetenv("HCCN_PROC_WORLD");
    assert_int_equal(rc, HCCN_ERR_INVALID);
    assert_null(cl);
    assert_string_equal(hccn_last_error(), "hccn_cluster_create: "
                        "HCCN_PROC_WORLD=two is not a count (a whole number "
                        ">= 0)");
}

/* device_sim, the loader: the file, the JSON path and the rule. */
static void test_loader_reason(void **state)
{
    (void)state;
    const char *edit[] = {"node_types[0].npu.reduce_bw_GBps=-3"};
    hccn_topo_t *topo = NULL;
    assert_int_equal(hccn_topo_load(test_path("configs/ring-8.json"), edit, 1,
                                    &topo), HCCN_ERR_TOPOLOGY);
    assert_null(topo);
    const char *msg = hccn_last_error();
    assert_non_null(strstr(msg, "ring-8.json"));
    assert_non_null(strstr(msg, "node_types[0].npu.reduce_bw_GBps"));
    assert_non_null(strstr(msg, "-3"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builder_reason_in_a_run),
        cmocka_unit_test(test_selection_reason_in_a_run),
        cmocka_unit_test(test_builder_reason_in_a_prediction),
        cmocka_unit_test(test_trace_write_reason),
        cmocka_unit_test(test_env_reason),
        cmocka_unit_test(test_loader_reason),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
