/* hccn_compute_flops on every shipped config: where the config gives the
 * NPU's peak_TFLOPS (the figures below are those of the datasheets the
 * configs cite, written here independently), F FLOPs advance the rank's
 * clock by exactly F / peak; where it does not (the three configs that
 * describe no particular hardware, and a node type without it in a mixed
 * cluster), the call fails with the file and the JSON path of the missing
 * field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "hccn/hccn.h"
#include "test_util.h"

#define MAX_RANKS 256
#define MSG 1024

typedef struct {
    const char *file;
    double peak_tflops;          /* 0: the config gives none */
} config_t;

static const config_t configs[] = {
    {"default.json", 320},       {"ascend-910b.json", 320},
    {"ascend-910a.json", 256},   {"hgx-a100.json", 312},
    {"hgx-h100.json", 989},      {"pcie-8gpu.json", 165.2},
    {"tcp-10gbe.json", 165.2},   {"leafspine-4x8.json", 320},
    {"leafspine-pods.json", 320}, {"laptop-4.json", 0},
    {"ring-8.json", 0},          {"pcie-8.json", 0},
};

typedef struct {
    hccn_status_t rc[MAX_RANKS];
    double dt[MAX_RANKS];
    char msg[MAX_RANKS][MSG];
} res_t;

/* Rank r computes (r + 1) * 1e12 FLOPs. */
static double flops_of(int rank)
{
    return (rank + 1) * 1e12;
}

static hccn_status_t rank_fn(hccn_ctx_t *ctx, void *arg)
{
    res_t *r = arg;
    int me = hccn_rank(ctx);
    double t0 = hccn_time(ctx);
    r->rc[me] = hccn_compute_flops(ctx, flops_of(me));
    r->dt[me] = hccn_time(ctx) - t0;
    snprintf(r->msg[me], MSG, "%s",
             r->rc[me] == HCCN_OK ? "" : hccn_last_error());
    return HCCN_OK;
}

/* Runs rank_fn on cl; returns the rank count. */
static int run(hccn_cluster_t *cl, res_t *r)
{
    int n = hccn_cluster_size(cl);
    assert_true(n <= MAX_RANKS);
    memset(r, 0, sizeof(*r));
    assert_int_equal(hccn_cluster_run(cl, rank_fn, r, NULL), HCCN_OK);
    return n;
}

static void expect_missing(const res_t *r, int rank, const char *where)
{
    assert_int_equal(r->rc[rank], HCCN_ERR_INVALID);
    if (strstr(r->msg[rank], where) == NULL ||
        strstr(r->msg[rank], "peak_TFLOPS is not given") == NULL)
        fail_msg("rank %d: want '%s ... is not given' in: %s", rank, where,
                 r->msg[rank]);
    assert_true(r->dt[rank] == 0.0);
}

static void test_shipped_configs(void **state)
{
    (void)state;
    static res_t r;
    for (size_t i = 0; i < sizeof(configs) / sizeof(configs[0]); i++) {
        char rel[256], where[512];
        snprintf(rel, sizeof(rel), "configs/%s", configs[i].file);
        const char *path = test_path(rel);
        snprintf(where, sizeof(where), "%s: node_types[0].npu.peak_TFLOPS",
                 path);
        hccn_cluster_t *cl = NULL;
        assert_int_equal(hccn_cluster_create(path, NULL, &cl), HCCN_OK);
        int n = run(cl, &r);
        for (int k = 0; k < n; k++) {
            if (configs[i].peak_tflops == 0.0) {
                expect_missing(&r, k, where);
                continue;
            }
            assert_int_equal(r.rc[k], HCCN_OK);
            double want = flops_of(k) / (configs[i].peak_tflops * 1e12);
            if (test_rel_diff(r.dt[k], want) > 1e-12)
                fail_msg("%s rank %d: %g s, want %g", configs[i].file, k,
                         r.dt[k], want);
        }
        hccn_cluster_destroy(cl);
    }
}

/* Two node types, the second without peak_TFLOPS: its ranks' error names
 * node_types[1]; the first type's ranks compute. */
static void test_mixed(void **state)
{
    (void)state;
    static const char *json =
        "{\"version\":1,\"node_types\":["
        "{\"count\":1,\"npu\":{\"count\":2,\"arena_MiB\":4,"
        "\"reduce_bw_GBps\":10,\"peak_TFLOPS\":100},"
        "\"fabric\":{\"type\":\"mesh\",\"bw_GBps\":10,\"lat_us\":1},"
        "\"nics\":{\"count\":1,\"bw_GBps\":5,\"lat_us\":1}},"
        "{\"count\":1,\"npu\":{\"count\":2,\"arena_MiB\":4,"
        "\"reduce_bw_GBps\":10},"
        "\"fabric\":{\"type\":\"mesh\",\"bw_GBps\":10,\"lat_us\":1},"
        "\"nics\":{\"count\":1,\"bw_GBps\":5,\"lat_us\":1}}],"
        "\"network\":{\"type\":\"switch\",\"lat_us\":1}}";
    static res_t r;
    hccn_cluster_t *cl = NULL;
    assert_int_equal(hccn_cluster_create_json(json, "mixed.json", NULL, &cl),
                     HCCN_OK);
    assert_int_equal(run(cl, &r), 4);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(r.rc[k], HCCN_OK);
        assert_true(test_rel_diff(r.dt[k], flops_of(k) / 100e12) <= 1e-12);
    }
    for (int k = 2; k < 4; k++)
        expect_missing(&r, k, "mixed.json: node_types[1].npu.peak_TFLOPS");
    hccn_cluster_destroy(cl);
}

