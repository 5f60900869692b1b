/*
 * sharp with data (docs/algorithms.md, sharp): allreduce results through
 * the network switch's reduction, out of place and in place, bit for bit
 * equal to a serial reduction in the order the schedule states (for block
 * j of every chunk: the other ranks' parts summed in turn from rank j+1
 * by the switch, then the owner's own part added): fp32, and bf16 (each
 * addition widened to fp32 and rounded back to nearest even); hier_sharp's
 * int32 sums exact; each call's simulated time equals the timing-only
 * prediction of the same call.
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
#include "hccn/hccn_sim.h"
#include "test_util.h"

#define P 8

/* NODES nodes of NODE_NPUS NPUs (8 in all), one NIC each, on a switch network whose
 * switch reduces fp32, bf16 and int32 sums. */
#define JSON(NODES, NODE_NPUS)                                                \
    "{\"version\": 1, \"node_types\": [{\"count\": " #NODES ", \"npu\": {"  \
    "\"count\": " #NODE_NPUS ", \"arena_MiB\": 160, \"reduce_bw_GBps\": 50, " \
    "\"mem_bw_GBps\": 200}, \"fabric\": {\"type\": \"switch\", \"bw_GBps\": " \
    "100, \"lat_us\": 1}, \"nics\": {\"count\": " #NODE_NPUS ", \"bw_GBps\": " \
    "25, \"lat_us\": 2}}], \"network\": {\"type\": \"switch\", \"lat_us\": "  \
    "1, \"reduce\": {\"bw_GBps\": 400, \"lat_us\": 0.5, \"dtypes\": "         \
    "[\"fp32\", \"bf16\", \"int32\"]}}}"

typedef struct {
    size_t count;
    int inplace;
    hccn_dtype_t dtype;
    int bad[P];
    hccn_status_t rc[P];
    double dur[P];
} call_t;

/* Rank r's element i: magnitudes far apart, so the order of the sum
 * shows in the bits. */
