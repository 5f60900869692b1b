/*
 * nvls with data (docs/algorithms.md, nvls): fp32 allreduce results, out
 * of place and in place, bit for bit equal to a serial reduction in the
 * order the schedule states (for block j of every chunk: the other ranks'
 * parts summed in ascending rank order by the switch, then the owner's
 * own part added); the call's simulated time equals the engine's time of
 * the schedule and the timing-only prediction of the same call.
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
#define CHUNK_ELEMS ((size_t)P * (2u << 20) / 4)  /* p x 2 MiB of fp32 */

static const char *const JSON =
    "{\"version\": 1, \"node_types\": [{\"count\": 1, \"npu\": {\"count\": "
    "8, \"arena_MiB\": 160, \"reduce_bw_GBps\": 50, \"mem_bw_GBps\": 200}, "
    "\"fabric\": {\"type\": \"switch\", \"bw_GBps\": 100, \"lat_us\": 2, "
    "\"reduce\": {\"bw_GBps\": 300}}}]}";

typedef struct {
    size_t count;
    int inplace;
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

/* The serial reference for element i of a count-element allreduce. */
static float expected(size_t count, size_t i)
{
    size_t c0 = i / CHUNK_ELEMS * CHUNK_ELEMS;
    size_t q = count - c0 < CHUNK_ELEMS ? count - c0 : CHUNK_ELEMS;
    size_t k = i - c0, base = q / P, rem = q % P, end = 0;
    int j = 0;
    for (; j < P; j++) {
        end += base + ((size_t)j < rem ? 1 : 0);
        if (k < end)
            break;
    }
    float s = 0.0f;
    int first = 1;
    for (int r = 0; r < P; r++) {
        if (r == j)
            continue;
        s = first ? input(r, i) : s + input(r, i);
        first = 0;
    }
    return input(j, i) + s;
}

static hccn_status_t rank_fn(hccn_ctx_t *ctx, void *arg)
{
    call_t *c = arg;
    int r = hccn_rank(ctx);
    float *mem;
    hccn_status_t rc = hccn_malloc(ctx, 8 * c->count, (void **)&mem);
    if (rc != HCCN_OK)
        return rc;
    float *s = mem, *out = c->inplace ? mem : mem + c->count;
    for (size_t i = 0; i < c->count; i++)
        s[i] = input(r, i);
    rc = hccn_allreduce(hccn_comm_world(ctx), s, out, c->count, HCCN_FP32,
                        HCCN_SUM);
    c->rc[r] = rc;
    c->dur[r] = hccn_last_duration(ctx);
    c->bad[r] = 0;
    for (size_t i = 0; rc == HCCN_OK && i < c->count; i++) {
        float want = expected(c->count, i);
        c->bad[r] |= memcmp(&out[i], &want, sizeof(float)) != 0;
    }
    hccn_free(ctx, mem);
    return HCCN_OK;
}

static void test_bits_and_time(void **state)
{
    (void)state;
    hccn_cluster_t *cl;
    hccn_topo_t *topo;
    assert_int_equal(hccn_cluster_create_json(JSON, "nvls", NULL, &cl),
                     HCCN_OK);
    assert_int_equal(hccn_topo_load_json(JSON, "nvls", &topo), HCCN_OK);
    const size_t counts[] = {1003, CHUNK_ELEMS + 1003};
    setenv("HCCN_ALGO", "nvls", 1);
    for (int k = 0; k < 2; k++)
        for (int inplace = 0; inplace < 2; inplace++) {
            call_t c = {.count = counts[k], .inplace = inplace};
            assert_int_equal(hccn_cluster_run(cl, rank_fn, &c, NULL), HCCN_OK);
            double got = 0.0;
            for (int r = 0; r < P; r++) {
                assert_int_equal(c.rc[r], HCCN_OK);
                if (c.bad[r])
                    fail_msg("count %zu%s: rank %d: bits differ from the "
                             "serial order", c.count,
                             inplace ? " in place" : "", r);
                got = fmax(got, c.dur[r]);
            }
            hccn_call_t call = {.struct_size = sizeof(call),
                                .coll = HCCN_COLL_ALLREDUCE,
                                .count = c.count, .dtype = HCCN_FP32,
                                .inplace = inplace, .algo = "nvls"};
            double end = 0.0;
            assert_int_equal(hccn_predict(topo, &call, 1, &end, NULL),
                             HCCN_OK);
            if (!(got == end))
                fail_msg("count %zu%s: %.17g s with data, %.17g s timing "
                         "only", c.count, inplace ? " in place" : "", got,
                         end);
        }
    unsetenv("HCCN_ALGO");
    hccn_topo_free(topo);
    hccn_cluster_destroy(cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bits_and_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