/* peak_TFLOPS per dtype on one node type, one number on the other:
 * hccn_compute_flops_dtype takes the dtype's rate (or the one number for
 * every dtype), hccn_compute_flops fp16's; a dtype the object leaves out
 * is an error naming peak_TFLOPS.<dtype>, a dtype with no rate at all an
 * error naming the dtype. Times are checked against flops / rate. */
typedef struct {
    hccn_status_t rc[4][5];
    double dt[4][5];
    char msg[4][5][MSG];
} dres_t;

static const hccn_dtype_t asked[5] = {HCCN_FP16, HCCN_FP32, HCCN_BF16,
                                      HCCN_INT32, HCCN_FP64};

static hccn_status_t dtype_fn(hccn_ctx_t *ctx, void *arg)
{
    dres_t *r = arg;
    int me = hccn_rank(ctx);
    for (int k = 0; k < 5; k++) {
        double t0 = hccn_time(ctx);
        r->rc[me][k] = k == 0 ? hccn_compute_flops(ctx, 1e12)
                              : hccn_compute_flops_dtype(ctx, 1e12, asked[k]);
        r->dt[me][k] = hccn_time(ctx) - t0;
        snprintf(r->msg[me][k], MSG, "%s",
                 r->rc[me][k] == HCCN_OK ? "" : hccn_last_error());
    }
    return HCCN_OK;
}

static void expect_time(const dres_t *r, int rank, int k, double tflops)
{
    if (r->rc[rank][k] != HCCN_OK ||
        test_rel_diff(r->dt[rank][k], 1e12 / (tflops * 1e12)) > 1e-12)
        fail_msg("rank %d, ask %d: rc %d, %g s, want %g s (%s)", rank, k,
                 (int)r->rc[rank][k], r->dt[rank][k], 1.0 / tflops,
                 r->msg[rank][k]);
}

static void test_per_dtype(void **state)
{
    (void)state;
    static const char *json =
        "{\"version\":1,\"node_types\":["
        "{\"count\":1,\"npu\":{\"count\":2,\"arena_MiB\":4,"
        "\"reduce_bw_GBps\":10,\"peak_TFLOPS\":{\"fp16\":100,\"fp32\":25,"
        "\"fp64\":12.5}},"
        "\"fabric\":{\"type\":\"mesh\",\"bw_GBps\":10,\"lat_us\":1},"
        "\"nics\":{\"count\":1,\"bw_GBps\":5,\"lat_us\":1}},"
        "{\"count\":1,\"npu\":{\"count\":2,\"arena_MiB\":4,"
        "\"reduce_bw_GBps\":10,\"peak_TFLOPS\":50},"
        "\"fabric\":{\"type\":\"mesh\",\"bw_GBps\":10,\"lat_us\":1},"
        "\"nics\":{\"count\":1,\"bw_GBps\":5,\"lat_us\":1}}],"
        "\"network\":{\"type\":\"switch\",\"lat_us\":1}}";
    static dres_t r;
    hccn_cluster_t *cl = NULL;
    assert_int_equal(hccn_cluster_create_json(json, "dtypes.json", NULL, &cl),
                     HCCN_OK);
    assert_int_equal(hccn_cluster_run(cl, dtype_fn, &r, NULL), HCCN_OK);
    for (int k = 0; k < 2; k++) {
        expect_time(&r, k, 0, 100.0);   /* no dtype: fp16's */
        expect_time(&r, k, 1, 25.0);    /* fp32 */
        expect_time(&r, k, 4, 12.5);    /* fp64 */
        assert_int_equal(r.rc[k][2], HCCN_ERR_INVALID);
        assert_non_null(strstr(r.msg[k][2], "dtypes.json: node_types[0]."
                                            "npu.peak_TFLOPS.bf16 is not "
                                            "given"));
        assert_true(r.dt[k][2] == 0.0);
    }
    for (int k = 2; k < 4; k++)
        for (int a = 0; a < 5; a++)
            if (asked[a] != HCCN_INT32)
                expect_time(&r, k, a, 50.0);   /* one number: every dtype */
    for (int k = 0; k < 4; k++) {
        assert_int_equal(r.rc[k][3], HCCN_ERR_INVALID);
        assert_non_null(strstr(r.msg[k][3], "has no peak rate"));
    }
    hccn_cluster_destroy(cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shipped_configs),
        cmocka_unit_test(test_mixed),
        cmocka_unit_test(test_per_dtype),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