static float input(int r, size_t i)
{
    unsigned v = (unsigned)((r * 2654435761u) ^ (unsigned)(i * 40503u));
    return (float)(v % 100003u) / 7.0f * (r % 2 ? 1e-3f : 1e3f);
}

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float widen(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* fp32 -> bf16, round to nearest even (the inputs here are finite). */
static uint16_t narrow(float f)
{
    uint32_t u = bits(f);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* The sum a + b in dtype (fp32 or bf16 held in a float). */
static float add(hccn_dtype_t dt, float a, float b)
{
    return dt == HCCN_FP32 ? a + b : widen(narrow(widen(narrow(a)) +
                                                  widen(narrow(b))));
}

/* The serial reference for element i of a count-element allreduce of
 * esize-byte elements: its chunk (p x 2 MiB), its block j in the chunk,
 * the others in turn from j+1 (j+1, j+2, ..., j-1 mod p), then j's own
 * part. */
static float expected(hccn_dtype_t dt, size_t count, size_t i)
{
    size_t chunk = (size_t)P * (2u << 20) / (dt == HCCN_FP32 ? 4 : 2);
    size_t c0 = i / chunk * chunk;
    size_t q = count - c0 < chunk ? count - c0 : chunk;
    size_t k = i - c0, base = q / P, rem = q % P, end = 0;
    int j = 0;
    for (; j < P; j++) {
        end += base + ((size_t)j < rem ? 1 : 0);
        if (k < end)
            break;
    }
    float s = 0.0f, own = dt == HCCN_FP32 ? input(j, i)
                                          : widen(narrow(input(j, i)));
    for (int k = 1; k < P; k++) {
        int r = (j + k) % P;
        float x = dt == HCCN_FP32 ? input(r, i) : widen(narrow(input(r, i)));
        s = k == 1 ? x : add(dt, s, x);
    }
    return add(dt, own, s);
}

static int32_t ival(int r, size_t i)
{
    return (int32_t)((uint32_t)r * 1000003u + (uint32_t)i * 7919u);
}

/* 1 when an element of out differs from the reference (P ranks). */
static int check(const call_t *c, const void *out)
{
    for (size_t i = 0; i < c->count; i++) {
        if (c->dtype == HCCN_INT32) {
            int32_t want = 0, got;
            for (int q = 0; q < P; q++)
                want = (int32_t)((uint32_t)want + (uint32_t)ival(q, i));
            memcpy(&got, (const char *)out + 4 * i, 4);
            if (got != want)
                return 1;
        } else if (c->dtype == HCCN_FP32) {
            uint32_t want = bits(expected(HCCN_FP32, c->count, i)), got;
            memcpy(&got, (const char *)out + 4 * i, 4);
            if (got != want)
                return 1;
        } else {
            uint16_t want = narrow(expected(HCCN_BF16, c->count, i)), got;
            memcpy(&got, (const char *)out + 2 * i, 2);
            if (got != want)
                return 1;
        }
    }
    return 0;
}

static hccn_status_t rank_fn(hccn_ctx_t *ctx, void *arg)
{
    call_t *c = arg;
    int r = hccn_rank(ctx);
    size_t es = c->dtype == HCCN_BF16 ? 2 : 4;
    char *mem;
    hccn_status_t rc = hccn_malloc(ctx, 2 * es * c->count, (void **)&mem);
    if (rc != HCCN_OK)
        return rc;
    char *out = c->inplace ? mem : mem + es * c->count;
    for (size_t i = 0; i < c->count; i++) {
        if (c->dtype == HCCN_INT32) {
            int32_t v = ival(r, i);
            memcpy(mem + 4 * i, &v, 4);
        } else if (c->dtype == HCCN_FP32) {
            float v = input(r, i);
            memcpy(mem + 4 * i, &v, 4);
        } else {
            uint16_t v = narrow(input(r, i));
            memcpy(mem + 2 * i, &v, 2);
        }
    }
    rc = hccn_allreduce(hccn_comm_world(ctx), mem, out, c->count, c->dtype,
                        HCCN_SUM);
    c->rc[r] = rc;
    c->dur[r] = hccn_last_duration(ctx);
    c->bad[r] = rc == HCCN_OK && check(c, out);
    hccn_free(ctx, mem);
    return HCCN_OK;
}

/* Runs c on cl with algo forced; checks the results and that the time
 * equals the timing-only prediction on topo. */
static void run_case(hccn_cluster_t *cl, hccn_topo_t *topo, const char *algo,
                     call_t *c)
{
    setenv("HCCN_ALGO", algo, 1);
    assert_int_equal(hccn_cluster_run(cl, rank_fn, c, NULL), HCCN_OK);
    unsetenv("HCCN_ALGO");
    double got = 0.0;
    for (int r = 0; r < P; r++) {
        assert_int_equal(c->rc[r], HCCN_OK);
        if (c->bad[r])
            fail_msg("%s %s count %zu%s: rank %d: results differ from the "
                     "serial order", algo, hccn_dtype_name(c->dtype),
                     c->count, c->inplace ? " in place" : "", r);
        got = fmax(got, c->dur[r]);
    }
    hccn_call_t call = {.struct_size = sizeof(call),
                        .coll = HCCN_COLL_ALLREDUCE, .count = c->count,
                        .dtype = c->dtype, .inplace = c->inplace,
                        .algo = algo};
    double end = 0.0;
    assert_int_equal(hccn_predict(topo, &call, 1, &end, NULL), HCCN_OK);
    if (!(got == end))
        fail_msg("%s count %zu%s: %.17g s with data, %.17g s timing only",
                 algo, c->count, c->inplace ? " in place" : "", got, end);
}

static void test_flat(void **state)
{
    (void)state;
    hccn_cluster_t *cl;
    hccn_topo_t *topo;
    const char *json = JSON(8, 1);
    assert_int_equal(hccn_cluster_create_json(json, "sharp", NULL, &cl),
                     HCCN_OK);
    assert_int_equal(hccn_topo_load_json(json, "sharp", &topo), HCCN_OK);
    const size_t chunk32 = (size_t)P * (2u << 20) / 4;
    const size_t counts[] = {1003, chunk32 + 1003};
    for (int k = 0; k < 2; k++)
        for (int inplace = 0; inplace < 2; inplace++) {
            call_t c = {.count = counts[k], .inplace = inplace,
                        .dtype = HCCN_FP32};
            run_case(cl, topo, "sharp", &c);
        }
    call_t b = {.count = 2 * chunk32 + 5, .dtype = HCCN_BF16};
    run_case(cl, topo, "sharp", &b);
    hccn_topo_free(topo);
    hccn_cluster_destroy(cl);
}

static void test_hier(void **state)
{
    (void)state;
    hccn_cluster_t *cl;
    hccn_topo_t *topo;
    const char *json = JSON(2, 4);
    assert_int_equal(hccn_cluster_create_json(json, "sharp", NULL, &cl),
                     HCCN_OK);
    assert_int_equal(hccn_topo_load_json(json, "sharp", &topo), HCCN_OK);
    const size_t counts[] = {1003, (size_t)3 << 20};
    for (int k = 0; k < 2; k++) {
        call_t c = {.count = counts[k], .inplace = k, .dtype = HCCN_INT32};
        run_case(cl, topo, "hier_sharp", &c);
    }
    hccn_topo_free(topo);
    hccn_cluster_destroy(cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flat),
        cmocka_unit_test(test_hier),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
